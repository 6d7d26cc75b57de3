//! What a translation learns where a function it inlined breaks (`cache::BreakHint`): the
//! breaking instruction of each inlined frame a break passed through, kept for that code's
//! own translation, which the break brings about next; and the hints it was handed, at
//! which its frame breaks at once.

use super::*;

impl<'py> Vm<'py, '_> {
    /// A break that a bound on this translation makes (see `BreakBound`).
    pub(super) fn bounded_break<T>(&mut self, bound: BreakBound, reason: String) -> Res<T> {
        self.break_bound = Some((bound, self.steps));
        graph_break(reason)
    }

    /// The bound that made the break under way: one made at this instruction (a break goes
    /// up the inlined frames without simulating any; one made earlier was handled).
    pub(super) fn break_bound(&self) -> Option<BreakBound> {
        self.break_bound
            .filter(|(_, steps)| *steps == self.steps)
            .map(|(bound, _)| bound)
    }

    /// Notes the instruction of `frame` (of `code`, inlined) that a break or fallback came
    /// out of, unless a bound made it, it lies in a loop, or the translation holds changes
    /// to the world not made yet (the code's own translation runs after them: what broke
    /// here may be their doing, as an import after `sys.modules` changed).
    pub(super) fn saw_break(&mut self, code: &Bound<'py, PyAny>, frame: &Frame<'py>, problem: &Problem) {
        let (Problem::Break(reason) | Problem::Fallback(reason)) = problem else {
            return;
        };
        let in_loop = frame.in_loop.get(frame.started).unwrap_or(true);
        if self.break_bound().is_some() || in_loop || self.changes_pending() {
            return;
        }
        self.seen_breaks.push(SeenBreak {
            code: code.clone(),
            pc: frame.started,
            reason: reason.clone(),
            line: self.location.0,
            filename: self.location.1.to_string(),
        });
    }

    /// Whether the translation holds changes to what exists outside it, made only when its
    /// generated code runs.
    fn changes_pending(&self) -> bool {
        !(self.side_effects.is_empty()
            && self.stored_globals.is_empty()
            && self.stored_attrs.is_empty()
            && self.mutated.is_empty()
            && self.dict_histories.is_empty())
    }

    /// The break a hint makes at the top frame's instruction `pc`, where the VM was handed one.
    pub(super) fn hinted_break(&mut self, pc: usize) -> Option<Problem> {
        let hint = self.break_hints.get(&pc)?;
        self.location = (hint.line, hint.filename.as_str().into());
        Some(Problem::Break(hint.reason.clone()))
    }
}
