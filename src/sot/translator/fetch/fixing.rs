//! Which sources of an entry CPython's watchers fix (`World`, in `guard::world`): found on
//! the frame being translated, through a `Fetcher`, when the entry is made.

use std::sync::Arc;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyModule, PyTuple, PyType};

use super::{function_part_named, Fetcher};
use crate::hookapi::pyobject::{
    type_is_mutable, watch_dict, watch_dict_key, watch_function, watchers_available, StrongRef, Watch,
};
use crate::sot::translator::guard::check::{class_is_fixed, is_immutable_sized, is_value_type, Check};
use crate::sot::translator::guard::source::{Guard, Source, SourceId};
use crate::sot::translator::guard::world::{thread_id, ReadThrough, World};
use crate::sot::translator::pyutil::loaded;

/// What the world knows of a source, decided once per source.
#[derive(Clone, Copy, PartialEq)]
enum Fixed {
    Undecided,
    /// Nothing: read on each call.
    No,
    /// Fixed by watched reads: its value is set aside, with the guards it decides.
    Yes,
    /// Pinned by an `is` guard of the entry, which stays to be checked: what is read
    /// through it by watched reads is fixed (the entry runs only where the guard holds).
    Pinned,
    /// `T.__dict__` of a type whose attributes cannot change (a builtin type): a new
    /// mappingproxy on each read, over entries that are fixed.
    ImmutableNamespace,
}

/// The world of an entry whose guards are `guards`, read through `fetcher` on the frame
/// being translated; None where nothing is fixed (no watchers on this interpreter).
pub fn build_world(fetcher: &mut Fetcher<'_, '_, '_>, guards: &[Guard]) -> Option<World> {
    if guards.is_empty() || !watchers_available(fetcher.context.py()) {
        return None;
    }
    let count = fetcher.table.sources.len();
    let mut pinned = vec![false; count];
    for guard in guards {
        if matches!(guard.check, Check::Id(_)) {
            pinned[guard.source] = true;
        }
    }
    let mut builder = Builder {
        watch: Watch::new(),
        decided: vec![Fixed::Undecided; count],
        pinned,
        modules: Vec::new(),
        thread_local_type: loaded(fetcher.context.py(), "_thread")
            .ok()?
            .getattr(pyo3::intern!(fetcher.context.py(), "_local"))
            .ok()?,
        thread: 0,
    };
    let mut rest = Vec::new();
    let mut fixed_any = false;
    for (index, guard) in guards.iter().enumerate() {
        if builder.decide(fetcher, guard.source) == Fixed::Yes && builder.decided_by_value(fetcher, guard) {
            fixed_any = true;
        } else {
            rest.push(u32::try_from(index).ok()?);
        }
    }
    if !fixed_any {
        return None;
    }
    let fixed = builder
        .decided
        .iter()
        .enumerate()
        .map(|(id, decided)| {
            (*decided == Fixed::Yes).then(|| fetcher.fetch(id).map(|value| StrongRef::new(&value)))
        })
        .collect();
    let read_through = ReadThrough {
        globals: StrongRef::new(&fetcher.context.globals()),
        builtins: StrongRef::new(&fetcher.context.builtins()),
        modules: builder.modules,
        thread: builder.thread,
    };
    Some(World::new(builder.watch, read_through, fixed, rest))
}

/// After every guard held: armed at `changes` where each fixed value is the object
/// the frame now gives.
pub fn arm_if_unchanged(world: &World, fetcher: &mut Fetcher<'_, '_, '_>, changes: u64) {
    let same = world.fixed_sources().all(|(id, value)| {
        let now = fetcher.fetch(id);
        now.as_ref().map(|n| n.as_ptr()) == value.map(|v| v.as_ptr())
    });
    if same {
        world.arm(changes);
    }
}

