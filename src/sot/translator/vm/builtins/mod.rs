//! The builtin functions the VM knows: a table from a builtin's name to its handler. A
//! handler that does not take the call's shape declines (`Ok(None)`), and the common rules
//! then apply: a builtin that would read a tensor's data breaks; a pure builtin is computed
//! now from arguments that compute the same on every call passing the guards; any other
//! call breaks.

mod fold;

use rustc_hash::FxHashMap;
use std::sync::LazyLock;

use crate::sot::translator::pyutil::{builtin_name, is_heap_instance};
use crate::sot::translator::vm::*;
use pyo3::types::{PyBytes, PySet};

/// A call of a builtin, as its handler sees it.
struct BuiltinCall<'c, 'py> {
    /// The builtin itself.
    obj: &'c Bound<'py, PyAny>,
    name: &'c str,
    args: &'c [Vid],
    kwargs: &'c [(String, Vid)],
    /// Whether an argument holds a tensor.
    any_tensor: bool,
}

/// A builtin's handler: its result, or None where it does not take the call's shape.
type Handler = for<'py, 'b, 'v, 'c> fn(&'v mut Vm<'py, 'b>, &BuiltinCall<'c, 'py>) -> Res<Option<Vid>>;

/// The builtins the VM models, by name.
const BUILTINS: &[(&str, Handler)] = &[
    ("print", print),
    ("len", len),
    ("isinstance", isinstance),
    ("type", type_),
    ("range", range),
    ("enumerate", enumerate),
    ("zip", zip),
    ("reversed", reversed),
    ("iter", iter),
    ("next", next),
    ("list", collection),
    ("tuple", collection),
    ("set", collection),
    ("frozenset", collection),
    ("dict", dict),
    ("sum", sum),
    ("map", map),
    ("filter", filter),
    ("getattr", getattr_or_hasattr),
    ("hasattr", getattr_or_hasattr),
    ("setattr", setattr_or_delattr),
    ("delattr", setattr_or_delattr),
    ("sorted", sorted),
    ("min", min_or_max),
    ("max", min_or_max),
    ("any", any_or_all),
    ("all", any_or_all),
    ("abs", abs),
    ("pow", pow),
    ("bool", bool_),
    ("super", super_),
    ("vars", vars),
    ("id", id),
];

static HANDLERS: LazyLock<FxHashMap<&'static str, Handler>> =
    LazyLock::new(|| BUILTINS.iter().copied().collect());

/// The iterators of `itertools` the VM models, by name.
const ITERTOOLS: &[(&str, Handler)] = &[
    ("dropwhile", dropwhile_or_takewhile),
    ("takewhile", dropwhile_or_takewhile),
    ("islice", islice),
];

/// Builtins that read a tensor's data (a conversion to a Python value): with a tensor
/// argument, the graph breaks.
const TENSOR_TO_PYTHON: &[&str] = &[
    "float", "int", "bool", "complex", "str", "repr", "format", "round", "min", "max", "all", "any",
    "sorted", "hash",
];

impl<'py> Vm<'py, '_> {
    /// `obj(*args, **kwargs)` for the builtins the VM knows; None when `obj` is none of them.
    pub(super) fn call_builtin(
        &mut self,
        obj: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let itertools_name = || {
            // Its functions are types (a C function's `__name__` is a new string each read).
            obj.is_instance_of::<PyType>()
                .then(|| {
                    obj.getattr(pyo3::intern!(obj.py(), "__name__"))
                        .and_then(|n| n.extract::<String>())
                })
                .and_then(Result::ok)
                .filter(|name| self.is_itertools(name, obj))
        };
        let (name, of_itertools) = match builtin_name(obj) {
            Some(name) => (name.to_owned(), false),
            None => match itertools_name() {
                Some(name) => (name, true),
                None => return self.call_bound_builtin(obj, source, args, kwargs),
            },
        };
        if let Some(s) = source {
            self.add_guard(s, Check::Id(Pin::new(obj)));
        }
        let call = BuiltinCall {
            obj,
            name: &name,
            args,
            kwargs,
            any_tensor: args.iter().any(|a| self.contains_tensor(*a)),
        };
        let handler = if of_itertools {
            ITERTOOLS
                .iter()
                .find(|(modeled, _)| *modeled == name)
                .map(|(_, h)| h)
        } else {
            HANDLERS.get(name.as_str())
        };
        if let Some(handler) = handler {
            if let Some(result) = handler(self, &call)? {
                return Ok(Some(result));
            }
        }
        if call.any_tensor && TENSOR_TO_PYTHON.contains(&call.name) {
            return tensor_to_python(call.name);
        }
        if PURE_BUILTINS.contains(&call.name) {
            if let [x, rest @ ..] = args {
                if let Some(result) = self.inline_builtin_method(call.name, *x, rest)? {
                    return Ok(Some(result));
                }
            }
            return self.folded_builtin_call(obj, call.name, args, kwargs).map(Some);
        }
        graph_break(format!("unsupported call: builtin {name}()"))
    }
}

