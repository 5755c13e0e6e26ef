//! The threads that have recorded into a session: a fixed table, joined without a lock or an
//! allocation, and left once nothing of a thread's data remains.
//!
//! A thread joins at its first record, which may run anywhere, a signal handler included, so
//! joining only claims a free entry with a compare-and-swap and fills it in with plain stores (the
//! name comes from the kernel, `PR_GET_NAME`, 15 bytes at most). The table is allocated with the
//! pool; when it is full, a thread records nothing and the miss is counted.
//!
//! An entry is freed when its thread has exited and none of the pool's buffers holds its data any
//! more (each was recycled for another thread), so a long-running program that starts a thread
//! per connection keeps a registry as large as its window, not as its history. What the freed
//! entry counted as dropped is folded into a total first.
//!
//! A thread takes the lowest free entry, so the entries ever used are the first ones, as many as
//! the threads that held one at once (live, or exited with data still in the pool). Every walk of
//! the table (the watchdog's tick, each snapshot and `finish`) stops there: a program with a
//! dozen threads walks a dozen entries, not the whole table (4,096 entries, about a megabyte).

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// The entry holds no thread.
const FREE: u32 = 0;
/// A thread is filling the entry in.
const CLAIMED: u32 = 1;
/// The thread is alive.
const LIVE: u32 = 2;
/// The thread has exited; its buffers may still hold its data.
const EXITED: u32 = 3;

/// `mark_start` of a call with no mark: 0, so that a zeroed entry is a free one (the table is
/// allocated zeroed, its pages touched only by the threads that take entries). A mark is kept
/// as its call's start plus one; a call that starts at tick `u64::MAX` loses its mark (its wait
/// for a CPU is not measured), nothing else.
const NO_MARK: u64 = 0;

/// How many nested calls of trigger functions a thread tracks; deeper ones are not timed.
pub(crate) const OPEN_MAX: usize = 8;

/// One open call of a function with a trigger, published for the watchdog. `seq` is odd while
/// the owner rewrites the call, so a reader that sees it change or odd skips the call.
struct OpenCall {
    seq: AtomicU32,
    id: AtomicU32,
    start: AtomicU64,
    /// The watchdog fired (or tried to fire) this call's trigger: its exit must not again.
    reported: std::sync::atomic::AtomicBool,
    /// The watchdog's mark for measuring the thread's wait for a CPU (`cpu_wait`; 0: none),
    /// valid for the call that started at `mark_start - 1`. Stored mark first, then `mark_start`,
    /// so that a mark meant for a call that has since ended never passes for the next one's.
    mark: AtomicU64,
    mark_start: AtomicU64,
}

/// One thread's entry.
#[repr(align(64))]
pub(crate) struct ThreadEntry {
    state: AtomicU32,
    tid: AtomicI32,
    /// Buffers of the pool that hold this thread's data (owned or retired).
    held: AtomicU32,
    /// Buffers this thread has taken, which numbers its blocks.
    buffers: AtomicU32,
    /// Records this thread could not write.
    dropped: AtomicU64,
    /// The kernel's name of the thread, NUL-padded.
    name: [AtomicU64; 2],
    /// Open calls of trigger functions, innermost last; `depth` may exceed `OPEN_MAX`.
    depth: AtomicU32,
    open: [OpenCall; OPEN_MAX],
}

impl ThreadEntry {
    /// The thread entered a call of trigger function `id` at `start` (owner only); returns how
    /// many such calls (and long-poll-timed polls) were open around it.
    pub(crate) fn open_call(&self, id: u32, start: u64) -> u32 {
        let depth = self.depth.load(Ordering::Relaxed);
        if let Some(call) = self.open.get(depth as usize) {
            let seq = call.seq.load(Ordering::Relaxed);
            call.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
            std::sync::atomic::fence(Ordering::Release);
            call.id.store(id, Ordering::Relaxed);
            call.start.store(start, Ordering::Relaxed);
            call.reported.store(false, Ordering::Relaxed);
            call.mark_start.store(NO_MARK, Ordering::Relaxed);
            call.seq.store(seq.wrapping_add(2), Ordering::Release);
        }
        self.depth.store(depth + 1, Ordering::Release);
        depth
    }

