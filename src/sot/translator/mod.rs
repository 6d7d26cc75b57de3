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
mod code_pool;
mod codegen;
mod guard;
pub mod python;
mod value;
mod vm;

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Weak};

use arc_swap::ArcSwapOption;
use framehook_bytecode::liveness::Liveness;
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use self::backend::Backend;
use self::code_pool::Generated;
use self::guard::{Fetcher, Guard, SourceId, SourceTable};
use self::value::Graph;
use self::vm::{CodeInfo, Ending, Stop, Vm};
use crate::hookapi::per_code::PerCode;
use crate::hookapi::pyobject::{import, StrongRef};
use crate::hookapi::registry::{Hook, OnError, Registry, Transform};
use crate::hookapi::rust_hook::{HookContext, RustHook};

/// A graph break or fallback, where it happened.
#[derive(Clone)]
pub struct Record {
    pub reason: String,
    pub filename: String,
    pub line: i32,
}

/// What `sot.stats` reports for one translated function.
#[derive(Default)]
pub struct Stats {
    pub translations: AtomicU64,
    pub cache_hits: AtomicU64,
    pub guard_failures: AtomicU64,
    pub recompilations: AtomicU64,
    pub graphs: AtomicU64,
    pub ops_captured: AtomicU64,
    pub breaks: Mutex<Vec<Record>>,
    pub fallbacks: Mutex<Vec<Record>>,
    /// One text per translation, for `sot.explain`.
    pub explanations: Mutex<Vec<String>>,
    /// How the translated function's own frame ran when last decided.
    pub own_frame: Mutex<OwnFrame>,
}

/// What became of the translated function's own frame (`SotStats.own_frame`).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub enum OwnFrame {
    #[default]
    NotSeen,
    /// Generated code ran (with a graph or not, breaks resumed).
    Translated,
    /// A graph break it cannot resume from: the original code ran.
    Eager,
    Fallback,
    /// Never translated: a library file, a generator, or the cache limit reached.
    Skipped,
}

impl OwnFrame {
    fn as_str(self) -> &'static str {
        match self {
            OwnFrame::NotSeen => "",
            OwnFrame::Translated => "translated",
            OwnFrame::Eager => "eager",
            OwnFrame::Fallback => "fallback",
            OwnFrame::Skipped => "skipped",
        }
    }
}

/// One `sot.translate(...)`: its backend and options, and its counters.
pub struct Config {
    id: u64,
    backend: StrongRef,
    full_graph: bool,
    cache_size: usize,
    /// File prefixes translated although a skip rule covers them (`trace_modules`).
    traced_prefixes: Vec<String>,
    /// The translated function's own code, whose outcome `Stats::own_frame` says.
    own_code: Option<StrongRef>,
    /// The code caches that hold entries of this configuration: they go with it.
    caches: Mutex<Vec<Weak<Entries>>>,
    pub stats: Stats,
}

static NEXT_CONFIG: AtomicU64 = AtomicU64::new(1);
/// Bumped by `sot.reset()`: entries of earlier epochs are never used again.
static EPOCH: AtomicU64 = AtomicU64::new(0);
/// Every configuration, by id (`Weak::strong_count` tells which live without upgrading one,
/// which could drop the last reference, and its entries, under the lock).
static CONFIGS: LazyLock<Mutex<Vec<ConfigHandle>>> = LazyLock::new(Mutex::default);
/// A configuration's id and a weak reference to it.
type ConfigHandle = (u64, Weak<Config>);

impl Config {
    pub fn new(
        backend: StrongRef,
        full_graph: bool,
        cache_size: usize,
        traced_prefixes: Vec<String>,
        own_code: Option<StrongRef>,
    ) -> Arc<Config> {
        if !traced_prefixes.is_empty() {
            TRACING_CONFIGS.fetch_add(1, Ordering::AcqRel);
        }
        let config = Arc::new(Config {
            id: NEXT_CONFIG.fetch_add(1, Ordering::Relaxed),
            backend,
            full_graph,
            cache_size,
            traced_prefixes,
            own_code,
            caches: Mutex::default(),
            stats: Stats::default(),
        });
        let mut configs = CONFIGS.lock();
        configs.retain(|(_, c)| c.strong_count() > 0);
        configs.push((config.id, Arc::downgrade(&config)));
        config
    }
}

impl Config {
    /// Whether `filename`, under a skip rule, is translated for this configuration.
    fn traces(&self, filename: &str) -> bool {
        self.traced_prefixes
            .iter()
            .any(|p| filename.starts_with(p.as_str()))
    }

    fn set_own_frame(&self, code: &Bound<'_, PyAny>, outcome: OwnFrame) {
        if self
            .own_code
            .as_ref()
            .is_some_and(|c| c.as_ptr() == code.as_ptr())
        {
            *self.stats.own_frame.lock() = outcome;
        }
    }
}

impl Drop for Config {
    fn drop(&mut self) {
        if !self.traced_prefixes.is_empty() {
            TRACING_CONFIGS.fetch_sub(1, Ordering::AcqRel);
        }
        // The translated function is gone: its entries (generated code, graphs, and through
        // them the resume functions) go now, not when their code is next translated.
        let caches = std::mem::take(self.caches.get_mut());
        let id = self.id;
        // The entries release Python objects: a config is dropped attached, by its
        // translated function's dealloc or at the end of the function's last call (possibly
        // while the interpreter finalizes, where `Python::attach` refuses to run).
        for entries in caches.iter().filter_map(Weak::upgrade) {
            drop(entries.remove(|e| e.config == id));
        }
    }
}

/// Live configurations with `traced_prefixes`: while there is one, a skipped library
/// frame's answer is not remembered for its code (another session may translate it).
static TRACING_CONFIGS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The translated calls running on this thread, innermost last.
    static SESSIONS: RefCell<Vec<Option<Arc<Config>>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `call` as a call of a function translated with `config` (None: untranslated).
pub fn with_session<R>(config: Option<Arc<Config>>, call: impl FnOnce() -> R) -> R {
    SESSIONS.with(|s| s.borrow_mut().push(config));
    let result = call();
    SESSIONS.with(|s| s.borrow_mut().pop());
    result
}

fn current_session() -> Option<Arc<Config>> {
    SESSIONS.with(|s| s.borrow().last().cloned().flatten())
}

/// What a cache entry runs.
enum Action {
    /// The generated code.
    Run(Generated),
    /// The original code (a fallback, or a break inside a loop).
    Original,
}

struct Entry {
    config: u64,
    epoch: u64,
    guards: Vec<Guard>,
    action: Action,
}

struct CacheState {
    /// Shared by the states that only reorder or remove entries: a translation is stored
    /// only if the table it extended is still the current one.
    sources: Arc<SourceTable>,
    entries: Vec<Arc<Entry>>,
}

/// A code's cache entries: shared with the configurations that have entries in them, so
/// that a translated function takes its entries along when it goes, and `sot.reset()`
/// frees them all.
#[derive(Default)]
struct Entries {
    state: ArcSwapOption<CacheState>,
    writer: Mutex<()>,
}

