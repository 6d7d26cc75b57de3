//! Breaks deep in inlined calls, resumed where they stopped (nested resume). A break in a
//! callee was a break at the top frame's call: the callee ran as a call and its own
//! translation simulated again all the top frame's had simulated inside it, and so did each
//! level below, down to the break. Where each inlined frame on the way can resume at its
//! instruction, the break keeps the graph up to the innermost instruction instead, and the
//! generated code goes on in each frame: the top frame's call runs `_sot_resumed` in place
//! of the callee, bound to the callee's bridge at its call (its stack and variables handed
//! on; `_sot_resumed_in` makes the bridge when the call runs where the frame has cells),
//! down to the innermost frame's bridge, which runs the breaking instruction; each bridge
//! then calls its frame's resume function after the instruction. Each frame's rest runs at
//! the depth it had (the bridges stand where the frames stood); `resumed` makes the bridges.
//!
//! A frame resumes so where a resume function of its code can go on from its instruction:
//! a call (`CALL`, `CALL_FUNCTION_EX`) in the session's traced code (3.11+), no exception
//! being handled, no read of its callers' frames; above the innermost frame, the call is of
//! the frame below's own function. The innermost frame may also stop at a test of a
//! tensor's truth (its bridge takes the truth), at a subscript whose `__getitem__` is
//! Python code (its bridge runs the subscript, the method then a frame of its own): the
//! snapshot before such an instruction is taken only when its operand is one of those; or
//! at an import that breaks (its bridge runs the import under the frame's handlers). The
//! bridge, made from the frame's code, runs the call
//! under the handler the original has around it (a `try`'s, a `with`'s), so what the frame
//! below raises goes where it would. A call inside a loop resumes in a bridge that runs the
//! loop on from it (`Translation::loop_bridge`), as a break of the top frame inside a loop
//! does; not inside an inlined comprehension whose end unbinds its variable again.

use super::kept::{InlinedPoint, NestedBreak};
use super::snapshot::Snapshot;
use super::*;
use crate::sot::translator::model::code::unbound_marker;
use crate::sot::translator::model::frame::BreakPoint;
use crate::sot::translator::model::step::Step;
use framehook_bytecode::canonical::Vars;

impl NestedBreak<'_> {
    /// Whether the break going up at `depth` (after `steps`, for `reason`) is this one, out
    /// of the frame it called.
    fn goes_on(&self, steps: usize, reason: &str, depth: usize) -> bool {
        self.steps == steps && self.reason == reason && self.depth == depth + 1
    }
}

/// What an inlined frame keeps before an instruction it may resume at.
pub(super) struct BeforeCall<'py> {
    stack: Vec<Vid>,
    locals: Vec<Vid>,
    snapshot: Snapshot<'py>,
}

