//! Why a log was written (issue 10): `info` prints the reason record and sizing help for a
//! window kept by age, `convert` marks the triggering call with an instant event, `account`
//! and `stack` name the call that fired in their header.

mod common;

use common::{fdr, golden, temp_dir, triggered_log, triggered_log_with, write_log};
use serde_json::Value;

fn out(args: &[&str], log: &str) -> String {
    fdr(args)
        .unwrap_or_else(|e| panic!("fdr {args:?}: {e}"))
        .replace(log, "<log>")
}

const FIRED: &str =
    "triggered by slow call of app::handle on thread 11 (main), started at +200 ns, \
                     lasted 3.60 µs";

#[test]
fn info_says_why_the_log_was_written_and_how_big_the_pool_should_be() {
    let dir = temp_dir("why-info");
    let log = write_log(&dir, "trig.fdr", &triggered_log());
    let info = out(&["info", &log], &log);
    golden("trig_info.txt", &info);
    assert!(
        info.contains(
            "reason      slow call of app::handle on thread 11 (main), started at +200 ns, \
             lasted 3.60 µs; 3 triggers suppressed"
        ),
        "{info}"
    );
    // Thread 11: two blocks of 80 + 32 and 80 + 32 bytes over 4 µs, i.e. 56 MB/s: 1 ms of it
    // is 56,000 bytes, 219 buffers of 256 bytes. Thread 12: 80 + 16 bytes over 1 µs, 96 MB/s:
    // 375 buffers.
    assert!(
        info.contains(
            "max age     1.00 ms (logs keep each thread's last 1.00 ms): 2 of 2 threads' windows \
             cover less; at the observed rates the pool would need about 594 buffers of 256 \
             bytes (it has 4)"
        ),
        "{info}"
    );
    assert!(
        info.contains("        11    4.00 µs          224   53.4 MiB/s  main\n"),
        "{info}"
    );
    assert!(
        info.contains("        12    1.00 µs           96   91.6 MiB/s  pool\n"),
        "{info}"
    );
}

#[test]
fn info_says_where_the_call_s_time_went_and_what_the_host_s_waits_held_back() {
    let dir = temp_dir("why-went");
    let log = write_log(
        &dir,
        "went.fdr",
        &triggered_log_with(|r| fdr_format::ReasonInfo {
            cpu_wait_ns: Some(1_000),
            off_cpu_ns: Some(2_000),
            cpu_wait_suppressed: 2,
            ..r
        }),
    );
    let info = out(&["info", &log], &log);
    assert!(
        info.contains(
            "lasted 3.60 µs; it ran 600 ns, waited for a CPU 1.00 µs, was off the CPU 2.00 µs; \
             3 triggers suppressed\n            2 calls past a learned limit only because their \
             thread waited for a CPU: not written (the host's doing, not the function's)\n"
        ),
        "{info}"
    );
    let dump = out(&["dump", &log], &log);
    assert!(
        dump.contains(" cpu_wait_ns=1000 off_cpu_ns=2000 cpu_wait_suppressed=2"),
        "{dump}"
    );
}

#[test]
fn account_and_stack_name_the_call_that_fired_in_their_header() {
    let dir = temp_dir("why-header");
    let log = write_log(&dir, "trig.fdr", &triggered_log());
    for cmd in ["account", "stack", "calls"] {
        let text = out(&[cmd, &log], &log);
        assert_eq!(text.lines().next(), Some(FIRED), "{cmd}: {text}");
    }
    let replay = out(&["replay", &log], &log);
    assert_eq!(replay.lines().next(), Some(format!("# {FIRED}").as_str()));
    // Machine-readable outputs are unchanged: one JSON array, CSV rows, folded lines.
    let json = out(&["account", "--format", "json", &log], &log);
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(rows.len(), 3);
    let csv = out(&["account", "--format", "csv", &log], &log);
    assert!(csv.starts_with("function,id,count,"), "{csv}");
    let folded = out(&["stack", "--format", "folded", &log], &log);
    assert!(!folded.contains("triggered"), "{folded}");
}

#[test]
fn convert_marks_the_triggering_call_with_an_instant_on_its_thread() {
    let dir = temp_dir("why-convert");
    let log = write_log(&dir, "trig.fdr", &triggered_log());
    let json = fdr(&["convert", &log, "--format", "chrome", "-o", "-"]).unwrap();
    let v: Value = serde_json::from_str(&json).unwrap();
    let instants: Vec<&Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "i")
        .collect();
    assert_eq!(instants.len(), 1, "{json}");
    let i = instants[0];
    assert_eq!(i["name"], "trigger: slow call app::handle");
    assert_eq!((i["tid"].as_i64(), i["s"].as_str()), (Some(11), Some("t")));
    // The trigger fired when the call ended: 4.8 µs, 3.8 µs after the window start.
    assert_eq!(i["ts"].as_f64(), Some(3.8));
    assert_eq!(i["args"]["duration_ns"], 3600);
    assert_eq!(i["args"]["suppressed"], 3);

    let fxt = dir.join("trig.fxt");
    fdr(&[
        "convert",
        &log,
        "--format",
        "fxt",
        "-o",
        fxt.to_str().unwrap(),
    ])
    .unwrap();
    let trace = common::fxt::parse(&std::fs::read(&fxt).unwrap()).unwrap();
    common::fxt::assert_read_alike_by_fxt_package(&fxt, &trace);
    let instants = common::fxt::instants(&trace);
    assert_eq!(instants.len(), 1);
    let i = instants[0];
    assert_eq!(
        (i.name.as_str(), i.category.as_str(), i.tid, trace.ns(i.ts)),
        ("trigger: slow call app::handle", "trigger", 11, 3800)
    );
    assert!(i
        .args
        .contains(&("duration_ns".to_string(), common::fxt::Value::U64(3600))));
    // The calls are all there besides it.
    assert_eq!(common::fxt::spans(&trace).unwrap().len(), 5);
}

#[test]
fn logs_without_a_trigger_have_no_mark_and_no_header() {
    let dir = temp_dir("why-none");
    let log = write_log(&dir, "basic.fdr", &common::basic_log());
    assert!(out(&["account", &log], &log).starts_with("count"));
    let json = fdr(&["convert", &log, "--format", "chrome", "-o", "-"]).unwrap();
    assert!(!json.contains("\"ph\":\"i\""));
    assert!(!out(&["info", &log], &log).contains("reason"));
}
