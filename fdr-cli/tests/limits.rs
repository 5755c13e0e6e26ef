//! Memory and stack use are bounded by documented limits, not by what a log says: a 100,000-deep
//! recursion, hundreds of thousands of sibling call paths, hundreds of thousands of function
//! ids, a stack that changes often under a deep prefix. Each command runs as a child process
//! whose peak memory is read from the kernel.

mod common;

use std::ffi::OsStr;
use std::path::Path;

use common::child::{run_fdr, Run};
use common::temp_dir;
use common::xml::check_well_formed;
use fdr_testkit::synth::LogBuilder;

/// The peak memory every command must stay under.
const BUDGET: u64 = 500 << 20;
/// How deep `stack` and `flame` show call paths (the documented display limit).
const MAX_SHOWN_FRAMES: usize = 1024;
const DEEPER: &str = "[calls deeper than 1024 frames]";

fn run(args: &[&str], dir: &Path) -> Run {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    run_fdr(&args, dir)
}

fn within_budget(r: &Run, what: &str) {
    r.assert_ok(what);
    assert!(
        r.peak_rss < BUDGET,
        "{what}: peak memory {} MB",
        r.peak_rss >> 20
    );
}

/// A recursion `depth` deep, 10 ns per step, on thread 7: `deep::recurse` calls itself down to
/// a `deep::leaf`. With `ring`, the entries are gone (a ring window that starts at the
/// bottom of the recursion): only the leaf and the exits remain.
fn deep_log(depth: u64, ring: bool) -> (Vec<u8>, u64) {
    let mut log = LogBuilder::new(1_000_000_000);
    log.function(1, "deep::recurse", &[]);
    log.function(2, "deep::leaf", &[]);
    log.thread(7, "deep");
    let start = 1000;
    let mut b = log.block(7, 0, start);
    let mut t = start;
    if !ring {
        for _ in 0..depth {
            b.enter(1, t);
            t += 10;
        }
    }
    b.enter(2, t);
    t += 10;
    b.exit(2, t);
    for _ in 0..depth {
        t += 10;
        b.exit(1, t);
    }
    b.finish();
    (log.finish(), t - start)
}

fn folded_total(folded: &str) -> u64 {
    folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum()
}

#[test]
fn every_command_reads_a_100000_deep_recursion_within_500_mb() {
    let dir = temp_dir("deep");
    for ring in [true, false] {
        let (bytes, span) = deep_log(100_000, ring);
        let log = dir.join(if ring { "ring.fdr" } else { "full.fdr" });
        std::fs::write(&log, &bytes).unwrap();
        let l = log.to_str().unwrap();
        let what = |cmd: &str| format!("{cmd} ({})", if ring { "ring" } else { "full" });

        let r = run(&["account", "--format", "csv", "--sort", "id", l], &dir);
        within_budget(&r, &what("account"));
        let csv = r.text();
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows.len(), 3, "{csv}");
        assert!(rows[1].starts_with("deep::recurse,1,100000,"), "{csv}");
        assert!(rows[2].starts_with("deep::leaf,2,1,10,"), "{csv}");

        let r = run(&["stack", l], &dir);
        within_budget(&r, &what("stack"));
        let text = r.text();
        // The header, MAX_SHOWN_FRAMES frames, the frame standing for the deeper calls, the notes
        // (inferred entries in the ring window, and the display limit).
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.len(),
            1 + MAX_SHOWN_FRAMES + 1 + 1 + usize::from(ring),
            "{}",
            &text[..2000]
        );
        assert!(
            lines[MAX_SHOWN_FRAMES + 1].ends_with(&format!(
                "{:indent$}{DEEPER}{}",
                "",
                if ring { " *" } else { "" },
                indent = 2 * MAX_SHOWN_FRAMES
            )),
            "{}",
            lines[MAX_SHOWN_FRAMES + 1]
        );
        assert!(lines.last().unwrap().contains(DEEPER), "the note");

        let r = run(&["stack", "--format", "folded", l], &dir);
        within_budget(&r, &what("stack --format folded"));
        let folded = r.text();
        assert_eq!(folded_total(&folded), span, "every ns is in one line");
        let deepest = folded.lines().max_by_key(|l| l.len()).unwrap();
        assert_eq!(
            deepest.matches(';').count(),
            MAX_SHOWN_FRAMES,
            "{}",
            &deepest[..200]
        );
        // The frame at the display depth holds the whole call made there, deeper calls included.
        let d = MAX_SHOWN_FRAMES as u64;
        let merged = if ring { span - 10 * d } else { span - 20 * d };
        assert!(
            deepest.ends_with(&format!(";deep::recurse;{DEEPER} {merged}")),
            "{}",
            &deepest[deepest.len() - 200..]
        );

        for chart in [false, true] {
            let svg = dir.join("deep.svg");
            let mut args = vec!["flame", l, "-o", svg.to_str().unwrap()];
            if chart {
                args.push("--chart");
            }
            let r = run(&args, &dir);
            within_budget(&r, &what(if chart { "flame --chart" } else { "flame" }));
            let s = std::fs::read_to_string(&svg).unwrap();
            check_well_formed(&s).unwrap();
            assert!(s.contains(DEEPER), "chart {chart}");
        }

        let json = dir.join("deep.json");
        let r = run(
            &[
                "convert",
                l,
                "--format",
                "chrome",
                "-o",
                json.to_str().unwrap(),
            ],
            &dir,
        );
        within_budget(&r, &what("convert chrome"));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let count = |ph: &str| events.iter().filter(|e| e["ph"] == ph).count();
        // Every call: a complete event, or a begin and an end for an inferred entry.
        let x = count("X");
        assert_eq!((count("B") + x, count("E") + x), (100_001, 100_001));

        let fxt = dir.join("deep.fxt");
        let r = run(
            &["convert", l, "--format", "fxt", "-o", fxt.to_str().unwrap()],
            &dir,
        );
        within_budget(&r, &what("convert fxt"));
        let trace = common::fxt::parse(&std::fs::read(&fxt).unwrap()).unwrap();
        assert_eq!(common::fxt::spans(&trace).unwrap().len(), 100_001);
    }
}

