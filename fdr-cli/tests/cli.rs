//! The commands on fixture logs: golden outputs, Chrome JSON and FXT checked against the spans
//! the fixtures were built from, mid-stack windows, flame graphs and error messages.

mod common;

use std::collections::HashMap;

use common::{
    basic_log, basic_spans, fdr, golden, midstack_log, midstack_spans, temp_dir, write_log, FAR,
};
use serde_json::Value;

/// Runs a command on a fixture and replaces the temp path so outputs compare across runs.
fn out(args: &[&str], log: &str) -> String {
    let s = fdr(args).unwrap_or_else(|e| panic!("fdr {args:?}: {e}"));
    s.replace(log, "<log>")
}

#[test]
fn golden_outputs_of_every_command_on_the_basic_log() {
    let dir = temp_dir("golden-basic");
    let log = write_log(&dir, "basic.fdr", &basic_log());
    let l = log.as_str();
    golden("basic_info.txt", &out(&["info", l], l));
    golden("basic_dump.txt", &out(&["dump", "--verify", l], l));
    golden("basic_account.txt", &out(&["account", l], l));
    golden(
        "basic_account_name_top3.txt",
        &out(&["account", "--sort", "name", "--top", "3", l], l),
    );
    golden(
        "basic_account.csv",
        &out(&["account", "--format", "csv", "--sort", "id", l], l),
    );
    golden(
        "basic_account.json",
        &out(&["account", "--format", "json", "--sort", "id", l], l),
    );
    golden("basic_stack.txt", &out(&["stack", l], l));
    golden(
        "basic_stack.folded",
        &out(&["stack", "--format", "folded", l], l),
    );
    golden(
        "basic_chrome.json",
        &out(&["convert", l, "--format", "chrome", "-o", "-"], l),
    );
    let flat = write_log(&dir, "flat.fdr", &common::basic_log_with_gap(0));
    let f = flat.as_str();
    golden("flat_flame.svg", &out(&["flame", f, "-o", "-"], f));
    golden(
        "flat_flame_chart.svg",
        &out(&["flame", "--chart", f, "-o", "-"], f),
    );
}

#[test]
fn golden_outputs_of_every_command_on_a_mid_stack_window() {
    let dir = temp_dir("golden-mid");
    let log = write_log(&dir, "mid.fdr", &midstack_log());
    let l = log.as_str();
    golden("mid_info.txt", &out(&["info", l], l));
    golden("mid_dump.txt", &out(&["dump", "--verify", l], l));
    golden("mid_account.txt", &out(&["account", l], l));
    golden(
        "mid_account.json",
        &out(&["account", "--format", "json", "--sort", "id", l], l),
    );
    golden("mid_stack.txt", &out(&["stack", l], l));
    golden(
        "mid_stack.folded",
        &out(&["stack", "--format", "folded", l], l),
    );
    golden(
        "mid_chrome.json",
        &out(&["convert", l, "--format", "chrome", "-o", "-"], l),
    );
}

#[test]
fn golden_calls_and_replay_of_the_basic_log_and_a_mid_stack_window() {
    // Tail exits, a migration, a TSC wrap, an id missing from the table, calls open at the end;
    // a window that starts mid-stack.
    let dir = temp_dir("golden-calls");
    let basic = write_log(&dir, "basic.fdr", &basic_log());
    let mid = write_log(&dir, "mid.fdr", &midstack_log());
    for (name, l) in [("basic", basic.as_str()), ("mid", mid.as_str())] {
        golden(&format!("{name}_calls.txt"), &out(&["calls", l], l));
        golden(
            &format!("{name}_calls.json"),
            &out(&["calls", "--format", "json", "--top", "3", l], l),
        );
        golden(&format!("{name}_replay.txt"), &out(&["replay", l], l));
    }
    golden(
        "basic_calls_depth1.txt",
        &out(&["calls", "--top", "2", "--depth", "1", &basic], &basic),
    );
    // The JSON is the same calls as nested objects with the keys DESIGN.md names.
    let json = fdr(&["calls", "--format", "json", &basic]).unwrap();
    let calls: Vec<Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(calls.len(), 10);
    let mut keys: Vec<&str> = calls[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "children",
            "duration_ns",
            "function",
            "id",
            "inferred_start",
            "open_at_end",
            "self_ns",
            "start_ns",
            "thread"
        ]
    );
    let durations: Vec<u64> = calls
        .iter()
        .map(|c| c["duration_ns"].as_u64().unwrap())
        .collect();
    assert!(durations.windows(2).all(|w| w[0] >= w[1]), "slowest first");
    let main = calls.iter().find(|c| c["function"] == "app::main").unwrap();
    assert_eq!(main["children"].as_array().unwrap().len(), 6);
    assert_eq!(
        (main["duration_ns"].as_u64(), main["self_ns"].as_u64()),
        (Some(3000), Some(1100))
    );
}

