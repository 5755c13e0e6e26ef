//! The crash box: a recorder's buffer pool kept in a shared file mapping, so that a process that
//! dies without writing a log (SIGKILL, the OOM killer, a segfault, `abort`, a stack overflow,
//! SIGTERM) still leaves its window, in the kernel's page cache, for [`recover`] to turn into a
//! log.
//!
//! # Layout (version 1, little-endian)
//!
//! | bytes | what |
//! |---|---|
//! | 0..4096 | the header: the fields of [`at`], the absolute path of the final log, the marks of the signals that arrived |
//! | `lead_offset`, twice `lead_capacity` | two areas of extension records (run, functions, threads): the active one is whole |
//! | `slots_offset` | one 64-byte slot per buffer: what its owner published ([`slot`]) |
//! | `words_offset` | the buffers, `buffer_size` bytes each, exactly as the recorder writes them |
//!
//! Fields added after the first boxes (from [`at::PID_NS`] on) sit where older boxes hold
//! zeros, which read as "not said": an older box is read as it always was.
//!
//! # Why a dead process's buffers can be cut at a complete record
//!
//! The recorder writes a buffer's words first and publishes the buffer's length after them
//! (a release store; see the runtime's `buffer_state` module): at every instant, the words below the
//! published length are whole records. Undoing a call (the rewind) publishes the shorter length
//! *before* writing over the erased words, so no word below the length is ever written again
//! while it is below it. A process that dies stops between two stores: its last stores are in
//! the page cache, in program order as far as the length is concerned (x86 keeps stores in
//! order; on aarch64 the release store orders them). So whatever instant it died at, a buffer's
//! published length cuts it at its last complete record; the buffer's first two words, where a
//! block's `BufferExtents` goes, are written by the reader from that length.
//!
//! A slot that was being handed to a new owner at the instant of death has length 0 (the pool
//! resets it before bumping the generation): it holds nothing. The lead areas are written
//! whole, then their length, then the index of the active one, so a reader never sees a
//! half-written function table. Nothing here trusts the file: every offset and length is
//! checked against the box's size before use, and a block that does not decode is cut where
//! it stops decoding ([`recover`] never panics).
//!
//! # Reading what was written, not the box
//!
//! A box is as large as the pool (gigabytes with a large `buffer_count`) and mostly holes where
//! no thread wrote. Recovery reads its header, its active table, its slots and, of each buffer
//! that holds records, the part its owner published ([`Source`]): memory and time follow what
//! the process recorded, not the box's size.
//!
//! # Whose box, and when it can be taken
//!
//! A box's name carries its program, pid and a tag of what tells its process from every other
//! with that pid ([`file_name`]); its header carries that identity (pid, PID namespace, boot,
//! start time). Its process holds a lock on it for as long as it lives, which tells a reader in
//! any PID namespace whether it still runs, and lets exactly one reader take it ([`claim`]).

use std::path::PathBuf;

use crate::events::EventDecoder;
use crate::limits;
use crate::units::{ns_to_ticks, ticks_to_ns};
use crate::{
    lead_block, meta, meta_bytes, ClockSource, Ending, Extension, FileHeader, FormatError,
    LeadStart, Reason, ReasonInfo, RunInfo, ThreadInfo, BLOCK_PREAMBLE_WORDS, HEADER_SIZE,
};

mod box_names;
mod claim;
mod process;
mod source;

pub use box_names::{
    file_name, file_safe, laying_out_name, leftover, pid_of, recovered_name, tag, Leftover,
};
pub use claim::{
    claim, clean_leftovers, is_held, write_recovered, Claimed, Holder, Look, Skip, Status,
};
pub use source::{FileSource, Source};

/// The first eight bytes of every box.
pub const MAGIC: [u8; 8] = *b"FDR-BOX\x01";
/// The layout version this crate reads and writes.
pub const VERSION: u32 = 1;
/// Bytes of the header, before the lead areas.
pub const HEADER_BYTES: usize = 4096;
/// Bytes per slot.
pub const SLOT_BYTES: usize = 64;
// The out path's field is part of the layout the recorder writes (through this path), not only
// a bound a reader checks.
pub use crate::limits::MAX_OUT_PATH;

