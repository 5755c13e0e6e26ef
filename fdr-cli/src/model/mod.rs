//! What a log holds, as calls: the records of each thread replayed into calls (one engine,
//! [`engine`]), the filters every analysing command takes ([`filter`]), a pass over the log
//! behind them ([`pass`]), async tasks, culled functions, the call trie, and what to say of a
//! window left empty or thin by the threshold; a profile file and its call paths. Nothing here
//! prints.
//!
//! Inside, modules use only those above them in this list: `input`, `names`, `hist`,
//! `trigger`, `thin_window`, `tasks`, `culls`, `profile_file`, `engine`, `filter`, `pass`, `trie`.

pub mod culls;
pub mod engine;
pub mod filter;
pub mod hist;
pub mod input;
pub mod names;
pub mod pass;
pub mod profile_file;
pub mod tasks;
pub mod thin_window;
pub mod trie;
pub mod trigger;
