//! The path every hook takes: check that a recorder may be running, bracket the write, read the
//! clock, hand the event to the controller. What does not fit that (no buffer yet, a full buffer,
//! joining or leaving a recording) is the cold path, out of line.
//!
//! Function events are here; each other concept of the path has its file: async tasks
//! (`tasks`), custom events and taking the next buffer (`custom`), the timing of functions with
//! a trigger (`trigger_timing`) and of polls against the long-poll limit (`long_polls`), the
//! profile's path (`profiled`).
//!
//! The fast path is one thread-local access, one bounds check against the buffer's published
//! limit, one timestamp read and one 8-byte store, plus the bookkeeping the rewind needs.
//!
//! # What a call shares with other cores
//!
//! A store to a line another core also writes costs the line's trip between the cores, on every
//! call that makes it: on a server whose cores all run one handler, the whole call. So a call
//! writes only memory of its own thread or CPU, and reads shared memory that changes rarely:
//!
//! | configuration | reads (shared, rarely written) | writes |
//! |---|---|---|
//! | every call | the descriptor's flags; the process state | the thread-local; the thread's buffer and its slot |
//! | culling (the default) | the function's run, once per 128 erased calls | the thread's table of counts; the run, once per 128 erased calls of the thread, or when a kept call finds it not 0 |
//! | a trigger | its limit | the thread's registry entry (its open calls); the CPU's shard of a learned limit's histogram; the mailbox, when it fires (the thread's context-switch ring is the kernel's to write, at each switch, and read only at the end of a call past its limit) |
//! | profile mode | | the thread's call trie |
//! | async tasks | the long-poll limit | the thread's batch of task ids (a shared counter once per 4,096 tasks); the thread's registry entry (a poll's open call, while a long-poll limit is set); for a task with a trigger, its entry in the open tasks' table |
//!
//! Changes to the shared lines are rare by construction: a cull, a probe or a restore writes the
//! flags once; a learned limit moves every 64 calls of its function at first, then every
//! sixteenth of its calls so far (at most every 4,096); a thread takes a new
//! buffer from the pool's queue when its buffer fills (every 2,000 records or so), and counts a
//! buffer it is the first to use in the pool's count of them (waking the writer to reserve
//! more once per half megabyte of them, in a crash box). The `cores`
//! bench (`benches/`) times two cores in one function against two in their own, in each of these
//! configurations.

use fdr_format::FnKind;

use crate::record::hook_call;
use crate::record::thread_local::{self, Local};
use crate::record::thread_state::{ThreadState, BUSY};
use crate::tables::functions::FnDesc;
use crate::{platform::clock, record::attach, record::controller, session, tables::flags};

mod custom;
mod long_polls;
mod profiled;
mod tasks;
mod trigger_timing;

pub(crate) use custom::When;
use custom::{next_buffer, Event};
use long_polls::{poll_enter, poll_exit, poll_timed_after};
use profiled::profile_event;
pub(crate) use tasks::{
    erase_created, poll_kept, poll_mark, record_await, record_created, record_link, record_polled,
    record_task, record_woken, PollMark,
};
use trigger_timing::{special, trigger_enter, trigger_exit};

/// Records one function event.
///
/// Inlined into every instrumented function is only the check that a recorder may be running;
/// the recording itself is out of line, so an instrumented function without a recorder keeps
/// a small frame (no registers saved for a body it does not run).
#[inline(always)]
pub(crate) fn record(f: &'static FnDesc, kind: FnKind) {
    if session::may_record() {
        record_event(f, kind);
    }
}

/// [`record`] past the gate: the recording path, which finds out itself whether it records.
#[inline(always)]
fn record_event(f: &'static FnDesc, kind: FnKind) -> Entry {
    match kind {
        FnKind::Enter => record_kind::<{ FnKind::Enter as u8 }>(f),
        FnKind::Exit => record_kind::<{ FnKind::Exit as u8 }>(f),
        FnKind::TailExit => record_kind::<{ FnKind::TailExit as u8 }>(f),
        FnKind::EnterArgs => record_kind::<{ FnKind::EnterArgs as u8 }>(f),
    }
}

/// What a call's guard remembers of its entry: [`USUAL`] or [`SKIPPED`].
pub(crate) type Entry = u64;
/// The entry was recorded the usual way: so is the exit.
pub(crate) const USUAL: Entry = 0;
/// The entry was not recorded (no recorder was running, the function was culled, the thread could
/// not join): neither is the exit.
pub(crate) const SKIPPED: Entry = 1;

