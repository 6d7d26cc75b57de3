//! `co_exceptiontable` (3.11+): entries `(start, length, target, depth << 1 | lasti)` in code
//! units, each a varint of 6-bit chunks, most significant first, 0x40 = more follow; the
//! first byte of an entry has 0x80 set (`Objects/exception_handling_notes.txt`).

use crate::error::{Error, Result};

/// One entry, in code units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub start: u32,
    pub end: u32,
    pub target: u32,
    pub depth: u32,
    pub lasti: bool,
}

pub fn decode(bytes: &[u8]) -> Result<Vec<Entry>> {
    let mut entries = Vec::new();
    let mut pos = 0;
    let read = |pos: &mut usize, first: bool| -> Result<u32> {
        let mut value: u32 = 0;
        let mut starts_entry = first;
        loop {
            let byte = *bytes
                .get(*pos)
                .ok_or_else(|| Error::BadExceptionTable("truncated entry".into()))?;
            if (byte & 0x80 != 0) != starts_entry {
                return Err(Error::BadExceptionTable(format!("byte {} is out of place", *pos)));
            }
            if value >= 1 << 24 {
                return Err(Error::BadExceptionTable("value out of range".into()));
            }
            starts_entry = false;
            *pos += 1;
            value = value << 6 | u32::from(byte & 0x3f);
            if byte & 0x40 == 0 {
                return Ok(value);
            }
        }
    };
    let mut previous_end = 0;
    while pos < bytes.len() {
        let start = read(&mut pos, true)?;
        let length = read(&mut pos, false)?;
        let target = read(&mut pos, false)?;
        let depth_lasti = read(&mut pos, false)?;
        let end = start
            .checked_add(length)
            .ok_or_else(|| Error::BadExceptionTable(format!("entry at unit {start} is too long")))?;
        if start < previous_end {
            return Err(Error::BadExceptionTable(format!(
                "entries overlap or are out of order at unit {start}"
            )));
        }
        previous_end = end;
        // An entry that covers nothing (the bytecode package writes one for an empty try
        // body; CPython's compiler never does) protects nothing: CPython ignores it, and so
        // does decoding.
        if length == 0 {
            continue;
        }
        entries.push(Entry {
            start,
            end,
            target,
            depth: depth_lasti >> 1,
            lasti: depth_lasti & 1 != 0,
        });
    }
    Ok(entries)
}

fn write_item(out: &mut Vec<u8>, value: u32, mut start_bit: u8) {
    for shift in [24, 18, 12, 6] {
        if value >= 1 << shift {
            out.push(((value >> shift) & 0x3f) as u8 | 0x40 | start_bit);
            start_bit = 0;
        }
    }
    out.push((value & 0x3f) as u8 | start_bit);
}

pub fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 4);
    for entry in entries {
        write_item(&mut out, entry.start, 0x80);
        write_item(&mut out, entry.end - entry.start, 0);
        write_item(&mut out, entry.target, 0);
        write_item(&mut out, entry.depth << 1 | u32::from(entry.lasti), 0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_large_values() {
        let entries = [
            Entry {
                start: 0,
                end: 4,
                target: 70,
                depth: 1,
                lasti: true,
            },
            Entry {
                start: 4,
                end: 5000,
                target: 300_000,
                depth: 40,
                lasti: false,
            },
        ];
        let bytes = encode(&entries);
        assert_eq!(decode(&bytes).unwrap(), entries);
    }

    #[test]
    fn refuses_garbage() {
        assert!(decode(&[0x01]).is_err());
        assert!(decode(&[0x80, 0x02]).is_err());
        assert!(decode(&[0x80, 0x02, 0x01, 0x00, 0x80, 0x01, 0x01, 0x01, 0x00]).is_err());
        // Empty entries protect nothing and are left out.
        assert_eq!(decode(&[0x80, 0x00, 0x01, 0x00]).unwrap(), []);
    }
}