/// Byte offsets of the header's fields.
pub mod at {
    /// `[u8; 8]`, [`super::MAGIC`].
    pub const MAGIC: usize = 0;
    /// `u32`, [`super::VERSION`].
    pub const VERSION: usize = 8;
    /// `u32`, one of [`super::state`].
    pub const STATE: usize = 12;
    /// `i32`, the recording process.
    pub const PID: usize = 16;
    /// `u32`, the clock source as the run record codes it
    /// ([`ClockSource::code`](crate::ClockSource::code)).
    pub const CLOCK: usize = 20;
    /// `u64`, the process's start time (see [`process_start`](super::process_start): Linux's clock
    /// ticks since boot, field 22 of the main thread's `stat`; macOS's microseconds since the epoch),
    /// which tells the process from a later one given the same pid; 0 unknown.
    pub const PROC_START: usize = 24;
    /// `[u8; 16]`, the boot id (Linux's `/proc/sys/kernel/random/boot_id`, macOS's
    /// `kern.bootsessionuuid`); zeros unknown.
    pub const BOOT_ID: usize = 32;
    /// `u64`, ticks per second: an estimate until `CALIBRATED` is 1.
    pub const TICKS_PER_SECOND: usize = 48;
    /// `u32`, 1 once `TICKS_PER_SECOND` is the calibrated frequency.
    pub const CALIBRATED: usize = 56;
    /// `u64` x 4: a (counter, monotonic ns) pair taken at start and one taken later (0 until
    /// then), from which a reader finishes a calibration the process did not.
    pub const CAL_TSC0: usize = 64;
    /// See [`CAL_TSC0`].
    pub const CAL_NS0: usize = 72;
    /// See [`CAL_TSC0`].
    pub const CAL_TSC1: usize = 80;
    /// See [`CAL_TSC0`].
    pub const CAL_NS1: usize = 88;
    /// `i64`, wall-clock start, seconds since the Unix epoch.
    pub const START_SECS: usize = 96;
    /// `u32`, nanoseconds within that second.
    pub const START_NANOS: usize = 104;
    /// `i32`, the crash signal a handler caught (0: none caught).
    pub const CRASH_SIGNAL: usize = 108;
    /// `u64`, the counter at start.
    pub const START_TSC: usize = 112;
    /// `u64`, the threshold in nanoseconds.
    pub const THRESHOLD_NS: usize = 120;
    /// `u64`, the threshold in ticks.
    pub const THRESHOLD_TICKS: usize = 128;
    /// `u64`, bytes per buffer.
    pub const BUFFER_SIZE: usize = 136;
    /// `u64`, buffers in the pool.
    pub const BUFFER_COUNT: usize = 144;
    /// `u64`, where the first lead area starts (the second follows it).
    pub const LEAD_OFFSET: usize = 152;
    /// `u64`, bytes of each lead area.
    pub const LEAD_CAPACITY: usize = 160;
    /// `u64` x 2, bytes written in each lead area.
    pub const LEAD_LEN: usize = 168;
    /// `u64`, the active lead area (0 or 1).
    pub const LEAD_ACTIVE: usize = 184;
    /// `u64`, where the slots start.
    pub const SLOTS_OFFSET: usize = 192;
    /// `u64`, where the buffers start.
    pub const WORDS_OFFSET: usize = 200;
    /// `u64`, the box's size in bytes.
    pub const TOTAL_BYTES: usize = 208;
    /// `u64`, the counter when the process was last seen alive (its background writer's tick).
    pub const ALIVE_TSC: usize = 216;
    /// `i32`, the thread that took the crash signal.
    pub const CRASH_TID: usize = 224;
    /// `i32`, the signal's `si_code`.
    pub const CRASH_CODE: usize = 228;
    /// `u64`, the faulting address.
    pub const CRASH_ADDR: usize = 232;
    /// `u64`, the counter when the crash signal was caught.
    pub const CRASH_TSC: usize = 240;
    /// `u64`, the recording's `max_age` in nanoseconds (0 none).
    pub const MAX_AGE_NS: usize = 248;
    /// `u32`, bytes of the final log's path.
    pub const OUT_LEN: usize = 256;
    /// The final log's absolute path, [`crate::limits::MAX_OUT_PATH`] bytes at most.
    pub const OUT: usize = 264;
    /// `u64`, the inode of the process's PID namespace (Linux; 0 unknown): a pid means a
    /// process only within its namespace.
    pub const PID_NS: usize = 2312;
    /// `u32`, [`super::flags`].
    pub const FLAGS: usize = 2320;
    /// `i32`, the parent's pid, for a forked child's box ([`super::flags::FORKED`]).
    pub const PARENT_PID: usize = 2324;
    /// `u64`, the longest the process goes between two signs of life (`ALIVE_TSC`), in
    /// nanoseconds (0: a second, as before the field).
    pub const ALIVE_PERIOD_NS: usize = 2328;
    /// `u64`, records the threads could not write for want of a buffer, counted as it happens.
    pub const RECORDS_DROPPED: usize = 2336;
    /// `u64`, buffers taken back from one thread for another (a ring's oldest), counted as it
    /// happens.
    pub const BUFFERS_RECYCLED: usize = 2344;
    /// `i32`, a terminating signal the program handled (its handler returned, or it was
    /// ignored as a namespace's first process does) and lived on after (0: none).
    pub const HANDLED_SIGNAL: usize = 2352;
    /// `u32`, what the crash mark is beyond its signal: [`super::mark::STACK_OVERFLOW`] (0:
    /// nothing more).
    pub const CRASH_KIND: usize = 2356;
    /// `u64`, the counter when `HANDLED_SIGNAL` arrived.
    pub const HANDLED_TSC: usize = 2360;
    /// `i32`, the last child the process forked (written by the child as it starts).
    pub const FORKED_CHILD: usize = 2368;
    /// `u64`, the counter when it forked it.
    pub const FORKED_TSC: usize = 2376;
}

/// The bits of the header's `FLAGS`.
pub mod flags {
    /// The process holds an exclusive `flock` on its box for as long as it lives: a box whose
    /// lock can be taken has no process recording into it ([`super::claim`]).
    pub const LOCKED: u32 = 1;
    /// The process is a forked child (of `PARENT_PID`), which usually ends with `_exit`.
    pub const FORKED: u32 = 2;
}

/// The values of the header's `CRASH_KIND`.
pub mod mark {
    /// The crash signal was a stack overflow: a fault on the thread's stack guard (seen by the
    /// address, or by Rust's runtime aborting from within its fault handler).
    pub const STACK_OVERFLOW: u32 = 1;
}

/// The values of the header's `STATE`.
pub mod state {
    /// The box is being laid out: nothing in it yet.
    pub const LAYING_OUT: u32 = 0;
    /// The process records into it.
    pub const RECORDING: u32 = 1;
    /// The process wrote its final log: nothing to recover.
    pub const CLOSED: u32 = 2;
}

