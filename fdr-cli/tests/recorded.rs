//! Golden outputs of every command on logs recorded through the runtime with the injected
//! clock (1 GHz, so ticks are nanoseconds), and a ring window that starts mid-stack.

mod common;

use std::time::Duration;

use common::{fdr, golden, temp_dir};
use fdr_runtime::hooks::{enter, enter_args, exit, tail_exit};
use fdr_runtime::{testing, Config, FnDesc, FnKindTag, Mode};
use serde_json::Value;

macro_rules! desc {
    ($name:ident, $text:expr, $args:expr) => {
        #[fdr_runtime::linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
        #[linkme(crate = fdr_runtime::linkme)]
        static $name: FnDesc = FnDesc::new($text, "src/app.rs", 10, FnKindTag::Function, $args);
    };
}

desc!(MAIN, "app::main", &[]);
desc!(PARSE, "app::parse", &["len", "flags"]);
desc!(STEP, "app::Worker::step", &[]);
desc!(GET, "<app::Cache as app::Store>::get", &[]);
desc!(TAIL_CALLER, "app::tail_caller", &[]);
desc!(TAIL_CALLEE, "app::tail_callee", &[]);

/// Replaces what varies between runs and machines: the log's path, the program name and pid.
fn stable(s: &str, path: &str) -> String {
    s.replace(path, "<log>")
}

fn record_workload(path: &str) {
    let _turn = testing::exclusive();
    testing::use_mock_clock(1_000_000_000);
    testing::set_thread_id(1);
    testing::set_time(1000);
    let rec = fdr_runtime::start(
        Config::default()
            .buffer_size(256)
            .buffer_count(64)
            .threshold(Duration::ZERO)
            .mode(Mode::Fill),
    )
    .unwrap();
    enter(&MAIN);
    testing::advance(100);
    enter_args(&PARSE, &[42, 7]);
    testing::advance(500);
    exit(&PARSE);
    for i in 0..3 {
        enter(&STEP);
        testing::advance(50);
        enter(&GET);
        testing::advance(100 * (i + 1));
        exit(&GET);
        testing::advance(20);
        exit(&STEP);
    }
    testing::set_cpu(1);
    enter(&TAIL_CALLER);
    testing::advance(30);
    tail_exit(&TAIL_CALLER);
    enter(&TAIL_CALLEE);
    testing::advance(70);
    exit(&TAIL_CALLEE);
    std::thread::Builder::new()
        .name("worker".into())
        .spawn(|| {
            testing::set_thread_id(2);
            testing::set_time(1500);
            enter(&STEP);
            testing::advance(200);
            enter(&GET);
            testing::advance(1 << 33);
            exit(&GET);
            testing::advance(5);
            // The thread ends inside this call: it is still open in the log.
            enter(&STEP);
            testing::advance(40);
        })
        .unwrap()
        .join()
        .unwrap();
    testing::advance(10);
    exit(&MAIN);
    rec.finish(path).unwrap();
    testing::use_real_clock();
}

#[test]
fn golden_outputs_of_every_command_on_a_recorded_log() {
    let dir = temp_dir("recorded");
    let log = dir.join("rec.fdr").to_string_lossy().into_owned();
    record_workload(&log);
    let l = log.as_str();
    let run = |args: &[&str]| stable(&fdr(args).unwrap_or_else(|e| panic!("{args:?}: {e}")), l);
    // Info and dump name the program and its pid, which differ between runs: check them
    // apart, and keep the rest golden.
    let info = run(&["info", l]);
    let info: String = info
        .lines()
        .filter(|x| !x.starts_with("program") && !x.starts_with("file"))
        .map(|x| format!("{x}\n"))
        .collect();
    golden("rec_info.txt", &info);
    let dump = run(&["dump", "--verify", l]);
    let dump: String = dump
        .lines()
        .filter(|x| !x.contains("fdr run:"))
        .map(|x| format!("{x}\n"))
        .collect();
    golden("rec_dump.txt", &dump);
    golden("rec_account.txt", &run(&["account", l]));
    golden(
        "rec_account.csv",
        &run(&["account", "--format", "csv", "--sort", "name", l]),
    );
    golden(
        "rec_account.json",
        &run(&["account", "--format", "json", "--sort", "name", l]),
    );
    golden("rec_stack.txt", &run(&["stack", l]));
    golden("rec_calls.txt", &run(&["calls", l]));
    golden("rec_calls.json", &run(&["calls", "--format", "json", l]));
    golden("rec_replay.txt", &run(&["replay", l]));
    golden(
        "rec_stack.folded",
        &run(&["stack", "--format", "folded", l]),
    );
    let chrome = run(&["convert", l, "--format", "chrome", "-o", "-"]);
    // The process is named after the test binary, which carries a build hash.
    let v: Value = serde_json::from_str(&chrome).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let stable_events: Vec<&Value> = events
        .iter()
        .filter(|e| e["name"] != "process_name")
        .collect();
    golden(
        "rec_chrome.json",
        &stable_events
            .iter()
            .map(|e| format!("{e}\n"))
            .collect::<String>(),
    );
    let fxt = dir.join("rec.fxt");
    fdr(&["convert", l, "--format", "fxt", "-o", fxt.to_str().unwrap()]).unwrap();
    let trace = common::fxt::parse(&std::fs::read(&fxt).unwrap()).unwrap();
    common::fxt::assert_read_alike_by_fxt_package(&fxt, &trace);
    let spans = common::fxt::spans(&trace).unwrap();
    let listing: String = spans
        .iter()
        .map(|s| {
            format!(
                "{} {} {}..{} {:?} {:?}\n",
                s.tid, s.name, s.start, s.end, s.begin_args, s.end_args
            )
        })
        .collect();
    golden("rec_fxt_spans.txt", &listing);
    let svg = dir.join("rec.svg");
    fdr(&["flame", l, "-o", svg.to_str().unwrap()]).unwrap();
    let svg = std::fs::read_to_string(svg).unwrap();
    // The 8.6 s call of the worker leaves the main thread's calls too narrow to draw, so only
    // the worker's stack is guaranteed to be on the graph.
    assert!(
        svg.contains("app::Worker::step") && svg.contains("&lt;app::Cache as app::Store&gt;::get")
    );
}

