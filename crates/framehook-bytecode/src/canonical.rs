//! One instruction set for every version. The translator reads and writes only these;
//! [`raise`] turns the running version's instructions into them and [`lower`] turns them
//! back. The rules below are keyed by which opcodes the version's table has, never by its
//! number: a new version brings a table and rules for the opcodes that changed.
//!
//! What is normalised: arguments (variables by one index space, jumps by instruction,
//! enumerations by name, constants including 3.14's small ints); fused and split forms
//! (3.13+ `LOAD_FAST_LOAD_FAST` & co. and 3.14 `LOAD_FAST_BORROW*` are plain loads and
//! stores; 3.11 `PRECALL`+`CALL`, 3.11/3.12 `KW_NAMES`, 3.13+ `CALL_KW` and ≤ 3.10
//! `CALL_FUNCTION[_KW]` are `CALL` with the keyword names on the stack; `LOAD_GLOBAL`'s
//! NULL bit is an explicit `PUSH_NULL`; 3.12+ `LOAD_ATTR`'s method bit is `LOAD_METHOD`;
//! `RETURN_CONST` is `LOAD_CONST`+`RETURN_VALUE`); operators (≤ 3.10's `BINARY_*`/`INPLACE_*`
//! and `BINARY_SUBSCR`, 3.11+ `BINARY_OP` including 3.14's `NB_SUBSCR`, are `BINARY_OP`;
//! `DUP_TOP`/`ROT_*` are `COPY`/`SWAP`/`ROT_N`); jumps (`JUMP` and the conditional jumps
//! without direction); 3.14's `NOT_TAKEN` is dropped and put back, and
//! `LOAD_ASSERTION_ERROR` is `LOAD_COMMON_CONSTANT AssertionError`. Everything else keeps
//! its name and meaning wherever the version has it (the VM reads its stack effect from the
//! table).

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::linetable::Location;
use crate::raw::{self, Instr};
use crate::table::{ArgKind, CallLayout, Table};

macro_rules! canonical_ops {
    ($($variant:ident = $name:literal,)*) => {
        /// A canonical opcode.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Op { $($variant,)* }

        /// Every canonical opcode.
        pub const ALL_OPS: &[Op] = &[$(Op::$variant,)*];

        impl Op {
            pub fn name(self) -> &'static str {
                match self { $(Op::$variant => $name,)* }
            }

            /// The canonical opcode a version's opcode of the same name stands for.
            pub fn from_name(name: &str) -> Option<Op> {
                match name { $($name => Some(Op::$variant),)* _ => None }
            }
        }
    };
}

