//! The physical floor: what the timestamp reads alone cost, with nothing recorded.
//!
//! A recorder that timestamps entry and exit cannot be cheaper than two clock reads per call,
//! so every row is also printed as a ratio to [`rdtscp_pair`].

/// One `rdtscp` read: the timestamp counter (the CPU number it also returns is discarded).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn rdtscp() -> u64 {
    let mut aux = 0u32;
    // SAFETY: `rdtscp` only reads the timestamp counter and IA32_TSC_AUX; it touches no memory
    // besides `aux`, a valid local. Every x86_64 CPU this crate is benchmarked on has it (the
    // quick table checks `/proc/cpuinfo` before trusting the figures).
    unsafe { core::arch::x86_64::__rdtscp(&mut aux) }
}

/// One `rdtscp` read: the timestamp counter and the CPU number (the low 12 bits of
/// IA32_TSC_AUX, as Linux sets it).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn rdtscp_cpu() -> (u64, u32) {
    let mut aux = 0u32;
    // SAFETY: as in `rdtscp`.
    let tsc = unsafe { core::arch::x86_64::__rdtscp(&mut aux) };
    (tsc, aux & 0xfff)
}

/// Stand-in for the counter and CPU number on other targets.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn rdtscp_cpu() -> (u64, u32) {
    (rdtscp(), 0)
}

/// One `rdtsc` read (no CPU number, weaker ordering).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: `rdtsc` reads the timestamp counter and has no memory effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Stand-in for the counter on other targets, so the crate still builds there.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn rdtscp() -> u64 {
    use std::sync::OnceLock;
    static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

/// Stand-in for the counter on other targets.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn rdtsc() -> u64 {
    rdtscp()
}

/// `n` iterations of two bare `rdtscp` reads: the floor every recording row is compared with.
///
/// ```
/// assert_ne!(fdr_benches::floor::rdtscp_pair(10), 0);
/// ```
#[inline(never)]
pub fn rdtscp_pair(n: u64) -> u64 {
    let mut acc = 0u64;
    for _ in 0..n {
        acc = acc.wrapping_add(rdtscp());
        acc = acc.wrapping_add(rdtscp());
    }
    acc
}

/// `n` iterations of two bare `rdtsc` reads: what the clock would cost without the CPU number.
///
/// ```
/// assert_ne!(fdr_benches::floor::rdtsc_pair(10), 0);
/// ```
#[inline(never)]
pub fn rdtsc_pair(n: u64) -> u64 {
    let mut acc = 0u64;
    for _ in 0..n {
        acc = acc.wrapping_add(rdtsc());
        acc = acc.wrapping_add(rdtsc());
    }
    acc
}
