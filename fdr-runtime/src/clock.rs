//! Where timestamps and CPU numbers come from.
//!
//! On x86_64 with an invariant timestamp counter, `rdtscp` gives the timestamp and the CPU number
//! in one instruction. It is also the most expensive part of recording (about 18 ns on the AMD
//! machines this was measured on) because it waits for every earlier instruction to finish. Where
//! glibc has registered a restartable-sequences area for the thread (glibc 2.35 and later do so
//! for every thread), the kernel keeps the thread's current CPU number in it, so a plain `rdtsc`
//! (half the cost, and it does not wait) plus one load gives the same pair; that is the default
//! source, and `rdtscp` is the fallback, per read, for a thread without an area.
//!
//! The counter's frequency is not something to look up: virtual machines rarely expose it (this
//! is where XRay gives up), so it is measured once per process against the monotonic clock.
//! Elsewhere, or when the counter cannot be trusted, the monotonic clock in nanoseconds stands in,
//! with the CPU from `sched_getcpu`.
//!
//! With the `testing` feature a test can drive time and CPU by hand, per thread (see
//! [`crate::testing`]).

use std::sync::atomic::{AtomicIsize, AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use fdr_format::ClockSource;

/// Which source [`now`] reads. Set once by [`calibration`], before any recorder exists.
static SOURCE: AtomicU8 = AtomicU8::new(SOURCE_MONOTONIC);
const SOURCE_TSC_RSEQ: u8 = 0;
const SOURCE_TSC: u8 = 1;
const SOURCE_MONOTONIC: u8 = 2;

/// Distance from the thread pointer to the `cpu_id` field of the thread's rseq area.
static RSEQ_CPU_OFFSET: AtomicIsize = AtomicIsize::new(0);

/// How the clock was set up for this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    /// The source [`now`] reads.
    pub source: ClockSource,
    /// Ticks per second.
    pub ticks_per_second: u64,
    /// How long the measurement against the monotonic clock ran (zero if none was needed).
    pub window: Duration,
}

