//! The only part of framehook that knows CPython internals.
//!
//! The version-specific work is done by `shim.c`, compiled against the target
//! interpreter's internal headers. This module is the safe Rust face of it:
//! installing the PEP 523 function, reading a frame that is about to run,
//! per-code storage, and the identity of the interpreter the shim was built for.
//! The eval function calls back into [`crate::hookapi`] through
//! `framehook_dispatch` / `framehook_release`.

use std::ffi::{c_int, c_void};
use std::marker::PhantomData;
use std::ptr::NonNull;

use pyo3::ffi;
use pyo3::prelude::*;

mod sys {
    use std::ffi::{c_int, c_ulong, c_ulonglong, c_void};

    use pyo3::ffi::{PyObject, Py_ssize_t};

    /// Mirrors `fh_frame_view` in shim.h.
    #[repr(C)]
    pub struct FrameView {
        pub tstate: *mut c_void,
        pub frame: *mut c_void,
        pub code: *mut PyObject,
        pub caller: *mut c_void,
        pub context: *mut c_void,
    }

    /// Mirrors `fh_decision` in shim.h.
    #[repr(C)]
    pub struct Decision {
        pub code: *mut PyObject,
        pub arg_map: *const c_int,
        pub arg_map_owner: *mut c_void,
        pub observers: *mut c_void,
        pub after_frame: *mut c_void,
    }

    pub type FreeFunc = unsafe extern "C" fn(*mut c_void);

    /// Mirrors `fh_native_link` in shim.h: a native hook function the eval
    /// function may call itself, and what keeps it alive (released through
    /// `framehook::hookapi::dispatch::release_native_owner`).
    #[repr(C)]
    pub struct NativeLink {
        pub hook: *const c_void,
        pub user_data: *mut c_void,
        pub owner: *const c_void,
    }

    /// Mirrors `fh_native_chain` in shim.h; `count` links follow it.
    #[repr(C)]
    pub struct NativeChain {
        pub refs: Py_ssize_t,
        pub generation: c_ulonglong,
        pub count: Py_ssize_t,
        pub links: [NativeLink; 0],
    }

    extern "C" {
        pub fn fh_build_version_hex() -> c_ulong;
        pub fn fh_build_gil_disabled() -> c_int;
        pub fn fh_build_debug() -> c_int;
        pub fn fh_install(context: *const c_void) -> c_int;
        pub fn fh_uninstall() -> c_int;
        pub fn fh_is_installed() -> c_int;
        pub fn fh_enter_hook_context(tstate: *mut c_void);
        pub fn fh_leave_hook_context(tstate: *mut c_void);
        pub fn fh_code_has_exception_table(code: *mut PyObject) -> c_int;
        pub fn fh_current_eval_function() -> *mut c_void;
        pub fn fh_framehook_eval_function() -> *mut c_void;
        pub fn fh_request_code_extra_index(free: FreeFunc) -> Py_ssize_t;
        pub fn fh_code_get_extra(code: *mut PyObject, index: Py_ssize_t) -> *mut c_void;
        pub fn fh_code_extra_or_store(
            code: *mut PyObject,
            index: Py_ssize_t,
            extra: *mut c_void,
        ) -> *mut c_void;
        pub fn fh_view_globals(view: *const FrameView) -> *mut PyObject;
        pub fn fh_view_builtins(view: *const FrameView) -> *mut PyObject;
        pub fn fh_view_locals(view: *const FrameView) -> *mut PyObject;
        pub fn fh_view_back(view: *const FrameView) -> *mut PyObject;
        pub fn fh_view_layout_frame(view: *const FrameView, code: *mut PyObject) -> *mut PyObject;
        pub fn fh_test_install_passthrough() -> c_int;
        pub fn fh_test_uninstall_passthrough() -> c_int;
        pub fn fh_test_passthrough_calls() -> c_ulonglong;
        pub fn fh_test_passthrough_function() -> *mut c_void;
        pub fn fh_native_chain_new(count: Py_ssize_t, generation: c_ulonglong) -> *mut NativeChain;
        pub fn fh_publish_native_chain(context: *const c_void, chain: *mut NativeChain);
        pub fn fh_prepare_lock_free_read(object: *mut PyObject);
        pub fn fh_disabled_threads_add(delta: c_int);
        pub fn fh_disabled_threads() -> c_int;
        pub fn fh_bench_install_floor() -> c_int;
        pub fn fh_bench_uninstall_floor() -> c_int;
    }
}

