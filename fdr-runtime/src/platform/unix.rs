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

/// Whether a process with id `pid` exists (it may be another program that reused the id).
pub(crate) fn process_exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
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

/// Creates the file at `path` (mode 0600, replacing one there) of `len` bytes, reserves storage
/// for its first `reserve` bytes (all of them where the system cannot reserve later: macOS) and
/// maps it shared. Returns the mapping and the open file, for [`reserve_range`] to reserve the
/// rest. A store into a reserved range never fails for want of room: a full file system is an
/// error here or from `reserve_range`, never a SIGBUS. The pages are mapped in later by
/// [`prefault`](super::prefault) (Linux) or here (macOS). The file is removed again on error.
pub(crate) fn map_shared_file(
    path: &Path,
    len: usize,
    reserve: usize,
) -> io::Result<(*mut u8, i32)> {
    use std::os::unix::ffi::OsStrExt;
    let cpath = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
    // SAFETY: `cpath` is a NUL-terminated path; the flags and mode are plain values.
    let fd = unsafe {
        libc::open(
            cpath.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
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
    Ok((base.cast(), fd))
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

/// Whether `sig` has its default action or `ours` as its handler: anything else is the
/// program's choice (a handler, or ignoring it).
pub(crate) fn handler_is_default_or(sig: i32, ours: extern "C" fn(i32)) -> bool {
    // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action only queries.
    let current = unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old);
        old.sa_sigaction
    };
    current == libc::SIG_DFL || current == ours as usize
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

/// What a crash signal tells about the crash.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Crash {
    /// The signal's number.
    pub signal: i32,
    /// Its `si_code` (why: a bad address, a kill from another process, ...).
    pub code: i32,
    /// The faulting address, for the signals that have one.
    pub addr: u64,
}

const CRASH_SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

/// The actions that were there before fdr's, by signal number. Written once, before fdr's
/// handlers are installed; read by the handlers.
struct Previous(std::cell::UnsafeCell<[libc::sigaction; 32]>);
// SAFETY: written only inside `watch_crashes`'s `Once` (before any handler that reads it is
// installed), read-only afterwards.
unsafe impl Sync for Previous {}
// SAFETY: a zeroed sigaction is a valid value (SIG_DFL, empty mask).
static PREVIOUS: Previous = Previous(std::cell::UnsafeCell::new(unsafe { std::mem::zeroed() }));
/// The `fn(Crash)` crash signals call, as an address (0: none yet).
static ON_CRASH: AtomicUsize = AtomicUsize::new(0);
static WATCHING: AtomicI32 = AtomicI32::new(0);

/// From now on SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT (those the program does not ignore)
/// first call `on_crash`, on the alternate stack, then go to the handler that was there before
/// as if fdr's had not run: the message, exit status and core dump stay what they would have
/// been. `on_crash` must be async-signal-safe. The handlers are installed once per process; a
/// later call changes only the function.
pub(crate) fn watch_crashes(on_crash: fn(Crash)) {
    ON_CRASH.store(on_crash as usize, Ordering::SeqCst);
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        for sig in CRASH_SIGNALS {
            // SAFETY: `PREVIOUS` is written here only, before our handler for `sig` exists;
            // the new action is zeroed then filled in; the handler is async-signal-safe.
            unsafe {
                let prev = &mut (*PREVIOUS.0.get())[sig as usize];
                libc::sigaction(sig, std::ptr::null(), prev);
                if prev.sa_sigaction == libc::SIG_IGN {
                    continue;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = crash_handler as extern "C" fn(_, _, _) as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(sig, &action, std::ptr::null_mut());
            }
        }
        WATCHING.store(1, Ordering::SeqCst);
    });
}

extern "C" fn crash_handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let f = ON_CRASH.load(Ordering::SeqCst);
    if f != 0 {
        // SAFETY: the system passes a valid siginfo to an SA_SIGINFO handler.
        let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as u64) };
        // SAFETY: `ON_CRASH` only ever holds a `fn(Crash)` (see `watch_crashes`).
        let f: fn(Crash) = unsafe { std::mem::transmute::<usize, fn(Crash)>(f) };
        f(Crash {
            signal: sig,
            code,
            addr,
        });
    }
    // SAFETY: `PREVIOUS` is read-only once handlers are installed; `sig` is one of ours.
    let prev = unsafe { &(*PREVIOUS.0.get())[sig as usize] };
    if prev.sa_sigaction == libc::SIG_DFL || prev.sa_sigaction == libc::SIG_IGN {
        // SAFETY: puts the previous action back. A fault re-runs its instruction when the
        // handler returns and meets that action; a signal sent by a process (or `abort`'s
        // raise) is sent again, to be delivered with it once this handler returns.
        unsafe {
            libc::sigaction(sig, prev, std::ptr::null_mut());
            if os::sent_by_a_process((*info).si_code) {
                libc::raise(sig);
            }
        }
        return;
    }
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
        let (p, fd) = map_shared_file(&path, len, 4096).unwrap();
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
    fn a_file_that_cannot_be_made_is_an_error_and_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("fdr-platform-missing-{}", pid()));
        let e = map_shared_file(&dir.join("box"), 4096, 4096).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(!dir.exists());
    }
}
