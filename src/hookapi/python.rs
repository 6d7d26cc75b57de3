//! The Python face of the API (the README's "The Python API"): `add_frame_hook`,
//! `remove_frame_hook`, `clear_frame_hooks`, `frame_hooks`, `HookHandle`,
//! `disabled`. Written against CPython's C API with framehook's own heap types
//! (see [`super::pyobject`]), so that it works in every interpreter.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use pyo3::exceptions::{PyAttributeError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};

use super::dispatch;
use super::frame::{self, Frame};
use super::pyobject::{
    bool_object, discard, ffi_body, ffi_status, getset, instance_value, method, native_getter, slot,
    type_name, CTable, NativeType, NativeValue, StrongRef, TypeSpec, GETSET_END,
};
use super::registry::{Hook, Observer, OnError, Registry, Transform};
use crate::pep523_backend::new_error;

/// A registered hook. Compare with `is` or `==`; disable with `handle.enabled = False`.
pub struct HookHandle {
    hook: Arc<Hook>,
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

/// `with framehook.disabled():` frames started on this thread inside are not hooked.
pub struct Disabled;

impl NativeValue for Disabled {}

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

// -------------------------------------------------------------------- disabled

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
            dispatch::enter_disabled();
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
            dispatch::exit_disabled();
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

fn disabled_type(py: Python<'_>) -> PyResult<NativeType<Disabled>> {
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

// ------------------------------------------------------------------- functions

fn repr_text(object: &Bound<'_, PyAny>) -> String {
    match object.repr() {
        Ok(text) => text.to_string(),
        Err(err) => {
            discard(object.py(), err);
            format!("a {} object", type_name(object))
        }
    }
}

/// The arguments of a function taking `positional` then keyword-only
/// `keywords`, all optional here (callers check what they require), in that
/// order; errors worded as CPython words them.
///
/// # Safety
/// `args` is a tuple and `kwargs` a dict or NULL, both borrowed and alive.
pub(crate) unsafe fn parse_arguments<'py>(
    py: Python<'py>,
    function: &str,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
    positional: &[&str],
    keywords: &[&str],
) -> PyResult<Vec<Option<Bound<'py, PyAny>>>> {
    // SAFETY: guaranteed by the caller.
    // CPython passes a tuple, a dict or NULL, and str keys (checked casts would make lazy errors).
    let args = unsafe { Bound::from_borrowed_ptr(py, args).cast_into_unchecked::<PyTuple>() };
    // SAFETY: as above.
    let kwargs = unsafe { Bound::from_borrowed_ptr_or_opt(py, kwargs) };
    if args.len() > positional.len() {
        return Err(new_error::<PyTypeError>(
            py,
            format!(
                "{function}() takes {} positional argument{} but {} were given",
                positional.len(),
                if positional.len() == 1 { "" } else { "s" },
                args.len()
            ),
        ));
    }
    let mut values: Vec<Option<Bound<'py, PyAny>>> = args.iter().map(Some).collect();
    values.resize(positional.len() + keywords.len(), None);
    if let Some(kwargs) = kwargs {
        // SAFETY: as above.
        for (key, value) in unsafe { kwargs.cast_into_unchecked::<PyDict>() }.iter() {
            // SAFETY: as above.
            let key = unsafe { key.cast_into_unchecked::<PyString>() };
            let key = key.to_str()?;
            let Some(index) = positional.iter().chain(keywords).position(|name| *name == key) else {
                return Err(new_error::<PyTypeError>(
                    py,
                    format!("{function}() got an unexpected keyword argument '{key}'"),
                ));
            };
            if values[index].is_some() {
                return Err(new_error::<PyTypeError>(
                    py,
                    format!("{function}() got multiple values for argument '{key}'"),
                ));
            }
            values[index] = Some(value);
        }
    }
    Ok(values)
}

fn required<'py>(
    py: Python<'py>,
    function: &str,
    name: &str,
    value: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    value.ok_or_else(|| {
        new_error::<PyTypeError>(py, format!("{function}() missing required argument '{name}'"))
    })
}

