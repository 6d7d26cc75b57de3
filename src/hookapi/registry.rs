//! Per-interpreter hook registries. Readers (the eval function, on every frame)
//! take a snapshot without locking; writers are serialised per interpreter.
//! Each registry holds its interpreter's code states and Python types, among
//! them `HookHandle`, the handle of a registered hook, which holds its registry.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use arc_swap::{ArcSwap, ArcSwapOption};
use parking_lot::Mutex;
use pyo3::exceptions::{PyAttributeError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString};

use framehook_capi::ffi as capi_ffi;

use super::code_state::CodeState;
use super::disabled::{disabled_type, Disabled};
use super::frame::{self, Frame};
use super::log;
use super::per_code::PerCode;
use super::pyobject::{
    bool_object, ffi_body, ffi_status, getset, instance_value, native_getter, slot, type_name, CTable,
    NativeType, NativeValue, StrongRef, TypeSpec, GETSET_END,
};
use crate::pep523_backend::{self, new_error, Context, NativeLink, Uninstalled, Upcalls};

/// What to do when a hook raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// The exception reaches the caller of the hooked function.
    Raise,
    /// An `Exception` is logged (logger "framehook") and the hook counts as declining;
    /// other `BaseException`s (KeyboardInterrupt, SystemExit, ...) still raise.
    Log,
}

impl OnError {
    /// The policy named `value` ("raise" or "log").
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "raise" => Some(Self::Raise),
            "log" => Some(Self::Log),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Raise => "raise",
            Self::Log => "log",
        }
    }
}

/// How a hook decides what a frame runs.
pub enum Transform {
    /// `hook(frame) -> CodeType | None`.
    Python(StrongRef),
    /// A C function registered through the capsule API, called with the hook's user data.
    Native(capi_ffi::framehook_hook_func),
    /// A hook built into framehook (SOT).
    Rust(Arc<dyn super::rust_hook::RustHook>),
}

/// How a hook is told about evaluation events.
pub enum Observer {
    /// `observer(event: str, code: CodeType, original_code: CodeType | None) -> None`.
    Python(StrongRef),
    Native(capi_ffi::framehook_observe_func),
}

/// The user data of a native hook, freed by its owner's function once no frame can use it.
pub struct NativeData {
    pointer: *mut c_void,
    free: Option<capi_ffi::framehook_free_func>,
}

// SAFETY: the C API requires user data usable from any thread of the interpreter.
unsafe impl Send for NativeData {}
// SAFETY: as above.
unsafe impl Sync for NativeData {}

impl NativeData {
    pub fn new(pointer: *mut c_void, free: Option<capi_ffi::framehook_free_func>) -> Self {
        Self { pointer, free }
    }

    pub fn pointer(&self) -> *mut c_void {
        self.pointer
    }

    /// Gives the data back to its owner without freeing it (registration failed).
    pub fn disown(&mut self) {
        self.free = None;
    }
}

impl Drop for NativeData {
    fn drop(&mut self) {
        if let Some(free) = self.free {
            // SAFETY: called once; hooks are dropped by attached threads (registry
            // writers, dispatch, handle deallocation), as the C API promises.
            unsafe { free(self.pointer) }
        }
    }
}

/// One registered hook: a transform, an observer, or both.
pub struct Hook {
    pub id: u64,
    pub name: String,
    pub transform: Option<Transform>,
    pub observer: Option<Observer>,
    pub cache: bool,
    pub on_error: OnError,
    pub native_data: Option<NativeData>,
    enabled: AtomicBool,
}

impl Hook {
    pub fn new(
        name: String,
        transform: Option<Transform>,
        observer: Option<Observer>,
        cache: bool,
        on_error: OnError,
        native_data: Option<NativeData>,
    ) -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            name,
            transform,
            observer,
            cache,
            on_error,
            native_data,
            enabled: AtomicBool::new(true),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// The user data passed to native functions (NULL for Python hooks).
    pub fn user_data(&self) -> *mut c_void {
        self.native_data
            .as_ref()
            .map_or(std::ptr::null_mut(), NativeData::pointer)
    }

