//! Runs one configuration of the leaf loop for a fixed number of calls, for instruction counts
//! under `valgrind --tool=callgrind` (where hardware counters are not available):
//!
//! ```text
//! cargo build --release -p fdr-benches --bin hotpath
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='fdr_benches::*::run_*' \
//!     target/release/hotpath kept 100000
//! callgrind_annotate --inclusive=yes callgrind.out.<pid>
//! ```
//!
//! The modes: `plain`, `idle` (fdr compiled in, no recorder), `kept` (threshold 0), `task` and
//! `task-dropped` (an async fn's task with one poll, completed or dropped; threshold 0), `erased`
//! (threshold 1 s, culling off), `culled` (threshold 1 s, culling on: culled after 10,000
//! calls), `args` (two logged arguments, threshold 0), `trigger` and `trigger-auto` (`kept`
//! with a trigger on the leaf: a 10 s limit, and a learned one past its warm-up), `model` and `model-rdtsc` (the reference
//! model of `fdr_benches::model`, recording). The recorder starts, and the loop runs
//! once untimed (a recycled ring, a culled function), before the counted run.

use std::process::ExitCode;
use std::time::Duration;

use fdr_benches::workload;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (mode, n) = match (args.get(1), args.get(2).map(|n| n.parse::<u64>())) {
        (Some(mode), Some(Ok(n))) => (mode.as_str(), n),
        (Some(mode), None) => (mode.as_str(), 100_000),
        _ => {
            eprintln!(
                "usage: hotpath plain|idle|kept|erased|culled|args|task|task-erased|task-dropped|trigger|trigger-auto|model|model-rdtsc [CALLS]\n       hotpath whole-plain|whole-idle|whole-default|whole-off [RUNS]"
            );
            return ExitCode::from(2);
        }
    };
    if let Some(whole) = mode.strip_prefix("whole-") {
        return run_whole(whole, n);
    }
    let config = match mode {
        "plain" | "idle" => None,
        "kept" | "args" | "task" | "task-dropped" => {
            Some(fdr::Config::default().threshold(Duration::ZERO))
        }
        "erased" | "task-erased" => Some(
            fdr::Config::default()
                .threshold(Duration::from_secs(1))
                .cull(false),
        ),
        "culled" => Some(fdr::Config::default().threshold(Duration::from_secs(1))),
        "trigger" => Some(
            fdr::Config::default()
                .threshold(Duration::ZERO)
                .trigger("*leaf_fdr", Duration::from_secs(10)),
        ),
        "trigger-auto" => Some(
            fdr::Config::default()
                .threshold(Duration::ZERO)
                .trigger_auto("*leaf_fdr", 3.0),
        ),
        "model" | "model-rdtsc" => {
            fdr_benches::model::set_recording(true);
            None
        }
        _ => {
            eprintln!("unknown mode `{mode}`");
            return ExitCode::from(2);
        }
    };
    type Loop = fn(u64) -> u64;
    let (run, leaf): (Loop, Loop) = match mode {
        "plain" => (workload::run_plain, workload::leaf_plain),
        "args" => (workload::run_args, |i| workload::leaf_args(i, i >> 1)),
        "model" => (
            fdr_benches::model::run_rdtscp,
            fdr_benches::model::leaf_rdtscp,
        ),
        "model-rdtsc" => (
            fdr_benches::model::run_rdtsc,
            fdr_benches::model::leaf_rdtsc,
        ),
        "task" | "task-erased" => (workload::run_task, workload::leaf_fdr),
        "task-dropped" => (workload::run_task_dropped, workload::leaf_fdr),
        _ => (workload::run_fdr, workload::leaf_fdr),
    };
    let rec = config.map(|c| fdr::start(c).expect("cannot start the recorder"));
    // A ring that has been round once, a leaf already culled: the steady state. Outside the
    // `run_*` functions, so a count toggled on them leaves this out.
    std::hint::black_box(workload::drive(1 << 20, leaf));
    if mode == "trigger-auto" {
        // Past the learned limit's warm-up (1 s from the first call): its steady state.
        std::thread::sleep(fdr::AUTO_WARMUP_TIME);
        std::hint::black_box(workload::drive(1 << 20, leaf));
    }
    let sum = run(std::hint::black_box(n));
    let mut clock = String::from("none");
    if let Some(rec) = rec {
        let mut log = Vec::new();
        rec.finish_to(&mut log)
            .expect("finishing the recorder failed");
        if let Ok(s) = fdr_benches::logcheck::summarize(&log[..], None) {
            clock = format!("{:?}", s.clock);
        }
    }
    println!("{mode}: {n} calls, checksum {sum:#x}, clock {clock}");
    ExitCode::SUCCESS
}

/// Runs the whole program `runs` times (after one untimed run that culls what it culls):
/// `plain` uninstrumented, `idle` with fdr compiled in and no recorder, `default` recording at
/// 5 us with culling, `off` the same with culling off. Under callgrind, which runs a program
/// about 50 times slower, set `HOTPATH_THRESHOLD_US=250` to erase and cull what a native run does.
/// `HOTPATH_TIMES` prints each run's CPU time on standard error, `HOTPATH_LOG=PATH` keeps the
/// log (for `fdr info`, which lists when each function was culled and restored).
fn run_whole(build: &str, runs: u64) -> ExitCode {
    let threshold = std::env::var("HOTPATH_THRESHOLD_US")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_micros(5), Duration::from_micros);
    // A log kept whole (`HOTPATH_LOG`): a pool for every record of the runs.
    let pool = if std::env::var_os("HOTPATH_LOG").is_some() {
        fdr::Config::default().buffer_count(32 * 1024)
    } else {
        fdr::Config::default()
    };
    let config = match build {
        "plain" | "idle" => None,
        "default" => Some(pool.threshold(threshold)),
        "off" => Some(pool.threshold(threshold).cull(false)),
        _ => {
            eprintln!("unknown build `{build}`");
            return ExitCode::from(2);
        }
    };
    let run = if build == "plain" {
        fdr_benches::whole::run_plain
    } else {
        fdr_benches::whole::run_fdr_rule
    };
    let sources = fdr_benches::whole::sources();
    let rec = config.map(|c| fdr::start(c).expect("cannot start the recorder"));
    std::hint::black_box(run(&sources));
    let mut sum = 0u64;
    // `HOTPATH_TIMES`: each run's thread CPU time, to see the culling settle (or not).
    let times = std::env::var_os("HOTPATH_TIMES").is_some();
    for i in 0..runs {
        let start = fdr_benches::timing::thread_cpu_ns();
        sum = sum.wrapping_add(whole_runs(run, &sources));
        if times {
            let ms = (fdr_benches::timing::thread_cpu_ns() - start) as f64 / 1e6;
            eprintln!("run {i}: {ms:.2} ms");
        }
    }
    if let Some(rec) = rec {
        let mut log = Vec::new();
        rec.finish_to(&mut log)
            .expect("finishing the recorder failed");
        // `HOTPATH_LOG=PATH` keeps the log, for `fdr info` and `fdr account`.
        if let Some(path) = std::env::var_os("HOTPATH_LOG") {
            std::fs::write(&path, &log).expect("writing HOTPATH_LOG failed");
        }
    }
    println!("whole-{build}: {runs} runs, checksum {sum:#x}");
    ExitCode::SUCCESS
}

/// One counted run, out of line so `--toggle-collect='hotpath::whole_runs'` counts only it.
#[inline(never)]
fn whole_runs(run: fn(&[String]) -> u64, sources: &[String]) -> u64 {
    run(std::hint::black_box(sources))
}
