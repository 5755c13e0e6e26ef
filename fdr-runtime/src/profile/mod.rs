//! Profile mode: each thread's call trie, and the recording's profile, the tries merged.

#[cfg(feature = "record")]
pub(crate) mod call_trie;
#[cfg(feature = "record")]
pub(crate) mod merged;
