//! The one replay engine (`fdr_format::replay`) and its first pass (`fdr_format::first_pass`),
//! run as the commands that show calls in time order and `fdr export` run them, on every shape
//! of log the tests and the fuzzing seeds are made of: the shapes of `genlog --shape` (small
//! sizes), the fixtures of `tests/common` and the benchmark log's make. For each, the exact
//! sequence of what a sink is handed; and, on those and on the logs kept with the tests, that
//! with the first pass's stacks no call is left to be inferred at its exit.

mod common;

use std::convert::Infallible;
use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::Path;

use common::{basic_log_with_gap, culled_log, midstack_log_led_by, tasks_log, triggered_log};
use fdr_format::events::EventDecoder;
use fdr_format::first_pass::{origin, window_stacks};
use fdr_format::replay::{replay, Replay, ReplayError};
use fdr_format::sink::{
    CullSeen, Enter, Exit, LinkSeen, PollSeen, Sink, TaskSeen, ThreadDone, WindowStart, GO_ON,
};
use fdr_format::FormatError;
use fdr_testkit::bench_log::BenchLog;

/// What a sink is handed, one line per event: the thread's index, then the event.
#[derive(Default)]
struct Sequence(Vec<(u32, String)>);

impl Sequence {
    fn push(&mut self, thread: u32, line: String) -> Result<ControlFlow<()>, Infallible> {
        self.0.push((thread, line));
        Ok(GO_ON)
    }
}

impl Sink for Sequence {
    type Error = Infallible;

    fn start(&mut self, s: &WindowStart) -> Result<ControlFlow<()>, Infallible> {
        self.push(s.thread, format!("start {}", s.tsc))
    }

    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, Infallible> {
        let f = e.frame;
        let mut l = format!("enter {} #{} {}", e.depth, f.id, f.start);
        if f.inferred {
            l.push_str(" inferred");
        }
        if !e.args.is_empty() {
            let _ = write!(l, " {:?}", e.args);
        }
        self.push(e.thread, l)
    }

    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, Infallible> {
        let f = e.frame;
        let mut l = format!(
            "exit {} #{} {}..{} self {} {:?}",
            e.depth,
            f.id,
            f.start,
            e.end,
            f.self_ticks(e.end),
            e.how
        );
        if f.inferred {
            l.push_str(" inferred");
        }
        self.push(e.thread, l)
    }

    fn task(&mut self, t: &TaskSeen) -> Result<ControlFlow<()>, Infallible> {
        let ev = t.event;
        let l = format!(
            "task {:?} #{} {} at {} window {}",
            ev.kind, ev.id, ev.task, t.tsc, t.window
        );
        self.push(t.thread, l)
    }

    fn polled(&mut self, p: &PollSeen) -> Result<ControlFlow<()>, Infallible> {
        self.push(p.thread, format!("polled #{} {}", p.id, p.task))
    }

    fn link(&mut self, l: &LinkSeen) -> Result<ControlFlow<()>, Infallible> {
        let k = l.link;
        let line = format!(
            "link {:?} #{} {} to #{} {} at {}",
            k.kind, k.id, k.task, k.other_id, k.other_task, l.tsc
        );
        self.push(l.thread, line)
    }

    fn cull(&mut self, c: &CullSeen) -> Result<ControlFlow<()>, Infallible> {
        self.push(
            c.thread,
            format!("cull {:?} #{} at {}", c.kind, c.id, c.tsc),
        )
    }

    fn end(&mut self, d: &ThreadDone) -> Result<ControlFlow<()>, Infallible> {
        self.push(d.thread, format!("end {}", d.last))
    }
}

/// What the two passes make of a log: each thread's stack at its window's start (by thread
/// id), time zero, and the sequence, each line led by its thread's id.
struct TwoPasses {
    stacks: Vec<(i32, Vec<u32>)>,
    origin: u64,
    lines: Vec<String>,
}

