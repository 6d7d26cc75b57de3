//! What the VM logs while a library call is recorded for a summary (`summaries`): kept in
//! the VM, as guards are asked for and sources read everywhere a call runs.

use pyo3::prelude::*;
use rustc_hash::FxHashSet;

use super::super::guard::check::Check;
use super::super::guard::source::SourceId;
use super::super::model::value::{Sym, Vid};

/// Whose library call summaries a translation uses and adds to.
#[derive(Clone, Copy)]
pub struct SummaryScope {
    pub owner: u64,
    pub epoch: u64,
    /// Whether found summaries are used (not after one's guards failed on the frame).
    pub replay: bool,
}

/// The log of the library call being recorded.
pub struct SummaryLog {
    /// Sources it read whose values the translation had made before it began: their
    /// guards, made then, are among what it rests on.
    pub reads: Vec<SourceId>,
    /// The first value made after it began.
    first_value: Vid,
    /// Guards asked for while it ran, whether new or not.
    pub requests: Vec<(SourceId, Check)>,
    /// The tensors (by symbol) of which it read more than their type.
    pub meta_read: FxHashSet<Sym>,
    /// The cells the translation had made before it began: a function it inlines over one
    /// of them reads what the translation may have stored there, not what the frame holds.
    first_cell: usize,
    pub reads_earlier_cells: bool,
}

impl SummaryLog {
    pub fn new(first_value: Vid, first_cell: usize) -> Self {
        SummaryLog {
            reads: Vec::new(),
            first_value,
            requests: Vec::new(),
            meta_read: FxHashSet::default(),
            first_cell,
            reads_earlier_cells: false,
        }
    }

    /// The first value made after the call began: those from it on are the call's.
    pub fn first_value(&self) -> Vid {
        self.first_value
    }

    pub fn request(&mut self, py: Python<'_>, source: SourceId, check: &Check) {
        self.requests.push((source, check.clone_ref(py)));
    }

    /// `source` read, its value `vid` made already.
    pub fn read(&mut self, source: SourceId, vid: Vid) {
        if vid < self.first_value {
            self.reads.push(source);
        }
    }

    /// A function the call inlines closes over the translation's cell `cell`.
    pub fn cell_read(&mut self, cell: usize) {
        self.reads_earlier_cells |= cell < self.first_cell;
    }
}
