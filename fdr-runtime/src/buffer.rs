//! The buffer pool: one allocation made at start, cut into buffers that threads own one at a
//! time.
//!
//! Buffers are arrays of 64-bit words written with relaxed atomic stores, which compile to plain
//! stores, so a snapshot may read a buffer while its owner writes it without a data race. What a
//! snapshot needs to tell a finished record from one in progress is published in the buffer's
//! [`Slot`]: the length, the prefix that can no longer be rewound, a count of rewinds, and a
//! generation that changes whenever the buffer is handed to a new owner.
//!
//! Free and retired buffers wait in two bounded lock-free queues. Taking a buffer pops the free
//! queue; in Ring mode, when that is empty, it pops the retired queue, whose head is the buffer
//! retired longest ago: the oldest data goes first.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::config::Mode;
use crate::Error;

/// The slot is in a queue with no data worth keeping.
pub(crate) const FREE: u32 = 0;
/// A thread is writing into the buffer.
pub(crate) const OWNED: u32 = 1;
/// The buffer holds a thread's finished data.
pub(crate) const RETIRED: u32 = 2;

/// What a buffer's owner publishes for snapshots. One cache line per buffer, so owners of
/// neighbouring buffers do not contend.
#[repr(C, align(64))]
pub(crate) struct Slot {
    /// Words written, stored with release ordering after the words themselves.
    pub len: AtomicU32,
    /// Words that no rewind can erase any more.
    pub stable: AtomicU32,
    /// Bumped before the owner writes over words it rewound.
    pub rewinds: AtomicU32,
    /// The owner writes while `len < limit`; zero stops it at its next record.
    pub limit: AtomicU32,
    /// FREE, OWNED or RETIRED.
    pub state: AtomicU32,
    /// Thread id in the block's NewBuffer record.
    pub tid: AtomicI32,
    /// Bumped before a new owner writes, so a copy can tell it raced with a recycle.
    pub gen: AtomicU64,
    /// Which recording thread owns or owned it (index into the pool's thread list).
    pub thread: AtomicU32,
    /// The how-many-th buffer of that thread this is, counting from 0.
    pub thread_seq: AtomicU32,
}

impl Slot {
    pub(crate) const fn new() -> Slot {
        Slot {
            len: AtomicU32::new(0),
            stable: AtomicU32::new(0),
            rewinds: AtomicU32::new(0),
            limit: AtomicU32::new(0),
            state: AtomicU32::new(FREE),
            tid: AtomicI32::new(0),
            gen: AtomicU64::new(0),
            thread: AtomicU32::new(0),
            thread_seq: AtomicU32::new(0),
        }
    }
}

/// A bounded multi-producer multi-consumer queue of buffer indices (Vyukov's sequence-numbered
/// ring). Capacity is at least twice the number of buffers and each buffer sits in at most one
/// queue, so a push only ever waits for a consumer to finish releasing a cell.
///
/// The ring alone can report "empty" while it is not: a push that has claimed its cell but not
/// yet published it hides every entry behind it, and a consumer may read a cell's sequence number
/// before it sees the producer's update. A thread that needs a buffer would then drop records it
/// had room for. So the queue also counts its entries, and a failed attempt only means "empty"
/// when the count says so.
struct Queue {
    cells: Box<[QueueCell]>,
    mask: usize,
    head: AtomicUsize,
    tail: AtomicUsize,
    /// Entries pushed and not yet popped; raised after a push is published.
    len: AtomicUsize,
}

struct QueueCell {
    seq: AtomicUsize,
    value: AtomicU32,
}

impl Queue {
    fn new(capacity: usize) -> Queue {
        let cap = capacity.next_power_of_two().max(2);
        Queue {
            cells: (0..cap)
                .map(|i| QueueCell {
                    seq: AtomicUsize::new(i),
                    value: AtomicU32::new(0),
                })
                .collect(),
            mask: cap - 1,
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
        }
    }

