//! The Python face of the API (DESIGN §3): `add_frame_hook`, `remove_frame_hook`,
//! `clear_frame_hooks`, `frame_hooks`, `HookHandle`, `disabled`.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::dispatch;
use super::registry::{Hook, OnError, Registry};

/// A registered hook. Compare with `is`; disable with `handle.enabled = False`.
#[pyclass(frozen, module = "framehook", name = "HookHandle")]
pub struct HookHandle {
    hook: Arc<Hook>,
    registry: Arc<Registry>,
}

#[pymethods]
impl HookHandle {
    #[getter]
    fn name(&self) -> &str {
        &self.hook.name
    }

    #[getter]
    fn hook(&self, py: Python<'_>) -> Py<PyAny> {
        self.hook.callable.clone_ref(py)
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
    fn set_enabled(&self, enabled: bool) {
        self.registry.set_enabled(&self.hook, enabled);
    }

    /// True while the hook is registered.
    #[getter]
    fn registered(&self) -> bool {
        self.registry.snapshot().iter().any(|hook| hook.id == self.hook.id)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<HookHandle>().is_ok_and(|other| other.get().hook.id == self.hook.id)
    }

    fn __hash__(&self) -> u64 {
        self.hook.id
    }

    fn __repr__(&self) -> String {
        format!(
            "<framehook.HookHandle {:?} cache={} on_error={:?}{}>",
            self.hook.name,
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

/// Registers `hook(frame) -> CodeType | None`, called after the hooks already registered.
#[pyfunction]
#[pyo3(signature = (hook, *, name = None, cache = false, on_error = "raise"))]
pub fn add_frame_hook(
    py: Python<'_>,
    hook: Bound<'_, PyAny>,
    name: Option<String>,
    cache: bool,
    on_error: &str,
) -> PyResult<HookHandle> {
    if !hook.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "a frame hook must be callable, not {}",
            hook.get_type().name()?
        )));
    }
    let on_error = OnError::parse(on_error)?;
    let name = match name {
        Some(name) => name,
        None => default_name(&hook)?,
    };
    let registry = Registry::current_or_create(py)?;
    let hook = Arc::new(Hook::new(name, hook.unbind(), cache, on_error));
    registry.add(py, Arc::clone(&hook))?;
    Ok(HookHandle { hook, registry })
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
                .find(|registered| registered.callable.bind(py).is(&hook))
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
        .map(|hook| HookHandle { hook: Arc::clone(hook), registry: Arc::clone(&registry) })
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
