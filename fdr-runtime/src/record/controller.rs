//! What to write for each event: the policy over the record writer (as XRay's FDR controller is
//! over its log writer).
//!
//! An entry appends a record. An exit within the threshold of its entry, with nothing kept since,
//! erases the call instead (`rewind`). A CPU change or a delta past 32 bits puts a metadata record
//! first, and a rewind never reaches back across it. An entry with arguments is never erased.
//!
//! The controller takes the time and CPU as arguments and writes into whatever buffer the state's
//! writer holds, so tests drive it on a plain buffer with the timestamps they choose. It never
//! takes a buffer: when the current one has no room it answers `None`, and the caller (the hot
//! path) gets a fresh buffer and asks once more. Nothing here loops or recurses.

use fdr_format::{cull_payload, function_word, meta, CullKind, FnKind, ID_SHIFT};

use crate::record::thread_state::ThreadState;
use crate::{record::cull, record::rewind};

/// What [`record_fast`] did.
pub(crate) enum Fast {
    /// Written (or erased): the new length.
    Done(u32),
    /// Nothing done: the event needs a metadata record first (a CPU change or a delta past 32
    /// bits), which [`record`] writes.
    General,
    /// Written (or erased, the second field false; kept, true), the new length is the first
    /// field, and counting the call for culling needs more than the thread's own slot:
    /// [`count_out`] is due (it adds to the function's run, and may cull, or restore it after
    /// a probe).
    Count(u32, bool),
    /// The call's entry was stepped over (the length and the time of the record before it, the
    /// fields) and the tail-call pairs before it are to be erased too: [`finish_tails`] is due.
    Tails(u32, u64),
}

/// The end of an erase that reached tail-call pairs (see [`Fast::Tails`]): erases them, counts
/// the erased call for culling. Returns the new length.
#[cold]
#[inline(never)]
pub(crate) fn finish_tails(t: &ThreadState, len: u32, id: u32, tsc: u64, last: u64) -> u32 {
    // SAFETY: `len` and `last` are what `erase_call` just answered.
    let len = unsafe { rewind::erase_tails(t, len, tsc, last) };
    if t.cull_on.get() {
        if let Some(run) = cull::erased(t, id) {
            return cull_now(t, len, id, run, tsc);
        }
    }
    len
}

/// The end of a call counted for culling out of line (see [`Fast::Count`]): settles the count
/// of an erased call or a `kept` one with the function's run, culls or restores the function
/// when that is due. Returns the new length.
#[cold]
#[inline(never)]
pub(crate) fn count_out(t: &ThreadState, len: u32, id: u32, kept: bool, tsc: u64) -> u32 {
    let run = if kept {
        cull::kept_out(t, id).then_some(cull::RESTORE)
    } else {
        cull::erased_out(t, id)
    };
    match run {
        Some(run) => cull_now(t, len, id, run, tsc),
        None => len,
    }
}

/// The common case of [`record`], with no call in it: same CPU, a delta that fits, one word.
/// What it cannot do it hands back, untouched, so that the hot path can finish out of line.
///
/// The caller has checked `len < limit`, which is room for one word, and `kind` is not an entry
/// with arguments.
#[inline(always)]
pub(crate) fn record_fast(
    t: &ThreadState,
    len: u32,
    id: u32,
    kind: FnKind,
    tsc: u64,
    cpu: u32,
) -> Fast {
    record_fast_with::<true>(t, len, id, kind, tsc, cpu)
}

/// [`record_fast`] for a function culling never takes (one with a trigger): its calls are not
/// counted towards a cull, which is work for nothing.
#[inline(always)]
pub(crate) fn record_fast_uncounted(
    t: &ThreadState,
    len: u32,
    id: u32,
    kind: FnKind,
    tsc: u64,
    cpu: u32,
) -> Fast {
    record_fast_with::<false>(t, len, id, kind, tsc, cpu)
}

/// [`record_fast`], counting erased and kept calls for culling when `CULL` and culling is on.
#[inline(always)]
fn record_fast_with<const CULL: bool>(
    t: &ThreadState,
    len: u32,
    id: u32,
    kind: FnKind,
    tsc: u64,
    cpu: u32,
) -> Fast {
    let delta = tsc.wrapping_sub(t.last_tsc.get());
    if cpu != t.cpu.get() || delta > u64::from(u32::MAX) {
        return Fast::General;
    }
    // SAFETY: the caller checked room for one word.
    match unsafe { write_one::<CULL>(t, len, id, kind, tsc, delta as u32) } {
        Written::Done(len) => Fast::Done(len),
        Written::Count(len, kept) => Fast::Count(len, kept),
        Written::Tails(len, last) => Fast::Tails(len, last),
    }
}

