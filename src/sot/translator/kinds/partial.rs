//! `functools.partial` objects the translated code made.
//!
//! Models, for an exact `functools.partial` made in the translation: `type`, truth, a call
//! (its function called with its arguments first and its keywords under the call's own),
//! `func`, `args` and `keywords`; another attribute breaks, and one used as a real object
//! while translating breaks where it was made. The generated code makes it again with
//! `functools.partial`. One from the frame is a known object (`known.rs`).

use pyo3::prelude::*;
use pyo3::types::PyString;

use super::{Interp, Kind, Rebuild, Res, Val, Vid};
use crate::hookapi::pyobject::import;
use crate::sot::translator::model::problem::unsupported;

pub struct Partial;

impl Kind for Partial {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        _val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        Ok(Some(cx.known().partial_type.clone()))
    }

    fn truth<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(true))
    }

    fn concrete<'py>(
        &self,
        _cx: &mut dyn Interp<'py>,
        _v: Vid,
        _val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        unsupported("a partial object made by the translated code used as a value")
    }

    fn attr<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>, name: &str) -> Res<Option<Vid>> {
        let Val::Partial {
            function,
            args,
            keywords,
        } = val
        else {
            return Ok(None);
        };
        Ok(Some(match name {
            "func" => *function,
            "args" => cx.push_val(Val::Tuple(args.clone())),
            "keywords" => {
                let items = keywords
                    .iter()
                    .map(|(name, value)| (cx.constant(PyString::new(cx.py(), name).into_any()), *value))
                    .collect();
                cx.push_val(Val::Dict(items))
            }
            _ => return unsupported(format!("attribute {name} of a partial object")),
        }))
    }

    /// `_partial(function, args, names, values)`: `functools.partial` of them.
    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, _v: Vid, val: &Val<'py>) -> PyResult<bool> {
        let Val::Partial {
            function,
            args,
            keywords,
        } = val
        else {
            return Ok(false);
        };
        let make = import(r.py(), "framehook.sot._translate")?.getattr("_partial")?;
        let names: Vec<&str> = keywords.iter().map(|(name, _)| name.as_str()).collect();
        let names = pyo3::types::PyTuple::new(r.py(), names)?.into_any();
        r.call_constant(make, &mut |r| {
            r.value(*function)?;
            for arg in args {
                r.value(*arg)?;
            }
            r.build_tuple(args.len());
            r.load_const(names.clone());
            for (_, value) in keywords {
                r.value(*value)?;
            }
            r.build_tuple(keywords.len());
            Ok(4)
        })?;
        Ok(true)
    }

    fn unchanged<'py>(
        &self,
        old: &Val<'py>,
        new: &Val<'py>,
        _moved: &dyn Fn(super::Sym) -> super::Sym,
    ) -> bool {
        match (old, new) {
            (
                Val::Partial {
                    function: f,
                    args: a,
                    keywords: k,
                },
                Val::Partial {
                    function: g,
                    args: b,
                    keywords: l,
                },
            ) => f == g && a == b && k == l,
            _ => false,
        }
    }

    fn children(&self, val: &Val<'_>, _cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        if let Val::Partial {
            function,
            args,
            keywords,
        } = val
        {
            out.push(*function);
            out.extend(args);
            out.extend(keywords.iter().map(|(_, v)| *v));
        }
    }
}
