//! Python-object helpers shared by the VM, guards and generated code: builtins by
//! name, and what kind of object a value is.

use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The builtins as they were when framehook was imported: what the generated code calls
/// (`int()`, `iter()`, `globals()`...) must be CPython's own even while a test patches
/// `builtins.int` with a mock (calling the mock ran the translated mock again, without end).
pub static BUILTINS: OnceLock<Py<PyDict>> = OnceLock::new();

/// The builtin `name` as framehook found it at import.
pub fn builtin<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let builtins = BUILTINS
        .get()
        .ok_or_else(|| PyRuntimeError::new_err("framehook: SOT's builtins are not read yet"))?;
    builtins
        .bind(py)
        .get_item(name)?
        .ok_or_else(|| PyRuntimeError::new_err(format!("framehook: no builtin named {name}")))
}

/// Instances of a class made by a `class` statement (its methods may be Python code).
pub fn is_heap_instance(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    const HEAP_TYPE: u64 = 1 << 9; // Py_TPFLAGS_HEAPTYPE
    Ok(obj.get_type().getattr("__flags__")?.extract::<u64>()? & HEAP_TYPE != 0)
}

pub fn qualname(obj: &Bound<'_, PyAny>) -> String {
    obj.getattr("__qualname__")
        .or_else(|_| obj.getattr("__name__"))
        .map_or_else(
            |_| obj.get_type().name().map_or("?".into(), |n| n.to_string()),
            |n| n.to_string(),
        )
}