    pub fn is_native(&self) -> bool {
        self.native_data.is_some()
    }
}

/// The enabled hooks that observe, in call order: what one observed frame reports to.
pub struct ObserverSet {
    pub hooks: Vec<Arc<Hook>>,
}

/// The hooks as a chain the eval function calls itself: when every enabled
/// hook is a native hook that transforms, uncached, and does not observe
/// (cached answers and observers need framehook's Rust code).
fn native_chain(hooks: &[Arc<Hook>]) -> Option<Vec<NativeLink>> {
    let functions = hooks
        .iter()
        .filter(|hook| hook.enabled())
        .map(|hook| match hook.transform {
            Some(Transform::Native(function)) if !hook.cache && hook.observer.is_none() => {
                Some((function, hook))
            }
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    if functions.is_empty() {
        return None;
    }
    let links = functions.into_iter().map(|(function, hook)| NativeLink {
        hook: function as *const c_void,
        user_data: hook.user_data(),
        owner: Arc::into_raw(Arc::clone(hook)).cast(),
    });
    Some(links.collect())
}

/// A registry's version, bumped whenever its hooks or their enabled states
/// change, or a hook's answers may have (cached answers and decisions from an
/// older generation are discarded). Its low bits say whether some hook observes
/// and whether the hooks are a native chain, so the eval function learns both
/// in the same load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation(u64);

impl Generation {
    const OBSERVING: u64 = pep523_backend::GENERATION_OBSERVING;
    const NATIVE_CHAIN: u64 = pep523_backend::GENERATION_NATIVE_CHAIN;
    const SCOPED: u64 = pep523_backend::GENERATION_SCOPED;
    const STEP: u64 = pep523_backend::GENERATION_STEP;

    /// A number no other generation of the registry has.
    pub fn number(self) -> u64 {
        self.0
    }

    pub fn observing(self) -> bool {
        self.0 & Self::OBSERVING != 0
    }

    /// A registry's first generation.
    fn first() -> Self {
        Self(Self::fresh_number())
    }

    /// A number no registry of the process had: code objects can be shared by
    /// interpreters (3.11 and 3.12 share their frozen standard library's with
    /// legacy sub-interpreters), and a code state written under one registry's
    /// generation must never pass for another's.
    fn fresh_number() -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(Generation::STEP);
        NEXT.fetch_add(Self::STEP, Ordering::Relaxed)
    }

    fn next(self, hooks: &[Arc<Hook>], native_chain: bool) -> Self {
        let enabled = || hooks.iter().filter(|hook| hook.enabled());
        let observing = enabled().any(|hook| hook.observer.is_some());
        // Every enabled hook a scoped Rust hook: threads outside armed scopes go unasked.
        let scoped = !observing
            && !native_chain
            && enabled().all(|hook| matches!(&hook.transform, Some(Transform::Rust(rust)) if rust.scoped()));
        let number = Self::fresh_number();
        Self(
            number
                | if observing { Self::OBSERVING } else { 0 }
                | if native_chain { Self::NATIVE_CHAIN } else { 0 }
                | if scoped { Self::SCOPED } else { 0 },
        )
    }
}

/// What [`Registry::at_exit`] runs.
type ExitRelease = Box<dyn FnOnce(Python<'_>) + Send>;

/// Which interpreter: its address (what the eval function keys by) and its id
/// (never reused in a process, unlike the address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct InterpreterKey {
    address: usize,
    id: i64,
}

impl InterpreterKey {
    fn current(py: Python<'_>) -> Self {
        Self {
            address: pep523_backend::current_interpreter(py),
            id: pep523_backend::current_interpreter_id(py),
        }
    }
}

/// The hooks of one interpreter, in call order, with the interpreter's Python
/// types. Made when framehook is first imported in the interpreter, released
/// when the interpreter exits (see [`Registry::release`]); the eval function
/// holds a plain pointer to its context meanwhile.
pub struct Registry {
    /// What the eval function reads: the generation (a [`Generation`]; readers
    /// load it before the hooks, writers store it after), where code states
    /// are, the native chain, and the upcalls into this layer.
    head: Context,
    interpreter: InterpreterKey,
    hooks: ArcSwap<Vec<Arc<Hook>>>,
    /// The enabled observing hooks; None when there are none.
    observers: ArcSwapOption<ObserverSet>,
    writer: Mutex<()>,
    /// Set once the interpreter exits: hooks can no longer be added.
    released: AtomicBool,
    /// What else holds state for the interpreter and releases it when it exits.
    at_exit: Mutex<Vec<ExitRelease>>,
    pub(crate) code_states: PerCode<CodeState>,
    pub(crate) types: PythonTypes,
}

/// The registries of the interpreters where framehook is imported; replaced
/// wholesale (rarely), read lock-free.
static REGISTRIES: LazyLock<ArcSwap<Vec<Arc<Registry>>>> = LazyLock::new(ArcSwap::default);
static REGISTRIES_WRITER: Mutex<()> = Mutex::new(());
/// Registries released while their interpreter could still run frames that
/// use them (the main interpreter's exit functions run before its threads
/// stop): kept, never freed.
static RETIRED: Mutex<Vec<Arc<Registry>>> = Mutex::new(Vec::new());

impl Registry {
    /// The current interpreter's registry, if framehook is imported there.
    pub fn find(py: Python<'_>) -> Option<Arc<Registry>> {
        let interpreter = InterpreterKey::current(py);
        REGISTRIES
            .load()
            .iter()
            .find(|registry| registry.interpreter == interpreter)
            .cloned()
    }

    /// The current interpreter's registry.
    pub fn current(py: Python<'_>) -> PyResult<Arc<Registry>> {
        Self::find(py).ok_or_else(|| {
            new_error::<PyRuntimeError>(
                py,
                "framehook is not imported in this interpreter (import framehook there first), \
                 or the interpreter is exiting",
            )
        })
    }

    /// The current interpreter's registry, made on the first import of
    /// framehook there; None once the interpreter is exiting. A registry made
    /// here installs its context with `upcalls`: the caller passes
    /// `upcalls::UPCALLS`, whose functions call the dispatch, above the registry.
    pub(crate) fn for_import(py: Python<'_>, upcalls: Upcalls) -> PyResult<Arc<Registry>> {
        if let Some(registry) = Self::find(py) {
            return Ok(registry);
        }
        if pep523_backend::interpreter_finalizing(py) {
            return Err(new_error::<PyRuntimeError>(
                py,
                "framehook cannot be imported while the interpreter is exiting",
            ));
        }
        let _writer = REGISTRIES_WRITER.lock();
        let code_states = PerCode::<CodeState>::request(py)?;
        let registry = Arc::new(Registry {
            head: Context::new(Generation::first().0, code_states.index(), upcalls),
            interpreter: InterpreterKey::current(py),
            hooks: ArcSwap::from_pointee(Vec::new()),
            observers: ArcSwapOption::empty(),
            writer: Mutex::new(()),
            released: AtomicBool::new(false),
            at_exit: Mutex::new(Vec::new()),
            code_states,
            types: PythonTypes::new(py)?,
        });
        let mut all = Vec::clone(&REGISTRIES.load());
        all.push(Arc::clone(&registry));
        REGISTRIES.store(Arc::new(all));
        Ok(registry)
    }

    /// Runs `release` when the interpreter exits (after its hooks are gone), for
    /// per-interpreter state kept elsewhere (SOT's).
    pub fn at_exit(&self, release: impl FnOnce(Python<'_>) + Send + 'static) {
        self.at_exit.lock().push(Box::new(release));
    }

    /// The interpreter is exiting (its exit functions run): every hook goes,
    /// framehook's eval function leaves the interpreter, and the registry is no
    /// longer found, so that an interpreter made later at the same address
    /// starts clean. Hooks cannot be added after.
    pub(crate) fn release(self: &Arc<Self>, py: Python<'_>) {
        if self.released.swap(true, Ordering::AcqRel) {
            return;
        }
        let (removed, finalizing) = {
            let _writer = self.writer.lock();
            let removed = self.hooks.load_full();
            self.publish(py, Vec::new());
            (removed, pep523_backend::forget_interpreter(py))
        };
        drop(removed);
        for release in std::mem::take(&mut *self.at_exit.lock()) {
            release(py);
        }
        {
            let _writer = REGISTRIES_WRITER.lock();
            let mut all = Vec::clone(&REGISTRIES.load());
            all.retain(|registry| !Arc::ptr_eq(registry, self));
            REGISTRIES.store(Arc::new(all));
        }
        if !finalizing {
            // Threads of the interpreter may still be running frames the eval
            // function dispatched with this registry's context.
            RETIRED.lock().push(Arc::clone(self));
        }
        log::debug(py, &format!("interpreter {} released", self.interpreter.id));
    }

    /// The registry whose context the eval function was installed with.
    ///
    /// # Safety
    /// `context` must be one the eval function passed (a registry's `head`).
    #[inline]
    pub unsafe fn from_context(context: &Context) -> &Registry {
        let head = std::mem::offset_of!(Registry, head);
        // SAFETY: `add` installs the eval function with its registry's `head`, and a
        // registry outlives the frames its eval function dispatches (it is kept
        // when released while they may run): the registry is `head`'s offset before it.
        unsafe { &*std::ptr::from_ref(context).byte_sub(head).cast::<Registry>() }
    }

    /// The hooks in call order (a snapshot). Load the generation first.
    #[inline]
    pub fn snapshot(&self) -> arc_swap::Guard<Arc<Vec<Arc<Hook>>>> {
        self.hooks.load()
    }

    /// Who observes frames now (a new reference to the set), if anyone.
    #[inline]
    pub fn observers(&self) -> Option<Arc<ObserverSet>> {
        self.observers.load_full()
    }

    #[inline]
    pub fn generation(&self) -> Generation {
        Generation(self.head.generation.load(Ordering::Acquire))
    }

    /// Called under the writer lock once the hooks or their enabled states changed.
    fn bump_generation(&self, py: Python<'_>, hooks: &[Arc<Hook>]) {
        let links = native_chain(hooks);
        let next = self.generation().next(hooks, links.is_some());
        pep523_backend::publish_native_chain(py, &self.head, next.0, links);
        self.head.generation.store(next.0, Ordering::Release);
    }

    // Writers hold the lock only around work that runs no Python code: Python
    // code could need the lock itself, or let another thread take the GIL and
    // wait for the lock. Log records (which reach Python logging) go out after.

    pub fn add(&self, py: Python<'_>, hook: Arc<Hook>) -> PyResult<()> {
        let installed = {
            let _writer = self.writer.lock();
            if self.released.load(Ordering::Acquire) {
                return Err(new_error::<PyRuntimeError>(
                    py,
                    "framehook: no hooks can be added while the interpreter is exiting",
                ));
            }
            let current = self.hooks.load_full();
            if current.is_empty() {
                // SAFETY: the registry is not moved out of its Arc, and outlives the
                // frames its eval function dispatches (see `from_context`).
                unsafe { pep523_backend::install(py, &self.head) }?;
            }
            let mut hooks = Vec::clone(&current);
            hooks.push(hook);
            self.publish(py, hooks);
            current.is_empty()
        };
        if installed {
            log::debug(
                py,
                &format!("eval function installed in interpreter {}", self.interpreter.id),
            );
        }
        Ok(())
    }

    /// Removes the hook with `id`; false if it is not registered.
    pub fn remove(&self, py: Python<'_>, id: u64) -> bool {
        let (removed, uninstalled) = {
            let _writer = self.writer.lock();
            let current = self.hooks.load_full();
            if !current.iter().any(|hook| hook.id == id) {
                return false;
            }
            let hooks: Vec<_> = current.iter().filter(|hook| hook.id != id).cloned().collect();
            let now_empty = hooks.is_empty();
            self.publish(py, hooks);
            // The removed hook is dropped after the lock: dropping it may run Python code.
            let removed = current.iter().find(|hook| hook.id == id).cloned();
            (removed, now_empty.then(|| pep523_backend::uninstall(py)))
        };
        drop(removed);
        if let Some(outcome) = uninstalled {
            self.log_uninstall(py, outcome);
        }
        true
    }

    pub fn clear(&self, py: Python<'_>) {
        let (removed, outcome) = {
            let _writer = self.writer.lock();
            let removed = self.hooks.load_full();
            if removed.is_empty() {
                return;
            }
            self.publish(py, Vec::new());
            (removed, pep523_backend::uninstall(py))
        };
        drop(removed);
        self.log_uninstall(py, outcome);
    }

    pub fn set_enabled(&self, py: Python<'_>, hook: &Hook, enabled: bool) {
        let _writer = self.writer.lock();
        if hook.enabled.swap(enabled, Ordering::AcqRel) != enabled {
            let hooks = self.hooks.load();
            self.refresh_observers(&hooks);
            self.bump_generation(py, &hooks);
        }
    }

    /// Discards every cached answer and remembered decision: a hook's answers may
    /// have changed (SOT's skip rules did, say).
    pub fn invalidate_decisions(&self, py: Python<'_>) {
        let _writer = self.writer.lock();
        self.bump_generation(py, &self.hooks.load());
    }

    fn publish(&self, py: Python<'_>, hooks: Vec<Arc<Hook>>) {
        self.refresh_observers(&hooks);
        let hooks = Arc::new(hooks);
        self.hooks.store(Arc::clone(&hooks));
        self.bump_generation(py, &hooks);
    }

    /// Called under the writer lock whenever hooks or their enabled states change.
    fn refresh_observers(&self, hooks: &[Arc<Hook>]) {
        let observing: Vec<_> = hooks
            .iter()
            .filter(|hook| hook.observer.is_some() && hook.enabled())
            .cloned()
            .collect();
        self.observers
            .store((!observing.is_empty()).then(|| Arc::new(ObserverSet { hooks: observing })));
    }

    fn log_uninstall(&self, py: Python<'_>, outcome: Uninstalled) {
        match outcome {
            Uninstalled::Restored => log::debug(
                py,
                &format!("eval function removed from interpreter {}", self.interpreter.id),
            ),
            Uninstalled::LeftInChain => log::warning(
                py,
                "another eval function was installed over framehook's; \
                 framehook's stays in its chain and passes frames through",
            ),
        }
    }
}

// A code's state is found through the registry, which owns the co_extra slot.
impl CodeState {
    /// The state stored on `code`, if any. It lives as long as the code.
    #[inline]
    pub fn existing<'c>(registry: &Registry, code: &Bound<'_, PyAny>) -> Option<&'c CodeState> {
        // SAFETY: callers keep the code alive while they use its state (the frame
        // being dispatched holds it).
        unsafe { registry.code_states.get(code) }
    }

    /// The state stored on `code`, created on first use. It lives as long as the code.
    pub fn of<'c>(registry: &Registry, code: &Bound<'_, PyAny>) -> PyResult<&'c CodeState> {
        // SAFETY: as in `existing`.
        unsafe { registry.code_states.get_or_default(code) }
    }
}

