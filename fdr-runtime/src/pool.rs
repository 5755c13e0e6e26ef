//! The buffer pool: one allocation made at start, cut into buffers that threads own one at a
//! time.
//!
//! Free and retired buffers wait in two queues. Taking a buffer pops the free queue; in Ring mode,
//! when that is empty, it pops the retired queue, whose head is the buffer retired longest ago: the
//! oldest data goes first. What each buffer's owner publishes for snapshots is in its [`Slot`].

use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};

use crate::buffer_state::{Slot, OWNED, RETIRED};
use crate::config::Mode;
use crate::crash_box::CrashBox;
use crate::queue::Queue;
use crate::registry::Registry;
use crate::Error;

pub(crate) struct Pool {
    words: *const AtomicU64,
    words_len: usize,
    pub words_per_buffer: u32,
    slots: *const Slot,
    slot_count: usize,
    /// Owns what `words` and `slots` point into.
    memory: Memory,
    free: Queue,
    retired: Queue,
    pub mode: Mode,
    /// Set when the recording stops; owners let go of their buffers at their next record.
    pub stopped: AtomicBool,
    /// Buffers overwritten to make room for newer ones.
    pub recycled: AtomicU64,
}

/// Where the buffers and their slots are.
enum Memory {
    /// The process's own memory: gone with the process. Vectors, not boxes: moving a box
    /// asserts unique access to its memory, which the pointers into it would then lose.
    Heap {
        _words: Vec<AtomicU64>,
        _slots: Vec<Slot>,
    },
    /// A crash box: a file mapped shared, which outlives the process.
    Box(CrashBox),
}

// SAFETY: `words` and `slots` point into `memory`, which the pool owns and never moves or frees
// while it lives (a vector's heap memory, or a mapping); every access through them is to
// atomics.
unsafe impl Send for Pool {}
// SAFETY: as above.
unsafe impl Sync for Pool {}

