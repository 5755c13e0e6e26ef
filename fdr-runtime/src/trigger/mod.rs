//! Slow-call triggers: fixed limits and the mailbox a firing trigger leaves for the writer,
//! learned limits (from each function's own latencies), how long a slow call's thread waited for
//! a CPU, and the snapshot signal's handler.

#[cfg(feature = "record")]
pub(crate) mod cpu_wait;
pub(crate) mod learned_limit;
#[cfg(feature = "record")]
pub(crate) mod signal;
#[cfg(feature = "record")]
pub(crate) mod slow_calls;
