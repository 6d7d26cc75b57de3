//! Exceptions and blocks: 3.9/3.10's SETUP_*, raising, handlers, with statements, except*.

use super::spec::AtBreak::{Breaks, Native, NativeBy};
use super::spec::{count, OpSpec};
use crate::sot::translator::vm::*;

pub(super) const OPS: &[OpSpec] = &[
    OpSpec::run(Op::SetupFinally, setup_finally, Breaks),
    OpSpec::run(Op::PopBlock, pop_block, Breaks),
    OpSpec::run(Op::SetupWith, enter_with, Native(1, 2)),
    OpSpec::run(Op::BeforeWith, enter_with, Native(1, 2)),
    OpSpec::run(Op::JumpIfNotExcMatch, jump_if_not_exc_match, Breaks),
    OpSpec::run(Op::RaiseVarargs, raise_varargs, NativeBy(raise_effect)),
    OpSpec::run(Op::Reraise, reraise, Breaks),
    OpSpec::run(Op::PushExcInfo, push_exc_info, Breaks),
    OpSpec::run(Op::PopExcept, pop_except, Breaks),
    OpSpec::run(Op::CheckExcMatch, check_exc_match, Breaks),
    OpSpec::run(Op::CheckEgMatch, check_eg_match, Breaks),
    OpSpec::run(Op::PrepReraiseStar, prep_reraise_star, Breaks),
    OpSpec::run(Op::WithExceptStart, with_except_start, Breaks),
];

/// `RAISE_VARARGS`: the exception and its cause, as many as its argument says.
fn raise_effect(_vm: &Vm<'_, '_>, instr: &Instruction) -> Option<(usize, usize)> {
    Some((count(instr)?, 0))
}

/// `SETUP_FINALLY`.
fn setup_finally<'py>(
    _vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let Arg::Target(handler) = instr.arg else {
        return unsupported("SETUP_FINALLY without a target");
    };
    frame.blocks.push(Block {
        handler: Some(handler),
        level: frame.stack.len(),
    });
    Ok(None)
}

/// `POP_BLOCK`.
fn pop_block<'py>(_vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    frame.blocks.pop();
    Ok(None)
}

/// `SETUP_WITH`, `BEFORE_WITH`.
fn enter_with<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let manager = Vm::pop(frame)?;
    let exit = vm.special_method(manager, "__exit__")?;
    let enter = vm.special_method(manager, "__enter__")?;
    let entered = vm.call(enter, vec![], vec![])?;
    frame.stack.push(exit);
    if let (Op::SetupWith, Arg::Target(handler)) = (instr.op, instr.arg) {
        frame.blocks.push(Block {
            handler: Some(handler),
            level: frame.stack.len(),
        });
    }
    frame.stack.push(entered);
    Ok(None)
}

/// `JUMP_IF_NOT_EXC_MATCH`.
fn jump_if_not_exc_match<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let [kind, kinds]: [Vid; 2] = Vm::pop_n(frame, 2)?.try_into().expect("two");
    let (kind, kinds) = (vm.concrete(kind)?, vm.concrete(kinds)?);
    if !vm.builtin("issubclass")?.call1((kind, kinds))?.is_truthy()? {
        Vm::jump(frame, instr.arg)?;
    }
    Ok(None)
}

/// `RAISE_VARARGS`.
fn raise_varargs<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let count = Vm::int_arg(instr.arg)?;
    let cause = if count == 2 { Some(Vm::pop(frame)?) } else { None };
    let exception = match count {
        0 => *vm.exc_stack.last().map_or_else(
            || {
                Err(Problem::Python(pyo3::exceptions::PyRuntimeError::new_err(
                    "No active exception to reraise",
                )))
            },
            Ok,
        )?,
        _ => Vm::pop(frame)?,
    };
    let exception = if vm.concrete(exception)?.is_instance_of::<PyType>() {
        vm.call(exception, vec![], vec![])?
    } else {
        exception
    };
    if let Some(cause) = cause {
        let (exc, cause) = (vm.concrete(exception)?, vm.concrete(cause)?);
        let cause = if cause.is_instance_of::<PyType>() {
            cause.call0()?
        } else {
            cause
        };
        exc.setattr("__cause__", cause)?;
    }
    Err(vm.raise(exception, count > 0))
}

