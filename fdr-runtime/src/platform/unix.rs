//! The POSIX parts Linux and macOS share: clocks, process id, thread names, exit and fork
//! hooks, thread-exit keys, memory mappings, pipes and signal handlers. Whatever differs
//! between the two is asked of `os` (the file of the system built for).

use std::ffi::c_void;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use super::os;

/// The process id.
pub(crate) fn pid() -> i32 {
    // SAFETY: getpid takes no arguments and cannot fail.
    unsafe { libc::getpid() }
}

fn timespec(clock: libc::clockid_t) -> libc::timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; both clocks used here exist on every system
    // this file is built for.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts
}

/// Nanoseconds of `CLOCK_MONOTONIC`.
#[inline]
pub(crate) fn monotonic_ns() -> u64 {
    let ts = timespec(libc::CLOCK_MONOTONIC);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds of `CLOCK_PROCESS_CPUTIME_ID`: the CPU time of every thread of the process.
pub(crate) fn process_cpu_ns() -> u64 {
    let ts = timespec(libc::CLOCK_PROCESS_CPUTIME_ID);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds of `CLOCK_THREAD_CPUTIME_ID`: the calling thread's CPU time.
pub(crate) fn thread_cpu_ns() -> u64 {
    let ts = timespec(libc::CLOCK_THREAD_CPUTIME_ID);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall-clock time as (seconds, nanoseconds) since the Unix epoch.
pub(crate) fn wall_time() -> (i64, u32) {
    let ts = timespec(libc::CLOCK_REALTIME);
    // `time_t` is 32 bits on some 32-bit targets.
    #[allow(clippy::unnecessary_cast)]
    (ts.tv_sec as i64, ts.tv_nsec as u32)
}

/// The calling thread's name as the system keeps it, cut to 15 bytes and NUL-padded.
pub(crate) fn thread_name() -> [u8; 16] {
    let mut name = [0u8; 16];
    // SAFETY: for the calling thread the C library copies at most the 16 bytes it is told the
    // buffer has, NUL included (glibc through prctl(PR_GET_NAME), macOS from the thread's own
    // structure); no allocation, no lock.
    unsafe { libc::pthread_getname_np(libc::pthread_self(), name.as_mut_ptr().cast(), name.len()) };
    name
}

/// Runs `f` at normal exit (`exit` and a return from `main`); false if it could not be
/// registered.
pub(crate) fn at_exit(f: extern "C" fn()) -> bool {
    // SAFETY: `f` is a plain `extern "C"` function; the caller's promise is that it never
    // unwinds.
    unsafe { libc::atexit(f) == 0 }
}

/// Runs `f` in the child after every `fork`; false if it could not be registered (and under
/// Miri, which runs no fork and does not model the call).
pub(crate) fn at_fork_child(f: extern "C" fn()) -> bool {
    if cfg!(miri) {
        return false;
    }
    // SAFETY: registers a child handler only; whether `f` is safe to run in a forked child is
    // the caller's to keep (atomic operations and async-signal-safe calls only).
    unsafe { libc::pthread_atfork(None, None, Some(f)) == 0 }
}

/// A key whose destructor runs when a thread that armed it exits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ThreadExitKey(libc::pthread_key_t);

impl ThreadExitKey {
    /// A key that calls `at_exit` in each exiting thread that armed it; `None` if the system
    /// has no key left.
    pub(crate) fn new(at_exit: extern "C" fn(*mut c_void)) -> Option<ThreadExitKey> {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: `key` is a valid place for the new key; the destructor is a plain function.
        (unsafe { libc::pthread_key_create(&mut key, Some(at_exit)) } == 0)
            .then_some(ThreadExitKey(key))
    }

    /// Asks for the destructor when the calling thread exits.
    pub(crate) fn arm(self) {
        // SAFETY: the key is valid for the life of the process (never deleted); any non-null
        // value arms it, and the value is never read as a pointer.
        unsafe {
            libc::pthread_setspecific(self.0, std::ptr::NonNull::<u8>::dangling().as_ptr().cast())
        };
    }
}

/// `len` bytes of zeroed private memory, backed as they are touched; `None` if the system
/// refuses.
pub(crate) fn map_anonymous(len: usize) -> Option<*mut u8> {
    // MAP_NORESERVE: pages are not counted against the commit limit before they are touched
    // (Miri knows only the plain flags).
    let flags =
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | if cfg!(miri) { 0 } else { libc::MAP_NORESERVE };
    // SAFETY: an anonymous private mapping at an address the kernel picks; no file, no fixed
    // address.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p.cast())
}

/// Unmaps what [`map_anonymous`] or [`map_shared_file`] mapped.
///
/// # Safety
/// `p` and `len` are one whole mapping made by those, which nothing uses any more.
pub(crate) unsafe fn unmap(p: *mut u8, len: usize) {
    // SAFETY: per the contract.
    unsafe { libc::munmap(p.cast(), len) };
}

/// Replaces the `len` bytes mapped at `p` with private zeroed memory at the same address: what
/// pointed into the old mapping still points at memory, no longer the file's. Async-signal-safe
/// (one system call), for a forked child.
///
/// # Safety
/// `p` and `len` are one whole mapping made by [`map_shared_file`].
pub(crate) unsafe fn replace_with_zeros(p: *mut u8, len: usize) {
    // SAFETY: MAP_FIXED over exactly the caller's own mapping, which it replaces whole.
    unsafe {
        libc::mmap(
            p.cast(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
            -1,
            0,
        )
    };
}

/// A crash box's file as [`map_shared_file`] made it.
#[derive(Debug)]
pub(crate) struct SharedFile {
    /// The mapping of the whole file.
    pub base: *mut u8,
    /// The open file, for [`reserve_range`](super::reserve_range), [`unlink_if_same`] and the lock.
    pub fd: i32,
    /// Whether the file is locked (an exclusive `flock`, held until the descriptor closes);
    /// false on a file system without locks.
    pub locked: bool,
}

/// Creates the file at `path` (mode 0600; a file or link already there is an error, never
/// followed or replaced), locks it exclusively for as long as the returned descriptor is open,
/// gives it `len` bytes, reserves storage for its first `reserve` bytes (all of them where the
/// system cannot reserve later: macOS) and maps it shared. A store into a reserved range never
/// fails for want of room: a full file system is an error here or from `reserve_range`, never
/// a SIGBUS. The pages are mapped in later by [`prefault`](super::prefault) (Linux) or here
/// (macOS). The file is removed again on error.
pub(crate) fn map_shared_file(path: &Path, len: usize, reserve: usize) -> io::Result<SharedFile> {
    use std::os::unix::ffi::OsStrExt;
    let cpath = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
    // SAFETY: `cpath` is a NUL-terminated path; the flags and mode are plain values.
    let fd = unsafe {
        libc::open(
            cpath.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // Taken before the file has its box's name: no reader ever finds the box unlocked while
    // this process lives.
    // SAFETY: flock on the descriptor just opened; LOCK_NB returns at once.
    let locked = unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0;
    let fail = |e: io::Error| {
        // SAFETY: `fd` is ours and closed once; `cpath` is a NUL-terminated path.
        unsafe {
            libc::close(fd);
            libc::unlink(cpath.as_ptr());
        }
        Err(e)
    };
    if let Err(e) = os::reserve(fd, len, reserve.min(len)) {
        return fail(e);
    }
    // SAFETY: a new shared mapping of the whole file, at an address the kernel picks.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | os::MAP_POPULATE,
            fd,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return fail(io::Error::last_os_error());
    }
    os::populate(base.cast(), len);
    Ok(SharedFile {
        base: base.cast(),
        fd,
        locked,
    })
}

/// Removes `path` if it is still the file open as `fd` (same device and inode): never another
/// file that took the name. Nothing at `path` is not an error.
pub(crate) fn unlink_if_same(path: &Path, fd: i32) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: a zeroed stat is a valid out-parameter for fstat on a descriptor we own.
    let mine = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some((st.st_dev as u64, st.st_ino as u64))
    };
    let there = match std::fs::symlink_metadata(path) {
        Ok(m) => (m.dev(), m.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if mine != Some(there) {
        return Ok(());
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Locks `file` exclusively (an `flock`, let go when the file is closed), without waiting:
/// a temporary log is held while it is written, so that a start that removes what dead writers
/// left leaves it. Best effort.
pub(crate) fn lock_while_open(file: &std::fs::File) {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a descriptor the File owns; LOCK_NB returns at once.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
}

/// The parent process's id.
pub(crate) fn parent_pid() -> i32 {
    // SAFETY: getppid takes no arguments and cannot fail.
    unsafe { libc::getppid() }
}

/// Waits up to `timeout_ms` (negative: forever) for `fd` to be readable, then reads all there
/// is to read from it (it does not block).
pub(crate) fn wait_and_drain(fd: i32, timeout_ms: i32) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let ready = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    // A wait that ended on its timer (the watchdog's, every millisecond under a short trigger
    // limit) has nothing to drain: no read, no system call.
    if ready == 0 {
        return;
    }
    let mut buf = [0u8; 64];
    // SAFETY: reads into a local buffer of the given length; the fd is non-blocking.
    while unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
}

/// Writes one byte to `fd` and keeps the thread's `errno` as it was: async-signal-safe.
pub(crate) fn poke(fd: i32) {
    // SAFETY: the errno location is this thread's; the write is of one byte from a local.
    unsafe {
        let errno = *os::errno();
        let byte = 1u8;
        libc::write(fd, (&byte as *const u8).cast(), 1);
        *os::errno() = errno;
    }
}

/// Closes a descriptor this process owns.
pub(crate) fn close(fd: i32) {
    // SAFETY: the caller owns `fd` and closes it once.
    unsafe { libc::close(fd) };
}

/// The signals `signal=USR1|USR2` names.
pub(crate) const SIGUSR1: i32 = libc::SIGUSR1;
/// See [`SIGUSR1`].
pub(crate) const SIGUSR2: i32 = libc::SIGUSR2;
/// The faults a stack overflow shows as.
pub(crate) const SIGSEGV: i32 = libc::SIGSEGV;
/// See [`SIGSEGV`].
pub(crate) const SIGBUS: i32 = libc::SIGBUS;

/// Whether `sig` has its default action, `ours` as its handler, or fdr's own watch (which
/// stands in for the default action, see [`watch_signals`]): anything else is the program's
/// choice (a handler, or ignoring it).
pub(crate) fn handler_is_default_or(sig: i32, ours: extern "C" fn(i32)) -> bool {
    let current = current_action(sig);
    current == libc::SIG_DFL || current == ours as usize || current == watch_address()
}

/// The handler `sig` has now (an address, or SIG_DFL / SIG_IGN). Async-signal-safe.
fn current_action(sig: i32) -> usize {
    // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action only queries.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old);
        old.sa_sigaction
    }
}

/// Makes `handler` (which must be async-signal-safe) the handler of `sig`, restarting
/// interrupted calls.
pub(crate) fn set_handler(sig: i32, handler: extern "C" fn(i32)) {
    // SAFETY: the action is zeroed and then filled in; the handler is async-signal-safe by the
    // caller's promise.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(sig, &action, std::ptr::null_mut());
    }
}

/// Gives `sig` its default action back.
pub(crate) fn reset_handler(sig: i32) {
    // SAFETY: restores SIG_DFL with an empty mask.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(sig, &action, std::ptr::null_mut());
    }
}

/// What a signal tells about itself.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Crash {
    /// The signal's number.
    pub signal: i32,
    /// Its `si_code` (why: a bad address, a kill from another process, ...).
    pub code: i32,
    /// The faulting address, for the signals that have one.
    pub addr: u64,
    /// The thread's stack pointer when the signal came (0: not known here).
    pub sp: u64,
    /// It came while the same thread ran the program's own handler for an earlier one, from
    /// inside fdr's watch (Rust's runtime aborting from its stack-overflow handler).
    pub nested: bool,
}

/// What [`watch_signals`] tells its callback.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SignalEvent {
    /// A signal that ends the process unless a handler of the program's own keeps it alive:
    /// given before the default action or that handler runs.
    Dying(Crash),
    /// The program's own handler ran for `signal` on this thread, returned, and left its
    /// handling as it was: the process lives on.
    Survived(i32),
    /// The program handles `signal` itself (a handler installed after fdr's, which calls fdr's
    /// as the one before it) or ignores it (the first process of a PID namespace ignores every
    /// signal it has no handler for): the process lives on.
    Handled(i32),
}

/// The signals the CPU raises for an instruction (a fault re-runs its instruction when the
/// handler returns).
const FAULTS: [libc::c_int; 4] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE];

