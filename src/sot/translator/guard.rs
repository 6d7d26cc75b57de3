//! Where a value came from (its source) and what a translation assumed about it
//! (its guards). Sources form a tree rooted at the frame's arguments, free
//! variables, globals and builtins; guards are leaves on them. A code object's
//! cache entries share one source table, so a lookup fetches each source at
//! most once, straight from the frame (no locals dict, no Python callable per
//! guard).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyString, PyTuple, PyWeakrefMethods, PyWeakrefReference};

use crate::hookapi::pyobject::StrongRef;
use crate::hookapi::rust_hook::HookContext;

pub type SourceId = usize;

/// How to fetch a value from a frame about to run.
pub enum Source {
    /// An argument, by its `co_varnames` index.
    Argument(usize),
    /// A free variable's contents, by its `co_freevars` index.
    Free(usize),
    Global(StrongRef),
    /// A builtin that no global of the same name shadows.
    Builtin(StrongRef),
    Attr(SourceId, StrongRef),
    Item(SourceId, StrongRef),
    /// An object the translation holds because it has no other way to it: the globals of
    /// another module's function reached without a source, a cell of such a function.
    Held(StrongRef),
    /// What the source's function returns, called with no arguments: one of the backend's
    /// `guarded_functions`, which read the process's state (the current device).
    Called(SourceId),
}

impl Source {
    fn same(&self, other: &Source) -> bool {
        match (self, other) {
            (Source::Argument(a), Source::Argument(b)) | (Source::Free(a), Source::Free(b)) => a == b,
            (Source::Global(a), Source::Global(b)) | (Source::Builtin(a), Source::Builtin(b)) => {
                same_key(a, b)
            }
            (Source::Attr(p, a), Source::Attr(q, b)) | (Source::Item(p, a), Source::Item(q, b)) => {
                p == q && same_key(a, b)
            }
            (Source::Held(a), Source::Held(b)) => a.as_ptr() == b.as_ptr(),
            (Source::Called(a), Source::Called(b)) => a == b,
            _ => false,
        }
    }

    fn clone_ref(&self, py: Python<'_>) -> Source {
        match self {
            Source::Argument(i) => Source::Argument(*i),
            Source::Free(i) => Source::Free(*i),
            Source::Global(n) => Source::Global(n.clone_ref(py)),
            Source::Builtin(n) => Source::Builtin(n.clone_ref(py)),
            Source::Attr(p, n) => Source::Attr(*p, n.clone_ref(py)),
            Source::Item(p, k) => Source::Item(*p, k.clone_ref(py)),
            Source::Held(g) => Source::Held(g.clone_ref(py)),
            Source::Called(p) => Source::Called(*p),
        }
    }
}

/// Names and keys are compared by value (interned strings are the common case).
fn same_key(a: &StrongRef, b: &StrongRef) -> bool {
    if a.as_ptr() == b.as_ptr() {
        return true;
    }
    // SAFETY: both are live objects; the comparison runs attached (translation time).
    let equal = unsafe {
        ffi::Py_TYPE(a.as_ptr()) == ffi::Py_TYPE(b.as_ptr())
            && ffi::PyObject_RichCompareBool(a.as_ptr(), b.as_ptr(), ffi::Py_EQ) == 1
    };
    // SAFETY: attached; a failed comparison counts as different.
    unsafe { ffi::PyErr_Clear() };
    equal
}

/// The object an identity guard pins: weakly where it takes weak references, so that a
/// translation does not keep alive what the frame drops (a weak reference or a finalizer
/// sees it die as without hooks), and the guard fails once it died, even for another
/// object at its address.
pub enum Pin {
    Strong(StrongRef),
    Weak { reference: StrongRef, address: usize },
}

impl Pin {
    pub fn new(object: &Bound<'_, PyAny>) -> Pin {
        match PyWeakrefReference::new(object) {
            Ok(reference) => Pin::Weak {
                reference: StrongRef::from_owned(reference.into_any()),
                address: object.as_ptr() as usize,
            },
            // Not weakly referenceable (ints, tuples, builtin functions): held.
            Err(_) => Pin::Strong(StrongRef::new(object)),
        }
    }

