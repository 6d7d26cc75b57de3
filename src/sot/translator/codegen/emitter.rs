//! The generated code's body: the graph called with its inputs, values rebuilt, side
//! effects replayed, exceptions made again.

use framehook_bytecode::canonical::{Arg, BinOp, CodeKind, Handler, Instruction, Op, Vars};
use framehook_bytecode::Location;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PySlice, PyString};

use crate::hookapi::pyobject::import;
use crate::sot::translator::code_pool::Generated;
use crate::sot::translator::guard::source::{Source, SourceId};
use crate::sot::translator::kinds::{kind_of, made_exception};
use crate::sot::translator::model::code::{Parameters, MAX_NESTING};
use crate::sot::translator::model::frame::{DictOp, SideEffect};
use crate::sot::translator::model::known::held;
use crate::sot::translator::model::value::{Val, Vid};
use crate::sot::translator::pyutil::builtin;

use super::emit::{Emit, Writer, OUTPUTS_LOCAL};
use super::plan::{
    detached_cells, made_objects, reachable, replayed_ops, shared_paths, sources_read_first, stored_cells,
    Plan, Rerun, MAX_CHAIN,
};

pub struct Emitter<'a, 'py> {
    pub plan: &'a Plan<'a, 'py>,
    pub w: Writer<'py>,
    /// Per graph symbol: its index among the graph's outputs.
    pub outputs: Vec<Option<usize>>,
    pub outputs_var: u32,
    /// Objects the translation made, by value, and their locals.
    pub objects: Vec<(Vid, u32)>,
    /// Sources read into a local before the side effects (which may change them).
    pub read_first: Vec<(SourceId, u32)>,
    /// While the code's start reads sources: the paths shared by several of them, each
    /// with its local and whether it holds the path's value yet (see `shared_paths`).
    pub paths: Vec<(SourceId, u32, bool)>,
    /// How deep `contents` is in nested containers.
    pub nesting: usize,
    /// Where the graph's run reruns the frame if it raises (`emit_rerun`), written at the end.
    pub rerun: Option<RerunPad>,
    /// The generators among `objects` not made yet (`make_objects`).
    pub generators_unmade: Vec<Vid>,
    /// Cells of inlined frames the functions among `objects` close over, made anew, and
    /// their locals (`plan::detached_cells`).
    pub detached_cells: Vec<(usize, u32)>,
    /// Those of `detached_cells` made so far (`make_detached_cells`).
    pub detached_made: Vec<usize>,
}

/// The graph's call, covered by the landing pad that reruns the frame: its instructions
/// (3.11+: given the pad as handler), or the `SETUP_FINALLY` before them (3.9/3.10).
pub struct RerunPad {
    covered: std::ops::Range<usize>,
    setup: Option<usize>,
}

impl<'a, 'py> Emitter<'a, 'py> {
    /// The generated code's start, the same for every plan: the prologue, the graph
    /// called, the objects the translation made, the side effects, the frame's cells.
    /// `vars` holds every local the caller needs already (see `OUTPUTS_LOCAL`).
    pub fn begin(
        plan: &'a Plan<'a, 'py>,
        mut vars: Vars,
        location: Location,
        before_a_step: bool,
    ) -> PyResult<Self> {
        vars.varnames.push(OUTPUTS_LOCAL.to_owned());
        let outputs_var = (vars.varnames.len() - 1) as u32;
        let objects = made_objects(
            plan.values,
            plan.cells,
            plan.dict_histories,
            &plan.roots,
            &mut vars,
        );
        let detached_cells = detached_cells(plan, &objects, &mut vars);
        let read_first = sources_read_first(plan, &mut vars, before_a_step);
        let paths = shared_paths(plan, &read_first, &mut vars);
        let mut outputs = vec![None; plan.graph.symbol_count()];
        for (index, sym) in plan.outputs.iter().enumerate() {
            outputs[*sym] = Some(index);
        }
        let generators_unmade = objects
            .iter()
            .map(|(vid, _)| *vid)
            .filter(|vid| matches!(plan.values[*vid], Val::Generator(_)))
            .collect();
        let mut emitter = Emitter {
            plan,
            w: Writer::new(plan.table, plan.code, vars, location, CodeKind::Function)?,
            outputs,
            outputs_var,
            objects,
            read_first: Vec::new(),
            paths,
            nesting: 0,
            rerun: None,
            generators_unmade,
            detached_cells,
            detached_made: Vec::new(),
        };
        emitter.emit_graph_call()?;
        for (source, var) in &read_first {
            emitter.source(*source)?;
            emitter.emit(Op::StoreFast, Arg::Var(*var));
        }
        emitter.read_first = read_first;
        // Past the reads (straight-line code, only the graph run between them) a path's
        // local may be unset or stale.
        emitter.paths.clear();
        emitter.make_objects()?;
        for effect in &plan.side_effects {
            emitter.side_effect(effect)?;
        }
        emitter.store_cells()?;
        Ok(emitter)
    }

