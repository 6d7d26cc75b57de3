//! What a tensor backend declares: the tables among the attributes of the object registered
//! with `framehook.sot.register_backend`, read once per session (`Config::declared`) and
//! asked through each translation's `Backend`.

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::guard::check::Pin;
use crate::hookapi::pyobject::{optional_attr, supports_weakrefs, StrongRef};
use crate::sot::translator::pyutil::interned;

/// An attribute a backend may leave out.
pub(super) fn optional<'py>(object: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    // Without an AttributeError per attribute a backend leaves out, per translation.
    let found = optional_attr(object, &interned(object.py(), name))?;
    Ok(found.filter(|value| !value.is_none()))
}

/// The functions a backend lists under `name`, by address (held, so the address stays theirs).
fn functions_by_address(object: &Bound<'_, PyAny>, name: &str) -> PyResult<FxHashMap<usize, StrongRef>> {
    match optional(object, name)? {
        Some(functions) => functions
            .try_iter()?
            .map(|function| function.map(|function| (function.as_ptr() as usize, StrongRef::new(&function))))
            .collect(),
        None => Ok(FxHashMap::default()),
    }
}

/// Functions of no arguments reading the interpreter's state, guarded as a backend's
/// `guarded_functions` are, whatever the backend: `inspect.unwrap` (under
/// `inspect.signature`) bounds its loop by `sys.getrecursionlimit()`.
const INTERPRETER_STATE_FUNCTIONS: &[(&str, &str)] = &[("sys", "getrecursionlimit")];

/// What a backend object declares (the tables among its attributes, and the prefixes the
/// session traces and closes), read at a session's first translation and kept with the
/// session (`Config::declared`): a backend's attributes are its configuration, set before it
/// is registered. Reading them again per translation cost a tenth of a resume function's.
/// Its methods are read per translation (a bound method is a new object: the session keeps
/// none).
pub struct Declared {
    pub(super) object: Py<PyAny>,
    pub(super) tensor_types: Py<PyTuple>,
    pub(super) meta_attributes: Vec<String>,
    /// Arrays of another library the backend's operations also take (numpy's, for Paddle):
    /// graph values as tensors are, guarded on `array_meta_attributes`.
    pub(super) array_types: Option<Py<PyTuple>>,
    pub(super) array_meta_attributes: Vec<String>,
    /// Functions computing on those arrays only (numpy's ufuncs): an operation where they
    /// take a tensor, a break otherwise. By address.
    pub(super) array_functions: FxHashMap<usize, StrongRef>,
    /// Tensor methods of no arguments whose result follows from the meta attributes
    /// (`dim()`): computed while translating.
    pub(super) meta_methods: Vec<String>,
    /// Tensor attributes whose value follows from the tensor's type, which its guard
    /// compares, where that type is written in C (numpy's `device`): constants.
    pub(super) type_attributes: Vec<String>,
    /// Types whose call with plain values runs no Python code and changes nothing, and
    /// gives one object for the same arguments where it interns them (numpy's builtin
    /// dtypes): such a call is that object.
    pub(super) interned_types: Vec<Py<PyAny>>,
    pub(super) conversions: Vec<String>,
    /// The standard library's files (and frozen modules'): `CodeKind::Library`.
    pub(super) library_prefixes: Vec<String>,
    /// The backend's own files and framehook's: `CodeKind::Closed`.
    pub(super) closed_prefixes: Vec<String>,
    /// Under a skip prefix but translated (the session's `trace_modules`).
    pub(super) traced_prefixes: Vec<String>,
    /// Attributes of a layer guarded with its identity (`training`).
    pub(super) layer_attributes: Vec<String>,
    /// Context managers whose `with` block sets state the backend's operations read
    /// (numpy's error state): for one it constructed, the block is a region of the graph.
    pub(super) region_types: Option<Py<PyTuple>>,
    /// Whether the compiled graph runs `_sot_assume` nodes in order, numpy's floating-point
    /// errors raising (`runs_assumptions`): a branch on a tensor's value is then assumed.
    pub(super) runs_assumptions: bool,
    /// Functions changing only the state a region type saves and restores, by address:
    /// the region type (`warnings.simplefilter`: `warnings.catch_warnings`).
    pub(super) region_effects: FxHashMap<usize, (StrongRef, StrongRef)>,
    /// The modules whose values a region type's block may change, by their dict's address:
    /// reading one of those values inside such a block breaks.
    pub(super) region_namespaces: Vec<(StrongRef, usize)>,
    /// Classes of model layers: pinned by identity and `layer_attributes`, their attributes
    /// read through their `__getattr__` (which only looks in the layer's own tables).
    pub(super) layer_types: Option<Py<PyTuple>>,
    /// The backend's codes under a skip prefix translated all the same (a container
    /// layer's forward).
    pub(super) traced_codes: Vec<StrongRef>,
    /// Functions of no arguments reading the process's state (the current device): called
    /// while translating, their result read through `Source::Called` (guarded where used).
    pub(super) guarded_functions: FxHashMap<usize, StrongRef>,
    /// Functions whose result, for the same arguments, is the same for the whole process
    /// (a build's facts: `is_compiled_with_cuda()`): called while translating. By address.
    pub(super) fixed_functions: FxHashMap<usize, StrongRef>,
    /// The classes `construct` is asked about (`constructed_types`).
    pub(super) constructed_types: Option<Py<PyTuple>>,
    /// Where the backend declares them, the classes whose instances are constant operands
    /// (`constant_operand_types`): `is_constant_operand` is then not asked in Python.
    pub(super) constant_operand_types: Option<Py<PyTuple>>,
    /// `is_op`'s answers kept for the session (`Backend::is_op`).
    pub(super) op_answers: OpAnswers,
    /// The modules a function that is an operation comes from (`op_function_modules`):
    /// another module's function is not one, unasked. Empty: every function is asked.
    pub(super) op_function_modules: Vec<String>,
}