/// The timestamp and the CPU number, read together.
#[inline(always)]
pub(crate) fn now() -> (u64, u32) {
    #[cfg(feature = "testing")]
    if crate::testing::mock_on() {
        return crate::testing::mock_now();
    }
    match SOURCE.load(Ordering::Relaxed) {
        SOURCE_TSC_RSEQ => tsc_rseq_now(),
        SOURCE_TSC => tsc_now(),
        _ => monotonic_now(),
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tsc_rseq_now() -> (u64, u32) {
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
        return tsc_now();
    }
    // SAFETY: `rdtsc` only reads the counter; CPUID reported it present (see `tsc_usable`).
    let tsc = unsafe { core::arch::x86_64::_rdtsc() };
    (tsc, cpu as u32)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn tsc_rseq_now() -> (u64, u32) {
    monotonic_now()
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tsc_now() -> (u64, u32) {
    let mut aux = 0u32;
    // SAFETY: `rdtscp` has no memory effects besides writing `aux`, a valid local. It is only
    // reached when `SOURCE` is a counter source, which `calibration` sets only after CPUID
    // reported the instruction present.
    let tsc = unsafe { core::arch::x86_64::__rdtscp(&mut aux) };
    // Linux puts the CPU number in the low 12 bits of TSC_AUX and the NUMA node above them.
    (tsc, aux & 0xfff)
}

/// The offset of `cpu_id` in this process's rseq areas, if glibc registered them.
#[cfg(target_arch = "x86_64")]
fn rseq_cpu_offset() -> Option<isize> {
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

#[cfg(not(target_arch = "x86_64"))]
fn rseq_cpu_offset() -> Option<isize> {
    None
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn tsc_now() -> (u64, u32) {
    monotonic_now()
}

#[cold]
fn monotonic_now() -> (u64, u32) {
    (monotonic_ns(), current_cpu())
}

/// Nanoseconds of `CLOCK_MONOTONIC`.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is always supported on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu takes no arguments and only returns a number (or -1).
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu < 0 {
        0
    } else {
        cpu as u32
    }
}

/// Wall-clock time as (seconds, nanoseconds) since the Unix epoch.
pub(crate) fn wall_time() -> (i64, u32) {
    #[cfg(feature = "testing")]
    if crate::testing::mock_on() {
        return (0, 0);
    }
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(_) => (0, 0),
    }
}

/// Whether the timestamp counter can be used as a clock: the instruction exists, and the counter
/// ticks at a constant rate through frequency changes and sleep states. CPUID's invariant-TSC bit
/// says so on bare metal; hypervisors often hide that bit, so the kernel's own judgement (it only
/// picks the TSC as clocksource when it trusts it, and reports constant and nonstop flags) counts
/// too.
#[cfg(target_arch = "x86_64")]
fn tsc_usable() -> bool {
    use core::arch::x86_64::__cpuid;
    // The extended leaves are only read after leaf 0x80000000 reported them.
    let max_ext = __cpuid(0x8000_0000).eax;
    let rdtscp = max_ext >= 0x8000_0001 && (__cpuid(0x8000_0001).edx >> 27) & 1 == 1;
    let invariant = max_ext >= 0x8000_0007 && (__cpuid(0x8000_0007).edx >> 8) & 1 == 1;
    if !rdtscp {
        return false;
    }
    if invariant {
        return true;
    }
    let clocksource =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    if clocksource.trim() == "tsc" {
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

#[cfg(not(target_arch = "x86_64"))]
fn tsc_usable() -> bool {
    false
}

/// Measures the counter's frequency against the monotonic clock over `window`.
///
/// Each end of the window is a monotonic read bracketed by two counter reads; the pair with the
/// tightest bracket of a few tries is kept, so a preemption between reads cannot skew the result.
fn measure_tsc_hz(window: Duration) -> u64 {
    fn sample() -> (u64, u64) {
        let mut best = (u64::MAX, 0, 0);
        for _ in 0..16 {
            let (a, _) = tsc_now();
            let ns = monotonic_ns();
            let (b, _) = tsc_now();
            if b.wrapping_sub(a) < best.0 {
                best = (b.wrapping_sub(a), a + (b.wrapping_sub(a)) / 2, ns);
            }
        }
        (best.1, best.2)
    }
    let (t0, n0) = sample();
    let deadline = Instant::now() + window;
    while Instant::now() < deadline {
        std::thread::sleep(window / 4);
    }
    let (t1, n1) = sample();
    let ticks = t1.wrapping_sub(t0) as u128;
    let ns = n1.saturating_sub(n0).max(1) as u128;
    (ticks * 1_000_000_000 / ns) as u64
}

/// Set by tests to take the fallback path on hardware that has a usable counter.
#[cfg(feature = "testing")]
pub(crate) static FORCE_MONOTONIC: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Set by tests to read the counter with `rdtscp` even where rseq is registered.
#[cfg(feature = "testing")]
pub(crate) static FORCE_RDTSCP: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

fn rdtscp_forced() -> bool {
    #[cfg(feature = "testing")]
    if FORCE_RDTSCP.load(Ordering::Relaxed) {
        return true;
    }
    false
}

fn fallback_forced() -> bool {
    #[cfg(feature = "testing")]
    if FORCE_MONOTONIC.load(Ordering::Relaxed) {
        return true;
    }
    false
}

/// Sets the clock up once per process and returns how. The first call measures the counter's
/// frequency (about 20 ms); later calls return the same result at once.
pub fn calibration() -> Calibration {
    #[cfg(feature = "testing")]
    if crate::testing::mock_on() {
        return Calibration {
            source: ClockSource::Injected,
            ticks_per_second: crate::testing::mock_frequency(),
            window: Duration::ZERO,
        };
    }
    static CAL: OnceLock<Calibration> = OnceLock::new();
    *CAL.get_or_init(|| {
        if !fallback_forced() && tsc_usable() {
            let window = Duration::from_millis(20);
            let hz = measure_tsc_hz(window);
            if hz > 1_000_000 {
                let rseq = if rdtscp_forced() {
                    None
                } else {
                    rseq_cpu_offset()
                };
                let source = match rseq {
                    Some(offset) => {
                        RSEQ_CPU_OFFSET.store(offset, Ordering::Relaxed);
                        SOURCE.store(SOURCE_TSC_RSEQ, Ordering::Relaxed);
                        ClockSource::TscRseq
                    }
                    None => {
                        SOURCE.store(SOURCE_TSC, Ordering::Relaxed);
                        ClockSource::Tsc
                    }
                };
                return Calibration {
                    source,
                    ticks_per_second: hz,
                    window,
                };
            }
        }
        SOURCE.store(SOURCE_MONOTONIC, Ordering::Relaxed);
        Calibration {
            source: ClockSource::Monotonic,
            ticks_per_second: 1_000_000_000,
            window: Duration::ZERO,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "reads the hardware clock")]
    fn calibrated_clock_agrees_with_the_monotonic_clock() {
        // Tests that drive the injected clock switch the whole process to it.
        #[cfg(feature = "testing")]
        let _turn = crate::testing::exclusive();
        let cal = calibration();
        if cal.source == ClockSource::Injected {
            return;
        }
        // Both counter reads agree with each other on the CPU and the time.
        if cal.source == ClockSource::TscRseq {
            let (a, _) = tsc_rseq_now();
            let (b, _) = tsc_now();
            assert!(
                b >= a && b - a < cal.ticks_per_second / 1000,
                "rdtsc {a}, rdtscp {b}"
            );
        }
        let (t0, _) = now();
        let n0 = monotonic_ns();
        std::thread::sleep(Duration::from_millis(30));
        let (t1, _) = now();
        let n1 = monotonic_ns();
        let measured = (t1 - t0) as f64 / cal.ticks_per_second as f64;
        let expected = (n1 - n0) as f64 / 1e9;
        assert!(
            (measured / expected - 1.0).abs() < 0.01,
            "clock says {measured}s, monotonic clock says {expected}s"
        );
    }
}
