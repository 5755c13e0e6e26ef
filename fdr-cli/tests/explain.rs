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

/// The keys of an explanation's JSON object, in the order written.
const KEYS: [&str; 35] = [
    "function",
    "id",
    "task",
    "thread",
    "start_ns",
    "duration_ns",
    "open_at_end",
    "inferred_start",
    "usual_ns",
    "usual_of",
    "excess_ns",
    "usual_from",
    "trigger",
    "culprit",
    "culprit_id",
    "culprit_task",
    "culprit_duration_ns",
    "culprit_usual_ns",
    "culprit_excess_ns",
    "share",
    "verdict",
    "own_share",
    "usual_calls_share",
    "shared",
    "usual_calls",
    "path",
    "measured",
    "cpu_wait_ns",
    "off_cpu_ns",
    "running_ns",
    "polls",
    "awaited_ns",
    "wake_ups",
    "scheduled_ns",
    "awaits",
];

#[test]
fn json_has_every_documented_key_and_two_readers_explain_alike() {
    let dir = temp_dir("explain-keys");
    let slow = slow_lookup();
    let log = write_log(&dir, "k.fdr", &requests(Some(fired_by(&slow)), slow));
    let out = fdr(&["explain", "--format", "json", &log]).unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    let mut expected = KEYS.to_vec();
    expected.sort_unstable();
    assert_eq!(keys, expected, "{out}");
    // Written in the documented order, one object on one line.
    let mut at = 0;
    for k in KEYS {
        let found = out[at..]
            .find(&format!("\"{k}\": "))
            .unwrap_or_else(|| panic!("{k} after {at} in {out}"));
        at += found;
    }
    assert_eq!(out.lines().count(), 1);
    // A step of the path has the keys of a call, and its share.
    let step: Vec<&String> = v["path"][0].as_object().unwrap().keys().collect();
    let mut expected: Vec<&str> = KEYS[..11].to_vec();
    expected.push("share");
    expected.sort_unstable();
    assert_eq!(step, expected);
    // Two reader threads: the same explanation.
    for args in [
        &["explain", "--format", "json", &log][..],
        &[
            "explain",
            "--format",
            "json",
            "--function",
            "*",
            "--top",
            "7",
            &log,
        ],
        &["explain", "--format", "json", "--call", "main@+300ms", &log],
    ] {
        let one = fdr(args).unwrap();
        let mut two_args = args.to_vec();
        two_args.extend(["--threads", "2"]);
        assert_eq!(fdr(&two_args).unwrap(), one, "{args:?}");
    }
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
fn an_excess_in_calls_that_took_their_usual_time_names_them() {
    let dir = temp_dir("explain-usual-calls");
    // The slow request also fetched (5 ms, as fetch always takes: on thread 12 three times),
    // which requests do not usually do: no callee is slower than usual, and its own time is
    // its usual 15 µs.
    let mut slow = usual(SLOW_AT);
    let end = slow.2;
    slow.3.push(C(FETCH, end, end + 5_000_000, vec![]));
    slow.2 = end + 5_000_000;
    let mut log = log_with(Some(fired_by(&slow)));
    let mut b = log.block(11, 0, 1_000);
    for i in 0..5 {
        let s = 1_000 + i * 100_000_000;
        emit(&mut b, &if s == SLOW_AT { slow.clone() } else { usual(s) });
    }
    b.finish();
    let mut b = log.block(12, 1, 1_000);
    for i in 0..3 {
        let s = 2_000 + i * 10_000_000;
        emit(&mut b, &C(FETCH, s, s + 5_000_000, vec![]));
    }
    b.finish();
    let log = write_log(&dir, "usual.fdr", &log.finish());
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(v["excess_ns"], 5_000_000);
    assert_eq!(
        (v["culprit"].as_str(), v["verdict"].as_str()),
        (Some("app::handle"), Some("usual_calls"))
    );
    // Its own time is at most its self time (15 µs); the rest is in the fetch.
    close(&v["usual_calls_share"], 4_985_000.0 / 5_000_000.0);
    assert!(v["own_share"].is_null());
    assert_eq!(v["shared"], serde_json::json!([]));
    assert_eq!(
        v["usual_calls"][0],
        serde_json::json!({"function": "app::fetch", "id": FETCH, "calls": 1,
                           "duration_ns": 5_000_000, "usual_ns": 5_000_000, "usual_of": 3})
    );
    let text = fdr(&["explain", &log]).unwrap();
    assert_eq!(
        text.lines().next(),
        Some(
            "app::handle: 5.09 ms, usually 95.0 µs; 100% of the excess is in calls it made that \
             took their usual time (calls it does not usually make, or more of them): app::fetch \
             (5.00 ms, usually 5.00 ms), app::lookup (50.0 µs, usually 50.0 µs)"
        ),
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

/// [`common::awaits_log`], written for `reason`: task 7 of `app::get_quote` (an async fn,
/// created on thread 11 at 1000, completed at 2700) has polls 1000-1050, 2000-2100 and
/// 2600-2700 (250 ns running), waits of 1000 ns at src/app.rs:20:9 and 450 ns at
/// src/app.rs:24:13, was woken at 1800 and 2500 and polled 200 and 100 ns later; it made task 8
/// of `app::downstream_discount` (1010 to 2040: polls 1010-1030 and 2010-2040, a wait of 980 ns
/// at src/app.rs:40:5). Task 9 of `app::get_quote` (thread 12, 3000 to 3310, dropped) is its
/// function's other task.
fn slow_task_log(reason: ReasonInfo) -> Vec<u8> {
    common::awaits_log_with(Some(reason))
}

/// The reason of a trigger on task 7 (its latency).
fn slow_task() -> ReasonInfo {
    ReasonInfo {
        reason: Reason::SlowCall,
        function: 2,
        tid: 11,
        start_tsc: 1000,
        duration_ticks: 1700,
        ..ReasonInfo::default()
    }
}

/// The reason of a long-poll trigger on task 7's poll 2000-2100.
fn long_poll() -> ReasonInfo {
    ReasonInfo {
        reason: Reason::LongPoll,
        start_tsc: 2000,
        duration_ticks: 100,
        ..slow_task()
    }
}

#[test]
fn an_async_task_is_split_into_running_awaiting_and_scheduled_and_followed_through_its_tasks() {
    let dir = temp_dir("explain-task");
    let log = write_log(&dir, "task.fdr", &slow_task_log(slow_task()));
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(
        (
            v["function"].as_str(),
            v["task"].as_u64(),
            v["thread"].as_i64()
        ),
        (Some("app::get_quote"), Some(7), Some(11))
    );
    // Times count from thread 11's first block, at 1000.
    assert_eq!(
        (v["start_ns"].as_u64(), v["duration_ns"].as_u64()),
        (Some(0), Some(1700))
    );
    // Its usual: task 9's 310 ns, the function's one other task.
    assert_eq!(
        (v["usual_ns"].as_u64(), v["usual_of"].as_u64()),
        (Some(310), Some(1))
    );
    assert_eq!(v["excess_ns"], 1390);
    // Where its time went, as fdr calls reckons it.
    assert_eq!(
        (v["polls"].as_u64(), v["running_ns"].as_u64()),
        (Some(3), Some(250))
    );
    assert_eq!(v["awaited_ns"], 1450);
    assert_eq!(
        (v["wake_ups"].as_u64(), v["scheduled_ns"].as_u64()),
        (Some(2), Some(300))
    );
    let waits: Vec<(&str, u64)> = v["awaits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["at"].as_str().unwrap(), a["waited_ns"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        waits,
        [("src/app.rs:20:9", 1000), ("src/app.rs:24:13", 450)]
    );
    // Task 8, made in it, has no other task to compare with: its 1030 ns are all excess, more
    // than half of task 7's.
    assert_eq!(path(&v), ["app::get_quote", "app::downstream_discount"]);
    assert_eq!(
        (v["culprit_task"].as_u64(), v["culprit_excess_ns"].as_u64()),
        (Some(8), Some(1030))
    );
    close(&v["share"], 1030.0 / 1390.0);
    assert_eq!(v["verdict"], "own_time");
    // A task's latency is not measured on and off the CPU: its split says where it went.
    assert_eq!(v["measured"], "not_measured_for_a_task");
    let text = fdr(&["explain", &log]).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "app::get_quote task 7: 1.70 µs, usually 310 ns; 74% of the excess is in \
             app::downstream_discount task 8 (1.03 µs, its only task in the window)",
            "app::downstream_discount task 8: 1.03 µs, its only task in the window; 100% of the \
             excess is in the task itself, not in a task made or awaited in it",
            "  call      app::get_quote task 7 on thread 11 (worker), created at +0 ns, \
             completed after 1.70 µs; it fired the trigger (slow call)",
            "  usual     310 ns: the only other task of app::get_quote in the window",
        ],
        "{text}"
    );
    assert!(
        text.contains(
            "\n  time      ran 250 ns in 3 polls, awaited 1.45 µs, waited 300 ns to be polled \
             after 2 wake-ups\n  awaited   src/app.rs:20:9 1.00 µs, src/app.rs:24:13 450 ns\n  \
             culprit   app::downstream_discount task 8:\n    time      ran 50 ns in 2 polls, \
             awaited 980 ns\n    awaited   src/app.rs:40:5 980 ns\n"
        ),
        "{text}"
    );
    // The function's slowest tasks: task 7, then task 9, no slower than usual (1700 ns).
    let v = json(&[
        "explain",
        "--format",
        "json",
        "--function",
        "get_quote",
        "--top",
        "5",
        &log,
    ]);
    let tasks: Vec<(u64, &str)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["task"].as_u64().unwrap(), x["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(tasks, [(7, "own_time"), (9, "no_excess")]);
    assert_eq!(v[1]["usual_ns"], 1700);
    // A task is named as calls lists it: by the thread and time it was created at.
    let v = json(&["explain", "--format", "json", "--call", "io@+2.00µs", &log]);
    assert_eq!(
        (v["task"].as_u64(), v["trigger"].as_bool()),
        (Some(9), Some(false))
    );
}

#[test]
fn a_long_poll_is_explained_as_the_poll_it_is() {
    let dir = temp_dir("explain-poll");
    let log = write_log(&dir, "poll.fdr", &slow_task_log(long_poll()));
    let v = json(&["explain", "--format", "json", &log]);
    // The poll 2000-2100, against the function's other polls (50, 100, 10 ns): 50 ns.
    assert_eq!(
        (
            v["task"].is_null(),
            v["duration_ns"].as_u64(),
            v["usual_ns"].as_u64()
        ),
        (true, Some(100), Some(50))
    );
    // The task 8 poll in it, 30 ns, against its other (20 ns): 10 ns of the 50 over.
    assert_eq!(
        (v["verdict"].as_str(), v["trigger"].as_bool()),
        (Some("own_time"), Some(true))
    );
    close(&v["own_share"], 0.8);
}

/// A process that died of a segfault on thread `tid` (7, `main`, when not 0: then no thread is
/// named) inside app::parse. Thread 7 entered app::main at 1000, ran app::handle twice (200 ns
/// each) and app::parse once (20 ns), then entered app::handle at 2000 and app::parse at 3000,
/// all three open when the log ended at 10000; thread 8 (pool) has app::fetch open from 1500
/// and app::lookup from 4000 in it; thread 9 ran one call and had nothing open.
fn crash_log(tid: i32) -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.leading_block(7, 900);
    log.run(RunInfo {
        ticks_per_second: 1_000_000_000,
        program: "app".into(),
        pid: 1,
        end_tsc: 10_000,
        ..RunInfo::default()
    });
    log.reason(ReasonInfo {
        reason: Reason::Crash,
        tid,
        signal: 11,
        address: 0x10,
        ending: fdr_format::Ending::Signal,
        ..ReasonInfo::default()
    });
    for (id, name) in [
        (HANDLE, "app::handle"),
        (PARSE, "app::parse"),
        (LOOKUP, "app::lookup"),
        (FETCH, "app::fetch"),
        (8, "app::main"),
    ] {
        log.function(id, name, &[]);
    }
    log.thread(7, "main");
    log.thread(8, "pool");
    let mut b = log.block(7, 0, 1000);
    b.enter(8, 1000);
    emit(
        &mut b,
        &C(HANDLE, 1100, 1300, vec![C(PARSE, 1150, 1170, vec![])]),
    );
    emit(&mut b, &C(HANDLE, 1400, 1600, vec![]));
    b.enter(HANDLE, 2000);
    b.enter(PARSE, 3000);
    b.finish();
    let mut b = log.block(8, 1, 1500);
    b.enter(FETCH, 1500);
    b.enter(LOOKUP, 4000);
    b.finish();
    let mut b = log.block(9, 2, 1200);
    emit(&mut b, &C(LOOKUP, 1200, 1300, vec![]));
    b.finish();
    log.finish()
}

#[test]
fn a_crash_shows_the_open_stack_of_the_thread_that_died_and_what_the_others_had_open() {
    let dir = temp_dir("explain-crash");
    let log = write_log(&dir, "crash.fdr", &crash_log(7));
    let text = fdr(&["explain", &log]).unwrap();
    assert_eq!(
        text,
        "the process died: SIGSEGV (segmentation fault) at address 0x10 on thread 7, inside \
         app::parse (≥ 7.00 µs, usually 20 ns)\n  \
         thread 7 (main) died with these calls open at the window's end (+9.00 µs), outermost \
         first:\n     \
         ≥ 9.00 µs  app::main, its only call in the window\n     \
         ≥ 8.00 µs    app::handle, usually 200 ns\n     \
         ≥ 7.00 µs      app::parse, usually 20 ns\n  \
         the other threads, their calls open at the end (outermost first):\n    \
         thread 8 (pool): app::fetch ≥ 8.50 µs > app::lookup ≥ 6.00 µs\n  \
         1 other thread had no call open\n"
    );
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(
        (v["thread"].as_i64(), v["function"].as_str()),
        (Some(7), Some("app::parse"))
    );
    assert_eq!(
        (v["duration_ns"].as_u64(), v["usual_ns"].as_u64()),
        (Some(7000), Some(20))
    );
    assert_eq!(v["excess_ns"], 6980);
    assert!(v["culprit"].is_null() && v["share"].is_null() && v["running_ns"].is_null());
    let stack: Vec<(&str, u64, u64)> = v["stack"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["function"].as_str().unwrap(),
                s["start_ns"].as_u64().unwrap(),
                s["duration_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        stack,
        [
            ("app::main", 0, 9000),
            ("app::handle", 1000, 8000),
            ("app::parse", 2000, 7000)
        ]
    );
    assert_eq!(v["threads"][0]["thread"], 8);
    assert_eq!(v["threads"][0]["stack"][1]["duration_ns"], 6000);
    assert_eq!(v["idle_threads"], 1);
    // Killed with no handler: no thread named, every thread's open calls listed.
    let log = write_log(&dir, "killed.fdr", &crash_log(0));
    let text = fdr(&["explain", &log]).unwrap();
    assert!(text.contains("\n  the log names no thread that died\n  the threads, their calls open at the end (outermost first):\n    thread 7 (main): app::main ≥ 9.00 µs > app::handle ≥ 8.00 µs > app::parse ≥ 7.00 µs\n    thread 8 (pool): "), "{text}");
}

#[test]
fn baseline_takes_the_usual_from_another_log_or_a_profile() {
    let dir = temp_dir("explain-baseline");
    let slow = slow_lookup();
    let log = write_log(&dir, "now.fdr", &requests(Some(fired_by(&slow)), slow));
    // Before: requests of 200 µs with lookups of 150 µs.
    let mut before = log_with(None);
    let mut b = before.block(11, 0, 1_000);
    for i in 0..3 {
        emit(
            &mut b,
            &request(1_000 + i * 1_000_000, [10_000, 150_000, 20_000], 5_000),
        );
    }
    b.finish();
    let before = write_log(&dir, "before.fdr", &before.finish());
    let v = json(&["explain", "--format", "json", "--baseline", &before, &log]);
    assert_eq!(v["usual_from"], before.as_str());
    assert_eq!(
        (v["usual_ns"].as_u64(), v["usual_of"].as_u64()),
        (Some(200_000), Some(3))
    );
    assert_eq!(v["excess_ns"], 20_045_000 - 200_000);
    assert_eq!(
        (v["culprit"].as_str(), v["culprit_usual_ns"].as_u64()),
        (Some("app::lookup"), Some(150_000))
    );
    assert_eq!(v["culprit_excess_ns"], 20_000_000 - 150_000);
    let text = fdr(&["explain", "--baseline", &before, &log]).unwrap();
    assert!(
        text.contains(&format!(
            "\n  usual     200 µs: the median of the 3 calls of app::handle in {before}\n"
        )),
        "{text}"
    );
    // A function the baseline does not have: usually 0.
    let mut other = log_with(None);
    let mut b = other.block(11, 0, 1_000);
    emit(&mut b, &C(PARSE, 1_000, 2_000, vec![]));
    b.finish();
    let other = write_log(&dir, "other.fdr", &other.finish());
    let v = json(&["explain", "--format", "json", "--baseline", &other, &log]);
    assert_eq!(
        (v["usual_ns"].as_u64(), v["usual_of"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(v["excess_ns"], 20_045_000);
    assert!(fdr(&["explain", "--baseline", &other, &log])
        .unwrap()
        .starts_with(
            "app::handle: 20.0 ms, not in the baseline; 100% of the excess is in app::lookup"
        ));

    // A profile: each function's p50 there.
    let mut t = fdr_testkit::profile::TreeBuilder::new(0, "");
    let h = t.calls(None, 1, &[300_000, 300_000, 300_000], 90_000);
    t.calls(Some(h), 2, &[250_000, 250_000, 250_000], 750_000);
    let profile = fdr_format::profile::Profile {
        flags: 0,
        ticks_per_second: 1_000_000_000,
        start_unix_ns: 0,
        elapsed_ticks: 1_000_000,
        lost: 0,
        pid: 1,
        program: "app".into(),
        functions: vec![(1, "app::handle".into()), (2, "app::lookup".into())],
        trees: vec![t.finish()],
    };
    let p = dir.join("before.fdrprof");
    std::fs::write(&p, profile.encode()).unwrap();
    let p = p.to_str().unwrap();
    let v = json(&["explain", "--format", "json", "--baseline", p, &log]);
    assert_eq!(
        (v["usual_ns"].as_u64(), v["usual_of"].as_u64()),
        (Some(300_000), Some(3))
    );
    assert_eq!(v["culprit_usual_ns"], 250_000);
    assert!(fdr(&["explain", "--baseline", p, &log])
        .unwrap()
        .contains(&format!(
            "\n  usual     300 µs: the p50 of the 3 calls of app::handle in the profile {p}\n"
        )));
}

#[test]
fn errors_say_what_to_pass() {
    let dir = temp_dir("explain-errors");
    // A log no trigger wrote names no call.
    let log = write_log(&dir, "plain.fdr", &requests(None, slow_lookup()));
    let e = fdr(&["explain", &log]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "fdr: {log}: no call to explain: the log was not written by a trigger (it does not \
             say why it was written); name one with --call TID@START (a thread and a start as \
             `fdr calls` prints them), or explain a function's slowest calls with --function NAME"
        )
    );
    assert_eq!(e.exit_code(), 1);
    let signal = ReasonInfo {
        reason: Reason::Signal,
        ..ReasonInfo::default()
    };
    let log2 = write_log(&dir, "sig.fdr", &requests(Some(signal), slow_lookup()));
    assert!(fdr(&["explain", &log2])
        .unwrap_err()
        .to_string()
        .contains("(it was written for: signal)"));
    // --call naming no call, no thread.
    let e = fdr(&["explain", "--call", "11@+7ms", &log]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "fdr: {log}: --call: no call on thread 11 started at +7.00 ms (`fdr calls` lists \
             calls with their thread and start; JSON's start_ns names one to the nanosecond)"
        )
    );
    let e = fdr(&["explain", "--call", "nosuch@0", &log]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("fdr: {log}: --call: no thread nosuch in the log (`fdr info` lists its threads)")
    );
    // A malformed --call, --top without --function: usage errors.
    for args in [
        &["explain", "--call", "11", &log][..],
        &["explain", "--call", "11@soon", &log],
        &["explain", "--call", "@5ms", &log],
        &["explain", "--top", "3", &log],
        &["explain", "--function", "handle", "--top", "0", &log],
    ] {
        let e = fdr(args).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
    }
    assert!(fdr(&["explain", "--call", "11", &log])
        .unwrap_err()
        .to_string()
        .contains("expected TID@START"));
    // A function the log does not have, with the closest names.
    let e = fdr(&["explain", "--function", "lokup", &log]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "fdr: {log}: no function in the log matches --function lokup; the closest: app::lookup"
        )
    );
    // Corrupt: as every other command.
    let mut bytes = requests(None, slow_lookup());
    bytes.truncate(bytes.len() - 3);
    let cut = write_log(&dir, "cut.fdr", &bytes);
    let e = fdr(&["explain", "--function", "handle", &cut]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("fdr: {cut}: at byte offset ")),
        "{e}"
    );
    // Both from standard input: refused.
    assert_eq!(
        fdr(&["explain", "--baseline", "-", "-"])
            .unwrap_err()
            .exit_code(),
        2
    );
}

#[test]
fn info_of_a_log_a_trigger_wrote_ends_with_explain_s_first_line() {
    let dir = temp_dir("explain-info");
    let slow = slow_lookup();
    for (name, bytes) in [
        ("call.fdr", requests(Some(fired_by(&slow)), slow)),
        ("task.fdr", slow_task_log(slow_task())),
        ("poll.fdr", slow_task_log(long_poll())),
    ] {
        let log = write_log(&dir, name, &bytes);
        let info = fdr(&["info", &log]).unwrap();
        let explain = fdr(&["explain", &log]).unwrap();
        let first = explain.lines().next().unwrap();
        assert_eq!(
            info.lines().last(),
            Some(format!("explain     {first}").as_str()),
            "{name}: {info}"
        );
    }
    // The call's own line, as the trigger's log has it.
    let log = dir.join("call.fdr");
    assert!(fdr(&["info", log.to_str().unwrap()]).unwrap().ends_with(
        "\nexplain     app::handle: 20.0 ms, usually 95.0 µs; 100% of the excess is in \
         app::lookup (20.0 ms, usually 50.0 µs)\n"
    ));
    // Logs no trigger wrote have no such line.
    let plain = write_log(&dir, "plain.fdr", &requests(None, slow_lookup()));
    let crash = write_log(&dir, "crash.fdr", &crash_log(7));
    for log in [plain, crash] {
        assert!(
            !fdr(&["info", &log]).unwrap().contains("\nexplain "),
            "{log}"
        );
    }
}

#[test]
fn triggered_task_and_crash_logs_and_their_bit_flips_go_through_every_command_cleanly() {
    let dir = temp_dir("explain-fuzz");
    let slow = slow_lookup();
    for (name, bytes) in [
        ("call.fdr", requests(Some(fired_by(&slow)), slow)),
        ("task.fdr", slow_task_log(slow_task())),
        ("crash.fdr", crash_log(7)),
    ] {
        let log = write_log(&dir, name, &bytes);
        common::fuzz_check::every_command_is_clean(std::path::Path::new(&log));
        // One bit flipped in each of a spread of the bytes (deterministic): the reason record,
        // the tables and the events.
        for at in (0..bytes.len()).step_by(29) {
            let mut b = bytes.clone();
            b[at] ^= 1 << (at % 8);
            std::fs::write(&log, &b).unwrap();
            common::fuzz_check::every_command_is_clean(std::path::Path::new(&log));
        }
    }
}

#[test]
fn the_help_lists_explain_and_says_what_it_reads_and_prints() {
    let top = fdr(&["--help"]).unwrap();
    assert!(top.contains("\n  explain  Why a call was slow"), "{top}");
    let help = fdr(&["explain", "--help"]).unwrap();
    for part in [
        "--call <TID@START>",
        "--baseline <LOG|PROFILE>",
        "--baseline PROFILE (.fdrprof) its p50",
        "a profile keeps no task latency",
        "culprit_duration_ns",
        "exact while a function has at most\n64 calls",
        "At most 64 calls\nstarting then are looked at",
    ] {
        assert!(help.contains(part), "{part}: {help}");
    }
}

#[test]
fn a_call_still_running_and_one_entered_before_the_window_are_explained_as_far_as_the_log_goes() {
    let dir = temp_dir("explain-open");
    // Still running: the fifth request's lookup had run 9.9 ms when the log was taken (at
    // +10 ms after it started); the trigger fired at 6 ms.
    let s = 1_000 + 4 * 100_000_000;
    let mut log = log_with(Some(ReasonInfo {
        reason: Reason::StillRunning,
        cpu_wait_ns: Some(1_000_000),
        off_cpu_ns: Some(4_000_000),
        ..slow(HANDLE, s, 6_000_000)
    }));
    log.run(RunInfo {
        ticks_per_second: 1_000_000_000,
        end_tsc: s + 10_000_000,
        ..RunInfo::default()
    });
    let mut b = log.block(11, 0, 1_000);
    for i in 0..4 {
        emit(&mut b, &usual(1_000 + i * 100_000_000));
    }
    b.enter(HANDLE, s);
    emit(&mut b, &C(PARSE, s + 5_000, s + 15_000, vec![]));
    b.enter(LOOKUP, s + 100_000);
    b.finish();
    let log = write_log(&dir, "open.fdr", &log.finish());
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(
        (
            v["open_at_end"].as_bool(),
            v["duration_ns"].as_u64(),
            v["usual_ns"].as_u64()
        ),
        (Some(true), Some(10_000_000), Some(95_000))
    );
    // The lookup, open too: 9.9 ms against its 50 µs.
    assert_eq!(
        (v["culprit"].as_str(), v["culprit_excess_ns"].as_u64()),
        (Some("app::lookup"), Some(9_850_000))
    );
    // Where the time went: of the 6 ms the reason record measured.
    assert_eq!(
        (
            v["running_ns"].as_u64(),
            v["cpu_wait_ns"].as_u64(),
            v["off_cpu_ns"].as_u64()
        ),
        (Some(1_000_000), Some(1_000_000), Some(4_000_000))
    );
    let text = fdr(&["explain", &log]).unwrap();
    assert!(
        text.starts_with(
            "app::handle: ≥ 10.0 ms, usually 95.0 µs; 99% of the excess is in app::lookup \
             (≥ 9.90 ms, usually 50.0 µs)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            ", still running at the end: ≥ 10.0 ms; it fired the trigger (call still running \
             past its limit, limit 1.00 ms)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "\n  time      on a CPU 1.00 ms, waiting for a CPU 1.00 ms, off the CPU 4.00 ms \
             (blocked: a syscall, a lock, a sleep, a page fault), in the first 6.00 ms (when the \
             trigger fired)\n"
        ),
        "{text}"
    );

    // Entered before the window (a ring recycled the block of its entry): its exit alone is
    // in the log; the reason record says how long it took, and nothing under it is followed.
    let mut log = log_with(Some(slow(HANDLE, 500, 3_000_000)));
    let mut b = log.block(11, 0, 1_000);
    b.exit(HANDLE, 3_000_500);
    for i in 1..4 {
        emit(&mut b, &usual(i * 100_000_000));
    }
    b.finish();
    let log = write_log(&dir, "ring.fdr", &log.finish());
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(
        (
            v["duration_ns"].as_u64(),
            v["verdict"].as_str(),
            v["culprit"].as_str()
        ),
        (Some(3_000_000), Some("not_followed"), Some("app::handle"))
    );
    assert!(fdr(&["explain", &log]).unwrap().starts_with(
        "app::handle: 3.00 ms, usually 95.0 µs; its entry is before the window, so the calls \
         it made are not in the log\n"
    ));
}

#[test]
fn a_task_created_before_the_window_is_weighed_against_tasks_and_says_what_is_missing() {
    // A trigger on a task of app::get_quote created at 500, before the window (which starts at
    // 1000), lasting 5000: none of its life from before is in the log.
    let dir = temp_dir("explain-task-before");
    let reason = ReasonInfo {
        start_tsc: 500,
        duration_ticks: 5000,
        ..slow_task()
    };
    let log = write_log(&dir, "task.fdr", &slow_task_log(reason));
    let v = json(&["explain", "--format", "json", &log]);
    // Its usual is its function's tasks' (7 and 9), not its polls'.
    assert_eq!(v["usual_of"], 2, "{v}");
    assert_eq!(v["verdict"], "task_before_window", "{v}");
    assert_eq!(v["measured"], "not_measured_for_a_task", "{v}");
    let text = fdr(&["explain", &log]).unwrap();
    assert!(
        text.lines().next().unwrap().ends_with(
            "it is a task created before the window: its polls, waits and the tasks made in it \
             are not all in the log"
        ),
        "{text}"
    );
    assert!(
        text.contains("  time      not measured for a task's latency"),
        "{text}"
    );
}

#[test]
fn a_task_trigger_is_found_by_its_creation_and_length_as_the_runtime_times_them() {
    // The runtime times a task's trigger by clock readings of its own, a few ticks after the
    // records of its creation and completion, and names the thread it completed on.
    let dir = temp_dir("explain-task-near");
    let reason = ReasonInfo {
        tid: 12,
        start_tsc: 1003,
        duration_ticks: 1705,
        ..slow_task()
    };
    let log = write_log(&dir, "task.fdr", &slow_task_log(reason));
    let v = json(&["explain", "--format", "json", &log]);
    assert_eq!(
        (
            v["function"].as_str(),
            v["task"].as_u64(),
            v["duration_ns"].as_u64()
        ),
        (Some("app::get_quote"), Some(7), Some(1700)),
        "{v}"
    );
    assert_eq!(v["trigger"], true, "{v}");
}
