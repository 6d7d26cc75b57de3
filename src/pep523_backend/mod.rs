//! The only part of framehook that knows CPython internals.
//!
//! The version-specific work is done by the shim, the C files of this
//! directory, compiled against the target interpreter's internal headers (every
//! version check in `compat.h`). This module is the safe Rust face of it:
//! installing the PEP 523 function with a context, reading a frame that is about
//! to run, per-code storage, and the identity of the interpreter the shim was
//! built for. It knows nothing of the layers above: the eval function reaches
//! them only through the [`Upcalls`] of the context it was installed with.

mod contract;
mod watch;

use std::ffi::{c_int, c_void};
use std::marker::PhantomData;
use std::ptr::NonNull;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

pub use contract::{
    CodeStateHead, Context, Decision, FrameViewRaw, NativeChain, NativeFrameRaw, NativeLink, Upcalls,
    GENERATION_NATIVE_CHAIN, GENERATION_OBSERVING, GENERATION_SCOPED, GENERATION_STEP,
};
pub use watch::{watch_dict, watch_dict_key, watch_function, watchers_available, Watch};

impl Context {
    pub fn new(generation: u64, code_extra_index: ffi::Py_ssize_t, upcalls: Upcalls) -> Self {
        Self {
            generation: std::sync::atomic::AtomicU64::new(generation),
            code_extra_index,
            upcalls,
            native_chain: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
            native_chain_readers: std::sync::atomic::AtomicIsize::new(0),
        }
    }
}

