//! Learned slow-call limits (`trigger = "auto"`): a function's limit is `k` times the running
//! p99 of its own calls, so nobody has to know beforehand what is slow for it.
//!
//! Each function with a learned limit keeps a log-linear histogram of its call durations, in
//! ticks. During the warm-up the limit is not set and nothing fires; then the limit is
//! `k × p99`, and never less than [`AUTO_FLOOR`], recomputed from the histogram as calls come.
//!
//! The warm-up lasts [`AUTO_WARMUP`] calls and [`AUTO_WARMUP_TIME`] from the function's first
//! call, whichever ends last. Calls alone were not enough: a service's first thousand requests
//! come in its first few milliseconds, while its pools fill, its caches are cold and its
//! allocator grows, and a limit learned from them fired on the first hiccup after (16 ms into a
//! run, a 92 µs call against a 50 µs limit). Time lets the program reach its normal before its
//! normal is judged. The histogram keeps the warm-up's calls: they raise the p99 a little, which
//! errs towards firing less, as the bucket edges do.
//! A call is compared with the limit before it is added, so the slow call is judged by the calls
//! before it. The p99 is the upper edge of the bucket it falls in: at most an eighth above the
//! true value (eight buckets per power of two), never below it, so a limit errs towards firing
//! less. The p99 is over every call since the recording started (unlike a window, a long run of
//! slow calls raises it only slowly: it is what is normal for the function, not what happened
//! last).
//!
//! The histogram is cut in shards, one per CPU (up to [`MAX_SHARDS`], CPUs beyond sharing), each
//! on cache lines of its own: a call adds one to its bucket and to the count of the shard of the
//! CPU it ran on, so threads on different cores never write the same line (one histogram shared
//! by every thread moved its lines from core to core on every call of a service's handler; see
//! [`Learned::observe`] for why a plain load and store do). The
//! shards are merged when the limit is recomputed, which gives exactly the histogram of all the
//! calls together. Until [`AUTO_WARMUP_TIME`] has passed since the first call, a call only
//! compares its end with that time; then each call sums the shards' counts until there are
//! [`AUTO_WARMUP`]; after the warm-up, a shard recomputes every period × shards of its own
//! calls, so the limit moves about every period in all and a merge costs each call the same
//! whatever the number of shards. The period is [`AUTO_RECOMPUTE`] calls at first, then a
//! sixteenth of the calls so far, at most [`AUTO_RECOMPUTE_MAX`]: a long run's merges cost its
//! calls next to nothing.
//!
//! An async function's learned limit applies, like a written one, to its tasks, from creation to
//! completion or drop.
//!
//! The histogram takes 4 KiB per shard per function with a learned limit (and nothing for the
//! others); the counting adds two increments, to lines of the CPU's own, to a call of such a
//! function, which already takes the trigger's path.

#[cfg(feature = "record")]
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Calls a function makes before its learned limit is set: until then it cannot fire.
pub const AUTO_WARMUP: u64 = 1000;

/// How long after its first call a function's learned limit is set, at the earliest (and after
/// [`AUTO_WARMUP`] calls): a program's first moments are not its normal.
pub const AUTO_WARMUP_TIME: Duration = Duration::from_secs(1);

/// The least a learned limit can be: a function whose calls take a few microseconds does not
/// fire on a call that a scheduler's preemption made 40 µs long.
pub const AUTO_FLOOR: Duration = Duration::from_micros(50);

/// The default multiple of the p99, `trigger = "auto"` (`auto:k=5` sets another).
pub const AUTO_K: f64 = 3.0;

/// The limit is recomputed every this many calls at first; then every sixteenth of the calls
/// counted so far (a histogram of `n` calls moves little with its next `n / 16`), at most every
/// [`AUTO_RECOMPUTE_MAX`].
pub const AUTO_RECOMPUTE: u64 = 64;

/// The longest a learned limit goes between recomputes, in calls: a merge of the histogram costs
/// a few hundred loads, which every 64 calls was a fifth of a short function's trigger path.
pub const AUTO_RECOMPUTE_MAX: u64 = 4096;

// The histogram is the profile's (`fdr_format::profile`): eight buckets per power of two.
#[cfg(all(test, feature = "record"))]
use fdr_format::profile::MAX_OCTAVE;
#[cfg(feature = "record")]
use fdr_format::profile::{bucket_unclamped, upper, BUCKETS, UNCLAMPED_BUCKETS};

/// At most this many shards per learned limit.
pub const MAX_SHARDS: usize = 64;

