//! The cost budget (`budget=PERCENT`): `info` prints the budget record (the budget, the
//! recorder's estimates, the functions it untimed and from when to when) and `account` marks
//! the functions untimed during its window, in text and JSON; a log without the record prints
//! neither, and a record that claims more spans than it holds is an error, not a panic.
//!
//! The logs run at 1 GHz (ticks are nanoseconds); time zero, the earliest window start, is
//! tick 1,000,000.

mod common;

use common::{fdr, temp_dir, write_log};
use fdr_format::{BudgetInfo, BudgetSpan, ClockSource, Extension, Mode, RunInfo};
use fdr_testkit::synth::LogBuilder;
use serde_json::Value;

const MAIN: u32 = 1;
const CHECK: u32 = 2;
const HASH: u32 = 3;
const OTHER: u32 = 4;
const EARLY: u32 = 5;
const IDLE: u32 = 6;

/// Time zero of the logs' outputs: thread 11's window starts there.
const ZERO: u64 = 1_000_000;

fn span(function: u32, from_tsc: u64, to_tsc: Option<u64>, calls_per_second: u64) -> BudgetSpan {
    BudgetSpan {
        function,
        from_tsc,
        to_tsc,
        calls_per_second,
    }
}

/// The budget of [`budget_log`]: 1 %, the estimate 0.42 % over the run (0.31 % at the last
/// look, 2.8 % at the highest); `app::check` untimed from +1 ms to +4 ms, `app::hash` from +7
/// ms to the end.
fn budget() -> BudgetInfo {
    BudgetInfo {
        budget_ppm: 10_000,
        call_cost_ps: 18_200,
        estimate_ppm: 3_100,
        peak_ppm: 28_000,
        overall_ppm: 4_200,
        looks: 95,
        untimed: vec![
            span(CHECK, ZERO + 1_000_000, Some(ZERO + 4_000_000), 2_100_000),
            span(HASH, ZERO + 7_000_000, None, 850_000),
        ],
        spans_dropped: 0,
    }
}

/// Two threads (and `app::main`'s await site in the table): `app::main` on 11 calls `app::check` before and after its span and
/// `app::hash` before its span; thread 12 calls `app::other`. With `budget`, its record.
fn budget_log(budget: Option<BudgetInfo>) -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.leading_block(11, 500_000);
    log.run(RunInfo {
        clock: ClockSource::Injected,
        ticks_per_second: 1_000_000_000,
        mode: Mode::Ring,
        threshold_ns: 5_000,
        threshold_ticks: 5_000,
        buffer_size: 65_536,
        buffer_count: 8,
        pid: 1,
        program: "app".into(),
        start_tsc: 500_000,
        end_tsc: ZERO + 9_000_000,
        ..RunInfo::default()
    });
    if let Some(b) = budget {
        log.extension(&Extension::Budget(b));
    }
    log.function(MAIN, "app::main", &[]);
    log.function(CHECK, "app::check", &[]);
    log.function(HASH, "app::hash", &[]);
    log.function(OTHER, "app::other", &[]);
    log.function(EARLY, "app::early", &[]);
    log.function(IDLE, "app::idle", &[]);
    log.await_site(MAIN_WAIT, "app::main", "src/main.rs", 40, 17);
    log.thread(11, "main");
    log.thread(12, "worker");
    let mut b = log.block(11, 0, ZERO);
    b.enter(MAIN, ZERO);
    for (f, at) in [
        (CHECK, 100_000),
        (CHECK, 500_000),
        (CHECK, 5_000_000),
        (HASH, 6_000_000),
    ] {
        b.enter(f, ZERO + at);
        b.exit(f, ZERO + at + 50_000);
    }
    b.exit(MAIN, ZERO + 8_500_000);
    b.finish();
    let mut b = log.block(12, 1, ZERO + 200_000);
    for at in [200_000, 3_000_000, 8_000_000] {
        b.enter(OTHER, ZERO + at);
        b.exit(OTHER, ZERO + at + 20_000);
    }
    b.finish();
    log.finish()
}

fn out(args: &[&str], log: &str) -> String {
    fdr(args)
        .unwrap_or_else(|e| panic!("fdr {args:?}: {e}"))
        .replace(log, "<log>")
}

