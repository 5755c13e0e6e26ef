//! The aarch64 counter: the generic timer's virtual count, `CNTVCT_EL0`, which Linux and macOS
//! let programs read. One counter ticks for the whole system at a constant rate (the
//! architecture requires it), so, unlike x86's, it needs no check that the CPUs agree. Its CPU
//! number comes from the thread's rseq area (Linux with glibc 2.35 or later) or is asked of the
//! system at each read.
//!
//! The read is not ordered after earlier instructions (no `isb`), as `rdtsc` is not on x86_64:
//! a record's time may come a few instructions early, for half the cost. Calibration samples
//! are ordered ([`counter_ordered`]).

use std::sync::atomic::{AtomicIsize, Ordering};

use fdr_format::ClockSource;

use crate::platform;

/// What the counter source with the CPU number from rseq is called in logs.
pub(super) const RSEQ_SOURCE: ClockSource = ClockSource::CntvctRseq;

/// What the counter source with the CPU number of each read is called in logs.
pub(super) fn per_read_source() -> ClockSource {
    ClockSource::Cntvct
}

/// No aarch64 instruction reads the counter and the CPU number together.
pub(super) const CPU_IN_THE_READ: bool = false;

/// Why there is no counter source, for messages (never, on the systems that record).
pub(super) const NO_COUNTER: &str = "the system does not let programs read CNTVCT_EL0";

/// The counter's frequency as stated (`CNTFRQ_EL0` where the system lets programs read it, as
/// firmware or the hypervisor set it up; else the system's word): not always true, hence the
/// measurement it is checked against.
pub(super) fn stated_hz() -> Option<u64> {
    platform::stated_counter_rate(cntfrq)
}

/// `CNTFRQ_EL0`.
fn cntfrq() -> u64 {
    let hz: u64;
    // SAFETY: reading CNTFRQ_EL0 has no effect; `platform::stated_counter_rate` calls this only
    // where the system lets programs read it (Linux, which allows EL0 reads of the virtual
    // counter, and with them of its frequency).
    unsafe {
        core::arch::asm!("mrs {}, cntfrq_el0", out(reg) hz,
            options(nomem, nostack, preserves_flags));
    }
    hz
}

/// Distance from the thread pointer to the `cpu_id` field of the thread's rseq area.
static RSEQ_CPU_OFFSET: AtomicIsize = AtomicIsize::new(0);

pub(super) fn set_rseq_cpu_offset(offset: isize) {
    RSEQ_CPU_OFFSET.store(offset, Ordering::Relaxed);
}

/// The thread pointer, from which glibc's `__rseq_offset` counts.
#[inline(always)]
fn thread_pointer() -> usize {
    let tp: usize;
    // SAFETY: TPIDR_EL0 holds the thread pointer; reading it has no other effect, and it does
    // not change during a thread's life (hence `pure`).
    unsafe {
        core::arch::asm!("mrs {}, tpidr_el0", out(reg) tp,
            options(nomem, nostack, preserves_flags, pure));
    }
    tp
}

/// This thread's rseq `cpu_id` field.
pub(super) fn rseq_cpu_id() -> *const i32 {
    thread_pointer().wrapping_add_signed(RSEQ_CPU_OFFSET.load(Ordering::Relaxed)) as *const i32
}

/// The counter alone.
#[inline(always)]
pub(super) fn counter() -> u64 {
    let t: u64;
    // SAFETY: reading CNTVCT_EL0 has no effect; it is only reached with the counter selected as
    // the clock, on a system that lets programs read it (Linux, macOS).
    unsafe {
        core::arch::asm!("mrs {}, cntvct_el0", out(reg) t,
            options(nomem, nostack, preserves_flags));
    }
    t
}

/// The counter read after every earlier instruction, for calibration samples.
pub(super) fn counter_ordered() -> u64 {
    let t: u64;
    // SAFETY: `isb` only waits for earlier instructions; the read is as in `counter`.
    unsafe {
        core::arch::asm!("isb", "mrs {}, cntvct_el0", out(reg) t,
            options(nomem, nostack, preserves_flags));
    }
    t
}

#[inline(always)]
pub(super) fn counter_rseq() -> (u64, u32) {
    // SAFETY: this source is only selected after glibc reported a registered rseq area
    // (`__rseq_size` > 0) at `__rseq_offset` from the thread pointer; every thread glibc starts
    // has one for its whole life. The kernel rewrites `cpu_id` when the thread migrates, so the
    // read is volatile.
    let cpu = unsafe { std::ptr::read_volatile(rseq_cpu_id()) };
    if cpu < 0 {
        // This thread's registration failed (the field says "uninitialized").
        return counter_cpu();
    }
    (counter(), cpu as u32)
}

/// The counter and the CPU number the system gives now.
#[inline(always)]
pub(super) fn counter_cpu() -> (u64, u32) {
    (counter(), platform::cpu_number())
}

/// Whether the counter can be used as a clock: wherever fdr records on aarch64 (Linux and
/// macOS both let programs read it); elsewhere recording is refused before the clock is asked.
pub(super) fn counter_usable() -> bool {
    platform::UNSUPPORTED.is_none()
}
