//! Sources: where a value came from, as a path from the frame (an argument, a free
//! variable, a global, an attribute or item of another source), interned in a table.

use std::collections::hash_map::Entry;
use std::hash::{Hash, Hasher};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyType};
use rustc_hash::{FxHashMap, FxHasher};
use smallvec::SmallVec;

pub use super::check::SourceId;
use super::check::{class_unchanged, same_key, Check};
use crate::hookapi::pyobject::StrongRef;

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
    /// An attribute as `object.__getattribute__` finds it (a slot, the instance's
    /// `__dict__`), never through the class's `__getattr__`, which reading it must not run.
    OwnAttr(SourceId, StrongRef),
    Item(SourceId, StrongRef),
    /// An entry of a dict's storage as dict's own methods read it (`dict.__getitem__` of a
    /// subclass's object): the subclass's `__getitem__` is never run.
    StoredItem(SourceId, StrongRef),
    /// An object the translation holds because it has no other way to it: the globals of
    /// another module's function reached without a source, a cell of such a function.
    Held(StrongRef),
    /// What the source's function returns, called with no arguments: one of the backend's
    /// `guarded_functions`, which read the process's state (the current device).
    Called(SourceId),
}

impl Source {
    pub fn same(&self, other: &Source) -> bool {
        match (self, other) {
            (Source::Argument(a), Source::Argument(b)) | (Source::Free(a), Source::Free(b)) => a == b,
            (Source::Global(a), Source::Global(b)) | (Source::Builtin(a), Source::Builtin(b)) => {
                same_key(a, b)
            }
            (Source::Attr(p, a), Source::Attr(q, b))
            | (Source::OwnAttr(p, a), Source::OwnAttr(q, b))
            | (Source::Item(p, a), Source::Item(q, b))
            | (Source::StoredItem(p, a), Source::StoredItem(q, b)) => p == q && same_key(a, b),
            (Source::Held(a), Source::Held(b)) => a.as_ptr() == b.as_ptr(),
            (Source::Called(a), Source::Called(b)) => a == b,
            _ => false,
        }
    }

    /// Where the table's index files it: equal sources (`same`) fall in one bucket.
    fn bucket(&self) -> u64 {
        let mut hasher = FxHasher::default();
        std::mem::discriminant(self).hash(&mut hasher);
        match self {
            Source::Argument(i) | Source::Free(i) | Source::Called(i) => i.hash(&mut hasher),
            Source::Global(key) | Source::Builtin(key) => key_hash(key).hash(&mut hasher),
            Source::Attr(parent, key)
            | Source::OwnAttr(parent, key)
            | Source::Item(parent, key)
            | Source::StoredItem(parent, key) => {
                parent.hash(&mut hasher);
                key_hash(key).hash(&mut hasher);
            }
            Source::Held(held) => (held.as_ptr() as usize).hash(&mut hasher),
        }
        hasher.finish()
    }

    pub fn clone_ref(&self, py: Python<'_>) -> Source {
        match self {
            Source::Argument(i) => Source::Argument(*i),
            Source::Free(i) => Source::Free(*i),
            Source::Global(n) => Source::Global(n.clone_ref(py)),
            Source::Builtin(n) => Source::Builtin(n.clone_ref(py)),
            Source::Attr(p, n) => Source::Attr(*p, n.clone_ref(py)),
            Source::OwnAttr(p, n) => Source::OwnAttr(*p, n.clone_ref(py)),
            Source::Item(p, k) => Source::Item(*p, k.clone_ref(py)),
            Source::StoredItem(p, k) => Source::StoredItem(*p, k.clone_ref(py)),
            Source::Held(g) => Source::Held(g.clone_ref(py)),
            Source::Called(p) => Source::Called(*p),
        }
    }
}

