//! `framehook._native`'s face of the bytecode layer (crate `framehook-bytecode`): code
//! objects in, instructions or code objects out. `framehook.bytecode` is the public module.

use std::sync::OnceLock;

use framehook_bytecode::canonical::{self, Arg, Const, ConstPool, Instruction, Vars};
use framehook_bytecode::raw::{self, Code, CodeBytes, Instr, TableSizes};
use framehook_bytecode::table::{ArgKind, ExceptionModel, LineTableFormat};
use framehook_bytecode::{Location, Table};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCode, PyDict, PyString, PyTuple};

use crate::hookapi::pyobject::replace_code;

/// The running interpreter's table.
pub fn running_table(py: Python<'_>) -> PyResult<&'static Table> {
    static TABLE: OnceLock<&'static Table> = OnceLock::new();
    if let Some(table) = TABLE.get() {
        return Ok(table);
    }
    let version = py.version_info();
    let table =
        Table::for_version(version.major, version.minor).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(TABLE.get_or_init(|| table))
}

/// The fields of a code object the bytecode layer reads.
pub struct CodeFields<'py> {
    pub code: Bound<'py, PyAny>,
    /// The code's own bytes objects, read in place (a translation reads hundreds of codes,
    /// and copied each of these into a buffer of its own).
    co_code: Bound<'py, PyBytes>,
    /// None where the version has no exception table.
    exception_table: Option<Bound<'py, PyBytes>>,
    line_table: Bound<'py, PyBytes>,
    first_line: i32,
    sizes: TableSizes,
    /// The variable names, which give variable arguments their canonical index space.
    pub vars: Vars,
}

impl<'py> CodeFields<'py> {
    pub fn read(table: &Table, code: &Bound<'py, PyAny>) -> PyResult<Self> {
        if !code.is_instance_of::<PyCode>() {
            return Err(PyTypeError::new_err(format!(
                "expected a code object, not {}",
                code.get_type().name()?
            )));
        }
        let py = code.py();
        let bytes = |name: &Bound<'py, PyString>| -> PyResult<Bound<'py, PyBytes>> {
            Ok(code.getattr(name)?.cast_into::<PyBytes>()?)
        };
        let length = |name: &Bound<'py, PyString>| -> PyResult<u32> { Ok(code.getattr(name)?.len()? as u32) };
        let vars = vars_of(code)?;
        let sizes = TableSizes {
            consts: length(intern!(py, "co_consts"))?,
            names: length(intern!(py, "co_names"))?,
            varnames: vars.varnames.len() as u32,
            cells_and_frees: (vars.cellvars.len() + vars.freevars.len()) as u32,
            locals_plus: vars.count() as u32,
        };
        Ok(CodeFields {
            code: code.clone(),
            co_code: bytes(intern!(py, "co_code"))?,
            exception_table: match table.exceptions {
                ExceptionModel::Table => Some(bytes(intern!(py, "co_exceptiontable"))?),
                ExceptionModel::BlockStack => None,
            },
            line_table: bytes(line_table_field(py, table))?,
            first_line: code.getattr(intern!(py, "co_firstlineno"))?.extract()?,
            sizes,
            vars,
        })
    }

    pub fn bytes(&self) -> CodeBytes<'_> {
        CodeBytes {
            code: self.co_code.as_bytes(),
            exception_table: self
                .exception_table
                .as_ref()
                .map_or(&[], |table| table.as_bytes()),
            line_table: self.line_table.as_bytes(),
            first_line: self.first_line,
            sizes: self.sizes,
        }
    }

    /// The decoded instructions, or a ValueError naming the code object and the problem.
    pub fn decode(&self, table: &Table) -> PyResult<Code> {
        raw::decode(table, self.bytes()).map_err(|e| self.error("decode", e))
    }

    pub fn error(&self, verb: &str, error: framehook_bytecode::Error) -> PyErr {
        let name = self
            .code
            .getattr("co_qualname")
            .or_else(|_| self.code.getattr("co_name"))
            .map_or_else(|_| "?".to_owned(), |n| n.to_string());
        PyValueError::new_err(format!("cannot {verb} the code of {name}: {error}"))
    }
}

