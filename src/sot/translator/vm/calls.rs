//! Calls: who handles a callee (inlined, a builtin, a recorded operation, the backend), reduce, operator functions.

use super::*;
use crate::hookapi::pyobject::{function_attr, FunctionPart};
use crate::sot::translator::model::value::store_named;

impl<'py, 'b> Vm<'py, 'b> {
    pub(super) fn do_call(&mut self, frame: &mut Frame<'py>, op: Op, argc: usize, kw_names: bool) -> Res<()> {
        let names: Vec<String> = if kw_names {
            let names = Self::pop(frame)?;
            let names = self.concrete(names)?;
            names.extract()?
        } else {
            Vec::new()
        };
        let mut args = Self::pop_n(frame, argc)?;
        let slots = Self::pop_n(frame, self.callable_slots(op))?;
        let (callable, mut positional) = self.pop_callable(slots)?;
        if argc == 0 && positional.is_empty() {
            if let Val::Obj { obj, .. } = self.val(callable) {
                if obj.is(&self.builtin("super")?) {
                    // CPython's checks, in its order (`super_init_without_args`).
                    let fail = |message: String| Err(Problem::Python(PyRuntimeError::new_err(message)));
                    if frame.argcount == 0 {
                        return fail("super(): no arguments".to_owned());
                    }
                    let receiver = match self.val(frame.locals[0]) {
                        Val::Cell(c) => self.cells[*c],
                        Val::Null => None,
                        _ => Some(frame.locals[0]),
                    };
                    let Some(receiver) = receiver else {
                        return fail("super(): arg[0] deleted".to_owned());
                    };
                    let Some(cell) = frame.class_cell else {
                        return fail("super(): __class__ cell not found".to_owned());
                    };
                    let Some(class) = self.cells[cell] else {
                        return fail("super(): empty __class__ cell".to_owned());
                    };
                    let class = self.concrete(class)?;
                    if !class.is_instance_of::<PyType>() {
                        return fail(format!(
                            "super(): __class__ is not a type ({})",
                            class.get_type().name()?
                        ));
                    }
                    let made = self.make_super(class, receiver)?;
                    frame.stack.push(made);
                    return Ok(());
                }
            }
        }
        if names.len() > args.len() {
            return unsupported("more keyword names than arguments");
        }
        let keyword_values = args.split_off(args.len() - names.len());
        let kwargs: Vec<(String, Vid)> = names.into_iter().zip(keyword_values).collect();
        positional.extend(args);
        let result = self.call(callable, positional, kwargs)?;
        frame.stack.push(result);
        Ok(())
    }

    pub(super) fn call_function_ex(&mut self, frame: &mut Frame<'py>, arg: Arg) -> Res<()> {
        let flags = match arg {
            Arg::Int(n) => n as i64,
            _ => 0,
        };
        let effect = |oparg: u32| self.stack_effect("CALL_FUNCTION_EX", oparg, false);
        let popped = (1 - effect(flags as u32)?) as usize;
        let kwargs_slot = effect(0)? == effect(1)? || flags & 1 != 0;
        let mut slots = Self::pop_n(frame, popped)?;
        let kwargs = if kwargs_slot { slots.pop() } else { None };
        let args = slots.pop().map_or_else(|| unsupported("stack underflow"), Ok)?;
        let (callable, mut positional) = self.pop_callable(slots)?;
        positional.extend(self.items_of(args)?);
        let mut keywords = Vec::new();
        if let Some(kwargs) = kwargs.filter(|k| !matches!(self.val(*k), Val::Null)) {
            for (k, v) in self.dict_items(kwargs)? {
                keywords.push((self.concrete(k)?.extract::<String>()?, v));
            }
        }
        let result = self.call(callable, positional, keywords)?;
        frame.stack.push(result);
        Ok(())
    }

