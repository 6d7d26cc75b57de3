//! The opcode tables: one per CPython minor version, generated from the interpreter itself
//! (`tables/FORMAT.md`), parsed once when first used.

use crate::word_hash::WordMap;
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::expr::Expr;

/// The unit jump arguments count in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JumpUnit {
    Bytes,
    CodeUnits,
}

/// How line numbers (and positions) are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineTableFormat {
    /// 3.9 `co_lnotab`.
    Lnotab,
    /// 3.10 PEP 626 `co_linetable`.
    Pep626,
    /// 3.11+ PEP 657 location table.
    Pep657,
}

/// How exception handlers are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExceptionModel {
    /// `SETUP_*`/`POP_BLOCK` instructions (3.9, 3.10).
    BlockStack,
    /// `co_exceptiontable` (3.11+).
    Table,
}

/// What a cell or free variable argument indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DerefIndex {
    /// `co_cellvars + co_freevars` (3.9, 3.10).
    CellFree,
    /// The locals-plus array (3.11+).
    LocalsPlus,
}

/// Where a call's NULL-or-self slot sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallLayout {
    /// No slot (3.9, 3.10: `CALL_FUNCTION`; `CALL_METHOD` has its own pair).
    Plain,
    /// `[NULL|method, callable|self, args...]` (3.11, 3.12).
    NullFirst,
    /// `[callable, self|NULL, args...]` (3.13+).
    CallableFirst,
}

/// What an instruction's argument means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgKind {
    /// No argument.
    None,
    /// Index into `co_consts`.
    Const,
    /// Index into `co_names`, shifted left by `shift` (the low bits are flags).
    Name {
        shift: u8,
    },
    /// A local variable (`co_varnames` ≤ 3.10, locals-plus 3.11+).
    Local,
    /// Two locals, `first << 4 | second`.
    LocalPair,
    /// A cell or free variable, as `Table::deref_index` says.
    Deref,
    JumpForward,
    JumpBackward,
    JumpAbsolute,
    /// A value of the named enumeration (`binary_op`, `compare`, ...).
    Enum(String),
    /// The integer pushed (`LOAD_SMALL_INT`).
    SmallInt,
    /// Any other integer.
    Int,
}

impl ArgKind {
    pub fn is_jump(&self) -> bool {
        matches!(
            self,
            ArgKind::JumpForward | ArgKind::JumpBackward | ArgKind::JumpAbsolute
        )
    }
}

/// One opcode of one version.
#[derive(Debug, Clone)]
pub struct OpInfo {
    pub name: String,
    pub number: u8,
    /// Inline `CACHE` code units after the instruction.
    pub caches: u8,
    pub arg: ArgKind,
    /// Stack effect when execution continues at the next instruction; `None`: the opcode
    /// never appears in `co_code`.
    pub effect: Option<Expr>,
    /// Stack effect when it jumps, where that differs.
    pub jump_effect: Option<Expr>,
    /// Execution never continues at the next instruction.
    pub terminator: bool,
    /// Bit 0 of the argument pushes a NULL or self slot.
    pub null_bit: bool,
    /// Requires an exact `bool` on top of the stack.
    pub bool_operand: bool,
    /// Pushes a borrowed reference.
    pub borrow: bool,
    /// Never appears in `co_code`.
    pub internal: bool,
}

impl OpInfo {
    pub fn stack_effect(&self, oparg: u32, jump: bool) -> Option<i64> {
        let effect = self.effect.as_ref()?;
        Some(match (&self.jump_effect, jump) {
            (Some(jump_effect), true) => jump_effect.eval(oparg),
            _ => effect.eval(oparg),
        })
    }
}