impl<'py> Vm<'py, '_> {
    /// The state kept before `frame`'s next instruction, where a break inside it could
    /// resume there; None where it could not.
    pub(super) fn before_call(&mut self, frame: &Frame<'py>) -> Option<BeforeCall<'py>> {
        let instr = frame.instrs.get(frame.pc)?;
        // An import too: one of a module not imported yet breaks (the generated code runs it,
        // or its ImportError, each call), and goes on in the importing frame.
        let resumable = (matches!(instr.op, Op::Call | Op::CallFunctionEx | Op::ImportName)
            || self.tests_a_tensor(instr, frame)
            || self.subscript_runs_python(instr, frame))
            && !(self.unbinds_at_loop_end(&frame.stack) && frame.in_loop.get(frame.pc).unwrap_or(false))
            && self.table.exceptions == ExceptionModel::Table
            && self.exc_stack.is_empty()
            && self.library_since.is_none()
            && !frame.reads_callers;
        resumable.then(|| BeforeCall {
            stack: frame.stack.clone(),
            locals: frame.locals.clone(),
            snapshot: Snapshot::take(self),
        })
    }

    /// Whether `instr` takes the truth of the tensor on top of `frame`'s stack (a branch on
    /// it, 3.13+'s `TO_BOOL` before one): the innermost frame of a nested break may stop
    /// there too, its bridge taking the truth as the original does.
    fn tests_a_tensor(&self, instr: &Instruction, frame: &Frame<'py>) -> bool {
        matches!(instr.op, Op::ToBool | Op::PopJumpIfTrue | Op::PopJumpIfFalse)
            && frame.stack.last().is_some_and(|top| self.is_tensor_val(*top))
    }

    /// Whether `instr` subscripts an instance whose class's `__getitem__` is a Python
    /// function (scikit-learn's routing objects): a break inside that method (inlined, not
    /// a frame the generated code can go on in) makes this frame the innermost one, its
    /// bridge running the subscript as the original does.
    fn subscript_runs_python(&self, instr: &Instruction, frame: &Frame<'py>) -> bool {
        if !matches!(
            instr.arg,
            Arg::BinaryOp {
                op: BinOp::Subscr,
                ..
            }
        ) {
            return false;
        }
        let Some(container) = frame.stack.len().checked_sub(2).map(|at| frame.stack[at]) else {
            return false;
        };
        let class = match self.val(container) {
            Val::Object { class, .. } => class.clone(),
            // A dict's, list's or tuple's `__getitem__` is a slot wrapper: no.
            Val::Obj { obj, .. } => obj.get_type().into_any(),
            _ => return false,
        };
        self.type_lookup(&class, "__getitem__")
            .ok()
            .flatten()
            .is_some_and(|method| method.is_instance(&self.ops.function_type).unwrap_or(false))
    }

    /// After `frame`'s instruction kept in `before` stopped with `problem`: the frame joins
    /// the nested break going up (the innermost one begins it), where the problem is a
    /// break of its own (no bound's) that nothing handled on the way.
    pub(super) fn stopped_in_call(&mut self, frame: &Frame<'py>, before: BeforeCall<'py>, problem: &Problem) {
        let reason = match problem {
            Problem::Break(reason) | Problem::Fallback(reason) if self.break_bound().is_none() => reason,
            _ => {
                self.nested = None;
                return;
            }
        };
        let point = BreakPoint {
            pc: frame.started,
            instr: frame.instrs[frame.started].clone(),
            stack: before.stack,
            locals: before.locals,
            in_loop: frame.in_loop.get(frame.started).unwrap_or(false),
            in_handler_scope: frame.instrs[frame.started].handler.is_some(),
            blocks: Vec::new(),
            handled: Vec::new(),
            handling: false,
        };
        let inlined = InlinedPoint {
            code: frame.code.clone(),
            globals: frame.globals.clone(),
            point,
        };
        let depth = self.depth;
        let calls_below = self
            .called_code(&inlined.point.instr, &inlined.point.stack)
            .filter(|called| {
                self.nested
                    .as_ref()
                    .and_then(|nested| nested.frames.last())
                    .is_some_and(|below| below.code.is(called))
            });
        match &mut self.nested {
            Some(nested) if calls_below.is_some() && nested.goes_on(self.steps, reason, depth) => {
                nested.frames.push(inlined);
                nested.depth = depth;
            }
            _ => {
                self.nested = Some(NestedBreak {
                    frames: vec![inlined],
                    snapshot: before.snapshot,
                    steps: self.steps,
                    reason: reason.clone(),
                    depth,
                })
            }
        }
    }

    /// Whether the break of the top frame's call `instr` came out of the inlined frames of
    /// the nested break going up, each resuming where it stopped: then the state goes back
    /// to before the innermost frame's instruction, and the frames are kept (outermost
    /// first) for the generated code. Not where a graph region was open there (the graph
    /// cannot stop inside one).
    pub(super) fn nested_break_at_top(
        &mut self,
        instr: &Instruction,
        stack: &[Vid],
        problem: &Problem,
    ) -> bool {
        let Some(nested) = self.nested.take() else {
            return false;
        };
        let (Problem::Break(reason) | Problem::Fallback(reason)) = problem else {
            return false;
        };
        if !nested.goes_on(self.steps, reason, 0) || nested.snapshot.open_region_pc().is_some() {
            return false;
        }
        let calls_below = self
            .called_code(instr, stack)
            .zip(nested.frames.last())
            .is_some_and(|(called, below)| below.code.is(&called));
        if !calls_below
            || nested
                .frames
                .iter()
                .any(|inlined| self.closes_over_own_cells(&inlined.point))
        {
            return false;
        }
        let NestedBreak {
            mut frames, snapshot, ..
        } = nested;
        frames.reverse();
        snapshot.restore_at_break(self);
        self.nested_frames = Some(frames);
        true
    }

    /// Whether an inlined frame at `point` holds a function made over one of its own cells:
    /// the generated code hands its values on, and closes only over the top frame's cells.
    fn closes_over_own_cells(&self, point: &BreakPoint) -> bool {
        let own: Vec<usize> = point
            .locals
            .iter()
            .filter_map(|vid| match self.val(*vid) {
                Val::Cell(cell) => Some(*cell),
                _ => None,
            })
            .collect();
        !own.is_empty()
            && point.stack.iter().chain(&point.locals).any(|vid| {
                matches!(self.val(*vid), Val::Function(function) if function.closure.iter().any(|cell| own.contains(cell)))
            })
    }

    /// Whether `stack` holds what an inlined comprehension (3.12+) saved of a variable that
    /// was unbound: its end unbinds the variable again, so no exit of a loop around it
    /// can hand the variable on (a loop bridge cannot run there).
    pub fn unbinds_at_loop_end(&self, stack: &[Vid]) -> bool {
        stack.iter().any(|v| self.cleared_unbound.contains(v))
    }

    /// The inlined frames the translation's break resumes in, outermost first, if it does.
    pub fn nested_frames(&self) -> Option<&[InlinedPoint<'py>]> {
        self.nested_frames.as_deref()
    }
}

