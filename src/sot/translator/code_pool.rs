//! Generated codes, reused where CPython never frees them.
//!
//! Free-threaded 3.13 makes every code object immortal once a thread has run
//! (gh-117696): each translation's generated code would stay for good, and a function
//! translated again and again (a closure made per call, a function translated anew after
//! `sot.reset()` or past its cache size) would grow memory without bound. So when an
//! entry whose generated code is immortal goes, the code is kept here with its graph's
//! holder, emptied; a translation that makes the same code from the same original takes
//! it, and refills the holder, instead of making another. Where codes are mortal they
//! die with their entries and nothing is kept.

use std::collections::HashMap;
use std::sync::LazyLock;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyComplex, PyDict, PyFloat, PyInt, PyList, PySlice, PyString, PyTuple};

use crate::hookapi::pyobject::{discard, is_immortal, replace_code, StrongRef};

/// A generated code and its graph's holder (`[compiled graph]`, one of its constants),
/// which dropping it empties: a code CPython keeps must not keep its graph.
pub struct Generated {
    code: StrongRef,
    holder: Option<StrongRef>,
    /// The address of the code it was made from, where that code is immortal (so that
    /// the address names it for good): the key it is kept under once it is unused.
    original: Option<usize>,
}

/// An immortal generated code no entry uses, and its emptied holder.
struct Unused {
    code: StrongRef,
    holder: Option<StrongRef>,
}

/// Unused generated codes by the address of their (immortal) original.
static UNUSED: LazyLock<Mutex<HashMap<usize, Vec<Unused>>>> = LazyLock::new(Mutex::default);

impl Generated {
    /// `original.replace(**changes)`, or an unused code equal to it whose holder takes
    /// `holder`'s graph.
    pub fn make<'py>(
        original: &Bound<'py, PyAny>,
        changes: &Bound<'py, PyDict>,
        holder: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Generated> {
        let key = is_immortal(original).then_some(original.as_ptr() as usize);
        if let Some(key) = key {
            if let Some(reused) = take_unused(key, changes, holder)? {
                return Ok(reused);
            }
        }
        let code = replace_code(original, changes)?;
        Ok(Generated {
            code: StrongRef::from_owned(code),
            holder: holder.map(StrongRef::new),
            original: key,
        })
    }

    pub fn code<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.code.bind(py)
    }

    /// Whether it calls a compiled graph (whose holder a running frame indexes).
    pub fn has_graph(&self) -> bool {
        self.holder.is_some()
    }
}

impl Drop for Generated {
    fn drop(&mut self) {
        // SAFETY: generated codes are dropped attached (with their entries: under the
        // cache's writers, or with their code).
        let py = unsafe { Python::assume_attached() };
        if let Some(holder) = &self.holder {
            if let Err(err) = holder.bind(py).call_method0("clear") {
                discard(py, err);
            }
        }
        if let Some(key) = self.original.filter(|_| is_immortal(&self.code.bind(py))) {
            let unused = Unused {
                code: self.code.clone_ref(py),
                holder: self.holder.as_ref().map(|holder| holder.clone_ref(py)),
            };
            UNUSED.lock().entry(key).or_default().push(unused);
        }
    }
}

