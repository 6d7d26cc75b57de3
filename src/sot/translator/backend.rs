//! A tensor backend as the translator sees it: the Python object registered with
//! `framehook.sot.register_backend`, with what it declares read once per session.

use rustc_hash::FxHashMap;
use std::sync::{Arc, OnceLock};

use framehook_bytecode::Table;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::cache::CodeCaches;
use super::declared::{optional, Declared};
use super::guard::check::Check;
use super::model::code::CodeInfo;
use super::pyutil::{is_heap_type, keeping_warnings, InstanceTest};
use crate::hookapi::pyobject::{imported, StrongRef};

/// How a translation treats the code of a function it meets (`Backend::code_kind`): the
/// one place that decides.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CodeKind {
    /// The user's code, and modules the session traces: inlined, translated as a frame.
    Traced,
    /// The standard library: never translated as a frame; a call of one of its functions
    /// is inlined within a budget, else the whole call is a graph break (`vm::library`).
    Library,
    /// The backend's own files, numpy's and framehook's: never entered (their functions
    /// are the backend's operations, modeled, or breaks).
    Closed,
}

/// A backend as one translation sees it: what it declared, and what this translation asked.
pub struct Backend<'py> {
    pub object: Bound<'py, PyAny>,
    declared: Arc<Declared>,
    table: &'static Table,
    tensor_types: InstanceTest<'py>,
    array_types: Option<InstanceTest<'py>>,
    /// numpy's directory, closed where it would be a library's (a numpy installed apart
    /// from the standard library is translated as before, under another backend).
    numpy_prefix: Option<String>,
    /// The standard library's functions the VM runs as user code, of the modules imported
    /// by now (`traced_library_codes`).
    library_codes: Arc<Vec<StrongRef>>,
    is_op: Bound<'py, PyAny>,
    is_constant_operand: Bound<'py, PyAny>,
    example: Bound<'py, PyAny>,
    /// `call_example(function, args, kwargs)`: an operation run on examples while
    /// translating, the state it changes outside its operands put back (a layer's buffers).
    call_example: Option<Bound<'py, PyAny>>,
    /// `layer_store(layer, name, value_type)`: the tables of the layer (its attributes, dicts)
    /// whose entry `name` must be absent for `layer.name = value` to only make `layer.name`
    /// give the value (replayed after the graph), or None.
    layer_store: Option<Bound<'py, PyAny>>,
    /// `forward_of(obj)`: the function a layer's call runs, to translate in its place.
    forward_of: Option<Bound<'py, PyAny>>,
    /// `construct(cls, args, kwargs)`: an object the translation may make while translating
    /// and the generated code makes again, or None; asked for subclasses of
    /// `constructed_types` only.
    construct: Option<(Bound<'py, PyAny>, Bound<'py, PyTuple>)>,
    /// `is_op`'s answers in this translation, by address (the object held, so that the
    /// address stays its own): a function is asked at each of its calls.
    is_op_answers: std::cell::RefCell<FxHashMap<usize, (Bound<'py, PyAny>, bool)>>,
    /// Where each code's decoded instructions are kept (its co_extra).
    caches: CodeCaches,
}

/// Standard-library functions and methods the VM runs as it runs user code: short, plain
/// Python, and exact under the VM's rules (`with contextlib.suppress(KeyError):` needs no
/// break; `typing.cast` hands its value back). By module and dotted path.
const TRACED_LIBRARY: &[(&str, &[&str])] = &[
    (
        "contextlib",
        &[
            "nullcontext.__init__",
            "nullcontext.__enter__",
            "nullcontext.__exit__",
            "suppress.__init__",
            "suppress.__enter__",
            "suppress.__exit__",
        ],
    ),
    ("typing", &["cast"]),
];

/// Of the modules the program has imported: a module it has not cannot have handed it
/// one of these functions, and importing it here would change the program's `sys.modules`.
/// Kept for the process once every module is imported (the functions are the library's
/// own: a program that replaces one hands over another function, never traced as these).
fn traced_library_codes(py: Python<'_>) -> PyResult<Arc<Vec<StrongRef>>> {
    static ALL_IMPORTED: OnceLock<Arc<Vec<StrongRef>>> = OnceLock::new();
    if let Some(codes) = ALL_IMPORTED.get() {
        return Ok(codes.clone());
    }
    let mut codes = Vec::new();
    let mut all_imported = true;
    for (module, paths) in TRACED_LIBRARY {
        let Some(module) = imported(py, module) else {
            all_imported = false;
            continue;
        };
        for path in *paths {
            let mut function = module.clone();
            for name in path.split('.') {
                function = function.getattr(name)?;
            }
            codes.push(StrongRef::new(
                &function.getattr(pyo3::intern!(function.py(), "__code__"))?,
            ));
        }
    }
    let codes = Arc::new(codes);
    Ok(match all_imported {
        true => ALL_IMPORTED.get_or_init(|| codes).clone(),
        false => codes,
    })
}