/// The signals whose default action ends the process, besides the faults and SIGABRT: each is
/// watched where the program leaves it at its default action or handles it; one it ignores is
/// left ignored. The periodic ones (SIGALRM, SIGVTALRM, SIGPROF) are watched only at their
/// default action, so that a profiler's thousand signals a second do not pass through fdr.
const TERMINATING: &[libc::c_int] = &[
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGPIPE,
    libc::SIGXCPU,
    libc::SIGXFSZ,
    libc::SIGSYS,
    libc::SIGALRM,
    libc::SIGVTALRM,
    libc::SIGPROF,
    #[cfg(target_os = "linux")]
    libc::SIGSTKFLT,
    #[cfg(target_os = "linux")]
    libc::SIGPWR,
    #[cfg(target_os = "linux")]
    libc::SIGIO,
];

const PERIODIC: [libc::c_int; 3] = [libc::SIGALRM, libc::SIGVTALRM, libc::SIGPROF];

/// The actions that were there before fdr's, by signal number. Written once, before fdr's
/// handlers are installed; read by the handlers.
struct Previous(std::cell::UnsafeCell<[libc::sigaction; 33]>);
// SAFETY: written only inside `watch_signals`'s `Once` (before any handler that reads it is
// installed), read-only afterwards.
unsafe impl Sync for Previous {}
// SAFETY: a zeroed sigaction is a valid value (SIG_DFL, empty mask).
static PREVIOUS: Previous = Previous(std::cell::UnsafeCell::new(unsafe { std::mem::zeroed() }));
/// The `fn(SignalEvent)` signals call, as an address (0: none yet).
static ON_SIGNAL: AtomicUsize = AtomicUsize::new(0);
/// The `fn()` an abort inside the program's fault handler calls, as an address (0: none yet).
static ON_ABORT_WITHIN: AtomicUsize = AtomicUsize::new(0);
/// The thread running a program's handler from inside fdr's (0: none), to tell a signal that
/// comes meanwhile on the same thread.
static HANDLING: AtomicI32 = AtomicI32::new(0);

