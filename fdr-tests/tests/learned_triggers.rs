//! Learned limits (`trigger = "auto"`), driven exactly by the injected clock (1 GHz: a tick is
//! a nanosecond): a call past k × the function's running p99 fires once, a steady distribution
//! never fires, the warm-up holds, and the log says which limit was in force and the p99 it came
//! from.

use std::path::Path;
use std::time::Duration;

use fdr_format::{Reason, ReasonInfo};
use fdr_runtime::{testing, CallGuard};
use fdr_testkit::desc;
use fdr_testkit::logs::{logs_in, read_log, scratch, wait_for_logs};
use fdr_testkit::recording::{every_call, wait_for_cpu_wait_mark};

/// A call that lasts `ns` on the injected clock.
#[fdr::instrument_fdr(trigger = "auto")]
fn learned(ns: u64) {
    testing::advance(ns);
}

desc!(BY_PATTERN, "learned::by_pattern");

/// A call of `BY_PATTERN`, whose learned limit comes from the configuration, lasting `ns`.
fn by_pattern(ns: u64) {
    let _g = CallGuard::enter(&BY_PATTERN);
    testing::advance(ns);
}

/// Lets the warm-up's time pass (the program idle): its calls alone do not end it.
fn past_the_warm_up_time() {
    testing::advance(fdr_runtime::AUTO_WARMUP_TIME.as_nanos() as u64);
}

/// Starts a recorder on the injected clock writing its snapshots in `dir`, runs `calls`, waits
/// for `expect` snapshots (a moment, for none), and answers the reasons of those written.
fn run(dir: &Path, config: fdr::Config, expect: usize, calls: impl FnOnce()) -> Vec<ReasonInfo> {
    testing::use_mock_clock(1_000_000_000);
    testing::set_time(1_000_000);
    let rec = fdr_runtime::start(config.out(dir.join("l.fdr"))).unwrap();
    calls();
    // Snapshots are written by the background writer.
    match expect {
        0 => std::thread::sleep(Duration::from_millis(300)),
        n => drop(wait_for_logs(dir, n)),
    }
    rec.finish_to(&mut std::io::sink()).unwrap();
    testing::use_real_clock();
    logs_in(dir)
        .iter()
        .map(|f| read_log(f).reason.expect("a snapshot says why"))
        .collect()
}

/// A call that runs `ns` in all, `waiting` of it (after the watchdog marked it) runnable but
/// without a CPU.
#[fdr::instrument_fdr(trigger = "auto")]
fn learned_descheduled(ns: u64, waiting: u64) {
    let marks = testing::cpu_wait_marks();
    testing::advance(ns - waiting);
    if waiting > 0 {
        wait_for_cpu_wait_mark(marks);
        testing::add_cpu_wait(waiting);
        testing::advance(waiting);
    }
}