#[test]
fn calls_summarises_runs_of_the_same_callee_and_folds_deep_calls() {
    use fdr_testkit::synth::LogBuilder;
    let mut log = LogBuilder::new(1_000_000_000);
    log.function(1, "app::main", &[]);
    log.function(2, "fib", &[]);
    let mut b = log.block(1, 0, 0);
    b.enter(1, 0);
    let mut t = 10;
    for _ in 0..4096 {
        b.enter(2, t);
        b.enter(2, t + 1);
        b.exit(2, t + 2);
        b.exit(2, t + 3);
        t += 5;
    }
    b.exit(1, t);
    b.finish();
    let dir = temp_dir("calls-runs");
    let l = write_log(&dir, "fib.fdr", &log.finish());
    let text = fdr(&["calls", "--top", "1", &l]).unwrap();
    assert!(text.contains("  fib \u{d7} 4,096\n"), "{text}");
    assert!(text.contains("    fib \u{d7} 4,096\n"), "{text}");
    let text = fdr(&["calls", "--top", "1", "--depth", "1", &l]).unwrap();
    assert!(
        text.contains("fib \u{d7} 4,096 [4,096 calls deeper]"),
        "{text}"
    );
    // JSON lists each call, at most 4096 with the listed one.
    let json = fdr(&[
        "calls", "--format", "json", "--top", "1", "--depth", "1", &l,
    ])
    .unwrap();
    let v: Vec<Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["children"].as_array().unwrap().len(), 4095);
    assert_eq!(v[0]["children"][0]["function"], "fib");
}

/// One span read back from Chrome JSON: tid, name, start ns, end ns, `B` args, `E` args.
type ChromeSpan = (i64, String, u64, u64, Value, Value);

/// Spans, thread names by tid and process names.
type Chrome = (Vec<ChromeSpan>, HashMap<i64, String>, Vec<String>);

