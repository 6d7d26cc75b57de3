//! Guards evaluated on a frame: each source fetched once, straight from the frame, and
//! each check compared with what it found.

mod fixing;

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyComplex, PyDict, PyFloat, PyInt, PyList, PyTuple};

use super::guard::check::{holds_values_only, is_value_type, AbsentDefaults, Check, Pin, VALUE_NESTING};
use super::guard::source::Guard;
use super::guard::source::{Source, SourceId, SourceTable};
use super::guard::world::World;
use crate::hookapi::pyobject::{function_attr, function_part, type_version, FunctionPart, StrongRef};
use crate::hookapi::rust_hook::HookContext;
pub use fixing::{arm_if_unchanged, build_world};

/// Guards checked on frames (test builds): those the watchers answered are not.
#[cfg(feature = "testing")]
pub static GUARDS_CHECKED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Fetches sources from one frame, each at most once per lookup.
pub struct Fetcher<'c, 'a, 'py> {
    pub context: &'c HookContext<'a, 'py>,
    pub table: &'c SourceTable,
    /// Per source: not fetched yet, fetched (Some(value) or None when absent).
    pub fetched: Vec<Option<Option<Bound<'py, PyAny>>>>,
    /// Worlds found to hold for this frame: their fixed values are current.
    worlds: Vec<&'c World>,
}

impl<'c, 'a, 'py> Fetcher<'c, 'a, 'py> {
    pub fn new(context: &'c HookContext<'a, 'py>, table: &'c SourceTable) -> Self {
        Self {
            context,
            table,
            fetched: vec![None; table.sources.len()],
            worlds: Vec::new(),
        }
    }

    /// Takes the fixed values of `world`, found to hold for this frame, as fetched.
    pub fn assume(&mut self, world: &'c World) {
        self.worlds.push(world);
    }

    pub fn fetch(&mut self, id: SourceId) -> Option<Bound<'py, PyAny>> {
        if let Some(done) = &self.fetched[id] {
            return done.clone();
        }
        let py = self.context.py();
        if let Some(value) = self.worlds.iter().find_map(|world| world.fixed_value(py, id)) {
            self.fetched[id] = Some(value.clone());
            return value;
        }
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
            Source::Attr(parent, name) => self.fetch(*parent).and_then(|p| attr_value(&p, name)),
            Source::OwnAttr(parent, name) => self.fetch(*parent).and_then(|p| {
                // SAFETY: as for attributes; the generic lookup runs no `__getattr__`.
                unsafe {
                    Bound::from_owned_ptr_or_opt(py, ffi::PyObject_GenericGetAttr(p.as_ptr(), name.as_ptr()))
                }
                .or_else(|| clear_error(py))
            }),
            Source::Item(parent, key) => self.fetch(*parent).and_then(|p| item_value(&p, key)),
            Source::StoredItem(parent, key) => self.fetch(*parent).and_then(|p| stored_item_value(&p, key)),
            // Untranslated (a guard's reading); a failed call is an absent value (its error
            // cleared): the guard fails.
            Source::Called(function) => self.fetch(*function).and_then(|f| {
                crate::sot::translator::session::with_session(None, || f.call0())
                    .map_or_else(|_| clear_error(py), Some)
            }),
        };
        self.fetched[id] = Some(value.clone());
        value
    }

    /// Whether every guard holds for this frame.
    /// The first guard that does not hold for this frame, or None when all hold.
    pub fn first_failing<'g>(&mut self, guards: &'g [Guard]) -> Option<&'g Guard> {
        self.first_failing_of(guards.iter())
    }

    pub fn first_failing_of<'g>(&mut self, mut guards: impl Iterator<Item = &'g Guard>) -> Option<&'g Guard> {
        guards.find(|guard| !self.check(guard))
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

    pub fn check(&mut self, guard: &Guard) -> bool {
        #[cfg(feature = "testing")]
        GUARDS_CHECKED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let value = self.fetch(guard.source);
        match &guard.check {
            Check::SameAs(other) => value.is_some_and(|v| self.fetch(*other).is_some_and(|o| o.is(&v))),
            Check::Distinct(others) => {
                let Some(value) = value else {
                    return false;
                };
                let mut objects = Vec::with_capacity(others.len() + 1);
                objects.push(value.as_ptr());
                for other in others {
                    match self.fetch(*other) {
                        Some(o) => objects.push(o.as_ptr()),
                        None => return false,
                    }
                }
                all_distinct(&mut objects)
            }
            check => value_holds(self.context.py(), check, value.as_ref()),
        }
    }
}

