//! Culling when many functions interleave and many threads run them, driven by the injected
//! clock: each function keeps its own run of erased calls, whatever runs between its calls, and
//! the decision to cull or restore is shared by every thread.

use std::collections::BTreeSet;
use std::time::Duration;

use fdr_format::CullKind;
use fdr_runtime::{testing, CallGuard, Config, FnDesc, Mode};
use fdr_testkit::desc;
use fdr_testkit::logs::{decode, DecodedLog, Rec};
use fdr_testkit::recording::{record_log, MockSession};

const CULL_AFTER: u32 = 100;

// A thousand functions, `culling_many::many::xA::xB::xC::f`, from nested modules.
macro_rules! tens {
    ($inner:ident) => {
        mod x0 {
            $inner!();
        }
        mod x1 {
            $inner!();
        }
        mod x2 {
            $inner!();
        }
        mod x3 {
            $inner!();
        }
        mod x4 {
            $inner!();
        }
        mod x5 {
            $inner!();
        }
        mod x6 {
            $inner!();
        }
        mod x7 {
            $inner!();
        }
        mod x8 {
            $inner!();
        }
        mod x9 {
            $inner!();
        }
    };
}
macro_rules! one {
    () => {
        fdr_testkit::desc!(F, concat!(module_path!(), "::f"));
    };
}
macro_rules! ten {
    () => {
        tens!(one);
    };
}
macro_rules! hundred {
    () => {
        tens!(ten);
    };
}
mod many {
    tens!(hundred);
}

desc!(OUTER, "culling_many::outer");
desc!(SHARED, "culling_many::shared");

#[fdr::instrument_fdr(log_args)]
fn with_args(a: u64) -> u64 {
    a + 1
}

#[fdr::instrument_fdr(trigger = "10s")]
fn with_trigger(a: u64) -> u64 {
    a + 2
}

fn config() -> Config {
    Config::default()
        .buffer_size(1 << 20)
        .buffer_count(16)
        .mode(Mode::Fill)
        .threshold(Duration::from_nanos(100))
        // Each case learns from nothing: not from what the case before it left.
        .cull_memory(false)
        .cull_after(CULL_AFTER)
}

/// The thousand functions, in table order.
fn thousand() -> Vec<&'static FnDesc> {
    let all: Vec<&'static FnDesc> = (1..)
        .map_while(fdr_runtime::function)
        .filter(|f| f.name().starts_with("culling_many::many::"))
        .collect();
    assert_eq!(all.len(), 1000);
    all
}

/// One call of `f` lasting `ticks`, then one tick between calls.
fn call(f: &'static FnDesc, ticks: u64) {
    let g = CallGuard::enter(f);
    testing::advance(ticks);
    drop(g);
    testing::advance(1);
}

/// The cull events of a log, per thread: (kind, function id, run).
fn culls(log: &DecodedLog) -> Vec<(i32, CullKind, u32, u64)> {
    let mut out = Vec::new();
    for tid in log.tids() {
        for r in log.thread_records(tid) {
            if let Rec::Cull(k, id, run, _) = r {
                out.push((tid, k, id, run));
            }
        }
    }
    out
}

/// Kept entries of `id` in a thread's records.
fn entries(log: &DecodedLog, tid: i32, id: u32) -> usize {
    log.thread_records(tid)
        .iter()
        .filter(|r| matches!(r, Rec::Enter(i, _) if *i == id))
        .count()
}

#[test]
fn a_thousand_functions_called_in_turn_are_each_culled_after_their_own_run() {
    let fs = thousand();
    let log = record_log(config(), || {
        let outer = CallGuard::enter(&OUTER);
        testing::advance(1000);
        // Each round calls every function once: between two calls of one function, 999 others.
        for _ in 0..CULL_AFTER {
            for &f in &fs {
                call(f, 5);
            }
        }
        testing::advance(1000);
        drop(outer);
    });
    let events = culls(&log);
    // Exactly one cull per function, each after exactly its run, none restored.
    let want: BTreeSet<u32> = fs.iter().map(|f| f.id()).collect();
    let got: BTreeSet<u32> = events.iter().map(|e| e.2).collect();
    assert_eq!(events.len(), 1000, "{:?}", &events[..events.len().min(5)]);
    assert_eq!(got, want);
    assert!(events
        .iter()
        .all(|&(_, k, _, run)| k == CullKind::Culled && run == u64::from(CULL_AFTER)));
    // In the order of the last round: the n-th function is culled at its 100th call.
    let order: Vec<u32> = events.iter().map(|e| e.2).collect();
    assert_eq!(order, fs.iter().map(|f| f.id()).collect::<Vec<_>>());
}

