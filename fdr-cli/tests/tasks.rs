//! Async tasks (issue 11): `account` shows task latency beside the per-poll figures, `convert`
//! shows each task as one async slice over its polls, `stack` keeps per-poll call paths.

mod common;

use std::collections::HashMap;

use common::{fdr, golden, tasks_log, temp_dir, write_log};
use serde_json::Value;

fn out(args: &[&str], log: &str) -> String {
    fdr(args)
        .unwrap_or_else(|e| panic!("fdr {args:?}: {e}"))
        .replace(log, "<log>")
}

#[test]
fn golden_outputs_of_a_log_with_tasks() {
    let dir = temp_dir("tasks-golden");
    let log = write_log(&dir, "tasks.fdr", &tasks_log());
    let l = log.as_str();
    golden("tasks_account.txt", &out(&["account", l], l));
    golden(
        "tasks_account.json",
        &out(&["account", "--format", "json", "--sort", "id", l], l),
    );
    golden(
        "tasks_account.csv",
        &out(&["account", "--format", "csv", "--sort", "id", l], l),
    );
    golden("tasks_stack.txt", &out(&["stack", l], l));
    golden(
        "tasks_chrome.json",
        &out(&["convert", l, "--format", "chrome", "-o", "-"], l),
    );
}

#[test]
fn account_gives_task_latency_beside_the_per_poll_figures() {
    let dir = temp_dir("tasks-account");
    let log = write_log(&dir, "tasks.fdr", &tasks_log());
    for readers in ["1", "2"] {
        let json = fdr(&["account", "--format", "json", "--threads", readers, &log]).unwrap();
        let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
        let row = |n: &str| rows.iter().find(|r| r["function"] == n).unwrap().clone();
        let req = row("app::request");
        // Polls: two of task 100, one each of 101, 99 and 102.
        assert_eq!(req["count"], 5);
        assert_eq!(req["total_ns"], 100 + 100 + 50 + 100 + 50);
        let task = |k: &str| req[k].as_u64().unwrap();
        assert_eq!((task("tasks"), task("cancelled")), (4, 1));
        assert_eq!((task("task_min_ns"), task("task_max_ns")), (200, 1000));
        assert_eq!(task("task_total_ns"), 1000 + 300 + 200 + 500);
        // Nearest rank: the second of 200, 300, 500 and 1000 ns.
        assert!((298..=302).contains(&task("task_p50_ns")), "{req}");
        assert_eq!(task("task_p99_ns"), 1000);
        // Only the async function's object has the task keys.
        let serve = row("app::serve");
        assert!(serve.get("tasks").is_none(), "{serve}");
        assert_eq!(serve.as_object().unwrap().len(), 14);
        assert_eq!(req.as_object().unwrap().len(), 22);
    }
    let text = fdr(&["account", &log]).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("\u{2514} tasks, 1 cancelled * (1 open)")
                && l.trim_start().starts_with("4 ")),
        "{text}"
    );
    let help = fdr(&["account", "--help"]).unwrap();
    for key in ["tasks", "cancelled", "task_p99_ns", "task_total_ns"] {
        assert!(help.contains(key), "{key} in {help}");
    }
}

