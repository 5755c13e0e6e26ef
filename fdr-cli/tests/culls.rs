//! Culled functions (issue 14): `info` and `account` list them from the log's cull events, and
//! `account` marks their counts as a sample.

mod common;

use common::{culled_log, fdr, golden, temp_dir, write_log};
use serde_json::Value;

fn out(args: &[&str], log: &str) -> String {
    fdr(args)
        .unwrap_or_else(|e| panic!("fdr {args:?}: {e}"))
        .replace(log, "<log>")
}

const LIST: &str =
    "  app::upper: culled before the window, restored at +3.00 µs by thread 11 (main)
  app::len: culled at +1.00 µs by thread 11 (main), restored at +5.00 µs by thread 12 (worker)
  app::lower: culled at +2.00 µs by thread 12 (worker), still culled at the end of the log
";

#[test]
fn info_lists_the_culled_functions_with_thread_and_times() {
    let dir = temp_dir("culls-info");
    let log = write_log(&dir, "culled.fdr", &culled_log());
    let info = out(&["info", &log], &log);
    golden("culled_info.txt", &info);
    assert!(
        info.contains(&format!(
            "culled      3 functions: while culled, a call was recorded only when a probe let it through\n{LIST}"
        )),
        "{info}"
    );
    // What the recording left out, from the run record's counters (issue 26).
    assert!(
        info.contains(
            "calls       since recording started: 120000 erased (shorter than 5.00 µs); culled \
             functions were probed 7800 times (calls of culled functions are skipped uncounted)\n"
        ),
        "{info}"
    );
}

#[test]
fn account_marks_culled_functions_as_sampled_and_lists_them() {
    let dir = temp_dir("culls-account");
    let log = write_log(&dir, "culled.fdr", &culled_log());
    let text = out(&["account", &log], &log);
    golden("culled_account.txt", &text);
    for f in ["app::len", "app::lower", "app::upper"] {
        assert!(text.contains(&format!("  {f} ~\n")), "{f}: {text}");
    }
    assert!(text.contains("  app::main\n"), "{text}");
    assert!(
        text.contains("~ culled for part of the recording"),
        "{text}"
    );
    // The fixture erased most calls, so the window's note closes the report.
    assert!(
        text.contains(&format!(
            "culled functions:\n{LIST}note: in this window, most calls"
        )),
        "{text}"
    );
    for readers in ["1", "2"] {
        let json = fdr(&["account", "--format", "json", "--threads", readers, &log]).unwrap();
        let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
        for r in &rows {
            let culled = r["function"] != "app::main";
            assert_eq!(r.get("culled") == Some(&Value::Bool(true)), culled, "{r}");
            assert_eq!(r.get("culled").is_some(), culled, "{r}");
        }
        assert_eq!(rows.len(), 4);
    }
}

#[test]
fn a_log_without_cull_events_lists_none() {
    let dir = temp_dir("culls-none");
    let log = write_log(&dir, "basic.fdr", &common::basic_log());
    assert!(!out(&["info", &log], &log).contains("culled"));
    assert!(!out(&["account", &log], &log).contains("culled"));
    assert!(!out(&["account", "--format", "json", &log], &log).contains("culled"));
}

#[test]
fn dump_names_cull_and_task_events() {
    let dir = temp_dir("culls-dump");
    let log = write_log(&dir, "culled.fdr", &culled_log());
    let dump = out(&["dump", "--verify", &log], &log);
    assert!(
        dump.contains("fdr culled: id=2 run=10000  app::len\n"),
        "{dump}"
    );
    assert!(
        dump.contains("fdr restored: id=2 run=0  app::len\n"),
        "{dump}"
    );
    let log = write_log(&dir, "tasks.fdr", &common::tasks_log());
    let dump = out(&["dump", "--verify", &log], &log);
    assert!(
        dump.contains("fdr task cancelled: task=101 id=2  app::request\n"),
        "{dump}"
    );
}
