//! Where timestamps and CPU numbers come from, chosen once per recorder.
//!
//! | source | reads | cost on x86_64 (AMD EPYC KVM) | CPU number |
//! |---|---|---|---|
//! | `rdtsc` (default where it exists) | the counter + one load | ~9.5 ns | the thread's rseq area, which the kernel keeps current |
//! | `rdtscp` | x86_64 Linux: `rdtscp`; elsewhere the counter + a question to the system | ~18 ns, waits for earlier instructions | TSC_AUX, in the same instruction; elsewhere `platform::cpu_number` |
//! | `monotonic` | `clock_gettime` | ~20 ns | `platform::cpu_number` |
//! | injected | a test's values | - | a test's values |
//!
//! The counter is the CPU's: `rdtsc` on x86_64 (`clock/x86_64.rs`), the generic timer's virtual
//! count `CNTVCT_EL0` on aarch64 (`clock/aarch64.rs`); other CPUs have the monotonic clock only
//! (`clock/other.rs`). The option names `rdtsc` and `rdtscp` say where the CPU number comes from
//! (rseq, or each read) on every CPU. macOS has no rseq, so there `rdtscp` is the counter's
//! only source; so it is on aarch64 Linux where glibc registered no rseq area, where each read
//! then makes a `getcpu` system call (said once, at start: see [`note_once`]).
//!
//! The counter's frequency is not something to look up: virtual machines rarely expose it (this
//! is where XRay gives up), so it is measured once per process against the monotonic clock.
//! Where a rate is stated (aarch64's `CNTFRQ_EL0` on Linux, the system's timebase on macOS), the
//! measurement checks it: some hypervisors misreport it, and then the measurement wins.
//!
//! Why not `minstant`, which the design card names: its TSC check (in 0.1.7: does the kernel list
//! `tsc` among its available clocksources, which it only does after checking that the CPUs'
//! counters agree) is the one we use too, below. But its calibration runs in a static constructor
//! at every start of every program that links it, busy-spinning through at least two 10 ms
//! windows, recording or not; and it hands out nanoseconds from one `rdtsc`, while a record needs
//! raw ticks and the CPU number from one read. So fdr reads the counter itself, and measures the
//! frequency only when a recorder starts.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use fdr_format::ClockSource;

use crate::{platform, seams::injected, Clock, Error};

#[cfg(target_arch = "x86_64")]
#[path = "x86_64.rs"]
mod arch;
#[cfg(target_arch = "aarch64")]
#[path = "aarch64.rs"]
mod arch;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[path = "other.rs"]
mod arch;

/// Which source [`now`] reads; set when a recorder starts.
static SOURCE: AtomicU8 = AtomicU8::new(MONOTONIC);
const RDTSC_RSEQ: u8 = 0;
const RDTSCP: u8 = 1;
const MONOTONIC: u8 = 2;
const INJECTED: u8 = 3;

/// How the clock was set up for a recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    /// The source timestamps come from.
    pub source: ClockSource,
    /// Ticks per second.
    pub ticks_per_second: u64,
    /// How long the measurement against the monotonic clock ran (zero if none was needed).
    pub window: Duration,
}

/// The timestamp and the CPU number, read together.
#[inline(always)]
pub(crate) fn now() -> (u64, u32) {
    match SOURCE.load(Ordering::Relaxed) {
        RDTSC_RSEQ => arch::counter_rseq(),
        RDTSCP => arch::counter_cpu(),
        INJECTED => injected::now(),
        _ => monotonic_now(),
    }
}

/// The timestamp alone (profiles need no CPU): the counter read without its CPU number for both
/// counter sources, the same ticks as [`now`]'s.
#[inline(always)]
pub(crate) fn ticks() -> u64 {
    match SOURCE.load(Ordering::Relaxed) {
        RDTSC_RSEQ | RDTSCP => arch::counter(),
        INJECTED => injected::now().0,
        _ => monotonic_ns(),
    }
}