#[test]
fn one_of_a_thousand_culled_functions_made_slow_is_recorded_again() {
    let fs = thousand();
    let slow = fs[437];
    let log = record_log(config(), || {
        for _ in 0..CULL_AFTER {
            for &f in &fs {
                call(f, 5);
            }
        }
        // All culled. Now `slow` takes 500 ticks per call: skipped until a probe lets one through.
        for &f in &fs {
            call(f, if std::ptr::eq(f, slow) { 500 } else { 5 });
        }
        assert_eq!(testing::probe_culled(), 1000);
        // The 16 rounds after the probe: each function's calls are let through and timed; only
        // `slow` is kept (restored at once), the others are culled again after their 16. Then
        // two more rounds, where the others are skipped.
        for _ in 0..(testing::PROBE_CALLS + 2) {
            for &f in &fs {
                call(f, if std::ptr::eq(f, slow) { 500 } else { 5 });
            }
        }
    });
    let events = culls(&log);
    let restored: Vec<u32> = events
        .iter()
        .filter(|e| e.1 == CullKind::Restored)
        .map(|e| e.2)
        .collect();
    assert_eq!(restored, vec![slow.id()]);
    // Re-culling after a short probed call writes no event: 1000 culls and the one restore.
    assert_eq!(events.len(), 1001);
    let tid = log.tids()[0];
    // Recorded again from the probed call on: every call of the rounds after the probe.
    assert_eq!(
        entries(&log, tid, slow.id()),
        testing::PROBE_CALLS as usize + 2
    );
    // ... and no other function has a kept call.
    for &f in &fs {
        if !std::ptr::eq(f, slow) {
            assert_eq!(entries(&log, tid, f.id()), 0, "{}", f.name());
        }
    }
    // Erased: the runs that culled them and the short calls of 999 probes.
    assert_eq!(
        log.run.calls_erased,
        1000 * u64::from(CULL_AFTER) + 999 * u64::from(testing::PROBE_CALLS)
    );
    assert_eq!(log.run.probes, 1000);
}

#[test]
fn functions_with_a_trigger_or_logged_arguments_are_never_culled() {
    let log = record_log(config(), || {
        for i in 0..(10 * u64::from(CULL_AFTER)) {
            std::hint::black_box(with_args(i));
            std::hint::black_box(with_trigger(i));
            testing::advance(1);
        }
    });
    assert_eq!(culls(&log), vec![]);
    let tid = log.tids()[0];
    let id_of = |name: &str| {
        (1..)
            .map_while(fdr_runtime::function)
            .find(|f| f.name().ends_with(name))
            .map(|f| f.id())
            .expect(name)
    };
    // Calls with logged arguments are never erased; a trigger function's short calls are.
    assert_eq!(entries(&log, tid, id_of("::with_trigger")), 0);
    let args_entries = log
        .thread_records(tid)
        .iter()
        .filter(|r| matches!(r, Rec::EnterArgs(i, _) if *i == id_of("::with_args")))
        .count();
    assert_eq!(args_entries, 10 * CULL_AFTER as usize);
}

/// Runs `body` on a new thread with its own injected time and thread id, and waits until the
/// thread is gone (a joined thread has run its exit hook, which hands in its counts; the end of
/// a scope only waits for the closure).
fn on_thread(tid: i32, body: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        testing::set_thread_id(tid);
        testing::set_time(1_000);
        testing::set_cpu(0);
        body();
    })
    .join()
    .unwrap();
}

#[test]
fn short_lived_workers_add_up_one_run_and_a_new_thread_starts_culled() {
    let per_worker = 10;
    let log = record_log(config(), || {
        // 64 workers one after the other, each with 10 erased calls: the tenth worker's last
        // call completes the run of 100.
        for w in 0..64 {
            on_thread(100 + w, move || {
                for _ in 0..per_worker {
                    call(&SHARED, 5);
                }
            });
        }
        // A thread that starts now finds it culled: its calls are skipped, it never learns
        // anything of its own: nothing of it is in the log.
        on_thread(500, || {
            for _ in 0..1000 {
                call(&SHARED, 5);
            }
        });
    });
    assert_eq!(
        culls(&log),
        vec![(109, CullKind::Culled, SHARED.id(), u64::from(CULL_AFTER))]
    );
    // The new thread recorded nothing at all: not a kept call, not a run of its own.
    assert!(!log.tids().contains(&500), "{:?}", log.tids());
}

