//! fdr's own records, carried as XRay custom events in the log's leading block: the run's
//! settings and counters, the function table and thread names. With them one file is all a
//! reader needs; XRay's tools skip them as opaque custom events.
//!
//! Every payload starts with [`EXT_MAGIC`] and a tag byte; the fields follow little-endian,
//! strings as a `u32` length and UTF-8 bytes. Readers ignore bytes after the fields they know, so
//! fields can be appended later without breaking older readers.

use crate::limits::MAX_EXT_PAYLOAD;
use crate::units::ticks_to_ns_rounded_up;

/// The first four bytes of every fdr extension payload.
pub const EXT_MAGIC: [u8; 4] = *b"FDR\x01";

const TAG_RUN: u8 = 1;
const TAG_FUNCTION: u8 = 2;
const TAG_THREAD: u8 = 3;
const TAG_REASON: u8 = 4;
const TAG_OPTIONS: u8 = 5;
const TAG_BUDGET: u8 = 6;

/// Where the timestamps came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClockSource {
    /// The CPU's invariant timestamp counter, read with `rdtscp` (timestamp and CPU number in
    /// one instruction).
    #[default]
    Tsc,
    /// The operating system's monotonic clock in nanoseconds.
    Monotonic,
    /// A clock driven by a test.
    Injected,
    /// The invariant timestamp counter read with `rdtsc`, the CPU number from the thread's
    /// restartable-sequences area, which the kernel keeps current.
    TscRseq,
    /// The aarch64 generic timer's virtual counter (`CNTVCT_EL0`), the CPU number asked of the
    /// operating system at each read (Linux's `getcpu`, macOS's `pthread_cpu_number_np`; 0 where
    /// it gives none).
    Cntvct,
    /// The aarch64 generic timer's virtual counter (`CNTVCT_EL0`), the CPU number from the
    /// thread's restartable-sequences area.
    CntvctRseq,
    /// The invariant timestamp counter read with `rdtsc`, the CPU number asked of the operating
    /// system at each read (macOS on Intel, whose `rdtscp` does not carry the CPU number).
    TscOsCpu,
}

impl ClockSource {
    /// The number the run record and the crash box's header store for this source.
    ///
    /// ```
    /// use fdr_format::ClockSource;
    /// assert_eq!(ClockSource::from_code(ClockSource::Cntvct.code()), Some(ClockSource::Cntvct));
    /// assert_eq!(ClockSource::from_code(200), None);
    /// ```
    pub fn code(self) -> u8 {
        match self {
            ClockSource::Tsc => 0,
            ClockSource::Monotonic => 1,
            ClockSource::Injected => 2,
            ClockSource::TscRseq => 3,
            ClockSource::Cntvct => 4,
            ClockSource::CntvctRseq => 5,
            ClockSource::TscOsCpu => 6,
        }
    }

    /// The source stored as `code`; `None` for a number no source has.
    pub fn from_code(code: u8) -> Option<ClockSource> {
        Some(match code {
            0 => ClockSource::Tsc,
            1 => ClockSource::Monotonic,
            2 => ClockSource::Injected,
            3 => ClockSource::TscRseq,
            4 => ClockSource::Cntvct,
            5 => ClockSource::CntvctRseq,
            6 => ClockSource::TscOsCpu,
            _ => return None,
        })
    }

    /// Whether the file header's nonstop-TSC bit is set for this source: the timestamps tick at
    /// a constant rate that agrees across CPUs (every source but the monotonic clock, a test's
    /// injected clock included).
    ///
    /// ```
    /// assert!(fdr_format::ClockSource::Cntvct.is_counter());
    /// assert!(!fdr_format::ClockSource::Monotonic.is_counter());
    /// ```
    pub fn is_counter(self) -> bool {
        !matches!(self, ClockSource::Monotonic)
    }
}

/// What the recorder did when its buffers were all in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// The oldest retired buffer was recycled: the log keeps the newest window.
    #[default]
    Ring,
    /// Recording stopped and the dropped records were counted.
    Fill,
}

