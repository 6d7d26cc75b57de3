//! What a translation assumed about a value (a check on its source), and how checks
//! and values are described to users.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{
    PyDict, PyFloat, PyFrozenSet, PyInt, PyString, PyTuple, PyType, PyWeakrefMethods, PyWeakrefReference,
};

use crate::hookapi::pyobject::{type_is_mutable, type_version, StrongRef};

/// A source's index in its table (`source::SourceTable`).
pub type SourceId = usize;

/// Names and keys are compared by value (interned strings are the common case).
pub fn same_key(a: &StrongRef, b: &StrongRef) -> bool {
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
    /// A type: a class the program made (a heap type) weakly, so that a translation keeps
    /// no class alive that the program would free (with it, its methods' closures and what
    /// they hold); a static type, which lives for good, by address.
    pub fn of_type(ty: &Bound<'_, PyAny>) -> Pin {
        if crate::sot::translator::pyutil::is_heap_type(ty) {
            Pin::new(ty)
        } else {
            Pin::Strong(StrongRef::new(ty))
        }
    }

    pub fn new(object: &Bound<'_, PyAny>) -> Pin {
        if !crate::hookapi::pyobject::supports_weakrefs(object) {
            return Pin::Strong(StrongRef::new(object));
        }
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
    pub fn strong(&self) -> Option<StrongRef> {
        Python::attach(|py| self.object(py).map(|o| StrongRef::new(&o)))
    }

    pub fn clone_ref(&self, py: Python<'_>) -> Pin {
        match self {
            Pin::Strong(object) => Pin::Strong(object.clone_ref(py)),
            Pin::Weak { reference, address } => Pin::Weak {
                reference: reference.clone_ref(py),
                address: *address,
            },
        }
    }

    /// Whether `value` is the pinned object (a weakly pinned one only while it lives).
    pub fn holds(&self, value: &Bound<'_, PyAny>) -> bool {
        value.as_ptr() as usize == self.address()
            && match self {
                Pin::Strong(_) => true,
                Pin::Weak { .. } => self.object(value.py()).is_some_and(|o| o.is(value)),
            }
    }
}

/// Which of a function's defaults (`__defaults__`, `__kwdefaults__`) its check says are
/// None: most functions have neither, and many only keyword-only ones.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct AbsentDefaults {
    pub positional: bool,
    pub keyword: bool,
}

impl AbsentDefaults {
    /// Says nothing of either.
    pub const NOT_SAID: AbsentDefaults = AbsentDefaults {
        positional: false,
        keyword: false,
    };

    /// Whether it says at least what `other` says.
    pub fn covers(self, other: AbsentDefaults) -> bool {
        (self.positional || !other.positional) && (self.keyword || !other.keyword)
    }
}

/// What a guard checks of its source's value.
pub enum Check {
    /// `type(value) is T`.
    Type(Pin),
    /// `value is O`.
    Id(Pin),
    /// `type(value) is types.FunctionType and value.__code__ is C`, and its `__defaults__`
    /// and `__kwdefaults__` None where `absent` says so: a function called by the
    /// translation, pinned by its code (not its identity: closures made anew on each call
    /// keep their translation), what an inlined call reads of it in one check.
    Function { code: Pin, absent: AbsentDefaults },
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
    /// The value is the object another source holds (a tensor the frame holds twice: one
    /// graph input).
    SameAs(SourceId),
    /// The value and the objects the other sources hold are all different objects (the
    /// frame's tensors, each its own graph input).
    Distinct(Vec<SourceId>),
    /// `type(value)` and its bases have the attributes they had (the type's version tag,
    /// which CPython changes on a store or deletion in the class or a base): the translation
    /// read its methods and class attributes (a method replaced on the class is seen).
    ClassUnchanged(u32),
    /// The source holds nothing (a global that is not defined, a missing key).
    Absent,
    /// The source holds something (a key that is present).
    Present,
}