/// One function's learned limit.
#[cfg(feature = "record")]
pub(crate) struct Learned {
    /// The multiple, in tenths.
    k_tenths: u64,
    /// [`AUTO_FLOOR`] in ticks.
    floor: u64,
    shards: Box<[Shard]>,
    /// The shards less one (a power of two less one): a CPU's shard is its number masked.
    mask: usize,
    /// The p99 the current limit comes from, ticks (0: still warming up).
    p99: AtomicU64,
    /// The warm-up is over.
    warm: AtomicBool,
    /// When the first call counted ended, ticks (0: none yet).
    first: AtomicU64,
    /// [`AUTO_WARMUP_TIME`] in ticks.
    warmup_ticks: u64,
    /// A shard recomputes when its count is a multiple of this plus one: its share of the
    /// period between recomputes (see [`AUTO_RECOMPUTE`]) times the shards, minus one.
    every: AtomicU64,
}

/// Counters of a shard's histogram: room for every duration without a clamp
/// ([`bucket_unclamped`]), and the count, in 4 KiB: a shard's place is a shift, not a multiply.
/// The counters from `BUCKETS - 1` up are the last bucket's (calls of `2^MAX_OCTAVE` ticks on).
#[cfg(feature = "record")]
const COUNTERS: usize = 511;

#[cfg(feature = "record")]
const _: () = assert!(COUNTERS >= UNCLAMPED_BUCKETS && COUNTERS > BUCKETS);

/// One CPU's part of a histogram, on lines of its own.
#[cfg(feature = "record")]
#[repr(align(128))]
struct Shard {
    count: AtomicU64,
    buckets: [AtomicU64; COUNTERS],
}

#[cfg(feature = "record")]
impl Learned {
    /// A learned limit of `k_tenths / 10` times the p99, at least `floor` ticks, counted in
    /// `shards` shards (at least 1, at most [`MAX_SHARDS`], rounded up to a power of two), set
    /// once `warmup_ticks` have passed since the first call (and [`AUTO_WARMUP`] calls).
    pub(crate) fn new(k_tenths: u32, floor: u64, shards: usize, warmup_ticks: u64) -> Learned {
        // A power of two: a CPU's shard and the recompute period are masks, not divisions.
        let shards = shards.clamp(1, MAX_SHARDS).next_power_of_two();
        Learned {
            k_tenths: u64::from(k_tenths),
            floor,
            shards: (0..shards)
                .map(|_| Shard {
                    count: AtomicU64::new(0),
                    buckets: [const { AtomicU64::new(0) }; COUNTERS],
                })
                .collect(),
            mask: shards - 1,
            p99: AtomicU64::new(0),
            warm: AtomicBool::new(false),
            first: AtomicU64::new(0),
            warmup_ticks,
            every: AtomicU64::new(AUTO_RECOMPUTE * shards as u64 - 1),
        }
    }

    /// Adds a call of `d` ticks that ended at `now` on `cpu`. Returns the new limit when this
    /// call set it (at the end of the warm-up, and every [`AUTO_RECOMPUTE`] calls of its shard
    /// per shard after).
    #[inline(always)]
    pub(crate) fn observe(&self, d: u64, cpu: u32, now: u64) -> Option<u64> {
        if self.count_call(d, cpu, now, !self.warm.load(Relaxed)) {
            self.recompute(now)
        } else {
            None
        }
    }

    /// [`Learned::observe`]'s count, without the recompute: true when [`Learned::recompute`]
    /// is due. `warming`: the limit is not set yet (the trigger path knows it from the limit it
    /// judged the call by; a wrong guess only moves the recompute, which checks).
    #[inline(always)]
    pub(crate) fn count_call(&self, d: u64, cpu: u32, now: u64, warming: bool) -> bool {
        // SAFETY: `new` makes a power of two of shards, at least one, and `mask` one less, so
        // a number masked with it is below their number.
        let shard = unsafe { self.shards.get_unchecked(cpu as usize & self.mask) };
        // A load and a store, not an atomic add: only threads on this CPU write the shard, so
        // a count is lost only when a thread is preempted between the two by one that counts a
        // call of the same function on the same CPU (or moved to another CPU since it read the
        // clock): rare, and nothing to a histogram of thousands of calls.
        // SAFETY: `bucket_unclamped` is below `UNCLAMPED_BUCKETS`, which `COUNTERS` is not.
        let b = unsafe { shard.buckets.get_unchecked(bucket_unclamped(d)) };
        b.store(b.load(Relaxed) + 1, Relaxed);
        let mine = shard.count.load(Relaxed) + 1;
        shard.count.store(mine, Relaxed);
        if !warming {
            mine & self.every.load(Relaxed) == 0
        } else {
            // Within the warm-up's time, no call needs to look further (the first sets it).
            let first = self.first.load(Relaxed);
            first == 0 || now.saturating_sub(first) >= self.warmup_ticks
        }
    }