#[test]
fn a_call_past_its_learned_limit_only_by_waiting_for_a_cpu_does_not_fire() {
    let _turn = testing::exclusive();
    let dir = scratch("learned-descheduled");
    let reasons = run(&dir, every_call(), 1, || {
        for _ in 0..1000 {
            learned_descheduled(10_000, 0);
        }
        past_the_warm_up_time();
        // The call that ends the warm-up: the limit is learned at its end.
        learned_descheduled(10_000, 0);
        // 100 µs against the 50 µs floor, 95 of them waiting: 5 µs of its own. Not its doing.
        learned_descheduled(100_000, 95_000);
        // 100 µs, 10 of them waiting: 90 µs of its own, past the limit. Fires, and says so.
        learned_descheduled(100_000, 10_000);
    });
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    let r = &reasons[0];
    assert_eq!((r.reason, r.duration_ticks), (Reason::SlowCall, 100_000));
    assert_eq!(r.cpu_wait_ns, Some(10_000), "{r:?}");
    assert_eq!(
        r.suppressed, 1,
        "the descheduled call is counted as suppressed"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_call_of_100_us_after_a_thousand_of_10_us_fires_once_and_says_its_limit() {
    let _turn = testing::exclusive();
    let dir = scratch("learned-once");
    let reasons = run(&dir, every_call(), 1, || {
        for _ in 0..1000 {
            learned(10_000);
        }
        past_the_warm_up_time();
        learned(10_000);
        learned(100_000);
        for _ in 0..200 {
            learned(10_000);
        }
    });
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    let r = &reasons[0];
    assert_eq!(r.reason, Reason::SlowCall);
    assert_eq!(r.duration_ticks, 100_000);
    // 10 µs falls in the bucket [9216, 10239] ns: the p99 is its upper edge; 3 x that is under
    // the floor, which is the limit.
    let floor = fdr_runtime::AUTO_FLOOR.as_nanos() as u64;
    assert_eq!((r.p99_ticks, r.limit_ticks), (10_239, floor));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_steady_distribution_never_fires() {
    let _turn = testing::exclusive();
    let dir = scratch("learned-steady");
    let reasons = run(&dir, every_call(), 0, || {
        // 8 to 12 µs, evenly, from a fixed sequence.
        let mut x: u64 = 7;
        for i in 0..20_000 {
            if i == 1_000 {
                past_the_warm_up_time();
            }
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            learned(8_000 + (x >> 33) % 4_001);
        }
    });
    assert_eq!(reasons, []);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn nothing_fires_during_the_warm_up_and_the_first_slow_call_after_it_does() {
    let _turn = testing::exclusive();
    let dir = scratch("learned-warmup");
    let reasons = run(&dir, every_call(), 1, || {
        for _ in 0..fdr_runtime::AUTO_WARMUP - 1 {
            learned(10_000);
        }
        // The last call of the warm-up's calls: judged before any limit exists.
        learned(1_000_000);
        learned(10_000);
        // Past the calls but within the time: a service's first moments (pools filling, caches
        // cold), 100 times its usual, fire nothing.
        learned(1_000_000);
        for _ in 0..3_000 {
            learned(10_000);
        }
        learned(1_000_000);
        // Past the time: the next call sets the limit, and the first slow call after it fires.
        past_the_warm_up_time();
        learned(10_000);
        learned(1_000_000);
    });
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert_eq!(reasons[0].duration_ticks, 1_000_000);
    // The call that fired is the last one, past the warm-up's time (the first call began at
    // 1 ms, and the cooldown would have hidden it behind an earlier one).
    let warmup = fdr_runtime::AUTO_WARMUP_TIME.as_nanos() as u64;
    assert!(reasons[0].start_tsc > 1_000_000 + warmup, "{reasons:?}");
    // The p99 of the calls so far (three of them long) is 10 µs; 3 x that is under the floor.
    let floor = fdr_runtime::AUTO_FLOOR.as_nanos() as u64;
    assert_eq!(
        (reasons[0].p99_ticks, reasons[0].limit_ticks),
        (10_239, floor)
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_learned_limit_from_the_configuration_takes_its_k() {
    let _turn = testing::exclusive();
    let dir = scratch("learned-pattern");
    let config = every_call().trigger_auto("learned::by_*", 5.0);
    let reasons = run(&dir, config, 1, || {
        for _ in 0..1000 {
            by_pattern(10_000);
        }
        past_the_warm_up_time();
        by_pattern(10_000);
        // Under 5 x 10239 = 51195: no trigger.
        by_pattern(51_000);
        by_pattern(60_000);
    });
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert_eq!(reasons[0].function, BY_PATTERN.id());
    assert_eq!(
        (reasons[0].duration_ticks, reasons[0].limit_ticks),
        (60_000, 51_195)
    );
    std::fs::remove_dir_all(dir).ok();
}

/// An async function whose task lasts `ns`: its learned limit is over its tasks.
#[fdr::instrument_fdr(trigger = "auto")]
async fn learned_task(ns: u64) {
    testing::advance(ns);
}

/// Polls `f` once; it completes then.
fn poll_once(f: impl std::future::Future<Output = ()>) {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: std::sync::Arc<Self>) {}
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Noop));
    let mut f = std::pin::pin!(f);
    let ready = f.as_mut().poll(&mut std::task::Context::from_waker(&waker));
    assert!(ready.is_ready());
}

#[test]
fn an_async_function_learns_from_its_tasks() {
    let _turn = testing::exclusive();
    let dir = scratch("learned-task");
    let reasons = run(&dir, every_call(), 1, || {
        for _ in 0..1000 {
            poll_once(learned_task(20_000));
        }
        past_the_warm_up_time();
        poll_once(learned_task(20_000));
        // A task made, then left waiting 70 µs before its poll of 20 µs: 90 µs in all.
        let slow = learned_task(20_000);
        testing::advance(70_000);
        poll_once(slow);
    });
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    // 20 µs falls in [18432, 20479]: the limit is 3 x 20479.
    assert_eq!(
        (
            reasons[0].duration_ticks,
            reasons[0].p99_ticks,
            reasons[0].limit_ticks
        ),
        (90_000, 20_479, 61_437)
    );
    std::fs::remove_dir_all(dir).ok();
}

/// A call on the real clock: short, or asleep for `sleep_ms`.
#[fdr::instrument_fdr(trigger = "auto")]
#[inline(never)]
fn on_the_counter(sleep_ms: u64) -> u64 {
    if sleep_ms > 0 {
        std::thread::sleep(Duration::from_millis(sleep_ms));
    }
    std::hint::black_box(sleep_ms)
}

#[test]
fn on_the_counter_clock_a_limit_is_learned_from_erased_and_kept_calls_and_fires() {
    // The hot path times a trigger function's calls on the counter clock itself (the injected
    // clock takes another path): its erased calls count, the limit is computed out of line, and
    // a call past it fires.
    let _turn = testing::exclusive();
    let dir = scratch("learned-counter");
    let config = fdr::Config::default().threshold(Duration::from_micros(5));
    let rec = fdr_runtime::start(config.out(dir.join("l.fdr"))).unwrap();
    let started = std::time::Instant::now();
    for _ in 0..2_000 {
        on_the_counter(0);
    }
    std::thread::sleep(fdr_runtime::AUTO_WARMUP_TIME.saturating_sub(started.elapsed()));
    // The first calls past the warm-up's time set the limit.
    for _ in 0..2_000 {
        on_the_counter(0);
    }
    on_the_counter(30);
    // A call an interrupt stretched past the limit may fire first; the slow one then comes
    // after the cooldown.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let slow = loop {
        let found = logs_in(&dir).iter().find_map(|f| {
            let log = read_log(f);
            let r = log.reason.clone()?;
            let ms = r.duration_ticks as f64 / log.header.cycle_frequency as f64 * 1e3;
            (ms >= 30.0).then_some((r, log))
        });
        if found.is_some() || std::time::Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    rec.finish_to(&mut std::io::sink()).unwrap();
    let (r, log) = slow.expect("the 30 ms call fired");
    let id = log
        .functions
        .iter()
        .find(|f| f.name.ends_with("::on_the_counter"))
        .expect("in the table")
        .id;
    assert_eq!((r.reason, r.function), (Reason::SlowCall, id));
    // Learned from the short calls: a p99 well under the slow call, a limit under it too.
    assert!(
        r.p99_ticks != 0 && r.limit_ticks < r.duration_ticks,
        "{r:?}"
    );
    std::fs::remove_dir_all(dir).ok();
}
