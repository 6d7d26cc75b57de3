//! The driver: runs the VM over a frame's code, builds the generated code (with the
//! graph compiled), starts again where a break must come earlier, and records the outcome.

use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use pyo3::prelude::*;

use super::backend::Backend;
use super::breaks::continuation_of;
use super::cache::{
    Action, BreakHint, CacheState, CodeCache, CodeCaches, Entries, Entry, Record, RegionBreak, LIBRARY,
    NEXT_ENTRY,
};
use super::codegen;
use super::compile::explain;
use super::declared::Declared;
use super::fetch::{build_world, Fetcher};
use super::guard::source::{SourceId, SourceTable};
use super::resumed;
use super::translation::Translation;

use super::model::code::CodeInfo;
use super::model::frame::{BreakPoint, Ending, FreeVariable, Stop};
use super::session::{live_owners, with_session, Config, OwnFrame};
use super::vm::{SummaryScope, Vm};
use crate::hookapi::pyobject::import;
use crate::hookapi::rust_hook::HookContext;

/// Times one translation starts again, breaking earlier (see `Translation::restart`).
pub const MAX_RESTARTS: usize = 8;

impl<'py> Translation<'_, 'py, '_> {
    /// The generated code at a break (or an escaping exception), counted; a fallback
    /// when it cannot be made.
    pub fn break_code(
        &self,
        point: &BreakPoint,
        continuation: &codegen::Continuation,
    ) -> PyResult<(Action, String)> {
        let built = self.build_break(point, continuation);
        self.counted(built, point.instr.location.line)
    }

    /// The translation's code, counted and explained; a fallback when it cannot be made.
    pub fn counted(
        &self,
        built: PyResult<(Action, Option<String>)>,
        line: i32,
    ) -> PyResult<(Action, String)> {
        let (py, config, info, vm, qualname) = (self.py, self.config, self.info, self.vm, self.qualname);
        let stats = &config.stats;
        match built {
            Ok((action, graph_text)) => {
                stats.translations.fetch_add(1, Ordering::Relaxed);
                stats.guards.fetch_add(vm.guards.len() as u64, Ordering::Relaxed);
                if self.recompiling {
                    stats.recompilations.fetch_add(1, Ordering::Relaxed);
                }
                if graph_text.is_some() {
                    stats.graphs.fetch_add(1, Ordering::Relaxed);
                    stats
                        .ops_captured
                        .fetch_add(vm.graph.ops() as u64, Ordering::Relaxed);
                }
                if logging_events(py) {
                    log_event(
                        py,
                        &format!(
                            "translated {qualname}: {} ops in a graph, {} guards",
                            vm.graph.ops(),
                            vm.guards.len()
                        ),
                    );
                }
                // Described only for `sot.explain` (the guards' values' reprs cost).
                let explanation = if config.explaining.load(Ordering::Relaxed) {
                    let handed = self.cache.handed_names.lock().clone();
                    explain(py, qualname, info, vm, graph_text.as_deref(), &handed)
                } else {
                    String::new()
                };
                Ok((action, explanation))
            }
            Err(_) if self.restart.borrow().is_some() => Ok((Action::Original, String::new())),
            Err(err) => {
                let record = Record {
                    reason: format!("code generation: {}", err.value(py)),
                    filename: info.filename.clone(),
                    line,
                };
                fallback(py, config, record)?;
                Ok((Action::Original, String::new()))
            }
        }
    }

    /// What the VM's run of the frame ended with becomes: the generated code for a return,
    /// a break or an exception that escapes (the original where a break cannot resume),
    /// the original for a fallback; and the explanation.
    fn outcome(&self, ending: Result<Ending, Stop>) -> PyResult<(Action, String)> {
        if let (Ok(ending), Some(pc)) = (&ending, self.vm.graph.open_region_pc()) {
            // The graph cannot stop inside a region: the `with` that entered it breaks.
            if !self.vm.break_before.contains_key(&pc) {
                let inside = match ending {
                    Ending::Break(_, stop) => record_of(stop).reason,
                    _ => "an exception".to_owned(),
                };
                let why = format!("a break inside the with block of a graph region ({inside})");
                self.restart.replace(Some((pc, why)));
                return Ok((Action::Original, String::new()));
            }
        }
        match ending {
            Ok(Ending::Return(returned, locals)) => {
                let built =
                    self.generated_code(&locals, &[returned], |plan| codegen::generate(plan, returned));
                self.counted(built, -1)
            }
            Ok(Ending::Break(point, stop)) => self.graph_break(&point, &stop),
            Ok(Ending::Raise(point)) => self.escaping(&point),
            Err(stop) => {
                let record = record_of(&stop);
                fallback(self.py, self.config, record.clone())?;
                Ok((
                    Action::Original,
                    format!(
                        "{}: fallback at {}:{}: {}\n",
                        self.qualname, record.filename, record.line, record.reason
                    ),
                ))
            }
        }
    }

