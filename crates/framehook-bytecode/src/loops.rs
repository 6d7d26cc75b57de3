//! Loops of a canonical instruction sequence: the instructions a backward jump closes, and
//! where control goes on once it leaves them.

use crate::canonical::{Arg, Instruction, Op};
use crate::liveness::{falls_through, successors};
use crate::table::Table;

/// A loop: its head (where its back edges return) and, per instruction, whether it is in
/// the loop's body (it can get back to the head without passing it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loop {
    pub head: usize,
    pub body: Vec<bool>,
}

impl Loop {
    pub fn contains(&self, index: usize) -> bool {
        self.body.get(index).copied().unwrap_or(false)
    }
}

/// Every loop, with the back edge that closes it: a jump to an instruction at or before
/// it that control gets back to the jump from (3.11+ also jump back from a handler to the
/// code after its `try`, which is no loop). Its head is the jump's target, its body what
/// lies on a path from the head to the jump (exception edges included: a handler that
/// jumps back is part of the loop, though 3.11+ put it past the code after the loop).
///
/// Such a path's instructions get back to the head (through the jump) and the head gets
/// to them: they are in the head's strongly connected component, which holds the jump
/// exactly where control gets back to it. One pass finds the components (where a
/// forward search from each back edge's head grew with loops times instructions); each
/// body is then the component's instructions that reach the jump before the head.
pub fn loops(instrs: &[Instruction]) -> Vec<(usize, Loop)> {
    // Made at the first backward jump: most code has none.
    let mut made: Option<(Predecessors, Vec<usize>)> = None;
    instrs
        .iter()
        .enumerate()
        .filter_map(|(jump, instr)| match instr.arg {
            Arg::Target(head) if head <= jump && is_jump(instr.op) => {
                let (predecessors, component) =
                    made.get_or_insert_with(|| (predecessors(instrs), components(instrs)));
                if component[jump] != component[head] {
                    return None;
                }
                let mut body = vec![false; instrs.len()];
                body[head] = true;
                let mut work = vec![jump];
                while let Some(index) = work.pop() {
                    if component[index] == component[head] && !std::mem::replace(&mut body[index], true) {
                        work.extend(&predecessors[index]);
                    }
                }
                Some((jump, Loop { head, body }))
            }
            _ => None,
        })
        .collect()
}

/// Per instruction: its strongly connected component's number, following fall-through,
/// jumps and handlers (Tarjan's algorithm, without recursion).
fn components(instrs: &[Instruction]) -> Vec<usize> {
    const UNSEEN: usize = usize::MAX;
    let count = instrs.len();
    // At most three: the next instruction, a jump's target, a handler.
    let successors_of = |index: usize| -> ([usize; 3], usize) {
        let mut found = ([0; 3], 0);
        for to in successors(index, &instrs[index]).filter(|to| *to < count) {
            found.0[found.1] = to;
            found.1 += 1;
        }
        found
    };
    let mut order = vec![UNSEEN; count];
    let mut low = vec![0; count];
    let mut component = vec![UNSEEN; count];
    let mut stack = Vec::new();
    let mut on_stack = vec![false; count];
    let mut next_order = 0;
    let mut next_component = 0;
    // Per instruction being visited: its successors, and how many were followed.
    let mut visiting: Vec<(usize, ([usize; 3], usize), usize)> = Vec::new();
    for root in 0..count {
        if order[root] != UNSEEN {
            continue;
        }
        order[root] = next_order;
        low[root] = next_order;
        next_order += 1;
        stack.push(root);
        on_stack[root] = true;
        visiting.push((root, successors_of(root), 0));
        while let Some((index, successors, followed)) = visiting.last_mut() {
            let index = *index;
            if *followed < successors.1 {
                let to = successors.0[*followed];
                *followed += 1;
                if order[to] == UNSEEN {
                    order[to] = next_order;
                    low[to] = next_order;
                    next_order += 1;
                    stack.push(to);
                    on_stack[to] = true;
                    visiting.push((to, successors_of(to), 0));
                } else if on_stack[to] {
                    low[index] = low[index].min(order[to]);
                }
                continue;
            }
            visiting.pop();
            if let Some((parent, _, _)) = visiting.last() {
                low[*parent] = low[*parent].min(low[index]);
            }
            if low[index] == order[index] {
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component[member] = next_component;
                    if member == index {
                        break;
                    }
                }
                next_component += 1;
            }
        }
    }
    component
}