/// What a thread reads as its CPU number on the hot path when the clock is not `rdtsc` with rseq:
/// this one means "not a counter source" (see [`fast`]).
pub(crate) static NOT_FAST: i32 = i32::MIN;
/// ... and this one "`rdtscp`", as an rseq area that is not registered (-1 or -2) does.
static RDTSCP_MARK: i32 = -1;

/// Where this thread reads its CPU number for [`fast`]: its rseq `cpu_id` when the source is
/// `rdtsc` with rseq, else one of the marks above. Taken when the thread joins a recording, on
/// the thread.
pub(crate) fn fast_cpu_id() -> *const i32 {
    match SOURCE.load(Ordering::Relaxed) {
        RDTSC_RSEQ => arch::rseq_cpu_id(),
        RDTSCP => &RDTSCP_MARK,
        _ => &NOT_FAST,
    }
}

/// The hot path's clock, with no call and no load of the source: the CPU from `cpu_id` (see
/// [`fast_cpu_id`]) and the counter; for a negative CPU (the `rdtscp` source, or an rseq area the
/// kernel did not register) the counter with the CPU number of each read (`rdtscp` on x86_64
/// Linux); `None` for the monotonic and injected sources, for which the caller takes [`now`].
///
/// # Safety
/// `cpu_id` is what [`fast_cpu_id`] returned on this thread.
#[inline(always)]
pub(crate) unsafe fn fast(cpu_id: *const i32) -> Option<(u64, u32)> {
    // SAFETY: `cpu_id` is a mark or this thread's rseq field, which lives as long as the thread
    // and which the kernel rewrites on migration (so the read is volatile).
    let cpu = unsafe { std::ptr::read_volatile(cpu_id) };
    if cpu >= 0 {
        return Some((arch::counter(), cpu as u32));
    }
    if cpu != NOT_FAST {
        return Some(arch::counter_cpu());
    }
    None
}

#[cold]
fn monotonic_now() -> (u64, u32) {
    (monotonic_ns(), platform::cpu_number())
}

/// Nanoseconds of `CLOCK_MONOTONIC`.
pub(crate) fn monotonic_ns() -> u64 {
    platform::monotonic_ns()
}

/// What this machine can give, for error messages and [`Clock::Auto`].
struct Available {
    /// The counter ticks at a constant rate and agrees across CPUs, with its frequency.
    tsc_hz: Option<u64>,
    /// The offset of the rseq area's `cpu_id` from the thread pointer.
    rseq: Option<isize>,
}

fn available() -> &'static Available {
    static AVAILABLE: OnceLock<Available> = OnceLock::new();
    AVAILABLE.get_or_init(|| {
        let tsc_hz = if arch::counter_usable() {
            let hz = settle(measure_tsc_hz(QUICK_WINDOW), arch::stated_hz());
            (hz > 1_000_000).then_some(hz)
        } else {
            None
        };
        Available {
            tsc_hz,
            rseq: tsc_hz.and(platform::rseq_cpu_offset()),
        }
    })
}

/// The frequency to use: the one the CPU states where the measurement confirms it (to 1%: a
/// misreport is off by far more, and the stated figure is exact), else the measured one.
fn settle(measured: u64, stated: Option<u64>) -> u64 {
    match stated {
        Some(hz) if measured.abs_diff(hz) <= hz / 100 => hz,
        _ => measured,
    }
}

/// How long a recording's calibration runs: it is finished off the recording path (see
/// [`refine`]), from a pair read at start and one read this long after.
pub(crate) const CALIBRATION_WINDOW: Duration = Duration::from_millis(20);
/// The first measurement, which a recorder starts with (its threshold and trigger limits in
/// ticks come from it): within about one part in 10,000 of the final one here (each end is
/// read to tens of nanoseconds), which a threshold or a limit does not notice, while the thread
/// that starts the recording spins for it (and the others wait for the start). A program that
/// runs for a few milliseconds pays it whole: it was 2 ms of sleeps.
const QUICK_WINDOW: Duration = Duration::from_micros(250);

