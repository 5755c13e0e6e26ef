//! Each filter on each analysing command gives the unfiltered analysis of a log that holds only
//! the selected calls: both logs are built here from one model of the calls (issue 12).

mod common;

use common::{fdr, temp_dir, write_log};
use fdr_format::RunInfo;
use fdr_testkit::synth::LogBuilder;

/// A call of the model, its callees inside it. Times are ticks at 1 GHz (nanoseconds). A call
/// without `entry` started before its thread's window (`start` is the window's start); one
/// without `exit` was still running when it ended (`end` is the thread's last event).
#[derive(Clone, Debug)]
struct Call {
    id: u32,
    start: u64,
    end: u64,
    entry: bool,
    exit: bool,
    children: Vec<Call>,
}

fn c(id: u32, start: u64, end: u64, children: Vec<Call>) -> Call {
    Call {
        id,
        start,
        end,
        entry: true,
        exit: true,
        children,
    }
}

#[derive(Clone, Debug)]
struct Thread {
    tid: i32,
    /// Where its block (its window) starts.
    block: u64,
    roots: Vec<Call>,
    /// Where its window ends, if after its last call event: a cut at `--to` while the thread
    /// ran on (its open calls ran until the cut).
    end: Option<u64>,
}

const NAMES: [&str; 8] = [
    "app::main",
    "app::handle",
    "app::parse",
    "app::query",
    "app::Cache::get",
    "app::log",
    "app::io",
    "app::leaf",
];

fn name(id: u32) -> &'static str {
    NAMES[id as usize - 1]
}

/// Three threads: a mid-stack window and a call open at the end on the first, nested calls on
/// the second, a late third.
fn model() -> Vec<Thread> {
    let (handle, parse, query, get, log, io, leaf) = (2, 3, 4, 5, 6, 7, 8);
    let mut inferred = c(
        handle,
        1000,
        3000,
        vec![
            c(parse, 1100, 1300, vec![]),
            c(
                query,
                1400,
                2600,
                vec![
                    c(get, 1500, 1550, vec![]),
                    c(get, 1600, 1700, vec![]),
                    c(io, 1800, 2500, vec![]),
                ],
            ),
            c(log, 2700, 2750, vec![]),
        ],
    );
    inferred.entry = false;
    // Long enough that the filters keep it and its callee: its end is the thread's last event.
    let mut open = c(log, 5400, 6600, vec![c(get, 5500, 6600, vec![])]);
    open.exit = false;
    vec![
        Thread {
            tid: 11,
            block: 1000,
            end: None,
            roots: vec![
                inferred,
                c(
                    handle,
                    3200,
                    5200,
                    vec![
                        c(parse, 3300, 3400, vec![]),
                        c(
                            query,
                            3500,
                            5000,
                            vec![c(get, 3600, 3610, vec![]), c(get, 3700, 4900, vec![])],
                        ),
                    ],
                ),
                c(leaf, 5300, 5350, vec![]),
                open,
            ],
        },
        Thread {
            tid: 12,
            block: 1200,
            end: None,
            roots: vec![
                c(
                    query,
                    1200,
                    2200,
                    vec![
                        c(get, 1300, 1400, vec![]),
                        c(io, 1500, 2100, vec![c(leaf, 1600, 1700, vec![])]),
                    ],
                ),
                c(
                    query,
                    2400,
                    4400,
                    vec![
                        c(get, 2500, 2510, vec![]),
                        c(get, 2600, 2610, vec![]),
                        c(get, 2620, 2630, vec![]),
                        c(io, 3000, 4300, vec![]),
                    ],
                ),
            ],
        },
        Thread {
            tid: 13,
            block: 4000,
            end: None,
            roots: vec![c(
                io,
                4000,
                4800,
                vec![c(leaf, 4100, 4200, vec![]), c(leaf, 4300, 4700, vec![])],
            )],
        },
    ]
}

fn records(call: &Call, b: &mut fdr_testkit::synth::BlockBuilder<'_>) {
    if call.entry {
        b.enter(call.id, call.start);
    }
    for k in &call.children {
        records(k, b);
    }
    if call.exit {
        b.exit(call.id, call.end);
    }
}

/// The log of `threads`: the same tables whatever calls it holds, one block per thread.
fn write(threads: &[Thread]) -> Vec<u8> {
    let mut log = LogBuilder::new(1_000_000_000);
    log.run(RunInfo {
        ticks_per_second: 1_000_000_000,
        pid: 1,
        program: "filters".into(),
        ..RunInfo::default()
    });
    for (i, n) in NAMES.iter().enumerate() {
        log.function(i as u32 + 1, n, &[]);
    }
    for (tid, n) in [(11, "main"), (12, "worker"), (13, "io")] {
        log.thread(tid, n);
    }
    for t in threads.iter().filter(|t| !t.roots.is_empty()) {
        let mut b = log.block(t.tid, 0, t.block);
        for r in &t.roots {
            records(r, &mut b);
        }
        if let Some(end) = t.end {
            // A record at the window's end, so that the calls still open end there.
            b.cpu(0, end);
        }
        b.finish();
    }
    log.finish()
}

