//! Long polls on the recording path: a poll of an async function armed for them
//! (`flags::LONG_POLL`) goes on its thread's open trigger calls as its entry is recorded, where
//! the watchdog sees it run, and comes off as its exit is; one that lasted longer than the
//! long-poll limit fires.
//!
//! A poll does not open its thread's ring of context switches (`platform::switches`), which a
//! call of a function with a trigger does: the kernel writes a record into it at every switch
//! of the thread, and an executor's workers switch at every wait for the network (on
//! `kv_service`, the rings cost 5 to 8 % of the server's CPU a request and 12 % of its p99:
//! `benches/README.md`, "A cost budget"). A long poll says where its time went from the ring
//! when its thread has one (it also runs trigger calls), else from the watchdog's marks
//! (`trigger::cpu_wait`), as where the kernel refuses rings.
//!
//! The timing shares the record's look at the thread and its clock reading: a poll's entry and
//! exit are each one pass, as a trigger's are (see `trigger_timing`). A poll that does not take
//! the fast path (no buffer yet, another clock, a metadata record first) is recorded the usual
//! way and timed by the time of the record just written, its thread's last.

use fdr_format::{FnKind, ID_SHIFT};

use crate::platform::{clock, host};
use crate::record::controller;
use crate::record::thread_local::{self, Local};
use crate::record::thread_state::BUSY;
use crate::session;
use crate::tables::functions::FnDesc;

use super::{count_rest, record_one, tails_rest, Entry, USUAL};

/// The entry of a poll of `f` (armed for long polls, no trigger of its own).
#[inline(never)]
pub(super) extern "C" fn poll_enter(f: &'static FnDesc) -> Entry {
    poll_event(f, FnKind::Enter)
}

/// The exit of a poll of `f` (armed for long polls, no trigger of its own).
#[inline(never)]
pub(super) extern "C" fn poll_exit(f: &'static FnDesc) -> Entry {
    poll_event(f, FnKind::Exit)
}

/// [`poll_enter`] and [`poll_exit`]: the record, then the timing, in one write bracket.
#[inline(always)]
fn poll_event(f: &'static FnDesc, kind: FnKind) -> Entry {
    let l = thread_local::get();
    let t = &l.state;
    let len = t.len.get();
    let p = l.member.session.get();
    if len >= t.writer.limit() || p.is_null() || l.member.dead.get() {
        return poll_any_path(f, kind);
    }
    // SAFETY: `cpu_id` was taken by `clock::fast_cpu_id` on this thread when it joined.
    let Some((tsc, cpu)) = (unsafe { clock::fast(t.cpu_id.get()) }) else {
        return poll_any_path(f, kind);
    };
    t.begin_write();
    let id = t.id_field(f);
    let fast = controller::record_fast(t, len, id, kind, tsc, cpu);
    if let controller::Fast::General = fast {
        // Nothing written yet.
        t.end_write(len);
        return poll_any_path(f, kind);
    }
    // SAFETY: the membership's strong count keeps the session alive (checked above).
    time_poll(unsafe { &*p }, l, id >> ID_SHIFT, kind, tsc);
    match fast {
        controller::Fast::Done(len) => {
            t.end_write(len);
            USUAL
        }
        controller::Fast::Count(len, kept) => count_rest(l, len, id, kept, tsc),
        controller::Fast::Tails(len, last) => tails_rest(l, len, id, tsc, last),
        controller::Fast::General => unreachable!("handled above"),
    }
}

/// A poll's event off the fast path: recorded the usual way, then timed by the time of the
/// record just written.
#[cold]
#[inline(never)]
fn poll_any_path(f: &'static FnDesc, kind: FnKind) -> Entry {
    let entry = record_one(f, kind, false);
    if entry == USUAL {
        poll_timed_after(f, kind);
    }
    entry
}

/// Times a poll's event of `f` whose record is its thread's last: for an event recorded by a
/// path that does not time it itself (an entry with arguments, a cold path).
#[cold]
#[inline(never)]
pub(super) fn poll_timed_after(f: &'static FnDesc, kind: FnKind) {
    let l = thread_local::get();
    let t = &l.state;
    let len = t.len.get();
    let p = l.member.session.get();
    if len == BUSY || p.is_null() || l.member.entry.get().is_null() || l.member.dead.get() {
        return;
    }
    t.begin_write();
    // SAFETY: the membership's strong count keeps the session alive.
    let s = unsafe { &*p };
    time_poll(s, l, t.id_field(f) >> ID_SHIFT, kind, t.last_tsc.get());
    t.end_write(len);
}

/// Times an event of a poll of function `id` at `now`, inside the thread's write bracket: an
/// entry goes on the thread's open trigger calls; an exit comes off and is judged against the
/// long-poll limit, unless the watchdog reported it while it ran.
#[inline(always)]
pub(super) fn time_poll(s: &session::Session, l: &Local, id: u32, kind: FnKind, now: u64) {
    // SAFETY: the caller's session is the membership's (its strong count keeps it), and the
    // entry was set with it, to one of its registry's entries (`attach::join`).
    let thread = unsafe { &*l.member.entry.get() };
    if kind.is_entry() {
        // Whether the poll runs inside another timed call (a poll that awaits it) or is its
        // thread's outermost (a task's root, polled by the executor): the cost budget never
        // stops timing an outermost one.
        let depth = thread.open_call(id, now);
        let index = id.wrapping_sub(1) as usize;
        if let Some(f) = l.state.functions.get().get(index) {
            f.note_placement(depth == 0);
        }
        return;
    }
    let Some((open, start)) = thread.close_call() else {
        return;
    };
    let limit = s.triggers().long_poll();
    if open == id && limit != 0 && now.wrapping_sub(start) > limit {
        fire(s, id, start, now);
    }
}

/// Whether the thread has yet to ask for its context-switch records, which a call past its
/// limit reads to say where its time went (`cpu_wait::over_call`): the entry of a timed call
/// asks first ([`first_timed_entry`]), out of line, so that the usual entry makes no call.
#[inline(always)]
pub(super) fn switches_unasked(l: &Local, kind: FnKind) -> bool {
    kind.is_entry() && !l.state.switches_asked.get()
}

/// Asks for the thread's context-switch records (before the entry of `f` that found them not
/// asked for, which they then cover), then records that entry as `then` does.
#[cold]
#[inline(never)]
pub(super) fn first_timed_entry(
    l: &Local,
    f: &'static FnDesc,
    kind: FnKind,
    then: fn(&'static FnDesc, FnKind) -> Entry,
) -> Entry {
    l.state.switches_asked.set(true);
    crate::platform::switches::watch_this_thread();
    then(f, kind)
}

/// A poll of function `id` that began at `start` ended at `now`, past the long-poll limit.
#[cold]
#[inline(never)]
fn fire(s: &session::Session, id: u32, start: u64, now: u64) {
    s.long_poll(false, id, host::thread_id(), start, now);
}
