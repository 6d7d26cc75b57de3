//! The hot path: what happens to every hookable frame while hooks are installed.

use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::Arc;

use framehook_capi::Event;
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyCode;

use super::capi::NativeFrame;
use super::code_state::{CodeState, FinalDecision, Plan};
use super::compat;
use super::disabled::disabled_here;
use super::frame::Frame;
use super::pyobject::{discard, instance_value, StrongRef};
use super::registry::{Generation, Hook, Observer, ObserverSet, OnError, Registry, Transform};
use super::rust_hook::{AfterFrame, HookContext};
use crate::pep523_backend::{
    new_error, Context, Decision as RawDecision, FrameView, NativeLink, TracingSuspended,
};

// Hooks and observers run inside a `TracingSuspended`, as trace functions do:
// the eval function passes the frames they start through unhooked.

const RUN_ORIGINAL: RawDecision = RawDecision {
    code: ptr::null_mut(),
    arg_map: ptr::null(),
    arg_map_owner: ptr::null_mut(),
    observers: ptr::null_mut(),
    after_frame: ptr::null_mut(),
};

#[inline]
fn observers_token(registry: &Registry, generation: Generation) -> *mut c_void {
    if !generation.observing() {
        return ptr::null_mut();
    }
    registry
        .observers()
        .map_or(ptr::null_mut(), |set| Arc::into_raw(set).cast_mut().cast())
}

/// The decision to run `plan`'s code (None: the original), with its observers and callbacks.
#[inline]
fn decision(
    py: Python<'_>,
    plan: Option<&Arc<Plan>>,
    observers: *mut c_void,
    after_frame: *mut c_void,
) -> RawDecision {
    let Some(plan) = plan else {
        return RawDecision {
            observers,
            after_frame,
            ..RUN_ORIGINAL
        };
    };
    // The plan keeps the argument map alive until the eval function releases it.
    let (arg_map, arg_map_owner) = match &plan.arg_map {
        None => (ptr::null(), ptr::null_mut()),
        Some(map) => (map.as_ptr(), Arc::into_raw(Arc::clone(plan)).cast_mut().cast()),
    };
    RawDecision {
        code: plan.code.bind(py).into_ptr(),
        arg_map,
        arg_map_owner,
        observers,
        after_frame,
    }
}

/// Runs the hook chain for a frame about to start and says what to run.
/// Frames the eval function handed to this layer (test builds): those it did not pass
/// through on its own.
#[cfg(feature = "testing")]
pub static DISPATCHED_FRAMES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub(crate) fn on_frame(py: Python<'_>, view: &FrameView<'_>) -> PyResult<RawDecision> {
    #[cfg(feature = "testing")]
    DISPATCHED_FRAMES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if disabled_here() {
        return Ok(RUN_ORIGINAL);
    }
    // SAFETY: the view comes from the eval function, installed with this registry.
    let registry = unsafe { Registry::from_context(view.context()) };
    // Loaded before the hooks: a generation is never newer than the hooks seen.
    let generation = registry.generation();
    let original = view.code(py);
    {
        // The fast path: the chain decided for this code in this generation already.
        let remembered = CodeState::existing(registry, &original)
            .and_then(|state| state.final_decision(generation.number()));
        match remembered {
            Some(FinalDecision::RunOriginal) => {
                return Ok(decision(
                    py,
                    None,
                    observers_token(registry, generation),
                    ptr::null_mut(),
                ))
            }
            Some(FinalDecision::Run(plan)) => {
                return Ok(decision(
                    py,
                    Some(&plan),
                    observers_token(registry, generation),
                    ptr::null_mut(),
                ))
            }
            None => {}
        }
    }
    let hooks = registry.snapshot();
    if hooks.is_empty() {
        return Ok(RUN_ORIGINAL);
    }
    let mut chain = Chain::new(py, view, registry, original.to_owned(), generation.number());
    let original = chain.original.clone();
    let outcome = chain.run(hooks.iter().map(Arc::as_ref), original, None);
    chain.decide(outcome, observers_token(registry, generation))
}

