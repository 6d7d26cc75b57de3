//! Which frames the SOT callback never sees: files under registered prefixes,
//! except codes registered as never skipped.

use std::collections::HashMap;

/// File-name prefixes as a byte trie: a lookup costs one step per byte of the
/// name, however many prefixes are registered.
#[derive(Default)]
pub struct PrefixTrie {
    nodes: Vec<TrieNode>,
}

#[derive(Default)]
struct TrieNode {
    children: HashMap<u8, usize>,
    /// A registered prefix ends here.
    terminal: bool,
}

impl PrefixTrie {
    pub fn insert(&mut self, prefix: &str) {
        if self.nodes.is_empty() {
            self.nodes.push(TrieNode::default());
        }
        let mut node = 0;
        for byte in prefix.bytes() {
            node = match self.nodes[node].children.get(&byte) {
                Some(&child) => child,
                None => {
                    self.nodes.push(TrieNode::default());
                    let child = self.nodes.len() - 1;
                    self.nodes[node].children.insert(byte, child);
                    child
                }
            };
        }
        self.nodes[node].terminal = true;
    }

    /// Whether some registered prefix starts `name`.
    pub fn matches(&self, name: &str) -> bool {
        let Some(root) = self.nodes.first() else {
            return false;
        };
        if root.terminal {
            return true;
        }
        let mut node = 0;
        for byte in name.bytes() {
            match self.nodes[node].children.get(&byte) {
                Some(&child) if self.nodes[child].terminal => return true,
                Some(&child) => node = child,
                None => return false,
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::PrefixTrie;

    #[test]
    fn matches_exactly_the_names_under_a_prefix() {
        let mut trie = PrefixTrie::default();
        assert!(!trie.matches("/usr/lib/python3/os.py"));
        trie.insert("/usr/lib/python3/");
        trie.insert("<frozen importlib");
        trie.insert("/opt/a");
        assert!(trie.matches("/usr/lib/python3/os.py"));
        assert!(trie.matches("<frozen importlib._bootstrap>"));
        assert!(trie.matches("/opt/a"));
        assert!(trie.matches("/opt/abc.py"));
        assert!(!trie.matches("/usr/lib/python"));
        assert!(!trie.matches("/usr/lib/python3"));
        assert!(!trie.matches("/opt/"));
        assert!(!trie.matches("/home/me/model.py"));
        trie.insert("");
        assert!(trie.matches("anything"));
    }
}