impl Check {
    /// What the check asserts; `source_name` names the other sources it reads.
    pub fn describe(&self, py: Python<'_>, source_name: &dyn Fn(SourceId) -> String) -> String {
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
            Check::Type(t) => match t.strong() {
                Some(t) => format!("type is {}", type_name(&t)),
                None => "type is <a class that died>".to_owned(),
            },
            Check::Id(pin) => match pin.object(py) {
                Some(o) => format!("is {}", truncate(&describe_value(&o, DESCRIBED_DEPTH))),
                None => "is <an object that died>".to_owned(),
            },
            Check::Function { code, absent } => {
                let code = code.object(py).map_or_else(
                    || "<code that died>".to_owned(),
                    |code| truncate(&describe_value(&code, DESCRIBED_DEPTH)),
                );
                let defaults = match (absent.positional, absent.keyword) {
                    (true, true) => " without defaults",
                    (true, false) => " without positional defaults",
                    (false, true) => " without keyword-only defaults",
                    (false, false) => "",
                };
                format!("is a function of {code}{defaults}")
            }
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
            Check::SameAs(other) => format!("is {}", source_name(*other)),
            Check::Distinct(others) => {
                let names: Vec<String> = others.iter().map(|o| source_name(*o)).collect();
                format!("is none of {}", names.join(", "))
            }
            Check::ClassUnchanged(_) => "its class unchanged".to_owned(),
            Check::Absent => "is absent".to_owned(),
            Check::Present => "is present".to_owned(),
        }
    }

    pub fn clone_ref(&self, py: Python<'_>) -> Check {
        match self {
            Check::Type(pin) => Check::Type(pin.clone_ref(py)),
            Check::Id(pin) => Check::Id(pin.clone_ref(py)),
            Check::Function { code, absent } => Check::Function {
                code: code.clone_ref(py),
                absent: *absent,
            },
            Check::Equals(v) => Check::Equals(v.clone_ref(py)),
            Check::SameValue(v) => Check::SameValue(v.clone_ref(py)),
            Check::Len(n) => Check::Len(*n),
            Check::Keys(keys) => Check::Keys(keys.clone_ref(py)),
            Check::OrderedKeys { ty, keys } => Check::OrderedKeys {
                ty: ty.clone_ref(py),
                keys: keys.clone_ref(py),
            },
            Check::Tensor { ty, attributes } => Check::Tensor {
                ty: ty.clone_ref(py),
                attributes: attributes
                    .iter()
                    .map(|(name, value)| (name.clone_ref(py), value.clone_ref(py)))
                    .collect(),
            },
            Check::SameAs(other) => Check::SameAs(*other),
            Check::Distinct(others) => Check::Distinct(others.clone()),
            Check::ClassUnchanged(version) => Check::ClassUnchanged(*version),
            Check::Absent => Check::Absent,
            Check::Present => Check::Present,
        }
    }

    pub fn same(&self, other: &Check) -> bool {
        match (self, other) {
            (Check::Type(a), Check::Type(b)) => a.address() == b.address(),
            (Check::Id(a), Check::Id(b)) => a.address() == b.address(),
            (Check::Function { code: a, absent: x }, Check::Function { code: b, absent: y }) => {
                a.address() == b.address() && x == y
            }
            (Check::Equals(a), Check::Equals(b))
            | (Check::SameValue(a), Check::SameValue(b))
            | (Check::Keys(a), Check::Keys(b)) => same_key(a, b),
            (Check::OrderedKeys { ty: t, keys: a }, Check::OrderedKeys { ty: u, keys: b }) => {
                t.as_ptr() == u.as_ptr() && same_key(a, b)
            }
            (Check::Len(a), Check::Len(b)) => a == b,
            (Check::ClassUnchanged(a), Check::ClassUnchanged(b)) => a == b,
            (Check::SameAs(a), Check::SameAs(b)) => a == b,
            (Check::Distinct(a), Check::Distinct(b)) => a == b,
            (Check::Absent, Check::Absent) | (Check::Present, Check::Present) => true,
            _ => false,
        }
    }

    /// Whether every value this check passes also passes `other`, for any state of the
    /// objects (so `other` on the same source adds nothing).
    pub fn implies(&self, other: &Check) -> bool {
        if self.same(other) {
            return true;
        }
        match (self, other) {
            // A source that cannot be read fails every check but `Absent`.
            (Check::Absent, Check::Present) => false,
            (_, Check::Present) => true,
            // `x is O` fixes `type(x)` only where `O.__class__` cannot be assigned.
            (Check::Id(pin), Check::Type(t)) => pin
                .strong()
                .is_some_and(|o| type_of(&o) as usize == t.address() && class_is_fixed(&o)),
            // ... and `len(x)` only where O cannot change size.
            (Check::Id(pin), Check::Len(n)) => pin
                .strong()
                .is_some_and(|o| is_immutable_sized(&o) && len_of(&o) == Some(*n)),
            // Equals checks the type first (`x is V` also passes it: V's class is fixed).
            (Check::Equals(v), Check::Type(t)) => type_of(v) as usize == t.address() && class_is_fixed(v),
            // Equal builtin sequences, mappings and sets have equal lengths.
            (Check::Equals(v), Check::Len(n)) => is_builtin_sized(v) && len_of(v) == Some(*n),
            (Check::Keys(_), Check::Type(t)) => {
                t.address() == std::ptr::addr_of_mut!(ffi::PyDict_Type) as usize
            }
            (Check::Keys(keys) | Check::OrderedKeys { keys, .. }, Check::Len(n)) => len_of(keys) == Some(*n),
            (Check::OrderedKeys { ty, .. }, Check::Type(t)) => ty.as_ptr() as usize == t.address(),
            (Check::Tensor { ty, .. }, Check::Type(t)) => ty.as_ptr() as usize == t.address(),
            (Check::Function { .. }, Check::Type(t)) => {
                t.address() == std::ptr::addr_of_mut!(ffi::PyFunction_Type) as usize
            }
            (Check::Function { code: a, absent: x }, Check::Function { code: b, absent: y }) => {
                a.address() == b.address() && x.covers(*y)
            }
            _ => false,
        }
    }
}

