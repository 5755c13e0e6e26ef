//! The cost budget, driven by the injected clock and CPU time: over budget, the recorder stops
//! timing the functions with the most erased calls first, never one with a trigger or logged
//! arguments; with the load gone it times them again, the last stopped first; the log says
//! which were untimed and when, and `fdr info` and `fdr account` say so. A recording under its
//! budget records exactly what it records without one.

use std::time::Duration;

use fdr_runtime::{testing, CallGuard, Config, FnDesc, FnKindTag, Mode};
use fdr_testkit::logs::{DecodedLog, Rec};
use fdr_testkit::recording::{record_log, MockSession};
use fdr_testkit::{desc, desc_with_trigger};

desc!(OUTER, "budget::outer");
desc!(TINY, "budget::tiny");
desc!(SMALL, "budget::small");
desc!(RARE, "budget::rare");
desc_with_trigger!(ARMED, "budget::armed", 1_000_000_000);

#[fdr_runtime::linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
#[linkme(crate = fdr_runtime::linkme)]
static LOGGED: FnDesc = FnDesc::new(
    "budget::logged",
    file!(),
    line!(),
    FnKindTag::Function,
    &["x"],
);

/// Ticks (nanoseconds) between two looks: the writer's period.
const LOOK: u64 = 100_000_000;

fn config(budget: Option<f64>) -> Config {
    Config::default()
        .buffer_size(1 << 20)
        .buffer_count(8)
        .mode(Mode::Fill)
        .threshold(Duration::from_nanos(100))
        .cull_memory(false)
        // Nothing is culled here: only the budget stops timing.
        .cull_after(u32::MAX)
        .budget(budget)
}

/// `n` calls of `f`, each `ticks` long, one tick apart.
fn calls(f: &'static FnDesc, n: u64, ticks: u64) {
    for _ in 0..n {
        let g = CallGuard::enter(f);
        testing::advance(ticks);
        drop(g);
        testing::advance(1);
    }
}

fn logged_calls(n: u64) {
    for i in 0..n {
        let g = CallGuard::enter_args(&LOGGED, &[i]);
        testing::advance(5);
        drop(g);
        testing::advance(1);
    }
}

/// One look of the budget after `cpu_ms` more of the process's CPU time and one look's time.
fn look(cpu_ns: &mut u64, cpu_ms: u64) -> testing::BudgetLook {
    *cpu_ns += cpu_ms * 1_000_000;
    testing::set_process_cpu_ns(*cpu_ns);
    testing::advance(LOOK);
    testing::budget_look().expect("the recording keeps a budget")
}

/// The kept calls of `f` (entries and exits) in the thread's records, with their exit deltas.
fn kept(log: &DecodedLog, f: &'static FnDesc) -> Vec<u32> {
    log.thread_records(log.tids()[0])
        .iter()
        .filter_map(|r| match *r {
            Rec::Exit(id, d) if id == f.id() => Some(d),
            _ => None,
        })
        .collect()
}

