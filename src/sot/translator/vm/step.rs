//! One instruction run (the opcode dispatch).

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// Runs one instruction; `Some(value)` when the frame returns.
    pub(super) fn step(&mut self, frame: &mut Frame<'py>) -> Res<Option<Vid>> {
        let Some(instr) = frame.instrs.get(frame.pc).cloned() else {
            return unsupported("ran past the end of the code");
        };
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return graph_break(format!(
                "translation too long: more than {MAX_STEPS} instructions simulated"
            ));
        }
        if instr.location.line > 0 {
            self.location = (instr.location.line, frame.filename.clone());
        }
        frame.pc += 1;
        let arg = instr.arg;
        match instr.op {
            Op::Resume => frame.resumed = true,
            Op::MakeCell if frame.resumed => {
                // An inlined comprehension's variable that a closure captures (3.12+): a new
                // cell replaces the frame's variable, whose own cell waits on the stack, which
                // neither generated code nor a resume function can hand on. The frame runs as
                // it is (an inlined callee: as its own frame, from a break).
                let what = "a closure over a comprehension's variable (a cell made mid-function)";
                return Err(if self.depth == 0 {
                    Problem::Eager(what.to_owned())
                } else {
                    Problem::Break(what.to_owned())
                });
            }
            Op::Nop | Op::CopyFreeVars | Op::MakeCell | Op::GenStart => {}
            Op::ReturnGenerator => {
                let none = self.none();
                frame.stack.push(none);
            }
            Op::PopTop => {
                Self::pop(frame)?;
            }
            Op::PushNull => {
                let null = self.push_val(Val::Null);
                frame.stack.push(null);
            }
            Op::Copy => {
                let n = Self::int_arg(arg)?;
                let Some(v) = frame.stack.len().checked_sub(n).map(|i| frame.stack[i]) else {
                    return unsupported("stack underflow");
                };
                frame.stack.push(v);
            }
            Op::Swap => {
                let n = Self::int_arg(arg)?;
                let len = frame.stack.len();
                if n > len || n < 1 {
                    return unsupported("stack underflow");
                }
                frame.stack.swap(len - 1, len - n);
            }
            Op::RotN => {
                let n = Self::int_arg(arg)?;
                let top = Self::pop(frame)?;
                let at = frame
                    .stack
                    .len()
                    .checked_sub(n - 1)
                    .map_or_else(|| unsupported("stack underflow"), Ok)?;
                frame.stack.insert(at, top);
            }
            Op::LoadConst => {
                let v = self.const_at(frame, arg)?;
                frame.stack.push(v);
            }
            Op::LoadCommonConstant => {
                let Arg::Enum(name) = arg else {
                    return unsupported("LOAD_COMMON_CONSTANT without a name");
                };
                let value = builtin(self.py, name)?;
                let v = self.constant(value);
                frame.stack.push(v);
            }
            Op::LoadFast | Op::LoadFastCheck | Op::LoadClosure => {
                let v = frame.locals[Self::var_at(arg)?];
                if matches!(self.val(v), Val::Null) {
                    let name = frame.vars.all()[Self::var_at(arg)?].to_owned();
                    return Err(Problem::Python(pyo3::exceptions::PyUnboundLocalError::new_err(
                        format!(
                            "cannot access local variable '{name}' where it is not associated with a value"
                        ),
                    )));
                }
                frame.stack.push(v);
            }
            Op::LoadFastAndClear => {
                let slot = Self::var_at(arg)?;
                let v = frame.locals[slot];
                frame.stack.push(v);
                frame.locals[slot] = self.push_val(Val::Null);
            }
            Op::StoreFast | Op::DeleteFast => {
                let slot = Self::var_at(arg)?;
                let own_variable = !is_resume_local(frame.vars.all()[slot]);
                if self.depth == 0 && own_variable && self.drops_a_watched_object(frame.locals[slot])? {
                    return graph_break(
                        "a store over the frame's only reference to an object with weak references or \
                         a finalizer (they run where the original drops it)",
                    );
                }
                frame.locals[slot] = match instr.op {
                    Op::StoreFast => Self::pop(frame)?,
                    _ => self.push_val(Val::Null),
                };
            }
            Op::LoadDeref | Op::LoadClassderef => {
                let cell = self.cell_of(frame, arg)?;
                match self.cells[cell] {
                    Some(v) => frame.stack.push(v),
                    None => {
                        return Err(Problem::Python(pyo3::exceptions::PyNameError::new_err(
                            "free variable referenced before assignment",
                        )))
                    }
                }
            }
            Op::StoreDeref => {
                let cell = self.cell_of(frame, arg)?;
                let v = Self::pop(frame)?;
                self.store_cell(cell, Some(v))?;
            }
            Op::DeleteDeref => {
                let cell = self.cell_of(frame, arg)?;
                self.store_cell(cell, None)?;
            }
            Op::LoadGlobal | Op::LoadName => {
                let name = Self::name_at(frame, arg)?;
                let v = self.global(frame, &name)?;
                frame.stack.push(v);
            }
            Op::StoreGlobal => {
                let name = Self::name_at(frame, arg)?;
                let v = Self::pop(frame)?;
                self.store_global(frame, name, Some(v))?;
            }
            Op::DeleteGlobal => {
                let name = Self::name_at(frame, arg)?;
                self.store_global(frame, name, None)?;
            }
            Op::LoadAttr => {
                let name = Self::name_at(frame, arg)?;
                let owner = Self::pop(frame)?;
                let v = self.load_attr(owner, &name)?;
                frame.stack.push(v);
            }
            Op::LoadMethod => {
                let name = Self::name_at(frame, arg)?;
                let owner = Self::pop(frame)?;
                let v = self.load_attr(owner, &name)?;
                let null = self.push_val(Val::Null);
                match self.table.call_layout {
                    CallLayout::CallableFirst => frame.stack.extend([v, null]),
                    _ => frame.stack.extend([null, v]),
                }
            }
            Op::LoadSpecial => {
                let Arg::Enum(name) = arg else {
                    return unsupported("LOAD_SPECIAL without a name");
                };
                let owner = Self::pop(frame)?;
                let method = self.special_method(owner, name)?;
                // As CPython does for a method: the function, then its self (never a NULL
                // slot, which the code after `with` pops as a value).
                let Val::Method { function, receiver } = self.val(method).clone_val() else {
                    return unsupported("LOAD_SPECIAL of something that is no method");
                };
                frame.stack.extend([function, receiver]);
            }
            Op::DeleteAttr => {
                let name = Self::name_at(frame, arg)?;
                let owner = Self::pop(frame)?;
                match self.val(owner).clone_val() {
                    Val::Object { class, mut attrs } => {
                        let before = attrs.len();
                        attrs.retain(|(n, _)| *n != name);
                        if attrs.len() == before {
                            return Err(Problem::Python(pyo3::exceptions::PyAttributeError::new_err(name)));
                        }
                        self.values[owner] = Val::Object { class, attrs };
                    }
                    _ => self.delete_attr(owner, name)?,
                }
            }
            Op::StoreAttr => {
                let name = Self::name_at(frame, arg)?;
                let owner = Self::pop(frame)?;
                let value = Self::pop(frame)?;
                self.store_attr(owner, name, value)?;
            }
            Op::LoadSuperAttr => {
                let Arg::NameFlags(_, flags) = arg else {
                    return unsupported("LOAD_SUPER_ATTR without flags");
                };
                let name = Self::name_at(frame, arg)?;
                let [_super_fn, class, receiver]: [Vid; 3] =
                    Self::pop_n(frame, 3)?.try_into().expect("three");
                let class = self.concrete(class)?;
                let attribute = self.super_attr(class, receiver, &name)?;
                if flags & 1 != 0 {
                    let null = self.push_val(Val::Null);
                    match self.table.call_layout {
                        CallLayout::CallableFirst => frame.stack.extend([attribute, null]),
                        _ => frame.stack.extend([null, attribute]),
                    }
                } else {
                    frame.stack.push(attribute);
                }
            }
            Op::UnaryNegative | Op::UnaryPositive | Op::UnaryInvert => {
                let v = Self::pop(frame)?;
                let name = match instr.op {
                    Op::UnaryNegative => "neg",
                    Op::UnaryPositive => "pos",
                    _ => "invert",
                };
                let r = self.operator_call(name, vec![v])?;
                frame.stack.push(r);
            }
            Op::UnaryNot => {
                let v = Self::pop(frame)?;
                let r = !self.truthy(v)?;
                let r = self.boolean(r);
                frame.stack.push(r);
            }
            Op::ToBool => {
                let v = Self::pop(frame)?;
                let r = self.truthy(v)?;
                let r = self.boolean(r);
                frame.stack.push(r);
            }
            Op::BinaryOp => {
                let Arg::BinaryOp { op, inplace } = arg else {
                    return unsupported("BINARY_OP without an operator");
                };
                let right = Self::pop(frame)?;
                let left = Self::pop(frame)?;
                let r = self.binary(left, right, op, inplace)?;
                frame.stack.push(r);
            }
            Op::CompareOp => {
                let Arg::Compare { op, to_bool } = arg else {
                    return unsupported("COMPARE_OP without an operator");
                };
                let right = Self::pop(frame)?;
                let left = Self::pop(frame)?;
                let name = COMPARE_NAMES[op as usize];
                let mut r = match self.compare_made_objects(name, left, right)? {
                    Some(r) => r,
                    None => self.operator_call(name, vec![left, right])?,
                };
                if to_bool && !self.is_tensor_val(r) {
                    let b = self.truthy(r)?;
                    r = self.boolean(b);
                }
                frame.stack.push(r);
            }
            Op::IsOp => {
                let invert = Self::int_arg(arg)? != 0;
                let right = Self::pop(frame)?;
                let left = Self::pop(frame)?;
                let same = self.identical(left, right)?;
                let r = self.boolean(same != invert);
                frame.stack.push(r);
            }
            Op::ContainsOp => {
                let invert = Self::int_arg(arg)? != 0;
                let container = Self::pop(frame)?;
                let item = Self::pop(frame)?;
                let found = self.contains(container, item)?;
                let r = self.boolean(found != invert);
                frame.stack.push(r);
            }
            Op::BinarySlice => {
                let [container, start, stop]: [Vid; 3] = Self::pop_n(frame, 3)?.try_into().expect("three");
                let none = self.none();
                let slice = self.push_val(Val::Slice(start, stop, none));
                let r = self.subscript(container, slice)?;
                frame.stack.push(r);
            }
            Op::StoreSlice => {
                let [value, container, start, stop]: [Vid; 4] =
                    Self::pop_n(frame, 4)?.try_into().expect("four");
                let none = self.none();
                let slice = self.push_val(Val::Slice(start, stop, none));
                self.store_subscript(container, slice, value)?;
            }
            Op::StoreSubscr => {
                let [value, container, key]: [Vid; 3] = Self::pop_n(frame, 3)?.try_into().expect("three");
                self.store_subscript(container, key, value)?;
            }
            Op::DeleteSubscr => {
                let [container, key]: [Vid; 2] = Self::pop_n(frame, 2)?.try_into().expect("two");
                self.delete_subscript(container, key)?;
            }
            Op::BuildSlice => {
                let n = Self::int_arg(arg)?;
                let parts = Self::pop_n(frame, n)?;
                let none = self.none();
                let v = match parts.as_slice() {
                    [a, b] => Val::Slice(*a, *b, none),
                    [a, b, c] => Val::Slice(*a, *b, *c),
                    _ => return unsupported("BUILD_SLICE count"),
                };
                let v = self.push_val(v);
                frame.stack.push(v);
            }
            Op::BuildTuple | Op::BuildList | Op::BuildSet => {
                let items = Self::pop_n(frame, Self::int_arg(arg)?)?;
                let v = match instr.op {
                    Op::BuildTuple => self.push_val(Val::Tuple(items)),
                    Op::BuildList => self.push_val(Val::List(items)),
                    _ => {
                        let set = self.push_val(Val::Set(Vec::new()));
                        self.add_items(set, items)?;
                        set
                    }
                };
                frame.stack.push(v);
            }
            Op::BuildMap => {
                let flat = Self::pop_n(frame, 2 * Self::int_arg(arg)?)?;
                let mut items = Vec::new();
                for pair in flat.chunks(2) {
                    self.dict_set(&mut items, pair[0], pair[1])?;
                }
                let v = self.push_val(Val::Dict(items));
                frame.stack.push(v);
            }
            Op::BuildConstKeyMap => {
                let keys = Self::pop(frame)?;
                let values = Self::pop_n(frame, Self::int_arg(arg)?)?;
                let keys = self.items_of(keys)?;
                let mut items = Vec::new();
                for (k, v) in keys.into_iter().zip(values) {
                    self.dict_set(&mut items, k, v)?;
                }
                let v = self.push_val(Val::Dict(items));
                frame.stack.push(v);
            }
            Op::BuildString => {
                let parts = Self::pop_n(frame, Self::int_arg(arg)?)?;
                let mut text = String::new();
                for p in parts {
                    text.push_str(&self.concrete(p)?.extract::<String>()?);
                }
                let v = self.constant(PyString::new(self.py, &text).into_any());
                frame.stack.push(v);
            }
            Op::ListAppend | Op::SetAdd => {
                let v = Self::pop(frame)?;
                let depth = Self::int_arg(arg)?;
                let target = frame.stack[frame.stack.len() - depth];
                self.add_items(target, vec![v])?;
            }
            Op::MapAdd => {
                let value = Self::pop(frame)?;
                let key = Self::pop(frame)?;
                let depth = Self::int_arg(arg)?;
                let target = frame.stack[frame.stack.len() - depth];
                let Val::Dict(mut items) = self.val(target).clone_val() else {
                    return unsupported("MAP_ADD to a dict from outside");
                };
                self.dict_set(&mut items, key, value)?;
                self.values[target] = Val::Dict(items);
            }
            Op::ListExtend | Op::SetUpdate => {
                let source = Self::pop(frame)?;
                let depth = Self::int_arg(arg)?;
                let target = frame.stack[frame.stack.len() - depth];
                let new_items = self.items_of(source)?;
                self.add_items(target, new_items)?;
            }
            Op::DictUpdate | Op::DictMerge => {
                let source = Self::pop(frame)?;
                let depth = Self::int_arg(arg)?;
                let target = frame.stack[frame.stack.len() - depth];
                let pairs = self.dict_items(source)?;
                let Val::Dict(mut items) = self.val(target).clone_val() else {
                    return unsupported("DICT_UPDATE of a dict from outside");
                };
                for (k, v) in pairs {
                    self.dict_set(&mut items, k, v)?;
                }
                self.values[target] = Val::Dict(items);
            }
            Op::ListToTuple => {
                let v = Self::pop(frame)?;
                let items = self.items_of(v)?;
                let t = self.push_val(Val::Tuple(items));
                frame.stack.push(t);
            }
            Op::CallIntrinsic1 => {
                let Arg::Enum(name) = arg else {
                    return unsupported("CALL_INTRINSIC_1 without a name");
                };
                let v = Self::pop(frame)?;
                let r = match name {
                    "INTRINSIC_LIST_TO_TUPLE" => {
                        let items = self.items_of(v)?;
                        self.push_val(Val::Tuple(items))
                    }
                    "INTRINSIC_UNARY_POSITIVE" => self.operator_call("pos", vec![v])?,
                    _ => return unsupported(format!("intrinsic {name}")),
                };
                frame.stack.push(r);
            }
            Op::CallIntrinsic2 => {
                let Arg::Enum(name) = arg else {
                    return unsupported("CALL_INTRINSIC_2 without a name");
                };
                let second = Self::pop(frame)?;
                Self::pop(frame)?;
                let r = match name {
                    "INTRINSIC_PREP_RERAISE_STAR" => self.prep_reraise_star(second)?,
                    _ => return unsupported(format!("intrinsic {name}")),
                };
                frame.stack.push(r);
            }
            Op::UnpackSequence => {
                let v = Self::pop(frame)?;
                let items = self.items_of(v)?;
                if items.len() != Self::int_arg(arg)? {
                    return unsupported("unpacking raised (wrong number of values)");
                }
                frame.stack.extend(items.into_iter().rev());
            }
            Op::UnpackEx => {
                let n = Self::int_arg(arg)?;
                let (before, after) = (n & 0xff, n >> 8);
                let v = Self::pop(frame)?;
                let items = self.items_of(v)?;
                if items.len() < before + after {
                    return unsupported("unpacking raised (not enough values)");
                }
                let middle = self.push_val(Val::List(items[before..items.len() - after].to_vec()));
                let mut out: Vec<Vid> = items[..before].to_vec();
                out.push(middle);
                out.extend_from_slice(&items[items.len() - after..]);
                frame.stack.extend(out.into_iter().rev());
            }
            Op::FormatValue => {
                let flags = Self::int_arg(arg)?;
                let spec = if flags & 4 != 0 {
                    Some(Self::pop(frame)?)
                } else {
                    None
                };
                let v = Self::pop(frame)?;
                let r = self.format(v, flags & 3, spec)?;
                frame.stack.push(r);
            }
            Op::ConvertValue => {
                let v = Self::pop(frame)?;
                let r = self.convert(v, Self::int_arg(arg)?)?;
                frame.stack.push(r);
            }
            Op::FormatSimple => {
                let v = Self::pop(frame)?;
                let r = self.format(v, 0, None)?;
                frame.stack.push(r);
            }
            Op::FormatWithSpec => {
                let spec = Self::pop(frame)?;
                let v = Self::pop(frame)?;
                let r = self.format(v, 0, Some(spec))?;
                frame.stack.push(r);
            }
            Op::BuildInterpolation => {
                let flags = Self::int_arg(arg)?;
                let spec = if flags & 1 != 0 {
                    Some(Self::pop(frame)?)
                } else {
                    None
                };
                let expression = Self::pop(frame)?;
                let value = Self::pop(frame)?;
                let r = self.interpolation(value, expression, flags >> 2, spec)?;
                frame.stack.push(r);
            }
            Op::BuildTemplate => {
                let interpolations = Self::pop(frame)?;
                let strings = Self::pop(frame)?;
                let r = self.template(strings, interpolations)?;
                frame.stack.push(r);
            }
            Op::GetIter | Op::GetYieldFromIter => {
                let v = Self::pop(frame)?;
                let it = self.iterator(v)?;
                frame.stack.push(it);
            }
            Op::ForIter => {
                let it = Self::top(frame)?;
                if let Some(item) = self.advance(it)? {
                    frame.stack.push(item);
                } else {
                    let effect = self.stack_effect("FOR_ITER", 0, true)?;
                    if effect < 0 {
                        Self::pop_n(frame, (-effect) as usize)?;
                    } else {
                        for _ in 0..effect {
                            let null = self.push_val(Val::Null);
                            frame.stack.push(null);
                        }
                    }
                    Self::jump(frame, arg)?;
                }
            }
            Op::EndFor | Op::PopIter => {
                let effect = self.stack_effect(instr.op.name(), 0, false)?;
                Self::pop_n(frame, (-effect).max(0) as usize)?;
            }
            Op::Jump | Op::JumpNoInterrupt => Self::jump(frame, arg)?,
            Op::PopJumpIfTrue | Op::PopJumpIfFalse => {
                let v = Self::pop(frame)?;
                if self.truthy(v)? == (instr.op == Op::PopJumpIfTrue) {
                    Self::jump(frame, arg)?;
                }
            }
            Op::PopJumpIfNone | Op::PopJumpIfNotNone => {
                let v = Self::pop(frame)?;
                let none = self.none();
                let is_none = self.identical(v, none)?;
                if is_none == (instr.op == Op::PopJumpIfNone) {
                    Self::jump(frame, arg)?;
                }
            }
            Op::JumpIfTrueOrPop | Op::JumpIfFalseOrPop => {
                let v = Self::top(frame)?;
                if self.truthy(v)? == (instr.op == Op::JumpIfTrueOrPop) {
                    Self::jump(frame, arg)?;
                } else {
                    Self::pop(frame)?;
                }
            }
            Op::SetupFinally => {
                let Arg::Target(handler) = arg else {
                    return unsupported("SETUP_FINALLY without a target");
                };
                frame.blocks.push(Block {
                    handler: Some(handler),
                    level: frame.stack.len(),
                });
            }
            Op::PopBlock => {
                frame.blocks.pop();
            }
            Op::SetupWith | Op::BeforeWith => {
                let manager = Self::pop(frame)?;
                let exit = self.special_method(manager, "__exit__")?;
                let enter = self.special_method(manager, "__enter__")?;
                let entered = self.call(enter, vec![], vec![])?;
                frame.stack.push(exit);
                if let (Op::SetupWith, Arg::Target(handler)) = (instr.op, arg) {
                    frame.blocks.push(Block {
                        handler: Some(handler),
                        level: frame.stack.len(),
                    });
                }
                frame.stack.push(entered);
            }
            Op::JumpIfNotExcMatch => {
                let [kind, kinds]: [Vid; 2] = Self::pop_n(frame, 2)?.try_into().expect("two");
                let (kind, kinds) = (self.concrete(kind)?, self.concrete(kinds)?);
                if !self.builtin("issubclass")?.call1((kind, kinds))?.is_truthy()? {
                    Self::jump(frame, arg)?;
                }
            }
            Op::Call | Op::CallMethod => {
                let Arg::Call { argc, kw_names } = arg else {
                    let argc = Self::int_arg(arg)?;
                    return self.do_call(frame, instr.op, argc, false).map(|()| None);
                };
                self.do_call(frame, instr.op, argc as usize, kw_names)?;
            }
            Op::CallFunctionEx => self.call_function_ex(frame, arg)?,
            Op::MakeFunction => self.make_function(frame, arg)?,
            Op::SetFunctionAttribute => {
                let flag = Self::int_arg(arg)?;
                let function = Self::pop(frame)?;
                let attribute = Self::pop(frame)?;
                self.set_function_attribute(function, flag, attribute)?;
                frame.stack.push(function);
            }
            Op::ReturnValue => {
                let v = Self::pop(frame)?;
                return Ok(Some(v));
            }
            Op::Send => {
                let sent = Self::pop(frame)?;
                let receiver = Self::top(frame)?;
                match self.send(receiver, sent)? {
                    Sent::Yielded(item) => frame.stack.push(item),
                    Sent::Returned(value) => {
                        // Exhausted: the receiver stays below the value where the version's
                        // END_SEND pops it (3.12+), else the value replaces it (3.11).
                        if self.stack_effect("SEND", 0, true)? < 0 {
                            Self::pop(frame)?;
                        }
                        frame.stack.push(value);
                        Self::jump(frame, arg)?;
                    }
                }
            }
            Op::EndSend => {
                let value = Self::pop(frame)?;
                Self::pop(frame)?;
                frame.stack.push(value);
            }
            Op::YieldFrom => {
                // 3.9/3.10: yields the receiver's item and runs again when resumed (with
                // the None sent in on top), until the receiver returns.
                let sent = Self::pop(frame)?;
                let receiver = Self::top(frame)?;
                match self.send(receiver, sent)? {
                    Sent::Yielded(item) => {
                        frame.yielded = Some(item);
                        let none = self.none();
                        frame.stack.push(none);
                        frame.pc -= 1;
                    }
                    Sent::Returned(value) => {
                        Self::pop(frame)?;
                        frame.stack.push(value);
                    }
                }
            }
            Op::YieldValue => {
                // The generator is suspended here; resumed, it finds None sent in.
                let v = Self::pop(frame)?;
                frame.yielded = Some(v);
                let none = self.none();
                frame.stack.push(none);
            }
            Op::MatchMapping | Op::MatchSequence => {
                let subject = Self::top(frame)?;
                let matched = self.match_kind(subject, instr.op == Op::MatchMapping)?;
                let r = self.boolean(matched);
                frame.stack.push(r);
            }
            Op::GetLen => {
                let subject = Self::top(frame)?;
                let len = self.builtin("len")?;
                let r = self
                    .call_builtin(&len, None, &[subject], &[])?
                    .expect("len is a builtin");
                frame.stack.push(r);
            }
            Op::MatchKeys => {
                let depth = frame.stack.len();
                let (subject, keys) = (frame.stack[depth - 2], frame.stack[depth - 1]);
                let values = self.match_keys(subject, keys)?;
                let matched = values.is_some();
                let result = values.unwrap_or_else(|| self.none());
                frame.stack.push(result);
                if self.pushes_match_flag("MATCH_KEYS", 2)? {
                    let flag = self.boolean(matched);
                    frame.stack.push(flag);
                }
            }
            Op::MatchClass => {
                let count = Self::int_arg(arg)?;
                let names = Self::pop(frame)?;
                let class = Self::pop(frame)?;
                let subject = Self::pop(frame)?;
                let attributes = self.match_class(subject, class, count, names)?;
                let with_flag = self.pushes_match_flag("MATCH_CLASS", -1)?;
                match (attributes, with_flag) {
                    (Some(tuple), true) => {
                        let flag = self.boolean(true);
                        frame.stack.extend([tuple, flag]);
                    }
                    (None, true) => {
                        let flag = self.boolean(false);
                        frame.stack.extend([subject, flag]);
                    }
                    (Some(tuple), false) => frame.stack.push(tuple),
                    (None, false) => {
                        let none = self.none();
                        frame.stack.push(none);
                    }
                }
            }
            Op::CopyDictWithoutKeys => {
                let keys = Self::pop(frame)?;
                let subject = Self::top(frame)?;
                let mut rest = self.dict_items(subject)?;
                for key in self.items_of(keys)? {
                    let key = self.concrete(key)?;
                    if let Some(index) = self.find_dict_key(&rest, &key)? {
                        rest.remove(index);
                    }
                }
                let r = self.push_val(Val::Dict(rest));
                frame.stack.push(r);
            }
            Op::RaiseVarargs => {
                let count = Self::int_arg(arg)?;
                let cause = if count == 2 { Some(Self::pop(frame)?) } else { None };
                let exception = match count {
                    0 => *self.exc_stack.last().map_or_else(
                        || {
                            Err(Problem::Python(pyo3::exceptions::PyRuntimeError::new_err(
                                "No active exception to reraise",
                            )))
                        },
                        Ok,
                    )?,
                    _ => Self::pop(frame)?,
                };
                let exception = if self.concrete(exception)?.is_instance_of::<PyType>() {
                    self.call(exception, vec![], vec![])?
                } else {
                    exception
                };
                if let Some(cause) = cause {
                    let (exc, cause) = (self.concrete(exception)?, self.concrete(cause)?);
                    let cause = if cause.is_instance_of::<PyType>() {
                        cause.call0()?
                    } else {
                        cause
                    };
                    exc.setattr("__cause__", cause)?;
                }
                return Err(self.raise(exception, count > 0));
            }
            Op::Reraise => {
                let exception = match self.table.exceptions {
                    ExceptionModel::Table => Self::pop(frame)?,
                    // (traceback, value, type): the value.
                    ExceptionModel::BlockStack => Self::pop_n(frame, 3)?[1],
                };
                return Err(self.raise(exception, false));
            }
            Op::PushExcInfo => {
                let exception = Self::pop(frame)?;
                let previous = match self.exc_stack.last() {
                    Some(p) => *p,
                    None => self.none(),
                };
                // A slot of its own, to know it again at a break.
                let previous = self.push_val(self.values[previous].clone_val());
                self.exception_slots.insert(previous, exception);
                frame.stack.extend([previous, exception]);
                self.exc_stack.push(exception);
            }
            Op::PopExcept => {
                match self.table.exceptions {
                    ExceptionModel::Table => {
                        Self::pop(frame)?;
                    }
                    ExceptionModel::BlockStack => {
                        // The handler's block, and the previous exception's triple on top
                        // (a value being returned may sit under it).
                        let Some(Block { handler: None, .. }) = frame.blocks.pop() else {
                            return unsupported("POP_EXCEPT outside an exception handler");
                        };
                        Self::pop_n(frame, 3)?;
                    }
                }
                self.exc_stack.pop();
            }
            Op::CheckExcMatch => {
                let kinds = Self::pop(frame)?;
                let exception = Self::top(frame)?;
                // Only the exception's type decides (and is guarded), not its identity.
                let (kind, kinds) = (self.type_of(exception)?, self.concrete(kinds)?);
                let matched = self.builtin("issubclass")?.call1((kind, kinds))?.is_truthy()?;
                let r = self.boolean(matched);
                frame.stack.push(r);
            }
            Op::CheckEgMatch => {
                let kinds = Self::pop(frame)?;
                let exception = Self::pop(frame)?;
                let (rest, matched) = self.exception_group_match(exception, kinds)?;
                if !self.concrete(matched)?.is_none() {
                    // The clause handles what it matched: that is the current exception.
                    if let Some(current) = self.exc_stack.last_mut() {
                        *current = matched;
                    }
                }
                self.unhandled_groups.insert(rest);
                frame.stack.extend([rest, matched]);
            }
            Op::PrepReraiseStar => {
                let raised = Self::pop(frame)?;
                Self::pop(frame)?;
                let r = self.prep_reraise_star(raised)?;
                frame.stack.push(r);
            }
            Op::WithExceptStart => {
                let depth = frame.stack.len();
                let exception = match self.table.exceptions {
                    ExceptionModel::Table => frame.stack[depth - 1],
                    ExceptionModel::BlockStack => frame.stack[depth - 2],
                };
                // The exit method (and, where LOAD_SPECIAL made it, its self slot) under
                // the saved instruction offset and the previous exception.
                let (exit, receiver) = if self.table.exceptions == ExceptionModel::BlockStack {
                    // exit, the previous exception's triple, then this one's (type on top).
                    (frame.stack[depth - 7], None)
                } else if self.table.has("LOAD_SPECIAL") {
                    (frame.stack[depth - 5], Some(frame.stack[depth - 4]))
                } else {
                    (frame.stack[depth - 4], None)
                };
                let exc = self.concrete(exception)?;
                let kind = self.constant(exc.get_type().into_any());
                let traceback = self.constant(exc.getattr("__traceback__")?);
                let mut args = Vec::new();
                if let Some(r) = receiver.filter(|r| !matches!(self.val(*r), Val::Null)) {
                    args.push(r);
                }
                args.extend([kind, exception, traceback]);
                let result = self.call(exit, args, vec![])?;
                frame.stack.push(result);
            }
            Op::LoadBuildClass => return unsupported("class definition"),
            Op::ImportName | Op::ImportFrom | Op::ImportStar => return unsupported("import"),
            other => return unsupported(format!("opcode {}", other.name())),
        }
        Ok(None)
    }
}
