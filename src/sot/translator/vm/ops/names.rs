//! Variables, cells and globals: loads, stores and deletes; imports.

use super::spec::AtBreak::{Breaks, Native};
use super::spec::OpSpec;
use crate::sot::translator::vm::*;

pub(super) const OPS: &[OpSpec] = &[
    OpSpec::run(Op::ImportName, import_name, Native(2, 1)),
    OpSpec::run(Op::ImportFrom, import_from, Native(1, 2)),
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
    // At a break the generated code reads the global itself, where the original would (a
    // lazy import's placeholder, 3.15+, imports there).
    OpSpec::run(Op::LoadGlobal, load_global, Native(0, 1)),
    OpSpec::run(Op::LoadName, load_global, Breaks),
    OpSpec::run(Op::StoreGlobal, store_global, Native(1, 0)),
    OpSpec::run(Op::DeleteGlobal, delete_global, Breaks),
];

/// `LOAD_FAST`, `LOAD_FAST_CHECK`, `LOAD_CLOSURE`.
fn load_fast<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let v = frame.locals[Vm::var_at(instr.arg)?];
    if matches!(vm.val(v), Val::Null) {
        let name = frame
            .vars
            .name(Vm::var_at(instr.arg)?)
            .expect("a raised variable")
            .to_owned();
        // CPython's message, which 3.11 reworded.
        let message = if vm.py.version_info() >= (3, 11) {
            format!("cannot access local variable '{name}' where it is not associated with a value")
        } else {
            format!("local variable '{name}' referenced before assignment")
        };
        return Err(Problem::Python(pyo3::exceptions::PyUnboundLocalError::new_err(
            message,
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
    if matches!(vm.val(v), Val::Null) {
        let saved = vm.push_val(Val::Null);
        vm.cleared_unbound.insert(saved);
        frame.stack.push(saved);
    } else {
        frame.stack.push(v);
    }
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
    let own_variable = !is_resume_local(frame.vars.name(slot).expect("a raised variable"));
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
        // CPython's NameError or UnboundLocalError, raised for real.
        None => return unsupported("a cell read before it is bound"),
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
    let name = Vm::name_at(frame, instr.arg)?.to_str()?.to_owned();
    let v = Vm::pop(frame)?;
    vm.store_global(frame, name, Some(v))?;
    Ok(None)
}

/// `DELETE_GLOBAL`.
fn delete_global<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let name = Vm::name_at(frame, instr.arg)?.to_str()?.to_owned();
    vm.store_global(frame, name, None)?;
    Ok(None)
}

/// `IMPORT_NAME` of modules already imported (see `Vm::imported_module`): `import a.b`
/// gives `a`; `from a import b` gives `a` once each name is already in its namespace (a
/// package's missing one would be imported as its submodule). A relative import's name is
/// resolved against the frame's `__package__` first (`Vm::relative_import_name`).
fn import_name<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    if let Arg::NameFlags(_, flags) = instr.arg {
        // A lazy import (3.15+, module level only) binds a placeholder that resolves on use.
        if vm
            .table
            .enum_value("import_flag", "lazy")
            .is_some_and(|lazy| u32::from(flags) & lazy != 0)
        {
            return unsupported("a lazy import");
        }
    }
    let name = Vm::name_at(frame, instr.arg)?.to_str()?.to_owned();
    let fromlist = Vm::pop(frame)?;
    let level = Vm::pop(frame)?;
    vm.check_import_function(frame)?;
    let level = vm.concrete(level)?.extract::<usize>()?;
    let name = if level > 0 {
        vm.relative_import_name(frame, &name, level)?
    } else {
        name
    };
    let fromlist = vm.concrete(fromlist)?;
    let names: Vec<String> = if fromlist.is_none() {
        Vec::new()
    } else {
        fromlist.extract()?
    };
    let module = vm.imported_module(&name)?;
    let imported = match name.split_once('.') {
        Some((top, _)) if names.is_empty() => vm.imported_module(top)?,
        _ => module,
    };
    let object = vm.concrete(module)?;
    if !names.is_empty() && has_attr(&object, "__path__")? {
        let namespace = object.getattr(pyo3::intern!(object.py(), "__dict__"))?;
        for wanted in &names {
            if wanted == "*" || !namespace.contains(wanted)? {
                return unsupported(format!("from {name} import {wanted} (it may import a submodule)"));
            }
        }
    }
    frame.stack.push(imported);
    Ok(None)
}

/// `IMPORT_FROM` of a name already in the module's namespace (read as its attribute,
/// guarded); another is looked up as a submodule: a break.
fn import_from<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let name = Vm::name_at(frame, instr.arg)?;
    let module = Vm::top(frame)?;
    let object = vm.concrete(module)?;
    let in_namespace = object.is_instance(&vm.ops.module_type)?
        && object
            .getattr(pyo3::intern!(object.py(), "__dict__"))?
            .contains(&name)?;
    if !in_namespace {
        return unsupported(format!("from ... import {name} (not in the module's namespace)"));
    }
    let value = vm.load_attr(module, name.to_str()?)?;
    frame.stack.push(value);
    Ok(None)
}
