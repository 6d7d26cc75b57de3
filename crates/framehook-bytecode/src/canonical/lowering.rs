//! Lowering: canonical instructions as the running version's instructions, each family of
//! canonical opcodes by its rules (the forms the version has), the rest by name.

use super::{
    Arg, BinOp, Const, ConstPool, Handler, Instruction, Literal, Op, Vars, ALL_OPS, CONDITIONAL_JUMPS,
};
use crate::error::{Error, Result};
use crate::linetable::Location;
use crate::raw::{self, Instr};
use crate::table::{ArgKind, CallLayout, Table};

macro_rules! raw_names {
    ($($variant:ident = $name:literal,)*) => {
        /// The raw opcodes lowering writes, or asks whether the version has, by a name no
        /// canonical opcode has (those of canonical names are [`Lowering::opcode_of`]'s).
        #[derive(Debug, Clone, Copy)]
        enum Raw { $($variant,)* }

        /// [`Raw`]'s names, in its order.
        const RAW_NAMES: &[&str] = &[$($name,)*];
    };
}

raw_names! {
    ReturnConst = "RETURN_CONST",
    KwNames = "KW_NAMES",
    LoadSmallInt = "LOAD_SMALL_INT",
    LoadAssertionError = "LOAD_ASSERTION_ERROR",
    CallFunction = "CALL_FUNCTION",
    CallFunctionKw = "CALL_FUNCTION_KW",
    CallKw = "CALL_KW",
    Precall = "PRECALL",
    BinarySubscr = "BINARY_SUBSCR",
    DupTop = "DUP_TOP",
    DupTopTwo = "DUP_TOP_TWO",
    RotTwo = "ROT_TWO",
    RotThree = "ROT_THREE",
    RotFour = "ROT_FOUR",
    JumpForward = "JUMP_FORWARD",
    JumpBackward = "JUMP_BACKWARD",
    JumpBackwardNoInterrupt = "JUMP_BACKWARD_NO_INTERRUPT",
    JumpAbsolute = "JUMP_ABSOLUTE",
    NotTaken = "NOT_TAKEN",
    LoadFastLoadFast = "LOAD_FAST_LOAD_FAST",
    StoreFastLoadFast = "STORE_FAST_LOAD_FAST",
    StoreFastStoreFast = "STORE_FAST_STORE_FAST",
    PopJumpForwardIfTrue = "POP_JUMP_FORWARD_IF_TRUE",
    PopJumpForwardIfFalse = "POP_JUMP_FORWARD_IF_FALSE",
    PopJumpForwardIfNone = "POP_JUMP_FORWARD_IF_NONE",
    PopJumpForwardIfNotNone = "POP_JUMP_FORWARD_IF_NOT_NONE",
    PopJumpBackwardIfTrue = "POP_JUMP_BACKWARD_IF_TRUE",
    PopJumpBackwardIfFalse = "POP_JUMP_BACKWARD_IF_FALSE",
    PopJumpBackwardIfNone = "POP_JUMP_BACKWARD_IF_NONE",
    PopJumpBackwardIfNotNone = "POP_JUMP_BACKWARD_IF_NOT_NONE",
}

/// 3.11's directional form of the conditional jump `op`.
fn directional_jump(op: Op, backward: bool) -> Option<Raw> {
    Some(match (op, backward) {
        (Op::PopJumpIfTrue, false) => Raw::PopJumpForwardIfTrue,
        (Op::PopJumpIfFalse, false) => Raw::PopJumpForwardIfFalse,
        (Op::PopJumpIfNone, false) => Raw::PopJumpForwardIfNone,
        (Op::PopJumpIfNotNone, false) => Raw::PopJumpForwardIfNotNone,
        (Op::PopJumpIfTrue, true) => Raw::PopJumpBackwardIfTrue,
        (Op::PopJumpIfFalse, true) => Raw::PopJumpBackwardIfFalse,
        (Op::PopJumpIfNone, true) => Raw::PopJumpBackwardIfNone,
        (Op::PopJumpIfNotNone, true) => Raw::PopJumpBackwardIfNotNone,
        _ => return None,
    })
}

