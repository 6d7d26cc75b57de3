//! Library functions (`CodeKind::Library`: the standard library, packages the session does
//! not trace): a call of one is inlined as a user function's is, within a budget of
//! instructions per outermost library call (the library calls it makes share it). Whatever
//! stops it inside (a break, something the VM does not model, the budget spent) makes the
//! whole call the break, at the call site: the top frame's snapshot takes the VM back to
//! before it, guards included, and the call runs as it is.

use super::*;

/// Instructions an outermost library call (with the calls it makes) may simulate.
pub(super) const LIBRARY_BUDGET: usize = 1_000;

impl<'py, 'b> Vm<'py, 'b> {
    /// `function(*args, **kwargs)` of a library's function, the outermost (not inside another's
    /// simulation), inlined; a break naming it where anything inside stops.
    pub(super) fn call_library(
        &mut self,
        function: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<Vid> {
        let location = self.location.clone();
        let result = self.inline_summarized(function, source, args, kwargs, true, |vm| {
            vm.library_since = Some(vm.steps);
        });
        self.library_since = None;
        match result {
            Err(Problem::Break(reason) | Problem::Fallback(reason)) => {
                // The call is the break: where the user's code makes it, whoever inlines it
                // (a budget is the outermost library call's).
                if self.break_bound() == Some(BreakBound::Library) {
                    self.break_bound = None;
                }
                self.location = location;
                graph_break(format!(
                    "unsupported call: {} (a library function: {reason})",
                    qualname(function)
                ))
            }
            other => other,
        }
    }

    /// A break once the library call being inlined has spent its budget.
    pub(super) fn library_budget(&mut self) -> Res<()> {
        match self.library_since {
            Some(since) if self.steps - since > LIBRARY_BUDGET => self.bounded_break(
                BreakBound::Library,
                format!("more than {LIBRARY_BUDGET} instructions simulated"),
            ),
            _ => Ok(()),
        }
    }
}