    /// The code object: the original with these instructions and names.
    pub fn finish(mut self) -> PyResult<Generated> {
        if let Some(pad) = self.rerun.take() {
            self.emit_rerun(pad)?;
        }
        let changes = self.w.changes(self.plan.code, None)?;
        Generated::make(self.plan.code, &changes, self.plan.holder.as_ref())
    }

    pub fn subscript_const(&mut self, key: Bound<'py, PyAny>) {
        self.load_const(key);
        self.emit(
            Op::BinaryOp,
            Arg::BinaryOp {
                op: BinOp::Subscr,
                inplace: false,
            },
        );
    }

    /// The generated code's index of the original code's variable `var` (the generated
    /// code's own locals come before the cells).
    pub fn var_of(&self, var: usize) -> u32 {
        let name = self.plan.vars.name(var).expect("a variable of the original");
        self.w
            .vars
            .index_of(name)
            .expect("the original's variables are kept") as u32
    }

    /// Before a step the generated code runs itself: the frame's variables hold what the
    /// original's hold there (the live ones their values, those it has unbound nothing,
    /// the rest None), and the generated code's own locals nothing, so that an object the
    /// original no longer holds dies when it would (`del obj; gc.collect()`), and what reads
    /// the frame sees its variables (`super()` after `del self`). The values are all pushed
    /// before any is stored: one may be read from a variable another replaces.
    pub fn settle_variables(&mut self, live: &[(usize, Vid)], unbound: &[usize]) -> PyResult<()> {
        for (_, value) in live {
            self.value(*value)?;
        }
        for (var, _) in live.iter().rev() {
            let var = self.var_of(*var);
            self.emit(Op::StoreFast, Arg::Var(var));
        }
        let unbound: Vec<u32> = unbound.iter().map(|var| self.var_of(*var)).collect();
        for &var in &unbound {
            // Bound first (to None): deleting an unbound variable raises.
            self.release(var);
            self.unbind(var);
        }
        let settled: Vec<u32> = live
            .iter()
            .map(|(var, _)| self.var_of(*var))
            .chain(unbound)
            .collect();
        let vars = &self.w.vars;
        let released: Vec<u32> = (0..vars.varnames.len())
            .filter(|i| !vars.cellvars.contains(&vars.varnames[*i]))
            .map(|i| i as u32)
            .filter(|var| !settled.contains(var))
            .collect();
        for var in released {
            self.release(var);
        }
        Ok(())
    }

    /// Stores the frame's cells' contents as the translation left them (what a resume
    /// function or a rebuilt closure then shares), where they are the frame's own.
    pub fn store_cells(&mut self) -> PyResult<()> {
        let plan = self.plan;
        for (content, var) in stored_cells(plan.cells, &plan.frame_cells, plan.vars) {
            self.value(content)?;
            let var = self.var_of(var);
            self.emit(Op::StoreDeref, Arg::Var(var));
        }
        Ok(())
    }

