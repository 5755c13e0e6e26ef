//! The x86_64 counter: `rdtsc` with the CPU number from the rseq area, or `rdtscp`.

use std::sync::atomic::{AtomicIsize, Ordering};

/// Distance from the thread pointer to the `cpu_id` field of the thread's rseq area.
static RSEQ_CPU_OFFSET: AtomicIsize = AtomicIsize::new(0);

pub(super) fn set_rseq_cpu_offset(offset: isize) {
    RSEQ_CPU_OFFSET.store(offset, Ordering::Relaxed);
}

/// This thread's rseq `cpu_id` field.
pub(super) fn rseq_cpu_id() -> *const i32 {
    let tp: usize;
    // SAFETY: as in `rdtsc_rseq`.
    unsafe {
        core::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp,
            options(nostack, readonly, preserves_flags, pure));
    }
    tp.wrapping_add_signed(RSEQ_CPU_OFFSET.load(Ordering::Relaxed)) as *const i32
}

/// The counter alone.
#[inline(always)]
pub(super) fn rdtsc() -> u64 {
    // SAFETY: `rdtsc` only reads the counter; it is only reached with the counter selected as the
    // clock, which `calibration` does only after CPUID reported it present (see `tsc_usable`).
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[inline(always)]
pub(super) fn rdtsc_rseq() -> (u64, u32) {
    let tp: usize;
    // SAFETY: on x86_64 Linux the first word of the thread control block, at fs:0, holds the
    // thread pointer itself; reading it has no other effect.
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
        return rdtscp();
    }
    // SAFETY: `rdtsc` only reads the counter; CPUID reported it present (see `tsc_usable`).
    let tsc = unsafe { core::arch::x86_64::_rdtsc() };
    (tsc, cpu as u32)
}

#[inline(always)]
pub(super) fn rdtscp() -> (u64, u32) {
    let mut aux = 0u32;
    // SAFETY: `rdtscp` has no memory effects besides writing `aux`, a valid local. It is only
    // reached when `SOURCE` is a counter source, which `calibration` sets only after CPUID
    // reported the instruction present.
    let tsc = unsafe { core::arch::x86_64::__rdtscp(&mut aux) };
    // Linux puts the CPU number in the low 12 bits of TSC_AUX and the NUMA node above them.
    (tsc, aux & 0xfff)
}

/// The offset of `cpu_id` in this process's rseq areas, if glibc registered them.
pub(super) fn rseq_cpu_offset() -> Option<isize> {
    // SAFETY: dlsym only looks names up; both are NUL-terminated literals.
    let (offset, size) = unsafe {
        (
            libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()),
            libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()),
        )
    };
    if offset.is_null() || size.is_null() {
        return None;
    }
    // SAFETY: glibc defines `const ptrdiff_t __rseq_offset` and `const unsigned int __rseq_size`,
    // set before `main` and never changed.
    let (offset, size) = unsafe { (*offset.cast::<isize>(), *size.cast::<u32>()) };
    // `struct rseq` starts with u32 cpu_id_start, then u32 cpu_id; a size of 0 means glibc did
    // not register (for example GLIBC_TUNABLES=glibc.pthread.rseq=0).
    (size >= 8).then_some(offset + 4)
}

/// Whether the timestamp counter can be used as a clock: `rdtscp` exists, and the counter ticks
/// at a constant rate through frequency changes and sleep states and agrees across CPUs.
///
/// The kernel's verdict comes first: it lists `tsc` among the available clocksources only after
/// its own checks (invariance, and that the CPUs' counters are in sync), and withdraws it when a
/// later check fails. That is the check `minstant` relies on, and stronger than the CPUID bit,
/// which says nothing about sockets agreeing. Where sysfs cannot be read, CPUID's invariant bit
/// or the kernel's constant and nonstop flags decide.
pub(super) fn tsc_usable() -> bool {
    use core::arch::x86_64::__cpuid;
    // The extended leaves are only read after leaf 0x80000000 reported them.
    let max_ext = __cpuid(0x8000_0000).eax;
    let rdtscp = max_ext >= 0x8000_0001 && (__cpuid(0x8000_0001).edx >> 27) & 1 == 1;
    if !rdtscp {
        return false;
    }
    if let Ok(sources) = std::fs::read_to_string(
        "/sys/devices/system/clocksource/clocksource0/available_clocksource",
    ) {
        return sources.split_whitespace().any(|s| s == "tsc");
    }
    let invariant = max_ext >= 0x8000_0007 && (__cpuid(0x8000_0007).edx >> 8) & 1 == 1;
    if invariant {
        return true;
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or("");
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    has("constant_tsc") && has("nonstop_tsc")
}