    /// Calls a value: an operation, an inlined function, a supported builtin, or a break.
    pub(super) fn call(&mut self, callable: Vid, args: Vec<Vid>, kwargs: Vec<(String, Vid)>) -> Res<Vid> {
        let callable = self.realize(callable)?;
        match self.val(callable).clone() {
            Val::Function(f) => self.inline(&f, args, kwargs, None),
            Val::Method { function, receiver } => {
                if matches!(self.val(function), Val::Obj { obj, .. } if obj.is(&self.ops.object_init)) {
                    let class = self.type_of(receiver)?;
                    return self.object_init(&class, !args.is_empty() || !kwargs.is_empty());
                }
                let mut all = vec![receiver];
                all.extend(args);
                self.call(function, all, kwargs)
            }
            Val::TensorMethod { tensor, name } => {
                let Val::Tensor { example, .. } = self.val(tensor) else {
                    return unsupported("a tensor method without its tensor");
                };
                if self.backend.is_conversion(&name) {
                    return graph_break(format!("tensor to python: {name}() of a tensor (data-dependent)"));
                }
                if self.backend.is_meta_method(&name) && args.is_empty() && kwargs.is_empty() {
                    // `x.dim()`: what the guarded meta attributes say, computed now.
                    let value = example.call_method0(name.as_str())?;
                    self.tensor_meta_read(tensor);
                    return Ok(self.constant(value));
                }
                if self.backend.is_array(example) {
                    self.array_operands(&format!("an array's {name}"), &args, &kwargs)?;
                }
                let unbound = example.get_type().getattr(name.as_str())?;
                let mut all = vec![tensor];
                all.extend(args);
                self.record(&unbound, all, kwargs)
            }
            Val::ContainerMethod { container, name } => self.container_method(container, &name, args, kwargs),
            Val::Partial {
                function,
                args: first,
                keywords,
            } => {
                let mut all = first;
                all.extend(args);
                self.call(function, all, merged_keywords(keywords, kwargs))
            }
            Val::Object { class, .. } => match self.type_lookup(&class, "__call__")? {
                Some(call) if call.is_instance(&self.ops.function_type)? => {
                    let function = self.constant(call);
                    let mut all = vec![callable];
                    all.extend(args);
                    self.call(function, all, kwargs)
                }
                _ => graph_break(format!("unsupported call: a {} object", qualname(&class))),
            },
            Val::Obj { obj, source } => self.call_object(callable, obj, source, args, kwargs),
            Val::Constructed { obj, .. } => self.call_object(callable, obj, None, args, kwargs),
            _ => unsupported("calling an internal value"),
        }
    }

    /// `stream.write(text)` of an `io.StringIO` from the frame (jinja2's code generator), of
    /// a str: replayed after the graph, in order with the other side effects, giving the
    /// text's length as StringIO's does. The stream guarded open; anything else read of it
    /// afterwards breaks (`load_attr`, `written_to`), so that nothing sees it before the write.
    fn write_to_string_io(&mut self, args: &[Vid], kwargs: &[(String, Vid)]) -> Res<Option<Vid>> {
        let ([stream, text], true) = (args, kwargs.is_empty()) else {
            return Ok(None);
        };
        let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(*stream).clone()
        else {
            return Ok(None);
        };
        if !obj.get_type().is(&self.ops.string_io) || !self.type_of(*text)?.is(self.py.get_type::<PyString>())
        {
            return Ok(None);
        }
        self.guard_type(*stream);
        let closed = obj.getattr(pyo3::intern!(obj.py(), "closed"))?;
        let closed_source = self.intern(Source::Attr(source, self.name_ref("closed")));
        self.guard_value(closed_source, &closed)?;
        if closed.is_truthy()? {
            return Ok(None);
        }
        self.side_effects.push(SideEffect::CallMethod {
            target: *stream,
            method: "write".to_owned(),
            args: vec![*text],
        });
        self.len_of(*text).map(Some)
    }

    /// Whether the translation wrote to `obj` (`write_to_string_io`): its writes are
    /// side effects not replayed yet (read from them, so that a break's rewind forgets them).
    pub(super) fn written_to(&self, obj: &Bound<'py, PyAny>) -> bool {
        self.side_effects.iter().any(|effect| {
            matches!(effect, SideEffect::CallMethod { target, .. }
                if matches!(self.val(*target), Val::Obj { obj: written, .. } if written.is(obj)))
        })
    }

    /// The descriptor a call of `getter`, a `__get__`, binds, and the arguments after it: a
    /// descriptor's own bound `__get__` (a method-wrapper) carries it; the `__get__` of one of
    /// `descriptor_types` (a slot wrapper) takes it first, pinned (what is bound follows from
    /// it). None for another call.
    fn descriptor_of_get<'a>(
        &mut self,
        getter: &Bound<'py, PyAny>,
        args: &'a [Vid],
        kwargs: &[(String, Vid)],
        descriptor_types: &[Bound<'py, PyAny>],
    ) -> Res<Option<(Bound<'py, PyAny>, &'a [Vid])>> {
        if !kwargs.is_empty()
            || !getter
                .getattr(pyo3::intern!(getter.py(), "__name__"))?
                .eq("__get__")?
        {
            return Ok(None);
        }
        if getter.get_type().is(&self.ops.method_wrapper_type) {
            return Ok(Some((
                getter.getattr(pyo3::intern!(getter.py(), "__self__"))?,
                args,
            )));
        }
        let of_these_types = getter
            .getattr(pyo3::intern!(getter.py(), "__objclass__"))
            .is_ok_and(|owner| descriptor_types.iter().any(|t| t.is(&owner)));
        match args {
            [descriptor, rest @ ..] if of_these_types => Ok(Some((self.identity_of(*descriptor)?, rest))),
            _ => Ok(None),
        }
    }