/// (tid, name, start ns, end ns, B args, E args) from Chrome JSON, checking that `B` and `E`
/// events nest per thread with matching names; a complete (`X`) event is one span whose
/// `args` are both its begin and end args. Spans come in order of start (the longer first).
fn chrome_spans(json: &str) -> Chrome {
    let v: Value = serde_json::from_str(json).expect("Chrome JSON parses");
    let events = v["traceEvents"].as_array().expect("traceEvents array");
    let mut open: HashMap<i64, Vec<(usize, &Value)>> = HashMap::new();
    let mut spans: Vec<Option<ChromeSpan>> = Vec::new();
    let mut thread_names = HashMap::new();
    let mut process_names = Vec::new();
    // Viewers order events by timestamp; fdr writes each thread's in order already.
    for e in events {
        let tid = e["tid"].as_i64().expect("tid");
        let ns = |e: &Value| (e["ts"].as_f64().expect("ts") * 1000.0).round() as u64;
        match e["ph"].as_str().expect("ph") {
            "M" => match e["name"].as_str().unwrap() {
                "thread_name" => {
                    thread_names.insert(tid, e["args"]["name"].as_str().unwrap().to_string());
                }
                "process_name" => {
                    process_names.push(e["args"]["name"].as_str().unwrap().to_string())
                }
                _ => {}
            },
            "B" => {
                spans.push(None);
                open.entry(tid).or_default().push((spans.len() - 1, e));
            }
            "E" => {
                let (slot, b) = open
                    .get_mut(&tid)
                    .and_then(|s| s.pop())
                    .unwrap_or_else(|| panic!("E without B on thread {tid}: {e}"));
                assert_eq!(
                    b["name"], e["name"],
                    "E closes the innermost B of its thread"
                );
                assert!(ns(e) >= ns(b));
                spans[slot] = Some((
                    tid,
                    b["name"].as_str().unwrap().to_string(),
                    ns(b),
                    ns(e),
                    b["args"].clone(),
                    e["args"].clone(),
                ));
            }
            "X" => {
                let dur = (e["dur"].as_f64().expect("dur") * 1000.0).round() as u64;
                spans.push(Some((
                    tid,
                    e["name"].as_str().unwrap().to_string(),
                    ns(e),
                    ns(e) + dur,
                    e["args"].clone(),
                    e["args"].clone(),
                )));
            }
            // Instants (a trigger's mark) and async slices (tasks) are checked apart.
            "i" | "b" | "e" => {}
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(open.values().all(|s| s.is_empty()), "every B has its E");
    let mut spans: Vec<ChromeSpan> = spans.into_iter().map(|s| s.unwrap()).collect();
    spans.sort_by_key(|s| (s.2, std::cmp::Reverse(s.3)));
    (spans, thread_names, process_names)
}

#[test]
fn chrome_json_balances_per_thread_with_the_right_names_times_and_args() {
    let dir = temp_dir("chrome");
    let log = write_log(&dir, "basic.fdr", &basic_log());
    let json = fdr(&["convert", &log, "--format", "chrome", "-o", "-"]).unwrap();
    let (spans, threads, processes) = chrome_spans(&json);
    let got: Vec<(i32, String, u64, u64)> = spans
        .iter()
        .map(|s| (s.0 as i32, s.1.clone(), s.2, s.3))
        .collect();
    let mut want: Vec<(i32, String, u64, u64)> = basic_spans()
        .into_iter()
        .map(|(t, n, a, b)| (t, n.to_string(), a - 1000, b - 1000))
        .collect();
    let mut got_sorted = got.clone();
    got_sorted.sort();
    want.sort();
    assert_eq!(got_sorted, want);
    assert_eq!(threads[&11], "main");
    assert_eq!(threads[&12], "worker");
    assert_eq!(processes, ["demo"]);
    let parse = spans.iter().find(|s| s.1 == "app::parse").unwrap();
    assert_eq!(parse.4, serde_json::json!({"len": 42, "flags": 7}));
    let open = spans
        .iter()
        .find(|s| s.3 == FAR + 2300 - 1000 && s.1 == "app::Worker::step")
        .unwrap();
    assert_eq!(open.5, serde_json::json!({"open_at_end": true}));
}

#[test]
fn chrome_json_of_a_mid_stack_window_has_inferred_entries_and_balanced_spans() {
    let dir = temp_dir("chrome-mid");
    let log = write_log(&dir, "mid.fdr", &midstack_log());
    let json = fdr(&["convert", &log, "--format", "chrome", "-o", "-"]).unwrap();
    let (spans, threads, _) = chrome_spans(&json);
    assert_eq!(threads[&21], "ring-thread");
    let got: Vec<_> = spans
        .iter()
        .map(|s| {
            (
                s.0 as i32,
                s.1.as_str(),
                s.2 + 5000,
                s.3 + 5000,
                s.4.get("inferred_start") == Some(&Value::Bool(true)),
                s.5.get("open_at_end") == Some(&Value::Bool(true)),
            )
        })
        .collect();
    assert_eq!(got, midstack_spans());
}

#[test]
fn a_leading_block_of_the_same_thread_does_not_move_its_window_start() {
    let dir = temp_dir("lead");
    let led = write_log(&dir, "led.fdr", &common::midstack_log_led_by(21));
    let plain = write_log(&dir, "plain.fdr", &midstack_log());
    for cmd in [
        &["account", "--format", "csv"][..],
        &["stack"],
        &["convert", "--format", "chrome", "-o", "-"],
    ] {
        let run = |p: &str| {
            let mut a = cmd.to_vec();
            a.insert(1, p);
            fdr(&a).unwrap()
        };
        assert_eq!(run(&led), run(&plain), "{cmd:?}");
    }
    let info = fdr(&["info", &led]).unwrap();
    assert!(
        info.contains("        21       2          8"),
        "two blocks, the window from the second: {info}"
    );
    assert!(info.contains("+0 ns     +1.30 µs  ring-thread"), "{info}");
}

#[test]
fn fxt_decodes_back_to_the_same_spans_threads_and_args() {
    let dir = temp_dir("fxt");
    let log = write_log(&dir, "basic.fdr", &basic_log());
    let out = dir.join("basic.fxt");
    fdr(&[
        "convert",
        &log,
        "--format",
        "fxt",
        "-o",
        out.to_str().unwrap(),
    ])
    .unwrap();
    let trace = common::fxt::parse(&std::fs::read(&out).unwrap()).expect("a valid FXT trace");
    common::fxt::assert_read_alike_by_fxt_package(&out, &trace);
    assert_eq!(trace.ticks_per_second, 1_000_000_000);
    assert_eq!(trace.processes[&1], "demo");
    assert_eq!(trace.threads[&11], (1, "main".to_string()));
    assert_eq!(trace.threads[&12], (1, "worker".to_string()));
    assert!(trace
        .events
        .iter()
        .all(|e| e.category == "fdr" && e.pid == 1));
    let spans = common::fxt::spans(&trace).expect("begin and end events nest");
    let mut got: Vec<(i32, String, u64, u64)> = spans
        .iter()
        .map(|s| (s.tid as i32, s.name.clone(), s.start, s.end))
        .collect();
    let mut want: Vec<(i32, String, u64, u64)> = basic_spans()
        .into_iter()
        .map(|(t, n, a, b)| (t, n.to_string(), a - 1000, b - 1000))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    let parse = spans.iter().find(|s| s.name == "app::parse").unwrap();
    use common::fxt::Value;
    assert_eq!(
        parse.begin_args,
        [
            ("len".to_string(), Value::U64(42)),
            ("flags".to_string(), Value::U64(7))
        ]
    );
}

#[test]
fn fxt_of_a_mid_stack_window_marks_inferred_and_open_calls() {
    let dir = temp_dir("fxt-mid");
    let log = write_log(&dir, "mid.fdr", &midstack_log());
    let out = dir.join("mid.fxt");
    fdr(&[
        "convert",
        &log,
        "--format",
        "fxt",
        "-o",
        out.to_str().unwrap(),
    ])
    .unwrap();
    let trace = common::fxt::parse(&std::fs::read(&out).unwrap()).unwrap();
    common::fxt::assert_read_alike_by_fxt_package(&out, &trace);
    let spans = common::fxt::spans(&trace).unwrap();
    use common::fxt::Value;
    let flag =
        |args: &[(String, Value)], k: &str| args.iter().any(|(n, v)| n == k && *v == Value::U32(1));
    let got: Vec<_> = spans
        .iter()
        .map(|s| {
            (
                s.tid as i32,
                s.name.as_str(),
                s.start + 5000,
                s.end + 5000,
                flag(&s.begin_args, "inferred_start"),
                flag(&s.end_args, "open_at_end"),
            )
        })
        .collect();
    assert_eq!(got, midstack_spans());
}

#[test]
fn fxt_and_chrome_agree_on_a_larger_log() {
    // Many threads and functions: more threads than FXT thread slots would be needed to
    // exercise inline references, so use enough functions and several blocks instead.
    use fdr_testkit::synth::LogBuilder;
    let mut log = LogBuilder::new(2_500_000_000);
    for id in 1..=40 {
        log.function(id, &format!("m::f{id}"), &["x"]);
    }
    let mut x = 7u64;
    let mut calls = 0;
    for tid in 1..=5 {
        for blk in 0..3u64 {
            let mut t = 10_000 * blk + tid as u64;
            let mut b = log.block(tid, 0, t);
            let mut stack = Vec::new();
            for _ in 0..60 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                t += 1 + (x >> 50) % 40;
                if stack.is_empty() || (stack.len() < 6 && (x >> 33) % 2 == 0) {
                    let id = 1 + (x >> 40) as u32 % 40;
                    if id % 3 == 0 {
                        b.enter_args(id, t, &[x >> 10]);
                    } else {
                        b.enter(id, t);
                    }
                    stack.push(id);
                    calls += 1;
                } else {
                    b.exit(stack.pop().unwrap(), t);
                }
            }
            while let Some(id) = stack.pop() {
                t += 3;
                b.exit(id, t);
            }
            b.finish();
        }
    }
    let dir = temp_dir("fxt-chrome");
    let path = write_log(&dir, "big.fdr", &log.finish());
    let json = fdr(&["convert", &path, "--format", "chrome", "-o", "-"]).unwrap();
    let (c, _, _) = chrome_spans(&json);
    let out = dir.join("big.fxt");
    fdr(&[
        "convert",
        &path,
        "--format",
        "fxt",
        "-o",
        out.to_str().unwrap(),
    ])
    .unwrap();
    let trace = common::fxt::parse(&std::fs::read(&out).unwrap()).unwrap();
    common::fxt::assert_read_alike_by_fxt_package(&out, &trace);
    assert_eq!(
        trace.ticks_per_second, 2_500_000_000,
        "the recording clock's rate"
    );
    let f = common::fxt::spans(&trace).unwrap();
    let mut a: Vec<_> = c
        .iter()
        .map(|s| (s.0 as u64, s.1.clone(), s.2, s.3))
        .collect();
    let mut b: Vec<_> = f
        .iter()
        .map(|s| (s.tid, s.name.clone(), s.start, s.end))
        .collect();
    a.sort();
    b.sort();
    assert_eq!(a.len(), calls);
    assert_eq!(a, b);
}

#[test]
fn accounting_a_mid_stack_window_counts_inferred_calls_with_their_children() {
    let dir = temp_dir("account-mid");
    let log = write_log(&dir, "mid.fdr", &midstack_log());
    let json = fdr(&["account", "--format", "json", &log]).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    let row = |name: &str| rows.iter().find(|r| r["function"] == name).unwrap().clone();
    let main = row("app::main");
    assert_eq!(
        (
            main["count"].as_u64(),
            main["total_ns"].as_u64(),
            main["self_ns"].as_u64()
        ),
        (Some(1), Some(1000), Some(600))
    );
    // One call of step returned; the other was still running at the window's end: counted
    // apart, its time so far in total and self.
    let step = row("app::Worker::step");
    assert_eq!(
        (
            step["count"].as_u64(),
            step["open"].as_u64(),
            step["total_ns"].as_u64(),
            step["self_ns"].as_u64()
        ),
        (Some(1), Some(1), Some(400), Some(300))
    );
    // The call of get entered at the window's last record is open, with 0 ns so far: it is
    // not a 0 ns call in min.
    let get = row("app::get");
    assert_eq!(
        (
            get["count"].as_u64(),
            get["open"].as_u64(),
            get["min_ns"].as_u64(),
            get["max_ns"].as_u64()
        ),
        (Some(2), Some(1), Some(100), Some(100))
    );
    let text = fdr(&["account", &log]).unwrap();
    assert!(text.contains("app::main *"), "{text}");
    assert!(text.contains("app::Worker::step *"), "{text}");
}

#[test]
fn accounting_the_basic_log_is_exact() {
    let dir = temp_dir("account-basic");
    let log = write_log(&dir, "basic.fdr", &basic_log());
    let json = fdr(&["account", "--format", "json", &log]).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    let keys: Vec<&str> = rows[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut want = vec![
        "function",
        "id",
        "count",
        "min_ns",
        "p50_ns",
        "p90_ns",
        "p99_ns",
        "max_ns",
        "total_ns",
        "self_ns",
        "file",
        "line",
        "open",
        "open_max_ns",
    ];
    want.sort();
    let mut keys_sorted = keys.clone();
    keys_sorted.sort();
    assert_eq!(keys_sorted, want);
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["function"] == name)
            .unwrap_or_else(|| panic!("{name} in {json}"))
            .clone()
    };
    let get = row("<app::Cache as app::Store>::get");
    assert_eq!(get["count"], 4);
    assert_eq!(get["min_ns"], 50);
    assert_eq!(get["max_ns"], 300);
    assert_eq!(get["total_ns"], 100 + 300 + 50 + 100);
    let main = row("app::main");
    // main: 3000 ns, minus parse 500, step 800, tail_caller 100, tail_callee 300, #99 100, step 100.
    assert_eq!(
        (main["total_ns"].as_u64(), main["self_ns"].as_u64()),
        (Some(3000), Some(1100))
    );
    assert_eq!(row("app::tail_caller")["total_ns"], 100);
    assert_eq!(row("app::tail_callee")["total_ns"], 300);
    assert_eq!(row("#99")["file"], "");
    assert_eq!(row("app::parse")["file"], "src/lib.rs");
    // Sorted by total time by default, ties by id.
    let totals: Vec<u64> = rows
        .iter()
        .map(|r| r["total_ns"].as_u64().unwrap())
        .collect();
    assert!(totals.windows(2).all(|w| w[0] >= w[1]), "{totals:?}");
    let top = fdr(&["account", "--format", "csv", "--top", "2", &log]).unwrap();
    assert_eq!(top.lines().count(), 3);
}