impl<'py> Vm<'py, '_> {
    /// The code of the Python function that the call `instr` on `stack` calls, where its result
    /// is that function's (a function, a method of one, a partial of one): the callee whose
    /// frame a break below goes on in. None for any other callable (a class, whose call
    /// runs `__init__` and gives the instance; a builtin calling back).
    fn called_code(&self, instr: &Instruction, stack: &[Vid]) -> Option<Bound<'py, PyAny>> {
        self.code_of_callable(self.callable_of_call(instr, stack)?, 0)
    }

    /// What the call `instr` (`CALL`, `CALL_FUNCTION_EX`) on `stack` calls.
    pub fn callable_of_call(&self, instr: &Instruction, stack: &[Vid]) -> Option<Vid> {
        if !matches!(instr.op, Op::Call | Op::CallFunctionEx) {
            return None;
        }
        let Some(Step::RunHere { consumed, .. }) = self.at_break(instr) else {
            return None;
        };
        let base = stack.len().checked_sub(consumed)?;
        let (callable, _) = self.pop_callable(stack[base..base + 2].to_vec()).ok()?;
        Some(callable)
    }

    fn code_of_callable(&self, callable: Vid, nesting: usize) -> Option<Bound<'py, PyAny>> {
        if nesting > MAX_NESTING {
            return None;
        }
        match self.val(callable) {
            Val::Function(function) => Some(function.code.clone()),
            Val::Method { function, .. } | Val::Partial { function, .. } => {
                self.code_of_callable(*function, nesting + 1)
            }
            Val::Obj { obj, .. } => {
                let function = match obj.is_instance(&self.ops.method_type).ok()? {
                    true => obj.getattr(pyo3::intern!(self.py, "__func__")).ok()?,
                    false => obj.clone(),
                };
                function
                    .is_exact_instance_of::<pyo3::types::PyFunction>()
                    .then(|| function.getattr(pyo3::intern!(self.py, "__code__")).ok())
                    .flatten()
            }
            _ => None,
        }
    }

    /// The slots of a call's callable pair in a stack of `depth` slots where the call takes
    /// `consumed`: (the callable's, the NULL's) for a call of a plain callable.
    pub fn callee_slots(&self, depth: usize, consumed: usize) -> (usize, usize) {
        let base = depth - consumed;
        match self.table.call_layout {
            CallLayout::CallableFirst => (base, base + 1),
            _ => (base + 1, base),
        }
    }

    /// `stack` with the callable pair of the call that takes `consumed` slots made
    /// `resumed` and a NULL.
    pub fn with_callee(&mut self, stack: &[Vid], consumed: usize, resumed: Vid) -> Vec<Vid> {
        let (callee, null) = self.callee_slots(stack.len(), consumed);
        let mut stack = stack.to_vec();
        stack[callee] = resumed;
        stack[null] = self.push_val(Val::Null);
        stack
    }

    /// What a caller's call runs in place of a callee that resumes in its bridge with the
    /// values `handed`: `resumed` bound to `bound` (the bridge, or what makes it) and them.
    pub fn resumed_callee(&mut self, resumed: Bound<'py, PyAny>, bound: Vec<Vid>, handed: Vec<Vid>) -> Vid {
        let function = self.constant(resumed);
        let mut args = bound;
        args.push(self.push_val(Val::List(handed)));
        self.push_val(Val::Partial {
            function,
            args,
            keywords: Vec::new(),
        })
    }

    /// A constant of the translation, as the values a bridge is made with.
    pub fn constant_value(&mut self, obj: Bound<'py, PyAny>) -> Vid {
        self.constant(obj)
    }

    /// A tuple of `items` the generated code makes.
    pub fn tuple_value(&mut self, items: Vec<Vid>) -> Vid {
        self.push_val(Val::Tuple(items))
    }

    /// The contents of the cells `frame_locals` holds for the cell variables of `vars`, in
    /// their order, as the values a callee's bridge is made with: the unbound marker for an
    /// empty one. None where a cell variable holds no cell.
    pub fn cell_values(&mut self, vars: &Vars, frame_locals: &[Vid]) -> PyResult<Option<Vec<Vid>>> {
        let all = vars.all();
        let mut values = Vec::with_capacity(vars.cellvars.len());
        for cell in &vars.cellvars {
            let Some(slot) = all.iter().position(|name| name == cell) else {
                return Ok(None);
            };
            let Val::Cell(index) = self.val(frame_locals[slot]) else {
                return Ok(None);
            };
            let value = match self.cells[*index] {
                Some(content) => content,
                None => self.constant(unbound_marker(self.py)?),
            };
            values.push(value);
        }
        Ok(Some(values))
    }
}