    /// The thread left its innermost open trigger call: returns (id, start) if it was tracked
    /// and the watchdog has not reported it already (owner only).
    pub(crate) fn close_call(&self) -> Option<(u32, u64)> {
        let depth = self.depth.load(Ordering::Relaxed).checked_sub(1)?;
        // No fence between the store and the load (a store-load fence is the costliest part of
        // a trigger's exit): the owner may miss a mark the watchdog is making, and both report
        // the call (see `claim_report`); neither never happens, since a mark the owner sees is a
        // report the watchdog makes.
        self.depth.store(depth, Ordering::Release);
        let call = self.open.get(depth as usize)?;
        if call.reported.load(Ordering::Acquire) {
            return None;
        }
        Some((
            call.id.load(Ordering::Relaxed),
            call.start.load(Ordering::Relaxed),
        ))
    }

    /// The watchdog's mark (0: none) on the call that started at `start`, which the thread has
    /// just closed ([`ThreadEntry::close_call`], and opened none since): read only for a call
    /// past its limit (owner only).
    pub(crate) fn closed_mark(&self, start: u64) -> u64 {
        let depth = self.depth.load(Ordering::Relaxed);
        match self.open.get(depth as usize) {
            Some(call) if call.mark_start.load(Ordering::Acquire) == start.wrapping_add(1) => {
                call.mark.load(Ordering::Relaxed)
            }
            _ => 0,
        }
    }
}

/// A thread as a log lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ThreadFacts {
    pub tid: i32,
    pub name: String,
    pub dropped: u64,
}

pub(crate) struct Registry {
    entries: Entries,
    /// How many entries, from the first, have ever been taken: the walks stop there.
    used: AtomicUsize,
    /// Records dropped by threads whose entries were freed.
    gone_dropped: AtomicU64,
}

/// The thread table: `len` entries zeroed by the allocator. For the default 4,096 entries (1.5
/// MiB) a program's start touches none of the pages (it did, for a millisecond); an entry's
/// pages are touched by the thread that takes it. Allocated at the allocator's own alignment,
/// which only `calloc` serves with fresh, untouched pages (an over-aligned zeroed allocation is
/// an allocation and a `memset`), and aligned to the entries' 64 bytes inside.
struct Entries {
    base: *mut u8,
    layout: std::alloc::Layout,
    entries: *const ThreadEntry,
    len: usize,
}

// SAFETY: `Entries` owns its allocation; the entries are atomics, shared as `&[ThreadEntry]`.
unsafe impl Send for Entries {}
// SAFETY: as above.
unsafe impl Sync for Entries {}

impl Entries {
    fn zeroed(len: usize) -> Entries {
        let align = std::mem::align_of::<ThreadEntry>();
        let bytes = len
            .checked_mul(std::mem::size_of::<ThreadEntry>())
            .and_then(|b| b.checked_add(align))
            .expect("a thread table's size");
        let layout = std::alloc::Layout::from_size_align(bytes, 16).expect("a thread table's size");
        // SAFETY: the layout's size is not zero (it includes `align`).
        let base = unsafe { std::alloc::alloc_zeroed(layout) };
        if base.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let entries = base
            .wrapping_add((base as usize).next_multiple_of(align) - base as usize)
            .cast::<ThreadEntry>();
        Entries {
            base,
            layout,
            entries,
            len,
        }
    }
}

impl std::ops::Deref for Entries {
    type Target = [ThreadEntry];
    fn deref(&self) -> &[ThreadEntry] {
        // SAFETY: `entries` is aligned for `ThreadEntry` and `len` of them fit in the allocation
        // after it (`align` bytes were added for the alignment); zero bytes are a valid entry
        // (atomics at 0, `FREE`, no open call, `NO_MARK`), the one `Registry` starts with; the
        // allocation lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.entries, self.len) }
    }
}

