//! The SOT hook: per-thread callbacks, skip rules and code status, joined to
//! the hook chain while some thread of the interpreter has a callback.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyCode, PyString};

use super::code_status::CodeStatus;
use super::skip::PrefixTrie;
use crate::hookapi::registry::{Hook, OnError, Registry, Transform};
use crate::hookapi::rust_hook::{HookContext, RustHook};

thread_local! {
    /// This thread's callback (Paddle keeps it in thread-specific storage too).
    static CALLBACK: RefCell<Option<Py<PyAny>>> = const { RefCell::new(None) };
    /// Whether this thread counts among the runtime's threads with a callback.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
    /// How many times this thread's callback is set aside (while it runs, or
    /// while a frame's subtree runs without it); it comes back afterwards, so
    /// the thread keeps its place in the chain meanwhile.
    static SUSPENDED: Cell<usize> = const { Cell::new(0) };
}

/// Sets this thread's callback aside until [`resume`].
fn suspend() -> Option<Py<PyAny>> {
    SUSPENDED.with(|depth| depth.set(depth.get() + 1));
    take_callback()
}

/// Puts back what [`suspend`] set aside, whatever was set meanwhile (as Paddle does).
fn resume(saved: Option<Py<PyAny>>) {
    put_callback(saved);
    SUSPENDED.with(|depth| depth.set(depth.get() - 1));
}

/// After [`resume`]: the registration follows the callback that came back.
fn follow_resumed_callback(py: Python<'_>) {
    let changed = CALLBACK.with(|callback| callback.borrow().is_some()) != COUNTED.with(Cell::get);
    if changed && SUSPENDED.with(Cell::get) == 0 {
        if let Err(err) = SotRuntime::current(py).reconcile(py) {
            err.write_unraisable(py, None);
        }
    }
}

fn take_callback() -> Option<Py<PyAny>> {
    CALLBACK.with(|callback| callback.borrow_mut().take())
}

fn put_callback(callback: Option<Py<PyAny>>) -> Option<Py<PyAny>> {
    CALLBACK.with(|slot| std::mem::replace(&mut *slot.borrow_mut(), callback))
}

fn current_callback(py: Python<'_>) -> Option<Py<PyAny>> {
    CALLBACK.with(|callback| {
        callback
            .borrow()
            .as_ref()
            .map(|callback| callback.clone_ref(py))
    })
}

/// What SOT knows about one code object.
struct CodeEntry {
    /// Keeps the code alive so that its address is not reused by another.
    _code: Py<PyAny>,
    status: CodeStatus,
    /// The skip rules' verdict, until the rules change.
    skipped: Option<bool>,
}

#[derive(Default)]
struct Rules {
    prefixes: PrefixTrie,
    never_skipped: HashSet<usize>,
    /// Keeps never-skipped codes alive (see CodeEntry).
    never_skipped_codes: Vec<Py<PyAny>>,
    codes: HashMap<usize, CodeEntry>,
}

impl Rules {
    fn entry(&mut self, code: &Bound<'_, PyAny>) -> &mut CodeEntry {
        self.codes
            .entry(code.as_ptr() as usize)
            .or_insert_with(|| CodeEntry {
                _code: code.clone().unbind(),
                status: CodeStatus::default(),
                skipped: None,
            })
    }

    fn forget_skip_verdicts(&mut self) {
        for entry in self.codes.values_mut() {
            entry.skipped = None;
        }
    }
}

#[derive(Default)]
struct Registration {
    threads_with_callback: usize,
    hook: Option<Arc<Hook>>,
}

/// The SOT runtime of one interpreter.
pub struct SotRuntime {
    interpreter: usize,
    rules: Mutex<Rules>,
    registration: Mutex<Registration>,
    pass_exception_tables: std::sync::atomic::AtomicBool,
}

static RUNTIMES: LazyLock<Mutex<Vec<Arc<SotRuntime>>>> = LazyLock::new(Mutex::default);

