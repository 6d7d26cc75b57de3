//! The running version's own instructions: `co_code` with `EXTENDED_ARG` folded into the
//! argument, caches dropped, jumps resolved to instruction indices, every instruction with
//! its exception handler and location; and back to bytes.

use crate::error::{Error, Result};
use crate::exceptions;
use crate::linetable::{self, Location};
use crate::stack;
use crate::table::{ArgKind, DerefIndex, ExceptionModel, JumpUnit, OpInfo, Table};

/// Where an exception raised by an instruction goes (3.11+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handler {
    /// Index of the handler's first instruction.
    pub target: usize,
    /// Stack depth to unwind to, before `lasti` and the exception are pushed.
    pub depth: u32,
    /// Whether the offset of the raising instruction is pushed first.
    pub lasti: bool,
}

/// One instruction of the running version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instr {
    pub opcode: u8,
    /// The whole argument (`EXTENDED_ARG` prefixes folded in); for jumps, recomputed from
    /// `target` when encoding.
    pub arg: u32,
    /// For jumps: index of the target instruction.
    pub target: Option<usize>,
    pub handler: Option<Handler>,
    pub location: Location,
    /// `EXTENDED_ARG` prefixes the instruction had, which encoding keeps even where fewer
    /// would do (CPython 3.9's peephole optimiser leaves such prefixes when jumps shrink).
    pub prefixes: u8,
}

// Decoding writes one per instruction of every code read, and lowering one per instruction
// of every code made: what only some of 3.9's codes need lives in `Code`.
const _: () = assert!(std::mem::size_of::<Instr>() <= 56);

impl Instr {
    pub fn new(
        opcode: u8,
        arg: u32,
        target: Option<usize>,
        handler: Option<Handler>,
        location: Location,
    ) -> Instr {
        Instr {
            opcode,
            arg,
            target,
            handler,
            location,
            prefixes: 0,
        }
    }
}

/// A code object's instructions, and what of its line table their locations do not tell
/// (few codes have any: kept beside the instructions, by index, not in each one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Code {
    pub instrs: Vec<Instr>,
    /// 3.9: per instruction index (increasing), the lines the line table steps through at
    /// the instruction's offset before its own (the peephole optimiser leaves them when it
    /// removes instructions).
    pub passed_lines: Vec<(usize, Vec<i32>)>,
    /// Per instruction index (increasing): where its `EXTENDED_ARG` prefixes come from,
    /// where that differs from its location (3.9's peephole optimiser can leave a line
    /// change between a prefix and its instruction).
    pub prefix_locations: Vec<(usize, Location)>,
    /// 3.9: lines the line table steps through after the last instruction.
    pub end_lines: Vec<i32>,
}

impl Code {
    /// Instructions whose locations tell the whole line table.
    pub fn new(instrs: Vec<Instr>) -> Code {
        Code {
            instrs,
            ..Code::default()
        }
    }
}

/// The parts of a code object the bytecode lives in.
#[derive(Debug, Clone, Copy)]
pub struct CodeBytes<'a> {
    pub code: &'a [u8],
    /// `co_exceptiontable` (empty before 3.11).
    pub exception_table: &'a [u8],
    /// `co_lnotab` (3.9) or `co_linetable`.
    pub line_table: &'a [u8],
    pub first_line: i32,
    /// How many entries the tables instructions index have, to refuse arguments past them.
    pub sizes: TableSizes,
}

/// The lengths of a code object's `co_consts`, `co_names`, `co_varnames`, and cell plus
/// free variables (`co_cellvars + co_freevars`, and the locals-plus array they extend).
#[derive(Debug, Clone, Copy, Default)]
pub struct TableSizes {
    pub consts: u32,
    pub names: u32,
    pub varnames: u32,
    pub cells_and_frees: u32,
    pub locals_plus: u32,
}

/// What `encode` produces: the replacement's `co_code`, `co_exceptiontable`, line table and
/// `co_stacksize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assembled {
    pub code: Vec<u8>,
    pub exception_table: Vec<u8>,
    pub line_table: Vec<u8>,
    pub stack_size: u32,
}