/// Byte offsets of a slot's fields (the runtime's `Slot`, which checks them at compile time).
pub mod slot {
    /// `u32`, words published.
    pub const LEN: usize = 0;
    /// `u32`, one of `FREE` (0), `OWNED` (1), `RETIRED` (2).
    pub const STATE: usize = 20;
    /// `i32`, the owner's thread id.
    pub const TID: usize = 24;
    /// `u64`, bumped each time the buffer changes owner.
    pub const GEN: usize = 32;
    /// `u32`, the owner's entry in the thread registry.
    pub const THREAD: usize = 40;
    /// `u32`, the how-many-th buffer of that thread.
    pub const THREAD_SEQ: usize = 44;
    /// `[u8; 16]`, the owner's name as the kernel keeps it, NUL-padded (zeros in older boxes):
    /// a thread that started after the box's thread table was last written is still named.
    pub const NAME: usize = 48;
    /// A slot with no data.
    pub const FREE: u32 = 0;
}

/// How a box's process stands, by its pid (boxes made before the lock; [`claim`] judges
/// the others).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// It runs: its box is left alone.
    Alive,
    /// No process has its pid, or the one that has it started later (pid reused), or the
    /// machine rebooted since.
    Gone,
}

/// How the recording's clock frequency was known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Calibration {
    /// The process finished its calibration.
    Final,
    /// From the two (counter, monotonic) pairs the process left.
    Pairs,
    /// The quick estimate taken at start (the process died before a second pair).
    Estimate,
}

/// What a box says about its process, read without the process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoxInfo {
    /// The recording process.
    pub pid: i32,
    /// Its start time in clock ticks since boot (0 unknown).
    pub proc_start: u64,
    /// The boot it ran in (zeros unknown).
    pub boot_id: [u8; 16],
    /// Its PID namespace's inode (0 unknown).
    pub pid_ns: u64,
    /// [`flags`] of the box.
    pub flags: u32,
    /// For a forked child, its parent's pid (0 otherwise).
    pub parent_pid: i32,
    /// One of [`state`].
    pub state: u32,
    /// The program's name.
    pub program: String,
    /// Where the process would have written its final log.
    pub out: PathBuf,
    /// How it ended, as far as the box tells ([`Ending::Exec`] is told by [`Claimed::status`],
    /// not by the box).
    pub ending: Ending,
    /// The signal it died of, caught on its way (0: none).
    pub signal: i32,
    /// Its `si_code`.
    pub code: i32,
    /// The thread that took it.
    pub crash_tid: i32,
    /// The faulting address.
    pub address: u64,
    /// For [`Ending::ForkedChild`] the parent, for [`Ending::AfterFork`] the child (0: none).
    pub other_pid: i32,
    /// A terminating signal the program handled and lived on after (0: none).
    pub handled_signal: i32,
    /// Ticks per second, and how they were known.
    pub ticks_per_second: u64,
    /// See [`Calibration`].
    pub calibration: Calibration,
    /// Bytes per buffer.
    pub buffer_size: u64,
    /// Buffers in the pool.
    pub buffer_count: u64,
    /// Buffers that hold records.
    pub buffers_used: u64,
    /// Functions in the box's table.
    pub functions: usize,
    /// Threads in the box's table (its writer adds them every second; a newer one is named by
    /// its buffer's slot).
    pub threads: usize,
    /// Records dropped for want of a buffer, as of the death.
    pub records_dropped: u64,
    /// Buffers recycled, as of the death.
    pub buffers_recycled: u64,
}

impl BoxInfo {
    /// How the process ended, in words: the signal, a kill no handler saw, an `exec`, ...
    ///
    /// ```
    /// # use fdr_format::crash_box::{BoxInfo, Calibration};
    /// # use fdr_format::Ending;
    /// let mut b = BoxInfo { pid: 1, proc_start: 0, boot_id: [0; 16], pid_ns: 0, flags: 0,
    ///     parent_pid: 0, state: 1, program: "app".into(), out: "/tmp/app.fdr".into(),
    ///     ending: Ending::Killed, signal: 0, code: 0, crash_tid: 0, address: 0, other_pid: 0,
    ///     handled_signal: 0, ticks_per_second: 1, calibration: Calibration::Final,
    ///     buffer_size: 0, buffer_count: 0, buffers_used: 0, functions: 0, threads: 0,
    ///     records_dropped: 0, buffers_recycled: 0 };
    /// assert!(b.death().starts_with("killed: no handler ran"));
    /// b.ending = Ending::Signal;
    /// b.signal = 11;
    /// b.crash_tid = 7;
    /// b.address = 0x10;
    /// assert_eq!(b.death(), "SIGSEGV (segmentation fault) at address 0x10 on thread 7");
    /// ```
    pub fn death(&self) -> String {
        describe_ending(&ReasonInfo {
            reason: Reason::Crash,
            ending: self.ending,
            signal: self.signal,
            address: self.address,
            tid: self.crash_tid,
            other_pid: self.other_pid,
            handled_signal: self.handled_signal,
            ..ReasonInfo::default()
        })
    }
}

/// A signal's name and what it means, as this system numbers signals (the box was made on the
/// machine that reads it); `None` for a number without a name here.
///
/// ```
/// assert_eq!(fdr_format::crash_box::signal_name(15), Some(("SIGTERM", "terminated")));
/// ```
pub fn signal_name(signal: i32) -> Option<(&'static str, &'static str)> {
    SIGNALS
        .iter()
        .find(|(n, _, _)| *n == signal)
        .map(|&(_, name, what)| (name, what))
}

