//! World guards: what a translation read through the frame's globals and builtins, other
//! dicts' entries, modules' attributes and functions' parts, answered by CPython's dict
//! and function watchers (3.12+, builds with the GIL) instead of read again on each call.
//!
//! A library-heavy call's guards are mostly such reads (scikit-learn's `predict`: about
//! half of its translated time went to them). At the entry's making, the sources that only
//! such watched reads reach are *fixed*: their value, and each guard on one that the value
//! alone decides (`is`, a type that cannot change, an immutable value's `==` or length,
//! absent or present, a watched dict's keys), are set aside. A change of any watched entry or function is counted on the
//! entry's `Watch`; while the count is the one the entry was last armed at, the set-aside
//! guards hold and the fixed values are what a lookup would find, so only the others are
//! checked. Otherwise every guard is checked, and where they all hold and every fixed value
//! is still the same object the entry is armed again at the count read before checking
//! (a change made meanwhile leaves it unarmed).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pyo3::ffi;
use pyo3::prelude::*;

use super::source::{Guard, SourceId};
use crate::hookapi::pyobject::{StrongRef, Watch};
use crate::hookapi::rust_hook::HookContext;

/// What the fixed values were read through, which no watcher sees change: the same on each
/// call where the world holds.
pub struct ReadThrough {
    /// The frame's globals and builtins.
    pub globals: StrongRef,
    pub builtins: StrongRef,
    /// Modules read through: still of the exact module type (assigning `__class__` changes
    /// how their attributes are found, and no dict sees it).
    pub modules: Vec<StrongRef>,
    /// The thread whose thread-local attributes were fixed (`thread_id`; 0: none).
    pub thread: i64,
}

/// What the watched reads of one entry fix, and the guards left to check while they hold.
pub struct World {
    watch: Arc<Watch>,
    /// The watch's count when the entry was last armed (`u64::MAX`: never).
    armed_at: AtomicU64,
    read_through: ReadThrough,
    /// By source id: the value a fixed source holds (None: absent), or None if not fixed.
    fixed: Vec<Option<Option<StrongRef>>>,
    /// The entry's guards the fixed values do not decide (their indices, in order).
    rest: Vec<u32>,
}

impl World {
    /// A world armed at nothing yet (see `fetch::fixing`, which finds what is fixed).
    pub fn new(
        watch: Arc<Watch>,
        read_through: ReadThrough,
        fixed: Vec<Option<Option<StrongRef>>>,
        rest: Vec<u32>,
    ) -> Self {
        let armed_at = AtomicU64::new(u64::MAX);
        Self {
            watch,
            armed_at,
            read_through,
            fixed,
            rest,
        }
    }

    /// Whether nothing watched changed since the entry was armed, for this frame: then the
    /// set-aside guards hold, and the fixed values are current.
    pub fn holds(&self, context: &HookContext<'_, '_>) -> bool {
        let read = &self.read_through;
        self.armed_at.load(Ordering::Acquire) == self.watch.changes()
            && context.globals().as_ptr() == read.globals.as_ptr()
            && context.builtins().as_ptr() == read.builtins.as_ptr()
            // SAFETY: live modules (held); reading their type only.
            && read.modules.iter().all(|m| unsafe { ffi::PyModule_CheckExact(m.as_ptr()) } != 0)
            && (read.thread == 0 || read.thread == thread_id())
    }

    /// Of the entry's `guards`, those the fixed values do not decide.
    pub fn rest<'g>(&'g self, guards: &'g [Guard]) -> impl Iterator<Item = &'g Guard> + 'g {
        self.rest.iter().map(move |&index| &guards[index as usize])
    }

    /// The watch's count, read before checking every guard (`arm_if_unchanged`).
    pub fn changes(&self) -> u64 {
        self.watch.changes()
    }

    /// Armed at `changes`: every guard held, and every fixed value was still the object
    /// kept, after the watch's count was read (`changes`).
    pub fn arm(&self, changes: u64) {
        self.armed_at.store(changes, Ordering::Release);
    }

    /// The fixed sources, with the value each holds (None: absent).
    pub fn fixed_sources(&self) -> impl Iterator<Item = (SourceId, Option<&StrongRef>)> + '_ {
        self.fixed
            .iter()
            .enumerate()
            .filter_map(|(id, fixed)| fixed.as_ref().map(|value| (id, value.as_ref())))
    }

    /// The value a fixed source holds (while `holds`): Some(None) where it is absent.
    pub fn fixed_value<'py>(&self, py: Python<'py>, id: SourceId) -> Option<Option<Bound<'py, PyAny>>> {
        let fixed = self.fixed.get(id)?.as_ref()?;
        Some(fixed.as_ref().map(|value| value.bind(py)))
    }
}

/// The current thread state's id: unique in the process (thread states are numbered as made,
/// from 1), unlike its address, which a later thread may be given.
pub fn thread_id() -> i64 {
    // SAFETY: attached: the thread has a thread state.
    unsafe { ffi::PyThreadState_GetID(ffi::PyThreadState_Get()) }
}
