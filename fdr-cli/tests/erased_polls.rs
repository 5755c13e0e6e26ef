//! An async fn whose polls were all erased (each shorter than the threshold) while its task took
//! 80 ms: `fdr calls` shows the task's latency rather than "no calls", and `fdr diff` compares
//! task latency (issue 21, item 8).

mod common;

use common::{fdr, temp_dir, write_log};
use fdr_format::{ClockSource, FunctionKind, RunInfo, TaskKind};
use fdr_testkit::synth::LogBuilder;
use serde_json::Value;

/// At 1 GHz, threshold 5 µs: `app::fetch` (async) has tasks of `lengths` ns, created one after
/// the other on thread 11 and completed on thread 12; their polls were erased. `app::log`
/// has one kept call of 6 µs.
fn fetch_log(lengths: &[u64]) -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        clock: ClockSource::Injected,
        ticks_per_second: 1_000_000_000,
        threshold_ns: 5000,
        threshold_ticks: 5000,
        pid: 1,
        program: "svc".into(),
        calls_erased: 4,
        end_tsc: 1_000_000_000,
        ..RunInfo::default()
    });
    log.function_of_kind(1, "app::fetch", &[], FunctionKind::Async);
    log.function(2, "app::log", &[]);
    log.thread(11, "main");
    log.thread(12, "worker");
    let mut b = log.block(11, 0, 1000);
    let mut t = 1000;
    for (i, _) in lengths.iter().enumerate() {
        b.task(TaskKind::Created, 1, 100 + i as u64, t);
        t += 10;
    }
    b.enter(2, t);
    b.exit(2, t + 6000);
    b.finish();
    let mut b = log.block(12, 0, 1000);
    let mut ends: Vec<(u64, u64)> = lengths
        .iter()
        .enumerate()
        .map(|(i, &len)| (1000 + 10 * i as u64 + len, 100 + i as u64))
        .collect();
    ends.sort();
    for (end, task) in ends {
        b.task(TaskKind::Completed, 1, task, end);
    }
    b.finish();
    log.finish()
}

#[test]
fn calls_of_an_async_fn_whose_polls_were_erased_show_its_tasks() {
    let dir = temp_dir("erased-polls");
    let log = write_log(&dir, "svc.fdr", &fetch_log(&[80_000_000, 2_000_000]));
    let text = fdr(&["calls", "--function", "app::fetch", &log]).unwrap();
    assert_eq!(
        text,
        "no calls\n\
         \n\
         tasks, slowest first: each call of an async fn, from its creation to its completion \
         or drop (its calls above are its polls; fdr account has their table)\n\
         1. app::fetch task 100 on thread 11 (main), created at +0 ns, completed after 80.0 ms on \
         thread 12 (worker)\n\
         2. app::fetch task 101 on thread 11 (main), created at +10 ns, completed after 2.00 ms on \
         thread 12 (worker)\n"
    );
    // --top bounds the tasks too; the whole log's calls come first, then the tasks when no
    // function is chosen only if there is no call to list.
    let top1 = fdr(&["calls", "--function", "fetch", "--top", "1", &log]).unwrap();
    assert_eq!(
        top1.lines()
            .filter(|l| l.contains("app::fetch task "))
            .count(),
        1
    );
    let all = fdr(&["calls", &log]).unwrap();
    assert!(all.starts_with("1. app::log on thread 11 (main)"), "{all}");
    assert!(!all.contains("app::fetch task "), "{all}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn diff_compares_task_latency() {
    let dir = temp_dir("diff-tasks");
    let before = write_log(&dir, "before.fdr", &fetch_log(&[10_000_000, 20_000_000]));
    let after = write_log(
        &dir,
        "after.fdr",
        &fetch_log(&[80_000_000, 20_000_000, 30_000_000]),
    );
    let json = fdr(&["diff", "--format", "json", &before, &after]).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    let fetch = rows.iter().find(|r| r["function"] == "app::fetch").unwrap();
    let side = |s: &str, k: &str| {
        fetch[s][k]
            .as_u64()
            .unwrap_or_else(|| panic!("{s}.{k} in {fetch}"))
    };
    assert_eq!((side("before", "count"), side("after", "count")), (0, 0));
    assert_eq!((side("before", "tasks"), side("after", "tasks")), (2, 3));
    assert_eq!(side("before", "task_total_ns"), 30_000_000);
    assert_eq!(side("after", "task_total_ns"), 130_000_000);
    assert_eq!(side("after", "task_p99_ns"), 80_000_000);
    assert_eq!(fetch["change_task_total_ns"], 100_000_000);
    // A function without tasks has no task keys.
    let log_fn = rows.iter().find(|r| r["function"] == "app::log").unwrap();
    assert!(log_fn["after"].get("tasks").is_none(), "{log_fn}");
    // In text, the async function's task latency has a line of its own.
    let text = fdr(&["diff", &before, &after]).unwrap();
    assert!(text.contains("└ tasks"), "{text}");
    std::fs::remove_dir_all(dir).ok();
}