impl Drop for Entries {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout; the entries have no drop glue.
        unsafe { std::alloc::dealloc(self.base, self.layout) };
    }
}

impl Registry {
    pub(crate) fn new(capacity: usize) -> Registry {
        Registry {
            entries: Entries::zeroed(capacity.max(1)),
            used: AtomicUsize::new(0),
            gone_dropped: AtomicU64::new(0),
        }
    }

    /// Claims an entry for a thread, the lowest free one; `None` when the table is full. Never
    /// blocks or allocates.
    pub(crate) fn join(&self, tid: i32, name: [u8; 16]) -> Option<u32> {
        for (key, e) in self.entries.iter().enumerate() {
            if e.state.load(Ordering::Relaxed) != FREE
                || e.state
                    .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            e.tid.store(tid, Ordering::Relaxed);
            e.held.store(0, Ordering::Relaxed);
            e.buffers.store(0, Ordering::Relaxed);
            e.dropped.store(0, Ordering::Relaxed);
            e.depth.store(0, Ordering::Release);
            let (lo, hi) = name.split_at(8);
            e.name[0].store(
                u64::from_le_bytes(lo.try_into().unwrap_or_default()),
                Ordering::Relaxed,
            );
            e.name[1].store(
                u64::from_le_bytes(hi.try_into().unwrap_or_default()),
                Ordering::Relaxed,
            );
            // Before the entry reads as live: a walk that sees it live walks as far.
            self.used.fetch_max(key + 1, Ordering::Release);
            e.state.store(LIVE, Ordering::Release);
            return Some(key as u32);
        }
        None
    }

    /// The entries ever taken, which every walk of the table covers (see the module's comment).
    fn walked(&self) -> &[ThreadEntry] {
        let used = self.used.load(Ordering::Acquire).min(self.entries.len());
        &self.entries[..used]
    }

    /// How many entries a walk of the table visits.
    #[cfg(test)]
    pub(crate) fn walk_len(&self) -> usize {
        self.walked().len()
    }

    /// The thread of `key` exited. Frees its entry at once if no buffer holds its data.
    pub(crate) fn exited(&self, key: u32) {
        let Some(e) = self.entries.get(key as usize) else {
            return;
        };
        e.state.store(EXITED, Ordering::SeqCst);
        if e.held.load(Ordering::SeqCst) == 0 {
            self.free(key);
        }
    }

    /// A buffer now holds the data of `key`'s thread; returns the block's number in its thread.
    pub(crate) fn took_buffer(&self, key: u32) -> u32 {
        let e = &self.entries[key as usize];
        e.held.fetch_add(1, Ordering::SeqCst);
        e.buffers.fetch_add(1, Ordering::Relaxed)
    }

    /// A buffer that held data of `key`'s thread was recycled for another. Frees the entry when
    /// that was the last one of an exited thread.
    pub(crate) fn lost_buffer(&self, key: u32) {
        let Some(e) = self.entries.get(key as usize) else {
            return;
        };
        if e.held.fetch_sub(1, Ordering::SeqCst) == 1 && e.state.load(Ordering::SeqCst) == EXITED {
            self.free(key);
        }
    }

    /// Whoever of `exited` and `lost_buffer` sees both conditions frees the entry; the exchange
    /// makes sure only one does.
    fn free(&self, key: u32) {
        let e = &self.entries[key as usize];
        if e.state
            .compare_exchange(EXITED, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.gone_dropped
                .fetch_add(e.dropped.swap(0, Ordering::Relaxed), Ordering::Relaxed);
            e.state.store(FREE, Ordering::Release);
        }
    }

