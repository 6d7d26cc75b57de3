//! The per-code cache: each code's guarded entries (generated code or the original),
//! its verdict, and the resume functions made from it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwapOption;
use framehook_bytecode::canonical::Op;
use framehook_bytecode::Table;
use parking_lot::Mutex;
use pyo3::intern;
use pyo3::prelude::*;

use super::code_pool::Generated;
use super::guard::source::Guard;
use super::guard::source::SourceTable;
use super::guard::world::World;
use super::model::code::{CodeInfo, ResumeKey};
use crate::hookapi::per_code::PerCode;
use crate::hookapi::pyobject::StrongRef;
use crate::hookapi::rust_hook::HookContext;

/// A graph break or fallback, where it happened.
#[derive(Clone)]
pub struct Record {
    pub reason: String,
    pub filename: String,
    pub line: i32,
}

/// How often one compiled graph ran, and its operations (test builds only).
#[cfg(feature = "testing")]
pub struct GraphRuns {
    pub ops: u64,
    pub runs: AtomicU64,
}

/// What one shared translation reported (`Config::took_reports`).
pub struct Reported {
    pub breaks: Vec<Record>,
    pub fallbacks: Vec<Record>,
    pub explanations: Vec<String>,
    #[cfg(feature = "testing")]
    pub graph_runs: Vec<Arc<GraphRuns>>,
}

/// `Entry::serial`'s source.
pub static NEXT_ENTRY: AtomicU64 = AtomicU64::new(1);

/// What a cache entry runs.
pub enum Action {
    /// The generated code.
    Run(Generated),
    /// The original code (a fallback, or a break inside a loop).
    Original,
}

pub struct Entry {
    /// The configuration that made it, or its family (`Config::owner_for`): the
    /// configurations that run it.
    pub owner: u64,
    /// Its number, unique in the process (which shared entries a configuration replayed).
    pub serial: u64,
    /// A shared entry's translation's reports, for the configurations that run it after.
    pub reported: Option<Reported>,
    pub epoch: u64,
    pub guards: Vec<Guard>,
    /// The guards CPython's watchers answer while nothing they watch changes.
    pub world: Option<World>,
    pub action: Action,
}

pub struct CacheState {
    /// Shared by the states that only reorder or remove entries: a translation is stored
    /// only if the table it extended is still the current one.
    pub sources: Arc<SourceTable>,
    pub entries: Vec<Arc<Entry>>,
}

/// A code's cache entries: shared with the configurations that have entries in them, so
/// that a translated function takes its entries along when it goes, and `sot.reset()`
/// frees them all.
#[derive(Default)]
pub struct Entries {
    pub state: ArcSwapOption<CacheState>,
    pub writer: Mutex<()>,
}

impl Entries {
    /// Removes the entries `gone` picks; returns the old state, for the caller to drop
    /// after the lock (dropping entries runs Python code: the graphs' release).
    #[must_use]
    pub fn remove(&self, gone: impl Fn(&Entry) -> bool) -> Option<Arc<CacheState>> {
        let _writer = self.writer.lock();
        let old = self.state.load_full()?;
        if !old.entries.iter().any(|e| gone(e)) {
            return None;
        }
        let entries = old.entries.iter().filter(|e| !gone(e)).cloned().collect();
        self.state.store(Some(Arc::new(CacheState {
            sources: Arc::clone(&old.sources),
            entries,
        })));
        Some(old)
    }
}

