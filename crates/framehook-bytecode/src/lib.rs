//! framehook's bytecode layer: CPython 3.9–3.15 bytecode as data.
//!
//! * [`table`]: one opcode table per CPython minor version, generated from the interpreter
//!   (`tables/`), the only place where versions differ apart from the rules in [`canonical`].
//! * [`raw`]: a code object's bytes become the version's own instructions (arguments whole,
//!   jumps and handlers resolved, locations attached) and back, byte for byte.
//! * [`canonical`]: one instruction set for every version, raised from and lowered to the
//!   running version's instructions.
//! * [`liveness`]: which local variables canonical code may still read, per instruction.
//! * [`loops`]: the loop around an instruction, and where control leaves it.
//! * [`reachable`]: canonical code without what no path from its entry reaches.
//!
//! No Python here: code objects come in as their byte strings and name lists.

pub mod canonical;
mod error;
pub mod exceptions;
mod expr;
pub mod linetable;
pub mod liveness;
pub mod loops;
pub mod raw;
pub mod reachable;
mod stack;
pub mod table;
mod word_hash;

pub use error::{Error, Result};
pub use expr::Expr;
pub use linetable::Location;
pub use table::Table;
