//! Iterators and generators: iter(), next(), lazy iterators, dict iterators, send.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// The next item of an iterator, or None when it is exhausted, by its kind.
    pub(super) fn advance(&mut self, it: Vid) -> Res<Option<Vid>> {
        if let Some(next) = self.python_special(it, "__next__")? {
            // An iterator written in Python: its `__next__` inlined, its StopIteration
            // the end (as `for` and `next()` take it).
            if matches!(self.val(it), Val::Obj { .. }) {
                self.guard_type(it);
            }
            let function = self.constant(next);
            return match self.call(function, vec![it], vec![]) {
                Ok(item) => Ok(Some(item)),
                Err(Problem::Python(error)) if error.is_instance_of::<PyStopIteration>(self.py) => Ok(None),
                Err(problem) => Err(problem),
            };
        }
        let val = self.val(it).clone();
        match kind_of(&val).next(self, it, &val)? {
            Some(item) => Ok(item),
            None => unsupported("advancing a value that is no iterator"),
        }
    }

    /// What `next()` without a default (or a generator's `send`) raises where `iterator` is
    /// exhausted: `StopIteration`, carrying what `stop_value` finds where that is a value
    /// (caught, as `contextlib`'s `__exit__` catches its generator's end). Not simulated
    /// where that is not known, or another object.
    pub(super) fn exhausted(&mut self, iterator: Vid) -> Problem {
        let Some(returned) = self.stop_value(iterator) else {
            return Problem::Fallback("next() raised StopIteration".to_owned());
        };
        let value = match returned.map(|vid| self.concrete(vid)) {
            None => None,
            Some(Ok(value)) if value.is_none() => None,
            Some(Ok(value)) if is_value_type(&value) => Some(value),
            Some(Ok(_)) => {
                return Problem::Fallback(
                    "a generator's end: StopIteration of an object it returned".to_owned(),
                )
            }
            Some(Err(problem)) => return problem,
        };
        Problem::Python(match value {
            Some(value) => PyStopIteration::new_err((value.unbind(),)),
            None => PyStopIteration::new_err(()),
        })
    }

    /// What the `StopIteration` of `iterator`'s end, just met, carries: a generator's
    /// return value (the advance that ended it being its last), none for a builtin iterator
    /// over the translation's values; what an `enumerate`, `filter`, `dropwhile` or
    /// `takewhile` hands on from the iterator under it, as CPython's do. None where it is
    /// not known: a Python `__next__`'s own exception; `zip` or `map` over an iterator whose
    /// end may carry a value (which of theirs ended is not kept).
    fn stop_value(&self, iterator: Vid) -> Option<Option<Vid>> {
        match self.val(iterator) {
            Val::Generator(state) => Some(state.borrow().returned),
            Val::Iter { .. }
            | Val::ListIter { .. }
            | Val::DictIter(_)
            | Val::Lazy(Lazy::Range { .. } | Lazy::TakeWhile { done: true, .. }) => Some(None),
            Val::Lazy(
                Lazy::Enumerate { iterator, .. }
                | Lazy::Filter { iterator, .. }
                | Lazy::DropWhile { iterator, .. }
                | Lazy::TakeWhile { iterator, .. },
            ) => self.stop_value(*iterator),
            Val::Lazy(Lazy::Zip(iterators) | Lazy::Map { iterators, .. }) => iterators
                .iter()
                .all(|it| self.stop_value(*it) == Some(None))
                .then_some(None),
            _ => None,
        }
    }

    /// Runs a generator the translated code made up to its next `yield`, so that its side
    /// effects interleave with its consumer's: what it yields, None once it returned.
    pub(super) fn resume_generator(&mut self, generator: Vid) -> Res<Option<Vid>> {
        let Val::Generator(state) = self.val(generator).clone() else {
            return unsupported("advancing a value that is no iterator");
        };
        let shared = std::rc::Rc::clone(&state);
        let mut state = state.try_borrow_mut().map_err(|_| {
            Problem::Python(pyo3::exceptions::PyValueError::new_err(
                "generator already executing",
            ))
        })?;
        self.generator_resumes.push((shared, state.clone()));
        if state.finished {
            state.returned = None;
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
                        state.handling = state.frame.blocks.iter().any(|b| b.handler.is_none())
                            || state.frame.stack.iter().any(|v| {
                                self.exception_slots.contains_key(v) || self.lasti_values.contains(v)
                            });
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

    /// A list iterator from the frame (at `vid`) as the translation's own over its list:
    /// its list and position read through `__reduce__` (and guarded), its position set
    /// again by the generated code. Every alias sees it advance, as they share the object.
    pub(super) fn frame_list_iterator(&mut self, vid: Vid) -> Res<()> {
        let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(vid).clone()
        else {
            return unsupported("a list iterator without a source");
        };
        self.guard_type(vid);
        let reduce = self.intern(Source::Attr(source, self.name_ref("__reduce__")));
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
        let list_object = reduced.get_item(1)?.get_item(0)?;
        if !list_object.is_exact_instance_of::<PyList>() {
            // A subclass's items are read by its own `__getitem__` everywhere the VM (and a
            // guard) would read them; the iterator reads the list's own.
            return unsupported(format!(
                "an iterator over a {} (a subclass of list)",
                list_object.get_type().name()?
            ));
        }
        let list = self.value_of_source(list_source, list_object);
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
        let Some(returned) = self.stop_value(receiver) else {
            return unsupported("yield from an iterator whose StopIteration is not known");
        };
        Ok(Sent::Returned(returned.unwrap_or_else(|| self.none())))
    }

    /// `iter(v)`: its kind's own iterator, else the result of its class's `__iter__` written
    /// in Python, an iterator from the frame itself, or an iterator over its items.
    pub(super) fn iterator(&mut self, v: Vid) -> Res<Vid> {
        let v = self.realize(v)?;
        let val = self.val(v).clone();
        if let Some(iterator) = kind_of(&val).iter(self, v, &val)? {
            return Ok(iterator);
        }
        if let Some(iter) = self.python_special(v, "__iter__")? {
            // `iter(x)` of an object whose class defines `__iter__` in Python: its result,
            // an iterator as it is where its `__next__` is Python code too.
            self.guard_type(v);
            let function = self.constant(iter);
            let made = self.call(function, vec![v], vec![])?;
            if self.python_special(made, "__next__")?.is_some() {
                return Ok(made);
            }
            return self.iterator(made);
        }
        if let Val::Obj { obj, source: Some(_) } = self.val(v) {
            // An iterator of a C type from the frame (a generator, a range's iterator...):
            // `iter()` of it is itself, which only the original code advances (a loop over
            // it runs there). Its type, guarded, keeps its `iter()`.
            let iterates_itself = has_attr(obj.get_type().as_any(), "__next__").unwrap_or(false)
                && obj.try_iter().is_ok_and(|it| it.is(obj));
            if iterates_itself {
                self.guard_type(v);
                return Ok(v);
            }
        }
        let of_tuple = self.is_exact_sequence(v, false);
        let items = self.items_of(v)?;
        Ok(self.push_val(Val::Iter {
            items,
            next: 0,
            of_tuple,
        }))
    }

    /// The special method `name` (`__iter__`, `__next__`) of the class of a frame object or
    /// of one the translation made, where it is a Python function.
    pub(super) fn python_special(&self, v: Vid, name: &str) -> Res<Option<Bound<'py, PyAny>>> {
        let class = match self.val(v) {
            Val::Obj { obj, source: Some(_) } if !self.backend.is_tensor(obj) => obj.get_type().into_any(),
            Val::Object { class, .. } => class.clone(),
            _ => return Ok(None),
        };
        let method = self.type_lookup(&class, name)?;
        Ok(method.filter(|m| m.is_instance(&self.ops.function_type).unwrap_or(false)))
    }

    /// An `OrderedDict` (exactly): read as a dict is, in its own order; never written into.
    pub(super) fn is_ordered_dict(&self, obj: &Bound<'py, PyAny>) -> bool {
        obj.get_type().is(&self.ops.ordered_dict_type)
    }
}
