//! The symbolic VM: runs canonical instructions over symbolic values, with the
//! real values of the frame being translated at hand. Python values it depends
//! on are guarded where the dependence arises; tensor operations are recorded
//! into the graph (and run on example values, which stand for their meta);
//! user functions are inlined; what it cannot translate stops it with a reason.

use std::collections::HashMap;

use framehook_bytecode::canonical::{Arg, BinOp, Const, Instruction, Op};
use framehook_bytecode::table::{CallLayout, ExceptionModel};
use framehook_bytecode::Table;
use pyo3::exceptions::{PyAttributeError, PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyCFunction, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PyRange, PyString, PyTuple, PyType,
};

use super::backend::Backend;
use super::guard::{
    holds_values_only, is_mutable_container, is_value_type, name_ref, Check, Guard, Pin, Source, SourceId,
    SourceTable, VALUE_NESTING,
};
use super::model::code::{
    is_resume_local, null_substitute, CodeInfo, CO_COROUTINE_LIKE, CO_GENERATOR, CO_VARARGS, CO_VARKEYWORDS,
    FRAME_READERS, MAX_NESTING,
};
use super::model::frame::{Block, BreakPoint, Ending, Frame, FreeVariable, GeneratorState, SideEffect, Stop};
use super::model::graph::{Graph, GraphArg, Node, NodeKind};
use super::model::value::{DictIter, DictIterStatus, DictPart, Function, Lazy, Sym, Val, Vid};
use super::pyutil::{builtin, is_heap_instance};
use super::session::with_session;
use crate::hookapi::pyobject::{has_generic_getattro, import, StrongRef};

/// The kinds of tensor a value holds (`Vm::tensor_kinds`).
#[derive(Default)]
struct TensorKinds {
    /// The backend's arrays (`Backend::is_array`).
    arrays: bool,
    /// Its other tensors.
    tensors: bool,
}

/// The VM's state before an instruction of the translated frame, to go back to when the
/// instruction breaks the graph or raises (the generated code then runs it itself).
struct Snapshot<'py> {
    values: Vec<Val<'py>>,
    cells: Vec<Option<Vid>>,
    graph: Graph<'py>,
    side_effects: usize,
    stored_globals: usize,
    stored_attrs: usize,
    mutated: HashMap<usize, Vid>,
    /// What was raised and caught so far: what is raised after it (a raise past a break
    /// point that goes back here) is raised again by the resume function, not beforehand
    /// by the generated code.
    caught_exceptions: HashMap<usize, Option<framehook_bytecode::Location>>,
    seen_raised: std::collections::HashSet<usize>,
}

impl<'py> Snapshot<'py> {
    fn take(vm: &Vm<'py, '_>) -> Self {
        Snapshot {
            values: vm.values.iter().map(Val::clone_val).collect(),
            cells: vm.cells.clone(),
            graph: vm.graph.clone(),
            side_effects: vm.side_effects.len(),
            stored_globals: vm.stored_globals.len(),
            stored_attrs: vm.stored_attrs.len(),
            mutated: vm.mutated.clone(),
            caught_exceptions: vm.caught_exceptions.clone(),
            seen_raised: vm.seen_raised.clone(),
        }
    }

    fn restore(self, vm: &mut Vm<'py, '_>) {
        vm.values = self.values;
        vm.made_at.truncate(vm.values.len());
        vm.cells = self.cells;
        // Cells made since (an inlined function's closure) are gone.
        let cells = vm.cells.len();
        vm.cell_objects.retain(|_, cell| *cell < cells);
        vm.outside_cells.retain(|cell, _| *cell < cells);
        vm.graph = self.graph;
        vm.side_effects.truncate(self.side_effects);
        vm.stored_globals.truncate(self.stored_globals);
        vm.stored_attrs.truncate(self.stored_attrs);
        vm.mutated = self.mutated;
        vm.caught_exceptions = self.caught_exceptions;
        vm.seen_raised = self.seen_raised;
    }
}

/// What sending None into an iterator gave (one step of `yield from`).
enum Sent {
    Yielded(Vid),
    Returned(Vid),
}

/// An error before it knows where it happened.
enum Problem {
    Break(String),
    Fallback(String),
    /// The translated frame must run as it is (it reads its own frame: `locals()`).
    Eager(String),
    Python(PyErr),
}

impl From<PyErr> for Problem {
    fn from(err: PyErr) -> Self {
        Problem::Python(err)
    }
}

impl From<std::convert::Infallible> for Problem {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl From<pyo3::CastIntoError<'_>> for Problem {
    fn from(err: pyo3::CastIntoError<'_>) -> Self {
        Problem::Python(err.into())
    }
}

type Res<T> = Result<T, Problem>;

fn unsupported<T>(what: impl Into<String>) -> Res<T> {
    Err(Problem::Fallback(what.into()))
}

fn graph_break<T>(reason: impl Into<String>) -> Res<T> {
    Err(Problem::Break(reason.into()))
}

/// The most frames deep inlining goes before a call runs as a call (graph break).
const MAX_INLINE_DEPTH: usize = 24;
/// Items of a list or tuple the translation makes by repetition at most (past it the
/// graph breaks, and the instruction runs natively).
const MAX_MADE_ITEMS: usize = 100_000;
/// How deep a builtin's argument is looked into before computing with it while translating.
const MAX_FOLDED_DEPTH: usize = 16;
/// Instructions one translation simulates at most (loops unroll, calls inline): past it the
/// graph breaks, so that translating stays cheap next to running.
const MAX_STEPS: usize = 5_000;

pub struct Vm<'py, 'b> {
    py: Python<'py>,
    table: &'static Table,
    backend: &'b Backend<'py>,
    pub values: Vec<Val<'py>>,
    cells: Vec<Option<Vid>>,
    pub sources: SourceTable,
    pub guards: Vec<Guard>,
    pub graph: Graph<'py>,
    pub side_effects: Vec<SideEffect>,
    /// Values already made for a source (so that a source is one symbol).
    by_source: HashMap<SourceId, Vid>,
    /// The frame's tensors that are graph inputs, by symbol (their other attributes are read
    /// from them, not from the examples, which are copies).
    input_tensors: HashMap<Sym, Bound<'py, PyAny>>,
    /// Attributes stored on objects from the frame, as later loads see them.
    /// Attributes stored on (or, None, deleted from) objects from the frame, in order.
    stored_attrs: Vec<(usize, String, Option<Vid>)>,
    stored_globals: Vec<(String, Option<Vid>)>,
    /// Lists and dicts from the frame that were mutated: their symbolic copy, by the
    /// object's identity (one object may be reached from several sources).
    mutated: HashMap<usize, Vid>,
    depth: usize,
    ops: Ops<'py>,
    /// What the generated code pushes for a call's NULL slot before 3.11 (a resume
    /// function translated reads it as the NULL it stands for).
    null_substitute: Option<Bound<'py, PyAny>>,
    /// The argument count of the top frame (its sources are its arguments).
    top_arguments: usize,
    top_freevars: usize,
    top_globals: Option<Bound<'py, PyAny>>,
    /// The line and file of the instruction being run, for recorded nodes.
    location: (i32, String),
    /// Real cell objects the translation reads, by identity, and their VM cells.
    cell_objects: HashMap<usize, usize>,
    /// The VM cells that are cells of inlined functions' closures, with their sources.
    outside_cells: HashMap<usize, SourceId>,
    /// Instructions simulated so far (see `MAX_STEPS`).
    steps: usize,
    /// How deep `concrete` is in nested values.
    nesting: usize,
    /// The exceptions being handled, innermost last.
    exc_stack: Vec<Vid>,
    /// Values that are a handler's saved instruction offset (3.11+ `lasti`).
    lasti_values: std::collections::HashSet<Vid>,
    /// Slots where `PUSH_EXC_INFO` saved the previous exception, and the exception it
    /// made current (what a resume function makes current again).
    exception_slots: HashMap<Vid, Vid>,
    /// What `except*` clauses left unhandled (CHECK_EG_MATCH's rest).
    unhandled_groups: std::collections::HashSet<Vid>,
    /// Per value, the top frame's instruction that made it (`usize::MAX`: before the first).
    made_at: Vec<usize>,
    /// The exceptions raised in the translation whose chaining is decided (by address; see
    /// `chain_to_handled`).
    chained: std::collections::HashSet<usize>,
    /// The exceptions a handler of the translation caught, by address: CPython gave them a
    /// traceback. Each with where the top frame raised it where that entry is all the
    /// traceback holds (an instruction of the top frame raised it, caught once, with
    /// exception tables): the generated code raises what it makes again there, for the same
    /// traceback; it can give no other exception one.
    pub caught_exceptions: HashMap<usize, Option<framehook_bytecode::Location>>,
    /// The exceptions some frame's handlers were looked up for, by address (the first
    /// frame to look raised it).
    seen_raised: std::collections::HashSet<usize>,
    /// The top frame's instruction being simulated.
    top_pc: usize,
    /// Top-frame instructions the graph breaks before, so that they run natively: they made
    /// a value a previous attempt's generated code could not rebuild (what it was).
    pub break_before: HashMap<usize, String>,
}

/// Python objects the VM uses, looked up once per translation.
struct Ops<'py> {
    operator: Bound<'py, PyAny>,
    /// The module `builtins` as it is now, for the names user code reads (the VM's own
    /// uses of builtins are `python::builtin`'s).
    builtins: Bound<'py, PyAny>,
    function_type: Bound<'py, PyAny>,
    method_type: Bound<'py, PyAny>,
    property_type: Bound<'py, PyAny>,
    /// A `__slots__` entry's descriptor.
    member_descriptor_type: Bound<'py, PyAny>,
    /// The C descriptor of `__dict__` (and other computed attributes of C types).
    getset_descriptor_type: Bound<'py, PyAny>,
    staticmethod_type: Bound<'py, PyAny>,
    classmethod_type: Bound<'py, PyAny>,
    /// Methods of builtin types (`str.join`, `object.__init__`): unbound C functions.
    c_method_types: Bound<'py, PyTuple>,
    object_getattribute: Bound<'py, PyAny>,
    module_type: Bound<'py, PyAny>,
    range_type: Bound<'py, PyAny>,
    list_iterator_type: Bound<'py, PyAny>,
    /// `collections.OrderedDict`: read as a dict (a layer's table of sublayers).
    ordered_dict_type: Bound<'py, PyAny>,
    /// The type of a namedtuple's fields, a C descriptor reading an item (a heap type from
    /// 3.13 on).
    tuple_getter_type: Bound<'py, PyAny>,
    enum_type: Bound<'py, PyAny>,
    /// `functools.lru_cache`'s wrapper of a function.
    lru_cache_type: Bound<'py, PyAny>,
    none: Bound<'py, PyAny>,
}

impl<'py> Ops<'py> {
    fn new(py: Python<'py>) -> PyResult<Self> {
        let types = import(py, "types")?;
        let collections = import(py, "collections")?;
        let object = builtin(py, "object")?;
        Ok(Self {
            operator: import(py, "operator")?.into_any(),
            function_type: types.getattr("FunctionType")?,
            method_type: types.getattr("MethodType")?,
            module_type: types.getattr("ModuleType")?,
            property_type: builtin(py, "property")?,
            member_descriptor_type: types.getattr("MemberDescriptorType")?,
            getset_descriptor_type: types.getattr("GetSetDescriptorType")?,
            staticmethod_type: builtin(py, "staticmethod")?,
            classmethod_type: builtin(py, "classmethod")?,
            c_method_types: PyTuple::new(
                py,
                [
                    types.getattr("MethodDescriptorType")?,
                    types.getattr("WrapperDescriptorType")?,
                ],
            )?,
            range_type: builtin(py, "range")?,
            list_iterator_type: builtin(py, "iter")?
                .call1((PyList::empty(py),))?
                .get_type()
                .into_any(),
            ordered_dict_type: collections.getattr("OrderedDict")?,
            tuple_getter_type: collections.getattr("_tuplegetter")?,
            enum_type: import(py, "enum")?.getattr("Enum")?,
            lru_cache_type: import(py, "functools")?.getattr("_lru_cache_wrapper")?,
            object_getattribute: object.getattr("__getattribute__")?,
            builtins: import(py, "builtins")?.into_any(),
            none: py.None().into_bound(py),
        })
    }

    fn op(&self, name: &str) -> PyResult<Bound<'py, PyAny>> {
        self.operator.getattr(name)
    }
}

fn binop_name(op: BinOp, inplace: bool) -> &'static str {
    match (op, inplace) {
        (BinOp::Add, false) => "add",
        (BinOp::And, false) => "and_",
        (BinOp::FloorDivide, false) => "floordiv",
        (BinOp::Lshift, false) => "lshift",
        (BinOp::MatrixMultiply, false) => "matmul",
        (BinOp::Multiply, false) => "mul",
        (BinOp::Remainder, false) => "mod",
        (BinOp::Or, false) => "or_",
        (BinOp::Power, false) => "pow",
        (BinOp::Rshift, false) => "rshift",
        (BinOp::Subtract, false) => "sub",
        (BinOp::TrueDivide, false) => "truediv",
        (BinOp::Xor, false) => "xor",
        (BinOp::Subscr, _) => "getitem",
        (BinOp::Add, true) => "iadd",
        (BinOp::And, true) => "iand",
        (BinOp::FloorDivide, true) => "ifloordiv",
        (BinOp::Lshift, true) => "ilshift",
        (BinOp::MatrixMultiply, true) => "imatmul",
        (BinOp::Multiply, true) => "imul",
        (BinOp::Remainder, true) => "imod",
        (BinOp::Or, true) => "ior",
        (BinOp::Power, true) => "ipow",
        (BinOp::Rshift, true) => "irshift",
        (BinOp::Subtract, true) => "isub",
        (BinOp::TrueDivide, true) => "itruediv",
        (BinOp::Xor, true) => "ixor",
    }
}

const COMPARE_NAMES: [&str; 6] = ["lt", "le", "eq", "ne", "gt", "ge"];

/// The methods of a tuple subclass that must be tuple's for its instances to act as tuples.
const TUPLE_BEHAVIOUR: &[&str] = &[
    "__len__",
    "__getitem__",
    "__iter__",
    "__bool__",
    "__contains__",
    "__eq__",
    "__ne__",
    "__hash__",
    "__getattribute__",
    "__init__",
];

/// The binary operators, for `operator`'s functions of them (`binop_name` names each).
const BINARY_OPS: [BinOp; 14] = [
    BinOp::Add,
    BinOp::And,
    BinOp::FloorDivide,
    BinOp::Lshift,
    BinOp::MatrixMultiply,
    BinOp::Multiply,
    BinOp::Remainder,
    BinOp::Or,
    BinOp::Power,
    BinOp::Rshift,
    BinOp::Subtract,
    BinOp::TrueDivide,
    BinOp::Xor,
    BinOp::Subscr,
];

/// Builtins that are pure on constants: called on known values while translating.
const PURE_BUILTINS: &[&str] = &[
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "bool",
    "callable",
    "chr",
    "complex",
    "divmod",
    "float",
    "format",
    "frozenset",
    "hash",
    "hex",
    "int",
    "isinstance",
    "issubclass",
    "len",
    "max",
    "min",
    "oct",
    "ord",
    "pow",
    "repr",
    "round",
    "sorted",
    "str",
    "sum",
    "type",
    "bytes",
    "hasattr",
    "getattr",
    "slice",
];

/// Instances of the builtin containers whose contents may change under the same identity,
/// subclasses included.
fn is_builtin_container(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyDict>()
        || obj.is_instance_of::<pyo3::types::PySet>()
        || obj.is_instance_of::<pyo3::types::PyByteArray>()
}

