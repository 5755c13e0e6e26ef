//! One thread's call trie (profile mode): a node per call path, with the calls' count, times and
//! latency histogram, and the stack of calls the thread is in.
//!
//! Everything lives in one anonymous mapping made when the thread joins a profiling recording
//! (`mmap` may be called where `malloc` may not: a thread can join from a signal handler), sized
//! for `profile_nodes` nodes up front; the kernel backs pages as nodes are first used, so memory
//! follows the paths the thread meets and stays bounded by the limit. Nothing is allocated or
//! locked after that.
//!
//! Only the owning thread writes. Another thread (the profile's writer) reads nodes while the
//! owner goes on, so every field a reader sees is an atomic written with plain relaxed stores
//! (no read-modify-write: one writer), and a node is published by the node count, with release
//! ordering, after its path is set. A reader may see one call half-added (its count and not yet
//! its time): the copy is of a moving profile, exact to within the calls in flight.
//!
//! Node lookup: a child is found by (parent node, function) in an open-addressing table private
//! to the owner. A call along a new path past the node limit, or deeper than [`PROFILE_DEPTH`],
//! is folded into its caller's node: it counts there as folded, and its time stays the caller's
//! self time (so the caller's total stays exact).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering::*};

use fdr_format::profile::{bucket, Hist, Node as FileNode, Tree, BUCKETS};

use crate::config::PROFILE_DEPTH;

/// In a frame's node: the call was folded into that node (its caller's).
const FOLDED: u32 = 1 << 31;
/// No node: a call with no recorded caller (above every node index, below [`FOLDED`]).
const ROOT: u32 = FOLDED - 1;

/// A call path's calls.
#[repr(C)]
struct Node {
    parent: AtomicU32,
    function: AtomicU32,
    count: AtomicU64,
    total: AtomicU64,
    /// Time in recorded callees.
    child: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
    folded: AtomicU64,
    /// Calls by duration bucket; a bucket stops at `u32::MAX` calls (4 billion calls of one path
    /// in one bucket on one thread; the count and times stay exact).
    hist: [AtomicU32; BUCKETS],
}

/// A call the thread is in.
#[repr(C)]
struct Frame {
    /// Its node, with [`FOLDED`] if it was folded into it.
    node: AtomicU32,
    function: AtomicU32,
    start: AtomicU64,
    /// Time in its recorded callees so far (owner only).
    child: Cell<u64>,
    /// The function it called last, and that call's node (owner only): a call in a loop finds
    /// its node without the table.
    last_function: Cell<u32>,
    last_node: Cell<u32>,
}

/// The head of a thread's mapping.
#[repr(C)]
pub(crate) struct ThreadProfile {
    /// The next thread's, in the recording's list (`profile::merged`).
    pub(crate) next: AtomicPtr<ThreadProfile>,
    /// The thread left the recording: its profile is complete, and the writer may take it.
    pub(crate) ended: AtomicBool,
    pub(crate) tid: i32,
    pub(crate) name: [u8; 16],
    /// The mapping, with the provenance of all of it (a pointer made from `&self` would only
    /// cover the head).
    base: *const u8,
    map_len: usize,
    cap: u32,
    mask: u32,
    /// Nodes in use, published.
    nodes: AtomicU32,
    /// Frames in use, published.
    depth: AtomicU32,
    /// Calls past [`PROFILE_DEPTH`] still open (owner only).
    overflow: Cell<u32>,
    /// As a frame's `last_function` and `last_node`, for calls with no caller (owner only).
    root_function: Cell<u32>,
    root_node: Cell<u32>,
    /// Calls with no node and no caller to fold into (the limit reached at the root).
    lost: AtomicU64,
    node_off: usize,
    table_off: usize,
    stack_off: usize,
}

// SAFETY: the fields only the owner touches (`Cell`s, the table) are never reached from another
// thread: readers use only the atomics and the immutable layout fields (see `read`); `base` is
// only read, and points into the mapping the profile owns.
unsafe impl Sync for ThreadProfile {}

