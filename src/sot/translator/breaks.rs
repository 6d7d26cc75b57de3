//! Break planning: how the generated code goes on past a graph break (a step run here,
//! a bridge, a loop's bridge), and the resume functions it calls.

use pyo3::prelude::*;

use super::cache::Action;
use super::codegen;
use super::model::code::{is_resume_local, ResumeKey};
use super::model::frame::BreakPoint;
use super::model::known::held;
use super::model::step::{LoopSpan, Step};
use super::model::value::{Val, Vid};
use super::translation::Translation;
use super::vm::Vm;
use crate::hookapi::pyobject::StrongRef;

/// The handler stack depth of a break that a landing pad can resume from.
pub fn landing_pad_depth(vm: &Vm<'_, '_>, point: &BreakPoint) -> Option<usize> {
    let handler = point.instr.handler?;
    let depth = handler.depth as usize;
    let no_nulls = point
        .stack
        .get(..depth)?
        .iter()
        .all(|v| !matches!(vm.values[*v], Val::Null));
    (!handler.lasti && no_nulls).then_some(depth)
}

/// How the generated code goes on past a graph break, if it can.
pub fn continuation_of(
    table: &'static framehook_bytecode::Table,
    vm: &Vm<'_, '_>,
    point: &BreakPoint,
) -> Option<codegen::Continuation> {
    use framehook_bytecode::canonical::Op;
    use framehook_bytecode::table::ExceptionModel;
    if point.handling {
        // What runs the rest would see another exception as the one being handled.
        return None;
    }
    let step = vm.at_break(&point.instr)?;
    if let Step::RunHere { consumed, .. } = step {
        if consumed > point.stack.len() {
            return None;
        }
    }
    // The generated code has none of 3.9/3.10's blocks (nor can it set one up for the
    // resume function), and a landing pad resumes only where CPython pushes no
    // instruction offset for the handler (`except` clauses; not `finally` or `with`).
    let block_stack = table.exceptions == ExceptionModel::BlockStack;
    let bridged = (point.in_handler_scope && (block_stack || landing_pad_depth(vm, point).is_none()))
        || (block_stack && point.instr.op == Op::SetupWith)
        || !point.handled.is_empty();
    // A bridge runs the original's instruction and hands the stack on: an iterator pair of
    // the interpreter's own may hold a tagged int (3.15+), which cannot be handed on.
    if bridged && matches!(step, Step::IteratorAndNull) {
        return None;
    }
    Some(codegen::Continuation { step, bridged })
}

impl<'py> Translation<'_, 'py, '_> {
    /// The variables handed on at `point` (canonical index, value): the bound ones, but
    /// cells and those the rest never reads that hold None.
    pub fn handed(&self, point: &BreakPoint) -> PyResult<Vec<(usize, usize)>> {
        let (info, vm) = (self.info, self.vm);
        let first_free = info.vars.first_free();
        let liveness = self.liveness()?;
        Ok(point.locals[..first_free]
            .iter()
            .enumerate()
            // Cells reach a resume function as its closure, not as arguments.
            .filter(|(_, vid)| !matches!(&vm.values[**vid], Val::Null | Val::Cell(_)))
            // A variable the rest never reads is handed on too, unless it holds None (nothing
            // can tell): the original frame holds its value until it stores over it or
            // returns, and so does the resume function (which empties the box it takes its
            // values from, and breaks at a store that drops a watched one).
            .filter(|(i, vid)| liveness.map_or(true, |l| l.is_live(point.pc, *i) || !vm.is_none(**vid)))
            .map(|(i, vid)| (i, *vid))
            .collect())
    }

