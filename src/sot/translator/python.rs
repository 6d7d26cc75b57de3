//! The Python face of the translator: `framehook._native.SotTranslated` (what
//! `framehook.sot.translate` returns), the graph description backends compile,
//! and the counters `sot.stats` reads.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCode, PyDict, PyTuple};

use super::compile;
use super::cost::{CostModel, Route};
use super::hook::Translator;
use super::model::known::held;
use super::pyutil::{BUILTINS, BUILTIN_NAMES};
use super::session::Config;
use crate::hookapi::pyobject::{
    ffi_body, import, instance_value, method, parse_arguments, slot, CTable, NativeType, NativeValue,
    StrongRef, TypeSpec,
};
use crate::hookapi::registry::Registry;

/// A function whose calls run translated.
pub struct Translated {
    function: StrongRef,
    config: Arc<Config>,
    translator: Arc<Translator>,
    /// Its cost model chose the original: it does not keep the hook in the chain.
    parked: AtomicBool,
}

impl NativeValue for Translated {
    fn held(&self) -> &[StrongRef] {
        std::slice::from_ref(&self.function)
    }
}

impl Translated {
    fn new(
        py: Python<'_>,
        function: &Bound<'_, PyAny>,
        backend: &Bound<'_, PyAny>,
        full_graph: bool,
        cache_size: usize,
        traced_prefixes: Vec<String>,
        cost_model: bool,
    ) -> PyResult<Self> {
        if !function.is_callable() {
            return Err(PyTypeError::new_err(format!(
                "sot.translate() takes a callable, not {}",
                function.get_type().name()?
            )));
        }
        // The code whose frame is the call's own: a function's, or a bound method's.
        let own_code = function
            .getattr(pyo3::intern!(function.py(), "__func__"))
            .unwrap_or_else(|_| function.clone())
            .getattr("__code__")
            .ok()
            .map(|code| StrongRef::new(&code));
        let tracing = !traced_prefixes.is_empty();
        let translator = Translator::get(py)?;
        let config = Config::new(
            StrongRef::new(backend),
            full_graph,
            cache_size,
            traced_prefixes,
            own_code,
            cost_model,
        );
        translator.function_made(py)?;
        // Made now, so that an error below still counts the function dropped.
        let translated = Self {
            function: StrongRef::new(function),
            config,
            translator,
            parked: AtomicBool::new(false),
        };
        if tracing {
            // Library codes whose skip was remembered are asked about again.
            Registry::current(py)?.invalidate_decisions(py);
        }
        Ok(translated)
    }
}

impl Translated {
    /// Before a call that runs `route`: the hook in the chain for a translated call (put
    /// back if `framehook.clear_frame_hooks()` removed it), and left to other functions'
    /// needs once the cost model chose the original.
    fn park(&self, py: Python<'_>, route: Route) -> PyResult<()> {
        if route.translated() {
            if self
                .parked
                .compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                self.translator.function_unparked(py)?;
            }
            return self.translator.ensure_registered(py);
        }
        let chose_original = route == Route::Original;
        if chose_original
            && self
                .parked
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            self.translator.function_parked(py);
        }
        Ok(())
    }
}

impl Drop for Translated {
    fn drop(&mut self) {
        // SAFETY: dropped by the type's dealloc, attached.
        let py = unsafe { Python::assume_attached() };
        if !self.parked.load(Ordering::Acquire) {
            self.translator.function_dropped(py);
        }
    }
}

/// Runs `body` of a function CPython called as PyO3's own trampolines run theirs: with
/// PyO3 counting the thread attached, so that what the translator drops below (errors it
/// does not raise, among them) is released at once, not leaked (.cargo/config.toml).
///
/// # Safety
/// The thread is attached to the main interpreter (SOT's types exist only there), where
/// `PyGILState_Ensure` finds the thread's own state.
unsafe fn counted_attached<F>(body: F) -> *mut ffi::PyObject
where
    F: for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>>,
{
    // SAFETY: guaranteed by the caller; `attach_unchecked` leaves out the checks that
    // refuse while the interpreter finalizes, when translated functions may still run.
    unsafe { Python::attach_unchecked(|_| ffi_body(body)) }
}