/// The two passes over `bytes`; with `first_pass` false, the replay alone (as `fdr account`
/// runs it), whose stacks are then empty.
fn run(bytes: &[u8], first_pass: bool) -> Result<TwoPasses, FormatError> {
    let stacks = if first_pass {
        window_stacks(&mut EventDecoder::new(bytes)?)?
    } else {
        Vec::new()
    };
    let mut dec = EventDecoder::new(bytes)?;
    let mut seq = Sequence::default();
    let how = Replay {
        initial: &stacks,
        ..Replay::default()
    };
    replay(&mut dec, &mut seq, &how).map_err(|e| match e {
        ReplayError::Log(e) => e,
        ReplayError::Sink { error, .. } => match error {},
    })?;
    let tid = |t: u32| dec.threads()[t as usize].tid;
    Ok(TwoPasses {
        stacks: stacks
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty())
            .map(|(t, s)| (tid(t as u32), s.clone()))
            .collect(),
        origin: origin(dec.threads()),
        lines: seq
            .0
            .iter()
            .map(|(t, l)| format!("{} {l}", tid(*t)))
            .collect(),
    })
}

/// Checks the two passes over the log `name`: its stacks, time zero and sequence.
fn check(name: &str, bytes: &[u8], stacks: &[(i32, &[u32])], origin: u64, lines: &[&str]) {
    let r = run(bytes, true).unwrap_or_else(|e| panic!("{name}: {e}"));
    let want: Vec<(i32, Vec<u32>)> = stacks.iter().map(|(t, s)| (*t, s.to_vec())).collect();
    assert_eq!(r.stacks, want, "{name}: the stacks at the windows' starts");
    assert_eq!(r.origin, origin, "{name}: time zero");
    if r.lines != lines {
        panic!(
            "{name}: the sequence is\n{}\nnot\n{}",
            r.lines.join("\n"),
            lines.join("\n")
        );
    }
    nothing_inferred_late(name, bytes);
}

/// With the first pass's stacks, every call whose entry is missing is entered when its
/// window starts, before the window's own calls: none is inferred when its exit arrives (the
/// rule of the second pass, which a wrong first pass breaks).
fn nothing_inferred_late(name: &str, bytes: &[u8]) {
    let Ok(r) = run(bytes, true) else {
        return;
    };
    let mut own_call_seen: Vec<i32> = Vec::new();
    for l in &r.lines {
        let mut w = l.split(' ');
        let tid: i32 = w.next().unwrap().parse().unwrap();
        let what = w.next().unwrap();
        let inferred = l.ends_with(" inferred") || l.contains(" inferred [");
        if what == "enter" && !inferred {
            own_call_seen.push(tid);
        }
        if what == "enter" && inferred {
            assert!(
                !own_call_seen.contains(&tid),
                "{name}: {l}: inferred after the window's own calls"
            );
        }
    }
}

fn shape(name: &str, n: u32) -> Vec<u8> {
    fdr_testkit::shapes::shape(name, n).expect("a known shape")
}

#[test]
fn deep_is_a_recursion_entered_and_left_in_the_window() {
    check(
        "deep",
        &shape("deep", 3),
        &[],
        1000,
        &[
            "7 start 1000",
            "7 enter 0 #1 1000",
            "7 enter 1 #1 1010",
            "7 enter 2 #1 1020",
            "7 enter 3 #2 1030",
            "7 exit 3 #2 1030..1040 self 10 Exit",
            "7 exit 2 #1 1020..1050 self 20 Exit",
            "7 exit 1 #1 1010..1060 self 20 Exit",
            "7 exit 0 #1 1000..1070 self 20 Exit",
            "0 end 0",
            "7 end 1070",
        ],
    );
}

#[test]
fn ring_is_the_recursion_seen_from_a_window_that_holds_only_its_exits() {
    // The three recursive calls are open at the window's start, outermost first; the leaf
    // is entered above them, and each one's self time is its own 10 ticks.
    check(
        "ring",
        &shape("ring", 3),
        &[(7, &[1, 1, 1])],
        1000,
        &[
            "7 start 1000",
            "7 enter 0 #1 1000 inferred",
            "7 enter 1 #1 1000 inferred",
            "7 enter 2 #1 1000 inferred",
            "7 enter 3 #2 1000",
            "7 exit 3 #2 1000..1010 self 10 Exit",
            "7 exit 2 #1 1000..1020 self 10 Exit inferred",
            "7 exit 1 #1 1000..1030 self 10 Exit inferred",
            "7 exit 0 #1 1000..1040 self 10 Exit inferred",
            "0 end 0",
            "7 end 1040",
        ],
    );
}

