//! Python objects framehook owns and makes, in whichever interpreter it runs.
//!
//! framehook's Python surface loads in every interpreter, isolated ones with
//! their own GIL included, so it uses none of PyO3's process-wide state there:
//! no `#[pyclass]` (its type objects are process-wide statics), no interned
//! strings, no deferred reference counting (PyO3's pool would release an
//! object of one interpreter from a thread of another). Types are heap types
//! made per interpreter ([`NativeType`]); references held in Rust are
//! [`StrongRef`]s, released at once; functions CPython calls run through
//! [`ffi_body`]. PyO3's `Bound` values, which release at once, are fine.

use std::any::Any;
use std::ffi::{c_int, c_void, CStr, CString};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use crate::pep523_backend::{self, new_error};
use pyo3::exceptions::{PyImportError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

/// A strong reference released on drop with a plain `Py_DecRef`. Everything
/// framehook keeps is dropped by threads attached to the object's interpreter
/// (registry writers, dispatch, the eval function, code and handle
/// deallocation), often outside PyO3's knowledge, where PyO3's `Py` would
/// defer the release to whichever interpreter next runs PyO3 code.
pub struct StrongRef(NonNull<ffi::PyObject>);

// SAFETY: the reference is only touched (compared, cloned, released) by threads
// attached to the object's interpreter; see above.
unsafe impl Send for StrongRef {}
// SAFETY: as above.
unsafe impl Sync for StrongRef {}

impl StrongRef {
    pub fn new(object: &Bound<'_, PyAny>) -> Self {
        Self::from_owned(object.clone())
    }

    pub fn from_owned(object: Bound<'_, PyAny>) -> Self {
        Self(NonNull::new(object.into_ptr()).expect("a Bound is never NULL"))
    }

    pub fn is(&self, object: &Bound<'_, PyAny>) -> bool {
        self.0.as_ptr() == object.as_ptr()
    }

    pub fn as_ptr(&self) -> *mut ffi::PyObject {
        self.0.as_ptr()
    }

    pub fn bind<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        // SAFETY: we hold a strong reference, so the object is alive.
        unsafe { Bound::from_borrowed_ptr(py, self.0.as_ptr()) }
    }

    pub fn clone_ref(&self, py: Python<'_>) -> Self {
        Self::new(&self.bind(py))
    }
}

impl Drop for StrongRef {
    fn drop(&mut self) {
        // SAFETY: we own one reference, and the dropping thread is attached (see the type's docs).
        unsafe { ffi::Py_DecRef(self.0.as_ptr()) }
    }
}

/// The module `name` if `sys.modules` holds it, without importing it: what the
/// translator reads about a program's modules must not import one the program has not.
pub fn imported<'py>(py: Python<'py>, name: &str) -> Option<Bound<'py, PyAny>> {
    let key = PyString::new(py, name);
    // SAFETY: attached; a str key; a new reference or NULL (no error set when absent).
    unsafe { Bound::from_owned_ptr_or_opt(py, ffi::PyImport_GetModule(key.as_ptr())) }
}

/// The module `name` as `sys.modules` holds it, by a plain lookup: unlike `imported`, no
/// wait for a module another thread is still importing, for one framehook knows is loaded
/// (`warnings`, asked at every operation run while translating).
pub fn loaded_module<'py>(py: Python<'py>, name: &Bound<'py, PyString>) -> Option<Bound<'py, PyAny>> {
    // SAFETY: attached; a borrowed reference to the interpreter's `sys.modules`.
    let modules = unsafe { Bound::from_borrowed_ptr_or_opt(py, ffi::PyImport_GetModuleDict()) }?;
    modules.cast_into::<PyDict>().ok()?.get_item(name).ok().flatten()
}

