//! Control flow: jumps, iteration, returns, generators (send, yield).

use super::spec::AtBreak::{BranchOnTruth, Breaks, PlainIterator};
use super::spec::OpSpec;
use crate::sot::translator::vm::*;

pub(super) const OPS: &[OpSpec] = &[
    OpSpec::run(Op::GetIter, get_iter, PlainIterator),
    OpSpec::run(Op::GetYieldFromIter, get_iter, Breaks),
    OpSpec::run(Op::ForIter, for_iter, Breaks),
    OpSpec::run(Op::EndFor, pop_iterator, Breaks),
    OpSpec::run(Op::PopIter, pop_iterator, Breaks),
    OpSpec::run(Op::Jump, jump, Breaks),
    OpSpec::run(Op::JumpNoInterrupt, jump, Breaks),
    OpSpec::run(Op::PopJumpIfTrue, pop_jump_if_truth, BranchOnTruth),
    OpSpec::run(Op::PopJumpIfFalse, pop_jump_if_truth, BranchOnTruth),
    OpSpec::run(Op::PopJumpIfNone, pop_jump_on_none, Breaks),
    OpSpec::run(Op::PopJumpIfNotNone, pop_jump_on_none, Breaks),
    OpSpec::run(Op::JumpIfTrueOrPop, jump_if_or_pop, Breaks),
    OpSpec::run(Op::JumpIfFalseOrPop, jump_if_or_pop, Breaks),
    OpSpec::run(Op::ReturnValue, return_value, Breaks),
    OpSpec::run(Op::Send, send, Breaks),
    OpSpec::run(Op::EndSend, end_send, Breaks),
    OpSpec::run(Op::YieldFrom, yield_from, Breaks),
    OpSpec::run(Op::YieldValue, yield_value, Breaks),
];

/// `GET_ITER`, `GET_YIELD_FROM_ITER`: the iterator, in as many slots as the version's
/// iterators take (3.15+: the iterator and a NULL, which its `FOR_ITER` and `SEND` accept
/// as they accept an iterator of their own; generated code rebuilds it so, never as the
/// interpreter's own list-and-index pair). A `GET_ITER` with a check (3.15's form of
/// `GET_YIELD_FROM_ITER`) checks nothing more: its operand is no coroutine here, where
/// coroutines are never translated values.
fn get_iter<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    let v = Vm::pop(frame)?;
    let it = vm.iterator(v)?;
    frame.stack.push(it);
    for _ in 1..vm.iterator_slots() {
        let null = vm.push_val(Val::Null);
        frame.stack.push(null);
    }
    Ok(None)
}

/// `FOR_ITER`.
fn for_iter<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let it = vm.iterator_at(frame)?;
    if let Some(item) = vm.advance(it)? {
        frame.stack.push(item);
    } else {
        let effect = vm.stack_effect("FOR_ITER", 0, true)?;
        if effect < 0 {
            Vm::pop_n(frame, (-effect) as usize)?;
        } else {
            for _ in 0..effect {
                let null = vm.push_val(Val::Null);
                frame.stack.push(null);
            }
        }
        Vm::jump(frame, instr.arg)?;
    }
    Ok(None)
}

/// `END_FOR`, `POP_ITER`.
fn pop_iterator<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let effect = vm.stack_effect(instr.op.name(), 0, false)?;
    Vm::pop_n(frame, (-effect).max(0) as usize)?;
    Ok(None)
}

/// `JUMP`, `JUMP_NO_INTERRUPT`.
fn jump<'py>(_vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    Vm::jump(frame, instr.arg)?;
    Ok(None)
}

/// `POP_JUMP_IF_TRUE`, `POP_JUMP_IF_FALSE`.
fn pop_jump_if_truth<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let v = Vm::pop(frame)?;
    if vm.truthy(v)? == (instr.op == Op::PopJumpIfTrue) {
        Vm::jump(frame, instr.arg)?;
    }
    Ok(None)
}

/// `POP_JUMP_IF_NONE`, `POP_JUMP_IF_NOT_NONE`.
fn pop_jump_on_none<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let v = Vm::pop(frame)?;
    let none = vm.none();
    let is_none = vm.identical(v, none)?;
    if is_none == (instr.op == Op::PopJumpIfNone) {
        Vm::jump(frame, instr.arg)?;
    }
    Ok(None)
}

/// `JUMP_IF_TRUE_OR_POP`, `JUMP_IF_FALSE_OR_POP`.
fn jump_if_or_pop<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let v = Vm::top(frame)?;
    if vm.truthy(v)? == (instr.op == Op::JumpIfTrueOrPop) {
        Vm::jump(frame, instr.arg)?;
    } else {
        Vm::pop(frame)?;
    }
    Ok(None)
}

/// `RETURN_VALUE`.
fn return_value<'py>(
    _vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let v = Vm::pop(frame)?;
    Ok(Some(v))
}

/// `SEND`.
fn send<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let sent = Vm::pop(frame)?;
    let receiver = vm.iterator_at(frame)?;
    match vm.send(receiver, sent)? {
        Sent::Yielded(item) => frame.stack.push(item),
        Sent::Returned(value) => {
            // Exhausted: the receiver stays below the value where the version's
            // END_SEND pops it (3.12+), else the value replaces it (3.11).
            if vm.stack_effect("SEND", 0, true)? < 0 {
                Vm::pop(frame)?;
            }
            frame.stack.push(value);
            Vm::jump(frame, instr.arg)?;
        }
    }
    Ok(None)
}

/// `END_SEND`: the receiver's slots go, the value stays.
fn end_send<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    let value = Vm::pop(frame)?;
    Vm::pop_n(frame, vm.iterator_slots())?;
    frame.stack.push(value);
    Ok(None)
}

/// `YIELD_FROM`.
fn yield_from<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    // 3.9/3.10: yields the receiver's item and runs again when resumed (with
    // the None sent in on top), until the receiver returns.
    let sent = Vm::pop(frame)?;
    let receiver = Vm::top(frame)?;
    match vm.send(receiver, sent)? {
        Sent::Yielded(item) => {
            frame.yielded = Some(item);
            let none = vm.none();
            frame.stack.push(none);
            frame.pc -= 1;
        }
        Sent::Returned(value) => {
            Vm::pop(frame)?;
            frame.stack.push(value);
        }
    }
    Ok(None)
}

/// `YIELD_VALUE`.
fn yield_value<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    // The generator is suspended here; resumed, it finds None sent in.
    let v = Vm::pop(frame)?;
    frame.yielded = Some(v);
    let none = vm.none();
    frame.stack.push(none);
    Ok(None)
}