impl Entries {
    /// Removes the entries `gone` picks; returns the old state, for the caller to drop
    /// after the lock (dropping entries runs Python code: the graphs' release).
    #[must_use]
    fn remove(&self, gone: impl Fn(&Entry) -> bool) -> Option<Arc<CacheState>> {
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
struct CodeCache {
    entries: Arc<Entries>,
    /// Codes the translator made (graphs) or must never enter.
    never: AtomicBool,
    /// UNJUDGED, TRANSLATED, NEVER or LIBRARY.
    verdict: AtomicU64,
    /// Resume functions (or codes, for frames with cells) made from this code, by where
    /// they resume, held weakly: the generated codes that call one keep it alive, and a
    /// resume function's globals must not be kept from co_extra (the GC does not see it:
    /// globals -> function -> code -> co_extra -> resume function -> globals is a cycle
    /// nothing could collect).
    resumes: Mutex<Vec<(codegen::ResumeKey, StrongRef)>>,
}

/// The handler stack depth of a break that a landing pad can resume from.
fn landing_pad_depth(vm: &Vm<'_, '_>, point: &vm::BreakPoint) -> Option<usize> {
    let handler = point.instr.handler?;
    let depth = handler.depth as usize;
    let no_nulls = point
        .stack
        .get(..depth)?
        .iter()
        .all(|v| !matches!(vm.values[*v], value::Val::Null));
    (!handler.lasti && no_nulls).then_some(depth)
}

/// How the generated code goes on past a graph break, if it can.
fn continuation_of(
    table: &'static framehook_bytecode::Table,
    vm: &Vm<'_, '_>,
    point: &vm::BreakPoint,
) -> Option<codegen::Continuation> {
    use framehook_bytecode::canonical::Op;
    use framehook_bytecode::table::ExceptionModel;
    if point.handling {
        // What runs the rest would see another exception as the one being handled.
        return None;
    }
    let step = if matches!(point.instr.op, Op::PopJumpIfTrue | Op::PopJumpIfFalse) {
        codegen::Step::BranchOnTruth
    } else if point.instr.op == Op::LoadMethod {
        codegen::Step::BoundAttribute {
            null_first: table.call_layout != framehook_bytecode::table::CallLayout::CallableFirst,
        }
    } else {
        let (consumed, produced) = vm.native_effect(&point.instr)?;
        if consumed > point.stack.len() {
            return None;
        }
        codegen::Step::RunHere { consumed, produced }
    };
    // The generated code has none of 3.9/3.10's blocks (nor can it set one up for the
    // resume function), and a landing pad resumes only where CPython pushes no
    // instruction offset for the handler (`except` clauses; not `finally` or `with`).
    let block_stack = table.exceptions == ExceptionModel::BlockStack;
    let bridged = (point.in_handler_scope && (block_stack || landing_pad_depth(vm, point).is_none()))
        || (block_stack && point.instr.op == Op::SetupWith)
        || !point.handled.is_empty();
    Some(codegen::Continuation { step, bridged })
}

/// The translator hook of the main interpreter.
pub struct Translator {
    caches: PerCode<CodeCache>,
    hook: Mutex<Option<Arc<Hook>>>,
    live_functions: Mutex<usize>,
    /// The registry generation in which the hook was last seen registered: while it is
    /// current, no hook was added or removed, so a call need not look.
    registered_in: AtomicU64,
    skip_prefixes: Vec<String>,
}

static TRANSLATOR: LazyLock<Mutex<Option<Arc<Translator>>>> = LazyLock::new(Mutex::default);

/// `CodeCache::verdict`: whether frames of a code are translated.
const UNJUDGED: u64 = 0;
const TRANSLATED: u64 = 1;
/// Never: made by the translator, or not a function's frame.
const NEVER: u64 = 2;
/// A library's file: only for sessions that trace it.
const LIBRARY: u64 = 3;

/// Times one translation starts again, breaking earlier (see `Translation::restart`).
const MAX_RESTARTS: usize = 8;
const CO_OPTIMIZED_NEWLOCALS: u32 = 0x01 | 0x02;
const CO_GENERATOR_LIKE: u32 = 0x20 | 0x80 | 0x100 | 0x200;

impl Translator {
    pub fn get(py: Python<'_>) -> PyResult<Arc<Translator>> {
        let mut slot = TRANSLATOR.lock();
        if let Some(t) = slot.as_ref() {
            return Ok(Arc::clone(t));
        }
        let sysconfig = import(py, "sysconfig")?;
        let mut skip_prefixes = Vec::new();
        for key in ["stdlib", "platstdlib"] {
            if let Ok(path) = sysconfig
                .call_method1("get_path", (key,))
                .and_then(|p| p.extract::<String>())
            {
                skip_prefixes.push(format!("{path}/"));
            }
        }
        let framehook_dir: String = import(py, "framehook")?
            .getattr("__file__")?
            .extract::<String>()
            .map(|f| f.rsplit_once('/').map_or(f.clone(), |(d, _)| format!("{d}/")))?;
        skip_prefixes.push(framehook_dir);
        skip_prefixes.push("<frozen".to_owned());
        let translator = Arc::new(Translator {
            caches: PerCode::request(py)?,
            hook: Mutex::default(),
            live_functions: Mutex::default(),
            registered_in: AtomicU64::new(0),
            skip_prefixes,
        });
        *slot = Some(Arc::clone(&translator));
        Ok(translator)
    }

    /// A translated function was made: the hook is in the chain while any lives.
    pub fn function_made(self: &Arc<Self>, py: Python<'_>) -> PyResult<()> {
        *self.live_functions.lock() += 1;
        self.ensure_registered(py)
    }

    /// Before each translated call: puts the hook back if it was removed
    /// (`framehook.clear_frame_hooks()`); costs a snapshot scan when it is there.
    pub fn ensure_registered(self: &Arc<Self>, py: Python<'_>) -> PyResult<()> {
        let registry = Registry::current(py)?;
        if self.registered_in.load(Ordering::Acquire) == registry.generation().number() {
            return Ok(());
        }
        let mut hook = self.hook.lock();
        let registered = hook
            .as_ref()
            .is_some_and(|h| registry.snapshot().iter().any(|r| r.id == h.id));
        if !registered {
            let new_hook = Arc::new(Hook::new(
                "sot.translate".to_owned(),
                Some(Transform::Rust(Arc::clone(self) as Arc<dyn RustHook>)),
                None,
                false,
                OnError::Raise,
                None,
            ));
            registry.add(py, Arc::clone(&new_hook))?;
            *hook = Some(new_hook);
        }
        self.registered_in
            .store(registry.generation().number(), Ordering::Release);
        Ok(())
    }

    pub fn function_dropped(&self, py: Python<'_>) {
        let mut live = self.live_functions.lock();
        *live -= 1;
        if *live == 0 {
            if let (Some(hook), Ok(registry)) = (self.hook.lock().take(), Registry::current(py)) {
                self.registered_in.store(0, Ordering::Release);
                registry.remove(py, hook.id);
            }
        }
    }

    fn cache<'c>(&self, code: &Bound<'_, PyAny>) -> PyResult<&'c CodeCache> {
        // SAFETY: the caller keeps the code alive while using the cache.
        unsafe { self.caches.get_or_default(code) }
    }