/// The run's settings, calibration and loss counters.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RunInfo {
    /// Where timestamps came from.
    pub clock: ClockSource,
    /// Ticks per second (also in the file header).
    pub ticks_per_second: u64,
    /// How long the calibration against the monotonic clock ran, in nanoseconds (0: not measured).
    pub calibration_ns: u64,
    /// Ring or Fill.
    pub mode: Mode,
    /// Calls shorter than this were erased (nanoseconds).
    pub threshold_ns: u64,
    /// The same threshold in ticks, as the recorder applied it.
    pub threshold_ticks: u64,
    /// Bytes per buffer.
    pub buffer_size: u64,
    /// Buffers in the pool.
    pub buffer_count: u64,
    /// Process id.
    pub pid: i32,
    /// Wall-clock time when recording started: seconds since the Unix epoch.
    pub start_unix_secs: i64,
    /// Wall-clock time when recording started: nanoseconds within the second.
    pub start_unix_nanos: u32,
    /// Timestamp (ticks) when recording started.
    pub start_tsc: u64,
    /// Timestamp (ticks) when this log was taken.
    pub end_tsc: u64,
    /// True for a snapshot taken while recording went on; false for the final log.
    pub snapshot: bool,
    /// Records that could not be written because no buffer was free (Fill mode).
    pub records_dropped: u64,
    /// Buffers whose contents were overwritten to make room for newer ones (Ring mode).
    pub buffers_recycled: u64,
    /// Buffers that were recycled while this log was being copied and so are not in it.
    pub buffers_missed: u64,
    /// The program's name.
    pub program: String,
    /// Call arguments left out because they did not fit even an empty buffer (their entry record
    /// was kept). Appended in a later version: 0 in older logs.
    pub args_dropped: u64,
    /// Calls that recorded nothing because their thread could not join the recording: the
    /// thread registry was full, or the thread was exiting. Appended later: 0 in older logs.
    pub calls_unattached: u64,
    /// Logs keep only each thread's records of this many last nanoseconds (0: no age limit).
    /// Appended later: 0 in older logs.
    pub max_age_ns: u64,
    /// Calls erased by the rewind (shorter than the threshold) since recording started, on all
    /// threads. Appended later: 0 in older logs.
    pub calls_erased: u64,
    /// Times a culled function was let through for a few calls, to be timed (a probe); calls
    /// of culled functions are not counted. Appended later: 0 in older logs.
    pub probes: u64,
    /// Functions culled from the start because the last recording of the same build ended with
    /// them culled (`cull_memory`). Appended later: 0 in older logs.
    pub culled_at_start: u64,
}

/// What the cost budget did (`budget=PERCENT`): the recorder's estimate of its own cost and
/// the functions it stopped timing to keep under the budget, from when to when. Written only
/// when a budget was set.
///
/// ```
/// use fdr_format::{BudgetInfo, BudgetSpan, Extension};
/// let b = BudgetInfo {
///     budget_ppm: 10_000,
///     call_cost_ps: 18_000,
///     untimed: vec![BudgetSpan { function: 3, from_tsc: 100, to_tsc: None, calls_per_second: 2_000_000 }],
///     ..BudgetInfo::default()
/// };
/// let e = Extension::Budget(b);
/// assert_eq!(Extension::decode(&e.encode()).unwrap(), Some(e));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BudgetInfo {
    /// The budget, in millionths of the process's CPU time (10,000: 1 %).
    pub budget_ppm: u32,
    /// What one timed call costs, measured at start, in picoseconds.
    pub call_cost_ps: u64,
    /// The recorder's estimate of its cost over its last look, in millionths of the process's
    /// CPU time over that look.
    pub estimate_ppm: u32,
    /// The highest estimate of any look.
    pub peak_ppm: u32,
    /// The estimate over the whole recording: the cost of every timed call and record so far
    /// against the process's CPU time since the budget's first look, in millionths.
    pub overall_ppm: u32,
    /// Looks the budget took (about ten a second).
    pub looks: u64,
    /// The functions the budget stopped timing, oldest first.
    pub untimed: Vec<BudgetSpan>,
    /// Spans left out, the oldest, to keep the record within its size.
    pub spans_dropped: u64,
}

/// One function the budget stopped timing, and for how long: its calls (`function` a
/// function's id), the waits at one of an `async fn`'s await sites (an await site's id,
/// [`FunctionKind::Await`]), or with [`BUDGET_WAKES_BIT`] an `async fn`'s wake-ups (its polls
/// were timed, the wake events that say when its tasks were woken not written).
///
/// ```
/// use fdr_format::{BudgetSpan, BUDGET_WAKES_BIT};
/// let wakes = BudgetSpan { function: 7 | BUDGET_WAKES_BIT, ..BudgetSpan::default() };
/// assert_eq!(wakes.function & !BUDGET_WAKES_BIT, 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BudgetSpan {
    /// Its function id (an await site's, for the waits there), with [`BUDGET_WAKES_BIT`] for
    /// an `async fn`'s wake-ups.
    pub function: u32,
    /// When it stopped being timed (ticks).
    pub from_tsc: u64,
    /// When it was timed again (ticks); `None` if it was still untimed when the log was taken.
    pub to_tsc: Option<u64>,
    /// Its calls timed a second when it was stopped: what it cost.
    pub calls_per_second: u64,
}

/// The bit of [`BudgetSpan::function`] that says the span is of the function's wake-ups, not
/// of its calls (function ids have 28 bits).
pub const BUDGET_WAKES_BIT: u32 = 1 << 31;

/// The size of one [`BudgetSpan`] in a budget record: what bounds how many a record holds.
pub const BUDGET_SPAN_BYTES: usize = 28;

