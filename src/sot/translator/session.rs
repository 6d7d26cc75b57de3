//! One `sot.translate(...)`: its configuration and counters (`sot.stats`), and the
//! thread's stack of translated calls running (`with_session`).

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Weak};

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

#[cfg(feature = "testing")]
use super::cache::GraphRuns;
use super::cache::{Entries, Record, Reported};
use super::cost::CostModel;
use crate::hookapi::pyobject::StrongRef;
use crate::hookapi::rust_hook::ArmedScope;

/// What `sot.stats` reports for one translated function.
#[derive(Default)]
pub struct Stats {
    pub translations: AtomicU64,
    pub cache_hits: AtomicU64,
    pub guard_failures: AtomicU64,
    pub recompilations: AtomicU64,
    /// The guards of its translations, all together.
    pub guards: AtomicU64,
    pub graphs: AtomicU64,
    pub ops_captured: AtomicU64,
    /// Instructions its translations simulated (restarts included): what translating cost.
    pub instructions_simulated: AtomicU64,
    /// Library calls a summary gave instead of a simulation (`vm/summaries.rs`).
    pub library_calls_replayed: AtomicU64,
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
    pub fn as_str(self) -> &'static str {
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
    pub id: u64,
    pub backend: StrongRef,
    pub full_graph: bool,
    pub cache_size: usize,
    /// File prefixes translated although a skip rule covers them (`trace_modules`).
    pub traced_prefixes: Vec<String>,
    /// The translated function's own code, whose outcome `Stats::own_frame` says.
    pub own_code: Option<StrongRef>,
    /// The code caches that hold entries of this configuration: they go with it.
    pub caches: Mutex<Vec<Weak<Entries>>>,
    /// The configurations with the same backend and options that share this one's
    /// translations of traced modules' code (None: nothing traced).
    pub family: Option<Arc<Family>>,
    /// The shared entries (by `Entry::serial`) whose reports this configuration took.
    pub replayed: Mutex<HashSet<u64>>,
    /// Whether each translation is described (`sot.explain`'s function): then none is shared.
    pub explaining: AtomicBool,
    pub stats: Stats,
    /// Whether its calls run translated or the original, by their times (None: always
    /// translated).
    pub cost_model: Option<CostModel>,
    /// What its backend declares, read at its first translation (`Declared`).
    pub declared: std::sync::OnceLock<Arc<super::declared::Declared>>,
    /// Every graph compiled for this configuration, in order, with how often it ran: the
    /// tests' proof that the generated code ran (test builds only: see `compile::counted`).
    #[cfg(feature = "testing")]
    pub graph_runs: Mutex<Vec<Arc<GraphRuns>>>,
}

pub static NEXT_CONFIG: AtomicU64 = AtomicU64::new(1);

/// Bumped by `sot.reset()`: entries of earlier epochs are never used again.
pub static EPOCH: AtomicU64 = AtomicU64::new(0);

/// Configurations with the same backend, `full_graph`, `cache_size` and traced modules:
/// their translations of the traced modules' code are shared, and outlive them (until
/// `sot.reset()`, the cache's limit, or their code going). A module traced by many translated
/// functions (a test suite's tests, a server's handlers) is translated once, not once per
/// function.
pub struct Family {
    pub id: u64,
    backend: StrongRef,
    full_graph: bool,
    cache_size: usize,
    traced_prefixes: Vec<String>,
    /// The code caches holding the family's entries (for `sot.reset()`).
    pub caches: Mutex<Vec<Weak<Entries>>>,
}

/// Every family: few (one per set of options), and kept, as their entries are.
pub static FAMILIES: LazyLock<Mutex<Vec<Arc<Family>>>> = LazyLock::new(Mutex::default);

fn traced_by(prefixes: &[String], filename: &str) -> bool {
    prefixes.iter().any(|p| filename.starts_with(p.as_str()))
}

/// Whether any configuration, live or gone, traces `filename`: every tracing configuration
/// has a family, made before it is, and families are kept. A file no family traces stays
/// skipped until a new tracing configuration invalidates the remembered answers.
pub fn traced_by_any_family(filename: &str) -> bool {
    FAMILIES
        .lock()
        .iter()
        .any(|family| traced_by(&family.traced_prefixes, filename))
}