/// The methods of its argument's class a builtin or an operation runs, in the order it
/// falls back to them (`str()` of an object whose `__str__` is `object`'s runs `__repr__`).
/// With none listed (an operator's `__add__`, `abs()`), it runs one `object` lacks.
fn methods_of_builtin(builtin: &str) -> &'static [&'static str] {
    match builtin {
        "repr" | "ascii" => &["__repr__"],
        "str" => &["__str__", "__repr__"],
        "format" => &["__format__", "__str__", "__repr__"],
        "hash" => &["__hash__"],
        // `x in container`: the container's `__contains__`, the item's hash and `==`.
        "in" => &["__contains__"],
        "member" => &["__hash__", "__eq__"],
        "len" => &["__len__"],
        // Either side's, reflected ones included, and `==` of the items of containers.
        "lt" | "le" | "eq" | "ne" | "gt" | "ge" => {
            &["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]
        }
        _ => &[],
    }
}

/// `dict.keys()`, `values()` or `items()` (of a dict the translation reads or made).
fn is_dict_view(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let ty = obj.get_type();
    Ok(ty.getattr("__module__")?.extract::<String>()? == "builtins"
        && matches!(ty.name()?.to_str()?, "dict_keys" | "dict_values" | "dict_items"))
}

/// A call's positional and keyword arguments, as Python values.
type CallArguments<'py> = (Bound<'py, PyTuple>, Bound<'py, PyDict>);

/// An int or a float (not a bool): what a dynamic source may hold.
fn is_number(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_exact_instance_of::<PyInt>() || obj.is_exact_instance_of::<PyFloat>()
}

/// `items` repeated `times` times (none for a negative count), as `sequence * times`.
fn repeated(items: &[Vid], times: isize) -> Res<Vec<Vid>> {
    let times = times.max(0) as usize;
    if items.len().saturating_mul(times) > MAX_MADE_ITEMS {
        return graph_break(format!("a sequence of more than {MAX_MADE_ITEMS} items"));
    }
    Ok(items.repeat(times))
}

/// Immutable values a translation may embed as constants.
fn is_immutable(obj: &Bound<'_, PyAny>) -> bool {
    let py = obj.py();
    is_value_type(obj)
        || obj.is(py.Ellipsis())
        || obj.is(py.NotImplemented())
        || obj.is_instance_of::<PyType>()
        || obj.is_exact_instance_of::<PyFrozenSet>()
        || obj.is_exact_instance_of::<pyo3::types::PySlice>()
        || obj
            .cast::<PyTuple>()
            .is_ok_and(|t| t.iter().all(|i| is_immutable(&i)))
}

impl<'py, 'b> Vm<'py, 'b> {
    pub fn new(
        py: Python<'py>,
        table: &'static Table,
        backend: &'b Backend<'py>,
        sources: SourceTable,
    ) -> PyResult<Self> {
        Ok(Self {
            py,
            table,
            backend,
            values: Vec::new(),
            cells: Vec::new(),
            sources,
            guards: Vec::new(),
            graph: Graph::default(),
            side_effects: Vec::new(),
            by_source: HashMap::new(),
            input_tensors: HashMap::new(),
            stored_attrs: Vec::new(),
            stored_globals: Vec::new(),
            mutated: HashMap::new(),
            depth: 0,
            ops: Ops::new(py)?,
            null_substitute: null_substitute(table, py)?,
            top_arguments: 0,
            top_freevars: 0,
            top_globals: None,
            location: (-1, String::new()),
            exc_stack: Vec::new(),
            cell_objects: HashMap::new(),
            outside_cells: HashMap::new(),
            steps: 0,
            nesting: 0,
            lasti_values: std::collections::HashSet::new(),
            exception_slots: HashMap::new(),
            unhandled_groups: std::collections::HashSet::new(),
            made_at: Vec::new(),
            chained: std::collections::HashSet::new(),
            caught_exceptions: HashMap::new(),
            seen_raised: std::collections::HashSet::new(),
            top_pc: usize::MAX,
            break_before: HashMap::new(),
        })
    }

    fn push_val(&mut self, val: Val<'py>) -> Vid {
        self.values.push(val);
        self.made_at.push(self.top_pc);
        self.values.len() - 1
    }

    /// The top frame's instruction that made `vid`, if the translated code made it.
    pub fn made_at(&self, vid: Vid) -> Option<usize> {
        self.made_at.get(vid).copied().filter(|pc| *pc != usize::MAX)
    }

    fn constant(&mut self, obj: Bound<'py, PyAny>) -> Vid {
        self.push_val(Val::constant(obj))
    }

    fn boolean(&mut self, value: bool) -> Vid {
        let py = self.py;
        self.constant(PyBool::new(py, value).to_owned().into_any())
    }

    fn none(&mut self) -> Vid {
        let none = self.ops.none.clone();
        self.constant(none)
    }

    pub fn add_guard(&mut self, source: SourceId, check: Check) {
        SourceTable::add_guard(&mut self.guards, source, check);
    }

    /// The id of `source`; an attribute or item of an object pinned by identity is one
    /// source with the same child of the first source pinned to it (`pinned_alias`).
    fn intern(&mut self, source: Source) -> SourceId {
        let source = match source {
            Source::Attr(parent, name) => Source::Attr(SourceTable::pinned_alias(&self.guards, parent), name),
            Source::Item(parent, key) => Source::Item(SourceTable::pinned_alias(&self.guards, parent), key),
            other => other,
        };
        self.sources.intern(source)
    }

    /// The value of a source, made once.
    fn value_of_source(&mut self, source: Source, obj: Bound<'py, PyAny>) -> Vid {
        let id = self.intern(source);
        if let Some(vid) = self.by_source.get(&id) {
            return *vid;
        }
        let vid = self.push_val(Val::Obj {
            obj,
            source: Some(id),
        });
        self.by_source.insert(id, vid);
        vid
    }

    fn val(&self, vid: Vid) -> &Val<'py> {
        &self.values[vid]
    }

    // ---- Making values concrete (and guarding what that depends on) ----

    /// A frame value that is a tensor becomes a graph input; a dynamic number used as
    /// anything but an arithmetic operand is specialized; anything else stays.
    fn realize(&mut self, vid: Vid) -> Res<Vid> {
        if let Val::Scalar { example, deps, .. } = self.val(vid) {
            let (example, deps) = (example.clone(), deps.clone());
            for (source, value) in deps {
                self.guard_value(source, &value)?;
            }
            self.values[vid] = Val::constant(example);
            return Ok(vid);
        }
        self.realize_tensor(vid)
    }

    /// A frame value that is a tensor becomes a graph input; anything else stays.
    fn realize_tensor(&mut self, vid: Vid) -> Res<Vid> {
        if let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(vid)
        {
            if self.backend.is_tensor(obj) {
                let (obj, source) = (obj.clone(), *source);
                let check = self.backend.tensor_check(&obj)?;
                self.add_guard(source, check);
                let example = self.backend.example(&obj)?;
                let sym = self.add_input(source);
                self.input_tensors.insert(sym, obj);
                self.values[vid] = Val::Tensor { sym, example };
            }
        }
        Ok(vid)
    }

    /// A dynamic number from the frame as a graph input (guarded on its type only).
    fn scalar_input(&mut self, vid: Vid) -> Vid {
        if let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(vid)
        {
            let (obj, source) = (obj.clone(), *source);
            self.guard_type(vid);
            let sym = self.add_input(source);
            self.values[vid] = Val::Scalar {
                sym,
                example: obj.clone(),
                deps: vec![(source, obj)],
            };
        }
        vid
    }

    fn realize_deep(&mut self, vid: Vid) -> Res<()> {
        self.realize(vid)?;
        let parts: Vec<Vid> = match self.val(vid) {
            Val::Tuple(items) | Val::List(items) | Val::NamedTuple { items, .. } => items.clone(),
            Val::Slice(a, b, c) => vec![*a, *b, *c],
            _ => return Ok(()),
        };
        parts.into_iter().try_for_each(|p| self.realize_deep(p))
    }

    /// A new graph input's symbol. Inputs come first: met after operations were recorded,
    /// the symbols of the operations' results are renumbered.
    fn add_input(&mut self, source: SourceId) -> Sym {
        let inputs = self.graph.inputs.len();
        self.graph.inputs.push(source);
        if self.graph.nodes.is_empty() {
            return inputs;
        }
        let shift = |sym: &mut Sym| {
            if *sym >= inputs {
                *sym += 1;
            }
        };
        for value in &mut self.values {
            if let Val::Tensor { sym, .. } | Val::Scalar { sym, .. } = value {
                shift(sym);
            }
        }
        for node in &mut self.graph.nodes {
            node.visit_syms(&mut |sym| shift(sym));
        }
        inputs
    }

    /// The Python object a value stands for, guarding its source on the whole value.
    fn concrete(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
        // Containers nest by recursion here: a list nested thousands deep must not
        // exhaust the native stack.
        if self.nesting >= MAX_NESTING {
            return unsupported(format!("a value nested more than {MAX_NESTING} deep"));
        }
        self.nesting += 1;
        let made = self.make_concrete(vid);
        self.nesting -= 1;
        made
    }

    fn make_concrete(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
        let vid = self.realize(vid)?;
        match self.val(vid).clone_val() {
            Val::Obj { obj, source } => {
                if let Some(source) = source {
                    if let Some(copy) = self.mutated.get(&(obj.as_ptr() as usize)).copied() {
                        // Its contents as the translation has changed them.
                        return self.concrete(copy);
                    }
                    self.guard_value(source, &obj)?;
                }
                Ok(obj)
            }
            Val::Tensor { .. } => graph_break("tensor to python value (data-dependent)"),
            Val::Scalar { .. } => unreachable!("realize specializes a dynamic number"),
            Val::Tuple(items) => {
                let objs = items.iter().map(|i| self.concrete(*i)).collect::<Res<Vec<_>>>()?;
                Ok(PyTuple::new(self.py, objs)?.into_any())
            }
            Val::Constructed { obj, .. } => Ok(obj.clone()),
            Val::NamedTuple { class, items } => {
                let objs = items.iter().map(|i| self.concrete(*i)).collect::<Res<Vec<_>>>()?;
                let tuple_new = self.py.get_type::<PyTuple>().getattr("__new__")?;
                Ok(tuple_new.call1((class, PyTuple::new(self.py, objs)?))?)
            }
            Val::List(items) => {
                let objs = items.iter().map(|i| self.concrete(*i)).collect::<Res<Vec<_>>>()?;
                Ok(PyList::new(self.py, objs)?.into_any())
            }
            Val::Set(items) => {
                let objs = items.iter().map(|i| self.concrete(*i)).collect::<Res<Vec<_>>>()?;
                Ok(pyo3::types::PySet::new(self.py, objs)?.into_any())
            }
            Val::Dict(items) => {
                let dict = PyDict::new(self.py);
                for (k, v) in items {
                    dict.set_item(self.concrete(k)?, self.concrete(v)?)?;
                }
                Ok(dict.into_any())
            }
            // A view of the dict as it is now: what is done with it now sees the same.
            Val::DictView { dict, part } => Ok(self.concrete(dict)?.call_method0(part.method())?),
            Val::Slice(a, b, c) => {
                let (a, b, c) = (self.concrete(a)?, self.concrete(b)?, self.concrete(c)?);
                Ok(builtin(self.py, "slice")?.call1((a, b, c))?)
            }
            Val::Function(f) => match &f.object {
                Some(object) if f.closure.is_empty() => Ok(object.clone()),
                _ => unsupported("a function made by the translated code used as a value"),
            },
            Val::Method { function, receiver } => {
                let (f, r) = (self.concrete(function)?, self.concrete(receiver)?);
                Ok(self.ops.method_type.call1((f, r))?)
            }
            Val::TensorMethod { .. } => graph_break("tensor method used as a value (tensor to python)"),
            Val::Null => unsupported("NULL used as a value"),
            Val::Object { class, .. } => unsupported(format!(
                "a {} object the translation made, used as a Python value",
                qualname(&class)
            )),
            Val::Interpolation(parts) => {
                let parts = parts.iter().map(|p| self.concrete(*p)).collect::<Res<Vec<_>>>()?;
                Ok(self
                    .templatelib("Interpolation")?
                    .call1(PyTuple::new(self.py, parts)?)?)
            }
            Val::Template(parts) => {
                let parts = parts.iter().map(|p| self.concrete(*p)).collect::<Res<Vec<_>>>()?;
                Ok(self
                    .templatelib("Template")?
                    .call1(PyTuple::new(self.py, parts)?)?)
            }
            Val::ContainerMethod { .. }
            | Val::Iter { .. }
            | Val::ListIter { .. }
            | Val::Lazy(_)
            | Val::DictIter(_)
            | Val::Generator(_)
            | Val::Cell(_)
            | Val::Super { .. } => unsupported("an iterator, cell or bound container method used as a value"),
        }
    }

    /// Guards `source` on `obj` as a whole: its value for immutable values and for lists,
    /// dicts and sets of values (compared with a copy: the object itself may be mutated
    /// between calls), else its identity.
    fn guard_value(&mut self, source: SourceId, obj: &Bound<'py, PyAny>) -> Res<()> {
        if is_value_type(obj) {
            self.add_guard(source, Check::Equals(StrongRef::new(obj)));
        } else if self.backend.is_constant_value(obj) {
            // A dtype or a place read anew each time (`tensor.place`): equal, not the same object.
            self.add_guard(source, Check::SameValue(StrongRef::new(obj)));
        } else if is_mutable_container(obj) {
            if !holds_values_only(obj, VALUE_NESTING)? {
                return graph_break(format!(
                    "a {} from the frame holding objects, used as a Python value (its contents cannot be guarded)",
                    obj.get_type().name()?
                ));
            }
            let copy = import(self.py, "copy")?.getattr("deepcopy")?.call1((obj,))?;
            self.add_guard(source, Check::Equals(StrongRef::new(&copy)));
        } else if is_builtin_container(obj) {
            // A subclass of list, dict or set, or a bytearray: a pin fixes the object, not what
            // it holds, and whoever takes it as a value (a builtin called with it) reads that.
            return graph_break(format!(
                "a {} from the frame used as a Python value (its contents cannot be guarded)",
                obj.get_type().name()?
            ));
        } else {
            self.pin(source, obj)?;
        }
        Ok(())
    }

    /// Guards that `source` holds `obj` itself. Not an exception from the frame: each call
    /// raises a new one (the guard would fail every time), and holding it would keep its
    /// traceback's frames, and their locals, alive as long as the translation.
    fn pin(&mut self, source: SourceId, obj: &Bound<'py, PyAny>) -> Res<()> {
        if obj.is_instance(&self.py.get_type::<pyo3::exceptions::PyBaseException>())? {
            return graph_break("an exception from the frame used as a value");
        }
        self.add_guard(source, Check::Id(Pin::new(obj)));
        Ok(())
    }

    /// The object a value stands for where only its identity matters (`is`).
    fn identity_of(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
        if let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(vid)
        {
            if !is_value_type(obj) {
                let (obj, source) = (obj.clone(), *source);
                self.pin(source, &obj)?;
                return Ok(obj);
            }
        }
        self.concrete(vid)
    }

    fn guard_type(&mut self, vid: Vid) {
        if let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(vid)
        {
            let (ty, source) = (obj.get_type().into_any(), *source);
            self.add_guard(source, Check::Type(StrongRef::new(&ty)));
        }
    }

    /// The type of a value, guarding only that.
    fn type_of(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
        let vid = self.realize(vid)?;
        Ok(match self.val(vid) {
            Val::Obj { obj, .. } => {
                let ty = obj.get_type().into_any();
                self.guard_type(vid);
                ty
            }
            Val::Tensor { example, .. } => example.get_type().into_any(),
            Val::Tuple(_) => self.py.get_type::<PyTuple>().into_any(),
            Val::NamedTuple { class, .. } => class.clone(),
            Val::Constructed { obj, .. } => obj.get_type().into_any(),
            Val::List(_) => self.py.get_type::<PyList>().into_any(),
            Val::Dict(_) => self.py.get_type::<PyDict>().into_any(),
            Val::DictView { part, .. } => PyDict::new(self.py)
                .call_method0(part.method())?
                .get_type()
                .into_any(),
            Val::Set(_) => self.py.get_type::<pyo3::types::PySet>().into_any(),
            Val::Slice(..) => self.py.get_type::<pyo3::types::PySlice>().into_any(),
            Val::Function(_) => self.ops.function_type.clone(),
            Val::Method { .. } => self.ops.method_type.clone(),
            Val::Object { class, .. } => class.clone(),
            Val::Generator(_) => import(self.py, "types")?.getattr("GeneratorType")?,
            Val::Lazy(lazy) => match lazy {
                Lazy::Range { .. } => builtin(self.py, "iter")?
                    .call1((builtin(self.py, "range")?.call1((0,))?,))?
                    .get_type()
                    .into_any(),
                Lazy::Zip(_) => builtin(self.py, "zip")?,
                Lazy::Enumerate { .. } => builtin(self.py, "enumerate")?,
                Lazy::Map { .. } => builtin(self.py, "map")?,
                Lazy::Filter { .. } => builtin(self.py, "filter")?,
            },
            Val::Interpolation(_) => self.templatelib("Interpolation")?,
            Val::Template(_) => self.templatelib("Template")?,
            _ => return unsupported("the type of an internal value"),
        })
    }

    fn truthy(&mut self, vid: Vid) -> Res<bool> {
        let vid = self.realize(vid)?;
        match self.val(vid) {
            Val::Tensor { .. } => graph_break("data-dependent branch on a tensor's value"),
            Val::Tuple(items) | Val::List(items) | Val::Set(items) | Val::NamedTuple { items, .. } => {
                Ok(!items.is_empty())
            }
            Val::Dict(items) => Ok(!items.is_empty()),
            Val::DictView { dict, .. } => self.truthy(*dict),
            Val::Function(_)
            | Val::Method { .. }
            | Val::DictIter(_)
            | Val::TensorMethod { .. }
            | Val::ContainerMethod { .. }
            | Val::Iter { .. }
            | Val::ListIter { .. }
            | Val::Lazy(_)
            | Val::Generator(_)
            | Val::Interpolation(_)
            | Val::Template(_) => Ok(true),
            Val::Obj { obj, source } => {
                let (obj, source) = (obj.clone(), *source);
                if let Some(source) = source {
                    if let Some(copy) = self.mutated.get(&(obj.as_ptr() as usize)).copied() {
                        return self.truthy(copy);
                    }
                    if obj.is_exact_instance_of::<PyList>() || obj.is_exact_instance_of::<PyDict>() {
                        self.guard_type(vid);
                        self.add_guard(source, Check::Len(obj.len()?));
                        return Ok(obj.len()? > 0);
                    }
                    if !is_value_type(&obj) {
                        let class = obj.get_type().into_any();
                        return match self.inlined_truth(vid, &class)? {
                            Some(truth) => Ok(truth),
                            None => {
                                self.guard_type(vid);
                                Ok(true)
                            }
                        };
                    }
                    self.guard_value(source, &obj)?;
                }
                Ok(obj.is_truthy()?)
            }
            Val::Object { class, .. } => {
                let class = class.clone();
                Ok(self.inlined_truth(vid, &class)?.unwrap_or(true))
            }
            _ => self.concrete(vid)?.is_truthy().map_err(Problem::from),
        }
    }

    /// The truth of an instance of `class` as CPython finds it: its `__bool__`, else its
    /// `__len__`, inlined where it is Python code (it may read state that changes under the
    /// same identity), its result checked as CPython checks it. None where the class has
    /// neither: the object is true.
    fn inlined_truth(&mut self, vid: Vid, class: &Bound<'py, PyAny>) -> Res<Option<bool>> {
        for name in ["__bool__", "__len__"] {
            let Some(method) = self.type_lookup(class, name)? else {
                continue;
            };
            if !method.is_instance(&self.ops.function_type)? {
                return unsupported(format!(
                    "truth value of a {} object (its {name} is not Python code)",
                    qualname(class)
                ));
            }
            self.guard_type(vid);
            let function = self.constant(method);
            let result = self.call(function, vec![vid], vec![])?;
            let result_type = self.type_of(result)?;
            let fits = if name == "__bool__" {
                result_type.is(self.py.get_type::<PyBool>())
            } else {
                result_type.is(self.py.get_type::<PyInt>())
                    && self.concrete(result)?.extract::<i64>().is_ok_and(|n| n >= 0)
            };
            if !fits {
                return graph_break(format!(
                    "truth value of a {} object: its {name} gave a value CPython would check",
                    qualname(class)
                ));
            }
            return self.truthy(result).map(Some);
        }
        Ok(None)
    }

    /// The items of an iterable, known while translating (iteration unrolls).
    fn items_of(&mut self, vid: Vid) -> Res<Vec<Vid>> {
        let vid = self.realize(vid)?;
        match self.val(vid).clone_val() {
            Val::Tuple(items) | Val::List(items) | Val::Set(items) | Val::NamedTuple { items, .. } => {
                Ok(items)
            }
            Val::Dict(items) => Ok(items.iter().map(|(k, _)| *k).collect()),
            Val::DictView { dict, part } => match part {
                DictPart::Keys => self.items_of(dict),
                DictPart::Values => Ok(self.dict_items(dict)?.into_iter().map(|(_, v)| v).collect()),
                DictPart::Items => Ok(self
                    .dict_items(dict)?
                    .into_iter()
                    .map(|(k, v)| self.tuple_of(vec![k, v]))
                    .collect()),
            },
            // A template iterates over its non-empty strings and its interpolations.
            Val::Template(parts) => {
                let mut items = Vec::with_capacity(parts.len());
                for (index, part) in parts.into_iter().enumerate() {
                    if index % 2 == 1 || !self.concrete(part)?.is_empty()? {
                        items.push(part);
                    }
                }
                Ok(items)
            }
            Val::Iter { .. } | Val::ListIter { .. } | Val::Generator(_) | Val::DictIter(_) | Val::Lazy(_) => {
                let mut items = Vec::new();
                while let Some(item) = self.advance(vid)? {
                    items.push(item);
                }
                Ok(items)
            }
            Val::Constructed {
                obj, args, kwargs, ..
            } => {
                // Made from arguments the same on every call, and iterating it (read only)
                // yields what it was made of: each item is the argument that is that object.
                let made_of = [args, kwargs];
                let items: Vec<Bound<'py, PyAny>> =
                    with_session(None, || obj.try_iter()?.collect::<PyResult<_>>())?;
                items
                    .into_iter()
                    .map(|item| match self.argument_that_is(&made_of, &item) {
                        Some(argument) => Ok(argument),
                        None if is_immutable(&item) => Ok(self.constant(item)),
                        None => unsupported(format!(
                            "an item of a {} the translation made that is none of the objects it was made from",
                            qualname(&obj.get_type().into_any())
                        )),
                    })
                    .collect()
            }
            Val::Tensor { example, .. } => {
                let rows = example
                    .len()
                    .map_err(|_| Problem::Break("iteration over a 0-d tensor".into()))?;
                let getitem = self.ops.op("getitem")?;
                (0..rows)
                    .map(|i| {
                        let index = self.constant(i.into_pyobject(self.py)?.into_any());
                        self.record(&getitem, vec![vid, index], vec![])
                    })
                    .collect()
            }
            Val::Obj { obj, source } => {
                if let Some(source) = source {
                    if let Some(copy) = self.mutated.get(&(obj.as_ptr() as usize)) {
                        return self.items_of(*copy);
                    }
                    if obj.is_exact_instance_of::<PyList>() || obj.is_exact_instance_of::<PyTuple>() {
                        self.guard_type(vid);
                        let len = obj.len()?;
                        self.add_guard(source, Check::Len(len));
                        return (0..len)
                            .map(|i| {
                                let item = obj.get_item(i)?;
                                let key = i.into_pyobject(self.py)?.into_any();
                                Ok(self.value_of_source(Source::Item(source, StrongRef::new(&key)), item))
                            })
                            .collect();
                    }
                    if obj.is_exact_instance_of::<PyDict>() {
                        let keys = PyTuple::new(self.py, obj.cast::<PyDict>().map_err(PyErr::from)?.keys())?;
                        self.guard_type(vid);
                        self.add_guard(source, Check::Keys(StrongRef::new(keys.as_any())));
                        return Ok(keys.iter().map(|k| self.constant(k)).collect());
                    }
                    if self.is_ordered_dict(&obj) {
                        // Its own order (the dict's may differ after `move_to_end`).
                        let keys = PyTuple::new(self.py, obj.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
                        let check = Check::OrderedKeys {
                            ty: StrongRef::new(&self.ops.ordered_dict_type),
                            keys: StrongRef::new(keys.as_any()),
                        };
                        self.add_guard(source, check);
                        return Ok(keys.iter().map(|k| self.constant(k)).collect());
                    }
                }
                let safe = obj.is_exact_instance_of::<PyString>()
                    || obj.is_exact_instance_of::<PyTuple>()
                    || obj.is_exact_instance_of::<PyFrozenSet>()
                    || obj.is_exact_instance_of::<pyo3::types::PyBytes>()
                    || obj.get_type().is(&self.ops.range_type)
                    || self.is_template(&obj)
                    || self.backend.is_constant_value(&obj);
                if !safe {
                    return unsupported(format!("iteration over {}", obj.get_type().name()?));
                }
                let obj = self.concrete(vid)?;
                // `range(sys.maxsize)` (its length may not even fit): iterated lazily
                // (`iterator`), never listed.
                if obj.get_type().is(&self.ops.range_type) && obj.len().map_or(true, |n| n > MAX_MADE_ITEMS) {
                    return graph_break(format!("a sequence of more than {MAX_MADE_ITEMS} items"));
                }
                let items: Vec<Bound<'py, PyAny>> = obj.try_iter()?.collect::<PyResult<_>>()?;
                Ok(items.into_iter().map(|i| self.constant(i)).collect())
            }
            _ => unsupported("iteration over an internal value"),
        }
    }

    // ---- Recording operations ----

    fn graph_arg(&mut self, vid: Vid) -> Res<(GraphArg<'py>, Bound<'py, PyAny>)> {
        let vid = self.realize(vid)?;
        Ok(match self.val(vid).clone_val() {
            Val::Tensor { sym, example } => (GraphArg::Sym(sym), example),
            Val::Tuple(items) => {
                let (args, examples): (Vec<_>, Vec<_>) = items
                    .iter()
                    .map(|i| self.graph_arg(*i))
                    .collect::<Res<Vec<_>>>()?
                    .into_iter()
                    .unzip();
                (GraphArg::Tuple(args), PyTuple::new(self.py, examples)?.into_any())
            }
            Val::List(items) => {
                let (args, examples): (Vec<_>, Vec<_>) = items
                    .iter()
                    .map(|i| self.graph_arg(*i))
                    .collect::<Res<Vec<_>>>()?
                    .into_iter()
                    .unzip();
                (GraphArg::List(args), PyList::new(self.py, examples)?.into_any())
            }
            // A list or tuple from the frame, by its items (as the translation holds them
            // now: a list it changed is its copy).
            Val::Obj { obj, source: Some(_) }
                if obj.is_exact_instance_of::<PyList>() || obj.is_exact_instance_of::<PyTuple>() =>
            {
                let is_list = obj.is_exact_instance_of::<PyList>();
                let items = self.items_of(vid)?;
                let made = self.push_val(if is_list {
                    Val::List(items)
                } else {
                    Val::Tuple(items)
                });
                self.graph_arg(made)?
            }
            Val::Slice(a, b, c) => {
                let (a, ea) = self.graph_arg(a)?;
                let (b, eb) = self.graph_arg(b)?;
                let (c, ec) = self.graph_arg(c)?;
                let example = builtin(self.py, "slice")?.call1((ea, eb, ec))?;
                (GraphArg::Slice(Box::new([a, b, c])), example)
            }
            _ => {
                let obj = self.concrete(vid)?;
                if !is_immutable(&obj) && !obj.is_callable() && !self.is_dtype_like(&obj) {
                    return unsupported(format!(
                        "a mutable {} passed to a tensor operation",
                        obj.get_type().name()?
                    ));
                }
                (GraphArg::Const(obj.clone()), obj)
            }
        })
    }

    fn is_dtype_like(&self, obj: &Bound<'py, PyAny>) -> bool {
        self.backend.is_constant_operand(obj)
    }

    /// Records `function(*args, **kwargs)` as an operation; its result is a tensor
    /// (or a container of tensors) computed on the example values.
    fn record(
        &mut self,
        function: &Bound<'py, PyAny>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<Vid> {
        // Inputs first: realizing one renumbers the symbols of the operations' results.
        for arg in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
            self.realize_deep(*arg)?;
        }
        let mut graph_args = Vec::with_capacity(args.len());
        let mut examples = Vec::with_capacity(args.len());
        for arg in args {
            let (g, e) = self.graph_arg(arg)?;
            graph_args.push(g);
            examples.push(e);
        }
        let kw = PyDict::new(self.py);
        let mut graph_kwargs = Vec::with_capacity(kwargs.len());
        for (name, arg) in kwargs {
            let (g, e) = self.graph_arg(arg)?;
            kw.set_item(&name, e)?;
            graph_kwargs.push((name, g));
        }
        let result = function.call(PyTuple::new(self.py, examples)?, Some(&kw))?;
        let sym = self.push_node(function, graph_args, graph_kwargs, NodeKind::Operation);
        self.result_value(sym, result)
    }

    /// Adds a node at the current location; its result's symbol.
    fn push_node(
        &mut self,
        function: &Bound<'py, PyAny>,
        args: Vec<GraphArg<'py>>,
        kwargs: Vec<(String, GraphArg<'py>)>,
        kind: NodeKind,
    ) -> Sym {
        let (line, filename) = self.location.clone();
        self.graph.nodes.push(Node {
            function: function.clone(),
            args,
            kwargs,
            kind,
            line,
            filename,
        });
        self.graph.symbol_count() - 1
    }

    /// The value of an operation's result `example` held by symbol `sym`.
    fn result_value(&mut self, sym: Sym, example: Bound<'py, PyAny>) -> Res<Vid> {
        if self.backend.is_tensor(&example) {
            return Ok(self.push_val(Val::Tensor { sym, example }));
        }
        if example.is_none() {
            return Ok(self.none());
        }
        let is_tuple = example.is_exact_instance_of::<PyTuple>();
        if is_tuple || example.is_exact_instance_of::<PyList>() {
            let items: Vec<Bound<'py, PyAny>> = example.try_iter()?.collect::<PyResult<_>>()?;
            if items.iter().all(|i| self.backend.is_tensor(i)) {
                let getitem = self.ops.op("getitem")?;
                let mut vids = Vec::with_capacity(items.len());
                for (index, item) in items.into_iter().enumerate() {
                    let args = vec![
                        GraphArg::Sym(sym),
                        GraphArg::Const(index.into_pyobject(self.py)?.into_any()),
                    ];
                    let item_sym = self.push_node(&getitem, args, vec![], NodeKind::Projection);
                    vids.push(self.push_val(Val::Tensor {
                        sym: item_sym,
                        example: item,
                    }));
                }
                return Ok(self.push_val(if is_tuple {
                    Val::Tuple(vids)
                } else {
                    Val::List(vids)
                }));
            }
        }
        graph_break(format!(
            "tensor to python: an operation returned a {} computed from tensor values",
            example.get_type().name()?
        ))
    }

    fn is_tensor_val(&self, vid: Vid) -> bool {
        match self.val(vid) {
            Val::Tensor { .. } => true,
            Val::Obj { obj, source: Some(_) } => self.backend.is_tensor(obj),
            _ => false,
        }
    }

    fn contains_tensor(&self, vid: Vid) -> bool {
        let kinds = self.tensor_kinds([vid]);
        kinds.arrays || kinds.tensors
    }

    /// What tensors `vids` hold, in containers too: the backend's arrays, its other tensors.
    fn tensor_kinds(&self, vids: impl IntoIterator<Item = Vid>) -> TensorKinds {
        let mut kinds = TensorKinds::default();
        // Without recursion, and each container once: a list may hold itself.
        let mut pending: Vec<Vid> = vids.into_iter().collect();
        let mut containers_seen = Vec::new();
        while let Some(vid) = pending.pop() {
            match self.val(vid) {
                Val::Tuple(items) | Val::List(items) | Val::NamedTuple { items, .. }
                    if !containers_seen.contains(&vid) =>
                {
                    containers_seen.push(vid);
                    pending.extend(items);
                }
                Val::Tuple(_) | Val::List(_) | Val::NamedTuple { .. } => {}
                Val::Slice(a, b, c) => pending.extend([*a, *b, *c]),
                Val::Tensor { example: obj, .. } | Val::Obj { obj, source: Some(_) }
                    if self.backend.is_tensor(obj) =>
                {
                    if self.backend.is_array(obj) {
                        kinds.arrays = true;
                    } else {
                        kinds.tensors = true;
                    }
                }
                _ => {}
            }
        }
        kinds
    }

    /// The kinds of tensor the operands of `what`, an operation on the backend's arrays, hold:
    /// one of its other tensors breaks, as the operation would read its values as an array.
    fn array_operands(&self, what: &str, args: &[Vid], kwargs: &[(String, Vid)]) -> Res<TensorKinds> {
        let kinds = self.tensor_kinds(args.iter().copied().chain(kwargs.iter().map(|(_, v)| *v)));
        if kinds.tensors {
            return graph_break(format!(
                "tensor to python: {what}() of a tensor (it reads the tensor as an array: data-dependent)"
            ));
        }
        Ok(kinds)
    }

    /// A number from a source seen to change between calls, not made a graph input yet.
    fn is_dynamic_number(&self, vid: Vid) -> bool {
        match self.val(vid) {
            Val::Obj {
                obj,
                source: Some(source),
            } => self.sources.is_dynamic(*source) && is_number(obj),
            _ => false,
        }
    }

    /// Arithmetic on a dynamic number, recorded so that the number is not guarded on its
    /// value. Only operators whose result's kind cannot depend on the numbers' values: a
    /// tensor's meta attributes are kept by a Python number operand (numpy's NEP 50); of
    /// numbers alone, a division (always a float) and a float's power of an int (always a
    /// float) too, which may raise for a value the translation did not see (a division by
    /// zero, an overflow): the graph raises it, at the operation's line.
    /// None when the operation is computed the usual way.
    fn dynamic_arithmetic(
        &mut self,
        name: &str,
        function: &Bound<'py, PyAny>,
        args: &[Vid],
    ) -> Res<Option<Vid>> {
        const ON_NUMBERS: &[&str] = &[
            "add", "sub", "mul", "iadd", "isub", "imul", "neg", "pos", "lt", "le", "eq", "ne", "gt", "ge",
        ];
        const ON_TENSORS: &[&str] = &["truediv", "floordiv", "mod", "itruediv", "ifloordiv", "imod"];
        const FLOAT_RESULTS: &[&str] = &["truediv", "itruediv", "pow", "ipow"];
        let dynamic =
            |vm: &Self, a: &Vid| vm.is_dynamic_number(*a) || matches!(vm.val(*a), Val::Scalar { .. });
        if !args.iter().any(|a| dynamic(self, a)) {
            return Ok(None);
        }
        let with_tensor = args.iter().any(|a| self.is_tensor_val(*a));
        let float_result = !with_tensor && FLOAT_RESULTS.contains(&name);
        if !(ON_NUMBERS.contains(&name) || with_tensor && ON_TENSORS.contains(&name) || float_result) {
            return Ok(None);
        }
        let mut examples = Vec::with_capacity(args.len());
        for &arg in args {
            let arg = self.realize_tensor(arg)?;
            match self.val(arg) {
                Val::Tensor { example, .. } | Val::Scalar { example, .. } => examples.push(example.clone()),
                Val::Obj { obj, .. } if is_number(obj) || obj.is_exact_instance_of::<PyBool>() => {
                    examples.push(obj.clone())
                }
                _ => return Ok(None),
            }
        }
        if float_result && name.ends_with("pow") {
            let float_of_int = examples.len() == 2
                && examples[0].is_exact_instance_of::<PyFloat>()
                && examples[1].is_exact_instance_of::<PyInt>();
            if !float_of_int {
                return Ok(None);
            }
        }
        let result = function.call1(PyTuple::new(self.py, examples)?)?;
        if float_result && !result.is_exact_instance_of::<PyFloat>() {
            return Ok(None);
        }
        let tensor_result = self.backend.is_tensor(&result);
        let number_result = is_number(&result) || result.is_exact_instance_of::<PyBool>();
        if !(tensor_result || !with_tensor && number_result) {
            return Ok(None);
        }
        // Inputs first: making one renumbers the symbols of the operations' results.
        for &arg in args {
            if self.is_dynamic_number(arg) {
                self.scalar_input(arg);
            }
        }
        let mut graph_args = Vec::with_capacity(args.len());
        let mut deps: Vec<(SourceId, Bound<'py, PyAny>)> = Vec::new();
        for &arg in args {
            if let Val::Scalar { sym, deps: own, .. } = self.val(arg) {
                graph_args.push(GraphArg::Sym(*sym));
                for dep in own {
                    if !deps.iter().any(|(source, _)| *source == dep.0) {
                        deps.push(dep.clone());
                    }
                }
            } else {
                graph_args.push(self.graph_arg(arg)?.0);
            }
        }
        let kind = if tensor_result {
            NodeKind::Operation
        } else {
            NodeKind::Arithmetic
        };
        let sym = self.push_node(function, graph_args, vec![], kind);
        Ok(Some(if tensor_result {
            self.result_value(sym, result)?
        } else {
            self.push_val(Val::Scalar {
                sym,
                example: result,
                deps,
            })
        }))
    }

    /// `operator.<name>(*args)`: an operation if a tensor takes part, else computed now.
    fn operator_call(&mut self, name: &str, args: Vec<Vid>) -> Res<Vid> {
        let function = self.ops.op(name)?;
        if let Some(result) = self.dynamic_arithmetic(name, &function, &args)? {
            return Ok(result);
        }
        if args.iter().any(|a| self.contains_tensor(*a)) {
            return self.record(&function, args, vec![]);
        }
        // Computed now, where every later call passing the guards computes the same.
        let mut objs = Vec::with_capacity(args.len());
        for arg in &args {
            match self.folded_argument(*arg, name)? {
                Some(obj) => objs.push(obj),
                None => return self.refuse_folding(&format!("operator {name}"), *arg),
            }
        }
        let result = function.call1(PyTuple::new(self.py, objs)?)?;
        Ok(self.wrap_result(result))
    }

    /// A computed Python value: mutable containers become symbolic ones.
    fn wrap_result(&mut self, result: Bound<'py, PyAny>) -> Vid {
        if result.is_exact_instance_of::<PyList>() {
            let items: Vec<Vid> = result
                .try_iter()
                .map(|it| it.flatten().map(|i| self.wrap_result(i)).collect())
                .unwrap_or_default();
            return self.push_val(Val::List(items));
        }
        if let Ok(dict) = result.cast::<PyDict>() {
            if dict.is_exact_instance_of::<PyDict>() {
                let items: Vec<(Vid, Vid)> = dict
                    .iter()
                    .map(|(k, v)| (self.constant(k), self.wrap_result(v)))
                    .collect();
                return self.push_val(Val::Dict(items));
            }
        }
        if result.is_exact_instance_of::<pyo3::types::PySet>() {
            let items: Vec<Vid> = result
                .try_iter()
                .map(|it| it.flatten().map(|i| self.constant(i)).collect())
                .unwrap_or_default();
            return self.push_val(Val::Set(items));
        }
        self.constant(result)
    }
}

/// Whether the class's instances have a `__dict__` (else only their slots).
fn has_instance_dict(class: &Bound<'_, PyAny>) -> bool {
    class
        .getattr("__dictoffset__")
        .and_then(|d| d.extract::<isize>())
        .unwrap_or(0)
        != 0
}

// The per-instruction location, kept on the VM for recorded nodes and errors.
impl<'py, 'b> Vm<'py, 'b> {
    /// Where the problem arose: the innermost instruction running (in an inlined
    /// callee, the callee's line).
    fn located(&self, problem: Problem) -> Stop {
        let (line, filename) = self.location.clone();
        match problem {
            Problem::Break(reason) => Stop::Break {
                reason,
                line,
                filename,
            },
            Problem::Fallback(reason) | Problem::Eager(reason) => Stop::Fallback {
                reason,
                line,
                filename,
            },
            Problem::Python(err) => {
                let reason = format!(
                    "{}: {}",
                    err.get_type(self.py).name().map_or("?".into(), |n| n.to_string()),
                    err.value(self.py)
                );
                Stop::Fallback {
                    reason: format!("raised while translating: {reason}"),
                    line,
                    filename,
                }
            }
        }
    }
}

impl<'py, 'b> Vm<'py, 'b> {
    fn new_frame(
        &mut self,
        code: &Bound<'py, PyAny>,
        info: &CodeInfo,
        globals: Bound<'py, PyAny>,
    ) -> PyResult<Frame<'py>> {
        let all = info.vars.all().len();
        let null = self.push_val(Val::Null);
        Ok(Frame {
            instrs: std::rc::Rc::clone(&info.instrs),
            consts: code.getattr("co_consts")?.cast_into::<PyTuple>()?,
            names: code.getattr("co_names")?.cast_into::<PyTuple>()?,
            vars: info.vars.clone(),
            locals: vec![null; all],
            globals,
            stack: Vec::new(),
            pc: 0,
            filename: info.filename.clone(),
            yielded: None,
            in_loop: std::rc::Rc::clone(&info.in_loop),
            class_cell: None,
            argcount: info.argcount,
            globals_source: None,
            blocks: Vec::new(),
            resumed: false,
        })
    }

    /// Makes a cell for every cell variable (holding its argument, if it is one)
    /// and puts the closure's cells in the free variables' slots.
    fn setup_cells(&mut self, frame: &mut Frame<'py>, closure: &[usize]) {
        let all: Vec<String> = frame.vars.all().iter().map(|s| s.to_string()).collect();
        for cell in frame.vars.cellvars.clone() {
            let slot = all.iter().position(|n| *n == cell).expect("cells are variables");
            let initial = match self.val(frame.locals[slot]) {
                Val::Null => None,
                _ => Some(frame.locals[slot]),
            };
            self.cells.push(initial);
            let index = self.cells.len() - 1;
            if cell == "__class__" {
                frame.class_cell = Some(index);
            }
            frame.locals[slot] = self.push_val(Val::Cell(index));
        }
        let first_free = all.len() - frame.vars.freevars.len();
        for (i, cell) in closure.iter().enumerate() {
            if frame.vars.freevars[i] == "__class__" {
                frame.class_cell = Some(*cell);
            }
            frame.locals[first_free + i] = self.push_val(Val::Cell(*cell));
        }
    }

    /// Translates the frame about to run, given its arguments and free variables.
    pub fn run_top(
        &mut self,
        code: &Bound<'py, PyAny>,
        info: &CodeInfo,
        globals: Bound<'py, PyAny>,
        arguments: Vec<Option<Bound<'py, PyAny>>>,
        frees: Vec<FreeVariable<'py>>,
    ) -> Result<Ending, Stop> {
        self.top_globals = Some(globals.clone());
        let mut frame = self
            .new_frame(code, info, globals)
            .map_err(|e| self.located_top(e))?;
        self.top_arguments = info.total_arguments();
        self.top_freevars = frees.len();
        for (index, value) in arguments.into_iter().enumerate() {
            if let Some(value) = value {
                frame.locals[index] = self.value_of_source(Source::Argument(index), value);
            }
        }
        let closure: Vec<usize> = frees
            .into_iter()
            .enumerate()
            .map(|(index, (cell, value))| {
                let content = value.map(|v| self.value_of_source(Source::Free(index), v));
                self.cells.push(content);
                if let Some(cell) = cell {
                    self.cell_objects
                        .insert(cell.as_ptr() as usize, self.cells.len() - 1);
                }
                self.cells.len() - 1
            })
            .collect();
        self.setup_cells(&mut frame, &closure);
        match self.top_as_one_operation(code, info, &frame) {
            Ok(Some(returned)) => return Ok(Ending::Return(returned, frame.locals.clone())),
            Ok(None) => {}
            // Before the frame's first instruction there is nowhere to resume: it runs as it is.
            Err(Problem::Break(reason)) => return Err(self.located(Problem::Fallback(reason))),
            Err(problem) => return Err(self.located(problem)),
        }
        // Where the exception the frame's handlers are running for arose (outside any
        // handler), and the state then: if it escapes the frame from inside a handler,
        // the generated code raises it there, under the original's handlers.
        let mut first_caught: Option<(BreakPoint, Snapshot<'py>)> = None;
        loop {
            let pc = frame.pc;
            let stack_before = frame.stack.clone();
            let locals_before = frame.locals.clone();
            let blocks_before = frame.blocks.clone();
            let handling = !self.exc_stack.is_empty() || blocks_before.iter().any(|b| b.handler.is_none());
            let unguarded = !handling && blocks_before.is_empty();
            let handled_depth = self.exc_stack.len();
            let snapshot = Snapshot::take(self);
            self.top_pc = pc;
            let (outcome, caught) = if let Some(why) = self.break_before.get(&pc) {
                (Err(Problem::Break(format!("it makes {why}"))), false)
            } else {
                match self.step(&mut frame) {
                    Err(Problem::Python(err)) => match self.catch(&mut frame, err) {
                        Ok(()) => (Ok(None), true),
                        Err(problem) => (Err(problem), false),
                    },
                    other => (other, false),
                }
            };
            // A handler's saved instruction offset on the stack cannot be handed on.
            let offset_on_stack = stack_before.iter().any(|v| self.lasti_values.contains(v));
            let point = |vm: &Self, frame: &Frame<'py>, in_handler_scope: bool| {
                let handled: Vec<(usize, Vid)> = stack_before
                    .iter()
                    .enumerate()
                    .filter_map(|(slot, v)| Some((slot, *vm.exception_slots.get(v)?)))
                    .collect();
                // Each exception handled must be the one its slot saved (an `except*`
                // clause handles only the part of the group it matched).
                let resumable = vm.table.exceptions == ExceptionModel::Table
                    && handled.len() == handled_depth
                    && handled
                        .iter()
                        .zip(&vm.exc_stack)
                        .all(|((_, saved), current)| saved == current);
                BreakPoint {
                    pc,
                    in_loop: frame.in_loop.get(pc).copied().unwrap_or(false),
                    in_handler_scope,
                    instr: frame.instrs[pc].clone(),
                    stack: stack_before,
                    locals: locals_before,
                    blocks: blocks_before
                        .iter()
                        .filter_map(|b| Some((b.handler?, b.level)))
                        .collect(),
                    handled,
                    handling: handling && !resumable,
                }
            };
            match outcome {
                Ok(Some(returned)) => return Ok(Ending::Return(returned, frame.locals.clone())),
                Ok(None) => {
                    if caught && !handling {
                        first_caught = Some((point(self, &frame, true), snapshot));
                    }
                }
                // A re-raise of what a handler caught (what `except*` clauses left) is
                // raised where it first arose, below.
                Err(Problem::Python(_))
                    if unguarded
                        && !offset_on_stack
                        && !(frame.instrs[pc].op == Op::Reraise && first_caught.is_some()) =>
                {
                    // Nothing catches it: the generated code raises it where it arose.
                    snapshot.restore(self);
                    return Ok(Ending::Raise(point(self, &frame, false)));
                }
                Err(Problem::Python(_)) if first_caught.is_some() => {
                    let (arose, state) = first_caught.take().expect("checked");
                    state.restore(self);
                    return Ok(Ending::Raise(arose));
                }
                Err(problem) => {
                    // What the translator does not simulate ends the graph here too: the
                    // instruction runs natively and a resume function goes on after it.
                    let stop = match problem {
                        Problem::Eager(_) => return Err(self.located(problem)),
                        Problem::Fallback(reason) => self.located(Problem::Break(reason)),
                        problem => self.located(problem),
                    };
                    if offset_on_stack {
                        return Err(Stop::Fallback {
                            reason: format!(
                                "{} (inside an exception handler that cannot resume)",
                                stop.reason()
                            ),
                            line: self.location.0,
                            filename: self.location.1.clone(),
                        });
                    }
                    let in_handler_scope = frame.instrs[pc].handler.is_some() || !frame.blocks.is_empty();
                    // The graph and state as they were before the instruction.
                    snapshot.restore(self);
                    return Ok(Ending::Break(point(self, &frame, in_handler_scope), stop));
                }
            }
        }
    }

    /// Where the translated function is itself one of the backend's operations (a function
    /// Paddle's AST conversion captures whole), its call with the frame's arguments, as a
    /// call of it in another translated function would be; else None. The function is the
    /// module-level one of the frame's code (it has no closure; the call passes every
    /// argument, so its defaults do not matter).
    fn top_as_one_operation(
        &mut self,
        code: &Bound<'py, PyAny>,
        info: &CodeInfo,
        frame: &Frame<'py>,
    ) -> Res<Option<Vid>> {
        let plain_call = info.flags & (CO_VARARGS | CO_VARKEYWORDS | CO_GENERATOR | CO_COROUTINE_LIKE) == 0;
        let Some(globals) = self
            .top_globals
            .clone()
            .filter(|_| plain_call && self.top_freevars == 0)
        else {
            return Ok(None);
        };
        let Ok(globals) = globals.cast_into::<PyDict>() else {
            return Ok(None);
        };
        let module_level = globals.values().into_iter().find(|value| {
            value.is_exact_instance_of::<pyo3::types::PyFunction>()
                && value.getattr("__code__").is_ok_and(|c| c.is(code))
                && value.getattr("__closure__").is_ok_and(|c| c.is_none())
        });
        let Some(function) = module_level else {
            return Ok(None);
        };
        if !self.backend.is_op(&function)? {
            return Ok(None);
        }
        self.location = (code.getattr("co_firstlineno")?.extract()?, info.filename.clone());
        let names: Vec<String> = code.getattr("co_varnames")?.extract()?;
        let args = frame.locals[..info.argcount].to_vec();
        let kwargs = (info.argcount..info.argcount + info.kwonly)
            .map(|index| (names[index].clone(), frame.locals[index]))
            .collect();
        self.record(&function, args, kwargs).map(Some)
    }

    fn located_top(&self, err: PyErr) -> Stop {
        Stop::Fallback {
            reason: format!("cannot read the code: {err}"),
            line: -1,
            filename: String::new(),
        }
    }

    /// Runs an inlined frame to its return.
    fn run_inlined(&mut self, frame: &mut Frame<'py>) -> Res<Vid> {
        loop {
            if let Some(returned) = self.step_handling(frame)? {
                return Ok(returned);
            }
        }
    }

    /// Runs one instruction; an exception it raises goes to its handler, as CPython
    /// would unwind.
    fn step_handling(&mut self, frame: &mut Frame<'py>) -> Res<Option<Vid>> {
        match self.step(frame) {
            Err(Problem::Python(err)) => self.catch(frame, err).map(|()| None),
            other => other,
        }
    }

    /// Sends the exception the instruction just run raised to its handler in `frame`
    /// (exception tables, 3.11+; 3.9/3.10's blocks), or on out of the frame.
    fn catch(&mut self, frame: &mut Frame<'py>, err: PyErr) -> Res<()> {
        // The first frame to see it raised it.
        let raised_here = self.seen_raised.insert(err.value(self.py).as_ptr() as usize);
        self.chain_to_handled(&err)?;
        if self.table.exceptions == ExceptionModel::BlockStack {
            return self.unwind_blocks(frame, err);
        }
        let index = frame.pc.saturating_sub(1);
        let Some(handler) = frame.instrs.get(index).and_then(|i| i.handler) else {
            return Err(Problem::Python(err));
        };
        let caught = err.value(self.py).clone().into_any();
        // No Python frame run for real raised it (its traceback is empty yet).
        let top_frame_only = raised_here && self.depth == 0 && caught.getattr("__traceback__")?.is_none();
        match self.caught_exceptions.entry(caught.as_ptr() as usize) {
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(top_frame_only.then(|| frame.instrs[index].location));
            }
            // Raised again: its traceback has more entries.
            std::collections::hash_map::Entry::Occupied(mut entry) => *entry.get_mut() = None,
        }
        let exception = self.constant(caught);
        frame.stack.truncate(handler.depth as usize);
        if handler.lasti {
            let lasti = self.constant(index.into_pyobject(self.py)?.into_any());
            self.lasti_values.insert(lasti);
            frame.stack.push(lasti);
        }
        frame.stack.push(exception);
        frame.pc = handler.target;
        Ok(())
    }

    /// CPython chains an exception raised while another is handled to that one where it is
    /// raised (C code's `PyErr_SetObject`, as `raise` does): an error a step raised while
    /// translating (a missing key, a failed conversion) is chained where it first reaches
    /// a frame of the translation, once; `raise` has decided for its own.
    fn chain_to_handled(&mut self, err: &PyErr) -> Res<()> {
        let exc = err.value(self.py).clone().into_any();
        if !self.chained.insert(exc.as_ptr() as usize) {
            return Ok(());
        }
        let Some(handled) = self.exc_stack.last().copied() else {
            return Ok(());
        };
        let handled = self.chained_to(handled)?;
        if !handled.is(&exc) && exc.getattr("__context__")?.is_none() {
            chain_context(&exc, &handled)?;
        }
        Ok(())
    }

    /// 3.9/3.10: the exception goes to the innermost `SETUP_*` block, whose handler
    /// finds the previous exception's and this one's (traceback, value, type) on the stack.
    fn unwind_blocks(&mut self, frame: &mut Frame<'py>, err: PyErr) -> Res<()> {
        while let Some(block) = frame.blocks.pop() {
            frame.stack.truncate(block.level);
            let Some(handler) = block.handler else {
                // Leaving a handler that was running: its exception is done with.
                self.exc_stack.pop();
                continue;
            };
            frame.blocks.push(Block {
                handler: None,
                level: frame.stack.len(),
            });
            let none = self.none();
            let previous = match self.exc_stack.last() {
                Some(p) => {
                    let p = *p;
                    let kind = self.type_of(p)?;
                    [none, p, self.constant(kind)]
                }
                None => [none, none, none],
            };
            frame.stack.extend(previous);
            let value = err.value(self.py).clone().into_any();
            let kind = self.constant(value.get_type().into_any());
            self.caught_exceptions.insert(value.as_ptr() as usize, None);
            let exception = self.constant(value);
            self.exc_stack.push(exception);
            frame.stack.extend([none, exception, kind]);
            frame.pc = handler;
            return Ok(());
        }
        Err(Problem::Python(err))
    }

    /// Raises `exception`; `chain` as `raise e` does, not as a bare `raise` or `RERAISE`
    /// (which raise the handled exception again as it is).
    fn raise(&mut self, exception: Vid, chain: bool) -> Problem {
        let made = chain && matches!(self.val(exception), Val::Obj { source: None, .. });
        let exc = match self.concrete(exception) {
            Ok(exc) => exc,
            Err(problem) => return problem,
        };
        self.chained.insert(exc.as_ptr() as usize);
        // Raised while one is handled: chained to it, as CPython chains (the generated code
        // cannot make such an exception again: one that reaches it falls back).
        if let (true, Some(handled)) = (made, self.exc_stack.last().copied()) {
            match self.chained_to(handled) {
                Ok(handled) if !handled.is(&exc) => {
                    if let Err(err) = chain_context(&exc, &handled) {
                        return Problem::Python(err);
                    }
                }
                Ok(_) => {}
                Err(problem) => return problem,
            }
        }
        Problem::Python(PyErr::from_value(exc))
    }

    /// The exception being handled, to chain a new one to. One from the frame is read,
    /// not guarded: the generated code chains to it by its source, whichever exception
    /// the call has there.
    fn chained_to(&mut self, handled: Vid) -> Res<Bound<'py, PyAny>> {
        match self.val(handled) {
            Val::Obj { obj, source: Some(_) } => Ok(obj.clone()),
            _ => self.concrete(handled),
        }
    }

    /// The value on top of the stack, left there.
    fn top(frame: &Frame<'py>) -> Res<Vid> {
        frame
            .stack
            .last()
            .copied()
            .map_or_else(|| unsupported("stack underflow"), Ok)
    }

    fn pop(frame: &mut Frame<'py>) -> Res<Vid> {
        frame
            .stack
            .pop()
            .map_or_else(|| unsupported("stack underflow"), Ok)
    }

    fn pop_n(frame: &mut Frame<'py>, n: usize) -> Res<Vec<Vid>> {
        if frame.stack.len() < n {
            return unsupported("stack underflow");
        }
        Ok(frame.stack.split_off(frame.stack.len() - n))
    }

    fn jump(frame: &mut Frame<'py>, arg: Arg) -> Res<()> {
        match arg {
            Arg::Target(target) => {
                frame.pc = target;
                Ok(())
            }
            _ => unsupported("a jump without a target"),
        }
    }

    fn const_at(&mut self, frame: &Frame<'py>, arg: Arg) -> Res<Vid> {
        let obj = match arg {
            Arg::Const(Const::Index(i)) => frame.consts.get_item(i as usize)?,
            Arg::Const(Const::SmallInt(v)) => v.into_pyobject(self.py)?.into_any(),
            _ => return unsupported("a constant without an index"),
        };
        Ok(self.constant(obj))
    }

    fn name_at(frame: &Frame<'py>, arg: Arg) -> Res<String> {
        match arg {
            Arg::Name(i) | Arg::NameFlags(i, _) => Ok(frame.names.get_item(i as usize)?.extract()?),
            _ => unsupported("a name without an index"),
        }
    }

    fn var_at(arg: Arg) -> Res<usize> {
        match arg {
            Arg::Var(v) => Ok(v as usize),
            _ => unsupported("a variable without an index"),
        }
    }

    fn int_arg(arg: Arg) -> Res<usize> {
        match arg {
            Arg::Int(n) => Ok(n as usize),
            _ => unsupported("an instruction without its count"),
        }
    }

    /// Pops `n` stack slots of the version's call layout: the callable and the
    /// positional arguments (a non-NULL self slot is the first argument).
    fn pop_callable(&self, slots: Vec<Vid>) -> Res<(Vid, Vec<Vid>)> {
        let is_null = |vm: &Self, v: Vid| match vm.val(v) {
            Val::Null => true,
            Val::Obj { obj, .. } => vm.null_substitute.as_ref().is_some_and(|s| obj.is(s)),
            _ => false,
        };
        match (self.table.call_layout, slots.as_slice()) {
            (_, [callable]) => Ok((*callable, vec![])),
            (CallLayout::CallableFirst, [callable, receiver]) => {
                let args = if is_null(self, *receiver) {
                    vec![]
                } else {
                    vec![*receiver]
                };
                Ok((*callable, args))
            }
            (_, [first, second]) => {
                if is_null(self, *first) {
                    Ok((*second, vec![]))
                } else {
                    Ok((*first, vec![*second]))
                }
            }
            _ => unsupported("a call layout"),
        }
    }

    /// How many slots a call's callable takes on this version.
    fn callable_slots(&self, op: Op) -> usize {
        match (self.table.call_layout, op) {
            (CallLayout::Plain, Op::CallMethod) => 2,
            (CallLayout::Plain, _) => 1,
            _ => 2,
        }
    }

    fn global(&mut self, frame: &Frame<'py>, name: &str) -> Res<Vid> {
        if let Some((_, stored)) = self.stored_globals.iter().rev().find(|(n, _)| n == name) {
            return match stored {
                Some(vid) => Ok(*vid),
                None => Err(Problem::Python(pyo3::exceptions::PyNameError::new_err(format!(
                    "name '{name}' is not defined"
                )))),
            };
        }
        let key = PyString::new(self.py, name);
        let in_globals = frame.globals.get_item(&key).ok();
        let top_globals = self.top_globals.as_ref().is_some_and(|g| frame.globals.is(g));
        if let Some(value) = in_globals {
            if top_globals {
                return Ok(self.value_of_source(Source::Global(name_ref(self.py, name)), value));
            }
            return self.foreign_global(frame, name, value);
        }
        // The builtins' namespace, not the module's attributes (a module has
        // `__annotations__` and the like that no name lookup finds).
        let value = self
            .ops
            .builtins
            .getattr("__dict__")?
            .get_item(name)
            .map_err(|_| {
                Problem::Python(pyo3::exceptions::PyNameError::new_err(format!(
                    "name '{name}' is not defined"
                )))
            })?;
        if top_globals {
            return Ok(self.value_of_source(Source::Builtin(name_ref(self.py, name)), value));
        }
        // A builtin read by a callee of another module: a constant of the translation.
        Ok(self.constant(value))
    }

    /// A global of an inlined function from another module: read through the
    /// function's `__globals__` where the function has a source, else a constant
    /// only if it is immutable or callable (module-level functions and classes).
    fn foreign_global(&mut self, frame: &Frame<'py>, name: &str, value: Bound<'py, PyAny>) -> Res<Vid> {
        if let Some(globals) = frame.globals_source {
            let key = PyString::new(self.py, name).into_any();
            return Ok(self.value_of_source(Source::Item(globals, StrongRef::new(&key)), value));
        }
        if is_immutable(&value) || value.is_callable() {
            Ok(self.constant(value))
        } else {
            unsupported(format!(
                "global {name} of another module, reached without a source"
            ))
        }
    }
}

