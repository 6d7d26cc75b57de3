//! The symbolic VM: runs canonical instructions over symbolic values, with the
//! real values of the frame being translated at hand. Python values it depends
//! on are guarded where the dependence arises; tensor operations are recorded
//! into the graph (and run on example values, which stand for their meta);
//! user functions are inlined; what it cannot translate stops it with a reason.

mod arena;
mod assumptions;
mod attrs;
mod break_hints;
mod builtins;
mod calls;
mod concrete;
mod construct;
mod containers;
mod deepcopy;
mod exceptions;
mod getattr_static;
mod identities;
mod inline;
mod interp;
mod iterators;
pub(crate) mod kept;
mod layers;
mod library;
pub(crate) mod locks;
mod lru_cache;
mod matching;
mod names;
mod nested;
mod ops;
mod protocol;
mod record;
mod regions;
mod run;
mod signature;
mod snapshot;
mod strings;
pub(crate) mod summaries;
mod summary;
mod summary_log;
mod thread_locals;

use rustc_hash::{FxHashMap, FxHashSet};

use framehook_bytecode::canonical::{Arg, BinOp, Const, Instruction, Literal, Op};
use framehook_bytecode::table::{CallLayout, ExceptionModel};
use framehook_bytecode::Table;
use pyo3::exceptions::{PyAttributeError, PyRuntimeError, PyStopIteration, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyCFunction, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PyRange, PyString, PyTuple, PyType,
};

use super::backend::{Backend, CodeKind};
use super::cache::BreakHint;
use super::guard::check::{
    holds_values_only, is_immutable, is_match_of_a_value, is_mutable_container, is_value_type, regex_type,
    AbsentDefaults, Check, Pin, Regex, VALUE_NESTING,
};
use super::guard::source::{name_ref, Source, SourceId, SourceTable};
use super::guard::source::{Guard, GuardPositions, GuardUndo, Pins};
use super::kinds::{compare_made_objects, iterated_dict, kind_of, no_tensor_in, Interp};
use super::model::code::{
    is_resume_local, null_substitute, CodeInfo, LoopMembership, CO_COROUTINE_LIKE, CO_GENERATOR, CO_VARARGS,
    CO_VARKEYWORDS, FRAME_READERS, MAX_MADE_ITEMS, MAX_MODELED_ITEMS, MAX_NESTING,
};
use super::model::frame::{
    Block, BreakPoint, DictHistory, DictOp, Ending, Frame, FreeVariable, GeneratorState, SideEffect, Stop,
};
use super::model::graph::{Graph, GraphArg, Node, NodeKind};
use super::model::known::Known;
use super::model::problem::{graph_break, unsupported, Problem, Res};
use super::model::value::{Function, Lazy, Sym, Val, Vid};
use super::model::values::Values;
use super::pyutil::{
    builtin, has_attr, is_heap_instance, is_heap_type, is_lazy_import, is_plain_tuple, is_quiet_value,
    is_template, keeping_warnings, qualname, solid_base, type_name_in_messages,
};
use super::session::with_session;
use crate::hookapi::pyobject::{has_generic_getattro, import, imported, StrongRef};
pub use summary_log::SummaryScope;

/// The kinds of tensor a value holds (`Vm::tensor_kinds`).
#[derive(Default)]
struct TensorKinds {
    /// The backend's arrays (`Backend::is_array`).
    arrays: bool,
    /// Its other tensors.
    tensors: bool,
}

/// What sending None into an iterator gave (one step of `yield from`).
enum Sent {
    Yielded(Vid),
    Returned(Vid),
}

/// The most frames deep inlining goes before a call runs as a call (graph break).
const MAX_INLINE_DEPTH: usize = 24;
/// How deep a builtin's argument is looked into before computing with it while translating.
const MAX_FOLDED_DEPTH: usize = 16;
/// Instructions one translation simulates before its frame's next instruction (loops unroll,
/// calls inline): past it the graph breaks there, what it holds so far kept, so that
/// translating stays cheap next to running.
const MAX_STEPS: usize = 10_000;
/// Instructions the calls of one instruction of the translated frame may simulate: past it
/// the instruction is the break (its calls run as calls, each translated on its own). A
/// bound per instruction, not per translation, so that one long call does not waste what was
/// simulated of it: its callees would simulate it again.
const MAX_CALL_STEPS: usize = 10_000;

/// A generator's state, and a copy of it before a resumption.
type GeneratorResume<'py> = (
    std::rc::Rc<std::cell::RefCell<GeneratorState<'py>>>,
    GeneratorState<'py>,
);