/// An unused code of `key`'s that `changes` would make again, its holder refilled from
/// `holder`. The codes are compared outside the lock: comparing calls into Python, which
/// may wait for another thread (a collection) that waits for the lock.
fn take_unused(
    key: usize,
    changes: &Bound<'_, PyDict>,
    holder: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Generated>> {
    let py = changes.py();
    let Some(mut candidates) = UNUSED.lock().remove(&key) else {
        return Ok(None);
    };
    let mut found = None;
    for (index, candidate) in candidates.iter().enumerate() {
        if makes_again(candidate, changes, holder)? {
            found = Some(index);
            break;
        }
    }
    let taken = found.map(|index| candidates.swap_remove(index));
    if !candidates.is_empty() {
        UNUSED.lock().entry(key).or_default().extend(candidates);
    }
    let Some(Unused { code, holder: kept }) = taken else {
        return Ok(None);
    };
    if let (Some(kept), Some(holder)) = (&kept, holder) {
        kept.bind(py)
            .cast::<PyList>()?
            .call_method1("extend", (holder,))?;
    }
    Ok(Some(Generated {
        code,
        holder: kept,
        original: Some(key),
    }))
}

/// Whether `candidate` is the code `changes` make from its original, its holder standing
/// for `holder`.
fn makes_again(
    candidate: &Unused,
    changes: &Bound<'_, PyDict>,
    holder: Option<&Bound<'_, PyAny>>,
) -> PyResult<bool> {
    let py = changes.py();
    let code = candidate.code.bind(py);
    let kept = candidate.holder.as_ref().map(|kept| kept.bind(py));
    if kept.is_some() != holder.is_some() {
        return Ok(false);
    }
    let holders = kept.as_ref().zip(holder);
    for (field, value) in changes.iter() {
        let field = field.cast_into::<PyString>()?;
        let existing = code.getattr(&field)?;
        let same = if field.to_str()? == "co_consts" {
            same_constants(existing.cast()?, value.cast()?, holders)?
        } else {
            // Bytes, numbers and tuples of names: no user code runs.
            existing.eq(&value)?
        };
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether two tuples hold the same constants, `holders` (the kept holder, the new one)
/// standing for each other.
fn same_constants(
    old: &Bound<'_, PyTuple>,
    new: &Bound<'_, PyTuple>,
    holders: Option<(&Bound<'_, PyAny>, &Bound<'_, PyAny>)>,
) -> PyResult<bool> {
    if old.len() != new.len() {
        return Ok(false);
    }
    for (old, new) in old.iter().zip(new.iter()) {
        let both_holders = holders.is_some_and(|(kept, holder)| old.is(kept) && new.is(holder));
        if !both_holders && !same_constant(&old, &new)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether two constants are the same for a code: one object, or equal values of one
/// built-in type (floats by their bits, so that `0.0` is not `-0.0`). The code CPython
/// made holds its own copies of numbers and strings (interned on free-threaded builds).
fn same_constant(old: &Bound<'_, PyAny>, new: &Bound<'_, PyAny>) -> PyResult<bool> {
    if old.is(new) {
        return Ok(true);
    }
    if !old.get_type().is(new.get_type()) {
        return Ok(false);
    }
    if let (Ok(old), Ok(new)) = (old.cast_exact::<PyFloat>(), new.cast_exact::<PyFloat>()) {
        return Ok(old.value().to_bits() == new.value().to_bits());
    }
    if let (Ok(old), Ok(new)) = (old.cast_exact::<PyComplex>(), new.cast_exact::<PyComplex>()) {
        return Ok(
            old.real().to_bits() == new.real().to_bits() && old.imag().to_bits() == new.imag().to_bits()
        );
    }
    if old.is_exact_instance_of::<PyInt>()
        || old.is_exact_instance_of::<PyString>()
        || old.is_exact_instance_of::<PyBytes>()
    {
        return old.eq(new);
    }
    if let (Ok(old), Ok(new)) = (old.cast_exact::<PyTuple>(), new.cast_exact::<PyTuple>()) {
        return same_constants(old, new, None);
    }
    if let (Ok(old), Ok(new)) = (old.cast_exact::<PySlice>(), new.cast_exact::<PySlice>()) {
        for part in ["start", "stop", "step"] {
            if !same_constant(&old.getattr(part)?, &new.getattr(part)?)? {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    // Boxes of unhashable values (`Emit::load_const`): the same when they hold one object.
    let held = crate::hookapi::pyobject::import(old.py(), "framehook.sot._translate")?.getattr("_Held")?;
    if old.get_type().is(&held) {
        return Ok(old.get_item(0)?.is(new.get_item(0)?));
    }
    Ok(false)
}
