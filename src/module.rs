//! The extension module `framehook._native`: one multi-phase definition for
//! every interpreter (PEP 489), declaring support for sub-interpreters with
//! their own GIL (3.12+) and for running without the GIL (3.13+). Each module
//! object's state is its interpreter's registry (see `hookapi::python`).
//!
//! The hook API and its C API capsule are in every interpreter's module; they
//! use none of PyO3's process-wide state. SOT's functions and the test helpers
//! are PyO3 functions, which keep process-wide state: they are added in the
//! main interpreter only.

use std::cell::UnsafeCell;
use std::collections::BTreeMap;
use std::ffi::c_int;
use std::ptr;
use std::sync::OnceLock;

use parking_lot::Mutex;
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyModule, PyString, PyTuple};

use crate::hookapi::pyobject::{ffi_body, ffi_status, method, CTable};
use crate::pep523_backend::new_error;
use crate::{hookapi, pep523_backend};

/// `build_info()`: the interpreter this module was compiled for, as a dict.
unsafe extern "C" fn build_info(
    _module: *mut ffi::PyObject,
    _unused: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls module functions attached.
    unsafe {
        ffi_body(|py| {
            let target = pep523_backend::build_target();
            let info = PyDict::new(py);
            info.set_item("version_hex", target.version_hex)?;
            info.set_item(
                "version",
                (
                    target.version_hex >> 24,
                    (target.version_hex >> 16) & 0xff,
                    (target.version_hex >> 8) & 0xff,
                ),
            )?;
            info.set_item("gil_disabled", target.gil_disabled)?;
            info.set_item("debug", target.debug)?;
            info.set_item("crate_version", env!("CARGO_PKG_VERSION"))?;
            Ok(info.into_any())
        })
    }
}

/// Texts posted by one interpreter for another to take (see `framehook.interpreters`):
/// plain Rust strings, so no interpreter's object is ever seen by another.
static MAILBOX: Mutex<BTreeMap<u64, String>> = Mutex::new(BTreeMap::new());

/// A mailbox key: an int from 0 to 2**64 - 1.
fn mailbox_key(key: &Bound<'_, PyAny>) -> PyResult<u64> {
    let py = key.py();
    if key.cast::<PyInt>().is_err() {
        return Err(new_error::<PyTypeError>(py, "a mailbox key must be an int"));
    }
    // SAFETY: attached; `key` is an int.
    let value = unsafe { ffi::PyLong_AsUnsignedLongLong(key.as_ptr()) };
    if value == u64::MAX && PyErr::occurred(py) {
        return Err(PyErr::fetch(py));
    }
    Ok(value)
}

/// `_post(key, text)`: leaves `text` under `key` (replacing what was there).
unsafe extern "C" fn post(_module: *mut ffi::PyObject, args: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls module functions attached, with a tuple (METH_VARARGS).
    unsafe {
        ffi_body(|py| {
            // A tuple (METH_VARARGS).
            let args = Bound::from_borrowed_ptr(py, args).cast_into_unchecked::<PyTuple>();
            let (key, text) = match (args.len(), args.get_item(0), args.get_item(1)) {
                (2, Ok(key), Ok(text)) => (mailbox_key(&key)?, text),
                _ => return Err(new_error::<PyTypeError>(py, "_post() takes a key and a text")),
            };
            let text = text
                .cast_into::<PyString>()
                .map_err(|_| new_error::<PyTypeError>(py, "_post(): the text must be a str"))?;
            MAILBOX.lock().insert(key, text.to_str()?.to_owned());
            Ok(py.None().into_bound(py))
        })
    }
}

/// `_take(key)`: the text left under `key`, removed; None if there is none.
unsafe extern "C" fn take(_module: *mut ffi::PyObject, key: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls module functions attached, with one argument (METH_O).
    unsafe {
        ffi_body(|py| {
            let key = mailbox_key(&Bound::from_borrowed_ptr(py, key))?;
            Ok(match MAILBOX.lock().remove(&key) {
                Some(text) => PyString::new(py, &text).into_any(),
                None => py.None().into_bound(py),
            })
        })
    }
}

