//! The one error type: what was wrong with the input, in words a user can act on.

use std::fmt;

/// Why bytecode could not be decoded, raised, lowered or assembled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// No opcode table for this CPython version.
    UnsupportedVersion { major: u8, minor: u8 },
    /// `co_code` has an odd length or ends inside an instruction, its prefixes or caches.
    Truncated { offset: usize, what: &'static str },
    /// A byte that is not an opcode of this version (or one that never appears in `co_code`).
    UnknownOpcode { offset: usize, opcode: u8 },
    /// A jump whose target is outside the code or not the start of an instruction.
    BadJump { offset: usize, target: i64 },
    /// An argument that indexes past its table (constants, names, locals, cells) or has no meaning.
    BadArgument {
        offset: usize,
        name: &'static str,
        arg: u32,
        why: String,
    },
    /// A malformed `co_exceptiontable`.
    BadExceptionTable(String),
    /// A malformed line table (`co_lnotab` / `co_linetable`).
    BadLineTable(String),
    /// The stack would underflow, or grow without bound, on some path.
    BadStack { offset: usize, why: String },
    /// A canonical instruction sequence that the running version cannot express.
    CannotLower(String),
    /// An opcode table that does not follow `tables/FORMAT.md` (a bug in a checked-in table).
    BadTable { line: usize, why: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnsupportedVersion { major, minor } => {
                write!(
                    f,
                    "no bytecode table for CPython {major}.{minor} (framehook supports 3.9 to 3.15)"
                )
            }
            Error::Truncated { offset, what } => write!(f, "bytecode truncated at byte {offset}: {what}"),
            Error::UnknownOpcode { offset, opcode } => {
                write!(f, "unknown opcode {opcode} at byte {offset}")
            }
            Error::BadJump { offset, target } => write!(
                f,
                "jump at byte {offset} targets byte {target}, which is not the start of an instruction"
            ),
            Error::BadArgument {
                offset,
                name,
                arg,
                why,
            } => {
                write!(f, "{name} at byte {offset}: argument {arg} {why}")
            }
            Error::BadExceptionTable(why) => write!(f, "malformed exception table: {why}"),
            Error::BadLineTable(why) => write!(f, "malformed line table: {why}"),
            Error::BadStack { offset, why } => write!(f, "stack {why} at byte {offset}"),
            Error::CannotLower(why) => write!(f, "cannot assemble: {why}"),
            Error::BadTable { line, why } => write!(f, "opcode table, line {line}: {why}"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
