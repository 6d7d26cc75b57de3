//! Which sources of the frame hold one object: the guards that keep the translation's view
//! of identity true.
//!
//! The translation tracks what it changes by the object's identity (a list's or dict's
//! symbolic copy, an attribute stored), since one object may be reached through several
//! sources (`pair[0]` and `pair[1]` of `[a, a]`). That is exact for a later call only where
//! the same sources hold the same objects: those that held the changed object again, and
//! the others (of its type) another object. Without these guards, a translation made for
//! `[a, a]` would run for `[a, b]` with `b` changed too, and one made for `[a, b]` would run
//! for `[a, a]` reading `a` as it was before the change.

use rustc_hash::FxHashSet;

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// Guards each object from the frame the translation changed (a mutated list or dict, an
    /// attribute stored or deleted) to be held by the sources that held it, and by no other
    /// source holding an object of its type. Called once, when the translation is done.
    pub fn guard_identities(&mut self) {
        let changed: FxHashSet<usize> = self
            .mutated
            .keys()
            .copied()
            .chain(self.stored_attrs.iter().map(|(address, ..)| *address))
            .collect();
        if changed.is_empty() {
            return;
        }
        // Sources guarded by identity: two of them can never come to hold one object.
        let pinned: FxHashSet<SourceId> = self
            .guards
            .iter()
            .filter(|g| matches!(g.check, Check::Id(_)))
            .map(|g| g.source)
            .collect();
        let mut new_guards = Vec::new();
        for &address in &changed {
            let holders: Vec<&(SourceId, Bound<'py, PyAny>)> = self
                .sourced
                .iter()
                .filter(|(_, obj)| obj.as_ptr() as usize == address)
                .collect();
            let Some(&&(first, ref changed_obj)) = holders.first() else {
                // Made by the translation: no later call brings it.
                continue;
            };
            for (other, _) in &holders[1..] {
                if *other != first {
                    new_guards.push((*other, Check::SameAs(first)));
                }
            }
            let first_pinned = pinned.contains(&first);
            let ty = changed_obj.get_type();
            for (other, obj) in &self.sourced {
                let could_be_it = obj.as_ptr() as usize != address && obj.get_type().is(&ty);
                if could_be_it && !(first_pinned && pinned.contains(other)) {
                    new_guards.push((first, Check::Distinct(vec![*other])));
                }
            }
        }
        for (source, check) in new_guards {
            self.add_guard(source, check);
        }
    }
}
