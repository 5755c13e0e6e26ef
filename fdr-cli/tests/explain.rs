//! `fdr explain`: why a call was slow, on synthetic logs whose every duration is chosen (at
//! 1 GHz, ticks are nanoseconds): the excess over the usual followed down to the culprit (one
//! and three levels down), an excess shared by two callees, one in the call's own time, where
//! the time went from the reason record, an async task's split, a crash's open stacks, a
//! baseline log and profile, the JSON keys, `fdr info`'s last line, and the errors.

mod common;

use common::{fdr, temp_dir, write_log};
use fdr_format::{Reason, ReasonInfo, RunInfo};
use fdr_testkit::synth::{BlockBuilder, LogBuilder};
use serde_json::Value;

/// A call: function, start, end, and the calls it made.
struct C(u32, u64, u64, Vec<C>);

/// Writes `c` and the calls under it, in order.
fn emit(b: &mut BlockBuilder<'_>, c: &C) {
    b.enter(c.0, c.1);
    for k in &c.3 {
        emit(b, k);
    }
    b.exit(c.0, c.2);
}

const HANDLE: u32 = 1;
const PARSE: u32 = 2;
const LOOKUP: u32 = 3;
const RENDER: u32 = 4;
const QUERY: u32 = 5;
const FETCH: u32 = 6;
const DECODE: u32 = 7;

/// A log at 1 GHz with the functions of these tests, thread 11 (main) and `reason`.
fn log_with(reason: Option<ReasonInfo>) -> LogBuilder {
    let mut log = LogBuilder::new(1_000_000_000);
    log.leading_block(11, 1_000);
    log.run(RunInfo {
        ticks_per_second: 1_000_000_000,
        program: "app".into(),
        pid: 1,
        ..RunInfo::default()
    });
    if let Some(r) = reason {
        log.reason(r);
    }
    for (id, name) in [
        (HANDLE, "app::handle"),
        (PARSE, "app::parse"),
        (LOOKUP, "app::lookup"),
        (RENDER, "app::render"),
        (QUERY, "app::query"),
        (FETCH, "app::fetch"),
        (DECODE, "app::decode"),
    ] {
        log.function(id, name, &[]);
    }
    log.thread(11, "main");
    log.thread(12, "pool");
    log
}

/// A slow-call reason for `function` on thread 11 from `start` for `ticks`.
fn slow(function: u32, start: u64, ticks: u64) -> ReasonInfo {
    ReasonInfo {
        reason: Reason::SlowCall,
        function,
        tid: 11,
        start_tsc: start,
        duration_ticks: ticks,
        limit_ticks: 1_000_000,
        ..ReasonInfo::default()
    }
}

/// A request of `app::handle` at `s`: parse, lookup and render of `ns` nanoseconds each, with
/// 5 µs before each and `own` more after the last: a usual one (10, 50 and 20 µs, nothing
/// after) takes 95 µs, 15 µs of it its own.
fn request(s: u64, ns: [u64; 3], own: u64) -> C {
    let mut at = s;
    let mut kids = Vec::new();
    for (id, d) in [PARSE, LOOKUP, RENDER].into_iter().zip(ns) {
        at += 5_000;
        kids.push(C(id, at, at + d, vec![]));
        at += d;
    }
    C(HANDLE, s, at + own, kids)
}

const USUAL: [u64; 3] = [10_000, 50_000, 20_000];

/// A usual request at `s`.
fn usual(s: u64) -> C {
    request(s, USUAL, 0)
}

/// Requests every 100 ms on thread 11, the fourth (at [`SLOW_AT`]) `slow`, the others usual.
fn requests(reason: Option<ReasonInfo>, slow: C) -> Vec<u8> {
    let mut log = log_with(reason);
    let mut b = log.block(11, 0, 1_000);
    for i in 0..5 {
        let s = 1_000 + i * 100_000_000;
        emit(&mut b, &if s == SLOW_AT { slow.clone() } else { usual(s) });
    }
    b.finish();
    log.finish()
}

impl Clone for C {
    fn clone(&self) -> C {
        C(self.0, self.1, self.2, self.3.clone())
    }
}

/// The slow request's start: +300 ms.
const SLOW_AT: u64 = 1_000 + 3 * 100_000_000;