pub struct Vm<'py, 'b> {
    py: Python<'py>,
    table: &'static Table,
    backend: &'b Backend<'py>,
    pub values: Values<'py>,
    cells: Vec<Option<Vid>>,
    pub sources: SourceTable,
    pub guards: Vec<Guard>,
    /// What each `add_guard` changed of `guards`, in order (a break's rollback undoes its
    /// instruction's).
    guard_journal: Vec<GuardUndo>,
    /// Guards a break rests on (a lazy import's placeholder, pinned until it resolves): made
    /// again after the breaking instruction's own guards are undone.
    break_guards: Vec<(SourceId, Check)>,
    pub graph: std::rc::Rc<Graph<'py>>,
    pub side_effects: Vec<SideEffect>,
    /// Values already made for a source (so that a source is one symbol).
    by_source: FxHashMap<SourceId, Vid>,
    /// Each source's object, as the translation first met it (`guard_identities`).
    sourced: Vec<(SourceId, Bound<'py, PyAny>)>,
    /// The frame's tensors that are graph inputs, by symbol (their other attributes are read
    /// from them, not from the examples, which are copies).
    input_tensors: FxHashMap<Sym, Bound<'py, PyAny>>,
    /// Attributes stored on (or, None, deleted from) objects from the frame, in order.
    stored_attrs: Vec<(usize, String, Option<Vid>)>,
    stored_globals: Vec<(String, Option<Vid>)>,
    /// Lists and dicts from the frame that were mutated: their symbolic copy, by the
    /// object's identity (one object may be reached from several sources).
    mutated: FxHashMap<usize, Vid>,
    /// The frame's dicts among them, by their copy: where the operations on a copy are
    /// replayed (`dict_op`).
    frame_dicts: FxHashMap<Vid, SourceId>,
    /// The dicts the translation made whose table is unlike a new dict's of their items,
    /// with how the generated code makes them (`dict_op`).
    pub dict_histories: FxHashMap<Vid, DictHistory>,
    depth: usize,
    ops: Known<'py>,
    /// What the generated code pushes for a call's NULL slot before 3.11 (a resume
    /// function translated reads it as the NULL it stands for).
    null_substitute: Option<Bound<'py, PyAny>>,
    /// The argument count of the top frame (its sources are its arguments).
    top_arguments: usize,
    top_freevars: usize,
    top_globals: Option<Bound<'py, PyAny>>,
    /// The line and file of the instruction being run, for recorded nodes.
    location: (i32, std::rc::Rc<str>),
    /// Real cell objects the translation reads, by identity, and their VM cells.
    cell_objects: FxHashMap<usize, usize>,
    /// The VM cells that are cells of inlined functions' closures, with their sources.
    outside_cells: FxHashMap<usize, SourceId>,
    /// Instructions simulated so far (see `MAX_STEPS`).
    steps: usize,
    /// `steps` when the translated frame's current instruction began, and its line (see
    /// `MAX_CALL_STEPS`).
    top_step_started: usize,
    top_location: (i32, std::rc::Rc<str>),
    /// Where a library call is being inlined: `steps` when its outermost call began (see
    /// `library::LIBRARY_BUDGET`).
    library_since: Option<usize>,
    /// Where the translated frame is inside the `with` block of a graph region it entered:
    /// `steps` when it entered it (see `regions::REGION_BUDGET`).
    region_since: Option<usize>,
    /// How deep `concrete` is in nested values.
    nesting: usize,
    /// The exceptions being handled, innermost last.
    exc_stack: Vec<Vid>,
    /// Values that are a handler's saved instruction offset (3.11+ `lasti`).
    lasti_values: FxHashSet<Vid>,
    /// Stack slots where an inlined comprehension (3.12+ `LOAD_FAST_AND_CLEAR`) saved a
    /// variable that was unbound: its end unbinds the variable again.
    cleared_unbound: FxHashSet<Vid>,
    /// Slots where `PUSH_EXC_INFO` saved the previous exception, and the exception it
    /// made current (what a resume function makes current again).
    exception_slots: FxHashMap<Vid, Vid>,
    /// What `except*` clauses left unhandled (CHECK_EG_MATCH's rest).
    unhandled_groups: FxHashSet<Vid>,
    /// Per value, the top frame's instruction that made it (`usize::MAX`: before the first).
    made_at: Vec<usize>,
    /// The exceptions raised in the translation whose chaining is decided (by address; see
    /// `chain_to_handled`).
    chained: FxHashSet<usize>,
    /// The exceptions a handler of the translation caught, by address: CPython gave them a
    /// traceback. Each with where the top frame raised it where that entry is all the
    /// traceback holds (an instruction of the top frame raised it, caught once, with
    /// exception tables): the generated code raises what it makes again there, for the same
    /// traceback; it can give no other exception one.
    pub caught_exceptions: FxHashMap<usize, Option<framehook_bytecode::Location>>,
    /// The exceptions some frame's handlers were looked up for, by address (the first
    /// frame to look raised it).
    seen_raised: FxHashSet<usize>,
    /// The top frame's instruction being simulated.
    top_pc: usize,
    /// Whether an operation's example warned while translating: the graph's run then would
    /// too, before the frame could run again at a failed assumption (none is made).
    pub examples_warned: bool,
    /// The loops of the frame whose instruction is being simulated, and that instruction:
    /// a branch inside a loop is not assumed (a loop on a tensor's value would be unrolled,
    /// and assumed to run as many times on every call). Asked only then.
    step_loops: Option<(std::sync::Arc<LoopMembership>, usize)>,
    /// Top-frame instructions the graph breaks before, so that they run natively: they made
    /// a value a previous attempt's generated code could not rebuild (what it was).
    pub break_before: FxHashMap<usize, String>,
    /// What `guards` pin by identity (`Pins`), read again when a guard changes in place or
    /// guards are undone.
    pins: Option<Pins>,
    /// Where each source's guards are in `guards` (`SourceTable::add_guard`).
    guard_positions: GuardPositions,
    /// The break going up inlined frames that each can resume where it stopped
    /// (`vm::nested`), and those frames once the top frame breaks at their call.
    nested: Option<kept::NestedBreak<'py>>,
    nested_frames: Option<Vec<kept::InlinedPoint<'py>>>,
    /// `copy.deepcopy`, once looked up (`Vm::modeled_deepcopy`).
    deepcopy: std::cell::OnceCell<Option<Bound<'py, PyAny>>>,
    /// `inspect.getattr_static`, once looked up where `inspect` is imported
    /// (`Vm::modeled_getattr_static`).
    getattr_static: std::cell::OnceCell<Option<Bound<'py, PyAny>>>,
    /// `inspect.signature`, once looked up where `inspect` is imported
    /// (`Vm::modeled_signature`).
    inspect_signature: std::cell::OnceCell<Option<Bound<'py, PyAny>>>,
    /// Per top-frame instruction, the state before its first run (`Vm::rewind`).
    first_visits: FxHashMap<usize, Box<kept::FirstVisit<'py>>>,
    /// The top frame's instructions, and which lie in a loop.
    top_code: Option<kept::TopCode>,
    /// The generators resumed so far, in order, each with its state before (a generator's
    /// state moves in place, shared by the snapshots: `Snapshot::restore` puts it back).
    generator_resumes: Vec<GeneratorResume<'py>>,
    /// The functions that read their caller's frame (`FRAME_READERS`), as read.
    frame_readers: std::cell::RefCell<Vec<Option<Bound<'py, PyAny>>>>,
    /// Top-frame instructions a translation of a caller saw break (`cache::BreakHint`).
    pub break_hints: FxHashMap<usize, BreakHint>,
    /// The top frame's instructions that entered a graph region which then broke inside,
    /// with the break's reason (`cache::RegionBreak`).
    pub region_breaks: Vec<(usize, String)>,
    /// Breaks seen in inlined frames, for their codes' translations.
    pub seen_breaks: Vec<SeenBreak<'py>>,
    /// The last break a bound on this translation made, and when (`steps`).
    break_bound: Option<(BreakBound, usize)>,
    /// Whose library call summaries the translation uses and adds to (`summaries`).
    pub summary_scope: Option<SummaryScope>,
    /// The calls being simulated for summaries, outermost first (`summaries`).
    recording: Vec<summary_log::SummaryLog>,
    /// The guards of the summaries used, checked on the frame before the translation is.
    replayed: Vec<Guard>,
    /// Library calls given by a summary instead of simulated.
    pub summaries_replayed: usize,
    /// The summaries replayed since the last snapshot went back to (`summary::Replays`).
    replays: summary::Replays,
    /// The list a resume function is handed its values in (by address): its prologue
    /// empties it, which no code of the user's sees.
    pub resume_box: Option<usize>,
}

/// Why a break is not the inlined code's own: a bound on the translation inlining it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum BreakBound {
    /// Inlining depth or instructions simulated: another caller would not break there.
    Translation,
    /// A library call's budget: the outermost library call is where it breaks, whoever
    /// inlines its caller.
    Library,
}