/// Why a log was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Reason {
    /// Not said (logs older than the reason record).
    #[default]
    Unknown,
    /// A call of a function with a trigger lasted longer than its limit.
    SlowCall,
    /// A call of a function with a trigger has been running longer than its limit and had not
    /// returned when the log was taken (a hang).
    StillRunning,
    /// The process received the snapshot signal.
    Signal,
    /// A panic (a snapshot, written by the panic hook).
    Panic,
    /// The program exited (the final log, written by the exit hook).
    Exit,
    /// The program asked (`snapshot`, `write_snapshot`, `finish`).
    Api,
    /// The process ended without writing a log (it died, or replaced its program by `exec`),
    /// and its crash box was recovered (`fdr recover`, or the next start of the program):
    /// [`ReasonInfo::ending`] says how, [`ReasonInfo::signal`] by which signal.
    Crash,
    /// A poll of an async function lasted longer than the long-poll limit (`long_poll`): it
    /// kept its thread (an executor's worker) from every other task that long.
    LongPoll,
    /// A poll of an async function had been running longer than the long-poll limit when the
    /// watchdog saw it (a worker blocked, perhaps for good).
    LongPollRunning,
}

impl Reason {
    /// How `fdr info` words it.
    ///
    /// ```
    /// assert_eq!(fdr_format::Reason::SlowCall.describe(), "slow call");
    /// ```
    pub fn describe(self) -> &'static str {
        match self {
            Reason::Unknown => "not recorded",
            Reason::SlowCall => "slow call",
            Reason::StillRunning => "call still running past its limit",
            Reason::Signal => "signal",
            Reason::Panic => "panic",
            Reason::Exit => "exit",
            Reason::Api => "asked by the program",
            Reason::Crash => {
                "the process ended without writing its log; recovered from its crash box"
            }
            Reason::LongPoll => "long poll",
            Reason::LongPollRunning => "poll still running past the long-poll limit",
        }
    }
}

/// Why the log was written, and for a trigger, which call fired it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ReasonInfo {
    /// Why.
    pub reason: Reason,
    /// The function whose call fired the trigger (0: none).
    pub function: u32,
    /// The thread of that call (0: none).
    pub tid: i32,
    /// When the call started, in ticks (0: none).
    pub start_tsc: u64,
    /// How long it lasted (or had been running, for [`Reason::StillRunning`]), in ticks.
    pub duration_ticks: u64,
    /// Triggers suppressed so far in the recording (by the cooldown, the snapshot cap, or one
    /// already waiting to be written).
    pub suppressed: u64,
    /// The limit in force when the trigger fired, in ticks (0: not recorded, or no limit: a
    /// signal, a panic). Absent from logs written before it existed: read as 0.
    pub limit_ticks: u64,
    /// For a learned limit (`trigger = "auto"`), the function's running p99 it was derived
    /// from, in ticks (0: a limit written by hand).
    pub p99_ticks: u64,
    /// For [`Reason::Crash`], the crash signal that killed the process (`SIGSEGV` is 11); 0
    /// when none was caught (killed by SIGKILL or the OOM killer, or no handler could run).
    /// Absent from older logs: read as 0.
    pub signal: i32,
    /// For a crash signal that names an address (a segfault, a bus error), that address.
    pub address: u64,
    /// For a slow call or a long poll, how long its thread waited for a CPU (runnable but not
    /// running: preempted, or woken with no CPU free) during the call, in nanoseconds, as far
    /// as it was measured: over the whole call when [`ReasonInfo::off_cpu_ns`] is known too
    /// (the thread's context switches), else from when the watchdog found the call running
    /// long to its end, so at least this much. `None`: not measured (a call that ended before
    /// the watchdog looked on a system without context-switch records, a system without the
    /// kernel's scheduler statistics, an older log).
    pub cpu_wait_ns: Option<u64>,
    /// For a slow call or a long poll, how long its thread was off the CPU without waiting for
    /// one (blocked: a sleep, a lock, I/O, a page fault) during the whole call, in nanoseconds,
    /// from the thread's context switches; the call then ran on a CPU for its duration less
    /// this and [`ReasonInfo::cpu_wait_ns`]. `None`: not measured (no context-switch records
    /// on this system, an older log).
    pub off_cpu_ns: Option<u64>,
    /// Calls past a learned limit not written because the time their thread waited for a CPU
    /// explains them (within the limit without it), so far in the recording; they are counted
    /// in [`ReasonInfo::suppressed`] too. Absent from older logs: read as 0.
    pub cpu_wait_suppressed: u64,
    /// For [`Reason::Crash`], how the process ended, as far as its box could tell. Absent from
    /// older logs: [`Ending::Unknown`], read from `signal`.
    pub ending: Ending,
    /// For [`Ending::ForkedChild`] the parent's pid, for [`Ending::AfterFork`] the child's
    /// (0: none).
    pub other_pid: i32,
    /// For [`Reason::Crash`] without a caught signal, the longest the death can have come after
    /// the log's end, in nanoseconds: the process left a sign of life that often (0: the moment
    /// is known, or not said).
    pub end_within_ns: u64,
    /// A terminating signal the program received and handled (or, as a PID namespace's first
    /// process, ignored) before it died of something else: `SIGTERM` then a kill when a grace
    /// period ran out (0: none).
    pub handled_signal: i32,
    /// How long before the log's end that signal arrived, in nanoseconds.
    pub handled_before_ns: u64,
}

