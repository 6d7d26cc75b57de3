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
//! table), its argument as the version writes it: 3.15's `GET_ITER` keeps its check (an
//! `Int`), `IMPORT_NAME` its lazy/eager flags (`NameFlags`), and `LOAD_COMMON_CONSTANT` the
//! name of each value, the literals (`None`, `''`, `True`, `False`, `-1`) included
//! ([`Literal`]).

use crate::error::{Error, Result};
use crate::linetable::Location;
use crate::raw;
use crate::table::Table;

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
    /// A name and the flag bits below it in the argument: `LOAD_SUPER_ATTR`'s two, and
    /// `IMPORT_NAME`'s where the version has them (`enum import_flag`: lazy, eager).
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
    /// A value of one of the table's enumerations, by name (a thin reference: an `Arg` is
    /// 16 bytes, not 24).
    Enum(&'static &'static str),
}

/// Where an exception raised by an instruction goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handler {
    /// The handler's index among the canonical instructions (a `u32`: an `Instruction` is
    /// 48 bytes, not 64).
    target: u32,
    pub depth: u32,
    pub lasti: bool,
}

impl Handler {
    /// The handler at canonical instruction `target`, entered with the stack cut to
    /// `depth` (and the raising instruction's offset pushed where `lasti`).
    pub fn new(target: usize, depth: u32, lasti: bool) -> Handler {
        Handler {
            target: index_u32(target),
            depth,
            lasti,
        }
    }

    /// The index of the handler's instruction.
    pub fn target(&self) -> usize {
        self.target as usize
    }

    /// The same handler at `target` (its instructions renumbered).
    pub fn at(self, target: usize) -> Handler {
        Handler {
            target: index_u32(target),
            ..self
        }
    }
}

/// An instruction index as stored: a code object's instructions are far fewer than 2^32
/// (each takes at least two bytes of `co_code`).
fn index_u32(index: usize) -> u32 {
    u32::try_from(index).expect("an instruction index fits in 32 bits")
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
        raising.handler = Some(Handler::new(target, depth, false));
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
        names.extend(self.own_cells());
        names.extend(self.freevars.iter().map(String::as_str));
        names
    }

    /// The cell variables that are no argument or local, which `all` lists after them.
    fn own_cells(&self) -> impl Iterator<Item = &str> {
        self.cellvars
            .iter()
            .filter(|c| !self.varnames.contains(c))
            .map(String::as_str)
    }

    /// How many variables `all` lists (without listing them).
    pub fn count(&self) -> usize {
        self.first_free() + self.freevars.len()
    }

    /// The canonical index of the first free variable: how many variables come before them.
    pub fn first_free(&self) -> usize {
        self.varnames.len() + self.own_cells().count()
    }

    /// The name of canonical variable `var` (`all()[var]`), None past the last.
    pub fn name(&self, var: usize) -> Option<&str> {
        if let Some(name) = self.varnames.get(var) {
            return Some(name);
        }
        let past_locals = var - self.varnames.len();
        let cells = self.own_cells().count();
        match past_locals.checked_sub(cells) {
            None => self.own_cells().nth(past_locals),
            Some(free) => self.freevars.get(free).map(String::as_str),
        }
    }

    /// The canonical index of the variable `name` (its first, as `all()` lists them).
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.varnames
            .iter()
            .map(String::as_str)
            .chain(self.own_cells())
            .chain(self.freevars.iter().map(String::as_str))
            .position(|n| n == name)
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

/// A value `LOAD_COMMON_CONSTANT` loads (3.15+) that is no builtin: the table names it by
/// its `repr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Literal {
    None,
    EmptyString,
    True,
    False,
    MinusOne,
}

const LITERALS: [(Literal, &str); 5] = [
    (Literal::None, "None"),
    (Literal::EmptyString, "''"),
    (Literal::True, "True"),
    (Literal::False, "False"),
    (Literal::MinusOne, "-1"),
];

impl Literal {
    /// The literal a `common_constant` name stands for; None for a builtin's name.
    pub fn from_name(name: &str) -> Option<Literal> {
        LITERALS.iter().find(|(_, n)| *n == name).map(|(l, _)| *l)
    }

    /// Its name in the tables' `common_constant` enumeration.
    pub fn name(self) -> &'static str {
        LITERALS.iter().find(|(l, _)| *l == self).map_or("", |(_, n)| n)
    }
}

/// Constants lowering needs that the code has no entry for (a small int below 3.14, a
/// common constant's literal where the version has no common constant for it).
pub trait ConstPool {
    fn small_int(&mut self, value: u32) -> Result<u32>;

    fn literal(&mut self, value: Literal) -> Result<u32> {
        Err(Error::CannotLower(format!(
            "the literal {} needs a constant",
            value.name()
        )))
    }
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

mod lowering;
mod raising;

pub use lowering::lower;
pub use raising::{entry_depths, raise};

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
    use std::collections::HashSet;

    use super::*;
    use crate::raw::Instr;
    use crate::table::ArgKind;

    /// `count`, `first_free`, `name` and `index_of` answer as `all()`'s list does: a cell
    /// that is also an argument is listed once, among the arguments.
    #[test]
    fn variables_are_counted_named_and_found_as_all_lists_them() {
        let vars = Vars {
            varnames: vec!["a".into(), "b".into(), "c".into()],
            cellvars: vec!["b".into(), "x".into()],
            freevars: vec!["y".into(), "z".into()],
        };
        let all = vars.all();
        assert_eq!(all, ["a", "b", "c", "x", "y", "z"]);
        assert_eq!(vars.count(), all.len());
        assert_eq!(vars.first_free(), all.len() - vars.freevars.len());
        for (index, name) in all.iter().enumerate() {
            assert_eq!(vars.name(index), Some(*name));
            assert_eq!(vars.index_of(name), Some(index));
        }
        assert_eq!(vars.name(all.len()), None);
        assert_eq!(vars.index_of("w"), None);
    }

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