static FUNCTIONS: CTable<[ffi::PyMethodDef; 4]> = CTable([
    method(
        c"build_info",
        ffi::PyMethodDefPointer {
            PyCFunction: build_info,
        },
        ffi::METH_NOARGS,
        c"build_info()\n--\n\nThe interpreter this module was compiled for, as a dict.",
    ),
    method(
        c"_post",
        ffi::PyMethodDefPointer { PyCFunction: post },
        ffi::METH_VARARGS,
        c"_post(key, text, /)\n--\n\nLeaves text under key for another interpreter to take.",
    ),
    method(
        c"_take",
        ffi::PyMethodDefPointer { PyCFunction: take },
        ffi::METH_O,
        c"_take(key, /)\n--\n\nThe text left under key, removed; None if there is none.",
    ),
    ffi::PyMethodDef::zeroed(),
]);

unsafe extern "C" fn exec_module(module: *mut ffi::PyObject) -> c_int {
    // SAFETY: CPython calls the exec slot attached, once per new module object.
    unsafe {
        ffi_status(|py| {
            pep523_backend::check_running_interpreter(py)?;
            let module = Bound::from_borrowed_ptr(py, module);
            hookapi::python::exec_module(py, &module)?;
            module
                .getattr("__all__")?
                .call_method1("append", ("build_info",))?;
            #[cfg(feature = "testing")]
            if ffi::PyModule_AddFunctions(
                module.as_ptr(),
                crate::testing::every_interpreter::FUNCTIONS.as_mut_ptr(),
            ) < 0
            {
                return Err(PyErr::fetch(py));
            }
            if pep523_backend::is_main_interpreter(py) {
                // SAFETY: the exec slot's module object is a module.
                let module = module.cast_unchecked::<PyModule>();
                crate::sot::python::register(module)?;
                crate::sot::translator::python::register(module)?;
                crate::sot::fused::python::register(module)?;
                crate::bytecode::register(module)?;
                #[cfg(feature = "testing")]
                crate::testing::register(module)?;
            }
            Ok(())
        })
    }
}

/// The module definition, made on the first import: CPython initialises its
/// base in `PyModuleDef_Init` and keeps its address.
struct ModuleDef(UnsafeCell<ffi::PyModuleDef>);

/// The module's slots: exec, then the build's slots about interpreters, then the end.
struct Slots([ffi::PyModuleDef_Slot; 4]);

// SAFETY: CPython writes the definition's base once, under the import lock, in
// PyModuleDef_Init; everything else only reads the definition and the slots.
unsafe impl Sync for ModuleDef {}
// SAFETY: as above; made once, never moved out of its static.
unsafe impl Send for ModuleDef {}
// SAFETY: constant once made.
unsafe impl Sync for Slots {}
// SAFETY: as above.
unsafe impl Send for Slots {}

static SLOTS: OnceLock<Slots> = OnceLock::new();
static MODULE_DEF: OnceLock<ModuleDef> = OnceLock::new();

fn module_def() -> &'static ModuleDef {
    let slots = SLOTS.get_or_init(|| {
        let [first, second] = pep523_backend::interpreter_module_slots();
        Slots([
            ffi::PyModuleDef_Slot {
                slot: ffi::Py_mod_exec,
                value: exec_module as *mut std::ffi::c_void,
            },
            first,
            second,
            ffi::PyModuleDef_Slot {
                slot: 0,
                value: ptr::null_mut(),
            },
        ])
    });
    MODULE_DEF.get_or_init(|| {
        ModuleDef(UnsafeCell::new(ffi::PyModuleDef {
            m_base: ffi::PyModuleDef_HEAD_INIT,
            m_name: c"framehook._native".as_ptr(),
            m_doc: c"framehook's native core: the frame-hook API, its C API capsule (_C_API) and SOT's functions."
                .as_ptr(),
            m_size: hookapi::python::MODULE_STATE_SIZE as ffi::Py_ssize_t,
            m_methods: FUNCTIONS.0.as_ptr().cast_mut(),
            m_slots: slots.0.as_ptr().cast_mut(),
            m_traverse: None,
            m_clear: None,
            m_free: Some(hookapi::python::free_module),
        }))
    })
}

/// The module's initialisation function, which CPython looks up by name.
///
/// # Safety
/// Called by CPython's import machinery, attached.
#[no_mangle]
#[allow(non_snake_case)]
pub unsafe extern "C" fn PyInit__native() -> *mut ffi::PyObject {
    // SAFETY: a static definition, initialised by CPython (multi-phase init).
    unsafe { ffi::PyModuleDef_Init(module_def().0.get()) }
}
