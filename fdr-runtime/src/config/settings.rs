//! The [`Config`] type: its builder, defaults and limits, and the check a configuration passes
//! before a recording starts ([`Config::validate`], whose errors name the `FDR_OPTIONS` key of
//! the setting, whichever way a value was given).

use std::path::PathBuf;
use std::time::Duration;

use crate::Error;

use super::keys::option_error;
use super::otlp::{Otlp, Secrets};
use super::ranges;

/// What to do when every buffer is in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Recycle the oldest retired buffer: the recorder always holds the newest window.
    #[default]
    Ring,
    /// Stop recording once the pool is full, and count what could not be written.
    Fill,
    /// Record no window: each thread keeps a call tree with counts, times and latency
    /// histograms instead, written as a profile (`fdr profile`). To have both, keep `Ring` or
    /// `Fill` and turn [`Config::profile`] on.
    Profile,
}

/// Where timestamps come from. See the table in the `clock` module's documentation.
///
/// ```
/// let c = fdr_runtime::Config::default().clock(fdr_runtime::Clock::Monotonic);
/// assert_eq!(c.get_clock(), fdr_runtime::Clock::Monotonic);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Clock {
    /// `Rdtsc` where the CPU number can come from the rseq area, else `Rdtscp`, else monotonic.
    #[default]
    Auto,
    /// The CPU's counter with the CPU number of each read: on x86_64 Linux `rdtscp` (both in one
    /// instruction); on aarch64 (`CNTVCT_EL0`) and on macOS the CPU number is asked of the
    /// system at each read (a `getcpu` system call on aarch64 Linux).
    Rdtscp,
    /// The CPU's counter (`rdtsc` on x86_64, `CNTVCT_EL0` on aarch64), with the CPU number from
    /// the thread's rseq area (Linux, glibc 2.35 or later).
    Rdtsc,
    /// The operating system's monotonic clock, in nanoseconds.
    Monotonic,
}

/// A signal that makes the recorder write a snapshot ([`Config::snapshot_on_signal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// `SIGUSR1`.
    Usr1,
    /// `SIGUSR2`.
    Usr2,
}

impl Signal {
    /// The signal's name without `SIG`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Usr1 => "USR1",
            Signal::Usr2 => "USR2",
        }
    }
}

/// A slow-call trigger set without code: functions whose full name matches `pattern` (`*` for
/// any run of characters) fire when a call lasts longer than `limit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trigger {
    /// The full function name as `fdr account` prints it, with `*` wildcards.
    pub pattern: String,
    /// How long a call may last.
    pub limit: Limit,
}

/// How long a call of a function with a trigger may last.
///
/// ```
/// use std::time::Duration;
/// use fdr_runtime::Limit;
/// assert_eq!(Limit::After(Duration::from_millis(50)).to_string(), "50ms");
/// assert_eq!(Limit::auto(3.0).unwrap().to_string(), "auto:k=3");
/// assert_eq!(Limit::auto(0.5), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// A limit written by hand.
    After(Duration),
    /// A limit learned from the function's own calls: `k` (in tenths) times their running p99,
    /// once [`AUTO_WARMUP`](crate::AUTO_WARMUP) calls are seen, and at least
    /// [`AUTO_FLOOR`](crate::AUTO_FLOOR).
    Auto {
        /// The multiple of the p99, in tenths (30: 3 × p99).
        k_tenths: u32,
    },
}

impl Limit {
    /// A learned limit of `k` times the p99 (`k` from 1 to 1000), or `None`.
    pub fn auto(k: f64) -> Option<Limit> {
        fdr_format::duration::auto_k_tenths(k).map(|k_tenths| Limit::Auto { k_tenths })
    }
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Limit::After(d) => {
                let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                f.write_str(&fdr_format::duration::write(nanos))
            }
            Limit::Auto { k_tenths } if k_tenths % 10 == 0 => write!(f, "auto:k={}", k_tenths / 10),
            Limit::Auto { k_tenths } => write!(f, "auto:k={}.{}", k_tenths / 10, k_tenths % 10),
        }
    }
}