const fn align(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

impl ThreadProfile {
    /// Maps a profile of `cap` nodes for thread `tid`; `None` if the mapping fails.
    pub(crate) fn map(cap: u32, tid: i32, name: [u8; 16]) -> Option<*const ThreadProfile> {
        let slots = (cap as usize * 2).next_power_of_two();
        let node_off = align(std::mem::size_of::<ThreadProfile>(), 64);
        let table_off = align(node_off + cap as usize * std::mem::size_of::<Node>(), 64);
        let stack_off = align(table_off + slots * 4, 64);
        let map_len = stack_off + PROFILE_DEPTH as usize * std::mem::size_of::<Frame>();
        // Pages are backed as they are touched: most of a trie's room is never used.
        let p = crate::platform::map_anonymous(map_len)?;
        let head = p.cast::<ThreadProfile>();
        // SAFETY: the mapping is ours, page-aligned, zeroed and larger than the head; every other
        // field of the mapping is an atomic or a `Cell` whose all-zero bytes are a valid value.
        unsafe {
            head.write(ThreadProfile {
                next: AtomicPtr::new(std::ptr::null_mut()),
                ended: AtomicBool::new(false),
                tid,
                name,
                base: p.cast::<u8>(),
                map_len,
                cap,
                mask: slots as u32 - 1,
                nodes: AtomicU32::new(0),
                depth: AtomicU32::new(0),
                overflow: Cell::new(0),
                root_function: Cell::new(0),
                root_node: Cell::new(0),
                lost: AtomicU64::new(0),
                node_off,
                table_off,
                stack_off,
            })
        };
        Some(head)
    }

    /// Unmaps a profile.
    ///
    /// # Safety
    ///
    /// `p` came from [`ThreadProfile::map`], and nothing uses it any more.
    pub(crate) unsafe fn unmap(p: *const ThreadProfile) {
        // SAFETY: per the contract, the mapping is whole and unused.
        unsafe { crate::platform::unmap(p as *mut u8, (*p).map_len) };
    }

    fn base(&self) -> *const u8 {
        self.base
    }

    fn node(&self, i: u32) -> &Node {
        debug_assert!(i < self.cap);
        // SAFETY: `i` is below the capacity the mapping was sized for, nodes start aligned, and
        // all-zero bytes are a valid `Node`.
        unsafe {
            &*self
                .base()
                .add(self.node_off)
                .cast::<Node>()
                .add(i as usize)
        }
    }

    fn frame(&self, i: u32) -> &Frame {
        debug_assert!(i < PROFILE_DEPTH);
        // SAFETY: as `node`, for the stack.
        unsafe {
            &*self
                .base()
                .add(self.stack_off)
                .cast::<Frame>()
                .add(i as usize)
        }
    }

    fn slot(&self, i: u32) -> &Cell<u32> {
        // SAFETY: as `node`, for the table; only the owner reaches it.
        unsafe {
            &*self
                .base()
                .add(self.table_off)
                .cast::<Cell<u32>>()
                .add(i as usize)
        }
    }

    /// The node of `function` called from `parent`, made if new; `None` past the limit.
    #[inline]
    fn child(&self, parent: u32, function: u32) -> Option<u32> {
        let key =
            (u64::from(parent) << 32 | u64::from(function)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut i = (key >> 40) as u32 & self.mask;
        loop {
            let s = self.slot(i).get();
            if s == 0 {
                return self.add_node(i, parent, function);
            }
            let n = self.node(s - 1);
            if n.function.load(Relaxed) == function && n.parent.load(Relaxed) == parent {
                return Some(s - 1);
            }
            i = (i + 1) & self.mask;
        }
    }

    #[cold]
    fn add_node(&self, slot: u32, parent: u32, function: u32) -> Option<u32> {
        let i = self.nodes.load(Relaxed);
        if i >= self.cap {
            return None;
        }
        let n = self.node(i);
        n.parent.store(parent, Relaxed);
        n.function.store(function, Relaxed);
        self.nodes.store(i + 1, Release);
        self.slot(slot).set(i + 1);
        Some(i)
    }

    /// The entry of a call of `function` at `now`.
    #[inline]
    pub(crate) fn enter(&self, function: u32, now: u64) {
        let depth = self.depth.load(Relaxed);
        if depth >= PROFILE_DEPTH || self.overflow.get() > 0 {
            self.overflow.set(self.overflow.get() + 1);
            return;
        }
        let (last_function, last_node) = if depth == 0 {
            (&self.root_function, &self.root_node)
        } else {
            let caller = self.frame(depth - 1);
            (&caller.last_function, &caller.last_node)
        };
        let node = if last_function.get() == function {
            last_node.get()
        } else {
            let node = if depth == 0 {
                self.child(ROOT, function).unwrap_or(ROOT | FOLDED)
            } else {
                let caller = self.frame(depth - 1).node.load(Relaxed);
                if caller & FOLDED != 0 {
                    caller
                } else {
                    self.child(caller, function).unwrap_or(caller | FOLDED)
                }
            };
            last_function.set(function);
            last_node.set(node);
            node
        };
        let f = self.frame(depth);
        f.node.store(node, Relaxed);
        f.function.store(function, Relaxed);
        f.start.store(now, Relaxed);
        f.child.set(0);
        f.last_function.set(0);
        self.depth.store(depth + 1, Release);
    }

    /// The exit of a call of `function` at `now` (a tail exit is one too: the call it ends in runs
    /// as the caller's).
    #[inline]
    pub(crate) fn exit(&self, function: u32, now: u64) {
        let overflow = self.overflow.get();
        if overflow > 0 {
            // The deepest calls' exits: each counts as folded into the deepest node.
            self.overflow.set(overflow - 1);
            self.fold_deep();
            return;
        }
        let mut depth = self.depth.load(Relaxed);
        if depth == 0 {
            // Entered before the thread joined.
            return;
        }
        if self.frame(depth - 1).function.load(Relaxed) != function {
            // The calls above it ended without their exits (a hook that could not run): they end
            // now. An exit with no entry on the stack is left out.
            let Some(d) = (0..depth)
                .rev()
                .find(|&d| self.frame(d).function.load(Relaxed) == function)
            else {
                return;
            };
            while depth > d + 1 {
                self.pop(depth - 1, now);
                depth -= 1;
            }
        }
        self.pop(depth - 1, now);
    }

    #[cold]
    fn fold_deep(&self) {
        let depth = self.depth.load(Relaxed);
        let node = if depth == 0 {
            ROOT
        } else {
            self.frame(depth - 1).node.load(Relaxed) & !FOLDED
        };
        self.count_folded(node);
    }

    fn count_folded(&self, node: u32) {
        if node == ROOT {
            self.lost.store(self.lost.load(Relaxed) + 1, Relaxed);
        } else {
            let n = &self.node(node).folded;
            n.store(n.load(Relaxed) + 1, Relaxed);
        }
    }

    #[inline]
    fn pop(&self, top: u32, now: u64) {
        let f = self.frame(top);
        let node = f.node.load(Relaxed);
        // A call whose start is after `now` (clocks of two CPUs) took no time.
        let d = now.saturating_sub(f.start.load(Relaxed));
        self.depth.store(top, Release);
        if node & FOLDED != 0 {
            self.count_folded(node & !FOLDED);
            return;
        }
        let n = self.node(node);
        let count = n.count.load(Relaxed);
        n.count.store(count + 1, Relaxed);
        n.total
            .store(n.total.load(Relaxed).wrapping_add(d), Relaxed);
        n.child
            .store(n.child.load(Relaxed).wrapping_add(f.child.get()), Relaxed);
        if count == 0 || d < n.min.load(Relaxed) {
            n.min.store(d, Relaxed);
        }
        if d > n.max.load(Relaxed) {
            n.max.store(d, Relaxed);
        }
        let b = &n.hist[bucket(d)];
        let c = b.load(Relaxed);
        if c != u32::MAX {
            b.store(c + 1, Relaxed);
        }
        if top > 0 {
            let caller = self.frame(top - 1);
            caller.child.set(caller.child.get().wrapping_add(d));
        }
    }

    /// The thread's tree as it stands: every published node, and the calls still open at `now`
    /// (none once the thread ended). Safe from any thread while the owner records.
    pub(crate) fn read(&self, now: u64) -> (Tree, u64) {
        let n = self.nodes.load(Acquire).min(self.cap);
        let mut tree = Tree {
            tid: self.tid,
            name: name_of(&self.name),
            nodes: Vec::with_capacity(n as usize),
        };
        for i in 0..n {
            let x = self.node(i);
            let parent = x.parent.load(Relaxed);
            let count = x.count.load(Relaxed);
            let total = x.total.load(Relaxed);
            let mut hist = Hist::default();
            for (b, c) in x.hist.iter().enumerate() {
                let c = c.load(Relaxed);
                if c > 0 {
                    hist.buckets.push((b as u16, u64::from(c)));
                }
            }
            tree.nodes.push(FileNode {
                // Parents are made before their children, so always below `i`.
                parent: (parent != ROOT && parent < i).then_some(parent),
                function: x.function.load(Relaxed),
                count,
                total,
                self_ticks: total.saturating_sub(x.child.load(Relaxed)),
                min: if count == 0 { 0 } else { x.min.load(Relaxed) },
                max: x.max.load(Relaxed),
                folded: x.folded.load(Relaxed),
                hist,
                ..FileNode::default()
            });
        }
        if !self.ended.load(Acquire) {
            let depth = self.depth.load(Acquire).min(PROFILE_DEPTH);
            for d in 0..depth {
                let f = self.frame(d);
                let node = f.node.load(Relaxed);
                if node & FOLDED != 0 || node >= n {
                    continue;
                }
                let x = &mut tree.nodes[node as usize];
                x.open += 1;
                x.open_ticks = x
                    .open_ticks
                    .saturating_add(now.saturating_sub(f.start.load(Relaxed)));
            }
        }
        (tree, self.lost.load(Relaxed))
    }
}

/// A thread name from the kernel's 16 bytes.
fn name_of(bytes: &[u8; 16]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(16);
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Mapped(*const ThreadProfile);
    impl Drop for Mapped {
        fn drop(&mut self) {
            // SAFETY: mapped by the test, no longer used.
            unsafe { ThreadProfile::unmap(self.0) };
        }
    }
    fn mapped(cap: u32) -> (Mapped, &'static ThreadProfile) {
        let p = ThreadProfile::map(cap, 7, *b"worker\0\0\0\0\0\0\0\0\0\0").unwrap();
        // SAFETY: alive until the `Mapped` guard drops, at the end of the test.
        (Mapped(p), unsafe { &*p })
    }

    #[test]
    fn a_known_tree_has_exact_counts_and_times() {
        let (_m, p) = mapped(16);
        // main(0..100) { a(10..30) { b(12..20) } a(40..50) b(60..90) }
        p.enter(1, 0);
        p.enter(2, 10);
        p.enter(3, 12);
        p.exit(3, 20);
        p.exit(2, 30);
        p.enter(2, 40);
        p.exit(2, 50);
        p.enter(3, 60);
        p.exit(3, 90);
        p.exit(1, 100);
        let (t, lost) = p.read(100);
        assert_eq!(lost, 0);
        let rows: Vec<_> = t
            .nodes
            .iter()
            .map(|n| {
                (
                    n.parent,
                    n.function,
                    n.count,
                    n.total,
                    n.self_ticks,
                    n.min,
                    n.max,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (None, 1, 1, 100, 100 - 30 - 30, 100, 100),
                (Some(0), 2, 2, 30, 30 - 8, 10, 20),
                (Some(1), 3, 1, 8, 8, 8, 8),
                (Some(0), 3, 1, 30, 30, 30, 30),
            ]
        );
        assert_eq!(t.nodes[1].hist.count(), 2);
        assert_eq!((t.tid, t.name.as_str()), (7, "worker"));
    }

    #[test]
    fn past_the_node_limit_calls_fold_into_their_caller() {
        let (_m, p) = mapped(2);
        p.enter(1, 0);
        p.enter(2, 1);
        p.exit(2, 2);
        // No node left: 3 and what it calls fold into 1, and their time is 1's self time.
        p.enter(3, 10);
        p.enter(4, 11);
        p.exit(4, 12);
        p.exit(3, 20);
        p.exit(1, 30);
        // A new root with no node left is lost, counted.
        p.enter(5, 40);
        p.exit(5, 41);
        let (t, lost) = p.read(50);
        assert_eq!(t.nodes.len(), 2);
        assert_eq!(t.nodes[0].folded, 2);
        assert_eq!(t.nodes[0].self_ticks, 30 - 1);
        assert_eq!(lost, 1);
    }

    #[test]
    fn open_calls_and_missing_exits() {
        let (_m, p) = mapped(8);
        p.enter(1, 0);
        p.enter(2, 5);
        p.enter(3, 6);
        // 3's exit never came: 2's exit ends it too.
        p.exit(2, 9);
        // An exit with no entry is left out.
        p.exit(9, 10);
        let (t, _) = p.read(25);
        assert_eq!(t.nodes[0].open, 1);
        assert_eq!(t.nodes[0].open_ticks, 25);
        assert_eq!((t.nodes[1].count, t.nodes[1].total), (1, 4));
        assert_eq!((t.nodes[2].count, t.nodes[2].total), (1, 3));
        assert_eq!(t.nodes[0].count, 0);
    }

    #[test]
    fn a_reader_copies_the_tree_while_its_owner_records() {
        let (_m, p) = mapped(8);
        let calls = if cfg!(miri) { 50 } else { 20_000 };
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..calls {
                    p.enter(1, i * 10);
                    p.enter(2, i * 10 + 1);
                    p.exit(2, i * 10 + 3);
                    p.exit(1, i * 10 + 5);
                }
            });
            let mut last = 0;
            for _ in 0..20 {
                let (t, _) = p.read(u64::MAX);
                // A node is published with its path set; counts only grow.
                if let Some(n) = t.nodes.first() {
                    assert_eq!((n.function, n.parent), (1, None));
                    assert!(n.count >= last);
                    last = n.count;
                }
                if let Some(n) = t.nodes.get(1) {
                    assert_eq!((n.function, n.parent), (2, Some(0)));
                }
            }
        });
        let (t, _) = p.read(0);
        assert_eq!((t.nodes[0].count, t.nodes[1].count), (calls, calls));
        assert_eq!(t.nodes[0].total, calls * 5);
    }

    #[test]
    #[cfg_attr(miri, ignore = "a deep stack and 4096 nodes: minutes under Miri")]
    fn recursion_makes_a_path_per_depth_and_depth_past_the_limit_folds() {
        let (_m, p) = mapped(4096);
        let deep = PROFILE_DEPTH + 3;
        for i in 0..deep {
            p.enter(1, u64::from(i));
        }
        for i in (0..deep).rev() {
            p.exit(1, 10_000 - u64::from(i));
        }
        let (t, lost) = p.read(20_000);
        assert_eq!(lost, 0);
        assert_eq!(t.nodes.len(), PROFILE_DEPTH as usize);
        assert!(t.nodes.iter().all(|n| n.count == 1));
        assert_eq!(t.nodes.last().unwrap().folded, 3);
        assert_eq!(t.nodes[0].total, 10_000);
    }
}
