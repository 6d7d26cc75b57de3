//! The generated side of a break deep in inlined calls that resumes where it stopped
//! (`vm::nested`): each inlined frame's bridge at its instruction, and what its caller's
//! call runs in place of it (`_sot_resumed` bound to the bridge and the values handed on).

use std::cell::RefCell;
use std::sync::Arc;

use pyo3::prelude::*;

use super::codegen;
use super::model::code::{CodeInfo, ResumeKey};
use super::model::frame::BreakPoint;
use super::model::step::Step;
use super::model::value::{Val, Vid};
use super::translation::Translation;
use super::vm::Vm;
use crate::hookapi::pyobject::import;

/// One inlined frame's way on: its bridge, and what it is handed (in its box's order: the
/// stack slots that are not NULL, the callee's among them, then the live variables).
pub struct FrameBridge<'py> {
    bridge: Bridged<'py>,
    handed: Vec<Handed>,
}

/// A bridge, or where the frame has cells, what it is made from when the call runs: its
/// code, the callee (whose closure and globals it takes) and the frame's cells' contents.
enum Bridged<'py> {
    Function(Bound<'py, PyAny>),
    WithCells {
        code: Bound<'py, PyAny>,
        callee: Vid,
        info: Arc<CodeInfo>,
        locals: Vec<Vid>,
    },
}

enum Handed {
    Value(Vid),
    /// The callee's slot: what goes on in the frame below.
    Callee,
}

/// The bridges of the frames the break of `top`'s translation at `point` resumes in,
/// innermost first; Err(why) where one of them cannot go on so.
pub fn bridges<'py>(
    top: &Translation<'_, 'py, '_>,
    point: &BreakPoint,
) -> PyResult<Result<Vec<FrameBridge<'py>>, String>> {
    let vm = top.vm;
    let Some(frames) = vm.nested_frames() else {
        return Ok(Ok(Vec::new()));
    };
    if !matches!(vm.at_break(&point.instr), Some(Step::RunHere { consumed, .. }) if consumed <= point.stack.len())
    {
        return Ok(Err("the call cannot run in the generated code".to_owned()));
    }
    let mut bridges = Vec::with_capacity(frames.len());
    for (index, inlined) in frames.iter().enumerate().rev() {
        let innermost = index == frames.len() - 1;
        let caller = if index == 0 {
            point
        } else {
            &frames[index - 1].point
        };
        let Some(callee) = vm.callable_of_call(&caller.instr, &caller.stack) else {
            return Ok(Err("its caller's call has no callee to read".to_owned()));
        };
        let info = top.backend.code_info(&inlined.code)?;
        let cache = top.caches.get(&inlined.code)?;
        let qualname: String = inlined
            .code
            .getattr(pyo3::intern!(top.py, "co_qualname"))
            .and_then(|name| name.extract())
            .unwrap_or_default();
        // The top frame's translation, for the inlined frame's code, in its globals.
        let frame = Translation {
            code: &inlined.code,
            info: &info,
            cache,
            globals: Some(inlined.globals.clone()),
            qualname: &qualname,
            restart: RefCell::new(None),
            ..*top
        };
        match frame_bridge(&frame, &info, &inlined.point, !innermost, callee)? {
            Some(bridge) => bridges.push(bridge),
            None => return Ok(Err(format!("{qualname} cannot resume at its call"))),
        }
    }
    Ok(Ok(bridges))
}

