//! Objects constructed while translating: classes instantiated, backend layers, constructor arguments.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// `__init__` must return None: CPython's TypeError, with the type it returned.
    fn check_init_returned_none(&mut self, returned: Vid) -> Res<()> {
        let none = self.none();
        if self.identical(returned, none)? {
            return Ok(());
        }
        let type_name = self.concrete(returned)?.get_type().name()?;
        Err(Problem::Python(PyTypeError::new_err(format!(
            "__init__() should return None, not '{type_name}'"
        ))))
    }

    /// A layer's attributes that decide what its call computes (`training`), guarded by value.
    pub(super) fn guard_layer(&mut self, obj: &Bound<'py, PyAny>, source: Option<SourceId>) -> Res<()> {
        let Some(s) = source else {
            return Ok(());
        };
        for name in self.backend.layer_attributes(obj).to_vec() {
            let value = obj.getattr(self.interned_name(&name))?;
            let attribute = self.intern(Source::Attr(s, self.name_ref(&name)));
            self.guard_value(attribute, &value)?;
        }
        Ok(())
    }

    /// Guards the attribute `name` of `source` (`obj`'s, read now) by identity.
    pub(super) fn pin_attribute(&mut self, source: SourceId, obj: &Bound<'py, PyAny>, name: &str) -> Res<()> {
        let key = self.interned_name(name);
        let attribute = self.intern(Source::Attr(source, StrongRef::new(key.as_any())));
        let value = obj.getattr(key)?;
        self.add_guard(attribute, Check::Id(Pin::new(&value)));
        Ok(())
    }

    /// A C function bound to a class (`MyLayer.apply`) is made anew at each attribute read:
    /// pinned by the class it is bound to and its name.
    pub(super) fn pin_class_bound_builtin(&mut self, source: SourceId, obj: &Bound<'py, PyAny>) -> Res<()> {
        self.add_guard(source, Check::Type(Pin::of_type(&obj.get_type().into_any())));
        self.pin_attribute(source, obj, "__self__")?;
        let name = self.intern(Source::Attr(source, self.name_ref("__name__")));
        self.add_guard(
            name,
            Check::Equals(StrongRef::new(&obj.getattr(pyo3::intern!(obj.py(), "__name__"))?)),
        );
        Ok(())
    }

    /// An argument of `construct` as it is now, where it is the same on every call passing
    /// the guards: a value (see `folded_argument`), a model layer pinned by identity (the
    /// object made holds it, as its container does), one made the same way, or a list or
    /// tuple the translation made of those. None for anything else.
    pub(super) fn constructor_argument(&mut self, vid: Vid) -> Res<Option<Bound<'py, PyAny>>> {
        match self.val(vid).clone() {
            Val::List(items) | Val::Tuple(items) => {
                let is_list = matches!(self.val(vid), Val::List(_));
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    match self.constructor_argument(item)? {
                        Some(value) => values.push(value),
                        None => return Ok(None),
                    }
                }
                Ok(Some(if is_list {
                    PyList::new(self.py, values)?.into_any()
                } else {
                    PyTuple::new(self.py, values)?.into_any()
                }))
            }
            Val::Obj { obj, source } if self.backend.is_layer(&obj) => {
                if let Some(s) = source {
                    self.add_guard(s, Check::Id(Pin::new(&obj)));
                }
                Ok(Some(obj))
            }
            Val::Constructed { obj, .. } => Ok(Some(obj)),
            _ => self.folded_argument(vid, ""),
        }
    }

    /// `cls(*args, **kwargs)` made now where the backend makes it (`Backend::construct`)
    /// from arguments the same on every call passing the guards.
    pub(super) fn construct(
        &mut self,
        cls: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        if !self.backend.constructs(cls)
            || args
                .iter()
                .chain(kwargs.iter().map(|(_, v)| v))
                .any(|a| self.contains_tensor(*a))
        {
            return Ok(None);
        }
        let Ok((positional, kw)) = self.arguments_now(args, kwargs, Self::constructor_argument)? else {
            return Ok(None);
        };
        let Some(obj) = self.backend.construct(cls, &positional, &kw)? else {
            return Ok(None);
        };
        if let Some(s) = source {
            self.add_guard(s, Check::Id(Pin::new(cls)));
        }
        Ok(Some(self.constructed(obj, cls.clone(), args.to_vec(), kwargs)))
    }

    /// `obj`, which `maker(*args, **kwargs)` made while translating: a `Val::Constructed`
    /// the generated code makes again by the same call where it needs the object.
    pub(super) fn constructed(
        &mut self,
        obj: Bound<'py, PyAny>,
        maker: Bound<'py, PyAny>,
        args: Vec<Vid>,
        kwargs: &[(String, Vid)],
    ) -> Vid {
        let class = self.constant(maker);
        let args = self.push_val(Val::Tuple(args));
        let keywords = kwargs
            .iter()
            .map(|(k, v)| (self.constant(PyString::new(self.py, k).into_any()), *v))
            .collect();
        let kwargs = self.push_val(Val::Dict(keywords));
        self.push_val(Val::Constructed {
            obj,
            class,
            args,
            kwargs,
        })
    }

    /// `cls(*args, **kwargs)` where the class's metaclass defines `__call__` in Python (an
    /// `Enum` class looking a member up by value): that method inlined, `cls` first. The
    /// class is pinned by the caller (its metaclass with it).
    pub(super) fn call_through_metaclass(
        &mut self,
        cls: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let metaclass = cls.get_type().into_any();
        let Some(call) = self.type_lookup(&metaclass, "__call__")? else {
            return Ok(None);
        };
        if !call.is_instance_of::<pyo3::types::PyFunction>() {
            return Ok(None);
        }
        let function = self.constant(call);
        let mut all = vec![self.constant(cls.clone())];
        all.extend_from_slice(args);
        self.call(function, all, kwargs.to_vec()).map(Some)
    }

    /// `cls(*args, **kwargs)` for a class whose instances the VM can make: exceptions
    /// built by C code (made now, from known arguments), and Python classes with the
    /// default `__new__` and a `__dict__` (a symbolic object, its `__init__` inlined).
    pub(super) fn instantiate(
        &mut self,
        cls: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let base_exception = builtin(self.py, "BaseException")?;
        let type_type = builtin(self.py, "type")?;
        let object = builtin(self.py, "object")?;
        // A metaclass may make instances its own way; one that calls as `type` does (ABCMeta)
        // makes them as a class of `type` would.
        let metaclass = cls.get_type().into_any();
        let type_call = self.type_lookup(&type_type, "__call__")?;
        let metaclass_call = self.type_lookup(&metaclass, "__call__")?;
        let calls_as_type = matches!((&metaclass_call, &type_call), (Some(m), Some(t)) if m.is(t));
        if !metaclass.is(&type_type) && !calls_as_type {
            return Ok(None);
        }
        // A class with abstract methods left: `object.__new__` raises TypeError (the call
        // runs for real).
        const TPFLAGS_IS_ABSTRACT: u64 = 1 << 20;
        if cls
            .getattr(pyo3::intern!(cls.py(), "__flags__"))?
            .extract::<u64>()?
            & TPFLAGS_IS_ABSTRACT
            != 0
        {
            return Ok(None);
        }
        let pin = |vm: &mut Self| {
            if let Some(s) = source {
                vm.add_guard(s, Check::Id(Pin::new(cls)));
            }
        };
        if self.type_lookup(cls, "__del__")?.is_some() {
            // Made while translating, it would also die there, running its `__del__`.
            return Ok(None);
        }
        let init = self.type_lookup(cls, "__init__")?;
        // object's own, a Python function's, or another the VM does not run (a property, a
        // C type's, a callable object): then the class is called as it is.
        let object_init = object.getattr(pyo3::intern!(object.py(), "__init__"))?;
        let default_init = init.as_ref().is_some_and(|i| i.is(&object_init));
        let python_init = init.filter(|init| init.is_instance(&self.ops.function_type).unwrap_or(false));
        let python_new = self.type_lookup(cls, "__new__")?.filter(|new| {
            new.is_instance(&self.ops.staticmethod_type).unwrap_or(false)
                || new.is_instance(&self.ops.function_type).unwrap_or(false)
        });
        if cls
            .cast::<PyType>()
            .map_err(PyErr::from)?
            .is_subclass(&base_exception)?
        {
            // The generated code makes it again as `type(e)(*e.args)`: keyword arguments
            // (ImportError's name and path) would be lost.
            if python_init.is_some()
                || python_new.is_some()
                || !kwargs.is_empty()
                || args.iter().any(|a| self.contains_tensor(*a))
            {
                return Ok(None);
            }
            // The generated code makes it again from its arguments as constants: no object
            // from the frame but values (another would be the first call's, and would live
            // as long as the code).
            // A value from the frame, the caller's object (`e.args[0] is x`), only where
            // every equal value is that object (None, booleans, small ints).
            if !args.iter().chain(kwargs.iter().map(|(_, v)| v)).all(|a| {
                self.is_constant(*a)
                    && match self.val(*a) {
                        Val::Obj { obj, source: Some(_) } => is_one_object_per_value(obj),
                        _ => true,
                    }
            }) {
                return graph_break("an exception made with an object from the frame");
            }
            pin(self);
            let positional = args.iter().map(|a| self.concrete(*a)).collect::<Res<Vec<_>>>()?;
            let kw = PyDict::new(self.py);
            for (k, v) in kwargs {
                kw.set_item(k, self.concrete(*v)?)?;
            }
            let made = cls.call(PyTuple::new(self.py, positional)?, Some(&kw))?;
            return Ok(Some(self.constant(made)));
        }
        if let (Some(new), true) = (&python_new, default_init) {
            // Instances its Python `__new__` makes (a namedtuple's class), `object.__init__`
            // then doing nothing: the `__new__` inlined.
            pin(self);
            return self.call_python_new(new, cls, args, kwargs).map(Some);
        }
        if let (Some(new), Some(init)) = (&python_new, &python_init) {
            // `__new__` then, on an instance of the class it made (or handed back), that
            // instance's class's `__init__`, as `type.__call__` runs them (ParseResults).
            pin(self);
            let made = self.call_python_new(new, cls, args, kwargs)?;
            let made_type = self.type_of(made)?;
            if !made_type
                .cast::<PyType>()
                .map_err(PyErr::from)?
                .is_subclass(cls)?
            {
                return Ok(Some(made));
            }
            let init = if made_type.is(cls) {
                Some(init.clone())
            } else {
                self.type_lookup(&made_type, "__init__")?
            };
            match init {
                Some(init) if init.is_instance(&self.ops.function_type)? => {
                    if matches!(self.val(made), Val::Obj { .. }) {
                        self.guard_type(made);
                    }
                    let init = self.constant(init);
                    let mut all = vec![made];
                    all.extend_from_slice(args);
                    let returned = self.call(init, all, kwargs.to_vec())?;
                    self.check_init_returned_none(returned)?;
                }
                Some(init) if init.is(&object_init) => {}
                _ => {
                    return unsupported(format!(
                        "the __init__ of a {} made by {}.__new__",
                        qualname(&made_type),
                        qualname(cls)
                    ))
                }
            }
            return Ok(Some(made));
        }
        let is_python_class = cls
            .getattr(pyo3::intern!(self.py, "__module__"))
            .is_ok_and(|m| !m.eq(pyo3::intern!(self.py, "builtins")).unwrap_or(true));
        let has_dict = has_instance_dict(cls);
        let default_new = cls
            .getattr(pyo3::intern!(cls.py(), "__new__"))?
            .is(&object.getattr(pyo3::intern!(object.py(), "__new__"))?);
        // Without a __dict__, a Python class with the default __new__ keeps its
        // attributes in `__slots__` (see `is_slot`).
        let slotted = !has_dict && has_attr(cls, "__slots__")?;
        if !is_python_class
            || !(has_dict || slotted)
            || !default_new
            || python_init.is_none() && !default_init
        {
            return Ok(None);
        }
        pin(self);
        let made = self.push_val(Val::Object {
            class: cls.clone(),
            attrs: Vec::new(),
        });
        match python_init {
            Some(init) => {
                let init = self.constant(init);
                let mut all = vec![made];
                all.extend_from_slice(args);
                let returned = self.call(init, all, kwargs.to_vec())?;
                self.check_init_returned_none(returned)?;
            }
            None if !args.is_empty() || !kwargs.is_empty() => {
                return Err(Problem::Python(PyTypeError::new_err(format!(
                    "{}() takes no arguments",
                    qualname(cls)
                ))));
            }
            None => {}
        }
        Ok(Some(made))
    }

    /// `cls.__new__(cls, *args, **kwargs)` of a `__new__` written in Python (a function or
    /// a staticmethod's), inlined.
    fn call_python_new(
        &mut self,
        new: &Bound<'py, PyAny>,
        cls: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Vid> {
        let function = if new.is_instance(&self.ops.staticmethod_type)? {
            new.getattr(pyo3::intern!(new.py(), "__func__"))?
        } else {
            new.clone()
        };
        let function = self.constant(function);
        let mut all = vec![self.constant(cls.clone())];
        all.extend_from_slice(args);
        self.call(function, all, kwargs.to_vec())
    }

    /// `copy.copy(x)` of an instance from the frame whose class copies as `object` does (no
    /// `__copy__`, `object`'s `__reduce_ex__`, `__reduce__`, `__getstate__` and `__new__`,
    /// no `__setstate__`, `object`'s layout): a new object of its class holding the same
    /// values, as copyreg reconstructs it (its `__dict__`'s keys and its slots guarded).
    /// None for anything else (a real call).
    pub(super) fn copy_object(&mut self, args: &[Vid], kwargs: &[(String, Vid)]) -> Res<Option<Vid>> {
        let ([original], true) = (args, kwargs.is_empty()) else {
            return Ok(None);
        };
        let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(*original).clone()
        else {
            return Ok(None);
        };
        let class = obj.get_type().into_any();
        if !is_heap_type(&class) || self.backend.is_tensor(&obj) {
            return Ok(None);
        }
        let object = builtin(self.py, "object")?;
        let mut copies_as_object = self.type_lookup(&class, "__copy__")?.is_none()
            && self.type_lookup(&class, "__setstate__")?.is_none()
            && class
                .getattr(pyo3::intern!(class.py(), "__new__"))?
                .is(&object.getattr(pyo3::intern!(object.py(), "__new__"))?);
        for name in ["__reduce_ex__", "__reduce__", "__getstate__"] {
            let found = self.type_lookup(&class, name)?;
            let own = object.getattr(name).ok();
            copies_as_object &= match (found, own) {
                (Some(found), Some(own)) => found.is(&own),
                (None, _) => true,
                (Some(_), None) => false,
            };
        }
        let object_layout = solid_base(&class)?.is_some_and(|base| base.is(&object));
        let registered = import(self.py, "copyreg")?
            .getattr("dispatch_table")?
            .contains(&class)?;
        let changed = self.dict_changed(&obj)?
            || self
                .stored_attrs
                .iter()
                .any(|(p, ..)| *p == obj.as_ptr() as usize);
        if !copies_as_object || !object_layout || registered || changed {
            return Ok(None);
        }
        self.guard_type(*original);
        let mut attrs = Vec::new();
        if has_instance_dict(&class) {
            let dict = obj.getattr(pyo3::intern!(obj.py(), "__dict__"))?;
            let dict = dict.cast_exact::<PyDict>().map_err(PyErr::from)?;
            if dict.keys().iter().any(|k| !k.is_exact_instance_of::<PyString>()) {
                return Ok(None);
            }
            let dict_source = self.intern(Source::Attr(source, self.name_ref("__dict__")));
            let keys = PyTuple::new(self.py, dict.keys())?;
            self.add_guard(dict_source, Check::Keys(StrongRef::new(keys.as_any())));
            for (key, value) in dict.iter() {
                let name: String = key.extract()?;
                let value = self.value_of_source(Source::Item(dict_source, StrongRef::new(&key)), value);
                attrs.push((name, value));
            }
        }
        // Slots, set after the dict by `setattr` (a class's own `__setattr__` would run).
        let own_setattr = !class
            .getattr(pyo3::intern!(class.py(), "__setattr__"))?
            .is(&self.ops.object_setattr);
        for base in class.getattr(pyo3::intern!(class.py(), "__mro__"))?.try_iter()? {
            let base = base?;
            let Ok(declared) = base
                .getattr(pyo3::intern!(base.py(), "__dict__"))?
                .get_item("__slots__")
            else {
                continue;
            };
            let names: Vec<String> = match declared.extract::<String>() {
                Ok(one) => vec![one],
                Err(_) => declared
                    .try_iter()?
                    .map(|n| n?.extract())
                    .collect::<PyResult<_>>()?,
            };
            for name in names
                .into_iter()
                .filter(|n| n != "__dict__" && n != "__weakref__")
            {
                let mangled = match name.strip_prefix("__") {
                    Some(rest) if !rest.ends_with("__") => {
                        format!(
                            "_{}{name}",
                            base.getattr(pyo3::intern!(base.py(), "__name__"))?
                                .extract::<String>()?
                                .trim_start_matches('_')
                        )
                    }
                    _ => name,
                };
                let attr = self.intern(Source::Attr(source, self.name_ref(&mangled)));
                match obj.getattr(mangled.as_str()) {
                    Ok(value) if !own_setattr => {
                        self.add_guard(attr, Check::Present);
                        let value =
                            self.value_of_source(Source::Attr(source, self.name_ref(&mangled)), value);
                        attrs.push((mangled, value));
                    }
                    Ok(_) => return Ok(None),
                    Err(_) => self.add_guard(attr, Check::Absent),
                }
            }
        }
        Ok(Some(self.push_val(Val::Object { class, attrs })))
    }

    /// `object.__new__(cls)` (a Python `__new__`'s first step): a bare instance of a class
    /// the VM makes as `instantiate` does, attributes to come. Anything CPython would refuse
    /// or make otherwise (arguments beyond the class, a builtin base's layout) is called
    /// for real.
    pub(super) fn object_new(&mut self, args: &[Vid], kwargs: &[(String, Vid)]) -> Res<Vid> {
        let ([class], true) = (args, kwargs.is_empty()) else {
            return unsupported("object.__new__ with arguments beyond the class");
        };
        let Some(cls) = self.folded_argument(*class, "")? else {
            return unsupported("object.__new__ of a class that may differ on a later call");
        };
        let object = builtin(self.py, "object")?;
        const TPFLAGS_IS_ABSTRACT: u64 = 1 << 20;
        let makeable = cls.is_instance_of::<PyType>()
            && is_heap_type(&cls)
            && cls.getattr(pyo3::intern!(cls.py(), "__flags__"))?.extract::<u64>()? & TPFLAGS_IS_ABSTRACT == 0
            && self.type_lookup(&cls, "__del__")?.is_none()
            // Its instances laid out as `object`'s, with a `__dict__` or slots.
            && solid_base(&cls)?.is_some_and(|base| base.is(&object))
            && (has_instance_dict(&cls) || has_attr(&cls, "__slots__")?);
        if !makeable {
            return unsupported(format!("object.__new__ of a {} object", qualname(&cls)));
        }
        Ok(self.push_val(Val::Object {
            class: cls,
            attrs: Vec::new(),
        }))
    }

    /// `functools.partial(function, *args, **keywords)`: a partial of the translation. One
    /// of a partial the translation made is flattened into it, as CPython's constructor
    /// flattens; one of a real partial object, a non-callable function or a placeholder
    /// (3.14) is made for real.
    pub(super) fn make_partial(&mut self, args: Vec<Vid>, kwargs: Vec<(String, Vid)>) -> Res<Vid> {
        let Some((&function, rest)) = args.split_first() else {
            return unsupported("functools.partial() without a function");
        };
        let placeholder = import(self.py, "functools")?.getattr("Placeholder").ok();
        for arg in rest {
            if let (Some(placeholder), Val::Obj { obj, .. }) = (&placeholder, self.val(*arg)) {
                if obj.is(placeholder) {
                    return unsupported("functools.partial() with a placeholder");
                }
            }
        }
        let function = self.realize(function)?;
        let (function, mut all, keywords) = match self.val(function).clone() {
            Val::Partial {
                function,
                args,
                keywords,
            } => (function, args, keywords),
            Val::Function(_) | Val::Method { .. } => (function, Vec::new(), Vec::new()),
            Val::Obj { obj, .. } if obj.is_callable() && !obj.is_instance(&self.ops.partial_type)? => {
                (function, Vec::new(), Vec::new())
            }
            _ => return unsupported("functools.partial() of this function"),
        };
        all.extend_from_slice(rest);
        let keywords = super::calls::merged_keywords(keywords, kwargs);
        Ok(self.push_val(Val::Partial {
            function,
            args: all,
            keywords,
        }))
    }
}