    /// `descriptor.__get__(instance)` of a C method (attrs' `object.__setattr__.__get__(self)`),
    /// through the descriptor's bound `__get__` (a method-wrapper) or its type's (a slot
    /// wrapper taking the descriptor first): the method bound to the instance, called as
    /// such. None for another callable.
    fn bind_c_method(
        &mut self,
        getter: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let c_method_types: Vec<Bound<'py, PyAny>> = self.ops.c_method_types.iter().collect();
        let Some((descriptor, args)) = self.descriptor_of_get(getter, args, kwargs, &c_method_types)? else {
            return Ok(None);
        };
        if !self.ops.is_c_method(&descriptor) {
            return Ok(None);
        }
        let (&[instance] | &[instance, _]) = args else {
            return Ok(None);
        };
        let instance_type = self.type_of(instance)?;
        let objclass = descriptor.getattr(pyo3::intern!(descriptor.py(), "__objclass__"))?;
        if instance_type.is(self.ops.none.get_type())
            || !instance_type
                .cast::<PyType>()
                .map_err(PyErr::from)?
                .is_subclass(&objclass)?
        {
            // None gives the descriptor back, another class's instance a TypeError.
            return Ok(None);
        }
        if matches!(self.val(instance), Val::Obj { .. }) {
            self.guard_type(instance);
        }
        let function = self.constant(descriptor);
        Ok(Some(self.push_val(Val::Method {
            function,
            receiver: instance,
        })))
    }

    /// `descriptor.__get__(instance[, owner])` of a C data descriptor (a getset or member
    /// descriptor, through its bound `__get__` or its type's: inspect's `_static_getmro`,
    /// `type.__dict__['__mro__'].__get__`): the attribute `instance.name` reads, where that
    /// read finds this descriptor (a data descriptor of the instance's type, pinned, whose
    /// `__getattribute__` is object's or type's, which give data descriptors precedence, and
    /// no `__getattr__`). None for another call.
    fn c_data_descriptor_get(
        &mut self,
        getter: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let data_descriptor_types = [
            self.ops.getset_descriptor_type.clone(),
            self.ops.member_descriptor_type.clone(),
        ];
        let Some((descriptor, args)) =
            self.descriptor_of_get(getter, args, kwargs, &data_descriptor_types)?
        else {
            return Ok(None);
        };
        if !data_descriptor_types.iter().any(|t| descriptor.get_type().is(t)) {
            return Ok(None);
        }
        let (&[instance] | &[instance, _]) = args else {
            return Ok(None);
        };
        let instance_type = self.type_of(instance)?;
        if instance_type.is(self.ops.none.get_type()) {
            // `__get__(None, owner)` gives the descriptor back; without an owner, a TypeError.
            return Ok(None);
        }
        let objclass = descriptor.getattr(pyo3::intern!(descriptor.py(), "__objclass__"))?;
        let Ok(instance_class) = instance_type.cast::<PyType>() else {
            return Ok(None);
        };
        if !instance_class.is_subclass(&objclass)? {
            // The descriptor's TypeError (inspect's `_is_type` catches it), which follows from
            // the instance's type (guarded): raised now, by the descriptor, on the object.
            let example = match self.val(instance) {
                Val::Tensor { example, .. } | Val::Obj { obj: example, .. } => example.clone(),
                _ => return Ok(None),
            };
            return match descriptor.call_method1("__get__", (example,)) {
                Err(error) if error.is_instance_of::<PyTypeError>(self.py) => Err(Problem::Python(error)),
                _ => Ok(None),
            };
        }
        let name: String = descriptor
            .getattr(pyo3::intern!(descriptor.py(), "__name__"))?
            .extract()?;
        let found = self.type_lookup(&instance_type, &name)?;
        let getattribute = self.type_lookup(&instance_type, "__getattribute__")?;
        let type_getattribute =
            builtin(self.py, "type")?.getattr(pyo3::intern!(self.py, "__getattribute__"))?;
        let generic =
            getattribute.is_some_and(|g| g.is(&self.ops.object_getattribute) || g.is(&type_getattribute));
        // A `__getattr__` would answer where the descriptor raises AttributeError (a slot
        // never stored); the descriptor's `__get__` raises it.
        let hook = self.type_lookup(&instance_type, "__getattr__")?;
        if !generic || hook.is_some() || !found.is_some_and(|found| found.is(&descriptor)) {
            return Ok(None);
        }
        self.load_attr(instance, &name).map(Some)
    }