/// A break seen in an inlined frame: its code, and the hint for that code.
pub struct SeenBreak<'py> {
    pub code: Bound<'py, PyAny>,
    pub pc: usize,
    pub reason: String,
    pub line: i32,
    pub filename: String,
}

impl SeenBreak<'_> {
    pub fn hint(self, session: u64, epoch: u64) -> BreakHint {
        BreakHint {
            session,
            epoch,
            pc: self.pc,
            reason: self.reason,
            line: self.line,
            filename: self.filename,
        }
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
    Ok(ty
        .getattr(pyo3::intern!(ty.py(), "__module__"))?
        .extract::<String>()?
        == "builtins"
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

impl<'py, 'b> Vm<'py, 'b> {
    /// The graph, to change: copied first where a snapshot shares it (the VM takes one
    /// before each instruction of the translated frame, and most record nothing).
    pub(super) fn graph_mut(&mut self) -> &mut Graph<'py> {
        std::rc::Rc::make_mut(&mut self.graph)
    }

    /// The cells of closures of functions the translation did not make, with their sources.
    pub fn outside_cells(&self) -> &FxHashMap<usize, SourceId> {
        &self.outside_cells
    }

    /// Instructions simulated so far.
    pub fn steps(&self) -> usize {
        self.steps
    }

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
            values: Values::default(),
            cells: Vec::new(),
            sources,
            guards: Vec::new(),
            guard_journal: Vec::new(),
            break_guards: Vec::new(),
            graph: std::rc::Rc::default(),
            side_effects: Vec::new(),
            by_source: Default::default(),
            sourced: Vec::new(),
            input_tensors: FxHashMap::default(),
            stored_attrs: Vec::new(),
            stored_globals: Vec::new(),
            mutated: FxHashMap::default(),
            frame_dicts: FxHashMap::default(),
            dict_histories: FxHashMap::default(),
            depth: 0,
            ops: Known::new(py)?,
            null_substitute: null_substitute(table, py)?,
            top_arguments: 0,
            top_freevars: 0,
            top_globals: None,
            location: (-1, "".into()),
            exc_stack: Vec::new(),
            cell_objects: FxHashMap::default(),
            outside_cells: FxHashMap::default(),
            steps: 0,
            top_step_started: 0,
            top_location: (-1, "".into()),
            library_since: None,
            region_since: None,
            nesting: 0,
            lasti_values: FxHashSet::default(),
            cleared_unbound: FxHashSet::default(),
            exception_slots: FxHashMap::default(),
            unhandled_groups: FxHashSet::default(),
            made_at: Vec::new(),
            chained: FxHashSet::default(),
            caught_exceptions: FxHashMap::default(),
            seen_raised: FxHashSet::default(),
            top_pc: usize::MAX,
            examples_warned: false,
            step_loops: None,
            break_before: FxHashMap::default(),
            break_hints: FxHashMap::default(),
            region_breaks: Vec::new(),
            frame_readers: Default::default(),
            guard_positions: Default::default(),
            nested: None,
            nested_frames: None,
            deepcopy: std::cell::OnceCell::new(),
            getattr_static: std::cell::OnceCell::new(),
            inspect_signature: std::cell::OnceCell::new(),
            first_visits: FxHashMap::default(),
            top_code: None,
            generator_resumes: Vec::new(),
            pins: None,
            seen_breaks: Vec::new(),
            break_bound: None,
            summary_scope: None,
            recording: Vec::new(),
            replayed: Vec::new(),
            summaries_replayed: 0,
            replays: Default::default(),
            resume_box: None,
        })
    }
}

/// Whether the class's instances have a `__dict__` (else only their slots).
fn has_instance_dict(class: &Bound<'_, PyAny>) -> bool {
    class
        .getattr(pyo3::intern!(class.py(), "__dictoffset__"))
        .and_then(|d| d.extract::<isize>())
        .unwrap_or(0)
        != 0
}

/// A C function bound to a class (a classmethod written in C, as `PyLayer.apply`).
fn is_class_bound_builtin(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(obj.is_instance_of::<pyo3::types::PyCFunction>()
        && obj
            .getattr(pyo3::intern!(obj.py(), "__self__"))
            .is_ok_and(|owner| owner.is_instance_of::<PyType>()))
}
