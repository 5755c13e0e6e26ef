//! Latency histograms whose memory does not grow with the number of calls.
//!
//! [`LogLinear`] keeps 64 linear sub-buckets per power of two (values below 64 exactly), the
//! layout HdrHistogram uses: a percentile read from it is the midpoint of its bucket, within
//! 1/128 (0.8 %) of a value that was recorded, and at most ~3800 counters per function whatever
//! the number of calls. [`Log2`] keeps one counter per power of two, for the many nodes of a
//! call trie.

use crate::limits::MAX_EXACT_DURATIONS;

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;

/// A log-linear histogram of tick counts.
///
/// Its memory follows what was recorded, not the values' range: a few distinct buckets are kept
/// as sorted (bucket, count) pairs; once the buckets in use fill at least a quarter of the range
/// between the lowest and the highest, as a dense array over that range. Either way it takes at
/// most 32 bytes per distinct bucket in use (so at most 32 bytes per recorded value, and at most
/// ~30 KiB however many), whatever the values.
#[derive(Clone, Debug, Default)]
pub(crate) struct LogLinear {
    buckets: Buckets,
    total: u64,
}

#[derive(Clone, Debug)]
enum Buckets {
    /// Buckets in use, sorted, with their counts.
    Sparse(Vec<(u16, u64)>),
    /// Counts of buckets `lo..lo + counts.len()`; `used` of them are not zero.
    Dense {
        lo: usize,
        counts: Vec<u64>,
        used: usize,
    },
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets::Sparse(Vec::new())
    }
}

/// A dense array may be at most this many times longer than the buckets in use.
const DENSITY: usize = 4;
/// Sparse lists shorter than this stay sparse (a binary search over a few pairs is cheap).
const SPARSE_MIN: usize = 8;

#[inline]
fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    (((e - SUB_BITS + 1) as usize) << SUB_BITS) + ((v >> (e - SUB_BITS)) & (SUB - 1)) as usize
}

/// The lowest value and the width of bucket `i`.
fn bounds(i: usize) -> (u64, u64) {
    if (i as u64) < SUB {
        return (i as u64, 1);
    }
    let e = (i >> SUB_BITS) as u32 + SUB_BITS - 1;
    let sub = (i as u64) & (SUB - 1);
    let shift = e - SUB_BITS;
    ((SUB + sub) << shift, 1u64 << shift)
}

impl Buckets {
    /// Adds `n` to bucket `i`.
    #[inline]
    fn add(&mut self, i: usize, n: u64) {
        if let Buckets::Dense { lo, counts, used } = self {
            if let Some(c) = i.checked_sub(*lo).and_then(|k| counts.get_mut(k)) {
                *used += usize::from(*c == 0);
                *c += n;
                return;
            }
        }
        self.add_slow(i, n);
    }

    #[cold]
    fn add_slow(&mut self, i: usize, n: u64) {
        match self {
            Buckets::Dense { lo, counts, used } => {
                // Outside the dense range: grow it if it stays dense enough, else go sparse.
                let new_lo = (*lo).min(i);
                let new_hi = (*lo + counts.len()).max(i + 1);
                if new_hi - new_lo <= DENSITY * (*used + 1) {
                    // Exact sizes: the array is the memory bound, not twice it.
                    if i < *lo {
                        let mut grown = Vec::with_capacity(new_hi - new_lo);
                        grown.resize(*lo - i, 0);
                        grown.extend_from_slice(counts);
                        *counts = grown;
                        *lo = i;
                    } else {
                        counts.reserve_exact(i + 1 - *lo - counts.len());
                        counts.resize(i + 1 - *lo, 0);
                    }
                    counts[i - *lo] = n;
                    *used += 1;
                    return;
                }
                let pairs: Vec<(u16, u64)> = counts
                    .iter()
                    .enumerate()
                    .filter(|&(_, &c)| c > 0)
                    .map(|(k, &c)| ((*lo + k) as u16, c))
                    .collect();
                *self = Buckets::Sparse(pairs);
                self.add_slow(i, n);
            }
            Buckets::Sparse(pairs) => {
                let key = i as u16;
                match pairs.binary_search_by_key(&key, |p| p.0) {
                    Ok(k) => pairs[k].1 += n,
                    Err(k) => pairs.insert(k, (key, n)),
                }
                let (first, last) = (pairs[0].0 as usize, pairs[pairs.len() - 1].0 as usize);
                if pairs.len() >= SPARSE_MIN && last + 1 - first <= DENSITY * pairs.len() {
                    let mut counts = vec![0; last + 1 - first];
                    for &(b, c) in pairs.iter() {
                        counts[b as usize - first] = c;
                    }
                    let used = pairs.len();
                    *self = Buckets::Dense {
                        lo: first,
                        counts,
                        used,
                    };
                }
            }
        }
    }