fn names(a: &Available) -> String {
    let mut v = Vec::new();
    if a.rseq.is_some() {
        v.push("rdtsc");
    }
    if a.tsc_hz.is_some() {
        v.push("rdtscp");
    }
    v.push("monotonic");
    v.join(", ")
}

const MONOTONIC_CALIBRATION: Calibration = Calibration {
    source: ClockSource::Monotonic,
    ticks_per_second: 1_000_000_000,
    window: Duration::ZERO,
};

/// What `choice` gives on this machine: the calibration, the source's code and the rseq
/// offset it reads the CPU number at; or the error naming what the machine has instead.
fn plan(choice: Clock) -> Result<(Calibration, u8, Option<isize>), Error> {
    if choice == Clock::Monotonic {
        return Ok((MONOTONIC_CALIBRATION, MONOTONIC, None));
    }
    let a = available();
    let missing = |name: &str, why: &str| Error::Config {
        key: "clock".into(),
        message: format!(
            "`{name}` is not available on this machine ({why}); it offers: {}",
            names(a)
        ),
    };
    let (source, code, offset) = match (choice, a.tsc_hz, a.rseq) {
        (Clock::Rdtsc | Clock::Auto, Some(_), Some(offset)) => {
            (arch::RSEQ_SOURCE, RDTSC_RSEQ, Some(offset))
        }
        (Clock::Rdtsc, None, _) => return Err(missing("rdtsc", arch::NO_COUNTER)),
        (Clock::Rdtsc, Some(_), None) => return Err(missing("rdtsc", platform::NO_RSEQ)),
        (Clock::Rdtscp | Clock::Auto, Some(_), _) => (arch::per_read_source(), RDTSCP, None),
        (Clock::Rdtscp, None, _) => return Err(missing("rdtscp", arch::NO_COUNTER)),
        _ => return Ok((MONOTONIC_CALIBRATION, MONOTONIC, None)),
    };
    let cal = Calibration {
        source,
        ticks_per_second: a.tsc_hz.unwrap_or(1_000_000_000),
        window: QUICK_WINDOW,
    };
    Ok((cal, code, offset))
}

/// Sets the clock up for a recorder that asked for `choice`. Tests that turned on injected
/// values get those, whatever the choice.
pub(crate) fn select(choice: Clock) -> Result<Calibration, Error> {
    if injected::on() {
        SOURCE.store(INJECTED, Ordering::Relaxed);
        return Ok(Calibration {
            source: ClockSource::Injected,
            ticks_per_second: injected::frequency(),
            window: Duration::ZERO,
        });
    }
    let (cal, code, offset) = plan(choice)?;
    if let Some(offset) = offset {
        arch::set_rseq_cpu_offset(offset);
    }
    SOURCE.store(code, Ordering::Relaxed);
    Ok(cal)
}

/// What a recording on `cal` lacks here that its user would otherwise find out by surprise,
/// for the recorder to say once per process at start: the CPU number asked of the system at
/// each record, where no rseq area holds it and the counter read does not carry it (aarch64
/// Linux without rseq, macOS). `None` where nothing is missing, and after the first answer.
pub(crate) fn note_once(cal: &Calibration) -> Option<String> {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if cal.source != arch::per_read_source() || arch::CPU_IN_THE_READ {
        return None;
    }
    (!SAID.swap(true, Ordering::Relaxed)).then(platform::cpu_per_read_note)
}

/// How [`Clock::Auto`] would set the clock up here: the source and the measured frequency. The
/// first call measures the counter's frequency (about 0.25 ms, spinning; a recording refines it over 20 ms
/// while it runs); later calls answer at once.
///
/// ```
/// let cal = fdr_runtime::calibration();
/// assert!(cal.ticks_per_second > 0);
/// ```
pub fn calibration() -> Calibration {
    plan(Clock::Auto).map_or(MONOTONIC_CALIBRATION, |(cal, _, _)| cal)
}

