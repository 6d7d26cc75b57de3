//! The Python face of SOT: Paddle's five eval-frame functions, as builtins
//! (generated code calls `set_eval_frame` while the hook is on, and a Python
//! function there would be translated itself), plus framehook's options.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyCode, PyTuple};

use super::runtime::SotRuntime;

fn codes_of<'py>(what: &str, codes: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let tuple = codes
        .cast::<PyTuple>()
        .map_err(|_| PyTypeError::new_err(format!("{what} takes a tuple of code objects")))?;
    tuple
        .iter()
        .map(|code| {
            if code.is_instance_of::<PyCode>() {
                Ok(code)
            } else {
                Err(PyTypeError::new_err(format!(
                    "{what} takes a tuple of code objects, not one containing {}",
                    code.get_type().name()?
                )))
            }
        })
        .collect()
}

/// Sets this thread's SOT callback and returns the previous one (or None).
/// None turns SOT off for the thread; anything else that is not callable is
/// ignored and None returned, as Paddle's own function does.
#[pyfunction]
pub fn set_eval_frame(py: Python<'_>, callback: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let callback = if callback.is_none() {
        None
    } else if callback.is_callable() {
        Some(callback.unbind())
    } else {
        return Ok(py.None());
    };
    let old = SotRuntime::current(py)?.set_callback(py, callback)?;
    Ok(old.unwrap_or_else(|| py.None()))
}

/// Frames of code whose file name starts with one of these prefixes are not
/// handed to the callback.
#[pyfunction]
pub fn eval_frame_skip_file_prefix(py: Python<'_>, prefixes: Bound<'_, PyAny>) -> PyResult<()> {
    let prefixes: Vec<String> = prefixes
        .cast::<PyTuple>()
        .map_err(|_| PyTypeError::new_err("eval_frame_skip_file_prefix takes a tuple of str"))?
        .iter()
        .map(|prefix| {
            prefix
                .extract()
                .map_err(|_| PyTypeError::new_err("eval_frame_skip_file_prefix takes a tuple of str"))
        })
        .collect::<PyResult<_>>()?;
    SotRuntime::current(py)?.add_skip_prefixes(py, &prefixes);
    Ok(())
}

/// These codes are handed to the callback even when their file is skipped.
#[pyfunction]
pub fn eval_frame_no_skip_codes(py: Python<'_>, codes: Bound<'_, PyAny>) -> PyResult<()> {
    SotRuntime::current(py)?.add_never_skipped(py, &codes_of("eval_frame_no_skip_codes", &codes)?)
}

/// Marks codes as having a graph: they keep being translated.
#[pyfunction]
pub fn sot_setup_codes_with_graph(py: Python<'_>, codes: Bound<'_, PyAny>) -> PyResult<()> {
    SotRuntime::current(py)?.setup_with_graph(&codes_of("sot_setup_codes_with_graph", &codes)?)
}

/// Marks one code SOT has already met as having a graph.
#[pyfunction]
pub fn sot_set_with_graph(py: Python<'_>, code: Bound<'_, PyAny>) -> PyResult<()> {
    if !code.is_instance_of::<PyCode>() {
        return Err(PyTypeError::new_err(format!(
            "sot_set_with_graph takes a code object, not {}",
            code.get_type().name()?
        )));
    }
    SotRuntime::current(py)?.set_with_graph(&code);
    Ok(())
}

/// Whether functions with an exception table (3.11+) bypass the callback;
/// returns the previous setting. On by default: Paddle's code generator drops
/// exception tables.
#[pyfunction]
pub fn sot_pass_exception_tables(py: Python<'_>, enabled: bool) -> PyResult<bool> {
    Ok(SotRuntime::current(py)?.set_pass_exception_tables(py, enabled))
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(set_eval_frame, module)?)?;
    module.add_function(wrap_pyfunction!(eval_frame_skip_file_prefix, module)?)?;
    module.add_function(wrap_pyfunction!(eval_frame_no_skip_codes, module)?)?;
    module.add_function(wrap_pyfunction!(sot_setup_codes_with_graph, module)?)?;
    module.add_function(wrap_pyfunction!(sot_set_with_graph, module)?)?;
    module.add_function(wrap_pyfunction!(sot_pass_exception_tables, module)?)?;
    Ok(())
}
