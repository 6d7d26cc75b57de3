//! Attributes of real objects and of objects the translation made: descriptors, slots, properties, special methods, super.

use super::*;
use crate::sot::translator::model::value::{store_named, FUNCTION_FIELDS};

/// A function's attributes that only label it (attrs sets them on the methods it makes):
/// stored as any other attribute, the function inlined as it was until the store runs
/// (a call of one renamed while translating breaks: CPython's messages name it).
pub(super) const FUNCTION_LABELS: &[&str] = &["__module__", "__qualname__", "__name__", "__doc__"];

impl<'py, 'b> Vm<'py, 'b> {
    /// `owner.name = value`: the class's own `__setattr__` when it is written in Python
    /// (inlined), else `object.__setattr__`'s rules.
    pub(super) fn store_attr(&mut self, owner: Vid, name: String, value: Vid) -> Res<()> {
        let owner = self.realize(owner)?;
        if matches!(self.val(owner), Val::Obj { obj, .. } if obj.is_instance(&self.ops.module_type).unwrap_or(false))
        {
            // A module's attributes are its functions' globals, which the translation reads
            // from their namespaces apart (`attr._config._run_validators = False`).
            return unsupported("attribute assignment on a module");
        }
        if self.store_layer_attr(owner, &name, value)?.is_some() {
            return Ok(());
        }
        let class = match self.val(owner) {
            Val::Object { class, .. } => Some(class.clone()),
            Val::Obj { obj, source: Some(_) } if !self.backend.is_tensor(obj) => {
                Some(obj.get_type().into_any())
            }
            _ => None,
        };
        if let Val::Obj { obj, source } = self.val(owner) {
            if self.is_thread_local(obj) {
                let (obj, source) = (obj.clone(), *source);
                return self.store_thread_local_attr(owner, &obj, source, name, value);
            }
        }
        if let Some(class) = class {
            match self.type_lookup(&class, "__setattr__")? {
                Some(setattr) if setattr.is_instance(&self.ops.function_type)? => {
                    // Inlined as STORE_ATTR calls it (a frozen class's raises where it would).
                    if matches!(self.val(owner), Val::Obj { .. }) {
                        self.guard_type(owner);
                    }
                    let setattr = self.constant(setattr);
                    let name = self.constant(self.interned_name(&name).into_any());
                    self.call(setattr, vec![owner, name, value], vec![])?;
                    return Ok(());
                }
                Some(setattr) if setattr.is(&self.ops.type_setattr) && !name.starts_with("__") => {
                    return self.store_class_attr(owner, name, value);
                }
                // BaseException's own is CPython's generic store too.
                Some(setattr)
                    if !setattr.is(&self.ops.object_setattr) && !setattr.is(&self.ops.exception_setattr) =>
                {
                    return unsupported(format!(
                        "attribute assignment on a {} object (its __setattr__ is written in C)",
                        qualname(&class)
                    ));
                }
                _ => {}
            }
        }
        self.generic_setattr(owner, name, value)
    }

    /// `cls.name = value` on a class from the frame whose metaclass stores as `type` does
    /// (attrs' `_CountingAttr.cls_counter += 1`): replayed after the graph, the class pinned.
    /// Its reads while translating see the value (`class_attr_changed` makes those the VM
    /// would take from the class's MRO break); a special method (`__x__`) is not stored so.
    fn store_class_attr(&mut self, owner: Vid, name: String, value: Vid) -> Res<()> {
        let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(owner)
        else {
            return unsupported("attribute assignment on a class without a source");
        };
        let (obj, source) = (obj.clone(), *source);
        if !is_heap_type(&obj) {
            return unsupported(format!(
                "attribute assignment on the builtin type {}",
                qualname(&obj)
            ));
        }
        let on_metaclass = self.type_lookup(&obj.get_type().into_any(), &name)?;
        if on_metaclass.is_some_and(|d| has_attr(d.get_type().as_any(), "__set__").unwrap_or(true)) {
            // A data descriptor of the metaclass (a property) takes the store.
            return unsupported(format!("assignment to the metaclass's data descriptor {name}"));
        }
        self.add_guard(source, Check::Id(Pin::new(&obj)));
        self.side_effects.push(SideEffect::StoreAttr {
            target: owner,
            name: name.clone(),
            value,
            through_object: false,
        });
        self.stored_attrs.push((obj.as_ptr() as usize, name, Some(value)));
        Ok(())
    }