/// Makes `links` the native hooks the eval function calls itself, in order,
/// for frames of `generation` (None: it calls none, every frame goes through
/// `Upcalls::dispatch`). Each link's owner is released through the context's
/// `release_native_owner` when the chain goes. Writers serialise; publish
/// before the generation is.
pub fn publish_native_chain(
    _py: Python<'_>,
    context: &Context,
    generation: u64,
    links: Option<Vec<NativeLink>>,
) {
    let chain = match links {
        None => std::ptr::null_mut(),
        Some(links) => {
            // SAFETY: allocates a zeroed chain with room for `links.len()` links.
            let chain =
                unsafe { contract::fh_native_chain_new(context, links.len() as ffi::Py_ssize_t, generation) };
            if chain.is_null() {
                // Out of memory: frames take the general path, which asks the same hooks.
                for link in links {
                    // SAFETY: the owner is released once, as the chain would have.
                    unsafe { (context.upcalls.release_native_owner)(link.owner) };
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
    // SAFETY: attached (the token); `context` is the one installed for this interpreter,
    // and the chain's reference passes to it.
    unsafe { contract::fh_publish_native_chain(context, chain) };
}

/// Stores `replacement` (None: no such replacement) as the one the eval function
/// runs itself for frames of a code whose state `head` is; the caller keeps it alive.
pub fn set_remembered_replacement(head: &CodeStateHead, replacement: Option<&Bound<'_, PyAny>>) {
    let pointer = replacement.map_or(std::ptr::null_mut(), |code| {
        // SAFETY: a live object, attached (the Bound proves both).
        unsafe { contract::fh_prepare_lock_free_read(code.as_ptr()) };
        code.as_ptr()
    });
    head.replacement
        .store(pointer, std::sync::atomic::Ordering::Release);
}

/// Threads inside `framehook.disabled()` blocks join and leave this count, which
/// the eval function reads before taking a path that asks no Rust code.
pub fn disabled_threads_add(delta: c_int) {
    // SAFETY: an atomic counter.
    unsafe { contract::fh_disabled_threads_add(delta) }
}

pub fn disabled_threads() -> bool {
    // SAFETY: an atomic counter.
    unsafe { contract::fh_disabled_threads() > 0 }
}

/// Enters (+1) or leaves (-1) an armed scope on the calling thread: in a scoped
/// generation the eval function asks no hook about frames of a thread in none.
pub fn arm_thread(delta: c_int) {
    // SAFETY: a counter of the calling thread's own.
    unsafe { contract::fh_arm_thread(delta) }
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
            version_hex: contract::fh_build_version_hex() as u32,
            gil_disabled: contract::fh_build_gil_disabled() != 0,
            debug: contract::fh_build_debug() != 0,
        }
    }
}

/// Refuses to run in an interpreter other than the one the shim was built for:
/// a shim compiled against another version's internal headers would corrupt frames.
pub fn check_running_interpreter(py: Python<'_>) -> PyResult<()> {
    let target = build_target();
    let sys = py.import("sys")?;
    let hexversion: u32 = sys.getattr("hexversion")?.extract()?;
    // Free-threaded builds say "t" in their ABI flags. (Not `sysconfig`: it imports
    // `threading`, which makes a 3.12 sub-interpreter hang when it ends if the
    // import happened on another thread than the one that ends it.)
    let gil_disabled = sys.getattr("abiflags")?.extract::<String>()?.contains('t');
    // Only debug builds have sys.gettotalrefcount.
    let debug = match sys.getattr("gettotalrefcount") {
        Ok(_) => true,
        Err(absent) => {
            // Dropped through CPython, not PyO3's deferred release (this runs in
            // every interpreter, outside PyO3's knowledge).
            absent.restore(py);
            // SAFETY: attached; clears the error just restored.
            unsafe { ffi::PyErr_Clear() };
            false
        }
    };
    let same_minor = hexversion >> 16 == target.version_hex >> 16;
    if same_minor && gil_disabled == target.gil_disabled && debug == target.debug {
        return Ok(());
    }
    Err(new_error::<pyo3::exceptions::PyImportError>(
        py,
        format!(
            "framehook._native was built for CPython {:#x} (free-threaded: {}, debug: {}) \
         but is running on {:#x} (free-threaded: {gil_disabled}, debug: {debug}); rebuild it",
            target.version_hex, target.gil_disabled, target.debug, hexversion
        ),
    ))
}

/// An exception of type `T` with `message`, made at once. PyO3's own errors are
/// made lazily and drop references when raised, which PyO3 defers to whichever
/// interpreter next runs PyO3 code when it does not know the thread is
/// attached: framehook's code, called by CPython in every interpreter, makes
/// its errors with this.
pub fn new_error<T: pyo3::PyTypeInfo>(py: Python<'_>, message: impl AsRef<str>) -> PyErr {
    let message = std::ffi::CString::new(message.as_ref().replace('\0', " ")).unwrap_or_default();
    // SAFETY: attached (the token); the type is an exception class, the message a C string.
    unsafe { ffi::PyErr_SetString(T::type_object_raw(py).cast(), message.as_ptr()) };
    PyErr::fetch(py)
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
/// carries `context` (see [`FrameView::context`]). Callers serialise installs.
///
/// # Safety
/// `context` must stay valid (at the same address) as long as the interpreter.
pub unsafe fn install(py: Python<'_>, context: &Context) -> PyResult<()> {
    // SAFETY: attached to the interpreter (the `Python` token proves it); the
    // caller vouches for the context's lifetime.
    match unsafe { contract::fh_install(context) } {
        -1 => Err(PyErr::fetch(py)),
        _ => Ok(()),
    }
}

pub fn uninstall(_py: Python<'_>) -> Uninstalled {
    // SAFETY: attached to the interpreter.
    match unsafe { contract::fh_uninstall() } {
        0 => Uninstalled::LeftInChain,
        _ => Uninstalled::Restored,
    }
}

/// The current interpreter is going away: framehook's eval function leaves it
/// and its install entry is given back, whatever was installed over it.
/// Returns whether CPython is finalising the interpreter (true for a
/// sub-interpreter ending; the main interpreter's exit functions run before
/// CPython says so).
pub fn forget_interpreter(_py: Python<'_>) -> bool {
    // SAFETY: attached to the interpreter; callers serialise (registry writers).
    unsafe { contract::fh_forget_interpreter() != 0 }
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
        unsafe { contract::fh_enter_hook_context(tstate) };
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
        unsafe { contract::fh_leave_hook_context(self.tstate) };
    }
}

/// Whether a code object has exception-handling entries in an exception table (3.11+).
pub fn has_exception_table(code: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `code` is a live object; the shim checks that it is a code object.
    unsafe { contract::fh_code_has_exception_table(code.as_ptr()) != 0 }
}

/// Whether CPython never frees `object` (immortal objects, 3.12+).
pub fn is_immortal(object: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `object` is a live object.
    unsafe { contract::fh_is_immortal(object.as_ptr()) != 0 }
}

/// A type's version tag while valid (CPython changes it when an attribute of the type or
/// of a base is set or deleted), else 0; with `assign`, one is given to a type without.
pub fn type_version(type_object: &Bound<'_, PyType>, assign: bool) -> u32 {
    // SAFETY: `type_object` is a live type, the thread attached.
    unsafe { contract::fh_type_version(type_object.as_ptr(), c_int::from(assign)) }
}

/// A part of a function object that `function_part` reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum FunctionPart {
    Code,
    Globals,
    Defaults,
    KwDefaults,
}

/// `function.__code__` (`__globals__`, `__defaults__`, `__kwdefaults__`) of an exact
/// function, as its getter gives it (None where it has no defaults), without the attribute
/// lookup. None where the caller must look the attribute up: not an exact function
/// (`FunctionType` cannot be subclassed, so an exact function's attributes are its type's
/// getters), or a free-threaded build, where another thread could replace the part between
/// the reference the C API lends and ours.
pub fn function_part<'py>(function: &Bound<'py, PyAny>, part: FunctionPart) -> Option<Bound<'py, PyAny>> {
    if cfg!(Py_GIL_DISABLED) {
        return None;
    }
    // SAFETY: reading the type of a live object.
    if unsafe { ffi::Py_TYPE(function.as_ptr()) } != std::ptr::addr_of_mut!(ffi::PyFunction_Type) {
        return None;
    }
    let getter: unsafe extern "C" fn(*mut ffi::PyObject) -> *mut ffi::PyObject = match part {
        FunctionPart::Code => ffi::PyFunction_GetCode,
        FunctionPart::Globals => ffi::PyFunction_GetGlobals,
        FunctionPart::Defaults => ffi::PyFunction_GetDefaults,
        FunctionPart::KwDefaults => ffi::PyFunction_GetKwDefaults,
    };
    let py = function.py();
    // SAFETY: an exact function; the getter lends its field, NULL where the function has
    // none (no defaults), which its attribute gives as None.
    let lent = unsafe { getter(function.as_ptr()) };
    Some(if lent.is_null() {
        py.None().into_bound(py)
    } else {
        // SAFETY: a live object the function holds, now owned.
        unsafe { Bound::from_borrowed_ptr(py, lent) }
    })
}