/// The types of one interpreter's Python surface.
pub struct PythonTypes {
    pub handle: NativeType<HookHandle>,
    pub frame: NativeType<Frame>,
    pub disabled: NativeType<Disabled>,
}

impl PythonTypes {
    pub fn new(py: Python<'_>) -> PyResult<Self> {
        Ok(Self {
            handle: handle_type(py)?,
            frame: frame::new_type(py)?,
            disabled: disabled_type(py)?,
        })
    }

    /// A new handle object for `hook` of `registry`.
    pub(crate) fn new_handle<'py>(
        &self,
        py: Python<'py>,
        hook: Arc<Hook>,
        registry: Arc<Registry>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.handle.instantiate(py, HookHandle::new(hook, registry))
    }
}

/// A registered hook. Compare with `is` or `==`; disable with `handle.enabled = False`.
pub struct HookHandle {
    pub(super) hook: Arc<Hook>,
    registry: Arc<Registry>,
}

impl HookHandle {
    pub(crate) fn new(hook: Arc<Hook>, registry: Arc<Registry>) -> Self {
        Self { hook, registry }
    }

    pub(crate) fn remove(&self, py: Python<'_>) -> PyResult<()> {
        if self.registry.remove(py, self.hook.id) {
            Ok(())
        } else {
            Err(new_error::<PyValueError>(
                py,
                format!("frame hook {:?} is not registered", self.hook.name),
            ))
        }
    }

