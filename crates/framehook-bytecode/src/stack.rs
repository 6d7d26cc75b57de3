//! `co_stacksize`: the deepest stack over every path from the entry, following fall-through,
//! jumps and exception-handler edges, as CPython's `calculate_stackdepth` does.

use crate::error::{Error, Result};
use crate::raw::Instr;
use crate::table::{OpInfo, Table};

/// Depth never reached by real code; a path that grows past it loops with a growing stack.
const DEPTH_LIMIT: i64 = 1 << 20;

pub fn max_depth(
    table: &Table,
    instrs: &[Instr],
    infos: &[&OpInfo],
    args: &[u32],
    starts: &[usize],
) -> Result<u32> {
    walk(table, instrs, infos, args, starts).map(|(max, _)| max)
}

/// Per instruction: the stack's depth when it starts (None where no path reaches it).
pub fn entry_depths(
    table: &Table,
    instrs: &[Instr],
    infos: &[&OpInfo],
    args: &[u32],
    starts: &[usize],
) -> Result<Vec<Option<u32>>> {
    let (_, depths) = walk(table, instrs, infos, args, starts)?;
    Ok(depths.into_iter().map(|d| u32::try_from(d).ok()).collect())
}

/// The deepest stack, and each instruction's depth on entry (-1: unreached).
fn walk(
    table: &Table,
    instrs: &[Instr],
    infos: &[&OpInfo],
    args: &[u32],
    starts: &[usize],
) -> Result<(u32, Vec<i64>)> {
    let mut entry_depth: Vec<i64> = vec![-1; instrs.len()];
    let mut work: Vec<usize> = Vec::new();
    let mut max = 0i64;
    let return_generator = table.number("RETURN_GENERATOR");
    let reach = |work: &mut Vec<usize>, entry_depth: &mut [i64], index: usize, depth: i64, from: usize| {
        if depth > DEPTH_LIMIT {
            return Err(Error::BadStack {
                offset: 2 * starts[from],
                why: "grows without bound".into(),
            });
        }
        if entry_depth[index] < depth {
            entry_depth[index] = depth;
            work.push(index);
        }
        Ok(())
    };
    if !instrs.is_empty() {
        reach(&mut work, &mut entry_depth, 0, initial_depth(table, instrs), 0)?;
    }
    while let Some(first) = work.pop() {
        let mut depth = entry_depth[first];
        let mut index = first;
        loop {
            let (instr, info) = (&instrs[index], infos[index]);
            let underflow = |depth: i64| {
                (depth < 0).then(|| Error::BadStack {
                    offset: 2 * starts[index],
                    why: "underflows".into(),
                })
            };
            if let Some(handler) = instr.handler {
                let handler_depth = i64::from(handler.depth) + i64::from(handler.lasti) + 1;
                max = max.max(handler_depth);
                reach(&mut work, &mut entry_depth, handler.target, handler_depth, index)?;
            }
            let next_depth = depth + effect(return_generator, instr, info, args[index]);
            if let Some(error) = underflow(next_depth) {
                return Err(error);
            }
            max = max.max(next_depth);
            if let Some(target) = instr.target {
                let target_depth = depth + info.stack_effect(args[index], true).unwrap_or(0);
                if let Some(error) = underflow(target_depth) {
                    return Err(error);
                }
                max = max.max(target_depth);
                reach(&mut work, &mut entry_depth, target, target_depth, index)?;
            }
            depth = next_depth;
            index += 1;
            if info.terminator {
                break;
            }
            if index >= instrs.len() {
                return Err(Error::BadStack {
                    offset: 2 * starts[index],
                    why: "runs past the last instruction".into(),
                });
            }
            // Continue along the fall-through only while it brings something new.
            if entry_depth[index] >= depth {
                break;
            }
            entry_depth[index] = depth;
        }
    }
    let max = u32::try_from(max).map_err(|_| Error::BadStack {
        offset: 0,
        why: "too deep".into(),
    })?;
    Ok((max, entry_depth))
}

/// The table's effect, except for `RETURN_GENERATOR` (the version's number for it, if it
/// has one): the generator resumes after it with the first sent value pushed (3.11 and
/// 3.12 say 0, as their compiler adds that prefix after computing the depth).
fn effect(return_generator: Option<u8>, instr: &Instr, info: &OpInfo, arg: u32) -> i64 {
    let effect = info.stack_effect(arg, false).unwrap_or(0);
    if return_generator == Some(instr.opcode) {
        effect.max(1)
    } else {
        effect
    }
}

/// 3.10's generators start with the sent value on the stack, which `GEN_START` pops.
fn initial_depth(table: &Table, instrs: &[Instr]) -> i64 {
    i64::from(table.number("GEN_START") == Some(instrs[0].opcode))
}
