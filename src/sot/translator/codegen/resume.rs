//! Resume functions and bridges: the original code entered at a break with the values
//! handed on, and the step a break runs before one takes over.

use framehook_bytecode::canonical::{Arg, CodeKind, Instruction, Op, Vars};
use framehook_bytecode::reachable::without_unreachable;
use framehook_bytecode::{Location, Table};
use pyo3::prelude::*;
use pyo3::types::{PySlice, PyString, PyTuple};
use rustc_hash::FxHashMap;

use crate::sot::translator::model::code::{
    unbound_marker, ResumeKey, CO_GENERATOR, RESUME_BOX, RESUME_STACK,
};
use crate::sot::translator::model::frame::GeneratorState;
use crate::sot::translator::model::step::Step;
use crate::sot::translator::model::value::{Val, Vid};
use crate::sot::translator::model::values::Values;
use crate::sot::translator::pyutil::builtin;

use super::emit::{slot_locals, Emit, ResumeCall, Slot, Writer};

/// What a bridge runs: the break's step, then `next` (the resume function after it,
/// receiving `next_nulls`'s slots) with `blocks_after` blocks popped first. A loop's
/// bridge runs the original from the break on, and calls `exits`' resume functions
/// where control leaves the loop.
pub struct Bridge<'a, 'py> {
    pub step: &'a Step,
    pub next: Option<&'a ResumeCall<'py>>,
    pub next_nulls: &'a [bool],
    /// A loop's bridge: the stack slots dead at its exits (a `for` loop's iterator, where
    /// an iterator is two slots): popped there, not handed on.
    pub dead: std::ops::Range<usize>,
    pub blocks_after: usize,
    pub exits: &'a [LoopExit<'py>],
}

/// Where control leaves a loop its bridge runs, the stack's depth there, and the resume
/// function there.
pub struct LoopExit<'py> {
    pub pc: usize,
    pub depth: usize,
    pub resume: ResumeCall<'py>,
}

/// The locals a resume function takes its box and stack slots in. `level` counts the
/// resume functions it is made from, so that one made from another keeps both sets apart.
pub struct ResumeNames {
    pub level: usize,
}

impl ResumeNames {
    /// The level after those of the resume functions `old_names` shows (its box or stack
    /// locals; one that has neither left no names to keep apart).
    pub fn new(old_names: &[String]) -> Self {
        let level_of = |name: &String| -> Option<usize> {
            let rest = name
                .strip_prefix(RESUME_BOX)
                .or_else(|| name.strip_prefix(RESUME_STACK))?;
            rest.split('_').next()?.parse().ok()
        };
        let level = old_names
            .iter()
            .filter_map(level_of)
            .map(|l| l + 1)
            .max()
            .unwrap_or(0);
        Self { level }
    }

    pub fn resume_box(&self) -> String {
        format!("{RESUME_BOX}{}", self.level)
    }

    pub fn stack(&self, index: usize) -> String {
        format!("{RESUME_STACK}{}_{index}", self.level)
    }

    pub fn first_local(&self) -> String {
        format!("{RESUME_BOX}{}_first", self.level)
    }
}

