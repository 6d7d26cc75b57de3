//! The code a translation runs instead of the original: call the compiled graph
//! with its inputs read from the frame, replay the side effects in order, rebuild
//! the return value from graph outputs, constants and sources.

use framehook_bytecode::canonical::{Arg, Handler, Instruction, Op};
use framehook_bytecode::Location;
use pyo3::prelude::*;

use super::code_pool::Generated;
use super::model::step::Step;
use super::model::value::{Val, Vid};

mod emit;
mod emitter;
mod plan;
mod rebuild;
mod resume;

pub use self::emit::*;
pub use self::emitter::*;
pub use self::plan::*;
pub use self::resume::*;

/// A new code object for `plan.code`: the graph called, side effects replayed, `returned` returned.
pub fn generate(plan: &Plan<'_, '_>, returned: Vid) -> PyResult<Generated> {
    let first_line: i32 = plan
        .code
        .getattr(pyo3::intern!(plan.code.py(), "co_firstlineno"))?
        .extract()?;
    let mut emitter = Emitter::begin(plan, plan.vars.clone(), Location::line(first_line), false)?;
    emitter.value(returned)?;
    emitter.emit(Op::ReturnValue, Arg::None);
    emitter.finish()
}

/// The code for a frame that breaks at `instr`: the graph so far, the side effects,
/// then the break's step and a call of `resume` with the stack and the live variables
/// (a bridged step: `resume` is the bridge, which runs it, and makes the `handled`
/// exceptions current again first). Under a handler (`pad`), the
/// step is covered by an exception-table entry whose landing pad resumes at the handler.
#[allow(clippy::too_many_arguments)]
pub fn generate_break<'py>(
    plan: &Plan<'_, 'py>,
    instr: &Instruction,
    stack: &[Vid],
    live: &[(usize, Vid)],
    unbound: &[usize],
    continuation: &Continuation,
    handled: &[(usize, Vid)],
    resume: Option<&ResumeCall<'py>>,
    pad: Option<LandingPad<'_, 'py>>,
) -> PyResult<Generated> {
    let mut vars = plan.vars.clone();
    // Every local is named before any instruction is emitted: a new name shifts the
    // cells' and free variables' indices.
    let is_null = |v: Vid| matches!(plan.values[v], Val::Null);
    let slot_vars = slot_locals(
        &mut vars,
        "__sot_tmp",
        &continuation.slots_after(plan.values, stack),
    );
    let pad_vars = pad.as_ref().map(|pad| {
        let mut nulls: Vec<bool> = stack[..pad.depth].iter().map(|v| is_null(*v)).collect();
        nulls.push(false);
        slot_locals(&mut vars, "__sot_pad", &nulls)
    });
    let mut emitter = Emitter::begin(plan, vars, instr.location, true)?;
    // The stack as the break instruction finds it; NULL slots only where the
    // instruction runs here (a resume function pushes its own).
    let run_here = !continuation.bridged && continuation.step.runs_here();
    let pushed = match continuation.step {
        Step::BranchOnTruth | Step::IteratorAndNull if !continuation.bridged => &stack[..stack.len() - 1],
        _ => stack,
    };
    for (slot, v) in pushed.iter().enumerate() {
        if is_null(*v) {
            if run_here {
                emitter.push_null()?;
            }
        } else {
            // The bridge makes a handled exception current again from its slot.
            let exception = handled.iter().find(|(s, _)| *s == slot).map(|(_, e)| *e);
            emitter.value(exception.unwrap_or(*v))?;
        }
    }
    // A call or another instruction run here (a call may collect garbage, a finalizer or a
    // weak reference's callback run) finds the frame as the original's would be.
    // (Not a call with keyword names: they are loaded just before it, with the step.)
    let keyword_call = matches!(instr.arg, Arg::Call { kw_names: true, .. });
    let settled = run_here && matches!(continuation.step, Step::RunHere { .. }) && !keyword_call;
    if settled {
        emitter.settle_variables(live, unbound)?;
    }
    // The step's exception-table entry also covers the instruction before it (an argument
    // or a variable settled, part of the original's try body, as in CPython's own tables):
    // 3.13 looks up the handler of a frame that an inlined call left with an error (a
    // class's `__init__` run by CALL_ALLOC_AND_ENTER_INIT) one code unit before the call.
    let covered_from = match emitter.w.out.last() {
        Some(before) if before.op != Op::Resume => emitter.w.out.len() - 1,
        _ => emitter.w.out.len(),
    };
    if !continuation.bridged {
        emit_step(&mut emitter, instr, &continuation.step, |e| {
            e.value(*stack.last().expect("a branch has its condition"))
        })?;
    }
    let covered_to = emitter.w.out.len();
    let push_live = |e: &mut Emitter<'_, 'py>| {
        for (var, value) in live {
            if settled {
                let var = e.var_of(*var);
                e.emit(Op::LoadFast, Arg::Var(var));
            } else {
                e.value(*value)?;
            }
        }
        Ok(live.len())
    };
    emitter.return_resumed(&slot_vars, run_here, push_live, resume)?;
    if let (Some(pad), Some(pad_vars)) = (pad, pad_vars) {
        let target = emitter.w.out.len();
        let handler = Handler::new(target, pad.depth as u32, false);
        for instruction in &mut emitter.w.out[covered_from..covered_to] {
            instruction.handler = Some(handler);
        }
        emitter.return_resumed(&pad_vars, true, push_live, Some(pad.resume))?;
    }
    emitter.finish()
}