impl<'py> Backend<'py> {
    pub fn new(
        py: Python<'py>,
        table: &'static Table,
        caches: CodeCaches,
        declared: Arc<Declared>,
    ) -> PyResult<Self> {
        // numpy's functions are operations (or breaks) for every backend, never a library's
        // code to run instruction by instruction.
        let numpy_prefix = imported(py, "numpy")
            .and_then(|numpy| numpy.getattr(pyo3::intern!(py, "__file__")).ok())
            .and_then(|file| file.extract::<String>().ok())
            .and_then(|file| file.rsplit_once('/').map(|(dir, _)| format!("{dir}/")));
        let object = declared.object.bind(py).clone();
        Ok(Self {
            is_op: object.getattr(pyo3::intern!(py, "is_op"))?,
            is_constant_operand: object.getattr(pyo3::intern!(py, "is_constant_operand"))?,
            example: object.getattr(pyo3::intern!(py, "example"))?,
            call_example: optional(&object, "call_example")?,
            forward_of: optional(&object, "forward_of")?,
            layer_store: optional(&object, "layer_store")?,
            construct: match (optional(&object, "construct")?, &declared.constructed_types) {
                (Some(construct), Some(types)) => Some((construct, types.bind(py).clone())),
                _ => None,
            },
            object,
            table,
            tensor_types: InstanceTest::new(declared.tensor_types.bind(py).clone())?,
            array_types: declared
                .array_types
                .as_ref()
                .map(|types| InstanceTest::new(types.bind(py).clone()))
                .transpose()?,
            numpy_prefix,
            library_codes: traced_library_codes(py)?,
            is_op_answers: Default::default(),
            declared,
            caches,
        })
    }

    pub fn declared(&self) -> &Declared {
        &self.declared
    }

    /// A tensor, or an array the backend takes as one (`is_array`).
    pub fn is_tensor(&self, value: &Bound<'py, PyAny>) -> bool {
        self.tensor_types.test(value) || self.is_array(value)
    }

    pub fn is_array(&self, value: &Bound<'py, PyAny>) -> bool {
        self.array_types.as_ref().is_some_and(|types| types.test(value))
    }

    pub fn is_array_function(&self, function: &Bound<'py, PyAny>) -> bool {
        self.declared
            .array_functions
            .contains_key(&(function.as_ptr() as usize))
    }

    /// The backend's `is_op(function)`, asked once per session where the session keeps
    /// the answer (`declared::OpAnswers`), else once per translation.
    pub fn is_op(&self, function: &Bound<'py, PyAny>) -> PyResult<bool> {
        let address = function.as_ptr() as usize;
        if let Some((_, answer)) = self.is_op_answers.borrow().get(&address) {
            return Ok(*answer);
        }
        let answer = match self.declared.op_answers.get(function) {
            Some(answer) => answer,
            None if !self.declared.may_be_op(function)? => false,
            None => {
                let answer = self.is_op.call1((function,))?.is_truthy()?;
                self.declared.op_answers.keep(function, answer);
                answer
            }
        };
        self.is_op_answers
            .borrow_mut()
            .insert(address, (function.clone(), answer));
        Ok(answer)
    }

    /// Whether `cls` is one the backend may construct (a subclass of `constructed_types`).
    pub fn constructs(&self, cls: &Bound<'py, PyAny>) -> bool {
        self.construct.as_ref().is_some_and(|(_, types)| {
            cls.cast::<pyo3::types::PyType>()
                .is_ok_and(|cls| cls.is_subclass(types.as_any()).unwrap_or(false))
        })
    }

    /// Whether `obj` is a context manager of the backend's `region_types`.
    pub fn is_region(&self, obj: &Bound<'py, PyAny>) -> bool {
        self.declared
            .region_types
            .as_ref()
            .is_some_and(|types| obj.is_instance(types.bind(obj.py()).as_any()).unwrap_or(false))
    }

