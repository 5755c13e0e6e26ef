//! The real clock and CPU number, with the counter read by `rdtscp` (timestamp and CPU number in
//! one instruction), the source used where no rseq area is registered.

fn setup() {
    fdr_tests::testing::use_rdtscp_clock();
    assert_eq!(
        fdr_runtime::calibration().source,
        fdr_format::ClockSource::Tsc
    );
}

#[test]
fn a_thread_moved_to_another_cpu_writes_a_new_cpu_record() {
    setup();
    fdr_tests::check_real_migration();
}

#[test]
fn a_recorded_10ms_sleep_decodes_to_10ms() {
    setup();
    fdr_tests::check_10ms_sleep();
}