#[test]
fn over_budget_the_cheapest_functions_stop_first_and_come_back_when_the_load_drops() {
    let session = MockSession::start(config(Some(1.0)));
    testing::set_call_cost_ps(10_000);
    let mut cpu = 0;
    // One slow call of tiny before the budget acts: kept.
    calls(&TINY, 1, 500);
    assert_eq!(look(&mut cpu, 0).estimate_ppm, 0);
    // The calls below are inside outer's: each function is seen with a timed caller, which
    // makes it one the budget may stop.
    let outer = CallGuard::enter(&OUTER);
    // 40,000 erased calls of tiny, 5,000 of small, 300 of rare (a thread hands its counts in
    // every 128), 40,000 of the armed one and 30,000 of the logged one: 115,300 timed calls at
    // 10 ns in 10 ms of CPU, 11.5 %.
    calls(&TINY, 40_000, 5);
    calls(&SMALL, 5_000, 5);
    calls(&RARE, 300, 5);
    calls(&ARMED, 40_000, 5);
    logged_calls(30_000);
    let first = look(&mut cpu, 10);
    // At least the 11.5 % of the timed calls (records and a logged call's argument cost more).
    assert!(
        (115_000..150_000).contains(&first.estimate_ppm),
        "{first:?}"
    );
    // The most erased first; the armed and logged ones, which cost more, never.
    assert_eq!(
        first.stopped,
        vec!["budget::tiny", "budget::small", "budget::rare"]
    );
    // Untimed: a slow call of tiny is not seen.
    calls(&TINY, 1, 700);
    // The load drops: a few calls a look, 100 ms of CPU each. Ten quiet looks bring back the
    // last one stopped, ten more the next.
    let mut restored = Vec::new();
    for i in 0..30 {
        calls(&ARMED, 100, 5);
        let l = look(&mut cpu, 100);
        assert!(l.stopped.is_empty(), "look {i}: {l:?}");
        for name in l.restored {
            restored.push((i, name));
        }
    }
    assert_eq!(
        restored,
        vec![
            (9, "budget::rare".to_string()),
            (19, "budget::small".to_string()),
            (29, "budget::tiny".to_string())
        ]
    );
    // Timed again: a slow call of tiny is kept.
    calls(&TINY, 1, 900);
    drop(outer);
    let log = session.finish();
    assert_eq!(kept(&log, &TINY), vec![500, 900]);
    let budget = log.budget.clone().expect("a budget record");
    assert_eq!(budget.budget_ppm, 10_000);
    assert_eq!(budget.call_cost_ps, 10_000);
    assert_eq!(budget.looks, 32);
    assert!(budget.peak_ppm >= 110_000, "{budget:?}");
    let spans: Vec<(&str, bool)> = budget
        .untimed
        .iter()
        .map(|s| (log.name(s.function).unwrap(), s.to_tsc.is_some()))
        .collect();
    assert_eq!(
        spans,
        vec![
            ("budget::tiny", true),
            ("budget::small", true),
            ("budget::rare", true)
        ]
    );
    // Tiny and small were stopped at the first look, and tiny timed again thirty looks later:
    // its span covers the slow call that is missing, and not the one that is there.
    let tiny = budget.untimed[0];
    let small = budget.untimed[1];
    assert_eq!(tiny.from_tsc, small.from_tsc);
    assert!(tiny.to_tsc.unwrap() > small.to_tsc.unwrap());
    assert!(tiny.calls_per_second > small.calls_per_second);
    assert_eq!(
        tiny.to_tsc.unwrap() - tiny.from_tsc,
        701 + 30 * (LOOK + 600),
        "the slow call, then thirty looks with a hundred calls of six ticks before each"
    );
}

#[test]
fn still_over_the_frequent_function_whose_calls_are_kept_stops_next_never_a_trigger() {
    let session = MockSession::start(config(Some(1.0)));
    testing::set_call_cost_ps(10_000);
    let mut cpu = 0;
    look(&mut cpu, 0);
    let outer = CallGuard::enter(&OUTER);
    // 20,000 erased calls of tiny (2 % of 10 ms of CPU at 10 ns a call), then 30,000 kept calls
    // of small and 10,000 of the armed one, each longer than the threshold: their records, 4 %
    // more, are in the buffer the budget samples.
    calls(&TINY, 20_000, 5);
    calls(&SMALL, 30_000, 500);
    calls(&ARMED, 10_000, 500);
    let l = look(&mut cpu, 10);
    assert!((60_000..70_000).contains(&l.estimate_ppm), "{l:?}");
    // Tiny first (erased calls tell nothing), then small (the costliest kept, with a timed
    // caller); the armed one, kept too, never.
    assert_eq!(l.stopped, vec!["budget::tiny", "budget::small"]);
    // Untimed: small's next slow call is not in the log.
    calls(&SMALL, 1, 7_000);
    drop(outer);
    let log = session.finish();
    let small = kept(&log, &SMALL);
    assert_eq!(small.len(), 30_000);
    assert!(!small.contains(&7_000));
    let budget = log.budget.clone().expect("a budget record");
    let spans: Vec<(&str, u64)> = budget
        .untimed
        .iter()
        .map(|s| (log.name(s.function).unwrap(), s.calls_per_second))
        .collect();
    // Each at its calls a second over the look (a look's 100 ms and the calls' 20 ms): tiny's
    // erased calls counted exactly, small's estimated from the sample, near one and a half
    // times as many.
    assert_eq!(spans[0].0, "budget::tiny");
    assert!((160_000..170_000).contains(&spans[0].1), "{spans:?}");
    assert_eq!(spans[1].0, "budget::small");
    let ratio = spans[1].1 as f64 / spans[0].1 as f64;
    assert!((1.45..1.55).contains(&ratio), "{spans:?}");
}

