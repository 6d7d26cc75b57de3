//! Building and unpacking containers and strings: BUILD_*, the comprehension appends, unpacking, formatting, t-strings, intrinsics.

use super::spec::AtBreak::{Breaks, Native, NativeBy};
use super::spec::{count, OpSpec};
use crate::sot::translator::vm::*;

pub(super) const OPS: &[OpSpec] = &[
    OpSpec::run(Op::BuildSlice, build_slice, NativeBy(build_effect)),
    OpSpec::run(Op::BuildTuple, build_sequence, NativeBy(build_effect)),
    OpSpec::run(Op::BuildList, build_sequence, NativeBy(build_effect)),
    OpSpec::run(Op::BuildSet, build_sequence, NativeBy(build_effect)),
    OpSpec::run(Op::BuildMap, build_map, NativeBy(build_map_effect)),
    OpSpec::run(
        Op::BuildConstKeyMap,
        build_const_key_map,
        NativeBy(build_const_key_map_effect),
    ),
    OpSpec::run(Op::BuildString, build_string, NativeBy(build_effect)),
    OpSpec::run(Op::ListAppend, add_to_collection, Native(1, 0)),
    OpSpec::run(Op::SetAdd, add_to_collection, Native(1, 0)),
    OpSpec::run(Op::MapAdd, map_add, Native(2, 0)),
    OpSpec::run(Op::ListExtend, extend_collection, Native(1, 0)),
    OpSpec::run(Op::SetUpdate, extend_collection, Native(1, 0)),
    OpSpec::run(Op::DictUpdate, dict_update_or_merge, Native(1, 0)),
    OpSpec::run(Op::DictMerge, dict_update_or_merge, Native(1, 0)),
    OpSpec::run(Op::ListToTuple, list_to_tuple, Native(1, 1)),
    OpSpec::run(Op::CallIntrinsic1, call_intrinsic_1, Native(1, 1)),
    OpSpec::run(Op::CallIntrinsic2, call_intrinsic_2, Native(2, 1)),
    OpSpec::run(
        Op::UnpackSequence,
        unpack_sequence,
        NativeBy(unpack_sequence_effect),
    ),
    OpSpec::run(Op::UnpackEx, unpack_ex, NativeBy(unpack_ex_effect)),
    OpSpec::run(Op::FormatValue, format_value, NativeBy(format_value_effect)),
    OpSpec::run(Op::ConvertValue, convert_value, Native(1, 1)),
    OpSpec::run(Op::FormatSimple, format_simple, Native(1, 1)),
    OpSpec::run(Op::FormatWithSpec, format_with_spec, Native(2, 1)),
    OpSpec::run(Op::BuildInterpolation, build_interpolation, Breaks),
    OpSpec::run(Op::BuildTemplate, build_template, Breaks),
];

/// `FORMAT_VALUE`: the value, and its format spec where flag 4 says there is one.
fn format_value_effect(_vm: &Vm<'_, '_>, instr: &Instruction) -> Option<(usize, usize)> {
    Some((1 + usize::from(count(instr)? & 4 != 0), 1))
}

fn unpack_sequence_effect(_vm: &Vm<'_, '_>, instr: &Instruction) -> Option<(usize, usize)> {
    Some((1, count(instr)?))
}

/// `UNPACK_EX`: the items before the starred target (low byte), those after (high byte),
/// and the starred list.
fn unpack_ex_effect(_vm: &Vm<'_, '_>, instr: &Instruction) -> Option<(usize, usize)> {
    let n = count(instr)?;
    Some((1, (n & 0xff) + (n >> 8) + 1))
}

/// `BUILD_TUPLE`, `BUILD_LIST`, `BUILD_SET`, `BUILD_STRING`, `BUILD_SLICE`: `n` items.
fn build_effect(_vm: &Vm<'_, '_>, instr: &Instruction) -> Option<(usize, usize)> {
    Some((count(instr)?, 1))
}

fn build_map_effect(_vm: &Vm<'_, '_>, instr: &Instruction) -> Option<(usize, usize)> {
    Some((2 * count(instr)?, 1))
}

/// `BUILD_CONST_KEY_MAP`: the values and the keys' tuple.
fn build_const_key_map_effect(_vm: &Vm<'_, '_>, instr: &Instruction) -> Option<(usize, usize)> {
    Some((count(instr)? + 1, 1))
}

