//! Native frame hooks for framehook, through the C API
//! it publishes as the capsule `framehook._native._C_API`.
//!
//! [`ffi`] mirrors `framehook.h` (shipped in the framehook package,
//! `framehook.get_include()`); the rest is a safe layer: implement
//! [`FrameHook`] and [`register`] it.
//!
//! ```no_run
//! use framehook_capi::{Api, Event, FrameHook, HookFrame, Options};
//! use pyo3::prelude::*;
//!
//! struct CountCalls(std::sync::atomic::AtomicU64);
//!
//! impl FrameHook for CountCalls {
//!     fn observe(&self, _py: Python<'_>, event: Event, _code: &Bound<'_, PyAny>, _original: Option<&Bound<'_, PyAny>>) {
//!         if event == Event::Call {
//!             self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
//!         }
//!     }
//! }
//!
//! # fn demo(py: Python<'_>) -> PyResult<()> {
//! let api = Api::import(py)?;
//! let options = Options { observe: true, transform: false, ..Options::named("count-calls") };
//! let registration = api.register(py, CountCalls(Default::default()), options)?;
//! registration.remove(py)?;
//! # Ok(()) }
//! ```

use std::ffi::{c_int, c_void, CString};
use std::marker::PhantomData;

use pyo3::exceptions::PyImportError;
use pyo3::prelude::*;

/// The C ABI of `framehook.h`, one to one (hence its C names).
#[allow(non_camel_case_types)]
pub mod ffi {
    use std::ffi::{c_char, c_int, c_uint, c_void};

    use pyo3::ffi::PyObject;

    pub const FRAMEHOOK_CAPSULE_NAME: &std::ffi::CStr = c"framehook._native._C_API";
    pub const FRAMEHOOK_API_VERSION: c_uint = 1;

    pub const FRAMEHOOK_EVENT_CALL: c_int = 0;
    pub const FRAMEHOOK_EVENT_RETURN: c_int = 1;
    pub const FRAMEHOOK_EVENT_EXCEPTION: c_int = 2;
    pub const FRAMEHOOK_EVENT_YIELD: c_int = 3;
    pub const FRAMEHOOK_EVENT_RESUME: c_int = 4;

    pub const FRAMEHOOK_ON_ERROR_RAISE: c_int = 0;
    pub const FRAMEHOOK_ON_ERROR_LOG: c_int = 1;

    /// Opaque: the frame a hook function receives.
    #[repr(C)]
    pub struct framehook_frame {
        _private: [u8; 0],
    }

    pub type framehook_hook_func = unsafe extern "C" fn(
        user_data: *mut c_void,
        frame: *const framehook_frame,
        replacement: *mut *mut PyObject,
    ) -> c_int;
    pub type framehook_observe_func = unsafe extern "C" fn(
        user_data: *mut c_void,
        event: c_int,
        code: *mut PyObject,
        original_code: *mut PyObject,
    );
    pub type framehook_free_func = unsafe extern "C" fn(user_data: *mut c_void);
    pub type framehook_frame_func = unsafe extern "C" fn(frame: *const framehook_frame) -> *mut PyObject;

    #[repr(C)]
    pub struct framehook_hook_spec {
        pub size: usize,
        pub name: *const c_char,
        pub hook: Option<framehook_hook_func>,
        pub observe: Option<framehook_observe_func>,
        pub user_data: *mut c_void,
        pub free_user_data: Option<framehook_free_func>,
        pub cache: c_int,
        pub on_error: c_int,
    }

    #[repr(C)]
    pub struct framehook_api {
        pub version: c_uint,
        pub size: usize,
        pub add_hook: unsafe extern "C" fn(spec: *const framehook_hook_spec) -> *mut PyObject,
        pub remove_hook: unsafe extern "C" fn(handle: *mut PyObject) -> c_int,
        pub set_enabled: unsafe extern "C" fn(handle: *mut PyObject, enabled: c_int) -> c_int,
        pub frame_code: framehook_frame_func,
        pub frame_original_code: framehook_frame_func,
        pub frame_globals: framehook_frame_func,
        pub frame_builtins: framehook_frame_func,
        pub frame_locals: framehook_frame_func,
        pub frame_back: framehook_frame_func,
    }