    /// Makes the objects the translation made: each with `object.__new__(class)`, then
    /// their attributes (which may refer to one another).
    pub fn make_objects(&mut self) -> PyResult<()> {
        let py = self.w.pools.py;
        let new = builtin(py, "object")?.getattr("__new__")?;
        let objects = self.distinct_objects();
        for &(vid, var) in &objects {
            if let Some(exception) = made_exception(&self.plan.values[vid]) {
                let raised_at = match self.plan.caught_exceptions.get(&(exception.as_ptr() as usize)) {
                    // Where it was raised, the generated code raises it for real: a copy
                    // would have no traceback (an `except` block's `logging.exception()`
                    // after a break printed none).
                    Some(None) => {
                        return Err(self.cannot_rebuild(
                            vid,
                            "an exception raised and caught in the translation, needed after it (made \
                             again by the generated code, it would have no traceback)",
                        ))
                    }
                    Some(Some(location)) => Some(*location),
                    None => None,
                };
                let exception = exception.clone();
                self.new_exception(&exception)?;
                self.emit(Op::StoreFast, Arg::Var(var));
                if let Some(location) = raised_at {
                    self.raise_and_catch(var, location);
                }
                continue;
            }
            let plan = self.plan;
            let value = &plan.values[vid];
            if kind_of(value).make_empty(self, value)? {
                self.emit(Op::StoreFast, Arg::Var(var));
                continue;
            }
            let Val::Object { class, .. } = &self.plan.values[vid] else {
                continue;
            };
            let class = class.clone();
            let new = new.clone();
            self.call_constant(new, |e| {
                e.load_const(class);
                Ok(1)
            })?;
            self.emit(Op::StoreFast, Arg::Var(var));
        }
        // Functions and iterators after the objects and containers they may hold, each
        // after the functions it holds (made before it: lower values).
        for (index, &(vid, var)) in objects.iter().enumerate() {
            match self.plan.values[vid] {
                Val::Function(ref function) => {
                    // What it was given after it was made is stored once it is made.
                    let stored: Vec<Vid> = function.stored.iter().map(|(_, value)| *value).collect();
                    if self.reaches_unmade(&stored, &objects[index + 1..]) {
                        return Err(self.cannot_rebuild(vid, "a function given an attribute made after it"));
                    }
                    self.make_detached_cells(vid, &objects[index..])?;
                    self.new_function(vid, var)?
                }
                Val::Constructed {
                    ref obj,
                    class,
                    args,
                    kwargs,
                } => {
                    if self.plan.graph.regions.iter().any(|r| r.manager.is(obj)) {
                        // Entered (a region): made again from its arguments it would not be.
                        return Err(self.cannot_rebuild(vid, "a region's manager the graph entered"));
                    }
                    if crate::sot::translator::model::known::Known::new(py)?.is_lock(obj)
                        && crate::sot::translator::vm::locks::is_held(obj)?
                    {
                        // Made again, a lock is free.
                        return Err(self.cannot_rebuild(vid, "a lock the translation holds"));
                    }
                    // _sot_construct(cls, args, kwargs): cls(*args, **kwargs), untranslated
                    let construct = import(py, "framehook._native")?.getattr("_sot_construct")?;
                    self.call_constant(construct, |e| {
                        e.value(class)?;
                        e.value(args)?;
                        e.value(kwargs)?;
                        Ok(3)
                    })?;
                    self.emit(Op::StoreFast, Arg::Var(var));
                }
                Val::Iter { .. } | Val::ListIter { .. } | Val::Partial { .. } | Val::Lazy(_) => {
                    self.rebuild(vid)?;
                    self.emit(Op::StoreFast, Arg::Var(var));
                }
                _ => {}
            }
        }
        // Generators after the functions and iterators their frames may hold, each after
        // those it holds (`made` refuses one not made yet).
        for &(vid, var) in &objects {
            if let Val::Generator(_) = self.plan.values[vid] {
                self.rebuild(vid)?;
                self.emit(Op::StoreFast, Arg::Var(var));
                self.generators_unmade.retain(|unmade| *unmade != vid);
            }
        }
        for (vid, var) in objects {
            if let Some(exception) = made_exception(&self.plan.values[vid]) {
                let exception = exception.clone();
                self.emit(Op::LoadFast, Arg::Var(var));
                self.chain_exception(&exception, MAX_CHAIN)?;
                self.emit(Op::PopTop, Arg::None);
                continue;
            }
            match &self.plan.values[vid] {
                Val::Object { attrs, class } => {
                    // A class's own `__setattr__` ran inlined while translating: these are
                    // the stores it made.
                    let own_setattr = !class
                        .getattr(pyo3::intern!(class.py(), "__setattr__"))?
                        .is(builtin(py, "object")?.getattr("__setattr__")?);
                    for (name, value) in attrs.clone() {
                        if own_setattr {
                            self.object_setattr(
                                |e| {
                                    e.emit(Op::LoadFast, Arg::Var(var));
                                    Ok(())
                                },
                                &name,
                                value,
                            )?;
                        } else {
                            self.value(value)?;
                            self.store_attr_of(var, &name);
                        }
                    }
                }
                Val::Dict(_) if self.plan.dict_histories.contains_key(&vid) => {
                    let history = &self.plan.dict_histories[&vid];
                    let items = Val::Dict(history.items.clone());
                    let ops = replayed_ops(&history.ops);
                    kind_of(&items).fill(self, &items, var)?;
                    for op in &ops {
                        self.replay_dict_op(
                            |e| {
                                e.emit(Op::LoadFast, Arg::Var(var));
                                Ok(())
                            },
                            op,
                        )?;
                    }
                }
                value => {
                    kind_of(value).fill(self, value, var)?;
                }
            }
        }
        Ok(())
    }

    /// `op` replayed on the dict `dict` pushes, as the program made it.
    fn replay_dict_op(&mut self, dict: impl Fn(&mut Self) -> PyResult<()>, op: &DictOp) -> PyResult<()> {
        let (method, args) = match *op {
            DictOp::Store { key, value, .. } => {
                self.value(value)?;
                dict(self)?;
                self.value(key)?;
                self.emit(Op::StoreSubscr, Arg::None);
                return Ok(());
            }
            DictOp::Delete { key } => {
                dict(self)?;
                self.value(key)?;
                self.emit(Op::DeleteSubscr, Arg::None);
                return Ok(());
            }
            DictOp::Pop { key } => ("pop", vec![key]),
            DictOp::PopItem => ("popitem", vec![]),
            DictOp::SetDefault { key, value } => ("setdefault", vec![key, value]),
            DictOp::Update { other } => ("update", vec![other]),
            DictOp::Clear => ("clear", vec![]),
        };
        // dict.<method>(<dict>, *args), its result dropped
        let unbound = self.w.pools.py.get_type::<PyDict>().getattr(method)?;
        self.call_constant(unbound, |e| {
            dict(e)?;
            for arg in &args {
                e.value(*arg)?;
            }
            Ok(1 + args.len())
        })?;
        self.emit(Op::PopTop, Arg::None);
        Ok(())
    }