/// `decode`'s mark of a code unit no instruction starts at.
const NOT_A_START: u32 = u32::MAX;

/// Size in code units of an argument's `EXTENDED_ARG` prefixes.
fn prefix_units(arg: u32) -> usize {
    match arg {
        0..=0xff => 0,
        0x100..=0xffff => 1,
        0x1_0000..=0xff_ffff => 2,
        _ => 3,
    }
}

/// The prefixes an instruction is encoded with: as many as its argument needs, and at least
/// as many as it had.
fn prefixes(instr: &Instr, arg: u32) -> usize {
    prefix_units(arg).max(usize::from(instr.prefixes))
}

fn op_info(table: &Table, opcode: u8, offset: usize) -> Result<&OpInfo> {
    match table.op(opcode) {
        Some(info) if info.effect.is_some() && !info.internal => Ok(info),
        _ => Err(Error::UnknownOpcode { offset, opcode }),
    }
}

/// Each instruction's opcode information (an error names the first unknown opcode's index).
fn op_infos<'t>(table: &'t Table, instrs: &[Instr]) -> Result<Vec<&'t OpInfo>> {
    // A plain loop: collecting into a `Result` grows the vector from nothing.
    let mut infos = Vec::with_capacity(instrs.len());
    for (index, instr) in instrs.iter().enumerate() {
        infos.push(op_info(table, instr.opcode, index)?);
    }
    Ok(infos)
}

/// The jump target in code units of a jump that starts at `start` and ends (caches
/// included) at `next`, or `None` when it would be before the code.
fn jump_target(table: &Table, kind: &ArgKind, arg: u32, next: usize) -> Option<i64> {
    let units = match table.jump_unit {
        JumpUnit::Bytes if arg % 2 != 0 => return None,
        JumpUnit::Bytes => i64::from(arg / 2),
        JumpUnit::CodeUnits => i64::from(arg),
    };
    Some(match kind {
        ArgKind::JumpForward => next as i64 + units,
        ArgKind::JumpBackward => next as i64 - units,
        _ => units,
    })
}

/// Refuses an argument that indexes past its table.
fn check_argument(table: &Table, info: &OpInfo, arg: u32, sizes: TableSizes, offset: usize) -> Result<()> {
    let locals = match table.deref_index {
        DerefIndex::CellFree => sizes.varnames,
        DerefIndex::LocalsPlus => sizes.locals_plus,
    };
    let (index, limit, what) = match info.arg {
        ArgKind::Const => (arg, sizes.consts, "co_consts"),
        ArgKind::Name { shift } => (arg >> shift, sizes.names, "co_names"),
        ArgKind::Local => (arg, locals, "the local variables"),
        ArgKind::LocalPair => ((arg >> 4).max(arg & 15), locals, "the local variables"),
        ArgKind::Deref => match table.deref_index {
            DerefIndex::CellFree => (arg, sizes.cells_and_frees, "the cell and free variables"),
            DerefIndex::LocalsPlus => (arg, sizes.locals_plus, "the variables"),
        },
        _ => return Ok(()),
    };
    if index < limit {
        return Ok(());
    }
    Err(Error::BadArgument {
        offset,
        name: "instruction",
        arg,
        why: format!("({}) indexes past {what} ({limit})", info.name),
    })
}

