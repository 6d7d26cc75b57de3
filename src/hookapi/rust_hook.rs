//! Hooks written in Rust inside framehook (SOT is one): called directly, with
//! a context that can hand Python a frame object and run code once the frame
//! has finished.

use pyo3::prelude::*;

use crate::pep523_backend::{self, FrameView, TracingSuspended};

/// Runs once the frame it was registered for has finished (returned, raised,
/// or never ran because a later hook failed). Sees no pending exception.
pub type AfterFrame = Box<dyn FnOnce(Python<'_>) + Send>;

/// A frame hook implemented in Rust. Unlike Python and native hooks, it runs
/// with tracing on: it suspends tracing itself (see [`HookContext::suspend_tracing`])
/// around whatever may run Python code, which then runs as a hook's would.
pub trait RustHook: Send + Sync + 'static {
    /// The code to run instead of `context.code()`, or None to decline.
    fn on_frame<'py>(&self, context: &mut HookContext<'_, 'py>) -> PyResult<Option<Bound<'py, PyAny>>>;

    /// Whether the hook declines every frame of a thread outside an [`ArmedScope`]
    /// (SOT: outside a translated call): where every hook is so, framehook runs
    /// those frames without asking any.
    fn scoped(&self) -> bool {
        false
    }
}

/// While alive, this thread's frames are asked of scoped hooks (see
/// [`RustHook::scoped`]). Scopes nest; each belongs to the thread that made it.
pub struct ArmedScope {
    _thread_bound: std::marker::PhantomData<*const ()>,
}

impl ArmedScope {
    pub fn enter() -> Self {
        pep523_backend::arm_thread(1);
        Self {
            _thread_bound: std::marker::PhantomData,
        }
    }
}

impl Drop for ArmedScope {
    fn drop(&mut self) {
        pep523_backend::arm_thread(-1);
    }
}

/// What a [`RustHook`] sees of the frame being dispatched.
pub struct HookContext<'a, 'py> {
    pub(crate) py: Python<'py>,
    pub(crate) view: &'a FrameView<'a>,
    pub(crate) current: &'a Bound<'py, PyAny>,
    pub(crate) original: &'a Bound<'py, PyAny>,
    pub(crate) after: &'a mut Vec<AfterFrame>,
    pub(crate) holds_for_the_code: bool,
}

impl<'a, 'py> HookContext<'a, 'py> {
    pub fn py(&self) -> Python<'py> {
        self.py
    }

    /// The code that would run now: the original, or an earlier hook's replacement.
    pub fn code(&self) -> &Bound<'py, PyAny> {
        self.current
    }

    pub fn original_code(&self) -> &Bound<'py, PyAny> {
        self.original
    }

    pub fn globals(&self) -> Bound<'py, PyAny> {
        self.view.globals(self.py)
    }

    /// Argument `index` (of `co_varnames`) as bound at entry, read straight
    /// from the frame (cells unboxed); None if unbound.
    pub fn argument(&self, index: usize) -> Option<Borrowed<'a, 'py, PyAny>> {
        self.view.argument(self.py, index)
    }

    /// The contents of free variable `index` (of `co_freevars`), or None.
    pub fn free_variable(&self, index: usize) -> Option<Borrowed<'a, 'py, PyAny>> {
        self.view.free_variable(self.py, index)
    }

    /// The cell of free variable `index` (of `co_freevars`), or None.
    pub fn free_cell(&self, index: usize) -> Option<Borrowed<'a, 'py, PyAny>> {
        self.view.free_cell(self.py, index)
    }

    /// The frame's builtins.
    pub fn builtins(&self) -> Bound<'py, PyAny> {
        self.view.builtins(self.py)
    }

    /// The values bound so far, as a new dict (cells unboxed).
    pub fn locals(&self) -> PyResult<Bound<'py, PyAny>> {
        self.view.locals(self.py)
    }

    /// A frame object with `f_code` (showing `code()`), `f_globals`,
    /// `f_builtins` and `f_locals`, laid out in memory like the interpreter's
    /// frames for native code that reads frame fields (Paddle's guard tree).
    /// It owns its contents, so it stays valid after the dispatch.
    pub fn layout_frame(&self) -> PyResult<Bound<'py, PyAny>> {
        self.view.layout_frame(self.current)
    }

    /// Whether `code` has exception-handling entries (try/except/finally/with):
    /// an exception table on 3.11+; never on 3.9/3.10, whose bytecode sets up
    /// handlers with instructions instead.
    pub fn has_exception_table(&self, code: &Bound<'py, PyAny>) -> bool {
        pep523_backend::has_exception_table(code)
    }

    /// Whether a trace function (`sys.settrace`: a debugger, a line tracer) is set on
    /// this frame's thread.
    pub fn thread_traced(&self) -> bool {
        self.view.thread_traced()
    }

    /// Until dropped, this thread runs as a hook does: unseen by tracers and
    /// profilers, and the frames it starts are not hooked.
    pub fn suspend_tracing(&self) -> TracingSuspended {
        TracingSuspended::enter_for(self.view)
    }

    /// Promises that this answer is the hook's answer for every frame of this
    /// code, on any thread, until the registry's generation changes (see
    /// [`Registry::invalidate_decisions`](crate::hookapi::registry::Registry::invalidate_decisions)):
    /// framehook may then run the code's frames without asking, as for a cached hook.
    pub fn answer_holds_for_the_code(&mut self) {
        self.holds_for_the_code = true;
    }

    /// Runs `after` once this frame has finished.
    pub fn after_frame(&mut self, after: AfterFrame) {
        self.after.push(after);
    }
}
