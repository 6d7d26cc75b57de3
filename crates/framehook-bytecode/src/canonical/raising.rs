//! Raising: the running version's instructions as canonical instructions, each raw opcode by
//! the rule for its name (fused, split and renamed forms become one canonical form) or, where
//! none applies, the canonical opcode of the same name with its argument by the table's kind.

use super::{Arg, BinOp, Const, Handler, Instruction, Op, Vars, CONDITIONAL_JUMPS};
use crate::error::{Error, Result};
use crate::raw::{self, Instr};
use crate::table::{ArgKind, CallLayout, Table};

fn conditional_jump_of(name: &str) -> Option<Op> {
    let condition = name
        .strip_prefix("POP_JUMP_IF_")
        .or_else(|| name.strip_prefix("POP_JUMP_FORWARD_IF_"))
        .or_else(|| name.strip_prefix("POP_JUMP_BACKWARD_IF_"))?;
    CONDITIONAL_JUMPS
        .iter()
        .find(|(_, c)| *c == condition)
        .map(|(op, _)| *op)
}

/// The running version's instructions as canonical instructions.
pub fn raise(table: &'static Table, vars: &Vars, instrs: &[Instr]) -> Result<Vec<Instruction>> {
    raise_mapped(table, vars, instrs).map(|(out, _)| out)
}

/// Per canonical instruction of `code` raised: the stack's depth where a raw instruction
/// starts there (every jump target and handler is such a place; before a keyword call,
/// the canonical stack also holds the names 3.11/3.12's `KW_NAMES` keeps aside), None
/// elsewhere and where no path reaches.
pub fn entry_depths(table: &'static Table, vars: &Vars, code: &raw::Code) -> Result<Vec<Option<u32>>> {
    let (canonical, first) = raise_mapped(table, vars, &code.instrs)?;
    let raw_depths = raw::entry_depths(table, code)?;
    let mut depths = vec![None; canonical.len()];
    for (index, depth) in raw_depths.into_iter().enumerate().rev() {
        // The first raw instruction of several that start at one canonical instruction
        // (one that raises to nothing, such as 3.14's `NOT_TAKEN`) says its depth.
        if let Some(slot) = depths.get_mut(first[index]) {
            *slot = depth;
        }
    }
    Ok(depths)
}

/// How a raw opcode raises, decided once per table from its name (`rule_of`) and replayed
/// per instruction.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// Raises to nothing (3.14's `NOT_TAKEN`, 3.11's `PRECALL`).
    Dropped,
    /// 3.11/3.12's `KW_NAMES`: the names, pushed for the `CALL` that follows.
    KwNames,
    /// A call; `keywords`: this form takes keyword names (`CALL_KW`, `CALL_FUNCTION_KW`).
    Call {
        keywords: bool,
    },
    LoadSmallInt,
    ReturnConst,
    /// The instruction is one canonical instruction whose argument is fixed.
    Fixed(Op, Arg),
    /// `DUP_TOP_TWO`: two copies.
    DupTopTwo,
    /// A fused pair of loads or stores of the variables in the argument's two nibbles.
    Pair(Op, Op),
    /// `LOAD_GLOBAL` with its NULL bit.
    LoadGlobalNull,
    /// `LOAD_ATTR` with its method bit.
    LoadAttrMethod,
    LoadSuperAttr,
    CompareOp,
    /// `BINARY_OP`: the operator by the table's enumeration.
    BinaryOpByEnum,
    /// A jump to the instruction's target: `JUMP`'s forms, the conditional jumps.
    Jump(Op),
    /// The canonical opcode of the same name, its argument by the table's kind.
    Same(Op),
    NoCanonicalForm,
}

/// What raising a table's instructions decides per opcode and per operator number.
struct Rules {
    by_opcode: Vec<Rule>,
    /// Per `BINARY_OP` argument (3.11+), its operator.
    binary_ops: Vec<Option<(BinOp, bool)>>,
}