/// A resume function's code: the original code, with a prologue that takes the
/// stack slots and the live variables as arguments, sets the blocks up again, pushes
/// the slots and jumps to `key.pc` (a bridge runs its step there and calls the next
/// resume function instead). Exception table, cells, names and line numbers are the
/// original's; what only the original's start reached is left out. A generator's resume
/// function is a generator (its frame returned to its caller first, as the original's).
pub fn resume_code<'py>(
    table: &'static Table,
    code: &Bound<'py, PyAny>,
    vars: &Vars,
    instrs: &[Instruction],
    key: &ResumeKey,
    bridge: Option<Bridge<'_, 'py>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (resume_vars, new_vars) = ResumeVars::new(code, vars, key, bridge.as_ref())?;
    let resume = Resume::new(key, instrs, resume_vars, bridge, unbound_marker(code.py())?);
    let location = instrs.get(key.pc).map_or(Location::NONE, |i| i.location);
    let flags: u32 = code.getattr(pyo3::intern!(code.py(), "co_flags"))?.extract()?;
    let kind = match flags & CO_GENERATOR {
        0 => CodeKind::Function,
        _ => CodeKind::Generator,
    };
    let mut w = Writer::new(table, code, new_vars, location, kind)?;
    for instruction in &mut w.out {
        instruction.location = location;
    }
    if !resume.vars.handed.is_empty() {
        resume.unpack_box(&mut w);
    }
    if let Some(cell) = resume.vars.first_cell {
        w.emit(Op::LoadDeref, Arg::Var(resume.vars.remap(cell)));
        w.emit(Op::StoreFast, Arg::Var(0));
    }
    resume.marked_variables(&mut w);
    // Instructions whose targets are the original's: moved past what comes before the
    // copy of the original once its start is known.
    let mut into_copy: Vec<usize> = Vec::new();
    resume.push_stack(&mut w, &mut into_copy)?;
    resume.go_on(&mut w, &mut into_copy)?;
    let copied = resume.copy_original(&mut w, &mut into_copy)?;
    copied.retarget(&mut w.out, &into_copy);
    // The copy's part that only the original's start reaches is not lowered, encoded, nor
    // decoded again when the resume function is translated.
    w.out = without_unreachable(std::mem::take(&mut w.out));
    w.finish(code, Some(resume.vars.argcount))
}

/// A resume function's variables: the original's, the ones the box's values go to, and a
/// bridge's own.
struct ResumeVars {
    /// Per variable of the original, the resume function's variable of its name.
    remapped: Vec<u32>,
    /// The variables the box's values go to, in order: the stack slots that are not NULL,
    /// then the live variables.
    handed: Vec<u32>,
    /// Per stack slot at the break, the variable it is handed in (None: NULL).
    stack_vars: Vec<Option<u32>>,
    /// The original's first argument, when handed on, is the resume function's first local
    /// too, and the parameter that takes the box: a zero-argument `super()` reads it there.
    first_handed: bool,
    /// The resume function's positional arguments: the box's, or none.
    argcount: usize,
    /// Where the original's first argument is a cell and its code calls `super()`: that
    /// cell (the original's index). A zero-argument `super()` reads the frame's first
    /// local (or the cell of the first argument, which the resume function has as a free
    /// variable): the prologue stores the cell's contents there.
    first_cell: Option<u32>,
    /// A bridge's locals for the stack slots it hands on.
    handed_on: Option<Vec<Slot>>,
    /// A bridge's local for a branch's condition.
    condition_var: Option<u32>,
}

