//! `with` blocks of the backend's region types (numpy's `errstate`): the block's entry and
//! exit are graph nodes, so that the operations between them run under the state the
//! block sets, in the graph, where a break at `with` made each its own resume function.

use super::*;
use crate::sot::translator::model::graph::Region;

/// Instructions the translated frame's `with` block of a graph region may simulate (its
/// calls' included): a break anywhere in the block makes the `with` the break and throws
/// the block's whole simulation away (the block is then translated on its own, after the
/// `with` ran), so what the block risks is bounded as a library call's is. A block that
/// closes its region is short (at most 106 instructions in the scikit-learn bench, the
/// outside suites and the corpus); one that reaches the budget has so far always broken
/// inside after it (scikit-learn's `_FuncWrapper.__call__`, whose block runs the whole
/// transformer): the budget is what such a block throws away, a few times the longest.
pub(super) const REGION_BUDGET: usize = 300;

impl<'py> Vm<'py, '_> {
    /// A call of a region's `__enter__` or `__exit__` on the manager the translation made
    /// (the backend constructed it, of a `region_types` class), as a `with` block makes it
    /// on every version (through `BEFORE_WITH`, `SETUP_WITH` or `LOAD_SPECIAL`): the
    /// `RegionEnter` or `RegionExit` node. None for another call.
    pub(super) fn region_call(
        &mut self,
        function: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        if let Some(region_type) = self.backend.region_effect_of(function) {
            return self.region_effect(function, &region_type, args, kwargs);
        }
        let Some((&manager, rest)) = args.split_first() else {
            return Ok(None);
        };
        let Val::Constructed { obj, .. } = self.val(manager) else {
            return Ok(None);
        };
        if !self.backend.is_region(obj) || !kwargs.is_empty() {
            return Ok(None);
        }
        let (obj, class) = (obj.clone(), obj.get_type().into_any());
        let is_special = |vm: &Self, name| -> PyResult<bool> {
            Ok(vm.type_lookup(&class, name)?.is_some_and(|f| f.is(function)))
        };
        if rest.is_empty() && is_special(self, "__enter__")? {
            return self.enter_region(manager, obj, &class).map(Some);
        }
        if rest.len() == 3 && is_special(self, "__exit__")? {
            return self.exit_region(&obj, function, rest).map(Some);
        }
        Ok(None)
    }

    /// The `RegionEnter` node: the manager's class, called with what made it. `__enter__`'s
    /// result is None (the backend's region types give that).
    fn enter_region(&mut self, manager: Vid, obj: Bound<'py, PyAny>, class: &Bound<'py, PyAny>) -> Res<Vid> {
        let Val::Constructed { args, kwargs, .. } = self.val(manager).clone() else {
            return unsupported("a region the translation did not make");
        };
        if self.graph.regions.iter().any(|r| r.manager.is(&obj)) {
            // The graph makes a manager per entry; the one object refuses a second (and
            // the generated code cannot hand on one the graph entered: it restarts).
            return unsupported("a region's manager entered again");
        }
        let args = self.items_of(args)?;
        let Val::Dict(keywords) = self.val(kwargs).clone() else {
            return unsupported("a region's keywords that are not a dict");
        };
        let mut kwargs = Vec::with_capacity(keywords.len());
        for (key, value) in keywords {
            kwargs.push((self.concrete(key)?.extract::<String>()?, value));
        }
        let Some((graph_args, graph_kwargs)) = self.constant_operands(&args, &kwargs)? else {
            return unsupported("a region made from other than constants");
        };
        self.push_node(class, graph_args, graph_kwargs, NodeKind::RegionEnter);
        let region = Region {
            node: self.graph.nodes.len() - 1,
            manager: obj,
            pc: self.top_pc,
            effects: Vec::new(),
            closed: false,
        };
        self.graph_mut().regions.push(region);
        Ok(self.none())
    }

    /// The `RegionExit` node of the innermost open region, where the `with` block ends
    /// without an exception (`exit(None, None, None)`).
    fn exit_region(
        &mut self,
        obj: &Bound<'py, PyAny>,
        exit: &Bound<'py, PyAny>,
        exc_info: &[Vid],
    ) -> Res<Vid> {
        for value in exc_info {
            if !self.concrete(*value)?.is_none() {
                // An exception leaves the block (its handler breaks first in the `with` itself).
                return unsupported("a region's exit with an exception");
            }
        }
        let inputs = self.graph.inputs.len();
        let Some(region) = self.graph_mut().innermost_open_region_mut() else {
            return unsupported("a region's exit where none is open");
        };
        if !region.manager.is(obj) {
            return unsupported("a region's exit out of order");
        }
        region.closed = true;
        let enter = inputs + region.node;
        self.push_node(exit, vec![GraphArg::Sym(enter)], vec![], NodeKind::RegionExit);
        Ok(self.none())
    }

    /// `function(*args, **kwargs)` changing the state of the innermost open region, of
    /// `region_type`, with constant arguments: a `RegionEffect` node (checked now, in the
    /// regions made anew, so that one that raises breaks). None for another call.
    fn region_effect(
        &mut self,
        function: &Bound<'py, PyAny>,
        region_type: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let in_its_region = self
            .graph
            .innermost_open_region()
            .is_some_and(|r| r.manager.is_instance(region_type).unwrap_or(false));
        if !in_its_region {
            return Ok(None);
        }
        let Some((graph_args, graph_kwargs)) = self.constant_operands(args, kwargs)? else {
            return Ok(None);
        };
        let effect = (function, &graph_args[..], &graph_kwargs[..]);
        if self.in_open_regions(|| call_constants(self.py, effect)).is_err() {
            return Ok(None);
        }
        self.push_node(function, graph_args, graph_kwargs, NodeKind::RegionEffect);
        let node = self.graph.nodes.len() - 1;
        if let Some(region) = self.graph_mut().innermost_open_region_mut() {
            region.effects.push(node);
        }
        Ok(Some(self.none()))
    }

    /// A region node's operands, where each is a constant (which the graph, and the regions
    /// made anew around an example, call with); None otherwise.
    fn constant_operands(
        &mut self,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<ConstantOperands<'py>>> {
        let mut graph_args = Vec::with_capacity(args.len());
        for arg in args {
            graph_args.push(self.graph_arg(*arg)?.0);
        }
        let mut graph_kwargs = Vec::with_capacity(kwargs.len());
        for (key, arg) in kwargs {
            graph_kwargs.push((key.clone(), self.graph_arg(*arg)?.0));
        }
        let all_constant = graph_args
            .iter()
            .chain(graph_kwargs.iter().map(|(_, a)| a))
            .all(|a| matches!(a, GraphArg::Const(_)));
        Ok(all_constant.then_some((graph_args, graph_kwargs)))
    }

    /// A break where `value`, `name` of `namespace`, is read inside a region whose block
    /// may change that namespace (`warnings.filters` inside `warnings.catch_warnings()`):
    /// the graph's run changes it, the translation does not. Its functions, classes and
    /// modules are read as anywhere (what the block changes are its values).
    pub(super) fn read_outside_regions(
        &self,
        namespace: &Bound<'py, PyAny>,
        name: &str,
        value: &Bound<'py, PyAny>,
    ) -> Res<()> {
        if self.graph.regions.is_empty()
            || value.is_instance(&self.ops.function_type)?
            || value.is_instance_of::<PyType>()
            || value.is_instance(&self.ops.module_type)?
        {
            return Ok(());
        }
        let dict = namespace.as_ptr() as usize;
        let changing = self.graph.regions.iter().filter(|r| !r.closed).find(|r| {
            self.backend
                .region_changes_namespace(&r.manager.get_type().into_any(), dict)
        });
        match changing {
            Some(region) => unsupported(format!(
                "{name} read inside a {} block, which may change it",
                qualname(&region.manager.get_type().into_any())
            )),
            None => Ok(()),
        }
    }

    /// `run` with the regions open in the graph entered anew (and their effects made), as
    /// the graph's run has them around the operation: an operation's example computes under
    /// the state they set.
    pub(super) fn in_open_regions<T>(&self, run: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
        let mut entered = Vec::new();
        let none = self.py.None();
        let mut made = || -> PyResult<()> {
            for region in self.graph.regions.iter().filter(|r| !r.closed) {
                let node = &self.graph.nodes[region.node];
                let manager = call_constants(self.py, (&node.function, &node.args, &node.kwargs))?;
                manager.call_method0("__enter__")?;
                entered.push(manager);
                for effect in &region.effects {
                    let node = &self.graph.nodes[*effect];
                    call_constants(self.py, (&node.function, &node.args, &node.kwargs))?;
                }
            }
            Ok(())
        };
        let result = made().and_then(|()| run());
        for manager in entered.iter().rev() {
            manager.call_method1("__exit__", (&none, &none, &none))?;
        }
        result
    }
}

