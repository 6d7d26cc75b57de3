//! Branches on a tensor's value, assumed: `if np.isfinite(total):` goes the way it went
//! while translating, checked by the graph (`_sot_assume`), as does a bool an operation
//! returns (`np.may_share_memory(a, b)`), instead of a break that makes the rest of the
//! frame (and of every frame inlined above it) a resume function. Where the check fails,
//! the graph raises before anything of the frame has happened and the generated code runs
//! the frame again untranslated, so the other branch runs as eagerly.

use super::*;

impl<'py> Vm<'py, '_> {
    /// The truth of a tensor of one item, assumed: an `Assumption` node checking it. None
    /// where the backend's graphs do not check assumptions, an operation's example warned,
    /// the instruction lies in a loop, or the value is not such a tensor (the branch breaks
    /// as before).
    pub(super) fn assumed_truth(&mut self, val: &Val<'py>) -> Res<Option<bool>> {
        let Val::Tensor { sym, example } = val else {
            return Ok(None);
        };
        if !self.may_assume() {
            return Ok(None);
        }
        let one_item = example
            .getattr("size")
            .and_then(|s| s.extract::<usize>())
            .is_ok_and(|n| n == 1);
        if !one_item {
            return Ok(None);
        }
        let Ok(seen) = example.is_truthy() else {
            return Ok(None);
        };
        self.assume(*sym, seen)?;
        Ok(Some(seen))
    }

    /// An operation's result that is a Python bool (`np.may_share_memory(a, b)`), assumed
    /// to be the one it was while translating, as a branch on a tensor's truth is: the
    /// constant, checked by the graph. None where a branch on a tensor could not be assumed.
    pub(super) fn assumed_bool(&mut self, sym: Sym, example: &Bound<'py, PyAny>) -> Res<Option<Vid>> {
        if !example.is_exact_instance_of::<pyo3::types::PyBool>() || !self.may_assume() {
            return Ok(None);
        }
        self.assume(sym, example.is_truthy()?)?;
        Ok(Some(self.constant(example.clone())))
    }

    /// Whether a value may be assumed here: the backend's graphs check assumptions, no
    /// operation's example warned (it would warn again when the frame runs again), and the
    /// instruction lies in no loop.
    fn may_assume(&self) -> bool {
        let in_loop = || {
            self.step_loops
                .as_ref()
                .is_some_and(|(loops, pc)| loops.get(*pc).unwrap_or(false))
        };
        self.backend.declared().runs_assumptions && !self.examples_warned && !in_loop()
    }

    /// An `Assumption` node: the graph checks that symbol `sym`'s truth is `seen`.
    fn assume(&mut self, sym: Sym, seen: bool) -> Res<()> {
        let assume = import(self.py, "framehook._native")?.getattr("_sot_assume")?;
        let seen_value = pyo3::types::PyBool::new(self.py, seen).to_owned().into_any();
        self.push_node(
            &assume,
            vec![GraphArg::Sym(sym), GraphArg::Const(seen_value)],
            vec![],
            NodeKind::Assumption,
        );
        let pc = self.top_pc;
        self.graph_mut().assumed_at.push(pc);
        Ok(())
    }
}