/// The opcode table of one CPython minor version.
#[derive(Debug)]
pub struct Table {
    pub major: u8,
    pub minor: u8,
    pub magic: u16,
    pub extended_arg: u8,
    /// `CACHE`'s number, where there are inline caches.
    pub cache: Option<u8>,
    pub jump_unit: JumpUnit,
    pub line_table: LineTableFormat,
    /// PEP 657 tables: one entry per run of instructions at the same position (3.12+), not
    /// one per instruction (3.11).
    pub merged_location_runs: bool,
    pub exceptions: ExceptionModel,
    pub deref_index: DerefIndex,
    pub call_layout: CallLayout,
    pub compare_shift: u32,
    pub compare_bool_bit: Option<u32>,
    /// Stack slots a `for` loop's iterator takes (2 where `GET_ITER` pushes the iterator or
    /// sequence and NULL or an index, which `FOR_ITER`, `SEND` and their ends see).
    pub iterator_slots: u32,
    /// Each enumeration's values and names (slices of the table's text, so that an
    /// `Arg::Enum` is a thin reference to one).
    enums: WordMap<String, Vec<(u32, &'static str)>>,
    ops: Vec<Option<OpInfo>>,
    by_name: WordMap<String, u8>,
    /// `numbers_by_index`'s answers, looked up at its first call.
    by_index: OnceLock<Vec<Option<u8>>>,
}

const TABLES: [(u8, &str); 7] = [
    (9, include_str!("../tables/cpython-3.9.txt")),
    (10, include_str!("../tables/cpython-3.10.txt")),
    (11, include_str!("../tables/cpython-3.11.txt")),
    (12, include_str!("../tables/cpython-3.12.txt")),
    (13, include_str!("../tables/cpython-3.13.txt")),
    (14, include_str!("../tables/cpython-3.14.txt")),
    (15, include_str!("../tables/cpython-3.15.txt")),
];

impl Table {
    /// The table of CPython `major.minor`, parsed on first use.
    pub fn for_version(major: u8, minor: u8) -> Result<&'static Table> {
        static PARSED: [OnceLock<Table>; TABLES.len()] = [const { OnceLock::new() }; TABLES.len()];
        let unsupported = Error::UnsupportedVersion { major, minor };
        if major != 3 {
            return Err(unsupported);
        }
        let index = TABLES.iter().position(|(m, _)| *m == minor).ok_or(unsupported)?;
        if let Some(table) = PARSED[index].get() {
            return Ok(table);
        }
        let table = Table::parse(TABLES[index].1)?;
        Ok(PARSED[index].get_or_init(|| table))
    }

    /// Every checked-in table's version, oldest first.
    pub fn versions() -> impl Iterator<Item = (u8, u8)> {
        TABLES.iter().map(|(minor, _)| (3, *minor))
    }

    pub fn op(&self, number: u8) -> Option<&OpInfo> {
        self.ops[number as usize].as_ref()
    }

    pub fn number(&self, name: &str) -> Option<u8> {
        self.by_name.get(name).copied()
    }

    /// The numbers of `count` opcodes named by `name_of` (None where this version has no
    /// such opcode), looked up by name once per table: lowering's opcodes (the canonical
    /// opcodes' names, then the raw names its rules write), the one list every call gives
    /// (a lookup by name per instruction lowered cost a tenth of it).
    pub(crate) fn numbers_by_index(
        &self,
        count: usize,
        name_of: impl Fn(usize) -> &'static str,
    ) -> &[Option<u8>] {
        let numbers = self
            .by_index
            .get_or_init(|| (0..count).map(|index| self.number(name_of(index))).collect());
        debug_assert_eq!(numbers.len(), count, "numbers_by_index serves one list of names");
        numbers
    }

    pub fn has(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The opcode named `name`, which the caller's rule requires this version to have.
    pub fn require(&self, name: &str) -> Result<u8> {
        self.number(name)
            .ok_or_else(|| Error::CannotLower(format!("CPython {}.{} has no {name}", self.major, self.minor)))
    }

    /// The name of `value` in enumeration `kind`.
    pub fn enum_name(&self, kind: &str, value: u32) -> Option<&&'static str> {
        let entries = self.enums.get(kind)?;
        entries.iter().find(|(v, _)| *v == value).map(|(_, n)| n)
    }

    /// The value named `name` in enumeration `kind`.
    pub fn enum_value(&self, kind: &str, name: &str) -> Option<u32> {
        let entries = self.enums.get(kind)?;
        entries.iter().find(|(_, n)| *n == name).map(|(v, _)| *v)
    }

