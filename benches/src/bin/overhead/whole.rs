//! The whole-program table: the workload of `fdr_benches::whole` in each build, its slowdown
//! over the uninstrumented build, and a check of what the default-threshold run kept.

use std::time::Duration;

use fdr_benches::logcheck::{self, LogSummary};
use fdr_benches::peers::{fastrace_discard, tracing_mem};
use fdr_benches::{timing, whole};

use crate::anchors::{best, median};
use crate::recording;

/// The default threshold (`fdr::Config::default()`'s, as XRay's flight recorder's).
pub const DEFAULT_THRESHOLD: Duration = Duration::from_micros(5);

/// One build and how it runs.
struct Row {
    name: &'static str,
    run: fn(&[String]) -> u64,
    /// The recorder running meanwhile, if any.
    config: Option<fn() -> fdr::Config>,
    /// Untimed runs before the timed ones, in the same recording: culling needs a few runs to
    /// settle, both ways (functions culled, and sometimes-slow ones restored by a sample).
    warm: u32,
}

/// Untimed runs of a build that culls: with fewer, a function that is slow now and then (the
/// interpreter's `Interp::eval`, slow when it calls an interpreted function) may still be culled
/// when timing starts, and the figure would be that of a recording younger than a real one.
const WARM_CULLING: u32 = 8;

fn t0() -> fdr::Config {
    fdr::Config::default().threshold(Duration::ZERO)
}

/// The default configuration, untouched: threshold 5 us, culling on.
fn t5() -> fdr::Config {
    let c = fdr::Config::default();
    assert_eq!(c.get_threshold(), DEFAULT_THRESHOLD);
    c
}

fn t5_no_cull() -> fdr::Config {
    t5().cull(false)
}

/// Profile mode: call trees, no window.
fn profile() -> fdr::Config {
    fdr::Config::default().mode(fdr::Mode::Profile)
}

/// The default window and a profile beside it (culling is off while profiling).
fn t5_profile() -> fdr::Config {
    t5().profile(true)
}

pub const UNINSTRUMENTED: &str = "uninstrumented";
pub const FDR_DEFAULT: &str = "fdr, threshold 5 us, culling on (default)";

const ROWS: [Row; 12] = [
    Row {
        name: UNINSTRUMENTED,
        run: whole::run_plain,
        config: None,
        warm: 1,
    },
    Row {
        name: "fdr compiled in, no recorder running",
        run: whole::run_fdr_rule,
        config: None,
        warm: 1,
    },
    Row {
        name: "fdr, threshold 0",
        run: whole::run_fdr_rule,
        config: Some(t0),
        warm: 1,
    },
    Row {
        name: FDR_DEFAULT,
        run: whole::run_fdr_rule,
        config: Some(t5),
        warm: WARM_CULLING,
    },
    Row {
        name: "fdr, threshold 5 us, culling off",
        run: whole::run_fdr_rule,
        config: Some(t5_no_cull),
        warm: 1,
    },
    Row {
        name: "fdr profile mode (mode=profile)",
        run: whole::run_fdr_rule,
        config: Some(profile),
        warm: 1,
    },
    Row {
        name: "fdr, 5 us, and a profile (profile=on)",
        run: whole::run_fdr_rule,
        config: Some(t5_profile),
        warm: 1,
    },
    Row {
        name: "fdr every function (always), threshold 0",
        run: whole::run_fdr_always,
        config: Some(t0),
        warm: 1,
    },
    Row {
        name: "fdr every function (always), 5 us, culling on",
        run: whole::run_fdr_always,
        config: Some(t5),
        warm: WARM_CULLING,
    },
    Row {
        name: "fdr every function (always), 5 us, culling off",
        run: whole::run_fdr_always,
        config: Some(t5_no_cull),
        warm: 1,
    },
    Row {
        name: "tracing #[instrument] on every function",
        run: whole::run_tracing,
        config: None,
        warm: 1,
    },
    Row {
        name: "fastrace #[trace] on every function",
        run: whole::run_fastrace,
        config: None,
        warm: 1,
    },
];

/// Runs timed per sample: one run lasts 10-300 ms, short enough for a tick of the host's noise
/// to show; three make each sample steadier.
const TIMED_RUNS: u32 = 3;

