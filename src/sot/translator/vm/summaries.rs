//! Summaries of pure calls. A library function whose simulation made no operation, changed
//! nothing and gave a constant gives that constant again, in any later translation of the
//! same session, for arguments of the same kinds; one that gave instances of Python classes,
//! lists, dicts or tuples it made, holding constants and one another (scikit-learn's tags,
//! each a dataclass made anew by `get_tags` some twenty times per `predict` of a pipeline;
//! its configuration's copy), gives new ones alike at each replay, as each call makes its
//! own; an object or value of the frame it gave (a setting), or an object its made objects
//! hold (array-API helpers' `(module, False)`), is read again at each replay through its
//! path from the call, where the function reads it. Its guards, rebased on the new call's
//! function and arguments, stand for what it read, and are checked on the frame being
//! translated before the translation is used (`Vm::replayed_hold`). scikit-learn asks
//! narwhals' `is_into_dataframe` about its input some thirty times per `predict` of a
//! pipeline, each about 950 instructions to simulate, where its summary is 175 guards. A
//! traced function is summarized alike from its second call in the session on (a first
//! call's recording costs more than most such calls save: scikit-learn's `check_is_fitted`
//! and `_get_feature_names` repeat, most of a translation's calls do not); calls being
//! recorded nest, each logging what the calls inside it read and replayed.
//!
//! What a call's simulation depends on, and how a summary covers it:
//! - the function: its code, globals, defaults (the guards `function_of` makes on its
//!   source, recorded, and made again on the new call's); closures are not summarized;
//! - each argument: a constant's value (`Check::Equals`, guarded on the new call's argument
//!   where the frame gives it); a tensor's type, and its meta
//!   (`Backend::tensor_check`) where the call read more than its type
//!   (`Interp::tensor_meta_read`; an attribute its exact type gives, numpy's `device`, is
//!   the type's: `Interp::tensor_attribute_read`); an object from the frame through the
//!   guards on its source; which arguments were one object;
//! - what it reads beyond them (module globals, `sys.modules`): every guard asked for while
//!   it ran, and every guard of each source it read whose value the translation had made
//!   before (read again, it gives its value without asking for its guards), each as a path
//!   from the function, an argument, an object pinned by identity or a builtin;
//! - the translation's own changes: none may be pending (attributes, globals, lists and
//!   dicts of the frame changed, a resume function's box excepted; an exception being
//!   handled), when recorded or replayed; and the call changes nothing that existed before
//!   it (`Vm::changed_since`) nor reads a cell the translation made before it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};

use super::summary::{Given, MadeAttr, MadeObject, Path, Replay, Root, Step, Summary, SummaryGuard};
use super::summary_log::SummaryLog;
use super::*;
use crate::hookapi::rust_hook::HookContext;
use crate::sot::translator::fetch::{attr_value, item_value, stored_item_value, value_holds, Fetcher};
use crate::sot::translator::session::EPOCH;

/// The summaries kept, all sessions together: past it they are dropped and made again.
const MAX_SUMMARIES: usize = 1024;
/// Summaries of one function (for different kinds of arguments) in one session.
const MAX_PER_FUNCTION: usize = 8;

/// A made result being read (`Vm::made_result`): the call's first value, the objects made
/// so far and their indices by value, the frame's objects they hold (their paths, and
/// indices by source), the frame's values they hold.
struct MadeWalk<'a, 'r, 'py> {
    recording: &'r Recording<'py>,
    first_value: Vid,
    made: Vec<MadeObject>,
    index_of: FxHashMap<Vid, usize>,
    sourced: Vec<Path>,
    sourced_index: FxHashMap<SourceId, usize>,
    held_values: &'a mut Vec<(SourceId, Check)>,
}

/// How deep a made result's instances may hold one another.
const MAX_MADE_DEPTH: usize = 8;

#[derive(Default)]
struct Store {
    epoch: u64,
    /// By owner (`Config::summary_owner`: a family, or a configuration of its own) and
    /// function address; an owner gone leaves its summaries until the bound or a reset.
    summaries: FxHashMap<(u64, usize), Vec<Arc<Summary>>>,
    count: usize,
    /// Traced functions called once already (`Vm::replay_or_record`), keyed alike; past
    /// `MAX_CALLED` the set starts again (a function then waits one call more).
    called: FxHashSet<(u64, usize)>,
    /// Library calls that stopped (`Vm::call_library`), keyed alike; past `MAX_SUMMARIES`
    /// they are forgotten.
    failed: FxHashMap<(u64, usize), Vec<FailedCall>>,
}

/// A library call whose simulation stopped (a break inside it, its budget spent), and why:
/// the function called again with arguments of the same kinds breaks at once, in any later
/// translation of the session. Its simulation would most likely stop alike; breaking is
/// exact wherever it is (the call runs as it is), this one only earlier.
struct FailedCall {
    function: Py<PyAny>,
    arguments: Vec<ArgumentKind>,
    reason: String,
}

/// What a call's argument is, as a failed call's record compares it: its form in the VM
/// and, where it has one, its type, and a number's, string's or None's value
/// (`Vm::argument_kind`).
pub(super) type ArgumentKind = (u64, usize);

