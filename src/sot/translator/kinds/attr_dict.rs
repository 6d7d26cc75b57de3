//! The `__dict__` of an object or a function the translation made (`Val::AttrDict`): a view
//! of the attributes stored in it (an object's, of a class without slots; a function's,
//! less the fields CPython keeps in the function itself).
//!
//! Models: `type`, `len`, truth, iteration (its keys), `in` and an item by a `str` key, and
//! `update` of a mapping
//! or keywords with `str` keys: the stores a dict makes, without `__setattr__` or
//! descriptors (`functools.update_wrapper`'s `wrapper.__dict__.update(wrapped.__dict__)`);
//! another method breaks. Rebuilt as its owner's `__dict__`.

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::{container_method, Interp, Kind, Rebuild, Res, Sym, Val, Vid};
use crate::sot::translator::model::problem::{unsupported, Problem};
use crate::sot::translator::model::value::{store_named, FUNCTION_FIELDS};

pub struct AttrDict;

impl Kind for AttrDict {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        _val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        Ok(Some(cx.py().get_type::<PyDict>().into_any()))
    }

    fn truth<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(!entries(cx, val).is_empty()))
    }

    fn len<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<Vid>> {
        let count = entries(cx, val).len();
        cx.int_value(count).map(Some)
    }

    /// Iterating it yields its keys, in their order.
    fn items<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<Vec<Vid>>> {
        let names: Vec<String> = entries(cx, val).into_iter().map(|(name, _)| name).collect();
        let keys = names
            .iter()
            .map(|name| cx.constant(PyString::new(cx.py(), name).into_any()))
            .collect();
        Ok(Some(keys))
    }

    fn contains<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
        item: Vid,
    ) -> Res<Option<bool>> {
        let key = str_key(cx, item)?;
        Ok(Some(entries(cx, val).iter().any(|(name, _)| *name == key)))
    }

    fn item<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>, key: Vid) -> Res<Option<Vid>> {
        let name = str_key(cx, key)?;
        match entries(cx, val).iter().find(|(stored, _)| *stored == name) {
            Some((_, value)) => Ok(Some(*value)),
            None => Err(Problem::Python(PyKeyError::new_err(name))),
        }
    }

    fn attr<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, _val: &Val<'py>, name: &str) -> Res<Option<Vid>> {
        container_method::<PyDict>(cx, v, name)
    }

    fn method<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
        name: &str,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let Val::AttrDict(owner) = val else {
            return Ok(None);
        };
        if name != "update" || args.len() > 1 {
            return Ok(None);
        }
        let mut stores = Vec::new();
        if let Some(mapping) = args.first() {
            for (key, value) in cx.dict_items(*mapping)? {
                stores.push((str_key(cx, key)?, value));
            }
        }
        stores.extend(kwargs.iter().cloned());
        let mut owner_val = cx.val(*owner).clone();
        for (name, value) in stores {
            let stored = match &mut owner_val {
                Val::Object { attrs, .. } => attrs,
                Val::Function(function) if !is_function_field(cx, &name) => &mut function.stored,
                _ => {
                    return unsupported(format!(
                        "{name} stored into the __dict__ of a function the translation made"
                    ))
                }
            };
            store_named(stored, name, value);
        }
        cx.set_val(*owner, owner_val);
        Ok(Some(cx.none()))
    }

    fn hashable<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(false))
    }

    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, _v: Vid, val: &Val<'py>) -> PyResult<bool> {
        let Val::AttrDict(owner) = val else {
            return Ok(false);
        };
        r.value(*owner)?;
        r.load_attr("__dict__");
        Ok(true)
    }

    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, _moved: &dyn Fn(Sym) -> Sym) -> bool {
        matches!((old, new), (Val::AttrDict(a), Val::AttrDict(b)) if a == b)
    }

    fn children(&self, val: &Val<'_>, _cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        if let Val::AttrDict(owner) = val {
            out.push(*owner);
        }
    }
}

/// The items of the `__dict__` that `val` views, in their order.
fn entries<'py>(cx: &dyn Interp<'py>, val: &Val<'py>) -> Vec<(String, Vid)> {
    let Val::AttrDict(owner) = val else {
        return Vec::new();
    };
    match cx.val(*owner) {
        Val::Object { attrs, .. } => attrs.clone(),
        Val::Function(function) => function
            .stored
            .iter()
            .filter(|(name, _)| !is_function_field(cx, name))
            .cloned()
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether `name` is one of `FUNCTION_FIELDS` this version's functions keep outside their
/// `__dict__` (`__type_params__` from 3.12).
fn is_function_field(cx: &dyn Interp<'_>, name: &str) -> bool {
    FUNCTION_FIELDS.contains(&name)
        && cx
            .type_lookup(&cx.known().function_type, name)
            .ok()
            .flatten()
            .is_some()
}

/// `key` as the `str` it is: another key (a `str` subclass's own `__eq__` included) breaks.
fn str_key<'py>(cx: &mut dyn Interp<'py>, key: Vid) -> Res<String> {
    let key = cx.concrete(key)?;
    match key.cast_exact::<PyString>() {
        Ok(name) => Ok(name.to_str()?.to_owned()),
        Err(_) => unsupported("a key other than a str in the __dict__ of a value the translation made"),
    }
}
