//! Tuples the translation made, instances of a tuple subclass that acts as a tuple (a
//! namedtuple), and slices.
//!
//! Models, for an exact `tuple`: `type`, truth, `len`, iteration, `in`, indexing and
//! slicing (CPython's IndexError and TypeError), `hash` (where its items hash), `count` and
//! `index`; another attribute is read from the real tuple. A namedtuple: its class, its fields
//! (the class's `_tuplegetter`s) and Python methods; a class attribute or classmethod is read
//! from the class, another attribute breaks.

use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PySlice, PyTuple};

use super::{
    concrete_all, no_tensor_in, push_items, sequence_contains, Interp, Kind, Rebuild, Res, Sym, Val, Vid,
};
use crate::sot::translator::model::problem::{unsupported, Problem};
use crate::sot::translator::pyutil::has_attr;
use crate::sot::translator::pyutil::{builtin, qualname, type_name_in_messages};
use framehook_bytecode::canonical::{Arg, Op};

pub struct Tuple;

/// A tuple's or a namedtuple's items.
fn items<'a>(val: &'a Val<'_>) -> Option<&'a Vec<Vid>> {
    match val {
        Val::Tuple(items) | Val::NamedTuple { items, .. } => Some(items),
        _ => None,
    }
}

impl Kind for Tuple {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        Ok(Some(match val {
            Val::NamedTuple { class, .. } => class.clone(),
            Val::Slice(..) => cx.py().get_type::<PySlice>().into_any(),
            _ => cx.py().get_type::<PyTuple>().into_any(),
        }))
    }

    fn truth<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        Ok(items(val).map(|items| !items.is_empty()))
    }

    fn len<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<Vid>> {
        items(val).map(|items| cx.int_value(items.len())).transpose()
    }

    fn items<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<Vec<Vid>>> {
        Ok(items(val).cloned())
    }

    fn concrete<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        let py = cx.py();
        Ok(Some(match val {
            Val::Tuple(items) => PyTuple::new(py, concrete_all(cx, items)?)?.into_any(),
            Val::NamedTuple { class, items } => {
                let objs = concrete_all(cx, items)?;
                let tuple_new = py.get_type::<PyTuple>().getattr("__new__")?;
                tuple_new.call1((class, PyTuple::new(py, objs)?))?
            }
            Val::Slice(a, b, c) => {
                let (a, b, c) = (cx.concrete(*a)?, cx.concrete(*b)?, cx.concrete(*c)?);
                builtin(py, "slice")?.call1((a, b, c))?
            }
            _ => return Ok(None),
        }))
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
        match (val, name, args) {
            (Val::Tuple(items), "count", [target]) => count(cx, items, *target).map(Some),
            (Val::Tuple(items), "index", [target]) => index(cx, v, items, *target).map(Some),
            _ => Ok(None),
        }
    }

    fn attr<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>, name: &str) -> Res<Option<Vid>> {
        match val {
            Val::NamedTuple { class, items } => named_tuple_attr(cx, v, class, items, name).map(Some),
            Val::Tuple(_) if matches!(name, "index" | "count") => {
                Ok(Some(cx.push_val(Val::ContainerMethod {
                    container: v,
                    name: name.to_owned(),
                })))
            }
            _ => {
                let value = cx.concrete(v)?.getattr(name)?;
                Ok(Some(cx.constant(value)))
            }
        }
    }

    fn contains<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        item: Vid,
    ) -> Res<Option<bool>> {
        let Val::Tuple(items) = val else {
            return Ok(None);
        };
        no_tensor_in(cx, v, item)?;
        sequence_contains(cx, items, item).map(Some)
    }

    fn item<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>, key: Vid) -> Res<Option<Vid>> {
        match items(val) {
            Some(items) => sequence_item(cx, items, key, false).map(Some),
            None => Ok(None),
        }
    }

    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, _v: Vid, val: &Val<'py>) -> PyResult<bool> {
        match val {
            Val::Tuple(_) => r.contents(val)?,
            Val::Slice(a, b, c) => {
                for part in [*a, *b, *c] {
                    r.value(part)?;
                }
                r.emit(Op::BuildSlice, Arg::Int(3));
            }
            Val::NamedTuple { class, items } => {
                // tuple.__new__(class, (items...)), as the class's own `__new__` makes it.
                let tuple_new = r.py().get_type::<PyTuple>().getattr("__new__")?;
                let (class, items) = (class.clone(), Val::Tuple(items.clone()));
                r.call_constant(tuple_new, &mut |r| {
                    r.load_const(class.clone());
                    r.contents(&items)?;
                    Ok(2)
                })?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, _moved: &dyn Fn(Sym) -> Sym) -> bool {
        match (old, new) {
            (Val::Tuple(a), Val::Tuple(b)) => a == b,
            _ => std::mem::discriminant(old) == std::mem::discriminant(new),
        }
    }

    fn build<'py>(&self, r: &mut dyn Rebuild<'py>, val: &Val<'py>) -> PyResult<bool> {
        let Val::Tuple(items) = val else {
            return Ok(false);
        };
        push_items(r, items)?;
        r.build_tuple(items.len());
        Ok(true)
    }

    fn hashable<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        let Some(items) = items(val) else {
            return Ok(Some(true));
        };
        for item in items {
            if !cx.hashable(*item)? {
                return Ok(Some(false));
            }
        }
        Ok(Some(true))
    }

    fn children(&self, val: &Val<'_>, _cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        match val {
            Val::Tuple(items) | Val::NamedTuple { items, .. } => out.extend(items),
            Val::Slice(a, b, c) => out.extend([*a, *b, *c]),
            _ => {}
        }
    }
}