fn watch_address() -> usize {
    watch_handler as extern "C" fn(_, _, _) as usize
}

/// From now on the faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE), SIGABRT and the terminating
/// signals (SIGTERM, SIGINT, SIGHUP, SIGQUIT, ...; those the program does not ignore) first
/// tell `on_signal`, on the alternate stack, then go where they would have gone without fdr: the
/// default action (the same exit status and core dump) or the program's handler. `on_signal`
/// must be async-signal-safe. The handlers are installed once per process; a later call changes
/// only the function.
///
/// A handler the program installs later replaces fdr's; one that calls the handler it replaced
/// (signal-hook does, and so tokio's `signal`) finds fdr's, which then only says the program
/// handled the signal: the program decides, as it would have without fdr.
///
/// `on_abort_within` is told of a SIGABRT raised on a thread while the program's own handler
/// for a fault runs on it (Rust's runtime does so on a stack overflow): it runs with little of
/// the alternate stack left, so it is a function of its own, called with nothing to carry.
pub(crate) fn watch_signals(on_signal: fn(SignalEvent), on_abort_within: fn()) {
    ON_SIGNAL.store(on_signal as usize, Ordering::SeqCst);
    ON_ABORT_WITHIN.store(on_abort_within as usize, Ordering::SeqCst);
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let all = FAULTS
            .iter()
            .chain(&[libc::SIGABRT])
            .chain(TERMINATING.iter());
        for &sig in all {
            // SAFETY: `PREVIOUS` is written here only, before our handler for `sig` exists;
            // the new action is zeroed then filled in; the handler is async-signal-safe.
            unsafe {
                let prev = &mut (*PREVIOUS.0.get())[sig as usize];
                libc::sigaction(sig, std::ptr::null(), prev);
                let default = prev.sa_sigaction == libc::SIG_DFL;
                let crash = FAULTS.contains(&sig) || sig == libc::SIGABRT;
                let leave = prev.sa_sigaction == libc::SIG_IGN
                    || (!crash && !default && PERIODIC.contains(&sig))
                    // A handler the kernel resets as it runs could not be told apart from one
                    // installed after fdr's.
                    || (!crash && !default && prev.sa_flags & libc::SA_RESETHAND != 0)
                    // The first process of a PID namespace ignores what it has no handler for:
                    // nothing to watch, and no system call of its to interrupt.
                    || (!crash && default && pid() == 1);
                if leave {
                    continue;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = watch_address();
                if crash {
                    // On the alternate stack: a stack overflow has no stack left.
                    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                    libc::sigemptyset(&mut action.sa_mask);
                } else if default {
                    // Interrupted calls restart, as they would have gone on with no handler.
                    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                    libc::sigemptyset(&mut action.sa_mask);
                } else {
                    // The program's handler runs as it asked: whether its signal interrupts a
                    // call (how many programs leave a blocking read to shut down), on which
                    // stack, with what blocked.
                    let kept = libc::SA_RESTART | libc::SA_ONSTACK | libc::SA_NODEFER;
                    action.sa_flags = libc::SA_SIGINFO | (prev.sa_flags & kept);
                    action.sa_mask = prev.sa_mask;
                }
                libc::sigaction(sig, &action, std::ptr::null_mut());
            }
        }
    });
}