impl Family {
    fn of(
        backend: &StrongRef,
        full_graph: bool,
        cache_size: usize,
        traced_prefixes: &[String],
    ) -> Arc<Family> {
        let mut families = FAMILIES.lock();
        let found = families.iter().find(|f| {
            f.backend.as_ptr() == backend.as_ptr()
                && f.full_graph == full_graph
                && f.cache_size == cache_size
                && f.traced_prefixes == traced_prefixes
        });
        if let Some(family) = found {
            return Arc::clone(family);
        }
        let family = Arc::new(Family {
            id: NEXT_CONFIG.fetch_add(1, Ordering::Relaxed),
            backend: Python::attach(|py| backend.clone_ref(py)),
            full_graph,
            cache_size,
            traced_prefixes: traced_prefixes.to_vec(),
            caches: Mutex::default(),
        });
        families.push(Arc::clone(&family));
        family
    }
}

/// The lengths of a configuration's reports (`Config::mark`).
pub struct ReportMark {
    breaks: usize,
    pub fallbacks: usize,
    explanations: usize,
    #[cfg(feature = "testing")]
    graph_runs: usize,
}

/// Every configuration, by id (`Weak::strong_count` tells which live without upgrading one,
/// which could drop the last reference, and its entries, under the lock).
pub static CONFIGS: LazyLock<Mutex<Vec<ConfigHandle>>> = LazyLock::new(Mutex::default);

/// A configuration's id and a weak reference to it.
pub type ConfigHandle = (u64, Weak<Config>);

impl Config {
    pub fn new(
        backend: StrongRef,
        full_graph: bool,
        cache_size: usize,
        traced_prefixes: Vec<String>,
        own_code: Option<StrongRef>,
        cost_model: bool,
    ) -> Arc<Config> {
        if !traced_prefixes.is_empty() {
            TRACING_CONFIGS.fetch_add(1, Ordering::AcqRel);
        }
        let family = (!traced_prefixes.is_empty())
            .then(|| Family::of(&backend, full_graph, cache_size, &traced_prefixes));
        let config = Arc::new(Config {
            id: NEXT_CONFIG.fetch_add(1, Ordering::Relaxed),
            backend,
            full_graph,
            cache_size,
            traced_prefixes,
            own_code,
            caches: Mutex::default(),
            family,
            replayed: Mutex::default(),
            explaining: AtomicBool::new(false),
            stats: Stats::default(),
            cost_model: cost_model.then(CostModel::default),
            declared: std::sync::OnceLock::new(),
            #[cfg(feature = "testing")]
            graph_runs: Mutex::default(),
        });
        let mut configs = CONFIGS.lock();
        configs.retain(|(_, c)| c.strong_count() > 0);
        configs.push((config.id, Arc::downgrade(&config)));
        config
    }
}

impl Config {
    /// Whether `filename`, under a skip rule, is translated for this configuration.
    pub fn traces(&self, filename: &str) -> bool {
        traced_by(&self.traced_prefixes, filename)
    }

    /// The owner of a translation of `code` (`Entry::owner`): the family's, for code of a
    /// traced module other than the function's own; else this configuration's.
    pub fn owner_for(&self, code: &Bound<'_, PyAny>) -> PyResult<u64> {
        let own = self
            .own_code
            .as_ref()
            .is_some_and(|c| c.as_ptr() == code.as_ptr());
        Ok(match self.sharing() {
            Some(family)
                if !own
                    && self.traces(
                        &code
                            .getattr(pyo3::intern!(code.py(), "co_filename"))?
                            .extract::<String>()?,
                    ) =>
            {
                family.id
            }
            _ => self.id,
        })
    }

    /// Whether this configuration runs entries `owner` made.
    pub fn runs_entries_of(&self, owner: u64) -> bool {
        owner == self.id || self.sharing().is_some_and(|f| f.id == owner)
    }

    /// Whose library call summaries its translations use (`vm/summaries.rs`): its family's,
    /// where it shares one (its own code tells library code from the user's as the family's
    /// does), else its own.
    pub fn summary_owner(&self) -> u64 {
        self.sharing().map_or(self.id, |family| family.id)
    }

    /// The family whose translations this configuration shares (none while explaining).
    fn sharing(&self) -> Option<&Arc<Family>> {
        self.family
            .as_ref()
            .filter(|_| !self.explaining.load(Ordering::Relaxed))
    }