/// The attribute `name` of the class `ty` as `type.__getattribute__` finds it: the first
/// class of its MRO whose own dict has it, by CPython's own lookup (its method cache). None
/// where the type is not ready (a type being made, whose MRO may not be set: CPython's
/// lookup would make it ready), for the caller to look it up the slow way.
pub fn type_lookup<'py>(
    ty: &Bound<'py, PyType>,
    name: &Bound<'py, PyString>,
) -> Option<Option<Bound<'py, PyAny>>> {
    // SAFETY: `ty` is a live type; its flags are read as CPython reads them (atomically on
    // free-threaded builds).
    if unsafe { ffi::PyType_GetFlags(ty.as_type_ptr()) } & ffi::Py_TPFLAGS_READY == 0 {
        return None;
    }
    // SAFETY: attached; a live, ready type and a str name; a new reference, or NULL with no
    // error set.
    let found = unsafe {
        Bound::from_owned_ptr_or_opt(ty.py(), contract::fh_type_lookup(ty.as_ptr(), name.as_ptr()))
    };
    Some(found)
}

/// `getattr(object, name)`, None where it has no such attribute, without the AttributeError
/// a generic lookup would make for the caller to drop (3.13's `PyObject_GetOptionalAttr`,
/// `_PyObject_LookupAttr` before: `fh_compat_lookup_attr`).
pub fn optional_attr<'py>(
    object: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = object.py();
    let mut found = std::ptr::null_mut();
    // SAFETY: live object and str; `found` receives a new reference or NULL.
    match unsafe { contract::fh_lookup_attr(object.as_ptr(), name.as_ptr(), &mut found) } {
        // SAFETY: the new reference it gave.
        1 => Ok(Some(unsafe { Bound::from_owned_ptr(py, found) })),
        0 => Ok(None),
        _ => Err(PyErr::fetch(py)),
    }
}

/// Whether attributes can be set on a type (a class defined in Python, not a builtin type).
pub fn type_is_mutable(type_object: &Bound<'_, PyType>) -> bool {
    // SAFETY: `type_object` is a live type.
    unsafe { contract::fh_type_is_mutable(type_object.as_ptr()) != 0 }
}