/// A (counter, monotonic ns) pair read together, the counter bracketing the monotonic read
/// (the tightest of a few tries), for a calibration finished later by [`refine`].
pub(crate) fn sample() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..16 {
        let a = arch::counter_ordered();
        let ns = monotonic_ns();
        let b = arch::counter_ordered();
        if b.wrapping_sub(a) < best.0 {
            best = (b.wrapping_sub(a), a + (b.wrapping_sub(a)) / 2, ns);
        }
    }
    (best.1, best.2)
}

/// The frequency measured from `start` (a [`sample`]) to a sample read now (or the one the CPU
/// states, if that agrees), with that sample; `None` until [`CALIBRATION_WINDOW`] has passed
/// since `start`.
pub(crate) fn refine(start: (u64, u64)) -> Option<(u64, (u64, u64))> {
    let now = sample();
    let ns = now.1.saturating_sub(start.1);
    if ns < CALIBRATION_WINDOW.as_nanos() as u64 {
        return None;
    }
    let hz = u128::from(now.0.wrapping_sub(start.0)) * 1_000_000_000 / u128::from(ns);
    let hz = hz.min(u128::from(u64::MAX)) as u64;
    Some((settle(hz, arch::stated_hz()), now))
}

/// The frequency measured from `start` (a [`sample`]) to now, for a log written before
/// [`CALIBRATION_WINDOW`] has passed; `None` when less than the quick window has (the quick
/// measurement is then the better one). Its error puts at most about twice a sample's error
/// (tens of nanoseconds) on any time of such a log, which spans no longer than the measurement.
pub(crate) fn rate_so_far(start: (u64, u64)) -> Option<u64> {
    let now = sample();
    let ns = now.1.saturating_sub(start.1);
    if ns < QUICK_WINDOW.as_nanos() as u64 {
        return None;
    }
    let hz = u128::from(now.0.wrapping_sub(start.0)) * 1_000_000_000 / u128::from(ns);
    Some(settle(
        hz.min(u128::from(u64::MAX)) as u64,
        arch::stated_hz(),
    ))
}

/// Measures the counter's frequency against the monotonic clock over `window`, spinning: a
/// sleep would wake up later than asked by more than the window (the timer slack, 50 us, and
/// the scheduler's wake-up).
///
/// Each end of the window is a monotonic read bracketed by two counter reads; the pair with the
/// tightest bracket of a few tries is kept, so a preemption between reads cannot skew the result,
/// and one between the ends only lengthens the window.
fn measure_tsc_hz(window: Duration) -> u64 {
    let (t0, n0) = sample();
    let deadline = std::time::Instant::now() + window;
    while std::time::Instant::now() < deadline {
        std::hint::spin_loop();
    }
    let (t1, n1) = sample();
    let ticks = t1.wrapping_sub(t0) as u128;
    let ns = n1.saturating_sub(n0).max(1) as u128;
    (ticks * 1_000_000_000 / ns) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stated_frequency_the_measurement_confirms_is_taken_as_exact() {
        assert_eq!(settle(24_000_900, Some(24_000_000)), 24_000_000);
        assert_eq!(settle(23_900_000, Some(24_000_000)), 24_000_000);
        assert_eq!(settle(62_500_000, Some(62_500_000)), 62_500_000);
    }

    #[test]
    fn a_misreported_frequency_loses_to_the_measurement() {
        // A hypervisor that states the host's 1 GHz for a guest counter at 62.5 MHz, and one
        // that is off by 2%.
        assert_eq!(settle(62_500_000, Some(1_000_000_000)), 62_500_000);
        assert_eq!(settle(24_480_000, Some(24_000_000)), 24_480_000);
        assert_eq!(settle(2_400_000_000, None), 2_400_000_000);
    }
}
