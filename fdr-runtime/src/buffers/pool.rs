//! The buffer pool: one allocation made at start, cut into buffers that threads own one at a
//! time.
//!
//! Free and retired buffers wait in two queues. Taking a buffer pops the free queue; in Ring mode,
//! when that is empty, it pops the retired queue, whose head is the buffer retired longest ago: the
//! oldest data goes first. What each buffer's owner publishes for snapshots is in its [`Slot`].

use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::buffers::crash_box::CrashBox;
use crate::buffers::published::{Slot, OWNED, RETIRED};
use crate::buffers::queue::Queue;
use crate::config::Mode;
use crate::tables::threads::Registry;
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
    /// Words in the buffers retired so far, at their retirement: with the lengths of the
    /// buffers owned now, what the cost budget counts the records written by.
    words_retired: AtomicU64,
    /// In a crash box, the first buffer whose room is not reserved yet (`slot_count`: none
    /// left). Buffers from here on are reserved and handed out by [`Pool::grow`], or by
    /// [`Pool::acquire`] one at a time when it finds no other.
    pending: AtomicUsize,
    /// A reservation failed: the pool stays at the buffers reserved so far.
    pub reserve_failed: AtomicBool,
    /// Buffers reserved so far (all of them outside a crash box).
    reserved: AtomicUsize,
    /// Buffers handed out for the first time so far (from the free queue, or reserved by the
    /// thread that took them): the pool grows a megabyte ahead of them.
    fresh: AtomicUsize,
    /// A thread found the reserved buffers running low and woke the writer; cleared when the
    /// writer grows the pool.
    growth_asked: AtomicBool,
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

/// Set by `testing::pause_growth`: the writer reserves nothing past the first buffers.
#[cfg(any(feature = "testing", all(test, feature = "record")))]
static GROWTH_PAUSED: AtomicBool = AtomicBool::new(false);

/// See [`GROWTH_PAUSED`].
#[cfg(any(feature = "testing", all(test, feature = "record")))]
pub(crate) fn pause_growth(on: bool) {
    GROWTH_PAUSED.store(on, Ordering::SeqCst);
}

/// How many buffers of `buffer_size` bytes make a megabyte (at least one): what the background
/// writer reserves of a crash box at a time.
pub(crate) fn buffers_in_a_megabyte(buffer_size: usize) -> usize {
    ((1 << 20) / buffer_size).max(1)
}

