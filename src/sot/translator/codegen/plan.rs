//! What generated code is made of, and which values, graph outputs and sources it needs
//! (reachability over the values it rebuilds).

use framehook_bytecode::canonical::Vars;
use framehook_bytecode::{Location, Table};
use pyo3::prelude::*;
use rustc_hash::FxHashMap;

use crate::sot::translator::guard::source::{Source, SourceId, SourceTable};
use crate::sot::translator::kinds::{kind_of, made_exception};
use crate::sot::translator::model::frame::{DictHistory, DictOp, SideEffect};
use crate::sot::translator::model::graph::Graph;
use crate::sot::translator::model::value::{Sym, Val, Vid};
use crate::sot::translator::model::values::Values;

/// Which exceptions of the graph's run make the frame run again untranslated from its start
/// (the graph runs first: nothing of the frame has happened, where nothing was written).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Rerun {
    /// None: the graph may write an operand before it raises.
    Never,
    /// Any: the graph writes none of its operands.
    OnRaise,
    /// A failed assumption only: every check comes before the first node that writes.
    OnFailedAssumption,
}

/// What the generated code is made of.
pub struct Plan<'a, 'py> {
    pub table: &'static Table,
    pub code: &'a Bound<'py, PyAny>,
    pub vars: &'a Vars,
    pub values: &'a Values<'py>,
    pub cells: &'a [Option<Vid>],
    pub sources: &'a SourceTable,
    pub graph: &'a Graph<'py>,
    /// The side effects the generated code replays (see `replayed`).
    pub side_effects: Vec<SideEffect>,
    /// The dicts the translation made that the generated code makes by replaying their
    /// history (see `DictHistory`).
    pub dict_histories: &'a FxHashMap<Vid, DictHistory>,
    /// The compiled graph's holder (`holder[0](*inputs) -> outputs`), if there are operations.
    pub holder: Option<Bound<'py, PyAny>>,
    /// Where the graph's raising makes the frame run again untranslated (see
    /// `Emitter::emit_rerun`).
    pub rerun: Rerun,
    /// The VM's cells held by the inlined frames a nested break goes on in (their resume
    /// functions make cells of their own from the contents): never made anew for a function
    /// (`detached_cells`).
    pub live_cells: Vec<usize>,
    /// Cells of the closures of functions the translation did not make (`Vm::outside_cells`),
    /// with where the generated code reads each: a function made over one closes over that
    /// cell itself, which stores through the other function reach.
    pub outside_cells: FxHashMap<usize, SourceId>,
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
    pub caught_exceptions: &'a FxHashMap<usize, Option<Location>>,
}

impl<'a, 'py> Plan<'a, 'py> {
    /// A plan rebuilding `rebuilt` (with the side effects and the frame's cells); the
    /// holder of the compiled graph is set once the graph is compiled for `outputs`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        table: &'static Table,
        code: &'a Bound<'py, PyAny>,
        vars: &'a Vars,
        values: &'a Values<'py>,
        cells: &'a [Option<Vid>],
        sources: &'a SourceTable,
        graph: &'a Graph<'py>,
        side_effects: &[SideEffect],
        dict_histories: &'a FxHashMap<Vid, DictHistory>,
        frame_cells: Vec<(usize, usize)>,
        globals: Bound<'py, PyAny>,
        rebuilt: &[Vid],
        caught_exceptions: &'a FxHashMap<usize, Option<Location>>,
    ) -> Self {
        let side_effects = replayed(side_effects);
        let mut roots = side_effect_roots(values, &side_effects);
        roots.extend_from_slice(rebuilt);
        roots.extend(cell_roots(cells, &frame_cells, vars));
        let outputs = needed_outputs(values, cells, dict_histories, graph, &roots);
        Plan {
            table,
            code,
            vars,
            values,
            cells,
            sources,
            graph,
            side_effects,
            dict_histories,
            holder: None,
            rerun: Rerun::Never,
            live_cells: Vec::new(),
            outside_cells: FxHashMap::default(),
            frame_cells,
            globals,
            roots,
            outputs,
            unrebuildable: std::cell::Cell::new(None),
            caught_exceptions,
        }
    }
}