/// The module `name`, imported without `__import__`: code running in a hook must import
/// even while the calling frame's builtins lack it (a namedtuple's `__new__` runs with
/// `__builtins__ = {}`), where `Python::import` would raise KeyError.
pub fn import<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyModule>> {
    let module = match imported(py, name) {
        Some(module) => module,
        None => {
            let c_name = CString::new(name)?;
            // SAFETY: attached; a NUL-terminated name; no globals, locals or fromlist: an
            // absolute import, which for a dotted name returns the top-level package.
            unsafe {
                Bound::from_owned_ptr_or_err(
                    py,
                    ffi::PyImport_ImportModuleLevel(
                        c_name.as_ptr(),
                        ptr::null_mut(),
                        ptr::null_mut(),
                        ptr::null_mut(),
                        0,
                    ),
                )
            }?;
            imported(py, name).ok_or_else(|| {
                PyImportError::new_err(format!("{name} is not in sys.modules after its import"))
            })?
        }
    };
    Ok(module.cast_into::<PyModule>()?)
}

/// Drops an error that will not be raised without PyO3's deferred release:
/// it goes back to CPython, which clears it.
pub fn discard(py: Python<'_>, err: PyErr) {
    err.restore(py);
    // SAFETY: attached (the token); the error just set is cleared.
    unsafe { ffi::PyErr_Clear() };
}

/// `True` or `False`.
pub fn bool_object(py: Python<'_>, value: bool) -> PyResult<Bound<'_, PyAny>> {
    Ok(pyo3::types::PyBool::new(py, value).to_owned().into_any())
}

/// Whether CPython never frees `object`: immortal objects (3.12+), every code object
/// on free-threaded 3.13 once a thread has run (gh-117696).
pub fn is_immortal(object: &Bound<'_, PyAny>) -> bool {
    pep523_backend::is_immortal(object)
}

/// A type's version tag while valid, else 0 (see `pep523_backend::type_version`): a
/// translation that relied on a class's attributes guards it.
pub fn type_version(type_object: &Bound<'_, PyType>, assign: bool) -> u32 {
    pep523_backend::type_version(type_object, assign)
}

pub use crate::pep523_backend::FunctionPart;
/// Counters of changes of dict entries and functions, from CPython's watchers (see
/// `pep523_backend::Watch`).
pub use crate::pep523_backend::{watch_dict, watch_dict_key, watch_function, watchers_available, Watch};

/// `function.__code__` and the like read straight from an exact function, or None where the
/// attribute must be looked up (see `pep523_backend::function_part`).
pub fn function_part<'py>(function: &Bound<'py, PyAny>, part: FunctionPart) -> Option<Bound<'py, PyAny>> {
    pep523_backend::function_part(function, part)
}

/// `function.__code__` and the like: read straight from an exact function where the build
/// allows (`function_part`), else looked up as the attribute.
pub fn function_attr<'py>(function: &Bound<'py, PyAny>, part: FunctionPart) -> PyResult<Bound<'py, PyAny>> {
    if let Some(found) = function_part(function, part) {
        return Ok(found);
    }
    let py = function.py();
    let name = match part {
        FunctionPart::Code => pyo3::intern!(py, "__code__"),
        FunctionPart::Globals => pyo3::intern!(py, "__globals__"),
        FunctionPart::Defaults => pyo3::intern!(py, "__defaults__"),
        FunctionPart::KwDefaults => pyo3::intern!(py, "__kwdefaults__"),
    };
    function.getattr(name)
}

/// `ty`'s class attribute `name`, found along its MRO as `type.__getattribute__` would, by
/// CPython's own lookup (see `pep523_backend::type_lookup`); through the `__mro__` and
/// `__dict__` attributes where the type is not ready yet or is not a type.
pub fn type_lookup<'py>(
    ty: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let Some(found) = ty
        .cast::<PyType>()
        .ok()
        .and_then(|ty| pep523_backend::type_lookup(ty, name))
    {
        return Ok(found);
    }
    for class in ty.getattr(pyo3::intern!(ty.py(), "__mro__"))?.try_iter()? {
        if let Ok(found) = class?.getattr(pyo3::intern!(ty.py(), "__dict__"))?.get_item(name) {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// `getattr(object, name)`, None where it has no such attribute: without making the
/// AttributeError a generic lookup would make (see `pep523_backend::optional_attr`).
pub fn optional_attr<'py>(
    object: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    pep523_backend::optional_attr(object, name)
}

/// Whether attributes can be set on a type (a class defined in Python, not a builtin type).
pub fn type_is_mutable(type_object: &Bound<'_, PyType>) -> bool {
    pep523_backend::type_is_mutable(type_object)
}

/// `code.replace(**changes)`, keeping its constants' identity on every build (see
/// `pep523_backend::replace_code`): a code object made from another computes as it does.
pub fn replace_code<'py>(
    code: &Bound<'py, PyAny>,
    changes: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    pep523_backend::replace_code(code, changes)
}