#[cfg(unix)]
const SIGNALS: &[(i32, &str, &str)] = &[
    (libc::SIGHUP, "SIGHUP", "hangup"),
    (libc::SIGINT, "SIGINT", "interrupt"),
    (libc::SIGQUIT, "SIGQUIT", "quit"),
    (libc::SIGILL, "SIGILL", "illegal instruction"),
    (libc::SIGTRAP, "SIGTRAP", "trace trap"),
    (libc::SIGABRT, "SIGABRT", "abort"),
    (libc::SIGBUS, "SIGBUS", "bus error"),
    (libc::SIGFPE, "SIGFPE", "arithmetic error"),
    (libc::SIGKILL, "SIGKILL", "killed"),
    (libc::SIGUSR1, "SIGUSR1", "user signal 1"),
    (libc::SIGSEGV, "SIGSEGV", "segmentation fault"),
    (libc::SIGUSR2, "SIGUSR2", "user signal 2"),
    (libc::SIGPIPE, "SIGPIPE", "broken pipe"),
    (libc::SIGALRM, "SIGALRM", "alarm clock"),
    (libc::SIGTERM, "SIGTERM", "terminated"),
    (libc::SIGXCPU, "SIGXCPU", "CPU time limit exceeded"),
    (libc::SIGXFSZ, "SIGXFSZ", "file size limit exceeded"),
    (libc::SIGVTALRM, "SIGVTALRM", "virtual timer expired"),
    (libc::SIGPROF, "SIGPROF", "profiling timer expired"),
    (libc::SIGSYS, "SIGSYS", "bad system call"),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    (libc::SIGSTKFLT, "SIGSTKFLT", "stack fault"),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    (libc::SIGPWR, "SIGPWR", "power failure"),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    (libc::SIGIO, "SIGIO", "I/O possible"),
];

/// Linux's numbers, for a box read where signals have no numbers of their own.
#[cfg(not(unix))]
const SIGNALS: &[(i32, &str, &str)] = &[
    (1, "SIGHUP", "hangup"),
    (2, "SIGINT", "interrupt"),
    (3, "SIGQUIT", "quit"),
    (4, "SIGILL", "illegal instruction"),
    (6, "SIGABRT", "abort"),
    (7, "SIGBUS", "bus error"),
    (8, "SIGFPE", "arithmetic error"),
    (11, "SIGSEGV", "segmentation fault"),
    (13, "SIGPIPE", "broken pipe"),
    (15, "SIGTERM", "terminated"),
];

/// Whether `signal` names an address (a fault the CPU raised).
fn names_an_address(signal: i32) -> bool {
    matches!(
        signal_name(signal),
        Some(("SIGSEGV" | "SIGBUS" | "SIGILL" | "SIGFPE", _))
    )
}

fn signal_words(signal: i32) -> String {
    match signal_name(signal) {
        Some((name, what)) => format!("{name} ({what})"),
        None => format!("signal {signal}"),
    }
}

/// A duration as a person reads it at a glance: `31.2 s`, `4.1 ms`, `870 µs`.
fn roughly(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 => format!("{:.1} s", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.1} ms", n as f64 / 1e6),
        n => format!("{} µs", n / 1000),
    }
}

/// How `fdr info` and `fdr recover` word the way a process whose box was recovered ended
/// (the reason record of its log): the signal and where, a stack overflow, a kill no handler
/// saw, an `exec`, a forked child's `_exit`; then a terminating signal it handled before.
///
/// ```
/// use fdr_format::{crash_box::describe_ending, Ending, Reason, ReasonInfo};
/// let r = ReasonInfo { reason: Reason::Crash, ending: Ending::Signal, signal: 15, tid: 3,
///     ..ReasonInfo::default() };
/// assert_eq!(describe_ending(&r), "SIGTERM (terminated) on thread 3");
/// let r = ReasonInfo { ending: Ending::Killed, handled_signal: 15,
///     handled_before_ns: 30_000_000_000, ..r };
/// assert_eq!(describe_ending(&r), "killed: no handler ran (SIGKILL, the OOM killer); \
///     SIGTERM came 30.0 s before and the program handled it");
/// ```
pub fn describe_ending(r: &ReasonInfo) -> String {
    let ending = match r.ending {
        Ending::Unknown if r.signal != 0 => Ending::Signal,
        Ending::Unknown => Ending::Killed,
        e => e,
    };
    let thread = if r.tid != 0 {
        format!(" on thread {}", r.tid)
    } else {
        String::new()
    };
    let mut s = match ending {
        Ending::Signal | Ending::Unknown => {
            let mut s = signal_words(r.signal);
            if names_an_address(r.signal) {
                s.push_str(&format!(" at address {:#x}", r.address));
            }
            s + &thread
        }
        Ending::StackOverflow => format!(
            "stack overflow{thread} ({} at address {:#x})",
            signal_name(r.signal).map_or("a fault", |n| n.0),
            r.address
        ),
        Ending::Killed => "killed: no handler ran (SIGKILL, the OOM killer)".to_string(),
        Ending::Exec => {
            "replaced its program by exec: the window ends there (not a crash)".to_string()
        }
        Ending::ForkedChild => format!(
            "ended with no signal to catch: `_exit`, as a child forked by process {} ends, or \
             SIGKILL",
            r.other_pid
        ),
        Ending::AfterFork => format!(
            "ended with no signal to catch right after forking process {}: `_exit`, as the \
             parent of `daemon()` does, or SIGKILL",
            r.other_pid
        ),
    };
    if r.handled_signal != 0 {
        let name = signal_name(r.handled_signal).map_or("a signal", |n| n.0);
        if r.handled_before_ns != 0 {
            s.push_str(&format!(
                "; {name} came {} before and the program handled it",
                roughly(r.handled_before_ns)
            ));
        } else {
            s.push_str(&format!("; {name} came before and the program handled it"));
        }
    }
    s
}

/// How `fdr info` and `fdr recover` word a death by `signal` (0: one no handler saw).
///
/// ```
/// assert_eq!(fdr_format::crash_box::describe_death(6, 0, 3), "SIGABRT (abort) on thread 3");
/// ```
pub fn describe_death(signal: i32, address: u64, tid: i32) -> String {
    describe_ending(&ReasonInfo {
        reason: Reason::Crash,
        signal,
        address,
        tid,
        ..ReasonInfo::default()
    })
}

