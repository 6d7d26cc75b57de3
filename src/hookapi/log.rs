//! framehook's log records, through the `logging` module of the interpreter
//! they are about (logger "framehook"): each interpreter has its own. Records
//! are rare (installs, removals, hook errors), so the logger is looked up each
//! time and its level always applies. A failing handler never makes the
//! framehook call that logged fail: its exception goes to `sys.unraisablehook`.
//!
//! Records below WARNING go out only where `logging` is imported already:
//! otherwise no handler or level can have been set, and logging's defaults
//! drop them. Importing `logging` (and `threading` with it) for nothing costs
//! time, and on 3.12 a sub-interpreter that first imported `threading` on a
//! thread other than the one that ends it hangs when it ends.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::disabled;
use super::pyobject::discard;

const DEBUG: u8 = 10;
const WARNING: u8 = 30;
const ERROR: u8 = 40;

pub fn debug(py: Python<'_>, message: &str) {
    emit(py, DEBUG, message, None);
}

pub fn warning(py: Python<'_>, message: &str) {
    emit(py, WARNING, message, None);
}

/// Logs `message`, whose `%r`s are filled from `args`, with `err` as the
/// exception it is about; `err` is consumed.
pub fn error_with(py: Python<'_>, message: &str, args: Bound<'_, pyo3::types::PyTuple>, err: PyErr) {
    emit(py, ERROR, message, Some((args, err)));
}

fn emit(py: Python<'_>, level: u8, message: &str, details: Option<(Bound<'_, pyo3::types::PyTuple>, PyErr)>) {
    // Hooks do not see framehook's own logging; nor does an exception pending
    // in the caller (a hook's, being handled) get mixed up with logging's.
    disabled::enter_disabled();
    let pending = PyErr::take(py);
    let logged = (|| -> PyResult<()> {
        if level < WARNING && !py.import("sys")?.getattr("modules")?.contains("logging")? {
            return Ok(());
        }
        let logger = py.import("logging")?.call_method1("getLogger", ("framehook",))?;
        if !logger.call_method1("isEnabledFor", (level,))?.is_truthy()? {
            return Ok(());
        }
        match &details {
            None => logger.call_method1("log", (level, message))?,
            Some((args, err)) => {
                let kwargs = PyDict::new(py);
                kwargs.set_item("exc_info", err.value(py))?;
                let mut call_args = vec![
                    level.into_pyobject(py)?.into_any(),
                    message.into_pyobject(py)?.into_any(),
                ];
                call_args.extend(args.iter());
                logger.call_method("log", pyo3::types::PyTuple::new(py, call_args)?, Some(&kwargs))?
            }
        };
        Ok(())
    })();
    if let Some((_, err)) = details {
        discard(py, err);
    }
    if let Err(failed) = logged {
        failed.write_unraisable(py, None);
    }
    if let Some(pending) = pending {
        pending.restore(py);
    }
    disabled::exit_disabled();
}