    pub fn address(&self) -> usize {
        match self {
            Pin::Strong(object) => object.as_ptr() as usize,
            Pin::Weak { address, .. } => *address,
        }
    }

    /// The pinned object, while it lives.
    pub fn object<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        match self {
            Pin::Strong(object) => Some(object.bind(py)),
            Pin::Weak { reference, .. } => reference
                .bind(py)
                .cast_into::<PyWeakrefReference>()
                .ok()
                .and_then(|reference| reference.upgrade()),
        }
    }

    /// The pinned object, while it lives (translation time: the thread is attached).
    fn strong(&self) -> Option<StrongRef> {
        Python::attach(|py| self.object(py).map(|o| StrongRef::new(&o)))
    }

    /// Whether `value` is the pinned object (a weakly pinned one only while it lives).
    fn holds(&self, value: &Bound<'_, PyAny>) -> bool {
        value.as_ptr() as usize == self.address()
            && match self {
                Pin::Strong(_) => true,
                Pin::Weak { .. } => self.object(value.py()).is_some_and(|o| o.is(value)),
            }
    }
}

/// What a guard checks of its source's value.
pub enum Check {
    /// `type(value) is T`.
    Type(StrongRef),
    /// `value is O`.
    Id(Pin),
    /// `type(value) is type(V) and value == V`.
    Equals(StrongRef),
    /// The same, V a constant value of the backend (a dtype, a place), compared by its own
    /// `==` (it holds no Python values to compare).
    SameValue(StrongRef),
    /// `len(value) == n` (the type is guarded apart).
    Len(usize),
    /// `type(value) is dict and tuple(value) == K`: a dict's keys, in order.
    Keys(StrongRef),
    /// `type(value) is T and tuple(value) == K`, T `collections.OrderedDict` (a layer's
    /// table of sublayers): its keys, in its own order.
    OrderedKeys { ty: StrongRef, keys: StrongRef },
    /// A tensor: `type(value) is T`, then each of the backend's meta attributes
    /// equal to what the translation saw.
    Tensor {
        ty: StrongRef,
        attributes: Vec<(StrongRef, StrongRef)>,
    },
    /// The source holds nothing (a global that is not defined, a missing key).
    Absent,
    /// The source holds something (a key that is present).
    Present,
}

impl Check {
    pub fn describe(&self, py: Python<'_>) -> String {
        // A tensor's meta attributes are the backend's (a dtype, a shape): their own repr.
        let repr = |o: &StrongRef| {
            o.bind(py)
                .repr()
                .map_or_else(|_| "?".to_owned(), |r| r.to_string())
        };
        let value = |o: &StrongRef| describe_value(&o.bind(py), DESCRIBED_DEPTH);
        let type_name = |o: &StrongRef| {
            o.bind(py)
                .getattr("__qualname__")
                .map_or_else(|_| "?".to_owned(), |n| n.to_string())
        };
        match self {
            Check::Type(t) => format!("type is {}", type_name(t)),
            Check::Id(pin) => match pin.object(py) {
                Some(o) => format!("is {}", truncate(&describe_value(&o, DESCRIBED_DEPTH))),
                None => "is <an object that died>".to_owned(),
            },
            Check::Equals(v) | Check::SameValue(v) => format!("== {}", truncate(&value(v))),
            Check::Len(n) => format!("len == {n}"),
            Check::Keys(k) | Check::OrderedKeys { keys: k, .. } => format!("keys == {}", truncate(&value(k))),
            Check::Tensor { ty, attributes } => {
                let attrs: Vec<String> = attributes
                    .iter()
                    .map(|(name, value)| format!("{}={}", name.bind(py), repr(value)))
                    .collect();
                format!("tensor {} {}", type_name(ty), attrs.join(" "))
            }
            Check::Absent => "is absent".to_owned(),
            Check::Present => "is present".to_owned(),
        }
    }

