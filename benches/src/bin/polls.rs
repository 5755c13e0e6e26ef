//! What a recorder costs an async task per poll, fdr beside dial9, on the same tokio workload.
//!
//! ```text
//! cargo run --release -p fdr-benches --bin polls -- [--rounds N] [--scale X] [--samples]
//! ```
//!
//! Two workloads, each run on a multi-thread tokio runtime with one worker (the main thread only
//! blocks on the root task), every task's polls counted:
//!
//! - **waits**: 64 client tasks each make requests of one server task: a request is sent on an
//!   unbounded `mpsc` channel with a `oneshot` sender for its answer, and the client awaits the
//!   answer, which another task (the server) sends: every client poll but the first was woken by
//!   the server, after a wait of about 64 requests' work. The server awaits the next request.
//! - **ready**: tasks whose awaits are all ready (an async fn awaiting `std::future::ready`),
//!   each done in its first poll; the root spawns them 256 at a time and awaits them, the last
//!   first (so it is polled once a batch).
//!
//! Each runs in these configurations, one after the other in every round:
//!
//! - **plain**: the async fns without annotation, `tokio::spawn`.
//! - **fdr**: the same async fns under `#[fdr::instrument_fdr]`, `tokio::spawn`, a recorder with
//!   the default configuration (`fdr::Config::default()`: 5 us threshold, culling, `long_poll`
//!   100 ms, 8 MiB ring), finished into a byte counter after the timed run.
//! - **fdr, threshold 0**: the same with every record kept.
//! - **fdr, long_poll off**: the default configuration with `long_poll` off
//!   (`Config::long_poll(Duration::ZERO)`): what timing every poll against the limit costs.
//! - **dial9**: the async fns without annotation, spawned with `dial9::spawn` on a runtime attached
//!   to a dial9 recorder (`TokioAttachOptions::default()`), writing into a `MemoryBuffer` of 8 MiB,
//!   its sealed segments counted by a pipeline processor that drops them. Built without
//!   `--cfg tokio_unstable`, so dial9's spawn wrapper records each poll's start and end and each
//!   wake (tokio's poll hooks need the flag).
//!
//! A round builds a fresh runtime (and recorder) for each configuration, runs the workload once
//! untimed, then once timed with the process's CPU clock (every thread: the worker, the blocked
//! main thread, fdr's writer, dial9's flush and pipeline threads); the recorders are finished
//! after the timed run, untimed. The figure is CPU ns per poll; "above plain" subtracts the
//! plain run of the same round.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use dial9::core::pipeline::{ProcessError, SegmentData, SegmentProcessor};
use fdr_benches::timing::process_cpu_ns;
use fdr_benches::workload::body;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Polls of every task spawned through [`Spawner`]. Only the runtime's one worker polls them, so
/// a load and a store (not a read-modify-write) count exactly, at the same small cost in every
/// configuration.
static POLLS: AtomicU64 = AtomicU64::new(0);

/// Counts the polls of the future it wraps.
struct Counted<F>(F);

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        POLLS.store(POLLS.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        // SAFETY: the field is structurally pinned: `Counted` never moves it out, has no `Drop`
        // impl, and is `Unpin` only when `F` is.
        unsafe { self.map_unchecked_mut(|c| &mut c.0) }.poll(cx)
    }
}

/// How tasks are spawned: by tokio, or by dial9 (which wraps each task to record its polls and
/// wake-ups).
#[derive(Clone, Copy)]
enum Spawner {
    Tokio,
    Dial9,
}

impl Spawner {
    fn spawn<F>(self, f: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self {
            Spawner::Tokio => tokio::spawn(Counted(f)),
            Spawner::Dial9 => dial9::spawn(Counted(f)),
        }
    }
}

/// A request: a number, and where to send its answer.
type Request = (u64, oneshot::Sender<u64>);

/// Clients of the waits workload.
const CLIENTS: u64 = 64;
/// Tasks of the ready workload spawned before the root awaits them.
const BATCH: u64 = 256;

