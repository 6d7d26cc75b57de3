//! Snapshots of the VM before each top-frame instruction, and what changed since one.

use super::*;

pub(super) use super::kept::Snapshot;

impl<'py> Snapshot<'py> {
    pub(super) fn take(vm: &Vm<'py, '_>) -> Self {
        Snapshot {
            values: vm.values.clone(),
            cells: vm.cells.clone(),
            graph: vm.graph.clone(),
            side_effects: vm.side_effects.len(),
            stored_globals: vm.stored_globals.len(),
            stored_attrs: vm.stored_attrs.len(),
            mutated: vm.mutated.clone(),
            frame_dicts: vm.frame_dicts.clone(),
            dict_histories: vm.dict_histories.clone(),
            caught_exceptions: vm.caught_exceptions.clone(),
            seen_raised: vm.seen_raised.clone(),
            guard_journal: vm.guard_journal.len(),
            sourced: vm.sourced.len(),
            generator_resumes: vm.generator_resumes.len(),
        }
    }

    /// Back to the snapshot where the instruction breaks: the guards it added go too (the
    /// generated code runs the instruction as it is, whatever the values it read; a guard
    /// of theirs would only make calls miss the cache), as do the sources it met.
    pub(super) fn restore_at_break(self, vm: &mut Vm<'py, '_>) {
        if vm.guard_journal.len() > self.guard_journal {
            SourceTable::undo_guards(
                &mut vm.guards,
                &mut vm.guard_journal,
                &mut vm.guard_positions,
                self.guard_journal,
            );
            vm.pins = None;
        }
        for (source, check) in std::mem::take(&mut vm.break_guards) {
            vm.add_guard(source, check);
        }
        vm.sourced.truncate(self.sourced);
        self.restore(vm);
        let values = vm.values.len();
        vm.by_source.retain(|_, vid| *vid < values);
    }

    /// The top-frame instruction that entered the outermost graph region open then.
    pub(super) fn open_region_pc(&self) -> Option<usize> {
        self.graph.open_region_pc()
    }

    pub(super) fn restore(self, vm: &mut Vm<'py, '_>) {
        vm.replays.clear();
        vm.restore_generators(self.generator_resumes);
        vm.values = self.values;
        vm.made_at.truncate(vm.values.len());
        vm.cells = self.cells;
        // Cells made since (an inlined function's closure) are gone.
        let cells = vm.cells.len();
        vm.cell_objects.retain(|_, cell| *cell < cells);
        vm.outside_cells.retain(|cell, _| *cell < cells);
        vm.graph = self.graph;
        vm.side_effects.truncate(self.side_effects);
        vm.stored_globals.truncate(self.stored_globals);
        vm.stored_attrs.truncate(self.stored_attrs);
        vm.mutated = self.mutated;
        vm.frame_dicts = self.frame_dicts;
        vm.dict_histories = self.dict_histories;
        vm.caught_exceptions = self.caught_exceptions;
        vm.seen_raised = self.seen_raised;
    }
}

impl<'py, 'b> Vm<'py, 'b> {
    /// Puts back the generators resumed since the `since`th resumption as they were then:
    /// the state a break, a raise or a rewind goes back to holds them (their state moves in
    /// place, shared by every snapshot), and the generated code hands them on from there.
    pub(super) fn restore_generators(&self, since: usize) {
        for (state, before) in self.generator_resumes[since..].iter().rev() {
            if let Ok(mut state) = state.try_borrow_mut() {
                *state = before.clone();
            }
        }
    }

    /// Where each generator the translation holds is suspended: `Val::Generator` shares its
    /// state (a `Snapshot` holds the same one).
    pub(super) fn generator_positions(&self) -> Vec<(Vid, usize, bool)> {
        self.values
            .generators()
            .iter()
            .filter_map(|vid| match &self.values[*vid] {
                Val::Generator(state) => state
                    .try_borrow()
                    .ok()
                    .map(|state| (*vid, state.frame.pc, state.finished)),
                _ => None,
            })
            .collect()
    }

    /// Whether the translation changed, since `before`, a value that existed then: a
    /// container's items, an object's attributes, an iterator's position, a tensor's symbol
    /// (an in-place operation), a cell, or anything outside (a side effect, a frame
    /// container's first change). `inputs`: the graph's inputs then (the symbols of later
    /// operations move up as inputs are added); a value of the frame realized as an input or
    /// a number specialized is the same value.
    pub(super) fn changed_since(
        &self,
        before: &Snapshot<'py>,
        inputs: usize,
        generators: &[(Vid, usize, bool)],
    ) -> bool {
        let added = self.graph.inputs.len() - inputs;
        let moved = |sym: Sym| if sym >= inputs { sym + added } else { sym };
        let same = |old: &Val<'py>, new: &Val<'py>| kind_of(old).unchanged(old, new, &moved);
        self.side_effects.len() != before.side_effects
            || self.stored_globals.len() != before.stored_globals
            || self.stored_attrs.len() != before.stored_attrs
            || self.mutated != before.mutated
            || self.dict_histories != before.dict_histories
            || before
                .cells
                .iter()
                .enumerate()
                .any(|(i, cell)| self.cells[i] != *cell)
            || self
                .values
                .maybe_changed(&before.values)
                .any(|vid| !same(&before.values[vid], &self.values[vid]))
            || self
                .generator_positions()
                .iter()
                .take(generators.len())
                .ne(generators.iter())
    }
}