    /// `offsetof`/`sizeof` of both structs in the order `framehook.h` declares
    /// their members, to compare with what a C compiler makes of the header.
    pub fn layout() -> [usize; 21] {
        use std::mem::{offset_of, size_of};
        [
            size_of::<framehook_hook_spec>(),
            offset_of!(framehook_hook_spec, size),
            offset_of!(framehook_hook_spec, name),
            offset_of!(framehook_hook_spec, hook),
            offset_of!(framehook_hook_spec, observe),
            offset_of!(framehook_hook_spec, user_data),
            offset_of!(framehook_hook_spec, free_user_data),
            offset_of!(framehook_hook_spec, cache),
            offset_of!(framehook_hook_spec, on_error),
            size_of::<framehook_api>(),
            offset_of!(framehook_api, version),
            offset_of!(framehook_api, size),
            offset_of!(framehook_api, add_hook),
            offset_of!(framehook_api, remove_hook),
            offset_of!(framehook_api, set_enabled),
            offset_of!(framehook_api, frame_code),
            offset_of!(framehook_api, frame_original_code),
            offset_of!(framehook_api, frame_globals),
            offset_of!(framehook_api, frame_builtins),
            offset_of!(framehook_api, frame_locals),
            offset_of!(framehook_api, frame_back),
        ]
    }
}

/// An evaluation event, as observers receive it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    Call,
    Return,
    Exception,
    Yield,
    Resume,
}

impl Event {
    pub fn from_raw(raw: c_int) -> Option<Self> {
        Some(match raw {
            ffi::FRAMEHOOK_EVENT_CALL => Self::Call,
            ffi::FRAMEHOOK_EVENT_RETURN => Self::Return,
            ffi::FRAMEHOOK_EVENT_EXCEPTION => Self::Exception,
            ffi::FRAMEHOOK_EVENT_YIELD => Self::Yield,
            ffi::FRAMEHOOK_EVENT_RESUME => Self::Resume,
            _ => return None,
        })
    }

    pub fn as_raw(self) -> c_int {
        match self {
            Self::Call => ffi::FRAMEHOOK_EVENT_CALL,
            Self::Return => ffi::FRAMEHOOK_EVENT_RETURN,
            Self::Exception => ffi::FRAMEHOOK_EVENT_EXCEPTION,
            Self::Yield => ffi::FRAMEHOOK_EVENT_YIELD,
            Self::Resume => ffi::FRAMEHOOK_EVENT_RESUME,
        }
    }

    /// The event's name in framehook's Python API ("call", "return", ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Call => "call",
            Self::Return => "return",
            Self::Exception => "exception",
            Self::Yield => "yield",
            Self::Resume => "resume",
        }
    }
}

/// What happens when [`FrameHook::on_frame`] fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// The exception reaches the caller of the hooked function.
    #[default]
    Raise,
    /// An `Exception` (raised, or a return that is not a compatible code object) is logged to
    /// the "framehook" logger and the hook counts as declining; other `BaseException`s raise.
    Log,
}

impl OnError {
    pub fn as_raw(self) -> c_int {
        match self {
            Self::Raise => ffi::FRAMEHOOK_ON_ERROR_RAISE,
            Self::Log => ffi::FRAMEHOOK_ON_ERROR_LOG,
        }
    }
}

/// How a hook is registered.
#[derive(Debug, Clone)]
pub struct Options {
    pub name: String,
    /// Call [`FrameHook::on_frame`] for each frame (false: the hook only observes).
    pub transform: bool,
    /// Call [`FrameHook::observe`] for each evaluation event.
    pub observe: bool,
    /// The answer of `on_frame` depends only on the code object: asked once per code.
    pub cache: bool,
    pub on_error: OnError,
}

impl Options {
    /// A transforming hook that does not observe, uncached, raising on errors.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transform: true,
            observe: false,
            cache: false,
            on_error: OnError::Raise,
        }
    }
}

/// A native frame hook. Both methods run with the thread attached, possibly on
/// several threads at once (free-threaded builds), hence `Send + Sync`. They
/// are called on the hot path without PyO3's attach bookkeeping: a `Py` dropped
/// inside them is released only at the extension's next PyO3 call, so keep
/// temporaries as `Bound`. The hook itself is dropped attached.
pub trait FrameHook: Send + Sync + 'static {
    /// The code to run for `frame` instead of `frame.code()`, or None to decline.
    fn on_frame<'py>(&self, frame: &HookFrame<'_, 'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let _ = frame;
        Ok(None)
    }

    /// One evaluation event of a frame running `code`. `original` is the frame's
    /// original code (the same object unless a hook replaced it) for frames handed
    /// to the hooks, None for frames that pass through unhooked (resumes, yields).
    /// Must not fail.
    fn observe(
        &self,
        py: Python<'_>,
        event: Event,
        code: &Bound<'_, PyAny>,
        original: Option<&Bound<'_, PyAny>>,
    ) {
        let _ = (py, event, code, original);
    }
}