/// How a process whose window was recovered from its crash box ended ([`ReasonInfo::ending`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ending {
    /// Not recorded (a log older than the field): a caught `signal`, else a kill.
    #[default]
    Unknown,
    /// A signal it did not survive, caught by fdr's handler on its way: `signal`, on thread
    /// `tid`, at `address` for a fault.
    Signal,
    /// A stack overflow: `signal` (SIGSEGV or SIGBUS) on thread `tid`'s guard page.
    StackOverflow,
    /// No handler ran: SIGKILL or the OOM killer.
    Killed,
    /// It replaced its program (`exec`): the recording ended there. Not a crash.
    Exec,
    /// A forked child that ended with no signal caught: `_exit`, as forked children end, or
    /// SIGKILL; `other_pid` is its parent.
    ForkedChild,
    /// It ended with no signal caught within a second of forking `other_pid`: `_exit`, as the
    /// parent of `daemon()` does, or SIGKILL.
    AfterFork,
}

impl Ending {
    fn code(self) -> u8 {
        match self {
            Ending::Unknown => 0,
            Ending::Signal => 1,
            Ending::StackOverflow => 2,
            Ending::Killed => 3,
            Ending::Exec => 4,
            Ending::ForkedChild => 5,
            Ending::AfterFork => 6,
        }
    }

    fn from_code(c: u8) -> Ending {
        match c {
            1 => Ending::Signal,
            2 => Ending::StackOverflow,
            3 => Ending::Killed,
            4 => Ending::Exec,
            5 => Ending::ForkedChild,
            6 => Ending::AfterFork,
            _ => Ending::Unknown,
        }
    }
}

impl ReasonInfo {
    /// The limit in force in nanoseconds at `ticks_per_second`; `None` when the log has none.
    ///
    /// A limit given in time is kept as the whole ticks it spans, rounded down (a call fires
    /// when it lasts more ticks than that, which is exactly "longer than the limit"), so it is
    /// read back rounded up: `5ms` reads as 5,000,000 ns, not 4,999,999, wherever a tick is
    /// shorter than a nanosecond.
    ///
    /// ```
    /// use fdr_format::ReasonInfo;
    /// let hz = 2_994_374_123;
    /// let r = ReasonInfo { limit_ticks: fdr_format::units::ns_to_ticks(5_000_000, hz), ..Default::default() };
    /// assert_eq!(r.limit_ns(hz), Some(5_000_000));
    /// assert_eq!(ReasonInfo::default().limit_ns(hz), None);
    /// ```
    pub fn limit_ns(&self, ticks_per_second: u64) -> Option<u64> {
        (self.limit_ticks > 0).then(|| ticks_to_ns_rounded_up(self.limit_ticks, ticks_per_second))
    }
}

/// One instrumented function (or scope) in the function table.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FunctionInfo {
    /// The 28-bit id used in function records.
    pub id: u32,
    /// Full name, as a user reads it in a backtrace.
    pub name: String,
    /// Source file.
    pub file: String,
    /// Line in the source file.
    pub line: u32,
    /// What kind of instrumentation point this is.
    pub kind: FunctionKind,
    /// Names of the logged arguments, in order.
    pub args: Vec<String>,
    /// What each logged argument's bits hold, in order, as far as the writer knew (fewer than
    /// `args`, or none in a log older than the kinds: [`crate::args::ArgKind::Unsigned`]).
    pub arg_kinds: Vec<crate::args::ArgKind>,
    /// Column in the source line, from 1 (0: not recorded). An await site has one: several
    /// `.await`s can share a line.
    pub column: u32,
}

impl FunctionInfo {
    /// The kind of argument `i`.
    pub fn arg_kind(&self, i: usize) -> crate::args::ArgKind {
        self.arg_kinds.get(i).copied().unwrap_or_default()
    }

    /// Where the function (or await site) is: `FILE:LINE`, or `FILE:LINE:COLUMN` when the column
    /// is known.
    ///
    /// ```
    /// use fdr_format::FunctionInfo;
    /// let mut f = FunctionInfo { file: "src/db.rs".into(), line: 42, ..Default::default() };
    /// assert_eq!(f.location(), "src/db.rs:42");
    /// f.column = 17;
    /// assert_eq!(f.location(), "src/db.rs:42:17");
    /// ```
    pub fn location(&self) -> String {
        if self.column == 0 {
            format!("{}:{}", self.file, self.line)
        } else {
            format!("{}:{}:{}", self.file, self.line, self.column)
        }
    }
}

/// What kind of code an id stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FunctionKind {
    /// A function or method.
    #[default]
    Function,
    /// A block annotated with `fdr_scope!`.
    Scope,
    /// An async function: each poll is an entry/exit pair.
    Async,
    /// An `.await` in an instrumented `async fn` (an await site): its waits are await events
    /// ([`crate::AwaitEvent`]). `name` is the async function's, `file`, `line` and `column`
    /// where the awaited expression begins.
    Await,
}