impl<'py> Vm<'py, '_> {
    /// Whether `obj` is the `itertools` iterator `name` the VM models (the module imported:
    /// a program that has not imported it holds none of its functions).
    fn is_itertools(&self, name: &str, obj: &Bound<'py, PyAny>) -> bool {
        ITERTOOLS.iter().any(|(modeled, _)| *modeled == name)
            && imported(self.py, "itertools")
                .and_then(|module| module.getattr(name).ok())
                .is_some_and(|function| function.is(obj))
    }
}

fn tensor_to_python<T>(name: &str) -> Res<T> {
    graph_break(format!("tensor to python: {name}() of a tensor (data-dependent)"))
}

fn print(_vm: &mut Vm<'_, '_>, _call: &BuiltinCall<'_, '_>) -> Res<Option<Vid>> {
    graph_break("print() is a side effect the graph cannot hold (print)")
}

fn len<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [x] = call.args else {
        return Ok(None);
    };
    vm.len_of(*x).map(Some)
}

fn isinstance<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [x, classes] = call.args else {
        return Ok(None);
    };
    let ty = vm.type_of(*x)?;
    let classes = vm.concrete(*classes)?;
    // `issubclass(type(x), classes)`, as the builtin does it (`PyObject_IsSubclass`).
    let result = ty.cast_into::<PyType>()?.is_subclass(&classes)?;
    Ok(Some(vm.boolean(result)))
}

fn type_<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [x] = call.args else {
        // A new class takes its `__module__` from the globals of the frame calling
        // type(): run by the generated code, that is the function's own.
        return graph_break("type() making a class (it reads the calling frame's globals)");
    };
    let ty = vm.type_of(*x)?;
    Ok(Some(vm.constant(ty)))
}

fn range<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let objs = call
        .args
        .iter()
        .map(|a| vm.concrete(*a))
        .collect::<Res<Vec<_>>>()?;
    let range = call.obj.call1(PyTuple::new(vm.py, objs)?)?;
    Ok(Some(vm.constant(range)))
}

fn enumerate<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [it, rest @ ..] = call.args else {
        return Ok(None);
    };
    let start = match (rest, call.kwargs) {
        ([s], _) => vm.concrete(*s)?.extract::<i64>()?,
        ([], [(k, s)]) if k == "start" => vm.concrete(*s)?.extract::<i64>()?,
        _ => 0,
    };
    let iterator = vm.iterator(*it)?;
    Ok(Some(vm.push_val(Val::Lazy(Lazy::Enumerate {
        iterator,
        count: start,
    }))))
}

fn zip<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    if !call.kwargs.is_empty() {
        return Ok(None);
    }
    let iterators = call
        .args
        .iter()
        .map(|i| vm.iterator(*i))
        .collect::<Res<Vec<_>>>()?;
    Ok(Some(vm.push_val(Val::Lazy(Lazy::Zip(iterators)))))
}