/// Whether instances of the class `ty` look their attributes up as
/// `object.__getattribute__` does, though its `__getattribute__` is a C base's (a
/// `namedtuple`'s class: its base `tuple` keeps the generic lookup; an exception class).
pub fn has_generic_getattro(ty: &Bound<'_, pyo3::types::PyType>) -> bool {
    // SAFETY: `ty` is a live type; its `tp_getattro` field (a static type's too, which
    // 3.9's PyType_GetSlot does not read) is a function pointer compared by address
    // (CPython's own symbol, imported), never called.
    let getattro = unsafe { (*ty.as_type_ptr()).tp_getattro };
    getattro.is_some_and(|f| f as *const () == ffi::PyObject_GenericGetAttr as *const ())
}

/// Whether `object` can be weakly referenced (its type has a weak reference list): asked
/// before `weakref.ref`, whose refusal costs an exception.
pub fn supports_weakrefs(object: &Bound<'_, PyAny>) -> bool {
    // SAFETY: a live object's type; `tp_weaklistoffset` is a plain field (CPython's
    // `_PyType_SUPPORTS_WEAKREFS`: nonzero, managed weak references included).
    unsafe { (*ffi::Py_TYPE(object.as_ptr())).tp_weaklistoffset != 0 }
}

/// The name of `object`'s type, for messages.
pub fn type_name(object: &Bound<'_, PyAny>) -> String {
    match object.get_type().name() {
        Ok(name) => name.to_string(),
        Err(err) => {
            discard(object.py(), err);
            "?".to_owned()
        }
    }
}

/// Raises a panic that reached a function CPython called as a SystemError
/// (never unwinds into C).
fn raise_panic(payload: Box<dyn Any + Send>) {
    let message = payload
        .downcast_ref::<&str>()
        .map(|message| (*message).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    let message =
        CString::new(format!("framehook: internal error: {message}").replace('\0', " ")).unwrap_or_default();
    // SAFETY: attached (CPython called us); the message is a valid C string.
    unsafe { ffi::PyErr_SetString(ffi::PyExc_SystemError, message.as_ptr()) };
    // The payload may run Rust code when dropped; do it after the error is set.
    drop(payload);
}

/// The body of a function CPython calls (a module function or a type slot
/// returning an object): a new reference, or NULL with an exception set;
/// a panic becomes a SystemError.
///
/// # Safety
/// The calling thread is attached (CPython calls such functions attached).
pub unsafe fn ffi_body<F>(body: F) -> *mut ffi::PyObject
where
    F: for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>>,
{
    // SAFETY: guaranteed by the caller.
    let py = unsafe { Python::assume_attached() };
    match catch_unwind(AssertUnwindSafe(|| body(py))) {
        Ok(Ok(object)) => object.into_ptr(),
        Ok(Err(err)) => {
            err.restore(py);
            ptr::null_mut()
        }
        Err(payload) => {
            raise_panic(payload);
            ptr::null_mut()
        }
    }
}

/// As [`ffi_body`], for functions returning 0, or -1 with an exception set.
///
/// # Safety
/// As for [`ffi_body`].
pub unsafe fn ffi_status<F>(body: F) -> c_int
where
    F: for<'py> FnOnce(Python<'py>) -> PyResult<()>,
{
    // SAFETY: guaranteed by the caller.
    let py = unsafe { Python::assume_attached() };
    match catch_unwind(AssertUnwindSafe(|| body(py))) {
        Ok(Ok(())) => 0,
        Ok(Err(err)) => {
            err.restore(py);
            -1
        }
        Err(payload) => {
            raise_panic(payload);
            -1
        }
    }
}

