//! Iterators and generators: iter(), next(), lazy iterators, dict iterators, send.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// The next item of an iterator, or None when it is exhausted. A generator runs up to
    /// its next `yield`, so that its side effects interleave with its consumer's.
    pub(super) fn advance(&mut self, it: Vid) -> Res<Option<Vid>> {
        match self.val(it).clone_val() {
            Val::DictIter(mut state) => {
                let item = self.dict_iter_next(&mut state);
                self.values[it] = Val::DictIter(state);
                item
            }
            Val::Iter { items, next } => {
                if next >= items.len() {
                    return Ok(None);
                }
                let item = items[next];
                self.values[it] = Val::Iter {
                    items,
                    next: next + 1,
                };
                Ok(Some(item))
            }
            Val::Lazy(lazy) => self.advance_lazy(it, lazy),
            Val::ListIter { next: None, .. } => Ok(None),
            Val::ListIter {
                list,
                next: Some(next),
                frame,
            } => {
                let item = self.list_item(list, next)?;
                self.values[it] = Val::ListIter {
                    list,
                    next: item.map(|_| next + 1),
                    frame,
                };
                Ok(item)
            }
            Val::Obj {
                ref obj,
                source: Some(_),
            } if obj.get_type().is(&self.ops.list_iterator_type) => {
                self.frame_list_iterator(it)?;
                self.advance(it)
            }
            Val::Generator(state) => {
                let mut state = state.try_borrow_mut().map_err(|_| {
                    Problem::Python(pyo3::exceptions::PyValueError::new_err(
                        "generator already executing",
                    ))
                })?;
                if state.finished {
                    return Ok(None);
                }
                if self.depth >= MAX_INLINE_DEPTH {
                    return graph_break("unsupported call: inlining too deep (generators)");
                }
                self.depth += 1;
                let saved_location = self.location.clone();
                let outcome = loop {
                    match self.step_handling(&mut state.frame) {
                        Ok(None) => {
                            if let Some(item) = state.frame.yielded.take() {
                                state.suspended = true;
                                break Ok(Some(item));
                            }
                        }
                        Ok(Some(returned)) => {
                            state.returned = Some(returned);
                            break Ok(None);
                        }
                        Err(problem) => break Err(problem),
                    }
                };
                self.depth -= 1;
                if !matches!(outcome, Ok(Some(_))) {
                    state.finished = true;
                }
                if outcome.is_ok() {
                    self.location = saved_location;
                }
                outcome
            }
            Val::Obj { ref obj, .. } => unsupported(format!("iteration over {}", obj.get_type().name()?)),
            _ => unsupported("advancing a value that is no iterator"),
        }
    }

    /// A list iterator from the frame (at `vid`) as the translation's own over its list:
    /// its list and position read through `__reduce__` (and guarded), its position set
    /// again by the generated code. Every alias sees it advance, as they share the object.
    pub(super) fn frame_list_iterator(&mut self, vid: Vid) -> Res<()> {
        let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(vid).clone_val()
        else {
            return unsupported("a list iterator without a source");
        };
        self.guard_type(vid);
        let reduce = self.intern(Source::Attr(source, name_ref(self.py, "__reduce__")));
        let state = self.intern(Source::Called(reduce));
        let reduced = obj.call_method0("__reduce__")?;
        // `(iter, (list,), position)`; an exhausted one has let go of its list: `(iter, ([],))`.
        if reduced.len()? != 3 {
            return unsupported("an exhausted list iterator from the frame");
        }
        let key = |vm: &Self, index: usize| -> PyResult<StrongRef> {
            Ok(StrongRef::new(&index.into_pyobject(vm.py)?.into_any()))
        };
        let position_source = self.intern(Source::Item(state, key(self, 2)?));
        let position = reduced.get_item(2)?;
        self.guard_value(position_source, &position)?;
        let arguments = self.intern(Source::Item(state, key(self, 1)?));
        let list_source = Source::Item(arguments, key(self, 0)?);
        let list = self.value_of_source(list_source, reduced.get_item(1)?.get_item(0)?);
        self.values[vid] = Val::ListIter {
            list,
            next: Some(position.extract()?),
            frame: Some(source),
        };
        self.side_effects
            .push(SideEffect::IteratorPosition { iterator: vid });
        Ok(())
    }

    /// One step of `yield from receiver`: the None the delegating generator was resumed
    /// with (`sent`) goes in; what it yields or returns comes out.
    pub(super) fn send(&mut self, receiver: Vid, sent: Vid) -> Res<Sent> {
        if !self.concrete(sent)?.is_none() {
            return unsupported("a value sent into a delegated generator (only next() is simulated)");
        }
        if let Some(item) = self.advance(receiver)? {
            return Ok(Sent::Yielded(item));
        }
        let returned = match self.val(receiver) {
            Val::Generator(state) => state.borrow().returned,
            _ => None,
        };
        Ok(Sent::Returned(returned.unwrap_or_else(|| self.none())))
    }

    /// The next item of a lazy builtin iterator `it`, pulling its iterators as CPython's
    /// `zip`, `enumerate`, `map` and `filter` do.
    pub(super) fn advance_lazy(&mut self, it: Vid, lazy: Lazy) -> Res<Option<Vid>> {
        match lazy {
            Lazy::Zip(iterators) => {
                let mut items = Vec::with_capacity(iterators.len());
                for iterator in &iterators {
                    match self.advance(*iterator)? {
                        Some(item) => items.push(item),
                        None => return Ok(None),
                    }
                }
                Ok((!iterators.is_empty()).then(|| self.tuple_of(items)))
            }
            Lazy::Range { next, stop, step } => {
                if (step > 0 && next >= stop) || (step < 0 && next <= stop) {
                    return Ok(None);
                }
                // Past i64 the iterator is exhausted (its stop fits in i64).
                let after = next.checked_add(step).unwrap_or(stop);
                self.values[it] = Val::Lazy(Lazy::Range {
                    next: after,
                    stop,
                    step,
                });
                Ok(Some(self.constant(next.into_pyobject(self.py)?.into_any())))
            }
            Lazy::Enumerate { iterator, count } => {
                let Some(item) = self.advance(iterator)? else {
                    return Ok(None);
                };
                self.values[it] = Val::Lazy(Lazy::Enumerate {
                    iterator,
                    count: count + 1,
                });
                let index = self.constant(count.into_pyobject(self.py)?.into_any());
                Ok(Some(self.tuple_of(vec![index, item])))
            }
            Lazy::Map { function, iterators } => {
                let mut items = Vec::with_capacity(iterators.len());
                for iterator in &iterators {
                    match self.advance(*iterator)? {
                        Some(item) => items.push(item),
                        None => return Ok(None),
                    }
                }
                self.call(function, items, vec![]).map(Some)
            }
            Lazy::Filter { function, iterator } => {
                while let Some(item) = self.advance(iterator)? {
                    let verdict = match function {
                        Some(function) => self.call(function, vec![item], vec![])?,
                        None => item,
                    };
                    if self.truthy(verdict)? {
                        return Ok(Some(item));
                    }
                }
                Ok(None)
            }
        }
    }

    pub(super) fn iterator(&mut self, v: Vid) -> Res<Vid> {
        let v = self.realize(v)?;
        match self.val(v) {
            Val::Iter { .. } | Val::ListIter { .. } | Val::Generator(_) | Val::DictIter(_) | Val::Lazy(_) => {
                return Ok(v)
            }
            Val::List(_) => {
                return Ok(self.push_val(Val::ListIter {
                    list: v,
                    next: Some(0),
                    frame: None,
                }))
            }
            Val::Obj { obj, source: Some(_) } if obj.is_exact_instance_of::<PyList>() => {
                // Read live as it is iterated, but a list's iterator only while it is one (a
                // later call may hand an object whose `__iter__` is its own).
                self.guard_type(v);
                return Ok(self.push_val(Val::ListIter {
                    list: v,
                    next: Some(0),
                    frame: None,
                }));
            }
            Val::Obj { obj, source: Some(_) } if obj.get_type().is(&self.ops.list_iterator_type) => {
                // `iter()` of an iterator is itself.
                self.frame_list_iterator(v)?;
                return Ok(v);
            }
            Val::Dict(_) => return self.dict_iterator(v, DictPart::Keys),
            Val::Obj { obj, source: Some(_) }
                if obj.is_exact_instance_of::<PyDict>() || self.is_ordered_dict(obj) =>
            {
                return self.dict_iterator(v, DictPart::Keys)
            }
            Val::DictView { dict, part } => return self.dict_iterator(*dict, *part),
            Val::Obj { obj, .. } if obj.get_type().is(&self.ops.range_type) => {
                // Its bounds, as the value the guards pin (one from the frame is guarded).
                let range = self.concrete(v)?;
                let bound = |name: &str| range.getattr(name).and_then(|n| n.extract::<i64>()).ok();
                if let (Some(next), Some(stop), Some(step)) = (bound("start"), bound("stop"), bound("step")) {
                    return Ok(self.push_val(Val::Lazy(Lazy::Range { next, stop, step })));
                }
            }
            _ => {}
        }
        if let Some(iter) = self.python_iter(v)? {
            // `iter(x)` of an object whose class defines `__iter__` in Python: its result.
            self.guard_type(v);
            let function = self.constant(iter);
            let made = self.call(function, vec![v], vec![])?;
            return self.iterator(made);
        }
        if let Val::Obj { obj, source: Some(_) } = self.val(v) {
            // An iterator of a C type from the frame (a generator, a range's iterator...):
            // `iter()` of it is itself, which only the original code advances (a loop over
            // it runs there). Its type, guarded, keeps its `iter()`.
            let iterates_itself = obj.get_type().hasattr("__next__").unwrap_or(false)
                && obj.try_iter().is_ok_and(|it| it.is(obj));
            if iterates_itself {
                self.guard_type(v);
                return Ok(v);
            }
        }
        let items = self.items_of(v)?;
        Ok(self.push_val(Val::Iter { items, next: 0 }))
    }

    /// The `__iter__` of the class of a frame object or of one the translation made, where
    /// it is a Python function.
    pub(super) fn python_iter(&self, v: Vid) -> Res<Option<Bound<'py, PyAny>>> {
        let class = match self.val(v) {
            Val::Obj { obj, source: Some(_) } => obj.get_type().into_any(),
            Val::Object { class, .. } => class.clone(),
            _ => return Ok(None),
        };
        let iter = self.type_lookup(&class, "__iter__")?;
        Ok(iter.filter(|i| i.is_instance(&self.ops.function_type).unwrap_or(false)))
    }

    /// An `OrderedDict` (exactly): read as a dict is, in its own order; never written into.
    pub(super) fn is_ordered_dict(&self, obj: &Bound<'py, PyAny>) -> bool {
        obj.get_type().is(&self.ops.ordered_dict_type)
    }

    /// An iterator over a dict the translation made, or one from the frame (over its
    /// copy, or its mutable copy once there is one).
    pub(super) fn dict_iterator(&mut self, dict: Vid, part: DictPart) -> Res<Vid> {
        let (copy, frame_dict) = match self.readonly_copy(dict)? {
            Some(copy) => (copy, Some(dict)),
            None => (dict, None),
        };
        let Val::Dict(items) = self.val(copy) else {
            return unsupported("iteration over a dict from outside");
        };
        let size = items.len();
        Ok(self.push_val(Val::DictIter(DictIter {
            dict: copy,
            frame_dict,
            part,
            size,
            next: 0,
            keys_removed: false,
            status: DictIterStatus::Running,
        })))
    }

    /// The made dict an iterator reads: its frame dict's mutable copy once there is one.
    pub(super) fn iterated_dict(&self, it: &DictIter) -> Vid {
        let mutated = it.frame_dict.and_then(|frame_dict| match self.val(frame_dict) {
            Val::Obj { obj, .. } => self.mutated.get(&(obj.as_ptr() as usize)).copied(),
            _ => None,
        });
        mutated.unwrap_or(it.dict)
    }

    /// CPython's `dictiter_iternext*`: the entry at the iterator's position, read now.
    pub(super) fn dict_iter_next(&mut self, it: &mut DictIter) -> Res<Option<Vid>> {
        let size_changed = || {
            Err(Problem::Python(pyo3::exceptions::PyRuntimeError::new_err(
                "dictionary changed size during iteration",
            )))
        };
        match it.status {
            DictIterStatus::Exhausted => return Ok(None),
            DictIterStatus::SizeChanged => return size_changed(),
            DictIterStatus::Running => {}
        }
        let Val::Dict(items) = self.val(self.iterated_dict(it)) else {
            return unsupported("iteration over a dict from outside");
        };
        if items.len() != it.size {
            it.status = DictIterStatus::SizeChanged;
            return size_changed();
        }
        if it.keys_removed {
            return unsupported("iteration over a dict whose keys changed (at the same size) meanwhile");
        }
        let Some(&(key, value)) = items.get(it.next) else {
            it.status = DictIterStatus::Exhausted;
            return Ok(None);
        };
        it.next += 1;
        Ok(Some(match it.part {
            DictPart::Keys => key,
            DictPart::Values => value,
            DictPart::Items => self.tuple_of(vec![key, value]),
        }))
    }
}
