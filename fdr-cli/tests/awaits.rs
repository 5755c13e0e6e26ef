//! What an async request waited for (issue 58), on a synthetic log written as the runtime
//! writes one ([`common::awaits_log`]): each task's latency split into running (its polls),
//! awaiting (by site) and scheduled (from each wake-up to the poll it asked for).

mod common;

use common::{awaits_log, fdr, temp_dir, write_log};
use fdr_format::{FunctionKind, LinkKind, TaskKind, TaskLink};
use fdr_testkit::synth::LogBuilder;
use serde_json::Value;

/// `fdr calls --format json --function FUNCTION` of the log: the tasks of FUNCTION, by id.
fn tasks(log: &str, function: &str, readers: &str) -> Vec<Value> {
    let json = fdr(&[
        "calls",
        "--format",
        "json",
        "--function",
        function,
        "--threads",
        readers,
        log,
    ])
    .unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    // Tasks are at the top, or under the task they were made or awaited in.
    let mut all = Vec::new();
    let mut todo: Vec<Value> = rows
        .into_iter()
        .filter(|r| r.get("task").is_some())
        .collect();
    while let Some(t) = todo.pop() {
        todo.extend(t["tasks"].as_array().unwrap().iter().cloned());
        all.push(t);
    }
    let mut tasks: Vec<Value> = all
        .into_iter()
        .filter(|r| r["function"] == function)
        .collect();
    tasks.sort_by_key(|t| t["task"].as_u64());
    tasks
}

#[test]
fn calls_splits_a_task_s_latency_into_running_awaiting_and_scheduled() {
    let dir = temp_dir("awaits-calls");
    let log = write_log(&dir, "awaits.fdr", &awaits_log());
    for readers in ["1", "2"] {
        let quotes = tasks(&log, "app::get_quote", readers);
        let ids: Vec<u64> = quotes.iter().map(|t| t["task"].as_u64().unwrap()).collect();
        assert_eq!(ids, [7, 9]);
        let t7 = &quotes[0];
        assert_eq!(t7["duration_ns"], 1700);
        // Polls 1000-1050, 2000-2100, 2600-2700.
        assert_eq!(
            (t7["polls"].as_u64(), t7["running_ns"].as_u64()),
            (Some(3), Some(250))
        );
        assert_eq!(t7["awaited_ns"], 1000 + 450);
        // Woken at 1800 and polled at 2000; woken at 2500 and polled at 2600.
        assert_eq!(
            (t7["wake_ups"].as_u64(), t7["scheduled_ns"].as_u64()),
            (Some(2), Some(300))
        );
        let at: Vec<(&str, u64, u64, u64)> = t7["awaits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["at"].as_str().unwrap(),
                    a["waited_ns"].as_u64().unwrap(),
                    a["polls"].as_u64().unwrap(),
                    a["start_ns"].as_u64().unwrap(),
                )
            })
            .collect();
        // Times from the first block, 1000.
        assert_eq!(
            at,
            [
                ("src/app.rs:20:9", 1000, 1, 45),
                ("src/app.rs:24:13", 450, 2, 1200)
            ]
        );
        // Task 9: its one poll, the wait of an unknown site inside it, and the wait it was
        // dropped in; its wake-up dated after its poll began was scheduled for no time, and the
        // wake-up of an unknown function is no task's.
        let t9 = &quotes[1];
        assert_eq!(
            (t9["polls"].as_u64(), t9["running_ns"].as_u64()),
            (Some(1), Some(10))
        );
        assert_eq!(
            (t9["wake_ups"].as_u64(), t9["scheduled_ns"].as_u64()),
            (Some(1), Some(0))
        );
        assert_eq!(t9["awaits"][0]["polls"], u64::from(u32::MAX));
        assert_eq!(t9["awaited_ns"], 5 + 300);
        let sites: Vec<(&str, bool)> = t9["awaits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["at"].as_str().unwrap(), a["dropped"].as_bool().unwrap()))
            .collect();
        assert_eq!(sites, [("#99", false), ("src/app.rs:20:9", true)]);
        let child = tasks(&log, "app::downstream_discount", readers);
        assert_eq!(child.len(), 1);
        let t8 = &child[0];
        assert_eq!(
            (t8["task"].as_u64(), t8["duration_ns"].as_u64()),
            (Some(8), Some(1030))
        );
        assert_eq!(
            (t8["polls"].as_u64(), t8["running_ns"].as_u64()),
            (Some(2), Some(50))
        );
        assert_eq!(t8["awaited_ns"], 980);
        assert_eq!(t8["scheduled_ns"], 0);
    }
    let text = fdr(&["calls", "--function", "app::get_quote", &log]).unwrap();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let task7 = lines
        .iter()
        .position(|l| l.contains("app::get_quote task 7 "))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        &lines[task7 + 1..task7 + 4],
        [
            "awaited src/app.rs:20:9 for 1.00 µs",
            "awaited src/app.rs:24:13 for 450 ns, woken 2 times",
            "ran 250 ns in 3 polls, awaited 1.45 µs, waited 300 ns to be polled after 2 wake-ups",
        ],
        "{text}"
    );
}