    /// The region type whose state `function` changes (`region_effects`), if it is one.
    pub fn region_effect_of(&self, function: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
        self.declared
            .region_effects
            .get(&(function.as_ptr() as usize))
            .map(|(_, region)| region.bind(function.py()).clone())
    }

    /// Whether a block of a region of type `region` may change the namespace `dict`.
    pub fn region_changes_namespace(&self, region: &Bound<'py, PyAny>, dict: usize) -> bool {
        self.declared
            .region_namespaces
            .iter()
            .any(|(ty, namespace)| *namespace == dict && ty.as_ptr() == region.as_ptr())
    }

    /// The object `cls(*args, **kwargs)`, for a class `constructs` accepts, made now where the
    /// backend says that making it has no effect beside the new object (a parameterless
    /// layer), else None.
    pub fn construct(
        &self,
        cls: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: &Bound<'py, pyo3::types::PyDict>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some((construct, _)) = &self.construct else {
            return Ok(None);
        };
        // Its frames run as they are: they belong to the backend's making, not to the translation.
        let made = super::session::with_session(None, || construct.call1((cls, args, kwargs)))?;
        Ok((!made.is_none()).then_some(made))
    }

    pub fn is_guarded_function(&self, function: &Bound<'py, PyAny>) -> bool {
        self.declared
            .guarded_functions
            .contains_key(&(function.as_ptr() as usize))
    }

    pub fn is_fixed_function(&self, function: &Bound<'py, PyAny>) -> bool {
        self.declared
            .fixed_functions
            .contains_key(&(function.as_ptr() as usize))
    }

    /// The backend's `is_constant_operand(value)`, or `isinstance(value,
    /// constant_operand_types)` where it declares those (a Python call per operand was a
    /// hundred-and-fiftieth of a translation).
    pub fn is_constant_operand(&self, value: &Bound<'py, PyAny>) -> bool {
        match &self.declared.constant_operand_types {
            Some(types) => value.is_instance(types.bind(value.py())).unwrap_or(false),
            None => self
                .is_constant_operand
                .call1((value,))
                .and_then(|r| r.is_truthy())
                .unwrap_or(false),
        }
    }

    /// A constant operand that is a value, not a class (a dtype, a shape): read, indexed
    /// and iterated as it is while translating.
    pub fn is_constant_value(&self, value: &Bound<'py, PyAny>) -> bool {
        !value.is_instance_of::<pyo3::types::PyType>() && self.is_constant_operand(value)
    }

    /// Whether `ty` is one of the backend's `interned_types`.
    pub fn is_interned_type(&self, ty: &Bound<'py, PyAny>) -> bool {
        self.declared.interned_types.iter().any(|t| t.is(ty))
    }

    /// Whether attribute `name` of `tensor` (a tensor or an array) follows from its guard.
    pub fn is_meta_attribute(&self, tensor: &Bound<'py, PyAny>, name: &str) -> bool {
        self.meta_attributes_of(tensor).iter().any(|m| m == name)
            || matches!(name, "ndim" | "size" | "itemsize" | "nbytes")
            || self.is_type_attribute(tensor, name)
    }

    /// Whether the tensor's exact type gives its attribute `name` for all its values (the
    /// backend's `type_attributes`: numpy's `device`): a class written in C has the
    /// attributes it was built with (a subclass's property could compute anything).
    pub fn is_type_attribute(&self, tensor: &Bound<'py, PyAny>, name: &str) -> bool {
        self.declared.type_attributes.iter().any(|m| m == name) && !is_heap_type(&tensor.get_type())
    }

    fn meta_attributes_of(&self, tensor: &Bound<'py, PyAny>) -> &[String] {
        if self.is_array(tensor) {
            &self.declared.array_meta_attributes
        } else {
            &self.declared.meta_attributes
        }
    }

    pub fn is_meta_method(&self, name: &str) -> bool {
        self.declared.meta_methods.iter().any(|m| m == name)
    }

    /// Methods of a tensor that turn it into a Python value.
    pub fn is_conversion(&self, name: &str) -> bool {
        self.declared.conversions.iter().any(|c| c == name)
    }

    /// For an object whose call runs a Python function the backend names (a model layer's
    /// `forward`, when no hook runs around it), that function, called as `function(obj, *args)`.
    pub fn forward_of(&self, value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match &self.forward_of {
            Some(forward_of) => {
                let function = forward_of.call1((value,))?;
                Ok((!function.is_none()).then_some(function))
            }
            None => Ok(None),
        }
    }

    /// The tables of `layer` whose entry `name` must be absent for `layer.name = value` (a
    /// value of `value_type`) to be a plain store (see `layer_store`), or None where the
    /// backend has no such rule.
    pub fn layer_store(
        &self,
        layer: &Bound<'py, PyAny>,
        name: &str,
        value_type: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Vec<String>>> {
        match &self.layer_store {
            Some(layer_store) => {
                let tables = layer_store.call1((layer, name, value_type))?;
                if tables.is_none() {
                    Ok(None)
                } else {
                    tables.extract().map(Some)
                }
            }
            None => Ok(None),
        }
    }

    /// The attributes guarded by value on a layer called or translated (none for
    /// another object).
    pub fn layer_attributes(&self, value: &Bound<'py, PyAny>) -> &[String] {
        if self.is_layer(value) {
            &self.declared.layer_attributes
        } else {
            &[]
        }
    }

    /// Whether `obj` is a model layer: its `__getattr__` only reads the layer's own tables
    /// (parameters, sublayers), so the translator may read attributes through it.
    pub fn is_layer(&self, obj: &Bound<'py, PyAny>) -> bool {
        self.declared
            .layer_types
            .as_ref()
            .is_some_and(|types| obj.is_instance(types.bind(obj.py()).as_any()).unwrap_or(false))
    }

    /// What the translation computes with in place of `value` (a copy, so that
    /// in-place operations do not touch the caller's tensors while translating).
    pub fn example(&self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.example.call1((value,))
    }

    /// `function(*args, **kwargs)` on examples while translating, through the backend's
    /// `call_example` where it has one: the graph's run makes the operation's effects on
    /// state outside its operands (a layer's running statistics), once. So does it show
    /// the operation's warnings, at the function's line: the example's are recorded, not
    /// shown (what the filters make an error still raises), and said (the bool).
    pub fn call_example(
        &self,
        function: &Bound<'py, PyAny>,
        args: Bound<'py, PyTuple>,
        kwargs: &Bound<'py, pyo3::types::PyDict>,
    ) -> PyResult<(PyResult<Bound<'py, PyAny>>, bool)> {
        keeping_warnings(function.py(), || match &self.call_example {
            Some(call_example) => call_example.call1((function, args, kwargs)),
            None => function.call(args, Some(kwargs)),
        })
    }

    /// The guard of a tensor (or array) input: its exact type and meta attributes.
    pub fn tensor_check(&self, value: &Bound<'py, PyAny>) -> PyResult<Check> {
        let py = value.py();
        let attributes = self
            .meta_attributes_of(value)
            .iter()
            .map(|name| {
                let key = crate::sot::translator::pyutil::interned(py, name);
                Ok((
                    StrongRef::new(key.as_any()),
                    StrongRef::new(&value.getattr(&key)?),
                ))
            })
            .collect::<PyResult<_>>()?;
        Ok(Check::Tensor {
            ty: StrongRef::new(&value.get_type().into_any()),
            attributes,
        })
    }

    /// How a translation treats `code`: traced (the user's), a library's, or closed.
    pub fn code_kind(&self, code: &Bound<'py, PyAny>) -> PyResult<CodeKind> {
        let traced_code = |traced: &StrongRef| traced.as_ptr() == code.as_ptr();
        if self.library_codes.iter().any(traced_code) || self.declared.traced_codes.iter().any(traced_code) {
            return Ok(CodeKind::Traced);
        }
        let filename: String = code.getattr(pyo3::intern!(code.py(), "co_filename"))?.extract()?;
        let under = |prefixes: &[String]| prefixes.iter().any(|p| filename.starts_with(p.as_str()));
        let is_library = under(&self.declared.library_prefixes);
        Ok(if under(&self.declared.traced_prefixes) {
            CodeKind::Traced
        } else if under(&self.declared.closed_prefixes) || (is_library && under(self.numpy_prefix.as_slice()))
        {
            CodeKind::Closed
        } else if is_library {
            CodeKind::Library
        } else {
            CodeKind::Traced
        })
    }

    /// Code the translator never translates as a frame (a library's or closed).
    pub fn is_skipped_code(&self, code: &Bound<'py, PyAny>) -> PyResult<bool> {
        Ok(self.code_kind(code)? != CodeKind::Traced)
    }

    /// A code object's decoded instructions, read once per code.
    pub fn code_info(&self, code: &Bound<'py, PyAny>) -> PyResult<Arc<CodeInfo>> {
        self.caches.get(code)?.info(self.table, code)
    }
}
