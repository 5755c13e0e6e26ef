//! Telling a slow call from a descheduled thread: where a call's time went while its thread was
//! not running.
//!
//! A call that lasts past its limit may have run long, been blocked (a sleep, a lock, I/O), or
//! been runnable and waiting: preempted by another thread on a loaded machine, or woken with no
//! CPU free. A learned limit (a few times the function's p99) is passed by any such wait of a
//! few hundred microseconds, so on a shared host it would fire on the scheduler, not on the
//! program.
//!
//! The answer comes from the thread's context switches, which the kernel records for it
//! (`platform::switches`): a thread that enters a function with a trigger opens its ring once
//! (a poll timed against the long-poll limit does not: the records cost the kernel at every
//! switch of every worker, and a long poll is measured by the marks below unless its thread
//! has a ring already); at the end of a call past its limit, on
//! the call's own thread, [`over_call`] adds up the switches since the call began: switched out
//! while runnable is waiting for a CPU, switched out by itself is blocked. Nothing is read for
//! calls within their limit, so a call pays nothing for it; a switch costs the kernel a record.
//! The log's reason says both ([`fdr_format::ReasonInfo::cpu_wait_ns`] and
//! [`fdr_format::ReasonInfo::off_cpu_ns`]); the call ran for the rest.
//!
//! Where the kernel keeps no such records (macOS, a `perf_event_paranoid` of 3, a container
//! that filters `perf_event_open`), the watchdog's marks measure what they can: it looks at
//! every open trigger call, reads the thread's total wait for a CPU (`run_delay` in
//! `/proc/PID/task/TID/schedstat`) for the calls it finds open past half their limit, and leaves
//! it on the call (its *mark*); a call that ends past its limit with a mark reads it again, and
//! the difference is at least its wait from the mark on. Calls shorter than the watchdog's
//! period are not measured that way.
//!
//! A call past a learned limit that would have been within it without its wait for a CPU is not
//! the function's doing: it does not write (it is counted as suppressed, and apart, so that
//! `fdr info` says how many), and the learned limit learns its own time, not the wait. A limit
//! written by hand is the user's word and fires all the same.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::platform::switch_tally::{tally, Spent, Switch};
use crate::{platform, seams::injected};

/// Marks made in this process (read by tests).
static MARKS: AtomicU64 = AtomicU64::new(0);

#[cfg_attr(not(feature = "testing"), allow(dead_code))] // read by `testing` only
pub(crate) fn marks() -> u64 {
    MARKS.load(Ordering::SeqCst)
}

/// Thread `tid`'s total wait for a CPU so far, in ns (tests' injected value under the
/// injected clock).
fn run_delay(tid: i32) -> Option<u64> {
    if injected::on() {
        return Some(injected::run_delay());
    }
    platform::run_delay_ns(tid)
}

/// Makes a mark for an open call of thread `tid` (its wait so far plus one: 0 is no mark) and
/// hands it to `leave`, which leaves it on the call; nothing where the system does not count
/// waits. Called by the watchdog. Counted once left, so that a test that sees the count knows
/// its call holds the mark.
pub(crate) fn mark(tid: i32, leave: impl FnOnce(u64)) {
    if let Some(wait) = run_delay(tid) {
        leave(wait.saturating_add(1));
        MARKS.fetch_add(1, Ordering::SeqCst);
    }
}

/// How long the calling thread (`tid`) waited for a CPU since `mark` was made, in ns; `None`
/// with no mark (0). Called at the exit of a call past its limit: async-signal-safe, no
/// allocation.
pub(crate) fn since(mark: u64, tid: i32) -> Option<u64> {
    let then = mark.checked_sub(1)?;
    Some(run_delay(tid)?.saturating_sub(then))
}

/// Where the calling thread's time between ticks `start` and `end` (at most now) went off its
/// CPU, from its context switches (`platform::switches`, or a test's injected ones), at
/// `ticks_per_second`; `None` where the thread has no record of them. Called at the exit of a
/// call past its limit, on its thread: async-signal-safe, no allocation (but under tests).
pub(crate) fn over_call(start: u64, end: u64, ticks_per_second: u64) -> Option<Spent> {
    let ns = |ticks: u64| fdr_format::units::ticks_to_ns(ticks, ticks_per_second);
    if injected::on() {
        // A thread a test gave no switch has no record of them, as on a system without.
        if !injected::has_switches() {
            return None;
        }
        let mut switches =
            injected::switched_spans()
                .into_iter()
                .flat_map(|(out, back, preempted)| {
                    [Switch::In { at: back }, Switch::Out { at: out, preempted }]
                });
        let mut s = tally(&mut switches, start, end);
        // A test's switches are all there are.
        s.whole = true;
        return Some(Spent {
            cpu_wait_ns: ns(s.cpu_wait_ns),
            off_cpu_ns: ns(s.off_cpu_ns),
            whole: true,
        });
    }
    // The records are dated by CLOCK_MONOTONIC: the call's ends are dated back from now.
    let (now_ticks, _) = crate::platform::clock::now();
    let now_ns = crate::platform::monotonic_ns();
    let back = |t: u64| now_ns.saturating_sub(ns(now_ticks.saturating_sub(t)));
    crate::platform::switches::spent(back(start), back(end))
}

/// Whether a call of `duration` ticks past a learned `limit` would have been within it without
/// `waited_ns` of waiting for a CPU, at `ticks_per_second`.
pub(crate) fn only_the_wait(
    duration: u64,
    limit: u64,
    waited_ns: u64,
    ticks_per_second: u64,
) -> bool {
    let waited = fdr_format::units::ns_to_ticks(waited_ns, ticks_per_second);
    duration.saturating_sub(waited) <= limit
}

#[cfg(test)]
mod tests {
    use super::only_the_wait;

    #[test]
    #[cfg(target_os = "linux")]
    #[cfg_attr(miri, ignore = "reads the kernel's files")]
    fn the_kernel_counts_this_threads_wait_and_it_only_grows() {
        if !std::path::Path::new("/proc/self/schedstat").exists() {
            eprintln!("skipped: this kernel keeps no scheduler statistics (CONFIG_SCHED_INFO)");
            return;
        }
        let me = crate::platform::thread_id();
        let first = crate::platform::run_delay_ns(me).expect("this thread's run_delay");
        std::thread::yield_now();
        let then = crate::platform::run_delay_ns(me).unwrap();
        assert!(then >= first, "{first} then {then}");
        assert_eq!(crate::platform::run_delay_ns(-5), None, "no such thread");
    }

    #[test]
    fn a_call_is_the_schedulers_only_if_it_fits_its_limit_without_the_wait() {
        // 4.09 ms with a 681 µs limit at 1 GHz: 3.5 ms of waiting explains it, 3 ms does not.
        assert!(only_the_wait(4_090_000, 681_000, 3_500_000, 1_000_000_000));
        assert!(!only_the_wait(4_090_000, 681_000, 3_000_000, 1_000_000_000));
        // At 3 GHz the same wait is three times the ticks.
        assert!(only_the_wait(
            12_270_000,
            2_043_000,
            3_500_000,
            3_000_000_000
        ));
    }
}
