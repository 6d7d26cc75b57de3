//! Python objects the VM compares with and calls, looked up once per translation.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::hookapi::pyobject::{import, imported};
use crate::sot::translator::pyutil::builtin;

/// Python objects the VM uses, looked up once per translation.
pub struct Known<'py> {
    pub operator: Bound<'py, PyAny>,
    operator_namespace: Bound<'py, PyDict>,
    /// The module `builtins` as it is now, for the names user code reads (the VM's own
    /// uses of builtins are `pyutil::builtin`'s).
    pub builtins: Bound<'py, PyAny>,
    pub function_type: Bound<'py, PyAny>,
    pub method_type: Bound<'py, PyAny>,
    pub property_type: Bound<'py, PyAny>,
    /// A `__slots__` entry's descriptor.
    pub member_descriptor_type: Bound<'py, PyAny>,
    /// The C descriptor of `__dict__` (and other computed attributes of C types).
    pub getset_descriptor_type: Bound<'py, PyAny>,
    pub staticmethod_type: Bound<'py, PyAny>,
    pub classmethod_type: Bound<'py, PyAny>,
    /// Methods of builtin types (`str.join`, `object.__init__`): unbound C functions.
    pub c_method_types: Bound<'py, PyTuple>,
    pub object_getattribute: Bound<'py, PyAny>,
    pub object_setattr: Bound<'py, PyAny>,
    pub type_setattr: Bound<'py, PyAny>,
    /// `BaseException.__setattr__`: CPython's generic store (`PyObject_GenericSetAttr`), as
    /// `object`'s, defined on the type itself.
    pub exception_setattr: Bound<'py, PyAny>,
    pub object_new: Bound<'py, PyAny>,
    pub object_init: Bound<'py, PyAny>,
    /// `types.MappingProxyType.get`, the method a class's `__dict__` answers `get` with.
    pub mappingproxy_get: Bound<'py, PyAny>,
    /// `io.StringIO` and its `write`: a write to one from the frame is replayed in order.
    pub string_io: Bound<'py, PyAny>,
    pub string_io_write: Bound<'py, PyAny>,
    /// `copy.copy`, where the module is imported (looking does not import it).
    pub copy_copy: Option<Bound<'py, PyAny>>,
    /// A C slot method bound to an object (`object.__setattr__.__get__`).
    pub method_wrapper_type: Bound<'py, PyAny>,
    pub module_type: Bound<'py, PyAny>,
    pub range_type: Bound<'py, PyAny>,
    pub list_iterator_type: Bound<'py, PyAny>,
    /// `collections.OrderedDict`: read as a dict (a layer's table of sublayers).
    pub ordered_dict_type: Bound<'py, PyAny>,
    /// The type of a namedtuple's fields, a C descriptor reading an item (a heap type from
    /// 3.13 on).
    pub tuple_getter_type: Bound<'py, PyAny>,
    pub enum_type: Bound<'py, PyAny>,
    /// `threading.local`'s type (`_thread._local`).
    pub thread_local_type: Bound<'py, PyAny>,
    /// `functools.lru_cache`'s wrapper of a function.
    pub lru_cache_type: Bound<'py, PyAny>,
    /// `functools.partial` as the generated code makes it again (exactly: a subclass's
    /// instances, or another module's partial type, are their own).
    pub partial_type: Bound<'py, PyAny>,
    pub none: Bound<'py, PyAny>,
}

impl<'py> Known<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Self> {
        let types = import(py, "types")?;
        let collections = import(py, "collections")?;
        let object = builtin(py, "object")?;
        let operator = import(py, "operator")?;
        Ok(Self {
            operator_namespace: operator.dict(),
            operator: operator.into_any(),
            function_type: types.getattr(pyo3::intern!(types.py(), "FunctionType"))?,
            method_type: types.getattr(pyo3::intern!(types.py(), "MethodType"))?,
            module_type: types.getattr(pyo3::intern!(types.py(), "ModuleType"))?,
            property_type: builtin(py, "property")?,
            member_descriptor_type: types.getattr(pyo3::intern!(types.py(), "MemberDescriptorType"))?,
            getset_descriptor_type: types.getattr(pyo3::intern!(types.py(), "GetSetDescriptorType"))?,
            staticmethod_type: builtin(py, "staticmethod")?,
            classmethod_type: builtin(py, "classmethod")?,
            c_method_types: PyTuple::new(
                py,
                [
                    types.getattr(pyo3::intern!(types.py(), "MethodDescriptorType"))?,
                    types.getattr(pyo3::intern!(types.py(), "WrapperDescriptorType"))?,
                ],
            )?,
            range_type: builtin(py, "range")?,
            list_iterator_type: builtin(py, "iter")?
                .call1((PyList::empty(py),))?
                .get_type()
                .into_any(),
            ordered_dict_type: collections.getattr(pyo3::intern!(collections.py(), "OrderedDict"))?,
            tuple_getter_type: collections.getattr(pyo3::intern!(collections.py(), "_tuplegetter"))?,
            enum_type: import(py, "enum")?.getattr("Enum")?,
            thread_local_type: import(py, "_thread")?.getattr("_local")?,
            lru_cache_type: import(py, "functools")?.getattr("_lru_cache_wrapper")?,
            partial_type: import(py, "framehook.sot._translate")?.getattr("_partial_type")?,
            object_getattribute: object.getattr(pyo3::intern!(object.py(), "__getattribute__"))?,
            object_setattr: object.getattr(pyo3::intern!(object.py(), "__setattr__"))?,
            type_setattr: builtin(py, "type")?.getattr("__setattr__")?,
            exception_setattr: builtin(py, "BaseException")?.getattr("__setattr__")?,
            object_new: object.getattr(pyo3::intern!(object.py(), "__new__"))?,
            object_init: object.getattr(pyo3::intern!(object.py(), "__init__"))?,
            mappingproxy_get: types
                .getattr(pyo3::intern!(types.py(), "MappingProxyType"))?
                .getattr("get")?,
            string_io: import(py, "io")?.getattr("StringIO")?,
            string_io_write: import(py, "io")?.getattr("StringIO")?.getattr("write")?,
            copy_copy: imported(py, "copy")
                .and_then(|module| module.getattr(pyo3::intern!(module.py(), "copy")).ok()),
            method_wrapper_type: types.getattr(pyo3::intern!(types.py(), "MethodWrapperType"))?,
            builtins: import(py, "builtins")?.into_any(),
            none: py.None().into_bound(py),
        })
    }

    pub fn op(&self, name: &str) -> PyResult<Bound<'py, PyAny>> {
        self.operator.getattr(name)
    }

    /// Whether `function` is the `operator` module's function `name` (looked up in the
    /// module's namespace: most functions asked about are not there, and a failed
    /// attribute read makes an exception).
    pub fn is_op_named(&self, name: &str, function: &Bound<'py, PyAny>) -> bool {
        self.operator_namespace
            .get_item(name)
            .ok()
            .flatten()
            .is_some_and(|found| found.is(function))
    }
}
