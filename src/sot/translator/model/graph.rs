//! The graph a translation records: its inputs, its nodes (backend operations), and
//! which of its values the generated code needs.

use std::rc::Rc;

use pyo3::prelude::*;

use super::Sym;
use crate::sot::translator::guard::source::SourceId;

/// An operand of a graph operation.
#[derive(Clone)]
pub enum GraphArg<'py> {
    Sym(Sym),
    Const(Bound<'py, PyAny>),
    Tuple(Vec<GraphArg<'py>>),
    List(Vec<GraphArg<'py>>),
    Slice(Box<[GraphArg<'py>; 3]>),
}

impl GraphArg<'_> {
    /// Calls `f` on every symbol the operand reads.
    pub fn visit_syms(&mut self, f: &mut impl FnMut(&mut Sym)) {
        match self {
            GraphArg::Sym(sym) => f(sym),
            GraphArg::Tuple(items) | GraphArg::List(items) => items.iter_mut().for_each(|a| a.visit_syms(f)),
            GraphArg::Slice(parts) => parts.iter_mut().for_each(|a| a.visit_syms(f)),
            GraphArg::Const(_) => {}
        }
    }
}

impl Node<'_> {
    pub fn visit_syms(&mut self, f: &mut impl FnMut(&mut Sym)) {
        self.args.iter_mut().for_each(|a| a.visit_syms(f));
        self.kwargs.iter_mut().for_each(|(_, a)| a.visit_syms(f));
    }
}

/// What a node is, for counting operations.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A tensor operation.
    Operation,
    /// An element taken out of a multi-tensor result: not an operation of its own.
    Projection,
    /// Python arithmetic on dynamic numbers: computed in the graph, free as Python's is.
    Arithmetic,
    /// The start of a backend's region (`with np.errstate(...):`): the manager made from
    /// the node's arguments and entered; the nodes up to its `RegionExit` run under it.
    RegionEnter,
    /// A region's end: its manager (the `RegionEnter` symbol, the one argument) exited.
    RegionExit,
    /// A change of the state the innermost open region set, undone as it ends
    /// (`warnings.simplefilter(...)` inside `warnings.catch_warnings()`): called as recorded.
    RegionEffect,
    /// A branch taken on a tensor's value, assumed to go the same way on every call:
    /// `_sot_assume(value, seen)` raises where it does not (the frame then runs again,
    /// untranslated). Not an operation of its own.
    Assumption,
}

/// A region the graph entered (`NodeKind::RegionEnter`), as the VM knows it again.
#[derive(Clone)]
pub struct Region<'py> {
    /// The `RegionEnter` node's index among the nodes (its symbol moves as inputs come).
    pub node: usize,
    /// The manager made while translating: its `__exit__`'s call is the region's end.
    pub manager: Bound<'py, PyAny>,
    /// The top frame's instruction that entered it: where the graph breaks instead, when
    /// a break comes while it is open (the graph cannot stop inside it).
    pub pc: usize,
    /// Its `RegionEffect` nodes, by index among the nodes.
    pub effects: Vec<usize>,
    pub closed: bool,
}

/// One recorded operation: `outputs[sym] = function(*args, **kwargs)`.
#[derive(Clone)]
pub struct Node<'py> {
    pub function: Bound<'py, PyAny>,
    pub args: Vec<GraphArg<'py>>,
    pub kwargs: Vec<(String, GraphArg<'py>)>,
    pub kind: NodeKind,
    pub line: i32,
    pub filename: String,
}

/// The backend-neutral graph of one translation: inputs, then one symbol per node.
#[derive(Default, Clone)]
pub struct Graph<'py> {
    /// Per input symbol, the source it is read from.
    pub inputs: Vec<SourceId>,
    /// Shared with the snapshots of the graph (a change after one copies pointers, not
    /// nodes: a snapshot precedes each instruction of the translated frame).
    pub nodes: Vec<Rc<Node<'py>>>,
    /// The regions entered, in order (kept with the nodes: a snapshot takes both back).
    pub regions: Vec<Region<'py>>,
    /// Per `Assumption` node, in order, the top frame's instruction that made it: where the
    /// graph breaks instead where an assumption cannot be checked by running again.
    pub assumed_at: Vec<usize>,
}

impl Graph<'_> {
    pub fn symbol_count(&self) -> usize {
        self.inputs.len() + self.nodes.len()
    }

    pub fn ops(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Operation)
            .count()
    }
}

impl<'py> Graph<'py> {
    /// The top-frame instruction that entered the outermost region still open.
    pub fn open_region_pc(&self) -> Option<usize> {
        self.regions.iter().find(|r| !r.closed).map(|r| r.pc)
    }

    /// The innermost region still open.
    pub fn innermost_open_region(&self) -> Option<&Region<'py>> {
        self.regions.iter().rev().find(|r| !r.closed)
    }

    /// The innermost region still open, to change.
    pub fn innermost_open_region_mut(&mut self) -> Option<&mut Region<'py>> {
        self.regions.iter_mut().rev().find(|r| !r.closed)
    }

    /// The graph without the arithmetic nodes no output needs (numbers specialized after
    /// all), with `outputs` renumbered for it. Inputs stay as they are.
    pub fn without_dead_arithmetic(&self, outputs: &[Sym]) -> (Graph<'py>, Vec<Sym>) {
        let inputs = self.inputs.len();
        let mut needed = vec![false; self.symbol_count()];
        outputs.iter().for_each(|sym| needed[*sym] = true);
        let mut live = vec![false; self.nodes.len()];
        for (index, node) in self.nodes.iter().enumerate().rev() {
            if node.kind == NodeKind::Arithmetic && !needed[inputs + index] {
                continue;
            }
            live[index] = true;
            Node::clone(node).visit_syms(&mut |sym| needed[*sym] = true);
        }
        let mut renumbered: Vec<Sym> = (0..inputs).collect();
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for (node, live) in self.nodes.iter().zip(live) {
            if live {
                let mut node = Rc::clone(node);
                let moved = inputs + nodes.len();
                Rc::make_mut(&mut node).visit_syms(&mut |sym| *sym = renumbered[*sym]);
                renumbered.push(moved);
                nodes.push(node);
            } else {
                // Never read: no live node needs a dead one.
                renumbered.push(usize::MAX);
            }
        }
        // The regions are the VM's while translating: the nodes say where they are.
        let graph = Graph {
            inputs: self.inputs.clone(),
            nodes,
            regions: Vec::new(),
            assumed_at: Vec::new(),
        };
        (graph, outputs.iter().map(|sym| renumbered[*sym]).collect())
    }
}