/// Decodes `co_code` and its tables.
pub fn decode(table: &Table, bytes: CodeBytes<'_>) -> Result<Code> {
    let code = bytes.code;
    if code.len() % 2 != 0 {
        return Err(Error::Truncated {
            offset: code.len() - 1,
            what: "odd length",
        });
    }
    let units = code.len() / 2;
    // Per code unit: the index of the instruction that starts there (prefixes included),
    // or `NOT_A_START`.
    let mut starts: Vec<u32> = vec![NOT_A_START; units + 1];
    let instr_at = |starts: &[u32], unit: usize| starts.get(unit).copied().filter(|&i| i != NOT_A_START);
    // At most one instruction per code unit.
    let mut instrs = Vec::with_capacity(units);
    // Per instruction: its first code unit (prefixes included).
    let mut first_units: Vec<u32> = Vec::with_capacity(units);
    // Each jump's instruction index, argument kind and the unit after its caches: resolved
    // once every instruction's start is known.
    let mut jumps: Vec<(usize, &ArgKind, usize)> = Vec::new();
    let mut unit = 0;
    while unit < units {
        let start = unit;
        let mut arg: u32 = 0;
        loop {
            let (opcode, byte) = (code[2 * unit], code[2 * unit + 1]);
            arg = arg << 8 | u32::from(byte);
            if opcode != table.extended_arg {
                break;
            }
            unit += 1;
            if unit >= units {
                return Err(Error::Truncated {
                    offset: 2 * start,
                    what: "EXTENDED_ARG without an instruction",
                });
            }
            if unit - start > 3 {
                return Err(Error::BadArgument {
                    offset: 2 * start,
                    name: "EXTENDED_ARG",
                    arg,
                    why: "is one of more than three prefixes".into(),
                });
            }
        }
        let opcode = code[2 * unit];
        let info = op_info(table, opcode, 2 * unit)?;
        let next = unit + 1 + usize::from(info.caches);
        if next > units {
            return Err(Error::Truncated {
                offset: 2 * unit,
                what: "inline caches cut off",
            });
        }
        check_argument(table, info, arg, bytes.sizes, 2 * unit)?;
        let index = instrs.len();
        if info.arg.is_jump() {
            jumps.push((index, &info.arg, next));
        }
        starts[start] = index as u32;
        first_units.push(start as u32);
        let mut instr = Instr::new(opcode, arg, None, None, Location::NONE);
        instr.prefixes = (unit - start) as u8;
        instrs.push(instr);
        unit = next;
    }
    for (index, kind, next) in jumps {
        let instr = &mut instrs[index];
        let offset = 2 * (first_units[index] as usize + usize::from(instr.prefixes));
        let bad = |target: i64| Error::BadJump { offset, target };
        let target = jump_target(table, kind, instr.arg, next).ok_or(bad(-1))?;
        let target_index = usize::try_from(target).ok().and_then(|t| instr_at(&starts, t));
        instr.target = Some(target_index.ok_or(bad(2 * target))? as usize);
    }
    if table.exceptions == ExceptionModel::Table {
        for entry in exceptions::decode(bytes.exception_table)? {
            let at = |unit: u32| instr_at(&starts, unit as usize).map(|i| i as usize);
            let bad = |what: &str, unit: u32| {
                Error::BadExceptionTable(format!(
                    "{what} at code unit {unit} is not the start of an instruction"
                ))
            };
            let first = at(entry.start).ok_or_else(|| bad("entry start", entry.start))?;
            if entry.end as usize != units && at(entry.end).is_none() {
                return Err(bad("entry end", entry.end));
            }
            let target = at(entry.target).ok_or_else(|| bad("handler", entry.target))?;
            let handler = Handler {
                target,
                depth: entry.depth,
                lasti: entry.lasti,
            };
            for (instr, &start) in instrs[first..].iter_mut().zip(&first_units[first..]) {
                if start >= entry.end {
                    break;
                }
                instr.handler = Some(handler);
            }
        }
    } else if !bytes.exception_table.is_empty() {
        return Err(Error::BadExceptionTable(
            "this version has no exception table".into(),
        ));
    }
    let runs = linetable::decode(table.line_table, bytes.line_table, bytes.first_line, units)?;
    let mut locations = runs.reader();
    let changes = linetable::lnotab_line_changes(table.line_table, bytes.line_table, bytes.first_line);
    let mut changes = changes.iter().peekable();
    let (mut passed_lines, mut prefix_locations) = (Vec::new(), Vec::new());
    for (index, (instr, &start)) in instrs.iter_mut().zip(&first_units).enumerate() {
        let start = start as usize;
        // Read in increasing unit order (the reader only moves forward).
        let prefix_location = (instr.prefixes > 0).then(|| locations.at(start));
        instr.location = locations.at(start + usize::from(instr.prefixes));
        if let Some(prefix_location) = prefix_location.filter(|l| *l != instr.location) {
            prefix_locations.push((index, prefix_location));
        }
        let mut passed = Vec::new();
        while let Some(&(unit, line)) = changes.next_if(|(unit, _)| *unit <= start) {
            // All but the last change at the instruction's start are passed through.
            if unit == start && changes.peek().is_some_and(|(next, _)| *next == start) {
                passed.push(line);
            }
        }
        if !passed.is_empty() {
            passed_lines.push((index, passed));
        }
    }
    let end_lines = changes
        .filter(|(unit, _)| *unit == units)
        .map(|(_, line)| *line)
        .collect();
    Ok(Code {
        instrs,
        passed_lines,
        prefix_locations,
        end_lines,
    })
}