    /// Lowers one canonical instruction alone on `table`, new constants numbered from 40.
    fn lower_one(table: &Table, op: Op, arg: Arg) -> Result<Vec<(String, u32)>> {
        struct Numbered;
        impl ConstPool for Numbered {
            fn small_int(&mut self, value: u32) -> Result<u32> {
                Ok(40 + value)
            }
            fn literal(&mut self, value: Literal) -> Result<u32> {
                Ok(40 + LITERALS.iter().position(|(l, _)| *l == value).expect("listed") as u32)
            }
        }
        let lowered = lower(
            table,
            &Vars::default(),
            &[Instruction::bare(op, arg)],
            &mut Numbered,
        )?;
        Ok(lowered
            .iter()
            .map(|i| (table.op(i.opcode).expect("known").name.clone(), i.arg))
            .collect())
    }

    /// Every table, with its version for messages.
    fn all_tables() -> impl Iterator<Item = (String, &'static Table)> {
        Table::versions().map(|(major, minor)| {
            (
                format!("{major}.{minor}"),
                Table::for_version(major, minor).unwrap(),
            )
        })
    }

    #[test]
    fn imports_keep_their_flags_where_the_version_has_them() {
        for (version, table) in all_tables() {
            let eager = table.enum_value("import_flag", "eager");
            let lazy = table.enum_value("import_flag", "lazy");
            let raised = |arg: u32| {
                let number = table.number("IMPORT_NAME").unwrap();
                raise(
                    table,
                    &Vars::default(),
                    &[Instr::new(number, arg, None, None, Location::NONE)],
                )
                .unwrap()[0]
                    .arg
            };
            let imports = |arg| lower_one(table, Op::ImportName, arg);
            match (eager, lazy) {
                (Some(eager), Some(lazy)) => {
                    // `namei << 2 | flags`, as the compiler writes it, and back.
                    for flags in [0, lazy, eager] {
                        let arg = 5 << 2 | flags;
                        assert_eq!(raised(arg), Arg::NameFlags(5, flags as u8), "{version}");
                        assert_eq!(imports(raised(arg)).unwrap(), [("IMPORT_NAME".into(), arg)]);
                    }
                    // An import written without flags stays eager.
                    assert_eq!(
                        imports(Arg::Name(5)).unwrap(),
                        [("IMPORT_NAME".into(), 5 << 2 | eager)]
                    );
                }
                _ => {
                    assert_eq!(raised(5), Arg::Name(5), "{version}");
                    assert_eq!(imports(Arg::Name(5)).unwrap(), [("IMPORT_NAME".into(), 5)]);
                    assert!(imports(Arg::NameFlags(5, 1)).is_err(), "{version}");
                    assert_eq!(
                        imports(Arg::NameFlags(5, 0)).unwrap(),
                        [("IMPORT_NAME".into(), 5)]
                    );
                }
            }
        }
    }

    #[test]
    fn an_instruction_takes_48_bytes() {
        // A translator keeps the instructions of every code it inlined for the process's
        // life: their size is most of its resident memory, and first touching it is a
        // page fault each 4 KiB in a process's first translation.
        assert_eq!(std::mem::size_of::<Arg>(), 16);
        assert_eq!(std::mem::size_of::<Instruction>(), 48);
    }

    #[test]
    fn common_constant_literals_lower_to_the_versions_own_form() {
        for (version, table) in all_tables() {
            for (literal, name) in &LITERALS {
                assert_eq!(Literal::from_name(name), Some(*literal));
                let lowered = lower_one(table, Op::LoadCommonConstant, Arg::Enum(name)).unwrap();
                let expected = match table.enum_value("common_constant", name) {
                    Some(value) => ("LOAD_COMMON_CONSTANT".to_owned(), value),
                    None => ("LOAD_CONST".to_owned(), 40 + *literal as u32),
                };
                assert_eq!(lowered, [expected], "{version} {name}");
            }
            // A builtin is no literal: without the version's common constant it cannot lower.
            assert_eq!(Literal::from_name("tuple"), None);
            let tuple = lower_one(table, Op::LoadCommonConstant, Arg::Enum(&"tuple"));
            assert_eq!(
                tuple.is_ok(),
                table.enum_value("common_constant", "tuple").is_some()
            );
        }
        let none = Instruction::bare(Op::LoadCommonConstant, Arg::Enum(&"None"));
        let (_, oldest) = all_tables().next().unwrap();
        assert!(lower(oldest, &Vars::default(), &[none], &mut NoNewConsts).is_err());
    }

    #[test]
    fn get_iter_keeps_its_check_where_it_takes_one() {
        for (version, table) in all_tables() {
            let takes_check = table.op(table.number("GET_ITER").unwrap()).unwrap().arg != ArgKind::None;
            let get_iter = |arg| lower_one(table, Op::GetIter, arg);
            assert_eq!(get_iter(Arg::None).unwrap(), [("GET_ITER".into(), 0)]);
            assert_eq!(get_iter(Arg::Int(0)).unwrap(), [("GET_ITER".into(), 0)]);
            match get_iter(Arg::Int(3)) {
                Ok(lowered) => assert!(takes_check && lowered == [("GET_ITER".into(), 3)], "{version}"),
                Err(_) => assert!(!takes_check, "{version}"),
            }
        }
    }
}