    /// `os.fspath(path)` of a str or bytes (os.path's functions begin with it): the path
    /// itself, as os.fspath gives it back. None for another call or argument.
    fn fspath_of_text(
        &mut self,
        obj: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let ([path], true) = (args, kwargs.is_empty()) else {
            return Ok(None);
        };
        if !obj.is(&self.ops.fspath) || self.contains_tensor(*path) {
            return Ok(None);
        }
        let ty = self.type_of(*path)?;
        let text = ty.is(self.py.get_type::<PyString>()) || ty.is(self.py.get_type::<pyo3::types::PyBytes>());
        Ok(text.then_some(*path))
    }

    /// `object.__getattribute__(instance, name)` (inspect's `_check_instance`): as
    /// `instance.name` is read where the instance's type reads attributes so (its
    /// `__getattribute__` is object's, with no `__getattr__` to fall back to); an
    /// AttributeError, whatever the instance, where neither its type nor an instance dict
    /// can hold the name (a tensor's `__dict__`). None for another call.
    fn object_getattribute(&mut self, args: &[Vid], kwargs: &[(String, Vid)]) -> Res<Option<Vid>> {
        let ([instance, name], true) = (args, kwargs.is_empty()) else {
            return Ok(None);
        };
        let name_obj = self.concrete(*name)?;
        if !name_obj.is_exact_instance_of::<PyString>() {
            return Ok(None);
        }
        let name: String = name_obj.extract()?;
        let ty = self.type_of(*instance)?;
        if self.type_lookup(&ty, &name)?.is_none() && !has_instance_dict(&ty) {
            let example = match self.val(*instance) {
                Val::Tensor { example, .. } | Val::Obj { obj: example, .. } => example.clone(),
                _ => return Ok(None),
            };
            return match self.ops.object_getattribute.call1((example, name_obj)) {
                Err(error) if error.is_instance_of::<PyAttributeError>(self.py) => {
                    Err(Problem::Python(error))
                }
                _ => Ok(None),
            };
        }
        let own = self
            .type_lookup(&ty, "__getattribute__")?
            .is_some_and(|g| g.is(&self.ops.object_getattribute));
        if !own || self.type_lookup(&ty, "__getattr__")?.is_some() {
            return Ok(None);
        }
        self.load_attr(*instance, &name).map(Some)
    }

    /// `list.append(items, x)`, `dict.get(table, key)`: a method of the builtin containers
    /// called unbound, on an object of exactly its class, as the bound method is called (on a
    /// subclass's object the unbound method may do otherwise than the bound one: not modeled,
    /// but for dict's reads of its storage, `stored_dict_method`). None for another call.
    fn unbound_container_method(
        &mut self,
        method: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let Some((&receiver, rest)) = args.split_first() else {
            return Ok(None);
        };
        if !method.get_type().is(self.ops.c_method_types.get_item(0)?) {
            return Ok(None);
        }
        let name: String = method
            .getattr(pyo3::intern!(method.py(), "__name__"))?
            .extract()?;
        let owner = method.getattr(pyo3::intern!(method.py(), "__objclass__"))?;
        let containers = [
            self.py.get_type::<PyList>().into_any(),
            self.py.get_type::<PyDict>().into_any(),
            self.py.get_type::<PyTuple>().into_any(),
            self.py.get_type::<pyo3::types::PySet>().into_any(),
        ];
        if owner.is(&containers[1]) {
            if let Some(read) = self.stored_dict_method(&name, receiver, rest, kwargs)? {
                return Ok(Some(read));
            }
        }
        if name.starts_with("__") || !containers.iter().any(|c| c.is(&owner)) {
            return Ok(None);
        }
        if !self.type_of(receiver)?.is(&owner) {
            return Ok(None);
        }
        // As the container's own method, where the VM models it (else the C method bound
        // to it, which would come back here).
        let bound = self.load_attr(receiver, &name)?;
        if !matches!(self.val(bound), Val::ContainerMethod { .. }) {
            return Ok(None);
        }
        self.call(bound, rest.to_vec(), kwargs.to_vec()).map(Some)
    }