/// None (and absence) as None.
fn not_none(value: Option<Bound<'_, PyAny>>) -> Option<Bound<'_, PyAny>> {
    value.filter(|value| !value.is_none())
}

fn default_name(hook: &Bound<'_, PyAny>) -> PyResult<String> {
    for attribute in ["__qualname__", "__name__"] {
        match hook.getattr(attribute) {
            Ok(name) => {
                if let Ok(name) = name.cast::<PyString>() {
                    return Ok(name.to_str()?.to_owned());
                }
            }
            Err(err) => discard(hook.py(), err),
        }
    }
    Ok(hook.repr()?.to_str()?.to_owned())
}

fn check_callable(role: &str, object: &Bound<'_, PyAny>) -> PyResult<()> {
    if object.is_callable() {
        return Ok(());
    }
    Err(new_error::<PyTypeError>(
        object.py(),
        format!("a frame {role} must be callable, not {}", type_name(object)),
    ))
}

// ---------------------------------------------------------------- module state

/// What each `framehook._native` module object holds: its interpreter's
/// registry (None until the module's exec slot ran).
type ModuleState = Option<Arc<Registry>>;

/// The size of the module state (`PyModuleDef.m_size`); CPython zeroes it: None.
pub const MODULE_STATE_SIZE: usize = std::mem::size_of::<ModuleState>();

/// The registry of the module's interpreter.
///
/// # Safety
/// `module` is a live module object made from framehook's module definition.
unsafe fn module_registry(py: Python<'_>, module: *mut ffi::PyObject) -> PyResult<Arc<Registry>> {
    // SAFETY: guaranteed by the caller: its state is a ModuleState.
    let state = unsafe { &*ffi::PyModule_GetState(module).cast::<ModuleState>() };
    state.clone().ok_or_else(|| {
        new_error::<pyo3::exceptions::PyRuntimeError>(py, "framehook._native is not initialised")
    })
}

/// Sets up the hook API in a new module object (its exec slot): the
/// interpreter's registry, its types, the functions, the C API capsule, and
/// the release of the registry when the interpreter exits.
///
/// # Safety
/// `module` is a new module object made from framehook's module definition.
pub unsafe fn exec_module(py: Python<'_>, module: &Bound<'_, PyAny>) -> PyResult<()> {
    let registry = Registry::for_import(py)?;
    // SAFETY: guaranteed by the caller: its state is a zeroed ModuleState, written once here.
    unsafe { *ffi::PyModule_GetState(module.as_ptr()).cast::<ModuleState>() = Some(Arc::clone(&registry)) };
    module.setattr("HookHandle", registry.types.handle.type_object(py))?;
    module.setattr("Frame", registry.types.frame.type_object(py))?;
    module.setattr("disabled", registry.types.disabled.type_object(py))?;
    // SAFETY: attached; the table is static and ends with a zeroed entry.
    if unsafe { ffi::PyModule_AddFunctions(module.as_ptr(), FUNCTIONS.as_mut_ptr()) } < 0 {
        return Err(PyErr::fetch(py));
    }
    super::capi::add_capsule(module)?;
    let exported = [
        "Frame",
        "HookHandle",
        "_C_API",
        "add_frame_hook",
        "clear_frame_hooks",
        "disabled",
        "frame_hooks",
        "remove_frame_hook",
    ];
    module.setattr("__all__", PyList::new(py, exported)?)?;
    // The interpreter's exit functions run before it is torn down, in every
    // kind of interpreter; the callback keeps the module alive until then.
    // SAFETY: attached; a static definition bound to the module.
    let release = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyCFunction_NewEx(RELEASE.as_mut_ptr(), module.as_ptr(), std::ptr::null_mut()),
        )
    }?;
    py.import("atexit")?.call_method1("register", (release,))?;
    Ok(())
}

