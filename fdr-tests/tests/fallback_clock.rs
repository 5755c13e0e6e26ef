//! Without a usable timestamp counter the recorder falls back to the monotonic clock. This binary
//! forces that path (the clock is chosen once per process).

use std::time::{Duration, Instant};

use fdr_format::ClockSource;
use fdr_runtime::{CallGuard, Config, Mode};
use fdr_tests::{decode, desc, testing, Rec};

desc!(SLEEPY, "fallback::sleepy");

#[test]
fn the_fallback_clock_times_calls_in_nanoseconds() {
    let _turn = testing::exclusive();
    testing::use_fallback_clock();
    let rec = fdr_runtime::start(Config::default().buffer_count(2).mode(Mode::Fill)).unwrap();
    let began = Instant::now();
    {
        let _g = CallGuard::enter(&SLEEPY);
        std::thread::sleep(Duration::from_millis(10));
    }
    let elapsed = began.elapsed().as_nanos() as f64;
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    let log = decode(&bytes[..]).unwrap();
    assert_eq!(log.run.clock, ClockSource::Monotonic);
    assert_eq!(log.header.cycle_frequency, 1_000_000_000);
    assert!(!log.header.nonstop_tsc);
    let recs = log.thread_records(log.tids()[0]);
    let Some(Rec::Exit(_, ticks)) = recs.iter().rev().find(|r| matches!(r, Rec::Exit(..))) else {
        panic!("{recs:?}")
    };
    let ticks = f64::from(*ticks);
    assert!(ticks >= 10_000_000.0, "{ticks} ns for a 10 ms sleep");
    assert!(
        (ticks / elapsed - 1.0).abs() < 0.02,
        "{ticks} ns vs {elapsed} ns"
    );
}