#[test]
fn account_by_await_gives_each_site_s_waits() {
    let dir = temp_dir("awaits-account");
    let log = write_log(&dir, "awaits.fdr", &awaits_log());
    for readers in ["1", "2"] {
        let json = fdr(&[
            "account",
            "--by",
            "await",
            "--format",
            "json",
            "--threads",
            readers,
            &log,
        ])
        .unwrap();
        let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
        let row = |r: &Value| {
            let n = |k: &str| r[k].as_u64().unwrap();
            (
                r["at"].as_str().unwrap().to_string(),
                r["function"].as_str().unwrap().to_string(),
                [n("id"), n("waits"), n("dropped"), n("min_ns")],
                [n("p90_ns"), n("p99_ns"), n("max_ns"), n("total_ns")],
            )
        };
        let got: Vec<_> = rows.iter().map(row).collect();
        let want = |at: &str, f: &str, head: [u64; 4], tail: [u64; 4]| {
            (at.to_string(), format!("app::{f}"), head, tail)
        };
        // Most time waited first; a site not in the table keeps its id.
        assert_eq!(
            got,
            [
                want(
                    "src/app.rs:20:9",
                    "get_quote",
                    [10, 2, 1, 300],
                    [1000, 1000, 1000, 1300]
                ),
                want(
                    "src/app.rs:40:5",
                    "downstream_discount",
                    [12, 1, 0, 980],
                    [980; 4]
                ),
                want("src/app.rs:24:13", "get_quote", [11, 1, 0, 450], [450; 4]),
                want("#99", "get_quote", [99, 1, 0, 5], [5; 4]),
            ]
        );
        // The median of 300 and 1000 by nearest rank, read from the histogram (within 0.8 %).
        assert!(
            (298..=302).contains(&rows[0]["p50_ns"].as_u64().unwrap()),
            "{json}"
        );
        assert_eq!(rows[0].as_object().unwrap().len(), 11);
    }
    let csv = fdr(&[
        "account", "--by", "await", "--format", "csv", "--sort", "name", "--top", "2", &log,
    ])
    .unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines,
        [
            "at,function,id,waits,dropped,min_ns,p50_ns,p90_ns,p99_ns,max_ns,total_ns",
            "#99,app::get_quote,99,1,0,5,5,5,5,5,5",
            "src/app.rs:20:9,app::get_quote,10,2,1,300,301,1000,1000,1000,1300",
        ]
    );
    // The filters hold: on thread io, task 9's two waits only.
    let text = fdr(&["account", "--by", "await", "--thread", "io", &log]).unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        &lines[..3],
        [
            "waits dropped min p50 p90 p99 max total await site (async fn)",
            "1 1 300 ns 300 ns 300 ns 300 ns 300 ns 300 ns src/app.rs:20:9 (app::get_quote)",
            "1 0 5 ns 5 ns 5 ns 5 ns 5 ns 5 ns #99 (app::get_quote)",
        ],
        "{text}"
    );
    let help = fdr(&["account", "--help"]).unwrap();
    assert!(help.contains("--by await"), "{help}");
}