/// `table`'s rules, made on its first use (tables live for the whole process).
fn rules(table: &'static Table) -> &'static Rules {
    static MADE: std::sync::Mutex<Vec<(usize, &'static Rules)>> = std::sync::Mutex::new(Vec::new());
    let key = table as *const Table as usize;
    let mut made = MADE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, rules)) = made.iter().find(|(k, _)| *k == key) {
        return rules;
    }
    let by_opcode = (0..=u8::MAX)
        .map(|opcode| {
            table
                .op(opcode)
                .map_or(Rule::NoCanonicalForm, |info| rule_of(&info.name, info.null_bit))
        })
        .collect();
    let entries = table.enum_entries("binary_op");
    let size = entries.iter().map(|(v, _)| *v as usize + 1).max().unwrap_or(0);
    let mut binary_ops = vec![None; size];
    for (value, name) in entries {
        binary_ops[*value as usize] = BinOp::from_nb_name(name);
    }
    let rules: &'static Rules = Box::leak(Box::new(Rules {
        by_opcode,
        binary_ops,
    }));
    made.push((key, rules));
    rules
}

/// How the raw opcode `name` raises (`null_bit`: its argument's bit 0 pushes a NULL or
/// self slot).
fn rule_of(name: &str, null_bit: bool) -> Rule {
    match name {
        "NOT_TAKEN" | "PRECALL" => Rule::Dropped,
        "KW_NAMES" => Rule::KwNames,
        "CALL" | "CALL_FUNCTION" => Rule::Call { keywords: false },
        "CALL_KW" | "CALL_FUNCTION_KW" => Rule::Call { keywords: true },
        "LOAD_SMALL_INT" => Rule::LoadSmallInt,
        "RETURN_CONST" => Rule::ReturnConst,
        "LOAD_ASSERTION_ERROR" => Rule::Fixed(Op::LoadCommonConstant, Arg::Enum(&"AssertionError")),
        "LOAD_FAST_BORROW" => Rule::Same(Op::LoadFast),
        "STORE_FAST_LOAD_FAST" => Rule::Pair(Op::StoreFast, Op::LoadFast),
        "STORE_FAST_STORE_FAST" => Rule::Pair(Op::StoreFast, Op::StoreFast),
        "LOAD_FAST_LOAD_FAST" | "LOAD_FAST_BORROW_LOAD_FAST_BORROW" => Rule::Pair(Op::LoadFast, Op::LoadFast),
        "LOAD_GLOBAL" if null_bit => Rule::LoadGlobalNull,
        "LOAD_ATTR" if null_bit => Rule::LoadAttrMethod,
        "LOAD_SUPER_ATTR" => Rule::LoadSuperAttr,
        "COMPARE_OP" => Rule::CompareOp,
        "BINARY_OP" => Rule::BinaryOpByEnum,
        "DUP_TOP" => Rule::Fixed(Op::Copy, Arg::Int(1)),
        "DUP_TOP_TWO" => Rule::DupTopTwo,
        "ROT_TWO" => Rule::Fixed(Op::Swap, Arg::Int(2)),
        "ROT_THREE" => Rule::Fixed(Op::RotN, Arg::Int(3)),
        "ROT_FOUR" => Rule::Fixed(Op::RotN, Arg::Int(4)),
        "JUMP_FORWARD" | "JUMP_BACKWARD" | "JUMP_ABSOLUTE" => Rule::Jump(Op::Jump),
        "JUMP_BACKWARD_NO_INTERRUPT" => Rule::Jump(Op::JumpNoInterrupt),
        _ => {
            if let Some((op, inplace)) = BinOp::from_opcode_name(name) {
                Rule::Fixed(Op::BinaryOp, Arg::BinaryOp { op, inplace })
            } else if let Some(op) = conditional_jump_of(name) {
                Rule::Jump(op)
            } else {
                Op::from_name(name).map_or(Rule::NoCanonicalForm, Rule::Same)
            }
        }
    }
}

