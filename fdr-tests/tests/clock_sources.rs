//! `Config::clock` and `FDR_OPTIONS clock=`: each source a machine has records with it and names
//! it in the log; one it lacks is an error that names those it has.

use std::time::{Duration, Instant};

use fdr_format::ClockSource;
use fdr_runtime::{testing, CallGuard, Clock, Config, Error, Mode};
use fdr_testkit::desc;
use fdr_testkit::logs::{decode, DecodedLog};
use fdr_testkit::recording::every_call;

desc!(SLEEPY, "clock::sleepy");

fn record_with(clock: Clock) -> Result<DecodedLog, Error> {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(every_call().buffer_count(2).mode(Mode::Fill).clock(clock))?;
    drop(CallGuard::enter(&SLEEPY));
    let mut bytes = Vec::new();
    rec.finish_to(&mut bytes).unwrap();
    Ok(decode(&bytes[..]).unwrap())
}

/// What logs call the counter sources on this CPU: (`rdtsc`, CPU number from rseq; `rdtscp`,
/// CPU number of each read).
fn counter_sources() -> (ClockSource, ClockSource) {
    if cfg!(target_arch = "aarch64") {
        (ClockSource::CntvctRseq, ClockSource::Cntvct)
    } else {
        (ClockSource::TscRseq, ClockSource::Tsc)
    }
}

#[test]
fn each_source_is_named_in_its_log() {
    let auto = fdr_runtime::calibration().source;
    let (rseq, per_read) = counter_sources();
    for (clock, source) in [
        (Clock::Monotonic, ClockSource::Monotonic),
        (Clock::Rdtscp, per_read),
        (Clock::Rdtsc, rseq),
        (Clock::Auto, auto),
    ] {
        match record_with(clock) {
            Ok(log) => {
                assert_eq!(log.run.clock, source, "{clock:?}");
                assert_eq!(log.calls(log.tids()[0]).len(), 2, "{clock:?}");
            }
            // Only a machine without the source may refuse it, and it must say what it has.
            Err(Error::Config { key, message }) if clock != Clock::Monotonic => {
                assert_eq!(key, "clock");
                assert!(message.contains("it offers:"), "{message}");
                println!("{clock:?} is not available here: {message}");
            }
            Err(e) => panic!("{clock:?}: {e}"),
        }
    }
}

#[test]
fn the_monotonic_clock_times_calls_in_nanoseconds() {
    let _turn = testing::exclusive();
    let rec = fdr_runtime::start(
        every_call()
            .buffer_count(2)
            .mode(Mode::Fill)
            .clock(Clock::Monotonic),
    )
    .unwrap();
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
    // Absolute times: the thread may wake on another CPU, and then the exit follows a NewCPUId.
    let Some((entered, left)) = log.last_entry_and_exit(log.tids()[0]) else {
        panic!("{recs:?}")
    };
    // Nanoseconds: at least the sleep, at most the time measured around the call (a unit off by
    // any factor fails one bound or the other; a ratio with a tolerance failed under qemu-user,
    // where the recording around the call took 3% of it).
    let ticks = (left - entered) as f64;
    assert!(ticks >= 10_000_000.0, "{ticks} ns for a 10 ms sleep");
    assert!(ticks <= elapsed, "{ticks} ns within {elapsed} ns");
}

#[test]
#[ignore = "a child process of a_missing_source_is_an_error_naming_the_ones_there_are"]
fn child_asks_for_rdtsc() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    drop(CallGuard::enter(&SLEEPY));
    assert!(fdr_runtime::recorder().is_none());
}

#[test]
fn a_missing_source_is_an_error_naming_the_ones_there_are() {
    // glibc's tunable turns rseq registration off, so the CPU number cannot come from it.
    let out = fdr_testkit::child::command("child_asks_for_rdtsc")
        .env("GLIBC_TUNABLES", "glibc.pthread.rseq=0")
        .env("FDR_OPTIONS", "clock=rdtsc buffer_count=2")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    if fdr_runtime::calibration().source == ClockSource::Monotonic {
        println!("skipped: this machine has no usable timestamp counter at all");
        return;
    }
    assert!(
        stderr.contains("bad option `clock`: `rdtsc` is not available on this machine")
            && stderr.contains("it offers: rdtscp, monotonic")
            && stderr.contains("recording stays off"),
        "{stderr}"
    );
}

#[test]
#[ignore = "a child process of what_a_source_lacks_here_is_said_once_at_start"]
fn child_starts_twice() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    for _ in 0..2 {
        let rec = fdr_runtime::start(Config::default().buffer_count(2)).unwrap();
        drop(CallGuard::enter(&SLEEPY));
        rec.finish_to(&mut std::io::sink()).unwrap();
    }
}

#[test]
fn what_a_source_lacks_here_is_said_once_at_start() {
    // Where the counter read does not carry the CPU number and no rseq area holds it (aarch64
    // Linux without rseq, as under qemu-user; macOS), each record asks the system for it: the
    // first start says so, the second does not repeat it. Elsewhere nothing is said.
    let out = fdr_testkit::child::command("child_starts_twice")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let said = stderr
        .lines()
        .filter(|l| l.starts_with("fdr:") && l.contains("CPU number"))
        .count();
    let lacking =
        cfg!(target_arch = "aarch64") && fdr_runtime::calibration().source == ClockSource::Cntvct;
    assert_eq!(said, usize::from(lacking), "{stderr}");
    if lacking {
        assert!(stderr.contains("a getcpu system call"), "{stderr}");
    }
}

/// A log written before the calibration window (20 ms) has passed, as a program that runs for
/// a few milliseconds writes its final one, reads its times with the rate measured from the
/// start to that moment (it no longer waits for the window): that rate agrees with the one a
/// log written after the window gets, within what reading the clocks allows over 3 ms.
#[test]
fn a_log_written_before_the_calibration_window_has_passed_has_a_rate_as_good() {
    let rate_after = |wait: Duration| {
        let _turn = testing::exclusive();
        let rec = fdr_runtime::start(every_call().buffer_count(2)).unwrap();
        drop(CallGuard::enter(&SLEEPY));
        std::thread::sleep(wait);
        let mut bytes = Vec::new();
        rec.finish_to(&mut bytes).unwrap();
        let log = decode(&bytes[..]).unwrap();
        assert_eq!(log.header.cycle_frequency, log.run.ticks_per_second);
        log.run.ticks_per_second as f64
    };
    if fdr_runtime::calibration().source == ClockSource::Monotonic {
        return; // nanoseconds: nothing to calibrate
    }
    let early = rate_after(Duration::from_millis(3));
    let late = rate_after(Duration::from_millis(25));
    assert!(
        ((early - late) / late).abs() < 1e-3,
        "{early} ticks/s at 3 ms, {late} after the window"
    );
}
