//! The functions the eval function calls in this layer, handed to the backend
//! as the [`Upcalls`] table of every registry's context. Each turns the raw
//! pointers of the contract into safe types and calls [`super::dispatch`].

use std::ffi::{c_int, c_void};

use pyo3::ffi;
use pyo3::prelude::*;

use super::dispatch;
use crate::pep523_backend::{Context, Decision, FrameView, FrameViewRaw, NativeChain, Upcalls};

/// The table every registry installs its context with.
pub(crate) static UPCALLS: Upcalls = Upcalls {
    dispatch: on_frame,
    dispatch_native_rest: on_native_rest,
    release,
    passthrough_observers,
    observe,
    release_observers,
    finish,
    release_native_owner,
};

fn to_status(py: Python<'_>, decided: PyResult<Decision>, out: &mut Decision) -> c_int {
    match decided {
        Ok(decision) => {
            *out = decision;
            0
        }
        Err(err) => {
            err.restore(py);
            -1
        }
    }
}

/// Called by the eval function for every frame the hooks are asked about.
unsafe extern "C" fn on_frame(view: *mut FrameViewRaw, out: *mut Decision) -> c_int {
    // SAFETY: the eval function runs attached to the interpreter and passes valid
    // pointers that outlive this call, on this thread.
    let (py, frame, out) = unsafe { (Python::assume_attached(), FrameView::from_upcall(view), &mut *out) };
    to_status(py, dispatch::on_frame(py, &frame), out)
}

/// Called by the eval function when link `index` of a native chain it called
/// itself did not give a plain decline: the dispatch goes on here from that answer.
unsafe extern "C" fn on_native_rest(
    view: *mut FrameViewRaw,
    out: *mut Decision,
    chain: *const NativeChain,
    index: ffi::Py_ssize_t,
    status: c_int,
    replacement: *mut ffi::PyObject,
) -> c_int {
    // SAFETY: as in on_frame; the eval function retains the chain, with `count`
    // links, for the call; `replacement` is a new reference or NULL.
    let (py, frame, out, chain) = unsafe {
        (
            Python::assume_attached(),
            FrameView::from_upcall(view),
            &mut *out,
            &*chain,
        )
    };
    // SAFETY: as above.
    let links = unsafe { std::slice::from_raw_parts(chain.links.as_ptr(), chain.count as usize) };
    // SAFETY: as above.
    let answer = unsafe { dispatch::native_answer(py, status, replacement) };
    to_status(
        py,
        dispatch::on_native_rest(py, &frame, links, index as usize, answer),
        out,
    )
}

/// Called by the eval function once a decision's argument map is no longer used.
unsafe extern "C" fn release(owner: *mut c_void) {
    // SAFETY: the decision's arg_map_owner, released once.
    unsafe { dispatch::release(owner) }
}

/// Called by the eval function for a frame that passes through unhooked while
/// observers exist: an observer set (see [`observe`]) or NULL.
unsafe extern "C" fn passthrough_observers(context: *const Context) -> *mut c_void {
    // SAFETY: the eval function runs attached and passes the installed context.
    let (py, context) = unsafe { (Python::assume_attached(), &*context) };
    dispatch::passthrough_observers(py, context)
}

/// Called by the eval function for each event of an observed frame.
unsafe extern "C" fn observe(
    observers: *mut c_void,
    event: c_int,
    code: *mut ffi::PyObject,
    original: *mut ffi::PyObject,
) {
    // SAFETY: the eval function runs attached and passes live code objects (original
    // may be NULL) and an observer set it got from dispatch and has not released yet.
    unsafe {
        let py = Python::assume_attached();
        let code = Borrowed::from_ptr(py, code);
        let original = Borrowed::from_ptr_or_opt(py, original);
        dispatch::observe(py, observers, event, &code, original.as_ref());
    }
}

/// Called by the eval function when an observed frame has ended.
unsafe extern "C" fn release_observers(observers: *mut c_void) {
    // SAFETY: `observers` came from dispatch and is released once.
    unsafe { dispatch::release_observers(observers) }
}

/// Called by the eval function once a frame whose hooks asked for it has finished.
unsafe extern "C" fn finish(after_frame: *mut c_void) {
    // SAFETY: the eval function runs attached and passes the decision's token once.
    unsafe { dispatch::finish(Python::assume_attached(), after_frame) }
}

/// Called when a native chain's last reference goes, once per link.
unsafe extern "C" fn release_native_owner(owner: *const c_void) {
    // SAFETY: the owner a link was made with (see `Registry`'s native chains), released once.
    unsafe { dispatch::release_native_owner(owner) }
}
