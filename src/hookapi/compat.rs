//! Checking that a replacement code object can run with the original's frame
//! (see the README's API rules), and mapping its argument slots by name.

use std::ffi::c_int;
use std::sync::Arc;

use crate::pep523_backend::new_error;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyCode, PyTuple};

const CO_OPTIMIZED: i64 = 0x1;
const CO_NEWLOCALS: i64 = 0x2;
const CO_VARARGS: i64 = 0x4;
const CO_VARKEYWORDS: i64 = 0x8;
const CO_GENERATOR: i64 = 0x20;
const CO_COROUTINE: i64 = 0x80;
const CO_ITERABLE_COROUTINE: i64 = 0x100;
const CO_ASYNC_GENERATOR: i64 = 0x200;

struct Signature<'py> {
    argcount: usize,
    posonlyargcount: usize,
    kwonlyargcount: usize,
    flags: i64,
    freevars: Bound<'py, PyTuple>,
    varnames: Bound<'py, PyTuple>,
}

impl<'py> Signature<'py> {
    fn of(code: &Bound<'py, PyAny>) -> PyResult<Self> {
        let py = code.py();
        Ok(Self {
            argcount: code.getattr(pyo3::intern!(py, "co_argcount"))?.extract()?,
            posonlyargcount: code.getattr(pyo3::intern!(py, "co_posonlyargcount"))?.extract()?,
            kwonlyargcount: code.getattr(pyo3::intern!(py, "co_kwonlyargcount"))?.extract()?,
            flags: code.getattr(pyo3::intern!(py, "co_flags"))?.extract()?,
            freevars: code.getattr(pyo3::intern!(py, "co_freevars"))?.cast_into()?,
            varnames: code.getattr(pyo3::intern!(py, "co_varnames"))?.cast_into()?,
        })
    }

    fn argument_slots(&self) -> usize {
        self.argcount
            + self.kwonlyargcount
            + usize::from(self.flags & CO_VARARGS != 0)
            + usize::from(self.flags & CO_VARKEYWORDS != 0)
    }

    fn kind(&self) -> &'static str {
        match self.flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE) {
            0 if self.flags & CO_OPTIMIZED == 0 => "a module or class body",
            0 => "a plain function",
            CO_GENERATOR => "a generator function",
            CO_COROUTINE => "a coroutine function",
            CO_ASYNC_GENERATOR => "an async generator function",
            _ => "an iterable-coroutine generator",
        }
    }
}

/// Checks `replacement` against `original`; on success returns the argument
/// map (None when the slots correspond one to one). The error is the
/// `TypeError` users see: it names the hook and the mismatch.
pub(crate) fn check(
    hook_name: &str,
    original: &Bound<'_, PyAny>,
    replacement: &Bound<'_, PyAny>,
) -> PyResult<Option<Arc<[c_int]>>> {
    let py = original.py();
    let fail = |what: String| -> PyErr {
        let name = match original.getattr("co_qualname") {
            Ok(name) => Ok(name),
            Err(absent) => {
                // 3.9 and 3.10 have no co_qualname.
                super::pyobject::discard(py, absent);
                original.getattr("co_name")
            }
        };
        match name {
            Ok(name) => new_error::<PyTypeError>(
                py,
                format!("frame hook {hook_name:?} returned a code object incompatible with {name}: {what}"),
            ),
            Err(err) => err,
        }
    };
    if !replacement.is_instance_of::<PyCode>() {
        return Err(fail(format!(
            "expected a code object or None, got {}",
            replacement.get_type().name()?
        )));
    }
    let old = Signature::of(original)?;
    let new = Signature::of(replacement)?;
    for (field, old_value, new_value) in [
        ("co_argcount", old.argcount, new.argcount),
        ("co_posonlyargcount", old.posonlyargcount, new.posonlyargcount),
        ("co_kwonlyargcount", old.kwonlyargcount, new.kwonlyargcount),
    ] {
        if old_value != new_value {
            return Err(fail(format!(
                "{field} is {new_value}, the original's is {old_value}"
            )));
        }
    }
    for (flag, label) in [(CO_VARARGS, "*args"), (CO_VARKEYWORDS, "**kwargs")] {
        if old.flags & flag != new.flags & flag {
            let has = |flags: i64| if flags & flag != 0 { "has" } else { "has no" };
            return Err(fail(format!(
                "it {} {label}, the original {}",
                has(new.flags),
                has(old.flags)
            )));
        }
    }
    if old.kind() != new.kind() || (old.flags & CO_NEWLOCALS) != (new.flags & CO_NEWLOCALS) {
        return Err(fail(format!(
            "it is {}, the original is {}",
            new.kind(),
            old.kind()
        )));
    }
    if !old.freevars.eq(&new.freevars)? {
        return Err(fail(format!(
            "co_freevars is {}, the original's is {} (same names in the same order required)",
            new.freevars.repr()?,
            old.freevars.repr()?
        )));
    }
    argument_map(&old, &new)
}

/// Maps each argument slot of the replacement to the original's slot with the
/// same name, within the same kind of argument; unmatched slots keep their order.
fn argument_map(old: &Signature<'_>, new: &Signature<'_>) -> PyResult<Option<Arc<[c_int]>>> {
    let slots = old.argument_slots();
    let names = |signature: &Signature<'_>| -> PyResult<Vec<String>> {
        (0..slots)
            .map(|i| signature.varnames.get_item(i)?.extract())
            .collect()
    };
    let (old_names, new_names) = (names(old)?, names(new)?);
    if old_names == new_names {
        return Ok(None);
    }
    let mut groups = vec![0..old.argcount, old.argcount..old.argcount + old.kwonlyargcount];
    groups.extend((old.argcount + old.kwonlyargcount..slots).map(|i| i..i + 1));
    let mut map = vec![0 as c_int; slots];
    for group in groups {
        let mut unmatched: Vec<usize> = group
            .clone()
            .filter(|&i| !new_names[group.clone()].contains(&old_names[i]))
            .collect();
        unmatched.reverse();
        for i in group.clone() {
            let source = group
                .clone()
                .find(|&j| old_names[j] == new_names[i])
                .or_else(|| unmatched.pop())
                .expect("a group has as many slots in both codes");
            map[i] = source as c_int;
        }
    }
    Ok(Some(map.into()))
}
