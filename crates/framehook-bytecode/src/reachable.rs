//! Canonical code without the instructions no path from its entry reaches: a resume
//! function copies its whole original and jumps into the copy, so what comes before the
//! jump's target (and is not jumped back to) would be lowered, encoded and decoded again
//! for nothing.

use crate::canonical::{Arg, Instruction};
use crate::liveness::successors;

/// `instrs` with every instruction unreachable from the first removed, jump targets and
/// handlers renumbered. Control flow is `liveness::successors`'s: fall-through, jump (or
/// `SETUP_*` handler) targets, exception-table handlers.
pub fn without_unreachable(instrs: Vec<Instruction>) -> Vec<Instruction> {
    let mut reached = vec![false; instrs.len()];
    let mut work = Vec::new();
    if !instrs.is_empty() {
        reached[0] = true;
        work.push(0);
    }
    while let Some(index) = work.pop() {
        for next in successors(index, &instrs[index]) {
            if next < instrs.len() && !reached[next] {
                reached[next] = true;
                work.push(next);
            }
        }
    }
    if reached.iter().all(|r| *r) {
        return instrs;
    }
    // Per instruction, its index once the unreached ones before it are gone.
    let mut renumbered = Vec::with_capacity(instrs.len());
    let mut kept = 0;
    for r in &reached {
        renumbered.push(kept);
        kept += usize::from(*r);
    }
    instrs
        .into_iter()
        .zip(reached)
        .filter_map(|(mut instruction, reached)| {
            if !reached {
                return None;
            }
            if let Arg::Target(target) = &mut instruction.arg {
                *target = renumbered[*target];
            }
            if let Some(handler) = &mut instruction.handler {
                *handler = handler.at(renumbered[handler.target()]);
            }
            Some(instruction)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::{Handler, Op};

    #[test]
    fn what_no_path_reaches_goes_and_targets_follow() {
        // 0: jump 3; 1-2: the original's start (unreached); 3: x under a handler at 5;
        // 4: return; 5: the handler (reached through 3's handler only); 6: reraise
        let mut guarded = Instruction::bare(Op::LoadFast, Arg::Var(0));
        guarded.handler = Some(Handler::new(5, 0, false));
        let code = vec![
            Instruction::bare(Op::Jump, Arg::Target(3)),
            Instruction::bare(Op::LoadConst, Arg::None),
            Instruction::bare(Op::PopJumpIfTrue, Arg::Target(5)),
            guarded,
            Instruction::bare(Op::ReturnValue, Arg::None),
            Instruction::bare(Op::PushExcInfo, Arg::None),
            Instruction::bare(Op::Reraise, Arg::Int(0)),
        ];
        let pruned = without_unreachable(code);
        let ops: Vec<Op> = pruned.iter().map(|i| i.op).collect();
        assert_eq!(
            ops,
            [
                Op::Jump,
                Op::LoadFast,
                Op::ReturnValue,
                Op::PushExcInfo,
                Op::Reraise
            ]
        );
        assert_eq!(pruned[0].arg, Arg::Target(1));
        assert_eq!(pruned[1].handler.map(|h| h.target()), Some(3));
    }

    #[test]
    fn a_jump_back_keeps_what_it_reaches() {
        // 0: jump 2; 1: loop body (reached from 3's jump back); 2: for_iter -> 4; 3: jump 1
        let code = vec![
            Instruction::bare(Op::Jump, Arg::Target(2)),
            Instruction::bare(Op::StoreFast, Arg::Var(0)),
            Instruction::bare(Op::ForIter, Arg::Target(4)),
            Instruction::bare(Op::Jump, Arg::Target(1)),
            Instruction::bare(Op::ReturnValue, Arg::None),
        ];
        assert_eq!(without_unreachable(code.clone()), code);
    }
}
