//! A t-string's `Interpolation` and `Template` (3.14) holding values only the graph has.
//!
//! Models: `type`, truth (true), iteration (a template's non-empty strings and its
//! interpolations), the fields `value`, `expression`, `conversion` and `format_spec` of an
//! Interpolation and `strings`, `interpolations` and `values` of a Template; another
//! attribute breaks.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::{concrete_all, Interp, Kind, Rebuild, Res, Val, Vid};
use crate::hookapi::pyobject::import;
use crate::sot::translator::model::problem::unsupported;

pub struct Template;

/// The class from `string.templatelib` for `val`, and its parts.
fn class_and_parts<'a>(val: &'a Val<'_>) -> Option<(&'static str, &'a [Vid])> {
    match val {
        Val::Interpolation(parts) => Some(("Interpolation", parts)),
        Val::Template(parts) => Some(("Template", parts)),
        _ => None,
    }
}

impl Kind for Template {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        let Some((class, _)) = class_and_parts(val) else {
            return Ok(None);
        };
        Ok(Some(import(cx.py(), "string.templatelib")?.getattr(class)?))
    }

    fn truth<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(true))
    }

    /// A template iterates over its non-empty strings and its interpolations.
    fn items<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<Vec<Vid>>> {
        let Val::Template(parts) = val else {
            return Ok(None);
        };
        let mut items = Vec::with_capacity(parts.len());
        for (index, part) in parts.iter().enumerate() {
            if index % 2 == 1 || !cx.concrete(*part)?.is_empty()? {
                items.push(*part);
            }
        }
        Ok(Some(items))
    }

    fn concrete<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        let Some((class, parts)) = class_and_parts(val) else {
            return Ok(None);
        };
        let parts = concrete_all(cx, parts)?;
        let class = import(cx.py(), "string.templatelib")?.getattr(class)?;
        Ok(Some(class.call1(PyTuple::new(cx.py(), parts)?)?))
    }

    fn attr<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>, name: &str) -> Res<Option<Vid>> {
        match val {
            Val::Interpolation(parts) => {
                let index = ["value", "expression", "conversion", "format_spec"]
                    .iter()
                    .position(|field| *field == name);
                match index {
                    Some(index) => Ok(Some(parts[index])),
                    None => unsupported(format!("attribute {name} of an Interpolation holding a tensor")),
                }
            }
            Val::Template(parts) => {
                let picked: Vec<Vid> = match name {
                    "strings" => parts.iter().step_by(2).copied().collect(),
                    "interpolations" => parts.iter().skip(1).step_by(2).copied().collect(),
                    "values" => {
                        let interpolations: Vec<Vid> = parts.iter().skip(1).step_by(2).copied().collect();
                        interpolations
                            .into_iter()
                            .map(|i| cx.load_attr(i, "value"))
                            .collect::<Res<_>>()?
                    }
                    _ => return unsupported(format!("attribute {name} of a Template holding a tensor")),
                };
                Ok(Some(cx.push_val(Val::Tuple(picked))))
            }
            _ => Ok(None),
        }
    }

    /// `string.templatelib.<class>(*parts)`.
    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, _v: Vid, val: &Val<'py>) -> PyResult<bool> {
        let Some((class, parts)) = class_and_parts(val) else {
            return Ok(false);
        };
        let class = import(r.py(), "string.templatelib")?.getattr(class)?;
        r.call_constant(class, &mut |r| {
            for part in parts {
                r.value(*part)?;
            }
            Ok(parts.len())
        })?;
        Ok(true)
    }

    fn children(&self, val: &Val<'_>, _cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        if let Some((_, parts)) = class_and_parts(val) {
            out.extend(parts);
        }
    }
}
