//! framehook: the high-level CPython frame-hook API (`add_frame_hook` /
//! `remove_frame_hook`) implemented on PEP 523 for CPython 3.9 to 3.15.
//!
//! - [`pep523_backend`]: every CPython-internal detail, and only there.
//! - [`hookapi`]: the stable API (registry, chain, caching, frames, bindings).
//! - [`sot`]: the SOT runtime, the primary hook, built on [`hookapi`].

/// The translator allocates small vectors, maps and values by the thousand per
/// translation: with glibc's allocator a tenth of its instructions were malloc and free.
#[global_allocator]
static ALLOCATOR: allocator::MiMalloc = allocator::MiMalloc;

mod allocator;
mod bytecode;
pub mod hookapi;
mod module;
pub mod pep523_backend;
pub mod sot;

/// Test and bench helpers, built with the `testing` feature only (the test and
/// bench builds turn it on; a user's `pip install .` does not ship them).
#[cfg(feature = "testing")]
pub(crate) mod testing {
    use pyo3::prelude::*;

    use crate::pep523_backend::testing as backend;

    /// (current eval function address, framehook's eval function address).
    #[pyfunction]
    pub fn _eval_functions(py: Python<'_>) -> (usize, usize) {
        backend::eval_function_addresses(py)
    }

    /// Installs a pass-through eval function standing for another PEP 523 tool,
    /// which asks the loop to keep specializing under it if `specializing` (3.15+).
    #[pyfunction]
    #[pyo3(signature = (specializing=false))]
    pub fn _foreign_install(py: Python<'_>, specializing: bool) -> bool {
        backend::foreign_install(py, specializing)
    }

    /// Whether the loop specializes under the current eval function (None before 3.15).
    #[pyfunction]
    pub fn _eval_specializing(py: Python<'_>) -> Option<bool> {
        backend::eval_specializing(py)
    }

    /// Sets that for the current eval function; False where there is no such setting.
    #[pyfunction]
    pub fn _set_eval_specializing(py: Python<'_>, specializing: bool) -> bool {
        backend::set_eval_specializing(py, specializing)
    }

    #[pyfunction]
    pub fn _foreign_uninstall(py: Python<'_>) -> bool {
        backend::foreign_uninstall(py)
    }

