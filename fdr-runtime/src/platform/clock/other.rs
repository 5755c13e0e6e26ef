//! CPUs without a counter fdr reads (neither x86_64 nor aarch64): every source but `monotonic`
//! is reported missing, and the counter functions are never reached.

use fdr_format::ClockSource;

pub(super) const RSEQ_SOURCE: ClockSource = ClockSource::TscRseq;

pub(super) fn per_read_source() -> ClockSource {
    ClockSource::Tsc
}

pub(super) const CPU_IN_THE_READ: bool = true;

pub(super) const NO_COUNTER: &str = "fdr reads no counter on this CPU";

pub(super) fn stated_hz() -> Option<u64> {
    None
}

pub(super) fn counter_rseq() -> (u64, u32) {
    super::monotonic_now()
}

pub(super) fn counter_cpu() -> (u64, u32) {
    super::monotonic_now()
}

pub(super) fn set_rseq_cpu_offset(_: isize) {}

pub(super) fn counter_usable() -> bool {
    false
}

pub(super) fn rseq_cpu_id() -> *const i32 {
    &super::NOT_FAST
}

pub(super) fn counter() -> u64 {
    super::monotonic_now().0
}

pub(super) fn counter_ordered() -> u64 {
    super::monotonic_now().0
}