/// A box turned into a log.
#[derive(Clone, Debug)]
pub struct Recovered {
    /// What the box said.
    pub info: BoxInfo,
    /// The log: a valid fdr (XRay FDR version 5) log, reason [`Reason::Crash`].
    pub log: Vec<u8>,
}

/// Whether `bytes` (a file's start) is a crash box.
///
/// ```
/// assert!(fdr_format::crash_box::is_box(b"FDR-BOX\x01 and the rest"));
/// assert!(!fdr_format::crash_box::is_box(b"\x05\x00\x01\x00"));
/// ```
pub fn is_box(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..8] == MAGIC
}

/// Where boxes go when `crash_dir` is not given: `$XDG_RUNTIME_DIR`, else `/dev/shm`, else the
/// temporary directory. The first two are memory (tmpfs): nothing goes to disk.
pub fn default_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        let d = PathBuf::from(d);
        if d.is_dir() {
            return d;
        }
    }
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        return shm;
    }
    std::env::temp_dir()
}

/// This machine's boot id (zeros where the system does not say).
pub fn boot_id() -> [u8; 16] {
    process::boot_id()
}

/// When process `pid` started, as a number that tells it from a later process given the same
/// pid (Linux: clock ticks since boot, field 22 of its main thread's `stat`; macOS:
/// microseconds since the epoch), or `None` when no such process is visible.
pub fn process_start(pid: i32) -> Option<u64> {
    process::process_start(pid)
}

/// The inode of this process's PID namespace (Linux), `None` where there is none to tell.
pub fn pid_namespace() -> Option<u64> {
    process::pid_namespace()
}

/// Whether the process of a box is still running, by its pid: a process with its pid exists,
/// started at the time the box says, in the same boot. Where the system shows no processes
/// (neither `/proc` nor macOS's `proc_pidinfo`), a box is taken as alive unless the boot
/// differs (never a live process's box). Only meaningful in the box's own PID namespace; boxes
/// with a lock are judged by it ([`Claimed::status`]).
pub fn liveness(info: &BoxInfo) -> Liveness {
    let here = boot_id();
    if info.boot_id != [0; 16] && here != [0; 16] && here != info.boot_id {
        return Liveness::Gone;
    }
    if !process::sees_processes() {
        return Liveness::Alive;
    }
    match process_start(info.pid) {
        None => Liveness::Gone,
        Some(start) if info.proc_start != 0 && start != info.proc_start => Liveness::Gone,
        Some(_) => Liveness::Alive,
    }
}

struct View<'a> {
    b: &'a [u8],
}

impl View<'_> {
    fn bytes(&self, at: usize, n: usize, what: &str) -> Result<&[u8], FormatError> {
        self.b.get(at..at.saturating_add(n)).ok_or_else(|| {
            FormatError::new(
                at as u64,
                format!(
                    "the crash box ends at byte {} before its {what} (a box cut short: it \
                         cannot be recovered)",
                    self.b.len()
                ),
            )
        })
    }
    fn u32(&self, at: usize, what: &str) -> Result<u32, FormatError> {
        let s = self.bytes(at, 4, what)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn i32(&self, at: usize, what: &str) -> Result<i32, FormatError> {
        Ok(self.u32(at, what)? as i32)
    }
    fn u64(&self, at: usize, what: &str) -> Result<u64, FormatError> {
        let s = self.bytes(at, 8, what)?;
        let mut w = [0u8; 8];
        w.copy_from_slice(s);
        Ok(u64::from_le_bytes(w))
    }
}

fn bad(at: usize, message: String) -> FormatError {
    FormatError::new(at as u64, message)
}

/// One buffer that holds records, as its slot says.
struct Used {
    thread: u32,
    tid: i32,
    seq: u32,
    index: usize,
    words: usize,
    name: String,
}

/// The parts of a box, checked against its size.
struct Parsed {
    info: BoxInfo,
    run: RunInfo,
    records: Vec<Extension>,
    words_offset: u64,
    used: Vec<Used>,
    crash_tsc: u64,
    alive_tsc: u64,
    alive_period_ns: u64,
    handled_tsc: u64,
}

/// Slots are read this many at a time: the reader's memory for them stays this small whatever
/// `buffer_count` says.
const SLOTS_AT_ONCE: usize = 1024;

