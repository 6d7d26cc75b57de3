//! Calls of `functools.lru_cache` wrappers: a call an unbounded cache already answers gives
//! the object the cache holds; any other runs the function it wraps, inlined.

use super::snapshot::Snapshot;
use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// A call of a function `functools.lru_cache` wraps (the wrapper pinned by the caller):
    /// where an unbounded cache already holds the answer, the object it holds (`cache_hit`);
    /// else the function inlined, as Paddle's and Dynamo's translators do, where the call
    /// changes nothing that existed before it (a call the cache answers would not make that
    /// change) and gives an object that existed before it or a constant (not one it made,
    /// which the cache would give again by identity): else a break, the call run as it is.
    pub(super) fn call_cached(
        &mut self,
        wrapper: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<Vid> {
        // The cache hashes the arguments first: one it cannot hash raises, from the real call.
        for arg in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
            if !self.hashable(*arg)? {
                return graph_break(format!(
                    "a call of {}, an lru_cache'd function, with an argument it cannot hash",
                    qualname(wrapper)
                ));
            }
        }
        if let Some(hit) = self.cache_hit(wrapper, &args, &kwargs)? {
            return Ok(hit);
        }
        let before = Snapshot::take(self);
        let inputs = self.graph.inputs.len();
        let generators = self.generator_positions();
        let wrapped = wrapper.getattr(pyo3::intern!(wrapper.py(), "__wrapped__"))?;
        // Through the wrapper (its closure read from there), or a constant the pin fixes.
        let function = match source {
            Some(s) => self.value_of_source(Source::Attr(s, self.name_ref("__wrapped__")), wrapped),
            None => self.constant(wrapped),
        };
        let result = self.call(function, args, kwargs)?;
        if self.changed_since(&before, inputs, &generators) {
            return graph_break(format!(
                "a call of {}, an lru_cache'd function, changes what it was given or what is outside it (its \
                 cache decides whether that happens)",
                qualname(wrapper)
            ));
        }
        // The cache gives every later call the object the first made (typing's aliases,
        // compared by identity): a Python value the translation makes anew at each call (a
        // list, an instance, a tuple) would be another object each time. An object that
        // existed before, or a number, is the call's either way. A tensor the graph computes
        // is a new one at each call, as the function's own on a cache miss (a tensor key is
        // hashed by identity: a frame's new tensor misses); a call repeated on one tensor
        // gives another tensor of the same values, where the cache gives the same object.
        if !matches!(
            self.val(result),
            Val::Obj { .. } | Val::Scalar { .. } | Val::Tensor { .. }
        ) {
            return graph_break(format!(
                "a call of {}, an lru_cache'd function, gives an object it made (the cache gives that \
                 one object to every later call)",
                qualname(wrapper)
            ));
        }
        Ok(result)
    }

    /// The object an unbounded cache (`functools.cache`, `lru_cache(maxsize=None)`) holds for
    /// these arguments, where it holds one: what the call returns, the function not run (its
    /// body may do what the VM cannot: narwhals' `functools.cache`d scan of installed entry
    /// points). The guard reads the cache's entry on each call, so a cleared cache makes the
    /// call run again. A bounded cache moves the entry a hit finds to the front, which decides
    /// what it evicts later, so its calls are inlined instead. Hits are not counted in its
    /// `cache_info()`, as inlining counts none.
    fn cache_hit(
        &mut self,
        wrapper: &Bound<'py, PyAny>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        if !kwargs.is_empty() {
            return Ok(None);
        }
        let Some(items) = args
            .iter()
            .map(|arg| self.plain_key_part(*arg))
            .collect::<Option<Vec<_>>>()
        else {
            return Ok(None);
        };
        let parameters = wrapper.call_method0("cache_parameters")?;
        if !parameters.get_item("maxsize")?.is_none() || parameters.get_item("typed")?.is_truthy()? {
            return Ok(None);
        }
        let Some(cache) = results_dict(wrapper)? else {
            return Ok(None);
        };
        // The key CPython's `lru_cache_make_key` makes without keywords or `typed`: a lone
        // exact str or int argument itself, else the tuple of the arguments.
        let key = match items.as_slice() {
            [only] if only.is_exact_instance_of::<PyString>() || only.is_exact_instance_of::<PyInt>() => {
                only.clone()
            }
            _ => PyTuple::new(self.py, &items)?.into_any(),
        };
        let Some(result) = cache.get_item(&key)? else {
            return Ok(None);
        };
        // The answer depends on the arguments' values: guarded now that it is used.
        for arg in args {
            self.concrete(*arg)?;
        }
        let key = StrongRef::new(&key);
        let holder = self.intern(Source::Held(StrongRef::new(cache.as_any())));
        let entry = self.intern(Source::Item(holder, key.clone_ref(self.py)));
        self.add_guard(entry, Check::Id(Pin::new(&result)));
        Ok(Some(self.value_of_source(Source::Item(holder, key), result)))
    }

    /// The object the value stands for, where its hash and `==` run no Python code (a str, a
    /// number, a class of a plain metaclass, a tuple of those): its cache entry is then found,
    /// at translation and in the guard, without running the user's code. Read without a guard.
    fn plain_key_part(&self, vid: Vid) -> Option<Bound<'py, PyAny>> {
        match self.val(vid) {
            Val::Obj { obj, .. } => key_hashes_in_c(obj).then(|| obj.clone()),
            Val::Scalar { example, .. } => is_value_type(example).then(|| example.clone()),
            Val::Tuple(items) => {
                let items = items
                    .iter()
                    .map(|item| self.plain_key_part(*item))
                    .collect::<Option<Vec<_>>>()?;
                PyTuple::new(self.py, items).ok().map(Bound::into_any)
            }
            _ => None,
        }
    }
}

fn key_hashes_in_c(obj: &Bound<'_, PyAny>) -> bool {
    is_value_type(obj)
        || obj.get_type().is(obj.py().get_type::<PyType>())
        || obj.cast::<PyTuple>().is_ok_and(|tuple| {
            tuple.is_exact_instance_of::<PyTuple>() && tuple.iter().all(|i| key_hashes_in_c(&i))
        })
}

/// The dict an unbounded cache keeps its results in, by key. The C wrapper does not show it;
/// the garbage collector's view of the wrapper does (`lru_cache_tp_traverse`, the same on
/// 3.9-3.15): its dicts are that one and the wrapper's own `__dict__`. Anything else found
/// there (a pure-Python wrapper, another layout) answers None: the call is inlined.
fn results_dict<'py>(wrapper: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyDict>>> {
    // Read first, so that a `__dict__` made on first access is among the referents.
    let own = wrapper.getattr(pyo3::intern!(wrapper.py(), "__dict__"))?;
    let referents = import(wrapper.py(), "gc")?
        .getattr("get_referents")?
        .call1((wrapper,))?;
    let mut dicts = referents
        .try_iter()?
        .filter_map(Result::ok)
        .filter(|r| !r.is(&own))
        .filter_map(|r| r.cast_into_exact::<PyDict>().ok());
    Ok(match (dicts.next(), dicts.next()) {
        (Some(cache), None) => Some(cache),
        _ => None,
    })
}