/// `main` calling `n` different functions once each: `n` sibling call paths.
fn siblings_log(n: u32) -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.function(1, "app::main", &[]);
    let mut b = log.block(7, 0, 0);
    b.enter(1, 0);
    let mut t = 0;
    for i in 0..n {
        b.enter(10 + i, t + 1);
        b.exit(10 + i, t + 4);
        t += 5;
    }
    b.exit(1, t + 1);
    b.finish();
    log.finish()
}

/// Call paths the trie keeps (the documented `MAX_CALL_PATHS`, root included).
const MAX_CALL_PATHS: usize = 1 << 18;

/// A million sibling call paths: the first 262,142 get a node each (with the root and `main`,
/// the trie's limit), the rest are merged into one node under `main`. Sibling lookups must not
/// scan the siblings (that made this quadratic: hours in a debug build, so on such code the
/// child process hits its CPU-time guard); the assertions are on exact counts and memory.
#[test]
fn a_million_sibling_paths_are_counted_exactly_in_bounded_memory() {
    let dir = temp_dir("siblings");
    let n = 1_000_000u32;
    let kept = MAX_CALL_PATHS as u32 - 2;
    let log = dir.join("siblings.fdr");
    std::fs::write(&log, siblings_log(n)).unwrap();
    let l = log.to_str().unwrap();
    let r = run(&["stack", "--format", "folded", l], &dir);
    within_budget(&r, "stack --format folded");
    let folded = r.text();
    let lines: Vec<&str> = folded.lines().collect();
    assert_eq!(lines.len(), 1 + kept as usize + 1);
    assert_eq!(lines[0], "app::main 2000001", "main's self time");
    assert_eq!(lines[1], "app::main;[more call paths, merged] 2213574");
    for i in [0, 1, kept / 2, kept - 1] {
        let line = format!("app::main;#{} 3", 10 + i);
        assert!(lines.contains(&line.as_str()), "{line}");
    }
    assert!(!lines.contains(&format!("app::main;#{} 3", 10 + kept).as_str()));
    assert_eq!(folded_total(&folded), 5 * u64::from(n) + 1);
    let r = run(&["stack", l], &dir);
    within_budget(&r, "stack");
    let text = r.text();
    assert_eq!(text.lines().count(), 1 + 1 + kept as usize + 1);
    assert!(
        text.lines()
            .nth(2)
            .unwrap()
            .starts_with("  737858    2.21 ms    2.21 ms"),
        "{}",
        text.lines().nth(2).unwrap()
    );
    let svg = dir.join("s.svg");
    for chart in [false, true] {
        let mut args = vec!["flame", l, "-o", svg.to_str().unwrap()];
        if chart {
            args.push("--chart");
        }
        let r = run(&args, &dir);
        within_budget(&r, "flame");
        let s = std::fs::read_to_string(&svg).unwrap();
        check_well_formed(&s).unwrap();
        assert!(s.contains("app::main"));
    }
}