#[test]
fn chrome_shows_every_task_as_one_async_slice_over_its_polls() {
    let dir = temp_dir("tasks-chrome");
    let log = write_log(&dir, "tasks.fdr", &tasks_log());
    let json = fdr(&["convert", &log, "--format", "chrome", "-o", "-"]).unwrap();
    let v: Value = serde_json::from_str(&json).unwrap();
    let mut begins: HashMap<String, &Value> = HashMap::new();
    let mut ends: HashMap<String, &Value> = HashMap::new();
    let mut polls = Vec::new();
    for e in v["traceEvents"].as_array().unwrap() {
        let id = || e["id"].as_str().unwrap().to_string();
        match e["ph"].as_str().unwrap() {
            "b" => assert!(begins.insert(id(), e).is_none(), "one begin per task"),
            "e" => assert!(ends.insert(id(), e).is_none(), "one end per task"),
            "B" | "X" if e["name"] == "app::request" => polls.push(e["tid"].as_i64().unwrap()),
            _ => {}
        }
    }
    let ns = |e: &Value| (e["ts"].as_f64().unwrap() * 1000.0).round() as u64 + 1000;
    let mut got = Vec::new();
    for (id, b) in &begins {
        let e = ends
            .remove(id)
            .unwrap_or_else(|| panic!("task {id} has no end"));
        assert_eq!(
            (b["cat"].as_str(), e["cat"].as_str()),
            (Some("task"), Some("task"))
        );
        assert_eq!(
            (b["name"].as_str(), e["name"].as_str()),
            (Some("app::request"), Some("app::request"))
        );
        got.push((
            id.clone(),
            ns(b),
            ns(e),
            b["tid"].as_i64().unwrap(),
            e["tid"].as_i64().unwrap(),
            b["args"]["inferred_start"] == true,
            e["args"]["cancelled"] == true,
            e["args"]["open_at_end"] == true,
        ));
    }
    assert!(ends.is_empty(), "ends without begins: {ends:?}");
    got.sort();
    let s = |x: &str| x.to_string();
    assert_eq!(
        got,
        [
            (s("0x63"), 1500, 1700, 12, 12, true, false, false),
            (s("0x64"), 1100, 2100, 11, 12, false, false, false),
            (s("0x65"), 1300, 1600, 11, 11, false, true, false),
            (s("0x66"), 2500, 3000, 11, 11, false, false, true),
        ]
    );
    // The polls stay duration slices on the threads that ran them.
    polls.sort();
    assert_eq!(polls, [11, 11, 11, 12, 12]);
}

#[test]
fn fxt_shows_every_task_as_one_async_slice_over_its_polls() {
    let dir = temp_dir("tasks-fxt");
    let log = write_log(&dir, "tasks.fdr", &tasks_log());
    let out = dir.join("tasks.fxt");
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
    let tasks = common::fxt::async_spans(&trace).unwrap();
    use common::fxt::Value as V;
    let flag = |a: &[(String, V)], k: &str| a.iter().any(|(n, v)| n == k && *v == V::U32(1));
    let got: Vec<_> = tasks
        .iter()
        .map(|t| {
            (
                t.id,
                t.name.as_str(),
                t.category.as_str(),
                t.start + 1000,
                t.end + 1000,
                t.begin_tid,
                t.end_tid,
                flag(&t.begin_args, "inferred_start"),
                flag(&t.end_args, "cancelled"),
                flag(&t.end_args, "open_at_end"),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                99,
                "app::request",
                "task",
                1500,
                1700,
                12,
                12,
                true,
                false,
                false
            ),
            (
                100,
                "app::request",
                "task",
                1100,
                2100,
                11,
                12,
                false,
                false,
                false
            ),
            (
                101,
                "app::request",
                "task",
                1300,
                1600,
                11,
                11,
                false,
                true,
                false
            ),
            (
                102,
                "app::request",
                "task",
                2500,
                3000,
                11,
                11,
                false,
                false,
                true
            ),
        ]
    );
    let listing: String = tasks
        .iter()
        .map(|t| {
            format!(
                "{} {} {}..{} {}->{}\n",
                t.id, t.name, t.start, t.end, t.begin_tid, t.end_tid
            )
        })
        .collect();
    golden("tasks_fxt_async.txt", &listing);
    let polls = common::fxt::spans(&trace).unwrap();
    assert_eq!(polls.iter().filter(|s| s.name == "app::request").count(), 5);
}

#[test]
fn stack_keeps_per_poll_call_paths() {
    let dir = temp_dir("tasks-stack");
    let log = write_log(&dir, "tasks.fdr", &tasks_log());
    let folded = fdr(&["stack", "--format", "folded", &log]).unwrap();
    let mut lines: Vec<&str> = folded.lines().collect();
    lines.sort();
    // Polls under the caller that polled them (serve on thread 11), at the bottom of thread 12.
    assert_eq!(
        lines,
        [
            "app::request 140",
            "app::request;app::io 60",
            "app::serve 1800",
            "app::serve;app::request 200",
        ]
    );
}