    /// Calls `f` with each bucket in use and its count, lowest first, while it returns true.
    fn each(&self, mut f: impl FnMut(usize, u64) -> bool) {
        match self {
            Buckets::Sparse(pairs) => {
                for &(b, c) in pairs {
                    if !f(b as usize, c) {
                        return;
                    }
                }
            }
            Buckets::Dense { lo, counts, .. } => {
                for (k, &c) in counts.iter().enumerate() {
                    if c > 0 && !f(lo + k, c) {
                        return;
                    }
                }
            }
        }
    }
}

impl LogLinear {
    /// Counts one value.
    #[inline]
    pub(crate) fn record(&mut self, v: u64) {
        self.buckets.add(index(v), 1);
        self.total += 1;
    }

    /// Adds the counts of `other`.
    pub(crate) fn merge(&mut self, other: &LogLinear) {
        other.buckets.each(|i, c| {
            self.buckets.add(i, c);
            true
        });
        self.total += other.total;
    }

    /// Number of values recorded.
    #[cfg(test)]
    pub(crate) fn count(&self) -> u64 {
        self.total
    }

    /// Bytes this histogram holds on the heap.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        match &self.buckets {
            Buckets::Sparse(p) => p.capacity() * std::mem::size_of::<(u16, u64)>(),
            Buckets::Dense { counts, .. } => counts.capacity() * 8,
        }
    }

    /// The value at quantile `q` (0 to 1) by nearest rank, as its bucket's midpoint; 0 when
    /// empty. Callers clamp it to the exact minimum and maximum they keep.
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        self.quantile_skipping(q, None)
    }

    /// [`LogLinear::quantile`] with one count taken from bucket `skip` (when it has one).
    fn quantile_skipping(&self, q: f64, skip: Option<usize>) -> u64 {
        let mut present = false;
        if let Some(skip) = skip {
            self.buckets.each(|i, _| {
                present |= i == skip;
                i < skip
            });
        }
        let total = self.total - u64::from(present);
        if total == 0 {
            return 0;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        let mut found = 0;
        self.buckets.each(|i, c| {
            seen += if present && Some(i) == skip { c - 1 } else { c };
            if seen >= rank {
                let (lo, w) = bounds(i);
                found = lo + (w - 1) / 2;
                return false;
            }
            true
        });
        found
    }
}

impl LogLinear {
    /// [`LogLinear::quantile`] of the values recorded but one value `left_out` (one count
    /// taken from its bucket, when that bucket has one); 0 when nothing is left.
    pub(crate) fn quantile_without(&self, q: f64, left_out: u64) -> u64 {
        self.quantile_skipping(q, Some(index(left_out)))
    }

    /// The counts per power of two, as [`Log2`] buckets them: entry `k` counts the values from
    /// [`Log2::lower_bound`]`(k)` to [`Log2::upper_bound`]`(k)` (each log-linear bucket lies
    /// within one power of two).
    pub(crate) fn powers_of_two(&self) -> [u64; 65] {
        let mut out = [0u64; 65];
        self.buckets.each(|i, c| {
            let (lo, _) = bounds(i);
            let k = 64 - lo.leading_zeros() as usize;
            out[k] = out[k].saturating_add(c);
            true
        });
        out
    }
}

/// The durations of one function's calls, for their median with one call left out (what
/// `fdr explain` takes as the function's usual): kept exactly while there are at most
/// [`MAX_EXACT_DURATIONS`] of them, then counted in a [`LogLinear`] histogram (within 0.8 %)
/// beside their exact minimum and maximum. At most 8 bytes per duration kept exactly, then the
/// histogram's memory: never more than ~30 KiB, whatever the number of calls.
#[derive(Clone, Debug, Default)]
pub(crate) struct Durations {
    /// The durations while they are few, in the order recorded; empty once `counted`.
    exact: Vec<u64>,
    /// They were too many: `hist` holds them all.
    counted: bool,
    hist: LogLinear,
    count: u64,
    min: u64,
    max: u64,
}

impl Durations {
    /// Counts one duration.
    #[inline]
    pub(crate) fn record(&mut self, v: u64) {
        self.min = if self.count == 0 { v } else { self.min.min(v) };
        self.max = self.max.max(v);
        self.count += 1;
        if self.counted {
            self.hist.record(v);
            return;
        }
        self.exact.push(v);
        if self.exact.len() > MAX_EXACT_DURATIONS {
            self.count_all();
        }
    }

    /// Moves the exact durations into the histogram.
    #[cold]
    fn count_all(&mut self) {
        for v in std::mem::take(&mut self.exact) {
            self.hist.record(v);
        }
        self.counted = true;
    }

