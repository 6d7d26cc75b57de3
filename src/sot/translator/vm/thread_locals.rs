//! Attributes of a `threading.local()` (an exact `_thread._local`): state one per thread,
//! which library code keeps its configuration in (scikit-learn's `_threadlocal`).
//!
//! Its `__getattribute__` and `__setattr__` are object's generic ones over the calling
//! thread's own `__dict__` (the exact type has no `__init__` to run for a thread's first
//! use; a subclass's runs Python, and is not modeled). So an attribute the type lacks reads
//! as an item of that dict: through its source, which the guards and the generated code
//! read again in the thread that runs them, present (then guarded as any object from the
//! frame) or absent (AttributeError). A store is replayed by the generated code, in its
//! thread too.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// Whether `obj` is a `threading.local()` itself (not a subclass's instance).
    pub(super) fn is_thread_local(&self, obj: &Bound<'py, PyAny>) -> bool {
        obj.get_type().is(&self.ops.thread_local_type)
    }

    /// `local.name`, read in this thread and by each later call in its own.
    pub(super) fn thread_local_attr(
        &mut self,
        owner: Vid,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        name: &str,
    ) -> Res<Vid> {
        let local = self.thread_local_source(owner, obj, source, name)?;
        let entry = Source::Attr(local, self.name_ref(name));
        match obj.getattr(name) {
            Ok(value) => {
                let value = self.value_of_source(entry, value);
                if let Val::Obj { source: Some(s), .. } = self.val(value) {
                    let s = *s;
                    self.add_guard(s, Check::Present);
                }
                Ok(value)
            }
            Err(error) if error.is_instance_of::<PyAttributeError>(self.py) => {
                let entry = self.intern(entry);
                self.add_guard(entry, Check::Absent);
                Err(Problem::Python(error))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// `local.name = value`: replayed by the generated code (into the running thread's
    /// `__dict__`); the translation reads the stored value from here on.
    pub(super) fn store_thread_local_attr(
        &mut self,
        owner: Vid,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        name: String,
        value: Vid,
    ) -> Res<()> {
        self.thread_local_source(owner, obj, source, &name)?;
        self.side_effects.push(SideEffect::StoreAttr {
            target: owner,
            name: name.clone(),
            value,
            through_object: false,
        });
        self.stored_attrs.push((obj.as_ptr() as usize, name, Some(value)));
        Ok(())
    }

    /// The local's source, its type guarded, where `name` is one of the thread's own
    /// attributes: a name its type has (a method, `__class__`) or `__dict__` (the thread's
    /// dict itself) is not modeled.
    fn thread_local_source(
        &mut self,
        owner: Vid,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        name: &str,
    ) -> Res<SourceId> {
        let Some(source) = source else {
            return unsupported(format!(
                "attribute {name} of a thread-local object without a source"
            ));
        };
        if name == "__dict__" || self.type_lookup(&obj.get_type().into_any(), name)?.is_some() {
            return unsupported(format!(
                "attribute {name} of a thread-local object, which its type has"
            ));
        }
        self.guard_type(owner);
        Ok(source)
    }
}
