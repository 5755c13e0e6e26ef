//! Calls still running when the window was written (a hang, the main loop, the call that fired
//! a trigger) last until the log was taken (`RunInfo::end_tsc`), not until the thread's last
//! record: a hung thread's last record is the entry of the call that hangs (issue 21).

mod common;

use common::{fdr, temp_dir, write_log};
use fdr_cli::synth::LogBuilder;
use fdr_format::{ClockSource, Mode, RunInfo};
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
    std::fs::remove_dir_all(dir).ok();
}