canonical_ops! {
    Nop = "NOP",
    PopTop = "POP_TOP",
    PushNull = "PUSH_NULL",
    Copy = "COPY",
    Swap = "SWAP",
    RotN = "ROT_N",
    LoadConst = "LOAD_CONST",
    LoadFast = "LOAD_FAST",
    LoadFastCheck = "LOAD_FAST_CHECK",
    LoadFastAndClear = "LOAD_FAST_AND_CLEAR",
    StoreFast = "STORE_FAST",
    DeleteFast = "DELETE_FAST",
    LoadDeref = "LOAD_DEREF",
    StoreDeref = "STORE_DEREF",
    DeleteDeref = "DELETE_DEREF",
    LoadClosure = "LOAD_CLOSURE",
    LoadClassderef = "LOAD_CLASSDEREF",
    LoadFromDictOrDeref = "LOAD_FROM_DICT_OR_DEREF",
    LoadFromDictOrGlobals = "LOAD_FROM_DICT_OR_GLOBALS",
    MakeCell = "MAKE_CELL",
    CopyFreeVars = "COPY_FREE_VARS",
    LoadGlobal = "LOAD_GLOBAL",
    StoreGlobal = "STORE_GLOBAL",
    DeleteGlobal = "DELETE_GLOBAL",
    LoadName = "LOAD_NAME",
    StoreName = "STORE_NAME",
    DeleteName = "DELETE_NAME",
    LoadLocals = "LOAD_LOCALS",
    LoadAttr = "LOAD_ATTR",
    LoadMethod = "LOAD_METHOD",
    StoreAttr = "STORE_ATTR",
    DeleteAttr = "DELETE_ATTR",
    LoadSuperAttr = "LOAD_SUPER_ATTR",
    LoadSpecial = "LOAD_SPECIAL",
    LoadCommonConstant = "LOAD_COMMON_CONSTANT",
    LoadBuildClass = "LOAD_BUILD_CLASS",
    UnaryNegative = "UNARY_NEGATIVE",
    UnaryPositive = "UNARY_POSITIVE",
    UnaryNot = "UNARY_NOT",
    UnaryInvert = "UNARY_INVERT",
    ToBool = "TO_BOOL",
    BinaryOp = "BINARY_OP",
    CompareOp = "COMPARE_OP",
    IsOp = "IS_OP",
    ContainsOp = "CONTAINS_OP",
    BinarySlice = "BINARY_SLICE",
    StoreSlice = "STORE_SLICE",
    StoreSubscr = "STORE_SUBSCR",
    DeleteSubscr = "DELETE_SUBSCR",
    BuildSlice = "BUILD_SLICE",
    BuildTuple = "BUILD_TUPLE",
    BuildList = "BUILD_LIST",
    BuildSet = "BUILD_SET",
    BuildMap = "BUILD_MAP",
    BuildConstKeyMap = "BUILD_CONST_KEY_MAP",
    BuildString = "BUILD_STRING",
    ListAppend = "LIST_APPEND",
    SetAdd = "SET_ADD",
    MapAdd = "MAP_ADD",
    ListExtend = "LIST_EXTEND",
    SetUpdate = "SET_UPDATE",
    DictUpdate = "DICT_UPDATE",
    DictMerge = "DICT_MERGE",
    ListToTuple = "LIST_TO_TUPLE",
    UnpackSequence = "UNPACK_SEQUENCE",
    UnpackEx = "UNPACK_EX",
    FormatValue = "FORMAT_VALUE",
    ConvertValue = "CONVERT_VALUE",
    FormatSimple = "FORMAT_SIMPLE",
    FormatWithSpec = "FORMAT_WITH_SPEC",
    BuildTemplate = "BUILD_TEMPLATE",
    BuildInterpolation = "BUILD_INTERPOLATION",
    Call = "CALL",
    CallMethod = "CALL_METHOD",
    CallFunctionEx = "CALL_FUNCTION_EX",
    CallIntrinsic1 = "CALL_INTRINSIC_1",
    CallIntrinsic2 = "CALL_INTRINSIC_2",
    MakeFunction = "MAKE_FUNCTION",
    SetFunctionAttribute = "SET_FUNCTION_ATTRIBUTE",
    ReturnValue = "RETURN_VALUE",
    ReturnGenerator = "RETURN_GENERATOR",
    GenStart = "GEN_START",
    Resume = "RESUME",
    YieldValue = "YIELD_VALUE",
    YieldFrom = "YIELD_FROM",
    GetIter = "GET_ITER",
    GetYieldFromIter = "GET_YIELD_FROM_ITER",
    GetAiter = "GET_AITER",
    GetAnext = "GET_ANEXT",
    GetAwaitable = "GET_AWAITABLE",
    GetLen = "GET_LEN",
    ForIter = "FOR_ITER",
    EndFor = "END_FOR",
    PopIter = "POP_ITER",
    Send = "SEND",
    EndSend = "END_SEND",
    EndAsyncFor = "END_ASYNC_FOR",
    CleanupThrow = "CLEANUP_THROW",
    Jump = "JUMP",
    JumpNoInterrupt = "JUMP_NO_INTERRUPT",
    PopJumpIfTrue = "POP_JUMP_IF_TRUE",
    PopJumpIfFalse = "POP_JUMP_IF_FALSE",
    PopJumpIfNone = "POP_JUMP_IF_NONE",
    PopJumpIfNotNone = "POP_JUMP_IF_NOT_NONE",
    JumpIfTrueOrPop = "JUMP_IF_TRUE_OR_POP",
    JumpIfFalseOrPop = "JUMP_IF_FALSE_OR_POP",
    JumpIfNotExcMatch = "JUMP_IF_NOT_EXC_MATCH",
    SetupFinally = "SETUP_FINALLY",
    SetupWith = "SETUP_WITH",
    SetupAsyncWith = "SETUP_ASYNC_WITH",
    PopBlock = "POP_BLOCK",
    RaiseVarargs = "RAISE_VARARGS",
    Reraise = "RERAISE",
    PushExcInfo = "PUSH_EXC_INFO",
    PopExcept = "POP_EXCEPT",
    CheckExcMatch = "CHECK_EXC_MATCH",
    CheckEgMatch = "CHECK_EG_MATCH",
    PrepReraiseStar = "PREP_RERAISE_STAR",
    WithExceptStart = "WITH_EXCEPT_START",
    BeforeWith = "BEFORE_WITH",
    BeforeAsyncWith = "BEFORE_ASYNC_WITH",
    SetupAnnotations = "SETUP_ANNOTATIONS",
    ImportName = "IMPORT_NAME",
    ImportFrom = "IMPORT_FROM",
    ImportStar = "IMPORT_STAR",
    PrintExpr = "PRINT_EXPR",
    MatchClass = "MATCH_CLASS",
    MatchKeys = "MATCH_KEYS",
    MatchMapping = "MATCH_MAPPING",
    MatchSequence = "MATCH_SEQUENCE",
    CopyDictWithoutKeys = "COPY_DICT_WITHOUT_KEYS",
    ExitInitCheck = "EXIT_INIT_CHECK",
    AsyncGenWrap = "ASYNC_GEN_WRAP",
}