    /// Whether the translation stored `name` on a class of `ty`'s MRO (`store_class_attr`):
    /// what the class gives is then that value, which a lookup of the real class misses.
    pub(super) fn class_attr_changed(&self, ty: &Bound<'py, PyAny>, name: &str) -> PyResult<bool> {
        if self.stored_attrs.is_empty() {
            return Ok(false);
        }
        for class in ty.getattr(pyo3::intern!(ty.py(), "__mro__"))?.try_iter()? {
            let class = class?.as_ptr() as usize;
            if self.stored_attrs.iter().any(|(p, n, _)| *p == class && n == name) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// `object.__setattr__(owner, name, value)`, called explicitly: where the object's C
    /// base stores attributes as `object` does (CPython rejects the call otherwise).
    pub(super) fn call_object_setattr(&mut self, args: &[Vid], kwargs: &[(String, Vid)]) -> Res<Vid> {
        let [owner, name, value] = args else {
            return unsupported("object.__setattr__ with other than three arguments");
        };
        let name_value = self.concrete(*name)?;
        if !kwargs.is_empty() || !name_value.is_exact_instance_of::<PyString>() {
            return unsupported("object.__setattr__ with keywords or a name other than a str");
        }
        let owner = self.realize(*owner)?;
        let class = self.type_of(owner)?;
        let generic = match solid_base(&class)? {
            Some(base) => base
                .getattr(pyo3::intern!(base.py(), "__setattr__"))?
                .is(&self.ops.object_setattr),
            None => false,
        };
        if !generic {
            return unsupported(format!(
                "object.__setattr__ on a {} object (its C base stores attributes its own way)",
                qualname(&class)
            ));
        }
        if matches!(self.val(owner), Val::Obj { .. }) {
            self.guard_type(owner);
        }
        self.generic_setattr(owner, name_value.extract()?, *value)?;
        Ok(self.constant(self.ops.none.clone()))
    }

    /// `function.name = value` on a function the translation made, as CPython's function
    /// stores it: a new name or qualified name (a `str`), annotations (a dict or None, where
    /// functions have no `__annotate__`), `__annotate__` (3.14+), a field (`__module__`,
    /// `__doc__`, `__type_params__` given a tuple) or an item of its `__dict__`; another of
    /// the function's own attributes (its code, defaults, ...) breaks.
    fn store_function_attr(&mut self, owner: Vid, name: String, value: Vid) -> Res<()> {
        let function_type = self.ops.function_type.clone();
        let descriptor = self.type_lookup(&function_type, &name)?;
        let is_data_descriptor = descriptor
            .as_ref()
            .is_some_and(|d| has_attr(d.get_type().as_any(), "__set__").unwrap_or(false));
        let concrete_str = |vm: &mut Self| -> Res<Option<String>> {
            let obj = vm.concrete(value)?;
            Ok(obj.cast_exact::<PyString>().ok().map(|s| s.to_string()))
        };
        let mut function = match self.val(owner) {
            Val::Function(function) => function.clone(),
            _ => return unsupported("attribute assignment on a value made by the translated code"),
        };
        match name.as_str() {
            "__name__" | "__qualname__" => {
                let Some(text) = concrete_str(self)? else {
                    return unsupported(format!("{name} set to other than a str on a function"));
                };
                if name == "__name__" {
                    function.name = text;
                } else {
                    function.qualname = text;
                }
            }
            // 3.14's functions also have `__annotate__`, which storing annotations clears.
            "__annotations__" if self.type_lookup(&function_type, "__annotate__")?.is_none() => {
                let is_dict = match self.val(value) {
                    Val::Dict(_) => true,
                    Val::Obj { obj, .. } => obj.is_exact_instance_of::<PyDict>() || obj.is_none(),
                    _ => false,
                };
                if !is_dict {
                    return unsupported("__annotations__ set to other than a dict on a function");
                }
                function.annotations = Some(value);
            }
            // 3.14+: None, or a callable, which drops the annotations computed so far.
            "__annotate__" if is_data_descriptor => match self.val(value) {
                Val::Obj { obj, .. } if obj.is_none() => function.annotate = Some(value),
                Val::Function(_) => {
                    function.annotate = Some(value);
                    function.annotations = None;
                }
                Val::Obj { obj, .. } if obj.is_callable() => {
                    function.annotate = Some(value);
                    function.annotations = None;
                }
                _ => return unsupported("__annotate__ set to other than a callable or None on a function"),
            },
            "__type_params__"
                if is_data_descriptor
                    && !matches!(self.val(value), Val::Tuple(_))
                    && !self.is_exact_tuple(value) =>
            {
                return unsupported("__type_params__ set to other than a tuple on a function");
            }
            _ if is_data_descriptor && !FUNCTION_FIELDS.contains(&name.as_str()) => {
                return unsupported(format!("assignment to the function attribute {name}"));
            }
            _ => store_named(&mut function.stored, name, value),
        }
        self.values[owner] = Val::Function(function);
        Ok(())
    }

    fn is_exact_tuple(&self, vid: Vid) -> bool {
        matches!(self.val(vid), Val::Obj { obj, .. } if obj.is_exact_instance_of::<PyTuple>())
    }

    /// Whether `class`'s `__dict__` attribute (`found`, looked up on it) is the one CPython
    /// gives a class statement's instances, and no class of its MRO has slots: the object's
    /// `__dict__` then holds every attribute the VM stored in it.
    fn is_plain_instance_dict(
        &self,
        class: &Bound<'py, PyAny>,
        found: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<bool> {
        let getset_type = self.ops.getset_descriptor_type.clone();
        if !found.is_some_and(|d| d.get_type().is(&getset_type)) || !has_instance_dict(class) {
            return Ok(false);
        }
        for base in class.getattr(pyo3::intern!(self.py, "__mro__"))?.try_iter()? {
            let own = base?.getattr(pyo3::intern!(self.py, "__dict__"))?;
            if own.contains(pyo3::intern!(self.py, "__slots__"))? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The store `object.__setattr__` makes: a data descriptor's setter, a slot, or the
    /// instance's `__dict__`.
    fn generic_setattr(&mut self, owner: Vid, name: String, value: Vid) -> Res<()> {
        if let Val::Object { class, mut attrs } = self.val(owner).clone() {
            let class_attr = self.type_lookup(&class, &name)?;
            let is_slot = self.is_slot(class_attr.as_ref())?;
            if !is_slot && !has_instance_dict(&class) {
                return unsupported("attribute assignment on an object without a __dict__");
            }
            if let Some(descriptor) =
                class_attr.filter(|d| !is_slot && has_attr(d.get_type().as_any(), "__set__").unwrap_or(false))
            {
                let Some(setter) = self.python_setter(&descriptor)? else {
                    return unsupported(format!("assignment to the data descriptor {name}"));
                };
                let setter = self.constant(setter);
                self.call(setter, vec![owner, value], vec![])?;
                return Ok(());
            }
            store_named(&mut attrs, name, value);
            self.values[owner] = Val::Object { class, attrs };
            return Ok(());
        }
        if let Val::Tensor { sym, example } = self.val(owner) {
            // `y.stop_gradient = False` on a tensor the graph made: an operation of the graph
            // (not on an input: a static program would set it on its own value only). Flags
            // only: a shape or dtype set in place changes what the backend compiled for.
            let flag = self.backend.is_meta_attribute(example, &name)
                && example
                    .getattr(self.interned_name(&name))
                    .is_ok_and(|v| v.is_exact_instance_of::<PyBool>());
            if *sym >= self.graph.inputs.len() && flag {
                let setattr = builtin(self.py, "setattr")?;
                let name = self.constant(self.interned_name(&name).into_any());
                self.record(&setattr, vec![owner, name, value], vec![])?;
                return Ok(());
            }
        }
        if matches!(self.val(owner), Val::Function(function) if function.object.is_none()) {
            return self.store_function_attr(owner, name, value);
        }
        let Val::Obj { obj, source } = self.val(owner) else {
            return unsupported("attribute assignment on a value made by the translated code");
        };
        let (obj, source) = (obj.clone(), *source);
        if source.is_none() || self.backend.is_tensor(&obj) {
            return unsupported("attribute assignment on an object without a source");
        }
        let class_attr = self.type_lookup(&obj.get_type().into_any(), &name)?;
        let is_python_slot = match &class_attr {
            Some(descriptor) => self.is_python_slot(descriptor)?,
            None => false,
        };
        if !is_python_slot && !has_attr(&obj, "__dict__")? {
            return unsupported(
                "attribute assignment on an object without a __dict__, not to one of its slots",
            );
        }
        if obj.is_instance(&self.ops.function_type)?
            && name.starts_with("__")
            && !FUNCTION_LABELS.contains(&name.as_str())
        {
            // A call after it is inlined from what the function holds now (its defaults,
            // its code): the store must have happened.
            return graph_break(format!("assignment to {name} of a function"));
        }
        if obj.is_instance(&self.ops.function_type)? && FUNCTION_LABELS.contains(&name.as_str()) {
            // Their C setters store the value as it is, a name only if it is a str.
            let named = matches!(name.as_str(), "__name__" | "__qualname__");
            if named && !self.type_of(value)?.is(self.py.get_type::<PyString>()) {
                return unsupported(format!(
                    "assignment of a value other than a str to {name} of a function"
                ));
            }
            self.guard_type(owner);
            self.side_effects.push(SideEffect::StoreAttr {
                target: owner,
                name: name.clone(),
                value,
                through_object: false,
            });
            self.stored_attrs.push((obj.as_ptr() as usize, name, Some(value)));
            return Ok(());
        }
        if self.dict_changed(&obj)? {
            return graph_break(format!(
                "assignment to {name} of an object whose __dict__ the translation changed"
            ));
        }
        if let Some(descriptor) =
            class_attr.filter(|d| has_attr(d.get_type().as_any(), "__set__").unwrap_or(false))
        {
            if !is_python_slot {
                // A setter may change more than the attribute (`e.__cause__ = None` sets
                // `__suppress_context__`), which replaying the store later would hide from
                // the reads between: a property's Python setter runs inlined, any other
                // runs as it is.
                self.guard_type(owner);
                let Some(setter) = self.python_setter(&descriptor)? else {
                    return graph_break(format!("assignment to the data descriptor {name}"));
                };
                let setter = self.constant(setter);
                self.call(setter, vec![owner, value], vec![])?;
                return Ok(());
            }
        }
        self.guard_type(owner);
        let setattr = obj.get_type().getattr("__setattr__")?;
        let through_object =
            !setattr.is(&self.ops.object_setattr) && !setattr.is(&self.ops.exception_setattr);
        self.side_effects.push(SideEffect::StoreAttr {
            target: owner,
            name: name.clone(),
            value,
            through_object,
        });
        self.stored_attrs.push((obj.as_ptr() as usize, name, Some(value)));
        Ok(())
    }

    /// Whether `descriptor` is a slot of a class written in Python (`__slots__`), which
    /// stores any value as it is; a C type's members check theirs (`__suppress_context__`
    /// takes only a bool).
    pub(super) fn is_python_slot(&self, descriptor: &Bound<'py, PyAny>) -> PyResult<bool> {
        Ok(self.is_slot(Some(descriptor))?
            && is_heap_type(&descriptor.getattr(pyo3::intern!(descriptor.py(), "__objclass__"))?))
    }

    /// A property's setter when it is a Python function (the VM inlines it); None for any
    /// other data descriptor.
    pub(super) fn python_setter(&self, descriptor: &Bound<'py, PyAny>) -> Res<Option<Bound<'py, PyAny>>> {
        if !descriptor.is_instance(&self.ops.property_type)? {
            return Ok(None);
        }
        let setter = descriptor.getattr(pyo3::intern!(descriptor.py(), "fset"))?;
        Ok(setter.is_instance(&self.ops.function_type)?.then_some(setter))
    }

    /// `del obj.name` on an object from the frame: guarded to have it in its `__dict__`,
    /// replayed after the graph.
    pub(super) fn delete_attr(&mut self, owner: Vid, name: String) -> Res<()> {
        let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(owner)
        else {
            return unsupported("attribute deletion on an object without a source");
        };
        let (obj, source) = (obj.clone(), *source);
        if self.backend.is_tensor(&obj)
            || self.overrides_object(&obj, "__delattr__")?
            || !has_attr(&obj, "__dict__")?
        {
            return unsupported("attribute deletion on an object with __delattr__ or slots");
        }
        if self.dict_changed(&obj)? {
            return graph_break(format!(
                "deleting {name} of an object whose __dict__ the translation changed"
            ));
        }
        let dict = obj.getattr(pyo3::intern!(obj.py(), "__dict__"))?;
        let key = self.interned_name(&name).into_any();
        if !dict.contains(&key)? {
            return unsupported(format!("deleting {name}, which the object's __dict__ lacks"));
        }
        self.guard_type(owner);
        let dict_source = self.intern(Source::Attr(source, self.name_ref("__dict__")));
        let entry = self.intern(Source::Item(dict_source, StrongRef::new(&key)));
        self.add_guard(entry, Check::Present);
        self.side_effects.push(SideEffect::DeleteAttr {
            target: owner,
            name: name.clone(),
        });
        self.stored_attrs.push((obj.as_ptr() as usize, name, None));
        Ok(())
    }

    /// Whether the translation changed the `__dict__` of `obj` through the dict itself
    /// (`obj.__dict__.pop(k)`): its symbolic copy, not `obj`, has the attributes now. The
    /// dict is read only through the C descriptor every class with instance dicts has
    /// (anything else, a property named `__dict__`, is not run while translating).
    pub(super) fn dict_changed(&self, obj: &Bound<'py, PyAny>) -> PyResult<bool> {
        if self.mutated.is_empty() {
            return Ok(false);
        }
        let ty = obj.get_type().into_any();
        let plain = ty
            .getattr(pyo3::intern!(ty.py(), "__getattribute__"))?
            .is(&self.ops.object_getattribute)
            && self
                .type_lookup(&ty, "__dict__")?
                .is_some_and(|d| d.is_instance(&self.ops.getset_descriptor_type).unwrap_or(false));
        Ok(plain
            && obj
                .getattr(pyo3::intern!(obj.py(), "__dict__"))
                .is_ok_and(|dict| self.mutated.contains_key(&(dict.as_ptr() as usize))))
    }

    /// Whether the object's type overrides `object`'s `method` (`__setattr__`, `__delattr__`).
    pub(super) fn overrides_object(&self, obj: &Bound<'py, PyAny>, method: &str) -> PyResult<bool> {
        let method = self.interned_name(method);
        let default = builtin(self.py, "object")?.getattr(&method)?;
        Ok(!obj.get_type().getattr(&method)?.is(&default))
    }

    /// Looks `name` up on the type's MRO without running descriptors.
    pub(super) fn type_lookup(
        &self,
        ty: &Bound<'py, PyAny>,
        name: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        crate::hookapi::pyobject::type_lookup(ty, &self.interned_name(name))
    }

    /// `name` as a source's attribute or key (`guard::source::name_ref`), from the
    /// translation's interned names.
    pub(super) fn name_ref(&self, name: &str) -> StrongRef {
        StrongRef::new(self.interned_name(name).as_any())
    }

    /// `name` as an interned Python string (`pyutil::interned`).
    pub(super) fn interned_name(&self, name: &str) -> Bound<'py, PyString> {
        crate::sot::translator::pyutil::interned(self.py, name)
    }

    pub(super) fn load_attr(&mut self, owner: Vid, name: &str) -> Res<Vid> {
        let owner = self.realize(owner)?;
        let val = self.val(owner).clone();
        if let Some(found) = kind_of(&val).attr(self, owner, &val, name)? {
            return Ok(found);
        }
        // A real object's attribute: the VM's attribute rules.
        match val {
            Val::Obj { obj, source: Some(s) } if obj.get_type().is(self.builtin("super")?) => {
                // A super object from the frame reads as one the translation made: its class
                // pinned, its receiver read from it.
                self.guard_type(owner);
                let class = obj.getattr(pyo3::intern!(obj.py(), "__thisclass__"))?;
                let class_source = self.intern(Source::Attr(s, self.name_ref("__thisclass__")));
                self.add_guard(class_source, Check::Id(Pin::new(&class)));
                let receiver = self.value_of_source(
                    Source::Attr(s, self.name_ref("__self__")),
                    obj.getattr(pyo3::intern!(obj.py(), "__self__"))?,
                );
                self.super_attr(class, receiver, name)
            }
            Val::Obj { obj, .. } if name != "write" && self.written_to(&obj) => {
                graph_break(format!("{name} of a StringIO the translation wrote to"))
            }
            Val::Obj { obj, source } => {
                // An OrderedDict has a `__dict__`: a name its class lacks, or one the
                // translation stored, is an attribute of its own, read as any object's.
                let ordered = self.is_ordered_dict(&obj)
                    && self.type_lookup(&obj.get_type().into_any(), name)?.is_some()
                    && !self
                        .stored_attrs
                        .iter()
                        .any(|(p, n, _)| *p == obj.as_ptr() as usize && n == name);
                let container = obj.is_exact_instance_of::<PyList>()
                    || obj.is_exact_instance_of::<PyDict>()
                    || ordered
                    || obj.is_exact_instance_of::<PyTuple>() && matches!(name, "index" | "count");
                if container && source.is_some() {
                    // A method of a list, dict or tuple from the frame works on its symbolic
                    // copy, written back after the graph if the method mutates it. One the
                    // type lacks raises CPython's AttributeError here (reading an exact
                    // builtin's attribute runs no user code), its type guarded.
                    self.guard_type(owner);
                    obj.getattr(self.interned_name(name))?;
                    if self.is_ordered_dict(&obj) && !matches!(name, "get" | "keys" | "values" | "items") {
                        // Its other methods are its own (`copy` makes an OrderedDict,
                        // `popitem` and `move_to_end` take its order).
                        return unsupported(format!("OrderedDict.{name}"));
                    }
                    let mutates = matches!(
                        name,
                        "append"
                            | "extend"
                            | "insert"
                            | "pop"
                            | "remove"
                            | "clear"
                            | "reverse"
                            | "sort"
                            | "update"
                            | "setdefault"
                            | "popitem"
                    );
                    if (obj.is_exact_instance_of::<PyDict>() || self.is_ordered_dict(&obj))
                        && matches!(name, "keys" | "values" | "items")
                    {
                        // A view shows the dict as it is when used (its copy once mutated).
                        return Ok(self.push_val(Val::ContainerMethod {
                            container: owner,
                            name: name.to_owned(),
                        }));
                    }
                    if name == "get"
                        && obj.is_exact_instance_of::<PyDict>()
                        && !self.mutated.contains_key(&(obj.as_ptr() as usize))
                    {
                        // Read through the dict itself, guarding only the key it is asked
                        // for (`frame_dict_get`), not the whole dict's keys.
                        return Ok(self.push_val(Val::ContainerMethod {
                            container: owner,
                            name: name.to_owned(),
                        }));
                    }
                    let copy = if mutates {
                        self.mutable_copy(owner)?
                    } else {
                        self.readonly_copy(owner)?
                    };
                    if let Some(copy) = copy {
                        return Ok(self.push_val(Val::ContainerMethod {
                            container: copy,
                            name: name.to_owned(),
                        }));
                    }
                }
                // The attribute stores and the copy of `__dict__` are replayed in order, but
                // neither sees the other while translating: the real code reads on from here.
                if name == "__dict__"
                    && self
                        .stored_attrs
                        .iter()
                        .any(|(p, ..)| *p == obj.as_ptr() as usize)
                {
                    return graph_break("the __dict__ of an object whose attributes the translation changed");
                }
                if name != "__dict__" && self.dict_changed(&obj)? {
                    return graph_break(format!(
                        "attribute {name} of an object whose __dict__ the translation changed"
                    ));
                }
                if let Some((_, _, stored)) = self
                    .stored_attrs
                    .iter()
                    .rev()
                    .find(|(p, n, _)| *p == obj.as_ptr() as usize && n == name)
                {
                    return match stored {
                        Some(value) => Ok(*value),
                        // What remains (a class attribute, or an AttributeError) is not simulated.
                        None => unsupported(format!("reading {name} after deleting it")),
                    };
                }
                self.stale_layer_table(&obj, name)?;
                self.object_attr(owner, obj, source, name)
            }
            _ => unsupported(format!("attribute {name} of an internal value")),
        }
    }

    pub(super) fn object_attr(
        &mut self,
        owner: Vid,
        obj: Bound<'py, PyAny>,
        source: Option<SourceId>,
        name: &str,
    ) -> Res<Vid> {
        let attr_source = |vm: &mut Self, value: Bound<'py, PyAny>| match source {
            Some(s) => {
                let key = vm.interned_name(name).into_any();
                vm.value_of_source(Source::Attr(s, StrongRef::new(&key)), value)
            }
            None => vm.constant(value),
        };
        // Modules and classes: the object is pinned by identity, the attribute guarded on use.
        if obj.is_instance_of::<PyType>() && self.class_attr_changed(&obj, name)? {
            return graph_break(format!(
                "attribute {name} of a class whose base's {name} the translation set"
            ));
        }
        if obj.is_instance_of::<PyType>() || obj.is_instance(&self.ops.module_type)? {
            if let Some(s) = source {
                self.add_guard(s, Check::Id(Pin::new(&obj)));
            }
            if obj.is_instance_of::<PyType>() {
                if let Some(raw) = self.type_lookup(&obj, name)? {
                    if raw.is_instance(&self.ops.classmethod_type)? {
                        let function = self.constant(raw.getattr(pyo3::intern!(raw.py(), "__func__"))?);
                        return Ok(self.push_val(Val::Method {
                            function,
                            receiver: owner,
                        }));
                    }
                }
            }
            match self.namespace_read(&obj, name)? {
                NamespaceRead::Now => {}
                NamespaceRead::Getter(getter, arguments) => {
                    let getter = self.constant(getter);
                    let arguments = arguments.into_iter().map(|a| self.constant(a)).collect();
                    return self.call(getter, arguments, vec![]);
                }
                NamespaceRead::RunsPython(what) => {
                    return unsupported(format!("attribute {name} of {}: {what}", qualname(&obj)));
                }
            }
            let value = obj.getattr(self.interned_name(name))?;
            if obj.is_instance(&self.ops.module_type)? {
                self.read_outside_regions(&obj.getattr(pyo3::intern!(obj.py(), "__dict__"))?, name, &value)?;
            }
            if source.is_none() && name == "__dict__" && obj.is_instance_of::<PyType>() {
                // A class the translation holds (an item of a pinned class's `__mro__`): its
                // namespace read through it, held and pinned, so that its items are read and
                // guarded one by one (`class_namespace`), as a frame class's are.
                let held = self.intern(Source::Held(StrongRef::new(&obj)));
                self.add_guard(held, Check::Id(Pin::new(&obj)));
                return Ok(self.value_of_source(Source::Attr(held, self.name_ref(name)), value));
            }
            return Ok(attr_source(self, value));
        }
        let exception = obj.is_instance(&self.py.get_type::<pyo3::exceptions::PyBaseException>())?;
        if exception && source.is_none() && name == "__traceback__" {
            // The frames CPython's own raising gives it: the frame runs as it is (an inlined
            // callee: as its own frame, from a break). Chaining is simulated (see `raise`).
            let what = format!("{name} of an exception raised in the translation");
            return Err(if self.depth == 0 {
                Problem::Eager(what)
            } else {
                Problem::Break(what)
            });
        }
        // A frame tuple subclass's attributes are an instance's (a property reading its
        // items through their sources), not a value's pinned whole.
        let frame_tuple_subclass = source.is_some() && is_heap_instance(&obj)? && is_plain_tuple(&obj)?;
        if is_immutable(&obj) && !frame_tuple_subclass || (exception && source.is_none()) {
            // Immutable values (their attributes, bound methods included, follow from the
            // value the guard pins), and exceptions the translation made or caught.
            if let Some(s) = source {
                self.guard_value(s, &obj)?;
            }
            if exception && source.is_none() {
                // The generated code makes its own exception: a method is bound to that one
                // (the class's C method with it as first argument), not to this one.
                let ty = obj.get_type().into_any();
                if let Some(raw) = self.type_lookup(&ty, name)? {
                    if raw.is_instance(self.ops.c_method_types.as_any())? {
                        let function = self.constant(raw);
                        return Ok(self.push_val(Val::Method {
                            function,
                            receiver: owner,
                        }));
                    }
                }
                let value = obj.getattr(self.interned_name(name))?;
                if value
                    .getattr(pyo3::intern!(value.py(), "__self__"))
                    .is_ok_and(|bound_to| bound_to.is(&obj))
                {
                    return unsupported(format!("method {name} of an exception the translation made"));
                }
                return Ok(self.constant(value));
            }
            let value = obj.getattr(self.interned_name(name))?;
            return Ok(self.constant(value));
        }
        if self.backend.is_tensor(&obj) {
            return unsupported("a tensor attribute outside the graph");
        }
        if self.is_thread_local(&obj) {
            return self.thread_local_attr(owner, &obj, source, name);
        }
        if matches!(name, "name" | "value" | "_name_" | "_value_") && self.pin_enum_member(owner, &obj)? {
            // Fixed with the member's pinned state.
            return Ok(self.constant(obj.getattr(self.interned_name(name))?));
        }
        if obj.get_type().is(&self.ops.method_type) {
            if let Some(found) = self.bound_method_attr(owner, &obj, source, name)? {
                return Ok(found);
            }
        }
        if source.is_none() && name == "__dict__" && obj.is_instance(&self.ops.function_type)? {
            // A function the translation holds (a class's, a bound method's): its
            // `__dict__` read through it, held and pinned, so that its items are read and
            // guarded as a frame function's are (`functools.wraps` copies them).
            let held = self.intern(Source::Held(StrongRef::new(&obj)));
            self.add_guard(held, Check::Id(Pin::new(&obj)));
            let value = obj.getattr(self.interned_name(name))?;
            return Ok(self.value_of_source(Source::Attr(held, self.name_ref(name)), value));
        }
        self.instance_attr(owner, obj, source, name)
    }

    /// An attribute of a bound method as its C lookup (`method_getattro`) finds it: its
    /// `__func__` and `__self__`, and a name its type lacks (or `__doc__`, which its type
    /// reads from the function) read from its function (`functools.wraps` of a bound method
    /// copies `__module__`, `__name__`, `__dict__`, ...). None for another of its type's
    /// attributes.
    fn bound_method_attr(
        &mut self,
        owner: Vid,
        method: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        name: &str,
    ) -> Res<Option<Vid>> {
        let forwarded = name == "__doc__" || self.type_lookup(&self.ops.method_type, name)?.is_none();
        if !forwarded && !matches!(name, "__func__" | "__self__") {
            return Ok(None);
        }
        self.guard_type(owner);
        let part = if forwarded { "__func__" } else { name };
        let value = method.getattr(self.interned_name(part))?;
        let part = match source {
            Some(s) => self.value_of_source(Source::Attr(s, self.name_ref(part)), value),
            None => self.constant(value),
        };
        if forwarded {
            return self.load_attr(part, name).map(Some);
        }
        Ok(Some(part))
    }

    /// An instance's attribute, looked up as `object.__getattribute__` would, without
    /// running anything but properties (inlined) and a Python `__getattr__` where the
    /// lookup fails.
    fn instance_attr(
        &mut self,
        owner: Vid,
        obj: Bound<'py, PyAny>,
        source: Option<SourceId>,
        name: &str,
    ) -> Res<Vid> {
        let ty = obj.get_type().into_any();
        if self.class_attr_changed(&ty, name)? {
            return graph_break(format!(
                "attribute {name} of an object whose class's {name} the translation set"
            ));
        }
        let reads_through_getattr = self.backend.is_layer(&obj);
        let getattr_hook = self.lookup_hook(&obj, &ty, name)?;
        self.guard_type(owner);
        // With a `__getattr__`, the object's own attributes are read (now, by the guards and
        // by the generated code) as `object.__getattribute__` reads them: never through it.
        let own = getattr_hook.is_some();
        let read = |obj: &Bound<'py, PyAny>| -> PyResult<Bound<'py, PyAny>> {
            if own {
                builtin(obj.py(), "object")?
                    .getattr("__getattribute__")?
                    .call1((obj, name))
            } else {
                obj.getattr(name)
            }
        };
        let attr_source = |vm: &mut Self, value: Bound<'py, PyAny>| match source {
            Some(s) => {
                let key = StrongRef::new(&vm.interned_name(name).into_any());
                vm.value_of_source(
                    if own {
                        Source::OwnAttr(s, key)
                    } else {
                        Source::Attr(s, key)
                    },
                    value,
                )
            }
            None => vm.constant(value),
        };
        let class_attr = self.type_lookup(&ty, name)?;
        if let (Some(_), Some(descriptor)) = (&getattr_hook, &class_attr) {
            let plain = self.is_slot(Some(descriptor))?
                || descriptor.is_instance(&self.ops.function_type)?
                || descriptor.is_instance(&self.ops.staticmethod_type)?
                || descriptor.is_instance(&self.ops.classmethod_type)?
                || descriptor.is_instance(self.ops.c_method_types.as_any())?
                || !has_attr(descriptor.get_type().as_any(), "__get__")?
                // An instance's `__dict__` (made where it is absent): never AttributeError.
                || name == "__dict__" && descriptor.is_instance(&self.ops.getset_descriptor_type)?;
            if !plain {
                // A property or descriptor raising AttributeError hands over to `__getattr__`.
                return unsupported(format!(
                    "attribute {name} of {} (a descriptor beside its __getattr__)",
                    ty.getattr(pyo3::intern!(ty.py(), "__qualname__"))?
                ));
            }
        }
        if let Some(descriptor) = &class_attr {
            if descriptor.is_instance(&self.ops.property_type)? {
                let getter = descriptor.getattr(pyo3::intern!(descriptor.py(), "fget"))?;
                let function = self.constant(getter);
                return self.call(function, vec![owner], vec![]);
            }
            let descriptor_type = descriptor.get_type();
            if has_attr(&descriptor_type, "__set__")? && has_attr(&descriptor_type, "__get__")? {
                if let Some(value) = self.python_descriptor_get(descriptor, owner, &ty, name)? {
                    return Ok(value);
                }
                // Slots and other data descriptors written in C: read now, guarded by source.
                let is_slot = self.is_slot(Some(descriptor))?;
                let value = match read(&obj) {
                    Ok(value) => value,
                    Err(error) if is_slot && error.is_instance_of::<PyAttributeError>(self.py) => {
                        // A slot never stored: on a later call the object may have it.
                        if let Some(s) = source {
                            let key = self.name_ref(name);
                            let attr = self.intern(if own {
                                Source::OwnAttr(s, key)
                            } else {
                                Source::Attr(s, key)
                            });
                            self.add_guard(attr, Check::Absent);
                        }
                        if let Some(hook) = getattr_hook {
                            return self.call_getattr_hook(hook, owner, name);
                        }
                        return Err(Problem::Python(error));
                    }
                    Err(error) => {
                        // Another C getter raised (an empty cell's `cell_contents`): what it
                        // raises depends on the object's state, read as it is.
                        return graph_break(format!(
                            "attribute {name} of a {} raised {} (its C getter runs as it is)",
                            qualname(&ty),
                            qualname(&error.get_type(self.py).into_any())
                        ));
                    }
                };
                let value = attr_source(self, value);
                if is_slot {
                    // Present (read where the generated code starts), as an item of `__dict__`.
                    if let Val::Obj { source: Some(s), .. } = self.val(value) {
                        let s = *s;
                        self.add_guard(s, Check::Present);
                    }
                }
                return Ok(value);
            }
        }
        let instance_dict = obj.getattr(pyo3::intern!(obj.py(), "__dict__")).ok();
        if let Some(dict) = &instance_dict {
            if let Ok(value) = dict.get_item(self.interned_name(name)) {
                // Present (read where the generated code starts): on a later call the
                // object may lack it, and the original raises AttributeError where it reads it.
                let value = attr_source(self, value);
                if let Val::Obj { source: Some(s), .. } = self.val(value) {
                    let s = *s;
                    self.add_guard(s, Check::Present);
                }
                return Ok(value);
            }
            // Absent (its type guarded): on a later call the object may hold it, over the
            // class's method or value (simplejson's `self.default = default`), or instead of
            // its `__getattr__`.
            if let Some(s) = source {
                let dict = self.intern(Source::Attr(s, self.name_ref("__dict__")));
                let entry = self.intern(Source::Item(dict, self.name_ref(name)));
                self.add_guard(entry, Check::Absent);
            }
        }
        if let Some(raw) = &class_attr {
            if let Some(bound) = self.bind_class_function(raw, owner, &ty, None)? {
                return Ok(bound);
            }
        }
        match class_attr {
            Some(raw) if raw.is_instance(self.ops.c_method_types.as_any())? => {
                // A method of a builtin base, bound to this object (not to the one seen
                // now: the object itself is guarded on its type only).
                let function = self.constant(raw);
                Ok(self.push_val(Val::Method {
                    function,
                    receiver: owner,
                }))
            }
            Some(raw) if has_attr(raw.get_type().as_any(), "__get__")? => {
                if let Some(value) = self.python_descriptor_get(&raw, owner, &ty, name)? {
                    return Ok(value);
                }
                // Another non-data descriptor written in C: what it gives depends on the
                // object.
                if let Some(s) = source {
                    self.add_guard(s, Check::Id(Pin::new(&obj)));
                }
                let value = obj.getattr(self.interned_name(name))?;
                Ok(self.constant(value))
            }
            Some(_) => {
                let value = read(&obj)?;
                Ok(attr_source(self, value))
            }
            // A layer's parameter or sublayer, read through its `__getattr__` (as the guard
            // reads it again).
            None if reads_through_getattr => {
                let value = obj.getattr(self.interned_name(name))?;
                Ok(attr_source(self, value))
            }
            None => {
                if let Some(hook) = getattr_hook {
                    return self.call_getattr_hook(hook, owner, name);
                }
                Err(Problem::Python(pyo3::exceptions::PyAttributeError::new_err(
                    format!(
                        "'{}' object has no attribute '{name}'",
                        type_name_in_messages(&ty)?
                    ),
                )))
            }
        }
    }

    /// How an instance's attributes are looked up: generically (object's lookup, or a C
    /// type's that is the same), with its class's `__getattr__` where that is a Python
    /// function (returned); anything else (a custom `__getattribute__`) breaks.
    fn lookup_hook(
        &self,
        obj: &Bound<'py, PyAny>,
        ty: &Bound<'py, PyAny>,
        name: &str,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        let getattribute = ty.getattr(pyo3::intern!(ty.py(), "__getattribute__"))?;
        let reads_through_getattr = self.backend.is_layer(obj);
        let generic_lookup = getattribute.is(&self.ops.object_getattribute)
            || has_generic_getattro(&obj.get_type())
            || self.is_generic_slot_wrapper(&getattribute)?;
        // A `__getattr__` written in Python runs where the generic lookup fails (ParseResults'
        // names); the lookup must then be one that fails only by raising AttributeError.
        let getattr_hook = match self.type_lookup(ty, "__getattr__")? {
            Some(hook)
                if !reads_through_getattr
                    && generic_lookup
                    && hook.is_instance(&self.ops.function_type)? =>
            {
                Some(hook)
            }
            _ => None,
        };
        if !generic_lookup
            || getattr_hook.is_none()
                && self.type_lookup(ty, "__getattr__")?.is_some()
                && !reads_through_getattr
        {
            // `set`, exceptions and other C types define their own slot wrapper (often of
            // the generic lookup): say so rather than blame a Python override.
            let why = if getattribute.is_instance(&self.ops.object_getattribute.get_type())?
                && self.type_lookup(ty, "__getattr__")?.is_none()
            {
                let owner = getattribute
                    .getattr(pyo3::intern!(getattribute.py(), "__objclass__"))?
                    .getattr("__qualname__")?;
                format!("{owner}'s __getattribute__, written in C, is not simulated")
            } else {
                "custom __getattribute__ or __getattr__".to_owned()
            };
            return unsupported(format!(
                "attribute {name} of {} ({why})",
                ty.getattr(pyo3::intern!(ty.py(), "__qualname__"))?
            ));
        }
        Ok(getattr_hook)
    }

    /// Whether `getattribute` is a C type's own `__getattribute__` slot wrapper where that
    /// type looks attributes up as `object` does (`dict`'s): a Python subclass defining
    /// `__getattr__` (sklearn's `Bunch`) has the hook as its `tp_getattro`, which calls the
    /// wrapper, that is the generic lookup, before `__getattr__`.
    fn is_generic_slot_wrapper(&self, getattribute: &Bound<'py, PyAny>) -> PyResult<bool> {
        let wrapper_type = self.ops.c_method_types.get_item(1)?;
        if !getattribute.get_type().is(&wrapper_type) {
            return Ok(false);
        }
        let owner = getattribute.getattr(pyo3::intern!(getattribute.py(), "__objclass__"))?;
        Ok(owner.cast::<PyType>().is_ok_and(has_generic_getattro))
    }

    /// How `getattr(obj, name)` for a class or a module would run: the translation reads
    /// it now only where that runs no Python code (a program's state can differ from the
    /// translation's then, and the code's side effects would happen once, while translating).
    fn namespace_read(&self, obj: &Bound<'py, PyAny>, name: &str) -> PyResult<NamespaceRead<'py>> {
        let meta = obj.get_type().into_any();
        let own_getattribute = if obj.is_instance_of::<PyType>() {
            builtin(self.py, "type")?
        } else {
            self.ops.module_type.clone()
        };
        let own_getattribute =
            own_getattribute.getattr(pyo3::intern!(own_getattribute.py(), "__getattribute__"))?;
        let getattribute = self.type_lookup(&meta, "__getattribute__")?;
        if !getattribute.is_some_and(|g| g.is(&own_getattribute)) {
            return Ok(NamespaceRead::RunsPython(
                "its type's own __getattribute__".into(),
            ));
        }
        let meta_attr = self.type_lookup(&meta, name)?;
        if let Some(descriptor) = &meta_attr {
            let descriptor_type = descriptor.get_type();
            let data = has_attr(&descriptor_type, "__set__")? || has_attr(&descriptor_type, "__delete__")?;
            if data && descriptor.is_instance(&self.ops.property_type)? {
                // A metaclass's property (an enum class's `__members__`): its getter inlined.
                return Ok(NamespaceRead::Getter(
                    descriptor.getattr(pyo3::intern!(descriptor.py(), "fget"))?,
                    vec![obj.clone()],
                ));
            }
            if data && is_heap_instance(descriptor)? {
                return Ok(NamespaceRead::RunsPython(format!(
                    "a {} of its type",
                    qualname(&descriptor_type.into_any())
                )));
            }
            if data && name == "__doc__" {
                // `type.__doc__` binds the class's own `__doc__` descriptor (3.15's dataclasses
                // make the docstring on first read).
                if let Ok(doc) = obj
                    .getattr(pyo3::intern!(obj.py(), "__dict__"))?
                    .get_item("__doc__")
                {
                    if let Some(get) = self.python_get(&doc)? {
                        return Ok(NamespaceRead::Getter(
                            get,
                            vec![doc, self.py.None().into_bound(self.py), obj.clone()],
                        ));
                    }
                }
            }
            if data && name == "__annotations__" {
                // Deferred annotations (3.14+): the first read calls the class's annotate function.
                let dict = obj.getattr(pyo3::intern!(obj.py(), "__dict__"))?;
                let annotate = ["__annotate_func__", "__annotate__"]
                    .iter()
                    .any(|key| dict.get_item(key).is_ok_and(|f| !f.is_none()));
                if annotate
                    && !dict.contains("__annotations__")?
                    && !dict.contains("__annotations_cache__")?
                {
                    return Ok(NamespaceRead::RunsPython(
                        "its __annotate__ runs on first read".into(),
                    ));
                }
            }
            if data {
                return Ok(NamespaceRead::Now);
            }
        }
        if obj.is_instance_of::<PyType>() {
            if let Some(raw) = self.type_lookup(obj, name)? {
                return Ok(match self.python_get(&raw)? {
                    Some(get) => {
                        NamespaceRead::Getter(get, vec![raw, self.py.None().into_bound(self.py), obj.clone()])
                    }
                    None => NamespaceRead::Now,
                });
            }
        } else if let Ok(value) = obj
            .getattr(pyo3::intern!(obj.py(), "__dict__"))?
            .get_item(self.interned_name(name))
        {
            if is_lazy_import(&value) {
                return Ok(NamespaceRead::RunsPython("a lazy import not used yet".into()));
            }
            return Ok(NamespaceRead::Now);
        } else if obj
            .getattr(pyo3::intern!(obj.py(), "__dict__"))?
            .contains("__getattr__")?
        {
            return Ok(NamespaceRead::RunsPython("the module's __getattr__".into()));
        }
        if let Some(descriptor) = &meta_attr {
            if self.python_get(descriptor)?.is_some() {
                return Ok(NamespaceRead::RunsPython(format!(
                    "a {} of its type",
                    qualname(&descriptor.get_type().into_any())
                )));
            }
        } else if self.type_lookup(&meta, "__getattr__")?.is_some() {
            return Ok(NamespaceRead::RunsPython("its type's __getattr__".into()));
        }
        Ok(NamespaceRead::Now)
    }

    /// A descriptor's `__get__`, where its class's is a Python function.
    fn python_get(&self, descriptor: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.type_lookup(&descriptor.get_type().into_any(), "__get__")? {
            Some(get) if get.is_instance(&self.ops.function_type)? => Ok(Some(get)),
            _ => Ok(None),
        }
    }

    /// `descriptor.__get__(owner, ty)` for a descriptor whose class is written in Python:
    /// its `__get__` inlined where it is a Python function (it may read state, or have
    /// effects, on every call), a break where it is anything else (a `Mock`); None for a
    /// descriptor of a C type, which the caller reads as such.
    pub(super) fn python_descriptor_get(
        &mut self,
        descriptor: &Bound<'py, PyAny>,
        owner: Vid,
        ty: &Bound<'py, PyAny>,
        name: &str,
    ) -> Res<Option<Vid>> {
        if !is_heap_instance(descriptor)? || descriptor.get_type().is(&self.ops.tuple_getter_type) {
            return Ok(None);
        }
        let descriptor_type = descriptor.get_type().into_any();
        match self.python_get(descriptor)? {
            Some(get) => {
                let get = self.constant(get);
                let arguments = vec![
                    self.constant(descriptor.clone()),
                    owner,
                    self.constant(ty.clone()),
                ];
                Ok(Some(self.call(get, arguments, vec![])?))
            }
            None => unsupported(format!(
                "attribute {name}: a {} descriptor, whose __get__ is not a Python function",
                qualname(&descriptor_type)
            )),
        }
    }

    /// `type(owner).<name>` bound to `owner`, for `with` and the like.
    pub(super) fn special_method(&mut self, owner: Vid, name: &str) -> Res<Vid> {
        let ty = self.type_of(owner)?;
        let Some(raw) = self.type_lookup(&ty, name)? else {
            return Err(Problem::Python(PyTypeError::new_err(format!(
                "'{}' object does not support the context manager protocol",
                ty.getattr(pyo3::intern!(ty.py(), "__name__"))?
            ))));
        };
        if raw.is_instance(&self.ops.function_type)? {
            let function = self.constant(raw);
            return Ok(self.push_val(Val::Method {
                function,
                receiver: owner,
            }));
        }
        if let Some(method) = self.made_lock_method(owner, name)? {
            return Ok(method);
        }
        graph_break(format!(
            "unsupported call: {name} of {} written in C",
            ty.getattr(pyo3::intern!(ty.py(), "__qualname__"))?
        ))
    }

    /// A function found in a class's namespace, bound as attribute lookup binds it: a
    /// function to `instance`, a classmethod's to the class (`class_value`, or `class` as a
    /// constant), a staticmethod's as it is. None for anything else.
    pub(super) fn bind_class_function(
        &mut self,
        raw: &Bound<'py, PyAny>,
        instance: Vid,
        class: &Bound<'py, PyAny>,
        class_value: Option<Vid>,
    ) -> Res<Option<Vid>> {
        if raw.is_instance(&self.ops.function_type)? {
            let function = self.constant(raw.clone());
            return Ok(Some(self.push_val(Val::Method {
                function,
                receiver: instance,
            })));
        }
        if raw.is_instance(&self.ops.staticmethod_type)? {
            return Ok(Some(
                self.constant(raw.getattr(pyo3::intern!(raw.py(), "__func__"))?),
            ));
        }
        if raw.is_instance(&self.ops.classmethod_type)? {
            let function = self.constant(raw.getattr(pyo3::intern!(raw.py(), "__func__"))?);
            let receiver = class_value.unwrap_or_else(|| self.constant(class.clone()));
            return Ok(Some(self.push_val(Val::Method { function, receiver })));
        }
        Ok(None)
    }

    /// `super(class, receiver)`, checked as CPython checks it (its TypeErrors).
    pub(super) fn make_super(&mut self, class: Bound<'py, PyAny>, receiver: Vid) -> Res<Vid> {
        if !class.is_instance_of::<PyType>() {
            return Err(Problem::Python(PyTypeError::new_err(format!(
                "super() argument 1 must be a type, not {}",
                class.get_type().name()?
            ))));
        }
        let instance_type = self.type_of(receiver)?;
        let subclass = |ty: &Bound<'py, PyAny>| -> PyResult<bool> {
            ty.cast::<PyType>().map_or(Ok(false), |t| t.is_subclass(&class))
        };
        if !self.super_of_a_class(&class, receiver)? && !subclass(&instance_type)? {
            return Err(Problem::Python(PyTypeError::new_err(
                "super(type, obj): obj must be an instance or subtype of type",
            )));
        }
        Ok(self.push_val(Val::Super { class, receiver }))
    }

    /// `object.__init__` of an instance of `class`: nothing, or CPython's error for
    /// arguments (`object_init`), which names the class where it defines neither
    /// `__init__` nor `__new__`.
    pub(super) fn object_init(&mut self, class: &Bound<'py, PyAny>, arguments: bool) -> Res<Vid> {
        let object = builtin(self.py, "object")?;
        let own = |name: &str| -> PyResult<bool> { Ok(!class.getattr(name)?.is(&object.getattr(name)?)) };
        if arguments && own("__init__")? {
            return Err(Problem::Python(PyTypeError::new_err(
                "object.__init__() takes exactly one argument (the instance to initialize)",
            )));
        }
        if arguments && !own("__new__")? {
            return Err(Problem::Python(PyTypeError::new_err(format!(
                "{}.__init__() takes exactly one argument (the instance to initialize)",
                class.getattr(pyo3::intern!(class.py(), "__name__"))?
            ))));
        }
        Ok(self.constant(self.ops.none.clone()))
    }

    /// Whether `super(class, receiver)` is of a class (a classmethod's, `__new__`'s):
    /// `receiver` a subclass of `class`, whose functions it then gives unbound.
    pub(super) fn super_of_a_class(&mut self, class: &Bound<'py, PyAny>, receiver: Vid) -> Res<bool> {
        let is_type = matches!(self.val(receiver), Val::Obj { obj, .. } if obj.is_instance_of::<PyType>());
        if !is_type {
            return Ok(false);
        }
        let receiver = self.concrete(receiver)?;
        Ok(receiver
            .cast::<PyType>()
            .map_or(Ok(false), |t| t.is_subclass(class))?)
    }

    pub(super) fn super_attr(&mut self, class: Bound<'py, PyAny>, receiver: Vid, name: &str) -> Res<Vid> {
        if name == "__class__" {
            // The super object's own class, not its receiver's.
            return Ok(self.constant(self.builtin("super")?));
        }
        let receiver_is_class = self.super_of_a_class(&class, receiver)?;
        let ty = if receiver_is_class {
            self.concrete(receiver)?
        } else {
            self.type_of(receiver)?
        };
        if self.class_attr_changed(&ty, name)? {
            return graph_break(format!(
                "super().{name} where the translation set a class's {name}"
            ));
        }
        let mro = ty
            .getattr(pyo3::intern!(ty.py(), "__mro__"))?
            .cast_into::<PyTuple>()?;
        let start = mro.iter().position(|c| c.is(&class)).map_or(mro.len(), |p| p + 1);
        for base in mro.iter().skip(start) {
            if let Ok(raw) = base
                .getattr(pyo3::intern!(base.py(), "__dict__"))?
                .get_item(self.interned_name(name))
            {
                if receiver_is_class && raw.is_instance(&self.ops.function_type)? {
                    // Of the class itself, a function is given unbound (`super().__new__`).
                    return Ok(self.constant(raw));
                }
                let class_value = receiver_is_class.then_some(receiver);
                if let Some(bound) = self.bind_class_function(&raw, receiver, &ty, class_value)? {
                    return Ok(bound);
                }
                if raw.is_instance(&self.ops.property_type)? && !receiver_is_class {
                    let function = self.constant(raw.getattr(pyo3::intern!(raw.py(), "fget"))?);
                    return self.call(function, vec![receiver], vec![]);
                }
                if !receiver_is_class
                    && raw.is_instance(self.ops.c_method_types.as_any())?
                    && raw.getattr(pyo3::intern!(raw.py(), "__objclass__"))?.is(&base)
                {
                    // A builtin base's own method bound to the receiver, as its `__get__`
                    // binds it: `object.__setattr__` (a frozen dataclass's), `dict.__getitem__`
                    // (scikit-learn's Bunch); the call is then modeled or a break.
                    let function = self.constant(raw);
                    return Ok(self.push_val(Val::Method { function, receiver }));
                }
                if receiver_is_class && raw.is(&self.ops.object_new) {
                    // `super().__new__(cls)` reaching object's: called as `object.__new__`.
                    return Ok(self.constant(raw));
                }
                if is_immutable(&raw) && !has_attr(raw.get_type().as_any(), "__get__")? {
                    // A plain class attribute (`a = 1`), fixed as the class's methods are.
                    return Ok(self.constant(raw));
                }
                return unsupported(format!("super().{name} of a builtin base"));
            }
        }
        Err(Problem::Python(pyo3::exceptions::PyAttributeError::new_err(
            format!("'super' object has no attribute '{name}'"),
        )))
    }

    /// An attribute of an object the translation made.
    pub(super) fn made_object_attr(
        &mut self,
        owner: Vid,
        class: Bound<'py, PyAny>,
        attrs: &[(String, Vid)],
        name: &str,
    ) -> Res<Vid> {
        if !class
            .getattr(pyo3::intern!(class.py(), "__getattribute__"))?
            .is(&self.ops.object_getattribute)
        {
            return unsupported(format!(
                "attribute {name} of an object the translation made (custom __getattribute__)"
            ));
        }
        if self.class_attr_changed(&class, name)? {
            return graph_break(format!(
                "attribute {name} of an object whose class's {name} the translation set"
            ));
        }
        let class_attr = self.type_lookup(&class, name)?;
        if name == "__class__" {
            let object_class = builtin(self.py, "object")?
                .getattr(pyo3::intern!(self.py, "__dict__"))?
                .get_item(self.interned_name(name))?;
            if class_attr.as_ref().is_some_and(|found| found.is(&object_class)) {
                // Its class is fixed when the translation makes it (unless the class
                // defines a `__class__` of its own).
                return Ok(self.constant(class));
            }
        }
        if let Some(descriptor) = &class_attr {
            if descriptor.is_instance(&self.ops.property_type)? {
                let getter = self.constant(descriptor.getattr(pyo3::intern!(descriptor.py(), "fget"))?);
                return self.call(getter, vec![owner], vec![]);
            }
        }
        if name == "__dict__" && self.is_plain_instance_dict(&class, class_attr.as_ref())? {
            return Ok(self.push_val(Val::AttrDict(owner)));
        }
        if let Some((_, v)) = attrs.iter().rev().find(|(n, _)| n == name) {
            return Ok(*v);
        }
        if let Some(raw) = &class_attr {
            if let Some(bound) = self.bind_class_function(raw, owner, &class, None)? {
                return Ok(bound);
            }
        }
        let unset_slot = self.is_slot(class_attr.as_ref())?;
        if let Some(raw) = &class_attr {
            if raw.is_instance(self.ops.c_method_types.as_any())? {
                // A builtin base's method (`object.__init__`): bound to the object.
                let function = self.constant(raw.clone());
                return Ok(self.push_val(Val::Method {
                    function,
                    receiver: owner,
                }));
            }
            if !unset_slot && has_attr(raw.get_type().as_any(), "__get__")? && !raw.is_instance_of::<PyType>()
            {
                return unsupported(format!(
                    "class attribute {name} of an object the translation made: a descriptor not simulated"
                ));
            }
        }
        match class_attr {
            Some(raw) if !unset_slot && (is_immutable(&raw) || raw.is_callable()) => Ok(self.constant(raw)),
            Some(_) if !unset_slot => unsupported(format!(
                "mutable class attribute {name} of an object the translation made"
            )),
            _ => match self.type_lookup(&class, "__getattr__")? {
                // Where the lookup fails, CPython calls the class's `__getattr__`.
                Some(hook) if hook.is_instance(&self.ops.function_type)? => self.call_getattr_hook(hook, owner, name),
                Some(_) => unsupported(format!(
                    "attribute {name} of an object the translation made (its __getattr__ is not a Python function)"
                )),
                None => Err(Problem::Python(PyAttributeError::new_err(format!(
                    "'{}' object has no attribute '{name}'",
                    type_name_in_messages(&class)?
                )))),
            },
        }
    }

    /// The class's `__getattr__` (a Python function) called where the attribute's lookup
    /// failed, as CPython calls it.
    fn call_getattr_hook(&mut self, hook: Bound<'py, PyAny>, owner: Vid, name: &str) -> Res<Vid> {
        let function = self.constant(hook);
        let name_value = self.constant(self.interned_name(name).into_any());
        match self.call(function, vec![owner, name_value], vec![]) {
            // CPython gives the AttributeError it raises the attribute's name and the object
            // (what `Did you mean` reads): the original raises it.
            Err(Problem::Python(err)) if err.is_instance_of::<PyAttributeError>(self.py) => {
                unsupported(format!(
                    "AttributeError from the __getattr__ of a {} object ({name})",
                    qualname(&self.type_of(owner)?)
                ))
            }
            other => other,
        }
    }

    /// A class's own namespace, `cls.__dict__` of a class pinned by identity (a mappingproxy
    /// over the class's dict, which `type` gives), with its source: its items are read as a
    /// frame dict's are (attrs asks `name in cls.__dict__`).
    pub(super) fn class_namespace(&self, vid: Vid) -> PyResult<Option<(SourceId, Bound<'py, PyAny>)>> {
        let Val::Obj { obj, source: Some(s) } = self.val(vid) else {
            return Ok(None);
        };
        let Source::Attr(parent, name) = &self.sources.sources[*s] else {
            return Ok(None);
        };
        if name.bind(self.py).ne("__dict__")? {
            return Ok(None);
        }
        let class = self.identity_pin(*parent).and_then(|pin| pin.object(self.py));
        let Some(class) = class.filter(|c| c.is_instance_of::<PyType>()) else {
            return Ok(None);
        };
        let types_namespace = builtin(self.py, "type")?
            .getattr("__dict__")?
            .get_item("__dict__")?;
        let namespace = self.type_lookup(&class.get_type().into_any(), "__dict__")?;
        Ok(namespace
            .is_some_and(|n| n.is(&types_namespace))
            .then(|| (*s, obj.clone())))
    }

    /// The entry `key` of a class's own namespace (`class_namespace`), read through its
    /// source and guarded `Present`, or None where it is absent (guarded `Absent`). Not
    /// modeled (outer None) for a key other than a str.
    pub(super) fn class_namespace_entry(
        &mut self,
        (namespace, proxy): (SourceId, Bound<'py, PyAny>),
        key: Vid,
    ) -> Res<Option<Option<Vid>>> {
        let key = self.concrete(key)?;
        if !key.is_exact_instance_of::<PyString>() {
            return Ok(None);
        }
        let entry = Source::Item(namespace, StrongRef::new(&key));
        let Ok(value) = proxy.get_item(&key) else {
            let entry = self.intern(entry);
            self.add_guard(entry, Check::Absent);
            return Ok(Some(None));
        };
        let value = self.value_of_source(entry, value);
        if let Val::Obj { source: Some(s), .. } = self.val(value) {
            let s = *s;
            self.add_guard(s, Check::Present);
        }
        Ok(Some(Some(value)))
    }

    /// Whether a class attribute is a `__slots__` entry (a member descriptor), where an
    /// object the translation made keeps that attribute like any other.
    pub(super) fn is_slot(&self, class_attr: Option<&Bound<'py, PyAny>>) -> PyResult<bool> {
        let Some(attr) = class_attr else {
            return Ok(false);
        };
        attr.is_instance(&self.ops.member_descriptor_type)
    }
}

/// How a class's or a module's attribute is read: now, by inlining its getter, or not
/// while translating.
enum NamespaceRead<'py> {
    Now,
    /// A Python getter and its arguments: a metaclass's property, a descriptor's `__get__`.
    Getter(Bound<'py, PyAny>, Vec<Bound<'py, PyAny>>),
    RunsPython(String),
}