/// The rest of a frame's dispatch after the eval function called the native
/// hooks of `links` itself (see `Registry`'s native chains): `links[index]`
/// answered `returned` for the original code; the hooks after it are asked here.
#[inline]
pub(crate) fn on_native_rest(
    py: Python<'_>,
    view: &FrameView<'_>,
    links: &[NativeLink],
    index: usize,
    returned: PyResult<Option<Bound<'_, PyAny>>>,
) -> PyResult<RawDecision> {
    // SAFETY: the eval function retains the chain, whose links own these hooks, for the call.
    let hooks: Vec<&Hook> = links
        .iter()
        .map(|link| unsafe { &*link.owner.cast::<Hook>() })
        .collect();
    // SAFETY: as in on_frame.
    let registry = unsafe { Registry::from_context(view.context()) };
    let original = view.code(py).to_owned();
    // A native chain is published for a generation nobody observes.
    let mut chain = Chain::new(
        py,
        view,
        registry,
        original.clone(),
        registry.generation().number(),
    );
    chain.tracing = Some(TracingSuspended::enter_for(view));
    let outcome = chain
        .settle(hooks[index], &original, returned)
        .and_then(|answer| {
            let (current, plan) = answer.unwrap_or((original, None));
            chain.run(hooks[index + 1..].iter().copied(), current, plan)
        });
    chain.decide(outcome, ptr::null_mut())
}

/// What a native hook function's call returned: its replacement (None: it
/// declined), or its failure. The one reading of the C API's calling
/// convention, whether the hook was called here or by the eval function.
///
/// # Safety
/// `status` and `replacement` are what a hook function just returned and set:
/// on success a new reference or NULL; on failure (< 0) an exception is set.
#[inline]
pub(crate) unsafe fn native_answer<'py>(
    py: Python<'py>,
    status: c_int,
    replacement: *mut pyo3::ffi::PyObject,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if status < 0 {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: guaranteed by the caller.
    Ok(unsafe { Bound::from_owned_ptr_or_opt(py, replacement) })
}

/// Releases a hook a native chain's link owned.
///
/// # Safety
/// `owner` comes from a link made by `Registry`'s native chains; released once.
#[inline]
pub(crate) unsafe fn release_native_owner(owner: *const c_void) {
    // SAFETY: guaranteed by the caller: `Arc::into_raw` of a Hook when the chain was made.
    drop(unsafe { Arc::from_raw(owner.cast::<Hook>()) });
}

fn run_after_frame(py: Python<'_>, after: Vec<AfterFrame>) {
    let pending = PyErr::take(py);
    for callback in after {
        callback(py);
    }
    if let Some(err) = pending {
        err.restore(py);
    }
}

/// Runs the callbacks hooks registered to run after a frame.
///
/// # Safety
/// `after_frame` must come from [`on_frame`]; finished once.
#[inline]
pub(crate) unsafe fn finish(py: Python<'_>, after_frame: *mut c_void) {
    // SAFETY: guaranteed by the caller: a Box<Vec<AfterFrame>> from into_raw.
    let after = unsafe { Box::from_raw(after_frame.cast::<Vec<AfterFrame>>()) };
    run_after_frame(py, *after);
}

/// Releases what a decision kept alive for the eval function.
///
/// # Safety
/// `owner` is a decision's `arg_map_owner`; released once.
#[inline]
pub(crate) unsafe fn release(owner: *mut c_void) {
    // SAFETY: guaranteed by the caller: `Arc::into_raw` of a Plan in `decision`.
    drop(unsafe { Arc::from_raw(owner.cast_const().cast::<Plan>()) });
}

/// Who observes a frame that passes through unhooked (a resumed generator, a
/// thrown-in frame): an observer set token, or NULL.
#[inline]
pub(crate) fn passthrough_observers(_py: Python<'_>, context: &Context) -> *mut c_void {
    if disabled_here() {
        return ptr::null_mut();
    }
    // SAFETY: the context comes from the eval function, installed by a registry.
    let registry = unsafe { Registry::from_context(context) };
    observers_token(registry, registry.generation())
}

