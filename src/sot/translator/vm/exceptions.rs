//! Exceptions: handlers found (exception tables or 3.9/3.10 blocks), raising and chaining, except* groups.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// Sends the exception the instruction just run raised to its handler in `frame`
    /// (exception tables, 3.11+; 3.9/3.10's blocks), or on out of the frame.
    pub(super) fn catch(&mut self, frame: &mut Frame<'py>, err: PyErr) -> Res<()> {
        // The first frame to see it raised it.
        let raised_here = self.seen_raised.insert(err.value(self.py).as_ptr() as usize);
        self.chain_to_handled(&err)?;
        if self.table.exceptions == ExceptionModel::BlockStack {
            return self.unwind_blocks(frame, err);
        }
        let index = frame.pc.saturating_sub(1);
        let Some(handler) = frame.instrs.get(index).and_then(|i| i.handler) else {
            return Err(Problem::Python(err));
        };
        let caught = err.value(self.py).clone().into_any();
        // No Python frame run for real raised it (its traceback is empty yet).
        let top_frame_only = raised_here
            && self.depth == 0
            && caught
                .getattr(pyo3::intern!(caught.py(), "__traceback__"))?
                .is_none();
        match self.caught_exceptions.entry(caught.as_ptr() as usize) {
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(top_frame_only.then(|| frame.instrs[index].location));
            }
            // Raised again: its traceback has more entries.
            std::collections::hash_map::Entry::Occupied(mut entry) => *entry.get_mut() = None,
        }
        let exception = self.constant(caught);
        frame.stack.truncate(handler.depth as usize);
        if handler.lasti {
            let lasti = self.constant(index.into_pyobject(self.py)?.into_any());
            self.lasti_values.insert(lasti);
            frame.stack.push(lasti);
        }
        frame.stack.push(exception);
        frame.pc = handler.target();
        Ok(())
    }

    /// CPython chains an exception raised while another is handled to that one where it is
    /// raised (C code's `PyErr_SetObject`, as `raise` does): an error a step raised while
    /// translating (a missing key, a failed conversion) is chained where it first reaches
    /// a frame of the translation, once; `raise` has decided for its own.
    pub(super) fn chain_to_handled(&mut self, err: &PyErr) -> Res<()> {
        let exc = err.value(self.py).clone().into_any();
        if !self.chained.insert(exc.as_ptr() as usize) {
            return Ok(());
        }
        let Some(handled) = self.exc_stack.last().copied() else {
            return Ok(());
        };
        let handled = self.chained_to(handled)?;
        if !handled.is(&exc) && exc.getattr(pyo3::intern!(exc.py(), "__context__"))?.is_none() {
            chain_context(&exc, &handled)?;
        }
        Ok(())
    }

    /// 3.9/3.10: the exception goes to the innermost `SETUP_*` block, whose handler
    /// finds the previous exception's and this one's (traceback, value, type) on the stack.
    pub(super) fn unwind_blocks(&mut self, frame: &mut Frame<'py>, err: PyErr) -> Res<()> {
        while let Some(block) = frame.blocks.pop() {
            frame.stack.truncate(block.level);
            let Some(handler) = block.handler else {
                // Leaving a handler that was running: its exception is done with.
                self.exc_stack.pop();
                continue;
            };
            frame.blocks.push(Block {
                handler: None,
                level: frame.stack.len(),
            });
            let none = self.none();
            let previous = match self.exc_stack.last() {
                Some(p) => {
                    let p = *p;
                    let kind = self.type_of(p)?;
                    [none, p, self.constant(kind)]
                }
                None => [none, none, none],
            };
            frame.stack.extend(previous);
            let value = err.value(self.py).clone().into_any();
            let kind = self.constant(value.get_type().into_any());
            self.caught_exceptions.insert(value.as_ptr() as usize, None);
            let exception = self.constant(value);
            self.exc_stack.push(exception);
            frame.stack.extend([none, exception, kind]);
            frame.pc = handler;
            return Ok(());
        }
        Err(Problem::Python(err))
    }

    /// Raises `exception`; `chain` as `raise e` does, not as a bare `raise` or `RERAISE`
    /// (which raise the handled exception again as it is).
    pub(super) fn raise(&mut self, exception: Vid, chain: bool) -> Problem {
        let made = chain && matches!(self.val(exception), Val::Obj { source: None, .. });
        let exc = match self.concrete(exception) {
            Ok(exc) => exc,
            Err(problem) => return problem,
        };
        self.chained.insert(exc.as_ptr() as usize);
        // Raised while one is handled: chained to it, as CPython chains (the generated code
        // cannot make such an exception again: one that reaches it falls back).
        if let (true, Some(handled)) = (made, self.exc_stack.last().copied()) {
            match self.chained_to(handled) {
                Ok(handled) if !handled.is(&exc) => {
                    if let Err(err) = chain_context(&exc, &handled) {
                        return Problem::Python(err);
                    }
                }
                Ok(_) => {}
                Err(problem) => return problem,
            }
        }
        Problem::Python(PyErr::from_value(exc))
    }

    /// The exception being handled, to chain a new one to. One from the frame is read,
    /// not guarded: the generated code chains to it by its source, whichever exception
    /// the call has there.
    pub(super) fn chained_to(&mut self, handled: Vid) -> Res<Bound<'py, PyAny>> {
        match self.val(handled) {
            Val::Obj { obj, source: Some(_) } => Ok(obj.clone()),
            _ => self.concrete(handled),
        }
    }

    /// `except* kinds` on `exception`: `(rest, matched)` as CPython's CHECK_EG_MATCH splits
    /// them (a naked exception that matches is wrapped in a group; None where nothing is).
    pub(super) fn exception_group_match(&mut self, exception: Vid, kinds: Vid) -> Res<(Vid, Vid)> {
        let (exc, kinds) = (self.concrete(exception)?, self.concrete(kinds)?);
        let group_type = builtin(self.py, "BaseExceptionGroup")?;
        let issubclass = builtin(self.py, "issubclass")?;
        let kind_list: Vec<Bound<'py, PyAny>> = match kinds.cast::<PyTuple>() {
            Ok(tuple) => tuple.iter().collect(),
            Err(_) => vec![kinds.clone()],
        };
        for kind in &kind_list {
            let is_exception_class = kind.is_instance_of::<PyType>()
                && issubclass
                    .call1((kind, self.py.get_type::<pyo3::exceptions::PyBaseException>()))?
                    .is_truthy()?;
            if !is_exception_class {
                return Err(Problem::Python(PyTypeError::new_err(
                    "catching classes that do not inherit from BaseException is not allowed",
                )));
            }
            if issubclass.call1((kind, &group_type))?.is_truthy()? {
                return Err(Problem::Python(PyTypeError::new_err(
                    "catching ExceptionGroup with except* is not allowed. Use except instead.",
                )));
            }
        }
        let none = self.ops.none.clone();
        let (rest, matched) = if exc.is_none() {
            (none.clone(), none)
        } else if exc.is_instance(&kinds)? {
            let matched = if exc.is_instance(&group_type)? {
                exc
            } else {
                group_type.call1(("", (exc,)))?
            };
            (none, matched)
        } else if exc.is_instance(&group_type)? {
            let pair = exc.call_method1("split", (kinds,))?;
            (pair.get_item(1)?, pair.get_item(0)?)
        } else {
            (exc, none)
        };
        let rest = if rest.is(&self.ops.none) {
            self.none()
        } else {
            self.constant(rest)
        };
        let matched = if matched.is(&self.ops.none) {
            self.none()
        } else {
            self.constant(matched)
        };
        Ok((rest, matched))
    }

    /// What leaves a try with `except*` clauses (CPython's PREP_RERAISE_STAR): None when all
    /// was handled, else the exception to raise on. Only the rest the clauses left is
    /// simulated; an exception raised inside a clause is merged by the original code.
    /// (The original exception, its first operand, is not needed: see below.)
    pub(super) fn prep_reraise_star(&mut self, raised: Vid) -> Res<Vid> {
        let mut left = Vec::new();
        for item in self.items_of(raised)? {
            if self.concrete(item)?.is_none() {
                continue;
            }
            if !self.unhandled_groups.contains(&item) {
                return unsupported("an exception raised inside an except* clause");
            }
            left.push(item);
        }
        // The rest of a group is the part of it no clause matched (as the projection of
        // the original onto the rest's leaves is); a naked exception is its own rest.
        Ok(match left.as_slice() {
            [] => self.none(),
            [rest] => *rest,
            _ => return unsupported("more than one exception left by except* clauses"),
        })
    }
}

/// `exc.__context__ = handled` as CPython sets it when raising: a link back to `exc` in
/// `handled`'s chain is cut first (no new cycle), and an existing cycle is not followed
/// forever (Floyd's tortoise and hare).
fn chain_context(exc: &Bound<'_, PyAny>, handled: &Bound<'_, PyAny>) -> PyResult<()> {
    let mut current = handled.clone();
    let mut slow = handled.clone();
    let mut move_slow = false;
    loop {
        let context = current.getattr(pyo3::intern!(current.py(), "__context__"))?;
        if context.is_none() {
            break;
        }
        if context.is(exc) {
            current.setattr("__context__", current.py().None())?;
            break;
        }
        current = context;
        if current.is(&slow) {
            break;
        }
        if move_slow {
            slow = slow.getattr(pyo3::intern!(slow.py(), "__context__"))?;
        }
        move_slow = !move_slow;
    }
    exc.setattr("__context__", handled)
}