impl ResumeVars {
    /// The variables of the resume function made from `code` (whose are `vars`) for `key`,
    /// and its `Vars`.
    fn new(
        code: &Bound<'_, PyAny>,
        vars: &Vars,
        key: &ResumeKey,
        bridge: Option<&Bridge<'_, '_>>,
    ) -> PyResult<(Self, Vars)> {
        let old_all: Vec<String> = vars.all().iter().map(|s| s.to_string()).collect();
        let names = ResumeNames::new(&old_all);
        let mut handed: Vec<String> = (0..key.nulls.len())
            .filter(|i| !key.nulls[*i])
            .map(|i| names.stack(i))
            .collect();
        handed.extend(key.live.iter().map(|v| old_all[*v].clone()));
        let boxed = handed.len();
        let takes_arguments = code
            .getattr(pyo3::intern!(code.py(), "co_argcount"))?
            .extract::<usize>()?
            > 0;
        let first_handed = key.live.contains(&0) && takes_arguments;
        let mut varnames: Vec<String> = if first_handed {
            vec![old_all[0].clone()]
        } else if boxed > 0 {
            vec![names.resume_box()]
        } else {
            Vec::new()
        };
        let argcount = varnames.len();
        let calls_super = code
            .getattr(pyo3::intern!(code.py(), "co_names"))?
            .cast_into::<PyTuple>()?
            .iter()
            .any(|n| {
                n.cast::<PyString>()
                    .is_ok_and(|n| n.to_str().is_ok_and(|n| n == "super"))
            });
        let first_cell = vars
            .varnames
            .first()
            .filter(|first| takes_arguments && calls_super && vars.cellvars.contains(first))
            .and_then(|first| old_all.iter().rposition(|n| n == first))
            .map(|cell| cell as u32);
        if first_cell.is_some() && varnames.is_empty() {
            // Not an argument: a local that only `super()` reads.
            varnames.push(names.first_local());
        }
        for name in &handed {
            if !varnames.contains(name) {
                varnames.push(name.clone());
            }
        }
        for name in &vars.varnames {
            if !varnames.contains(name) && !vars.cellvars.contains(name) {
                varnames.push(name.clone());
            }
        }
        // The frame's cells come in as free variables: shared with the closures made before
        // the break, not copies.
        let mut new_vars = Vars {
            varnames,
            cellvars: Vec::new(),
            freevars: vars
                .cellvars
                .iter()
                .chain(vars.freevars.iter())
                .cloned()
                .collect(),
        };
        let (handed_on, condition_var) = bridge_locals(&mut new_vars, &names, key, bridge);
        // Each name's first place among the resume function's variables.
        let all = new_vars.all();
        let mut new_index: FxHashMap<&str, u32> =
            FxHashMap::with_capacity_and_hasher(all.len(), Default::default());
        for (index, name) in all.into_iter().enumerate().rev() {
            new_index.insert(name, index as u32);
        }
        let var_of = |name: &String| *new_index.get(name.as_str()).expect("every variable survives");
        let remapped = old_all.iter().map(var_of).collect();
        let handed: Vec<u32> = handed.iter().map(var_of).collect();
        let mut stack_handed = handed.iter();
        let stack_vars = key
            .nulls
            .iter()
            .map(|null| if *null { None } else { stack_handed.next().copied() })
            .collect();
        let resume_vars = ResumeVars {
            remapped,
            handed,
            stack_vars,
            first_handed,
            argcount,
            first_cell,
            handed_on,
            condition_var,
        };
        Ok((resume_vars, new_vars))
    }

    /// The resume function's variable for the original's variable `var`.
    fn remap(&self, var: u32) -> u32 {
        self.remapped[var as usize]
    }
}

/// A bridge's own locals, named before any instruction is emitted: those it hands the
/// stack slots on in (a handled exception's is the slot's argument), and a branch's
/// condition's.
fn bridge_locals(
    new_vars: &mut Vars,
    names: &ResumeNames,
    key: &ResumeKey,
    bridge: Option<&Bridge<'_, '_>>,
) -> (Option<Vec<Slot>>, Option<u32>) {
    let handed_on = bridge.map(|b| {
        let no_temporary: Vec<bool> = (0..b.next_nulls.len())
            .map(|i| b.next_nulls[i] || key.handled.contains(&i))
            .collect();
        let mut slots = slot_locals(new_vars, "__sot_tmp", &no_temporary);
        for slot in &key.handled {
            let var = new_vars.varnames.iter().position(|n| *n == names.stack(*slot));
            slots[*slot] = Slot::Handled(var.expect("a stack argument") as u32);
        }
        for slot in b.dead.clone() {
            if let Some(slot) = slots.get_mut(slot) {
                *slot = Slot::Dead;
            }
        }
        slots
    });
    let condition_var = bridge.filter(|b| matches!(b.step, Step::BranchOnTruth)).map(|_| {
        new_vars.varnames.push("__sot_condition".to_owned());
        (new_vars.varnames.len() - 1) as u32
    });
    (handed_on, condition_var)
}