#[test]
fn logs_with_waits_and_trees_and_their_bit_flips_go_through_every_command_cleanly() {
    let dir = temp_dir("awaits-fuzz");
    for (name, bytes) in [("awaits.fdr", awaits_log()), ("tree.fdr", tree_log())] {
        let log = write_log(&dir, name, &bytes);
        common::fuzz_check::every_command_is_clean(std::path::Path::new(&log));
        // One bit flipped in each of a spread of the events' bytes (deterministic).
        for at in (0..bytes.len()).step_by(37) {
            let mut b = bytes.clone();
            b[at] ^= 1 << (at % 8);
            std::fs::write(&log, &b).unwrap();
            common::fuzz_check::every_command_is_clean(std::path::Path::new(&log));
        }
    }
}

#[test]
fn every_truncation_of_a_log_with_waits_reads_without_a_panic() {
    let dir = temp_dir("awaits-cut");
    let bytes = awaits_log();
    let log = write_log(&dir, "cut.fdr", &bytes);
    for cut in (0..bytes.len()).step_by(4) {
        std::fs::write(&log, &bytes[..cut]).unwrap();
        for args in [
            &["calls", "--format", "json", "--function", "get_quote"][..],
            &["account", "--by", "await", "--threads", "2"][..],
        ] {
            let mut a = args.to_vec();
            a.push(&log);
            // An error (a truncated block) or a report; a panic fails the test.
            let _ = fdr(&a);
        }
    }
}