/// The workload's async fns, once as they are (`plain`) and once with the attributes given.
macro_rules! tasks {
    ($module:ident $(, #[$attr:meta])*) => {
        mod $module {
            use super::*;

            /// Answers requests until every client is gone.
            $(#[$attr])*
            pub async fn server(mut requests: mpsc::UnboundedReceiver<Request>) -> u64 {
                let mut served = 0;
                while let Some((x, answer)) = requests.recv().await {
                    let _ = answer.send(body(x));
                    served += 1;
                }
                served
            }

            /// `n` requests, each awaiting its answer.
            $(#[$attr])*
            pub async fn client(id: u64, n: u64, server: mpsc::UnboundedSender<Request>) -> u64 {
                let mut x = id;
                for _ in 0..n {
                    let (tx, rx) = oneshot::channel();
                    if server.send((x, tx)).is_err() {
                        break;
                    }
                    x = rx.await.unwrap_or(0);
                }
                x
            }

            /// The waits workload: a server and [`CLIENTS`] clients of `n` requests each.
            $(#[$attr])*
            pub async fn waits(spawn: Spawner, n: u64) -> u64 {
                let (tx, rx) = mpsc::unbounded_channel();
                let server = spawn.spawn(server(rx));
                let clients: Vec<_> = (0..CLIENTS)
                    .map(|id| spawn.spawn(client(id, n, tx.clone())))
                    .collect();
                drop(tx);
                let mut acc = 0u64;
                for c in clients {
                    acc = acc.wrapping_add(c.await.unwrap_or(0));
                }
                acc.wrapping_add(server.await.unwrap_or(0))
            }

            /// A task whose awaits are all ready.
            $(#[$attr])*
            pub async fn ready(x: u64) -> u64 {
                let a = std::future::ready(body(x)).await;
                std::future::ready(body(a)).await
            }

            /// The ready workload: `n` tasks of [`ready`], [`BATCH`] spawned at a time.
            $(#[$attr])*
            pub async fn readies(spawn: Spawner, n: u64) -> u64 {
                let mut acc = 0u64;
                let mut i = 0;
                let mut batch = Vec::with_capacity(BATCH as usize);
                while i < n {
                    let len = BATCH.min(n - i);
                    batch.extend((i..i + len).map(|x| spawn.spawn(ready(x))));
                    // The last first: by the time it is done, so are the others, and the root
                    // is polled once a batch, not once a task.
                    for t in batch.drain(..).rev() {
                        acc = acc.wrapping_add(t.await.unwrap_or(0));
                    }
                    i += len;
                }
                acc
            }
        }
    };
}

tasks!(plain);
tasks!(instrumented, #[fdr::instrument_fdr]);

#[derive(Clone, Copy, PartialEq)]
enum Workload {
    Waits,
    Ready,
}

#[derive(Clone, Copy, PartialEq)]
enum Config {
    Plain,
    Fdr,
    FdrZero,
    FdrNoLongPoll,
    Dial9,
}

const CONFIGS: [Config; 5] = [
    Config::Plain,
    Config::Fdr,
    Config::FdrZero,
    Config::FdrNoLongPoll,
    Config::Dial9,
];

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::Plain => "plain (no recorder)",
            Config::Fdr => "fdr, default configuration",
            Config::FdrZero => "fdr, threshold 0",
            Config::FdrNoLongPoll => "fdr, default but long_poll off",
            Config::Dial9 => "dial9, in memory",
        }
    }
}

/// Bytes of the sealed segments dial9 handed to its pipeline.
static DIAL9_BYTES: AtomicU64 = AtomicU64::new(0);

/// A dial9 pipeline stage that counts each sealed segment's bytes and passes it on.
#[derive(Debug)]
struct CountSegments;

impl SegmentProcessor for CountSegments {
    fn name(&self) -> &'static str {
        "count"
    }

    fn process(
        &mut self,
        data: SegmentData,
    ) -> Pin<Box<dyn Future<Output = Result<SegmentData, ProcessError>> + Send + '_>> {
        DIAL9_BYTES.fetch_add(data.payload().len() as u64, Ordering::Relaxed);
        Box::pin(async move { Ok(data) })
    }
}

/// Writes nothing, counts the bytes: where fdr's log goes at finish.
#[derive(Default)]
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn builder() -> tokio::runtime::Builder {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    b.worker_threads(1).enable_all();
    b
}

/// One run's figures: CPU ns, polls, and the bytes the recorder kept.
struct Run {
    ns: u64,
    polls: u64,
    bytes: u64,
}

/// Runs `workload` twice on a fresh runtime in `config`, the second run timed.
fn run(config: Config, workload: Workload, n: u64) -> Result<Run, String> {
    let go = |rt: &tokio::runtime::Runtime, spawn: Spawner| -> (u64, u64, u64) {
        let once = || {
            let polls = POLLS.load(Ordering::Relaxed);
            let t = process_cpu_ns();
            let root = match (config, workload) {
                (Config::Plain | Config::Dial9, Workload::Waits) => {
                    rt.block_on(async { spawn.spawn(plain::waits(spawn, n)).await })
                }
                (Config::Plain | Config::Dial9, Workload::Ready) => {
                    rt.block_on(async { spawn.spawn(plain::readies(spawn, n)).await })
                }
                (_, Workload::Waits) => {
                    rt.block_on(async { spawn.spawn(instrumented::waits(spawn, n)).await })
                }
                (_, Workload::Ready) => {
                    rt.block_on(async { spawn.spawn(instrumented::readies(spawn, n)).await })
                }
            };
            let ns = process_cpu_ns() - t;
            (ns, POLLS.load(Ordering::Relaxed) - polls, root.unwrap_or(0))
        };
        let warm = once();
        let timed = once();
        assert_eq!(warm.2, timed.2, "the two runs computed different results");
        timed
    };
    match config {
        Config::Plain => {
            let rt = builder().build().map_err(|e| format!("runtime: {e}"))?;
            let (ns, polls, _) = go(&rt, Spawner::Tokio);
            Ok(Run {
                ns,
                polls,
                bytes: 0,
            })
        }
        Config::Fdr | Config::FdrZero | Config::FdrNoLongPoll => {
            let rt = builder().build().map_err(|e| format!("runtime: {e}"))?;
            let c = match config {
                Config::FdrZero => fdr::Config::default().threshold(Duration::ZERO),
                Config::FdrNoLongPoll => fdr::Config::default().long_poll(Duration::ZERO),
                _ => fdr::Config::default(),
            };
            let rec = fdr::start(c).map_err(|e| format!("starting fdr: {e}"))?;
            let (ns, polls, _) = go(&rt, Spawner::Tokio);
            drop(rt);
            let mut log = Counter::default();
            rec.finish_to(&mut log)
                .map_err(|e| format!("finishing fdr: {e}"))?;
            Ok(Run {
                ns,
                polls,
                bytes: log.0,
            })
        }
        Config::Dial9 => {
            use dial9::{Dial9HandleTokioExt, RecorderPipelineExt};
            let writer =
                dial9::MemoryBuffer::new(8 << 20).map_err(|e| format!("dial9 buffer: {e}"))?;
            let rec = dial9::recorder(writer)
                .with_custom_pipeline(|p| p.pipe(CountSegments))
                .build();
            let rt = rec
                .handle()
                .attach_tokio_runtime(builder(), dial9::TokioAttachOptions::default())
                .map_err(|e| format!("dial9 runtime: {e}"))?;
            let before = DIAL9_BYTES.load(Ordering::Relaxed);
            let (ns, polls, _) = go(&rt, Spawner::Dial9);
            drop(rt);
            rec.graceful_shutdown(Duration::from_secs(10));
            Ok(Run {
                ns,
                polls,
                bytes: DIAL9_BYTES.load(Ordering::Relaxed) - before,
            })
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn main() {
    let mut rounds = 11;
    let mut scale = 1.0f64;
    let mut samples = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => rounds = args.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            "--scale" => scale = args.next().and_then(|v| v.parse().ok()).unwrap_or(0.0),
            "--samples" => samples = true,
            other => {
                eprintln!(
                    "polls: unknown argument {other:?}: polls [--rounds N] [--scale X] [--samples]"
                );
                std::process::exit(2);
            }
        }
    }
    if rounds == 0 || scale <= 0.0 {
        eprintln!("polls: --rounds takes a number of rounds, --scale a positive factor");
        std::process::exit(2);
    }
    let sizes = [
        (Workload::Waits, "waits", (4_000.0 * scale) as u64),
        (Workload::Ready, "ready", (400_000.0 * scale) as u64),
    ];
    // [workload][config] -> per-round ns per poll
    let mut per_poll = vec![vec![Vec::new(); CONFIGS.len()]; sizes.len()];
    let mut polls = vec![vec![0u64; CONFIGS.len()]; sizes.len()];
    let mut bytes = vec![vec![0u64; CONFIGS.len()]; sizes.len()];
    for round in 0..rounds {
        eprint!("round {} of {rounds}\r", round + 1);
        for (w, &(workload, _, n)) in sizes.iter().enumerate() {
            for (c, &config) in CONFIGS.iter().enumerate() {
                let r = run(config, workload, n).unwrap_or_else(|e| {
                    eprintln!("polls: {e}");
                    std::process::exit(2);
                });
                per_poll[w][c].push(r.ns as f64 / r.polls.max(1) as f64);
                polls[w][c] = r.polls;
                bytes[w][c] = r.bytes;
            }
        }
    }
    eprintln!();
    for (w, &(_, name, n)) in sizes.iter().enumerate() {
        let plain = &per_poll[w][0];
        let (plain_med, plain_best) = (median(plain.clone()), best(plain));
        println!(
            "\n{name} (n = {n}; {rounds} rounds; CPU ns per poll, every thread of the process)\n"
        );
        println!(
            "{:<30} {:>8} {:>8} {:>12} {:>12} {:>12} {:>10} {:>12}",
            "configuration",
            "median",
            "best",
            "above plain",
            "(paired)",
            "(best)",
            "polls",
            "bytes kept"
        );
        let mut above = vec![(0.0, 0.0, 0.0); CONFIGS.len()];
        for (c, &config) in CONFIGS.iter().enumerate() {
            let v = &per_poll[w][c];
            let paired = median(v.iter().zip(plain).map(|(a, b)| a - b).collect());
            above[c] = (median(v.clone()) - plain_med, paired, best(v) - plain_best);
            println!(
                "{:<30} {:>8.1} {:>8.1} {:>+12.1} {:>+12.1} {:>+12.1} {:>10} {:>12}",
                config.name(),
                median(v.clone()),
                best(v),
                above[c].0,
                above[c].1,
                above[c].2,
                polls[w][c],
                bytes[w][c]
            );
        }
        let d = above[CONFIGS.len() - 1];
        for (c, label) in [
            (1, "fdr default"),
            (2, "fdr threshold 0"),
            (3, "fdr long_poll off"),
        ] {
            let f = above[c];
            println!(
                "{label} / dial9, cost above plain: {:.2} (medians), {:.2} (paired), {:.2} (best)",
                f.0 / d.0,
                f.1 / d.1,
                f.2 / d.2
            );
        }
        if samples {
            println!("\nevery round, in order (ns per poll):");
            for (c, &config) in CONFIGS.iter().enumerate() {
                let row: Vec<String> = per_poll[w][c].iter().map(|v| format!("{v:7.1}")).collect();
                println!("{:<30} {}", config.name(), row.join(" "));
            }
        }
    }
}