/// `is_op`'s answers kept for the session, by address: a function is asked once per
/// session, not once per translation (a first call of a library's entry point makes tens
/// of translations, each asking about the same few hundred functions). Only callables that
/// take weak references are kept, weakly: a closure keeps its cells, a class its methods,
/// a bound method its instance, and a session keeps none of them alive.
#[derive(Default)]
pub(super) struct OpAnswers(Mutex<FxHashMap<usize, (Pin, bool)>>);

/// Answers kept at most: past it they are dropped and asked again (a program may make
/// functions as it runs).
const OP_ANSWERS_KEPT: usize = 4096;

impl OpAnswers {
    /// The answer kept for `function` (None where none is, or the object it was kept for
    /// died and another took its address).
    pub(super) fn get(&self, function: &Bound<'_, PyAny>) -> Option<bool> {
        let answers = self.0.lock();
        let (pin, answer) = answers.get(&(function.as_ptr() as usize))?;
        pin.object(function.py())
            .is_some_and(|kept| kept.is(function))
            .then_some(*answer)
    }

    /// Keeps `function`'s answer where it takes weak references (else the translation's
    /// own map has it).
    pub(super) fn keep(&self, function: &Bound<'_, PyAny>, answer: bool) {
        if !supports_weakrefs(function) {
            return;
        }
        let pin = Pin::new(function);
        let released = {
            let mut answers = self.0.lock();
            let released = match answers.len() >= OP_ANSWERS_KEPT {
                true => std::mem::take(&mut *answers),
                false => FxHashMap::default(),
            };
            answers.insert(function.as_ptr() as usize, (pin, answer));
            released
        };
        drop(released); // after the lock: releasing may run a finalizer, which may translate
    }
}

