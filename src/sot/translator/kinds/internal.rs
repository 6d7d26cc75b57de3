//! The VM's own values: a call's NULL slot (or an unbound variable), and a closure's cell.
//! Neither is a Python value a program can use.

use pyo3::prelude::*;

use super::{Interp, Kind, Rebuild, Res, Sym, Val, Vid};
use crate::sot::translator::model::problem::unsupported;

pub struct Internal;

impl Kind for Internal {
    fn concrete<'py>(
        &self,
        _cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        match val {
            Val::Null => unsupported("NULL used as a value"),
            _ => Ok(None),
        }
    }

    /// A cell: its contents.
    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, _v: Vid, val: &Val<'py>) -> PyResult<bool> {
        let Val::Cell(cell) = val else {
            return Ok(false);
        };
        match r.cell(*cell) {
            Some(content) => r.value(content)?,
            None => return Err(pyo3::exceptions::PyValueError::new_err("an empty cell")),
        }
        Ok(true)
    }

    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, _moved: &dyn Fn(Sym) -> Sym) -> bool {
        match (old, new) {
            (Val::Cell(a), Val::Cell(b)) => a == b,
            _ => std::mem::discriminant(old) == std::mem::discriminant(new),
        }
    }

    fn children(&self, val: &Val<'_>, cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        if let Val::Cell(cell) = val {
            out.extend(cells[*cell]);
        }
    }
}