    /// The limit from every shard merged, unless the warm-up goes on at `now`.
    #[cold]
    #[inline(never)]
    pub(crate) fn recompute(&self, now: u64) -> Option<u64> {
        if !self.warm.load(Relaxed) && !self.warmed_up(now) {
            return None;
        }
        let n = self.count();
        let p99 = self.quantile(n, 99, 100);
        self.p99.store(p99, Relaxed);
        self.warm.store(true, Relaxed);
        let period = (n / 16)
            .next_power_of_two()
            .clamp(AUTO_RECOMPUTE, AUTO_RECOMPUTE_MAX);
        self.every
            .store(period * self.shards.len() as u64 - 1, Relaxed);
        // Under `u64::MAX`, which is a limit still warming up.
        let limit =
            (u128::from(p99) * u128::from(self.k_tenths) / 10).min(u128::from(u64::MAX - 1));
        Some((limit as u64).max(self.floor))
    }

    /// Whether the warm-up is over at `now`: [`AUTO_WARMUP`] calls and `warmup_ticks` since the
    /// first.
    #[cold]
    fn warmed_up(&self, now: u64) -> bool {
        let first = match self.first.load(Relaxed) {
            0 => {
                let _ = self.first.compare_exchange(0, now.max(1), Relaxed, Relaxed);
                self.first.load(Relaxed)
            }
            t => t,
        };
        // Another thread's clock may be a little behind the first call's: not yet.
        now.saturating_sub(first) >= self.warmup_ticks && self.count() >= AUTO_WARMUP
    }

    /// Calls counted, on every shard.
    fn count(&self) -> u64 {
        self.shards.iter().map(|s| s.count.load(Relaxed)).sum()
    }

    /// The p99 the current limit was derived from, ticks (0: warming up).
    pub(crate) fn p99(&self) -> u64 {
        self.p99.load(Relaxed)
    }

    /// Calls in bucket `i`, on every shard (the last takes every counter from it up).
    fn bucket_count(&self, i: usize) -> u64 {
        let counters = if i + 1 < BUCKETS {
            i..i + 1
        } else {
            i..COUNTERS
        };
        self.shards
            .iter()
            .flat_map(|s| &s.buckets[counters.clone()])
            .map(|c| c.load(Relaxed))
            .sum()
    }

    /// The `num/den` quantile of the first `n` calls (nearest rank), as its bucket's upper edge.
    fn quantile(&self, n: u64, num: u64, den: u64) -> u64 {
        let rank = (n * num).div_ceil(den).max(1);
        let mut seen = 0;
        for i in 0..BUCKETS {
            seen += self.bucket_count(i);
            if seen >= rank {
                return upper(i);
            }
        }
        // Calls counted before their bucket was seen by this thread: the largest bucket seen.
        (0..BUCKETS)
            .rev()
            .find(|&i| self.bucket_count(i) != 0)
            .map_or(0, upper)
    }
}

