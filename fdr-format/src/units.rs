//! Ticks and nanoseconds, converted in one place: every time a log holds is in ticks of its
//! clock (`ticks_per_second`, the header's cycle frequency), every time a person or a message
//! reads is in nanoseconds, and every limit given in time is kept in ticks.
//!
//! The products are taken in `u128`, so no conversion overflows on the way: a result past
//! `u64::MAX` saturates there instead of wrapping. A rate of 0 (which no valid header has)
//! converts as 1 tick per second to nanoseconds, and to 0 ticks.

use std::time::Duration;

/// Nanoseconds in a second: the rate of a clock that counts nanoseconds (the monotonic clock's
/// ticks per second).
pub const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// `ticks` at `ticks_per_second` in nanoseconds, rounded down: how every time read from a log
/// is converted.
///
/// ```
/// use fdr_format::units::ticks_to_ns;
/// assert_eq!(ticks_to_ns(3_000, 3_000_000_000), 1_000);
/// assert_eq!(ticks_to_ns(2, 3_000_000_000), 0); // rounded down
/// assert_eq!(ticks_to_ns(u64::MAX, 1), u64::MAX); // saturated
/// ```
#[inline]
pub fn ticks_to_ns(ticks: u64, ticks_per_second: u64) -> u64 {
    saturate(u128::from(ticks) * u128::from(NANOS_PER_SECOND) / u128::from(ticks_per_second.max(1)))
}

/// `ticks` at `ticks_per_second` in nanoseconds, rounded up: a limit kept as the whole ticks it
/// spans (rounded down by [`ns_to_ticks`]) reads back as the nanoseconds it was given.
///
/// ```
/// use fdr_format::units::{ns_to_ticks, ticks_to_ns_rounded_up};
/// let hz = 2_994_374_123;
/// assert_eq!(ticks_to_ns_rounded_up(ns_to_ticks(5_000_000, hz), hz), 5_000_000);
/// assert_eq!(ticks_to_ns_rounded_up(1, 3_000_000_000), 1);
/// ```
#[inline]
pub fn ticks_to_ns_rounded_up(ticks: u64, ticks_per_second: u64) -> u64 {
    saturate(
        (u128::from(ticks) * u128::from(NANOS_PER_SECOND))
            .div_ceil(u128::from(ticks_per_second.max(1))),
    )
}

/// `ns` nanoseconds in ticks at `ticks_per_second`, rounded down: the whole ticks a time
/// spans.
///
/// ```
/// use fdr_format::units::ns_to_ticks;
/// assert_eq!(ns_to_ticks(1_000, 3_000_000_000), 3_000);
/// assert_eq!(ns_to_ticks(u64::MAX, u64::MAX), u64::MAX); // saturated
/// ```
#[inline]
pub fn ns_to_ticks(ns: u64, ticks_per_second: u64) -> u64 {
    nanos_to_ticks(u128::from(ns), ticks_per_second)
}

/// A [`Duration`] in ticks at `ticks_per_second`, rounded down (its nanoseconds may pass
/// `u64::MAX`: they are not cut before the conversion).
///
/// ```
/// use std::time::Duration;
/// use fdr_format::units::duration_to_ticks;
/// assert_eq!(duration_to_ticks(Duration::from_millis(5), 3_000_000_000), 15_000_000);
/// assert_eq!(duration_to_ticks(Duration::MAX, 1), 18_446_744_073_709_551_615);
/// ```
#[inline]
pub fn duration_to_ticks(d: Duration, ticks_per_second: u64) -> u64 {
    nanos_to_ticks(d.as_nanos(), ticks_per_second)
}

#[inline]
fn nanos_to_ticks(ns: u128, ticks_per_second: u64) -> u64 {
    // A `Duration`'s nanoseconds reach 2^94 and a rate 2^64: past 2^128 the ticks are far
    // past `u64::MAX` anyway.
    ns.checked_mul(u128::from(ticks_per_second))
        .map_or(u64::MAX, |p| saturate(p / u128::from(NANOS_PER_SECOND)))
}

#[inline]
fn saturate(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// A size in bytes as `fdr` states sizes: whole mebibytes or kibibytes when it is one, else
/// bytes (`16 KiB`, `8 MiB`, `1000 bytes`), so that a buffer size reads as it was given.
///
/// ```
/// use fdr_format::units::bytes_text;
/// assert_eq!(bytes_text(16 * 1024), "16 KiB");
/// assert_eq!(bytes_text(8 << 20), "8 MiB");
/// assert_eq!(bytes_text(1000), "1000 bytes");
/// assert_eq!(bytes_text(1536 << 10), "1536 KiB");
/// ```
pub fn bytes_text(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_and_saturate_as_documented() {
        for hz in [1, 999_999_999, NANOS_PER_SECOND, 2_994_374_123, u64::MAX] {
            for ns in [0, 1, 999, 5_000_000, 1 << 40, u64::MAX / 3] {
                let t = ns_to_ticks(ns, hz);
                // Rounded down both ways: never more than was given.
                assert!(ticks_to_ns(t, hz) <= ns, "{ns} ns at {hz}");
                // A limit read back rounded up is what was given, when a tick is shorter than
                // a nanosecond and nothing saturated.
                if hz >= NANOS_PER_SECOND && t < u64::MAX {
                    assert_eq!(ticks_to_ns_rounded_up(t, hz), ns, "{ns} ns at {hz}");
                }
            }
        }
        assert_eq!(ticks_to_ns(7, 0), 7_000_000_000);
        assert_eq!(ns_to_ticks(7, 0), 0);
        assert_eq!(ticks_to_ns_rounded_up(u64::MAX, 1), u64::MAX);
        assert_eq!(
            duration_to_ticks(Duration::from_secs(u64::MAX), 2),
            u64::MAX
        );
        assert_eq!(duration_to_ticks(Duration::MAX, u64::MAX), u64::MAX);
    }
}
