//! Builtins computed while translating: constant folding, and methods of immutable values
//! and pure modules (bound builtins).

use crate::sot::translator::vm::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// A call whose result depends on the frame making it (its locals, itself): run from
    /// generated code, it would see that code's frame.
    pub(in crate::sot::translator::vm) fn reads_callers_frame(
        &self,
        obj: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> PyResult<bool> {
        // Read once per translation (each call asks): a module not imported yet, again.
        let mut readers = self.frame_readers.borrow_mut();
        readers.resize(FRAME_READERS.len(), None);
        let given = args.len() + kwargs.len();
        Ok(FRAME_READERS
            .iter()
            .zip(readers.iter_mut())
            .any(|((module, name), reader)| {
                if reader.is_none() {
                    // A builtin as framehook found it (its module not read each translation).
                    *reader = match *module {
                        "builtins" => builtin(self.py, name).ok(),
                        _ => imported(self.py, module).and_then(|m| m.getattr(self.interned_name(name)).ok()),
                    };
                }
                reader.as_ref().is_some_and(|f| f.is(obj))
                    && match *name {
                        "locals" | "vars" | "dir" => given == 0,
                        // Without a globals namespace they run in the caller's.
                        "eval" | "exec" => given < 2,
                        _ => true,
                    }
            }))
    }

    pub(in crate::sot::translator::vm) fn builtin(&self, name: &str) -> PyResult<Bound<'py, PyAny>> {
        builtin(self.py, name)
    }

    /// The builtin `name` called now, with arguments it computes the same with on every
    /// call passing the guards (else a break).
    pub(in crate::sot::translator::vm) fn folded_builtin_call(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: &str,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Vid> {
        let (positional, kw) = match self.pure_arguments(args, kwargs, name)? {
            Ok(arguments) => arguments,
            Err(refused) => return self.refuse_folding(&format!("builtin {name}()"), refused),
        };
        let result = obj.call(positional, Some(&kw))?;
        Ok(self.wrap_result(result))
    }

    /// Methods of immutable values (`"{}".format`, `str.join`) and pure modules' functions.
    pub(in crate::sot::translator::vm) fn call_bound_builtin(
        &mut self,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let Ok(receiver) = obj.getattr(pyo3::intern!(obj.py(), "__self__")) else {
            return self.call_unbound_builtin_method(obj, args, kwargs);
        };
        let tuple_new = self.builtin("tuple").is_ok_and(|tuple| tuple.is(&receiver))
            && obj
                .getattr(pyo3::intern!(obj.py(), "__name__"))
                .is_ok_and(|n| n.to_string() == "__new__");
        if let ([cls, items], true) = (args, tuple_new && kwargs.is_empty()) {
            // `tuple.__new__(cls, items)` (a namedtuple's `__new__`): a new object on every
            // call, so the generated code makes it (a constant would be one object for all).
            let (Some(cls), Ok(items)) = (self.folded_argument(*cls, "")?, self.items_of(*items)) else {
                return Ok(None);
            };
            // `tuple.__new__(tuple, t)` is `t` itself.
            if cls.is(self.py.get_type::<PyTuple>()) {
                return Ok(None);
            }
            // A tuple subclass that acts as a tuple, of any values of the translation.
            if self.acts_as_a_tuple(&cls)? {
                return Ok(Some(self.push_val(Val::NamedTuple { class: cls, items })));
            }
            // Another (methods of its own, an instance dict): of known immutable values,
            // made now to be read, and made again by the generated code.
            let mut values = Vec::with_capacity(items.len());
            for item in &items {
                if self.contains_tensor(*item) {
                    return Ok(None);
                }
                match self.folded_argument(*item, "")? {
                    Some(value) if is_immutable(&value) => values.push(value),
                    _ => return Ok(None),
                }
            }
            let made = obj.call1((&cls, PyTuple::new(self.py, values)?))?;
            let cls = self.constant(cls);
            let items = self.push_val(Val::Tuple(items));
            return Ok(Some(self.constructed(made, obj.clone(), vec![cls, items], &[])));
        }
        let from_keys = self.builtin("dict").is_ok_and(|dict| dict.is(&receiver))
            && obj
                .getattr(pyo3::intern!(obj.py(), "__name__"))
                .is_ok_and(|n| n.to_string() == "fromkeys");
        if from_keys && kwargs.is_empty() {
            // `dict.fromkeys(keys[, value])`: a dict the translation makes.
            let (keys, value) = match args {
                [keys] => (*keys, self.none()),
                [keys, value] => (*keys, *value),
                _ => return Ok(None),
            };
            let mut items = Vec::new();
            for key in self.items_of(keys)? {
                self.dict_set(&mut items, key, value)?;
            }
            return Ok(Some(self.push_val(Val::Dict(items))));
        }
        // A module first: reading a missing `__name__` (of a str receiver) formats an error.
        let pure_module = receiver.is_instance(&self.ops.module_type)?
            && receiver
                .getattr(pyo3::intern!(receiver.py(), "__name__"))
                .ok()
                .and_then(|n| n.extract::<String>().ok())
                .is_some_and(|n| matches!(n.as_str(), "math" | "operator" | "cmath" | "unicodedata"));
        let immutable_receiver = is_immutable(&receiver) && !receiver.is_instance_of::<PyType>();
        if !(pure_module || immutable_receiver) {
            return Ok(None);
        }
        if args
            .iter()
            .chain(kwargs.iter().map(|(_, v)| v))
            .any(|a| self.contains_tensor(*a))
        {
            if pure_module
                && receiver
                    .getattr(pyo3::intern!(receiver.py(), "__name__"))?
                    .extract::<String>()?
                    == "operator"
            {
                return Ok(Some(self.record(obj, args.to_vec(), kwargs.to_vec())?));
            }
            return graph_break(format!("tensor to python: {} of a tensor", qualname(obj)));
        }
        if let Some(s) = source {
            // A bound method held somewhere (a closure's cell): which method of which
            // receiver it is, guarded (a cell of another closure of the same code may hold
            // another).
            self.add_guard(s, Check::Type(Pin::of_type(&obj.get_type().into_any())));
            let name = self.intern(Source::Attr(s, self.name_ref("__name__")));
            self.add_guard(
                name,
                Check::Equals(StrongRef::new(&obj.getattr(pyo3::intern!(obj.py(), "__name__"))?)),
            );
            let owner = self.intern(Source::Attr(s, self.name_ref("__self__")));
            self.guard_value(owner, &receiver)?;
        }
        let joined = (receiver.is_exact_instance_of::<PyString>()
            || receiver.is_exact_instance_of::<pyo3::types::PyBytes>())
            && obj
                .getattr(pyo3::intern!(obj.py(), "__name__"))
                .is_ok_and(|n| n.eq(pyo3::intern!(obj.py(), "join")).unwrap_or(false));
        if let ([iterable], true) = (args, joined && kwargs.is_empty()) {
            if matches!(
                self.val(*iterable),
                Val::Iter { .. } | Val::Lazy(_) | Val::Generator(_)
            ) {
                // `" ".join(str(e) for e in items)`: the iterator made here drained first, as
                // join does (its items, then the join, computed now where they are values).
                let items = self.items_of(*iterable)?;
                let listed = self.push_val(Val::List(items));
                return self.computed_now(obj, &[listed], kwargs, receiver.is_instance_of::<PyString>());
            }
        }
        self.computed_now(obj, args, kwargs, receiver.is_instance_of::<PyString>())
    }

    /// The call `obj(*args, **kwargs)` of a builtin method on values, made now where every
    /// later call passing the guards computes the same (None where one may not). A `str`
    /// method formats its arguments (`"{}".format(x)`); others read them as values.
    pub(in crate::sot::translator::vm) fn computed_now(
        &mut self,
        obj: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
        of_str: bool,
    ) -> Res<Option<Vid>> {
        if is_stateful_regex_method(obj) {
            return Ok(None);
        }
        // What a bound method runs on (read once), and the string a bound `str` method runs
        // on: none where it is called through `str`.
        let receiver = obj.getattr(pyo3::intern!(self.py, "__self__")).ok();
        let text = receiver
            .clone()
            .filter(|receiver| receiver.is_instance_of::<PyString>());
        let reads = if of_str && self.formats_its_arguments(obj, text.as_ref(), args)? {
            "format"
        } else {
            ""
        };
        // `str.upper(text)`: the string the method runs on, read for its value as a bound
        // method's receiver is (a `str` subclass's by its inherited methods).
        let through_class = of_str && text.is_none();
        let mut position = 0;
        let arguments = self.arguments_now(args, kwargs, |vm, vid| {
            let receiver = through_class && position == 0;
            position += 1;
            vm.folded_argument(vid, if receiver { "format" } else { reads })
        })?;
        let Ok((positional, kw)) = arguments else {
            return Ok(None);
        };
        // A method of a number or a string on numbers and strings cannot warn.
        let quiet = obj.is_instance_of::<pyo3::types::PyCFunction>()
            && receiver.as_ref().is_some_and(is_quiet_value)
            && positional.iter().all(|arg| is_quiet_value(&arg))
            && (kw.is_empty() || kw.values().iter().all(|arg| is_quiet_value(&arg)));
        let result = self.folded_call(|| qualname(obj), quiet, || obj.call(positional, Some(&kw)))?;
        if regex_type(&result.get_type().into_any()) == Some(Regex::Match) {
            // A new match on every call (`pattern.search(text)`): read now, made again by the
            // generated code where it is used as an object.
            return Ok(Some(self.constructed(result, obj.clone(), args.to_vec(), kwargs)));
        }
        // SAFETY: a live object; `PyIter_Check` reads its type's slot only.
        if unsafe { pyo3::ffi::PyIter_Check(result.as_ptr()) } != 0 {
            // `"ab".__iter__()`: one iterator would serve every call.
            return graph_break(format!("{} gives an iterator", qualname(obj)));
        }
        Ok(Some(self.wrap_result(result)))
    }

    /// Whether the `str` method `obj` (bound to `text`, or called through `str` with the
    /// template first) is `format` of a template whose fields only format their arguments
    /// (`__format__`, `__str__`, `__repr__`: `"{}"`, `"{0:.2f}"`, `"{x!r}"`). Any other
    /// reads them otherwise: `join` iterates its argument, `center` takes an index,
    /// `"{0.n}"` and `"{0[k]}"` read an attribute or an item as they run.
    fn formats_its_arguments(
        &mut self,
        obj: &Bound<'py, PyAny>,
        text: Option<&Bound<'py, PyAny>>,
        args: &[Vid],
    ) -> Res<bool> {
        if !obj
            .getattr(pyo3::intern!(self.py, "__name__"))
            .is_ok_and(|name| name.to_string() == "format")
        {
            return Ok(false);
        }
        let template = match (text, args.first()) {
            (Some(text), _) => text.clone(),
            (None, Some(first)) => self.concrete(*first)?,
            (None, None) => return Ok(false),
        };
        let Ok(text) = template.cast::<PyString>() else {
            return Ok(false);
        };
        Ok(fields_format_only(&text.to_cow()?))
    }

    /// A call computed now, its result a constant of the translation; one that warns warns
    /// on every call (at its line), so it runs as it is, at a break. A `quiet` call (on
    /// `is_quiet_value`s only) cannot warn: it runs as it is.
    pub(in crate::sot::translator::vm) fn folded_call(
        &self,
        what: impl FnOnce() -> String,
        quiet: bool,
        call: impl FnOnce() -> PyResult<Bound<'py, PyAny>>,
    ) -> Res<Bound<'py, PyAny>> {
        if quiet {
            return Ok(call()?);
        }
        let (outcome, warned) = keeping_warnings(self.py, call)?;
        if warned {
            // Named only here: a builtin method's qualified name is formatted at each read.
            return graph_break(format!("{} warns", what()));
        }
        Ok(outcome?)
    }

    /// `str.split(text, ",")`: a method of an immutable builtin type called through its
    /// class, computed now as the bound call is (None for another callable).
    pub(in crate::sot::translator::vm) fn call_unbound_builtin_method(
        &mut self,
        obj: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        if !obj.is_instance(self.ops.c_method_types.as_any())? {
            return Ok(None);
        }
        let owner = obj.getattr(pyo3::intern!(obj.py(), "__objclass__"))?;
        let immutable_type = ["str", "bytes", "int", "float", "complex", "tuple", "frozenset"]
            .iter()
            .any(|name| self.builtin(name).is_ok_and(|t| t.is(&owner)))
            || regex_type(&owner).is_some();
        if !immutable_type
            || args
                .iter()
                .chain(kwargs.iter().map(|(_, v)| v))
                .any(|a| self.contains_tensor(*a))
        {
            return Ok(None);
        }
        let of_str = self.builtin("str").is_ok_and(|t| t.is(&owner));
        self.computed_now(obj, args, kwargs, of_str)
    }

    /// The arguments of a call of `builtin` made while translating (its result then a
    /// constant), or the first one with which the call may compute otherwise on a later
    /// call passing the same guards (`computes_the_same_later`): it then runs in Python,
    /// each time. `callable()` looks at types only.
    pub(in crate::sot::translator::vm) fn pure_arguments(
        &mut self,
        args: &[Vid],
        kwargs: &[(String, Vid)],
        builtin: &str,
    ) -> Res<Result<CallArguments<'py>, Vid>> {
        self.arguments_now(args, kwargs, |vm, vid| vm.folded_argument(vid, builtin))
    }

    /// A call's arguments as `value_of` gives each now, or the first it gives none for.
    pub(in crate::sot::translator::vm) fn arguments_now(
        &mut self,
        args: &[Vid],
        kwargs: &[(String, Vid)],
        mut value_of: impl FnMut(&mut Self, Vid) -> Res<Option<Bound<'py, PyAny>>>,
    ) -> Res<Result<CallArguments<'py>, Vid>> {
        let mut positional = Vec::with_capacity(args.len());
        for arg in args {
            match value_of(self, *arg)? {
                Some(value) => positional.push(value),
                None => return Ok(Err(*arg)),
            }
        }
        let kw = PyDict::new(self.py);
        for (k, v) in kwargs {
            match value_of(self, *v)? {
                Some(value) => kw.set_item(k, value)?,
                None => return Ok(Err(*v)),
            }
        }
        Ok(Ok((PyTuple::new(self.py, positional)?, kw)))
    }

    /// The break where `what` (a builtin's call, an operator) cannot compute with `vid` now.
    pub(in crate::sot::translator::vm) fn refuse_folding<T>(&mut self, what: &str, vid: Vid) -> Res<T> {
        if self.backend.is_tensor(&self.concrete(vid)?) {
            return graph_break(format!("tensor to python: {what} of a tensor (data-dependent)"));
        }
        let class = self.type_of(vid)?;
        graph_break(format!(
            "{what} of a {} object (it may answer otherwise on a later call)",
            qualname(&class)
        ))
    }

    /// The value `builtin` computes with now, or None where it may compute otherwise on a
    /// later call. An exception the translation made or caught is its own (the generated
    /// code makes it again from the same arguments).
    pub(in crate::sot::translator::vm) fn folded_argument(
        &mut self,
        vid: Vid,
        builtin: &str,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        let value = self.concrete(vid)?;
        let own_exception = matches!(self.val(vid), Val::Obj { source: None, .. })
            && value.is_instance_of::<pyo3::exceptions::PyBaseException>();
        let fixed = builtin == "callable"
            || own_exception
            || if matches!(self.val(vid), Val::Constructed { .. }) {
                // Made again by the generated code, another object on every call: only what
                // reads its value (a match's, a tuple's of values), not its identity (its
                // hash, `object`'s repr or `==`, an attribute bound to it).
                !matches!(builtin, "hash" | "getattr")
                    && (is_match_of_a_value(&value)
                        || is_immutable(&value)
                        || self.reads_signature_parameters(vid, builtin))
            } else {
                self.computes_the_same_later(&value, builtin, MAX_FOLDED_DEPTH)?
            };
        Ok(fixed.then_some(value))
    }

    /// Whether `builtin` computing with `obj` now gives what it gives on any later call
    /// that passes the guards: values, types, the backend's constants, builtin functions
    /// of no object, builtin containers of those, and instances whose methods for the
    /// builtin are `object`'s (which read the type and identity only). An iterator, a
    /// weak proxy, an object of any other C type, an instance with methods of its own
    /// may give another result under the same identity.
    pub(in crate::sot::translator::vm) fn computes_the_same_later(
        &self,
        obj: &Bound<'py, PyAny>,
        builtin: &str,
        depth: usize,
    ) -> PyResult<bool> {
        if is_immutable(obj) || self.backend.is_constant_operand(obj) || obj.is_exact_instance_of::<PyRange>()
        {
            return Ok(true);
        }
        if obj.is_exact_instance_of::<PyCFunction>() {
            // `len`, `math.sqrt`: of no object, or of a module.
            let receiver = obj.getattr(pyo3::intern!(obj.py(), "__self__"))?;
            return Ok(receiver.is_none() || receiver.is_instance(&self.ops.module_type)?);
        }
        let sized_for_good =
            obj.is_exact_instance_of::<PyTuple>() || obj.is_exact_instance_of::<PyFrozenSet>();
        if builtin == "len" && sized_for_good {
            return Ok(true);
        }
        if depth == 0 {
            return Ok(false);
        }
        if let Ok(dict) = obj.cast_exact::<PyDict>() {
            for (key, value) in dict.iter() {
                if !self.computes_the_same_later(&key, builtin, depth - 1)?
                    || !self.computes_the_same_later(&value, builtin, depth - 1)?
                {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        if is_template(obj) {
            // Its strings, and the values of its interpolations.
            return self.computes_the_same_later(
                &obj.getattr(pyo3::intern!(obj.py(), "values"))?,
                builtin,
                depth - 1,
            );
        }
        if sized_for_good
            || obj.is_exact_instance_of::<PyList>()
            || obj.is_exact_instance_of::<pyo3::types::PySet>()
            || is_dict_view(obj)?
        {
            for item in obj.try_iter()? {
                if !self.computes_the_same_later(&item?, builtin, depth - 1)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        if is_heap_instance(obj)? && self.reads_an_immutable_base_only(obj, builtin)? {
            return Ok(true);
        }
        Ok(is_heap_instance(obj)?
            && !methods_of_builtin(builtin).is_empty()
            && self.own_builtin_method(obj, builtin)?.is_none())
    }

    /// Whether `obj`, an instance of a Python subclass of an immutable scalar type (an
    /// `IntEnum` member, a `str` subclass), runs for `builtin` only methods of that type or
    /// of `object`: they read its immutable value (or type and identity) only.
    pub(in crate::sot::translator::vm) fn reads_an_immutable_base_only(
        &self,
        obj: &Bound<'py, PyAny>,
        builtin: &str,
    ) -> PyResult<bool> {
        let methods = methods_of_builtin(builtin);
        if methods.is_empty() {
            return Ok(false);
        }
        let ty = obj.get_type().into_any();
        let object_methods = crate::sot::translator::pyutil::builtin(self.py, "object")?
            .getattr(pyo3::intern!(self.py, "__dict__"))?;
        for base_name in ["int", "float", "complex", "str", "bytes"] {
            let base = crate::sot::translator::pyutil::builtin(self.py, base_name)?;
            if !obj.is_instance(&base)? {
                continue;
            }
            let base_methods = base.getattr(pyo3::intern!(base.py(), "__dict__"))?;
            for name in methods {
                let Some(found) = self.type_lookup(&ty, name)? else {
                    return Ok(false);
                };
                let inherited = |table: &Bound<'py, PyAny>| table.get_item(*name).is_ok_and(|m| m.is(&found));
                if !inherited(&base_methods) && !inherited(&object_methods) {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// The first of the methods `builtin` runs that the class of `obj` defines other than
    /// `object`'s, by name; None where every one is `object`'s.
    pub(in crate::sot::translator::vm) fn own_builtin_method(
        &self,
        obj: &Bound<'py, PyAny>,
        builtin: &str,
    ) -> PyResult<Option<(&'static str, Bound<'py, PyAny>)>> {
        let ty = obj.get_type().into_any();
        let object_methods = crate::sot::translator::pyutil::builtin(self.py, "object")?
            .getattr(pyo3::intern!(self.py, "__dict__"))?;
        for name in methods_of_builtin(builtin) {
            let found = self.type_lookup(&ty, name)?;
            let default = object_methods.get_item(self.interned_name(name)).ok();
            match (found, default) {
                (Some(found), Some(default)) if found.is(&default) => continue,
                (Some(found), _) => return Ok(Some((name, found))),
                // `len()` of an object without `__len__` (CPython raises TypeError).
                (None, _) => return Ok(Some((name, self.ops.none.clone()))),
            }
        }
        Ok(None)
    }

    /// Whether instances of `cls`, a subclass of tuple, hold nothing beside their items and
    /// are read, compared and iterated by tuple's own methods (a namedtuple's class).
    pub(in crate::sot::translator::vm) fn acts_as_a_tuple(&self, cls: &Bound<'py, PyAny>) -> PyResult<bool> {
        let tuple = self.py.get_type::<PyTuple>().into_any();
        if !cls.is_instance_of::<PyType>()
            || !cls.cast::<PyType>()?.is_subclass(&tuple)?
            || has_instance_dict(cls)
        {
            return Ok(false);
        }
        for name in TUPLE_BEHAVIOUR {
            let same = match (self.type_lookup(cls, name)?, self.type_lookup(&tuple, name)?) {
                (Some(found), Some(own)) => found.is(&own),
                (found, own) => found.is_none() && own.is_none(),
            };
            if !same {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `builtin(x, *rest)` (`repr`, `str`, `format`, `len`) where `x` holds an instance of
    /// a class written in Python whose method for it is Python code: that method inlined,
    /// as CPython calls it, since it may read state that changes under the same identity.
    /// None where the builtin may compute now; a break where the method is not Python.
    pub(in crate::sot::translator::vm) fn inline_builtin_method(
        &mut self,
        builtin: &str,
        x: Vid,
        rest: &[Vid],
    ) -> Res<Option<Vid>> {
        let x = self.realize(x)?;
        let Val::Obj { obj, .. } = self.val(x) else {
            return Ok(None);
        };
        let obj = obj.clone();
        // A backend's constant value (a place, a dtype) computes as a value does.
        if is_immutable(&obj) || !is_heap_instance(&obj)? || self.backend.is_constant_value(&obj) {
            return Ok(None);
        }
        let Some((name, method)) = self.own_builtin_method(&obj, builtin)? else {
            return Ok(None);
        };
        let spec_is_empty = match rest.first() {
            Some(spec) => self
                .concrete(*spec)?
                .cast::<PyString>()
                .is_ok_and(|s| s.is_empty().unwrap_or(false)),
            None => true,
        };
        let simulated = matches!(builtin, "repr" | "str" | "format" | "len")
            && method.is_instance(&self.ops.function_type)?
            // `object.__format__` takes an empty spec only.
            && (name == "__format__" || spec_is_empty);
        if !simulated {
            return graph_break(format!(
                "builtin {builtin}() of a {} object (its {name} is not simulated)",
                qualname(&obj.get_type().into_any())
            ));
        }
        self.guard_type(x);
        let function = self.constant(method);
        let mut args = vec![x];
        if name == "__format__" {
            match rest.first() {
                Some(spec) => args.push(*spec),
                None => args.push(self.constant(PyString::new(self.py, "").into_any())),
            }
        }
        let result = self.call(function, args, vec![])?;
        // What CPython requires of the method's result (else it raises TypeError).
        let result = self.realize(result)?;
        let fits = match self.val(result) {
            Val::Obj { obj, .. } if builtin == "len" => {
                obj.is_exact_instance_of::<PyInt>() && obj.extract::<i64>().is_ok_and(|n| n >= 0)
            }
            Val::Obj { obj, .. } => obj.is_exact_instance_of::<PyString>(),
            _ => false,
        };
        if !fits {
            return graph_break(format!(
                "builtin {builtin}() of a {} object: its {name} gave a value CPython would check",
                qualname(&obj.get_type().into_any())
            ));
        }
        Ok(Some(result))
    }
}

/// The methods of `re`'s patterns and matches computed while translating: those giving a
/// value, a new container or a match. Not `finditer` and `scanner`, whose objects hold
/// their progress.
const REGEX_METHODS: &[&str] = &[
    "search",
    "match",
    "fullmatch",
    "findall",
    "split",
    "sub",
    "subn",
    "group",
    "groups",
    "groupdict",
    "start",
    "end",
    "span",
    "expand",
    "__getitem__",
    "__copy__",
    "__deepcopy__",
];

/// Whether `method` (bound, or its type's) is one of a pattern's or a match's that is not
/// computed while translating.
fn is_stateful_regex_method(method: &Bound<'_, PyAny>) -> bool {
    let py = method.py();
    let owner = match method.getattr(pyo3::intern!(py, "__self__")) {
        Ok(receiver) => receiver.get_type().into_any(),
        Err(_) => match method.getattr(pyo3::intern!(py, "__objclass__")) {
            Ok(owner) => owner,
            Err(_) => return false,
        },
    };
    regex_type(&owner).is_some()
        && !method
            .getattr(pyo3::intern!(py, "__name__"))
            .and_then(|name| name.extract::<String>())
            .is_ok_and(|name| REGEX_METHODS.contains(&name.as_str()))
}

/// Whether every replacement field of the `str.format` template `template` names an
/// argument without reading an attribute or an item of it (`{0.n}`, `{k[1]}`), nested
/// fields of a format spec (`{:{width}}`) included.
fn fields_format_only(template: &str) -> bool {
    // One entry per open field: whether its name is still being read.
    let mut open: Vec<bool> = Vec::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, open.last().copied()) {
            ('{', None) if chars.peek() == Some(&'{') => {
                chars.next();
            }
            ('}', None) if chars.peek() == Some(&'}') => {
                chars.next();
            }
            ('{', _) => open.push(true),
            ('}', Some(_)) => {
                open.pop();
            }
            ('.' | '[', Some(true)) => return false,
            (':' | '!', Some(true)) => {
                if let Some(in_name) = open.last_mut() {
                    *in_name = false;
                }
            }
            _ => {}
        }
    }
    true
}