/// Records the entry of a call whose guard keeps the answer for [`exit_guarded`]. All it needs
/// to know is in the descriptor's flags, read once: without a recorder (the gate's `OFF`) or
/// for a culled function (`CULLED`) the hook is that load, one test and a branch, inline: no
/// call, no clock, nothing written. The recording path looks at the trigger flag out of line,
/// which keeps the inlined part small enough for small functions to stay inlined.
#[inline(always)]
pub(crate) fn enter_guarded(f: &'static FnDesc) -> Entry {
    if skips(f) {
        return SKIPPED;
    }
    call_entry(f)
}

/// Whether a guarded entry of `f` now would record nothing: no recorder runs, or `f` is culled
/// or untimed by the budget.
#[inline(always)]
pub(crate) fn skips(f: &'static FnDesc) -> bool {
    f.flags() & flags::UNTIMED != 0
}

/// Records the exit of a call entered through [`enter_guarded`], exactly when its entry was: a
/// call entered without a recorder records no exit, whatever starts meanwhile, and one entered
/// with a recorder goes straight to the recording path, which (like any hook that passed the
/// gate just before the recording ended) finds out there whether it still records. So the exit
/// of a call that recorded nothing is one compare, without reading the gate again.
#[inline(always)]
pub(crate) fn exit_guarded(f: &'static FnDesc, entry: Entry, kind: FnKind) {
    if entry == SKIPPED {
        return;
    }
    match kind {
        FnKind::Exit => call_exit(f),
        _ => record_event(f, kind),
    };
}