/// A thread that recorded, with its name and its own loss counter.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ThreadInfo {
    /// Operating system thread id, as in `NewBuffer` records.
    pub tid: i32,
    /// Thread name (empty if it had none).
    pub name: String,
    /// Records this thread could not write (Fill mode).
    pub records_dropped: u64,
}

/// One fdr extension record.
///
/// ```
/// use fdr_format::{Extension, ThreadInfo};
/// let e = Extension::Thread(ThreadInfo { tid: 7, name: "worker".into(), records_dropped: 0 });
/// let bytes = e.encode();
/// assert_eq!(Extension::decode(&bytes).unwrap(), Some(e));
/// assert_eq!(Extension::decode(b"not ours").unwrap(), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Extension {
    /// Settings, calibration and counters.
    Run(RunInfo),
    /// One function-table entry.
    Function(FunctionInfo),
    /// One thread's name and counters.
    Thread(ThreadInfo),
    /// Why the log was written.
    Reason(ReasonInfo),
    /// The configuration the recording ran with, as `FDR_OPTIONS` words
    /// (`mode=ring buffer_size=16384 ... trigger=svc::get_quote:20ms`), whether it came from
    /// there or from `Config`.
    Options(String),
    /// What the cost budget did.
    Budget(BudgetInfo),
    /// A tag this reader does not know (written by a newer fdr).
    Unknown(u8),
}

struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// Strings are cut to fit the payload limit rather than making an unreadable record.
    fn str(&mut self, s: &str) {
        let mut end = s.len().min(MAX_EXT_PAYLOAD / 4);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.u32(end as u32);
        self.0.extend_from_slice(&s.as_bytes()[..end]);
    }
}

struct In<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> In<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if self.b.len() - self.at < n {
            return Err(format!(
                "fdr extension record ends at byte {} of {}, inside its {what}",
                self.b.len(),
                self.at + n
            ));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let s = self.take(4, what)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn i32(&mut self, what: &str) -> Result<i32, String> {
        Ok(self.u32(what)? as i32)
    }
    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let s = self.take(8, what)?;
        let mut w = [0u8; 8];
        w.copy_from_slice(s);
        Ok(u64::from_le_bytes(w))
    }
    /// A field appended in a later version: absent (the record ends first) reads as 0.
    fn u64_or_zero(&mut self, what: &str) -> Result<u64, String> {
        if self.at == self.b.len() {
            return Ok(0);
        }
        self.u64(what)
    }
    /// A `u8` appended in a later version: absent reads as 0.
    fn u8_or_zero(&mut self, what: &str) -> Result<u8, String> {
        if self.at == self.b.len() {
            return Ok(0);
        }
        self.u8(what)
    }
    /// An `i32` appended in a later version: absent reads as 0.
    fn u64_or_zero_i32(&mut self, what: &str) -> Result<i32, String> {
        if self.at == self.b.len() {
            return Ok(0);
        }
        self.i32(what)
    }
    fn i64(&mut self, what: &str) -> Result<i64, String> {
        Ok(self.u64(what)? as i64)
    }
    /// The length is checked against what is left of the payload before anything is allocated.
    fn str(&mut self, what: &str) -> Result<String, String> {
        let n = self.u32(what)? as usize;
        let s = self.take(n, what)?;
        Ok(String::from_utf8_lossy(s).into_owned())
    }
}