/// Recorder settings.
///
/// ```
/// use std::time::Duration;
/// let c = fdr_runtime::Config::default()
///     .buffer_size(64 * 1024)
///     .buffer_count(128)
///     .threshold(Duration::from_micros(5))
///     .mode(fdr_runtime::Mode::Ring);
/// assert_eq!(c.get_buffer_count(), 128);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub(crate) buffer_size: usize,
    pub(crate) buffer_count: usize,
    pub(crate) threshold: Duration,
    pub(crate) mode: Mode,
    pub(crate) out: Option<PathBuf>,
    pub(crate) clock: Clock,
    pub(crate) triggers: Vec<Trigger>,
    pub(crate) trigger_cooldown: Duration,
    pub(crate) max_snapshots: u32,
    pub(crate) signal: Option<Signal>,
    pub(crate) max_age: Option<Duration>,
    pub(crate) long_poll: Option<Duration>,
    pub(crate) cull: bool,
    pub(crate) cull_after: u32,
    pub(crate) cull_memory: bool,
    /// The cost budget in millionths of the process's CPU time (`None`: off).
    pub(crate) budget_ppm: Option<u32>,
    pub(crate) profile: bool,
    pub(crate) profile_nodes: u32,
    pub(crate) profile_threads: bool,
    pub(crate) otlp: Otlp,
    pub(crate) crash_dir: CrashDir,
}

/// Where the buffer pool lives ([`Config::crash_dir`]).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) enum CrashDir {
    /// `$XDG_RUNTIME_DIR`, else `/dev/shm`, else the temporary directory.
    #[default]
    Default,
    /// Anonymous memory: nothing survives a crash.
    Off,
    /// This directory.
    Dir(PathBuf),
}

/// Smallest buffer that holds a block preamble and a useful number of records.
pub const MIN_BUFFER_SIZE: usize = 256;
/// Largest buffer: offsets within a buffer are 32-bit.
pub const MAX_BUFFER_SIZE: usize = 1 << 30;

/// The bound on call-tree nodes per thread of [`Config::default`] (see [`Config::profile_nodes`]).
pub const DEFAULT_PROFILE_NODES: u32 = 4096;
/// Calls nested deeper than this on one thread are folded into the deepest node of its profile.
pub const PROFILE_DEPTH: u32 = 512;
/// The largest [`Config::profile_nodes`].
pub const MAX_PROFILE_NODES: u32 = 1 << 20;

/// The cost budget of [`Config::default`], in millionths of the process's CPU time: 1 %.
///
/// The recorder's estimate of its own cost counts its clock reads and records at what they
/// cost in a loop; in a real program a recorded call costs more (its cache lines, the code it
/// adds around a small function), up to about twice as much on the services measured (see
/// `benches/README.md`, "A cost budget"). A budget of 1 % keeps the real cost under 2 % with
/// that margin.
pub const DEFAULT_BUDGET_PPM: u32 = 10_000;

/// The rewind threshold of [`Config::default`].
pub const DEFAULT_THRESHOLD: Duration = Duration::from_micros(5);

/// The long-poll limit of [`Config::default`] (see [`Config::long_poll`]): a poll that long
/// kept every other task of its worker waiting a tenth of a second, which is never normal (an
/// async task should reach an `.await` every 10 to 100 µs), and timing polls against it costs
/// each poll two stores to its thread's own registry entry.
pub const DEFAULT_LONG_POLL: Duration = Duration::from_millis(100);

impl Default for Config {
    fn default() -> Self {
        Config {
            // 8 MiB cut in 512 buffers: a thread holds one buffer while it records, so up to a
            // few hundred threads (a thread-per-connection server) record at once with a ring of
            // their own; bigger buffers would leave threads past `buffer_count` with nothing.
            buffer_size: 16 * 1024,
            buffer_count: 512,
            threshold: DEFAULT_THRESHOLD,
            mode: Mode::Ring,
            out: None,
            clock: Clock::Auto,
            triggers: Vec::new(),
            trigger_cooldown: Duration::from_secs(10),
            max_snapshots: 20,
            signal: None,
            max_age: None,
            long_poll: Some(DEFAULT_LONG_POLL),
            cull: true,
            cull_after: 2_000,
            cull_memory: true,
            budget_ppm: Some(DEFAULT_BUDGET_PPM),
            profile: false,
            profile_nodes: DEFAULT_PROFILE_NODES,
            profile_threads: false,
            otlp: Otlp::default(),
            // Miri runs no file mapping.
            crash_dir: if cfg!(miri) {
                CrashDir::Off
            } else {
                CrashDir::Default
            },
        }
    }
}

impl Config {
    /// Bytes per buffer, rounded down to a multiple of 8 when the recorder starts (default
    /// 16 KiB).
    pub fn buffer_size(mut self, bytes: usize) -> Self {
        self.buffer_size = bytes;
        self
    }

    /// Buffers in the pool (default 512). Each recording thread holds one at a time and needs a
    /// second to keep a ring: with more threads recording at once than buffers, the threads past
    /// that record nothing (their records are counted as dropped and `fdr info` says so).
    pub fn buffer_count(mut self, count: usize) -> Self {
        self.buffer_count = count;
        self
    }

