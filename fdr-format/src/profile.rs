//! The profile file (`.fdrprof`): call trees with counts, times and latency histograms, written by
//! the runtime's profile mode and read by `fdr profile`. `docs/FORMAT.md` ("The profile file")
//! gives the layout byte by byte; this module is its one encoder and decoder.
//!
//! A profile holds one or more trees (one merged over every thread, or one per thread and one
//! for the threads that exited). A tree is a list of nodes, each the calls of one function along
//! one call path: a node's parent comes before it, so a reader builds paths in one pass.
//! Durations are in ticks of the recording's clock (`ticks_per_second`).
//!
//! ```
//! use fdr_format::profile::{Profile, Tree, Node, Hist};
//! let mut hist = Hist::default();
//! hist.add(1000, 1);
//! let node = Node { parent: None, function: 1, count: 1, total: 1000, self_ticks: 1000,
//!     min: 1000, max: 1000, hist, ..Node::default() };
//! let p = Profile {
//!     ticks_per_second: 1_000_000_000,
//!     functions: vec![(1, "app::main".into())],
//!     trees: vec![Tree { tid: 0, name: String::new(), nodes: vec![node] }],
//!     ..Profile::default()
//! };
//! let bytes = p.encode();
//! assert_eq!(Profile::decode(&bytes).unwrap(), p);
//! ```

use crate::limits::{
    MAX_PROFILE_FILE_NODES, MAX_PROFILE_FUNCTIONS, MAX_PROFILE_STRING, MAX_PROFILE_TREES,
};
use crate::FormatError;

/// The first eight bytes of every profile file.
pub const PROFILE_MAGIC: [u8; 8] = *b"FDRPROF\0";
/// The layout version this crate writes and reads.
pub const PROFILE_VERSION: u32 = 1;
/// Flag: the trees are per thread (the last one, tid 0, is every thread that exited); without
/// it the profile has one tree merged over every thread.
pub const PER_THREAD: u32 = 1;

/// Buckets per power of two in a latency histogram, as a shift.
pub const SUB_BITS: u32 = 3;
const SUB: u64 = 1 << SUB_BITS;
/// Durations from `2^MAX_OCTAVE` ticks up share the last bucket (at 3 GHz, over six minutes).
pub const MAX_OCTAVE: u32 = 40;
/// Buckets in a latency histogram: one per tick below 8 ticks, then 8 per power of two up to
/// `2^MAX_OCTAVE` ticks, then the last.
pub const BUCKETS: usize = (SUB + (MAX_OCTAVE - SUB_BITS) as u64 * SUB + 1) as usize;

/// The histogram bucket of a duration of `d` ticks.
///
/// ```
/// use fdr_format::profile::{bucket, lower, upper};
/// for d in [0, 7, 8, 100, 1_000_000] {
///     let b = bucket(d);
///     assert!(lower(b) <= d && d <= upper(b));
/// }
/// ```
#[inline]
pub const fn bucket(d: u64) -> usize {
    let b = bucket_unclamped(d);
    if b < BUCKETS - 1 {
        b
    } else {
        BUCKETS - 1
    }
}

/// How many values [`bucket_unclamped`] takes: a histogram this wide counts a duration without
/// a clamp.
pub const UNCLAMPED_BUCKETS: usize = ((64 - SUB_BITS as u64) * SUB + SUB) as usize;

/// [`bucket`] before durations from `2^MAX_OCTAVE` ticks up are put in the last bucket: the same
/// below it, and below [`UNCLAMPED_BUCKETS`] for every duration (one comparison fewer, for a
/// histogram that counts every call and has the room).
///
/// ```
/// use fdr_format::profile::{bucket, bucket_unclamped, UNCLAMPED_BUCKETS};
/// assert_eq!(bucket_unclamped(1_000_000), bucket(1_000_000));
/// assert_eq!(bucket_unclamped(u64::MAX), UNCLAMPED_BUCKETS - 1);
/// ```
#[inline]
pub const fn bucket_unclamped(d: u64) -> usize {
    // Without a branch (a learned limit counts every call): `shift` is the octave past the
    // first 16 ticks, whose buckets are one tick each, and `d >> shift` the duration's top four
    // bits there, 8 to 15: its bucket is 8 per octave past those and the three bits under the
    // top one. The octave is taken of `d | 8`, which is `d`'s from 8 up and 3 below (a shift of
    // 0: one tick a bucket), so no subtraction needs to stop at 0.
    let shift = 63 - SUB_BITS - (d | SUB).leading_zeros();
    (shift as u64 * SUB + (d >> shift)) as usize
}

