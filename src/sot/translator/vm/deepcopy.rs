//! `copy.deepcopy(x)` of values the translation made: instances of plain classes, lists,
//! dicts and tuples, holding atoms (numbers, strings, None, ...) and one another. The VM
//! makes the copy the function would, instead of simulating `copy.deepcopy`, whose memo
//! is keyed by `id()` of objects that exist only once the generated code runs (so its
//! simulation breaks). scikit-learn's `Pipeline.__sklearn_tags__` copies its last step's
//! tags so, on every `predict`. Anything else is called as the library function it is.
//!
//! What `copy.deepcopy` does with such values, and what the copy rests on (guarded):
//! - an atom (an exact type of `copy._deepcopy_atomic`'s) is its own copy;
//! - a tuple is itself where each item is its own copy, else a new tuple of the copies;
//! - a list or dict is a new one of its items' copies (a dict's keys are atoms);
//! - an instance goes through `object.__reduce_ex__(4)`: a bare `cls.__new__(cls)` given
//!   the copy of its `__dict__`, then of each slot set, in the order of the class's
//!   `__slotnames__`, which `copyreg._slotnames` works out from the classes' `__slots__`
//!   and writes into the class on its first copy (the VM asks it while translating, as
//!   the copy the first call makes would; it depends on the classes alone); that holds
//!   where neither `copy._deepcopy_dispatch` nor
//!   `copyreg.dispatch_table` has the class, it has no `__deepcopy__`, `__setstate__`,
//!   `__getnewargs__` or `__getnewargs_ex__`, and its `__reduce_ex__`, `__reduce__`,
//!   `__getstate__`, `__new__` and `__setattr__` are `object`'s (each guarded, as is its
//!   `__slotnames__`);
//! - one object met twice is copied once (the memo), a cycle included.

use rustc_hash::FxHashMap;

use super::*;
use crate::hookapi::pyobject::import;

/// What a made instance's class must not have, and what it must have as `object` has.
const ABSENT: [&str; 4] = [
    "__deepcopy__",
    "__setstate__",
    "__getnewargs__",
    "__getnewargs_ex__",
];
const OBJECTS: [&str; 5] = [
    "__reduce_ex__",
    "__reduce__",
    "__getstate__",
    "__new__",
    "__setattr__",
];
/// Objects nested deeper are copied by the function itself.
const MAX_DEPTH: usize = 16;