/// A `while` loop's first test of its condition, which 3.10+ put before the loop (it tests
/// again at the bottom): the instructions of the line that ends, just before the head, in a
/// conditional jump past the loop's back edge `jump`. Empty where there is none.
pub fn first_test(instrs: &[Instruction], jump: usize, a_loop: &Loop) -> std::ops::Range<usize> {
    let Some(guard) = a_loop.head.checked_sub(1) else {
        return 0..0;
    };
    let test = &instrs[guard];
    let exits_past_loop = matches!(test.arg, Arg::Target(exit) if exit > jump);
    let conditional = matches!(
        test.op,
        Op::PopJumpIfTrue | Op::PopJumpIfFalse | Op::PopJumpIfNone | Op::PopJumpIfNotNone
    );
    if !(conditional && exits_past_loop && test.location.line > 0) {
        return 0..0;
    }
    let mut start = guard;
    while start > 0 && instrs[start - 1].location.line == test.location.line {
        start -= 1;
    }
    start..a_loop.head
}

/// The outermost loop around `pc`, of `all` the loops of `instrs` (as [`loops`] finds
/// them): of the loops whose bodies hold it, the widest, with every loop of the same head;
/// or, for a `while` loop's first test, that loop with the test. None outside every loop.
pub fn outermost_loop(instrs: &[Instruction], all: &[(usize, Loop)], pc: usize) -> Option<Loop> {
    let loops = || all.iter().map(|(_, l)| l);
    let Some(widest) = loops()
        .filter(|l| l.contains(pc))
        .max_by_key(|l| l.body.iter().filter(|b| **b).count())
    else {
        return all.iter().find_map(|(jump, a_loop)| {
            let test = first_test(instrs, *jump, a_loop);
            test.contains(&pc).then(|| {
                let mut a_loop = a_loop.clone();
                a_loop.body[test].iter_mut().for_each(|b| *b = true);
                a_loop
            })
        });
    };
    let mut merged = Loop {
        head: widest.head,
        body: vec![false; instrs.len()],
    };
    for same_head in loops().filter(|l| l.head == widest.head) {
        for (into, from) in merged.body.iter_mut().zip(&same_head.body) {
            *into |= *from;
        }
    }
    Some(merged)
}

/// Per instruction: those control may come from (fall-through, jumps, handlers).
struct Predecessors {
    /// Where each instruction's predecessors start in `from` (and where the last's end).
    starts: Vec<usize>,
    from: Vec<usize>,
}

impl std::ops::Index<usize> for Predecessors {
    type Output = [usize];

    fn index(&self, index: usize) -> &[usize] {
        &self.from[self.starts[index]..self.starts[index + 1]]
    }
}

/// Each instruction's predecessors, in one allocation (not a vector per instruction).
fn predecessors(instrs: &[Instruction]) -> Predecessors {
    let count = instrs.len();
    let mut starts = vec![0; count + 1];
    for (index, instr) in instrs.iter().enumerate() {
        for to in successors(index, instr).filter(|to| *to < count) {
            starts[to + 1] += 1;
        }
    }
    for index in 0..count {
        starts[index + 1] += starts[index];
    }
    let mut filled = starts.clone();
    let mut from = vec![0; starts[count]];
    for (index, instr) in instrs.iter().enumerate() {
        for to in successors(index, instr).filter(|to| *to < count) {
            from[filled[to]] = index;
            filled[to] += 1;
        }
    }
    Predecessors { starts, from }
}

