//! Line tables: 3.9 `co_lnotab`, 3.10 PEP 626 `co_linetable`, 3.11+ PEP 657 locations
//! (`Objects/lnotab_notes.txt`, `Objects/locations.md`). Decoding gives the runs of code
//! units that share a location; encoding writes what CPython's assembler writes for the
//! same locations.

use crate::error::{Error, Result};
use crate::table::LineTableFormat;

/// Where an instruction comes from; -1 where unknown (3.9 and 3.10 know only the line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Location {
    pub line: i32,
    pub end_line: i32,
    pub col: i32,
    pub end_col: i32,
}

impl Location {
    pub const NONE: Location = Location {
        line: -1,
        end_line: -1,
        col: -1,
        end_col: -1,
    };

    pub fn line(line: i32) -> Location {
        Location {
            line,
            ..Location::NONE
        }
    }
}

/// The code units' locations, as runs that share one: each run's end (the unit after its
/// last) and location, in order.
#[derive(Debug)]
pub struct Runs(Vec<(usize, Location)>);

impl Runs {
    /// The end of the last run: the units before it have a location.
    fn end(&self) -> usize {
        self.0.last().map_or(0, |(end, _)| *end)
    }

    /// The units up to `until_unit` (those no run covers yet) have `location`.
    fn fill(&mut self, until_unit: usize, location: Location) {
        if until_unit > self.end() {
            self.0.push((until_unit, location));
        }
    }

    /// A reader of the units' locations in increasing unit order.
    pub fn reader(&self) -> RunReader<'_> {
        RunReader {
            runs: &self.0,
            run: 0,
        }
    }
}

/// Reads [`Runs`] at units that never decrease.
pub struct RunReader<'a> {
    runs: &'a [(usize, Location)],
    run: usize,
}

impl RunReader<'_> {
    /// The location of `unit`, no smaller than the unit asked before; none past the table.
    pub fn at(&mut self, unit: usize) -> Location {
        while self.runs.get(self.run).is_some_and(|(end, _)| *end <= unit) {
            self.run += 1;
        }
        self.runs
            .get(self.run)
            .map_or(Location::NONE, |(_, location)| *location)
    }
}

/// The locations of a code's `units` code units.
pub fn decode(format: LineTableFormat, table: &[u8], first_line: i32, units: usize) -> Result<Runs> {
    // An entry per instruction at most (3.11+; each of two bytes or more).
    let mut runs = Runs(Vec::with_capacity(table.len() / 2 + 1));
    match format {
        LineTableFormat::Lnotab => decode_lnotab(table, first_line, units, &mut runs),
        LineTableFormat::Pep626 => decode_pep626(table, first_line, &mut runs),
        LineTableFormat::Pep657 => decode_pep657(table, first_line, units, &mut runs)?,
    }
    Ok(runs)
}

fn decode_lnotab(table: &[u8], first_line: i32, units: usize, runs: &mut Runs) {
    let mut line = first_line;
    let mut address = 0usize;
    for pair in table.chunks_exact(2) {
        address += usize::from(pair[0]);
        runs.fill(address / 2, Location::line(line));
        line += i32::from(pair[1] as i8);
    }
    runs.fill(units, Location::line(line));
}

