//! Calls still running when the window was written (a hang, the main loop, the call that fired
//! a trigger) last until the log was taken (`RunInfo::end_tsc`), not until the thread's last
//! record: a hung thread's last record is the entry of the call that hangs (issue 21).

mod common;

use common::{fdr, temp_dir, write_log};
use fdr_format::{ClockSource, Mode, RunInfo};
use fdr_testkit::synth::LogBuilder;
use serde_json::Value;

/// At 1 GHz: thread 11 enters `app::serve` at 1000 and `app::lock` at 2000 and records nothing
/// more (it hangs); thread 12 runs a short call. The log was taken at 2,001,000 (2 ms).
fn hung_log() -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        clock: ClockSource::Injected,
        ticks_per_second: 1_000_000_000,
        mode: Mode::Ring,
        threshold_ns: 0,
        pid: 1,
        program: "hang".into(),
        end_tsc: 2_001_000,
        ..RunInfo::default()
    });
    log.function(1, "app::serve", &[]);
    log.function(2, "app::lock", &[]);
    log.function(3, "app::tick", &[]);
    log.thread(11, "main");
    log.thread(12, "worker");
    let mut b = log.block(11, 0, 1000);
    b.enter(1, 1000);
    b.enter(2, 2000);
    b.finish();
    let mut b = log.block(12, 0, 1500);
    b.enter(3, 1500);
    b.exit(3, 1600);
    b.finish();
    log.finish()
}

#[test]
fn a_hung_call_lasts_until_the_log_was_taken_not_0_ns() {
    let dir = temp_dir("open-calls");
    let log = write_log(&dir, "hang.fdr", &hung_log());
    let json = fdr(&["calls", "--format", "json", &log]).unwrap();
    let calls: Vec<Value> = serde_json::from_str(&json).unwrap();
    // Slowest first: serve (2 ms - 1 µs) holding lock (2 ms - 2 µs), both open.
    assert_eq!(calls[0]["function"], "app::serve");
    assert_eq!(calls[0]["duration_ns"], 2_000_000);
    assert_eq!(calls[0]["open_at_end"], true);
    let lock = &calls[0]["children"][0];
    assert_eq!(lock["function"], "app::lock");
    assert_eq!(lock["duration_ns"], 1_999_000);
    assert_eq!(lock["open_at_end"], true);
    // The worker's short call is closed and unchanged.
    let tick = calls.iter().find(|c| c["function"] == "app::tick").unwrap();
    assert_eq!(
        (tick["duration_ns"].as_u64(), tick["open_at_end"].as_bool()),
        (Some(100), Some(false))
    );
    // The Chrome timeline draws the hung call to the window's end too.
    let out = dir.join("hang.json");
    fdr(&[
        "convert",
        "--format",
        "chrome",
        "-o",
        out.to_str().unwrap(),
        &log,
    ])
    .unwrap();
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    // Times from the earliest window start (1 µs), in µs.
    let lock = events
        .iter()
        .find(|e| e["name"] == "app::lock")
        .expect("the open call");
    assert_eq!(
        (lock["ts"].as_f64(), lock["dur"].as_f64()),
        (Some(1.0), Some(1999.0))
    );
    assert_eq!(lock["args"]["open_at_end"], true);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn every_view_shows_an_open_call_as_at_least_its_time_so_far() {
    let dir = temp_dir("open-views");
    let log = write_log(&dir, "hang.fdr", &hung_log());
    // account counts open calls apart: not in count or min..p99, ≥ on max.
    let account = fdr(&["account", &log]).unwrap();
    let lines: Vec<&str> = account.lines().collect();
    assert_eq!(
        lines[0],
        "count  open        min        p50        p90        p99        max      total       self  function"
    );
    assert!(lines.contains(
        &"    0     1          -          -          -          -  ≥ 2.00 ms    2.00 ms    2.00 ms  app::lock"
    ), "{account}");
    assert!(lines.contains(
        &"    1     0     100 ns     100 ns     100 ns     100 ns     100 ns     100 ns     100 ns  app::tick"
    ), "{account}");
    let json: Vec<Value> =
        serde_json::from_str(&fdr(&["account", "--format", "json", &log]).unwrap()).unwrap();
    let lock = json.iter().find(|r| r["function"] == "app::lock").unwrap();
    assert_eq!(
        (
            &lock["count"],
            &lock["open"],
            &lock["open_max_ns"],
            &lock["total_ns"]
        ),
        (
            &Value::from(0),
            &Value::from(1),
            &Value::from(1_999_000),
            &Value::from(1_999_000)
        )
    );
    let tick = json.iter().find(|r| r["function"] == "app::tick").unwrap();
    assert_eq!(
        (&tick["count"], &tick["open"]),
        (&Value::from(1), &Value::from(0))
    );
    // calls: the lower bound and the mark, on the call and in its tree.
    let calls = fdr(&["calls", &log]).unwrap();
    assert!(calls.contains(
        "1. app::serve on thread 11 (main), started at +0 ns, lasted ≥ 2.00 ms (self 1.00 µs), \
         open: still running when the window was written\n"
    ), "{calls}");
    assert!(
        calls.contains("   ≥ 2.00 ms    2.00 ms    app::lock (open)\n"),
        "{calls}"
    );
    // replay and stack.
    let replay = fdr(&["replay", &log]).unwrap();
    assert!(
        replay.contains(" ≥ 2.00 ms    [    11] |   app::lock(); (open)\n"),
        "{replay}"
    );
    let stack = fdr(&["stack", &log]).unwrap();
    assert!(stack.contains("    app::lock (1 open)\n"), "{stack}");
    // Flame graphs draw it to the window's end.
    let folded = fdr(&["stack", "--format", "folded", &log]).unwrap();
    assert!(
        folded.contains("app::serve;app::lock 1999000\n"),
        "{folded}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_call_cut_by_to_runs_until_to_and_is_open() {
    let dir = temp_dir("open-to");
    let log = write_log(&dir, "hang.fdr", &hung_log());
    // Thread 11's window starts at 1 µs, the origin; --to 1ms is 1,001,000 ticks.
    let json = fdr(&["calls", "--to", "1ms", "--format", "json", &log]).unwrap();
    let calls: Vec<Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(calls[0]["function"], "app::serve");
    assert_eq!(calls[0]["duration_ns"], 1_000_000);
    assert_eq!(calls[0]["open_at_end"], true);
    assert_eq!(calls[0]["children"][0]["duration_ns"], 999_000);
    let account = fdr(&["account", "--to", "1ms", "--format", "json", &log]).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&account).unwrap();
    let serve = rows.iter().find(|r| r["function"] == "app::serve").unwrap();
    assert_eq!(
        (&serve["open"], &serve["open_max_ns"]),
        (&Value::from(1), &Value::from(1_000_000))
    );
    std::fs::remove_dir_all(dir).ok();
}

/// A log whose calls were all erased: the threshold was 5 µs and 1,000 calls were shorter.
fn erased_log(kept_calls: u64) -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        clock: ClockSource::Injected,
        ticks_per_second: 1_000_000_000,
        threshold_ns: 5000,
        threshold_ticks: 5000,
        pid: 1,
        program: "quick".into(),
        calls_erased: 1000,
        ..RunInfo::default()
    });
    log.function(1, "app::handle", &[]);
    log.thread(11, "main");
    let mut b = log.block(11, 0, 1000);
    for i in 0..kept_calls {
        b.enter(1, 1000 + i * 10_000);
        b.exit(1, 1000 + i * 10_000 + 6000);
    }
    b.finish();
    log.finish()
}

