//! A clock and CPU number that tests drive by hand (feature `testing`).
//!
//! Once [`use_mock_clock`] is called, recorders started afterwards read each thread's injected
//! time and CPU instead of the hardware, write pid 1 and wall time 0, and number threads 1, 2, 3…
//! in the order they first record (unless a test names one with [`set_thread_id`]). Migration, a
//! counter jump past 32 bits, and the exact lengths that decide a rewind can then be produced at
//! will, and logs come out byte-for-byte the same on every run.
//!
//! ```
//! use fdr_runtime::testing;
//! testing::use_mock_clock(1_000_000_000);
//! testing::set_time(100);
//! testing::set_cpu(2);
//! testing::advance(5);
//! assert_eq!(testing::now(), (105, 2));
//! testing::use_real_clock();
//! ```

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

static MOCK: AtomicBool = AtomicBool::new(false);
static FREQUENCY: AtomicU64 = AtomicU64::new(1_000_000_000);
static NEXT_TID: AtomicI32 = AtomicI32::new(1);

thread_local! {
    static ON_READ: Cell<Option<fn()>> = const { Cell::new(None) };
    static TIME: Cell<u64> = const { Cell::new(0) };
    static CPU: Cell<u32> = const { Cell::new(0) };
    static TID: Cell<i32> = const { Cell::new(0) };
}

/// Switches the process to the injected clock, ticking `ticks_per_second`.
pub fn use_mock_clock(ticks_per_second: u64) {
    FREQUENCY.store(ticks_per_second.max(1), Ordering::Relaxed);
    NEXT_TID.store(1, Ordering::Relaxed);
    MOCK.store(true, Ordering::SeqCst);
}

/// Switches back to the hardware clock.
pub fn use_real_clock() {
    MOCK.store(false, Ordering::SeqCst);
}

/// Sets this thread's time.
pub fn set_time(ticks: u64) {
    TIME.with(|t| t.set(ticks));
}

/// Moves this thread's time forward (wrapping, like a hardware counter).
pub fn advance(ticks: u64) {
    TIME.with(|t| t.set(t.get().wrapping_add(ticks)));
}

/// Moves this thread to another CPU.
pub fn set_cpu(cpu: u16) {
    CPU.with(|c| c.set(u32::from(cpu)));
}

/// Names this thread in logs (call before its first record).
pub fn set_thread_id(tid: i32) {
    TID.with(|t| t.set(tid));
}

/// Runs `f` inside every clock read of this thread, that is in the middle of writing a record,
/// the way a signal handler could interrupt it. `None` removes it.
pub fn on_clock_read(f: Option<fn()>) {
    ON_READ.with(|c| c.set(f));
}

/// This thread's injected time and CPU.
pub fn now() -> (u64, u32) {
    (TIME.with(Cell::get), CPU.with(Cell::get))
}

/// Makes the process use the fallback clock (monotonic nanoseconds, CPU from `sched_getcpu`)
/// even where the timestamp counter is usable. Only effective before the first recorder starts:
/// the clock is set up once per process.
pub fn use_fallback_clock() {
    crate::clock::FORCE_MONOTONIC.store(true, Ordering::Relaxed);
}

/// Makes the process read the counter with `rdtscp` (timestamp and CPU in one instruction) even
/// where the CPU number could come from rseq. Only effective before the first recorder starts.
pub fn use_rdtscp_clock() {
    crate::clock::FORCE_RDTSCP.store(true, Ordering::Relaxed);
}

/// Serializes tests that start recorders: one recorder runs per process, and the test harness
/// runs tests on several threads.
pub fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[inline(always)]
pub(crate) fn mock_on() -> bool {
    MOCK.load(Ordering::Relaxed)
}

#[inline(always)]
pub(crate) fn mock_now() -> (u64, u32) {
    if let Some(f) = ON_READ.with(Cell::get) {
        f();
    }
    now()
}

pub(crate) fn mock_frequency() -> u64 {
    FREQUENCY.load(Ordering::Relaxed)
}

pub(crate) fn mock_tid() -> i32 {
    TID.with(|t| {
        if t.get() == 0 {
            t.set(NEXT_TID.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    })
}
