//! Stack and frame housekeeping: no-ops, the stack's own shuffles, constants.

use super::spec::AtBreak::{Breaks, Native};
use super::spec::OpSpec;
use crate::sot::translator::vm::*;

pub(super) const OPS: &[OpSpec] = &[
    OpSpec::run(Op::Resume, resume, Breaks),
    OpSpec::run(Op::Nop, nop, Breaks),
    OpSpec::run(Op::CopyFreeVars, nop, Breaks),
    OpSpec::run(Op::MakeCell, make_cell, Breaks),
    OpSpec::run(Op::GenStart, nop, Breaks),
    OpSpec::run(Op::ReturnGenerator, return_generator, Breaks),
    OpSpec::run(Op::PopTop, pop_top, Breaks),
    OpSpec::run(Op::PushNull, push_null, Breaks),
    OpSpec::run(Op::Copy, copy, Breaks),
    OpSpec::run(Op::Swap, swap, Breaks),
    OpSpec::run(Op::RotN, rot_n, Breaks),
    OpSpec::run(Op::LoadConst, load_const, Breaks),
    OpSpec::run(Op::LoadCommonConstant, load_common_constant, Native(0, 1)),
];

/// `RESUME`.
fn resume<'py>(_vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    frame.resumed = true;
    Ok(None)
}

/// `NOP`, `COPY_FREE_VARS`, `GEN_START`: nothing the VM models (the prologue's cells and free
/// variables are made by `Vm::setup_cells`).
fn nop<'py>(_vm: &mut Vm<'py, '_>, _frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    Ok(None)
}

/// `MAKE_CELL`: the prologue's (made by `Vm::setup_cells`) before `RESUME`; past it, an inlined
/// comprehension's variable that a closure captures (3.12+): a new cell replaces the frame's
/// variable, whose own cell waits on the stack, which neither generated code nor a resume
/// function can hand on. The frame runs as it is (an inlined callee: as its own frame, from a
/// break).
fn make_cell<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    if !frame.resumed {
        return Ok(None);
    }
    let what = "a closure over a comprehension's variable (a cell made mid-function)";
    Err(if vm.depth == 0 {
        Problem::Eager(what.to_owned())
    } else {
        Problem::Break(what.to_owned())
    })
}

/// `RETURN_GENERATOR`.
fn return_generator<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let none = vm.none();
    frame.stack.push(none);
    Ok(None)
}

/// `POP_TOP`.
fn pop_top<'py>(_vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    Vm::pop(frame)?;
    Ok(None)
}

/// `PUSH_NULL`.
fn push_null<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    let null = vm.push_val(Val::Null);
    frame.stack.push(null);
    Ok(None)
}

/// `COPY`.
fn copy<'py>(_vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let n = Vm::int_arg(instr.arg)?;
    let Some(v) = frame.stack.len().checked_sub(n).map(|i| frame.stack[i]) else {
        return unsupported("stack underflow");
    };
    frame.stack.push(v);
    Ok(None)
}

/// `SWAP`.
fn swap<'py>(_vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let n = Vm::int_arg(instr.arg)?;
    let len = frame.stack.len();
    if n > len || n < 1 {
        return unsupported("stack underflow");
    }
    frame.stack.swap(len - 1, len - n);
    Ok(None)
}

/// `ROT_N`.
fn rot_n<'py>(_vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let n = Vm::int_arg(instr.arg)?;
    let top = Vm::pop(frame)?;
    let at = frame
        .stack
        .len()
        .checked_sub(n - 1)
        .map_or_else(|| unsupported("stack underflow"), Ok)?;
    frame.stack.insert(at, top);
    Ok(None)
}

/// `LOAD_CONST`.
fn load_const<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let v = vm.const_at(frame, instr.arg)?;
    frame.stack.push(v);
    Ok(None)
}

/// `LOAD_COMMON_CONSTANT`.
fn load_common_constant<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let Arg::Enum(&name) = instr.arg else {
        return unsupported("LOAD_COMMON_CONSTANT without a name");
    };
    // The interpreter's own values: a literal (3.15+), or a builtin of the real `builtins`
    // module, whatever the frame's builtins say.
    let value = match Literal::from_name(name) {
        Some(Literal::None) => vm.py.None().into_bound(vm.py),
        Some(Literal::EmptyString) => PyString::new(vm.py, "").into_any(),
        Some(Literal::True) => PyBool::new(vm.py, true).to_owned().into_any(),
        Some(Literal::False) => PyBool::new(vm.py, false).to_owned().into_any(),
        Some(Literal::MinusOne) => (-1i64).into_pyobject(vm.py)?.into_any(),
        None => builtin(vm.py, name)?,
    };
    let v = vm.constant(value);
    frame.stack.push(v);
    Ok(None)
}
