//! What the VM keeps to go back to: a snapshot of its state (`snapshot` takes and restores
//! it), and a break going up inlined frames that each can resume where it stopped
//! (`nested`). Apart from both, so that the VM's state can hold them.

use std::collections::HashMap;

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
    pub(super) mutated: HashMap<usize, Vid>,
    pub(super) frame_dicts: HashMap<Vid, SourceId>,
    pub(super) dict_histories: HashMap<Vid, DictHistory>,
    /// What was raised and caught so far: what is raised after it (a raise past a break
    /// point that goes back here) is raised again by the resume function, not beforehand
    /// by the generated code.
    pub(super) caught_exceptions: HashMap<usize, Option<framehook_bytecode::Location>>,
    pub(super) seen_raised: std::collections::HashSet<usize>,
    /// How many guard changes had been made then (`restore_at_break`), and how many
    /// sources had been met.
    pub(super) guard_journal: usize,
    pub(super) sourced: usize,
}

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
