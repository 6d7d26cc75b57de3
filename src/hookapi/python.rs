//! The Python face of the API (the README's "The Python API"): `add_frame_hook`, `remove_frame_hook`,
//! `clear_frame_hooks`, `frame_hooks`, `HookHandle`, `disabled`.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::dispatch;
use super::registry::{Hook, Observer, OnError, Registry, Transform};

/// A registered hook. Compare with `is`; disable with `handle.enabled = False`.
#[pyclass(frozen, module = "framehook", name = "HookHandle")]
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
            Err(PyValueError::new_err(format!(
                "frame hook {:?} is not registered",
                self.hook.name
            )))
        }
    }

    pub(crate) fn set_enabled_in(&self, py: Python<'_>, enabled: bool) {
        self.registry.set_enabled(py, &self.hook, enabled);
    }
}

#[pymethods]
impl HookHandle {
    #[getter]
    fn name(&self) -> &str {
        &self.hook.name
    }

    /// The Python hook callable; None for observe-only and native hooks.
    #[getter]
    fn hook(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        match &self.hook.transform {
            Some(Transform::Python(callable)) => Some(callable.clone_ref(py)),
            _ => None,
        }
    }

    /// The Python observer callable; None when the hook does not observe or is native.
    #[getter]
    fn observer(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        match &self.hook.observer {
            Some(Observer::Python(callable)) => Some(callable.clone_ref(py)),
            _ => None,
        }
    }

    /// Whether the hook was registered through the C API.
    #[getter]
    fn native(&self) -> bool {
        self.hook.is_native()
    }

    /// Whether the hook observes evaluation events.
    #[getter]
    fn observes(&self) -> bool {
        self.hook.observer.is_some()
    }

    #[getter]
    fn cache(&self) -> bool {
        self.hook.cache
    }

    #[getter]
    fn on_error(&self) -> &'static str {
        self.hook.on_error.as_str()
    }

    #[getter]
    fn enabled(&self) -> bool {
        self.hook.enabled()
    }

    #[setter]
    fn set_enabled(&self, py: Python<'_>, enabled: bool) {
        self.set_enabled_in(py, enabled);
    }

    /// True while the hook is registered.
    #[getter]
    fn registered(&self) -> bool {
        self.registry
            .snapshot()
            .iter()
            .any(|hook| hook.id == self.hook.id)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<HookHandle>()
            .is_ok_and(|other| other.get().hook.id == self.hook.id)
    }

    fn __hash__(&self) -> u64 {
        self.hook.id
    }

    fn __repr__(&self) -> String {
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

fn default_name(hook: &Bound<'_, PyAny>) -> PyResult<String> {
    for attribute in ["__qualname__", "__name__"] {
        if let Ok(name) = hook.getattr(attribute) {
            if let Ok(name) = name.extract::<String>() {
                return Ok(name);
            }
        }
    }
    Ok(hook.repr()?.to_string())
}

fn check_callable(role: &str, object: &Bound<'_, PyAny>) -> PyResult<()> {
    if object.is_callable() {
        return Ok(());
    }
    Err(PyTypeError::new_err(format!(
        "a frame {role} must be callable, not {}",
        object.get_type().name()?
    )))
}

/// Registers `hook(frame) -> CodeType | None`, called after the hooks already
/// registered, and/or `observer(event, code)`, told of each evaluation event.
#[pyfunction]
#[pyo3(signature = (hook, *, name = None, cache = false, on_error = "raise", observer = None))]
pub fn add_frame_hook(
    py: Python<'_>,
    hook: Option<Bound<'_, PyAny>>,
    name: Option<String>,
    cache: bool,
    on_error: &str,
    observer: Option<Bound<'_, PyAny>>,
) -> PyResult<HookHandle> {
    if let Some(hook) = &hook {
        check_callable("hook", hook)?;
    }
    if let Some(observer) = &observer {
        check_callable("observer", observer)?;
    }
    let on_error = OnError::parse(on_error)?;
    let name = match (name, &hook, &observer) {
        (Some(name), _, _) => name,
        (None, Some(hook), _) => default_name(hook)?,
        (None, None, Some(observer)) => default_name(observer)?,
        (None, None, None) => {
            return Err(PyTypeError::new_err(
                "add_frame_hook needs a hook, an observer, or both",
            ))
        }
    };
    let registry = Registry::current_or_create(py)?;
    let hook = Arc::new(Hook::new(
        name,
        hook.map(|hook| Transform::Python(hook.unbind())),
        observer.map(|observer| Observer::Python(observer.unbind())),
        cache,
        on_error,
        None,
    ));
    registry.add(py, Arc::clone(&hook))?;
    Ok(HookHandle { hook, registry })
}

/// Whether `candidate` is the callable `hook` was registered with (as hook or observer).
fn registered_with(py: Python<'_>, hook: &Hook, candidate: &Bound<'_, PyAny>) -> bool {
    let is_hook =
        matches!(&hook.transform, Some(Transform::Python(callable)) if callable.bind(py).is(candidate));
    let is_observer =
        matches!(&hook.observer, Some(Observer::Python(callable)) if callable.bind(py).is(candidate));
    is_hook || is_observer
}

/// Removes a hook, given its handle or the callable it was registered with.
#[pyfunction]
pub fn remove_frame_hook(py: Python<'_>, hook: Bound<'_, PyAny>) -> PyResult<()> {
    let registry = Registry::current(py);
    let id = if let Ok(handle) = hook.cast::<HookHandle>() {
        Some(handle.get().hook.id)
    } else {
        registry.as_ref().and_then(|registry| {
            registry
                .snapshot()
                .iter()
                .find(|registered| registered_with(py, registered, &hook))
                .map(|registered| registered.id)
        })
    };
    let removed = match (registry, id) {
        (Some(registry), Some(id)) => registry.remove(py, id),
        _ => false,
    };
    if removed {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!(
            "{} is not a registered frame hook",
            hook.repr()?
        )))
    }
}

/// Removes every hook of this interpreter.
#[pyfunction]
pub fn clear_frame_hooks(py: Python<'_>) {
    if let Some(registry) = Registry::current(py) {
        registry.clear(py);
    }
}

/// The registered hooks, in call order.
#[pyfunction]
pub fn frame_hooks(py: Python<'_>) -> Vec<HookHandle> {
    let Some(registry) = Registry::current(py) else {
        return Vec::new();
    };
    let hooks = registry.snapshot();
    hooks
        .iter()
        .map(|hook| HookHandle {
            hook: Arc::clone(hook),
            registry: Arc::clone(&registry),
        })
        .collect()
}

/// `with framehook.disabled():` frames started on this thread inside are not hooked.
#[pyclass(module = "framehook", name = "disabled")]
pub struct Disabled;

#[pymethods]
impl Disabled {
    #[new]
    fn new() -> Self {
        Disabled
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        dispatch::enter_disabled();
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        dispatch::exit_disabled();
        false
    }
}
