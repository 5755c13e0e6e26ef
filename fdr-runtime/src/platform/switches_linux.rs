//! Where a thread's time went while it was not running: the kernel's record of its context
//! switches (Linux `perf_event_open`, a software event of the thread with `context_switch`).
//!
//! The kernel writes a record into a small ring the thread maps each time the scheduler takes
//! it off a CPU (saying whether it was preempted, still runnable, or left by itself: a sleep, a
//! lock, I/O) and each time it puts it back. Recording costs the program nothing between
//! switches, but the kernel's record at each switch is not free: on a loopback service whose
//! workers switch at every request, 5 to 8 % of the server's CPU and 12 % of its p99
//! (`benches/README.md`, "A cost budget"). Reading the ring happens only at the end of a call past its
//! limit, on the call's own thread: the records since the call began say how long the thread
//! waited for a CPU (switched out while runnable, until switched back in) and how long it was
//! blocked (switched out by itself, until back in: the wait for a CPU after its wake-up is
//! counted there, as the records do not say when it was woken).
//!
//! A thread opens its ring when it first enters a function with a trigger (a poll timed
//! against the long-poll limit does not: every worker of an async program polls), and closes it when it exits (a forked child closes the copies
//! of its parent's). At most [`MAX_RINGS`] threads have one at a time: a
//! program with thousands of threads keeps its file descriptors. Where the kernel refuses (a
//! `perf_event_paranoid` of 3, a container's seccomp filter, a kernel before 4.17, which does
//! not tell preemptions apart), nothing is opened and calls are measured as before (the
//! watchdog's marks, `cpu_wait`).

use std::cell::Cell;
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

pub(crate) use super::switch_tally::{tally, Spent, Switch};

/// Threads that hold a ring at most: each costs a file descriptor and three pages.
pub(crate) const MAX_RINGS: usize = 1024;

/// Data pages of a ring (a power of two): 8 KiB, 512 switches out and back in.
const DATA_PAGES: usize = 2;

/// Every ring of the process, by slot (-1: free), so that a forked child, whose threads are
/// gone, can close the copies it inherited.
static FDS: [AtomicI32; MAX_RINGS] = [const { AtomicI32::new(-1) }; MAX_RINGS];
static MAPS: [AtomicPtr<u8>; MAX_RINGS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_RINGS];

/// The calling thread's ring: its slot in [`FDS`] (`usize::MAX`: none); `tried` is set once
/// the thread asked, whether or not it got one. A thread asks before the entry of the first
/// call it times, so its ring covers every call it measures.
struct Ring {
    slot: Cell<usize>,
    tried: Cell<bool>,
}

thread_local! {
    // Const-initialised without a destructor (the thread's exit hook closes it), so reaching
    // it is an address computation and it stays readable while the thread exits.
    static RING: Ring = const {
        Ring {
            slot: Cell::new(usize::MAX),
            tried: Cell::new(false),
        }
    };
}

fn page() -> usize {
    // SAFETY: sysconf only reads a system constant.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).unwrap_or(4096).max(4096)
}

/// Opens the calling thread's ring, once (later calls return at once). Async-signal-safe: a
/// few system calls and no allocation.
#[cold]
#[inline(never)]
pub(crate) fn watch_this_thread() {
    RING.with(|r| {
        if r.tried.replace(true) {
            return;
        }
        // A free slot first, so that a full table costs no system call.
        let Some(slot) = FDS.iter().position(|f| {
            f.compare_exchange(-1, i32::MAX, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        }) else {
            return;
        };
        match open() {
            Some((fd, map)) => {
                MAPS[slot].store(map, Ordering::Release);
                FDS[slot].store(fd, Ordering::Release);
                r.slot.set(slot);
            }
            None => FDS[slot].store(-1, Ordering::Release),
        }
    });
}

/// The event that holds the kernel's switch hooks on for the recording (-1: none).
static HOOKS: AtomicI32 = AtomicI32::new(-1);

/// Turns the kernel's context-switch hooks on for the recording, by an event of the calling
/// thread, until [`release_hooks`]; once (later calls return at once). Where the kernel
/// refuses, its rings are refused too, and nothing is held.
///
/// The kernel calls its switch hooks only while some event in the system asks for switches,
/// and turning them on waits for every CPU to see the change: the first ring opened when none
/// was open anywhere (or a second after the last was closed) took 8 to 15 ms, the next 55 µs.
/// A thread opens its ring inside the first call it times with a trigger, so that wait was a
/// request's latency, counted in the task that called it: on the axum example a 1 ms
/// downstream call lasted 21 ms and fired the 20 ms trigger meant for the slow one. Held from
/// `start`, the turning-on is paid there. The event has no ring: the kernel writes nothing.
#[cold]
pub(crate) fn hold_hooks() {
    if HOOKS.load(Ordering::Acquire) >= 0 {
        return;
    }
    let Some(fd) = open_event() else {
        return;
    };
    if HOOKS
        .compare_exchange(-1, fd, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        // SAFETY: the descriptor just opened, which no one else has seen.
        unsafe { libc::close(fd) };
    }
}

/// Lets the kernel's switch hooks go at the end of the recording (or, in a forked child, its
/// copy of the parent's event). Async-signal-safe.
pub(crate) fn release_hooks() {
    let fd = HOOKS.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        // SAFETY: the descriptor `hold_hooks` opened, taken out of the static so that it is
        // closed once.
        unsafe { libc::close(fd) };
    }
}