impl<'py> Vm<'py, '_> {
    /// A `functools.partial` object (of that exact type, whose fields cannot be set) called:
    /// its function, with its arguments before the call's and the call's keywords over its
    /// own. From the frame, each field is read through its source (guarded as used).
    pub(super) fn call_partial_object(
        &mut self,
        callable: Vid,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<Vid> {
        let field = |vm: &mut Self, name: &str| -> Res<Vid> {
            let value = obj.getattr(name)?;
            Ok(match source {
                Some(s) => vm.value_of_source(Source::Attr(s, name_ref(vm.py, name)), value),
                None => vm.constant(value),
            })
        };
        self.guard_type(callable);
        let function = field(self, "func")?;
        let stored = field(self, "args")?;
        let mut all = self.items_of(stored)?;
        if let Ok(placeholder) = import(self.py, "functools")?.getattr("Placeholder") {
            // 3.14+: a placeholder takes a later argument's place. Each stored argument's
            // type guarded tells one apart on a later call too.
            let placeholder_type = placeholder.get_type().into_any();
            for arg in &all {
                self.guard_type(*arg);
                if self.type_of(*arg)?.is(&placeholder_type) {
                    return unsupported("a functools.partial with placeholders called");
                }
            }
        }
        all.extend(args);
        let stored_keywords = field(self, "keywords")?;
        let mut keywords = Vec::new();
        for (key, value) in self.dict_items(stored_keywords)? {
            let key = self.concrete(key)?;
            keywords.push((key.extract::<String>()?, value));
        }
        let keywords = super::calls::merged_keywords(keywords, kwargs);
        self.call(function, all, keywords)
    }
}

/// Whether every value equal to `obj` (of its type) is `obj` itself in CPython: None, the
/// booleans, the small ints CPython caches.
fn is_one_object_per_value(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_none()
        || obj.is_exact_instance_of::<pyo3::types::PyBool>()
        || obj.is_exact_instance_of::<pyo3::types::PyInt>()
            && obj.extract::<i64>().is_ok_and(|n| (-5..=256).contains(&n))
}
