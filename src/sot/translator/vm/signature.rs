//! `inspect.signature(f)` of a Python function, or of a wrapper whose `__wrapped__` chain
//! ends at one (a function `functools.wraps` made, numpy's `_ArrayFunctionDispatcher`):
//! computed now rather than simulated
//! (simulated, it runs past a library call's budget: array-api-compat asks it of
//! `np.unique` on every `unique_values`, scikit-learn's `validate_params` of every
//! function it wraps). The result is a `Val::Constructed` the generated code makes again
//! by the same call where the program keeps it or hands it on.
//!
//! What the function reads is guarded, so that a later call that passes the guards gets an
//! equal signature: each object of the chain by identity, a wrapper's own namespace (its
//! keys: no `__signature__` added) and `__wrapped__`, and of the function at its end its
//! namespace's keys (no `__signature__`, `__wrapped__`, `__text_signature__` or partial
//! method), its `__code__`, `__defaults__`, and its `__kwdefaults__` and `__annotations__`
//! (each dict's keys and each value by identity). A wrapper must be of an immutable type
//! that defines none of those names (its lookups reach its own dict only); anything else
//! (a method, a class, a `functools.partial`, a function with a `__signature__`) is
//! simulated as before.
//!
//! Of the signature, the translation reads `parameters` (a read-only view, made again as
//! the property makes it), and `in` and `len` of that view: the names of the parameters,
//! fixed by the guards.

use super::*;
use crate::hookapi::pyobject::type_is_mutable;

/// The wrappers `inspect.unwrap` is followed through before the call is simulated instead.
const MAX_WRAPPERS: usize = 8;

/// Names whose presence in a function's namespace changes what `inspect.signature` makes of
/// it (3.9-3.15).
const SIGNATURE_NAMES: [&str; 5] = [
    "__signature__",
    "__wrapped__",
    "__text_signature__",
    "_partialmethod",
    "__partialmethod__",
];