impl<'py> Vm<'py, '_> {
    /// The copy `copy.deepcopy` would make of `args[0]`, where `function` is it and the
    /// value is one the VM copies; else None (the call is made as any other).
    pub(super) fn modeled_deepcopy(
        &mut self,
        function: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let ([value], true) = (args, kwargs.is_empty()) else {
            return Ok(None);
        };
        let deepcopy = self.deepcopy.get_or_init(|| {
            import(self.py, "copy")
                .and_then(|copy| copy.getattr(pyo3::intern!(self.py, "deepcopy")))
                .ok()
        });
        if !deepcopy.as_ref().is_some_and(|deepcopy| function.is(deepcopy)) {
            return Ok(None);
        }
        let copy = import(self.py, "copy")?;
        let copyreg = import(self.py, "copyreg")?;
        let tables = [
            copy.getattr(pyo3::intern!(self.py, "_deepcopy_dispatch"))?,
            copyreg.getattr(pyo3::intern!(self.py, "dispatch_table"))?,
        ];
        let mut classes = Vec::new();
        if !self.copies_plainly(*value, &tables, &mut classes, &mut Vec::new(), 0)? {
            return Ok(None);
        }
        for (class, slots) in &classes {
            self.guard_plain_copies(class, slots, &tables)?;
        }
        let mut copying = Copying {
            memo: FxHashMap::default(),
            classes,
        };
        Ok(Some(self.deep_copied(*value, &mut copying)))
    }

    /// Whether `copy.deepcopy` makes of `vid` what `deep_copied` does (the classes of the
    /// instances met gathered in `classes`, the containers being looked at in `open`).
    fn copies_plainly(
        &self,
        vid: Vid,
        tables: &[Bound<'py, PyAny>; 2],
        classes: &mut Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
        open: &mut Vec<Vid>,
        depth: usize,
    ) -> PyResult<bool> {
        if depth > MAX_DEPTH {
            return Ok(false);
        }
        if open.contains(&vid) {
            return Ok(true); // a cycle: the memo gives the copy being made
        }
        let items: Vec<Vid> = match self.val(vid) {
            Val::Obj { .. } => return self.copied_as_itself(vid),
            Val::Scalar { example, .. } => return Ok(is_atom(example)),
            Val::Tuple(items) | Val::List(items) => items.clone(),
            Val::Dict(pairs) => {
                for (key, _) in pairs {
                    if !self.copied_as_itself(*key)? {
                        return Ok(false);
                    }
                }
                pairs.iter().map(|(_, value)| *value).collect()
            }
            Val::Object { class, attrs } => {
                if attrs.iter().any(|(name, _)| name == "__deepcopy__") {
                    return Ok(false);
                }
                if !classes.iter().any(|(c, _)| c.is(class)) {
                    let Some(slots) = self.plain_copy_slots(class, tables)? else {
                        return Ok(false);
                    };
                    classes.push((class.clone(), slots));
                }
                attrs.iter().map(|(_, value)| *value).collect()
            }
            _ => return Ok(false),
        };
        open.push(vid);
        for item in items {
            if !self.copies_plainly(item, tables, classes, open, depth + 1)? {
                return Ok(false);
            }
        }
        open.pop();
        Ok(true)
    }

    /// Whether `vid` is an object that is its own copy: an atom (a tuple of atoms from the
    /// frame may hold other items on a later call).
    fn copied_as_itself(&self, vid: Vid) -> PyResult<bool> {
        match self.val(vid) {
            Val::Obj { obj, source } => {
                Ok(!(source.is_some() && obj.is_instance_of::<PyTuple>()) && is_atom(obj))
            }
            _ => Ok(false),
        }
    }

    /// The class's `__slotnames__` where its instances are copied as a bare new one given
    /// their `__dict__`'s copy and their slots' (see the module's documentation); else None.
    fn plain_copy_slots(
        &self,
        class: &Bound<'py, PyAny>,
        tables: &[Bound<'py, PyAny>; 2],
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let object = builtin(self.py, "object")?;
        let plain_layout = is_heap_type(class)
            && class.get_type().is(&builtin(self.py, "type")?)
            && solid_base(class)?.is_some_and(|base| base.is(&object));
        if !plain_layout {
            return Ok(None);
        }
        for table in tables {
            if table.contains(class)? {
                return Ok(None);
            }
        }
        for name in ABSENT {
            if class.hasattr(name)? {
                return Ok(None);
            }
        }
        for name in OBJECTS {
            match (class.getattr(name), object.getattr(name)) {
                (Ok(own), Ok(objects)) if own.is(&objects) => {}
                (Err(_), Err(_)) => {} // `__getstate__` before 3.11
                _ => return Ok(None),
            }
        }
        // Written into the class by the first call, as the copy would (see the module's
        // documentation); guarded to be the list it is.
        let Ok(slots) = import(self.py, "copyreg")?
            .getattr(pyo3::intern!(self.py, "_slotnames"))?
            .call1((class,))
        else {
            return Ok(None);
        };
        let own = class.getattr(pyo3::intern!(self.py, "__dict__"))?;
        Ok(own
            .get_item(pyo3::intern!(self.py, "__slotnames__"))
            .ok()
            .filter(|written| written.is(&slots) && slots.is_exact_instance_of::<pyo3::types::PyList>()))
    }

    /// Guards what `plain_copy_slots` found of `class`.
    fn guard_plain_copies(
        &mut self,
        class: &Bound<'py, PyAny>,
        slots: &Bound<'py, PyAny>,
        tables: &[Bound<'py, PyAny>; 2],
    ) -> Res<()> {
        let held = self.intern(Source::Held(StrongRef::new(class)));
        let own = self.intern(Source::Attr(held, self.name_ref("__dict__")));
        let slot_names = self.intern(Source::Item(own, self.name_ref("__slotnames__")));
        self.add_guard(slot_names, Check::Equals(StrongRef::new(slots)));
        for table in tables {
            let table = self.intern(Source::Held(StrongRef::new(table)));
            let entry = self.intern(Source::Item(table, StrongRef::new(class)));
            self.add_guard(entry, Check::Absent);
        }
        for name in ABSENT {
            let attr = self.intern(Source::Attr(held, self.name_ref(name)));
            self.add_guard(attr, Check::Absent);
        }
        for name in OBJECTS {
            let attr = self.intern(Source::Attr(held, self.name_ref(name)));
            match class.getattr(name) {
                Ok(found) => self.add_guard(attr, Check::Id(Pin::new(&found))),
                Err(_) => self.add_guard(attr, Check::Absent),
            }
        }
        Ok(())
    }

    /// The copy of `vid`, which `copies_plainly` accepted.
    fn deep_copied(&mut self, vid: Vid, copying: &mut Copying<'py>) -> Vid {
        if let Some(copied) = copying.memo.get(&vid) {
            return *copied;
        }
        match self.val(vid).clone() {
            Val::Obj { obj, source } => {
                if let Some(source) = source {
                    self.add_guard(source, Check::Type(Pin::of_type(&obj.get_type().into_any())));
                }
                vid
            }
            Val::Tuple(items) => {
                let copies: Vec<Vid> = items
                    .iter()
                    .map(|item| self.deep_copied(*item, copying))
                    .collect();
                // A tuple holding itself (through a list) was copied on the way.
                if let Some(copied) = copying.memo.get(&vid) {
                    return *copied;
                }
                if copies == items {
                    return vid;
                }
                self.push_val(Val::Tuple(copies))
            }
            Val::List(items) => {
                let copy = self.push_val(Val::List(Vec::new()));
                copying.memo.insert(vid, copy);
                let copies = items
                    .iter()
                    .map(|item| self.deep_copied(*item, copying))
                    .collect();
                self.values[copy] = Val::List(copies);
                copy
            }
            Val::Dict(pairs) => {
                let copy = self.push_val(Val::Dict(Vec::new()));
                copying.memo.insert(vid, copy);
                let copies = pairs
                    .iter()
                    .map(|(key, value)| (self.deep_copied(*key, copying), self.deep_copied(*value, copying)))
                    .collect();
                self.values[copy] = Val::Dict(copies);
                copy
            }
            Val::Object { class, attrs } => {
                let copy = self.push_val(Val::Object {
                    class: class.clone(),
                    attrs: Vec::new(),
                });
                copying.memo.insert(vid, copy);
                // Its `__dict__`'s items in their order, then its slots set, in the class's
                // `__slotnames__` order.
                let slots: Vec<String> = copying
                    .classes
                    .iter()
                    .find(|(c, _)| c.is(&class))
                    .and_then(|(_, slots)| slots.extract().ok())
                    .unwrap_or_default();
                let in_dict = attrs.iter().filter(|(name, _)| !slots.contains(name));
                let in_slots = slots
                    .iter()
                    .filter_map(|slot| attrs.iter().find(|(name, _)| name == slot));
                let order: Vec<(String, Vid)> = in_dict.chain(in_slots).cloned().collect();
                let copies = order
                    .into_iter()
                    .map(|(name, value)| (name, self.deep_copied(value, copying)))
                    .collect();
                self.values[copy] = Val::Object { class, attrs: copies };
                copy
            }
            // A number of the graph: an atom.
            _ => vid,
        }
    }
}

/// A copy being made: each value copied so far and its copy, and the classes of the
/// instances it copies with their `__slotnames__`.
struct Copying<'py> {
    memo: FxHashMap<Vid, Vid>,
    classes: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
}

/// Whether `copy.deepcopy` gives `obj` itself: its exact type one of `_deepcopy_atomic`'s
/// (a tuple of atoms is one too, as its copy is itself).
fn is_atom(obj: &Bound<'_, PyAny>) -> bool {
    use pyo3::types::{PyBytes, PyComplex};
    crate::sot::translator::pyutil::is_quiet_value(obj)
        || obj.is_exact_instance_of::<PyComplex>()
        || obj.is_exact_instance_of::<PyBytes>()
        || obj
            .cast_exact::<PyTuple>()
            .is_ok_and(|items| items.iter().all(|item| is_atom(&item)))
}