    /// Calls that return sooner than this after their entry, with nothing recorded inside, are
    /// erased from the buffer rather than kept (default 5 µs, as XRay's flight recorder: the
    /// window then holds the calls that can matter to a latency, and functions whose calls never
    /// last that long are culled). `Duration::ZERO` keeps every call.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(fdr_runtime::Config::default().get_threshold(), Duration::from_micros(5));
    /// let every_call = fdr_runtime::Config::default().threshold(Duration::ZERO);
    /// assert_eq!(every_call.get_threshold(), Duration::ZERO);
    /// ```
    pub fn threshold(mut self, threshold: Duration) -> Self {
        self.threshold = threshold;
        self
    }

    /// Ring (keep the newest window), Fill (stop when full) or Profile (no window: call trees
    /// with latency histograms, see [`Config::profile`]).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Where a recording started from `FDR_OPTIONS` writes its log at exit.
    pub fn out(mut self, path: impl Into<PathBuf>) -> Self {
        self.out = Some(path.into());
        self
    }

    /// Where the buffer pool lives: a file (the crash box, `fdr-PROGRAM-PID.box`) mapped shared
    /// in `dir`, so that the window survives a process that dies without writing it (SIGKILL,
    /// the OOM killer, a segfault, `abort`, a stack overflow); `fdr recover`, or the program's
    /// next start, turns it into a log. The default is `$XDG_RUNTIME_DIR`, else `/dev/shm`, else
    /// the temporary directory; the first two are memory, so nothing goes to disk. A directory
    /// that cannot hold the pool falls back to anonymous memory, with one line on stderr.
    ///
    /// ```
    /// let c = fdr_runtime::Config::default().crash_dir("/run/user/1000");
    /// assert_eq!(c.get_crash_dir().as_deref(), Some(std::path::Path::new("/run/user/1000")));
    /// ```
    pub fn crash_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.crash_dir = CrashDir::Dir(dir.into());
        self
    }

    /// Keeps the buffer pool in anonymous memory (`FDR_OPTIONS` `crash_dir=off`): nothing is
    /// left when the process dies without writing its log.
    ///
    /// ```
    /// assert_eq!(fdr_runtime::Config::default().crash_dir_off().get_crash_dir(), None);
    /// ```
    pub fn crash_dir_off(mut self) -> Self {
        self.crash_dir = CrashDir::Off;
        self
    }

    /// The directory the crash box goes in, `None` when it is off.
    pub fn get_crash_dir(&self) -> Option<std::borrow::Cow<'_, std::path::Path>> {
        match &self.crash_dir {
            CrashDir::Off => None,
            CrashDir::Dir(d) => Some(std::borrow::Cow::Borrowed(d)),
            CrashDir::Default => {
                Some(std::borrow::Cow::Owned(fdr_format::crash_box::default_dir()))
            }
        }
    }

    /// Where timestamps come from. A source the machine cannot give makes `start` fail with an
    /// error that names the sources it can.
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The clock source asked for.
    pub fn get_clock(&self) -> Clock {
        self.clock
    }

    /// Adds a slow-call trigger without touching the code: a call of a function whose full name
    /// (as `fdr account` prints it) matches `pattern`, where `*` matches any run of characters,
    /// that lasts longer than `limit` writes a snapshot. It overrides a `trigger` written in the
    /// function's attribute.
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = fdr_runtime::Config::default().trigger("app::handle*", Duration::from_millis(50));
    /// assert_eq!(c.get_triggers().len(), 1);
    /// ```
    pub fn trigger(mut self, pattern: impl Into<String>, limit: Duration) -> Self {
        self.triggers.push(Trigger {
            pattern: pattern.into(),
            limit: Limit::After(limit),
        });
        self
    }

    /// Adds a trigger whose limit is learned: a call of a function matching `pattern` fires
    /// when it lasts longer than `k` times the running p99 of the function's calls (after
    /// [`AUTO_WARMUP`](crate::AUTO_WARMUP) calls, and never under
    /// [`AUTO_FLOOR`](crate::AUTO_FLOOR)); `k` is clamped to 1 to 1000. `FDR_OPTIONS`:
    /// `trigger=PATTERN:auto` (k = 3) or `trigger=PATTERN:auto:k=5`.
    ///
    /// ```
    /// let c = fdr_runtime::Config::default().trigger_auto("app::handle*", 3.0);
    /// assert_eq!(c.get_triggers()[0].limit.to_string(), "auto:k=3");
    /// ```
    pub fn trigger_auto(mut self, pattern: impl Into<String>, k: f64) -> Self {
        let k_tenths = fdr_format::duration::auto_k_tenths(k.clamp(1.0, 1000.0)).unwrap_or(30);
        self.triggers.push(Trigger {
            pattern: pattern.into(),
            limit: Limit::Auto { k_tenths },
        });
        self
    }

    /// At most one trigger snapshot per `cooldown` (default 10 s); the triggers in between are
    /// counted as suppressed, and the next log says how many.
    pub fn trigger_cooldown(mut self, cooldown: Duration) -> Self {
        self.trigger_cooldown = cooldown;
        self
    }

    /// A poll of an instrumented `async fn` that lasts longer than `limit` is a trigger (reason
    /// "long poll"): the poll blocked its thread, an executor's worker, and every task waiting
    /// for it. The watchdog fires while the poll still runs (a worker stuck for good is the worst
    /// case); one that ends past the limit fires at its end. Default [`DEFAULT_LONG_POLL`]
    /// (100 ms); `Duration::ZERO` turns it off (`long_poll=off`). Snapshots share the cooldown
    /// and the cap of the slow-call triggers.
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = fdr_runtime::Config::default().long_poll(Duration::from_millis(20));
    /// assert_eq!(c.get_long_poll(), Some(Duration::from_millis(20)));
    /// assert_eq!(c.long_poll(Duration::ZERO).get_long_poll(), None);
    /// ```
    pub fn long_poll(mut self, limit: Duration) -> Self {
        self.long_poll = (!limit.is_zero()).then_some(limit);
        self
    }

    /// At most this many trigger and signal snapshot files per process (default 20).
    pub fn max_snapshots(mut self, n: u32) -> Self {
        self.max_snapshots = n;
        self
    }

    /// Writes a snapshot when the process receives `signal` (`kill -USR1 <pid>`). The handler
    /// only wakes the recorder's background writer. A signal the program already handles is an
    /// error at start.
    pub fn snapshot_on_signal(mut self, signal: Signal) -> Self {
        self.signal = Some(signal);
        self
    }

    /// Logs hold only each thread's records of the last `age`: older blocks are left out, and a
    /// block that straddles the cutoff is cut at a record boundary.
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = Some(age);
        self
    }

    /// Culling (on by default): a function whose calls were erased by the rewind for
    /// [`Config::cull_after`] calls (counted over all threads together, each kept call taking
    /// 1,000 off the count) stops being recorded on every thread: its calls cost one flag test, as with no recorder. Every 10 ms the
    /// background writer lets the next 64 calls of each culled function through (a probe; every
    /// 100 ms while the cost budget untimes functions, as probes cost what it is short of); a
    /// probed call that reaches the threshold, on any thread, records the function again
    /// everywhere, as if that call had come before the cull: 1,000 more erased calls cull it
    /// again, unless more of its calls are kept. The log says which functions were
    /// culled and restored, on which thread and when, and how many probes were made. Off, every call is recorded (or
    /// erased) as it comes. Culling only applies with a threshold above zero.
    ///
    /// ```
    /// let c = fdr_runtime::Config::default().cull(false);
    /// assert!(!c.get_cull());
    /// ```
    pub fn cull(mut self, on: bool) -> Self {
        self.cull = on;
        self
    }

    /// The cost budget, in percent of the process's CPU time (1 % by default; `None` turns it
    /// off; `FDR_OPTIONS` `budget=PERCENT|off`). The background writer estimates, ten times a
    /// second, what recording cost since its last look (the calls timed and the records
    /// written, each at the cost of a timed call measured at start, one and a half times what it
    /// costs in that loop; an async function's poll at three calls; and the writer's own CPU
    /// time) against the CPU time the process spent meanwhile. Over budget, it stops timing the
    /// functions whose calls tell the least for what they cost: the ones with the most calls
    /// shorter than the threshold among those seen inside another timed call, then those whose
    /// kept records cost the most; never a function with a trigger or logged arguments, never
    /// one seen as its thread's outermost timed call (a task's root poll), never one called
    /// fewer than 1,000 times a second, and none that culling is about to take (their calls
    /// are left out of what it acts on). Once the estimate has stayed under half the budget for a second, it times the last
    /// one again (and, if that one is stopped again soon, waits twice as long before the next
    /// try). The log says which functions were untimed, from when to when, and the estimate;
    /// `fdr info` prints it and `fdr account` marks them. The budget needs culling's counts:
    /// with [`Config::cull`] off (or a threshold of 0, or a profile) it is off too.
    ///
    /// ```
    /// let c = fdr_runtime::Config::default().budget(Some(0.5));
    /// assert_eq!(c.get_budget(), Some(0.5));
    /// assert_eq!(fdr_runtime::Config::default().budget(None).get_budget(), None);
    /// ```
    pub fn budget(mut self, percent: Option<f64>) -> Self {
        self.budget_ppm = percent.map(|p| {
            if p.is_finite() && p > 0.0 {
                (p * 10_000.0).round().clamp(1.0, 1_000_000.0) as u32
            } else {
                0
            }
        });
        self
    }

    /// Erased calls of a function, on all threads together, after which it is culled (2,000).
    /// Each function counts its own run: no other function's calls touch it. A kept call takes
    /// 1,000 off the run (down to 0), so a function kept once in a thousand calls or more often
    /// is never culled, while one whose rare long calls were an interrupt or a preemption is;
    /// with a `cull_after` of at most 1,000, a kept call starts the run over.
    ///
    /// Which functions are culled is set by that 1,000; `cull_after` sets how many calls it
    /// takes to know, each of them paid as a recorded, rewound call. At 10,000 (the default
    /// until #56) a program that runs for a few milliseconds paid it on most of its calls:
    /// semver annotated whole, 200 rounds with nothing remembered, ran 4.5 x slower than
    /// without fdr; at 2,000, 2.7 x. A function that gets slow after it was culled is found by
    /// the probes, as before.
    ///
    /// ```
    /// let c = fdr_runtime::Config::default().cull_after(500);
    /// assert_eq!(c.get_cull_after(), 500);
    /// ```
    pub fn cull_after(mut self, calls: u32) -> Self {
        self.cull_after = calls;
        self
    }

    /// Starts from what the last recording of the same build learned (on by default,
    /// `FDR_OPTIONS` `cull_memory=on|off`): the functions culled when it ended are culled from
    /// the start and the others' runs of erased calls go on from where they were, so a program
    /// that runs a few milliseconds does not pay the learning of [`Config::cull_after`] calls
    /// per function on every run. They are probed as any culled
    /// function, so one that became slow is restored. Kept in the crash directory as
    /// `fdr-PROGRAM.culls`, keyed by the program's build id; used only under a threshold as high
    /// and a `cull_after` as low as they were learned with, and only when the recording culls
    /// and has a crash directory. The log says how many functions started culled.
    ///
    /// ```
    /// assert!(fdr_runtime::Config::default().get_cull_memory());
    /// let fresh = fdr_runtime::Config::default().cull_memory(false);
    /// assert!(!fresh.get_cull_memory());
    /// ```
    pub fn cull_memory(mut self, on: bool) -> Self {
        self.cull_memory = on;
        self
    }

    /// Keeps a profile beside the window: per thread, a tree of call paths, each node with the
    /// calls' count, total and self time, min, max and a latency histogram; written by
    /// [`Recorder::write_profile`](crate::Recorder::write_profile), at exit and on the snapshot
    /// signal (`FDR_OPTIONS` `profile=on`). [`Mode::Profile`] is the same without the window.
    /// A profile counts every call, so culling is off while profiling.
    ///
    /// ```
    /// let c = fdr_runtime::Config::default().profile(true);
    /// assert!(c.profiles());
    /// assert!(fdr_runtime::Config::default().mode(fdr_runtime::Mode::Profile).profiles());
    /// ```
    pub fn profile(mut self, on: bool) -> Self {
        self.profile = on;
        self
    }

    /// At most this many call-tree nodes per thread (default 4096, up to 1,048,576; about
    /// 1.3 KiB each, taken as the thread meets new call paths). Past it, a call along a new path
    /// is counted into its caller's node (its time is the caller's self time) and the profile
    /// says how many calls were folded so; so are calls nested deeper than
    /// [`PROFILE_DEPTH`].
    pub fn profile_nodes(mut self, nodes: u32) -> Self {
        self.profile_nodes = nodes;
        self
    }

    /// Profiles keep one call tree per thread alive when written, and one for the threads that
    /// exited, instead of one tree merged over every thread (`FDR_OPTIONS`
    /// `profile_threads=on`). `fdr profile --threads` shows them apart.
    pub fn profile_threads(mut self, on: bool) -> Self {
        self.profile_threads = on;
        self
    }

    /// Sends every window the recorder writes while it runs (a trigger's, the signal's, a
    /// panic's, a snapshot the program asks for) to an OpenTelemetry collector, as an OTLP/HTTP
    /// protobuf `ExportTraceServiceRequest` posted to `URL/v1/traces` (`http://` or
    /// `https://`; a URL with a path is used as given): one span per call, named by the
    /// function, with its caller as parent, its thread as attributes, and `fdr.open = true` on
    /// calls still running. The URL `env` takes the endpoint of the OpenTelemetry variables
    /// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT` with
    /// `/v1/traces` added, else `http://localhost:4318/v1/traces`): the variables alone never
    /// turn sending on. Whatever the endpoint, the variables give the headers, timeout,
    /// compression, CA, `service.name` and resource attributes this `Config` does not (see
    /// [`Config::otlp_header`]). Needs the `otlp` feature (`fdr/otlp`); without it,
    /// [`crate::start`] says so.
    ///
    /// A thread of its own sends, never a recording thread: windows wait in a bounded queue
    /// ([`Config::otlp_queue`]; when full, the oldest is dropped), each request is tried for
    /// at most [`Config::otlp_timeout`] and retried (429, 502, 503, 504 and connection
    /// failures, honouring `Retry-After`, with a doubling backoff) for at most
    /// [`Config::otlp_retry_for`]. Windows dropped or not accepted are counted in
    /// [`Stats::windows_dropped`](crate::Stats::windows_dropped) and said on stderr once. When
    /// the recording ends (finish, exit), windows still queued get up to
    /// [`OTLP_FLUSH`](crate::OTLP_FLUSH) to go.
    ///
    /// ```
    /// let c = fdr_runtime::Config::default().otlp_endpoint("http://localhost:4318");
    /// assert_eq!(c.get_otlp_endpoint(), Some("http://localhost:4318"));
    /// let from_variables = fdr_runtime::Config::default().otlp_endpoint("env");
    /// assert_eq!(from_variables.get_otlp_endpoint(), Some("env"));
    /// ```
    pub fn otlp_endpoint(mut self, url: impl Into<String>) -> Self {
        self.otlp.endpoint = Some(url.into());
        self
    }

    /// Sends the header `name: value` with every request to the collector: an API key, a
    /// tenant (`FDR_OPTIONS` `otlp_headers=NAME=VALUE,NAME=VALUE`, values percent-decoded).
    /// Repeatable. Headers given here replace those of `OTEL_EXPORTER_OTLP_TRACES_HEADERS` and
    /// `OTEL_EXPORTER_OTLP_HEADERS` (a list is taken whole from one place). Values are never
    /// printed: not in errors, nor in this `Config`'s debug form.
    ///
    /// ```
    /// let c = fdr_runtime::Config::default()
    ///     .otlp_endpoint("https://api.honeycomb.io")
    ///     .otlp_header("x-honeycomb-team", "s3cr3t");
    /// assert_eq!(c.get_otlp_header_names(), ["x-honeycomb-team"]);
    /// assert!(!format!("{c:?}").contains("s3cr3t"));
    /// ```
    pub fn otlp_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.otlp
            .headers
            .get_or_insert_with(Secrets::default)
            .0
            .push((name.into(), value.into()));
        self
    }

    /// The names of the headers given with [`Config::otlp_header`] (never their values).
    pub fn get_otlp_header_names(&self) -> Vec<&str> {
        self.otlp
            .headers
            .iter()
            .flat_map(|h| h.0.iter().map(|(n, _)| n.as_str()))
            .collect()
    }

    /// Trusts the CA certificates of this PEM file, instead of the system's roots, for an
    /// `https://` collector (a company's private CA; `FDR_OPTIONS` `otlp_ca=PATH`; default:
    /// `OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE`, `OTEL_EXPORTER_OTLP_CERTIFICATE`, else the
    /// system's trust store, which honours `SSL_CERT_FILE` and `SSL_CERT_DIR`). A file that
    /// cannot be read makes [`crate::start`] fail, naming it.
    ///
    /// ```
    /// let c = fdr_runtime::Config::default().otlp_ca("/etc/fdr/ca.pem");
    /// assert_eq!(c.get_otlp_ca(), Some(std::path::Path::new("/etc/fdr/ca.pem")));
    /// ```
    pub fn otlp_ca(mut self, pem: impl Into<PathBuf>) -> Self {
        self.otlp.ca = Some(pem.into());
        self
    }

    /// The CA file given, if any.
    pub fn get_otlp_ca(&self) -> Option<&std::path::Path> {
        self.otlp.ca.as_deref()
    }

    /// Gzips request bodies or not (`FDR_OPTIONS` `otlp_compression=gzip|none`; default:
    /// `OTEL_EXPORTER_OTLP_TRACES_COMPRESSION`, `OTEL_EXPORTER_OTLP_COMPRESSION`, else gzip,
    /// which every OTLP/HTTP receiver takes and which makes a window's request four to nine
    /// times smaller, on the sending thread).
    ///
    /// ```
    /// let c = fdr_runtime::Config::default().otlp_gzip(false);
    /// assert_eq!(c.get_otlp_gzip(), Some(false));
    /// ```
    pub fn otlp_gzip(mut self, on: bool) -> Self {
        self.otlp.gzip = Some(on);
        self
    }

    /// Whether request bodies are gzipped, when given here.
    pub fn get_otlp_gzip(&self) -> Option<bool> {
        self.otlp.gzip
    }

    /// `service.name` of exported windows (default: the program's file name).
    ///
    /// ```
    /// let c = fdr_runtime::Config::default().service_name("checkout");
    /// assert_eq!(c.get_service_name(), Some("checkout"));
    /// ```
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.otlp.service_name = Some(name.into());
        self
    }

    /// Windows go to the collector instead of files (default: both). The final log of
    /// [`Recorder::finish`](crate::Recorder::finish) and of exit is still written, and so is a
    /// profile.
    pub fn otlp_only(mut self, on: bool) -> Self {
        self.otlp.only = on;
        self
    }

    /// Windows waiting to be sent, at most (default 8, 1 to 1024). Each is held as its log's
    /// bytes until sent.
    pub fn otlp_queue(mut self, windows: u32) -> Self {
        self.otlp.queue = windows;
        self
    }

    /// Spans per request, at most (default 10,000): a bigger window is sent in several.
    pub fn otlp_max_spans(mut self, spans: u32) -> Self {
        self.otlp.max_spans = spans;
        self
    }

    /// One attempt's limit: resolving, connecting, the TLS handshake, sending and reading the
    /// answer (default: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, `OTEL_EXPORTER_OTLP_TIMEOUT`, else
    /// 10 s).
    pub fn otlp_timeout(mut self, timeout: Duration) -> Self {
        self.otlp.timeout = Some(timeout);
        self
    }

    /// How long one request may be retried, its attempts and waits included (default 60 s);
    /// past it the window is dropped.
    pub fn otlp_retry_for(mut self, budget: Duration) -> Self {
        self.otlp.retry_for = budget;
        self
    }

    /// The collector windows are sent to, if any.
    pub fn get_otlp_endpoint(&self) -> Option<&str> {
        self.otlp.endpoint.as_deref()
    }

    /// The `service.name` given, if any.
    pub fn get_service_name(&self) -> Option<&str> {
        self.otlp.service_name.as_deref()
    }

    /// Whether windows go to the collector instead of files.
    pub fn get_otlp_only(&self) -> bool {
        self.otlp.only
    }

    /// The bound on windows waiting to be sent.
    pub fn get_otlp_queue(&self) -> u32 {
        self.otlp.queue
    }

    /// The bound on spans per request.
    pub fn get_otlp_max_spans(&self) -> u32 {
        self.otlp.max_spans
    }

    /// One attempt's limit, when given here (else the variables' or 10 s).
    pub fn get_otlp_timeout(&self) -> Option<Duration> {
        self.otlp.timeout
    }

    /// One request's retry budget.
    pub fn get_otlp_retry_for(&self) -> Duration {
        self.otlp.retry_for
    }

    /// Whether profiles are written per thread.
    pub fn get_profile_threads(&self) -> bool {
        self.profile_threads
    }

    /// Whether a profile is kept ([`Config::profile`] or [`Mode::Profile`]).
    pub fn profiles(&self) -> bool {
        self.profile || self.mode == Mode::Profile
    }

    /// The bound on call-tree nodes per thread.
    pub fn get_profile_nodes(&self) -> u32 {
        self.profile_nodes
    }

    /// Whether culling is on.
    pub fn get_cull(&self) -> bool {
        self.cull
    }

    /// The cost budget in percent of the process's CPU time, or `None` when off (see
    /// [`Config::budget`]).
    ///
    /// ```
    /// assert_eq!(fdr_runtime::Config::default().get_budget(), Some(1.0));
    /// ```
    pub fn get_budget(&self) -> Option<f64> {
        self.budget_ppm.map(|p| f64::from(p) / 10_000.0)
    }

    /// The run of erased calls that culls a function.
    pub fn get_cull_after(&self) -> u32 {
        self.cull_after
    }

    /// Whether the recording starts from the culls the last one of the same build learned.
    pub fn get_cull_memory(&self) -> bool {
        self.cull_memory
    }

    /// The triggers set with [`Config::trigger`].
    pub fn get_triggers(&self) -> &[Trigger] {
        &self.triggers
    }

    /// The trigger cooldown.
    pub fn get_trigger_cooldown(&self) -> Duration {
        self.trigger_cooldown
    }

    /// The snapshot cap.
    pub fn get_max_snapshots(&self) -> u32 {
        self.max_snapshots
    }

    /// The snapshot signal, if any.
    pub fn get_signal(&self) -> Option<Signal> {
        self.signal
    }

    /// The age limit of logs, if any.
    pub fn get_max_age(&self) -> Option<Duration> {
        self.max_age
    }

    /// The long-poll limit, if any (see [`Config::long_poll`]).
    pub fn get_long_poll(&self) -> Option<Duration> {
        self.long_poll
    }

    /// Bytes per buffer.
    pub fn get_buffer_size(&self) -> usize {
        self.buffer_size
    }

    /// Buffers in the pool (default 512). Each recording thread holds one at a time and needs a
    /// second to keep a ring: with more threads recording at once than buffers, the threads past
    /// that record nothing (their records are counted as dropped and `fdr info` says so).
    pub fn get_buffer_count(&self) -> usize {
        self.buffer_count
    }

    /// The rewind threshold.
    pub fn get_threshold(&self) -> Duration {
        self.threshold
    }

    /// The mode.
    pub fn get_mode(&self) -> Mode {
        self.mode
    }

    /// The output path, if set.
    pub fn get_out(&self) -> Option<&std::path::Path> {
        self.out.as_deref()
    }

    /// The settings that shape what a log holds, as `FDR_OPTIONS` words: what every log records
    /// of the configuration it ran with (`fdr info` prints it), whether it came from
    /// `FDR_OPTIONS` or from code. Paths and the OpenTelemetry settings (which may hold secrets)
    /// are left out.
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = fdr_runtime::Config::default().trigger("svc::get_quote", Duration::from_millis(20));
    /// assert_eq!(
    ///     c.to_options(),
    ///     "mode=ring buffer_size=16384 buffer_count=512 threshold_us=5 cull=on budget=1 \
    ///      long_poll=100ms trigger=svc::get_quote:20ms trigger_cooldown_ms=10000 max_snapshots=20"
    /// );
    /// ```
    pub fn to_options(&self) -> String {
        let mut w = vec![
            format!(
                "mode={}",
                match (self.mode, self.profile) {
                    (Mode::Ring, true) => "record+profile",
                    (Mode::Ring, false) => "ring",
                    (Mode::Fill, _) => "fill",
                    (Mode::Profile, _) => "profile",
                }
            ),
            format!("buffer_size={}", self.buffer_size),
            format!("buffer_count={}", self.buffer_count),
        ];
        let ns = self.threshold.as_nanos();
        w.push(if ns % 1000 == 0 {
            format!("threshold_us={}", ns / 1000)
        } else {
            format!("threshold_us={}", ns as f64 / 1000.0)
        });
        w.push(format!("cull={}", if self.cull { "on" } else { "off" }));
        w.push(match self.budget_ppm {
            Some(p) => format!("budget={}", f64::from(p) / 10_000.0),
            None => "budget=off".to_string(),
        });
        w.push(match self.long_poll {
            Some(d) => format!("long_poll={}", Limit::After(d)),
            None => "long_poll=off".to_string(),
        });
        for t in &self.triggers {
            w.push(format!("trigger={}:{}", t.pattern, t.limit));
        }
        if !self.triggers.is_empty() || self.long_poll.is_some() {
            w.push(format!(
                "trigger_cooldown_ms={}",
                self.trigger_cooldown.as_millis()
            ));
            w.push(format!("max_snapshots={}", self.max_snapshots));
        }
        if let Some(s) = self.signal {
            w.push(format!("signal={}", s.name()));
        }
        if let Some(a) = self.max_age {
            w.push(format!("max_age_ms={}", a.as_millis()));
        }
        w.join(" ")
    }

    /// Checks the values against the recorder's limits.
    pub fn validate(&self) -> Result<(), Error> {
        if !ranges::BUFFER_SIZE.contains(self.buffer_size as u64) {
            return Err(option_error(
                "buffer_size",
                format!("{} bytes is out of range", self.buffer_size),
            ));
        }
        if !ranges::BUFFER_COUNT.contains(self.buffer_count as u64) {
            return Err(option_error(
                "buffer_count",
                format!(
                    "{} buffers is out of range (give at least one more than the number of \
                     recording threads)",
                    self.buffer_count
                ),
            ));
        }
        for t in &self.triggers {
            if t.limit == Limit::After(Duration::ZERO) {
                return Err(Error::Config {
                    key: "trigger".into(),
                    message: format!(
                        "the limit for `{}` is zero, which every call passes; give a duration \
                         such as 50ms",
                        t.pattern
                    ),
                });
            }
        }
        if self.budget_ppm == Some(0) {
            return Err(option_error(
                "budget",
                "a budget must be a share of CPU time above 0 (such as 1 for 1 %), or off".into(),
            ));
        }
        if !ranges::PROFILE_NODES.contains(u64::from(self.profile_nodes)) {
            return Err(option_error(
                "profile_nodes",
                format!("{} nodes is out of range", self.profile_nodes),
            ));
        }
        if self.max_age.is_some_and(|a| a.is_zero()) {
            return Err(Error::Config {
                key: "max_age".into(),
                message: "an age of 0 keeps nothing; give a duration".into(),
            });
        }
        self.validate_otlp()?;
        if self.buffer_size.checked_mul(self.buffer_count).is_none() {
            return Err(Error::Config {
                key: "buffer_count".into(),
                message: "buffer_size * buffer_count overflows".into(),
            });
        }
        Ok(())
    }
}
