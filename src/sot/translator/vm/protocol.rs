//! The object protocol over values: truth, items, binary operators, comparison and identity, containment, subscripts.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// `bool(vid)`, by its kind (else the object's own truth).
    pub(super) fn truthy(&mut self, vid: Vid) -> Res<bool> {
        let vid = self.realize(vid)?;
        let val = self.val(vid).clone();
        if let Some(truth) = self.assumed_truth(&val)? {
            return Ok(truth);
        }
        match kind_of(&val).truth(self, vid, &val)? {
            Some(truth) => Ok(truth),
            None => self.concrete(vid)?.is_truthy().map_err(Problem::from),
        }
    }

    /// The truth of an instance of `class` as CPython finds it: its `__bool__`, else its
    /// `__len__`, inlined where it is Python code (it may read state that changes under the
    /// same identity), its result checked as CPython checks it. None where the class has
    /// neither: the object is true.
    pub(super) fn inlined_truth(&mut self, vid: Vid, class: &Bound<'py, PyAny>) -> Res<Option<bool>> {
        for name in ["__bool__", "__len__"] {
            let Some(method) = self.type_lookup(class, name)? else {
                continue;
            };
            if !method.is_instance(&self.ops.function_type)? {
                return unsupported(format!(
                    "truth value of a {} object (its {name} is not Python code)",
                    qualname(class)
                ));
            }
            self.guard_type(vid);
            let function = self.constant(method);
            let result = self.call(function, vec![vid], vec![])?;
            let result_type = self.type_of(result)?;
            let fits = if name == "__bool__" {
                result_type.is(self.py.get_type::<PyBool>())
            } else {
                result_type.is(self.py.get_type::<PyInt>())
                    && self.concrete(result)?.extract::<i64>().is_ok_and(|n| n >= 0)
            };
            if !fits {
                return graph_break(format!(
                    "truth value of a {} object: its {name} gave a value CPython would check",
                    qualname(class)
                ));
            }
            return self.truthy(result).map(Some);
        }
        Ok(None)
    }

    /// What iterating `vid` yields, all of it, by its kind.
    pub(super) fn items_of(&mut self, vid: Vid) -> Res<Vec<Vid>> {
        let vid = self.realize(vid)?;
        let val = self.val(vid).clone();
        match kind_of(&val).items(self, vid, &val)? {
            Some(items) if items.len() > MAX_MODELED_ITEMS => unsupported(format!(
                "a container of more than {MAX_MODELED_ITEMS} items taken as a whole (its code runs as it is)"
            )),
            Some(items) => Ok(items),
            None => unsupported("iteration over an internal value"),
        }
    }

    /// `len(vid)` as the builtin computes it: by its kind, else by the method of an immutable
    /// value, else computed now from a value the same on every call (else a break).
    pub(super) fn len_of(&mut self, vid: Vid) -> Res<Vid> {
        let vid = self.realize(vid)?;
        let val = self.val(vid).clone();
        if let Some(length) = kind_of(&val).len(self, vid, &val)? {
            return Ok(length);
        }
        if let Some(length) = self.inline_builtin_method("len", vid, &[])? {
            return Ok(length);
        }
        let Some(o) = self.folded_argument(vid, "len")? else {
            return self.refuse_folding("builtin len()", vid);
        };
        self.int_value(o.len()?)
    }

    /// The items of sequence `left` `+` `right` (where `may_add`: `right`'s items
    /// appended) or `*` an exact int; None for any other operation.
    pub(super) fn joined_items(
        &mut self,
        op: BinOp,
        left: Vid,
        right: Vid,
        may_add: bool,
    ) -> Res<Option<Vec<Vid>>> {
        Ok(match op {
            BinOp::Add if may_add => {
                let mut items = self.items_of(left)?;
                items.extend(self.items_of(right)?);
                Some(items)
            }
            BinOp::Multiply => match self.exact_int(right)? {
                Some(times) => Some(repeated(&self.items_of(left)?, times)?),
                None => None,
            },
            _ => None,
        })
    }

    pub(super) fn binary(&mut self, left: Vid, right: Vid, op: BinOp, inplace: bool) -> Res<Vid> {
        if op == BinOp::Subscr {
            return self.subscript(left, right);
        }
        let left = self.realize_tensor(left)?;
        // A list's `+=` (extend, by any iterable) and `*=` change it in place (one from the
        // frame through its mutable copy).
        let changes_a_list = match self.val(left) {
            Val::List(_) => true,
            Val::Obj { obj, source: Some(_) } => obj.is_exact_instance_of::<PyList>(),
            _ => false,
        };
        // CPython tries the right operand's reflected number operator (an array's
        // `__radd__`) before a list's in-place `+=` or `*=`; a builtin number's declines.
        let reflected = match op {
            BinOp::Add => Some("__radd__"),
            BinOp::Multiply => Some("__rmul__"),
            _ => None,
        };
        if let (Some(reflected), true) = (reflected, inplace && changes_a_list) {
            let right_type = self.type_of(right)?;
            let builtin_type = right_type
                .getattr(pyo3::intern!(right_type.py(), "__module__"))?
                .eq("builtins")?;
            if self.is_tensor(right) || !builtin_type && self.type_lookup(&right_type, reflected)?.is_some() {
                return unsupported(format!(
                    "a list's in-place operator with a {} (its {reflected} comes first)",
                    right_type.getattr(pyo3::intern!(right_type.py(), "__name__"))?
                ));
            }
        }
        if inplace && changes_a_list {
            if let Some(items) = self.joined_items(op, left, right, true)? {
                let list = self.mutable_copy(left)?.unwrap_or(left);
                self.values[list] = Val::List(items);
                return Ok(left);
            }
        }
        // Concatenating and repeating containers the translation made (list + list,
        // tuple + tuple, by an int); anything else is Python's operator on real values.
        let left_is_list = match self.val(left) {
            Val::List(_) => Some(true),
            Val::Tuple(_) => Some(false),
            // A list or tuple from the frame, by its items (guarded as it is read).
            Val::Obj { obj, source: Some(_) } if obj.is_exact_instance_of::<PyList>() => Some(true),
            Val::Obj { obj, source: Some(_) } if obj.is_exact_instance_of::<PyTuple>() => Some(false),
            _ => None,
        };
        if left_is_list == Some(false) {
            if let Some(operand) = self.tuple_operand_returned(op, left, right)? {
                return Ok(operand);
            }
        }
        if let Some(is_list) = left_is_list {
            let may_add = op == BinOp::Add && self.is_exact_sequence(right, is_list);
            if let Some(items) = self.joined_items(op, left, right, may_add)? {
                return Ok(self.push_val(if is_list {
                    Val::List(items)
                } else {
                    Val::Tuple(items)
                }));
            }
        }
        // Computed while translating, an in-place operator would change the object then
        // (and the result would be a copy): only immutable values are.
        let mutable = match self.val(left) {
            Val::List(_) | Val::Dict(_) | Val::Set(_) | Val::PoppedSet(_) | Val::AttrDict(_) => true,
            Val::Obj { obj, .. } => !is_immutable(obj) && !self.backend.is_tensor(obj),
            _ => false,
        };
        if inplace && mutable {
            return unsupported("an in-place operator on a mutable value");
        }
        self.operator_call(binop_name(op, inplace), vec![left, right])
    }

    /// Where CPython's tuple `+` and `*` give an operand itself rather than a new tuple:
    /// `t + ()`, `() + t` and `t * 1` (so `is` sees the same object).
    fn tuple_operand_returned(&mut self, op: BinOp, left: Vid, right: Vid) -> Res<Option<Vid>> {
        // Decided by the operands' types: guarded where they came from the frame (an object
        // handed on as the result is not otherwise read, so nothing else guards it).
        self.guard_type(left);
        self.guard_type(right);
        Ok(match op {
            BinOp::Add if self.is_exact_sequence(right, false) => {
                if self.items_of(right)?.is_empty() {
                    Some(left)
                } else if self.items_of(left)?.is_empty() {
                    Some(right)
                } else {
                    None
                }
            }
            BinOp::Multiply => (self.exact_int(right)? == Some(1)).then_some(left),
            _ => None,
        })
    }

    fn is_empty_tuple(&self, vid: Vid) -> bool {
        match self.val(vid) {
            Val::Tuple(items) => items.is_empty(),
            Val::Obj { obj, .. } => obj.is_exact_instance_of::<PyTuple>() && obj.len().is_ok_and(|n| n == 0),
            _ => false,
        }
    }

    /// Whether `vid` is a list (`list`) or a tuple, of exactly that type.
    pub(super) fn is_exact_sequence(&self, vid: Vid, list: bool) -> bool {
        match self.val(vid) {
            Val::List(_) => list,
            Val::Tuple(_) => !list,
            Val::Obj { obj, .. } if list => obj.is_exact_instance_of::<PyList>(),
            Val::Obj { obj, .. } => obj.is_exact_instance_of::<PyTuple>(),
            _ => false,
        }
    }

    /// The value of `vid` when it is an `int` or a `bool` that fits an `isize` (specialized).
    pub(super) fn exact_int(&mut self, vid: Vid) -> Res<Option<isize>> {
        let is_int = match self.val(vid) {
            Val::Obj { obj, .. } | Val::Scalar { example: obj, .. } => {
                obj.is_exact_instance_of::<PyInt>() || obj.is_exact_instance_of::<PyBool>()
            }
            _ => false,
        };
        if !is_int {
            return Ok(None);
        }
        Ok(self.concrete(vid)?.extract::<isize>().ok())
    }

    /// `left <name> right` ("lt" to "ge", `COMPARE_NAMES`): a Python comparison of an
    /// object's class inlined, objects that compare by identity, two tuples item by item,
    /// else the operator on values.
    pub(super) fn rich_compare(&mut self, name: &str, left: Vid, right: Vid) -> Res<Vid> {
        if let Some(r) = compare_made_objects(self, name, left, right)? {
            return Ok(r);
        }
        if let Some(r) = self.compared_by_identity(name, left, right)? {
            return Ok(r);
        }
        if let Some(r) = self.compare_tuples(name, left, right)? {
            return Ok(r);
        }
        self.operator_call(name, vec![left, right])
    }

    /// Two tuples, one holding more than values (objects whose class compares in Python:
    /// packaging's `Infinity`), compared as `tuple`'s comparison does: the first items that
    /// are neither the same object nor equal decide (`==` false, `!=` true, else their own
    /// comparison, its result as it is), else the lengths. None for other operands, and
    /// for tuples of values (the operator compares them whole).
    fn compare_tuples(&mut self, name: &str, left: Vid, right: Vid) -> Res<Option<Vid>> {
        let tuple_of_values = |vm: &Self, v: Vid| -> Option<bool> {
            match vm.val(v) {
                Val::Tuple(items) => Some(
                    items
                        .iter()
                        .all(|i| matches!(vm.val(*i), Val::Obj { obj, .. } if is_value_type(obj))),
                ),
                Val::Obj { obj, .. } if obj.is_exact_instance_of::<PyTuple>() => Some(is_value_type(obj)),
                _ => None,
            }
        };
        match (tuple_of_values(self, left), tuple_of_values(self, right)) {
            (Some(false), Some(_)) | (Some(_), Some(false)) => {}
            _ => return Ok(None),
        }
        let (left_items, right_items) = (self.items_of(left)?, self.items_of(right)?);
        for (a, b) in left_items.iter().zip(&right_items) {
            if self.identical(*a, *b)? {
                continue;
            }
            let equal = self.rich_compare("eq", *a, *b)?;
            if self.truthy(equal)? {
                continue;
            }
            return Ok(Some(match name {
                "eq" => self.boolean(false),
                "ne" => self.boolean(true),
                _ => self.rich_compare(name, *a, *b)?,
            }));
        }
        let (l, r) = (left_items.len(), right_items.len());
        let answer = match name {
            "lt" => l < r,
            "le" => l <= r,
            "eq" => l == r,
            "ne" => l != r,
            "gt" => l > r,
            _ => l >= r,
        };
        Ok(Some(self.boolean(answer)))
    }

    /// `left == right` / `left != right` of two objects whose classes, written in C (fixed),
    /// both compare with `object`'s methods (modules, functions, classes): `is` and `is not`,
    /// as CPython falls back to them. None for anything else.
    pub(super) fn compared_by_identity(&mut self, name: &str, left: Vid, right: Vid) -> Res<Option<Vid>> {
        if !matches!(name, "eq" | "ne") {
            return Ok(None);
        }
        let (left, right) = (self.realize(left)?, self.realize(right)?);
        let default_ne = builtin(self.py, "object")?.getattr(pyo3::intern!(self.py, "__ne__"))?;
        for vid in [left, right] {
            let Val::Obj { obj, .. } = self.val(vid) else {
                return Ok(None);
            };
            let (obj, class) = (obj.clone(), obj.get_type().into_any());
            let by_identity = !is_heap_type(&class)
                && !self.backend.is_tensor(&obj)
                && self.compares_by_identity(&obj)?
                && (name == "eq"
                    || self
                        .type_lookup(&class, "__ne__")?
                        .is_some_and(|ne| ne.is(&default_ne)));
            if !by_identity {
                return Ok(None);
            }
        }
        // Later calls must bring objects of these classes.
        self.guard_type(left);
        self.guard_type(right);
        let same = self.identical(left, right)?;
        Ok(Some(self.boolean(same == (name == "eq"))))
    }

    pub(super) fn identical(&mut self, left: Vid, right: Vid) -> Res<bool> {
        if left == right {
            return Ok(true);
        }
        let (left, right) = (self.realize(left)?, self.realize(right)?);
        let kind = |v: &Val<'py>| match v {
            Val::Obj { .. } => 0,
            Val::Tensor { .. } => 1,
            _ => 2,
        };
        match (kind(self.val(left)), kind(self.val(right))) {
            (0, 0) => {
                let sourced = |vm: &Self, v: Vid| matches!(vm.val(v), Val::Obj { source: Some(_), .. });
                let (a, b) = match (self.val(left), self.val(right)) {
                    (Val::Obj { obj: a, .. }, Val::Obj { obj: b, .. }) => (a.clone(), b.clone()),
                    _ => unreachable!(),
                };
                let same = a.is(&b);
                // `x is None` and the like: when they differ, x's type (not its identity)
                // says so whenever the constant's type has one value only.
                for (value, other, constant) in [(left, &b, right), (right, &a, left)] {
                    let singleton = other.is_none()
                        || other.is_exact_instance_of::<PyBool>()
                        || other.is(self.py.Ellipsis())
                        || other.is(self.py.NotImplemented());
                    if singleton && sourced(self, value) {
                        if sourced(self, constant) {
                            // Read from the frame too: held to that one object (by its type
                            // where the type has one value).
                            if other.is_exact_instance_of::<PyBool>() {
                                self.concrete(constant)?;
                            } else {
                                self.guard_type(constant);
                            }
                        }
                        let value_type = self.type_of(value)?;
                        if same || value_type.is(other.get_type()) {
                            self.concrete(value)?;
                        }
                        return Ok(same);
                    }
                }
                if !a.get_type().is(b.get_type()) {
                    // Objects of two types (each guarded) are two objects.
                    self.guard_type(left);
                    self.guard_type(right);
                    return Ok(false);
                }
                if let (
                    Val::Obj {
                        obj: a,
                        source: Some(sa),
                    },
                    Val::Obj {
                        obj: b,
                        source: Some(sb),
                    },
                ) = (self.val(left), self.val(right))
                {
                    let values = is_value_type(a) || is_value_type(b);
                    let (sa, sb) = (*sa, *sb);
                    if !same && !values {
                        // Two objects from the frame: that they are two, guarded as such (not
                        // each pinned: later calls bring other objects).
                        self.add_guard(sa, Check::Distinct(vec![sb]));
                        return Ok(false);
                    }
                    if values {
                        // A value's guards compare it by value: whether it is the other
                        // object is guarded apart (an equal tuple is not the one it equals).
                        let check = if same {
                            Check::SameAs(sa)
                        } else {
                            Check::Distinct(vec![sa])
                        };
                        self.add_guard(sb, check);
                    }
                }
                let (a, b) = (self.identity_of(left)?, self.identity_of(right)?);
                Ok(a.is(&b))
            }
            (1, 1) => {
                let (Val::Tensor { example: a, .. }, Val::Tensor { example: b, .. }) =
                    (self.val(left), self.val(right))
                else {
                    unreachable!()
                };
                Ok(a.is(b))
            }
            // The empty tuple is one object, however made.
            _ if self.is_empty_tuple(left) && self.is_empty_tuple(right) => {
                // Guarded so (a frame's tuple on its type and length).
                self.items_of(left)?;
                self.items_of(right)?;
                Ok(true)
            }
            // A tensor, container or function of the translation is never a frame object.
            _ => {
                for v in [left, right] {
                    if let Val::Obj { obj, .. } = self.val(v) {
                        let obj = obj.clone();
                        self.guard_type(v);
                        if obj.is_none() {
                            let _ = self.concrete(v)?;
                        }
                    }
                }
                Ok(false)
            }
        }
    }

    pub(super) fn contains(&mut self, container: Vid, item: Vid) -> Res<bool> {
        let container = self.realize(container)?;
        let val = self.val(container).clone();
        if let Some(found) = kind_of(&val).contains(self, container, &val, item)? {
            return Ok(found);
        }
        if let Some(namespace) = self.class_namespace(container)? {
            if let Some(entry) = self.class_namespace_entry(namespace, item)? {
                return Ok(entry.is_some());
            }
        }
        no_tensor_in(self, container, item)?;
        // Computed now where no method of either runs Python code that may answer otherwise
        // on a later call (a container's `__contains__`, an item's `__hash__` or `__eq__`).
        let c = self.folded_argument(container, "in")?;
        let i = self.folded_argument(item, "member")?;
        match (c, i) {
            (Some(c), Some(i)) => Ok(c.contains(i)?),
            (None, _) => self.refuse_folding("`in`", container),
            (_, None) => self.refuse_folding("`in`", item),
        }
    }

    pub(super) fn subscript(&mut self, container: Vid, key: Vid) -> Res<Vid> {
        let container = self.realize(container)?;
        if let Some(namespace) = self.class_namespace(container)? {
            let key_value = self.concrete(key)?;
            match self.class_namespace_entry(namespace, key)? {
                Some(Some(value)) => return Ok(value),
                Some(None) => {
                    return Err(Problem::Python(pyo3::exceptions::PyKeyError::new_err((
                        key_value.unbind(),
                    ))))
                }
                None => {}
            }
        }
        let val = self.val(container).clone();
        match kind_of(&val).item(self, container, &val, key)? {
            Some(item) => Ok(item),
            None => unsupported("indexing an internal value"),
        }
    }

    /// A symbolic copy of a list, tuple or dict from the frame for reading (the mutated copy
    /// once there is one).
    pub(super) fn readonly_copy(&mut self, container: Vid) -> Res<Option<Vid>> {
        let Val::Obj { obj, source: Some(_) } = self.val(container) else {
            return Ok(None);
        };
        let obj = obj.clone();
        if let Some(copy) = self.mutated.get(&(obj.as_ptr() as usize)) {
            return Ok(Some(*copy));
        }
        if obj.is_exact_instance_of::<PyList>() {
            let items = self.items_of(container)?;
            return Ok(Some(self.push_val(Val::List(items))));
        }
        if obj.is_exact_instance_of::<PyTuple>() {
            let items = self.items_of(container)?;
            return Ok(Some(self.push_val(Val::Tuple(items))));
        }
        let pairs = self.dict_items(container)?;
        Ok(Some(self.push_val(Val::Dict(pairs))))
    }

    /// The symbolic copy of a list or dict from the frame, made on its first mutation: a
    /// list's is written back to it after the graph runs, the operations on a dict's are
    /// replayed on it (`dict_op`).
    pub(super) fn mutable_copy(&mut self, container: Vid) -> Res<Option<Vid>> {
        let Val::Obj { obj, source: Some(s) } = self.val(container) else {
            return Ok(None);
        };
        let (obj, s) = (obj.clone(), *s);
        if let Some(copy) = self.mutated.get(&(obj.as_ptr() as usize)) {
            return Ok(Some(*copy));
        }
        let copy = if obj.is_exact_instance_of::<PyList>() {
            let items = self.items_of(container)?;
            self.push_val(Val::List(items))
        } else if obj.is_exact_instance_of::<PyDict>() {
            let items = self.dict_items(container)?;
            let copy = self.push_val(Val::Dict(items));
            self.frame_dicts.insert(copy, s);
            copy
        } else {
            return Ok(None);
        };
        self.mutated.insert(obj.as_ptr() as usize, copy);
        self.side_effects.push(SideEffect::Replace {
            target: s,
            contents: copy,
        });
        Ok(Some(copy))
    }

    pub(super) fn store_subscript(&mut self, container: Vid, key: Vid, value: Vid) -> Res<()> {
        let container = self.realize(container)?;
        let container = self.mutable_copy(container)?.unwrap_or(container);
        let val = self.val(container).clone();
        if !kind_of(&val).set_item(self, container, &val, key, value)? {
            return unsupported("item assignment to an object");
        }
        Ok(())
    }

    pub(super) fn delete_subscript(&mut self, container: Vid, key: Vid) -> Res<()> {
        let container = self.realize(container)?;
        let container = self.mutable_copy(container)?.unwrap_or(container);
        let key = self.concrete(key)?;
        let val = self.val(container).clone();
        if !kind_of(&val).del_item(self, container, &val, &key)? {
            return unsupported("item deletion on an object");
        }
        Ok(())
    }
}
