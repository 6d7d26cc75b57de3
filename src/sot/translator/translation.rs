//! One translation's fixed inputs, and what the driver and break planning share: the
//! generated code of a plan (its graph compiled), liveness and stack depths.

use std::cell::RefCell;

use framehook_bytecode::liveness::Liveness;
use pyo3::prelude::*;

use super::backend::Backend;
use super::cache::{Action, CodeCache, CodeCaches};
use super::code_pool::Generated;
use super::codegen;
use super::codegen::Rerun;
use super::compile::compile_graph;
use super::model::code::CodeInfo;
use super::model::graph::NodeKind;
use super::model::value::Val;
use super::session::Config;
use super::vm::Vm;

/// One translation's fixed inputs, read throughout the making of its code (the generated
/// code, breaks, resume functions, counting).
pub struct Translation<'t, 'py, 'b> {
    pub caches: &'t CodeCaches,
    pub py: Python<'py>,
    pub config: &'t Config,
    pub backend: &'t Backend<'py>,
    pub table: &'static framehook_bytecode::Table,
    pub code: &'t Bound<'py, PyAny>,
    pub info: &'t CodeInfo,
    pub cache: &'t CodeCache,
    pub vm: &'t Vm<'py, 'b>,
    /// The globals of the frame the code runs in where it is not the translated frame's (an
    /// inlined frame a break resumes in: `resumed`).
    pub globals: Option<Bound<'py, PyAny>>,
    pub recompiling: bool,
    pub qualname: &'t str,
    /// Set when the code cannot be made because of a value an earlier top-frame
    /// instruction made: translating again breaks before that instruction (and says why).
    pub restart: RefCell<Option<(usize, String)>>,
}

impl<'py> Translation<'_, 'py, '_> {
    /// The code that runs instead of the frame: a plan rebuilding `rebuilt` with the frame's
    /// variables `locals`, its graph compiled for what the plan reads, and `generate`'s code.
    pub fn generated_code(
        &self,
        locals: &[usize],
        rebuilt: &[usize],
        generate: impl FnOnce(&codegen::Plan<'_, 'py>) -> PyResult<Generated>,
    ) -> PyResult<(Action, Option<String>)> {
        let vm = self.vm;
        let cells = vm.cell_contents();
        let mut plan = codegen::Plan::new(
            self.table,
            self.code,
            &self.info.vars,
            &vm.values,
            &cells,
            &vm.sources,
            &vm.graph,
            &vm.side_effects,
            &vm.dict_histories,
            frame_cells_of(vm, locals),
            vm_globals(vm)?,
            rebuilt,
            &vm.caught_exceptions,
        );
        plan.live_cells = vm
            .nested_frames()
            .into_iter()
            .flatten()
            .flat_map(|frame| frame.point.locals.iter().chain(&frame.point.stack))
            .filter_map(|vid| match &vm.values[*vid] {
                Val::Cell(cell) => Some(*cell),
                _ => None,
            })
            .collect();
        plan.outside_cells = vm.outside_cells().clone();
        let (graph, outputs) = vm.graph.without_dead_arithmetic(&plan.outputs);
        let compiled = if graph.nodes.is_empty() {
            None
        } else {
            Some(compile_graph(
                self.py,
                self.caches,
                self.config,
                self.backend,
                vm,
                &graph,
                &outputs,
            )?)
        };
        plan.holder = compiled.as_ref().map(|compiled| compiled.holder.clone());
        let last_check = graph
            .nodes
            .iter()
            .rposition(|node| node.kind == NodeKind::Assumption);
        plan.rerun = match compiled.as_ref().map(|compiled| compiled.first_write) {
            Some(None) => Rerun::OnRaise,
            Some(Some(write)) if last_check.is_some_and(|check| check < write) => Rerun::OnFailedAssumption,
            _ => Rerun::Never,
        };
        let assumed = &vm.graph.assumed_at;
        if !assumed.is_empty() && (plan.rerun == Rerun::Never || vm.examples_warned) {
            // A failed assumption is answered by running the frame again: not where the
            // graph may have written into an operand before a check fails, nor where an
            // operation warned (it would again). The break comes before the first check
            // that cannot be answered so: those before the first write still can.
            let answerable = match compiled.as_ref().and_then(|compiled| compiled.first_write) {
                Some(write) if !vm.examples_warned => graph.nodes[..write.min(graph.nodes.len())]
                    .iter()
                    .filter(|node| node.kind == NodeKind::Assumption)
                    .count(),
                _ => 0,
            };
            // `without_dead_arithmetic` keeps every `Assumption` node, in order.
            let pc = assumed.get(answerable).unwrap_or(&assumed[0]);
            let why = "a branch on a tensor's value whose graph cannot run again";
            self.restart.replace(Some((*pc, why.to_owned())));
            return Err(pyo3::exceptions::PyRuntimeError::new_err(why));
        }
        let generated = generate(&plan).inspect_err(|err| {
            let made_at = plan.unrebuildable.get().and_then(|vid| vm.made_at(vid));
            if let Some(pc) = made_at.filter(|pc| !vm.break_before.contains_key(pc)) {
                self.restart.replace(Some((pc, err.value(self.py).to_string())));
            }
        })?;
        Ok((Action::Run(generated), compiled.map(|compiled| compiled.text)))
    }

    /// Which variables the rest of the code may read (`CodeInfo::liveness`).
    pub fn liveness(&self) -> PyResult<Option<&Liveness>> {
        self.info.liveness(self.code)
    }

    /// The stack's depth where each instruction starts, where a jump may land (None: the
    /// code cannot be read so).
    pub fn depths(&self) -> Option<&[Option<u32>]> {
        self.info.depths(self.table, self.code)
    }
}

/// The frame's cells: (the VM's cell, the variable that holds it).
pub fn frame_cells_of(vm: &Vm<'_, '_>, locals: &[usize]) -> Vec<(usize, usize)> {
    locals
        .iter()
        .enumerate()
        .filter_map(|(var, vid)| match &vm.values[*vid] {
            Val::Cell(c) => Some((*c, var)),
            _ => None,
        })
        .collect()
}

impl<'py> Translation<'_, 'py, '_> {
    /// The globals of the frame the code runs in.
    pub fn frame_globals(&self) -> PyResult<Bound<'py, PyAny>> {
        match &self.globals {
            Some(globals) => Ok(globals.clone()),
            None => vm_globals(self.vm),
        }
    }
}

pub fn vm_globals<'py>(vm: &Vm<'py, '_>) -> PyResult<Bound<'py, PyAny>> {
    vm.globals()
        .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("no globals"))
}
