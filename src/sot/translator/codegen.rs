//! The code a translation runs instead of the original: call the compiled graph
//! with its inputs read from the frame, replay the side effects in order, rebuild
//! the return value from graph outputs, constants and sources.

use framehook_bytecode::canonical::{self, Arg, BinOp, CodeKind, Const, ConstPool, Instruction, Op, Vars};
use framehook_bytecode::raw::{self, Code};
use framehook_bytecode::table::{CallLayout, ExceptionModel, LineTableFormat};
use framehook_bytecode::{Location, Table};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyTuple};

use super::guard::{Source, SourceId, SourceTable};
use super::value::{Graph, Sym, Val, Vid};
use super::vm::SideEffect;

/// The name of the generated code's local holding the graph's outputs.
const OUTPUTS_LOCAL: &str = "__sot_graph_outputs";

/// Constants and names of the generated code: the original's, then what it adds.
struct Pools<'py> {
    py: Python<'py>,
    consts: Vec<Bound<'py, PyAny>>,
    names: Vec<String>,
}

impl<'py> Pools<'py> {
    fn constant(&mut self, value: Bound<'py, PyAny>) -> u32 {
        if let Some(found) = self.consts.iter().position(|c| c.is(&value)) {
            return found as u32;
        }
        self.consts.push(value);
        (self.consts.len() - 1) as u32
    }

    fn name(&mut self, name: &str) -> u32 {
        if let Some(found) = self.names.iter().position(|n| n == name) {
            return found as u32;
        }
        self.names.push(name.to_owned());
        (self.names.len() - 1) as u32
    }
}

impl ConstPool for Pools<'_> {
    fn small_int(&mut self, value: u32) -> framehook_bytecode::Result<u32> {
        let py = self.py;
        let found = self
            .consts
            .iter()
            .position(|c| c.is_exact_instance_of::<PyInt>() && c.extract::<u32>().ok() == Some(value));
        Ok(match found {
            Some(index) => index as u32,
            None => self.constant(value.into_pyobject(py).expect("ints convert").into_any()),
        })
    }
}

/// What the generated code is made of.
pub struct Plan<'a, 'py> {
    pub table: &'static Table,
    pub code: &'a Bound<'py, PyAny>,
    pub vars: &'a Vars,
    pub values: &'a [Val<'py>],
    pub cells: &'a [Option<Vid>],
    pub sources: &'a SourceTable,
    pub graph: &'a Graph<'py>,
    pub side_effects: &'a [SideEffect],
    /// The compiled graph's holder (`holder[0](*inputs) -> outputs`), if there are operations.
    pub holder: Option<Bound<'py, PyAny>>,
}

struct Emitter<'a, 'py> {
    plan: &'a Plan<'a, 'py>,
    pools: Pools<'py>,
    vars: Vars,
    out: Vec<Instruction>,
    location: Location,
    /// Per graph symbol: its index among the graph's outputs.
    outputs: Vec<Option<usize>>,
    outputs_var: u32,
}