    /// The values of enumeration `kind`, in value order.
    pub fn enum_entries(&self, kind: &str) -> &[(u32, &'static str)] {
        self.enums.get(kind).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn parse(text: &'static str) -> Result<Table> {
        let mut props: WordMap<&str, &str> = WordMap::default();
        let mut enums: WordMap<String, Vec<(u32, &'static str)>> = WordMap::default();
        let mut ops: Vec<Option<OpInfo>> = vec![None; 256];
        let mut by_name = WordMap::default();
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            let bad = |why: String| Error::BadTable { line: line_no, why };
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split(' ').collect();
            match fields[0] {
                "enum" => {
                    let [_, kind, value, name] = fields[..] else {
                        return Err(bad("an enum line has 4 fields".into()));
                    };
                    let value = value
                        .parse()
                        .map_err(|_| bad(format!("bad enum value {value:?}")))?;
                    enums.entry(kind.to_owned()).or_default().push((value, name));
                }
                "op" => {
                    let info = parse_op(&fields).map_err(bad)?;
                    let number = info.number as usize;
                    if ops[number].is_some() || by_name.insert(info.name.clone(), info.number).is_some() {
                        return Err(bad(format!("{} listed twice", info.name)));
                    }
                    ops[number] = Some(info);
                }
                key => {
                    let [_, value] = fields[..] else {
                        return Err(bad(format!("property {key} has one value")));
                    };
                    props.insert(key, value);
                }
            }
        }
        let prop = |key: &str| -> Result<&str> {
            props.get(key).copied().ok_or(Error::BadTable {
                line: 0,
                why: format!("no {key} line"),
            })
        };
        let bad_prop = |key: &str, value: &str| Error::BadTable {
            line: 0,
            why: format!("{key} {value}?"),
        };
        let number = |key: &str| -> Result<u32> {
            let value = prop(key)?;
            value.parse().map_err(|_| bad_prop(key, value))
        };
        let optional = |key: &str| -> Result<Option<u32>> {
            match prop(key)? {
                "-" => Ok(None),
                value => value.parse().map(Some).map_err(|_| bad_prop(key, value)),
            }
        };
        let choice = |key: &str, choices: &[&str]| -> Result<usize> {
            let value = prop(key)?;
            choices
                .iter()
                .position(|c| *c == value)
                .ok_or_else(|| bad_prop(key, value))
        };
        let version = prop("version")?;
        let (major, minor) = version
            .split_once('.')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            .ok_or_else(|| bad_prop("version", version))?;
        let byte = |value: u32, key: &str| u8::try_from(value).map_err(|_| bad_prop(key, &value.to_string()));
        Ok(Table {
            major,
            minor,
            magic: u16::try_from(number("magic")?).map_err(|_| bad_prop("magic", "?"))?,
            extended_arg: byte(number("extended_arg")?, "extended_arg")?,
            cache: optional("cache")?.map(|c| byte(c, "cache")).transpose()?,
            jump_unit: [JumpUnit::Bytes, JumpUnit::CodeUnits][choice("jump_unit", &["bytes", "units"])?],
            line_table: [
                LineTableFormat::Lnotab,
                LineTableFormat::Pep626,
                LineTableFormat::Pep657,
            ][choice("line_table", &["lnotab", "pep626", "pep657"])?],
            merged_location_runs: choice("location_entries", &["-", "per_instruction", "merged"])? == 2,
            exceptions: [ExceptionModel::BlockStack, ExceptionModel::Table]
                [choice("exceptions", &["block_stack", "table"])?],
            deref_index: [DerefIndex::CellFree, DerefIndex::LocalsPlus]
                [choice("deref_index", &["cell_free", "localsplus"])?],
            call_layout: [
                CallLayout::Plain,
                CallLayout::NullFirst,
                CallLayout::CallableFirst,
            ][choice("call_layout", &["plain", "null_first", "callable_first"])?],
            compare_shift: number("compare_shift")?,
            compare_bool_bit: optional("compare_bool_bit")?,
            iterator_slots: match number("iterator_slots")? {
                slots @ 1..=2 => slots,
                other => return Err(bad_prop("iterator_slots", &other.to_string())),
            },
            enums,
            ops,
            by_name,
            by_index: OnceLock::new(),
        })
    }
}

fn parse_op(fields: &[&str]) -> std::result::Result<OpInfo, String> {
    let [_, name, number, caches, arg, effect, jump_effect, flags] = fields[..] else {
        return Err(format!("an op line has 8 fields, not {}", fields.len()));
    };
    let number = number
        .parse()
        .map_err(|_| format!("{name}: bad number {number:?}"))?;
    let caches = caches
        .parse()
        .map_err(|_| format!("{name}: bad cache count {caches:?}"))?;
    let arg = match arg {
        "-" => ArgKind::None,
        "const" => ArgKind::Const,
        "name" => ArgKind::Name { shift: 0 },
        "name>>1" => ArgKind::Name { shift: 1 },
        "name>>2" => ArgKind::Name { shift: 2 },
        "local" => ArgKind::Local,
        "local_pair" => ArgKind::LocalPair,
        "deref" => ArgKind::Deref,
        "jump_forward" => ArgKind::JumpForward,
        "jump_backward" => ArgKind::JumpBackward,
        "jump_absolute" => ArgKind::JumpAbsolute,
        "small_int" => ArgKind::SmallInt,
        "int" => ArgKind::Int,
        other => match other.strip_prefix("enum:") {
            Some(kind) => ArgKind::Enum(kind.to_owned()),
            None => return Err(format!("{name}: unknown argument kind {other:?}")),
        },
    };
    let effect = match effect {
        "?" => None,
        text => Some(Expr::parse(text).map_err(|why| format!("{name}: {why}"))?),
    };
    let jump_effect = match jump_effect {
        "=" => None,
        text => Some(Expr::parse(text).map_err(|why| format!("{name}: {why}"))?),
    };
    let mut info = OpInfo {
        name: name.to_owned(),
        number,
        caches,
        arg,
        effect,
        jump_effect,
        terminator: false,
        null_bit: false,
        bool_operand: false,
        borrow: false,
        internal: false,
    };
    if flags != "-" {
        for flag in flags.split(',') {
            match flag {
                "terminator" => info.terminator = true,
                "null_bit" => info.null_bit = true,
                "bool_operand" => info.bool_operand = true,
                "borrow" => info.borrow = true,
                "internal" => info.internal = true,
                other => return Err(format!("{name}: unknown flag {other:?}")),
            }
        }
    }
    Ok(info)
}
