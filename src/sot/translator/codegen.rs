//! The code a translation runs instead of the original: call the compiled graph
//! with its inputs read from the frame, replay the side effects in order, rebuild
//! the return value from graph outputs, constants and sources.

use framehook_bytecode::canonical::{
    self, Arg, BinOp, CodeKind, Const, ConstPool, Handler, Instruction, Op, Vars,
};
use framehook_bytecode::raw::{self, Code};
use framehook_bytecode::table::{CallLayout, ExceptionModel, LineTableFormat};
use framehook_bytecode::{Location, Table};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyList, PySet, PySlice, PyTuple};
use std::collections::HashMap;

use super::code_pool::Generated;
use super::guard::{Source, SourceId, SourceTable};
use super::model::code::*;
use super::model::frame::SideEffect;
use super::model::graph::Graph;
use super::model::value::{Lazy, Sym, Val, Vid};
use super::pyutil::builtin;
use crate::hookapi::pyobject::import;

/// The name of the generated code's local holding the graph's outputs.
const OUTPUTS_LOCAL: &str = "__sot_graph_outputs";
/// The generated code's local holding a mutated container's new contents while the
/// container is emptied (they may be read from it).
const CONTENTS_LOCAL: &str = "__sot_new_contents";

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

/// A stack slot handed to a resume function.
#[derive(Clone, Copy)]
enum Slot {
    /// NULL: the resume function pushes its own.
    Null,
    /// Stored in this local, then passed.
    Var(u32),
    /// Where `PUSH_EXC_INFO` saved the previous exception: made current again
    /// (`POP_EXCEPT`) and the exception in this local passed instead, for the resume
    /// function to make current in turn.
    Handled(u32),
}

/// Instructions being written for a code object, with its constants, names and variables.
struct Writer<'py> {
    table: &'static Table,
    pools: Pools<'py>,
    vars: Vars,
    out: Vec<Instruction>,
    location: Location,
}

/// Writing instructions: what generated code and resume functions share.
trait Emit<'py>: Sized {
    fn writer(&mut self) -> &mut Writer<'py>;

    fn emit(&mut self, op: Op, arg: Arg) {
        let w = self.writer();
        let location = w.location;
        w.out.push(Instruction {
            op,
            arg,
            location,
            handler: None,
        });
    }

    fn load_const(&mut self, value: Bound<'py, PyAny>) {
        let index = self.writer().pools.constant(value);
        self.emit(Op::LoadConst, Arg::Const(Const::Index(index)));
    }

    /// Pushes a tuple of the `len` values on the stack. The empty tuple is a
    /// constant: `BUILD_TUPLE 0` makes the immortal `()`, which 3.14 pushes as a
    /// mortal reference (a debug build aborts; CPython's compiler never emits it).
    fn build_tuple(&mut self, len: usize) {
        if len == 0 {
            let empty = PyTuple::empty(self.writer().pools.py).into_any();
            self.load_const(empty);
        } else {
            self.emit(Op::BuildTuple, Arg::Int(len as u32));
        }
    }

    /// Emits the constant `callee` called with the arguments `args` pushes.
    fn call_constant(
        &mut self,
        callee: Bound<'py, PyAny>,
        args: impl FnOnce(&mut Self) -> PyResult<usize>,
    ) -> PyResult<()> {
        self.call(
            |e| {
                e.load_const(callee);
                Ok(())
            },
            args,
        )
    }

    /// Emits `callee` (as `load`) called with `argc` arguments pushed by `args`.
    fn call(
        &mut self,
        load: impl FnOnce(&mut Self) -> PyResult<()>,
        args: impl FnOnce(&mut Self) -> PyResult<usize>,
    ) -> PyResult<()> {
        let layout = self.writer().table.call_layout;
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

    /// Pushes a call's NULL slot: `PUSH_NULL`, or before 3.11 (no such instruction) a
    /// callable that calls its first argument with the rest, which `CALL_METHOD` then
    /// treats as the method of the slot above.
    fn push_null(&mut self) -> PyResult<()> {
        let w = self.writer();
        match null_substitute(w.table, w.pools.py)? {
            None => self.emit(Op::PushNull, Arg::None),
            Some(substitute) => self.load_const(substitute),
        }
        Ok(())
    }

    /// Removes a NULL call slot from the top of the stack (no instruction pops one):
    /// it becomes the NULL of a call of `int()`, whose result is popped.
    fn discard_null(&mut self) -> PyResult<()> {
        let layout = self.writer().table.call_layout;
        if layout == CallLayout::Plain {
            // The slot holds the NULL substitute (see `push_null`).
            self.emit(Op::PopTop, Arg::None);
            return Ok(());
        }
        let noop = builtin(self.writer().pools.py, "int")?;
        self.load_const(noop);
        if layout == CallLayout::CallableFirst {
            self.emit(Op::Swap, Arg::Int(2));
        }
        self.emit(
            Op::Call,
            Arg::Call {
                argc: 0,
                kw_names: false,
            },
        );
        self.emit(Op::PopTop, Arg::None);
        Ok(())
    }

    /// Stores the stack's `slots` (NULL slots dropped where `drop_nulls`) and returns
    /// `resume([*slots, *live])`, `live` pushing the live variables' values.
    fn return_resumed(
        &mut self,
        slots: &[Slot],
        drop_nulls: bool,
        live: impl FnOnce(&mut Self) -> PyResult<usize>,
        resume: Option<&ResumeCall<'py>>,
    ) -> PyResult<()> {
        let py = self.writer().pools.py;
        for slot in slots.iter().rev() {
            match slot {
                Slot::Var(var) => self.emit(Op::StoreFast, Arg::Var(*var)),
                Slot::Handled(_) => self.emit(Op::PopExcept, Arg::None),
                Slot::Null if drop_nulls => self.discard_null()?,
                Slot::Null => {}
            }
        }
        let Some(resume) = resume else {
            // Nothing follows (the instruction always raises): a well-formed end.
            self.load_const(py.None().into_bound(py));
            self.emit(Op::ReturnValue, Arg::None);
            return Ok(());
        };
        let temporaries: Vec<u32> = slots
            .iter()
            .filter_map(|slot| match slot {
                Slot::Var(var) | Slot::Handled(var) => Some(*var),
                Slot::Null => None,
            })
            .collect();
        // The resume function's free variables: the frame's cells, then its own free variables.
        let w = self.writer();
        let all = w.vars.all();
        let closure_vars: Vec<u32> = w
            .vars
            .cellvars
            .iter()
            .chain(w.vars.freevars.iter())
            .map(|name| all.iter().position(|n| n == name).expect("cells are variables") as u32)
            .collect();
        let closure_op = w.closure_op();
        let target = resume.target.clone();
        let has_closure = resume.has_closure;
        let block = self.open_block_for_the_way_out();
        self.call(
            |e| {
                if !has_closure {
                    e.load_const(target);
                    return Ok(());
                }
                // types.FunctionType(code, globals(), name, None, closure)
                let function_type = import(py, "types")?.getattr("FunctionType")?;
                let globals = builtin(py, "globals")?;
                e.call_constant(function_type, |e| {
                    let name = target.getattr("co_name")?;
                    e.load_const(target);
                    e.call_constant(globals, |_| Ok(0))?;
                    e.load_const(name);
                    e.load_const(py.None().into_bound(py));
                    for var in &closure_vars {
                        e.emit(closure_op, Arg::Var(*var));
                    }
                    e.build_tuple(closure_vars.len());
                    Ok(5)
                })
            },
            |e| {
                for var in &temporaries {
                    e.emit(Op::LoadFast, Arg::Var(*var));
                }
                // Handed on in one list, which the resume function empties (see `resume_code`).
                let count = temporaries.len() + live(e)?;
                if count > 0 {
                    e.emit(Op::BuildList, Arg::Int(count as u32));
                }
                e.release_locals();
                Ok(usize::from(count > 0))
            },
        )?;
        self.return_through(block)
    }

    /// 3.9/3.10: opens the `SETUP_FINALLY` block of [`Self::return_through`] (its handler
    /// set there), before a resume function is loaded and called.
    fn open_block_for_the_way_out(&mut self) -> Option<usize> {
        let w = self.writer();
        if w.table.exceptions != ExceptionModel::BlockStack {
            return None;
        }
        self.emit(Op::SetupFinally, Arg::Target(0));
        Some(self.writer().out.len() - 1)
    }

    /// Returns what the resume function just called returns. Where an exception leaves it
    /// instead, the exception's first traceback entry, this frame's at the break, goes
    /// before it is raised on (`RERAISE` adds none), so that the function shows once in
    /// the traceback, as in the original's: the resume function's frame shows where it was
    /// raised. Nothing is on the stack below the call. 3.11+: an exception-table entry on
    /// the call; 3.9/3.10: the block opened before it (`block`), whose handler finds the
    /// exception's (traceback, value, type) on top and raises it with the new traceback.
    fn return_through(&mut self, block: Option<usize>) -> PyResult<()> {
        let call = self.writer().out.len() - 1;
        if block.is_some() {
            self.emit(Op::PopBlock, Arg::None);
        }
        self.emit(Op::ReturnValue, Arg::None);
        let w = self.writer();
        let pad = w.out.len();
        let drop_entry = import(w.pools.py, "framehook._native")?.getattr("_sot_drop_caller_entry")?;
        match block {
            None => {
                w.out[call].handler = Some(Handler {
                    target: pad,
                    depth: 0,
                    lasti: false,
                });
                // The exception lies below the call's callable and NULL.
                self.call_constant(drop_entry, |e| {
                    e.emit(Op::Copy, Arg::Int(3));
                    Ok(1)
                })?;
                self.emit(Op::PopTop, Arg::None);
            }
            Some(setup) => {
                w.out[setup].arg = Arg::Target(pad);
                // (traceback, value, type) -> (type, traceback, value), then the new
                // traceback in the old one's place.
                self.emit(Op::RotN, Arg::Int(3));
                self.emit(Op::Copy, Arg::Int(1));
                self.call_constant(drop_entry, |e| {
                    e.emit(Op::Swap, Arg::Int(2));
                    Ok(1)
                })?;
                self.emit(Op::RotN, Arg::Int(4));
                self.emit(Op::Swap, Arg::Int(2));
                self.emit(Op::PopTop, Arg::None);
                self.emit(Op::Swap, Arg::Int(2));
            }
        }
        self.emit(Op::Reraise, Arg::Int(0));
        Ok(())
    }

    /// Sets every local that is not a cell to None: the frame waits on the resume
    /// function, which now holds what is live, and the original frees a value the
    /// moment the rest of the function drops it (`del x`, a popped stack slot).
    fn release_locals(&mut self) {
        let vars = &self.writer().vars;
        let locals: Vec<u32> = (0..vars.varnames.len())
            .filter(|i| !vars.cellvars.contains(&vars.varnames[*i]))
            .map(|i| i as u32)
            .collect();
        for var in locals {
            self.release(var);
        }
    }

    /// `var = None`.
    fn release(&mut self, var: u32) {
        let py = self.writer().pools.py;
        self.load_const(py.None().into_bound(py));
        self.emit(Op::StoreFast, Arg::Var(var));
    }

    /// `del var`: a local of the translation's own, unbound once read, so that the
    /// function's `locals()` and `vars()` show only the original's variables.
    fn unbind(&mut self, var: u32) {
        self.emit(Op::DeleteFast, Arg::Var(var));
    }
}