/// `SotTranslated(function, backend, full_graph, cache_size, traced_prefixes, cost_model)`.
unsafe extern "C" fn translated_new(
    _subtype: *mut ffi::PyTypeObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    const NAMES: [&str; 6] = [
        "function",
        "backend",
        "full_graph",
        "cache_size",
        "traced_prefixes",
        "cost_model",
    ];
    // SAFETY: CPython calls tp_new attached (in the main interpreter, whose module has
    // the type), with a tuple and a dict or NULL.
    unsafe {
        counted_attached(|py| {
            let values = parse_arguments(py, "SotTranslated", args, kwargs, &NAMES, &[])?;
            let mut given = Vec::with_capacity(NAMES.len());
            for (value, name) in values.into_iter().zip(NAMES) {
                given.push(value.ok_or_else(|| {
                    PyTypeError::new_err(format!("SotTranslated() missing required argument '{name}'"))
                })?);
            }
            let [function, backend, full_graph, cache_size, traced_prefixes, cost_model] = given.as_slice()
            else {
                unreachable!("one value per name")
            };
            let translated = Translated::new(
                py,
                function,
                backend,
                full_graph.extract()?,
                cache_size.extract()?,
                traced_prefixes.extract()?,
                cost_model.extract()?,
            )?;
            types()?.translated.instantiate(py, translated)
        })
    }
}

/// A call of a translated function: the function's call, in a session of its config.
unsafe extern "C" fn translated_call(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls vectorcall functions attached, with a live instance of the
    // type whose instances carry this function (main interpreter only), and the call's
    // arguments, passed on as they came (the function may use the slot before `args` as
    // the caller allows).
    unsafe {
        counted_attached(|py| {
            let translated = instance_value::<Translated>(callable);
            let function = translated.function.as_ptr();
            let config = &translated.config;
            let route = config
                .cost_model
                .as_ref()
                .map_or(Route::Translated, CostModel::route);
            translated.park(py, route)?;
            let session = route.translated().then(|| Arc::clone(config));
            let call = || {
                super::session::with_session(session, || {
                    Bound::from_owned_ptr_or_err(
                        py,
                        ffi::PyObject_Vectorcall(function, args, nargsf, kwnames),
                    )
                })
            };
            let (Some(model), true) = (&config.cost_model, route.timed()) else {
                return call();
            };
            let translations = || config.stats.translations.load(Ordering::Relaxed);
            let before = translations();
            let started = Instant::now();
            let result = call();
            let elapsed = started.elapsed();
            // A call that raised took an unusual path: no sample.
            if result.is_ok() {
                model.timed(route, elapsed, translations() == before);
            }
            result
        })
    }
}

extern "C" {
    /// A bound method (CPython's C API; pyo3-ffi does not declare it).
    fn PyMethod_New(function: *mut ffi::PyObject, instance: *mut ffi::PyObject) -> *mut ffi::PyObject;
}

/// `__get__`: bound to an instance, as a function is.
unsafe extern "C" fn translated_get(
    object: *mut ffi::PyObject,
    instance: *mut ffi::PyObject,
    _owner: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls tp_descr_get attached, with a live instance, and an
    // instance or NULL/None when read from a class.
    unsafe {
        ffi_body(|py| {
            if instance.is_null() || instance == ffi::Py_None() {
                Ok(Bound::from_borrowed_ptr(py, object))
            } else {
                Bound::from_owned_ptr_or_err(py, PyMethod_New(object, instance))
            }
        })
    }
}

/// A method of `SotTranslated` taking no arguments: `body` with the instance's value.
///
/// # Safety
/// `object` is a live `SotTranslated`, the thread attached (as CPython calls methods).
unsafe fn translated_method<F>(object: *mut ffi::PyObject, body: F) -> *mut ffi::PyObject
where
    F: for<'py> FnOnce(Python<'py>, &Translated) -> PyResult<Bound<'py, PyAny>>,
{
    // SAFETY: guaranteed by the caller.
    unsafe { ffi_body(|py| body(py, instance_value::<Translated>(object))) }
}