/// `code.replace(**changes)`, whose constants are the objects given (the code's own where
/// `changes` has none): free-threaded 3.13+ would swap those that are not immortal for
/// equal ones it interned, in the tuple it is given and in the tuples in it, so it is
/// given copies of those tuples, and the objects are put back.
pub fn replace_code<'py>(
    code: &Bound<'py, PyAny>,
    changes: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: a constant of the shim.
    if unsafe { contract::fh_code_interns_constants() } == 0 {
        return code.call_method("replace", (), Some(changes));
    }
    let given = match changes.get_item("co_consts")? {
        Some(consts) => consts.cast_into::<PyTuple>()?,
        None => code.getattr("co_consts")?.cast_into::<PyTuple>()?,
    };
    changes.set_item("co_consts", fresh_tuples(&given)?)?;
    let made = code.call_method("replace", (), Some(changes))?;
    // SAFETY: live objects; the shim checks their types. `made` has not run.
    if unsafe { contract::fh_code_keep_constants(made.as_ptr(), given.as_ptr()) } < 0 {
        return Err(PyErr::fetch(code.py()));
    }
    Ok(made)
}

/// `value`, with each tuple in it (itself included) a new one.
fn fresh_tuples<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    match value.cast_exact::<PyTuple>() {
        Ok(tuple) => {
            let items = tuple
                .iter()
                .map(|item| fresh_tuples(&item))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyTuple::new(value.py(), items)?.into_any())
        }
        Err(_) => Ok(value.clone()),
    }
}

/// An identity for the calling thread's interpreter, used to key per-interpreter state.
pub fn current_interpreter(_py: Python<'_>) -> usize {
    // SAFETY: attached, so the thread has an interpreter.
    unsafe { ffi::PyInterpreterState_Get() as usize }
}

/// The current interpreter's id: unlike its address, never reused in a process.
pub fn current_interpreter_id(_py: Python<'_>) -> i64 {
    // SAFETY: attached, so the thread has an interpreter.
    unsafe { contract::fh_interpreter_id() }
}

/// Whether CPython is finalising the current interpreter (see [`forget_interpreter`]).
pub fn interpreter_finalizing(_py: Python<'_>) -> bool {
    // SAFETY: attached, so the thread has an interpreter.
    unsafe { contract::fh_interpreter_finalizing() != 0 }
}

/// The module slots that say which interpreters a module of this build loads
/// in: sub-interpreters with their own GIL (3.12+), free-threading (3.13+).
/// Either may be `{0, NULL}`, which ends a slot table early.
pub fn interpreter_module_slots() -> [ffi::PyModuleDef_Slot; 2] {
    // SAFETY: a constant table of the shim.
    unsafe { contract::fh_interpreter_module_slots }
}

/// Whether the current interpreter is the main one.
pub fn is_main_interpreter(_py: Python<'_>) -> bool {
    // SAFETY: attached, so the thread has an interpreter; the main one exists.
    unsafe { ffi::PyInterpreterState_Get() == ffi::PyInterpreterState_Main() }
}

/// Per-code storage in co_extra: one index, requested once per interpreter,
/// holding one pointer per code object, freed by the index's free function when
/// the code object dies.
#[derive(Debug, Clone, Copy)]
pub struct CodeExtraSlot(ffi::Py_ssize_t);

impl CodeExtraSlot {
    pub fn index(self) -> ffi::Py_ssize_t {
        self.0
    }

    pub fn request(py: Python<'_>, free: ffi::freefunc) -> PyResult<Self> {
        // SAFETY: attached; `free` is called by CPython when a code object dies.
        let index = unsafe { contract::fh_request_code_extra_index(free) };
        if index < 0 {
            return Err(PyErr::take(py).unwrap_or_else(|| {
                new_error::<pyo3::exceptions::PyRuntimeError>(py, "framehook: no co_extra index left")
            }));
        }
        Ok(Self(index))
    }

    /// The pointer stored on `code`, if any.
    #[inline]
    pub fn get(self, code: &Bound<'_, PyAny>) -> Option<NonNull<c_void>> {
        // SAFETY: `code` is a live code object (checked by callers) and the index is ours.
        NonNull::new(unsafe { contract::fh_code_get_extra(code.as_ptr(), self.0) })
    }