#[test]
fn a_slow_probed_call_on_any_thread_restores_the_function_for_all() {
    let log = record_log(config(), || {
        // Culled by thread 200.
        on_thread(200, || {
            for _ in 0..CULL_AFTER {
                call(&SHARED, 5);
            }
        });
        // Thread 201's calls are skipped, slow or not, until a probe lets one through: that one
        // is slow and restores it.
        on_thread(201, || {
            for _ in 0..100 {
                call(&SHARED, 500);
            }
            testing::probe_culled();
            call(&SHARED, 500);
        });
        // Thread 202, new, records its slow calls at once: a full call each.
        on_thread(202, || {
            for _ in 0..3 {
                call(&SHARED, 500);
            }
        });
    });
    let id = SHARED.id();
    assert_eq!(
        culls(&log),
        vec![
            (200, CullKind::Culled, id, u64::from(CULL_AFTER)),
            (201, CullKind::Restored, id, 0)
        ]
    );
    assert_eq!(entries(&log, 201, id), 1);
    assert_eq!(entries(&log, 202, id), 3);
}

#[test]
fn the_runs_of_two_threads_are_one_run_and_a_kept_call_anywhere_resets_it() {
    let log = record_log(config(), || {
        // 60 erased calls on one thread, a kept call on another, 60 more: no run of 100.
        on_thread(300, || (0..60).for_each(|_| call(&SHARED, 5)));
        on_thread(301, || call(&SHARED, 500));
        on_thread(302, || (0..60).for_each(|_| call(&SHARED, 5)));
    });
    assert_eq!(culls(&log), vec![]);
    let log = record_log(config(), || {
        // The same without the kept call: culled at the 40th call of the second thread.
        on_thread(300, || (0..60).for_each(|_| call(&SHARED, 5)));
        on_thread(302, || (0..60).for_each(|_| call(&SHARED, 5)));
    });
    assert_eq!(
        culls(&log),
        vec![(302, CullKind::Culled, SHARED.id(), u64::from(CULL_AFTER))]
    );
}

#[test]
fn the_culling_state_is_four_bytes_a_function_and_a_kibibyte_a_thread() {
    let session = MockSession::start(config());
    let fs = thousand();
    std::thread::scope(|s| {
        for t in 0..8 {
            let fs = &fs;
            s.spawn(move || {
                testing::set_thread_id(700 + t);
                fs.iter().for_each(|&f| call(f, 5));
            });
        }
    });
    let stats = fdr_runtime::recorder().expect("running").stats();
    let functions = (1..).map_while(fdr_runtime::function).count();
    assert!(functions >= 1000);
    assert_eq!(stats.threads, 8);
    assert_eq!(stats.culling_bytes, 4 * functions + 8 * 1024);
    assert_eq!(testing::culling_memory(50_000, 1_000), 200_000 + 1_024_000);
    drop(session.finish());
}

#[test]
fn the_log_counts_the_calls_erased_and_the_probes() {
    let log = record_log(config(), || {
        on_thread(900, || {
            // 100 erased calls cull it; 1000 culled calls are skipped, uncounted; three probes,
            // each letting 16 short calls through (erased, then culled again), and 10 skipped
            // calls after each.
            for _ in 0..(100 + 1000) {
                call(&SHARED, 5);
            }
            for _ in 0..3 {
                testing::probe_culled();
                for _ in 0..(testing::PROBE_CALLS + 10) {
                    call(&SHARED, 5);
                }
            }
        })
    });
    assert_eq!(
        (log.run.calls_erased, log.run.probes),
        (100 + 3 * u64::from(testing::PROBE_CALLS), 3)
    );
    assert_eq!(culls(&log).len(), 1);
}

desc!(PROBED, "culling_many::probed");

/// Whether a snapshot of `rec` holds a cull event of `kind` for `f`.
fn has_cull(rec: &fdr_runtime::Recorder, kind: CullKind, f: &'static FnDesc) -> bool {
    let mut bytes = Vec::new();
    rec.snapshot(&mut bytes).unwrap();
    let log = decode(&bytes[..]).unwrap();
    culls(&log).iter().any(|e| e.1 == kind && e.2 == f.id())
}

/// Culls `f` with runs of short calls on the real clock. A call the machine preempts past the
/// threshold is kept and starts the run over (CI's loaded machine did, and the function was
/// never culled): runs until a snapshot shows the cull, at most 1,000.
fn cull_on_the_real_clock(rec: &fdr_runtime::Recorder, f: &'static FnDesc) {
    let mut runs = 0;
    while !has_cull(rec, CullKind::Culled, f) {
        assert!(runs < 1_000, "not culled after {runs} runs of short calls");
        for _ in 0..CULL_AFTER {
            drop(CallGuard::enter(f));
        }
        runs += 1;
    }
}