    /// Marks a code the translator made (a compiled graph) as never translated.
    fn never_translate(&self, code: &Bound<'_, PyAny>) -> PyResult<()> {
        self.cache(code)?.never.store(true, Ordering::Relaxed);
        Ok(())
    }
}

/// Raises `sot.GraphBreakError` under `full_graph=True`.
fn full_graph_error(py: Python<'_>, kind: &str, record: &Record) -> PyErr {
    let message = format!(
        "{kind} under full_graph=True: {} ({}:{})",
        record.reason, record.filename, record.line
    );
    match import(py, "framehook.sot").and_then(|m| m.getattr("GraphBreakError")) {
        Ok(class) => match class.call1((message,)) {
            Ok(instance) => PyErr::from_value(instance),
            Err(err) => err,
        },
        Err(err) => err,
    }
}

impl RustHook for Translator {
    fn on_frame<'py>(&self, context: &mut HookContext<'_, 'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(config) = current_session() else {
            return Ok(None);
        };
        let code = context.code().clone();
        if !code.is(context.original_code()) {
            return Ok(None);
        }
        let cache = self.cache(&code)?;
        let mut verdict = cache.verdict.load(Ordering::Relaxed);
        if verdict == UNJUDGED {
            verdict = if cache.never.load(Ordering::Relaxed) || !self.is_translatable_kind(&code)? {
                NEVER
            } else if self.is_library_file(&code)? {
                LIBRARY
            } else {
                TRANSLATED
            };
            cache.verdict.store(verdict, Ordering::Relaxed);
        }
        if verdict != TRANSLATED {
            let traced =
                verdict == LIBRARY && config.traces(&code.getattr("co_filename")?.extract::<String>()?);
            if !traced {
                config.set_own_frame(&code, OwnFrame::Skipped);
                if verdict == NEVER || TRACING_CONFIGS.load(Ordering::Acquire) == 0 {
                    context.answer_holds_for_the_code();
                }
                return Ok(None);
            }
        }
        // Under a trace function (a debugger, a line tracer) the frame runs its own code,
        // so that the tracer sees the original's lines and events.
        if context.thread_traced() {
            return Ok(None);
        }
        let epoch = EPOCH.load(Ordering::Acquire);
        let mut seen = 0;
        let mut failed_guard = None;
        let mut changed_numbers = Vec::new();
        if let Some(state) = cache.entries.state.load_full() {
            let mut fetcher = Fetcher::new(context, &state.sources);
            for (index, entry) in state.entries.iter().enumerate() {
                if entry.config != config.id || entry.epoch != epoch {
                    continue;
                }
                seen += 1;
                let failing = fetcher.first_failing(&entry.guards);
                if failing.is_some_and(|g| fetcher.number_changed(g)) {
                    // Every number of the entry seen to change, not only the first: numbers
                    // that change together (a step count per parameter) are generalised by one
                    // recompilation, not one each.
                    for guard in &entry.guards {
                        if fetcher.number_changed(guard)
                            && fetcher.first_failing(std::slice::from_ref(guard)).is_some()
                            && !changed_numbers.contains(&guard.source)
                        {
                            changed_numbers.push(guard.source);
                        }
                    }
                }
                if let (Some(guard), None) = (failing, &failed_guard) {
                    // The most recent entry's reason, for the log.
                    let names = |field: &str| -> Vec<String> {
                        code.getattr(field).and_then(|n| n.extract()).unwrap_or_default()
                    };
                    failed_guard = Some(format!(
                        "{} {}",
                        state.sources.describe(
                            context.py(),
                            guard.source,
                            &names("co_varnames"),
                            &names("co_freevars")
                        ),
                        guard.check.describe(context.py())
                    ));
                }
                if failing.is_none() {
                    config.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                    if index > 0 {
                        move_to_front(cache, index);
                    }
                    return Ok(match &entry.action {
                        Action::Run(generated) => {
                            if generated.has_graph() {
                                keep_while_running(context, Arc::clone(entry));
                            }
                            Some(generated.code(context.py()))
                        }
                        Action::Original => None,
                    });
                }
            }
        }
        if seen > 0 {
            config.stats.guard_failures.fetch_add(1, Ordering::Relaxed);
            if let Some(guard) = failed_guard {
                let name = code.getattr("co_qualname").or_else(|_| code.getattr("co_name"));
                let name = name.map_or_else(|_| "?".to_owned(), |n| n.to_string());
                log_event(
                    context.py(),
                    &format!("guard failure in {name}: no longer holds: {guard}"),
                );
            }
        }
        if seen >= config.cache_size {
            // Past the limit: the original code runs, and its callees are not
            // translated on its account.
            config.set_own_frame(&code, OwnFrame::Eager);
            SESSIONS.with(|s| s.borrow_mut().push(None));
            context.after_frame(Box::new(|_py| {
                SESSIONS.with(|s| s.borrow_mut().pop());
            }));
            return Ok(None);
        }
        let _tracing = context.suspend_tracing();
        let outcome = Python::attach(|py| {
            // An internal error never changes what the program does: the original runs.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.translate(
                    py,
                    context,
                    &config,
                    &code,
                    cache,
                    seen > 0,
                    &changed_numbers,
                    epoch,
                )
            }))
            .unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let record = Record {
                    reason: format!("internal translator error: {what}"),
                    filename: code
                        .getattr("co_filename")
                        .map_or_else(|_| String::new(), |f| f.to_string()),
                    line: -1,
                };
                self.fallback(py, &config, record).map(|()| None)
            })
        });
        outcome.map(|answer| {
            answer.map(|entry| {
                let Action::Run(generated) = &entry.action else {
                    unreachable!("translate answers with the entries that run generated code")
                };
                let code = generated.code(context.py());
                if generated.has_graph() {
                    keep_while_running(context, entry);
                }
                code
            })
        })
    }
}

/// Keeps `entry` for as long as the frame runs its generated code: the code indexes its
/// graph's holder, which dropping the entry clears (so that a generated code CPython keeps,
/// immortal on free-threaded 3.13, does not keep the graph). Another thread may drop the
/// entry meanwhile (`sot.reset()`, a retranslation, its translated function going).
fn keep_while_running(context: &mut HookContext<'_, '_>, entry: Arc<Entry>) {
    context.after_frame(Box::new(move |_py| drop(entry)));
}