pub use sys::{FreeFunc, NativeLink};

/// The head of the context given to [`install`] (`fh_context_head` in shim.h):
/// the eval function reads it to run frames the hooks declined before.
#[repr(C)]
pub struct ContextHead {
    /// Bumped on every change of the hooks; bit [`ContextHead::OBSERVING`]
    /// says whether some hook of that generation observes, bit
    /// [`ContextHead::NATIVE_CHAIN`] whether its hooks are a native chain.
    pub generation: std::sync::atomic::AtomicU64,
    pub code_extra_index: ffi::Py_ssize_t,
    /// Written by [`publish_native_chain`] only.
    native_chain: std::sync::atomic::AtomicPtr<sys::NativeChain>,
    native_chain_readers: std::sync::atomic::AtomicIsize,
}

impl ContextHead {
    pub const OBSERVING: u64 = 1;
    pub const NATIVE_CHAIN: u64 = 2;

    pub fn new(generation: u64, code_extra_index: ffi::Py_ssize_t) -> Self {
        Self {
            generation: std::sync::atomic::AtomicU64::new(generation),
            code_extra_index,
            native_chain: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
            native_chain_readers: std::sync::atomic::AtomicIsize::new(0),
        }
    }
}

/// Makes `links` the native hooks the eval function calls itself for frames of
/// `generation` (None: it calls none, every frame goes through
/// `framehook_dispatch`). Writers serialise; publish before the generation is.
pub fn publish_native_chain(_py: Python<'_>, head: &ContextHead, generation: u64, links: Option<Vec<NativeLink>>) {
    let chain = match links {
        None => std::ptr::null_mut(),
        Some(links) => {
            // SAFETY: allocates a zeroed chain with room for `links.len()` links.
            let chain = unsafe { sys::fh_native_chain_new(links.len() as ffi::Py_ssize_t, generation) };
            if chain.is_null() {
                // Out of memory: frames take the general path, which asks the same hooks.
                for link in links {
                    crate::hookapi::dispatch::release_native_owner(link.owner);
                }
                std::ptr::null_mut()
            } else {
                for (i, link) in links.into_iter().enumerate() {
                    // SAFETY: the chain has `count` link slots, written before it is published.
                    unsafe { (*chain).links.as_mut_ptr().add(i).write(link) };
                }
                chain
            }
        }
    };
    // SAFETY: attached (the token); `head` is the context installed for this interpreter,
    // and the chain's reference passes to it.
    unsafe { sys::fh_publish_native_chain(std::ptr::from_ref(head).cast(), chain) };
}

/// Stores `replacement` (None: no such replacement) as the one the eval function
/// runs itself for frames of a code whose state `head` is; the caller keeps it alive.
pub fn set_remembered_replacement(head: &CodeStateHead, replacement: Option<&Bound<'_, PyAny>>) {
    let pointer = replacement.map_or(std::ptr::null_mut(), |code| {
        // SAFETY: a live object, attached (the Bound proves both).
        unsafe { sys::fh_prepare_lock_free_read(code.as_ptr()) };
        code.as_ptr()
    });
    head.replacement.store(pointer, std::sync::atomic::Ordering::Release);
}

/// Threads inside `framehook.disabled()` blocks join and leave this count, which
/// the eval function reads before taking a path that asks no Rust code.
pub fn disabled_threads_add(delta: c_int) {
    // SAFETY: an atomic counter.
    unsafe { sys::fh_disabled_threads_add(delta) }
}

pub fn disabled_threads() -> bool {
    // SAFETY: an atomic counter.
    unsafe { sys::fh_disabled_threads() > 0 }
}

/// The head of what framehook stores in co_extra (`fh_code_state_head`).
#[repr(C)]
#[derive(Default)]
pub struct CodeStateHead {
    /// The generation in which the hooks decided to run every frame of the code unchanged (0: none).
    pub declined_in: std::sync::atomic::AtomicU64,
    /// ... or to run a replacement (which one is framehook's to remember).
    pub replaced_in: std::sync::atomic::AtomicU64,
    /// That replacement if it takes the original's arguments slot for slot
    /// (borrowed; see [`set_remembered_replacement`]).
    pub replacement: std::sync::atomic::AtomicPtr<ffi::PyObject>,
}