#[test]
fn siblings_are_one_caller_of_several_functions() {
    check(
        "siblings",
        &shape("siblings", 3),
        &[],
        0,
        &[
            "7 start 0",
            "7 enter 0 #1 0",
            "7 enter 1 #10 1",
            "7 exit 1 #10 1..4 self 3 Exit",
            "7 enter 1 #11 6",
            "7 exit 1 #11 6..9 self 3 Exit",
            "7 enter 1 #12 11",
            "7 exit 1 #12 11..14 self 3 Exit",
            "7 exit 0 #1 0..16 self 7 Exit",
            "0 end 0",
            "7 end 16",
        ],
    );
}

#[test]
fn functions_with_huge_ids_keep_them() {
    check(
        "functions",
        &shape("functions", 3),
        &[],
        0,
        &[
            "7 start 0",
            "7 enter 0 #134217728 0",
            "7 exit 0 #134217728 0..1000 self 1000 Exit",
            "7 enter 0 #134217729 2000",
            "7 exit 0 #134217729 2000..3001 self 1001 Exit",
            "7 enter 0 #134217730 4000",
            "7 exit 0 #134217730 4000..5002 self 1002 Exit",
            "0 end 0",
            "7 end 5002",
        ],
    );
}

#[test]
fn hostile_calls_keep_their_arguments_tail_calls_and_the_call_left_open() {
    // The tail call ends its caller's callee; the last call is open when the log ends, and
    // ends then (its thread's last record).
    check(
        "hostile",
        &shape("hostile", 1),
        &[],
        1000,
        &[
            "11 start 1000",
            "11 enter 0 #1 1000 [0, 18446744073709551615]",
            "11 enter 1 #2 1100",
            "11 exit 1 #2 1100..1200 self 100 TailExit",
            "11 enter 1 #3 1200",
            "11 exit 1 #3 1200..1300 self 100 Exit",
            "11 exit 0 #1 1000..1900 self 700 Exit",
            "11 enter 0 #1 2000",
            "0 end 0",
            "11 exit 0 #1 2000..2000 self 0 WindowEnd",
            "11 end 2000",
        ],
    );
}

#[test]
fn backwards_time_gives_empty_durations_and_a_thread_that_lost_everything_none() {
    check(
        "backwards",
        &shape("backwards", 1),
        &[],
        1000,
        &[
            "11 start 1000",
            "11 enter 0 #1 1000",
            "11 exit 0 #1 1000..500 self 0 Exit",
            "11 enter 0 #1 450",
            "11 exit 0 #1 450..700 self 250 Exit",
            "11 enter 0 #1 650",
            "11 exit 0 #1 650..660 self 10 Exit",
            "0 end 0",
            "11 end 660",
        ],
    );
}

#[test]
fn args_are_handed_with_the_entry() {
    check(
        "args",
        &shape("args", 3),
        &[],
        0,
        &[
            "7 start 0",
            "7 enter 0 #1 0",
            "7 exit 0 #1 0..50 self 50 Exit",
            "7 enter 0 #1 100 [0]",
            "7 exit 0 #1 100..150 self 50 Exit",
            "7 enter 0 #1 200 [0, 1]",
            "7 exit 0 #1 200..250 self 50 Exit",
            "0 end 0",
            "7 end 250",
        ],
    );
}

