//! The quick overhead table: every row of the benchmark, and the performance targets of the
//! design, with the best and the median round of each row.
//!
//! ```text
//! cargo run --release -p fdr-benches --bin overhead            # the table, whole program, threads
//! cargo run --release -p fdr-benches --bin overhead -- --xray  # and the C anchors beside it
//! ```
//!
//! The rows are measured in interleaved rounds: each round times every row once (one run of
//! about 10 ms, after an untimed one). A row shows its best round and its median round; the
//! targets are checked on the medians (users live with the median), the best shown beside.

mod anchors;
mod threads;
mod whole;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fdr_benches::peers::{fastrace_discard, puffin_frames, tracing_mem};
use fdr_benches::timing;
use fdr_benches::{floor, model, workload};

use anchors::{best, median, Anchors};

const USAGE: &str = "usage: overhead [--xray] [--rounds N] [--whole-rounds N] [--anchors DIR] [--no-whole] [--no-threads]
  --xray            also run the C anchors, XRay FDR and funtrace (a copy of ../shared/anchors/run.sh,
                    needs clang++-19, libclang-rt-19-dev, llvm-19 and g++); alias --anchors-run
  --xray-runs N     runs of run.sh (default 3; each figure is the median)
  --rounds N        rounds of the call table (default 10)
  --whole-rounds N  rounds of the whole-program table (default 7)
  --anchors DIR     where run.sh lives (default: the workspace's ../shared/anchors)
  --no-whole        skip the whole-program table
  --no-threads      skip the many-threads table
  --samples         also print every round's figure of each row";

/// The default pool: 16 KiB x 512 = 8 MiB.
const POOL_BYTES: usize = 16 * 1024 * 512;

/// Calls per run of `run.sh`.
const ANCHOR_CALLS: u64 = 20_000_000;
/// Calls per run of each C program in every round of the table.
const ROUND_ANCHOR_CALLS: u64 = 2_000_000;

/// Row names, used both to print and to look figures up for the target checks. Names in
/// parentheses are yardsticks, not recorders.
mod row {
    pub const FLOOR: &str = "floor: two rdtsc reads";
    pub const RDTSCP: &str = "  (two rdtscp reads)";
    pub const FLOOR_T0: &str = "  (floor on two threads, cpu 0)";
    pub const FLOOR_T1: &str = "  (floor on two threads, cpu 1)";
    pub const PLAIN: &str = "plain call, no instrumentation";
    pub const IDLE: &str = "fdr compiled in, no recorder";
    pub const MODEL_IDLE: &str = "  (model hot path, not recording)";
    pub const MODEL: &str = "  (model hot path: TLS, rdtscp, store)";
    pub const MODEL_RDTSC: &str = "  (model: rdtsc, CPU from rseq)";
    pub const KEPT: &str = "fdr recording, call kept (threshold 0)";
    pub const REWIND: &str = "fdr recording, call erased (threshold 1 s)";
    pub const CULLED: &str = "fdr recording, call culled (always erased)";
    pub const PROFILE: &str = "fdr profile mode, call counted";
    pub const PROFILE_KEPT: &str = "fdr recording + profile, call kept";
    pub const TASK: &str = "fdr async fn: task created, 1 poll, completed";
    pub const TASK_DROPPED: &str = "fdr async fn: task created, 1 poll, cancelled";
    pub const SCOPE: &str = "fdr_scope!, recording (threshold 0)";
    pub const ARGS: &str = "fdr log_args, two arguments";
    pub const T0: &str = "fdr two threads, thread on cpu 0";
    pub const T1: &str = "fdr two threads, thread on cpu 1";
    pub const PINNED: &str = "  (kept, thread pinned to cpu 0)";
    pub const SNAPPED: &str = "fdr kept, snapshots back to back on cpu 1";
    pub const COPIED: &str = "  (kept, 8 MiB memcpy back to back on cpu 1)";
    pub const MODEL_T0: &str = "  (model on two threads, cpu 0)";
    pub const MODEL_T1: &str = "  (model on two threads, cpu 1)";
    pub const TRACING: &str = "tracing #[instrument], in-memory subscriber";
    pub const FASTRACE: &str = "fastrace #[trace], discarding reporter";
    pub const FASTRACE_THREAD: &str = "  (fastrace, recording thread only)";
    pub const PUFFIN: &str = "puffin profile_function!";
    pub const SMALL: &str = "  (kept, 1 KiB buffers)";
    pub const BIG: &str = "  (kept, 1 MiB buffers)";
    /// A ring of funtrace's default size (a megabyte a thread), against the default's 8 MiB.
    pub const RING_1M: &str = "  (kept, 1 MiB ring: 64 x 16 KiB)";
    /// The kept row on a fresh recorder, before its ring has been written once.
    pub const KEPT_FRESH: &str = "  (kept, first pass through a fresh ring)";

    /// In print order.
    pub const ALL: [&str; 33] = [
        FLOOR,
        RDTSCP,
        FLOOR_T0,
        FLOOR_T1,
        PLAIN,
        IDLE,
        MODEL_IDLE,
        MODEL,
        MODEL_RDTSC,
        KEPT,
        KEPT_FRESH,
        REWIND,
        CULLED,
        PROFILE,
        PROFILE_KEPT,
        TASK,
        TASK_DROPPED,
        SCOPE,
        ARGS,
        T0,
        T1,
        MODEL_T0,
        MODEL_T1,
        PINNED,
        SNAPPED,
        COPIED,
        SMALL,
        BIG,
        RING_1M,
        TRACING,
        FASTRACE,
        FASTRACE_THREAD,
        PUFFIN,
    ];

    /// Rows whose "over plain" and "above floor" columns mean nothing.
    pub fn is_clock_only(name: &str) -> bool {
        [FLOOR, RDTSCP, FLOOR_T0, FLOOR_T1, PLAIN].contains(&name)
    }

    /// Rows that do not read the clock: their cost above the floor means nothing.
    pub fn is_idle(name: &str) -> bool {
        [IDLE, MODEL_IDLE].contains(&name)
    }
}

struct Options {
    xray: bool,
    xray_runs: usize,
    rounds: usize,
    whole_rounds: usize,
    anchors: PathBuf,
    whole: bool,
    threads: bool,
    samples: bool,
}

fn positive(args: &mut impl Iterator<Item = String>, flag: &str) -> Result<usize, String> {
    let v = args
        .next()
        .ok_or_else(|| format!("{flag} needs a number, for example 5"))?;
    match v.parse() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{flag} needs a positive number, found `{v}`")),
    }
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        xray: false,
        xray_runs: 3,
        rounds: 10,
        whole_rounds: 7,
        anchors: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/anchors"),
        whole: true,
        threads: true,
        samples: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--xray" | "--anchors-run" | "--peers" => o.xray = true,
            "--xray-runs" => o.xray_runs = positive(&mut args, "--xray-runs")?,
            "--rounds" => o.rounds = positive(&mut args, "--rounds")?,
            "--whole-rounds" => o.whole_rounds = positive(&mut args, "--whole-rounds")?,
            "--anchors" => {
                o.anchors = args
                    .next()
                    .ok_or("--anchors needs a directory, the one holding run.sh")?
                    .into();
            }
            "--no-whole" => o.whole = false,
            "--no-threads" => o.threads = false,
            "--samples" => o.samples = true,
            "-h" | "--help" => return Err(String::new()),
            _ => return Err(format!("unknown argument `{a}`")),
        }
    }
    if let Ok(dir) = std::fs::canonicalize(&o.anchors) {
        o.anchors = dir;
    }
    Ok(o)
}