fn reversed<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [x] = call.args else {
        return Ok(None);
    };
    // A dict's reverse iterator checks, item by item, that the dict's keys did not change
    // (3.14 raises where they did): not simulated.
    let dict_like = match vm.val(*x) {
        Val::Dict(_) | Val::DictView { .. } => true,
        Val::Obj { obj, .. } => obj.is_instance_of::<PyDict>() || is_dict_view(obj)?,
        _ => false,
    };
    if dict_like {
        return graph_break("reversed() of a dict or a dict view (its iterator watches the dict)");
    }
    // Sequences whose reverse iterator walks their items backwards; sets have no order to
    // reverse (CPython's TypeError); other types' `__reversed__` or `__getitem__` is theirs.
    let ty = vm.type_of(*x)?;
    let py = vm.py;
    if ty.is(py.get_type::<PySet>()) || ty.is(py.get_type::<PyFrozenSet>()) {
        let name = ty.getattr(pyo3::intern!(ty.py(), "__name__"))?;
        return Err(Problem::Python(PyTypeError::new_err(format!(
            "'{name}' object is not reversible"
        ))));
    }
    let sequence = [
        py.get_type::<PyList>(),
        py.get_type::<PyTuple>(),
        py.get_type::<PyRange>(),
        py.get_type::<PyString>(),
        py.get_type::<PyBytes>(),
    ];
    if !sequence.iter().any(|t| ty.is(t)) {
        return unsupported(format!(
            "reversed() of a {}",
            ty.getattr(pyo3::intern!(ty.py(), "__name__"))?
        ));
    }
    let mut items = vm.items_of(*x)?;
    items.reverse();
    Ok(Some(vm.push_val(Val::Iter {
        items,
        next: 0,
        of_tuple: false,
    })))
}

fn iter<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [x] = call.args else {
        return Ok(None);
    };
    vm.iterator(*x).map(Some)
}

fn next<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [it, rest @ ..] = call.args else {
        return Ok(None);
    };
    let it = vm.realize(*it)?;
    if let Some(item) = vm.advance(it)? {
        Ok(Some(item))
    } else if let Some(default) = rest.first() {
        Ok(Some(*default))
    } else {
        Err(vm.exhausted(it))
    }
}

/// `list`, `tuple`, `set` and `frozenset`.
fn collection<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let name = call.name;
    if !call.kwargs.is_empty() {
        // They take no keyword arguments (CPython raises TypeError: a break runs that).
        return graph_break(format!(
            "unsupported call: builtin {name}() with keyword arguments"
        ));
    }
    let made = match (name, call.args) {
        ("list" | "tuple" | "set", []) => vm.push_val(match name {
            "list" => Val::List(vec![]),
            "tuple" => Val::Tuple(vec![]),
            _ => Val::Set(vec![]),
        }),
        // An exact tuple or frozenset is its own copy.
        ("tuple" | "frozenset", [x]) if vm.is_exact(*x, name) => *x,
        ("list" | "tuple", [x]) => {
            let items = vm.items_of(*x)?;
            vm.push_val(if name == "list" {
                Val::List(items)
            } else {
                Val::Tuple(items)
            })
        }
        ("set" | "frozenset", [x]) if !call.any_tensor => {
            let mut unique = Vec::new();
            let items = vm.items_of(*x)?;
            vm.add_keys(&mut unique, items)?;
            if name == "set" {
                vm.push_val(Val::Set(unique))
            } else {
                let objs = unique.iter().map(|u| vm.concrete(*u)).collect::<Res<Vec<_>>>()?;
                // The builtin itself: before 3.10 an empty frozenset is a singleton.
                let made = call.obj.call1((PyTuple::new(vm.py, objs)?,))?;
                vm.constant(made)
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(made))
}

fn dict<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    if call.args.len() > 1 {
        return Ok(None);
    }
    let mut items = Vec::new();
    if let Some(x) = call.args.first() {
        let x = vm.realize(*x)?;
        let pairs = if matches!(vm.val(x), Val::Dict(_))
            || matches!(vm.val(x), Val::Obj { obj: o, .. } if o.is_exact_instance_of::<PyDict>())
        {
            vm.dict_items(x)?
        } else {
            // A value with `keys` is read as a mapping (its own methods), else as pairs.
            let ty = vm.type_of(x)?;
            if vm.type_lookup(&ty, "keys")?.is_some() {
                return Ok(None);
            }
            let mut pairs = Vec::new();
            for pair in vm.items_of(x)? {
                let kv = vm.items_of(pair)?;
                if kv.len() != 2 {
                    return unsupported("dict() of sequences that are not pairs");
                }
                pairs.push((kv[0], kv[1]));
            }
            pairs
        };
        for (k, v) in pairs {
            vm.dict_set(&mut items, k, v)?;
        }
    }
    for (k, v) in call.kwargs {
        let key = vm.constant(PyString::new(vm.py, k).into_any());
        vm.dict_set(&mut items, key, *v)?;
    }
    Ok(Some(vm.push_val(Val::Dict(items))))
}