/// The slow request of most tests: its lookup takes 20 ms (20.045 ms in all).
fn slow_lookup() -> C {
    request(SLOW_AT, [10_000, 20_000_000, 20_000], 0)
}

/// A trigger's reason for `c` (on thread 11).
fn fired_by(c: &C) -> ReasonInfo {
    slow(c.0, c.1, c.2 - c.1)
}

fn json(args: &[&str]) -> Value {
    let out = fdr(args).unwrap_or_else(|e| panic!("fdr {args:?}: {e}"));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// A share read from JSON is `x` (serde_json reads a float to within a unit in the last place).
fn close(v: &Value, x: f64) {
    let got = v.as_f64().unwrap_or_else(|| panic!("{v} is no number"));
    assert!((got - x).abs() < 1e-12, "{got} is not {x}");
}

/// The functions of a JSON explanation's path.
fn path(v: &Value) -> Vec<&str> {
    v["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["function"].as_str().unwrap())
        .collect()
}

#[test]
fn the_culprit_one_level_down_is_the_slow_callee_among_normal_siblings() {
    let dir = temp_dir("explain-one");
    let slow = slow_lookup();
    let log = write_log(&dir, "one.fdr", &requests(Some(fired_by(&slow)), slow));
    let text = fdr(&["explain", &log]).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..2],
        [
            "app::handle: 20.0 ms, usually 95.0 µs; 100% of the excess is in app::lookup \
             (20.0 ms, usually 50.0 µs)",
            "app::lookup: 20.0 ms, usually 50.0 µs; 100% of the excess is app::lookup's own time",
        ],
        "{text}"
    );
    assert!(
        text.contains(
            "  call      app::handle on thread 11 (main), started at +300 ms, lasted 20.0 ms; \
             it fired the trigger (slow call, limit 1.00 ms)\n  usual     95.0 µs: the median \
             of the 4 other calls of app::handle in the window\n  excess    19.9 ms, followed \
             down through the callee that holds more than half of it:\n"
        ),
        "{text}"
    );
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(path(&v), ["app::handle", "app::lookup"]);
    // 20.045 ms against 95 µs; the lookup's 20 ms against its 50 µs: the same 19.95 ms.
    assert_eq!(v["function"], "app::handle");
    assert_eq!(v["duration_ns"], 20_045_000);
    assert_eq!(
        (v["usual_ns"].as_u64(), v["usual_of"].as_u64()),
        (Some(95_000), Some(4))
    );
    assert_eq!(v["excess_ns"], 19_950_000);
    assert_eq!(v["culprit"], "app::lookup");
    assert_eq!(v["culprit_duration_ns"], 20_000_000);
    assert_eq!(v["culprit_usual_ns"], 50_000);
    assert_eq!(v["culprit_excess_ns"], 19_950_000);
    assert_eq!(v["share"].as_f64(), Some(1.0));
    assert_eq!(v["verdict"], "own_time");
    assert_eq!(v["own_share"].as_f64(), Some(1.0));
    assert_eq!(
        (v["thread"].as_i64(), v["start_ns"].as_u64()),
        (Some(11), Some(300_000_000))
    );
    assert_eq!(v["trigger"], true);
    // The siblings were as usual: nothing of the excess in them.
    assert_eq!(v["path"][1]["start_ns"], 300_020_000);
}

/// `app::handle` calls parse, then query, which calls fetch then render, and fetch calls lookup
/// then decode: 5 µs between calls and after the last. Usually parse takes 10 µs and decode
/// 40 µs.
fn deep(s: u64, parse: u64, decode: u64) -> C {
    let p = C(PARSE, s + 5_000, s + 5_000 + parse, vec![]);
    let q = p.2 + 5_000;
    let lookup = C(LOOKUP, q + 10_000, q + 20_000, vec![]);
    let dec = C(DECODE, lookup.2 + 5_000, lookup.2 + 5_000 + decode, vec![]);
    let fetch = C(FETCH, q + 5_000, dec.2 + 5_000, vec![lookup, dec]);
    let render = C(RENDER, fetch.2 + 5_000, fetch.2 + 25_000, vec![]);
    let query = C(QUERY, q, render.2 + 5_000, vec![fetch, render]);
    C(HANDLE, s, query.2 + 5_000, vec![p, query])
}