/// Milliseconds of process CPU time per run, over [`TIMED_RUNS`] runs after the row's untimed
/// ones (in the same recording, so that a recorder's culling has settled, as it has in a program
/// that runs for long).
fn sample(row: &Row, sources: &[String]) -> Result<f64, String> {
    let timed = || {
        for _ in 0..row.warm {
            std::hint::black_box((row.run)(std::hint::black_box(sources)));
        }
        let t = timing::process_cpu_ns();
        for _ in 0..TIMED_RUNS {
            std::hint::black_box((row.run)(std::hint::black_box(sources)));
        }
        (timing::process_cpu_ns() - t) as f64 / 1e6 / f64::from(TIMED_RUNS)
    };
    match row.config {
        Some(config) => recording(config(), |_| timed()).map(|(ms, _)| ms),
        None => Ok(timed()),
    }
}

/// What [`measure`] found, for the targets.
pub struct Whole {
    /// The default-threshold build's slowdown over the uninstrumented one (medians).
    pub fdr_default_slowdown: f64,
    /// The same, as the median of the round-by-round ratios: each round times every build back
    /// to back, so a slow phase of the host that spans a round cancels out of its ratio.
    pub fdr_default_paired: f64,
}

/// Measures every build in `rounds` interleaved rounds, prints the table and the check.
pub fn measure(rounds: usize) -> Result<Whole, String> {
    let sources = whole::sources();
    let expected = whole::run_plain(&sources);
    for row in &ROWS {
        let got = match row.config {
            Some(config) => recording(config(), |_| (row.run)(&sources))?.0,
            None => (row.run)(&sources),
        };
        if got != expected {
            return Err(format!(
                "the whole-program workload computed {got:#x} under `{}`, {expected:#x} without \
                 instrumentation",
                row.name
            ));
        }
    }
    let tracing_before = tracing_mem::recorded();
    let spans_before = fastrace_discard::spans_reported();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); ROWS.len()];
    eprint!("whole program: {rounds} rounds ");
    for _ in 0..rounds {
        for (row, s) in ROWS.iter().zip(&mut samples) {
            s.push(sample(row, &sources)?);
        }
        eprint!(".");
    }
    eprintln!();
    // Every sample of the tracing and fastrace rows ran the workload once untimed, then timed.
    let runs = u64::from(1 + TIMED_RUNS) * rounds as u64;
    let calls = (tracing_mem::recorded() - tracing_before) as u64 / 2 / runs;
    let spans = (fastrace_discard::spans_reported() - spans_before) / runs;

    let base = median(&samples[0]);
    let base_best = best(&samples[0]);
    println!();
    println!(
        "whole program: tokenize, parse and interpret {} programs ({} KiB of source), {} calls \
         of the {} functions per run",
        sources.len(),
        sources.iter().map(String::len).sum::<usize>() / 1024,
        calls,
        whole::SOURCE_FUNCTIONS
    );
    println!(
        "{:<50} {:>9} {:>9} {:>11} {:>9} {:>9}",
        format!("build (process CPU ms per run, {rounds} rounds)"),
        "median",
        "best",
        "x uninstr.",
        "(best)",
        "(paired)"
    );
    let mut fdr_default_slowdown = f64::NAN;
    let mut fdr_default_paired = f64::NAN;
    for (row, s) in ROWS.iter().zip(&samples) {
        let (m, b) = (median(s), best(s));
        let ratios: Vec<f64> = s.iter().zip(&samples[0]).map(|(x, u)| x / u).collect();
        let paired = median(&ratios);
        println!(
            "{:<50} {m:>9.2} {b:>9.2} {:>11.2} {:>9.2} {paired:>9.2}",
            row.name,
            m / base,
            b / base_best
        );
        if row.name == FDR_DEFAULT {
            fdr_default_slowdown = m / base;
            fdr_default_paired = paired;
        }
    }
    println!(
        "(paired: the median of each round's ratio to that round's uninstrumented run; the \
         rounds time the builds back to back)"
    );
    println!(
        "(tracing stored {calls} enter/exit pairs per run; fastrace reported {spans} spans per \
         run: it stops recording a root span's children past 10,240, and the workload has a root \
         per program)"
    );
    check_default_run(&sources)?;
    Ok(Whole {
        fdr_default_slowdown,
        fdr_default_paired,
    })
}

