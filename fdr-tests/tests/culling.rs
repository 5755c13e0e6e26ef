//! Culling, driven by the injected clock: a function whose calls are always erased stops being
//! recorded, is let through for one call by each probe (which the background writer makes every
//! few milliseconds; with the injected clock, the test makes them with `testing::probe_culled`),
//! is recorded again when a probed call is slow, and the log says so.

use std::time::Duration;

use fdr_format::CullKind;
use fdr_runtime::{testing, CallGuard, Config, Mode};
use fdr_testkit::desc;
use fdr_testkit::logs::Rec;
use fdr_testkit::recording::record_log;

desc!(OUTER, "cull::outer");
desc!(TINY, "cull::tiny");

fn config() -> Config {
    Config::default()
        .buffer_size(1 << 16)
        .buffer_count(4)
        .mode(Mode::Fill)
        .threshold(Duration::from_nanos(100))
        // Each case learns from nothing: not from what the case before it left.
        .cull_memory(false)
        .cull_after(100)
}

/// `n` calls of `TINY` lasting `ticks` each, inside one long `OUTER` call, through guards as
/// instrumented code makes them.
fn calls(n: usize, ticks: impl Fn(usize) -> u64) {
    let outer = CallGuard::enter(&OUTER);
    testing::advance(1000);
    for i in 0..n {
        let tiny = CallGuard::enter(&TINY);
        testing::advance(ticks(i));
        drop(tiny);
        testing::advance(1);
    }
    testing::advance(1000);
    drop(outer);
}

fn tiny_records(records: &[Rec]) -> usize {
    let t = TINY.id();
    records
        .iter()
        .filter(|r| matches!(r, Rec::Enter(id, _) | Rec::Exit(id, _) if *id == t))
        .count()
}