impl<'py> Writer<'py> {
    /// The instruction that loads a cell object itself.
    fn closure_op(&self) -> Op {
        if self.table.has("LOAD_CLOSURE") {
            Op::LoadClosure
        } else {
            Op::LoadFast
        }
    }

    /// Starts a code object made from `code` (whose constants and names it extends)
    /// with `vars`: the prologue they need.
    fn new(
        table: &'static Table,
        code: &Bound<'py, PyAny>,
        vars: Vars,
        location: Location,
    ) -> PyResult<Self> {
        let pools = Pools {
            py: code.py(),
            consts: code.getattr("co_consts")?.try_iter()?.collect::<PyResult<_>>()?,
            names: code.getattr("co_names")?.extract()?,
        };
        Ok(Writer {
            table,
            pools,
            out: canonical::prologue(table, &vars, CodeKind::Function),
            vars,
            location,
        })
    }

    /// `code` with these instructions, names and variables (and `arguments` positional
    /// arguments, where they change).
    fn finish(mut self, code: &Bound<'py, PyAny>, arguments: Option<usize>) -> PyResult<Bound<'py, PyAny>> {
        let changes = self.changes(code, arguments)?;
        code.call_method("replace", (), Some(&changes))
    }

    /// What `code.replace` takes to make the code `finish` makes.
    fn changes(
        &mut self,
        code: &Bound<'py, PyAny>,
        arguments: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let first_line: i32 = code.getattr("co_firstlineno")?.extract()?;
        let changes = encode_changes(self.table, &self.vars, &self.out, &mut self.pools, first_line)?;
        if let Some(count) = arguments {
            let flags: u32 = code.getattr("co_flags")?.extract()?;
            changes.set_item("co_argcount", count)?;
            changes.set_item("co_posonlyargcount", 0)?;
            changes.set_item("co_kwonlyargcount", 0)?;
            changes.set_item("co_flags", flags & !(0x04 | 0x08))?;
        }
        Ok(changes)
    }
}

impl<'py> Emit<'py> for Writer<'py> {
    fn writer(&mut self) -> &mut Writer<'py> {
        self
    }
}

impl<'py> Emit<'py> for Emitter<'_, 'py> {
    fn writer(&mut self) -> &mut Writer<'py> {
        &mut self.w
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
    /// The frame's cells: (the VM's cell, the variable holding it).
    pub frame_cells: Vec<(usize, usize)>,
    pub globals: Bound<'py, PyAny>,
    /// Every value the generated code rebuilds: the side effects', the frame's cells', and
    /// what the plan was made for (the returned value; the stack and live variables).
    pub roots: Vec<Vid>,
    /// The graph symbols the generated code reads, in the order the graph returns them.
    pub outputs: Vec<Sym>,
    /// Set when generating fails on a value made while translating that generated code
    /// cannot make again (a generator, a method of a made list...): the translator then
    /// breaks where it was made, for the value to exist as a real object.
    pub unrebuildable: std::cell::Cell<Option<Vid>>,
    /// The exceptions a handler of the translation caught, by address, with where the top
    /// frame raised each whose traceback the generated code can give it again (see
    /// `Vm::caught_exceptions`).
    caught_exceptions: &'a HashMap<usize, Option<Location>>,
}

impl<'a, 'py> Plan<'a, 'py> {
    /// A plan rebuilding `rebuilt` (with the side effects and the frame's cells); the
    /// holder of the compiled graph is set once the graph is compiled for `outputs`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        table: &'static Table,
        code: &'a Bound<'py, PyAny>,
        vars: &'a Vars,
        values: &'a [Val<'py>],
        cells: &'a [Option<Vid>],
        sources: &'a SourceTable,
        graph: &'a Graph<'py>,
        side_effects: &'a [SideEffect],
        frame_cells: Vec<(usize, usize)>,
        globals: Bound<'py, PyAny>,
        rebuilt: &[Vid],
        caught_exceptions: &'a HashMap<usize, Option<Location>>,
    ) -> Self {
        let mut roots = side_effect_roots(values, side_effects);
        roots.extend_from_slice(rebuilt);
        roots.extend(cell_roots(cells, &frame_cells, vars));
        let outputs = needed_outputs(values, cells, graph, &roots);
        Plan {
            table,
            code,
            vars,
            values,
            cells,
            sources,
            graph,
            side_effects,
            holder: None,
            frame_cells,
            globals,
            roots,
            outputs,
            unrebuildable: std::cell::Cell::new(None),
            caught_exceptions,
        }
    }
}

struct Emitter<'a, 'py> {
    plan: &'a Plan<'a, 'py>,
    w: Writer<'py>,
    /// Per graph symbol: its index among the graph's outputs.
    outputs: Vec<Option<usize>>,
    outputs_var: u32,
    contents_var: u32,
    /// Objects the translation made, by value, and their locals.
    objects: Vec<(Vid, u32)>,
    /// Sources read into a local before the side effects (which may change them).
    read_first: Vec<(SourceId, u32)>,
    /// While the code's start reads sources: the paths shared by several of them, each
    /// with its local and whether it holds the path's value yet (see `shared_paths`).
    paths: Vec<(SourceId, u32, bool)>,
    /// How deep `contents` is in nested containers.
    nesting: usize,
}

/// The values `value` holds, which the generated code rebuilds with it.
fn children(value: &Val<'_>, cells: &[Option<Vid>]) -> Vec<Vid> {
    match value {
        Val::Tuple(items) | Val::List(items) | Val::Set(items) | Val::Template(items) => items.clone(),
        Val::NamedTuple { items, .. } => items.clone(),
        Val::Constructed {
            class, args, kwargs, ..
        } => vec![*class, *args, *kwargs],
        Val::Interpolation(parts) => parts.to_vec(),
        Val::Iter { items, next } => items[*next..].to_vec(),
        Val::ListIter {
            list,
            next: Some(_),
            frame: None,
        } => vec![*list],
        Val::Dict(items) => items.iter().flat_map(|(k, v)| [*k, *v]).collect(),
        Val::Slice(a, b, c) => vec![*a, *b, *c],
        Val::DictView { dict, .. } => vec![*dict],
        Val::Method { function, receiver } => vec![*function, *receiver],
        Val::Cell(c) => cells[*c].into_iter().collect(),
        Val::Object { attrs, .. } => attrs.iter().map(|(_, v)| *v).collect(),
        Val::TensorMethod { tensor, .. } => vec![*tensor],
        Val::ContainerMethod { container, .. } => vec![*container],
        Val::Function(function) => {
            let mut held = function.defaults.clone();
            held.extend(function.kwdefaults.iter().map(|(_, v)| *v));
            held.extend(function.annotations.iter().chain(&function.annotate));
            held.extend(function.closure.iter().filter_map(|c| cells[*c]));
            held
        }
        _ => Vec::new(),
    }
}