fn inverse_jump(op: Op) -> Op {
    match op {
        Op::PopJumpIfTrue => Op::PopJumpIfFalse,
        Op::PopJumpIfFalse => Op::PopJumpIfTrue,
        Op::PopJumpIfNone => Op::PopJumpIfNotNone,
        _ => Op::PopJumpIfNone,
    }
}

fn is_conditional_jump(op: Op) -> bool {
    CONDITIONAL_JUMPS.iter().any(|(o, _)| *o == op)
}

/// Canonical instructions as the running version's instructions, ready for [`raw::encode`].
pub fn lower(
    table: &Table,
    vars: &Vars,
    code: &[Instruction],
    pool: &mut dyn ConstPool,
) -> Result<Vec<Instr>> {
    let mut lowering = Lowering {
        table,
        vars,
        code,
        targets: jump_targets(code),
        pool,
        out: Vec::with_capacity(code.len() + code.len() / 4),
        skips: Vec::new(),
        location: Location::NONE,
        handler: None,
        opcodes: table.numbers_by_index(ALL_OPS.len() + RAW_NAMES.len(), |index| {
            ALL_OPS
                .get(index)
                .map_or_else(|| RAW_NAMES[index - ALL_OPS.len()], |op| op.name())
        }),
    };
    // Per canonical instruction: its first raw instruction.
    let mut first: Vec<usize> = Vec::with_capacity(code.len() + 1);
    let mut index = 0;
    while index < code.len() {
        first.push(lowering.out.len());
        let lowered = lowering.instruction(index)?;
        // The instructions lowered with it, into one raw instruction, start where it does.
        for _ in 1..lowered {
            first.push(first[index]);
        }
        index += lowered;
    }
    first.push(lowering.out.len());
    lowering.finish(&first)
}

/// Per canonical instruction (and the end): whether a jump or a handler lands on it.
fn jump_targets(code: &[Instruction]) -> Vec<bool> {
    let mut targets = vec![false; code.len() + 1];
    for instruction in code {
        let jump = if let Arg::Target(t) = instruction.arg {
            Some(t)
        } else {
            None
        };
        for target in jump.into_iter().chain(instruction.handler.map(|h| h.target())) {
            if let Some(slot) = targets.get_mut(target) {
                *slot = true;
            }
        }
    }
    targets
}

/// One [`lower`] under way: the canonical code, and the raw instructions written so far.
struct Lowering<'a> {
    table: &'a Table,
    vars: &'a Vars,
    code: &'a [Instruction],
    /// Per canonical instruction: whether a jump or a handler lands on it.
    targets: Vec<bool>,
    pool: &'a mut dyn ConstPool,
    out: Vec<Instr>,
    /// Forward-only conditional jumps that skip the backward jump after them.
    skips: Vec<usize>,
    /// Where what [`Lowering::emit`] appends is, and its handler: those of the canonical
    /// instruction being lowered.
    location: Location,
    handler: Option<Handler>,
    /// The version's opcode per canonical opcode, then per [`Raw`] name (None where it has
    /// none).
    opcodes: &'a [Option<u8>],
}

/// The canonical instruction being lowered, and the next one, which it may become one raw
/// instruction with.
#[derive(Clone, Copy)]
struct At<'a> {
    index: usize,
    instruction: &'a Instruction,
    /// The next instruction, if no jump or handler lands on it.
    next: Option<&'a Instruction>,
    /// Two canonical instructions become one raw instruction only where nothing tells them
    /// apart: the second is no jump target and has the same handler and location.
    fuses_with_next: bool,
}