/// The translator's state of one code object, in its co_extra.
#[derive(Default)]
pub struct CodeCache {
    pub entries: Arc<Entries>,
    /// Codes the translator made (graphs) or must never enter.
    pub never: AtomicBool,
    /// UNJUDGED, TRANSLATED, NEVER or LIBRARY.
    pub verdict: AtomicU64,
    /// Resume functions (or codes, for frames with cells) made from this code, by where
    /// they resume, held weakly: the generated codes that call one keep it alive, and a
    /// resume function's globals must not be kept from co_extra (the GC does not see it:
    /// globals -> function -> code -> co_extra -> resume function -> globals is a cycle
    /// nothing could collect).
    pub resumes: Mutex<Vec<(ResumeKey, StrongRef)>>,
    /// Where the code is a resume function: what each value it is handed was in the user's
    /// frame, in its box's order (`Translation::handed_names`), for `explain` and logs.
    pub handed_names: Mutex<Vec<String>>,
    /// Its co_filename, read once: a library's frame asks at each call whether the session
    /// traces its file.
    filename: OnceLock<Box<str>>,
    /// Its decoded instructions, read once: every translation inlining the code (each
    /// resume function of a call into a library) reads them.
    info: OnceLock<Arc<CodeInfo>>,
    /// Where a translation inlining this code saw it break, for its own next translation.
    break_hints: Mutex<Vec<BreakHint>>,
    /// The graph regions that broke inside, shared by the code and the resume functions
    /// made from it (set on a resume function as it is made, else made on first use).
    region_breaks: OnceLock<Arc<Mutex<Vec<RegionBreak>>>>,
}

/// A `with` whose graph region a translation entered, then left for a break inside its
/// block (the translation breaks at the `with`, its block's simulation wasted). The code's
/// later translations in the session, and those of the resume functions made from it
/// (copies of its rest: the same `with` at the same line), break at that `with` at once.
/// By line and instruction, as a resume function's instructions are numbered anew; outside
/// loops only (another pass could differ).
#[derive(Clone)]
pub struct RegionBreak {
    pub session: u64,
    pub epoch: u64,
    pub line: i32,
    pub op: Op,
    pub reason: String,
}

/// Region breaks a code and its resume functions keep at most.
const MAX_REGION_BREAKS: usize = 8;

/// An instruction of a code that broke while a translation of a caller inlined the code: the
/// break runs the call as it is, so the code's own translation comes next, with the same
/// values; it breaks at that instruction at once rather than simulating again the calls that
/// led there (each level of a break deep in inlined calls would simulate them all again).
/// Only breaks the code's own instructions make (not a bound on the caller's translation:
/// inlining depth, instructions simulated), outside loops (where another pass could differ).
#[derive(Clone)]
pub struct BreakHint {
    /// The session and epoch that saw it: a hint is for their next translation only.
    pub session: u64,
    pub epoch: u64,
    pub pc: usize,
    pub reason: String,
    /// Where the break arose (the innermost inlined instruction), as the break reports it.
    pub line: i32,
    pub filename: String,
}

/// Hints a code keeps at most (a translation reads them all, the next one of the session).
const MAX_BREAK_HINTS: usize = 8;

impl CodeCache {
    /// Keeps `hint` for the code's next translation in its session (a newer one of the same
    /// instruction replaces it).
    pub fn add_break_hint(&self, hint: BreakHint) {
        let mut hints = self.break_hints.lock();
        hints.retain(|h| !(h.session == hint.session && h.pc == hint.pc));
        if hints.len() == MAX_BREAK_HINTS {
            hints.remove(0);
        }
        hints.push(hint);
    }

