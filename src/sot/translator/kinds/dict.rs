//! Dicts the translation made, live views of a dict (`keys()`, `values()`, `items()`), and
//! iterators over a dict or a view.
//!
//! Models, for an exact `dict` (one from the frame, or an `OrderedDict`, read through a
//! copy): `type`, truth, `len`, iteration in insertion order, `in` and `d[key]` (keys compared
//! as the hash table compares them; KeyError), item assignment and `del`, `hash`
//! (unhashable), and the methods `keys`, `values`, `items`, `get`, `update`, `setdefault`,
//! `pop`, `copy`, `popitem` and `clear`; its iterators raise CPython's RuntimeError when the
//! dict's size changed. Another attribute is looked up on a real dict (its AttributeError),
//! and calling a method not listed breaks. Each change is recorded (`Interp::dict_op`) for
//! the generated code to replay as made.

use framehook_bytecode::canonical::{Arg, Op};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::{container_method, drain, fill_with, Interp, Kind, Rebuild, Res, Sym, Val, Vid};
use crate::hookapi::pyobject::import;
use crate::sot::translator::model::frame::DictOp;
use crate::sot::translator::model::problem::{unsupported, Problem};
use crate::sot::translator::model::value::{DictIter, DictIterStatus, DictPart};

pub struct Dict;

