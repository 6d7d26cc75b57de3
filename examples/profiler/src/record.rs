//! What one thread records from observer events: the frames running now, the
//! totals of each code object, and a call tree whose nodes hold exclusive time
//! (the collapsed stacks of a flame graph). A record is also what the threads'
//! records are added up into.

use std::time::{Duration, Instant};

use pyo3::prelude::*;
use rustc_hash::FxHashMap;

/// A code object's address: stable, as the record keeps the code alive.
type CodeKey = usize;

fn key(code: &Bound<'_, PyAny>) -> CodeKey {
    code.as_ptr() as CodeKey
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

pub struct CodeTotals {
    pub code: Py<PyAny>,
    /// The code this one ran in place of, when a hook replaced it.
    pub original: Option<Py<PyAny>>,
    pub calls: u64,
    /// Calls made while no frame of the code was running already (cProfile's primitive calls).
    pub primitive_calls: u64,
    pub tottime_ns: u64,
    pub cumtime_ns: u64,
    /// Frames of this code on the stack: only the outermost one adds to `cumtime_ns`,
    /// so recursion is counted once.
    depth: u32,
}

impl CodeTotals {
    fn new(code: Py<PyAny>) -> Self {
        Self {
            code,
            original: None,
            calls: 0,
            primitive_calls: 0,
            tottime_ns: 0,
            cumtime_ns: 0,
            depth: 0,
        }
    }
}

/// A call path: the frames of `code` called from the path `parent` (None: outermost).
pub struct Node {
    pub parent: Option<usize>,
    /// Index in [`ThreadRecord::codes`].
    pub code: usize,
    /// Exclusive time spent on this path.
    pub self_ns: u64,
}

struct Running {
    node: usize,
    start: Instant,
    /// Inclusive time of the frames it called (or resumed) that have finished.
    children_ns: u64,
}

#[derive(Default)]
pub struct ThreadRecord {
    pub codes: Vec<CodeTotals>,
    code_index: FxHashMap<CodeKey, usize>,
    /// Parents before children.
    pub nodes: Vec<Node>,
    children: FxHashMap<(Option<usize>, CodeKey), usize>,
    stack: Vec<Running>,
}

impl ThreadRecord {
    /// A frame of `code` starts; `original` is the code it replaces, if a hook replaced one.
    pub fn call(&mut self, code: &Bound<'_, PyAny>, original: Option<&Bound<'_, PyAny>>, now: Instant) {
        let index = self.push(code, now);
        let totals = &mut self.codes[index];
        totals.calls += 1;
        if totals.depth == 1 {
            totals.primitive_calls += 1;
        }
        if totals.original.is_none() {
            if let Some(original) = original.filter(|original| !original.is(code)) {
                totals.original = Some(original.clone().unbind());
            }
        }
    }

    /// A suspended generator or coroutine frame of `code` runs again: not a new call.
    pub fn resume(&mut self, code: &Bound<'_, PyAny>, now: Instant) {
        self.push(code, now);
    }

    /// A frame of `code` returned, raised or yielded. An exit that does not match
    /// the top of the stack (a frame that began before profiling) is ignored.
    pub fn exit(&mut self, code: &Bound<'_, PyAny>, now: Instant) {
        let matches = self
            .stack
            .last()
            .is_some_and(|top| self.codes[self.nodes[top.node].code].code.is(code));
        if matches {
            self.pop(now);
        }
    }

    /// Ends every frame still running as if it had returned at `now` (profiling stops).
    pub fn finish(&mut self, now: Instant) {
        while !self.stack.is_empty() {
            self.pop(now);
        }
    }

    /// Adds `other`'s totals and call tree to this record's.
    pub fn absorb(&mut self, py: Python<'_>, other: &ThreadRecord) {
        let codes: Vec<usize> = other
            .codes
            .iter()
            .map(|theirs| {
                let index = self.code_index(theirs.code.bind(py));
                let mine = &mut self.codes[index];
                mine.calls += theirs.calls;
                mine.primitive_calls += theirs.primitive_calls;
                mine.tottime_ns += theirs.tottime_ns;
                mine.cumtime_ns += theirs.cumtime_ns;
                if mine.original.is_none() {
                    mine.original = theirs.original.as_ref().map(|original| original.clone_ref(py));
                }
                index
            })
            .collect();
        let mut nodes = Vec::with_capacity(other.nodes.len());
        for theirs in &other.nodes {
            // Parents come first, so theirs.parent is mapped already.
            let parent = theirs.parent.map(|parent| nodes[parent]);
            let code = codes[theirs.code];
            let index = self.node(parent, self.codes[code].code.as_ptr() as CodeKey, code);
            self.nodes[index].self_ns += theirs.self_ns;
            nodes.push(index);
        }
    }

    fn push(&mut self, code: &Bound<'_, PyAny>, now: Instant) -> usize {
        let parent = self.stack.last().map(|top| top.node);
        // One hash lookup on the usual path: the call path is known, and with it the code.
        let node = match self.children.get(&(parent, key(code))) {
            Some(&node) => node,
            None => {
                let index = self.code_index(code);
                self.node(parent, key(code), index)
            }
        };
        let index = self.nodes[node].code;
        self.codes[index].depth += 1;
        self.stack.push(Running {
            node,
            start: now,
            children_ns: 0,
        });
        index
    }

    fn pop(&mut self, now: Instant) {
        let Some(run) = self.stack.pop() else { return };
        let elapsed = nanos(now.saturating_duration_since(run.start));
        let own = elapsed.saturating_sub(run.children_ns);
        let node = &mut self.nodes[run.node];
        node.self_ns += own;
        let totals = &mut self.codes[node.code];
        totals.tottime_ns += own;
        totals.depth -= 1;
        if totals.depth == 0 {
            totals.cumtime_ns += elapsed;
        }
        if let Some(caller) = self.stack.last_mut() {
            caller.children_ns += elapsed;
        }
    }

    fn code_index(&mut self, code: &Bound<'_, PyAny>) -> usize {
        let next = self.codes.len();
        *self.code_index.entry(key(code)).or_insert_with(|| {
            // The strong reference keeps the address from being reused by another code.
            self.codes.push(CodeTotals::new(code.clone().unbind()));
            next
        })
    }

    fn node(&mut self, parent: Option<usize>, code_key: CodeKey, code: usize) -> usize {
        let next = self.nodes.len();
        *self.children.entry((parent, code_key)).or_insert_with(|| {
            self.nodes.push(Node {
                parent,
                code,
                self_ns: 0,
            });
            next
        })
    }
}
