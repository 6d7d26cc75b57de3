//! Objects of Python classes the translated code made (with their attributes), objects the
//! backend made while translating from known arguments, and `super()` objects.
//!
//! Models, for an object of a Python class the translation made: `type` (its class), truth by
//! its class's `__bool__` or `__len__` (inlined), attributes by the VM's attribute rules,
//! `hash` (none where the class sets `__hash__` to None) and rich comparisons by the classes'
//! Python methods, inlined (identity for `==` and `!=` past them); using it as a Python
//! value breaks. A backend's object: its type, and attributes that are immutable values.

use pyo3::prelude::*;
use pyo3::types::PyType;

use super::{Interp, Kind, Res, Sym, Val, Vid};
use crate::sot::translator::guard::check::{is_immutable, is_match_of_a_value, is_value_type};
use crate::sot::translator::model::problem::{graph_break, unsupported, Problem};
use crate::sot::translator::pyutil::{builtin, is_heap_instance, qualname};
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
                if cx.known().is_lock(obj) {
                    // A lock's methods, bound to the lock the generated code makes
                    // (`vm::locks`); its other attributes break.
                    return cx.made_lock_method(v, name)?.map_or_else(
                        || unsupported(format!("attribute {name} of a lock the translation made")),
                        |method| Ok(Some(method)),
                    );
                }
                if let Some(found) = cx.signature_attr(v, name)? {
                    return Ok(Some(found));
                }
                // Made again by the generated code: what it reads of it must be a value, or,
                // of an immutable object, a method of its C type (a match's `group`), bound
                // to the object the generated code makes.
                let value = obj.getattr(name)?;
                if is_immutable(&value) {
                    return Ok(Some(cx.constant(value)));
                }
                let class = obj.get_type().into_any();
                let c_method = cx.type_lookup(&class, name)?.filter(|method| {
                    (is_immutable(obj) || is_match_of_a_value(obj)) && cx.known().is_c_method(method)
                });
                match c_method {
                    Some(method)
                        if value
                            .getattr(pyo3::intern!(value.py(), "__self__"))
                            .is_ok_and(|owner| owner.is(obj)) =>
                    {
                        let function = cx.constant(method);
                        Ok(Some(cx.push_val(Val::Method {
                            function,
                            receiver: v,
                        })))
                    }
                    _ => unsupported(format!(
                        "attribute {name} of a {} the translation made",
                        qualname(&class)
                    )),
                }
            }
            _ => Ok(None),
        }
    }

    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, _moved: &dyn Fn(Sym) -> Sym) -> bool {
        match (old, new) {
            (Val::Object { class: c, attrs: a }, Val::Object { class: d, attrs: b }) => c.is(d) && a == b,
            _ => std::mem::discriminant(old) == std::mem::discriminant(new),
        }
    }

    /// An item of a match the translation made (`m[1]`), by a value: a value itself.
    fn item<'py>(&self, cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>, key: Vid) -> Res<Option<Vid>> {
        let Val::Constructed { obj, .. } = val else {
            return Ok(None);
        };
        if !is_match_of_a_value(obj) {
            return Ok(None);
        }
        let key = cx.concrete(key)?;
        if !is_value_type(&key) {
            return Ok(None);
        }
        let item = obj.get_item(&key)?;
        Ok(is_immutable(&item).then(|| cx.constant(item)))
    }

    fn hashable<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(match val {
            Val::Constructed { obj, .. } => {
                cx.guard_type(v);
                obj.hash().is_ok()
            }
            // A class that defines `__eq__` alone has no `__hash__`.
            Val::Object { class, .. } => !class.getattr(pyo3::intern!(class.py(), "__hash__"))?.is_none(),
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

/// `left <name> right` where an operand is an object the translation made, or an object
/// from the frame whose class defines the comparison in Python (its type guarded): its
/// class's Python rich comparison, inlined, then the other operand's reflected one (first
/// where its class is a subclass of the left's) when missing or `NotImplemented`; past
/// both, `==` and `!=` compare identity. A comparison written in C on the way (other than
/// `object`'s, and a builtin value type's, which decline a foreign object) breaks. None
/// when neither operand is such an object.
pub fn compare_made_objects<'py>(
    cx: &mut dyn Interp<'py>,
    name: &str,
    left: Vid,
    right: Vid,
) -> Res<Option<Vid>> {
    let function_type = cx.known().function_type.clone();
    let is_python = |f: &Bound<'py, PyAny>| f.is_instance(&function_type).unwrap_or(false);
    let reflected = match name {
        "lt" => "gt",
        "le" => "ge",
        "gt" => "lt",
        "ge" => "le",
        same => same,
    };
    let class_of = |cx: &mut dyn Interp<'py>, v: Vid, method: &str| -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(match cx.val(v) {
            Val::Object { class, .. } => Some(class.clone()),
            Val::Obj { obj, source: Some(_) } if is_heap_instance(obj)? && !cx.contains_tensor(v) => {
                let class = obj.get_type().into_any();
                let mut own = cx
                    .type_lookup(&class, &format!("__{method}__"))?
                    .is_some_and(|f| is_python(&f));
                if method == "ne" && !own {
                    // `object.__ne__` inverts a Python `__eq__`.
                    let default_ne = builtin(cx.py(), "object")?.getattr("__ne__")?;
                    own = cx
                        .type_lookup(&class, "__ne__")?
                        .is_some_and(|f| f.is(&default_ne))
                        && cx.type_lookup(&class, "__eq__")?.is_some_and(|f| is_python(&f));
                }
                own.then_some(class)
            }
            _ => None,
        })
    };
    let (left_class, right_class) = (class_of(cx, left, name)?, class_of(cx, right, reflected)?);
    if left_class.is_none() && right_class.is_none() {
        return Ok(None);
    }
    for (v, class) in [(left, &left_class), (right, &right_class)] {
        if class.is_some() && matches!(cx.val(v), Val::Obj { .. }) {
            cx.guard_type(v);
        }
    }
    let right_first = match (&left_class, &right_class) {
        (Some(l), Some(r)) => !l.is(r) && r.cast::<PyType>().map_err(PyErr::from)?.is_subclass(l)?,
        _ => false,
    };
    let mut attempts = [
        (left, &left_class, name, right),
        (right, &right_class, reflected, left),
    ];
    if right_first {
        attempts.swap(0, 1);
    }
    for (receiver, class, method, other) in attempts {
        let Some(class) = class else {
            if !declines_foreign_objects(cx, receiver, method, other)? {
                return graph_break(format!(
                    "operator {method} of a {} object (written in C)",
                    qualname(&cx.type_of(receiver)?)
                ));
            }
            continue;
        };
        let found = cx.type_lookup(class, &format!("__{method}__"))?;
        // `object.__ne__` answers the inverse of `__eq__` (unless that declines).
        let inverse_of_eq = method == "ne"
            && found.as_ref().is_some_and(|f| {
                builtin(cx.py(), "object")
                    .and_then(|o| o.getattr(pyo3::intern!(o.py(), "__ne__")))
                    .is_ok_and(|default| f.is(&default))
            });
        let function = if inverse_of_eq {
            cx.type_lookup(class, "__eq__")?.filter(is_python)
        } else {
            found.filter(is_python)
        };
        let Some(function) = function else { continue };
        let function = cx.constant(function);
        let result = cx.call(function, vec![receiver, other])?;
        let declined = matches!(cx.val(result), Val::Obj { obj, .. } if obj.is(cx.py().NotImplemented()));
        if declined {
            continue;
        }
        if inverse_of_eq {
            let equal = cx.truthy(result)?;
            return Ok(Some(cx.boolean(!equal)));
        }
        return Ok(Some(result));
    }
    match name {
        "eq" | "ne" => {
            let same = cx.identical(left, right)?;
            Ok(Some(cx.boolean(same == (name == "eq"))))
        }
        _ => {
            let symbol = match name {
                "lt" => "<",
                "le" => "<=",
                "gt" => ">",
                _ => ">=",
            };
            let (left_type, right_type) = (cx.type_of(left)?, cx.type_of(right)?);
            Err(Problem::Python(pyo3::exceptions::PyTypeError::new_err(format!(
                "'{symbol}' not supported between instances of '{}' and '{}'",
                left_type.getattr(pyo3::intern!(left_type.py(), "__name__"))?,
                right_type.getattr(pyo3::intern!(right_type.py(), "__name__"))?
            ))))
        }
    }
}