    /// The made objects, one per local (values sharing a local are one object).
    pub fn distinct_objects(&self) -> Vec<(Vid, u32)> {
        let mut seen = Vec::new();
        self.objects
            .iter()
            .filter(|(_, var)| {
                let first = !seen.contains(var);
                seen.push(*var);
                first
            })
            .copied()
            .collect()
    }

    /// Pushes `type(e)(*e.args)` for an exception the translation made.
    pub fn new_exception(&mut self, exception: &Bound<'py, PyAny>) -> PyResult<()> {
        let (class, args) = (
            exception.get_type().into_any(),
            exception.getattr(pyo3::intern!(exception.py(), "args"))?,
        );
        let count = args.len()?;
        self.call_constant(class, |e| {
            for arg in args.try_iter()? {
                e.load_const(arg?);
            }
            Ok(count)
        })
    }

    /// Sets the `__context__` and `__cause__` of the exception on top of the stack (left
    /// there) as `exception` has them: the exceptions the generated code has already (made
    /// ones, the frame's), or new ones, chained in turn up to `depth` links.
    /// Raises the exception in `var` at `location` and catches it there: its traceback is
    /// then the original's, where the top frame raised it at `location` (the generated
    /// code's frame shows the original's name, file and line). The stack is empty here.
    pub fn raise_and_catch(&mut self, var: u32, location: Location) {
        self.emit(Op::LoadFast, Arg::Var(var));
        let caught = self.w.out.len() + 1;
        self.w.out.push(Instruction {
            op: Op::RaiseVarargs,
            arg: Arg::Int(1),
            location,
            handler: Some(Handler::new(caught, 0, false)),
        });
        self.emit(Op::PopTop, Arg::None);
    }

