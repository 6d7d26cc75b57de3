//! Which local variables a canonical instruction sequence may still read: a backward
//! dataflow over its control flow, exception edges included. A variable is live before an
//! instruction when some path from it reads the variable before storing it again.
//!
//! The answer errs towards live: every instruction may fall through unless it always
//! leaves, and in ≤ 3.10 code (handlers set up by `SETUP_*` blocks rather than an
//! exception table) every block's handler counts as reachable from every instruction.

use crate::canonical::{Arg, Instruction, Op};

/// The live variables before each instruction, over canonical variable indices below
/// `locals` (those above, cells and free variables, are never fast locals).
pub struct Liveness {
    words: usize,
    live: Vec<u64>,
}

impl Liveness {
    pub fn new(instrs: &[Instruction], locals: usize) -> Liveness {
        let words = locals.div_ceil(64);
        let mut live = vec![0u64; words * (instrs.len() + 1)];
        let block_handlers: Vec<usize> = instrs
            .iter()
            .filter(|i| matches!(i.op, Op::SetupFinally | Op::SetupWith | Op::SetupAsyncWith))
            .filter_map(|i| match i.arg {
                Arg::Target(target) => Some(target),
                _ => None,
            })
            .collect();
        let local = |arg: &Arg| match arg {
            Arg::Var(v) if (*v as usize) < locals => Some(*v as usize),
            _ => None,
        };
        // Passes go from the last instruction to the first, so an instruction reads what
        // this pass found for the successors after it and what the last pass found for
        // those at or before it (a loop's head, a block handler): only a change there
        // calls for another pass. Code without a backward edge takes one pass.
        let mut read_back = vec![false; instrs.len() + 1];
        for (pc, instr) in instrs.iter().enumerate() {
            for to in successors(pc, instr).filter(|to| *to <= pc) {
                read_back[to] = true;
            }
        }
        for target in &block_handlers {
            read_back[(*target).min(instrs.len())] = true;
        }
        // One buffer for what each instruction's successors read (an allocation per
        // instruction and pass was a third of the time it took).
        let mut out = vec![0u64; words];
        let mut changed = true;
        while changed {
            changed = false;
            for (pc, instr) in instrs.iter().enumerate().rev() {
                out.fill(0);
                let mut join = |from: usize| {
                    let range = from.min(instrs.len()) * words..(from.min(instrs.len()) + 1) * words;
                    for (word, bits) in out.iter_mut().zip(&live[range]) {
                        *word |= bits;
                    }
                };
                for to in successors(pc, instr) {
                    join(to);
                }
                for target in &block_handlers {
                    join(*target);
                }
                if let Some(var) = local(&instr.arg) {
                    let (word, bit) = (var / 64, 1u64 << (var % 64));
                    match instr.op {
                        Op::StoreFast => out[word] &= !bit,
                        // Deleting needs the variable bound; saving it for a comprehension
                        // (restored after) reads it.
                        Op::LoadFast | Op::LoadFastCheck | Op::LoadFastAndClear | Op::DeleteFast => {
                            out[word] |= bit
                        }
                        _ => {}
                    }
                }
                let before = &mut live[pc * words..(pc + 1) * words];
                if before != out.as_slice() {
                    before.copy_from_slice(&out);
                    changed |= read_back[pc];
                }
            }
        }
        Liveness { words, live }
    }

    /// Whether `var` may be read from instruction `pc` on before it is stored again.
    pub fn is_live(&self, pc: usize, var: usize) -> bool {
        let (word, bit) = (var / 64, 1u64 << (var % 64));
        word < self.words
            && self
                .live
                .get(pc * self.words + word)
                .is_some_and(|w| w & bit != 0)
    }
}

/// Where control may go after the instruction at `index`: the next one (unless it always
/// leaves), its jump (or `SETUP_*` handler) target, its exception-table handler.
pub(crate) fn successors(index: usize, instr: &Instruction) -> Successors {
    let mut found = Successors {
        to: [0; 3],
        count: 0,
        next: 0,
    };
    let mut add = |to: usize| {
        found.to[usize::from(found.count)] = to;
        found.count += 1;
    };
    if falls_through(instr.op) {
        add(index + 1);
    }
    if let Arg::Target(target) = instr.arg {
        add(target);
    }
    if let Some(handler) = instr.handler {
        add(handler.target());
    }
    found
}

/// [`successors`]' answer: at most three, held in place (the control-flow passes ask for
/// every instruction's, most in loops over the whole code).
pub(crate) struct Successors {
    to: [usize; 3],
    count: u8,
    next: u8,
}

impl Iterator for Successors {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        (self.next < self.count).then(|| {
            self.next += 1;
            self.to[usize::from(self.next - 1)]
        })
    }
}