fn sum<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let ([it, rest @ ..], []) = (call.args, call.kwargs) else {
        return Ok(None);
    };
    let items = vm.items_of(*it)?;
    let mut total = match rest.first() {
        Some(start) => *start,
        None => vm.int_value(0)?,
    };
    let start_type = vm.type_of(total)?;
    for (text, joined) in [("str", "''"), ("bytes", "b''"), ("bytearray", "bytearray()")] {
        if start_type
            .cast::<PyType>()
            .map_err(PyErr::from)?
            .is_subclass(&builtin(vm.py, text)?)?
        {
            return Err(Problem::Python(PyTypeError::new_err(format!(
                "sum() can't sum {} [use {joined}.join(seq) instead]",
                if text == "str" { "strings" } else { text }
            ))));
        }
    }
    // CPython sums floats with compensation (3.12 on): numbers seen to change between calls
    // are specialized, and their sum is CPython's own.
    for v in items.iter().chain([&total]) {
        if matches!(vm.val(*v), Val::Scalar { .. }) {
            vm.realize(*v)?;
        }
    }
    if items.iter().chain([&total]).all(|v| vm.is_constant(*v)) {
        // CPython's own sum of known values (floats are summed with compensation).
        let values = vm.push_val(Val::List(items));
        return vm
            .folded_builtin_call(call.obj, call.name, &[values, total], call.kwargs)
            .map(Some);
    }
    for item in items {
        total = vm.binary(total, item, BinOp::Add, false)?;
    }
    Ok(Some(total))
}

fn map<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [function, its @ ..] = call.args else {
        return Ok(None);
    };
    if its.is_empty() {
        return Ok(None);
    }
    let iterators = its.iter().map(|i| vm.iterator(*i)).collect::<Res<Vec<_>>>()?;
    Ok(Some(vm.push_val(Val::Lazy(Lazy::Map {
        function: *function,
        iterators,
    }))))
}

/// `itertools.dropwhile(predicate, iterable)` and `itertools.takewhile(...)`.
fn dropwhile_or_takewhile<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let ([predicate, it], []) = (call.args, call.kwargs) else {
        return Ok(None);
    };
    let (predicate, iterator) = (*predicate, vm.iterator(*it)?);
    let lazy = match call.name {
        "dropwhile" => Lazy::DropWhile {
            predicate,
            iterator,
            dropping: true,
        },
        _ => Lazy::TakeWhile {
            predicate,
            iterator,
            done: false,
        },
    };
    Ok(Some(vm.push_val(Val::Lazy(lazy))))
}

/// `itertools.islice(iterable, stop)` and `islice(iterable, start, stop[, step])` with
/// known bounds CPython takes (ints, or None for the defaults); any other call as it is.
fn islice<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let ([it, bounds @ ..], []) = (call.args, call.kwargs) else {
        return Ok(None);
    };
    let mut known = Vec::with_capacity(bounds.len());
    for bound in bounds {
        let value = vm.concrete(*bound)?;
        if value.is_none() {
            known.push(None);
        } else if value.is_exact_instance_of::<pyo3::types::PyInt>() {
            match value.extract::<i64>() {
                Ok(value) if value >= 0 => known.push(Some(value)),
                _ => return Ok(None),
            }
        } else {
            return Ok(None);
        }
    }
    let (start, stop, step) = match known[..] {
        [stop] => (Some(0), stop, None),
        [start, stop] => (start, stop, None),
        [start, stop, step] => (start, stop, step),
        _ => return Ok(None),
    };
    let (start, step) = (start.unwrap_or(0), step.unwrap_or(1));
    if step == 0 {
        return Ok(None);
    }
    let iterator = vm.iterator(*it)?;
    Ok(Some(vm.push_val(Val::Lazy(Lazy::ISlice {
        iterator,
        count: 0,
        next: start,
        stop,
        step,
        done: false,
    }))))
}