fn dur(c: &C) -> u64 {
    c.2 - c.1
}

#[test]
fn the_culprit_three_levels_down_is_followed_through_each_callee_holding_most() {
    let dir = temp_dir("explain-three");
    // The slow request's decode takes 10 ms, and its parse 110 µs (100 µs more than usual).
    let slow = deep(SLOW_AT, 110_000, 10_000_000);
    let normal = deep(0, 10_000, 40_000);
    let mut log = log_with(Some(fired_by(&slow)));
    let mut b = log.block(11, 0, 1_000);
    for i in 0..5 {
        let s = 1_000 + i * 100_000_000;
        emit(
            &mut b,
            &if s == SLOW_AT {
                slow.clone()
            } else {
                deep(s, 10_000, 40_000)
            },
        );
    }
    b.finish();
    let log = write_log(&dir, "three.fdr", &log.finish());
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(
        path(&v),
        ["app::handle", "app::query", "app::fetch", "app::decode"]
    );
    let excess = dur(&slow) - dur(&normal);
    assert_eq!(excess, 10_060_000);
    assert_eq!(v["excess_ns"], excess);
    assert_eq!(v["usual_ns"], dur(&normal));
    // decode: 10 ms against 40 µs; query and fetch hold the same 9.96 ms, 99% of the excess.
    assert_eq!(v["culprit"], "app::decode");
    assert_eq!(v["culprit_excess_ns"], 9_960_000);
    close(&v["share"], 9_960_000.0 / 10_060_000.0);
    let steps = v["path"].as_array().unwrap();
    for s in &steps[1..] {
        assert_eq!(s["excess_ns"], 9_960_000, "{s}");
    }
    assert_eq!(v["verdict"], "own_time");
    let text = fdr(&["explain", &log]).unwrap();
    assert!(
        text.starts_with(
            "app::handle: 10.2 ms, usually 125 µs; 99% of the excess is in app::decode \
             (10.0 ms, usually 40.0 µs)\napp::decode: 10.0 ms, usually 40.0 µs; 100% of the \
             excess is app::decode's own time\n"
        ),
        "{text}"
    );
    // The way down, indented by depth, each step's share of the call's excess.
    assert!(text.contains("   99%      app::fetch\n"), "{text}");
    assert!(text.contains("   99%        app::decode\n"), "{text}");
}