fn move_to_front(cache: &CodeCache, index: usize) {
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

impl Translator {
    /// A function's frame (not a module or class body, not a generator or coroutine).
    fn is_translatable_kind(&self, code: &Bound<'_, PyAny>) -> PyResult<bool> {
        let flags: u32 = code.getattr("co_flags")?.extract()?;
        Ok(flags & CO_OPTIMIZED_NEWLOCALS == CO_OPTIMIZED_NEWLOCALS && flags & CO_GENERATOR_LIKE == 0)
    }

    /// Code of the standard library or framehook, skipped unless a session traces it.
    fn is_library_file(&self, code: &Bound<'_, PyAny>) -> PyResult<bool> {
        let filename: String = code.getattr("co_filename")?.extract()?;
        Ok(self
            .skip_prefixes
            .iter()
            .any(|p| filename.starts_with(p.as_str())))
    }

    #[allow(clippy::too_many_arguments)]
    fn translate(
        &self,
        py: Python<'_>,
        context: &HookContext<'_, '_>,
        config: &Arc<Config>,
        code: &Bound<'_, PyAny>,
        cache: &CodeCache,
        recompiling: bool,
        changed_numbers: &[SourceId],
        epoch: u64,
    ) -> PyResult<Option<Arc<Entry>>> {
        let code = code.clone().unbind().into_bound(py);
        let table = crate::bytecode::running_table(py)?;
        let backend_object = config.backend.bind(py);
        let backend = Backend::new(
            table,
            backend_object.clone(),
            self.skip_prefixes.clone(),
            config.traced_prefixes.clone(),
        )?;
        if backend.is_skipped_code(&code)? {
            // The backend's own files: a library for every session but those tracing it.
            cache.verdict.store(LIBRARY, Ordering::Relaxed);
            config.set_own_frame(&code, OwnFrame::Skipped);
            return Ok(None);
        }
        let info = CodeInfo::read(table, &code)?;
        let arguments: Vec<Option<Bound<'_, PyAny>>> = (0..info.total_arguments())
            .map(|i| context.argument(i).map(|b| b.to_owned().unbind().into_bound(py)))
            .collect();
        let frees: Vec<vm::FreeVariable<'_>> = (0..info.vars.freevars.len())
            .map(|i| {
                (
                    context.free_cell(i).map(|b| b.to_owned().unbind().into_bound(py)),
                    context
                        .free_variable(i)
                        .map(|b| b.to_owned().unbind().into_bound(py)),
                )
            })
            .collect();
        let globals = context.globals().unbind().into_bound(py);
        // The state this translation extends: its entries' guards index its source table.
        let started = cache.entries.state.load_full();
        let mut sources = started
            .as_ref()
            // With no entry left (a dropped translation's went), the table starts afresh:
            // what only they read (values they held, their names) goes with them.
            .filter(|s| !s.entries.is_empty())
            .map(|s| s.sources.clone_ref(py))
            .unwrap_or_default();
        if !recompiling {
            // A first translation (or the first since `sot.reset()`) specializes every number.
            sources.forget_dynamic();
        }
        for source in changed_numbers {
            sources.mark_dynamic(*source);
        }
        let fallbacks_before = config.stats.fallbacks.lock().len();
        let stats = &config.stats;
        let qualname: String = code
            .getattr("co_qualname")
            .or_else(|_| code.getattr("co_name"))?
            .extract()?;
        let mut break_before = HashMap::new();
        let (mut vm, action, explanation) = loop {
            let mut vm = Vm::new(py, table, &backend, sources.clone_ref(py))?;
            vm.break_before = break_before.clone();
            let ending = vm.run_top(&code, &info, globals.clone(), arguments.clone(), frees.clone());
            let translation = Translation {
                translator: self,
                py,
                config,
                backend: &backend,
                table,
                code: &code,
                info: &info,
                cache,
                vm: &vm,
                recompiling,
                qualname: &qualname,
                restart: RefCell::new(None),
                liveness: OnceCell::new(),
                depths: OnceCell::new(),
            };
            let (action, explanation) = match ending {
                Ok(Ending::Return(returned, locals)) => {
                    let built = translation
                        .generated_code(&locals, &[returned], |plan| codegen::generate(plan, returned));
                    translation.counted(built, -1)?
                }
                Ok(Ending::Break(point, stop)) => {
                    let record = record_of(&stop);
                    let (continuation, eager_loop) = if point.in_loop {
                        match translation.loop_continuation(&point)? {
                            Ok(continuation) => (Some(continuation), None),
                            Err(why) => {
                                translation.break_before_loop(
                                    &point,
                                    &format!(
                                        "the iterator of a loop that runs eagerly ({why}): {}",
                                        record.reason
                                    ),
                                );
                                (None, Some(why))
                            }
                        }
                    } else {
                        (continuation_of(table, &vm, &point), None)
                    };
                    let reason = match &continuation {
                        None if point.in_loop => format!(
                            "graph break in a loop, the frame runs eagerly ({}): {}",
                            eager_loop.unwrap_or_default(),
                            record.reason
                        ),
                        None if point.handling => format!(
                            "{} (the frame runs eagerly: an exception is being handled)",
                            record.reason
                        ),
                        None => format!("{} (the frame runs eagerly: cannot resume here)", record.reason),
                        Some(_) => record.reason.clone(),
                    };
                    let record = Record { reason, ..record };
                    let built = continuation.map(|c| translation.build_break(&point, &c));
                    if translation.restart.borrow().is_some() {
                        (Action::Original, String::new())
                    } else {
                        report(
                            py,
                            config,
                            "graph break",
                            &format!("graph break in {qualname}"),
                            &record,
                        )?;
                        stats.breaks.lock().push(record.clone());
                        let mut explanation = format!(
                            "{qualname}: graph break at {}:{}: {}\n",
                            record.filename, record.line, record.reason
                        );
                        let action = match built {
                            None => Action::Original,
                            Some(built) => {
                                let (action, text) = translation.counted(built, point.instr.location.line)?;
                                explanation.push_str(&text);
                                action
                            }
                        };
                        (action, explanation)
                    }
                }
                Ok(Ending::Raise(point)) => {
                    // Where handlers of the frame ran for it, they run again for real: the
                    // generated code raises it under them (in a bridge).
                    let continuation = continuation_of(table, &vm, &point).map(|c| codegen::Continuation {
                        bridged: c.bridged || point.in_handler_scope,
                        ..c
                    });
                    match continuation {
                        Some(continuation) => translation.break_code(&point, &continuation)?,
                        None => {
                            let record = Record {
                                reason: format!(
                                    "an exception escapes at {} (cannot raise it from generated code)",
                                    point.instr.op.name()
                                ),
                                filename: info.filename.clone(),
                                line: point.instr.location.line,
                            };
                            self.fallback(py, config, record)?;
                            (Action::Original, String::new())
                        }
                    }
                }
                Err(stop) => {
                    let record = record_of(&stop);
                    self.fallback(py, config, record.clone())?;
                    (
                        Action::Original,
                        format!(
                            "{qualname}: fallback at {}:{}: {}\n",
                            record.filename, record.line, record.reason
                        ),
                    )
                }
            };
            match translation.restart.take() {
                Some((pc, why)) if break_before.len() < MAX_RESTARTS => {
                    break_before.insert(pc, why);
                }
                _ => break (vm, action, explanation),
            }
        };
        if !explanation.is_empty() {
            stats.explanations.lock().push(explanation);
        }
        let own_frame = match action {
            Action::Run { .. } => OwnFrame::Translated,
            Action::Original if stats.fallbacks.lock().len() > fallbacks_before => OwnFrame::Fallback,
            Action::Original => OwnFrame::Eager,
        };
        config.set_own_frame(&code, own_frame);
        let guards = if matches!(action, Action::Original) {
            Vec::new()
        } else {
            std::mem::take(&mut vm.guards)
        };
        let entry = Arc::new(Entry {
            config: config.id,
            epoch,
            guards,
            action,
        });
        let answer = matches!(entry.action, Action::Run { .. }).then(|| Arc::clone(&entry));
        let entries = &cache.entries;
        {
            let mut caches = config.caches.lock();
            if !caches
                .iter()
                .any(|c| std::ptr::eq(c.as_ptr(), Arc::as_ptr(entries)))
            {
                caches.retain(|c| c.strong_count() > 0);
                caches.push(Arc::downgrade(entries));
            }
        }
        let _writer = entries.writer.lock();
        let old = entries.state.load_full();
        let same_table = match (&old, &started) {
            (Some(old), Some(started)) => Arc::ptr_eq(&old.sources, &started.sources),
            (None, None) => true,
            _ => false,
        };
        if !same_table {
            // Another thread stored entries meanwhile, whose guards index a table this
            // translation's does not extend: this one runs once, uncached (the next call
            // translates again if none of those entries fits).
            drop(_writer);
            drop(old);
            return Ok(answer);
        }
        let mut kept: Vec<Arc<Entry>> = old
            .as_ref()
            .map(|s| {
                // Entries of earlier epochs and of translated functions that are gone go.
                let live = live_configs();
                s.entries
                    .iter()
                    .filter(|e| e.epoch == epoch && live.contains(&e.config))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        kept.insert(0, entry);
        entries.state.store(Some(Arc::new(CacheState {
            sources: Arc::new(vm.sources.clone_ref(py)),
            entries: kept,
        })));
        drop(_writer);
        // The entries that went are dropped here, after the lock: dropping one runs Python code.
        drop(old);
        Ok(answer)
    }

    fn fallback(&self, py: Python<'_>, config: &Config, record: Record) -> PyResult<()> {
        report(py, config, "fallback", "fallback", &record)?;
        config.stats.fallbacks.lock().push(record);
        Ok(())
    }
}

/// One translation's fixed inputs, read throughout the making of its code (the generated
/// code, breaks, resume functions, counting).
struct Translation<'t, 'py, 'b> {
    translator: &'t Translator,
    py: Python<'py>,
    config: &'t Config,
    backend: &'t Backend<'py>,
    table: &'static framehook_bytecode::Table,
    code: &'t Bound<'py, PyAny>,
    info: &'t CodeInfo,
    cache: &'t CodeCache,
    vm: &'t Vm<'py, 'b>,
    recompiling: bool,
    qualname: &'t str,
    /// Set when the code cannot be made because of a value an earlier top-frame
    /// instruction made: translating again breaks before that instruction (and says why).
    restart: RefCell<Option<(usize, String)>>,
    /// Which variables the rest of the code may read (see `Translation::liveness`).
    liveness: OnceCell<Option<Liveness>>,
    /// The stack's depth at each jump target (see `Translation::depths`).
    depths: OnceCell<Option<Vec<Option<u32>>>>,
}

impl<'py> Translation<'_, 'py, '_> {
    /// The generated code at a break (or an escaping exception), counted; a fallback
    /// when it cannot be made.
    fn break_code(
        &self,
        point: &vm::BreakPoint,
        continuation: &codegen::Continuation,
    ) -> PyResult<(Action, String)> {
        let built = self.build_break(point, continuation);
        self.counted(built, point.instr.location.line)
    }

    /// The translation's code, counted and explained; a fallback when it cannot be made.
    fn counted(&self, built: PyResult<(Action, Option<String>)>, line: i32) -> PyResult<(Action, String)> {
        let (py, config, info, vm, qualname) = (self.py, self.config, self.info, self.vm, self.qualname);
        let stats = &config.stats;
        match built {
            Ok((action, graph_text)) => {
                stats.translations.fetch_add(1, Ordering::Relaxed);
                if self.recompiling {
                    stats.recompilations.fetch_add(1, Ordering::Relaxed);
                }
                if graph_text.is_some() {
                    stats.graphs.fetch_add(1, Ordering::Relaxed);
                    stats
                        .ops_captured
                        .fetch_add(vm.graph.ops() as u64, Ordering::Relaxed);
                }
                log_event(
                    py,
                    &format!(
                        "translated {qualname}: {} ops in a graph, {} guards",
                        vm.graph.ops(),
                        vm.guards.len()
                    ),
                );
                Ok((action, explain(py, qualname, info, vm, graph_text.as_deref())))
            }
            Err(_) if self.restart.borrow().is_some() => Ok((Action::Original, String::new())),
            Err(err) => {
                let record = Record {
                    reason: format!("code generation: {}", err.value(py)),
                    filename: info.filename.clone(),
                    line,
                };
                self.translator.fallback(py, config, record)?;
                Ok((Action::Original, String::new()))
            }
        }
    }

    /// The code that runs instead of the frame: a plan rebuilding `rebuilt` with the frame's
    /// variables `locals`, its graph compiled for what the plan reads, and `generate`'s code.
    fn generated_code(
        &self,
        locals: &[usize],
        rebuilt: &[usize],
        generate: impl FnOnce(&codegen::Plan<'_, 'py>) -> PyResult<Generated>,
    ) -> PyResult<(Action, Option<String>)> {
        let vm = self.vm;
        let cells = vm.cell_contents();
        let mut plan = codegen::Plan::new(
            self.table,
            self.code,
            &self.info.vars,
            &vm.values,
            &cells,
            &vm.sources,
            &vm.graph,
            &vm.side_effects,
            frame_cells_of(vm, locals),
            vm_globals(vm)?,
            rebuilt,
            &vm.caught_exceptions,
        );
        let (graph, outputs) = vm.graph.without_dead_arithmetic(&plan.outputs);
        let compiled = if graph.nodes.is_empty() {
            None
        } else {
            Some(compile_graph(
                self.py,
                self.translator,
                self.backend,
                vm,
                &graph,
                &outputs,
            )?)
        };
        plan.holder = compiled.as_ref().map(|(holder, _)| holder.clone());
        let generated = generate(&plan).inspect_err(|err| {
            let made_at = plan.unrebuildable.get().and_then(|vid| vm.made_at(vid));
            if let Some(pc) = made_at.filter(|pc| !vm.break_before.contains_key(pc)) {
                self.restart.replace(Some((pc, err.value(self.py).to_string())));
            }
        })?;
        Ok((Action::Run(generated), compiled.map(|(_, text)| text)))
    }

    /// Which variables the rest of the code may read, from each instruction on; None
    /// where the code names a function that reads its frame's variables (`locals()`,
    /// `super()`...): then a resume function gets every bound one.
    fn liveness(&self) -> PyResult<Option<&Liveness>> {
        if let Some(liveness) = self.liveness.get() {
            return Ok(liveness.as_ref());
        }
        let names: Vec<String> = self.code.getattr("co_names")?.extract()?;
        let reads_frame = names
            .iter()
            .any(|n| n == "super" || vm::FRAME_READERS.iter().any(|(_, reader)| reader == n));
        let vars = &self.info.vars;
        let locals = vars.all().len() - vars.freevars.len();
        let computed = (!reads_frame).then(|| Liveness::new(&self.info.instrs, locals));
        Ok(self.liveness.get_or_init(|| computed).as_ref())
    }

    /// The stack's depth where each instruction starts, where a jump may land (None: the
    /// code cannot be read so).
    fn depths(&self) -> Option<&[Option<u32>]> {
        self.depths
            .get_or_init(|| {
                let fields = crate::bytecode::CodeFields::read(self.table, self.code).ok()?;
                let raw = fields.decode(self.table).ok()?;
                framehook_bytecode::canonical::entry_depths(self.table, &fields.vars, &raw).ok()
            })
            .as_deref()
    }

    /// The variables handed on at `point` (canonical index, value): the bound ones, but
    /// cells and those the rest never reads that hold None.
    fn handed(&self, point: &vm::BreakPoint) -> PyResult<Vec<(usize, usize)>> {
        let (info, vm) = (self.info, self.vm);
        let first_free = info.vars.all().len() - info.vars.freevars.len();
        let liveness = self.liveness()?;
        Ok(point.locals[..first_free]
            .iter()
            .enumerate()
            // Cells reach a resume function as its closure, not as arguments.
            .filter(|(_, vid)| !matches!(&vm.values[**vid], value::Val::Null | value::Val::Cell(_)))
            // A variable the rest never reads is handed on too, unless it holds None (nothing
            // can tell): the original frame holds its value until it stores over it or
            // returns, and so does the resume function (which empties the box it takes its
            // values from, and breaks at a store that drops a watched one).
            .filter(|(i, vid)| liveness.map_or(true, |l| l.is_live(point.pc, *i) || !vm.is_none(**vid)))
            .map(|(i, vid)| (i, *vid))
            .collect())
    }

    /// How a break inside a loop goes on: a bridge runs the loop (the outermost around
    /// it) as the original does, and each way out of it calls the resume function there.
    /// Or why it cannot.
    fn loop_continuation(
        &self,
        point: &vm::BreakPoint,
    ) -> PyResult<Result<codegen::Continuation, &'static str>> {
        use framehook_bytecode::canonical::{Arg, Op};
        use framehook_bytecode::loops;
        let (info, vm) = (self.info, self.vm);
        let instrs = &info.instrs;
        if point.handling || !point.handled.is_empty() {
            return Ok(Err("an exception is being handled"));
        }
        let Some(liveness) = self.liveness()? else {
            return Ok(Err("the code reads its frame's variables"));
        };
        let Some(a_loop) = loops::outermost_loop(instrs, point.pc) else {
            return Ok(Err("no loop closes there"));
        };
        let head = a_loop.head;
        // 3.9/3.10 say which handler an instruction raises to only as it runs (`SETUP_*`
        // blocks), and an exit inside a block needs it set up again: such a loop stays out.
        let sets_up_blocks = instrs.iter().enumerate().any(|(index, instr)| {
            a_loop.contains(index)
                && matches!(instr.op, Op::SetupFinally | Op::SetupWith | Op::SetupAsyncWith)
        });
        if sets_up_blocks {
            return Ok(Err("the loop sets up a `try` or `with` block (3.9/3.10)"));
        }
        let exits = match loops::loop_exits(self.table, instrs, &a_loop) {
            Some(exits) if exits.iter().all(|exit| *exit < instrs.len()) => exits,
            _ => return Ok(Err("its exits cannot be told")),
        };
        // Each exit's stack: what lies below the loop (a `for` loop's iterator apart), and
        // the loop's own slots where a jump leaves before popping them (3.12+ put a
        // `break`'s `POP_TOP` past the loop).
        let depths = self.depths();
        let depth_at = |pc: usize| {
            depths
                .and_then(|d| d.get(pc).copied().flatten())
                .map(|d| d as usize)
        };
        let kept = match depth_at(head) {
            Some(depth) if instrs[head].op == Op::ForIter && depth >= 1 => depth - 1,
            Some(depth) if instrs[head].op != Op::ForIter => depth,
            _ => return Ok(Err("its stack cannot be told")),
        };
        if kept > point.stack.len() {
            return Ok(Err("its stack cannot be told"));
        }
        let Some(exits) = exits
            .iter()
            .map(|exit| {
                depth_at(*exit)
                    .filter(|depth| *depth >= kept)
                    .map(|depth| (*exit, depth))
            })
            .collect::<Option<Vec<_>>>()
        else {
            return Ok(Err("its stack cannot be told"));
        };
        let handed: Vec<usize> = self.handed(point)?.iter().map(|(var, _)| *var).collect();
        let first_free = info.vars.all().len() - info.vars.freevars.len();
        let exit_pcs: Vec<usize> = exits.iter().map(|(pc, _)| *pc).collect();
        // What an exit reads that the bridge was not handed (a variable the loop assigns
        // first) is marked until the loop stores it; so is a handed one after a `del`. No
        // path may read one before the loop binds it.
        let unhanded: Vec<usize> = (0..first_free)
            .filter(|var| {
                !handed.contains(var) && !matches!(vm.values[point.locals[*var]], value::Val::Cell(_))
            })
            .filter(|var| exit_pcs.iter().any(|exit| liveness.is_live(*exit, *var)))
            .collect();
        let mut starts = vec![point.pc];
        starts.extend(point.blocks.iter().map(|(handler, _)| *handler));
        let reached = loops::reachable(instrs, &starts, &exit_pcs);
        let deleted = instrs
            .iter()
            .zip(&reached)
            .filter_map(|(instr, reached)| match instr.arg {
                Arg::Var(var)
                    if *reached && instr.op == Op::DeleteFast && handed.contains(&(var as usize)) =>
                {
                    Some(var as usize)
                }
                _ => None,
            });
        let mut marked: Vec<usize> = unhanded.iter().copied().chain(deleted).collect();
        marked.sort_unstable();
        marked.dedup();
        let block_handlers: Vec<usize> = point.blocks.iter().map(|(handler, _)| *handler).collect();
        let bound: Vec<usize> = marked
            .iter()
            .copied()
            .filter(|var| handed.contains(var))
            .collect();
        if loops::reads_unbound(instrs, point.pc, &block_handlers, &exit_pcs, &marked, &bound) {
            return Ok(Err("a variable may be read before the loop assigns it"));
        }
        Ok(Ok(codegen::Continuation {
            step: codegen::Step::Loop(codegen::LoopSpan {
                exits,
                kept,
                unhanded,
                marked,
            }),
            bridged: true,
        }))
    }

    /// A loop that cannot run in a bridge runs in the resume function of a break before
    /// it (at the `GET_ITER` of the outermost loop around `point`), not the whole frame.
    fn break_before_loop(&self, point: &vm::BreakPoint, reason: &str) {
        use framehook_bytecode::canonical::Op;
        let instrs = &self.info.instrs;
        let Some(a_loop) = framehook_bytecode::loops::outermost_loop(instrs, point.pc) else {
            return;
        };
        let Some(before) = a_loop.head.checked_sub(1) else {
            return;
        };
        if instrs[before].op == Op::GetIter && !self.vm.break_before.contains_key(&before) {
            self.restart.replace(Some((before, reason.to_owned())));
        }
    }

    /// The code for a frame that breaks at `point`: its graph, the break, and the call
    /// of the resume function (made once per place and stack layout).
    fn build_break(
        &self,
        point: &vm::BreakPoint,
        continuation: &codegen::Continuation,
    ) -> PyResult<(Action, Option<String>)> {
        let (info, vm) = (self.info, self.vm);
        let variables = info.vars.all().len();
        let first_free = variables - info.vars.freevars.len();
        let live = self.handed(point)?;
        let live_vars: Vec<usize> = live.iter().map(|(i, _)| *i).collect();
        // Variables the original has unbound there (`del x`, or not yet assigned).
        let unbound: Vec<usize> = point.locals[..first_free]
            .iter()
            .enumerate()
            .filter(|(_, vid)| matches!(&vm.values[**vid], value::Val::Null))
            .map(|(i, _)| i)
            .collect();
        let handled_slots: Vec<usize> = point.handled.iter().map(|(slot, _)| *slot).collect();
        let step = &continuation.step;
        let resume = if let codegen::Step::Loop(span) = step {
            // Each exit's resume function gets the stack below the loop's iterator, the
            // variables the bridge got, and the blocks set up outside the loop.
            let nulls: Vec<bool> = point.stack[..span.kept]
                .iter()
                .map(|v| matches!(vm.values[*v], value::Val::Null))
                .collect();
            let blocks: Vec<(usize, usize)> = point
                .blocks
                .iter()
                .filter(|(_, level)| *level <= span.kept)
                .copied()
                .collect();
            let exits = span
                .exits
                .iter()
                .map(|(exit, depth)| {
                    // The loop's own slots left at an exit (its iterator) are no NULLs.
                    let mut nulls = nulls.clone();
                    nulls.resize(*depth, false);
                    let key = codegen::ResumeKey {
                        pc: *exit,
                        nulls,
                        live: live_vars.iter().chain(&span.unhanded).copied().collect(),
                        blocks: blocks.clone(),
                        handled: Vec::new(),
                        bridge: false,
                        marked: span.marked.clone(),
                    };
                    Ok(codegen::LoopExit {
                        pc: *exit,
                        depth: *depth,
                        resume: self.resume_call(key, None)?,
                    })
                })
                .collect::<PyResult<Vec<_>>>()?;
            let key = codegen::ResumeKey {
                pc: point.pc,
                nulls: continuation.slots_after(&vm.values, &point.stack),
                live: live_vars.clone(),
                blocks: point.blocks.clone(),
                handled: Vec::new(),
                bridge: true,
                marked: span.marked.clone(),
            };
            // The bridge's locals for the stack at its exits, as deep as the deepest.
            let mut exit_nulls = nulls;
            exit_nulls.resize(exits.iter().map(|e| e.depth).max().unwrap_or(span.kept), false);
            let bridge = codegen::Bridge {
                step,
                next: None,
                next_nulls: &exit_nulls,
                blocks_after: blocks.len(),
                exits: &exits,
            };
            Some(self.resume_call(key, Some(bridge))?)
        } else {
            // The resume function after the step (the bridge's, where the step is bridged).
            let next_key = codegen::ResumeKey {
                pc: step.resume_pc(point.pc),
                nulls: step.slots_after(&vm.values, &point.stack),
                live: live_vars.clone(),
                blocks: point.blocks_after(),
                handled: handled_slots.clone(),
                bridge: false,
                marked: Vec::new(),
            };
            let next = if next_key.pc < info.instrs.len() && vm.falls_through(&point.instr) {
                Some(self.resume_call(next_key.clone(), None)?)
            } else {
                None
            };
            if continuation.bridged {
                let key = codegen::ResumeKey {
                    pc: point.pc,
                    nulls: continuation.slots_after(&vm.values, &point.stack),
                    live: live_vars.clone(),
                    blocks: point.blocks.clone(),
                    handled: handled_slots,
                    bridge: true,
                    marked: Vec::new(),
                };
                let bridge = codegen::Bridge {
                    step,
                    next: next.as_ref(),
                    next_nulls: &next_key.nulls,
                    blocks_after: next_key.blocks.len(),
                    exits: &[],
                };
                Some(self.resume_call(key, Some(bridge))?)
            } else {
                next
            }
        };
        let pad_resume = match landing_pad_depth(vm, point) {
            Some(depth) if !continuation.bridged => {
                let handler = point.instr.handler.expect("a landing pad has its handler");
                let mut nulls = vec![false; depth];
                nulls.push(false);
                let pad_key = codegen::ResumeKey {
                    pc: handler.target,
                    nulls,
                    live: live_vars,
                    blocks: Vec::new(),
                    handled: Vec::new(),
                    bridge: false,
                    marked: Vec::new(),
                };
                Some((depth, self.resume_call(pad_key, None)?))
            }
            _ => None,
        };
        let mut rebuilt: Vec<usize> = point.stack.clone();
        rebuilt.extend(live.iter().map(|(_, v)| *v));
        rebuilt.extend(point.handled.iter().map(|(_, exception)| *exception));
        self.generated_code(&point.locals, &rebuilt, |plan| {
            codegen::generate_break(
                plan,
                &point.instr,
                &point.stack,
                &live,
                &unbound,
                continuation,
                &point.handled,
                resume.as_ref(),
                pad_resume.as_ref().map(|(depth, resume)| codegen::LandingPad {
                    depth: *depth,
                    resume,
                }),
            )
        })
    }

    /// The resume function (or `bridge`) for `key`, made once per place and stack layout.
    fn resume_call(
        &self,
        key: codegen::ResumeKey,
        bridge: Option<codegen::Bridge<'_, 'py>>,
    ) -> PyResult<codegen::ResumeCall<'py>> {
        let (py, info, cache, vm) = (self.py, self.info, self.cache, self.vm);
        let has_closure = !info.vars.freevars.is_empty() || !info.vars.cellvars.is_empty();
        let known = cache
            .resumes
            .lock()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, r)| r.bind(py).clone());
        // The weak reference's target, while a generated code still holds it.
        let known = match known {
            Some(weak) => Some(weak.call0()?).filter(|target| !target.is_none()),
            None => None,
        };
        let target = match known {
            Some(target) => target,
            None => {
                let resume_code =
                    codegen::resume_code(self.table, self.code, &info.vars, &info.instrs, &key, bridge)?;
                if key.bridge {
                    // Its first step is the break: translating it would break there again.
                    self.translator.never_translate(&resume_code)?;
                }
                let target = if has_closure {
                    resume_code
                } else {
                    import(py, "types")?
                        .getattr("FunctionType")?
                        .call1((resume_code, vm_globals(vm)?))?
                };
                let weak = import(py, "weakref")?.getattr("ref")?.call1((&target,))?;
                let mut resumes = cache.resumes.lock();
                resumes.retain(|(k, _)| *k != key);
                resumes.push((key, StrongRef::from_owned(weak)));
                target
            }
        };
        Ok(codegen::ResumeCall { target, has_closure })
    }
}