/// The module object's `m_free`: it gives up its reference to the registry.
///
/// # Safety
/// CPython calls it once, attached, when the module object is freed.
pub unsafe extern "C" fn free_module(module: *mut c_void) {
    // SAFETY: guaranteed by the caller; the state is a ModuleState (possibly None
    // if the exec slot failed early, or NULL state if none was allocated).
    unsafe {
        let state = ffi::PyModule_GetState(module.cast());
        if !state.is_null() {
            drop((*state.cast::<ModuleState>()).take());
        }
    }
}

/// Called by `atexit` when the interpreter exits.
unsafe extern "C" fn release_interpreter(
    module: *mut ffi::PyObject,
    _unused: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls it attached, with the module it was bound to.
    unsafe {
        ffi_body(|py| {
            module_registry(py, module)?.release(py);
            Ok(py.None().into_bound(py))
        })
    }
}

static RELEASE: CTable<ffi::PyMethodDef> = CTable(method(
    c"_release_interpreter",
    ffi::PyMethodDefPointer {
        PyCFunction: release_interpreter,
    },
    ffi::METH_NOARGS,
    c"Releases what framehook holds for this interpreter (atexit).",
));

/// `add_frame_hook(hook, *, name=None, cache=False, on_error="raise", observer=None)`:
/// registers `hook(frame) -> CodeType | None`, called after the hooks already
/// registered, and/or `observer(event, code, original_code)`.
unsafe extern "C" fn add_frame_hook(
    module: *mut ffi::PyObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    const FUNCTION: &str = "add_frame_hook";
    // SAFETY: CPython calls module functions attached, with their module and
    // METH_VARARGS | METH_KEYWORDS arguments.
    unsafe {
        ffi_body(|py| {
            let mut values = parse_arguments(
                py,
                FUNCTION,
                args,
                kwargs,
                &["hook"],
                &["name", "cache", "on_error", "observer"],
            )?
            .into_iter();
            let mut next = || values.next().flatten();
            let hook = not_none(Some(required(py, FUNCTION, "hook", next())?));
            let name = not_none(next());
            let cache = next();
            let on_error = next();
            let observer = not_none(next());
            if let Some(hook) = &hook {
                check_callable("hook", hook)?;
            }
            if let Some(observer) = &observer {
                check_callable("observer", observer)?;
            }
            let name = match (name, &hook, &observer) {
                (Some(name), _, _) => name
                    .cast_into::<PyString>()
                    .map_err(|err| {
                        new_error::<PyTypeError>(
                            py,
                            format!("name must be a str, not {}", type_name(err.into_inner().as_any())),
                        )
                    })?
                    .to_str()?
                    .to_owned(),
                (None, Some(hook), _) => default_name(hook)?,
                (None, None, Some(observer)) => default_name(observer)?,
                (None, None, None) => {
                    return Err(new_error::<PyTypeError>(
                        py,
                        "add_frame_hook needs a hook, an observer, or both",
                    ))
                }
            };
            let cache = match cache {
                None => false,
                Some(cache) => cache
                    .cast::<PyBool>()
                    .map_err(|_| {
                        new_error::<PyTypeError>(
                            py,
                            format!("cache must be a bool, not {}", type_name(&cache)),
                        )
                    })?
                    .is_true(),
            };
            let on_error = match on_error {
                None => OnError::Raise,
                Some(on_error) => {
                    let parsed = match on_error.cast::<PyString>() {
                        Ok(text) => OnError::parse(text.to_str()?),
                        Err(_) => None,
                    };
                    parsed.ok_or_else(|| {
                        new_error::<PyValueError>(
                            py,
                            format!("on_error must be 'raise' or 'log', not {}", repr_text(&on_error)),
                        )
                    })?
                }
            };
            let registry = module_registry(py, module)?;
            let hook = Arc::new(Hook::new(
                name,
                hook.map(|hook| Transform::Python(StrongRef::from_owned(hook))),
                observer.map(|observer| Observer::Python(StrongRef::from_owned(observer))),
                cache,
                on_error,
                None,
            ));
            registry.add(py, Arc::clone(&hook))?;
            registry.types.new_handle(py, hook, Arc::clone(&registry))
        })
    }
}

