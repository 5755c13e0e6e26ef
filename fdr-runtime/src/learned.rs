//! Learned slow-call limits (`trigger = "auto"`): a function's limit is `k` times the running
//! p99 of its own calls, so nobody has to know beforehand what is slow for it.
//!
//! Each function with a learned limit keeps a log-linear histogram of its call durations, in
//! ticks, shared by every thread (atomic counters: a call adds one to its bucket and to the
//! count). For [`AUTO_WARMUP`] calls the limit is not set and nothing fires; then the limit is
//! `k × p99`, and never less than [`AUTO_FLOOR`], recomputed from the histogram every
//! [`AUTO_RECOMPUTE`] calls. A call is compared with the limit before it is added, so the slow
//! call is judged by the calls before it. The p99 is the upper edge of the bucket it falls in:
//! at most an eighth above the true value (eight buckets per power of two), never below it, so a
//! limit errs towards firing less. The p99 is over every call since the recording started
//! (unlike a window, a long run of slow calls raises it only slowly: it is what is normal for
//! the function, not what happened last).
//!
//! An async function's learned limit applies, like a written one, to its tasks, from creation to
//! completion or drop.
//!
//! The histogram takes 2.4 KiB per function with a learned limit (and nothing for the others);
//! the counting adds two relaxed atomic additions to a call of such a function, which already
//! takes the trigger's path.

#[cfg(feature = "record")]
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Calls a function makes before its learned limit is set: until then it cannot fire.
pub const AUTO_WARMUP: u64 = 1000;

/// The least a learned limit can be: a function whose calls take a few microseconds does not
/// fire on a call that a scheduler's preemption made 40 µs long.
pub const AUTO_FLOOR: Duration = Duration::from_micros(50);

/// The default multiple of the p99, `trigger = "auto"` (`auto:k=5` sets another).
pub const AUTO_K: f64 = 3.0;

/// The limit is recomputed every this many calls.
pub const AUTO_RECOMPUTE: u64 = 64;

// The histogram is the profile's (`fdr_format::profile`): eight buckets per power of two.
#[cfg(feature = "record")]
use fdr_format::profile::{bucket, upper, BUCKETS};

/// One function's learned limit.
#[cfg(feature = "record")]
pub(crate) struct Learned {
    /// The multiple, in tenths.
    k_tenths: u64,
    /// [`AUTO_FLOOR`] in ticks.
    floor: u64,
    count: AtomicU64,
    buckets: Box<[AtomicU64]>,
    /// The p99 the current limit comes from, ticks (0: still warming up).
    p99: AtomicU64,
}

#[cfg(feature = "record")]
impl Learned {
    /// A learned limit of `k_tenths / 10` times the p99, at least `floor` ticks.
    pub(crate) fn new(k_tenths: u32, floor: u64) -> Learned {
        Learned {
            k_tenths: u64::from(k_tenths),
            floor,
            count: AtomicU64::new(0),
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            p99: AtomicU64::new(0),
        }
    }

    /// Adds a call of `d` ticks. Returns the new limit when this call set it (at the end of the
    /// warm-up, and every [`AUTO_RECOMPUTE`] calls after).
    pub(crate) fn observe(&self, d: u64) -> Option<u64> {
        self.buckets[bucket(d)].fetch_add(1, Relaxed);
        let n = self.count.fetch_add(1, Relaxed) + 1;
        if n < AUTO_WARMUP || (n != AUTO_WARMUP && n % AUTO_RECOMPUTE != 0) {
            return None;
        }
        let p99 = self.quantile(n, 99, 100);
        self.p99.store(p99, Relaxed);
        let limit = (u128::from(p99) * u128::from(self.k_tenths) / 10).min(u128::from(u64::MAX));
        Some((limit as u64).max(self.floor))
    }

    /// The p99 the current limit was derived from, ticks (0: warming up).
    pub(crate) fn p99(&self) -> u64 {
        self.p99.load(Relaxed)
    }

    /// The `num/den` quantile of the first `n` calls (nearest rank), as its bucket's upper edge.
    fn quantile(&self, n: u64, num: u64, den: u64) -> u64 {
        let rank = (n * num).div_ceil(den).max(1);
        let mut seen = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Relaxed);
            if seen >= rank {
                return upper(i);
            }
        }
        // Calls counted before their bucket was seen by this thread: the largest bucket seen.
        self.buckets
            .iter()
            .rposition(|b| b.load(Relaxed) != 0)
            .map_or(0, upper)
    }
}

#[cfg(all(test, feature = "record"))]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_duration_in_order_and_their_edges_meet() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(7), 7);
        assert_eq!(bucket(8), 8);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        for i in 0..BUCKETS - 1 {
            // The next bucket starts right after this one ends.
            assert_eq!(bucket(upper(i)), i, "{i}");
            assert_eq!(bucket(upper(i) + 1), i + 1, "{i}");
        }
        assert_eq!(upper(BUCKETS - 1), u64::MAX);
        // Width: an eighth of the lower edge.
        let i = bucket(10_000);
        assert_eq!(upper(i) - upper(i - 1), 1024);
    }

    #[test]
    fn the_p99_is_within_an_eighth_above_the_true_one() {
        let l = Learned::new(30, 0);
        // 1..=12_800 ticks, each once: the nearest-rank p99 is 12_672. (Small enough for Miri.)
        let n = 200 * AUTO_RECOMPUTE;
        for d in 1..=n {
            l.observe(d);
        }
        let p = l.quantile(n, 99, 100);
        assert!((12_672..=12_672 + 12_672 / 8).contains(&p), "{p}");
        assert_eq!(
            l.p99(),
            p,
            "n is a multiple of 64: recomputed at the last call"
        );
    }

    #[test]
    fn the_limit_is_set_at_the_end_of_the_warm_up_then_every_64_calls() {
        let l = Learned::new(30, 5);
        let mut set = Vec::new();
        for n in 1..=AUTO_WARMUP + 130 {
            if let Some(limit) = l.observe(10_000) {
                set.push((n, limit));
            }
        }
        // 10_000 ticks fall in the bucket [9216, 10239]: 3 x 10239.
        assert_eq!(set, [(1000, 30_717), (1024, 30_717), (1088, 30_717)]);
        assert_eq!(l.p99(), 10_239);
    }

    #[test]
    fn the_floor_holds_for_fast_functions() {
        let l = Learned::new(30, 50_000);
        let limits: Vec<u64> = (0..AUTO_WARMUP).filter_map(|_| l.observe(100)).collect();
        assert_eq!(limits, [50_000]);
    }
}