impl<'py, 'b> Vm<'py, 'b> {
    /// Runs one instruction; `Some(value)` when the frame returns.
    fn step(&mut self, frame: &mut Frame<'py>) -> Res<Option<Vid>> {
        let Some(instr) = frame.instrs.get(frame.pc).cloned() else {
            return unsupported("ran past the end of the code");
        };
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return graph_break(format!(
                "translation too long: more than {MAX_STEPS} instructions simulated"
            ));
        }
        if instr.location.line > 0 {
            self.location = (instr.location.line, frame.filename.clone());
        }
        frame.pc += 1;
        let arg = instr.arg;
        match instr.op {
            Op::Resume => frame.resumed = true,
            Op::MakeCell if frame.resumed => {
                // An inlined comprehension's variable that a closure captures (3.12+): a new
                // cell replaces the frame's variable, whose own cell waits on the stack, which
                // neither generated code nor a resume function can hand on. The frame runs as
                // it is (an inlined callee: as its own frame, from a break).
                let what = "a closure over a comprehension's variable (a cell made mid-function)";
                return Err(if self.depth == 0 {
                    Problem::Eager(what.to_owned())
                } else {
                    Problem::Break(what.to_owned())
                });
            }
            Op::Nop | Op::CopyFreeVars | Op::MakeCell | Op::GenStart => {}
            Op::ReturnGenerator => {
                let none = self.none();
                frame.stack.push(none);
            }
            Op::PopTop => {
                Self::pop(frame)?;
            }
            Op::PushNull => {
                let null = self.push_val(Val::Null);
                frame.stack.push(null);
            }
            Op::Copy => {
                let n = Self::int_arg(arg)?;
                let Some(v) = frame.stack.len().checked_sub(n).map(|i| frame.stack[i]) else {
                    return unsupported("stack underflow");
                };
                frame.stack.push(v);
            }
            Op::Swap => {
                let n = Self::int_arg(arg)?;
                let len = frame.stack.len();
                if n > len || n < 1 {
                    return unsupported("stack underflow");
                }
                frame.stack.swap(len - 1, len - n);
            }
            Op::RotN => {
                let n = Self::int_arg(arg)?;
                let top = Self::pop(frame)?;
                let at = frame
                    .stack
                    .len()
                    .checked_sub(n - 1)
                    .map_or_else(|| unsupported("stack underflow"), Ok)?;
                frame.stack.insert(at, top);
            }
            Op::LoadConst => {
                let v = self.const_at(frame, arg)?;
                frame.stack.push(v);
            }
            Op::LoadCommonConstant => {
                let Arg::Enum(name) = arg else {
                    return unsupported("LOAD_COMMON_CONSTANT without a name");
                };
                let value = builtin(self.py, name)?;
                let v = self.constant(value);
                frame.stack.push(v);
            }
            Op::LoadFast | Op::LoadFastCheck | Op::LoadClosure => {
                let v = frame.locals[Self::var_at(arg)?];
                if matches!(self.val(v), Val::Null) {
                    let name = frame.vars.all()[Self::var_at(arg)?].to_owned();
                    return Err(Problem::Python(pyo3::exceptions::PyUnboundLocalError::new_err(
                        format!(
                            "cannot access local variable '{name}' where it is not associated with a value"
                        ),
                    )));
                }
                frame.stack.push(v);
            }
            Op::LoadFastAndClear => {
                let slot = Self::var_at(arg)?;
                let v = frame.locals[slot];
                frame.stack.push(v);
                frame.locals[slot] = self.push_val(Val::Null);
            }
            Op::StoreFast | Op::DeleteFast => {
                let slot = Self::var_at(arg)?;
                let own_variable = !is_resume_local(frame.vars.all()[slot]);
                if self.depth == 0 && own_variable && self.drops_a_watched_object(frame.locals[slot])? {
                    return graph_break(
                        "a store over the frame's only reference to an object with weak references or \
                         a finalizer (they run where the original drops it)",
                    );
                }
                frame.locals[slot] = match instr.op {
                    Op::StoreFast => Self::pop(frame)?,
                    _ => self.push_val(Val::Null),
                };
            }
            Op::LoadDeref | Op::LoadClassderef => {
                let cell = self.cell_of(frame, arg)?;
                match self.cells[cell] {
                    Some(v) => frame.stack.push(v),
                    None => {
                        return Err(Problem::Python(pyo3::exceptions::PyNameError::new_err(
                            "free variable referenced before assignment",
                        )))
                    }
                }
            }
            Op::StoreDeref => {
                let cell = self.cell_of(frame, arg)?;
                let v = Self::pop(frame)?;
                self.store_cell(cell, Some(v))?;
            }
            Op::DeleteDeref => {
                let cell = self.cell_of(frame, arg)?;
                self.store_cell(cell, None)?;
            }
            Op::LoadGlobal | Op::LoadName => {
                let name = Self::name_at(frame, arg)?;
                let v = self.global(frame, &name)?;
                frame.stack.push(v);
            }
            Op::StoreGlobal => {
                let name = Self::name_at(frame, arg)?;
                let v = Self::pop(frame)?;
                self.store_global(frame, name, Some(v))?;
            }
            Op::DeleteGlobal => {
                let name = Self::name_at(frame, arg)?;
                self.store_global(frame, name, None)?;
            }
            Op::LoadAttr => {
                let name = Self::name_at(frame, arg)?;
                let owner = Self::pop(frame)?;
                let v = self.load_attr(owner, &name)?;
                frame.stack.push(v);
            }
            Op::LoadMethod => {
                let name = Self::name_at(frame, arg)?;
                let owner = Self::pop(frame)?;
                let v = self.load_attr(owner, &name)?;
                let null = self.push_val(Val::Null);
                match self.table.call_layout {
                    CallLayout::CallableFirst => frame.stack.extend([v, null]),
                    _ => frame.stack.extend([null, v]),
                }
            }
            Op::LoadSpecial => {
                let Arg::Enum(name) = arg else {
                    return unsupported("LOAD_SPECIAL without a name");
                };
                let owner = Self::pop(frame)?;
                let method = self.special_method(owner, name)?;
                // As CPython does for a method: the function, then its self (never a NULL
                // slot, which the code after `with` pops as a value).
                let Val::Method { function, receiver } = self.val(method).clone_val() else {
                    return unsupported("LOAD_SPECIAL of something that is no method");
                };
                frame.stack.extend([function, receiver]);
            }
            Op::DeleteAttr => {
                let name = Self::name_at(frame, arg)?;
                let owner = Self::pop(frame)?;
                match self.val(owner).clone_val() {
                    Val::Object { class, mut attrs } => {
                        let before = attrs.len();
                        attrs.retain(|(n, _)| *n != name);
                        if attrs.len() == before {
                            return Err(Problem::Python(pyo3::exceptions::PyAttributeError::new_err(name)));
                        }
                        self.values[owner] = Val::Object { class, attrs };
                    }
                    _ => self.delete_attr(owner, name)?,
                }
            }
            Op::StoreAttr => {
                let name = Self::name_at(frame, arg)?;
                let owner = Self::pop(frame)?;
                let value = Self::pop(frame)?;
                self.store_attr(owner, name, value)?;
            }
            Op::LoadSuperAttr => {
                let Arg::NameFlags(_, flags) = arg else {
                    return unsupported("LOAD_SUPER_ATTR without flags");
                };
                let name = Self::name_at(frame, arg)?;
                let [_super_fn, class, receiver]: [Vid; 3] =
                    Self::pop_n(frame, 3)?.try_into().expect("three");
                let class = self.concrete(class)?;
                let attribute = self.super_attr(class, receiver, &name)?;
                if flags & 1 != 0 {
                    let null = self.push_val(Val::Null);
                    match self.table.call_layout {
                        CallLayout::CallableFirst => frame.stack.extend([attribute, null]),
                        _ => frame.stack.extend([null, attribute]),
                    }
                } else {
                    frame.stack.push(attribute);
                }
            }
            Op::UnaryNegative | Op::UnaryPositive | Op::UnaryInvert => {
                let v = Self::pop(frame)?;
                let name = match instr.op {
                    Op::UnaryNegative => "neg",
                    Op::UnaryPositive => "pos",
                    _ => "invert",
                };
                let r = self.operator_call(name, vec![v])?;
                frame.stack.push(r);
            }
            Op::UnaryNot => {
                let v = Self::pop(frame)?;
                let r = !self.truthy(v)?;
                let r = self.boolean(r);
                frame.stack.push(r);
            }
            Op::ToBool => {
                let v = Self::pop(frame)?;
                let r = self.truthy(v)?;
                let r = self.boolean(r);
                frame.stack.push(r);
            }
            Op::BinaryOp => {
                let Arg::BinaryOp { op, inplace } = arg else {
                    return unsupported("BINARY_OP without an operator");
                };
                let right = Self::pop(frame)?;
                let left = Self::pop(frame)?;
                let r = self.binary(left, right, op, inplace)?;
                frame.stack.push(r);
            }
            Op::CompareOp => {
                let Arg::Compare { op, to_bool } = arg else {
                    return unsupported("COMPARE_OP without an operator");
                };
                let right = Self::pop(frame)?;
                let left = Self::pop(frame)?;
                let name = COMPARE_NAMES[op as usize];
                let mut r = match self.compare_made_objects(name, left, right)? {
                    Some(r) => r,
                    None => self.operator_call(name, vec![left, right])?,
                };
                if to_bool && !self.is_tensor_val(r) {
                    let b = self.truthy(r)?;
                    r = self.boolean(b);
                }
                frame.stack.push(r);
            }
            Op::IsOp => {
                let invert = Self::int_arg(arg)? != 0;
                let right = Self::pop(frame)?;
                let left = Self::pop(frame)?;
                let same = self.identical(left, right)?;
                let r = self.boolean(same != invert);
                frame.stack.push(r);
            }
            Op::ContainsOp => {
                let invert = Self::int_arg(arg)? != 0;
                let container = Self::pop(frame)?;
                let item = Self::pop(frame)?;
                let found = self.contains(container, item)?;
                let r = self.boolean(found != invert);
                frame.stack.push(r);
            }
            Op::BinarySlice => {
                let [container, start, stop]: [Vid; 3] = Self::pop_n(frame, 3)?.try_into().expect("three");
                let none = self.none();
                let slice = self.push_val(Val::Slice(start, stop, none));
                let r = self.subscript(container, slice)?;
                frame.stack.push(r);
            }
            Op::StoreSlice => {
                let [value, container, start, stop]: [Vid; 4] =
                    Self::pop_n(frame, 4)?.try_into().expect("four");
                let none = self.none();
                let slice = self.push_val(Val::Slice(start, stop, none));
                self.store_subscript(container, slice, value)?;
            }
            Op::StoreSubscr => {
                let [value, container, key]: [Vid; 3] = Self::pop_n(frame, 3)?.try_into().expect("three");
                self.store_subscript(container, key, value)?;
            }
            Op::DeleteSubscr => {
                let [container, key]: [Vid; 2] = Self::pop_n(frame, 2)?.try_into().expect("two");
                self.delete_subscript(container, key)?;
            }
            Op::BuildSlice => {
                let n = Self::int_arg(arg)?;
                let parts = Self::pop_n(frame, n)?;
                let none = self.none();
                let v = match parts.as_slice() {
                    [a, b] => Val::Slice(*a, *b, none),
                    [a, b, c] => Val::Slice(*a, *b, *c),
                    _ => return unsupported("BUILD_SLICE count"),
                };
                let v = self.push_val(v);
                frame.stack.push(v);
            }
            Op::BuildTuple | Op::BuildList | Op::BuildSet => {
                let items = Self::pop_n(frame, Self::int_arg(arg)?)?;
                let v = match instr.op {
                    Op::BuildTuple => self.push_val(Val::Tuple(items)),
                    Op::BuildList => self.push_val(Val::List(items)),
                    _ => {
                        let set = self.push_val(Val::Set(Vec::new()));
                        self.add_items(set, items)?;
                        set
                    }
                };
                frame.stack.push(v);
            }
            Op::BuildMap => {
                let flat = Self::pop_n(frame, 2 * Self::int_arg(arg)?)?;
                let mut items = Vec::new();
                for pair in flat.chunks(2) {
                    self.dict_set(&mut items, pair[0], pair[1])?;
                }
                let v = self.push_val(Val::Dict(items));
                frame.stack.push(v);
            }
            Op::BuildConstKeyMap => {
                let keys = Self::pop(frame)?;
                let values = Self::pop_n(frame, Self::int_arg(arg)?)?;
                let keys = self.items_of(keys)?;
                let mut items = Vec::new();
                for (k, v) in keys.into_iter().zip(values) {
                    self.dict_set(&mut items, k, v)?;
                }
                let v = self.push_val(Val::Dict(items));
                frame.stack.push(v);
            }
            Op::BuildString => {
                let parts = Self::pop_n(frame, Self::int_arg(arg)?)?;
                let mut text = String::new();
                for p in parts {
                    text.push_str(&self.concrete(p)?.extract::<String>()?);
                }
                let v = self.constant(PyString::new(self.py, &text).into_any());
                frame.stack.push(v);
            }
            Op::ListAppend | Op::SetAdd => {
                let v = Self::pop(frame)?;
                let depth = Self::int_arg(arg)?;
                let target = frame.stack[frame.stack.len() - depth];
                self.add_items(target, vec![v])?;
            }
            Op::MapAdd => {
                let value = Self::pop(frame)?;
                let key = Self::pop(frame)?;
                let depth = Self::int_arg(arg)?;
                let target = frame.stack[frame.stack.len() - depth];
                let Val::Dict(mut items) = self.val(target).clone_val() else {
                    return unsupported("MAP_ADD to a dict from outside");
                };
                self.dict_set(&mut items, key, value)?;
                self.values[target] = Val::Dict(items);
            }
            Op::ListExtend | Op::SetUpdate => {
                let source = Self::pop(frame)?;
                let depth = Self::int_arg(arg)?;
                let target = frame.stack[frame.stack.len() - depth];
                let new_items = self.items_of(source)?;
                self.add_items(target, new_items)?;
            }
            Op::DictUpdate | Op::DictMerge => {
                let source = Self::pop(frame)?;
                let depth = Self::int_arg(arg)?;
                let target = frame.stack[frame.stack.len() - depth];
                let pairs = self.dict_items(source)?;
                let Val::Dict(mut items) = self.val(target).clone_val() else {
                    return unsupported("DICT_UPDATE of a dict from outside");
                };
                for (k, v) in pairs {
                    self.dict_set(&mut items, k, v)?;
                }
                self.values[target] = Val::Dict(items);
            }
            Op::ListToTuple => {
                let v = Self::pop(frame)?;
                let items = self.items_of(v)?;
                let t = self.push_val(Val::Tuple(items));
                frame.stack.push(t);
            }
            Op::CallIntrinsic1 => {
                let Arg::Enum(name) = arg else {
                    return unsupported("CALL_INTRINSIC_1 without a name");
                };
                let v = Self::pop(frame)?;
                let r = match name {
                    "INTRINSIC_LIST_TO_TUPLE" => {
                        let items = self.items_of(v)?;
                        self.push_val(Val::Tuple(items))
                    }
                    "INTRINSIC_UNARY_POSITIVE" => self.operator_call("pos", vec![v])?,
                    _ => return unsupported(format!("intrinsic {name}")),
                };
                frame.stack.push(r);
            }
            Op::CallIntrinsic2 => {
                let Arg::Enum(name) = arg else {
                    return unsupported("CALL_INTRINSIC_2 without a name");
                };
                let second = Self::pop(frame)?;
                Self::pop(frame)?;
                let r = match name {
                    "INTRINSIC_PREP_RERAISE_STAR" => self.prep_reraise_star(second)?,
                    _ => return unsupported(format!("intrinsic {name}")),
                };
                frame.stack.push(r);
            }
            Op::UnpackSequence => {
                let v = Self::pop(frame)?;
                let items = self.items_of(v)?;
                if items.len() != Self::int_arg(arg)? {
                    return unsupported("unpacking raised (wrong number of values)");
                }
                frame.stack.extend(items.into_iter().rev());
            }
            Op::UnpackEx => {
                let n = Self::int_arg(arg)?;
                let (before, after) = (n & 0xff, n >> 8);
                let v = Self::pop(frame)?;
                let items = self.items_of(v)?;
                if items.len() < before + after {
                    return unsupported("unpacking raised (not enough values)");
                }
                let middle = self.push_val(Val::List(items[before..items.len() - after].to_vec()));
                let mut out: Vec<Vid> = items[..before].to_vec();
                out.push(middle);
                out.extend_from_slice(&items[items.len() - after..]);
                frame.stack.extend(out.into_iter().rev());
            }
            Op::FormatValue => {
                let flags = Self::int_arg(arg)?;
                let spec = if flags & 4 != 0 {
                    Some(Self::pop(frame)?)
                } else {
                    None
                };
                let v = Self::pop(frame)?;
                let r = self.format(v, flags & 3, spec)?;
                frame.stack.push(r);
            }
            Op::ConvertValue => {
                let v = Self::pop(frame)?;
                let r = self.convert(v, Self::int_arg(arg)?)?;
                frame.stack.push(r);
            }
            Op::FormatSimple => {
                let v = Self::pop(frame)?;
                let r = self.format(v, 0, None)?;
                frame.stack.push(r);
            }
            Op::FormatWithSpec => {
                let spec = Self::pop(frame)?;
                let v = Self::pop(frame)?;
                let r = self.format(v, 0, Some(spec))?;
                frame.stack.push(r);
            }
            Op::BuildInterpolation => {
                let flags = Self::int_arg(arg)?;
                let spec = if flags & 1 != 0 {
                    Some(Self::pop(frame)?)
                } else {
                    None
                };
                let expression = Self::pop(frame)?;
                let value = Self::pop(frame)?;
                let r = self.interpolation(value, expression, flags >> 2, spec)?;
                frame.stack.push(r);
            }
            Op::BuildTemplate => {
                let interpolations = Self::pop(frame)?;
                let strings = Self::pop(frame)?;
                let r = self.template(strings, interpolations)?;
                frame.stack.push(r);
            }
            Op::GetIter | Op::GetYieldFromIter => {
                let v = Self::pop(frame)?;
                let it = self.iterator(v)?;
                frame.stack.push(it);
            }
            Op::ForIter => {
                let it = Self::top(frame)?;
                if let Some(item) = self.advance(it)? {
                    frame.stack.push(item);
                } else {
                    let effect = self.stack_effect("FOR_ITER", 0, true)?;
                    if effect < 0 {
                        Self::pop_n(frame, (-effect) as usize)?;
                    } else {
                        for _ in 0..effect {
                            let null = self.push_val(Val::Null);
                            frame.stack.push(null);
                        }
                    }
                    Self::jump(frame, arg)?;
                }
            }
            Op::EndFor | Op::PopIter => {
                let effect = self.stack_effect(instr.op.name(), 0, false)?;
                Self::pop_n(frame, (-effect).max(0) as usize)?;
            }
            Op::Jump | Op::JumpNoInterrupt => Self::jump(frame, arg)?,
            Op::PopJumpIfTrue | Op::PopJumpIfFalse => {
                let v = Self::pop(frame)?;
                if self.truthy(v)? == (instr.op == Op::PopJumpIfTrue) {
                    Self::jump(frame, arg)?;
                }
            }
            Op::PopJumpIfNone | Op::PopJumpIfNotNone => {
                let v = Self::pop(frame)?;
                let none = self.none();
                let is_none = self.identical(v, none)?;
                if is_none == (instr.op == Op::PopJumpIfNone) {
                    Self::jump(frame, arg)?;
                }
            }
            Op::JumpIfTrueOrPop | Op::JumpIfFalseOrPop => {
                let v = Self::top(frame)?;
                if self.truthy(v)? == (instr.op == Op::JumpIfTrueOrPop) {
                    Self::jump(frame, arg)?;
                } else {
                    Self::pop(frame)?;
                }
            }
            Op::SetupFinally => {
                let Arg::Target(handler) = arg else {
                    return unsupported("SETUP_FINALLY without a target");
                };
                frame.blocks.push(Block {
                    handler: Some(handler),
                    level: frame.stack.len(),
                });
            }
            Op::PopBlock => {
                frame.blocks.pop();
            }
            Op::SetupWith | Op::BeforeWith => {
                let manager = Self::pop(frame)?;
                let exit = self.special_method(manager, "__exit__")?;
                let enter = self.special_method(manager, "__enter__")?;
                let entered = self.call(enter, vec![], vec![])?;
                frame.stack.push(exit);
                if let (Op::SetupWith, Arg::Target(handler)) = (instr.op, arg) {
                    frame.blocks.push(Block {
                        handler: Some(handler),
                        level: frame.stack.len(),
                    });
                }
                frame.stack.push(entered);
            }
            Op::JumpIfNotExcMatch => {
                let [kind, kinds]: [Vid; 2] = Self::pop_n(frame, 2)?.try_into().expect("two");
                let (kind, kinds) = (self.concrete(kind)?, self.concrete(kinds)?);
                if !self.builtin("issubclass")?.call1((kind, kinds))?.is_truthy()? {
                    Self::jump(frame, arg)?;
                }
            }
            Op::Call | Op::CallMethod => {
                let Arg::Call { argc, kw_names } = arg else {
                    let argc = Self::int_arg(arg)?;
                    return self.do_call(frame, instr.op, argc, false).map(|()| None);
                };
                self.do_call(frame, instr.op, argc as usize, kw_names)?;
            }
            Op::CallFunctionEx => self.call_function_ex(frame, arg)?,
            Op::MakeFunction => self.make_function(frame, arg)?,
            Op::SetFunctionAttribute => {
                let flag = Self::int_arg(arg)?;
                let function = Self::pop(frame)?;
                let attribute = Self::pop(frame)?;
                self.set_function_attribute(function, flag, attribute)?;
                frame.stack.push(function);
            }
            Op::ReturnValue => {
                let v = Self::pop(frame)?;
                return Ok(Some(v));
            }
            Op::Send => {
                let sent = Self::pop(frame)?;
                let receiver = Self::top(frame)?;
                match self.send(receiver, sent)? {
                    Sent::Yielded(item) => frame.stack.push(item),
                    Sent::Returned(value) => {
                        // Exhausted: the receiver stays below the value where the version's
                        // END_SEND pops it (3.12+), else the value replaces it (3.11).
                        if self.stack_effect("SEND", 0, true)? < 0 {
                            Self::pop(frame)?;
                        }
                        frame.stack.push(value);
                        Self::jump(frame, arg)?;
                    }
                }
            }
            Op::EndSend => {
                let value = Self::pop(frame)?;
                Self::pop(frame)?;
                frame.stack.push(value);
            }
            Op::YieldFrom => {
                // 3.9/3.10: yields the receiver's item and runs again when resumed (with
                // the None sent in on top), until the receiver returns.
                let sent = Self::pop(frame)?;
                let receiver = Self::top(frame)?;
                match self.send(receiver, sent)? {
                    Sent::Yielded(item) => {
                        frame.yielded = Some(item);
                        let none = self.none();
                        frame.stack.push(none);
                        frame.pc -= 1;
                    }
                    Sent::Returned(value) => {
                        Self::pop(frame)?;
                        frame.stack.push(value);
                    }
                }
            }
            Op::YieldValue => {
                // The generator is suspended here; resumed, it finds None sent in.
                let v = Self::pop(frame)?;
                frame.yielded = Some(v);
                let none = self.none();
                frame.stack.push(none);
            }
            Op::MatchMapping | Op::MatchSequence => {
                let subject = Self::top(frame)?;
                let matched = self.match_kind(subject, instr.op == Op::MatchMapping)?;
                let r = self.boolean(matched);
                frame.stack.push(r);
            }
            Op::GetLen => {
                let subject = Self::top(frame)?;
                let len = self.builtin("len")?;
                let r = self
                    .call_builtin(&len, None, &[subject], &[])?
                    .expect("len is a builtin");
                frame.stack.push(r);
            }
            Op::MatchKeys => {
                let depth = frame.stack.len();
                let (subject, keys) = (frame.stack[depth - 2], frame.stack[depth - 1]);
                let values = self.match_keys(subject, keys)?;
                let matched = values.is_some();
                let result = values.unwrap_or_else(|| self.none());
                frame.stack.push(result);
                if self.pushes_match_flag("MATCH_KEYS", 2)? {
                    let flag = self.boolean(matched);
                    frame.stack.push(flag);
                }
            }
            Op::MatchClass => {
                let count = Self::int_arg(arg)?;
                let names = Self::pop(frame)?;
                let class = Self::pop(frame)?;
                let subject = Self::pop(frame)?;
                let attributes = self.match_class(subject, class, count, names)?;
                let with_flag = self.pushes_match_flag("MATCH_CLASS", -1)?;
                match (attributes, with_flag) {
                    (Some(tuple), true) => {
                        let flag = self.boolean(true);
                        frame.stack.extend([tuple, flag]);
                    }
                    (None, true) => {
                        let flag = self.boolean(false);
                        frame.stack.extend([subject, flag]);
                    }
                    (Some(tuple), false) => frame.stack.push(tuple),
                    (None, false) => {
                        let none = self.none();
                        frame.stack.push(none);
                    }
                }
            }
            Op::CopyDictWithoutKeys => {
                let keys = Self::pop(frame)?;
                let subject = Self::top(frame)?;
                let mut rest = self.dict_items(subject)?;
                for key in self.items_of(keys)? {
                    let key = self.concrete(key)?;
                    if let Some(index) = self.find_dict_key(&rest, &key)? {
                        rest.remove(index);
                    }
                }
                let r = self.push_val(Val::Dict(rest));
                frame.stack.push(r);
            }
            Op::RaiseVarargs => {
                let count = Self::int_arg(arg)?;
                let cause = if count == 2 { Some(Self::pop(frame)?) } else { None };
                let exception = match count {
                    0 => *self.exc_stack.last().map_or_else(
                        || {
                            Err(Problem::Python(pyo3::exceptions::PyRuntimeError::new_err(
                                "No active exception to reraise",
                            )))
                        },
                        Ok,
                    )?,
                    _ => Self::pop(frame)?,
                };
                let exception = if self.concrete(exception)?.is_instance_of::<PyType>() {
                    self.call(exception, vec![], vec![])?
                } else {
                    exception
                };
                if let Some(cause) = cause {
                    let (exc, cause) = (self.concrete(exception)?, self.concrete(cause)?);
                    let cause = if cause.is_instance_of::<PyType>() {
                        cause.call0()?
                    } else {
                        cause
                    };
                    exc.setattr("__cause__", cause)?;
                }
                return Err(self.raise(exception, count > 0));
            }
            Op::Reraise => {
                let exception = match self.table.exceptions {
                    ExceptionModel::Table => Self::pop(frame)?,
                    // (traceback, value, type): the value.
                    ExceptionModel::BlockStack => Self::pop_n(frame, 3)?[1],
                };
                return Err(self.raise(exception, false));
            }
            Op::PushExcInfo => {
                let exception = Self::pop(frame)?;
                let previous = match self.exc_stack.last() {
                    Some(p) => *p,
                    None => self.none(),
                };
                // A slot of its own, to know it again at a break.
                let previous = self.push_val(self.values[previous].clone_val());
                self.exception_slots.insert(previous, exception);
                frame.stack.extend([previous, exception]);
                self.exc_stack.push(exception);
            }
            Op::PopExcept => {
                match self.table.exceptions {
                    ExceptionModel::Table => {
                        Self::pop(frame)?;
                    }
                    ExceptionModel::BlockStack => {
                        // The handler's block, and the previous exception's triple on top
                        // (a value being returned may sit under it).
                        let Some(Block { handler: None, .. }) = frame.blocks.pop() else {
                            return unsupported("POP_EXCEPT outside an exception handler");
                        };
                        Self::pop_n(frame, 3)?;
                    }
                }
                self.exc_stack.pop();
            }
            Op::CheckExcMatch => {
                let kinds = Self::pop(frame)?;
                let exception = Self::top(frame)?;
                // Only the exception's type decides (and is guarded), not its identity.
                let (kind, kinds) = (self.type_of(exception)?, self.concrete(kinds)?);
                let matched = self.builtin("issubclass")?.call1((kind, kinds))?.is_truthy()?;
                let r = self.boolean(matched);
                frame.stack.push(r);
            }
            Op::CheckEgMatch => {
                let kinds = Self::pop(frame)?;
                let exception = Self::pop(frame)?;
                let (rest, matched) = self.exception_group_match(exception, kinds)?;
                if !self.concrete(matched)?.is_none() {
                    // The clause handles what it matched: that is the current exception.
                    if let Some(current) = self.exc_stack.last_mut() {
                        *current = matched;
                    }
                }
                self.unhandled_groups.insert(rest);
                frame.stack.extend([rest, matched]);
            }
            Op::PrepReraiseStar => {
                let raised = Self::pop(frame)?;
                Self::pop(frame)?;
                let r = self.prep_reraise_star(raised)?;
                frame.stack.push(r);
            }
            Op::WithExceptStart => {
                let depth = frame.stack.len();
                let exception = match self.table.exceptions {
                    ExceptionModel::Table => frame.stack[depth - 1],
                    ExceptionModel::BlockStack => frame.stack[depth - 2],
                };
                // The exit method (and, where LOAD_SPECIAL made it, its self slot) under
                // the saved instruction offset and the previous exception.
                let (exit, receiver) = if self.table.exceptions == ExceptionModel::BlockStack {
                    // exit, the previous exception's triple, then this one's (type on top).
                    (frame.stack[depth - 7], None)
                } else if self.table.has("LOAD_SPECIAL") {
                    (frame.stack[depth - 5], Some(frame.stack[depth - 4]))
                } else {
                    (frame.stack[depth - 4], None)
                };
                let exc = self.concrete(exception)?;
                let kind = self.constant(exc.get_type().into_any());
                let traceback = self.constant(exc.getattr("__traceback__")?);
                let mut args = Vec::new();
                if let Some(r) = receiver.filter(|r| !matches!(self.val(*r), Val::Null)) {
                    args.push(r);
                }
                args.extend([kind, exception, traceback]);
                let result = self.call(exit, args, vec![])?;
                frame.stack.push(result);
            }
            Op::LoadBuildClass => return unsupported("class definition"),
            Op::ImportName | Op::ImportFrom | Op::ImportStar => return unsupported("import"),
            other => return unsupported(format!("opcode {}", other.name())),
        }
        Ok(None)
    }
}

