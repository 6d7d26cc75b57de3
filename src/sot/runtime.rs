//! The SOT hook: per-thread callbacks, skip rules and code status, joined to
//! the hook chain while some thread of the interpreter has a callback.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyCode, PyString};

use super::code_status::CodeStatus;
use super::skip::PrefixTrie;
use crate::hookapi::per_code::{self, PerCode};
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
        if let Err(err) = SotRuntime::current(py).and_then(|runtime| runtime.reconcile(py)) {
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

/// A Bound, not a Py: the eval function runs attached without PyO3 knowing,
/// and a dropped Py would wait in PyO3's pool of deferred decrefs.
fn current_callback(py: Python<'_>) -> Option<Bound<'_, PyAny>> {
    CALLBACK.with(|callback| {
        callback
            .borrow()
            .as_ref()
            .map(|callback| callback.bind(py).clone())
    })
}

/// What SOT knows about one code object, stored in its co_extra and freed with it.
#[derive(Default)]
struct SotCode {
    /// A [`CodeStatus`] (its bits). Counted with a load and a store: threads
    /// racing on one code may lose a count, delaying giving up by a call.
    status: AtomicU32,
    /// The skip rules' verdict: (rules version << 1) | skipped; 0 until judged.
    skip_verdict: AtomicU64,
    /// Registered by `eval_frame_no_skip_codes`.
    never_skipped: AtomicBool,
}

impl SotCode {
    fn set_status(&self, status: CodeStatus) {
        self.status.store(status.to_bits(), Ordering::Relaxed);
    }
}

/// SOT's answers changed (its rules did): frames must ask it again.
fn forget_decisions(py: Python<'_>) {
    if let Some(registry) = Registry::find(py) {
        registry.invalidate_decisions(py);
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
    /// Where each code's [`SotCode`] is.
    code_states: PerCode<SotCode>,
    skip_prefixes: Mutex<PrefixTrie>,
    /// Bumped when the skip rules change, so that every verdict is judged anew.
    rules_version: AtomicU64,
    registration: Mutex<Registration>,
    pass_exception_tables: AtomicBool,
}

static RUNTIMES: LazyLock<Mutex<Vec<Arc<SotRuntime>>>> = LazyLock::new(Mutex::default);

impl SotRuntime {
    pub fn current(py: Python<'_>) -> PyResult<Arc<SotRuntime>> {
        let interpreter = per_code::current_interpreter(py);
        let mut runtimes = RUNTIMES.lock();
        if let Some(runtime) = runtimes.iter().find(|runtime| runtime.interpreter == interpreter) {
            return Ok(Arc::clone(runtime));
        }
        let registry = Registry::current(py)?;
        let runtime = Arc::new(SotRuntime {
            interpreter,
            code_states: PerCode::request(py)?,
            skip_prefixes: Mutex::default(),
            rules_version: AtomicU64::new(1),
            registration: Mutex::default(),
            pass_exception_tables: AtomicBool::new(true),
        });
        runtimes.push(Arc::clone(&runtime));
        // The interpreter's runtime goes with it: one made later at the same address starts clean.
        let released = Arc::downgrade(&runtime);
        registry.at_exit(move |_py| {
            RUNTIMES
                .lock()
                .retain(|runtime| !std::ptr::eq(Arc::as_ptr(runtime), released.as_ptr()));
        });
        Ok(runtime)
    }

    /// SOT's state of `code` (a code object), made on first use.
    fn code_state<'c>(&self, code: &Bound<'_, PyAny>) -> PyResult<&'c SotCode> {
        // SAFETY: callers keep the code alive.
        unsafe { self.code_states.get_or_default(code) }
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
        let registry = Registry::current(py)?;
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

    pub fn add_skip_prefixes(&self, py: Python<'_>, prefixes: &[String]) {
        let mut trie = self.skip_prefixes.lock();
        for prefix in prefixes {
            trie.insert(prefix);
        }
        self.rules_version.fetch_add(1, Ordering::AcqRel);
        drop(trie);
        forget_decisions(py);
    }

    pub fn add_never_skipped(&self, py: Python<'_>, codes: &[Bound<'_, PyAny>]) -> PyResult<()> {
        for code in codes {
            self.code_state(code)?
                .never_skipped
                .store(true, Ordering::Relaxed);
        }
        forget_decisions(py);
        Ok(())
    }

    /// `sot_setup_codes_with_graph`: marks codes as having a graph, known or not.
    pub fn setup_with_graph(&self, codes: &[Bound<'_, PyAny>]) -> PyResult<()> {
        for code in codes {
            self.code_state(code)?.set_status(CodeStatus::WithGraph);
        }
        Ok(())
    }

    /// `sot_set_with_graph`: marks a code as having a graph if SOT has met it.
    pub fn set_with_graph(&self, code: &Bound<'_, PyAny>) {
        // SAFETY: as in `code_state`; `code` is alive during the call.
        if let Some(state) = unsafe { self.code_states.get(code) } {
            state.set_status(CodeStatus::WithGraph);
        }
    }

    pub fn set_pass_exception_tables(&self, py: Python<'_>, pass: bool) -> bool {
        let previous = self.pass_exception_tables.swap(pass, Ordering::AcqRel);
        forget_decisions(py);
        previous
    }

    fn is_skipped(
        &self,
        context: &HookContext<'_, '_>,
        code: &Bound<'_, PyAny>,
        state: &SotCode,
    ) -> PyResult<bool> {
        if state.never_skipped.load(Ordering::Relaxed) {
            return Ok(false);
        }
        // Loaded before the rules are read: a verdict is never newer than its version.
        let version = self.rules_version.load(Ordering::Acquire);
        let verdict = state.skip_verdict.load(Ordering::Relaxed);
        if verdict >> 1 == version {
            return Ok(verdict & 1 == 1);
        }
        let _tracing = context.suspend_tracing();
        let filename = code.getattr(pyo3::intern!(code.py(), "co_filename"))?;
        let filename = filename.cast::<PyString>()?.to_cow()?;
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
        let skipped = self
            .skip_prefixes
            .lock()
            .matches(module_file.as_deref().unwrap_or(&filename));
        state
            .skip_verdict
            .store(version << 1 | u64::from(skipped), Ordering::Relaxed);
        Ok(skipped)
    }

    /// Counts a call of `code`; true when it should run untranslated from now on.
    fn without_graph(&self, state: &SotCode) -> bool {
        let mut status = CodeStatus::from_bits(state.status.load(Ordering::Relaxed));
        let given_up = status.count_call_without_graph();
        state.set_status(status);
        given_up
    }

    /// Calls `callback(frame)` with this thread's callback unset, as Paddle does.
    fn ask_callback<'py>(
        &self,
        context: &mut HookContext<'_, 'py>,
        callback: &Bound<'py, PyAny>,
    ) -> PyResult<(Option<Bound<'py, PyAny>>, bool)> {
        let py = context.py();
        let _tracing = context.suspend_tracing();
        // Paddle's native guards read the frame's memory: give them the layout they expect.
        let frame = context.layout_frame()?;
        let saved = suspend();
        let answer = callback.call1((frame,));
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
            PyTypeError::new_err("the SOT callback's result.disable_eval_frame must be True or False")
        })?;
        Ok((code, disable.is_true()))
    }
}

impl RustHook for SotRuntime {
    fn on_frame<'py>(&self, context: &mut HookContext<'_, 'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = context.py();
        let Some(callback) = current_callback(py) else {
            return Ok(None);
        };
        let code = context.code().clone();
        if self.pass_exception_tables.load(Ordering::Acquire) && context.has_exception_table(&code) {
            // Every thread's answer for this code, with a callback or not.
            context.answer_holds_for_the_code();
            return Ok(None);
        }
        let state = self.code_state(&code)?;
        let skipped = self.is_skipped(context, &code, state)?;
        let status = CodeStatus::from_bits(state.status.load(Ordering::Relaxed));
        if skipped && status == CodeStatus::WithGraph {
            // Nothing to count, nothing to disable: declined on every thread
            // until the rules change (they invalidate the decisions).
            context.answer_holds_for_the_code();
            return Ok(None);
        }
        let (replacement, disable) = if skipped {
            (None, false)
        } else {
            self.ask_callback(context, &callback)?
        };
        // Code status, as Paddle 3.3.1 counts it: only frames left as they are
        // (no replacement) are counted, whether their subtree is disabled or not;
        // a code given up on runs unchanged with its whole subtree unhooked.
        let given_up = replacement.is_none() && self.without_graph(state);
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
