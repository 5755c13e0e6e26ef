//! Functions with a trigger on the recording path: the record and the timing share one reading
//! of the clock, so a trigger costs no second one and the duration judged is the one the log
//! shows; an exit past its limit only hands the call to the background writer.

use fdr_format::{FnKind, ID_SHIFT};

use crate::platform::clock;
use crate::record::controller;
use crate::record::thread_local::{self, Local};
use crate::record::thread_state::BUSY;
use crate::session;
use crate::tables::flags;
use crate::tables::functions::FnDesc;
use crate::trigger::slow_calls;

use super::custom::{next_buffer, Event};
use super::profiled::logged_and_profiled;
use super::{cold, count_rest, general_rest, pack, tails_rest, unpack, Entry, USUAL};

/// A function with a trigger: recorded as any other, then timed: entries go on the thread's list
/// of open trigger calls, and an exit past the limit fires the trigger, which only hands the call
/// to the background writer. The record and the timing share one reading of the clock, so a
/// trigger costs no second one, and the duration judged is the one the log shows.
#[inline(never)]
// Only Rust calls it (slices included); `extern "C"` so that it cannot unwind, which keeps the
// recording path's call of it a jump (see `guarded_entry`).
#[allow(improper_ctypes_definitions)]
pub(super) extern "C" fn special(f: &'static FnDesc, kind: FnKind, args: &[u64]) -> Entry {
    let flags = f.flags();
    if flags & flags::TRIGGER == 0 {
        return logged_and_profiled(f, flags, kind, args);
    }
    let l = thread_local::get();
    if super::long_polls::switches_unasked(l, kind) && l.state.len.get() != BUSY {
        l.state.switches_asked.set(true);
        crate::platform::switches::watch_this_thread();
    }
    let (tsc, cpu) = clock::now();
    let entry = if flags & (flags::UNLOGGED | flags::PROFILED) != 0 {
        logged_and_profiled(f, flags, kind, args)
    } else {
        record_at(f, kind, args, tsc, cpu)
    };
    time_trigger(f, kind, tsc, cpu);
    entry
}

/// The usual event of a function with a trigger (logged, not profiled, an entry or an exit):
/// [`special`]'s work with one look at the thread for the record and the timing, inside one
/// write bracket, on the counter clock; anything else (no buffer, another clock, a thread not
/// in the recording, a record that is not the usual one) goes through [`special`] or the
/// record's own rest, then [`time_trigger`]. Compiled once per kind, so that each copy does
/// only its own half of the timing.
#[inline(always)]
pub(super) fn trigger_event(f: &'static FnDesc, kind: FnKind) -> Entry {
    let l = thread_local::get();
    if super::long_polls::switches_unasked(l, kind) {
        return super::long_polls::first_timed_entry(l, f, kind, special_entry);
    }
    let t = &l.state;
    let len = t.len.get();
    let p = l.member.session.get();
    if len >= t.writer.limit() || p.is_null() || l.member.dead.get() {
        return special(f, kind, &[]);
    }
    // SAFETY: `cpu_id` was taken by `clock::fast_cpu_id` on this thread when it joined.
    let Some((tsc, cpu)) = (unsafe { clock::fast(t.cpu_id.get()) }) else {
        return special(f, kind, &[]);
    };
    t.begin_write();
    let id = t.id_field(f);
    // The rare ways out (metadata, tail-call pairs, a call past its limit, a limit to learn)
    // go out of line and finish the write there, with their arguments in registers: the usual
    // event makes no call. Culling never takes a function with a trigger: its calls are not
    // counted towards it.
    let len = match controller::record_fast_uncounted(t, len, id, kind, tsc, cpu) {
        // Uncounted, no call asks for a cull; were one to, the record is done all the same,
        // and a function with a trigger is never culled.
        controller::Fast::Done(len) | controller::Fast::Count(len, _) => len,
        // Nothing written yet: the general path records and times it, at a clock reading of
        // its own.
        controller::Fast::General => {
            t.end_write(len);
            return special(f, kind, &[]);
        }
        controller::Fast::Tails(len, last) => {
            return trigger_tails(l, f, pack(len, id), tsc, last, cpu);
        }
    };
    // The record is in the buffer before the trigger can fire, so the window the writer copies
    // holds the call's exit.
    // SAFETY: the membership's strong count keeps the session alive.
    let s = unsafe { &*p };
    let id = id >> ID_SHIFT;
    match time_event(s, l, f, id, kind, tsc, cpu) {
        Timed::Done => {}
        Timed::Slow { start } => return timed_rest(l, pack(len, id), start, tsc, cpu),
        Timed::Recompute => return timed_rest(l, pack(len, id), 0, tsc, cpu | RECOMPUTE),
        Timed::Learn { start } => return timed_rest(l, pack(len, id), start, tsc, cpu | LEARN),
    }
    t.end_write(len);
    USUAL
}

