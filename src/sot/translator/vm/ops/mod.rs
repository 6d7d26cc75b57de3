//! The opcode table: one entry per canonical opcode, in its family's file, with its handler
//! beside what the generated code does with it where the graph breaks there. `Vm::step`
//! looks an instruction's entry up; an opcode without a handler falls back, naming it.

mod attrs;
mod build;
mod calls;
mod control;
mod exceptions;
mod matching;
mod names;
mod operators;
mod spec;
mod stack;

use std::sync::LazyLock;

use framehook_bytecode::canonical::ALL_OPS;

use crate::sot::translator::model::step::Step;

use self::spec::{AtBreak, OpSpec, Run};
use super::*;

/// Every family's entries.
const FAMILIES: [&[OpSpec]; 9] = [
    stack::OPS,
    names::OPS,
    attrs::OPS,
    operators::OPS,
    build::OPS,
    control::OPS,
    calls::OPS,
    exceptions::OPS,
    matching::OPS,
];

/// Opcodes no family models (async code, class bodies and module-level names, and
/// interpreter internals): the frame falls back, naming the opcode.
const NOT_MODELLED: &[Op] = &[
    Op::LoadFromDictOrDeref,
    Op::LoadFromDictOrGlobals,
    Op::StoreName,
    Op::DeleteName,
    Op::LoadLocals,
    Op::GetAiter,
    Op::GetAnext,
    Op::GetAwaitable,
    Op::EndAsyncFor,
    Op::CleanupThrow,
    Op::SetupAsyncWith,
    Op::BeforeAsyncWith,
    Op::SetupAnnotations,
    Op::PrintExpr,
    Op::ExitInitCheck,
    Op::AsyncGenWrap,
];

/// The entries indexed by opcode (`Op` is fieldless, so `op as usize` indexes it).
static TABLE: LazyLock<Vec<Option<OpSpec>>> = LazyLock::new(|| {
    let mut table = vec![None; ALL_OPS.len()];
    for spec in FAMILIES.iter().flat_map(|family| family.iter()) {
        table[spec.op as usize] = Some(*spec);
    }
    for op in NOT_MODELLED {
        table[*op as usize] = Some(OpSpec {
            op: *op,
            run: Run::NotModelled,
            at_break: AtBreak::Breaks,
        });
    }
    table
});

impl<'py> Vm<'py, '_> {
    /// Runs one instruction; `Some(value)` when the frame returns.
    pub(super) fn step(&mut self, frame: &mut Frame<'py>) -> Res<Option<Vid>> {
        let Some(instr) = frame.instrs.get(frame.pc).cloned() else {
            return unsupported("ran past the end of the code");
        };
        self.steps += 1;
        self.step_budget()?;
        if instr.location.line > 0 {
            self.location = (instr.location.line, frame.filename.clone());
            if self.depth == 0 {
                self.top_location = self.location.clone();
            }
        }
        match &mut self.step_loops {
            Some((loops, pc)) if std::sync::Arc::ptr_eq(loops, &frame.in_loop) => *pc = frame.pc,
            other => *other = Some((std::sync::Arc::clone(&frame.in_loop), frame.pc)),
        }
        frame.started = frame.pc;
        frame.pc += 1;
        match TABLE[instr.op as usize].map(|spec| spec.run) {
            Some(Run::Handler(run)) => run(self, frame, &instr),
            Some(Run::Unsupported(reason)) => unsupported(reason),
            Some(Run::NotModelled) | None => unsupported(format!("opcode {}", instr.op.name())),
        }
    }

    /// Whether `instr`, run by generated code at a break, leaves the truth of the value it
    /// took (`TO_BOOL`).
    pub fn leaves_truth(&self, instr: &Instruction) -> bool {
        TABLE[instr.op as usize].is_some_and(|spec| matches!(spec.at_break, AtBreak::NativeTruth))
    }

    /// What the generated code does with `instr` where the graph breaks at it: None where
    /// it cannot run it.
    pub fn at_break(&self, instr: &Instruction) -> Option<Step> {
        Some(match TABLE[instr.op as usize]?.at_break {
            AtBreak::Breaks => return None,
            AtBreak::Native(consumed, produced) => Step::RunHere { consumed, produced },
            AtBreak::NativeTruth => Step::RunHere {
                consumed: 1,
                produced: 1,
            },
            AtBreak::NativeBy(effect) => {
                let (consumed, produced) = effect(self, instr)?;
                Step::RunHere { consumed, produced }
            }
            AtBreak::BranchOnTruth => Step::BranchOnTruth,
            AtBreak::BoundAttribute => Step::BoundAttribute {
                null_first: self.table.call_layout != CallLayout::CallableFirst,
            },
            AtBreak::PlainIterator => match (instr.arg, self.iterator_slots()) {
                (Arg::None | Arg::Int(0), 1) => Step::RunHere {
                    consumed: 1,
                    produced: 1,
                },
                (Arg::None | Arg::Int(0), 2) => Step::IteratorAndNull,
                _ => return None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use framehook_bytecode::Table;

    use super::*;

    #[test]
    fn every_opcode_has_one_entry_or_is_listed_as_not_modelled() {
        let mut entries = vec![0; ALL_OPS.len()];
        for op in FAMILIES
            .iter()
            .flat_map(|family| family.iter().map(|spec| spec.op))
            .chain(NOT_MODELLED.iter().copied())
        {
            entries[op as usize] += 1;
        }
        let wrong: Vec<String> = ALL_OPS
            .iter()
            .filter(|op| entries[**op as usize] != 1)
            .map(|op| format!("{} ({} entries)", op.name(), entries[*op as usize]))
            .collect();
        assert!(wrong.is_empty(), "opcodes without exactly one entry: {wrong:?}");
    }

    #[test]
    fn every_opcode_of_every_version_table_is_handled_or_listed() {
        for (major, minor) in Table::versions() {
            let table = Table::for_version(major, minor).expect("a checked-in table");
            let missing: Vec<&str> = (0..=255u8)
                .filter_map(|number| table.op(number).map(|info| info.name.as_str()))
                .filter_map(Op::from_name)
                .filter(|op| TABLE[*op as usize].is_none())
                .map(Op::name)
                .collect();
            assert!(
                missing.is_empty(),
                "{major}.{minor}: opcodes without an entry: {missing:?}"
            );
        }
    }
}