#[cfg(all(test, feature = "record"))]
mod tests {
    use super::*;
    use fdr_format::profile::bucket;

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
        let l = Learned::new(30, 0, 1, 0);
        // 1..=12_288 ticks, each once: the nearest-rank p99 is 12_166. (Small enough for Miri.)
        let n = 192 * AUTO_RECOMPUTE;
        for d in 1..=n {
            l.observe(d, 0, d);
        }
        let p = l.quantile(n, 99, 100);
        assert!((12_166..=12_166 + 12_166 / 8).contains(&p), "{p}");
        assert_eq!(
            l.p99(),
            p,
            "n is a multiple of the period then (1,024: a sixteenth of the calls, rounded up to \
             a power of two): recomputed at the last call"
        );
    }

    #[test]
    fn the_period_grows_with_the_calls_to_a_sixteenth_and_stops_at_the_most() {
        let l = Learned::new(30, 5, 1, 0);
        let mut at = Vec::new();
        for n in 1..=200_000u64 {
            if l.observe(10_000, 0, n).is_some() {
                at.push(n);
            }
        }
        // The warm-up's end, then every 64 calls until a sixteenth of the calls is more, then
        // at most every 4,096.
        assert_eq!(at[0], AUTO_WARMUP);
        assert_eq!(at[1], 1024);
        let gaps: Vec<u64> = at[1..].windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|g| *g <= AUTO_RECOMPUTE_MAX), "{gaps:?}");
        // Each recompute set the period from the calls counted then: the next is at the next
        // multiple of it.
        for w in at.windows(2).skip(1) {
            let period = (w[0] / 16)
                .next_power_of_two()
                .clamp(AUTO_RECOMPUTE, AUTO_RECOMPUTE_MAX);
            assert_eq!(w[1], (w[0] / period + 1) * period, "after call {}", w[0]);
        }
        assert_eq!(*gaps.last().unwrap(), AUTO_RECOMPUTE_MAX);
    }

    #[test]
    fn the_limit_is_set_at_the_end_of_the_warm_up_then_every_64_calls() {
        let l = Learned::new(30, 5, 1, 0);
        let mut set = Vec::new();
        for n in 1..=AUTO_WARMUP + 130 {
            if let Some(limit) = l.observe(10_000, 0, n) {
                set.push((n, limit));
            }
        }
        // 10_000 ticks fall in the bucket [9216, 10239]: 3 x 10239.
        assert_eq!(set, [(1000, 30_717), (1024, 30_717), (1088, 30_717)]);
        assert_eq!(l.p99(), 10_239);
    }

    #[test]
    fn durations_past_the_last_edge_count_in_the_last_bucket() {
        // 20 of 1,000 calls in counters from the last bucket's up (each of its two edges): the
        // p99 is that bucket's edge, and the limit stays under "warming up".
        let l = Learned::new(30, 5, 1, 0);
        for d in [1 << MAX_OCTAVE, u64::MAX] {
            assert!(bucket_unclamped(d) >= BUCKETS - 1);
            for _ in 0..10 {
                l.count_call(d, 0, 1, true);
            }
        }
        for _ in 0..AUTO_WARMUP - 20 {
            l.count_call(10, 0, 1, true);
        }
        assert_eq!(l.bucket_count(BUCKETS - 1), 20);
        assert_eq!(l.quantile(AUTO_WARMUP, 98, 100), upper(bucket(10)));
        assert_eq!(l.recompute(2), Some(u64::MAX - 1));
        assert_eq!(l.p99(), u64::MAX);
    }

    #[test]
    fn the_floor_holds_for_fast_functions() {
        let l = Learned::new(30, 50_000, 1, 0);
        let limits: Vec<u64> = (0..AUTO_WARMUP)
            .filter_map(|_| l.observe(100, 0, 1))
            .collect();
        assert_eq!(limits, [50_000]);
    }

    #[test]
    fn shards_merged_give_the_limits_of_all_calls_together() {
        // The same calls, in one histogram and spread over four CPUs' shards: the limit is the
        // same at every recompute; with four shards a shard recomputes every 4 x 64 of its own
        // calls, so (calls dealt in turn) the limit moves every 64 calls in all, after the
        // warm-up, as with one.
        let one = Learned::new(30, 0, 1, 0);
        let four = Learned::new(30, 0, 4, 0);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for n in 0..3_000u64 {
            // A spread with a tail: mostly 1,000 to 1,999 ticks, one call in 50 ten times longer.
            let d = if n % 50 == 7 {
                15_000 + n
            } else {
                1_000 + n * 7919 % 1_000
            };
            if let Some(l) = one.observe(d, 0, n + 1) {
                a.push((n, l));
            }
            if let Some(l) = four.observe(d, (n % 4) as u32, n + 1) {
                b.push((n, l));
            }
        }
        assert_eq!(a[0].0, AUTO_WARMUP - 1);
        assert_eq!(b[0], a[0]);
        // After the warm-up one histogram recomputes at every 64th call (n + 1 a multiple of
        // 64), four shards at every 256th call of one shard: the calls of shard 3 end at
        // multiples of 1024 in all. At the calls where both recompute, the limits are equal.
        let at: std::collections::BTreeMap<u64, u64> = a.iter().copied().collect();
        let both: Vec<_> = b[1..].iter().filter(|(n, _)| at.contains_key(n)).collect();
        assert!(both.len() >= 2, "{b:?}");
        for (n, l) in both {
            assert_eq!(at[n], *l, "call {n}");
        }
        // And merged at any moment, the shards are the one histogram.
        assert_eq!(one.count(), four.count());
        for q in [50, 90, 99] {
            assert_eq!(
                one.quantile(3_000, q, 100),
                four.quantile(3_000, q, 100),
                "p{q}"
            );
        }
    }

    #[test]
    fn the_warm_up_lasts_its_calls_and_its_time_whichever_ends_last() {
        // 1,000 calls in the first 10 ms of a 1 s warm-up: no limit until 1 s has passed since
        // the first; then the next call sets it.
        let l = Learned::new(30, 0, 1, 1_000_000_000);
        let t0 = 5_000_000_000u64;
        for n in 0..AUTO_WARMUP * 3 {
            assert_eq!(l.observe(10_000, 0, t0 + n * 10_000), None, "call {n}");
        }
        assert_eq!(l.p99(), 0);
        assert_eq!(l.observe(10_000, 0, t0 + 999_999_999), None);
        assert_eq!(l.observe(10_000, 0, t0 + 1_000_000_000), Some(30_717));
        // A slow start does not end it sooner: 10 calls a second take 100 s to make the calls.
        let l = Learned::new(30, 0, 1, 1_000_000_000);
        for n in 0..AUTO_WARMUP - 1 {
            assert_eq!(l.observe(10_000, 0, t0 + n * 100_000_000), None, "call {n}");
        }
        assert_eq!(l.observe(10_000, 0, t0 + 100_000_000_000), Some(30_717));
    }
}