impl Extension {
    /// The custom-event payload for this record.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Out(EXT_MAGIC.to_vec());
        match self {
            Extension::Run(r) => {
                o.u8(TAG_RUN);
                o.u8(r.clock.code());
                o.u8(match r.mode {
                    Mode::Ring => 0,
                    Mode::Fill => 1,
                });
                o.u8(u8::from(r.snapshot));
                o.u64(r.ticks_per_second);
                o.u64(r.calibration_ns);
                o.u64(r.threshold_ns);
                o.u64(r.threshold_ticks);
                o.u64(r.buffer_size);
                o.u64(r.buffer_count);
                o.i32(r.pid);
                o.i64(r.start_unix_secs);
                o.u32(r.start_unix_nanos);
                o.u64(r.start_tsc);
                o.u64(r.end_tsc);
                o.u64(r.records_dropped);
                o.u64(r.buffers_recycled);
                o.u64(r.buffers_missed);
                o.str(&r.program);
                o.u64(r.args_dropped);
                o.u64(r.calls_unattached);
                o.u64(r.max_age_ns);
                o.u64(r.calls_erased);
                o.u64(r.probes);
                o.u64(r.culled_at_start);
            }
            Extension::Function(f) => {
                o.u8(TAG_FUNCTION);
                o.u32(f.id);
                o.u32(f.line);
                o.u8(match f.kind {
                    FunctionKind::Function => 0,
                    FunctionKind::Scope => 1,
                    FunctionKind::Async => 2,
                    FunctionKind::Await => 3,
                });
                o.str(&f.name);
                o.str(&f.file);
                o.u32(f.args.len() as u32);
                for a in &f.args {
                    o.str(a);
                }
                // Appended: older readers stop before them. The column comes after the kinds,
                // which are then written even when there are none.
                if !f.arg_kinds.is_empty() || f.column != 0 {
                    o.u32(f.arg_kinds.len() as u32);
                    for k in &f.arg_kinds {
                        o.u8(k.code());
                    }
                }
                if f.column != 0 {
                    o.u32(f.column);
                }
            }
            Extension::Thread(t) => {
                o.u8(TAG_THREAD);
                o.i32(t.tid);
                o.u64(t.records_dropped);
                o.str(&t.name);
            }
            Extension::Reason(r) => {
                o.u8(TAG_REASON);
                o.u8(match r.reason {
                    Reason::Unknown => 0,
                    Reason::SlowCall => 1,
                    Reason::StillRunning => 2,
                    Reason::Signal => 3,
                    Reason::Panic => 4,
                    Reason::Exit => 5,
                    Reason::Api => 6,
                    Reason::Crash => 7,
                    Reason::LongPoll => 8,
                    Reason::LongPollRunning => 9,
                });
                o.u32(r.function);
                o.i32(r.tid);
                o.u64(r.start_tsc);
                o.u64(r.duration_ticks);
                o.u64(r.suppressed);
                o.u64(r.limit_ticks);
                o.u64(r.p99_ticks);
                o.i32(r.signal);
                o.u64(r.address);
                o.u64(r.cpu_wait_ns.map_or(0, |w| w.saturating_add(1)));
                o.u8(r.ending.code());
                o.i32(r.other_pid);
                o.u64(r.end_within_ns);
                o.i32(r.handled_signal);
                o.u64(r.handled_before_ns);
                o.u64(r.off_cpu_ns.map_or(0, |w| w.saturating_add(1)));
                o.u64(r.cpu_wait_suppressed);
            }
            Extension::Options(words) => {
                o.u8(TAG_OPTIONS);
                o.str(words);
            }
            Extension::Budget(b) => {
                o.u8(TAG_BUDGET);
                o.u32(b.budget_ppm);
                o.u64(b.call_cost_ps);
                o.u32(b.estimate_ppm);
                o.u32(b.peak_ppm);
                o.u32(b.overall_ppm);
                o.u64(b.looks);
                o.u64(b.spans_dropped);
                o.u32(b.untimed.len() as u32);
                for span in &b.untimed {
                    o.u32(span.function);
                    o.u64(span.from_tsc);
                    o.u64(span.to_tsc.map_or(0, |t| t.saturating_add(1)));
                    o.u64(span.calls_per_second);
                }
            }
            Extension::Unknown(tag) => o.u8(*tag),
        }
        o.0
    }

    /// Reads a custom-event payload. `Ok(None)` if it is not an fdr record (some other custom
    /// event); `Err` with a description if it is one but is malformed.
    pub fn decode(payload: &[u8]) -> Result<Option<Extension>, String> {
        if payload.len() < 5 || payload[..4] != EXT_MAGIC {
            return Ok(None);
        }
        let mut i = In { b: payload, at: 5 };
        let ext = match payload[4] {
            TAG_RUN => {
                let code = i.u8("clock source")?;
                let clock = ClockSource::from_code(code)
                    .ok_or_else(|| format!("unknown clock source {code} in the run record"))?;
                let mode = match i.u8("mode")? {
                    0 => Mode::Ring,
                    1 => Mode::Fill,
                    m => return Err(format!("unknown mode {m} in the run record")),
                };
                let snapshot = i.u8("snapshot flag")? != 0;
                Extension::Run(RunInfo {
                    clock,
                    mode,
                    snapshot,
                    ticks_per_second: i.u64("tick rate")?,
                    calibration_ns: i.u64("calibration window")?,
                    threshold_ns: i.u64("threshold")?,
                    threshold_ticks: i.u64("threshold")?,
                    buffer_size: i.u64("buffer size")?,
                    buffer_count: i.u64("buffer count")?,
                    pid: i.i32("pid")?,
                    start_unix_secs: i.i64("start time")?,
                    start_unix_nanos: i.u32("start time")?,
                    start_tsc: i.u64("start timestamp")?,
                    end_tsc: i.u64("end timestamp")?,
                    records_dropped: i.u64("drop counter")?,
                    buffers_recycled: i.u64("recycle counter")?,
                    buffers_missed: i.u64("missed-buffer counter")?,
                    program: i.str("program name")?,
                    args_dropped: i.u64_or_zero("argument drop counter")?,
                    calls_unattached: i.u64_or_zero("unattached-call counter")?,
                    max_age_ns: i.u64_or_zero("age limit")?,
                    calls_erased: i.u64_or_zero("erased-call counter")?,
                    probes: i.u64_or_zero("probe counter")?,
                    culled_at_start: i.u64_or_zero("count of functions culled from the start")?,
                })
            }
            TAG_FUNCTION => {
                let id = i.u32("function id")?;
                let line = i.u32("line")?;
                let kind = match i.u8("function kind")? {
                    0 => FunctionKind::Function,
                    1 => FunctionKind::Scope,
                    2 => FunctionKind::Async,
                    3 => FunctionKind::Await,
                    k => return Err(format!("unknown function kind {k} for function id {id}")),
                };
                let name = i.str("function name")?;
                let file = i.str("file name")?;
                let n = i.u32("argument count")? as usize;
                // Each name takes at least its 4-byte length, which bounds n by the payload.
                if n > (payload.len() - i.at) / 4 {
                    return Err(format!(
                        "function id {id} claims {n} argument names, more than its record holds"
                    ));
                }
                let mut args = Vec::with_capacity(n);
                for _ in 0..n {
                    args.push(i.str("argument name")?);
                }
                // The kinds, appended later: absent from older logs.
                let mut arg_kinds = Vec::new();
                if i.at < payload.len() {
                    let k = i.u32("argument kind count")? as usize;
                    if k > payload.len() - i.at {
                        return Err(format!(
                            "function id {id} claims {k} argument kinds, more than its record holds"
                        ));
                    }
                    for _ in 0..k {
                        arg_kinds.push(crate::args::ArgKind::from_code(i.u8("argument kind")?));
                    }
                }
                // The column, appended after the kinds: absent from older logs.
                let column = if i.at < payload.len() {
                    i.u32("column")?
                } else {
                    0
                };
                Extension::Function(FunctionInfo {
                    id,
                    name,
                    file,
                    line,
                    kind,
                    args,
                    arg_kinds,
                    column,
                })
            }
            TAG_THREAD => Extension::Thread(ThreadInfo {
                tid: i.i32("thread id")?,
                records_dropped: i.u64("drop counter")?,
                name: i.str("thread name")?,
            }),
            TAG_REASON => Extension::Reason(ReasonInfo {
                reason: match i.u8("reason")? {
                    1 => Reason::SlowCall,
                    2 => Reason::StillRunning,
                    3 => Reason::Signal,
                    4 => Reason::Panic,
                    5 => Reason::Exit,
                    6 => Reason::Api,
                    7 => Reason::Crash,
                    8 => Reason::LongPoll,
                    9 => Reason::LongPollRunning,
                    _ => Reason::Unknown,
                },
                function: i.u32("function id")?,
                tid: i.i32("thread id")?,
                start_tsc: i.u64("start timestamp")?,
                duration_ticks: i.u64("duration")?,
                suppressed: i.u64("suppressed-trigger counter")?,
                limit_ticks: i.u64_or_zero("trigger limit")?,
                p99_ticks: i.u64_or_zero("learned p99")?,
                signal: i.u64_or_zero_i32("crash signal")?,
                address: i.u64_or_zero("crash address")?,
                cpu_wait_ns: i.u64_or_zero("CPU wait")?.checked_sub(1),
                ending: Ending::from_code(i.u8_or_zero("ending")?),
                other_pid: i.u64_or_zero_i32("other process")?,
                end_within_ns: i.u64_or_zero("end bound")?,
                handled_signal: i.u64_or_zero_i32("handled signal")?,
                handled_before_ns: i.u64_or_zero("handled signal time")?,
                off_cpu_ns: i.u64_or_zero("off-CPU time")?.checked_sub(1),
                cpu_wait_suppressed: i.u64_or_zero("triggers suppressed for CPU waits")?,
            }),
            TAG_OPTIONS => Extension::Options(i.str("options")?),
            TAG_BUDGET => {
                let mut b = BudgetInfo {
                    budget_ppm: i.u32("budget")?,
                    call_cost_ps: i.u64("call cost")?,
                    estimate_ppm: i.u32("cost estimate")?,
                    peak_ppm: i.u32("peak cost estimate")?,
                    overall_ppm: i.u32("overall cost estimate")?,
                    looks: i.u64("budget looks")?,
                    spans_dropped: i.u64("dropped budget spans")?,
                    untimed: Vec::new(),
                };
                let n = i.u32("count of untimed functions")? as usize;
                // Each span is BUDGET_SPAN_BYTES: the payload bounds n.
                if n > (payload.len() - i.at) / BUDGET_SPAN_BYTES {
                    return Err(format!(
                        "the budget record claims {n} untimed functions, more than it holds"
                    ));
                }
                for _ in 0..n {
                    b.untimed.push(BudgetSpan {
                        function: i.u32("untimed function id")?,
                        from_tsc: i.u64("untimed since")?,
                        to_tsc: i.u64("untimed until")?.checked_sub(1),
                        calls_per_second: i.u64("untimed function's calls a second")?,
                    });
                }
                Extension::Budget(b)
            }
            tag => Extension::Unknown(tag),
        };
        Ok(Some(ext))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_extension_round_trips() {
        let run = RunInfo {
            clock: ClockSource::Monotonic,
            ticks_per_second: 2_994_000_000,
            calibration_ns: 10_000_000,
            mode: Mode::Fill,
            threshold_ns: 5000,
            threshold_ticks: 14970,
            buffer_size: 65536,
            buffer_count: 128,
            pid: 1234,
            start_unix_secs: 1_700_000_000,
            start_unix_nanos: 5,
            start_tsc: 99,
            end_tsc: 1000,
            snapshot: true,
            records_dropped: 3,
            buffers_recycled: 4,
            buffers_missed: 1,
            program: "prog".into(),
            args_dropped: 6,
            calls_unattached: 7,
            max_age_ns: 8,
            calls_erased: 9,
            probes: 10,
            culled_at_start: 11,
        };
        let f = FunctionInfo {
            id: 3,
            name: "a::b".into(),
            file: "src/lib.rs".into(),
            line: 10,
            kind: FunctionKind::Async,
            args: vec!["x".into(), "y".into()],
            arg_kinds: Vec::new(),
            column: 0,
        };
        let site = FunctionInfo {
            id: 4,
            name: "a::b".into(),
            file: "src/lib.rs".into(),
            line: 12,
            kind: FunctionKind::Await,
            column: 17,
            ..FunctionInfo::default()
        };
        for e in [
            Extension::Run(run),
            Extension::Function(f),
            Extension::Function(site),
            Extension::Reason(ReasonInfo {
                reason: Reason::StillRunning,
                function: 4,
                tid: 9,
                start_tsc: 10,
                duration_ticks: 11,
                suppressed: 12,
                limit_ticks: 13,
                p99_ticks: 4,
                signal: 11,
                address: 0xdead,
                cpu_wait_ns: Some(0),
                ending: Ending::AfterFork,
                other_pid: 77,
                end_within_ns: 1_000_000_000,
                handled_signal: 15,
                handled_before_ns: 31_000_000_000,
                off_cpu_ns: Some(1),
                cpu_wait_suppressed: 6,
            }),
            Extension::Reason(ReasonInfo {
                cpu_wait_ns: Some(3_800_000),
                ..ReasonInfo::default()
            }),
            Extension::Reason(ReasonInfo {
                cpu_wait_ns: Some(0),
                off_cpu_ns: Some(20_100_000),
                cpu_wait_suppressed: 3,
                ..ReasonInfo::default()
            }),
            Extension::Options("mode=ring trigger=svc::get_quote:20ms".into()),
            Extension::Unknown(200),
        ] {
            assert_eq!(Extension::decode(&e.encode()).unwrap(), Some(e));
        }
    }

    #[test]
    fn a_reason_written_before_the_limit_was_recorded_reads_as_no_limit() {
        let r = ReasonInfo {
            reason: Reason::SlowCall,
            function: 4,
            tid: 9,
            start_tsc: 10,
            duration_ticks: 11,
            suppressed: 12,
            limit_ticks: 13,
            p99_ticks: 4,
            ..ReasonInfo::default()
        };
        let b = Extension::Reason(r.clone()).encode();
        // The layout before: the same without the five fields after `p99_ticks`, and the
        // ending's five after those.
        let old = &b[..b.len() - 36 - 25 - 16];
        let want = ReasonInfo {
            limit_ticks: 0,
            p99_ticks: 0,
            ..r
        };
        assert_eq!(
            Extension::decode(old).unwrap(),
            Some(Extension::Reason(want))
        );
    }

    #[test]
    fn a_reason_written_before_the_off_cpu_time_reads_as_not_measured() {
        let r = ReasonInfo {
            reason: Reason::SlowCall,
            cpu_wait_ns: Some(5),
            off_cpu_ns: Some(7),
            cpu_wait_suppressed: 2,
            ..ReasonInfo::default()
        };
        let b = Extension::Reason(r.clone()).encode();
        let want = ReasonInfo {
            off_cpu_ns: None,
            cpu_wait_suppressed: 0,
            ..r
        };
        assert_eq!(
            Extension::decode(&b[..b.len() - 16]).unwrap(),
            Some(Extension::Reason(want))
        );
    }

    #[test]
    fn a_reason_written_before_the_ending_was_recorded_reads_as_unknown() {
        let r = ReasonInfo {
            reason: Reason::Crash,
            signal: 11,
            address: 0x10,
            tid: 3,
            ending: Ending::StackOverflow,
            other_pid: 9,
            end_within_ns: 7,
            handled_signal: 15,
            handled_before_ns: 5,
            ..ReasonInfo::default()
        };
        let b = Extension::Reason(r.clone()).encode();
        let want = ReasonInfo {
            ending: Ending::Unknown,
            other_pid: 0,
            end_within_ns: 0,
            handled_signal: 0,
            handled_before_ns: 0,
            ..r
        };
        assert_eq!(
            Extension::decode(&b[..b.len() - 25 - 16]).unwrap(),
            Some(Extension::Reason(want))
        );
    }

    #[test]
    fn truncated_payloads_are_errors_not_panics() {
        let f = Extension::Function(FunctionInfo {
            id: 1,
            name: "n".into(),
            file: "f".into(),
            line: 1,
            kind: FunctionKind::Function,
            args: vec!["a".into()],
            arg_kinds: Vec::new(),
            column: 0,
        });
        let b = f.encode();
        for n in 5..b.len() {
            assert!(Extension::decode(&b[..n]).is_err(), "prefix of {n} bytes");
        }
    }
}