fn line_table_field<'py>(py: Python<'py>, table: &Table) -> &'py Bound<'py, PyString> {
    match table.line_table {
        LineTableFormat::Lnotab => intern!(py, "co_lnotab"),
        LineTableFormat::Pep626 | LineTableFormat::Pep657 => intern!(py, "co_linetable"),
    }
}

/// A new code object: `code` with its bytecode replaced by `instrs`.
pub fn assemble<'py>(table: &Table, fields: &CodeFields<'py>, code: &Code) -> PyResult<Bound<'py, PyAny>> {
    assemble_at(table, fields, code, fields.first_line)
}

/// `assemble`, the line table written from `first_line` (the new `co_firstlineno`).
fn assemble_at<'py>(
    table: &Table,
    fields: &CodeFields<'py>,
    code: &Code,
    first_line: i32,
) -> PyResult<Bound<'py, PyAny>> {
    let py = fields.code.py();
    let assembled = raw::encode(table, code, first_line).map_err(|e| fields.error("assemble", e))?;
    let changes = PyDict::new(py);
    if first_line != fields.first_line {
        changes.set_item("co_firstlineno", first_line)?;
    }
    changes.set_item("co_code", PyBytes::new(py, &assembled.code))?;
    changes.set_item(
        line_table_field(py, table),
        PyBytes::new(py, &assembled.line_table),
    )?;
    if table.exceptions == ExceptionModel::Table {
        changes.set_item("co_exceptiontable", PyBytes::new(py, &assembled.exception_table))?;
    }
    changes.set_item("co_stacksize", assembled.stack_size)?;
    replace_code(&fields.code, &changes)
}

fn positions(py: Python<'_>, location: Location) -> PyResult<Bound<'_, PyTuple>> {
    let value = |v: i32| {
        if v < 0 {
            py.None()
        } else {
            v.into_pyobject(py)
                .map(|v| v.into_any().unbind())
                .unwrap_or_else(|_| py.None())
        }
    };
    PyTuple::new(
        py,
        [
            value(location.line),
            value(location.end_line),
            value(location.col),
            value(location.end_col),
        ],
    )
}

/// What a raw instruction's argument stands for, and how `dis` would show it.
fn resolve_raw<'py>(table: &Table, code: &Bound<'py, PyAny>, instr: &Instr) -> PyResult<(Py<PyAny>, String)> {
    let py = code.py();
    let info = table
        .op(instr.opcode)
        .expect("decoded instructions have known opcodes");
    let item =
        |field: &str, index: u32| -> PyResult<Bound<'py, PyAny>> { code.getattr(field)?.get_item(index) };
    let shown = |value: Bound<'py, PyAny>, repr: String| Ok((value.unbind(), repr));
    match &info.arg {
        ArgKind::None => Ok((py.None(), String::new())),
        ArgKind::Const => {
            let value = item("co_consts", instr.arg)?;
            let repr = value.repr()?.to_string();
            shown(value, repr)
        }
        ArgKind::Name { shift } => {
            let value = item("co_names", instr.arg >> shift)?;
            let repr = value.to_string();
            shown(value, repr)
        }
        ArgKind::JumpForward | ArgKind::JumpBackward | ArgKind::JumpAbsolute => {
            let target = instr.target.unwrap_or_default();
            shown(target.into_pyobject(py)?.into_any(), format!("to {target}"))
        }
        ArgKind::Enum(kind) => match table.enum_name(kind, instr.arg) {
            Some(name) => shown(name.into_pyobject(py)?.into_any(), (*name).to_owned()),
            None => shown(instr.arg.into_pyobject(py)?.into_any(), String::new()),
        },
        _ => shown(instr.arg.into_pyobject(py)?.into_any(), String::new()),
    }
}