#[test]
fn an_excess_two_callees_share_names_both_with_their_shares() {
    let dir = temp_dir("explain-shared");
    // Parse and lookup each 4 ms more than usual, 2 ms more of its own time: 10 ms over.
    let slow = request(SLOW_AT, [4_010_000, 4_050_000, 20_000], 2_000_000);
    let log = write_log(&dir, "shared.fdr", &requests(Some(fired_by(&slow)), slow));
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(v["excess_ns"], 10_000_000);
    assert_eq!(path(&v), ["app::handle"]);
    assert_eq!(v["culprit"], "app::handle");
    assert_eq!(v["share"].as_f64(), Some(1.0));
    assert_eq!(v["verdict"], "shared");
    assert_eq!(v["own_share"].as_f64(), Some(0.2));
    let shared: Vec<(&str, u64, f64)> = v["shared"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["function"].as_str().unwrap(),
                s["excess_ns"].as_u64().unwrap(),
                s["share"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shared,
        [
            ("app::parse", 4_000_000, 0.4),
            ("app::lookup", 4_000_000, 0.4)
        ]
    );
    let text = fdr(&["explain", &log]).unwrap();
    assert_eq!(
        text.lines().next(),
        Some(
            "app::handle: 10.1 ms, usually 95.0 µs; the excess is shared among its callees: \
             app::parse 40%, app::lookup 40% (its own time 20%)"
        ),
        "{text}"
    );
}

#[test]
fn an_excess_in_the_call_s_own_time_says_so() {
    let dir = temp_dir("explain-own");
    // 10 ms more of its own time, and its lookup 1 ms more: 10/11 of the excess its own.
    let slow = request(SLOW_AT, [10_000, 1_050_000, 20_000], 10_000_000);
    let log = write_log(&dir, "own.fdr", &requests(Some(fired_by(&slow)), slow));
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(v["excess_ns"], 11_000_000);
    assert_eq!(v["culprit"], "app::handle");
    assert_eq!(v["verdict"], "own_time");
    close(&v["own_share"], 10_000_000.0 / 11_000_000.0);
    assert_eq!(v["shared"], serde_json::json!([]));
    let text = fdr(&["explain", &log]).unwrap();
    assert_eq!(
        text.lines().next(),
        Some("app::handle: 11.1 ms, usually 95.0 µs; 91% of the excess is app::handle's own time"),
        "{text}"
    );
}

#[test]
fn where_the_time_went_comes_from_the_reason_record_for_the_trigger_s_call_only() {
    let dir = temp_dir("explain-where");
    let slow = slow_lookup();
    let measured = ReasonInfo {
        cpu_wait_ns: Some(5_000_000),
        off_cpu_ns: Some(3_000_000),
        ..fired_by(&slow)
    };
    let log = write_log(&dir, "m.fdr", &requests(Some(measured), slow.clone()));
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(v["measured"], "whole_call");
    // Running: 20.045 ms less 5 ms waiting for a CPU and 3 ms off it.
    assert_eq!(
        (
            v["running_ns"].as_u64(),
            v["cpu_wait_ns"].as_u64(),
            v["off_cpu_ns"].as_u64()
        ),
        (Some(12_045_000), Some(5_000_000), Some(3_000_000))
    );
    let text = fdr(&["explain", &log]).unwrap();
    assert!(
        text.contains(
            "\n  time      on a CPU 12.0 ms, waiting for a CPU 5.00 ms, off the CPU 3.00 ms \
             (blocked: a syscall, a lock, a sleep, a page fault)\n"
        ),
        "{text}"
    );

    // Only the wait for a CPU, from when the watchdog looked: a lower bound, no running time.
    let part = ReasonInfo {
        cpu_wait_ns: Some(4_000_000),
        ..fired_by(&slow)
    };
    let log = write_log(&dir, "p.fdr", &requests(Some(part), slow.clone()));
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(v["measured"], "cpu_wait_at_least");
    assert_eq!(
        (
            v["running_ns"].as_u64(),
            v["cpu_wait_ns"].as_u64(),
            v["off_cpu_ns"].as_u64()
        ),
        (None, Some(4_000_000), None)
    );
    assert!(fdr(&["explain", &log]).unwrap().contains(
        "\n  time      waiting for a CPU 4.00 ms at least (counted from when fdr's watchdog"
    ));

    // Neither: not measured, and why that may be.
    let log = write_log(&dir, "n.fdr", &requests(Some(fired_by(&slow)), slow));
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(v["measured"], "not_measured");
    assert_eq!(
        (
            v["running_ns"].is_null(),
            v["cpu_wait_ns"].is_null(),
            v["off_cpu_ns"].is_null()
        ),
        (true, true, true)
    );
    let text = fdr(&["explain", &log]).unwrap();
    assert!(
        text.contains("\n  time      not measured: the log's reason record holds no measure (the call ended before fdr's watchdog looked"),
        "{text}"
    );

    // Another call than the trigger's: the reason record does not describe it.
    let log = write_log(
        &dir,
        "o.fdr",
        &requests(
            Some(ReasonInfo {
                cpu_wait_ns: Some(5_000_000),
                off_cpu_ns: Some(3_000_000),
                ..fired_by(&slow_lookup())
            }),
            slow_lookup(),
        ),
    );
    let v = json(&["explain", "--format", "json", "--call", "11@+100ms", &log]);
    assert_eq!(v["start_ns"], 100_000_000);
    assert_eq!(
        (v["measured"].as_str(), v["trigger"].as_bool()),
        (Some("not_the_trigger"), Some(false))
    );
    assert!(v["running_ns"].is_null() && v["cpu_wait_ns"].is_null());
    assert!(fdr(&["explain", "--call", "11@+100ms", &log])
        .unwrap()
        .contains(
        "\n  time      not measured: fdr measures the time on and off the CPU of the call that \
         fired a trigger only\n"
    ));
}

#[test]
fn call_names_a_call_by_its_thread_and_start_as_calls_prints_them() {
    let dir = temp_dir("explain-call");
    let slow = slow_lookup();
    let log = write_log(&dir, "c.fdr", &requests(Some(fired_by(&slow)), slow));
    // `fdr calls` shows the slow request so.
    let calls = fdr(&["calls", "--top", "1", &log]).unwrap();
    assert!(
        calls.contains("1. app::handle on thread 11 (main), started at +300 ms, lasted 20.0 ms"),
        "{calls}"
    );
    for at in ["11@+300ms", "main@+300 ms", "11@300ms", "11@300000000"] {
        let v = json(&["explain", "--format", "json", "--call", at, &log]);
        assert_eq!(
            (
                v["function"].as_str(),
                v["start_ns"].as_u64(),
                v["trigger"].as_bool()
            ),
            (Some("app::handle"), Some(300_000_000), Some(true)),
            "{at}"
        );
    }
    // The lookup starts at +300.02 ms, printed +300 ms too: the longest call printed so is
    // the request; its start to the nanosecond, or --function, names the lookup.
    let v = json(&[
        "explain",
        "--format",
        "json",
        "--call",
        "11@300020000",
        &log,
    ]);
    assert_eq!(v["function"], "app::lookup");
    let v = json(&[
        "explain",
        "--format",
        "json",
        "--call",
        "11@+300ms",
        "--function",
        "lookup",
        &log,
    ]);
    assert_eq!(
        (v["function"].as_str(), v["duration_ns"].as_u64()),
        (Some("app::lookup"), Some(20_000_000))
    );
    assert_eq!(
        (v["verdict"].as_str(), v["own_share"].as_f64()),
        (Some("own_time"), Some(1.0))
    );
    // A usual request: no slower than usual.
    let v = json(&["explain", "--format", "json", "--call", "11@+100ms", &log]);
    assert_eq!(
        (v["excess_ns"].as_u64(), v["verdict"].as_str()),
        (Some(0), Some("no_excess"))
    );
    assert_eq!(
        (v["culprit"].as_str(), v["share"].as_f64()),
        (Some("app::handle"), Some(0.0))
    );
    assert!(fdr(&["explain", "--call", "11@+100ms", &log])
        .unwrap()
        .starts_with("app::handle: 95.0 µs, usually 95.0 µs; no slower than usual\n"));
}

#[test]
fn function_explains_its_slowest_calls_in_an_array() {
    let dir = temp_dir("explain-function");
    let slow = slow_lookup();
    let log = write_log(&dir, "f.fdr", &requests(None, slow));
    let v = json(&["explain", "--format", "json", "--function", "handle", &log]);
    let items = v.as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(
        (items[0]["culprit"].as_str(), items[0]["start_ns"].as_u64()),
        (Some("app::lookup"), Some(300_000_000))
    );
    let v = json(&[
        "explain",
        "--format",
        "json",
        "--function",
        "lookup",
        "--top",
        "3",
        &log,
    ]);
    let durations: Vec<u64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["duration_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(durations, [20_000_000, 50_000, 50_000]);
    // The slow one's usual leaves it out; the others' count it (the lower median of 50 µs,
    // 50 µs, 50 µs and 20 ms: 50 µs).
    assert_eq!(v[0]["usual_of"], 4);
    assert_eq!(v[1]["usual_ns"], 50_000);
    let text = fdr(&["explain", "--function", "lookup", "--top", "2", &log]).unwrap();
    assert_eq!(
        text.matches("\napp::lookup: 50.0 µs, usually 50.0 µs; no slower than usual\n")
            .count(),
        1,
        "{text}"
    );
    // A function whose calls are not in the window: nothing to explain, said plainly.
    let mut b = log_with(None);
    let mut blk = b.block(11, 0, 1_000);
    emit(&mut blk, &C(PARSE, 1_000, 2_000, vec![]));
    blk.finish();
    let only_parse = write_log(&dir, "p.fdr", &b.finish());
    assert_eq!(
        fdr(&["explain", "--function", "lookup", &only_parse]).unwrap(),
        "no call of a function matching lookup in the log\n"
    );
    assert_eq!(
        json(&[
            "explain",
            "--format",
            "json",
            "--function",
            "lookup",
            &only_parse
        ]),
        serde_json::json!([])
    );
}
