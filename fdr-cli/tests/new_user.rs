//! What a new user of the `fdr` command meets reading a service's log: threads a runtime names
//! alike, told apart; the task list of `fdr calls` in its JSON as in its text.

mod common;

use common::{fdr, tasks_log, temp_dir, write_log};
use fdr_testkit::synth::LogBuilder;
use serde_json::Value;

/// Two tokio workers, both `tokio-rt-worker`, and the main thread: each runs `app::handle` once
/// (at 1 GHz, ticks are nanoseconds).
fn workers_log() -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.leading_block(7, 500);
    log.function(1, "app::handle", &[]);
    log.thread(7, "main");
    log.thread(12, "tokio-rt-worker");
    log.thread(11, "tokio-rt-worker");
    for (tid, start) in [(7, 1000), (11, 1100), (12, 1200)] {
        let mut b = log.block(tid, 0, start);
        b.enter(1, start);
        b.exit(1, start + 50);
        b.finish();
    }
    log.finish()
}

#[test]
fn threads_a_runtime_names_alike_are_told_apart_in_every_output() {
    let dir = temp_dir("new-user-threads");
    let log = write_log(&dir, "workers.fdr", &workers_log());
    // The timeline's tracks.
    let out = dir.join("t.json");
    fdr(&[
        "convert",
        &log,
        "--format",
        "chrome",
        "-o",
        out.to_str().unwrap(),
    ])
    .unwrap();
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let events = trace.as_array().cloned().unwrap_or_else(|| {
        trace["traceEvents"]
            .as_array()
            .cloned()
            .expect("an array of events")
    });
    let mut names: Vec<(i64, String)> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_i64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            (7, "main".to_string()),
            (11, "tokio-rt-worker#1".to_string()),
            (12, "tokio-rt-worker#2".to_string()),
        ]
    );
    // `--thread` takes the numbered name for one of them, the shared name for both.
    let one = fdr(&[
        "calls",
        "--format",
        "json",
        "--thread",
        "tokio-rt-worker#2",
        &log,
    ])
    .unwrap();
    let calls: Vec<Value> = serde_json::from_str(&one).unwrap();
    let tids: Vec<i64> = calls
        .iter()
        .map(|c| c["thread"].as_i64().unwrap())
        .collect();
    assert_eq!(tids, [12]);
    let both = fdr(&[
        "calls",
        "--format",
        "json",
        "--thread",
        "tokio-rt-worker",
        &log,
    ])
    .unwrap();
    let calls: Vec<Value> = serde_json::from_str(&both).unwrap();
    let mut tids: Vec<i64> = calls
        .iter()
        .map(|c| c["thread"].as_i64().unwrap())
        .collect();
    tids.sort();
    assert_eq!(tids, [11, 12]);
}

#[test]
fn calls_in_json_list_the_tasks_the_text_lists() {
    let dir = temp_dir("new-user-tasks");
    let log = write_log(&dir, "tasks.fdr", &tasks_log());
    // The tasks of the functions asked for, after their calls.
    let text = fdr(&["calls", "--function", "request", &log]).unwrap();
    assert!(text.contains("tasks, slowest first"), "{text}");
    let json = fdr(&["calls", "--format", "json", "--function", "request", &log]).unwrap();
    let all: Vec<Value> = serde_json::from_str(&json).unwrap();
    let tasks: Vec<&Value> = all.iter().filter(|c| c.get("task").is_some()).collect();
    // Slowest first, as the text lists them: 100 (1000 ns), 102 (open, 500), 101 (300), 99.
    let ids: Vec<u64> = tasks.iter().map(|t| t["task"].as_u64().unwrap()).collect();
    assert_eq!(ids, [100, 102, 101, 99], "{json}");
    let t100 = tasks[0];
    assert_eq!(t100["function"], "app::request");
    assert_eq!(t100["duration_ns"], 1000);
    assert_eq!(t100["thread"], 11);
    assert_eq!(t100["end_thread"], 12);
    assert_eq!(t100["cancelled"], false);
    assert_eq!(tasks[1]["open_at_end"], true);
    assert_eq!(tasks[2]["cancelled"], true);
    assert_eq!(tasks[3]["inferred_start"], true);
    // The calls come first, each without a task key.
    assert!(all[0].get("task").is_none());
}