/// Reports one event to every hook of an observer set.
///
/// # Safety
/// `observers` must come from [`on_frame`] or [`passthrough_observers`] and not be released yet.
#[inline]
pub(crate) unsafe fn observe(
    py: Python<'_>,
    observers: *mut c_void,
    event: c_int,
    code: &Borrowed<'_, '_, PyAny>,
    original: Option<&Borrowed<'_, '_, PyAny>>,
) {
    // SAFETY: guaranteed by the caller: the token is a live Arc<ObserverSet>.
    let set = unsafe { &*observers.cast_const().cast::<ObserverSet>() };
    // Observers see a clean state; an exception pending (the frame raised, or
    // one is thrown into it) is put back after. Checking is cheaper than taking.
    let pending = if PyErr::occurred(py) {
        PyErr::take(py)
    } else {
        None
    };
    let _tracing = TracingSuspended::enter(py);
    for hook in &set.hooks {
        match &hook.observer {
            Some(Observer::Native(observe)) => {
                let original = original.map_or(ptr::null_mut(), |original| original.as_ptr());
                // SAFETY: attached; user data and a live borrowed code, as the C API promises.
                unsafe { observe(hook.user_data(), event, code.as_ptr(), original) };
                if let Some(err) = PyErr::take(py) {
                    err.write_unraisable(py, Some(&hook_description(py, hook)));
                }
            }
            Some(Observer::Python(observer)) => {
                let name = Event::from_raw(event).map_or("unknown", Event::name);
                if let Err(err) = observer.bind(py).call1((name, code, original)) {
                    err.write_unraisable(py, Some(&hook_description(py, hook)));
                }
            }
            None => {}
        }
    }
    if let Some(err) = pending {
        err.restore(py);
    }
}

fn hook_description<'py>(py: Python<'py>, hook: &Hook) -> Bound<'py, PyAny> {
    pyo3::types::PyString::new(py, &format!("framehook observer of hook {:?}", hook.name)).into_any()
}

/// Releases an observer set token.
///
/// # Safety
/// `observers` must come from [`on_frame`] or [`passthrough_observers`]; released once.
#[inline]
pub(crate) unsafe fn release_observers(observers: *mut c_void) {
    // SAFETY: guaranteed by the caller: the token is an Arc<ObserverSet> from into_raw.
    drop(unsafe { Arc::from_raw(observers.cast_const().cast::<ObserverSet>()) });
}

struct Chain<'a, 'py> {
    py: Python<'py>,
    view: &'a FrameView<'a>,
    registry: &'a Registry,
    original: Bound<'py, PyAny>,
    generation: u64,
    state: Option<&'a CodeState>,
    /// The `framehook.Frame` Python hooks get, made for the first.
    frame: Option<Bound<'py, PyAny>>,
    after: Vec<AfterFrame>,
    /// Entered before the first hook is asked; answers from the cache need none.
    tracing: Option<TracingSuspended>,
    /// Every answer so far holds for every frame of the code (cached hooks,
    /// Rust hooks that said so): the final decision can be remembered.
    holds_for_the_code: bool,
}

impl<'a, 'py> Chain<'a, 'py> {
    fn new(
        py: Python<'py>,
        view: &'a FrameView<'a>,
        registry: &'a Registry,
        original: Bound<'py, PyAny>,
        generation: u64,
    ) -> Self {
        Chain {
            py,
            view,
            registry,
            original,
            generation,
            state: None,
            frame: None,
            after: Vec::new(),
            tracing: None,
            holds_for_the_code: true,
        }
    }

