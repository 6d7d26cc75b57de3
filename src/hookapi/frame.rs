//! The frame object a Python hook receives (`framehook.Frame`). It reads the
//! frame being dispatched on demand and refuses every use once the hook has
//! returned. One type per interpreter (see [`super::pyobject`]).

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;

use super::pyobject::{
    ffi_body, getset, instance_value, native_getter, slot, CTable, NativeType, NativeValue, StrongRef,
    TypeSpec, GETSET_END,
};
use crate::pep523_backend::{new_error, FrameView, RawFrameView};

pub struct Frame {
    view: RawFrameView,
    dispatching: AtomicBool,
    /// The dispatching thread's state (cheaper to learn than a ThreadId).
    thread_state: usize,
    original: StrongRef,
    code: Mutex<StrongRef>,
    locals: Mutex<Option<StrongRef>>,
}

impl NativeValue for Frame {}

impl Frame {
    pub(crate) fn new(py: Python<'_>, view: &FrameView<'_>) -> Self {
        let original = view.code(py);
        Self {
            view: view.as_raw(),
            dispatching: AtomicBool::new(true),
            thread_state: view.thread_state() as usize,
            code: Mutex::new(StrongRef::new(&original)),
            original: StrongRef::new(&original),
            locals: Mutex::new(None),
        }
    }

    pub(crate) fn set_code(&self, code: &Bound<'_, PyAny>) {
        let previous = std::mem::replace(&mut *self.code.lock(), StrongRef::new(code));
        drop(previous);
    }

    /// Called when the dispatch of this frame ends: every later use raises.
    pub(crate) fn expire(&self) {
        self.dispatching.store(false, Ordering::Release);
    }

    fn view(&self, py: Python<'_>) -> PyResult<FrameView<'_>> {
        // SAFETY: the caller (a getter CPython called) is attached.
        let thread_state = unsafe { ffi::PyThreadState_Get() } as usize;
        if !self.dispatching.load(Ordering::Acquire) || thread_state != self.thread_state {
            return Err(new_error::<PyRuntimeError>(
                py,
                "framehook: a Frame can only be used by the hook it was passed to, \
                 on its thread, before the hook returns",
            ));
        }
        // SAFETY: the dispatch that made this frame is still running on this thread.
        Ok(unsafe { FrameView::from_raw(self.view) })
    }

    /// The values bound so far (the arguments, at entry), cells and free
    /// variables unboxed. Built on first access.
    fn locals<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let view = self.view(py)?;
        let mut cached = self.locals.lock();
        if let Some(locals) = cached.as_ref() {
            return Ok(locals.bind(py));
        }
        let locals = view.locals(py)?;
        *cached = Some(StrongRef::new(&locals));
        Ok(locals)
    }

    fn repr(&self, py: Python<'_>) -> String {
        let original = self.original.bind(py);
        let name = match original
            .getattr("co_qualname")
            .or_else(|_| original.getattr("co_name"))
        {
            Ok(name) => name.to_string(),
            Err(err) => {
                super::pyobject::discard(py, err);
                String::new()
            }
        };
        let state = if self.dispatching.load(Ordering::Acquire) {
            ""
        } else {
            ", expired"
        };
        format!("<framehook.Frame of {name}{state}>")
    }
}

// The code that would run now: the original, or an earlier hook's replacement.
native_getter!(f_code, Frame, |py, frame| {
    frame.view(py)?;
    Ok(frame.code.lock().bind(py))
});
native_getter!(original_code, Frame, |py, frame| {
    frame.view(py)?;
    Ok(frame.original.bind(py))
});
native_getter!(f_globals, Frame, |py, frame| Ok(frame.view(py)?.globals(py)));
native_getter!(f_builtins, Frame, |py, frame| Ok(frame.view(py)?.builtins(py)));
native_getter!(f_locals, Frame, |py, frame| frame.locals(py));
native_getter!(f_back, Frame, |py, frame| frame.view(py)?.back(py));
// The line the frame starts at.
native_getter!(f_lineno, Frame, |py, frame| {
    frame.view(py)?;
    frame.original.bind(py).getattr("co_firstlineno")
});

unsafe extern "C" fn frame_repr(object: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls tp_repr attached, with a live instance of the Frame type.
    unsafe {
        ffi_body(|py| {
            let frame = instance_value::<Frame>(object);
            Ok(pyo3::types::PyString::new(py, &frame.repr(py)).into_any())
        })
    }
}

static GETTERS: CTable<[ffi::PyGetSetDef; 8]> = CTable([
    getset(
        c"f_code",
        f_code,
        None,
        c"The code that would run now: the original, or an earlier hook's replacement.",
    ),
    getset(
        c"original_code",
        original_code,
        None,
        c"The frame's original code object.",
    ),
    getset(c"f_globals", f_globals, None, c"The frame's globals."),
    getset(c"f_builtins", f_builtins, None, c"The frame's builtins."),
    getset(
        c"f_locals",
        f_locals,
        None,
        c"The values bound so far (the arguments, at entry), cells and free variables unboxed.",
    ),
    getset(c"f_back", f_back, None, c"The caller's frame object, or None."),
    getset(c"f_lineno", f_lineno, None, c"The line the frame starts at."),
    GETSET_END,
]);

/// The interpreter's `framehook.Frame` type.
pub(crate) fn new_type(py: Python<'_>) -> PyResult<NativeType<Frame>> {
    NativeType::new(
        py,
        TypeSpec {
            name: c"framehook.Frame",
            doc: c"The frame a hook receives; valid only until the hook returns.",
            slots: vec![
                slot(ffi::Py_tp_getset, GETTERS.as_mut_ptr()),
                slot(ffi::Py_tp_repr, frame_repr as *mut c_void),
            ],
            attributes: false,
            vectorcall: None,
        },
    )
}