fn culls(records: &[Rec]) -> Vec<(CullKind, u32, u64)> {
    records
        .iter()
        .filter_map(|r| match *r {
            Rec::Cull(k, id, run, _) => Some((k, id, run)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_function_whose_calls_are_all_erased_is_culled_and_a_short_probe_culls_it_again() {
    // 100 erased calls cull it; 500 more are skipped; a probe lets 16 through, short: culled
    // again after them with no event, and the calls after those are skipped too.
    let log = record_log(config(), || {
        calls(100 + 500, |_| 5);
        assert_eq!(testing::probe_culled(), 1);
        calls(1 + 500, |_| 5);
    });
    let records = log.thread_records(log.tids()[0]);
    let t = TINY.id();
    assert_eq!(culls(&records), vec![(CullKind::Culled, t, 100)]);
    // Nothing of tiny is kept: the erased calls before the cull and the short probed one.
    assert_eq!(tiny_records(&records), 0);
    // Erased: the 100 before the cull and the probe's 16; probes: one.
    assert_eq!(
        (log.run.calls_erased, log.run.probes),
        (100 + u64::from(testing::PROBE_CALLS), 1)
    );
    // The outer calls are whole around it.
    assert!(matches!(records[1], Rec::Enter(id, 0) if id == OUTER.id()));
    assert!(matches!(records.last(), Some(Rec::Exit(id, _)) if *id == OUTER.id()));
}

#[test]
fn a_probed_call_that_reaches_the_threshold_restores_the_function() {
    let log = record_log(config(), || {
        // Culled after 100, then skipped: even a slow call is not seen while no probe comes.
        calls(100 + 50, |i| if i == 120 { 500 } else { 5 });
        testing::probe_culled();
        // The probed call is slow: restored; then 100 short calls are recorded (and erased)
        // until the run culls it once more.
        calls(1 + 100, |i| if i == 0 { 500 } else { 5 });
    });
    let records = log.thread_records(log.tids()[0]);
    let t = TINY.id();
    assert_eq!(
        culls(&records),
        vec![
            (CullKind::Culled, t, 100),
            (CullKind::Restored, t, 0),
            (CullKind::Culled, t, 100)
        ]
    );
    // The slow probed call is kept (entry and exit, 500 ticks); the slow call before the probe
    // was skipped.
    let kept: Vec<&Rec> = tiny_calls(&records);
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(matches!(kept[1], Rec::Exit(_, 500)));
    // The restore comes right after the slow call's exit.
    let exit_at = records
        .iter()
        .position(|r| matches!(r, Rec::Exit(id, 500) if *id == t))
        .unwrap();
    assert!(matches!(records[exit_at + 1], Rec::Cull(CullKind::Restored, id, 0, _) if id == t));
}

#[test]
fn a_function_restored_by_a_probe_is_culled_again_after_what_a_kept_call_costs() {
    assert_eq!(testing::KEPT_COST, 1000);
    // A run of 2,500 culls it. The probe's call is slow: restored with the run a kept call
    // leaves of a full one, 1,500, so 1,000 erased calls cull it again (not another 2,500).
    let log = record_log(config().cull_after(2500), || {
        calls(2500, |_| 5);
        testing::probe_culled();
        calls(1 + 999, |i| if i == 0 { 500 } else { 5 });
        calls(1 + 50, |_| 5);
    });
    let records = log.thread_records(log.tids()[0]);
    let t = TINY.id();
    assert_eq!(
        culls(&records),
        vec![
            (CullKind::Culled, t, 2500),
            (CullKind::Restored, t, 0),
            (CullKind::Culled, t, 2500)
        ]
    );
    // The second cull comes at the 1,000th erased call after the restore: the first of the
    // third batch; the 50 after it are skipped.
    assert_eq!(log.run.calls_erased, 2500 + 999 + 1);
    let second_cull = records
        .iter()
        .rposition(|r| matches!(r, Rec::Cull(CullKind::Culled, ..)))
        .unwrap();
    let outers_before = records[..second_cull]
        .iter()
        .filter(|r| matches!(r, Rec::Enter(id, _) if *id == OUTER.id()))
        .count();
    assert_eq!(outers_before, 3);
}

#[test]
fn a_function_that_is_slow_now_and_then_is_never_culled() {
    // One call in 100 lasts past the threshold: no run of 100 erased calls.
    let log = record_log(config(), || {
        calls(5000, |i| if i % 100 == 99 { 500 } else { 5 })
    });
    let records = log.thread_records(log.tids()[0]);
    assert!(culls(&records).is_empty());
    // Every slow call is in the log.
    assert_eq!(tiny_records(&records), 2 * 50);
}

#[test]
fn with_culling_off_every_call_is_recorded_as_before() {
    let config = config().cull(false);
    let log = record_log(config, || calls(1000, |i| if i == 900 { 500 } else { 5 }));
    let records = log.thread_records(log.tids()[0]);
    assert!(culls(&records).is_empty());
    let (o, t) = (OUTER.id(), TINY.id());
    // Exactly what rewind alone leaves: the outer call and the one slow call, with the erased
    // calls' time in the next delta (900 calls of 6 ticks after the outer entry's 1000).
    assert_eq!(
        records,
        vec![
            Rec::Cpu(0, 1000),
            Rec::Enter(o, 0),
            Rec::Enter(t, 1000 + 900 * 6),
            Rec::Exit(t, 500),
            Rec::Exit(o, 1 + 99 * 6 + 1000),
        ]
    );
}

/// Enter and exit records of `TINY`, in order.
fn tiny_calls(records: &[Rec]) -> Vec<&Rec> {
    let t = TINY.id();
    records
        .iter()
        .filter(|r| matches!(r, Rec::Enter(id, _) | Rec::Exit(id, _) if *id == t))
        .collect()
}

#[test]
fn a_call_entered_before_its_function_is_culled_keeps_its_exit() {
    let log = record_log(config(), || {
        let long = CallGuard::enter(&TINY);
        testing::advance(1000);
        // 100 short calls inside it cull the function, which stays culled for 50 more.
        calls(150, |_| 5);
        testing::advance(1000);
        drop(long);
    });
    let records = log.thread_records(log.tids()[0]);
    let t = TINY.id();
    assert_eq!(culls(&records), vec![(CullKind::Culled, t, 100)]);
    let kept = tiny_calls(&records);
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(matches!(kept[0], Rec::Enter(..)));
    assert!(matches!(kept[1], Rec::Exit(..)));
    let cull_at = records
        .iter()
        .position(|r| matches!(r, Rec::Cull(..)))
        .unwrap();
    let exit_at = records
        .iter()
        .position(|r| matches!(r, Rec::Exit(id, _) if *id == t))
        .unwrap();
    assert!(cull_at < exit_at);
}

#[test]
fn a_call_entered_while_culled_records_no_exit_even_once_restored() {
    let log = record_log(config(), || {
        // Cull it (100 erased calls), then make 10 more culled calls.
        calls(110, |_| 5);
        // Entered culled: nothing is recorded for it...
        let skipped = CallGuard::enter(&TINY);
        // ... while a probed call inside it is slow and restores the function.
        testing::probe_culled();
        calls(1, |_| 500);
        testing::advance(1000);
        drop(skipped);
    });
    let records = log.thread_records(log.tids()[0]);
    let t = TINY.id();
    assert_eq!(
        culls(&records),
        vec![(CullKind::Culled, t, 100), (CullKind::Restored, t, 0)]
    );
    // The slow probed call, entry and exit, and no exit of the skipped call.
    let kept = tiny_calls(&records);
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(matches!(kept[0], Rec::Enter(..)));
    assert!(matches!(kept[1], Rec::Exit(_, 500)));
}