#[test]
fn tasks_are_seen_where_they_are_made_linked_and_ended() {
    // Tasks 0 to 2 were made before the window; thread 8 ends them all, 4 cancelled.
    check(
        "tasks",
        &shape("tasks", 6),
        &[],
        1000,
        &[
            "7 start 1000",
            "7 enter 0 #2 1000",
            "7 task Created #1 3 at 1030 window 1000",
            "7 link Parent #1 3 to #1 2 at 1030",
            "7 link FollowsFrom #1 3 to #1 1 at 1030",
            "7 task Created #1 4 at 1040 window 1000",
            "7 link Parent #1 4 to #1 3 at 1040",
            "7 task Created #1 5 at 1050 window 1000",
            "7 link Parent #1 5 to #1 4 at 1050",
            "7 exit 0 #2 1000..1065 self 65 Exit",
            "8 start 1000",
            "8 enter 0 #1 1070",
            "8 exit 0 #1 1070..1080 self 10 Exit",
            "8 task Completed #1 0 at 1090 window 1000",
            "8 enter 0 #1 1170",
            "8 exit 0 #1 1170..1180 self 10 Exit",
            "8 task Completed #1 1 at 1190 window 1000",
            "8 enter 0 #1 1270",
            "8 exit 0 #1 1270..1280 self 10 Exit",
            "8 task Completed #1 2 at 1290 window 1000",
            "8 enter 0 #1 1370",
            "8 exit 0 #1 1370..1380 self 10 Exit",
            "8 task Completed #1 3 at 1390 window 1000",
            "8 enter 0 #1 1470",
            "8 exit 0 #1 1470..1480 self 10 Exit",
            "8 task Cancelled #1 4 at 1490 window 1000",
            "8 enter 0 #1 1570",
            "8 exit 0 #1 1570..1580 self 10 Exit",
            "8 task Completed #1 5 at 1590 window 1000",
            "0 end 0",
            "7 end 1065",
            "8 end 1590",
        ],
    );
}

#[test]
fn culled_functions_are_seen_between_calls() {
    check(
        "culled",
        &shape("culled", 3),
        &[],
        1000,
        &[
            "7 start 1000",
            "7 enter 0 #1 1000",
            "7 enter 1 #2 1010",
            "7 exit 1 #2 1010..1020 self 10 Exit",
            "7 cull Culled #2 at 1030",
            "7 enter 1 #2 1110",
            "7 exit 1 #2 1110..1120 self 10 Exit",
            "7 cull Restored #2 at 1130",
            "7 enter 1 #2 1210",
            "7 exit 1 #2 1210..1220 self 10 Exit",
            "7 cull Culled #2 at 1230",
            "7 exit 0 #1 1000..1300 self 270 Exit",
            "0 end 0",
            "7 end 1300",
        ],
    );
}

#[test]
fn the_basic_fixture_nests_tail_calls_and_spans_two_blocks() {
    // Thread 11's calls span two blocks, with thread 12's between them; 12's last call is
    // open at the end.
    check(
        "basic",
        &basic_log_with_gap(0),
        &[],
        1000,
        &[
            "11 start 1000",
            "11 enter 0 #1 1000",
            "11 enter 1 #2 1100 [42, 7]",
            "11 exit 1 #2 1100..1600 self 500 Exit",
            "11 enter 1 #3 1700",
            "11 enter 2 #4 1800",
            "11 exit 2 #4 1800..1900 self 100 Exit",
            "11 enter 2 #4 2100",
            "11 exit 2 #4 2100..2400 self 300 Exit",
            "11 exit 1 #3 1700..2500 self 400 Exit",
            "11 enter 1 #5 2600",
            "11 exit 1 #5 2600..2700 self 100 TailExit",
            "11 enter 1 #6 2700",
            "11 exit 1 #6 2700..3000 self 300 Exit",
            "11 enter 1 #99 3100",
            "11 exit 1 #99 3100..3200 self 100 Exit",
            "12 start 1500",
            "12 enter 0 #3 1500",
            "12 enter 1 #4 1600",
            "12 exit 1 #4 1600..1650 self 50 Exit",
            "12 exit 0 #3 1500..2000 self 450 Exit",
            "12 enter 0 #3 2100",
            "12 enter 1 #4 2200",
            "12 exit 1 #4 2200..2300 self 100 Exit",
            "11 enter 1 #3 3300",
            "11 exit 1 #3 3300..3400 self 100 Exit",
            "11 exit 0 #1 1000..4000 self 1100 Exit",
            "0 end 0",
            "11 end 4000",
            "12 exit 0 #3 2100..2300 self 100 WindowEnd",
            "12 end 2300",
        ],
    );
}

