//! `framehook.disabled()`: frames started on a thread inside the block are not
//! hooked. The per-thread depth the dispatch checks, and the Python type.

use std::cell::Cell;
use std::ffi::c_void;

use pyo3::ffi;
use pyo3::prelude::*;

use super::pyobject::{
    bool_object, ffi_body, method, parse_arguments, slot, CTable, NativeType, NativeValue, TypeSpec,
};
use crate::pep523_backend;

thread_local! {
    /// Depth of `framehook.disabled()` blocks on this thread.
    static DISABLED_DEPTH: Cell<u32> = const { Cell::new(0) };
}

pub(crate) fn enter_disabled() {
    DISABLED_DEPTH.with(|depth| {
        if depth.get() == 0 {
            pep523_backend::disabled_threads_add(1);
        }
        depth.set(depth.get() + 1);
    });
}

pub(crate) fn exit_disabled() {
    DISABLED_DEPTH.with(|depth| {
        if depth.get() == 1 {
            pep523_backend::disabled_threads_add(-1);
        }
        depth.set(depth.get().saturating_sub(1));
    });
}

/// Whether frames starting now on this thread are out of the hooks' sight.
#[inline]
pub(crate) fn disabled_here() -> bool {
    // Thread locals cost a call in a shared library: read only when some thread is disabled.
    pep523_backend::disabled_threads() && DISABLED_DEPTH.with(Cell::get) > 0
}

// -------------------------------------------------------------------- disabled

/// `with framehook.disabled():` frames started on this thread inside are not hooked.
pub struct Disabled;

impl NativeValue for Disabled {}

unsafe extern "C" fn disabled_new(
    subtype: *mut ffi::PyTypeObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls tp_new attached, with the interpreter's disabled type
    // (it is final, and its instances carry nothing), a tuple and a dict or NULL.
    unsafe {
        ffi_body(|py| {
            parse_arguments(py, "disabled", args, kwargs, &[], &[])?;
            Bound::from_owned_ptr_or_err(py, ffi::PyType_GenericAlloc(subtype, 0))
        })
    }
}

unsafe extern "C" fn disabled_enter(
    object: *mut ffi::PyObject,
    _unused: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls methods attached, with a live instance.
    unsafe {
        ffi_body(|py| {
            enter_disabled();
            Ok(Bound::from_borrowed_ptr(py, object))
        })
    }
}

unsafe extern "C" fn disabled_exit(
    _object: *mut ffi::PyObject,
    _args: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls methods attached.
    unsafe {
        ffi_body(|py| {
            exit_disabled();
            bool_object(py, false)
        })
    }
}

static DISABLED_METHODS: CTable<[ffi::PyMethodDef; 3]> = CTable([
    method(
        c"__enter__",
        ffi::PyMethodDefPointer {
            PyCFunction: disabled_enter,
        },
        ffi::METH_NOARGS,
        c"Frames started on this thread from now on are not hooked.",
    ),
    method(
        c"__exit__",
        ffi::PyMethodDefPointer {
            PyCFunction: disabled_exit,
        },
        ffi::METH_VARARGS,
        c"Ends the block.",
    ),
    ffi::PyMethodDef::zeroed(),
]);

pub(crate) fn disabled_type(py: Python<'_>) -> PyResult<NativeType<Disabled>> {
    NativeType::new(
        py,
        TypeSpec {
            name: c"framehook.disabled",
            doc: c"`with framehook.disabled():` frames started on this thread inside are not hooked.",
            slots: vec![
                slot(ffi::Py_tp_new, disabled_new as *mut c_void),
                slot(ffi::Py_tp_methods, DISABLED_METHODS.as_mut_ptr()),
            ],
            attributes: false,
            vectorcall: None,
        },
    )
}
