//! hookprof's native part: a framehook observer, registered through framehook's
//! capsule C API (the `framehook-capi` crate), that records per-thread call
//! counts, inclusive and exclusive wall time and call paths; and the flame
//! graph renderer (inferno).

mod record;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use framehook_capi::{Api, Event, FrameHook, Options, Registration};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyBytes;
use thread_local::ThreadLocal;

use record::ThreadRecord;

/// What `Collector.totals()` gives per code: (code, replaced original or None,
/// calls, primitive calls, tottime, cumtime), times in seconds.
type TotalsRow = (Py<PyAny>, Option<Py<PyAny>>, u64, u64, f64, f64);

/// What `Collector.call_tree()` gives per call path: (index of the parent path
/// or None, code, replaced original or None, exclusive nanoseconds).
type PathRow = (Option<usize>, Py<PyAny>, Option<Py<PyAny>>, u64);

/// Sessions are numbered from 1; 0 means stopped.
static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

struct Shared {
    /// The session whose events count, 0 while stopped. Frames that began in an
    /// earlier session report their exits to that session's observer, which
    /// stays alive until they end: those events are dropped.
    session: AtomicU64,
    /// Only its own thread locks a record, except when profiling stops and when
    /// reporting: the locks are uncontended.
    threads: ThreadLocal<parking_lot::Mutex<ThreadRecord>>,
}

struct Observer {
    shared: Arc<Shared>,
    session: u64,
}

impl FrameHook for Observer {
    fn observe(
        &self,
        _py: Python<'_>,
        event: Event,
        code: &Bound<'_, PyAny>,
        original: Option<&Bound<'_, PyAny>>,
    ) {
        let now = Instant::now();
        let mut record = self.shared.threads.get_or_default().lock();
        // Checked under the record's lock: stop() ends each record's frames under it,
        // so nothing is pushed after that.
        if self.shared.session.load(Ordering::Acquire) != self.session {
            return;
        }
        match event {
            Event::Call => record.call(code, original, now),
            Event::Resume => record.resume(code, now),
            Event::Return | Event::Exception | Event::Yield => record.exit(code, now),
        }
    }
}

/// Records calls while started. Python's `hookprof.Profiler` derives from it;
/// start, stop and the context manager are native so that the profiler's own
/// frames never show in what it records.
#[pyclass(subclass, frozen, module = "hookprof._native")]
struct Collector {
    shared: Arc<Shared>,
    registration: Mutex<Option<Registration>>,
}

impl Collector {
    /// Every thread's record added up (Python references only: no Python code runs
    /// while a record is locked, so an observed frame cannot wait on it).
    fn merged(&self, py: Python<'_>) -> ThreadRecord {
        let mut merged = ThreadRecord::default();
        for record in self.shared.threads.iter() {
            merged.absorb(py, &record.lock());
        }
        merged
    }
}

#[pymethods]
impl Collector {
    #[new]
    fn new() -> Self {
        Self {
            shared: Arc::new(Shared {
                session: AtomicU64::new(0),
                threads: ThreadLocal::new(),
            }),
            registration: Mutex::new(None),
        }
    }

    /// Starts recording (again: totals add up across sessions, like cProfile).
    fn start(&self, py: Python<'_>) -> PyResult<()> {
        let mut registration = self
            .registration
            .lock_py_attached(py)
            .unwrap_or_else(PoisonError::into_inner);
        if registration.is_some() {
            return Ok(());
        }
        let session = NEXT_SESSION.fetch_add(1, Ordering::Relaxed);
        // Before registering: the first event must count.
        self.shared.session.store(session, Ordering::Release);
        let observer = Observer {
            shared: Arc::clone(&self.shared),
            session,
        };
        let options = Options {
            transform: false,
            observe: true,
            ..Options::named("hookprof")
        };
        match Api::import(py).and_then(|api| api.register(py, observer, options)) {
            Ok(registered) => *registration = Some(registered),
            Err(err) => {
                self.shared.session.store(0, Ordering::Release);
                return Err(err);
            }
        }
        Ok(())
    }

    /// Stops recording; frames still running count as returned now.
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        let mut registration = self
            .registration
            .lock_py_attached(py)
            .unwrap_or_else(PoisonError::into_inner);
        let Some(registered) = registration.take() else {
            return Ok(());
        };
        self.shared.session.store(0, Ordering::Release);
        let now = Instant::now();
        for record in self.shared.threads.iter() {
            record.lock().finish(now);
        }
        match registered.remove(py) {
            // Someone removed the hook already (framehook.clear_frame_hooks()).
            Err(err) if err.is_instance_of::<PyValueError>(py) => Ok(()),
            result => result,
        }
    }

    #[getter]
    fn running(&self, py: Python<'_>) -> bool {
        self.registration
            .lock_py_attached(py)
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    fn __enter__(slf: &Bound<'_, Self>) -> PyResult<Py<Self>> {
        slf.get().start(slf.py())?;
        Ok(slf.clone().unbind())
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        self.stop(py)?;
        Ok(false)
    }

    /// A row per code object that ran.
    fn totals(&self, py: Python<'_>) -> Vec<TotalsRow> {
        let seconds = |ns: u64| ns as f64 / 1e9;
        self.merged(py)
            .codes
            .into_iter()
            .map(|totals| {
                let (tottime, cumtime) = (seconds(totals.tottime_ns), seconds(totals.cumtime_ns));
                (
                    totals.code,
                    totals.original,
                    totals.calls,
                    totals.primitive_calls,
                    tottime,
                    cumtime,
                )
            })
            .collect()
    }

    /// The call tree: a row per call path, parents before children.
    fn call_tree(&self, py: Python<'_>) -> Vec<PathRow> {
        let merged = self.merged(py);
        merged
            .nodes
            .iter()
            .map(|node| {
                let totals = &merged.codes[node.code];
                let original = totals.original.as_ref().map(|original| original.clone_ref(py));
                (node.parent, totals.code.clone_ref(py), original, node.self_ns)
            })
            .collect()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let registration = self
            .registration
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(registration) = registration {
            self.shared.session.store(0, Ordering::Release);
            Python::attach(|py| {
                if let Err(err) = registration.remove(py) {
                    if !err.is_instance_of::<PyValueError>(py) {
                        err.write_unraisable(py, None);
                    }
                }
            });
        }
    }
}

/// An SVG flame graph of collapsed stack lines ("a;b;c 42", counts in microseconds).
#[pyfunction]
fn flamegraph<'py>(py: Python<'py>, lines: Vec<String>, title: String) -> PyResult<Bound<'py, PyBytes>> {
    use inferno::flamegraph::{color::MultiPalette, from_lines, Options, Palette};

    let svg = py.detach(move || {
        let mut options = Options::default();
        options.title = title;
        options.count_name = "μs".to_owned();
        // Colours by where the code lives (stdlib, site-packages, the rest), from the path in each name.
        options.colors = Palette::Multi(MultiPalette::Python);
        let mut svg = Vec::new();
        from_lines(&mut options, lines.iter().map(String::as_str), &mut svg).map(|()| svg)
    });
    let svg = svg.map_err(|err| PyValueError::new_err(format!("no flame graph: {err}")))?;
    Ok(PyBytes::new(py, &svg))
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Collector>()?;
    m.add_function(wrap_pyfunction!(flamegraph, m)?)?;
    Ok(())
}
