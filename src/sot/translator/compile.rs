//! Graphs to the backend: the description it compiles, their example inputs, and the text
//! `sot.explain` shows.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::hookapi::pyobject::import;
use crate::sot::translator::pyutil::has_attr;

use super::backend::Backend;
use super::cache::CodeCaches;
use super::model::code::CodeInfo;
use super::model::graph::{Graph, GraphArg, NodeKind};
use super::model::value::Val;
use super::session::Config;
use super::vm::Vm;
use std::ffi::c_void;
use std::sync::OnceLock;

use super::pyutil::builtin;
use crate::hookapi::pyobject::{
    ffi_body, getset, instance_value, native_getter, slot, CTable, NativeType, NativeValue, TypeSpec,
    GETSET_END,
};
use pyo3::ffi;

/// Per graph input, the value it had while translating (None where the VM no longer
/// holds it).
pub fn input_examples<'py>(py: Python<'py>, vm: &Vm<'py, '_>, inputs: usize) -> Vec<Bound<'py, PyAny>> {
    let mut examples = vec![py.None().into_bound(py); inputs];
    let mut seen = vec![false; inputs];
    for value in &vm.values {
        if let Val::Tensor { sym, example } | Val::Scalar { sym, example, .. } = value {
            if *sym < inputs && !seen[*sym] {
                seen[*sym] = true;
                examples[*sym] = example.clone();
            }
        }
    }
    examples
}

/// A graph compiled by the backend.
pub struct Compiled<'py> {
    /// `[compiled]`, which generated code calls.
    pub holder: Bound<'py, PyAny>,
    /// The graph's text, for `explain` (empty where the session does not explain).
    pub text: String,
    /// The first node that may write into an array the graph is given, or None where none
    /// does (the backend's `writes_operands`, then its `first_operand_write`; where it
    /// says it writes and cannot say where, or has neither, from the first node).
    pub first_write: Option<usize>,
}

/// Compiles the graph with the backend for `outputs`.
pub fn compile_graph<'py>(
    py: Python<'py>,
    caches: &CodeCaches,
    config: &Config,
    backend: &Backend<'py>,
    vm: &Vm<'py, '_>,
    graph: &Graph<'py>,
    outputs: &[usize],
) -> PyResult<Compiled<'py>> {
    let description = graph_description(py, graph, outputs)?;
    // A backend that specialises on its inputs' types (their exact types and meta
    // attributes are guarded) is given the values they had while translating.
    let examples = PyTuple::new(py, input_examples(py, vm, graph.inputs.len()))?;
    let compiled = if has_attr(&backend.object, "compile_with_examples")? {
        backend
            .object
            .call_method1("compile_with_examples", (&description, &examples))?
    } else {
        backend.object.call_method1("compile", (&description,))?
    };
    // Whether it writes (`writes_operands`, what a backend overrides), then where first.
    let writes = !has_attr(&backend.object, "writes_operands")?
        || backend
            .object
            .call_method1("writes_operands", (&description, &examples))?
            .is_truthy()?;
    let first_write = match writes {
        false => None,
        true if has_attr(&backend.object, "first_operand_write")? => Some(
            backend
                .object
                .call_method1("first_operand_write", (&description, &examples))?
                .extract::<Option<usize>>()?
                .unwrap_or(0),
        ),
        true => Some(0),
    };
    if let Ok(code) = compiled.getattr(pyo3::intern!(compiled.py(), "__code__")) {
        caches.never_translate(&code)?;
    }
    // Described only for `sot.explain` (each node's and argument's repr cost).
    let text = if config.explaining.load(std::sync::atomic::Ordering::Relaxed) {
        graph_text(py, graph, outputs)?
    } else {
        String::new()
    };
    let called = counted::as_called(py, config, graph, compiled)?;
    Ok(Compiled {
        // A list the generated code holds as a constant, hashed by identity (`_GraphHolder`):
        // the code object stays hashable, and the holder is not boxed (`Emit::load_const`).
        holder: import(py, "framehook.sot._translate")?
            .getattr("_GraphHolder")?
            .call1((PyList::new(py, [called])?,))?,
        text,
        first_write,
    })
}

/// What the generated code calls: the backend's compiled graph itself, or in test builds
/// (the `testing` feature) a native wrapper that counts its runs first, for the tests to
/// check that the generated code ran (`framehook._native._sot_graph_runs`). Release builds
/// call the compiled graph directly and carry none of this.
#[cfg(not(feature = "testing"))]
mod counted {
    use pyo3::prelude::*;

