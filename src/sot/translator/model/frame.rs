//! The VM's frames and what a translation ends with: where it stopped (a break point),
//! why, and the side effects the generated code replays.

use framehook_bytecode::canonical::{Arg, Instruction, Op, Vars};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::Vid;
use crate::sot::translator::guard::source::SourceId;

/// A block of 3.9/3.10's block stack: set up by `SETUP_FINALLY`/`SETUP_WITH` (its
/// handler), or a handler that is running (none); `level` is the stack depth it restores.
#[derive(Clone, Copy)]
pub struct Block {
    pub handler: Option<usize>,
    pub level: usize,
}

/// A generator the translated code made: its frame, suspended at its last `yield`.
#[derive(Clone)]
pub struct GeneratorState<'py> {
    pub frame: Frame<'py>,
    /// Suspended at a yield, whose value the next `send` replaces (next() sends None).
    pub suspended: bool,
    pub finished: bool,
    /// What the generator returned, while the advance that ended it is the last one: what
    /// its `StopIteration` carries (a `yield from`'s value). An advance after its end finds
    /// none, as CPython's raises a bare `StopIteration`.
    pub returned: Option<Vid>,
    /// The generator function's qualified name (3.9/3.10's code does not carry it).
    pub qualname: String,
    /// Suspended inside an exception handler (the handled exception on its stack or a
    /// handler's block running): a state the generated code cannot set up again.
    pub handling: bool,
}

/// Why a frame's translation stopped before its end.
pub enum Stop {
    /// Something the graph cannot hold: the graph breaks here.
    Break {
        reason: String,
        line: i32,
        filename: String,
    },
    /// Something the translator does not handle: the original code runs.
    Fallback {
        reason: String,
        line: i32,
        filename: String,
    },
}

impl Stop {
    pub fn reason(&self) -> &str {
        match self {
            Stop::Break { reason, .. } | Stop::Fallback { reason, .. } => reason,
        }
    }
}

/// A frame of the VM: the translated function's, or an inlined callee's.
#[derive(Clone)]
pub struct Frame<'py> {
    /// The frame's code object (an inlined frame may resume in a function of it).
    pub code: Bound<'py, PyAny>,
    pub instrs: std::sync::Arc<Vec<Instruction>>,
    pub consts: Bound<'py, PyTuple>,
    pub names: Bound<'py, PyTuple>,
    pub vars: std::sync::Arc<Vars>,
    pub locals: Vec<Vid>,
    pub globals: Bound<'py, PyAny>,
    pub stack: Vec<Vid>,
    pub pc: usize,
    /// Shared by the VM's location at each instruction (set per instruction run).
    pub filename: std::rc::Rc<str>,
    /// For a generator's frame: the value its last `YIELD_VALUE` gave, until taken.
    pub yielded: Option<Vid>,
    /// Per instruction: whether it lies inside a loop.
    pub in_loop: std::sync::Arc<crate::sot::translator::model::code::LoopMembership>,
    /// The class of `super()` (the `__class__` cell's contents), if any.
    pub class_cell: Option<usize>,
    /// The code's `co_argcount` (zero-argument `super()` needs a first argument).
    pub argcount: usize,
    /// Where this frame's globals come from, when they are not the top frame's.
    pub globals_source: Option<SourceId>,
    /// Blocks set up by `SETUP_*` and exception handlers running (3.9, 3.10).
    pub blocks: Vec<Block>,
    /// Past `RESUME`: the prologue's cells are made (`setup_cells`), and a `MAKE_CELL` now
    /// is an inlined comprehension's (3.12+), which makes a new cell.
    pub resumed: bool,
    /// The instruction this frame began last (the one a break inside it broke).
    pub started: usize,
    /// Its code reads its callers' frames (`CodeInfo::reads_callers`).
    pub reads_callers: bool,
}

/// A free variable of the translated frame: its cell and the cell's contents.
pub type FreeVariable<'py> = (Option<Bound<'py, PyAny>>, Option<Bound<'py, PyAny>>);

/// Where the top frame stopped (a break) and with what state, for the code
/// generator that resumes there.
pub struct BreakPoint {
    /// The instruction the graph breaks at, and its index.
    pub pc: usize,
    pub instr: Instruction,
    /// The stack and the variables as they were before it.
    pub stack: Vec<Vid>,
    pub locals: Vec<Vid>,
    pub in_loop: bool,
    /// Inside a `try` or `with`: the instruction must run where its handler is.
    pub in_handler_scope: bool,
    /// 3.9/3.10: the `SETUP_*` blocks around it, (handler, stack level) outermost first.
    pub blocks: Vec<(usize, usize)>,
    /// The slots where `PUSH_EXC_INFO` saved the previous exception, and the exception
    /// current from each on: a resume function makes them current again.
    pub handled: Vec<(usize, Vid)>,
    /// An exception is being handled (an `except` or exceptional `finally` body) that a
    /// resume function cannot make current again (3.9/3.10's handlers; one not saved in
    /// a slot of the stack).
    pub handling: bool,
}