    /// What a library function the VM answers itself returns (`copy.deepcopy`,
    /// `inspect.getattr_static`, `inspect.signature`), where it answers for these arguments;
    /// else None (the call is made as any other).
    fn modeled_library_call(
        &mut self,
        function: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        if let Some(copied) = self.modeled_deepcopy(function, args, kwargs)? {
            return Ok(Some(copied));
        }
        if let Some(found) = self.modeled_getattr_static(function, args, kwargs)? {
            return Ok(Some(found));
        }
        self.modeled_signature(function, args, kwargs)
    }

    pub(super) fn call_object(
        &mut self,
        callable: Vid,
        obj: Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<Vid> {
        if self.reads_callers_frame(&obj, &args, &kwargs)? {
            let what = format!("{}() reads the frame that calls it", qualname(&obj));
            // In the translated frame, run as it is; in an inlined callee, a break runs
            // the callee as its own frame.
            return Err(if self.depth == 0 {
                Problem::Eager(what)
            } else {
                Problem::Break(what)
            });
        }
        if let Some(done) = self.region_call(&obj, &args, &kwargs)? {
            return Ok(done);
        }
        if let Some(lock) = self.made_lock(&obj, source, &args, &kwargs)? {
            return Ok(lock);
        }
        if let Some(done) = self.made_lock_call(&obj, &args, &kwargs)? {
            return Ok(done);
        }
        let pin = |vm: &mut Self| vm.pin_callable(source, &obj);
        if self.backend.is_array_function(&obj)
            && self.array_operands(&qualname(&obj), &args, &kwargs)?.arrays
        {
            pin(self);
            return self.record(&obj, args, kwargs);
        }
        let is_op = self.backend.is_op(&obj)?;
        if self.backend.is_fixed_function(&obj) {
            pin(self);
            if let Some(result) = self.computed_now(&obj, &args, &kwargs, false)? {
                return Ok(result);
            }
            if !is_op {
                return graph_break(format!(
                    "unsupported call: {} with arguments that may differ on a later call",
                    qualname(&obj)
                ));
            }
            // Of a tensor (`np.result_type(x)`): the operation it is.
        }
        if is_op {
            match source {
                Some(s) if is_class_bound_builtin(&obj)? => self.pin_class_bound_builtin(s, &obj)?,
                _ => pin(self),
            }
            self.guard_layer(&obj, source)?;
            return self.record(&obj, args, kwargs);
        }
        if let (Some(s), true) = (source, args.is_empty() && kwargs.is_empty()) {
            if self.backend.is_guarded_function(&obj) {
                // Read now; the guards call it again where its result was used.
                pin(self);
                let value = with_session(None, || obj.call0())?;
                return Ok(self.value_of_source(Source::Called(s), value));
            }
        }
        if obj.is(&self.ops.string_io_write) {
            if let Some(written) = self.write_to_string_io(&args, &kwargs)? {
                return Ok(written);
            }
        }
        if let Some(result) = self.modeled_c_call(&obj, source, &args, &kwargs)? {
            return Ok(result);
        }
        if obj.is_exact_instance_of::<PyCFunction>() {
            if let Some(result) = self.operator_function(&obj, source, &args, &kwargs)? {
                return Ok(result);
            }
            if let Some(result) = self.reduce(&obj, source, &args, &kwargs)? {
                return Ok(result);
            }
        }
        if obj.is(&self.ops.partial_type) {
            pin(self);
            return self.make_partial(args, kwargs);
        }
        if obj.get_type().is(&self.ops.partial_type) {
            return self.call_partial_object(callable, &obj, source, args, kwargs);
        }
        if obj.is_instance(&self.ops.lru_cache_type)? {
            pin(self);
            return self.call_cached(&obj, source, args, kwargs);
        }
        if obj.is_instance(&self.ops.function_type)? {
            // A function is pinned by its code, not its identity: closures made anew on
            // each call (and handed to resume functions) keep their translation; what
            // else the call reads of it (defaults, closure, globals) has its own source.
            match source {
                Some(s) if obj.is_exact_instance_of::<pyo3::types::PyFunction>() => {
                    self.pin_called_function(s, &obj)?;
                }
                _ => pin(self),
            }
            let renamed = self.stored_attrs.iter().any(|(p, n, _)| {
                *p == obj.as_ptr() as usize && matches!(n.as_str(), "__name__" | "__qualname__")
            });
            if renamed {
                return graph_break(format!("a call of {} renamed while translating", qualname(&obj)));
            }
            if let Some(result) = self.modeled_library_call(&obj, &args, &kwargs)? {
                return Ok(result);
            }
            match self
                .backend
                .code_kind(&obj.getattr(pyo3::intern!(obj.py(), "__code__"))?)?
            {
                // Inside a library call's simulation, its budget and its summary cover the
                // calls it makes.
                CodeKind::Traced | CodeKind::Library if self.library_since.is_some() => {
                    return self.inline_function(&obj, source, args, kwargs)
                }
                // A traced function's summary is made from its second call on (`summaries`).
                CodeKind::Traced => return self.inline_summarized(&obj, source, args, kwargs, false, |_| {}),
                CodeKind::Library => return self.call_library(&obj, source, args, kwargs),
                CodeKind::Closed => {
                    return graph_break(format!(
                        "unsupported call: {} (a library function)",
                        qualname(&obj)
                    ))
                }
            }
        }
        if obj.is_instance(&self.ops.method_type)? {
            let function = obj.getattr(pyo3::intern!(obj.py(), "__func__"))?;
            let receiver = obj.getattr(pyo3::intern!(obj.py(), "__self__"))?;
            let (function, receiver) = match source {
                Some(s) => {
                    // Made anew at each attribute read (a `with`'s `__exit__` handed to a
                    // resume function): pinned by type, its function and its receiver.
                    self.add_guard(s, Check::Type(Pin::of_type(&self.ops.method_type)));
                    (
                        self.value_of_source(Source::Attr(s, self.name_ref("__func__")), function),
                        self.value_of_source(Source::Attr(s, self.name_ref("__self__")), receiver),
                    )
                }
                None => (self.constant(function), self.constant(receiver)),
            };
            let mut all = vec![receiver];
            all.extend(args);
            return self.call(function, all, kwargs);
        }
        if obj.is_instance_of::<PyType>() {
            if let Some(made) = self.construct(&obj, source, &args, &kwargs)? {
                return Ok(made);
            }
            if let Some(made) = self.instantiate(&obj, source, &args, &kwargs)? {
                return Ok(made);
            }
        }
        if let Some(result) = self.call_builtin(&obj, source, &args, &kwargs)? {
            return Ok(result);
        }
        if obj.is_instance_of::<PyType>() {
            if self.backend.is_interned_type(&obj) {
                if let Some(interned) = self.interned(&obj, &args, &kwargs)? {
                    pin(self);
                    return Ok(interned);
                }
            }
            if let Some(made) = self.call_through_metaclass(&obj, &args, &kwargs)? {
                pin(self);
                return Ok(made);
            }
            return graph_break(format!("unsupported call: creating a {} object", qualname(&obj)));
        }
        if let Some(forward) = self.backend.forward_of(&obj)? {
            // A model layer: its forward translated, the layer pinned with its mode.
            pin(self);
            self.guard_layer(&obj, source)?;
            let function = self.constant(forward);
            let mut all = vec![callable];
            all.extend(args);
            return self.call(function, all, kwargs);
        }
        // An object with a Python __call__ (layers, modules of a model).
        let ty = obj.get_type().into_any();
        if let Some(call) = self.type_lookup(&ty, "__call__")? {
            if call.is_instance(&self.ops.function_type)? {
                self.guard_type(callable);
                let function = self.constant(call);
                let mut all = vec![callable];
                all.extend(args);
                return self.call(function, all, kwargs);
            }
        }
        graph_break(format!("unsupported call: {}", qualname(&obj)))
    }

    /// A call of a C callable the VM models where the standard library reaches it (`copy.copy`,
    /// `object.__new__`, a mappingproxy's `get`, `os.fspath`, `object.__getattribute__`,
    /// `object.__setattr__`, a C method's or data descriptor's `__get__`, an unbound container
    /// method), the callable pinned: its result, or None for another call.
    fn modeled_c_call(
        &mut self,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        if self.ops.copy_copy.as_ref().is_some_and(|copy| copy.is(obj)) {
            if let Some(copied) = self.copy_object(args, kwargs)? {
                self.pin_callable(source, obj);
                return Ok(Some(copied));
            }
        }
        if obj.is(&self.ops.object_new) {
            self.pin_callable(source, obj);
            return self.object_new(args, kwargs).map(Some);
        }
        if obj.is(&self.ops.mappingproxy_get) {
            if let ([namespace, key, rest @ ..], true) = (args, kwargs.is_empty() && args.len() <= 3) {
                if let Some(namespace) = self.class_namespace(*namespace)? {
                    if let Some(entry) = self.class_namespace_entry(namespace, *key)? {
                        self.pin_callable(source, obj);
                        return Ok(Some(entry.unwrap_or_else(|| {
                            rest.first().copied().unwrap_or_else(|| self.none())
                        })));
                    }
                }
            }
        }
        if let Some(path) = self.fspath_of_text(obj, args, kwargs)? {
            self.pin_callable(source, obj);
            return Ok(Some(path));
        }
        if obj.is(&self.ops.object_getattribute) {
            if let Some(read) = self.object_getattribute(args, kwargs)? {
                self.pin_callable(source, obj);
                return Ok(Some(read));
            }
        }
        if obj.is(&self.ops.object_setattr) {
            self.pin_callable(source, obj);
            return self.call_object_setattr(args, kwargs).map(Some);
        }
        if obj.get_type().is(&self.ops.method_wrapper_type) || self.ops.is_c_method(obj) {
            if let Some(bound) = self.bind_c_method(obj, args, kwargs)? {
                self.pin_callable(source, obj);
                return Ok(Some(bound));
            }
            if let Some(read) = self.c_data_descriptor_get(obj, args, kwargs)? {
                self.pin_callable(source, obj);
                return Ok(Some(read));
            }
            if let Some(result) = self.unbound_container_method(obj, args, kwargs)? {
                self.pin_callable(source, obj);
                return Ok(Some(result));
            }
        }
        Ok(None)
    }

    /// A call of one of the backend's `interned_types` with plain values (guarded), made
    /// twice while translating: where both calls give one object, the type interns it, and
    /// the call the translated code would make gives it too; else None (a new object each
    /// time, which a constant would not be).
    fn interned(
        &mut self,
        ty: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let plain = |vm: &Self, vid: Vid| match vm.val(vid) {
            Val::Obj { obj, .. } => {
                is_value_type(obj) || (obj.is_exact_instance_of::<PyType>() && !is_heap_type(obj))
            }
            _ => false,
        };
        if !args
            .iter()
            .chain(kwargs.iter().map(|(_, v)| v))
            .all(|v| plain(self, *v))
        {
            return Ok(None);
        }
        let Ok((positional, keywords)) =
            self.arguments_now(args, kwargs, |vm, vid| vm.concrete(vid).map(Some))?
        else {
            return Ok(None);
        };
        let first = ty.call(&positional, Some(&keywords))?;
        let second = ty.call(&positional, Some(&keywords))?;
        Ok(first.is(&second).then(|| self.constant(first)))
    }

    /// A function called from `source`, pinned by its code (`Check::Function`, which also says
    /// its defaults are None where they are: then what `function_of` would guard of them is
    /// this check's) and its globals.
    fn pin_called_function(&mut self, source: SourceId, function: &Bound<'py, PyAny>) -> Res<()> {
        let code = Pin::new(&function_attr(function, FunctionPart::Code)?);
        let absent = AbsentDefaults {
            positional: function_attr(function, FunctionPart::Defaults)?.is_none(),
            keyword: function_attr(function, FunctionPart::KwDefaults)?.is_none(),
        };
        self.add_guard(source, Check::Function { code, absent });
        self.pin_attribute(source, function, "__globals__")
    }

    /// The callable a call reads at `source`, pinned by identity (what the call does follows
    /// from which object it is).
    pub(super) fn pin_callable(&mut self, source: Option<SourceId>, obj: &Bound<'py, PyAny>) {
        if let Some(s) = source {
            self.add_guard(s, Check::Id(Pin::new(obj)));
        }
    }

    /// Whether `hash(vid)` succeeds, by its kind.
    pub(super) fn hashable(&mut self, vid: Vid) -> Res<bool> {
        let val = self.val(vid).clone();
        Ok(kind_of(&val).hashable(self, vid, &val)?.unwrap_or(true))
    }

    /// The value among `roots` (and the containers they are) whose object is `obj` itself.
    pub(super) fn argument_that_is(&self, roots: &[Vid], obj: &Bound<'py, PyAny>) -> Option<Vid> {
        let mut pending = roots.to_vec();
        let mut seen = Vec::new();
        while let Some(vid) = pending.pop() {
            if seen.contains(&vid) {
                continue;
            }
            seen.push(vid);
            match self.val(vid) {
                Val::Tuple(items) | Val::List(items) | Val::NamedTuple { items, .. } => pending.extend(items),
                Val::Dict(items) => pending.extend(items.iter().map(|(_, v)| *v)),
                Val::Obj { obj: held, .. } | Val::Constructed { obj: held, .. } if held.is(obj) => {
                    return Some(vid)
                }
                _ => {}
            }
        }
        None
    }

    /// `operator.add(a, b)` and the module's other functions of the operations the VM runs
    /// (`a + b`, `a < b`, `a[k]`, `a[k] = v`, `del a[k]`, `b in a`, `a is b`, `not a`, `-a`),
    /// run as those operations are; None for another callable.
    pub(super) fn operator_function(
        &mut self,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        // Of `operator`'s module first: a builtin function's `__name__` is a new string.
        let owner = obj.getattr(pyo3::intern!(self.py, "__self__"));
        if !owner.is_ok_and(|owner| owner.is(&self.ops.operator_functions_owner)) {
            return Ok(None);
        }
        // A plain str (a subclass's hash or equality would run its code in the lookup).
        let Some(name) = obj
            .getattr(pyo3::intern!(self.py, "__name__"))
            .ok()
            .and_then(|name| name.cast_into_exact::<PyString>().ok())
        else {
            return Ok(None);
        };
        if !kwargs.is_empty() || !self.ops.is_op_named(&name, obj) {
            return Ok(None);
        }
        let name = name.to_str()?.to_owned();
        let binary = BINARY_OPS
            .iter()
            .flat_map(|op| [(*op, false), (*op, true)])
            .find(|(op, inplace)| binop_name(*op, *inplace) == name);
        let result = match (name.as_str(), args) {
            (_, [a, b]) if binary.is_some() => {
                let (op, inplace) = binary.expect("matched");
                self.binary(*a, *b, op, inplace)?
            }
            (name, [a, b]) if COMPARE_NAMES.contains(&name) => self.rich_compare(name, *a, *b)?,
            ("neg" | "pos" | "invert", [a]) => self.operator_call(&name, vec![*a])?,
            ("setitem", [container, key, value]) => {
                self.store_subscript(*container, *key, *value)?;
                self.none()
            }
            ("delitem", [container, key]) => {
                self.delete_subscript(*container, *key)?;
                self.none()
            }
            ("contains", [container, item]) => {
                let found = self.contains(*container, *item)?;
                self.boolean(found)
            }
            ("is_" | "is_not", [a, b]) => {
                let same = self.identical(*a, *b)?;
                self.boolean(same == (name == "is_"))
            }
            ("truth" | "not_", [a]) => {
                let truth = self.truthy(*a)?;
                self.boolean(truth == (name == "truth"))
            }
            _ => return Ok(None),
        };
        if let Some(s) = source {
            self.add_guard(s, Check::Id(Pin::new(obj)));
        }
        Ok(Some(result))
    }

    /// `functools.reduce(function, iterable[, initial])`: the calls it makes, followed
    /// through; None for another callable.
    pub(super) fn reduce(
        &mut self,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        if !kwargs.is_empty() || !self.ops.functools_reduce.is(obj) {
            return Ok(None);
        }
        let (function, iterable, initial) = match args {
            [function, iterable] => (*function, *iterable, None),
            [function, iterable, initial] => (*function, *iterable, Some(*initial)),
            _ => return Ok(None),
        };
        if let Some(s) = source {
            self.add_guard(s, Check::Id(Pin::new(obj)));
        }
        let iterator = self.iterator(iterable)?;
        let mut accumulated = match initial {
            Some(initial) => initial,
            None => match self.advance(iterator)? {
                Some(first) => first,
                // The interpreter's own error (its wording changed in 3.10).
                None => {
                    let empty = obj.call1((builtin(self.py, "max")?, PyTuple::empty(self.py)));
                    return Err(Problem::Python(empty.expect_err("reduce() of nothing raises")));
                }
            },
        };
        while let Some(item) = self.advance(iterator)? {
            accumulated = self.call(function, vec![accumulated, item], vec![])?;
        }
        Ok(Some(accumulated))
    }
}

/// A partial object's keywords with a call's: the call's own win.
pub(super) fn merged_keywords(
    mut keywords: Vec<(String, Vid)>,
    given: Vec<(String, Vid)>,
) -> Vec<(String, Vid)> {
    for (name, value) in given {
        store_named(&mut keywords, name, value);
    }
    keywords
}