/// A region node's positional and keyword operands, all constants.
type ConstantOperands<'py> = (Vec<GraphArg<'py>>, Vec<(String, GraphArg<'py>)>);

/// `function(*args, **kwargs)` of a region's node, whose arguments are constants
/// (`constant_operands`).
type ConstantCall<'a, 'py> = (
    &'a Bound<'py, PyAny>,
    &'a [GraphArg<'py>],
    &'a [(String, GraphArg<'py>)],
);

fn call_constants<'py>(
    py: Python<'py>,
    (function, args, kwargs): ConstantCall<'_, 'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let args = args.iter().map(constant_of).collect::<PyResult<Vec<_>>>()?;
    let keywords = pyo3::types::PyDict::new(py);
    for (key, value) in kwargs {
        keywords.set_item(key, constant_of(value)?)?;
    }
    function.call(PyTuple::new(py, args)?, Some(&keywords))
}

/// A region node's operand: a constant (`constant_operands` made it so).
fn constant_of<'py>(arg: &GraphArg<'py>) -> PyResult<Bound<'py, PyAny>> {
    match arg {
        GraphArg::Const(value) => Ok(value.clone()),
        _ => Err(pyo3::exceptions::PyTypeError::new_err(
            "a region made from other than constants",
        )),
    }
}