/// Only the outermost calls of the functions `ids` and what they called. (The ids a pattern
/// matches are written out in each test, not asked of the crate's own matcher.)
fn only_function(threads: &[Thread], ids: &[u32]) -> Vec<Thread> {
    fn select(c: &Call, p: &[u32], out: &mut Vec<Call>) {
        if p.contains(&c.id) {
            out.push(c.clone());
        } else {
            for k in &c.children {
                select(k, p, out);
            }
        }
    }
    threads
        .iter()
        .map(|t| {
            let mut roots = Vec::new();
            for r in &t.roots {
                select(r, ids, &mut roots);
            }
            Thread { roots, ..t.clone() }
        })
        .collect()
}

/// Without the calls shorter than `min` (and what they called).
fn without_short(threads: &[Thread], min: u64) -> Vec<Thread> {
    fn keep(c: &Call, min: u64) -> Option<Call> {
        (c.end - c.start >= min).then(|| Call {
            children: c.children.iter().filter_map(|k| keep(k, min)).collect(),
            ..c.clone()
        })
    }
    threads
        .iter()
        .map(|t| Thread {
            roots: t.roots.iter().filter_map(|r| keep(r, min)).collect(),
            ..t.clone()
        })
        .collect()
}

/// The times of a thread's records.
fn times(c: &Call, out: &mut Vec<u64>) {
    if c.entry {
        out.push(c.start);
    }
    for k in &c.children {
        times(k, out);
    }
    if c.exit {
        out.push(c.end);
    }
}

/// Cut to `[from, to]` as a recording window would: records outside left out, each thread's
/// window starting at `from` at the earliest and ending at its last record in the range.
fn cut(threads: &[Thread], from: u64, to: u64) -> Vec<Thread> {
    fn clip(c: &Call, from: u64, to: u64) -> Option<Call> {
        if c.end < from || c.start > to {
            return None;
        }
        let (entry, exit) = (c.entry && c.start >= from, c.exit && c.end <= to);
        assert!(
            entry || exit,
            "{} runs through the whole range: a cut log has no record of it",
            name(c.id)
        );
        Some(Call {
            id: c.id,
            start: c.start.max(from),
            end: c.end.min(to),
            entry,
            exit,
            children: c
                .children
                .iter()
                .filter_map(|k| clip(k, from, to))
                .collect(),
        })
    }
    threads
        .iter()
        .map(|t| {
            let mut ts = Vec::new();
            for r in &t.roots {
                times(r, &mut ts);
            }
            // A thread that ran on past the range: its open calls ran until the range's end.
            // One whose records stop inside it: they end at its last record, as in the log.
            let ran_on = ts.iter().any(|&x| x > to);
            let last = ts.into_iter().filter(|&x| x <= to).max().unwrap_or(0);
            let end = if ran_on { to } else { last };
            Thread {
                tid: t.tid,
                block: t.block.max(from),
                roots: t.roots.iter().filter_map(|r| clip(r, from, end)).collect(),
                end: ran_on.then_some(to),
            }
        })
        .collect()
}

/// What each command prints (binary outputs as bytes), with the log's path replaced.
fn outputs(log: &str, filter: &[&str]) -> Vec<(String, Vec<u8>)> {
    const COMMANDS: [&[&str]; 12] = [
        &["account"],
        &["account", "--format", "json", "--sort", "id"],
        &["account", "--format", "csv", "--sort", "id"],
        &["stack"],
        &["stack", "--format", "folded"],
        &["calls"],
        &["calls", "--format", "json", "--top", "100"],
        &["replay"],
        &["convert", "--format", "chrome", "-o", "-"],
        &["convert", "--format", "fxt", "-o", "-"],
        &["flame", "-o", "-"],
        &["flame", "--chart", "-o", "-"],
    ];
    COMMANDS
        .iter()
        .map(|cmd| {
            let mut args: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
            args.insert(1, log.to_string());
            args.extend(filter.iter().map(|s| s.to_string()));
            let mut out = Vec::new();
            fdr_cli::run(&args, &mut out).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            let text = String::from_utf8_lossy(&out);
            let out = if cmd[0] == "flame" {
                text.replace(log, "<log>").into_bytes()
            } else {
                out
            };
            (cmd.join(" "), out)
        })
        .collect()
}