/// Runs the workload once more under `config` and reads its log back.
fn logged(
    config: fdr::Config,
    run: fn(&[String]) -> u64,
    sources: &[String],
) -> Result<(LogSummary, fdr::Stats), String> {
    let rec = fdr::start(config).map_err(|e| format!("starting the recorder failed: {e}"))?;
    std::hint::black_box(run(sources));
    let stats = rec.stats();
    let mut log = Vec::new();
    rec.finish_to(&mut log)
        .map_err(|e| format!("finishing the recorder failed: {e}"))?;
    Ok((
        logcheck::summarize(&log[..], Some(DEFAULT_THRESHOLD))?,
        stats,
    ))
}

/// The default-threshold run, read back: how many functions were culled, and whether every
/// call that lasted at least the threshold is in the log.
///
/// The reference is the same workload at the same threshold with culling off: there the rewind
/// erases exactly the calls shorter than the threshold, so its log holds every call that lasted
/// at least that long (each call pays for the clock reads of its callees, so it counts a few
/// more than the culled run would have).
fn check_default_run(sources: &[String]) -> Result<(), String> {
    let prefix = whole::FDR_RULE_PREFIX;
    let (b, b_stats) = logged(t5(), whole::run_fdr_rule, sources)?;
    let (c, c_stats) = logged(t5_no_cull(), whole::run_fdr_rule, sources)?;

    let instrumented = b.with_prefix(prefix).count();
    let always = b.with_prefix(whole::FDR_ALWAYS_PREFIX).count();
    let culled: Vec<_> = b.with_prefix(prefix).filter(|f| f.culled > 0).collect();
    let restored: u64 = culled.iter().map(|f| f.restored).sum();
    let slow = |s: &LogSummary| -> u64 { s.with_prefix(prefix).map(|f| f.slow).sum() };
    println!();
    println!(
        "check of one more default-threshold run (fdr, 5 us, culling on), read back from its log:"
    );
    println!(
        "  functions: {} in the source; {} instrumented by the compile-time rule ({} left out: \
         bodies that cannot take long); `always` instruments {}",
        whole::SOURCE_FUNCTIONS,
        instrumented,
        whole::SOURCE_FUNCTIONS.saturating_sub(instrumented),
        always
    );
    println!(
        "  culled during the run: {} of the {} ({} restored after a sampled call reached 5 us); \
         records dropped {}, buffers recycled {}",
        culled.len(),
        instrumented,
        restored,
        b_stats.records_dropped,
        b_stats.buffers_recycled
    );
    let names: Vec<&str> = culled
        .iter()
        .map(|f| f.name.trim_start_matches(prefix))
        .collect();
    println!("  culled: {}", names.join(", "));
    println!(
        "  calls that lasted >= 5 us: {} in this log; {} in the log of the same workload with \
         culling off ({} dropped, {} buffers recycled), which holds every such call of its own \
         run. Functions never culled lose none (the rewind erases only shorter calls); their \
         counts differ between the runs because culling makes calls faster, so fewer cross 5 us",
        slow(&b),
        slow(&c),
        c_stats.records_dropped,
        c_stats.buffers_recycled
    );
    // A culled function's calls are timed only when sampled: those of 5 us or more that were
    // not sampled are missing. The run with culling off says how many there are, about (a few
    // more than here: there every call also pays for its callees' clock reads).
    let mut lost = Vec::new();
    let mut lost_total = 0;
    for f in &culled {
        let reference = c.with_prefix(prefix).find(|cf| cf.name == f.name);
        if let Some(cf) = reference.filter(|cf| cf.slow > f.slow) {
            lost_total += cf.slow - f.slow;
            lost.push(format!(
                "{} {}/{}",
                f.name.trim_start_matches(prefix),
                cf.slow,
                f.slow
            ));
        }
    }
    if lost.is_empty() {
        println!(
            "  every call >= 5 us is in the log: no culled function has more calls >= 5 us in \
             the run with culling off"
        );
    } else {
        println!(
            "  NOT every call >= 5 us is in the log: culled functions have about {lost_total} \
             calls >= 5 us fewer here than with culling off (while culled, a call is timed only \
             when sampled, 1 in 256; the log's cull events name the function, the thread and \
             the time it stopped being recorded). Per function, calls >= 5 us with culling \
             off/here: {}",
            lost.join(", ")
        );
    }
    Ok(())
}