/// The frame a hook receives, valid only during [`FrameHook::on_frame`].
pub struct HookFrame<'a, 'py> {
    api: &'static ffi::framehook_api,
    raw: *const ffi::framehook_frame,
    py: Python<'py>,
    _frame: PhantomData<&'a ffi::framehook_frame>,
}

impl<'py> HookFrame<'_, 'py> {
    fn borrowed(&self, get: ffi::framehook_frame_func) -> Bound<'py, PyAny> {
        // SAFETY: the frame is valid during on_frame; the getter returns a borrowed,
        // non-NULL reference that the frame keeps alive, and we take our own.
        unsafe { Bound::from_borrowed_ptr(self.py, get(self.raw)) }
    }

    fn owned(&self, get: ffi::framehook_frame_func) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: the frame is valid; the getter returns a new reference or NULL with an error.
        unsafe { Bound::from_owned_ptr_or_err(self.py, get(self.raw)) }
    }

    pub fn py(&self) -> Python<'py> {
        self.py
    }

    /// The code that would run now: the original, or an earlier hook's replacement.
    pub fn code(&self) -> Bound<'py, PyAny> {
        self.borrowed(self.api.frame_code)
    }

    pub fn original_code(&self) -> Bound<'py, PyAny> {
        self.borrowed(self.api.frame_original_code)
    }

    pub fn globals(&self) -> Bound<'py, PyAny> {
        self.borrowed(self.api.frame_globals)
    }

    pub fn builtins(&self) -> Bound<'py, PyAny> {
        self.borrowed(self.api.frame_builtins)
    }

    /// The values bound so far (the arguments), cells and free variables unboxed.
    pub fn locals(&self) -> PyResult<Bound<'py, PyAny>> {
        self.owned(self.api.frame_locals)
    }

    /// The caller's frame object, or None.
    pub fn back(&self) -> PyResult<Bound<'py, PyAny>> {
        self.owned(self.api.frame_back)
    }
}

/// framehook's C API, imported from its capsule.
#[derive(Clone, Copy)]
pub struct Api {
    raw: &'static ffi::framehook_api,
}

impl Api {
    /// Imports `framehook._native` and checks the API version.
    pub fn import(py: Python<'_>) -> PyResult<Self> {
        // SAFETY: attached; PyCapsule_Import returns the capsule's pointer or NULL with an error.
        let raw = unsafe { pyo3::ffi::PyCapsule_Import(ffi::FRAMEHOOK_CAPSULE_NAME.as_ptr(), 0) };
        if raw.is_null() {
            return Err(PyErr::fetch(py));
        }
        // SAFETY: the capsule of this name holds a framehook_api that lives as long as
        // the process (framehook's module is never unloaded).
        let raw: &'static ffi::framehook_api = unsafe { &*raw.cast::<ffi::framehook_api>() };
        if raw.version < ffi::FRAMEHOOK_API_VERSION {
            return Err(PyImportError::new_err(format!(
                "framehook C API version {} is older than the {} this extension needs",
                raw.version,
                ffi::FRAMEHOOK_API_VERSION
            )));
        }
        Ok(Self { raw })
    }

    /// Wraps an API table obtained otherwise (framehook itself uses its own, directly).
    ///
    /// # Safety
    /// `raw` must be framehook's API table for this process.
    pub unsafe fn from_raw(raw: &'static ffi::framehook_api) -> Self {
        Self { raw }
    }

