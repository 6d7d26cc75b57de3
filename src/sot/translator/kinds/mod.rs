//! One module per kind of value: each kind's behaviour under the protocols the VM runs
//! (its type, truth, length, iteration, item access, `in`, methods and attributes, hashing,
//! the Python object it stands for, whether it changed since a snapshot) and how generated
//! code rebuilds it, in one place.
//!
//! Kind code sees the VM only through [`Interp`], which the VM implements, and the code
//! generator only through [`Rebuild`]: a kind asks for what it needs (a value, a guard, the
//! truth of an item) and never reaches into their state. Every [`Kind`] method defaults to
//! "not this kind's" (`Ok(None)`, `false`), where the VM's protocol applies its general
//! rule. Adding a kind is a new module here, a `Val` variant, and one arm of [`kind_of`],
//! whose exhaustive `match` makes the compiler ask for it.

mod attr_dict;
mod dict;
mod function;
mod instance;
mod internal;
mod iter;
mod known;
mod list;
mod partial;
mod set;
mod template;
mod tensor;
mod tuple;

use framehook_bytecode::canonical::{Arg, Op};
use pyo3::prelude::*;
use pyo3::PyTypeInfo;

pub use self::dict::iterated_dict;
pub use self::instance::compare_made_objects;
pub use self::known::made_exception;

use super::guard::check::Check;
use super::guard::source::{Source, SourceId};
use super::model::frame::{DictOp, GeneratorState};
use super::model::known::Known;
use super::model::problem::{graph_break, Problem, Res};
use super::model::value::Val;
use super::model::{Sym, Vid};