impl Lowering<'_> {
    /// Lowers the canonical instruction at `index`, with the next one where the two become
    /// one raw instruction; returns how many it lowered. Each family of opcodes has its
    /// rules; an opcode of none, or an argument its family has no rule for, keeps its name
    /// ([`Lowering::by_name`]).
    fn instruction(&mut self, index: usize) -> Result<usize> {
        let code = self.code;
        let instruction = &code[index];
        self.location = instruction.location;
        self.handler = instruction.handler;
        let next = code
            .get(index + 1)
            .filter(|_| !self.targets.get(index + 1).copied().unwrap_or(false));
        let at = At {
            index,
            instruction,
            next,
            fuses_with_next: next
                .is_some_and(|n| n.handler == instruction.handler && n.location == instruction.location),
        };
        match instruction.op {
            Op::PushNull | Op::LoadGlobal => self.global(at),
            Op::LoadFast | Op::StoreFast => self.local_pair(at),
            Op::LoadConst | Op::LoadCommonConstant => self.constant(at),
            Op::Call => self.call(instruction),
            Op::LoadMethod | Op::LoadAttr | Op::LoadSuperAttr => self.attribute(instruction),
            Op::ImportName => self.import(instruction),
            Op::GetIter => self.iteration(instruction),
            Op::CompareOp | Op::BinaryOp => self.operator(instruction),
            Op::Copy | Op::Swap | Op::RotN => self.stack_shuffle(at),
            Op::Jump | Op::JumpNoInterrupt => self.jump(at),
            op if is_conditional_jump(op) => self.conditional_jump(at),
            _ => self.by_name(instruction),
        }
    }

    /// `PUSH_NULL` and `LOAD_GLOBAL`: one `LOAD_GLOBAL` with the NULL bit where the version
    /// has the bit (3.11+) and the NULL is where the bit puts it.
    fn global(&mut self, at: At<'_>) -> Result<usize> {
        let At {
            index,
            instruction,
            next,
            fuses_with_next,
        } = at;
        let (table, code) = (self.table, self.code);
        match (instruction.op, instruction.arg) {
            // PUSH_NULL; LOAD_GLOBAL (3.11, 3.12) is LOAD_GLOBAL with the NULL bit.
            (Op::PushNull, _)
                if fuses_with_next
                    && table.call_layout == CallLayout::NullFirst
                    && next.is_some_and(|n| n.op == Op::LoadGlobal) =>
            {
                let Arg::Name(name) = code[index + 1].arg else {
                    return Err(bad_arg(&code[index + 1]));
                };
                self.location = code[index + 1].location;
                self.emit_op(Op::LoadGlobal, name << 1 | 1, None)?;
                Ok(2)
            }
            (Op::LoadGlobal, Arg::Name(name))
                if table
                    .op(self.opcode_of(Op::LoadGlobal)?)
                    .is_some_and(|i| i.null_bit) =>
            {
                let with_null = fuses_with_next
                    && table.call_layout == CallLayout::CallableFirst
                    && next.is_some_and(|n| n.op == Op::PushNull);
                self.emit_op(Op::LoadGlobal, name << 1 | u32::from(with_null), None)?;
                Ok(1 + usize::from(with_null))
            }
            _ => self.by_name(instruction),
        }
    }

    /// Two loads or stores of locals at one location are one instruction where the
    /// version has the fused form (3.13+), as the compiler writes them; never the
    /// borrowing one.
    fn local_pair(&mut self, at: At<'_>) -> Result<usize> {
        let At {
            index,
            instruction,
            next,
            fuses_with_next,
        } = at;
        let code = self.code;
        match (instruction.op, instruction.arg) {
            (Op::LoadFast | Op::StoreFast, Arg::Var(first_var))
                if fuses_with_next
                    && first_var < 16
                    && next.is_some_and(|n| matches!(n.arg, Arg::Var(v) if v < 16))
                    && fused_locals(instruction.op, code[index + 1].op)
                        .is_some_and(|fused| self.raw(fused).is_some()) =>
            {
                let Arg::Var(second_var) = code[index + 1].arg else {
                    unreachable!("matched above")
                };
                let fused = fused_locals(instruction.op, code[index + 1].op).expect("matched above");
                self.emit_raw(fused, first_var << 4 | second_var, None)?;
                Ok(2)
            }
            _ => self.by_name(instruction),
        }
    }

    /// Constants: `RETURN_CONST` for one returned just after, `KW_NAMES` for a call's
    /// keyword names, `LOAD_SMALL_INT` or a constant of its own for a small int,
    /// `LOAD_ASSERTION_ERROR` where there is no `LOAD_COMMON_CONSTANT`, and a constant of
    /// its own for a common constant's literal (`None`, …) where the version has none for it.
    fn constant(&mut self, at: At<'_>) -> Result<usize> {
        let At {
            instruction,
            next,
            fuses_with_next,
            ..
        } = at;
        let table = self.table;
        match (instruction.op, instruction.arg) {
            (Op::LoadConst, Arg::Const(Const::Index(constant)))
                if fuses_with_next
                    && self.raw(Raw::ReturnConst).is_some()
                    && next.is_some_and(|n| n.op == Op::ReturnValue) =>
            {
                self.emit_raw(Raw::ReturnConst, constant, None)?;
                return Ok(2);
            }
            // The keyword names of a call (3.11, 3.12), wherever the call's location is.
            (Op::LoadConst, Arg::Const(Const::Index(constant)))
                if self.raw(Raw::KwNames).is_some()
                    && next.is_some_and(|n| {
                        n.handler == instruction.handler && matches!(n.arg, Arg::Call { kw_names: true, .. })
                    }) =>
            {
                self.emit_raw(Raw::KwNames, constant, None)?;
            }
            (Op::LoadConst, Arg::Const(Const::Index(constant))) => {
                self.emit_op(Op::LoadConst, constant, None)?
            }
            (Op::LoadConst, Arg::Const(Const::SmallInt(value))) => {
                if self.raw(Raw::LoadSmallInt).is_some() && value < 256 {
                    self.emit_raw(Raw::LoadSmallInt, value, None)?;
                } else {
                    let constant = self.pool.small_int(value)?;
                    self.emit_op(Op::LoadConst, constant, None)?;
                }
            }
            (Op::LoadCommonConstant, Arg::Enum(name))
                if !self.has_op(Op::LoadCommonConstant) && *name == "AssertionError" =>
            {
                self.emit_raw(Raw::LoadAssertionError, 0, None)?
            }
            // A literal the version's common constants lack is a constant of its own.
            (Op::LoadCommonConstant, Arg::Enum(name))
                if table.enum_value("common_constant", name).is_none()
                    && Literal::from_name(name).is_some() =>
            {
                let literal = Literal::from_name(name).expect("matched above");
                let constant = self.pool.literal(literal)?;
                self.emit_op(Op::LoadConst, constant, None)?;
            }
            _ => return self.by_name(instruction),
        }
        Ok(1)
    }

    /// `CALL`: ≤ 3.10's `CALL_FUNCTION[_KW]`, `CALL_KW` where the version has it, else
    /// `CALL` (after `PRECALL` where the version has it), its keyword names the
    /// `KW_NAMES` just before.
    fn call(&mut self, instruction: &Instruction) -> Result<usize> {
        let table = self.table;
        match (instruction.op, instruction.arg) {
            (Op::Call, Arg::Call { argc, kw_names }) => {
                if table.call_layout == CallLayout::Plain {
                    self.emit_raw(
                        if kw_names {
                            Raw::CallFunctionKw
                        } else {
                            Raw::CallFunction
                        },
                        argc,
                        None,
                    )?;
                } else if kw_names && self.raw(Raw::CallKw).is_some() {
                    self.emit_raw(Raw::CallKw, argc, None)?;
                } else {
                    if kw_names
                        && !self
                            .out
                            .last()
                            .is_some_and(|i| Some(i.opcode) == self.raw(Raw::KwNames))
                    {
                        return Err(Error::CannotLower(
                            "a call with keyword names needs them as the constant loaded just before it"
                                .into(),
                        ));
                    }
                    if self.raw(Raw::Precall).is_some() {
                        self.emit_raw(Raw::Precall, argc, None)?;
                    }
                    self.emit_op(Op::Call, argc, None)?;
                }
            }
            _ => return self.by_name(instruction),
        }
        Ok(1)
    }

    /// Attribute loads: `LOAD_METHOD` is `LOAD_ATTR` with the method bit where the version
    /// has no `LOAD_METHOD`, and `LOAD_ATTR` then has the bit clear; `LOAD_SUPER_ATTR` has
    /// its flags in its argument.
    fn attribute(&mut self, instruction: &Instruction) -> Result<usize> {
        let table = self.table;
        match (instruction.op, instruction.arg) {
            (Op::LoadMethod, Arg::Name(name)) => {
                if self.has_op(Op::LoadMethod) {
                    self.emit_op(Op::LoadMethod, name, None)?;
                } else {
                    self.emit_op(Op::LoadAttr, name << 1 | 1, None)?;
                }
            }
            (Op::LoadAttr, Arg::Name(name)) => {
                let shift = u32::from(
                    table
                        .op(self.opcode_of(Op::LoadAttr)?)
                        .is_some_and(|i| i.null_bit),
                );
                self.emit_op(Op::LoadAttr, name << shift, None)?;
            }
            (Op::LoadSuperAttr, Arg::NameFlags(name, flags)) => {
                self.emit_op(Op::LoadSuperAttr, name << 2 | u32::from(flags), None)?
            }
            _ => return self.by_name(instruction),
        }
        Ok(1)
    }

    /// `IMPORT_NAME`: the name shifted above the version's flag bits (3.15+), with the flags
    /// it was raised with; an import without flags is eager, as every import was before
    /// lazy ones. Flags cannot go where the version has none.
    fn import(&mut self, instruction: &Instruction) -> Result<usize> {
        let table = self.table;
        let info = table.op(self.opcode_of(Op::ImportName)?).expect("required");
        let ArgKind::Name { shift } = info.arg else {
            return Err(bad_arg(instruction));
        };
        let arg = match instruction.arg {
            Arg::NameFlags(name, flags) if u32::from(flags) >> shift == 0 => name << shift | u32::from(flags),
            Arg::NameFlags(..) => {
                return Err(Error::CannotLower(format!(
                    "{:?}: this version's IMPORT_NAME has no such flags",
                    instruction.arg
                )))
            }
            Arg::Name(name) if shift == 0 => name,
            Arg::Name(name) => {
                let eager = table.enum_value("import_flag", "eager").ok_or_else(|| {
                    Error::CannotLower("this version's IMPORT_NAME has no eager flag".into())
                })?;
                name << shift | eager
            }
            _ => return Err(bad_arg(instruction)),
        };
        self.emit_op(Op::ImportName, arg, None)?;
        Ok(1)
    }

    /// `GET_ITER`: its check where the version's takes one (3.15+); where it takes none, only
    /// the plain one.
    fn iteration(&mut self, instruction: &Instruction) -> Result<usize> {
        let table = self.table;
        let info = table.op(self.opcode_of(Op::GetIter)?).expect("required");
        match instruction.arg {
            Arg::Int(check) if info.arg != ArgKind::None => self.emit_op(Op::GetIter, check, None)?,
            Arg::None | Arg::Int(0) => self.emit_op(Op::GetIter, 0, None)?,
            _ => {
                return Err(Error::CannotLower(format!(
                    "{:?}: this version's GET_ITER takes no argument",
                    instruction.arg
                )))
            }
        }
        Ok(1)
    }

    /// Operators: `COMPARE_OP`'s argument as the version writes it (its bool bit where it
    /// converts the result); `BINARY_OP` where the version has it, else (and for a
    /// subscript where the version has `BINARY_SUBSCR`) the operator's own opcode.
    fn operator(&mut self, instruction: &Instruction) -> Result<usize> {
        let table = self.table;
        match (instruction.op, instruction.arg) {
            (Op::CompareOp, Arg::Compare { op, to_bool }) => {
                let symbol = table
                    .enum_name("compare", u32::from(op))
                    .ok_or_else(|| bad_arg(instruction))?;
                let mut arg = table
                    .enum_value("compare_oparg", symbol)
                    .unwrap_or(u32::from(op) << table.compare_shift);
                if to_bool {
                    arg |= table.compare_bool_bit.ok_or_else(|| {
                        Error::CannotLower("this version's COMPARE_OP cannot convert to bool".into())
                    })?;
                }
                self.emit_op(Op::CompareOp, arg, None)?;
            }
            (Op::BinaryOp, Arg::BinaryOp { op, inplace }) => {
                if op == BinOp::Subscr && self.raw(Raw::BinarySubscr).is_some() || !self.has_op(Op::BinaryOp)
                {
                    let opcode = table.require(&op.opcode_name(inplace))?;
                    self.emit_opcode(opcode, 0, None);
                } else {
                    let nb = op.nb_name(inplace);
                    let value = table
                        .enum_value("binary_op", &nb)
                        .ok_or_else(|| Error::CannotLower(format!("this version has no {nb}")))?;
                    self.emit_op(Op::BinaryOp, value, None)?;
                }
            }
            _ => return self.by_name(instruction),
        }
        Ok(1)
    }

    /// `COPY`, `SWAP` and `ROT_N` where the version lacks them: `DUP_TOP`, `DUP_TOP_TWO`
    /// (two `COPY 2` in a row that fuse), `ROT_TWO`..`ROT_FOUR`, or `SWAP`s.
    fn stack_shuffle(&mut self, at: At<'_>) -> Result<usize> {
        let At {
            instruction,
            next,
            fuses_with_next,
            ..
        } = at;
        match (instruction.op, instruction.arg) {
            (Op::Copy, Arg::Int(n)) if !self.has_op(Op::Copy) => match n {
                1 => self.emit_raw(Raw::DupTop, 0, None)?,
                2 if next.is_some_and(|n| n.op == Op::Copy && n.arg == Arg::Int(2)) && fuses_with_next => {
                    self.emit_raw(Raw::DupTopTwo, 0, None)?;
                    return Ok(2);
                }
                _ => {
                    return Err(Error::CannotLower(format!(
                        "COPY {n} has no form in this version"
                    )))
                }
            },
            (Op::Swap, Arg::Int(n)) if !self.has_op(Op::Swap) => match n {
                2 => self.emit_raw(Raw::RotTwo, 0, None)?,
                _ => {
                    return Err(Error::CannotLower(format!(
                        "SWAP {n} has no form in this version"
                    )))
                }
            },
            (Op::RotN, Arg::Int(n)) => {
                let named = match n {
                    2 => Raw::RotTwo,
                    3 => Raw::RotThree,
                    _ => Raw::RotFour,
                };
                if n <= 4 && self.raw(named).is_some() {
                    self.emit_raw(named, 0, None)?;
                } else if self.has_op(Op::RotN) {
                    self.emit_op(Op::RotN, n, None)?;
                } else {
                    // ROT_N n moves the top below the next n-1: SWAP n, SWAP n-1, ..., SWAP 2.
                    for depth in (2..=n).rev() {
                        self.emit_op(Op::Swap, depth, None)?;
                    }
                }
            }
            _ => return self.by_name(instruction),
        }
        Ok(1)
    }

    /// `JUMP` and `JUMP_NO_INTERRUPT`: the version's jump for the direction.
    fn jump(&mut self, at: At<'_>) -> Result<usize> {
        let At {
            index, instruction, ..
        } = at;
        match (instruction.op, instruction.arg) {
            (Op::Jump | Op::JumpNoInterrupt, Arg::Target(target)) => {
                let backward = target <= index;
                let jump = match (backward, instruction.op) {
                    (false, _) => Raw::JumpForward,
                    (true, Op::JumpNoInterrupt) if self.raw(Raw::JumpBackwardNoInterrupt).is_some() => {
                        Raw::JumpBackwardNoInterrupt
                    }
                    (true, _) if self.raw(Raw::JumpBackward).is_some() => Raw::JumpBackward,
                    (true, _) => Raw::JumpAbsolute,
                };
                self.emit_raw(jump, 0, Some(target))?;
            }
            _ => return self.by_name(instruction),
        }
        Ok(1)
    }

    /// A conditional jump: a `TO_BOOL` first where the version's jump takes only a bool
    /// and the value may be none; the directional form where the version has one; where
    /// its jumps go forward only, a backward one is the inverse jump over a
    /// `JUMP_BACKWARD`; `NOT_TAKEN` after, where the version has it.
    fn conditional_jump(&mut self, at: At<'_>) -> Result<usize> {
        let At {
            index, instruction, ..
        } = at;
        let table = self.table;
        match (instruction.op, instruction.arg) {
            (op, Arg::Target(target)) => {
                // The plain form has the canonical opcode's name.
                let plain = self.opcodes[op as usize];
                let needs_bool = plain.and_then(|n| table.op(n)).is_some_and(|i| i.bool_operand);
                if needs_bool && !produces_bool(self.code, index, &self.targets) {
                    self.emit_op(Op::ToBool, 0, None)?;
                }
                let backward = target <= index;
                if let Some(directional) = directional_jump(op, backward).filter(|d| self.raw(*d).is_some()) {
                    self.emit_raw(directional, 0, Some(target))?;
                } else if backward
                    && table
                        .op(self.opcode_of(op)?)
                        .is_some_and(|i| i.arg == ArgKind::JumpForward)
                {
                    // Forward-only conditional jumps: skip over a backward jump when not taken.
                    self.skips.push(self.out.len());
                    self.emit_op(inverse_jump(op), 0, Some(0))?;
                    self.emit_raw(Raw::JumpBackward, 0, Some(target))?;
                } else {
                    self.emit_op(op, 0, Some(target))?;
                }
                if self.raw(Raw::NotTaken).is_some() {
                    self.emit_raw(Raw::NotTaken, 0, None)?;
                }
            }
            _ => return self.by_name(instruction),
        }
        Ok(1)
    }

    /// An instruction of the version's opcode of the same name, its argument as the
    /// version writes it (a cell or free variable by ≤ 3.10's index, an enumeration's
    /// value by name).
    fn by_name(&mut self, instruction: &Instruction) -> Result<usize> {
        let table = self.table;
        let name = instruction.op.name();
        let opcode = self.opcode_of(instruction.op)?;
        match instruction.arg {
            Arg::None => self.emit_opcode(opcode, 0, None),
            Arg::Int(value) | Arg::Name(value) | Arg::Const(Const::Index(value)) => {
                self.emit_opcode(opcode, value, None)
            }
            Arg::Var(var) => {
                let info = table.op(opcode).expect("required");
                let index = if info.arg == ArgKind::Deref
                    && table.deref_index == crate::table::DerefIndex::CellFree
                {
                    self.vars
                        .cell_free_of_var(var)
                        .ok_or_else(|| bad_arg(instruction))?
                } else {
                    var
                };
                self.emit_opcode(opcode, index, None);
            }
            Arg::Target(target) => self.emit_opcode(opcode, 0, Some(target)),
            Arg::Enum(value) => {
                let info = table.op(opcode).expect("required");
                let ArgKind::Enum(kind) = &info.arg else {
                    return Err(bad_arg(instruction));
                };
                let value = table.enum_value(kind, value).ok_or_else(|| {
                    Error::CannotLower(format!("{name} has no value {value} in this version"))
                })?;
                self.emit_opcode(opcode, value, None);
            }
            _ => return Err(bad_arg(instruction)),
        }
        Ok(1)
    }

    /// The version's opcode of the canonical `op`'s name, which it must have.
    fn opcode_of(&self, op: Op) -> Result<u8> {
        match self.opcodes[op as usize] {
            Some(opcode) => Ok(opcode),
            None => self.table.require(op.name()),
        }
    }

    /// The version's opcode named by `raw`, if it has one.
    fn raw(&self, raw: Raw) -> Option<u8> {
        self.opcodes[ALL_OPS.len() + raw as usize]
    }

    /// Whether the version has an opcode of the canonical `op`'s name.
    fn has_op(&self, op: Op) -> bool {
        self.opcodes[op as usize].is_some()
    }

    /// Appends the version's opcode of the canonical `op`'s name with `arg`; `target` is
    /// still a canonical index.
    fn emit_op(&mut self, op: Op, arg: u32, target: Option<usize>) -> Result<()> {
        let opcode = self.opcode_of(op)?;
        self.emit_opcode(opcode, arg, target);
        Ok(())
    }

    /// Appends the version's opcode named by `raw` with `arg`, which the caller's rule
    /// requires the version to have; `target` is still a canonical index.
    fn emit_raw(&mut self, raw: Raw, arg: u32, target: Option<usize>) -> Result<()> {
        let opcode = match self.raw(raw) {
            Some(opcode) => opcode,
            None => self.table.require(RAW_NAMES[raw as usize])?,
        };
        self.emit_opcode(opcode, arg, target);
        Ok(())
    }

    /// Appends `opcode arg`; `target` is still a canonical index.
    fn emit_opcode(&mut self, opcode: u8, arg: u32, target: Option<usize>) {
        let handler = self.handler.map(|h| raw::Handler {
            target: h.target(),
            depth: h.depth,
            lasti: h.lasti,
        });
        self.out
            .push(Instr::new(opcode, arg, target, handler, self.location));
    }

    /// The raw instructions, their targets raw indices (`first`: per canonical instruction
    /// its first raw one, and the end).
    fn finish(self, first: &[usize]) -> Result<Vec<Instr>> {
        let mut out = self.out;
        // Targets: canonical indices become raw ones; the skip of a forward-only conditional
        // jump lands after the backward jump it skips.
        for instr in &mut out {
            if let Some(target) = &mut instr.target {
                *target = *first.get(*target).ok_or_else(|| bad_target(*target))?;
            }
            if let Some(handler) = &mut instr.handler {
                handler.target = *first
                    .get(handler.target)
                    .ok_or_else(|| bad_target(handler.target))?;
            }
        }
        for skip in self.skips {
            out[skip].target = Some(skip + 2);
        }
        Ok(out)
    }
}

