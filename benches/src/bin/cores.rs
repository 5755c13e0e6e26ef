//! What recording costs when cores share a function: two threads, pinned to cpus 0 and 1, calling
//! the **same** short function against two threads each calling **its own** function with the
//! same body, in each configuration a service runs; and what a trigger adds to a call of the
//! function it is on. A ratio above 1 in the first table is memory shared between the cores on
//! the recording path (a store one core makes and the other must fetch back): on two cores it is
//! a few nanoseconds, on sixty-four it is the whole call.
//!
//! ```sh
//! cargo run --release -p fdr-benches --bin cores            # both tables, 5 rounds
//! cargo run --release -p fdr-benches --bin cores -- --rounds 9
//! ```
//!
//! The functions are short (a multiply-add) and slow now and then (one call in 800 spins 6 µs, past
//! the default 5 µs threshold), as a handler is: they are kept now and then, so culling never
//! stops recording them, and their learned limits see a real tail. Each figure is a thread's CPU
//! nanoseconds per call over 400,000 calls, after 100,000 untimed ones in the same recording
//! (learning, warm-up; with a learned limit, 100,000 more after its warm-up's second, so that
//! its rows are a service's steady state); the two threads' figures are averaged; the rows are
//! interleaved round by round and the median of the rounds is printed.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use fdr::{Config, Mode};
use fdr_benches::{logcheck, timing, workload};

/// Untimed calls before the timed ones, in the same recording.
const WARM: u64 = 100_000;
/// Timed calls per thread.
const CALLS: u64 = 400_000;
/// One call in this many is slow.
const SLOW_EVERY: u64 = 800;
/// How long a slow call spins.
const SLOW: Duration = Duration::from_micros(6);

/// The functions the threads call, named `cores::app::*` for the triggers' patterns.
mod app {
    use super::*;