#[test]
fn the_cli_names_the_untimed_functions() {
    let session = MockSession::start(config(Some(1.0)));
    testing::set_call_cost_ps(10_000);
    let mut cpu = 0;
    calls(&TINY, 1, 500);
    look(&mut cpu, 0);
    let outer = CallGuard::enter(&OUTER);
    calls(&TINY, 50_000, 5);
    calls(&SMALL, 100, 500);
    let l = look(&mut cpu, 10);
    assert_eq!(l.stopped, vec!["budget::tiny"]);
    drop(outer);
    let bytes = session.finish_bytes();
    let path = std::env::temp_dir().join(format!("fdr-budget-cli-{}.fdr", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let mut info = Vec::new();
    fdr_cli::run(&["info", path.to_str().unwrap()], &mut info).unwrap();
    let info = String::from_utf8(info).unwrap();
    let mut account = Vec::new();
    fdr_cli::run(
        &["account", path.to_str().unwrap(), "--format", "json"],
        &mut account,
    )
    .unwrap();
    std::fs::remove_file(&path).ok();
    assert!(info.contains("budget"), "{info}");
    let line = info
        .lines()
        .find(|l| l.contains("budget::tiny"))
        .unwrap_or_else(|| panic!("fdr info names tiny: {info}"));
    assert!(line.contains("to the end"), "{line}");
    assert!(!info
        .lines()
        .any(|l| l.contains("budget::small") && l.contains("from")));
    let account: serde_json::Value = serde_json::from_slice(&account).unwrap();
    let rows = account.as_array().unwrap();
    let marked = |name: &str| {
        rows.iter()
            .find(|r| r["function"] == name)
            .map(|r| r["untimed_by_budget"] == true)
    };
    assert_eq!(marked("budget::tiny"), Some(true));
    assert_eq!(marked("budget::small"), Some(false));
}

#[test]
fn a_recording_under_its_budget_records_exactly_what_it_records_without_one() {
    let run = |budget: Option<f64>| {
        record_log(config(budget), || {
            testing::set_call_cost_ps(10_000);
            let mut cpu = 0;
            let outer = CallGuard::enter(&OUTER);
            if budget.is_some() {
                look(&mut cpu, 0);
            } else {
                testing::advance(LOOK);
            }
            for round in 0..20u64 {
                calls(&TINY, 500, 5 + round % 3);
                calls(&SMALL, 3, 200 * round);
                logged_calls(10);
                calls(&ARMED, 2, 300);
                if budget.is_some() {
                    // 0.5 ms of recording against a second of CPU: far under 1 %.
                    let l = look(&mut cpu, 1000);
                    assert!(l.stopped.is_empty() && l.restored.is_empty(), "{l:?}");
                } else {
                    testing::advance(LOOK);
                }
            }
            drop(outer);
        })
    };
    let with = run(Some(1.0));
    let without = run(None);
    let records = |log: &DecodedLog| log.thread_records(log.tids()[0]);
    assert_eq!(records(&with), records(&without));
    assert!(with.budget.as_ref().unwrap().untimed.is_empty());
    assert_eq!(without.budget, None);
}

/// Three threads that each run short-lived threads one after another: each of those calls
/// `work` with the phase (0 busy, 1 quiet, 2 stop) `rounds` times and ends. They return once
/// `work` says the phase is over (false).
fn short_lived_workers(
    phase: &std::sync::Arc<std::sync::atomic::AtomicU8>,
    rounds: usize,
    work: fn(u8) -> bool,
) -> Vec<std::thread::JoinHandle<()>> {
    use std::sync::atomic::Ordering;
    (0..3)
        .map(|_| {
            let phase = std::sync::Arc::clone(phase);
            std::thread::spawn(move || loop {
                let phase = std::sync::Arc::clone(&phase);
                let t = std::thread::spawn(move || {
                    (0..rounds).all(|_| work(phase.load(Ordering::Relaxed)))
                });
                if !t.join().unwrap() {
                    return;
                }
            })
        })
        .collect()
}

/// A thread that takes looks of the budget of its own every 7 ms (racing the writer's) while
/// `looking` holds.
fn looker(looking: &std::sync::Arc<std::sync::atomic::AtomicBool>) -> std::thread::JoinHandle<()> {
    let looking = std::sync::Arc::clone(looking);
    std::thread::spawn(move || {
        while looking.load(std::sync::atomic::Ordering::Relaxed) {
            testing::budget_look();
            std::thread::sleep(Duration::from_millis(7));
        }
    })
}

desc!(MID, "budget::mid");
desc!(LEAF, "budget::leaf");

/// One call of mid with four leaf calls inside: leaf is seen with a timed caller. One leaf call
/// in 400 lasts 10 us and is kept, as a function sometimes slow is: culling never takes leaf
/// (only one whose calls are nearly all erased), the budget may.
#[inline(never)]
fn mid() {
    thread_local!(static CALLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) });
    let _g = CallGuard::enter(&MID);
    for _ in 0..4 {
        let leaf = CallGuard::enter(&LEAF);
        let n = CALLS.with(|c| c.replace(c.get() + 1));
        if n % 400 == 399 {
            let t = std::time::Instant::now();
            while t.elapsed() < Duration::from_micros(10) {}
        }
        drop(leaf);
    }
}