    pub(crate) fn set_enabled_in(&self, py: Python<'_>, enabled: bool) {
        self.registry.set_enabled(py, &self.hook, enabled);
    }

    fn repr(&self) -> String {
        format!(
            "<framehook.HookHandle {:?}{}{} cache={} on_error={:?}{}>",
            self.hook.name,
            if self.hook.is_native() { " native" } else { "" },
            match (self.hook.transform.is_some(), self.hook.observer.is_some()) {
                (true, true) => " transforms+observes",
                (false, true) => " observes",
                _ => "",
            },
            if self.hook.cache { "True" } else { "False" },
            self.hook.on_error.as_str(),
            if self.hook.enabled() { "" } else { " disabled" }
        )
    }
}

impl NativeValue for HookHandle {}

// ------------------------------------------------------------------ HookHandle

native_getter!(handle_name, HookHandle, |py, handle| Ok(PyString::new(
    py,
    &handle.hook.name
)
.into_any()));
// The Python hook callable; None for observe-only and native hooks.
native_getter!(handle_hook, HookHandle, |py, handle| Ok(
    match &handle.hook.transform {
        Some(Transform::Python(callable)) => callable.bind(py),
        _ => py.None().into_bound(py),
    }
));
// The Python observer callable; None when the hook does not observe or is native.
native_getter!(handle_observer, HookHandle, |py, handle| Ok(
    match &handle.hook.observer {
        Some(Observer::Python(callable)) => callable.bind(py),
        _ => py.None().into_bound(py),
    }
));
native_getter!(handle_native, HookHandle, |py, handle| bool_object(
    py,
    handle.hook.is_native()
));
native_getter!(handle_observes, HookHandle, |py, handle| bool_object(
    py,
    handle.hook.observer.is_some()
));
native_getter!(handle_cache, HookHandle, |py, handle| bool_object(
    py,
    handle.hook.cache
));
native_getter!(handle_on_error, HookHandle, |py, handle| Ok(PyString::new(
    py,
    handle.hook.on_error.as_str()
)
.into_any()));
native_getter!(handle_enabled, HookHandle, |py, handle| bool_object(
    py,
    handle.hook.enabled()
));
// True while the hook is registered.
native_getter!(handle_registered, HookHandle, |py, handle| bool_object(
    py,
    handle
        .registry
        .snapshot()
        .iter()
        .any(|hook| hook.id == handle.hook.id)
));

