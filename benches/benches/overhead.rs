//! Criterion benchmarks of one call shape (a tiny `#[inline(never)]` leaf called in a loop) under
//! fdr's configurations, the Rust peers and the floor. `cargo bench -p fdr-benches`.
//!
//! Every benchmark times whole loops of `iters` calls with `iter_custom`, so the figures are
//! nanoseconds per call of the same loops the quick table (`--bin overhead`) times, and, as
//! there, with the process's CPU clock (each thread's in the two-thread benchmark), so that other
//! processes on a shared machine inflate the figures less.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use fdr_benches::peers::{fastrace_discard, puffin_frames, tracing_mem};
use fdr_benches::{floor, model, timing, whole, workload};

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Times `f(iters)` as one loop.
fn loop_of(g: &mut Group<'_>, name: &str, f: fn(u64) -> u64) {
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let t = timing::process_cpu_ns();
            std::hint::black_box(f(std::hint::black_box(iters)));
            Duration::from_nanos(timing::process_cpu_ns() - t)
        })
    });
}

/// Runs `f` while a recorder with `threshold` records (default 8 MiB ring), then finishes it.
fn with_recorder(threshold: Duration, f: impl FnOnce()) {
    let rec = fdr::start(fdr::Config::default().threshold(threshold))
        .expect("cannot start the recorder; is another one running in this process?");
    // One pass over the pool, so that page faults are not timed.
    std::hint::black_box(workload::run_fdr(64 * 1024 * 128 / 8));
    f();
    rec.finish_to(&mut std::io::sink())
        .expect("finishing the recorder failed");
}

fn clock_and_idle(c: &mut Criterion) {
    let mut g = c.benchmark_group("call");
    loop_of(&mut g, "floor_two_rdtscp", floor::rdtscp_pair);
    loop_of(&mut g, "two_rdtsc", floor::rdtsc_pair);
    loop_of(&mut g, "plain", workload::run_plain);
    // Before any recorder has started in this process.
    loop_of(&mut g, "fdr_idle", workload::run_fdr);
    // The reference model of the hot path (see `fdr_benches::model`).
    loop_of(&mut g, "model_idle", model::run_rdtscp);
    model::set_recording(true);
    loop_of(&mut g, "model_rdtscp", model::run_rdtscp);
    loop_of(&mut g, "model_rdtsc", model::run_rdtsc);
    model::set_recording(false);
    g.finish();
}

fn recording(c: &mut Criterion) {
    let mut g = c.benchmark_group("call");
    with_recorder(Duration::ZERO, || {
        loop_of(&mut g, "fdr_kept", workload::run_fdr);
        loop_of(&mut g, "fdr_scope", workload::run_scope);
        loop_of(&mut g, "fdr_log_args_2", workload::run_args);
        // The slower of the two pinned threads, per call of its CPU time.
        g.bench_function("fdr_two_threads", |b| {
            b.iter_custom(|iters| {
                let [a, b] = timing::two_threads(workload::run_fdr, iters, 1)
                    .expect("cannot pin the two threads to cpus 0 and 1");
                Duration::from_secs_f64(a.cpu_ns.max(b.cpu_ns) * iters as f64 * 1e-9)
            })
        });
    });
    with_recorder(Duration::from_secs(1), || {
        loop_of(&mut g, "fdr_rewind", workload::run_fdr);
    });
    g.finish();
}

fn peers(c: &mut Criterion) {
    let mut g = c.benchmark_group("call");
    tracing_mem::setup();
    loop_of(&mut g, "tracing_in_memory", tracing_mem::run);
    fastrace_discard::setup();
    // Flushing inside the timed loop charges fastrace for its collector's work on the spans.
    loop_of(&mut g, "fastrace_discard", fastrace_discard::run_and_flush);
    puffin_frames::setup();
    loop_of(&mut g, "puffin", puffin_frames::run);
    g.finish();
}

/// The whole program (`fdr_benches::whole`), one run per iteration, uninstrumented and under
/// fdr at the default threshold (5 us, culling on) and at threshold 0.
fn whole_program(c: &mut Criterion) {
    let sources = whole::sources();
    let mut g = c.benchmark_group("whole");
    let run = |g: &mut Group<'_>, name: &str, f: fn(&[String]) -> u64| {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let t = timing::process_cpu_ns();
                for _ in 0..iters {
                    std::hint::black_box(f(std::hint::black_box(&sources)));
                }
                Duration::from_nanos(timing::process_cpu_ns() - t)
            })
        });
    };
    run(&mut g, "uninstrumented", whole::run_plain);
    for (name, threshold) in [
        ("fdr_default_5us", Duration::from_micros(5)),
        ("fdr_threshold_0", Duration::ZERO),
    ] {
        let rec = fdr::start(fdr::Config::default().threshold(threshold))
            .expect("cannot start the recorder; is another one running in this process?");
        run(&mut g, name, whole::run_fdr_rule);
        rec.finish_to(&mut std::io::sink())
            .expect("finishing the recorder failed");
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    // In this order: the idle row must run before any recorder starts.
    targets = clock_and_idle, recording, peers, whole_program
}
criterion_main!(benches);
