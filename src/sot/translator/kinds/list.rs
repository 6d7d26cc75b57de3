//! Lists the translation made (a list from the frame is a known object until it changes),
//! and iterators over a list (`iter(a_list)`), which read the live list.

use pyo3::prelude::*;
use pyo3::types::PyList;

use super::{concrete_all, drain, Interp, Kind, Res, Val, Vid};

pub struct List;

impl Kind for List {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        Ok(match val {
            Val::List(_) => Some(cx.py().get_type::<PyList>().into_any()),
            _ => None,
        })
    }

    fn truth<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        Ok(match val {
            Val::List(items) => Some(!items.is_empty()),
            _ => Some(true),
        })
    }

    fn len<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<Vid>> {
        match val {
            Val::List(items) => cx.int_value(items.len()).map(Some),
            _ => Ok(None),
        }
    }

    fn items<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Vec<Vid>>> {
        match val {
            Val::List(items) => Ok(Some(items.clone())),
            _ => drain(cx, v).map(Some),
        }
    }

    /// A list's iterator reads the live list, as CPython's does; an iterator is its own.
    fn iter<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Vid>> {
        Ok(Some(match val {
            Val::List(_) => cx.push_val(Val::ListIter {
                list: v,
                next: Some(0),
                frame: None,
            }),
            _ => v,
        }))
    }

    fn next<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Option<Vid>>> {
        match *val {
            Val::ListIter { next: None, .. } => Ok(Some(None)),
            Val::ListIter {
                list,
                next: Some(next),
                frame,
            } => {
                let item = cx.list_item(list, next)?;
                cx.set_val(
                    v,
                    Val::ListIter {
                        list,
                        next: item.map(|_| next + 1),
                        frame,
                    },
                );
                Ok(Some(item))
            }
            _ => Ok(None),
        }
    }

    fn concrete<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        match val {
            Val::List(items) => {
                let objs = concrete_all(cx, items)?;
                Ok(Some(PyList::new(cx.py(), objs)?.into_any()))
            }
            _ => Ok(None),
        }
    }

    fn hashable<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(!matches!(val, Val::List(_))))
    }

    fn children(&self, val: &Val<'_>, _cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        match val {
            Val::List(items) => out.extend(items),
            Val::ListIter {
                list,
                next: Some(_),
                frame: None,
            } => out.push(*list),
            _ => {}
        }
    }
}