    fn same(&self, other: &Check) -> bool {
        match (self, other) {
            (Check::Type(a), Check::Type(b)) => a.as_ptr() == b.as_ptr(),
            (Check::Id(a), Check::Id(b)) => a.address() == b.address(),
            (Check::Equals(a), Check::Equals(b))
            | (Check::SameValue(a), Check::SameValue(b))
            | (Check::Keys(a), Check::Keys(b)) => same_key(a, b),
            (Check::OrderedKeys { ty: t, keys: a }, Check::OrderedKeys { ty: u, keys: b }) => {
                t.as_ptr() == u.as_ptr() && same_key(a, b)
            }
            (Check::Len(a), Check::Len(b)) => a == b,
            (Check::Absent, Check::Absent) | (Check::Present, Check::Present) => true,
            _ => false,
        }
    }

    /// Whether every value this check passes also passes `other`, for any state of the
    /// objects (so `other` on the same source adds nothing).
    fn implies(&self, other: &Check) -> bool {
        if self.same(other) {
            return true;
        }
        match (self, other) {
            // `x is O` fixes `type(x)` only where `O.__class__` cannot be assigned.
            (Check::Id(pin), Check::Type(t)) => pin
                .strong()
                .is_some_and(|o| type_of(&o) == t.as_ptr() && class_is_fixed(&o)),
            // ... and `len(x)` only where O cannot change size.
            (Check::Id(pin), Check::Len(n)) => pin
                .strong()
                .is_some_and(|o| is_immutable_sized(&o) && len_of(&o) == Some(*n)),
            // Equals checks the type first (`x is V` also passes it: V's class is fixed).
            (Check::Equals(v), Check::Type(t)) => type_of(v) == t.as_ptr() && class_is_fixed(v),
            // Equal builtin sequences, mappings and sets have equal lengths.
            (Check::Equals(v), Check::Len(n)) => is_builtin_sized(v) && len_of(v) == Some(*n),
            (Check::Keys(_), Check::Type(t)) => t.as_ptr() == std::ptr::addr_of_mut!(ffi::PyDict_Type).cast(),
            (Check::Keys(keys) | Check::OrderedKeys { keys, .. }, Check::Len(n)) => len_of(keys) == Some(*n),
            (Check::OrderedKeys { ty, .. }, Check::Type(t)) => ty.as_ptr() == t.as_ptr(),
            (Check::Tensor { ty, .. }, Check::Type(t)) => ty.as_ptr() == t.as_ptr(),
            _ => false,
        }
    }
}

fn type_of(o: &StrongRef) -> *mut ffi::PyObject {
    // SAFETY: a live object's type.
    unsafe { ffi::Py_TYPE(o.as_ptr()).cast() }
}

/// Whether `o.__class__ = C` always fails: CPython assigns `__class__` only between heap
/// (3.10+: mutable) types or between module types; static types are neither.
fn class_is_fixed(o: &StrongRef) -> bool {
    // SAFETY: a live object and its type; reading flags only.
    unsafe {
        let ty = ffi::Py_TYPE(o.as_ptr());
        ffi::PyType_GetFlags(ty) & ffi::Py_TPFLAGS_HEAPTYPE == 0
            && ffi::PyType_IsSubtype(ty, std::ptr::addr_of_mut!(ffi::PyModule_Type)) == 0
    }
}

/// Exact tuples, strings, bytes and frozensets: their length is fixed.
fn is_immutable_sized(o: &StrongRef) -> bool {
    // SAFETY: live objects; exact type checks only.
    unsafe {
        let o = o.as_ptr();
        ffi::PyTuple_CheckExact(o) != 0
            || ffi::PyUnicode_CheckExact(o) != 0
            || ffi::PyBytes_CheckExact(o) != 0
            || ffi::PyFrozenSet_CheckExact(o) != 0
    }
}

/// Builtin containers whose `==` compares lengths (no `__len__` of a subclass).
fn is_builtin_sized(o: &StrongRef) -> bool {
    // SAFETY: live objects; exact type checks only.
    is_immutable_sized(o)
        || unsafe {
            let o = o.as_ptr();
            ffi::PyList_CheckExact(o) != 0
                || ffi::PyDict_CheckExact(o) != 0
                || ffi::PyAnySet_CheckExact(o) != 0
        }
}

