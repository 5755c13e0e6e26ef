//! Values a test sets by hand in place of the machine's: each thread's time and CPU, thread ids,
//! the pid and the wall clock. The one test seam of the runtime.
//!
//! The time and CPU are a clock source like the hardware ones, chosen when a recorder starts
//! (`clock::select`), so the recording path runs the same code with or without them and pays
//! nothing for their existence. The other values are read on cold paths only. The switches are
//! public through `testing` (feature `testing`); without it nothing turns them on.

// The setters are reached only through `testing`.
#![cfg_attr(not(feature = "testing"), allow(dead_code))]

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

static ON: AtomicBool = AtomicBool::new(false);
static FREQUENCY: AtomicU64 = AtomicU64::new(1_000_000_000);
static NEXT_TID: AtomicI32 = AtomicI32::new(1);
/// Every thread's time spent waiting for a CPU, in ns (the kernel's `run_delay`).
static RUN_DELAY: AtomicU64 = AtomicU64::new(0);

/// The process's CPU time, in ns, as the cost budget reads it.
static CPU_TIME: AtomicU64 = AtomicU64::new(0);
/// What a timed call costs, in ps, as the cost budget counts it (measured on a real clock).
static CALL_COST: AtomicU64 = AtomicU64::new(10_000);

/// How many switched-out spans a test can give one thread.
pub(crate) const MAX_SWITCHES: usize = 16;

thread_local! {
    /// This thread's switched-out spans, oldest first: (out, back in, preempted), in ticks.
    static SWITCHES: [Cell<(u64, u64, bool)>; MAX_SWITCHES] =
        const { [const { Cell::new((0, 0, false)) }; MAX_SWITCHES] };
    static SWITCHED: Cell<usize> = const { Cell::new(0) };
    static ON_READ: Cell<Option<fn()>> = const { Cell::new(None) };
    static ON_COLD: Cell<Option<fn()>> = const { Cell::new(None) };
    static TIME: Cell<u64> = const { Cell::new(0) };
    static CPU: Cell<u32> = const { Cell::new(0) };
    static TID: Cell<i32> = const { Cell::new(0) };
}

/// True while tests inject values: recorders started now use them.
#[inline]
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

pub(crate) fn turn_on(ticks_per_second: u64) {
    FREQUENCY.store(ticks_per_second.max(1), Ordering::Relaxed);
    NEXT_TID.store(1, Ordering::Relaxed);
    RUN_DELAY.store(0, Ordering::Relaxed);
    CPU_TIME.store(0, Ordering::Relaxed);
    CALL_COST.store(10_000, Ordering::Relaxed);
    ON.store(true, Ordering::SeqCst);
}

pub(crate) fn turn_off() {
    ON.store(false, Ordering::SeqCst);
}

pub(crate) fn frequency() -> u64 {
    FREQUENCY.load(Ordering::Relaxed)
}

/// The clock source: this thread's time and CPU, after the test's hook if it set one.
#[inline(never)]
pub(crate) fn now() -> (u64, u32) {
    if let Some(f) = ON_READ.with(Cell::get) {
        f();
    }
    values()
}

pub(crate) fn values() -> (u64, u32) {
    (TIME.with(Cell::get), CPU.with(Cell::get))
}

pub(crate) fn process_cpu_ns() -> u64 {
    CPU_TIME.load(Ordering::SeqCst)
}

pub(crate) fn set_process_cpu_ns(ns: u64) {
    CPU_TIME.store(ns, Ordering::SeqCst);
}

pub(crate) fn call_cost_ps() -> u64 {
    CALL_COST.load(Ordering::SeqCst)
}

pub(crate) fn set_call_cost_ps(ps: u64) {
    CALL_COST.store(ps, Ordering::SeqCst);
}

pub(crate) fn run_delay() -> u64 {
    RUN_DELAY.load(Ordering::SeqCst)
}

pub(crate) fn add_run_delay(ns: u64) {
    RUN_DELAY.fetch_add(ns, Ordering::SeqCst);
}

/// Notes that this thread was switched out from `out` to `back` (ticks), preempted (waiting
/// for a CPU) or by itself (blocked); past [`MAX_SWITCHES`] the oldest is forgotten.
pub(crate) fn switched_out(out: u64, back: u64, preempted: bool) {
    SWITCHED.with(|n| {
        SWITCHES.with(|s| {
            let k = n.get();
            if k == MAX_SWITCHES {
                for i in 1..MAX_SWITCHES {
                    s[i - 1].set(s[i].get());
                }
                s[MAX_SWITCHES - 1].set((out, back, preempted));
            } else {
                s[k].set((out, back, preempted));
                n.set(k + 1);
            }
        })
    });
}

/// Whether a test gave this thread a switch (else it has no record of them).
pub(crate) fn has_switches() -> bool {
    SWITCHED.with(|n| n.get() > 0)
}

/// This thread's switched-out spans, newest first, in ticks: (out, back in, preempted).
pub(crate) fn switched_spans() -> Vec<(u64, u64, bool)> {
    SWITCHED.with(|n| SWITCHES.with(|s| s[..n.get()].iter().map(Cell::get).rev().collect()))
}

pub(crate) fn set_time(ticks: u64) {
    TIME.with(|t| t.set(ticks));
}

pub(crate) fn advance(ticks: u64) {
    TIME.with(|t| t.set(t.get().wrapping_add(ticks)));
}

pub(crate) fn set_cpu(cpu: u32) {
    CPU.with(|c| c.set(cpu));
}

pub(crate) fn set_thread_id(tid: i32) {
    TID.with(|t| t.set(tid));
}

pub(crate) fn on_clock_read(f: Option<fn()>) {
    ON_READ.with(|c| c.set(f));
}

pub(crate) fn on_next_cold_path(f: fn()) {
    ON_COLD.with(|c| c.set(Some(f)));
}

/// Runs, once, what a test asked to run at this thread's next cold path.
#[cold]
pub(crate) fn cold_path() {
    if let Some(f) = ON_COLD.with(|c| c.take()) {
        f();
    }
}

/// Threads are numbered 1, 2, 3… in the order they first ask, unless a test named one.
pub(crate) fn thread_id() -> i32 {
    TID.with(|t| {
        if t.get() == 0 {
            t.set(NEXT_TID.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    })
}
