//! The x86_64 counter: `rdtsc` with the CPU number from the rseq area, or with the CPU number of
//! each read (`rdtscp` on Linux, whose TSC_AUX holds it; elsewhere asked of the system).

use std::sync::atomic::{AtomicIsize, Ordering};

use fdr_format::ClockSource;

use crate::platform;

/// What the counter source with the CPU number from rseq is called in logs.
pub(super) const RSEQ_SOURCE: ClockSource = ClockSource::TscRseq;

/// What the counter source with the CPU number of each read is called in logs.
pub(super) fn per_read_source() -> ClockSource {
    if platform::TSC_AUX_IS_CPU {
        ClockSource::Tsc
    } else {
        ClockSource::TscOsCpu
    }
}

/// Whether [`counter_cpu`] gets the CPU number from the counter's own instruction.
pub(super) const CPU_IN_THE_READ: bool = platform::TSC_AUX_IS_CPU;

/// Why there is no counter source, for messages.
pub(super) const NO_COUNTER: &str = "no invariant timestamp counter";

/// The counter states no frequency of its own: it is measured.
pub(super) fn stated_hz() -> Option<u64> {
    None
}

/// Distance from the thread pointer to the `cpu_id` field of the thread's rseq area.
static RSEQ_CPU_OFFSET: AtomicIsize = AtomicIsize::new(0);

pub(super) fn set_rseq_cpu_offset(offset: isize) {
    RSEQ_CPU_OFFSET.store(offset, Ordering::Relaxed);
}

/// This thread's rseq `cpu_id` field.
pub(super) fn rseq_cpu_id() -> *const i32 {
    let tp: usize;
    // SAFETY: as in `counter_rseq`.
    unsafe {
        core::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp,
            options(nostack, readonly, preserves_flags, pure));
    }
    tp.wrapping_add_signed(RSEQ_CPU_OFFSET.load(Ordering::Relaxed)) as *const i32
}

/// The counter alone.
#[inline(always)]
pub(super) fn counter() -> u64 {
    // SAFETY: `rdtsc` only reads the counter; it is only reached with the counter selected as the
    // clock, which `calibration` does only after CPUID reported it present (see
    // `counter_usable`).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The counter read after every earlier instruction, for calibration samples.
pub(super) fn counter_ordered() -> u64 {
    let mut aux = 0u32;
    // SAFETY: as in `rdtscp`.
    unsafe { core::arch::x86_64::__rdtscp(&mut aux) }
}

#[inline(always)]
pub(super) fn counter_rseq() -> (u64, u32) {
    let tp: usize;
    // SAFETY: the rseq source is only chosen on Linux, where the first word of the thread
    // control block, at fs:0, holds the thread pointer itself; reading it has no other effect.
    unsafe {
        core::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp,
            options(nostack, readonly, preserves_flags, pure));
    }
    let at = tp.wrapping_add_signed(RSEQ_CPU_OFFSET.load(Ordering::Relaxed)) as *const i32;
    // SAFETY: this source is only selected after glibc reported a registered rseq area
    // (`__rseq_size` > 0) at `__rseq_offset` from the thread pointer; every thread glibc starts
    // has one for its whole life. The kernel rewrites `cpu_id` when the thread migrates, so the
    // read is volatile.
    let cpu = unsafe { std::ptr::read_volatile(at) };
    if cpu < 0 {
        // This thread's registration failed (the field says "uninitialized").
        return counter_cpu();
    }
    // SAFETY: `rdtsc` only reads the counter; CPUID reported it present (see `counter_usable`).
    let tsc = unsafe { core::arch::x86_64::_rdtsc() };
    (tsc, cpu as u32)
}

/// The counter and the CPU number of this read.
#[inline(always)]
pub(super) fn counter_cpu() -> (u64, u32) {
    if platform::TSC_AUX_IS_CPU {
        rdtscp()
    } else {
        (counter(), platform::cpu_number())
    }
}

#[inline(always)]
fn rdtscp() -> (u64, u32) {
    let mut aux = 0u32;
    // SAFETY: `rdtscp` has no memory effects besides writing `aux`, a valid local. It is only
    // reached when `SOURCE` is a counter source, which `calibration` sets only after CPUID
    // reported the instruction present.
    let tsc = unsafe { core::arch::x86_64::__rdtscp(&mut aux) };
    // Linux puts the CPU number in the low 12 bits of TSC_AUX and the NUMA node above them.
    (tsc, aux & 0xfff)
}

/// Whether the timestamp counter can be used as a clock: `rdtscp` exists, and the counter ticks
/// at a constant rate through frequency changes and sleep states and agrees across CPUs.
///
/// The kernel's verdict comes first, where it gives one (Linux lists `tsc` among its available
/// clocksources only after checking invariance and that the CPUs' counters are in sync: the
/// check `minstant` relies on, and stronger than the CPUID bit, which says nothing about sockets
/// agreeing). Without it, CPUID's invariant bit or the kernel's constant and nonstop flags
/// decide.
pub(super) fn counter_usable() -> bool {
    use core::arch::x86_64::__cpuid;
    // The extended leaves are only read after leaf 0x80000000 reported them.
    let max_ext = __cpuid(0x8000_0000).eax;
    let rdtscp = max_ext >= 0x8000_0001 && (__cpuid(0x8000_0001).edx >> 27) & 1 == 1;
    if !rdtscp {
        return false;
    }
    if let Some(verdict) = platform::kernel_trusts_tsc() {
        return verdict;
    }
    let invariant = max_ext >= 0x8000_0007 && (__cpuid(0x8000_0007).edx >> 8) & 1 == 1;
    invariant || platform::cpu_flags_say_tsc_invariant()
}