/// The budget stops and restores a function while threads keep calling it, starting and
/// exiting, with snapshots and looks of its own racing the writer's, on the real clock: every
/// log nests, and says when leaf was untimed.
#[test]
#[cfg_attr(
    fdr_emulated,
    ignore = "timed on the machine's CPU clocks: under qemu-user a call's cost is the emulator's"
)]
fn the_budget_stops_and_restores_while_threads_record_start_and_exit() {
    use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
    use std::sync::Arc;
    let _turn = testing::exclusive();
    testing::use_real_clock();
    let dir = fdr_testkit::logs::scratch("budget-race");
    // 2 %: tight loops of calls cost far more, calls a millisecond apart far less.
    let rec = fdr_runtime::start(
        Config::default()
            .cull_memory(false)
            .budget(Some(2.0))
            .buffer_count(64),
    )
    .unwrap();
    // 0: busy, 1: quiet, 2: stop.
    let phase = Arc::new(AtomicU8::new(0));
    // Short-lived threads: each makes a few thousand calls and ends.
    let workers = short_lived_workers(&phase, 2000, |phase| {
        match phase {
            0 => mid(),
            1 => {
                mid();
                std::thread::sleep(Duration::from_millis(2));
            }
            _ => return false,
        }
        true
    });
    let looking = Arc::new(AtomicBool::new(true));
    let looker = looker(&looking);
    let snapshot = |n: usize| {
        let path = dir.join(format!("snap-{n}.fdr"));
        rec.write_snapshot(&path).unwrap();
        fdr_testkit::logs::read_log(&path)
    };
    let mut logs = Vec::new();
    // Busy: leaf is stopped within a few looks.
    let until_shed = std::time::Instant::now();
    while rec.stats().untimed_by_budget == 0 {
        assert!(
            until_shed.elapsed() < Duration::from_secs(20),
            "never stopped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    logs.push(snapshot(0));
    // Quiet: timed again after a second under half the budget.
    phase.store(1, Ordering::Relaxed);
    let until_restored = std::time::Instant::now();
    while rec.stats().untimed_by_budget != 0 {
        assert!(
            until_restored.elapsed() < Duration::from_secs(20),
            "never timed again"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    logs.push(snapshot(1));
    // Busy again, then the end while threads record.
    phase.store(0, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(300));
    let path = dir.join("final.fdr");
    rec.finish(&path).unwrap();
    phase.store(2, Ordering::Relaxed);
    looking.store(false, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    looker.join().unwrap();
    logs.push(fdr_testkit::logs::read_log(&path));
    for log in &logs {
        log.assert_nests();
    }
    let last = logs
        .last()
        .unwrap()
        .budget
        .clone()
        .expect("a budget record");
    let leaf: Vec<_> = last
        .untimed
        .iter()
        .filter(|s| s.function == LEAF.id())
        .collect();
    // Stopped, timed again, and (almost surely) stopped again in the last busy phase.
    assert!(!leaf.is_empty(), "{last:?}");
    assert!(
        leaf[0].to_tsc.is_some_and(|t| t > leaf[0].from_tsc),
        "{last:?}"
    );
    // Mid, every thread's outermost call, is never stopped.
    assert!(
        last.untimed.iter().all(|s| s.function != MID.id()),
        "{last:?}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// A future pending at its first poll, which wakes the task through the waker it was given
/// (as a socket's readiness does) before it returns, and ready at the next.
struct Woken(bool);

impl std::future::Future for Woken {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            std::task::Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    }
}

/// A connection's task, as a service's root is: it waits for each request (an await that
/// waits, then a wake-up), and answers in 200 ticks. Polled from the test's thread with no
/// timed call around it, it is the thread's outermost: the budget never untimes it.
#[fdr::instrument_fdr]
async fn serve(requests: u64) {
    for _ in 0..requests {
        Woken(false).await; // the wait for the next request
        testing::advance(200);
    }
}

/// The same, with a trigger: the budget stops none of its waits and wake-ups either.
#[fdr::instrument_fdr(trigger = "10s")]
async fn serve_armed(requests: u64) {
    for _ in 0..requests {
        Woken(false).await; // the armed one's wait
        testing::advance(200);
    }
}

/// Polls `task` to its end, `wait` ticks between its polls (a request's wait for the next).
fn drive(task: impl std::future::Future<Output = ()>, wait: u64) {
    let mut task = std::pin::pin!(task);
    while fdr_testkit::futures::poll_once(task.as_mut()).is_pending() {
        testing::advance(wait);
    }
}

/// Where `marker`'s await is in this file: `(line, column)` of its `Woken`.
fn await_site(marker: &str) -> (u32, u32) {
    let source = include_str!("budget.rs");
    let (i, line) = source
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(marker) && l.contains(".await"))
        .unwrap_or_else(|| panic!("{marker} in the source"));
    (i as u32 + 1, line.find("Woken").unwrap() as u32 + 1)
}

/// The id of the async function `name` in `log`'s table (its await sites share its name).
fn async_id(log: &DecodedLog, name: &str) -> u32 {
    log.functions
        .iter()
        .find(|f| f.name == name && f.kind == fdr_format::FunctionKind::Async)
        .map(|f| f.id)
        .unwrap_or_else(|| panic!("{name} in the table"))
}

/// The records of `log`'s one thread with their times.
fn timed(log: &DecodedLog) -> Vec<(u64, Rec)> {
    let mut t = 0u64;
    log.thread_records(log.tids()[0])
        .into_iter()
        .map(|r| {
            t = r.time_after(t);
            (t, r)
        })
        .collect()
}

/// (polls, waits, wake events) of `f` among the records timed in `[from, to)`.
fn shape(records: &[(u64, Rec)], f: u32, from: u64, to: u64) -> (usize, usize, usize) {
    let within: Vec<&Rec> = records
        .iter()
        .filter(|(t, _)| (from..to).contains(t))
        .map(|(_, r)| r)
        .collect();
    let polls = within
        .iter()
        .filter(|r| matches!(r, Rec::Exit(id, _) if *id == f))
        .count();
    let waits = within
        .iter()
        .filter(|r| matches!(r, Rec::Await(a, _) if a.function == f))
        .count();
    let wakes = within
        .iter()
        .filter(|r| matches!(r, Rec::Woken(w, _) if w.function == f))
        .count();
    (polls, waits, wakes)
}

#[test]
fn a_roots_waits_and_wake_ups_stop_where_its_polls_may_not_and_come_back() {
    let session = MockSession::start(config(Some(1.0)));
    testing::set_call_cost_ps(10_000);
    let mut cpu = 0;
    look(&mut cpu, 0);
    // 2,000 requests of each root (a poll, a wait and a wake-up each): their records cost
    // more than 1 % of 2 ms of CPU at 10 ns a call.
    drive(serve(2_000), 300);
    drive(serve_armed(2_000), 300);
    let l = look(&mut cpu, 2);
    assert!(l.estimate_ppm > 10_000, "{l:?}");
    let (line, column) = await_site("the wait for the next request");
    let mut stopped = l.stopped.clone();
    stopped.sort();
    // The root's waits and wake-ups; never its polls, nor anything of the armed one.
    assert_eq!(
        stopped,
        vec![
            format!("budget::serve (waits at {line}:{column})"),
            "budget::serve (wake-ups)".to_string(),
        ]
    );
    // Stopped: 500 more requests record their polls only.
    let stopped_at = testing::now().0;
    drive(serve(500), 300);
    drive(serve_armed(500), 300);
    testing::advance(1);
    let quiet_at = testing::now().0;
    // The load drops: 1 ms of CPU a look is plenty for ten requests. After a quiet second the
    // last one stopped comes back, after another the first.
    let mut restored = Vec::new();
    for i in 0..20 {
        drive(serve(10), 300);
        let l = look(&mut cpu, 100);
        assert!(l.stopped.is_empty(), "look {i}: {l:?}");
        restored.extend(l.restored.into_iter().map(|name| (i, name)));
    }
    assert_eq!(restored.len(), 2, "{restored:?}");
    assert_eq!((restored[0].0, restored[1].0), (9, 19), "{restored:?}");
    let back_at = testing::now().0;
    drive(serve(100), 300);
    let log = session.finish();
    let f = async_id(&log, "budget::serve");
    let armed = async_id(&log, "budget::serve_armed");
    let records = timed(&log);
    // While stopped: each request's poll is there (200 ticks; the task's first, which only
    // reaches the first wait, is erased as short), nothing else of serve; the armed one records
    // all of it.
    assert_eq!(shape(&records, f, stopped_at, quiet_at), (500, 0, 0));
    assert_eq!(
        shape(&records, armed, stopped_at, quiet_at),
        (500, 500, 500)
    );
    // Both back: every request's wait and wake-up again.
    assert_eq!(shape(&records, f, back_at, u64::MAX), (100, 100, 100));
    // No wake-up noted while its wake-ups were stopped is recorded late: every wake event is
    // of the wait just before its poll (300 ticks).
    for (t, r) in &records {
        if let Rec::Woken(w, _) = r {
            assert_eq!(t - w.woken_at, 300, "{w:?} at {t}");
        }
    }
    let budget = log.budget.clone().expect("a budget record");
    assert_eq!(budget.untimed.len(), 2);
    assert!(budget.untimed.iter().all(|s| s.to_tsc.is_some()));
    assert!(budget
        .untimed
        .iter()
        .any(|s| s.function == f | fdr_format::BUDGET_WAKES_BIT));
}

/// A connection's task on the real clock: each request waits once (woken at once by the
/// future itself, as a ready socket does); with `slow`, it then works for a millisecond (the
/// recorder's cost is then a small share of the process's time).
#[fdr::instrument_fdr]
async fn connection(requests: u64, slow: bool) {
    for _ in 0..requests {
        Woken(false).await; // a connection's wait
        if slow {
            let t = std::time::Instant::now();
            while t.elapsed() < Duration::from_millis(1) {
                std::hint::spin_loop();
            }
        }
    }
}

/// The budget stops and restores a task root's waits and wake-ups while threads keep polling
/// such tasks, starting and exiting, with snapshots and looks of its own racing the writer's,
/// on the real clock: every log nests, the root's polls are never untimed, and its wake-ups
/// were stopped and noted again.
#[test]
#[cfg_attr(
    fdr_emulated,
    ignore = "timed on the machine's CPU clocks: under qemu-user a call's cost is the emulator's"
)]
fn a_roots_details_stop_and_come_back_while_threads_poll_start_and_exit() {
    use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
    use std::sync::Arc;
    let _turn = testing::exclusive();
    testing::use_real_clock();
    let dir = fdr_testkit::logs::scratch("budget-details-race");
    // Nearly every poll, wait and wake-up kept (a service's are, being longer than the
    // threshold): the waits and wake-ups cost records, which the budget finds in its sample. (A
    // threshold of zero would turn culling off, and the budget with it.)
    let rec = fdr_runtime::start(
        Config::default()
            .cull_memory(false)
            .threshold(Duration::from_nanos(1))
            .budget(Some(1.0))
            .buffer_count(64),
    )
    .unwrap();
    // 0: busy, 1: quiet, 2: stop.
    let phase = Arc::new(AtomicU8::new(0));
    // Short-lived threads: each polls a few tasks to their end and exits.
    let workers = short_lived_workers(&phase, 20, |phase| {
        match phase {
            0 => drive(connection(500, false), 0),
            1 => drive(connection(5, true), 0),
            _ => return false,
        }
        true
    });
    let looking = Arc::new(AtomicBool::new(true));
    let looker = looker(&looking);
    let snapshot = |n: usize| {
        let path = dir.join(format!("snap-{n}.fdr"));
        rec.write_snapshot(&path).unwrap();
        fdr_testkit::logs::read_log(&path)
    };
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let since = std::time::Instant::now();
        while !done() {
            assert!(since.elapsed() < Duration::from_secs(20), "never {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut logs = Vec::new();
    // Busy: the waits and wake-ups stop within a few looks.
    wait_for("stopped", &|| rec.stats().untimed_by_budget >= 2);
    logs.push(snapshot(0));
    // Quiet (requests of a millisecond's work): noted again after a second or two under half
    // the budget.
    phase.store(1, Ordering::Relaxed);
    wait_for("noted again", &|| rec.stats().untimed_by_budget == 0);
    logs.push(snapshot(1));
    // Busy again, then the end while threads poll.
    phase.store(0, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(300));
    let path = dir.join("final.fdr");
    rec.finish(&path).unwrap();
    phase.store(2, Ordering::Relaxed);
    looking.store(false, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    looker.join().unwrap();
    logs.push(fdr_testkit::logs::read_log(&path));
    for log in &logs {
        log.assert_nests();
    }
    let last = logs.last().unwrap();
    let f = async_id(last, "budget::connection");
    let budget = last.budget.clone().expect("a budget record");
    // Its polls never stopped; its wake-ups stopped and were noted again.
    assert!(budget.untimed.iter().all(|s| s.function != f), "{budget:?}");
    let wakes: Vec<_> = budget
        .untimed
        .iter()
        .filter(|s| s.function == f | fdr_format::BUDGET_WAKES_BIT)
        .collect();
    assert!(!wakes.is_empty(), "{budget:?}");
    assert!(
        wakes[0].to_tsc.is_some_and(|t| t > wakes[0].from_tsc),
        "{budget:?}"
    );
    // The root's polls are in every log.
    for log in &logs {
        let polls = log
            .tids()
            .iter()
            .flat_map(|&t| log.thread_records(t))
            .filter(|r| matches!(r, Rec::Exit(id, _) if *id == f))
            .count();
        assert!(polls > 0, "no poll of the root in a log");
    }
    std::fs::remove_dir_all(dir).ok();
}
