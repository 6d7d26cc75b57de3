//! Pattern matching (match statements).

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// The running version's stack effect of opcode `name` with `oparg`, when it jumps or not
    /// (the VM reads the effect of the opcodes whose stack use differs between versions).
    pub(super) fn stack_effect(&self, name: &str, oparg: u32, jump: bool) -> Res<i64> {
        let info = self
            .table
            .require(name)
            .ok()
            .and_then(|number| self.table.op(number));
        info.and_then(|info| info.stack_effect(oparg, jump)).map_or_else(
            || unsupported(format!("{name} has no stack effect in this version's table")),
            Ok,
        )
    }

    /// Whether the version's match opcode `name` also pushes a success flag (3.10): its
    /// stack effect is `flagged`.
    pub(super) fn pushes_match_flag(&self, name: &str, flagged: i64) -> Res<bool> {
        Ok(self.stack_effect(name, 0, false)? == flagged)
    }

    /// `MATCH_MAPPING` / `MATCH_SEQUENCE`: the subject's type's flags decide.
    pub(super) fn match_kind(&mut self, subject: Vid, mapping: bool) -> Res<bool> {
        const SEQUENCE: u64 = 1 << 5;
        const MAPPING: u64 = 1 << 6;
        let ty = self.type_of(subject)?;
        let flags: u64 = ty.getattr(pyo3::intern!(ty.py(), "__flags__"))?.extract()?;
        Ok(flags & if mapping { MAPPING } else { SEQUENCE } != 0)
    }

    /// `MATCH_CLASS`: the attributes a class pattern binds, or None where the subject does
    /// not match. A pattern CPython rejects (a class that is not a type, a `__match_args__`
    /// that is not a tuple of strings, too many positional sub-patterns, an attribute named
    /// twice) breaks, so that the instruction raises its own error where it runs.
    pub(super) fn match_class(
        &mut self,
        subject: Vid,
        class: Vid,
        count: usize,
        names: Vid,
    ) -> Res<Option<Vid>> {
        let class = self.concrete(class)?;
        if !class.is_instance_of::<PyType>() {
            return unsupported("a class pattern whose class is not a type");
        }
        let ty = self.type_of(subject)?;
        if !self.builtin("issubclass")?.call1((&ty, &class))?.is_truthy()? {
            return Ok(None);
        }
        let mut attributes: Vec<Bound<'py, PyAny>> = Vec::new();
        // Types flagged `_Py_TPFLAGS_MATCH_SELF` (bool, int, str, list... and their
        // subclasses) match one positional pattern against the subject itself, unless
        // they define `__match_args__`.
        let mut match_self = false;
        if count > 0 {
            match class.getattr(pyo3::intern!(class.py(), "__match_args__")) {
                Ok(match_args) => {
                    let Ok(match_args) = match_args.cast_exact::<PyTuple>() else {
                        return unsupported("a __match_args__ that is not a tuple");
                    };
                    if match_args.len() < count {
                        return unsupported("more positional sub-patterns than __match_args__ names");
                    }
                    for name in match_args.iter().take(count) {
                        if !name.is_exact_instance_of::<PyString>() {
                            return unsupported("a __match_args__ name that is not a str");
                        }
                        attributes.push(name);
                    }
                }
                Err(err) if err.is_instance_of::<pyo3::exceptions::PyAttributeError>(self.py) => {
                    let flags: u64 = class.getattr(pyo3::intern!(class.py(), "__flags__"))?.extract()?;
                    match_self = flags & MATCH_SELF_FLAG != 0;
                    if !match_self || count > 1 {
                        return unsupported("more positional sub-patterns than the class accepts");
                    }
                }
                Err(err) => return Err(err.into()),
            }
        }
        attributes.extend(
            self.concrete(names)?
                .cast_into::<PyTuple>()
                .map_err(PyErr::from)?
                .iter(),
        );
        if names_one_twice(self.py, &attributes)? {
            return unsupported("a class pattern naming an attribute twice");
        }
        let mut values = if match_self { vec![subject] } else { Vec::new() };
        for name in attributes {
            match self.load_attr(subject, &name.extract::<String>()?) {
                Ok(v) => values.push(v),
                Err(Problem::Python(err))
                    if err.is_instance_of::<pyo3::exceptions::PyAttributeError>(self.py) =>
                {
                    return Ok(None)
                }
                Err(other) => return Err(other),
            }
        }
        Ok(Some(self.push_val(Val::Tuple(values))))
    }

    /// `MATCH_KEYS`: the values of a mapping pattern's keys, or None where one is missing.
    /// CPython looks each up with `subject.get(key, <missing>)`, which for an exact dict
    /// is `key in subject` then `subject[key]`; a key named twice breaks (CPython raises).
    pub(super) fn match_keys(&mut self, subject: Vid, keys: Vid) -> Res<Option<Vid>> {
        let keys = self.items_of(keys)?;
        let concrete_keys = keys.iter().map(|k| self.concrete(*k)).collect::<Res<Vec<_>>>()?;
        if names_one_twice(self.py, &concrete_keys)? {
            return unsupported("a mapping pattern naming a key twice");
        }
        // The default `get` returns for a missing key: a fresh object, where not an exact dict.
        let missing = if self.type_of(subject)?.is(self.py.get_type::<PyDict>()) {
            None
        } else {
            let object = self.builtin("object")?.call0()?;
            Some((self.constant(object.clone()), object))
        };
        let mut values = Vec::with_capacity(keys.len());
        for key in keys {
            let value = match &missing {
                None => {
                    if !self.contains(subject, key)? {
                        return Ok(None);
                    }
                    self.subscript(subject, key)?
                }
                Some((missing, object)) => {
                    let get = self.load_attr(subject, "get")?;
                    let value = self.call(get, vec![key, *missing], vec![])?;
                    if value == *missing || self.concrete(value)?.is(object) {
                        return Ok(None);
                    }
                    value
                }
            };
            values.push(value);
        }
        Ok(Some(self.push_val(Val::Tuple(values))))
    }
}

/// Whether a pattern names one attribute or key twice, as CPython's `seen` set tells it.
fn names_one_twice(py: Python<'_>, names: &[Bound<'_, PyAny>]) -> PyResult<bool> {
    Ok(pyo3::types::PySet::new(py, names)?.len() < names.len())
}

/// `_Py_TPFLAGS_MATCH_SELF` (3.10+): a class pattern's one positional sub-pattern matches
/// the subject itself.
const MATCH_SELF_FLAG: u64 = 1 << 22;
