//! The labels every renderer puts on calls: a thread as `thread 11 (main)`, and a time relative
//! to the window's start (time zero of the outputs) as `+1.20 ms`.

use crate::escape::shown;
use crate::model::names::Names;
use crate::units::{human, Clock};

/// `+1.20 ms` (or `-3.00 µs` before `origin`): a timestamp relative to time zero of the outputs.
///
/// ```
/// use fdr_cli::render::labels::relative;
/// use fdr_cli::units::Clock;
/// let c = Clock::new(1_000_000_000);
/// assert_eq!(relative(1_500, 1_000, &c), "+500 ns");
/// assert_eq!(relative(1_000, 4_000, &c), "-3.00 µs");
/// ```
pub fn relative(tsc: u64, origin: u64, clock: &Clock) -> String {
    if tsc >= origin {
        format!("+{}", human(clock.ns(tsc - origin)))
    } else {
        format!("-{}", human(clock.ns(origin - tsc)))
    }
}

/// `thread 11 (main)`, or `thread 11` when it had no name; escaped for a terminal.
///
/// ```
/// use fdr_cli::model::names::Names;
/// assert_eq!(fdr_cli::render::labels::thread_label(&Names::default(), 11), "thread 11");
/// ```
pub fn thread_label(names: &Names, tid: i32) -> String {
    if names.has_thread_name(tid) {
        format!("thread {tid} ({})", shown(&names.thread(tid)))
    } else {
        format!("thread {tid}")
    }
}
