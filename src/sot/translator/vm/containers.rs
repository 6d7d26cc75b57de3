//! Lists, tuples, dicts and sets: their items, keys and methods.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// `items` sorted as `sorted(items, key=key, reverse=reverse)` would (stable), by
    /// their known keys.
    pub(super) fn sort_items(&mut self, items: Vec<Vid>, key: Option<Vid>, reverse: bool) -> Res<Vec<Vid>> {
        let order = self.order_by_keys(&items, key, "sorted", reverse, None)?;
        let order: Vec<usize> = order.extract()?;
        Ok(order.into_iter().map(|i| items[i]).collect())
    }

    /// `builtin(range(len(items)), key=<the items' known keys>, ...)`.
    pub(super) fn order_by_keys(
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
        kwargs.set_item("key", keys.getattr(pyo3::intern!(keys.py(), "__getitem__"))?)?;
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
    pub(super) fn add_items(&mut self, target: Vid, new_items: Vec<Vid>) -> Res<()> {
        match self.val(target).clone() {
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
    pub(super) fn add_keys(&mut self, items: &mut Vec<Vid>, new: Vec<Vid>) -> Res<()> {
        for new in new {
            let value = self.concrete(new)?;
            if self.find_key(items, &value)?.is_none() {
                items.push(new);
            }
        }
        Ok(())
    }

    /// Whether `vid` is exactly a tuple (`name` "tuple") or a frozenset, guarding its type.
    pub(super) fn is_exact(&mut self, vid: Vid, name: &str) -> bool {
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

    /// Stores `value` at `key` among a dict's items: the key the items held already, whose
    /// value it replaced (None: it added the key).
    pub(super) fn dict_set(&mut self, items: &mut Vec<(Vid, Vid)>, key: Vid, value: Vid) -> Res<Option<Vid>> {
        let key_obj = self.concrete(key)?;
        match self.find_dict_key(items, &key_obj)? {
            Some(index) => {
                self.check_droppable(items[index].1)?;
                items[index].1 = value;
                Ok(Some(items[index].0))
            }
            None => {
                items.push((key, value));
                Ok(None)
            }
        }
    }

    /// Records `op`, which the translation makes on the dict `dict` (called once it cannot
    /// fail, before the dict's value changes): on a dict from the frame (its copy), as a side
    /// effect, replayed as made in order with the others; on a dict the translation made, in
    /// its history (`made_dict_op`).
    pub(super) fn dict_op(&mut self, dict: Vid, op: DictOp) -> Res<()> {
        match self.frame_dicts.get(&dict).copied() {
            Some(target) => self.side_effects.push(SideEffect::DictOp { target, op }),
            None => self.made_dict_op(dict, op)?,
        }
        Ok(())
    }

    /// `op` on a dict the translation made, kept in its history from the first operation
    /// that leaves its table unlike a new dict's of its items, up to a `clear` (which gives
    /// it a new dict's table again).
    fn made_dict_op(&mut self, dict: Vid, op: DictOp) -> Res<()> {
        if op == DictOp::Clear {
            self.dict_histories.remove(&dict);
            return Ok(());
        }
        if !self.dict_histories.contains_key(&dict) {
            if op.leaves_a_hole() {
                let Val::Dict(items) = self.val(dict).clone() else {
                    return unsupported("a dict's operation on another value");
                };
                self.dict_histories
                    .insert(dict, DictHistory { items, ops: vec![op] });
            }
            return Ok(());
        }
        let op = match op {
            // Replayed where the generated code makes the dict, before the side effects:
            // the items the update read now, not the mapping.
            DictOp::Update { other } if !matches!(self.val(other), Val::Dict(_)) => {
                let items = self.dict_items(other)?;
                DictOp::Update {
                    other: self.push_val(Val::Dict(items)),
                }
            }
            op => op,
        };
        if let Some(history) = self.dict_histories.get_mut(&dict) {
            history.ops.push(op);
        }
        Ok(())
    }

    /// Fails where `value`, leaving a container, may be the last reference to an object
    /// with `__del__`: when that runs (and what it does) is not simulated.
    pub(super) fn check_droppable(&self, value: Vid) -> Res<()> {
        if let Val::Obj { obj, .. } = self.val(value) {
            if has_attr(obj.get_type().as_any(), "__del__")? {
                return unsupported(format!(
                    "dropping a {} (it has __del__) from a container",
                    obj.get_type().name()?
                ));
            }
        }
        Ok(())
    }

    /// Notes that keys left the dict the translation made `dict`, for the iterators over it.
    pub(super) fn note_keys_removed(&mut self, dict: Vid) {
        let iterating: Vec<Vid> = (0..self.values.len())
            .filter(|vid| matches!(&self.values[*vid], Val::DictIter(it) if iterated_dict(self, it) == dict))
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
    pub(super) fn equal_items(&mut self, element: Vid, target: Vid) -> Res<bool> {
        if self.identical(element, target)? {
            return Ok(true);
        }
        let equal = match compare_made_objects(self, "eq", element, target)? {
            Some(r) => r,
            None => self.operator_call("eq", vec![element, target])?,
        };
        self.truthy(equal)
    }

    /// The ValueError of `list.index`/`remove` or `tuple.index` not finding `target`, raised
    /// by the method itself on an empty sequence, so that its message is the interpreter's.
    pub(super) fn raise_not_found(&mut self, sequence: Vid, name: &str, target: Vid) -> Res<Vid> {
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
    pub(super) fn find_key(&mut self, stored: &[Vid], key: &Bound<'py, PyAny>) -> Res<Option<usize>> {
        self.check_native_key(key)?;
        let Ok(hash) = key.hash() else {
            // CPython's TypeError, which 3.14 words by the operation (a dict key, a set
            // element): raised by the operation run for real.
            return unsupported(format!("an unhashable {} used as a key", key.get_type().name()?));
        };
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
    pub(super) fn check_native_key(&self, key: &Bound<'py, PyAny>) -> Res<()> {
        if self.hashes_in_python(key)? {
            return unsupported(format!(
                "a {} key (its __hash__ or __eq__ runs Python code)",
                key.get_type().name()?
            ));
        }
        Ok(())
    }

    pub(super) fn find_dict_key(
        &mut self,
        items: &[(Vid, Vid)],
        key: &Bound<'py, PyAny>,
    ) -> Res<Option<usize>> {
        let keys: Vec<Vid> = items.iter().map(|(k, _)| *k).collect();
        self.find_key(&keys, key)
    }

    /// Whether hashing or comparing `obj` runs a class's own `__hash__` or `__eq__`
    /// (the items' too, for tuples and frozensets).
    pub(super) fn hashes_in_python(&self, obj: &Bound<'py, PyAny>) -> PyResult<bool> {
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
        let slot_wrapper = builtin(self.py, "object")?
            .getattr(pyo3::intern!(self.py, "__eq__"))?
            .get_type();
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
    pub(super) fn compares_by_identity(&self, obj: &Bound<'py, PyAny>) -> PyResult<bool> {
        if is_value_type(obj) {
            return Ok(false);
        }
        let default = builtin(self.py, "object")?.getattr(pyo3::intern!(self.py, "__eq__"))?;
        Ok(self
            .type_lookup(&obj.get_type().into_any(), "__eq__")?
            .is_some_and(|eq| eq.is(&default)))
    }

    /// The items of a dict, as `{**x}`, `f(**x)` and `dict.update(x)` read a mapping: a
    /// dict the translation made, or an exact dict or OrderedDict from the frame. Another
    /// mapping's `keys()` and `__getitem__`, and the TypeError of a value that is none, are
    /// CPython's to run.
    pub(super) fn dict_items(&mut self, vid: Vid) -> Res<Vec<(Vid, Vid)>> {
        let vid = self.realize(vid)?;
        match self.val(vid) {
            Val::Dict(items) => return Ok(items.clone()),
            Val::Obj { obj, .. } if obj.is_exact_instance_of::<PyDict>() || self.is_ordered_dict(obj) => {}
            _ => {
                let ty = self.type_of(vid)?;
                return unsupported(format!(
                    "the items of a {} read as a mapping",
                    ty.getattr(pyo3::intern!(ty.py(), "__name__"))?
                ));
            }
        }
        let keys = self.items_of(vid)?;
        if let Some(items) = self.guarded_dict_values(vid, &keys)? {
            return Ok(items);
        }
        keys.into_iter()
            .map(|k| Ok((k, self.subscript(vid, k)?)))
            .collect()
    }

    /// The values of an exact dict from the frame whose keys `items_of` just guarded, each
    /// read through its item's source: the keys guard says every key is present, so no
    /// guard of each key's presence. None for any other dict (a copy the translation
    /// changed, an OrderedDict), whose values its subscript reads.
    fn guarded_dict_values(&mut self, vid: Vid, keys: &[Vid]) -> Res<Option<Vec<(Vid, Vid)>>> {
        let (obj, source) = match self.val(vid) {
            Val::Obj {
                obj,
                source: Some(source),
            } if obj.is_exact_instance_of::<PyDict>() => (obj.clone(), *source),
            _ => return Ok(None),
        };
        if self.mutated.contains_key(&(obj.as_ptr() as usize)) {
            return Ok(None);
        }
        let mut items = Vec::with_capacity(keys.len());
        for &key in keys {
            let key_obj = self.concrete(key)?;
            self.check_native_key(&key_obj)?;
            let value = obj.get_item(&key_obj)?;
            let item = self.value_of_source(Source::Item(source, StrongRef::new(&key_obj)), value);
            items.push((key, item));
        }
        Ok(Some(items))
    }

    /// The item at `index` of a list as it is now (None past its end): a list the
    /// translation made, or one from the frame (guarded on its length, then the item).
    pub(super) fn list_item(&mut self, list: Vid, index: usize) -> Res<Option<Vid>> {
        match self.val(list).clone() {
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

    /// A method of a container (or generator) the translation made, by its kind.
    pub(super) fn container_method(
        &mut self,
        container: Vid,
        name: &str,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<Vid> {
        if !kwargs.is_empty() && !matches!(name, "update" | "sort") {
            return unsupported(format!("keyword arguments to {name}"));
        }
        if name == "get" && matches!(self.val(container), Val::Obj { .. }) {
            if let Some(found) = self.frame_dict_get(container, &args)? {
                return Ok(found);
            }
            // Changed since the method was read: its copy's.
            if let Some(copy) = self.readonly_copy(container)? {
                return self.container_method(copy, name, args, kwargs);
            }
        }
        let val = self.val(container).clone();
        match kind_of(&val).method(self, container, &val, name, &args, &kwargs)? {
            Some(result) => Ok(result),
            None => unsupported(format!("method {name} of a list, dict or set")),
        }
    }

    /// `table.get(key[, default])` of a dict from the frame the translation has not changed:
    /// its entry (`frame_dict_entry`) or the default. None where the entry is not read so.
    fn frame_dict_get(&mut self, dict: Vid, args: &[Vid]) -> Res<Option<Vid>> {
        let (key, default) = match args {
            [key] => (*key, None),
            [key, default] => (*key, Some(*default)),
            _ => return Ok(None),
        };
        Ok(self
            .frame_dict_entry(dict, key)?
            .map(|found| found.unwrap_or_else(|| default.unwrap_or_else(|| self.none()))))
    }

    /// `dict.__getitem__`, `dict.get` and `dict.__contains__` called on a dict from the frame,
    /// a subclass's object included (`super().__getitem__(key)` in scikit-learn's Bunch):
    /// dict's own methods read the dict's storage, never the subclass's `__getitem__`. A
    /// missing key of `__getitem__` raises KeyError as dict's does (a class with
    /// `__missing__`, which dict's calls then, is not modeled). None for another call.
    pub(super) fn stored_dict_method(
        &mut self,
        name: &str,
        receiver: Vid,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        if !kwargs.is_empty() || !matches!(name, "__getitem__" | "get" | "__contains__") {
            return Ok(None);
        }
        let Val::Obj { obj, .. } = self.val(receiver).clone() else {
            return Ok(None);
        };
        let Some(&key) = args.first() else {
            return Ok(None);
        };
        match (name, args.len()) {
            ("__getitem__", 1) => {
                // A missing key's `__missing__` call is not modeled (a present key's read is);
                // presence asked of the storage, as `frame_dict_entry` reads it.
                let missing_hook = !obj.is_exact_instance_of::<PyDict>()
                    && self
                        .type_lookup(&obj.get_type().into_any(), "__missing__")?
                        .is_some();
                if missing_hook {
                    let Ok(table) = obj.cast::<PyDict>() else {
                        return Ok(None);
                    };
                    if self.contains_tensor(key) {
                        return Ok(None);
                    }
                    let key_obj = self.concrete(key)?;
                    self.check_native_key(&key_obj)?;
                    if !table.contains(&key_obj)? {
                        return Ok(None);
                    }
                }
                match self.frame_dict_entry(receiver, key)? {
                    Some(Some(value)) => Ok(Some(value)),
                    // dict's KeyError, its one argument the key (a tuple key too).
                    Some(None) => Err(Problem::Python(pyo3::exceptions::PyKeyError::new_err((self
                        .concrete(key)?
                        .unbind(),)))),
                    None => Ok(None),
                }
            }
            ("get", 1 | 2) => self.frame_dict_get(receiver, args),
            ("__contains__", 1) => Ok(self
                .frame_dict_entry(receiver, key)?
                .map(|found| self.boolean(found.is_some()))),
            _ => Ok(None),
        }
    }

    /// The entry under `key` of a dict from the frame (a subclass's object included) the
    /// translation has not changed, read from the dict's storage through its source and
    /// guarded present (Some(value)) or absent (Some(None)), nothing else of the dict
    /// guarded. None where the key holds a tensor or the dict was changed (then its copy
    /// answers).
    fn frame_dict_entry(&mut self, dict: Vid, key: Vid) -> Res<Option<Option<Vid>>> {
        let Val::Obj { obj, source: Some(s) } = self.val(dict).clone() else {
            return Ok(None);
        };
        let Ok(table) = obj.cast::<PyDict>() else {
            return Ok(None);
        };
        if self.mutated.contains_key(&(obj.as_ptr() as usize)) || self.contains_tensor(key) {
            return Ok(None);
        }
        let key_obj = self.concrete(key)?;
        self.check_native_key(&key_obj)?;
        self.guard_type(dict);
        let found = table.get_item(&key_obj)?;
        // An exact dict's `table[key]` is its storage's entry; a subclass's is read as dict's
        // methods read it.
        let entry = |key| {
            if obj.is_exact_instance_of::<PyDict>() {
                Source::Item(s, key)
            } else {
                Source::StoredItem(s, key)
            }
        };
        let item = self.intern(entry(StrongRef::new(&key_obj)));
        self.add_guard(
            item,
            if found.is_some() {
                Check::Present
            } else {
                Check::Absent
            },
        );
        Ok(Some(found.map(|value| {
            self.value_of_source(entry(StrongRef::new(&key_obj)), value)
        })))
    }
}
