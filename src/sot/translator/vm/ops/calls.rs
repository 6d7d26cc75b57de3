//! Calls and function making.

use super::spec::AtBreak::{Breaks, Native, NativeBy};
use super::spec::{by_stack_effect, count, OpSpec};
use crate::sot::translator::vm::*;

pub(super) const OPS: &[OpSpec] = &[
    OpSpec::run(Op::LoadBuildClass, load_build_class, Native(0, 1)),
    OpSpec::run(Op::Call, call, NativeBy(call_effect)),
    OpSpec::run(Op::CallMethod, call, NativeBy(call_method_effect)),
    OpSpec::run(
        Op::CallFunctionEx,
        call_function_ex,
        NativeBy(call_function_ex_effect),
    ),
    OpSpec::run(Op::MakeFunction, make_function, NativeBy(make_function_effect)),
    OpSpec::run(Op::SetFunctionAttribute, set_function_attribute, Breaks),
];

/// `LOAD_BUILD_CLASS`: the builtin `__build_class__`, which a class statement then calls
/// with its body's function (a call the VM does not make: the break is there). Read as a
/// builtin name is, where the module has no global of that name: `LOAD_BUILD_CLASS` skips
/// the globals, a builtin name's source (what the generated code loads) does not.
fn load_build_class<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let name = pyo3::intern!(vm.py, "__build_class__");
    if frame.globals.contains(name).unwrap_or(true) {
        return unsupported("class definition in a module with a global __build_class__");
    }
    let builder = vm.read_builtin(frame, name, || "__build_class__ not found".to_owned())?;
    frame.stack.push(builder);
    Ok(None)
}

/// `CALL`: the callable's slots, the arguments and the keyword names' tuple.
fn call_effect(vm: &Vm<'_, '_>, instr: &Instruction) -> Option<(usize, usize)> {
    let Arg::Call { argc, kw_names } = instr.arg else {
        return None;
    };
    Some((
        argc as usize + usize::from(kw_names) + vm.callable_slots(Op::Call),
        1,
    ))
}

/// `CALL_METHOD` (3.9/3.10): the method, its receiver or NULL, and the arguments.
fn call_method_effect(_vm: &Vm<'_, '_>, instr: &Instruction) -> Option<(usize, usize)> {
    Some((count(instr)? + 2, 1))
}

fn call_function_ex_effect(vm: &Vm<'_, '_>, instr: &Instruction) -> Option<(usize, usize)> {
    by_stack_effect(vm, "CALL_FUNCTION_EX", instr)
}

fn make_function_effect(vm: &Vm<'_, '_>, instr: &Instruction) -> Option<(usize, usize)> {
    by_stack_effect(vm, "MAKE_FUNCTION", instr)
}

/// `CALL`, `CALL_METHOD`.
fn call<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let Arg::Call { argc, kw_names } = instr.arg else {
        let argc = Vm::int_arg(instr.arg)?;
        return vm.do_call(frame, instr.op, argc, false).map(|()| None);
    };
    vm.do_call(frame, instr.op, argc as usize, kw_names)?;
    Ok(None)
}

/// `CALL_FUNCTION_EX`.
fn call_function_ex<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    vm.call_function_ex(frame, instr.arg)?;
    Ok(None)
}

/// `MAKE_FUNCTION`.
fn make_function<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    vm.make_function(frame, instr.arg)?;
    Ok(None)
}

/// `SET_FUNCTION_ATTRIBUTE`.
fn set_function_attribute<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let flag = Vm::int_arg(instr.arg)?;
    let function = Vm::pop(frame)?;
    let attribute = Vm::pop(frame)?;
    vm.set_function_attribute(function, flag, attribute)?;
    frame.stack.push(function);
    Ok(None)
}
