//! Library functions (`CodeKind::Library`: the standard library, packages the session does
//! not trace): a call of one is inlined as a user function's is, within a budget of
//! instructions per outermost library call (the library calls it makes share it). Whatever
//! stops it inside (a break, something the VM does not model, the budget spent) makes the
//! whole call the break, at the call site: the top frame's snapshot takes the VM back to
//! before it, guards included, and the call runs as it is. A call that stopped is noted
//! (`summaries::note_failure`): the function called again in the session with arguments of
//! the same kinds breaks at once, without simulating up to where it stopped.

use std::hash::{Hash, Hasher};

use super::summaries::{self, ArgumentKind};
use super::*;

/// A keyword argument's name, as a failed call's record compares it.
fn name_hash(name: &str) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    name.hash(&mut hasher);
    hasher.finish()
}

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
        let arguments: Vec<ArgumentKind> = args
            .iter()
            .map(|arg| self.argument_kind(*arg))
            .chain(
                kwargs
                    .iter()
                    .flat_map(|(name, arg)| [(name_hash(name), 0), self.argument_kind(*arg)]),
            )
            .collect();
        let stopped = |reason: &str| {
            graph_break(format!(
                "unsupported call: {} (a library function: {reason})",
                qualname(function)
            ))
        };
        if let Some(reason) = self
            .summary_scope
            .and_then(|scope| summaries::failed_before(scope, function, &arguments))
        {
            return stopped(&reason);
        }
        let result = self.inline_summarized(function, source, args, kwargs, true, |vm| {
            vm.library_since = Some(vm.steps);
        });
        self.library_since = None;
        match result {
            Err(Problem::Break(reason) | Problem::Fallback(reason)) => {
                // The call is the break: where the user's code makes it, whoever inlines it
                // (a budget is the outermost library call's).
                let bound = self.break_bound();
                if bound == Some(BreakBound::Library) {
                    self.break_bound = None;
                }
                self.location = location;
                // What the translation's own bounds stopped (its depth, its instructions)
                // another caller's call would not stop at.
                if let (Some(scope), false) = (self.summary_scope, bound == Some(BreakBound::Translation)) {
                    summaries::note_failure(scope, function, arguments, reason.clone());
                }
                stopped(&reason)
            }
            other => other,
        }
    }

    /// An argument's kind, as a failed call's record compares it: its variant in the VM
    /// and, where it has one, its type, and a number's, string's or None's value (a
    /// library call stopping depends on little more).
    fn argument_kind(&self, arg: Vid) -> ArgumentKind {
        let of = |obj: &Bound<'py, PyAny>| obj.get_type().as_ptr() as usize;
        let mut variant = rustc_hash::FxHasher::default();
        std::mem::discriminant(self.val(arg)).hash(&mut variant);
        let class = match self.val(arg) {
            // A number, string or None: its value too (a flag's value may take the call
            // another way).
            Val::Obj { obj, .. }
                if crate::sot::translator::pyutil::is_quiet_value(obj)
                    && !obj.is_instance_of::<PyTuple>() =>
            {
                obj.hash().map_or(of(obj), |hash| of(obj) ^ hash as usize)
            }
            Val::Obj { obj, .. } | Val::Constructed { obj, .. } => of(obj),
            Val::Tensor { example, .. } | Val::Scalar { example, .. } => of(example),
            Val::Object { class, .. } | Val::NamedTuple { class, .. } => class.as_ptr() as usize,
            _ => 0,
        };
        (variant.finish(), class)
    }
}