impl SotRuntime {
    pub fn current(py: Python<'_>) -> Arc<SotRuntime> {
        let interpreter = crate::pep523_backend::current_interpreter(py);
        let mut runtimes = RUNTIMES.lock();
        if let Some(runtime) = runtimes
            .iter()
            .find(|runtime| runtime.interpreter == interpreter)
        {
            return Arc::clone(runtime);
        }
        let runtime = Arc::new(SotRuntime {
            interpreter,
            rules: Mutex::default(),
            registration: Mutex::default(),
            pass_exception_tables: std::sync::atomic::AtomicBool::new(true),
        });
        runtimes.push(Arc::clone(&runtime));
        runtime
    }

    /// `set_eval_frame`: installs this thread's callback, returning the old one.
    pub fn set_callback(
        self: &Arc<Self>,
        py: Python<'_>,
        callback: Option<Py<PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let old = put_callback(callback);
        // While the callback is set aside it is still this thread's: the
        // registration follows it when it comes back, not what is set meanwhile.
        if SUSPENDED.with(Cell::get) == 0 {
            self.reconcile(py)?;
        }
        Ok(old)
    }

    /// Brings the registration in line with this thread's callback: the hook is
    /// in the chain while at least one thread has a callback.
    fn reconcile(self: &Arc<Self>, py: Python<'_>) -> PyResult<()> {
        let has_callback = CALLBACK.with(|callback| callback.borrow().is_some());
        // Registering logs through Python logging, which may let another thread
        // run: wait for the lock with the GIL released so that thread can finish.
        let mut registration = py.detach(|| self.registration.lock());
        if has_callback != COUNTED.with(Cell::get) {
            if has_callback {
                registration.threads_with_callback += 1;
            } else {
                registration.threads_with_callback -= 1;
            }
            COUNTED.with(|counted| counted.set(has_callback));
        }
        let registry = Registry::current_or_create(py)?;
        // The hook may also have been removed by someone else (clear_frame_hooks()).
        let registered = registration.hook.as_ref().is_some_and(|hook| {
            registry
                .snapshot()
                .iter()
                .any(|registered| registered.id == hook.id)
        });
        if registration.threads_with_callback > 0 && !registered {
            let hook = Arc::new(Hook::new(
                "sot".to_owned(),
                Some(Transform::Rust(Arc::clone(self) as Arc<dyn RustHook>)),
                None,
                false,
                OnError::Raise,
                None,
            ));
            registry.add(py, Arc::clone(&hook))?;
            registration.hook = Some(hook);
        } else if registration.threads_with_callback == 0 {
            if let Some(hook) = registration.hook.take() {
                registry.remove(py, hook.id);
            }
        }
        Ok(())
    }

    pub fn add_skip_prefixes(&self, prefixes: &[String]) {
        let mut rules = self.rules.lock();
        for prefix in prefixes {
            rules.prefixes.insert(prefix);
        }
        rules.forget_skip_verdicts();
    }

