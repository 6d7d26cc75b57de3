//! Per-code storage for hooks: one value of a type per code object, made on
//! first use and freed with the code object (co_extra, through the backend).
//! Hooks that remember things per code (SOT, framehook's own code states) use
//! this rather than the backend.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr::NonNull;

use pyo3::prelude::*;

use crate::pep523_backend::{self, CodeExtraSlot};

/// An identity for the calling thread's interpreter, to key per-interpreter state.
pub fn current_interpreter(py: Python<'_>) -> usize {
    pep523_backend::current_interpreter(py)
}

/// Where each code object's `T` is, in one interpreter.
pub struct PerCode<T> {
    slot: CodeExtraSlot,
    _values: PhantomData<fn() -> T>,
}

impl<T> Clone for PerCode<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for PerCode<T> {}

/// co_extra free function of a `PerCode<T>`: runs when the code object is deallocated.
unsafe extern "C" fn free_boxed<T>(value: *mut c_void) {
    if !value.is_null() {
        // SAFETY: every value of a PerCode<T> slot is a Box<T> from `into_raw`,
        // and CPython calls this once, from a thread attached to the interpreter.
        drop(unsafe { Box::from_raw(value.cast::<T>()) });
    }
}

impl<T: Default + Send + Sync + 'static> PerCode<T> {
    /// A slot of the current interpreter's, for values of `T`.
    pub fn request(py: Python<'_>) -> PyResult<Self> {
        Ok(Self {
            slot: CodeExtraSlot::request(py, free_boxed::<T>)?,
            _values: PhantomData,
        })
    }

    /// The co_extra index (what the eval function reads, for framehook's own states).
    pub(crate) fn index(self) -> pyo3::ffi::Py_ssize_t {
        self.slot.index()
    }

    /// The value stored on `code` (a code object), if any. It lives as long as
    /// the code.
    ///
    /// # Safety
    /// The caller keeps `code` alive while using the reference.
    #[inline]
    pub unsafe fn get<'c>(self, code: &Bound<'_, PyAny>) -> Option<&'c T> {
        // SAFETY: this slot holds boxed `T`s only (see `free_boxed`), freed with
        // the code, which the caller keeps alive.
        self.slot
            .get(code)
            .map(|value| unsafe { &*value.as_ptr().cast::<T>() })
    }

    /// The value stored on `code`, made with `T::default()` on first use.
    ///
    /// # Safety
    /// As for [`PerCode::get`].
    pub unsafe fn get_or_default<'c>(self, code: &Bound<'_, PyAny>) -> PyResult<&'c T> {
        // SAFETY: guaranteed by the caller.
        if let Some(existing) = unsafe { self.get(code) } {
            return Ok(existing);
        }
        let fresh = NonNull::from(Box::leak(Box::<T>::default())).cast::<c_void>();
        // SAFETY: a boxed `T` is what this slot's free function frees.
        let stored = unsafe { self.slot.get_or_store(code, fresh) };
        if stored.as_ref().map_or(true, |stored| *stored != fresh) {
            // SAFETY: the box was not taken (another thread stored first, or an error).
            drop(unsafe { Box::from_raw(fresh.as_ptr().cast::<T>()) });
        }
        // SAFETY: owned by the code object, which the caller keeps alive.
        Ok(unsafe { &*stored?.as_ptr().cast::<T>() })
    }
}
