//! Frames and the run loop: the top frame run to its end or a break, inlined frames, operand and stack helpers.

use super::snapshot::Snapshot;
use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// Where the problem arose: the innermost instruction running (in an inlined
    /// callee, the callee's line).
    pub(super) fn located(&self, problem: Problem) -> Stop {
        let line = self.location.0;
        let filename = self.location.1.to_string();
        match problem {
            Problem::Break(reason) => Stop::Break {
                reason,
                line,
                filename,
            },
            Problem::Fallback(reason) | Problem::Eager(reason) => Stop::Fallback {
                reason,
                line,
                filename,
            },
            Problem::Python(err) => {
                let reason = format!(
                    "{}: {}",
                    err.get_type(self.py).name().map_or("?".into(), |n| n.to_string()),
                    err.value(self.py)
                );
                Stop::Fallback {
                    reason: format!("raised while translating: {reason}"),
                    line,
                    filename,
                }
            }
        }
    }

    pub(super) fn new_frame(
        &mut self,
        code: &Bound<'py, PyAny>,
        info: &CodeInfo,
        globals: Bound<'py, PyAny>,
    ) -> PyResult<Frame<'py>> {
        let all = info.vars.count();
        let null = self.push_val(Val::Null);
        Ok(Frame {
            code: code.clone(),
            instrs: std::sync::Arc::clone(&info.instrs),
            consts: code
                .getattr(pyo3::intern!(code.py(), "co_consts"))?
                .cast_into::<PyTuple>()?,
            names: code
                .getattr(pyo3::intern!(code.py(), "co_names"))?
                .cast_into::<PyTuple>()?,
            vars: std::sync::Arc::clone(&info.vars),
            locals: vec![null; all],
            globals,
            stack: Vec::new(),
            pc: 0,
            filename: info.filename.as_str().into(),
            yielded: None,
            in_loop: std::sync::Arc::clone(&info.in_loop),
            class_cell: None,
            argcount: info.argcount,
            globals_source: None,
            blocks: Vec::new(),
            resumed: false,
            started: 0,
            reads_callers: info.reads_callers,
        })
    }

    /// Makes a cell for every cell variable (holding its argument, if it is one)
    /// and puts the closure's cells in the free variables' slots.
    pub(super) fn setup_cells(&mut self, frame: &mut Frame<'py>, closure: &[usize]) {
        let vars = std::sync::Arc::clone(&frame.vars);
        let all = vars.all();
        for cell in &vars.cellvars {
            let slot = all
                .iter()
                .position(|n| *n == cell.as_str())
                .expect("cells are variables");
            let initial = match self.val(frame.locals[slot]) {
                Val::Null => None,
                _ => Some(frame.locals[slot]),
            };
            self.cells.push(initial);
            let index = self.cells.len() - 1;
            if cell == "__class__" {
                frame.class_cell = Some(index);
            }
            frame.locals[slot] = self.push_val(Val::Cell(index));
        }
        let first_free = all.len() - vars.freevars.len();
        for (i, cell) in closure.iter().enumerate() {
            if vars.freevars[i] == "__class__" {
                frame.class_cell = Some(*cell);
            }
            frame.locals[first_free + i] = self.push_val(Val::Cell(*cell));
        }
    }

    /// Translates the frame about to run, given its arguments and free variables.
    pub fn run_top(
        &mut self,
        code: &Bound<'py, PyAny>,
        info: &CodeInfo,
        globals: Bound<'py, PyAny>,
        arguments: Vec<Option<Bound<'py, PyAny>>>,
        frees: Vec<FreeVariable<'py>>,
    ) -> Result<Ending, Stop> {
        self.top_globals = Some(globals.clone());
        let mut frame = self
            .new_frame(code, info, globals)
            .map_err(|e| self.located_top(e))?;
        self.top_arguments = info.total_arguments();
        self.top_freevars = frees.len();
        for (index, value) in arguments.into_iter().enumerate() {
            if let Some(value) = value {
                frame.locals[index] = self.value_of_source(Source::Argument(index), value);
            }
        }
        let closure: Vec<usize> = frees
            .into_iter()
            .enumerate()
            .map(|(index, (cell, value))| {
                let content = value.map(|v| self.value_of_source(Source::Free(index), v));
                self.cells.push(content);
                if let Some(cell) = cell {
                    self.cell_objects
                        .insert(cell.as_ptr() as usize, self.cells.len() - 1);
                }
                self.cells.len() - 1
            })
            .collect();
        self.setup_cells(&mut frame, &closure);
        let reads_callers = info.reads_callers;
        self.first_visits.clear();
        self.top_code = Some((frame.instrs.clone(), frame.in_loop.clone()));
        match self.top_as_one_operation(code, info, &frame) {
            Ok(Some(returned)) => return Ok(Ending::Return(returned, frame.locals.clone())),
            Ok(None) => {}
            // Before the frame's first instruction there is nowhere to resume: it runs as it is.
            Err(Problem::Break(reason)) => return Err(self.located(Problem::Fallback(reason))),
            Err(problem) => return Err(self.located(problem)),
        }
        // Where the exception the frame's handlers are running for arose (outside any
        // handler), and the state then: if it escapes the frame from inside a handler,
        // the generated code raises it there, under the original's handlers.
        let mut first_caught: Option<(BreakPoint, Snapshot<'py>)> = None;
        // The state before the instruction that entered the graph region still open: a
        // break inside the region's block is a break at that instruction (the graph cannot
        // stop inside a region), without simulating up to it again.
        let mut region_entry: Option<RegionEntry<'py>> = None;
        loop {
            let pc = frame.pc;
            let stack_before = frame.stack.clone();
            let locals_before = frame.locals.clone();
            let blocks_before = frame.blocks.clone();
            let handling = !self.exc_stack.is_empty() || blocks_before.iter().any(|b| b.handler.is_none());
            let unguarded = !handling && blocks_before.is_empty();
            let handled_depth = self.exc_stack.len();
            let snapshot = Snapshot::take(self);
            let region_open_before = self.graph.open_region_pc().is_some();
            if !region_open_before {
                region_entry = None;
                self.region_since = None;
            }
            let location_before = self.location.clone();
            let examples_warned_before = self.examples_warned;
            self.break_guards.clear();
            self.top_pc = pc;
            self.top_step_started = self.steps;
            let (outcome, caught) = if let Some(why) = self.break_before.get(&pc) {
                (Err(Problem::Break(format!("it makes {why}"))), false)
            } else if let Some(hinted) = self.hinted_break(pc) {
                (Err(hinted), false)
            } else {
                match self.step(&mut frame) {
                    Err(Problem::Python(err)) => match self.catch(&mut frame, err) {
                        Ok(()) => (Ok(None), true),
                        Err(problem) => (Err(problem), false),
                    },
                    other => (other, false),
                }
            };
            // A handler's saved instruction offset on the stack cannot be handed on.
            let offset_on_stack = stack_before.iter().any(|v| self.lasti_values.contains(v));
            let point = |vm: &Self, frame: &Frame<'py>, in_handler_scope: bool| {
                let handled: Vec<(usize, Vid)> = stack_before
                    .iter()
                    .enumerate()
                    .filter_map(|(slot, v)| Some((slot, *vm.exception_slots.get(v)?)))
                    .collect();
                // Each exception handled must be the one its slot saved (an `except*`
                // clause handles only the part of the group it matched).
                let resumable = vm.table.exceptions == ExceptionModel::Table
                    && handled.len() == handled_depth
                    && handled
                        .iter()
                        .zip(&vm.exc_stack)
                        .all(|((_, saved), current)| saved == current);
                BreakPoint {
                    pc,
                    in_loop: frame.in_loop.get(pc).unwrap_or(false),
                    in_handler_scope,
                    instr: frame.instrs[pc].clone(),
                    stack: stack_before.clone(),
                    locals: locals_before.clone(),
                    blocks: blocks_before
                        .iter()
                        .filter_map(|b| Some((b.handler?, b.level)))
                        .collect(),
                    handled,
                    handling: handling && !resumable,
                }
            };
            match outcome {
                Ok(Some(returned)) => return Ok(Ending::Return(returned, frame.locals.clone())),
                Ok(None) => {
                    if caught && !handling {
                        first_caught = Some((point(self, &frame, true), snapshot));
                    } else if !region_open_before
                        && !offset_on_stack
                        && self.graph.open_region_pc() == Some(pc)
                    {
                        let in_handler_scope =
                            frame.instrs[pc].handler.is_some() || !blocks_before.is_empty();
                        self.region_since = Some(self.steps);
                        region_entry = Some(RegionEntry {
                            pc,
                            point: point(self, &frame, in_handler_scope),
                            snapshot,
                            location: location_before,
                            examples_warned: examples_warned_before,
                        });
                    } else if unguarded
                        && handled_depth == 0
                        && !region_open_before
                        && !offset_on_stack
                        && !reads_callers
                    {
                        // Where a break before this instruction would stop as a plain break.
                        let in_handler_scope = frame.instrs[pc].handler.is_some();
                        let state = (snapshot, stack_before, locals_before, location_before);
                        self.keep_first_visit(pc, state, examples_warned_before, in_handler_scope);
                    }
                }
                // A re-raise of what a handler caught (what `except*` clauses left) is
                // raised where it first arose, below.
                Err(Problem::Python(_))
                    if unguarded
                        && !offset_on_stack
                        && !(frame.instrs[pc].op == Op::Reraise && first_caught.is_some()) =>
                {
                    // Nothing catches it: the generated code raises it where it arose.
                    snapshot.restore(self);
                    return Ok(Ending::Raise(point(self, &frame, false)));
                }
                Err(Problem::Python(_)) if first_caught.is_some() => {
                    let (arose, state) = first_caught.take().expect("checked");
                    state.restore(self);
                    return Ok(Ending::Raise(arose));
                }
                Err(Problem::Break(reason) | Problem::Fallback(reason))
                    if !reads_callers
                        && !offset_on_stack
                        && region_entry
                            .as_ref()
                            .is_some_and(|entry| snapshot.open_region_pc() == Some(entry.pc)) =>
                {
                    let entry = region_entry.take().expect("checked");
                    self.location = entry.location;
                    self.examples_warned = entry.examples_warned;
                    self.break_guards.clear();
                    let reason =
                        format!("it makes a break inside the with block of a graph region ({reason})");
                    self.region_breaks.push((entry.pc, reason.clone()));
                    let stop = self.located(Problem::Break(reason));
                    entry.snapshot.restore_at_break(self);
                    return Ok(Ending::Break(entry.point, stop));
                }
                Err(problem) => {
                    // A break deep in inlined calls that each can resume where it stopped
                    // keeps the graph up to there (`vm::nested`); the state is then the
                    // innermost frame's before its instruction.
                    let nested = !reads_callers
                        && !offset_on_stack
                        && self.nested_break_at_top(&frame.instrs[pc], &stack_before, &problem);
                    let stop = self.top_break_stop(problem, reads_callers, offset_on_stack)?;
                    let in_handler_scope = frame.instrs[pc].handler.is_some() || !frame.blocks.is_empty();
                    // The graph and state as they were before the instruction.
                    if !nested {
                        snapshot.restore_at_break(self);
                    }
                    return Ok(Ending::Break(point(self, &frame, in_handler_scope), stop));
                }
            }
        }
    }

    /// Why the top frame's instruction stops the translation: what the translator does not
    /// simulate ends the graph there too (the instruction runs natively and a resume
    /// function goes on after it), but where no resume function can go on (Err: the frame
    /// runs eagerly or falls back).
    fn top_break_stop(
        &self,
        problem: Problem,
        reads_callers: bool,
        offset_on_stack: bool,
    ) -> Result<Stop, Stop> {
        let stop = match problem {
            Problem::Eager(_) => return Err(self.located(problem)),
            Problem::Break(reason) | Problem::Fallback(reason) if reads_callers => {
                return Err(self.located(Problem::Eager(format!(
                    "{reason} (the frame reads its callers' frames: a resume function would stand \
                     between them)"
                ))))
            }
            Problem::Fallback(reason) => self.located(Problem::Break(reason)),
            problem => self.located(problem),
        };
        if offset_on_stack {
            return Err(Stop::Fallback {
                reason: format!(
                    "{} (inside an exception handler that cannot resume)",
                    stop.reason()
                ),
                line: self.location.0,
                filename: self.location.1.to_string(),
            });
        }
        Ok(stop)
    }

    /// Where the translated function is itself one of the backend's operations (a function
    /// Paddle's AST conversion captures whole), its call with the frame's arguments, as a
    /// call of it in another translated function would be; else None. The function is the
    /// module-level one of the frame's code (it has no closure; the call passes every
    /// argument, so its defaults do not matter).
    pub(super) fn top_as_one_operation(
        &mut self,
        code: &Bound<'py, PyAny>,
        info: &CodeInfo,
        frame: &Frame<'py>,
    ) -> Res<Option<Vid>> {
        let plain_call = info.flags & (CO_VARARGS | CO_VARKEYWORDS | CO_GENERATOR | CO_COROUTINE_LIKE) == 0;
        let Some(globals) = self
            .top_globals
            .clone()
            .filter(|_| plain_call && self.top_freevars == 0)
        else {
            return Ok(None);
        };
        let Ok(globals) = globals.cast_into::<PyDict>() else {
            return Ok(None);
        };
        let module_level = globals.values().into_iter().find(|value| {
            value.is_exact_instance_of::<pyo3::types::PyFunction>()
                && value
                    .getattr(pyo3::intern!(value.py(), "__code__"))
                    .is_ok_and(|c| c.is(code))
                && value
                    .getattr(pyo3::intern!(value.py(), "__closure__"))
                    .is_ok_and(|c| c.is_none())
        });
        let Some(function) = module_level else {
            return Ok(None);
        };
        if !self.backend.is_op(&function)? {
            return Ok(None);
        }
        self.location = (
            code.getattr(pyo3::intern!(code.py(), "co_firstlineno"))?
                .extract()?,
            info.filename.as_str().into(),
        );
        let names: Vec<String> = code.getattr(pyo3::intern!(code.py(), "co_varnames"))?.extract()?;
        let args = frame.locals[..info.argcount].to_vec();
        let kwargs = (info.argcount..info.argcount + info.kwonly)
            .map(|index| (names[index].clone(), frame.locals[index]))
            .collect();
        self.record(&function, args, kwargs).map(Some)
    }

    pub(super) fn located_top(&self, err: PyErr) -> Stop {
        Stop::Fallback {
            reason: format!("cannot read the code: {err}"),
            line: -1,
            filename: String::new(),
        }
    }

    /// A break once the translation has simulated too much: at an instruction of the
    /// translated frame begun past `MAX_STEPS`, or inside one such instruction's calls past
    /// `MAX_CALL_STEPS`, or past a library call's or a graph region's budget.
    pub(super) fn step_budget(&mut self) -> Res<()> {
        if self.depth == 0 && self.steps > MAX_STEPS {
            return self.bounded_break(
                BreakBound::Translation,
                format!("translation too long: more than {MAX_STEPS} instructions simulated"),
            );
        }
        if self.steps - self.top_step_started > MAX_CALL_STEPS {
            // The break is the translated frame's instruction: where its calls began.
            self.location = self.top_location.clone();
            return self.bounded_break(
                BreakBound::Translation,
                format!("translation too long: a call simulating more than {MAX_CALL_STEPS} instructions"),
            );
        }
        // A library call's budget is the outermost call's (its stop is the call's break); a
        // region block's is the translated frame's (the `with` is the break).
        self.budget_spent(
            self.library_since,
            library::LIBRARY_BUDGET,
            BreakBound::Library,
            "",
        )?;
        self.budget_spent(
            self.region_since,
            regions::REGION_BUDGET,
            BreakBound::Translation,
            " in the block",
        )
    }

    /// A break, bounded by `bound`, once more than `budget` instructions were simulated
    /// since `since` (None: no budget running).
    fn budget_spent(
        &mut self,
        since: Option<usize>,
        budget: usize,
        bound: BreakBound,
        place: &str,
    ) -> Res<()> {
        match since {
            Some(since) if self.steps - since > budget => {
                self.bounded_break(bound, format!("more than {budget} instructions simulated{place}"))
            }
            _ => Ok(()),
        }
    }

    /// Runs an inlined frame to its return. Before a call it may resume at, its state is
    /// kept for a break inside the call (`vm::nested`).
    pub(super) fn run_inlined(&mut self, frame: &mut Frame<'py>) -> Res<Vid> {
        loop {
            let before = self.before_call(frame);
            match self.step_handling(frame) {
                Ok(Some(returned)) => return Ok(returned),
                Ok(None) => {}
                Err(problem) => {
                    match before {
                        Some(before) => self.stopped_in_call(frame, before, &problem),
                        None => self.nested = None,
                    }
                    return Err(problem);
                }
            }
        }
    }

    /// Runs one instruction; an exception it raises goes to its handler, as CPython
    /// would unwind.
    pub(super) fn step_handling(&mut self, frame: &mut Frame<'py>) -> Res<Option<Vid>> {
        match self.step(frame) {
            Err(Problem::Python(err)) => self.catch(frame, err).map(|()| None),
            other => other,
        }
    }

    /// The value on top of the stack, left there.
    /// The stack slots an iterator takes in this version (3.15+: two, the iterator and a
    /// NULL or a list's index).
    pub(super) fn iterator_slots(&self) -> usize {
        self.table.iterator_slots as usize
    }

    /// The iterator (or `SEND`'s receiver) on top of the stack, below its other slots.
    pub(super) fn iterator_at(&self, frame: &Frame<'py>) -> Res<Vid> {
        let depth = self.iterator_slots();
        frame
            .stack
            .len()
            .checked_sub(depth)
            .map_or_else(|| unsupported("stack underflow"), |index| Ok(frame.stack[index]))
    }

    pub(super) fn top(frame: &Frame<'py>) -> Res<Vid> {
        frame
            .stack
            .last()
            .copied()
            .map_or_else(|| unsupported("stack underflow"), Ok)
    }

    pub(super) fn pop(frame: &mut Frame<'py>) -> Res<Vid> {
        frame
            .stack
            .pop()
            .map_or_else(|| unsupported("stack underflow"), Ok)
    }

    pub(super) fn pop_n(frame: &mut Frame<'py>, n: usize) -> Res<Vec<Vid>> {
        if frame.stack.len() < n {
            return unsupported("stack underflow");
        }
        Ok(frame.stack.split_off(frame.stack.len() - n))
    }

    pub(super) fn jump(frame: &mut Frame<'py>, arg: Arg) -> Res<()> {
        match arg {
            Arg::Target(target) => {
                frame.pc = target;
                Ok(())
            }
            _ => unsupported("a jump without a target"),
        }
    }

    pub(super) fn const_at(&mut self, frame: &Frame<'py>, arg: Arg) -> Res<Vid> {
        let obj = match arg {
            Arg::Const(Const::Index(i)) => frame.consts.get_item(i as usize)?,
            Arg::Const(Const::SmallInt(v)) => v.into_pyobject(self.py)?.into_any(),
            _ => return unsupported("a constant without an index"),
        };
        Ok(self.constant(obj))
    }

    /// The name `arg` indexes in the frame's `co_names`: the code's own string, which
    /// callers read as a `&str` in place (not a copy per instruction that names one).
    pub(super) fn name_at(frame: &Frame<'py>, arg: Arg) -> Res<Bound<'py, PyString>> {
        match arg {
            Arg::Name(i) | Arg::NameFlags(i, _) => {
                Ok(frame.names.get_item(i as usize)?.cast_into::<PyString>()?)
            }
            _ => unsupported("a name without an index"),
        }
    }

    pub(super) fn var_at(arg: Arg) -> Res<usize> {
        match arg {
            Arg::Var(v) => Ok(v as usize),
            _ => unsupported("a variable without an index"),
        }
    }

    pub(super) fn int_arg(arg: Arg) -> Res<usize> {
        match arg {
            Arg::Int(n) => Ok(n as usize),
            _ => unsupported("an instruction without its count"),
        }
    }

    /// Pops `n` stack slots of the version's call layout: the callable and the
    /// positional arguments (a non-NULL self slot is the first argument).
    pub(super) fn pop_callable(&self, slots: Vec<Vid>) -> Res<(Vid, Vec<Vid>)> {
        let is_null = |vm: &Self, v: Vid| match vm.val(v) {
            Val::Null => true,
            Val::Obj { obj, .. } => vm.null_substitute.as_ref().is_some_and(|s| obj.is(s)),
            _ => false,
        };
        match (self.table.call_layout, slots.as_slice()) {
            (_, [callable]) => Ok((*callable, vec![])),
            (CallLayout::CallableFirst, [callable, receiver]) => {
                let args = if is_null(self, *receiver) {
                    vec![]
                } else {
                    vec![*receiver]
                };
                Ok((*callable, args))
            }
            (_, [first, second]) => {
                if is_null(self, *first) {
                    Ok((*second, vec![]))
                } else {
                    Ok((*first, vec![*second]))
                }
            }
            _ => unsupported("a call layout"),
        }
    }

    /// How many slots a call's callable takes on this version.
    pub(super) fn callable_slots(&self, op: Op) -> usize {
        match (self.table.call_layout, op) {
            (CallLayout::Plain, Op::CallMethod) => 2,
            (CallLayout::Plain, _) => 1,
            _ => 2,
        }
    }

    /// Whether execution can go on after `instr` (a `raise` ends it).
    pub fn falls_through(&self, instr: &Instruction) -> bool {
        self.table
            .number(instr.op.name())
            .and_then(|number| self.table.op(number))
            .map_or(true, |info| !info.terminator)
    }
}

