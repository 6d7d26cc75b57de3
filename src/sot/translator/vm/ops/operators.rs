//! Operators: unary, binary, comparisons, identity, containment, subscripts and slices.

use super::spec::AtBreak::{Native, NativeTruth};
use super::spec::OpSpec;
use crate::sot::translator::vm::*;

pub(super) const OPS: &[OpSpec] = &[
    OpSpec::run(Op::UnaryNegative, unary_arithmetic, Native(1, 1)),
    OpSpec::run(Op::UnaryPositive, unary_arithmetic, Native(1, 1)),
    OpSpec::run(Op::UnaryInvert, unary_arithmetic, Native(1, 1)),
    OpSpec::run(Op::UnaryNot, unary_not, Native(1, 1)),
    OpSpec::run(Op::ToBool, to_bool, NativeTruth),
    OpSpec::run(Op::BinaryOp, binary_op, Native(2, 1)),
    OpSpec::run(Op::CompareOp, compare_op, Native(2, 1)),
    OpSpec::run(Op::IsOp, is_op, Native(2, 1)),
    OpSpec::run(Op::ContainsOp, contains_op, Native(2, 1)),
    OpSpec::run(Op::BinarySlice, binary_slice, Native(3, 1)),
    OpSpec::run(Op::StoreSlice, store_slice, Native(4, 0)),
    OpSpec::run(Op::StoreSubscr, store_subscr, Native(3, 0)),
    OpSpec::run(Op::DeleteSubscr, delete_subscr, Native(2, 0)),
];

/// `UNARY_NEGATIVE`, `UNARY_POSITIVE`, `UNARY_INVERT`.
fn unary_arithmetic<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let v = Vm::pop(frame)?;
    let name = match instr.op {
        Op::UnaryNegative => "neg",
        Op::UnaryPositive => "pos",
        _ => "invert",
    };
    let r = vm.operator_call(name, vec![v])?;
    frame.stack.push(r);
    Ok(None)
}

/// `UNARY_NOT`.
fn unary_not<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    let v = Vm::pop(frame)?;
    let r = !vm.truthy(v)?;
    let r = vm.boolean(r);
    frame.stack.push(r);
    Ok(None)
}

/// `TO_BOOL`.
fn to_bool<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    let v = Vm::pop(frame)?;
    let r = vm.truthy(v)?;
    let r = vm.boolean(r);
    frame.stack.push(r);
    Ok(None)
}

/// `BINARY_OP`.
fn binary_op<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let Arg::BinaryOp { op, inplace } = instr.arg else {
        return unsupported("BINARY_OP without an operator");
    };
    let right = Vm::pop(frame)?;
    let left = Vm::pop(frame)?;
    let r = vm.binary(left, right, op, inplace)?;
    frame.stack.push(r);
    Ok(None)
}

/// `COMPARE_OP`.
fn compare_op<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let Arg::Compare { op, to_bool } = instr.arg else {
        return unsupported("COMPARE_OP without an operator");
    };
    let right = Vm::pop(frame)?;
    let left = Vm::pop(frame)?;
    let name = COMPARE_NAMES[op as usize];
    let mut r = vm.rich_compare(name, left, right)?;
    if to_bool && !vm.is_tensor_val(r) {
        let b = vm.truthy(r)?;
        r = vm.boolean(b);
    }
    frame.stack.push(r);
    Ok(None)
}

/// `IS_OP`.
fn is_op<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let invert = Vm::int_arg(instr.arg)? != 0;
    let right = Vm::pop(frame)?;
    let left = Vm::pop(frame)?;
    let same = vm.identical(left, right)?;
    let r = vm.boolean(same != invert);
    frame.stack.push(r);
    Ok(None)
}

/// `CONTAINS_OP`.
fn contains_op<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let invert = Vm::int_arg(instr.arg)? != 0;
    let container = Vm::pop(frame)?;
    let item = Vm::pop(frame)?;
    let found = vm.contains(container, item)?;
    let r = vm.boolean(found != invert);
    frame.stack.push(r);
    Ok(None)
}

/// `BINARY_SLICE`.
fn binary_slice<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    let [container, start, stop]: [Vid; 3] = Vm::pop_n(frame, 3)?.try_into().expect("three");
    let none = vm.none();
    let slice = vm.push_val(Val::Slice(start, stop, none));
    let r = vm.subscript(container, slice)?;
    frame.stack.push(r);
    Ok(None)
}

/// `STORE_SLICE`.
fn store_slice<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    let [value, container, start, stop]: [Vid; 4] = Vm::pop_n(frame, 4)?.try_into().expect("four");
    let none = vm.none();
    let slice = vm.push_val(Val::Slice(start, stop, none));
    vm.store_subscript(container, slice, value)?;
    Ok(None)
}

/// `STORE_SUBSCR`.
fn store_subscr<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    let [value, container, key]: [Vid; 3] = Vm::pop_n(frame, 3)?.try_into().expect("three");
    vm.store_subscript(container, key, value)?;
    Ok(None)
}

/// `DELETE_SUBSCR`.
fn delete_subscr<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let [container, key]: [Vid; 2] = Vm::pop_n(frame, 2)?.try_into().expect("two");
    vm.delete_subscript(container, key)?;
    Ok(None)
}
