//! What a library call's summary is (`summaries`): the paths its guards read, what the call
//! gave, and the replays of one translation (`Replays`, held by the VM).

use std::sync::Arc;

use pyo3::prelude::*;
use rustc_hash::FxHashMap;

use super::super::guard::check::{Check, Pin};
use super::super::guard::source::SourceId;
use super::super::model::value::Vid;
use crate::hookapi::pyobject::StrongRef;

/// Where a summary's guard reads from.
pub(super) enum Root {
    /// The function called.
    Function,
    /// An argument of the call, by position.
    Argument(usize),
    /// An object pinned by identity where the call read it (a module, a globals dict):
    /// weakly where it takes weak references (a summary keeps no class of the program's
    /// alive; one whose object died is not used).
    Held(Pin),
    Builtin(StrongRef),
}

pub(super) enum Step {
    Attr(StrongRef),
    OwnAttr(StrongRef),
    Item(StrongRef),
    StoredItem(StrongRef),
    Called,
}

pub(super) struct Path {
    pub(super) root: Root,
    pub(super) steps: Vec<Step>,
}

/// A guard of a summary: a check of what `path` reads; where it compares with other sources
/// (`SameAs`, `Distinct`), their paths, in its order.
pub(super) struct SummaryGuard {
    pub(super) path: Path,
    pub(super) check: Check,
    pub(super) others: Vec<Path>,
}

impl SummaryGuard {
    /// Whether every path it reads starts at a held object or a builtin (none at the
    /// function or an argument): it rebases to the same sources at every call.
    pub(super) fn is_held_rooted(&self) -> bool {
        std::iter::once(&self.path)
            .chain(&self.others)
            .all(|path| matches!(path.root, Root::Held(_) | Root::Builtin(_)))
    }
}

/// What one library call gave, and what that rests on.
pub(super) struct Summary {
    pub(super) function: StrongRef,
    /// Per argument: the check its value passes (a constant's value, a tensor's type, and
    /// its meta where the call read more than its type), or None for an object from the
    /// frame (what the call read of it is among `guards`).
    pub(super) arguments: Vec<Option<Check>>,
    /// Per argument, the first argument that is the same object (`f(x, x)`).
    pub(super) aliases: Vec<usize>,
    pub(super) result: Given,
    pub(super) guards: Vec<SummaryGuard>,
}

/// The summaries this translation replayed, by summary and function: each replay's
/// arguments and sources, and the summary's guards it added. Replayed again with the same
/// ones, a summary adds the same guards: nothing is pending at a replay, and what they read
/// of the frame does not change while translating. Likewise, by summary, its guards rooted
/// at held objects and builtins only (most of them: `sys.modules`, a module's settings),
/// which rebase to the same sources at each of its replays: added and checked once.
/// Emptied where the translation goes back to a snapshot (`Snapshot::restore`): guards
/// undone, value ids made again.
#[derive(Default)]
pub(super) struct Replays {
    by_call: FxHashMap<(usize, usize), Vec<Replay>>,
    held_rooted: FxHashMap<usize, HeldRooted>,
}

/// A summary's guards rooted at held objects and builtins, as this translation added them.
pub(super) struct HeldRooted {
    /// Held, so that no other summary is made at its address while it is a key.
    _summary: Arc<Summary>,
    pub(super) guards: Vec<(SourceId, Check)>,
}

/// One replay kept in `Replays`.
pub(super) struct Replay {
    /// Held, so that no other summary is made at its address while it is a key.
    pub(super) summary: Arc<Summary>,
    pub(super) function: StrongRef,
    pub(super) source: Option<SourceId>,
    pub(super) args: Vec<Vid>,
    pub(super) argument_sources: Vec<Option<SourceId>>,
    pub(super) guards: Vec<(SourceId, Check)>,
}

impl Replays {
    pub(super) fn guards_of(
        &self,
        summary: &Summary,
        function: &Bound<'_, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        argument_sources: &[Option<SourceId>],
    ) -> Option<&[(SourceId, Check)]> {
        let key = (summary as *const Summary as usize, function.as_ptr() as usize);
        self.by_call.get(&key)?.iter().find_map(|replay| {
            (replay.source == source && replay.args == args && replay.argument_sources == argument_sources)
                .then_some(replay.guards.as_slice())
        })
    }

    pub(super) fn keep(&mut self, replay: Replay) {
        let key = (
            Arc::as_ptr(&replay.summary) as usize,
            replay.function.as_ptr() as usize,
        );
        self.by_call.entry(key).or_default().push(replay);
    }

    /// The guards rooted at held objects and builtins `summary` added in this translation,
    /// where it was replayed before.
    pub(super) fn held_rooted(&self, summary: &Summary) -> Option<&[(SourceId, Check)]> {
        self.held_rooted
            .get(&(summary as *const Summary as usize))
            .map(|held| held.guards.as_slice())
    }

    pub(super) fn keep_held_rooted(&mut self, summary: &Arc<Summary>, guards: Vec<(SourceId, Check)>) {
        self.held_rooted.insert(
            Arc::as_ptr(summary) as usize,
            HeldRooted {
                _summary: Arc::clone(summary),
                guards,
            },
        );
    }

    pub(super) fn clear(&mut self) {
        self.by_call.clear();
        self.held_rooted.clear();
    }
}

/// What a summarized call gives.
pub(super) enum Given {
    /// A constant value.
    Constant(StrongRef),
    /// Instances of Python classes, lists, dicts and tuples the call made, holding constant
    /// values, objects of the frame and one another (scikit-learn's tags, its
    /// configuration's copy, `get_namespace`'s `(module, False)`), or an object of the
    /// frame itself: the objects made again at each replay, as each call makes its own,
    /// each one's parts naming earlier ones; the objects of the frame read again through
    /// their paths (`sourced`, where `MadeAttr::Sourced` points).
    Made {
        objects: Vec<MadeObject>,
        sourced: Vec<Path>,
        result: MadeAttr,
    },
}

/// An object a summarized call made.
pub(super) enum MadeObject {
    /// An instance: its class (held weakly where it takes weak references, as the guards
    /// that pinned it do: a summary keeps no class of the program alive) and its attributes
    /// in the order they were set.
    Instance {
        class: Pin,
        attrs: Vec<(String, MadeAttr)>,
    },
    List(Vec<MadeAttr>),
    /// A dict of constant keys (a dict whose table differs from a new one's of its items
    /// is a change of the call's: it is not summarized).
    Dict(Vec<(StrongRef, MadeAttr)>),
    Tuple(Vec<MadeAttr>),
}

pub(super) enum MadeAttr {
    Constant(StrongRef),
    /// An earlier object of the same result (one object held twice stays one).
    Made(usize),
    /// An object of the frame the call read (`Given::Made`'s `sourced`, by index): read
    /// again through its path from the new call, where the function reads it.
    Sourced(usize),
}