/// A key's hash where computing it runs no code of the user's (an exact str, int, float,
/// bytes, bool or None: equal ones hash alike, as `same_key` needs), else 0.
fn key_hash(key: &StrongRef) -> isize {
    // SAFETY: a live object; hashing these exact builtin types runs no Python code and
    // cannot fail but for a str's memory (then 0: one bucket for all).
    unsafe {
        let object = key.as_ptr();
        let plain = [
            &raw mut ffi::PyUnicode_Type,
            &raw mut ffi::PyLong_Type,
            &raw mut ffi::PyFloat_Type,
            &raw mut ffi::PyBytes_Type,
            &raw mut ffi::PyBool_Type,
        ]
        .contains(&ffi::Py_TYPE(object))
            || object == ffi::Py_None();
        if !plain {
            return 0;
        }
        let hash = ffi::PyObject_Hash(object);
        if hash == -1 {
            ffi::PyErr_Clear();
            return 0;
        }
        hash
    }
}

/// The sources of one code object's cache entries, shared by them.
#[derive(Default)]
pub struct SourceTable {
    pub sources: Vec<Source>,
    /// Sources holding a number that changed between calls: later translations compute
    /// with them in the graph instead of guarding their value (automatic dynamic, as
    /// Dynamo's: specialize first, generalize what was seen to change).
    pub dynamic: Vec<SourceId>,
    /// The ids of `sources` by their bucket: interning one of many (a long list's items)
    /// looks at the few that may be the same, not at all. A bucket's first source, then the
    /// rare others (a list per bucket made an allocation per source).
    index: FxHashMap<u64, SourceId>,
    index_more: FxHashMap<u64, Vec<SourceId>>,
}

impl SourceTable {
    /// The id of `source`, added if new.
    pub fn intern(&mut self, source: Source) -> SourceId {
        let bucket = source.bucket();
        let id = self.sources.len();
        match self.index.entry(bucket) {
            Entry::Vacant(vacant) => {
                vacant.insert(id);
            }
            Entry::Occupied(first) if self.sources[*first.get()].same(&source) => return *first.get(),
            Entry::Occupied(_) => {
                let more = self.index_more.entry(bucket).or_default();
                if let Some(found) = more.iter().find(|other| self.sources[**other].same(&source)) {
                    return *found;
                }
                more.push(id);
            }
        }
        self.sources.push(source);
        id
    }