impl Kind for Dict {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        let py = cx.py();
        Ok(match val {
            Val::Dict(_) => Some(py.get_type::<PyDict>().into_any()),
            Val::DictView { dict, part } => {
                // The view an empty dict of the same type gives (an OrderedDict's own).
                let dict_type = cx.type_of(*dict)?;
                Some(
                    dict_type
                        .call0()?
                        .call_method0(part.method())?
                        .get_type()
                        .into_any(),
                )
            }
            _ => None,
        })
    }

    fn truth<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(match val {
            Val::Dict(items) => !items.is_empty(),
            Val::DictView { dict, .. } => cx.truthy(*dict)?,
            _ => true,
        }))
    }

    fn len<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<Vid>> {
        match val {
            Val::Dict(items) => cx.int_value(items.len()).map(Some),
            Val::DictView { dict, .. } => cx.len_of(*dict).map(Some),
            _ => Ok(None),
        }
    }

    fn iter<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Vid>> {
        match val {
            Val::Dict(_) => dict_iterator(cx, v, DictPart::Keys).map(Some),
            Val::DictView { dict, part } => dict_iterator(cx, *dict, *part).map(Some),
            _ => Ok(Some(v)),
        }
    }

    fn next<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Option<Vid>>> {
        let Val::DictIter(state) = val else {
            return Ok(None);
        };
        let mut state = state.clone();
        let item = dict_iter_next(cx, &mut state);
        cx.set_val(v, Val::DictIter(state));
        item.map(Some)
    }

    fn items<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Vec<Vid>>> {
        Ok(Some(match val {
            Val::Dict(items) => items.iter().map(|(k, _)| *k).collect(),
            Val::DictView { dict, part } => match part {
                DictPart::Keys => cx.items_of(*dict)?,
                DictPart::Values => cx.dict_items(*dict)?.into_iter().map(|(_, v)| v).collect(),
                DictPart::Items => cx
                    .dict_items(*dict)?
                    .into_iter()
                    .map(|(k, v)| cx.push_val(Val::Tuple(vec![k, v])))
                    .collect(),
            },
            _ => drain(cx, v)?,
        }))
    }

    fn method<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        name: &str,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let Val::Dict(items) = val else {
            return Ok(None);
        };
        let mut items = items.clone();
        let none = cx.none();
        match (name, args) {
            ("clear", []) => {
                for (k, v) in &items {
                    cx.check_droppable(*k)?;
                    cx.check_droppable(*v)?;
                }
                cx.dict_op(v, DictOp::Clear)?;
                cx.set_val(v, Val::Dict(Vec::new()));
                if !items.is_empty() {
                    cx.note_keys_removed(v);
                }
                Ok(Some(none))
            }
            ("keys" | "values" | "items", []) => Ok(Some(view(cx, v, name))),
            ("get", [key, rest @ ..]) => {
                let key_obj = cx.concrete(*key)?;
                Ok(Some(match cx.find_dict_key(&items, &key_obj)? {
                    Some(index) => items[index].1,
                    None => rest.first().copied().unwrap_or(none),
                }))
            }
            ("update", rest) if rest.len() <= 1 => {
                // Each mapping merged in turn, as CPython's: the argument, then the keywords
                // (a new dict of them). A dict the translation made is given as the items
                // read now (it may change later).
                let mut merged = Vec::new();
                for other in rest {
                    let read = cx.dict_items(*other)?;
                    for (k, value) in &read {
                        cx.dict_set(&mut items, *k, *value)?;
                    }
                    merged.push(match cx.val(*other) {
                        Val::Dict(_) => cx.push_val(Val::Dict(read)),
                        _ => *other,
                    });
                }
                if !kwargs.is_empty() {
                    let mut keywords = Vec::with_capacity(kwargs.len());
                    for (name, value) in kwargs {
                        let k = cx.constant(PyString::new(cx.py(), name).into_any());
                        cx.dict_set(&mut items, k, *value)?;
                        keywords.push((k, *value));
                    }
                    merged.push(cx.push_val(Val::Dict(keywords)));
                }
                for other in merged {
                    cx.dict_op(v, DictOp::Update { other })?;
                }
                cx.set_val(v, Val::Dict(items));
                Ok(Some(none))
            }
            ("setdefault", [key, rest @ ..]) if rest.len() <= 1 => {
                let key_obj = cx.concrete(*key)?;
                if let Some(index) = cx.find_dict_key(&items, &key_obj)? {
                    return Ok(Some(items[index].1));
                }
                let value = rest.first().copied().unwrap_or(none);
                items.push((*key, value));
                cx.dict_op(v, DictOp::SetDefault { key: *key, value })?;
                cx.set_val(v, Val::Dict(items));
                Ok(Some(value))
            }
            ("pop", [key, rest @ ..]) if rest.len() <= 1 => {
                let key_obj = cx.concrete(*key)?;
                let found = match cx.find_dict_key(&items, &key_obj)? {
                    Some(index) => {
                        let (k, value) = items.remove(index);
                        cx.check_droppable(k)?;
                        cx.dict_op(v, DictOp::Pop { key: *key })?;
                        cx.set_val(v, Val::Dict(items));
                        cx.note_keys_removed(v);
                        Some(value)
                    }
                    None => None,
                };
                match (found, rest.first()) {
                    (Some(value), _) => Ok(Some(value)),
                    (None, Some(default)) => Ok(Some(*default)),
                    (None, None) => Err(Problem::Python(PyKeyError::new_err((key_obj.unbind(),)))),
                }
            }
            ("copy", []) => Ok(Some(cx.push_val(Val::Dict(items)))),
            ("popitem", []) => {
                let Some((k, value)) = items.pop() else {
                    return Err(Problem::Python(PyKeyError::new_err(
                        "popitem(): dictionary is empty",
                    )));
                };
                cx.dict_op(v, DictOp::PopItem)?;
                cx.set_val(v, Val::Dict(items));
                cx.note_keys_removed(v);
                Ok(Some(cx.push_val(Val::Tuple(vec![k, value]))))
            }
            _ => Ok(None),
        }
    }

    fn attr<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>, name: &str) -> Res<Option<Vid>> {
        match val {
            Val::Dict(_) => container_method::<PyDict>(cx, v, name),
            _ => Ok(None),
        }
    }

    /// A key's presence, compared as the dict's hash table compares it (before any check
    /// for tensors: the key must be a Python value).
    fn contains<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
        item: Vid,
    ) -> Res<Option<bool>> {
        match val {
            Val::Dict(items) => {
                let key = cx.concrete(item)?;
                Ok(Some(cx.find_dict_key(items, &key)?.is_some()))
            }
            Val::DictView {
                dict,
                part: DictPart::Keys,
            } => cx.contains(*dict, item).map(Some),
            _ => Ok(None),
        }
    }

    fn item<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>, key: Vid) -> Res<Option<Vid>> {
        let Val::Dict(items) = val else {
            return Ok(None);
        };
        let key_obj = cx.concrete(key)?;
        match cx.find_dict_key(items, &key_obj)? {
            Some(index) => Ok(Some(items[index].1)),
            None => Err(Problem::Python(PyKeyError::new_err((key_obj.unbind(),)))),
        }
    }

    fn set_item<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        key: Vid,
        value: Vid,
    ) -> Res<bool> {
        let Val::Dict(items) = val else {
            return Ok(false);
        };
        let mut items = items.clone();
        let over = cx.dict_set(&mut items, key, value)?;
        cx.dict_op(v, DictOp::Store { key, value, over })?;
        cx.set_val(v, Val::Dict(items));
        Ok(true)
    }

    fn del_item<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        key: &Bound<'py, PyAny>,
    ) -> Res<bool> {
        let Val::Dict(items) = val else {
            return Ok(false);
        };
        let mut items = items.clone();
        let Some(index) = cx.find_dict_key(&items, key)? else {
            return Err(Problem::Python(PyKeyError::new_err((key.clone().unbind(),))));
        };
        let (k, value) = items.remove(index);
        cx.check_droppable(k)?;
        cx.check_droppable(value)?;
        // Deleted by the key the dict holds (the one the program gave is equal to it).
        cx.dict_op(v, DictOp::Delete { key: k })?;
        cx.set_val(v, Val::Dict(items));
        cx.note_keys_removed(v);
        Ok(true)
    }

    fn concrete<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        Ok(Some(match val {
            Val::Dict(items) => {
                let dict = PyDict::new(cx.py());
                for (k, v) in items {
                    dict.set_item(cx.concrete(*k)?, cx.concrete(*v)?)?;
                }
                dict.into_any()
            }
            // A view of the dict as it is now: what is done with it now sees the same.
            Val::DictView { dict, part } => cx.concrete(*dict)?.call_method0(part.method())?,
            _ => return Ok(None),
        }))
    }

    /// A dict: its contents; a view: the dict's method of that name called on the dict.
    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, _v: Vid, val: &Val<'py>) -> PyResult<bool> {
        match val {
            Val::Dict(_) => r.contents(val)?,
            Val::DictView { dict, part } => {
                // The dict's own method: an OrderedDict's view is an `odict_keys`.
                let dict = *dict;
                let method = import(r.py(), "operator")?
                    .getattr("methodcaller")?
                    .call1((part.method(),))?;
                r.call_constant(method, &mut |r| {
                    r.value(dict)?;
                    Ok(1)
                })?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, _moved: &dyn Fn(Sym) -> Sym) -> bool {
        match (old, new) {
            (Val::Dict(a), Val::Dict(b)) => a == b,
            (Val::DictIter(a), Val::DictIter(b)) => a == b,
            _ => std::mem::discriminant(old) == std::mem::discriminant(new),
        }
    }

    fn build<'py>(&self, r: &mut dyn Rebuild<'py>, val: &Val<'py>) -> PyResult<bool> {
        let Val::Dict(items) = val else {
            return Ok(false);
        };
        for (k, v) in items {
            r.value(*k)?;
            r.value(*v)?;
        }
        r.emit(Op::BuildMap, Arg::Int(items.len() as u32));
        Ok(true)
    }

    fn make_empty<'py>(&self, r: &mut dyn Rebuild<'py>, val: &Val<'py>) -> PyResult<bool> {
        if !matches!(val, Val::Dict(_)) {
            return Ok(false);
        }
        r.emit(Op::BuildMap, Arg::Int(0));
        Ok(true)
    }

    /// `dict.update(made, {items...})`.
    fn fill<'py>(&self, r: &mut dyn Rebuild<'py>, val: &Val<'py>, var: u32) -> PyResult<bool> {
        if !matches!(val, Val::Dict(_)) {
            return Ok(false);
        }
        fill_with::<PyDict>(r, var, "update", None, val)?;
        Ok(true)
    }

    fn hashable<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(matches!(val, Val::DictIter(_))))
    }

    fn children(&self, val: &Val<'_>, _cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        match val {
            Val::Dict(items) => out.extend(items.iter().flat_map(|(k, v)| [*k, *v])),
            Val::DictView { dict, .. } => out.push(*dict),
            _ => {}
        }
    }
}

