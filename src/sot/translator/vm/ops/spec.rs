//! What an entry of the opcode table says: how the VM runs the opcode, and what generated
//! code does with it where the graph breaks at it.

use crate::sot::translator::vm::*;

/// Runs one instruction (the frame's `pc` is already past it); `Some(value)` when the frame
/// returns.
pub(super) type Handler =
    for<'py, 'b, 'v, 'f> fn(&'v mut Vm<'py, 'b>, &'f mut Frame<'py>, &Instruction) -> Res<Option<Vid>>;

/// How the VM runs an opcode.
#[derive(Clone, Copy)]
pub(super) enum Run {
    Handler(Handler),
    /// Not modelled: the frame falls back to the original code, for this reason.
    Unsupported(&'static str),
    /// Not modelled by any family (`NOT_MODELLED`): the frame falls back, naming the opcode.
    NotModelled,
}

/// What the generated code does with an instruction the graph breaks at.
#[derive(Clone, Copy)]
pub(super) enum AtBreak {
    /// Nothing: it cannot run the instruction itself, so the break has no continuation.
    Breaks,
    /// Runs it as it is: it takes this many stack slots and leaves that many.
    Native(usize, usize),
    /// Runs it as it is: it takes one slot and leaves its truth (what a user reads as
    /// `bool(...)` of the value it took).
    NativeTruth,
    /// Runs it as it is, taking and leaving the slots this gives for the instruction (its
    /// argument, the version's stack effects), if it knows them.
    NativeBy(fn(&Vm<'_, '_>, &Instruction) -> Option<(usize, usize)>),
    /// A conditional jump: the generated code branches on the condition's truth.
    BranchOnTruth,
    /// `LOAD_METHOD`: the generated code loads the bound attribute beside a NULL slot.
    BoundAttribute,
    /// A plain `GET_ITER`: run as it is where an iterator takes one slot, as `iter()` beside
    /// a NULL where it takes two (see `Step::IteratorAndNull`); a `GET_ITER` with a check
    /// (3.15's `yield from`) breaks.
    PlainIterator,
}

/// An opcode's entry.
#[derive(Clone, Copy)]
pub(super) struct OpSpec {
    pub(super) op: Op,
    pub(super) run: Run,
    pub(super) at_break: AtBreak,
}

impl OpSpec {
    /// An opcode the VM runs with `handler`.
    pub(super) const fn run(op: Op, handler: Handler, at_break: AtBreak) -> Self {
        Self {
            op,
            run: Run::Handler(handler),
            at_break,
        }
    }

    /// An opcode the VM does not run: the frame falls back, for `reason`.
    pub(super) const fn unsupported(op: Op, reason: &'static str, at_break: AtBreak) -> Self {
        Self {
            op,
            run: Run::Unsupported(reason),
            at_break,
        }
    }
}

/// The slots an instruction takes (`1 - effect` of one that leaves one) where its stack
/// effect is the version's (`CALL_FUNCTION_EX`, `MAKE_FUNCTION`).
pub(super) fn by_stack_effect(vm: &Vm<'_, '_>, name: &str, instr: &Instruction) -> Option<(usize, usize)> {
    let oparg = if let Arg::Int(n) = instr.arg { n } else { 0 };
    Some(((1 - vm.stack_effect(name, oparg, false).ok()?) as usize, 1))
}

/// The `n` of an instruction whose argument is a count.
pub(super) fn count(instr: &Instruction) -> Option<usize> {
    match instr.arg {
        Arg::Int(n) => Some(n as usize),
        _ => None,
    }
}