/// Every value the generated code rebuilds from `roots`, each once.
fn reachable(values: &[Val<'_>], cells: &[Option<Vid>], roots: &[Vid]) -> Vec<Vid> {
    let mut seen = vec![false; values.len()];
    let mut found = Vec::new();
    let mut stack: Vec<Vid> = roots.to_vec();
    while let Some(vid) = stack.pop() {
        if std::mem::replace(&mut seen[vid], true) {
            continue;
        }
        found.push(vid);
        stack.extend(children(&values[vid], cells));
    }
    found.sort_unstable();
    found
}

/// The graph symbols the generated code needs: those of the values it rebuilds.
fn needed_outputs(values: &[Val<'_>], cells: &[Option<Vid>], graph: &Graph<'_>, roots: &[Vid]) -> Vec<Sym> {
    let mut syms: Vec<Sym> = reachable(values, cells, roots)
        .into_iter()
        .filter_map(|vid| match &values[vid] {
            Val::Tensor { sym, .. } | Val::Scalar { sym, .. } if *sym >= graph.inputs.len() => Some(*sym),
            _ => None,
        })
        .collect();
    syms.sort_unstable();
    syms.dedup();
    syms
}

/// The sources the generated code would read after its side effects or a break's step,
/// each with the local it is read into before them: the translation read them before any
/// change it made, or the step makes. That includes the lists, dicts, cells and iterators
/// the side effects change (an earlier side effect may rebind the path to them, or empty its
/// source: a resume function's box). An argument is the frame's own: nothing changes it.
fn sources_read_first(plan: &Plan<'_, '_>, vars: &mut Vars, before_a_step: bool) -> Vec<(SourceId, u32)> {
    if plan.side_effects.is_empty() && !before_a_step {
        return Vec::new();
    }
    let targets = plan.side_effects.iter().filter_map(|effect| match effect {
        SideEffect::Replace { target, .. } => Some(*target),
        SideEffect::StoreCell { cell, .. } => Some(*cell),
        SideEffect::IteratorPosition { iterator } => match &plan.values[*iterator] {
            Val::ListIter { frame, .. } => *frame,
            _ => None,
        },
        _ => None,
    });
    let mut read: Vec<SourceId> = reachable(plan.values, plan.cells, &plan.roots)
        .into_iter()
        .filter_map(|vid| match &plan.values[vid] {
            Val::Obj { source, .. } => *source,
            Val::Tensor { sym, .. } | Val::Scalar { sym, .. } => plan.graph.inputs.get(*sym).copied(),
            _ => None,
        })
        .chain(targets)
        .filter(|s| !matches!(plan.sources.sources[*s], Source::Argument(_) | Source::Held(_)))
        .collect();
    read.sort_unstable();
    read.dedup();
    read.into_iter()
        .map(|source| {
            vars.varnames.push(format!("__sot_read{source}"));
            (source, (vars.varnames.len() - 1) as u32)
        })
        .collect()
}

/// The attributes and items on the way to two or more of the sources read at the code's
/// start (the graph's inputs, the sources read before the side effects), each with the
/// local that keeps it once read: `model.blocks[0]` is read once for all of the block's
/// weights. Only the graph runs between those reads (the backend's operations, which
/// change no attribute or item), so one read serves all.
fn shared_paths(
    plan: &Plan<'_, '_>,
    read_first: &[(SourceId, u32)],
    vars: &mut Vars,
) -> Vec<(SourceId, u32, bool)> {
    let mut read: Vec<SourceId> = plan.graph.inputs.clone();
    read.extend(read_first.iter().map(|(source, _)| *source));
    read.sort_unstable();
    read.dedup();
    let mut uses: HashMap<SourceId, usize> = HashMap::new();
    for source in read {
        let mut at = source;
        while let Source::Attr(parent, _) | Source::Item(parent, _) = &plan.sources.sources[at] {
            *uses.entry(at).or_default() += 1;
            at = *parent;
        }
    }
    let mut shared: Vec<SourceId> = uses.into_iter().filter(|(_, n)| *n > 1).map(|(s, _)| s).collect();
    shared.sort_unstable();
    shared
        .into_iter()
        .map(|source| {
            vars.varnames.push(format!("__sot_path{source}"));
            (source, (vars.varnames.len() - 1) as u32, false)
        })
        .collect()
}

/// How many `__context__`/`__cause__` links of a made exception the generated code makes.
const MAX_CHAIN: usize = 8;

/// The objects the translation made that the generated code rebuilds, and the local
/// each is made in (named before any instruction is emitted): objects, exceptions,
/// functions, and lists, dicts and sets held in more than one place (one object, as in
/// the frame).
fn made_objects(
    values: &[Val<'_>],
    cells: &[Option<Vid>],
    roots: &[Vid],
    vars: &mut Vars,
) -> Vec<(Vid, u32)> {
    let reached = reachable(values, cells, roots);
    let mut made_exceptions: Vec<(Bound<'_, PyAny>, u32)> = Vec::new();
    let mut references = vec![0_usize; values.len()];
    for vid in roots
        .iter()
        .copied()
        .chain(reached.iter().flat_map(|v| children(&values[*v], cells)))
    {
        references[vid] += 1;
    }
    reached
        .into_iter()
        .filter(|vid| match &values[*vid] {
            Val::Object { .. } | Val::Function(_) | Val::Constructed { .. } => true,
            // Held in more than one place: one object, as in the frame (an iterator
            // advanced through one is advanced for the other).
            Val::List(_)
            | Val::Dict(_)
            | Val::Set(_)
            | Val::Iter { .. }
            | Val::ListIter { .. }
            | Val::Lazy(Lazy::Range { .. }) => references[*vid] > 1,
            value => made_exception(value).is_some(),
        })
        .map(|vid| {
            // One exception the translation raised and caught may sit under several
            // values (raised, then caught): one object, one local.
            let exception = made_exception(&values[vid]);
            let same = exception.and_then(|e| {
                made_exceptions
                    .iter()
                    .find(|(other, _)| e.is(other))
                    .map(|(_, var)| *var)
            });
            let var = same.unwrap_or_else(|| {
                vars.varnames.push(format!("__sot_object{vid}"));
                (vars.varnames.len() - 1) as u32
            });
            if let (Some(e), None) = (exception, same) {
                made_exceptions.push((e.clone(), var));
            }
            (vid, var)
        })
        .collect()
}

/// An exception the translation raised (not one read from the frame): the generated
/// code makes its own, once (its handler and its `except ... as e` see the same one).
fn made_exception<'a, 'py>(value: &'a Val<'py>) -> Option<&'a Bound<'py, PyAny>> {
    match value {
        Val::Obj { obj, source: None }
            if obj
                .is_instance(&obj.py().get_type::<pyo3::exceptions::PyBaseException>())
                .unwrap_or(false) =>
        {
            Some(obj)
        }
        _ => None,
    }
}

/// The contents of the frame's own cells, which the generated code stores back.
fn cell_roots(cells: &[Option<Vid>], frame_cells: &[(usize, usize)], vars: &Vars) -> Vec<Vid> {
    let first_free = vars.all().len() - vars.freevars.len();
    frame_cells
        .iter()
        .filter(|(_, var)| *var < first_free)
        .filter_map(|(cell, _)| cells[*cell])
        .collect()
}

/// What a dict from the frame is given: keys to delete, then items to store.
struct DictChanges {
    deleted: Vec<Vid>,
    stored: Vec<(Vid, Vid)>,
}

/// How a dict from the frame that held `before` comes to hold `contents`: the keys to
/// delete, then the items to store (added or given another value), in order. That makes
/// the same dict, and as CPython's operations leave its table (a deletion makes 3.9's
/// split table combined), where the keys of `before` that remain are the first of
/// `contents`' in the same order (a store keeps a key's place, a new key goes last); None
/// where a remaining key moved (replaced whole then). Keys are compared as values of the
/// translation: a stored key keeps its first value.
fn dict_changes(values: &[Val<'_>], contents: Vid, before: &[(Vid, Vid)]) -> Option<DictChanges> {
    let Val::Dict(after) = &values[contents] else {
        return None;
    };
    let stays = |key: &Vid| after.iter().any(|(k, _)| k == key);
    let remaining: Vec<&(Vid, Vid)> = before.iter().filter(|(key, _)| stays(key)).collect();
    let deleted: Vec<Vid> = before
        .iter()
        .map(|(key, _)| *key)
        .filter(|key| !stays(key))
        .collect();
    let kept = remaining.len() <= after.len() && remaining.iter().zip(after).all(|((k, _), (a, _))| k == a);
    kept.then(|| DictChanges {
        deleted,
        stored: after
            .iter()
            .enumerate()
            .filter(|(index, (_, value))| remaining.get(*index).map_or(true, |(_, old)| old != value))
            .map(|(_, item)| *item)
            .collect(),
    })
}

/// The roots every generated code rebuilds: side effects' values.
fn side_effect_roots(values: &[Val<'_>], side_effects: &[SideEffect]) -> Vec<Vid> {
    side_effects
        .iter()
        .flat_map(|effect| match effect {
            SideEffect::StoreAttr { target, value, .. } => vec![*target, *value],
            SideEffect::DeleteAttr { target, .. } => vec![*target],
            SideEffect::IteratorPosition { .. } => vec![],
            SideEffect::StoreGlobal { value, .. } => vec![*value],
            SideEffect::DeleteGlobal { .. } => vec![],
            SideEffect::StoreFree { value, .. } | SideEffect::StoreCell { value, .. } => vec![*value],
            SideEffect::Replace { contents, before, .. } => match dict_changes(values, *contents, before) {
                Some(changes) => changes
                    .deleted
                    .into_iter()
                    .chain(changes.stored.into_iter().flat_map(|(k, v)| [k, v]))
                    .collect(),
                None => vec![*contents],
            },
        })
        .collect()
}

impl<'a, 'py> Emitter<'a, 'py> {
    /// The generated code's start, the same for every plan: the prologue, the graph
    /// called, the objects the translation made, the side effects, the frame's cells.
    /// `vars` holds every local the caller needs already (see `OUTPUTS_LOCAL`).
    fn begin(
        plan: &'a Plan<'a, 'py>,
        mut vars: Vars,
        location: Location,
        before_a_step: bool,
    ) -> PyResult<Self> {
        vars.varnames.push(OUTPUTS_LOCAL.to_owned());
        let outputs_var = (vars.varnames.len() - 1) as u32;
        vars.varnames.push(CONTENTS_LOCAL.to_owned());
        let contents_var = (vars.varnames.len() - 1) as u32;
        let objects = made_objects(plan.values, plan.cells, &plan.roots, &mut vars);
        let read_first = sources_read_first(plan, &mut vars, before_a_step);
        let paths = shared_paths(plan, &read_first, &mut vars);
        let mut outputs = vec![None; plan.graph.symbol_count()];
        for (index, sym) in plan.outputs.iter().enumerate() {
            outputs[*sym] = Some(index);
        }
        let mut emitter = Emitter {
            plan,
            w: Writer::new(plan.table, plan.code, vars, location)?,
            outputs,
            outputs_var,
            contents_var,
            objects,
            read_first: Vec::new(),
            paths,
            nesting: 0,
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
        for effect in plan.side_effects {
            emitter.side_effect(effect)?;
        }
        emitter.store_cells()?;
        Ok(emitter)
    }

    /// The code object: the original with these instructions and names.
    fn finish(mut self) -> PyResult<Generated> {
        let changes = self.w.changes(self.plan.code, None)?;
        Generated::make(self.plan.code, &changes, self.plan.holder.as_ref())
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

    /// The generated code's index of the original code's variable `var` (the generated
    /// code's own locals come before the cells).
    fn var_of(&self, var: usize) -> u32 {
        let name = self.plan.vars.all()[var];
        self.w
            .vars
            .all()
            .iter()
            .position(|n| *n == name)
            .expect("the original's variables are kept") as u32
    }

    /// Before a step the generated code runs itself: the frame's variables hold what the
    /// original's hold there (the live ones their values, those it has unbound nothing,
    /// the rest None), and the generated code's own locals nothing, so that an object the
    /// original no longer holds dies when it would (`del obj; gc.collect()`), and what reads
    /// the frame sees its variables (`super()` after `del self`). The values are all pushed
    /// before any is stored: one may be read from a variable another replaces.
    fn settle_variables(&mut self, live: &[(usize, Vid)], unbound: &[usize]) -> PyResult<()> {
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
    fn store_cells(&mut self) -> PyResult<()> {
        let first_free = self.plan.vars.all().len() - self.plan.vars.freevars.len();
        for (cell, var) in self.plan.frame_cells.clone() {
            if var >= first_free {
                continue;
            }
            if let Some(content) = self.plan.cells[cell] {
                self.value(content)?;
                let var = self.var_of(var);
                self.emit(Op::StoreDeref, Arg::Var(var));
            }
        }
        Ok(())
    }

    /// Makes the objects the translation made: each with `object.__new__(class)`, then
    /// their attributes (which may refer to one another).
    fn make_objects(&mut self) -> PyResult<()> {
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
            if matches!(self.plan.values[vid], Val::List(_) | Val::Dict(_) | Val::Set(_)) {
                self.make_container(vid, var)?;
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
        for &(vid, var) in &objects {
            match self.plan.values[vid] {
                Val::Function(_) => self.new_function(vid, var)?,
                Val::Constructed {
                    class, args, kwargs, ..
                } => {
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
                Val::Iter { .. } | Val::ListIter { .. } | Val::Lazy(Lazy::Range { .. }) => {
                    self.new_iterator(vid)?;
                    self.emit(Op::StoreFast, Arg::Var(var));
                }
                _ => {}
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
                Val::Object { attrs, .. } => {
                    for (name, value) in attrs.clone() {
                        self.value(value)?;
                        self.store_attr_of(var, &name);
                    }
                }
                Val::List(_) | Val::Dict(_) | Val::Set(_) => self.fill_container(vid, var)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The made objects, one per local (values sharing a local are one object).
    fn distinct_objects(&self) -> Vec<(Vid, u32)> {
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
    fn new_exception(&mut self, exception: &Bound<'py, PyAny>) -> PyResult<()> {
        let (class, args) = (exception.get_type().into_any(), exception.getattr("args")?);
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
    fn raise_and_catch(&mut self, var: u32, location: Location) {
        self.emit(Op::LoadFast, Arg::Var(var));
        let caught = self.w.out.len() + 1;
        self.w.out.push(Instruction {
            op: Op::RaiseVarargs,
            arg: Arg::Int(1),
            location,
            handler: Some(Handler {
                target: caught,
                depth: 0,
                lasti: false,
            }),
        });
        self.emit(Op::PopTop, Arg::None);
    }

    fn chain_exception(&mut self, exception: &Bound<'py, PyAny>, depth: usize) -> PyResult<()> {
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
        if exception.getattr("__cause__")?.is_none()
            && exception.getattr("__suppress_context__")?.is_truthy()?
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

    /// An empty list, dict or set made once for `vid` (its contents are added after every
    /// made object exists, so that they may hold one another). A list is `[None] * n`, of
    /// its final length: its contents replace the Nones, and it has the size CPython's own
    /// lists of n items have (`sys.getsizeof`), where one extended from empty has more.
    fn make_container(&mut self, vid: Vid, var: u32) -> PyResult<()> {
        match &self.plan.values[vid] {
            Val::List(items) if !items.is_empty() => {
                let py = self.w.pools.py;
                self.load_const(py.None().into_bound(py));
                self.emit(Op::BuildList, Arg::Int(1));
                self.load_const(items.len().into_pyobject(py)?.into_any());
                self.emit(
                    Op::BinaryOp,
                    Arg::BinaryOp {
                        op: BinOp::Multiply,
                        inplace: false,
                    },
                );
            }
            Val::List(_) => self.emit(Op::BuildList, Arg::Int(0)),
            Val::Dict(_) => self.emit(Op::BuildMap, Arg::Int(0)),
            _ => self.emit(Op::BuildSet, Arg::Int(0)),
        }
        self.emit(Op::StoreFast, Arg::Var(var));
        Ok(())
    }

    /// `list.__setitem__(made, slice(None), (items...))`, `dict.update(made, {...})` or
    /// `set.update(made, (...))`.
    fn fill_container(&mut self, vid: Vid, var: u32) -> PyResult<()> {
        let py = self.w.pools.py;
        let (method, whole, contents) = match &self.plan.values[vid] {
            Val::List(items) => (
                py.get_type::<PyList>().getattr("__setitem__")?,
                Some(PySlice::full(py).into_any()),
                Val::Tuple(items.clone()),
            ),
            Val::Set(items) => (
                py.get_type::<PySet>().getattr("update")?,
                None,
                Val::Tuple(items.clone()),
            ),
            Val::Dict(items) => (
                py.get_type::<PyDict>().getattr("update")?,
                None,
                Val::Dict(items.clone()),
            ),
            _ => return Ok(()),
        };
        self.call_constant(method, |e| {
            e.emit(Op::LoadFast, Arg::Var(var));
            let sliced = whole.is_some();
            if let Some(whole) = whole {
                e.load_const(whole);
            }
            e.contents(&contents)?;
            Ok(2 + usize::from(sliced))
        })?;
        self.emit(Op::PopTop, Arg::None);
        Ok(())
    }

    /// `outputs = holder[0](*inputs)`, when there is a graph.
    fn emit_graph_call(&mut self) -> PyResult<()> {
        let Some(holder) = self.plan.holder.clone() else {
            return Ok(());
        };
        let py = self.w.pools.py;
        let inputs: Vec<SourceId> = self.plan.graph.inputs.clone();
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
        self.emit(Op::StoreFast, Arg::Var(self.outputs_var));
        Ok(())
    }

    fn is_cell_var(&self, index: usize) -> bool {
        let all = self.w.vars.all();
        let name = all[index];
        self.w.vars.cellvars.iter().any(|c| c == name) || index >= all.len() - self.w.vars.freevars.len()
    }

    fn source(&mut self, id: SourceId) -> PyResult<()> {
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
    fn read_source(&mut self, id: SourceId) -> PyResult<()> {
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
                let index = self.w.vars.all().len() - self.w.vars.freevars.len() + i;
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
            Source::Item(parent, key) => {
                let (parent, key) = (*parent, key.bind(py));
                self.source(parent)?;
                self.subscript_const(key);
            }
            Source::Held(held) => {
                let index = self.w.pools.constant(held.bind(py));
                self.emit(Op::LoadConst, Arg::Const(Const::Index(index)));
            }
            Source::Called(function) => {
                let function = *function;
                self.call(|e| e.source(function), |_| Ok(0))?;
            }
        }
        Ok(())
    }

    /// Pushes an object the generated code made (see `made_objects`).
    fn made(&mut self, vid: Vid) -> PyResult<()> {
        let var = self.objects.iter().find(|(v, _)| *v == vid).map(|(_, var)| *var);
        let var =
            var.ok_or_else(|| pyo3::exceptions::PyValueError::new_err("an object made without its local"))?;
        self.emit(Op::LoadFast, Arg::Var(var));
        Ok(())
    }

    /// Pushes a new tuple, list, set or dict of the values `container` holds.
    fn contents(&mut self, container: &Val<'py>) -> PyResult<()> {
        if self.nesting >= MAX_NESTING {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "a value nested more than {MAX_NESTING} deep"
            )));
        }
        self.nesting += 1;
        let pushed = self.push_contents(container);
        self.nesting -= 1;
        pushed
    }

    fn push_contents(&mut self, container: &Val<'py>) -> PyResult<()> {
        match container {
            Val::Tuple(items) | Val::List(items) | Val::Set(items) => {
                for item in items {
                    self.value(*item)?;
                }
                match container {
                    Val::Tuple(_) => self.build_tuple(items.len()),
                    Val::List(_) => self.emit(Op::BuildList, Arg::Int(items.len() as u32)),
                    _ => self.emit(Op::BuildSet, Arg::Int(items.len() as u32)),
                }
            }
            Val::Dict(items) => {
                for (k, v) in items {
                    self.value(*k)?;
                    self.value(*v)?;
                }
                self.emit(Op::BuildMap, Arg::Int(items.len() as u32));
            }
            _ => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "contents of a value that is not a container",
                ))
            }
        }
        Ok(())
    }

    /// Emits code that pushes the value `vid` stands for.
    fn value(&mut self, vid: Vid) -> PyResult<()> {
        let py = self.w.pools.py;
        match &self.plan.values[vid] {
            Val::Obj { obj, source } => match source {
                Some(s) => self.source(*s)?,
                // A code object's constructor may replace a frozenset constant by an equal
                // copy (interning its strings): `fs.copy()` is `fs` itself.
                None if obj.is_exact_instance_of::<pyo3::types::PyFrozenSet>() => {
                    let copy = obj.getattr("copy")?;
                    self.call_constant(copy, |_| Ok(0))?;
                }
                None if made_exception(&self.plan.values[vid]).is_none() => self.load_const(obj.clone()),
                None => self.made(vid)?,
            },
            Val::Object { .. } | Val::Constructed { .. } => self.made(vid)?,
            Val::Tensor { sym, .. } | Val::Scalar { sym, .. } => {
                if *sym < self.plan.graph.inputs.len() {
                    self.source(self.plan.graph.inputs[*sym])?;
                } else {
                    let index = self.outputs[*sym].ok_or_else(|| {
                        pyo3::exceptions::PyValueError::new_err("a tensor the graph does not output")
                    })?;
                    self.emit(Op::LoadFast, Arg::Var(self.outputs_var));
                    self.subscript_const(index.into_pyobject(py)?.into_any());
                }
            }
            Val::List(_) | Val::Dict(_) | Val::Set(_) if self.objects.iter().any(|(v, _)| *v == vid) => {
                self.made(vid)?;
            }
            value @ (Val::Tuple(_) | Val::List(_) | Val::Set(_) | Val::Dict(_)) => self.contents(value)?,
            Val::Slice(a, b, c) => {
                for part in [*a, *b, *c] {
                    self.value(part)?;
                }
                self.emit(Op::BuildSlice, Arg::Int(3));
            }
            Val::Method { function, receiver } => {
                let (function, receiver) = (*function, *receiver);
                let method_type = import(py, "types")?.getattr("MethodType")?;
                self.call_constant(
                    method_type,
                    |e| {
                        e.value(function)?;
                        e.value(receiver)?;
                        Ok(2)
                    },
                )?;
            }
            Val::DictView { dict, part } => {
                let (dict, method) = (*dict, py.get_type::<PyDict>().getattr(part.method())?);
                self.call_constant(
                    method,
                    |e| {
                        e.value(dict)?;
                        Ok(1)
                    },
                )?;
            }
            Val::Iter { .. } | Val::ListIter { .. } | Val::Lazy(Lazy::Range { .. }) => {
                if self.objects.iter().any(|(v, _)| *v == vid) {
                    self.made(vid)?;
                } else {
                    self.new_iterator(vid)?;
                }
            }
            Val::Interpolation(parts) => self.templatelib_object("Interpolation", parts.to_vec())?,
            Val::Template(parts) => self.templatelib_object("Template", parts.clone())?,
            Val::TensorMethod { tensor, name } => {
                let (tensor, name) = (*tensor, name.clone());
                self.value(tensor)?;
                let index = self.w.pools.name(&name);
                self.emit(Op::LoadAttr, Arg::Name(index));
            }
            Val::NamedTuple { class, items } => {
                // tuple.__new__(class, (items...)), as the class's own `__new__` makes it.
                let (class, items) = (class.clone(), items.clone());
                let tuple_new = py.get_type::<pyo3::types::PyTuple>().getattr("__new__")?;
                self.call_constant(tuple_new, |e| {
                    e.load_const(class);
                    e.push_contents(&Val::Tuple(items))?;
                    Ok(2)
                })?;
            }
            Val::ContainerMethod { container, name } => {
                let (container, name) = (*container, name.clone());
                // The method of a frame's list or dict the translation changed is the frame
                // object's: its new contents are written back before this value is used.
                let frame_object = self.plan.side_effects.iter().find_map(|effect| match effect {
                    SideEffect::Replace { target, contents, .. } if *contents == container => Some(*target),
                    _ => None,
                });
                match frame_object {
                    Some(target) => self.source(target)?,
                    None => self.value(container)?,
                }
                let index = self.w.pools.name(&name);
                self.emit(Op::LoadAttr, Arg::Name(index));
            }
            Val::Function(_) => self.made(vid)?,
            Val::Cell(c) => match self.plan.cells[*c] {
                Some(content) => self.value(content)?,
                None => return Err(pyo3::exceptions::PyValueError::new_err("an empty cell")),
            },
            _ => {
                return Err(self.cannot_rebuild(
                    vid,
                    "a value the generated code cannot rebuild (a function, iterator or method made while translating)",
                ))
            }
        }
        Ok(())
    }

    /// Makes the function the translation made as `vid` into `var`: `types.FunctionType`
    /// of its code, globals, name, defaults and closure, then what MAKE_FUNCTION sets
    /// beside them (keyword-only defaults, annotations, a qualified name the code does
    /// not carry).
    fn new_function(&mut self, vid: Vid, var: u32) -> PyResult<()> {
        let py = self.w.pools.py;
        let Val::Function(function) = &self.plan.values[vid] else {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "a function made without its value",
            ));
        };
        let closure_vars = function
            .closure
            .iter()
            .map(|c| {
                self.plan
                    .frame_cells
                    .iter()
                    .find(|(cell, _)| cell == c)
                    .map(|(_, var)| self.var_of(*var))
            })
            .collect::<Option<Vec<u32>>>()
            .ok_or_else(|| self.cannot_rebuild(vid, "a closure over cells of an inlined function"))?;
        let function_type = import(py, "types")?.getattr("FunctionType")?;
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
        let (kwdefaults, annotations, annotate) = (
            function.kwdefaults.clone(),
            function.annotations,
            function.annotate,
        );
        let own_globals = function.globals.is(&self.plan.globals);
        let globals = function.globals.clone();
        let closure_op = self.w.closure_op();
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
            if closure_vars.is_empty() {
                e.load_const(py.None().into_bound(py));
            } else {
                for var in &closure_vars {
                    e.emit(closure_op, Arg::Var(*var));
                }
                e.build_tuple(closure_vars.len());
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
        Ok(())
    }

    /// Pushes a new iterator of the rest of what the translation's iterator `vid` has
    /// left: the rest of its items, of its list (live), of its range.
    fn new_iterator(&mut self, vid: Vid) -> PyResult<()> {
        let py = self.w.pools.py;
        match &self.plan.values[vid] {
            Val::Iter { items, next } => {
                let rest = items[*next..].to_vec();
                let iter = builtin(py, "iter")?;
                self.call_constant(iter, |e| {
                    for item in &rest {
                        e.value(*item)?;
                    }
                    e.build_tuple(rest.len());
                    Ok(1)
                })?;
            }
            Val::Lazy(Lazy::Range { next, stop, step }) => {
                // `iter(range(next, stop, step))`: the rest of the range, as an iterator.
                let range = builtin(py, "range")?.call1((*next, *stop, *step))?;
                let iter = builtin(py, "iter")?;
                self.call_constant(iter, |e| {
                    e.load_const(range);
                    Ok(1)
                })?;
            }
            // One from the frame is itself (its position set by a side effect).
            Val::ListIter {
                frame: Some(source), ..
            } => self.source(*source)?,
            Val::ListIter { list, next, .. } => {
                let (list, next) = (*list, *next);
                let list_iterator = import(py, "framehook.sot._translate")?.getattr("_list_iterator")?;
                self.call_constant(list_iterator, |e| {
                    match next {
                        Some(next) => {
                            e.value(list)?;
                            e.load_const(next.into_pyobject(py)?.into_any());
                        }
                        // Exhausted: it no longer holds the list.
                        None => {
                            e.emit(Op::BuildList, Arg::Int(0));
                            e.load_const(py.None().into_bound(py));
                        }
                    }
                    Ok(2)
                })?;
            }
            _ => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "an iterator the generated code cannot rebuild",
                ))
            }
        }
        Ok(())
    }

    /// `var.<name> = <the value on top>`.
    fn store_attr_of(&mut self, var: u32, name: &str) {
        self.emit(Op::LoadFast, Arg::Var(var));
        let index = self.w.pools.name(name);
        self.emit(Op::StoreAttr, Arg::Name(index));
    }

    fn cannot_rebuild(&self, vid: Vid, what: &str) -> PyErr {
        self.plan.unrebuildable.set(Some(vid));
        pyo3::exceptions::PyValueError::new_err(what.to_owned())
    }

    /// `string.templatelib.<class>(*parts)`: a t-string's Interpolation(value, expression,
    /// conversion, format_spec) or Template(*strings_and_interpolations).
    fn templatelib_object(&mut self, class: &str, parts: Vec<Vid>) -> PyResult<()> {
        let class = import(self.w.pools.py, "string.templatelib")?.getattr(class)?;
        self.call_constant(class, |e| {
            for part in &parts {
                e.value(*part)?;
            }
            Ok(parts.len())
        })
    }

    fn side_effect(&mut self, effect: &SideEffect) -> PyResult<()> {
        let py = self.w.pools.py;
        match effect {
            SideEffect::StoreAttr { target, name, value } => {
                self.value(*value)?;
                self.value(*target)?;
                let index = self.w.pools.name(name);
                self.emit(Op::StoreAttr, Arg::Name(index));
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
                let var = self.w.vars.all().len() - self.w.vars.freevars.len() + index;
                self.emit(Op::StoreDeref, Arg::Var(var as u32));
            }
            SideEffect::StoreCell { cell, value } => {
                self.value(*value)?;
                self.source(*cell)?;
                let index = self.w.pools.name("cell_contents");
                self.emit(Op::StoreAttr, Arg::Name(index));
            }
            SideEffect::Replace {
                target,
                contents,
                before,
            } => {
                let (target, contents) = (*target, *contents);
                if let Some(changes) = dict_changes(self.plan.values, contents, before) {
                    // del target[key], for each key gone; target[key] = value, for each
                    // item added or changed
                    for key in changes.deleted {
                        self.source(target)?;
                        self.value(key)?;
                        self.emit(Op::DeleteSubscr, Arg::None);
                    }
                    for (key, value) in changes.stored {
                        self.value(value)?;
                        self.source(target)?;
                        self.value(key)?;
                        self.emit(Op::StoreSubscr, Arg::None);
                    }
                } else if let Val::Dict(_) = &self.plan.values[contents] {
                    // new = contents; target.clear(); target.update(new)
                    self.value(contents)?;
                    self.emit(Op::StoreFast, Arg::Var(self.contents_var));
                    for (method, with_contents) in [("clear", false), ("update", true)] {
                        let unbound = py.get_type::<PyDict>().getattr(method)?;
                        self.call_constant(unbound, |e| {
                            e.source(target)?;
                            if with_contents {
                                e.emit(Op::LoadFast, Arg::Var(e.contents_var));
                            }
                            Ok(1 + usize::from(with_contents))
                        })?;
                        self.emit(Op::PopTop, Arg::None);
                    }
                } else {
                    // target[:] = contents
                    self.value(contents)?;
                    self.source(target)?;
                    self.load_const(PySlice::full(py).into_any());
                    self.emit(Op::StoreSubscr, Arg::None);
                }
            }
        }
        Ok(())
    }
}

/// A new code object for `plan.code`: the graph called, side effects replayed, `returned` returned.
pub fn generate(plan: &Plan<'_, '_>, returned: Vid) -> PyResult<Generated> {
    let first_line: i32 = plan.code.getattr("co_firstlineno")?.extract()?;
    let mut emitter = Emitter::begin(plan, plan.vars.clone(), Location::line(first_line), false)?;
    emitter.value(returned)?;
    emitter.emit(Op::ReturnValue, Arg::None);
    emitter.finish()
}

/// What a bridge runs: the break's step, then `next` (the resume function after it,
/// receiving `next_nulls`'s slots) with `blocks_after` blocks popped first. A loop's
/// bridge runs the original from the break on, and calls `exits`' resume functions
/// where control leaves the loop.
pub struct Bridge<'a, 'py> {
    pub step: &'a Step,
    pub next: Option<&'a ResumeCall<'py>>,
    pub next_nulls: &'a [bool],
    pub blocks_after: usize,
    pub exits: &'a [LoopExit<'py>],
}

/// Where control leaves a loop its bridge runs, the stack's depth there, and the resume
/// function there.
pub struct LoopExit<'py> {
    pub pc: usize,
    pub depth: usize,
    pub resume: ResumeCall<'py>,
}

/// The locals a resume function takes its box and stack slots in. `level` counts the
/// resume functions it is made from, so that one made from another keeps both sets apart.
struct ResumeNames {
    level: usize,
}

impl ResumeNames {
    /// The level after those of the resume functions `old_names` shows (its box or stack
    /// locals; one that has neither left no names to keep apart).
    fn new(old_names: &[String]) -> Self {
        let level_of = |name: &String| -> Option<usize> {
            let rest = name
                .strip_prefix(RESUME_BOX)
                .or_else(|| name.strip_prefix(RESUME_STACK))?;
            rest.split('_').next()?.parse().ok()
        };
        let level = old_names
            .iter()
            .filter_map(level_of)
            .map(|l| l + 1)
            .max()
            .unwrap_or(0);
        Self { level }
    }

    fn resume_box(&self) -> String {
        format!("{RESUME_BOX}{}", self.level)
    }

    fn stack(&self, index: usize) -> String {
        format!("{RESUME_STACK}{}_{index}", self.level)
    }
}

/// A resume function's code: the original code, with a prologue that takes the
/// stack slots and the live variables as arguments, sets the blocks up again, pushes
/// the slots and jumps to `key.pc` (a bridge runs its step there and calls the next
/// resume function instead). Exception table, cells, names and line numbers are the
/// original's.
pub fn resume_code<'py>(
    table: &'static Table,
    code: &Bound<'py, PyAny>,
    vars: &Vars,
    instrs: &[Instruction],
    key: &ResumeKey,
    bridge: Option<Bridge<'_, 'py>>,
) -> PyResult<Bound<'py, PyAny>> {
    let old_all: Vec<String> = vars.all().iter().map(|s| s.to_string()).collect();
    let names = ResumeNames::new(&old_all);
    let mut handed: Vec<String> = (0..key.nulls.len())
        .filter(|i| !key.nulls[*i])
        .map(|i| names.stack(i))
        .collect();
    handed.extend(key.live.iter().map(|v| old_all[*v].clone()));
    let boxed = handed.len();
    // The original's first argument, when handed on, is the resume function's first local
    // too, and the parameter that takes the box: a zero-argument `super()` reads it there.
    let first_handed = key.live.contains(&0) && code.getattr("co_argcount")?.extract::<usize>()? > 0;
    let mut varnames: Vec<String> = if first_handed {
        vec![old_all[0].clone()]
    } else if boxed > 0 {
        vec![names.resume_box()]
    } else {
        Vec::new()
    };
    let argcount = varnames.len();
    for name in &handed {
        if !varnames.contains(name) {
            varnames.push(name.clone());
        }
    }
    for name in &vars.varnames {
        if !varnames.contains(name) && !vars.cellvars.contains(name) {
            varnames.push(name.clone());
        }
    }
    // The frame's cells come in as free variables: shared with the closures made before
    // the break, not copies.
    let mut new_vars = Vars {
        varnames,
        cellvars: Vec::new(),
        freevars: vars
            .cellvars
            .iter()
            .chain(vars.freevars.iter())
            .cloned()
            .collect(),
    };
    // A bridge's own locals, named before any instruction is emitted.
    let handed_on = bridge.as_ref().map(|b| {
        let no_temporary: Vec<bool> = (0..b.next_nulls.len())
            .map(|i| b.next_nulls[i] || key.handled.contains(&i))
            .collect();
        let mut slots = slot_locals(&mut new_vars, "__sot_tmp", &no_temporary);
        for slot in &key.handled {
            let var = new_vars.varnames.iter().position(|n| *n == names.stack(*slot));
            slots[*slot] = Slot::Handled(var.expect("a stack argument") as u32);
        }
        slots
    });
    let condition_var = bridge
        .as_ref()
        .filter(|b| matches!(b.step, Step::BranchOnTruth))
        .map(|_| {
            new_vars.varnames.push("__sot_condition".to_owned());
            (new_vars.varnames.len() - 1) as u32
        });
    let new_all: Vec<String> = new_vars.all().iter().map(|s| s.to_string()).collect();
    let remap = |var: u32| -> u32 {
        let name = &old_all[var as usize];
        new_all
            .iter()
            .position(|n| n == name)
            .expect("every variable survives") as u32
    };
    // A loop's bridge: its exits' stubs are written into the copy of the original.
    let loop_exits: &[LoopExit<'py>] = bridge.as_ref().map_or(&[], |b| b.exits);
    let exit_blocks = bridge.as_ref().map_or(0, |b| b.blocks_after);
    let unhanded: &[usize] = match bridge.as_ref().map(|b| b.step) {
        Some(Step::Loop(span)) => &span.unhanded,
        _ => &[],
    };
    let (bridge, stub_slots) = match bridge {
        Some(b) if matches!(b.step, Step::Loop(_)) => (None, handed_on.clone()),
        other => (other, None),
    };
    // What the bridge hands on: its variables, and at a loop's exit also what was unbound
    // when the bridge started, bound since or marked (none for a step's bridge).
    let push_handed = |w: &mut Writer<'py>| {
        for var in key.live.iter().chain(unhanded) {
            w.emit(Op::LoadFast, Arg::Var(remap(*var as u32)));
        }
        Ok(key.live.len() + unhanded.len())
    };
    let marker = unbound_marker(code.py())?;
    let location = instrs.get(key.pc).map_or(Location::NONE, |i| i.location);
    let mut w = Writer::new(table, code, new_vars, location)?;
    for instruction in &mut w.out {
        instruction.location = location;
    }
    if boxed > 0 {
        // Unpack the box, then empty it: the caller's stack holds the box until this
        // function returns, but not its values, so each dies when this frame drops it.
        // (Where the first argument takes the box, unpacking stores over it: the stack
        // keeps the box for emptying.)
        w.emit(Op::LoadFast, Arg::Var(0));
        if first_handed {
            w.emit(Op::Copy, Arg::Int(1));
        }
        w.emit(Op::UnpackSequence, Arg::Int(boxed as u32));
        for name in &handed {
            let var = new_all.iter().position(|n| n == name).expect("a handed variable");
            w.emit(Op::StoreFast, Arg::Var(var as u32));
        }
        if !first_handed {
            w.emit(Op::LoadFast, Arg::Var(0));
        }
        let everything = PySlice::full(code.py()).into_any();
        w.load_const(everything);
        w.emit(Op::DeleteSubscr, Arg::None);
        if !first_handed {
            w.unbind(0);
        }
    }
    for original in &key.marked {
        let var = remap(*original as u32);
        if stub_slots.is_some() {
            // A loop's bridge: marked where it was not handed the variable.
            if !key.live.contains(original) {
                w.load_const(marker.clone());
                w.emit(Op::StoreFast, Arg::Var(var));
            }
        } else {
            // `if var is marker: del var`
            w.emit(Op::LoadFast, Arg::Var(var));
            w.load_const(marker.clone());
            w.emit(Op::IsOp, Arg::Int(0));
            let skip = w.out.len() + 2;
            w.emit(Op::PopJumpIfFalse, Arg::Target(skip));
            w.emit(Op::DeleteFast, Arg::Var(var));
        }
    }
    // Instructions whose targets are the original's: moved past what comes before the
    // copy of the original once its start is known.
    let mut into_copy: Vec<usize> = Vec::new();
    let set_up_blocks = |w: &mut Writer<'py>, into_copy: &mut Vec<usize>, level: usize| {
        for (handler, _) in key.blocks.iter().filter(|(_, l)| *l == level) {
            into_copy.push(w.out.len());
            w.emit(Op::SetupFinally, Arg::Target(*handler));
        }
    };
    // A bridged call with keyword names loads them as the original does, just before it.
    let names_constant = match (key.bridge, instrs.get(key.pc)) {
        (true, Some(call)) if matches!(call.arg, Arg::Call { kw_names: true, .. }) => {
            key.pc.checked_sub(1).map(|before| instrs[before].clone())
        }
        _ => None,
    };
    for (stack_index, null) in key.nulls.iter().enumerate() {
        set_up_blocks(&mut w, &mut into_copy, stack_index);
        if stack_index + 1 == key.nulls.len() && names_constant.is_some() {
            // Loaded with the step, under its handler.
        } else if *null {
            w.push_null()?;
        } else {
            let var = new_all
                .iter()
                .position(|n| *n == names.stack(stack_index))
                .expect("a stack argument") as u32;
            w.emit(Op::LoadFast, Arg::Var(var));
            let handled = key.handled.contains(&stack_index);
            if handled {
                // The exception being handled is current again; the slot saves the one
                // current now, as `PUSH_EXC_INFO` did in the original.
                w.emit(Op::PushExcInfo, Arg::None);
                w.emit(Op::PopTop, Arg::None);
            }
            // The stack holds it now, as the original's did, and drops it when it does (a
            // bridge hands the handled exception on after its step).
            if !(handled && bridge.is_some()) {
                w.unbind(var);
            }
        }
    }
    set_up_blocks(&mut w, &mut into_copy, key.nulls.len());
    match (bridge, handed_on) {
        (Some(bridge), Some(handed_on)) => {
            let instr = &instrs[key.pc];
            if let Some(var) = condition_var {
                w.emit(Op::StoreFast, Arg::Var(var));
            }
            let covered_from = w.out.len();
            w.out.extend(names_constant);
            let step_instr = Instruction {
                arg: match instr.arg {
                    Arg::Var(v) => Arg::Var(remap(v)),
                    other => other,
                },
                ..instr.clone()
            };
            emit_step(&mut w, &step_instr, bridge.step, |w| {
                w.emit(
                    Op::LoadFast,
                    Arg::Var(condition_var.expect("a branch's condition")),
                );
                Ok(())
            })?;
            for index in covered_from..w.out.len() {
                w.out[index].handler = instr.handler;
                into_copy.push(index);
            }
            for _ in 0..bridge.blocks_after {
                w.emit(Op::PopBlock, Arg::None);
            }
            w.return_resumed(&handed_on, true, push_handed, bridge.next)?;
        }
        _ => {
            // A call with keyword names (a loop's bridge) starts where they are loaded.
            let entry = key.pc - usize::from(names_constant.is_some());
            into_copy.push(w.out.len());
            w.emit(Op::Jump, Arg::Target(entry));
        }
    }
    // The copy of the original, each loop exit's stub just before the instruction there.
    let mut position = vec![0; instrs.len()];
    let mut stub_at = vec![None; instrs.len()];
    let mut in_prologue = true;
    for (index, instruction) in instrs.iter().enumerate() {
        // What is written besides the copy (a stub, a marker stored) takes its line.
        w.location = instruction.location;
        if let (Some(exit), Some(slots)) = (loop_exits.iter().find(|e| e.pc == index), &stub_slots) {
            stub_at[index] = Some(w.out.len());
            for _ in 0..exit_blocks {
                w.emit(Op::PopBlock, Arg::None);
            }
            w.return_resumed(&slots[..exit.depth], true, push_handed, Some(&exit.resume))?;
        }
        position[index] = w.out.len();
        let mut copy = instruction.clone();
        // The original's own prologue: done by the new one.
        in_prologue &= matches!(copy.op, Op::CopyFreeVars | Op::MakeCell | Op::Resume | Op::Nop);
        if in_prologue {
            copy = Instruction {
                op: Op::Nop,
                arg: Arg::None,
                location: copy.location,
                handler: copy.handler,
            };
        }
        if let Arg::Var(v) = &mut copy.arg {
            *v = remap(*v);
        }
        // A loop's bridge marks again what a `del` unbinds, for its exits to hand on.
        let marked_again = match (instruction.arg, copy.arg) {
            (Arg::Var(original), Arg::Var(var))
                if copy.op == Op::DeleteFast
                    && stub_slots.is_some()
                    && key.marked.contains(&(original as usize)) =>
            {
                Some(var)
            }
            _ => None,
        };
        w.out.push(copy);
        into_copy.push(position[index]);
        if let Some(var) = marked_again {
            w.load_const(marker.clone());
            w.emit(Op::StoreFast, Arg::Var(var));
        }
    }
    // Jumps to an exit land on its stub; handlers and every other jump on the copy.
    for index in into_copy {
        let instruction = &mut w.out[index];
        if let Arg::Target(t) = &mut instruction.arg {
            *t = stub_at[*t].unwrap_or(position[*t]);
        }
        if let Some(handler) = &mut instruction.handler {
            handler.target = position[handler.target];
        }
    }
    w.finish(code, Some(argcount))
}

/// Runs a break's `step` on the stack as its instruction finds it (`condition` pushes
/// a branch's condition).
fn emit_step<'py, E: Emit<'py>>(
    e: &mut E,
    instr: &Instruction,
    step: &Step,
    condition: impl FnOnce(&mut E) -> PyResult<()>,
) -> PyResult<()> {
    match step {
        Step::BranchOnTruth => {
            let truth = builtin(e.writer().pools.py, "bool")?;
            e.call_constant(truth, |e| {
                condition(e)?;
                Ok(1)
            })
        }
        Step::RunHere { .. } => {
            e.writer().out.push(Instruction {
                handler: None,
                ..instr.clone()
            });
            Ok(())
        }
        Step::BoundAttribute { null_first } => {
            e.writer().out.push(Instruction {
                op: Op::LoadAttr,
                handler: None,
                ..instr.clone()
            });
            e.push_null()?;
            if *null_first {
                e.emit(Op::Swap, Arg::Int(2));
            }
            Ok(())
        }
        Step::Loop(_) => Err(pyo3::exceptions::PyRuntimeError::new_err(
            "a loop runs in its bridge, not as a step",
        )),
    }
}

/// Lowers and encodes `out`, as the changes `code.replace` takes.
fn encode_changes<'py>(
    table: &'static Table,
    vars: &Vars,
    out: &[Instruction],
    pools: &mut Pools<'py>,
    first_line: i32,
) -> PyResult<Bound<'py, PyDict>> {
    let py = pools.py;
    let error = |e: framehook_bytecode::Error| {
        pyo3::exceptions::PyValueError::new_err(format!("SOT code generation: {e}"))
    };
    let lowered = canonical::lower(table, vars, out, pools).map_err(error)?;
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
    changes.set_item("co_cellvars", PyTuple::new(py, &vars.cellvars)?)?;
    changes.set_item("co_freevars", PyTuple::new(py, &vars.freevars)?)?;
    changes.set_item("co_nlocals", vars.varnames.len())?;
    Ok(changes)
}