/// The values the generated code makes `vid` of: those it holds, or for a dict with a
/// history, the items and operations the history makes it with.
pub fn children(
    values: &Values<'_>,
    cells: &[Option<Vid>],
    histories: &FxHashMap<Vid, DictHistory>,
    vid: Vid,
) -> Vec<Vid> {
    let mut held = Vec::new();
    match histories.get(&vid) {
        Some(history) => {
            held.extend(history.items.iter().flat_map(|(k, v)| [*k, *v]));
            held.extend(replayed_ops(&history.ops).iter().flat_map(DictOp::values));
        }
        None => kind_of(&values[vid]).children(&values[vid], cells, &mut held),
    }
    held
}

/// Every value the generated code rebuilds from `roots`, each once.
pub fn reachable(
    values: &Values<'_>,
    cells: &[Option<Vid>],
    histories: &FxHashMap<Vid, DictHistory>,
    roots: &[Vid],
) -> Vec<Vid> {
    let mut seen = vec![false; values.len()];
    let mut found = Vec::new();
    let mut stack: Vec<Vid> = roots.to_vec();
    while let Some(vid) = stack.pop() {
        if std::mem::replace(&mut seen[vid], true) {
            continue;
        }
        found.push(vid);
        stack.extend(children(values, cells, histories, vid));
    }
    found.sort_unstable();
    found
}

