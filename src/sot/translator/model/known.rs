//! Python objects the VM compares with and calls, looked up once per process.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::hookapi::pyobject::{import, imported};
use crate::sot::translator::pyutil::{builtin, interned};

/// The struct of objects the VM uses (`Known`, bound for a translation) and the one held
/// for the process (`Held`), from one list: each name, its type, and how it is looked up
/// (given the modules bound to the names in the header). The objects after `@held_only`
/// are held, never bound for a translation (code generation and the generated code's
/// helpers read them through `held`).
macro_rules! known_objects {
    (
        ($py:ident, $types:ident, $collections:ident, $object:ident, $operator:ident)
        $( $(#[$doc:meta])* $name:ident: $ty:ty = $init:expr; )*
        @held_only
        $( $(#[$held_doc:meta])* $held_name:ident: $held_ty:ty = $held_init:expr; )*
    ) => {
        /// Python objects the VM uses: looked up once for the process (types, modules and
        /// functions whose identity never changes), bound for each translation.
        pub struct Known<'py> {
            $( $(#[$doc])* pub $name: Bound<'py, $ty>, )*
            /// `copy.copy`, where the module is imported (looking does not import it; asked
            /// per translation, as the program may import it later).
            pub copy_copy: Option<Bound<'py, PyAny>>,
        }

        /// The objects as held for the process (`held`).
        pub struct Held {
            $( pub $name: Py<$ty>, )*
            $( $(#[$held_doc])* pub $held_name: Py<$held_ty>, )*
        }

        impl Held {
            fn look_up($py: Python<'_>) -> PyResult<Self> {
                let $types = import($py, "types")?;
                let $collections = import($py, "collections")?;
                let $object = builtin($py, "object")?;
                let $operator = import($py, "operator")?;
                Ok(Self {
                    $( $name: { let found: Bound<'_, $ty> = $init; found.unbind() }, )*
                    $( $held_name: { let found: Bound<'_, $held_ty> = $held_init; found.unbind() }, )*
                })
            }

            fn bind<'py>(&self, py: Python<'py>) -> Known<'py> {
                Known {
                    $( $name: self.$name.bind(py).clone(), )*
                    copy_copy: imported(py, "copy")
                        .and_then(|module| module.getattr(pyo3::intern!(py, "copy")).ok()),
                }
            }
        }
    };
}

known_objects! {
    (py, types, collections, object, operator)
    operator: PyAny = operator.clone().into_any();
    operator_namespace: PyDict = operator.dict();
    /// What `operator`'s functions (written in C) are bound to: their module, `_operator`
    /// (None where they are not C functions; `is_op_named` decides).
    operator_functions_owner: PyAny = operator
        .getattr(pyo3::intern!(py, "add"))?
        .getattr(pyo3::intern!(py, "__self__"))
        .unwrap_or_else(|_| py.None().into_bound(py));
    /// The module `builtins` (its namespace as it is now, for the names user code reads;
    /// the VM's own uses of builtins are `pyutil::builtin`'s).
    builtins: PyAny = import(py, "builtins")?.into_any();
    function_type: PyAny = types.getattr(pyo3::intern!(py, "FunctionType"))?;
    method_type: PyAny = types.getattr(pyo3::intern!(py, "MethodType"))?;
    property_type: PyAny = builtin(py, "property")?;
    /// A `__slots__` entry's descriptor.
    member_descriptor_type: PyAny = types.getattr(pyo3::intern!(py, "MemberDescriptorType"))?;
    /// The C descriptor of `__dict__` (and other computed attributes of C types).
    getset_descriptor_type: PyAny = types.getattr(pyo3::intern!(py, "GetSetDescriptorType"))?;
    staticmethod_type: PyAny = builtin(py, "staticmethod")?;
    classmethod_type: PyAny = builtin(py, "classmethod")?;
    /// Methods of builtin types (`str.join`, `object.__init__`): unbound C functions.
    c_method_types: PyTuple = PyTuple::new(
        py,
        [
            types.getattr(pyo3::intern!(py, "MethodDescriptorType"))?,
            types.getattr(pyo3::intern!(py, "WrapperDescriptorType"))?,
        ],
    )?;
    object_getattribute: PyAny = object.getattr(pyo3::intern!(py, "__getattribute__"))?;
    object_setattr: PyAny = object.getattr(pyo3::intern!(py, "__setattr__"))?;
    type_setattr: PyAny = builtin(py, "type")?.getattr("__setattr__")?;
    /// `BaseException.__setattr__`: CPython's generic store (`PyObject_GenericSetAttr`), as
    /// `object`'s, defined on the type itself.
    exception_setattr: PyAny = builtin(py, "BaseException")?.getattr("__setattr__")?;
    object_new: PyAny = object.getattr(pyo3::intern!(py, "__new__"))?;
    /// `os.fspath` (a builtin of `posix`/`nt`; `os` is imported at start-up).
    fspath: PyAny = import(py, "os")?.getattr(pyo3::intern!(py, "fspath"))?;
    object_init: PyAny = object.getattr(pyo3::intern!(py, "__init__"))?;
    /// `types.MappingProxyType.get`, the method a class's `__dict__` answers `get` with.
    mappingproxy_get: PyAny = types.getattr(pyo3::intern!(py, "MappingProxyType"))?.getattr("get")?;
    /// `io.StringIO` and its `write`: a write to one from the frame is replayed in order.
    string_io: PyAny = import(py, "io")?.getattr("StringIO")?;
    string_io_write: PyAny = import(py, "io")?.getattr("StringIO")?.getattr("write")?;
    /// A C slot method bound to an object (`object.__setattr__.__get__`).
    method_wrapper_type: PyAny = types.getattr(pyo3::intern!(py, "MethodWrapperType"))?;
    module_type: PyAny = types.getattr(pyo3::intern!(py, "ModuleType"))?;
    range_type: PyAny = builtin(py, "range")?;
    list_iterator_type: PyAny = builtin(py, "iter")?.call1((PyList::empty(py),))?.get_type().into_any();
    /// `collections.OrderedDict`: read as a dict (a layer's table of sublayers).
    ordered_dict_type: PyAny = collections.getattr(pyo3::intern!(py, "OrderedDict"))?;
    /// The type of a namedtuple's fields, a C descriptor reading an item (a heap type from
    /// 3.13 on).
    tuple_getter_type: PyAny = collections.getattr(pyo3::intern!(py, "_tuplegetter"))?;
    enum_type: PyAny = import(py, "enum")?.getattr("Enum")?;
    /// `threading.local`'s type (`_thread._local`).
    thread_local_type: PyAny = import(py, "_thread")?.getattr("_local")?;
    /// `threading.Lock()`'s and `threading.RLock()`'s types, and the function that makes a
    /// lock (`threading.Lock` up to 3.12; the type itself from 3.13 on).
    lock_type: PyAny = import(py, "_thread")?.getattr("LockType")?;
    rlock_type: PyAny = import(py, "_thread")?.getattr("RLock")?;
    allocate_lock: PyAny = import(py, "_thread")?.getattr("allocate_lock")?;
    /// `functools.lru_cache`'s wrapper of a function.
    lru_cache_type: PyAny = import(py, "functools")?.getattr("_lru_cache_wrapper")?;
    functools_reduce: PyAny = import(py, "functools")?.getattr("reduce")?;
    /// `functools.partial` as the generated code makes it again (exactly: a subclass's
    /// instances, or another module's partial type, are their own).
    partial_type: PyAny = import(py, "framehook.sot._translate")?.getattr("_partial_type")?;
    none: PyAny = py.None().into_bound(py);
    @held_only
    /// `types.CellType`: the cells of closures the generated code makes.
    cell_type: PyAny = types.getattr(pyo3::intern!(py, "CellType"))?;
    /// `weakref.ref`: how a code's resume functions are kept.
    weak_ref_type: PyAny = import(py, "weakref")?.getattr("ref")?;
}

/// Looked up at the process's first translation.
static HELD: pyo3::sync::PyOnceLock<Held> = pyo3::sync::PyOnceLock::new();

/// The objects held for the process, one at a time, without binding the rest: for code
/// that runs where no translation's `Known` is bound (code generation, the helpers the
/// generated code calls).
pub fn held(py: Python<'_>) -> PyResult<&'static Held> {
    HELD.get_or_try_init(py, || Held::look_up(py))
}

impl<'py> Known<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Self> {
        Ok(held(py)?.bind(py))
    }

    pub fn op(&self, name: &str) -> PyResult<Bound<'py, PyAny>> {
        self.operator.getattr(interned(self.operator.py(), name))
    }

    /// Whether `obj` is a lock or a reentrant lock of `_thread`'s (`threading.Lock()`,
    /// `threading.RLock()`).
    pub fn is_lock(&self, obj: &Bound<'py, PyAny>) -> bool {
        let ty = obj.get_type();
        ty.is(&self.lock_type) || ty.is(&self.rlock_type)
    }

    /// Whether `obj` is an unbound C method (`c_method_types`: neither type can be
    /// subclassed, so its exact type says, without `isinstance` of a tuple).
    pub fn is_c_method(&self, obj: &Bound<'py, PyAny>) -> bool {
        let ty = obj.get_type();
        self.c_method_types.iter().any(|t| ty.is(&t))
    }

    /// Whether `function` is the `operator` module's function `name` (looked up in the
    /// module's namespace: most functions asked about are not there, and a failed
    /// attribute read makes an exception).
    pub fn is_op_named(&self, name: &Bound<'py, PyString>, function: &Bound<'py, PyAny>) -> bool {
        self.operator_namespace
            .get_item(name)
            .ok()
            .flatten()
            .is_some_and(|found| found.is(function))
    }
}