    fn push(&self, value: u32) {
        let mut pos = self.tail.load(Ordering::Relaxed);
        let mut waits = 0u32;
        loop {
            let cell = &self.cells[pos & self.mask];
            let seq = cell.seq.load(Ordering::Acquire);
            let diff = seq as isize - pos as isize;
            if diff == 0 {
                match self.tail.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        cell.value.store(value, Ordering::Relaxed);
                        cell.seq.store(pos + 1, Ordering::Release);
                        self.len.fetch_add(1, Ordering::Release);
                        return;
                    }
                    Err(p) => pos = p,
                }
            } else if diff < 0 {
                // The cell a lap behind was claimed by a consumer that has not released it yet
                // (it was preempted between claiming and reading). The queue never holds more
                // indices than there are buffers, so the release is a moment away: wait for it
                // rather than lose the index.
                waits += 1;
                if waits < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
                pos = self.tail.load(Ordering::Relaxed);
            } else {
                pos = self.tail.load(Ordering::Relaxed);
            }
        }
    }

    /// Takes the oldest entry; `None` only when the queue holds none.
    fn pop(&self) -> Option<u32> {
        let mut waits = 0u32;
        loop {
            if let Some(v) = self.try_pop() {
                self.len.fetch_sub(1, Ordering::Relaxed);
                return Some(v);
            }
            // Synchronizes with the push that raised the count, whose cell is then visible.
            if self.len.load(Ordering::Acquire) == 0 {
                return None;
            }
            waits += 1;
            if waits < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    fn try_pop(&self) -> Option<u32> {
        let mut pos = self.head.load(Ordering::Relaxed);
        loop {
            let cell = &self.cells[pos & self.mask];
            let seq = cell.seq.load(Ordering::Acquire);
            let diff = seq as isize - (pos + 1) as isize;
            if diff == 0 {
                match self.head.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        let v = cell.value.load(Ordering::Relaxed);
                        cell.seq.store(pos + self.mask + 1, Ordering::Release);
                        return Some(v);
                    }
                    Err(p) => pos = p,
                }
            } else if diff < 0 {
                return None;
            } else {
                pos = self.head.load(Ordering::Relaxed);
            }
        }
    }
}

/// A thread that has recorded into this pool.
pub(crate) struct ThreadEntry {
    pub tid: i32,
    pub name: String,
    /// Records this thread could not write.
    pub dropped: AtomicU64,
    /// Buffers this thread has taken.
    pub buffers: AtomicU32,
}

/// The buffers of one recording session, their slots and queues.
pub(crate) struct Pool {
    words: Box<[AtomicU64]>,
    pub words_per_buffer: u32,
    pub slots: Box<[Slot]>,
    free: Queue,
    retired: Queue,
    pub mode: Mode,
    /// Set when the recorder finishes; threads let go of the pool at their next record.
    pub stopped: AtomicBool,
    /// Buffers overwritten to make room for newer ones.
    pub recycled: AtomicU64,
    pub threads: Mutex<Vec<Arc<ThreadEntry>>>,
}

impl Pool {
    pub(crate) fn new(buffer_size: usize, buffer_count: usize, mode: Mode) -> Result<Pool, Error> {
        let words_per_buffer = buffer_size / 8;
        let total = words_per_buffer * buffer_count;
        let mut words: Vec<AtomicU64> = Vec::new();
        words
            .try_reserve_exact(total)
            .map_err(|_| Error::OutOfMemory { bytes: total * 8 })?;
        // Touching every page now keeps page faults off the recording path.
        words.resize_with(total, || AtomicU64::new(0));
        let free = Queue::new(2 * buffer_count);
        for i in 0..buffer_count {
            free.push(i as u32);
        }
        Ok(Pool {
            words: words.into_boxed_slice(),
            words_per_buffer: words_per_buffer as u32,
            slots: (0..buffer_count).map(|_| Slot::new()).collect(),
            free,
            retired: Queue::new(2 * buffer_count),
            mode,
            stopped: AtomicBool::new(false),
            recycled: AtomicU64::new(0),
            threads: Mutex::new(Vec::new()),
        })
    }

