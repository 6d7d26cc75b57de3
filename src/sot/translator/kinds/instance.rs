//! Objects of Python classes the translated code made (with their attributes), objects the
//! backend made while translating from known arguments, and `super()` objects.

use pyo3::prelude::*;

use super::{Interp, Kind, Res, Val, Vid};
use crate::sot::translator::guard::check::is_immutable;
use crate::sot::translator::model::problem::unsupported;
use crate::sot::translator::pyutil::qualname;
use crate::sot::translator::session::with_session;

pub struct Instance;

impl Kind for Instance {
    fn python_type<'py>(
        &self,
        _cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        Ok(match val {
            Val::Object { class, .. } => Some(class.clone()),
            Val::Constructed { obj, .. } => Some(obj.get_type().into_any()),
            _ => None,
        })
    }

    fn truth<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        match val {
            Val::Object { class, .. } => Ok(Some(cx.inlined_truth(v, class)?.unwrap_or(true))),
            _ => Ok(None),
        }
    }

    /// Iterating a constructed object (read only) yields what it was made of, the same on
    /// every call: each item is the argument that is that object.
    fn items<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<Vec<Vid>>> {
        let Val::Constructed {
            obj, args, kwargs, ..
        } = val
        else {
            return Ok(None);
        };
        let made_of = [*args, *kwargs];
        let items: Vec<Bound<'py, PyAny>> = with_session(None, || obj.try_iter()?.collect::<PyResult<_>>())?;
        items
            .into_iter()
            .map(|item| match cx.argument_that_is(&made_of, &item) {
                Some(argument) => Ok(argument),
                None if is_immutable(&item) => Ok(cx.constant(item)),
                None => unsupported(format!(
                    "an item of a {} the translation made that is none of the objects it was made from",
                    qualname(&obj.get_type().into_any())
                )),
            })
            .collect::<Res<Vec<_>>>()
            .map(Some)
    }

    fn concrete<'py>(
        &self,
        _cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        match val {
            Val::Constructed { obj, .. } => Ok(Some(obj.clone())),
            Val::Object { class, .. } => unsupported(format!(
                "a {} object the translation made, used as a Python value",
                qualname(class)
            )),
            _ => Ok(None),
        }
    }

    fn attr<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>, name: &str) -> Res<Option<Vid>> {
        match val {
            Val::Object { class, attrs } => cx.made_object_attr(v, class.clone(), attrs, name).map(Some),
            Val::Super { class, receiver } => cx.super_attr(class.clone(), *receiver, name).map(Some),
            Val::Constructed { obj, .. } => {
                // Made again by the generated code: what it reads of it must be a value.
                let value = obj.getattr(name)?;
                if !is_immutable(&value) {
                    return unsupported(format!(
                        "attribute {name} of a {} the translation made",
                        qualname(&obj.get_type().into_any())
                    ));
                }
                Ok(Some(cx.constant(value)))
            }
            _ => Ok(None),
        }
    }

    fn hashable<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(match val {
            Val::Constructed { obj, .. } => {
                cx.guard_type(v);
                obj.hash().is_ok()
            }
            // A class that defines `__eq__` alone has no `__hash__`.
            Val::Object { class, .. } => !class.getattr("__hash__")?.is_none(),
            _ => true,
        }))
    }

    fn children(&self, val: &Val<'_>, _cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        match val {
            Val::Object { attrs, .. } => out.extend(attrs.iter().map(|(_, v)| *v)),
            Val::Constructed {
                class, args, kwargs, ..
            } => out.extend([*class, *args, *kwargs]),
            _ => {}
        }
    }
}