/// What a break runs before the resume function takes over.
pub enum Step {
    /// The instruction itself, then resume after it; it takes `consumed` slots and
    /// leaves `produced`.
    RunHere { consumed: usize, produced: usize },
    /// `bool()` of the top of the stack (a branch on a tensor's value), then resume at
    /// the branch with that bool.
    BranchOnTruth,
    /// A `LOAD_METHOD` run as `LOAD_ATTR` beside a NULL slot (below it when `null_first`),
    /// as the VM reads it: whether CPython's form would push a NULL is known only when it
    /// runs, and the resume function must know its NULL slots.
    BoundAttribute { null_first: bool },
    /// The loop around the break, run in a bridge until control leaves it.
    Loop(LoopSpan),
}

/// A loop a bridge runs: where control leaves it (original instruction index, and the
/// stack's depth there), the stack slots below its iterator, which every exit keeps, and
/// the variables each exit hands on besides those the bridge got (unbound there, marked).
pub struct LoopSpan {
    pub exits: Vec<(usize, usize)>,
    pub kept: usize,
    pub unhanded: Vec<usize>,
    /// The variables that may hold the unbound marker (see `ResumeKey::marked`).
    pub marked: Vec<usize>,
}

impl Step {
    /// The stack slots below the break instruction it keeps.
    fn kept(&self, depth: usize) -> usize {
        match self {
            Step::RunHere { consumed, .. } => depth - consumed,
            Step::BranchOnTruth | Step::BoundAttribute { .. } => depth - 1,
            Step::Loop(span) => span.kept,
        }
    }

