//! Makes freed `#[pyclass]` instances release their type.
//!
//! An instance of a heap type holds a reference to its type (taken by
//! `PyType_GenericAlloc`), which its `tp_dealloc` must release. PyO3 0.28.3's
//! `tp_dealloc` does not, so every freed `Frame` (one per uncached hook call) and
//! `HookHandle` left one reference behind on its type: `sys.getrefcount(framehook.Frame)`
//! grew by one per hook call, and so did `sys.gettotalrefcount()` on debug builds.
//! PyO3 fixed this in 0.29.1 (PyO3 PR 6224), but 0.29 no longer builds for 3.13t.
//!
//! The workaround: at import, free one probe instance and see whether its type's
//! reference count comes back down. If it does not, each of our classes gets a
//! `tp_dealloc` that calls PyO3's and then releases the type, as CPython's own
//! `subtype_dealloc` does. With a PyO3 that releases the type itself the probe sees
//! it and nothing is patched, so the fix can never release the type twice.

use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::hookapi::python::Disabled;

/// (type, PyO3's `tp_dealloc` for it) for every patched class; set once, before patching.
static ORIGINAL_DEALLOCS: OnceLock<Vec<(usize, ffi::destructor)>> = OnceLock::new();

unsafe extern "C" fn dealloc_releasing_type(object: *mut ffi::PyObject) {
    // SAFETY: CPython calls tp_dealloc with a live object whose refcount reached zero.
    let type_ptr = unsafe { ffi::Py_TYPE(object) };
    let original = ORIGINAL_DEALLOCS
        .get()
        .and_then(|originals| originals.iter().find(|(ty, _)| *ty == type_ptr as usize))
        .map(|(_, dealloc)| *dealloc)
        .expect("framehook: tp_dealloc patched on a type without its original");
    // SAFETY: `original` is the type's own tp_dealloc; the type stays alive until the
    // reference the instance held is released below, and the module holds another.
    unsafe {
        original(object);
        ffi::Py_DECREF(type_ptr.cast());
    }
}

/// Whether this PyO3 frees an instance without releasing the reference it holds on its type.
fn instances_keep_their_type(py: Python<'_>) -> PyResult<bool> {
    let probe_type = py.get_type::<Disabled>();
    // SAFETY: attached; the type object is alive (bound above).
    let refcount = || unsafe { ffi::Py_REFCNT(probe_type.as_ptr()) };
    let before = refcount();
    drop(Bound::new(py, Disabled)?);
    Ok(refcount() > before)
}

/// Gives each of `classes` a `tp_dealloc` that also releases the type, if PyO3's does not.
/// Call once the classes exist and before any other thread can use them (module init).
pub(crate) fn release_types_on_dealloc(py: Python<'_>, classes: &[Bound<'_, PyType>]) -> PyResult<()> {
    if ORIGINAL_DEALLOCS.get().is_some() || !instances_keep_their_type(py)? {
        return Ok(()); // already patched (module initialised again), or nothing to fix
    }
    let originals = classes
        .iter()
        .filter_map(|class| {
            // SAFETY: a live type object; reading a slot.
            unsafe { (*class.as_type_ptr()).tp_dealloc }
                .map(|dealloc| (class.as_type_ptr() as usize, dealloc))
        })
        .collect::<Vec<_>>();
    let patched = originals.iter().map(|(ty, _)| *ty).collect::<Vec<_>>();
    if ORIGINAL_DEALLOCS.set(originals).is_err() {
        return Ok(());
    }
    for ty in patched {
        // SAFETY: our own heap type, not yet reachable by other threads; its original
        // tp_dealloc is recorded above, so the replacement can call it.
        unsafe { (*(ty as *mut ffi::PyTypeObject)).tp_dealloc = Some(dealloc_releasing_type) };
    }
    Ok(())
}