/// `RERAISE`.
fn reraise<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    let exception = match vm.table.exceptions {
        ExceptionModel::Table => Vm::pop(frame)?,
        // (traceback, value, type): the value.
        ExceptionModel::BlockStack => Vm::pop_n(frame, 3)?[1],
    };
    Err(vm.raise(exception, false))
}

/// `PUSH_EXC_INFO`.
fn push_exc_info<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let exception = Vm::pop(frame)?;
    let previous = match vm.exc_stack.last() {
        Some(p) => *p,
        None => vm.none(),
    };
    // A slot of its own, to know it again at a break.
    let previous = vm.push_val(vm.values[previous].clone());
    vm.exception_slots.insert(previous, exception);
    frame.stack.extend([previous, exception]);
    vm.exc_stack.push(exception);
    Ok(None)
}

/// `POP_EXCEPT`.
fn pop_except<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, _instr: &Instruction) -> Res<Option<Vid>> {
    match vm.table.exceptions {
        ExceptionModel::Table => {
            Vm::pop(frame)?;
        }
        ExceptionModel::BlockStack => {
            // The handler's block, and the previous exception's triple on top
            // (a value being returned may sit under it).
            let Some(Block { handler: None, .. }) = frame.blocks.pop() else {
                return unsupported("POP_EXCEPT outside an exception handler");
            };
            Vm::pop_n(frame, 3)?;
        }
    }
    vm.exc_stack.pop();
    Ok(None)
}

/// `CHECK_EXC_MATCH`.
fn check_exc_match<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let kinds = Vm::pop(frame)?;
    let exception = Vm::top(frame)?;
    // Only the exception's type decides (and is guarded), not its identity.
    let (kind, kinds) = (vm.type_of(exception)?, vm.concrete(kinds)?);
    let matched = vm.builtin("issubclass")?.call1((kind, kinds))?.is_truthy()?;
    let r = vm.boolean(matched);
    frame.stack.push(r);
    Ok(None)
}

/// `CHECK_EG_MATCH`.
fn check_eg_match<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let kinds = Vm::pop(frame)?;
    let exception = Vm::pop(frame)?;
    let (rest, matched) = vm.exception_group_match(exception, kinds)?;
    if !vm.concrete(matched)?.is_none() {
        // The clause handles what it matched: that is the current exception.
        if let Some(current) = vm.exc_stack.last_mut() {
            *current = matched;
        }
    }
    vm.unhandled_groups.insert(rest);
    frame.stack.extend([rest, matched]);
    Ok(None)
}

/// `PREP_RERAISE_STAR`.
fn prep_reraise_star<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let raised = Vm::pop(frame)?;
    Vm::pop(frame)?;
    let r = vm.prep_reraise_star(raised)?;
    frame.stack.push(r);
    Ok(None)
}

/// `WITH_EXCEPT_START`.
fn with_except_start<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let depth = frame.stack.len();
    let exception = match vm.table.exceptions {
        ExceptionModel::Table => frame.stack[depth - 1],
        ExceptionModel::BlockStack => frame.stack[depth - 2],
    };
    // The exit method (and, where LOAD_SPECIAL made it, its vm slot) under
    // the saved instruction offset and the previous exception.
    let (exit, receiver) = if vm.table.exceptions == ExceptionModel::BlockStack {
        // exit, the previous exception's triple, then this one's (type on top).
        (frame.stack[depth - 7], None)
    } else if vm.table.has("LOAD_SPECIAL") {
        (frame.stack[depth - 5], Some(frame.stack[depth - 4]))
    } else {
        (frame.stack[depth - 4], None)
    };
    let exc = vm.concrete(exception)?;
    let kind = vm.constant(exc.get_type().into_any());
    let traceback = vm.constant(exc.getattr(pyo3::intern!(exc.py(), "__traceback__"))?);
    let mut args = Vec::new();
    if let Some(r) = receiver.filter(|r| !matches!(vm.val(*r), Val::Null)) {
        args.push(r);
    }
    args.extend([kind, exception, traceback]);
    let result = vm.call(exit, args, vec![])?;
    frame.stack.push(result);
    Ok(None)
}