/// `_bytecode_decode(code)`: the running version's instructions as tuples
/// `(name, arg, argval, argrepr, target, positions, handler)`, handler `(target, depth, lasti)`.
#[pyfunction]
fn _bytecode_decode<'py>(py: Python<'py>, code: Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyTuple>>> {
    let table = running_table(py)?;
    let fields = CodeFields::read(table, &code)?;
    let instrs = fields.decode(table)?.instrs;
    instrs
        .iter()
        .map(|instr| {
            let name = &table.op(instr.opcode).expect("known").name;
            let (argval, argrepr) =
                resolve_raw(table, &code, instr).unwrap_or_else(|_| (py.None(), String::new()));
            let handler = instr.handler.map(|h| (h.target, h.depth, h.lasti));
            (
                name,
                instr.arg,
                argval,
                argrepr,
                instr.target,
                positions(py, instr.location)?,
                handler,
            )
                .into_pyobject(py)
        })
        .collect()
}

/// A code object's variable names.
pub fn vars_of(code: &Bound<'_, PyAny>) -> PyResult<Vars> {
    Ok(Vars {
        varnames: code.getattr(intern!(code.py(), "co_varnames"))?.extract()?,
        cellvars: code.getattr(intern!(code.py(), "co_cellvars"))?.extract()?,
        freevars: code.getattr(intern!(code.py(), "co_freevars"))?.extract()?,
    })
}

/// What a canonical instruction's argument stands for, and how to show it.
fn resolve_canonical<'py>(
    code: &Bound<'py, PyAny>,
    vars: &Vars,
    instruction: &Instruction,
) -> PyResult<(Option<u32>, Py<PyAny>, String)> {
    let py = code.py();
    let int = |value: u32| -> PyResult<Py<PyAny>> { Ok(value.into_pyobject(py)?.into_any().unbind()) };
    let text = |value: &str| -> Py<PyAny> { pyo3::types::PyString::new(py, value).into_any().unbind() };
    Ok(match instruction.arg {
        Arg::None => (None, py.None(), String::new()),
        Arg::Int(value) => (Some(value), int(value)?, String::new()),
        Arg::Const(Const::Index(index)) => {
            let value = code.getattr("co_consts")?.get_item(index)?;
            let repr = value.repr()?.to_string();
            (Some(index), value.unbind(), repr)
        }
        Arg::Const(Const::SmallInt(value)) => (Some(value), int(value)?, value.to_string()),
        Arg::Name(index) | Arg::NameFlags(index, _) => {
            let value = code.getattr("co_names")?.get_item(index)?;
            let repr = value.to_string();
            (Some(index), value.unbind(), repr)
        }
        Arg::Var(index) => {
            let name = vars
                .all()
                .get(index as usize)
                .map_or_else(|| "?".to_owned(), |n| (*n).to_owned());
            (Some(index), text(&name), name)
        }
        Arg::Target(target) => (Some(target as u32), int(target as u32)?, format!("to {target}")),
        Arg::BinaryOp { op, inplace } => {
            let name = op.nb_name(inplace);
            (None, text(&name), name)
        }
        Arg::Compare { op, to_bool } => {
            let symbol = ["<", "<=", "==", "!=", ">", ">="]
                .get(usize::from(op))
                .copied()
                .unwrap_or("?");
            let repr = if to_bool {
                format!("bool({symbol})")
            } else {
                symbol.to_owned()
            };
            (Some(u32::from(op)), text(symbol), repr)
        }
        Arg::Call { argc, kw_names } => (
            Some(argc),
            int(argc)?,
            if kw_names {
                "with keyword names".to_owned()
            } else {
                String::new()
            },
        ),
        Arg::Enum(name) => (None, text(name), (*name).to_owned()),
    })
}