/// `_stats()`: the counters, breaks, fallbacks and explanations, as a dict.
unsafe extern "C" fn translated_stats(
    object: *mut ffi::PyObject,
    _unused: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls methods attached, with a live instance.
    unsafe {
        translated_method(object, |py, translated| {
            Ok(super::session::stats_dict(py, &translated.config)?.into_any())
        })
    }
}

/// `_explain_translations()`: from now on, each translation is described for `sot.explain`
/// (its own, not shared with other functions).
unsafe extern "C" fn translated_explain_translations(
    object: *mut ffi::PyObject,
    _unused: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls methods attached, with a live instance.
    unsafe {
        translated_method(object, |py, translated| {
            translated
                .config
                .explaining
                .store(true, std::sync::atomic::Ordering::Relaxed);
            Ok(py.None().into_bound(py))
        })
    }
}

static TRANSLATED_METHODS: CTable<[ffi::PyMethodDef; 3]> = CTable([
    method(
        c"_stats",
        ffi::PyMethodDefPointer {
            PyCFunction: translated_stats,
        },
        ffi::METH_NOARGS,
        c"The counters, breaks, fallbacks and explanations, as a dict.",
    ),
    method(
        c"_explain_translations",
        ffi::PyMethodDefPointer {
            PyCFunction: translated_explain_translations,
        },
        ffi::METH_NOARGS,
        c"Describes each translation from now on, for sot.explain (none shared).",
    ),
    ffi::PyMethodDef::zeroed(),
]);

/// SOT's types, made once with the main interpreter's module (SOT runs only there).
struct SotTypes {
    translated: NativeType<Translated>,
}

static TYPES: OnceLock<SotTypes> = OnceLock::new();

fn types() -> PyResult<&'static SotTypes> {
    TYPES
        .get()
        .ok_or_else(|| PyRuntimeError::new_err("framehook: SOT's types are not made yet"))
}

fn make_types(py: Python<'_>) -> PyResult<SotTypes> {
    Ok(SotTypes {
        translated: NativeType::new(
            py,
            TypeSpec {
                name: c"framehook._native.SotTranslated",
                doc: c"SotTranslated(function, backend, full_graph, cache_size, traced_prefixes, cost_model)\n--\n\n\
                       A function whose calls run translated (what framehook.sot.translate returns).",
                slots: vec![
                    slot(ffi::Py_tp_new, translated_new as *mut c_void),
                    slot(ffi::Py_tp_descr_get, translated_get as *mut c_void),
                    slot(ffi::Py_tp_methods, TRANSLATED_METHODS.as_mut_ptr()),
                ],
                attributes: true,
                vectorcall: Some(translated_call),
            },
        )?,
    })
}

/// `sot.reset()`.
#[pyfunction]
fn _sot_reset() {
    super::hook::reset();
}

/// `_sot_never_translated(code)`: a code a backend made to run a graph (the numpy backend's
/// lowered graph and the frames its first run calls nodes from), which the translator then
/// never translates: it stands in the user's file, at the user's lines, and runs only what
/// the translation captured.
#[pyfunction]
fn _sot_never_translated(code: &Bound<'_, PyAny>) -> PyResult<()> {
    if !code.is_instance_of::<PyCode>() {
        return Err(PyTypeError::new_err(format!(
            "_sot_never_translated() takes a code object, not {}",
            code.get_type().name()?
        )));
    }
    Translator::get(code.py())?.caches.never_translate(code)
}

/// What SOT's generated code puts in a call's NULL slot on 3.9/3.10 (no `PUSH_NULL`
/// there): `CALL_METHOD` calls it with the callable above it, as if the slot were NULL.
/// Native, so that no frame of its own stands between the caller and the callee (what
/// `sys._getframe().f_back` and tracebacks see).
#[pyfunction(signature = (function, /, *args, **kwargs))]
fn _sot_call_with<'py>(
    function: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    function.call(args, kwargs)
}