/// Why `function`, called with arguments of `arguments`' kinds, stopped before in `scope`'s
/// session, if it did.
pub(super) fn failed_before(
    scope: SummaryScope,
    function: &Bound<'_, PyAny>,
    arguments: &[ArgumentKind],
) -> Option<String> {
    let store = STORE.lock();
    let store = store
        .as_ref()
        .filter(|s| s.epoch == scope.epoch && scope.epoch == EPOCH.load(Ordering::Relaxed))?;
    store
        .failed
        .get(&(scope.owner, function.as_ptr() as usize))?
        .iter()
        .find(|failed| failed.function.is(function) && failed.arguments == arguments)
        .map(|failed| failed.reason.clone())
}

/// Notes that `function`, called with arguments of `arguments`' kinds, stopped: `reason`.
pub(super) fn note_failure(
    scope: SummaryScope,
    function: &Bound<'_, PyAny>,
    arguments: Vec<ArgumentKind>,
    reason: String,
) {
    let key = (scope.owner, function.as_ptr() as usize);
    let mut slot = STORE.lock();
    let (store, old) = Store::of_epoch(&mut slot, scope.epoch);
    let forgotten = (store.failed.len() >= MAX_SUMMARIES).then(|| std::mem::take(&mut store.failed));
    let found = store.failed.entry(key).or_default();
    let dropped = (found.len() >= MAX_PER_FUNCTION).then(|| found.remove(0));
    found.push(FailedCall {
        function: function.clone().unbind(),
        arguments,
        reason,
    });
    drop(slot);
    drop((old, forgotten, dropped));
}

impl Store {
    /// The store of `epoch` in `slot`; one of another epoch is replaced by an empty one and
    /// handed back, to be dropped once the lock is let go (its objects' finalizers may
    /// translate).
    fn of_epoch(slot: &mut Option<Store>, epoch: u64) -> (&mut Store, Option<Store>) {
        let store = slot.get_or_insert_with(Store::default);
        let old = (store.epoch != epoch).then(|| std::mem::take(store));
        store.epoch = epoch;
        (store, old)
    }
}

static STORE: Mutex<Option<Store>> = Mutex::new(None);
const MAX_CALLED: usize = 1 << 16;

/// Whether `function` was called before in `scope`'s session; notes that it was.
fn called_before(scope: SummaryScope, function: &Bound<'_, PyAny>) -> bool {
    let mut slot = STORE.lock();
    let (store, old) = Store::of_epoch(&mut slot, scope.epoch);
    if store.called.len() >= MAX_CALLED {
        store.called.clear();
    }
    let before = !store.called.insert((scope.owner, function.as_ptr() as usize));
    drop(slot);
    drop(old);
    before
}

/// A library call being simulated for a summary: what it was called with, and the VM
/// before it (its log is the VM's, `SummaryLog`).
struct Recording<'py> {
    args: Vec<Vid>,
    argument_sources: Vec<Option<SourceId>>,
    /// Which arguments were one object (before the call made any a graph input).
    aliases: Vec<usize>,
    function: Bound<'py, PyAny>,
    function_source: Option<SourceId>,
    /// The VM before the call (`changed_since`: a pure call changed no value that existed
    /// then, no cell, nothing outside), the graph's inputs and generators' positions then.
    before: snapshot::Snapshot<'py>,
    inputs: usize,
    generators: Vec<(Vid, usize, bool)>,
    /// What else a pure call leaves as it was (`graph_marks`).
    marks: [usize; 3],
}

/// What becomes of an outermost library call (`Vm::replay_or_record`).
enum LibraryCall<'py> {
    /// A summary gave its result.
    Replayed(Vid),
    /// It is simulated, and recorded for a summary.
    Recorded(Box<Recording<'py>>),
    /// It is simulated only.
    Simulated,
}

/// Drops every summary and what was called (`sot.reset()`); the old summaries go after the
/// lock is let go, as their objects' finalizers may translate.
pub fn clear_summaries() {
    let old = STORE.lock().take();
    drop(old);
}