/// What every break and fallback goes through: raised under `full_graph=True`, else
/// logged as `what`.
fn report(py: Python<'_>, config: &Config, kind: &str, what: &str, record: &Record) -> PyResult<()> {
    if config.full_graph {
        return Err(full_graph_error(py, kind, record));
    }
    log_event(
        py,
        &format!("{what}: {} ({}:{})", record.reason, record.filename, record.line),
    );
    Ok(())
}

/// The frame's cells: (the VM's cell, the variable that holds it).
fn frame_cells_of(vm: &Vm<'_, '_>, locals: &[usize]) -> Vec<(usize, usize)> {
    locals
        .iter()
        .enumerate()
        .filter_map(|(var, vid)| match &vm.values[*vid] {
            value::Val::Cell(c) => Some((*c, var)),
            _ => None,
        })
        .collect()
}

fn vm_globals<'py>(vm: &Vm<'py, '_>) -> PyResult<Bound<'py, PyAny>> {
    vm.globals()
        .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("no globals"))
}

fn record_of(stop: &Stop) -> Record {
    match stop {
        Stop::Break {
            reason,
            line,
            filename,
        }
        | Stop::Fallback {
            reason,
            line,
            filename,
        } => Record {
            reason: reason.clone(),
            filename: filename.clone(),
            line: *line,
        },
    }
}

