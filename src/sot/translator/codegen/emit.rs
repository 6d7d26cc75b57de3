//! Writing instructions, constants and names of a code object: what generated code and
//! resume functions share.

use rustc_hash::FxHashMap;

use framehook_bytecode::canonical::{self, Arg, CodeKind, Const, ConstPool, Handler, Instruction, Op, Vars};
use framehook_bytecode::raw::{self, Code};
use framehook_bytecode::table::{CallLayout, ExceptionModel, LineTableFormat};
use framehook_bytecode::{Location, Table};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyString, PyTuple};

use crate::hookapi::pyobject::{import, replace_code};
use crate::sot::translator::guard::check::is_value_type;
use crate::sot::translator::model::code::null_substitute;
use crate::sot::translator::model::known::held;
use crate::sot::translator::pyutil::{builtin, interned, loaded};

/// The name of the generated code's local holding the graph's outputs.
pub const OUTPUTS_LOCAL: &str = "__sot_graph_outputs";

/// Constants and names of the generated code: the original's, then what it adds.
pub struct Pools<'py> {
    pub py: Python<'py>,
    pub consts: Vec<Bound<'py, PyAny>>,
    /// The original code's `co_names`, the strings it holds (interned), then the names
    /// added: the original's are not made into Rust strings and interned again for every
    /// code made from it.
    original_names: Bound<'py, PyTuple>,
    added_names: Vec<String>,
    /// Each constant's index by its address (generated code may hold thousands: a long
    /// list's items).
    const_index: FxHashMap<usize, u32>,
    /// Each unhashable value's box (`load_const`) by the value's address, the values kept
    /// alive while the addresses are keys.
    held_index: FxHashMap<usize, u32>,
    holding: Vec<Bound<'py, PyAny>>,
}

impl<'py> Pools<'py> {
    fn new(py: Python<'py>, consts: Vec<Bound<'py, PyAny>>, original_names: Bound<'py, PyTuple>) -> Self {
        let mut const_index = FxHashMap::with_capacity_and_hasher(consts.len(), Default::default());
        for (index, constant) in consts.iter().enumerate() {
            const_index
                .entry(constant.as_ptr() as usize)
                .or_insert(index as u32);
        }
        Pools {
            py,
            consts,
            original_names,
            added_names: Vec::new(),
            const_index,
            held_index: FxHashMap::default(),
            holding: Vec::new(),
        }
    }

    pub fn constant(&mut self, value: Bound<'py, PyAny>) -> u32 {
        let next = self.consts.len() as u32;
        let index = *self.const_index.entry(value.as_ptr() as usize).or_insert(next);
        if index == next {
            self.consts.push(value);
        }
        index
    }

    /// The index of `held`, the box of the unhashable `value`, one per value.
    pub fn held(&mut self, value: &Bound<'py, PyAny>, held: Bound<'py, PyAny>) -> u32 {
        let next = self.consts.len() as u32;
        let index = *self.held_index.entry(value.as_ptr() as usize).or_insert(next);
        if index == next {
            self.consts.push(held);
            self.holding.push(value.clone());
        }
        index
    }

    pub fn name(&mut self, name: &str) -> u32 {
        let original = self
            .original_names
            .iter()
            .position(|n| n.cast::<PyString>().ok().and_then(|n| n.to_str().ok()) == Some(name));
        if let Some(found) = original {
            return found as u32;
        }
        let added = match self.added_names.iter().position(|n| n == name) {
            Some(found) => found,
            None => {
                self.added_names.push(name.to_owned());
                self.added_names.len() - 1
            }
        };
        (self.original_names.len() + added) as u32
    }