/// The interpreter the shim was compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildTarget {
    pub version_hex: u32,
    pub gil_disabled: bool,
    pub debug: bool,
}

pub fn build_target() -> BuildTarget {
    // SAFETY: the three functions only return compile-time constants.
    unsafe {
        BuildTarget {
            version_hex: sys::fh_build_version_hex() as u32,
            gil_disabled: sys::fh_build_gil_disabled() != 0,
            debug: sys::fh_build_debug() != 0,
        }
    }
}

/// Refuses to run in an interpreter other than the one the shim was built for:
/// a shim compiled against another version's internal headers would corrupt frames.
pub fn check_running_interpreter(py: Python<'_>) -> PyResult<()> {
    let target = build_target();
    let sys = py.import("sys")?;
    let hexversion: u32 = sys.getattr("hexversion")?.extract()?;
    let gil_disabled = py
        .import("sysconfig")?
        .call_method1("get_config_var", ("Py_GIL_DISABLED",))?
        .extract::<Option<i64>>()?
        .unwrap_or(0)
        != 0;
    let debug = sys.hasattr("gettotalrefcount")?;
    let same_minor = hexversion >> 16 == target.version_hex >> 16;
    if same_minor && gil_disabled == target.gil_disabled && debug == target.debug {
        return Ok(());
    }
    Err(pyo3::exceptions::PyImportError::new_err(format!(
        "framehook._native was built for CPython {:#x} (free-threaded: {}, debug: {}) \
         but is running on {:#x} (free-threaded: {gil_disabled}, debug: {debug}); rebuild it",
        target.version_hex, target.gil_disabled, target.debug, hexversion
    )))
}

/// Outcome of [`uninstall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uninstalled {
    /// The previous eval function is back in place.
    Restored,
    /// Another tool installed its function over ours; ours stays in its chain.
    LeftInChain,
}

/// Installs framehook's eval function in the current interpreter, keeping the
/// one found there as the next in line; every [`FrameView`] of the interpreter
/// carries `context` (see [`FrameView::context`]), which must outlive it.
/// Callers serialise installs.
///
/// # Safety
/// `context` must start with a [`ContextHead`] and stay valid as long as the interpreter.
pub unsafe fn install(_py: Python<'_>, context: *const c_void) -> PyResult<()> {
    // SAFETY: attached to the interpreter (the `Python` token proves it); the
    // caller vouches for `context`.
    match unsafe { sys::fh_install(context) } {
        -1 => Err(PyErr::fetch(_py)),
        _ => Ok(()),
    }
}

pub fn uninstall(_py: Python<'_>) -> Uninstalled {
    // SAFETY: attached to the interpreter.
    match unsafe { sys::fh_uninstall() } {
        0 => Uninstalled::LeftInChain,
        _ => Uninstalled::Restored,
    }
}

/// While alive, the calling thread runs as CPython runs a trace function:
/// sys.settrace, sys.setprofile and sys.monitoring do not see its frames, and
/// the frames it starts are not hooked. Tied to the thread that made it.
pub struct TracingSuspended {
    tstate: *mut c_void,
    _not_send: PhantomData<*const ()>,
}

impl TracingSuspended {
    pub fn enter(_py: Python<'_>) -> Self {
        // SAFETY: attached (the `Python` token); left in `drop` on the same thread.
        Self::with_thread_state(unsafe { ffi::PyThreadState_Get() }.cast())
    }

    /// For the thread dispatching `view`'s frame (no thread-state lookup).
    pub fn enter_for(view: &FrameView<'_>) -> Self {
        Self::with_thread_state(view.raw.tstate)
    }

    fn with_thread_state(tstate: *mut c_void) -> Self {
        // SAFETY: the calling thread's state, attached; left in `drop` on the same thread.
        unsafe { sys::fh_enter_hook_context(tstate) };
        TracingSuspended {
            tstate,
            _not_send: PhantomData,
        }
    }
}

impl Drop for TracingSuspended {
    fn drop(&mut self) {
        // SAFETY: made by `enter` on this thread (the type is not Send), which is
        // still attached: suspensions live inside a dispatch.
        unsafe { sys::fh_leave_hook_context(self.tstate) };
    }
}

