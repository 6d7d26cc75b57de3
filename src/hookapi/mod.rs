//! The stable frame-hook API: the per-interpreter hook registry, the chain that
//! runs hooks in registration order, per-code caching, the compatibility check of
//! replacement code, the frame object hooks receive, and the Python bindings.
//! Nothing here knows CPython internals; those stay in [`crate::pep523_backend`],
//! which this layer uses and which reaches back only through the upcalls table
//! ([`upcalls`]) it is installed with.

pub mod capi;
pub(crate) mod code_state;
pub(crate) mod compat;
pub mod disabled;
pub(crate) mod dispatch;
pub mod frame;
mod log;
pub mod per_code;
pub mod pyobject;
pub mod python;
pub mod registry;
pub mod rust_hook;
mod upcalls;

pub use registry::{Hook, OnError, Registry};