impl BreakPoint {
    /// 3.9/3.10: the blocks once the break's instruction has run (`SETUP_WITH` sets one
    /// up at the level of the `__exit__` it leaves in place of the manager).
    pub fn blocks_after(&self) -> Vec<(usize, usize)> {
        let mut blocks = self.blocks.clone();
        if let (Op::SetupWith, Arg::Target(handler)) = (self.instr.op, &self.instr.arg) {
            blocks.push((*handler, self.stack.len()));
        }
        blocks
    }
}

/// What the top frame's translation ended with.
pub enum Ending {
    /// The returned value, and the frame's variables then (for its cells).
    Return(Vid, Vec<Vid>),
    Break(BreakPoint, Stop),
    /// An exception nothing in the frame catches: the generated code runs the
    /// instruction that raises it (it raises again, as the guards pin its inputs).
    Raise(BreakPoint),
}

/// A recorded mutation of something outside the translation, replayed in order.
#[derive(Clone)]
pub enum SideEffect {
    /// `nonlocal` assignment to free variable `index` of the translated function.
    StoreFree {
        index: usize,
        value: Vid,
    },
    /// Assignment to a cell of an inlined function's closure (a cell that outlives the
    /// call, made by a frame that is gone or elsewhere).
    StoreCell {
        cell: SourceId,
        value: Vid,
    },
    StoreAttr {
        target: Vid,
        name: String,
        value: Vid,
        /// Replayed as `object.__setattr__(target, name, value)`: the class's own
        /// `__setattr__` ran inlined, and this is the store it made.
        through_object: bool,
    },
    DeleteAttr {
        target: Vid,
        name: String,
    },
    StoreGlobal {
        name: String,
        value: Vid,
    },
    DeleteGlobal {
        name: String,
    },
    /// `target.method(*args)`, its result unused: a write to an `io.StringIO` from the frame,
    /// which nothing the translation reads sees before it is replayed.
    CallMethod {
        target: Vid,
        method: String,
        args: Vec<Vid>,
    },
    /// A list iterator from the frame (`Val::ListIter` with a `frame` source), left where
    /// the translation left it.
    IteratorPosition {
        iterator: Vid,
    },
    /// A list or dict from the frame, which the translation works on as its copy
    /// `contents` from here on: a list is given the copy's items whole after the graph; a
    /// dict, the `DictOp`s recorded after this one (this one names the dict for the values
    /// that stand for it, a bound method of it).
    Replace {
        target: SourceId,
        contents: Vid,
    },
    /// An operation the translation made on a dict from the frame (on its copy), replayed
    /// on the dict as made, in order with the other side effects.
    DictOp {
        target: SourceId,
        op: DictOp,
    },
}

/// An operation on a dict, which the generated code replays with the same method and
/// arguments: the dict's table (deleted slots, its entry count, when it resizes, the new
/// keys `clear` gives it) is then the one the program's own operations leave, which a live
/// iterator over the dict reads. Keys and values are as at the time of the operation.
#[derive(Clone, PartialEq, Eq)]
pub enum DictOp {
    /// `d[key] = value`. `over`: the key the dict held already, whose value the store
    /// replaces (None: it adds the key).
    Store {
        key: Vid,
        value: Vid,
        over: Option<Vid>,
    },
    /// `del d[key]`.
    Delete {
        key: Vid,
    },
    /// `d.pop(key)` of a key the dict holds.
    Pop {
        key: Vid,
    },
    /// `d.popitem()`: unlike `del`, it shrinks the table's entry count.
    PopItem,
    /// `d.setdefault(key, value)` of a key the dict lacks.
    SetDefault {
        key: Vid,
        value: Vid,
    },
    /// `dict.update(d, other)`: a mapping from the frame (read when replayed, after the
    /// operations before this one), or a dict the translation made of the items read then.
    Update {
        other: Vid,
    },
    Clear,
}

impl DictOp {
    /// The values the generated code rebuilds to replay it.
    pub fn values(&self) -> Vec<Vid> {
        match self {
            DictOp::Store { key, value, .. } | DictOp::SetDefault { key, value } => vec![*key, *value],
            DictOp::Delete { key } | DictOp::Pop { key } => vec![*key],
            DictOp::Update { other } => vec![*other],
            DictOp::PopItem | DictOp::Clear => Vec::new(),
        }
    }

    /// A store's value given to the earlier store `self` (see `codegen::replayed`).
    pub fn take_value_of(&mut self, later: &DictOp) {
        if let (DictOp::Store { value, .. }, DictOp::Store { value: new, .. }) = (self, later) {
            *value = *new;
        }
    }

    /// Whether it leaves the table unlike a new dict's of the same items (a deleted slot,
    /// a smaller entry count).
    pub fn leaves_a_hole(&self) -> bool {
        matches!(self, DictOp::Delete { .. } | DictOp::Pop { .. } | DictOp::PopItem)
    }
}

/// The operations on a dict the translation made since its table first became unlike a
/// new dict's of its items (`DictOp::leaves_a_hole`), with its items then: the generated
/// code makes it of `items` and replays `ops` on it.
#[derive(Clone, PartialEq, Eq)]
pub struct DictHistory {
    pub items: Vec<(Vid, Vid)>,
    pub ops: Vec<DictOp>,
}
