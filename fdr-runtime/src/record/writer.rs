//! How records go into a thread's buffer: word stores, publishing the length, undoing.
//!
//! This is the byte level under the controller (as XRay's log writer is under its controller):
//! it knows where the buffer is and what a snapshot must be told, not what to write. Stores are
//! relaxed atomics, plain `mov`s, because a snapshot may read the buffer while it is written (see
//! `buffers::published` for who publishes what). Everything here is a `Cell`, reached through shared
//! references only, so a hook that re-enters on the same thread (a signal handler) never creates
//! a second `&mut` to state that is in use: it sees the busy marker and leaves.

use std::cell::Cell;
use std::sync::atomic::{fence, AtomicU64, Ordering};

use fdr_format::MetaWords;

use crate::buffers::published::Slot;

/// The slot of a thread with no buffer: its limit of 0 sends every hook to the cold path.
static NO_BUFFER: Slot = Slot::new();

pub(crate) struct RecordWriter {
    slot: Cell<*const Slot>,
    data: Cell<*const AtomicU64>,
}

impl RecordWriter {
    pub(crate) const fn new() -> RecordWriter {
        RecordWriter {
            slot: Cell::new(&NO_BUFFER),
            data: Cell::new(std::ptr::null()),
        }
    }

    #[inline(always)]
    fn slot(&self) -> &Slot {
        // SAFETY: `slot` is NO_BUFFER or was installed by `install`, whose caller keeps it alive
        // until `clear` or another `install`.
        unsafe { &*self.slot.get() }
    }

    /// The length at which the buffer is full (0 without a buffer, or once stopped).
    #[inline(always)]
    pub(crate) fn limit(&self) -> u32 {
        self.slot().limit.load(Ordering::Relaxed)
    }

    /// The buffer's address (0 without one): tells one buffer from another.
    #[inline(always)]
    pub(crate) fn words(&self) -> usize {
        self.data.get() as usize
    }

    pub(crate) fn has_buffer(&self) -> bool {
        !self.data.get().is_null()
    }

    /// Writes into `words` from now on, publishing through `slot`.
    ///
    /// # Safety
    /// `slot` and `words` stay valid, and no other thread writes `words`, until the next
    /// `install` or `clear`.
    pub(crate) unsafe fn install(&self, slot: &Slot, words: &[AtomicU64]) {
        self.slot.set(slot);
        self.data.set(words.as_ptr());
    }

    /// Forgets the buffer.
    pub(crate) fn clear(&self) {
        self.slot.set(&NO_BUFFER);
        self.data.set(std::ptr::null());
    }

    /// Stores a word at `at`.
    ///
    /// # Safety
    /// A buffer is installed and `at` is below its length in words.
    #[inline(always)]
    pub(crate) unsafe fn store(&self, at: u32, word: u64) {
        // SAFETY: per the contract, `data` points at the installed buffer and `at` is in bounds.
        unsafe { (*self.data.get().add(at as usize)).store(word, Ordering::Relaxed) }
    }

    /// Stores a record's header (a metadata record's two words) at `at` and its payload after
    /// it, through one reading of the buffer's address (a store through an atomic may change
    /// any memory for all the compiler knows, so [`RecordWriter::store`] reads it again each
    /// time).
    ///
    /// # Safety
    /// As for [`RecordWriter::store`], for every word.
    #[inline(always)]
    pub(crate) unsafe fn store_record(&self, at: u32, header: MetaWords, payload: &[u64]) {
        let data = self.data.get();
        // SAFETY: per the contract, `data` points at the installed buffer and every word from
        // `at` to the end of the payload is in bounds.
        unsafe {
            let at = data.add(at as usize);
            (*at).store(header[0], Ordering::Relaxed);
            (*at.add(1)).store(header[1], Ordering::Relaxed);
            for (i, w) in payload.iter().enumerate() {
                (*at.add(2 + i)).store(*w, Ordering::Relaxed);
            }
        }
    }

    /// Loads the word at `at`.
    ///
    /// # Safety
    /// As for [`RecordWriter::store`].
    #[inline(always)]
    pub(crate) unsafe fn load(&self, at: u32) -> u64 {
        // SAFETY: per the contract, `data` points at the installed buffer and `at` is in bounds.
        unsafe { (*self.data.get().add(at as usize)).load(Ordering::Relaxed) }
    }

    /// Stores a metadata record at `at` and `at + 1`.
    ///
    /// # Safety
    /// As for [`RecordWriter::store`], for both words.
    #[inline(always)]
    pub(crate) unsafe fn store_meta(&self, at: u32, m: MetaWords) {
        // SAFETY: forwarded contract.
        unsafe {
            self.store(at, m[0]);
            self.store(at + 1, m[1]);
        }
    }

    /// Publishes the length, and with it every word below it, to snapshots.
    #[inline(always)]
    pub(crate) fn publish(&self, len: u32) {
        self.slot().len.store(len, Ordering::Release);
    }

    /// Publishes the length and that nothing below it can be rewound any more.
    #[inline(always)]
    pub(crate) fn publish_stable(&self, len: u32) {
        let slot = self.slot();
        slot.len.store(len, Ordering::Release);
        slot.stable.store(len, Ordering::Release);
    }

    /// Publishes a shorter length after an undo: the length goes down first, then the rewind
    /// counter moves (a release store, then a release fence before any word is written again).
    /// A snapshot reads the counter before the length: one that sees the new count also sees
    /// the shorter length, and one that read the old count sees the new one once it copied a word
    /// written again, and copies again. With the counter first, a snapshot could read the new
    /// count, then the old length, then words written again above the new length, and find the
    /// count unchanged: a record cut in half (the stress tests' snapshots, a few percent of runs).
    #[inline(always)]
    pub(crate) fn publish_undo(&self, len: u32) {
        let slot = self.slot();
        slot.len.store(len, Ordering::Relaxed);
        #[cfg(test)]
        crate::seams::stops::pass(&crate::seams::stops::UNDO_MIDWAY);
        let n = slot.rewinds.load(Ordering::Relaxed).wrapping_add(1);
        slot.rewinds.store(n, Ordering::Release);
        fence(Ordering::Release);
    }
}