fn parse<S: Source + ?Sized>(src: &S) -> Result<Parsed, FormatError> {
    let size = src.size();
    let magic = src.read_at(0, MAGIC.len().min(size as usize), "magic")?;
    if !is_box(&magic) {
        return Err(bad(
            0,
            "not an fdr crash box (its first bytes are not FDR-BOX)".into(),
        ));
    }
    if size > limits::MAX_BOX_BYTES {
        return Err(bad(
            0,
            format!("a crash box of {size} bytes is larger than any fdr makes"),
        ));
    }
    let head = src.read_at(0, (HEADER_BYTES as u64).min(size) as usize, "header")?;
    let v = View { b: &head };
    let version = v.u32(at::VERSION, "version")?;
    if version != VERSION {
        return Err(bad(
            at::VERSION,
            format!("crash box version {version}; this fdr reads version {VERSION}: recover it with the fdr that made it"),
        ));
    }
    let total = v.u64(at::TOTAL_BYTES, "size")?;
    if total != size {
        return Err(bad(
            at::TOTAL_BYTES,
            format!(
                "the crash box says it is {total} bytes but the file has {size} (cut short or \
                 grown)"
            ),
        ));
    }
    let buffer_size = v.u64(at::BUFFER_SIZE, "buffer size")?;
    let buffer_count = v.u64(at::BUFFER_COUNT, "buffer count")?;
    let slots_offset = v.u64(at::SLOTS_OFFSET, "slot offset")?;
    let words_offset = v.u64(at::WORDS_OFFSET, "buffer offset")?;
    let lead_offset = v.u64(at::LEAD_OFFSET, "lead offset")?;
    let lead_capacity = v.u64(at::LEAD_CAPACITY, "lead capacity")?;
    let fits = |off: u64, n: Option<u64>| {
        n.and_then(|n| off.checked_add(n))
            .is_some_and(|e| e <= size)
    };
    if buffer_size % 8 != 0
        || buffer_size < 8 * u64::from(BLOCK_PREAMBLE_WORDS)
        || buffer_size > u64::from(u32::MAX)
        || buffer_count > limits::MAX_BOX_BUFFERS
        || !fits(slots_offset, buffer_count.checked_mul(SLOT_BYTES as u64))
        || !fits(words_offset, buffer_count.checked_mul(buffer_size))
        || !fits(lead_offset, lead_capacity.checked_mul(2))
        || slots_offset < HEADER_BYTES as u64
        || lead_offset < HEADER_BYTES as u64
    {
        return Err(bad(
            at::BUFFER_SIZE,
            format!(
                "the crash box's layout does not fit its {size} bytes (buffers of {buffer_size} \
                 bytes x {buffer_count}, slots at {slots_offset}, buffers at {words_offset}): a \
                 corrupt box"
            ),
        ));
    }
    let active = v.u64(at::LEAD_ACTIVE, "active lead")? & 1;
    let lead_len = v
        .u64(at::LEAD_LEN + 8 * active as usize, "lead length")?
        .min(lead_capacity);
    let lead_at = lead_offset + active * lead_capacity;
    let lead = src.read_at(lead_at, lead_len as usize, "function table")?;
    let mut records = Vec::new();
    let mut i = 0;
    while i + 4 <= lead.len() {
        let n = u32::from_le_bytes([lead[i], lead[i + 1], lead[i + 2], lead[i + 3]]) as usize;
        let Some(payload) = lead.get(i + 4..i + 4 + n) else {
            break;
        };
        i += 4 + n;
        match Extension::decode(payload) {
            Ok(Some(e)) => records.push(e),
            Ok(None) => {}
            Err(m) => {
                return Err(bad(
                    (lead_at as usize).saturating_add(i),
                    format!("the crash box's table: {m}"),
                ))
            }
        }
    }
    let Some(Extension::Run(mut run)) = records.first().cloned() else {
        return Err(bad(
            lead_at as usize,
            "the crash box has no run record (the process died while laying it out): nothing \
             to recover"
                .into(),
        ));
    };
    records.remove(0);
    // The recovery says how the run ended and what it was: a second run or reason record in a
    // (hostile) table would override the ones it writes.
    records.retain(|r| !matches!(r, Extension::Run(_) | Extension::Reason(_)));
    let out_len = (v.u32(at::OUT_LEN, "log path length")? as usize).min(MAX_OUT_PATH);
    let out = String::from_utf8_lossy(v.bytes(at::OUT, out_len, "log path")?).into_owned();
    let mut boot = [0u8; 16];
    boot.copy_from_slice(v.bytes(at::BOOT_ID, 16, "boot id")?);
    let (tps, calibration) = frequency(&v)?;
    run.ticks_per_second = tps;
    let used = used_buffers(src, slots_offset, buffer_count, buffer_size)?;
    // Fields after `OUT`: zeros in a box made before them, which read as "not said".
    let flags = v.u32(at::FLAGS, "flags")?;
    let crash_tsc = v.u64(at::CRASH_TSC, "crash time")?;
    let alive_tsc = v.u64(at::ALIVE_TSC, "last sign of life")?;
    let alive_period_ns = match v.u64(at::ALIVE_PERIOD_NS, "sign of life period")? {
        0 => 1_000_000_000,
        p => p,
    };
    let ticks = |ns: u64| ns_to_ticks(ns, tps);
    // Later than the next sign of life after a signal's mark: the process lived on, so the
    // program survived that signal (a handler that jumped out of it, a namespace's first
    // process ignoring it) and something else ended it.
    let grace = ticks(alive_period_ns.saturating_add(100_000_000));
    let mut signal = v.i32(at::CRASH_SIGNAL, "crash signal")?;
    let mut handled_signal = v.i32(at::HANDLED_SIGNAL, "handled signal")?;
    let mut handled_tsc = v.u64(at::HANDLED_TSC, "handled signal time")?;
    if signal != 0 && alive_tsc > crash_tsc.saturating_add(grace) {
        (handled_signal, handled_tsc, signal) = (signal, crash_tsc, 0);
    }
    let overflow = v.u32(at::CRASH_KIND, "crash kind")? == mark::STACK_OVERFLOW;
    let forked_child = v.i32(at::FORKED_CHILD, "forked child")?;
    let forked_tsc = v.u64(at::FORKED_TSC, "fork time")?;
    let parent_pid = v.i32(at::PARENT_PID, "parent")?;
    let (ending, other_pid) = if signal != 0 {
        let e = if overflow {
            Ending::StackOverflow
        } else {
            Ending::Signal
        };
        (e, 0)
    } else if flags & flags::FORKED != 0 {
        (Ending::ForkedChild, parent_pid)
    } else if forked_tsc != 0 && alive_tsc < forked_tsc.saturating_add(grace) {
        (Ending::AfterFork, forked_child)
    } else {
        (Ending::Killed, 0)
    };
    let info = BoxInfo {
        pid: v.i32(at::PID, "pid")?,
        proc_start: v.u64(at::PROC_START, "process start")?,
        boot_id: boot,
        pid_ns: v.u64(at::PID_NS, "PID namespace")?,
        flags,
        parent_pid,
        state: v.u32(at::STATE, "state")?,
        program: run.program.clone(),
        out: PathBuf::from(out),
        ending,
        signal,
        code: v.i32(at::CRASH_CODE, "crash code")?,
        crash_tid: v.i32(at::CRASH_TID, "crash thread")?,
        address: v.u64(at::CRASH_ADDR, "crash address")?,
        other_pid,
        handled_signal,
        ticks_per_second: tps,
        calibration,
        buffer_size,
        buffer_count,
        buffers_used: used.len() as u64,
        functions: records
            .iter()
            .filter(|r| matches!(r, Extension::Function(_)))
            .count(),
        threads: records
            .iter()
            .filter(|r| matches!(r, Extension::Thread(_)))
            .count(),
        records_dropped: v
            .u64(at::RECORDS_DROPPED, "dropped records")?
            .max(run.records_dropped),
        buffers_recycled: v
            .u64(at::BUFFERS_RECYCLED, "recycled buffers")?
            .max(run.buffers_recycled),
    };
    Ok(Parsed {
        info,
        run,
        records,
        words_offset,
        used,
        crash_tsc,
        alive_tsc,
        alive_period_ns,
        handled_tsc,
    })
}