/// Per instruction of decoded `code`: the stack's depth when it starts (None where no
/// path reaches it).
pub fn entry_depths(table: &Table, code: &Code) -> Result<Vec<Option<u32>>> {
    let instrs = &code.instrs[..];
    let infos = op_infos(table, instrs)?;
    let args: Vec<u32> = instrs.iter().map(|i| i.arg).collect();
    let mut starts = vec![0usize; instrs.len() + 1];
    for index in 0..instrs.len() {
        starts[index + 1] =
            starts[index] + prefixes(&instrs[index], args[index]) + 1 + usize::from(infos[index].caches);
    }
    stack::entry_depths(table, instrs, &infos, &args, &starts)
}

/// Encodes instructions: arguments of jumps from their targets, `EXTENDED_ARG` prefixes to
/// a fixed point, caches, exception table, line table and stack size.
pub fn encode(table: &Table, code: &Code, first_line: i32) -> Result<Assembled> {
    let instrs = &code.instrs[..];
    let infos = op_infos(table, instrs)?;
    for (index, instr) in instrs.iter().enumerate() {
        let is_jump = infos[index].arg.is_jump();
        if is_jump != instr.target.is_some() || instr.target.is_some_and(|t| t >= instrs.len()) {
            return Err(Error::BadJump {
                offset: index,
                target: instr.target.map_or(-1, |t| t as i64),
            });
        }
        if instr.handler.is_some_and(|h| h.target >= instrs.len()) {
            return Err(Error::BadExceptionTable(format!(
                "handler of instruction {index} is out of range"
            )));
        }
    }
    let mut args: Vec<u32> = instrs
        .iter()
        .map(|i| if i.target.is_some() { 0 } else { i.arg })
        .collect();
    // Start offsets (in code units, prefixes included), recomputed until no prefix grows.
    let mut starts = vec![0usize; instrs.len() + 1];
    loop {
        for index in 0..instrs.len() {
            starts[index + 1] =
                starts[index] + prefixes(&instrs[index], args[index]) + 1 + usize::from(infos[index].caches);
        }
        let mut changed = false;
        for (index, instr) in instrs.iter().enumerate() {
            let Some(target) = instr.target else { continue };
            let (next, to) = (starts[index + 1] as i64, starts[target] as i64);
            let units = match infos[index].arg {
                ArgKind::JumpForward => to - next,
                ArgKind::JumpBackward => next - to,
                _ => to,
            };
            if units < 0 {
                let direction = if infos[index].arg == ArgKind::JumpForward {
                    "forward"
                } else {
                    "backward"
                };
                return Err(Error::CannotLower(format!(
                    "{} at instruction {index} jumps {direction} only, but its target is instruction {target}",
                    infos[index].name
                )));
            }
            let arg = match table.jump_unit {
                JumpUnit::Bytes => units * 2,
                JumpUnit::CodeUnits => units,
            };
            let arg = u32::try_from(arg).map_err(|_| Error::CannotLower("jump too long".into()))?;
            if arg != args[index] {
                changed |= prefixes(instr, arg) != prefixes(instr, args[index]);
                args[index] = arg;
            }
        }
        if !changed {
            break;
        }
    }
    let total = starts[instrs.len()];
    let mut co_code = Vec::with_capacity(total * 2);
    for (index, &arg) in args.iter().enumerate() {
        for shift in (1..=prefixes(&instrs[index], arg)).rev() {
            co_code.extend([table.extended_arg, (arg >> (8 * shift)) as u8]);
        }
        co_code.extend([instrs[index].opcode, arg as u8]);
        for _ in 0..infos[index].caches {
            co_code.extend([table.cache.unwrap_or(0), 0]);
        }
    }
    let exception_table = match table.exceptions {
        ExceptionModel::Table => exceptions::encode(&exception_entries(instrs, &starts)),
        ExceptionModel::BlockStack => Vec::new(),
    };
    let mut runs: Vec<linetable::Run<'_>> = Vec::with_capacity(instrs.len());
    let (mut passed_next, mut prefix_next) = (0, 0);
    for (index, instr) in instrs.iter().enumerate() {
        let units = starts[index + 1] - starts[index];
        let passed_lines = entry_at(&code.passed_lines, &mut passed_next, index).map_or(&[][..], |l| &l[..]);
        match entry_at(&code.prefix_locations, &mut prefix_next, index).copied() {
            Some(prefix_location) => {
                let prefix_units = prefixes(instr, args[index]);
                runs.push(linetable::Run {
                    location: prefix_location,
                    units: prefix_units,
                    passed_lines,
                });
                runs.push(linetable::Run {
                    location: instr.location,
                    units: units - prefix_units,
                    passed_lines: &[],
                });
            }
            None => runs.push(linetable::Run {
                location: instr.location,
                units,
                passed_lines,
            }),
        }
    }
    // Each entry was taken at its instruction: none out of order, repeated or past the code.
    if passed_next != code.passed_lines.len() || prefix_next != code.prefix_locations.len() {
        return Err(Error::BadLineTable(
            "a passed-lines or prefix-location entry is out of order, repeated or past the code".into(),
        ));
    }
    let line_table = linetable::encode(
        table.line_table,
        first_line,
        &runs,
        &code.end_lines,
        table.merged_location_runs,
    );
    let stack_size = stack::max_depth(table, instrs, &infos, &args, &starts)?;
    Ok(Assembled {
        code: co_code,
        exception_table,
        line_table,
        stack_size,
    })
}