/// What SOT's generated code calls in place of a callee that a break deep in inlined calls
/// resumes in (`vm::nested`), bound to the callee's bridge and the values it is handed (a
/// `functools.partial` of it): the caller's call, with whatever arguments it passes, runs
/// the bridge, which empties the list it takes. Native, so that the bridge stands where the
/// callee's frame stood.
#[pyfunction(signature = (bridge, handed, /, *_args, **_kwargs))]
fn _sot_resumed<'py>(
    bridge: &Bound<'py, PyAny>,
    handed: &Bound<'py, pyo3::types::PyList>,
    _args: &Bound<'py, PyTuple>,
    _kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    match handed.is_empty() {
        true => bridge.call0(),
        false => bridge.call1((handed,)),
    }
}

/// `_sot_resumed` for a callee with cells: its bridge is made here, from the bridge's code,
/// the callee's globals and a closure of new cells holding `contents` (the frame's own
/// cells; the unbound marker for an empty one) and the callee's closure (the function
/// itself, under a method or a partial: the cells it shares with its maker).
#[pyfunction(signature = (callee, code, contents, handed, /, *_args, **_kwargs))]
fn _sot_resumed_in<'py>(
    callee: &Bound<'py, PyAny>,
    code: &Bound<'py, PyAny>,
    contents: &Bound<'py, PyTuple>,
    handed: &Bound<'py, pyo3::types::PyList>,
    _args: &Bound<'py, PyTuple>,
    _kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = callee.py();
    let held = held(py)?;
    let (method, partial) = (held.method_type.bind(py), held.partial_type.bind(py));
    let mut function = callee.clone();
    for _ in 0..8 {
        if function.is_exact_instance_of::<pyo3::types::PyFunction>() {
            break;
        } else if function.is_instance(method)? {
            function = function.getattr(pyo3::intern!(py, "__func__"))?;
        } else if function.is_instance(partial)? {
            function = function.getattr(pyo3::intern!(py, "func"))?;
        } else {
            break;
        }
    }
    let marker = super::model::code::unbound_marker(py)?;
    let cell_type = held.cell_type.bind(py);
    let mut closure = Vec::new();
    for content in contents.iter() {
        closure.push(match content.is(&marker) {
            true => cell_type.call0()?,
            false => cell_type.call1((content,))?,
        });
    }
    let own = function.getattr(pyo3::intern!(py, "__closure__"))?;
    if !own.is_none() {
        closure.extend(own.try_iter()?.collect::<PyResult<Vec<_>>>()?);
    }
    let name = code.getattr(pyo3::intern!(py, "co_name"))?;
    let globals = function.getattr(pyo3::intern!(py, "__globals__"))?;
    let bridge =
        held.function_type
            .bind(py)
            .call1((code, globals, name, py.None(), PyTuple::new(py, closure)?))?;
    _sot_resumed(&bridge, handed, _args, _kwargs)
}

/// Made by SOT's generated code where it hands on a generator the translation ran up to a
/// `yield`: `function`'s code is the generator's, entered at that `yield` with the values
/// `handed`; its generator (named `qualname`, as the original's function is) runs up to
/// there (yielding None, dropped), so that it is suspended where the translation's was, and
/// `next`, `send`, `throw` and `close` go on from there as the original's would.
#[pyfunction(signature = (function, handed, qualname, /))]
fn _sot_primed_generator<'py>(
    function: &Bound<'py, PyAny>,
    handed: &Bound<'py, pyo3::types::PyList>,
    qualname: &Bound<'py, pyo3::types::PyString>,
) -> PyResult<Bound<'py, PyAny>> {
    function.setattr(pyo3::intern!(function.py(), "__qualname__"), qualname)?;
    let generator = function.call1((handed,))?;
    generator.call_method0(pyo3::intern!(function.py(), "__next__"))?;
    Ok(generator)
}