/// What the parts of a resume function's code read: the break's key, the original's
/// instructions, the variables, and the bridge.
struct Resume<'a, 'py> {
    key: &'a ResumeKey,
    instrs: &'a [Instruction],
    vars: ResumeVars,
    /// A step's bridge (a loop's runs the copy of the original).
    bridge: Option<Bridge<'a, 'py>>,
    /// A loop's bridge: its exits, whose stubs are written into the copy of the original;
    /// the blocks popped at one; what was unbound when it started; the locals its exits
    /// hand the stack slots on in.
    loop_exits: &'a [LoopExit<'py>],
    exit_blocks: usize,
    unhanded: &'a [usize],
    stub_slots: Option<Vec<Slot>>,
    /// A bridged call with keyword names loads them as the original does, just before it.
    names_constant: Option<Instruction>,
    marker: Bound<'py, PyAny>,
}

impl<'a, 'py> Resume<'a, 'py> {
    /// `bridge` is a step's or a loop's: a loop's runs the copy of the original, with its
    /// exits' stubs in it.
    fn new(
        key: &'a ResumeKey,
        instrs: &'a [Instruction],
        vars: ResumeVars,
        bridge: Option<Bridge<'a, 'py>>,
        marker: Bound<'py, PyAny>,
    ) -> Self {
        // A loop's bridge: its exits' stubs are written into the copy of the original.
        let loop_exits: &[LoopExit<'py>] = bridge.as_ref().map_or(&[], |b| b.exits);
        let exit_blocks = bridge.as_ref().map_or(0, |b| b.blocks_after);
        let unhanded: &[usize] = match bridge.as_ref().map(|b| b.step) {
            Some(Step::Loop(span)) => &span.unhanded,
            _ => &[],
        };
        let (bridge, stub_slots) = match bridge {
            Some(b) if matches!(b.step, Step::Loop(_)) => (None, vars.handed_on.clone()),
            other => (other, None),
        };
        let names_constant = match (key.bridge, instrs.get(key.pc)) {
            (true, Some(call)) if matches!(call.arg, Arg::Call { kw_names: true, .. }) => {
                key.pc.checked_sub(1).map(|before| instrs[before].clone())
            }
            _ => None,
        };
        Resume {
            key,
            instrs,
            vars,
            bridge,
            loop_exits,
            exit_blocks,
            unhanded,
            stub_slots,
            names_constant,
            marker,
        }
    }
}

impl<'py> Resume<'_, 'py> {
    /// What the bridge hands on: its variables, and at a loop's exit also what was unbound
    /// when the bridge started, bound since or marked (none for a step's bridge).
    fn push_handed(&self, w: &mut Writer<'py>) -> PyResult<usize> {
        for var in self.key.live.iter().chain(self.unhanded) {
            w.emit(Op::LoadFast, Arg::Var(self.vars.remap(*var as u32)));
        }
        Ok(self.key.live.len() + self.unhanded.len())
    }

    /// Unpacks the box, then empties it: the caller's stack holds the box until this
    /// function returns, but not its values, so each dies when this frame drops it.
    /// (Where the first argument takes the box, unpacking stores over it: the stack
    /// keeps the box for emptying.)
    fn unpack_box(&self, w: &mut Writer<'py>) {
        let first_handed = self.vars.first_handed;
        w.emit(Op::LoadFast, Arg::Var(0));
        if first_handed {
            w.emit(Op::Copy, Arg::Int(1));
        }
        w.emit(Op::UnpackSequence, Arg::Int(self.vars.handed.len() as u32));
        for var in &self.vars.handed {
            w.emit(Op::StoreFast, Arg::Var(*var));
        }
        if !first_handed {
            w.emit(Op::LoadFast, Arg::Var(0));
        }
        let everything = PySlice::full(w.pools.py).into_any();
        w.load_const(everything);
        w.emit(Op::DeleteSubscr, Arg::None);
        if !first_handed {
            w.unbind(0);
        }
    }