/// The entry of `entries` (by increasing instruction index) for instruction `index`, where
/// `next` is the first entry not yet taken: instructions are asked in increasing order.
fn entry_at<'a, T>(entries: &'a [(usize, T)], next: &mut usize, index: usize) -> Option<&'a T> {
    let (at, entry) = entries.get(*next)?;
    if *at != index {
        return None;
    }
    *next += 1;
    Some(entry)
}

/// Consecutive instructions with the same handler make one entry.
fn exception_entries(instrs: &[Instr], starts: &[usize]) -> Vec<exceptions::Entry> {
    let mut entries: Vec<exceptions::Entry> = Vec::new();
    let mut open: Option<(Handler, usize)> = None;
    for (index, instr) in instrs.iter().enumerate().chain([(instrs.len(), &END)]) {
        if open.map(|(h, _)| h) == instr.handler && index < instrs.len() {
            continue;
        }
        if let Some((handler, first)) = open.take() {
            entries.push(exceptions::Entry {
                start: starts[first] as u32,
                end: starts[index] as u32,
                target: starts[handler.target] as u32,
                depth: handler.depth,
                lasti: handler.lasti,
            });
        }
        open = instr.handler.map(|h| (h, index));
    }
    entries
}

/// The sentinel that closes the last entry.
const END: Instr = Instr {
    opcode: 0,
    arg: 0,
    target: None,
    handler: None,
    location: Location::NONE,
    prefixes: 0,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn op(table: &Table, name: &str, arg: u32, target: Option<usize>) -> Instr {
        let location = Location {
            line: 1,
            end_line: 1,
            col: 0,
            end_col: 4,
        };
        Instr::new(table.number(name).unwrap(), arg, target, None, location)
    }

    /// A forward jump over 300 instructions needs an `EXTENDED_ARG` prefix on every version,
    /// which moves everything after it; decoding the encoding gives the instructions back.
    #[test]
    fn long_jumps_get_prefixes_and_round_trip() {
        for (major, minor) in Table::versions() {
            let table = Table::for_version(major, minor).unwrap();
            let conditional = if table.has("POP_JUMP_FORWARD_IF_FALSE") {
                "POP_JUMP_FORWARD_IF_FALSE"
            } else {
                "POP_JUMP_IF_FALSE"
            };
            let mut instrs = vec![
                op(table, "LOAD_CONST", 0, None),
                op(table, conditional, 0, Some(302)),
            ];
            instrs.extend((0..300).map(|_| op(table, "NOP", 0, None)));
            instrs.push(op(table, "LOAD_CONST", 0, None));
            instrs.push(op(table, "RETURN_VALUE", 0, None));
            let code = Code::new(instrs);
            let assembled = encode(table, &code, 1).unwrap();
            assert_eq!(assembled.code[2], table.extended_arg, "3.{minor}");
            assert_eq!(assembled.stack_size, 1, "3.{minor}");
            let bytes = CodeBytes {
                code: &assembled.code,
                exception_table: &assembled.exception_table,
                line_table: &assembled.line_table,
                first_line: 1,
                sizes: TableSizes {
                    consts: 1,
                    ..TableSizes::default()
                },
            };
            let decoded = decode(table, bytes).unwrap();
            assert_eq!(decoded.instrs.len(), code.instrs.len(), "3.{minor}");
            assert_eq!(decoded.instrs[1].target, Some(302), "3.{minor}");
            assert!(decoded.instrs.iter().all(|i| i.location.line == 1), "3.{minor}");
        }
    }

    /// Every table with exception tables (3.11+).
    fn tables_with_exception_tables() -> impl Iterator<Item = &'static Table> {
        Table::versions()
            .map(|(major, minor)| Table::for_version(major, minor).unwrap())
            .filter(|table| table.exceptions == ExceptionModel::Table)
    }

    /// The handler's entry depth counts: depth + lasti + the exception.
    #[test]
    fn stack_size_follows_handler_edges() {
        for table in tables_with_exception_tables() {
            stack_size_with_handler(table);
        }
    }

    fn stack_size_with_handler(table: &Table) {
        let handler = Handler {
            target: 4,
            depth: 2,
            lasti: true,
        };
        let mut instrs = vec![
            op(table, "LOAD_CONST", 0, None),
            op(table, "LOAD_CONST", 0, None),
            op(table, "POP_TOP", 0, None),
            op(table, "RETURN_VALUE", 0, None),
            op(table, "RERAISE", 0, None),
        ];
        instrs[1].handler = Some(handler);
        let assembled = encode(table, &Code::new(instrs), 1).unwrap();
        assert_eq!(assembled.stack_size, 4);
        assert_eq!(exceptions::decode(&assembled.exception_table).unwrap().len(), 1);
    }

    /// An entry beside the instructions that no instruction takes is refused, not dropped.
    #[test]
    fn line_entries_past_the_code_are_an_error() {
        let table = tables_with_exception_tables().next().unwrap();
        let instrs = vec![
            op(table, "LOAD_CONST", 0, None),
            op(table, "RETURN_VALUE", 0, None),
        ];
        let mut code = Code::new(instrs);
        code.passed_lines.push((2, vec![3]));
        let error = encode(table, &code, 1).unwrap_err();
        assert!(matches!(error, Error::BadLineTable(_)), "{error}");
        code.passed_lines = vec![(1, vec![3]), (0, vec![2])];
        assert!(matches!(encode(table, &code, 1), Err(Error::BadLineTable(_))));
        code.passed_lines = vec![(0, vec![2]), (1, vec![3])];
        assert!(encode(table, &code, 1).is_ok());
    }

    #[test]
    fn stack_underflow_is_an_error() {
        let table = tables_with_exception_tables().next().unwrap();
        let instrs = vec![op(table, "POP_TOP", 0, None), op(table, "RETURN_VALUE", 0, None)];
        let error = encode(table, &Code::new(instrs), 1).unwrap_err();
        assert!(matches!(error, Error::BadStack { .. }), "{error}");
    }
}