/// What timing an event of an armed function leaves to do ([`time_event`]).
pub(super) enum Timed {
    /// Nothing: an entry, or an exit within its limit that was counted.
    Done,
    /// The call that started at `start` passed its limit: fire, then count it ([`settle`]).
    Slow { start: u64 },
    /// The call was counted and its learned limit is due to be recomputed.
    Recompute,
    /// A learned limit warms up, and the call that started at `start` lasted longer than any
    /// limit can be: it is counted by its own time, without its thread's wait for a CPU (out of
    /// line, [`settle`]), so that a busy host does not teach the limit its waits.
    Learn { start: u64 },
}

/// Times an event of armed function `f` (id `id`) at `now` on `cpu` in session `s`, inside the
/// thread's write bracket: an entry goes on the thread's open trigger calls; an exit comes off
/// and is judged against its limit, and one within it is counted towards a learned limit. What
/// is left (rare) is for [`settle`], out of line on the fast path.
#[inline(always)]
pub(super) fn time_event(
    s: &session::Session,
    l: &Local,
    f: &'static FnDesc,
    id: u32,
    kind: FnKind,
    now: u64,
    cpu: u32,
) -> Timed {
    // An async function's trigger applies to its tasks (see `task`), not to one poll; its polls
    // are timed against the long-poll limit, if they are armed for it. (A forked child's calls
    // do not come here: the fork handler clears every function's flags, the trigger's with
    // them; `settle` asks again before it fires.)
    if f.kind() == crate::FnKindTag::Async {
        if f.flags() & flags::LONG_POLL != 0 {
            super::long_polls::time_poll(s, l, id, kind, now);
        }
        return Timed::Done;
    }
    // SAFETY: the caller's session is the membership's (its strong count keeps it), and the
    // entry was set with it, to one of its registry's entries (`attach::join`).
    let thread = unsafe { &*l.member.entry.get() };
    let Some(end) = s.triggers().time_call(thread, id, kind, now) else {
        return Timed::Done;
    };
    if end.slow {
        return Timed::Slow { start: end.start };
    }
    let Some(learned) = end.learned else {
        return Timed::Done;
    };
    let d = now.wrapping_sub(end.start);
    let warming = end.limit == slow_calls::LEARNING;
    if warming && d > s.triggers().floor() {
        return Timed::Learn { start: end.start };
    }
    if learned.count_call(d, cpu, now, warming) {
        Timed::Recompute
    } else {
        Timed::Done
    }
}

/// Does what [`time_event`] left for an exit of function `id` at `now` on `cpu`: fires the
/// trigger of a call past its limit and counts it, or recomputes the learned limit.
#[inline(always)]
pub(super) fn settle(s: &session::Session, l: &Local, id: u32, timed: Timed, now: u64, cpu: u32) {
    match timed {
        Timed::Done => {}
        Timed::Slow { start } => {
            let mut own = now.wrapping_sub(start);
            if s.in_this_process() {
                // SAFETY: as in `time_event`, which closed the call.
                let mark = unsafe { &*l.member.entry.get() }.closed_mark(start);
                own = s.slow_call(id, l.member.key.get(), start, now, mark);
            }
            // A learned limit learns the function's own time: what its thread waited for a CPU
            // is the host's (see `cpu_wait`).
            s.triggers().observe(id, own, cpu, now);
        }
        Timed::Recompute => s.triggers().recompute(id, now),
        Timed::Learn { start } => {
            let hz = s.setup().calibration.ticks_per_second;
            let d = now.wrapping_sub(start);
            let own = match crate::trigger::cpu_wait::over_call(start, now, hz) {
                Some(w) => d.saturating_sub(fdr_format::units::ns_to_ticks(w.cpu_wait_ns, hz)),
                None => d,
            };
            s.triggers().observe(id, own, cpu, now);
        }
    }
}

/// [`special`] for an event without arguments.
fn special_entry(f: &'static FnDesc, kind: FnKind) -> Entry {
    special(f, kind, &[])
}