const INFO: &str = "\
cost budget 1% of CPU: the recorder's estimate 0.42% over the run (last look 0.31%, highest 2.8%), a timed call 18.2 ns
untimed     2 functions by the budget: no call of theirs was recorded while untimed
  app::check: from +1.00 ms to +4.00 ms (2.10 M calls/s when stopped)
  app::hash: from +7.00 ms to the end of the log (850 k calls/s when stopped)
";

#[test]
fn info_prints_the_budget_the_estimates_and_the_untimed_functions() {
    let dir = temp_dir("budget-info");
    let log = write_log(&dir, "budget.fdr", &budget_log(Some(budget())));
    let info = out(&["info", &log], &log);
    assert!(info.contains(INFO), "{info}");
    // The section follows the windows (and the culled functions, when there are some), and
    // the rest of the report is that of the same log without the record (but for its size).
    let plain = write_log(&dir, "plain.fdr", &budget_log(None));
    let without = out(&["info", &plain], &plain);
    assert!(info.ends_with(&format!("worker\n{INFO}")), "{info}");
    let after_file_line = |s: &str| s.split_once('\n').unwrap().1.to_string();
    assert_eq!(
        after_file_line(&info.replace(INFO, "")),
        after_file_line(&without)
    );
    assert!(!without.contains("budget"), "{without}");
    assert!(!without.contains("untimed"), "{without}");
}

#[test]
fn info_says_when_no_function_was_untimed_and_before_any_look() {
    let dir = temp_dir("budget-info-none");
    let quiet = BudgetInfo {
        budget_ppm: 5_000,
        call_cost_ps: 9_850,
        untimed: Vec::new(),
        ..budget()
    };
    let log = write_log(&dir, "quiet.fdr", &budget_log(Some(quiet.clone())));
    let info = out(&["info", &log], &log);
    assert!(
        info.contains(
            "cost budget 0.5% of CPU: the recorder's estimate 0.42% over the run (last look \
             0.31%, highest 2.8%), a timed call 9.85 ns\n\
             untimed     none: the budget stopped timing no function\n"
        ),
        "{info}"
    );
    let unlooked = BudgetInfo { looks: 0, ..quiet };
    let log = write_log(&dir, "unlooked.fdr", &budget_log(Some(unlooked)));
    let info = out(&["info", &log], &log);
    assert!(
        info.contains(
            "cost budget 0.5% of CPU: no estimate (the budget looks ten times a second, and had \
             not yet looked), a timed call 9.85 ns\n"
        ),
        "{info}"
    );
    // No function, no account footnote.
    assert!(!out(&["account", &log], &log).contains("untimed"));
}

#[test]
fn info_says_why_a_recording_stayed_over_its_budget() {
    let dir = temp_dir("budget-info-over");
    // 2.3 % at the last look against 1 %: the rest was not the budget's to stop.
    let over = BudgetInfo {
        estimate_ppm: 23_000,
        ..budget()
    };
    let log = write_log(&dir, "over.fdr", &budget_log(Some(over)));
    let info = out(&["info", &log], &log);
    assert!(
        info.contains(
            "last look 2.3%, highest 2.8%), a timed call 18.2 ns\n            over the budget at \
             the last look: what it still timed it may not stop (a thread's outermost calls, \
             functions with a trigger or logged arguments) or was the writer's own time; a \
             larger budget= or fewer annotated functions lowers it\nuntimed     2 functions"
        ),
        "{info}"
    );
    // At the budget exactly, or under (the other tests' logs), nothing is said.
    let at = BudgetInfo {
        estimate_ppm: 10_000,
        ..budget()
    };
    let log = write_log(&dir, "at.fdr", &budget_log(Some(at)));
    assert!(!out(&["info", &log], &log).contains("over the budget"));
}

const FOOTNOTE: &str = "\
[untimed by budget]: calls not timed, to keep the recorder within its cost budget (see fdr info), so missing from the counts:
  app::check: from +1.00 ms to +4.00 ms
  app::hash: from +7.00 ms to the end of the log
";