#[test]
fn a_recorded_ring_window_that_starts_mid_stack_gets_inferred_entries() {
    let dir = temp_dir("recorded-ring");
    let log = dir.join("ring.fdr").to_string_lossy().into_owned();
    {
        let _turn = testing::exclusive();
        testing::use_mock_clock(1_000_000_000);
        testing::set_thread_id(7);
        testing::set_time(0);
        let rec = fdr_runtime::start(
            Config::default()
                .buffer_size(256)
                .buffer_count(4)
                .threshold(Duration::ZERO)
                .mode(Mode::Ring),
        )
        .unwrap();
        enter(&MAIN);
        testing::advance(10);
        enter(&STEP);
        // Far more calls than 4 buffers of 256 bytes hold: the entries above are overwritten.
        for _ in 0..200 {
            testing::advance(10);
            enter(&GET);
            testing::advance(5);
            exit(&GET);
        }
        testing::advance(10);
        exit(&STEP);
        testing::advance(10);
        exit(&MAIN);
        rec.finish(&log).unwrap();
        testing::use_real_clock();
    }
    let ring = |args: &[&str]| {
        let mut a = args.to_vec();
        a.insert(1, &log);
        fdr(&a).unwrap().replace(log.as_str(), "<log>")
    };
    golden("ring_calls.txt", &ring(&["calls", "--top", "3"]));
    golden("ring_replay.txt", &ring(&["replay"]));
    let json = fdr(&["account", "--format", "json", &log]).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    let row = |n: &str| {
        rows.iter()
            .find(|r| r["function"] == n)
            .unwrap_or_else(|| panic!("{n}: {json}"))
            .clone()
    };
    let main = row("app::main");
    let step = row("app::Worker::step");
    assert_eq!(
        (main["count"].as_u64(), step["count"].as_u64()),
        (Some(1), Some(1))
    );
    let get = row("<app::Cache as app::Store>::get");
    let kept = get["count"].as_u64().unwrap();
    assert!(
        kept > 0 && kept < 200,
        "the ring kept a window of the calls: {kept}"
    );
    assert!(get["max_ns"] == 5 && get["min_ns"] == 5);
    // The window starts at its first record; main and step span all of it and were inferred.
    let text = fdr(&["account", &log]).unwrap();
    assert!(
        text.contains("app::main *") && text.contains("app::Worker::step *"),
        "{text}"
    );
    let chrome = fdr(&["convert", &log, "--format", "chrome", "-o", "-"]).unwrap();
    let v: Value = serde_json::from_str(&chrome).unwrap();
    let mut depth = 0i64;
    let mut inferred = Vec::new();
    for e in v["traceEvents"].as_array().unwrap() {
        match e["ph"].as_str().unwrap() {
            "B" => {
                depth += 1;
                if e["args"]["inferred_start"] == true {
                    inferred.push(e["name"].as_str().unwrap().to_string());
                }
            }
            "E" => {
                depth -= 1;
                assert!(depth >= 0, "E before its B");
            }
            _ => {}
        }
    }
    assert_eq!(depth, 0, "balanced");
    assert_eq!(inferred, ["app::main", "app::Worker::step"]);
    assert_eq!(
        main["total_ns"].as_u64().unwrap(),
        step["total_ns"].as_u64().unwrap() + 10
    );
}

/// The log's first recorded thread owns the leading block, whose NewBuffer comes before the
/// thread names it carries: choosing that thread by name must work all the same.
#[test]
fn the_first_thread_is_chosen_by_its_name_too() {
    let dir = temp_dir("first-thread");
    let path = dir.join("first.fdr");
    {
        let _turn = testing::exclusive();
        testing::use_mock_clock(1_000_000_000);
        testing::set_time(1000);
        let rec = fdr_runtime::start(
            Config::default()
                .threshold(Duration::ZERO)
                .buffer_count(8)
                .mode(Mode::Fill),
        )
        .unwrap();
        std::thread::Builder::new()
            .name("first-one".into())
            .spawn(|| {
                testing::set_thread_id(5);
                testing::set_time(1000);
                enter(&MAIN);
                testing::advance(10);
                exit(&MAIN);
            })
            .unwrap()
            .join()
            .unwrap();
        std::thread::Builder::new()
            .name("second".into())
            .spawn(|| {
                testing::set_thread_id(6);
                testing::set_time(2000);
                enter(&STEP);
                testing::advance(10);
                exit(&STEP);
            })
            .unwrap()
            .join()
            .unwrap();
        rec.finish(&path).unwrap();
        testing::use_real_clock();
    }
    let p = path.to_str().unwrap();
    for (name, function) in [("first-one", "app::main"), ("second", "app::Worker::step")] {
        let out = fdr(&["account", "--format", "json", "--thread", name, p]).unwrap();
        let rows: Value = serde_json::from_str(&out).unwrap();
        let names: Vec<&str> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["function"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec![function], "--thread {name}");
    }
}
