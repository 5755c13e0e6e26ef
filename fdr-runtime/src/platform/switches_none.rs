//! Context-switch records where the system keeps none for a thread to read (see the Linux
//! version): nothing is opened, and no call's time off the CPU is known.

pub(crate) use super::switch_tally::Spent;

/// Always true: there is nothing to ask for.
#[inline(always)]
pub(crate) fn watched() -> bool {
    true
}

/// Nothing to open.
pub(crate) fn watch_this_thread(_at: u64) {}

/// Nothing to close.
pub(crate) fn close_this_thread() {}

/// Nothing to close.
pub(crate) fn after_fork() {}

/// Never known.
pub(crate) fn spent(_start: u64, _end: u64, _start_at: u64) -> Option<Spent> {
    None
}