/// Whether `value` (None: the source holds nothing) passes `check`, one that reads no other
/// source (never `SameAs` or `Distinct`, which fail here).
#[inline]
pub fn value_holds(py: Python<'_>, check: &Check, value: Option<&Bound<'_, PyAny>>) -> bool {
    let Some(value) = value else {
        return matches!(check, Check::Absent);
    };
    match check {
        Check::Absent | Check::SameAs(_) | Check::Distinct(_) => false,
        Check::Present => true,
        Check::Type(t) => t.holds(&value.get_type()),
        Check::ClassUnchanged(version) => type_version(&value.get_type(), false) == *version,
        Check::Id(pin) => pin.holds(value),
        Check::Function { code, absent } => is_function_of(value, code, *absent),
        Check::Equals(v) => value.as_ptr() == v.as_ptr() || equal_to_values(py, value, v),
        Check::SameValue(v) => type_ptr(value) == type_ptr(&v.bind(py)) && rich_equal(py, value, v),
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
            type_ptr(value) == ty.as_ptr() && same_ordered_keys(py, value, keys)
        }
        Check::Tensor { ty, attributes } => {
            type_ptr(value) == ty.as_ptr()
                && attributes.iter().all(|(name, expected)| {
                    // SAFETY: live objects; a failed lookup fails the guard.
                    let got = unsafe {
                        Bound::from_owned_ptr_or_opt(py, ffi::PyObject_GetAttr(value.as_ptr(), name.as_ptr()))
                    };
                    match got {
                        Some(got) => got.as_ptr() == expected.as_ptr() || rich_equal(py, &got, expected),
                        None => clear_error::<bool>(py).unwrap_or(false),
                    }
                })
        }
    }
}

/// Whether `value` is a function (exactly) whose code is `code` and whose `__defaults__`
/// and `__kwdefaults__` are None where `absent` says so: its parts read straight from the
/// function where the build allows (`function_part`), else as attributes.
fn is_function_of(value: &Bound<'_, PyAny>, code: &Pin, absent: AbsentDefaults) -> bool {
    // SAFETY: reading the type of a live object.
    if unsafe { ffi::Py_TYPE(value.as_ptr()) } != std::ptr::addr_of_mut!(ffi::PyFunction_Type) {
        return false;
    }
    let part_is = |part: FunctionPart, expected: Option<&Pin>| {
        function_attr(value, part).is_ok_and(|found| match expected {
            Some(pin) => pin.holds(&found),
            None => found.is_none(),
        })
    };
    part_is(FunctionPart::Code, Some(code))
        && (!absent.positional || part_is(FunctionPart::Defaults, None))
        && (!absent.keyword || part_is(FunctionPart::KwDefaults, None))
}

/// `function.<name>` for the parts of a function an inlined call is guarded on (`__code__`,
/// `__globals__`, `__defaults__`, `__kwdefaults__`: about a third of a library-heavy call's
/// guards), read from the function without the attribute lookup where the build allows
/// (`function_part`); None for anything else (looked up as usual).
/// `parent.name` as a guard reads it: a function's part straight from the function, else
/// the attribute; None where it is absent (the error cleared).
pub fn attr_value<'py>(parent: &Bound<'py, PyAny>, name: &StrongRef) -> Option<Bound<'py, PyAny>> {
    if let Some(part) = function_part_named(parent, name) {
        return Some(part);
    }
    let py = parent.py();
    // SAFETY: both live; a failed lookup is an absent value (the error is cleared).
    unsafe { Bound::from_owned_ptr_or_opt(py, ffi::PyObject_GetAttr(parent.as_ptr(), name.as_ptr())) }
        .or_else(|| clear_error(py))
}

/// `parent[key]` as a guard reads it; None where it is absent (the error cleared).
pub fn item_value<'py>(parent: &Bound<'py, PyAny>, key: &StrongRef) -> Option<Bound<'py, PyAny>> {
    if parent.is_exact_instance_of::<PyDict>() {
        // A missing key raises no KeyError here (an instance's `__dict__` guarded to lack a
        // name is the common case: it is read on every call).
        return dict_get(parent, key);
    }
    let py = parent.py();
    // SAFETY: as for attributes.
    unsafe { Bound::from_owned_ptr_or_opt(py, ffi::PyObject_GetItem(parent.as_ptr(), key.as_ptr())) }
        .or_else(|| clear_error(py))
}

/// An entry of a dict's storage (a subclass's object too), as dict's own methods read it;
/// None for another object.
pub fn stored_item_value<'py>(parent: &Bound<'py, PyAny>, key: &StrongRef) -> Option<Bound<'py, PyAny>> {
    parent
        .is_instance_of::<PyDict>()
        .then(|| dict_get(parent, key))
        .flatten()
}

pub fn function_part_named<'py>(function: &Bound<'py, PyAny>, name: &StrongRef) -> Option<Bound<'py, PyAny>> {
    let py = function.py();
    // Names in sources are interned (`name_ref`): one pointer comparison each.
    let name = name.as_ptr();
    let part = if name == intern!(py, "__code__").as_ptr() {
        FunctionPart::Code
    } else if name == intern!(py, "__globals__").as_ptr() {
        FunctionPart::Globals
    } else if name == intern!(py, "__defaults__").as_ptr() {
        FunctionPart::Defaults
    } else if name == intern!(py, "__kwdefaults__").as_ptr() {
        FunctionPart::KwDefaults
    } else {
        return None;
    };
    function_part(function, part)
}