#[test]
fn info_says_when_the_window_is_empty_or_mostly_erased_and_names_the_threshold() {
    let dir = temp_dir("thin-window");
    let empty = write_log(&dir, "empty.fdr", &erased_log(0));
    let info = fdr(&["info", &empty]).unwrap();
    assert!(
        info.contains(
            "window      empty: no call lasted the threshold (5.00 µs), and shorter ones are \
             erased as they return (1000 erased); threshold_us=0 in FDR_OPTIONS, or \
             Config::threshold(Duration::ZERO), keeps every call\n"
        ),
        "{info}"
    );
    let thin = write_log(&dir, "thin.fdr", &erased_log(3));
    let info = fdr(&["info", &thin]).unwrap();
    assert!(
        info.contains("window      most calls were erased: 1000 shorter than the threshold (5.00 µs) against about 3 kept;"),
        "{info}"
    );
    let full = write_log(&dir, "full.fdr", &erased_log(200));
    assert!(!fdr(&["info", &full]).unwrap().contains("window      "));
    // The analysing commands say it too, as the last line of their text reports.
    let empty_note = "note: the window is empty: no call lasted the threshold (5.00 µs), and \
                      shorter ones are erased as they return (1000 erased); threshold_us=0 in \
                      FDR_OPTIONS, or Config::threshold(Duration::ZERO), keeps every call";
    for cmd in ["account", "calls", "stack", "replay"] {
        let out = fdr(&[cmd, &empty]).unwrap();
        assert_eq!(out.lines().last(), Some(empty_note), "{cmd}: {out}");
        let out = fdr(&[cmd, &thin]).unwrap();
        assert!(
            out.lines()
                .last()
                .unwrap()
                .starts_with("note: in this window, most calls were erased: 1000 shorter"),
            "{cmd}: {out}"
        );
        let out = fdr(&[cmd, &full]).unwrap();
        assert!(!out.contains("note: "), "{cmd}: {out}");
    }
    let e = fdr(&["flame", "-o", "-", &empty]).unwrap_err().to_string();
    assert!(
        e.ends_with(&format!("the log has no calls to draw ({empty_note})")),
        "{e}"
    );
    std::fs::remove_dir_all(dir).ok();
}