/// Whether the next instruction may run after this one.
pub(crate) fn falls_through(op: Op) -> bool {
    !matches!(
        op,
        Op::Jump | Op::JumpNoInterrupt | Op::ReturnValue | Op::RaiseVarargs | Op::Reraise
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_stored_again_before_any_read_is_dead() {
        // 0: x = ...; 1: print(); 2: x = None; 3: return y
        let code = [
            Instruction::bare(Op::StoreFast, Arg::Var(0)),
            Instruction::bare(Op::Nop, Arg::None),
            Instruction::bare(Op::LoadConst, Arg::None),
            Instruction::bare(Op::StoreFast, Arg::Var(0)),
            Instruction::bare(Op::LoadFast, Arg::Var(1)),
            Instruction::bare(Op::ReturnValue, Arg::None),
        ];
        let live = Liveness::new(&code, 2);
        assert!(!live.is_live(1, 0) && live.is_live(1, 1));
        assert!(!live.is_live(5, 1));
    }

    #[test]
    fn reads_on_a_jump_target_or_in_a_handler_keep_a_variable_live() {
        let raising = Instruction::raising_to(5, 0);
        let code = [
            Instruction::bare(Op::PopJumpIfTrue, Arg::Target(3)),
            raising,
            Instruction::bare(Op::ReturnValue, Arg::None),
            Instruction::bare(Op::LoadFast, Arg::Var(0)),
            Instruction::bare(Op::ReturnValue, Arg::None),
            Instruction::bare(Op::DeleteFast, Arg::Var(1)),
            Instruction::bare(Op::Reraise, Arg::None),
        ];
        let live = Liveness::new(&code, 2);
        assert!(live.is_live(0, 0) && live.is_live(0, 1));
        assert!(!live.is_live(1, 0) && live.is_live(1, 1));
    }

    /// The dataflow solved the plain way: every instruction again until none changes.
    fn live_by_every_pass(instrs: &[Instruction], locals: usize) -> Vec<Vec<bool>> {
        let mut live = vec![vec![false; locals]; instrs.len() + 1];
        let mut changed = true;
        while changed {
            changed = false;
            for (pc, instr) in instrs.iter().enumerate().rev() {
                let mut out = vec![false; locals];
                for to in successors(pc, instr) {
                    for (o, l) in out.iter_mut().zip(&live[to.min(instrs.len())]) {
                        *o |= l;
                    }
                }
                if let Arg::Var(v) = instr.arg {
                    match instr.op {
                        Op::StoreFast => out[v as usize] = false,
                        Op::LoadFast => out[v as usize] = true,
                        _ => {}
                    }
                }
                if live[pc] != out {
                    live[pc] = out;
                    changed = true;
                }
            }
        }
        live
    }

    #[test]
    fn loops_nested_every_way_give_the_plain_fixpoint() {
        // Random code of loads, stores, jumps both ways and instructions whose handler
        // lies either way (a fixed xorshift stream): one pass per change at a loop's head
        // must find what passes until nothing changes find.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        for _ in 0..500 {
            let count = 2 + next(30) as usize;
            let locals = 1 + next(4) as usize;
            let code: Vec<Instruction> = (0..count)
                .map(|_| {
                    let var = Arg::Var(next(locals as u64) as u32);
                    let target = Arg::Target(next(count as u64) as usize);
                    match next(8) {
                        0 | 1 => Instruction::bare(Op::LoadFast, var),
                        2 | 3 => Instruction::bare(Op::StoreFast, var),
                        4 => Instruction::bare(Op::PopJumpIfTrue, target),
                        5 => Instruction::bare(Op::Jump, target),
                        6 => Instruction::raising_to(next(count as u64) as usize, 0),
                        _ => Instruction::bare(Op::ReturnValue, Arg::None),
                    }
                })
                .collect();
            let live = Liveness::new(&code, locals);
            let expected = live_by_every_pass(&code, locals);
            for (pc, vars) in expected.iter().enumerate().take(count) {
                for (var, want) in vars.iter().enumerate() {
                    assert_eq!(live.is_live(pc, var), *want, "pc {pc} var {var} in {code:?}");
                }
            }
        }
    }

    #[test]
    fn a_block_handler_is_reachable_from_everywhere() {
        // ≤ 3.10: try: x = ...; call() / except: return x
        let code = [
            Instruction::bare(Op::SetupFinally, Arg::Target(5)),
            Instruction::bare(Op::StoreFast, Arg::Var(0)),
            Instruction::bare(Op::Nop, Arg::None),
            Instruction::bare(Op::PopBlock, Arg::None),
            Instruction::bare(Op::ReturnValue, Arg::None),
            Instruction::bare(Op::LoadFast, Arg::Var(0)),
            Instruction::bare(Op::ReturnValue, Arg::None),
        ];
        let live = Liveness::new(&code, 1);
        assert!(live.is_live(2, 0) && live.is_live(0, 0));
    }
}
