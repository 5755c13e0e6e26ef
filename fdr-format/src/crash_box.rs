//! The crash box: a recorder's buffer pool kept in a shared file mapping, so that a process that
//! dies without writing a log (SIGKILL, the OOM killer, a segfault, `abort`, a stack overflow)
//! still leaves its window, in the kernel's page cache, for [`recover`] to turn into a log.
//!
//! # Layout (version 1, little-endian)
//!
//! | bytes | what |
//! |---|---|
//! | 0..4096 | the header: the fields of [`at`], the absolute path of the final log, the crash mark |
//! | `lead_offset`, twice `lead_capacity` | two areas of extension records (run, functions, threads): the active one is whole |
//! | `slots_offset` | one 64-byte slot per buffer: what its owner published ([`slot`]) |
//! | `words_offset` | the buffers, `buffer_size` bytes each, exactly as the recorder writes them |
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
//! it stops decoding ([`recover`] never panics and allocates at most the box's size twice).

use std::path::PathBuf;

use crate::events::EventDecoder;
use crate::{
    lead_block, meta, meta_bytes, ClockSource, Extension, FileHeader, FormatError, LeadStart,
    Reason, ReasonInfo, RunInfo, BLOCK_PREAMBLE_WORDS, HEADER_SIZE,
};

/// The first eight bytes of every box.
pub const MAGIC: [u8; 8] = *b"FDR-BOX\x01";
/// The layout version this crate reads and writes.
pub const VERSION: u32 = 1;
/// Bytes of the header, before the lead areas.
pub const HEADER_BYTES: usize = 4096;
/// Bytes per slot.
pub const SLOT_BYTES: usize = 64;
/// The longest final-log path a box keeps (bytes).
pub const MAX_OUT_PATH: usize = 2048;
/// The largest box [`recover`] reads: a pool bigger than this was not made by fdr.
pub const MAX_BOX_BYTES: u64 = 1 << 36;

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
    /// The final log's absolute path, [`super::MAX_OUT_PATH`] bytes at most.
    pub const OUT: usize = 264;
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
    /// A slot with no data.
    pub const FREE: u32 = 0;
}

/// How a box's process stands.
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
    /// One of [`state`].
    pub state: u32,
    /// The program's name.
    pub program: String,
    /// Where the process would have written its final log.
    pub out: PathBuf,
    /// The crash signal caught (0: none).
    pub signal: i32,
    /// Its `si_code`.
    pub code: i32,
    /// The thread that took it.
    pub crash_tid: i32,
    /// The faulting address.
    pub address: u64,
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
}

impl BoxInfo {
    /// How the process died, in words: the signal, or that no handler ran.
    ///
    /// ```
    /// # use fdr_format::crash_box::{BoxInfo, Calibration};
    /// let mut b = BoxInfo { pid: 1, proc_start: 0, boot_id: [0; 16], state: 1,
    ///     program: "app".into(), out: "/tmp/app.fdr".into(), signal: 0, code: 0, crash_tid: 0,
    ///     address: 0, ticks_per_second: 1, calibration: Calibration::Final, buffer_size: 0,
    ///     buffer_count: 0, buffers_used: 0, functions: 0 };
    /// assert!(b.death().starts_with("killed: no handler ran"));
    /// b.signal = 11;
    /// b.crash_tid = 7;
    /// b.address = 0x10;
    /// assert_eq!(b.death(), "SIGSEGV (segmentation fault) at address 0x10 on thread 7");
    /// ```
    pub fn death(&self) -> String {
        describe_death(self.signal, self.address, self.crash_tid)
    }
}