/// What kind code may ask of the VM. A method added here is a kind reaching up: keep it
/// to what kinds need.
pub trait Interp<'py> {
    fn py(&self) -> Python<'py>;
    /// The Python objects the VM looked up once.
    /// The value `vid` holds now.
    fn val(&self, vid: Vid) -> &Val<'py>;
    /// Replaces the value `vid` holds (an iterator's position, say).
    fn set_val(&mut self, vid: Vid, val: Val<'py>);
    fn known(&self) -> &Known<'py>;
    fn push_val(&mut self, val: Val<'py>) -> Vid;
    /// The value None.
    fn none(&mut self) -> Vid;
    /// A constant of the translation.
    fn constant(&mut self, obj: Bound<'py, PyAny>) -> Vid;
    fn int_value(&mut self, value: usize) -> Res<Vid>;
    /// `result`, a Python object computed while translating, as a value (a constant, or a
    /// value of the graph where it is a tensor).
    fn wrap_result(&mut self, result: Bound<'py, PyAny>) -> Vid;
    /// The id of `source` in the translation's source table.
    fn intern(&mut self, source: Source) -> SourceId;
    /// The value read from `source` (one value per source).
    fn value_of_source(&mut self, source: Source, obj: Bound<'py, PyAny>) -> Vid;

    /// Guards the type of `vid`, where it came from the frame.
    fn guard_type(&mut self, vid: Vid);
    fn add_guard(&mut self, source: SourceId, check: Check);
    /// Guards `source` on `obj` as a whole (its value, or its identity).
    fn guard_value(&mut self, source: SourceId, obj: &Bound<'py, PyAny>) -> Res<()>;
    /// The translation's copy of a list or dict from the frame that it changed.
    fn mutated_copy(&self, obj: &Bound<'py, PyAny>) -> Option<Vid>;

    /// The protocols, for the values a kind holds.
    fn truthy(&mut self, vid: Vid) -> Res<bool>;
    fn boolean(&mut self, value: bool) -> Vid;
    /// `left is right`, guarding what that depends on.
    fn identical(&mut self, left: Vid, right: Vid) -> Res<bool>;
    /// `type(vid)`.
    fn type_of(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>>;
    /// `len(vid)`, as the builtin computes it.
    fn len_of(&mut self, vid: Vid) -> Res<Vid>;
    fn items_of(&mut self, vid: Vid) -> Res<Vec<Vid>>;
    fn concrete(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>>;
    fn hashable(&mut self, vid: Vid) -> Res<bool>;
    /// A dict's (or a dict from the frame's) items, in order.
    fn dict_items(&mut self, vid: Vid) -> Res<Vec<(Vid, Vid)>>;
    /// The next item of an iterator of the translation; None once it is exhausted.
    fn advance(&mut self, iterator: Vid) -> Res<Option<Vid>>;
    /// What asking an exhausted iterator for its next item raises (`StopIteration`).
    fn exhausted(&mut self, iterator: Vid) -> Problem;
    /// Runs a generator the translated code made up to its next `yield`: what it yields,
    /// None once it returned.
    fn resume_generator(&mut self, generator: Vid) -> Res<Option<Vid>>;
    /// `callable(*args)`, inlined where it is Python code.
    fn call(&mut self, callable: Vid, args: Vec<Vid>) -> Res<Vid>;
    /// Item `index` of a list of the translation or from the frame, read now.
    fn list_item(&mut self, list: Vid, index: usize) -> Res<Option<Vid>>;
    /// A dict from the frame as a dict of the translation that reads it (None for one of
    /// the translation's own).
    fn readonly_copy(&mut self, dict: Vid) -> Res<Option<Vid>>;
    /// Makes a list iterator from the frame the translation's own over its list (its
    /// position guarded, and set again by the generated code).
    fn frame_list_iterator(&mut self, iterator: Vid) -> Res<()>;
    /// The truth of an instance of `class` by its `__bool__` or `__len__`, inlined.
    fn inlined_truth(&mut self, vid: Vid, class: &Bound<'py, PyAny>) -> Res<Option<bool>>;
    /// `op(*args)` recorded into the graph.
    fn record(&mut self, op: &Bound<'py, PyAny>, args: Vec<Vid>) -> Res<Vid>;
    /// The value among `roots` (and the containers they are) whose object is `obj` itself.
    fn argument_that_is(&self, roots: &[Vid], obj: &Bound<'py, PyAny>) -> Option<Vid>;
    /// `item in container`, `container[key]`.
    fn contains(&mut self, container: Vid, item: Vid) -> Res<bool>;
    fn subscript(&mut self, container: Vid, key: Vid) -> Res<Vid>;
    /// Whether `vid` is a tensor, or holds one.
    fn is_tensor(&self, vid: Vid) -> bool;
    fn contains_tensor(&self, vid: Vid) -> bool;
    /// A dict key from the frame must hash and compare in C (no Python code runs).
    fn check_native_key(&self, key: &Bound<'py, PyAny>) -> Res<()>;
    /// The container helpers: whether two items are equal as `list.index` compares them; the
    /// error `list.remove` raises; a value's leaving a container is refused where the
    /// generated code could not replay it; a dict's keys changed (its iterators then fail).
    fn equal_items(&mut self, element: Vid, target: Vid) -> Res<bool>;
    fn raise_not_found(&mut self, sequence: Vid, name: &str, target: Vid) -> Res<Vid>;
    fn check_droppable(&self, value: Vid) -> Res<()>;
    fn note_keys_removed(&mut self, dict: Vid);
    /// The index of `key` among a set's items, or a dict's keys, compared as CPython's hash
    /// tables compare them.
    fn find_key(&mut self, stored: &[Vid], key: &Bound<'py, PyAny>) -> Res<Option<usize>>;
    fn find_dict_key(&mut self, items: &[(Vid, Vid)], key: &Bound<'py, PyAny>) -> Res<Option<usize>>;
    /// Stores `value` at `key` among a dict's items (replacing an equal key's value): the
    /// key they held already, or None where the store added it.
    fn dict_set(&mut self, items: &mut Vec<(Vid, Vid)>, key: Vid, value: Vid) -> Res<Option<Vid>>;
    /// Records an operation on the dict `dict`, for the generated code to replay as made:
    /// called once the operation cannot fail, before the dict's value changes.
    fn dict_op(&mut self, dict: Vid, op: DictOp) -> Res<()>;
    /// Adds `new_items` to the set `target`, each unless an equal one is in.
    fn add_items(&mut self, target: Vid, new_items: Vec<Vid>) -> Res<()>;
    /// `sorted(items, key=key, reverse=reverse)`.
    fn sort_items(&mut self, items: Vec<Vid>, key: Option<Vid>, reverse: bool) -> Res<Vec<Vid>>;
    /// `type(owner)`'s attribute `name` as the class defines it (the MRO's first).
    fn type_lookup(&self, ty: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>>;
    /// `owner.name` by the VM's attribute rules (descriptors, instance dicts).
    fn load_attr(&mut self, owner: Vid, name: &str) -> Res<Vid>;
    /// An attribute of an object the translation made, of class `class`.
    fn made_object_attr(
        &mut self,
        owner: Vid,
        class: Bound<'py, PyAny>,
        attrs: &[(String, Vid)],
        name: &str,
    ) -> Res<Vid>;
    /// `super(class, receiver).name`.
    fn super_attr(&mut self, class: Bound<'py, PyAny>, receiver: Vid, name: &str) -> Res<Vid>;
    /// A modeled method of a lock the translation made, bound to it (`vm::locks`).
    fn made_lock_method(&mut self, lock: Vid, name: &str) -> Res<Option<Vid>>;
    /// An attribute of a signature `inspect.signature` made while translating
    /// (`vm::signature`); None for another value or name.
    fn signature_attr(&mut self, signature: Vid, name: &str) -> Res<Option<Vid>>;
    /// A tensor of the graph's input `sym` as the frame holds it, and its source (None for
    /// the result of an operation).
    fn input_tensor(&self, sym: usize) -> Option<(SourceId, Bound<'py, PyAny>)>;
    /// Whether `obj` is one of the backend's tensors.
    fn is_backend_tensor(&self, obj: &Bound<'py, PyAny>) -> bool;
    /// Notes that what is read of the tensor `vid` follows from more than its type (its
    /// shape, dtype, or other meta: a library call's summary then holds for that meta only).
    fn tensor_meta_read(&mut self, vid: Vid);
    /// Notes that a library call being recorded read the attribute `name` of the tensor
    /// `vid` (whose example is `tensor`): its meta, unless its type gives the attribute.
    fn tensor_attribute_read(&mut self, vid: Vid, tensor: &Bound<'py, PyAny>, name: &str);
    /// Whether the backend's guard of a tensor pins its attribute `name` (shape, dtype).
    fn is_meta_attribute(&self, tensor: &Bound<'py, PyAny>, name: &str) -> bool;
    /// Whether the backend reads `obj` as a constant (a dtype, a place).
    fn is_backend_constant(&self, obj: &Bound<'py, PyAny>) -> bool;
}

/// What kind code may ask of the code generator to rebuild a value (implemented by
/// `codegen`): each method pushes onto the generated code's stack.
pub trait Rebuild<'py> {
    fn py(&self) -> Python<'py>;
    /// Pushes the value `vid`.
    fn value(&mut self, vid: Vid) -> PyResult<()>;
    /// Pushes what `source` reads.
    fn source(&mut self, source: SourceId) -> PyResult<()>;
    /// Pushes the graph's symbol `sym`: an input, read from its source, or an output of the
    /// graph's call.
    fn symbol(&mut self, sym: Sym) -> PyResult<()>;
    /// Pushes the cell object `cell` itself (`vid` holds it), as `LOAD_CLOSURE` pushes it
    /// for a closure's tuple: the frame's own cell, the cell of another function's closure
    /// the translation read, or one made anew for a function the generated code made.
    fn cell_object(&mut self, vid: Vid, cell: usize) -> PyResult<()>;
    /// The source of the frame's list or dict whose contents `container`, the translation's
    /// copy, replaces (written back before the value is used).
    fn frame_object_of(&self, container: Vid) -> Option<SourceId>;
    fn load_const(&mut self, obj: Bound<'py, PyAny>);
    fn emit(&mut self, op: Op, arg: Arg);
    fn build_tuple(&mut self, len: usize);
    /// `LOAD_ATTR name` of the value on top.
    fn load_attr(&mut self, name: &str);
    /// Calls the constant `callable` with what `push` pushes (it says how many).
    fn call_constant(
        &mut self,
        callable: Bound<'py, PyAny>,
        push: &mut dyn FnMut(&mut dyn Rebuild<'py>) -> PyResult<usize>,
    ) -> PyResult<()>;
    /// Pushes a new tuple, list, set or dict of what `container` holds.
    fn contents(&mut self, container: &Val<'py>) -> PyResult<()>;
    /// Pushes a generator suspended where `state`'s is, with its variables and stack; false
    /// where that state cannot be set up again.
    fn suspended_generator(&mut self, state: &GeneratorState<'py>) -> PyResult<bool>;
}

/// A kind of value: its behaviour under each protocol. `val` is the value `v` holds (a
/// variant this kind owns, see [`kind_of`]).
pub trait Kind: Sync {
    /// `type(v)`.
    fn python_type<'py>(
        &self,
        _cx: &mut dyn Interp<'py>,
        _v: Vid,
        _val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        Ok(None)
    }

    /// `bool(v)`.
    fn truth<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<bool>> {
        Ok(None)
    }

    /// `len(v)`, as the builtin's result, where the kind knows it.
    fn len<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<Vid>> {
        Ok(None)
    }

    /// What iterating `v` yields, all of it (an iterator is exhausted by it).
    fn items<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<Vec<Vid>>> {
        Ok(None)
    }

    /// The Python object `v` stands for, made now (guarding what that depends on).
    fn concrete<'py>(
        &self,
        _cx: &mut dyn Interp<'py>,
        _v: Vid,
        _val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        Ok(None)
    }

    /// `iter(v)`, where this kind makes its own iterator (an iterator is its own).
    fn iter<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<Vid>> {
        Ok(None)
    }

    /// `next(v)` of an iterator of this kind: `Some(None)` once it is exhausted; None where
    /// `v` is no iterator of this kind.
    fn next<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<Option<Vid>>> {
        Ok(None)
    }

    /// `v.name(*args, **kwargs)` of a method this kind models (keyword arguments only where
    /// the method takes them); None where it models none by that name.
    #[allow(clippy::too_many_arguments)]
    fn method<'py>(
        &self,
        _cx: &mut dyn Interp<'py>,
        _v: Vid,
        _val: &Val<'py>,
        _name: &str,
        _args: &[Vid],
        _kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        Ok(None)
    }

    /// `v.name`, where this kind knows it.
    fn attr<'py>(
        &self,
        _cx: &mut dyn Interp<'py>,
        _v: Vid,
        _val: &Val<'py>,
        _name: &str,
    ) -> Res<Option<Vid>> {
        Ok(None)
    }

    /// `item in v`, where this kind knows it.
    fn contains<'py>(
        &self,
        _cx: &mut dyn Interp<'py>,
        _v: Vid,
        _val: &Val<'py>,
        _item: Vid,
    ) -> Res<Option<bool>> {
        Ok(None)
    }

    /// `v[key]`, where this kind knows it.
    fn item<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>, _key: Vid) -> Res<Option<Vid>> {
        Ok(None)
    }

    /// `v[key] = value`, where this kind holds items; false where it does not.
    fn set_item<'py>(
        &self,
        _cx: &mut dyn Interp<'py>,
        _v: Vid,
        _val: &Val<'py>,
        _key: Vid,
        _value: Vid,
    ) -> Res<bool> {
        Ok(false)
    }

    /// `del v[key]` (`key` made a Python value first), where this kind holds items; false
    /// where it does not.
    fn del_item<'py>(
        &self,
        _cx: &mut dyn Interp<'py>,
        _v: Vid,
        _val: &Val<'py>,
        _key: &Bound<'py, PyAny>,
    ) -> Res<bool> {
        Ok(false)
    }

    /// Whether `hash(v)` succeeds.
    fn hashable<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<bool>> {
        Ok(None)
    }

    /// Pushes, in generated code, a new value that `v` (`val`) stands for; false where
    /// generated code cannot rebuild it. (A value made once into a local of its own, an
    /// object, a function, a container held in several places, is read from there: the code
    /// generator's made objects.)
    fn rebuild<'py>(&self, _r: &mut dyn Rebuild<'py>, _v: Vid, _val: &Val<'py>) -> PyResult<bool> {
        Ok(false)
    }

    /// Whether `new`, what a value of this kind (`old`, taken by a snapshot) holds now, is
    /// still the same value: the VM's state changed nowhere but in new values. `moved`
    /// renumbers a graph symbol of the snapshot as the graph numbers it now. By default, the
    /// same variant (a value that never changes once made).
    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, _moved: &dyn Fn(Sym) -> Sym) -> bool {
        std::mem::discriminant(old) == std::mem::discriminant(new)
    }

    /// Pushes, in generated code, a new container of what `val` holds (its items rebuilt);
    /// false where `val` is no container.
    fn build<'py>(&self, _r: &mut dyn Rebuild<'py>, _val: &Val<'py>) -> PyResult<bool> {
        Ok(false)
    }

    /// A container made once into a local of its own (held in several places, so one object
    /// as in the frame) is made in two steps, so that items holding it see it: `make_empty`
    /// pushes it empty (before any item is rebuilt), `fill` fills the one in local `var`.
    fn make_empty<'py>(&self, _r: &mut dyn Rebuild<'py>, _val: &Val<'py>) -> PyResult<bool> {
        Ok(false)
    }

    fn fill<'py>(&self, _r: &mut dyn Rebuild<'py>, _val: &Val<'py>, _var: u32) -> PyResult<bool> {
        Ok(false)
    }

    /// The values `val` holds, which generated code rebuilds with it; `cells` are the VM's
    /// cells' contents.
    fn children(&self, _val: &Val<'_>, _cells: &[Option<Vid>], _out: &mut Vec<Vid>) {}
}

/// The kind of `val`.
pub fn kind_of(val: &Val<'_>) -> &'static dyn Kind {
    match val {
        Val::Null | Val::Cell(_) => &internal::Internal,
        Val::Obj { .. } => &known::Known,
        Val::Tensor { .. } | Val::Scalar { .. } | Val::TensorMethod { .. } | Val::TensorPart { .. } => {
            &tensor::Tensor
        }
        Val::Tuple(_) | Val::NamedTuple { .. } | Val::Slice(..) => &tuple::Tuple,
        Val::List(_) | Val::ListIter { .. } => &list::List,
        Val::Dict(_) | Val::DictView { .. } | Val::DictIter(_) => &dict::Dict,
        Val::Set(_) => &set::Set,
        Val::PoppedSet(_) => &set::PoppedSet,
        Val::AttrDict(_) => &attr_dict::AttrDict,
        Val::Iter { .. } | Val::Lazy(_) | Val::Generator(_) => &iter::Iterators,
        Val::Function(_) | Val::Method { .. } | Val::ContainerMethod { .. } => &function::Function,
        Val::Partial { .. } => &partial::Partial,
        Val::Object { .. } | Val::Constructed { .. } | Val::Super { .. } => &instance::Instance,
        Val::Interpolation(_) | Val::Template(_) => &template::Template,
    }
}

/// The items of a value, exhausting it where it is an iterator of the translation.
fn drain<'py>(cx: &mut dyn Interp<'py>, iterator: Vid) -> Res<Vec<Vid>> {
    let mut items = Vec::new();
    while let Some(item) = cx.advance(iterator)? {
        items.push(item);
    }
    Ok(items)
}

/// The objects `items` stand for.
fn concrete_all<'py>(cx: &mut dyn Interp<'py>, items: &[Vid]) -> Res<Vec<Bound<'py, PyAny>>> {
    items.iter().map(|item| cx.concrete(*item)).collect()
}

/// `container.name`, a method of a container of the translation (run by `Kind::method`),
/// where its type `T` has that attribute (else CPython's AttributeError).
fn container_method<'py, T: PyTypeInfo>(
    cx: &mut dyn Interp<'py>,
    container: Vid,
    name: &str,
) -> Res<Option<Vid>> {
    cx.py().get_type::<T>().call0()?.getattr(name)?;
    Ok(Some(cx.push_val(Val::ContainerMethod {
        container,
        name: name.to_owned(),
    })))
}

/// `in` with a tensor on either side is data-dependent: the graph breaks.
pub fn no_tensor_in<'py>(cx: &mut dyn Interp<'py>, container: Vid, item: Vid) -> Res<()> {
    if cx.is_tensor(container) || cx.is_tensor(item) {
        return graph_break("tensor to python: `in` on tensors (data-dependent)");
    }
    Ok(())
}

/// `item in elements` as a sequence answers it: by identity, then `==`.
fn sequence_contains<'py>(cx: &mut dyn Interp<'py>, elements: &[Vid], item: Vid) -> Res<bool> {
    for element in elements {
        if cx.equal_items(*element, item)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Pushes `items` rebuilt, for a new container of them.
fn push_items<'py>(r: &mut dyn Rebuild<'py>, items: &[Vid]) -> PyResult<()> {
    for item in items {
        r.value(*item)?;
    }
    Ok(())
}

/// `T.<method>(container in var, [whole,] contents)`, its result dropped: how a container
/// made once is filled.
fn fill_with<'py, T: PyTypeInfo>(
    r: &mut dyn Rebuild<'py>,
    var: u32,
    method: &str,
    whole: Option<Bound<'py, PyAny>>,
    contents: &Val<'py>,
) -> PyResult<()> {
    let method = r.py().get_type::<T>().getattr(method)?;
    r.call_constant(method, &mut |r| {
        r.emit(Op::LoadFast, Arg::Var(var));
        let sliced = whole.is_some();
        if let Some(whole) = &whole {
            r.load_const(whole.clone());
        }
        r.contents(contents)?;
        Ok(2 + usize::from(sliced))
    })?;
    r.emit(Op::PopTop, Arg::None);
    Ok(())
}
