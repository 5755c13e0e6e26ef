//! A bounded lock-free queue of buffer indices, for the buffers waiting to be taken.
//!
//! It sits on the recording path's cold side (a thread whose buffer is full takes the next one
//! here), where the rules are those of the hot path: never block, never allocate. A mutex would be
//! simpler, but a thread preempted while holding it would stall every other thread's buffer switch
//! for a scheduling quantum, and a thread that forked while another held it would leave the child
//! a lock nobody can release. So: Vyukov's sequence-numbered ring, with an entry count that makes
//! "empty" exact (see `Queue`).

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// A bounded multi-producer multi-consumer queue of buffer indices (Vyukov's sequence-numbered
/// ring). Capacity is at least twice the number of buffers and each buffer sits in at most one
/// queue, so a push only ever waits for a consumer to finish releasing a cell.
///
/// The ring alone can report "empty" while it is not: a push that has claimed its cell but not
/// yet published it hides every entry behind it, and a consumer may read a cell's sequence number
/// before it sees the producer's update. A thread that needs a buffer would then drop records it
/// had room for. So the queue also counts its entries, and a failed attempt only means "empty"
/// when the count says so.
pub(crate) struct Queue {
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
    pub(crate) fn new(capacity: usize) -> Queue {
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

    pub(crate) fn push(&self, value: u32) {
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
    pub(crate) fn pop(&self) -> Option<u32> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

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