/// What [`write_one`] did.
enum Written {
    /// The new length.
    Done(u32),
    /// Written or erased, and counted out of line: see [`Fast::Count`].
    Count(u32, bool),
    /// Half erased: see [`Fast::Tails`].
    Tails(u32, u64),
}

/// Records a function event with no arguments. Returns the new length, or `None` when the buffer
/// has no room for it (with whatever metadata it needs).
///
/// The caller has checked `len < limit`, which is room for one word.
pub(crate) fn record(
    t: &ThreadState,
    len: u32,
    id: u32,
    kind: FnKind,
    tsc: u64,
    cpu: u32,
) -> Option<u32> {
    if kind == FnKind::EnterArgs {
        return write_general(t, len, id, kind, tsc, cpu, &[]);
    }
    match record_fast(t, len, id, kind, tsc, cpu) {
        Fast::Done(len) => Some(len),
        Fast::General => write_general(t, len, id, kind, tsc, cpu, &[]),
        Fast::Count(len, kept) => Some(count_out(t, len, id, kept, tsc)),
        Fast::Tails(len, last) => Some(finish_tails(t, len, id, tsc, last)),
    }
}

/// Records an entry with its arguments, one call-argument record each.
#[inline(always)]
pub(crate) fn record_args(
    t: &ThreadState,
    len: u32,
    id: u32,
    tsc: u64,
    cpu: u32,
    args: &[u64],
) -> Option<u32> {
    let delta = tsc.wrapping_sub(t.last_tsc.get());
    let need = 1 + 2 * args.len() as u64;
    if cpu == t.cpu.get()
        && delta <= u64::from(u32::MAX)
        && u64::from(len) + need <= u64::from(t.writer.limit())
    {
        // SAFETY: room for the entry and its arguments was checked just above.
        Some(unsafe { write_args(t, len, id, delta as u32, tsc, args) })
    } else {
        write_general(t, len, id, FnKind::EnterArgs, tsc, cpu, args)
    }
}

/// Either of the above, by whether there are arguments.
pub(crate) fn record_any(
    t: &ThreadState,
    len: u32,
    id: u32,
    kind: FnKind,
    tsc: u64,
    cpu: u32,
    args: &[u64],
) -> Option<u32> {
    if kind == FnKind::EnterArgs {
        record_args(t, len, id, tsc, cpu, args)
    } else if len < t.writer.limit() {
        record(t, len, id, kind, tsc, cpu)
    } else {
        None
    }
}

/// A function's calls were erased `run` times in a row: cull it, with its event in the log (with
/// no room for the event, it is culled at a later erased call instead). A run past
/// [`cull::PROBE`] counts a probe's short calls: the [`cull::PROBE_CALLS`]-th culls again, with
/// no event (nothing changed). [`cull::RESTORE`] is a probe's call that was kept: the function
/// is restored, with its event.
#[cold]
#[inline(never)]
pub(crate) fn cull_now(t: &ThreadState, len: u32, id: u32, run: u32, tsc: u64) -> u32 {
    if run == cull::RESTORE {
        if cull::restorable(t, id).is_none() {
            return len;
        }
        let payload = cull_payload(CullKind::Restored, id >> ID_SHIFT, 0);
        return record_custom(t, len, &payload, tsc, t.cpu.get()).unwrap_or(len);
    }
    if run >= cull::PROBE {
        // A probe's calls, all short so far: the last of them culls again, with no event.
        if run - cull::PROBE >= cull::PROBE_CALLS {
            if let Some(f) = cull::candidate(t, id) {
                cull::cull(f);
            }
        }
        return len;
    }
    let Some(f) = cull::candidate(t, id) else {
        return len;
    };
    let payload = cull_payload(CullKind::Culled, id >> ID_SHIFT, u64::from(run));
    match record_custom(t, len, &payload, tsc, t.cpu.get()) {
        Some(len) => {
            cull::cull(f);
            len
        }
        None => len,
    }
}