/// How `fdr info` and `fdr recover` word a death: `signal` 0 is one no handler saw.
///
/// ```
/// assert_eq!(fdr_format::crash_box::describe_death(6, 0, 3), "SIGABRT (abort) on thread 3");
/// ```
pub fn describe_death(signal: i32, address: u64, tid: i32) -> String {
    let (name, what) = match signal {
        0 => return "killed: no handler ran (SIGKILL, the OOM killer)".to_string(),
        4 => ("SIGILL", "illegal instruction"),
        6 => ("SIGABRT", "abort"),
        7 => ("SIGBUS", "bus error"),
        8 => ("SIGFPE", "arithmetic error"),
        11 => ("SIGSEGV", "segmentation fault"),
        _ => ("signal", "caught"),
    };
    let mut s = if name == "signal" {
        format!("signal {signal}")
    } else {
        format!("{name} ({what})")
    };
    if matches!(signal, 4 | 7 | 8 | 11) {
        s.push_str(&format!(" at address {address:#x}"));
    }
    if tid != 0 {
        s.push_str(&format!(" on thread {tid}"));
    }
    s
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

/// The box file's name for `program`'s process `pid`.
///
/// ```
/// assert_eq!(fdr_format::crash_box::file_name("app", 42), "fdr-app-42.box");
/// ```
pub fn file_name(program: &str, pid: i32) -> String {
    format!("fdr-{}-{pid}.box", file_safe(program))
}

/// A program name as it can stand in a file name: `/` and control characters become `_`.
///
/// ```
/// assert_eq!(fdr_format::crash_box::file_safe("a/b\nc"), "a_b_c");
/// ```
pub fn file_safe(program: &str) -> String {
    program
        .chars()
        .map(|c| if c == '/' || c.is_control() { '_' } else { c })
        .collect()
}

/// The pid in a box file's name, when it is one of `program`'s (`None` for `program` empty:
/// any program's).
///
/// ```
/// use fdr_format::crash_box::pid_of;
/// assert_eq!(pid_of("fdr-app-42.box", Some("app")), Some(42));
/// assert_eq!(pid_of("fdr-app-42.box", Some("other")), None);
/// assert_eq!(pid_of("fdr-my-app-7.box", None), Some(7));
/// ```
pub fn pid_of(file: &str, program: Option<&str>) -> Option<i32> {
    let rest = file.strip_prefix("fdr-")?.strip_suffix(".box")?;
    let (name, pid) = rest.rsplit_once('-')?;
    if program.is_some_and(|p| file_safe(p) != name) {
        return None;
    }
    pid.parse().ok()
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

mod process;

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

/// Whether the process of a box is still running: a process with its pid exists, started at
/// the time the box says, in the same boot. Where the system shows no processes (neither
/// `/proc` nor macOS's `proc_pidinfo`), a box is taken as alive unless the boot differs (never a
/// live process's box).
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

/// The parts of a box, checked against its size.
struct Parsed {
    info: BoxInfo,
    run: RunInfo,
    records: Vec<Extension>,
    slots_offset: usize,
    words_offset: usize,
    crash_tsc: u64,
    alive_tsc: u64,
}

fn parse(b: &[u8]) -> Result<Parsed, FormatError> {
    let v = View { b };
    if !is_box(b) {
        return Err(bad(
            0,
            "not an fdr crash box (its first bytes are not FDR-BOX)".into(),
        ));
    }
    if b.len() as u64 > MAX_BOX_BYTES {
        return Err(bad(
            0,
            format!(
                "a crash box of {} bytes is larger than any fdr makes",
                b.len()
            ),
        ));
    }
    let version = v.u32(at::VERSION, "version")?;
    if version != VERSION {
        return Err(bad(
            at::VERSION,
            format!("crash box version {version}; this fdr reads version {VERSION}: recover it with the fdr that made it"),
        ));
    }
    let total = v.u64(at::TOTAL_BYTES, "size")?;
    if total != b.len() as u64 {
        return Err(bad(
            at::TOTAL_BYTES,
            format!(
                "the crash box says it is {total} bytes but the file has {} (cut short or grown)",
                b.len()
            ),
        ));
    }
    let buffer_size = v.u64(at::BUFFER_SIZE, "buffer size")?;
    let buffer_count = v.u64(at::BUFFER_COUNT, "buffer count")?;
    let slots_offset = v.u64(at::SLOTS_OFFSET, "slot offset")?;
    let words_offset = v.u64(at::WORDS_OFFSET, "buffer offset")?;
    let lead_offset = v.u64(at::LEAD_OFFSET, "lead offset")?;
    let lead_capacity = v.u64(at::LEAD_CAPACITY, "lead capacity")?;
    let size = b.len() as u64;
    let fits = |off: u64, n: Option<u64>| {
        n.and_then(|n| off.checked_add(n))
            .is_some_and(|e| e <= size)
    };
    if buffer_size % 8 != 0
        || buffer_size < 8 * u64::from(BLOCK_PREAMBLE_WORDS)
        || buffer_size > u64::from(u32::MAX)
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
    let active = v.u64(at::LEAD_ACTIVE, "active lead")? as usize & 1;
    let lead_len = v
        .u64(at::LEAD_LEN + 8 * active, "lead length")?
        .min(lead_capacity) as usize;
    let lead_at = lead_offset as usize + active * lead_capacity as usize;
    let lead = v.bytes(lead_at, lead_len, "function table")?;
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
            Err(m) => return Err(bad(lead_at + i, format!("the crash box's table: {m}"))),
        }
    }
    let Some(Extension::Run(mut run)) = records.first().cloned() else {
        return Err(bad(
            lead_at,
            "the crash box has no run record (the process died while laying it out): nothing \
             to recover"
                .into(),
        ));
    };
    records.remove(0);
    let out_len = (v.u32(at::OUT_LEN, "log path length")? as usize).min(MAX_OUT_PATH);
    let out = String::from_utf8_lossy(v.bytes(at::OUT, out_len, "log path")?).into_owned();
    let mut boot = [0u8; 16];
    boot.copy_from_slice(v.bytes(at::BOOT_ID, 16, "boot id")?);
    let (tps, calibration) = frequency(&v)?;
    run.ticks_per_second = tps;
    let mut used = 0;
    for k in 0..buffer_count as usize {
        let s = slots_offset as usize + k * SLOT_BYTES;
        if v.u32(s + slot::STATE, "slot")? != slot::FREE
            && v.u32(s + slot::LEN, "slot")? >= BLOCK_PREAMBLE_WORDS
        {
            used += 1;
        }
    }
    let info = BoxInfo {
        pid: v.i32(at::PID, "pid")?,
        proc_start: v.u64(at::PROC_START, "process start")?,
        boot_id: boot,
        state: v.u32(at::STATE, "state")?,
        program: run.program.clone(),
        out: PathBuf::from(out),
        signal: v.i32(at::CRASH_SIGNAL, "crash signal")?,
        code: v.i32(at::CRASH_CODE, "crash code")?,
        crash_tid: v.i32(at::CRASH_TID, "crash thread")?,
        address: v.u64(at::CRASH_ADDR, "crash address")?,
        ticks_per_second: tps,
        calibration,
        buffer_size,
        buffer_count,
        buffers_used: used,
        functions: records
            .iter()
            .filter(|r| matches!(r, Extension::Function(_)))
            .count(),
    };
    Ok(Parsed {
        info,
        run,
        records,
        slots_offset: slots_offset as usize,
        words_offset: words_offset as usize,
        crash_tsc: v.u64(at::CRASH_TSC, "crash time")?,
        alive_tsc: v.u64(at::ALIVE_TSC, "last sign of life")?,
    })
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
    if t1 > t0 && n1 > n0 + 1_000_000 {
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
    Ok(parse(bytes)?.info)
}

/// What [`read_box`] found at a path.
#[derive(Debug)]
pub enum Found {
    /// The box of a process that still runs: to be left as it is.
    Alive(BoxInfo),
    /// A box its process closed (it wrote its final log): nothing to recover.
    Closed(BoxInfo),
    /// A dead process's box, as its process left it: what [`recover`] takes.
    Dead(Vec<u8>),
    /// The file went away while it was looked at: its process finished and removed it.
    Vanished,
}

/// Reads the box at `path` for recovery, never taking a live process's box for a dead one's:
/// whether its process runs is decided first, and a dead process's box is then read again, as
/// its process left it. (Read once, a box could be read while its process ran, then found dead
/// because the process had since finished, removed its box and exited: its running state then
/// became a "crash".) `ours`: the box has this process's pid, so whatever made it is gone.
///
/// ```
/// use fdr_format::crash_box::{read_box, Found};
/// let missing = std::env::temp_dir().join("fdr-no-such-box-here.box");
/// assert!(matches!(read_box(&missing, false), Ok(Found::Vanished)));
/// ```
pub fn read_box(path: &std::path::Path, ours: bool) -> Result<Found, FormatError> {
    let read = || -> Result<Option<Vec<u8>>, FormatError> {
        let cannot = |e: std::io::Error| FormatError::new(0, format!("cannot read it: {e}"));
        let len = match std::fs::metadata(path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(cannot(e)),
        };
        if len > MAX_BOX_BYTES {
            return Err(FormatError::new(
                0,
                format!("{len} bytes: larger than any crash box fdr makes"),
            ));
        }
        match std::fs::read(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(cannot(e)),
        }
    };
    let Some(bytes) = read()? else {
        return Ok(Found::Vanished);
    };
    let info = read_info(&bytes)?;
    if info.state == state::CLOSED {
        return Ok(Found::Closed(info));
    }
    if !ours && liveness(&info) == Liveness::Alive {
        return Ok(Found::Alive(info));
    }
    let Some(bytes) = read()? else {
        return Ok(Found::Vanished);
    };
    let info = read_info(&bytes)?;
    if info.state == state::CLOSED {
        return Ok(Found::Closed(info));
    }
    Ok(Found::Dead(bytes))
}

/// Turns a box into a log: every buffer that holds records, cut at its last complete record,
/// each thread's newest run of consecutive buffers in order; the calls open at the death are
/// open at the log's end. The log's reason is [`Reason::Crash`] with the signal caught, if any.
///
/// ```
/// assert!(fdr_format::crash_box::recover(b"FDR-BOX\x01").is_err());
/// ```
pub fn recover(bytes: &[u8]) -> Result<Recovered, FormatError> {
    let p = parse(bytes)?;
    let v = View { b: bytes };
    let info = &p.info;
    // (thread entry, tid, seq, slot)
    let mut planned = Vec::new();
    for k in 0..info.buffer_count as usize {
        let s = p.slots_offset + k * SLOT_BYTES;
        let len = v.u32(s + slot::LEN, "slot")?;
        if v.u32(s + slot::STATE, "slot")? == slot::FREE || len < BLOCK_PREAMBLE_WORDS {
            continue;
        }
        planned.push((
            v.u32(s + slot::THREAD, "slot")?,
            v.i32(s + slot::TID, "slot")?,
            v.u32(s + slot::THREAD_SEQ, "slot")?,
            k,
            (len as u64).min(info.buffer_size / 8) as usize,
        ));
    }
    planned.sort_unstable();
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
    let mut end_tsc = p.crash_tsc.max(p.alive_tsc);
    for &(thread, tid, seq, k, len) in &planned {
        let at = p.words_offset + k * info.buffer_size as usize;
        let mut block = v.bytes(at, len * 8, "buffer")?.to_vec();
        block[..16].copy_from_slice(&meta_bytes(meta::buffer_extents(len as u64 * 8 - 16)));
        let Some((block, last_tsc)) = whole_records(&header, block) else {
            missed += 1;
            continue;
        };
        end_tsc = end_tsc.max(last_tsc);
        // A thread's older buffers behind a gap in its sequence are left out, as a snapshot
        // leaves them: calls on either side of the gap were not next to each other.
        if let Some((t, id, s)) = last {
            if (t, id) == (thread, tid) && seq != s.wrapping_add(1) {
                while blocks.last().is_some_and(|b| b.0 == tid) {
                    blocks.pop();
                    missed += 1;
                }
            }
        }
        last = Some((thread, tid, seq));
        blocks.push((tid, block));
    }
    let mut run = p.run.clone();
    run.end_tsc = end_tsc;
    run.snapshot = false;
    run.buffers_missed = missed;
    let reason = ReasonInfo {
        reason: Reason::Crash,
        tid: info.crash_tid,
        start_tsc: if info.signal != 0 { p.crash_tsc } else { 0 },
        signal: info.signal,
        address: info.address,
        ..ReasonInfo::default()
    };
    let mut records = vec![Extension::Run(run.clone()), Extension::Reason(reason)];
    records.extend(p.records.iter().cloned());
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
        if p.len() > crate::MAX_EXT_PAYLOAD {
            continue;
        }
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&p);
    }
    out
}