#[test]
fn timelines_draw_each_wait_inside_its_task_and_each_wake_up_as_a_flow() {
    let dir = temp_dir("awaits-timelines");
    let log = write_log(&dir, "awaits.fdr", &awaits_log());
    // FXT, read by an independent reader; times from the first block (1000).
    let out = dir.join("awaits.fxt");
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
    use common::fxt::Value as V;
    let arg = |a: &[(String, V)], k: &str| {
        a.iter().find(|(n, _)| n == k).map(|(_, v)| match v {
            V::U32(x) => u64::from(*x),
            V::U64(x) => *x,
            v => panic!("{k}: {v:?}"),
        })
    };
    let slices: Vec<_> = common::fxt::async_spans(&trace)
        .unwrap()
        .iter()
        .map(|s| {
            (
                s.id,
                s.name.clone(),
                s.start,
                s.end,
                s.begin_tid,
                arg(&s.begin_args, "polls"),
                arg(&s.begin_args, "dropped"),
            )
        })
        .collect();
    let slice = |id, name: &str, start, end, tid, polls, dropped| {
        (id, name.to_string(), start, end, tid, polls, dropped)
    };
    assert_eq!(
        slices,
        [
            slice(7, "app::get_quote", 0, 1700, 11, None, None),
            slice(7, "await src/app.rs:20:9", 45, 1045, 11, Some(1), None),
            slice(7, "await src/app.rs:24:13", 1200, 1650, 11, Some(2), None),
            slice(8, "app::downstream_discount", 10, 1040, 11, None, None),
            slice(8, "await src/app.rs:40:5", 30, 1010, 11, Some(1), None),
            slice(
                9,
                "await #99",
                1996,
                2001,
                12,
                Some(u64::from(u32::MAX)),
                None
            ),
            slice(9, "app::get_quote", 2000, 2310, 12, None, None),
            slice(9, "await src/app.rs:20:9", 2010, 2310, 12, Some(1), Some(1)),
        ]
    );
    // Wake-ups from a known thread: task 7's by thread 12 at 800, polled at 1000, and task 9's
    // dated after its poll (scheduled 0). Task 7's second, by an unknown thread, has none.
    let flows: Vec<_> = common::fxt::flows(&trace)
        .unwrap()
        .iter()
        .map(|f| {
            (
                f.name.as_str().to_string(),
                f.from_tid,
                f.start,
                f.to_tid,
                f.end,
                arg(&f.end_args, "task"),
                arg(&f.end_args, "scheduled_ns"),
            )
        })
        .collect();
    let wake = |from, start, to, end, task, scheduled| {
        (
            "wake".to_string(),
            from,
            start,
            to,
            end,
            Some(task),
            Some(scheduled),
        )
    };
    assert_eq!(
        flows,
        [
            wake(12, 800, 11, 1000, 7, 200),
            wake(12, 4000, 12, 2000, 9, 0)
        ]
    );

    // Chrome JSON: the same waits as b/e pairs on the task's id, the same flows as s/f.
    let json = fdr(&["convert", &log, "--format", "chrome", "-o", "-"]).unwrap();
    let v: Value = serde_json::from_str(&json).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let waits: Vec<(String, String, &str, f64, u64)> = events
        .iter()
        .filter(|e| e["name"].as_str().is_some_and(|n| n.starts_with("await ")))
        .map(|e| {
            (
                e["ph"].as_str().unwrap().to_string(),
                e["name"].as_str().unwrap().to_string(),
                e["id"].as_str().unwrap(),
                e["ts"].as_f64().unwrap(),
                e["args"]["polls"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let w = |ph: &str, site: &str, id, ts, polls| {
        (ph.to_string(), format!("await {site}"), id, ts, polls)
    };
    assert_eq!(
        waits,
        [
            w("b", "src/app.rs:40:5", "0x8", 0.030, 1),
            w("e", "src/app.rs:40:5", "0x8", 1.010, 0),
            w("b", "src/app.rs:20:9", "0x7", 0.045, 1),
            w("e", "src/app.rs:20:9", "0x7", 1.045, 0),
            w("b", "src/app.rs:24:13", "0x7", 1.200, 2),
            w("e", "src/app.rs:24:13", "0x7", 1.650, 0),
            w("b", "#99", "0x9", 1.996, u64::from(u32::MAX)),
            w("e", "#99", "0x9", 2.001, 0),
            w("b", "src/app.rs:20:9", "0x9", 2.010, 1),
            w("e", "src/app.rs:20:9", "0x9", 2.310, 0),
        ]
    );
    let dropped: Vec<bool> = events
        .iter()
        .filter(|e| e["ph"] == "b" && e["name"].as_str().is_some_and(|n| n.starts_with("await")))
        .map(|e| e["args"]["dropped"].as_bool().unwrap())
        .collect();
    assert_eq!(dropped, [false, false, false, false, true]);
    let flows: Vec<(String, u64, u64, f64, Value)> = events
        .iter()
        .filter(|e| e["cat"] == "wake")
        .map(|e| {
            (
                e["ph"].as_str().unwrap().to_string(),
                e["id"].as_u64().unwrap(),
                e["tid"].as_u64().unwrap(),
                e["ts"].as_f64().unwrap(),
                e["args"].clone(),
            )
        })
        .collect();
    let task = |t: u64, s: u64| serde_json::json!({"task": t, "scheduled_ns": s});
    assert_eq!(
        flows,
        [
            ("s".to_string(), 0, 12, 0.8, Value::Null),
            ("f".to_string(), 0, 11, 1.0, task(7, 200)),
            ("s".to_string(), 1, 12, 4.0, Value::Null),
            ("f".to_string(), 1, 12, 2.0, task(9, 0)),
        ]
    );
    assert!(events
        .iter()
        .filter(|e| e["ph"] == "f")
        .all(|e| e["bp"] == "e"));
}

/// Tasks made or awaited in others, at 1 GHz. On thread 11, inside `app::serve` (1, a plain
/// function), task 1 of `app::handle` (2) is created at 110 and polled 110-140 and 200-230: in
/// its first poll, `app::helper` (6) creates task 3 of `app::spawned` (4) at 116, and task 2 of
/// `app::fetch` (3) is created at 120 and polled inside (120-130, and 210-220 in the second).
/// On thread 12, task 3 is polled 150-160, and task 5 of `app::traced` (5), created at 170
/// outside any poll, is tied to task 1 by a parent link (as `fdr-tracing` writes).
fn tree_log() -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.leading_block(11, 100);
    log.function(1, "app::serve", &[]);
    log.function_of_kind(2, "app::handle", &["id"], FunctionKind::Async);
    log.function_of_kind(3, "app::fetch", &[], FunctionKind::Async);
    log.function_of_kind(4, "app::spawned", &[], FunctionKind::Async);
    log.function_of_kind(5, "app::traced", &[], FunctionKind::Async);
    log.function(6, "app::helper", &[]);
    log.thread(11, "main");
    log.thread(12, "worker");
    let mut b = log.block(11, 0, 100);
    b.enter(1, 100);
    b.task(TaskKind::Created, 2, 1, 110);
    b.enter_args(2, 110, &[42]);
    b.enter(6, 115);
    b.task(TaskKind::Created, 4, 3, 116);
    b.exit(6, 117);
    b.task(TaskKind::Created, 3, 2, 120);
    b.enter(3, 120);
    b.exit(3, 130);
    b.polled(3, 2, 130);
    b.exit(2, 140);
    b.polled(2, 1, 140);
    b.enter(2, 200);
    b.enter(3, 210);
    b.exit(3, 220);
    b.polled(3, 2, 220);
    b.task(TaskKind::Completed, 3, 2, 220);
    b.exit(2, 230);
    b.polled(2, 1, 230);
    b.task(TaskKind::Completed, 2, 1, 230);
    b.exit(1, 300);
    b.finish();
    let mut b = log.block(12, 1, 150);
    b.enter(4, 150);
    b.exit(4, 160);
    b.polled(4, 3, 160);
    b.task(TaskKind::Completed, 4, 3, 160);
    b.task(TaskKind::Created, 5, 5, 170);
    b.link(
        TaskLink {
            kind: LinkKind::Parent,
            id: 5,
            task: 5,
            other_id: 2,
            other_task: 1,
        },
        170,
    );
    b.enter(5, 170);
    b.exit(5, 180);
    b.polled(5, 5, 180);
    b.task(TaskKind::Completed, 5, 5, 180);
    b.finish();
    log.finish()
}

#[test]
fn calls_shows_a_task_and_the_tasks_made_or_awaited_in_it_as_one_tree() {
    let dir = temp_dir("awaits-tree");
    let log = write_log(&dir, "tree.fdr", &tree_log());
    for readers in ["1", "2"] {
        let json = fdr(&[
            "calls",
            "--format",
            "json",
            "--function",
            "app::*",
            "--threads",
            readers,
            &log,
        ])
        .unwrap();
        let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
        // One task at the top: the others are under it.
        let tops: Vec<&Value> = rows.iter().filter(|r| r.get("task").is_some()).collect();
        assert_eq!(tops.len(), 1, "{json}");
        let root = tops[0];
        assert_eq!(
            (root["task"].as_u64(), root["parent_task"].is_null()),
            (Some(1), true)
        );
        assert_eq!(root["args"][0]["name"], "id");
        assert_eq!(root["args"][0]["value"], 42);
        // By creation: made in its poll's callee, awaited in its poll, linked.
        let kids: Vec<(u64, &str, u64, u64)> = root["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["task"].as_u64().unwrap(),
                    t["function"].as_str().unwrap(),
                    t["parent_task"].as_u64().unwrap(),
                    t["polls"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            kids,
            [
                (3, "app::spawned", 1, 1),
                (2, "app::fetch", 1, 2),
                (5, "app::traced", 1, 1),
            ],
            "{json}"
        );
        assert!(root["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["tasks"] == serde_json::json!([])));
    }
    let text = fdr(&["calls", "--task", "1", &log]).unwrap();
    let lines: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("1. ")).collect();
    assert_eq!(
        lines,
        [
            "1. app::handle(id=42) task 1 on thread 11 (main), created at +10 ns, completed after 120 ns",
            "   ran 60 ns in 2 polls",
            "   \u{2514} app::spawned task 3 on thread 11 (main), created at +16 ns, completed after 44 ns on thread 12 (worker)",
            "       ran 10 ns in 1 poll",
            "   \u{2514} app::fetch task 2 on thread 11 (main), created at +20 ns, completed after 100 ns",
            "       ran 20 ns in 2 polls",
            "   \u{2514} app::traced task 5 on thread 12 (worker), created at +70 ns, completed after 10 ns",
            "       ran 10 ns in 1 poll",
        ],
        "{text}"
    );
    // A task under another, asked for alone, says where it was made or awaited.
    let text = fdr(&["calls", "--task", "2", &log]).unwrap();
    assert!(
        text.lines()
            .any(|l| l == "   inside app::handle task 1 (made or awaited in it)"),
        "{text}"
    );
    assert!(!text.contains("no calls"), "{text}");
    let e = fdr(&["calls", "--task", "77", &log])
        .unwrap_err()
        .to_string();
    assert!(e.contains("no task 77"), "{e}");
}

#[test]
fn timelines_mark_each_task_s_parent_at_its_creation() {
    let dir = temp_dir("awaits-tree-timelines");
    let log = write_log(&dir, "tree.fdr", &tree_log());
    let json = fdr(&["convert", &log, "--format", "chrome", "-o", "-"]).unwrap();
    let v: Value = serde_json::from_str(&json).unwrap();
    let marks: Vec<(String, &str, f64, u64, Value)> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "n")
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["id"].as_str().unwrap(),
                e["ts"].as_f64().unwrap(),
                e["tid"].as_u64().unwrap(),
                e["args"].clone(),
            )
        })
        .collect();
    let args = serde_json::json!({"parent_task": 1, "parent": "app::handle"});
    let mark = |id, ts, tid| {
        (
            "in app::handle task 1".to_string(),
            id,
            ts,
            tid,
            args.clone(),
        )
    };
    // Task 3 made in a callee of task 1's poll, task 2 awaited in it, task 5 linked to it.
    assert_eq!(
        marks,
        [
            mark("0x3", 0.016, 11),
            mark("0x2", 0.020, 11),
            mark("0x5", 0.070, 12)
        ]
    );
    let out = dir.join("tree.fxt");
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
    let instants = common::fxt::async_instants(&trace);
    let parent = vec![("parent_task".to_string(), common::fxt::Value::U64(1))];
    let name = "in app::handle task 1".to_string();
    assert_eq!(
        instants,
        [
            (3, name.clone(), 16, parent.clone()),
            (2, name.clone(), 20, parent.clone()),
            (5, name, 70, parent),
        ]
    );
    // The slices still pair up around them.
    assert_eq!(common::fxt::async_spans(&trace).unwrap().len(), 4);
}

#[test]
fn replay_says_which_task_each_poll_served_and_the_tasks_made_or_awaited_in_it() {
    let dir = temp_dir("awaits-tree-replay");
    let log = write_log(&dir, "tree.fdr", &tree_log());
    let replay = fdr(&["replay", &log]).unwrap();
    let lines: Vec<&str> = replay
        .lines()
        .filter(|l| l.contains(" | "))
        .map(|l| l.split(" | ").nth(1).unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            "FUNCTION",
            "app::serve() {",
            "  app::handle(id=42) {",
            "    app::helper();",
            "    app::fetch();",
            "    /* task 2 */",
            "  } /* app::handle */",
            "  /* task 1; made or awaited in it: task 3, task 2 */",
            "  app::handle() {",
            "    app::fetch();",
            "    /* task 2 */",
            "  } /* app::handle */",
            "  /* task 1 */",
            "} /* app::serve */",
            "app::spawned();",
            "/* task 3 */",
            "/* task 5 (app::traced) made inside task 1 (app::handle) */",
            "app::traced();",
            "/* task 5 */",
        ],
        "{replay}"
    );
}