/// `Sync` for tables of C definitions (method and getter tables, module
/// definitions): CPython only reads them, though they hold raw pointers.
#[repr(transparent)]
pub struct CTable<T>(pub T);

// SAFETY: the tables are constant data that CPython reads and never writes,
// except `PyModuleDef`'s base, which CPython initialises under the import lock.
unsafe impl<T> Sync for CTable<T> {}

impl<T> CTable<T> {
    /// The table as CPython takes it.
    pub fn as_mut_ptr<E>(&'static self) -> *mut E {
        ptr::from_ref(&self.0).cast_mut().cast()
    }
}

/// A getter of a [`NativeType`]'s instances, as CPython calls it: `$body` gets
/// the token and the instance's value (of type `$type`).
macro_rules! native_getter {
    ($name:ident, $type:ty, |$py:ident, $value:ident| $body:expr) => {
        unsafe extern "C" fn $name(
            object: *mut pyo3::ffi::PyObject,
            _closure: *mut std::ffi::c_void,
        ) -> *mut pyo3::ffi::PyObject {
            // SAFETY: CPython calls getters attached, with a live instance of the type
            // whose getter table holds this function.
            unsafe {
                $crate::hookapi::pyobject::ffi_body(|$py| {
                    let $value = $crate::hookapi::pyobject::instance_value::<$type>(object);
                    $body
                })
            }
        }
    };
}
pub(crate) use native_getter;

/// A getter table's entry (`set`: None for read-only attributes).
pub const fn getset(
    name: &'static CStr,
    get: ffi::getter,
    set: Option<ffi::setter>,
    doc: &'static CStr,
) -> ffi::PyGetSetDef {
    ffi::PyGetSetDef {
        name: name.as_ptr(),
        get: Some(get),
        set,
        doc: doc.as_ptr(),
        closure: ptr::null_mut(),
    }
}

/// The entry that ends a getter table.
pub const GETSET_END: ffi::PyGetSetDef = ffi::PyGetSetDef {
    name: ptr::null(),
    get: None,
    set: None,
    doc: ptr::null(),
    closure: ptr::null_mut(),
};

/// A method table's entry (module functions and type methods alike).
pub const fn method(
    name: &'static CStr,
    meth: ffi::PyMethodDefPointer,
    flags: c_int,
    doc: &'static CStr,
) -> ffi::PyMethodDef {
    ffi::PyMethodDef {
        ml_name: name.as_ptr(),
        ml_meth: meth,
        ml_flags: flags,
        ml_doc: doc.as_ptr(),
    }
}

/// A type slot, as `TypeSpec::slots` lists them.
pub fn slot(slot: c_int, pfunc: *mut c_void) -> ffi::PyType_Slot {
    ffi::PyType_Slot { slot, pfunc }
}

/// CPython's fields of an instance, null unless its type asks for them (see [`TypeSpec`]).
#[repr(C)]
struct Extras {
    dict: *mut ffi::PyObject,
    weak_references: *mut ffi::PyObject,
    vectorcall: Option<ffi::vectorcallfunc>,
}

/// An instance of a [`NativeType`]: the object header, CPython's fields, then the Rust value.
#[repr(C)]
struct Instance<T> {
    head: ffi::PyObject,
    extras: Extras,
    value: T,
}

/// A Rust value carried by the instances of a [`NativeType`].
pub trait NativeValue: Send + Sync + 'static {
    /// The objects the value holds, which the cycle collector visits in types whose
    /// instances have attributes (and so may be part of a cycle).
    fn held(&self) -> &[StrongRef] {
        &[]
    }
}