/// How many buffers of `buffer_size` bytes a ring in a crash box reserves at start (a quarter
/// of a megabyte, at least one): enough for the first threads' first buffers, while the
/// background writer reserves the rest; a megabyte took a millisecond of a short program.
pub(crate) fn buffers_at_start(buffer_size: usize) -> usize {
    ((1 << 18) / buffer_size).max(1)
}

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
            (buffer_count, buffer_count),
            mode,
        ))
    }

    /// A pool in `crash_box`, laid out for `buffer_count` buffers of `buffer_size` bytes (zeroed:
    /// every slot free).
    pub(crate) fn in_box(
        crash_box: CrashBox,
        buffer_size: usize,
        buffer_count: usize,
        ready: usize,
        mode: Mode,
    ) -> Pool {
        let (w, s) = (crash_box.words(), crash_box.slots(buffer_count));
        Pool::with(
            Memory::Box(crash_box),
            w,
            s,
            buffer_size / 8,
            (buffer_count, ready.clamp(1, buffer_count)),
            mode,
        )
    }

    /// A pool of `count.0` buffers of which the first `count.1` are ready to be handed out (the
    /// rest wait for [`Pool::grow`]).
    fn with(
        memory: Memory,
        words: *const AtomicU64,
        slots: *const Slot,
        words_per_buffer: usize,
        count: (usize, usize),
        mode: Mode,
    ) -> Pool {
        let (buffer_count, ready) = count;
        let free = Queue::new(2 * buffer_count);
        for i in 0..ready {
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
            words_retired: AtomicU64::new(0),
            pending: AtomicUsize::new(ready),
            reserve_failed: AtomicBool::new(false),
            reserved: AtomicUsize::new(ready),
            fresh: AtomicUsize::new(0),
            growth_asked: AtomicBool::new(false),
        }
    }

    /// Faults the buffers' pages in, as the first store to each would, a megabyte at a time
    /// while `keep_going` says so: run by the background writer after the start, so that
    /// neither the start (a few milliseconds for 8 MiB, which a short program would pay whole)
    /// nor, mostly, the recording path pays for them. Changes no word: safe while threads
    /// record.
    pub(crate) fn prefault(&self, keep_going: impl Fn() -> bool) {
        let ready = self.pending.load(Ordering::Relaxed).min(self.slot_count);
        self.prefault_words(0, ready * self.words_per_buffer as usize, &keep_going);
    }

    /// [`Pool::prefault`] for `len` words from word `at`.
    fn prefault_words(&self, at: usize, len: usize, keep_going: &impl Fn() -> bool) {
        const PAGE: usize = 4096;
        const CHUNK: usize = 1 << 20;
        let start = self.words as usize + at * 8;
        let end = start + len * 8;
        // Whole pages inside the range: the partial pages at the ends are few and touched.
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
            // A buffer never used before goes first, in a ring too: its oldest data stays.
            None if self.pending.load(Ordering::Relaxed) < self.slot_count => {
                match self.reserve_one() {
                    Some(i) => i,
                    None => return self.acquire_used(threads),
                }
            }
            None => return self.acquire_used(threads),
        };
        self.fresh.fetch_add(1, Ordering::Relaxed);
        Some(self.hand_out(index))
    }

    /// True once, when the buffers reserved but not yet handed out fall under half a megabyte
    /// and the pool can still grow: the caller then wakes the background writer, which grows
    /// it ([`Pool::grow`]). Until then a thread that finds none reserves its next buffer itself.
    pub(crate) fn wants_growth(&self) -> bool {
        if self.crash_box().is_none()
            || self.pending.load(Ordering::Relaxed) >= self.slot_count
            || self.reserve_failed.load(Ordering::Relaxed)
        {
            return false;
        }
        let ahead = (self.reserved.load(Ordering::Relaxed))
            .saturating_sub(self.fresh.load(Ordering::Relaxed));
        ahead < self.grow_step() / 2 && !self.growth_asked.swap(true, Ordering::Relaxed)
    }

    /// How many buffers the pool grows by at a time: a megabyte's.
    fn grow_step(&self) -> usize {
        buffers_in_a_megabyte(self.words_per_buffer as usize * 8)
    }

    /// [`Pool::acquire`] with no free buffer: the one retired longest ago in a ring.
    fn acquire_used(&self, threads: &Registry) -> Option<u32> {
        let index = match self.free.pop() {
            Some(i) => i,
            None if self.mode == Mode::Ring => {
                let i = self.retired.pop()?;
                self.recycled.fetch_add(1, Ordering::Relaxed);
                if let Some(b) = self.crash_box() {
                    b.add_recycled();
                }
                threads.lost_buffer(self.slots()[i as usize].thread.load(Ordering::Relaxed));
                i
            }
            None => return None,
        };
        Some(self.hand_out(index))
    }

    /// Claims the next buffer whose room is not reserved yet and reserves it: on the path of a
    /// thread whose buffer is full only in the first milliseconds of a recording, before the
    /// background writer has reserved the rest ([`Pool::grow`]). `None` when none is left or
    /// the reservation failed (the file system is full: the pool stays as it is).
    #[cold]
    #[inline(never)]
    fn reserve_one(&self) -> Option<u32> {
        let b = self.crash_box()?;
        let i = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                (p < self.slot_count && !self.reserve_failed.load(Ordering::Relaxed))
                    .then_some(p + 1)
            })
            .ok()?;
        if b.reserve(i, 1).is_err() {
            self.reserve_failed.store(true, Ordering::Relaxed);
            return None;
        }
        self.reserved.fetch_add(1, Ordering::Relaxed);
        Some(i as u32)
    }

    /// Reserves buffers not reserved yet, a megabyte at a time, and puts them in the free queue,
    /// until a megabyte of them waits beyond those handed out (or all are reserved), while
    /// `keep_going` says so: run by the background writer at its start and when a thread asks
    /// ([`Pool::wants_growth`]); each megabyte's pages are faulted in too. Stops at the first
    /// failed reservation. A pool grows as it is used: a short program that fills a few buffers
    /// does not pay for reserving and mapping the whole ring (8 MiB took a third of the CPU
    /// time of a 5 ms program).
    ///
    /// A megabyte is reserved and faulted in before any of its buffers is claimed, then each is
    /// claimed and pushed in turn, as a thread claims one in [`Pool::reserve_one`] (reserving
    /// one twice is harmless): a thread that finds the free queue empty meanwhile finds the
    /// next buffer still unclaimed and takes it, instead of recycling one because the writer
    /// held a megabyte claimed while it reserved it.
    pub(crate) fn grow(&self, keep_going: impl Fn() -> bool) {
        let Some(b) = self.crash_box() else {
            return;
        };
        #[cfg(any(feature = "testing", all(test, feature = "record")))]
        if GROWTH_PAUSED.load(Ordering::SeqCst) {
            return;
        }
        let per = self.grow_step();
        let words = self.words_per_buffer as usize;
        // Cleared first: a thread that finds the pool low after this asks again.
        self.growth_asked.store(false, Ordering::Relaxed);
        while keep_going() && !self.reserve_failed.load(Ordering::Relaxed) {
            let ahead = (self.reserved.load(Ordering::Relaxed))
                .saturating_sub(self.fresh.load(Ordering::Relaxed));
            if ahead >= per {
                return;
            }
            let first = self.pending.load(Ordering::Acquire);
            if first >= self.slot_count {
                return;
            }
            let n = per.min(self.slot_count - first);
            if b.reserve(first, n).is_err() {
                self.reserve_failed.store(true, Ordering::Relaxed);
                return;
            }
            self.prefault_words(first * words, n * words, &keep_going);
            // Claim each of them unless a thread did first.
            let end = first + n;
            loop {
                let p = self.pending.load(Ordering::Acquire);
                if p >= end {
                    break;
                }
                if self
                    .pending
                    .compare_exchange(p, p + 1, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    self.reserved.fetch_add(1, Ordering::Relaxed);
                    self.free.push(p as u32);
                }
            }
        }
    }

    /// How many buffers the pool holds now: fewer than asked for only when a reservation failed
    /// (or while the writer reserves the rest, in the first milliseconds).
    pub(crate) fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }

    /// Marks buffer `index`, just taken from a queue or reserved, as owned by its new owner.
    fn hand_out(&self, index: u32) -> u32 {
        let slot = &self.slots()[index as usize];
        // The reset comes first: a copier that sees the new generation also sees length 0,
        // never the old owner's length over the new owner's words.
        slot.len.store(0, Ordering::Relaxed);
        slot.stable.store(0, Ordering::Relaxed);
        slot.gen.fetch_add(1, Ordering::AcqRel);
        // Orders the generation bump before every word the new owner writes (see `buffers::copy`).
        fence(Ordering::Release);
        slot.state.store(OWNED, Ordering::Release);
        index
    }

    /// Hands a thread's buffer back with its data, to be kept (Fill) or recycled last (Ring).
    pub(crate) fn retire(&self, index: u32) {
        let slot = &self.slots()[index as usize];
        slot.limit.store(0, Ordering::SeqCst);
        self.words_retired.fetch_add(
            u64::from(slot.len.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
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

    /// Words written so far, in every buffer, by every owner (erased words not counted once
    /// their buffer is retired): the buffers retired, then those owned now. A buffer retired
    /// between the two reads is counted at the next call, never twice.
    pub(crate) fn words_written(&self) -> u64 {
        let retired = self.words_retired.load(Ordering::Relaxed);
        self.slots()
            .iter()
            .filter(|s| s.state.load(Ordering::Relaxed) == super::published::OWNED)
            .map(|s| u64::from(s.len.load(Ordering::Relaxed)))
            .fold(retired, u64::wrapping_add)
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