/// Whose CPU time a sample counts.
#[derive(Clone, Copy)]
enum Clock {
    /// Every thread of the process: a recorder's background work included.
    Process,
    /// The recording thread only.
    Thread,
}

/// Each row's calls per run (fixed after its first round) and its ns per call of every round.
#[derive(Default)]
struct Table {
    calls: HashMap<&'static str, u64>,
    samples: HashMap<&'static str, Vec<f64>>,
}

impl Table {
    fn keep(&mut self, name: &'static str, ns: f64) {
        self.samples.entry(name).or_default().push(ns);
    }

    /// One timed run of `f` for row `name` (process CPU time), right after an untimed run of
    /// the same length, so that the timed run sees the row's steady state.
    fn sample(&mut self, name: &'static str, f: impl FnMut(u64) -> u64) {
        self.sample_on(name, f, Clock::Process);
    }

    fn sample_on(&mut self, name: &'static str, mut f: impl FnMut(u64) -> u64, clock: Clock) {
        let n = *self
            .calls
            .entry(name)
            .or_insert_with(|| timing::calls_per_run(&mut f));
        std::hint::black_box(f(std::hint::black_box(n)));
        let ns = match clock {
            Clock::Process => timing::once(&mut f, n),
            Clock::Thread => timing::once_thread(&mut f, n),
        };
        self.keep(name, ns);
    }

    /// One run of `f` on two threads pinned to cpus 0 and 1, kept as rows `a` and `b` (each
    /// thread's CPU time); returns the voluntary context switches seen during the run.
    fn sample_two(
        &mut self,
        a: &'static str,
        b: &'static str,
        calls_like: &'static str,
        f: fn(u64) -> u64,
    ) -> Result<u64, String> {
        let n = self.calls.get(calls_like).copied().unwrap_or(100_000);
        let [x, y] = timing::two_threads(f, n, 1)
            .map_err(|e| format!("cannot pin the two threads to cpus 0 and 1: {e}"))?;
        self.keep(a, x.cpu_ns);
        self.keep(b, y.cpu_ns);
        Ok(x.blocked + y.blocked)
    }

    fn get(&self, name: &str) -> &[f64] {
        self.samples.get(name).map_or(&[], Vec::as_slice)
    }

    /// The median round: what the targets are checked on.
    fn med(&self, name: &str) -> f64 {
        median(self.get(name))
    }

    fn best(&self, name: &str) -> f64 {
        best(self.get(name))
    }
}