#[test]
fn account_marks_the_untimed_functions_and_says_when() {
    let dir = temp_dir("budget-account");
    let log = write_log(&dir, "budget.fdr", &budget_log(Some(budget())));
    let text = out(&["account", &log], &log);
    let plain = write_log(&dir, "plain.fdr", &budget_log(None));
    let without = out(&["account", &plain], &plain);
    // Exactly those two rows are marked, at the end of the name; the columns are unchanged.
    let mut marked = Vec::new();
    for (line, plain_line) in text.lines().zip(without.lines()) {
        if let Some(l) = line.strip_suffix(" [untimed by budget]") {
            assert_eq!(l, plain_line);
            marked.push(l.rsplit("  ").next().unwrap().to_string());
        } else if !line.starts_with("[untimed") {
            assert_eq!(line, plain_line);
        }
    }
    assert_eq!(marked.len(), 2, "{text}");
    marked.sort();
    assert_eq!(marked, ["app::check", "app::hash"], "{text}");
    // The footnote follows the table.
    assert!(text.ends_with(FOOTNOTE), "{text}");
    assert_eq!(
        text.replace(FOOTNOTE, "")
            .replace(" [untimed by budget]", ""),
        without
    );
    assert!(!without.contains("untimed"), "{without}");

    for readers in ["1", "2"] {
        let json = fdr(&["account", "--format", "json", "--threads", readers, &log]).unwrap();
        let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
        assert_eq!(rows.len(), 4, "{json}");
        for r in &rows {
            let untimed = r["function"] == "app::check" || r["function"] == "app::hash";
            // Present (and true) only for the functions the budget untimed, as `culled`.
            assert_eq!(r.get("untimed_by_budget").is_some(), untimed, "{r}");
            if untimed {
                assert_eq!(r["untimed_by_budget"], Value::Bool(true), "{r}");
            }
        }
        // The counts are those of the calls recorded.
        let check = rows.iter().find(|r| r["function"] == "app::check").unwrap();
        assert_eq!(check["count"], 3);
    }
    let json = out(&["account", "--format", "json", &plain], &plain);
    assert!(!json.contains("untimed"), "{json}");
}

/// [`budget`] with a span that ended before the window, one of a function never called, one
/// of an id not in the table, a second span of `app::check`, and three older spans the record
/// left out.
fn wider_budget() -> BudgetInfo {
    let [check, hash] = [budget().untimed[0], budget().untimed[1]];
    BudgetInfo {
        untimed: vec![
            span(EARLY, 200_000, Some(300_000), 40_000_000),
            check,
            span(IDLE, ZERO + 2_000_000, Some(ZERO + 2_500_000), 999),
            hash,
            span(77, ZERO + 7_500_000, None, 12_500),
            span(CHECK, ZERO + 8_000_000, None, 2_000_000),
        ],
        spans_dropped: 3,
        ..budget()
    }
}

#[test]
fn info_lists_every_span_and_account_those_of_the_window() {
    let dir = temp_dir("budget-window");
    let log = write_log(&dir, "wider.fdr", &budget_log(Some(wider_budget())));
    let info = out(&["info", &log], &log);
    assert!(
        info.contains(
            "untimed     5 functions by the budget: no call of theirs was recorded while untimed
  app::early: from -800 µs to -700 µs (40.0 M calls/s when stopped)
  app::check: from +1.00 ms to +4.00 ms (2.10 M calls/s when stopped)
  app::idle: from +2.00 ms to +2.50 ms (999 calls/s when stopped)
  app::hash: from +7.00 ms to the end of the log (850 k calls/s when stopped)
  function #77: from +7.50 ms to the end of the log (12.5 k calls/s when stopped)
  app::check: from +8.00 ms to the end of the log (2.00 M calls/s when stopped)
  (3 older spans not listed: the recorder keeps only the newest for its log)
"
        ),
        "{info}"
    );
    // `app::early` was timed again before the window: its calls there are all recorded.
    let text = out(&["account", &log], &log);
    assert!(
        text.ends_with(
            "[untimed by budget]: calls not timed, to keep the recorder within its cost budget \
             (see fdr info), so missing from the counts:
  app::check: from +1.00 ms to +4.00 ms, from +8.00 ms to the end of the log
  app::idle: from +2.00 ms to +2.50 ms (no call of it in the table)
  app::hash: from +7.00 ms to the end of the log
  #77: from +7.50 ms to the end of the log (no call of it in the table)
"
        ),
        "{text}"
    );
    assert!(
        text.contains("  app::check [untimed by budget]\n"),
        "{text}"
    );
    assert!(!text.contains("app::early"), "{text}");

    // The window is what the filters keep: up to +3 ms, `app::hash` was timed; with
    // `--function`, only the functions it chooses and those their calls called.
    let text = out(&["account", "--to", "3ms", &log], &log);
    assert!(
        text.ends_with(
            "missing from the counts:
  app::check: from +1.00 ms to +4.00 ms
  app::idle: from +2.00 ms to +2.50 ms (no call of it in the table)
"
        ),
        "{text}"
    );
    assert!(!text.contains("app::hash ["), "{text}");
    let text = out(&["account", "--function", "app::hash", &log], &log);
    assert!(
        text.ends_with(
            "missing from the counts:
  app::hash: from +7.00 ms to the end of the log
"
        ),
        "{text}"
    );
}

