//! Latency histograms whose memory does not grow with the number of calls.
//!
//! [`LogLinear`] keeps 64 linear sub-buckets per power of two (values below 64 exactly), the
//! layout HdrHistogram uses: a percentile read from it is the midpoint of its bucket, within
//! 1/128 (0.8 %) of a value that was recorded, and at most ~3800 counters per function whatever
//! the number of calls. [`Log2`] keeps one counter per power of two, for the many nodes of a
//! call trie.

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;

/// A log-linear histogram of tick counts.
///
/// ```
/// use fdr_cli::hist::LogLinear;
/// let mut h = LogLinear::default();
/// for v in 1..=1000u64 {
///     h.record(v * 1000);
/// }
/// let p50 = h.quantile(0.5) as f64;
/// assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.008, "{p50}");
/// assert_eq!(h.count(), 1000);
/// ```
#[derive(Clone, Debug, Default)]
pub struct LogLinear {
    counts: Vec<u64>,
    total: u64,
}

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

impl LogLinear {
    /// Counts one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.total += 1;
    }

    /// Adds the counts of `other`.
    pub fn merge(&mut self, other: &LogLinear) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The value at quantile `q` (0 to 1) by nearest rank, as its bucket's midpoint; 0 when
    /// empty. Callers clamp it to the exact minimum and maximum they keep.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, w) = bounds(i);
                return lo + (w - 1) / 2;
            }
        }
        0
    }
}

/// One counter per power of two of a tick count.
///
/// ```
/// use fdr_cli::hist::Log2;
/// let mut h = Log2::default();
/// h.record(0);
/// h.record(5);
/// h.record(6);
/// assert_eq!(h.buckets()[0], 1);
/// assert_eq!(h.buckets()[3], 2); // 4..8
/// ```
#[derive(Clone, Debug)]
pub struct Log2([u32; 65]);

impl Default for Log2 {
    fn default() -> Self {
        Log2([0; 65])
    }
}

impl Log2 {
    /// Counts one value: bucket 0 holds 0, bucket k holds 2^(k-1) to 2^k - 1.
    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = 64 - v.leading_zeros() as usize;
        self.0[i] = self.0[i].saturating_add(1);
    }

    /// The counters.
    pub fn buckets(&self) -> &[u32; 65] {
        &self.0
    }

    /// Lowest value of bucket `i`.
    pub fn lower_bound(i: usize) -> u64 {
        if i == 0 {
            0
        } else {
            1u64 << (i - 1)
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
        assert!(h.counts.len() < 4000);
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
}