#[test]
fn the_background_writer_probes_a_culled_function_that_became_slow_and_restores_it() {
    // The real clock: the writer probes by itself every PROBE_PERIOD_MS.
    let _turn = testing::exclusive();
    testing::use_real_clock();
    let rec = fdr_runtime::start(
        Config::default()
            .buffer_size(1 << 16)
            .buffer_count(8)
            .threshold(Duration::from_micros(500))
            // Learns from nothing, not from what the case before it left.
            .cull_memory(false)
            .cull_after(CULL_AFTER),
    )
    .unwrap();
    let has = |rec: &fdr_runtime::Recorder, kind: CullKind| has_cull(rec, kind, &PROBED);
    cull_on_the_real_clock(&rec, &PROBED);
    // Culled now: calls that sleep 1 ms are skipped until a probe lets one through, which is
    // kept and restores the function. Look for the restore in snapshots, for at most 10 s.
    let restored = |rec: &fdr_runtime::Recorder| has(rec, CullKind::Restored);
    let mut slow_calls = 0;
    while !restored(&rec) {
        assert!(
            slow_calls < 10_000,
            "not restored after {slow_calls} slow calls"
        );
        for _ in 0..10 {
            let g = CallGuard::enter(&PROBED);
            std::thread::sleep(Duration::from_millis(1));
            drop(g);
            slow_calls += 1;
        }
    }
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = decode(&bytes[..]).unwrap();
    assert!(log.run.probes >= 1, "{:?}", log.run);
    let events: Vec<CullKind> = culls(&log).iter().map(|e| e.1).collect();
    assert_eq!(events, vec![CullKind::Culled, CullKind::Restored]);
    // The probed call and every one after it are recorded whole.
    let tid = log.tids()[0];
    assert!(entries(&log, tid, PROBED.id()) >= 1);
}

desc!(RARELY_KEPT, "culling_many::rarely_kept");
desc!(OFTEN_KEPT, "culling_many::often_kept");

#[test]
fn a_kept_call_takes_a_thousand_off_the_run_so_rare_long_calls_do_not_stop_a_cull() {
    assert_eq!(testing::KEPT_COST, 1000);
    let log = record_log(config().cull_after(10_000), || {
        on_thread(400, || {
            // One call in 5,000 kept (an interrupt's, say): the run goes 4,999, then 3,999 after
            // the kept call, 8,998 and 7,998, and reaches 10,000 at the 2,002nd erased call of
            // the third round. A kept call that started the run over never let it get there.
            for _ in 0..3 {
                (0..4_999).for_each(|_| call(&RARELY_KEPT, 5));
                call(&RARELY_KEPT, 500);
            }
            // One call in 1,000 kept: each takes off what the 999 before it added.
            for _ in 0..50 {
                (0..999).for_each(|_| call(&OFTEN_KEPT, 5));
                call(&OFTEN_KEPT, 500);
            }
        });
    });
    assert_eq!(
        culls(&log),
        vec![(400, CullKind::Culled, RARELY_KEPT.id(), 10_000)]
    );
    // The first two rounds' kept calls; the third round's came after the cull.
    assert_eq!(entries(&log, 400, RARELY_KEPT.id()), 2);
    assert_eq!(entries(&log, 400, OFTEN_KEPT.id()), 50);
    assert_eq!(log.run.calls_erased, 4_999 + 4_999 + 2_002 + 50 * 999);
}

desc!(PROBED_OFTEN, "culling_many::probed_often");
desc!(WATCHED, "culling_many::watched");

#[test]
fn probes_keep_their_period_when_a_short_trigger_wakes_the_writer_every_millisecond() {
    // A trigger with a 4 ms limit makes the writer look at open calls every millisecond; the
    // probes of culled functions still come once per PROBE_PERIOD_MS (10 ms), not at every
    // look. A thread keeps calling the culled function, so that each probe ends (its calls
    // are short) and the function is culled again, ready for the next.
    let _turn = testing::exclusive();
    testing::use_real_clock();
    let rec = fdr_runtime::start(
        Config::default()
            .threshold(Duration::from_micros(500))
            .cull_memory(false)
            .cull_after(CULL_AFTER)
            .trigger("culling_many::watched", Duration::from_millis(4)),
    )
    .unwrap();
    drop(CallGuard::enter(&WATCHED));
    // Culled first, so that the probes below are the period's.
    cull_on_the_real_clock(&rec, &PROBED_OFTEN);
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_millis(300) {
        for _ in 0..CULL_AFTER {
            drop(CallGuard::enter(&PROBED_OFTEN));
        }
    }
    let elapsed = started.elapsed();
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = decode(&bytes[..]).unwrap();
    // At most one probe per 10 ms of the run, and one more for the start (every look made
    // about 240 here).
    let most = elapsed.as_millis() as u64 / 10 + 2;
    assert!(
        log.run.probes <= most,
        "{} probes in {elapsed:?}, at most {most}",
        log.run.probes
    );
}
