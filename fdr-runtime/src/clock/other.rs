//! Targets without a usable counter: every source but `monotonic` is reported missing.

pub(super) fn rdtsc_rseq() -> (u64, u32) {
    super::monotonic_now()
}

pub(super) fn rdtscp() -> (u64, u32) {
    super::monotonic_now()
}

pub(super) fn rseq_cpu_offset() -> Option<isize> {
    None
}

pub(super) fn set_rseq_cpu_offset(_: isize) {}

pub(super) fn tsc_usable() -> bool {
    false
}

pub(super) fn rseq_cpu_id() -> *const i32 {
    &super::NOT_FAST
}

pub(super) fn rdtsc() -> u64 {
    super::monotonic_now().0
}
