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

    /// A cell as a value (on the stack, in a closure's tuple): the cell object, which the
    /// function made from the tuple reads and writes (its contents would be read as a cell
    /// by the function's `LOAD_DEREF`, which CPython does not check).
    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, v: Vid, val: &Val<'py>) -> PyResult<bool> {
        let Val::Cell(cell) = val else {
            return Ok(false);
        };
        r.cell_object(v, *cell)?;
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
