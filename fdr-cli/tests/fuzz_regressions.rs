//! What fuzzing (`scripts/fuzz`) found, kept as tests: each finding's input in
//! `tests/fuzz_inputs/` goes through every command with the checks the `commands` fuzz target
//! makes, and each is also reproduced by a log built here with its exact expected output.

mod common;

use std::path::Path;

use common::{fdr, temp_dir, write_log};
use fdr_testkit::synth::LogBuilder;

/// The `commands` fuzz target's checks, on a log at `path`.
fn every_command_is_clean(path: &str) {
    common::fuzz_check::every_command_is_clean(Path::new(path));
}

#[test]
fn every_fuzzing_finding_goes_through_every_command_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_inputs");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty());
    for input in inputs {
        every_command_is_clean(input.to_str().unwrap());
    }
}

/// Found by the `commands` target: a call that lasts 2^63 ticks or more lands in the last
/// bucket of `stack`'s power-of-two histograms, whose upper bound for the header was computed
/// as `1 << 64`: a panic (overflow) in debug builds, a range ending at "0 ns" in release.
#[test]
fn stack_shows_the_histogram_range_of_a_call_lasting_2_63_ticks() {
    let mut log = LogBuilder::new(1_000_000_000);
    log.function(1, "app::forever", &[]);
    log.function(2, "app::quick", &[]);
    let mut b = log.block(7, 0, 0);
    b.enter(1, 0);
    b.enter(2, 10);
    b.exit(2, 13);
    b.exit(1, (1 << 63) + 5);
    b.finish();
    let dir = temp_dir("fuzz-2-63");
    let path = write_log(&dir, "long.fdr", &log.finish());
    let spark_width = 63; // buckets 2 (2..3 ticks) to 64 (2^63 and more)
    let header = format!(
        "   calls      total       self  {:<spark_width$}  call path",
        "2 ns..18446744074 s"
    );
    let out = fdr(&["stack", &path]).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], header);
    assert_eq!(lines.len(), 3, "{out}");
    // One column per bucket: the long call in the last, the quick one in the first.
    let gap = " ".repeat(spark_width - 1);
    assert_eq!(
        lines[1],
        format!("       1 9223372037 s 9223372037 s  {gap}█  app::forever")
    );
    assert_eq!(
        lines[2],
        format!("       1       3 ns       3 ns  █{gap}    app::quick")
    );
    every_command_is_clean(&path);
}

/// Found by the `commands` target: the renderer adds the counts of all of a flame graph's or
/// chart's lines into one `u64`, and a log whose calls add up to 2^64 ns or more overflowed it
/// (a panic in debug builds, a garbled picture in release). Now every count is divided by one
/// factor and the subtitle says by how much.
#[test]
fn a_flame_of_calls_adding_up_past_2_64_ns_is_drawn_to_scale() {
    // 4 ns per tick: two calls of 2^61 ticks are 2^63 ns each, 2^64 ns in all.
    let mut log = LogBuilder::new(250_000_000);
    log.function(1, "app::first", &[]);
    log.function(2, "app::second", &[]);
    let mut b = log.block(7, 0, 0);
    b.enter(1, 0);
    b.exit(1, 1 << 61);
    b.enter(2, 1 << 61);
    b.exit(2, 1 << 62);
    b.finish();
    let dir = temp_dir("fuzz-flame-2-64");
    let path = write_log(&dir, "centuries.fdr", &log.finish());
    for chart in [false, true] {
        let mut args = vec!["flame", &path, "-o", "-"];
        if chart {
            args.insert(1, "--chart");
        }
        let svg = fdr(&args).unwrap_or_else(|e| panic!("chart {chart}: {e}"));
        assert!(
            svg.contains("so every width is in units of 3 ns"),
            "chart {chart}: no note of the scale in {}",
            &svg[..svg.len().min(2000)]
        );
        assert!(svg.contains("app::first") && svg.contains("app::second"));
    }
    every_command_is_clean(&path);
}

/// Found by the `recover` fuzz target: a thread named twice with records dropped adding up
/// past 2^64, and no records of its own, overflowed `fdr info`'s sum of its losses (a panic in
/// debug builds). The sum stops at the largest count.
#[test]
fn info_adds_a_silent_thread_s_losses_without_overflow() {
    use fdr_format::{Extension, ThreadInfo};
    let mut log = LogBuilder::new(1_000_000_000);
    log.function(1, "app::work", &[]);
    for _ in 0..2 {
        log.extension(&Extension::Thread(ThreadInfo {
            tid: 9,
            name: "lost".into(),
            records_dropped: u64::MAX - 1,
        }));
    }
    let mut b = log.block(7, 0, 0);
    b.enter(1, 0);
    b.exit(1, 10);
    b.finish();
    let dir = temp_dir("fuzz-dropped-sum");
    let path = write_log(&dir, "dropped.fdr", &log.finish());
    let out = fdr(&["info", &path]).unwrap();
    let row = out
        .lines()
        .find(|l| l.contains("lost, no records"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains(&u64::MAX.to_string()), "{row}");
}
