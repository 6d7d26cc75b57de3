//! The VM's values by id, in chunks that the snapshots taken of them share, and the chunks
//! in groups that the snapshots share too: a snapshot copies the groups' pointers, not the
//! values, and a group (its chunks' pointers) and a chunk are copied when first changed
//! after one (the VM takes a snapshot before each instruction of the translated frame and
//! before each call an inlined frame could resume at, and changes few values between two).

use std::ops::{Index, IndexMut};
use std::rc::Rc;

use super::value::Val;

/// Values per chunk. The first value added after a snapshot copies the last chunk (inlined
/// frames take one before each call they could resume at): 64 made that copy a thirtieth
/// of a first call with breaks.
const CHUNK: usize = 16;
/// Chunks per group. A snapshot copies a pointer per group: with one per chunk, copying
/// them (and dropping the copies) was a tenth of a simulated loop's instructions once a
/// translation held thousands of values; the first change after a snapshot copies a
/// group's pointers as well as the chunk.
const GROUP: usize = 32;
const GROUP_VALUES: usize = CHUNK * GROUP;

type Chunk<'py> = Rc<Vec<Val<'py>>>;

#[derive(Clone, Default)]
pub struct Values<'py> {
    groups: Vec<Rc<Vec<Chunk<'py>>>>,
    len: usize,
}

impl<'py> Values<'py> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, value: Val<'py>) {
        if self.len % GROUP_VALUES == 0 {
            self.groups.push(Rc::new(Vec::with_capacity(GROUP)));
        }
        let group = Rc::make_mut(self.groups.last_mut().expect("a group has room"));
        if self.len % CHUNK == 0 {
            group.push(Rc::new(Vec::with_capacity(CHUNK)));
        }
        let last = group.last_mut().expect("a chunk has room");
        if Rc::get_mut(last).is_none() {
            // Shared with a snapshot: copied with the chunk's full capacity (a plain clone
            // has only its length's, and the push would grow it again).
            let mut copy = Vec::with_capacity(CHUNK);
            copy.extend(last.iter().cloned());
            *last = Rc::new(copy);
        }
        Rc::get_mut(last).expect("not shared").push(value);
        self.len += 1;
    }

    pub fn get(&self, index: usize) -> Option<&Val<'py>> {
        self.groups
            .get(index / GROUP_VALUES)?
            .get(index % GROUP_VALUES / CHUNK)?
            .get(index % CHUNK)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Val<'py>> {
        self.groups
            .iter()
            .flat_map(|group| group.iter())
            .flat_map(|chunk| chunk.iter())
    }

    /// The ids of the values that may differ between `self` and `other` (a snapshot of an
    /// earlier state), among the first `other.len()`: those of the chunks not shared.
    pub fn maybe_changed<'a>(&'a self, other: &'a Values<'py>) -> impl Iterator<Item = usize> + use<'a, 'py> {
        other
            .groups
            .iter()
            .zip(&self.groups)
            .enumerate()
            .filter(|(_, (old, new))| !Rc::ptr_eq(old, new))
            .flat_map(|(group, (old, new))| {
                old.iter()
                    .zip(new.iter())
                    .enumerate()
                    .filter(|(_, (old, new))| !Rc::ptr_eq(old, new))
                    .flat_map(move |(chunk, (old, _))| {
                        let first = group * GROUP_VALUES + chunk * CHUNK;
                        first..first + old.len()
                    })
            })
    }
}

impl<'py> Index<usize> for Values<'py> {
    type Output = Val<'py>;

    fn index(&self, index: usize) -> &Val<'py> {
        &self.groups[index / GROUP_VALUES][index % GROUP_VALUES / CHUNK][index % CHUNK]
    }
}

impl<'py> IndexMut<usize> for Values<'py> {
    /// The value, in a group and a chunk of this state's own (copied if a snapshot shares
    /// them).
    fn index_mut(&mut self, index: usize) -> &mut Val<'py> {
        let group = Rc::make_mut(&mut self.groups[index / GROUP_VALUES]);
        &mut Rc::make_mut(&mut group[index % GROUP_VALUES / CHUNK])[index % CHUNK]
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
        // Only the changed chunks are looked at: the first, and the last (pushed into).
        let changed: Vec<usize> = values.maybe_changed(&before).collect();
        assert_eq!(changed.len(), CHUNK + 3);
        assert!(changed.contains(&5) && !changed.contains(&CHUNK));
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
        // The chunk changed and the last one, pushed into; no other of their groups.
        let changed: Vec<usize> = values.maybe_changed(&before).collect();
        let first = GROUP_VALUES + CHUNK * 3;
        let last = GROUP_VALUES * 2 + CHUNK;
        let expected: Vec<usize> = (first..first + CHUNK).chain(last..last + 1).collect();
        assert_eq!(changed, expected);
    }
}
