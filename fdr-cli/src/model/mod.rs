//! What a log holds, as calls: the records of each thread replayed into calls (one engine,
//! [`engine`]), the filters every analysing command takes ([`filter`]), a pass over the log
//! behind them ([`pass`]), async tasks, culled functions, the functions the cost budget
//! untimed, the call trie, and what to say of a window left empty or thin by the threshold; a
//! profile file and its call paths. Nothing here prints.
//!
//! Inside, modules use only those above them in this list: `input`, `names`, `hist`,
//! `trigger`, `thin_window`, `tasks`, `culls`, `budget`, `profile_file`, `engine`, `filter`,
//! `pass`, `trie`, `task_polls`.

pub(crate) mod budget;
pub(crate) mod culls;
pub(crate) mod engine;
pub(crate) mod filter;
pub(crate) mod hist;
pub(crate) mod input;
pub(crate) mod names;
pub(crate) mod pass;
pub(crate) mod profile_file;
pub(crate) mod task_polls;
pub(crate) mod tasks;
pub(crate) mod thin_window;
pub(crate) mod trie;
pub(crate) mod trigger;