#[test]
fn the_flame_graph_and_chart_contain_every_function_on_the_stacks() {
    let dir = temp_dir("flame");
    // Without the 8-second call, which would make every other frame too narrow to draw.
    let log = write_log(&dir, "basic.fdr", &common::basic_log_with_gap(0));
    for chart in [false, true] {
        let svg_path = dir.join(if chart { "c.svg" } else { "f.svg" });
        let mut args = vec!["flame", log.as_str(), "-o", svg_path.to_str().unwrap()];
        if chart {
            args.push("--chart");
        }
        fdr(&args).unwrap();
        let svg = std::fs::read_to_string(&svg_path).unwrap();
        assert!(svg.starts_with("<?xml"), "an SVG document");
        for name in [
            "app::main",
            "app::parse",
            "app::Worker::step",
            "&lt;app::Cache as app::Store&gt;::get",
            "app::tail_caller",
            "app::tail_callee",
            "#99",
        ] {
            assert!(
                svg.contains(name),
                "{name} missing from the {} SVG",
                if chart { "chart" } else { "graph" }
            );
        }
        if chart {
            assert!(
                svg.contains("worker") && svg.contains("main"),
                "thread roots in the chart"
            );
        }
    }
}

#[test]
fn errors_name_the_file_the_offset_and_what_was_expected() {
    let dir = temp_dir("errors");
    let missing = dir.join("nope.fdr");
    let e = fdr(&["account", missing.to_str().unwrap()]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("fdr: {}: cannot open the log:", missing.display())),
        "{e}"
    );
    // A profile is called a profile.
    let missing = dir.join("nope.fdrprof");
    let e = fdr(&["profile", missing.to_str().unwrap()]).unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "fdr: {}: cannot open the profile:",
            missing.display()
        )),
        "{e}"
    );

    let mut bad = basic_log();
    bad[0] = 3;
    let p = write_log(&dir, "v3.fdr", &bad);
    let e = fdr(&["info", &p]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("fdr: {p}: at byte offset 0: expected XRay FDR log version 5, found version 3")
    );

    let p = write_log(&dir, "text.fdr", b"this is a text file, not a log at all\n");
    let e = fdr(&["stack", &p]).unwrap_err();
    assert!(
        e.to_string()
            .contains("at byte offset 2: expected XRay log type 1"),
        "{e}"
    );

    let mut cut = basic_log();
    cut.truncate(cut.len() - 4);
    let p = write_log(&dir, "cut.fdr", &cut);
    for cmd in ["account", "info", "stack"] {
        let e = fdr(&[cmd, &p]).unwrap_err();
        assert!(e.to_string().contains("it was cut short"), "{cmd}: {e}");
    }
    let e = fdr(&["dump", "--verify", &p]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("fdr: {p}: at byte offset {}", cut.len() - 4)),
        "{e}"
    );

    // A block whose preamble lacks its WalltimeMarker.
    let mut log = basic_log();
    let at = 32 + 16 + 16; // header, extents, NewBuffer of the leading block
    log[at] = (9 << 1) | 1; // WalltimeMarker turned into Pid
    let p = write_log(&dir, "grammar.fdr", &log);
    let e = fdr(&["dump", "--verify", &p]).unwrap_err();
    assert_eq!(e.to_string(), format!("fdr: {p}: at byte offset {at}: expected a WalltimeMarker record after NewBuffer, found Pid"));
    assert!(
        fdr(&["dump", &p]).is_ok(),
        "without --verify the records are still listed"
    );

    let e = fdr(&["account", "--sort", "speed", &p]).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("speed"), "{e}");
}

