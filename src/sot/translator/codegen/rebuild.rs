//! The code generator as kind code sees it when a kind rebuilds its value
//! (`kinds::Rebuild`).

use framehook_bytecode::canonical::{Arg, Op};
use pyo3::prelude::*;
use pyo3::types::PyString;

use super::emit::Emit;
use super::emitter::Emitter;
use super::resume::{generator_key, resume_code};
use crate::hookapi::pyobject::import;
use crate::sot::translator::guard::source::SourceId;
use crate::sot::translator::kinds::Rebuild;
use crate::sot::translator::model::frame::{GeneratorState, SideEffect};
use crate::sot::translator::model::known::held;
use crate::sot::translator::model::value::Val;
use crate::sot::translator::model::{Sym, Vid};
use crate::sot::translator::pyutil::builtin;

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

    fn cell_object(&mut self, vid: Vid, cell: usize) -> PyResult<()> {
        let detached_unmade =
            self.detached_cells.iter().any(|(made, _)| *made == cell) && !self.detached_made.contains(&cell);
        match self.cell_place(cell).filter(|_| !detached_unmade) {
            Some(place) => self.push_cell(place),
            None => Err(self.cannot_rebuild(vid, "a cell of an inlined function")),
        }
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

    /// `_sot_primed_generator(function, [handed...], qualname)`: a function of the
    /// generator's resume code (`generator_key`) over the frame's cells its free variables
    /// are, whose generator is run up to its `yield` before it is used.
    fn suspended_generator(&mut self, state: &GeneratorState<'py>) -> PyResult<bool> {
        let Some(key) = generator_key(state, self.plan.values) else {
            return Ok(false);
        };
        let frame = &state.frame;
        // Its free variables' cells, as the frame's own cells the generated code holds.
        let first_free = frame.vars.first_free();
        let closure: Option<Vec<u32>> = frame.locals[first_free..]
            .iter()
            .map(|vid| match self.plan.values[*vid] {
                Val::Cell(cell) => self
                    .plan
                    .frame_cells
                    .iter()
                    .find(|(c, _)| *c == cell)
                    .map(|(_, var)| self.var_of(*var)),
                _ => None,
            })
            .collect();
        let Some(closure) = closure else {
            return Ok(false);
        };
        let py = self.w.pools.py;
        let code = resume_code(self.w.table, &frame.code, &frame.vars, &frame.instrs, &key, None)?;
        let handed: Vec<Vid> = (frame.stack.iter().zip(&key.nulls))
            .filter(|(_, null)| !**null)
            .map(|(vid, _)| *vid)
            .chain(key.live.iter().map(|var| frame.locals[*var]))
            .collect();
        let function_type = held(py)?.function_type.bind(py).clone();
        let function = match closure.is_empty() {
            true => Some(function_type.call1((&code, &frame.globals))?),
            false => None,
        };
        let primed = import(py, "framehook._native")?.getattr("_sot_primed_generator")?;
        let qualname = PyString::new(py, &state.qualname).into_any();
        Emit::call_constant(self, primed, |e| {
            match &function {
                Some(function) => Emit::load_const(e, function.clone()),
                // types.FunctionType(code, globals, None, None, closure)
                None => Emit::call_constant(e, function_type.clone(), |e| {
                    Emit::load_const(e, code.clone());
                    match frame.globals_source {
                        Some(source) => Emitter::source(e, source)?,
                        None => Emit::call_constant(e, builtin(py, "globals")?, |_| Ok(0))?,
                    }
                    Emit::load_const(e, py.None().into_bound(py));
                    Emit::load_const(e, py.None().into_bound(py));
                    let closure_op = e.w.closure_op();
                    for var in &closure {
                        Emit::emit(e, closure_op, Arg::Var(*var));
                    }
                    Emit::build_tuple(e, closure.len());
                    Ok(5)
                })?,
            }
            for vid in &handed {
                Emitter::value(e, *vid)?;
            }
            Emit::emit(e, Op::BuildList, Arg::Int(handed.len() as u32));
            Emit::load_const(e, qualname.clone());
            Ok(3)
        })?;
        Ok(true)
    }
}