fn log_event(py: Python<'_>, message: &str) {
    let logger =
        import(py, "logging").and_then(|logging| logging.call_method1("getLogger", ("framehook.sot",)));
    if let Ok(logger) = logger {
        let _ = logger.call_method1("debug", (message,));
    }
}

/// Per graph input, the value it had while translating (None where the VM no longer
/// holds it).
fn input_examples<'py>(py: Python<'py>, vm: &Vm<'py, '_>, inputs: usize) -> Vec<Bound<'py, PyAny>> {
    let mut examples = vec![py.None().into_bound(py); inputs];
    let mut seen = vec![false; inputs];
    for value in &vm.values {
        if let value::Val::Tensor { sym, example } | value::Val::Scalar { sym, example, .. } = value {
            if *sym < inputs && !seen[*sym] {
                seen[*sym] = true;
                examples[*sym] = example.clone();
            }
        }
    }
    examples
}

/// Compiles the graph with the backend for `outputs`: a holder `[compiled]` and the graph's text.
fn compile_graph<'py>(
    py: Python<'py>,
    translator: &Translator,
    backend: &Backend<'py>,
    vm: &Vm<'py, '_>,
    graph: &Graph<'py>,
    outputs: &[usize],
) -> PyResult<(Bound<'py, PyAny>, String)> {
    let description = python::graph_description(py, graph, outputs)?;
    // A backend that specialises on its inputs' types (their exact types and meta
    // attributes are guarded) is given the values they had while translating.
    let compiled = if backend.object.hasattr("compile_with_examples")? {
        let examples = PyTuple::new(py, input_examples(py, vm, graph.inputs.len()))?;
        backend
            .object
            .call_method1("compile_with_examples", (description, examples))?
    } else {
        backend.object.call_method1("compile", (description,))?
    };
    if let Ok(code) = compiled.getattr("__code__") {
        translator.never_translate(&code)?;
    }
    let text = python::graph_text(py, graph, outputs)?;
    Ok((PyList::new(py, [compiled])?.into_any(), text))
}

