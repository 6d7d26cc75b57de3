//! CPython's dict and function watchers (3.12+, builds with the GIL), as counters: a
//! [`Watch`] counts the changes of the dict entries and functions it was given, so that
//! whoever relies on them sees with one load that none changed. Elsewhere nothing can be
//! watched and the registering functions answer false.

use rustc_hash::FxHashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Weak};

use parking_lot::Mutex;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::contract;

/// Changes of what it watches, counted.
#[derive(Default)]
pub struct Watch {
    changes: AtomicU64,
}

impl Watch {
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// How many changes of what it watches were reported (some may have changed nothing
    /// that matters: an entry stored again, another key of the same hash).
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    fn count_change(&self) {
        self.changes.fetch_add(1, Ordering::AcqRel);
    }
}

/// The watches of one dict: by the hash of the key they watch, and those that count every
/// change (a key whose hash or `==` could run Python code).
#[derive(Default)]
struct DictWatches {
    by_key: FxHashMap<isize, Vec<Weak<Watch>>>,
    every_change: Vec<Weak<Watch>>,
}

impl DictWatches {
    fn count_all(&self) {
        self.by_key
            .values()
            .flatten()
            .chain(&self.every_change)
            .for_each(count);
    }
}

#[derive(Default)]
struct Registry {
    /// Per interpreter (by id): its dict watcher's and function watcher's ids, None where it
    /// has none (an older interpreter, a free-threaded build, every slot taken).
    watchers: FxHashMap<i64, (Option<c_int>, Option<c_int>)>,
    /// By the object's address. A dict being deallocated counts on its watches and drops
    /// them, before its address can be reused; a function's is not reported, and another
    /// function given its address is seen as it (whose changes only cost a check of every
    /// guard: whoever relies on a function's parts holds the function or checks it).
    dicts: FxHashMap<usize, DictWatches>,
    functions: FxHashMap<usize, Vec<Weak<Watch>>>,
    /// How many functions were left after the last pruning of those no watch holds (a
    /// function's deallocation is not reported: its entry stays until pruned).
    functions_pruned_to: usize,
}

// The callbacks take it with the GIL held, and nothing holds it across a call into Python
// that could change a watched dict (a callback would wait on itself).
static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);

fn count(watch: &Weak<Watch>) {
    if let Some(watch) = watch.upgrade() {
        watch.count_change();
    }
}

/// Adds `watch` to `list`, dropping the watches that are gone.
fn add(list: &mut Vec<Weak<Watch>>, watch: &Arc<Watch>) {
    list.retain(|w| w.strong_count() > 0);
    list.push(Arc::downgrade(watch));
}

/// A key's hash where computing it runs no Python code and keys of other types never equal
/// it (an exact str or int), else None.
fn plain_hash(key: *mut ffi::PyObject) -> Option<isize> {
    // SAFETY: a live object; exact str and int hash in C, without raising.
    unsafe {
        (ffi::PyUnicode_CheckExact(key) != 0 || ffi::PyLong_CheckExact(key) != 0)
            .then(|| ffi::PyObject_Hash(key))
    }
}

/// This interpreter's watcher ids, registered on first use.
fn watchers(registry: &mut Registry, py: Python<'_>) -> (Option<c_int>, Option<c_int>) {
    let interpreter = super::current_interpreter_id(py);
    *registry.watchers.entry(interpreter).or_insert_with(|| {
        // SAFETY: attached; the callbacks are plain functions that live as long as the module.
        let (dicts, functions) = unsafe {
            (
                contract::fh_watch_dicts_with(dict_changed),
                contract::fh_watch_functions_with(function_changed),
            )
        };
        (
            (dicts >= 0).then_some(dicts),
            (functions >= 0).then_some(functions),
        )
    })
}

/// Whether this interpreter watches dicts and functions (3.12+, a build with the GIL, a
/// watcher slot of each kind free).
pub fn watchers_available(py: Python<'_>) -> bool {
    let (dicts, functions) = watchers(&mut REGISTRY.lock(), py);
    dicts.is_some() && functions.is_some()
}

/// Counts on `watch` every change of `dict`'s entry `key` (added, replaced, deleted) and of
/// the whole dict. False where this interpreter watches no dict.
pub fn watch_dict_key(dict: &Bound<'_, PyDict>, key: &Bound<'_, PyAny>, watch: &Arc<Watch>) -> bool {
    watch_dict_entries(dict, plain_hash(key.as_ptr()), watch)
}

/// Counts on `watch` every change of `dict`. False where this interpreter watches no dict.
pub fn watch_dict(dict: &Bound<'_, PyDict>, watch: &Arc<Watch>) -> bool {
    watch_dict_entries(dict, None, watch)
}

/// The entry of the key of this hash, or (None) every entry.
fn watch_dict_entries(dict: &Bound<'_, PyDict>, hash: Option<isize>, watch: &Arc<Watch>) -> bool {
    let mut registry = REGISTRY.lock();
    let Some(watcher) = watchers(&mut registry, dict.py()).0 else {
        return false;
    };
    // SAFETY: attached; a live dict. Watching sets a bit on it and reports nothing.
    if unsafe { contract::fh_watch_dict(watcher, dict.as_ptr()) } < 0 {
        // SAFETY: the error the failed call set.
        unsafe { ffi::PyErr_Clear() };
        return false;
    }
    let watches = registry.dicts.entry(dict.as_ptr() as usize).or_default();
    match hash {
        Some(hash) => add(watches.by_key.entry(hash).or_default(), watch),
        None => add(&mut watches.every_change, watch),
    }
    true
}

/// Counts on `watch` every change of `function`'s code, defaults and keyword defaults (its
/// other parts are read-only). False where this interpreter watches no function.
pub fn watch_function(function: &Bound<'_, PyAny>, watch: &Arc<Watch>) -> bool {
    let mut registry = REGISTRY.lock();
    if watchers(&mut registry, function.py()).1.is_none() {
        return false;
    }
    if registry.functions.len() > 2 * registry.functions_pruned_to + 64 {
        registry.functions.retain(|_, watches| {
            watches.retain(|w| w.strong_count() > 0);
            !watches.is_empty()
        });
        registry.functions_pruned_to = registry.functions.len();
    }
    add(
        registry.functions.entry(function.as_ptr() as usize).or_default(),
        watch,
    );
    true
}

unsafe extern "C" fn dict_changed(dict: *mut ffi::PyObject, key: *mut ffi::PyObject, gone: c_int) {
    let hash = if key.is_null() { None } else { plain_hash(key) };
    let mut registry = REGISTRY.lock();
    let address = dict as usize;
    if gone != 0 {
        if let Some(watches) = registry.dicts.remove(&address) {
            watches.count_all();
        }
        return;
    }
    let Some(watches) = registry.dicts.get(&address) else {
        return;
    };
    match hash {
        Some(hash) => {
            watches.by_key.get(&hash).into_iter().flatten().for_each(count);
            watches.every_change.iter().for_each(count);
        }
        // The whole dict, or a key of another type that may equal a watched one.
        None => watches.count_all(),
    }
}

unsafe extern "C" fn function_changed(function: *mut ffi::PyObject, _key: *mut ffi::PyObject, _gone: c_int) {
    if let Some(watches) = REGISTRY.lock().functions.get(&(function as usize)) {
        watches.iter().for_each(count);
    }
}