fn len_of(o: &StrongRef) -> Option<usize> {
    // SAFETY: a live object of a builtin type (the callers check it); an error is cleared.
    let len = unsafe { ffi::PyObject_Size(o.as_ptr()) };
    if len < 0 {
        // SAFETY: attached (translation time).
        unsafe { ffi::PyErr_Clear() };
        return None;
    }
    Some(len as usize)
}

/// How deep `describe_value` goes into containers, and how many items of each it shows.
const DESCRIBED_DEPTH: usize = 3;
const DESCRIBED_ITEMS: usize = 8;

/// A guarded value as `explain` shows it, without running any code of the value's own:
/// a `__repr__` written in Python may have side effects (a list that grows as it is
/// shown never ends), and a large container's repr costs its size. Numbers, strings,
/// classes, modules, functions and code by their repr (CPython's own, of the type
/// only); the builtin containers item by item, to a few; anything else by its type.
fn describe_value(obj: &Bound<'_, PyAny>, depth: usize) -> String {
    use pyo3::types::{
        PyBool, PyBytes, PyCFunction, PyCode, PyComplex, PyFrozenSet, PyFunction, PyList, PyModule, PySet,
        PyType,
    };
    let own_repr = || obj.repr().map_or_else(|_| "?".to_owned(), |r| r.to_string());
    let qualname = |ty: &Bound<'_, PyAny>| {
        ty.getattr("__qualname__")
            .map_or_else(|_| "?".to_owned(), |n| n.to_string())
    };
    if obj.is_none()
        || obj.is_exact_instance_of::<PyBool>()
        || obj.is_exact_instance_of::<PyFloat>()
        || obj.is_exact_instance_of::<PyComplex>()
        || obj.is_exact_instance_of::<PyFunction>()
        || obj.is_exact_instance_of::<PyCFunction>()
        || obj.is_exact_instance_of::<PyCode>()
    {
        return own_repr();
    }
    if obj.is_exact_instance_of::<PyInt>() {
        // Past CPython's digit limit an int has no repr.
        return obj
            .repr()
            .map_or_else(|_| "<a large int>".to_owned(), |r| r.to_string());
    }
    if obj.is_exact_instance_of::<PyString>() || obj.is_exact_instance_of::<PyBytes>() {
        let head = obj
            .len()
            .ok()
            .filter(|&len| len > 60)
            .and_then(|_| obj.get_item(pyo3::types::PySlice::new(obj.py(), 0, 60, 1)).ok());
        return head.map_or_else(own_repr, |head| format!("{}...", describe_value(&head, 0)));
    }
    if obj.is_instance_of::<PyType>() {
        return format!("<class '{}'>", qualname(obj));
    }
    if obj.is_exact_instance_of::<PyModule>() {
        return format!(
            "<module '{}'>",
            obj.getattr("__name__")
                .map_or_else(|_| "?".to_owned(), |n| n.to_string())
        );
    }
    let container = if obj.is_exact_instance_of::<PyTuple>() {
        Some(("(", ")"))
    } else if obj.is_exact_instance_of::<PyList>() {
        Some(("[", "]"))
    } else if obj.is_exact_instance_of::<PySet>()
        || obj.is_exact_instance_of::<PyFrozenSet>()
        || obj.is_exact_instance_of::<PyDict>()
    {
        Some(("{", "}"))
    } else {
        None
    };
    let Some((open, close)) = container.filter(|_| depth > 0) else {
        let type_name = qualname(&obj.get_type().into_any());
        // A C type's object with a name of its own (a numpy ufunc, a builtin method):
        // read through the type's own getter, which runs no code of the object's.
        let c_type = super::pyutil::is_heap_instance(obj).is_ok_and(|heap| !heap);
        let name = c_type
            .then(|| obj.getattr("__name__").ok())
            .flatten()
            .filter(|name| name.is_exact_instance_of::<PyString>());
        return match name {
            Some(name) => format!("<{type_name} '{name}'>"),
            None => format!("<{type_name} object>"),
        };
    };
    let mut shown = Vec::new();
    let length = obj.len().unwrap_or(0);
    if let Ok(dict) = obj.cast_exact::<PyDict>() {
        for (key, value) in dict.iter().take(DESCRIBED_ITEMS) {
            shown.push(format!(
                "{}: {}",
                describe_value(&key, depth - 1),
                describe_value(&value, depth - 1)
            ));
        }
    } else if let Ok(items) = obj.try_iter() {
        for item in items.take(DESCRIBED_ITEMS).flatten() {
            shown.push(describe_value(&item, depth - 1));
        }
    }
    if length > DESCRIBED_ITEMS {
        shown.push("...".to_owned());
    }
    let trailing = if length == 1 && open == "(" { "," } else { "" };
    format!("{open}{}{trailing}{close}", shown.join(", "))
}