#[test]
fn the_midstack_fixture_opens_two_calls_at_its_window_start() {
    // Its window starts inside main and step, whose exits are all it holds of them: they are
    // entered at 5000, main under step, and the calls made in them are theirs. The leading
    // block, dated 10, does not open the window.
    check(
        "midstack",
        &midstack_log_led_by(21),
        &[(21, &[1, 3])],
        5000,
        &[
            "21 start 5000",
            "21 enter 0 #1 5000 inferred",
            "21 enter 1 #3 5000 inferred",
            "21 enter 2 #4 5100",
            "21 exit 2 #4 5100..5200 self 100 Exit",
            "21 exit 1 #3 5000..5300 self 200 Exit inferred",
            "21 enter 1 #4 5400",
            "21 exit 1 #4 5400..5500 self 100 Exit",
            "21 exit 0 #1 5000..6000 self 600 Exit inferred",
            "21 enter 0 #3 6200",
            "21 enter 1 #4 6300",
            "21 exit 1 #4 6300..6300 self 0 WindowEnd",
            "21 exit 0 #3 6200..6300 self 100 WindowEnd",
            "21 end 6300",
        ],
    );
}

#[test]
fn the_triggered_fixture_interleaves_two_threads() {
    check(
        "triggered",
        &triggered_log(),
        &[],
        1000,
        &[
            "11 start 1000",
            "11 enter 0 #1 1000",
            "11 enter 1 #2 1200",
            "11 enter 2 #3 1300",
            "11 exit 2 #3 1300..2300 self 1000 Exit",
            "12 start 1500",
            "12 enter 0 #3 1500",
            "12 exit 0 #3 1500..2500 self 1000 Exit",
            "11 enter 2 #3 2400",
            "11 exit 2 #3 2400..4000 self 1600 Exit",
            "11 exit 1 #2 1200..4800 self 1000 Exit",
            "11 exit 0 #1 1000..5000 self 400 Exit",
            "11 end 5000",
            "12 end 2500",
        ],
    );
}

#[test]
fn the_tasks_fixture_reads_ends_before_their_creations() {
    // Thread 12's block comes first in the file: tasks 99 and 100 end before 100 is made.
    check(
        "tasks-fixture",
        &tasks_log(),
        &[],
        1000,
        &[
            "12 start 1500",
            "12 enter 0 #2 1600",
            "12 enter 1 #3 1620",
            "12 exit 1 #3 1620..1680 self 60 Exit",
            "12 exit 0 #2 1600..1700 self 40 Exit",
            "12 task Completed #2 99 at 1700 window 1500",
            "12 enter 0 #2 2000",
            "12 exit 0 #2 2000..2100 self 100 Exit",
            "12 task Completed #2 100 at 2100 window 1500",
            "11 start 1000",
            "11 enter 0 #1 1000",
            "11 task Created #2 100 at 1100 window 1000",
            "11 enter 1 #2 1100",
            "11 exit 1 #2 1100..1200 self 100 Exit",
            "11 task Created #2 101 at 1300 window 1000",
            "11 enter 1 #2 1300",
            "11 exit 1 #2 1300..1350 self 50 Exit",
            "11 task Cancelled #2 101 at 1600 window 1000",
            "11 task Created #2 102 at 2500 window 1000",
            "11 enter 1 #2 2500",
            "11 exit 1 #2 2500..2550 self 50 Exit",
            "11 exit 0 #1 1000..3000 self 1800 Exit",
            "12 end 2100",
            "11 end 3000",
        ],
    );
}

#[test]
fn the_culled_fixture_culls_before_a_window_starts() {
    // Thread 12 culls a function before its first call: its window starts after.
    check(
        "culled-fixture",
        &culled_log(),
        &[],
        1000,
        &[
            "11 start 1000",
            "11 enter 0 #1 1000",
            "11 enter 1 #2 1100",
            "11 exit 1 #2 1100..1150 self 50 Exit",
            "11 cull Culled #2 at 2000",
            "11 enter 1 #4 3500",
            "11 exit 1 #4 3500..3900 self 400 Exit",
            "11 cull Restored #4 at 4000",
            "11 enter 1 #2 5000",
            "11 exit 1 #2 5000..5100 self 100 Exit",
            "11 exit 0 #1 1000..7000 self 5450 Exit",
            "12 cull Culled #3 at 3000",
            "12 start 2500",
            "12 enter 0 #3 3200",
            "12 exit 0 #3 3200..3300 self 100 Exit",
            "12 enter 0 #2 5900",
            "12 exit 0 #2 5900..6000 self 100 Exit",
            "12 cull Restored #2 at 6000",
            "0 end 0",
            "11 end 7000",
            "12 end 6000",
        ],
    );
}

