//! The VM's values by id, in chunks that the snapshots taken of them share: a snapshot
//! copies the chunks' pointers, not the values, and a chunk is copied when it is first
//! changed after one (the VM takes a snapshot before each instruction of the translated
//! frame, and changes few values between two).

use std::ops::{Index, IndexMut};
use std::rc::Rc;

use super::value::Val;

/// Values per chunk. The first value added after a snapshot copies the last chunk (inlined
/// frames take one before each call they could resume at): 64 made that copy a thirtieth
/// of a first call with breaks, more than the pointers 16 adds to each snapshot.
const CHUNK: usize = 16;

#[derive(Clone, Default)]
pub struct Values<'py> {
    chunks: Vec<Rc<Vec<Val<'py>>>>,
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
        if self.len % CHUNK == 0 {
            self.chunks.push(Rc::new(Vec::with_capacity(CHUNK)));
        }
        let last = self.chunks.last_mut().expect("a chunk has room");
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
        self.chunks.get(index / CHUNK)?.get(index % CHUNK)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Val<'py>> {
        self.chunks.iter().flat_map(|chunk| chunk.iter())
    }

    /// The ids of the values that may differ between `self` and `other` (a snapshot of an
    /// earlier state), among the first `other.len()`: those of the chunks not shared.
    pub fn maybe_changed<'a>(&'a self, other: &'a Values<'py>) -> impl Iterator<Item = usize> + use<'a, 'py> {
        other
            .chunks
            .iter()
            .zip(&self.chunks)
            .enumerate()
            .filter(|(_, (old, new))| !Rc::ptr_eq(old, new))
            .flat_map(move |(index, (old, _))| index * CHUNK..index * CHUNK + old.len())
    }
}

impl<'py> Index<usize> for Values<'py> {
    type Output = Val<'py>;

    fn index(&self, index: usize) -> &Val<'py> {
        &self.chunks[index / CHUNK][index % CHUNK]
    }
}

impl<'py> IndexMut<usize> for Values<'py> {
    /// The value, in a chunk of this state's own (copied if a snapshot shares it).
    fn index_mut(&mut self, index: usize) -> &mut Val<'py> {
        &mut Rc::make_mut(&mut self.chunks[index / CHUNK])[index % CHUNK]
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
    use super::{Val, Values, CHUNK};

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
}