fn filter<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [function, it] = call.args else {
        return Ok(None);
    };
    let none = vm.none();
    let function = (!vm.identical(*function, none)?).then_some(*function);
    let iterator = vm.iterator(*it)?;
    Ok(Some(vm.push_val(Val::Lazy(Lazy::Filter { function, iterator }))))
}

/// `setattr(x, name, value)` and `delattr(x, name)` of a str name: what `x.name = value`
/// and `del x.name` do (the same `PyObject_SetAttr`).
fn setattr_or_delattr<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let (target, name, value) = match (call.name, call.args) {
        ("setattr", [target, name, value]) => (*target, *name, Some(*value)),
        ("delattr", [target, name]) => (*target, *name, None),
        _ => return Ok(None),
    };
    let name = vm.concrete(name)?;
    if !call.kwargs.is_empty() || !name.is_exact_instance_of::<PyString>() {
        return Ok(None);
    }
    let name: String = name.extract()?;
    match value {
        Some(value) => vm.store_attr(target, name, value)?,
        None => vm.delete_attr(target, name)?,
    }
    Ok(Some(vm.none()))
}

fn getattr_or_hasattr<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [x, attribute, rest @ ..] = call.args else {
        return Ok(None);
    };
    let attribute: String = vm.concrete(*attribute)?.extract()?;
    let found = match vm.load_attr(*x, &attribute) {
        Ok(v) if call.name == "getattr" => v,
        Ok(_) => vm.boolean(true),
        Err(Problem::Python(err)) if err.is_instance_of::<PyAttributeError>(vm.py) => {
            if call.name == "hasattr" {
                vm.boolean(false)
            } else if let Some(default) = rest.first() {
                *default
            } else {
                return Err(Problem::Python(err));
            }
        }
        Err(other) => return Err(other),
    };
    Ok(Some(found))
}

fn sorted<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [x] = call.args else {
        return Ok(None);
    };
    if call.kwargs.iter().any(|(k, _)| k != "key" && k != "reverse") {
        return Ok(None);
    }
    let items = vm.items_of(*x)?;
    let key = call.kwargs.iter().find(|(k, _)| k == "key").map(|(_, v)| *v);
    let reverse = match call.kwargs.iter().find(|(k, _)| k == "reverse") {
        Some((_, r)) => vm.truthy(*r)?,
        None => false,
    };
    let sorted = vm.sort_items(items, key, reverse)?;
    Ok(Some(vm.push_val(Val::List(sorted))))
}

fn min_or_max<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [first, rest @ ..] = call.args else {
        return Ok(None);
    };
    if call.kwargs.iter().any(|(k, _)| k != "key" && k != "default") {
        return Ok(None);
    }
    let key = call.kwargs.iter().find(|(k, _)| k == "key").map(|(_, v)| *v);
    let default = call.kwargs.iter().find(|(k, _)| k == "default").map(|(_, d)| *d);
    if default.is_some() && !rest.is_empty() {
        return Err(Problem::Python(PyTypeError::new_err(format!(
            "Cannot specify a default for {}() with multiple positional arguments",
            call.name
        ))));
    }
    let items = if rest.is_empty() {
        vm.items_of(*first)?
    } else {
        call.args.to_vec()
    };
    if items.is_empty() {
        return match default {
            Some(d) => Ok(Some(d)),
            // CPython's own error, worded as this interpreter words it.
            None => Err(Problem::Python(
                builtin(vm.py, call.name)?
                    .call1((pyo3::types::PyTuple::empty(vm.py),))
                    .err()
                    .unwrap_or_else(|| pyo3::exceptions::PyValueError::new_err("empty")),
            )),
        };
    }
    let index: usize = vm.order_by_keys(&items, key, call.name, false, None)?.extract()?;
    Ok(Some(items[index]))
}