/// Without a first pass (as `fdr account` replays), a call whose entry is missing is inferred
/// when its exit arrives, at the bottom of the stack, holding the calls completed there before
/// it; the same calls, times and self times as with one, in another order.
#[test]
fn without_a_first_pass_calls_are_inferred_at_their_exits() {
    for (name, bytes, lines) in [
        (
            "ring",
            shape("ring", 3),
            &[
                "7 start 1000",
                "7 enter 0 #2 1000",
                "7 exit 0 #2 1000..1010 self 10 Exit",
                "7 enter 0 #1 1000 inferred",
                "7 exit 0 #1 1000..1020 self 10 Exit inferred",
                "7 enter 0 #1 1000 inferred",
                "7 exit 0 #1 1000..1030 self 10 Exit inferred",
                "7 enter 0 #1 1000 inferred",
                "7 exit 0 #1 1000..1040 self 10 Exit inferred",
                "0 end 0",
                "7 end 1040",
            ][..],
        ),
        (
            "midstack",
            midstack_log_led_by(21),
            &[
                "21 start 5000",
                "21 enter 0 #4 5100",
                "21 exit 0 #4 5100..5200 self 100 Exit",
                "21 enter 0 #3 5000 inferred",
                "21 exit 0 #3 5000..5300 self 200 Exit inferred",
                "21 enter 0 #4 5400",
                "21 exit 0 #4 5400..5500 self 100 Exit",
                "21 enter 0 #1 5000 inferred",
                "21 exit 0 #1 5000..6000 self 600 Exit inferred",
                "21 enter 0 #3 6200",
                "21 enter 1 #4 6300",
                "21 exit 1 #4 6300..6300 self 0 WindowEnd",
                "21 exit 0 #3 6200..6300 self 100 WindowEnd",
                "21 end 6300",
            ][..],
        ),
    ] {
        let r = run(&bytes, false).unwrap();
        assert_eq!(r.lines, lines, "{name}");
    }
}

/// The shapes at their test and fuzzing sizes, the benchmark log's make (with windows that
/// start mid-stack), and the logs the tests keep (`tests/fuzz_inputs`).
#[test]
fn with_the_first_pass_no_call_is_inferred_at_its_exit() {
    let bench = |ring| {
        let mut out = Vec::new();
        let spec = BenchLog {
            records: 6000,
            threads: 3,
            block: 2048,
            migrate_every: 97,
            ring,
            end_tsc: 1 << 40,
        };
        fdr_testkit::bench_log::write(&mut out, &spec).unwrap();
        out
    };
    let mut logs: Vec<(String, Vec<u8>)> = vec![
        ("bench".into(), bench(false)),
        ("bench-ring".into(), bench(true)),
    ];
    for (name, n) in [
        ("deep", 1100),
        ("ring", 1100),
        ("siblings", 5000),
        ("functions", 300),
        ("hostile", 300),
        ("backwards", 300),
        ("args", 300),
        ("tasks", 30),
        ("culled", 300),
    ] {
        logs.push((format!("{name}-{n}"), shape(name, n)));
    }
    let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_inputs");
    let mut kept: Vec<_> = std::fs::read_dir(kept)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "fdr"))
        .collect();
    kept.sort();
    assert!(!kept.is_empty(), "the fuzz inputs are in the repository");
    for p in kept {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        logs.push((name, std::fs::read(&p).unwrap()));
    }
    for (name, bytes) in &logs {
        nothing_inferred_late(name, bytes);
    }
    // The ring windows do start mid-stack.
    let r = run(&logs[1].1, true).unwrap();
    assert!(!r.stacks.is_empty());
}
