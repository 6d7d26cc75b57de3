//! Dicts the translation made, live views of a dict (`keys()`, `values()`, `items()`), and
//! iterators over a dict or a view.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::{drain, Interp, Kind, Res, Val, Vid};
use crate::sot::translator::model::value::DictPart;

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
            Val::DictView { part, .. } => {
                Some(PyDict::new(py).call_method0(part.method())?.get_type().into_any())
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