impl<'py> Vm<'py, '_> {
    /// Keeps the state before the top frame's first run of instruction `pc` (`rewind`).
    fn keep_first_visit(
        &mut self,
        pc: usize,
        (snapshot, stack, locals, location): (Snapshot<'py>, Vec<Vid>, Vec<Vid>, (i32, std::rc::Rc<str>)),
        examples_warned: bool,
        in_handler_scope: bool,
    ) {
        let summaries_replayed = self.summaries_replayed;
        // Boxed: the map moves only pointers as it grows (a visit holds a snapshot).
        self.first_visits.entry(pc).or_insert_with(|| {
            Box::new(kept::FirstVisit {
                snapshot,
                stack,
                locals,
                location,
                examples_warned,
                in_handler_scope,
                summaries_replayed,
            })
        });
    }

    /// The ending the top frame's run would have had with a break before instruction `pc`
    /// (`break_before`, for `why`), made from the state kept before its first run of `pc`
    /// instead of simulating up to it again; None where none was kept (the translation
    /// then starts again). The run reached `pc` before anything that would have stopped it,
    /// and simulates alike each time, so that state is the one the new run would reach (a
    /// generator resumed since, whose state moves in place, is put back as it was then).
    pub fn rewind(&mut self, pc: usize, why: &str) -> Option<Result<Ending, Stop>> {
        let visit = self.first_visits.remove(&pc)?;
        let (instrs, in_loop) = self.top_code.clone()?;
        let handles_exception = visit.stack.iter().any(|v| self.exception_slots.contains_key(v));
        if handles_exception {
            return None;
        }
        self.first_visits.clear();
        self.break_before.insert(pc, why.to_owned());
        self.nested = None;
        self.nested_frames = None;
        self.break_bound = None;
        self.library_since = None;
        self.exc_stack.clear();
        self.top_pc = pc;
        self.location = visit.location;
        self.top_location = self.location.clone();
        self.examples_warned = visit.examples_warned;
        self.summaries_replayed = visit.summaries_replayed;
        self.break_guards.clear();
        let stop = self.located(Problem::Break(format!("it makes {why}")));
        visit.snapshot.restore_at_break(self);
        Some(Ok(Ending::Break(
            BreakPoint {
                pc,
                in_loop: in_loop.get(pc).unwrap_or(false),
                in_handler_scope: visit.in_handler_scope,
                instr: instrs[pc].clone(),
                stack: visit.stack,
                locals: visit.locals,
                blocks: Vec::new(),
                handled: Vec::new(),
                handling: false,
            },
            stop,
        )))
    }
}

/// What a break inside a graph region's block goes back to (`Vm::run_top`): the state before
/// the top-frame instruction that entered the region, and the break there.
struct RegionEntry<'py> {
    pc: usize,
    point: BreakPoint,
    snapshot: Snapshot<'py>,
    location: (i32, std::rc::Rc<str>),
    examples_warned: bool,
}
