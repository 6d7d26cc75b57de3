//! What the translator knows of a code object (decoded once), its flags and limits, and
//! the names and markers generated code shares with the VM.

use framehook_bytecode::canonical::{Instruction, Vars};
use framehook_bytecode::liveness::Liveness;
use framehook_bytecode::Table;
use pyo3::prelude::*;

use crate::hookapi::pyobject::import;
use crate::sot::translator::pyutil::builtin;

pub const CO_VARARGS: u32 = 0x04;

pub const CO_VARKEYWORDS: u32 = 0x08;

pub const CO_GENERATOR: u32 = 0x20;

pub const CO_COROUTINE_LIKE: u32 = 0x80 | 0x100 | 0x200;

/// A code object's parameters, in `co_varnames` order: positional (positional-only
/// included), keyword-only, then `*args` and `**kwargs` where it has them.
pub struct Parameters {
    pub positional: usize,
    pub keyword_only: usize,
    pub varargs: bool,
    pub varkeywords: bool,
}

impl Parameters {
    pub fn new(argcount: usize, kwonly: usize, flags: u32) -> Self {
        Parameters {
            positional: argcount,
            keyword_only: kwonly,
            varargs: flags & CO_VARARGS != 0,
            varkeywords: flags & CO_VARKEYWORDS != 0,
        }
    }

    pub fn of(code: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Parameters::new(
            code.getattr(pyo3::intern!(code.py(), "co_argcount"))?.extract()?,
            code.getattr(pyo3::intern!(code.py(), "co_kwonlyargcount"))?
                .extract()?,
            code.getattr(pyo3::intern!(code.py(), "co_flags"))?.extract()?,
        ))
    }

    /// How many there are, `*args` and `**kwargs` included.
    pub fn count(&self) -> usize {
        self.positional + self.keyword_only + usize::from(self.varargs) + usize::from(self.varkeywords)
    }
}

/// How deep values nest in one another where the translator recurses over them.
pub const MAX_NESTING: usize = 200;

/// How many items of a container the translator models one by one: past it, translating
/// costs more than running the code that makes or reads them (a list of 100,000 numbers
/// made again from as many constants).
pub const MAX_MODELED_ITEMS: usize = 4096;

/// A code's loops (`loops::loops`) and, per instruction, whether it is in a loop's body
/// or a `while` loop's first test (`loops::first_test`). Found on first need: most inlined
/// frames never ask (a break or a call that may break in a loop does, as does an
/// assumption).
pub struct LoopMembership {
    instrs: std::sync::Arc<Vec<Instruction>>,
    found: std::sync::OnceLock<FoundLoops>,
}

struct FoundLoops {
    loops: Vec<(usize, framehook_bytecode::loops::Loop)>,
    in_loop: Vec<bool>,
}

impl LoopMembership {
    pub fn new(instrs: std::sync::Arc<Vec<Instruction>>) -> Self {
        LoopMembership {
            instrs,
            found: std::sync::OnceLock::new(),
        }
    }

    /// Whether instruction `pc` lies in a loop; None past the code's end.
    pub fn get(&self, pc: usize) -> Option<bool> {
        self.found().in_loop.get(pc).copied()
    }

    /// The code's loops, each with the back edge that closes it.
    pub fn loops(&self) -> &[(usize, framehook_bytecode::loops::Loop)] {
        &self.found().loops
    }

    fn found(&self) -> &FoundLoops {
        self.found.get_or_init(|| Self::find(&self.instrs))
    }

    fn find(instrs: &[Instruction]) -> FoundLoops {
        use framehook_bytecode::loops;
        let loops = loops::loops(instrs);
        let mut in_loop = vec![false; instrs.len()];
        for (jump, a_loop) in &loops {
            for (flag, in_body) in in_loop.iter_mut().zip(&a_loop.body) {
                *flag |= in_body;
            }
            in_loop[loops::first_test(instrs, *jump, a_loop)]
                .iter_mut()
                .for_each(|f| *f = true);
        }
        FoundLoops { loops, in_loop }
    }
}