    /// Adds the durations of `other`.
    pub(crate) fn merge(&mut self, other: &Durations) {
        if other.count == 0 {
            return;
        }
        if other.counted {
            if !self.counted {
                self.count_all();
            }
            self.hist.merge(&other.hist);
            self.min = if self.count == 0 {
                other.min
            } else {
                self.min.min(other.min)
            };
            self.max = self.max.max(other.max);
            self.count += other.count;
            return;
        }
        for &v in &other.exact {
            self.record(v);
        }
    }

    /// Durations recorded.
    #[cfg(test)]
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The median (by nearest rank, as `fdr account`'s p50) of the durations recorded but one
    /// equal to `left_out` (the call being compared with the others), and how many durations
    /// it is the median of; `None` when no other duration is left. Exact while the durations
    /// are kept exactly; from the histogram after, kept within the exact minimum and maximum.
    pub(crate) fn median_without(&self, left_out: Option<u64>) -> Option<(u64, u64)> {
        if !self.counted {
            let mut v = self.exact.clone();
            if let Some(at) = left_out.and_then(|x| v.iter().position(|&d| d == x)) {
                v.swap_remove(at);
            }
            v.sort_unstable();
            let n = v.len() as u64;
            let rank = ((0.5 * n as f64).ceil() as u64).clamp(1, n.max(1));
            return (n > 0).then(|| (v[rank as usize - 1], n));
        }
        // A left-out value outside min..max was never recorded: nothing to leave out.
        let left_out = left_out.filter(|&x| x >= self.min && x <= self.max);
        let n = self.count - u64::from(left_out.is_some());
        if n == 0 {
            return None;
        }
        let q = match left_out {
            Some(x) => self.hist.quantile_without(0.5, x),
            None => self.hist.quantile(0.5),
        };
        Some((q.clamp(self.min, self.max), n))
    }
}

/// One counter per power of two of a tick count.
#[derive(Clone, Debug)]
pub(crate) struct Log2([u32; 65]);

impl Default for Log2 {
    fn default() -> Self {
        Log2([0; 65])
    }
}

impl Log2 {
    /// Counts one value: bucket 0 holds 0, bucket k holds 2^(k-1) to 2^k - 1.
    #[inline]
    pub(crate) fn record(&mut self, v: u64) {
        let i = 64 - v.leading_zeros() as usize;
        self.0[i] = self.0[i].saturating_add(1);
    }

    /// The counters.
    pub(crate) fn buckets(&self) -> &[u32; 65] {
        &self.0
    }

    /// Lowest value of bucket `i` (`u64::MAX` past the last bucket).
    pub(crate) fn lower_bound(i: usize) -> u64 {
        match i {
            0 => 0,
            1..=64 => 1u64 << (i - 1),
            _ => u64::MAX,
        }
    }

    /// Highest value of bucket `i`: bucket 64 ends at `u64::MAX`, not at `2^64 - 1` computed
    /// from a shift that overflows.
    pub(crate) fn upper_bound(i: usize) -> u64 {
        match i {
            0 => 0,
            1..=63 => (1u64 << i) - 1,
            _ => u64::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_number_line() {
        let mut next = 0u64;
        for i in 0..index(u64::MAX) + 1 {
            let (lo, w) = bounds(i);
            assert_eq!(lo, next, "bucket {i}");
            assert_eq!(index(lo), i);
            assert_eq!(index(lo + (w - 1)), i);
            next = lo.wrapping_add(w);
        }
        assert_eq!(next, 0, "the last bucket ends at u64::MAX");
    }

    #[test]
    fn quantiles_are_within_the_stated_error() {
        let mut h = LogLinear::default();
        let mut x = 12345u64;
        let mut vals = Vec::new();
        for _ in 0..10_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = (x >> 20) % 50_000_000;
            vals.push(v);
            h.record(v);
        }
        vals.sort_unstable();
        for q in [0.5, 0.9, 0.99] {
            let exact = vals[((q * vals.len() as f64).ceil() as usize) - 1] as f64;
            let got = h.quantile(q) as f64;
            assert!(
                (got - exact).abs() <= exact / 128.0 + 1.0,
                "q {q}: {got} vs {exact}"
            );
        }
        assert!(h.heap_bytes() < 32 * 1024);
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = LogLinear::default();
        for v in [3, 3, 7, 60] {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 3);
        assert_eq!(h.quantile(0.75), 7);
        assert_eq!(h.quantile(1.0), 60);
    }

    /// Every bucket count, the simple way, for comparison.
    fn reference(values: &[u64]) -> Vec<u64> {
        let mut r = vec![0; index(u64::MAX) + 1];
        for &v in values {
            r[index(v)] += 1;
        }
        r
    }

    fn buckets_of(h: &LogLinear) -> Vec<u64> {
        let mut r = vec![0; index(u64::MAX) + 1];
        h.buckets.each(|i, c| {
            r[i] += c;
            true
        });
        r
    }

    #[test]
    fn sparse_and_dense_forms_count_the_same_in_memory_that_follows_the_buckets_in_use() {
        let mut x = 99u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Clustered values (dense), values spread over the whole range (sparse), and a
        // cluster joined later by outliers (dense, then sparse again).
        let clustered: Vec<u64> = (0..5000).map(|_| 1000 + next() % 5000).collect();
        let spread: Vec<u64> = (0..40).map(|_| next() >> (next() % 64)).collect();
        let mut mixed = clustered.clone();
        mixed.extend(&spread);
        for values in [&clustered, &spread, &mixed] {
            let mut h = LogLinear::default();
            for &v in values.iter() {
                h.record(v);
            }
            assert_eq!(buckets_of(&h), reference(values));
            let distinct = reference(values).iter().filter(|&&c| c > 0).count();
            assert!(
                h.heap_bytes() <= 32 * distinct + 64,
                "{} bytes for {distinct} buckets",
                h.heap_bytes()
            );
            // Merging in halves gives the same counts.
            let (a, b) = values.split_at(values.len() / 2);
            let (mut ha, mut hb) = (LogLinear::default(), LogLinear::default());
            a.iter().for_each(|&v| ha.record(v));
            b.iter().for_each(|&v| hb.record(v));
            ha.merge(&hb);
            assert_eq!(buckets_of(&ha), reference(values));
            assert_eq!(ha.count(), values.len() as u64);
            for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
                assert_eq!(ha.quantile(q), h.quantile(q));
            }
        }
    }

