//! A real Python object: from the frame (with its source, guarded where the translation
//! depends on it) or a constant of the translation. What a kind of the translation does not
//! model falls back to the object itself.
//!
//! Models, on the object itself and guarded: `type`; truth (an exact list's or dict's by its
//! guarded length, a value's by its value, another's by its class's Python `__bool__` or
//! `__len__`, inlined); `len` where the type's `__len__` is a builtin container's; iteration
//! of an exact list, tuple, dict or `OrderedDict` (guarded) and of str, bytes, frozenset and
//! range values, any other iteration breaks; `in` of an exact dict, list or tuple; indexing
//! an exact list, tuple, dict or `OrderedDict`, an immutable value, or through the class's
//! `__getitem__` written in Python, other indexing breaks.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFrozenSet, PyList, PySet, PySlice, PyString, PyTuple};

use super::{no_tensor_in, sequence_contains, Interp, Kind, Rebuild, Res, Sym, Val, Vid};
use crate::hookapi::pyobject::StrongRef;
use crate::sot::translator::guard::check::{is_immutable, is_value_type, Check};
use crate::sot::translator::guard::source::{Source, SourceId};
use crate::sot::translator::model::code::MAX_MADE_ITEMS;
use crate::sot::translator::model::problem::{graph_break, unsupported};
use crate::sot::translator::model::value::{DictPart, Lazy};
use crate::sot::translator::pyutil::{
    builtin_len_base, has_builtin_len, is_plain_tuple, is_template, iterates_as_tuple,
};

pub struct Known;

/// The object and its source.
fn object<'a, 'py>(val: &'a Val<'py>) -> Option<(&'a Bound<'py, PyAny>, Option<SourceId>)> {
    match val {
        Val::Obj { obj, source } => Some((obj, *source)),
        _ => None,
    }
}

