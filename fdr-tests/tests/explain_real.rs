//! `fdr explain` on logs a program wrote the way users write one: a request handler annotated
//! with its helpers, one request slow in a known callee, either computing or sleeping. The
//! explanation names the callee and says where its time went, from the thread's context
//! switches (on a CPU for the computing one, off it for the sleeping one).

use std::path::Path;
use std::time::{Duration, Instant};

use fdr::instrument_fdr;
use fdr_runtime::testing;
use fdr_testkit::logs::{scratch, wait_for_logs};
use serde_json::Value;

#[derive(Clone, Copy, PartialEq)]
enum Slow {
    No,
    Computing,
    Sleeping,
}

fn spin(d: Duration) -> u64 {
    let t = Instant::now();
    let mut x = 0u64;
    while t.elapsed() < d {
        x = std::hint::black_box(x.wrapping_add(1));
    }
    x
}

#[instrument_fdr]
fn parse(req: u32) -> u32 {
    spin(Duration::from_micros(20));
    req + 1
}

#[instrument_fdr]
fn lookup(key: u32, slow: Slow) -> u32 {
    match slow {
        Slow::No => {
            spin(Duration::from_micros(50));
        }
        Slow::Computing => {
            spin(Duration::from_millis(30));
        }
        Slow::Sleeping => std::thread::sleep(Duration::from_millis(30)),
    }
    key * 2
}

#[instrument_fdr]
fn render(v: u32) -> u32 {
    spin(Duration::from_micros(20));
    v + 3
}

#[instrument_fdr]
fn handle(req: u32, slow: Slow) -> u32 {
    let key = parse(req);
    let v = lookup(key, slow);
    render(v)
}

/// Serves 50 usual requests and one slow as `slow` says, under a trigger on `handle`, and
/// answers `fdr explain --format json` of the snapshot it wrote.
fn explained(name: &str, slow: Slow) -> Value {
    let _turn = testing::exclusive();
    let dir = scratch(name);
    // Warmed up before recording: a first call that finds its code cold must not be the one
    // that fires.
    for req in 0..5 {
        handle(req, Slow::No);
    }
    let rec = fdr::start(
        fdr::Config::default()
            .trigger("*::handle", Duration::from_millis(10))
            .out(dir.join("svc.fdr")),
    )
    .unwrap();
    for req in 0..50 {
        handle(req, Slow::No);
    }
    handle(50, slow);
    let logs = wait_for_logs(&dir, 1);
    rec.finish_to(&mut std::io::sink()).unwrap();
    let v = explain(&logs[0]);
    std::fs::remove_dir_all(&dir).ok();
    v
}

fn explain(log: &Path) -> Value {
    let mut out = Vec::new();
    fdr_cli::run(
        &["explain", log.to_str().unwrap(), "--format", "json"],
        &mut out,
    )
    .unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn ends(v: &Value, key: &str, suffix: &str) -> bool {
    v[key].as_str().is_some_and(|s| s.ends_with(suffix))
}

#[test]
#[cfg_attr(
    fdr_emulated,
    ignore = "under qemu-user a usual request can take longer than the limit (code translated on first use, an emulated clock)"
)]
fn a_request_slow_computing_in_lookup_is_explained_as_lookup_on_the_cpu() {
    let v = explained("explain-computing", Slow::Computing);
    assert!(ends(&v, "function", "::handle"), "{v}");
    assert!(ends(&v, "culprit", "::lookup"), "{v}");
    assert!(v["share"].as_f64().unwrap() > 0.9, "{v}");
    // The usual handle is about 90 µs; this one about 30 ms.
    assert!(v["usual_ns"].as_u64().unwrap() < 5_000_000, "{v}");
    assert!(v["duration_ns"].as_u64().unwrap() >= 30_000_000, "{v}");
    if v["off_cpu_ns"].is_null() {
        eprintln!("skipped the breakdown: no context-switch records here ({v})");
        return;
    }
    // It computed: on a CPU, or waiting for one on a loaded machine; not off it.
    let (ran, waited, off) = (
        v["running_ns"].as_u64().unwrap(),
        v["cpu_wait_ns"].as_u64().unwrap(),
        v["off_cpu_ns"].as_u64().unwrap(),
    );
    assert!(ran + waited > 25_000_000 && off < 5_000_000, "{v}");
}

#[test]
#[cfg_attr(
    fdr_emulated,
    ignore = "under qemu-user a usual request can take longer than the limit (code translated on first use, an emulated clock)"
)]
fn a_request_slow_sleeping_in_lookup_is_explained_as_lookup_off_the_cpu() {
    let v = explained("explain-sleeping", Slow::Sleeping);
    assert!(ends(&v, "function", "::handle"), "{v}");
    assert!(ends(&v, "culprit", "::lookup"), "{v}");
    assert!(v["share"].as_f64().unwrap() > 0.9, "{v}");
    if v["off_cpu_ns"].is_null() {
        eprintln!("skipped the breakdown: no context-switch records here ({v})");
        return;
    }
    let (ran, off) = (
        v["running_ns"].as_u64().unwrap(),
        v["off_cpu_ns"].as_u64().unwrap(),
    );
    assert!(off >= 29_000_000 && ran < off, "{v}");
}