/// The bridge of the frame `frame` translates at `point`, its callee (`resumes_below`) made
/// what goes on in the frame below; None where its step cannot run there. `called`: the
/// frame's function as its caller calls it (a frame with cells takes its closure and
/// globals when the call runs).
fn frame_bridge<'py>(
    frame: &Translation<'_, 'py, '_>,
    info: &Arc<CodeInfo>,
    point: &BreakPoint,
    resumes_below: bool,
    called: Vid,
) -> PyResult<Option<FrameBridge<'py>>> {
    let vm = frame.vm;
    // A frame above resumes at its call; the innermost at the instruction that broke: a
    // call or a subscript (run as they are), or a branch on a tensor's truth (its bridge
    // takes the truth and resumes at the branch with it, as a break of the translated
    // frame there does).
    let (step, consumed) = match vm.at_break(&point.instr) {
        Some(step @ Step::RunHere { consumed, .. }) => (step, consumed),
        Some(step @ Step::BranchOnTruth) if !resumes_below => (step, 1),
        _ => return Ok(None),
    };
    if consumed > point.stack.len() {
        return Ok(None);
    }
    let mut nulls: Vec<bool> = point
        .stack
        .iter()
        .map(|v| matches!(vm.values[*v], Val::Null))
        .collect();
    let callee = resumes_below.then(|| vm.callee_slots(point.stack.len(), consumed));
    if let Some((callee, null)) = callee {
        nulls[callee] = false;
        nulls[null] = true;
    }
    let live = frame.handed(point)?;
    let live_vars: Vec<usize> = live.iter().map(|(var, _)| *var).collect();
    let call = if point.in_loop {
        // The loop around the call runs in the bridge, its first round's call the callee's
        // own way on (where the frame below resumes).
        let Ok(continuation) = frame.loop_continuation(point)? else {
            return Ok(None);
        };
        let Step::Loop(span) = &continuation.step else {
            return Ok(None);
        };
        frame.loop_bridge(point, &continuation.step, span, &live_vars, nulls.clone())?
    } else {
        call_bridge(frame, point, &step, &live_vars, nulls.clone())?
    };
    let bridge = match call.has_closure {
        false => Bridged::Function(call.target),
        true => Bridged::WithCells {
            code: call.target,
            callee: called,
            info: Arc::clone(info),
            locals: point.locals.clone(),
        },
    };
    let mut handed: Vec<Handed> = (0..point.stack.len())
        .filter(|slot| !nulls[*slot])
        .map(|slot| match callee {
            Some((callee, _)) if callee == slot => Handed::Callee,
            _ => Handed::Value(point.stack[slot]),
        })
        .collect();
    handed.extend(live.iter().map(|(_, vid)| Handed::Value(*vid)));
    Ok(Some(FrameBridge { bridge, handed }))
}

/// The bridge of a frame's call (or branch) outside any loop: it runs the call, then calls
/// the resume function after it (a branch's truth, then the resume function at the branch).
fn call_bridge<'py>(
    frame: &Translation<'_, 'py, '_>,
    point: &BreakPoint,
    step: &Step,
    live_vars: &[usize],
    nulls: Vec<bool>,
) -> PyResult<codegen::ResumeCall<'py>> {
    let vm = frame.vm;
    let next_key = ResumeKey {
        pc: step.resume_pc(point.pc),
        nulls: step.slots_after(&vm.values, &point.stack),
        live: live_vars.to_vec(),
        blocks: Vec::new(),
        handled: Vec::new(),
        bridge: false,
        marked: Vec::new(),
    };
    let next = if next_key.pc < frame.info.instrs.len() && vm.falls_through(&point.instr) {
        let kept = step.kept(point.stack.len());
        Some(frame.resume_call(next_key.clone(), None, point, kept)?)
    } else {
        None
    };
    let key = ResumeKey {
        pc: point.pc,
        nulls,
        live: live_vars.to_vec(),
        blocks: Vec::new(),
        handled: Vec::new(),
        bridge: true,
        marked: Vec::new(),
    };
    let bridge = codegen::Bridge {
        step,
        next: next.as_ref(),
        next_nulls: &next_key.nulls,
        dead: 0..0,
        blocks_after: 0,
        exits: &[],
    };
    frame.resume_call(key, Some(bridge), point, point.stack.len())
}

/// The top frame's break `point` with its call's callee made what goes on in the inlined
/// frames (`bridges`, innermost first).
pub fn resumed_point<'py>(
    py: Python<'py>,
    vm: &mut Vm<'py, '_>,
    bridges: Vec<FrameBridge<'py>>,
    point: BreakPoint,
) -> PyResult<BreakPoint> {
    let native = import(py, "framehook._native")?;
    let mut below: Option<Vid> = None;
    for FrameBridge { bridge, handed } in bridges {
        let handed = handed
            .into_iter()
            .map(|handed| match handed {
                Handed::Value(vid) => vid,
                Handed::Callee => below.expect("an outer frame's callee resumes below"),
            })
            .collect();
        let (resumed, bound) = match bridge {
            Bridged::Function(bridge) => (native.getattr("_sot_resumed")?, vec![vm.constant_value(bridge)]),
            Bridged::WithCells {
                code,
                callee,
                info,
                locals,
            } => {
                let Some(contents) = vm.cell_values(&info.vars, &locals)? else {
                    return Err(pyo3::exceptions::PyRuntimeError::new_err(
                        "framehook: a frame's cell variable holds no cell",
                    ));
                };
                let contents = vm.tuple_value(contents);
                (
                    native.getattr("_sot_resumed_in")?,
                    vec![callee, vm.constant_value(code), contents],
                )
            }
        };
        below = Some(vm.resumed_callee(resumed, bound, handed));
    }
    let (Some(callee), Some(Step::RunHere { consumed, .. })) = (below, vm.at_break(&point.instr)) else {
        // `bridges` made none, or found the top frame's call runs in the generated code.
        return Ok(point);
    };
    let stack = vm.with_callee(&point.stack, consumed, callee);
    Ok(BreakPoint { stack, ..point })
}
