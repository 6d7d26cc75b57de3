//! What the VM, the code generator and the driver share: data only, no VM and no code
//! generation.

pub mod code;
pub mod frame;
pub mod graph;
pub mod value;
