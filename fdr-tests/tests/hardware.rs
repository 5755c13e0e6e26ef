//! The real clock and CPU number, with the default counter source (rdtsc, CPU from rseq, where
//! glibc registered rseq).

#[test]
fn the_default_clock_source_is_the_timestamp_counter() {
    let _turn = fdr_tests::testing::exclusive();
    let cal = fdr_runtime::calibration();
    assert!(
        matches!(
            cal.source,
            fdr_format::ClockSource::TscRseq | fdr_format::ClockSource::Tsc
        ),
        "{cal:?}"
    );
}

#[test]
#[cfg_attr(
    fdr_single_cpu,
    ignore = "needs two CPUs this process may run on; this machine had one when the tests were built"
)]
fn a_thread_moved_to_another_cpu_writes_a_new_cpu_record() {
    fdr_tests::check_real_migration(fdr_runtime::Clock::Auto);
}

#[test]
fn a_recorded_10ms_sleep_decodes_to_10ms() {
    fdr_tests::check_10ms_sleep(fdr_runtime::Clock::Auto);
}

#[test]
#[cfg_attr(
    fdr_single_cpu,
    ignore = "needs two CPUs this process may run on; this machine had one when the tests were built"
)]
fn rdtscp_sees_a_migration_too() {
    fdr_tests::check_real_migration(fdr_runtime::Clock::Rdtscp);
}

#[test]
fn a_10ms_sleep_read_with_rdtscp_decodes_to_10ms() {
    fdr_tests::check_10ms_sleep(fdr_runtime::Clock::Rdtscp);
}