impl Declared {
    /// Whether `function` may be an operation as `op_function_modules` says: a Python or
    /// builtin function (exactly) from none of those modules, nor one under them, is not
    /// (a method of a str has no module: neither is it). Asking `is_op` in Python was a
    /// seventieth of a translation, nearly always about a library's own functions.
    pub(super) fn may_be_op(&self, function: &Bound<'_, PyAny>) -> PyResult<bool> {
        if self.op_function_modules.is_empty()
            || !(function.is_exact_instance_of::<pyo3::types::PyFunction>()
                || function.is_exact_instance_of::<pyo3::types::PyCFunction>())
        {
            return Ok(true);
        }
        let module = function.getattr(pyo3::intern!(function.py(), "__module__"))?;
        let Ok(module) = module.cast::<pyo3::types::PyString>() else {
            return Ok(false);
        };
        let module = module.to_str()?;
        Ok(self.op_function_modules.iter().any(|wanted| {
            module
                .strip_prefix(wanted.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        }))
    }

    pub fn read(
        object: &Bound<'_, PyAny>,
        skip_prefixes: &[String],
        closed_prefixes: &[String],
        traced_prefixes: &[String],
    ) -> PyResult<Self> {
        let py = object.py();
        let strings = |name: &str| -> PyResult<Vec<String>> { object.getattr(name)?.extract() };
        let names = |name: &str| -> PyResult<Vec<String>> {
            optional(object, name)?.map_or_else(|| Ok(Vec::new()), |names| names.extract())
        };
        let tuple = |name: &str| -> PyResult<Option<Py<PyTuple>>> {
            optional(object, name)?
                .map(|types| Ok(types.cast_into::<PyTuple>()?.unbind()))
                .transpose()
        };
        let mut closed = strings("skip_prefixes")?;
        closed.extend_from_slice(closed_prefixes);
        let mut traced = traced_prefixes.to_vec();
        if let Some(files) = optional(object, "traced_files")? {
            traced.extend(files.extract::<Vec<String>>()?);
        }
        Ok(Self {
            object: object.clone().unbind(),
            tensor_types: object
                .getattr(pyo3::intern!(py, "tensor_types"))?
                .cast_into::<PyTuple>()?
                .unbind(),
            meta_attributes: strings("meta_attributes")?,
            array_meta_attributes: match optional(object, "array_types")? {
                Some(_) => strings("array_meta_attributes")?,
                None => Vec::new(),
            },
            array_types: tuple("array_types")?,
            array_functions: functions_by_address(object, "array_functions")?,
            meta_methods: names("meta_methods")?,
            type_attributes: names("type_attributes")?,
            interned_types: match optional(object, "interned_types")? {
                Some(types) => types
                    .try_iter()?
                    .map(|t| t.map(Bound::unbind))
                    .collect::<PyResult<_>>()?,
                None => Vec::new(),
            },
            conversions: strings("conversions")?,
            library_prefixes: skip_prefixes.to_vec(),
            closed_prefixes: closed,
            traced_prefixes: traced,
            layer_attributes: names("layer_attributes")?,
            traced_codes: match optional(object, "traced_codes")? {
                Some(codes) => codes
                    .try_iter()?
                    .map(|code| code.map(|c| StrongRef::new(&c)))
                    .collect::<PyResult<_>>()?,
                None => Vec::new(),
            },
            constructed_types: tuple("constructed_types")?,
            constant_operand_types: tuple("constant_operand_types")?,
            op_answers: OpAnswers::default(),
            op_function_modules: names("op_function_modules")?,
            fixed_functions: functions_by_address(object, "fixed_functions")?,
            guarded_functions: {
                let mut functions = functions_by_address(object, "guarded_functions")?;
                for (module, name) in INTERPRETER_STATE_FUNCTIONS {
                    let function = py.import(*module)?.getattr(*name)?;
                    functions.insert(function.as_ptr() as usize, StrongRef::new(&function));
                }
                functions
            },
            region_types: tuple("region_types")?,
            runs_assumptions: optional(object, "runs_assumptions")?
                .map(|flag| flag.is_truthy())
                .transpose()?
                .unwrap_or(false),
            region_effects: region_effects(object)?,
            region_namespaces: region_namespaces(object)?,
            layer_types: tuple("layer_types")?,
        })
    }
}

/// The backend's `region_effects` (function -> region type), by the function's address.
fn region_effects(object: &Bound<'_, PyAny>) -> PyResult<FxHashMap<usize, (StrongRef, StrongRef)>> {
    let Some(effects) = optional(object, "region_effects")? else {
        return Ok(FxHashMap::default());
    };
    let effects = effects.cast_into::<pyo3::types::PyDict>()?;
    Ok(effects
        .iter()
        .map(|(function, region)| {
            let key = function.as_ptr() as usize;
            (key, (StrongRef::new(&function), StrongRef::new(&region)))
        })
        .collect())
}

/// The backend's `region_namespaces` (region type -> modules), as (type, module dict's address).
fn region_namespaces(object: &Bound<'_, PyAny>) -> PyResult<Vec<(StrongRef, usize)>> {
    let mut namespaces = Vec::new();
    if let Some(by_type) = optional(object, "region_namespaces")? {
        for (region, modules) in by_type.cast_into::<pyo3::types::PyDict>()?.iter() {
            for module in modules.try_iter()? {
                let dict = module?.getattr("__dict__")?;
                namespaces.push((StrongRef::new(&region), dict.as_ptr() as usize));
            }
        }
    }
    Ok(namespaces)
}
