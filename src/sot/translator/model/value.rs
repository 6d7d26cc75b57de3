//! The symbolic values the VM computes with.

use pyo3::prelude::*;

use super::frame::GeneratorState;
pub use super::{Sym, Vid};
use crate::sot::translator::guard::source::SourceId;

#[derive(Clone)]
pub enum Val<'py> {
    /// The NULL slot of a call, or an unbound variable.
    Null,
    /// A known Python object. With a source, it came from the frame and is guarded
    /// when the translation depends on it; without one, it is a constant of the
    /// translation (immutable, or an object the guards pin).
    Obj {
        obj: Bound<'py, PyAny>,
        source: Option<SourceId>,
    },
    /// A tensor of the graph, with the value it had while translating.
    Tensor {
        sym: Sym,
        example: Bound<'py, PyAny>,
    },
    /// A Python number of the graph, computed from numbers that change between calls
    /// (dynamic sources), with the value it had while translating. Used as anything but an
    /// arithmetic operand, it is specialized: `deps` are guarded on their values.
    Scalar {
        sym: Sym,
        example: Bound<'py, PyAny>,
        deps: Vec<(SourceId, Bound<'py, PyAny>)>,
    },
    Tuple(Vec<Vid>),
    /// An instance of a tuple subclass whose items and behaviour are the tuple's (a
    /// namedtuple), made by the translated code from values of the translation.
    NamedTuple {
        class: Bound<'py, PyAny>,
        items: Vec<Vid>,
    },
    /// An object the backend made while translating (`backend.construct`) from arguments
    /// the translation knows: the generated code makes it again from the same ones.
    Constructed {
        obj: Bound<'py, PyAny>,
        class: Vid,
        args: Vid,
        kwargs: Vid,
    },
    /// A list made by the translated code (lists from the frame are `Obj`s until mutated).
    List(Vec<Vid>),
    Dict(Vec<(Vid, Vid)>),
    Set(Vec<Vid>),
    /// A set the translation made and then popped from (`set.pop()`): the items left.
    /// CPython leaves a dummy where a popped item was and moves the set's search finger, so
    /// what a later pop gives and where later items go are not those of a set made of the
    /// items left: only its type, length, truth and `in` are modeled, and nothing rebuilds it.
    PoppedSet(Vec<Vid>),
    /// The `__dict__` of an object (`Val::Object`, of a class without slots) or a function
    /// (`Val::Function`) the translation made: a view of the attributes stored in it.
    AttrDict(Vid),
    Slice(Vid, Vid, Vid),
    /// A Python function the VM inlines when called (made by the translated code, or a
    /// real function object).
    Function(Box<Function<'py>>),
    /// `functools.partial(function, *args, **keywords)` the translated code made: a call
    /// of it calls `function` with `args` first and `keywords` under the call's own.
    Partial {
        function: Vid,
        args: Vec<Vid>,
        keywords: Vec<(String, Vid)>,
    },
    /// `self.method`: a function with its first argument.
    Method {
        function: Vid,
        receiver: Vid,
    },
    /// A method of a tensor, `x.sum`: calling it is an operation.
    TensorMethod {
        tensor: Vid,
        name: String,
    },
    /// An attribute of a tensor the graph makes that is neither a tensor nor a method
    /// (`x.flags`), at `path` from it: its own attributes are read by the graph.
    TensorPart {
        tensor: Vid,
        path: String,
    },
    /// A method of a list, dict, set, tuple or generator the translated code made.
    ContainerMethod {
        container: Vid,
        name: String,
    },
    /// A generator the translated code made (a generator function called), run a step at
    /// a time as it is iterated.
    Generator(std::rc::Rc<std::cell::RefCell<GeneratorState<'py>>>),
    /// `d.keys()`, `d.values()` or `d.items()`: a live view of `dict` (a dict the
    /// translation made, or one from the frame).
    DictView {
        dict: Vid,
        part: DictPart,
    },
    /// An iterator over a dict or one of its views: it reads the dict's entries as it goes
    /// and fails where CPython's would.
    DictIter(DictIter),
    /// An iterator over values known while translating. `of_tuple`: CPython's iterator
    /// there is a tuple's, which the generated code makes again where it is used as a
    /// value; another (a str's, a set's, `reversed`) it cannot: the translation breaks where
    /// it was made.
    Iter {
        items: Vec<Vid>,
        next: usize,
        of_tuple: bool,
    },
    /// `iter(a_list)`: as CPython's list iterator, it indexes the live list, so it sees the
    /// list's later changes; `next` is None once exhausted (it then stays exhausted).
    /// `frame`: the source of a list iterator from the frame this one is, which the
    /// generated code leaves where the translation left this one (and passes on as itself).
    ListIter {
        list: Vid,
        next: Option<usize>,
        frame: Option<SourceId>,
    },
    /// `zip()`, `enumerate()`, `map()` or `filter()` of the translation's iterators: each
    /// step pulls them as CPython's does (a generator runs only as far as it is pulled, a
    /// list is read live).
    Lazy(Lazy),
    /// A cell of a closure.
    Cell(usize),
    /// An instance of a Python class the translated code made, with its attributes.
    Object {
        class: Bound<'py, PyAny>,
        attrs: Vec<(String, Vid)>,
    },
    /// A t-string's `Interpolation` (3.14) holding a value only the graph has: its
    /// `(value, expression, conversion, format_spec)`.
    Interpolation([Vid; 4]),
    /// A t-string's `Template` (3.14) made with such interpolations: its strings and
    /// interpolations, alternating (one more string than interpolations).
    Template(Vec<Vid>),
    /// `super()` bound to a class and an object.
    Super {
        class: Bound<'py, PyAny>,
        receiver: Vid,
    },
}

/// What a dict view shows, and its iterator yields: named as the dict's method.
/// A lazy iterator builtin over iterators (`Val::Iter`, `Val::ListIter`...).
#[derive(Clone, PartialEq, Eq)]
pub enum Lazy {
    /// `iter(range(...))` (bounds within i64): its next value, stop and step.
    Range { next: i64, stop: i64, step: i64 },
    /// `zip(*iterators)`: a tuple of one item of each, in order, until one is exhausted.
    Zip(Vec<Vid>),
    /// `enumerate(iterator, start)`: `(count, item)`.
    Enumerate { iterator: Vid, count: i64 },
    /// `map(function, *iterators)`.
    Map { function: Vid, iterators: Vec<Vid> },
    /// `filter(function, iterator)`; without a function (None), the true items.
    Filter { function: Option<Vid>, iterator: Vid },
    /// `itertools.dropwhile(predicate, iterator)`: the items from the first the predicate
    /// is false for (`dropping` until then).
    DropWhile {
        predicate: Vid,
        iterator: Vid,
        dropping: bool,
    },
    /// `itertools.islice(iterator, start, stop, step)`: of the items counted from its start
    /// (`count` taken so far), item `next`, then every `step`th before `stop`; `done` once it
    /// ended (CPython's then lets go of its iterator and yields nothing more).
    ISlice {
        iterator: Vid,
        count: i64,
        next: i64,
        stop: Option<i64>,
        step: i64,
        done: bool,
    },
    /// `itertools.takewhile(predicate, iterator)`: the items up to the first the predicate
    /// is false for, which ends it (`done`).
    TakeWhile {
        predicate: Vid,
        iterator: Vid,
        done: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DictPart {
    Keys,
    Values,
    Items,
}

impl DictPart {
    pub fn method(self) -> &'static str {
        match self {
            DictPart::Keys => "keys",
            DictPart::Values => "values",
            DictPart::Items => "items",
        }
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct DictIter {
    /// The dict the translation made, or a frame dict's copy.
    pub dict: Vid,
    /// The frame dict `dict` copies, whose mutable copy (once made) is iterated instead.
    pub frame_dict: Option<Vid>,
    pub part: DictPart,
    /// The dict's size when the iteration began.
    pub size: usize,
    pub next: usize,
    /// A key was removed from the dict since the iteration began: where its size is the
    /// same again, CPython's result depends on its hash table's layout.
    pub keys_removed: bool,
    pub status: DictIterStatus,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DictIterStatus {
    Running,
    /// The dict changed size: every later step raises again, as CPython's does.
    SizeChanged,
    Exhausted,
}

#[derive(Clone)]
pub struct Function<'py> {
    pub code: Bound<'py, PyAny>,
    pub globals: Bound<'py, PyAny>,
    pub name: String,
    pub qualname: String,
    pub defaults: Vec<Vid>,
    pub kwdefaults: Vec<(String, Vid)>,
    /// Cells of the closure, as the VM's cell indices.
    pub closure: Vec<usize>,
    /// `__annotations__` as a dict value (MAKE_FUNCTION's tuple of pairs made a dict).
    pub annotations: Option<Vid>,
    /// `__annotate__` (3.14, PEP 649): the function computing the annotations.
    pub annotate: Option<Vid>,
    /// The function object, when it exists outside the translation.
    pub object: Option<Bound<'py, PyAny>>,
    /// Attributes the translated code stored in a function it made (`functools.wraps`):
    /// its `__module__`, `__doc__` and `__type_params__` (fields of the function) and its
    /// `__dict__`'s items, in the order first stored.
    pub stored: Vec<(String, Vid)>,
}

/// Stores `name` among `entries` as a dict stores a key: one stored again keeps its place
/// (an object's or function's `__dict__`, a call's keywords).
pub fn store_named(entries: &mut Vec<(String, Vid)>, name: String, value: Vid) {
    match entries.iter_mut().find(|(stored, _)| *stored == name) {
        Some(entry) => entry.1 = value,
        None => entries.push((name, value)),
    }
}

/// A function's attributes CPython keeps in the function itself, not in its `__dict__`
/// (those stored among `Function::stored`; `__type_params__` from 3.12).
pub const FUNCTION_FIELDS: [&str; 3] = ["__module__", "__doc__", "__type_params__"];

impl<'py> Val<'py> {
    pub fn constant(obj: Bound<'py, PyAny>) -> Self {
        Val::Obj { obj, source: None }
    }
}