/// `exc.__context__ = handled` as CPython sets it when raising: a link back to `exc` in
/// `handled`'s chain is cut first (no new cycle), and an existing cycle is not followed
/// forever (Floyd's tortoise and hare).
fn chain_context(exc: &Bound<'_, PyAny>, handled: &Bound<'_, PyAny>) -> PyResult<()> {
    let mut current = handled.clone();
    let mut slow = handled.clone();
    let mut move_slow = false;
    loop {
        let context = current.getattr("__context__")?;
        if context.is_none() {
            break;
        }
        if context.is(exc) {
            current.setattr("__context__", current.py().None())?;
            break;
        }
        current = context;
        if current.is(&slow) {
            break;
        }
        if move_slow {
            slow = slow.getattr("__context__")?;
        }
        move_slow = !move_slow;
    }
    exc.setattr("__context__", handled)
}

// ---- Variables, attributes, items ----
impl<'py, 'b> Vm<'py, 'b> {
    fn cell_of(&self, frame: &Frame<'py>, arg: Arg) -> Res<usize> {
        match self.val(frame.locals[Self::var_at(arg)?]) {
            Val::Cell(c) => Ok(*c),
            _ => unsupported("a cell variable without its cell"),
        }
    }

    fn store_cell(&mut self, cell: usize, value: Option<Vid>) -> Res<()> {
        // A cell of the translated function's closure lives on after the call: its
        // new contents are stored after the graph runs.
        if cell < self.top_freevars {
            let Some(value) = value else {
                return unsupported("deletion of a variable of an enclosing function");
            };
            self.side_effects
                .push(SideEffect::StoreFree { index: cell, value });
        } else if let Some(source) = self.outside_cells.get(&cell).copied() {
            let Some(value) = value else {
                return unsupported("deletion of a variable of an enclosing function");
            };
            self.side_effects
                .push(SideEffect::StoreCell { cell: source, value });
        }
        self.cells[cell] = value;
        Ok(())
    }

    fn store_global(&mut self, frame: &Frame<'py>, name: String, value: Option<Vid>) -> Res<()> {
        if !self.top_globals.as_ref().is_some_and(|g| frame.globals.is(g)) {
            return unsupported("assignment to a global of another module");
        }
        self.side_effects.push(match value {
            Some(value) => SideEffect::StoreGlobal {
                name: name.clone(),
                value,
            },
            None => SideEffect::DeleteGlobal { name: name.clone() },
        });
        self.stored_globals.push((name, value));
        Ok(())
    }

    fn store_attr(&mut self, owner: Vid, name: String, value: Vid) -> Res<()> {
        let owner = self.realize(owner)?;
        if let Val::Object { class, mut attrs } = self.val(owner).clone_val() {
            let object_setattr = builtin(self.py, "object")?.getattr("__setattr__")?;
            if !class.getattr("__setattr__")?.is(&object_setattr) {
                // Its own `__setattr__` (a frozen dataclass's raises) is not simulated.
                return unsupported("attribute assignment on an object with __setattr__ or slots");
            }
            let class_attr = self.type_lookup(&class, &name)?;
            let is_slot = self.is_slot(class_attr.as_ref())?;
            if !is_slot && !has_instance_dict(&class) {
                return unsupported("attribute assignment on an object without a __dict__");
            }
            if let Some(descriptor) =
                class_attr.filter(|d| !is_slot && d.get_type().hasattr("__set__").unwrap_or(false))
            {
                let Some(setter) = self.python_setter(&descriptor)? else {
                    return unsupported(format!("assignment to the data descriptor {name}"));
                };
                let setter = self.constant(setter);
                self.call(setter, vec![owner, value], vec![])?;
                return Ok(());
            }
            attrs.retain(|(n, _)| *n != name);
            attrs.push((name, value));
            self.values[owner] = Val::Object { class, attrs };
            return Ok(());
        }
        if let Val::Tensor { sym, example } = self.val(owner) {
            // `y.stop_gradient = False` on a tensor the graph made: an operation of the graph
            // (not on an input: a static program would set it on its own value only). Flags
            // only: a shape or dtype set in place changes what the backend compiled for.
            let flag = self.backend.is_meta_attribute(example, &name)
                && example
                    .getattr(name.as_str())
                    .is_ok_and(|v| v.is_exact_instance_of::<PyBool>());
            if *sym >= self.graph.inputs.len() && flag {
                let setattr = builtin(self.py, "setattr")?;
                let name = self.constant(PyString::new(self.py, &name).into_any());
                self.record(&setattr, vec![owner, name, value], vec![])?;
                return Ok(());
            }
        }
        let Val::Obj { obj, source } = self.val(owner) else {
            return unsupported("attribute assignment on a value made by the translated code");
        };
        let (obj, source) = (obj.clone(), *source);
        if source.is_none() || self.backend.is_tensor(&obj) {
            return unsupported("attribute assignment on an object without a source");
        }
        if self.overrides_object(&obj, "__setattr__")? || !obj.hasattr("__dict__")? {
            return unsupported("attribute assignment on an object with __setattr__ or slots");
        }
        if obj.is_instance(&self.ops.function_type)? && name.starts_with("__") {
            // A call after it is inlined from what the function holds now (its defaults,
            // its code): the store must have happened.
            return graph_break(format!("assignment to {name} of a function"));
        }
        if self.dict_changed(&obj)? {
            return graph_break(format!(
                "assignment to {name} of an object whose __dict__ the translation changed"
            ));
        }
        let class_attr = self.type_lookup(&obj.get_type().into_any(), &name)?;
        if let Some(descriptor) = class_attr.filter(|d| d.get_type().hasattr("__set__").unwrap_or(false)) {
            if !self.is_python_slot(&descriptor)? {
                // A setter may change more than the attribute (`e.__cause__ = None` sets
                // `__suppress_context__`), which replaying the store later would hide from
                // the reads between: a property's Python setter runs inlined, any other
                // runs as it is.
                self.guard_type(owner);
                let Some(setter) = self.python_setter(&descriptor)? else {
                    return graph_break(format!("assignment to the data descriptor {name}"));
                };
                let setter = self.constant(setter);
                self.call(setter, vec![owner, value], vec![])?;
                return Ok(());
            }
        }
        self.guard_type(owner);
        self.side_effects.push(SideEffect::StoreAttr {
            target: owner,
            name: name.clone(),
            value,
        });
        self.stored_attrs.push((obj.as_ptr() as usize, name, Some(value)));
        Ok(())
    }

    /// Whether storing over (or deleting) a variable of the top frame holding `old` drops
    /// an object whose death is watched, that nothing else the translation knows holds: an
    /// item of a list from the frame that the translation emptied (what a resume function
    /// takes from its box). The generated code stores at its end or at a break, later than
    /// the original drops it.
    fn drops_a_watched_object(&self, old: Vid) -> Res<bool> {
        let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(old)
        else {
            return Ok(false);
        };
        let Source::Item(container, _) = &self.sources.sources[*source] else {
            return Ok(false);
        };
        let emptied = self
            .by_source
            .get(container)
            .and_then(|list| match self.val(*list) {
                Val::Obj { obj: list, .. } => self.mutated.get(&(list.as_ptr() as usize)).copied(),
                _ => None,
            })
            .is_some_and(|copy| matches!(self.val(copy), Val::List(items) if items.is_empty()));
        if !emptied {
            return Ok(false);
        }
        // Watched: a proxy (using it raises once the object died), a reference with a
        // callback (a WeakValueDictionary's, a WeakSet's...), a `__del__`. A plain reference
        // without one is not counted: framehook's own identity guards hold such ones.
        let weakref = import(self.py, "weakref")?;
        let proxies = (
            weakref.getattr("ProxyType")?,
            weakref.getattr("CallableProxyType")?,
        );
        for reference in weakref.getattr("getweakrefs")?.call1((obj,))?.try_iter()? {
            let reference = reference?;
            let kind = reference.get_type();
            if kind.is(&proxies.0) || kind.is(&proxies.1) || !reference.getattr("__callback__")?.is_none() {
                return Ok(true);
            }
        }
        Ok(self.type_lookup(&obj.get_type().into_any(), "__del__")?.is_some())
    }

    /// Whether `descriptor` is a slot of a class written in Python (`__slots__`), which
    /// stores any value as it is; a C type's members check theirs (`__suppress_context__`
    /// takes only a bool).
    fn is_python_slot(&self, descriptor: &Bound<'py, PyAny>) -> PyResult<bool> {
        const HEAP_TYPE: u64 = 1 << 9;
        if !self.is_slot(Some(descriptor))? {
            return Ok(false);
        }
        let flags: u64 = descriptor
            .getattr("__objclass__")?
            .getattr("__flags__")?
            .extract()?;
        Ok(flags & HEAP_TYPE != 0)
    }

    /// A property's setter when it is a Python function (the VM inlines it); None for any
    /// other data descriptor.
    fn python_setter(&self, descriptor: &Bound<'py, PyAny>) -> Res<Option<Bound<'py, PyAny>>> {
        if !descriptor.is_instance(&self.ops.property_type)? {
            return Ok(None);
        }
        let setter = descriptor.getattr("fset")?;
        Ok(setter.is_instance(&self.ops.function_type)?.then_some(setter))
    }

    /// `del obj.name` on an object from the frame: guarded to have it in its `__dict__`,
    /// replayed after the graph.
    fn delete_attr(&mut self, owner: Vid, name: String) -> Res<()> {
        let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(owner)
        else {
            return unsupported("attribute deletion on an object without a source");
        };
        let (obj, source) = (obj.clone(), *source);
        if self.backend.is_tensor(&obj)
            || self.overrides_object(&obj, "__delattr__")?
            || !obj.hasattr("__dict__")?
        {
            return unsupported("attribute deletion on an object with __delattr__ or slots");
        }
        if self.dict_changed(&obj)? {
            return graph_break(format!(
                "deleting {name} of an object whose __dict__ the translation changed"
            ));
        }
        let dict = obj.getattr("__dict__")?;
        let key = PyString::intern(self.py, &name).into_any();
        if !dict.contains(&key)? {
            return unsupported(format!("deleting {name}, which the object's __dict__ lacks"));
        }
        self.guard_type(owner);
        let dict_source = self.intern(Source::Attr(source, name_ref(self.py, "__dict__")));
        let entry = self.intern(Source::Item(dict_source, StrongRef::new(&key)));
        self.add_guard(entry, Check::Present);
        self.side_effects.push(SideEffect::DeleteAttr {
            target: owner,
            name: name.clone(),
        });
        self.stored_attrs.push((obj.as_ptr() as usize, name, None));
        Ok(())
    }

    /// Whether the translation changed the `__dict__` of `obj` through the dict itself
    /// (`obj.__dict__.pop(k)`): its symbolic copy, not `obj`, has the attributes now. The
    /// dict is read only through the C descriptor every class with instance dicts has
    /// (anything else, a property named `__dict__`, is not run while translating).
    fn dict_changed(&self, obj: &Bound<'py, PyAny>) -> PyResult<bool> {
        if self.mutated.is_empty() {
            return Ok(false);
        }
        let ty = obj.get_type().into_any();
        let plain = ty.getattr("__getattribute__")?.is(&self.ops.object_getattribute)
            && self
                .type_lookup(&ty, "__dict__")?
                .is_some_and(|d| d.is_instance(&self.ops.getset_descriptor_type).unwrap_or(false));
        Ok(plain
            && obj
                .getattr("__dict__")
                .is_ok_and(|dict| self.mutated.contains_key(&(dict.as_ptr() as usize))))
    }

    /// Whether `len(obj)` is a builtin container's own length: an instance of one, or of a
    /// subclass that leaves `__len__` alone (a `Len` guard then fixes it, with its type).
    fn has_builtin_len(&self, obj: &Bound<'py, PyAny>) -> PyResult<bool> {
        let ty = obj.get_type();
        for base in [
            self.py.get_type::<PyList>(),
            self.py.get_type::<PyTuple>(),
            self.py.get_type::<PyDict>(),
            self.py.get_type::<pyo3::types::PySet>(),
            self.py.get_type::<PyFrozenSet>(),
        ] {
            if ty.is_subclass(&base)? {
                return Ok(ty.getattr("__len__")?.is(&base.getattr("__len__")?));
            }
        }
        Ok(false)
    }

    /// Whether the object's type overrides `object`'s `method` (`__setattr__`, `__delattr__`).
    fn overrides_object(&self, obj: &Bound<'py, PyAny>, method: &str) -> PyResult<bool> {
        let default = builtin(self.py, "object")?.getattr(method)?;
        Ok(!obj.get_type().getattr(method)?.is(&default))
    }

    /// Looks `name` up on the type's MRO without running descriptors.
    fn type_lookup(&self, ty: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        for class in ty.getattr("__mro__")?.try_iter()? {
            if let Ok(found) = class?.getattr("__dict__")?.get_item(name) {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    fn load_attr(&mut self, owner: Vid, name: &str) -> Res<Vid> {
        let owner = self.realize(owner)?;
        match self.val(owner).clone_val() {
            Val::Tensor { example, .. } => self.tensor_attr(owner, example, name),
            Val::List(_) | Val::Dict(_) | Val::Set(_) => {
                // An attribute the type lacks raises CPython's AttributeError.
                self.type_of(owner)?.call0()?.getattr(name)?;
                Ok(self.push_val(Val::ContainerMethod {
                    container: owner,
                    name: name.to_owned(),
                }))
            }
            Val::Super { class, receiver } => self.super_attr(class, receiver, name),
            Val::Object { class, attrs } => self.made_object_attr(owner, class, &attrs, name),
            Val::Interpolation(parts) => {
                let index = ["value", "expression", "conversion", "format_spec"]
                    .iter()
                    .position(|field| *field == name);
                match index {
                    Some(index) => Ok(parts[index]),
                    None => unsupported(format!("attribute {name} of an Interpolation holding a tensor")),
                }
            }
            Val::Template(parts) => {
                let picked: Vec<Vid> = match name {
                    "strings" => parts.iter().step_by(2).copied().collect(),
                    "interpolations" => parts.iter().skip(1).step_by(2).copied().collect(),
                    "values" => {
                        let interpolations: Vec<Vid> = parts.iter().skip(1).step_by(2).copied().collect();
                        interpolations
                            .into_iter()
                            .map(|i| self.load_attr(i, "value"))
                            .collect::<Res<_>>()?
                    }
                    _ => return unsupported(format!("attribute {name} of a Template holding a tensor")),
                };
                Ok(self.push_val(Val::Tuple(picked)))
            }
            Val::Function(f) => {
                let value = match name {
                    "__name__" => PyString::new(self.py, &f.name).into_any(),
                    "__qualname__" => PyString::new(self.py, &f.qualname).into_any(),
                    "__code__" => f.code.clone(),
                    _ => return unsupported(format!("attribute {name} of a function")),
                };
                Ok(self.constant(value))
            }
            Val::Obj { obj, source: Some(s) } if obj.get_type().is(self.builtin("super")?) => {
                // A super object from the frame reads as one the translation made: its class
                // pinned, its receiver read from it.
                self.guard_type(owner);
                let class = obj.getattr("__thisclass__")?;
                let class_source = self.intern(Source::Attr(s, name_ref(self.py, "__thisclass__")));
                self.add_guard(class_source, Check::Id(Pin::new(&class)));
                let receiver = self.value_of_source(
                    Source::Attr(s, name_ref(self.py, "__self__")),
                    obj.getattr("__self__")?,
                );
                self.super_attr(class, receiver, name)
            }
            Val::Obj { obj, source } => {
                let container = obj.is_exact_instance_of::<PyList>()
                    || obj.is_exact_instance_of::<PyDict>()
                    || self.is_ordered_dict(&obj)
                    || obj.is_exact_instance_of::<PyTuple>() && matches!(name, "index" | "count");
                if container && source.is_some() {
                    // A method of a list, dict or tuple from the frame works on its symbolic
                    // copy, written back after the graph if the method mutates it.
                    let mutates = matches!(
                        name,
                        "append"
                            | "extend"
                            | "insert"
                            | "pop"
                            | "remove"
                            | "clear"
                            | "reverse"
                            | "sort"
                            | "update"
                            | "setdefault"
                            | "popitem"
                    );
                    if (obj.is_exact_instance_of::<PyDict>() || self.is_ordered_dict(&obj))
                        && matches!(name, "keys" | "values" | "items")
                    {
                        // A view shows the dict as it is when used (its copy once mutated).
                        return Ok(self.push_val(Val::ContainerMethod {
                            container: owner,
                            name: name.to_owned(),
                        }));
                    }
                    let copy = if mutates {
                        self.mutable_copy(owner)?
                    } else {
                        self.readonly_copy(owner)?
                    };
                    if let Some(copy) = copy {
                        return Ok(self.push_val(Val::ContainerMethod {
                            container: copy,
                            name: name.to_owned(),
                        }));
                    }
                }
                // The attribute stores and the copy of `__dict__` are replayed in order, but
                // neither sees the other while translating: the real code reads on from here.
                if name == "__dict__"
                    && self
                        .stored_attrs
                        .iter()
                        .any(|(p, ..)| *p == obj.as_ptr() as usize)
                {
                    return graph_break("the __dict__ of an object whose attributes the translation changed");
                }
                if name != "__dict__" && self.dict_changed(&obj)? {
                    return graph_break(format!(
                        "attribute {name} of an object whose __dict__ the translation changed"
                    ));
                }
                if let Some((_, _, stored)) = self
                    .stored_attrs
                    .iter()
                    .rev()
                    .find(|(p, n, _)| *p == obj.as_ptr() as usize && n == name)
                {
                    return match stored {
                        Some(value) => Ok(*value),
                        // What remains (a class attribute, or an AttributeError) is not simulated.
                        None => unsupported(format!("reading {name} after deleting it")),
                    };
                }
                self.object_attr(owner, obj, source, name)
            }
            Val::NamedTuple { class, items } => self.named_tuple_attr(owner, &class, &items, name),
            Val::Constructed { obj, .. } => {
                // Made again by the generated code: what it reads of it must be a value.
                let value = obj.getattr(name)?;
                if !is_immutable(&value) {
                    return unsupported(format!(
                        "attribute {name} of a {} the translation made",
                        qualname(&obj.get_type().into_any())
                    ));
                }
                Ok(self.constant(value))
            }
            Val::Generator(_) if name == "send" => Ok(self.push_val(Val::ContainerMethod {
                container: owner,
                name: name.to_owned(),
            })),
            Val::Tuple(_) if matches!(name, "index" | "count") => Ok(self.push_val(Val::ContainerMethod {
                container: owner,
                name: name.to_owned(),
            })),
            Val::Tuple(_) | Val::Slice(..) => {
                let obj = self.concrete(owner)?;
                let value = obj.getattr(name)?;
                Ok(self.constant(value))
            }
            _ => unsupported(format!("attribute {name} of an internal value")),
        }
    }

    fn tensor_attr(&mut self, owner: Vid, example: Bound<'py, PyAny>, name: &str) -> Res<Vid> {
        if self.backend.is_meta_attribute(&example, name) {
            // Shape, dtype and the like are what the tensor's guard pins.
            let value = example.getattr(name)?;
            return Ok(self.constant(value));
        }
        let value = example.getattr(name)?;
        if value.is_callable() {
            return Ok(self.push_val(Val::TensorMethod {
                tensor: owner,
                name: name.to_owned(),
            }));
        }
        if self.backend.is_tensor(&value) {
            let getter = self.ops.operator.getattr("attrgetter")?.call1((name,))?;
            return self.record(&getter, vec![owner], vec![]);
        }
        // Another attribute of a tensor from the frame (`name`, `persistable`): read from it,
        // through its source (the generated code reads it again; used, it is guarded).
        if let Val::Tensor { sym, .. } = self.val(owner) {
            if let Some(tensor) = self.input_tensors.get(sym) {
                let (source, value) = (self.graph.inputs[*sym], tensor.getattr(name)?);
                return Ok(self.value_of_source(Source::Attr(source, name_ref(self.py, name)), value));
            }
        }
        graph_break(format!("tensor to python: attribute {name} of a tensor"))
    }

    fn object_attr(
        &mut self,
        owner: Vid,
        obj: Bound<'py, PyAny>,
        source: Option<SourceId>,
        name: &str,
    ) -> Res<Vid> {
        let attr_source = |vm: &mut Self, value: Bound<'py, PyAny>| match source {
            Some(s) => {
                let key = PyString::intern(vm.py, name).into_any();
                vm.value_of_source(Source::Attr(s, StrongRef::new(&key)), value)
            }
            None => vm.constant(value),
        };
        // Modules and classes: the object is pinned by identity, the attribute guarded on use.
        if obj.is_instance_of::<PyType>() || obj.is_instance(&self.ops.module_type)? {
            if let Some(s) = source {
                self.add_guard(s, Check::Id(Pin::new(&obj)));
            }
            if obj.is_instance_of::<PyType>() {
                if let Some(raw) = self.type_lookup(&obj, name)? {
                    if raw.is_instance(&self.ops.classmethod_type)? {
                        let function = self.constant(raw.getattr("__func__")?);
                        return Ok(self.push_val(Val::Method {
                            function,
                            receiver: owner,
                        }));
                    }
                }
            }
            let value = obj.getattr(name)?;
            return Ok(attr_source(self, value));
        }
        let exception = obj.is_instance(&self.py.get_type::<pyo3::exceptions::PyBaseException>())?;
        if exception && source.is_none() && name == "__traceback__" {
            // The frames CPython's own raising gives it: the frame runs as it is (an inlined
            // callee: as its own frame, from a break). Chaining is simulated (see `raise`).
            let what = format!("{name} of an exception raised in the translation");
            return Err(if self.depth == 0 {
                Problem::Eager(what)
            } else {
                Problem::Break(what)
            });
        }
        if is_immutable(&obj) || (exception && source.is_none()) {
            // Immutable values (their attributes, bound methods included, follow from the
            // value the guard pins), and exceptions the translation made or caught.
            if let Some(s) = source {
                self.guard_value(s, &obj)?;
            }
            if exception && source.is_none() {
                // The generated code makes its own exception: a method is bound to that one
                // (the class's C method with it as first argument), not to this one.
                let ty = obj.get_type().into_any();
                if let Some(raw) = self.type_lookup(&ty, name)? {
                    if raw.is_instance(self.ops.c_method_types.as_any())? {
                        let function = self.constant(raw);
                        return Ok(self.push_val(Val::Method {
                            function,
                            receiver: owner,
                        }));
                    }
                }
                let value = obj.getattr(name)?;
                if value.getattr("__self__").is_ok_and(|bound_to| bound_to.is(&obj)) {
                    return unsupported(format!("method {name} of an exception the translation made"));
                }
                return Ok(self.constant(value));
            }
            let value = obj.getattr(name)?;
            return Ok(self.constant(value));
        }
        if self.backend.is_tensor(&obj) {
            return unsupported("a tensor attribute outside the graph");
        }
        if matches!(name, "name" | "value" | "_name_" | "_value_") && obj.is_instance(&self.ops.enum_type)? {
            // An enum member is one object for good: its name and value are fixed with it.
            let value = obj.getattr(name)?;
            if is_immutable(&value) {
                if let Some(s) = source {
                    self.add_guard(s, Check::Id(Pin::new(&obj)));
                }
                return Ok(self.constant(value));
            }
        }
        // An instance: look the attribute up as object.__getattribute__ would, without
        // running anything but properties (inlined).
        let ty = obj.get_type().into_any();
        let getattribute = ty.getattr("__getattribute__")?;
        let reads_through_getattr = self.backend.is_layer(&obj);
        let generic_lookup =
            getattribute.is(&self.ops.object_getattribute) || has_generic_getattro(&obj.get_type());
        if !generic_lookup || self.type_lookup(&ty, "__getattr__")?.is_some() && !reads_through_getattr {
            // `set`, exceptions and other C types define their own slot wrapper (often of
            // the generic lookup): say so rather than blame a Python override.
            let why = if getattribute.is_instance(&self.ops.object_getattribute.get_type())?
                && self.type_lookup(&ty, "__getattr__")?.is_none()
            {
                let owner = getattribute.getattr("__objclass__")?.getattr("__qualname__")?;
                format!("{owner}'s __getattribute__, written in C, is not simulated")
            } else {
                "custom __getattribute__ or __getattr__".to_owned()
            };
            return unsupported(format!(
                "attribute {name} of {} ({why})",
                ty.getattr("__qualname__")?
            ));
        }
        self.guard_type(owner);
        let class_attr = self.type_lookup(&ty, name)?;
        if let Some(descriptor) = &class_attr {
            if descriptor.is_instance(&self.ops.property_type)? {
                let getter = descriptor.getattr("fget")?;
                let function = self.constant(getter);
                return self.call(function, vec![owner], vec![]);
            }
            let descriptor_type = descriptor.get_type();
            if descriptor_type.hasattr("__set__")? && descriptor_type.hasattr("__get__")? {
                if let Some(value) = self.python_descriptor_get(descriptor, owner, &ty, name)? {
                    return Ok(value);
                }
                // Slots and other data descriptors written in C: read now, guarded by source.
                let value = obj.getattr(name)?;
                return Ok(attr_source(self, value));
            }
        }
        if let Ok(dict) = obj.getattr("__dict__") {
            if let Ok(value) = dict.get_item(name) {
                return Ok(attr_source(self, value));
            }
        }
        if let Some(raw) = &class_attr {
            if let Some(bound) = self.bind_class_function(raw, owner, &ty, None)? {
                return Ok(bound);
            }
        }
        match class_attr {
            Some(raw) if raw.is_instance(self.ops.c_method_types.as_any())? => {
                // A method of a builtin base, bound to this object (not to the one seen
                // now: the object itself is guarded on its type only).
                let function = self.constant(raw);
                Ok(self.push_val(Val::Method {
                    function,
                    receiver: owner,
                }))
            }
            Some(raw) if raw.get_type().hasattr("__get__")? => {
                if let Some(value) = self.python_descriptor_get(&raw, owner, &ty, name)? {
                    return Ok(value);
                }
                // Another non-data descriptor written in C: what it gives depends on the
                // object.
                if let Some(s) = source {
                    self.add_guard(s, Check::Id(Pin::new(&obj)));
                }
                let value = obj.getattr(name)?;
                Ok(self.constant(value))
            }
            Some(_) => {
                let value = obj.getattr(name)?;
                Ok(attr_source(self, value))
            }
            // A layer's parameter or sublayer, read through its `__getattr__` (as the guard
            // reads it again).
            None if reads_through_getattr => {
                let value = obj.getattr(name)?;
                Ok(attr_source(self, value))
            }
            None => Err(Problem::Python(pyo3::exceptions::PyAttributeError::new_err(
                format!("'{}' object has no attribute '{name}'", ty.getattr("__name__")?),
            ))),
        }
    }

    /// `descriptor.__get__(owner, ty)` for a descriptor whose class is written in Python:
    /// its `__get__` inlined where it is a Python function (it may read state, or have
    /// effects, on every call), a break where it is anything else (a `Mock`); None for a
    /// descriptor of a C type, which the caller reads as such.
    fn python_descriptor_get(
        &mut self,
        descriptor: &Bound<'py, PyAny>,
        owner: Vid,
        ty: &Bound<'py, PyAny>,
        name: &str,
    ) -> Res<Option<Vid>> {
        if !is_heap_instance(descriptor)? || descriptor.get_type().is(&self.ops.tuple_getter_type) {
            return Ok(None);
        }
        let descriptor_type = descriptor.get_type().into_any();
        match self.type_lookup(&descriptor_type, "__get__")? {
            Some(get) if get.is_instance(&self.ops.function_type)? => {
                let get = self.constant(get);
                let arguments = vec![
                    self.constant(descriptor.clone()),
                    owner,
                    self.constant(ty.clone()),
                ];
                Ok(Some(self.call(get, arguments, vec![])?))
            }
            _ => unsupported(format!(
                "attribute {name}: a {} descriptor, whose __get__ is not a Python function",
                qualname(&descriptor_type)
            )),
        }
    }

    /// `type(owner).<name>` bound to `owner`, for `with` and the like.
    fn special_method(&mut self, owner: Vid, name: &str) -> Res<Vid> {
        let ty = self.type_of(owner)?;
        let Some(raw) = self.type_lookup(&ty, name)? else {
            return Err(Problem::Python(PyTypeError::new_err(format!(
                "'{}' object does not support the context manager protocol",
                ty.getattr("__name__")?
            ))));
        };
        if raw.is_instance(&self.ops.function_type)? {
            let function = self.constant(raw);
            return Ok(self.push_val(Val::Method {
                function,
                receiver: owner,
            }));
        }
        graph_break(format!(
            "unsupported call: {name} of {} written in C",
            ty.getattr("__qualname__")?
        ))
    }

    /// A function found in a class's namespace, bound as attribute lookup binds it: a
    /// function to `instance`, a classmethod's to the class (`class_value`, or `class` as a
    /// constant), a staticmethod's as it is. None for anything else.
    fn bind_class_function(
        &mut self,
        raw: &Bound<'py, PyAny>,
        instance: Vid,
        class: &Bound<'py, PyAny>,
        class_value: Option<Vid>,
    ) -> Res<Option<Vid>> {
        if raw.is_instance(&self.ops.function_type)? {
            let function = self.constant(raw.clone());
            return Ok(Some(self.push_val(Val::Method {
                function,
                receiver: instance,
            })));
        }
        if raw.is_instance(&self.ops.staticmethod_type)? {
            return Ok(Some(self.constant(raw.getattr("__func__")?)));
        }
        if raw.is_instance(&self.ops.classmethod_type)? {
            let function = self.constant(raw.getattr("__func__")?);
            let receiver = class_value.unwrap_or_else(|| self.constant(class.clone()));
            return Ok(Some(self.push_val(Val::Method { function, receiver })));
        }
        Ok(None)
    }

    /// `super(class, receiver)`, checked as CPython checks it (its TypeErrors).
    fn make_super(&mut self, class: Bound<'py, PyAny>, receiver: Vid) -> Res<Vid> {
        if !class.is_instance_of::<PyType>() {
            return Err(Problem::Python(PyTypeError::new_err(format!(
                "super() argument 1 must be a type, not {}",
                class.get_type().name()?
            ))));
        }
        let instance_type = self.type_of(receiver)?;
        let subclass = |ty: &Bound<'py, PyAny>| -> PyResult<bool> {
            ty.cast::<PyType>().map_or(Ok(false), |t| t.is_subclass(&class))
        };
        if !self.super_of_a_class(&class, receiver)? && !subclass(&instance_type)? {
            return Err(Problem::Python(PyTypeError::new_err(
                "super(type, obj): obj must be an instance or subtype of type",
            )));
        }
        Ok(self.push_val(Val::Super { class, receiver }))
    }

    /// `object.__init__` of an instance of `class`: nothing, or CPython's error for
    /// arguments (`object_init`), which names the class where it defines neither
    /// `__init__` nor `__new__`.
    fn object_init(&mut self, class: &Bound<'py, PyAny>, arguments: bool) -> Res<Vid> {
        let object = builtin(self.py, "object")?;
        let own = |name: &str| -> PyResult<bool> { Ok(!class.getattr(name)?.is(&object.getattr(name)?)) };
        if arguments && own("__init__")? {
            return Err(Problem::Python(PyTypeError::new_err(
                "object.__init__() takes exactly one argument (the instance to initialize)",
            )));
        }
        if arguments && !own("__new__")? {
            return Err(Problem::Python(PyTypeError::new_err(format!(
                "{}.__init__() takes exactly one argument (the instance to initialize)",
                class.getattr("__name__")?
            ))));
        }
        Ok(self.constant(self.ops.none.clone()))
    }

    /// Whether `super(class, receiver)` is of a class (a classmethod's, `__new__`'s):
    /// `receiver` a subclass of `class`, whose functions it then gives unbound.
    fn super_of_a_class(&mut self, class: &Bound<'py, PyAny>, receiver: Vid) -> Res<bool> {
        let is_type = matches!(self.val(receiver), Val::Obj { obj, .. } if obj.is_instance_of::<PyType>());
        if !is_type {
            return Ok(false);
        }
        let receiver = self.concrete(receiver)?;
        Ok(receiver
            .cast::<PyType>()
            .map_or(Ok(false), |t| t.is_subclass(class))?)
    }

    fn super_attr(&mut self, class: Bound<'py, PyAny>, receiver: Vid, name: &str) -> Res<Vid> {
        if name == "__class__" {
            // The super object's own class, not its receiver's.
            return Ok(self.constant(self.builtin("super")?));
        }
        let receiver_is_class = self.super_of_a_class(&class, receiver)?;
        let ty = if receiver_is_class {
            self.concrete(receiver)?
        } else {
            self.type_of(receiver)?
        };
        let mro = ty.getattr("__mro__")?.cast_into::<PyTuple>()?;
        let start = mro.iter().position(|c| c.is(&class)).map_or(mro.len(), |p| p + 1);
        for base in mro.iter().skip(start) {
            if let Ok(raw) = base.getattr("__dict__")?.get_item(name) {
                if receiver_is_class && raw.is_instance(&self.ops.function_type)? {
                    // Of the class itself, a function is given unbound (`super().__new__`).
                    return Ok(self.constant(raw));
                }
                let class_value = receiver_is_class.then_some(receiver);
                if let Some(bound) = self.bind_class_function(&raw, receiver, &ty, class_value)? {
                    return Ok(bound);
                }
                if raw.is_instance(&self.ops.property_type)? && !receiver_is_class {
                    let function = self.constant(raw.getattr("fget")?);
                    return self.call(function, vec![receiver], vec![]);
                }
                if base.is(&builtin(self.py, "object")?)
                    && !receiver_is_class
                    && raw.is_instance(self.ops.c_method_types.as_any())?
                {
                    // object.__init__, __setattr__ and the like, bound to the receiver (a
                    // frozen dataclass's __setattr__ calls super().__setattr__(name, value)).
                    let function = self.constant(raw);
                    return Ok(self.push_val(Val::Method { function, receiver }));
                }
                if is_immutable(&raw) && !raw.get_type().hasattr("__get__")? {
                    // A plain class attribute (`a = 1`), fixed as the class's methods are.
                    return Ok(self.constant(raw));
                }
                return unsupported(format!("super().{name} of a builtin base"));
            }
        }
        Err(Problem::Python(pyo3::exceptions::PyAttributeError::new_err(
            format!("'super' object has no attribute '{name}'"),
        )))
    }

    /// The items of sequence `left` `+` `right` (where `may_add`: `right`'s items
    /// appended) or `*` an exact int; None for any other operation.
    fn joined_items(&mut self, op: BinOp, left: Vid, right: Vid, may_add: bool) -> Res<Option<Vec<Vid>>> {
        Ok(match op {
            BinOp::Add if may_add => {
                let mut items = self.items_of(left)?;
                items.extend(self.items_of(right)?);
                Some(items)
            }
            BinOp::Multiply => match self.exact_int(right)? {
                Some(times) => Some(repeated(&self.items_of(left)?, times)?),
                None => None,
            },
            _ => None,
        })
    }
    fn binary(&mut self, left: Vid, right: Vid, op: BinOp, inplace: bool) -> Res<Vid> {
        if op == BinOp::Subscr {
            return self.subscript(left, right);
        }
        let left = self.realize_tensor(left)?;
        // A list's `+=` (extend, by any iterable) and `*=` change it in place (one from the
        // frame through its mutable copy).
        let changes_a_list = match self.val(left) {
            Val::List(_) => true,
            Val::Obj { obj, source: Some(_) } => obj.is_exact_instance_of::<PyList>(),
            _ => false,
        };
        if inplace && changes_a_list {
            if let Some(items) = self.joined_items(op, left, right, true)? {
                let list = self.mutable_copy(left)?.unwrap_or(left);
                self.values[list] = Val::List(items);
                return Ok(left);
            }
        }
        // Concatenating and repeating containers the translation made (list + list,
        // tuple + tuple, by an int); anything else is Python's operator on real values.
        let left_is_list = match self.val(left) {
            Val::List(_) => Some(true),
            Val::Tuple(_) => Some(false),
            // A list or tuple from the frame, by its items (guarded as it is read).
            Val::Obj { obj, source: Some(_) } if obj.is_exact_instance_of::<PyList>() => Some(true),
            Val::Obj { obj, source: Some(_) } if obj.is_exact_instance_of::<PyTuple>() => Some(false),
            _ => None,
        };
        if let Some(is_list) = left_is_list {
            let may_add = op == BinOp::Add && self.is_exact_sequence(right, is_list);
            if let Some(items) = self.joined_items(op, left, right, may_add)? {
                return Ok(self.push_val(if is_list {
                    Val::List(items)
                } else {
                    Val::Tuple(items)
                }));
            }
        }
        // Computed while translating, an in-place operator would change the object then
        // (and the result would be a copy): only immutable values are.
        let mutable = match self.val(left) {
            Val::List(_) | Val::Dict(_) | Val::Set(_) => true,
            Val::Obj { obj, .. } => !is_immutable(obj) && !self.backend.is_tensor(obj),
            _ => false,
        };
        if inplace && mutable {
            return unsupported("an in-place operator on a mutable value");
        }
        self.operator_call(binop_name(op, inplace), vec![left, right])
    }

    /// Whether `vid` is a list (`list`) or a tuple, of exactly that type.
    fn is_exact_sequence(&self, vid: Vid, list: bool) -> bool {
        match self.val(vid) {
            Val::List(_) => list,
            Val::Tuple(_) => !list,
            Val::Obj { obj, .. } if list => obj.is_exact_instance_of::<PyList>(),
            Val::Obj { obj, .. } => obj.is_exact_instance_of::<PyTuple>(),
            _ => false,
        }
    }

    /// The value of `vid` when it is an `int` or a `bool` that fits an `isize` (specialized).
    fn exact_int(&mut self, vid: Vid) -> Res<Option<isize>> {
        let is_int = match self.val(vid) {
            Val::Obj { obj, .. } | Val::Scalar { example: obj, .. } => {
                obj.is_exact_instance_of::<PyInt>() || obj.is_exact_instance_of::<PyBool>()
            }
            _ => false,
        };
        if !is_int {
            return Ok(None);
        }
        Ok(self.concrete(vid)?.extract::<isize>().ok())
    }

    /// `left <name> right` where an operand is an object the translation made: its class's
    /// Python rich comparison, inlined, then the other operand's reflected one (first where
    /// its class is a subclass of the left's) when missing or `NotImplemented`; past both,
    /// `==` and `!=` compare identity. None when neither operand is such an object.
    fn compare_made_objects(&mut self, name: &str, left: Vid, right: Vid) -> Res<Option<Vid>> {
        let class_of = |vm: &Self, v: Vid| match vm.val(v) {
            Val::Object { class, .. } => Some(class.clone()),
            _ => None,
        };
        let (left_class, right_class) = (class_of(self, left), class_of(self, right));
        if left_class.is_none() && right_class.is_none() {
            return Ok(None);
        }
        let reflected = match name {
            "lt" => "gt",
            "le" => "ge",
            "gt" => "lt",
            "ge" => "le",
            same => same,
        };
        let right_first = match (&left_class, &right_class) {
            (Some(l), Some(r)) => !l.is(r) && r.cast::<PyType>().map_err(PyErr::from)?.is_subclass(l)?,
            _ => false,
        };
        let mut attempts = [
            (left, &left_class, name, right),
            (right, &right_class, reflected, left),
        ];
        if right_first {
            attempts.swap(0, 1);
        }
        for (receiver, class, method, other) in attempts {
            let Some(class) = class else { continue };
            let found = self.type_lookup(class, &format!("__{method}__"))?;
            let is_python = |f: &Bound<'py, PyAny>| f.is_instance(&self.ops.function_type).unwrap_or(false);
            // `object.__ne__` answers the inverse of `__eq__` (unless that declines).
            let inverse_of_eq = method == "ne"
                && found.as_ref().is_some_and(|f| {
                    builtin(self.py, "object")
                        .and_then(|o| o.getattr("__ne__"))
                        .is_ok_and(|default| f.is(&default))
                });
            let function = if inverse_of_eq {
                self.type_lookup(class, "__eq__")?.filter(is_python)
            } else {
                found.filter(is_python)
            };
            let Some(function) = function else { continue };
            let function = self.constant(function);
            let result = self.call(function, vec![receiver, other], vec![])?;
            let declined =
                matches!(self.val(result), Val::Obj { obj, .. } if obj.is(self.py.NotImplemented()));
            if declined {
                continue;
            }
            if inverse_of_eq {
                let equal = self.truthy(result)?;
                return Ok(Some(self.boolean(!equal)));
            }
            return Ok(Some(result));
        }
        match name {
            "eq" | "ne" => {
                let same = self.identical(left, right)?;
                Ok(Some(self.boolean(same == (name == "eq"))))
            }
            _ => {
                let symbol = match name {
                    "lt" => "<",
                    "le" => "<=",
                    "gt" => ">",
                    _ => ">=",
                };
                let (left_type, right_type) = (self.type_of(left)?, self.type_of(right)?);
                Err(Problem::Python(pyo3::exceptions::PyTypeError::new_err(format!(
                    "'{symbol}' not supported between instances of '{}' and '{}'",
                    left_type.getattr("__name__")?,
                    right_type.getattr("__name__")?
                ))))
            }
        }
    }

    fn identical(&mut self, left: Vid, right: Vid) -> Res<bool> {
        if left == right {
            return Ok(true);
        }
        let (left, right) = (self.realize(left)?, self.realize(right)?);
        let kind = |v: &Val<'py>| match v {
            Val::Obj { .. } => 0,
            Val::Tensor { .. } => 1,
            _ => 2,
        };
        match (kind(self.val(left)), kind(self.val(right))) {
            (0, 0) => {
                let sourced = |vm: &Self, v: Vid| matches!(vm.val(v), Val::Obj { source: Some(_), .. });
                let (a, b) = match (self.val(left), self.val(right)) {
                    (Val::Obj { obj: a, .. }, Val::Obj { obj: b, .. }) => (a.clone(), b.clone()),
                    _ => unreachable!(),
                };
                let same = a.is(&b);
                // `x is None` and the like: when they differ, x's type (not its identity)
                // says so whenever the constant's type has one value only.
                for (value, other, constant) in [(left, &b, right), (right, &a, left)] {
                    let singleton = other.is_none()
                        || other.is_exact_instance_of::<PyBool>()
                        || other.is(self.py.Ellipsis())
                        || other.is(self.py.NotImplemented());
                    if singleton && sourced(self, value) && !sourced(self, constant) {
                        let value_type = self.type_of(value)?;
                        if same || value_type.is(other.get_type()) {
                            self.concrete(value)?;
                        }
                        return Ok(same);
                    }
                }
                let (a, b) = (self.identity_of(left)?, self.identity_of(right)?);
                Ok(a.is(&b))
            }
            (1, 1) => {
                let (Val::Tensor { example: a, .. }, Val::Tensor { example: b, .. }) =
                    (self.val(left), self.val(right))
                else {
                    unreachable!()
                };
                Ok(a.is(b))
            }
            // A tensor, container or function of the translation is never a frame object.
            _ => {
                for v in [left, right] {
                    if let Val::Obj { obj, .. } = self.val(v) {
                        let obj = obj.clone();
                        self.guard_type(v);
                        if obj.is_none() {
                            let _ = self.concrete(v)?;
                        }
                    }
                }
                Ok(false)
            }
        }
    }

    fn contains(&mut self, container: Vid, item: Vid) -> Res<bool> {
        let container = self.realize(container)?;
        if let Val::Dict(items) = self.val(container).clone_val() {
            let key = self.concrete(item)?;
            return Ok(self.find_dict_key(&items, &key)?.is_some());
        }
        if let Val::DictView {
            dict,
            part: DictPart::Keys,
        } = self.val(container)
        {
            return self.contains(*dict, item);
        }
        if self.is_tensor_val(container) || self.is_tensor_val(item) {
            return graph_break("tensor to python: `in` on tensors (data-dependent)");
        }
        if let Val::Obj { obj, source: Some(s) } = self.val(container) {
            let (obj, s) = (obj.clone(), *s);
            if !self.mutated.contains_key(&(obj.as_ptr() as usize)) && obj.is_exact_instance_of::<PyDict>() {
                // Only the key's presence is guarded, not the whole dict.
                self.guard_type(container);
                let key = self.concrete(item)?;
                self.check_native_key(&key)?;
                let found = obj.contains(&key)?;
                let key_source = self.intern(Source::Item(s, StrongRef::new(&key)));
                self.add_guard(key_source, if found { Check::Present } else { Check::Absent });
                return Ok(found);
            }
        }
        if let Val::Tuple(_) | Val::List(_) | Val::Set(_) | Val::Obj { .. } = self.val(container) {
            let sequence = match self.val(container) {
                Val::Obj { obj, source: Some(_) } => {
                    obj.is_exact_instance_of::<PyList>() || obj.is_exact_instance_of::<PyTuple>()
                }
                Val::Obj { .. } => false,
                _ => true,
            };
            if sequence {
                let elements = self.items_of(container)?;
                if matches!(self.val(container), Val::Set(_)) {
                    let key = self.concrete(item)?;
                    return Ok(self.find_key(&elements, &key)?.is_some());
                }
                for element in elements {
                    if self.equal_items(element, item)? {
                        return Ok(true);
                    }
                }
                return Ok(false);
            }
        }
        // Computed now where no method of either runs Python code that may answer otherwise
        // on a later call (a container's `__contains__`, an item's `__hash__` or `__eq__`).
        let c = self.folded_argument(container, "in")?;
        let i = self.folded_argument(item, "member")?;
        match (c, i) {
            (Some(c), Some(i)) => Ok(c.contains(i)?),
            (None, _) => self.refuse_folding("`in`", container),
            (_, None) => self.refuse_folding("`in`", item),
        }
    }

    fn subscript(&mut self, container: Vid, key: Vid) -> Res<Vid> {
        let container = self.realize(container)?;
        match self.val(container).clone_val() {
            Val::Tensor { .. } => {
                let getitem = self.ops.op("getitem")?;
                self.record(&getitem, vec![container, key], vec![])
            }
            Val::Tuple(items) | Val::List(items) | Val::NamedTuple { items, .. } => {
                let is_list = matches!(self.val(container), Val::List(_));
                let key_obj = self.concrete(key)?;
                if let Ok(index) = key_obj.extract::<isize>() {
                    let len = items.len() as isize;
                    let at = if index < 0 { index + len } else { index };
                    if at < 0 || at >= len {
                        return Err(Problem::Python(pyo3::exceptions::PyIndexError::new_err(
                            "index out of range",
                        )));
                    }
                    return Ok(items[at as usize]);
                }
                let indices = builtin(self.py, "range")?
                    .call1((items.len(),))?
                    .get_item(&key_obj)?;
                let picked: Vec<Vid> = indices
                    .try_iter()?
                    .map(|i| Ok(items[i?.extract::<usize>()?]))
                    .collect::<PyResult<_>>()?;
                Ok(self.push_val(if is_list {
                    Val::List(picked)
                } else {
                    Val::Tuple(picked)
                }))
            }
            Val::Dict(items) => {
                let key_obj = self.concrete(key)?;
                match self.find_dict_key(&items, &key_obj)? {
                    Some(index) => Ok(items[index].1),
                    None => Err(Problem::Python(pyo3::exceptions::PyKeyError::new_err(
                        key_obj.unbind(),
                    ))),
                }
            }
            Val::Obj { obj, source } => {
                if source.is_some() {
                    if let Some(copy) = self.mutated.get(&(obj.as_ptr() as usize)).copied() {
                        return self.subscript(copy, key);
                    }
                }
                if self.contains_tensor(key) {
                    return graph_break("tensor to python: indexing a Python container with a tensor");
                }
                let key_obj = self.concrete(key)?;
                let plain = obj.is_exact_instance_of::<PyList>()
                    || obj.is_exact_instance_of::<PyTuple>()
                    || obj.is_exact_instance_of::<PyDict>()
                    || self.is_ordered_dict(&obj)
                    || is_immutable(&obj)
                    || self.backend.is_constant_value(&obj);
                if !plain {
                    let getitem = self.type_lookup(&obj.get_type().into_any(), "__getitem__")?;
                    if let Some(getitem) =
                        getitem.filter(|g| g.is_instance(&self.ops.function_type).unwrap_or(false))
                    {
                        let function = self.constant(getitem);
                        return self.call(function, vec![container, key], vec![]);
                    }
                    return unsupported(format!("indexing a {}", obj.get_type().name()?));
                }
                let mapping = obj.is_exact_instance_of::<PyDict>() || self.is_ordered_dict(&obj);
                if mapping {
                    self.check_native_key(&key_obj)?;
                }
                let value = obj.get_item(&key_obj)?;
                match source {
                    Some(s) if !is_immutable(&obj) => {
                        self.guard_type(container);
                        if !key_obj.is_instance_of::<pyo3::types::PySlice>() {
                            if mapping {
                                return Ok(
                                    self.value_of_source(Source::Item(s, StrongRef::new(&key_obj)), value)
                                );
                            }
                            self.add_guard(s, Check::Len(obj.len()?));
                            return Ok(self.value_of_source(Source::Item(s, StrongRef::new(&key_obj)), value));
                        }
                        // A slice of a list or tuple from the frame: its items, each from
                        // its source, in a container of the same type.
                        let items = self.items_of(container)?;
                        let key = self.constant(key_obj);
                        let copy = self.push_val(if obj.is_exact_instance_of::<PyTuple>() {
                            Val::Tuple(items)
                        } else {
                            Val::List(items)
                        });
                        self.subscript(copy, key)
                    }
                    _ => {
                        let _ = self.concrete(container)?;
                        Ok(self.wrap_result(value))
                    }
                }
            }
            _ => unsupported("indexing an internal value"),
        }
    }

    /// A symbolic copy of a list, tuple or dict from the frame for reading (the mutated copy
    /// once there is one).
    fn readonly_copy(&mut self, container: Vid) -> Res<Option<Vid>> {
        let Val::Obj { obj, source: Some(_) } = self.val(container) else {
            return Ok(None);
        };
        let obj = obj.clone();
        if let Some(copy) = self.mutated.get(&(obj.as_ptr() as usize)) {
            return Ok(Some(*copy));
        }
        if obj.is_exact_instance_of::<PyList>() {
            let items = self.items_of(container)?;
            return Ok(Some(self.push_val(Val::List(items))));
        }
        if obj.is_exact_instance_of::<PyTuple>() {
            let items = self.items_of(container)?;
            return Ok(Some(self.push_val(Val::Tuple(items))));
        }
        let pairs = self.dict_items(container)?;
        Ok(Some(self.push_val(Val::Dict(pairs))))
    }

    /// The symbolic copy of a list or dict from the frame, made on its first mutation
    /// and written back to it after the graph runs.
    fn mutable_copy(&mut self, container: Vid) -> Res<Option<Vid>> {
        let Val::Obj { obj, source: Some(s) } = self.val(container) else {
            return Ok(None);
        };
        let (obj, s) = (obj.clone(), *s);
        if let Some(copy) = self.mutated.get(&(obj.as_ptr() as usize)) {
            return Ok(Some(*copy));
        }
        let (copy, before) = if obj.is_exact_instance_of::<PyList>() {
            let items = self.items_of(container)?;
            (self.push_val(Val::List(items)), Vec::new())
        } else if obj.is_exact_instance_of::<PyDict>() {
            let keys = self.items_of(container)?;
            let mut items = Vec::with_capacity(keys.len());
            for k in keys {
                let v = self.subscript(container, k)?;
                items.push((k, v));
            }
            (self.push_val(Val::Dict(items.clone())), items)
        } else {
            return Ok(None);
        };
        self.mutated.insert(obj.as_ptr() as usize, copy);
        self.side_effects.push(SideEffect::Replace {
            target: s,
            contents: copy,
            before,
        });
        Ok(Some(copy))
    }

    fn store_subscript(&mut self, container: Vid, key: Vid, value: Vid) -> Res<()> {
        let container = self.realize(container)?;
        let container = self.mutable_copy(container)?.unwrap_or(container);
        match self.val(container).clone_val() {
            Val::Tensor { .. } => {
                let setitem = self.ops.op("setitem")?;
                self.record(&setitem, vec![container, key, value], vec![])?;
                Ok(())
            }
            Val::List(mut items) => {
                let key_obj = self.concrete(key)?;
                if let Ok(index) = key_obj.extract::<isize>() {
                    let len = items.len() as isize;
                    let at = if index < 0 { index + len } else { index };
                    if at < 0 || at >= len {
                        return Err(Problem::Python(pyo3::exceptions::PyIndexError::new_err(
                            "list assignment index out of range",
                        )));
                    }
                    items[at as usize] = value;
                } else {
                    // A slice assignment: done on index lists.
                    let new_items = self.items_of(value)?;
                    let indices = PyList::new(self.py, 0..items.len())?;
                    let replacement = PyList::new(self.py, (0..new_items.len()).map(|i| items.len() + i))?;
                    indices.set_item(0, 0).ok();
                    indices.as_any().set_item(&key_obj, replacement)?;
                    let all: Vec<Vid> = items.iter().copied().chain(new_items).collect();
                    items = indices
                        .iter()
                        .map(|i| Ok(all[i.extract::<usize>()?]))
                        .collect::<PyResult<_>>()?;
                }
                self.values[container] = Val::List(items);
                Ok(())
            }
            Val::Dict(mut items) => {
                self.dict_set(&mut items, key, value)?;
                self.values[container] = Val::Dict(items);
                Ok(())
            }
            _ => unsupported("item assignment to an object"),
        }
    }

    fn delete_subscript(&mut self, container: Vid, key: Vid) -> Res<()> {
        let container = self.realize(container)?;
        let container = self.mutable_copy(container)?.unwrap_or(container);
        let key_obj = self.concrete(key)?;
        match self.val(container).clone_val() {
            Val::List(items) => {
                let indices = PyList::new(self.py, 0..items.len())?;
                indices.as_any().del_item(&key_obj)?;
                let kept = indices
                    .iter()
                    .map(|i| Ok(items[i.extract::<usize>()?]))
                    .collect::<PyResult<_>>()?;
                self.values[container] = Val::List(kept);
                Ok(())
            }
            Val::Dict(mut items) => {
                let Some(index) = self.find_dict_key(&items, &key_obj)? else {
                    return Err(Problem::Python(pyo3::exceptions::PyKeyError::new_err(
                        key_obj.unbind(),
                    )));
                };
                let (k, v) = items.remove(index);
                self.check_droppable(k)?;
                self.check_droppable(v)?;
                self.values[container] = Val::Dict(items);
                self.note_keys_removed(container);
                Ok(())
            }
            _ => unsupported("item deletion on an object"),
        }
    }

    /// `items` sorted as `sorted(items, key=key, reverse=reverse)` would (stable), by
    /// their known keys.
    fn sort_items(&mut self, items: Vec<Vid>, key: Option<Vid>, reverse: bool) -> Res<Vec<Vid>> {
        let order = self.order_by_keys(&items, key, "sorted", reverse, None)?;
        let order: Vec<usize> = order.extract()?;
        Ok(order.into_iter().map(|i| items[i]).collect())
    }

    /// `builtin(range(len(items)), key=<the items' known keys>, ...)`.
    fn order_by_keys(
        &mut self,
        items: &[Vid],
        key: Option<Vid>,
        builtin: &str,
        reverse: bool,
        default: Option<Bound<'py, PyAny>>,
    ) -> Res<Bound<'py, PyAny>> {
        let none = self.none();
        let key = match key {
            Some(k) if !self.identical(k, none)? => Some(k),
            _ => None,
        };
        let mut keys = Vec::with_capacity(items.len());
        for item in items {
            let k = match key {
                Some(f) => self.call(f, vec![*item], vec![])?,
                None => *item,
            };
            if self.contains_tensor(k) {
                return graph_break(format!(
                    "tensor to python: {builtin}() comparing tensors (data-dependent)"
                ));
            }
            keys.push(self.concrete(k)?);
        }
        let keys = PyList::new(self.py, keys)?;
        let kwargs = PyDict::new(self.py);
        kwargs.set_item("key", keys.getattr("__getitem__")?)?;
        if reverse {
            kwargs.set_item("reverse", true)?;
        }
        if let Some(default) = default {
            kwargs.set_item("default", default)?;
        }
        let indices = self.builtin("range")?.call1((items.len(),))?;
        Ok(self.builtin(builtin)?.call((indices,), Some(&kwargs))?)
    }