/// `_bytecode_decode_canonical(code)`: the canonical instructions as tuples
/// `(name, arg, argval, argrepr, target, positions, handler)`.
#[pyfunction]
fn _bytecode_decode_canonical<'py>(
    py: Python<'py>,
    code: Bound<'py, PyAny>,
) -> PyResult<Vec<Bound<'py, PyTuple>>> {
    let table = running_table(py)?;
    let fields = CodeFields::read(table, &code)?;
    let vars = &fields.vars;
    let instructions = canonical::raise(table, vars, &fields.decode(table)?.instrs)
        .map_err(|e| fields.error("decode", e))?;
    instructions
        .iter()
        .map(|instruction| {
            let (arg, argval, argrepr) = resolve_canonical(&code, vars, instruction)?;
            let target = if let Arg::Target(t) = instruction.arg {
                Some(t)
            } else {
                None
            };
            let handler = instruction.handler.map(|h| (h.target(), h.depth, h.lasti));
            (
                instruction.op.name(),
                arg,
                argval,
                argrepr,
                target,
                positions(py, instruction.location)?,
                handler,
            )
                .into_pyobject(py)
        })
        .collect()
}

/// New constants lowering asks for, appended to the code's own.
struct AppendedConsts<'py> {
    py: Python<'py>,
    consts: Vec<Bound<'py, PyAny>>,
    original: usize,
}

impl ConstPool for AppendedConsts<'_> {
    fn small_int(&mut self, value: u32) -> framehook_bytecode::Result<u32> {
        let py = self.py;
        let found = self.consts.iter().position(|c| {
            c.get_type().is(py.get_type::<pyo3::types::PyInt>()) && c.extract::<u32>().ok() == Some(value)
        });
        let index = found.unwrap_or_else(|| {
            self.consts
                .push(value.into_pyobject(py).expect("ints convert").into_any());
            self.consts.len() - 1
        });
        Ok(index as u32)
    }
}

/// `_bytecode_reassemble(code, via_ir)`: a new code object with the same behaviour.
#[pyfunction]
fn _bytecode_reassemble<'py>(
    py: Python<'py>,
    code: Bound<'py, PyAny>,
    via_ir: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let table = running_table(py)?;
    let fields = CodeFields::read(table, &code)?;
    let decoded = fields.decode(table)?;
    if !via_ir {
        return assemble(table, &fields, &decoded);
    }
    let vars = &fields.vars;
    let instructions =
        canonical::raise(table, vars, &decoded.instrs).map_err(|e| fields.error("decode", e))?;
    let consts: Vec<Bound<'py, PyAny>> = code
        .getattr(intern!(py, "co_consts"))?
        .try_iter()?
        .collect::<PyResult<_>>()?;
    let mut pool = AppendedConsts {
        py,
        original: consts.len(),
        consts,
    };
    let lowered =
        canonical::lower(table, vars, &instructions, &mut pool).map_err(|e| fields.error("assemble", e))?;
    let new_code = assemble(table, &fields, &Code::new(lowered))?;
    if pool.consts.len() == pool.original {
        return Ok(new_code);
    }
    let changes = PyDict::new(py);
    changes.set_item("co_consts", PyTuple::new(py, pool.consts)?)?;
    replace_code(&new_code, &changes)
}

/// `_bytecode_relined(code, lines)`: `code` with what its source's line `n` holds placed at
/// line `lines[n - 1]`, without columns, its first line that of its first source line: code
/// compiled from text made for it (a graph's function) placed at the user's lines.
#[pyfunction]
fn _bytecode_relined<'py>(
    py: Python<'py>,
    code: Bound<'py, PyAny>,
    lines: Vec<i32>,
) -> PyResult<Bound<'py, PyAny>> {
    let table = running_table(py)?;
    let fields = CodeFields::read(table, &code)?;
    let mut decoded = fields.decode(table)?;
    let placed = |line: i32| -> PyResult<i32> {
        if line <= 0 {
            return Ok(line);
        }
        lines.get(line as usize - 1).copied().ok_or_else(|| {
            PyValueError::new_err(format!(
                "_bytecode_relined: the code has line {line}, past the {} lines given",
                lines.len()
            ))
        })
    };
    let relined = |location: Location| -> PyResult<Location> {
        let line = placed(location.line)?;
        Ok(Location {
            line,
            end_line: if location.line <= 0 {
                location.end_line
            } else {
                line
            },
            col: -1,
            end_col: -1,
        })
    };
    for instr in &mut decoded.instrs {
        instr.location = relined(instr.location)?;
    }
    for (_, location) in &mut decoded.prefix_locations {
        *location = relined(*location)?;
    }
    let passed = decoded
        .passed_lines
        .iter_mut()
        .flat_map(|(_, lines)| lines.iter_mut());
    for line in passed.chain(&mut decoded.end_lines) {
        *line = placed(*line)?;
    }
    assemble_at(table, &fields, &decoded, placed(fields.first_line)?)
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(_bytecode_relined, module)?)?;
    module.add_function(wrap_pyfunction!(_bytecode_decode, module)?)?;
    module.add_function(wrap_pyfunction!(_bytecode_decode_canonical, module)?)?;
    module.add_function(wrap_pyfunction!(_bytecode_reassemble, module)?)?;
    #[cfg(feature = "testing")]
    module.add_function(wrap_pyfunction!(_bench_bytecode, module)?)?;
    #[cfg(feature = "testing")]
    module.add_function(wrap_pyfunction!(_bytecode_prologue, module)?)?;
    Ok(())
}