/// Whether `receiver`'s own comparison `method` answers `NotImplemented` to `other`, an
/// object of a class it does not know: `object`'s does, and a builtin value type's or
/// container's where `other` is no instance of it.
fn declines_foreign_objects<'py>(
    cx: &mut dyn Interp<'py>,
    receiver: Vid,
    method: &str,
    other: Vid,
) -> Res<bool> {
    let ty = cx.type_of(receiver)?;
    let other_type = cx.type_of(other)?.cast_into::<PyType>().map_err(PyErr::from)?;
    let py = cx.py();
    let builtin_types = [
        "int",
        "float",
        "complex",
        "bool",
        "str",
        "bytes",
        "tuple",
        "list",
        "dict",
        "set",
        "frozenset",
        "range",
        "slice",
    ];
    for name in builtin_types {
        let builtin_type = builtin(py, name)?;
        if builtin_type.is(&ty) {
            return Ok(!other_type.is_subclass(&builtin_type)?);
        }
    }
    let own = cx.type_lookup(&ty, &format!("__{method}__"))?;
    let default = builtin(py, "object")?.getattr(format!("__{method}__"))?;
    Ok(ty.is(py.None().bind(py).get_type())
        || ty.is(py.Ellipsis().bind(py).get_type())
        || own.is_some_and(|m| m.is(&default)))
}