/// An iterator over a dict the translation made, or one from the frame (over its
/// copy, or its mutable copy once there is one).
pub(super) fn dict_iterator<'py>(cx: &mut dyn Interp<'py>, dict: Vid, part: DictPart) -> Res<Vid> {
    let (copy, frame_dict) = match cx.readonly_copy(dict)? {
        Some(copy) => (copy, Some(dict)),
        None => (dict, None),
    };
    let Val::Dict(items) = cx.val(copy) else {
        return unsupported("iteration over a dict from outside");
    };
    let size = items.len();
    Ok(cx.push_val(Val::DictIter(DictIter {
        dict: copy,
        frame_dict,
        part,
        size,
        next: 0,
        keys_removed: false,
        status: DictIterStatus::Running,
    })))
}

/// The made dict an iterator reads: its frame dict's mutable copy once there is one.
pub fn iterated_dict<'py>(cx: &dyn Interp<'py>, it: &DictIter) -> Vid {
    let mutated = it.frame_dict.and_then(|frame_dict| match cx.val(frame_dict) {
        Val::Obj { obj, .. } => cx.mutated_copy(obj),
        _ => None,
    });
    mutated.unwrap_or(it.dict)
}

/// CPython's `dictiter_iternext*`: the entry at the iterator's position, read now.
fn dict_iter_next<'py>(cx: &mut dyn Interp<'py>, it: &mut DictIter) -> Res<Option<Vid>> {
    let size_changed = || {
        Err(Problem::Python(pyo3::exceptions::PyRuntimeError::new_err(
            "dictionary changed size during iteration",
        )))
    };
    match it.status {
        DictIterStatus::Exhausted => return Ok(None),
        DictIterStatus::SizeChanged => return size_changed(),
        DictIterStatus::Running => {}
    }
    let Val::Dict(items) = cx.val(iterated_dict(cx, it)) else {
        return unsupported("iteration over a dict from outside");
    };
    if items.len() != it.size {
        it.status = DictIterStatus::SizeChanged;
        return size_changed();
    }
    if it.keys_removed {
        return unsupported("iteration over a dict whose keys changed (at the same size) meanwhile");
    }
    let Some(&(key, value)) = items.get(it.next) else {
        it.status = DictIterStatus::Exhausted;
        return Ok(None);
    };
    it.next += 1;
    Ok(Some(match it.part {
        DictPart::Keys => key,
        DictPart::Values => value,
        DictPart::Items => cx.push_val(Val::Tuple(vec![key, value])),
    }))
}

/// `dict.keys()`, `values()` or `items()` (`name`): a live view of `dict`.
pub(super) fn view<'py>(cx: &mut dyn Interp<'py>, dict: Vid, name: &str) -> Vid {
    let part = match name {
        "keys" => DictPart::Keys,
        "values" => DictPart::Values,
        _ => DictPart::Items,
    };
    cx.push_val(Val::DictView { dict, part })
}