impl<'py, 'b> Vm<'py, 'b> {
    /// The summary's result for this call, its guards made, where one of this session holds
    /// for these arguments; else, where the call may be summarized, starts recording it.
    fn replay_or_record(
        &mut self,
        function: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        kwargs: &[(String, Vid)],
        record_first_call: bool,
    ) -> Res<LibraryCall<'py>> {
        let Some(scope) = self.summary_scope else {
            return Ok(LibraryCall::Simulated);
        };
        let eligible = kwargs.is_empty()
            && self.nothing_pending()
            && function.is_exact_instance_of::<pyo3::types::PyFunction>()
            && function.getattr(pyo3::intern!(self.py, "__closure__"))?.is_none();
        if !eligible {
            return Ok(LibraryCall::Simulated);
        }
        let argument_sources: Vec<Option<SourceId>> = args.iter().map(|a| self.source_of(*a)).collect();
        if scope.replay {
            for summary in found_summaries(scope, function) {
                if let Some(result) = self.replay(summary, function, source, args, &argument_sources)? {
                    return Ok(LibraryCall::Replayed(result));
                }
            }
        }
        if !args.iter().all(|a| self.summarizable(*a)) {
            return Ok(LibraryCall::Simulated);
        }
        if !record_first_call && !called_before(scope, function) {
            return Ok(LibraryCall::Simulated);
        }
        self.recording
            .push(SummaryLog::new(self.values.len(), self.cells.len()));
        Ok(LibraryCall::Recorded(Box::new(Recording {
            args: args.to_vec(),
            argument_sources,
            aliases: self.aliases(args),
            function: function.clone(),
            function_source: source,
            before: snapshot::Snapshot::take(self),
            inputs: self.graph.inputs.len(),
            generators: self.generator_positions(),
            marks: self.graph_marks(),
        })))
    }

    /// `function(*args, **kwargs)`, a summary's result where one of the session holds for it;
    /// else inlined (after `simulating`), and recorded for a summary where it may be (a
    /// function's first call only where `record_first_call`).
    pub(super) fn inline_summarized(
        &mut self,
        function: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: Vec<Vid>,
        kwargs: Vec<(String, Vid)>,
        record_first_call: bool,
        simulating: impl FnOnce(&mut Self),
    ) -> Res<Vid> {
        let recording = match self.replay_or_record(function, source, &args, &kwargs, record_first_call)? {
            LibraryCall::Replayed(result) => return Ok(result),
            LibraryCall::Recorded(started) => Some(started),
            LibraryCall::Simulated => None,
        };
        simulating(self);
        let result = self.inline_function(function, source, args, kwargs);
        if let Some(recording) = recording {
            self.finish_recording(*recording, &result);
        }
        result
    }

    /// Ends the recording of the library call that gave `result`: a summary of it where it
    /// was pure and gave a constant, objects it made of constants and the frame's objects,
    /// or one of the frame's objects (`Given::Made`).
    fn finish_recording(&mut self, recording: Recording<'py>, result: &Res<Vid>) {
        let Some(log) = self.recording.pop() else {
            return;
        };
        let (Ok(result), Some(scope)) = (result, self.summary_scope) else {
            return;
        };
        // The values from the frame a made result holds, kept as constants: guarded on theirs.
        let mut held_values = Vec::new();
        let Some(given) = self.made_result(*result, &recording, log.first_value(), &mut held_values) else {
            return;
        };
        let changed = recording.marks != self.graph_marks()
            || log.reads_earlier_cells
            || self.changed_since(&recording.before, recording.inputs, &recording.generators);
        if changed || !self.nothing_pending() {
            return;
        }
        let Some(guards) = self.summary_guards(&recording, &log, &held_values) else {
            return;
        };
        let Ok(arguments) = recording
            .args
            .iter()
            .map(|a| self.argument_check(*a, &log.meta_read))
            .collect::<PyResult<Vec<_>>>()
        else {
            return;
        };
        let summary = Summary {
            function: StrongRef::new(&recording.function),
            arguments,
            aliases: recording.aliases,
            result: given,
            guards,
        };
        store_summary(scope, summary);
    }

    /// Whether the guards of the summaries this translation used hold for its frame (read
    /// from it only where it used one).
    pub fn replayed_hold(&self, context: &HookContext<'_, 'py>) -> bool {
        self.replayed.is_empty()
            || Fetcher::new(context, &self.sources)
                .first_failing(&self.replayed)
                .is_none()
    }

    fn replay(
        &mut self,
        summary: Arc<Summary>,
        function: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        args: &[Vid],
        argument_sources: &[Option<SourceId>],
    ) -> Res<Option<Vid>> {
        let py = self.py;
        if summary.arguments.len() != args.len() || summary.aliases != self.aliases(args) {
            return Ok(None);
        }
        for ((check, arg), arg_source) in summary.arguments.iter().zip(args).zip(argument_sources) {
            let fits = match (check, self.val(*arg)) {
                (None, Val::Obj { .. }) => arg_source.is_some(),
                (Some(check), _) => value_holds(py, check, self.argument_object(*arg)),
                (None, _) => false,
            };
            if !fits {
                return Ok(None);
            }
        }
        // The classes of a made result, alive, and the frame's objects it holds, readable
        // through their paths (else the summary is of no use).
        let mut classes = Vec::new();
        let mut sourced = Vec::new();
        if let Given::Made {
            objects,
            sourced: paths,
            ..
        } = &summary.result
        {
            for object in objects {
                if let MadeObject::Instance { class, .. } = object {
                    let Some(class) = class.object(py) else {
                        return Ok(None);
                    };
                    classes.push(class);
                }
            }
            for path in paths {
                let rooted = match path.root {
                    Root::Argument(i) => argument_sources[i].is_some(),
                    _ => true,
                };
                match self.path_value(path, function, args) {
                    Some(Some(object)) if rooted => sourced.push(object),
                    _ => return Ok(None),
                }
            }
        }
        // Replayed before in this translation with these arguments: the guards it read and
        // made then hold now, and are added again as they were.
        let again: Option<Vec<(SourceId, Check)>> = self
            .replays
            .guards_of(&summary, function, source, args, argument_sources)
            .map(|guards| {
                guards
                    .iter()
                    .map(|(id, check)| (*id, check.clone_ref(py)))
                    .collect()
            });
        // Replayed before in this translation at all: its guards rooted at held objects and
        // builtins are the translation's already, and held then.
        let held_rooted_added = self.replays.held_rooted(&summary).is_some();
        // The objects the guards are rooted at, alive while they are made.
        let mut held = Vec::new();
        if again.is_none()
            && !self.summary_fits(
                &summary,
                function,
                args,
                argument_sources,
                held_rooted_added,
                &mut held,
            )
        {
            return Ok(None);
        }
        // The function's own guards, as a simulation would make them first (where that
        // fails, the simulation says why); an argument from the frame is guarded on what
        // the summary holds for (a tensor's type or meta, a constant's value).
        if self.function_of(function, source).is_err() {
            return Ok(None);
        }
        let mut replayed = Vec::new();
        for ((check, arg), arg_source) in summary.arguments.iter().zip(args).zip(argument_sources) {
            let (Some(check), Some(s)) = (check, arg_source) else {
                continue;
            };
            // A constant's value, recorded as a check, given here by the frame: the result
            // holds for that value only.
            if self.tensor_argument(*arg).is_none() {
                self.add_guard(*s, check.clone_ref(py));
            }
            replayed.push((*s, check.clone_ref(py)));
        }
        // A call being recorded asks for the guards rooted at held objects and builtins that
        // an earlier replay added (a replay again on the same arguments adds what that replay
        // added, which may be none of them).
        if let Some(added) = self.replays.held_rooted(&summary) {
            for recording in &mut self.recording {
                for (id, check) in added {
                    recording.request(py, *id, check);
                }
            }
        }
        match again {
            Some(guards) => {
                for (id, check) in guards {
                    self.add_guard(id, check);
                }
            }
            None => {
                // In order, each made before the next is rebased: an object a guard pins is
                // reached through that source after it (the sources a simulation would use).
                let mut summary_guards = Vec::with_capacity(summary.guards.len());
                let mut held_rooted = Vec::new();
                for guard in &summary.guards {
                    let is_held_rooted = guard.is_held_rooted();
                    if is_held_rooted && held_rooted_added {
                        continue;
                    }
                    let SummaryGuard { path, check, others } = guard;
                    let id = self.rebase(path, function, source, argument_sources);
                    let others: Vec<SourceId> = others
                        .iter()
                        .map(|other| self.rebase(other, function, source, argument_sources))
                        .collect();
                    let check = match check {
                        Check::SameAs(_) => Check::SameAs(others[0]),
                        Check::Distinct(_) => Check::Distinct(others),
                        check => check.clone_ref(py),
                    };
                    self.add_guard(id, check.clone_ref(py));
                    summary_guards.push((id, check.clone_ref(py)));
                    if is_held_rooted {
                        held_rooted.push((id, check.clone_ref(py)));
                    }
                    replayed.push((id, check));
                }
                for (id, check) in replayed {
                    self.replayed.push(Guard { source: id, check });
                }
                if !held_rooted_added {
                    self.replays.keep_held_rooted(&summary, held_rooted);
                }
                self.replays.keep(Replay {
                    summary: Arc::clone(&summary),
                    function: StrongRef::new(function),
                    source,
                    args: args.to_vec(),
                    argument_sources: argument_sources.to_vec(),
                    guards: summary_guards,
                });
            }
        }
        self.summaries_replayed += 1;
        // The frame's objects the result holds, by the sources this translation reads them
        // under (after the guards, which intern them as a simulation would).
        let sourced: Vec<(SourceId, Bound<'py, PyAny>)> = match &summary.result {
            Given::Made { sourced: paths, .. } => paths
                .iter()
                .zip(sourced)
                .map(|(path, object)| (self.rebase(path, function, source, argument_sources), object))
                .collect(),
            Given::Constant(_) => Vec::new(),
        };
        Ok(Some(self.given(&summary.result, &classes, sourced)))
    }

    /// Whether `summary`'s guards can be rebased on this call and hold here (those but the
    /// ones rooted at held objects and builtins, where `held_rooted_added`): every argument
    /// a guard reads through has a source, every object a guard is rooted at lives (kept in
    /// `held`), and what the guards read holds now where it can be read.
    fn summary_fits(
        &self,
        summary: &Summary,
        function: &Bound<'py, PyAny>,
        args: &[Vid],
        argument_sources: &[Option<SourceId>],
        held_rooted_added: bool,
        held: &mut Vec<Bound<'py, PyAny>>,
    ) -> bool {
        let py = self.py;
        // Guards rooted at held objects and builtins that a replay in this translation added
        // already are not made nor read again.
        let guards = || {
            summary
                .guards
                .iter()
                .filter(move |guard| !(held_rooted_added && guard.is_held_rooted()))
        };
        // A guard on an argument itself (its type, its value) first, the cheapest to ask:
        // another summary of the function may fit it.
        let on_argument = |guard: &SummaryGuard| match (&guard.path.root, guard.path.steps.as_slice()) {
            (Root::Argument(i), []) if guard.others.is_empty() => Some(*i),
            _ => None,
        };
        for guard in guards() {
            if let Some(i) = on_argument(guard) {
                if !self
                    .argument_object(args[i])
                    .is_some_and(|object| value_holds(py, &guard.check, Some(object)))
                {
                    return false;
                }
            }
        }
        // Every argument a guard reads through must have a source here, every object must
        // live.
        for SummaryGuard { path, others, .. } in guards() {
            let mut rooted = |p: &Path| match &p.root {
                Root::Argument(i) => argument_sources[*i].is_some(),
                Root::Held(pin) => pin.object(py).is_some_and(|object| {
                    held.push(object);
                    true
                }),
                _ => true,
            };
            if !rooted(path) || !others.iter().all(&mut rooted) {
                return false;
            }
        }
        // What the guards read, read now where it can be (the objects the call would read):
        // a summary whose guards fail there is not replayed, as its failure at the end
        // (`replayed_hold`) would make the whole translation simulate again.
        for guard in guards() {
            if !guard.others.is_empty() || on_argument(guard).is_some() {
                continue;
            }
            if let Some(value) = self.path_value(&guard.path, function, args) {
                if !value_holds(py, &guard.check, value.as_ref()) {
                    return false;
                }
            }
        }
        true
    }

    /// The result a summary gives: its constant, or its objects made again (`classes`: its
    /// instances', in order, alive) holding the frame's objects (`sourced`: each one's
    /// source and object, in order).
    fn given(
        &mut self,
        given: &Given,
        classes: &[Bound<'py, PyAny>],
        sourced: Vec<(SourceId, Bound<'py, PyAny>)>,
    ) -> Vid {
        let (objects, result) = match given {
            Given::Constant(constant) => return self.constant(constant.bind(self.py)),
            Given::Made { objects, result, .. } => (objects, result),
        };
        let sourced: Vec<Vid> = sourced
            .into_iter()
            .map(|(id, object)| self.value_of_source_id(id, object))
            .collect();
        let mut classes = classes.iter();
        let mut vids: Vec<Vid> = Vec::with_capacity(objects.len());
        let part = |vm: &mut Self, vids: &[Vid], attr: &MadeAttr| match attr {
            MadeAttr::Constant(value) => vm.constant(value.bind(vm.py)),
            MadeAttr::Made(index) => vids[*index],
            MadeAttr::Sourced(index) => sourced[*index],
        };
        for object in objects {
            let part = |vm: &mut Self, attr: &MadeAttr| part(vm, &vids, attr);
            let val = match object {
                MadeObject::Instance { attrs, .. } => Val::Object {
                    class: classes.next().expect("a class per instance").clone(),
                    attrs: attrs
                        .iter()
                        .map(|(name, attr)| (name.clone(), part(self, attr)))
                        .collect(),
                },
                MadeObject::List(items) => Val::List(items.iter().map(|item| part(self, item)).collect()),
                MadeObject::Dict(items) => Val::Dict(
                    items
                        .iter()
                        .map(|(key, value)| (self.constant(key.bind(self.py)), part(self, value)))
                        .collect(),
                ),
                MadeObject::Tuple(items) => Val::Tuple(items.iter().map(|item| part(self, item)).collect()),
            };
            vids.push(self.push_val(val));
        }
        part(self, &vids, result)
    }

    /// `result` as a constant value, as instances, lists, dicts and tuples the recorded
    /// call made (from `first_value` on) holding constant values, the frame's objects and
    /// one another, or as one of the frame's objects; None where it is anything else. A
    /// value from the frame an object holds (a default of the function that made it) is kept
    /// as a constant, its value's guard added to `held_values`; an object of the frame, and
    /// a value of the frame given itself, as its path from the call.
    fn made_result(
        &self,
        result: Vid,
        recording: &Recording<'py>,
        first_value: Vid,
        held_values: &mut Vec<(SourceId, Check)>,
    ) -> Option<Given> {
        let mut walk = MadeWalk {
            recording,
            first_value,
            made: Vec::new(),
            index_of: FxHashMap::default(),
            sourced: Vec::new(),
            sourced_index: FxHashMap::default(),
            held_values,
        };
        let result = match self.val(result) {
            Val::Object { .. } | Val::List(_) | Val::Dict(_) | Val::Tuple(_) => {
                MadeAttr::Made(self.made_object(result, &mut walk, 0)?)
            }
            // A value of the frame given as it was read (a setting, an attribute) is read
            // again through its path, as the simulation had it: a constant guarded on its
            // value would make a later call with another value translate again.
            Val::Obj {
                source: Some(source), ..
            } => self.sourced_part(*source, &mut walk)?,
            _ => self.made_part(result, &mut walk, 0)?,
        };
        Some(match result {
            MadeAttr::Constant(constant) => Given::Constant(constant),
            result => Given::Made {
                objects: walk.made,
                sourced: walk.sourced,
                result,
            },
        })
    }

    fn made_object(&self, vid: Vid, walk: &mut MadeWalk<'_, '_, 'py>, depth: usize) -> Option<usize> {
        if let Some(index) = walk.index_of.get(&vid) {
            return Some(*index);
        }
        if vid < walk.first_value || depth == MAX_MADE_DEPTH {
            return None;
        }
        let object = match self.val(vid) {
            Val::Object { class, attrs } => MadeObject::Instance {
                class: Pin::new(class),
                attrs: attrs
                    .iter()
                    .map(|(name, value)| Some((name.clone(), self.made_part(*value, walk, depth)?)))
                    .collect::<Option<_>>()?,
            },
            Val::List(items) => MadeObject::List(
                items
                    .iter()
                    .map(|item| self.made_part(*item, walk, depth))
                    .collect::<Option<_>>()?,
            ),
            Val::Dict(items) => MadeObject::Dict(
                items
                    .iter()
                    .map(|(key, value)| match self.val(*key) {
                        Val::Obj { obj, source: None } if is_value_type(obj) => {
                            Some((StrongRef::new(obj), self.made_part(*value, walk, depth)?))
                        }
                        _ => None,
                    })
                    .collect::<Option<_>>()?,
            ),
            Val::Tuple(items) => MadeObject::Tuple(
                items
                    .iter()
                    .map(|item| self.made_part(*item, walk, depth))
                    .collect::<Option<_>>()?,
            ),
            _ => return None,
        };
        walk.index_of.insert(vid, walk.made.len());
        walk.made.push(object);
        Some(walk.made.len() - 1)
    }

    /// An attribute or item of a made object: a constant value, another made object, or an
    /// object of the frame (`sourced_part`).
    fn made_part(&self, vid: Vid, walk: &mut MadeWalk<'_, '_, 'py>, depth: usize) -> Option<MadeAttr> {
        Some(match self.val(vid) {
            Val::Obj { obj, source } if is_value_type(obj) => {
                let value = StrongRef::new(obj);
                if let Some(source) = source {
                    walk.held_values
                        .push((*source, Check::Equals(value.clone_ref(self.py))));
                }
                MadeAttr::Constant(value)
            }
            Val::Object { .. } | Val::List(_) | Val::Dict(_) | Val::Tuple(_) => {
                MadeAttr::Made(self.made_object(vid, walk, depth + 1)?)
            }
            Val::Obj {
                source: Some(source), ..
            } => self.sourced_part(*source, walk)?,
            _ => return None,
        })
    }

    /// The object of the frame at `source`, as its path from the call (one the guards'
    /// `path_value` reads while translating: a replay reads it so).
    fn sourced_part(&self, source: SourceId, walk: &mut MadeWalk<'_, '_, 'py>) -> Option<MadeAttr> {
        if let Some(index) = walk.sourced_index.get(&source) {
            return Some(MadeAttr::Sourced(*index));
        }
        let path = self.path_of(source, walk.recording, false)?;
        let readable = !matches!(path.root, Root::Builtin(_))
            && path
                .steps
                .iter()
                .all(|step| !matches!(step, Step::OwnAttr(_) | Step::Called));
        if !readable {
            return None;
        }
        walk.sourced_index.insert(source, walk.sourced.len());
        walk.sourced.push(path);
        Some(MadeAttr::Sourced(walk.sourced.len() - 1))
    }

    /// What `path` reads from this call (None inside: absent), where it can be read while
    /// translating: from the function, an argument or a held object, through attributes and
    /// items, as the guards read them; None where it cannot (a call, an own attribute, a
    /// builtin the frame's globals may shadow).
    fn path_value(
        &self,
        path: &Path,
        function: &Bound<'py, PyAny>,
        args: &[Vid],
    ) -> Option<Option<Bound<'py, PyAny>>> {
        let py = self.py;
        let mut value = match &path.root {
            Root::Function => function.clone(),
            Root::Argument(i) => self.argument_object(args[*i])?.clone(),
            Root::Held(pin) => pin.object(py)?,
            Root::Builtin(_) => return None,
        };
        for step in &path.steps {
            let next = match step {
                Step::Attr(name) => attr_value(&value, name),
                Step::Item(key) => item_value(&value, key),
                Step::StoredItem(key) => stored_item_value(&value, key),
                Step::OwnAttr(_) | Step::Called => return None,
            };
            match next {
                Some(next) => value = next,
                None => return Some(None),
            }
        }
        Some(Some(value))
    }

    fn rebase(
        &mut self,
        path: &Path,
        function: &Bound<'py, PyAny>,
        source: Option<SourceId>,
        argument_sources: &[Option<SourceId>],
    ) -> SourceId {
        let py = self.py;
        let mut id = match &path.root {
            Root::Function => match source {
                Some(s) => s,
                None => self.intern(Source::Held(StrongRef::new(function))),
            },
            Root::Argument(i) => argument_sources[*i].expect("an argument checked to have a source"),
            // The source this translation pins the object under, where one does.
            Root::Held(pin) => match (self.pinned_source(pin.address()), pin.object(py)) {
                (Some(pinned), _) => pinned,
                (None, Some(object)) => self.intern(Source::Held(StrongRef::new(&object))),
                (None, None) => unreachable!("a summary's objects are checked alive first"),
            },
            Root::Builtin(name) => self.intern(Source::Builtin(name.clone_ref(py))),
        };
        for step in &path.steps {
            id = self.intern(match step {
                Step::Attr(name) => Source::Attr(id, name.clone_ref(py)),
                Step::OwnAttr(name) => Source::OwnAttr(id, name.clone_ref(py)),
                Step::Item(key) => Source::Item(id, key.clone_ref(py)),
                Step::StoredItem(key) => Source::StoredItem(id, key.clone_ref(py)),
                Step::Called => Source::Called(id),
            });
        }
        id
    }

    /// Every guard the recorded call rests on (and `held_values`, the guards its result
    /// needs), as paths from the call; None where one reads something else of the frame (or
    /// compares sources).
    fn summary_guards(
        &self,
        recording: &Recording<'py>,
        log: &SummaryLog,
        held_values: &[(SourceId, Check)],
    ) -> Option<Vec<SummaryGuard>> {
        let py = self.py;
        let mut read: rustc_hash::FxHashSet<SourceId> = log.reads.iter().copied().collect();
        read.extend(recording.argument_sources.iter().flatten());
        read.extend(recording.function_source);
        // The guards of the sources read, through where each source's guards are (a long
        // translation has thousands; a call reads few sources), in the guards' order.
        let mut read_guards: Vec<usize> = read
            .iter()
            .flat_map(|source| self.guard_positions.of_source(*source))
            .map(|index| *index as usize)
            .collect();
        read_guards.sort_unstable();
        // A guard relating the frame's sources made before the call (its graph inputs are
        // distinct objects) is not one it rests on: it compared nothing of theirs (a
        // comparison it made is among its own requests).
        let kept = read_guards
            .into_iter()
            .map(|index| &self.guards[index])
            .filter(|g| !matches!(g.check, Check::SameAs(_) | Check::Distinct(_)));
        // A tensor argument's type and meta are its check in the summary (`argument_check`),
        // made again on the new call's argument: its guards of them here are not.
        let tensor_sources: Vec<SourceId> = recording
            .args
            .iter()
            .zip(&recording.argument_sources)
            .filter_map(|(arg, source)| source.filter(|_| self.tensor_argument(*arg).is_some()))
            .collect();
        // The guards made before the call first, as they were made (a pin before the guards
        // on what it pins).
        let all = kept
            .map(|g| (g.source, &g.check))
            .chain(log.requests.iter().map(|(s, c)| (*s, c)))
            .chain(held_values.iter().map(|(s, c)| (*s, c)))
            .filter(|(s, c)| {
                !(tensor_sources.contains(s) && matches!(c, Check::Type(_) | Check::Tensor { .. }))
            });
        let mut guards: Vec<SummaryGuard> = Vec::new();
        let mut seen: FxHashMap<SourceId, smallvec::SmallVec<[&Check; 2]>> = FxHashMap::default();
        for (source, check) in all {
            let same = seen.entry(source).or_default();
            if same.iter().any(|c| c.same(check)) {
                continue;
            }
            same.push(check);
            let related: &[SourceId] = match check {
                Check::SameAs(other) => std::slice::from_ref(other),
                Check::Distinct(others) => others,
                _ => &[],
            };
            let path_of = |s: SourceId| self.path_of(s, recording, false);
            guards.push(SummaryGuard {
                path: path_of(source)?,
                check: check.clone_ref(py),
                others: related.iter().map(|s| path_of(*s)).collect::<Option<_>>()?,
            });
        }
        Some(guards)
    }

    /// `source` as a path from the recorded call: its function, an argument, a builtin, or
    /// (for a parent: the child's guard is on that object) an object pinned by identity.
    fn path_of(&self, source: SourceId, recording: &Recording<'py>, is_parent: bool) -> Option<Path> {
        let py = self.py;
        let root = |root| {
            Some(Path {
                root,
                steps: Vec::new(),
            })
        };
        if is_parent {
            if let Some(object) = self.identity_pin(source) {
                return root(Root::Held(object.clone_ref(py)));
            }
        }
        if recording.function_source == Some(source) {
            return root(Root::Function);
        }
        if let Some(i) = recording.argument_sources.iter().position(|s| *s == Some(source)) {
            return root(Root::Argument(i));
        }
        let (parent, step) = match &self.sources.sources[source] {
            Source::Attr(parent, name) => (*parent, Step::Attr(name.clone_ref(py))),
            Source::OwnAttr(parent, name) => (*parent, Step::OwnAttr(name.clone_ref(py))),
            Source::Item(parent, key) => (*parent, Step::Item(key.clone_ref(py))),
            Source::StoredItem(parent, key) => (*parent, Step::StoredItem(key.clone_ref(py))),
            Source::Called(parent) => (*parent, Step::Called),
            Source::Held(object) => return root(Root::Held(Pin::new(&object.bind(py)))),
            Source::Builtin(name) => return root(Root::Builtin(name.clone_ref(py))),
            Source::Argument(_) | Source::Free(_) | Source::Global(_) => return None,
        };
        let mut path = self.path_of(parent, recording, true)?;
        path.steps.push(step);
        Some(path)
    }

    /// Whether a call with `arg` may be summarized: a tensor, an object from the frame, a
    /// constant value (not a list the translation made, a function).
    fn summarizable(&self, arg: Vid) -> bool {
        match self.val(arg) {
            Val::Tensor { .. } | Val::Obj { source: Some(_), .. } => true,
            Val::Obj { obj, source: None } => is_value_type(obj),
            _ => false,
        }
    }

    /// What a summary keeps of an argument (`summarizable`): a check of a constant's value,
    /// of a tensor's type (and meta, where the call read them: `meta_read`), or None for
    /// another object from the frame. A tensor from the frame is one whether the translation
    /// made it a graph input yet or not.
    fn argument_check(&self, arg: Vid, meta_read: &rustc_hash::FxHashSet<Sym>) -> PyResult<Option<Check>> {
        if let Val::Obj { obj, source: None } = self.val(arg) {
            return Ok(Some(Check::Equals(StrongRef::new(obj))));
        }
        let Some((tensor, sym)) = self.tensor_argument(arg) else {
            return Ok(None);
        };
        Ok(Some(match sym {
            Some(sym) if meta_read.contains(&sym) => self.backend.tensor_check(tensor)?,
            _ => Check::Type(Pin::of_type(&tensor.get_type().into_any())),
        }))
    }

    /// The tensor `arg` is (one the graph made or takes, or one from the frame not made a
    /// graph input yet), with its graph symbol where it has one.
    fn tensor_argument(&self, arg: Vid) -> Option<(&Bound<'py, PyAny>, Option<Sym>)> {
        match self.val(arg) {
            Val::Tensor { sym, example } => Some((example, Some(*sym))),
            Val::Obj { obj, source: Some(s) } if self.backend.is_tensor(obj) => {
                Some((obj, self.graph.inputs.iter().position(|input| input == s)))
            }
            _ => None,
        }
    }

    /// The Python object an argument's checks are evaluated on: a tensor's example, an
    /// object's self.
    fn argument_object(&self, arg: Vid) -> Option<&Bound<'py, PyAny>> {
        match self.val(arg) {
            Val::Tensor { example, .. } => Some(example),
            Val::Obj { obj, .. } => Some(obj),
            _ => None,
        }
    }

    /// Per argument, the first that is the same object.
    fn aliases(&self, args: &[Vid]) -> Vec<usize> {
        let object = |vid: Vid| {
            self.argument_object(vid)
                .map_or(std::ptr::null_mut(), |o| o.as_ptr())
        };
        args.iter()
            .enumerate()
            .map(|(i, a)| {
                args[..i]
                    .iter()
                    .position(|b| object(*b) == object(*a))
                    .unwrap_or(i)
            })
            .collect()
    }

    /// Notes, while a library call is recorded, that it read more of the tensor `vid` than
    /// its type.
    pub(super) fn tensor_meta_read(&mut self, vid: Vid) {
        if let Val::Tensor { sym, .. } = &self.values[vid] {
            for recording in &mut self.recording {
                recording.meta_read.insert(*sym);
            }
        }
    }

    /// The source a value came from (a tensor input's, found by its value).
    fn source_of(&self, vid: Vid) -> Option<SourceId> {
        match self.val(vid) {
            Val::Obj { source, .. } => *source,
            Val::Tensor { .. } => self.by_source.iter().find(|(_, v)| **v == vid).map(|(s, _)| *s),
            _ => None,
        }
    }

    /// Whether the translation has changed nothing of the frame's objects so far (what a
    /// library call reads is then what the frame holds), and handles no exception.
    fn nothing_pending(&self) -> bool {
        self.mutated
            .keys()
            .all(|address| self.resume_box == Some(*address))
            && self.stored_attrs.is_empty()
            && self.stored_globals.is_empty()
            && self.exc_stack.is_empty()
    }

    /// What a pure call leaves as it was beside the values (`changed_since`): the graph's
    /// operations (a tensor argument made a graph input by its reading is not a change: the
    /// first operation on it would make it one), a break's guards, breaks seen inside.
    fn graph_marks(&self) -> [usize; 3] {
        [
            self.graph.nodes.len(),
            self.break_guards.len(),
            self.seen_breaks.len(),
        ]
    }

    /// Notes, while a library call is recorded, that a function it inlines closes over the
    /// translation's cell `cell`. A cell of a function inlined before (a dataclass's
    /// `__init__` called again) that holds what the function's holds, the translation having
    /// stored nothing there, is read as the function's: its contents' source.
    pub(super) fn closure_cell_read(&mut self, cell: usize) {
        if self.recording.is_empty() {
            return;
        }
        if let Some(&cell_source) = self.outside_cells.get(&cell) {
            let contents = self.intern(Source::Attr(cell_source, self.name_ref("cell_contents")));
            let read = self.by_source.get(&contents).copied();
            if let (Some(read), Some(holds)) = (read, self.cells[cell]) {
                if read == holds {
                    for recording in &mut self.recording {
                        recording.read(contents, read);
                    }
                    return;
                }
            }
        }
        for recording in &mut self.recording {
            recording.cell_read(cell);
        }
    }
}

