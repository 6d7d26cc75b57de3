//! The smallest native frame hook: every call of one function runs another
//! function's code. framehook is reached only through its C API capsule
//! (`framehook._native._C_API`), via the safe trait of `framehook-capi`.

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use framehook_capi::{Api, FrameHook, HookFrame, Options};
use pyo3::prelude::*;

/// How many times any redirect hook was asked about a frame: shows the caching.
static HOOK_CALLS: AtomicU64 = AtomicU64::new(0);
/// Redirect hooks framehook has not freed yet.
static LIVE_HOOKS: AtomicUsize = AtomicUsize::new(0);

/// The hook's user data: framehook owns it from registration and drops it
/// once the hook is removed and no frame or handle can reach it.
struct Redirect {
    source: ManuallyDrop<Py<PyAny>>,
    target: ManuallyDrop<Py<PyAny>>,
}

impl Redirect {
    fn new(source: Py<PyAny>, target: Py<PyAny>) -> Self {
        LIVE_HOOKS.fetch_add(1, Ordering::Relaxed);
        Self {
            source: ManuallyDrop::new(source),
            target: ManuallyDrop::new(target),
        }
    }
}

impl Drop for Redirect {
    fn drop(&mut self) {
        LIVE_HOOKS.fetch_sub(1, Ordering::Relaxed);
        // framehook drops the hook on an attached thread, but this crate's PyO3
        // does not know it is attached there: a plain `Py` drop would only queue
        // the decref until this module is next called. Release them now.
        // SAFETY: framehook.h promises an attached thread for free_user_data (and
        // `register`'s failure path runs inside `redirect`); the fields are not used again.
        let (py, source, target) = unsafe {
            (
                Python::assume_attached(),
                ManuallyDrop::take(&mut self.source),
                ManuallyDrop::take(&mut self.target),
            )
        };
        source.drop_ref(py);
        target.drop_ref(py);
    }
}

impl FrameHook for Redirect {
    fn on_frame<'py>(&self, frame: &HookFrame<'_, 'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        HOOK_CALLS.fetch_add(1, Ordering::Relaxed);
        // Matching the original code keeps the answer a function of the code
        // object alone, which is what `cache: true` promises framehook.
        let redirected = frame.original_code().is(&*self.source);
        Ok(redirected.then(|| self.target.bind(frame.py()).clone()))
    }
}

/// Makes every call of `source` run `target`'s code (with `source`'s globals
/// and arguments). With `cache=False` the hook is asked about every frame.
/// Returns the `framehook.HookHandle`; remove it with
/// `framehook.remove_frame_hook(handle)`.
#[pyfunction]
#[pyo3(signature = (source, target, *, name = "redirect", cache = true))]
fn redirect(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    name: &str,
    cache: bool,
) -> PyResult<Py<PyAny>> {
    let hook = Redirect::new(
        source.getattr("__code__")?.unbind(),
        target.getattr("__code__")?.unbind(),
    );
    let options = Options {
        cache,
        ..Options::named(name)
    };
    // The registration itself may be dropped: the hook stays until removed.
    let registration = Api::import(py)?.register(py, hook, options)?;
    Ok(registration.handle().clone_ref(py))
}

/// How many times redirect hooks were called, all hooks together.
#[pyfunction]
fn hook_calls() -> u64 {
    HOOK_CALLS.load(Ordering::Relaxed)
}

/// How many redirect hooks are alive (registered, or removed but still referenced).
#[pyfunction]
fn live_hooks() -> usize {
    LIVE_HOOKS.load(Ordering::Relaxed)
}

#[pymodule]
fn native_hook_example(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(redirect, m)?)?;
    m.add_function(wrap_pyfunction!(hook_calls, m)?)?;
    m.add_function(wrap_pyfunction!(live_hooks, m)?)?;
    Ok(())
}