    use super::super::model::graph::Graph;
    use super::super::session::Config;

    #[inline(always)]
    pub fn as_called<'py>(
        _py: Python<'py>,
        _config: &Config,
        _graph: &Graph<'py>,
        compiled: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(compiled)
    }
}

#[cfg(feature = "testing")]
mod counted {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, OnceLock};

    use pyo3::ffi;
    use pyo3::prelude::*;

    use super::super::cache::GraphRuns;
    use super::super::model::graph::Graph;
    use super::super::session::Config;
    use crate::hookapi::pyobject::{instance_value, NativeType, NativeValue, StrongRef, TypeSpec};

    /// A compiled graph and its run counter.
    pub struct CountedGraph {
        compiled: StrongRef,
        runs: Arc<GraphRuns>,
    }

    impl NativeValue for CountedGraph {
        fn held(&self) -> &[StrongRef] {
            std::slice::from_ref(&self.compiled)
        }
    }

    /// `compiled` wrapped to count its runs in `config`'s `graph_runs` (with the graph's
    /// operations, which each run runs).
    pub fn as_called<'py>(
        py: Python<'py>,
        config: &Config,
        graph: &Graph<'py>,
        compiled: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let runs = Arc::new(GraphRuns {
            ops: graph.ops() as u64,
            runs: AtomicU64::new(0),
        });
        config.graph_runs.lock().push(Arc::clone(&runs));
        counted_type(py)?.instantiate(
            py,
            CountedGraph {
                compiled: StrongRef::from_owned(compiled),
                runs,
            },
        )
    }

    /// A call: counted, then the compiled graph's, with the same arguments.
    unsafe extern "C" fn counted_call(
        callable: *mut ffi::PyObject,
        args: *const *mut ffi::PyObject,
        nargsf: usize,
        kwnames: *mut ffi::PyObject,
    ) -> *mut ffi::PyObject {
        // SAFETY: CPython calls vectorcall functions attached, with a live instance of the
        // type whose instances carry this function, and the call's arguments, passed on as
        // they came (the callee may use the slot before `args` as the caller allows).
        unsafe {
            let graph = instance_value::<CountedGraph>(callable);
            graph.runs.runs.fetch_add(1, Ordering::Relaxed);
            ffi::PyObject_Vectorcall(graph.compiled.as_ptr(), args, nargsf, kwnames)
        }
    }

    static COUNTED_TYPE: OnceLock<NativeType<CountedGraph>> = OnceLock::new();

    fn counted_type(py: Python<'_>) -> PyResult<&'static NativeType<CountedGraph>> {
        if let Some(made) = COUNTED_TYPE.get() {
            return Ok(made);
        }
        let made = NativeType::new(
            py,
            TypeSpec {
                name: c"framehook._native.SotCountedGraph",
                doc: c"A compiled graph whose runs the test build counts.",
                slots: vec![],
                // Tracked by the cycle collector: the compiled graph may hold what holds it.
                attributes: true,
                vectorcall: Some(counted_call),
            },
        )?;
        Ok(COUNTED_TYPE.get_or_init(|| made))
    }
}

pub fn explain(
    py: Python<'_>,
    qualname: &str,
    info: &CodeInfo,
    vm: &Vm<'_, '_>,
    graph: Option<&str>,
    handed: &[String],
) -> String {
    let mut text = format!("{qualname}: translated ({}:{})\n", info.filename, vm.first_line());
    match graph {
        Some(graph) => text.push_str(&format!("  graph of {} ops:\n{graph}", vm.graph.ops())),
        None => text.push_str("  no graph (no tensor operation)\n"),
    }
    text.push_str(&format!("  guards ({}):\n", vm.guards.len()));
    let name = |source| {
        vm.sources
            .describe(py, source, &info.vars.varnames, &info.vars.freevars, handed)
    };
    for g in &vm.guards {
        text.push_str(&format!(
            "    {} {}\n",
            name(g.source),
            g.check.describe(py, &name)
        ));
    }
    text
}

pub fn arg_object<'py>(py: Python<'py>, arg: &GraphArg<'py>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match arg {
        GraphArg::Sym(index) => ref_type(py)?.instantiate(py, Ref { index: *index })?,
        GraphArg::Const(value) => value.clone(),
        GraphArg::Tuple(items) => PyTuple::new(
            py,
            items
                .iter()
                .map(|i| arg_object(py, i))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        GraphArg::List(items) => PyList::new(
            py,
            items
                .iter()
                .map(|i| arg_object(py, i))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        GraphArg::Slice(parts) => {
            let [a, b, c] = parts.as_ref();
            builtin(py, "slice")?.call1((arg_object(py, a)?, arg_object(py, b)?, arg_object(py, c)?))?
        }
    })
}