/// What the VM needs to know about a code object, decoded once.
pub struct CodeInfo {
    pub instrs: std::sync::Arc<Vec<Instruction>>,
    /// Per instruction: whether it lies inside a loop.
    pub in_loop: std::sync::Arc<LoopMembership>,
    /// Shared with each VM frame of the code (a frame per inlined call).
    pub vars: std::sync::Arc<Vars>,
    pub flags: u32,
    pub argcount: usize,
    pub posonly: usize,
    pub kwonly: usize,
    pub filename: String,
    /// The code names a function that reads its callers' frames (`CALLER_FRAME_READERS`):
    /// a resume function would stand between them.
    pub reads_callers: bool,
    /// Which variables the rest of the code may read (see `CodeInfo::liveness`): made on
    /// first need, once per code (its translations and their restarts ask again).
    liveness: std::sync::OnceLock<Option<Liveness>>,
    /// The stack's depth where each instruction starts, where a jump may land (see
    /// `CodeInfo::depths`): made on first need, once per code.
    depths: std::sync::OnceLock<Option<Vec<Option<u32>>>>,
}

impl CodeInfo {
    pub fn read(table: &'static Table, code: &Bound<'_, PyAny>) -> PyResult<CodeInfo> {
        let fields = crate::bytecode::CodeFields::read(table, code)?;
        let raw = fields.decode(table)?;
        let instrs = framehook_bytecode::canonical::raise(table, &fields.vars, &raw.instrs)
            .map_err(|e| fields.error("decode", e))?;
        let instrs = std::sync::Arc::new(instrs);
        Ok(CodeInfo {
            in_loop: std::sync::Arc::new(LoopMembership::new(std::sync::Arc::clone(&instrs))),
            instrs,
            vars: std::sync::Arc::new(fields.vars),
            flags: code.getattr(pyo3::intern!(code.py(), "co_flags"))?.extract()?,
            argcount: code.getattr(pyo3::intern!(code.py(), "co_argcount"))?.extract()?,
            posonly: code
                .getattr(pyo3::intern!(code.py(), "co_posonlyargcount"))?
                .extract()?,
            kwonly: code
                .getattr(pyo3::intern!(code.py(), "co_kwonlyargcount"))?
                .extract()?,
            filename: code.getattr(pyo3::intern!(code.py(), "co_filename"))?.extract()?,
            reads_callers: names_any(code, |name| CALLER_FRAME_READERS.contains(&name))?,
            liveness: std::sync::OnceLock::new(),
            depths: std::sync::OnceLock::new(),
        })
    }

    /// Which variables the rest of `code` (this information's) may read, from each
    /// instruction on; None where the code names a function that reads its frame's
    /// variables (`locals()`, `super()`...): then a resume function gets every bound one.
    pub fn liveness(&self, code: &Bound<'_, PyAny>) -> PyResult<Option<&Liveness>> {
        if let Some(liveness) = self.liveness.get() {
            return Ok(liveness.as_ref());
        }
        let reads_frame = names_any(code, |n| {
            n == "super" || FRAME_READERS.iter().any(|(_, reader)| *reader == n)
        })?;
        let locals = self.vars.first_free();
        let computed = (!reads_frame).then(|| Liveness::new(&self.instrs, locals));
        Ok(self.liveness.get_or_init(|| computed).as_ref())
    }

    /// The stack's depth where each instruction of `code` (this information's) starts,
    /// where a jump may land; None where the code cannot be read so.
    pub fn depths(&self, table: &'static Table, code: &Bound<'_, PyAny>) -> Option<&[Option<u32>]> {
        self.depths
            .get_or_init(|| {
                let fields = crate::bytecode::CodeFields::read(table, code).ok()?;
                let raw = fields.decode(table).ok()?;
                framehook_bytecode::canonical::entry_depths(table, &fields.vars, &raw).ok()
            })
            .as_deref()
    }