/// The smallest duration in bucket `i`, ticks.
pub const fn lower(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    if i as usize >= BUCKETS - 1 {
        return 1 << MAX_OCTAVE;
    }
    let octave = (i / SUB - 1) as u32 + SUB_BITS;
    (SUB + i % SUB) << (octave - SUB_BITS)
}

/// The largest duration in bucket `i`, ticks (`u64::MAX` for the last).
pub const fn upper(i: usize) -> u64 {
    if i + 1 >= BUCKETS {
        return u64::MAX;
    }
    lower(i + 1) - 1
}

/// A latency histogram: call counts by [`bucket`], sparse (only buckets with calls).
///
/// Quantiles are nearest-rank and report the middle of their bucket, so they are within 1/16
/// (6.25 %) of a duration of that bucket; the last bucket reports its lower edge.
///
/// ```
/// use fdr_format::profile::Hist;
/// let mut h = Hist::default();
/// for d in 1..=100u64 { h.add(d * 1000, 1); }
/// let p50 = h.quantile(0.5);
/// assert!((p50 as f64 - 50_000.0).abs() <= 50_000.0 / 16.0, "{p50}");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hist {
    /// `(bucket, calls)`, by bucket, no zero counts.
    pub buckets: Vec<(u16, u64)>,
}

impl Hist {
    /// Adds `n` calls of `d` ticks.
    pub fn add(&mut self, d: u64, n: u64) {
        self.add_bucket(bucket(d) as u16, n);
    }

    /// Adds `n` calls to bucket `b`.
    pub fn add_bucket(&mut self, b: u16, n: u64) {
        if n == 0 {
            return;
        }
        match self.buckets.binary_search_by_key(&b, |&(i, _)| i) {
            Ok(i) => self.buckets[i].1 = self.buckets[i].1.saturating_add(n),
            Err(i) => self.buckets.insert(i, (b, n)),
        }
    }

    /// Adds every call of `other`.
    pub fn merge(&mut self, other: &Hist) {
        if self.buckets.is_empty() {
            self.buckets = other.buckets.clone();
            return;
        }
        for &(b, n) in &other.buckets {
            self.add_bucket(b, n);
        }
    }

    /// Calls counted.
    pub fn count(&self) -> u64 {
        self.buckets
            .iter()
            .map(|&(_, n)| n)
            .fold(0, u64::saturating_add)
    }

    /// The `q` quantile (0 to 1), ticks; 0 for an empty histogram.
    pub fn quantile(&self, q: f64) -> u64 {
        let n = self.count();
        if n == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for &(b, c) in &self.buckets {
            seen = seen.saturating_add(c);
            if seen >= rank {
                return mid(usize::from(b));
            }
        }
        self.buckets.last().map_or(0, |&(b, _)| mid(usize::from(b)))
    }
}

fn mid(b: usize) -> u64 {
    if b + 1 >= BUCKETS {
        return lower(b);
    }
    lower(b) + (upper(b) - lower(b)) / 2
}

/// The calls of one function along one call path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// Index of the caller's node in the same tree (`None`: a root, called from no recorded
    /// function); always below this node's own index.
    pub parent: Option<u32>,
    /// Function id, as in [`Profile::functions`].
    pub function: u32,
    /// Calls that returned.
    pub count: u64,
    /// Their time, ticks.
    pub total: u64,
    /// Their time outside recorded callees (and inside folded ones), ticks.
    pub self_ticks: u64,
    /// Shortest call, ticks (0 without calls).
    pub min: u64,
    /// Longest call, ticks.
    pub max: u64,
    /// Calls along deeper paths that had no node left (the `profile_nodes` limit or the depth
    /// limit) and were counted into this one: their time is in this node's self time.
    pub folded: u64,
    /// Calls still running when the profile was written (not in `count` or the times).
    pub open: u64,
    /// How long they had run by then, ticks.
    pub open_ticks: u64,
    /// The returned calls' durations.
    pub hist: Hist,
}

/// One call tree: a thread's, every thread's merged (`tid` 0, no name) or the exited threads'.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tree {
    /// Thread id (0: several threads).
    pub tid: i32,
    /// Thread name, if it had one.
    pub name: String,
    /// Nodes, each after its parent.
    pub nodes: Vec<Node>,
}

/// A whole profile file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// [`PER_THREAD`] or 0.
    pub flags: u32,
    /// Ticks per second of the clock the durations are in.
    pub ticks_per_second: u64,
    /// When profiling started, Unix nanoseconds.
    pub start_unix_ns: u64,
    /// How long it had run when this was written, ticks.
    pub elapsed_ticks: u64,
    /// Calls left out: a thread met a new function at the root of its stack with no node left.
    pub lost: u64,
    /// The process.
    pub pid: u32,
    /// The program's name.
    pub program: String,
    /// `(id, full name)` of every function in the trees.
    pub functions: Vec<(u32, String)>,
    /// The call trees.
    pub trees: Vec<Tree>,
}

