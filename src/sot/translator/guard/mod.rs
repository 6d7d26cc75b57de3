//! Where a value came from (its source) and what a translation assumed about it
//! (its guards). Sources form a tree rooted at the frame's arguments, free
//! variables, globals and builtins; guards are leaves on them. A code object's
//! cache entries share one source table, so a lookup fetches each source at
//! most once, straight from the frame (no locals dict, no Python callable per
//! guard).

pub mod check;
pub mod source;
pub mod world;