/// Whether `candidate` is the callable `hook` was registered with (as hook or observer).
fn registered_with(hook: &Hook, candidate: &Bound<'_, PyAny>) -> bool {
    let is_hook = matches!(&hook.transform, Some(Transform::Python(callable)) if callable.is(candidate));
    let is_observer = matches!(&hook.observer, Some(Observer::Python(callable)) if callable.is(candidate));
    is_hook || is_observer
}

/// `remove_frame_hook(hook)`: removes a hook, given its handle or the callable
/// it was registered with.
unsafe extern "C" fn remove_frame_hook(
    module: *mut ffi::PyObject,
    hook: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls module functions attached, with their module and (METH_O)
    // one borrowed argument.
    unsafe {
        ffi_body(|py| {
            let hook = Bound::from_borrowed_ptr(py, hook);
            let registry = module_registry(py, module)?;
            let id = match registry.types.handle.value(&hook) {
                Some(handle) => Some(handle.hook.id),
                None => registry
                    .snapshot()
                    .iter()
                    .find(|registered| registered_with(registered, &hook))
                    .map(|registered| registered.id),
            };
            if id.is_some_and(|id| registry.remove(py, id)) {
                Ok(py.None().into_bound(py))
            } else {
                Err(new_error::<PyValueError>(
                    py,
                    format!("{} is not a registered frame hook", hook.repr()?),
                ))
            }
        })
    }
}

/// `clear_frame_hooks()`: removes every hook of this interpreter.
unsafe extern "C" fn clear_frame_hooks(
    module: *mut ffi::PyObject,
    _unused: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls module functions attached, with their module.
    unsafe {
        ffi_body(|py| {
            module_registry(py, module)?.clear(py);
            Ok(py.None().into_bound(py))
        })
    }
}

/// `frame_hooks()`: the registered hooks, in call order.
unsafe extern "C" fn frame_hooks(
    module: *mut ffi::PyObject,
    _unused: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls module functions attached, with their module.
    unsafe {
        ffi_body(|py| {
            let registry = module_registry(py, module)?;
            let handles = PyList::empty(py);
            for hook in registry.snapshot().iter() {
                handles.append(
                    registry
                        .types
                        .new_handle(py, Arc::clone(hook), Arc::clone(&registry))?,
                )?;
            }
            Ok(handles.into_any())
        })
    }
}

/// The module functions of the hook API.
static FUNCTIONS: CTable<[ffi::PyMethodDef; 5]> = CTable([
    method(
        c"add_frame_hook",
        ffi::PyMethodDefPointer {
            PyCFunctionWithKeywords: add_frame_hook,
        },
        ffi::METH_VARARGS | ffi::METH_KEYWORDS,
        c"add_frame_hook(hook, *, name=None, cache=False, on_error='raise', observer=None)\n--\n\n\
Registers hook(frame) -> CodeType | None, called after the hooks already registered, \
and/or observer(event, code, original_code), told of each evaluation event.",
    ),
    method(
        c"remove_frame_hook",
        ffi::PyMethodDefPointer {
            PyCFunction: remove_frame_hook,
        },
        ffi::METH_O,
        c"remove_frame_hook(hook, /)\n--\n\nRemoves a hook, given its handle or the callable it was registered with.",
    ),
    method(
        c"clear_frame_hooks",
        ffi::PyMethodDefPointer {
            PyCFunction: clear_frame_hooks,
        },
        ffi::METH_NOARGS,
        c"clear_frame_hooks()\n--\n\nRemoves every hook of this interpreter.",
    ),
    method(
        c"frame_hooks",
        ffi::PyMethodDefPointer {
            PyCFunction: frame_hooks,
        },
        ffi::METH_NOARGS,
        c"frame_hooks()\n--\n\nThe registered hooks, in call order.",
    ),
    ffi::PyMethodDef::zeroed(),
]);
