//! Ticks to nanoseconds, and nanoseconds to the units a person reads.

/// Converts timestamp ticks to nanoseconds at a fixed tick rate.
///
/// ```
/// use fdr_cli::units::Clock;
/// let c = Clock::new(3_000_000_000);
/// assert_eq!(c.ns(3_000), 1_000);
/// assert_eq!(c.ns(u64::MAX), 6_148_914_691_236_517_205);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    freq: u64,
}

impl Clock {
    /// A clock ticking `freq` times per second (`freq` > 0; the header check ensures it).
    pub fn new(freq: u64) -> Clock {
        Clock { freq: freq.max(1) }
    }

    /// Ticks per second.
    pub fn freq(&self) -> u64 {
        self.freq
    }

    /// Exact conversion, rounding down.
    pub fn ns(&self, ticks: u64) -> u64 {
        (u128::from(ticks) * 1_000_000_000 / u128::from(self.freq)).min(u128::from(u64::MAX)) as u64
    }
}

/// A duration in nanoseconds with three significant digits and a unit: `850 ns`, `1.25 µs`,
/// `12.5 ms`, `3.20 s`.
///
/// ```
/// use fdr_cli::units::human;
/// assert_eq!(human(850), "850 ns");
/// assert_eq!(human(1_250), "1.25 µs");
/// assert_eq!(human(12_500_000), "12.5 ms");
/// assert_eq!(human(3_200_000_000), "3.20 s");
/// assert_eq!(human(200_000_000_000), "200 s");
/// ```
pub fn human(ns: u64) -> String {
    if ns < 1_000 {
        return format!("{ns} ns");
    }
    let (v, unit) = if ns < 1_000_000 {
        (ns as f64 / 1e3, "µs")
    } else if ns < 1_000_000_000 {
        (ns as f64 / 1e6, "ms")
    } else {
        (ns as f64 / 1e9, "s")
    };
    // Three significant digits; rounding can carry into the next decade (999.6 -> 1000).
    let digits = if v < 9.995 {
        2
    } else if v < 99.95 {
        1
    } else {
        0
    };
    format!("{v:.digits$} {unit}")
}