fn truncate(text: &str) -> String {
    if text.chars().count() > 60 {
        format!("{}...", text.chars().take(57).collect::<String>())
    } else {
        text.to_owned()
    }
}

/// One guard: a check of a source's value.
pub struct Guard {
    pub source: SourceId,
    pub check: Check,
}

/// The sources of one code object's cache entries, shared by them.
#[derive(Default)]
pub struct SourceTable {
    pub sources: Vec<Source>,
    /// Sources holding a number that changed between calls: later translations compute
    /// with them in the graph instead of guarding their value (automatic dynamic, as
    /// Dynamo's: specialize first, generalize what was seen to change).
    dynamic: Vec<SourceId>,
}

impl SourceTable {
    /// The id of `source`, added if new.
    pub fn intern(&mut self, source: Source) -> SourceId {
        if let Some(found) = self.sources.iter().position(|s| s.same(&source)) {
            return found;
        }
        self.sources.push(source);
        self.sources.len() - 1
    }

    pub fn clone_ref(&self, py: Python<'_>) -> SourceTable {
        SourceTable {
            sources: self.sources.iter().map(|s| s.clone_ref(py)).collect(),
            dynamic: self.dynamic.clone(),
        }
    }

    pub fn mark_dynamic(&mut self, source: SourceId) {
        if !self.dynamic.contains(&source) {
            self.dynamic.push(source);
        }
    }

    pub fn forget_dynamic(&mut self) {
        self.dynamic.clear();
    }

    pub fn is_dynamic(&self, source: SourceId) -> bool {
        self.dynamic.contains(&source)
    }

    /// How the source reads in Python, for `explain` and logs.
    pub fn describe(&self, py: Python<'_>, id: SourceId, varnames: &[String], freevars: &[String]) -> String {
        match &self.sources[id] {
            Source::Argument(i) => varnames.get(*i).cloned().unwrap_or_else(|| format!("<arg {i}>")),
            Source::Free(i) => freevars.get(*i).cloned().unwrap_or_else(|| format!("<free {i}>")),
            Source::Global(n) => format!("G[{}]", n.bind(py)),
            Source::Builtin(n) => format!("builtins.{}", n.bind(py)),
            Source::Held(held) => {
                let held = held.bind(py);
                match held.get_item("__name__") {
                    Ok(name) => format!("<globals of {name}>"),
                    Err(_) => format!(
                        "<{}>",
                        held.get_type()
                            .name()
                            .map_or_else(|_| "?".into(), |n| n.to_string())
                    ),
                }
            }
            Source::Attr(p, n) => format!("{}.{}", self.describe(py, *p, varnames, freevars), n.bind(py)),
            Source::Called(p) => format!("{}()", self.describe(py, *p, varnames, freevars)),
            Source::Item(p, k) => format!(
                "{}[{}]",
                self.describe(py, *p, varnames, freevars),
                k.bind(py)
                    .repr()
                    .map_or_else(|_| "?".to_owned(), |r| r.to_string())
            ),
        }
    }

    /// Adds `check` of `source` to `guards` unless a guard of the source already implies
    /// it. Where it implies guards of the source, it takes the first one's place (checked
    /// as early, never before the guards that make fetching the source safe) and the others
    /// go.
    pub fn add_guard(guards: &mut Vec<Guard>, source: SourceId, check: Check) {
        if guards
            .iter()
            .any(|g| g.source == source && g.check.implies(&check))
        {
            return;
        }
        let implied = |g: &Guard| g.source == source && check.implies(&g.check);
        match guards.iter().position(implied) {
            Some(first) => {
                let mut index = 0;
                guards.retain(|g| {
                    index += 1;
                    index - 1 == first || !implied(g)
                });
                guards[first].check = check;
            }
            None => guards.push(Guard { source, check }),
        }
    }