/// The lines of a replay after its `FUNCTION` header, the thread breaks as `#` and the
/// duration column dropped.
fn replay_lines(replay: &str) -> Vec<String> {
    replay
        .lines()
        .skip_while(|l| !l.contains("| FUNCTION"))
        .skip(1)
        .map(|l| match l.split_once(" | ") {
            Some((_, f)) => f.to_string(),
            None => l.to_string(),
        })
        .collect()
}

#[test]
fn replay_task_shows_the_polls_of_one_task_s_tree_alone_on_every_thread() {
    let dir = temp_dir("awaits-tree-replay-task");
    let log = write_log(&dir, "tree.fdr", &tree_log());
    // Task 1: its two polls (task 2's nested in them), task 3 made in its first poll and
    // polled on the worker, task 5 linked to it; app::serve, which is no poll, is left out.
    let replay = fdr(&["replay", "--task", "1", &log]).unwrap();
    assert!(
        replay.contains(
            "# task 1 and the tasks made or awaited in it: 4 task(s) polled in the window"
        ),
        "{replay}"
    );
    assert_eq!(
        replay_lines(&replay),
        [
            "# thread 11 (main)",
            "  app::handle(id=42) {",
            "    app::helper();",
            "    app::fetch();",
            "    /* task 2 */",
            "  } /* app::handle */",
            "  /* task 1; made or awaited in it: task 3, task 2 */",
            "  app::handle() {",
            "    app::fetch();",
            "    /* task 2 */",
            "  } /* app::handle */",
            "  /* task 1 */",
            "#",
            "# thread 12 (worker)",
            "app::spawned();",
            "/* task 3 */",
            "app::traced();",
            "/* task 5 */",
        ],
        "{replay}"
    );
    // Task 2, awaited inside task 1's polls: its own polls, at their depth, nothing of task 1.
    let replay = fdr(&["replay", "--task", "2", &log]).unwrap();
    assert_eq!(
        replay_lines(&replay),
        [
            "# thread 11 (main)",
            "    app::fetch();",
            "    /* task 2 */",
            "    app::fetch();",
            "    /* task 2 */"
        ],
        "{replay}"
    );
    // A task without a poll in the window says so.
    let replay = fdr(&["replay", "--task", "77", &log]).unwrap();
    assert_eq!(
        replay_lines(&replay),
        ["no poll of task 77 in the window"],
        "{replay}"
    );
}