/// ≤ 3.10's `BINARY_*`/`INPLACE_*` names and 3.11+'s `NB_*` names, in one enumeration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    And,
    FloorDivide,
    Lshift,
    MatrixMultiply,
    Multiply,
    Remainder,
    Or,
    Power,
    Rshift,
    Subtract,
    TrueDivide,
    Xor,
    Subscr,
}

const BIN_OPS: [(BinOp, &str, &str); 13] = [
    (BinOp::Add, "ADD", "ADD"),
    (BinOp::And, "AND", "AND"),
    (BinOp::FloorDivide, "FLOOR_DIVIDE", "FLOOR_DIVIDE"),
    (BinOp::Lshift, "LSHIFT", "LSHIFT"),
    (BinOp::MatrixMultiply, "MATRIX_MULTIPLY", "MATRIX_MULTIPLY"),
    (BinOp::Multiply, "MULTIPLY", "MULTIPLY"),
    (BinOp::Remainder, "REMAINDER", "MODULO"),
    (BinOp::Or, "OR", "OR"),
    (BinOp::Power, "POWER", "POWER"),
    (BinOp::Rshift, "RSHIFT", "RSHIFT"),
    (BinOp::Subtract, "SUBTRACT", "SUBTRACT"),
    (BinOp::TrueDivide, "TRUE_DIVIDE", "TRUE_DIVIDE"),
    (BinOp::Xor, "XOR", "XOR"),
];

impl BinOp {
    /// The 3.11+ `NB_*` name.
    pub fn nb_name(self, inplace: bool) -> String {
        if self == BinOp::Subscr {
            return "NB_SUBSCR".into();
        }
        let stem = BIN_OPS
            .iter()
            .find(|(op, _, _)| *op == self)
            .map_or("", |(_, nb, _)| nb);
        format!("NB_{}{stem}", if inplace { "INPLACE_" } else { "" })
    }

    /// The ≤ 3.10 opcode name.
    pub fn opcode_name(self, inplace: bool) -> String {
        if self == BinOp::Subscr {
            return "BINARY_SUBSCR".into();
        }
        let stem = BIN_OPS
            .iter()
            .find(|(op, _, _)| *op == self)
            .map_or("", |(_, _, old)| old);
        format!("{}_{stem}", if inplace { "INPLACE" } else { "BINARY" })
    }

    fn from_nb_name(name: &str) -> Option<(BinOp, bool)> {
        if name == "NB_SUBSCR" {
            return Some((BinOp::Subscr, false));
        }
        let rest = name.strip_prefix("NB_")?;
        let (inplace, stem) = rest.strip_prefix("INPLACE_").map_or((false, rest), |s| (true, s));
        BIN_OPS
            .iter()
            .find(|(_, nb, _)| *nb == stem)
            .map(|(op, _, _)| (*op, inplace))
    }

    fn from_opcode_name(name: &str) -> Option<(BinOp, bool)> {
        if name == "BINARY_SUBSCR" {
            return Some((BinOp::Subscr, false));
        }
        let (inplace, stem) = match name.strip_prefix("INPLACE_") {
            Some(stem) => (true, stem),
            None => (false, name.strip_prefix("BINARY_")?),
        };
        BIN_OPS
            .iter()
            .find(|(_, _, old)| *old == stem)
            .map(|(op, _, _)| (*op, inplace))
    }
}

/// A constant operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Const {
    /// Index into `co_consts`.
    Index(u32),
    /// A small integer that has no entry (3.14 `LOAD_SMALL_INT`).
    SmallInt(u32),
}

/// A canonical instruction's argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arg {
    None,
    Int(u32),
    Const(Const),
    /// Index into `co_names`.
    Name(u32),
    /// `LOAD_SUPER_ATTR`: a name and its two flag bits.
    NameFlags(u32, u8),
    /// A variable: index into `co_varnames + (co_cellvars not in co_varnames) + co_freevars`.
    Var(u32),
    /// A jump target: index of a canonical instruction.
    Target(usize),
    BinaryOp {
        op: BinOp,
        inplace: bool,
    },
    /// `op` indexes `<, <=, ==, !=, >, >=`; `to_bool`: the result is made a `bool` (3.13+).
    Compare {
        op: u8,
        to_bool: bool,
    },
    /// `CALL`: argument count, keyword names (a tuple) on top of the arguments or not.
    Call {
        argc: u32,
        kw_names: bool,
    },
    /// A value of one of the table's enumerations, by name.
    Enum(&'static str),
}

/// Where an exception raised by an instruction goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handler {
    pub target: usize,
    pub depth: u32,
    pub lasti: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    pub op: Op,
    pub arg: Arg,
    pub location: Location,
    pub handler: Option<Handler>,
}

