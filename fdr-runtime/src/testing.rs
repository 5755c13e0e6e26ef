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

use std::sync::{Mutex, MutexGuard};

use crate::injected;

/// Switches the process to injected values: recorders started from now on read each thread's
/// injected time and CPU, ticking `ticks_per_second`.
pub fn use_mock_clock(ticks_per_second: u64) {
    injected::turn_on(ticks_per_second);
}

/// Switches recorders started from now on back to the machine's clock.
pub fn use_real_clock() {
    injected::turn_off();
}

/// Sets this thread's time.
pub fn set_time(ticks: u64) {
    injected::set_time(ticks);
}

/// Moves this thread's time forward (wrapping, like a hardware counter).
pub fn advance(ticks: u64) {
    injected::advance(ticks);
}

/// Moves this thread to another CPU.
pub fn set_cpu(cpu: u16) {
    injected::set_cpu(u32::from(cpu));
}

/// Names this thread in logs (call before its first record).
pub fn set_thread_id(tid: i32) {
    injected::set_thread_id(tid);
}

/// Runs `f` inside every clock read of this thread, that is in the middle of writing a record,
/// the way a signal handler could interrupt it. `None` removes it.
pub fn on_clock_read(f: Option<fn()>) {
    injected::on_clock_read(f);
}

/// This thread's injected time and CPU.
pub fn now() -> (u64, u32) {
    injected::values()
}

/// Serializes tests that start recorders: one recorder runs per process, and the test harness
/// runs tests on several threads.
pub fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