fn tell(event: SignalEvent) {
    let f = ON_SIGNAL.load(Ordering::SeqCst);
    if f != 0 {
        // SAFETY: `ON_SIGNAL` only ever holds a `fn(SignalEvent)` (see `watch_signals`).
        let f: fn(SignalEvent) = unsafe { std::mem::transmute::<usize, fn(SignalEvent)>(f) };
        f(event);
    }
}

extern "C" fn watch_handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // Rust's runtime aborting from its own SIGSEGV handler on a stack overflow: this runs on
    // the alternate stack below two signal frames and that handler's, with little of it left
    // (an unoptimized build overflowed it here): as few frames and locals as can be.
    if sig == libc::SIGABRT && HANDLING.load(Ordering::SeqCst) == os::thread_id() {
        abort_within_handler();
    } else {
        handle(sig, info, ctx);
    }
}

#[inline(never)]
fn abort_within_handler() {
    let f = ON_ABORT_WITHIN.load(Ordering::SeqCst);
    if f != 0 {
        // SAFETY: `ON_ABORT_WITHIN` only ever holds a `fn()` (see `watch_signals`).
        unsafe { std::mem::transmute::<usize, fn()>(f)() };
    }
    default_action(libc::SIGABRT, false, 0);
}

/// Gives `sig` the action it had before fdr's and lets it run: a fault raised by the CPU re-runs
/// its instruction when the handler returns and meets that action; any other signal is sent
/// again, to be delivered with it once this handler returns.
#[inline(never)]
fn default_action(sig: libc::c_int, fault: bool, code: i32) {
    // SAFETY: `PREVIOUS` is read-only once handlers are installed; `sig` is one of ours; raise
    // only sends a signal.
    unsafe {
        libc::sigaction(
            sig,
            &(*PREVIOUS.0.get())[sig as usize],
            std::ptr::null_mut(),
        );
        if !fault || os::sent_by_a_process(code) {
            libc::raise(sig);
        }
    }
}

