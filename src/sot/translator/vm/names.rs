//! Variables, cells and globals; modules already imported.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// The global `key` names (an interned string: a code's `co_names` entry as it is).
    pub(super) fn global(&mut self, frame: &Frame<'py>, key: &Bound<'py, PyString>) -> Res<Vid> {
        let name = key.to_str()?;
        if let Some((_, stored)) = self.stored_globals.iter().rev().find(|(n, _)| n == name) {
            return match stored {
                Some(vid) => Ok(*vid),
                None => Err(Problem::Python(pyo3::exceptions::PyNameError::new_err(format!(
                    "name '{name}' is not defined"
                )))),
            };
        }
        // A plain dict is read as `LOAD_GLOBAL` reads it, without the KeyError a missing
        // name (a builtin's) would raise and drop; another mapping through its `__getitem__`.
        let in_globals = match frame.globals.cast_exact::<PyDict>() {
            Ok(globals) => globals.get_item(key)?,
            Err(_) => frame.globals.get_item(key).ok(),
        };
        if let Some(value) = &in_globals {
            self.read_outside_regions(frame.globals.as_any(), name, value)?;
        }
        let top_globals = self.reads_top_globals(frame);
        if let Some(value) = in_globals {
            if is_lazy_import(&value) {
                // Pinned while unresolved, a guard the break rests on (kept when the
                // instruction's own guards go): once the program resolves it, the guard
                // fails and the frame is translated again with the module.
                if top_globals {
                    let source = self.intern(Source::Global(StrongRef::new(key.as_any())));
                    self.break_guards.push((source, Check::Id(Pin::new(&value))));
                }
                return graph_break(format!(
                    "global {name} is a lazy import not used yet (reading it imports)"
                ));
            }
            if top_globals {
                return Ok(self.value_of_source(Source::Global(StrongRef::new(key.as_any())), value));
            }
            return self.foreign_global(frame, key, value);
        }
        self.read_builtin(frame, key, || format!("name '{name}' is not defined"))
    }

    /// The builtin `key` names (interned) as the frame reads it (guarded where the top
    /// frame reads it), or a `NameError` with `missing`'s message.
    pub(super) fn read_builtin(
        &mut self,
        frame: &Frame<'py>,
        key: &Bound<'py, PyString>,
        missing: impl FnOnce() -> String,
    ) -> Res<Vid> {
        // The builtins' namespace, not the module's attributes (a module has
        // `__annotations__` and the like that no name lookup finds).
        let value = self
            .ops
            .builtins
            .getattr(pyo3::intern!(self.py, "__dict__"))?
            .get_item(key)
            .map_err(|_| Problem::Python(pyo3::exceptions::PyNameError::new_err(missing())))?;
        if self.reads_top_globals(frame) {
            return Ok(self.value_of_source(Source::Builtin(StrongRef::new(key.as_any())), value));
        }
        // A builtin read by a callee of another module: a constant of the translation.
        Ok(self.constant(value))
    }

    /// Whether `frame` reads the translated frame's globals (its module's names are sources
    /// of the translation; another module's are reached through its function, or constants).
    fn reads_top_globals(&self, frame: &Frame<'py>) -> bool {
        self.top_globals.as_ref().is_some_and(|g| frame.globals.is(g))
    }

    /// A global of an inlined function from another module: read through the
    /// function's `__globals__` where the function has a source, else a constant
    /// only if it is immutable or callable (module-level functions and classes).
    fn foreign_global(
        &mut self,
        frame: &Frame<'py>,
        name: &Bound<'py, PyString>,
        value: Bound<'py, PyAny>,
    ) -> Res<Vid> {
        if let Some(globals) = frame.globals_source {
            return Ok(self.value_of_source(Source::Item(globals, StrongRef::new(name.as_any())), value));
        }
        if is_immutable(&value) || value.is_callable() {
            Ok(self.constant(value))
        } else {
            unsupported(format!(
                "global {name} of another module, reached without a source"
            ))
        }
    }

    pub(super) fn cell_of(&self, frame: &Frame<'py>, arg: Arg) -> Res<usize> {
        match self.val(frame.locals[Self::var_at(arg)?]) {
            Val::Cell(c) => Ok(*c),
            _ => unsupported("a cell variable without its cell"),
        }
    }

    pub(super) fn store_cell(&mut self, cell: usize, value: Option<Vid>) -> Res<()> {
        // A cell of the translated function's closure lives on after the call: its
        // new contents are stored after the graph runs.
        if cell < self.top_freevars {
            let Some(value) = value else {
                return unsupported("deletion of a variable of an enclosing function");
            };
            self.side_effects
                .push(SideEffect::StoreFree { index: cell, value });
        } else if let Some(source) = self.outside_cells.get(&cell).copied() {
            let Some(value) = value else {
                return unsupported("deletion of a variable of an enclosing function");
            };
            self.side_effects
                .push(SideEffect::StoreCell { cell: source, value });
        }
        self.cells[cell] = value;
        Ok(())
    }

    pub(super) fn store_global(&mut self, frame: &Frame<'py>, name: String, value: Option<Vid>) -> Res<()> {
        if !self.reads_top_globals(frame) {
            return unsupported("assignment to a global of another module");
        }
        self.side_effects.push(match value {
            Some(value) => SideEffect::StoreGlobal {
                name: name.clone(),
                value,
            },
            None => SideEffect::DeleteGlobal { name: name.clone() },
        });
        self.stored_globals.push((name, value));
        Ok(())
    }

    /// Whether storing over (or deleting) a variable of the top frame holding `old` drops
    /// an object whose death is watched, that nothing else the translation knows holds: an
    /// item of a list from the frame that the translation emptied (what a resume function
    /// takes from its box). The generated code stores at its end or at a break, later than
    /// the original drops it.
    pub(super) fn drops_a_watched_object(&self, old: Vid) -> Res<bool> {
        let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(old)
        else {
            return Ok(false);
        };
        let Source::Item(container, _) = &self.sources.sources[*source] else {
            return Ok(false);
        };
        let emptied = self
            .by_source
            .get(container)
            .and_then(|list| match self.val(*list) {
                Val::Obj { obj: list, .. } => self.mutated.get(&(list.as_ptr() as usize)).copied(),
                _ => None,
            })
            .is_some_and(|copy| matches!(self.val(copy), Val::List(items) if items.is_empty()));
        if !emptied {
            return Ok(false);
        }
        // Watched: a proxy (using it raises once the object died), a reference with a
        // callback (a WeakValueDictionary's, a WeakSet's...), a `__del__`. A plain reference
        // without one is not counted: framehook's own identity guards hold such ones.
        let weakref = import(self.py, "weakref")?;
        let proxies = (
            weakref.getattr(pyo3::intern!(weakref.py(), "ProxyType"))?,
            weakref.getattr(pyo3::intern!(weakref.py(), "CallableProxyType"))?,
        );
        for reference in weakref
            .getattr(pyo3::intern!(weakref.py(), "getweakrefs"))?
            .call1((obj,))?
            .try_iter()?
        {
            let reference = reference?;
            let kind = reference.get_type();
            if kind.is(&proxies.0)
                || kind.is(&proxies.1)
                || !reference
                    .getattr(pyo3::intern!(reference.py(), "__callback__"))?
                    .is_none()
            {
                return Ok(true);
            }
        }
        Ok(self.type_lookup(&obj.get_type().into_any(), "__del__")?.is_some())
    }

    /// The module `import name` finds in `sys.modules` without running the import system
    /// (as CPython's import answers for a module imported and initialized), guarded to be
    /// that module there. One not imported yet, or still running its body, is imported
    /// for real: a break.
    pub(super) fn imported_module(&mut self, name: &str) -> Res<Vid> {
        let modules = import(self.py, "sys")?.getattr("modules")?;
        if self.mutated.contains_key(&(modules.as_ptr() as usize)) {
            // Its copy holds what the import would find (markupsafe's test deletes entries
            // to import a module anew).
            return unsupported(format!(
                "import of {name} after the translation changed sys.modules"
            ));
        }
        let module = modules.get_item(name).ok().filter(|m| !m.is_none());
        let Some(module) = module else {
            return unsupported(format!("import of {name} (not imported yet)"));
        };
        let initializing = match module.getattr(pyo3::intern!(module.py(), "__spec__")) {
            Ok(spec) if !spec.is_none() => spec
                .getattr("_initializing")
                .map_or(Ok(false), |flag| flag.is_truthy())?,
            _ => false,
        };
        if initializing {
            return unsupported(format!("import of {name} (its body is still running)"));
        }
        let holder = self.intern(Source::Held(StrongRef::new(&modules)));
        let key = PyString::new(self.py, name).into_any();
        let source = self.intern(Source::Item(holder, StrongRef::new(&key)));
        self.add_guard(source, Check::Id(Pin::new(&module)));
        Ok(self.value_of_source(Source::Item(holder, StrongRef::new(&key)), module))
    }

    /// The absolute name of `from .name import ...` (`level` dots) in the frame's package,
    /// as `importlib._bootstrap._resolve_name` makes it: from the frame's `__package__` (a
    /// str, guarded), where its `__spec__` agrees (else CPython warns: a break). A package
    /// found otherwise (`__package__` None), or too few levels, is left to CPython.
    pub(super) fn relative_import_name(
        &mut self,
        frame: &Frame<'py>,
        name: &str,
        level: usize,
    ) -> Res<String> {
        for needed in ["__package__", "__spec__"] {
            if !frame.globals.contains(needed)? {
                return unsupported(format!("a relative import in a namespace without {needed}"));
            }
        }
        let package = self.global(frame, &self.interned_name("__package__"))?;
        let package = self.concrete(package)?;
        if !package.is_exact_instance_of::<PyString>() {
            return unsupported("a relative import in a module without a __package__ str");
        }
        let package: String = package.extract()?;
        let spec = self.global(frame, &self.interned_name("__spec__"))?;
        let spec_object = self.concrete(spec)?;
        if !spec_object.is_none() {
            // `ModuleSpec.parent`, read as the property computes it (its type guarded).
            let module_spec = import(self.py, "importlib.machinery")?.getattr("ModuleSpec")?;
            if !self.type_of(spec)?.is(&module_spec) {
                return unsupported("a relative import in a module whose __spec__ is no ModuleSpec");
            }
            let spec_name = self.load_attr(spec, "name")?;
            let spec_name: String = self.concrete(spec_name)?.extract()?;
            let locations = self.load_attr(spec, "submodule_search_locations")?;
            let none = self.none();
            let parent = if self.identical(locations, none)? {
                spec_name
                    .rsplit_once('.')
                    .map_or("", |(parent, _)| parent)
                    .to_owned()
            } else {
                spec_name
            };
            if parent != package {
                return unsupported("a relative import where __package__ and __spec__.parent differ");
            }
        }
        let bits: Vec<&str> = package.rsplitn(level, '.').collect();
        if package.is_empty() || bits.len() < level {
            return unsupported("a relative import beyond the top-level package");
        }
        let base = bits[bits.len() - 1];
        Ok(if name.is_empty() {
            base.to_owned()
        } else {
            format!("{base}.{name}")
        })
    }

    /// Whether the frame's import function is CPython's own (`builtins.__import__` as the
    /// interpreter made it, guarded); another may do anything: a break.
    pub(super) fn check_import_function(&mut self, frame: &Frame<'py>) -> Res<()> {
        let function = self.global(frame, &self.interned_name("__import__"))?;
        let object = self.concrete(function)?;
        let own = object.is_exact_instance_of::<PyCFunction>()
            && object
                .getattr(pyo3::intern!(object.py(), "__self__"))
                .is_ok_and(|module| module.is(&self.ops.builtins));
        if !own {
            return unsupported("import through a replaced __import__");
        }
        Ok(())
    }
}