/// A final heap type whose instances carry a `T`, made in one interpreter
/// and used only there.
pub struct NativeType<T> {
    object: StrongRef,
    vectorcall: Option<ffi::vectorcallfunc>,
    _values: PhantomData<fn() -> T>,
}

/// What a type defines besides deallocation and refusing `Type()`.
pub struct TypeSpec {
    /// "framehook.Name": the module, for pickling and reprs, then the name.
    pub name: &'static CStr,
    pub doc: &'static CStr,
    /// Extra slots (getters, methods, repr, hash, comparison, a `tp_new`...).
    pub slots: Vec<ffi::PyType_Slot>,
    /// Instances have a `__dict__` and take weak references; the cycle collector
    /// tracks them, visiting what their value holds ([`NativeValue::held`]).
    pub attributes: bool,
    /// Calls of an instance run this (vectorcall, and `tp_call` through it).
    pub vectorcall: Option<ffi::vectorcallfunc>,
}

unsafe extern "C" fn dealloc<T>(object: *mut ffi::PyObject) {
    // SAFETY: CPython calls tp_dealloc attached, once, with an instance of a
    // NativeType<T> whose refcount reached zero; the type outlives its instances
    // (each holds a reference to it, released last).
    unsafe {
        let type_object = ffi::Py_TYPE(object);
        let instance = object.cast::<Instance<T>>();
        if ffi::PyType_IS_GC(type_object) != 0 {
            ffi::PyObject_GC_UnTrack(object.cast());
        }
        if !(*instance).extras.weak_references.is_null() {
            ffi::PyObject_ClearWeakRefs(object);
        }
        // Deallocated while an exception unwinds (the callable of a call that raised),
        // the exception stays pending: what the instance releases may run Python code.
        let py = Python::assume_attached();
        let pending = PyErr::take(py);
        ffi::Py_CLEAR(ptr::addr_of_mut!((*instance).extras.dict));
        ptr::drop_in_place(ptr::addr_of_mut!((*instance).value));
        if let Some(err) = pending {
            err.restore(py);
        }
        let free = ffi::PyType_GetSlot(type_object, ffi::Py_tp_free);
        let free: ffi::freefunc = std::mem::transmute(free);
        free(object.cast());
        ffi::Py_DecRef(type_object.cast());
    }
}

unsafe extern "C" fn traverse<T: NativeValue>(
    object: *mut ffi::PyObject,
    visit: ffi::visitproc,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: CPython calls tp_traverse attached (or with the world stopped), with a
    // live instance of a NativeType<T> with attributes; each object visited is alive.
    unsafe {
        let instance = object.cast::<Instance<T>>();
        // An instance of a heap type holds a reference to its type.
        let type_object = ffi::Py_TYPE(object).cast::<ffi::PyObject>();
        let dict = (*instance).extras.dict;
        let held = (*instance).value.held().iter().map(StrongRef::as_ptr);
        for visited in [type_object, dict].into_iter().chain(held) {
            if !visited.is_null() {
                let status = visit(visited, arg);
                if status != 0 {
                    return status;
                }
            }
        }
        0
    }
}

/// Breaks cycles through an instance's `__dict__` (what its value holds stays:
/// cycles through it are broken by the objects it leads to).
unsafe extern "C" fn clear<T>(object: *mut ffi::PyObject) -> c_int {
    // SAFETY: CPython calls tp_clear attached, with a live instance of a NativeType<T>.
    unsafe { ffi::Py_CLEAR(ptr::addr_of_mut!((*object.cast::<Instance<T>>()).extras.dict)) };
    0
}

/// The `__dict__` of instances of types with attributes (such types have no other getters).
static DICT_GETSET: CTable<[ffi::PyGetSetDef; 2]> = CTable([
    ffi::PyGetSetDef {
        name: c"__dict__".as_ptr(),
        get: Some(ffi::PyObject_GenericGetDict),
        set: Some(ffi::PyObject_GenericSetDict),
        doc: ptr::null(),
        closure: ptr::null_mut(),
    },
    GETSET_END,
]);