    /// Where a child (attribute or item) of `parent` is interned: under the first source
    /// whose guards pin the object that `parent`'s guards pin (`Check::Id`). Every frame
    /// that passes both identity guards holds one object at the two sources, so their
    /// children are one value and guarded once. The first pin comes before `parent`'s,
    /// and the child's guards come after both.
    pub fn pinned_alias(guards: &[Guard], parent: SourceId) -> SourceId {
        let pinned = guards.iter().find_map(|g| match &g.check {
            Check::Id(pin) if g.source == parent => Some(pin.address()),
            _ => None,
        });
        let Some(pinned) = pinned else {
            return parent;
        };
        guards
            .iter()
            .find_map(|g| match &g.check {
                Check::Id(pin) if pin.address() == pinned => Some(g.source),
                _ => None,
            })
            .unwrap_or(parent)
    }
}

/// Fetches sources from one frame, each at most once per lookup.
pub struct Fetcher<'c, 'a, 'py> {
    context: &'c HookContext<'a, 'py>,
    table: &'c SourceTable,
    /// Per source: not fetched yet, fetched (Some(value) or None when absent).
    fetched: Vec<Option<Option<Bound<'py, PyAny>>>>,
}

impl<'c, 'a, 'py> Fetcher<'c, 'a, 'py> {
    pub fn new(context: &'c HookContext<'a, 'py>, table: &'c SourceTable) -> Self {
        Self {
            context,
            table,
            fetched: vec![None; table.sources.len()],
        }
    }

    fn fetch(&mut self, id: SourceId) -> Option<Bound<'py, PyAny>> {
        if let Some(done) = &self.fetched[id] {
            return done.clone();
        }
        let py = self.context.py();
        let value = match &self.table.sources[id] {
            Source::Argument(i) => self.context.argument(*i).map(|b| b.to_owned()),
            Source::Free(i) => self.context.free_variable(*i).map(|b| b.to_owned()),
            Source::Global(name) => dict_get(&self.context.globals(), name),
            Source::Builtin(name) => {
                let globals = self.context.globals();
                if dict_get(&globals, name).is_some() {
                    None
                } else {
                    dict_get(&self.context.builtins(), name)
                }
            }
            Source::Held(held) => Some(held.bind(py)),
            Source::Attr(parent, name) => self.fetch(*parent).and_then(|p| {
                // SAFETY: both live; a failed lookup is an absent value (the error is cleared).
                unsafe { Bound::from_owned_ptr_or_opt(py, ffi::PyObject_GetAttr(p.as_ptr(), name.as_ptr())) }
                    .or_else(|| clear_error(py))
            }),
            Source::Item(parent, key) => self.fetch(*parent).and_then(|p| {
                // SAFETY: as for attributes.
                unsafe { Bound::from_owned_ptr_or_opt(py, ffi::PyObject_GetItem(p.as_ptr(), key.as_ptr())) }
                    .or_else(|| clear_error(py))
            }),
            // Untranslated (a guard's reading); a failed call is an absent value (its error
            // cleared): the guard fails.
            Source::Called(function) => self.fetch(*function).and_then(|f| {
                super::session::with_session(None, || f.call0()).map_or_else(|_| clear_error(py), Some)
            }),
        };
        self.fetched[id] = Some(value.clone());
        value
    }

    /// Whether every guard holds for this frame.
    /// The first guard that does not hold for this frame, or None when all hold.
    pub fn first_failing<'g>(&mut self, guards: &'g [Guard]) -> Option<&'g Guard> {
        guards.iter().find(|guard| !self.check(guard))
    }

    /// Whether `guard` pinned a number (int or float) that the frame now holds another
    /// number of the same type in: a candidate for a dynamic source.
    pub fn number_changed(&mut self, guard: &Guard) -> bool {
        let Check::Equals(pinned) = &guard.check else {
            return false;
        };
        let py = self.context.py();
        let pinned = pinned.bind(py);
        let is_number = pinned.is_exact_instance_of::<PyInt>() || pinned.is_exact_instance_of::<PyFloat>();
        is_number
            && self
                .fetch(guard.source)
                .is_some_and(|now| type_ptr(&now) == type_ptr(&pinned))
    }

    fn check(&mut self, guard: &Guard) -> bool {
        let py = self.context.py();
        let value = self.fetch(guard.source);
        let Some(value) = value else {
            return matches!(guard.check, Check::Absent);
        };
        let holds = match &guard.check {
            Check::Absent => false,
            Check::Present => true,
            Check::Type(t) => type_ptr(&value) == t.as_ptr(),
            Check::Id(pin) => pin.holds(&value),
            Check::Equals(v) => value.as_ptr() == v.as_ptr() || equal_to_values(py, &value, v),
            Check::SameValue(v) => type_ptr(&value) == type_ptr(&v.bind(py)) && rich_equal(py, &value, v),
            Check::Len(n) => {
                // SAFETY: a live object; -1 (with an error) fails the guard.
                let len = unsafe { ffi::PyObject_Size(value.as_ptr()) };
                if len < 0 {
                    clear_error::<()>(py);
                }
                len == *n as ffi::Py_ssize_t
            }
            Check::Keys(keys) => value.cast_exact::<PyDict>().is_ok_and(|d| same_keys(py, d, keys)),
            Check::OrderedKeys { ty, keys } => {
                type_ptr(&value) == ty.as_ptr() && same_ordered_keys(py, &value, keys)
            }
            Check::Tensor { ty, attributes } => {
                type_ptr(&value) == ty.as_ptr()
                    && attributes.iter().all(|(name, expected)| {
                        // SAFETY: live objects; a failed lookup fails the guard.
                        let got = unsafe {
                            Bound::from_owned_ptr_or_opt(
                                py,
                                ffi::PyObject_GetAttr(value.as_ptr(), name.as_ptr()),
                            )
                        };
                        match got {
                            Some(got) => got.as_ptr() == expected.as_ptr() || rich_equal(py, &got, expected),
                            None => clear_error::<bool>(py).unwrap_or(false),
                        }
                    })
            }
        };
        holds
    }
}

