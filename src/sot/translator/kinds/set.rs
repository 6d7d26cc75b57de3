//! Sets the translation made.
//!
//! Models, for an exact `set` the translation made: `type`, truth, `len`, iteration (in
//! CPython's order), `in` (compared as the hash table compares), `hash` (unhashable) and the
//! methods `add`, `remove`/`discard` of an absent item (KeyError / nothing), `clear`
//! (removing a present item breaks: it changes the order) and `pop` (the first item in
//! iteration order; the set is then a `PoppedSet`, see there); another attribute is looked
//! up on a real set (its AttributeError), and calling a method not listed breaks. A set or
//! frozenset from the frame is a known object (`known.rs`).

use pyo3::prelude::*;
use pyo3::types::PySet;

use framehook_bytecode::canonical::{Arg, Op};
use pyo3::exceptions::PyKeyError;

use super::{
    concrete_all, container_method, fill_with, no_tensor_in, push_items, Interp, Kind, Rebuild, Res, Sym,
    Val, Vid,
};
use crate::sot::translator::model::problem::{graph_break, Problem};

pub struct Set;

impl Kind for Set {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        _val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        Ok(Some(cx.py().get_type::<PySet>().into_any()))
    }

    fn truth<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(!items(val).is_empty()))
    }

    fn len<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<Vid>> {
        cx.int_value(items(val).len()).map(Some)
    }

    /// In CPython's iteration order: that of a set the items were added to one by one, in
    /// the order the translation added them (a removal, which would change it, breaks).
    fn items<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<Vec<Vid>>> {
        let items = items(val);
        let objects = concrete_all(cx, items)?;
        let real = PySet::empty(cx.py())?;
        for object in &objects {
            real.add(object)?;
        }
        let mut ordered = Vec::with_capacity(items.len());
        for element in real.iter() {
            // The items are distinct keys: each element is one of them.
            if let Some(index) = objects.iter().position(|o| o.is(&element)) {
                ordered.push(items[index]);
            }
        }
        Ok(Some(ordered))
    }

    fn concrete<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        let objs = concrete_all(cx, items(val))?;
        Ok(Some(PySet::new(cx.py(), objs)?.into_any()))
    }

    fn method<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        name: &str,
        args: &[Vid],
        _kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let none = cx.none();
        match (name, args) {
            ("clear", []) => cx.set_val(v, Val::Set(Vec::new())),
            ("remove" | "discard", [item]) => {
                let target = cx.concrete(*item)?;
                match cx.find_key(items(val), &target)? {
                    // The dummy a removal leaves changes where later items go, and so the
                    // order: the set is made for real first.
                    Some(_) => {
                        return graph_break("removing from a set the translation made (it changes its order)")
                    }
                    None if name == "discard" => {}
                    None => return Err(Problem::Python(PyKeyError::new_err((target.unbind(),)))),
                }
            }
            ("add", [item]) => cx.add_items(v, vec![*item])?,
            // The first item in iteration order: where CPython's search starts in a set
            // never popped from (its finger at the table's start).
            ("pop", []) => {
                let ordered = self.items(cx, v, val)?.unwrap_or_default();
                let Some(&first) = ordered.first() else {
                    return Err(Problem::Python(PyKeyError::new_err("pop from an empty set")));
                };
                let left = items(val).iter().copied().filter(|item| *item != first).collect();
                cx.set_val(v, Val::PoppedSet(left));
                return Ok(Some(first));
            }
            _ => return Ok(None),
        }
        Ok(Some(none))
    }

    fn attr<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>, name: &str) -> Res<Option<Vid>> {
        match val {
            Val::Set(_) => container_method::<PySet>(cx, v, name),
            _ => Ok(None),
        }
    }

    fn contains<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        item: Vid,
    ) -> Res<Option<bool>> {
        no_tensor_in(cx, v, item)?;
        let key = cx.concrete(item)?;
        Ok(Some(cx.find_key(items(val), &key)?.is_some()))
    }

    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, _v: Vid, val: &Val<'py>) -> PyResult<bool> {
        r.contents(val)?;
        Ok(true)
    }

    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, _moved: &dyn Fn(Sym) -> Sym) -> bool {
        matches!((old, new), (Val::Set(a), Val::Set(b)) if a == b)
    }

    fn build<'py>(&self, r: &mut dyn Rebuild<'py>, val: &Val<'py>) -> PyResult<bool> {
        push_items(r, items(val))?;
        r.emit(Op::BuildSet, Arg::Int(items(val).len() as u32));
        Ok(true)
    }

    fn make_empty<'py>(&self, r: &mut dyn Rebuild<'py>, _val: &Val<'py>) -> PyResult<bool> {
        r.emit(Op::BuildSet, Arg::Int(0));
        Ok(true)
    }

    /// `set.update(made, (items...))`.
    fn fill<'py>(&self, r: &mut dyn Rebuild<'py>, val: &Val<'py>, var: u32) -> PyResult<bool> {
        fill_with::<PySet>(r, var, "update", None, &Val::Tuple(items(val).to_vec()))?;
        Ok(true)
    }

    fn hashable<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(false))
    }

    fn children(&self, val: &Val<'_>, _cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        out.extend(items(val));
    }
}

/// The set's items (`kind_of` gives these kinds `Val::Set` and `Val::PoppedSet` alone).
fn items<'a>(val: &'a Val<'_>) -> &'a [Vid] {
    match val {
        Val::Set(items) | Val::PoppedSet(items) => items,
        _ => &[],
    }
}

/// A set the translation popped from (see `Val::PoppedSet`): its type, length, truth and
/// `in`; iterating, changing or handing it on breaks.
pub struct PoppedSet;

impl Kind for PoppedSet {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        Set.python_type(cx, v, val)
    }

    fn truth<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        Set.truth(cx, v, val)
    }

    fn len<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Vid>> {
        Set.len(cx, v, val)
    }

    fn contains<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        item: Vid,
    ) -> Res<Option<bool>> {
        Set.contains(cx, v, val, item)
    }

    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, _moved: &dyn Fn(Sym) -> Sym) -> bool {
        matches!((old, new), (Val::PoppedSet(a), Val::PoppedSet(b)) if a == b)
    }

    fn hashable<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(false))
    }

    fn children(&self, val: &Val<'_>, _cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        out.extend(items(val));
    }
}
