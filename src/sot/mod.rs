//! SOT, framehook's primary hook: the runtime Paddle's symbolic opcode
//! translator drives (callback protocol, per-code guarded cache, skip rules),
//! built only on [`crate::hookapi`]. Arrives with the SOT issue.
