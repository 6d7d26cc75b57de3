//! The value arena and the sources values come from: making, reading and wrapping values.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    pub(super) fn push_val(&mut self, val: Val<'py>) -> Vid {
        self.values.push(val);
        self.made_at.push(self.top_pc);
        self.values.len() - 1
    }

    /// The top frame's instruction that made `vid`, if the translated code made it.
    pub fn made_at(&self, vid: Vid) -> Option<usize> {
        self.made_at.get(vid).copied().filter(|pc| *pc != usize::MAX)
    }

    pub(super) fn constant(&mut self, obj: Bound<'py, PyAny>) -> Vid {
        self.push_val(Val::constant(obj))
    }

    pub(super) fn boolean(&mut self, value: bool) -> Vid {
        let py = self.py;
        self.constant(PyBool::new(py, value).to_owned().into_any())
    }

    pub(super) fn none(&mut self) -> Vid {
        let none = self.ops.none.clone();
        self.constant(none)
    }

    pub fn add_guard(&mut self, source: SourceId, check: Check) {
        for recording in &mut self.recording {
            recording.request(self.py, source, &check);
        }
        let class = SourceTable::class_guard(self.py, &check);
        for check in std::iter::once(check).chain(class) {
            let before = self.guard_journal.len();
            SourceTable::add_guard(
                &mut self.guards,
                &mut self.guard_journal,
                &mut self.guard_positions,
                source,
                check,
            );
            match self.guard_journal.last() {
                _ if self.guard_journal.len() == before => {}
                Some(GuardUndo::Pushed) => {
                    if let (Some(pins), Some(pushed)) = (&mut self.pins, self.guards.last()) {
                        pins.pushed(pushed);
                    }
                }
                // A guard changed in place, where it pins by identity (before or now) or
                // others went: the pins are read again when next asked.
                Some(GuardUndo::Replaced {
                    index,
                    check: replaced,
                    removed,
                }) => {
                    let pinning = |check: &Check| matches!(check, Check::Id(_));
                    if !removed.is_empty() || pinning(replaced) || pinning(&self.guards[*index].check) {
                        self.pins = None;
                    }
                }
                None => {}
            }
        }
    }

    /// Which defaults of the function at `source` its guard (`Check::Function`) says are
    /// None (none where no such guard is).
    pub(super) fn guarded_absent_defaults(&self, source: SourceId) -> AbsentDefaults {
        self.guard_positions
            .of_source(source)
            .iter()
            .find_map(|&index| match self.guards[index as usize].check {
                Check::Function { absent, .. } => Some(absent),
                _ => None,
            })
            .unwrap_or(AbsentDefaults::NOT_SAID)
    }

    /// The id of `source`; an attribute or item of an object pinned by identity is one
    /// source with the same child of the first source pinned to it (`Pins`).
    pub(super) fn intern(&mut self, source: Source) -> SourceId {
        let pins = self.pins.get_or_insert_with(|| Pins::of(&self.guards));
        let source = match source {
            Source::Attr(parent, name) => Source::Attr(pins.alias(parent), name),
            Source::OwnAttr(parent, name) => Source::OwnAttr(pins.alias(parent), name),
            Source::Item(parent, key) => Source::Item(pins.alias(parent), key),
            Source::StoredItem(parent, key) => Source::StoredItem(pins.alias(parent), key),
            other => other,
        };
        self.sources.intern(source)
    }

    /// The first source the guards pin to the object at `address`.
    pub(super) fn pinned_source(&mut self, address: usize) -> Option<SourceId> {
        self.pins
            .get_or_insert_with(|| Pins::of(&self.guards))
            .first_pinned(address)
    }

    /// The object `source`'s identity guard pins (its last in the guards' order; a source has
    /// one: another would contradict it), found through the source's own guards.
    pub(super) fn identity_pin(&self, source: SourceId) -> Option<&Pin> {
        self.guard_positions
            .of_source(source)
            .iter()
            .filter_map(|index| match &self.guards[*index as usize].check {
                Check::Id(pin) => Some((*index, pin)),
                _ => None,
            })
            .max_by_key(|(index, _)| *index)
            .map(|(_, pin)| pin)
    }

    /// Whether an identity guard pins `source`.
    pub(super) fn is_pinned(&mut self, source: SourceId) -> bool {
        self.pins
            .get_or_insert_with(|| Pins::of(&self.guards))
            .is_pinned(source)
    }

    /// The value of a source, made once.
    pub(super) fn value_of_source(&mut self, source: Source, obj: Bound<'py, PyAny>) -> Vid {
        let id = self.intern(source);
        self.value_of_source_id(id, obj)
    }

    /// The value of an interned source, made once.
    pub(super) fn value_of_source_id(&mut self, id: SourceId, obj: Bound<'py, PyAny>) -> Vid {
        if let Some(vid) = self.by_source.get(&id) {
            for recording in &mut self.recording {
                recording.read(id, *vid);
            }
            return *vid;
        }
        self.sourced.push((id, obj.clone()));
        let vid = self.push_val(Val::Obj {
            obj,
            source: Some(id),
        });
        self.by_source.insert(id, vid);
        vid
    }

    pub(super) fn val(&self, vid: Vid) -> &Val<'py> {
        &self.values[vid]
    }

    /// A computed Python value: mutable containers become symbolic ones.
    pub(super) fn wrap_result(&mut self, result: Bound<'py, PyAny>) -> Vid {
        self.wrap_held(result, 1)
    }

    /// `result`, of which `holders` references are the call's result and its container's
    /// (none other: the call made it).
    fn wrap_held(&mut self, result: Bound<'py, PyAny>, holders: isize) -> Vid {
        // A tuple the call made (`divmod`, `str.partition`) is a new object on every call:
        // the generated code makes it, where a constant would be one object for all. One
        // held elsewhere too (an argument handed back, `t[:]`) stays that object.
        if result.is_exact_instance_of::<PyTuple>() && result.get_refcnt() == holders {
            let items: Vec<Vid> = result
                .try_iter()
                .map(|it| it.flatten().map(|i| self.wrap_held(i, 2)).collect())
                .unwrap_or_default();
            return self.push_val(Val::Tuple(items));
        }
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

    pub(super) fn int_value(&mut self, value: usize) -> Res<Vid> {
        Ok(self.constant(value.into_pyobject(self.py)?.into_any()))
    }

    /// Whether `vid` is a constant of the translation or a value, or a tuple or list of
    /// those: nothing that another call's frame may hold another of.
    pub(super) fn is_constant(&self, vid: Vid) -> bool {
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
