//! Python-object helpers shared by the VM, guards and generated code: builtins by
//! name, and what kind of object a value is.

use std::sync::OnceLock;

use parking_lot::Mutex;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFrozenSet, PyList, PySet, PyString, PyTuple, PyType};
use rustc_hash::FxHashMap;

use crate::hookapi::pyobject::{import, loaded_module, optional_attr, StrongRef};

/// The builtins as they were when framehook was imported: what the generated code calls
/// (`int()`, `iter()`, `globals()`...) must be CPython's own even while a test patches
/// `builtins.int` with a mock (calling the mock ran the translated mock again, without end).
/// By Rust string: the translator asks for them thousands of times per translation, and
/// each ask of the dict made and hashed a Python string.
pub static BUILTINS: OnceLock<FxHashMap<String, Py<PyAny>>> = OnceLock::new();

/// `BUILTINS` by object: each builtin's name where it is its `__name__` too (`OSError`, not
/// its aliases `IOError` and `EnvironmentError`), by the address `BUILTINS` holds it at.
/// A call asks whether its callable is a builtin: by address, without reading its name.
pub static BUILTIN_NAMES: OnceLock<FxHashMap<usize, String>> = OnceLock::new();

/// Names made into interned Python strings, for the whole process: a translation asks for
/// hundreds (attribute and global lookups, the names of the codes it generates), and making
/// each anew cost a string, CPython's intern table lookup and the string's release.
static INTERNED: OnceLock<Mutex<FxHashMap<Box<str>, StrongRef>>> = OnceLock::new();

/// Names `INTERNED` keeps at most (a program may look up names it computes).
const INTERNED_KEPT: usize = 1 << 16;

/// `name` as an interned Python string.
pub fn interned<'py>(py: Python<'py>, name: &str) -> Bound<'py, PyString> {
    let table = INTERNED.get_or_init(Default::default);
    if let Some(found) = table.lock().get(name) {
        // Only strings are filed.
        return found
            .bind(py)
            .cast_into::<PyString>()
            .expect("an interned string");
    }
    let made = PyString::intern(py, name);
    let released = {
        let mut table = table.lock();
        let released = if table.len() >= INTERNED_KEPT {
            std::mem::take(&mut *table)
        } else {
            FxHashMap::default()
        };
        table.insert(name.into(), StrongRef::new(made.as_any()));
        released
    };
    drop(released); // after the lock: releasing takes no lock of ours then
    made
}

/// `hasattr(object, name)` (an AttributeError only says no), without making the
/// AttributeError where the answer is no: PyO3's `hasattr` reads the attribute and drops
/// the error, and most questions the translator asks are answered no. The name interned:
/// the VM asks about a few (`__get__`, `__set__`, `__dict__`) thousands of times.
pub fn has_attr(object: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    Ok(optional_attr(object, &interned(object.py(), name))?.is_some())
}

/// The module `name`, imported where `sys.modules` lacks it: for the modules framehook
/// itself uses (read by a plain lookup, `loaded_module`; the generated code asks again).
pub fn loaded<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    match loaded_module(py, &interned(py, name)) {
        Some(module) => Ok(module),
        None => Ok(import(py, name)?.into_any()),
    }
}

/// `types.LazyImportType` where the interpreter has lazy imports (3.15+).
static LAZY_IMPORT_TYPE: pyo3::sync::PyOnceLock<Option<Py<PyType>>> = pyo3::sync::PyOnceLock::new();

/// Whether `obj` is a lazy import's placeholder (3.15+): a module's namespace holds one
/// until the name is first used, which imports the module. Reading it as a value would
/// import early; it is never a translation's value.
pub fn is_lazy_import(obj: &Bound<'_, PyAny>) -> bool {
    let py = obj.py();
    let placeholder = LAZY_IMPORT_TYPE.get_or_init(py, || {
        let types = py.import("types").ok()?;
        Some(
            types
                .getattr("LazyImportType")
                .ok()?
                .cast_into::<PyType>()
                .ok()?
                .unbind(),
        )
    });
    placeholder
        .as_ref()
        .is_some_and(|ty| obj.get_type().is(ty.bind(py)))
}

/// The builtin `name` as framehook found it at import.
pub fn builtin<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let builtins = BUILTINS
        .get()
        .ok_or_else(|| PyRuntimeError::new_err("framehook: SOT's builtins are not read yet"))?;
    builtins
        .get(name)
        .map(|found| found.bind(py).clone())
        .ok_or_else(|| PyRuntimeError::new_err(format!("framehook: no builtin named {name}")))
}