    /// Where the entries a translation of `owner` stores are listed: they go with it.
    pub fn caches_of(&self, owner: u64) -> &Mutex<Vec<Weak<Entries>>> {
        match &self.family {
            Some(family) if family.id == owner => &family.caches,
            _ => &self.caches,
        }
    }

    /// Where this configuration's reports stand, before a translation.
    pub fn mark(&self) -> ReportMark {
        ReportMark {
            breaks: self.stats.breaks.lock().len(),
            fallbacks: self.stats.fallbacks.lock().len(),
            explanations: self.stats.explanations.lock().len(),
            #[cfg(feature = "testing")]
            graph_runs: self.graph_runs.lock().len(),
        }
    }

    /// What this configuration reported since `mark`: the reports of a shared translation
    /// (entry `serial`), for the other configurations of its family that run it.
    pub fn took_reports(&self, serial: u64, mark: &ReportMark) -> Reported {
        self.replayed.lock().insert(serial);
        let tail =
            |list: &Mutex<Vec<Record>>, from: usize| list.lock().get(from..).unwrap_or_default().to_vec();
        Reported {
            breaks: tail(&self.stats.breaks, mark.breaks),
            fallbacks: tail(&self.stats.fallbacks, mark.fallbacks),
            explanations: self
                .stats
                .explanations
                .lock()
                .get(mark.explanations..)
                .unwrap_or_default()
                .to_vec(),
            #[cfg(feature = "testing")]
            graph_runs: self
                .graph_runs
                .lock()
                .get(mark.graph_runs..)
                .unwrap_or_default()
                .to_vec(),
        }
    }

    /// The first run of a shared entry another configuration made: its translation's
    /// breaks, fallbacks and explanation count as this configuration's too (its calls ran
    /// them), once.
    pub fn replay(&self, serial: u64, reported: &Reported) {
        if !self.replayed.lock().insert(serial) {
            return;
        }
        self.stats.breaks.lock().extend(reported.breaks.iter().cloned());
        self.stats
            .fallbacks
            .lock()
            .extend(reported.fallbacks.iter().cloned());
        self.stats
            .explanations
            .lock()
            .extend(reported.explanations.iter().cloned());
        #[cfg(feature = "testing")]
        self.graph_runs.lock().extend(reported.graph_runs.iter().cloned());
    }

    pub fn set_own_frame(&self, code: &Bound<'_, PyAny>, outcome: OwnFrame) {
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
            drop(entries.remove(|e| e.owner == id));
        }
    }
}

/// Live configurations with `traced_prefixes`: while there is one, a skipped library
/// frame's answer is remembered for its code only where no family traces its file
/// (another session may translate it).
pub static TRACING_CONFIGS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The translated calls running on this thread, innermost last.
    pub static SESSIONS: RefCell<Vec<Option<Arc<Config>>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `call` as a call of a function translated with `config` (None: untranslated).
/// A translated call arms the thread: the hook, scoped, is asked about its frames only
/// there (outside, `current_session()` is None and every frame runs its own code).
pub fn with_session<R>(config: Option<Arc<Config>>, call: impl FnOnce() -> R) -> R {
    let _armed = config.is_some().then(ArmedScope::enter);
    SESSIONS.with(|s| s.borrow_mut().push(config));
    let result = call();
    SESSIONS.with(|s| s.borrow_mut().pop());
    result
}

pub fn current_session() -> Option<Arc<Config>> {
    SESSIONS.with(|s| s.borrow().last().cloned().flatten())
}

/// The owners whose entries are kept: the configurations whose translated function lives,
/// and every family.
pub fn live_owners() -> Vec<u64> {
    let mut owners: Vec<u64> = CONFIGS
        .lock()
        .iter()
        .filter(|(_, c)| c.strong_count() > 0)
        .map(|(id, _)| *id)
        .collect();
    owners.extend(FAMILIES.lock().iter().map(|f| f.id));
    owners
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
        ("guards", &stats.guards),
        ("graphs", &stats.graphs),
        ("ops_captured", &stats.ops_captured),
        ("instructions_simulated", &stats.instructions_simulated),
        ("library_calls_replayed", &stats.library_calls_replayed),
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
    let (choice, runs_original) = config
        .cost_model
        .as_ref()
        .map_or(("off", 0), |model| (model.choice().name(), model.runs_original()));
    dict.set_item("cost_model", choice)?;
    dict.set_item("runs_original", runs_original)?;
    Ok(dict)
}