fn decode_pep626(table: &[u8], first_line: i32, runs: &mut Runs) {
    let mut line = first_line;
    let mut address = 0usize;
    for pair in table.chunks_exact(2) {
        let location = match pair[1] as i8 {
            -128 => Location::NONE,
            delta => {
                line += i32::from(delta);
                Location::line(line)
            }
        };
        address += usize::from(pair[0]);
        runs.fill(address / 2, location);
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8> {
        let byte = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| Error::BadLineTable("truncated entry".into()))?;
        self.pos += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<u32> {
        let mut byte = self.byte()?;
        let mut value = u32::from(byte & 63);
        let mut shift = 0;
        while byte & 64 != 0 {
            byte = self.byte()?;
            shift += 6;
            if shift > 30 {
                return Err(Error::BadLineTable("varint out of range".into()));
            }
            value |= u32::from(byte & 63) << shift;
        }
        Ok(value)
    }

    fn signed_varint(&mut self) -> Result<i32> {
        let value = self.varint()?;
        let magnitude = (value >> 1) as i32;
        Ok(if value & 1 != 0 { -magnitude } else { magnitude })
    }
}

fn decode_pep657(table: &[u8], first_line: i32, units: usize, runs: &mut Runs) -> Result<()> {
    let mut reader = Reader { bytes: table, pos: 0 };
    let mut line = first_line;
    while reader.pos < table.len() {
        let first = reader.byte()?;
        if first & 0x80 == 0 {
            return Err(Error::BadLineTable(format!(
                "byte {} does not start an entry",
                reader.pos - 1
            )));
        }
        let code = (first >> 3) & 15;
        let length = usize::from(first & 7) + 1;
        let location = match code {
            0..=9 => {
                let second = reader.byte()?;
                let col = i32::from(code) * 8 + i32::from(second >> 4);
                Location {
                    line,
                    end_line: line,
                    col,
                    end_col: col + i32::from(second & 15),
                }
            }
            10..=12 => {
                line += i32::from(code) - 10;
                let col = i32::from(reader.byte()?);
                let end_col = i32::from(reader.byte()?);
                Location {
                    line,
                    end_line: line,
                    col,
                    end_col,
                }
            }
            13 => {
                line += reader.signed_varint()?;
                Location {
                    line,
                    end_line: line,
                    col: -1,
                    end_col: -1,
                }
            }
            14 => {
                line += reader.signed_varint()?;
                let end_line = line + reader.varint()? as i32;
                let col = reader.varint()? as i32 - 1;
                let end_col = reader.varint()? as i32 - 1;
                Location {
                    line,
                    end_line,
                    col,
                    end_col,
                }
            }
            _ => Location::NONE,
        };
        // Entries past the code are ignored, as CPython ignores them.
        runs.fill((runs.end() + length).min(units), location);
    }
    Ok(())
}

/// 3.9: `(code unit, line)` for each entry of the table that changes the line; other
/// formats give none. Several at one unit are lines the table steps through without covering
/// a code unit (CPython 3.9's peephole optimiser leaves them when it removes instructions,
/// also past the last instruction).
pub fn lnotab_line_changes(format: LineTableFormat, table: &[u8], first_line: i32) -> Vec<(usize, i32)> {
    if format != LineTableFormat::Lnotab {
        return Vec::new();
    }
    let mut line = first_line;
    let mut address = 0usize;
    let mut changes: Vec<(usize, i32)> = Vec::new();
    // Whether the last entry was a step of a change too large for one entry (the assembler
    // writes 127 or -128 steps, then the rest, zero included, at the same address).
    let mut splitting = false;
    for pair in table.chunks_exact(2) {
        let delta = i32::from(pair[1] as i8);
        address += usize::from(pair[0]);
        line += delta;
        if splitting && pair[0] == 0 {
            if let Some(last) = changes.last_mut() {
                last.1 = line;
            }
        } else if delta != 0 && address % 2 == 0 {
            changes.push((address / 2, line));
        }
        splitting = delta == 127 || delta == -128;
    }
    changes
}

/// One instruction for the encoder: its location, size and (3.9) passed lines.
pub struct Run<'a> {
    pub location: Location,
    pub units: usize,
    pub passed_lines: &'a [i32],
}

