//! Which recording runs in this process, reached without a lock: the one word a hook reads
//! before anything else (may it record?), the running session's epoch, the session itself
//! (announced readers, parked sessions freed only when no reader is between loading the pointer
//! and taking its count), the start `FDR_OPTIONS` asks for (one thread reads it, the others
//! wait), and what a fork does to all of it. What every layer needs of the session, and nothing
//! more.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Once};

use crate::{tables::flags, Error};

use super::Session;

/// Whether this process records: the one word a hook reads before looking for a session.
/// Stored in [`STATE`] as its `u8`, so that the hot path's check stays one load and compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Process {
    /// No hook has looked at `FDR_OPTIONS` yet (and no recorder was started).
    Unknown = 0,
    /// A session is running.
    Active = 1,
    /// Nothing is recording.
    Idle = 2,
    /// A hook is reading `FDR_OPTIONS`.
    Starting = 3,
}

static STATE: AtomicU8 = AtomicU8::new(Process::Unknown as u8);
/// Epoch of the running session, 0 when none runs.
static EPOCH: AtomicU64 = AtomicU64::new(0);
static NEXT_EPOCH: AtomicU64 = AtomicU64::new(1);
/// The running session, holding one strong count, or null.
static CURRENT: AtomicPtr<Session> = AtomicPtr::new(std::ptr::null_mut());
/// Threads between loading `CURRENT` and taking their strong count.
static READERS: AtomicUsize = AtomicUsize::new(0);
/// How many forks this process is down from the one that started counting.
static FORKS: AtomicU64 = AtomicU64::new(0);
/// Set once `FDR_OPTIONS` started a recording: a forked child reads it again.
static AUTOSTARTED: AtomicBool = AtomicBool::new(false);

/// Sessions waiting to be freed.
const PARKING: usize = 64;
static PARKED: [AtomicPtr<Session>; PARKING] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; PARKING];

/// A new recording's epoch: never 0, never one an earlier recording of this process had.
pub(super) fn next_epoch() -> u64 {
    NEXT_EPOCH.fetch_add(1, Ordering::Relaxed)
}

/// Whether a hook that found no room should look further: false only when recording is known
/// to be off, which keeps instrumented code without a recorder at one extra branch.
#[inline(always)]
pub(crate) fn may_record() -> bool {
    STATE.load(Ordering::Relaxed) != Process::Idle as u8
}

/// The running session's epoch (0: none).
pub(crate) fn epoch() -> u64 {
    EPOCH.load(Ordering::Acquire)
}

/// Settles whether this process records before a hook goes on: the one caller that finds it
/// undecided runs `start`, which reads `FDR_OPTIONS`, may start a recording and ends with
/// [`autostart_done`]; the others wait while it runs ([`wait_for_start`]). The hooks' cold path
/// passes `autostart`'s run, which sits above it, through the crate root's `START_FROM_ENV`.
pub(crate) fn settle(start: fn()) {
    if claim_autostart() {
        start();
    } else {
        wait_for_start();
    }
}

