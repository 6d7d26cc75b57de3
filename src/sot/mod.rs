//! SOT, framehook's primary hook: the runtime a symbolic opcode translator
//! drives, built only on [`crate::hookapi`]. Paddle's SOT talks to it through
//! the five functions Paddle's own eval-frame module offers (`set_eval_frame`,
//! `eval_frame_skip_file_prefix`, `eval_frame_no_skip_codes`,
//! `sot_setup_codes_with_graph`, `sot_set_with_graph`), with the same meaning:
//!
//! - a per-thread callback, called as `callback(frame)` for each frame about to
//!   run, returning an object with `code` (replacement or None) and
//!   `disable_eval_frame` (True: the frame's whole call subtree runs without
//!   the callback); the callback is unset while it runs;
//! - skip rules checked first, before anything costly: file-name prefixes
//!   (a `<frozen ...>` file is judged by its module's `__file__`) unless the
//!   code is marked never to skip;
//! - code status: a code the callback has left unchanged 10 times without it
//!   being marked as having a graph runs unchanged from then on, with its
//!   whole call subtree unhooked (replacement codes are never given up);
//! - on 3.11+, functions with an exception table are passed through while
//!   `pass_exception_tables` is on (the default: Paddle's code generator drops
//!   exception tables).
//!
//! The SOT hook joins the hook chain while some thread has a callback.
//!
//! [`translator`] is framehook's own translator, a hook of its own.

mod code_status;
pub mod fused;
pub mod python;
mod runtime;
mod skip;
pub mod translator;