/// The buffers whose slots say they hold records, read a bounded run of slots at a time.
fn used_buffers<S: Source + ?Sized>(
    src: &S,
    slots_offset: u64,
    buffer_count: u64,
    buffer_size: u64,
) -> Result<Vec<Used>, FormatError> {
    let mut used = Vec::new();
    let mut k = 0usize;
    while (k as u64) < buffer_count {
        let n = SLOTS_AT_ONCE.min((buffer_count - k as u64) as usize);
        let chunk = src.read_at(
            slots_offset + (k * SLOT_BYTES) as u64,
            n * SLOT_BYTES,
            "slots",
        )?;
        let v = View { b: &chunk };
        for j in 0..n {
            let s = j * SLOT_BYTES;
            let len = v.u32(s + slot::LEN, "slot")?;
            if v.u32(s + slot::STATE, "slot")? == slot::FREE || len < BLOCK_PREAMBLE_WORDS {
                continue;
            }
            let name = v.bytes(s + slot::NAME, 16, "slot")?;
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            used.push(Used {
                thread: v.u32(s + slot::THREAD, "slot")?,
                tid: v.i32(s + slot::TID, "slot")?,
                seq: v.u32(s + slot::THREAD_SEQ, "slot")?,
                index: k + j,
                words: (u64::from(len)).min(buffer_size / 8) as usize,
                name: String::from_utf8_lossy(&name[..end]).into_owned(),
            });
        }
        k += n;
    }
    Ok(used)
}

/// The frequency: calibrated by the process, else from its two (counter, ns) pairs, else its
/// start estimate.
fn frequency(v: &View<'_>) -> Result<(u64, Calibration), FormatError> {
    let tps = v.u64(at::TICKS_PER_SECOND, "frequency")?;
    if v.u32(at::CALIBRATED, "calibration")? == 1 && tps > 0 {
        return Ok((tps, Calibration::Final));
    }
    let (t0, n0) = (
        v.u64(at::CAL_TSC0, "calibration")?,
        v.u64(at::CAL_NS0, "calibration")?,
    );
    let (t1, n1) = (
        v.u64(at::CAL_TSC1, "calibration")?,
        v.u64(at::CAL_NS1, "calibration")?,
    );
    if t1 > t0 && n1 > n0.saturating_add(1_000_000) {
        let hz = u128::from(t1 - t0) * 1_000_000_000 / u128::from(n1 - n0);
        if hz > 0 && hz < u128::from(u64::MAX) {
            return Ok((hz as u64, Calibration::Pairs));
        }
    }
    Ok((tps.max(1), Calibration::Estimate))
}

/// What a box says, without turning it into a log.
///
/// ```
/// assert!(fdr_format::crash_box::read_info(b"not a box").is_err());
/// ```
pub fn read_info(bytes: &[u8]) -> Result<BoxInfo, FormatError> {
    read_info_from(bytes)
}

/// What the box `src` says: its header, its table and its slots are read, not its buffers.
pub fn read_info_from<S: Source + ?Sized>(src: &S) -> Result<BoxInfo, FormatError> {
    Ok(parse(src)?.info)
}

/// Turns a box into a log: every buffer that holds records, cut at its last complete record,
/// each thread's newest run of consecutive buffers in order; the calls open at the death are
/// open at the log's end. The log's reason is [`Reason::Crash`], with how the process ended.
///
/// ```
/// assert!(fdr_format::crash_box::recover(b"FDR-BOX\x01").is_err());
/// ```
pub fn recover(bytes: &[u8]) -> Result<Recovered, FormatError> {
    recover_from(bytes, false)
}