/// The name of the builtin `obj` is, as framehook found the builtins at import (its
/// `__name__`); None for any other object.
pub fn builtin_name(obj: &Bound<'_, PyAny>) -> Option<&'static str> {
    BUILTIN_NAMES
        .get()?
        .get(&(obj.as_ptr() as usize))
        .map(String::as_str)
}

/// Instances of a class made by a `class` statement (its methods may be Python code).
pub fn is_heap_instance(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(is_heap_type(obj.get_type().as_any()))
}

/// The first class of `ty`'s MRO written in C: the base whose layout (and slots such as
/// `__setattr__`) its instances have.
pub fn solid_base<'py>(ty: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    for base in ty.getattr(pyo3::intern!(ty.py(), "__mro__"))?.try_iter()? {
        let base = base?;
        if !is_heap_type(&base) {
            return Ok(Some(base));
        }
    }
    Ok(None)
}

/// Whether a class was made by a class statement (or `type()`), not written in C.
pub fn is_heap_type(ty: &Bound<'_, PyAny>) -> bool {
    // SAFETY: a live type object; reading its flags only.
    ty.cast::<PyType>().is_ok_and(
        |t| unsafe { pyo3::ffi::PyType_GetFlags(t.as_type_ptr()) } & pyo3::ffi::Py_TPFLAGS_HEAPTYPE != 0,
    )
}

/// A type's name as CPython's messages give it: its `tp_name` (a class statement's name,
/// `collections.deque` for a C type outside builtins).
pub fn type_name_in_messages(ty: &Bound<'_, PyAny>) -> PyResult<String> {
    let ty = ty.cast::<PyType>()?;
    // SAFETY: a live type object (borrowed for the call); `tp_name` is a NUL-terminated
    // string it owns for its lifetime, copied out here.
    let name = unsafe { std::ffi::CStr::from_ptr((*ty.as_type_ptr()).tp_name) };
    Ok(name.to_string_lossy().into_owned())
}

pub fn qualname(obj: &Bound<'_, PyAny>) -> String {
    obj.getattr(pyo3::intern!(obj.py(), "__qualname__"))
        .or_else(|_| obj.getattr(pyo3::intern!(obj.py(), "__name__")))
        .map_or_else(
            |_| obj.get_type().name().map_or("?".into(), |n| n.to_string()),
            |n| n.to_string(),
        )
}

/// Whether `len(obj)` is a builtin container's own length: an instance of one, or of a
/// subclass that leaves `__len__` alone (a `Len` guard then fixes it, with its type).
pub fn has_builtin_len(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(builtin_len_base(obj)?.is_some())
}

/// `collections.deque`, read once (asked about at every `len()` and truth test of a value).
static DEQUE_TYPE: pyo3::sync::PyOnceLock<Py<PyType>> = pyo3::sync::PyOnceLock::new();

/// The builtin container (list, tuple, dict, set, frozenset, deque) whose `__len__` gives
/// `len(obj)`, where one does.
pub fn builtin_len_base<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyType>>> {
    let ty = obj.get_type();
    let deque = DEQUE_TYPE
        .get_or_try_init(obj.py(), || -> PyResult<_> {
            Ok(import(obj.py(), "collections")?
                .getattr(pyo3::intern!(obj.py(), "deque"))?
                .cast_into::<PyType>()?
                .unbind())
        })?
        .bind(obj.py())
        .clone();
    for base in [
        obj.py().get_type::<PyList>(),
        obj.py().get_type::<PyTuple>(),
        obj.py().get_type::<PyDict>(),
        obj.py().get_type::<PySet>(),
        obj.py().get_type::<PyFrozenSet>(),
        deque,
    ] {
        if ty.is_subclass(&base)? {
            let own = ty
                .getattr(pyo3::intern!(ty.py(), "__len__"))?
                .is(&base.getattr(pyo3::intern!(base.py(), "__len__"))?);
            return Ok(own.then_some(base));
        }
    }
    Ok(None)
}

/// A tuple, or an instance of a subclass that keeps tuple's `__iter__`, `__getitem__` and
/// `__len__` (a namedtuple): iterated, indexed and sized as a tuple.
pub fn is_plain_tuple(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    tuple_keeping(obj, &["__iter__", "__getitem__", "__len__"])
}

/// A tuple (or an instance of a subclass keeping tuple's `__iter__`, as importlib.metadata's
/// `EntryPoints`): iterating it gives its items, which its identity fixes.
pub fn iterates_as_tuple(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    tuple_keeping(obj, &["__iter__"])
}

