//! Guards at decision points: a value made concrete, its identity or type pinned, where the translation depends on it.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// A frame value that is a tensor becomes a graph input; a dynamic number used as
    /// anything but an arithmetic operand is specialized; anything else stays.
    pub(super) fn realize(&mut self, vid: Vid) -> Res<Vid> {
        if let Val::Scalar { example, deps, .. } = self.val(vid) {
            let (example, deps) = (example.clone(), deps.clone());
            for (source, value) in deps {
                self.guard_value(source, &value)?;
            }
            self.values[vid] = Val::constant(example);
            return Ok(vid);
        }
        self.realize_tensor(vid)
    }

    pub(super) fn realize_deep(&mut self, vid: Vid) -> Res<()> {
        self.realize(vid)?;
        let parts: Vec<Vid> = match self.val(vid) {
            Val::Tuple(items) | Val::List(items) | Val::NamedTuple { items, .. } => items.clone(),
            Val::Slice(a, b, c) => vec![*a, *b, *c],
            _ => return Ok(()),
        };
        parts.into_iter().try_for_each(|p| self.realize_deep(p))
    }

    /// The Python object a value stands for, guarding its source on the whole value.
    pub(super) fn concrete(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
        // Containers nest by recursion here: a list nested thousands deep must not
        // exhaust the native stack.
        if self.nesting >= MAX_NESTING {
            return unsupported(format!("a value nested more than {MAX_NESTING} deep"));
        }
        self.nesting += 1;
        let made = self.make_concrete(vid);
        self.nesting -= 1;
        made
    }

    pub(super) fn make_concrete(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
        let vid = self.realize(vid)?;
        match self.val(vid).clone_val() {
            Val::Obj { obj, source } => {
                if let Some(source) = source {
                    if let Some(copy) = self.mutated.get(&(obj.as_ptr() as usize)).copied() {
                        // Its contents as the translation has changed them.
                        return self.concrete(copy);
                    }
                    self.guard_value(source, &obj)?;
                }
                Ok(obj)
            }
            Val::Tensor { .. } => graph_break("tensor to python value (data-dependent)"),
            Val::Scalar { .. } => unreachable!("realize specializes a dynamic number"),
            Val::Tuple(items) => {
                let objs = items.iter().map(|i| self.concrete(*i)).collect::<Res<Vec<_>>>()?;
                Ok(PyTuple::new(self.py, objs)?.into_any())
            }
            Val::Constructed { obj, .. } => Ok(obj.clone()),
            Val::NamedTuple { class, items } => {
                let objs = items.iter().map(|i| self.concrete(*i)).collect::<Res<Vec<_>>>()?;
                let tuple_new = self.py.get_type::<PyTuple>().getattr("__new__")?;
                Ok(tuple_new.call1((class, PyTuple::new(self.py, objs)?))?)
            }
            Val::List(items) => {
                let objs = items.iter().map(|i| self.concrete(*i)).collect::<Res<Vec<_>>>()?;
                Ok(PyList::new(self.py, objs)?.into_any())
            }
            Val::Set(items) => {
                let objs = items.iter().map(|i| self.concrete(*i)).collect::<Res<Vec<_>>>()?;
                Ok(pyo3::types::PySet::new(self.py, objs)?.into_any())
            }
            Val::Dict(items) => {
                let dict = PyDict::new(self.py);
                for (k, v) in items {
                    dict.set_item(self.concrete(k)?, self.concrete(v)?)?;
                }
                Ok(dict.into_any())
            }
            // A view of the dict as it is now: what is done with it now sees the same.
            Val::DictView { dict, part } => Ok(self.concrete(dict)?.call_method0(part.method())?),
            Val::Slice(a, b, c) => {
                let (a, b, c) = (self.concrete(a)?, self.concrete(b)?, self.concrete(c)?);
                Ok(builtin(self.py, "slice")?.call1((a, b, c))?)
            }
            Val::Function(f) => match &f.object {
                Some(object) if f.closure.is_empty() => Ok(object.clone()),
                _ => unsupported("a function made by the translated code used as a value"),
            },
            Val::Method { function, receiver } => {
                let (f, r) = (self.concrete(function)?, self.concrete(receiver)?);
                Ok(self.ops.method_type.call1((f, r))?)
            }
            Val::TensorMethod { .. } => graph_break("tensor method used as a value (tensor to python)"),
            Val::Null => unsupported("NULL used as a value"),
            Val::Object { class, .. } => unsupported(format!(
                "a {} object the translation made, used as a Python value",
                qualname(&class)
            )),
            Val::Interpolation(parts) => {
                let parts = parts.iter().map(|p| self.concrete(*p)).collect::<Res<Vec<_>>>()?;
                Ok(self
                    .templatelib("Interpolation")?
                    .call1(PyTuple::new(self.py, parts)?)?)
            }
            Val::Template(parts) => {
                let parts = parts.iter().map(|p| self.concrete(*p)).collect::<Res<Vec<_>>>()?;
                Ok(self
                    .templatelib("Template")?
                    .call1(PyTuple::new(self.py, parts)?)?)
            }
            Val::ContainerMethod { .. }
            | Val::Iter { .. }
            | Val::ListIter { .. }
            | Val::Lazy(_)
            | Val::DictIter(_)
            | Val::Generator(_)
            | Val::Cell(_)
            | Val::Super { .. } => unsupported("an iterator, cell or bound container method used as a value"),
        }
    }

    /// Guards `source` on `obj` as a whole: its value for immutable values and for lists,
    /// dicts and sets of values (compared with a copy: the object itself may be mutated
    /// between calls), else its identity.
    pub(super) fn guard_value(&mut self, source: SourceId, obj: &Bound<'py, PyAny>) -> Res<()> {
        if is_value_type(obj) {
            self.add_guard(source, Check::Equals(StrongRef::new(obj)));
        } else if self.backend.is_constant_value(obj) {
            // A dtype or a place read anew each time (`tensor.place`): equal, not the same object.
            self.add_guard(source, Check::SameValue(StrongRef::new(obj)));
        } else if is_mutable_container(obj) {
            if !holds_values_only(obj, VALUE_NESTING)? {
                return graph_break(format!(
                    "a {} from the frame holding objects, used as a Python value (its contents cannot be guarded)",
                    obj.get_type().name()?
                ));
            }
            let copy = import(self.py, "copy")?.getattr("deepcopy")?.call1((obj,))?;
            self.add_guard(source, Check::Equals(StrongRef::new(&copy)));
        } else if is_builtin_container(obj) {
            // A subclass of list, dict or set, or a bytearray: a pin fixes the object, not what
            // it holds, and whoever takes it as a value (a builtin called with it) reads that.
            return graph_break(format!(
                "a {} from the frame used as a Python value (its contents cannot be guarded)",
                obj.get_type().name()?
            ));
        } else {
            self.pin(source, obj)?;
        }
        Ok(())
    }

    /// Guards that `source` holds `obj` itself. Not an exception from the frame: each call
    /// raises a new one (the guard would fail every time), and holding it would keep its
    /// traceback's frames, and their locals, alive as long as the translation.
    pub(super) fn pin(&mut self, source: SourceId, obj: &Bound<'py, PyAny>) -> Res<()> {
        if obj.is_instance(&self.py.get_type::<pyo3::exceptions::PyBaseException>())? {
            return graph_break("an exception from the frame used as a value");
        }
        self.add_guard(source, Check::Id(Pin::new(obj)));
        Ok(())
    }

    /// The object a value stands for where only its identity matters (`is`).
    pub(super) fn identity_of(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
        if let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(vid)
        {
            if !is_value_type(obj) {
                let (obj, source) = (obj.clone(), *source);
                self.pin(source, &obj)?;
                return Ok(obj);
            }
        }
        self.concrete(vid)
    }

    pub(super) fn guard_type(&mut self, vid: Vid) {
        if let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(vid)
        {
            let (ty, source) = (obj.get_type().into_any(), *source);
            self.add_guard(source, Check::Type(StrongRef::new(&ty)));
        }
    }

    /// The type of a value, guarding only that.
    pub(super) fn type_of(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
        let vid = self.realize(vid)?;
        Ok(match self.val(vid) {
            Val::Obj { obj, .. } => {
                let ty = obj.get_type().into_any();
                self.guard_type(vid);
                ty
            }
            Val::Tensor { example, .. } => example.get_type().into_any(),
            Val::Tuple(_) => self.py.get_type::<PyTuple>().into_any(),
            Val::NamedTuple { class, .. } => class.clone(),
            Val::Constructed { obj, .. } => obj.get_type().into_any(),
            Val::List(_) => self.py.get_type::<PyList>().into_any(),
            Val::Dict(_) => self.py.get_type::<PyDict>().into_any(),
            Val::DictView { part, .. } => PyDict::new(self.py)
                .call_method0(part.method())?
                .get_type()
                .into_any(),
            Val::Set(_) => self.py.get_type::<pyo3::types::PySet>().into_any(),
            Val::Slice(..) => self.py.get_type::<pyo3::types::PySlice>().into_any(),
            Val::Function(_) => self.ops.function_type.clone(),
            Val::Method { .. } => self.ops.method_type.clone(),
            Val::Object { class, .. } => class.clone(),
            Val::Generator(_) => import(self.py, "types")?.getattr("GeneratorType")?,
            Val::Lazy(lazy) => match lazy {
                Lazy::Range { .. } => builtin(self.py, "iter")?
                    .call1((builtin(self.py, "range")?.call1((0,))?,))?
                    .get_type()
                    .into_any(),
                Lazy::Zip(_) => builtin(self.py, "zip")?,
                Lazy::Enumerate { .. } => builtin(self.py, "enumerate")?,
                Lazy::Map { .. } => builtin(self.py, "map")?,
                Lazy::Filter { .. } => builtin(self.py, "filter")?,
            },
            Val::Interpolation(_) => self.templatelib("Interpolation")?,
            Val::Template(_) => self.templatelib("Template")?,
            _ => return unsupported("the type of an internal value"),
        })
    }
}
