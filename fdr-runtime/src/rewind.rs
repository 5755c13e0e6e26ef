//! Erasing calls that returned within the threshold.
//!
//! A call that returns sooner than the threshold after its entry, with nothing kept since that
//! entry, is not worth a place in the window: instead of writing its exit, the writer steps back
//! over its entry record. The thread keeps two counters that say how far back it may step:
//!
//! - `enters`: entry records at the end of the buffer with nothing after them. Any exit, any
//!   metadata record (CPU change, timestamp jump, buffer start) and any entry with arguments
//!   resets it, because what precedes such a record has to stay.
//! - `tails`: entry/tail-exit pairs just before those entries. A function that leaves through a
//!   tail call right after being entered (every call it made in between having been erased) can
//!   be erased together with the tail-called function, when that one returns: the pair is
//!   dropped if the whole chain, from the pair's entry to this exit, was shorter than the
//!   threshold. The first pair that was not short enough pins itself and everything before it.
//!
//! The counters only ever describe records of the current buffer, so a rewind never reaches into
//! a buffer that may already have been handed on.

use fdr_format::FnKind;

use crate::thread::{publish_rewind, Local};

const KIND_MASK: u64 = 0b1110;
const ENTER_BITS: u64 = (FnKind::Enter as u64) << 1;
const TAIL_BITS: u64 = (FnKind::TailExit as u64) << 1;

/// Erases the call whose exit this is, and then any tail-call pairs it ends. Returns the new
/// length, or `None` (nothing changed) if the last entry is not this function's: calls that do
/// not nest (a guard moved across threads, say) are kept rather than guessed at.
///
/// # Safety
/// `l.enters > 0`, so the word at `len - 1` is an entry record of the thread's own buffer, and
/// `l.tails` pairs precede the remaining entries.
#[inline(always)]
pub(crate) unsafe fn erase_call(l: &mut Local, len: u32, id_bits: u32, tsc: u64) -> Option<u32> {
    // SAFETY: `enters > 0` means the last word is this buffer's entry record.
    let entry = unsafe { l.load(len - 1) };
    if entry as u32 != id_bits {
        return None;
    }
    let mut len = len - 1;
    // The entry's delta leads back to the timestamp of the record before it.
    let mut last = l.last_tsc.wrapping_sub(entry >> 32);
    l.enters -= 1;
    if l.enters == 0 && l.tails > 0 {
        // SAFETY: `tails` pairs sit right below `len`, per the contract.
        len = unsafe { erase_tail_pairs(l, len, tsc, &mut last) };
    }
    l.last_tsc = last;
    // With entries left, the last one's timestamp is the new `last`.
    l.last_entry_tsc = last;
    publish_rewind(l, len);
    Some(len)
}

/// # Safety
/// `l.tails` entry/tail-exit pairs end at `len`.
#[cold]
unsafe fn erase_tail_pairs(l: &mut Local, mut len: u32, tsc: u64, last: &mut u64) -> u32 {
    while l.tails > 0 && len >= 2 {
        // SAFETY: per the contract, the two words below `len` are one pair of this buffer.
        let (tail, entry) = unsafe { (l.load(len - 1), l.load(len - 2)) };
        let same_function = (tail as u32) >> 4 == (entry as u32) >> 4;
        if tail & 1 != 0
            || tail & KIND_MASK != TAIL_BITS
            || entry & KIND_MASK != ENTER_BITS
            || !same_function
        {
            l.tails = 0;
            break;
        }
        let entered = last.wrapping_sub(tail >> 32);
        if tsc.wrapping_sub(entered) >= l.threshold {
            l.tails = 0;
            break;
        }
        len -= 2;
        *last = entered.wrapping_sub(entry >> 32);
        l.tails -= 1;
    }
    len
}
