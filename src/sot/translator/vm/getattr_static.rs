//! `inspect.getattr_static(obj, name[, default])` of an object whose class keeps no
//! instance dict: answered from the class's MRO, as the function finds it, rather than by
//! simulating it (narwhals asks it of every array scikit-learn validates; simulated, with
//! the `functools.lru_cache`d walk of the MRO it makes on 3.12+, it was a fifth of the
//! instructions the scikit-learn bench's first calls simulated).
//!
//! Where the object's class and every class of its MRO are plain (their metaclass `type`,
//! no `__dict__` entry in their namespaces, no instance dict: `__dictoffset__` 0), the
//! function's instance lookup finds nothing and its class lookup is the first namespace
//! of the MRO holding the name (the same on 3.9-3.15): the raw entry (no descriptor run),
//! else `default`, else `AttributeError(name)`. What that rests on holds on later calls:
//! the object's class is guarded (a class defined in Python with its attributes, its
//! version tag), or cannot change (a builtin type). Any other object (a class, an
//! instance with a `__dict__`, a class of another metaclass) is simulated as before.

use super::*;

impl<'py> Vm<'py, '_> {
    /// What `function(*args, **kwargs)` returns, where `function` is
    /// `inspect.getattr_static` and the object is one it answers for from its class alone;
    /// else None (the call is simulated).
    pub(super) fn modeled_getattr_static(
        &mut self,
        function: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let getattr_static = self.getattr_static.get_or_init(|| {
            let modules =
                import(self.py, "sys").and_then(|sys| sys.getattr(pyo3::intern!(self.py, "modules")));
            modules
                .and_then(|modules| modules.get_item("inspect"))
                .and_then(|inspect| inspect.getattr(pyo3::intern!(self.py, "getattr_static")))
                .ok()
        });
        if !getattr_static.as_ref().is_some_and(|known| function.is(known)) {
            return Ok(None);
        }
        let (target, name, default) = match (args, kwargs) {
            ([target, name], []) => (*target, *name, None),
            ([target, name, default], []) => (*target, *name, Some(*default)),
            ([target, name], [(keyword, default)]) if keyword == "default" => {
                (*target, *name, Some(*default))
            }
            _ => return Ok(None),
        };
        let Some(name) = self.constant_str(name) else {
            return Ok(None);
        };
        let Some(class) = self.plain_class_of(target)? else {
            return Ok(None);
        };
        match self.own_class_entry(&class, &name)? {
            Some(found) => Ok(Some(found)),
            None => match default {
                Some(default) => Ok(Some(default)),
                None => Err(Problem::Python(PyAttributeError::new_err(name))),
            },
        }
    }

    /// The value's name argument, where it is an exact str the translation knows.
    fn constant_str(&self, vid: Vid) -> Option<String> {
        match self.val(vid) {
            Val::Obj { obj, .. } if obj.is_exact_instance_of::<PyString>() => obj.extract().ok(),
            _ => None,
        }
    }

    /// The class of `vid` where `getattr_static` finds its attributes in that class's MRO
    /// alone (see the module's comment), the class guarded where it can change; else None.
    fn plain_class_of(&mut self, vid: Vid) -> Res<Option<Bound<'py, PyType>>> {
        let Ok(class) = self.type_of(vid)?.cast_into::<PyType>() else {
            return Ok(None);
        };
        let guarded = matches!(self.val(vid), Val::Obj { source: Some(_), .. });
        if crate::hookapi::pyobject::type_is_mutable(&class) && !guarded {
            return Ok(None);
        }
        let type_type = self.py.get_type::<PyType>();
        let dict_name = self.interned_name("__dict__");
        for entry in class.mro().iter() {
            // A class is an instance of its metaclass: `getattr_static` of a class also
            // reads the metaclass's attributes.
            if entry.is(&type_type) || !entry.get_type().is(&type_type) {
                return Ok(None);
            }
            let namespace = entry.getattr(&dict_name)?;
            if namespace.contains(&dict_name)? {
                return Ok(None);
            }
        }
        let dict_offset: isize = class
            .getattr(pyo3::intern!(self.py, "__dictoffset__"))?
            .extract()?;
        if dict_offset != 0 {
            return Ok(None);
        }
        // Its attributes, bases included, are the guard's (the class's version tag).
        self.guard_type(vid);
        Ok(Some(class))
    }

    /// The raw entry `name` of the first class of `class`'s MRO whose namespace holds it, read
    /// through that namespace as `getattr_static` reads it (the class pinned); None where
    /// none does.
    fn own_class_entry(&mut self, class: &Bound<'py, PyType>, name: &str) -> Res<Option<Vid>> {
        let key = self.interned_name(name);
        for entry in class.mro().iter() {
            let namespace = entry.getattr(pyo3::intern!(self.py, "__dict__"))?;
            if !namespace.contains(&key)? {
                continue;
            }
            let held = self.intern(Source::Held(StrongRef::new(&entry)));
            self.add_guard(held, Check::Id(Pin::new(&entry)));
            let namespace = self.value_of_source(Source::Attr(held, self.name_ref("__dict__")), namespace);
            let key = self.constant(key.into_any());
            let Some(namespace) = self.class_namespace(namespace)? else {
                return unsupported(format!("getattr_static: the namespace of {}", qualname(&entry)));
            };
            return Ok(self.class_namespace_entry(namespace, key)?.flatten());
        }
        Ok(None)
    }
}