    #[test]
    fn a_median_without_one_value_is_exact_while_few_and_close_after() {
        let mut d = Durations::default();
        assert_eq!(d.median_without(None), None);
        d.record(50_000);
        // The only call, left out: nothing to compare with.
        assert_eq!(d.median_without(Some(50_000)), None);
        for v in [52_000, 51_000, 20_000_000] {
            d.record(v);
        }
        // 50, 51, 52 µs without the 20 ms call: 51 µs, exactly; with it, the lower median.
        assert_eq!(d.median_without(Some(20_000_000)), Some((51_000, 3)));
        assert_eq!(d.median_without(None), Some((51_000, 4)));
        // Past the exact ones, from the histogram: the slow one left out still moves the rank.
        let mut many = Durations::default();
        for _ in 0..MAX_EXACT_DURATIONS {
            many.record(1_000);
        }
        many.record(9_000_000);
        assert!(many.counted);
        assert_eq!(many.count(), MAX_EXACT_DURATIONS as u64 + 1);
        // Every other call took 1 µs: the midpoint of its bucket (8 ns wide), within 0.8 %.
        assert_eq!(
            many.median_without(Some(9_000_000)),
            Some((1_003, MAX_EXACT_DURATIONS as u64))
        );
        // Kept within the exact minimum and maximum: a bucket's midpoint may be past them.
        let mut wide = Durations::default();
        for _ in 0..=MAX_EXACT_DURATIONS {
            wide.record(1_000_001);
        }
        assert_eq!(wide.median_without(None).map(|m| m.0), Some(1_000_001));
        let mut h = LogLinear::default();
        for v in [10, 10, 1_000_000] {
            h.record(v);
        }
        assert_eq!(h.quantile_without(1.0, 1_000_000), 10);
        assert_eq!(h.quantile_without(0.5, 77), h.quantile(0.5));
        // Merging keeps every duration, exact or counted.
        let mut a = Durations::default();
        a.record(5);
        a.merge(&many);
        assert_eq!(a.count(), many.count() + 1);
        assert_eq!(a.median_without(None), Some((1_003, a.count())));
        let mut b = Durations::default();
        b.merge(&a);
        b.merge(&Durations::default());
        assert_eq!((b.count(), b.min, b.max), (a.count(), 5, 9_000_000));
    }

    #[test]
    fn two_extreme_values_take_two_pairs() {
        let mut h = LogLinear::default();
        h.record(1);
        h.record(u64::MAX);
        assert_eq!(h.heap_bytes(), 4 * 16, "two pairs in a vector of four");
        assert_eq!(h.quantile(0.5), 1);
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn log_linear() {
        use crate::model::hist::LogLinear;
        let mut h = LogLinear::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile(0.5) as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.008, "{p50}");
        assert_eq!(h.count(), 1000);
    }

    #[test]
    fn log2() {
        use crate::model::hist::Log2;
        let mut h = Log2::default();
        h.record(0);
        h.record(5);
        h.record(6);
        assert_eq!(h.buckets()[0], 1);
        assert_eq!(h.buckets()[3], 2); // 4..8
    }

    #[test]
    fn upper_bound() {
        use crate::model::hist::Log2;
        assert_eq!(Log2::upper_bound(0), 0);
        assert_eq!(Log2::upper_bound(3), 7);
        assert_eq!(Log2::upper_bound(64), u64::MAX);
    }
}
