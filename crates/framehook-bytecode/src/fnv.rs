//! The crate's hasher for its small maps and sets (opcode names, instruction indices):
//! FNV-1a. Their keys come from the crate's tables and the code it is given, so SipHash's
//! resistance to chosen keys buys nothing, and it cost a translation more instructions
//! than the lookups themselves (each lowered instruction looks its opcode up by name).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(OFFSET_BASIS)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(PRIME);
        }
    }
}

pub type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;
pub type FnvSet<K> = HashSet<K, BuildHasherDefault<Fnv>>;
