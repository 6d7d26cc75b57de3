//! Resume functions and bridges: the original code entered at a break with the values
//! handed on, and the step a break runs before one takes over.

use framehook_bytecode::canonical::{Arg, Instruction, Op, Vars};
use framehook_bytecode::{Location, Table};
use pyo3::prelude::*;
use pyo3::types::PySlice;

use crate::sot::translator::model::code::{unbound_marker, ResumeKey, RESUME_BOX, RESUME_STACK};
use crate::sot::translator::model::step::Step;
use crate::sot::translator::model::value::{Val, Vid};
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
}

/// A resume function's code: the original code, with a prologue that takes the
/// stack slots and the live variables as arguments, sets the blocks up again, pushes
/// the slots and jumps to `key.pc` (a bridge runs its step there and calls the next
/// resume function instead). Exception table, cells, names and line numbers are the
/// original's.
pub fn resume_code<'py>(
    table: &'static Table,
    code: &Bound<'py, PyAny>,
    vars: &Vars,
    instrs: &[Instruction],
    key: &ResumeKey,
    bridge: Option<Bridge<'_, 'py>>,
) -> PyResult<Bound<'py, PyAny>> {
    let old_all: Vec<String> = vars.all().iter().map(|s| s.to_string()).collect();
    let names = ResumeNames::new(&old_all);
    let mut handed: Vec<String> = (0..key.nulls.len())
        .filter(|i| !key.nulls[*i])
        .map(|i| names.stack(i))
        .collect();
    handed.extend(key.live.iter().map(|v| old_all[*v].clone()));
    let boxed = handed.len();
    // The original's first argument, when handed on, is the resume function's first local
    // too, and the parameter that takes the box: a zero-argument `super()` reads it there.
    let first_handed = key.live.contains(&0) && code.getattr("co_argcount")?.extract::<usize>()? > 0;
    let mut varnames: Vec<String> = if first_handed {
        vec![old_all[0].clone()]
    } else if boxed > 0 {
        vec![names.resume_box()]
    } else {
        Vec::new()
    };
    let argcount = varnames.len();
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
    // A bridge's own locals, named before any instruction is emitted.
    let handed_on = bridge.as_ref().map(|b| {
        let no_temporary: Vec<bool> = (0..b.next_nulls.len())
            .map(|i| b.next_nulls[i] || key.handled.contains(&i))
            .collect();
        let mut slots = slot_locals(&mut new_vars, "__sot_tmp", &no_temporary);
        for slot in &key.handled {
            let var = new_vars.varnames.iter().position(|n| *n == names.stack(*slot));
            slots[*slot] = Slot::Handled(var.expect("a stack argument") as u32);
        }
        slots
    });
    let condition_var = bridge
        .as_ref()
        .filter(|b| matches!(b.step, Step::BranchOnTruth))
        .map(|_| {
            new_vars.varnames.push("__sot_condition".to_owned());
            (new_vars.varnames.len() - 1) as u32
        });
    let new_all: Vec<String> = new_vars.all().iter().map(|s| s.to_string()).collect();
    let remap = |var: u32| -> u32 {
        let name = &old_all[var as usize];
        new_all
            .iter()
            .position(|n| n == name)
            .expect("every variable survives") as u32
    };
    // A loop's bridge: its exits' stubs are written into the copy of the original.
    let loop_exits: &[LoopExit<'py>] = bridge.as_ref().map_or(&[], |b| b.exits);
    let exit_blocks = bridge.as_ref().map_or(0, |b| b.blocks_after);
    let unhanded: &[usize] = match bridge.as_ref().map(|b| b.step) {
        Some(Step::Loop(span)) => &span.unhanded,
        _ => &[],
    };
    let (bridge, stub_slots) = match bridge {
        Some(b) if matches!(b.step, Step::Loop(_)) => (None, handed_on.clone()),
        other => (other, None),
    };
    // What the bridge hands on: its variables, and at a loop's exit also what was unbound
    // when the bridge started, bound since or marked (none for a step's bridge).
    let push_handed = |w: &mut Writer<'py>| {
        for var in key.live.iter().chain(unhanded) {
            w.emit(Op::LoadFast, Arg::Var(remap(*var as u32)));
        }
        Ok(key.live.len() + unhanded.len())
    };
    let marker = unbound_marker(code.py())?;
    let location = instrs.get(key.pc).map_or(Location::NONE, |i| i.location);
    let mut w = Writer::new(table, code, new_vars, location)?;
    for instruction in &mut w.out {
        instruction.location = location;
    }
    if boxed > 0 {
        // Unpack the box, then empty it: the caller's stack holds the box until this
        // function returns, but not its values, so each dies when this frame drops it.
        // (Where the first argument takes the box, unpacking stores over it: the stack
        // keeps the box for emptying.)
        w.emit(Op::LoadFast, Arg::Var(0));
        if first_handed {
            w.emit(Op::Copy, Arg::Int(1));
        }
        w.emit(Op::UnpackSequence, Arg::Int(boxed as u32));
        for name in &handed {
            let var = new_all.iter().position(|n| n == name).expect("a handed variable");
            w.emit(Op::StoreFast, Arg::Var(var as u32));
        }
        if !first_handed {
            w.emit(Op::LoadFast, Arg::Var(0));
        }
        let everything = PySlice::full(code.py()).into_any();
        w.load_const(everything);
        w.emit(Op::DeleteSubscr, Arg::None);
        if !first_handed {
            w.unbind(0);
        }
    }
    for original in &key.marked {
        let var = remap(*original as u32);
        if stub_slots.is_some() {
            // A loop's bridge: marked where it was not handed the variable.
            if !key.live.contains(original) {
                w.load_const(marker.clone());
                w.emit(Op::StoreFast, Arg::Var(var));
            }
        } else {
            // `if var is marker: del var`
            w.emit(Op::LoadFast, Arg::Var(var));
            w.load_const(marker.clone());
            w.emit(Op::IsOp, Arg::Int(0));
            let skip = w.out.len() + 2;
            w.emit(Op::PopJumpIfFalse, Arg::Target(skip));
            w.emit(Op::DeleteFast, Arg::Var(var));
        }
    }
    // Instructions whose targets are the original's: moved past what comes before the
    // copy of the original once its start is known.
    let mut into_copy: Vec<usize> = Vec::new();
    let set_up_blocks = |w: &mut Writer<'py>, into_copy: &mut Vec<usize>, level: usize| {
        for (handler, _) in key.blocks.iter().filter(|(_, l)| *l == level) {
            into_copy.push(w.out.len());
            w.emit(Op::SetupFinally, Arg::Target(*handler));
        }
    };
    // A bridged call with keyword names loads them as the original does, just before it.
    let names_constant = match (key.bridge, instrs.get(key.pc)) {
        (true, Some(call)) if matches!(call.arg, Arg::Call { kw_names: true, .. }) => {
            key.pc.checked_sub(1).map(|before| instrs[before].clone())
        }
        _ => None,
    };
    for (stack_index, null) in key.nulls.iter().enumerate() {
        set_up_blocks(&mut w, &mut into_copy, stack_index);
        if stack_index + 1 == key.nulls.len() && names_constant.is_some() {
            // Loaded with the step, under its handler.
        } else if *null {
            w.push_null()?;
        } else {
            let var = new_all
                .iter()
                .position(|n| *n == names.stack(stack_index))
                .expect("a stack argument") as u32;
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
            if !(handled && bridge.is_some()) {
                w.unbind(var);
            }
        }
    }
    set_up_blocks(&mut w, &mut into_copy, key.nulls.len());
    match (bridge, handed_on) {
        (Some(bridge), Some(handed_on)) => {
            let instr = &instrs[key.pc];
            if let Some(var) = condition_var {
                w.emit(Op::StoreFast, Arg::Var(var));
            }
            let covered_from = w.out.len();
            w.out.extend(names_constant);
            let step_instr = Instruction {
                arg: match instr.arg {
                    Arg::Var(v) => Arg::Var(remap(v)),
                    other => other,
                },
                ..instr.clone()
            };
            emit_step(&mut w, &step_instr, bridge.step, |w| {
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
            w.return_resumed(&handed_on, true, push_handed, bridge.next)?;
        }
        _ => {
            // A call with keyword names (a loop's bridge) starts where they are loaded.
            let entry = key.pc - usize::from(names_constant.is_some());
            into_copy.push(w.out.len());
            w.emit(Op::Jump, Arg::Target(entry));
        }
    }
    // The copy of the original, each loop exit's stub just before the instruction there.
    let mut position = vec![0; instrs.len()];
    let mut stub_at = vec![None; instrs.len()];
    let mut in_prologue = true;
    for (index, instruction) in instrs.iter().enumerate() {
        // What is written besides the copy (a stub, a marker stored) takes its line.
        w.location = instruction.location;
        if let (Some(exit), Some(slots)) = (loop_exits.iter().find(|e| e.pc == index), &stub_slots) {
            stub_at[index] = Some(w.out.len());
            for _ in 0..exit_blocks {
                w.emit(Op::PopBlock, Arg::None);
            }
            w.return_resumed(&slots[..exit.depth], true, push_handed, Some(&exit.resume))?;
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
            *v = remap(*v);
        }
        // A loop's bridge marks again what a `del` unbinds, for its exits to hand on.
        let marked_again = match (instruction.arg, copy.arg) {
            (Arg::Var(original), Arg::Var(var))
                if copy.op == Op::DeleteFast
                    && stub_slots.is_some()
                    && key.marked.contains(&(original as usize)) =>
            {
                Some(var)
            }
            _ => None,
        };
        w.out.push(copy);
        into_copy.push(position[index]);
        if let Some(var) = marked_again {
            w.load_const(marker.clone());
            w.emit(Op::StoreFast, Arg::Var(var));
        }
    }
    // Jumps to an exit land on its stub; handlers and every other jump on the copy.
    for index in into_copy {
        let instruction = &mut w.out[index];
        if let Arg::Target(t) = &mut instruction.arg {
            *t = stub_at[*t].unwrap_or(position[*t]);
        }
        if let Some(handler) = &mut instruction.handler {
            handler.target = position[handler.target];
        }
    }
    w.finish(code, Some(argcount))
}

/// Runs a break's `step` on the stack as its instruction finds it (`condition` pushes
/// a branch's condition).
pub fn emit_step<'py, E: Emit<'py>>(
    e: &mut E,
    instr: &Instruction,
    step: &Step,
    condition: impl FnOnce(&mut E) -> PyResult<()>,
) -> PyResult<()> {
    match step {
        Step::BranchOnTruth => {
            let truth = builtin(e.writer().pools.py, "bool")?;
            e.call_constant(truth, |e| {
                condition(e)?;
                Ok(1)
            })
        }
        Step::RunHere { .. } => {
            e.writer().out.push(Instruction {
                handler: None,
                ..instr.clone()
            });
            Ok(())
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
    pub fn slots_after(&self, values: &[Val<'_>], stack: &[Vid]) -> Vec<bool> {
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
