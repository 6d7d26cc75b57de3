//! Variables, cells and globals: loads, stores and deletes; imports.

use super::spec::AtBreak::{Breaks, Native};
use super::spec::OpSpec;
use crate::sot::translator::vm::*;

pub(super) const OPS: &[OpSpec] = &[
    OpSpec::unsupported(Op::ImportName, "import", Native(2, 1)),
    OpSpec::unsupported(Op::ImportFrom, "import", Native(1, 2)),
    OpSpec::unsupported(Op::ImportStar, "import", Breaks),
    OpSpec::run(Op::LoadFast, load_fast, Breaks),
    OpSpec::run(Op::LoadFastCheck, load_fast, Breaks),
    OpSpec::run(Op::LoadClosure, load_fast, Breaks),
    OpSpec::run(Op::LoadFastAndClear, load_fast_and_clear, Breaks),
    OpSpec::run(Op::StoreFast, store_or_delete_fast, Breaks),
    OpSpec::run(Op::DeleteFast, store_or_delete_fast, Breaks),
    OpSpec::run(Op::LoadDeref, load_deref, Breaks),
    OpSpec::run(Op::LoadClassderef, load_deref, Breaks),
    OpSpec::run(Op::StoreDeref, store_deref, Breaks),
    OpSpec::run(Op::DeleteDeref, delete_deref, Breaks),
    OpSpec::run(Op::LoadGlobal, load_global, Breaks),
    OpSpec::run(Op::LoadName, load_global, Breaks),
    OpSpec::run(Op::StoreGlobal, store_global, Native(1, 0)),
    OpSpec::run(Op::DeleteGlobal, delete_global, Breaks),
];

/// `LOAD_FAST`, `LOAD_FAST_CHECK`, `LOAD_CLOSURE`.
fn load_fast<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let v = frame.locals[Vm::var_at(instr.arg)?];
    if matches!(vm.val(v), Val::Null) {
        let name = frame.vars.all()[Vm::var_at(instr.arg)?].to_owned();
        return Err(Problem::Python(pyo3::exceptions::PyUnboundLocalError::new_err(
            format!("cannot access local variable '{name}' where it is not associated with a value"),
        )));
    }
    frame.stack.push(v);
    Ok(None)
}

/// `LOAD_FAST_AND_CLEAR`.
fn load_fast_and_clear<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let slot = Vm::var_at(instr.arg)?;
    let v = frame.locals[slot];
    frame.stack.push(v);
    frame.locals[slot] = vm.push_val(Val::Null);
    Ok(None)
}

/// `STORE_FAST`, `DELETE_FAST`.
fn store_or_delete_fast<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let slot = Vm::var_at(instr.arg)?;
    let own_variable = !is_resume_local(frame.vars.all()[slot]);
    if vm.depth == 0 && own_variable && vm.drops_a_watched_object(frame.locals[slot])? {
        return graph_break(
            "a store over the frame's only reference to an object with weak references or \
                 a finalizer (they run where the original drops it)",
        );
    }
    frame.locals[slot] = match instr.op {
        Op::StoreFast => Vm::pop(frame)?,
        _ => vm.push_val(Val::Null),
    };
    Ok(None)
}

/// `LOAD_DEREF`, `LOAD_CLASSDEREF`.
fn load_deref<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let cell = vm.cell_of(frame, instr.arg)?;
    match vm.cells[cell] {
        Some(v) => frame.stack.push(v),
        None => {
            return Err(Problem::Python(pyo3::exceptions::PyNameError::new_err(
                "free variable referenced before assignment",
            )))
        }
    }
    Ok(None)
}

/// `STORE_DEREF`.
fn store_deref<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let cell = vm.cell_of(frame, instr.arg)?;
    let v = Vm::pop(frame)?;
    vm.store_cell(cell, Some(v))?;
    Ok(None)
}

/// `DELETE_DEREF`.
fn delete_deref<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let cell = vm.cell_of(frame, instr.arg)?;
    vm.store_cell(cell, None)?;
    Ok(None)
}

/// `LOAD_GLOBAL`, `LOAD_NAME`.
fn load_global<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let name = Vm::name_at(frame, instr.arg)?;
    let v = vm.global(frame, &name)?;
    frame.stack.push(v);
    Ok(None)
}

/// `STORE_GLOBAL`.
fn store_global<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let name = Vm::name_at(frame, instr.arg)?;
    let v = Vm::pop(frame)?;
    vm.store_global(frame, name, Some(v))?;
    Ok(None)
}

/// `DELETE_GLOBAL`.
fn delete_global<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let name = Vm::name_at(frame, instr.arg)?;
    vm.store_global(frame, name, None)?;
    Ok(None)
}