#[test]
fn the_binary_exits_non_zero_with_the_message_on_stderr() {
    let dir = temp_dir("binary");
    let mut cut = basic_log();
    cut.truncate(100);
    let p = write_log(&dir, "cut.fdr", &cut);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fdr"))
        .args(["account", &p])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with(&format!("fdr: {p}: at byte offset ")),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fdr"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("convert"));
}

#[test]
fn account_help_states_how_percentiles_are_computed() {
    let help = fdr(&["account", "--help"]).unwrap();
    assert!(help.contains("log-linear histogram"), "{help}");
    assert!(help.contains("within 0.8%"), "{help}");
}

/// A log of `threads` threads, several interleaved blocks each, calls nested a few deep, some
/// open at the end and some whose entries are missing at the start.
fn many_threads_log(threads: i32, lead_tid: i32) -> Vec<u8> {
    use fdr_testkit::synth::LogBuilder;
    let mut log = LogBuilder::new(3_000_000_000);
    if lead_tid != 0 {
        log.leading_block(lead_tid, 5);
    }
    for id in 1..=12 {
        log.function(id, &format!("m::f{id}"), &[]);
    }
    let mut x = 99u64;
    let mut stacks: Vec<Vec<u32>> = (0..threads)
        .map(|t| vec![11, 12][..(t as usize % 3).min(2)].to_vec())
        .collect();
    let mut times: Vec<u64> = (0..threads).map(|t| 1000 + t as u64).collect();
    for round in 0..4 {
        for t in 0..threads {
            let ti = t as usize;
            let mut b = log.block(100 + t, 0, times[ti]);
            for _ in 0..40 + round * 3 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                times[ti] += 1 + (x >> 55);
                let st = &mut stacks[ti];
                if st.is_empty() || (st.len() < 5 && (x >> 20) % 2 == 0) {
                    let id = 1 + (x >> 30) as u32 % 10;
                    b.enter(id, times[ti]);
                    st.push(id);
                } else {
                    // Thread stacks seeded with 11 and 12 exit them without entries.
                    b.exit(st.pop().unwrap(), times[ti]);
                }
            }
            b.finish();
        }
    }
    log.finish()
}