/// `(inputs, nodes, outputs)`: the number of inputs, one
/// `(function, args, kwargs, filename, line)` per node, the output symbols.
pub fn graph_description<'py>(
    py: Python<'py>,
    graph: &Graph<'py>,
    outputs: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    let nodes = graph
        .nodes
        .iter()
        .map(|node| {
            let args = PyTuple::new(
                py,
                node.args
                    .iter()
                    .map(|a| arg_object(py, a))
                    .collect::<PyResult<Vec<_>>>()?,
            )?;
            let kwargs = PyDict::new(py);
            for (name, arg) in &node.kwargs {
                kwargs.set_item(name, arg_object(py, arg)?)?;
            }
            PyTuple::new(
                py,
                [
                    node.function.clone(),
                    args.into_any(),
                    kwargs.into_any(),
                    node.filename.clone().into_pyobject(py)?.into_any(),
                    node.line.into_pyobject(py)?.into_any(),
                ],
            )
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(
        py,
        [
            graph.inputs.len().into_pyobject(py)?.into_any(),
            PyList::new(py, nodes)?.into_any(),
            PyTuple::new(py, outputs)?.into_any(),
        ],
    )?
    .into_any())
}

/// The graph as text, one line per operation, for `sot.explain`.
pub fn graph_text(py: Python<'_>, graph: &Graph<'_>, outputs: &[usize]) -> PyResult<String> {
    let mut text = String::new();
    let inputs = graph.inputs.len();
    for (index, node) in graph.nodes.iter().enumerate() {
        if node.kind == NodeKind::Projection {
            continue;
        }
        let name = node
            .function
            .getattr(pyo3::intern!(py, "__qualname__"))
            .or_else(|_| {
                node.function
                    .getattr(pyo3::intern!(node.function.py(), "__name__"))
            })
            .map_or_else(
                |_| node.function.repr().map_or("?".into(), |r| r.to_string()),
                |n| n.to_string(),
            );
        let text_of = |a: &GraphArg<'_>| {
            arg_object(py, a)
                .and_then(|o| o.repr())
                .map_or("?".into(), |r| r.to_string())
        };
        let args: Vec<String> = node
            .args
            .iter()
            .map(text_of)
            .chain(node.kwargs.iter().map(|(k, a)| format!("{k}={}", text_of(a))))
            .collect();
        text.push_str(&format!(
            "    %{} = {name}({})    # line {}\n",
            inputs + index,
            args.join(", "),
            node.line
        ));
    }
    text.push_str(&format!("    outputs: {outputs:?}\n"));
    Ok(text)
}

/// A reference to a graph symbol in a graph description (inputs first, then one per node).
pub struct Ref {
    index: usize,
}

impl NativeValue for Ref {}

native_getter!(ref_index, Ref, |py, reference| Ok(reference
    .index
    .into_pyobject(py)?
    .into_any()));

unsafe extern "C" fn ref_repr(object: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls tp_repr attached, with a live instance.
    unsafe {
        ffi_body(|py| {
            let reference = instance_value::<Ref>(object);
            Ok(PyString::new(py, &format!("%{}", reference.index)).into_any())
        })
    }
}

static REF_GETSET: CTable<[ffi::PyGetSetDef; 2]> = CTable([
    getset(c"index", ref_index, None, c"The symbol's index."),
    GETSET_END,
]);

static REF_TYPE: OnceLock<NativeType<Ref>> = OnceLock::new();

/// `framehook._native.SotRef`, made once (with the main interpreter's module: SOT runs
/// only there).
pub fn ref_type(py: Python<'_>) -> PyResult<&'static NativeType<Ref>> {
    if let Some(made) = REF_TYPE.get() {
        return Ok(made);
    }
    let made = NativeType::new(
        py,
        TypeSpec {
            name: c"framehook._native.SotRef",
            doc: c"A symbol in a graph description a backend compiles: inputs first, then one per node.",
            slots: vec![
                slot(ffi::Py_tp_getset, REF_GETSET.as_mut_ptr()),
                slot(ffi::Py_tp_repr, ref_repr as *mut c_void),
            ],
            attributes: false,
            vectorcall: None,
        },
    )?;
    Ok(REF_TYPE.get_or_init(|| made))
}