    /// The words of buffer `index`.
    pub(crate) fn buffer(&self, index: u32) -> &[AtomicU64] {
        let start = index as usize * self.words_per_buffer as usize;
        &self.words[start..start + self.words_per_buffer as usize]
    }

    /// Takes a buffer for a thread, or `None` when none can be had (Fill mode, pool full; or a
    /// Ring with every buffer owned). The buffer's generation is bumped before it is returned, so
    /// a snapshot copying its previous contents will notice.
    pub(crate) fn acquire(&self) -> Option<u32> {
        let index = match self.free.pop() {
            Some(i) => i,
            None if self.mode == Mode::Ring => {
                let i = self.retired.pop()?;
                self.recycled.fetch_add(1, Ordering::Relaxed);
                i
            }
            None => return None,
        };
        let slot = &self.slots[index as usize];
        // The reset comes first: a copier that sees the new generation also sees length 0,
        // never the old owner's length over the new owner's words.
        slot.len.store(0, Ordering::Relaxed);
        slot.stable.store(0, Ordering::Relaxed);
        slot.gen.fetch_add(1, Ordering::AcqRel);
        // Orders the generation bump before every word the new owner writes (see snapshot).
        std::sync::atomic::fence(Ordering::Release);
        slot.state.store(OWNED, Ordering::Release);
        Some(index)
    }

    /// Hands a thread's buffer back with its data, to be kept (Fill) or recycled last (Ring).
    pub(crate) fn retire(&self, index: u32) {
        let slot = &self.slots[index as usize];
        slot.limit.store(0, Ordering::Relaxed);
        slot.state.store(RETIRED, Ordering::Release);
        self.retired.push(index);
    }

    /// Stops every owner at its next record.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        for slot in self.slots.iter() {
            slot.limit.store(0, Ordering::SeqCst);
        }
    }

    pub(crate) fn register_thread(&self, tid: i32, name: String) -> (u32, Arc<ThreadEntry>) {
        let entry = Arc::new(ThreadEntry {
            tid,
            name,
            dropped: AtomicU64::new(0),
            buffers: AtomicU32::new(0),
        });
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        threads.push(Arc::clone(&entry));
        ((threads.len() - 1) as u32, entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_is_fifo() {
        let q = Queue::new(5);
        for i in 0..5 {
            q.push(i);
        }
        for i in 0..5 {
            assert_eq!(q.pop(), Some(i));
        }
        assert_eq!(q.pop(), None);
        q.push(9);
        assert_eq!(q.pop(), Some(9));
    }

    #[test]
    fn ring_recycles_the_oldest_retired_buffer() {
        let p = Pool::new(256, 3, Mode::Ring).unwrap();
        let a = p.acquire().unwrap();
        let b = p.acquire().unwrap();
        let c = p.acquire().unwrap();
        p.retire(b);
        p.retire(a);
        p.retire(c);
        assert_eq!(p.acquire(), Some(b));
        assert_eq!(p.acquire(), Some(a));
        assert_eq!(p.recycled.load(Ordering::Relaxed), 2);
        assert_eq!(p.slots[b as usize].gen.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn fill_never_recycles() {
        let p = Pool::new(256, 1, Mode::Fill).unwrap();
        let a = p.acquire().unwrap();
        p.retire(a);
        assert_eq!(p.acquire(), None);
    }

    #[test]
    fn queue_survives_concurrent_use() {
        // As full as the pool ever makes it: as many entries as its nominal size.
        let q = Arc::new(Queue::new(64));
        for i in 0..64 {
            q.push(i);
        }
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let q = Arc::clone(&q);
                std::thread::spawn(move || {
                    for _ in 0..if cfg!(miri) { 200 } else { 100_000 } {
                        // 64 entries and 4 threads: the queue is never empty, so a pop that
                        // says it is would make a recording thread drop records.
                        let v = q.pop().expect("a pop found a non-empty queue empty");
                        q.push(v);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let mut seen: Vec<u32> = std::iter::from_fn(|| q.pop()).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..64).collect::<Vec<_>>());
    }
}