/// Whether a recording holds the switch hooks on now.
#[cfg_attr(not(feature = "testing"), allow(dead_code))] // read by `testing` only
pub(crate) fn hooks_held() -> bool {
    HOOKS.load(Ordering::Acquire) >= 0
}

/// How many threads hold a ring now.
#[cfg_attr(not(feature = "testing"), allow(dead_code))] // read by `testing` only
pub(crate) fn rings_open() -> usize {
    FDS.iter()
        .filter(|f| f.load(Ordering::Relaxed) >= 0)
        .count()
}

/// Closes the calling thread's ring, at its exit.
pub(crate) fn close_this_thread() {
    RING.with(|r| {
        let slot = r.slot.replace(usize::MAX);
        if slot < MAX_RINGS {
            release(slot);
        }
    });
}

/// In a forked child: closes the copies of every ring the parent's threads held (they watch
/// the parent's threads, which the child does not have), and lets the child's thread ask for
/// its own. Atomic operations and async-signal-safe calls only.
pub(crate) fn after_fork() {
    for slot in 0..MAX_RINGS {
        release(slot);
    }
    release_hooks();
    RING.with(|r| {
        r.slot.set(usize::MAX);
        r.tried.set(false);
    });
}

/// Unmaps and closes the ring in `slot`, if one is there.
fn release(slot: usize) {
    let map = MAPS[slot].swap(std::ptr::null_mut(), Ordering::AcqRel);
    let fd = FDS[slot].swap(-1, Ordering::AcqRel);
    if fd < 0 || fd == i32::MAX {
        return;
    }
    // SAFETY: `map` and `fd` are a mapping and descriptor `open` made, taken out of the table
    // above so that no one releases them twice; their thread no longer reads them (it is
    // exiting, or it is the parent's, absent from this child).
    unsafe {
        if !map.is_null() {
            libc::munmap(map.cast(), page() * (1 + DATA_PAGES));
        }
        libc::close(fd);
    }
}

