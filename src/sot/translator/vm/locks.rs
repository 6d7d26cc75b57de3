//! Locks the translation makes: `threading.Lock()` and `threading.RLock()` (`_thread`'s
//! `allocate_lock`, `lock` type from 3.13 on, and `RLock`), held by `with` blocks and by
//! `acquire`/`release` (joblib's `Parallel` and scikit-learn's forests make one per call
//! and hold it around their work).
//!
//! A lock the translation made is seen by no other thread until the generated code makes
//! it again (`Val::Constructed`: the same factory called), so holding and releasing it
//! change nothing the program can see but its own state: the translation holds the example
//! lock it made (never one of the program's), and the generated code makes the lock anew
//! only where that example is not held (`is_held`: one held there cannot be made so, and
//! the break goes before it). An `acquire` that would wait (a plain lock held already)
//! breaks.

use super::*;

/// The lock methods modeled on a lock the translation made.
const MODELED: [&str; 5] = ["__enter__", "__exit__", "acquire", "release", "locked"];

impl<'py> Vm<'py, '_> {
    /// A lock made by `factory()`, where it is one of `_thread`'s lock factories; else None.
    pub(super) fn made_lock(
        &mut self,
        factory: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let ops = &self.ops;
        let factories = [&ops.allocate_lock, &ops.rlock_type, &ops.lock_type];
        if !factories.iter().any(|made_by| factory.is(made_by)) || !args.is_empty() || !kwargs.is_empty() {
            return Ok(None);
        }
        // `_thread.LockType()` makes a lock from 3.13 on (`threading.Lock`); before, it raises.
        let obj = match factory.call0() {
            Ok(obj) if self.ops.is_lock(&obj) => obj,
            _ => return Ok(None),
        };
        self.pin_callable(source, factory);
        Ok(Some(self.constructed(obj, factory.clone(), Vec::new(), &[])))
    }

    /// `type(lock).name` bound to `lock`, a lock the translation made, where the method is
    /// one modeled; else None.
    pub(super) fn made_lock_method(&mut self, lock: Vid, name: &str) -> Res<Option<Vid>> {
        let Val::Constructed { obj, .. } = self.val(lock) else {
            return Ok(None);
        };
        if !self.ops.is_lock(obj) || !MODELED.contains(&name) {
            return Ok(None);
        }
        let Some(method) = self.type_lookup(&obj.get_type().into_any(), name)? else {
            return Ok(None);
        };
        let function = self.constant(method);
        Ok(Some(self.push_val(Val::Method {
            function,
            receiver: lock,
        })))
    }

    /// A call of a lock's method (`function`, its C descriptor) on a lock the translation
    /// made: run on the example lock (acquiring without waiting); None for another call.
    pub(super) fn made_lock_call(
        &mut self,
        function: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let Some((&lock, rest)) = args.split_first() else {
            return Ok(None);
        };
        let Val::Constructed { obj, .. } = self.val(lock) else {
            return Ok(None);
        };
        let obj = obj.clone();
        if !self.ops.is_lock(&obj) || !kwargs.is_empty() {
            return Ok(None);
        }
        let ty = obj.get_type().into_any();
        let Some(name) = MODELED.iter().find(|name| {
            self.type_lookup(&ty, name)
                .ok()
                .flatten()
                .is_some_and(|m| m.is(function))
        }) else {
            return Ok(None);
        };
        match (*name, rest.len()) {
            ("__enter__" | "acquire", 0) => {
                let acquired = obj.call_method1(pyo3::intern!(self.py, "acquire"), (false,))?;
                if !acquired.is_truthy()? {
                    return graph_break("acquiring a lock the translation holds (it would wait)");
                }
                Ok(Some(self.boolean(true)))
            }
            ("__exit__", 3) | ("release", 0) => {
                obj.call_method0(pyo3::intern!(self.py, "release"))?;
                Ok(Some(self.none()))
            }
            ("locked", 0) => {
                let locked = obj.call_method0(pyo3::intern!(self.py, "locked"))?.is_truthy()?;
                Ok(Some(self.boolean(locked)))
            }
            _ => Ok(None),
        }
    }
}

/// Whether `obj`, a lock the translation made, is held (the generated code cannot make it
/// so: a new lock is free).
pub fn is_held(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let owned = match obj.call_method0(pyo3::intern!(obj.py(), "_is_owned")) {
        Ok(owned) => owned,
        Err(_) => obj.call_method0(pyo3::intern!(obj.py(), "locked"))?,
    };
    owned.is_truthy()
}