/// `BUILD_SLICE`.
fn build_slice<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let n = Vm::int_arg(instr.arg)?;
    let parts = Vm::pop_n(frame, n)?;
    let none = vm.none();
    let v = match parts.as_slice() {
        [a, b] => Val::Slice(*a, *b, none),
        [a, b, c] => Val::Slice(*a, *b, *c),
        _ => return unsupported("BUILD_SLICE count"),
    };
    let v = vm.push_val(v);
    frame.stack.push(v);
    Ok(None)
}

/// `BUILD_TUPLE`, `BUILD_LIST`, `BUILD_SET`.
fn build_sequence<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let items = Vm::pop_n(frame, Vm::int_arg(instr.arg)?)?;
    let v = match instr.op {
        Op::BuildTuple => vm.push_val(Val::Tuple(items)),
        Op::BuildList => vm.push_val(Val::List(items)),
        _ => {
            let set = vm.push_val(Val::Set(Vec::new()));
            vm.add_items(set, items)?;
            set
        }
    };
    frame.stack.push(v);
    Ok(None)
}

/// `BUILD_MAP`.
fn build_map<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let flat = Vm::pop_n(frame, 2 * Vm::int_arg(instr.arg)?)?;
    let mut items = Vec::new();
    for pair in flat.chunks(2) {
        vm.dict_set(&mut items, pair[0], pair[1])?;
    }
    let v = vm.push_val(Val::Dict(items));
    frame.stack.push(v);
    Ok(None)
}

/// `BUILD_CONST_KEY_MAP`.
fn build_const_key_map<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let keys = Vm::pop(frame)?;
    let values = Vm::pop_n(frame, Vm::int_arg(instr.arg)?)?;
    let keys = vm.items_of(keys)?;
    let mut items = Vec::new();
    for (k, v) in keys.into_iter().zip(values) {
        vm.dict_set(&mut items, k, v)?;
    }
    let v = vm.push_val(Val::Dict(items));
    frame.stack.push(v);
    Ok(None)
}

/// `BUILD_STRING`.
fn build_string<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let parts = Vm::pop_n(frame, Vm::int_arg(instr.arg)?)?;
    let mut text = String::new();
    for p in parts {
        text.push_str(&vm.concrete(p)?.extract::<String>()?);
    }
    let v = vm.constant(PyString::new(vm.py, &text).into_any());
    frame.stack.push(v);
    Ok(None)
}

/// `LIST_APPEND`, `SET_ADD`.
fn add_to_collection<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let v = Vm::pop(frame)?;
    let depth = Vm::int_arg(instr.arg)?;
    let target = frame.stack[frame.stack.len() - depth];
    vm.add_items(target, vec![v])?;
    Ok(None)
}

/// `MAP_ADD`.
fn map_add<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let value = Vm::pop(frame)?;
    let key = Vm::pop(frame)?;
    store_into_dict_below(
        vm,
        frame,
        instr,
        vec![(key, value)],
        "MAP_ADD to a dict from outside",
    )
}

/// `LIST_EXTEND`, `SET_UPDATE`.
fn extend_collection<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let source = Vm::pop(frame)?;
    let depth = Vm::int_arg(instr.arg)?;
    let target = frame.stack[frame.stack.len() - depth];
    let new_items = vm.items_of(source)?;
    vm.add_items(target, new_items)?;
    Ok(None)
}

/// `DICT_UPDATE`, `DICT_MERGE`.
fn dict_update_or_merge<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let source = Vm::pop(frame)?;
    let pairs = vm.dict_items(source)?;
    store_into_dict_below(vm, frame, instr, pairs, "DICT_UPDATE of a dict from outside")
}

/// Stores `pairs` into the dict the instruction's argument says lies that deep in the stack
/// (a display's or a comprehension's, the translation's own; else `refused`).
fn store_into_dict_below<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
    pairs: Vec<(Vid, Vid)>,
    refused: &str,
) -> Res<Option<Vid>> {
    let depth = Vm::int_arg(instr.arg)?;
    let target = frame.stack[frame.stack.len() - depth];
    let Val::Dict(mut items) = vm.val(target).clone() else {
        return unsupported(refused);
    };
    for (k, v) in pairs {
        vm.dict_set(&mut items, k, v)?;
    }
    vm.values[target] = Val::Dict(items);
    Ok(None)
}

/// `LIST_TO_TUPLE`.
fn list_to_tuple<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let v = Vm::pop(frame)?;
    let items = vm.items_of(v)?;
    let t = vm.push_val(Val::Tuple(items));
    frame.stack.push(t);
    Ok(None)
}