// The kernel's ABI (include/uapi/linux/perf_event.h), as much of it as is used here.
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_DUMMY: u64 = 9;
const PERF_SAMPLE_TIME: u64 = 1 << 2;
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;
const ATTR_SAMPLE_ID_ALL: u64 = 1 << 18;
const ATTR_USE_CLOCKID: u64 = 1 << 25;
const ATTR_CONTEXT_SWITCH: u64 = 1 << 26;
const ATTR_WRITE_BACKWARD: u64 = 1 << 27;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_RECORD_SWITCH: u32 = 14;
const MISC_SWITCH_OUT: u16 = 1 << 13;
const MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;
/// `_IOW('$', 9, __u32)`.
const PERF_EVENT_IOC_PAUSE_OUTPUT: libc::c_ulong = 0x4004_2409;
/// Where the mapping's first page keeps `data_head`.
const DATA_HEAD: usize = 1024;

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER5` (112 bytes).
#[repr(C)]
#[derive(Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}

/// Opens the calling thread's context-switch event: its descriptor, or `None` where the kernel
/// refuses.
fn open_event() -> Option<i32> {
    if cfg!(miri) {
        return None;
    }
    let attr = Attr {
        kind: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<Attr>() as u32,
        config: PERF_COUNT_SW_DUMMY,
        sample_type: PERF_SAMPLE_TIME,
        flags: ATTR_EXCLUDE_KERNEL
            | ATTR_EXCLUDE_HV
            | ATTR_SAMPLE_ID_ALL
            | ATTR_USE_CLOCKID
            | ATTR_CONTEXT_SWITCH
            | ATTR_WRITE_BACKWARD,
        clockid: libc::CLOCK_MONOTONIC,
        ..Attr::default()
    };
    // SAFETY: `attr` is a valid `perf_event_attr` of the size it states, alive for the call;
    // pid 0 and cpu -1 watch the calling thread on any CPU; no group.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const Attr,
            0,
            -1,
            -1,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    i32::try_from(fd).ok().filter(|&fd| fd >= 0)
}

/// Opens the calling thread's event and maps its ring.
fn open() -> Option<(i32, *mut u8)> {
    let fd = open_event()?;
    let len = page() * (1 + DATA_PAGES);
    // SAFETY: maps `fd`'s ring read-only (which makes the kernel overwrite its oldest records
    // rather than wait for a reader); checked for failure below.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        // SAFETY: `fd` was opened above and is closed once.
        unsafe { libc::close(fd) };
        return None;
    }
    Some((fd, map.cast()))
}

/// How the calling thread's time between `start` and `end` (`CLOCK_MONOTONIC` ns, `end` at
/// most now) was spent off its CPU, from its ring; `None` when it has none. The ring was open
/// before the call began (its thread asked before timing any call). Async-signal-safe.
pub(crate) fn spent(start: u64, end: u64) -> Option<Spent> {
    let slot = RING.with(|r| r.slot.get());
    if slot >= MAX_RINGS {
        return None;
    }
    let fd = FDS[slot].load(Ordering::Acquire);
    let map = MAPS[slot].load(Ordering::Acquire);
    if fd < 0 || map.is_null() {
        return None;
    }
    let size = page() * DATA_PAGES;
    // SAFETY: `map` is this thread's live mapping of `1 + DATA_PAGES` pages (`open`); the
    // first page is the kernel's control page, whose `data_head` is a naturally aligned u64
    // the kernel updates: read atomically.
    let head = unsafe { &*(map.add(DATA_HEAD) as *const std::sync::atomic::AtomicU64) };
    // SAFETY: as above: the data pages follow the control page.
    let data = unsafe { std::slice::from_raw_parts(map.add(page()), size) };
    // Paused while read, so that a switch meanwhile cannot overwrite the records being read.
    // SAFETY: an ioctl on our own descriptor with an integer argument.
    unsafe { libc::ioctl(fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 1) };
    let from = head.load(Ordering::Acquire);
    let mut records = Records {
        data,
        at: from,
        read: 0,
        lost: false,
    };
    let mut spent = tally(&mut records, start, end);
    // Every record read without reaching the call's start: whole if the ring lost none since
    // it was opened, before the call began.
    spent.whole |= !records.lost;
    // SAFETY: as above.
    unsafe { libc::ioctl(fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 0) };
    Some(spent)
}

/// The switches of a backward ring, newest first.
struct Records<'a> {
    data: &'a [u8],
    /// Where the next record begins (a running offset, taken modulo the ring's size).
    at: u64,
    /// Bytes read so far: at most the ring's size.
    read: u64,
    /// The oldest records were overwritten (the ring went round).
    lost: bool,
}

impl Records<'_> {
    /// `n` bytes at running offset `at`, wrapping round the ring's end.
    fn bytes<const N: usize>(&self, at: u64) -> [u8; N] {
        let mut out = [0u8; N];
        let len = self.data.len() as u64;
        for (i, b) in out.iter_mut().enumerate() {
            *b = self.data[(at.wrapping_add(i as u64) % len) as usize];
        }
        out
    }
}

impl Iterator for Records<'_> {
    type Item = Switch;

    fn next(&mut self) -> Option<Switch> {
        loop {
            let header = self.bytes::<8>(self.at);
            let kind = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
            let misc = u16::from_ne_bytes([header[4], header[5]]);
            let size = u16::from_ne_bytes([header[6], header[7]]);
            // A zero header is the part of the ring never written; a record past the ring's
            // end was overwritten in part.
            if size < 8 {
                return None;
            }
            if self.read + u64::from(size) > self.data.len() as u64 {
                self.lost = true;
                return None;
            }
            let at = self.at;
            self.at = self.at.wrapping_add(u64::from(size));
            self.read += u64::from(size);
            if kind != PERF_RECORD_SWITCH || size < 16 {
                continue;
            }
            let time = u64::from_ne_bytes(self.bytes::<8>(at.wrapping_add(8)));
            return Some(if misc & MISC_SWITCH_OUT != 0 {
                Switch::Out {
                    at: time,
                    preempted: misc & MISC_SWITCH_OUT_PREEMPT != 0,
                }
            } else {
                Switch::In { at: time }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "asks the kernel for a ring")]
    fn a_sleep_is_seen_as_time_off_the_cpu() {
        let me = std::thread::spawn(|| {
            watch_this_thread();
            let start = crate::platform::monotonic_ns();
            let got = spent(start, start);
            std::thread::sleep(std::time::Duration::from_millis(20));
            let end = crate::platform::monotonic_ns();
            let s = spent(start, end);
            close_this_thread();
            (got, s, end - start)
        });
        let (got, s, took) = me.join().unwrap();
        let Some(s) = s else {
            assert_eq!(got, None);
            eprintln!("skipped: the kernel gives no context-switch records here");
            return;
        };
        assert!(s.whole, "{s:?}");
        // A sleep is the thread leaving by itself: nearly all of it is off the CPU.
        assert!(
            s.off_cpu_ns >= 19_000_000 && s.off_cpu_ns <= took,
            "{s:?} of {took}"
        );
    }
}
