//! The one replay engine (`fdr_format::replay`) gives the same calls whichever way it is run:
//! in one pass, calls whose entry is missing inferred when their exit arrives
//! (`fdr_format::window::calls`, which the runtime's exporter and `fdr export` use), or in two,
//! a first pass's plan opening them at their thread's window start (as `fdr calls`, `fdr
//! replay`, every command that shows calls in time order, and `fdr export` behind a filter do).
//! Checked on every synthetic log shape (those of `examples/genlog.rs`, the tests' fixtures)
//! and the logs kept with the tests (`tests/fuzz_inputs/*.fdr`, and every `.fdr` of the
//! directory `FDR_ONE_ENGINE_LOGS` names, if set): the same calls (names, threads, times,
//! callers, arguments, inferred and open marks) and tasks, or the same refusal.

mod common;

use std::path::{Path, PathBuf};

use common::{
    basic_log, basic_log_with_gap, culled_log, midstack_log, midstack_log_led_by, tasks_log,
    triggered_log,
};
use fdr_format::events::EventDecoder;
use std::convert::Infallible;
use std::ops::ControlFlow;

use fdr_format::replay::{replay, Replay, ReplayError};
use fdr_format::sink::{Enter, Sink, GO_ON};
use fdr_format::window::{calls, Collector, Limits, WindowCalls};
use fdr_format::FormatError;
use fdr_format::{ClockSource, Mode, Reason, ReasonInfo, RunInfo};
use fdr_testkit::bench_log::BenchLog;
use fdr_testkit::synth::LogBuilder;

/// A first pass's plan: per thread, the calls open when its window started (found inferred,
/// innermost first), from the bottom of the stack up.
#[derive(Default)]
struct Plan(Vec<Vec<u32>>);

impl Sink for Plan {
    type Error = Infallible;

    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, Infallible> {
        if e.frame.inferred {
            let t = e.thread as usize;
            if t >= self.0.len() {
                self.0.resize_with(t + 1, Vec::new);
            }
            self.0[t].insert(0, e.frame.id);
        }
        Ok(GO_ON)
    }
}

/// The calls of `bytes` in two passes: the plan, then a replay that opens each thread's
/// inferred calls at its window start, into a collector for that.
fn two_passes(bytes: &[u8]) -> Result<WindowCalls, FormatError> {
    let mut plan = Plan::default();
    let mut dec = EventDecoder::new(bytes)?;
    replay(&mut dec, &mut plan, &Replay::default()).map_err(|e| match e {
        ReplayError::Log(e) => e,
        ReplayError::Sink { error, .. } => match error {},
    })?;
    let mut dec = EventDecoder::new(bytes)?;
    let mut c = Collector::planned(Limits::default());
    let how = Replay {
        initial: &plan.0,
        ..Replay::default()
    };
    replay(&mut dec, &mut c, &how).map_err(|e| match e {
        ReplayError::Log(e) => e,
        ReplayError::Sink { error, offset } => FormatError::new(offset, error.to_string()),
    })?;
    c.finish(dec.info(), dec.threads())
}

/// Both ways on `bytes`: the same calls and tasks, or the same error. Returns the calls.
fn same_either_way(name: &str, bytes: &[u8]) -> Result<WindowCalls, FormatError> {
    let one = calls(bytes);
    let two = two_passes(bytes);
    match (&one, &two) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.calls, b.calls, "{name}: calls");
            assert_eq!(a.tasks, b.tasks, "{name}: tasks");
            assert_eq!(a.origin_tsc, b.origin_tsc, "{name}: origin");
            assert_eq!(
                a.origin_unix_ns, b.origin_unix_ns,
                "{name}: origin's Unix time"
            );
            assert_eq!(a.threads, b.threads, "{name}: threads");
            assert_eq!(a.functions, b.functions, "{name}: names");
            for (i, c) in a.calls.iter().enumerate() {
                let p = c.parent.map(|p| &a.calls[p]);
                assert!(
                    c.parent.map_or(true, |p| p < i),
                    "{name}: a caller comes first"
                );
                assert!(
                    p.map_or(true, |p| p.thread == c.thread),
                    "{name}: caller's thread"
                );
            }
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "{name}: the same refusal"),
        _ => panic!("{name}: one way {one:?}, the other {two:?}"),
    }
    one
}

fn shape(name: &str, n: u32) -> Vec<u8> {
    fdr_testkit::shapes::shape(name, n).expect("a known shape")
}

/// genlog's large log, small; with `ring`, each thread's first blocks are dropped, as a ring
/// recycles them, so its window starts mid-stack.
fn bench_like(records: u64, threads: i32, block: usize, ring: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let spec = BenchLog {
        records,
        threads,
        block,
        migrate_every: 97,
        ring,
        end_tsc: 1 << 40,
    };
    fdr_testkit::bench_log::write(&mut out, &spec).unwrap();
    out
}

fn hung() -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        clock: ClockSource::Injected,
        ticks_per_second: 1_000_000_000,
        mode: Mode::Ring,
        pid: 1,
        program: "hang".into(),
        end_tsc: 2_001_000,
        start_unix_secs: 1_700_000_000,
        start_unix_nanos: 123,
        start_tsc: 500,
        ..RunInfo::default()
    });
    log.reason(ReasonInfo {
        reason: Reason::StillRunning,
        function: 2,
        tid: 11,
        start_tsc: 2000,
        duration_ticks: 1_999_000,
        ..ReasonInfo::default()
    });
    log.function(1, "app::serve", &[]);
    log.function(2, "app::lock", &[]);
    log.function(3, "app::tick", &[]);
    log.thread(11, "main");
    log.thread(12, "worker");
    let mut b = log.block(11, 0, 1000);
    b.enter(1, 1000);
    b.enter_args(2, 2000, &[1, 2, 3]);
    b.finish();
    let mut b = log.block(12, 0, 1500);
    b.enter(3, 1500);
    b.exit(3, 1600);
    b.finish();
    log.finish()
}

