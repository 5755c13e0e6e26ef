//! Who and when, as logs name them: thread and process ids, a thread's name, the wall clock;
//! the system's answers (`platform`) or the values a test injected. All of it is safe to call
//! from a signal handler (plain system calls, no allocation), because a thread may join a
//! recording there.

use crate::{platform, seams::injected};

/// The calling thread's id, as logs name it.
pub(crate) fn thread_id() -> i32 {
    if injected::on() {
        return injected::thread_id();
    }
    platform::thread_id()
}

/// The process id as logs name it.
pub(crate) fn log_pid() -> i32 {
    if injected::on() {
        return 1;
    }
    os_pid()
}

/// The real process id, which tells a forked child from its parent.
pub(crate) fn os_pid() -> i32 {
    platform::pid()
}

/// The name of the calling thread as logs show it (at most 15 bytes, NUL-padded): "main" for
/// the process's main thread, whose kernel name is the program's (Linux) or empty (macOS), so
/// that `--thread main` finds it as in Rust's own panic messages; the system's name for the
/// others (a name set with `std::thread::Builder::name`).
pub(crate) fn thread_name() -> [u8; 16] {
    // The real thread: a test's injected ids say nothing of which thread is the main one.
    if platform::is_main_thread() {
        let mut name = [0u8; 16];
        name[..4].copy_from_slice(b"main");
        return name;
    }
    platform::thread_name()
}

/// Wall-clock time as (seconds, nanoseconds) since the Unix epoch.
pub(crate) fn wall_time() -> (i64, u32) {
    if injected::on() {
        return (0, 0);
    }
    platform::wall_time()
}

/// The process's CPU time so far, every thread's, in nanoseconds (what the cost budget weighs the
/// recorder against); a test's injected figure while it injects values.
pub(crate) fn process_cpu_ns() -> u64 {
    if injected::on() {
        return injected::process_cpu_ns();
    }
    platform::process_cpu_ns()
}

/// The calling thread's CPU time so far, in nanoseconds (the background writer's, which the cost
/// budget counts as the recorder's); 0 while a test injects values.
pub(crate) fn thread_cpu_ns() -> u64 {
    if injected::on() {
        return 0;
    }
    platform::thread_cpu_ns()
}