impl<'py> Vm<'py, '_> {
    /// What `function(*args, **kwargs)` returns, where `function` is `inspect.signature`
    /// of one function the module's comment describes; else None (the call is simulated).
    pub(super) fn modeled_signature(
        &mut self,
        function: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let Some(signature) = self.inspect_signature() else {
            return Ok(None);
        };
        let ([target], []) = (args, kwargs) else {
            return Ok(None);
        };
        if !function.is(&signature) {
            return Ok(None);
        }
        let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(*target).clone()
        else {
            return Ok(None);
        };
        let Some(chain) = self.signature_chain(&obj)? else {
            return Ok(None);
        };
        let Ok(made) = signature.call1((&obj,)) else {
            return Ok(None);
        };
        self.guard_signature_chain(source, &chain)?;
        Ok(Some(self.constructed(made, signature, vec![*target], &[])))
    }

    /// `inspect.signature` where `inspect` is imported (looking does not import it).
    fn inspect_signature(&self) -> Option<Bound<'py, PyAny>> {
        self.inspect_signature
            .get_or_init(|| {
                let inspect = crate::hookapi::pyobject::imported(self.py, "inspect")?;
                inspect.getattr(pyo3::intern!(self.py, "signature")).ok()
            })
            .clone()
    }

    /// The objects `inspect.unwrap` goes through from `obj`, the function at its end last,
    /// where each is as the module's comment requires; else None.
    fn signature_chain(&self, obj: &Bound<'py, PyAny>) -> PyResult<Option<Vec<Bound<'py, PyAny>>>> {
        let mut chain = vec![obj.clone()];
        for _ in 0..MAX_WRAPPERS {
            let current = chain.last().expect("the chain starts with obj").clone();
            let own = current
                .getattr(pyo3::intern!(self.py, "__dict__"))
                .ok()
                .and_then(|dict| dict.cast_into_exact::<PyDict>().ok());
            let Some(own) = own else {
                return Ok(None);
            };
            let has = |name: &str| own.contains(name);
            if has("__signature__")? {
                return Ok(None);
            }
            let is_function = current.is_exact_instance(&self.ops.function_type);
            if is_function && !has("__wrapped__")? {
                // The function at the chain's end: nothing in its namespace that the
                // function reads before its code.
                for name in SIGNATURE_NAMES {
                    if has(name)? {
                        return Ok(None);
                    }
                }
                return Ok(Some(chain));
            }
            // A wrapper (a function `functools.wraps` made, or an object of a C type): its
            // type fixed, its attributes found as `object`'s lookup finds them (not a bound
            // method's, which forwards them to its function), and silent on every name the
            // function looks up, so that its own namespace answers them.
            let class = current.get_type();
            if type_is_mutable(&class)
                || current.is_instance_of::<PyType>()
                || current.is_instance(&self.ops.method_type)?
                || !current.is_callable()
                || !has("__wrapped__")?
            {
                return Ok(None);
            }
            let generic_lookup = self
                .type_lookup(class.as_any(), "__getattribute__")?
                .is_some_and(|found| found.is(&self.ops.object_getattribute));
            if !generic_lookup || self.type_lookup(class.as_any(), "__getattr__")?.is_some() {
                return Ok(None);
            }
            for name in SIGNATURE_NAMES {
                if self.type_lookup(class.as_any(), name)?.is_some() {
                    return Ok(None);
                }
            }
            chain.push(
                own.get_item(pyo3::intern!(own.py(), "__wrapped__"))?
                    .expect("present"),
            );
        }
        Ok(None)
    }

    /// The guards under which `inspect.signature` of the chain's first object makes an equal
    /// signature on a later call (the module's comment); `source` holds that object.
    fn guard_signature_chain(&mut self, source: SourceId, chain: &[Bound<'py, PyAny>]) -> Res<()> {
        let (first, rest) = chain.split_first().expect("a chain has its object");
        self.add_guard(source, Check::Id(Pin::new(first)));
        let mut source = source;
        for (index, current) in chain.iter().enumerate() {
            self.guard_own_keys(source, current)?;
            if index < rest.len() {
                // The next object of the chain, pinned.
                self.pin_attribute(source, current, "__wrapped__")?;
                source = self.intern(Source::Attr(source, self.name_ref("__wrapped__")));
            }
        }
        let function = chain.last().expect("a chain ends at its function");
        for name in ["__code__", "__defaults__"] {
            self.pin_attribute(source, function, name)?;
        }
        for name in ["__kwdefaults__", "__annotations__"] {
            self.pin_attribute(source, function, name)?;
            let value = function.getattr(self.interned_name(name))?;
            if let Ok(dict) = value.cast_exact::<PyDict>() {
                let held = self.intern(Source::Attr(source, self.name_ref(name)));
                self.guard_dict_by_identity(held, dict)?;
            }
        }
        Ok(())
    }

    /// The keys of `obj`'s own namespace, read through `source`'s `__dict__`.
    fn guard_own_keys(&mut self, source: SourceId, obj: &Bound<'py, PyAny>) -> Res<()> {
        let own = obj.getattr(pyo3::intern!(self.py, "__dict__"))?;
        let held = self.intern(Source::Attr(source, self.name_ref("__dict__")));
        let keys = PyTuple::new(
            self.py,
            own.cast_into_exact::<PyDict>().map_err(PyErr::from)?.keys(),
        )?;
        self.add_guard(held, Check::Keys(StrongRef::new(keys.as_any())));
        Ok(())
    }

    /// A dict's keys, and each value by identity (a default or an annotation the signature
    /// holds).
    fn guard_dict_by_identity(&mut self, source: SourceId, dict: &Bound<'py, PyDict>) -> Res<()> {
        let keys = PyTuple::new(self.py, dict.keys())?;
        self.add_guard(source, Check::Keys(StrongRef::new(keys.as_any())));
        for (key, value) in dict.iter() {
            let item = self.intern(Source::Item(source, StrongRef::new(&key)));
            self.add_guard(item, Check::Id(Pin::new(&value)));
        }
        Ok(())
    }

    /// `signature.parameters` of a signature `modeled_signature` made: the view the property
    /// gives, made again by the property's getter; None for another value or name.
    pub(super) fn signature_attr(&mut self, signature: Vid, name: &str) -> Res<Option<Vid>> {
        if name != "parameters" || !self.is_modeled(signature, SignaturePart::Signature) {
            return Ok(None);
        }
        let Val::Constructed { obj, .. } = self.val(signature).clone() else {
            return Ok(None);
        };
        let getter = obj
            .get_type()
            .getattr(pyo3::intern!(self.py, "parameters"))?
            .getattr(pyo3::intern!(self.py, "fget"))?;
        let view = getter.call1((&obj,))?;
        Ok(Some(self.constructed(view, getter, vec![signature], &[])))
    }

    /// Whether `builtin` (`in`, `len`) computes with `vid` now what it computes on a later
    /// call: `vid` the parameters of a signature `modeled_signature` made.
    pub(super) fn reads_signature_parameters(&self, vid: Vid, builtin: &str) -> bool {
        matches!(builtin, "in" | "len") && self.is_modeled(vid, SignaturePart::Parameters)
    }

    /// Whether `vid` is `part` of a signature `modeled_signature` made.
    fn is_modeled(&self, vid: Vid, part: SignaturePart) -> bool {
        let Val::Constructed { class, args, .. } = self.val(vid) else {
            return false;
        };
        let Val::Obj { obj: class, .. } = self.val(*class) else {
            return false;
        };
        match part {
            SignaturePart::Signature => self.inspect_signature().is_some_and(|s| class.is(&s)),
            SignaturePart::Parameters => match self.val(*args) {
                Val::Tuple(items) if items.len() == 1 => {
                    let made_by_getter = self
                        .concrete_of_constructed(items[0])
                        .and_then(|sig| sig.get_type().getattr("parameters").ok())
                        .and_then(|property| property.getattr("fget").ok())
                        .is_some_and(|getter| getter.is(class));
                    made_by_getter && self.is_modeled(items[0], SignaturePart::Signature)
                }
                _ => false,
            },
        }
    }

    fn concrete_of_constructed(&self, vid: Vid) -> Option<Bound<'py, PyAny>> {
        match self.val(vid) {
            Val::Constructed { obj, .. } => Some(obj.clone()),
            _ => None,
        }
    }
}

/// What `Vm::is_modeled` asks about.
#[derive(Clone, Copy)]
enum SignaturePart {
    Signature,
    Parameters,
}