#[test]
fn parent_links_in_a_cycle_neither_hang_nor_hide_the_tasks() {
    // Tasks 1 and 2 each linked as the other's parent, task 3 as its own (a hostile log).
    let mut log = LogBuilder::new(1_000_000_000);
    log.function_of_kind(1, "app::a", &[], FunctionKind::Async);
    let mut b = log.block(11, 0, 100);
    let link = |task, other_task| TaskLink {
        kind: LinkKind::Parent,
        id: 1,
        task,
        other_id: 1,
        other_task,
    };
    for (task, start) in [(1, 100), (2, 110), (3, 120)] {
        b.task(TaskKind::Created, 1, task, start);
    }
    b.link(link(1, 2), 130);
    b.link(link(2, 1), 130);
    b.link(link(3, 3), 130);
    for (task, end) in [(1, 200), (2, 300), (3, 400)] {
        b.task(TaskKind::Completed, 1, task, end);
    }
    b.finish();
    let dir = temp_dir("awaits-cycle");
    let log = write_log(&dir, "cycle.fdr", &log.finish());
    let json = fdr(&["calls", "--format", "json", &log]).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    // Each of 1 and 2 has the other as an ancestor: both stay at the top, each once more under
    // the other; 3 is its own parent in no way.
    let top: Vec<(u64, Vec<u64>)> = rows
        .iter()
        .map(|t| {
            let kids = t["tasks"].as_array().unwrap();
            (
                t["task"].as_u64().unwrap(),
                kids.iter().map(|k| k["task"].as_u64().unwrap()).collect(),
            )
        })
        .collect();
    assert_eq!(top, [(3, vec![]), (2, vec![1]), (1, vec![2])], "{json}");
    let text = fdr(&["calls", "--task", "1", &log]).unwrap();
    assert_eq!(text.matches(" task ").count(), 3, "{text}");
}