/// Whether `obj` is a tuple, or an instance of a subclass whose `methods` are tuple's own.
fn tuple_keeping(obj: &Bound<'_, PyAny>, methods: &[&str]) -> PyResult<bool> {
    if obj.is_exact_instance_of::<PyTuple>() {
        return Ok(true);
    }
    if !obj.is_instance_of::<PyTuple>() {
        return Ok(false);
    }
    let (ty, tuple) = (obj.get_type(), obj.py().get_type::<PyTuple>());
    for method in methods {
        if !ty.getattr(*method)?.is(&tuple.getattr(*method)?) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A t-string's template (3.14), made from known values: immutable, iterated as is.
pub fn is_template(obj: &Bound<'_, PyAny>) -> bool {
    let ty = obj.get_type();
    ty.getattr(pyo3::intern!(ty.py(), "__module__"))
        .is_ok_and(|m| m.eq("string.templatelib").unwrap_or(false))
        && ty.name().is_ok_and(|n| n == "Template")
}

/// `run()` with the warnings it gives recorded, not shown (what the filters make an error
/// still raises), and whether there were any: a call made while translating, whose
/// warnings are the generated code's to give, at the function's line, on every call.
pub fn keeping_warnings<'py, T>(
    py: Python<'py>,
    run: impl FnOnce() -> PyResult<T>,
) -> PyResult<(PyResult<T>, bool)> {
    let record = PyDict::new(py);
    record.set_item(pyo3::intern!(py, "record"), true)?;
    let manager = loaded(py, "warnings")?
        .getattr(pyo3::intern!(py, "catch_warnings"))?
        .call((), Some(&record))?;
    let shown = manager.call_method0(pyo3::intern!(py, "__enter__"))?;
    let outcome = run();
    let none = py.None();
    manager.call_method1(pyo3::intern!(py, "__exit__"), (&none, &none, &none))?;
    Ok((outcome, shown.len()? > 0))
}

/// Whether `obj` is an `int`, `bool`, `float`, `str` or `None` (exactly), or a tuple of them:
/// values whose comparisons, arithmetic (but `~` of a bool), formatting and `str` methods
/// never warn (`BytesWarning` is `bytes`'s; these raise where they fail), so a call on them
/// alone runs without `keeping_warnings`' catch (a fiftieth of a translation's time).
pub fn is_quiet_value(obj: &Bound<'_, PyAny>) -> bool {
    use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
    obj.is_none()
        || obj.is_exact_instance_of::<PyInt>()
        || obj.is_exact_instance_of::<PyBool>()
        || obj.is_exact_instance_of::<PyFloat>()
        || obj.is_exact_instance_of::<PyString>()
        || obj
            .cast_exact::<PyTuple>()
            .is_ok_and(|items| items.iter().all(|item| is_quiet_value(&item)))
}

/// `isinstance(value, types)` for a tuple of classes asked about every value (the backend's
/// tensor types), answered once per type of value where the type is the whole answer: each
/// class's metaclass is `type` (no `__instancecheck__` of its own), and the value's class
/// attribute `__class__` is `object`'s, which `isinstance` reads after the type (for
/// proxies). Asking `isinstance` read `__class__` of every value that is not one: a
/// twentieth of a translation's simulation.
pub struct InstanceTest<'py> {
    types: Bound<'py, PyTuple>,
    /// `object.__class__`, where every class of `types` is a plain one.
    plain: Option<Bound<'py, PyAny>>,
    answers: std::cell::RefCell<TypeAnswers<'py>>,
}

/// Per type of value asked about (by address, the type held): the answer for all its
/// instances, or None where each instance is asked (its class has its own `__class__`).
type TypeAnswers<'py> = FxHashMap<usize, (Bound<'py, PyType>, Option<bool>)>;

impl<'py> InstanceTest<'py> {
    pub fn new(types: Bound<'py, PyTuple>) -> PyResult<Self> {
        let py = types.py();
        let type_type = py.get_type::<PyType>();
        let plain = match types.iter().all(|class| class.get_type().is(&type_type)) {
            true => Some(
                py.get_type::<pyo3::types::PyAny>()
                    .getattr(pyo3::intern!(py, "__dict__"))?
                    .get_item(pyo3::intern!(py, "__class__"))?,
            ),
            false => None,
        };
        Ok(Self {
            types,
            plain,
            answers: Default::default(),
        })
    }

    pub fn test(&self, value: &Bound<'py, PyAny>) -> bool {
        let answer = self.plain.as_ref().and_then(|object_class| {
            let ty = value.get_type();
            let address = ty.as_ptr() as usize;
            if let Some((_, answer)) = self.answers.borrow().get(&address) {
                return *answer;
            }
            let answer = self.type_answer(&ty, object_class);
            self.answers.borrow_mut().insert(address, (ty, answer));
            answer
        });
        answer.unwrap_or_else(|| value.is_instance(self.types.as_any()).unwrap_or(false))
    }

    /// The answer for every instance of `ty`, where its type decides it.
    fn type_answer(&self, ty: &Bound<'py, PyType>, object_class: &Bound<'py, PyAny>) -> Option<bool> {
        // SAFETY: `ty` and each class of `types` (checked in `new`) are type objects.
        let subtype = |class: Bound<'py, PyAny>| unsafe {
            pyo3::ffi::PyType_IsSubtype(ty.as_type_ptr(), class.as_ptr().cast()) != 0
        };
        if self.types.iter().any(subtype) {
            return Some(true);
        }
        let name = pyo3::intern!(ty.py(), "__class__");
        match crate::hookapi::pyobject::type_lookup(ty.as_any(), name) {
            Ok(Some(found)) if found.is(object_class) => Some(false),
            _ => None,
        }
    }
}