    /// Arguments, `*args` and `**kwargs` included.
    pub fn total_arguments(&self) -> usize {
        Parameters::new(self.argcount, self.kwonly, self.flags).count()
    }
}

/// Whether one of `code`'s `co_names` is one `wanted` picks (read in place, not copied).
fn names_any(code: &Bound<'_, PyAny>, wanted: impl Fn(&str) -> bool) -> PyResult<bool> {
    let names = code.getattr(pyo3::intern!(code.py(), "co_names"))?;
    for name in names.cast::<pyo3::types::PyTuple>()?.iter() {
        if wanted(name.cast::<pyo3::types::PyString>()?.to_str()?) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The functions that read the variables of the frame calling them (with no arguments,
/// for `locals`, `vars` and `dir`; without a namespace, for `eval` and `exec`).
pub const FRAME_READERS: [(&str, &str); 8] = [
    ("builtins", "locals"),
    ("builtins", "vars"),
    ("builtins", "dir"),
    ("builtins", "eval"),
    ("builtins", "exec"),
    ("sys", "_getframe"),
    ("inspect", "currentframe"),
    ("inspect", "stack"),
];

/// Names of the functions that read the frames above the one calling them
/// (`sys._getframe(1)`): a frame whose code names one runs eagerly where it would break,
/// since a resume function would be one more frame between it and its callers.
pub const CALLER_FRAME_READERS: [&str; 3] = ["_getframe", "_getframemodulename", "currentframe"];

/// What stands for a call's NULL slot where the version has no `PUSH_NULL` (3.9, 3.10):
/// `framehook._native._sot_call_with`, which calls its first argument with the rest.
pub fn null_substitute<'py>(table: &Table, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if table.has("PUSH_NULL") {
        return Ok(None);
    }
    Ok(Some(import(py, "framehook._native")?.getattr("_sot_call_with")?))
}

/// Where a resume function starts: the original instruction index, and which of the
/// stack slots it receives are NULL.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ResumeKey {
    pub pc: usize,
    pub nulls: Vec<bool>,
    /// The variables (canonical indices of the original) it receives.
    pub live: Vec<usize>,
    /// 3.9/3.10: the blocks it sets up again, (handler, stack level) outermost first.
    pub blocks: Vec<(usize, usize)>,
    /// The stack slots that receive an exception being handled, which it makes current
    /// (the slot then saves the previous one, as in the original).
    pub handled: Vec<usize>,
    /// A bridge: it runs the break's step under the original's handlers, then calls the
    /// resume function after it (see `Continuation::bridged`).
    pub bridge: bool,
    /// Variables that may hold [`unbound_marker`] for being unbound: a loop's bridge binds
    /// to it those it is not handed, and again each one a `del` unbinds, and the resume
    /// function at an exit unbinds those that hold it.
    pub marked: Vec<usize>,
}

/// What stands in a variable for its being unbound while a loop's bridge runs, where an
/// exit hands it on (a local read unbound would be NULL there).
pub fn unbound_marker(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    static MARKER: std::sync::OnceLock<Py<PyAny>> = std::sync::OnceLock::new();
    if let Some(marker) = MARKER.get() {
        return Ok(marker.bind(py).clone());
    }
    let made = builtin(py, "object")?.call0()?.unbind();
    Ok(MARKER.get_or_init(|| made).bind(py).clone())
}

/// A resume function's one argument: the list of the values handed to it.
pub const RESUME_BOX: &str = "__sot_box";

/// The locals a resume function takes stack slots in.
pub const RESUME_STACK: &str = "__sot_stack";

/// Whether `name` is a resume function's own local (its box, a stack slot), not one of the
/// original's variables.
pub fn is_resume_local(name: &str) -> bool {
    name.starts_with(RESUME_BOX) || name.starts_with(RESUME_STACK)
}

/// Items of a list or tuple the translation makes by repetition at most (past it the
/// graph breaks, and the instruction runs natively).
pub const MAX_MADE_ITEMS: usize = 100_000;