/// [`raise`], and per raw instruction the index of its first canonical one (one more
/// entry: the end).
fn raise_mapped(
    table: &'static Table,
    vars: &Vars,
    instrs: &[Instr],
) -> Result<(Vec<Instruction>, Vec<usize>)> {
    let rules = rules(table);
    // Some raw instructions raise into two (a global loaded beside a NULL, `RETURN_CONST`,
    // 3.13+'s paired loads and stores): room for a quarter more, where growing by
    // doubling copied most codes' whole list once.
    let mut out: Vec<Instruction> = Vec::with_capacity(instrs.len() + instrs.len() / 4 + 4);
    // Per raw instruction: the index of its first canonical instruction.
    let mut first = Vec::with_capacity(instrs.len() + 1);
    let var_count = vars.count() as u32;
    let mut kw_names_pending = false;
    // Per raw instruction: whether a jump or handler lands there; made at the first
    // comparison that feeds a jump.
    let mut raw_targets: Option<Vec<bool>> = None;
    for (index, instr) in instrs.iter().enumerate() {
        first.push(out.len());
        let info = table
            .op(instr.opcode)
            .expect("decoded instructions have known opcodes");
        let bad = |why: &str| Error::BadArgument {
            offset: index,
            name: "instruction",
            arg: instr.arg,
            why: format!("({}) {why}", info.name),
        };
        let var = |index: u32| {
            if index < var_count {
                Ok(Arg::Var(index))
            } else {
                Err(bad("names no variable"))
            }
        };
        let mut emit = |op: Op, arg: Arg| {
            out.push(Instruction {
                op,
                arg,
                location: instr.location,
                handler: None,
            })
        };
        let target = || Arg::Target(instr.target.unwrap_or(usize::MAX));
        match rules.by_opcode[usize::from(instr.opcode)] {
            Rule::Dropped => {}
            Rule::KwNames => {
                emit(Op::LoadConst, Arg::Const(Const::Index(instr.arg)));
                kw_names_pending = true;
            }
            Rule::Call { keywords } => {
                let kw_names = kw_names_pending || keywords;
                kw_names_pending = false;
                emit(
                    Op::Call,
                    Arg::Call {
                        argc: instr.arg,
                        kw_names,
                    },
                );
            }
            Rule::LoadSmallInt => emit(Op::LoadConst, Arg::Const(Const::SmallInt(instr.arg))),
            Rule::ReturnConst => {
                emit(Op::LoadConst, Arg::Const(Const::Index(instr.arg)));
                emit(Op::ReturnValue, Arg::None);
            }
            Rule::Fixed(op, arg) => emit(op, arg),
            Rule::DupTopTwo => {
                emit(Op::Copy, Arg::Int(2));
                emit(Op::Copy, Arg::Int(2));
            }
            Rule::Pair(first_op, second_op) => {
                emit(first_op, var(instr.arg >> 4)?);
                emit(second_op, var(instr.arg & 15)?);
            }
            Rule::LoadGlobalNull => {
                let load = Arg::Name(instr.arg >> 1);
                let with_null = instr.arg & 1 != 0;
                if with_null && table.call_layout == CallLayout::NullFirst {
                    emit(Op::PushNull, Arg::None);
                }
                emit(Op::LoadGlobal, load);
                if with_null && table.call_layout == CallLayout::CallableFirst {
                    emit(Op::PushNull, Arg::None);
                }
            }
            Rule::LoadAttrMethod => {
                let op = if instr.arg & 1 != 0 {
                    Op::LoadMethod
                } else {
                    Op::LoadAttr
                };
                emit(op, Arg::Name(instr.arg >> 1));
            }
            Rule::LoadSuperAttr => emit(
                Op::LoadSuperAttr,
                Arg::NameFlags(instr.arg >> 2, (instr.arg & 3) as u8),
            ),
            Rule::CompareOp => {
                // A comparison that feeds a jump requiring a bool is one that makes a bool,
                // whether or not its argument says so (CPython's generated `__annotate__`
                // functions compare ints straight into the jump).
                let feeds_bool_jump = instrs.get(index + 1).is_some_and(|next| {
                    table.op(next.opcode).is_some_and(|i| i.bool_operand)
                        && !raw_targets.get_or_insert_with(|| landing_places(instrs))[index + 1]
                });
                let to_bool =
                    feeds_bool_jump || table.compare_bool_bit.is_some_and(|bit| instr.arg & bit != 0);
                let op = instr.arg >> table.compare_shift;
                if op >= 6 {
                    return Err(bad("is no comparison"));
                }
                emit(
                    Op::CompareOp,
                    Arg::Compare {
                        op: op as u8,
                        to_bool,
                    },
                );
            }
            Rule::BinaryOpByEnum => {
                let (op, inplace) = rules
                    .binary_ops
                    .get(instr.arg as usize)
                    .copied()
                    .flatten()
                    .ok_or_else(|| bad("is no binary operator"))?;
                emit(Op::BinaryOp, Arg::BinaryOp { op, inplace });
            }
            Rule::Jump(op) => emit(op, target()),
            Rule::Same(op) => {
                let arg = match &info.arg {
                    ArgKind::None => Arg::None,
                    ArgKind::Const => Arg::Const(Const::Index(instr.arg)),
                    ArgKind::Name { shift: 0 } => Arg::Name(instr.arg),
                    // Flags below the name (3.15+ `IMPORT_NAME`: lazy, eager).
                    ArgKind::Name { shift } => {
                        Arg::NameFlags(instr.arg >> shift, (instr.arg & ((1 << shift) - 1)) as u8)
                    }
                    ArgKind::Local => var(instr.arg)?,
                    ArgKind::Deref => match table.deref_index {
                        crate::table::DerefIndex::LocalsPlus => var(instr.arg)?,
                        crate::table::DerefIndex::CellFree => Arg::Var(
                            vars.var_of_cell_free(instr.arg)
                                .ok_or_else(|| bad("names no cell"))?,
                        ),
                    },
                    ArgKind::JumpForward | ArgKind::JumpBackward | ArgKind::JumpAbsolute => target(),
                    ArgKind::Enum(kind) => match table.enum_name(kind, instr.arg) {
                        Some(name) => Arg::Enum(name),
                        None => return Err(bad("is not in its enumeration")),
                    },
                    ArgKind::SmallInt => Arg::Const(Const::SmallInt(instr.arg)),
                    ArgKind::Int | ArgKind::LocalPair => Arg::Int(instr.arg),
                };
                emit(op, arg);
            }
            Rule::NoCanonicalForm => return Err(bad("has no canonical form")),
        }
    }
    first.push(out.len());
    canonical_targets(&mut out, instrs, &first);
    Ok((out, first))
}

/// Per raw instruction: whether a jump or a handler lands there.
fn landing_places(instrs: &[Instr]) -> Vec<bool> {
    let mut lands = vec![false; instrs.len()];
    for target in instrs
        .iter()
        .flat_map(|i| i.target.into_iter().chain(i.handler.map(|h| h.target)))
    {
        if let Some(flag) = lands.get_mut(target) {
            *flag = true;
        }
    }
    lands
}

/// Jump and handler targets of `out`, raised from `instrs`, as canonical indices
/// (`first`: per raw instruction its first canonical one, and the end).
fn canonical_targets(out: &mut [Instruction], instrs: &[Instr], first: &[usize]) {
    // Jump and handler targets: raw indices become canonical ones.
    for instruction in out.iter_mut() {
        if let Arg::Target(target) = &mut instruction.arg {
            *target = first[*target];
        }
    }
    // Every canonical instruction takes the handler of the raw instruction it came from.
    for (index, instr) in instrs.iter().enumerate() {
        if let Some(h) = instr.handler {
            let handler = Handler::new(first[h.target], h.depth, h.lasti);
            for instruction in &mut out[first[index]..first[index + 1]] {
                instruction.handler = Some(handler);
            }
        }
    }
}