    /// The variables that may hold the unbound marker: a loop's bridge binds to it those
    /// it was not handed; any other resume function unbinds those that hold it.
    fn marked_variables(&self, w: &mut Writer<'py>) {
        for original in &self.key.marked {
            let var = self.vars.remap(*original as u32);
            if self.stub_slots.is_some() {
                // A loop's bridge: marked where it was not handed the variable.
                if !self.key.live.contains(original) {
                    w.load_const(self.marker.clone());
                    w.emit(Op::StoreFast, Arg::Var(var));
                }
            } else {
                // `if var is marker: del var`
                w.emit(Op::LoadFast, Arg::Var(var));
                w.load_const(self.marker.clone());
                w.emit(Op::IsOp, Arg::Int(0));
                let skip = w.out.len() + 2;
                w.emit(Op::PopJumpIfFalse, Arg::Target(skip));
                w.emit(Op::DeleteFast, Arg::Var(var));
            }
        }
    }

    /// 3.9/3.10: sets up again the blocks at stack level `level`.
    fn set_up_blocks(&self, w: &mut Writer<'py>, into_copy: &mut Vec<usize>, level: usize) {
        for (handler, _) in self.key.blocks.iter().filter(|(_, l)| *l == level) {
            into_copy.push(w.out.len());
            w.emit(Op::SetupFinally, Arg::Target(*handler));
        }
    }

    /// The stack as the original has it at `key.pc`, from the slots handed on, with the
    /// blocks set up again at their levels.
    fn push_stack(&self, w: &mut Writer<'py>, into_copy: &mut Vec<usize>) -> PyResult<()> {
        let key = self.key;
        for (stack_index, null) in key.nulls.iter().enumerate() {
            self.set_up_blocks(w, into_copy, stack_index);
            if stack_index + 1 == key.nulls.len() && self.names_constant.is_some() {
                // Loaded with the step, under its handler.
            } else if *null {
                w.push_null()?;
            } else {
                let var = self.vars.stack_vars[stack_index].expect("a stack argument");
                w.emit(Op::LoadFast, Arg::Var(var));
                let handled = key.handled.contains(&stack_index);
                if handled {
                    // The exception being handled is current again; the slot saves the one
                    // current now, as `PUSH_EXC_INFO` did in the original.
                    w.emit(Op::PushExcInfo, Arg::None);
                    w.emit(Op::PopTop, Arg::None);
                }
                // The stack holds it now, as the original's did, and drops it when it does (a
                // bridge hands the handled exception on after its step).
                if !(handled && self.bridge.is_some()) {
                    w.unbind(var);
                }
            }
        }
        self.set_up_blocks(w, into_copy, key.nulls.len());
        Ok(())
    }

    /// Where the prologue goes on: a step's bridge runs the step under the instruction's
    /// handler, pops the blocks after it and calls the next resume function; otherwise
    /// it jumps into the copy of the original at `key.pc`.
    fn go_on(&self, w: &mut Writer<'py>, into_copy: &mut Vec<usize>) -> PyResult<()> {
        let key = self.key;
        match (&self.bridge, &self.vars.handed_on) {
            (Some(bridge), Some(handed_on)) => {
                let instr = &self.instrs[key.pc];
                let condition_var = self.vars.condition_var;
                if let Some(var) = condition_var {
                    w.emit(Op::StoreFast, Arg::Var(var));
                }
                let covered_from = w.out.len();
                w.out.extend(self.names_constant.clone());
                let step_instr = Instruction {
                    arg: match instr.arg {
                        Arg::Var(v) => Arg::Var(self.vars.remap(v)),
                        other => other,
                    },
                    ..instr.clone()
                };
                emit_step(w, &step_instr, bridge.step, |w| {
                    w.emit(
                        Op::LoadFast,
                        Arg::Var(condition_var.expect("a branch's condition")),
                    );
                    Ok(())
                })?;
                for index in covered_from..w.out.len() {
                    w.out[index].handler = instr.handler;
                    into_copy.push(index);
                }
                for _ in 0..bridge.blocks_after {
                    w.emit(Op::PopBlock, Arg::None);
                }
                w.return_resumed(handed_on, true, |w| self.push_handed(w), bridge.next)?;
            }
            _ => {
                // A call with keyword names (a loop's bridge) starts where they are loaded.
                let entry = key.pc - usize::from(self.names_constant.is_some());
                into_copy.push(w.out.len());
                w.emit(Op::Jump, Arg::Target(entry));
            }
        }
        Ok(())
    }