/// `n` functions with ids from `first`, each called once for about a millisecond.
fn many_functions_log(n: u32, first: u32) -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    let mut b = log.block(7, 0, 0);
    let mut t = 0u64;
    for i in 0..n {
        b.enter(first + i, t);
        b.exit(first + i, t + 1_000_000 + u64::from(i));
        t += 2_000_000;
    }
    b.finish();
    log.finish()
}

#[test]
fn accounting_a_quarter_million_function_ids_takes_little_memory() {
    let dir = temp_dir("many-functions");
    let n = 1 << 18;
    let log = dir.join("many.fdr");
    // 4 MiB: crafted, huge ids.
    std::fs::write(&log, many_functions_log(n, 1 << 27)).unwrap();
    let r = run(
        &[
            "account",
            "--format",
            "csv",
            "--sort",
            "id",
            log.to_str().unwrap(),
        ],
        &dir,
    );
    r.assert_ok("account");
    assert!(
        r.peak_rss < 200 << 20,
        "peak memory {} MB",
        r.peak_rss >> 20
    );
    let csv = r.text();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), n as usize + 1);
    assert_eq!(
        rows[1],
        "#134217728,134217728,1,1000000,1000000,1000000,1000000,1000000,1000000,1000000,,0,0,0"
    );
    assert_eq!(
        rows[n as usize],
        "#134479871,134479871,1,1262143,1262143,1262143,1262143,1262143,1262143,1262143,,0,0,0"
    );
}

#[test]
fn more_function_ids_than_the_limit_is_a_clear_error() {
    let dir = temp_dir("too-many-functions");
    let log = dir.join("too-many.fdr");
    std::fs::write(&log, many_functions_log((1 << 20) + 1, 1 << 20)).unwrap();
    let l = log.to_str().unwrap();
    for cmd in ["account", "info"] {
        let r = run(&[cmd, l], &dir);
        assert_eq!(r.code, Some(1), "{cmd}: {r:?}");
        assert!(r.peak_rss < BUDGET, "{cmd}: peak {} MB", r.peak_rss >> 20);
        assert_eq!(
            r.stderr,
            format!(
                "fdr: {l}: the log's calls use more than 1048576 distinct function ids, \
                 fdr's limit for one log (is the log corrupt?)\n"
            ),
            "{cmd}"
        );
    }
}

/// A stack 200 frames deep (names of 100 characters) under which a leaf is called 200,000
/// times: the path changes 400,000 times under a long prefix.
fn busy_deep_log() -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    for id in 1..=201u32 {
        log.function(id, &format!("app::{:0>95}", id), &[]);
    }
    let mut b = log.block(7, 0, 0);
    let mut t = 0;
    for id in 1..=200u32 {
        b.enter(id, t);
        t += 1;
    }
    for _ in 0..200_000 {
        b.enter(201, t);
        b.exit(201, t + 3);
        t += 5;
    }
    for id in (1..=200u32).rev() {
        b.exit(id, t);
        t += 1;
    }
    b.finish();
    log.finish()
}

#[test]
fn a_flame_chart_of_a_busy_deep_stack_stays_within_500_mb() {
    let dir = temp_dir("busy-chart");
    let log = dir.join("busy.fdr");
    std::fs::write(&log, busy_deep_log()).unwrap();
    let svg = dir.join("busy.svg");
    let r = run(
        &[
            "flame",
            "--chart",
            log.to_str().unwrap(),
            "-o",
            svg.to_str().unwrap(),
        ],
        &dir,
    );
    within_budget(&r, "flame --chart");
    let s = std::fs::read_to_string(&svg).unwrap();
    check_well_formed(&s).unwrap();
    assert!(
        s.contains(&format!("app::{:0>95}", 201)),
        "the leaf is drawn"
    );
}