    /// The entry of `key`, which [`Registry::join`] gave, for its owner to keep while it is a
    /// member of the session (the trigger path's open calls go through it without a look-up).
    pub(crate) fn entry(&self, key: u32) -> &ThreadEntry {
        &self.entries[key as usize]
    }

    /// The watchdog leaves `mark` on the open call of `key` that started at `start`, if it is
    /// still open (a mark that comes too late, for a call that has ended, is never read as the
    /// next call's: see `OpenCall::mark`).
    pub(crate) fn mark_call(&self, key: u32, start: u64, mark: u64) {
        let Some(e) = self.entries.get(key as usize) else {
            return;
        };
        let depth = (e.depth.load(Ordering::Acquire) as usize).min(OPEN_MAX);
        if let Some(call) = e.open[..depth]
            .iter()
            .find(|c| c.start.load(Ordering::Relaxed) == start)
        {
            call.mark.store(mark, Ordering::Relaxed);
            call.mark_start
                .store(start.wrapping_add(1), Ordering::Release);
        }
    }

    /// The watchdog takes the open call of `key` that started at `start` as its own to report.
    /// False if it is no longer open or was taken already. An exit that races the claim may
    /// report the call too (the cooldown then counts one of the two as suppressed), but never
    /// neither: the owner reports unless it sees the mark, and a mark is made only by a claim
    /// that succeeded, whose caller reports.
    pub(crate) fn claim_report(&self, key: u32, start: u64) -> bool {
        let Some(e) = self.entries.get(key as usize) else {
            return false;
        };
        let depth = (e.depth.load(Ordering::SeqCst) as usize).min(OPEN_MAX);
        e.open[..depth].iter().any(|call| {
            call.start.load(Ordering::Relaxed) == start
                && !call.reported.swap(true, Ordering::SeqCst)
        })
    }

    /// Every tracked open trigger call of every thread: (thread key, tid, id, start). Calls that
    /// change while being read are skipped.
    pub(crate) fn open_calls(&self, out: &mut Vec<(u32, i32, u32, u64)>) {
        out.clear();
        for (key, e) in self.walked().iter().enumerate() {
            if e.state.load(Ordering::Acquire) != LIVE {
                continue;
            }
            let depth = (e.depth.load(Ordering::Acquire) as usize).min(OPEN_MAX);
            for (i, call) in e.open[..depth].iter().enumerate() {
                let before = call.seq.load(Ordering::Acquire);
                let id = call.id.load(Ordering::Relaxed);
                let start = call.start.load(Ordering::Relaxed);
                std::sync::atomic::fence(Ordering::Acquire);
                // Unchanged while read, and still open afterwards (not a call that just ended).
                if before % 2 == 0
                    && call.seq.load(Ordering::Relaxed) == before
                    && i < e.depth.load(Ordering::Acquire) as usize
                {
                    out.push((key as u32, e.tid.load(Ordering::Relaxed), id, start));
                }
            }
        }
    }

    pub(crate) fn count_dropped(&self, key: u32, records: u64) {
        if let Some(e) = self.entries.get(key as usize) {
            e.dropped.fetch_add(records, Ordering::Relaxed);
        }
    }

    /// The thread's name as two words, as [`Registry::join`] stored it (zeros: no entry).
    pub(crate) fn name_words(&self, key: u32) -> [u64; 2] {
        self.entries.get(key as usize).map_or([0; 2], |e| {
            [
                e.name[0].load(Ordering::Relaxed),
                e.name[1].load(Ordering::Relaxed),
            ]
        })
    }

    pub(crate) fn tid(&self, key: u32) -> i32 {
        self.entries
            .get(key as usize)
            .map_or(0, |e| e.tid.load(Ordering::Relaxed))
    }