/// The graph symbols the generated code needs: those of the values it rebuilds.
pub fn needed_outputs(
    values: &Values<'_>,
    cells: &[Option<Vid>],
    histories: &FxHashMap<Vid, DictHistory>,
    graph: &Graph<'_>,
    roots: &[Vid],
) -> Vec<Sym> {
    let mut syms: Vec<Sym> = reachable(values, cells, histories, roots)
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
/// source: a resume function's box). An argument is the frame's own: nothing changes it but
/// the frame's own cells stored after the side effects (`Emitter::store_cells`), where one
/// is the argument's (a closure reads it): an old value the translation returns is read
/// before that.
pub fn sources_read_first(plan: &Plan<'_, '_>, vars: &mut Vars, before_a_step: bool) -> Vec<(SourceId, u32)> {
    let stored_cells = stored_cell_names(plan);
    let changes = !plan.side_effects.is_empty() || before_a_step;
    if !changes && stored_cells.is_empty() {
        return Vec::new();
    }
    let all = plan.vars.all();
    let stored_argument = |i: usize| all.get(i).is_some_and(|name| stored_cells.contains(name));
    let targets = plan.side_effects.iter().filter_map(|effect| match effect {
        SideEffect::Replace { target, .. } => Some(*target),
        SideEffect::StoreCell { cell, .. } => Some(*cell),
        SideEffect::IteratorPosition { iterator } => match &plan.values[*iterator] {
            Val::ListIter { frame, .. } => *frame,
            _ => None,
        },
        _ => None,
    });
    let mut read: Vec<SourceId> = reachable(plan.values, plan.cells, plan.dict_histories, &plan.roots)
        .into_iter()
        .filter_map(|vid| match &plan.values[vid] {
            Val::Obj { source, .. } => *source,
            Val::Tensor { sym, .. } | Val::Scalar { sym, .. } => plan.graph.inputs.get(*sym).copied(),
            _ => None,
        })
        .chain(targets)
        .filter(|s| match plan.sources.sources[*s] {
            Source::Argument(i) => stored_argument(i),
            Source::Held(_) => false,
            _ => changes,
        })
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
pub fn shared_paths(
    plan: &Plan<'_, '_>,
    read_first: &[(SourceId, u32)],
    vars: &mut Vars,
) -> Vec<(SourceId, u32, bool)> {
    let mut read: Vec<SourceId> = plan.graph.inputs.clone();
    read.extend(read_first.iter().map(|(source, _)| *source));
    read.sort_unstable();
    read.dedup();
    let mut uses: FxHashMap<SourceId, usize> = FxHashMap::default();
    for source in read {
        let mut at = source;
        while let Source::Attr(parent, _)
        | Source::OwnAttr(parent, _)
        | Source::Item(parent, _)
        | Source::StoredItem(parent, _) = &plan.sources.sources[at]
        {
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
pub const MAX_CHAIN: usize = 8;

/// The objects the translation made that the generated code rebuilds, and the local
/// each is made in (named before any instruction is emitted): objects, exceptions,
/// functions, and lists, dicts and sets held in more than one place (one object, as in
/// the frame), and dicts made by replaying their history.
pub fn made_objects(
    values: &Values<'_>,
    cells: &[Option<Vid>],
    histories: &FxHashMap<Vid, DictHistory>,
    roots: &[Vid],
    vars: &mut Vars,
) -> Vec<(Vid, u32)> {
    let reached = reachable(values, cells, histories, roots);
    let mut made_exceptions: Vec<(Bound<'_, PyAny>, u32)> = Vec::new();
    let mut references = vec![0_usize; values.len()];
    for vid in roots.iter().copied().chain(
        reached
            .iter()
            .flat_map(|v| children(values, cells, histories, *v)),
    ) {
        references[vid] += 1;
    }
    reached
        .into_iter()
        .filter(|vid| match &values[*vid] {
            Val::Object { .. } | Val::Function(_) | Val::Constructed { .. } => true,
            Val::Dict(_) if histories.contains_key(vid) => true,
            // Held in more than one place: one object, as in the frame (an iterator
            // advanced through one is advanced for the other).
            Val::List(_)
            | Val::Dict(_)
            | Val::Set(_)
            | Val::Iter { .. }
            | Val::ListIter { .. }
            | Val::Partial { .. }
            | Val::Generator(_)
            | Val::Lazy(_) => references[*vid] > 1,
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

/// The cells of inlined frames that functions the translation made (`objects`) close over,
/// each named a local the generated code makes it anew in (`types.CellType`): the frame
/// that made it is gone, so the functions sharing it share the new one alike. Not where a
/// frame that goes on holds it (`Plan::live_cells`, or a value handed on holding the cell
/// itself): its writes would not reach the new one.
pub fn detached_cells(plan: &Plan<'_, '_>, objects: &[(Vid, u32)], vars: &mut Vars) -> Vec<(usize, u32)> {
    let mut found: Vec<usize> = Vec::new();
    for (vid, _) in objects {
        if let Val::Function(function) = &plan.values[*vid] {
            for cell in &function.closure {
                let elsewhere = plan.frame_cells.iter().any(|(own, _)| own == cell)
                    || plan.outside_cells.contains_key(cell);
                if !elsewhere && !found.contains(cell) {
                    found.push(*cell);
                }
            }
        }
    }
    if found.is_empty() {
        return Vec::new();
    }
    let held: Vec<usize> = reachable(plan.values, plan.cells, plan.dict_histories, &plan.roots)
        .into_iter()
        .filter_map(|vid| match plan.values[vid] {
            Val::Cell(cell) => Some(cell),
            _ => None,
        })
        .collect();
    found
        .into_iter()
        .filter(|cell| !held.contains(cell) && !plan.live_cells.contains(cell))
        .map(|cell| {
            vars.varnames.push(format!("__sot_cell{cell}"));
            (cell, (vars.varnames.len() - 1) as u32)
        })
        .collect()
}

/// The frame's own cells the generated code stores back (`Emitter::store_cells`), each as
/// its contents and the variable holding it: those with contents, not the free variables.
pub fn stored_cells<'a>(
    cells: &'a [Option<Vid>],
    frame_cells: &'a [(usize, usize)],
    vars: &Vars,
) -> impl Iterator<Item = (Vid, usize)> + 'a {
    let first_free = vars.first_free();
    frame_cells
        .iter()
        .filter(move |(_, var)| *var < first_free)
        .filter_map(|(cell, var)| cells[*cell].map(|content| (content, *var)))
}

/// The names of the frame's own cells the generated code stores back.
fn stored_cell_names<'v>(plan: &Plan<'v, '_>) -> Vec<&'v str> {
    let all = plan.vars.all();
    stored_cells(plan.cells, &plan.frame_cells, plan.vars)
        .filter_map(|(_, var)| all.get(var).copied())
        .collect()
}

/// The contents of the frame's own cells, which the generated code stores back.
pub fn cell_roots(cells: &[Option<Vid>], frame_cells: &[(usize, usize)], vars: &Vars) -> Vec<Vid> {
    stored_cells(cells, frame_cells, vars)
        .map(|(content, _)| content)
        .collect()
}

/// The roots every generated code rebuilds: side effects' values (a list from the frame's
/// new contents; a dict's operations' values, not its copy).
pub fn side_effect_roots(values: &Values<'_>, side_effects: &[SideEffect]) -> Vec<Vid> {
    side_effects
        .iter()
        .flat_map(|effect| match effect {
            SideEffect::StoreAttr { target, value, .. } => vec![*target, *value],
            SideEffect::DeleteAttr { target, .. } => vec![*target],
            SideEffect::IteratorPosition { .. } => vec![],
            SideEffect::StoreGlobal { value, .. } => vec![*value],
            SideEffect::DeleteGlobal { .. } => vec![],
            SideEffect::CallMethod { target, args, .. } => {
                std::iter::once(*target).chain(args.iter().copied()).collect()
            }
            SideEffect::StoreFree { value, .. } | SideEffect::StoreCell { value, .. } => vec![*value],
            SideEffect::Replace { contents, .. } => match values[*contents] {
                Val::Dict(_) => vec![],
                _ => vec![*contents],
            },
            SideEffect::DictOp { op, .. } => op.values(),
        })
        .collect()
}

/// The side effects the generated code replays: the translation's, each dict's stores
/// coalesced (`Stores`). An attribute or global store (to an object's `__dict__` or a
/// module's globals, which may be one of the dicts) ends every run of stores.
pub fn replayed(side_effects: &[SideEffect]) -> Vec<SideEffect> {
    let mut stores: FxHashMap<SourceId, Stores> = FxHashMap::default();
    let mut replayed: Vec<SideEffect> = Vec::with_capacity(side_effects.len());
    for effect in side_effects {
        match effect {
            SideEffect::DictOp { target, op } => {
                if let Some(earlier) = stores.entry(*target).or_default().earlier(op, replayed.len()) {
                    if let SideEffect::DictOp { op: earlier, .. } = &mut replayed[earlier] {
                        earlier.take_value_of(op);
                    }
                    continue;
                }
            }
            SideEffect::StoreAttr { .. }
            | SideEffect::DeleteAttr { .. }
            | SideEffect::StoreGlobal { .. }
            | SideEffect::DeleteGlobal { .. } => stores.clear(),
            _ => {}
        }
        replayed.push(effect.clone());
    }
    replayed
}

/// The operations on a dict the translation made that the generated code replays: `ops`,
/// its stores coalesced (`Stores`).
pub fn replayed_ops(ops: &[DictOp]) -> Vec<DictOp> {
    let mut stores = Stores::default();
    let mut replayed: Vec<DictOp> = Vec::with_capacity(ops.len());
    for op in ops {
        match stores.earlier(op, replayed.len()) {
            Some(earlier) => replayed[earlier].take_value_of(op),
            None => replayed.push(op.clone()),
        }
    }
    replayed
}

/// The stores to one dict since its last other operation, for coalescing: a store over a
/// key that one of them added or stored over gives that one its value instead of being
/// replayed. It changes only the key's value, which nothing reads between the two (the
/// replay runs no Python code; the stores between it leave the key in place): the dict's
/// table is the same.
#[derive(Default)]
struct Stores {
    /// Per key the dict holds, the replayed store that gives it its value.
    last: FxHashMap<Vid, usize>,
}

impl Stores {
    /// The earlier replayed store `op` (the `at`th replayed) gives its value to, if any;
    /// else notes it.
    fn earlier(&mut self, op: &DictOp, at: usize) -> Option<usize> {
        match op {
            DictOp::Store { over: Some(held), .. } => match self.last.get(held) {
                Some(earlier) => Some(*earlier),
                None => {
                    self.last.insert(*held, at);
                    None
                }
            },
            DictOp::Store { key, over: None, .. } => {
                self.last.insert(*key, at);
                None
            }
            _ => {
                self.last.clear();
                None
            }
        }
    }
}