fn any_or_all<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let [x] = call.args else {
        return Ok(None);
    };
    // Item by item: the first decisive one stops it (a generator is left there).
    let want = call.name == "any";
    let mut result = !want;
    let it = vm.iterator(*x)?;
    while let Some(item) = vm.advance(it)? {
        if vm.truthy(item)? == want {
            result = want;
            break;
        }
    }
    Ok(Some(vm.boolean(result)))
}

/// `abs()` of a tensor: an operation of the graph.
fn abs<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let ([x], true) = (call.args, call.any_tensor) else {
        return Ok(None);
    };
    let abs = vm.builtin("abs")?;
    vm.record(&abs, vec![*x], vec![]).map(Some)
}

/// `pow()` of a tensor, with two arguments: an operation of the graph.
fn pow<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let ([_, _], true) = (call.args, call.any_tensor) else {
        return Ok(None);
    };
    let pow = vm.ops.op("pow")?;
    vm.record(&pow, call.args.to_vec(), vec![]).map(Some)
}

fn bool_<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    if call.any_tensor {
        return tensor_to_python(call.name);
    }
    let [x] = call.args else {
        return Ok(None);
    };
    let truth = vm.truthy(*x)?;
    Ok(Some(vm.boolean(truth)))
}

fn super_<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    match call.args {
        [] => unsupported("super() without its frame"),
        [class, receiver] => {
            let class = vm.concrete(*class)?;
            vm.make_super(class, *receiver).map(Some)
        }
        _ => Ok(None),
    }
}

/// `vars(obj)`: `obj.__dict__`, read as the attribute is (vars reads it so); an object without
/// one (vars raises TypeError for it) breaks. `vars()` reads the frame (`reads_callers_frame`).
fn vars<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let ([obj], true) = (call.args, call.kwargs.is_empty()) else {
        return Ok(None);
    };
    match vm.load_attr(*obj, "__dict__") {
        Err(Problem::Python(error)) if error.is_instance_of::<PyAttributeError>(vm.py) => {
            graph_break("vars() of an object without __dict__ (a TypeError)")
        }
        other => other.map(Some),
    }
}

/// `id(x)` of an object every call passing the guards holds itself: a constant the
/// translation holds (the generated code holds that object), an object from the frame pinned
/// by identity, or a module, class, singleton (`None`), or function (a callable of a C type:
/// a Python or builtin function, a ufunc; not a method bound to an object, a new object
/// each time it is read) from the frame, pinned (as a call of one pins it).
/// Any other object's identity is its call's own (a new object each call, or one a guard only
/// compares by value): `id` breaks on it (`copy.deepcopy` and `inspect.unwrap` key their
/// memos by it).
fn id<'py>(vm: &mut Vm<'py, '_>, call: &BuiltinCall<'_, 'py>) -> Res<Option<Vid>> {
    let ([x], []) = (call.args, call.kwargs) else {
        return Ok(None);
    };
    let Val::Obj { obj, source } = vm.val(*x).clone() else {
        return Ok(None);
    };
    if let Some(source) = source {
        let py = vm.py;
        let held_alike = obj.is_none()
            || obj.is(py.Ellipsis())
            || obj.is(py.NotImplemented())
            || obj.is_instance_of::<pyo3::types::PyModule>()
            || obj.is_instance_of::<pyo3::types::PyType>()
            || obj.is_callable() && !is_heap_instance(&obj)? && !bound_to_an_object(vm, &obj)?;
        if !held_alike && !vm.is_pinned(source) {
            return Ok(None);
        }
        vm.pin(source, &obj)?;
    }
    let address = (obj.as_ptr() as usize).into_pyobject(vm.py)?.into_any();
    Ok(Some(vm.constant(address)))
}

/// A method bound to an object other than a module (`obj.method`, `[].append`).
fn bound_to_an_object<'py>(vm: &Vm<'py, '_>, callable: &Bound<'py, PyAny>) -> PyResult<bool> {
    if callable.is_instance(&vm.ops.method_type)? {
        return Ok(true);
    }
    Ok(callable.is_instance_of::<pyo3::types::PyCFunction>()
        && callable
            .getattr(pyo3::intern!(callable.py(), "__self__"))
            .is_ok_and(|owner| !owner.is_none() && !owner.is_instance_of::<pyo3::types::PyModule>()))
}
