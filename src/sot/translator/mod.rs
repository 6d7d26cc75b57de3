//! framehook's own SOT translator: `framehook.sot.translate(fn)`.
//!
//! While a translated function runs on a thread, the translator hook (one hook
//! of the chain) sees every frame the call starts: it looks the frame's code up
//! in a per-code cache of guarded entries (guards read the frame directly), and
//! on a miss runs the symbolic VM ([`vm`]) over the code's canonical
//! instructions, records the tensor operations into a graph the backend compiles,
//! and generates the code that runs instead ([`codegen`]). Whatever it cannot
//! translate runs as the original code, recorded as a fallback or a graph break.

mod backend;
mod breaks;
mod cache;
mod code_pool;
mod codegen;
mod compile;
mod cost;
mod declared;
pub(crate) mod fetch;
mod guard;
mod hook;
mod kinds;
mod model;
pub mod python;
mod pyutil;
mod resumed;
mod session;
mod translate;
mod translation;
mod vm;