/// Tasks tied to others, at 1 GHz: on thread 11, `app::request` (1) task 8 is polled from 100
/// to 200 and makes `app::fetch` (2) task 9 inside its poll at 150 (parent: task 8); thread 12
/// polls task 9 from 300 to 400. Request task 10, made at 500, follows from task 8.
fn linked_log() -> Vec<u8> {
    use fdr_format::{FunctionKind, LinkKind, TaskKind, TaskLink};
    use fdr_testkit::synth::LogBuilder;
    let mut log = LogBuilder::new(1_000_000_000);
    log.function_of_kind(1, "app::request", &[], FunctionKind::Async);
    log.function_of_kind(2, "app::fetch", &[], FunctionKind::Async);
    log.thread(11, "main");
    log.thread(12, "worker");
    let link = |kind, id, task, other_id, other_task| TaskLink {
        kind,
        id,
        task,
        other_id,
        other_task,
    };
    let mut b = log.block(11, 0, 50);
    b.task(TaskKind::Created, 1, 8, 50);
    b.enter(1, 100);
    b.task(TaskKind::Created, 2, 9, 150);
    b.link(link(LinkKind::Parent, 2, 9, 1, 8), 150);
    b.exit(1, 200);
    b.task(TaskKind::Completed, 1, 8, 200);
    b.task(TaskKind::Created, 1, 10, 500);
    b.link(link(LinkKind::FollowsFrom, 1, 10, 1, 8), 500);
    b.enter(1, 510);
    b.exit(1, 520);
    b.task(TaskKind::Completed, 1, 10, 520);
    b.finish();
    let mut b = log.block(12, 1, 300);
    b.enter(2, 300);
    b.exit(2, 400);
    b.task(TaskKind::Completed, 2, 9, 400);
    b.finish();
    log.finish()
}

#[test]
fn calls_replay_and_dump_show_what_each_task_is_tied_to() {
    let dir = temp_dir("tasks-links");
    let log = write_log(&dir, "linked.fdr", &linked_log());
    let l = log.as_str();
    // The tasks of the functions asked for, each with its links.
    let calls = out(&["calls", "--function", "app::*", l], l);
    let tasks: Vec<&str> = calls
        .lines()
        .skip_while(|line| !line.starts_with("tasks, slowest first"))
        .skip(1)
        .collect();
    // Task 9, made inside task 8 (its parent link), is shown under it (issue 58).
    assert_eq!(tasks.len(), 4, "{calls}");
    assert!(tasks[0].starts_with("1. app::request task 8 on"), "{calls}");
    assert!(
        tasks[1].starts_with("   \u{2514} app::fetch task 9 on thread 11 (main), created at"),
        "{calls}"
    );
    assert!(
        tasks[1].ends_with("completed after 250 ns on thread 12 (worker)"),
        "{calls}"
    );
    assert!(
        tasks[2].starts_with("2. app::request task 10 on"),
        "{calls}"
    );
    assert_eq!(tasks[3], "   follows from app::request task 8");
    // Asked for alone, it names its parent link.
    let alone = out(&["calls", "--task", "9", l], l);
    assert!(
        alone
            .lines()
            .any(|line| line == "   made inside app::request task 8"),
        "{alone}"
    );
    // Where each link was made, in the thread's calls.
    let replay = out(&["replay", l], l);
    let main: Vec<&str> = replay
        .lines()
        .skip_while(|line| !line.contains("main"))
        .skip(1)
        .take(5)
        .map(|line| line.split(" | ").nth(1).unwrap_or(line))
        .collect();
    assert_eq!(
        main,
        [
            "app::request() {",
            "  /* task 9 (app::fetch) made inside task 8 (app::request) */",
            "} /* app::request */",
            "/* task 10 (app::request) follows from task 8 (app::request) */",
            "app::request();",
        ],
        "{replay}"
    );
    let dump = out(&["dump", l], l);
    assert!(
        dump.contains("fdr task link: task=9 id=2 made inside task=8 id=1  app::fetch made inside app::request"),
        "{dump}"
    );
}