#[test]
fn parallel_accounting_equals_one_reader() {
    let dir = temp_dir("parallel");
    let mut logs = vec![
        ("basic", basic_log()),
        ("mid", midstack_log()),
        ("led", common::midstack_log_led_by(21)),
        ("many", many_threads_log(7, 0)),
        ("many-led", many_threads_log(5, 101)),
    ];
    // A log without fdr's leading block, as other XRay writers make: its first block has
    // calls, which only the reader owning that thread may count.
    let many = many_threads_log(4, 0);
    let lead_len = 16 + u64::from_le_bytes(many[33..41].try_into().unwrap()) as usize;
    let mut foreign = many[..32].to_vec();
    foreign.extend_from_slice(&many[32 + lead_len..]);
    logs.push(("foreign", foreign));
    for (name, bytes) in &logs {
        let p = write_log(&dir, &format!("{name}.fdr"), bytes);
        let one = fdr(&["account", "--threads", "1", "--format", "json", &p]).unwrap();
        for n in ["2", "3", "8"] {
            let par = fdr(&["account", "--threads", n, "--format", "json", &p]).unwrap();
            assert_eq!(par, one, "{name} with {n} readers");
        }
        let rows: Vec<Value> = serde_json::from_str(&one).unwrap();
        assert!(!rows.is_empty(), "{name}");
    }
    // Damage gives an error either way, at the same offset when it is the first in the file.
    let bytes = many_threads_log(6, 0);
    for cut in (100..bytes.len()).step_by(97) {
        let p = write_log(&dir, "cut.fdr", &bytes[..cut]);
        let one = fdr(&["account", "--threads", "1", &p]);
        let two = fdr(&["account", "--threads", "2", &p]);
        match (one, two) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "cut at {cut}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "cut at {cut}"),
            (a, b) => panic!("cut at {cut}: {a:?} vs {b:?}"),
        }
    }
}