/// The check a guard on `type(value) is ty` (or on `value`'s identity) needs beside it
/// where `ty`'s attributes can change (a class defined in Python): None for builtin types.
pub fn class_unchanged(ty: &Bound<'_, PyType>) -> Option<Check> {
    type_is_mutable(ty).then(|| Check::ClassUnchanged(type_version(ty, true)))
}

pub fn type_of(o: &StrongRef) -> *mut ffi::PyObject {
    // SAFETY: a live object's type.
    unsafe { ffi::Py_TYPE(o.as_ptr()).cast() }
}

/// Whether `o.__class__ = C` always fails: CPython assigns `__class__` only between heap
/// (3.10+: mutable, `type_is_mutable`) types or between module types; static and immutable
/// types are neither.
pub fn class_is_fixed(o: &StrongRef) -> bool {
    // SAFETY: a live object and its type.
    let ty = unsafe { ffi::Py_TYPE(o.as_ptr()) };
    // SAFETY: as above; a subtype test reads the type's MRO only.
    if unsafe { ffi::PyType_IsSubtype(ty, std::ptr::addr_of_mut!(ffi::PyModule_Type)) } != 0 {
        return false;
    }
    Python::attach(|py| {
        // SAFETY: a live type, borrowed while `o` holds it.
        let ty = unsafe { Bound::from_borrowed_ptr(py, ty.cast()) };
        ty.cast_into::<PyType>().is_ok_and(|t| !type_is_mutable(&t))
    })
}