    /// Appends to a list, or adds to a set (once per equal value), the translation made.
    fn add_items(&mut self, target: Vid, new_items: Vec<Vid>) -> Res<()> {
        match self.val(target).clone_val() {
            Val::List(mut items) => {
                items.extend(new_items);
                self.values[target] = Val::List(items);
            }
            Val::Set(mut items) => {
                self.add_keys(&mut items, new_items)?;
                self.values[target] = Val::Set(items);
            }
            _ => return unsupported("adding to a list or set from outside the translation"),
        }
        Ok(())
    }

    /// Adds to a set's `items` the `new` ones it does not hold yet.
    fn add_keys(&mut self, items: &mut Vec<Vid>, new: Vec<Vid>) -> Res<()> {
        for new in new {
            let value = self.concrete(new)?;
            if self.find_key(items, &value)?.is_none() {
                items.push(new);
            }
        }
        Ok(())
    }

    /// Whether `vid` is exactly a tuple (`name` "tuple") or a frozenset, guarding its type.
    fn is_exact(&mut self, vid: Vid, name: &str) -> bool {
        let exact = match self.val(vid) {
            Val::Tuple(_) => name == "tuple",
            Val::Obj { obj, .. } if name == "tuple" => obj.is_exact_instance_of::<PyTuple>(),
            Val::Obj { obj, .. } => obj.is_exact_instance_of::<PyFrozenSet>(),
            _ => false,
        };
        if exact {
            self.guard_type(vid);
        }
        exact
    }

    fn dict_set(&mut self, items: &mut Vec<(Vid, Vid)>, key: Vid, value: Vid) -> Res<()> {
        let key_obj = self.concrete(key)?;
        match self.find_dict_key(items, &key_obj)? {
            Some(index) => {
                self.check_droppable(items[index].1)?;
                items[index].1 = value;
            }
            None => items.push((key, value)),
        }
        Ok(())
    }

    /// Fails where `value`, leaving a container, may be the last reference to an object
    /// with `__del__`: when that runs (and what it does) is not simulated.
    fn check_droppable(&self, value: Vid) -> Res<()> {
        if let Val::Obj { obj, .. } = self.val(value) {
            if obj.get_type().hasattr("__del__")? {
                return unsupported(format!(
                    "dropping a {} (it has __del__) from a container",
                    obj.get_type().name()?
                ));
            }
        }
        Ok(())
    }

    /// Notes that keys left the dict the translation made `dict`, for the iterators over it.
    fn note_keys_removed(&mut self, dict: Vid) {
        let iterating: Vec<Vid> = (0..self.values.len())
            .filter(|vid| matches!(&self.values[*vid], Val::DictIter(it) if self.iterated_dict(it) == dict))
            .collect();
        for vid in iterating {
            if let Val::DictIter(it) = &mut self.values[vid] {
                it.keys_removed = true;
            }
        }
    }

    /// Whether a sequence's `element` matches `target` as CPython's `list.index`, `count`,
    /// `remove` and `in` decide (`PyObject_RichCompareBool`): the same object, or `==` true.
    /// A `==` between tensors gives a tensor, whose truth is data-dependent.
    fn equal_items(&mut self, element: Vid, target: Vid) -> Res<bool> {
        if self.identical(element, target)? {
            return Ok(true);
        }
        let equal = match self.compare_made_objects("eq", element, target)? {
            Some(r) => r,
            None => self.operator_call("eq", vec![element, target])?,
        };
        self.truthy(equal)
    }

    /// The ValueError of `list.index`/`remove` or `tuple.index` not finding `target`, raised
    /// by the method itself on an empty sequence, so that its message is the interpreter's.
    fn raise_not_found(&mut self, sequence: Vid, name: &str, target: Vid) -> Res<Vid> {
        let target = self.concrete(target)?;
        let empty = self.type_of(sequence)?.call0()?;
        match empty.call_method1(name, (target,)) {
            Err(error) => Err(Problem::Python(error)),
            Ok(_) => unsupported(format!("{name} found an item in an empty sequence")),
        }
    }

    /// Where `key` is among a dict's or set's `stored` keys, found as CPython's hash tables
    /// find it: `key` hashed once, then per stored key identity, equal hashes and the
    /// stored key's `==`. Keys whose hashing or comparing runs Python code are not
    /// simulated: CPython's count and order of those calls would be ours only by chance.
    fn find_key(&mut self, stored: &[Vid], key: &Bound<'py, PyAny>) -> Res<Option<usize>> {
        self.check_native_key(key)?;
        let hash = key.hash()?;
        let key_by_identity = self.compares_by_identity(key)?;
        for (index, stored) in stored.iter().enumerate() {
            let stored = self.concrete(*stored)?;
            if stored.is(key) {
                return Ok(Some(index));
            }
            // Neither `==` can be true: CPython's cached hash would spare the comparison.
            if key_by_identity && self.compares_by_identity(&stored)? {
                continue;
            }
            if self.hashes_in_python(&stored)? {
                return unsupported(format!(
                    "a dict or set holding a {} key (its __hash__ or __eq__ runs Python code)",
                    stored.get_type().name()?
                ));
            }
            if stored.hash()? == hash && stored.eq(key)? {
                return Ok(Some(index));
            }
        }
        Ok(None)
    }

    /// Fails for a dict or set key whose hashing or comparing runs Python code.
    fn check_native_key(&self, key: &Bound<'py, PyAny>) -> Res<()> {
        if self.hashes_in_python(key)? {
            return unsupported(format!(
                "a {} key (its __hash__ or __eq__ runs Python code)",
                key.get_type().name()?
            ));
        }
        Ok(())
    }

    fn find_dict_key(&mut self, items: &[(Vid, Vid)], key: &Bound<'py, PyAny>) -> Res<Option<usize>> {
        let keys: Vec<Vid> = items.iter().map(|(k, _)| *k).collect();
        self.find_key(&keys, key)
    }

