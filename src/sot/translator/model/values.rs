//! The VM's values by id, in chunks that the snapshots taken of them share, and the chunks
//! in groups that the snapshots share too: a snapshot copies the groups' pointers, not the
//! values (the VM takes a snapshot before each instruction of the translated frame and
//! before each call an inlined frame could resume at, and changes few values between two).
//! A value changed after a snapshot copies its chunk (and its group's chunk pointers); a
//! value added goes into the first free slot of the last chunk, shared or not, where no
//! other state has added one there (each slot is written once): only then is the chunk
//! copied, up to what this state holds.

use std::cell::OnceCell;
use std::ops::{Index, IndexMut};
use std::rc::Rc;

use super::value::Val;

/// Values per chunk. A change after a snapshot copies its chunk: 64 made that copy a
/// thirtieth of a first call with breaks.
const CHUNK: usize = 16;
/// Chunks per group. A snapshot copies a pointer per group: with one per chunk, copying
/// them (and dropping the copies) was a tenth of a simulated loop's instructions once a
/// translation held thousands of values; the first new chunk or change after a snapshot
/// copies a group's pointers.
const GROUP: usize = 32;
const GROUP_VALUES: usize = CHUNK * GROUP;

/// A chunk's slots, each written once: the states sharing the chunk read only the slots
/// below their length, so a slot past all of them is free to fill in place.
type Chunk<'py> = Rc<[OnceCell<Val<'py>>; CHUNK]>;

fn empty_chunk<'py>() -> Chunk<'py> {
    Rc::new(std::array::from_fn(|_| OnceCell::new()))
}

/// A new chunk holding `chunk`'s first `count` values.
fn copied<'py>(chunk: &Chunk<'py>, count: usize) -> Chunk<'py> {
    Rc::new(std::array::from_fn(|slot| match slot < count {
        true => chunk[slot].clone(),
        false => OnceCell::new(),
    }))
}

#[derive(Clone, Default)]
pub struct Values<'py> {
    groups: Vec<Rc<Vec<Chunk<'py>>>>,
    len: usize,
    /// The ids of the values made generators, in order: a generator is a value made so
    /// (`push`), never one changed into (so that asking needs no look at every value).
    generators: Vec<usize>,
}

impl<'py> Values<'py> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, value: Val<'py>) {
        if matches!(value, Val::Generator(_)) {
            self.generators.push(self.len);
        }
        if self.len % GROUP_VALUES == 0 {
            self.groups.push(Rc::new(Vec::with_capacity(GROUP)));
        }
        let slot = self.len % CHUNK;
        let group = self.groups.last_mut().expect("a group has room");
        if slot == 0 {
            Rc::make_mut(group).push(empty_chunk());
        }
        let chunk = group.last().expect("a chunk has room");
        if let Err(value) = chunk[slot].set(value) {
            // Another state sharing the chunk added a value here: this state's own copy.
            let mut copy = copied(chunk, slot);
            Rc::get_mut(&mut copy).expect("a new chunk")[slot] = OnceCell::from(value);
            *Rc::make_mut(group).last_mut().expect("a chunk has room") = copy;
        }
        self.len += 1;
    }

    pub fn get(&self, index: usize) -> Option<&Val<'py>> {
        if index >= self.len {
            return None;
        }
        self.groups[index / GROUP_VALUES][index % GROUP_VALUES / CHUNK][index % CHUNK].get()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Val<'py>> {
        // Every chunk but the last is full; the last's slots past `len` are not this state's.
        self.groups
            .iter()
            .flat_map(|group| group.iter())
            .flat_map(|chunk| chunk.iter())
            .take(self.len)
            .map(|slot| slot.get().expect("a value held"))
    }

    /// The ids of the values made generators, in order (one may have changed since).
    pub fn generators(&self) -> &[usize] {
        debug_assert!(
            self.iter()
                .enumerate()
                .filter(|(_, value)| matches!(value, Val::Generator(_)))
                .all(|(vid, _)| self.generators.contains(&vid)),
            "a value was changed into a generator"
        );
        &self.generators
    }

    /// How many of the chunk at `chunk` (its index among all) this state holds.
    fn held_in(&self, chunk: usize) -> usize {
        (self.len - chunk * CHUNK).min(CHUNK)
    }

    /// The ids of the values that may differ between `self` and `other` (a snapshot of an
    /// earlier state), among the first `other.len()`: those of the chunks not shared (a
    /// shared chunk's values below both lengths are the same: a change copies it).
    pub fn maybe_changed<'a>(&'a self, other: &'a Values<'py>) -> impl Iterator<Item = usize> + use<'a, 'py> {
        other
            .groups
            .iter()
            .zip(&self.groups)
            .enumerate()
            .filter(|(_, (old, new))| !Rc::ptr_eq(old, new))
            .flat_map(move |(group, (old, new))| {
                old.iter()
                    .zip(new.iter())
                    .enumerate()
                    .filter(|(_, (old, new))| !Rc::ptr_eq(old, new))
                    .flat_map(move |(chunk, _)| {
                        let at = group * GROUP + chunk;
                        let first = at * CHUNK;
                        first..first + other.held_in(at)
                    })
            })
    }
}

