//! What the VM, the code generator and the driver share: data only, no VM and no code
//! generation.

pub mod code;
pub mod frame;
pub mod graph;
pub mod known;
pub mod problem;
pub mod step;
pub mod value;
pub mod values;

/// A value's index in the VM's arena: stack slots, locals and containers hold these,
/// so a list mutated through one alias is seen through every other.
pub type Vid = usize;

/// A symbol of the graph: an input (from a source) or an operation's result.
pub type Sym = usize;
