//! What stops the VM before it knows where it stopped: a break, a fallback, a frame that
//! must run as it is, or a Python exception.

use pyo3::prelude::*;

/// An error before it knows where it happened.
pub enum Problem {
    Break(String),
    Fallback(String),
    /// The translated frame must run as it is (it reads its own frame: `locals()`).
    Eager(String),
    Python(PyErr),
}

impl From<PyErr> for Problem {
    fn from(err: PyErr) -> Self {
        Problem::Python(err)
    }
}

impl From<std::convert::Infallible> for Problem {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl From<pyo3::CastIntoError<'_>> for Problem {
    fn from(err: pyo3::CastIntoError<'_>) -> Self {
        Problem::Python(err.into())
    }
}

pub type Res<T> = Result<T, Problem>;

pub fn unsupported<T>(what: impl Into<String>) -> Res<T> {
    Err(Problem::Fallback(what.into()))
}

pub fn graph_break<T>(reason: impl Into<String>) -> Res<T> {
    Err(Problem::Break(reason.into()))
}