    pub fn add_never_skipped(&self, codes: &[Bound<'_, PyAny>]) {
        let mut rules = self.rules.lock();
        for code in codes {
            if rules.never_skipped.insert(code.as_ptr() as usize) {
                rules.never_skipped_codes.push(code.clone().unbind());
            }
        }
        rules.forget_skip_verdicts();
    }

    /// `sot_setup_codes_with_graph`: marks codes as having a graph, known or not.
    pub fn setup_with_graph(&self, codes: &[Bound<'_, PyAny>]) {
        let mut rules = self.rules.lock();
        for code in codes {
            rules.entry(code).status = CodeStatus::WithGraph;
        }
    }

    /// `sot_set_with_graph`: marks a code as having a graph if SOT has met it.
    pub fn set_with_graph(&self, code: &Bound<'_, PyAny>) {
        if let Some(entry) = self.rules.lock().codes.get_mut(&(code.as_ptr() as usize)) {
            entry.status = CodeStatus::WithGraph;
        }
    }

    pub fn set_pass_exception_tables(&self, pass: bool) -> bool {
        self.pass_exception_tables
            .swap(pass, std::sync::atomic::Ordering::AcqRel)
    }

    fn is_skipped(&self, context: &HookContext<'_, '_>, code: &Bound<'_, PyAny>) -> PyResult<bool> {
        let filename = code.getattr(pyo3::intern!(code.py(), "co_filename"))?;
        let filename = filename.cast::<PyString>()?.to_cow()?;
        let mut rules = self.rules.lock();
        if rules.never_skipped.contains(&(code.as_ptr() as usize)) {
            return Ok(false);
        }
        if let Some(skipped) = rules.entry(code).skipped {
            return Ok(skipped);
        }
        // A frozen module is judged by the file it stands for.
        let module_file = if filename.starts_with("<frozen") {
            context
                .globals()
                .get_item("__file__")
                .ok()
                .and_then(|file| file.extract::<String>().ok())
        } else {
            None
        };
        let skipped = rules
            .prefixes
            .matches(module_file.as_deref().unwrap_or(&filename));
        rules.entry(code).skipped = Some(skipped);
        Ok(skipped)
    }

    /// Counts a call of `code`; true when it should run untranslated from now on.
    fn without_graph(&self, code: &Bound<'_, PyAny>) -> bool {
        self.rules
            .lock()
            .entry(code)
            .status
            .count_call_without_graph()
    }

    /// Calls `callback(frame)` with this thread's callback unset, as Paddle does.
    fn ask_callback<'py>(
        &self,
        context: &mut HookContext<'_, 'py>,
        callback: &Py<PyAny>,
    ) -> PyResult<(Option<Bound<'py, PyAny>>, bool)> {
        let py = context.py();
        // Paddle's native guards read the frame's memory: give them the layout they expect.
        let frame = context.layout_frame()?;
        let saved = suspend();
        let answer = callback.bind(py).call1((frame,));
        // Whatever the callback did to this thread's callback, the saved one is back.
        resume(saved);
        follow_resumed_callback(py);
        let answer = answer?;
        let code = answer.getattr(pyo3::intern!(py, "code"))?;
        let disable = answer.getattr(pyo3::intern!(py, "disable_eval_frame"))?;
        let code = if code.is_none() {
            None
        } else if code.is_instance_of::<PyCode>() {
            Some(code)
        } else {
            return Err(PyTypeError::new_err(format!(
                "the SOT callback's result.code must be a code object or None, not {}",
                code.get_type().name()?
            )));
        };
        let disable = disable.cast::<pyo3::types::PyBool>().map_err(|_| {
            PyTypeError::new_err(
                "the SOT callback's result.disable_eval_frame must be True or False",
            )
        })?;
        Ok((code, disable.is_true()))
    }
}

impl RustHook for SotRuntime {
    fn on_frame<'py>(
        &self,
        context: &mut HookContext<'_, 'py>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = context.py();
        let Some(callback) = current_callback(py) else {
            return Ok(None);
        };
        let code = context.code().clone();
        if self
            .pass_exception_tables
            .load(std::sync::atomic::Ordering::Acquire)
            && context.has_exception_table(&code)
        {
            return Ok(None);
        }
        let (replacement, disable) = if self.is_skipped(context, &code)? {
            (None, false)
        } else {
            self.ask_callback(context, &callback)?
        };
        // Code status, as Paddle 3.3.1 counts it: only frames left as they are
        // (no replacement) are counted, whether their subtree is disabled or not;
        // a code given up on runs unchanged with its whole subtree unhooked.
        let given_up = replacement.is_none() && self.without_graph(&code);
        if disable || given_up {
            // The frame's whole call subtree runs without this thread's callback.
            let saved = suspend();
            context.after_frame(Box::new(move |py| {
                resume(saved);
                follow_resumed_callback(py);
            }));
        }
        Ok(replacement)
    }
}