    /// Whether hashing or comparing `obj` runs a class's own `__hash__` or `__eq__`
    /// (the items' too, for tuples and frozensets).
    fn hashes_in_python(&self, obj: &Bound<'py, PyAny>) -> PyResult<bool> {
        // The backend's constant values (a dtype, a place) hash and compare as values.
        if is_value_type(obj) || self.backend.is_constant_value(obj) {
            return Ok(false);
        }
        if obj.is_exact_instance_of::<PyTuple>() || obj.is_exact_instance_of::<PyFrozenSet>() {
            for item in obj.try_iter()? {
                if self.hashes_in_python(&item?)? {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
        let slot_wrapper = builtin(self.py, "object")?.getattr("__eq__")?.get_type();
        let ty = obj.get_type().into_any();
        for method in ["__hash__", "__eq__"] {
            if let Some(found) = self.type_lookup(&ty, method)? {
                if !found.is_none() && !found.get_type().is(&slot_wrapper) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Whether `obj`'s `==` is `object`'s: true for itself only.
    fn compares_by_identity(&self, obj: &Bound<'py, PyAny>) -> PyResult<bool> {
        if is_value_type(obj) {
            return Ok(false);
        }
        let default = builtin(self.py, "object")?.getattr("__eq__")?;
        Ok(self
            .type_lookup(&obj.get_type().into_any(), "__eq__")?
            .is_some_and(|eq| eq.is(&default)))
    }

    fn dict_items(&mut self, vid: Vid) -> Res<Vec<(Vid, Vid)>> {
        let vid = self.realize(vid)?;
        if let Val::Dict(items) = self.val(vid) {
            return Ok(items.clone());
        }
        let keys = self.items_of(vid)?;
        keys.into_iter()
            .map(|k| Ok((k, self.subscript(vid, k)?)))
            .collect()
    }

    fn format(&mut self, v: Vid, conversion: usize, spec: Option<Vid>) -> Res<Vid> {
        let converted = if conversion == 0 {
            v
        } else {
            self.convert(v, conversion)?
        };
        let spec = match spec {
            Some(s) => s,
            None => self.constant(PyString::new(self.py, "").into_any()),
        };
        self.text_of("format", converted, &[spec])
    }

    fn convert(&mut self, v: Vid, conversion: usize) -> Res<Vid> {
        let name = match conversion {
            1 => "str",
            2 => "repr",
            3 => "ascii",
            _ => return unsupported("a conversion"),
        };
        self.text_of(name, v, &[])
    }

    /// An f-string's `str()`, `repr()`, `ascii()` or `format()` of `v`.
    fn text_of(&mut self, builtin: &str, v: Vid, rest: &[Vid]) -> Res<Vid> {
        if let Some(text) = self.inline_builtin_method(builtin, v, rest)? {
            return Ok(text);
        }
        let Some(value) = self.folded_argument(v, builtin)? else {
            return self.refuse_folding(&format!("builtin {builtin}()"), v);
        };
        let mut args = vec![value];
        for arg in rest {
            args.push(self.concrete(*arg)?);
        }
        let text = super::pyutil::builtin(self.py, builtin)?.call1(PyTuple::new(self.py, args)?)?;
        Ok(self.constant(text))
    }

    /// The next item of an iterator, or None when it is exhausted. A generator runs up to
    /// its next `yield`, so that its side effects interleave with its consumer's.
    fn advance(&mut self, it: Vid) -> Res<Option<Vid>> {
        match self.val(it).clone_val() {
            Val::DictIter(mut state) => {
                let item = self.dict_iter_next(&mut state);
                self.values[it] = Val::DictIter(state);
                item
            }
            Val::Iter { items, next } => {
                if next >= items.len() {
                    return Ok(None);
                }
                let item = items[next];
                self.values[it] = Val::Iter {
                    items,
                    next: next + 1,
                };
                Ok(Some(item))
            }
            Val::Lazy(lazy) => self.advance_lazy(it, lazy),
            Val::ListIter { next: None, .. } => Ok(None),
            Val::ListIter {
                list,
                next: Some(next),
                frame,
            } => {
                let item = self.list_item(list, next)?;
                self.values[it] = Val::ListIter {
                    list,
                    next: item.map(|_| next + 1),
                    frame,
                };
                Ok(item)
            }
            Val::Obj {
                ref obj,
                source: Some(_),
            } if obj.get_type().is(&self.ops.list_iterator_type) => {
                self.frame_list_iterator(it)?;
                self.advance(it)
            }
            Val::Generator(state) => {
                let mut state = state.try_borrow_mut().map_err(|_| {
                    Problem::Python(pyo3::exceptions::PyValueError::new_err(
                        "generator already executing",
                    ))
                })?;
                if state.finished {
                    return Ok(None);
                }
                if self.depth >= MAX_INLINE_DEPTH {
                    return graph_break("unsupported call: inlining too deep (generators)");
                }
                self.depth += 1;
                let saved_location = self.location.clone();
                let outcome = loop {
                    match self.step_handling(&mut state.frame) {
                        Ok(None) => {
                            if let Some(item) = state.frame.yielded.take() {
                                state.suspended = true;
                                break Ok(Some(item));
                            }
                        }
                        Ok(Some(returned)) => {
                            state.returned = Some(returned);
                            break Ok(None);
                        }
                        Err(problem) => break Err(problem),
                    }
                };
                self.depth -= 1;
                if !matches!(outcome, Ok(Some(_))) {
                    state.finished = true;
                }
                if outcome.is_ok() {
                    self.location = saved_location;
                }
                outcome
            }
            Val::Obj { ref obj, .. } => unsupported(format!("iteration over {}", obj.get_type().name()?)),
            _ => unsupported("advancing a value that is no iterator"),
        }
    }

    /// A list iterator from the frame (at `vid`) as the translation's own over its list:
    /// its list and position read through `__reduce__` (and guarded), its position set
    /// again by the generated code. Every alias sees it advance, as they share the object.
    fn frame_list_iterator(&mut self, vid: Vid) -> Res<()> {
        let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(vid).clone_val()
        else {
            return unsupported("a list iterator without a source");
        };
        self.guard_type(vid);
        let reduce = self.intern(Source::Attr(source, name_ref(self.py, "__reduce__")));
        let state = self.intern(Source::Called(reduce));
        let reduced = obj.call_method0("__reduce__")?;
        // `(iter, (list,), position)`; an exhausted one has let go of its list: `(iter, ([],))`.
        if reduced.len()? != 3 {
            return unsupported("an exhausted list iterator from the frame");
        }
        let key = |vm: &Self, index: usize| -> PyResult<StrongRef> {
            Ok(StrongRef::new(&index.into_pyobject(vm.py)?.into_any()))
        };
        let position_source = self.intern(Source::Item(state, key(self, 2)?));
        let position = reduced.get_item(2)?;
        self.guard_value(position_source, &position)?;
        let arguments = self.intern(Source::Item(state, key(self, 1)?));
        let list_source = Source::Item(arguments, key(self, 0)?);
        let list = self.value_of_source(list_source, reduced.get_item(1)?.get_item(0)?);
        self.values[vid] = Val::ListIter {
            list,
            next: Some(position.extract()?),
            frame: Some(source),
        };
        self.side_effects
            .push(SideEffect::IteratorPosition { iterator: vid });
        Ok(())
    }

    /// The item at `index` of a list as it is now (None past its end): a list the
    /// translation made, or one from the frame (guarded on its length, then the item).
    fn list_item(&mut self, list: Vid, index: usize) -> Res<Option<Vid>> {
        match self.val(list).clone_val() {
            Val::List(items) => Ok(items.get(index).copied()),
            Val::Obj {
                obj,
                source: Some(source),
            } => {
                if let Some(copy) = self.mutated.get(&(obj.as_ptr() as usize)).copied() {
                    return self.list_item(copy, index);
                }
                self.guard_type(list);
                self.add_guard(source, Check::Len(obj.len()?));
                if index >= obj.len()? {
                    return Ok(None);
                }
                let key = index.into_pyobject(self.py)?.into_any();
                let item = obj.get_item(index)?;
                Ok(Some(self.value_of_source(
                    Source::Item(source, StrongRef::new(&key)),
                    item,
                )))
            }
            _ => unsupported("indexing a value that is no list"),
        }
    }

    /// `except* kinds` on `exception`: `(rest, matched)` as CPython's CHECK_EG_MATCH splits
    /// them (a naked exception that matches is wrapped in a group; None where nothing is).
    fn exception_group_match(&mut self, exception: Vid, kinds: Vid) -> Res<(Vid, Vid)> {
        let (exc, kinds) = (self.concrete(exception)?, self.concrete(kinds)?);
        let group_type = builtin(self.py, "BaseExceptionGroup")?;
        let issubclass = builtin(self.py, "issubclass")?;
        let kind_list: Vec<Bound<'py, PyAny>> = match kinds.cast::<PyTuple>() {
            Ok(tuple) => tuple.iter().collect(),
            Err(_) => vec![kinds.clone()],
        };
        for kind in &kind_list {
            let is_exception_class = kind.is_instance_of::<PyType>()
                && issubclass
                    .call1((kind, self.py.get_type::<pyo3::exceptions::PyBaseException>()))?
                    .is_truthy()?;
            if !is_exception_class {
                return Err(Problem::Python(PyTypeError::new_err(
                    "catching classes that do not inherit from BaseException is not allowed",
                )));
            }
            if issubclass.call1((kind, &group_type))?.is_truthy()? {
                return Err(Problem::Python(PyTypeError::new_err(
                    "catching ExceptionGroup with except* is not allowed. Use except instead.",
                )));
            }
        }
        let none = self.ops.none.clone();
        let (rest, matched) = if exc.is_none() {
            (none.clone(), none)
        } else if exc.is_instance(&kinds)? {
            let matched = if exc.is_instance(&group_type)? {
                exc
            } else {
                group_type.call1(("", (exc,)))?
            };
            (none, matched)
        } else if exc.is_instance(&group_type)? {
            let pair = exc.call_method1("split", (kinds,))?;
            (pair.get_item(1)?, pair.get_item(0)?)
        } else {
            (exc, none)
        };
        let rest = if rest.is(&self.ops.none) {
            self.none()
        } else {
            self.constant(rest)
        };
        let matched = if matched.is(&self.ops.none) {
            self.none()
        } else {
            self.constant(matched)
        };
        Ok((rest, matched))
    }

    /// What leaves a try with `except*` clauses (CPython's PREP_RERAISE_STAR): None when all
    /// was handled, else the exception to raise on. Only the rest the clauses left is
    /// simulated; an exception raised inside a clause is merged by the original code.
    /// (The original exception, its first operand, is not needed: see below.)
    fn prep_reraise_star(&mut self, raised: Vid) -> Res<Vid> {
        let mut left = Vec::new();
        for item in self.items_of(raised)? {
            if self.concrete(item)?.is_none() {
                continue;
            }
            if !self.unhandled_groups.contains(&item) {
                return unsupported("an exception raised inside an except* clause");
            }
            left.push(item);
        }
        // The rest of a group is the part of it no clause matched (as the projection of
        // the original onto the rest's leaves is); a naked exception is its own rest.
        Ok(match left.as_slice() {
            [] => self.none(),
            [rest] => *rest,
            _ => return unsupported("more than one exception left by except* clauses"),
        })
    }

    /// One step of `yield from receiver`: the None the delegating generator was resumed
    /// with (`sent`) goes in; what it yields or returns comes out.
    fn send(&mut self, receiver: Vid, sent: Vid) -> Res<Sent> {
        if !self.concrete(sent)?.is_none() {
            return unsupported("a value sent into a delegated generator (only next() is simulated)");
        }
        if let Some(item) = self.advance(receiver)? {
            return Ok(Sent::Yielded(item));
        }
        let returned = match self.val(receiver) {
            Val::Generator(state) => state.borrow().returned,
            _ => None,
        };
        Ok(Sent::Returned(returned.unwrap_or_else(|| self.none())))
    }

    /// A t-string's template (3.14), made from known values: immutable, iterated as is.
    fn is_template(&self, obj: &Bound<'py, PyAny>) -> bool {
        let ty = obj.get_type();
        ty.getattr("__module__")
            .is_ok_and(|m| m.eq("string.templatelib").unwrap_or(false))
            && ty.name().is_ok_and(|n| n == "Template")
    }

    fn interpolation(
        &mut self,
        value: Vid,
        expression: Vid,
        conversion: usize,
        spec: Option<Vid>,
    ) -> Res<Vid> {
        let conversion = match conversion {
            1 => Some("s"),
            2 => Some("r"),
            3 => Some("a"),
            _ => None,
        };
        let conversion = self.constant(conversion.into_pyobject(self.py)?.into_any());
        let spec = match spec {
            Some(s) => s,
            None => self.constant(PyString::new(self.py, "").into_any()),
        };
        let parts = [value, expression, conversion, spec];
        if self.contains_tensor(value) {
            // Kept symbolic: its value is the graph's (a tensor is never made a Python value).
            return Ok(self.push_val(Val::Interpolation(parts)));
        }
        let parts = parts.iter().map(|p| self.concrete(*p)).collect::<Res<Vec<_>>>()?;
        let made = self
            .templatelib("Interpolation")?
            .call1(PyTuple::new(self.py, parts)?)?;
        Ok(self.constant(made))
    }

    fn templatelib(&self, name: &str) -> PyResult<Bound<'py, PyAny>> {
        import(self.py, "string.templatelib")?.getattr(name)
    }

    fn template(&mut self, strings: Vid, interpolations: Vid) -> Res<Vid> {
        let strings = self.items_of(strings)?;
        let interpolations = self.items_of(interpolations)?;
        let mut parts = Vec::new();
        for (i, s) in strings.iter().enumerate() {
            parts.push(*s);
            if let Some(interp) = interpolations.get(i) {
                parts.push(*interp);
            }
        }
        let symbolic = interpolations
            .iter()
            .any(|i| matches!(self.val(*i), Val::Interpolation(_)));
        if symbolic && strings.len() == interpolations.len() + 1 {
            return Ok(self.push_val(Val::Template(parts)));
        }
        let parts = parts.iter().map(|p| self.concrete(*p)).collect::<Res<Vec<_>>>()?;
        let made = self
            .templatelib("Template")?
            .call1(PyTuple::new(self.py, parts)?)?;
        Ok(self.constant(made))
    }

    /// The next item of a lazy builtin iterator `it`, pulling its iterators as CPython's
    /// `zip`, `enumerate`, `map` and `filter` do.
    fn advance_lazy(&mut self, it: Vid, lazy: Lazy) -> Res<Option<Vid>> {
        match lazy {
            Lazy::Zip(iterators) => {
                let mut items = Vec::with_capacity(iterators.len());
                for iterator in &iterators {
                    match self.advance(*iterator)? {
                        Some(item) => items.push(item),
                        None => return Ok(None),
                    }
                }
                Ok((!iterators.is_empty()).then(|| self.tuple_of(items)))
            }
            Lazy::Range { next, stop, step } => {
                if (step > 0 && next >= stop) || (step < 0 && next <= stop) {
                    return Ok(None);
                }
                // Past i64 the iterator is exhausted (its stop fits in i64).
                let after = next.checked_add(step).unwrap_or(stop);
                self.values[it] = Val::Lazy(Lazy::Range {
                    next: after,
                    stop,
                    step,
                });
                Ok(Some(self.constant(next.into_pyobject(self.py)?.into_any())))
            }
            Lazy::Enumerate { iterator, count } => {
                let Some(item) = self.advance(iterator)? else {
                    return Ok(None);
                };
                self.values[it] = Val::Lazy(Lazy::Enumerate {
                    iterator,
                    count: count + 1,
                });
                let index = self.constant(count.into_pyobject(self.py)?.into_any());
                Ok(Some(self.tuple_of(vec![index, item])))
            }
            Lazy::Map { function, iterators } => {
                let mut items = Vec::with_capacity(iterators.len());
                for iterator in &iterators {
                    match self.advance(*iterator)? {
                        Some(item) => items.push(item),
                        None => return Ok(None),
                    }
                }
                self.call(function, items, vec![]).map(Some)
            }
            Lazy::Filter { function, iterator } => {
                while let Some(item) = self.advance(iterator)? {
                    let verdict = match function {
                        Some(function) => self.call(function, vec![item], vec![])?,
                        None => item,
                    };
                    if self.truthy(verdict)? {
                        return Ok(Some(item));
                    }
                }
                Ok(None)
            }
        }
    }

    fn iterator(&mut self, v: Vid) -> Res<Vid> {
        let v = self.realize(v)?;
        match self.val(v) {
            Val::Iter { .. } | Val::ListIter { .. } | Val::Generator(_) | Val::DictIter(_) | Val::Lazy(_) => {
                return Ok(v)
            }
            Val::List(_) => {
                return Ok(self.push_val(Val::ListIter {
                    list: v,
                    next: Some(0),
                    frame: None,
                }))
            }
            Val::Obj { obj, source: Some(_) } if obj.is_exact_instance_of::<PyList>() => {
                // Read live as it is iterated, but a list's iterator only while it is one (a
                // later call may hand an object whose `__iter__` is its own).
                self.guard_type(v);
                return Ok(self.push_val(Val::ListIter {
                    list: v,
                    next: Some(0),
                    frame: None,
                }));
            }
            Val::Obj { obj, source: Some(_) } if obj.get_type().is(&self.ops.list_iterator_type) => {
                // `iter()` of an iterator is itself.
                self.frame_list_iterator(v)?;
                return Ok(v);
            }
            Val::Dict(_) => return self.dict_iterator(v, DictPart::Keys),
            Val::Obj { obj, source: Some(_) }
                if obj.is_exact_instance_of::<PyDict>() || self.is_ordered_dict(obj) =>
            {
                return self.dict_iterator(v, DictPart::Keys)
            }
            Val::DictView { dict, part } => return self.dict_iterator(*dict, *part),
            Val::Obj { obj, .. } if obj.get_type().is(&self.ops.range_type) => {
                // Its bounds, as the value the guards pin (one from the frame is guarded).
                let range = self.concrete(v)?;
                let bound = |name: &str| range.getattr(name).and_then(|n| n.extract::<i64>()).ok();
                if let (Some(next), Some(stop), Some(step)) = (bound("start"), bound("stop"), bound("step")) {
                    return Ok(self.push_val(Val::Lazy(Lazy::Range { next, stop, step })));
                }
            }
            _ => {}
        }
        if let Some(iter) = self.python_iter(v)? {
            // `iter(x)` of an object whose class defines `__iter__` in Python: its result.
            self.guard_type(v);
            let function = self.constant(iter);
            let made = self.call(function, vec![v], vec![])?;
            return self.iterator(made);
        }
        if let Val::Obj { obj, source: Some(_) } = self.val(v) {
            // An iterator of a C type from the frame (a generator, a range's iterator...):
            // `iter()` of it is itself, which only the original code advances (a loop over
            // it runs there). Its type, guarded, keeps its `iter()`.
            let iterates_itself = obj.get_type().hasattr("__next__").unwrap_or(false)
                && obj.try_iter().is_ok_and(|it| it.is(obj));
            if iterates_itself {
                self.guard_type(v);
                return Ok(v);
            }
        }
        let items = self.items_of(v)?;
        Ok(self.push_val(Val::Iter { items, next: 0 }))
    }

    /// The `__iter__` of the class of a frame object or of one the translation made, where
    /// it is a Python function.
    fn python_iter(&self, v: Vid) -> Res<Option<Bound<'py, PyAny>>> {
        let class = match self.val(v) {
            Val::Obj { obj, source: Some(_) } => obj.get_type().into_any(),
            Val::Object { class, .. } => class.clone(),
            _ => return Ok(None),
        };
        let iter = self.type_lookup(&class, "__iter__")?;
        Ok(iter.filter(|i| i.is_instance(&self.ops.function_type).unwrap_or(false)))
    }

    /// An `OrderedDict` (exactly): read as a dict is, in its own order; never written into.
    fn is_ordered_dict(&self, obj: &Bound<'py, PyAny>) -> bool {
        obj.get_type().is(&self.ops.ordered_dict_type)
    }

    /// An iterator over a dict the translation made, or one from the frame (over its
    /// copy, or its mutable copy once there is one).
    fn dict_iterator(&mut self, dict: Vid, part: DictPart) -> Res<Vid> {
        let (copy, frame_dict) = match self.readonly_copy(dict)? {
            Some(copy) => (copy, Some(dict)),
            None => (dict, None),
        };
        let Val::Dict(items) = self.val(copy) else {
            return unsupported("iteration over a dict from outside");
        };
        let size = items.len();
        Ok(self.push_val(Val::DictIter(DictIter {
            dict: copy,
            frame_dict,
            part,
            size,
            next: 0,
            keys_removed: false,
            status: DictIterStatus::Running,
        })))
    }

    /// The made dict an iterator reads: its frame dict's mutable copy once there is one.
    fn iterated_dict(&self, it: &DictIter) -> Vid {
        let mutated = it.frame_dict.and_then(|frame_dict| match self.val(frame_dict) {
            Val::Obj { obj, .. } => self.mutated.get(&(obj.as_ptr() as usize)).copied(),
            _ => None,
        });
        mutated.unwrap_or(it.dict)
    }

    /// CPython's `dictiter_iternext*`: the entry at the iterator's position, read now.
    fn dict_iter_next(&mut self, it: &mut DictIter) -> Res<Option<Vid>> {
        let size_changed = || {
            Err(Problem::Python(pyo3::exceptions::PyRuntimeError::new_err(
                "dictionary changed size during iteration",
            )))
        };
        match it.status {
            DictIterStatus::Exhausted => return Ok(None),
            DictIterStatus::SizeChanged => return size_changed(),
            DictIterStatus::Running => {}
        }
        let Val::Dict(items) = self.val(self.iterated_dict(it)) else {
            return unsupported("iteration over a dict from outside");
        };
        if items.len() != it.size {
            it.status = DictIterStatus::SizeChanged;
            return size_changed();
        }
        if it.keys_removed {
            return unsupported("iteration over a dict whose keys changed (at the same size) meanwhile");
        }
        let Some(&(key, value)) = items.get(it.next) else {
            it.status = DictIterStatus::Exhausted;
            return Ok(None);
        };
        it.next += 1;
        Ok(Some(match it.part {
            DictPart::Keys => key,
            DictPart::Values => value,
            DictPart::Items => self.tuple_of(vec![key, value]),
        }))
    }
}

// ---- Calls ----
impl<'py, 'b> Vm<'py, 'b> {
    fn do_call(&mut self, frame: &mut Frame<'py>, op: Op, argc: usize, kw_names: bool) -> Res<()> {
        let names: Vec<String> = if kw_names {
            let names = Self::pop(frame)?;
            let names = self.concrete(names)?;
            names.extract()?
        } else {
            Vec::new()
        };
        let mut args = Self::pop_n(frame, argc)?;
        let slots = Self::pop_n(frame, self.callable_slots(op))?;
        let (callable, mut positional) = self.pop_callable(slots)?;
        if argc == 0 && positional.is_empty() {
            if let Val::Obj { obj, .. } = self.val(callable) {
                if obj.is(&self.builtin("super")?) {
                    // CPython's checks, in its order (`super_init_without_args`).
                    let fail = |message: String| Err(Problem::Python(PyRuntimeError::new_err(message)));
                    if frame.argcount == 0 {
                        return fail("super(): no arguments".to_owned());
                    }
                    let receiver = match self.val(frame.locals[0]) {
                        Val::Cell(c) => self.cells[*c],
                        Val::Null => None,
                        _ => Some(frame.locals[0]),
                    };
                    let Some(receiver) = receiver else {
                        return fail("super(): arg[0] deleted".to_owned());
                    };
                    let Some(cell) = frame.class_cell else {
                        return fail("super(): __class__ cell not found".to_owned());
                    };
                    let Some(class) = self.cells[cell] else {
                        return fail("super(): empty __class__ cell".to_owned());
                    };
                    let class = self.concrete(class)?;
                    if !class.is_instance_of::<PyType>() {
                        return fail(format!(
                            "super(): __class__ is not a type ({})",
                            class.get_type().name()?
                        ));
                    }
                    let made = self.make_super(class, receiver)?;
                    frame.stack.push(made);
                    return Ok(());
                }
            }
        }
        if names.len() > args.len() {
            return unsupported("more keyword names than arguments");
        }
        let keyword_values = args.split_off(args.len() - names.len());
        let kwargs: Vec<(String, Vid)> = names.into_iter().zip(keyword_values).collect();
        positional.extend(args);
        let result = self.call(callable, positional, kwargs)?;
        frame.stack.push(result);
        Ok(())
    }

    fn call_function_ex(&mut self, frame: &mut Frame<'py>, arg: Arg) -> Res<()> {
        let flags = match arg {
            Arg::Int(n) => n as i64,
            _ => 0,
        };
        let effect = |oparg: u32| self.stack_effect("CALL_FUNCTION_EX", oparg, false);
        let popped = (1 - effect(flags as u32)?) as usize;
        let kwargs_slot = effect(0)? == effect(1)? || flags & 1 != 0;
        let mut slots = Self::pop_n(frame, popped)?;
        let kwargs = if kwargs_slot { slots.pop() } else { None };
        let args = slots.pop().map_or_else(|| unsupported("stack underflow"), Ok)?;
        let (callable, mut positional) = self.pop_callable(slots)?;
        positional.extend(self.items_of(args)?);
        let mut keywords = Vec::new();
        if let Some(kwargs) = kwargs.filter(|k| !matches!(self.val(*k), Val::Null)) {
            for (k, v) in self.dict_items(kwargs)? {
                keywords.push((self.concrete(k)?.extract::<String>()?, v));
            }
        }
        let result = self.call(callable, positional, keywords)?;
        frame.stack.push(result);
        Ok(())
    }

    fn make_function(&mut self, frame: &mut Frame<'py>, arg: Arg) -> Res<()> {
        let flags = match arg {
            Arg::Int(n) => n as usize,
            _ => 0,
        };
        // The code (and before 3.11 the qualified name) on top, then the flagged extras.
        let base = (1 - self.stack_effect("MAKE_FUNCTION", 0, false)?) as usize;
        let mut top = Self::pop_n(frame, base)?;
        let code_vid = top.remove(0);
        let code = self.concrete(code_vid)?;
        let name: String = code.getattr("co_name")?.extract()?;
        // Before 3.11 the qualified name comes on the stack, after it in the code object.
        let qualname = match top.first() {
            Some(qualname) => self.concrete(*qualname)?,
            None => code.getattr("co_qualname")?,
        };
        let function = Function {
            code,
            globals: frame.globals.clone(),
            name,
            qualname: qualname.extract()?,
            defaults: Vec::new(),
            kwdefaults: Vec::new(),
            closure: Vec::new(),
            annotations: None,
            annotate: None,
            object: None,
        };
        let vid = self.push_val(Val::Function(Box::new(function)));
        for flag in [16, 8, 4, 2, 1] {
            if flags & flag != 0 {
                let attribute = Self::pop(frame)?;
                self.set_function_attribute(vid, flag, attribute)?;
            }
        }
        frame.stack.push(vid);
        Ok(())
    }

    fn set_function_attribute(&mut self, function: Vid, flag: usize, attribute: Vid) -> Res<()> {
        let items = match flag {
            1 | 8 => self.items_of(attribute)?,
            _ => Vec::new(),
        };
        let kwdefaults = if flag == 2 {
            self.dict_items(attribute)?
        } else {
            Vec::new()
        };
        let mut names = Vec::new();
        for (k, v) in kwdefaults {
            names.push((self.concrete(k)?.extract::<String>()?, v));
        }
        let cells: Vec<usize> = items
            .iter()
            .filter_map(|i| {
                if let Val::Cell(c) = self.val(*i) {
                    Some(*c)
                } else {
                    None
                }
            })
            .collect();
        // Annotations come as a dict (3.9) or as a tuple of name, value pairs, which the
        // function's `__annotations__` turns into the dict this is.
        let annotations = if flag != 4 {
            None
        } else if matches!(self.val(attribute), Val::Dict(_))
            || matches!(self.val(attribute), Val::Obj { obj, .. } if obj.is_exact_instance_of::<PyDict>())
        {
            Some(attribute)
        } else {
            let items = self.items_of(attribute)?;
            let pairs = items.chunks_exact(2).map(|pair| (pair[0], pair[1])).collect();
            Some(self.push_val(Val::Dict(pairs)))
        };
        let Val::Function(f) = &mut self.values[function] else {
            return unsupported("SET_FUNCTION_ATTRIBUTE on a value that is no function");
        };
        match flag {
            1 => f.defaults = items,
            2 => f.kwdefaults = names,
            4 => f.annotations = annotations,
            8 => f.closure = cells,
            16 => f.annotate = Some(attribute),
            _ => return unsupported(format!("function attribute flag {flag}")),
        }
        Ok(())
    }

    /// Calls a value: an operation, an inlined function, a supported builtin, or a break.
    fn call(&mut self, callable: Vid, args: Vec<Vid>, kwargs: Vec<(String, Vid)>) -> Res<Vid> {
        let callable = self.realize(callable)?;
        match self.val(callable).clone_val() {
            Val::Function(f) => self.inline(&f, args, kwargs, None),
            Val::Method { function, receiver } => {
                let object_init = builtin(self.py, "object")?.getattr("__init__")?;
                if matches!(self.val(function), Val::Obj { obj, .. } if obj.is(&object_init)) {
                    let class = self.type_of(receiver)?;
                    return self.object_init(&class, !args.is_empty() || !kwargs.is_empty());
                }
                let mut all = vec![receiver];
                all.extend(args);
                self.call(function, all, kwargs)
            }
            Val::TensorMethod { tensor, name } => {
                let Val::Tensor { example, .. } = self.val(tensor) else {
                    return unsupported("a tensor method without its tensor");
                };
                if self.backend.is_conversion(&name) {
                    return graph_break(format!("tensor to python: {name}() of a tensor (data-dependent)"));
                }
                if self.backend.is_meta_method(&name) && args.is_empty() && kwargs.is_empty() {
                    // `x.dim()`: what the guarded meta attributes say, computed now.
                    let value = example.call_method0(name.as_str())?;
                    return Ok(self.constant(value));
                }
                if self.backend.is_array(example) {
                    self.array_operands(&format!("an array's {name}"), &args, &kwargs)?;
                }
                let unbound = example.get_type().getattr(name.as_str())?;
                let mut all = vec![tensor];
                all.extend(args);
                self.record(&unbound, all, kwargs)
            }
            Val::ContainerMethod { container, name } => self.container_method(container, &name, args, kwargs),
            Val::Object { class, .. } => match self.type_lookup(&class, "__call__")? {
                Some(call) if call.is_instance(&self.ops.function_type)? => {
                    let function = self.constant(call);
                    let mut all = vec![callable];
                    all.extend(args);
                    self.call(function, all, kwargs)
                }
                _ => graph_break(format!("unsupported call: a {} object", qualname(&class))),
            },
            Val::Obj { obj, source } => self.call_object(callable, obj, source, args, kwargs),
            Val::Constructed { obj, .. } => self.call_object(callable, obj, None, args, kwargs),
            _ => unsupported("calling an internal value"),
        }
    }

    fn call_object(
        &mut self,
        callable: Vid,
        obj: Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<Vid> {
        if self.reads_callers_frame(&obj, &args, &kwargs)? {
            let what = format!("{}() reads the frame that calls it", qualname(&obj));
            // In the translated frame, run as it is; in an inlined callee, a break runs
            // the callee as its own frame.
            return Err(if self.depth == 0 {
                Problem::Eager(what)
            } else {
                Problem::Break(what)
            });
        }
        let pin = |vm: &mut Self| {
            if let Some(s) = source {
                vm.add_guard(s, Check::Id(Pin::new(&obj)));
            }
        };
        if self.backend.is_array_function(&obj)
            && self.array_operands(&qualname(&obj), &args, &kwargs)?.arrays
        {
            pin(self);
            return self.record(&obj, args, kwargs);
        }
        if self.backend.is_op(&obj)? {
            match source {
                Some(s) if is_class_bound_builtin(&obj)? => self.pin_class_bound_builtin(s, &obj)?,
                _ => pin(self),
            }
            self.guard_layer(&obj, source)?;
            return self.record(&obj, args, kwargs);
        }
        if let (Some(s), true) = (source, args.is_empty() && kwargs.is_empty()) {
            if self.backend.is_guarded_function(&obj) {
                // Read now; the guards call it again where its result was used.
                pin(self);
                let value = with_session(None, || obj.call0())?;
                return Ok(self.value_of_source(Source::Called(s), value));
            }
        }
        if self.backend.is_fixed_function(&obj) {
            pin(self);
            if let Some(result) = self.computed_now(&obj, &args, &kwargs, false)? {
                return Ok(result);
            }
            return graph_break(format!(
                "unsupported call: {} with arguments that may differ on a later call",
                qualname(&obj)
            ));
        }
        if obj.is_exact_instance_of::<PyCFunction>() {
            if let Some(result) = self.operator_function(&obj, source, &args, &kwargs)? {
                return Ok(result);
            }
            if let Some(result) = self.reduce(&obj, source, &args, &kwargs)? {
                return Ok(result);
            }
        }
        if obj.is_instance(&self.ops.lru_cache_type)? {
            pin(self);
            return self.call_cached(&obj, source, args, kwargs);
        }
        if obj.is_instance(&self.ops.function_type)? {
            // A function is pinned by its code, not its identity: closures made anew on
            // each call (and handed to resume functions) keep their translation; what
            // else the call reads of it (defaults, closure, globals) has its own source.
            match source {
                Some(s) if obj.is_exact_instance_of::<pyo3::types::PyFunction>() => {
                    self.add_guard(s, Check::Type(StrongRef::new(&self.ops.function_type)));
                    let code_source = self.intern(Source::Attr(s, name_ref(self.py, "__code__")));
                    self.add_guard(code_source, Check::Id(Pin::new(&obj.getattr("__code__")?)));
                    let globals_source = self.intern(Source::Attr(s, name_ref(self.py, "__globals__")));
                    self.add_guard(globals_source, Check::Id(Pin::new(&obj.getattr("__globals__")?)));
                }
                _ => pin(self),
            }
            if self.backend.is_skipped_code(&obj.getattr("__code__")?)? {
                return graph_break(format!(
                    "unsupported call: {} (a library function)",
                    qualname(&obj)
                ));
            }
            let function = self.function_of(&obj, source)?;
            return self.inline(&function, args, kwargs, source);
        }
        if obj.is_instance(&self.ops.method_type)? {
            let function = obj.getattr("__func__")?;
            let receiver = obj.getattr("__self__")?;
            let (function, receiver) = match source {
                Some(s) => {
                    // Made anew at each attribute read (a `with`'s `__exit__` handed to a
                    // resume function): pinned by type, its function and its receiver.
                    self.add_guard(s, Check::Type(StrongRef::new(&self.ops.method_type)));
                    (
                        self.value_of_source(Source::Attr(s, name_ref(self.py, "__func__")), function),
                        self.value_of_source(Source::Attr(s, name_ref(self.py, "__self__")), receiver),
                    )
                }
                None => (self.constant(function), self.constant(receiver)),
            };
            let mut all = vec![receiver];
            all.extend(args);
            return self.call(function, all, kwargs);
        }
        if obj.is_instance_of::<PyType>() {
            if let Some(made) = self.construct(&obj, source, &args, &kwargs)? {
                return Ok(made);
            }
            if let Some(made) = self.instantiate(&obj, source, &args, &kwargs)? {
                return Ok(made);
            }
        }
        if let Some(result) = self.call_builtin(&obj, source, &args, &kwargs)? {
            return Ok(result);
        }
        if obj.is_instance_of::<PyType>() {
            return graph_break(format!("unsupported call: creating a {} object", qualname(&obj)));
        }
        if let Some(forward) = self.backend.forward_of(&obj)? {
            // A model layer: its forward translated, the layer pinned with its mode.
            pin(self);
            self.guard_layer(&obj, source)?;
            let function = self.constant(forward);
            let mut all = vec![callable];
            all.extend(args);
            return self.call(function, all, kwargs);
        }
        // An object with a Python __call__ (layers, modules of a model).
        let ty = obj.get_type().into_any();
        if let Some(call) = self.type_lookup(&ty, "__call__")? {
            if call.is_instance(&self.ops.function_type)? {
                self.guard_type(callable);
                let function = self.constant(call);
                let mut all = vec![callable];
                all.extend(args);
                return self.call(function, all, kwargs);
            }
        }
        graph_break(format!("unsupported call: {}", qualname(&obj)))
    }

    /// A call of a function `functools.lru_cache` wraps: the function inlined, as Paddle's and
    /// Dynamo's translators do, where the call changes nothing that existed before it (a call
    /// the cache answers would not make that change): else a break, the call run as it is.
    fn call_cached(
        &mut self,
        wrapper: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<Vid> {
        // The cache hashes the arguments first: one it cannot hash raises, from the real call.
        for arg in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
            if !self.hashable(*arg)? {
                return graph_break(format!(
                    "a call of {}, an lru_cache'd function, with an argument it cannot hash",
                    qualname(wrapper)
                ));
            }
        }
        let before = Snapshot::take(self);
        let inputs = self.graph.inputs.len();
        let generators = self.generator_positions();
        let wrapped = wrapper.getattr("__wrapped__")?;
        // Through the wrapper (its closure read from there), or a constant the pin fixes.
        let function = match source {
            Some(s) => self.value_of_source(Source::Attr(s, name_ref(self.py, "__wrapped__")), wrapped),
            None => self.constant(wrapped),
        };
        let result = self.call(function, args, kwargs)?;
        if self.changed_since(&before, inputs, &generators) {
            return graph_break(format!(
                "a call of {}, an lru_cache'd function, changes what it was given or what is outside it (its \
                 cache decides whether that happens)",
                qualname(wrapper)
            ));
        }
        Ok(result)
    }

    /// Whether `hash()` of the value succeeds, as a cache's key needs.
    fn hashable(&mut self, vid: Vid) -> Res<bool> {
        match self.val(vid).clone_val() {
            Val::Tuple(items) | Val::NamedTuple { items, .. } => {
                for item in items {
                    if !self.hashable(item)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Val::List(_) | Val::Dict(_) | Val::Set(_) | Val::DictView { .. } => Ok(false),
            Val::Tensor { example, .. } => Ok(example.hash().is_ok()),
            Val::Obj { obj, .. } | Val::Constructed { obj, .. } => {
                self.guard_type(vid);
                Ok(obj.hash().is_ok())
            }
            // A class that defines `__eq__` alone has no `__hash__`.
            Val::Object { class, .. } => Ok(!class.getattr("__hash__")?.is_none()),
            _ => Ok(true),
        }
    }

    /// The value among `roots` (and the containers they are) whose object is `obj` itself.
    fn argument_that_is(&self, roots: &[Vid], obj: &Bound<'py, PyAny>) -> Option<Vid> {
        let mut pending = roots.to_vec();
        let mut seen = Vec::new();
        while let Some(vid) = pending.pop() {
            if seen.contains(&vid) {
                continue;
            }
            seen.push(vid);
            match self.val(vid) {
                Val::Tuple(items) | Val::List(items) | Val::NamedTuple { items, .. } => pending.extend(items),
                Val::Dict(items) => pending.extend(items.iter().map(|(_, v)| *v)),
                Val::Obj { obj: held, .. } | Val::Constructed { obj: held, .. } if held.is(obj) => {
                    return Some(vid)
                }
                _ => {}
            }
        }
        None
    }

    /// Where each generator the translation holds is suspended: `Val::Generator` shares its
    /// state (a `Snapshot` holds the same one).
    fn generator_positions(&self) -> Vec<(Vid, usize, bool)> {
        self.values
            .iter()
            .enumerate()
            .filter_map(|(vid, value)| match value {
                Val::Generator(state) => state
                    .try_borrow()
                    .ok()
                    .map(|state| (vid, state.frame.pc, state.finished)),
                _ => None,
            })
            .collect()
    }

    /// Whether the translation changed, since `before`, a value that existed then: a
    /// container's items, an object's attributes, an iterator's position, a tensor's symbol
    /// (an in-place operation), a cell, or anything outside (a side effect, a frame
    /// container's first change). `inputs`: the graph's inputs then (the symbols of later
    /// operations move up as inputs are added); a value of the frame realized as an input or
    /// a number specialized is the same value.
    fn changed_since(
        &self,
        before: &Snapshot<'py>,
        inputs: usize,
        generators: &[(Vid, usize, bool)],
    ) -> bool {
        let added = self.graph.inputs.len() - inputs;
        let moved = |sym: Sym| if sym >= inputs { sym + added } else { sym };
        let same = |old: &Val<'py>, new: &Val<'py>| match (old, new) {
            (Val::Obj { obj: a, source: s }, Val::Obj { obj: b, source: t }) => a.is(b) && s == t,
            (Val::Obj { source: Some(_), .. }, Val::Tensor { .. } | Val::Scalar { .. }) => true,
            (Val::Scalar { .. }, Val::Obj { .. }) => true,
            (Val::Tensor { sym: a, .. }, Val::Tensor { sym: b, .. })
            | (Val::Scalar { sym: a, .. }, Val::Scalar { sym: b, .. }) => moved(*a) == *b,
            (Val::Tuple(a), Val::Tuple(b)) | (Val::List(a), Val::List(b)) | (Val::Set(a), Val::Set(b)) => {
                a == b
            }
            (Val::Dict(a), Val::Dict(b)) => a == b,
            (Val::Object { class: c, attrs: a }, Val::Object { class: d, attrs: b }) => c.is(d) && a == b,
            (Val::Iter { items: a, next: m }, Val::Iter { items: b, next: n }) => a == b && m == n,
            (
                Val::ListIter {
                    list: a,
                    next: m,
                    frame: f,
                },
                Val::ListIter {
                    list: b,
                    next: n,
                    frame: g,
                },
            ) => a == b && m == n && f == g,
            (Val::DictIter(a), Val::DictIter(b)) => a == b,
            (Val::Lazy(a), Val::Lazy(b)) => a == b,
            (Val::Cell(a), Val::Cell(b)) => a == b,
            // Generators are compared by position below; the rest never change once made.
            (old, new) => std::mem::discriminant(old) == std::mem::discriminant(new),
        };
        self.side_effects.len() != before.side_effects
            || self.stored_globals.len() != before.stored_globals
            || self.stored_attrs.len() != before.stored_attrs
            || self.mutated != before.mutated
            || before
                .cells
                .iter()
                .enumerate()
                .any(|(i, cell)| self.cells[i] != *cell)
            || before
                .values
                .iter()
                .enumerate()
                .any(|(vid, old)| !same(old, &self.values[vid]))
            || self
                .generator_positions()
                .iter()
                .take(generators.len())
                .ne(generators.iter())
    }

    /// `operator.add(a, b)` and the module's other functions of the operations the VM runs
    /// (`a + b`, `a < b`, `a[k]`, `a[k] = v`, `del a[k]`, `b in a`, `a is b`, `not a`, `-a`),
    /// run as those operations are; None for another callable.
    fn operator_function(
        &mut self,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let Ok(name) = obj.getattr("__name__").and_then(|n| n.extract::<String>()) else {
            return Ok(None);
        };
        if !kwargs.is_empty() || !self.ops.op(&name).is_ok_and(|f| f.is(obj)) {
            return Ok(None);
        }
        let binary = BINARY_OPS
            .iter()
            .flat_map(|op| [(*op, false), (*op, true)])
            .find(|(op, inplace)| binop_name(*op, *inplace) == name);
        let result = match (name.as_str(), args) {
            (_, [a, b]) if binary.is_some() => {
                let (op, inplace) = binary.expect("matched");
                self.binary(*a, *b, op, inplace)?
            }
            (name, [a, b]) if COMPARE_NAMES.contains(&name) => {
                match self.compare_made_objects(name, *a, *b)? {
                    Some(r) => r,
                    None => self.operator_call(name, vec![*a, *b])?,
                }
            }
            ("neg" | "pos" | "invert", [a]) => self.operator_call(&name, vec![*a])?,
            ("setitem", [container, key, value]) => {
                self.store_subscript(*container, *key, *value)?;
                self.none()
            }
            ("delitem", [container, key]) => {
                self.delete_subscript(*container, *key)?;
                self.none()
            }
            ("contains", [container, item]) => {
                let found = self.contains(*container, *item)?;
                self.boolean(found)
            }
            ("is_" | "is_not", [a, b]) => {
                let same = self.identical(*a, *b)?;
                self.boolean(same == (name == "is_"))
            }
            ("truth" | "not_", [a]) => {
                let truth = self.truthy(*a)?;
                self.boolean(truth == (name == "truth"))
            }
            _ => return Ok(None),
        };
        if let Some(s) = source {
            self.add_guard(s, Check::Id(Pin::new(obj)));
        }
        Ok(Some(result))
    }

    /// `functools.reduce(function, iterable[, initial])`: the calls it makes, followed
    /// through; None for another callable.
    fn reduce(
        &mut self,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        if !kwargs.is_empty() || !import(self.py, "functools")?.getattr("reduce")?.is(obj) {
            return Ok(None);
        }
        let (function, iterable, initial) = match args {
            [function, iterable] => (*function, *iterable, None),
            [function, iterable, initial] => (*function, *iterable, Some(*initial)),
            _ => return Ok(None),
        };
        if let Some(s) = source {
            self.add_guard(s, Check::Id(Pin::new(obj)));
        }
        let iterator = self.iterator(iterable)?;
        let mut accumulated = match initial {
            Some(initial) => initial,
            None => match self.advance(iterator)? {
                Some(first) => first,
                // The interpreter's own error (its wording changed in 3.10).
                None => {
                    let empty = obj.call1((builtin(self.py, "max")?, PyTuple::empty(self.py)));
                    return Err(Problem::Python(empty.expect_err("reduce() of nothing raises")));
                }
            },
        };
        while let Some(item) = self.advance(iterator)? {
            accumulated = self.call(function, vec![accumulated, item], vec![])?;
        }
        Ok(Some(accumulated))
    }

    /// A layer's attributes that decide what its call computes (`training`), guarded by value.
    fn guard_layer(&mut self, obj: &Bound<'py, PyAny>, source: Option<SourceId>) -> Res<()> {
        let Some(s) = source else {
            return Ok(());
        };
        for name in self.backend.layer_attributes(obj).to_vec() {
            let value = obj.getattr(name.as_str())?;
            let attribute = self.intern(Source::Attr(s, name_ref(self.py, &name)));
            self.guard_value(attribute, &value)?;
        }
        Ok(())
    }

    /// A C function bound to a class (`MyLayer.apply`) is made anew at each attribute read:
    /// pinned by the class it is bound to and its name.
    fn pin_class_bound_builtin(&mut self, source: SourceId, obj: &Bound<'py, PyAny>) -> Res<()> {
        self.add_guard(source, Check::Type(StrongRef::new(&obj.get_type().into_any())));
        let owner = self.intern(Source::Attr(source, name_ref(self.py, "__self__")));
        self.add_guard(owner, Check::Id(Pin::new(&obj.getattr("__self__")?)));
        let name = self.intern(Source::Attr(source, name_ref(self.py, "__name__")));
        self.add_guard(name, Check::Equals(StrongRef::new(&obj.getattr("__name__")?)));
        Ok(())
    }

    /// An argument of `construct` as it is now, where it is the same on every call passing
    /// the guards: a value (see `folded_argument`), a model layer pinned by identity (the
    /// object made holds it, as its container does), one made the same way, or a list or
    /// tuple the translation made of those. None for anything else.
    fn constructor_argument(&mut self, vid: Vid) -> Res<Option<Bound<'py, PyAny>>> {
        match self.val(vid).clone_val() {
            Val::List(items) | Val::Tuple(items) => {
                let is_list = matches!(self.val(vid), Val::List(_));
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    match self.constructor_argument(item)? {
                        Some(value) => values.push(value),
                        None => return Ok(None),
                    }
                }
                Ok(Some(if is_list {
                    PyList::new(self.py, values)?.into_any()
                } else {
                    PyTuple::new(self.py, values)?.into_any()
                }))
            }
            Val::Obj { obj, source } if self.backend.is_layer(&obj) => {
                if let Some(s) = source {
                    self.add_guard(s, Check::Id(Pin::new(&obj)));
                }
                Ok(Some(obj))
            }
            Val::Constructed { obj, .. } => Ok(Some(obj)),
            _ => self.folded_argument(vid, ""),
        }
    }

    /// `cls(*args, **kwargs)` made now where the backend makes it (`Backend::construct`)
    /// from arguments the same on every call passing the guards.
    fn construct(
        &mut self,
        cls: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        if !self.backend.constructs(cls)
            || args
                .iter()
                .chain(kwargs.iter().map(|(_, v)| v))
                .any(|a| self.contains_tensor(*a))
        {
            return Ok(None);
        }
        let Ok((positional, kw)) = self.arguments_now(args, kwargs, Self::constructor_argument)? else {
            return Ok(None);
        };
        let Some(obj) = self.backend.construct(cls, &positional, &kw)? else {
            return Ok(None);
        };
        if let Some(s) = source {
            self.add_guard(s, Check::Id(Pin::new(cls)));
        }
        let class = self.constant(cls.clone());
        let args = self.push_val(Val::Tuple(args.to_vec()));
        let keywords = kwargs
            .iter()
            .map(|(k, v)| (self.constant(PyString::new(self.py, k).into_any()), *v))
            .collect();
        let kwargs = self.push_val(Val::Dict(keywords));
        Ok(Some(self.push_val(Val::Constructed {
            obj,
            class,
            args,
            kwargs,
        })))
    }

    /// `cls(*args, **kwargs)` for a class whose instances the VM can make: exceptions
    /// built by C code (made now, from known arguments), and Python classes with the
    /// default `__new__` and a `__dict__` (a symbolic object, its `__init__` inlined).
    fn instantiate(
        &mut self,
        cls: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let base_exception = builtin(self.py, "BaseException")?;
        let type_type = builtin(self.py, "type")?;
        let object = builtin(self.py, "object")?;
        if !cls.get_type().is(&type_type) {
            return Ok(None);
        }
        let pin = |vm: &mut Self| {
            if let Some(s) = source {
                vm.add_guard(s, Check::Id(Pin::new(cls)));
            }
        };
        if self.type_lookup(cls, "__del__")?.is_some() {
            // Made while translating, it would also die there, running its `__del__`.
            return Ok(None);
        }
        let init = self.type_lookup(cls, "__init__")?;
        // object's own, a Python function's, or another the VM does not run (a property, a
        // C type's, a callable object): then the class is called as it is.
        let object_init = object.getattr("__init__")?;
        let default_init = init.as_ref().is_some_and(|i| i.is(&object_init));
        let python_init = init.filter(|init| init.is_instance(&self.ops.function_type).unwrap_or(false));
        let python_new = self.type_lookup(cls, "__new__")?.filter(|new| {
            new.is_instance(&self.ops.staticmethod_type).unwrap_or(false)
                || new.is_instance(&self.ops.function_type).unwrap_or(false)
        });
        if cls
            .cast::<PyType>()
            .map_err(PyErr::from)?
            .is_subclass(&base_exception)?
        {
            // The generated code makes it again as `type(e)(*e.args)`: keyword arguments
            // (ImportError's name and path) would be lost.
            if python_init.is_some()
                || python_new.is_some()
                || !kwargs.is_empty()
                || args.iter().any(|a| self.contains_tensor(*a))
            {
                return Ok(None);
            }
            // The generated code makes it again from its arguments as constants: no object
            // from the frame but values (another would be the first call's, and would live
            // as long as the code).
            if !args
                .iter()
                .chain(kwargs.iter().map(|(_, v)| v))
                .all(|a| self.is_constant(*a))
            {
                return graph_break("an exception made with an object from the frame");
            }
            pin(self);
            let positional = args.iter().map(|a| self.concrete(*a)).collect::<Res<Vec<_>>>()?;
            let kw = PyDict::new(self.py);
            for (k, v) in kwargs {
                kw.set_item(k, self.concrete(*v)?)?;
            }
            let made = cls.call(PyTuple::new(self.py, positional)?, Some(&kw))?;
            return Ok(Some(self.constant(made)));
        }
        if let (Some(new), true) = (&python_new, default_init) {
            // Instances its Python `__new__` makes (a namedtuple's class), `object.__init__`
            // then doing nothing: the `__new__` inlined.
            pin(self);
            let function = if new.is_instance(&self.ops.staticmethod_type)? {
                new.getattr("__func__")?
            } else {
                new.clone()
            };
            let function = self.constant(function);
            let mut all = vec![self.constant(cls.clone())];
            all.extend_from_slice(args);
            return Ok(Some(self.call(function, all, kwargs.to_vec())?));
        }
        let is_python_class = cls
            .getattr("__module__")
            .is_ok_and(|m| !m.eq("builtins").unwrap_or(true));
        let has_dict = has_instance_dict(cls);
        let default_new = cls.getattr("__new__")?.is(&object.getattr("__new__")?);
        // Without a __dict__, a Python class with the default __new__ keeps its
        // attributes in `__slots__` (see `is_slot`).
        let slotted = !has_dict && cls.hasattr("__slots__")?;
        if !is_python_class
            || !(has_dict || slotted)
            || !default_new
            || python_init.is_none() && !default_init
        {
            return Ok(None);
        }
        pin(self);
        let made = self.push_val(Val::Object {
            class: cls.clone(),
            attrs: Vec::new(),
        });
        match python_init {
            Some(init) => {
                let init = self.constant(init);
                let mut all = vec![made];
                all.extend_from_slice(args);
                let returned = self.call(init, all, kwargs.to_vec())?;
                let none = self.none();
                if !self.identical(returned, none)? {
                    return Err(Problem::Python(PyTypeError::new_err(
                        "__init__() should return None",
                    )));
                }
            }
            None if !args.is_empty() || !kwargs.is_empty() => {
                return Err(Problem::Python(PyTypeError::new_err(format!(
                    "{}() takes no arguments",
                    qualname(cls)
                ))));
            }
            None => {}
        }
        Ok(Some(made))
    }

    /// The running version's stack effect of opcode `name` with `oparg`, when it jumps or not
    /// (the VM reads the effect of the opcodes whose stack use differs between versions).
    fn stack_effect(&self, name: &str, oparg: u32, jump: bool) -> Res<i64> {
        let info = self
            .table
            .require(name)
            .ok()
            .and_then(|number| self.table.op(number));
        info.and_then(|info| info.stack_effect(oparg, jump)).map_or_else(
            || unsupported(format!("{name} has no stack effect in this version's table")),
            Ok,
        )
    }

    /// Whether the version's match opcode `name` also pushes a success flag (3.10): its
    /// stack effect is `flagged`.
    fn pushes_match_flag(&self, name: &str, flagged: i64) -> Res<bool> {
        Ok(self.stack_effect(name, 0, false)? == flagged)
    }

    /// `MATCH_MAPPING` / `MATCH_SEQUENCE`: the subject's type's flags decide.
    fn match_kind(&mut self, subject: Vid, mapping: bool) -> Res<bool> {
        const SEQUENCE: u64 = 1 << 5;
        const MAPPING: u64 = 1 << 6;
        let ty = self.type_of(subject)?;
        let flags: u64 = ty.getattr("__flags__")?.extract()?;
        Ok(flags & if mapping { MAPPING } else { SEQUENCE } != 0)
    }

    /// `MATCH_CLASS`: the attributes a class pattern binds, or None where the subject does
    /// not match. A pattern CPython rejects (a class that is not a type, a `__match_args__`
    /// that is not a tuple of strings, too many positional sub-patterns, an attribute named
    /// twice) breaks, so that the instruction raises its own error where it runs.
    fn match_class(&mut self, subject: Vid, class: Vid, count: usize, names: Vid) -> Res<Option<Vid>> {
        let class = self.concrete(class)?;
        if !class.is_instance_of::<PyType>() {
            return unsupported("a class pattern whose class is not a type");
        }
        let ty = self.type_of(subject)?;
        if !self.builtin("issubclass")?.call1((&ty, &class))?.is_truthy()? {
            return Ok(None);
        }
        let mut attributes: Vec<Bound<'py, PyAny>> = Vec::new();
        // Types flagged `_Py_TPFLAGS_MATCH_SELF` (bool, int, str, list... and their
        // subclasses) match one positional pattern against the subject itself, unless
        // they define `__match_args__`.
        let mut match_self = false;
        if count > 0 {
            match class.getattr("__match_args__") {
                Ok(match_args) => {
                    let Ok(match_args) = match_args.cast_exact::<PyTuple>() else {
                        return unsupported("a __match_args__ that is not a tuple");
                    };
                    if match_args.len() < count {
                        return unsupported("more positional sub-patterns than __match_args__ names");
                    }
                    for name in match_args.iter().take(count) {
                        if !name.is_exact_instance_of::<PyString>() {
                            return unsupported("a __match_args__ name that is not a str");
                        }
                        attributes.push(name);
                    }
                }
                Err(err) if err.is_instance_of::<pyo3::exceptions::PyAttributeError>(self.py) => {
                    let flags: u64 = class.getattr("__flags__")?.extract()?;
                    match_self = flags & MATCH_SELF_FLAG != 0;
                    if !match_self || count > 1 {
                        return unsupported("more positional sub-patterns than the class accepts");
                    }
                }
                Err(err) => return Err(err.into()),
            }
        }
        attributes.extend(
            self.concrete(names)?
                .cast_into::<PyTuple>()
                .map_err(PyErr::from)?
                .iter(),
        );
        if names_one_twice(self.py, &attributes)? {
            return unsupported("a class pattern naming an attribute twice");
        }
        let mut values = if match_self { vec![subject] } else { Vec::new() };
        for name in attributes {
            match self.load_attr(subject, &name.extract::<String>()?) {
                Ok(v) => values.push(v),
                Err(Problem::Python(err))
                    if err.is_instance_of::<pyo3::exceptions::PyAttributeError>(self.py) =>
                {
                    return Ok(None)
                }
                Err(other) => return Err(other),
            }
        }
        Ok(Some(self.push_val(Val::Tuple(values))))
    }

    /// `MATCH_KEYS`: the values of a mapping pattern's keys, or None where one is missing.
    /// CPython looks each up with `subject.get(key, <missing>)`, which for an exact dict
    /// is `key in subject` then `subject[key]`; a key named twice breaks (CPython raises).
    fn match_keys(&mut self, subject: Vid, keys: Vid) -> Res<Option<Vid>> {
        let keys = self.items_of(keys)?;
        let concrete_keys = keys.iter().map(|k| self.concrete(*k)).collect::<Res<Vec<_>>>()?;
        if names_one_twice(self.py, &concrete_keys)? {
            return unsupported("a mapping pattern naming a key twice");
        }
        // The default `get` returns for a missing key: a fresh object, where not an exact dict.
        let missing = if self.type_of(subject)?.is(self.py.get_type::<PyDict>()) {
            None
        } else {
            let object = self.builtin("object")?.call0()?;
            Some((self.constant(object.clone()), object))
        };
        let mut values = Vec::with_capacity(keys.len());
        for key in keys {
            let value = match &missing {
                None => {
                    if !self.contains(subject, key)? {
                        return Ok(None);
                    }
                    self.subscript(subject, key)?
                }
                Some((missing, object)) => {
                    let get = self.load_attr(subject, "get")?;
                    let value = self.call(get, vec![key, *missing], vec![])?;
                    if value == *missing || self.concrete(value)?.is(object) {
                        return Ok(None);
                    }
                    value
                }
            };
            values.push(value);
        }
        Ok(Some(self.push_val(Val::Tuple(values))))
    }

    /// An attribute of an object the translation made.
    fn made_object_attr(
        &mut self,
        owner: Vid,
        class: Bound<'py, PyAny>,
        attrs: &[(String, Vid)],
        name: &str,
    ) -> Res<Vid> {
        if !class
            .getattr("__getattribute__")?
            .is(&self.ops.object_getattribute)
        {
            return unsupported(format!(
                "attribute {name} of an object the translation made (custom __getattribute__)"
            ));
        }
        let class_attr = self.type_lookup(&class, name)?;
        if name == "__class__" {
            let object_class = builtin(self.py, "object")?.getattr("__dict__")?.get_item(name)?;
            if class_attr.as_ref().is_some_and(|found| found.is(&object_class)) {
                // Its class is fixed when the translation makes it (unless the class
                // defines a `__class__` of its own).
                return Ok(self.constant(class));
            }
        }
        if let Some(descriptor) = &class_attr {
            if descriptor.is_instance(&self.ops.property_type)? {
                let getter = self.constant(descriptor.getattr("fget")?);
                return self.call(getter, vec![owner], vec![]);
            }
        }
        if let Some((_, v)) = attrs.iter().rev().find(|(n, _)| n == name) {
            return Ok(*v);
        }
        if let Some(raw) = &class_attr {
            if let Some(bound) = self.bind_class_function(raw, owner, &class, None)? {
                return Ok(bound);
            }
        }
        let unset_slot = self.is_slot(class_attr.as_ref())?;
        if let Some(raw) = &class_attr {
            if raw.is_instance(self.ops.c_method_types.as_any())? {
                // A builtin base's method (`object.__init__`): bound to the object.
                let function = self.constant(raw.clone());
                return Ok(self.push_val(Val::Method {
                    function,
                    receiver: owner,
                }));
            }
            if !unset_slot && raw.get_type().hasattr("__get__")? && !raw.is_instance_of::<PyType>() {
                return unsupported(format!(
                    "class attribute {name} of an object the translation made: a descriptor not simulated"
                ));
            }
        }
        match class_attr {
            Some(raw) if !unset_slot && (is_immutable(&raw) || raw.is_callable()) => Ok(self.constant(raw)),
            Some(_) if !unset_slot => unsupported(format!(
                "mutable class attribute {name} of an object the translation made"
            )),
            _ => match self.type_lookup(&class, "__getattr__")? {
                // Where the lookup fails, CPython calls the class's `__getattr__`.
                Some(hook) if hook.is_instance(&self.ops.function_type)? => {
                    let function = self.constant(hook);
                    let name_value = self.constant(PyString::new(self.py, name).into_any());
                    match self.call(function, vec![owner, name_value], vec![]) {
                        // CPython gives the AttributeError it raises the attribute's name and
                        // the object (what `Did you mean` reads): the original raises it.
                        Err(Problem::Python(err)) if err.is_instance_of::<PyAttributeError>(self.py) => {
                            unsupported(format!("AttributeError from __getattr__ of an object the translation made ({name})"))
                        }
                        other => other,
                    }
                }
                Some(_) => unsupported(format!(
                    "attribute {name} of an object the translation made (its __getattr__ is not a Python function)"
                )),
                None => Err(Problem::Python(PyAttributeError::new_err(format!(
                    "'{}' object has no attribute '{name}'",
                    class.getattr("__name__")?
                )))),
            },
        }
    }

    /// Whether a class attribute is a `__slots__` entry (a member descriptor), where an
    /// object the translation made keeps that attribute like any other.
    fn is_slot(&self, class_attr: Option<&Bound<'py, PyAny>>) -> PyResult<bool> {
        let Some(attr) = class_attr else {
            return Ok(false);
        };
        attr.is_instance(&self.ops.member_descriptor_type)
    }

    /// A function object as the VM's function value, its closure's cells read from the
    /// function (their contents guarded through the function's source).
    fn function_of(&mut self, obj: &Bound<'py, PyAny>, source: Option<SourceId>) -> Res<Function<'py>> {
        let code = obj.getattr("__code__")?;
        let mut defaults = Vec::new();
        let raw_defaults = obj.getattr("__defaults__")?;
        if let Some(s) = source {
            let defaults_source = self.intern(Source::Attr(s, name_ref(self.py, "__defaults__")));
            if raw_defaults.is_none() {
                self.add_guard(defaults_source, Check::Id(Pin::new(&raw_defaults)));
            } else {
                self.add_guard(defaults_source, Check::Len(raw_defaults.len()?));
            }
        }
        if !raw_defaults.is_none() {
            for (i, d) in raw_defaults.try_iter()?.enumerate() {
                let d = d?;
                defaults.push(match source {
                    Some(s) => {
                        let defaults_source = self.intern(Source::Attr(s, name_ref(self.py, "__defaults__")));
                        let key = i.into_pyobject(self.py)?.into_any();
                        self.value_of_source(Source::Item(defaults_source, StrongRef::new(&key)), d)
                    }
                    None => self.wrap_default(d)?,
                });
            }
        }
        let mut kwdefaults = Vec::new();
        let raw_kwdefaults = obj.getattr("__kwdefaults__")?;
        if let Some(s) = source {
            let kw_source = self.intern(Source::Attr(s, name_ref(self.py, "__kwdefaults__")));
            if raw_kwdefaults.is_none() {
                self.add_guard(kw_source, Check::Id(Pin::new(&raw_kwdefaults)));
            } else if !raw_kwdefaults.is_exact_instance_of::<PyDict>() {
                // The keys guard holds only for exact dicts: a subclass would never hit the cache.
                return graph_break("a function whose __kwdefaults__ is a dict subclass");
            }
        }
        if let Ok(dict) = raw_kwdefaults.cast::<PyDict>() {
            for (k, v) in dict.iter() {
                let value = match source {
                    Some(s) => {
                        let kw_source = self.intern(Source::Attr(s, name_ref(self.py, "__kwdefaults__")));
                        self.add_guard(
                            kw_source,
                            Check::Keys(StrongRef::new(PyTuple::new(self.py, dict.keys())?.as_any())),
                        );
                        self.value_of_source(Source::Item(kw_source, StrongRef::new(&k)), v)
                    }
                    None => self.wrap_default(v)?,
                };
                kwdefaults.push((k.extract::<String>()?, value));
            }
        }
        let mut closure = Vec::new();
        let raw_closure = obj.getattr("__closure__")?;
        if !raw_closure.is_none() {
            for (index, cell) in raw_closure.try_iter()?.enumerate() {
                let cell = cell?;
                // A cell the translation knows already (the translated frame's own free
                // variables) is that cell: stores through one are seen through the other.
                if let Some(known) = self.cell_objects.get(&(cell.as_ptr() as usize)) {
                    closure.push(*known);
                    continue;
                }
                let cell_source = match source {
                    Some(s) => {
                        let closure_source = self.intern(Source::Attr(s, name_ref(self.py, "__closure__")));
                        let index_key = index.into_pyobject(self.py)?.into_any();
                        self.intern(Source::Item(closure_source, StrongRef::new(&index_key)))
                    }
                    None => self.intern(Source::Held(StrongRef::new(&cell))),
                };
                let content = match cell.getattr("cell_contents") {
                    Ok(content) => Some(match source {
                        Some(_) => self.value_of_source(
                            Source::Attr(cell_source, name_ref(self.py, "cell_contents")),
                            content,
                        ),
                        None if is_immutable(&content) || content.is_callable() => self.constant(content),
                        None => return unsupported("a closure variable of a function without a source"),
                    }),
                    Err(_) => None,
                };
                self.cells.push(content);
                closure.push(self.cells.len() - 1);
                self.outside_cells.insert(self.cells.len() - 1, cell_source);
                // Another function over the same cell (a method called twice) shares it.
                self.cell_objects
                    .insert(cell.as_ptr() as usize, self.cells.len() - 1);
            }
        }
        Ok(Function {
            code,
            globals: obj.getattr("__globals__")?,
            name: obj.getattr("__name__")?.extract()?,
            qualname: obj.getattr("__qualname__")?.extract()?,
            defaults,
            kwdefaults,
            closure,
            annotations: None,
            annotate: None,
            object: Some(obj.clone()),
        })
    }

    fn wrap_default(&mut self, value: Bound<'py, PyAny>) -> Res<Vid> {
        if is_immutable(&value) || value.is_callable() {
            Ok(self.constant(value))
        } else {
            unsupported("a mutable default argument")
        }
    }

    /// Runs a Python function's code in a new VM frame.
    fn inline(
        &mut self,
        function: &Function<'py>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
        source: Option<SourceId>,
    ) -> Res<Vid> {
        if self.depth >= MAX_INLINE_DEPTH {
            return graph_break("unsupported call: inlining too deep (recursion)");
        }
        let info = self.backend.code_info(&function.code)?;
        if info.flags & CO_COROUTINE_LIKE != 0 {
            return graph_break(format!("unsupported call: {} is a coroutine", function.name));
        }
        let mut frame = self.new_frame(&function.code, &info, function.globals.clone())?;
        if let Some(top) = self.top_globals.as_ref() {
            if !function.globals.is(top) {
                let globals = match source {
                    Some(s) => Source::Attr(s, name_ref(self.py, "__globals__")),
                    None => Source::Held(StrongRef::new(&function.globals)),
                };
                frame.globals_source = Some(self.intern(globals));
            }
        }
        self.bind_arguments(&mut frame, &info, function, args, kwargs)?;
        self.setup_cells(&mut frame, &function.closure);
        if info.flags & CO_GENERATOR != 0 {
            // Made, not run: it runs a step at a time as it is iterated.
            let state = GeneratorState {
                frame,
                suspended: false,
                finished: false,
                returned: None,
            };
            return Ok(self.push_val(Val::Generator(std::rc::Rc::new(std::cell::RefCell::new(state)))));
        }
        self.depth += 1;
        let saved_location = self.location.clone();
        let result = self.run_inlined(&mut frame);
        self.depth -= 1;
        // On a problem the location stays the callee's (a break there happens at the
        // caller's call, which then runs as a call).
        let returned = result?;
        self.location = saved_location;
        Ok(returned)
    }

    fn bind_arguments(
        &mut self,
        frame: &mut Frame<'py>,
        info: &CodeInfo,
        function: &Function<'py>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<()> {
        let positional = info.argcount;
        let names: Vec<String> = frame.vars.varnames.clone();
        let mut bound: Vec<Option<Vid>> = vec![None; info.total_arguments()];
        let mut extra_positional = Vec::new();
        for (i, a) in args.into_iter().enumerate() {
            if i < positional {
                bound[i] = Some(a);
            } else {
                extra_positional.push(a);
            }
        }
        let varargs_slot = positional + info.kwonly;
        let has_varargs = info.flags & CO_VARARGS != 0;
        let has_varkw = info.flags & CO_VARKEYWORDS != 0;
        if !extra_positional.is_empty() && !has_varargs {
            return Err(Problem::Python(PyTypeError::new_err(format!(
                "{}() takes {positional} positional arguments but more were given",
                function.name
            ))));
        }
        let mut extra_keywords = Vec::new();
        for (name, value) in kwargs {
            let index = names[..positional + info.kwonly].iter().position(|n| *n == name);
            match index {
                Some(i) if i >= info.posonly => {
                    if bound[i].is_some() {
                        return Err(Problem::Python(PyTypeError::new_err(format!(
                            "{}() got multiple values for argument '{name}'",
                            function.name
                        ))));
                    }
                    bound[i] = Some(value);
                }
                _ if has_varkw => {
                    let key = self.constant(PyString::new(self.py, &name).into_any());
                    extra_keywords.push((key, value));
                }
                _ => {
                    return Err(Problem::Python(PyTypeError::new_err(format!(
                        "{}() got an unexpected keyword argument '{name}'",
                        function.name
                    ))))
                }
            }
        }
        let first_default = positional.saturating_sub(function.defaults.len());
        for (i, slot) in bound.iter_mut().enumerate().take(positional) {
            if slot.is_none() && i >= first_default {
                *slot = Some(function.defaults[i - first_default]);
            }
        }
        for (i, slot) in bound
            .iter_mut()
            .enumerate()
            .take(positional + info.kwonly)
            .skip(positional)
        {
            if slot.is_none() {
                *slot = function
                    .kwdefaults
                    .iter()
                    .find(|(n, _)| *n == names[i])
                    .map(|(_, v)| *v);
            }
        }
        if has_varargs {
            bound[varargs_slot] = Some(self.push_val(Val::Tuple(extra_positional)));
        }
        if has_varkw {
            bound[varargs_slot + usize::from(has_varargs)] = Some(self.push_val(Val::Dict(extra_keywords)));
        }
        for (i, value) in bound.into_iter().enumerate() {
            match value {
                Some(v) => frame.locals[i] = v,
                None => {
                    return Err(Problem::Python(PyTypeError::new_err(format!(
                        "{}() missing required argument: '{}'",
                        function.name, names[i]
                    ))))
                }
            }
        }
        Ok(())
    }

    fn container_method(
        &mut self,
        container: Vid,
        name: &str,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<Vid> {
        if !kwargs.is_empty() && !matches!(name, "update" | "sort") {
            return unsupported(format!("keyword arguments to {name}"));
        }
        let value = self.val(container).clone_val();
        let none = self.none();
        match (value, name, args.as_slice()) {
            (Val::List(mut items), "append", [v]) => {
                items.push(*v);
                self.values[container] = Val::List(items);
                Ok(none)
            }
            (Val::List(mut items), "extend", [v]) => {
                items.extend(self.items_of(*v)?);
                self.values[container] = Val::List(items);
                Ok(none)
            }
            (Val::List(mut items), "insert", [at, v]) => {
                let at = self.concrete(*at)?.extract::<isize>()?;
                let len = items.len() as isize;
                let at = if at < 0 { (at + len).max(0) } else { at.min(len) } as usize;
                items.insert(at, *v);
                self.values[container] = Val::List(items);
                Ok(none)
            }
            (Val::List(mut items), "pop", rest) => {
                let at = match rest {
                    [] => -1,
                    [i] => self.concrete(*i)?.extract::<isize>()?,
                    _ => return unsupported("list.pop arguments"),
                };
                let len = items.len() as isize;
                let index = if at < 0 { at + len } else { at };
                if index < 0 || index >= len {
                    return Err(Problem::Python(pyo3::exceptions::PyIndexError::new_err(
                        "pop index out of range",
                    )));
                }
                let v = items.remove(index as usize);
                self.values[container] = Val::List(items);
                Ok(v)
            }
            (Val::List(items), "copy", []) => Ok(self.push_val(Val::List(items))),
            (Val::List(mut items), "reverse", []) => {
                items.reverse();
                self.values[container] = Val::List(items);
                Ok(none)
            }
            (Val::Generator(state), "send", [v]) => {
                let suspended = state.borrow().suspended;
                if suspended {
                    // What the suspended yield evaluates to (it left None on the stack).
                    if let Some(top) = state.borrow_mut().frame.stack.last_mut() {
                        *top = *v;
                    }
                } else if !self.concrete(*v)?.is_none() && !state.borrow().finished {
                    return Err(Problem::Python(PyTypeError::new_err(
                        "can't send non-None value to a just-started generator",
                    )));
                }
                match self.advance(container)? {
                    Some(item) => Ok(item),
                    None => unsupported("generator.send() raised StopIteration"),
                }
            }
            (Val::List(items) | Val::Tuple(items), "count", [v]) => {
                let mut count = 0usize;
                for item in items {
                    count += usize::from(self.equal_items(item, *v)?);
                }
                Ok(self.constant(count.into_pyobject(self.py)?.into_any()))
            }
            (Val::List(items) | Val::Tuple(items), "index", [v]) => {
                for (i, item) in items.into_iter().enumerate() {
                    if self.equal_items(item, *v)? {
                        return Ok(self.constant(i.into_pyobject(self.py)?.into_any()));
                    }
                }
                self.raise_not_found(container, name, *v)
            }
            (Val::List(_), "clear", []) => {
                self.values[container] = Val::List(Vec::new());
                Ok(none)
            }
            (Val::Set(_), "clear", []) => {
                self.values[container] = Val::Set(Vec::new());
                Ok(none)
            }
            (Val::Dict(items), "clear", []) => {
                for (k, v) in &items {
                    self.check_droppable(*k)?;
                    self.check_droppable(*v)?;
                }
                self.values[container] = Val::Dict(Vec::new());
                if !items.is_empty() {
                    self.note_keys_removed(container);
                }
                Ok(none)
            }
            (Val::List(mut items), "remove", [v]) => {
                for i in 0..items.len() {
                    if self.equal_items(items[i], *v)? {
                        items.remove(i);
                        self.values[container] = Val::List(items);
                        return Ok(none);
                    }
                }
                self.raise_not_found(container, name, *v)
            }
            (Val::Set(mut items), "remove" | "discard", [v]) => {
                let target = self.concrete(*v)?;
                match self.find_key(&items, &target)? {
                    Some(i) => {
                        items.remove(i);
                    }
                    None if name == "discard" => {}
                    None => {
                        return Err(Problem::Python(pyo3::exceptions::PyKeyError::new_err(
                            target.unbind(),
                        )))
                    }
                }
                self.values[container] = Val::Set(items);
                Ok(none)
            }
            (Val::List(items), "sort", []) => {
                let key = kwargs.iter().find(|(k, _)| k == "key").map(|(_, v)| *v);
                let reverse = match kwargs.iter().find(|(k, _)| k == "reverse") {
                    Some((_, r)) => self.truthy(*r)?,
                    None => false,
                };
                let sorted = self.sort_items(items, key, reverse)?;
                self.values[container] = Val::List(sorted);
                Ok(none)
            }
            (Val::Set(_), "add", [v]) => {
                self.add_items(container, vec![*v])?;
                Ok(none)
            }
            (Val::Dict(_) | Val::Obj { .. }, "keys" | "values" | "items", []) => {
                let part = match name {
                    "keys" => DictPart::Keys,
                    "values" => DictPart::Values,
                    _ => DictPart::Items,
                };
                Ok(self.push_val(Val::DictView {
                    dict: container,
                    part,
                }))
            }
            (Val::Dict(items), "get", [key, rest @ ..]) => {
                let key_obj = self.concrete(*key)?;
                match self.find_dict_key(&items, &key_obj)? {
                    Some(index) => Ok(items[index].1),
                    None => Ok(rest.first().copied().unwrap_or(none)),
                }
            }
            (Val::Dict(mut items), "update", rest) => {
                for other in rest {
                    for (k, v) in self.dict_items(*other)? {
                        self.dict_set(&mut items, k, v)?;
                    }
                }
                for (name, v) in kwargs {
                    let k = self.constant(PyString::new(self.py, &name).into_any());
                    self.dict_set(&mut items, k, v)?;
                }
                self.values[container] = Val::Dict(items);
                Ok(none)
            }
            (Val::Dict(mut items), "setdefault", [key, rest @ ..]) => {
                let key_obj = self.concrete(*key)?;
                if let Some(index) = self.find_dict_key(&items, &key_obj)? {
                    return Ok(items[index].1);
                }
                let v = rest.first().copied().unwrap_or(none);
                items.push((*key, v));
                self.values[container] = Val::Dict(items);
                Ok(v)
            }
            (Val::Dict(mut items), "pop", [key, rest @ ..]) => {
                let key_obj = self.concrete(*key)?;
                let found = match self.find_dict_key(&items, &key_obj)? {
                    Some(index) => {
                        let (k, v) = items.remove(index);
                        self.check_droppable(k)?;
                        self.values[container] = Val::Dict(items);
                        self.note_keys_removed(container);
                        Some(v)
                    }
                    None => None,
                };
                match (found, rest.first()) {
                    (Some(v), _) => Ok(v),
                    (None, Some(v)) => Ok(*v),
                    (None, None) => Err(Problem::Python(pyo3::exceptions::PyKeyError::new_err(
                        key_obj.unbind(),
                    ))),
                }
            }
            (Val::Dict(items), "copy", []) => Ok(self.push_val(Val::Dict(items))),
            (Val::Dict(mut items), "popitem", []) => {
                let Some((k, v)) = items.pop() else {
                    return Err(Problem::Python(pyo3::exceptions::PyKeyError::new_err(
                        "popitem(): dictionary is empty",
                    )));
                };
                self.values[container] = Val::Dict(items);
                self.note_keys_removed(container);
                Ok(self.tuple_of(vec![k, v]))
            }
            _ => unsupported(format!("method {name} of a list, dict or set")),
        }
    }
}

/// A C function bound to a class (a classmethod written in C, as `PyLayer.apply`).
fn is_class_bound_builtin(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(obj.is_instance_of::<pyo3::types::PyCFunction>()
        && obj
            .getattr("__self__")
            .is_ok_and(|owner| owner.is_instance_of::<PyType>()))
}

fn qualname(obj: &Bound<'_, PyAny>) -> String {
    obj.getattr("__qualname__")
        .or_else(|_| obj.getattr("__name__"))
        .map_or_else(
            |_| obj.get_type().name().map_or("?".into(), |n| n.to_string()),
            |n| n.to_string(),
        )
}

/// Whether a pattern names one attribute or key twice, as CPython's `seen` set tells it.
fn names_one_twice(py: Python<'_>, names: &[Bound<'_, PyAny>]) -> PyResult<bool> {
    Ok(pyo3::types::PySet::new(py, names)?.len() < names.len())
}

/// `_Py_TPFLAGS_MATCH_SELF` (3.10+): a class pattern's one positional sub-pattern matches
/// the subject itself.
const MATCH_SELF_FLAG: u64 = 1 << 22;

// ---- Builtins ----
impl<'py, 'b> Vm<'py, 'b> {
    /// A call whose result depends on the frame making it (its locals, itself): run from
    /// generated code, it would see that code's frame.
    fn reads_callers_frame(
        &self,
        obj: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> PyResult<bool> {
        // Only modules already imported: looking must not import one.
        let modules = import(self.py, "sys")?.getattr("modules")?;
        let is = |module: &str, name: &str| -> bool {
            modules
                .get_item(module)
                .and_then(|m| m.getattr(name))
                .is_ok_and(|f| f.is(obj))
        };
        let given = args.len() + kwargs.len();
        Ok(FRAME_READERS.iter().any(|(module, name)| {
            is(module, name)
                && match *name {
                    "locals" | "vars" | "dir" => given == 0,
                    // Without a globals namespace they run in the caller's.
                    "eval" | "exec" => given < 2,
                    _ => true,
                }
        }))
    }

    fn builtin(&self, name: &str) -> PyResult<Bound<'py, PyAny>> {
        builtin(self.py, name)
    }

    fn tuple_of(&mut self, items: Vec<Vid>) -> Vid {
        self.push_val(Val::Tuple(items))
    }

    fn int_value(&mut self, value: usize) -> Res<Vid> {
        Ok(self.constant(value.into_pyobject(self.py)?.into_any()))
    }

    /// `obj(*args, **kwargs)` for the builtins the VM knows; None when `obj` is none of them.
    fn call_builtin(
        &mut self,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let name = match obj.getattr("__name__").and_then(|n| n.extract::<String>()) {
            Ok(name) if self.builtin(&name).is_ok_and(|b| b.is(obj)) => name,
            _ => return self.call_bound_builtin(obj, args, kwargs),
        };
        if let Some(s) = source {
            self.add_guard(s, Check::Id(Pin::new(obj)));
        }
        let any_tensor = args.iter().any(|a| self.contains_tensor(*a));
        let result = match (name.as_str(), args) {
            ("print", _) => return graph_break("print() is a side effect the graph cannot hold (print)"),
            ("len", [x]) => {
                let x = self.realize(*x)?;
                match self.val(x).clone_val() {
                    Val::Tensor { example, .. } => {
                        let n = example.len()?;
                        self.int_value(n)?
                    }
                    Val::Tuple(i) | Val::List(i) | Val::Set(i) | Val::NamedTuple { items: i, .. } => {
                        self.int_value(i.len())?
                    }
                    Val::Dict(i) => self.int_value(i.len())?,
                    Val::DictView { dict, .. } => return self.call_builtin(obj, None, &[dict], kwargs),
                    Val::Obj {
                        obj: o,
                        source: Some(s),
                    } if self.has_builtin_len(&o)? => {
                        if let Some(copy) = self.mutated.get(&(o.as_ptr() as usize)).copied() {
                            return self.call_builtin(obj, None, &[copy], kwargs);
                        }
                        self.guard_type(x);
                        let n = o.len()?;
                        self.add_guard(s, Check::Len(n));
                        self.int_value(n)?
                    }
                    _ => {
                        if let Some(length) = self.inline_builtin_method("len", x, &[])? {
                            return Ok(Some(length));
                        }
                        let Some(o) = self.folded_argument(x, "len")? else {
                            return self.refuse_folding("builtin len()", x);
                        };
                        self.int_value(o.len()?)?
                    }
                }
            }
            ("isinstance", [x, classes]) => {
                let ty = self.type_of(*x)?;
                let classes = self.concrete(*classes)?;
                let result = self.builtin("issubclass")?.call1((ty, classes))?;
                self.constant(result)
            }
            ("type", [x]) => {
                let ty = self.type_of(*x)?;
                self.constant(ty)
            }
            // A new class takes its `__module__` from the globals of the frame calling
            // type(): run by the generated code, that is the function's own.
            ("type", _) => {
                return graph_break("type() making a class (it reads the calling frame's globals)")
            }
            ("range", _) => {
                let objs = args.iter().map(|a| self.concrete(*a)).collect::<Res<Vec<_>>>()?;
                let range = obj.call1(PyTuple::new(self.py, objs)?)?;
                self.constant(range)
            }
            ("enumerate", [it, rest @ ..]) => {
                let start = match (rest, kwargs) {
                    ([s], _) => self.concrete(*s)?.extract::<i64>()?,
                    ([], [(k, s)]) if k == "start" => self.concrete(*s)?.extract::<i64>()?,
                    _ => 0,
                };
                let iterator = self.iterator(*it)?;
                self.push_val(Val::Lazy(Lazy::Enumerate {
                    iterator,
                    count: start,
                }))
            }
            ("zip", its) if kwargs.is_empty() => {
                let iterators = its.iter().map(|i| self.iterator(*i)).collect::<Res<Vec<_>>>()?;
                self.push_val(Val::Lazy(Lazy::Zip(iterators)))
            }
            ("reversed", [x]) => {
                // A dict's reverse iterator checks, item by item, that the dict's keys did
                // not change (3.14 raises where they did): not simulated.
                let dict_like = match self.val(*x) {
                    Val::Dict(_) | Val::DictView { .. } => true,
                    Val::Obj { obj, .. } => obj.is_instance_of::<PyDict>() || is_dict_view(obj)?,
                    _ => false,
                };
                if dict_like {
                    return graph_break(
                        "reversed() of a dict or a dict view (its iterator watches the dict)",
                    );
                }
                let mut items = self.items_of(*x)?;
                items.reverse();
                self.push_val(Val::Iter { items, next: 0 })
            }
            ("iter", [x]) => self.iterator(*x)?,
            ("next", [it, rest @ ..]) => {
                let it = self.realize(*it)?;
                if let Some(item) = self.advance(it)? {
                    item
                } else if let Some(default) = rest.first() {
                    *default
                } else {
                    return unsupported("next() raised StopIteration");
                }
            }
            // They take no keyword arguments (CPython raises TypeError: a break runs that).
            ("list" | "tuple" | "set" | "frozenset", _) if !kwargs.is_empty() => {
                return graph_break(format!(
                    "unsupported call: builtin {name}() with keyword arguments"
                ))
            }
            ("list" | "tuple" | "set", []) => self.push_val(match name.as_str() {
                "list" => Val::List(vec![]),
                "tuple" => Val::Tuple(vec![]),
                _ => Val::Set(vec![]),
            }),
            // An exact tuple or frozenset is its own copy.
            ("tuple" | "frozenset", [x]) if self.is_exact(*x, &name) => *x,
            ("list" | "tuple", [x]) => {
                let items = self.items_of(*x)?;
                self.push_val(if name == "list" {
                    Val::List(items)
                } else {
                    Val::Tuple(items)
                })
            }
            ("set" | "frozenset", [x]) if !any_tensor => {
                let mut unique = Vec::new();
                let items = self.items_of(*x)?;
                self.add_keys(&mut unique, items)?;
                if name == "set" {
                    self.push_val(Val::Set(unique))
                } else {
                    let objs = unique
                        .iter()
                        .map(|u| self.concrete(*u))
                        .collect::<Res<Vec<_>>>()?;
                    // The builtin itself: before 3.10 an empty frozenset is a singleton.
                    let made = obj.call1((PyTuple::new(self.py, objs)?,))?;
                    self.constant(made)
                }
            }
            ("dict", rest) if rest.len() <= 1 => {
                let mut items = Vec::new();
                if let Some(x) = rest.first() {
                    let x = self.realize(*x)?;
                    let pairs = if matches!(self.val(x), Val::Dict(_))
                        || matches!(self.val(x), Val::Obj { obj: o, .. } if o.is_exact_instance_of::<PyDict>())
                    {
                        self.dict_items(x)?
                    } else {
                        let mut pairs = Vec::new();
                        for pair in self.items_of(x)? {
                            let kv = self.items_of(pair)?;
                            if kv.len() != 2 {
                                return unsupported("dict() of sequences that are not pairs");
                            }
                            pairs.push((kv[0], kv[1]));
                        }
                        pairs
                    };
                    for (k, v) in pairs {
                        self.dict_set(&mut items, k, v)?;
                    }
                }
                for (k, v) in kwargs {
                    let key = self.constant(PyString::new(self.py, k).into_any());
                    self.dict_set(&mut items, key, *v)?;
                }
                self.push_val(Val::Dict(items))
            }
            ("sum", [it, rest @ ..]) if kwargs.is_empty() => {
                let items = self.items_of(*it)?;
                let mut total = match rest.first() {
                    Some(start) => *start,
                    None => self.int_value(0)?,
                };
                if items.iter().chain([&total]).all(|v| self.is_constant(*v)) {
                    // CPython's own sum of known values (floats are summed with compensation).
                    let values = self.push_val(Val::List(items));
                    return self
                        .folded_builtin_call(obj, &name, &[values, total], kwargs)
                        .map(Some);
                }
                for item in items {
                    total = self.binary(total, item, BinOp::Add, false)?;
                }
                total
            }
            ("map", [function, its @ ..]) if !its.is_empty() => {
                let iterators = its.iter().map(|i| self.iterator(*i)).collect::<Res<Vec<_>>>()?;
                self.push_val(Val::Lazy(Lazy::Map {
                    function: *function,
                    iterators,
                }))
            }
            ("filter", [function, it]) => {
                let none = self.none();
                let function = (!self.identical(*function, none)?).then_some(*function);
                let iterator = self.iterator(*it)?;
                self.push_val(Val::Lazy(Lazy::Filter { function, iterator }))
            }
            ("getattr" | "hasattr", [x, attribute, rest @ ..]) => {
                let attribute: String = self.concrete(*attribute)?.extract()?;
                match self.load_attr(*x, &attribute) {
                    Ok(v) if name == "getattr" => v,
                    Ok(_) => self.boolean(true),
                    Err(Problem::Python(err))
                        if err.is_instance_of::<pyo3::exceptions::PyAttributeError>(self.py) =>
                    {
                        if name == "hasattr" {
                            self.boolean(false)
                        } else if let Some(default) = rest.first() {
                            *default
                        } else {
                            return Err(Problem::Python(err));
                        }
                    }
                    Err(other) => return Err(other),
                }
            }
            ("sorted", [x]) => {
                let items = self.items_of(*x)?;
                let key = kwargs.iter().find(|(k, _)| k == "key").map(|(_, v)| *v);
                let reverse = match kwargs.iter().find(|(k, _)| k == "reverse") {
                    Some((_, r)) => self.truthy(*r)?,
                    None => false,
                };
                let sorted = self.sort_items(items, key, reverse)?;
                self.push_val(Val::List(sorted))
            }
            ("min" | "max", [first, rest @ ..]) => {
                let items = if rest.is_empty() {
                    self.items_of(*first)?
                } else {
                    args.to_vec()
                };
                let key = kwargs.iter().find(|(k, _)| k == "key").map(|(_, v)| *v);
                let default = kwargs.iter().find(|(k, _)| k == "default").map(|(_, d)| *d);
                if items.is_empty() {
                    match default {
                        Some(d) => d,
                        None => {
                            return Err(Problem::Python(pyo3::exceptions::PyValueError::new_err(format!(
                                "{name}() iterable argument is empty"
                            ))))
                        }
                    }
                } else {
                    let index: usize = self.order_by_keys(&items, key, &name, false, None)?.extract()?;
                    items[index]
                }
            }
            ("any" | "all", [x]) => {
                // Item by item: the first decisive one stops it (a generator is left there).
                let want = name == "any";
                let mut result = !want;
                let it = self.iterator(*x)?;
                while let Some(item) = self.advance(it)? {
                    if self.truthy(item)? == want {
                        result = want;
                        break;
                    }
                }
                self.boolean(result)
            }
            ("abs", [x]) if any_tensor => {
                let abs = self.builtin("abs")?;
                self.record(&abs, vec![*x], vec![])?
            }
            ("pow", [_, _]) if any_tensor => {
                let pow = self.ops.op("pow")?;
                self.record(&pow, args.to_vec(), vec![])?
            }
            (
                "float" | "int" | "bool" | "complex" | "str" | "repr" | "format" | "round" | "min" | "max"
                | "all" | "any" | "sorted" | "hash",
                _,
            ) if any_tensor => {
                return graph_break(format!("tensor to python: {name}() of a tensor (data-dependent)"));
            }
            ("bool", [x]) => {
                let truth = self.truthy(*x)?;
                self.boolean(truth)
            }
            ("super", []) => return unsupported("super() without its frame"),
            ("super", [class, receiver]) => {
                let class = self.concrete(*class)?;
                self.make_super(class, *receiver)?
            }
            (other, _) if PURE_BUILTINS.contains(&other) => {
                if let [x, rest @ ..] = args {
                    if let Some(result) = self.inline_builtin_method(other, *x, rest)? {
                        return Ok(Some(result));
                    }
                }
                self.folded_builtin_call(obj, other, args, kwargs)?
            }
            _ => return graph_break(format!("unsupported call: builtin {name}()")),
        };
        Ok(Some(result))
    }

    /// The builtin `name` called now, with arguments it computes the same with on every
    /// call passing the guards (else a break).
    fn folded_builtin_call(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: &str,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Vid> {
        let (positional, kw) = match self.pure_arguments(args, kwargs, name)? {
            Ok(arguments) => arguments,
            Err(refused) => return self.refuse_folding(&format!("builtin {name}()"), refused),
        };
        let result = obj.call(positional, Some(&kw))?;
        Ok(self.wrap_result(result))
    }

    /// Methods of immutable values (`"{}".format`, `str.join`) and pure modules' functions.
    fn call_bound_builtin(
        &mut self,
        obj: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let Ok(receiver) = obj.getattr("__self__") else {
            return self.call_unbound_builtin_method(obj, args, kwargs);
        };
        let tuple_new = self.builtin("tuple").is_ok_and(|tuple| tuple.is(&receiver))
            && obj.getattr("__name__").is_ok_and(|n| n.to_string() == "__new__");
        if let ([cls, items], true) = (args, tuple_new && kwargs.is_empty()) {
            // `tuple.__new__(cls, items)` (a namedtuple's `__new__`) of known values: made
            // now, as immutable as its items.
            let (Some(cls), Ok(items)) = (self.folded_argument(*cls, "")?, self.items_of(*items)) else {
                return Ok(None);
            };
            let mut values = Vec::with_capacity(items.len());
            for item in &items {
                if self.contains_tensor(*item) {
                    break;
                }
                match self.folded_argument(*item, "")? {
                    Some(value) if is_immutable(&value) => values.push(value),
                    _ => break,
                }
            }
            if values.len() == items.len() {
                let made = obj.call1((cls, PyTuple::new(self.py, values)?))?;
                return Ok(Some(self.constant(made)));
            }
            // Of values of the translation (tensors): a tuple subclass that acts as a tuple.
            if self.acts_as_a_tuple(&cls)? {
                return Ok(Some(self.push_val(Val::NamedTuple { class: cls, items })));
            }
            return Ok(None);
        }
        let from_keys = self.builtin("dict").is_ok_and(|dict| dict.is(&receiver))
            && obj.getattr("__name__").is_ok_and(|n| n.to_string() == "fromkeys");
        if from_keys && kwargs.is_empty() {
            // `dict.fromkeys(keys[, value])`: a dict the translation makes.
            let (keys, value) = match args {
                [keys] => (*keys, self.none()),
                [keys, value] => (*keys, *value),
                _ => return Ok(None),
            };
            let mut items = Vec::new();
            for key in self.items_of(keys)? {
                self.dict_set(&mut items, key, value)?;
            }
            return Ok(Some(self.push_val(Val::Dict(items))));
        }
        let pure_module = receiver
            .getattr("__name__")
            .ok()
            .and_then(|n| n.extract::<String>().ok())
            .is_some_and(|n| matches!(n.as_str(), "math" | "operator" | "cmath"))
            && receiver.is_instance(&self.ops.module_type)?;
        let immutable_receiver = is_immutable(&receiver) && !receiver.is_instance_of::<PyType>();
        if !(pure_module || immutable_receiver) {
            return Ok(None);
        }
        if args
            .iter()
            .chain(kwargs.iter().map(|(_, v)| v))
            .any(|a| self.contains_tensor(*a))
        {
            if pure_module && receiver.getattr("__name__")?.extract::<String>()? == "operator" {
                return Ok(Some(self.record(obj, args.to_vec(), kwargs.to_vec())?));
            }
            return graph_break(format!("tensor to python: {} of a tensor", qualname(obj)));
        }
        self.computed_now(obj, args, kwargs, receiver.is_instance_of::<PyString>())
    }

    /// The call `obj(*args, **kwargs)` of a builtin method on values, made now where every
    /// later call passing the guards computes the same (None where one may not). A `str`
    /// method formats its arguments (`"{}".format(x)`); others read them as values.
    fn computed_now(
        &mut self,
        obj: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
        of_str: bool,
    ) -> Res<Option<Vid>> {
        let reads = if of_str { "format" } else { "" };
        let Ok((positional, kw)) = self.pure_arguments(args, kwargs, reads)? else {
            return Ok(None);
        };
        let result = obj.call(positional, Some(&kw))?;
        Ok(Some(self.wrap_result(result)))
    }

    /// `str.split(text, ",")`: a method of an immutable builtin type called through its
    /// class, computed now as the bound call is (None for another callable).
    fn call_unbound_builtin_method(
        &mut self,
        obj: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        if !obj.is_instance(self.ops.c_method_types.as_any())? {
            return Ok(None);
        }
        let owner = obj.getattr("__objclass__")?;
        let immutable_type = ["str", "bytes", "int", "float", "complex", "tuple", "frozenset"]
            .iter()
            .any(|name| self.builtin(name).is_ok_and(|t| t.is(&owner)));
        if !immutable_type
            || args
                .iter()
                .chain(kwargs.iter().map(|(_, v)| v))
                .any(|a| self.contains_tensor(*a))
        {
            return Ok(None);
        }
        let of_str = self.builtin("str").is_ok_and(|t| t.is(&owner));
        self.computed_now(obj, args, kwargs, of_str)
    }

    /// The arguments of a call of `builtin` made while translating (its result then a
    /// constant), or the first one with which the call may compute otherwise on a later
    /// call passing the same guards (`computes_the_same_later`): it then runs in Python,
    /// each time. `callable()` looks at types only.
    fn pure_arguments(
        &mut self,
        args: &[Vid],
        kwargs: &[(String, Vid)],
        builtin: &str,
    ) -> Res<Result<CallArguments<'py>, Vid>> {
        self.arguments_now(args, kwargs, |vm, vid| vm.folded_argument(vid, builtin))
    }

    /// A call's arguments as `value_of` gives each now, or the first it gives none for.
    fn arguments_now(
        &mut self,
        args: &[Vid],
        kwargs: &[(String, Vid)],
        mut value_of: impl FnMut(&mut Self, Vid) -> Res<Option<Bound<'py, PyAny>>>,
    ) -> Res<Result<CallArguments<'py>, Vid>> {
        let mut positional = Vec::with_capacity(args.len());
        for arg in args {
            match value_of(self, *arg)? {
                Some(value) => positional.push(value),
                None => return Ok(Err(*arg)),
            }
        }
        let kw = PyDict::new(self.py);
        for (k, v) in kwargs {
            match value_of(self, *v)? {
                Some(value) => kw.set_item(k, value)?,
                None => return Ok(Err(*v)),
            }
        }
        Ok(Ok((PyTuple::new(self.py, positional)?, kw)))
    }

    /// The break where `what` (a builtin's call, an operator) cannot compute with `vid` now.
    fn refuse_folding<T>(&mut self, what: &str, vid: Vid) -> Res<T> {
        if self.backend.is_tensor(&self.concrete(vid)?) {
            return graph_break(format!("tensor to python: {what} of a tensor (data-dependent)"));
        }
        let class = self.type_of(vid)?;
        graph_break(format!(
            "{what} of a {} object (it may answer otherwise on a later call)",
            qualname(&class)
        ))
    }

    /// The value `builtin` computes with now, or None where it may compute otherwise on a
    /// later call. An exception the translation made or caught is its own (the generated
    /// code makes it again from the same arguments).
    fn folded_argument(&mut self, vid: Vid, builtin: &str) -> Res<Option<Bound<'py, PyAny>>> {
        let value = self.concrete(vid)?;
        let own_exception = matches!(self.val(vid), Val::Obj { source: None, .. })
            && value.is_instance_of::<pyo3::exceptions::PyBaseException>();
        let fixed = builtin == "callable"
            || own_exception
            || self.computes_the_same_later(&value, builtin, MAX_FOLDED_DEPTH)?;
        Ok(fixed.then_some(value))
    }

    /// Whether `builtin` computing with `obj` now gives what it gives on any later call
    /// that passes the guards: values, types, the backend's constants, builtin functions
    /// of no object, builtin containers of those, and instances whose methods for the
    /// builtin are `object`'s (which read the type and identity only). An iterator, a
    /// weak proxy, an object of any other C type, an instance with methods of its own
    /// may give another result under the same identity.
    fn computes_the_same_later(
        &self,
        obj: &Bound<'py, PyAny>,
        builtin: &str,
        depth: usize,
    ) -> PyResult<bool> {
        if is_immutable(obj) || self.backend.is_constant_operand(obj) || obj.is_exact_instance_of::<PyRange>()
        {
            return Ok(true);
        }
        if obj.is_exact_instance_of::<PyCFunction>() {
            // `len`, `math.sqrt`: of no object, or of a module.
            let receiver = obj.getattr("__self__")?;
            return Ok(receiver.is_none() || receiver.is_instance(&self.ops.module_type)?);
        }
        let sized_for_good =
            obj.is_exact_instance_of::<PyTuple>() || obj.is_exact_instance_of::<PyFrozenSet>();
        if builtin == "len" && sized_for_good {
            return Ok(true);
        }
        if depth == 0 {
            return Ok(false);
        }
        if let Ok(dict) = obj.cast_exact::<PyDict>() {
            for (key, value) in dict.iter() {
                if !self.computes_the_same_later(&key, builtin, depth - 1)?
                    || !self.computes_the_same_later(&value, builtin, depth - 1)?
                {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        if self.is_template(obj) {
            // Its strings, and the values of its interpolations.
            return self.computes_the_same_later(&obj.getattr("values")?, builtin, depth - 1);
        }
        if sized_for_good
            || obj.is_exact_instance_of::<PyList>()
            || obj.is_exact_instance_of::<pyo3::types::PySet>()
            || is_dict_view(obj)?
        {
            for item in obj.try_iter()? {
                if !self.computes_the_same_later(&item?, builtin, depth - 1)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        if is_heap_instance(obj)? && self.reads_an_immutable_base_only(obj, builtin)? {
            return Ok(true);
        }
        Ok(is_heap_instance(obj)?
            && !methods_of_builtin(builtin).is_empty()
            && self.own_builtin_method(obj, builtin)?.is_none())
    }

    /// Whether `obj`, an instance of a Python subclass of an immutable scalar type (an
    /// `IntEnum` member, a `str` subclass), runs for `builtin` only methods of that type or
    /// of `object`: they read its immutable value (or type and identity) only.
    fn reads_an_immutable_base_only(&self, obj: &Bound<'py, PyAny>, builtin: &str) -> PyResult<bool> {
        let methods = methods_of_builtin(builtin);
        if methods.is_empty() {
            return Ok(false);
        }
        let ty = obj.get_type().into_any();
        let object_methods = super::pyutil::builtin(self.py, "object")?.getattr("__dict__")?;
        for base_name in ["int", "float", "complex", "str", "bytes"] {
            let base = super::pyutil::builtin(self.py, base_name)?;
            if !obj.is_instance(&base)? {
                continue;
            }
            let base_methods = base.getattr("__dict__")?;
            for name in methods {
                let Some(found) = self.type_lookup(&ty, name)? else {
                    return Ok(false);
                };
                let inherited = |table: &Bound<'py, PyAny>| table.get_item(*name).is_ok_and(|m| m.is(&found));
                if !inherited(&base_methods) && !inherited(&object_methods) {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// The first of the methods `builtin` runs that the class of `obj` defines other than
    /// `object`'s, by name; None where every one is `object`'s.
    fn own_builtin_method(
        &self,
        obj: &Bound<'py, PyAny>,
        builtin: &str,
    ) -> PyResult<Option<(&'static str, Bound<'py, PyAny>)>> {
        let ty = obj.get_type().into_any();
        let object_methods = super::pyutil::builtin(self.py, "object")?.getattr("__dict__")?;
        for name in methods_of_builtin(builtin) {
            let found = self.type_lookup(&ty, name)?;
            let default = object_methods.get_item(*name).ok();
            match (found, default) {
                (Some(found), Some(default)) if found.is(&default) => continue,
                (Some(found), _) => return Ok(Some((name, found))),
                // `len()` of an object without `__len__` (CPython raises TypeError).
                (None, _) => return Ok(Some((name, self.ops.none.clone()))),
            }
        }
        Ok(None)
    }

    /// Whether instances of `cls`, a subclass of tuple, hold nothing beside their items and
    /// are read, compared and iterated by tuple's own methods (a namedtuple's class).
    fn acts_as_a_tuple(&self, cls: &Bound<'py, PyAny>) -> PyResult<bool> {
        let tuple = self.py.get_type::<PyTuple>().into_any();
        if !cls.is_instance_of::<PyType>()
            || !cls.cast::<PyType>()?.is_subclass(&tuple)?
            || has_instance_dict(cls)
        {
            return Ok(false);
        }
        for name in TUPLE_BEHAVIOUR {
            let same = match (self.type_lookup(cls, name)?, self.type_lookup(&tuple, name)?) {
                (Some(found), Some(own)) => found.is(&own),
                (found, own) => found.is_none() && own.is_none(),
            };
            if !same {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// An attribute of a namedtuple the translation made: a field (the class's
    /// `_tuplegetter`) is its item; a Python method is bound to it; a plain class
    /// attribute (`_fields`) or a classmethod is read from the class.
    fn named_tuple_attr(
        &mut self,
        owner: Vid,
        class: &Bound<'py, PyAny>,
        items: &[Vid],
        name: &str,
    ) -> Res<Vid> {
        let Some(found) = self.type_lookup(class, name)? else {
            return unsupported(format!(
                "attribute {name} of a {} the translation made",
                qualname(class)
            ));
        };
        if found.get_type().is(&self.ops.tuple_getter_type) {
            let index: usize = found
                .call_method0("__reduce__")?
                .get_item(1)?
                .get_item(0)?
                .extract()?;
            return items.get(index).copied().ok_or_else(|| {
                Problem::Python(pyo3::exceptions::PyIndexError::new_err(
                    "tuple index out of range",
                ))
            });
        }
        if found.is_instance(&self.ops.function_type)? {
            let function = self.constant(found);
            return Ok(self.push_val(Val::Method {
                function,
                receiver: owner,
            }));
        }
        let plain = !found.get_type().hasattr("__get__")?;
        if plain || found.is_instance(&self.ops.classmethod_type)? {
            return Ok(self.constant(class.getattr(name)?));
        }
        unsupported(format!(
            "attribute {name} of a {} the translation made",
            qualname(class)
        ))
    }

    /// `builtin(x, *rest)` (`repr`, `str`, `format`, `len`) where `x` holds an instance of
    /// a class written in Python whose method for it is Python code: that method inlined,
    /// as CPython calls it, since it may read state that changes under the same identity.
    /// None where the builtin may compute now; a break where the method is not Python.
    fn inline_builtin_method(&mut self, builtin: &str, x: Vid, rest: &[Vid]) -> Res<Option<Vid>> {
        let x = self.realize(x)?;
        let Val::Obj { obj, .. } = self.val(x) else {
            return Ok(None);
        };
        let obj = obj.clone();
        // A backend's constant value (a place, a dtype) computes as a value does.
        if is_immutable(&obj) || !is_heap_instance(&obj)? || self.backend.is_constant_value(&obj) {
            return Ok(None);
        }
        let Some((name, method)) = self.own_builtin_method(&obj, builtin)? else {
            return Ok(None);
        };
        let spec_is_empty = match rest.first() {
            Some(spec) => self
                .concrete(*spec)?
                .cast::<PyString>()
                .is_ok_and(|s| s.is_empty().unwrap_or(false)),
            None => true,
        };
        let simulated = matches!(builtin, "repr" | "str" | "format" | "len")
            && method.is_instance(&self.ops.function_type)?
            // `object.__format__` takes an empty spec only.
            && (name == "__format__" || spec_is_empty);
        if !simulated {
            return graph_break(format!(
                "builtin {builtin}() of a {} object (its {name} is not simulated)",
                qualname(&obj.get_type().into_any())
            ));
        }
        self.guard_type(x);
        let function = self.constant(method);
        let mut args = vec![x];
        if name == "__format__" {
            match rest.first() {
                Some(spec) => args.push(*spec),
                None => args.push(self.constant(PyString::new(self.py, "").into_any())),
            }
        }
        let result = self.call(function, args, vec![])?;
        // What CPython requires of the method's result (else it raises TypeError).
        let result = self.realize(result)?;
        let fits = match self.val(result) {
            Val::Obj { obj, .. } if builtin == "len" => {
                obj.is_exact_instance_of::<PyInt>() && obj.extract::<i64>().is_ok_and(|n| n >= 0)
            }
            Val::Obj { obj, .. } => obj.is_exact_instance_of::<PyString>(),
            _ => false,
        };
        if !fits {
            return graph_break(format!(
                "builtin {builtin}() of a {} object: its {name} gave a value CPython would check",
                qualname(&obj.get_type().into_any())
            ));
        }
        Ok(Some(result))
    }
}

impl<'py> Vm<'py, '_> {
    /// The stack slots `instr` takes and leaves, for the instructions a graph can
    /// break at and that the generated code then runs itself.
    pub fn native_effect(&self, instr: &Instruction) -> Option<(usize, usize)> {
        Some(match (instr.op, instr.arg) {
            (Op::Call, Arg::Call { argc, kw_names }) => (
                argc as usize + usize::from(kw_names) + self.callable_slots(Op::Call),
                1,
            ),
            (Op::CallMethod, Arg::Int(argc)) => (argc as usize + 2, 1),
            (Op::CallFunctionEx, arg) => {
                let oparg = if let Arg::Int(n) = arg { n } else { 0 };
                (
                    (1 - self.stack_effect("CALL_FUNCTION_EX", oparg, false).ok()?) as usize,
                    1,
                )
            }
            (
                Op::ToBool
                | Op::UnaryNot
                | Op::UnaryNegative
                | Op::UnaryPositive
                | Op::UnaryInvert
                | Op::FormatSimple
                | Op::ConvertValue
                | Op::GetIter
                | Op::LoadAttr,
                _,
            ) => (1, 1),
            (Op::BeforeWith | Op::SetupWith, _) => (1, 2),
            (Op::FormatValue, Arg::Int(flags)) => (1 + usize::from(flags & 4 != 0), 1),
            (Op::FormatWithSpec | Op::BinaryOp | Op::CompareOp | Op::ContainsOp | Op::IsOp, _) => (2, 1),
            (Op::BinarySlice, _) => (3, 1),
            (Op::UnpackSequence, Arg::Int(n)) => (1, n as usize),
            (Op::UnpackEx, Arg::Int(n)) => (1, (n & 0xff) as usize + (n >> 8) as usize + 1),
            (Op::RaiseVarargs, Arg::Int(n)) => (n as usize, 0),
            (Op::LoadBuildClass | Op::LoadCommonConstant, _) => (0, 1),
            (Op::ImportName, _) => (2, 1),
            (Op::ImportFrom, _) => (1, 2),
            (Op::GetLen, _) => (1, 2),
            (Op::StoreAttr, _) => (2, 0),
            (Op::DeleteAttr | Op::StoreGlobal, _) => (1, 0),
            (Op::StoreSubscr, _) => (3, 0),
            (Op::DeleteSubscr, _) => (2, 0),
            (Op::StoreSlice, _) => (4, 0),
            (Op::ListToTuple | Op::CallIntrinsic1, _) => (1, 1),
            (Op::CallIntrinsic2, _) => (2, 1),
            // These change a container deeper in the stack, which the generated code has.
            (
                Op::ListAppend | Op::SetAdd | Op::ListExtend | Op::SetUpdate | Op::DictUpdate | Op::DictMerge,
                _,
            ) => (1, 0),
            (Op::MapAdd, _) => (2, 0),
            (
                Op::BuildTuple | Op::BuildList | Op::BuildSet | Op::BuildString | Op::BuildSlice,
                Arg::Int(n),
            ) => (n as usize, 1),
            (Op::BuildMap, Arg::Int(n)) => (2 * n as usize, 1),
            (Op::BuildConstKeyMap, Arg::Int(n)) => (n as usize + 1, 1),
            // Both leave the subject (and the keys) as they found them, and what they push.
            (Op::MatchClass, _) => (3, (3 + self.stack_effect("MATCH_CLASS", 0, false).ok()?) as usize),
            (Op::MatchKeys, _) => (2, (2 + self.stack_effect("MATCH_KEYS", 0, false).ok()?) as usize),
            (Op::MakeFunction, arg) => {
                let oparg = if let Arg::Int(n) = arg { n } else { 0 };
                (
                    (1 - self.stack_effect("MAKE_FUNCTION", oparg, false).ok()?) as usize,
                    1,
                )
            }
            _ => return None,
        })
    }

    /// Whether `vid` is a constant of the translation or a value, or a tuple or list of
    /// those: nothing that another call's frame may hold another of.
    fn is_constant(&self, vid: Vid) -> bool {
        match self.val(vid) {
            Val::Obj { obj, source } => source.is_none() || is_value_type(obj),
            Val::Tuple(items) | Val::List(items) => items.iter().all(|i| self.is_constant(*i)),
            _ => false,
        }
    }

    /// Whether `vid` is the None constant.
    pub fn is_none(&self, vid: Vid) -> bool {
        matches!(&self.values[vid], Val::Obj { obj, .. } if obj.is(&self.ops.none))
    }

    /// Whether execution can go on after `instr` (a `raise` ends it).
    pub fn falls_through(&self, instr: &Instruction) -> bool {
        self.table
            .number(instr.op.name())
            .and_then(|number| self.table.op(number))
            .map_or(true, |info| !info.terminator)
    }

    /// The translated frame's globals.
    pub fn globals(&self) -> Option<Bound<'py, PyAny>> {
        self.top_globals.clone()
    }

    /// Each cell's contents, for the code generator.
    pub fn cell_contents(&self) -> Vec<Option<Vid>> {
        self.cells.clone()
    }

    pub fn first_line(&self) -> i32 {
        self.graph.nodes.first().map_or(self.location.0, |n| n.line)
    }
}
