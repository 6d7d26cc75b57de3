//! The translator hook: registered while a translated function lives, it looks each
//! frame's code up in the cache and translates on a miss; `sot.reset()`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Weak};

use parking_lot::Mutex;
use pyo3::prelude::*;

use super::cache::{
    keep_while_running, move_to_front, Action, CodeCaches, Entries, Record, LIBRARY, NEVER, TRANSLATED,
    UNJUDGED,
};
use super::fetch::{arm_if_unchanged, Fetcher};
use super::session::{
    current_session, traced_by_any_family, Config, Family, OwnFrame, CONFIGS, EPOCH, FAMILIES, SESSIONS,
    TRACING_CONFIGS,
};
use super::translate::{fallback, log_event, logging_events, translate};
use crate::hookapi::pyobject::{discard, import};
use crate::hookapi::registry::{Hook, OnError, Registry, Transform};
use crate::hookapi::rust_hook::{HookContext, RustHook};

/// The translator hook of the main interpreter.
pub struct Translator {
    pub caches: CodeCaches,
    pub hook: Mutex<Option<Arc<Hook>>>,
    pub live_functions: Mutex<usize>,
    /// The registry generation in which the hook was last seen registered: while it is
    /// current, no hook was added or removed, so a call need not look.
    pub registered_in: AtomicU64,
    pub skip_prefixes: Vec<String>,
    /// Of those, the files no translation enters, not even as a library (`CodeKind::Closed`):
    /// framehook's own.
    pub closed_prefixes: Vec<String>,
}

pub static TRANSLATOR: LazyLock<Mutex<Option<Arc<Translator>>>> = LazyLock::new(Mutex::default);

pub const CO_OPTIMIZED_NEWLOCALS: u32 = 0x01 | 0x02;

pub const CO_GENERATOR_LIKE: u32 = 0x20 | 0x80 | 0x100 | 0x200;

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
        skip_prefixes.push(framehook_dir.clone());
        skip_prefixes.push("<frozen".to_owned());
        let translator = Arc::new(Translator {
            caches: CodeCaches::request(py)?,
            hook: Mutex::default(),
            live_functions: Mutex::default(),
            registered_in: AtomicU64::new(0),
            skip_prefixes,
            closed_prefixes: vec![framehook_dir],
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

    /// A translated function whose cost model chose the original for its calls: the hook
    /// needs it no more, and with no other function needing it, leaves the chain (with no
    /// other hook, CPython's own eval function runs every frame again, at full speed).
    pub fn function_parked(&self, py: Python<'_>) {
        self.function_dropped(py);
    }

    /// A parked function's calls run translated again (its cost model judges again).
    pub fn function_unparked(self: &Arc<Self>, py: Python<'_>) -> PyResult<()> {
        self.function_made(py)
    }

    pub fn function_dropped(&self, py: Python<'_>) {
        let mut live = self.live_functions.lock();
        *live -= 1;
        if *live == 0 {
            if let Some(hook) = self.hook.lock().take() {
                // No registry any more (the interpreter exits): nothing to remove the hook from.
                match Registry::current(py) {
                    Ok(registry) => {
                        self.registered_in.store(0, Ordering::Release);
                        registry.remove(py, hook.id);
                    }
                    Err(err) => discard(py, err),
                }
            }
        }
    }
}

impl RustHook for Translator {
    /// Outside a translated call no frame is translated (see `answer`).
    fn scoped(&self) -> bool {
        true
    }

    fn on_frame<'py>(&self, context: &mut HookContext<'_, 'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        #[cfg(feature = "testing")]
        if mutant::current() == Some(mutant::Mutant::Eager) {
            return Ok(None);
        }
        let answer = self.answer(context)?;
        #[cfg(feature = "testing")]
        if mutant::current() == Some(mutant::Mutant::RunOriginal) {
            return Ok(None);
        }
        Ok(answer)
    }
}

/// Broken translators the tests must catch (test builds only): `FRAMEHOOK_SOT_MUTANT`, read
/// once, makes the hook `run_original` (translate as usual, counters and all, then run the
/// original code) or `eager` (never translate: every frame runs its own code).
/// `tests/test_sot_mutation.py` runs the corpus and the hostile tests under each.
#[cfg(feature = "testing")]
mod mutant {
    use std::sync::LazyLock;

    #[derive(Clone, Copy, PartialEq, Eq)]
    pub enum Mutant {
        RunOriginal,
        Eager,
    }

    /// Any other value is no mutant (the mutation test would then see its tests pass).
    static MUTANT: LazyLock<Option<Mutant>> =
        LazyLock::new(|| match std::env::var("FRAMEHOOK_SOT_MUTANT").as_deref() {
            Ok("run_original") => Some(Mutant::RunOriginal),
            Ok("eager") => Some(Mutant::Eager),
            _ => None,
        });

    pub fn current() -> Option<Mutant> {
        *MUTANT
    }
}

