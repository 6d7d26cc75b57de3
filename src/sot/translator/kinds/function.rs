//! Functions the VM inlines (made by the translated code, or real function objects),
//! methods bound to a receiver, and methods of containers the translation made.
//!
//! Models: `type`, truth, a function's `__name__`, `__qualname__` and `__code__`, the
//! attributes the translated code stored in a function it made and its `__dict__` (another
//! attribute breaks), calls (the VM inlines them); a bound method is rebuilt as attribute
//! lookup binds it (`function.__get__(receiver)`), a container's method is run by that container's
//! kind (one it does not model breaks).

use pyo3::prelude::*;
use pyo3::types::PyString;

use super::{Interp, Kind, Rebuild, Res, Sym, Val, Vid};
use crate::hookapi::pyobject::import;
use crate::sot::translator::model::problem::unsupported;

pub struct Function;

impl Kind for Function {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        Ok(match val {
            Val::Function(_) => Some(cx.known().function_type.clone()),
            // A Python function binds as a method; a C method as a builtin method.
            Val::Method { function, .. }
                if matches!(cx.val(*function), Val::Function(_))
                    || cx.type_of(*function)?.is(&cx.known().function_type) =>
            {
                Some(cx.known().method_type.clone())
            }
            Val::Method { .. } => self
                .concrete(cx, v, val)?
                .map(|bound| bound.get_type().into_any()),
            _ => None,
        })
    }

    fn truth<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(true))
    }

    fn concrete<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        match val {
            Val::Function(f) => match &f.object {
                Some(object) if f.closure.is_empty() => Ok(Some(object.clone())),
                _ => unsupported("a function made by the translated code used as a value"),
            },
            Val::Method { function, receiver } => {
                let (f, r) = (cx.concrete(*function)?, cx.concrete(*receiver)?);
                let bound = import(cx.py(), "framehook.sot._translate")?.getattr("_bound")?;
                Ok(Some(bound.call1((f, r))?))
            }
            _ => Ok(None),
        }
    }

    /// A function's name, qualified name and code, what the translated code stored in it,
    /// and (of one it made) its `__dict__`.
    fn attr<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>, name: &str) -> Res<Option<Vid>> {
        if let Val::Method { function, receiver } = val {
            return method_attr(cx, v, val, (*function, *receiver), name);
        }
        let Val::Function(f) = val else {
            return Ok(None);
        };
        if let Some((_, value)) = f.stored.iter().find(|(stored, _)| stored == name) {
            return Ok(Some(*value));
        }
        let value = match name {
            "__name__" => PyString::new(cx.py(), &f.name).into_any(),
            "__qualname__" => PyString::new(cx.py(), &f.qualname).into_any(),
            "__code__" => f.code.clone(),
            "__dict__" if f.object.is_none() => return Ok(Some(cx.push_val(Val::AttrDict(v)))),
            _ => return unsupported(format!("attribute {name} of a function")),
        };
        Ok(Some(cx.constant(value)))
    }

    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, _moved: &dyn Fn(Sym) -> Sym) -> bool {
        match (old, new) {
            (Val::Function(a), Val::Function(b)) => {
                a.name == b.name
                    && a.qualname == b.qualname
                    && a.defaults == b.defaults
                    && a.kwdefaults == b.kwdefaults
                    && (a.annotations, a.annotate) == (b.annotations, b.annotate)
                    && a.stored == b.stored
            }
            _ => std::mem::discriminant(old) == std::mem::discriminant(new),
        }
    }

    /// A method: `_bound(function, receiver)`; a container's method: read from the
    /// container (the frame's object, where the translation's copy replaces its contents).
    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, _v: Vid, val: &Val<'py>) -> PyResult<bool> {
        match val {
            Val::Method { function, receiver } => {
                let (function, receiver) = (*function, *receiver);
                let bound = import(r.py(), "framehook.sot._translate")?.getattr("_bound")?;
                r.call_constant(bound, &mut |r| {
                    r.value(function)?;
                    r.value(receiver)?;
                    Ok(2)
                })?;
            }
            Val::ContainerMethod { container, name } => {
                match r.frame_object_of(*container) {
                    Some(target) => r.source(target)?,
                    None => r.value(*container)?,
                }
                r.load_attr(name);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn children(&self, val: &Val<'_>, cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        match val {
            Val::Function(function) => {
                out.extend(&function.defaults);
                out.extend(function.kwdefaults.iter().map(|(_, v)| *v));
                out.extend(function.annotations.iter().chain(&function.annotate));
                out.extend(function.closure.iter().filter_map(|c| cells[*c]));
            }
            Val::Method { function, receiver } => out.extend([*function, *receiver]),
            Val::ContainerMethod { container, .. } => out.push(*container),
            _ => {}
        }
    }
}

/// An attribute of a bound method (`types.MethodType`) as its C lookup (`method_getattro`)
/// finds it: `__func__` and `__self__`, and a name the method type lacks (or `__doc__`, which
/// it reads from the function) read from the function (`functools.wraps` of a bound method
/// copies its `__module__`, `__name__`, `__dict__`, ...). None for another attribute.
fn method_attr<'py>(
    cx: &mut dyn Interp<'py>,
    v: Vid,
    val: &Val<'py>,
    (function, receiver): (Vid, Vid),
    name: &str,
) -> Res<Option<Vid>> {
    let method_type = cx.known().method_type.clone();
    if !Function
        .python_type(cx, v, val)?
        .is_some_and(|ty| ty.is(&method_type))
    {
        return Ok(None);
    }
    match name {
        "__func__" => Ok(Some(function)),
        "__self__" => Ok(Some(receiver)),
        "__doc__" => cx.load_attr(function, name).map(Some),
        _ if cx.type_lookup(&method_type, name)?.is_none() => cx.load_attr(function, name).map(Some),
        _ => Ok(None),
    }
}