/// Whether a code object has exception-handling entries in an exception table (3.11+).
pub fn has_exception_table(code: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `code` is a live object; the shim checks that it is a code object.
    unsafe { sys::fh_code_has_exception_table(code.as_ptr()) != 0 }
}

pub fn is_installed(_py: Python<'_>) -> bool {
    // SAFETY: attached to the interpreter.
    unsafe { sys::fh_is_installed() != 0 }
}

/// Addresses of the current interpreter's eval function and of framehook's.
pub fn eval_function_addresses(_py: Python<'_>) -> (usize, usize) {
    // SAFETY: attached to the interpreter; the functions only read pointers.
    unsafe {
        (
            sys::fh_current_eval_function() as usize,
            sys::fh_framehook_eval_function() as usize,
        )
    }
}

/// An identity for the calling thread's interpreter, used to key per-interpreter state.
pub fn current_interpreter(_py: Python<'_>) -> usize {
    // SAFETY: attached, so the thread has an interpreter.
    unsafe { ffi::PyInterpreterState_Get() as usize }
}

/// Per-code storage in co_extra. Requested once per interpreter.
#[derive(Debug, Clone, Copy)]
pub struct CodeExtraSlot(ffi::Py_ssize_t);

impl CodeExtraSlot {
    pub fn index(self) -> ffi::Py_ssize_t {
        self.0
    }

    pub fn request(py: Python<'_>, free: FreeFunc) -> PyResult<Self> {
        // SAFETY: attached; `free` is called by CPython when a code object dies.
        let index = unsafe { sys::fh_request_code_extra_index(free) };
        if index < 0 {
            return Err(PyErr::take(py).unwrap_or_else(|| {
                pyo3::exceptions::PyRuntimeError::new_err("framehook: no co_extra index left")
            }));
        }
        Ok(Self(index))
    }

    /// The boxed `T` stored on `code`, if any. It lives as long as the code.
    ///
    /// # Safety
    /// Only boxed `T`s are stored in this slot (its free function frees a `Box<T>`),
    /// and the caller keeps `code` alive while using the reference.
    #[inline]
    pub unsafe fn boxed<'c, T>(self, code: &Bound<'_, PyAny>) -> Option<&'c T> {
        // SAFETY: guaranteed by the caller; freed only with the code object.
        self.get(code)
            .map(|existing| unsafe { &*existing.as_ptr().cast::<T>() })
    }

    /// The boxed `T` stored on `code`, made with `T::default()` on first use.
    ///
    /// # Safety
    /// As for [`CodeExtraSlot::boxed`].
    pub unsafe fn boxed_or_default<'c, T: Default>(self, code: &Bound<'_, PyAny>) -> PyResult<&'c T> {
        // SAFETY: guaranteed by the caller.
        if let Some(existing) = unsafe { self.boxed(code) } {
            return Ok(existing);
        }
        let fresh = Box::into_raw(Box::<T>::default());
        // SAFETY: `code` is live and the index is ours; a boxed T is what this
        // slot's free function frees.
        let stored = unsafe { sys::fh_code_extra_or_store(code.as_ptr(), self.0, fresh.cast()) };
        if stored != fresh.cast() {
            // SAFETY: the box was not handed over (another thread stored first, or an error).
            drop(unsafe { Box::from_raw(fresh) });
        }
        if stored.is_null() {
            return Err(PyErr::fetch(code.py()));
        }
        // SAFETY: owned by the code object, see above.
        Ok(unsafe { &*stored.cast::<T>() })
    }

    /// The pointer stored on `code`, if any.
    pub fn get(self, code: &Bound<'_, PyAny>) -> Option<NonNull<c_void>> {
        // SAFETY: `code` is a live code object (checked by callers) and the index is ours.
        NonNull::new(unsafe { sys::fh_code_get_extra(code.as_ptr(), self.0) })
    }
}

pub use sys::Decision as RawDecision;

/// A frame about to run, as the eval function received it. Only valid during
/// the dispatch call that received it; [`crate::hookapi`] enforces that.
pub struct FrameView<'a> {
    raw: &'a sys::FrameView,
}

/// A [`FrameView`] detached from its lifetime, for objects that must check
/// themselves that the frame is still being dispatched before using it.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct RawFrameView(*const sys::FrameView);