impl Tree {
    /// Adds `other` into this tree, node by node along equal paths (same functions from the
    /// root); every count, time and histogram adds up, min and max combine.
    pub fn merge(&mut self, other: &Tree) {
        let mut index: std::collections::HashMap<(Option<u32>, u32), u32> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| ((n.parent, n.function), i as u32))
            .collect();
        // Where each of `other`'s nodes went in `self`.
        let mut to = Vec::with_capacity(other.nodes.len());
        for n in &other.nodes {
            let parent = n.parent.and_then(|p| to.get(p as usize).copied());
            let key = (parent, n.function);
            let i = *index.entry(key).or_insert_with(|| {
                self.nodes.push(Node {
                    parent,
                    function: n.function,
                    ..Node::default()
                });
                (self.nodes.len() - 1) as u32
            });
            self.nodes[i as usize].add(n);
            to.push(i);
        }
    }
}

impl Node {
    /// Adds `other`'s calls into this node.
    pub fn add(&mut self, other: &Node) {
        if other.count > 0 {
            self.min = if self.count == 0 {
                other.min
            } else {
                self.min.min(other.min)
            };
            self.max = self.max.max(other.max);
        }
        self.count = self.count.saturating_add(other.count);
        self.total = self.total.saturating_add(other.total);
        self.self_ticks = self.self_ticks.saturating_add(other.self_ticks);
        self.folded = self.folded.saturating_add(other.folded);
        self.open = self.open.saturating_add(other.open);
        self.open_ticks = self.open_ticks.saturating_add(other.open_ticks);
        self.hist.merge(&other.hist);
    }
}

impl Profile {
    /// Every tree merged into one, by call path.
    pub fn merged(&self) -> Tree {
        let mut all = Tree::default();
        for t in &self.trees {
            all.merge(t);
        }
        all
    }