#[inline(never)]
fn handle(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let fault = FAULTS.contains(&sig);
    // A fault and an abort end the process whoever's handler called this one; any other signal
    // that reaches fdr's handler from a handler installed after it is the program's to decide.
    if !fault && sig != libc::SIGABRT && current_action(sig) != watch_address() {
        return handled(sig);
    }
    // SAFETY: `PREVIOUS` is read-only once handlers are installed; `sig` is one of ours.
    let prev = unsafe { &(*PREVIOUS.0.get())[sig as usize] };
    let default = prev.sa_sigaction == libc::SIG_DFL || prev.sa_sigaction == libc::SIG_IGN;
    // The first process of a PID namespace (a container's) ignores a signal it has no handler
    // for (the kernel drops it): it lives on, as it would have without fdr.
    if default && !fault && sig != libc::SIGABRT && pid() == 1 {
        return handled(sig);
    }
    let tid = os::thread_id();
    let outer = HANDLING.load(Ordering::SeqCst);
    let code = dying(sig, info, ctx, fault, outer == tid);
    if default {
        return default_action(sig, fault, code);
    }
    HANDLING.store(tid, Ordering::SeqCst);
    call_previous(prev, sig, info, ctx);
    HANDLING.store(outer, Ordering::SeqCst);
    // Its handler returned and left fdr's watch in place: the program went on. (One that set
    // the default action back, as Rust's does for a fault that is no stack overflow, lets the
    // fault run again into it: the mark stays.)
    if current_action(sig) == watch_address() {
        survived(sig);
    }
}