/// The graph symbols the generated code needs: those of the values it rebuilds.
pub fn needed_outputs(
    values: &[Val<'_>],
    cells: &[Option<Vid>],
    graph: &Graph<'_>,
    roots: &[Vid],
) -> Vec<Sym> {
    let mut seen = vec![false; values.len()];
    let mut syms = Vec::new();
    let mut stack: Vec<Vid> = roots.to_vec();
    while let Some(vid) = stack.pop() {
        if std::mem::replace(&mut seen[vid], true) {
            continue;
        }
        match &values[vid] {
            Val::Tensor { sym, .. } => {
                if *sym >= graph.inputs.len() && !syms.contains(sym) {
                    syms.push(*sym);
                }
            }
            Val::Tuple(items) | Val::List(items) | Val::Set(items) => stack.extend(items),
            Val::Iter { items, next } => stack.extend(&items[*next..]),
            Val::Dict(items) => items.iter().for_each(|(k, v)| stack.extend([*k, *v])),
            Val::Slice(a, b, c) => stack.extend([*a, *b, *c]),
            Val::Method { function, receiver } => stack.extend([*function, *receiver]),
            Val::Cell(c) => stack.extend(cells[*c]),
            _ => {}
        }
    }
    syms.sort_unstable();
    syms
}

/// The roots every generated code rebuilds: side effects' values.
pub fn side_effect_roots(side_effects: &[SideEffect]) -> Vec<Vid> {
    side_effects
        .iter()
        .flat_map(|effect| match effect {
            SideEffect::StoreAttr { target, value, .. } => vec![*target, *value],
            SideEffect::StoreGlobal { value, .. } => vec![*value],
            SideEffect::DeleteGlobal { .. } => vec![],
            SideEffect::Replace { contents, .. } => vec![*contents],
        })
        .collect()
}

impl<'a, 'py> Emitter<'a, 'py> {
    fn emit(&mut self, op: Op, arg: Arg) {
        self.out.push(Instruction {
            op,
            arg,
            location: self.location,
            handler: None,
        });
    }

    fn load_const(&mut self, value: Bound<'py, PyAny>) {
        let index = self.pools.constant(value);
        self.emit(Op::LoadConst, Arg::Const(Const::Index(index)));
    }

    fn subscript_const(&mut self, key: Bound<'py, PyAny>) {
        self.load_const(key);
        self.emit(
            Op::BinaryOp,
            Arg::BinaryOp {
                op: BinOp::Subscr,
                inplace: false,
            },
        );
    }

    /// Emits `callee` (as `load`) called with `argc` arguments pushed by `args`.
    fn call(
        &mut self,
        load: impl FnOnce(&mut Self) -> PyResult<()>,
        args: impl FnOnce(&mut Self) -> PyResult<usize>,
    ) -> PyResult<()> {
        let layout = self.plan.table.call_layout;
        if layout == CallLayout::NullFirst {
            self.emit(Op::PushNull, Arg::None);
        }
        load(self)?;
        if layout == CallLayout::CallableFirst {
            self.emit(Op::PushNull, Arg::None);
        }
        let argc = args(self)?;
        self.emit(
            Op::Call,
            Arg::Call {
                argc: argc as u32,
                kw_names: false,
            },
        );
        Ok(())
    }

    fn is_cell_var(&self, index: usize) -> bool {
        let all = self.vars.all();
        let name = all[index];
        self.vars.cellvars.iter().any(|c| c == name) || index >= all.len() - self.vars.freevars.len()
    }

    fn source(&mut self, id: SourceId) -> PyResult<()> {
        let py = self.pools.py;
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
                let index = self.vars.all().len() - self.vars.freevars.len() + i;
                self.emit(Op::LoadDeref, Arg::Var(index as u32));
            }
            Source::Global(name) | Source::Builtin(name) => {
                let index = self.pools.name(&name.bind(py).extract::<String>()?);
                self.emit(Op::LoadGlobal, Arg::Name(index));
            }
            Source::Attr(parent, name) => {
                let (parent, name) = (*parent, name.bind(py).extract::<String>()?);
                self.source(parent)?;
                let index = self.pools.name(&name);
                self.emit(Op::LoadAttr, Arg::Name(index));
            }
            Source::Item(parent, key) => {
                let (parent, key) = (*parent, key.bind(py));
                self.source(parent)?;
                self.subscript_const(key);
            }
        }
        Ok(())
    }

    /// Emits code that pushes the value `vid` stands for.
    fn value(&mut self, vid: Vid) -> PyResult<()> {
        let py = self.pools.py;
        match &self.plan.values[vid] {
            Val::Obj { obj, source } => match source {
                Some(s) => self.source(*s)?,
                None => self.load_const(obj.clone()),
            },
            Val::Tensor { sym, .. } => {
                if *sym < self.plan.graph.inputs.len() {
                    self.source(self.plan.graph.inputs[*sym])?;
                } else {
                    let index = self.outputs[*sym].expect("every rebuilt tensor is an output");
                    self.emit(Op::LoadFast, Arg::Var(self.outputs_var));
                    self.subscript_const(index.into_pyobject(py)?.into_any());
                }
            }
            Val::Tuple(items) | Val::List(items) | Val::Set(items) => {
                let op = match &self.plan.values[vid] {
                    Val::Tuple(_) => Op::BuildTuple,
                    Val::List(_) => Op::BuildList,
                    _ => Op::BuildSet,
                };
                for item in items {
                    self.value(*item)?;
                }
                self.emit(op, Arg::Int(items.len() as u32));
            }
            Val::Dict(items) => {
                for (k, v) in items {
                    self.value(*k)?;
                    self.value(*v)?;
                }
                self.emit(Op::BuildMap, Arg::Int(items.len() as u32));
            }
            Val::Slice(a, b, c) => {
                for part in [*a, *b, *c] {
                    self.value(part)?;
                }
                self.emit(Op::BuildSlice, Arg::Int(3));
            }
            Val::Method { function, receiver } => {
                let (function, receiver) = (*function, *receiver);
                let method_type = py.import("types")?.getattr("MethodType")?;
                self.call(
                    |e| {
                        e.load_const(method_type);
                        Ok(())
                    },
                    |e| {
                        e.value(function)?;
                        e.value(receiver)?;
                        Ok(2)
                    },
                )?;
            }
            Val::Iter { items, next } => {
                let rest = items[*next..].to_vec();
                let iter = py.import("builtins")?.getattr("iter")?;
                self.call(
                    |e| {
                        e.load_const(iter);
                        Ok(())
                    },
                    |e| {
                        for item in &rest {
                            e.value(*item)?;
                        }
                        e.emit(Op::BuildTuple, Arg::Int(rest.len() as u32));
                        Ok(1)
                    },
                )?;
            }
            Val::Cell(c) => match self.plan.cells[*c] {
                Some(content) => self.value(content)?,
                None => return Err(pyo3::exceptions::PyValueError::new_err("an empty cell")),
            },
            _ => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "a value the generated code cannot rebuild (a function, iterator or method made while translating)",
                ))
            }
        }
        Ok(())
    }

    fn side_effect(&mut self, effect: &SideEffect) -> PyResult<()> {
        let py = self.pools.py;
        match effect {
            SideEffect::StoreAttr { target, name, value } => {
                self.value(*value)?;
                self.value(*target)?;
                let index = self.pools.name(name);
                self.emit(Op::StoreAttr, Arg::Name(index));
            }
            SideEffect::StoreGlobal { name, value } => {
                self.value(*value)?;
                let index = self.pools.name(name);
                self.emit(Op::StoreGlobal, Arg::Name(index));
            }
            SideEffect::DeleteGlobal { name } => {
                let index = self.pools.name(name);
                self.emit(Op::DeleteGlobal, Arg::Name(index));
            }
            SideEffect::Replace { target, contents } => {
                let (target, contents) = (*target, *contents);
                if let Val::Dict(_) = &self.plan.values[contents] {
                    // target.clear(); target.update(contents)
                    for (method, with_contents) in [("clear", false), ("update", true)] {
                        let unbound = py.get_type::<PyDict>().getattr(method)?;
                        self.call(
                            |e| {
                                e.load_const(unbound);
                                Ok(())
                            },
                            |e| {
                                e.source(target)?;
                                if with_contents {
                                    e.value(contents)?;
                                }
                                Ok(1 + usize::from(with_contents))
                            },
                        )?;
                        self.emit(Op::PopTop, Arg::None);
                    }
                } else {
                    // target[:] = contents
                    self.value(contents)?;
                    self.source(target)?;
                    let whole = py.import("builtins")?.getattr("slice")?.call1((py.None(),))?;
                    self.load_const(whole);
                    self.emit(Op::StoreSubscr, Arg::None);
                }
            }
        }
        Ok(())
    }
}