// The guard's hooks call out of line at one place each, so that what is inlined into every
// instrumented function stays small: a small function stays small enough to be inlined itself.
// The call keeps the registers that carry the function's arguments and looks to the compiler
// like no call at all (see `hook_call`).
hook_call::preserving_call!(fn call_entry(&'static FnDesc) -> Entry = guarded_entry);
hook_call::preserving_call!(fn call_exit(&'static FnDesc) -> Entry = guarded_exit);

/// The recording path of a guarded entry: the entry of a function with a trigger, or a usual
/// one. A function culled since the caller looked is recorded as any other.
///
/// The functions it and [`guarded_exit`] hand their rest to ([`cold`], [`general_rest`],
/// [`special`], ...) are `extern "C"` too: a call from a function that must not unwind to one
/// that may needs a landing pad (the abort), and a call with a landing pad is never a jump. To
/// callees that cannot unwind, the hand-offs are tail calls, and the fast path keeps no frame
/// for them (6 instructions fewer a recorded call in the hot-path bench).
#[inline(never)]
extern "C" fn guarded_entry(f: &'static FnDesc) -> Entry {
    let flags = f.flags();
    if flags & (SPECIAL | flags::LONG_POLL) != 0 {
        if flags & SPECIAL == 0 {
            return poll_enter(f);
        }
        if flags == PROFILE_ONLY {
            return profile_event(f, FnKind::Enter);
        }
        if flags & (flags::UNLOGGED | flags::PROFILED) == 0 {
            return trigger_enter(f);
        }
        return special(f, FnKind::Enter, &[]);
    }
    record_one(f, FnKind::Enter, false)
}

/// The recording path of a guarded exit whose entry was recorded.
#[inline(never)]
extern "C" fn guarded_exit(f: &'static FnDesc) -> Entry {
    let flags = f.flags();
    if flags & (SPECIAL | flags::LONG_POLL) != 0 {
        if flags & SPECIAL == 0 {
            return poll_exit(f);
        }
        if flags == PROFILE_ONLY {
            return profile_event(f, FnKind::Exit);
        }
        if flags & (flags::UNLOGGED | flags::PROFILED) == 0 {
            return trigger_exit(f);
        }
        return special(f, FnKind::Exit, &[]);
    }
    record_one(f, FnKind::Exit, false)
}

/// The descriptor flags that send a hook to [`special`].
const SPECIAL: u8 = flags::TRIGGER | flags::PROFILED;
/// The flags of a function in profile mode with nothing else to do.
const PROFILE_ONLY: u8 = flags::PROFILED | flags::UNLOGGED;

// A function the running recording treats specially (a trigger, a profile) has flags set in its
// descriptor; every other function's hook pays one load and a branch for it, here, out of line.
// A culled function reaches these only through a call entered before it was culled, or through
// the bare hooks, which do not cull: it is recorded as any other.

//
// The recording path answers whether it recorded the event: [`USUAL`], or [`SKIPPED`] when the
// cold path found nothing to record into (the process's first hook, which reads `FDR_OPTIONS`
// and may start nothing; a recording that ended; a thread that cannot join). An entry's guard
// keeps the answer. Every function returns it, so the cold paths stay tail calls.

/// The recording path of one kind of event, out of line and compiled once per kind, so that
/// the kind is a constant in each copy.
#[inline(never)]
fn record_kind<const KIND: u8>(f: &'static FnDesc) -> Entry {
    let kind = match KIND {
        0 => FnKind::Enter,
        1 => FnKind::Exit,
        2 => FnKind::TailExit,
        _ => FnKind::EnterArgs,
    };
    if f.flags() & SPECIAL != 0 {
        return special(f, kind, &[]);
    }
    record_one(f, kind, false)
}

/// The fast path. Every call in it is a tail call, so it needs no stack frame and saves no
/// register: the cold paths (no buffer, another clock source, a metadata record, a cull) finish
/// the write themselves. `profiled` says whether the caller profiles the call itself (it found
/// the function profiled when it chose this path), a constant wherever this is inlined.
#[inline(always)]
fn record_one(f: &'static FnDesc, kind: FnKind, profiled: bool) -> Entry {
    let l = thread_local::get();
    let t = &l.state;
    let len = t.len.get();
    if len >= t.writer.limit() {
        return cold(l, f, kind, &[], profiled);
    }
    // SAFETY: `cpu_id` was taken by `clock::fast_cpu_id` on this thread when it joined.
    let Some((tsc, cpu)) = (unsafe { clock::fast(t.cpu_id.get()) }) else {
        return record_any_clock(l, f, kind);
    };
    t.begin_write();
    let id = t.id_field(f);
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

/// [`record_one`] with whatever clock the recording uses.
#[cold]
#[inline(never)]
extern "C" fn record_any_clock(l: &Local, f: &'static FnDesc, kind: FnKind) -> Entry {
    let t = &l.state;
    let len = t.len.get();
    t.begin_write();
    let id = t.id_field(f);
    let (tsc, cpu) = clock::now();
    general_rest(l, len, id, kind, tsc, cpu)
}

/// The end of [`record_one`] when the event needs a metadata record first (or a fresh buffer
/// for it), or the whole of it with another clock. Its arguments are scalars, so the call is a
/// jump.
#[cold]
#[inline(never)]
extern "C" fn general_rest(
    l: &Local,
    len: u32,
    id: u32,
    kind: FnKind,
    tsc: u64,
    cpu: u32,
) -> Entry {
    let t = &l.state;
    let len = match controller::record(t, len, id, kind, tsc, cpu) {
        Some(len) => len,
        None => next_buffer(
            l,
            len,
            tsc,
            cpu,
            Event::Call {
                id,
                kind,
                args: &[],
            },
        ),
    };
    t.end_write(len);
    opaque_usual()
}

/// The end of [`record_one`] when the erased call ends tail-call pairs.
#[cold]
#[inline(never)]
extern "C" fn tails_rest(l: &Local, len: u32, id: u32, tsc: u64, last: u64) -> Entry {
    let t = &l.state;
    t.end_write(controller::finish_tails(t, len, id, tsc, last));
    opaque_usual()
}

/// The end of [`record_one`] when the call is counted for culling out of line
/// ([`controller::Fast::Count`]).
#[cold]
#[inline(never)]
extern "C" fn count_rest(l: &Local, len: u32, id: u32, kept: bool, tsc: u64) -> Entry {
    let t = &l.state;
    t.end_write(controller::count_out(t, len, id, kept, tsc));
    opaque_usual()
}

/// [`USUAL`], as the answer of a cold path the fast path hands its end to. Were the compiler
/// to see that such a function always answers `USUAL`, it would call it and answer the constant
/// itself; opaque, the call stays a jump, and the fast path needs no frame.
#[inline(always)]
fn opaque_usual() -> Entry {
    core::hint::black_box(USUAL)
}

/// Records an entry with arguments; says whether it did, as [`enter_guarded`].
#[inline]
pub(crate) fn record_args(f: &'static FnDesc, args: &[u64]) -> Entry {
    if !session::may_record() {
        return SKIPPED;
    }
    let flags = f.flags();
    if flags & SPECIAL != 0 {
        return special(f, FnKind::EnterArgs, args);
    }
    let entry = record_args_one(f, args, false);
    if flags & flags::LONG_POLL != 0 && entry == USUAL {
        // The first poll of an async function with logged arguments.
        poll_timed_after(f, FnKind::EnterArgs);
    }
    entry
}

#[inline(always)]
fn record_args_one(f: &'static FnDesc, args: &[u64], profiled: bool) -> Entry {
    let l = thread_local::get();
    let t = &l.state;
    let len = t.len.get();
    if len >= t.writer.limit() {
        return cold(l, f, FnKind::EnterArgs, args, profiled);
    }
    t.begin_write();
    let id = t.id_field(f);
    let (tsc, cpu) = clock::now();
    let call = Event::Call {
        id,
        kind: FnKind::EnterArgs,
        args,
    };
    let len = match controller::record_args(t, len, id, tsc, cpu, args) {
        Some(len) => len,
        None => next_buffer(l, len, tsc, cpu, call),
    };
    t.end_write(len);
    USUAL
}

/// Where hooks land when the bounds check fails and a recorder may be running: the thread is
/// busy (a hook inside a hook: record nothing), has no buffer, has a full one, or its recording
/// ended.
///
/// Unless its caller profiles the call itself (`profiled`), the hook chose the log's path from
/// flags without the profile, read before this: a recording that profiles may have started
/// since (in this hook, the process's first, which read `FDR_OPTIONS`; or on another thread,
/// whose start swept the flags in between). The call is then profiled too, or its exit, which
/// finds the function profiled, would have no entry. (Comparing with the flags read again on the
/// way in, as this once did, misses the second case: they already show the profile.)
#[cold]
#[inline(never)]
// Only Rust calls it (slices included); `extern "C"` so that it cannot unwind, which keeps the
// recording path's call of it a jump (see `guarded_entry`).
#[allow(improper_ctypes_definitions)]
extern "C" fn cold(
    l: &Local,
    f: &'static FnDesc,
    kind: FnKind,
    args: &[u64],
    profiled: bool,
) -> Entry {
    #[cfg(feature = "testing")]
    crate::seams::injected::cold_path();
    let entry = cold_event(l, |t| Event::Call {
        id: t.id_field(f),
        kind,
        args,
    });
    if !profiled && f.flags() & flags::PROFILED != 0 {
        profile_event(f, kind);
    }
    entry
}

/// [`USUAL`] when the thread records into a session (the event is written, or counted as
/// dropped), [`SKIPPED`] when there is none to record into.
#[inline]
fn cold_event<'a>(
    l: &Local,
    event: impl FnOnce(&crate::record::thread_state::ThreadState) -> Event<'a>,
) -> Entry {
    let t = &l.state;
    let len = t.len.get();
    if len == BUSY || l.member.dead.get() {
        return SKIPPED;
    }
    let mut entry = SKIPPED;
    t.busy(|| {
        session::settle(crate::START_FROM_ENV);
        let Some(len) = attach::ensure(l, len) else {
            return 0;
        };
        entry = USUAL;
        let ev = event(t);
        let (tsc, cpu) = clock::now();
        let written = if t.writer.has_buffer() {
            ev.write(l, len, tsc, cpu)
        } else {
            None
        };
        written.unwrap_or_else(|| next_buffer(l, len, tsc, cpu, ev))
    });
    entry
}

/// The time and CPU for a thread whose length is below its writer's limit: the thread's own
/// clock ([`clock::fast`]), or the general one for a source that is not a counter.
#[inline(always)]
fn joined_now(t: &ThreadState) -> (u64, u32) {
    // SAFETY: below its limit the thread has joined, and `cpu_id` was taken then, on it.
    unsafe { clock::fast(t.cpu_id.get()) }.unwrap_or_else(clock::now)
}

/// Two `u32`s in one register, for a tail call's arguments.
#[inline(always)]
fn pack(a: u32, b: u32) -> u64 {
    u64::from(a) << 32 | u64::from(b)
}

/// [`pack`]'s inverse.
#[inline(always)]
fn unpack(ab: u64) -> (u32, u32) {
    ((ab >> 32) as u32, ab as u32)
}

/// Runs `f` with the session this thread records into, if any (and not a forked parent's).
pub(crate) fn with_session(f: impl FnOnce(&session::Session, &Local)) {
    thread_local::with(|l| {
        let t = &l.state;
        let len = t.len.get();
        let p = l.member.session.get();
        if len == BUSY || l.member.dead.get() || p.is_null() {
            return;
        }
        t.busy(|| {
            // SAFETY: the membership's strong count keeps the session alive.
            let s = unsafe { &*p };
            if s.in_this_process() {
                f(s, l);
            }
            len
        });
    })
}