impl Kind for Known {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        let Some((obj, _)) = object(val) else {
            return Ok(None);
        };
        let ty = obj.get_type().into_any();
        cx.guard_type(v);
        Ok(Some(ty))
    }

    /// An object from the frame: a list's or dict's length is guarded, another container's
    /// own `__bool__` or `__len__` inlined, a value's truth (a backend's constant's too)
    /// guarded on the value.
    fn truth<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        let Some((obj, source)) = object(val) else {
            return Ok(None);
        };
        if let Some(source) = source {
            if let Some(copy) = cx.mutated_copy(obj) {
                return cx.truthy(copy).map(Some);
            }
            if obj.is_exact_instance_of::<PyList>() || obj.is_exact_instance_of::<PyDict>() {
                cx.guard_type(v);
                cx.add_guard(source, Check::Len(obj.len()?));
                return Ok(Some(obj.len()? > 0));
            }
            let class = obj.get_type().into_any();
            let length_is_truth = match builtin_len_base(obj)? {
                Some(base) => match cx.type_lookup(&class, "__bool__")? {
                    Some(truth) => base
                        .getattr(pyo3::intern!(base.py(), "__bool__"))
                        .is_ok_and(|own| own.is(&truth)),
                    None => true,
                },
                None => false,
            };
            if !is_value_type(obj) && length_is_truth {
                // A tuple, set or deque (or a subclass keeping their `__len__`, and `__bool__`
                // where the type has one, as 3.9's deque): its length.
                cx.guard_type(v);
                let n = obj.len()?;
                cx.add_guard(source, Check::Len(n));
                return Ok(Some(n > 0));
            }
            if cx.is_backend_constant(obj) {
                // A number of the backend's (a numpy scalar), a dtype, a shape: its truth follows
                // from its value, which the guard compares.
                cx.guard_value(source, obj)?;
                return Ok(Some(obj.is_truthy()?));
            }
            if !is_value_type(obj) {
                return match cx.inlined_truth(v, &class)? {
                    Some(truth) => Ok(Some(truth)),
                    None => {
                        cx.guard_type(v);
                        Ok(Some(true))
                    }
                };
            }
            cx.guard_value(source, obj)?;
        }
        Ok(Some(obj.is_truthy()?))
    }

    /// The length of an object from the frame whose type's `__len__` is a builtin
    /// container's, guarded.
    fn len<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Vid>> {
        let Some((obj, Some(source))) = object(val) else {
            return Ok(None);
        };
        if !has_builtin_len(obj)? {
            return Ok(None);
        }
        if let Some(copy) = cx.mutated_copy(obj) {
            return cx.len_of(copy).map(Some);
        }
        cx.guard_type(v);
        let n = obj.len()?;
        cx.add_guard(source, Check::Len(n));
        cx.int_value(n).map(Some)
    }

    /// A list's or tuple's items from the frame read by index (each a source), a dict's
    /// keys guarded; an immutable sequence's items are constants.
    fn items<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Vec<Vid>>> {
        let Some((obj, source)) = object(val) else {
            return Ok(None);
        };
        let py = cx.py();
        if let Some(source) = source {
            if let Some(copy) = cx.mutated_copy(obj) {
                return cx.items_of(copy).map(Some);
            }
            if obj.is_exact_instance_of::<PyList>() || is_plain_tuple(obj)? {
                // A tuple subclass keeping tuple's iteration (a namedtuple, attrs'
                // `CAttributes`) is read as a tuple, its type guarded.
                cx.guard_type(v);
                let len = obj.len()?;
                cx.add_guard(source, Check::Len(len));
                return (0..len)
                    .map(|i| {
                        let item = obj.get_item(i)?;
                        let key = i.into_pyobject(py)?.into_any();
                        Ok(cx.value_of_source(Source::Item(source, StrongRef::new(&key)), item))
                    })
                    .collect::<Res<Vec<_>>>()
                    .map(Some);
            }
            if obj.is_exact_instance_of::<PyDict>() {
                let keys = PyTuple::new(py, obj.cast::<PyDict>().map_err(PyErr::from)?.keys())?;
                cx.guard_type(v);
                cx.add_guard(source, Check::Keys(StrongRef::new(keys.as_any())));
                return Ok(Some(keys.iter().map(|k| cx.constant(k)).collect()));
            }
            if obj.is_exact_instance_of::<PySet>() || obj.is_exact_instance_of::<PyFrozenSet>() {
                // In its own order, which an equal set need not share (collisions, removals):
                // guarded as iterated.
                let elements = PyTuple::new(py, obj.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
                let check = Check::OrderedKeys {
                    ty: StrongRef::new(&obj.get_type().into_any()),
                    keys: StrongRef::new(elements.as_any()),
                };
                cx.add_guard(source, check);
                return Ok(Some(elements.iter().map(|k| cx.constant(k)).collect()));
            }
            if obj.get_type().is(&cx.known().ordered_dict_type) {
                // Its own order (the dict's may differ after `move_to_end`).
                let keys = PyTuple::new(py, obj.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
                let check = Check::OrderedKeys {
                    ty: StrongRef::new(&cx.known().ordered_dict_type),
                    keys: StrongRef::new(keys.as_any()),
                };
                cx.add_guard(source, check);
                return Ok(Some(keys.iter().map(|k| cx.constant(k)).collect()));
            }
        }
        let range_type = cx.known().range_type.clone();
        let safe = obj.is_exact_instance_of::<PyString>()
            || iterates_as_tuple(obj)?
            || obj.is_exact_instance_of::<PyFrozenSet>()
            || obj.is_exact_instance_of::<PyBytes>()
            || obj.get_type().is(&range_type)
            || is_template(obj)
            || cx.is_backend_constant(obj);
        if !safe {
            return unsupported(format!("iteration over {}", obj.get_type().name()?));
        }
        if !obj.is_exact_instance_of::<PyTuple>() && iterates_as_tuple(obj)? {
            // A tuple subclass's items, fixed by its identity (pinned below), are constants
            // unless they are tensors, which the graph must take as inputs.
            for item in obj.try_iter()? {
                if cx.is_backend_tensor(&item?) {
                    return unsupported(format!(
                        "iteration over a {} holding tensors",
                        obj.get_type().name()?
                    ));
                }
            }
        }
        let obj = cx.concrete(v)?;
        // `range(sys.maxsize)` (its length may not even fit): iterated lazily
        // (`iterator`), never listed.
        if obj.get_type().is(&range_type) && obj.len().map_or(true, |n| n > MAX_MADE_ITEMS) {
            return graph_break(format!("a sequence of more than {MAX_MADE_ITEMS} items"));
        }
        let items: Vec<Bound<'py, PyAny>> = obj.try_iter()?.collect::<PyResult<_>>()?;
        Ok(Some(items.into_iter().map(|i| cx.constant(i)).collect()))
    }

    /// A list from the frame is read live as it is iterated, but through a list's iterator
    /// only while it is one (a later call may hand an object whose `__iter__` is its own); a
    /// list iterator from the frame is its own; a dict from the frame is iterated over its
    /// copy; a range by its bounds.
    fn iter<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Vid>> {
        let Some((obj, source)) = object(val) else {
            return Ok(None);
        };
        let ty = obj.get_type();
        if source.is_some() {
            if obj.is_exact_instance_of::<PyList>() {
                cx.guard_type(v);
                return Ok(Some(cx.push_val(Val::ListIter {
                    list: v,
                    next: Some(0),
                    frame: None,
                })));
            }
            if ty.is(&cx.known().list_iterator_type) {
                // `iter()` of an iterator is itself.
                cx.frame_list_iterator(v)?;
                return Ok(Some(v));
            }
            if obj.is_exact_instance_of::<PyDict>() || ty.is(&cx.known().ordered_dict_type) {
                return super::dict::dict_iterator(cx, v, DictPart::Keys).map(Some);
            }
        }
        if ty.is(&cx.known().range_type) {
            // Its bounds, as the value the guards pin (one from the frame is guarded).
            let range = cx.concrete(v)?;
            let bound = |name: &str| range.getattr(name).and_then(|n| n.extract::<i64>()).ok();
            if let (Some(next), Some(stop), Some(step)) = (bound("start"), bound("stop"), bound("step")) {
                return Ok(Some(cx.push_val(Val::Lazy(Lazy::Range { next, stop, step }))));
            }
        }
        Ok(None)
    }

    fn next<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Option<Vid>>> {
        let Some((obj, source)) = object(val) else {
            return Ok(None);
        };
        if source.is_some() && obj.get_type().is(&cx.known().list_iterator_type) {
            cx.frame_list_iterator(v)?;
            return cx.advance(v).map(Some);
        }
        unsupported(format!("iteration over {}", obj.get_type().name()?))
    }

    /// A dict's views, of any object from the frame the VM reads as a dict.
    fn method<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        _val: &Val<'py>,
        name: &str,
        args: &[Vid],
        _kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        Ok(match (name, args) {
            ("keys" | "values" | "items", []) => {
                cx.guard_type(v);
                Some(super::dict::view(cx, v, name))
            }
            _ => None,
        })
    }

    /// A dict from the frame (unchanged by the translation): only the key's presence is
    /// guarded, not the whole dict. A list or tuple from the frame: its items compared.
    fn contains<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        item: Vid,
    ) -> Res<Option<bool>> {
        let Some((obj, Some(source))) = object(val) else {
            return Ok(None);
        };
        no_tensor_in(cx, v, item)?;
        if cx.mutated_copy(obj).is_none() && obj.is_exact_instance_of::<PyDict>() {
            cx.guard_type(v);
            let key = cx.concrete(item)?;
            cx.check_native_key(&key)?;
            let found = obj.contains(&key)?;
            let key_source = cx.intern(Source::Item(source, StrongRef::new(&key)));
            cx.add_guard(key_source, if found { Check::Present } else { Check::Absent });
            return Ok(Some(found));
        }
        if obj.is_exact_instance_of::<PyList>() || obj.is_exact_instance_of::<PyTuple>() {
            let elements = cx.items_of(v)?;
            return sequence_contains(cx, &elements, item).map(Some);
        }
        Ok(None)
    }

    /// An item of a list, tuple or dict from the frame is read through its source (its
    /// length guarded for a sequence); a slice of one holds its items, each from its source.
    /// An item of an immutable value or a backend constant is a constant; a class's
    /// `__getitem__` written in Python is inlined.
    fn item<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>, key: Vid) -> Res<Option<Vid>> {
        let Some((obj, source)) = object(val) else {
            return Ok(None);
        };
        if source.is_some() {
            if let Some(copy) = cx.mutated_copy(obj) {
                return cx.subscript(copy, key).map(Some);
            }
        }
        if cx.contains_tensor(key) {
            return graph_break("tensor to python: indexing a Python container with a tensor");
        }
        let key_obj = cx.concrete(key)?;
        let ordered_dict = obj.get_type().is(&cx.known().ordered_dict_type);
        let plain = obj.is_exact_instance_of::<PyList>()
            || is_plain_tuple(obj)?
            || obj.is_exact_instance_of::<PyDict>()
            || ordered_dict
            || is_immutable(obj)
            || cx.is_backend_constant(obj);
        if !plain {
            // The class's own `__getitem__`, for objects of this type only.
            cx.guard_type(v);
            let getitem = cx.type_lookup(&obj.get_type().into_any(), "__getitem__")?;
            let function_type = cx.known().function_type.clone();
            if let Some(getitem) = getitem.filter(|g| g.is_instance(&function_type).unwrap_or(false)) {
                let function = cx.constant(getitem);
                return cx.call(function, vec![v, key]).map(Some);
            }
            return unsupported(format!("indexing a {}", obj.get_type().name()?));
        }
        let mapping = obj.is_exact_instance_of::<PyDict>() || ordered_dict;
        if mapping {
            cx.check_native_key(&key_obj)?;
        }
        let found = obj.get_item(&key_obj);
        // A tuple subclass's items through their sources: its identity would be pinned.
        let subclass_tuple = !obj.is_exact_instance_of::<PyTuple>() && is_plain_tuple(obj)?;
        let Some(source) = source.filter(|_| !is_immutable(obj) || subclass_tuple) else {
            let _ = cx.concrete(v)?;
            return Ok(Some(cx.wrap_result(found?)));
        };
        // Guarded whether the item is found or not (a KeyError or IndexError is caught, and
        // on a later call the item may be there).
        cx.guard_type(v);
        let is_slice = key_obj.is_instance_of::<PySlice>();
        if mapping {
            // The read of a found item is hoisted to the generated code's start: on a later
            // call the key may be missing, and the original raises KeyError where it reads it.
            let item = cx.intern(Source::Item(source, StrongRef::new(&key_obj)));
            cx.add_guard(
                item,
                if found.is_ok() {
                    Check::Present
                } else {
                    Check::Absent
                },
            );
        } else if !is_slice {
            cx.add_guard(source, Check::Len(obj.len()?));
        }
        let value = found?;
        // A slice is a mapping's key like any other; only a sequence's slice holds items.
        if mapping || !is_slice {
            return Ok(Some(
                cx.value_of_source(Source::Item(source, StrongRef::new(&key_obj)), value),
            ));
        }
        let items = cx.items_of(v)?;
        let key = cx.constant(key_obj);
        // A tuple subclass's slice is a tuple, as tuple's `__getitem__` makes it.
        let copy = cx.push_val(if obj.is_instance_of::<PyTuple>() {
            Val::Tuple(items)
        } else {
            Val::List(items)
        });
        cx.subscript(copy, key).map(Some)
    }

    fn concrete<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        let Some((obj, source)) = object(val) else {
            return Ok(None);
        };
        if let Some(source) = source {
            if let Some(copy) = cx.mutated_copy(obj) {
                // Its contents as the translation has changed them.
                return cx.concrete(copy).map(Some);
            }
            cx.guard_value(source, obj)?;
        }
        Ok(Some(obj.clone()))
    }

    /// From its source; a constant of the translation as a constant (a frozenset as a copy,
    /// which a code object's constructor may replace by an equal one).
    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, _v: Vid, val: &Val<'py>) -> PyResult<bool> {
        let Some((obj, source)) = object(val) else {
            return Ok(false);
        };
        match source {
            Some(source) => r.source(source)?,
            None if obj.is_exact_instance_of::<PyFrozenSet>() => {
                let copy = obj.getattr(pyo3::intern!(obj.py(), "copy"))?;
                r.call_constant(copy, &mut |_| Ok(0))?;
            }
            None => r.load_const(obj.clone()),
        }
        Ok(true)
    }

    /// The same object from the same source; one from the frame may since have become a
    /// graph input.
    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, _moved: &dyn Fn(Sym) -> Sym) -> bool {
        match (old, new) {
            (Val::Obj { obj: a, source: s }, Val::Obj { obj: b, source: t }) => a.is(b) && s == t,
            (Val::Obj { source: Some(_), .. }, Val::Tensor { .. } | Val::Scalar { .. }) => true,
            _ => std::mem::discriminant(old) == std::mem::discriminant(new),
        }
    }

    fn hashable<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        let Some((obj, _)) = object(val) else {
            return Ok(None);
        };
        cx.guard_type(v);
        Ok(Some(obj.hash().is_ok()))
    }
}

/// An exception the translation raised (not one read from the frame): the generated
/// code makes its own, once (its handler and its `except ... as e` see the same one).
pub fn made_exception<'a, 'py>(value: &'a Val<'py>) -> Option<&'a Bound<'py, PyAny>> {
    match value {
        Val::Obj { obj, source: None }
            if obj
                .is_instance(&obj.py().get_type::<pyo3::exceptions::PyBaseException>())
                .unwrap_or(false) =>
        {
            Some(obj)
        }
        _ => None,
    }
}