    /// The hints for a translation of `session` in `epoch`, taken: older epochs' go too.
    pub fn take_break_hints(&self, session: u64, epoch: u64) -> Vec<BreakHint> {
        let mut hints = self.break_hints.lock();
        if hints.is_empty() {
            return Vec::new();
        }
        let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut *hints)
            .into_iter()
            .filter(|h| h.epoch >= epoch)
            .partition(|h| h.session == session && h.epoch == epoch);
        *hints = others;
        mine
    }

    fn region_breaks(&self) -> &Arc<Mutex<Vec<RegionBreak>>> {
        self.region_breaks.get_or_init(Default::default)
    }

    /// Makes this cache, a new resume function's, share the region breaks of `origin`, the
    /// code it was made from.
    pub fn share_region_breaks(&self, origin: &CodeCache) {
        let _ = self.region_breaks.set(Arc::clone(origin.region_breaks()));
    }

    /// Keeps `broke` (a newer one of the same instruction replaces it).
    pub fn add_region_break(&self, broke: RegionBreak) {
        let mut breaks = self.region_breaks().lock();
        breaks.retain(|b| {
            !(b.session == broke.session
                && b.epoch == broke.epoch
                && b.line == broke.line
                && b.op == broke.op)
        });
        if breaks.len() == MAX_REGION_BREAKS {
            breaks.remove(0);
        }
        breaks.push(broke);
    }

    /// The region breaks seen in `session`'s `epoch`.
    pub fn region_breaks_of(&self, session: u64, epoch: u64) -> Vec<RegionBreak> {
        let Some(breaks) = self.region_breaks.get() else {
            return Vec::new();
        };
        let breaks = breaks.lock();
        breaks
            .iter()
            .filter(|b| b.session == session && b.epoch == epoch)
            .cloned()
            .collect()
    }

    /// `code`'s co_filename (the code this cache is of; a code's filename never changes).
    pub fn filename(&self, code: &Bound<'_, PyAny>) -> PyResult<&str> {
        if let Some(filename) = self.filename.get() {
            return Ok(filename);
        }
        let filename: String = code.getattr(intern!(code.py(), "co_filename"))?.extract()?;
        Ok(self.filename.get_or_init(|| filename.into_boxed_str()))
    }

    /// `code`'s decoded instructions (the code this cache is of; a code's bytecode never
    /// changes: specialization rewrites `co_code`'s copy in the frame, not `co_code`).
    pub fn info(&self, table: &'static Table, code: &Bound<'_, PyAny>) -> PyResult<Arc<CodeInfo>> {
        if let Some(info) = self.info.get() {
            return Ok(Arc::clone(info));
        }
        let info = Arc::new(CodeInfo::read(table, code)?);
        Ok(Arc::clone(self.info.get_or_init(|| info)))
    }
}

/// `CodeCache::verdict`: whether frames of a code are translated.
pub const UNJUDGED: u64 = 0;

pub const TRANSLATED: u64 = 1;

/// Never: made by the translator, or not a function's frame.
pub const NEVER: u64 = 2;

/// A library's file: only for sessions that trace it.
pub const LIBRARY: u64 = 3;

/// Keeps `entry` for as long as the frame runs its generated code: the code indexes its
/// graph's holder, which dropping the entry clears (so that a generated code CPython keeps,
/// immortal on free-threaded 3.13, does not keep the graph). Another thread may drop the
/// entry meanwhile (`sot.reset()`, a retranslation, its translated function going).
pub fn keep_while_running(context: &mut HookContext<'_, '_>, entry: Arc<Entry>) {
    context.after_frame(Box::new(move |_py| drop(entry)));
}

pub fn move_to_front(cache: &CodeCache, index: usize) {
    let cache = &*cache.entries;
    let _writer = cache.writer.lock();
    if let Some(state) = cache.state.load_full() {
        if index < state.entries.len() {
            let mut entries = state.entries.clone();
            let hit = entries.remove(index);
            entries.insert(0, hit);
            cache.state.store(Some(Arc::new(CacheState {
                sources: Arc::clone(&state.sources),
                entries,
            })));
        }
    }
}

/// Every code's [`CodeCache`], in its co_extra.
#[derive(Clone, Copy)]
pub struct CodeCaches(PerCode<CodeCache>);

impl CodeCaches {
    pub fn request(py: Python<'_>) -> PyResult<Self> {
        Ok(Self(PerCode::request(py)?))
    }

    pub fn get<'c>(&self, code: &Bound<'_, PyAny>) -> PyResult<&'c CodeCache> {
        // SAFETY: the caller keeps the code alive while using the cache.
        unsafe { self.0.get_or_default(code) }
    }

    /// Marks a code the translator made (a compiled graph) as never translated.
    pub fn never_translate(&self, code: &Bound<'_, PyAny>) -> PyResult<()> {
        self.get(code)?.never.store(true, Ordering::Relaxed);
        Ok(())
    }
}
