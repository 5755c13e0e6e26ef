//! A recording's profile: every thread's call trie, and the threads' that left, merged.
//!
//! A thread adds its trie to a list with a compare-and-swap (it may join from a signal handler,
//! so no lock), and marks it ended when it leaves. Whoever writes a profile takes the lock, which
//! only writers and the recording's end take: it merges the ended tries into one tree of exited
//! threads, unlinks and unmaps them, then reads the live ones while their threads record. So a
//! recording thread never waits, and memory stays bounded by the threads alive plus one tree.

use std::sync::atomic::{AtomicPtr, Ordering::*};
use std::sync::Mutex;

use fdr_format::profile::Tree;

use crate::profile::call_trie::ThreadProfile;

/// A recording's profile.
pub(crate) struct Profiles {
    /// Nodes per thread.
    cap: u32,
    head: AtomicPtr<ThreadProfile>,
    /// The exited threads' merged tree and the calls lost at their root, under the writers' lock.
    exited: Mutex<(Tree, u64)>,
}

/// The trees read at one moment.
pub(crate) struct Read {
    /// One per live thread, then the exited threads' (tid 0), when asked per thread; else one.
    pub trees: Vec<Tree>,
    /// Calls lost for want of a node at a thread's root.
    pub lost: u64,
}

impl Profiles {
    pub(crate) fn new(cap: u32) -> Profiles {
        Profiles {
            cap,
            head: AtomicPtr::new(std::ptr::null_mut()),
            exited: Mutex::new((Tree::default(), 0)),
        }
    }

    /// A trie for a thread joining; `None` if it cannot be mapped (the thread then profiles
    /// nothing). Lock-free, no allocation.
    pub(crate) fn attach(&self, tid: i32, name: [u8; 16]) -> Option<*const ThreadProfile> {
        let p = ThreadProfile::map(self.cap, tid, name)?;
        let mut head = self.head.load(Relaxed);
        loop {
            // SAFETY: `p` is ours until published by the exchange below.
            unsafe { (*p).next.store(head, Relaxed) };
            match self
                .head
                .compare_exchange_weak(head, p as *mut _, Release, Relaxed)
            {
                Ok(_) => return Some(p),
                Err(now) => head = now,
            }
        }
    }

    /// The thread that owns `p` leaves: its trie is complete.
    pub(crate) fn end(p: *const ThreadProfile) {
        // SAFETY: a trie stays mapped until the writer that sees it ended unmaps it.
        unsafe { (*p).ended.store(true, Release) };
    }

    /// The profile now (`now`: the clock, for calls still open): merged, or per thread.
    pub(crate) fn read(&self, now: u64, per_thread: bool) -> Read {
        let mut exited = self.exited.lock().unwrap_or_else(|e| e.into_inner());
        self.collect(&mut exited);
        let mut trees = Vec::new();
        let mut lost = exited.1;
        let mut p = self.head.load(Acquire);
        while !p.is_null() {
            // SAFETY: only the lock holder unmaps, and it is us.
            let t = unsafe { &*p };
            let (tree, l) = t.read(now);
            lost += l;
            trees.push(tree);
            p = t.next.load(Acquire);
        }
        trees.reverse();
        if per_thread {
            let mut old = exited.0.clone();
            old.tid = 0;
            old.name = "exited threads".into();
            if !old.nodes.is_empty() {
                trees.push(old);
            }
            return Read { trees, lost };
        }
        let mut all = exited.0.clone();
        for t in &trees {
            all.merge(t);
        }
        all.tid = 0;
        all.name.clear();
        Read {
            trees: vec![all],
            lost,
        }
    }

    /// Merges the tries of threads that left into the exited tree, freeing them.
    pub(crate) fn collect_ended(&self) {
        let mut exited = self.exited.lock().unwrap_or_else(|e| e.into_inner());
        self.collect(&mut exited);
    }

    /// Merges the ended tries into the exited tree and unmaps them. Under the lock.
    fn collect(&self, exited: &mut (Tree, u64)) {
        loop {
            // Find an ended trie and the one before it.
            let mut prev: *const ThreadProfile = std::ptr::null();
            let mut p = self.head.load(Acquire);
            loop {
                if p.is_null() {
                    return;
                }
                // SAFETY: under the lock every listed trie is mapped.
                let t = unsafe { &*p };
                if t.ended.load(Acquire) {
                    break;
                }
                prev = p;
                p = t.next.load(Acquire);
            }
            // SAFETY: mapped (listed), and ended: its thread no longer writes it.
            let t = unsafe { &*p };
            let next = t.next.load(Acquire);
            let unlinked = if prev.is_null() {
                // Threads push at the head: if one did meanwhile, find the predecessor again.
                self.head.compare_exchange(p, next, AcqRel, Acquire).is_ok()
            } else {
                // SAFETY: `prev` is listed, so mapped; only the lock holder changes a `next`
                // after publication.
                unsafe { (*prev).next.store(next, Release) };
                true
            };
            if !unlinked {
                continue;
            }
            let (tree, lost) = t.read(0);
            exited.0.merge(&tree);
            exited.1 += lost;
            // SAFETY: ended and unlinked: no thread writes it and no reader can reach it.
            unsafe { ThreadProfile::unmap(p) };
        }
    }
}

impl Drop for Profiles {
    fn drop(&mut self) {
        let mut p = *self.head.get_mut();
        while !p.is_null() {
            // SAFETY: the recording is gone, so is every thread's membership of it (each held a
            // strong count): no one uses a trie.
            let next = unsafe { (*p).next.load(Relaxed) };
            // SAFETY: as above.
            unsafe { ThreadProfile::unmap(p) };
            p = next;
        }
    }
}
