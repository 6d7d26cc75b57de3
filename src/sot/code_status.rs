//! Which codes SOT keeps hooking: a code the callback has left unchanged
//! [`CALLS_BEFORE_GIVING_UP`] times without it being marked as having a graph
//! runs unchanged from then on, with its call subtree unhooked.

/// As in Paddle's eval-frame module.
pub const CALLS_BEFORE_GIVING_UP: u32 = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeStatus {
    /// Called this many times, no graph seen yet.
    Unknown(u32),
    WithGraph,
    WithoutGraph,
}

impl Default for CodeStatus {
    fn default() -> Self {
        Self::Unknown(0)
    }
}

impl CodeStatus {
    const WITH_GRAPH: u32 = u32::MAX - 1;
    const WITHOUT_GRAPH: u32 = u32::MAX;

    /// As one number, for an atomic.
    pub fn to_bits(self) -> u32 {
        match self {
            Self::Unknown(calls) => calls,
            Self::WithGraph => Self::WITH_GRAPH,
            Self::WithoutGraph => Self::WITHOUT_GRAPH,
        }
    }

    pub fn from_bits(bits: u32) -> Self {
        match bits {
            Self::WITH_GRAPH => Self::WithGraph,
            Self::WITHOUT_GRAPH => Self::WithoutGraph,
            calls => Self::Unknown(calls),
        }
    }

    /// Counts one more call; true once the code is known to have no graph.
    pub fn count_call_without_graph(&mut self) -> bool {
        match *self {
            Self::WithoutGraph => return true,
            Self::WithGraph => {}
            Self::Unknown(calls) => {
                *self = if calls + 1 >= CALLS_BEFORE_GIVING_UP {
                    Self::WithoutGraph
                } else {
                    Self::Unknown(calls + 1)
                };
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::{CodeStatus, CALLS_BEFORE_GIVING_UP};

    #[test]
    fn gives_up_after_ten_calls_unless_marked() {
        let mut status = CodeStatus::default();
        // The call that reaches the limit still runs translated; later ones do not.
        for _ in 0..CALLS_BEFORE_GIVING_UP {
            assert!(!status.count_call_without_graph());
        }
        assert!(status.count_call_without_graph());

        let mut marked = CodeStatus::WithGraph;
        for _ in 0..2 * CALLS_BEFORE_GIVING_UP {
            assert!(!marked.count_call_without_graph());
        }

        for status in [
            CodeStatus::Unknown(3),
            CodeStatus::WithGraph,
            CodeStatus::WithoutGraph,
        ] {
            assert_eq!(CodeStatus::from_bits(status.to_bits()), status);
        }
    }
}