    /// Ends the chain: what runs, remembered for the code when every answer holds for it.
    fn decide(
        mut self,
        outcome: PyResult<Option<(Bound<'py, PyAny>, Arc<Plan>)>>,
        observers: *mut c_void,
    ) -> PyResult<RawDecision> {
        if let Some(frame) = &self.frame {
            // SAFETY: made by `Chain::frame`, an instance of the Frame type.
            unsafe { instance_value::<Frame>(frame.as_ptr()) }.expire();
        }
        drop(self.tracing.take());
        let after = std::mem::take(&mut self.after);
        let replacement = match outcome {
            Ok(replacement) => replacement,
            Err(err) => {
                // The frame will not run: it has finished as far as the hooks are concerned.
                run_after_frame(self.py, after);
                return Err(err);
            }
        };
        let plan = replacement.map(|(_, plan)| plan);
        if self.holds_for_the_code && after.is_empty() {
            self.state()?
                .store_final_decision(self.py, self.generation, plan.as_ref());
        }
        let after_frame = if after.is_empty() {
            ptr::null_mut()
        } else {
            Box::into_raw(Box::new(after)).cast()
        };
        Ok(decision(self.py, plan.as_ref(), observers, after_frame))
    }

    fn state(&mut self) -> PyResult<&'a CodeState> {
        if let Some(state) = self.state {
            return Ok(state);
        }
        let state = CodeState::of(self.registry, &self.original)?;
        self.state = Some(state);
        Ok(state)
    }

    /// The Frame object for Python hooks, with `current` as its code.
    fn frame(&mut self, current: &Bound<'py, PyAny>) -> PyResult<&Bound<'py, PyAny>> {
        if self.frame.is_none() {
            let frame = Frame::new(self.py, self.view);
            self.frame = Some(self.registry.types.frame.instantiate(self.py, frame)?);
        }
        let frame = self.frame.as_ref().expect("just set");
        // SAFETY: made above, an instance of the Frame type.
        unsafe { instance_value::<Frame>(frame.as_ptr()) }.set_code(current);
        Ok(frame)
    }

    /// Asks `hooks` in turn, from `current` (with its plan), for the final code
    /// and its plan; None when the original runs.
    #[allow(clippy::type_complexity)]
    fn run<'h>(
        &mut self,
        hooks: impl Iterator<Item = &'h Hook>,
        mut current: Bound<'py, PyAny>,
        mut current_plan: Option<Arc<Plan>>,
    ) -> PyResult<Option<(Bound<'py, PyAny>, Arc<Plan>)>> {
        for hook in hooks.filter(|hook| hook.transform.is_some() && hook.enabled()) {
            let Some((answer, plan)) = self.ask(hook, &current)? else {
                continue;
            };
            current = answer;
            current_plan = plan;
        }
        Ok(current_plan.map(|plan| (current, plan)))
    }

    /// The hook's answer for `current`, checked (see [`Chain::settle`]).
    #[allow(clippy::type_complexity)]
    fn ask(
        &mut self,
        hook: &Hook,
        current: &Bound<'py, PyAny>,
    ) -> PyResult<Option<(Bound<'py, PyAny>, Option<Arc<Plan>>)>> {
        if hook.cache {
            let state = self.state()?;
            if let Some(answer) =
                state.cached_answer(self.py, self.generation, hook.id, current, &self.original)
            {
                // Only checked answers are cached: this finds the remembered plan.
                return match answer {
                    Some(code) => Ok(Some((code.clone(), self.plan_for(hook, &code)?))),
                    None => Ok(None),
                };
            }
        }
        // Rust hooks suspend tracing themselves, around what runs Python code.
        if self.tracing.is_none() && !matches!(hook.transform, Some(Transform::Rust(_))) {
            self.tracing = Some(TracingSuspended::enter_for(self.view));
        }
        let returned = match &hook.transform {
            Some(Transform::Python(callable)) => {
                let frame = self.frame(current)?.clone();
                callable
                    .bind(self.py)
                    .call1((frame,))
                    .map(|returned| (!returned.is_none()).then_some(returned))
            }
            Some(Transform::Native(function)) => self.ask_native(hook, *function, current),
            Some(Transform::Rust(rust_hook)) => {
                let mut context = HookContext {
                    py: self.py,
                    view: self.view,
                    current,
                    original: &self.original,
                    after: &mut self.after,
                    holds_for_the_code: false,
                };
                let answer = rust_hook.on_frame(&mut context);
                self.holds_for_the_code &= context.holds_for_the_code;
                answer
            }
            None => Ok(None),
        };
        self.settle(hook, current, returned)
    }