    #[inline(always)]
    fn work(x: u64) -> u64 {
        if x % SLOW_EVERY == SLOW_EVERY - 1 {
            let until = Instant::now() + SLOW;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        workload::body(x)
    }

    /// Called by both threads in the "same" rows.
    #[fdr::instrument_fdr]
    #[inline(never)]
    pub fn shared(x: u64) -> u64 {
        work(x)
    }

    /// Thread 0's own function in the "own" rows.
    #[fdr::instrument_fdr]
    #[inline(never)]
    pub fn own_0(x: u64) -> u64 {
        work(x)
    }

    /// Thread 1's own function in the "own" rows.
    #[fdr::instrument_fdr]
    #[inline(never)]
    pub fn own_1(x: u64) -> u64 {
        work(x)
    }
}

/// `n` calls of `f`, summed.
#[inline(never)]
fn drive(f: fn(u64) -> u64, from: u64, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in from..from + n {
        acc = acc.wrapping_add(f(black_box(i)));
    }
    acc
}

/// With a learned limit, the untimed calls go on past its warm-up (1 s from the first call),
/// so that the timed ones cost what a service's calls cost after its first second.
fn warm_up(config: &Config, started: Instant, f: fn(u64) -> u64) {
    let learned = config
        .get_triggers()
        .iter()
        .any(|t| matches!(t.limit, fdr::Limit::Auto { .. }));
    if learned {
        std::thread::sleep(fdr::AUTO_WARMUP_TIME.saturating_sub(started.elapsed()));
        black_box(drive(f, 0, WARM));
    }
}

/// Runs `fs[i]` on thread `i` (pinned to cpu `i`) under a recorder started with `config`:
/// [`WARM`] calls, then [`CALLS`] timed ones. Returns the threads' mean CPU ns per call, and
/// whether a function was culled (its calls then cost nothing: a culled row is not comparable).
fn two_threads(config: &Config, fs: [fn(u64) -> u64; 2]) -> Result<(f64, bool), String> {
    let rec = fdr::start(config.clone()).map_err(|e| format!("start: {e}"))?;
    let started = Instant::now();
    let barrier = Barrier::new(2);
    let per_call: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let (barrier, f) = (&barrier, fs[i]);
                s.spawn(move || {
                    let _ = timing::pin_to_cpu(i);
                    black_box(drive(f, 0, WARM));
                    warm_up(config, started, f);
                    barrier.wait();
                    let t = timing::thread_cpu_ns();
                    black_box(drive(f, WARM, CALLS));
                    (timing::thread_cpu_ns() - t) as f64 / CALLS as f64
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut log = Vec::new();
    rec.finish_to(&mut log)
        .map_err(|e| format!("finish: {e}"))?;
    let culled = if config.get_mode() == Mode::Profile {
        false
    } else {
        let summary = logcheck::summarize(&log[..], None)?;
        summary.functions.values().any(|f| f.culled > 0)
    };
    Ok((per_call.iter().sum::<f64>() / 2.0, culled))
}

/// One thread calling `f` under `config`: CPU ns per call.
fn one_thread(config: &Config, f: fn(u64) -> u64) -> Result<f64, String> {
    let rec = fdr::start(config.clone()).map_err(|e| format!("start: {e}"))?;
    let started = Instant::now();
    let ns = std::thread::scope(|s| {
        s.spawn(|| {
            let _ = timing::pin_to_cpu(0);
            black_box(drive(f, 0, WARM));
            warm_up(config, started, f);
            let t = timing::thread_cpu_ns();
            black_box(drive(f, WARM, CALLS));
            (timing::thread_cpu_ns() - t) as f64 / CALLS as f64
        })
        .join()
        .unwrap()
    });
    rec.finish_to(&mut std::io::sink())
        .map_err(|e| format!("finish: {e}"))?;
    Ok(ns)
}

/// Two threads (cpus 0 and 1) each doing a load and a store of a counter, [`CALLS`] times: in one
/// cache line they share (`shared`), or each in a line of its own. What a recorder that stored
/// to memory shared by the cores on every call would pay per call, at two cores; at `n` cores
/// writing one line, each store waits for the line's trip from the last writer, so the cost
/// grows with the writers.
fn bounce(shared: bool) -> f64 {
    #[repr(align(128))]
    struct Line(std::sync::atomic::AtomicU64);
    let lines = [
        Line(std::sync::atomic::AtomicU64::new(0)),
        Line(std::sync::atomic::AtomicU64::new(0)),
    ];
    let barrier = Barrier::new(2);
    let per: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let (barrier, line) = (&barrier, &lines[if shared { 0 } else { i }].0);
                s.spawn(move || {
                    use std::sync::atomic::Ordering::Relaxed;
                    let _ = timing::pin_to_cpu(i);
                    barrier.wait();
                    let t = timing::thread_cpu_ns();
                    for _ in 0..CALLS {
                        line.store(black_box(line.load(Relaxed)) + 1, Relaxed);
                    }
                    (timing::thread_cpu_ns() - t) as f64 / CALLS as f64
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    per.iter().sum::<f64>() / 2.0
}

/// The median of each round's ratio `a / b`: a machine that slows down for a while slows both
/// sides of a round's pair, which the ratio of the medians does not cancel.
fn paired(a: &[f64], b: &[f64]) -> f64 {
    median(a.iter().zip(b).map(|(a, b)| a / b).collect())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The configurations of the first table.
fn configs() -> Vec<(&'static str, Config)> {
    let quiet = || Config::default().crash_dir_off().max_snapshots(0);
    vec![
        ("default", quiet()),
        ("threshold_us=0", quiet().threshold(Duration::ZERO)),
        ("mode=profile", quiet().mode(Mode::Profile)),
        (
            "trigger=cores::app::*:10ms",
            quiet().trigger("cores::app::*", Duration::from_millis(10)),
        ),
        (
            "trigger=cores::app::*:auto",
            quiet().trigger_auto("cores::app::*", 3.0),
        ),
    ]
}

fn main() {
    let mut rounds = 5;
    let mut triggers_only = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--triggers" => triggers_only = true,
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .unwrap_or_else(|| {
                        eprintln!("--rounds takes a number of rounds, 1 or more");
                        std::process::exit(2)
                    })
            }
            other => {
                eprintln!("unknown argument {other:?}: cores [--rounds N] [--triggers]");
                std::process::exit(2);
            }
        }
    }
    if let Err(e) = run(rounds, triggers_only) {
        eprintln!("cores: {e}");
        std::process::exit(2);
    }
}

/// The tables; with `triggers_only`, the one-thread trigger table alone (more rounds of it in
/// the same time).
fn run(rounds: usize, triggers_only: bool) -> Result<(), String> {
    let configs = configs();
    let mut same = vec![Vec::new(); configs.len()];
    let mut own = vec![Vec::new(); configs.len()];
    let trigger_rows: [(&str, Config); 3] = [
        ("no trigger", configs[0].1.clone()),
        ("trigger 10ms", configs[3].1.clone()),
        ("trigger auto", configs[4].1.clone()),
    ];
    let mut single = vec![Vec::new(); trigger_rows.len()];
    let mut culled = vec![0; configs.len()];
    let (mut one_line, mut own_lines) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for (i, (_, config)) in trigger_rows.iter().enumerate() {
            single[i].push(one_thread(config, app::own_0)?);
        }
        if triggers_only {
            continue;
        }
        one_line.push(bounce(true));
        own_lines.push(bounce(false));
        for (i, (_, config)) in configs.iter().enumerate() {
            let (ns, c) = two_threads(config, [app::shared, app::shared])?;
            same[i].push(ns);
            culled[i] += usize::from(c);
            let (ns, c) = two_threads(config, [app::own_0, app::own_1])?;
            own[i].push(ns);
            culled[i] += usize::from(c);
        }
    }
    if !triggers_only {
        println!("Two threads (cpus 0 and 1), CPU ns per call, median of {rounds} rounds:\n");
        println!(
            "| configuration | same function | own function | ratio | paired | runs with a \
             function culled |"
        );
        println!("|---|---|---|---|---|---|");
        for (i, (name, _)) in configs.iter().enumerate() {
            let (s, o) = (median(same[i].clone()), median(own[i].clone()));
            println!(
                "| `{name}` | {s:.1} | {o:.1} | {:.2} | **{:.2}** | {} of {} |",
                s / o,
                paired(&same[i], &own[i]),
                culled[i],
                2 * rounds
            );
        }
    }
    println!(
        "\nOne thread, the same function with and without a trigger (default configuration):\n"
    );
    println!("| configuration | ns per call | against no trigger | paired |");
    println!("|---|---|---|---|");
    let base = median(single[0].clone());
    for (i, (name, _)) in trigger_rows.iter().enumerate() {
        let v = median(single[i].clone());
        println!(
            "| {name} | {v:.1} | {:.2} | **{:.2}** |",
            v / base,
            paired(&single[i], &single[0])
        );
    }
    if triggers_only {
        return Ok(());
    }
    let (a, b) = (median(one_line), median(own_lines));
    println!(
        "\nFalse sharing on this machine: a load and a store per call into one line both cores \
         write, {a:.1} ns, against {b:.1} ns into lines of their own ({:.1}x)",
        a / b
    );
    Ok(())
}