    /// The copy of the original, each loop exit's stub just before the instruction there.
    fn copy_original(&self, w: &mut Writer<'py>, into_copy: &mut Vec<usize>) -> PyResult<Copied> {
        let instrs = self.instrs;
        let mut position = vec![0; instrs.len()];
        let mut stub_at = vec![None; instrs.len()];
        let mut in_prologue = true;
        // The copy's room at once (the stubs and markers besides are few).
        w.out.reserve(instrs.len());
        into_copy.reserve(instrs.len());
        for (index, instruction) in instrs.iter().enumerate() {
            // What is written besides the copy (a stub, a marker stored) takes its line.
            w.location = instruction.location;
            if let (Some(exit), Some(slots)) =
                (self.loop_exits.iter().find(|e| e.pc == index), &self.stub_slots)
            {
                stub_at[index] = Some(w.out.len());
                for _ in 0..self.exit_blocks {
                    w.emit(Op::PopBlock, Arg::None);
                }
                w.return_resumed(
                    &slots[..exit.depth],
                    true,
                    |w| self.push_handed(w),
                    Some(&exit.resume),
                )?;
            }
            position[index] = w.out.len();
            let mut copy = instruction.clone();
            // The original's own prologue: done by the new one.
            in_prologue &= matches!(copy.op, Op::CopyFreeVars | Op::MakeCell | Op::Resume | Op::Nop);
            if in_prologue {
                copy = Instruction {
                    op: Op::Nop,
                    arg: Arg::None,
                    location: copy.location,
                    handler: copy.handler,
                };
            }
            if let Arg::Var(v) = &mut copy.arg {
                *v = self.vars.remap(*v);
            }
            // A loop's bridge marks again what a `del` unbinds, for its exits to hand on.
            let marked_again = match (instruction.arg, copy.arg) {
                (Arg::Var(original), Arg::Var(var))
                    if copy.op == Op::DeleteFast
                        && self.stub_slots.is_some()
                        && self.key.marked.contains(&(original as usize)) =>
                {
                    Some(var)
                }
                _ => None,
            };
            w.out.push(copy);
            into_copy.push(position[index]);
            if let Some(var) = marked_again {
                w.load_const(self.marker.clone());
                w.emit(Op::StoreFast, Arg::Var(var));
            }
        }
        Ok(Copied { position, stub_at })
    }
}

/// Where the copy of the original is: per original instruction, the index of its copy and
/// of the loop exit's stub just before it, if any.
struct Copied {
    position: Vec<usize>,
    stub_at: Vec<Option<usize>>,
}

impl Copied {
    /// Makes the targets of `out[into_copy]` the copy's: jumps to an exit land on its
    /// stub; handlers and every other jump on the copy.
    fn retarget(&self, out: &mut [Instruction], into_copy: &[usize]) {
        for index in into_copy {
            let instruction = &mut out[*index];
            if let Arg::Target(t) = &mut instruction.arg {
                *t = self.stub_at[*t].unwrap_or(self.position[*t]);
            }
            if let Some(handler) = &mut instruction.handler {
                *handler = handler.at(self.position[handler.target()]);
            }
        }
    }
}

/// Calls the builtin `name` (as framehook found it) on what `operand` pushes.
fn call_builtin_on<'py, E: Emit<'py>>(
    e: &mut E,
    name: &str,
    operand: impl FnOnce(&mut E) -> PyResult<()>,
) -> PyResult<()> {
    let function = builtin(e.writer().pools.py, name)?;
    e.call_constant(function, |e| {
        operand(e)?;
        Ok(1)
    })
}

