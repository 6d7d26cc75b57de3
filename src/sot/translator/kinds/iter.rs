//! Iterators of the translation: over known values, lazy builtins (`range`, `zip`,
//! `enumerate`, `map`, `filter`), and generators the translated code made. Each is true,
//! hashable, and yields what it has left.

use pyo3::prelude::*;

use super::{drain, Interp, Kind, Res, Val, Vid};
use crate::hookapi::pyobject::import;
use crate::sot::translator::model::value::Lazy;
use crate::sot::translator::pyutil::builtin;

pub struct Iterators;

impl Kind for Iterators {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        let py = cx.py();
        Ok(Some(match val {
            Val::Generator(_) => import(py, "types")?.getattr("GeneratorType")?,
            Val::Lazy(lazy) => match lazy {
                Lazy::Range { .. } => builtin(py, "iter")?
                    .call1((builtin(py, "range")?.call1((0,))?,))?
                    .get_type()
                    .into_any(),
                Lazy::Zip(_) => builtin(py, "zip")?,
                Lazy::Enumerate { .. } => builtin(py, "enumerate")?,
                Lazy::Map { .. } => builtin(py, "map")?,
                Lazy::Filter { .. } => builtin(py, "filter")?,
            },
            _ => return Ok(None),
        }))
    }

    fn truth<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(true))
    }

    fn items<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, _val: &Val<'py>) -> Res<Option<Vec<Vid>>> {
        drain(cx, v).map(Some)
    }

    fn hashable<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(true))
    }

    fn children(&self, val: &Val<'_>, _cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        if let Val::Iter { items, next } = val {
            out.extend(&items[*next..]);
        }
    }
}