    /// The name of function `id`, if the profile has it.
    pub fn function_name(&self, id: u32) -> Option<&str> {
        self.functions
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, n)| n.as_str())
    }

    /// Whether `bytes` start like a profile file.
    pub fn is_profile(bytes: &[u8]) -> bool {
        bytes.starts_with(&PROFILE_MAGIC)
    }

    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::new();
        o.extend_from_slice(&PROFILE_MAGIC);
        put32(&mut o, PROFILE_VERSION);
        put32(&mut o, self.flags);
        put64(&mut o, self.ticks_per_second);
        put64(&mut o, self.start_unix_ns);
        put64(&mut o, self.elapsed_ticks);
        put64(&mut o, self.lost);
        put32(&mut o, self.pid);
        put_str(&mut o, &self.program);
        put32(&mut o, self.functions.len() as u32);
        for (id, name) in &self.functions {
            put32(&mut o, *id);
            put_str(&mut o, name);
        }
        put32(&mut o, self.trees.len() as u32);
        for t in &self.trees {
            put32(&mut o, t.tid as u32);
            put_str(&mut o, &t.name);
            put32(&mut o, t.nodes.len() as u32);
            for n in &t.nodes {
                put32(&mut o, n.parent.unwrap_or(u32::MAX));
                put32(&mut o, n.function);
                for v in [
                    n.count,
                    n.total,
                    n.self_ticks,
                    n.min,
                    n.max,
                    n.folded,
                    n.open,
                    n.open_ticks,
                ] {
                    put64(&mut o, v);
                }
                put16(&mut o, n.hist.buckets.len() as u16);
                for &(b, c) in &n.hist.buckets {
                    put16(&mut o, b);
                    put64(&mut o, c);
                }
            }
        }
        o
    }

    /// Reads a profile file, checking every count and index against the file and the limits
    /// above ([`MAX_PROFILE_FILE_NODES`] and its neighbours).
    pub fn decode(bytes: &[u8]) -> Result<Profile, FormatError> {
        let mut r = Cursor { bytes, at: 0 };
        if !Profile::is_profile(bytes) {
            return Err(FormatError::new(
                0,
                "not an fdr profile (it does not start with FDRPROF); a log (.fdr) is read by \
                 the other commands"
                    .into(),
            ));
        }
        r.at = 8;
        let version = r.u32()?;
        if version != PROFILE_VERSION {
            return Err(FormatError::new(
                8,
                format!(
                    "profile layout version {version}, this fdr reads version \
                     {PROFILE_VERSION}; use the fdr that wrote it"
                ),
            ));
        }
        let mut p = Profile {
            flags: r.u32()?,
            ticks_per_second: r.u64()?,
            start_unix_ns: r.u64()?,
            elapsed_ticks: r.u64()?,
            lost: r.u64()?,
            pid: r.u32()?,
            program: r.string()?,
            ..Profile::default()
        };
        if p.ticks_per_second == 0 {
            return Err(FormatError::new(12, "ticks per second is 0".into()));
        }
        let functions = r.count(MAX_PROFILE_FUNCTIONS, "functions", 6)?;
        for _ in 0..functions {
            let id = r.u32()?;
            p.functions.push((id, r.string()?));
        }
        let trees = r.count(MAX_PROFILE_TREES, "trees", 10)?;
        let mut nodes_seen = 0usize;
        for _ in 0..trees {
            let mut t = Tree {
                tid: r.u32()? as i32,
                name: r.string()?,
                nodes: Vec::new(),
            };
            let nodes = r.count(MAX_PROFILE_FILE_NODES - nodes_seen, "nodes", 74)?;
            nodes_seen += nodes;
            for i in 0..nodes {
                let at = r.at;
                let parent = match r.u32()? {
                    u32::MAX => None,
                    p if (p as usize) < i => Some(p),
                    p => {
                        return Err(FormatError::new(
                            at as u64,
                            format!(
                                "node {i} names node {p} as its parent, which is not before it"
                            ),
                        ))
                    }
                };
                let mut n = Node {
                    parent,
                    function: r.u32()?,
                    count: r.u64()?,
                    total: r.u64()?,
                    self_ticks: r.u64()?,
                    min: r.u64()?,
                    max: r.u64()?,
                    folded: r.u64()?,
                    open: r.u64()?,
                    open_ticks: r.u64()?,
                    hist: Hist::default(),
                };
                let buckets = usize::from(r.u16()?);
                let mut last = None;
                for _ in 0..buckets {
                    let at = r.at;
                    let b = r.u16()?;
                    let c = r.u64()?;
                    if usize::from(b) >= BUCKETS || last.is_some_and(|l| b <= l) || c == 0 {
                        return Err(FormatError::new(
                            at as u64,
                            format!(
                                "histogram bucket {b} of node {i}: buckets are below {BUCKETS}, \
                                 increasing, with calls"
                            ),
                        ));
                    }
                    last = Some(b);
                    n.hist.buckets.push((b, c));
                }
                t.nodes.push(n);
            }
            p.trees.push(t);
        }
        if r.at != bytes.len() {
            return Err(FormatError::new(
                r.at as u64,
                format!("{} bytes after the last tree", bytes.len() - r.at),
            ));
        }
        Ok(p)
    }
}