/// Whether no two of `objects` are one object: sorted, then neighbours compared (not each
/// with each: a model's parameters are many tensor inputs).
fn all_distinct(objects: &mut [*mut ffi::PyObject]) -> bool {
    objects.sort_unstable();
    objects.windows(2).all(|pair| pair[0] != pair[1])
}

/// Whether the exact dict `dict` has the keys of the tuple `keys`, in order (each by
/// identity, else, for values, `==`: `equal_to_values`), without making a tuple of them.
pub fn same_keys(py: Python<'_>, dict: &Bound<'_, PyDict>, keys: &StrongRef) -> bool {
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
pub fn is_recorded_key(py: Python<'_>, key: &Bound<'_, PyAny>, expected: &Bound<'_, PyAny>) -> bool {
    key.is(expected) || (is_value_type(expected) && equal_to_values(py, key, &StrongRef::new(expected)))
}

/// `tuple(mapping) == keys`, iterating the mapping as Python does (an OrderedDict's own
/// order); an error counts as different.
pub fn same_ordered_keys(py: Python<'_>, mapping: &Bound<'_, PyAny>, keys: &StrongRef) -> bool {
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

/// Whether `value` equals `expected`, values only (of a value type, or a list, dict or set
/// of them, as `holds_values_only` says): `==` runs only where neither side can run a
/// `__eq__` of the user's. A guard must run no code of the user's (which the original does
/// not run there, and whose frames would ask this hook again, without end).
pub fn equal_to_values(py: Python<'_>, value: &Bound<'_, PyAny>, expected: &StrongRef) -> bool {
    type_ptr(value) == type_ptr(&expected.bind(py))
        && holds_values_only(value, VALUE_NESTING).unwrap_or(false)
        && same_values(value, &expected.bind(py))
}

/// `a == b` as code computing with them sees it: of one type at every level, floats and
/// complex numbers equal with the same signs (`-0.0` is not `0.0`: `str()`,
/// `math.copysign` and `1 / x` tell them apart; a NaN equals nothing, not even a NaN of the
/// same bits: `hash()` of one is its identity's), sequences and dicts item by item, in order.
fn same_values<'py>(a: &Bound<'py, PyAny>, b: &Bound<'py, PyAny>) -> bool {
    if type_ptr(a) != type_ptr(b) {
        return false;
    }
    let same_float = |a: f64, b: f64| a == b && a.is_sign_negative() == b.is_sign_negative();
    if let (Ok(a), Ok(b)) = (a.cast_exact::<PyFloat>(), b.cast_exact::<PyFloat>()) {
        return same_float(a.value(), b.value());
    }
    if let (Ok(a), Ok(b)) = (a.cast_exact::<PyComplex>(), b.cast_exact::<PyComplex>()) {
        return same_float(a.real(), b.real()) && same_float(a.imag(), b.imag());
    }
    let items = |value: &Bound<'py, PyAny>| -> Option<Vec<Bound<'py, PyAny>>> {
        if let Ok(tuple) = value.cast_exact::<PyTuple>() {
            return Some(tuple.iter().collect());
        }
        if let Ok(list) = value.cast_exact::<PyList>() {
            return Some(list.iter().collect());
        }
        let dict = value.cast_exact::<PyDict>().ok()?;
        Some(dict.iter().flat_map(|(k, v)| [k, v]).collect())
    };
    match (items(a), items(b)) {
        (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(&b).all(|(a, b)| same_values(a, b)),
        _ => rich_equal(a.py(), a, &StrongRef::new(b)),
    }
}

pub fn type_ptr(value: &Bound<'_, PyAny>) -> *mut ffi::PyObject {
    // SAFETY: a live object's type.
    unsafe { ffi::Py_TYPE(value.as_ptr()).cast() }
}

pub fn rich_equal(py: Python<'_>, a: &Bound<'_, PyAny>, b: &StrongRef) -> bool {
    // SAFETY: live objects; an error counts as unequal and is cleared.
    let result = unsafe { ffi::PyObject_RichCompareBool(a.as_ptr(), b.as_ptr(), ffi::Py_EQ) };
    if result < 0 {
        clear_error::<()>(py);
    }
    result == 1
}

pub fn dict_get<'py>(dict: &Bound<'py, PyAny>, key: &StrongRef) -> Option<Bound<'py, PyAny>> {
    let mut found = std::ptr::null_mut();
    // SAFETY: `dict` is a dict (a frame's globals or builtins, or a checked one),
    // `key` a live object; a strong reference comes back (safe on free-threaded builds too),
    // and a failed lookup (an unhashable key) is an absent value.
    unsafe {
        if ffi::compat::PyDict_GetItemRef(dict.as_ptr(), key.as_ptr(), &mut found) < 0 {
            ffi::PyErr_Clear();
        }
        Bound::from_owned_ptr_or_opt(dict.py(), found)
    }
}

pub fn clear_error<T>(_py: Python<'_>) -> Option<T> {
    // SAFETY: attached (the token); a failed fetch is an absent value.
    unsafe { ffi::PyErr_Clear() };
    None
}