/// Counts what the recorder writes, so the log itself never touches the disk.
#[derive(Default)]
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f` while a recorder with `config` records, then finishes it; returns what `f`
/// returned and the size of the finished log.
fn recording<T>(
    config: fdr::Config,
    f: impl FnOnce(&fdr::Recorder) -> T,
) -> Result<(T, u64), String> {
    let rec = fdr::start(config).map_err(|e| format!("starting the recorder failed: {e}"))?;
    let out = f(&rec);
    let mut log = Counter::default();
    rec.finish_to(&mut log)
        .map_err(|e| format!("finishing the recorder failed: {e}"))?;
    Ok((out, log.0))
}

/// Writes the default ring (and any smaller one) once over, untimed: two 8-byte records a
/// kept call, a quarter more calls than the ring holds.
fn fill_ring() {
    let calls = (POOL_BYTES / 16) as u64 * 5 / 4;
    std::hint::black_box(workload::run_fdr(std::hint::black_box(calls)));
}

fn kept_config() -> fdr::Config {
    fdr::Config::default().threshold(Duration::ZERO)
}

fn main() -> ExitCode {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}");
            }
            eprintln!("{USAGE}");
            return if e.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            };
        }
    };
    match run(&opts) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// What the rounds learned besides timings, for the sanity lines.
#[derive(Default)]
struct Logs {
    kept: u64,
    rewind: u64,
    /// Voluntary context switches during the two-thread runs of the floor and of fdr.
    blocked_floor: u64,
    blocked_fdr: u64,
    /// Snapshots taken during the timed runs of the snapshot row, and the recording thread's
    /// voluntary context switches during them.
    snapshots: u64,
    blocked_snapped: u64,
}

/// What a thread pinned to cpu 1 does back to back while the recording thread is timed.
type Background<'a> = &'a (dyn Fn() -> Result<(), String> + Sync);

/// One timed run of `n` kept calls on a thread pinned to cpu 0 without, then with, `work` done
/// back to back by a thread pinned to cpu 1: (ns per call without, with, `work`s finished
/// during the timed run, voluntary context switches of the recording thread during it).
fn interference(n: u64, work: Background<'_>) -> Result<(f64, f64, u64, u64), String> {
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let failed: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    let result = std::thread::scope(|s| {
        let recorder = s.spawn(|| -> Result<(f64, f64, u64, u64), String> {
            timing::pin_to_cpu(0).map_err(|e| format!("cannot pin to cpu 0: {e}"))?;
            let mut f = workload::run_fdr;
            std::hint::black_box(f(n));
            let alone = timing::once_thread(&mut f, n);
            let background = s.spawn(|| {
                if let Err(e) = timing::pin_to_cpu(1) {
                    *failed.lock().unwrap() = Some(format!("cannot pin to cpu 1: {e}"));
                }
                while !stop.load(Ordering::Relaxed) {
                    if let Err(e) = work() {
                        *failed.lock().unwrap() = Some(e);
                        return;
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
            // Wait until the background work has run once, so it is under way when timing
            // starts.
            while done.load(Ordering::Relaxed) == 0 && failed.lock().unwrap().is_none() {
                std::hint::black_box(f(1000));
            }
            let before = done.load(Ordering::Relaxed);
            let switches = timing::voluntary_switches();
            let with = timing::once_thread(&mut f, n);
            let switches = timing::voluntary_switches() - switches;
            let during = done.load(Ordering::Relaxed) - before;
            stop.store(true, Ordering::Relaxed);
            background.join().expect("the background thread panicked");
            Ok((alone, with, during, switches))
        });
        recorder.join().expect("the recording thread panicked")
    });
    if let Some(e) = failed.into_inner().unwrap() {
        return Err(e);
    }
    result
}

/// One round: every row once.
fn round(t: &mut Table, logs: &mut Logs) -> Result<(), String> {
    t.sample(row::FLOOR, floor::rdtsc_pair);
    t.sample(row::RDTSCP, floor::rdtscp_pair);
    logs.blocked_floor +=
        t.sample_two(row::FLOOR_T0, row::FLOOR_T1, row::FLOOR, floor::rdtsc_pair)?;
    t.sample(row::PLAIN, workload::run_plain);
    // No recorder runs between rounds, so this is fdr compiled in and idle.
    t.sample(row::IDLE, workload::run_fdr);
    t.sample(row::MODEL_IDLE, model::run_rdtscp);
    model::set_recording(true);
    t.sample(row::MODEL, model::run_rdtscp);
    t.sample(row::MODEL_RDTSC, model::run_rdtsc);
    logs.blocked_floor += t.sample_two(
        row::MODEL_T0,
        row::MODEL_T1,
        row::MODEL_RDTSC,
        model::run_rdtsc,
    )?;
    model::set_recording(false);

    let (r, bytes) = recording(kept_config(), |rec| -> Result<u64, String> {
        // A fresh recorder's first pass writes pages for the first time (the kernel maps and
        // zeroes them, the writer reserves them in the crash box ahead of the thread): a cost
        // per page, once, which the process's CPU clock charges to the calls that come first.
        // It has its own row; the others are timed on a ring written once, as in any
        // recording that has run for a while (and as funtrace is: 2 million calls through its
        // megabyte).
        t.sample(row::KEPT_FRESH, workload::run_fdr);
        fill_ring();
        t.sample(row::KEPT, workload::run_fdr);
        t.sample(row::SCOPE, workload::run_scope);
        t.sample(row::ARGS, workload::run_args);
        let blocked = t.sample_two(row::T0, row::T1, row::KEPT, workload::run_fdr)?;
        let n = t.calls.get(row::KEPT).copied().unwrap_or(100_000);
        let snapshot = || {
            rec.snapshot(&mut Counter::default())
                .map_err(|e| format!("a snapshot failed: {e}"))
        };
        let (alone, with, taken, switches) = interference(n, &snapshot)?;
        t.keep(row::PINNED, alone);
        t.keep(row::SNAPPED, with);
        logs.snapshots += taken;
        logs.blocked_snapped += switches;
        // The same with a plain copy of as many bytes in place of the snapshot: what any thread
        // streaming through memory on the other cpu costs the recording thread here.
        let (src, dst) = (
            vec![1u8; POOL_BYTES],
            std::sync::Mutex::new(vec![0u8; POOL_BYTES]),
        );
        let copy = || {
            let mut dst = dst.lock().unwrap();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&mut *dst);
            Ok(())
        };
        let (_, with, _, _) = interference(n, &copy)?;
        t.keep(row::COPIED, with);
        Ok(blocked)
    })?;
    logs.blocked_fdr += r?;
    logs.kept = bytes;
    // The rewind itself: with culling on, the leaf would be culled after 10,000 calls.
    let rewind = fdr::Config::default()
        .threshold(Duration::from_secs(1))
        .cull(false);
    let ((), bytes) = recording(rewind, |_| t.sample(row::REWIND, workload::run_fdr))?;
    logs.rewind = bytes;
    let culled = fdr::Config::default().threshold(Duration::from_secs(1));
    recording(culled, |_| t.sample(row::CULLED, workload::run_fdr))?;
    let profile = fdr::Config::default().mode(fdr::Mode::Profile);
    recording(profile, |_| t.sample(row::PROFILE, workload::run_fdr))?;
    recording(kept_config().profile(true), |_| {
        fill_ring();
        t.sample(row::PROFILE_KEPT, workload::run_fdr)
    })?;
    recording(kept_config(), |_| {
        fill_ring();
        t.sample(row::TASK, workload::run_task);
        t.sample(row::TASK_DROPPED, workload::run_task_dropped);
    })?;
    for (name, size) in [(row::SMALL, 1024), (row::BIG, 1 << 20)] {
        let cfg = kept_config()
            .buffer_size(size)
            .buffer_count(POOL_BYTES / size);
        recording(cfg, |_| {
            fill_ring();
            t.sample(name, workload::run_fdr)
        })?;
    }
    recording(kept_config().buffer_count(64), |_| {
        fill_ring();
        t.sample(row::RING_1M, workload::run_fdr)
    })?;

    t.sample(row::TRACING, tracing_mem::run);
    t.sample(row::FASTRACE, fastrace_discard::run_and_flush);
    t.sample_on(row::FASTRACE_THREAD, fastrace_discard::run, Clock::Thread);
    fastrace_discard::flush();
    t.sample(row::PUFFIN, puffin_frames::run);
    Ok(())
}

/// The 1-, 5- and 15-minute load averages, if the system says.
fn load_average() -> Option<String> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

/// CPU time every process of the machine has used, and time the hypervisor gave this
/// machine's cpus to others (steal), in nanoseconds (`/proc/stat`).
fn machine_busy_ns() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal: the processes' time is all but idle,
    // iowait and steal.
    let busy: u64 = fields
        .iter()
        .take(7)
        .enumerate()
        .filter(|&(i, _)| i != 3 && i != 4)
        .map(|(_, v)| v)
        .sum();
    let steal = fields.get(7).copied().unwrap_or(0);
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ns = 1_000_000_000 / u64::try_from(hz).ok().filter(|&hz| hz > 0)?;
    Some((busy * ns, steal * ns))
}

/// Measures how busy the rest of the machine was while a section ran: the CPU time of all
/// processes, minus this one's, over the wall time. Another engineer's build or fuzzer shows
/// here, where the load average lags by a minute.
struct Others {
    busy: Option<(u64, u64)>,
    own: u64,
    wall: Instant,
}

/// CPU time of this process and of its children that have been waited for (run.sh's).
fn own_cpu_ns() -> u64 {
    // SAFETY: all zeroes is a valid `rusage`; getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_CHILDREN is a valid target; `ru` is valid for writes.
    let children = if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } == 0 {
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        ns(ru.ru_utime) + ns(ru.ru_stime)
    } else {
        0
    };
    timing::process_cpu_ns() + children
}

impl Others {
    fn start() -> Others {
        Others {
            busy: machine_busy_ns(),
            own: own_cpu_ns(),
            wall: Instant::now(),
        }
    }

    /// "0.02 of 2 cpus, 0.00 stolen": the other processes' average use, and the hypervisor's.
    fn report(&self) -> String {
        let (Some(before), Some(after)) = (self.busy, machine_busy_ns()) else {
            return "unknown".to_string();
        };
        let own = own_cpu_ns() - self.own;
        let others = after.0.saturating_sub(before.0).saturating_sub(own) as f64;
        let stolen = after.1.saturating_sub(before.1) as f64;
        let wall = self.wall.elapsed().as_nanos().max(1) as f64;
        format!(
            "{:.2} of {} cpus, and {:.2} cpus stolen by the hypervisor",
            others / wall,
            timing::available_cpus(),
            stolen / wall
        )
    }
}

/// Prints everything; `Ok(false)` when a target is not met.
fn run(opts: &Options) -> Result<bool, String> {
    if !cfg!(target_arch = "x86_64") {
        eprintln!("note: not x86_64: the floor rows read a monotonic clock instead of the TSC");
    }
    let load_before = load_average();
    // run.sh first: it builds the C programs, which then run in every round.
    let others_anchors = Others::start();
    let (bins, run_sh) = if opts.xray {
        eprintln!(
            "running {} (a copy) {} times ...",
            opts.anchors.join("run.sh").display(),
            opts.xray_runs
        );
        match anchors::run(&opts.anchors, ANCHOR_CALLS, opts.xray_runs) {
            Ok((bins, run_sh)) => (Some(bins), Some(run_sh)),
            Err(why) => {
                println!("skipped: the C anchors (XRay, funtrace): {why}");
                (None, None)
            }
        }
    } else {
        (None, None)
    };
    let others_anchors = others_anchors.report();

    let others = Others::start();
    let started = Instant::now();
    tracing_mem::setup();
    fastrace_discard::setup();
    puffin_frames::setup();
    let mut t = Table::default();
    let mut logs = Logs::default();
    let mut anchors = bins.as_ref().map(|_| Anchors::default());
    eprint!("measuring {} rounds ", opts.rounds);
    for _ in 0..opts.rounds {
        round(&mut t, &mut logs)?;
        if let (Some(bins), Some(a)) = (&bins, &mut anchors) {
            bins.sample(ROUND_ANCHOR_CALLS, a)?;
        }
        eprint!(".");
    }
    drop(bins);
    fastrace_discard::flush();
    let snap = snapshot_cost()?;
    eprintln!(" done in {:.1} s", started.elapsed().as_secs_f64());
    let others_table = others.report();

    println!(
        "load average before: {}; after the call table: {}; other processes' CPU use during \
         the call table: {others_table}",
        load_before.as_deref().unwrap_or("unknown"),
        load_average().as_deref().unwrap_or("unknown")
    );
    print_table(&t, opts.rounds, anchors.as_ref());
    if opts.samples {
        println!();
        println!("every round, in order (ns per call):");
        let fmt = |v: &[f64]| -> String {
            v.iter()
                .map(|x| format!("{x:6.2}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        for name in row::ALL {
            println!("{name:<46} {}", fmt(t.get(name)));
        }
        if let Some(a) = &anchors {
            println!("{:<46} {}", "(C) one rdtsc read", fmt(&a.rdtsc));
            for (name, v) in anchor_rows(a) {
                println!("{name:<46} {}", fmt(v));
            }
        }
    }
    println!();
    println!(
        "logs at finish: kept calls {} bytes, erased calls {} bytes (the erased run keeps only \
         its block preambles)",
        logs.kept, logs.rewind
    );
    println!(
        "peers recorded: tracing {} enter/exit records, fastrace {} spans reported, puffin {} \
         scopes in finished frames",
        tracing_mem::recorded(),
        fastrace_discard::spans_reported(),
        puffin_frames::scopes_recorded()
    );
    let gbs = |secs: f64| snap.bytes as f64 / secs / 1e9;
    println!(
        "snapshot of a full {} MiB ring to a file: {:.2} ms median, {:.2} ms best of {} ({} \
         bytes): {:.2} GB/s median, {:.2} GB/s best",
        POOL_BYTES >> 20,
        median(&snap.secs) * 1e3,
        best(&snap.secs) * 1e3,
        snap.secs.len(),
        snap.bytes,
        gbs(median(&snap.secs)),
        gbs(best(&snap.secs)),
    );
    println!(
        "  (the file system's ceiling: the same bytes written from memory in one write to a new \
         file renamed into place: {:.2} GB/s median, {:.2} GB/s best)",
        gbs(median(&snap.plain_secs)),
        gbs(best(&snap.plain_secs)),
    );
    println!(
        "snapshots back to back while a thread records: {} snapshots during the {} timed runs, \
         {} voluntary context switches of the recording thread",
        logs.snapshots, opts.rounds, logs.blocked_snapped
    );
    let (small, big) = (t.med(row::SMALL), t.med(row::BIG));
    let calls_per_small = (1024 - BLOCK_PREAMBLE) / 16;
    println!(
        "buffer switch: {small:.2} ns/call with 1 KiB buffers ({calls_per_small} calls each) vs \
         {big:.2} with 1 MiB buffers (medians): {:.0} ns per switch",
        (small - big) * calls_per_small as f64
    );
    println!(
        "two-thread runs: {} voluntary context switches (threads that waited) in fdr's, {} in \
         the floor's and the model's",
        logs.blocked_fdr, logs.blocked_floor
    );
    if let Some(a) = &run_sh {
        println!();
        println!(
            "run.sh {ANCHOR_CALLS} (a copy of {}), {} runs before the rounds, as printed (ns per \
             call, wall clock); the table's (C) rows are its programs run again in every round, \
             {ROUND_ANCHOR_CALLS} calls each:",
            opts.anchors.join("run.sh").display(),
            a.outputs.len()
        );
        for (i, out) in a.outputs.iter().enumerate() {
            println!("  run {}:", i + 1);
            for line in out.lines() {
                println!("    {line}");
            }
        }
        println!("(other processes' CPU use during run.sh: {others_anchors})");
    }

    let whole = if opts.whole {
        let others = Others::start();
        let w = whole::measure(opts.whole_rounds)?;
        println!(
            "(other processes' CPU use during the whole-program table: {})",
            others.report()
        );
        Some(w)
    } else {
        None
    };
    if opts.threads {
        let others = Others::start();
        threads::measure()?;
        println!(
            "(other processes' CPU use during the many-threads table: {})",
            others.report()
        );
    }
    println!();
    println!(
        "load average at the end: {}",
        load_average().as_deref().unwrap_or("unknown")
    );
    println!();
    Ok(print_targets(
        &t,
        anchors.as_ref(),
        &snap,
        whole.as_ref(),
        logs.snapshots,
    ))
}

/// Bytes at the start of every buffer before its first function record: BufferExtents,
/// NewBuffer, WalltimeMarker, Pid and NewCPUId, 16 bytes each.
const BLOCK_PREAMBLE: usize = 5 * 16;

/// A row of the C anchors: its figures (one per run of run.sh) and its floor (two rdtsc).
fn anchor_rows(a: &Anchors) -> Vec<(&'static str, &[f64])> {
    vec![
        ("(C) leaf, clang -O2", &a.c_plain),
        ("(C) leaf, XRay sleds unpatched", &a.xray_unpatched),
        ("(C) leaf, g++ -O2", &a.gxx_plain),
        ("(C) funtrace -pg", &a.funtrace),
        ("(C) funtrace -pg, 8 MiB buffer", &a.funtrace_8m),
        ("(C) XRay FDR, threshold 0", &a.xray_fdr0),
        ("(C) XRay FDR, threshold 5 us", &a.xray_fdr5),
    ]
}

fn print_table(t: &Table, rounds: usize, anchors: Option<&Anchors>) {
    let floor = t.med(row::FLOOR);
    let plain = t.med(row::PLAIN);
    println!();
    println!(
        "{:<46} {:>8} {:>8} {:>8} {:>11} {:>12}",
        format!("row ({rounds} rounds; ns per call)"),
        "median",
        "best",
        "x floor",
        "over plain",
        "above floor"
    );
    for name in row::ALL {
        let (m, b) = (t.med(name), t.best(name));
        let over = if row::is_clock_only(name) {
            String::new()
        } else {
            format!("{:+.2} ns", m - plain)
        };
        let above = if row::is_clock_only(name) || row::is_idle(name) {
            String::new()
        } else {
            format!("{:+.2} ns", m - floor)
        };
        println!(
            "{name:<46} {m:>8.2} {b:>8.2} {:>8.2} {over:>11} {above:>12}",
            m / floor
        );
    }
    if let Some(a) = anchors {
        // The C programs time with the wall clock in their own process: their floor is run.sh's
        // own two rdtsc reads, their plain call the C leaf's.
        let floor_c = 2.0 * median(&a.rdtsc);
        println!(
            "{:<46} {:>8.2} {:>8.2} {:>8.2}",
            "(C) floor: two rdtsc reads",
            floor_c,
            2.0 * best(&a.rdtsc),
            1.0
        );
        let plain_c = median(&a.c_plain);
        for (name, v) in anchor_rows(a) {
            let m = median(v);
            let (over, above) = if name.contains("leaf") {
                (String::new(), String::new())
            } else {
                (
                    format!("{:+.2} ns", m - plain_c),
                    format!("{:+.2} ns", m - floor_c),
                )
            };
            println!(
                "{name:<46} {m:>8.2} {:>8.2} {:>8.2} {over:>11} {above:>12}",
                best(v),
                m / floor_c
            );
        }
    }
    println!(
        "(median and best over rounds; \"x floor\" and the two right columns use the medians; \
         \"above floor\" is the row minus two bare rdtsc reads, the least any recorder of entry \
         and exit times pays; the (C) rows are run.sh's programs, each run once per round in its \
         own process and timed with the wall clock, against their own floor and C leaf)"
    );
}

fn print_targets(
    t: &Table,
    anchors: Option<&Anchors>,
    snap: &Snapshot,
    whole: Option<&whole::Whole>,
    snapshots_during: u64,
) -> bool {
    let floor = t.med(row::FLOOR);
    let plain = t.med(row::PLAIN);
    let kept = t.med(row::KEPT);
    let rewind = t.med(row::REWIND);
    let idle = t.med(row::IDLE);
    let args = t.med(row::ARGS);
    let (kept_b, rewind_b, idle_b, args_b, plain_b) = (
        t.best(row::KEPT),
        t.best(row::REWIND),
        t.best(row::IDLE),
        t.best(row::ARGS),
        t.best(row::PLAIN),
    );
    let above = kept - floor;
    let (peer, peer_above) = [row::TRACING, row::FASTRACE, row::PUFFIN]
        .into_iter()
        .map(|r| (r, t.med(r) - floor))
        .fold(
            ("none", f64::INFINITY),
            |a, b| if b.1 < a.1 { b } else { a },
        );
    let threads = [t.med(row::T0), t.med(row::T1)];

    let mut all = true;
    let mut check = |met: bool, what: String| {
        all &= met;
        println!("[{}] {what}", if met { "met    " } else { "NOT MET" });
    };
    println!(
        "targets (the design contract ../shared/DESIGN.md, performance table), checked on the \
         medians, best rounds in brackets:"
    );
    match anchors {
        Some(a) => {
            let funtrace = median(&a.funtrace);
            let ratios: Vec<f64> = t
                .get(row::KEPT)
                .iter()
                .zip(&a.funtrace)
                .map(|(k, f)| k / f)
                .collect();
            check(
                kept <= funtrace,
                format!(
                    "a kept call costs no more than funtrace -pg in the same run: {kept:.2} vs \
                     {funtrace:.2} ns [{kept_b:.2} vs {:.2}] (above each one's own two-rdtsc \
                     floor: {above:+.2} vs {:+.2} ns; kept / funtrace round by round: median \
                     {:.3}, best {:.3})",
                    best(&a.funtrace),
                    funtrace - 2.0 * median(&a.rdtsc),
                    median(&ratios),
                    best(&ratios)
                ),
            );
        }
        None => println!("[skipped] a kept call costs no more than funtrace: run with --xray"),
    }
    check(
        kept <= 1.25 * floor,
        format!(
            "a kept call costs at most 1.25 x two bare rdtsc reads: {kept:.2} ns = {:.2} x \
             {floor:.2} [{:.2} x]",
            kept / floor,
            kept_b / t.best(row::FLOOR)
        ),
    );
    check(
        rewind <= 1.05 * kept,
        format!(
            "a call erased by rewind costs at most 1.05 x a kept one: {rewind:.2} vs {kept:.2} \
             ns = {:.3} x [{:.3} x]",
            rewind / kept,
            rewind_b / kept_b
        ),
    );
    check(
        idle <= plain + 0.5,
        format!(
            "compiled in without a recorder is at most 0.5 ns over the plain call: {:+.2} ns \
             [{:+.2}]",
            idle - plain,
            idle_b - plain_b
        ),
    );
    check(
        args <= kept + 4.0,
        format!(
            "logging two arguments costs at most a kept call + 2 ns per argument: {args:.2} vs \
             {kept:.2} + 4 ns ({:+.2} ns) [{:+.2}]",
            args - kept,
            args_b - kept_b
        ),
    );
    // A task row is one poll (a kept call) and three task events: the creation, the poll
    // event that ties the kept poll to its task, the completion (or the drop).
    let (task, task_b) = (t.med(row::TASK), t.best(row::TASK));
    let (dropped, dropped_b) = (t.med(row::TASK_DROPPED), t.best(row::TASK_DROPPED));
    let event = (task.max(dropped) - kept) / 3.0;
    let event_b = (task_b.max(dropped_b) - kept_b) / 3.0;
    check(
        event <= kept,
        format!(
            "creating, completing or dropping a task, or tying a kept poll to it, costs at most a \
             kept call each: {event:.2} vs {kept:.2} ns [{event_b:.2} vs {kept_b:.2}] (a task \
             row less its poll, over three)"
        ),
    );
    match anchors {
        Some(a) => {
            let (x0, x5) = (median(&a.xray_fdr0), median(&a.xray_fdr5));
            check(
                x0 >= 4.0 * kept,
                format!(
                    "at least 4 x faster than XRay FDR (threshold 0): {:.2} x ({x0:.2} vs \
                     {kept:.2} ns) [{:.2} x]",
                    x0 / kept,
                    best(&a.xray_fdr0) / kept_b
                ),
            );
            println!(
                "          (erased calls against XRay FDR with a 5 us threshold: {:.2} x, \
                 {x5:.2} vs {rewind:.2} ns)",
                x5 / rewind
            );
        }
        None => println!("[skipped] at least 4 x faster than XRay FDR: run with --xray"),
    }
    check(
        above <= 0.5 * peer_above,
        format!(
            "cost above the two-rdtsc floor at most half the cheapest peer's ({}): {above:+.2} \
             vs {peer_above:+.2} ns",
            peer.split_whitespace().next().unwrap_or("")
        ),
    );
    println!(
        "          (fastrace's recording thread alone, its collector's work not counted: {:+.2} \
         ns above the floor)",
        t.med(row::FASTRACE_THREAD) - floor
    );
    check(
        threads.iter().all(|&ns| kept / ns >= 0.9),
        format!(
            "two threads on two cores each run at least 90% of the single-thread rate: {:.0}% and \
             {:.0}% [{:.0}% and {:.0}%] (the floor on two threads: {:.0}% and {:.0}%; the model \
             hot path: {:.0}% and {:.0}%)",
            100.0 * kept / threads[0],
            100.0 * kept / threads[1],
            100.0 * kept_b / t.best(row::T0),
            100.0 * kept_b / t.best(row::T1),
            100.0 * floor / t.med(row::FLOOR_T0),
            100.0 * floor / t.med(row::FLOOR_T1),
            100.0 * t.med(row::MODEL_RDTSC) / t.med(row::MODEL_T0),
            100.0 * t.med(row::MODEL_RDTSC) / t.med(row::MODEL_T1)
        ),
    );
    let gbs = snap.bytes as f64 / median(&snap.secs) / 1e9;
    check(
        gbs >= 2.0,
        format!(
            "a snapshot of a full 8 MiB ring to a file copies at least 2 GB/s: {gbs:.2} GB/s \
             [{:.2}] (a plain write of the same bytes to a new file: {:.2} GB/s [{:.2}])",
            snap.bytes as f64 / best(&snap.secs) / 1e9,
            snap.bytes as f64 / median(&snap.plain_secs) / 1e9,
            snap.bytes as f64 / best(&snap.plain_secs) / 1e9,
        ),
    );
    let snapped = t.med(row::SNAPPED);
    check(
        snapped <= 1.10 * kept && snapshots_during > 0,
        format!(
            "a thread recording while snapshots run back to back slows by at most 10%: \
             {snapped:.2} vs {kept:.2} ns ({:+.0}%) [{:.2} vs {kept_b:.2}: {:+.0}%] (against the \
             same pinned thread without snapshots, {:.2} ns: {:+.0}%; with a plain 8 MiB copy \
             back to back instead of snapshots: {:+.0}%)",
            100.0 * (snapped / kept - 1.0),
            t.best(row::SNAPPED),
            100.0 * (t.best(row::SNAPPED) / kept_b - 1.0),
            t.med(row::PINNED),
            100.0 * (snapped / t.med(row::PINNED) - 1.0),
            100.0 * (t.med(row::COPIED) / kept - 1.0)
        ),
    );
    match whole {
        Some(w) => check(
            w.fdr_default_paired <= 3.0,
            format!(
                "a program with every function annotated runs at most 3 x slower than without \
                 fdr at the default threshold: {:.2} x round by round ({:.2} x of the medians)",
                w.fdr_default_paired, w.fdr_default_slowdown
            ),
        ),
        None => println!("[skipped] whole program at most 3 x slower: run without --no-whole"),
    }
    all
}

struct Snapshot {
    /// Seconds of each snapshot.
    secs: Vec<f64>,
    bytes: u64,
    /// Seconds of each plain write of as many bytes from memory to a temporary file renamed into
    /// place, as a snapshot writes: the file system's ceiling for the snapshot.
    plain_secs: Vec<f64>,
}

/// Fills the default 8 MiB ring with kept calls, then times writing it to a file.
///
/// Each snapshot goes to a new file, as trigger snapshots do (`-{n}` names), and the previous
/// one is removed outside the timed part: on ext4, renaming over an existing file starts the
/// new file's writeback inside `rename` (`auto_da_alloc`), about 5 ms for 8 MiB on this
/// machine, which is the file system's price for replacing a file, not the snapshot's.
fn snapshot_cost() -> Result<Snapshot, String> {
    let dir = std::env::temp_dir();
    let name =
        |what: &str, i: usize| dir.join(format!("fdr-benches-{}-{i}.{what}", std::process::id()));
    let (r, _) = recording(kept_config(), |rec| -> Result<Snapshot, String> {
        // Two passes of 16-byte calls over the pool: every buffer is full and has been recycled.
        std::hint::black_box(workload::run_fdr((POOL_BYTES / 8) as u64));
        let mut secs = Vec::new();
        let mut plain_secs = Vec::new();
        let mut bytes = Vec::new();
        for i in 0..9 {
            let path = name("fdr", i);
            let t = Instant::now();
            rec.write_snapshot(&path)
                .map_err(|e| format!("snapshot to {} failed: {e}", path.display()))?;
            secs.push(t.elapsed().as_secs_f64());
            if bytes.is_empty() {
                bytes = std::fs::read(&path).map_err(|e| format!("reading the snapshot: {e}"))?;
            }
            let _ = std::fs::remove_file(&path);
            let plain = name("plain", i);
            let t = Instant::now();
            write_renamed(&plain, &bytes)
                .map_err(|e| format!("writing {} failed: {e}", plain.display()))?;
            plain_secs.push(t.elapsed().as_secs_f64());
            let _ = std::fs::remove_file(&plain);
        }
        Ok(Snapshot {
            secs,
            bytes: bytes.len() as u64,
            plain_secs,
        })
    })?;
    r
}

/// `bytes` written to a new temporary file beside `path` in one `write`, renamed to `path`.
fn write_renamed(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    drop(f);
    std::fs::rename(&tmp, path)
}
