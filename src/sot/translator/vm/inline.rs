//! Inlining Python functions: functions made or read, arguments bound, frames run.

use super::*;
use crate::hookapi::pyobject::{function_attr, FunctionPart};
use pyo3::intern;

impl<'py, 'b> Vm<'py, 'b> {
    pub(super) fn make_function(&mut self, frame: &mut Frame<'py>, arg: Arg) -> Res<()> {
        let flags = match arg {
            Arg::Int(n) => n as usize,
            _ => 0,
        };
        // The code (and before 3.11 the qualified name) on top, then the flagged extras.
        let base = (1 - self.stack_effect("MAKE_FUNCTION", 0, false)?) as usize;
        let mut top = Self::pop_n(frame, base)?;
        let code_vid = top.remove(0);
        let code = self.concrete(code_vid)?;
        let name: String = code.getattr(pyo3::intern!(code.py(), "co_name"))?.extract()?;
        // Before 3.11 the qualified name comes on the stack, after it in the code object.
        let qualname = match top.first() {
            Some(qualname) => self.concrete(*qualname)?,
            None => code.getattr(pyo3::intern!(code.py(), "co_qualname"))?,
        };
        let function = Function {
            code,
            globals: frame.globals.clone(),
            name,
            qualname: qualname.extract()?,
            defaults: Vec::new(),
            kwdefaults: Vec::new(),
            closure: Vec::new(),
            annotations: None,
            annotate: None,
            object: None,
            stored: Vec::new(),
        };
        let vid = self.push_val(Val::Function(Box::new(function)));
        for flag in [16, 8, 4, 2, 1] {
            if flags & flag != 0 {
                let attribute = Self::pop(frame)?;
                self.set_function_attribute(vid, flag, attribute)?;
            }
        }
        frame.stack.push(vid);
        Ok(())
    }

    pub(super) fn set_function_attribute(&mut self, function: Vid, flag: usize, attribute: Vid) -> Res<()> {
        let items = match flag {
            1 | 8 => self.items_of(attribute)?,
            _ => Vec::new(),
        };
        let kwdefaults = if flag == 2 {
            self.dict_items(attribute)?
        } else {
            Vec::new()
        };
        let mut names = Vec::new();
        for (k, v) in kwdefaults {
            names.push((self.concrete(k)?.extract::<String>()?, v));
        }
        let cells: Vec<usize> = items
            .iter()
            .filter_map(|i| {
                if let Val::Cell(c) = self.val(*i) {
                    Some(*c)
                } else {
                    None
                }
            })
            .collect();
        // Annotations come as a dict (3.9) or as a tuple of name, value pairs, which the
        // function's `__annotations__` turns into the dict this is.
        let annotations = if flag != 4 {
            None
        } else if matches!(self.val(attribute), Val::Dict(_))
            || matches!(self.val(attribute), Val::Obj { obj, .. } if obj.is_exact_instance_of::<PyDict>())
        {
            Some(attribute)
        } else {
            let items = self.items_of(attribute)?;
            let pairs = items.chunks_exact(2).map(|pair| (pair[0], pair[1])).collect();
            Some(self.push_val(Val::Dict(pairs)))
        };
        let Val::Function(f) = &mut self.values[function] else {
            return unsupported("SET_FUNCTION_ATTRIBUTE on a value that is no function");
        };
        match flag {
            1 => f.defaults = items,
            2 => f.kwdefaults = names,
            4 => f.annotations = annotations,
            8 => f.closure = cells,
            16 => f.annotate = Some(attribute),
            _ => return unsupported(format!("function attribute flag {flag}")),
        }
        Ok(())
    }