/// [`trigger_event`] for an entry.
#[inline(never)]
pub(super) extern "C" fn trigger_enter(f: &'static FnDesc) -> Entry {
    trigger_event(f, FnKind::Enter)
}

/// [`trigger_event`] for an exit.
#[inline(never)]
pub(super) extern "C" fn trigger_exit(f: &'static FnDesc) -> Entry {
    trigger_event(f, FnKind::Exit)
}

/// Set in [`timed_rest`]'s `cpu` when the call was counted and its learned limit is due,
/// rather than past its limit. CPU numbers are 12 bits.
pub(super) const RECOMPUTE: u32 = 1 << 31;

/// Set in [`timed_rest`]'s `cpu` for a call a warming learned limit counts by its own time
/// ([`Timed::Learn`]).
pub(super) const LEARN: u32 = 1 << 30;

/// The end of [`trigger_event`]'s exit (of function `id`, with the buffer at `len`, packed as
/// `len_id`) when timing it left more to do than count the call: [`settle`] a call past its
/// limit that started at `start`, or the learned limit's recompute (`RECOMPUTE`
/// in `cpu`), its arguments in registers rather than a [`Timed`] in memory. Then closes the
/// write bracket.
#[cold]
#[inline(never)]
pub(super) fn timed_rest(l: &Local, len_id: u64, start: u64, now: u64, cpu: u32) -> Entry {
    let (len, id) = unpack(len_id);
    let p = l.member.session.get();
    // SAFETY: the membership's strong count keeps the session alive (the caller checked it).
    let s = unsafe { &*p };
    let timed = if cpu & RECOMPUTE != 0 {
        Timed::Recompute
    } else if cpu & LEARN != 0 {
        Timed::Learn { start }
    } else {
        Timed::Slow { start }
    };
    settle(s, l, id, timed, now, cpu & !(RECOMPUTE | LEARN));
    l.state.end_write(len);
    USUAL
}

/// The end of [`trigger_event`] for an exit whose erase reached tail-call pairs (the buffer at
/// `len`, the id field `id`, packed as `len_id`; the time before them `last`): erases them,
/// then times the exit.
#[cold]
#[inline(never)]
pub(super) fn trigger_tails(
    l: &Local,
    f: &'static FnDesc,
    len_id: u64,
    tsc: u64,
    last: u64,
    cpu: u32,
) -> Entry {
    let (len, id) = unpack(len_id);
    tails_rest(l, len, id, tsc, last);
    time_trigger(f, FnKind::Exit, tsc, cpu);
    USUAL
}

/// [`record_one`](super::record_one) (or [`record_args_one`](super::record_args_one)) at a time the
/// caller read.
#[inline(always)]
pub(super) fn record_at(
    f: &'static FnDesc,
    kind: FnKind,
    args: &[u64],
    tsc: u64,
    cpu: u32,
) -> Entry {
    let l = thread_local::get();
    let t = &l.state;
    let len = t.len.get();
    if len >= t.writer.limit() {
        return cold(l, f, kind, args, false);
    }
    t.begin_write();
    let id = t.id_field(f);
    if kind == FnKind::EnterArgs {
        let len = match controller::record_args(t, len, id, tsc, cpu, args) {
            Some(len) => len,
            None => next_buffer(l, len, tsc, cpu, Event::Call { id, kind, args }),
        };
        t.end_write(len);
        return USUAL;
    }
    match controller::record_fast(t, len, id, kind, tsc, cpu) {
        controller::Fast::Done(len) => {
            t.end_write(len);
            USUAL
        }
        controller::Fast::General => general_rest(l, len, id, kind, tsc, cpu),
        controller::Fast::Count(len, kept) => count_rest(l, len, id, kept, tsc),
        controller::Fast::Tails(len, last) => tails_rest(l, len, id, tsc, last),
    }
}

/// Times an event of armed function `f` at `now` (see [`special`]).
#[inline(always)]
pub(super) fn time_trigger(f: &'static FnDesc, kind: FnKind, now: u64, cpu: u32) {
    let l = thread_local::get();
    let t = &l.state;
    let len = t.len.get();
    let p = l.member.session.get();
    if len == BUSY || l.member.dead.get() || p.is_null() {
        return;
    }
    t.begin_write();
    // SAFETY: the membership's strong count keeps the session alive.
    let s = unsafe { &*p };
    let id = t.id_field(f) >> ID_SHIFT;
    let timed = time_event(s, l, f, id, kind, now, cpu);
    settle(s, l, id, timed, now, cpu);
    t.end_write(len);
}
