//! Attributes: loads (methods, special methods, super), stores and deletes.

use super::spec::AtBreak::{BoundAttribute, Breaks, Native};
use super::spec::OpSpec;
use crate::sot::translator::vm::*;

pub(super) const OPS: &[OpSpec] = &[
    OpSpec::run(Op::LoadAttr, load_attr, Native(1, 1)),
    OpSpec::run(Op::LoadMethod, load_method, BoundAttribute),
    OpSpec::run(Op::LoadSpecial, load_special, Breaks),
    OpSpec::run(Op::DeleteAttr, delete_attr, Native(1, 0)),
    OpSpec::run(Op::StoreAttr, store_attr, Native(2, 0)),
    OpSpec::run(Op::LoadSuperAttr, load_super_attr, Breaks),
];

/// `LOAD_ATTR`.
fn load_attr<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let name = Vm::name_at(frame, instr.arg)?;
    let owner = Vm::pop(frame)?;
    let v = vm.load_attr(owner, name.to_str()?)?;
    frame.stack.push(v);
    Ok(None)
}

/// `LOAD_METHOD`.
fn load_method<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let name = Vm::name_at(frame, instr.arg)?;
    let owner = Vm::pop(frame)?;
    let v = vm.load_attr(owner, name.to_str()?)?;
    let null = vm.push_val(Val::Null);
    match vm.table.call_layout {
        CallLayout::CallableFirst => frame.stack.extend([v, null]),
        _ => frame.stack.extend([null, v]),
    }
    Ok(None)
}

/// `LOAD_SPECIAL`.
fn load_special<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let Arg::Enum(&name) = instr.arg else {
        return unsupported("LOAD_SPECIAL without a name");
    };
    let owner = Vm::pop(frame)?;
    let method = vm.special_method(owner, name)?;
    // As CPython does for a method: the function, then its vm (never a NULL
    // slot, which the code after `with` pops as a value).
    let Val::Method { function, receiver } = vm.val(method).clone() else {
        return unsupported("LOAD_SPECIAL of something that is no method");
    };
    frame.stack.extend([function, receiver]);
    Ok(None)
}

/// `DELETE_ATTR`.
fn delete_attr<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let name = Vm::name_at(frame, instr.arg)?.to_str()?.to_owned();
    let owner = Vm::pop(frame)?;
    match vm.val(owner).clone() {
        Val::Object { class, mut attrs } => {
            let before = attrs.len();
            attrs.retain(|(n, _)| *n != name);
            if attrs.len() == before {
                return Err(Problem::Python(pyo3::exceptions::PyAttributeError::new_err(name)));
            }
            vm.values[owner] = Val::Object { class, attrs };
        }
        _ => vm.delete_attr(owner, name)?,
    }
    Ok(None)
}

/// `STORE_ATTR`.
fn store_attr<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let name = Vm::name_at(frame, instr.arg)?.to_str()?.to_owned();
    let owner = Vm::pop(frame)?;
    let value = Vm::pop(frame)?;
    vm.store_attr(owner, name, value)?;
    Ok(None)
}

/// `LOAD_SUPER_ATTR`.
fn load_super_attr<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let Arg::NameFlags(_, flags) = instr.arg else {
        return unsupported("LOAD_SUPER_ATTR without flags");
    };
    let name = Vm::name_at(frame, instr.arg)?;
    let [_super_fn, class, receiver]: [Vid; 3] = Vm::pop_n(frame, 3)?.try_into().expect("three");
    let class = vm.concrete(class)?;
    let attribute = vm.super_attr(class, receiver, name.to_str()?)?;
    if flags & 1 != 0 {
        let null = vm.push_val(Val::Null);
        match vm.table.call_layout {
            CallLayout::CallableFirst => frame.stack.extend([attribute, null]),
            _ => frame.stack.extend([null, attribute]),
        }
    } else {
        frame.stack.push(attribute);
    }
    Ok(None)
}
