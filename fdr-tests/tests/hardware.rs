//! The real clock and CPU number, with the default counter source (the CPU's counter: `rdtsc`
//! on x86_64, `CNTVCT_EL0` on aarch64; the CPU number from rseq where glibc registered it).

use std::time::{Duration, Instant};

use fdr_format::ClockSource;
use fdr_runtime::{CallGuard, Clock, Mode};
use fdr_tests::{decode, desc, every_call, testing, Rec};

#[test]
fn the_default_clock_source_is_the_cpus_counter() {
    let _turn = testing::exclusive();
    let cal = fdr_runtime::calibration();
    if cfg!(target_arch = "aarch64") {
        assert!(
            matches!(cal.source, ClockSource::CntvctRseq | ClockSource::Cntvct),
            "{cal:?}"
        );
    } else {
        assert!(
            matches!(cal.source, ClockSource::TscRseq | ClockSource::Tsc),
            "{cal:?}"
        );
    }
}

desc!(LONG, "hw::long");

#[test]
fn a_call_longer_than_32_bits_of_counter_ticks_writes_a_wrap_record() {
    // The real counter, on one CPU (a migration would write its NewCPUId with the full counter
    // instead): 2^32 ticks pass in 1.8 s at 2.4 GHz, in 69 s at qemu-user's 62.5 MHz.
    let _turn = testing::exclusive();
    let hz = fdr_runtime::calibration().ticks_per_second;
    let span = Duration::from_secs_f64((1u64 << 32) as f64 / hz as f64 * 1.01 + 0.05);
    let rec = fdr_runtime::start(
        every_call()
            .buffer_count(4)
            .mode(Mode::Fill)
            .clock(Clock::Auto),
    )
    .unwrap();
    let (log, slept) = std::thread::spawn(move || {
        assert!(fdr_tests::pin(0));
        let began = Instant::now();
        {
            let _g = CallGuard::enter(&LONG);
            std::thread::sleep(span);
        }
        let slept = began.elapsed();
        let mut bytes = Vec::new();
        rec.finish_to(&mut bytes).unwrap();
        (decode(&bytes[..]).unwrap(), slept)
    })
    .join()
    .unwrap();
    let recs = log.thread_records(log.tids()[0]);
    let l = LONG.id();
    let [Rec::Cpu(0, t0), Rec::Enter(a, 0), Rec::Wrap(t1), Rec::Exit(b, 0)] = recs[..] else {
        panic!("{recs:?}");
    };
    assert_eq!([a, b], [l, l]);
    assert!(t1 - t0 >= 1 << 32, "{recs:?}");
    // The wrap record carries the counter at the exit: the call's whole length.
    let decoded = (t1 - t0) as f64 / log.header.cycle_frequency as f64;
    assert!(
        decoded >= span.as_secs_f64() * 0.99 && decoded <= slept.as_secs_f64() * 1.01,
        "{decoded} s decoded, {span:?} asked, {slept:?} slept"
    );
}

#[test]
#[cfg_attr(
    fdr_single_cpu,
    ignore = "needs two CPUs this process may run on; this machine had one when the tests were built"
)]
fn a_thread_moved_to_another_cpu_writes_a_new_cpu_record() {
    fdr_tests::check_real_migration(Clock::Auto);
}

#[test]
fn a_recorded_10ms_sleep_decodes_to_10ms() {
    fdr_tests::check_10ms_sleep(Clock::Auto);
}

#[test]
#[cfg_attr(
    fdr_single_cpu,
    ignore = "needs two CPUs this process may run on; this machine had one when the tests were built"
)]
fn rdtscp_sees_a_migration_too() {
    fdr_tests::check_real_migration(Clock::Rdtscp);
}

#[test]
fn a_10ms_sleep_read_with_rdtscp_decodes_to_10ms() {
    fdr_tests::check_10ms_sleep(Clock::Rdtscp);
}
