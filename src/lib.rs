//! framehook: the high-level CPython frame-hook API (`add_frame_hook` /
//! `remove_frame_hook`) implemented on PEP 523 for CPython 3.9 to 3.14.
//!
//! - [`pep523_backend`]: every CPython-internal detail, and only there.
//! - [`hookapi`]: the stable API (registry, chain, caching, frames, bindings).
//! - [`sot`]: the SOT runtime, the primary hook, built on [`hookapi`].

pub mod hookapi;
pub mod pep523_backend;
pub mod sot;

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The interpreter this module was compiled for, as a dict.
#[pyfunction]
fn build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let target = pep523_backend::build_target();
    let info = PyDict::new(py);
    info.set_item("version_hex", target.version_hex)?;
    info.set_item(
        "version",
        (target.version_hex >> 24, (target.version_hex >> 16) & 0xff, (target.version_hex >> 8) & 0xff),
    )?;
    info.set_item("gil_disabled", target.gil_disabled)?;
    info.set_item("debug", target.debug)?;
    info.set_item("crate_version", env!("CARGO_PKG_VERSION"))?;
    Ok(info)
}

/// Test and diagnostic helpers, not part of the stable API.
mod testing {
    use pyo3::prelude::*;

    use crate::pep523_backend::{self, foreign_for_tests};

    /// (current eval function address, framehook's eval function address).
    #[pyfunction]
    pub fn _eval_functions(py: Python<'_>) -> (usize, usize) {
        pep523_backend::eval_function_addresses(py)
    }

    #[pyfunction]
    pub fn _is_installed(py: Python<'_>) -> bool {
        pep523_backend::is_installed(py)
    }

    /// Installs a pass-through eval function standing for another PEP 523 tool.
    #[pyfunction]
    pub fn _foreign_install(py: Python<'_>) -> bool {
        foreign_for_tests::install(py)
    }

    #[pyfunction]
    pub fn _foreign_uninstall(py: Python<'_>) -> bool {
        foreign_for_tests::uninstall(py)
    }

    #[pyfunction]
    pub fn _foreign_calls() -> u64 {
        foreign_for_tests::calls()
    }

    #[pyfunction]
    pub fn _foreign_address() -> usize {
        foreign_for_tests::address()
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    pep523_backend::check_running_interpreter(py)?;
    // Rust `tracing` events become `log` records, which reach Python logging.
    // Only loggers are cached: levels set after import must still apply, and
    // events are rare (install, uninstall, hook errors), so the lookup is cheap.
    if let Ok(logger) = pyo3_log::Logger::new(py, pyo3_log::Caching::Loggers) {
        // Fails only if another extension in this process installed a `log` logger first.
        let _ = logger.install();
    }
    hookapi::capi::add_capsule(m)?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    m.add_function(wrap_pyfunction!(hookapi::python::add_frame_hook, m)?)?;
    m.add_function(wrap_pyfunction!(hookapi::python::remove_frame_hook, m)?)?;
    m.add_function(wrap_pyfunction!(hookapi::python::clear_frame_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(hookapi::python::frame_hooks, m)?)?;
    m.add_class::<hookapi::python::HookHandle>()?;
    m.add_class::<hookapi::python::Disabled>()?;
    m.add_class::<hookapi::frame::Frame>()?;
    m.add_function(wrap_pyfunction!(testing::_eval_functions, m)?)?;
    m.add_function(wrap_pyfunction!(testing::_is_installed, m)?)?;
    m.add_function(wrap_pyfunction!(testing::_foreign_install, m)?)?;
    m.add_function(wrap_pyfunction!(testing::_foreign_uninstall, m)?)?;
    m.add_function(wrap_pyfunction!(testing::_foreign_calls, m)?)?;
    m.add_function(wrap_pyfunction!(testing::_foreign_address, m)?)?;
    Ok(())
}