/// A new code object for `plan.code`: the graph called, side effects replayed, `returned` returned.
pub fn generate<'py>(plan: &Plan<'_, 'py>, returned: Vid) -> PyResult<Bound<'py, PyAny>> {
    let py = plan.code.py();
    let table = plan.table;
    let mut vars = plan.vars.clone();
    vars.varnames.push(OUTPUTS_LOCAL.to_owned());
    let outputs_var = (vars.varnames.len() - 1) as u32;
    let mut roots = side_effect_roots(plan.side_effects);
    roots.push(returned);
    let needed = needed_outputs(plan.values, plan.cells, plan.graph, &roots);
    let mut outputs = vec![None; plan.graph.symbol_count()];
    for (index, sym) in needed.iter().enumerate() {
        outputs[*sym] = Some(index);
    }
    let first_line: i32 = plan.code.getattr("co_firstlineno")?.extract()?;
    let mut emitter = Emitter {
        plan,
        pools: Pools {
            py,
            consts: plan
                .code
                .getattr("co_consts")?
                .try_iter()?
                .collect::<PyResult<_>>()?,
            names: plan.code.getattr("co_names")?.extract()?,
        },
        vars: vars.clone(),
        out: Vec::new(),
        location: Location::line(first_line),
        outputs,
        outputs_var,
    };
    let flags: u32 = plan.code.getattr("co_flags")?.extract()?;
    let _ = flags;
    emitter
        .out
        .extend(canonical::prologue(table, &vars, CodeKind::Function));
    if let Some(holder) = &plan.holder {
        let holder = holder.clone();
        let inputs: Vec<SourceId> = plan.graph.inputs.clone();
        emitter.call(
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
        emitter.emit(Op::StoreFast, Arg::Var(outputs_var));
    }
    for effect in plan.side_effects {
        emitter.side_effect(effect)?;
    }
    emitter.value(returned)?;
    emitter.emit(Op::ReturnValue, Arg::None);
    assemble(plan, &vars, emitter, first_line)
}

fn assemble<'py>(
    plan: &Plan<'_, 'py>,
    vars: &Vars,
    emitter: Emitter<'_, 'py>,
    first_line: i32,
) -> PyResult<Bound<'py, PyAny>> {
    let py = plan.code.py();
    let table = plan.table;
    let Emitter { out, mut pools, .. } = emitter;
    let error = |e: framehook_bytecode::Error| {
        pyo3::exceptions::PyValueError::new_err(format!("SOT code generation: {e}"))
    };
    let lowered = canonical::lower(table, vars, &out, &mut pools).map_err(error)?;
    let assembled = raw::encode(
        table,
        &Code {
            instrs: lowered,
            end_lines: Vec::new(),
        },
        first_line,
    )
    .map_err(error)?;
    let changes = PyDict::new(py);
    changes.set_item("co_code", PyBytes::new(py, &assembled.code))?;
    let line_field = match table.line_table {
        LineTableFormat::Lnotab => "co_lnotab",
        _ => "co_linetable",
    };
    changes.set_item(line_field, PyBytes::new(py, &assembled.line_table))?;
    if table.exceptions == ExceptionModel::Table {
        changes.set_item("co_exceptiontable", PyBytes::new(py, &assembled.exception_table))?;
    }
    changes.set_item("co_stacksize", assembled.stack_size)?;
    changes.set_item("co_consts", PyTuple::new(py, &pools.consts)?)?;
    changes.set_item("co_names", PyTuple::new(py, &pools.names)?)?;
    changes.set_item("co_varnames", PyTuple::new(py, &vars.varnames)?)?;
    changes.set_item("co_nlocals", vars.varnames.len())?;
    plan.code.call_method("replace", (), Some(&changes))
}