unsafe extern "C" fn handle_set_enabled(
    object: *mut ffi::PyObject,
    value: *mut ffi::PyObject,
    _closure: *mut c_void,
) -> c_int {
    // SAFETY: CPython calls setters attached, with a live instance of the HookHandle type
    // and a borrowed value (NULL when deleting).
    unsafe {
        ffi_status(|py| {
            let handle = instance_value::<HookHandle>(object);
            let value = Bound::from_borrowed_ptr_or_opt(py, value)
                .ok_or_else(|| new_error::<PyAttributeError>(py, "cannot delete HookHandle.enabled"))?;
            let enabled = value.cast::<PyBool>().map_err(|_| {
                new_error::<PyTypeError>(
                    py,
                    format!("HookHandle.enabled must be a bool, not {}", type_name(&value)),
                )
            })?;
            handle.set_enabled_in(py, enabled.is_true());
            Ok(())
        })
    }
}

unsafe extern "C" fn handle_repr(object: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls tp_repr attached, with a live instance of the HookHandle type.
    unsafe {
        ffi_body(|py| {
            let handle = instance_value::<HookHandle>(object);
            Ok(PyString::new(py, &handle.repr()).into_any())
        })
    }
}

unsafe extern "C" fn handle_hash(object: *mut ffi::PyObject) -> ffi::Py_hash_t {
    // SAFETY: CPython calls tp_hash attached, with a live instance of the HookHandle type.
    let id = unsafe { instance_value::<HookHandle>(object) }.hook.id;
    // Ids start at 1 and stay far below Py_hash_t's maximum: never -1 (the error value).
    ffi::Py_hash_t::try_from(id).unwrap_or(ffi::Py_hash_t::MAX)
}