/// The await site of `app::main` the budget stopped recording the waits of.
const MAIN_WAIT: u32 = 8;

#[test]
fn info_and_account_name_the_waits_and_wake_ups_stopped_apart_from_the_functions() {
    let dir = temp_dir("budget-details");
    // `app::check` untimed; the waits at `app::main`'s await site and `app::main`'s wake-ups
    // stopped (a task's root: its polls stay timed).
    let b = BudgetInfo {
        untimed: vec![
            budget().untimed[0],
            span(MAIN_WAIT, ZERO + 2_000_000, None, 120_000),
            span(
                MAIN | fdr_format::BUDGET_WAKES_BIT,
                ZERO + 2_000_000,
                Some(ZERO + 6_000_000),
                110_000,
            ),
        ],
        ..budget()
    };
    let path = write_log(&dir, "details.fdr", &budget_log(Some(b)));
    let info = out(&["info", &path], &path);
    assert!(
        info.contains(
            "untimed     1 function, the waits at 1 await site and the wake-ups of 1 async \
             function by the budget: none of these was recorded while stopped (where only a \
             function's waits or wake-ups were, its polls were timed)
  app::check: from +1.00 ms to +4.00 ms (2.10 M calls/s when stopped)
  app::main, its waits at src/main.rs:40:17: from +2.00 ms to the end of the log (120 k waits/s when stopped)
  app::main, its wake-ups: from +2.00 ms to +6.00 ms (110 k wake-ups/s when stopped)
"
        ),
        "{info}"
    );
    let text = out(&["account", &path], &path);
    assert!(
        text.ends_with(
            "missing from the counts:
  app::check: from +1.00 ms to +4.00 ms
  app::main, its waits at src/main.rs:40:17: from +2.00 ms to the end of the log (its polls are counted; these waits were not recorded)
  app::main, its wake-ups: from +2.00 ms to +6.00 ms (its polls are counted; when its tasks were woken was not)
"
        ),
        "{text}"
    );
    // Only the untimed function's row is marked: app::main's calls are all counted.
    assert!(
        text.contains("  app::check [untimed by budget]\n"),
        "{text}"
    );
    assert!(!text.contains("app::main [untimed"), "{text}");
    let json = fdr(&["account", "--format", "json", &path]).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    let main = rows.iter().find(|r| r["function"] == "app::main").unwrap();
    assert!(main.get("untimed_by_budget").is_none(), "{main}");
}

#[test]
fn a_budget_record_claiming_more_spans_than_it_holds_is_an_error() {
    let dir = temp_dir("budget-hostile");
    let b = budget();
    let payload = Extension::Budget(b.clone()).encode();
    let mut bytes = budget_log(Some(b));
    let at = bytes
        .windows(payload.len())
        .position(|w| w == payload.as_slice())
        .expect("the budget record is in the log");
    // The span count follows the magic, the tag, and u32, u64, 3 x u32, 2 x u64 fields.
    let count = at + 4 + 1 + 4 + 8 + 4 + 4 + 4 + 8 + 8;
    assert_eq!(&bytes[count..count + 4], &2u32.to_le_bytes());
    bytes[count..count + 4].copy_from_slice(&0x00ff_ffffu32.to_le_bytes());
    let log = write_log(&dir, "hostile.fdr", &bytes);
    for cmd in ["info", "account"] {
        let e = fdr(&[cmd, &log]).unwrap_err().to_string();
        assert!(
            e.contains("the budget record claims 16777215 untimed functions, more than it holds"),
            "{cmd}: {e}"
        );
        assert!(e.contains(&log), "{cmd}: {e}");
    }
}
