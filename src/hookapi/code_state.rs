//! What framehook remembers per original code object (stored in its co_extra):
//! the answers of `cache=True` hooks, and the checked replacements with their
//! argument maps. Freed with the code object.

use std::ffi::c_int;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;

use super::pyobject::StrongRef;
use crate::pep523_backend::{self, CodeStateHead};

/// How many distinct replacements are remembered per original code.
const MAX_PLANS: usize = 8;

/// A replacement known to be call-compatible with the original.
pub(crate) struct Plan {
    pub code: StrongRef,
    /// For each argument slot of the replacement, the original's slot; None when identical.
    pub arg_map: Option<Arc<[c_int]>>,
}

struct Answer {
    hook_id: u64,
    /// The code the hook saw; None when it was the original.
    input: Option<StrongRef>,
    /// What it answered; None when it declined.
    output: Option<StrongRef>,
}

/// A checked replacement, remembered without keeping it alive: a replacement may reference
/// its original's globals (a hook's generated code calls functions of its module), and a
/// strong reference from co_extra, which the GC does not see, would make globals -> function
/// -> code -> co_extra -> replacement -> globals a cycle nothing could collect. Whoever made
/// the replacement keeps it while it is in use.
struct RememberedPlan {
    /// A weak reference to the replacement code.
    code: StrongRef,
    arg_map: Option<Arc<[c_int]>>,
}

impl RememberedPlan {
    /// The replacement, while it lives.
    fn code<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        let weak = self.code.bind(py);
        let weak = weak.cast::<PyWeakrefReference>().ok()?;
        weak.upgrade()
    }
}

#[derive(Default)]
struct Inner {
    generation: u64,
    answers: Vec<Answer>,
    plans: Vec<RememberedPlan>,
    /// The whole chain's decision to run a replacement, and its generation.
    final_plan: Option<(u64, Arc<Plan>)>,
}

/// What the whole chain of cached hooks decided for a code, in one generation:
/// the eval function's fast path, which asks no hook and builds no chain.
pub(crate) enum FinalDecision {
    RunOriginal,
    Run(Arc<Plan>),
}

/// What co_extra points to: the eval function reads it as its contract's
/// `fh_code_state_head`, so the head comes first (checked below).
#[derive(Default)]
#[repr(C)]
pub(crate) struct CodeState {
    /// The chain's decisions remembered for the whole code, read without the
    /// lock, by the eval function too.
    head: CodeStateHead,
    inner: Mutex<Inner>,
}

const _: () = assert!(std::mem::offset_of!(CodeState, head) == 0);

impl CodeState {
    /// The chain's decision remembered for `generation`, if any.
    #[inline]
    pub fn final_decision(&self, generation: u64) -> Option<FinalDecision> {
        if self.head.declined_in.load(Ordering::Acquire) == generation {
            return Some(FinalDecision::RunOriginal);
        }
        if self.head.replaced_in.load(Ordering::Acquire) != generation {
            return None;
        }
        let inner = self.inner.lock();
        match &inner.final_plan {
            Some((decided_in, plan)) if *decided_in == generation => {
                Some(FinalDecision::Run(Arc::clone(plan)))
            }
            _ => None,
        }
    }

    /// Remembers the chain's decision for every frame of the code in `generation`
    /// (`plan`, or None: the original runs).
    pub fn store_final_decision(&self, py: Python<'_>, generation: u64, plan: Option<&Arc<Plan>>) {
        match plan {
            None => self.head.declined_in.store(generation, Ordering::Release),
            Some(plan) => {
                let mut inner = self.inner.lock();
                // The eval function runs a replacement that needs no argument map itself.
                let code = plan.code.bind(py);
                pep523_backend::set_remembered_replacement(
                    &self.head,
                    plan.arg_map.is_none().then_some(&code),
                );
                // Dropped (with the previous replacement) after the head no longer shows it.
                let _previous = inner.final_plan.replace((generation, Arc::clone(plan)));
                self.head.replaced_in.store(generation, Ordering::Release);
            }
        }
    }

    /// The cached answer of hook `hook_id` for `input`: Some(answer) when known.
    pub fn cached_answer<'py>(
        &self,
        py: Python<'py>,
        generation: u64,
        hook_id: u64,
        input: &Bound<'py, PyAny>,
        original: &Bound<'py, PyAny>,
    ) -> Option<Option<Bound<'py, PyAny>>> {
        let inner = self.inner.lock();
        if inner.generation != generation {
            return None;
        }
        inner
            .answers
            .iter()
            .find(|answer| answer.hook_id == hook_id && same_input(answer, input, original))
            .map(|answer| answer.output.as_ref().map(|code| code.bind(py)))
    }

    pub fn store_answer(
        &self,
        generation: u64,
        hook_id: u64,
        input: &Bound<'_, PyAny>,
        original: &Bound<'_, PyAny>,
        output: Option<&Bound<'_, PyAny>>,
    ) {
        let mut inner = self.inner.lock();
        if inner.generation != generation {
            inner.generation = generation;
            inner.answers.clear();
        }
        inner
            .answers
            .retain(|answer| !(answer.hook_id == hook_id && same_input(answer, input, original)));
        inner.answers.push(Answer {
            hook_id,
            input: (!input.is(original)).then(|| StrongRef::new(input)),
            output: output.map(StrongRef::new),
        });
    }

    /// The plan for running `replacement` instead of the original, if checked before.
    pub fn plan(&self, replacement: &Bound<'_, PyAny>) -> Option<Arc<Plan>> {
        let py = replacement.py();
        let inner = self.inner.lock();
        let remembered = inner
            .plans
            .iter()
            .find(|plan| plan.code(py).is_some_and(|code| code.is(replacement)))?;
        Some(Arc::new(Plan {
            code: StrongRef::new(replacement),
            arg_map: remembered.arg_map.clone(),
        }))
    }

    /// Remembers `plan`'s replacement as checked, for as long as it lives.
    pub fn remember_plan(&self, plan: &Plan) -> PyResult<()> {
        // SAFETY: plans are remembered by the dispatch, attached.
        let py = unsafe { Python::assume_attached() };
        let weak = PyWeakrefReference::new(&plan.code.bind(py))?;
        let mut inner = self.inner.lock();
        inner.plans.retain(|p| p.code(py).is_some());
        if inner.plans.len() >= MAX_PLANS {
            inner.plans.remove(0);
        }
        inner.plans.push(RememberedPlan {
            code: StrongRef::from_owned(weak.into_any()),
            arg_map: plan.arg_map.clone(),
        });
        Ok(())
    }
}

fn same_input(answer: &Answer, input: &Bound<'_, PyAny>, original: &Bound<'_, PyAny>) -> bool {
    match &answer.input {
        None => input.is(original),
        Some(code) => code.is(input),
    }
}