/// `CALL_INTRINSIC_1`.
fn call_intrinsic_1<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let Arg::Enum(&name) = instr.arg else {
        return unsupported("CALL_INTRINSIC_1 without a name");
    };
    let v = Vm::pop(frame)?;
    let r = match name {
        "INTRINSIC_LIST_TO_TUPLE" => {
            let items = vm.items_of(v)?;
            vm.push_val(Val::Tuple(items))
        }
        "INTRINSIC_UNARY_POSITIVE" => vm.operator_call("pos", vec![v])?,
        _ => return unsupported(format!("intrinsic {name}")),
    };
    frame.stack.push(r);
    Ok(None)
}

/// `CALL_INTRINSIC_2`.
fn call_intrinsic_2<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let Arg::Enum(&name) = instr.arg else {
        return unsupported("CALL_INTRINSIC_2 without a name");
    };
    let second = Vm::pop(frame)?;
    Vm::pop(frame)?;
    let r = match name {
        "INTRINSIC_PREP_RERAISE_STAR" => vm.prep_reraise_star(second)?,
        _ => return unsupported(format!("intrinsic {name}")),
    };
    frame.stack.push(r);
    Ok(None)
}

/// `UNPACK_SEQUENCE`.
fn unpack_sequence<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let v = Vm::pop(frame)?;
    let items = vm.items_of(v)?;
    if items.len() != Vm::int_arg(instr.arg)? {
        return unsupported("unpacking raised (wrong number of values)");
    }
    frame.stack.extend(items.into_iter().rev());
    Ok(None)
}

/// `UNPACK_EX`.
fn unpack_ex<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let n = Vm::int_arg(instr.arg)?;
    let (before, after) = (n & 0xff, n >> 8);
    let v = Vm::pop(frame)?;
    let items = vm.items_of(v)?;
    if items.len() < before + after {
        return unsupported("unpacking raised (not enough values)");
    }
    let middle = vm.push_val(Val::List(items[before..items.len() - after].to_vec()));
    let mut out: Vec<Vid> = items[..before].to_vec();
    out.push(middle);
    out.extend_from_slice(&items[items.len() - after..]);
    frame.stack.extend(out.into_iter().rev());
    Ok(None)
}

/// `FORMAT_VALUE`.
fn format_value<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let flags = Vm::int_arg(instr.arg)?;
    let spec = if flags & 4 != 0 {
        Some(Vm::pop(frame)?)
    } else {
        None
    };
    let v = Vm::pop(frame)?;
    let r = vm.format(v, flags & 3, spec)?;
    frame.stack.push(r);
    Ok(None)
}

/// `CONVERT_VALUE`.
fn convert_value<'py>(vm: &mut Vm<'py, '_>, frame: &mut Frame<'py>, instr: &Instruction) -> Res<Option<Vid>> {
    let v = Vm::pop(frame)?;
    let r = vm.convert(v, Vm::int_arg(instr.arg)?)?;
    frame.stack.push(r);
    Ok(None)
}

/// `FORMAT_SIMPLE`.
fn format_simple<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let v = Vm::pop(frame)?;
    let r = vm.format(v, 0, None)?;
    frame.stack.push(r);
    Ok(None)
}

/// `FORMAT_WITH_SPEC`.
fn format_with_spec<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let spec = Vm::pop(frame)?;
    let v = Vm::pop(frame)?;
    let r = vm.format(v, 0, Some(spec))?;
    frame.stack.push(r);
    Ok(None)
}

/// `BUILD_INTERPOLATION`.
fn build_interpolation<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    instr: &Instruction,
) -> Res<Option<Vid>> {
    let flags = Vm::int_arg(instr.arg)?;
    let spec = if flags & 1 != 0 {
        Some(Vm::pop(frame)?)
    } else {
        None
    };
    let expression = Vm::pop(frame)?;
    let value = Vm::pop(frame)?;
    let r = vm.interpolation(value, expression, flags >> 2, spec)?;
    frame.stack.push(r);
    Ok(None)
}

/// `BUILD_TEMPLATE`.
fn build_template<'py>(
    vm: &mut Vm<'py, '_>,
    frame: &mut Frame<'py>,
    _instr: &Instruction,
) -> Res<Option<Vid>> {
    let interpolations = Vm::pop(frame)?;
    let strings = Vm::pop(frame)?;
    let r = vm.template(strings, interpolations)?;
    frame.stack.push(r);
    Ok(None)
}