unsafe extern "C" fn handle_richcompare(
    object: *mut ffi::PyObject,
    other: *mut ffi::PyObject,
    op: c_int,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls tp_richcompare attached, with a live instance of the
    // HookHandle type and a live object; an object of the same type is a handle.
    unsafe {
        ffi_body(|py| {
            let same_type = ffi::Py_TYPE(object) == ffi::Py_TYPE(other);
            if !same_type || (op != ffi::Py_EQ && op != ffi::Py_NE) {
                return Ok(py.NotImplemented().into_bound(py));
            }
            let equal =
                instance_value::<HookHandle>(object).hook.id == instance_value::<HookHandle>(other).hook.id;
            bool_object(py, equal == (op == ffi::Py_EQ))
        })
    }
}

static HANDLE_GETSET: CTable<[ffi::PyGetSetDef; 10]> = CTable([
    getset(c"name", handle_name, None, c"The hook's name."),
    getset(
        c"hook",
        handle_hook,
        None,
        c"The Python hook callable; None for observe-only and native hooks.",
    ),
    getset(
        c"observer",
        handle_observer,
        None,
        c"The Python observer callable; None when the hook does not observe or is native.",
    ),
    getset(
        c"native",
        handle_native,
        None,
        c"Whether the hook was registered through the C API.",
    ),
    getset(
        c"observes",
        handle_observes,
        None,
        c"Whether the hook observes evaluation events.",
    ),
    getset(
        c"cache",
        handle_cache,
        None,
        c"Whether the hook's answers are cached per code.",
    ),
    getset(c"on_error", handle_on_error, None, c"'raise' or 'log'."),
    getset(
        c"enabled",
        handle_enabled,
        Some(handle_set_enabled),
        c"Whether the hook is asked (and told); set it to switch the hook off and on.",
    ),
    getset(
        c"registered",
        handle_registered,
        None,
        c"True while the hook is registered.",
    ),
    GETSET_END,
]);

fn handle_type(py: Python<'_>) -> PyResult<NativeType<HookHandle>> {
    NativeType::new(
        py,
        TypeSpec {
            name: c"framehook.HookHandle",
            doc: c"A registered hook. Compare with `is` or `==`; disable with `handle.enabled = False`.",
            slots: vec![
                slot(ffi::Py_tp_getset, HANDLE_GETSET.as_mut_ptr()),
                slot(ffi::Py_tp_repr, handle_repr as *mut c_void),
                slot(ffi::Py_tp_hash, handle_hash as *mut c_void),
                slot(ffi::Py_tp_richcompare, handle_richcompare as *mut c_void),
            ],
            attributes: false,
            vectorcall: None,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::OnError;

    #[test]
    fn on_error_round_trips_its_names() {
        for policy in [OnError::Raise, OnError::Log] {
            assert_eq!(OnError::parse(policy.as_str()), Some(policy));
        }
    }
}