/// The summaries of `function` in `scope`'s session (shared: looked at outside the lock).
fn found_summaries(scope: SummaryScope, function: &Bound<'_, PyAny>) -> Vec<Arc<Summary>> {
    let store = STORE.lock();
    match store.as_ref() {
        Some(store) if store.epoch == scope.epoch && scope.epoch == EPOCH.load(Ordering::Relaxed) => store
            .summaries
            .get(&(scope.owner, function.as_ptr() as usize))
            // The newest first: one recorded after another's guards failed supersedes it.
            .map(|found| {
                found
                    .iter()
                    .rev()
                    .filter(|s| s.function.is(function))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

fn store_summary(scope: SummaryScope, summary: Summary) {
    let key = (scope.owner, summary.function.as_ptr() as usize);
    let mut dropped = None;
    let mut slot = STORE.lock();
    let (store, mut cleared) = Store::of_epoch(&mut slot, scope.epoch);
    if store.count >= MAX_SUMMARIES {
        cleared = Some(std::mem::take(store));
        store.epoch = scope.epoch;
    }
    let found = store.summaries.entry(key).or_default();
    if found.len() >= MAX_PER_FUNCTION {
        dropped = Some(found.remove(0));
        store.count -= 1;
    }
    found.push(Arc::new(summary));
    store.count += 1;
    drop(slot);
    drop((dropped, cleared));
}
