//! Tensors of the graph (with the value each had while translating), Python numbers the
//! graph computes from numbers that change between calls, and methods and other
//! attributes of a tensor.
//!
//! Models: `type`, `len` and the meta attributes (shape, dtype: pinned by the guards) from the
//! tensor's example; indexing, item assignment, iteration (by rows) and tensor methods and
//! attributes as operations of the graph. Truth, `in`, and any use as a Python value (a
//! number, a string, a hash) depend on the data: they break.

use pyo3::prelude::*;

use super::{no_tensor_in, Interp, Kind, Rebuild, Res, Sym, Val, Vid};
use crate::sot::translator::guard::source::{name_ref, Source};
use crate::sot::translator::model::problem::{graph_break, Problem};
use crate::sot::translator::pyutil::interned;

pub struct Tensor;

impl Kind for Tensor {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        Ok(match val {
            Val::Tensor { example, .. } => Some(example.get_type().into_any()),
            // What the attribute of a tensor of the example's (guarded) type is.
            Val::TensorPart { tensor, path } => {
                cx.tensor_meta_read(*tensor);
                match cx.val(*tensor) {
                    Val::Tensor { example, .. } => Some(part_of(example, path)?.get_type().into_any()),
                    _ => None,
                }
            }
            _ => None,
        })
    }

    fn truth<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        match val {
            Val::Tensor { .. } => graph_break("data-dependent branch on a tensor's value"),
            Val::TensorMethod { .. } => Ok(Some(true)),
            Val::TensorPart { path, .. } => attribute_used(path),
            _ => Ok(None),
        }
    }

    fn len<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Vid>> {
        match val {
            Val::Tensor { example, .. } => {
                let len = example.len()?;
                cx.tensor_meta_read(v);
                cx.int_value(len).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// A tensor's rows, each an operation of the graph.
    fn items<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Vec<Vid>>> {
        let Val::Tensor { example, .. } = val else {
            return Ok(None);
        };
        cx.tensor_meta_read(v);
        let rows = example
            .len()
            .map_err(|_| Problem::Break("iteration over a 0-d tensor".into()))?;
        let getitem = cx.known().op("getitem")?;
        (0..rows)
            .map(|i| {
                let index = cx.constant(i.into_pyobject(cx.py())?.into_any());
                cx.record(&getitem, vec![v, index])
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
            Val::Tensor { .. } => graph_break("tensor to python value (data-dependent)"),
            Val::Scalar { .. } => unreachable!("realize specializes a dynamic number"),
            Val::TensorPart { path, .. } => attribute_used(path),
            _ => graph_break("tensor method used as a value (tensor to python)"),
        }
    }

    fn attr<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>, name: &str) -> Res<Option<Vid>> {
        match val {
            Val::Tensor { example, .. } => tensor_attr(cx, v, example, name).map(Some),
            Val::TensorPart { tensor, path } => part_attr(cx, *tensor, &format!("{path}.{name}")).map(Some),
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
        match val {
            Val::Tensor { .. } => no_tensor_in(cx, v, item).map(|()| None),
            _ => Ok(None),
        }
    }

    /// Indexing a tensor is an operation of the graph.
    fn item<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>, key: Vid) -> Res<Option<Vid>> {
        match val {
            Val::Tensor { .. } => {
                let getitem = cx.known().op("getitem")?;
                cx.record(&getitem, vec![v, key]).map(Some)
            }
            _ => Ok(None),
        }
    }

    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, _v: Vid, val: &Val<'py>) -> PyResult<bool> {
        match val {
            Val::Tensor { sym, .. } | Val::Scalar { sym, .. } => r.symbol(*sym)?,
            Val::TensorMethod { tensor, name } => {
                r.value(*tensor)?;
                r.load_attr(name);
            }
            Val::TensorPart { tensor, path } => {
                r.value(*tensor)?;
                for name in path.split('.') {
                    r.load_attr(name);
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Writing into a tensor is an operation of the graph.
    fn set_item<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        key: Vid,
        value: Vid,
    ) -> Res<bool> {
        if !matches!(val, Val::Tensor { .. }) {
            return Ok(false);
        }
        let setitem = cx.known().op("setitem")?;
        cx.record(&setitem, vec![v, key, value])?;
        Ok(true)
    }

    /// The same symbol (renumbered where inputs were added); a dynamic number specialized
    /// since is a constant.
    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, moved: &dyn Fn(Sym) -> Sym) -> bool {
        match (old, new) {
            (Val::Tensor { sym: a, .. }, Val::Tensor { sym: b, .. })
            | (Val::Scalar { sym: a, .. }, Val::Scalar { sym: b, .. }) => moved(*a) == *b,
            (Val::Scalar { .. }, Val::Obj { .. }) => true,
            _ => std::mem::discriminant(old) == std::mem::discriminant(new),
        }
    }

    fn hashable<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(match val {
            Val::Tensor { example, .. } => example.hash().is_ok(),
            _ => true,
        }))
    }

    fn children(&self, val: &Val<'_>, _cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        if let Val::TensorMethod { tensor, .. } | Val::TensorPart { tensor, .. } = val {
            out.push(*tensor);
        }
    }
}