/// Run by SOT's generated code where an exception leaves a resume function it called: the
/// exception's traceback loses its first entry where that entry is the caller's frame (the
/// generated code's, at the break: native, this function has no frame of its own) and
/// more follow, so that the traceback shows the function's frame once, where it raised.
/// Returns the traceback (which 3.9/3.10's `RERAISE` takes from the stack).
#[pyfunction]
fn _sot_drop_caller_entry<'py>(exception: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    let py = exception.py();
    // SAFETY: a live object; a new reference or NULL, with no error set.
    let traceback =
        unsafe { Bound::from_owned_ptr_or_opt(py, ffi::PyException_GetTraceback(exception.as_ptr())) }?;
    // SAFETY: attached; a borrowed reference to the calling frame, or NULL.
    let caller = unsafe { ffi::PyEval_GetFrame() };
    let (Ok(frame), Ok(next)) = (
        traceback.getattr(pyo3::intern!(traceback.py(), "tb_frame")),
        traceback.getattr(pyo3::intern!(traceback.py(), "tb_next")),
    ) else {
        return Some(traceback);
    };
    if frame.as_ptr() != caller.cast() || next.is_none() {
        return Some(traceback);
    }
    // SAFETY: an exception instance (what the handler caught) and a traceback object.
    unsafe { ffi::PyException_SetTraceback(exception.as_ptr(), next.as_ptr()) };
    Some(next)
}

/// `cls(*args, **kwargs)`, untranslated: an object the backend made while translating
/// (`construct`), made again by SOT's generated code. Its making is the backend's, as it was
/// while translating: its frames run as they are (other frame hooks still see them).
#[pyfunction]
fn _sot_construct<'py>(
    cls: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    super::session::with_session(None, || cls.call(args, Some(kwargs)))
}

pyo3::create_exception!(
    framehook,
    SotAssumptionFailed,
    pyo3::exceptions::PyException,
    "A branch a translation took on a tensor's value goes the other way on this call."
);

/// Run by a graph where its translation took a branch on a tensor's value (`if
/// np.isfinite(total):`): nothing where the value's truth is the one seen while
/// translating, else `SotAssumptionFailed`, which the generated code's landing pad answers
/// by running the frame again untranslated (`_sot_rerun`): the other branch is taken as
/// eagerly, and nothing of the frame had happened.
#[pyfunction]
fn _sot_assume(value: &Bound<'_, PyAny>, seen: bool) -> PyResult<()> {
    if value.is_truthy()? == seen {
        return Ok(());
    }
    Err(SotAssumptionFailed::new_err(
        "a branch on a tensor's value went the other way",
    ))
}

/// Run by SOT's generated code where its graph raised, for a graph that writes none of its
/// operands (the backend's `writes_operands`): the graph runs first, so nothing of the
/// frame has happened yet, and the frame's code runs again from its start, untranslated,
/// with its parameters, so that what the function does before the failing operation
/// happens, and the exception is raised where it is eagerly. `parameters` are in the code's
/// order: positional, keyword-only, then `*args` and `**kwargs` where it has them. An
/// exception that is not an `Exception` (KeyboardInterrupt, SystemExit) is raised on, and
/// with `assumptions_only` (a graph that may write an operand after its last assumption's
/// check) any but a failed assumption, raised before anything was written.
#[pyfunction(signature = (exception, assumptions_only, code, globals, closure, *parameters))]
fn _sot_rerun<'py>(
    exception: &Bound<'py, PyAny>,
    assumptions_only: bool,
    code: &Bound<'py, PyAny>,
    globals: &Bound<'py, PyAny>,
    closure: &Bound<'py, PyAny>,
    parameters: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    if assumptions_only && !exception.is_instance_of::<SotAssumptionFailed>() {
        return Err(PyErr::from_value(exception.clone()));
    }
    run_again(exception, code, globals, closure, parameters)
}