/// Where control goes on, in normal flow, once it leaves `a_loop`, sorted: the targets of
/// jumps out of it, the instruction after one of it that falls through out of it, and
/// for a `FOR_ITER` whose iterator runs out, the first instruction after the iterator is
/// popped (3.12+ jump to an `END_FOR` the interpreter skips, 3.13 also a `POP_TOP`, 3.14+
/// runs a `POP_ITER`, of both the iterator's slots from 3.15: the table's stack effects and
/// iterator slots say where that is). None where an exit
/// cannot be told (a `FOR_ITER` whose end runs into a jump).
pub fn loop_exits(table: &Table, instrs: &[Instruction], a_loop: &Loop) -> Option<Vec<usize>> {
    let mut exits = Vec::new();
    for (index, instr) in instrs
        .iter()
        .enumerate()
        .filter(|(index, _)| a_loop.contains(*index))
    {
        if falls_through(instr.op) && !a_loop.contains(index + 1) {
            exits.push(index + 1);
        }
        let Arg::Target(target) = instr.arg else { continue };
        if a_loop.contains(target) {
            continue;
        }
        match instr.op {
            Op::ForIter => exits.push(iterator_popped(table, instrs, target)?),
            op if is_jump(op) => exits.push(target),
            // A handler's target: only an exception gets there.
            _ => {}
        }
    }
    exits.sort_unstable();
    exits.dedup();
    Some(exits)
}

/// Per instruction: whether control may get there from one of `starts` without passing
/// one of `stops`, following fall-through, jumps and handlers.
pub fn reachable(instrs: &[Instruction], starts: &[usize], stops: &[usize]) -> Vec<bool> {
    let mut reached = vec![false; instrs.len()];
    let mut work: Vec<usize> = starts.to_vec();
    while let Some(index) = work.pop() {
        if index >= instrs.len() || reached[index] || stops.contains(&index) {
            continue;
        }
        reached[index] = true;
        work.extend(successors(index, &instrs[index]));
    }
    reached
}

/// Whether some path from `start` (before `stops`) reads one of `tracked` (at most 64
/// variables) where it may be unbound: not stored since `start`, or deleted since, unless
/// it is among `bound` there. A read is a load or a `del` (it needs the variable bound);
/// a comprehension's save of its variable (3.12+) unbinds it until restored. Handlers are entered with what every instruction the
/// path reaches has in common where their edges are not per instruction (≤ 3.10's blocks,
/// `block_handlers`).
pub fn reads_unbound(
    instrs: &[Instruction],
    start: usize,
    block_handlers: &[usize],
    stops: &[usize],
    tracked: &[usize],
    bound: &[usize],
) -> bool {
    if tracked.len() > 64 {
        return true;
    }
    let bit = |var: u32| tracked.iter().position(|t| *t == var as usize).map(|i| 1u64 << i);
    let initially: u64 = bound.iter().filter_map(|v| bit(*v as u32)).fold(0, |a, b| a | b);
    let all_handlers: Vec<usize> = instrs
        .iter()
        .filter(|i| matches!(i.op, Op::SetupFinally | Op::SetupWith | Op::SetupAsyncWith))
        .filter_map(|i| match i.arg {
            Arg::Target(target) => Some(target),
            _ => None,
        })
        .chain(block_handlers.iter().copied())
        .collect();
    // What the block handlers are entered with: narrowed until every reached state has it.
    let mut at_handlers = initially;
    loop {
        // Per instruction: the variables bound on every path reaching it (None: unreached).
        let mut state: Vec<Option<u64>> = vec![None; instrs.len()];
        let mut work: Vec<(usize, u64)> = vec![(start, initially)];
        work.extend(all_handlers.iter().map(|h| (*h, at_handlers)));
        let mut read_unbound = false;
        while let Some((index, incoming)) = work.pop() {
            if index >= instrs.len() || stops.contains(&index) {
                continue;
            }
            let merged = state[index].map_or(incoming, |s| s & incoming);
            if state[index] == Some(merged) {
                continue;
            }
            state[index] = Some(merged);
            let instr = &instrs[index];
            let mut out = merged;
            if let Arg::Var(var) = instr.arg {
                if let Some(bit) = bit(var) {
                    match instr.op {
                        Op::StoreFast => out |= bit,
                        Op::LoadFast | Op::LoadFastCheck => read_unbound |= merged & bit == 0,
                        Op::DeleteFast => {
                            read_unbound |= merged & bit == 0;
                            out &= !bit;
                        }
                        Op::LoadFastAndClear => out &= !bit,
                        _ => {}
                    }
                }
            }
            if falls_through(instr.op) {
                work.push((index + 1, out));
            }
            if let Arg::Target(target) = instr.arg {
                let entering = if all_handlers.contains(&target) {
                    at_handlers
                } else {
                    out
                };
                work.push((target, entering));
            }
            if let Some(handler) = instr.handler {
                work.push((handler.target(), merged));
            }
        }
        if read_unbound {
            return true;
        }
        let common = state.iter().flatten().fold(at_handlers, |a, s| a & s);
        if common == at_handlers {
            return false;
        }
        at_handlers = common;
    }
}