/// Test helper (the `testing` feature): the canonical prologue the bytecode layer would write
/// for a code object with `code`'s variables and kind (from `co_flags`), as the names and
/// arguments `_bytecode_decode_canonical` gives.
#[cfg(feature = "testing")]
#[pyfunction]
fn _bytecode_prologue(py: Python<'_>, code: Bound<'_, PyAny>) -> PyResult<Vec<(&'static str, Option<u32>)>> {
    use canonical::CodeKind;
    // inspect's CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR: the same on every version.
    let flags: u32 = code.getattr("co_flags")?.extract()?;
    let kind = if flags & 0x200 != 0 {
        CodeKind::AsyncGenerator
    } else if flags & 0x80 != 0 {
        CodeKind::Coroutine
    } else if flags & 0x20 != 0 {
        CodeKind::Generator
    } else {
        CodeKind::Function
    };
    let table = running_table(py)?;
    let vars = vars_of(&code)?;
    canonical::prologue(table, &vars, kind)
        .iter()
        .map(|instruction| {
            Ok((
                instruction.op.name(),
                resolve_canonical(&code, &vars, instruction)?.0,
            ))
        })
        .collect()
}

/// Bench helpers (the `testing` feature; never in users' wheels): one phase of the bytecode
/// layer run `loops` times on `code`, timed in Rust, without building Python objects for
/// the instructions. Phases: `decode` (code object to canonical instructions), `assemble`
/// (canonical instructions to a new code object: lowering, encoding, `code.replace`) and
/// `reassemble` (both). Returns the seconds taken by all loops.
#[cfg(feature = "testing")]
#[pyfunction]
fn _bench_bytecode(py: Python<'_>, code: Bound<'_, PyAny>, phase: &str, loops: u32) -> PyResult<f64> {
    let table = running_table(py)?;
    let decode = || -> PyResult<Vec<Instruction>> {
        let fields = CodeFields::read(table, &code)?;
        canonical::raise(table, &fields.vars, &fields.decode(table)?.instrs)
            .map_err(|e| fields.error("decode", e))
    };
    let assemble = |instructions: &[Instruction]| -> PyResult<Bound<'_, PyAny>> {
        let fields = CodeFields::read(table, &code)?;
        let lowered = canonical::lower(table, &fields.vars, instructions, &mut canonical::NoNewConsts)
            .map_err(|e| fields.error("assemble", e))?;
        assemble(table, &fields, &Code::new(lowered))
    };
    let instructions = decode()?;
    let start = std::time::Instant::now();
    for _ in 0..loops {
        match phase {
            "decode" => drop(decode()?),
            "assemble" => drop(assemble(&instructions)?),
            "reassemble" => drop(assemble(&decode()?)?),
            other => return Err(PyValueError::new_err(format!("unknown phase {other:?}"))),
        }
    }
    Ok(start.elapsed().as_secs_f64())
}