/// Exact tuples, strings, bytes and frozensets: their length is fixed.
pub fn is_immutable_sized(o: &StrongRef) -> bool {
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
pub fn is_builtin_sized(o: &StrongRef) -> bool {
    // SAFETY: live objects; exact type checks only.
    is_immutable_sized(o)
        || unsafe {
            let o = o.as_ptr();
            ffi::PyList_CheckExact(o) != 0
                || ffi::PyDict_CheckExact(o) != 0
                || ffi::PyAnySet_CheckExact(o) != 0
        }
}

pub fn len_of(o: &StrongRef) -> Option<usize> {
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
pub const DESCRIBED_DEPTH: usize = 3;
pub const DESCRIBED_ITEMS: usize = 8;

/// A guarded value as `explain` shows it, without running any code of the value's own:
/// a `__repr__` written in Python may have side effects (a list that grows as it is
/// shown never ends), and a large container's repr costs its size. Numbers, strings,
/// classes, modules, functions and code by their repr (CPython's own, of the type
/// only); the builtin containers item by item, to a few; anything else by its type.
pub fn describe_value(obj: &Bound<'_, PyAny>, depth: usize) -> String {
    use pyo3::types::{
        PyBool, PyBytes, PyCFunction, PyCode, PyComplex, PyFrozenSet, PyFunction, PyList, PyModule, PySet,
        PyType,
    };
    let own_repr = || obj.repr().map_or_else(|_| "?".to_owned(), |r| r.to_string());
    let qualname = |ty: &Bound<'_, PyAny>| {
        ty.getattr(pyo3::intern!(ty.py(), "__qualname__"))
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
            obj.getattr(pyo3::intern!(obj.py(), "__name__"))
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
        let c_type = crate::sot::translator::pyutil::is_heap_instance(obj).is_ok_and(|heap| !heap);
        let name = c_type
            .then(|| obj.getattr(pyo3::intern!(obj.py(), "__name__")).ok())
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

pub fn truncate(text: &str) -> String {
    if text.chars().count() > 60 {
        format!("{}...", text.chars().take(57).collect::<String>())
    } else {
        text.to_owned()
    }
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

/// Immutable values a translation may embed as constants.
pub fn is_immutable(obj: &Bound<'_, PyAny>) -> bool {
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
        || is_immutable_regex(obj)
        || is_type_union(obj)
}

/// `re`'s compiled patterns and their matches (`_sre`'s types, which no method changes).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Regex {
    Pattern,
    Match,
}

/// Which of `names` CPython's C code gives `ty`, where no class derives from it (a class
/// statement's type, or `type()`'s, always may: none of those is named so).
fn final_c_type_named(ty: &Bound<'_, PyAny>, names: &[&[u8]]) -> Option<usize> {
    const BASE_TYPE: std::ffi::c_ulong = 1 << 10; // Py_TPFLAGS_BASETYPE
    let ty = ty.cast::<PyType>().ok()?;
    // SAFETY: a live type object (borrowed for the call): its flags, and its `tp_name`, a
    // NUL-terminated string it owns, compared before the borrow ends.
    unsafe {
        let ty = ty.as_type_ptr();
        if ffi::PyType_GetFlags(ty) & BASE_TYPE != 0 {
            return None;
        }
        let name = std::ffi::CStr::from_ptr((*ty).tp_name).to_bytes();
        names.iter().position(|wanted| *wanted == name)
    }
}

/// Which of `re`'s types `ty` is, if one (by the names `_sre` gives them).
pub fn regex_type(ty: &Bound<'_, PyAny>) -> Option<Regex> {
    match final_c_type_named(ty, &[b"re.Pattern", b"re.Match"])? {
        0 => Some(Regex::Pattern),
        _ => Some(Regex::Match),
    }
}

/// `int | None` (3.10+: `types.UnionType`, `typing.Union` from 3.14): its members fixed.
fn is_type_union(obj: &Bound<'_, PyAny>) -> bool {
    final_c_type_named(&obj.get_type().into_any(), &[b"types.UnionType", b"typing.Union"]).is_some()
}

/// A compiled pattern.
fn is_immutable_regex(obj: &Bound<'_, PyAny>) -> bool {
    regex_type(&obj.get_type().into_any()) == Some(Regex::Pattern)
}

/// A match of a pattern in a `str` or `bytes`, which no method changes (one in a `bytearray`
/// or another buffer reads the buffer as it is when asked for a group). Not a value the
/// translation may pin: a program makes a new one on every call.
pub fn is_match_of_a_value(obj: &Bound<'_, PyAny>) -> bool {
    regex_type(&obj.get_type().into_any()) == Some(Regex::Match)
        && obj.getattr(pyo3::intern!(obj.py(), "string")).is_ok_and(|s| {
            s.is_exact_instance_of::<PyString>() || s.is_exact_instance_of::<pyo3::types::PyBytes>()
        })
}