/// True for the one caller that gets to read `FDR_OPTIONS` (it then calls `autostart_done`).
fn claim_autostart() -> bool {
    STATE.load(Ordering::Acquire) == Process::Unknown as u8
        && STATE
            .compare_exchange(
                Process::Unknown as u8,
                Process::Starting as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
}

/// Calls dropped because their thread waited past [`START_WAIT`] for a recording to start.
static DROPPED_AT_START: AtomicU64 = AtomicU64::new(0);

/// How long a thread waits for another thread that is starting the recording `FDR_OPTIONS`
/// asked for. A start takes a few milliseconds (the pool, the crash box, the clock's first
/// measurement); the bound is there for a starting thread that would need something the waiting
/// one holds (a lock of the program's own, around an instrumented call).
const START_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Waits while another thread starts the recording, so that this thread's first calls are
/// recorded, not dropped: a worker pool started before the main thread's first call loses none
/// of its work. Past [`START_WAIT`] the call is counted as dropped (`fdr info` says so).
fn wait_for_start() {
    if STATE.load(Ordering::Acquire) != Process::Starting as u8 {
        return;
    }
    let deadline = std::time::Instant::now() + START_WAIT;
    while STATE.load(Ordering::Acquire) == Process::Starting as u8 {
        if std::time::Instant::now() > deadline {
            DROPPED_AT_START.fetch_add(1, Ordering::Relaxed);
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

/// Calls dropped while waiting for a start, so far in this process.
pub(crate) fn dropped_at_start() -> u64 {
    DROPPED_AT_START.load(Ordering::Relaxed)
}

/// `FDR_OPTIONS` was read; `started` if it started a recording.
pub(crate) fn autostart_done(started: bool) {
    if started {
        AUTOSTARTED.store(true, Ordering::SeqCst);
    }
    // A recording it started becomes active only now, with its gate open: threads that waited
    // for the start then find every function's flags (profiled, triggers) set.
    let now = if started {
        Process::Active
    } else {
        Process::Idle
    };
    let _ = STATE.compare_exchange(
        Process::Starting as u8,
        now as u8,
        Ordering::AcqRel,
        Ordering::Acquire,
    );
    if !started {
        // Before the first sweep, so that a child forked during it can reset the sweep lock.
        at_fork();
        flags::close(0, epoch);
    }
}

/// How many forks down from the first recorder's process this one is.
pub(crate) fn forks() -> u64 {
    FORKS.load(Ordering::SeqCst)
}

/// The running session, if any.
pub(crate) fn current() -> Option<Arc<Session>> {
    READERS.fetch_add(1, Ordering::SeqCst);
    let p = CURRENT.load(Ordering::SeqCst);
    let s = (!p.is_null()).then(|| {
        // SAFETY: `p` came from `Arc::into_raw` in `install` and is not freed while a reader is
        // announced: `free_parked` frees nothing then, and `CURRENT` holds its count until the
        // pointer is parked.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    });
    READERS.fetch_sub(1, Ordering::SeqCst);
    s
}

/// Makes `session` the running one, unless one is running. `autostarted`: the hook starting
/// it from `FDR_OPTIONS` keeps the process in its starting state (other threads wait) until
/// [`autostart_done`], once the gate is open.
pub(crate) fn install(session: Arc<Session>, autostarted: bool) -> Result<(), Error> {
    free_parked();
    at_fork();
    let epoch = session.setup.epoch;
    let p = Arc::into_raw(session) as *mut Session;
    if CURRENT
        .compare_exchange(std::ptr::null_mut(), p, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // SAFETY: `p` was made by `into_raw` just above and published nowhere.
        drop(unsafe { Arc::from_raw(p) });
        return Err(Error::AlreadyRunning);
    }
    EPOCH.store(epoch, Ordering::Release);
    if !autostarted {
        STATE.store(Process::Active as u8, Ordering::Release);
    }
    Ok(())
}

/// `session` is no longer the running one (if it was).
pub(crate) fn uninstall(session: &Session) {
    let p = session as *const Session as *mut Session;
    // Park the pointer CURRENT held, which came from `Arc::into_raw` and may free the whole
    // allocation; `p`, made from a shared reference, may only read the session.
    if let Ok(held) =
        CURRENT.compare_exchange(p, std::ptr::null_mut(), Ordering::SeqCst, Ordering::SeqCst)
    {
        EPOCH.store(0, Ordering::Release);
        STATE.store(Process::Idle as u8, Ordering::Release);
        park(held);
    }
}

/// Gives up a strong count that a thread held through a raw pointer. A thread may do this from
/// a signal handler, so if it might be the last count, the session is parked rather than freed
/// there.
///
/// # Safety
/// `p` came from `Arc::into_raw` and the caller owns one strong count of it.
pub(crate) unsafe fn release(p: *const Session) {
    // SAFETY: per the contract, the count is ours, so the session is alive.
    if unsafe { Arc::strong_count(&std::mem::ManuallyDrop::new(Arc::from_raw(p))) } == 1 {
        park(p as *mut Session);
    } else {
        // SAFETY: per the contract.
        drop(unsafe { Arc::from_raw(p) });
    }
}

fn park(p: *mut Session) {
    for slot in PARKED.iter() {
        if slot
            .compare_exchange(std::ptr::null_mut(), p, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
    // Every place is taken: the session's memory is kept for the rest of the process.
}

/// Frees the parked sessions, unless a reader may be about to take a count of one.
fn free_parked() {
    if READERS.load(Ordering::SeqCst) != 0 {
        return;
    }
    for slot in PARKED.iter() {
        let p = slot.swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: parked pointers hold one strong count each and are no longer current.
            drop(unsafe { Arc::from_raw(p) });
        }
    }
}

/// Registers the fork handler, once.
fn at_fork() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        extern "C" fn in_child() {
            FORKS.fetch_add(1, Ordering::SeqCst);
            let p = CURRENT.swap(std::ptr::null_mut(), Ordering::SeqCst);
            // The parent's box is not the child's: its pages become the child's own before the
            // copy of the recording is stopped.
            crate::buffers::crash_box::after_fork();
            // The parent's threads' context-switch rings watch the parent's threads; this one
            // asks for its own when it joins a recording of the child's.
            crate::platform::switches::after_fork();
            if !p.is_null() {
                // SAFETY: CURRENT's count keeps the session alive; it is leaked here on purpose
                // (the child must not free, or touch the locks of, its parent's recording).
                unsafe { (*p).pool.stop() };
            }
            EPOCH.store(0, Ordering::SeqCst);
            let again = AUTOSTARTED.load(Ordering::SeqCst);
            flags::after_fork(again);
            let state = if again {
                Process::Unknown
            } else {
                Process::Idle
            };
            STATE.store(state as u8, Ordering::SeqCst);
        }
        // `in_child` only does atomic operations and async-signal-safe calls, all a forked child
        // of a threaded program may do.
        crate::platform::at_fork_child(in_child);
    });
}
