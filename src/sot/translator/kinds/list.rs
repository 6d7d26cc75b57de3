//! Lists the translation made (a list from the frame is a known object until it changes),
//! and iterators over a list (`iter(a_list)`), which read the live list.
//!
//! Models, for an exact `list` (a subclass is never this kind): `type`, truth, `len`,
//! iteration, `in` (identity, then `==`), indexing and slicing (CPython's IndexError and
//! TypeError), item and slice assignment, `del`, `hash` (unhashable) and the methods `append`,
//! `extend`, `insert`, `pop`, `copy`, `reverse`, `count`, `index`, `clear`, `remove` and
//! `sort` (`key=`, `reverse=`); another attribute is looked up on a real list (its
//! AttributeError), and calling a method not listed breaks.

use pyo3::prelude::*;
use pyo3::types::{PyList, PySlice};

use pyo3::exceptions::PyIndexError;

use super::tuple::{count, index, sequence_item};
use super::{
    concrete_all, container_method, drain, fill_with, no_tensor_in, push_items, sequence_contains, Interp,
    Kind, Rebuild, Res, Sym, Val, Vid,
};
use crate::hookapi::pyobject::import;
use crate::sot::translator::model::problem::{graph_break, unsupported, Problem};
use framehook_bytecode::canonical::{Arg, BinOp, Op};

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

    fn method<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        name: &str,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let Val::List(items) = val else {
            return Ok(None);
        };
        let mut items = items.clone();
        let none = cx.none();
        let changed = match (name, args) {
            ("append", [item]) => {
                items.push(*item);
                none
            }
            ("extend", [other]) => {
                items.extend(cx.items_of(*other)?);
                none
            }
            ("insert", [at, item]) => {
                let at = cx.concrete(*at)?.extract::<isize>()?;
                let len = items.len() as isize;
                let at = if at < 0 { (at + len).max(0) } else { at.min(len) } as usize;
                items.insert(at, *item);
                none
            }
            ("pop", rest) => {
                let at = match rest {
                    [] => -1,
                    [i] => cx.concrete(*i)?.extract::<isize>()?,
                    _ => return unsupported("list.pop arguments"),
                };
                let len = items.len() as isize;
                let index = if at < 0 { at + len } else { at };
                if len == 0 {
                    return Err(Problem::Python(PyIndexError::new_err("pop from empty list")));
                }
                if index < 0 || index >= len {
                    return Err(Problem::Python(PyIndexError::new_err("pop index out of range")));
                }
                items.remove(index as usize)
            }
            ("copy", []) => return Ok(Some(cx.push_val(Val::List(items)))),
            ("reverse", []) => {
                items.reverse();
                none
            }
            ("count", [target]) => return count(cx, &items, *target).map(Some),
            ("index", [target]) => return index(cx, v, &items, *target).map(Some),
            ("clear", []) => {
                items.clear();
                none
            }
            ("remove", [target]) => {
                let mut found = None;
                for (i, item) in items.iter().enumerate() {
                    if cx.equal_items(*item, *target)? {
                        found = Some(i);
                        break;
                    }
                }
                let Some(i) = found else {
                    return cx.raise_not_found(v, name, *target).map(Some);
                };
                items.remove(i);
                none
            }
            ("sort", []) => {
                let key = kwargs.iter().find(|(k, _)| k == "key").map(|(_, v)| *v);
                let reverse = match kwargs.iter().find(|(k, _)| k == "reverse") {
                    Some((_, r)) => cx.truthy(*r)?,
                    None => false,
                };
                items = match cx.sort_items(items, key, reverse) {
                    Ok(sorted) => sorted,
                    // What an interrupted sort leaves is CPython's own: run it for real.
                    Err(Problem::Python(_)) => {
                        return graph_break("list.sort() that raises (it leaves the list partly sorted)")
                    }
                    Err(problem) => return Err(problem),
                };
                none
            }
            _ => return Ok(None),
        };
        cx.set_val(v, Val::List(items));
        Ok(Some(changed))
    }

    fn attr<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>, name: &str) -> Res<Option<Vid>> {
        match val {
            Val::List(_) => container_method::<PyList>(cx, v, name),
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
        let Val::List(items) = val else {
            return Ok(None);
        };
        no_tensor_in(cx, v, item)?;
        sequence_contains(cx, items, item).map(Some)
    }

    fn item<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>, key: Vid) -> Res<Option<Vid>> {
        match val {
            Val::List(items) => sequence_item(cx, items, key, true).map(Some),
            _ => Ok(None),
        }
    }

    /// A list: its contents. A list's iterator: one from the frame is itself (its position
    /// set by a side effect); another is made anew over its list at its position
    /// (`_list_iterator`).
    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, _v: Vid, val: &Val<'py>) -> PyResult<bool> {
        match *val {
            Val::List(_) => r.contents(val)?,
            Val::ListIter {
                frame: Some(source), ..
            } => r.source(source)?,
            Val::ListIter { list, next, .. } => {
                let py = r.py();
                let list_iterator = import(py, "framehook.sot._translate")?.getattr("_list_iterator")?;
                r.call_constant(list_iterator, &mut |r| {
                    match next {
                        Some(next) => {
                            r.value(list)?;
                            r.load_const(next.into_pyobject(py)?.into_any());
                        }
                        // Exhausted: it no longer holds the list.
                        None => {
                            r.emit(Op::BuildList, Arg::Int(0));
                            r.load_const(py.None().into_bound(py));
                        }
                    }
                    Ok(2)
                })?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// An index's item, or a slice's items (done on a list of indices, as CPython's slice
    /// assignment places them).
    fn set_item<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        key: Vid,
        value: Vid,
    ) -> Res<bool> {
        let Val::List(items) = val else {
            return Ok(false);
        };
        let mut items = items.clone();
        let key_obj = cx.concrete(key)?;
        if let Ok(index) = key_obj.extract::<isize>() {
            let len = items.len() as isize;
            let at = if index < 0 { index + len } else { index };
            if at < 0 || at >= len {
                return Err(Problem::Python(PyIndexError::new_err(
                    "list assignment index out of range",
                )));
            }
            items[at as usize] = value;
        } else {
            let py = cx.py();
            let new_items = cx.items_of(value)?;
            let indices = PyList::new(py, 0..items.len())?;
            let replacement = PyList::new(py, (0..new_items.len()).map(|i| items.len() + i))?;
            indices.set_item(0, 0).ok();
            indices.as_any().set_item(&key_obj, replacement)?;
            let all: Vec<Vid> = items.iter().copied().chain(new_items).collect();
            items = indices
                .iter()
                .map(|i| Ok(all[i.extract::<usize>()?]))
                .collect::<PyResult<_>>()?;
        }
        cx.set_val(v, Val::List(items));
        Ok(true)
    }

    fn del_item<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        key: &Bound<'py, PyAny>,
    ) -> Res<bool> {
        let Val::List(items) = val else {
            return Ok(false);
        };
        let indices = PyList::new(cx.py(), 0..items.len())?;
        indices.as_any().del_item(key)?;
        let kept = indices
            .iter()
            .map(|i| Ok(items[i.extract::<usize>()?]))
            .collect::<PyResult<_>>()?;
        cx.set_val(v, Val::List(kept));
        Ok(true)
    }

    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, _moved: &dyn Fn(Sym) -> Sym) -> bool {
        match (old, new) {
            (Val::List(a), Val::List(b)) => a == b,
            (
                Val::ListIter {
                    list: a,
                    next: m,
                    frame: f,
                },
                Val::ListIter {
                    list: b,
                    next: n,
                    frame: g,
                },
            ) => a == b && m == n && f == g,
            _ => std::mem::discriminant(old) == std::mem::discriminant(new),
        }
    }

    fn build<'py>(&self, r: &mut dyn Rebuild<'py>, val: &Val<'py>) -> PyResult<bool> {
        let Val::List(items) = val else {
            return Ok(false);
        };
        push_items(r, items)?;
        r.emit(Op::BuildList, Arg::Int(items.len() as u32));
        Ok(true)
    }

    /// `[None] * len`: as long as it will be, so that its items can be set in place.
    fn make_empty<'py>(&self, r: &mut dyn Rebuild<'py>, val: &Val<'py>) -> PyResult<bool> {
        let Val::List(items) = val else {
            return Ok(false);
        };
        if items.is_empty() {
            r.emit(Op::BuildList, Arg::Int(0));
            return Ok(true);
        }
        let py = r.py();
        r.load_const(py.None().into_bound(py));
        r.emit(Op::BuildList, Arg::Int(1));
        r.load_const(items.len().into_pyobject(py)?.into_any());
        r.emit(
            Op::BinaryOp,
            Arg::BinaryOp {
                op: BinOp::Multiply,
                inplace: false,
            },
        );
        Ok(true)
    }

    /// `list.__setitem__(made, slice(None), (items...))`.
    fn fill<'py>(&self, r: &mut dyn Rebuild<'py>, val: &Val<'py>, var: u32) -> PyResult<bool> {
        let Val::List(items) = val else {
            return Ok(false);
        };
        let whole = PySlice::full(r.py()).into_any();
        fill_with::<PyList>(r, var, "__setitem__", Some(whole), &Val::Tuple(items.clone()))?;
        Ok(true)
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