#[inline(never)]
fn handled(sig: libc::c_int) {
    tell(SignalEvent::Handled(sig));
}

#[inline(never)]
fn survived(sig: libc::c_int) {
    tell(SignalEvent::Survived(sig));
}

/// Tells of a signal about to end the process; returns its `si_code`.
#[inline(never)]
fn dying(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    ctx: *mut c_void,
    fault: bool,
    nested: bool,
) -> i32 {
    // SAFETY: the system passes a valid siginfo to an SA_SIGINFO handler.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as u64) };
    tell(SignalEvent::Dying(Crash {
        signal: sig,
        code,
        addr: if fault { addr } else { 0 },
        sp: os::stack_pointer(ctx),
        nested,
    }));
    code
}

#[inline(never)]
fn call_previous(
    prev: &libc::sigaction,
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    ctx: *mut c_void,
) {
    // SAFETY: the previous handler was installed by the program (or Rust's runtime) for this
    // signal, with the calling convention its flags say; it gets what it would have got.
    unsafe {
        if prev.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) =
                std::mem::transmute(prev.sa_sigaction);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(prev.sa_sigaction);
            f(sig);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "the system's answers, with no memory of ours in play")]
    fn each_thread_has_its_own_id_and_only_the_main_thread_is_main() {
        let here = (os::thread_id(), os::is_main_thread());
        let there = std::thread::spawn(|| (os::thread_id(), os::is_main_thread()))
            .join()
            .unwrap();
        assert_ne!(here.0, there.0);
        // The test harness runs tests on threads of its own, never on the main one.
        assert!(!here.1 && !there.1, "{here:?} {there:?}");
    }

    #[test]
    #[cfg_attr(miri, ignore = "the system's answers, with no memory of ours in play")]
    fn a_named_thread_reads_its_name_cut_to_15_bytes() {
        let name = std::thread::Builder::new()
            .name("a-rather-long-thread-name".into())
            .spawn(thread_name)
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(&name, b"a-rather-long-t\0");
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri does not model poll")]
    fn a_poke_wakes_the_waiter_and_leaves_errno_as_it_was() {
        let (read, write) = os::pipe().expect("a pipe");
        // SAFETY: the calling thread's errno location.
        unsafe { *os::errno() = libc::EINTR };
        poke(write);
        // A poke into a closed descriptor fails inside (EBADF) and must not show it either.
        poke(-1);
        // SAFETY: as above.
        assert_eq!(unsafe { *os::errno() }, libc::EINTR);
        let began = std::time::Instant::now();
        wait_and_drain(read, 10_000);
        assert!(began.elapsed() < std::time::Duration::from_secs(5));
        // Drained: a second wait times out instead of returning at once on the old byte.
        let began = std::time::Instant::now();
        wait_and_drain(read, 50);
        assert!(began.elapsed() >= std::time::Duration::from_millis(50));
        close(read);
        close(write);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri does not model file mappings")]
    fn a_shared_file_mapping_writes_through_to_the_file_and_its_pages_are_there() {
        let path = std::env::temp_dir().join(format!("fdr-platform-{}.box", pid()));
        let len = 3 * 4096 + 100;
        // The first page reserved at once, the rest later, as a crash box's buffers are.
        let SharedFile {
            base: p,
            fd,
            locked,
        } = map_shared_file(&path, len, 4096).unwrap();
        assert!(locked, "tmpfs and ext4 have locks");
        // The lock is the file's while this descriptor is open: another open file cannot take
        // it.
        let other = std::fs::File::open(&path).unwrap();
        use std::os::unix::io::AsRawFd;
        // SAFETY: flock on a descriptor the File owns, without waiting.
        let taken = unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_eq!(taken, -1);
        // Never made over a file already there.
        assert_eq!(
            map_shared_file(&path, len, 4096).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        use std::os::unix::fs::MetadataExt;
        let blocks = || std::fs::metadata(&path).unwrap().blocks() * 512;
        if cfg!(target_os = "linux") {
            assert!((4096..len as u64).contains(&blocks()), "{}", blocks());
        }
        crate::platform::reserve_range(fd, 4096, len - 4096).unwrap();
        assert!(blocks() >= len as u64, "{}", blocks());
        // SAFETY: `p` maps `len` writable bytes.
        unsafe {
            p.add(5).write(7);
            p.add(len - 1).write(9);
        }
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!((bytes.len(), bytes[5], bytes[len - 1]), (len, 7, 9));
        // SAFETY: the whole mapping, unused from here on.
        unsafe { unmap(p, len) };
        close(fd);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri does not model file mappings")]
    fn a_link_where_the_box_goes_is_not_followed_and_a_removal_checks_the_file() {
        let dir = std::env::temp_dir().join(format!("fdr-platform-link-{}", pid()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("victim");
        std::fs::write(&target, b"keep").unwrap();
        let link = dir.join("box");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(map_shared_file(&link, 4096, 4096).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        // A name that is now another file's is not removed by the one that made it first.
        std::fs::remove_file(&link).unwrap();
        let made = map_shared_file(&link, 4096, 4096).unwrap();
        std::fs::remove_file(&link).unwrap();
        std::fs::write(&link, b"another's").unwrap();
        unlink_if_same(&link, made.fd).unwrap();
        assert_eq!(std::fs::read(&link).unwrap(), b"another's");
        // SAFETY: the whole mapping, unused from here on.
        unsafe { unmap(made.base, 4096) };
        close(made.fd);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri does not model file mappings")]
    fn a_file_that_cannot_be_made_is_an_error_and_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("fdr-platform-missing-{}", pid()));
        let e = map_shared_file(&dir.join("box"), 4096, 4096).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(!dir.exists());
    }
}