    pub fn clone_ref(&self, py: Python<'_>) -> SourceTable {
        SourceTable {
            sources: self.sources.iter().map(|s| s.clone_ref(py)).collect(),
            dynamic: self.dynamic.clone(),
            index: self.index.clone(),
            index_more: self.index_more.clone(),
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

    /// How the source reads in Python, for `explain` and logs. `handed`: where the code is
    /// a resume function, what each value handed to it was in the user's frame (see
    /// `handed_name`); empty for any other code.
    pub fn describe(
        &self,
        py: Python<'_>,
        id: SourceId,
        varnames: &[String],
        freevars: &[String],
        handed: &[String],
    ) -> String {
        if let Some(name) = self.handed_name(py, id, handed) {
            return name;
        }
        match &self.sources[id] {
            Source::Argument(i) => varnames.get(*i).cloned().unwrap_or_else(|| format!("<arg {i}>")),
            Source::Free(i) => freevars.get(*i).cloned().unwrap_or_else(|| format!("<free {i}>")),
            Source::Global(n) => format!("G[{}]", n.bind(py)),
            Source::Builtin(n) => format!("builtins.{}", n.bind(py)),
            Source::Held(held) => {
                let held = held.bind(py);
                match held
                    .cast::<pyo3::types::PyDict>()
                    .map(|globals| globals.get_item(pyo3::intern!(globals.py(), "__name__")))
                {
                    Ok(Ok(Some(name))) => format!("<globals of {name}>"),
                    _ if held.is_instance_of::<PyType>() => format!(
                        "<{}>",
                        held.getattr(pyo3::intern!(held.py(), "__qualname__"))
                            .map_or_else(|_| "a class".into(), |n| n.to_string())
                    ),
                    _ => format!(
                        "<{}>",
                        held.get_type()
                            .name()
                            .map_or_else(|_| "?".into(), |n| n.to_string())
                    ),
                }
            }
            Source::Called(p) => format!("{}()", self.describe(py, *p, varnames, freevars, handed)),
            Source::Attr(p, n) => format!(
                "{}.{}",
                self.describe(py, *p, varnames, freevars, handed),
                n.bind(py)
            ),
            Source::OwnAttr(p, n) => format!(
                "object.__getattribute__({}, {:?})",
                self.describe(py, *p, varnames, freevars, handed),
                n.bind(py).to_string()
            ),
            Source::Item(p, k) => format!(
                "{}[{}]",
                self.describe(py, *p, varnames, freevars, handed),
                key_text(py, k)
            ),
            Source::StoredItem(p, k) => format!(
                "dict.__getitem__({}, {})",
                self.describe(py, *p, varnames, freevars, handed),
                key_text(py, k)
            ),
        }
    }

    /// A resume function's one argument, the box of the values a graph break handed on
    /// (`codegen::resume_code`), and each value in it by what it was in the user's frame
    /// (`handed`, in the box's order): the guards read them as items of the box, which the
    /// user never wrote.
    fn handed_name(&self, py: Python<'_>, id: SourceId, handed: &[String]) -> Option<String> {
        if handed.is_empty() {
            return None;
        }
        match &self.sources[id] {
            Source::Argument(0) => Some("<values handed on>".to_owned()),
            Source::Item(parent, key) if matches!(self.sources[*parent], Source::Argument(0)) => {
                let key = key.bind(py);
                let index: usize = key
                    .is_exact_instance_of::<PyInt>()
                    .then(|| key.extract().ok())??;
                handed.get(index).cloned()
            }
            _ => None,
        }
    }

    /// The guard that comes with `check` of a value: where it pins the value's type or the
    /// value itself, the class's attributes unchanged too.
    pub fn class_guard(py: Python<'_>, check: &Check) -> Option<Check> {
        match check {
            Check::Type(ty) => ty
                .object(py)
                .and_then(|t| t.cast_into::<PyType>().ok())
                .and_then(|t| class_unchanged(&t)),
            Check::Id(pin) => pin.object(py).and_then(|o| class_unchanged(&o.get_type())),
            _ => None,
        }
    }

    /// Adds `check` of `source` to `guards` unless a guard of the source already implies
    /// it. Where it implies guards of the source, it takes the first one's place (checked
    /// as early, never before the guards that make fetching the source safe) and the others
    /// go. What it changed goes on `journal`, for `undo_guards`; `positions` keeps where
    /// each source's guards are (only those are looked through).
    pub fn add_guard(
        guards: &mut Vec<Guard>,
        journal: &mut Vec<GuardUndo>,
        positions: &mut GuardPositions,
        source: SourceId,
        check: Check,
    ) {
        // One pass: a guard of the source that implies the new one makes it needless; else
        // the first it implies is where it goes.
        let mut first_implied = None;
        for &index in positions.of_source(source) {
            let guard = &guards[index as usize];
            if guard.check.implies(&check) {
                return;
            }
            if first_implied.is_none() && check.implies(&guard.check) {
                first_implied = Some(index as usize);
            }
        }
        let Some(first) = first_implied else {
            positions.pushed(source, guards.len());
            guards.push(Guard { source, check });
            journal.push(GuardUndo::Pushed);
            return;
        };
        let others: Vec<usize> = positions
            .of_source(source)
            .iter()
            .map(|&index| index as usize)
            .filter(|&index| index > first && check.implies(&guards[index].check))
            .collect();
        let mut removed = Vec::with_capacity(others.len());
        if !others.is_empty() {
            let mut kept = Vec::with_capacity(guards.len() - others.len());
            for (index, guard) in std::mem::take(guards).into_iter().enumerate() {
                match others.binary_search(&index) {
                    Ok(_) => removed.push((index, guard)),
                    Err(_) => kept.push(guard),
                }
            }
            *guards = kept;
            *positions = GuardPositions::of(guards);
        }
        let replaced = std::mem::replace(&mut guards[first].check, check);
        journal.push(GuardUndo::Replaced {
            index: first,
            check: replaced,
            removed,
        });
    }

    /// Takes `guards` back to where `journal` was `mark` long, undoing `add_guard`s since.
    pub fn undo_guards(
        guards: &mut Vec<Guard>,
        journal: &mut Vec<GuardUndo>,
        positions: &mut GuardPositions,
        mark: usize,
    ) {
        while journal.len() > mark {
            match journal.pop().expect("longer than the mark") {
                GuardUndo::Pushed => {
                    let guard = guards.pop().expect("a pushed guard");
                    positions.popped(guard.source);
                }
                GuardUndo::Replaced {
                    index,
                    check,
                    removed,
                } => {
                    // The removed guards all came after `index`: put back in order, each
                    // lands where it was.
                    let moved = !removed.is_empty();
                    for (at, guard) in removed {
                        guards.insert(at, guard);
                    }
                    guards[index].check = check;
                    if moved {
                        *positions = GuardPositions::of(guards);
                    }
                }
            }
        }
    }
}

/// Where each source's guards are in a translation's guards, in order, by source id (ids
/// are the source table's indices): `add_guard` looks through a source's own guards, not
/// all of them (a long translation has thousands, and most of its guards are of a source
/// guarded before). Indexed, not hashed: hashing and growing a map here was a percent of a
/// first call.
#[derive(Default)]
pub struct GuardPositions(Vec<SmallVec<[u32; 4]>>);

impl GuardPositions {
    fn of(guards: &[Guard]) -> GuardPositions {
        let mut positions = GuardPositions::default();
        for (index, guard) in guards.iter().enumerate() {
            positions.pushed(guard.source, index);
        }
        positions
    }

    pub fn of_source(&self, source: SourceId) -> &[u32] {
        self.0.get(source).map_or(&[], SmallVec::as_slice)
    }

    fn pushed(&mut self, source: SourceId, index: usize) {
        let index = u32::try_from(index).expect("fewer than 2**32 guards");
        if self.0.len() <= source {
            self.0.resize_with(source + 1, SmallVec::new);
        }
        self.0[source].push(index);
    }

    fn popped(&mut self, source: SourceId) {
        if let Some(indices) = self.0.get_mut(source) {
            indices.pop();
        }
    }
}

/// Where a child (attribute or item) of a source is interned: under the first source whose
/// guards pin the object that the source's guards pin (`Check::Id`). Every frame that passes
/// both identity guards holds one object at the two sources, so their children are one value
/// and guarded once. The first pin comes before the source's, and the child's guards come
/// after both. Read from the guards in order once, then kept as guards are pushed.
#[derive(Default)]
pub struct Pins {
    /// Per source id, the address its first identity guard pins (0: none; indexed, as each
    /// child interned asks of its parent).
    pinned: Vec<usize>,
    /// Per address, the first source pinned to it.
    first: FxHashMap<usize, SourceId>,
}

impl Pins {
    pub fn of(guards: &[Guard]) -> Pins {
        let mut pins = Pins::default();
        for guard in guards {
            pins.pushed(guard);
        }
        pins
    }

    /// `guard` put after the guards read so far.
    pub fn pushed(&mut self, guard: &Guard) {
        if let Check::Id(pin) = &guard.check {
            let address = pin.address();
            if self.pinned.len() <= guard.source {
                self.pinned.resize(guard.source + 1, 0);
            }
            if self.pinned[guard.source] == 0 {
                self.pinned[guard.source] = address;
            }
            self.first.entry(address).or_insert(guard.source);
        }
    }

    /// The address the first identity guard of `source` pins, if one does.
    fn pinned_address(&self, source: SourceId) -> Option<usize> {
        self.pinned.get(source).copied().filter(|address| *address != 0)
    }

    /// Whether an identity guard pins `source`.
    pub fn is_pinned(&self, source: SourceId) -> bool {
        self.pinned_address(source).is_some()
    }

    /// The first source pinned to the object at `address`.
    pub fn first_pinned(&self, address: usize) -> Option<SourceId> {
        self.first.get(&address).copied()
    }

    /// The source a child of `parent` is interned under.
    pub fn alias(&self, parent: SourceId) -> SourceId {
        self.pinned_address(parent)
            .and_then(|address| self.first.get(&address))
            .copied()
            .unwrap_or(parent)
    }
}

/// A name as the key of a source.
pub fn name_ref(py: Python<'_>, name: &str) -> StrongRef {
    StrongRef::from_owned(crate::sot::translator::pyutil::interned(py, name).into_any())
}

/// One guard: a check of a source's value.
pub struct Guard {
    pub source: SourceId,
    pub check: Check,
}

/// What one `SourceTable::add_guard` changed of the guards, to undo it.
pub enum GuardUndo {
    /// A guard put at the end.
    Pushed,
    /// The check that was at `index` before a stronger one took its place, and the guards
    /// the stronger one made redundant, removed, with where they were (in order).
    Replaced {
        index: usize,
        check: Check,
        removed: Vec<(usize, Guard)>,
    },
}

/// A key as a description shows it: its repr, or `?` where that fails.
fn key_text(py: Python<'_>, key: &StrongRef) -> String {
    key.bind(py)
        .repr()
        .map_or_else(|_| "?".to_owned(), |r| r.to_string())
}

#[cfg(test)]
mod tests {
    use super::{Check, Guard, GuardPositions, GuardUndo, SourceTable};

    fn lengths(guards: &[Guard]) -> Vec<(usize, Option<usize>)> {
        guards
            .iter()
            .map(|g| {
                let n = match g.check {
                    Check::Len(n) => Some(n),
                    _ => None,
                };
                (g.source, n)
            })
            .collect()
    }

    #[test]
    fn undoing_guards_restores_them_in_order() {
        let (mut guards, mut journal, mut guarded) = (Vec::new(), Vec::new(), GuardPositions::default());
        SourceTable::add_guard(&mut guards, &mut journal, &mut guarded, 0, Check::Present);
        SourceTable::add_guard(&mut guards, &mut journal, &mut guarded, 1, Check::Len(1));
        let mark = journal.len();
        // Len(3) implies Present: it takes its place; the others are pushed; an implied one
        // is not added.
        SourceTable::add_guard(&mut guards, &mut journal, &mut guarded, 0, Check::Len(3));
        SourceTable::add_guard(&mut guards, &mut journal, &mut guarded, 2, Check::Len(2));
        SourceTable::add_guard(&mut guards, &mut journal, &mut guarded, 2, Check::Present);
        assert_eq!(lengths(&guards), [(0, Some(3)), (1, Some(1)), (2, Some(2))]);
        SourceTable::undo_guards(&mut guards, &mut journal, &mut guarded, mark);
        assert_eq!(lengths(&guards), [(0, None), (1, Some(1))]);
        assert!(matches!(guards[0].check, Check::Present));
        assert_eq!(journal.len(), mark);
    }

    #[test]
    fn undoing_a_replacement_puts_the_removed_guards_back_where_they_were() {
        let guard = |source, n| Guard {
            source,
            check: Check::Len(n),
        };
        // [g0, g1, g2, g3, g4] became [g0, g1', g3]: g1's check replaced, g2 and g4 removed.
        let mut guards = vec![guard(0, 0), guard(1, 10), guard(3, 3)];
        let mut journal = vec![GuardUndo::Replaced {
            index: 1,
            check: Check::Len(1),
            removed: vec![(2, guard(2, 2)), (4, guard(4, 4))],
        }];
        let mut positions = GuardPositions::of(&guards);
        SourceTable::undo_guards(&mut guards, &mut journal, &mut positions, 0);
        assert_eq!(
            lengths(&guards),
            [
                (0, Some(0)),
                (1, Some(1)),
                (2, Some(2)),
                (3, Some(3)),
                (4, Some(4))
            ]
        );
        // Where each source's guards are follows them: the guard of 4 put back (last now)
        // makes the same check needless, and 3's moved one is found where it went.
        SourceTable::add_guard(&mut guards, &mut journal, &mut positions, 4, Check::Len(4));
        SourceTable::add_guard(&mut guards, &mut journal, &mut positions, 3, Check::Present);
        assert_eq!(guards.len(), 5);
        assert!(journal.is_empty());
    }
}