    /// A function object as the VM's function value, its closure's cells read from the
    /// function (their contents guarded through the function's source).
    pub(super) fn function_of(
        &mut self,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
    ) -> Res<Function<'py>> {
        let py = self.py;
        // An exact function's parts read straight from it (each call of one asks).
        let code = function_attr(obj, FunctionPart::Code)?;
        let raw_defaults = function_attr(obj, FunctionPart::Defaults)?;
        let raw_kwdefaults = function_attr(obj, FunctionPart::KwDefaults)?;
        // A default is one object shared by every call (a list one call appends to, the
        // next sees; dataclasses' sentinel): read through the function, as any object
        // reached from the frame. A function reached without a source is one the
        // translation holds (a method found on a pinned class).
        let owner = match source {
            Some(s) => Some(s),
            None if raw_defaults.is_none() && raw_kwdefaults.is_none() => None,
            None => Some(self.intern(Source::Held(StrongRef::new(obj)))),
        };
        // What the call's guard of the function says is None needs no guard of its own.
        let absent = source.map_or(AbsentDefaults::NOT_SAID, |s| self.guarded_absent_defaults(s));
        let mut defaults = Vec::new();
        if let Some(owner) = owner.filter(|_| !(raw_defaults.is_none() && absent.positional)) {
            let defaults_source = self.intern(Source::Attr(owner, self.name_ref("__defaults__")));
            if raw_defaults.is_none() {
                self.add_guard(defaults_source, Check::Id(Pin::new(&raw_defaults)));
            } else {
                self.add_guard(defaults_source, Check::Len(raw_defaults.len()?));
                for (i, d) in raw_defaults.try_iter()?.enumerate() {
                    let item = Source::Item(
                        defaults_source,
                        StrongRef::new(&i.into_pyobject(self.py)?.into_any()),
                    );
                    defaults.push(self.value_of_source(item, d?));
                }
            }
        }
        let mut kwdefaults = Vec::new();
        if let Some(owner) = owner.filter(|_| !(raw_kwdefaults.is_none() && absent.keyword)) {
            let kw_source = self.intern(Source::Attr(owner, self.name_ref("__kwdefaults__")));
            if raw_kwdefaults.is_none() {
                self.add_guard(kw_source, Check::Id(Pin::new(&raw_kwdefaults)));
            } else if let Ok(dict) = raw_kwdefaults.cast_exact::<PyDict>() {
                self.add_guard(
                    kw_source,
                    Check::Keys(StrongRef::new(PyTuple::new(self.py, dict.keys())?.as_any())),
                );
                for (k, v) in dict.iter() {
                    let value = self.value_of_source(Source::Item(kw_source, StrongRef::new(&k)), v);
                    kwdefaults.push((k.extract::<String>()?, value));
                }
            } else {
                // The keys guard holds only for exact dicts: a subclass would never hit the cache.
                return graph_break("a function whose __kwdefaults__ is a dict subclass");
            }
        }
        let mut closure = Vec::new();
        let raw_closure = obj.getattr(pyo3::intern!(obj.py(), "__closure__"))?;
        if !raw_closure.is_none() {
            for (index, cell) in raw_closure.try_iter()?.enumerate() {
                let cell = cell?;
                // A cell the translation knows already (the translated frame's own free
                // variables) is that cell: stores through one are seen through the other.
                if let Some(known) = self.cell_objects.get(&(cell.as_ptr() as usize)).copied() {
                    self.closure_cell_read(known);
                    closure.push(known);
                    continue;
                }
                let cell_source = match source {
                    Some(s) => {
                        let closure_source = self.intern(Source::Attr(s, self.name_ref("__closure__")));
                        let index_key = index.into_pyobject(self.py)?.into_any();
                        self.intern(Source::Item(closure_source, StrongRef::new(&index_key)))
                    }
                    None => self.intern(Source::Held(StrongRef::new(&cell))),
                };
                // Read through the cell (another closure over it may store into it between
                // calls), as a default through the function.
                let content =
                    match cell.getattr(pyo3::intern!(cell.py(), "cell_contents")) {
                        Ok(content) => Some(self.value_of_source(
                            Source::Attr(cell_source, self.name_ref("cell_contents")),
                            content,
                        )),
                        Err(_) => None,
                    };
                self.cells.push(content);
                closure.push(self.cells.len() - 1);
                self.outside_cells.insert(self.cells.len() - 1, cell_source);
                // Another function over the same cell (a method called twice) shares it.
                self.cell_objects
                    .insert(cell.as_ptr() as usize, self.cells.len() - 1);
            }
        }
        Ok(Function {
            code,
            globals: function_attr(obj, FunctionPart::Globals)?,
            name: obj.getattr(intern!(py, "__name__"))?.extract()?,
            qualname: obj.getattr(intern!(py, "__qualname__"))?.extract()?,
            defaults,
            kwdefaults,
            closure,
            annotations: None,
            annotate: None,
            object: Some(obj.clone()),
            stored: Vec::new(),
        })
    }

    /// `function(*args, **kwargs)` of a Python function, inlined.
    pub(super) fn inline_function(
        &mut self,
        function: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<Vid> {
        let inlined = self.function_of(function, source)?;
        self.inline(&inlined, args, kwargs, source)
    }

    /// Runs a Python function's code in a new VM frame.
    pub(super) fn inline(
        &mut self,
        function: &Function<'py>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
        source: Option<SourceId>,
    ) -> Res<Vid> {
        if self.depth >= MAX_INLINE_DEPTH {
            return self.bounded_break(
                BreakBound::Translation,
                "unsupported call: inlining too deep (recursion)".to_owned(),
            );
        }
        let info = self.backend.code_info(&function.code)?;
        if info.flags & CO_COROUTINE_LIKE != 0 {
            return graph_break(format!("unsupported call: {} is a coroutine", function.name));
        }
        let mut frame = self.new_frame(&function.code, &info, function.globals.clone())?;
        if let Some(top) = self.top_globals.as_ref() {
            if !function.globals.is(top) {
                let globals = match source {
                    Some(s) => Source::Attr(s, self.name_ref("__globals__")),
                    None => Source::Held(StrongRef::new(&function.globals)),
                };
                frame.globals_source = Some(self.intern(globals));
            }
        }
        self.bind_arguments(&mut frame, &info, function, args, kwargs)?;
        self.setup_cells(&mut frame, &function.closure);
        if info.flags & CO_GENERATOR != 0 {
            // Made, not run: it runs a step at a time as it is iterated.
            let state = GeneratorState {
                frame,
                suspended: false,
                finished: false,
                returned: None,
                qualname: function.qualname.clone(),
                handling: false,
            };
            return Ok(self.push_val(Val::Generator(std::rc::Rc::new(std::cell::RefCell::new(state)))));
        }
        self.depth += 1;
        let saved_location = self.location.clone();
        let result = self.run_inlined(&mut frame);
        self.depth -= 1;
        if let Err(problem) = &result {
            self.saw_break(&function.code, &frame, problem);
        }
        // On a problem the location stays the callee's (a break there happens at the
        // caller's call, which then runs as a call).
        let returned = result?;
        self.location = saved_location;
        Ok(returned)
    }

    pub(super) fn bind_arguments(
        &mut self,
        frame: &mut Frame<'py>,
        info: &CodeInfo,
        function: &Function<'py>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<()> {
        let positional = info.argcount;
        let vars = std::sync::Arc::clone(&frame.vars);
        let names = &vars.varnames;
        let mut bound: Vec<Option<Vid>> = vec![None; info.total_arguments()];
        let mut extra_positional = Vec::new();
        for (i, a) in args.into_iter().enumerate() {
            if i < positional {
                bound[i] = Some(a);
            } else {
                extra_positional.push(a);
            }
        }
        let varargs_slot = positional + info.kwonly;
        let has_varargs = info.flags & CO_VARARGS != 0;
        let has_varkw = info.flags & CO_VARKEYWORDS != 0;
        if !extra_positional.is_empty() && !has_varargs {
            return unbound_arguments(&function.name);
        }
        let mut extra_keywords = Vec::new();
        for (name, value) in kwargs {
            let index = names[..positional + info.kwonly].iter().position(|n| *n == name);
            match index {
                Some(i) if i >= info.posonly => {
                    if bound[i].is_some() {
                        return unbound_arguments(&function.name);
                    }
                    bound[i] = Some(value);
                }
                _ if has_varkw => {
                    let key = self.constant(PyString::new(self.py, &name).into_any());
                    extra_keywords.push((key, value));
                }
                _ => {
                    return unbound_arguments(&function.name);
                }
            }
        }
        let first_default = positional.saturating_sub(function.defaults.len());
        for (i, slot) in bound.iter_mut().enumerate().take(positional) {
            if slot.is_none() && i >= first_default {
                *slot = Some(function.defaults[i - first_default]);
            }
        }
        for (i, slot) in bound
            .iter_mut()
            .enumerate()
            .take(positional + info.kwonly)
            .skip(positional)
        {
            if slot.is_none() {
                *slot = function
                    .kwdefaults
                    .iter()
                    .find(|(n, _)| *n == names[i])
                    .map(|(_, v)| *v);
            }
        }
        if has_varargs {
            bound[varargs_slot] = Some(self.push_val(Val::Tuple(extra_positional)));
        }
        if has_varkw {
            bound[varargs_slot + usize::from(has_varargs)] = Some(self.push_val(Val::Dict(extra_keywords)));
        }
        for (i, value) in bound.into_iter().enumerate() {
            match value {
                Some(v) => frame.locals[i] = v,
                None => return unbound_arguments(&function.name),
            }
        }
        Ok(())
    }
}

/// Arguments that do not bind to a function's parameters: CPython's TypeError (whose
/// message names the function and counts the arguments its own way) is raised by the call
/// run for real.
fn unbound_arguments<T>(function: &str) -> Res<T> {
    unsupported(format!("a call of {function}() whose arguments do not bind"))
}
