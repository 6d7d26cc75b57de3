//! What generated code runs of the instruction a graph breaks at, before the resume
//! function after it takes over.

use super::value::Val;
use super::values::Values;
use super::Vid;

/// What a break runs before the resume function takes over.
pub enum Step {
    /// The instruction itself, then resume after it; it takes `consumed` slots and
    /// leaves `produced`.
    RunHere { consumed: usize, produced: usize },
    /// `bool()` of the top of the stack (a branch on a tensor's value), then resume at
    /// the branch with that bool.
    BranchOnTruth,
    /// A `LOAD_METHOD` run as `LOAD_ATTR` beside a NULL slot (below it when `null_first`),
    /// as the VM reads it: whether CPython's form would push a NULL is known only when it
    /// runs, and the resume function must know its NULL slots.
    BoundAttribute { null_first: bool },
    /// A plain `GET_ITER` whose iterator takes two slots (3.15+) run as `iter()` beside a
    /// NULL, as the VM reads it (and `FOR_ITER` takes it): the interpreter's own pair may
    /// hold a list's index as a tagged int, which no code but the interpreter's may hold.
    IteratorAndNull,
    /// The loop around the break, run in a bridge until control leaves it.
    Loop(LoopSpan),
}

/// A loop a bridge runs: where control leaves it (original instruction index, and the
/// stack's depth there), the stack slots below its iterator, which every exit keeps, and
/// the variables each exit hands on besides those the bridge got (unbound there, marked).
pub struct LoopSpan {
    pub exits: Vec<(usize, usize)>,
    pub kept: usize,
    /// The loop's own slots right above `kept` that are dead at its exits, popped there and
    /// never handed on: a `for` loop's iterator where it takes two slots (3.15+), else none.
    pub dead: usize,
    pub unhanded: Vec<usize>,
    /// The variables that may hold the unbound marker (see `ResumeKey::marked`).
    pub marked: Vec<usize>,
}

impl Step {
    /// The stack slots below the break instruction it keeps.
    pub fn kept(&self, depth: usize) -> usize {
        match self {
            Step::RunHere { consumed, .. } => depth - consumed,
            Step::BranchOnTruth | Step::BoundAttribute { .. } | Step::IteratorAndNull => depth - 1,
            Step::Loop(span) => span.kept,
        }
    }

    /// Per stack slot the resume function after the step receives: whether it is NULL.
    pub fn slots_after(&self, values: &Values<'_>, stack: &[Vid]) -> Vec<bool> {
        let after = match self {
            Step::RunHere { consumed, produced } => stack.len() - consumed + produced,
            Step::BranchOnTruth => stack.len(),
            Step::BoundAttribute { .. } | Step::IteratorAndNull => stack.len() + 1,
            Step::Loop(span) => span.kept,
        };
        let kept = self.kept(stack.len());
        let made_null = match self {
            Step::BoundAttribute { null_first } => Some(kept + usize::from(!null_first)),
            Step::IteratorAndNull => Some(kept + 1),
            _ => None,
        };
        (0..after)
            .map(|i| (i < kept && matches!(values[stack[i]], Val::Null)) || Some(i) == made_null)
            .collect()
    }

    /// Where the resume function after the step starts, for a break at `pc` (a loop's
    /// bridge resumes at its exits instead).
    pub fn resume_pc(&self, pc: usize) -> usize {
        match self {
            Step::RunHere { .. } | Step::BoundAttribute { .. } | Step::IteratorAndNull => pc + 1,
            Step::BranchOnTruth | Step::Loop(_) => pc,
        }
    }

    /// Whether the break's instruction (or what stands for it) runs in the generated code.
    pub fn runs_here(&self) -> bool {
        !matches!(self, Step::BranchOnTruth | Step::Loop(_))
    }
}