#[test]
fn fxt_with_more_threads_than_thread_slots_uses_inline_threads() {
    // FXT has 255 thread slots; the rest are written inline with their pid and tid.
    let dir = temp_dir("fxt-threads");
    let path = write_log(&dir, "t.fdr", &many_threads_log(300, 0));
    let json = fdr(&["convert", &path, "--format", "chrome", "-o", "-"]).unwrap();
    let (c, names, _) = chrome_spans(&json);
    assert_eq!(names.len(), 300);
    let out = dir.join("t.fxt");
    fdr(&[
        "convert",
        &path,
        "--format",
        "fxt",
        "-o",
        out.to_str().unwrap(),
    ])
    .unwrap();
    let trace = common::fxt::parse(&std::fs::read(&out).unwrap()).unwrap();
    common::fxt::assert_read_alike_by_fxt_package(&out, &trace);
    assert_eq!(trace.threads.len(), 300);
    let f = common::fxt::spans(&trace).unwrap();
    let mut a: Vec<_> = c
        .iter()
        .map(|s| (s.0 as u64, s.1.clone(), s.2, s.3))
        .collect();
    let mut b: Vec<_> = f
        .iter()
        .map(|s| (s.tid, s.name.clone(), s.start, s.end))
        .collect();
    a.sort();
    b.sort();
    assert!(a.len() > 300 * 4 * 10);
    assert_eq!(a, b);
}