/// A read-only `Py_ssize_t` member: how `PyType_FromSpec` learns the offsets of
/// CPython's fields (`__dictoffset__`, `__weaklistoffset__`, `__vectorcalloffset__`).
fn offset_member(name: &'static CStr, offset: usize) -> ffi::PyMemberDef {
    ffi::PyMemberDef {
        name: name.as_ptr(),
        type_code: ffi::Py_T_PYSSIZET,
        offset: ffi::Py_ssize_t::try_from(offset).expect("small instances"),
        flags: ffi::Py_READONLY,
        doc: ptr::null(),
    }
}

unsafe extern "C" fn refuse_new(
    subtype: *mut ffi::PyTypeObject,
    _args: *mut ffi::PyObject,
    _kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls tp_new attached.
    unsafe {
        ffi_body(|py| {
            let type_object = Bound::from_borrowed_ptr(py, subtype.cast());
            let module = type_object.getattr("__module__")?;
            let name = type_object.getattr("__qualname__")?;
            Err(new_error::<PyTypeError>(
                py,
                format!("cannot create '{module}.{name}' instances: framehook makes them"),
            ))
        })
    }
}

impl<T: NativeValue> NativeType<T> {
    /// Makes the type in the current interpreter. Instances cannot be made from
    /// Python unless `spec` has its own `Py_tp_new`.
    pub fn new(py: Python<'_>, spec: TypeSpec) -> PyResult<Self> {
        let mut slots = vec![
            slot(ffi::Py_tp_dealloc, dealloc::<T> as *mut c_void),
            slot(ffi::Py_tp_doc, spec.doc.as_ptr().cast_mut().cast()),
        ];
        if !spec.slots.iter().any(|slot| slot.slot == ffi::Py_tp_new) {
            slots.push(slot(ffi::Py_tp_new, refuse_new as *mut c_void));
        }
        let extras = std::mem::offset_of!(Instance<T>, extras);
        let mut flags = ffi::Py_TPFLAGS_DEFAULT;
        let mut members = Vec::new();
        if spec.attributes {
            flags |= ffi::Py_TPFLAGS_HAVE_GC;
            members.push(offset_member(
                c"__dictoffset__",
                extras + std::mem::offset_of!(Extras, dict),
            ));
            members.push(offset_member(
                c"__weaklistoffset__",
                extras + std::mem::offset_of!(Extras, weak_references),
            ));
            slots.push(slot(ffi::Py_tp_traverse, traverse::<T> as *mut c_void));
            slots.push(slot(ffi::Py_tp_clear, clear::<T> as *mut c_void));
            assert!(
                !spec.slots.iter().any(|slot| slot.slot == ffi::Py_tp_getset),
                "a type with attributes has no getters besides __dict__"
            );
            slots.push(slot(ffi::Py_tp_getset, DICT_GETSET.as_mut_ptr()));
        }
        if spec.vectorcall.is_some() {
            flags |= ffi::Py_TPFLAGS_HAVE_VECTORCALL;
            members.push(offset_member(
                c"__vectorcalloffset__",
                extras + std::mem::offset_of!(Extras, vectorcall),
            ));
            slots.push(slot(ffi::Py_tp_call, ffi::PyVectorcall_Call as *mut c_void));
        }
        if !members.is_empty() {
            members.push(ffi::PyMemberDef::default());
            slots.push(slot(ffi::Py_tp_members, members.as_mut_ptr().cast()));
        }
        slots.extend(spec.slots);
        slots.push(slot(0, ptr::null_mut()));
        let mut type_spec = ffi::PyType_Spec {
            name: spec.name.as_ptr(),
            basicsize: c_int::try_from(std::mem::size_of::<Instance<T>>()).expect("small instances"),
            itemsize: 0,
            flags: flags as _,
            slots: slots.as_mut_ptr(),
        };
        // SAFETY: attached; the spec, slots and members are valid for the call (CPython
        // copies what it keeps, except the name, the doc and the tables, which are static).
        let object = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyType_FromSpec(&mut type_spec)) }?;
        Ok(Self {
            object: StrongRef::from_owned(object),
            vectorcall: spec.vectorcall,
            _values: PhantomData,
        })
    }

    pub fn type_object<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.object.bind(py)
    }

    fn type_ptr(&self) -> *mut ffi::PyTypeObject {
        self.object.as_ptr().cast()
    }

    /// A new instance holding `value`.
    pub fn instantiate<'py>(&self, py: Python<'py>, value: T) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: attached; the type is a live heap type of this interpreter whose
        // instances are `Instance<T>`s (its basicsize).
        unsafe {
            // Zeroed, and tracked by the cycle collector if the type is: nothing runs
            // it before the value is written.
            let object = ffi::PyType_GenericAlloc(self.type_ptr(), 0);
            let object = Bound::from_owned_ptr_or_err(py, object)?;
            let instance = object.as_ptr().cast::<Instance<T>>();
            ptr::write(ptr::addr_of_mut!((*instance).extras.vectorcall), self.vectorcall);
            ptr::write(ptr::addr_of_mut!((*instance).value), value);
            Ok(object)
        }
    }

    /// The value of `object` if it is an instance of this type.
    pub fn value<'a>(&self, object: &'a Bound<'_, PyAny>) -> Option<&'a T> {
        // SAFETY: an object of exactly this (final) type is an `Instance<T>`.
        (unsafe { ffi::Py_TYPE(object.as_ptr()) } == self.type_ptr())
            .then(|| unsafe { instance_value(object.as_ptr()) })
    }
}

