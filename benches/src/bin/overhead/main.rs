//! The quick overhead table: every row of the benchmark, and the performance targets of the
//! design, in a few seconds.
//!
//! ```text
//! cargo run --release -p fdr-benches --bin overhead            # the table
//! cargo run --release -p fdr-benches --bin overhead -- --xray  # and the XRay anchor beside it
//! ```
//!
//! The rows are measured in interleaved rounds: each round times every row once (one run of
//! about 10 ms, after an untimed one), and a row's figure is its best round. A burst of load
//! from another process then spoils one sample of a few rows, not every sample of one row.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use fdr_benches::peers::{fastrace_discard, puffin_frames, tracing_mem};
use fdr_benches::timing;
use fdr_benches::{floor, model, workload};

const USAGE: &str = "usage: overhead [--xray] [--rounds N] [--anchors DIR]
  --xray          also run the XRay FDR anchor (shared/anchors/run.sh, needs clang++-19)
  --rounds N      rounds of the whole table; each row keeps its best round (default 10)
  --anchors DIR   where run.sh lives (default: the workspace's ../shared/anchors)";

/// Relative difference below which two figures of one run are not told apart.
const NOISE: f64 = 0.02;

/// The default pool: 64 KiB x 128 = 8 MiB.
const POOL_BYTES: usize = 64 * 1024 * 128;

/// Row names, used both to print and to look figures up for the target checks. Names in
/// parentheses are yardsticks, not recorders.
mod row {
    pub const FLOOR: &str = "floor: two rdtscp reads";
    pub const RDTSC: &str = "  (two rdtsc reads)";
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
    pub const SCOPE: &str = "fdr_scope!, recording (threshold 0)";
    pub const ARGS: &str = "fdr log_args, two arguments";
    pub const T0: &str = "fdr two threads, thread on cpu 0";
    pub const T1: &str = "fdr two threads, thread on cpu 1";
    pub const TRACING: &str = "tracing #[instrument], in-memory subscriber";
    pub const FASTRACE: &str = "fastrace #[trace], discarding reporter";
    pub const FASTRACE_THREAD: &str = "  (fastrace, recording thread only)";
    pub const PUFFIN: &str = "puffin profile_function!";
    pub const SMALL: &str = "  (kept, 1 KiB buffers)";
    pub const BIG: &str = "  (kept, 1 MiB buffers)";

    /// In print order.
    pub const ALL: [&str; 22] = [
        FLOOR,
        RDTSC,
        FLOOR_T0,
        FLOOR_T1,
        PLAIN,
        IDLE,
        MODEL_IDLE,
        MODEL,
        MODEL_RDTSC,
        KEPT,
        REWIND,
        CULLED,
        SCOPE,
        ARGS,
        T0,
        T1,
        SMALL,
        BIG,
        TRACING,
        FASTRACE,
        FASTRACE_THREAD,
        PUFFIN,
    ];

    /// Rows whose "over plain" column means nothing.
    pub fn is_clock_only(name: &str) -> bool {
        [FLOOR, RDTSC, FLOOR_T0, FLOOR_T1, PLAIN].contains(&name)
    }
}

struct Options {
    xray: bool,
    rounds: usize,
    anchors: PathBuf,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        xray: false,
        rounds: 10,
        anchors: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/anchors"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--xray" => o.xray = true,
            "--rounds" => {
                let v = args
                    .next()
                    .ok_or("--rounds needs a number, for example 12")?;
                o.rounds = match v.parse() {
                    Ok(n) if n > 0 => n,
                    _ => return Err(format!("--rounds needs a positive number, found `{v}`")),
                };
            }
            "--anchors" => {
                o.anchors = args
                    .next()
                    .ok_or("--anchors needs a directory, the one holding run.sh")?
                    .into();
            }
            "-h" | "--help" => return Err(String::new()),
            _ => return Err(format!("unknown argument `{a}`")),
        }
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

/// Each row's calls per run (fixed after its first round) and best ns per call so far.
#[derive(Default)]
struct Table {
    calls: HashMap<&'static str, u64>,
    best: HashMap<&'static str, f64>,
}

impl Table {
    fn keep(&mut self, name: &'static str, ns: f64) {
        let b = self.best.entry(name).or_insert(f64::INFINITY);
        *b = b.min(ns);
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

    fn get(&self, name: &str) -> f64 {
        self.best.get(name).copied().unwrap_or(f64::NAN)
    }
}

/// Counts what the recorder writes at finish, so the log itself never touches the disk.
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
}

/// One round: every row once.
fn round(t: &mut Table, logs: &mut Logs) -> Result<(), String> {
    t.sample(row::FLOOR, floor::rdtscp_pair);
    t.sample(row::RDTSC, floor::rdtsc_pair);
    logs.blocked_floor +=
        t.sample_two(row::FLOOR_T0, row::FLOOR_T1, row::FLOOR, floor::rdtscp_pair)?;
    t.sample(row::PLAIN, workload::run_plain);
    // No recorder runs between rounds, so this is fdr compiled in and idle.
    t.sample(row::IDLE, workload::run_fdr);
    t.sample(row::MODEL_IDLE, model::run_rdtscp);
    model::set_recording(true);
    t.sample(row::MODEL, model::run_rdtscp);
    t.sample(row::MODEL_RDTSC, model::run_rdtsc);
    model::set_recording(false);

    let (r, bytes) = recording(kept_config(), |_| -> Result<u64, String> {
        t.sample(row::KEPT, workload::run_fdr);
        t.sample(row::SCOPE, workload::run_scope);
        t.sample(row::ARGS, workload::run_args);
        t.sample_two(row::T0, row::T1, row::KEPT, workload::run_fdr)
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
    for (name, size) in [(row::SMALL, 1024), (row::BIG, 1 << 20)] {
        let cfg = kept_config()
            .buffer_size(size)
            .buffer_count(POOL_BYTES / size);
        recording(cfg, |_| t.sample(name, workload::run_fdr))?;
    }

    t.sample(row::TRACING, tracing_mem::run);
    t.sample(row::FASTRACE, fastrace_discard::run_and_flush);
    t.sample_on(row::FASTRACE_THREAD, fastrace_discard::run, Clock::Thread);
    fastrace_discard::flush();
    t.sample(row::PUFFIN, puffin_frames::run);
    Ok(())
}

/// Prints everything; `Ok(false)` when a target is not met.
fn run(opts: &Options) -> Result<bool, String> {
    if !cfg!(target_arch = "x86_64") {
        eprintln!("note: not x86_64: the floor rows read a monotonic clock instead of the TSC");
    }
    let started = Instant::now();
    tracing_mem::setup();
    fastrace_discard::setup();
    puffin_frames::setup();
    let mut t = Table::default();
    let mut logs = Logs::default();
    eprint!("measuring {} rounds ", opts.rounds);
    for _ in 0..opts.rounds {
        round(&mut t, &mut logs)?;
        eprint!(".");
    }
    fastrace_discard::flush();
    let snap = snapshot_cost()?;
    eprintln!(" done in {:.1} s", started.elapsed().as_secs_f64());

    print_table(&t, opts.rounds);
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
    println!(
        "snapshot of a full {} MiB ring to a file: {:.2} ms, best of 5 ({} bytes, {:.0} MB/s)",
        POOL_BYTES >> 20,
        snap.secs * 1e3,
        snap.bytes,
        snap.bytes as f64 / snap.secs / 1e6
    );
    let (small, big) = (t.get(row::SMALL), t.get(row::BIG));
    let calls_per_small = (1024 - BLOCK_PREAMBLE) / 16;
    println!(
        "buffer switch: {small:.2} ns/call with 1 KiB buffers ({calls_per_small} calls each) vs \
         {big:.2} with 1 MiB buffers: {:.0} ns per switch",
        (small - big) * calls_per_small as f64
    );

    println!(
        "two-thread runs: {} voluntary context switches (threads that waited) in fdr's, {} in \
         the floor's",
        logs.blocked_fdr, logs.blocked_floor
    );

    let xray = if opts.xray {
        run_xray(&opts.anchors)
    } else {
        None
    };
    println!();
    Ok(print_targets(&t, xray.as_ref()))
}

/// Bytes at the start of every buffer before its first function record: BufferExtents,
/// NewBuffer, WalltimeMarker, Pid and NewCPUId, 16 bytes each.
const BLOCK_PREAMBLE: usize = 5 * 16;

fn print_table(t: &Table, rounds: usize) {
    let floor = t.get(row::FLOOR);
    let plain = t.get(row::PLAIN);
    println!();
    println!(
        "{:<46} {:>9} {:>9} {:>12}",
        format!("row (best of {rounds} rounds)"),
        "ns/call",
        "x floor",
        "over plain"
    );
    for name in row::ALL {
        let ns = t.get(name);
        let over = if row::is_clock_only(name) {
            String::new()
        } else {
            format!("{:+.2} ns", ns - plain)
        };
        println!("{name:<46} {ns:>9.2} {:>9.2} {over:>12}", ns / floor);
    }
}

/// XRay anchor figures, in ns per call.
struct Xray {
    fdr0: f64,
    fdr5: f64,
}

fn run_xray(anchors: &Path) -> Option<Xray> {
    let script = anchors.join("run.sh");
    let which = Command::new("sh")
        .args(["-c", "command -v clang++-19"])
        .output();
    if !matches!(&which, Ok(o) if o.status.success()) {
        println!(
            "\nxray: skipped, clang++-19 is not installed \
             (apt-get install clang-19 libclang-rt-19-dev llvm-19)"
        );
        return None;
    }
    if !script.exists() {
        println!(
            "\nxray: skipped, {} does not exist; pass --anchors DIR",
            script.display()
        );
        return None;
    }
    // run.sh builds its programs next to itself and the anchors may be read-only: run a copy.
    let copy = std::env::temp_dir().join(format!("fdr-benches-anchors-{}", std::process::id()));
    let copied = Command::new("cp")
        .arg("-r")
        .arg(anchors)
        .arg(&copy)
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("chmod")
            .arg("-R")
            .arg("u+w")
            .arg(&copy)
            .status()
            .is_ok_and(|s| s.success());
    let out = if copied {
        Command::new(copy.join("run.sh")).arg("20000000").output()
    } else {
        println!("\nxray: skipped, cannot copy {}", anchors.display());
        let _ = std::fs::remove_dir_all(&copy);
        return None;
    };
    let _ = std::fs::remove_dir_all(&copy);
    let out = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => {
            println!(
                "\nxray: run.sh failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return None;
        }
        Err(e) => {
            println!("\nxray: cannot run run.sh: {e}");
            return None;
        }
    };
    println!("\nXRay anchor (shared/anchors/run.sh 20000000, ns per call):");
    for line in out.lines() {
        println!("  {line}");
    }
    let value = |prefix: &str| -> Option<f64> {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.trim().parse().ok())
    };
    Some(Xray {
        fdr0: value("xray fdr threshold 0:")?,
        fdr5: value("xray fdr threshold 5us:")?,
    })
}

fn print_targets(t: &Table, xray: Option<&Xray>) -> bool {
    let floor = t.get(row::FLOOR);
    let plain = t.get(row::PLAIN);
    let kept = t.get(row::KEPT);
    let rewind = t.get(row::REWIND);
    let idle = t.get(row::IDLE);
    let (peer, peer_ns) = [row::TRACING, row::FASTRACE, row::PUFFIN]
        .into_iter()
        .map(|r| (r, t.get(r)))
        .fold(
            ("none", f64::INFINITY),
            |a, b| if b.1 < a.1 { b } else { a },
        );
    let threads = [t.get(row::T0), t.get(row::T1)];

    let mut all = true;
    let mut check = |met: bool, what: String| {
        all &= met;
        println!("[{}] {what}", if met { "met    " } else { "NOT MET" });
    };
    println!("targets (the design contract ../shared/DESIGN.md, performance table):");
    check(
        kept <= 1.2 * floor,
        format!(
            "recording a kept call costs at most 1.2 x the floor: {kept:.2} ns = {:.2} x floor \
             ({:.2} x counting only the {:.2} ns over the plain call)",
            kept / floor,
            (kept - plain) / floor,
            kept - plain
        ),
    );
    check(
        rewind <= kept * (1.0 + NOISE),
        format!(
            "a call erased by rewind costs no more than a kept one (within {:.0}% noise): \
             {rewind:.2} vs {kept:.2} ns",
            NOISE * 100.0
        ),
    );
    check(
        idle <= plain + 1.0,
        format!(
            "compiled in without a recorder is at most 1 ns over the plain call: {:+.2} ns",
            idle - plain
        ),
    );
    check(
        peer_ns >= 2.0 * kept,
        format!(
            "at least 2 x faster than the fastest peer ({}): {:.2} x",
            peer.split_whitespace().next().unwrap_or(""),
            peer_ns / kept
        ),
    );
    println!(
        "          (against fastrace's recording thread alone, its collector's work not \
         counted: {:.2} x)",
        t.get(row::FASTRACE_THREAD) / kept
    );
    check(
        threads.iter().all(|&ns| kept / ns >= 0.9),
        format!(
            "two threads on two cores each run at least 90% of the single-thread rate: {:.0}% and \
             {:.0}% (the floor on two threads: {:.0}% and {:.0}%)",
            100.0 * kept / threads[0],
            100.0 * kept / threads[1],
            100.0 * floor / t.get(row::FLOOR_T0),
            100.0 * floor / t.get(row::FLOOR_T1)
        ),
    );
    match xray {
        Some(x) => {
            check(
                x.fdr0 >= 2.5 * kept,
                format!(
                    "at least 2.5 x faster than XRay FDR (threshold 0): {:.2} x ({:.2} vs \
                     {kept:.2} ns)",
                    x.fdr0 / kept,
                    x.fdr0
                ),
            );
            println!(
                "          (erased calls against XRay FDR with a 5 us threshold: {:.2} x, {:.2} vs \
                 {rewind:.2} ns)",
                x.fdr5 / rewind,
                x.fdr5
            );
        }
        None => println!(
            "[skipped] at least 2.5 x faster than XRay FDR: run with --xray (needs clang++-19)"
        ),
    }
    all
}

struct Snapshot {
    secs: f64,
    bytes: u64,
}

/// Fills the default 8 MiB ring with kept calls, then times writing it to a file.
fn snapshot_cost() -> Result<Snapshot, String> {
    let dir = std::env::temp_dir();
    let path = dir.join(format!("fdr-benches-{}.fdr", std::process::id()));
    let (r, _) = recording(kept_config(), |rec| -> Result<Snapshot, String> {
        // Two passes of 16-byte calls over the pool: every buffer is full and has been recycled.
        std::hint::black_box(workload::run_fdr((POOL_BYTES / 8) as u64));
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t = Instant::now();
            rec.write_snapshot(&path)
                .map_err(|e| format!("snapshot to {} failed: {e}", path.display()))?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        Ok(Snapshot { secs: best, bytes })
    })?;
    let _ = std::fs::remove_file(&path);
    r
}