impl<'py> Index<usize> for Values<'py> {
    type Output = Val<'py>;

    fn index(&self, index: usize) -> &Val<'py> {
        self.get(index)
            .unwrap_or_else(|| panic!("no value {index} among {}", self.len))
    }
}

impl<'py> IndexMut<usize> for Values<'py> {
    /// The value, in a group and a chunk of this state's own (copied, up to what this state
    /// holds, where a snapshot shares them).
    fn index_mut(&mut self, index: usize) -> &mut Val<'py> {
        assert!(index < self.len, "no value {index} among {}", self.len);
        let at = index / CHUNK;
        let held = self.held_in(at);
        let group = Rc::make_mut(&mut self.groups[index / GROUP_VALUES]);
        let chunk = &mut group[index % GROUP_VALUES / CHUNK];
        if Rc::get_mut(chunk).is_none() {
            *chunk = copied(chunk, held);
        }
        Rc::get_mut(chunk).expect("not shared")[index % CHUNK]
            .get_mut()
            .expect("a value held")
    }
}

impl<'a, 'py> IntoIterator for &'a Values<'py> {
    type Item = &'a Val<'py>;
    type IntoIter = Box<dyn Iterator<Item = &'a Val<'py>> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::{Val, Values, CHUNK, GROUP_VALUES};

    fn nulls(values: &Values<'_>) -> usize {
        values.iter().filter(|v| matches!(v, Val::Null)).count()
    }

    #[test]
    fn a_copy_keeps_its_values_when_the_original_changes() {
        let mut values = Values::default();
        for _ in 0..CHUNK * 2 + 3 {
            values.push(Val::Null);
        }
        let before = values.clone();
        values[5] = Val::Tuple(vec![]);
        values.push(Val::Null);
        assert_eq!((values.len(), before.len()), (CHUNK * 2 + 4, CHUNK * 2 + 3));
        assert_eq!(nulls(&before), CHUNK * 2 + 3);
        assert_eq!(nulls(&values), CHUNK * 2 + 3);
        assert!(matches!(values[5], Val::Tuple(_)) && matches!(before[5], Val::Null));
        // Only the changed chunk is looked at: the last was added to in place.
        let changed: Vec<usize> = values.maybe_changed(&before).collect();
        assert_eq!(changed, (0..CHUNK).collect::<Vec<_>>());
    }

    #[test]
    fn values_added_after_a_copy_go_in_place_until_another_state_adds_there() {
        let mut values = Values::default();
        for _ in 0..CHUNK + 3 {
            values.push(Val::Null);
        }
        let before = values.clone();
        values.push(Val::Tuple(vec![]));
        // Added in place: the copy still shares the chunk and does not see the value.
        assert!(std::rc::Rc::ptr_eq(&values.groups[0][1], &before.groups[0][1]));
        assert_eq!((before.len(), before.get(CHUNK + 3).is_none()), (CHUNK + 3, true));
        assert_eq!(before.iter().count(), CHUNK + 3);
        // The copy adding where the other state did gets a chunk of its own, with its values.
        let mut again = before.clone();
        again.push(Val::Null);
        assert!(!std::rc::Rc::ptr_eq(&again.groups[0][1], &values.groups[0][1]));
        assert!(matches!(again[CHUNK + 3], Val::Null) && matches!(values[CHUNK + 3], Val::Tuple(_)));
        assert_eq!((nulls(&again), nulls(&values)), (CHUNK + 4, CHUNK + 3));
        // A change copies only what the state holds, and the others keep theirs.
        values[CHUNK] = Val::Tuple(vec![]);
        assert!(matches!(before[CHUNK], Val::Null) && matches!(again[CHUNK], Val::Null));
        assert_eq!(
            values.maybe_changed(&before).collect::<Vec<_>>(),
            (CHUNK..CHUNK + 3).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_copy_shares_the_groups_it_did_not_change() {
        let mut values = Values::default();
        for _ in 0..GROUP_VALUES * 2 + CHUNK + 1 {
            values.push(Val::Null);
        }
        let before = values.clone();
        let changed_at = GROUP_VALUES + CHUNK * 3 + 2;
        values[changed_at] = Val::Tuple(vec![]);
        values.push(Val::Null);
        assert!(matches!(values[changed_at], Val::Tuple(_)) && matches!(before[changed_at], Val::Null));
        assert!(matches!(
            values.get(GROUP_VALUES * 2 + CHUNK + 1),
            Some(Val::Null)
        ));
        assert!(before.get(GROUP_VALUES * 2 + CHUNK + 1).is_none());
        assert_eq!(nulls(&before), GROUP_VALUES * 2 + CHUNK + 1);
        assert_eq!(nulls(&values), GROUP_VALUES * 2 + CHUNK + 1);
        // The chunk changed; not the last one, added to in place, nor any other.
        let changed: Vec<usize> = values.maybe_changed(&before).collect();
        let first = GROUP_VALUES + CHUNK * 3;
        assert_eq!(changed, (first..first + CHUNK).collect::<Vec<_>>());
    }
}