/// The value of an instance of a `NativeType<T>`, in that type's slots.
///
/// # Safety
/// `object` is a live instance of a `NativeType<T>`, alive for `'a`.
pub unsafe fn instance_value<'a, T>(object: *mut ffi::PyObject) -> &'a T {
    // SAFETY: guaranteed by the caller.
    unsafe { &(*object.cast::<Instance<T>>()).value }
}

/// The arguments of a function taking `positional` then keyword-only
/// `keywords`, all optional here (callers check what they require), in that
/// order; errors worded as CPython words them.
///
/// # Safety
/// `args` is a tuple and `kwargs` a dict or NULL, both borrowed and alive.
pub(crate) unsafe fn parse_arguments<'py>(
    py: Python<'py>,
    function: &str,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
    positional: &[&str],
    keywords: &[&str],
) -> PyResult<Vec<Option<Bound<'py, PyAny>>>> {
    // SAFETY: guaranteed by the caller.
    // CPython passes a tuple, a dict or NULL, and str keys (checked casts would make lazy errors).
    let args = unsafe { Bound::from_borrowed_ptr(py, args).cast_into_unchecked::<PyTuple>() };
    // SAFETY: as above.
    let kwargs = unsafe { Bound::from_borrowed_ptr_or_opt(py, kwargs) };
    if args.len() > positional.len() {
        return Err(new_error::<PyTypeError>(
            py,
            format!(
                "{function}() takes {} positional argument{} but {} were given",
                positional.len(),
                if positional.len() == 1 { "" } else { "s" },
                args.len()
            ),
        ));
    }
    let mut values: Vec<Option<Bound<'py, PyAny>>> = args.iter().map(Some).collect();
    values.resize(positional.len() + keywords.len(), None);
    if let Some(kwargs) = kwargs {
        // SAFETY: as above.
        for (key, value) in unsafe { kwargs.cast_into_unchecked::<PyDict>() }.iter() {
            // SAFETY: as above.
            let key = unsafe { key.cast_into_unchecked::<PyString>() };
            let key = key.to_str()?;
            let Some(index) = positional.iter().chain(keywords).position(|name| *name == key) else {
                return Err(new_error::<PyTypeError>(
                    py,
                    format!("{function}() got an unexpected keyword argument '{key}'"),
                ));
            };
            if values[index].is_some() {
                return Err(new_error::<PyTypeError>(
                    py,
                    format!("{function}() got multiple values for argument '{key}'"),
                ));
            }
            values[index] = Some(value);
        }
    }
    Ok(values)
}
