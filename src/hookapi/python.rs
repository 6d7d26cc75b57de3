//! The Python face of the API (the README's "The Python API"): `add_frame_hook`,
//! `remove_frame_hook`, `clear_frame_hooks`, `frame_hooks`, and the module's
//! setup; the types it hands out, `HookHandle` and `disabled`, are in
//! [`super::registry`] and [`super::disabled`]. Written against CPython's C API
//! with framehook's own heap types (see [`super::pyobject`]), so that it works
//! in every interpreter.

use std::ffi::c_void;
use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyList, PyString};

use super::pyobject::{discard, ffi_body, method, parse_arguments, type_name, CTable, StrongRef};
use super::registry::{Hook, Observer, OnError, Registry, Transform};
use super::upcalls::UPCALLS;
use crate::pep523_backend::new_error;

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
    let registry = Registry::for_import(py, UPCALLS)?;
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