impl Translator {
    /// The code the frame runs: generated code from the cache or a translation, or None
    /// (its own code).
    fn answer<'py>(&self, context: &mut HookContext<'_, 'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(config) = current_session() else {
            return Ok(None);
        };
        let code = context.code().clone();
        if !code.is(context.original_code()) {
            return Ok(None);
        }
        let cache = self.caches.get(&code)?;
        let mut verdict = cache.verdict.load(Ordering::Relaxed);
        if verdict == UNJUDGED {
            verdict = if cache.never.load(Ordering::Relaxed) || !self.is_translatable_kind(&code)? {
                NEVER
            } else if self.is_library_file(cache.filename(&code)?) {
                LIBRARY
            } else {
                TRANSLATED
            };
            cache.verdict.store(verdict, Ordering::Relaxed);
        }
        if verdict != TRANSLATED {
            let traced = verdict == LIBRARY && config.traces(cache.filename(&code)?);
            if !traced {
                config.set_own_frame(&code, OwnFrame::Skipped);
                if verdict == NEVER
                    || TRACING_CONFIGS.load(Ordering::Acquire) == 0
                    || !traced_by_any_family(cache.filename(&code)?)
                {
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
        // Whether a failed guard is described for the log: asked at the first failure.
        let mut logging = None;
        let mut changed_numbers = Vec::new();
        if let Some(state) = cache.entries.state.load_full() {
            let mut fetcher = Fetcher::new(context, &state.sources);
            for (index, entry) in state.entries.iter().enumerate() {
                if !config.runs_entries_of(entry.owner) || entry.epoch != epoch {
                    continue;
                }
                seen += 1;
                let failing = match &entry.world {
                    Some(world) if world.holds(context) => {
                        fetcher.assume(world);
                        fetcher.first_failing_of(world.rest(&entry.guards))
                    }
                    Some(world) => {
                        let changes = world.changes();
                        let failing = fetcher.first_failing(&entry.guards);
                        if failing.is_none() {
                            arm_if_unchanged(world, &mut fetcher, changes);
                        }
                        failing
                    }
                    None => fetcher.first_failing(&entry.guards),
                };
                if failing.is_some_and(|g| fetcher.number_changed(g)) {
                    // Every number of the entry seen to change, not only the first: numbers
                    // that change together (a step count per parameter) are generalised by one
                    // recompilation, not one each. In the guards' order, up to one failing
                    // otherwise: the sources after it may not be safe to read (`a[0]` of what
                    // is no longer a list runs its `__getitem__`, a defaultdict's adds a key).
                    for guard in &entry.guards {
                        if fetcher.check(guard) {
                            continue;
                        }
                        if !fetcher.number_changed(guard) {
                            break;
                        }
                        if !changed_numbers.contains(&guard.source) {
                            changed_numbers.push(guard.source);
                        }
                    }
                }
                let describe = failing.is_some()
                    && failed_guard.is_none()
                    && *logging.get_or_insert_with(|| logging_events(context.py()));
                if let (Some(guard), true) = (failing, describe) {
                    // The most recent entry's reason, for the log.
                    let names = |field: &str| -> Vec<String> {
                        code.getattr(field).and_then(|n| n.extract()).unwrap_or_default()
                    };
                    let handed = cache.handed_names.lock().clone();
                    let (varnames, freevars) = (names("co_varnames"), names("co_freevars"));
                    let name = |source| {
                        state
                            .sources
                            .describe(context.py(), source, &varnames, &freevars, &handed)
                    };
                    failed_guard = Some(format!(
                        "{} {}",
                        name(guard.source),
                        guard.check.describe(context.py(), &name)
                    ));
                }
                if failing.is_none() {
                    config.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                    if let Some(reported) = &entry.reported {
                        config.replay(entry.serial, reported);
                    }
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
                let name = code
                    .getattr(pyo3::intern!(code.py(), "co_qualname"))
                    .or_else(|_| code.getattr(pyo3::intern!(code.py(), "co_name")));
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
                translate(
                    &self.caches,
                    &self.skip_prefixes,
                    &self.closed_prefixes,
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
                fallback(py, &config, record).map(|()| None)
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

impl Translator {
    /// A function's frame (not a module or class body, not a generator or coroutine).
    pub fn is_translatable_kind(&self, code: &Bound<'_, PyAny>) -> PyResult<bool> {
        let flags: u32 = code.getattr(pyo3::intern!(code.py(), "co_flags"))?.extract()?;
        Ok(flags & CO_OPTIMIZED_NEWLOCALS == CO_OPTIMIZED_NEWLOCALS && flags & CO_GENERATOR_LIKE == 0)
    }

    /// Code of the standard library or framehook, skipped unless a session traces it.
    pub fn is_library_file(&self, filename: &str) -> bool {
        self.skip_prefixes
            .iter()
            .any(|p| filename.starts_with(p.as_str()))
    }
}

/// Forgets every translation and counter (`sot.reset()`): every entry goes now (a call
/// running one keeps it until it returns), with its generated code and graphs.
pub fn reset() {
    EPOCH.fetch_add(1, Ordering::AcqRel);
    let configs: Vec<Arc<Config>> = CONFIGS.lock().iter().filter_map(|(_, c)| c.upgrade()).collect();
    let families: Vec<Arc<Family>> = FAMILIES.lock().clone();
    let lists = configs
        .iter()
        .map(|c| &c.caches)
        .chain(families.iter().map(|f| &f.caches));
    let mut removed = Vec::new();
    for list in lists {
        let caches: Vec<Arc<Entries>> = list.lock().iter().filter_map(Weak::upgrade).collect();
        removed.extend(caches.iter().filter_map(|c| c.remove(|_| true)));
    }
    // Dropped with no lock held: dropping entries runs Python code (graphs' release).
    drop(removed);
    super::vm::summaries::clear_summaries();
    for config in &configs {
        let stats = &config.stats;
        for counter in [
            &stats.translations,
            &stats.cache_hits,
            &stats.guard_failures,
            &stats.recompilations,
            &stats.graphs,
            &stats.ops_captured,
            &stats.instructions_simulated,
            &stats.library_calls_replayed,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        stats.breaks.lock().clear();
        stats.fallbacks.lock().clear();
        stats.explanations.lock().clear();
        *stats.own_frame.lock() = OwnFrame::NotSeen;
    }
}