/// `sequence.count(target)` of a list's or tuple's `items`.
pub(super) fn count<'py>(cx: &mut dyn Interp<'py>, items: &[Vid], target: Vid) -> Res<Vid> {
    let mut count = 0usize;
    for item in items {
        count += usize::from(cx.equal_items(*item, target)?);
    }
    cx.int_value(count)
}

/// `sequence.index(target)` of a list's or tuple's `items` (ValueError where it is none).
pub(super) fn index<'py>(cx: &mut dyn Interp<'py>, sequence: Vid, items: &[Vid], target: Vid) -> Res<Vid> {
    for (i, item) in items.iter().enumerate() {
        if cx.equal_items(*item, target)? {
            return cx.int_value(i);
        }
    }
    cx.raise_not_found(sequence, "index", target)
}

/// An attribute of a namedtuple the translation made: a field (the class's
/// `_tuplegetter`) is its item; a Python method is bound to it; a plain class
/// attribute (`_fields`) or a classmethod is read from the class.
fn named_tuple_attr<'py>(
    cx: &mut dyn Interp<'py>,
    owner: Vid,
    class: &Bound<'py, PyAny>,
    items: &[Vid],
    name: &str,
) -> Res<Vid> {
    let Some(found) = cx.type_lookup(class, name)? else {
        return unsupported(format!(
            "attribute {name} of a {} the translation made",
            qualname(class)
        ));
    };
    if found.get_type().is(&cx.known().tuple_getter_type) {
        let index: usize = found
            .call_method0("__reduce__")?
            .get_item(1)?
            .get_item(0)?
            .extract()?;
        return items.get(index).copied().ok_or_else(|| {
            Problem::Python(pyo3::exceptions::PyIndexError::new_err(
                "tuple index out of range",
            ))
        });
    }
    if found.is_instance(&cx.known().function_type)? {
        let function = cx.constant(found);
        return Ok(cx.push_val(Val::Method {
            function,
            receiver: owner,
        }));
    }
    let plain = !has_attr(found.get_type().as_any(), "__get__")?;
    if plain || found.is_instance(&cx.known().classmethod_type)? {
        return Ok(cx.constant(class.getattr(name)?));
    }
    unsupported(format!(
        "attribute {name} of a {} the translation made",
        qualname(class)
    ))
}

/// `items[key]` of a list (`is_list`) or tuple: an item by index, or a slice of the same
/// type.
pub(super) fn sequence_item<'py>(
    cx: &mut dyn Interp<'py>,
    items: &[Vid],
    key: Vid,
    is_list: bool,
) -> Res<Vid> {
    let key_obj = cx.concrete(key)?;
    let kind = if is_list { "list" } else { "tuple" };
    if let Ok(index) = key_obj.extract::<isize>() {
        let len = items.len() as isize;
        let at = if index < 0 { index + len } else { index };
        if at < 0 || at >= len {
            return Err(Problem::Python(PyIndexError::new_err(format!(
                "{kind} index out of range"
            ))));
        }
        return Ok(items[at as usize]);
    }
    if !key_obj.is_instance_of::<PySlice>() {
        if has_attr(&key_obj, "__index__")? {
            return unsupported(format!("a {kind} index that is no index-sized integer"));
        }
        return Err(Problem::Python(PyTypeError::new_err(format!(
            "{kind} indices must be integers or slices, not {}",
            type_name_in_messages(&key_obj.get_type().into_any())?
        ))));
    }
    let indices = builtin(cx.py(), "range")?
        .call1((items.len(),))?
        .get_item(&key_obj)?;
    let picked: Vec<Vid> = indices
        .try_iter()?
        .map(|i| Ok(items[i?.extract::<usize>()?]))
        .collect::<PyResult<_>>()?;
    Ok(cx.push_val(if is_list {
        Val::List(picked)
    } else {
        Val::Tuple(picked)
    }))
}