/// Makes room for a record of `words` words whose delta field holds at most `max_delta`: checks
/// the buffer has room for it, and for a `NewCPUId` (the CPU changed) or `TSCWrap` (the delta
/// does not fit) first, which it writes. Returns where the record goes and its delta, or `None`
/// without room. A rewind never reaches across the metadata.
#[inline(always)]
fn prepare(
    t: &ThreadState,
    len: u32,
    words: u64,
    max_delta: u64,
    tsc: u64,
    cpu: u32,
) -> Option<(u32, u64)> {
    let w = &t.writer;
    let delta = tsc.wrapping_sub(t.last_tsc.get());
    let need_meta = cpu != t.cpu.get() || delta > max_delta;
    let need = words + if need_meta { 2 } else { 0 };
    if !w.has_buffer() || u64::from(len) + need > u64::from(w.limit()) {
        return None;
    }
    if !need_meta {
        return Some((len, delta));
    }
    let m = if cpu != t.cpu.get() {
        meta::new_cpu_id(cpu as u16, tsc)
    } else {
        meta::tsc_wrap(tsc)
    };
    // SAFETY: room for the metadata and the record was checked above.
    unsafe { w.store_meta(len, m) };
    t.begin_block(len + 2, cpu, tsc);
    Some((len + 2, 0))
}

/// Records a custom event whose payload is `payload` (two words: a task or cull event; four:
/// a link event): its header and the payload. Like any record that is not a function entry or
/// exit, it pins what came before (a rewind never reaches across it).
#[inline(always)]
pub(crate) fn record_custom(
    t: &ThreadState,
    len: u32,
    payload: &[u64],
    tsc: u64,
    cpu: u32,
) -> Option<u32> {
    let len = write_custom(t, len, payload, tsc, cpu)?;
    t.begin_block(len, cpu, tsc);
    Some(len)
}

/// Records custom events of one moment one after the other (a kept poll's event and the
/// completion it brings): one preparation for them all (the CPU, the delta, the room), the
/// first header carrying the delta and the others none, the thread's state set once.
#[inline(always)]
pub(crate) fn record_customs<const N: usize>(
    t: &ThreadState,
    len: u32,
    payloads: [&[u64]; N],
    tsc: u64,
    cpu: u32,
) -> Option<u32> {
    let words: u64 = payloads.iter().map(|p| 2 + p.len() as u64).sum();
    // A custom event's delta is a signed 32-bit field.
    let (mut len, mut delta) = prepare(t, len, words, i32::MAX as u64, tsc, cpu)?;
    for payload in payloads {
        let header = meta::custom_event((payload.len() * 8) as i32, delta as i32);
        // SAFETY: `prepare` checked room for every header and payload.
        unsafe { t.writer.store_record(len, header, payload) };
        len += 2 + payload.len() as u32;
        delta = 0;
    }
    t.begin_block(len, cpu, tsc);
    Some(len)
}

/// A task's creation record: a custom event like [`record_custom`]'s, but published without
/// raising the stable length, since a task that ends short takes it back
/// ([`rewind::erase_created`]): a snapshot that races that undo falls back to a stable length
/// still below the record. It pins what precedes it all the same while it stands.
#[inline(always)]
pub(crate) fn record_created(
    t: &ThreadState,
    len: u32,
    payload: &[u64],
    tsc: u64,
    cpu: u32,
) -> Option<u32> {
    let len = write_custom(t, len, payload, tsc, cpu)?;
    t.cpu.set(cpu);
    t.last_tsc.set(tsc);
    t.enters.set(0);
    t.tails.set(0);
    t.writer.publish(len);
    Some(len)
}

/// [`record_created`] in the usual case only: the same CPU, a delta that fits, room for the
/// four words. `None` (nothing written) otherwise.
#[inline(always)]
pub(crate) fn record_created_usual(
    t: &ThreadState,
    len: u32,
    payload: [u64; 2],
    tsc: u64,
    cpu: u32,
) -> Option<u32> {
    let delta = tsc.wrapping_sub(t.last_tsc.get());
    let end = len + rewind::CREATED_WORDS;
    if cpu != t.cpu.get() || delta > i32::MAX as u64 || end > t.writer.limit() {
        return None;
    }
    let header = meta::custom_event(16, delta as i32);
    // SAFETY: below its limit the writer holds a buffer (a limit is 0 without one), with room
    // for the four words (checked above).
    unsafe { t.writer.store_record(len, header, &payload) };
    t.last_tsc.set(tsc);
    t.enters.set(0);
    t.tails.set(0);
    t.writer.publish(end);
    Some(end)
}

/// Writes a custom event (after the metadata it needs first); returns the new length.
#[inline(always)]
fn write_custom(t: &ThreadState, len: u32, payload: &[u64], tsc: u64, cpu: u32) -> Option<u32> {
    let words = payload.len() as u32;
    // A custom event's delta is a signed 32-bit field.
    let (len, delta) = prepare(t, len, u64::from(2 + words), i32::MAX as u64, tsc, cpu)?;
    let header = meta::custom_event((words * 8) as i32, delta as i32);
    // SAFETY: `prepare` checked room for the header's two words and the payload's.
    unsafe { t.writer.store_record(len, header, payload) };
    Some(len + 2 + words)
}