#[cfg(test)]
impl Instruction {
    /// An instruction at no location, under no handler.
    pub(crate) fn bare(op: Op, arg: Arg) -> Instruction {
        Instruction {
            op,
            arg,
            location: Location::NONE,
            handler: None,
        }
    }

    /// A `NOP` whose exception goes to `target` with the stack cut to `depth`: where an
    /// instruction may raise.
    pub(crate) fn raising_to(target: usize, depth: u32) -> Instruction {
        let mut raising = Instruction::bare(Op::Nop, Arg::None);
        raising.handler = Some(Handler {
            target,
            depth,
            lasti: false,
        });
        raising
    }
}

/// The variable names of a code object, which give variable arguments one index space.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    pub varnames: Vec<String>,
    pub cellvars: Vec<String>,
    pub freevars: Vec<String>,
}

impl Vars {
    /// The variables in canonical order (3.11+'s locals-plus order).
    pub fn all(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.varnames.iter().map(String::as_str).collect();
        names.extend(
            self.cellvars
                .iter()
                .filter(|c| !self.varnames.contains(c))
                .map(String::as_str),
        );
        names.extend(self.freevars.iter().map(String::as_str));
        names
    }

    /// The canonical index of ≤ 3.10's cell/free index `index`.
    fn var_of_cell_free(&self, index: u32) -> Option<u32> {
        let index = index as usize;
        let all = self.all();
        if index < self.cellvars.len() {
            let name = &self.cellvars[index];
            return all.iter().position(|n| n == name).map(|p| p as u32);
        }
        let free = index - self.cellvars.len();
        (free < self.freevars.len()).then(|| (all.len() - self.freevars.len() + free) as u32)
    }

    /// ≤ 3.10's cell/free index of canonical variable `var`.
    fn cell_free_of_var(&self, var: u32) -> Option<u32> {
        let all = self.all();
        let free_start = all.len() - self.freevars.len();
        let var = var as usize;
        if var >= all.len() {
            return None;
        }
        if var >= free_start {
            return Some((self.cellvars.len() + var - free_start) as u32);
        }
        let name = all[var];
        self.cellvars.iter().position(|c| c == name).map(|p| p as u32)
    }
}

/// Constants lowering needs that the code has no entry for (a small int below 3.14).
pub trait ConstPool {
    fn small_int(&mut self, value: u32) -> Result<u32>;
}

/// A pool that has nothing to add: lowering code raised on the same version never asks.
pub struct NoNewConsts;

impl ConstPool for NoNewConsts {
    fn small_int(&mut self, value: u32) -> Result<u32> {
        Err(Error::CannotLower(format!(
            "the small int {value} needs a constant"
        )))
    }
}

const CONDITIONAL_JUMPS: [(Op, &str); 4] = [
    (Op::PopJumpIfTrue, "TRUE"),
    (Op::PopJumpIfFalse, "FALSE"),
    (Op::PopJumpIfNone, "NONE"),
    (Op::PopJumpIfNotNone, "NOT_NONE"),
];

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