/// Jumps in normal flow (not the handlers `SETUP_*` names).
fn is_jump(op: Op) -> bool {
    matches!(
        op,
        Op::Jump
            | Op::JumpNoInterrupt
            | Op::PopJumpIfTrue
            | Op::PopJumpIfFalse
            | Op::PopJumpIfNone
            | Op::PopJumpIfNotNone
            | Op::JumpIfTrueOrPop
            | Op::JumpIfFalseOrPop
            | Op::JumpIfNotExcMatch
            | Op::ForIter
    )
}

/// The first instruction from `target` on (where a `FOR_ITER` jumps once its iterator runs
/// out) at which the stack no longer holds the iterator.
fn iterator_popped(table: &Table, instrs: &[Instruction], target: usize) -> Option<usize> {
    let effect = |op: Op, jump: bool| -> Option<i64> {
        let info = table.op(table.number(op.name())?)?;
        info.stack_effect(0, jump)
    };
    // Relative to the stack below the iterator.
    let mut depth = i64::from(table.iterator_slots) + effect(Op::ForIter, true)?;
    let mut index = target;
    while depth > 0 {
        let instr = instrs.get(index)?;
        if matches!(instr.arg, Arg::Target(_)) || !falls_through(instr.op) {
            return None;
        }
        depth += effect(instr.op, false)?;
        index += 1;
    }
    (depth == 0).then_some(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `for x in it: if x: break` then `return`, the loop ending with `end`.
    fn for_loop(end: &[Op]) -> Vec<Instruction> {
        let exit = 6 + end.len();
        let mut code = vec![
            Instruction::bare(Op::GetIter, Arg::None),
            Instruction::bare(Op::ForIter, Arg::Target(6)),
            Instruction::bare(Op::StoreFast, Arg::Var(0)),
            Instruction::bare(Op::LoadFast, Arg::Var(0)),
            Instruction::bare(Op::PopJumpIfTrue, Arg::Target(exit + 10)),
            Instruction::bare(Op::Jump, Arg::Target(1)),
        ];
        code.extend(end.iter().map(|op| Instruction::bare(*op, Arg::None)));
        code.push(Instruction::bare(Op::LoadConst, Arg::None));
        code.push(Instruction::bare(Op::ReturnValue, Arg::None));
        code
    }

    #[test]
    fn the_outermost_loop_takes_in_the_loops_it_overlaps() {
        // 0 outer head, 1 inner head, 2 a `continue` of the outer loop, 3 back to 1, 4 to 0.
        let code = [
            Instruction::bare(Op::ForIter, Arg::Target(5)),
            Instruction::bare(Op::ForIter, Arg::Target(4)),
            Instruction::bare(Op::PopJumpIfTrue, Arg::Target(0)),
            Instruction::bare(Op::Jump, Arg::Target(1)),
            Instruction::bare(Op::Jump, Arg::Target(0)),
            Instruction::bare(Op::ReturnValue, Arg::None),
        ];
        let outer = outermost_loop(&code, &loops(&code), 3).unwrap();
        assert_eq!(outer.head, 0);
        assert_eq!(outer.body, [true, true, true, true, true, false]);
        assert_eq!(outermost_loop(&code, &loops(&code), 5), None);
    }

    #[test]
    fn each_back_edge_closes_what_reaches_it_from_the_head() {
        // A resume function's shape: 0 jumps into the loop's middle (3); 1 head, 2 a
        // `continue` back to 1, 3-4 the rest, 4 back to 1; 5 return.
        let code = [
            Instruction::bare(Op::Jump, Arg::Target(3)),
            Instruction::bare(Op::ForIter, Arg::Target(5)),
            Instruction::bare(Op::PopJumpIfTrue, Arg::Target(1)),
            Instruction::bare(Op::LoadFast, Arg::Var(0)),
            Instruction::bare(Op::Jump, Arg::Target(1)),
            Instruction::bare(Op::ReturnValue, Arg::None),
        ];
        let found = loops(&code);
        let bodies: Vec<(usize, usize, &[bool])> = found
            .iter()
            .map(|(jump, a_loop)| (*jump, a_loop.head, &a_loop.body[..]))
            .collect();
        // The jump in is no part of either (the head does not get to it); the `continue`
        // closes the head and itself, the last back edge everything from the head on.
        assert_eq!(
            bodies,
            [
                (2, 1, &[false, true, true, false, false, false][..]),
                (4, 1, &[false, true, true, true, true, false][..]),
            ]
        );
    }

    #[test]
    fn what_is_reachable_stops_at_the_exits() {
        let code = for_loop(&[Op::EndFor]);
        let reached = reachable(&code, &[3], &[7, 17]);
        assert_eq!(reached, [false, true, true, true, true, true, true, false, false]);
    }

    #[test]
    fn a_handler_jumping_back_to_the_code_after_its_try_closes_no_loop() {
        // 0 raising (handler 2), 1 return; 2 handler: jump back to 1.
        let raising = Instruction::raising_to(2, 0);
        let code = [
            raising,
            Instruction::bare(Op::ReturnValue, Arg::None),
            Instruction::bare(Op::Jump, Arg::Target(1)),
        ];
        assert_eq!(loops(&code), []);
        assert_eq!(outermost_loop(&code, &loops(&code), 0), None);
    }

    #[test]
    fn a_variable_read_before_the_loop_stores_it_is_read_unbound() {
        // for x in it: (y = x | print(y); y = x) — y read at 3 before its store at 4.
        let store_then_read = [
            Instruction::bare(Op::ForIter, Arg::Target(5)),
            Instruction::bare(Op::StoreFast, Arg::Var(0)),
            Instruction::bare(Op::LoadFast, Arg::Var(0)),
            Instruction::bare(Op::StoreFast, Arg::Var(1)),
            Instruction::bare(Op::Jump, Arg::Target(0)),
            Instruction::bare(Op::LoadFast, Arg::Var(1)),
            Instruction::bare(Op::ReturnValue, Arg::None),
        ];
        assert!(!reads_unbound(&store_then_read, 0, &[], &[5], &[1], &[]));
        let mut read_first = store_then_read.clone();
        read_first[2] = Instruction::bare(Op::LoadFast, Arg::Var(1));
        read_first[3] = Instruction::bare(Op::StoreFast, Arg::Var(1));
        assert!(reads_unbound(&read_first, 0, &[], &[5], &[1], &[]));
        assert!(!reads_unbound(&read_first, 0, &[], &[5], &[1], &[1]));
        // A `del` leaves it unbound for the next iteration's read.
        let deleted = [
            Instruction::bare(Op::ForIter, Arg::Target(4)),
            Instruction::bare(Op::LoadFast, Arg::Var(1)),
            Instruction::bare(Op::DeleteFast, Arg::Var(1)),
            Instruction::bare(Op::Jump, Arg::Target(0)),
            Instruction::bare(Op::ReturnValue, Arg::None),
        ];
        assert!(reads_unbound(&deleted, 0, &[], &[4], &[1], &[1]));
    }

    #[test]
    fn a_for_loop_exits_past_what_pops_its_iterator() {
        // Every version's loop end, as its compiler writes it: nothing (`FOR_ITER` pops the
        // iterator), or `END_FOR` and, where that leaves the iterator, what pops it.
        for (major, minor) in Table::versions() {
            let table = Table::for_version(major, minor).unwrap();
            let effect = |name: &str, jump: bool| {
                table
                    .op(table.number(name).unwrap())
                    .unwrap()
                    .stack_effect(0, jump)
                    .unwrap()
            };
            let mut end = Vec::new();
            let pushed = effect("FOR_ITER", true);
            if pushed > 0 {
                end.push(Op::EndFor);
                if i64::from(table.iterator_slots) + pushed + effect("END_FOR", false) > 0 {
                    end.push(if table.has("POP_ITER") {
                        Op::PopIter
                    } else {
                        Op::PopTop
                    });
                }
            }
            let code = for_loop(&end);
            let a_loop = outermost_loop(&code, &loops(&code), 3).unwrap();
            assert_eq!(a_loop.head, 1);
            let exit = 6 + end.len();
            assert_eq!(
                loop_exits(table, &code, &a_loop),
                Some(vec![exit, exit + 10]),
                "{major}.{minor}"
            );
        }
    }

    #[test]
    fn a_while_loops_first_test_goes_with_the_loop() {
        // 0-1 first test (line 1), jump past the loop; 2 body; 3-4 bottom test, back to 2.
        let at_line = |mut instr: Instruction, line: i32| {
            instr.location.line = line;
            instr
        };
        let code = [
            at_line(Instruction::bare(Op::LoadFast, Arg::Var(0)), 1),
            at_line(Instruction::bare(Op::PopJumpIfFalse, Arg::Target(5)), 1),
            at_line(Instruction::bare(Op::Nop, Arg::None), 2),
            at_line(Instruction::bare(Op::LoadFast, Arg::Var(0)), 1),
            at_line(Instruction::bare(Op::PopJumpIfTrue, Arg::Target(2)), 1),
            at_line(Instruction::bare(Op::ReturnValue, Arg::None), 3),
        ];
        let [(jump, body)] = &loops(&code)[..] else {
            panic!("one loop")
        };
        assert_eq!((*jump, body.head), (4, 2));
        assert_eq!(first_test(&code, *jump, body), 0..2);
        let with_test = outermost_loop(&code, &loops(&code), 1).unwrap();
        assert_eq!(with_test.body, [true, true, true, true, true, false]);
    }

    #[test]
    fn a_handler_past_the_code_after_the_loop_that_jumps_back_is_in_the_loop() {
        // 0 FOR_ITER (to 3), 1 raising (handler 5), 2 back; 3 END_FOR, 4 return; 5 back.
        let raising = Instruction::raising_to(5, 1);
        let code = [
            Instruction::bare(Op::ForIter, Arg::Target(3)),
            raising,
            Instruction::bare(Op::Jump, Arg::Target(0)),
            Instruction::bare(Op::EndFor, Arg::None),
            Instruction::bare(Op::ReturnValue, Arg::None),
            Instruction::bare(Op::Jump, Arg::Target(0)),
        ];
        let a_loop = outermost_loop(&code, &loops(&code), 1).unwrap();
        assert_eq!(a_loop.body, [true, true, true, false, false, true]);
    }
}
