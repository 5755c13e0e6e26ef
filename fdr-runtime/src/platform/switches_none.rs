//! Context-switch records where the system keeps none for a thread to read (see the Linux
//! version): nothing is opened, and no call's time off the CPU is known.

pub(crate) use super::switch_tally::Spent;

/// None is ever open.
#[cfg_attr(not(feature = "testing"), allow(dead_code))] // read by `testing` only
pub(crate) fn rings_open() -> usize {
    0
}

/// Nothing to open.
pub(crate) fn watch_this_thread() {}

/// Nothing to hold.
pub(crate) fn hold_hooks() {}

/// Nothing to let go.
pub(crate) fn release_hooks() {}

/// Never held.
#[cfg_attr(not(feature = "testing"), allow(dead_code))] // read by `testing` only
pub(crate) fn hooks_held() -> bool {
    false
}

/// Nothing to close.
pub(crate) fn close_this_thread() {}

/// Nothing to close.
pub(crate) fn after_fork() {}

/// Never known.
pub(crate) fn spent(_start: u64, _end: u64) -> Option<Spent> {
    None
}