/// Whether the exact dict `dict` has the keys of the tuple `keys`, in order (each by
/// identity, else, for values, `==`: `equal_to_values`), without making a tuple of them.
fn same_keys(py: Python<'_>, dict: &Bound<'_, PyDict>, keys: &StrongRef) -> bool {
    let keys = keys.bind(py);
    let Ok(keys) = keys.cast::<PyTuple>() else {
        return false;
    };
    if dict.len() != keys.len() {
        return false;
    }
    let (mut position, mut index) = (0, 0);
    let (mut key, mut value) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: an exact dict, iterated with PyDict_Next (which stays in bounds if an `==`
    // run below changes the dict; the guard then fails on the size or a key). The key it
    // lends is owned (`from_borrowed_ptr`) before anything can run.
    while unsafe { ffi::PyDict_Next(dict.as_ptr(), &mut position, &mut key, &mut value) } != 0 {
        // SAFETY: a live key lent by PyDict_Next, now owned.
        let key = unsafe { Bound::from_borrowed_ptr(py, key) };
        let Ok(expected) = keys.get_item(index) else {
            return false;
        };
        index += 1;
        if !is_recorded_key(py, &key, &expected) {
            return false;
        }
    }
    index == keys.len()
}

/// A mapping's key is the one recorded: the same object, or an equal value (compared
/// without running code of the user's).
fn is_recorded_key(py: Python<'_>, key: &Bound<'_, PyAny>, expected: &Bound<'_, PyAny>) -> bool {
    key.is(expected) || (is_value_type(expected) && equal_to_values(py, key, &StrongRef::new(expected)))
}

/// `tuple(mapping) == keys`, iterating the mapping as Python does (an OrderedDict's own
/// order); an error counts as different.
fn same_ordered_keys(py: Python<'_>, mapping: &Bound<'_, PyAny>, keys: &StrongRef) -> bool {
    let keys = keys.bind(py);
    let (Ok(keys), Ok(iterator)) = (keys.cast::<PyTuple>(), mapping.try_iter()) else {
        clear_error::<()>(py);
        return false;
    };
    let mut index = 0;
    for key in iterator {
        let (Ok(key), Ok(expected)) = (key, keys.get_item(index)) else {
            clear_error::<()>(py);
            return false;
        };
        index += 1;
        if !is_recorded_key(py, &key, &expected) {
            return false;
        }
    }
    index == keys.len()
}

/// Types whose values are immutable and compared by value: guarded with `==` (whose
/// comparison runs no code of the user's).
pub fn is_value_type(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_none()
        || obj.is_exact_instance_of::<PyInt>()
        || obj.is_exact_instance_of::<PyFloat>()
        || obj.is_exact_instance_of::<pyo3::types::PyBool>()
        || obj.is_exact_instance_of::<PyString>()
        || obj.is_exact_instance_of::<pyo3::types::PyBytes>()
        || obj.is_exact_instance_of::<pyo3::types::PyComplex>()
        || obj.is_exact_instance_of::<pyo3::types::PyRange>()
        || obj
            .cast::<PyTuple>()
            .is_ok_and(|t| t.is_exact_instance_of::<PyTuple>() && t.iter().all(|i| is_value_type(&i)))
}

/// The builtin containers whose contents may change under the same identity.
pub fn is_mutable_container(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_exact_instance_of::<pyo3::types::PyList>()
        || obj.is_exact_instance_of::<PyDict>()
        || obj.is_exact_instance_of::<pyo3::types::PySet>()
}

/// How deep a container of values guarded by `==` may nest.
pub const VALUE_NESTING: usize = 16;

/// Whether a container holds values only (nested containers of values included, to a
/// depth that also stops at a container holding itself).
pub fn holds_values_only(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<bool> {
    if is_value_type(obj) {
        return Ok(true);
    }
    if !is_mutable_container(obj) || depth == 0 {
        return Ok(false);
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        for (key, value) in dict.iter() {
            if !is_value_type(&key) || !holds_values_only(&value, depth - 1)? {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    for item in obj.try_iter()? {
        if !holds_values_only(&item?, depth - 1)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether `value` equals `expected`, values only (of a value type, or a list, dict or set
/// of them, as `holds_values_only` says): `==` runs only where neither side can run a
/// `__eq__` of the user's. A guard must run no code of the user's (which the original does
/// not run there, and whose frames would ask this hook again, without end).
fn equal_to_values(py: Python<'_>, value: &Bound<'_, PyAny>, expected: &StrongRef) -> bool {
    type_ptr(value) == type_ptr(&expected.bind(py))
        && holds_values_only(value, VALUE_NESTING).unwrap_or(false)
        && rich_equal(py, value, expected)
}

fn type_ptr(value: &Bound<'_, PyAny>) -> *mut ffi::PyObject {
    // SAFETY: a live object's type.
    unsafe { ffi::Py_TYPE(value.as_ptr()).cast() }
}

fn rich_equal(py: Python<'_>, a: &Bound<'_, PyAny>, b: &StrongRef) -> bool {
    // SAFETY: live objects; an error counts as unequal and is cleared.
    let result = unsafe { ffi::PyObject_RichCompareBool(a.as_ptr(), b.as_ptr(), ffi::Py_EQ) };
    if result < 0 {
        clear_error::<()>(py);
    }
    result == 1
}

fn dict_get<'py>(dict: &Bound<'py, PyAny>, key: &StrongRef) -> Option<Bound<'py, PyAny>> {
    // SAFETY: `dict` is a frame's globals or builtins dict (exact dicts on every path
    // framehook hooks), `key` a str; PyDict_GetItemWithError returns a borrowed reference.
    unsafe {
        let found = ffi::PyDict_GetItemWithError(dict.as_ptr(), key.as_ptr());
        if found.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(Bound::from_borrowed_ptr(dict.py(), found))
    }
}

fn clear_error<T>(_py: Python<'_>) -> Option<T> {
    // SAFETY: attached (the token); a failed fetch is an absent value.
    unsafe { ffi::PyErr_Clear() };
    None
}

/// A name as the key of a source.
pub fn name_ref(py: Python<'_>, name: &str) -> StrongRef {
    StrongRef::from_owned(PyString::intern(py, name).into_any())
}