    /// Stores `value` on `code` unless a value is stored already, as one step:
    /// the value stored now (`value`, or the earlier one, in which case
    /// `value` was not taken).
    ///
    /// # Safety
    /// `value` must be what this slot's free function frees.
    pub unsafe fn get_or_store(
        self,
        code: &Bound<'_, PyAny>,
        value: NonNull<c_void>,
    ) -> PyResult<NonNull<c_void>> {
        // SAFETY: `code` is live and the index is ours; the caller vouches for `value`.
        let stored = unsafe { contract::fh_code_extra_or_store(code.as_ptr(), self.0, value.as_ptr()) };
        NonNull::new(stored).ok_or_else(|| PyErr::fetch(code.py()))
    }
}

/// A frame about to run, as the eval function received it. Only valid during
/// the upcall that received it: whoever keeps one longer checks that it may (see [`RawFrameView`]).
pub struct FrameView<'a> {
    raw: &'a FrameViewRaw,
}

/// A [`FrameView`] detached from its lifetime, for objects that must check
/// themselves that the frame is still being dispatched before using it.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct RawFrameView(*const FrameViewRaw);

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
        let raw = unsafe { &*raw.0 };
        Self { raw }
    }

    /// # Safety
    /// `raw` is what the eval function passed to the running upcall, on this thread.
    pub unsafe fn from_upcall(raw: *const FrameViewRaw) -> Self {
        // SAFETY: guaranteed by the caller.
        let raw = unsafe { &*raw };
        Self { raw }
    }

    /// The frame as a native hook function receives it: this view, with the
    /// code that would run now and the original.
    pub fn native_frame(&self, current: &Bound<'_, PyAny>, original: &Bound<'_, PyAny>) -> NativeFrameRaw {
        NativeFrameRaw {
            view: self.raw,
            current: current.as_ptr(),
            original: original.as_ptr(),
        }
    }

    /// The state of the thread dispatching the frame.
    pub fn thread_state(&self) -> *mut c_void {
        self.raw.tstate
    }

    /// What [`install`] was given for the frame's interpreter.
    pub fn context(&self) -> &'a Context {
        // SAFETY: installed contexts outlive their interpreter (see `install`).
        unsafe { &*self.raw.context }
    }

    /// The original code object of the frame.
    pub fn code<'py>(&self, py: Python<'py>) -> Borrowed<'a, 'py, PyAny> {
        // SAFETY: the frame holds a strong reference to its code while the view lives.
        unsafe { Borrowed::from_ptr(py, self.raw.code.cast()) }
    }

    pub fn globals<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        // SAFETY: the frame's globals are alive while the view lives; we take a new reference.
        unsafe { Bound::from_borrowed_ptr(py, contract::fh_view_globals(self.raw)) }
    }

    pub fn builtins<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        // SAFETY: as for globals.
        unsafe { Bound::from_borrowed_ptr(py, contract::fh_view_builtins(self.raw)) }
    }

    /// The values bound so far, cells and free variables unboxed; for module
    /// and class bodies, the frame's own locals mapping.
    pub fn locals<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: the view is valid; the shim returns a new reference or NULL with an error.
        unsafe { Bound::from_owned_ptr_or_err(py, contract::fh_view_locals(self.raw)) }
    }

    /// A frame object showing `code`, laid out in memory like CPython's frames
    /// (a PyFrameObject on 3.9/3.10; Paddle's interpreter-frame proxy on 3.11+)
    /// for native code that reads frame fields directly. It owns its contents.
    pub fn layout_frame<'py>(&self, code: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: the view is valid and `code` alive; new reference or NULL with an error.
        unsafe {
            Bound::from_owned_ptr_or_err(code.py(), contract::fh_view_layout_frame(self.raw, code.as_ptr()))
        }
    }

    /// Argument `index` (of `co_varnames`) as bound at entry, unboxed if it is
    /// a cell; None if unbound or not an argument. Reads the frame, builds nothing.
    pub fn argument<'py>(&self, py: Python<'py>, index: usize) -> Option<Borrowed<'a, 'py, PyAny>> {
        // SAFETY: the view is valid; the shim returns a borrowed reference the
        // frame keeps alive while the view lives, or NULL.
        unsafe {
            Borrowed::from_ptr_or_opt(py, contract::fh_view_argument(self.raw, index as ffi::Py_ssize_t))
        }
    }

    /// The contents of free variable `index` (of `co_freevars`), or None if empty.
    pub fn free_variable<'py>(&self, py: Python<'py>, index: usize) -> Option<Borrowed<'a, 'py, PyAny>> {
        // SAFETY: as for `argument`: the closure's cells outlive the view.
        unsafe {
            Borrowed::from_ptr_or_opt(
                py,
                contract::fh_view_free_variable(self.raw, index as ffi::Py_ssize_t),
            )
        }
    }

    /// The cell of free variable `index` (of `co_freevars`), or None.
    pub fn free_cell<'py>(&self, py: Python<'py>, index: usize) -> Option<Borrowed<'a, 'py, PyAny>> {
        // SAFETY: as for `free_variable`.
        unsafe {
            Borrowed::from_ptr_or_opt(
                py,
                contract::fh_view_free_cell(self.raw, index as ffi::Py_ssize_t),
            )
        }
    }

    /// Whether the frame's thread has a trace function (`sys.settrace`).
    pub fn thread_traced(&self) -> bool {
        // SAFETY: the view is valid; this reads its thread state's trace function.
        unsafe { contract::fh_view_thread_traced(self.raw) != 0 }
    }

    /// The caller's frame object, or None.
    pub fn back<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: the view is valid; new reference or NULL with an error.
        unsafe { Bound::from_owned_ptr_or_err(py, contract::fh_view_back(self.raw)) }
    }
}