/// `len` zeroed words from the global allocator, or `None` when it has no room.
fn zeroed_words(len: usize) -> Option<Vec<AtomicU64>> {
    if len == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<AtomicU64>(len).ok()?;
    // SAFETY: the layout's size is not zero (checked above).
    let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<AtomicU64>();
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` was allocated by the global allocator with the layout of `len` `AtomicU64`s
    // (the capacity given), and all `len` are initialized: zero bytes are `AtomicU64::new(0)`.
    Some(unsafe { Vec::from_raw_parts(p, len, len) })
}

impl Pool {
    /// `buffer_size` is a multiple of 8.
    pub(crate) fn new(buffer_size: usize, buffer_count: usize, mode: Mode) -> Result<Pool, Error> {
        let words_per_buffer = buffer_size / 8;
        let total = words_per_buffer * buffer_count;
        // Zeroed by the allocator (fresh pages from the system, untouched): the background
        // writer faults them in ([`Pool::prefault`]), not the thread that starts the recording.
        let words = zeroed_words(total).ok_or(Error::OutOfMemory { bytes: total * 8 })?;
        let slots: Vec<Slot> = (0..buffer_count).map(|_| Slot::new()).collect();
        let (w, s) = (words.as_ptr(), slots.as_ptr());
        Ok(Pool::with(
            Memory::Heap {
                _words: words,
                _slots: slots,
            },
            w,
            s,
            words_per_buffer,
            buffer_count,
            mode,
        ))
    }

    /// A pool in `crash_box`, laid out for `buffer_count` buffers of `buffer_size` bytes (zeroed:
    /// every slot free).
    pub(crate) fn in_box(
        crash_box: CrashBox,
        buffer_size: usize,
        buffer_count: usize,
        mode: Mode,
    ) -> Pool {
        let (w, s) = (crash_box.words(), crash_box.slots(buffer_count));
        Pool::with(
            Memory::Box(crash_box),
            w,
            s,
            buffer_size / 8,
            buffer_count,
            mode,
        )
    }

    fn with(
        memory: Memory,
        words: *const AtomicU64,
        slots: *const Slot,
        words_per_buffer: usize,
        buffer_count: usize,
        mode: Mode,
    ) -> Pool {
        let free = Queue::new(2 * buffer_count);
        for i in 0..buffer_count {
            free.push(i as u32);
        }
        Pool {
            words,
            words_len: words_per_buffer * buffer_count,
            words_per_buffer: words_per_buffer as u32,
            slots,
            slot_count: buffer_count,
            memory,
            free,
            retired: Queue::new(2 * buffer_count),
            mode,
            stopped: AtomicBool::new(false),
            recycled: AtomicU64::new(0),
        }
    }

    /// Faults the buffers' pages in, as the first store to each would, a megabyte at a time
    /// while `keep_going` says so: run by the background writer after the start, so that
    /// neither the start (a few milliseconds for 8 MiB, which a short program would pay whole)
    /// nor, mostly, the recording path pays for them. Changes no word: safe while threads
    /// record.
    pub(crate) fn prefault(&self, keep_going: impl Fn() -> bool) {
        const PAGE: usize = 4096;
        const CHUNK: usize = 1 << 20;
        let start = self.words as usize;
        let end = start + self.words_len * 8;
        // Whole pages inside the buffers: the partial pages at the ends are few and touched.
        let mut at = start.next_multiple_of(PAGE);
        let end_pages = end / PAGE * PAGE;
        while at < end_pages && keep_going() {
            let len = CHUNK.min(end_pages - at);
            if !crate::platform::prefault(at as *mut u8, len) {
                for page in (at..at + len).step_by(PAGE) {
                    // SAFETY: `page` is 8-aligned and inside the buffers, which are
                    // `AtomicU64`s alive as long as `self`; a load changes nothing.
                    unsafe { (*(page as *const AtomicU64)).load(Ordering::Relaxed) };
                }
            }
            at += len;
        }
    }

    /// Every buffer's slot.
    pub(crate) fn slots(&self) -> &[Slot] {
        // SAFETY: `slots` points at `slot_count` initialized slots owned by `memory` (zeroed
        // memory is `Slot::new()`: every field 0), alive as long as `self`.
        unsafe { std::slice::from_raw_parts(self.slots, self.slot_count) }
    }

    /// The crash box the pool lives in, if it does.
    pub(crate) fn crash_box(&self) -> Option<&CrashBox> {
        match &self.memory {
            Memory::Box(b) => Some(b),
            Memory::Heap { .. } => None,
        }
    }

    /// The words of buffer `index`.
    pub(crate) fn buffer(&self, index: u32) -> &[AtomicU64] {
        // SAFETY: `words` points at `words_len` initialized atomics owned by `memory`.
        let words = unsafe { std::slice::from_raw_parts(self.words, self.words_len) };
        let start = index as usize * self.words_per_buffer as usize;
        &words[start..start + self.words_per_buffer as usize]
    }

    /// Takes a buffer for the thread of registry entry `thread`, or `None` when none can be had
    /// (Fill mode with the pool full, a Ring whose every buffer is owned, or a stopped pool).
    ///
    /// The generation is bumped before the buffer is returned, so a snapshot copying its previous
    /// contents notices; a recycled buffer's previous thread is told it lost it.
    pub(crate) fn acquire(&self, threads: &Registry) -> Option<u32> {
        if self.stopped.load(Ordering::SeqCst) {
            return None;
        }
        let index = match self.free.pop() {
            Some(i) => i,
            None if self.mode == Mode::Ring => {
                let i = self.retired.pop()?;
                self.recycled.fetch_add(1, Ordering::Relaxed);
                threads.lost_buffer(self.slots()[i as usize].thread.load(Ordering::Relaxed));
                i
            }
            None => return None,
        };
        let slot = &self.slots()[index as usize];
        // The reset comes first: a copier that sees the new generation also sees length 0,
        // never the old owner's length over the new owner's words.
        slot.len.store(0, Ordering::Relaxed);
        slot.stable.store(0, Ordering::Relaxed);
        slot.gen.fetch_add(1, Ordering::AcqRel);
        // Orders the generation bump before every word the new owner writes (see `buffer_copy`).
        fence(Ordering::Release);
        slot.state.store(OWNED, Ordering::Release);
        Some(index)
    }

    /// Hands a thread's buffer back with its data, to be kept (Fill) or recycled last (Ring).
    pub(crate) fn retire(&self, index: u32) {
        let slot = &self.slots()[index as usize];
        slot.limit.store(0, Ordering::SeqCst);
        slot.state.store(RETIRED, Ordering::Release);
        self.retired.push(index);
    }

    /// Calls erased by the rewind in this pool's buffers so far (each erase is one rewind).
    pub(crate) fn erased_total(&self) -> u64 {
        self.slots()
            .iter()
            .map(|s| s.rewinds.load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }

    /// Stops every owner at its next record. Only atomic stores: also safe in a forked child.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        for slot in self.slots().iter() {
            slot.limit.store(0, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_recycles_the_oldest_retired_buffer() {
        let r = Registry::new(4);
        let p = Pool::new(256, 3, Mode::Ring).unwrap();
        let a = p.acquire(&r).unwrap();
        let b = p.acquire(&r).unwrap();
        let c = p.acquire(&r).unwrap();
        p.retire(b);
        p.retire(a);
        p.retire(c);
        assert_eq!(p.acquire(&r), Some(b));
        assert_eq!(p.acquire(&r), Some(a));
        assert_eq!(p.recycled.load(Ordering::Relaxed), 2);
        assert_eq!(p.slots()[b as usize].gen.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn fill_never_recycles() {
        let r = Registry::new(4);
        let p = Pool::new(256, 1, Mode::Fill).unwrap();
        let a = p.acquire(&r).unwrap();
        p.retire(a);
        assert_eq!(p.acquire(&r), None);
    }

    #[test]
    fn a_stopped_pool_hands_out_nothing() {
        let r = Registry::new(4);
        let p = Pool::new(256, 2, Mode::Ring).unwrap();
        p.stop();
        assert_eq!(p.acquire(&r), None);
    }
}