/// The table for instructions described by `runs`.
pub fn encode(
    format: LineTableFormat,
    first_line: i32,
    runs: &[Run<'_>],
    end_lines: &[i32],
    merge_runs: bool,
) -> Vec<u8> {
    match format {
        LineTableFormat::Lnotab => encode_lnotab(first_line, runs, end_lines),
        LineTableFormat::Pep626 => encode_pep626(first_line, runs),
        LineTableFormat::Pep657 => encode_pep657(first_line, runs, merge_runs),
    }
}

/// 3.9's `assemble_lnotab`: a pair at each instruction whose line differs from the last.
fn encode_lnotab(first_line: i32, runs: &[Run<'_>], end_lines: &[i32]) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut last_line, mut last_offset, mut offset) = (first_line, 0usize, 0usize);
    let end = Run {
        location: Location::NONE,
        units: 0,
        passed_lines: end_lines,
    };
    for run in runs.iter().chain([&end]) {
        for &line in run.passed_lines.iter().chain([&run.location.line]) {
            if line <= 0 || line == last_line {
                continue;
            }
            let mut bytes = (offset - last_offset) * 2;
            let mut delta = line - last_line;
            while bytes > 255 {
                out.extend([255, 0]);
                bytes -= 255;
            }
            if !(-128..=127).contains(&delta) {
                let step = if delta < 0 { -128 } else { 127 };
                let count = delta / step;
                delta -= count * step;
                for _ in 0..count {
                    out.extend([bytes as u8, step as i8 as u8]);
                    bytes = 0;
                }
            }
            out.extend([bytes as u8, delta as i8 as u8]);
            last_line = line;
            last_offset = offset;
        }
        offset += run.units;
    }
    out
}

/// 3.10's `assemble_line_range`: one range per change of line, -128 for no line.
fn encode_pep626(first_line: i32, runs: &[Run<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut line, mut previous_line, mut start, mut offset) = (first_line, first_line, 0usize, 0usize);
    let close_range = |out: &mut Vec<u8>, line: i32, start: usize, offset: usize, previous_line: &mut i32| {
        let mut bytes = (offset - start) * 2;
        if bytes == 0 {
            return;
        }
        let mut delta = if line < 0 {
            -128
        } else {
            let mut delta = line - *previous_line;
            *previous_line = line;
            while delta > 127 {
                out.extend([0, 127]);
                delta -= 127;
            }
            while delta < -127 {
                out.extend([0, (-127i8) as u8]);
                delta += 127;
            }
            delta
        };
        while bytes > 254 {
            out.extend([254, delta as i8 as u8]);
            delta = if line < 0 { -128 } else { 0 };
            bytes -= 254;
        }
        out.extend([bytes as u8, delta as i8 as u8]);
    };
    for run in runs {
        if run.location.line != line {
            close_range(&mut out, line, start, offset, &mut previous_line);
            start = offset;
            line = run.location.line;
        }
        offset += run.units;
    }
    close_range(&mut out, line, start, offset, &mut previous_line);
    out
}

fn write_varint(out: &mut Vec<u8>, mut value: u32) {
    while value >= 64 {
        out.push(64 | (value & 63) as u8);
        value >>= 6;
    }
    out.push(value as u8);
}

fn write_signed_varint(out: &mut Vec<u8>, value: i32) {
    write_varint(
        out,
        if value < 0 {
            (value.unsigned_abs() << 1) | 1
        } else {
            (value as u32) << 1
        },
    );
}

/// 3.11+ `write_location_info_entry`: the shortest form that holds the location.
fn write_pep657_entry(out: &mut Vec<u8>, current_line: &mut i32, location: Location, units: usize) {
    let start = |code: u8| 0x80 | (code << 3) | (units as u8 - 1);
    if location.line < 0 {
        out.push(start(15));
        return;
    }
    let delta = location.line - *current_line;
    let Location {
        line,
        end_line,
        col,
        end_col,
    } = location;
    if col < 0 || end_col < 0 {
        if end_line == line || end_line < 0 {
            out.push(start(13));
            write_signed_varint(out, delta);
            *current_line = line;
            return;
        }
    } else if end_line == line {
        if delta == 0 && col < 80 && end_col - col < 16 && end_col >= col {
            out.extend([
                start((col >> 3) as u8),
                (((col & 7) << 4) | (end_col - col)) as u8,
            ]);
            return;
        }
        if (0..3).contains(&delta) && col < 128 && end_col < 128 {
            out.extend([start(10 + delta as u8), col as u8, end_col as u8]);
            *current_line = line;
            return;
        }
    }
    out.push(start(14));
    write_signed_varint(out, delta);
    write_varint(out, (end_line - line) as u32);
    write_varint(out, (col + 1) as u32);
    write_varint(out, (end_col + 1) as u32);
    *current_line = line;
}

fn encode_pep657(first_line: i32, runs: &[Run<'_>], merge_runs: bool) -> Vec<u8> {
    // Most instructions take an entry of two bytes.
    let mut out = Vec::with_capacity(2 * runs.len() + 8);
    let mut current_line = first_line;
    let mut emit = |out: &mut Vec<u8>, location: Location, mut units: usize| {
        while units > 8 {
            write_pep657_entry(out, &mut current_line, location, 8);
            units -= 8;
        }
        if units > 0 {
            write_pep657_entry(out, &mut current_line, location, units);
        }
    };
    let mut pending: Option<(Location, usize)> = None;
    for &Run {
        location,
        units: size,
        ..
    } in runs
    {
        match &mut pending {
            Some((open, units)) if merge_runs && *open == location => *units += size,
            _ => {
                if let Some((open, units)) = pending.take() {
                    emit(&mut out, open, units);
                }
                pending = Some((location, size));
            }
        }
    }
    if let Some((open, units)) = pending {
        emit(&mut out, open, units);
    }
    out
}