// SAFETY: a RawFrameView is only dereferenced (through `FrameView::from_raw`) on
// the thread that dispatched the frame, while the dispatch runs.
unsafe impl Send for RawFrameView {}
// SAFETY: as above.
unsafe impl Sync for RawFrameView {}

impl<'a> FrameView<'a> {
    pub fn as_raw(&self) -> RawFrameView {
        RawFrameView(self.raw)
    }

    /// # Safety
    /// The frame's dispatch must still be running, on the calling thread.
    pub unsafe fn from_raw(raw: RawFrameView) -> Self {
        // SAFETY: guaranteed by the caller.
        Self {
            raw: unsafe { &*raw.0 },
        }
    }

    /// The state of the thread dispatching the frame.
    pub fn thread_state(&self) -> *mut c_void {
        self.raw.tstate
    }

    /// What [`install`] was given for the frame's interpreter.
    pub fn context(&self) -> *const c_void {
        self.raw.context
    }

    /// The original code object of the frame.
    pub fn code<'py>(&self, py: Python<'py>) -> Borrowed<'a, 'py, PyAny> {
        // SAFETY: the frame holds a strong reference to its code while the view lives.
        unsafe { Borrowed::from_ptr(py, self.raw.code) }
    }

    pub fn globals<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        // SAFETY: the frame's globals are alive while the view lives; we take a new reference.
        unsafe { Bound::from_borrowed_ptr(py, sys::fh_view_globals(self.raw)) }
    }

    pub fn builtins<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        // SAFETY: as for globals.
        unsafe { Bound::from_borrowed_ptr(py, sys::fh_view_builtins(self.raw)) }
    }

    /// The values bound so far, cells and free variables unboxed; for module
    /// and class bodies, the frame's own locals mapping.
    pub fn locals<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: the view is valid; the shim returns a new reference or NULL with an error.
        unsafe { Bound::from_owned_ptr_or_err(py, sys::fh_view_locals(self.raw)) }
    }

    /// A frame object showing `code`, laid out in memory like CPython's frames
    /// (a PyFrameObject on 3.9/3.10; Paddle's interpreter-frame proxy on 3.11+)
    /// for native code that reads frame fields directly. It owns its contents.
    pub fn layout_frame<'py>(&self, code: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: the view is valid and `code` alive; new reference or NULL with an error.
        unsafe {
            Bound::from_owned_ptr_or_err(
                code.py(),
                sys::fh_view_layout_frame(self.raw, code.as_ptr()),
            )
        }
    }

    /// The caller's frame object, or None.
    pub fn back<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: the view is valid; new reference or NULL with an error.
        unsafe { Bound::from_owned_ptr_or_err(py, sys::fh_view_back(self.raw)) }
    }
}