    pub fn chain_exception(&mut self, exception: &Bound<'py, PyAny>, depth: usize) -> PyResult<()> {
        for link in ["__context__", "__cause__"] {
            let linked = exception.getattr(link)?;
            if linked.is_none() {
                continue;
            }
            if depth == 0 {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "an exception chained too deep to make again",
                ));
            }
            self.emit(Op::Copy, Arg::Int(1));
            let is_linked =
                |vid: &Vid| matches!(&self.plan.values[*vid], Val::Obj { obj, .. } if obj.is(&linked));
            let made = self.objects.iter().map(|(vid, _)| *vid).find(is_linked);
            let read = (0..self.plan.values.len()).find(|vid| {
                is_linked(vid) && matches!(self.plan.values[*vid], Val::Obj { source: Some(_), .. })
            });
            match (made, read) {
                (Some(vid), _) => self.made(vid)?,
                (None, Some(vid)) => self.value(vid)?,
                (None, None) => {
                    self.new_exception(&linked)?;
                    self.chain_exception(&linked, depth - 1)?;
                }
            }
            self.emit(Op::Swap, Arg::Int(2));
            let index = self.w.pools.name(link);
            self.emit(Op::StoreAttr, Arg::Name(index));
        }
        if exception
            .getattr(pyo3::intern!(exception.py(), "__cause__"))?
            .is_none()
            && exception
                .getattr(pyo3::intern!(exception.py(), "__suppress_context__"))?
                .is_truthy()?
        {
            // `raise ... from None`
            self.emit(Op::Copy, Arg::Int(1));
            self.load_const(
                pyo3::types::PyBool::new(self.w.pools.py, true)
                    .to_owned()
                    .into_any(),
            );
            self.emit(Op::Swap, Arg::Int(2));
            let index = self.w.pools.name("__suppress_context__");
            self.emit(Op::StoreAttr, Arg::Name(index));
        }
        Ok(())
    }

    /// `outputs = holder[0](*inputs)`, when there is a graph; where the graph's raising can
    /// make the frame run again (`Plan::rerun`), under a landing pad that does (`emit_rerun`).
    pub fn emit_graph_call(&mut self) -> PyResult<()> {
        let Some(holder) = self.plan.holder.clone() else {
            return Ok(());
        };
        let py = self.w.pools.py;
        let inputs: Vec<SourceId> = self.plan.graph.inputs.clone();
        let setup = if self.plan.rerun != Rerun::Never {
            self.open_block_for_the_way_out()
        } else {
            None
        };
        let first = self.w.out.len();
        self.call(
            |e| {
                e.load_const(holder);
                e.subscript_const(0i32.into_pyobject(py)?.into_any());
                Ok(())
            },
            |e| {
                for input in &inputs {
                    e.source(*input)?;
                }
                Ok(inputs.len())
            },
        )?;
        if self.plan.rerun != Rerun::Never {
            let covered = first..self.w.out.len();
            if setup.is_some() {
                self.emit(Op::PopBlock, Arg::None);
            }
            self.rerun = Some(RerunPad { covered, setup });
        }
        self.emit(Op::StoreFast, Arg::Var(self.outputs_var));
        Ok(())
    }

    /// The landing pad of the graph's call: the exception into the outputs' local (unset
    /// there), no longer the one being handled, then `_sot_rerun(exception, assumptions_only,
    /// code, globals(), closure, *parameters)` returned (see it). Nothing of the frame ran
    /// before the graph, so its parameters still hold what the call passed.
    fn emit_rerun(&mut self, pad: RerunPad) -> PyResult<()> {
        let py = self.w.pools.py;
        let at = self.w.out.len();
        match pad.setup {
            None => {
                for instruction in &mut self.w.out[pad.covered] {
                    instruction.handler = Some(Handler::new(at, 0, false));
                }
            }
            Some(setup) => {
                // (old traceback, value, type, traceback, value, type): the value kept below
                // the old three, which POP_EXCEPT makes current again.
                self.w.out[setup].arg = Arg::Target(at);
                self.emit(Op::PopTop, Arg::None);
                self.emit(Op::Swap, Arg::Int(2));
                self.emit(Op::PopTop, Arg::None);
                self.emit(Op::RotN, Arg::Int(4));
                self.emit(Op::PopExcept, Arg::None);
            }
        }
        self.emit(Op::StoreFast, Arg::Var(self.outputs_var));
        let code = self.plan.code.clone();
        let parameters = Parameters::of(&code)?.count();
        let frees = self.plan.vars.freevars.len();
        let first_free = self.plan.vars.first_free();
        let closure: Vec<u32> = (first_free..first_free + frees).map(|v| self.var_of(v)).collect();
        let closure_op = self.w.closure_op();
        let rerun = import(py, "framehook._native")?.getattr("_sot_rerun")?;
        let assumptions_only = pyo3::types::PyBool::new(py, self.plan.rerun == Rerun::OnFailedAssumption);
        let globals = builtin(py, "globals")?;
        let block = self.open_block_for_the_way_out();
        self.call_constant(rerun, |e| {
            e.emit(Op::LoadFast, Arg::Var(e.outputs_var));
            e.load_const(assumptions_only.to_owned().into_any());
            e.load_const(code);
            e.call_constant(globals, |_| Ok(0))?;
            if closure.is_empty() {
                e.load_const(py.None().into_bound(py));
            } else {
                for var in &closure {
                    e.emit(closure_op, Arg::Var(*var));
                }
                e.build_tuple(closure.len());
            }
            for parameter in 0..parameters {
                let op = if e.is_cell_var(parameter) {
                    Op::LoadDeref
                } else {
                    Op::LoadFast
                };
                e.emit(op, Arg::Var(parameter as u32));
            }
            Ok(5 + parameters)
        })?;
        self.return_through(block)
    }

    pub fn is_cell_var(&self, index: usize) -> bool {
        let all = self.w.vars.all();
        let name = all[index];
        self.w.vars.cellvars.iter().any(|c| c == name) || index >= all.len() - self.w.vars.freevars.len()
    }

    pub fn source(&mut self, id: SourceId) -> PyResult<()> {
        if let Some((_, var)) = self.read_first.iter().find(|(s, _)| *s == id) {
            self.emit(Op::LoadFast, Arg::Var(*var));
            return Ok(());
        }
        if let Some(at) = self.paths.iter().position(|(s, ..)| *s == id) {
            let (_, var, kept) = self.paths[at];
            if !kept {
                self.read_source(id)?;
                self.emit(Op::StoreFast, Arg::Var(var));
                self.paths[at].2 = true;
            }
            self.emit(Op::LoadFast, Arg::Var(var));
            return Ok(());
        }
        self.read_source(id)
    }

    /// Reads `id` from its parent (through `source`, which may keep the parent).
    pub fn read_source(&mut self, id: SourceId) -> PyResult<()> {
        let py = self.w.pools.py;
        match &self.plan.sources.sources[id] {
            Source::Argument(i) => {
                let op = if self.is_cell_var(*i) {
                    Op::LoadDeref
                } else {
                    Op::LoadFast
                };
                self.emit(op, Arg::Var(*i as u32));
            }
            Source::Free(i) => {
                let index = self.w.vars.first_free() + i;
                self.emit(Op::LoadDeref, Arg::Var(index as u32));
            }
            Source::Global(name) | Source::Builtin(name) => {
                let index = self.w.pools.name(&name.bind(py).extract::<String>()?);
                self.emit(Op::LoadGlobal, Arg::Name(index));
            }
            Source::Attr(parent, name) => {
                let (parent, name) = (*parent, name.bind(py).extract::<String>()?);
                self.source(parent)?;
                let index = self.w.pools.name(&name);
                self.emit(Op::LoadAttr, Arg::Name(index));
            }
            Source::OwnAttr(parent, name) => {
                let getattribute = builtin(py, "object")?.getattr("__getattribute__")?;
                self.read_through(getattribute, *parent, name.bind(py).clone())?;
            }
            Source::Item(parent, key) => {
                let (parent, key) = (*parent, key.bind(py));
                self.source(parent)?;
                self.subscript_const(key);
            }
            Source::StoredItem(parent, key) => {
                let getitem = builtin(py, "dict")?.getattr("__getitem__")?;
                self.read_through(getitem, *parent, key.bind(py).clone())?;
            }
            Source::Held(held) => self.load_const(held.bind(py).clone()),
            Source::Called(function) => {
                let function = *function;
                self.call(|e| e.source(function), |_| Ok(0))?;
            }
        }
        Ok(())
    }

    /// Pushes `function(<what parent holds>, key)`: a read through a builtin type's own
    /// method (`object.__getattribute__`, `dict.__getitem__`), never the class's override.
    fn read_through(
        &mut self,
        function: Bound<'py, PyAny>,
        parent: SourceId,
        key: Bound<'py, PyAny>,
    ) -> PyResult<()> {
        self.call_constant(function, |e| {
            e.source(parent)?;
            e.load_const(key);
            Ok(2)
        })
    }

    /// Pushes an object the generated code made (see `made_objects`).
    pub fn made(&mut self, vid: Vid) -> PyResult<()> {
        if self.generators_unmade.contains(&vid) {
            return Err(self.cannot_rebuild(vid, "a generator held by one made before it"));
        }
        let var = self.objects.iter().find(|(v, _)| *v == vid).map(|(_, var)| *var);
        let var =
            var.ok_or_else(|| pyo3::exceptions::PyValueError::new_err("an object made without its local"))?;
        self.emit(Op::LoadFast, Arg::Var(var));
        Ok(())
    }

    /// Pushes a new tuple, list, set or dict of the values `container` holds.
    pub fn contents(&mut self, container: &Val<'py>) -> PyResult<()> {
        if self.nesting >= MAX_NESTING {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "a value nested more than {MAX_NESTING} deep"
            )));
        }
        self.nesting += 1;
        let pushed = kind_of(container).build(self, container);
        self.nesting -= 1;
        match pushed? {
            true => Ok(()),
            false => Err(pyo3::exceptions::PyValueError::new_err(
                "contents of a value that is not a container",
            )),
        }
    }

    /// Emits code that pushes the value `vid` stands for.
    pub fn value(&mut self, vid: Vid) -> PyResult<()> {
        if self.objects.iter().any(|(v, _)| *v == vid) {
            return self.made(vid);
        }
        self.rebuild(vid)
    }

    /// Pushes the value `vid` stands for as its kind makes it again (never from the local
    /// of an object made once).
    fn rebuild(&mut self, vid: Vid) -> PyResult<()> {
        let plan = self.plan;
        let val = &plan.values[vid];
        match kind_of(val).rebuild(self, vid, val)? {
            true => Ok(()),
            false => Err(self.cannot_rebuild(
                vid,
                "a value the generated code cannot rebuild (a function, iterator or method made while translating)",
            )),
        }
    }

    /// Whether what `roots` hold reaches a value `make_objects` makes in its pass of
    /// functions and iterators from `later` on, or a generator (made after them): not made
    /// yet, its local unset.
    fn reaches_unmade(&self, roots: &[Vid], later: &[(Vid, u32)]) -> bool {
        let values = self.plan.values;
        reachable(values, self.plan.cells, self.plan.dict_histories, roots)
            .iter()
            .any(|held| {
                later
                    .iter()
                    .any(|(object, _)| object == held && made_in_the_functions_pass(&values[*held]))
                    || matches!(values[*held], Val::Generator(_))
            })
    }

    /// Makes the cells made anew that function `vid` closes over and that are not made
    /// yet, each `types.CellType(content)`. None can be where its content holds a value made
    /// in this pass from the function on (`later`) or a generator: not made yet.
    fn make_detached_cells(&mut self, vid: Vid, later: &[(Vid, u32)]) -> PyResult<()> {
        let py = self.w.pools.py;
        let Val::Function(function) = &self.plan.values[vid] else {
            return Ok(());
        };
        for cell in function.closure.clone() {
            let Some(&(_, var)) = self.detached_cells.iter().find(|(c, _)| *c == cell) else {
                continue;
            };
            if self.detached_made.contains(&cell) {
                continue;
            }
            let content = self.plan.cells.get(cell).copied().flatten();
            if content.is_some_and(|content| self.reaches_unmade(&[content], later)) {
                return Err(self.cannot_rebuild(vid, "a closure over a cell holding a value made after it"));
            }
            let cell_type = held(py)?.cell_type.bind(py).clone();
            self.call_constant(cell_type, |e| match content {
                Some(content) => e.value(content).map(|()| 1),
                None => Ok(0),
            })?;
            self.emit(Op::StoreFast, Arg::Var(var));
            self.detached_made.push(cell);
        }
        Ok(())
    }

    /// Makes the function the translation made as `vid` into `var`: `types.FunctionType`
    /// of its code, globals, name, defaults and closure, then what MAKE_FUNCTION sets
    /// beside them (keyword-only defaults, annotations, a qualified name the code does
    /// not carry) and the attributes the translated code stored in it.
    pub fn new_function(&mut self, vid: Vid, var: u32) -> PyResult<()> {
        let py = self.w.pools.py;
        let Val::Function(function) = &self.plan.values[vid] else {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "a function made without its value",
            ));
        };
        // Each cell: the frame's own (its cell variable), one of another function's closure
        // (read where the translation read it), or one made anew (a local).
        let closure_cells = function
            .closure
            .iter()
            .map(|cell| self.cell_place(*cell))
            .collect::<Option<Vec<CellPlace>>>()
            .ok_or_else(|| self.cannot_rebuild(vid, "a closure over cells of an inlined function"))?;
        let function_type = held(py)?.function_type.bind(py).clone();
        let (code, name, defaults) = (
            function.code.clone(),
            function.name.clone(),
            function.defaults.clone(),
        );
        // What FunctionType names it (the code's qualified name from 3.11, else its name).
        let default_qualname: String = code
            .getattr("co_qualname")
            .map_or_else(|_| Ok(name.clone()), |q| q.extract())?;
        let qualname = (function.qualname != default_qualname).then(|| function.qualname.clone());
        let (kwdefaults, annotations, annotate, stored) = (
            function.kwdefaults.clone(),
            function.annotations,
            function.annotate,
            function.stored.clone(),
        );
        let own_globals = function.globals.is(&self.plan.globals);
        let globals = function.globals.clone();
        self.call_constant(function_type, |e| {
            e.load_const(code);
            if own_globals {
                let globals_builtin = builtin(py, "globals")?;
                e.call_constant(globals_builtin, |_| Ok(0))?;
            } else {
                e.load_const(globals);
            }
            e.load_const(name.into_pyobject(py)?.into_any());
            if defaults.is_empty() {
                e.load_const(py.None().into_bound(py));
            } else {
                for d in &defaults {
                    e.value(*d)?;
                }
                e.build_tuple(defaults.len());
            }
            if closure_cells.is_empty() {
                e.load_const(py.None().into_bound(py));
            } else {
                for place in &closure_cells {
                    e.push_cell(*place)?;
                }
                e.build_tuple(closure_cells.len());
            }
            Ok(5)
        })?;
        self.emit(Op::StoreFast, Arg::Var(var));
        if !kwdefaults.is_empty() {
            for (key, value) in &kwdefaults {
                self.load_const(key.into_pyobject(py)?.into_any());
                self.value(*value)?;
            }
            self.emit(Op::BuildMap, Arg::Int(kwdefaults.len() as u32));
            self.store_attr_of(var, "__kwdefaults__");
        }
        if let Some(annotations) = annotations {
            self.value(annotations)?;
            self.store_attr_of(var, "__annotations__");
        }
        if let Some(annotate) = annotate {
            self.value(annotate)?;
            self.store_attr_of(var, "__annotate__");
        }
        if let Some(qualname) = qualname {
            self.load_const(qualname.into_pyobject(py)?.into_any());
            self.store_attr_of(var, "__qualname__");
        }
        // What the translated code stored in it, in the order first stored.
        for (name, value) in stored {
            self.value(value)?;
            self.store_attr_of(var, &name);
        }
        Ok(())
    }

    /// `object.__setattr__(<target>, name, <value>)`, past the class's own `__setattr__`.
    pub fn object_setattr(
        &mut self,
        target: impl FnOnce(&mut Self) -> PyResult<()>,
        name: &str,
        value: Vid,
    ) -> PyResult<()> {
        let py = self.w.pools.py;
        let setattr = builtin(py, "object")?.getattr("__setattr__")?;
        self.call_constant(setattr, |e| {
            target(e)?;
            e.load_const(PyString::new(py, name).into_any());
            e.value(value)?;
            Ok(3)
        })?;
        self.emit(Op::PopTop, Arg::None);
        Ok(())
    }

    /// `var.<name> = <the value on top>`.
    pub fn store_attr_of(&mut self, var: u32, name: &str) {
        self.emit(Op::LoadFast, Arg::Var(var));
        let index = self.w.pools.name(name);
        self.emit(Op::StoreAttr, Arg::Name(index));
    }

    /// Where the generated code finds the cell object `cell`: the frame's cell variable, the
    /// closure of another function it was read from, or the local a cell made anew is in
    /// (once made, `make_detached_cells`); None where it cannot.
    pub fn cell_place(&self, cell: usize) -> Option<CellPlace> {
        if let Some((_, var)) = self.plan.frame_cells.iter().find(|(own, _)| *own == cell) {
            return Some(CellPlace::Var(self.w.closure_op(), self.var_of(*var)));
        }
        if let Some(source) = self.plan.outside_cells.get(&cell) {
            return Some(CellPlace::Source(*source));
        }
        self.detached_cells
            .iter()
            .find(|(made, _)| *made == cell)
            .map(|(_, var)| CellPlace::Var(Op::LoadFast, *var))
    }

    /// Pushes the cell object at `place`.
    pub fn push_cell(&mut self, place: CellPlace) -> PyResult<()> {
        match place {
            CellPlace::Var(op, var) => {
                self.emit(op, Arg::Var(var));
                Ok(())
            }
            CellPlace::Source(source) => self.source(source),
        }
    }

    pub fn cannot_rebuild(&self, vid: Vid, what: &str) -> PyErr {
        self.plan.unrebuildable.set(Some(vid));
        pyo3::exceptions::PyValueError::new_err(what.to_owned())
    }

    pub fn side_effect(&mut self, effect: &SideEffect) -> PyResult<()> {
        let py = self.w.pools.py;
        match effect {
            SideEffect::StoreAttr {
                target,
                name,
                value,
                through_object: false,
            } => {
                self.value(*value)?;
                self.value(*target)?;
                let index = self.w.pools.name(name);
                self.emit(Op::StoreAttr, Arg::Name(index));
            }
            SideEffect::StoreAttr {
                target,
                name,
                value,
                through_object: true,
            } => {
                let (target, value) = (*target, *value);
                self.object_setattr(|e| e.value(target), name, value)?;
            }
            SideEffect::DeleteAttr { target, name } => {
                self.value(*target)?;
                let index = self.w.pools.name(name);
                self.emit(Op::DeleteAttr, Arg::Name(index));
            }
            SideEffect::StoreGlobal { name, value } => {
                self.value(*value)?;
                let index = self.w.pools.name(name);
                self.emit(Op::StoreGlobal, Arg::Name(index));
            }
            SideEffect::DeleteGlobal { name } => {
                let index = self.w.pools.name(name);
                self.emit(Op::DeleteGlobal, Arg::Name(index));
            }
            SideEffect::CallMethod { target, method, args } => {
                let (target, args) = (*target, args.clone());
                let index = self.w.pools.name(method);
                self.call(
                    |e| {
                        e.value(target)?;
                        e.emit(Op::LoadAttr, Arg::Name(index));
                        Ok(())
                    },
                    |e| {
                        for arg in &args {
                            e.value(*arg)?;
                        }
                        Ok(args.len())
                    },
                )?;
                self.emit(Op::PopTop, Arg::None);
            }
            SideEffect::IteratorPosition { iterator } => {
                let Val::ListIter {
                    next,
                    frame: Some(source),
                    ..
                } = &self.plan.values[*iterator]
                else {
                    return Err(pyo3::exceptions::PyValueError::new_err(
                        "an iterator position of no frame iterator",
                    ));
                };
                let (next, source) = (*next, *source);
                let set_position =
                    import(py, "framehook.sot._translate")?.getattr("_set_list_iterator_position")?;
                self.call_constant(set_position, |e| {
                    e.source(source)?;
                    match next {
                        Some(next) => e.load_const(next.into_pyobject(py)?.into_any()),
                        None => e.load_const(py.None().into_bound(py)),
                    }
                    Ok(2)
                })?;
                self.emit(Op::PopTop, Arg::None);
            }
            SideEffect::StoreFree { index, value } => {
                self.value(*value)?;
                let var = self.w.vars.first_free() + index;
                self.emit(Op::StoreDeref, Arg::Var(var as u32));
            }
            SideEffect::StoreCell { cell, value } => {
                self.value(*value)?;
                self.source(*cell)?;
                let index = self.w.pools.name("cell_contents");
                self.emit(Op::StoreAttr, Arg::Name(index));
            }
            SideEffect::Replace { target, contents } => {
                // A dict is given its operations (`SideEffect::DictOp`).
                if !matches!(self.plan.values[*contents], Val::Dict(_)) {
                    // target[:] = contents
                    self.value(*contents)?;
                    self.source(*target)?;
                    self.load_const(PySlice::full(py).into_any());
                    self.emit(Op::StoreSubscr, Arg::None);
                }
            }
            SideEffect::DictOp { target, op } => {
                let target = *target;
                self.replay_dict_op(|e| e.source(target), op)?;
            }
        }
        Ok(())
    }
}

impl<'py> Emit<'py> for Emitter<'_, 'py> {
    fn writer(&mut self) -> &mut Writer<'py> {
        &mut self.w
    }
}

/// Whether `make_objects` makes `value` in its pass of functions and iterators (a later one
/// than objects' and containers').
fn made_in_the_functions_pass(value: &Val<'_>) -> bool {
    matches!(
        value,
        Val::Function(_)
            | Val::Constructed { .. }
            | Val::Iter { .. }
            | Val::ListIter { .. }
            | Val::Partial { .. }
            | Val::Lazy(_)
    )
}

/// Where the generated code finds a cell object (`Emitter::cell_place`).
#[derive(Clone, Copy)]
pub enum CellPlace {
    /// A variable, read by the op (`LOAD_CLOSURE` for the frame's own cells where the
    /// version has it, else `LOAD_FAST`).
    Var(Op, u32),
    /// What a source reads (an item of another function's `__closure__`).
    Source(SourceId),
}