    /// The threads whose entries are in use, in table order.
    pub(crate) fn threads(&self) -> Vec<ThreadFacts> {
        let mut out = Vec::new();
        for e in self.walked() {
            let state = e.state.load(Ordering::Acquire);
            if state != LIVE && state != EXITED {
                continue;
            }
            let mut name = Vec::with_capacity(16);
            name.extend_from_slice(&e.name[0].load(Ordering::Relaxed).to_le_bytes());
            name.extend_from_slice(&e.name[1].load(Ordering::Relaxed).to_le_bytes());
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            name.truncate(end);
            out.push(ThreadFacts {
                tid: e.tid.load(Ordering::Relaxed),
                name: String::from_utf8_lossy(&name).into_owned(),
                dropped: e.dropped.load(Ordering::Relaxed),
            });
        }
        out
    }

    /// Entries in use.
    pub(crate) fn len(&self) -> usize {
        self.walked()
            .iter()
            .filter(|e| matches!(e.state.load(Ordering::Relaxed), LIVE | EXITED))
            .count()
    }

    /// Every record dropped so far, by present and past threads.
    pub(crate) fn dropped_total(&self) -> u64 {
        self.gone_dropped.load(Ordering::Relaxed)
            + self
                .walked()
                .iter()
                .map(|e| e.dropped.load(Ordering::Relaxed))
                .sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> [u8; 16] {
        let mut n = [0u8; 16];
        n[..s.len()].copy_from_slice(s.as_bytes());
        n
    }

    #[test]
    fn walks_cover_the_threads_held_at_once_not_every_thread_there_was() {
        // Small, for Miri: each borrow of the table there retags every byte of it.
        let r = Registry::new(64);
        assert_eq!(r.walk_len(), 0);
        // A thread per connection, a thousand of them (a hundred under Miri) one after another, each leaving once its
        // one buffer is recycled; two long-lived threads beside them.
        let main = r.join(1, name("main")).unwrap();
        let pool = r.join(2, name("pool")).unwrap();
        let conns = if cfg!(miri) { 100 } else { 1000 };
        for tid in 0..conns {
            let k = r.join(100 + tid, name("conn")).unwrap();
            assert_eq!(k, 2, "the lowest free entry");
            r.took_buffer(k);
            r.exited(k);
            r.lost_buffer(k);
        }
        assert_eq!(r.walk_len(), 3);
        // Two connections at once, one of whose data is still in the pool after it exits.
        let a = r.join(5000, name("a")).unwrap();
        r.took_buffer(a);
        r.exited(a);
        let b = r.join(5001, name("b")).unwrap();
        assert_eq!((a, b), (2, 3));
        assert_eq!(r.walk_len(), 4);
        assert_eq!(r.len(), 4);
        let tids: Vec<i32> = r.threads().iter().map(|t| t.tid).collect();
        assert_eq!(tids, [1, 2, 5000, 5001]);
        let _ = (main, pool);
    }

    #[test]
    fn an_exited_thread_leaves_with_its_last_buffer() {
        let r = Registry::new(2);
        let a = r.join(10, name("a")).unwrap();
        let b = r.join(11, name("worker-b")).unwrap();
        assert_eq!(r.join(12, name("c")), None, "the table is full");
        assert_eq!(r.took_buffer(a), 0);
        assert_eq!(r.took_buffer(a), 1);
        r.count_dropped(a, 5);
        r.exited(a);
        assert_eq!(r.len(), 2, "a's data is still in two buffers");
        r.lost_buffer(a);
        assert_eq!(r.len(), 2);
        r.lost_buffer(a);
        assert_eq!(r.len(), 1);
        assert_eq!(r.dropped_total(), 5, "a's drops are folded into the total");
        assert_eq!(
            r.threads(),
            vec![ThreadFacts {
                tid: 11,
                name: "worker-b".into(),
                dropped: 0
            }]
        );
        // The freed entry is taken again.
        let c = r.join(12, name("c")).unwrap();
        assert_eq!(c, a);
        assert_eq!(
            r.took_buffer(c),
            0,
            "a new thread numbers its blocks from 0"
        );
        r.exited(b);
        assert_eq!(r.len(), 1, "b held no buffer and leaves at once");
    }
}