/// Calls in `threads`, callees included.
fn count(threads: &[Thread]) -> usize {
    fn n(c: &Call) -> usize {
        1 + c.children.iter().map(n).sum::<usize>()
    }
    threads.iter().flat_map(|t| &t.roots).map(n).sum()
}

/// The filtered outputs of the model's log equal the unfiltered outputs of `selected`, a
/// selection that holds calls and not all of them (so that a filter that keeps everything, or
/// nothing, cannot pass).
fn check(test: &str, filter: &[&str], selected: &[Thread]) {
    let (kept, all_calls) = (count(selected), count(&model()));
    assert!(
        kept > 0 && kept < all_calls,
        "{filter:?}: the selection must keep some calls and not all ({kept} of {all_calls})"
    );
    let dir = temp_dir(test);
    let all = write_log(&dir, "all.fdr", &write(&model()));
    let only = write_log(&dir, "only.fdr", &write(selected));
    let filtered = outputs(&all, filter);
    let expected = outputs(&only, &[]);
    let unfiltered = outputs(&all, &[]);
    for (((cmd, got), (_, want)), (_, whole)) in filtered.iter().zip(&expected).zip(&unfiltered) {
        // The account CSV has one line per function, so a selection keeping every function
        // (only fewer calls of them) may look like the whole log there.
        if !cmd.starts_with("account") {
            assert!(got != whole, "fdr {cmd} {filter:?} printed the whole log");
        }
        assert!(
            got == want,
            "fdr {cmd} {filter:?}\n--- filtered\n{}\n--- log of the selected calls\n{}",
            String::from_utf8_lossy(got),
            String::from_utf8_lossy(want)
        );
    }
}

#[test]
fn thread_filter_by_name_and_id() {
    let selected: Vec<Thread> = model().into_iter().filter(|t| t.tid != 11).collect();
    check(
        "filter-thread",
        &["--thread", "worker", "--thread", "13"],
        &selected,
    );
}

#[test]
fn function_filter() {
    // app::query is 4, app::Cache::get 5, app::io 7.
    for (p, ids) in [
        ("query", &[4][..]),
        ("*::io", &[7]),
        ("app::Cache::get", &[5]),
        ("*e*", &[2, 3, 4, 5, 8]),
    ] {
        let selected = only_function(&model(), ids);
        check("filter-function", &["--function", p], &selected);
    }
}

#[test]
fn min_filter() {
    for (min, ns) in [("150ns", 150), ("1us", 1000)] {
        let selected = without_short(&model(), ns);
        check("filter-min", &["--min", min], &selected);
    }
}

#[test]
fn time_range_filter() {
    // The window starts at 1000: --from 1us --to 3.5us is [2000, 4500].
    let selected = cut(&model(), 2000, 4500);
    check(
        "filter-range",
        &["--from", "1us", "--to", "3.5us"],
        &selected,
    );
    // From only, and to only.
    check(
        "filter-from",
        &["--from", "2.3us"],
        &cut(&model(), 3300, u64::MAX),
    );
    check("filter-to", &["--to", "2.1us"], &cut(&model(), 0, 3100));
}

#[test]
fn filters_together() {
    let selected = without_short(&only_function(&cut(&model(), 2000, 5000), &[4]), 100);
    let selected: Vec<Thread> = selected.into_iter().filter(|t| t.tid == 11).collect();
    check(
        "filter-all",
        &[
            "--thread",
            "main",
            "--from",
            "1us",
            "--to",
            "4us",
            "--function",
            "query",
            "--min",
            "100ns",
        ],
        &selected,
    );
}

#[test]
fn around_is_the_range_of_the_call_that_fired_the_trigger() {
    let dir = temp_dir("filter-around");
    let log = write_log(&dir, "trig.fdr", &common::triggered_log());
    // The trigger: app::handle from +200 ns for 3.6 µs.
    for cmd in [
        &["replay"][..],
        &["account"],
        &["calls", "--format", "json"],
    ] {
        let run = |f: &[&str]| {
            let mut a = cmd.to_vec();
            a.insert(1, &log);
            a.extend(f);
            fdr(&a).unwrap()
        };
        assert_eq!(
            run(&["--around=100ns"]),
            run(&["--from", "100ns", "--to", "3.9us"]),
            "{cmd:?}"
        );
        assert_eq!(
            run(&["--around"]),
            run(&["--from", "200ns", "--to", "3.8us"]),
            "{cmd:?}"
        );
    }
    let basic = write_log(&dir, "basic.fdr", &common::basic_log());
    let e = fdr(&["replay", &basic, "--around"]).unwrap_err();
    assert!(
        e.to_string()
            .contains("--around needs a log written by a trigger"),
        "{e}"
    );
}