fn put16(o: &mut Vec<u8>, v: u16) {
    o.extend_from_slice(&v.to_le_bytes());
}
fn put32(o: &mut Vec<u8>, v: u32) {
    o.extend_from_slice(&v.to_le_bytes());
}
fn put64(o: &mut Vec<u8>, v: u64) {
    o.extend_from_slice(&v.to_le_bytes());
}
fn put_str(o: &mut Vec<u8>, s: &str) {
    let s = &s.as_bytes()[..s.len().min(MAX_PROFILE_STRING)];
    put16(o, s.len() as u16);
    o.extend_from_slice(s);
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], FormatError> {
        let Some(s) = self.bytes.get(self.at..self.at + n) else {
            return Err(FormatError::new(
                self.at as u64,
                format!(
                    "the profile ends {} bytes in, in the middle of a field: the file is cut short",
                    self.bytes.len()
                ),
            ));
        };
        self.at += n;
        Ok(s)
    }
    fn u16(&mut self) -> Result<u16, FormatError> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().unwrap_or([0; 2]),
        ))
    }
    fn u32(&mut self) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or([0; 4]),
        ))
    }
    fn u64(&mut self) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or([0; 8]),
        ))
    }
    fn string(&mut self) -> Result<String, FormatError> {
        let at = self.at;
        let n = usize::from(self.u16()?);
        if n > MAX_PROFILE_STRING {
            return Err(FormatError::new(
                at as u64,
                format!("a name of {n} bytes, over the limit of {MAX_PROFILE_STRING}"),
            ));
        }
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
    /// A count of items at least `min_size` bytes each: at most `max`, and no more than the
    /// bytes left could hold.
    fn count(&mut self, max: usize, what: &str, min_size: usize) -> Result<usize, FormatError> {
        let at = self.at;
        let n = self.u32()? as usize;
        let left = self.bytes.len() - self.at;
        if n > max || n > left / min_size {
            return Err(FormatError::new(
                at as u64,
                format!(
                    "{n} {what}: more than the limit of {max} or than the {left} bytes left \
                     can hold"
                ),
            ));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_duration_in_order() {
        let mut last = 0;
        for i in 0..BUCKETS {
            assert!(lower(i) <= upper(i));
            if i > 0 {
                assert_eq!(lower(i), last + 1, "bucket {i}");
            }
            last = upper(i);
            assert_eq!(bucket(lower(i)), i);
            if i + 1 < BUCKETS {
                assert_eq!(bucket(upper(i)), i);
            }
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        // The width of a bucket from 8 ticks up is at most an eighth of its lower edge.
        for i in 8..BUCKETS - 1 {
            assert!((upper(i) - lower(i) + 1) * 8 <= lower(i), "bucket {i}");
        }
    }

    #[test]
    fn quantiles_of_a_uniform_distribution_are_within_a_sixteenth() {
        let mut h = Hist::default();
        for d in 1..=10_000u64 {
            h.add(d * 100, 1);
        }
        for q in [0.5, 0.9, 0.99, 0.999] {
            let want = q * 1_000_000.0;
            let got = h.quantile(q) as f64;
            assert!((got - want).abs() <= want / 16.0, "q {q}: {got} vs {want}");
        }
        assert_eq!(h.count(), 10_000);
    }

    fn sample() -> Profile {
        let mut h = Hist::default();
        h.add(500, 2);
        h.add(90_000, 1);
        Profile {
            flags: PER_THREAD,
            ticks_per_second: 3_000_000_000,
            start_unix_ns: 1_700_000_000_000_000_000,
            elapsed_ticks: 9_000_000,
            lost: 5,
            pid: 42,
            program: "app".into(),
            functions: vec![(1, "app::main".into()), (2, "app::work".into())],
            trees: vec![Tree {
                tid: 7,
                name: "worker".into(),
                nodes: vec![
                    Node {
                        parent: None,
                        function: 1,
                        count: 1,
                        total: 100_000,
                        self_ticks: 9_000,
                        min: 100_000,
                        max: 100_000,
                        hist: {
                            let mut h = Hist::default();
                            h.add(100_000, 1);
                            h
                        },
                        ..Node::default()
                    },
                    Node {
                        parent: Some(0),
                        function: 2,
                        count: 3,
                        total: 91_000,
                        self_ticks: 91_000,
                        min: 500,
                        max: 90_000,
                        folded: 4,
                        open: 1,
                        open_ticks: 77,
                        hist: h,
                    },
                ],
            }],
        }
    }

    #[test]
    fn round_trip() {
        let p = sample();
        assert_eq!(Profile::decode(&p.encode()).unwrap(), p);
    }

    #[test]
    fn every_cut_is_an_error_not_a_panic() {
        let bytes = sample().encode();
        for n in 0..bytes.len() {
            assert!(Profile::decode(&bytes[..n]).is_err(), "cut at {n}");
        }
    }

    #[test]
    fn hostile_counts_and_indices_are_refused() {
        let good = sample().encode();
        // The function count (after magic, version, flags, three u64, pid and "app").
        let at = 8 + 4 + 4 + 32 + 4 + 2 + 3;
        let mut bad = good.clone();
        bad[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = Profile::decode(&bad).unwrap_err();
        assert!(e.message.contains("functions"), "{e}");
        // A parent after its child.
        let p = {
            let mut p = sample();
            p.trees[0].nodes[1].parent = Some(1);
            p
        };
        let e = Profile::decode(&p.encode()).unwrap_err();
        assert!(e.message.contains("parent"), "{e}");
        let mut bad = good;
        bad.push(0);
        assert!(Profile::decode(&bad).unwrap_err().message.contains("after"));
    }

    #[test]
    fn merge_adds_along_equal_paths() {
        let p = sample();
        let mut t = p.trees[0].clone();
        t.merge(&p.trees[0]);
        assert_eq!(t.nodes.len(), 2);
        assert_eq!(t.nodes[1].count, 6);
        assert_eq!(t.nodes[1].folded, 8);
        assert_eq!(t.nodes[1].min, 500);
        assert_eq!(t.nodes[1].hist.count(), 6);
        // A different root makes a second path.
        let mut other = p.trees[0].clone();
        other.nodes[0].function = 2;
        t.merge(&other);
        assert_eq!(t.nodes.len(), 4);
        assert_eq!(t.nodes[3].parent, Some(2));
    }
}