struct Builder<'py> {
    watch: Arc<Watch>,
    decided: Vec<Fixed>,
    /// By source id: whether an `is` guard of the entry pins it.
    pinned: Vec<bool>,
    modules: Vec<StrongRef>,
    thread_local_type: Bound<'py, PyAny>,
    /// The thread whose thread-local attributes were read (0: none).
    thread: i64,
}

impl<'py> Builder<'py> {
    /// What the world knows of the source (watching what it reads).
    fn decide(&mut self, fetcher: &mut Fetcher<'_, '_, '_>, id: SourceId) -> Fixed {
        if self.decided[id] == Fixed::Undecided {
            let decided = match self.decide_anew(fetcher, id) {
                Fixed::No if self.pinned[id] => Fixed::Pinned,
                decided => decided,
            };
            self.decided[id] = decided;
        }
        self.decided[id]
    }

    /// Whether what is read through the source can be fixed.
    fn anchors(&mut self, fetcher: &mut Fetcher<'_, '_, '_>, id: SourceId) -> bool {
        matches!(self.decide(fetcher, id), Fixed::Yes | Fixed::Pinned)
    }

    fn decide_anew(&mut self, fetcher: &mut Fetcher<'_, '_, '_>, id: SourceId) -> Fixed {
        let py = fetcher.context.py();
        let table = fetcher.table;
        let yes_if = |fixed: bool| if fixed { Fixed::Yes } else { Fixed::No };
        match &table.sources[id] {
            Source::Held(_) => Fixed::Yes,
            Source::Global(name) => {
                let globals = fetcher.context.globals();
                yes_if(self.watch_entry(&globals, &name.bind(py)))
            }
            Source::Builtin(name) => {
                // Absent from the globals (a global of that name would shadow it), then the
                // builtins' entry.
                let (globals, builtins) = (fetcher.context.globals(), fetcher.context.builtins());
                yes_if(
                    self.watch_entry(&globals, &name.bind(py)) && self.watch_entry(&builtins, &name.bind(py)),
                )
            }
            Source::Item(parent, key) | Source::StoredItem(parent, key) => {
                let parent = *parent;
                match self.decide(fetcher, parent) {
                    Fixed::ImmutableNamespace => return Fixed::Yes,
                    Fixed::Yes | Fixed::Pinned => {}
                    _ => return Fixed::No,
                }
                let Some(container) = fetcher.fetch(parent) else {
                    return Fixed::No;
                };
                // A tuple's items are its own for good; a dict's entry is watched.
                yes_if(
                    container.is_exact_instance_of::<PyTuple>()
                        || self.watch_entry(&container, &key.bind(py)),
                )
            }
            Source::Attr(parent, name) => {
                let parent = *parent;
                if !self.anchors(fetcher, parent) {
                    return Fixed::No;
                }
                let Some(owner) = fetcher.fetch(parent) else {
                    return Fixed::No;
                };
                if function_part_named(&owner, name).is_some() {
                    // `__code__`, `__defaults__`, `__kwdefaults__` change only by assignment,
                    // which the function watcher sees; `__globals__` never changes.
                    return yes_if(watch_function(&owner, &self.watch));
                }
                let name = name.bind(py);
                if let Ok(ty) = owner.cast::<PyType>() {
                    let namespace = name.extract::<String>().is_ok_and(|n| n == "__dict__");
                    if namespace && !type_is_mutable(ty) {
                        return Fixed::ImmutableNamespace;
                    }
                    return Fixed::No;
                }
                if owner.get_type().is(&self.thread_local_type) {
                    return yes_if(self.thread_local_attribute(&owner, &name));
                }
                yes_if(self.module_attribute(fetcher, &owner, id, &name))
            }
            _ => Fixed::No,
        }
    }

