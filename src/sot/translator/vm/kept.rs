//! What the VM keeps to go back to: a snapshot of its state (`snapshot` takes and restores
//! it), and a break going up inlined frames that each can resume where it stopped
//! (`nested`). Apart from both, so that the VM's state can hold them.

use rustc_hash::{FxHashMap, FxHashSet};

use pyo3::prelude::*;

use crate::sot::translator::guard::source::SourceId;
use crate::sot::translator::model::frame::{BreakPoint, DictHistory};
use crate::sot::translator::model::graph::Graph;
use crate::sot::translator::model::value::Vid;
use crate::sot::translator::model::values::Values;

/// The VM's state before an instruction of the translated frame, to go back to when the
/// instruction breaks the graph or raises (the generated code then runs it itself).
pub(super) struct Snapshot<'py> {
    pub(super) values: Values<'py>,
    pub(super) cells: Vec<Option<Vid>>,
    pub(super) graph: std::rc::Rc<Graph<'py>>,
    pub(super) side_effects: usize,
    pub(super) stored_globals: usize,
    pub(super) stored_attrs: usize,
    pub(super) mutated: FxHashMap<usize, Vid>,
    pub(super) frame_dicts: FxHashMap<Vid, SourceId>,
    pub(super) dict_histories: FxHashMap<Vid, DictHistory>,
    /// What was raised and caught so far: what is raised after it (a raise past a break
    /// point that goes back here) is raised again by the resume function, not beforehand
    /// by the generated code.
    pub(super) caught_exceptions: FxHashMap<usize, Option<framehook_bytecode::Location>>,
    pub(super) seen_raised: FxHashSet<usize>,
    /// How many guard changes had been made then (`restore_at_break`), and how many
    /// sources had been met.
    pub(super) guard_journal: usize,
    pub(super) sourced: usize,
    /// How many generator resumptions had been made then: a generator resumed since is put
    /// back as it was (`Vm::restore_generators`).
    pub(super) generator_resumes: usize,
}

/// The VM before the top frame's first run of an instruction where a break would stop as a
/// plain break (no handler, region or caller-reading frame in the way): `Vm::rewind` goes
/// back to it when the translation must break there after all.
pub(super) struct FirstVisit<'py> {
    pub(super) snapshot: Snapshot<'py>,
    pub(super) stack: Vec<Vid>,
    pub(super) locals: Vec<Vid>,
    pub(super) location: (i32, std::rc::Rc<str>),
    pub(super) examples_warned: bool,
    pub(super) in_handler_scope: bool,
    pub(super) summaries_replayed: usize,
}

/// The top frame's instructions, and per instruction whether it lies in a loop.
pub(super) type TopCode = (
    std::sync::Arc<Vec<framehook_bytecode::canonical::Instruction>>,
    std::sync::Arc<crate::sot::translator::model::code::LoopMembership>,
);

/// An inlined frame where a break inside it stopped: its code and globals, and its state
/// before the instruction it stopped at.
pub struct InlinedPoint<'py> {
    pub code: Bound<'py, PyAny>,
    pub globals: Bound<'py, PyAny>,
    pub point: BreakPoint,
}

/// A break going up inlined frames that each can resume where it stopped.
pub(super) struct NestedBreak<'py> {
    /// The frames, innermost first.
    pub(super) frames: Vec<InlinedPoint<'py>>,
    /// The state before the innermost frame's instruction.
    pub(super) snapshot: Snapshot<'py>,
    /// The instructions simulated when it stopped, and why: a break goes up the frames
    /// without simulating more, so a later count (or another reason) means the break was
    /// handled on the way.
    pub(super) steps: usize,
    pub(super) reason: String,
    /// The inlining depth of the outermost frame so far: the next must be its caller (a
    /// generator's frame between them keeps none).
    pub(super) depth: usize,
}