/// [`recover`] from any [`Source`], reading only what the process wrote; `exec`: its process
/// replaced its program ([`Status::Exec`]) rather than died.
pub fn recover_from<S: Source + ?Sized>(src: &S, exec: bool) -> Result<Recovered, FormatError> {
    let mut p = parse(src)?;
    if exec {
        (p.info.ending, p.info.signal, p.info.other_pid) = (Ending::Exec, 0, 0);
    }
    let info = &p.info;
    p.used
        .sort_unstable_by_key(|u| (u.thread, u.tid, u.seq, u.index));
    let header = FileHeader {
        constant_tsc: true,
        nonstop_tsc: p.run.clock.is_counter(),
        cycle_frequency: info.ticks_per_second,
        buffer_size: info.buffer_size,
        ..FileHeader::default()
    };
    let mut blocks: Vec<(i32, Vec<u8>)> = Vec::new();
    let mut missed = 0u64;
    let mut last: Option<(u32, i32, u32)> = None;
    let caught = info.signal != 0;
    let mut end_tsc = if caught {
        p.crash_tsc.max(p.alive_tsc)
    } else {
        p.alive_tsc
    };
    let mut names: Vec<(i32, String)> = Vec::new();
    for u in &p.used {
        let at = p.words_offset + u.index as u64 * info.buffer_size;
        let mut block = src.read_at(at, u.words * 8, "buffer")?;
        block[..16].copy_from_slice(&meta_bytes(meta::buffer_extents(u.words as u64 * 8 - 16)));
        let Some((block, last_tsc)) = whole_records(&header, block) else {
            missed += 1;
            continue;
        };
        end_tsc = end_tsc.max(last_tsc);
        // A thread's older buffers behind a gap in its sequence are left out, as a snapshot
        // leaves them: calls on either side of the gap were not next to each other.
        if let Some((t, id, s)) = last {
            if (t, id) == (u.thread, u.tid) && u.seq != s.wrapping_add(1) {
                while blocks.last().is_some_and(|b| b.0 == u.tid) {
                    blocks.pop();
                    missed += 1;
                }
            }
        }
        last = Some((u.thread, u.tid, u.seq));
        if !u.name.is_empty() && !names.iter().any(|(t, _)| *t == u.tid) {
            names.push((u.tid, u.name.clone()));
        }
        blocks.push((u.tid, block));
    }
    let ns = |ticks: u64| ticks_to_ns(ticks, info.ticks_per_second);
    let mut run = p.run.clone();
    run.end_tsc = end_tsc;
    run.snapshot = false;
    run.buffers_missed = missed;
    run.records_dropped = info.records_dropped;
    run.buffers_recycled = info.buffers_recycled;
    let handled_tsc = if info.handled_signal != 0 {
        p.handled_tsc
    } else {
        0
    };
    let reason = ReasonInfo {
        reason: Reason::Crash,
        tid: info.crash_tid,
        start_tsc: if caught { p.crash_tsc } else { 0 },
        signal: info.signal,
        address: info.address,
        ending: info.ending,
        other_pid: info.other_pid,
        // A caught signal says when; otherwise the death came after the last sign of life and
        // before the next one was due.
        end_within_ns: if caught || exec { 0 } else { p.alive_period_ns },
        handled_signal: info.handled_signal,
        handled_before_ns: if handled_tsc != 0 && handled_tsc <= end_tsc {
            ns(end_tsc - handled_tsc).max(1)
        } else {
            0
        },
        ..ReasonInfo::default()
    };
    let mut records = vec![Extension::Run(run.clone()), Extension::Reason(reason)];
    records.extend(p.records.iter().cloned());
    // Threads that started after the box's table was last written: named from their slots.
    for (tid, name) in names {
        let known = p
            .records
            .iter()
            .any(|r| matches!(r, Extension::Thread(t) if t.tid == tid));
        if !known {
            records.push(Extension::Thread(ThreadInfo {
                tid,
                name,
                records_dropped: 0,
            }));
        }
    }
    let start = LeadStart {
        tid: blocks.first().map_or(0, |b| b.0),
        // The pid the log names (the run record's); the header's is the process's own.
        pid: if run.pid != 0 { run.pid } else { info.pid },
        start_secs: run.start_unix_secs,
        start_nanos: run.start_unix_nanos,
        start_tsc: run.start_tsc,
    };
    let mut log = header.encode().to_vec();
    log.extend_from_slice(&lead_block(&start, &records));
    for (_, b) in &blocks {
        log.extend_from_slice(b);
    }
    Ok(Recovered { info: p.info, log })
}

/// The block cut at its last record that decodes (`None` when not even its preamble does),
/// with the time of its last record.
fn whole_records(header: &FileHeader, mut block: Vec<u8>) -> Option<(Vec<u8>, u64)> {
    loop {
        let mut file = Vec::with_capacity(HEADER_SIZE + block.len());
        file.extend_from_slice(&header.encode());
        file.extend_from_slice(&block);
        let mut d = EventDecoder::new(&file[..]).ok()?;
        match d.for_each(|_, _| Ok::<(), FormatError>(())) {
            Ok(()) => {
                let last = d.threads().iter().map(|t| t.last_tsc).max().unwrap_or(0);
                return Some((block, last));
            }
            Err(e) => {
                let cut = (e.offset as usize).checked_sub(HEADER_SIZE)? / 8 * 8;
                if cut < 8 * BLOCK_PREAMBLE_WORDS as usize || cut >= block.len() {
                    return None;
                }
                block.truncate(cut);
                let n = cut as u64 - 16;
                block[..16].copy_from_slice(&meta_bytes(meta::buffer_extents(n)));
            }
        }
    }
}

/// The header's code for a clock source (as the run record codes it).
///
/// ```
/// use fdr_format::{crash_box::clock_code, ClockSource};
/// assert_eq!(clock_code(ClockSource::Monotonic), 1);
/// ```
pub fn clock_code(c: ClockSource) -> u32 {
    u32::from(c.code())
}

/// Encodes extension records as a lead area holds them: each as a `u32` length and its payload.
///
/// ```
/// use fdr_format::{crash_box, Extension, RunInfo};
/// let area = crash_box::encode_lead(&[Extension::Run(RunInfo::default())]);
/// assert_eq!(u32::from_le_bytes(area[..4].try_into().unwrap()) as usize, area.len() - 4);
/// ```
pub fn encode_lead(records: &[Extension]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        let p = r.encode();
        if p.len() > crate::limits::MAX_EXT_PAYLOAD {
            continue;
        }
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&p);
    }
    out
}
