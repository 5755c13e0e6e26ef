//! `fdr diff BEFORE AFTER` (issue 12): a log against itself changes nothing; one function made
//! slower comes first, alone; functions in one log only are listed as such.

mod common;

use common::{basic_log, fdr, golden, temp_dir, write_log};
use fdr_testkit::synth::LogBuilder;
use serde_json::Value;

/// `rounds` times on one thread: `app::a` for 100 ns, `app::b` for `b` ns, `app::c` for
/// 100 ns; with `extra`, an `app::d` too.
fn sequence(b: u64, extra: bool) -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    // Ids differ from one build to the next: functions are matched by name.
    let base = if extra { 10 } else { 1 };
    for (i, n) in ["app::a", "app::b", "app::c", "app::d"].iter().enumerate() {
        log.function(base + i as u32, n, &[]);
    }
    let mut blk = log.block(1, 0, 0);
    let mut t = 0;
    for _ in 0..20 {
        for (id, d) in [(base, 100), (base + 1, b), (base + 2, 100)] {
            blk.enter(id, t);
            blk.exit(id, t + d);
            t += d + 10;
        }
        if extra {
            blk.enter(base + 3, t);
            blk.exit(base + 3, t + 5);
            t += 15;
        }
    }
    blk.finish();
    log.finish()
}

#[test]
fn a_log_against_itself_reports_no_change() {
    let dir = temp_dir("diff-self");
    let log = write_log(&dir, "basic.fdr", &basic_log());
    let json = fdr(&["diff", "--format", "json", &log, &log]).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(rows.len(), 7);
    for r in &rows {
        assert_eq!(r["change_total_ns"], 0, "{r}");
        assert_eq!(r["before"], r["after"], "{r}");
        assert!(r["before"].is_object(), "{r}");
    }
    let text = fdr(&["diff", &log, &log]).unwrap();
    assert!(
        text.lines()
            .skip(1)
            .take(7)
            .all(|l| l.trim_start().starts_with("0 ns")),
        "{text}"
    );
}

#[test]
fn one_function_made_slower_comes_first_alone() {
    let dir = temp_dir("diff-slower");
    let before = write_log(&dir, "before.fdr", &sequence(100, false));
    let after = write_log(&dir, "after.fdr", &sequence(150, true));
    let text = fdr(&["diff", &before, &after])
        .unwrap()
        .replace(&before, "<before>")
        .replace(&after, "<after>");
    golden("diff.txt", &text);
    let json = fdr(&["diff", "--format", "json", &before, &after]).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["function"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app::b", "app::d", "app::a", "app::c"]);
    let b = &rows[0];
    assert_eq!(b["change_total_ns"], 20 * 50);
    assert_eq!(
        b["before"],
        serde_json::json!({"count": 20, "p50_ns": 100, "p99_ns": 100, "total_ns": 2000, "self_ns": 2000})
    );
    assert_eq!(b["after"]["total_ns"], 3000);
    // In one log only.
    assert_eq!(rows[1]["before"], Value::Null);
    assert_eq!(rows[1]["change_total_ns"], 100);
    assert!(text.contains("app::d (only after)"), "{text}");
    for r in &rows[2..] {
        assert_eq!(r["change_total_ns"], 0);
    }
    let mut keys: Vec<&str> = rows[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(keys, ["after", "before", "change_total_ns", "function"]);
    // The other way round: faster, and d only before.
    let json = fdr(&["diff", "--format", "json", &after, &before]).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (
            rows[0]["function"].as_str(),
            rows[0]["change_total_ns"].as_i64()
        ),
        (Some("app::b"), Some(-1000))
    );
    assert_eq!(rows[1]["after"], Value::Null);
}
