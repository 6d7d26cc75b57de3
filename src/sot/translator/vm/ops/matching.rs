//! Pattern matching (match statements).

use super::spec::AtBreak::{Breaks, Native, NativeBy};
use super::spec::OpSpec;
use crate::sot::translator::vm::*;

pub(super) const OPS: &[OpSpec] = &[
    OpSpec::run(Op::MatchMapping, match_kind_of_subject, Breaks),
    OpSpec::run(Op::MatchSequence, match_kind_of_subject, Breaks),
    OpSpec::run(Op::GetLen, get_len, Native(1, 2)),
    OpSpec::run(Op::MatchKeys, match_keys, NativeBy(match_keys_effect)),
    OpSpec::run(Op::MatchClass, match_class, NativeBy(match_class_effect)),
    OpSpec::run(Op::CopyDictWithoutKeys, copy_dict_without_keys, Breaks),
];

/// `MATCH_CLASS` leaves the subject as it found it, and what it pushes.
fn match_class_effect(vm: &Vm<'_, '_>, _instr: &Instruction) -> Option<(usize, usize)> {
    Some((3, (3 + vm.stack_effect("MATCH_CLASS", 0, false).ok()?) as usize))
}

/// `MATCH_KEYS` leaves the subject and the keys as it found them, and what it pushes.
fn match_keys_effect(vm: &Vm<'_, '_>, _instr: &Instruction) -> Option<(usize, usize)> {
    Some((2, (2 + vm.stack_effect("MATCH_KEYS", 0, false).ok()?) as usize))
}

/// `MATCH_MAPPING`, `MATCH_SEQUENCE`.
fn match_kind_of_subject<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let subject = Vm::top(frame)?;
    let matched = vm.match_kind(subject, instr.op == Op::MatchMapping)?;
    let r = vm.boolean(matched);
    frame.stack.push(r);
    Ok(None)
}

/// `GET_LEN`.
fn get_len<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    let subject = Vm::top(frame)?;
    let len = vm.builtin("len")?;
    let r = vm
        .call_builtin(&len, None, &[subject], &[])?
        .expect("len is a builtin");
    frame.stack.push(r);
    Ok(None)
}

/// `MATCH_KEYS`.
fn match_keys<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    let depth = frame.stack.len();
    let (subject, keys) = (frame.stack[depth - 2], frame.stack[depth - 1]);
    let values = vm.match_keys(subject, keys)?;
    let matched = values.is_some();
    let result = values.unwrap_or_else(|| vm.none());
    frame.stack.push(result);
    if vm.pushes_match_flag("MATCH_KEYS", 2)? {
        let flag = vm.boolean(matched);
        frame.stack.push(flag);
    }
    Ok(None)
}

/// `MATCH_CLASS`.
fn match_class<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let count = Vm::int_arg(instr.arg)?;
    let names = Vm::pop(frame)?;
    let class = Vm::pop(frame)?;
    let subject = Vm::pop(frame)?;
    let attributes = vm.match_class(subject, class, count, names)?;
    let with_flag = vm.pushes_match_flag("MATCH_CLASS", -1)?;
    match (attributes, with_flag) {
        (Some(tuple), true) => {
            let flag = vm.boolean(true);
            frame.stack.extend([tuple, flag]);
        }
        (None, true) => {
            let flag = vm.boolean(false);
            frame.stack.extend([subject, flag]);
        }
        (Some(tuple), false) => frame.stack.push(tuple),
        (None, false) => {
            let none = vm.none();
            frame.stack.push(none);
        }
    }
    Ok(None)
}

/// `COPY_DICT_WITHOUT_KEYS`.
fn copy_dict_without_keys<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let keys = Vm::pop(frame)?;
    let subject = Vm::top(frame)?;
    let mut rest = vm.dict_items(subject)?;
    for key in vm.items_of(keys)? {
        let key = vm.concrete(key)?;
        if let Some(index) = vm.find_dict_key(&rest, &key)? {
            rest.remove(index);
        }
    }
    let r = vm.push_val(Val::Dict(rest));
    frame.stack.push(r);
    Ok(None)
}