/// [`raise`], and per raw instruction the index of its first canonical one (one more
/// entry: the end).
fn raise_mapped(
    table: &'static Table,
    vars: &Vars,
    instrs: &[Instr],
) -> Result<(Vec<Instruction>, Vec<usize>)> {
    let mut out: Vec<Instruction> = Vec::with_capacity(instrs.len());
    // Per raw instruction: the index of its first canonical instruction.
    let mut first = Vec::with_capacity(instrs.len() + 1);
    let var_count = vars.all().len() as u32;
    let mut kw_names_pending = false;
    let raw_targets: HashSet<usize> = instrs
        .iter()
        .flat_map(|i| i.target.into_iter().chain(i.handler.map(|h| h.target)))
        .collect();
    for (index, instr) in instrs.iter().enumerate() {
        first.push(out.len());
        let info = table
            .op(instr.opcode)
            .expect("decoded instructions have known opcodes");
        let name = info.name.as_str();
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
        match name {
            "NOT_TAKEN" | "PRECALL" => {}
            "KW_NAMES" => {
                emit(Op::LoadConst, Arg::Const(Const::Index(instr.arg)));
                kw_names_pending = true;
            }
            "CALL" | "CALL_KW" | "CALL_FUNCTION" | "CALL_FUNCTION_KW" => {
                let kw_names = kw_names_pending || name.ends_with("_KW");
                kw_names_pending = false;
                emit(
                    Op::Call,
                    Arg::Call {
                        argc: instr.arg,
                        kw_names,
                    },
                );
            }
            "LOAD_SMALL_INT" => emit(Op::LoadConst, Arg::Const(Const::SmallInt(instr.arg))),
            "RETURN_CONST" => {
                emit(Op::LoadConst, Arg::Const(Const::Index(instr.arg)));
                emit(Op::ReturnValue, Arg::None);
            }
            "LOAD_ASSERTION_ERROR" => emit(Op::LoadCommonConstant, Arg::Enum("AssertionError")),
            "LOAD_FAST_BORROW" => emit(Op::LoadFast, var(instr.arg)?),
            "LOAD_FAST_LOAD_FAST"
            | "LOAD_FAST_BORROW_LOAD_FAST_BORROW"
            | "STORE_FAST_LOAD_FAST"
            | "STORE_FAST_STORE_FAST" => {
                let (first_op, second_op) = match name {
                    "STORE_FAST_LOAD_FAST" => (Op::StoreFast, Op::LoadFast),
                    "STORE_FAST_STORE_FAST" => (Op::StoreFast, Op::StoreFast),
                    _ => (Op::LoadFast, Op::LoadFast),
                };
                emit(first_op, var(instr.arg >> 4)?);
                emit(second_op, var(instr.arg & 15)?);
            }
            "LOAD_GLOBAL" if info.null_bit => {
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
            "LOAD_ATTR" if info.null_bit => {
                let op = if instr.arg & 1 != 0 {
                    Op::LoadMethod
                } else {
                    Op::LoadAttr
                };
                emit(op, Arg::Name(instr.arg >> 1));
            }
            "LOAD_SUPER_ATTR" => emit(
                Op::LoadSuperAttr,
                Arg::NameFlags(instr.arg >> 2, (instr.arg & 3) as u8),
            ),
            "COMPARE_OP" => {
                // A comparison that feeds a jump requiring a bool is one that makes a bool,
                // whether or not its argument says so (CPython's generated `__annotate__`
                // functions compare ints straight into the jump).
                let feeds_bool_jump = instrs.get(index + 1).is_some_and(|next| {
                    !raw_targets.contains(&(index + 1))
                        && table.op(next.opcode).is_some_and(|i| i.bool_operand)
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
            "BINARY_OP" => {
                let nb = table
                    .enum_name("binary_op", instr.arg)
                    .ok_or_else(|| bad("is no binary operator"))?;
                let (op, inplace) = BinOp::from_nb_name(nb).ok_or_else(|| bad("is no binary operator"))?;
                emit(Op::BinaryOp, Arg::BinaryOp { op, inplace });
            }
            "DUP_TOP" => emit(Op::Copy, Arg::Int(1)),
            "DUP_TOP_TWO" => {
                emit(Op::Copy, Arg::Int(2));
                emit(Op::Copy, Arg::Int(2));
            }
            "ROT_TWO" => emit(Op::Swap, Arg::Int(2)),
            "ROT_THREE" => emit(Op::RotN, Arg::Int(3)),
            "ROT_FOUR" => emit(Op::RotN, Arg::Int(4)),
            "JUMP_FORWARD" | "JUMP_BACKWARD" | "JUMP_ABSOLUTE" => emit(Op::Jump, target()),
            "JUMP_BACKWARD_NO_INTERRUPT" => emit(Op::JumpNoInterrupt, target()),
            _ => {
                if let Some((op, inplace)) = BinOp::from_opcode_name(name) {
                    emit(Op::BinaryOp, Arg::BinaryOp { op, inplace });
                } else if let Some(op) = conditional_jump_of(name) {
                    emit(op, target());
                } else {
                    let op = Op::from_name(name).ok_or_else(|| bad("has no canonical form"))?;
                    let arg = match &info.arg {
                        ArgKind::None => Arg::None,
                        ArgKind::Const => Arg::Const(Const::Index(instr.arg)),
                        ArgKind::Name { .. } => Arg::Name(instr.arg),
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
            }
        }
    }
    first.push(out.len());
    canonical_targets(&mut out, instrs, &first);
    Ok((out, first))
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
            let handler = Handler {
                target: first[h.target],
                depth: h.depth,
                lasti: h.lasti,
            };
            for instruction in &mut out[first[index]..first[index + 1]] {
                instruction.handler = Some(handler);
            }
        }
    }
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

/// The canonical instructions a jump or a handler lands on.
fn jump_targets(code: &[Instruction]) -> HashSet<usize> {
    code.iter()
        .flat_map(|i| {
            let jump = if let Arg::Target(t) = i.arg { Some(t) } else { None };
            jump.into_iter().chain(i.handler.map(|h| h.target))
        })
        .collect()
}

/// One [`lower`] under way: the canonical code, and the raw instructions written so far.
struct Lowering<'a> {
    table: &'a Table,
    vars: &'a Vars,
    code: &'a [Instruction],
    /// The canonical instructions a jump or a handler lands on.
    targets: HashSet<usize>,
    pool: &'a mut dyn ConstPool,
    out: Vec<Instr>,
    /// Forward-only conditional jumps that skip the backward jump after them.
    skips: Vec<usize>,
    /// Where what [`Lowering::emit`] appends is, and its handler: those of the canonical
    /// instruction being lowered.
    location: Location,
    handler: Option<Handler>,
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
            .filter(|_| !self.targets.contains(&(index + 1)));
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
                self.emit("LOAD_GLOBAL", name << 1 | 1, None)?;
                Ok(2)
            }
            (Op::LoadGlobal, Arg::Name(name))
                if table
                    .op(table.require("LOAD_GLOBAL")?)
                    .is_some_and(|i| i.null_bit) =>
            {
                let with_null = fuses_with_next
                    && table.call_layout == CallLayout::CallableFirst
                    && next.is_some_and(|n| n.op == Op::PushNull);
                self.emit("LOAD_GLOBAL", name << 1 | u32::from(with_null), None)?;
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
        let (table, code) = (self.table, self.code);
        match (instruction.op, instruction.arg) {
            (Op::LoadFast | Op::StoreFast, Arg::Var(first_var))
                if fuses_with_next
                    && first_var < 16
                    && next.is_some_and(|n| matches!(n.arg, Arg::Var(v) if v < 16))
                    && fused_locals(instruction.op, code[index + 1].op)
                        .is_some_and(|name| table.has(name)) =>
            {
                let Arg::Var(second_var) = code[index + 1].arg else {
                    unreachable!("matched above")
                };
                let name = fused_locals(instruction.op, code[index + 1].op).expect("matched above");
                self.emit(name, first_var << 4 | second_var, None)?;
                Ok(2)
            }
            _ => self.by_name(instruction),
        }
    }

    /// Constants: `RETURN_CONST` for one returned just after, `KW_NAMES` for a call's
    /// keyword names, `LOAD_SMALL_INT` or a constant of its own for a small int, and
    /// `LOAD_ASSERTION_ERROR` where there is no `LOAD_COMMON_CONSTANT`.
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
                    && table.has("RETURN_CONST")
                    && next.is_some_and(|n| n.op == Op::ReturnValue) =>
            {
                self.emit("RETURN_CONST", constant, None)?;
                return Ok(2);
            }
            // The keyword names of a call (3.11, 3.12), wherever the call's location is.
            (Op::LoadConst, Arg::Const(Const::Index(constant)))
                if table.has("KW_NAMES")
                    && next.is_some_and(|n| {
                        n.handler == instruction.handler && matches!(n.arg, Arg::Call { kw_names: true, .. })
                    }) =>
            {
                self.emit("KW_NAMES", constant, None)?;
            }
            (Op::LoadConst, Arg::Const(Const::Index(constant))) => self.emit("LOAD_CONST", constant, None)?,
            (Op::LoadConst, Arg::Const(Const::SmallInt(value))) => {
                if table.has("LOAD_SMALL_INT") && value < 256 {
                    self.emit("LOAD_SMALL_INT", value, None)?;
                } else {
                    let constant = self.pool.small_int(value)?;
                    self.emit("LOAD_CONST", constant, None)?;
                }
            }
            (Op::LoadCommonConstant, Arg::Enum(name))
                if !table.has("LOAD_COMMON_CONSTANT") && name == "AssertionError" =>
            {
                self.emit("LOAD_ASSERTION_ERROR", 0, None)?
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
                    self.emit(
                        if kw_names {
                            "CALL_FUNCTION_KW"
                        } else {
                            "CALL_FUNCTION"
                        },
                        argc,
                        None,
                    )?;
                } else if kw_names && table.has("CALL_KW") {
                    self.emit("CALL_KW", argc, None)?;
                } else {
                    if kw_names
                        && !self
                            .out
                            .last()
                            .is_some_and(|i| Some(i.opcode) == table.number("KW_NAMES"))
                    {
                        return Err(Error::CannotLower(
                            "a call with keyword names needs them as the constant loaded just before it"
                                .into(),
                        ));
                    }
                    if table.has("PRECALL") {
                        self.emit("PRECALL", argc, None)?;
                    }
                    self.emit("CALL", argc, None)?;
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
                if table.has("LOAD_METHOD") {
                    self.emit("LOAD_METHOD", name, None)?;
                } else {
                    self.emit("LOAD_ATTR", name << 1 | 1, None)?;
                }
            }
            (Op::LoadAttr, Arg::Name(name)) => {
                let shift = u32::from(table.op(table.require("LOAD_ATTR")?).is_some_and(|i| i.null_bit));
                self.emit("LOAD_ATTR", name << shift, None)?;
            }
            (Op::LoadSuperAttr, Arg::NameFlags(name, flags)) => {
                self.emit("LOAD_SUPER_ATTR", name << 2 | u32::from(flags), None)?
            }
            _ => return self.by_name(instruction),
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
                self.emit("COMPARE_OP", arg, None)?;
            }
            (Op::BinaryOp, Arg::BinaryOp { op, inplace }) => {
                if op == BinOp::Subscr && table.has("BINARY_SUBSCR") || !table.has("BINARY_OP") {
                    self.emit(&op.opcode_name(inplace), 0, None)?;
                } else {
                    let nb = op.nb_name(inplace);
                    let value = table
                        .enum_value("binary_op", &nb)
                        .ok_or_else(|| Error::CannotLower(format!("this version has no {nb}")))?;
                    self.emit("BINARY_OP", value, None)?;
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
        let table = self.table;
        match (instruction.op, instruction.arg) {
            (Op::Copy, Arg::Int(n)) if !table.has("COPY") => match n {
                1 => self.emit("DUP_TOP", 0, None)?,
                2 if next.is_some_and(|n| n.op == Op::Copy && n.arg == Arg::Int(2)) && fuses_with_next => {
                    self.emit("DUP_TOP_TWO", 0, None)?;
                    return Ok(2);
                }
                _ => {
                    return Err(Error::CannotLower(format!(
                        "COPY {n} has no form in this version"
                    )))
                }
            },
            (Op::Swap, Arg::Int(n)) if !table.has("SWAP") => match n {
                2 => self.emit("ROT_TWO", 0, None)?,
                _ => {
                    return Err(Error::CannotLower(format!(
                        "SWAP {n} has no form in this version"
                    )))
                }
            },
            (Op::RotN, Arg::Int(n)) => {
                let named = match n {
                    2 => "ROT_TWO",
                    3 => "ROT_THREE",
                    _ => "ROT_FOUR",
                };
                if n <= 4 && table.has(named) {
                    self.emit(named, 0, None)?;
                } else if table.has("ROT_N") {
                    self.emit("ROT_N", n, None)?;
                } else {
                    // ROT_N n moves the top below the next n-1: SWAP n, SWAP n-1, ..., SWAP 2.
                    for depth in (2..=n).rev() {
                        self.emit("SWAP", depth, None)?;
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
        let table = self.table;
        match (instruction.op, instruction.arg) {
            (Op::Jump | Op::JumpNoInterrupt, Arg::Target(target)) => {
                let backward = target <= index;
                let name = match (backward, instruction.op) {
                    (false, _) => "JUMP_FORWARD",
                    (true, Op::JumpNoInterrupt) if table.has("JUMP_BACKWARD_NO_INTERRUPT") => {
                        "JUMP_BACKWARD_NO_INTERRUPT"
                    }
                    (true, _) if table.has("JUMP_BACKWARD") => "JUMP_BACKWARD",
                    (true, _) => "JUMP_ABSOLUTE",
                };
                self.emit(name, 0, Some(target))?;
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
                let condition = CONDITIONAL_JUMPS
                    .iter()
                    .find(|(o, _)| *o == op)
                    .map_or("", |(_, c)| c);
                let needs_bool = |name: &str| {
                    table
                        .number(name)
                        .and_then(|n| table.op(n))
                        .is_some_and(|i| i.bool_operand)
                };
                let plain = format!("POP_JUMP_IF_{condition}");
                if needs_bool(&plain) && !produces_bool(self.code, index, &self.targets) {
                    self.emit("TO_BOOL", 0, None)?;
                }
                let backward = target <= index;
                let directional = format!(
                    "POP_JUMP_{}_IF_{condition}",
                    if backward { "BACKWARD" } else { "FORWARD" }
                );
                if table.has(&directional) {
                    self.emit(&directional, 0, Some(target))?;
                } else if backward
                    && table
                        .op(table.require(&plain)?)
                        .is_some_and(|i| i.arg == ArgKind::JumpForward)
                {
                    // Forward-only conditional jumps: skip over a backward jump when not taken.
                    let inverse = CONDITIONAL_JUMPS
                        .iter()
                        .find(|(o, _)| *o == inverse_jump(op))
                        .map_or("", |(_, c)| c);
                    self.skips.push(self.out.len());
                    self.emit(&format!("POP_JUMP_IF_{inverse}"), 0, Some(0))?;
                    self.emit("JUMP_BACKWARD", 0, Some(target))?;
                } else {
                    self.emit(&plain, 0, Some(target))?;
                }
                if table.has("NOT_TAKEN") {
                    self.emit("NOT_TAKEN", 0, None)?;
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
        match instruction.arg {
            Arg::None => self.emit(name, 0, None)?,
            Arg::Int(value) | Arg::Name(value) | Arg::Const(Const::Index(value)) => {
                self.emit(name, value, None)?
            }
            Arg::Var(var) => {
                let info = table.op(table.require(name)?).expect("required");
                let index = if info.arg == ArgKind::Deref
                    && table.deref_index == crate::table::DerefIndex::CellFree
                {
                    self.vars
                        .cell_free_of_var(var)
                        .ok_or_else(|| bad_arg(instruction))?
                } else {
                    var
                };
                self.emit(name, index, None)?;
            }
            Arg::Target(target) => self.emit(name, 0, Some(target))?,
            Arg::Enum(value) => {
                let info = table.op(table.require(name)?).expect("required");
                let ArgKind::Enum(kind) = &info.arg else {
                    return Err(bad_arg(instruction));
                };
                let value = table.enum_value(kind, value).ok_or_else(|| {
                    Error::CannotLower(format!("{name} has no value {value} in this version"))
                })?;
                self.emit(name, value, None)?;
            }
            _ => return Err(bad_arg(instruction)),
        }
        Ok(1)
    }

    /// Appends `name arg`; `target` is still a canonical index.
    fn emit(&mut self, name: &str, arg: u32, target: Option<usize>) -> Result<()> {
        let opcode = self.table.require(name)?;
        let handler = self.handler.map(|h| raw::Handler {
            target: h.target,
            depth: h.depth,
            lasti: h.lasti,
        });
        self.out
            .push(Instr::new(opcode, arg, target, handler, self.location));
        Ok(())
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
fn fused_locals(first: Op, second: Op) -> Option<&'static str> {
    match (first, second) {
        (Op::LoadFast, Op::LoadFast) => Some("LOAD_FAST_LOAD_FAST"),
        (Op::StoreFast, Op::LoadFast) => Some("STORE_FAST_LOAD_FAST"),
        (Op::StoreFast, Op::StoreFast) => Some("STORE_FAST_STORE_FAST"),
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
fn produces_bool(code: &[Instruction], index: usize, targets: &HashSet<usize>) -> bool {
    if index == 0 || targets.contains(&index) {
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

/// What kind of code object a prologue starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeKind {
    Function,
    Generator,
    Coroutine,
    AsyncGenerator,
}

/// The instructions a code object with `vars` and of `kind` starts with on this version,
/// before its first own instruction: free variables copied in, cells made, a generator's
/// frame returned to its creator, and `RESUME` (3.11+); `GEN_START` (3.10); nothing (3.9).
pub fn prologue(table: &Table, vars: &Vars, kind: CodeKind) -> Vec<Instruction> {
    let mut out = Vec::new();
    let mut emit = |op: Op, arg: Arg| {
        out.push(Instruction {
            op,
            arg,
            location: Location::NONE,
            handler: None,
        })
    };
    if table.has("COPY_FREE_VARS") && !vars.freevars.is_empty() {
        emit(Op::CopyFreeVars, Arg::Int(vars.freevars.len() as u32));
    }
    if table.has("MAKE_CELL") {
        let all = vars.all();
        for cell in &vars.cellvars {
            let var = all
                .iter()
                .position(|name| name == cell)
                .expect("cells are variables");
            emit(Op::MakeCell, Arg::Var(var as u32));
        }
    }
    if kind != CodeKind::Function {
        if table.has("RETURN_GENERATOR") {
            emit(Op::ReturnGenerator, Arg::None);
            emit(Op::PopTop, Arg::None);
        } else if table.has("GEN_START") {
            let started = match kind {
                CodeKind::Coroutine => 1,
                CodeKind::AsyncGenerator => 2,
                _ => 0,
            };
            emit(Op::GenStart, Arg::Int(started));
        }
    }
    if table.has("RESUME") {
        emit(Op::Resume, Arg::Int(0));
    }
    out
}

/// Decodes a code object's bytes straight to canonical instructions.
pub fn decode(table: &'static Table, vars: &Vars, bytes: raw::CodeBytes<'_>) -> Result<Vec<Instruction>> {
    raise(table, vars, &raw::decode(table, bytes)?.instrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every opcode that can appear in `co_code`, in every table, raises to canonical
    /// instructions, and every canonical opcode exists in some version.
    #[test]
    fn every_opcode_of_every_version_has_a_canonical_form() {
        let vars = Vars {
            varnames: vec!["a".into(); 16],
            cellvars: vec!["c".into()],
            freevars: vec!["f".into()],
        };
        let mut used: HashSet<Op> = HashSet::new();
        for (major, minor) in Table::versions() {
            let table = Table::for_version(major, minor).unwrap();
            for number in 0..=255u8 {
                let Some(info) = table.op(number) else { continue };
                if info.effect.is_none()
                    || info.internal
                    || number == table.extended_arg
                    || Some(number) == table.cache
                {
                    continue;
                }
                let arg = match &info.arg {
                    ArgKind::Enum(kind) => table.enum_entries(kind).first().map_or(0, |(v, _)| *v),
                    _ => 0,
                };
                let target = info.arg.is_jump().then_some(0);
                let instr = Instr::new(number, arg, target, None, Location::NONE);
                let raised = raise(table, &vars, std::slice::from_ref(&instr))
                    .unwrap_or_else(|e| panic!("3.{minor} {}: {e}", info.name));
                used.extend(raised.iter().map(|i| i.op));
            }
        }
        let unused: Vec<&str> = ALL_OPS
            .iter()
            .filter(|op| !used.contains(op))
            .map(|op| op.name())
            .collect();
        assert!(unused.is_empty(), "canonical opcodes no version has: {unused:?}");
    }
}