    /// A module's attribute that is its dict's entry (not one of the module type's own
    /// attributes, not computed by a module `__getattr__`): fixed by that entry.
    fn module_attribute(
        &mut self,
        fetcher: &mut Fetcher<'_, '_, '_>,
        module: &Bound<'_, PyAny>,
        id: SourceId,
        name: &Bound<'_, PyAny>,
    ) -> bool {
        // SAFETY: a live object; reading its type only.
        if unsafe { ffi::PyModule_CheckExact(module.as_ptr()) } == 0 {
            return false;
        }
        if !is_plain_name(name) {
            return false;
        }
        let Ok(module) = module.cast::<PyModule>() else {
            return false;
        };
        let namespace = module.dict();
        let entry = namespace.get_item(name).ok().flatten();
        let found = fetcher.fetch(id);
        if entry.is_none() || entry.as_ref().map(|e| e.as_ptr()) != found.as_ref().map(|f| f.as_ptr()) {
            return false;
        }
        if !self.watch_entry(namespace.as_any(), name) {
            return false;
        }
        self.add_module(module.as_any());
        true
    }

    /// Whether the guard holds now and would hold again for the same object: its check
    /// reads nothing but the object's identity, or a type or value that cannot change.
    fn decided_by_value(&mut self, fetcher: &mut Fetcher<'_, '_, '_>, guard: &Guard) -> bool {
        let value = fetcher.fetch(guard.source);
        let decided = match (&guard.check, &value) {
            (Check::Id(_), Some(_)) | (Check::Present, Some(_)) | (Check::Absent, None) => true,
            // A function's type cannot change, and its code and defaults only by
            // assignment, which the function watcher sees.
            (Check::Function { .. }, Some(v)) => watch_function(v, &self.watch),
            (Check::Type(_), Some(v)) => {
                // SAFETY: a live object; reading its type only.
                if unsafe { ffi::PyModule_CheckExact(v.as_ptr()) } != 0 {
                    // Its class is checked on each call instead (`ReadThrough::modules`).
                    self.add_module(v);
                    true
                } else {
                    class_is_fixed(&StrongRef::new(v))
                }
            }
            (Check::Equals(_), Some(v)) => is_value_type(v),
            (Check::Len(_), Some(v)) if is_immutable_sized(&StrongRef::new(v)) => true,
            // A dict's keys or length: fixed while none of its entries changes.
            (Check::Keys(_) | Check::Len(_), Some(v)) => v
                .cast_exact::<PyDict>()
                .is_ok_and(|dict| watch_dict(dict, &self.watch)),
            _ => false,
        };
        decided && fetcher.check(guard)
    }

    /// An attribute of a `threading.local` (exact `_thread._local`: no descriptor, no
    /// `__getattr__` of its own), which is the entry of the thread's own dict: fixed for
    /// this thread (`ReadThrough::thread`).
    fn thread_local_attribute(&mut self, local: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>) -> bool {
        if !is_plain_name(name) {
            return false;
        }
        let Ok(own) = local.getattr(pyo3::intern!(local.py(), "__dict__")) else {
            return false;
        };
        self.thread = thread_id();
        self.watch_entry(&own, name)
    }

    /// A module whose class `World::holds` checks on each call (each module once).
    fn add_module(&mut self, module: &Bound<'_, PyAny>) {
        if !self.modules.iter().any(|m| m.as_ptr() == module.as_ptr()) {
            self.modules.push(StrongRef::new(module));
        }
    }

    /// Watches the entry `key` of `dict`, an exact dict: false where it cannot be watched.
    fn watch_entry(&mut self, dict: &Bound<'_, PyAny>, key: &Bound<'_, PyAny>) -> bool {
        dict.cast_exact::<PyDict>()
            .is_ok_and(|dict| watch_dict_key(dict, key, &self.watch))
    }
}

/// A name that is not a dunder: no attribute of the module or `threading.local` types'
/// own, so the instance's dict answers it.
fn is_plain_name(name: &Bound<'_, PyAny>) -> bool {
    name.extract::<String>().is_ok_and(|n| !n.starts_with("__"))
}