/// Test and bench support (the `testing` feature): which eval function is
/// installed, a pass-through PEP 523 function standing for another tool, and
/// the bare floor framehook's overhead is measured against.
#[cfg(feature = "testing")]
pub mod testing {
    use super::*;

    pub fn is_installed(_py: Python<'_>) -> bool {
        // SAFETY: attached to the interpreter.
        unsafe { contract::fh_is_installed() != 0 }
    }

    /// Addresses of the current interpreter's eval function and of framehook's.
    pub fn eval_function_addresses(_py: Python<'_>) -> (usize, usize) {
        // SAFETY: attached to the interpreter; the functions only read pointers.
        unsafe {
            (
                contract::fh_current_eval_function() as usize,
                contract::fh_framehook_eval_function() as usize,
            )
        }
    }

    /// Installs the foreign pass-through function, asking the loop to keep
    /// specializing under it if `specializing`; false if it was installed already.
    pub fn foreign_install(_py: Python<'_>, specializing: bool) -> bool {
        // SAFETY: attached.
        unsafe { contract::fh_test_install_passthrough(c_int::from(specializing)) == 0 }
    }

    /// Whether the loop specializes under the current eval function; None where
    /// the interpreter has no such setting (before 3.15).
    pub fn eval_specializing(_py: Python<'_>) -> Option<bool> {
        // SAFETY: attached; reads the interpreter's setting.
        match unsafe { contract::fh_test_eval_specializing() } {
            -1 => None,
            flag => Some(flag != 0),
        }
    }

    /// Sets it for the current eval function; false where there is no such setting.
    pub fn set_eval_specializing(_py: Python<'_>, specializing: bool) -> bool {
        // SAFETY: attached.
        unsafe { contract::fh_test_set_eval_specializing(c_int::from(specializing)) == 0 }
    }

    pub fn foreign_uninstall(_py: Python<'_>) -> bool {
        // SAFETY: attached.
        unsafe { contract::fh_test_uninstall_passthrough() != 0 }
    }

    pub fn foreign_calls() -> u64 {
        // SAFETY: reads an atomic counter.
        unsafe { contract::fh_test_passthrough_calls() }
    }

    pub fn foreign_address() -> usize {
        // SAFETY: returns a function address.
        unsafe { contract::fh_test_passthrough_function() as usize }
    }

    /// Installs the floor: true if installed now, false if it was already.
    pub fn floor_install(py: Python<'_>) -> PyResult<bool> {
        // SAFETY: attached.
        match unsafe { contract::fh_bench_install_floor() } {
            -1 => Err(PyErr::fetch(py)),
            status => Ok(status == 0),
        }
    }

    /// True if the floor was installed and CPython's default evaluator is back.
    pub fn floor_uninstall(_py: Python<'_>) -> bool {
        // SAFETY: attached.
        unsafe { contract::fh_bench_uninstall_floor() != 0 }
    }
}