    /// How a break inside a loop goes on: a bridge runs the loop (the outermost around
    /// it) as the original does, and each way out of it calls the resume function there.
    /// Or why it cannot.
    pub fn loop_continuation(
        &self,
        point: &BreakPoint,
    ) -> PyResult<Result<codegen::Continuation, &'static str>> {
        use framehook_bytecode::canonical::{Arg, Op};
        use framehook_bytecode::loops;
        let (info, vm) = (self.info, self.vm);
        let instrs = &info.instrs;
        if point.handling || !point.handled.is_empty() {
            return Ok(Err("an exception is being handled"));
        }
        let Some(liveness) = self.liveness()? else {
            return Ok(Err("the code reads its frame's variables"));
        };
        let Some(a_loop) = loops::outermost_loop(instrs, info.in_loop.loops(), point.pc) else {
            return Ok(Err("no loop closes there"));
        };
        // A comprehension the loop inlines (3.12+) unbinds its variable again at its end
        // where it was unbound: an exit would hand on a variable with nothing in it.
        if vm.unbinds_at_loop_end(&point.stack) {
            return Ok(Err(
                "a comprehension inside it unbinds its variable again at its end",
            ));
        }
        let head = a_loop.head;
        // 3.9/3.10 say which handler an instruction raises to only as it runs (`SETUP_*`
        // blocks), and an exit inside a block needs it set up again: such a loop stays out.
        let sets_up_blocks = instrs.iter().enumerate().any(|(index, instr)| {
            a_loop.contains(index)
                && matches!(instr.op, Op::SetupFinally | Op::SetupWith | Op::SetupAsyncWith)
        });
        if sets_up_blocks {
            return Ok(Err("the loop sets up a `try` or `with` block (3.9/3.10)"));
        }
        let exits = match loops::loop_exits(self.table, instrs, &a_loop) {
            Some(exits) if exits.iter().all(|exit| *exit < instrs.len()) => exits,
            _ => return Ok(Err("its exits cannot be told")),
        };
        // Each exit's stack: what lies below the loop (a `for` loop's iterator apart), and
        // the loop's own slots where a jump leaves before popping them (3.12+ put a
        // `break`'s `POP_TOP` past the loop).
        let depths = self.depths();
        let depth_at = |pc: usize| {
            depths
                .and_then(|d| d.get(pc).copied().flatten())
                .map(|d| d as usize)
        };
        let iterator_slots = self.table.iterator_slots as usize;
        let kept = match depth_at(head) {
            Some(depth) if instrs[head].op == Op::ForIter && depth >= iterator_slots => {
                depth - iterator_slots
            }
            Some(depth) if instrs[head].op != Op::ForIter => depth,
            _ => return Ok(Err("its stack cannot be told")),
        };
        if kept > point.stack.len() {
            return Ok(Err("its stack cannot be told"));
        }
        let Some(exits) = exits
            .iter()
            .map(|exit| {
                depth_at(*exit)
                    .filter(|depth| *depth >= kept)
                    .map(|depth| (*exit, depth))
            })
            .collect::<Option<Vec<_>>>()
        else {
            return Ok(Err("its stack cannot be told"));
        };
        let handed: Vec<usize> = self.handed(point)?.iter().map(|(var, _)| *var).collect();
        let first_free = info.vars.first_free();
        let exit_pcs: Vec<usize> = exits.iter().map(|(pc, _)| *pc).collect();
        // What an exit reads that the bridge was not handed (a variable the loop assigns
        // first) is marked until the loop stores it; so is a handed one after a `del`. No
        // path may read one before the loop binds it.
        let unhanded: Vec<usize> = (0..first_free)
            .filter(|var| !handed.contains(var) && !matches!(vm.values[point.locals[*var]], Val::Cell(_)))
            .filter(|var| exit_pcs.iter().any(|exit| liveness.is_live(*exit, *var)))
            .collect();
        let mut starts = vec![point.pc];
        starts.extend(point.blocks.iter().map(|(handler, _)| *handler));
        let reached = loops::reachable(instrs, &starts, &exit_pcs);
        let deleted = instrs
            .iter()
            .zip(&reached)
            .filter_map(|(instr, reached)| match instr.arg {
                Arg::Var(var)
                    if *reached && instr.op == Op::DeleteFast && handed.contains(&(var as usize)) =>
                {
                    Some(var as usize)
                }
                _ => None,
            });
        let mut marked: Vec<usize> = unhanded.iter().copied().chain(deleted).collect();
        marked.sort_unstable();
        marked.dedup();
        let block_handlers: Vec<usize> = point.blocks.iter().map(|(handler, _)| *handler).collect();
        let bound: Vec<usize> = marked
            .iter()
            .copied()
            .filter(|var| handed.contains(var))
            .collect();
        if loops::reads_unbound(instrs, point.pc, &block_handlers, &exit_pcs, &marked, &bound) {
            return Ok(Err("a variable may be read before the loop assigns it"));
        }
        Ok(Ok(codegen::Continuation {
            step: Step::Loop(LoopSpan {
                exits,
                kept,
                // Where an iterator takes two slots (3.15+), the second may be a list's
                // index as a tagged int, which no code but the interpreter's may hold: a
                // `for` loop's iterator slots are dead at its exits (see `LoopSpan::dead`).
                dead: if instrs[head].op == Op::ForIter && iterator_slots > 1 {
                    iterator_slots
                } else {
                    0
                },
                unhanded,
                marked,
            }),
            bridged: true,
        }))
    }

    /// A loop that cannot run in a bridge runs in the resume function of a break before
    /// it (at the `GET_ITER` of the outermost loop around `point`), not the whole frame.
    pub fn break_before_loop(&self, point: &BreakPoint, reason: &str) {
        use framehook_bytecode::canonical::Op;
        let instrs = &self.info.instrs;
        let Some(a_loop) =
            framehook_bytecode::loops::outermost_loop(instrs, self.info.in_loop.loops(), point.pc)
        else {
            return;
        };
        let Some(before) = a_loop.head.checked_sub(1) else {
            return;
        };
        if instrs[before].op == Op::GetIter && !self.vm.break_before.contains_key(&before) {
            self.restart.replace(Some((before, reason.to_owned())));
        }
    }

    /// The code for a frame that breaks at `point`: its graph, the break, and the call
    /// of the resume function (made once per place and stack layout).
    pub fn build_break(
        &self,
        point: &BreakPoint,
        continuation: &codegen::Continuation,
    ) -> PyResult<(Action, Option<String>)> {
        let (info, vm) = (self.info, self.vm);
        let first_free = info.vars.first_free();
        let live = self.handed(point)?;
        let live_vars: Vec<usize> = live.iter().map(|(i, _)| *i).collect();
        // Variables the original has unbound there (`del x`, or not yet assigned).
        let unbound: Vec<usize> = point.locals[..first_free]
            .iter()
            .enumerate()
            .filter(|(_, vid)| matches!(&vm.values[**vid], Val::Null))
            .map(|(i, _)| i)
            .collect();
        let handled_slots: Vec<usize> = point.handled.iter().map(|(slot, _)| *slot).collect();
        let step = &continuation.step;
        let resume = if let Step::Loop(span) = step {
            let nulls = continuation.slots_after(&vm.values, &point.stack);
            Some(self.loop_bridge(point, step, span, &live_vars, nulls)?)
        } else {
            // The resume function after the step (the bridge's, where the step is bridged).
            let next_key = ResumeKey {
                pc: step.resume_pc(point.pc),
                nulls: step.slots_after(&vm.values, &point.stack),
                live: live_vars.clone(),
                blocks: point.blocks_after(),
                handled: handled_slots.clone(),
                bridge: false,
                marked: Vec::new(),
            };
            let next = if next_key.pc < info.instrs.len() && vm.falls_through(&point.instr) {
                let kept = step.kept(point.stack.len());
                Some(self.resume_call(next_key.clone(), None, point, kept)?)
            } else {
                None
            };
            if continuation.bridged {
                let key = ResumeKey {
                    pc: point.pc,
                    nulls: continuation.slots_after(&vm.values, &point.stack),
                    live: live_vars.clone(),
                    blocks: point.blocks.clone(),
                    handled: handled_slots,
                    bridge: true,
                    marked: Vec::new(),
                };
                let bridge = codegen::Bridge {
                    step,
                    next: next.as_ref(),
                    next_nulls: &next_key.nulls,
                    dead: 0..0,
                    blocks_after: next_key.blocks.len(),
                    exits: &[],
                };
                Some(self.resume_call(key, Some(bridge), point, point.stack.len())?)
            } else {
                next
            }
        };
        let pad_resume = match landing_pad_depth(vm, point) {
            Some(depth) if !continuation.bridged => {
                let handler = point.instr.handler.expect("a landing pad has its handler");
                let mut nulls = vec![false; depth];
                nulls.push(false);
                let pad_key = ResumeKey {
                    pc: handler.target(),
                    nulls,
                    live: live_vars,
                    blocks: Vec::new(),
                    handled: Vec::new(),
                    bridge: false,
                    marked: Vec::new(),
                };
                Some((depth, self.resume_call(pad_key, None, point, depth)?))
            }
            _ => None,
        };
        let mut rebuilt: Vec<usize> = point.stack.clone();
        rebuilt.extend(live.iter().map(|(_, v)| *v));
        rebuilt.extend(point.handled.iter().map(|(_, exception)| *exception));
        self.generated_code(&point.locals, &rebuilt, |plan| {
            codegen::generate_break(
                plan,
                &point.instr,
                &point.stack,
                &live,
                &unbound,
                continuation,
                &point.handled,
                resume.as_ref(),
                pad_resume.as_ref().map(|(depth, resume)| codegen::LandingPad {
                    depth: *depth,
                    resume,
                }),
            )
        })
    }

    /// The bridge of a break inside the loop `span` (the `step` of `point`): it runs the
    /// loop from the break's instruction as the original does, and each way out of it calls
    /// the resume function there. `bridge_nulls`: per stack slot the bridge receives,
    /// whether it is NULL.
    pub fn loop_bridge(
        &self,
        point: &BreakPoint,
        step: &Step,
        span: &LoopSpan,
        live_vars: &[usize],
        bridge_nulls: Vec<bool>,
    ) -> PyResult<codegen::ResumeCall<'py>> {
        let vm = self.vm;
        // Each exit's resume function gets the stack below the loop's iterator, the
        // variables the bridge got, and the blocks set up outside the loop.
        let nulls: Vec<bool> = point.stack[..span.kept]
            .iter()
            .map(|v| matches!(vm.values[*v], Val::Null))
            .collect();
        let blocks: Vec<(usize, usize)> = point
            .blocks
            .iter()
            .filter(|(_, level)| *level <= span.kept)
            .copied()
            .collect();
        // An exit's stub pops the loop's dead slots, and the resume function has NULLs in
        // their place, which the code after an exit only pops (as it pops a generator
        // loop's NULL). Other slots left at an exit (a `with` block's, above the iterator)
        // are handed on as they are.
        let dead = span.kept..span.kept + span.dead;
        let exits = span
            .exits
            .iter()
            .map(|(exit, depth)| {
                let mut nulls = nulls.clone();
                nulls.extend((span.kept..*depth).map(|slot| dead.contains(&slot)));
                let key = ResumeKey {
                    pc: *exit,
                    nulls,
                    live: live_vars.iter().chain(&span.unhanded).copied().collect(),
                    blocks: blocks.clone(),
                    handled: Vec::new(),
                    bridge: false,
                    marked: span.marked.clone(),
                };
                Ok(codegen::LoopExit {
                    pc: *exit,
                    depth: *depth,
                    resume: self.resume_call(key, None, point, span.kept)?,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let key = ResumeKey {
            pc: point.pc,
            nulls: bridge_nulls,
            live: live_vars.to_vec(),
            blocks: point.blocks.clone(),
            handled: Vec::new(),
            bridge: true,
            marked: span.marked.clone(),
        };
        // The bridge's locals for the stack at its exits, as deep as the deepest.
        let mut exit_nulls = nulls;
        let deepest = exits.iter().map(|e| e.depth).max().unwrap_or(span.kept);
        exit_nulls.extend((span.kept..deepest).map(|slot| dead.contains(&slot)));
        let bridge = codegen::Bridge {
            step,
            next: None,
            next_nulls: &exit_nulls,
            dead,
            blocks_after: blocks.len(),
            exits: &exits,
        };
        self.resume_call(key, Some(bridge), point, point.stack.len())
    }

    /// The resume function (or `bridge`) for `key`, made once per place and stack layout;
    /// the first `kept` stack slots it receives are those of the break at `point`.
    pub fn resume_call(
        &self,
        key: ResumeKey,
        bridge: Option<codegen::Bridge<'_, 'py>>,
        point: &BreakPoint,
        kept: usize,
    ) -> PyResult<codegen::ResumeCall<'py>> {
        let (py, info, cache) = (self.py, self.info, self.cache);
        let has_closure = !info.vars.freevars.is_empty() || !info.vars.cellvars.is_empty();
        let known = cache
            .resumes
            .lock()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, r)| r.bind(py).clone());
        // The weak reference's target, while a generated code still holds it.
        let known = match known {
            Some(weak) => Some(weak.call0()?).filter(|target| !target.is_none()),
            None => None,
        };
        let target = match known {
            Some(target) => target,
            None => {
                let resume_code =
                    codegen::resume_code(self.table, self.code, &info.vars, &info.instrs, &key, bridge)?;
                let handed = self.handed_names(point, &key, kept);
                let resume_cache = self.caches.get(&resume_code)?;
                *resume_cache.handed_names.lock() = handed;
                resume_cache.share_region_breaks(cache);
                if key.bridge {
                    // Its first step is the break: translating it would break there again.
                    self.caches.never_translate(&resume_code)?;
                }
                let target = if has_closure {
                    resume_code
                } else {
                    held(py)?
                        .function_type
                        .bind(py)
                        .call1((resume_code, self.frame_globals()?))?
                };
                let weak = held(py)?.weak_ref_type.bind(py).call1((&target,))?;
                let mut resumes = cache.resumes.lock();
                resumes.retain(|(k, _)| *k != key);
                resumes.push((key, StrongRef::from_owned(weak)));
                target
            }
        };
        Ok(codegen::ResumeCall { target, has_closure })
    }

    /// What the values handed to the resume function for `key` were in the user's frame,
    /// in the order its box holds them (`codegen::resume_code`): each stack slot by what
    /// it holds (`stack_value_name`), the first `kept` being the break's own at `point`, a
    /// branch's condition as the truth of the tensor it tested, any other by its place;
    /// each variable by its name.
    fn handed_names(&self, point: &BreakPoint, key: &ResumeKey, kept: usize) -> Vec<String> {
        let vars = self.info.vars.all();
        let line = self
            .info
            .instrs
            .get(key.pc)
            .map_or(point.instr.location.line, |i| i.location.line);
        // A branch on a tensor's value resumes at the branch with the tensor's truth, which
        // the generated code computed (3.13+ run `TO_BOOL` for it before the branch).
        let branches = matches!(self.vm.at_break(&point.instr), Some(Step::BranchOnTruth));
        let truth_taken = (branches && key.pc == point.pc)
            || (self.vm.leaves_truth(&point.instr) && key.pc == point.pc + 1);
        let condition = (!key.bridge && truth_taken)
            .then(|| key.nulls.len().checked_sub(1))
            .flatten();
        let mut names: Vec<String> = (0..key.nulls.len())
            .filter(|slot| !key.nulls[*slot])
            .map(|slot| {
                let value = point.stack.get(slot).filter(|_| slot < kept);
                match value.and_then(|vid| self.stack_value_name(point, *vid)) {
                    Some(name) => name,
                    None if Some(slot) == condition => {
                        let tested = point
                            .stack
                            .last()
                            .and_then(|vid| self.stack_value_name(point, *vid));
                        format!(
                            "bool({})",
                            tested.unwrap_or_else(|| format!("<tensor at line {line}>"))
                        )
                    }
                    None => format!("<stack {slot} at line {line}>"),
                }
            })
            .collect();
        names.extend(key.live.iter().map(|var| vars[*var].to_string()));
        names
    }

    /// A value on the stack at `point` as the user wrote it, where that is known: the
    /// variable holding it there, else where it came from into the frame (its source).
    fn stack_value_name(&self, point: &BreakPoint, vid: Vid) -> Option<String> {
        let (py, info, vm) = (self.py, self.info, self.vm);
        let vars = info.vars.all();
        let first_free = vars.len() - info.vars.freevars.len();
        let variable = point.locals[..first_free]
            .iter()
            .position(|v| *v == vid)
            .map(|var| vars[var].to_string())
            .filter(|name| !is_resume_local(name));
        if variable.is_some() {
            return variable;
        }
        let source = match &vm.values[vid] {
            Val::Obj { source, .. } => *source,
            Val::Tensor { sym, .. } | Val::Scalar { sym, .. } => vm.graph.inputs.get(*sym).copied(),
            _ => None,
        }?;
        let handed = self.cache.handed_names.lock().clone();
        Some(
            vm.sources
                .describe(py, source, &info.vars.varnames, &info.vars.freevars, &handed),
        )
    }
}
