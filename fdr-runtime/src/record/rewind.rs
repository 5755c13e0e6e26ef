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
//!
//! A task (a call of an async function) is erased the same way ([`erase_created`]): when it ends
//! sooner than the threshold after its creation, with nothing kept since (every poll erased),
//! its creation record is the last one of the buffer and the writer steps back over it instead
//! of writing its end, back to the counters it found before the creation. A creation record
//! pins what precedes it only while it stands.

use fdr_format::{delta_of, id_field_of, is_metadata, kind_bits, meta, FnKind};

use crate::record::thread_state::ThreadState;

/// What [`erase_call`] did.
pub(crate) enum Erased {
    /// The call is erased: the new length.
    Done(u32),
    /// The call's entry is stepped over (the length and the time of the record before it), and
    /// tail-call pairs precede it: the caller finishes with [`erase_tails`], out of line.
    Tails(u32, u64),
}

/// Erases the call whose exit this is (and says when tail-call pairs it ends are to be erased
/// too). Returns `None` (nothing changed) if the last entry is not this function's: calls that
/// do not nest (a guard moved across threads, say) are kept rather than guessed at.
///
/// # Safety
/// `t.enters > 0`, so the word at `len - 1` is an entry record of the thread's own buffer, and
/// `t.tails` pairs precede the remaining entries.
#[inline(always)]
pub(crate) unsafe fn erase_call(t: &ThreadState, len: u32, id: u32) -> Option<Erased> {
    // SAFETY: `enters > 0` means the last word is this buffer's entry record.
    let entry = unsafe { t.writer.load(len - 1) };
    if entry as u32 != id | FnKind::Enter.bits() {
        return None;
    }
    let len = len - 1;
    // The entry's delta leads back to the timestamp of the record before it.
    let last = t.last_tsc.get().wrapping_sub(u64::from(delta_of(entry)));
    t.enters.set(t.enters.get() - 1);
    if t.enters.get() == 0 && t.tails.get() > 0 {
        return Some(Erased::Tails(len, last));
    }
    // With entries left, the last one's timestamp is the new `last`.
    t.last_tsc.set(last);
    t.writer.publish_undo(len);
    Some(Erased::Done(len))
}

/// Finishes an [`Erased::Tails`]: erases the tail-call pairs that the exit at `tsc` ends, if
/// short enough, and publishes the new length, which it returns.
///
/// # Safety
/// `len` and `last` are what `erase_call` answered, just before.
#[cold]
#[inline(never)]
pub(crate) unsafe fn erase_tails(t: &ThreadState, len: u32, tsc: u64, last: u64) -> u32 {
    let mut last = last;
    // SAFETY: `tails` pairs sit right below `len`, per the contract of `erase_call`.
    let len = unsafe { erase_tail_pairs(t, len, tsc, &mut last) };
    t.last_tsc.set(last);
    t.writer.publish_undo(len);
    len
}

/// # Safety
/// `t.tails` entry/tail-exit pairs end at `len`.
#[inline(always)]
unsafe fn erase_tail_pairs(t: &ThreadState, mut len: u32, tsc: u64, last: &mut u64) -> u32 {
    while t.tails.get() > 0 && len >= 2 {
        // SAFETY: per the contract, the two words below `len` are one pair of this buffer.
        let (tail, entry) = unsafe { (t.writer.load(len - 1), t.writer.load(len - 2)) };
        if is_metadata(tail)
            || kind_bits(tail) != FnKind::TailExit.bits()
            || kind_bits(entry) != FnKind::Enter.bits()
            || id_field_of(tail) != id_field_of(entry)
        {
            t.tails.set(0);
            break;
        }
        let entered = last.wrapping_sub(u64::from(delta_of(tail)));
        if tsc.wrapping_sub(entered) >= t.threshold.get() {
            t.tails.set(0);
            break;
        }
        len -= 2;
        *last = entered.wrapping_sub(u64::from(delta_of(entry)));
        t.tails.set(t.tails.get() - 1);
    }
    len
}

/// Where a task's creation record ends in its thread's buffer, and the thread's counters before
/// it: what [`erase_created`] needs to take the record back. Twelve bytes, kept in every future
/// of an instrumented `async fn`: the buffer is not in it, the record's payload (the task's
/// process-unique id) tells it apart from any other.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Created {
    /// The length right after the record.
    pub len: u32,
    pub enters: u32,
    pub tails: u32,
}

/// The words of a task's creation record: its header (two words) and its payload (two).
pub(crate) const CREATED_WORDS: u32 = 4;

/// Whether the creation record `c` may still be the last record of the thread's buffer at
/// `len`: nothing written since it (the length is the one after it) or everything since erased
/// (no entries or pairs left open after it). Checked before the clock is read for
/// [`erase_created`].
#[inline(always)]
pub(crate) fn created_is_last(t: &ThreadState, len: u32, c: &Created) -> bool {
    len == c.len && t.enters.get() == 0 && t.tails.get() == 0
}

/// Takes back the creation record of a task that ends now, if it is the last record of the
/// buffer ([`created_is_last`], which the caller checked), holds `payload`, and the task began
/// less than the threshold before `now`; returns the new length. The thread's counters are those
/// it had before the record, so the call whose poll made the task can still be erased in its
/// turn.
///
/// # Safety
/// The writer holds a buffer with at least `len` words, inside the thread's write bracket.
#[inline(always)]
pub(crate) unsafe fn erase_created(
    t: &ThreadState,
    len: u32,
    c: &Created,
    payload: [u64; 2],
    now: u64,
) -> Option<u32> {
    debug_assert!(created_is_last(t, len, c));
    // Everything since the record was erased, so `last_tsc` is its time again.
    let created = t.last_tsc.get();
    if now.wrapping_sub(created) >= t.threshold.get() {
        return None;
    }
    let at = len - CREATED_WORDS;
    // SAFETY: the buffer holds `len` words (the contract), and `len` is `c.len`, which is at
    // least the record's four. The payload holds the task's process-unique id: words that are
    // not the record (the thread is in another buffer now, or in this one again after it went
    // round the ring) do not match it.
    let words = unsafe { [0, 1, 2, 3].map(|i| t.writer.load(at + i)) };
    if [words[2], words[3]] != payload {
        return None;
    }
    let (size, delta) = meta::custom_event_fields([words[0], words[1]])?;
    if size != 16 {
        return None;
    }
    t.last_tsc
        .set(created.wrapping_sub(u64::from(delta as u32)));
    t.enters.set(c.enters);
    t.tails.set(c.tails);
    // The stable length is below the record and the entries and pairs before it: the record
    // never raised it (`controller::record_created`).
    t.writer.publish_undo(at);
    Some(at)
}