    pub fn raw(&self) -> &'static ffi::framehook_api {
        self.raw
    }

    /// Registers `hook` after the hooks already registered in this interpreter.
    pub fn register<H: FrameHook>(
        &self,
        py: Python<'_>,
        hook: H,
        options: Options,
    ) -> PyResult<Registration> {
        let name = CString::new(options.name)
            .map_err(|_| pyo3::exceptions::PyValueError::new_err("a hook name cannot contain NUL"))?;
        let user_data = Box::into_raw(Box::new(Adapter { api: self.raw, hook })).cast::<c_void>();
        let spec = ffi::framehook_hook_spec {
            size: std::mem::size_of::<ffi::framehook_hook_spec>(),
            name: name.as_ptr(),
            hook: options
                .transform
                .then_some(on_frame_trampoline::<H> as ffi::framehook_hook_func),
            observe: options
                .observe
                .then_some(observe_trampoline::<H> as ffi::framehook_observe_func),
            user_data,
            free_user_data: Some(free_trampoline::<H>),
            cache: c_int::from(options.cache),
            on_error: options.on_error.as_raw(),
        };
        // SAFETY: attached; the spec is complete and its strings outlive the call.
        let handle = unsafe { (self.raw.add_hook)(&spec) };
        if handle.is_null() {
            // SAFETY: on failure framehook did not take user_data; it is our Box.
            drop(unsafe { Box::from_raw(user_data.cast::<Adapter<H>>()) });
            return Err(PyErr::fetch(py));
        }
        // SAFETY: add_hook returned a new reference.
        let handle = unsafe { Bound::from_owned_ptr(py, handle) }.unbind();
        Ok(Registration {
            api: self.raw,
            handle,
        })
    }
}

/// A registered native hook. Dropping it leaves the hook registered.
pub struct Registration {
    api: &'static ffi::framehook_api,
    handle: Py<PyAny>,
}

impl Registration {
    /// The `framehook.HookHandle` Python code sees in `framehook.frame_hooks()`.
    pub fn handle(&self) -> &Py<PyAny> {
        &self.handle
    }

    pub fn remove(&self, py: Python<'_>) -> PyResult<()> {
        // SAFETY: attached; the handle is alive.
        check(py, unsafe { (self.api.remove_hook)(self.handle.as_ptr()) })
    }

    pub fn set_enabled(&self, py: Python<'_>, enabled: bool) -> PyResult<()> {
        // SAFETY: attached; the handle is alive.
        check(py, unsafe {
            (self.api.set_enabled)(self.handle.as_ptr(), c_int::from(enabled))
        })
    }
}

fn check(py: Python<'_>, status: c_int) -> PyResult<()> {
    if status < 0 {
        Err(PyErr::fetch(py))
    } else {
        Ok(())
    }
}

struct Adapter<H> {
    api: &'static ffi::framehook_api,
    hook: H,
}

unsafe extern "C" fn on_frame_trampoline<H: FrameHook>(
    user_data: *mut c_void,
    frame: *const ffi::framehook_frame,
    replacement: *mut *mut pyo3::ffi::PyObject,
) -> c_int {
    // SAFETY: framehook calls hooks attached, with the user_data we registered
    // and a frame valid for this call.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: `user_data` is the Box<Adapter<H>> given at registration, alive while registered.
    let adapter = unsafe { &*user_data.cast::<Adapter<H>>() };
    let frame = HookFrame {
        api: adapter.api,
        raw: frame,
        py,
        _frame: PhantomData,
    };
    match adapter.hook.on_frame(&frame) {
        Ok(None) => 0,
        Ok(Some(code)) => {
            // SAFETY: framehook passes a valid out-pointer and takes the new reference.
            unsafe { *replacement = code.into_ptr() };
            0
        }
        Err(err) => {
            err.restore(py);
            -1
        }
    }
}

unsafe extern "C" fn observe_trampoline<H: FrameHook>(
    user_data: *mut c_void,
    event: c_int,
    code: *mut pyo3::ffi::PyObject,
    original: *mut pyo3::ffi::PyObject,
) {
    let Some(event) = Event::from_raw(event) else {
        return; // an event added by a newer framehook
    };
    // SAFETY: as in on_frame_trampoline; `code` is a live borrowed reference.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: `user_data` is the Box<Adapter<H>> given at registration, alive while registered.
    let adapter = unsafe { &*user_data.cast::<Adapter<H>>() };
    // SAFETY: `code` is a live borrowed reference for the call.
    let code = unsafe { Bound::from_borrowed_ptr(py, code) };
    // SAFETY: `original` is a live borrowed reference or NULL.
    let original = unsafe { Bound::from_borrowed_ptr_or_opt(py, original) };
    adapter.hook.observe(py, event, &code, original.as_ref());
}

unsafe extern "C" fn free_trampoline<H: FrameHook>(user_data: *mut c_void) {
    // SAFETY: called once, when framehook no longer uses the Box we gave it.
    let adapter = unsafe { Box::from_raw(user_data.cast::<Adapter<H>>()) };
    // Attached through this crate's PyO3, so that `Py` references the hook holds
    // are released now rather than queued until the extension next calls PyO3.
    Python::attach(|_py| drop(adapter));
}