    /// Frames the eval function asked the Rust side about (not passed through on its own).
    #[pyfunction]
    pub fn _dispatched_frames() -> u64 {
        crate::hookapi::dispatch::DISPATCHED_FRAMES.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Guards SOT checked on frames (not those CPython's watchers answered).
    #[pyfunction]
    pub fn _guards_checked() -> u64 {
        crate::sot::translator::fetch::GUARDS_CHECKED.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[pyfunction]
    pub fn _foreign_calls() -> u64 {
        backend::foreign_calls()
    }

    #[pyfunction]
    pub fn _foreign_address() -> usize {
        backend::foreign_address()
    }

    /// The helpers every interpreter's module has (the others are PyO3
    /// functions, for the main interpreter only): whether framehook's eval
    /// function is installed, and the bare pass-through eval function (the
    /// floor benchmarks compare framehook with; installing says false if it
    /// was installed already).
    pub mod every_interpreter {
        use pyo3::ffi;

        use crate::hookapi::pyobject::{bool_object, ffi_body, method, CTable};
        use crate::pep523_backend::testing as backend;

        unsafe extern "C" fn is_installed(
            _module: *mut ffi::PyObject,
            _unused: *mut ffi::PyObject,
        ) -> *mut ffi::PyObject {
            // SAFETY: CPython calls module functions attached.
            unsafe { ffi_body(|py| bool_object(py, backend::is_installed(py))) }
        }

        unsafe extern "C" fn floor_install(
            _module: *mut ffi::PyObject,
            _unused: *mut ffi::PyObject,
        ) -> *mut ffi::PyObject {
            // SAFETY: CPython calls module functions attached.
            unsafe { ffi_body(|py| bool_object(py, backend::floor_install(py)?)) }
        }

        unsafe extern "C" fn floor_uninstall(
            _module: *mut ffi::PyObject,
            _unused: *mut ffi::PyObject,
        ) -> *mut ffi::PyObject {
            // SAFETY: CPython calls module functions attached.
            unsafe { ffi_body(|py| bool_object(py, backend::floor_uninstall(py))) }
        }

        pub static FUNCTIONS: CTable<[ffi::PyMethodDef; 4]> = CTable([
            method(
                c"_is_installed",
                ffi::PyMethodDefPointer {
                    PyCFunction: is_installed,
                },
                ffi::METH_NOARGS,
                c"Whether framehook's eval function is installed in this interpreter.",
            ),
            method(
                c"_bench_floor_install",
                ffi::PyMethodDefPointer {
                    PyCFunction: floor_install,
                },
                ffi::METH_NOARGS,
                c"Installs the floor eval function; false if it was installed already.",
            ),
            method(
                c"_bench_floor_uninstall",
                ffi::PyMethodDefPointer {
                    PyCFunction: floor_uninstall,
                },
                ffi::METH_NOARGS,
                c"Removes the floor eval function; false if it was not installed.",
            ),
            ffi::PyMethodDef::zeroed(),
        ]);
    }

    pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add_function(wrap_pyfunction!(_eval_functions, m)?)?;
        m.add_function(wrap_pyfunction!(_dispatched_frames, m)?)?;
        m.add_function(wrap_pyfunction!(_guards_checked, m)?)?;
        m.add_function(wrap_pyfunction!(_foreign_install, m)?)?;
        m.add_function(wrap_pyfunction!(_eval_specializing, m)?)?;
        m.add_function(wrap_pyfunction!(_set_eval_specializing, m)?)?;
        m.add_function(wrap_pyfunction!(_foreign_uninstall, m)?)?;
        m.add_function(wrap_pyfunction!(_foreign_calls, m)?)?;
        m.add_function(wrap_pyfunction!(_foreign_address, m)?)?;
        m.add_function(wrap_pyfunction!(capi::_capi_add, m)?)?;
        m.add_function(wrap_pyfunction!(capi::_capi_remove, m)?)?;
        m.add_function(wrap_pyfunction!(capi::_capi_set_enabled, m)?)?;
        m.add_function(wrap_pyfunction!(capi::_capi_counts, m)?)?;
        Ok(())
    }

    /// Exercises the C API table directly, as a C caller would, to test how it
    /// treats bad input.
    pub mod capi {
        use std::ffi::{c_int, c_void, CString};
        use std::ptr;
        use std::sync::atomic::{AtomicU64, Ordering};

        use framehook_capi::ffi::{framehook_frame, framehook_hook_spec};
        use pyo3::prelude::*;

        use crate::hookapi::capi::API;

        static FREED: AtomicU64 = AtomicU64::new(0);
        static HOOK_CALLS: AtomicU64 = AtomicU64::new(0);

        unsafe extern "C" fn declining_hook(
            _user_data: *mut c_void,
            _frame: *const framehook_frame,
            _replacement: *mut *mut pyo3::ffi::PyObject,
        ) -> c_int {
            HOOK_CALLS.fetch_add(1, Ordering::Relaxed);
            0
        }

        /// Declines and does nothing else: what framehook costs with a hook this cheap.
        unsafe extern "C" fn silent_declining_hook(
            _user_data: *mut c_void,
            _frame: *const framehook_frame,
            _replacement: *mut *mut pyo3::ffi::PyObject,
        ) -> c_int {
            0
        }

        /// Fails for frames of the code object in `user_data`, declines others.
        unsafe extern "C" fn failing_hook(
            user_data: *mut c_void,
            frame: *const framehook_frame,
            _replacement: *mut *mut pyo3::ffi::PyObject,
        ) -> c_int {
            HOOK_CALLS.fetch_add(1, Ordering::Relaxed);
            // SAFETY: the frame is the one this call is about, as the C API promises.
            if unsafe { (API.frame_original_code)(frame) } != user_data.cast() {
                return 0;
            }
            // Raised through CPython: PyO3 does not count a hook function's thread as
            // attached, so a PyO3 error made here would drop its parts outside it.
            // SAFETY: hook functions are called attached; the message is a C string.
            unsafe {
                pyo3::ffi::PyErr_SetString(
                    pyo3::ffi::PyExc_RuntimeError,
                    c"native test hook failed".as_ptr(),
                );
            }
            -1
        }

        unsafe extern "C" fn release_code(user_data: *mut c_void) {
            // SAFETY: the reference `_capi_add` gave the hook; freed attached, once.
            unsafe { pyo3::ffi::Py_DecRef(user_data.cast()) };
            FREED.fetch_add(1, Ordering::Relaxed);
        }

        unsafe extern "C" fn count_free(_user_data: *mut c_void) {
            FREED.fetch_add(1, Ordering::Relaxed);
        }

        fn status(py: Python<'_>, status: c_int) -> PyResult<()> {
            if status < 0 {
                Err(PyErr::fetch(py))
            } else {
                Ok(())
            }
        }

        /// add_hook with a declining hook function (`hook`; counting its calls
        /// unless `counting` is false; with `fail_for`, one that fails for frames
        /// of that code object), no observer, and the given name, spec size
        /// adjustment and on_error value.
        #[pyfunction]
        #[pyo3(signature = (name, *, hook = true, size_delta = 0, on_error = 0, null_spec = false, fail_for = None, counting = true))]
        #[allow(clippy::too_many_arguments)]
        pub fn _capi_add(
            py: Python<'_>,
            name: Option<Vec<u8>>,
            hook: bool,
            size_delta: isize,
            on_error: c_int,
            null_spec: bool,
            fail_for: Option<Bound<'_, PyAny>>,
            counting: bool,
        ) -> PyResult<Py<PyAny>> {
            let name = name.map(|name| CString::new(name).expect("test names have no NUL"));
            let spec = framehook_hook_spec {
                size: std::mem::size_of::<framehook_hook_spec>().saturating_add_signed(size_delta),
                name: name.as_ref().map_or(ptr::null(), |name| name.as_ptr()),
                hook: hook.then_some(match (&fail_for, counting) {
                    (Some(_), _) => failing_hook as _,
                    (None, true) => declining_hook as _,
                    (None, false) => silent_declining_hook as _,
                }),
                observe: None,
                user_data: fail_for
                    .as_ref()
                    .map_or(ptr::null_mut(), |code| code.clone().into_ptr().cast()),
                free_user_data: Some(if fail_for.is_some() {
                    release_code
                } else {
                    count_free
                }),
                cache: 0,
                on_error,
            };
            let spec_pointer = if null_spec {
                ptr::null()
            } else {
                ptr::from_ref(&spec)
            };
            // SAFETY: attached; the spec (when not NULL) is valid for the call.
            let handle = unsafe { (API.add_hook)(spec_pointer) };
            // SAFETY: a new reference or NULL with an exception set.
            Ok(unsafe { Bound::from_owned_ptr_or_err(py, handle) }?.unbind())
        }

        #[pyfunction]
        #[pyo3(signature = (handle = None))]
        pub fn _capi_remove(py: Python<'_>, handle: Option<Bound<'_, PyAny>>) -> PyResult<()> {
            let pointer = handle.as_ref().map_or(ptr::null_mut(), Bound::as_ptr);
            // SAFETY: attached; the object (if any) is alive.
            status(py, unsafe { (API.remove_hook)(pointer) })
        }

        #[pyfunction]
        pub fn _capi_set_enabled(py: Python<'_>, handle: Bound<'_, PyAny>, enabled: bool) -> PyResult<()> {
            // SAFETY: attached; the object is alive.
            status(py, unsafe {
                (API.set_enabled)(handle.as_ptr(), c_int::from(enabled))
            })
        }

        /// (hook function calls, free_user_data calls) so far.
        #[pyfunction]
        pub fn _capi_counts() -> (u64, u64) {
            (HOOK_CALLS.load(Ordering::Relaxed), FREED.load(Ordering::Relaxed))
        }
    }
}