/// Runs a break's `step` on the stack as its instruction finds it (`condition` pushes
/// a branch's condition, or the operand an iterator is made of).
pub fn emit_step<'py, E: Emit<'py>>(
    e: &mut E,
    instr: &Instruction,
    step: &Step,
    condition: impl FnOnce(&mut E) -> PyResult<()>,
) -> PyResult<()> {
    match step {
        Step::BranchOnTruth => call_builtin_on(e, "bool", condition),
        Step::RunHere { .. } => {
            e.writer().out.push(Instruction {
                handler: None,
                ..instr.clone()
            });
            Ok(())
        }
        Step::IteratorAndNull => {
            call_builtin_on(e, "iter", condition)?;
            e.push_null()
        }
        Step::BoundAttribute { null_first } => {
            e.writer().out.push(Instruction {
                op: Op::LoadAttr,
                handler: None,
                ..instr.clone()
            });
            e.push_null()?;
            if *null_first {
                e.emit(Op::Swap, Arg::Int(2));
            }
            Ok(())
        }
        Step::Loop(_) => Err(pyo3::exceptions::PyRuntimeError::new_err(
            "a loop runs in its bridge, not as a step",
        )),
    }
}

/// How a break continues past its instruction.
pub struct Continuation {
    pub step: Step,
    /// The step must run under handlers the generated code cannot give it (a `with`'s
    /// or `finally`'s, which save the instruction offset; 3.9/3.10's blocks): a bridge
    /// made from the original code runs it there, then calls the resume function.
    pub bridged: bool,
}

impl Continuation {
    /// Per stack slot the function the generated code calls receives: whether it is NULL.
    pub fn slots_after(&self, values: &Values<'_>, stack: &[Vid]) -> Vec<bool> {
        if self.bridged {
            return stack.iter().map(|v| matches!(values[*v], Val::Null)).collect();
        }
        self.step.slots_after(values, stack)
    }
}

/// Where an exception the break's own instructions raise goes: the original handler's
/// stack depth, and the resume function that starts at the handler.
pub struct LandingPad<'a, 'py> {
    pub depth: usize,
    pub resume: &'a ResumeCall<'py>,
}

/// The resume key of a generator suspended as `state` is: its `yield` entered again with
/// the stack and the bound variables it holds there (the value yielded is the `None` the
/// suspended frame holds for the next `send`), and 3.9/3.10's blocks set up again. None
/// where that state cannot be set up so: not suspended at a plain `yield` (before its first
/// run, inside `yield from`, inside an exception handler), or with cells of its own (its free variables come with its
/// function, `Rebuild::suspended_generator`).
pub fn generator_key(state: &GeneratorState<'_>, values: &Values<'_>) -> Option<ResumeKey> {
    let frame = &state.frame;
    if !state.suspended || state.finished || state.handling {
        return None;
    }
    if !frame.vars.cellvars.is_empty() {
        return None;
    }
    let at = frame.pc.checked_sub(1)?;
    let delegating = at
        .checked_sub(1)
        .is_some_and(|before| frame.instrs[before].op == Op::Send);
    if frame.instrs[at].op != Op::YieldValue || delegating {
        return None;
    }
    let is_null = |vid: &Vid| matches!(values[*vid], Val::Null);
    Some(ResumeKey {
        pc: at,
        nulls: frame.stack.iter().map(is_null).collect(),
        live: (0..frame.vars.first_free())
            .filter(|var| !is_null(&frame.locals[*var]))
            .collect(),
        blocks: frame
            .blocks
            .iter()
            .map(|block| Some((block.handler?, block.level)))
            .collect::<Option<_>>()?,
        handled: Vec::new(),
        bridge: false,
        marked: Vec::new(),
    })
}