/// The fused opcode for two local-variable instructions in a row, if there is one.
fn fused_locals(first: Op, second: Op) -> Option<Raw> {
    match (first, second) {
        (Op::LoadFast, Op::LoadFast) => Some(Raw::LoadFastLoadFast),
        (Op::StoreFast, Op::LoadFast) => Some(Raw::StoreFastLoadFast),
        (Op::StoreFast, Op::StoreFast) => Some(Raw::StoreFastStoreFast),
        _ => None,
    }
}

fn bad_arg(instruction: &Instruction) -> Error {
    Error::CannotLower(format!(
        "{} cannot take {:?}",
        instruction.op.name(),
        instruction.arg
    ))
}

fn bad_target(target: usize) -> Error {
    Error::CannotLower(format!("jump to instruction {target}, past the end"))
}

/// Whether the value a conditional jump at `index` tests is certainly an exact `bool`: made
/// by the instruction just before, which is not a jump target.
fn produces_bool(code: &[Instruction], index: usize, targets: &[bool]) -> bool {
    if index == 0 || targets.get(index).copied().unwrap_or(false) {
        return false;
    }
    match code[index - 1] {
        Instruction {
            op:
                Op::ToBool
                | Op::IsOp
                | Op::ContainsOp
                | Op::UnaryNot
                | Op::CheckExcMatch
                | Op::MatchMapping
                | Op::MatchSequence,
            ..
        } => true,
        Instruction {
            arg: Arg::Compare { to_bool, .. },
            ..
        } => to_bool,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every raw name is some version's opcode (a misspelt one would read as "this version
    /// lacks it"), and none is a canonical opcode's name (those go through `opcode_of`).
    #[test]
    fn raw_names_are_opcodes_without_canonical_names() {
        for name in RAW_NAMES {
            assert!(
                Table::versions().any(|(major, minor)| Table::for_version(major, minor)
                    .expect("checked-in table")
                    .has(name)),
                "{name} is no version's opcode"
            );
            assert!(
                Op::from_name(name).is_none(),
                "{name} is a canonical opcode's name"
            );
        }
    }
}