/// An attribute of a tensor: a meta attribute (pinned by its guard) is a constant, a method a
/// `TensorMethod`, a tensor an operation of the graph.
fn tensor_attr<'py>(
    cx: &mut dyn Interp<'py>,
    owner: Vid,
    example: &Bound<'py, PyAny>,
    name: &str,
) -> Res<Vid> {
    cx.tensor_attribute_read(owner, example, name);
    if cx.is_meta_attribute(example, name) {
        // Shape, dtype and the like are what the tensor's guard pins.
        let value = example.getattr(interned(cx.py(), name))?;
        return Ok(cx.constant(value));
    }
    let value = example.getattr(interned(cx.py(), name))?;
    if value.is_callable() {
        return Ok(cx.push_val(Val::TensorMethod {
            tensor: owner,
            name: name.to_owned(),
        }));
    }
    if cx.is_backend_tensor(&value) {
        return read_by_graph(cx, owner, name);
    }
    // Another attribute of a tensor from the frame (`name`, `persistable`): read from it,
    // through its source (the generated code reads it again; used, it is guarded).
    if let Val::Tensor { sym, .. } = cx.val(owner) {
        if let Some((source, tensor)) = cx.input_tensor(*sym) {
            let value = tensor.getattr(interned(cx.py(), name))?;
            return Ok(cx.value_of_source(Source::Attr(source, name_ref(cx.py(), name)), value));
        }
    }
    if matches!(cx.val(owner), Val::Tensor { .. }) {
        // Of a tensor the graph makes (`x.flags`): what is read of it, the graph reads.
        return Ok(cx.push_val(Val::TensorPart {
            tensor: owner,
            path: name.to_owned(),
        }));
    }
    attribute_used(name)
}

/// The attribute at `path` of `tensor`, read by the graph: `operator.attrgetter(path)`
/// recorded on it.
fn read_by_graph<'py>(cx: &mut dyn Interp<'py>, tensor: Vid, path: &str) -> Res<Vid> {
    let getter = cx.known().op("attrgetter")?.call1((path,))?;
    cx.record(&getter, vec![tensor])
}

/// The attribute at `path` (`flags.writeable`) of the example `tensor`.
fn part_of<'py>(tensor: &Bound<'py, PyAny>, path: &str) -> PyResult<Bound<'py, PyAny>> {
    path.split('.')
        .try_fold(tensor.clone(), |part, name| part.getattr(name))
}

/// An attribute at `path` of a tensor the graph makes, read by the graph
/// (`operator.attrgetter(path)`): a tensor, or a bool it assumes; a method or another
/// part, where the example's is one; any other value breaks.
fn part_attr<'py>(cx: &mut dyn Interp<'py>, tensor: Vid, path: &str) -> Res<Vid> {
    cx.tensor_meta_read(tensor);
    let Val::Tensor { example, .. } = cx.val(tensor) else {
        return attribute_used(path);
    };
    let value = part_of(example, path)?;
    if value.is_callable() {
        return graph_break(format!("tensor to python: method {path} of a tensor"));
    }
    if value.is_exact_instance_of::<pyo3::types::PyBool>() || cx.is_backend_tensor(&value) {
        return read_by_graph(cx, tensor, path);
    }
    Ok(cx.push_val(Val::TensorPart {
        tensor,
        path: path.to_owned(),
    }))
}

/// An attribute at `path` of a tensor used as a Python value: what it holds depends on
/// the tensor.
fn attribute_used<T>(path: &str) -> Res<T> {
    graph_break(format!("tensor to python: attribute {path} of a tensor"))
}
