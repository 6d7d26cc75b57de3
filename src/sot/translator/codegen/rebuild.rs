//! The code generator as kind code sees it when a kind rebuilds its value
//! (`kinds::Rebuild`).

use framehook_bytecode::canonical::{Arg, Op};
use pyo3::prelude::*;

use super::emit::Emit;
use super::emitter::Emitter;
use crate::sot::translator::guard::source::SourceId;
use crate::sot::translator::kinds::Rebuild;
use crate::sot::translator::model::frame::SideEffect;
use crate::sot::translator::model::value::Val;
use crate::sot::translator::model::{Sym, Vid};

impl<'py> Rebuild<'py> for Emitter<'_, 'py> {
    fn py(&self) -> Python<'py> {
        self.w.pools.py
    }

    fn value(&mut self, vid: Vid) -> PyResult<()> {
        Emitter::value(self, vid)
    }

    fn source(&mut self, source: SourceId) -> PyResult<()> {
        Emitter::source(self, source)
    }

    fn symbol(&mut self, sym: Sym) -> PyResult<()> {
        if sym < self.plan.graph.inputs.len() {
            return self.source(self.plan.graph.inputs[sym]);
        }
        let index = self.outputs[sym]
            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("a tensor the graph does not output"))?;
        Emit::emit(self, Op::LoadFast, Arg::Var(self.outputs_var));
        self.subscript_const(index.into_pyobject(self.w.pools.py)?.into_any());
        Ok(())
    }

    fn cell(&self, cell: usize) -> Option<Vid> {
        self.plan.cells[cell]
    }

    fn frame_object_of(&self, container: Vid) -> Option<SourceId> {
        self.plan.side_effects.iter().find_map(|effect| match effect {
            SideEffect::Replace { target, contents, .. } if *contents == container => Some(*target),
            _ => None,
        })
    }

    fn load_const(&mut self, obj: Bound<'py, PyAny>) {
        Emit::load_const(self, obj);
    }

    fn emit(&mut self, op: Op, arg: Arg) {
        Emit::emit(self, op, arg);
    }

    fn build_tuple(&mut self, len: usize) {
        Emit::build_tuple(self, len);
    }

    fn load_attr(&mut self, name: &str) {
        let index = self.w.pools.name(name);
        Emit::emit(self, Op::LoadAttr, Arg::Name(index));
    }

    fn call_constant(
        &mut self,
        callable: Bound<'py, PyAny>,
        push: &mut dyn FnMut(&mut dyn Rebuild<'py>) -> PyResult<usize>,
    ) -> PyResult<()> {
        Emit::call_constant(self, callable, |e| push(e))
    }

    fn contents(&mut self, container: &Val<'py>) -> PyResult<()> {
        Emitter::contents(self, container)
    }
}
