//! Guards at decision points: a value made concrete, its identity or type pinned, where the translation depends on it.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// A frame value that is a tensor becomes a graph input; a dynamic number used as
    /// anything but an arithmetic operand is specialized; anything else stays.
    pub(super) fn realize(&mut self, vid: Vid) -> Res<Vid> {
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

    /// `realize` of a value and of everything in it, in order: without recursion, and each
    /// value once (a list may hold itself).
    pub(super) fn realize_deep(&mut self, vid: Vid) -> Res<()> {
        let mut pending = vec![vid];
        let mut seen = rustc_hash::FxHashSet::default();
        while let Some(vid) = pending.pop() {
            if !seen.insert(vid) {
                continue;
            }
            self.realize(vid)?;
            match self.val(vid) {
                Val::Tuple(items) | Val::List(items) | Val::NamedTuple { items, .. } => {
                    pending.extend(items.iter().rev())
                }
                Val::Slice(a, b, c) => pending.extend([*c, *b, *a]),
                _ => {}
            }
        }
        Ok(())
    }

    /// The Python object a value stands for, guarding its source on the whole value.
    pub(super) fn concrete(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
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

    pub(super) fn make_concrete(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
        let vid = self.realize(vid)?;
        let val = self.val(vid).clone();
        match kind_of(&val).concrete(self, vid, &val)? {
            Some(obj) => Ok(obj),
            None => unsupported("an iterator, cell or bound container method used as a value"),
        }
    }

    /// Guards `source` on `obj` as a whole: its value for immutable values and for lists,
    /// dicts and sets of values (compared with a copy: the object itself may be mutated
    /// between calls), else its identity.
    pub(super) fn guard_value(&mut self, source: SourceId, obj: &Bound<'py, PyAny>) -> Res<()> {
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
        } else if pinned_by_items(obj) {
            // A tuple of classes or functions (a class's `__mro__`): each item guarded, weakly,
            // so that the translation does not keep alive the classes the tuple holds.
            let tuple = obj.cast::<PyTuple>().map_err(PyErr::from)?;
            self.add_guard(source, Check::Type(Pin::of_type(&obj.get_type().into_any())));
            self.add_guard(source, Check::Len(tuple.len()));
            for (index, item) in tuple.iter().enumerate() {
                let key = index.into_pyobject(self.py)?.into_any();
                let item_source = self.intern(Source::Item(source, StrongRef::new(&key)));
                self.guard_value(item_source, &item)?;
            }
        } else {
            self.pin(source, obj)?;
        }
        Ok(())
    }

    /// Guards that `source` holds `obj` itself. Not an exception from the frame: each call
    /// raises a new one (the guard would fail every time), and holding it would keep its
    /// traceback's frames, and their locals, alive as long as the translation.
    pub(super) fn pin(&mut self, source: SourceId, obj: &Bound<'py, PyAny>) -> Res<()> {
        if obj.is_instance(&self.py.get_type::<pyo3::exceptions::PyBaseException>())? {
            return graph_break("an exception from the frame used as a value");
        }
        self.add_guard(source, Check::Id(Pin::new(obj)));
        Ok(())
    }

    /// Whether `member` (the value `vid`) is a member of an `enum.Enum` class with an
    /// immutable payload whose `__dict__` (`_value_`, `_name_`, what its class stored
    /// there) holds immutable values only; then it is pinned with them: its identity and
    /// class, and its `__dict__`'s keys and values, which a program can set again (numpy
    /// reads a `_CopyMode`'s `.value` when called). The translation may then take the
    /// member, and what it reads of it, as constants.
    pub(super) fn pin_enum_member(&mut self, vid: Vid, member: &Bound<'py, PyAny>) -> Res<bool> {
        if !member.is_instance(&self.ops.enum_type)? {
            return Ok(false);
        }
        let payload = solid_base(&member.get_type().into_any())?;
        let immutable_payload = payload.is_some_and(|base| {
            ["object", "int", "float", "complex", "str", "bytes"]
                .iter()
                .any(|name| builtin(self.py, name).is_ok_and(|b| b.is(&base)))
        });
        let state = member.getattr(pyo3::intern!(member.py(), "__dict__")).ok();
        let Some(state) = state.as_ref().and_then(|s| s.cast_exact::<PyDict>().ok()) else {
            return Ok(false);
        };
        if !immutable_payload || !state.values().iter().all(|value| is_immutable(&value)) {
            return Ok(false);
        }
        let source = match self.val(vid) {
            Val::Obj { source: Some(s), .. } => *s,
            _ => self.intern(Source::Held(StrongRef::new(member))),
        };
        self.pin(source, member)?;
        let state_source = self.intern(Source::Attr(source, self.name_ref("__dict__")));
        let keys = PyTuple::new(self.py, state.keys())?;
        self.add_guard(state_source, Check::Keys(StrongRef::new(keys.as_any())));
        for (key, value) in state.iter() {
            let entry = self.intern(Source::Item(state_source, StrongRef::new(&key)));
            self.guard_value(entry, &value)?;
        }
        Ok(true)
    }

    /// The object a value stands for where only its identity matters (`is`).
    pub(super) fn identity_of(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
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

    pub(super) fn guard_type(&mut self, vid: Vid) {
        if let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(vid)
        {
            let (ty, source) = (obj.get_type().into_any(), *source);
            self.add_guard(source, Check::Type(Pin::of_type(&ty)));
        }
    }

    /// `type(vid)`, by its kind (guarded where it came from the frame).
    pub(super) fn type_of(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
        let vid = self.realize(vid)?;
        let val = self.val(vid).clone();
        match kind_of(&val).python_type(self, vid, &val)? {
            Some(ty) => Ok(ty),
            None => unsupported("the type of an internal value"),
        }
    }
}

/// Whether a tuple is guarded by its items rather than pinned: an exact tuple whose items are
/// values, or objects a weak reference pins (not exceptions), or such tuples.
fn pinned_by_items(obj: &Bound<'_, PyAny>) -> bool {
    const MOST_ITEMS: usize = 16;
    let Ok(tuple) = obj.cast::<PyTuple>() else {
        return false;
    };
    tuple.is_exact_instance_of::<PyTuple>()
        && tuple.len() <= MOST_ITEMS
        && tuple.iter().all(|item| {
            is_value_type(&item)
                || pinned_by_items(&item)
                || (weakly_referenceable(&item)
                    && !item.is_instance_of::<pyo3::exceptions::PyBaseException>())
        })
}

fn weakly_referenceable(obj: &Bound<'_, PyAny>) -> bool {
    obj.get_type()
        .getattr("__weakrefoffset__")
        .and_then(|offset| offset.extract::<isize>())
        .is_ok_and(|offset| offset != 0)
}