/// A recursion `open` deep on one thread, then (with `exit`) the exit of a call entered before
/// the window: `fdr` opens that call under the others, so `open` may not reach 2^20.
fn too_deep(open: u32, exit: bool) -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.function(1, "deep::recurse", &[]);
    let mut b = log.block(7, 0, 0);
    for i in 0..u64::from(open) {
        b.enter(1, i + 1);
    }
    if exit {
        b.exit(2, u64::from(open) + 1);
    }
    b.finish();
    log.finish()
}

#[test]
fn every_synthetic_shape_gives_the_same_calls_in_one_pass_or_two() {
    let logs: Vec<(&str, Vec<u8>)> = vec![
        ("deep", shape("deep", 300)),
        ("deep-1100", shape("deep", 1100)),
        ("ring", shape("ring", 300)),
        ("siblings", shape("siblings", 300)),
        ("siblings-past-4096", shape("siblings", 5000)),
        ("functions", shape("functions", 300)),
        ("hostile", shape("hostile", 300)),
        ("backwards", shape("backwards", 300)),
        ("args", shape("args", 300)),
        ("tasks", shape("tasks", 30)),
        ("culled", shape("culled", 300)),
        ("bench", bench_like(6000, 4, 4096, false)),
        ("bench-ring", bench_like(6000, 3, 2048, true)),
        ("basic", basic_log()),
        ("basic-no-wrap", basic_log_with_gap(0)),
        ("midstack", midstack_log()),
        ("midstack-led", midstack_log_led_by(21)),
        ("triggered", triggered_log()),
        ("tasks-fixture", tasks_log()),
        ("culled-fixture", culled_log()),
        ("hung", hung()),
        ("empty", LogBuilder::new(1_000_000_000).finish()),
    ];
    for (name, bytes) in &logs {
        let w = same_either_way(name, bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!w.calls.is_empty() || *name == "empty", "{name}: no calls");
    }
}

#[test]
fn the_shapes_hold_the_calls_they_were_made_of() {
    // A recursion 300 deep and its leaf: 301 calls, each the caller of the next.
    let w = same_either_way("deep", &shape("deep", 300)).unwrap();
    assert_eq!(w.calls.len(), 301);
    assert!(w
        .calls
        .iter()
        .enumerate()
        .all(|(i, c)| c.parent == i.checked_sub(1)));
    assert!(w.calls.iter().all(|c| !c.inferred_start && !c.open_at_end));
    // The same seen from a ring window that holds only the leaf and the exits: the 300
    // recursive calls inferred at the window start, outermost first, the leaf under them.
    let w = same_either_way("ring", &shape("ring", 300)).unwrap();
    assert_eq!(w.calls.len(), 301);
    assert!(w
        .calls
        .iter()
        .enumerate()
        .all(|(i, c)| c.parent == i.checked_sub(1)));
    assert!(w.calls[..300]
        .iter()
        .all(|c| c.inferred_start && c.start_tsc == 1000));
    assert_eq!(w.function_name(w.calls[300].function), "deep::leaf");
    assert!(!w.calls[300].inferred_start);
    // The outermost lasts until the last exit, each one in it 10 ticks less.
    assert_eq!(w.calls[0].end_tsc - w.calls[1].end_tsc, 10);
    // The hung call: open at the end, with its arguments, under the call that made it.
    let w = same_either_way("hung", &hung()).unwrap();
    let lock = w
        .calls
        .iter()
        .find(|c| w.function_name(c.function) == "app::lock")
        .unwrap();
    assert!(lock.open_at_end && !lock.inferred_start);
    assert_eq!(lock.args, [1, 2, 3]);
    assert_eq!(
        w.function_name(w.calls[lock.parent.unwrap()].function),
        "app::serve"
    );
    assert_eq!((lock.start_tsc, lock.end_tsc), (2000, 2_001_000));
}

#[test]
fn stacks_past_the_limit_are_refused_either_way_inferred_calls_included() {
    const MAX: u32 = 1 << 20;
    for (open, exit, refused) in [
        (MAX + 1, false, true),
        (MAX, true, true),
        (MAX - 1, true, false),
    ] {
        let bytes = too_deep(open, exit);
        let w = same_either_way("deep", &bytes);
        assert_eq!(w.is_err(), refused, "{open} deep, exit {exit}");
        if let Ok(w) = w {
            assert_eq!(w.calls.len(), MAX as usize);
        }
    }
}

/// The logs the tests keep, and any in `FDR_ONE_ENGINE_LOGS`.
fn recorded() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("tests/fuzz_inputs")];
    if let Some(d) = std::env::var_os("FDR_ONE_ENGINE_LOGS") {
        dirs.push(PathBuf::from(d));
    }
    let mut logs = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "fdr") {
                logs.push(p);
            }
        }
    }
    logs.sort();
    logs
}

#[test]
fn recorded_logs_give_the_same_calls_in_one_pass_or_two() {
    let logs = recorded();
    assert!(!logs.is_empty(), "the fuzz inputs are in the repository");
    for p in logs {
        let bytes = std::fs::read(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        // Hostile inputs among them are refused, the same way both times.
        let _ = same_either_way(&name, &bytes);
    }
}