/// Called by the eval function for every hookable frame.
#[no_mangle]
extern "C" fn framehook_dispatch(view: *mut sys::FrameView, out: *mut sys::Decision) -> c_int {
    // SAFETY: the eval function runs attached to the interpreter and passes valid
    // pointers that outlive this call.
    let py = unsafe { Python::assume_attached() };
    let (view, out) = unsafe { (&*view, &mut *out) };
    let frame = FrameView { raw: view };
    match crate::hookapi::dispatch::on_frame(py, &frame) {
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

/// Called by the eval function when link `index` of a native chain it called
/// itself did not decline: the dispatch goes on here from that answer.
#[no_mangle]
extern "C" fn framehook_dispatch_native_rest(
    view: *mut sys::FrameView,
    out: *mut sys::Decision,
    chain: *const sys::NativeChain,
    index: ffi::Py_ssize_t,
    status: c_int,
    replacement: *mut ffi::PyObject,
) -> c_int {
    // SAFETY: as in framehook_dispatch; the chain is retained by the eval function
    // for the call, with `count` links; on success `replacement` is a new reference.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: as above.
    let (view, out, chain) = unsafe { (&*view, &mut *out, &*chain) };
    // SAFETY: as above.
    let links = unsafe { std::slice::from_raw_parts(chain.links.as_ptr(), chain.count as usize) };
    let owners: Vec<*const c_void> = links.iter().map(|link| link.owner).collect();
    let answer = if status < 0 {
        Err(PyErr::fetch(py))
    } else {
        // SAFETY: as above.
        Ok(unsafe { Bound::from_owned_ptr_or_opt(py, replacement) })
    };
    let frame = FrameView { raw: view };
    match crate::hookapi::dispatch::on_native_rest(py, &frame, &owners, index as usize, answer) {
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

/// Called when a native chain's last reference goes.
#[no_mangle]
extern "C" fn framehook_native_chain_release_owners(chain: *mut sys::NativeChain) {
    // SAFETY: the chain has `count` links, each owner released here once.
    let chain = unsafe { &*chain };
    // SAFETY: as above.
    let links = unsafe { std::slice::from_raw_parts(chain.links.as_ptr(), chain.count as usize) };
    for link in links {
        crate::hookapi::dispatch::release_native_owner(link.owner);
    }
}

/// Called by the eval function once a decision's argument map is no longer used.
#[no_mangle]
extern "C" fn framehook_release(owner: *mut c_void) {
    crate::hookapi::dispatch::release(owner);
}

/// Called by the eval function for a frame that passes through unhooked while
/// observers exist: an observer set (see [`framehook_observe`]) or NULL.
#[no_mangle]
extern "C" fn framehook_passthrough_observers(context: *mut c_void) -> *mut c_void {
    // SAFETY: the eval function runs attached.
    let py = unsafe { Python::assume_attached() };
    crate::hookapi::dispatch::passthrough_observers(py, context)
}

/// Called by the eval function for each event of an observed frame.
#[no_mangle]
extern "C" fn framehook_observe(
    observers: *mut c_void,
    event: c_int,
    code: *mut ffi::PyObject,
    original: *mut ffi::PyObject,
) {
    // SAFETY: the eval function runs attached and passes live code objects (original
    // may be NULL) and an observer set it got from dispatch and has not released yet.
    let py = unsafe { Python::assume_attached() };
    let code = unsafe { Borrowed::from_ptr(py, code) };
    let original = unsafe { Borrowed::from_ptr_or_opt(py, original) };
    unsafe { crate::hookapi::dispatch::observe(py, observers, event, &code, original.as_ref()) }
}

/// Called by the eval function once a frame whose hooks asked for it has finished.
#[no_mangle]
extern "C" fn framehook_finish(after_frame: *mut c_void) {
    // SAFETY: the eval function runs attached and passes the decision's token once.
    let py = unsafe { Python::assume_attached() };
    unsafe { crate::hookapi::dispatch::finish(py, after_frame) }
}

/// Called by the eval function when an observed frame has ended.
#[no_mangle]
extern "C" fn framehook_release_observers(observers: *mut c_void) {
    // SAFETY: `observers` came from dispatch and is released once.
    unsafe { crate::hookapi::dispatch::release_observers(observers) }
}

/// Test support: a pass-through PEP 523 function standing for another tool.
pub mod foreign_for_tests {
    use super::*;

    pub fn install(_py: Python<'_>) -> bool {
        // SAFETY: attached.
        unsafe { sys::fh_test_install_passthrough() == 0 }
    }
    pub fn uninstall(_py: Python<'_>) -> bool {
        // SAFETY: attached.
        unsafe { sys::fh_test_uninstall_passthrough() != 0 }
    }
    pub fn calls() -> u64 {
        // SAFETY: reads an atomic counter.
        unsafe { sys::fh_test_passthrough_calls() }
    }
    pub fn address() -> usize {
        // SAFETY: returns a function address.
        unsafe { sys::fh_test_passthrough_function() as usize }
    }
}

/// Bench support: the bare pass-through PEP 523 function framehook's overhead
/// is measured against (nothing but a call of CPython's default evaluator).
pub mod floor_for_bench {
    use super::*;

    /// True if installed now, false if it was already.
    pub fn install(py: Python<'_>) -> PyResult<bool> {
        // SAFETY: attached.
        match unsafe { sys::fh_bench_install_floor() } {
            -1 => Err(PyErr::fetch(py)),
            status => Ok(status == 0),
        }
    }
    /// True if it was installed and CPython's default evaluator is back.
    pub fn uninstall(_py: Python<'_>) -> bool {
        // SAFETY: attached.
        unsafe { sys::fh_bench_uninstall_floor() != 0 }
    }
}
