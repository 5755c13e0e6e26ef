//! What the runtime asks of the operating system besides the clock: thread and process ids, a
//! thread's name, the wall clock. All of it is safe to call from a signal handler (plain system
//! calls, no allocation), because a thread may join a recording there.

use crate::injected;

/// The calling thread's id, as logs name it.
pub(crate) fn thread_id() -> i32 {
    if injected::on() {
        return injected::thread_id();
    }
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
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
    // SAFETY: getpid takes no arguments and cannot fail.
    unsafe { libc::getpid() }
}

/// The name of the calling thread as logs show it (at most 15 bytes, NUL-padded): "main" for
/// the process's main thread (whose id is the process id), whose kernel name is the program's,
/// so that `--thread main` finds it as in Rust's own panic messages; the kernel's name for the
/// others (a name set with `std::thread::Builder::name`).
pub(crate) fn thread_name() -> [u8; 16] {
    let mut name = [0u8; 16];
    // The real ids: a test's injected ids say nothing of which thread is the main one.
    // SAFETY: gettid takes no arguments and cannot fail.
    if unsafe { libc::syscall(libc::SYS_gettid) as i32 } == os_pid() {
        name[..4].copy_from_slice(b"main");
        return name;
    }
    // SAFETY: for the calling thread glibc answers with prctl(PR_GET_NAME) (no allocation, no
    // lock), writing at most the 16 bytes it is told the buffer has, NUL included.
    unsafe { libc::pthread_getname_np(libc::pthread_self(), name.as_mut_ptr().cast(), name.len()) };
    name
}

/// Wall-clock time as (seconds, nanoseconds) since the Unix epoch.
pub(crate) fn wall_time() -> (i64, u32) {
    if injected::on() {
        return (0, 0);
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_REALTIME is always supported.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    (ts.tv_sec, ts.tv_nsec as u32)
}