fn explain(py: Python<'_>, qualname: &str, info: &CodeInfo, vm: &Vm<'_, '_>, graph: Option<&str>) -> String {
    let mut text = format!("{qualname}: translated ({}:{})\n", info.filename, vm.first_line());
    match graph {
        Some(graph) => text.push_str(&format!("  graph of {} ops:\n{graph}", vm.graph.ops())),
        None => text.push_str("  no graph (no tensor operation)\n"),
    }
    text.push_str(&format!("  guards ({}):\n", vm.guards.len()));
    for g in &vm.guards {
        text.push_str(&format!(
            "    {} {}\n",
            vm.sources
                .describe(py, g.source, &info.vars.varnames, &info.vars.freevars),
            g.check.describe(py)
        ));
    }
    text
}

/// The ids of the configurations whose translated function lives.
fn live_configs() -> Vec<u64> {
    CONFIGS
        .lock()
        .iter()
        .filter(|(_, c)| c.strong_count() > 0)
        .map(|(id, _)| *id)
        .collect()
}

/// Forgets every translation and counter (`sot.reset()`): every entry goes now (a call
/// running one keeps it until it returns), with its generated code and graphs.
pub fn reset() {
    EPOCH.fetch_add(1, Ordering::AcqRel);
    let configs: Vec<Arc<Config>> = CONFIGS.lock().iter().filter_map(|(_, c)| c.upgrade()).collect();
    let mut removed = Vec::new();
    for config in &configs {
        let caches: Vec<Arc<Entries>> = config.caches.lock().iter().filter_map(Weak::upgrade).collect();
        removed.extend(caches.iter().filter_map(|c| c.remove(|_| true)));
    }
    // Dropped with no lock held: dropping entries runs Python code (graphs' release).
    drop(removed);
    for config in &configs {
        let stats = &config.stats;
        for counter in [
            &stats.translations,
            &stats.cache_hits,
            &stats.guard_failures,
            &stats.recompilations,
            &stats.graphs,
            &stats.ops_captured,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        stats.breaks.lock().clear();
        stats.fallbacks.lock().clear();
        stats.explanations.lock().clear();
        *stats.own_frame.lock() = OwnFrame::NotSeen;
    }
}

/// The counters of `config` as a dict (for `sot.stats`).
pub fn stats_dict<'py>(py: Python<'py>, config: &Config) -> PyResult<Bound<'py, PyDict>> {
    let stats = &config.stats;
    let dict = PyDict::new(py);
    for (name, counter) in [
        ("translations", &stats.translations),
        ("cache_hits", &stats.cache_hits),
        ("guard_failures", &stats.guard_failures),
        ("recompilations", &stats.recompilations),
        ("graphs", &stats.graphs),
        ("ops_captured", &stats.ops_captured),
    ] {
        dict.set_item(name, counter.load(Ordering::Relaxed))?;
    }
    let records = |records: &[Record]| -> PyResult<Bound<'py, PyList>> {
        PyList::new(
            py,
            records
                .iter()
                .map(|r| {
                    PyTuple::new(
                        py,
                        [
                            r.reason.clone().into_pyobject(py)?.into_any(),
                            r.filename.clone().into_pyobject(py)?.into_any(),
                            r.line.into_pyobject(py)?.into_any(),
                        ],
                    )
                })
                .collect::<PyResult<Vec<_>>>()?,
        )
    };
    dict.set_item("graph_breaks", records(&stats.breaks.lock())?)?;
    dict.set_item("fallbacks", records(&stats.fallbacks.lock())?)?;
    dict.set_item("explanations", PyList::new(py, stats.explanations.lock().iter())?)?;
    dict.set_item("own_frame", stats.own_frame.lock().as_str())?;
    Ok(dict)
}