#[test]
fn a_call_through_the_whole_range_is_inferred_and_open() {
    let dir = temp_dir("filter-spanning");
    let log = write_log(&dir, "all.fdr", &write(&model()));
    // [2500, 2700] on thread 11: inside handle and query, which both started before and end
    // after.
    let json = fdr(&[
        "calls", &log, "--format", "json", "--thread", "main", "--from", "1.5us", "--to", "1.7us",
    ])
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let handle = &v[0];
    assert_eq!(handle["function"], "app::handle");
    assert_eq!(
        (&handle["inferred_start"], &handle["open_at_end"]),
        (&serde_json::json!(true), &serde_json::json!(true))
    );
}

#[test]
fn bad_filters_are_usage_errors_that_name_them() {
    let dir = temp_dir("filter-bad");
    let log = write_log(&dir, "all.fdr", &write(&model()));
    for (args, want) in [
        (&["--min", "12"][..], "--min"),
        (&["--from", "1parsec"], "--from"),
        (&["--from", "3us", "--to", "1us"], "--to"),
        (&["--around", "--from", "1us"], "--around"),
    ] {
        let mut a = vec!["account", log.as_str()];
        a.extend(args);
        let e = fdr(&a).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
        assert!(e.to_string().contains(want), "{args:?}: {e}");
    }
    let e = fdr(&["account", &log, "--thread", "nobody"]).unwrap_err();
    assert!(
        e.to_string()
            .contains("no thread with calls matches --thread nobody; the log's threads: "),
        "{e}"
    );
}

#[test]
fn calls_and_replay_read_by_several_threads_say_the_same() {
    let dir = temp_dir("filter-readers");
    let log = write_log(&dir, "all.fdr", &write(&model()));
    let basic = write_log(&dir, "basic.fdr", &common::basic_log());
    for l in [&log, &basic] {
        for cmd in [
            &["calls", "--top", "100"][..],
            &["calls", "--format", "json"],
            &["calls", "--function", "*e*"],
            &["calls", "--from", "1us", "--min", "50ns"],
            &["replay"],
            &["replay", "--to", "3us"],
        ] {
            let run = |n: &str| {
                let mut a = cmd.to_vec();
                a.insert(1, l);
                a.extend(["--threads", n]);
                fdr(&a).unwrap()
            };
            let one = run("1");
            for n in ["2", "3"] {
                assert_eq!(run(n), one, "{cmd:?} with {n} readers");
            }
        }
    }
}

#[test]
fn logged_arguments_stay_with_their_call_through_min() {
    // A call kept by --min is handed on once it has lasted long enough: with its arguments.
    let dir = temp_dir("filter-args");
    let log = write_log(&dir, "basic.fdr", &common::basic_log());
    let out = dir.join("min.fxt");
    fdr(&[
        "convert",
        &log,
        "--format",
        "fxt",
        "--min",
        "400ns",
        "-o",
        out.to_str().unwrap(),
    ])
    .unwrap();
    let trace = common::fxt::parse(&std::fs::read(&out).unwrap()).unwrap();
    common::fxt::assert_read_alike_by_fxt_package(&out, &trace);
    let spans = common::fxt::spans(&trace).unwrap();
    let parse = spans.iter().find(|s| s.name == "app::parse").unwrap();
    use common::fxt::Value as V;
    assert_eq!(
        parse.begin_args,
        [
            ("len".to_string(), V::U64(42)),
            ("flags".to_string(), V::U64(7))
        ]
    );
    assert!(spans.iter().all(|s| s.end - s.start >= 400), "{spans:?}");
}

#[test]
fn a_time_range_past_the_end_of_the_log_is_an_error_that_gives_the_window() {
    let dir = temp_dir("filter-past");
    let log = write_log(&dir, "all.fdr", &write(&model()));
    // The window starts at 1000 and the last record is at 6600: +0 ns..+5.60 µs.
    for cmd in ["account", "calls", "stack", "replay", "flame"] {
        let mut args = vec![cmd, &log, "--from", "1s"];
        if cmd == "flame" {
            args.extend(["-o", "-"]);
        }
        let e = fdr(&args).unwrap_err();
        assert_eq!(e.exit_code(), 1, "{cmd}");
        assert_eq!(
            e.to_string(),
            format!(
                "fdr: {log}: nothing was recorded from --from 1.00 s on: the window (of the \
                 threads kept) spans +0 ns..+5.60 µs"
            ),
            "{cmd}"
        );
    }
    // A range inside the window is not an error, even where one thread has nothing.
    assert!(fdr(&["account", &log, "--from", "5us"]).is_ok());
    std::fs::remove_dir_all(dir).ok();
}