    /// `co_names` of the code made: the original's tuple where nothing was added.
    fn names_tuple(&self) -> PyResult<Bound<'py, PyTuple>> {
        if self.added_names.is_empty() {
            return Ok(self.original_names.clone());
        }
        let added = self
            .added_names
            .iter()
            .map(|name| interned(self.py, name).into_any());
        let names: Vec<Bound<'py, PyAny>> = self.original_names.iter().chain(added).collect();
        PyTuple::new(self.py, names)
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
pub enum Slot {
    /// NULL: the resume function pushes its own.
    Null,
    /// Stored in this local, then passed.
    Var(u32),
    /// Where `PUSH_EXC_INFO` saved the previous exception: made current again
    /// (`POP_EXCEPT`) and the exception in this local passed instead, for the resume
    /// function to make current in turn.
    Handled(u32),
    /// Dead (a loop's own slot at an exit, where an iterator is two slots): popped as it
    /// is, whatever it holds; the resume function has a NULL in its place.
    Dead,
}

/// Instructions being written for a code object, with its constants, names and variables.
pub struct Writer<'py> {
    pub table: &'static Table,
    pub pools: Pools<'py>,
    pub vars: Vars,
    pub out: Vec<Instruction>,
    pub location: Location,
}

/// Writing instructions: what generated code and resume functions share.
pub trait Emit<'py>: Sized {
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

    /// Pushes `value`. One that cannot be hashed (a list or dict held from the frame, a slice
    /// before 3.12) is held in a box read at run time: a code object hashes its constants,
    /// and code that hashes frames' code objects (jinja2's `internal_code` set) must get
    /// an answer, as from the original's.
    fn load_const(&mut self, value: Bound<'py, PyAny>) {
        if !is_hashable_constant(&value) {
            let held = import(value.py(), "framehook.sot._translate")
                .and_then(|module| module.getattr(pyo3::intern!(module.py(), "_Held")))
                .and_then(|held| held.call1(((value.clone(),),)));
            if let Ok(held) = held {
                let index = self.writer().pools.held(&value, held);
                self.emit(Op::LoadConst, Arg::Const(Const::Index(index)));
                let zero = self
                    .writer()
                    .pools
                    .constant(0u32.into_pyobject(value.py()).expect("ints convert").into_any());
                self.emit(Op::LoadConst, Arg::Const(Const::Index(zero)));
                self.emit(
                    Op::BinaryOp,
                    Arg::BinaryOp {
                        op: canonical::BinOp::Subscr,
                        inplace: false,
                    },
                );
                return;
            }
        }
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
                Slot::Dead => self.emit(Op::PopTop, Arg::None),
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
                Slot::Null | Slot::Dead => None,
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
                let function_type = held(py)?.function_type.bind(py).clone();
                let globals = builtin(py, "globals")?;
                e.call_constant(function_type, |e| {
                    let name = target.getattr(pyo3::intern!(target.py(), "co_name"))?;
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
        let drop_entry = loaded(w.pools.py, "framehook._native")?
            .getattr(pyo3::intern!(w.pools.py, "_sot_drop_caller_entry"))?;
        match block {
            None => {
                w.out[call].handler = Some(Handler::new(pad, 0, false));
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
    pub fn closure_op(&self) -> Op {
        if self.table.has("LOAD_CLOSURE") {
            Op::LoadClosure
        } else {
            Op::LoadFast
        }
    }

    /// Starts a code object of `kind` made from `code` (whose constants and names it
    /// extends) with `vars`: the prologue they need.
    pub fn new(
        table: &'static Table,
        code: &Bound<'py, PyAny>,
        vars: Vars,
        location: Location,
        kind: CodeKind,
    ) -> PyResult<Self> {
        let pools = Pools::new(
            code.py(),
            code.getattr(pyo3::intern!(code.py(), "co_consts"))?
                .try_iter()?
                .collect::<PyResult<_>>()?,
            code.getattr(pyo3::intern!(code.py(), "co_names"))?
                .cast_into::<PyTuple>()?,
        );
        Ok(Writer {
            table,
            pools,
            out: canonical::prologue(table, &vars, kind),
            vars,
            location,
        })
    }

    /// `code` with these instructions, names and variables (and `arguments` positional
    /// arguments, where they change).
    pub fn finish(
        mut self,
        code: &Bound<'py, PyAny>,
        arguments: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let changes = self.changes(code, arguments)?;
        replace_code(code, &changes)
    }

    /// What `code.replace` takes to make the code `finish` makes.
    pub fn changes(
        &mut self,
        code: &Bound<'py, PyAny>,
        arguments: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let first_line: i32 = code
            .getattr(pyo3::intern!(code.py(), "co_firstlineno"))?
            .extract()?;
        let changes = encode_changes(self.table, &self.vars, &self.out, &mut self.pools, first_line)?;
        if let Some(count) = arguments {
            let py = code.py();
            let flags: u32 = code.getattr(pyo3::intern!(py, "co_flags"))?.extract()?;
            changes.set_item(pyo3::intern!(py, "co_argcount"), count)?;
            changes.set_item(pyo3::intern!(py, "co_posonlyargcount"), 0)?;
            changes.set_item(pyo3::intern!(py, "co_kwonlyargcount"), 0)?;
            changes.set_item(pyo3::intern!(py, "co_flags"), flags & !(0x04 | 0x08))?;
        }
        Ok(changes)
    }
}

impl<'py> Emit<'py> for Writer<'py> {
    fn writer(&mut self) -> &mut Writer<'py> {
        self
    }
}

/// Per stack slot: a local for it, or none for a NULL slot.
pub fn slot_locals(vars: &mut Vars, prefix: &str, nulls: &[bool]) -> Vec<Slot> {
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

/// Lowers and encodes `out`, as the changes `code.replace` takes.
pub fn encode_changes<'py>(
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
    let assembled = raw::encode(table, &Code::new(lowered), first_line).map_err(error)?;
    let changes = PyDict::new(py);
    changes.set_item(pyo3::intern!(py, "co_code"), PyBytes::new(py, &assembled.code))?;
    let line_field = match table.line_table {
        LineTableFormat::Lnotab => pyo3::intern!(py, "co_lnotab"),
        _ => pyo3::intern!(py, "co_linetable"),
    };
    changes.set_item(line_field, PyBytes::new(py, &assembled.line_table))?;
    if table.exceptions == ExceptionModel::Table {
        changes.set_item(
            pyo3::intern!(py, "co_exceptiontable"),
            PyBytes::new(py, &assembled.exception_table),
        )?;
    }
    changes.set_item(pyo3::intern!(py, "co_stacksize"), assembled.stack_size)?;
    changes.set_item(pyo3::intern!(py, "co_consts"), PyTuple::new(py, &pools.consts)?)?;
    // Interned as the code object keeps them (it would intern strings made anew).
    let names = |names: &[String]| PyTuple::new(py, names.iter().map(|name| interned(py, name)));
    changes.set_item(pyo3::intern!(py, "co_names"), pools.names_tuple()?)?;
    changes.set_item(pyo3::intern!(py, "co_varnames"), names(&vars.varnames)?)?;
    changes.set_item(pyo3::intern!(py, "co_cellvars"), names(&vars.cellvars)?)?;
    changes.set_item(pyo3::intern!(py, "co_freevars"), names(&vars.freevars)?)?;
    changes.set_item(pyo3::intern!(py, "co_nlocals"), vars.varnames.len())?;
    Ok(changes)
}

/// How generated code calls a resume function.
pub struct ResumeCall<'py> {
    /// The function (no free variables), or its code (made into a function with the
    /// frame's closure at each call).
    pub target: Bound<'py, PyAny>,
    pub has_closure: bool,
}

/// Whether a code object holding `value` among its constants can be hashed (its hash is
/// its constants'): a type with a hash (`__hash__` not None), a tuple of such.
fn is_hashable_constant(value: &Bound<'_, PyAny>) -> bool {
    if let Ok(items) = value.cast_exact::<PyTuple>() {
        return items.iter().all(|item| is_hashable_constant(&item));
    }
    // Most constants: the builtin immutable types, hashable by definition (asking each
    // type for `__hash__` was a tenth of making a long function's resume code).
    if is_value_type(value) {
        return true;
    }
    value
        .get_type()
        .getattr(pyo3::intern!(value.py(), "__hash__"))
        .is_ok_and(|hash| !hash.is_none())
}
