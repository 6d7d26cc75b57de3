//! The graph: inputs, recorded operations and their results, tensor kinds, dynamic numbers.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// A frame value that is a tensor becomes a graph input; anything else stays.
    pub(super) fn realize_tensor(&mut self, vid: Vid) -> Res<Vid> {
        if let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(vid)
        {
            if self.backend.is_tensor(obj) {
                let (obj, source) = (obj.clone(), *source);
                let check = self.backend.tensor_check(&obj)?;
                self.add_guard(source, check);
                self.values[vid] = self.input_tensor_of(source, obj)?;
            }
        }
        Ok(vid)
    }

    /// The graph input a tensor of the frame is. One the frame holds at several sources
    /// is one input (guarded to be the same object there), so that `is` and in-place
    /// operations see one object; the others are guarded to be different objects.
    fn input_tensor_of(&mut self, source: SourceId, obj: Bound<'py, PyAny>) -> Res<Val<'py>> {
        let same = self
            .input_tensors
            .iter()
            .find(|(_, o)| o.is(&obj))
            .map(|(sym, _)| *sym);
        if let Some(sym) = same {
            // The first source's value: the input, with its example.
            let first = self.graph.inputs[sym];
            let example = match self.by_source.get(&first).map(|vid| &self.values[*vid]) {
                Some(Val::Tensor { example, .. }) => Some(example.clone()),
                _ => None,
            };
            if let Some(example) = example {
                self.add_guard(source, Check::SameAs(first));
                return Ok(Val::Tensor { sym, example });
            }
        }
        match self
            .guards
            .iter_mut()
            .find(|g| matches!(g.check, Check::Distinct(_)))
        {
            Some(Guard {
                check: Check::Distinct(sources),
                ..
            }) => sources.push(source),
            _ if !self.input_tensors.is_empty() => {
                let others = self
                    .input_tensors
                    .keys()
                    .map(|sym| self.graph.inputs[*sym])
                    .collect();
                self.add_guard(source, Check::Distinct(others));
            }
            _ => {}
        }
        let example = self.backend.example(&obj)?;
        let sym = self.add_input(source);
        self.input_tensors.insert(sym, obj);
        Ok(Val::Tensor { sym, example })
    }

    /// A dynamic number from the frame as a graph input (guarded on its type only).
    pub(super) fn scalar_input(&mut self, vid: Vid) -> Vid {
        if let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(vid)
        {
            let (obj, source) = (obj.clone(), *source);
            self.guard_type(vid);
            let sym = self.add_input(source);
            self.values[vid] = Val::Scalar {
                sym,
                example: obj.clone(),
                deps: vec![(source, obj)],
            };
        }
        vid
    }

    /// A new graph input's symbol. Inputs come first: met after operations were recorded,
    /// the symbols of the operations' results are renumbered.
    pub(super) fn add_input(&mut self, source: SourceId) -> Sym {
        let inputs = self.graph.inputs.len();
        self.graph_mut().inputs.push(source);
        if self.graph.nodes.is_empty() {
            return inputs;
        }
        let shift = |sym: &mut Sym| {
            if *sym >= inputs {
                *sym += 1;
            }
        };
        // Only the values that move are written (a write copies the chunk a snapshot shares).
        for vid in 0..self.values.len() {
            if matches!(&self.values[vid], Val::Tensor { sym, .. } | Val::Scalar { sym, .. } if *sym >= inputs)
            {
                if let Val::Tensor { sym, .. } | Val::Scalar { sym, .. } = &mut self.values[vid] {
                    shift(sym);
                }
            }
        }
        for node in &mut self.graph_mut().nodes {
            std::rc::Rc::make_mut(node).visit_syms(&mut |sym| shift(sym));
        }
        inputs
    }

    pub(super) fn graph_arg(&mut self, vid: Vid) -> Res<(GraphArg<'py>, Bound<'py, PyAny>)> {
        self.graph_arg_within(vid, MAX_NESTING)
    }

    /// `graph_arg`, for containers nested at most `depth` deep (a list holding itself
    /// nests without end).
    fn graph_arg_within(&mut self, vid: Vid, depth: usize) -> Res<(GraphArg<'py>, Bound<'py, PyAny>)> {
        let Some(depth) = depth.checked_sub(1) else {
            return unsupported(
                "containers nested too deep, or holding themselves, passed to a tensor operation",
            );
        };
        let vid = self.realize(vid)?;
        Ok(match self.val(vid).clone() {
            Val::Tensor { sym, example } => (GraphArg::Sym(sym), example),
            Val::Tuple(items) => {
                let (args, examples): (Vec<_>, Vec<_>) = items
                    .iter()
                    .map(|i| self.graph_arg_within(*i, depth))
                    .collect::<Res<Vec<_>>>()?
                    .into_iter()
                    .unzip();
                (GraphArg::Tuple(args), PyTuple::new(self.py, examples)?.into_any())
            }
            Val::List(items) => {
                let (args, examples): (Vec<_>, Vec<_>) = items
                    .iter()
                    .map(|i| self.graph_arg_within(*i, depth))
                    .collect::<Res<Vec<_>>>()?
                    .into_iter()
                    .unzip();
                (GraphArg::List(args), PyList::new(self.py, examples)?.into_any())
            }
            // A list or tuple from the frame, by its items (as the translation holds them
            // now: a list it changed is its copy).
            Val::Obj { obj, source: Some(_) }
                if obj.is_exact_instance_of::<PyList>() || obj.is_exact_instance_of::<PyTuple>() =>
            {
                let is_list = obj.is_exact_instance_of::<PyList>();
                let items = self.items_of(vid)?;
                let made = self.push_val(if is_list {
                    Val::List(items)
                } else {
                    Val::Tuple(items)
                });
                self.graph_arg_within(made, depth)?
            }
            Val::Slice(a, b, c) => {
                let (a, ea) = self.graph_arg_within(a, depth)?;
                let (b, eb) = self.graph_arg_within(b, depth)?;
                let (c, ec) = self.graph_arg_within(c, depth)?;
                let example = builtin(self.py, "slice")?.call1((ea, eb, ec))?;
                (GraphArg::Slice(Box::new([a, b, c])), example)
            }
            _ => {
                let obj = self.concrete(vid)?;
                let constant = is_immutable(&obj)
                    || obj.is_callable()
                    || self.is_dtype_like(&obj)
                    || self.pin_enum_member(vid, &obj)?;
                if !constant {
                    return unsupported(format!(
                        "a mutable {} passed to a tensor operation",
                        obj.get_type().name()?
                    ));
                }
                (GraphArg::Const(obj.clone()), obj)
            }
        })
    }

    pub(super) fn is_dtype_like(&self, obj: &Bound<'py, PyAny>) -> bool {
        self.backend.is_constant_operand(obj)
    }

    /// Records `function(*args, **kwargs)` as an operation; its result is a tensor
    /// (or a container of tensors) computed on the example values.
    pub(super) fn record(
        &mut self,
        function: &Bound<'py, PyAny>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
    ) -> Res<Vid> {
        // Inputs first: realizing one renumbers the symbols of the operations' results.
        for arg in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
            self.realize_deep(*arg)?;
        }
        let mut graph_args = Vec::with_capacity(args.len());
        let mut examples = Vec::with_capacity(args.len());
        for arg in args {
            let (g, e) = self.graph_arg(arg)?;
            graph_args.push(g);
            examples.push(e);
        }
        let kw = PyDict::new(self.py);
        let mut graph_kwargs = Vec::with_capacity(kwargs.len());
        for (name, arg) in kwargs {
            let (g, e) = self.graph_arg(arg)?;
            kw.set_item(&name, e)?;
            graph_kwargs.push((name, g));
        }
        let (outcome, warned) = self.example_call(function, examples, &kw)?;
        let result = match outcome {
            Ok(result) => result,
            // Its warnings were not shown: run at a break, it shows them where it raises.
            Err(error) if warned => {
                return unsupported(format!(
                    "{} warned, then raised {}",
                    qualname(function),
                    qualname(&error.get_type(self.py).into_any())
                ));
            }
            // One that writes into an operand may have written part of it before it raised
            // (numpy's `a[0] = (1, None)` stores 1 first): the real one runs, at a break.
            Err(error) if self.writes_into_an_operand(function, &kw)? => {
                return unsupported(format!(
                    "{} raised {} (it may have written part of its operand)",
                    qualname(function),
                    qualname(&error.get_type(self.py).into_any())
                ));
            }
            Err(error) => return Err(error.into()),
        };
        let sym = self.push_node(function, graph_args, graph_kwargs, NodeKind::Operation);
        self.result_value(sym, result)
    }

    /// An operation on examples while translating (`Backend::call_example`), inside the
    /// regions open around it; its outcome, and whether it warned (noted: the frame then
    /// cannot run again at a failed assumption without warning twice).
    fn example_call(
        &mut self,
        function: &Bound<'py, PyAny>,
        examples: Vec<Bound<'py, PyAny>>,
        kwargs: &Bound<'py, PyDict>,
    ) -> PyResult<(PyResult<Bound<'py, PyAny>>, bool)> {
        let examples = PyTuple::new(self.py, examples)?;
        let (outcome, warned) =
            self.in_open_regions(|| self.backend.call_example(function, examples, kwargs))?;
        self.examples_warned |= warned;
        Ok((outcome, warned))
    }

    /// Whether `function` stores into one of its operands: `operator.setitem`, an in-place
    /// operator, or a call given `out=`.
    fn writes_into_an_operand(
        &self,
        function: &Bound<'py, PyAny>,
        kwargs: &Bound<'py, PyDict>,
    ) -> PyResult<bool> {
        if kwargs.contains("out")? {
            return Ok(true);
        }
        for name in WRITING_OPERATORS {
            if self.ops.op(name)?.is(function) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Adds a node at the current location; its result's symbol.
    pub(super) fn push_node(
        &mut self,
        function: &Bound<'py, PyAny>,
        args: Vec<GraphArg<'py>>,
        kwargs: Vec<(String, GraphArg<'py>)>,
        kind: NodeKind,
    ) -> Sym {
        let line = self.location.0;
        let filename = self.location.1.to_string();
        self.graph_mut().nodes.push(std::rc::Rc::new(Node {
            function: function.clone(),
            args,
            kwargs,
            kind,
            line,
            filename,
        }));
        self.graph.symbol_count() - 1
    }

    /// The value of an operation's result `example` held by symbol `sym`.
    pub(super) fn result_value(&mut self, sym: Sym, example: Bound<'py, PyAny>) -> Res<Vid> {
        if self.backend.is_tensor(&example) {
            return Ok(self.push_val(Val::Tensor { sym, example }));
        }
        if example.is_none() {
            return Ok(self.none());
        }
        let is_tuple = example.is_exact_instance_of::<PyTuple>();
        if is_tuple || example.is_exact_instance_of::<PyList>() {
            let items: Vec<Bound<'py, PyAny>> = example.try_iter()?.collect::<PyResult<_>>()?;
            // Tensors only (none at all may be a count computed from a tensor's value:
            // `(1, 2) * n` of a scalar 0).
            if !items.is_empty() && items.iter().all(|i| self.backend.is_tensor(i)) {
                let getitem = self.ops.op("getitem")?;
                let mut vids = Vec::with_capacity(items.len());
                for (index, item) in items.into_iter().enumerate() {
                    let args = vec![
                        GraphArg::Sym(sym),
                        GraphArg::Const(index.into_pyobject(self.py)?.into_any()),
                    ];
                    let item_sym = self.push_node(&getitem, args, vec![], NodeKind::Projection);
                    vids.push(self.push_val(Val::Tensor {
                        sym: item_sym,
                        example: item,
                    }));
                }
                return Ok(self.push_val(if is_tuple {
                    Val::Tuple(vids)
                } else {
                    Val::List(vids)
                }));
            }
        }
        if let Some(assumed) = self.assumed_bool(sym, &example)? {
            return Ok(assumed);
        }
        graph_break(format!(
            "tensor to python: an operation returned a {} computed from tensor values",
            example.get_type().name()?
        ))
    }

    pub(super) fn is_tensor_val(&self, vid: Vid) -> bool {
        match self.val(vid) {
            Val::Tensor { .. } => true,
            Val::Obj { obj, source: Some(_) } => self.backend.is_tensor(obj),
            _ => false,
        }
    }

    pub(super) fn contains_tensor(&self, vid: Vid) -> bool {
        let kinds = self.tensor_kinds([vid]);
        kinds.arrays || kinds.tensors
    }

    /// What tensors `vids` hold, in containers too: the backend's arrays, its other tensors.
    pub(super) fn tensor_kinds(&self, vids: impl IntoIterator<Item = Vid>) -> TensorKinds {
        let mut kinds = TensorKinds::default();
        // Without recursion, and each container once: a list may hold itself.
        let mut pending: Vec<Vid> = vids.into_iter().collect();
        let mut containers_seen = Vec::new();
        while let Some(vid) = pending.pop() {
            match self.val(vid) {
                Val::Tuple(items) | Val::List(items) | Val::NamedTuple { items, .. }
                    if !containers_seen.contains(&vid) =>
                {
                    containers_seen.push(vid);
                    pending.extend(items);
                }
                Val::Tuple(_) | Val::List(_) | Val::NamedTuple { .. } => {}
                Val::Slice(a, b, c) => pending.extend([*a, *b, *c]),
                Val::Tensor { example: obj, .. } | Val::Obj { obj, source: Some(_) }
                    if self.backend.is_tensor(obj) =>
                {
                    if self.backend.is_array(obj) {
                        kinds.arrays = true;
                    } else {
                        kinds.tensors = true;
                    }
                }
                _ => {}
            }
        }
        kinds
    }

    /// The kinds of tensor the operands of `what`, an operation on the backend's arrays, hold:
    /// one of its other tensors breaks, as the operation would read its values as an array.
    pub(super) fn array_operands(
        &self,
        what: &str,
        args: &[Vid],
        kwargs: &[(String, Vid)],
    ) -> Res<TensorKinds> {
        let kinds = self.tensor_kinds(args.iter().copied().chain(kwargs.iter().map(|(_, v)| *v)));
        if kinds.tensors {
            return graph_break(format!(
                "tensor to python: {what}() of a tensor (it reads the tensor as an array: data-dependent)"
            ));
        }
        Ok(kinds)
    }

    /// A number from a source seen to change between calls, not made a graph input yet.
    pub(super) fn is_dynamic_number(&self, vid: Vid) -> bool {
        match self.val(vid) {
            Val::Obj {
                obj,
                source: Some(source),
            } => self.sources.is_dynamic(*source) && is_number(obj),
            _ => false,
        }
    }

    /// Arithmetic on a dynamic number, recorded so that the number is not guarded on its
    /// value. Only operators whose result's kind cannot depend on the numbers' values: a
    /// tensor's meta attributes are kept by a Python number operand (numpy's NEP 50); of
    /// numbers alone, a division (always a float) and a float's power of an int (always a
    /// float) too, which may raise for a value the translation did not see (a division by
    /// zero, an overflow): the graph raises it, at the operation's line.
    /// None when the operation is computed the usual way.
    pub(super) fn dynamic_arithmetic(
        &mut self,
        name: &str,
        function: &Bound<'py, PyAny>,
        args: &[Vid],
    ) -> Res<Option<Vid>> {
        const ON_NUMBERS: &[&str] = &[
            "add", "sub", "mul", "iadd", "isub", "imul", "neg", "pos", "lt", "le", "eq", "ne", "gt", "ge",
        ];
        const ON_TENSORS: &[&str] = &["truediv", "floordiv", "mod", "itruediv", "ifloordiv", "imod"];
        const FLOAT_RESULTS: &[&str] = &["truediv", "itruediv", "pow", "ipow"];
        let dynamic =
            |vm: &Self, a: &Vid| vm.is_dynamic_number(*a) || matches!(vm.val(*a), Val::Scalar { .. });
        if !args.iter().any(|a| dynamic(self, a)) {
            return Ok(None);
        }
        let with_tensor = args.iter().any(|a| self.is_tensor_val(*a));
        let float_result = !with_tensor && FLOAT_RESULTS.contains(&name);
        if !(ON_NUMBERS.contains(&name) || with_tensor && ON_TENSORS.contains(&name) || float_result) {
            return Ok(None);
        }
        let mut examples = Vec::with_capacity(args.len());
        for &arg in args {
            let arg = self.realize_tensor(arg)?;
            match self.val(arg) {
                Val::Tensor { example, .. } | Val::Scalar { example, .. } => examples.push(example.clone()),
                Val::Obj { obj, .. } if is_number(obj) || obj.is_exact_instance_of::<PyBool>() => {
                    examples.push(obj.clone())
                }
                _ => return Ok(None),
            }
        }
        if float_result && name.ends_with("pow") {
            let float_of_int = examples.len() == 2
                && examples[0].is_exact_instance_of::<PyFloat>()
                && examples[1].is_exact_instance_of::<PyInt>();
            if !float_of_int {
                return Ok(None);
            }
        }
        let (outcome, warned) = self.example_call(function, examples, &PyDict::new(self.py))?;
        let result = match outcome {
            Ok(result) => result,
            // Recorded as an operation instead, which breaks there.
            Err(_) if warned => return Ok(None),
            Err(error) => return Err(error.into()),
        };
        if float_result && !result.is_exact_instance_of::<PyFloat>() {
            return Ok(None);
        }
        let tensor_result = self.backend.is_tensor(&result);
        let number_result = is_number(&result) || result.is_exact_instance_of::<PyBool>();
        if !(tensor_result || !with_tensor && number_result) {
            return Ok(None);
        }
        // Inputs first: making one renumbers the symbols of the operations' results.
        for &arg in args {
            if self.is_dynamic_number(arg) {
                self.scalar_input(arg);
            }
        }
        let mut graph_args = Vec::with_capacity(args.len());
        let mut deps: Vec<(SourceId, Bound<'py, PyAny>)> = Vec::new();
        for &arg in args {
            if let Val::Scalar { sym, deps: own, .. } = self.val(arg) {
                graph_args.push(GraphArg::Sym(*sym));
                for dep in own {
                    if !deps.iter().any(|(source, _)| *source == dep.0) {
                        deps.push(dep.clone());
                    }
                }
            } else {
                graph_args.push(self.graph_arg(arg)?.0);
            }
        }
        let kind = if tensor_result {
            NodeKind::Operation
        } else {
            NodeKind::Arithmetic
        };
        let sym = self.push_node(function, graph_args, vec![], kind);
        Ok(Some(if tensor_result {
            self.result_value(sym, result)?
        } else {
            self.push_val(Val::Scalar {
                sym,
                example: result,
                deps,
            })
        }))
    }

    /// `operator.<name>(*args)`: an operation if a tensor takes part, else computed now.
    pub(super) fn operator_call(&mut self, name: &str, args: Vec<Vid>) -> Res<Vid> {
        let function = self.ops.op(name)?;
        if let Some(result) = self.dynamic_arithmetic(name, &function, &args)? {
            return Ok(result);
        }
        if args.iter().any(|a| self.contains_tensor(*a)) {
            return self.record(&function, args, vec![]);
        }
        // Computed now, where every later call passing the guards computes the same.
        let mut objs = Vec::with_capacity(args.len());
        for arg in &args {
            match self.folded_argument(*arg, name)? {
                Some(obj) => objs.push(obj),
                None => return self.refuse_folding(&format!("operator {name}"), *arg),
            }
        }
        // `~` of a bool warns (deprecated); any other operator of numbers and strings cannot.
        let quiet = name != "invert" && objs.iter().all(is_quiet_value);
        let result = self.folded_call(
            || format!("operator {name}"),
            quiet,
            || function.call1(PyTuple::new(self.py, objs)?),
        )?;
        Ok(self.wrap_result(result))
    }
}

/// The `operator` functions that store into their first operand.
const WRITING_OPERATORS: &[&str] = &[
    "setitem",
    "delitem",
    "iadd",
    "iand",
    "iconcat",
    "ifloordiv",
    "ilshift",
    "imatmul",
    "imod",
    "imul",
    "ior",
    "ipow",
    "irshift",
    "isub",
    "itruediv",
    "ixor",
];
