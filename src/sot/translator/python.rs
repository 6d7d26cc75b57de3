//! The Python face of the translator: `framehook._native.SotTranslated` (what
//! `framehook.sot.translate` returns), the graph description backends compile,
//! and the counters `sot.stats` reads.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::value::{Graph, GraphArg, NodeKind};
use super::{Config, Translator};
use crate::hookapi::pyobject::{import, StrongRef};
use crate::hookapi::registry::Registry;

/// A function whose calls run translated.
#[pyclass(module = "framehook._native", name = "SotTranslated", dict, weakref)]
pub struct Translated {
    function: Py<PyAny>,
    config: Arc<Config>,
    translator: Arc<Translator>,
}

#[pymethods]
impl Translated {
    #[new]
    #[pyo3(signature = (function, backend, full_graph, cache_size, traced_prefixes))]
    fn new(
        py: Python<'_>,
        function: Bound<'_, PyAny>,
        backend: Bound<'_, PyAny>,
        full_graph: bool,
        cache_size: usize,
        traced_prefixes: Vec<String>,
    ) -> PyResult<Self> {
        if !function.is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "sot.translate() takes a callable, not {}",
                function.get_type().name()?
            )));
        }
        // The code whose frame is the call's own: a function's, or a bound method's.
        let own_code = function
            .getattr("__func__")
            .unwrap_or_else(|_| function.clone())
            .getattr("__code__")
            .ok()
            .map(|code| StrongRef::new(&code));
        let tracing = !traced_prefixes.is_empty();
        let translator = Translator::get(py)?;
        let config = Config::new(
            StrongRef::new(&backend),
            full_graph,
            cache_size,
            traced_prefixes,
            own_code,
        );
        translator.function_made(py)?;
        if tracing {
            // Library codes whose skip was remembered are asked about again.
            Registry::current(py)?.invalidate_decisions(py);
        }
        Ok(Self {
            function: function.unbind(),
            config,
            translator,
        })
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        self.translator.ensure_registered(py)?;
        let function = self.function.bind(py);
        super::with_session(Some(Arc::clone(&self.config)), || function.call(args, kwargs)).map(Bound::unbind)
    }

    fn __get__(
        slf: Bound<'_, Self>,
        instance: Option<Bound<'_, PyAny>>,
        _owner: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        match instance {
            None => Ok(slf.into_any().unbind()),
            Some(instance) => {
                let method_type = import(slf.py(), "types")?.getattr("MethodType")?;
                Ok(method_type.call1((slf, instance))?.unbind())
            }
        }
    }

    /// The counters, breaks, fallbacks and explanations, as a dict.
    fn _stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        super::stats_dict(py, &self.config)
    }
}

impl Drop for Translated {
    fn drop(&mut self) {
        // SAFETY: dropped by the type's dealloc, attached.
        let py = unsafe { Python::assume_attached() };
        self.translator.function_dropped(py);
    }
}

/// A reference to a graph symbol in a graph description (inputs first, then one per node).
#[pyclass(module = "framehook._native", name = "SotRef", frozen)]
pub struct Ref {
    #[pyo3(get)]
    index: usize,
}

#[pymethods]
impl Ref {
    fn __repr__(&self) -> String {
        format!("%{}", self.index)
    }
}

fn arg_object<'py>(py: Python<'py>, arg: &GraphArg<'py>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match arg {
        GraphArg::Sym(index) => Bound::new(py, Ref { index: *index })?.into_any(),
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
            import(py, "builtins")?.getattr("slice")?.call1((
                arg_object(py, a)?,
                arg_object(py, b)?,
                arg_object(py, c)?,
            ))?
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
            .getattr("__qualname__")
            .or_else(|_| node.function.getattr("__name__"))
            .map_or_else(
                |_| node.function.repr().map_or("?".into(), |r| r.to_string()),
                |n| n.to_string(),
            );
        let args: Vec<String> = node
            .args
            .iter()
            .map(|a| {
                arg_object(py, a)
                    .and_then(|o| o.repr())
                    .map_or("?".into(), |r| r.to_string())
            })
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

/// `sot.reset()`.
#[pyfunction]
fn _sot_reset() {
    super::reset();
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

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Translated>()?;
    module.add_class::<Ref>()?;
    module.add_function(wrap_pyfunction!(_sot_reset, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_call_with, module)?)?;
    Ok(())
}