    /// What the hook `returned` for `current`, checked: Some((new code, its plan)) or None
    /// (no change). A failure (the hook raised, returned something other than a code object,
    /// or an incompatible code object) follows `on_error`; "log" never swallows a
    /// BaseException that is not an Exception (KeyboardInterrupt, SystemExit, ...).
    #[allow(clippy::type_complexity)]
    fn settle(
        &mut self,
        hook: &Hook,
        current: &Bound<'py, PyAny>,
        returned: PyResult<Option<Bound<'py, PyAny>>>,
    ) -> PyResult<Option<(Bound<'py, PyAny>, Option<Arc<Plan>>)>> {
        self.holds_for_the_code &= hook.cache || matches!(hook.transform, Some(Transform::Rust(_)));
        let checked = match returned {
            Ok(None) => Ok(None),
            Ok(Some(returned)) if returned.is(current) => Ok(None),
            Ok(Some(returned)) if returned.is_instance_of::<PyCode>() => {
                self.plan_for(hook, &returned).map(|plan| Some((returned, plan)))
            }
            Ok(Some(returned)) => Err(new_error::<PyTypeError>(
                self.py,
                format!(
                    "frame hook {:?} must return a code object or None, not {}",
                    hook.name,
                    returned.get_type().name()?
                ),
            )),
            Err(err) => Err(err),
        };
        let answer = match checked {
            Ok(answer) => answer,
            Err(err) if hook.on_error == OnError::Log && err.is_instance_of::<PyException>(self.py) => {
                log_hook_error(self.py, hook, &self.original, err);
                None
            }
            Err(err) => return Err(err),
        };
        if hook.cache {
            self.state()?.store_answer(
                self.generation,
                hook.id,
                current,
                &self.original,
                answer.as_ref().map(|(code, _)| code),
            );
        }
        Ok(answer)
    }

    fn ask_native(
        &self,
        hook: &Hook,
        function: framehook_capi::ffi::framehook_hook_func,
        current: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let frame = NativeFrame::new(self.view, current, &self.original);
        let mut replacement = ptr::null_mut();
        // SAFETY: attached; the frame and its objects stay alive during the call, as the
        // C API promises; what the call returned is read as the C API says.
        unsafe {
            let status = function(hook.user_data(), frame.as_ffi(), &mut replacement);
            native_answer(self.py, status, replacement)
        }
    }

    /// The checked plan for running `replacement`; None if it is the original.
    fn plan_for(&mut self, hook: &Hook, replacement: &Bound<'py, PyAny>) -> PyResult<Option<Arc<Plan>>> {
        if replacement.is(&self.original) {
            return Ok(None);
        }
        let state = self.state()?;
        if let Some(plan) = state.plan(replacement) {
            return Ok(Some(plan));
        }
        let arg_map = compat::check(&hook.name, &self.original, replacement)?;
        let plan = Arc::new(Plan {
            code: StrongRef::new(replacement),
            arg_map,
        });
        state.remember_plan(&plan)?;
        Ok(Some(plan))
    }
}

fn log_hook_error(py: Python<'_>, hook: &Hook, code: &Bound<'_, PyAny>, err: PyErr) {
    let args = (hook.name.as_str(), code).into_pyobject(py);
    match args {
        Ok(args) => super::log::error_with(
            py,
            "frame hook %r failed on %r; running the frame as if it declined",
            args,
            err,
        ),
        Err(failed) => {
            discard(py, err);
            failed.write_unraisable(py, None);
        }
    }
}