    /// Per stack slot the resume function after the step receives: whether it is NULL.
    pub fn slots_after(&self, values: &[Val<'_>], stack: &[Vid]) -> Vec<bool> {
        let after = match self {
            Step::RunHere { consumed, produced } => stack.len() - consumed + produced,
            Step::BranchOnTruth => stack.len(),
            Step::BoundAttribute { .. } => stack.len() + 1,
            Step::Loop(span) => span.kept,
        };
        let kept = self.kept(stack.len());
        let made_null = match self {
            Step::BoundAttribute { null_first } => Some(kept + usize::from(!null_first)),
            _ => None,
        };
        (0..after)
            .map(|i| (i < kept && matches!(values[stack[i]], Val::Null)) || Some(i) == made_null)
            .collect()
    }

    /// Where the resume function after the step starts, for a break at `pc` (a loop's
    /// bridge resumes at its exits instead).
    pub fn resume_pc(&self, pc: usize) -> usize {
        match self {
            Step::RunHere { .. } | Step::BoundAttribute { .. } => pc + 1,
            Step::BranchOnTruth | Step::Loop(_) => pc,
        }
    }

    /// Whether the break's instruction (or what stands for it) runs in the generated code.
    fn runs_here(&self) -> bool {
        !matches!(self, Step::BranchOnTruth | Step::Loop(_))
    }
}

/// How a break continues past its instruction.
pub struct Continuation {
    pub step: Step,
    /// The step must run under handlers the generated code cannot give it (a `with`'s
    /// or `finally`'s, which save the instruction offset; 3.9/3.10's blocks): a bridge
    /// made from the original code runs it there, then calls the resume function.
    pub bridged: bool,
}

impl Continuation {
    /// Per stack slot the function the generated code calls receives: whether it is NULL.
    pub fn slots_after(&self, values: &[Val<'_>], stack: &[Vid]) -> Vec<bool> {
        if self.bridged {
            return stack.iter().map(|v| matches!(values[*v], Val::Null)).collect();
        }
        self.step.slots_after(values, stack)
    }
}

/// How generated code calls a resume function.
pub struct ResumeCall<'py> {
    /// The function (no free variables), or its code (made into a function with the
    /// frame's closure at each call).
    pub target: Bound<'py, PyAny>,
    pub has_closure: bool,
}

/// Where an exception the break's own instructions raise goes: the original handler's
/// stack depth, and the resume function that starts at the handler.
pub struct LandingPad<'a, 'py> {
    pub depth: usize,
    pub resume: &'a ResumeCall<'py>,
}

/// Per stack slot: a local for it, or none for a NULL slot.
fn slot_locals(vars: &mut Vars, prefix: &str, nulls: &[bool]) -> Vec<Slot> {
    nulls
        .iter()
        .enumerate()
        .map(|(i, null)| {
            if *null {
                return Slot::Null;
            }
            vars.varnames.push(format!("{prefix}{i}"));
            Slot::Var((vars.varnames.len() - 1) as u32)
        })
        .collect()
}

/// The code for a frame that breaks at `instr`: the graph so far, the side effects,
/// then the break's step and a call of `resume` with the stack and the live variables
/// (a bridged step: `resume` is the bridge, which runs it, and makes the `handled`
/// exceptions current again first). Under a handler (`pad`), the
/// step is covered by an exception-table entry whose landing pad resumes at the handler.
#[allow(clippy::too_many_arguments)]
pub fn generate_break<'py>(
    plan: &Plan<'_, 'py>,
    instr: &Instruction,
    stack: &[Vid],
    live: &[(usize, Vid)],
    unbound: &[usize],
    continuation: &Continuation,
    handled: &[(usize, Vid)],
    resume: Option<&ResumeCall<'py>>,
    pad: Option<LandingPad<'_, 'py>>,
) -> PyResult<Generated> {
    let mut vars = plan.vars.clone();
    // Every local is named before any instruction is emitted: a new name shifts the
    // cells' and free variables' indices.
    let is_null = |v: Vid| matches!(plan.values[v], Val::Null);
    let slot_vars = slot_locals(
        &mut vars,
        "__sot_tmp",
        &continuation.slots_after(plan.values, stack),
    );
    let pad_vars = pad.as_ref().map(|pad| {
        let mut nulls: Vec<bool> = stack[..pad.depth].iter().map(|v| is_null(*v)).collect();
        nulls.push(false);
        slot_locals(&mut vars, "__sot_pad", &nulls)
    });
    let mut emitter = Emitter::begin(plan, vars, instr.location, true)?;
    // The stack as the break instruction finds it; NULL slots only where the
    // instruction runs here (a resume function pushes its own).
    let run_here = !continuation.bridged && continuation.step.runs_here();
    let pushed = match continuation.step {
        Step::BranchOnTruth if !continuation.bridged => &stack[..stack.len() - 1],
        _ => stack,
    };
    for (slot, v) in pushed.iter().enumerate() {
        if is_null(*v) {
            if run_here {
                emitter.push_null()?;
            }
        } else {
            // The bridge makes a handled exception current again from its slot.
            let exception = handled.iter().find(|(s, _)| *s == slot).map(|(_, e)| *e);
            emitter.value(exception.unwrap_or(*v))?;
        }
    }
    // A call or another instruction run here (a call may collect garbage, a finalizer or a
    // weak reference's callback run) finds the frame as the original's would be.
    // (Not a call with keyword names: they are loaded just before it, with the step.)
    let keyword_call = matches!(instr.arg, Arg::Call { kw_names: true, .. });
    let settled = run_here && matches!(continuation.step, Step::RunHere { .. }) && !keyword_call;
    if settled {
        emitter.settle_variables(live, unbound)?;
    }
    // The step's exception-table entry also covers the instruction before it (an argument
    // or a variable settled, part of the original's try body, as in CPython's own tables):
    // 3.13 looks up the handler of a frame that an inlined call left with an error (a
    // class's `__init__` run by CALL_ALLOC_AND_ENTER_INIT) one code unit before the call.
    let covered_from = match emitter.w.out.last() {
        Some(before) if before.op != Op::Resume => emitter.w.out.len() - 1,
        _ => emitter.w.out.len(),
    };
    if !continuation.bridged {
        emit_step(&mut emitter, instr, &continuation.step, |e| {
            e.value(*stack.last().expect("a branch has its condition"))
        })?;
    }
    let covered_to = emitter.w.out.len();
    let push_live = |e: &mut Emitter<'_, 'py>| {
        for (var, value) in live {
            if settled {
                let var = e.var_of(*var);
                e.emit(Op::LoadFast, Arg::Var(var));
            } else {
                e.value(*value)?;
            }
        }
        Ok(live.len())
    };
    emitter.return_resumed(&slot_vars, run_here, push_live, resume)?;
    if let (Some(pad), Some(pad_vars)) = (pad, pad_vars) {
        let target = emitter.w.out.len();
        let handler = Handler {
            target,
            depth: pad.depth as u32,
            lasti: false,
        };
        for instruction in &mut emitter.w.out[covered_from..covered_to] {
            instruction.handler = Some(handler);
        }
        emitter.return_resumed(&pad_vars, true, push_live, Some(pad.resume))?;
    }
    emitter.finish()
}