/// The frame of `code` run again, untranslated, with `parameters` (see `_sot_rerun`).
fn run_again<'py>(
    exception: &Bound<'py, PyAny>,
    code: &Bound<'py, PyAny>,
    globals: &Bound<'py, PyAny>,
    closure: &Bound<'py, PyAny>,
    parameters: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = exception.py();
    if !exception.is_instance_of::<pyo3::exceptions::PyException>() {
        return Err(PyErr::from_value(exception.clone()));
    }
    let none = py.None().into_bound(py);
    let function = held(py)?
        .function_type
        .bind(py)
        .call1((code, globals, &none, &none, closure))?;
    let layout = super::model::code::Parameters::of(code)?;
    let varnames = code.getattr(pyo3::intern!(code.py(), "co_varnames"))?;
    let mut args: Vec<Bound<'py, PyAny>> = parameters.iter().take(layout.positional).collect();
    let kwargs = PyDict::new(py);
    let keyword_only = layout.positional..layout.positional + layout.keyword_only;
    for index in keyword_only.clone() {
        kwargs.set_item(varnames.get_item(index)?, parameters.get_item(index)?)?;
    }
    let mut next = keyword_only.end;
    if layout.varargs {
        args.extend(
            parameters
                .get_item(next)?
                .try_iter()?
                .collect::<PyResult<Vec<_>>>()?,
        );
        next += 1;
    }
    if layout.varkeywords {
        kwargs.update(parameters.get_item(next)?.cast::<pyo3::types::PyMapping>()?)?;
    }
    let args = PyTuple::new(py, args)?;
    super::session::with_session(None, || function.call(args, Some(&kwargs)))
}

/// `_sot_graph_runs(fast)`: per graph compiled for the translated function `fast`, in the
/// order they were compiled, `(runs, ops)`: how often generated code called it, and its
/// operations. Test builds only: the tests' proof that generated code and graphs ran.
#[cfg(feature = "testing")]
#[pyfunction]
fn _sot_graph_runs(fast: &Bound<'_, PyAny>) -> PyResult<Vec<(u64, u64)>> {
    use std::sync::atomic::Ordering;

    let translated = types()?
        .translated
        .value(fast)
        .ok_or_else(|| PyTypeError::new_err("_sot_graph_runs() takes a translated function"))?;
    let graphs = translated.config.graph_runs.lock();
    Ok(graphs
        .iter()
        .map(|graph| (graph.runs.load(Ordering::Relaxed), graph.ops))
        .collect())
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    if TYPES.get().is_none() {
        // Under the import lock: no other thread makes them meanwhile.
        let _ = TYPES.set(make_types(py)?);
        let builtins: rustc_hash::FxHashMap<String, Py<PyAny>> = import(py, "builtins")?
            .getattr(pyo3::intern!(py, "__dict__"))?
            .cast_into::<PyDict>()?
            .iter()
            .filter_map(|(name, value)| Some((name.extract::<String>().ok()?, value.unbind())))
            .collect();
        let names = builtins
            .iter()
            .filter(|(name, value)| {
                let own_name = value.bind(py).getattr(pyo3::intern!(py, "__name__"));
                own_name.is_ok_and(|own| own.eq(name.as_str()).unwrap_or(false))
            })
            .map(|(name, value)| (value.as_ptr() as usize, name.clone()))
            .collect();
        let _ = BUILTINS.set(builtins);
        let _ = BUILTIN_NAMES.set(names);
    }
    let types = types()?;
    module.add("SotTranslated", types.translated.type_object(py))?;
    module.add("SotRef", compile::ref_type(py)?.type_object(py))?;
    module.add_function(wrap_pyfunction!(_sot_reset, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_call_with, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_construct, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_resumed, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_resumed_in, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_primed_generator, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_drop_caller_entry, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_rerun, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_assume, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_never_translated, module)?)?;
    #[cfg(feature = "testing")]
    module.add_function(wrap_pyfunction!(_sot_graph_runs, module)?)?;
    Ok(())
}