    /// A graph break at `point`, reported and recorded: the code that breaks there, or the
    /// original where it cannot resume (the frame runs eagerly).
    fn graph_break(&self, point: &BreakPoint, stop: &Stop) -> PyResult<(Action, String)> {
        let (py, config, qualname) = (self.py, self.config, self.qualname);
        let record = record_of(stop);
        let (continuation, reason) = self.break_continuation(point, &record)?;
        let record = Record { reason, ..record };
        let built = continuation.map(|c| self.build_break(point, &c));
        if self.restart.borrow().is_some() {
            return Ok((Action::Original, String::new()));
        }
        report(
            py,
            config,
            "graph break",
            &format!("graph break in {qualname}"),
            &record,
        )?;
        config.stats.breaks.lock().push(record.clone());
        let mut explanation = format!(
            "{qualname}: graph break at {}:{}: {}\n",
            record.filename, record.line, record.reason
        );
        let action = match built {
            None => Action::Original,
            Some(built) => {
                let (action, text) = self.counted(built, point.instr.location.line)?;
                explanation.push_str(&text);
                action
            }
        };
        Ok((action, explanation))
    }

    /// How the code goes on past a break at `point` (None: the frame runs eagerly), and the
    /// reason the break is recorded with (`record`'s, and why the frame runs eagerly). A
    /// loop whose bridge cannot run it has the next translation break before it.
    fn break_continuation(
        &self,
        point: &BreakPoint,
        record: &Record,
    ) -> PyResult<(Option<codegen::Continuation>, String)> {
        let (continuation, eager_loop) = if point.in_loop {
            match self.loop_continuation(point)? {
                Ok(continuation) => (Some(continuation), None),
                Err(why) => {
                    self.break_before_loop(
                        point,
                        &format!(
                            "the iterator of a loop that runs eagerly ({why}): {}",
                            record.reason
                        ),
                    );
                    (None, Some(why))
                }
            }
        } else {
            (continuation_of(self.table, self.vm, point), None)
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
        Ok((continuation, reason))
    }

    /// An exception nothing in the frame catches, at `point`: the generated code raises it
    /// again; a fallback where it cannot.
    fn escaping(&self, point: &BreakPoint) -> PyResult<(Action, String)> {
        // Where handlers of the frame ran for it, they run again for real: the
        // generated code raises it under them (in a bridge).
        let continuation = continuation_of(self.table, self.vm, point).map(|c| codegen::Continuation {
            bridged: c.bridged || point.in_handler_scope,
            ..c
        });
        match continuation {
            Some(continuation) => self.break_code(point, &continuation),
            None => {
                let record = Record {
                    reason: format!(
                        "an exception escapes at {} (cannot raise it from generated code)",
                        point.instr.op.name()
                    ),
                    filename: self.info.filename.clone(),
                    line: point.instr.location.line,
                };
                fallback(self.py, self.config, record)?;
                Ok((Action::Original, String::new()))
            }
        }
    }
}

/// What every break and fallback goes through: raised under `full_graph=True`, else
/// logged as `what`.
pub fn report(py: Python<'_>, config: &Config, kind: &str, what: &str, record: &Record) -> PyResult<()> {
    if config.full_graph {
        return Err(full_graph_error(py, kind, record));
    }
    if logging_events(py) {
        log_event(
            py,
            &format!("{what}: {} ({}:{})", record.reason, record.filename, record.line),
        );
    }
    Ok(())
}

pub fn record_of(stop: &Stop) -> Record {
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

/// The `framehook.sot` logger, got once.
static LOGGER: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

fn logger(py: Python<'_>) -> Option<&Bound<'_, PyAny>> {
    LOGGER
        .get_or_try_init(py, || {
            import(py, "logging")?
                .call_method1("getLogger", ("framehook.sot",))
                .map(Bound::unbind)
        })
        .ok()
        .map(|logger| logger.bind(py))
}

/// Whether the `framehook.sot` logger takes debug records: the translator describes what it
/// did (a translation, a break, a failed guard) only then, not on every translation.
pub fn logging_events(py: Python<'_>) -> bool {
    const DEBUG: i32 = 10;
    logger(py)
        .and_then(|logger| {
            with_session(None, || {
                logger.call_method1(pyo3::intern!(py, "isEnabledFor"), (DEBUG,))
            })
            .ok()
        })
        .is_some_and(|enabled| enabled.is_truthy().unwrap_or(false))
}

/// Logs `message` at debug level. What the logger runs (a user's handler) runs as it is:
/// translated on account of the translator's own report, a handler's append to a list was
/// guarded on the list's length, which each record changes.
pub fn log_event(py: Python<'_>, message: &str) {
    if let Some(logger) = logger(py) {
        let _ = with_session(None, || logger.call_method1("debug", (message,)));
    }
}

#[allow(clippy::too_many_arguments)]
pub fn translate(
    caches: &CodeCaches,
    skip_prefixes: &[String],
    closed_prefixes: &[String],
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
    let declared = match config.declared.get() {
        Some(declared) => Arc::clone(declared),
        None => {
            let declared = Arc::new(Declared::read(
                &config.backend.bind(py),
                skip_prefixes,
                closed_prefixes,
                &config.traced_prefixes,
            )?);
            Arc::clone(config.declared.get_or_init(|| declared))
        }
    };
    let backend = Backend::new(py, table, *caches, declared)?;
    if backend.is_skipped_code(&code)? {
        // The backend's own files: a library for every session but those tracing it.
        cache.verdict.store(LIBRARY, Ordering::Relaxed);
        config.set_own_frame(&code, OwnFrame::Skipped);
        return Ok(None);
    }
    let info = backend.code_info(&code)?;
    let frame = FrameInputs::read(py, context, &info);
    // The state this translation extends: its entries' guards index its source table.
    let started = cache.entries.state.load_full();
    let sources = sources_to_extend(py, started.as_deref(), recompiling, changed_numbers);
    let owner = config.owner_for(&code)?;
    // Where the reports stood: what this translation adds is a shared entry's, and a
    // fallback it reported makes its own frame's outcome.
    let mark = config.mark();
    let stats = &config.stats;
    let qualname: String = code
        .getattr("co_qualname")
        .or_else(|_| code.getattr(pyo3::intern!(code.py(), "co_name")))?
        .extract()?;
    let mut break_before = FxHashMap::default();
    let mut break_hints: FxHashMap<usize, BreakHint> = cache
        .take_break_hints(config.id, epoch)
        .into_iter()
        .map(|hint| (hint.pc, hint))
        .collect();
    hint_region_breaks(cache, &info, config.id, epoch, &mut break_hints);
    let mut region_restarts: Vec<(usize, String)> = Vec::new();
    let mut seen_breaks = Vec::new();
    let mut replay_summaries = true;
    // A resume function's first argument is the box its values come in.
    let resume_box = match frame.arguments.first() {
        Some(Some(first)) if !cache.handed_names.lock().is_empty() => Some(first.as_ptr() as usize),
        _ => None,
    };
    // A run that must break earlier goes back to its state there where it kept it.
    let mut rewound: Option<(Vm, Result<Ending, Stop>)> = None;
    let (mut vm, action, explanation) = loop {
        let (mut vm, ending, counted) = match rewound.take() {
            Some((vm, ending)) => {
                let counted = vm.steps();
                (vm, ending, counted)
            }
            None => {
                let mut vm = Vm::new(py, table, &backend, sources.clone_ref(py))?;
                vm.break_before = break_before.clone();
                vm.break_hints = break_hints.clone();
                vm.resume_box = resume_box;
                vm.summary_scope = Some(SummaryScope {
                    owner: config.summary_owner(),
                    epoch,
                    replay: replay_summaries,
                });
                let ending = vm.run_top(
                    &code,
                    &info,
                    frame.globals.clone(),
                    frame.arguments.clone(),
                    frame.frees.clone(),
                );
                (vm, ending, 0)
            }
        };
        stats
            .instructions_simulated
            .fetch_add((vm.steps() - counted) as u64, Ordering::Relaxed);
        if !vm.replayed_hold(context) {
            // A summary's guards fail on this frame (what its call read changed since):
            // simulated again, its calls recorded anew.
            replay_summaries = false;
            continue;
        }
        stats
            .library_calls_replayed
            .fetch_add(vm.summaries_replayed as u64, Ordering::Relaxed);
        vm.guard_identities();
        macro_rules! translation_of {
            ($vm:expr) => {
                Translation {
                    caches,
                    py,
                    config,
                    backend: &backend,
                    table,
                    code: &code,
                    info: &info,
                    cache,
                    vm: $vm,
                    globals: None,
                    recompiling,
                    qualname: &qualname,
                    restart: RefCell::new(None),
                }
            };
        }
        // A break deep in inlined calls that resumes where it stopped: the top frame's call
        // runs what goes on in them (else the translation breaks at that call at once).
        let ending = match ending {
            Ok(Ending::Break(point, stop)) if vm.nested_frames().is_some() => {
                match resumed::bridges(&translation_of!(&vm), &point)? {
                    Ok(bridges) => Ok(Ending::Break(
                        resumed::resumed_point(py, &mut vm, bridges, point)?,
                        stop,
                    )),
                    Err(why) if break_before.len() < MAX_RESTARTS => {
                        let why = format!("a break inside a call that cannot resume there ({why})");
                        rewound = vm.rewind(point.pc, &why).map(|ending| (vm, ending));
                        break_before.insert(point.pc, why);
                        continue;
                    }
                    Err(_) => Err(stop),
                }
            }
            other => other,
        };
        let translation = translation_of!(&vm);
        let (action, explanation) = translation.outcome(ending)?;
        let restart = translation.restart.take();
        seen_breaks.append(&mut vm.seen_breaks);
        match restart {
            Some((pc, why)) if break_before.len() < MAX_RESTARTS => {
                if vm.graph.open_region_pc() == Some(pc) {
                    region_restarts.push((pc, format!("it makes {why}")));
                }
                rewound = vm.rewind(pc, &why).map(|ending| (vm, ending));
                break_before.insert(pc, why);
            }
            _ => break (vm, action, explanation),
        }
    };
    for seen in seen_breaks {
        let inlined = caches.get(&seen.code)?;
        inlined.add_break_hint(seen.hint(config.id, epoch));
    }
    let region_breaks = std::mem::take(&mut vm.region_breaks)
        .into_iter()
        .chain(region_restarts);
    keep_region_breaks(cache, &info, config.id, epoch, region_breaks);
    if !explanation.is_empty() {
        stats.explanations.lock().push(explanation);
    }
    let own_frame = match action {
        Action::Run { .. } => OwnFrame::Translated,
        Action::Original if stats.fallbacks.lock().len() > mark.fallbacks => OwnFrame::Fallback,
        Action::Original => OwnFrame::Eager,
    };
    config.set_own_frame(&code, own_frame);
    let guards = if matches!(action, Action::Original) {
        Vec::new()
    } else {
        std::mem::take(&mut vm.guards)
    };
    let serial = NEXT_ENTRY.fetch_add(1, Ordering::Relaxed);
    let world = build_world(&mut Fetcher::new(context, &vm.sources), &guards);
    let entry = Arc::new(Entry {
        owner,
        serial,
        reported: (owner != config.id).then(|| config.took_reports(serial, &mark)),
        epoch,
        guards,
        world,
        action,
    });
    let answer = matches!(entry.action, Action::Run { .. }).then(|| Arc::clone(&entry));
    keep_entries(config.caches_of(owner), &cache.entries);
    store_entry(py, &cache.entries, started.as_ref(), entry, epoch, &vm.sources);
    Ok(answer)
}

/// Hints to break at once at the `with`s whose graph regions broke inside before
/// (`cache::RegionBreak`): the code's, or the code's it was made from.
fn hint_region_breaks(
    cache: &CodeCache,
    info: &CodeInfo,
    session: u64,
    epoch: u64,
    hints: &mut FxHashMap<usize, BreakHint>,
) {
    for broke in cache.region_breaks_of(session, epoch) {
        for (pc, instr) in info.instrs.iter().enumerate() {
            if instr.op == broke.op
                && instr.location.line == broke.line
                && !info.in_loop.get(pc).unwrap_or(false)
            {
                hints.entry(pc).or_insert_with(|| BreakHint {
                    session,
                    epoch,
                    pc,
                    reason: broke.reason.clone(),
                    line: broke.line,
                    filename: info.filename.clone(),
                });
            }
        }
    }
}

/// Keeps the regions a translation saw break inside, by the instruction that entered each
/// and the break's reason, for the code's next translations and its resume functions'.
fn keep_region_breaks(
    cache: &CodeCache,
    info: &CodeInfo,
    session: u64,
    epoch: u64,
    breaks: impl Iterator<Item = (usize, String)>,
) {
    for (pc, reason) in breaks {
        if !info.in_loop.get(pc).unwrap_or(false) {
            let instr = &info.instrs[pc];
            cache.add_region_break(RegionBreak {
                session,
                epoch,
                line: instr.location.line,
                op: instr.op,
                reason,
            });
        }
    }
}

/// What the VM runs the frame with: its arguments, its free variables (cells and their
/// contents) and its globals.
struct FrameInputs<'py> {
    arguments: Vec<Option<Bound<'py, PyAny>>>,
    frees: Vec<FreeVariable<'py>>,
    globals: Bound<'py, PyAny>,
}

impl<'py> FrameInputs<'py> {
    /// The frame's, as the hook's `context` shows them.
    fn read(py: Python<'py>, context: &HookContext<'_, '_>, info: &CodeInfo) -> Self {
        let arguments: Vec<Option<Bound<'_, PyAny>>> = (0..info.total_arguments())
            .map(|i| context.argument(i).map(|b| b.to_owned().unbind().into_bound(py)))
            .collect();
        let frees: Vec<FreeVariable<'_>> = (0..info.vars.freevars.len())
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
        FrameInputs {
            arguments,
            frees,
            globals,
        }
    }
}

/// The source table a translation extends: that of the cache state it `started` from, its
/// numbers specialized again unless `recompiling`, and `changed_numbers` dynamic.
fn sources_to_extend(
    py: Python<'_>,
    started: Option<&CacheState>,
    recompiling: bool,
    changed_numbers: &[SourceId],
) -> SourceTable {
    let mut sources = started
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
    sources
}

/// Has `config` keep `entries` (they go with it), if it does not yet.
fn keep_entries(caches: &Mutex<Vec<Weak<Entries>>>, entries: &Arc<Entries>) {
    let mut caches = caches.lock();
    if !caches
        .iter()
        .any(|c| std::ptr::eq(c.as_ptr(), Arc::as_ptr(entries)))
    {
        caches.retain(|c| c.strong_count() > 0);
        caches.push(Arc::downgrade(entries));
    }
}

/// Stores `entry` first among `entries`, with `sources` the table their guards index,
/// if the table is still the one the translation `started` from.
fn store_entry(
    py: Python<'_>,
    entries: &Entries,
    started: Option<&Arc<CacheState>>,
    entry: Arc<Entry>,
    epoch: u64,
    sources: &SourceTable,
) {
    let _writer = entries.writer.lock();
    let old = entries.state.load_full();
    let same_table = match (&old, started) {
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
        return;
    }
    let mut kept: Vec<Arc<Entry>> = old
        .as_ref()
        .map(|s| {
            // Entries of earlier epochs and of translated functions that are gone go.
            let live = live_owners();
            s.entries
                .iter()
                .filter(|e| e.epoch == epoch && live.contains(&e.owner))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    kept.insert(0, entry);
    entries.state.store(Some(Arc::new(CacheState {
        sources: Arc::new(sources.clone_ref(py)),
        entries: kept,
    })));
    drop(_writer);
    // The entries that went are dropped here, after the lock: dropping one runs Python code.
    drop(old);
}

/// A fallback: reported, and counted for `sot.stats`.
pub fn fallback(py: Python<'_>, config: &Config, record: Record) -> PyResult<()> {
    report(py, config, "fallback", "fallback", &record)?;
    config.stats.fallbacks.lock().push(record);
    Ok(())
}

/// Raises `sot.GraphBreakError` under `full_graph=True`.
pub fn full_graph_error(py: Python<'_>, kind: &str, record: &Record) -> PyErr {
    let message = format!(
        "{kind} under full_graph=True: {} ({}:{})",
        record.reason, record.filename, record.line
    );
    match import(py, "framehook.sot").and_then(|m| m.getattr(pyo3::intern!(m.py(), "GraphBreakError"))) {
        Ok(class) => match class.call1((message,)) {
            Ok(instance) => PyErr::from_value(instance),
            Err(err) => err,
        },
        Err(err) => err,
    }
}
