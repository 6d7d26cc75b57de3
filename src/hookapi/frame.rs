//! The frame object a Python hook receives. It reads the frame being
//! dispatched on demand and refuses every use once the hook has returned.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::pep523_backend::{FrameView, RawFrameView};

#[pyclass(frozen, module = "framehook", name = "Frame")]
pub struct Frame {
    view: RawFrameView,
    dispatching: AtomicBool,
    /// The dispatching thread's state (cheaper to learn than a ThreadId).
    thread_state: usize,
    original: Py<PyAny>,
    code: Mutex<Py<PyAny>>,
    locals: Mutex<Option<Py<PyAny>>>,
}

impl Frame {
    pub(crate) fn new(py: Python<'_>, view: &FrameView<'_>) -> Self {
        let original = view.code(py).to_owned().unbind();
        Self {
            view: view.as_raw(),
            dispatching: AtomicBool::new(true),
            thread_state: view.thread_state() as usize,
            code: Mutex::new(original.clone_ref(py)),
            original,
            locals: Mutex::new(None),
        }
    }

    pub(crate) fn set_code(&self, code: &Bound<'_, PyAny>) {
        let previous = std::mem::replace(&mut *self.code.lock(), code.clone().unbind());
        // Released now: PyO3 does not know the eval function's thread is attached,
        // and a plain drop would defer the decref.
        previous.drop_ref(code.py());
    }

    /// Called when the dispatch of this frame ends: every later use raises.
    pub(crate) fn expire(&self) {
        self.dispatching.store(false, Ordering::Release);
    }

    fn view(&self) -> PyResult<FrameView<'_>> {
        // SAFETY: the caller (a method with a Python token) is attached.
        let thread_state = unsafe { pyo3::ffi::PyThreadState_Get() } as usize;
        if !self.dispatching.load(Ordering::Acquire) || thread_state != self.thread_state {
            return Err(PyRuntimeError::new_err(
                "framehook: a Frame can only be used by the hook it was passed to, \
                 on its thread, before the hook returns",
            ));
        }
        // SAFETY: the dispatch that made this frame is still running on this thread.
        Ok(unsafe { FrameView::from_raw(self.view) })
    }
}

#[pymethods]
impl Frame {
    /// The code that would run now: the original, or an earlier hook's replacement.
    #[getter]
    fn f_code(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.view()?;
        Ok(self.code.lock().clone_ref(py))
    }

    /// The frame's original code object.
    #[getter]
    fn original_code(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.view()?;
        Ok(self.original.clone_ref(py))
    }

    #[getter]
    fn f_globals<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.view()?.globals(py))
    }

    #[getter]
    fn f_builtins<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.view()?.builtins(py))
    }

    /// The values bound so far (the arguments, at entry), cells and free
    /// variables unboxed. Built on first access.
    #[getter]
    fn f_locals(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let view = self.view()?;
        let mut cached = self.locals.lock();
        if let Some(locals) = cached.as_ref() {
            return Ok(locals.clone_ref(py));
        }
        let locals = view.locals(py)?.unbind();
        *cached = Some(locals.clone_ref(py));
        Ok(locals)
    }

    /// The caller's frame object, or None.
    #[getter]
    fn f_back<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.view()?.back(py)
    }

    /// The line the frame starts at.
    #[getter]
    fn f_lineno(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.view()?;
        Ok(self.original.bind(py).getattr("co_firstlineno")?.unbind())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let name = self
            .original
            .bind(py)
            .getattr("co_qualname")
            .or_else(|_| self.original.bind(py).getattr("co_name"))
            .map(|name| name.to_string())
            .unwrap_or_default();
        let state = if self.dispatching.load(Ordering::Acquire) {
            ""
        } else {
            ", expired"
        };
        format!("<framehook.Frame of {name}{state}>")
    }
}