/// The common case: same CPU, the delta fits, one word of room.
///
/// # Safety
/// The writer holds a buffer with room for one more word at `len`.
#[inline(always)]
unsafe fn write_one<const CULL: bool>(
    t: &ThreadState,
    len: u32,
    id: u32,
    kind: FnKind,
    tsc: u64,
    delta: u32,
) -> Written {
    let w = &t.writer;
    match kind {
        FnKind::Exit => {
            // With entries at the end, the last record is the last entry: `last_tsc` is its time.
            if t.enters.get() > 0 && tsc.wrapping_sub(t.last_tsc.get()) < t.threshold.get() {
                // SAFETY: enters > 0 means the words being rewound are this buffer's.
                if let Some(erased) = unsafe { rewind::erase_call(t, len, id) } {
                    let new_len = match erased {
                        rewind::Erased::Done(len) => len,
                        rewind::Erased::Tails(len, last) => return Written::Tails(len, last),
                    };
                    if CULL && t.cull_on.get() && !cull::erased_inline(t, id) {
                        return Written::Count(new_len, false);
                    }
                    return Written::Done(new_len);
                }
            }
            let settle = CULL && t.cull_on.get() && !cull::kept_settled(t, id);
            // SAFETY: forwarded contract.
            unsafe { w.store(len, function_word(id, FnKind::Exit, delta)) };
            // Once an exit is kept, nothing before it can be erased.
            w.publish_stable(len + 1);
            t.enters.set(0);
            t.tails.set(0);
            if settle {
                // Out of line: a run to take the kept call off, or a probe's call that reached
                // the threshold, whose function is restored.
                t.last_tsc.set(tsc);
                return Written::Count(len + 1, true);
            }
        }
        FnKind::TailExit => {
            // SAFETY: forwarded contract.
            unsafe { w.store(len, function_word(id, FnKind::TailExit, delta)) };
            // A tail exit right after its own entry (everything since erased) may go together
            // with that entry when the tail-called function returns quickly; anything else pins
            // it.
            if t.enters.get() > 0 {
                t.tails.set(t.tails.get() + 1);
                w.publish(len + 1);
            } else {
                t.tails.set(0);
                w.publish_stable(len + 1);
            }
            t.enters.set(0);
        }
        // Entries (with arguments, the caller sends them elsewhere).
        _ => {
            // SAFETY: forwarded contract.
            unsafe { w.store(len, function_word(id, FnKind::Enter, delta)) };
            w.publish(len + 1);
            t.enters.set(t.enters.get() + 1);
        }
    }
    t.last_tsc.set(tsc);
    Written::Done(len + 1)
}

/// # Safety
/// The writer holds a buffer with room for `1 + 2 * args.len()` words at `len`.
#[inline(always)]
unsafe fn write_args(
    t: &ThreadState,
    len: u32,
    id: u32,
    delta: u32,
    tsc: u64,
    args: &[u64],
) -> u32 {
    let w = &t.writer;
    // SAFETY: forwarded contract.
    unsafe {
        w.store(len, function_word(id, FnKind::EnterArgs, delta));
        for (i, &a) in args.iter().enumerate() {
            w.store_meta(len + 1 + 2 * i as u32, meta::call_argument(a));
        }
    }
    let len = len + 1 + 2 * args.len() as u32;
    // Calls with logged arguments are never erased.
    w.publish_stable(len);
    t.last_tsc.set(tsc);
    t.enters.set(0);
    t.tails.set(0);
    len
}

/// A CPU change or a timestamp jump (a metadata record first), arguments, or a record that may
/// not fit.
#[cold]
#[inline(never)]
fn write_general(
    t: &ThreadState,
    len: u32,
    id: u32,
    kind: FnKind,
    tsc: u64,
    cpu: u32,
    args: &[u64],
) -> Option<u32> {
    let words = 1 + 2 * args.len() as u64;
    let (len, delta) = prepare(t, len, words, u64::from(u32::MAX), tsc, cpu)?;
    Some(if kind == FnKind::EnterArgs {
        // SAFETY: `prepare` checked room for 1 + 2 * args words.
        unsafe { write_args(t, len, id, delta as u32, tsc, args) }
    } else {
        // SAFETY: `prepare` checked room for one more word.
        match unsafe { write_one::<true>(t, len, id, kind, tsc, delta as u32) } {
            Written::Done(len) => len,
            Written::Count(len, kept) => count_out(t, len, id, kept, tsc),
            Written::Tails(len, last) => finish_tails(t, len, id, tsc, last),
        }
    })
}
