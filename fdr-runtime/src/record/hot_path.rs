//! The path every hook takes: check that a recorder may be running, bracket the write, read the
//! clock, hand the event to the controller. What does not fit that (no buffer yet, a full buffer,
//! joining or leaving a recording) is the cold path, out of line.
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
//! | a trigger | its limit | the thread's registry entry (its open calls); the CPU's shard of a learned limit's histogram; the mailbox, when it fires |
//! | profile mode | | the thread's call trie |
//! | async tasks | | the thread's batch of task ids (a shared counter once per 4,096 tasks); for a task with a trigger, its entry in the open tasks' table |
//!
//! Changes to the shared lines are rare by construction: a cull, a probe or a restore writes the
//! flags once; a learned limit moves every 64 calls of its function at first, then every
//! sixteenth of its calls so far (at most every 4,096); a thread takes a new
//! buffer from the pool's queue when its buffer fills (every 2,000 records or so), and counts a
//! buffer it is the first to use in the pool's count of them (waking the writer to reserve
//! more once per half megabyte of them, in a crash box). The `cores`
//! bench (`benches/`) times two cores in one function against two in their own, in each of these
//! configurations.

use fdr_format::{
    link_payload, polled_payload, task_payload, FnKind, LinkKind, TaskKind, TaskLink, ID_SHIFT,
};

use crate::record::hook_call;
use crate::record::thread_local::{self, Local};
use crate::record::thread_state::{ThreadState, BUSY};
use crate::tables::functions::FnDesc;
use crate::{
    platform::clock, record::attach, record::controller, record::rewind, session, tables::flags,
    trigger::limits,
};

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

/// Whether a guarded entry of `f` now would record nothing: no recorder runs, or `f` is culled.
#[inline(always)]
pub(crate) fn skips(f: &'static FnDesc) -> bool {
    f.flags() & (flags::OFF | flags::CULLED) != 0
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
    if flags & SPECIAL != 0 {
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
    if flags & SPECIAL != 0 {
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
    if f.flags() & SPECIAL != 0 {
        return special(f, FnKind::EnterArgs, args);
    }
    record_args_one(f, args, false)
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

/// Records a task event of async function `f`, at `when`. Out of line: tasks are rarer than
/// calls.
#[inline(never)]
pub(crate) fn record_task(f: &'static FnDesc, kind: TaskKind, task: u64, when: When) {
    if f.flags() & flags::UNLOGGED != 0 {
        return;
    }
    record_custom_when(
        |t| {
            let [a, b] = task_payload(kind, t.id_field(f) >> ID_SHIFT, task);
            Custom::new([a, b, 0, 0], 2)
        },
        when,
    );
}

/// The time and CPU for a thread whose length is below its writer's limit: the thread's own
/// clock ([`clock::fast`]), or the general one for a source that is not a counter.
#[inline(always)]
fn joined_now(t: &ThreadState) -> (u64, u32) {
    // SAFETY: below its limit the thread has joined, and `cpu_id` was taken then, on it.
    unsafe { clock::fast(t.cpu_id.get()) }.unwrap_or_else(clock::now)
}

/// Records the creation of task `task` of async function `f`; returns where its record ends when
/// it went right after the buffer's last record (nothing else written before it), which lets
/// [`erase_created`] take it back if the task ends short. Inline into its one caller, which is
/// out of line (`task::created_recorded`): one frame for the creation, not two.
#[inline(always)]
pub(crate) fn record_created(f: &'static FnDesc, task: u64) -> Option<rewind::Created> {
    if f.flags() & flags::UNLOGGED != 0 || !session::may_record() {
        return None;
    }
    let l = thread_local::get();
    let t = &l.state;
    let len = t.len.get();
    let payload = |t: &ThreadState| {
        let [a, b] = task_payload(TaskKind::Created, t.id_field(f) >> ID_SHIFT, task);
        Custom::new([a, b, 0, 0], 2)
    };
    // A record that goes to a buffer of its own (the thread's first, or the last one full) is
    // written as any custom event, stable: such a task is kept. So is one no end can take
    // back, with nothing erased (a threshold of 0).
    if len >= t.writer.limit() || t.threshold.get() == 0 {
        record_custom_when(payload, When::Now);
        return None;
    }
    t.begin_write();
    let (enters, tails) = (t.enters.get(), t.tails.get());
    let words = task_payload(TaskKind::Created, t.id_field(f) >> ID_SHIFT, task);
    let (tsc, cpu) = joined_now(t);
    // The usual case (the same CPU, a delta that fits, room) is written here; the rest, with
    // its metadata or the next buffer, out of line.
    let Some(end) = controller::record_created_usual(t, len, words, tsc, cpu) else {
        return created_rest(l, len, words, tsc, cpu, pack(enters, tails));
    };
    t.end_write(end);
    Some(rewind::Created {
        len: end,
        enters,
        tails,
    })
}

/// [`record_created`] when the record needs metadata first or another buffer: writes it as
/// the general path does, and says where it ends if it is still erasable (in the same buffer;
/// after a metadata record the counters before it, `enters_tails` packed, were reset). Closes
/// the write bracket.
#[cold]
#[inline(never)]
fn created_rest(
    l: &Local,
    len: u32,
    words: [u64; 2],
    tsc: u64,
    cpu: u32,
    enters_tails: u64,
) -> Option<rewind::Created> {
    let t = &l.state;
    let Some(end) = controller::record_created(t, len, &words, tsc, cpu) else {
        let payload = Custom::new([words[0], words[1], 0, 0], 2);
        let end = next_buffer(l, len, tsc, cpu, Event::Custom { payload });
        t.end_write(end);
        return None;
    };
    t.end_write(end);
    let (enters, tails) = if end == len + rewind::CREATED_WORDS {
        unpack(enters_tails)
    } else {
        (0, 0)
    };
    Some(rewind::Created {
        len: end,
        enters,
        tails,
    })
}

/// Takes back the creation record of task `task` of `f` (see [`rewind::erase_created`]) when
/// the task ends less than the threshold after it with nothing kept since. `Ok` if it did, and
/// the task's end is not to be recorded either; otherwise when to record that end: at the clock
/// reading this made, if it made one.
#[inline(never)]
pub(crate) fn erase_created(
    f: &'static FnDesc,
    task: u64,
    c: &rewind::Created,
) -> Result<(), When> {
    let l = thread_local::get();
    let t = &l.state;
    let len = t.len.get();
    // The clock is read only once the record is known to be the last one.
    if !rewind::created_is_last(t, len, c) || len >= t.writer.limit() || l.member.dead.get() {
        return Err(When::Now);
    }
    let (now, cpu) = joined_now(t);
    t.begin_write();
    let payload = task_payload(TaskKind::Created, t.id_field(f) >> ID_SHIFT, task);
    // SAFETY: below its limit, the writer holds a buffer of at least `len` words; the bracket
    // was just opened.
    let erased = unsafe { rewind::erase_created(t, len, c, payload, now) };
    t.end_write(erased.unwrap_or(len));
    match erased {
        Some(_) => Ok(()),
        None => Err(When::At(now, cpu)),
    }
}

/// Where this thread's buffer stood before a poll (see [`polled`]).
#[derive(Clone, Copy)]
pub(crate) struct PollMark {
    words: usize,
    len: u32,
}

/// The mark to take before a poll of `f`; `None` when the poll records nothing (no recorder,
/// `f` culled, or profile mode).
#[inline(always)]
pub(crate) fn poll_mark(f: &'static FnDesc) -> Option<PollMark> {
    if f.flags() & (flags::OFF | flags::CULLED | flags::UNLOGGED) != 0 {
        return None;
    }
    let t = &thread_local::get().state;
    Some(PollMark {
        words: t.writer.words(),
        len: t.len.get(),
    })
}

/// Whether a poll that began at mark `m` was kept (the buffer grew past the mark, or another
/// buffer took over, so its exit is the last record written): then a poll event goes right
/// after the exit ([`record_polled`]), which ties the poll to its task. A poll the rewind erased
/// leaves the buffer at the mark (or before it) and gets none: the event must never follow
/// another call's exit. Readers check that too: they tie the event to the thread's previous
/// event only if that is an exit of `f`.
#[inline]
pub(crate) fn poll_kept(m: PollMark) -> bool {
    let t = &thread_local::get().state;
    let len = t.len.get();
    if m.len == BUSY || len == BUSY {
        return false;
    }
    let words = t.writer.words();
    if words == m.words {
        len > m.len
    } else {
        words != 0
    }
}

/// The poll event of a kept poll (see [`poll_kept`]), at the time of the poll's exit, the
/// record before it (no clock read); with `completed`, the task's completion after it, at the
/// same time. Out of line: only kept polls, which are long, pay for it.
#[inline(never)]
pub(crate) fn record_polled(f: &'static FnDesc, task: u64, completed: bool) {
    let polled = |t: &ThreadState| {
        let [a, b] = polled_payload(t.id_field(f) >> ID_SHIFT, task);
        Custom::new([a, b, 0, 0], 2)
    };
    if !completed {
        record_custom_when(polled, When::Last);
        return;
    }
    record_customs_when(
        |t| {
            let [a, b] = task_payload(TaskKind::Completed, t.id_field(f) >> ID_SHIFT, task);
            [polled(t), Custom::new([a, b, 0, 0], 2)]
        },
        When::Last,
    );
}

/// Records that task `task` of `f` is tied (`kind`) to task `other_task` of `other`.
#[inline(never)]
pub(crate) fn record_link(
    f: &'static FnDesc,
    task: u64,
    kind: LinkKind,
    other: &'static FnDesc,
    other_task: u64,
) {
    if f.flags() & flags::UNLOGGED != 0 {
        return;
    }
    record_custom(|t| {
        let link = TaskLink {
            kind,
            id: t.id_field(f) >> ID_SHIFT,
            task,
            other_id: t.id_field(other) >> ID_SHIFT,
            other_task,
        };
        Custom::new(link_payload(link), 4)
    });
}

/// Records a custom event (a task or link event) whose payload `payload` makes with the thread's
/// function ids: the path of [`record_one`] with a longer record.
#[inline(always)]
fn record_custom(payload: impl Fn(&ThreadState) -> Custom) {
    record_custom_when(payload, When::Now);
}

/// When an event happens, which says whether recording it reads the clock.
#[derive(Clone, Copy, Debug)]
pub(crate) enum When {
    /// Now: the clock is read.
    Now,
    /// At the thread's last record (no clock read): an event that belongs to the exit just
    /// written, as a kept poll's event does.
    Last,
    /// At a reading (time, CPU) taken just before, for something else.
    At(u64, u32),
}

/// [`record_custom`], at `when`.
#[inline(always)]
fn record_custom_when(payload: impl Fn(&ThreadState) -> Custom, when: When) {
    record_customs_when(|t| [payload(t)], when);
}

/// Records custom events one after the other, all at `when`, in one write bracket: the events
/// of one moment (a kept poll's event and the completion it brings) pay for one look at the
/// thread, one bounds check and one reading of the time, not one each.
#[inline(always)]
fn record_customs_when<const N: usize>(payloads: impl Fn(&ThreadState) -> [Custom; N], when: When) {
    if !session::may_record() {
        return;
    }
    let l = thread_local::get();
    let t = &l.state;
    let len = t.len.get();
    if len >= t.writer.limit() {
        // Busy, or no buffer yet (or a full one): the cold path joins and takes one.
        for i in 0..N {
            cold_event(l, |t| Event::Custom {
                payload: payloads(t)[i],
            });
        }
        return;
    }
    t.begin_write();
    let (tsc, cpu) = match when {
        When::Now => joined_now(t),
        When::Last => (t.last_tsc.get(), t.cpu.get()),
        When::At(tsc, cpu) => (tsc, cpu),
    };
    let customs = payloads(t);
    let len =
        match controller::record_customs(t, len, customs.each_ref().map(Custom::words), tsc, cpu) {
            Some(len) => len,
            // No room for them all: one by one, each taking the next buffer if it must.
            None => customs_rest(l, len, customs, tsc, cpu),
        };
    t.end_write(len);
}

/// [`record_customs_when`]'s events when the buffer has no room for them all: one by one, each
/// in the next buffer if it must. Returns the length after the last.
#[cold]
#[inline(never)]
fn customs_rest<const N: usize>(
    l: &Local,
    len: u32,
    customs: [Custom; N],
    tsc: u64,
    cpu: u32,
) -> u32 {
    let t = &l.state;
    let mut len = len;
    for payload in customs {
        len = match controller::record_custom(t, len, payload.words(), tsc, cpu) {
            Some(len) => len,
            None => next_buffer(l, len, tsc, cpu, Event::Custom { payload }),
        };
    }
    len
}

/// A custom event's payload: its first `len` words.
#[derive(Clone, Copy)]
struct Custom {
    words: [u64; 4],
    len: u8,
}

impl Custom {
    fn new(words: [u64; 4], len: u8) -> Custom {
        Custom { words, len }
    }

    fn words(&self) -> &[u64] {
        &self.words[..usize::from(self.len)]
    }
}

/// What a hook records.
#[derive(Clone, Copy)]
enum Event<'a> {
    Call {
        id: u32,
        kind: FnKind,
        args: &'a [u64],
    },
    /// A task or link event's payload.
    Custom { payload: Custom },
}

impl Event<'_> {
    fn write(self, l: &Local, len: u32, tsc: u64, cpu: u32) -> Option<u32> {
        let t = &l.state;
        match self {
            Event::Call { id, kind, args } => {
                controller::record_any(t, len, id, kind, tsc, cpu, args)
            }
            Event::Custom { payload } => {
                controller::record_custom(t, len, payload.words(), tsc, cpu)
            }
        }
    }

    /// Records it counts as when dropped.
    fn records(self) -> u64 {
        match self {
            Event::Call { args, .. } => 1 + args.len() as u64,
            Event::Custom { .. } => 1,
        }
    }
}

/// The current buffer has no room: take the next and record there. Never loops: a record that
/// does not fit a fresh buffer either (the recording stopped meanwhile, or more arguments than a
/// buffer holds) is dropped and counted.
#[cold]
#[inline(never)]
fn next_buffer(l: &Local, len: u32, tsc: u64, cpu: u32, ev: Event<'_>) -> u32 {
    let Some(len) = attach::switch_buffer(l, len, tsc, cpu) else {
        attach::count_dropped(l, ev.records());
        return 0;
    };
    if let Some(len) = ev.write(l, len, tsc, cpu) {
        return len;
    }
    if let Event::Call { id, kind, args } = ev {
        if !args.is_empty() {
            attach::count_args_dropped(l, args.len() as u64);
            let bare = Event::Call {
                id,
                kind,
                args: &[],
            };
            if let Some(len) = bare.write(l, len, tsc, cpu) {
                return len;
            }
        }
    }
    attach::count_dropped(l, 1);
    len
}

/// A function with a trigger: recorded as any other, then timed: entries go on the thread's list
/// of open trigger calls, and an exit past the limit fires the trigger, which only hands the call
/// to the background writer. The record and the timing share one reading of the clock, so a
/// trigger costs no second one, and the duration judged is the one the log shows.
#[inline(never)]
// Only Rust calls it (slices included); `extern "C"` so that it cannot unwind, which keeps the
// recording path's call of it a jump (see `guarded_entry`).
#[allow(improper_ctypes_definitions)]
extern "C" fn special(f: &'static FnDesc, kind: FnKind, args: &[u64]) -> Entry {
    let flags = f.flags();
    if flags & flags::TRIGGER == 0 {
        return logged_and_profiled(f, flags, kind, args);
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
fn trigger_event(f: &'static FnDesc, kind: FnKind) -> Entry {
    let l = thread_local::get();
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
    }
    t.end_write(len);
    USUAL
}

/// What timing an event of an armed function leaves to do ([`time_event`]).
enum Timed {
    /// Nothing: an entry, or an exit within its limit that was counted.
    Done,
    /// The call that started at `start` passed its limit: fire, then count it ([`settle`]).
    Slow { start: u64 },
    /// The call was counted and its learned limit is due to be recomputed.
    Recompute,
}

/// Times an event of armed function `f` (id `id`) at `now` on `cpu` in session `s`, inside the
/// thread's write bracket: an entry goes on the thread's open trigger calls; an exit comes off
/// and is judged against its limit, and one within it is counted towards a learned limit. What
/// is left (rare) is for [`settle`], out of line on the fast path.
#[inline(always)]
fn time_event(
    s: &session::Session,
    l: &Local,
    f: &'static FnDesc,
    id: u32,
    kind: FnKind,
    now: u64,
    cpu: u32,
) -> Timed {
    // An async function's trigger applies to its tasks (see `task`), not to one poll. (A
    // forked child's calls do not come here: the fork handler clears every function's flags,
    // the trigger's with them; `settle` asks again before it fires.)
    if f.kind() == crate::FnKindTag::Async {
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
    match end.learned {
        Some(learned)
            if learned.count_call(
                now.wrapping_sub(end.start),
                cpu,
                now,
                end.limit == limits::LEARNING,
            ) =>
        {
            Timed::Recompute
        }
        _ => Timed::Done,
    }
}

/// Does what [`time_event`] left for an exit of function `id` at `now` on `cpu`: fires the
/// trigger of a call past its limit and counts it, or recomputes the learned limit.
#[inline(always)]
fn settle(s: &session::Session, l: &Local, id: u32, timed: Timed, now: u64, cpu: u32) {
    match timed {
        Timed::Done => {}
        Timed::Slow { start } => {
            if s.in_this_process() {
                // SAFETY: as in `time_event`, which closed the call.
                let mark = unsafe { &*l.member.entry.get() }.closed_mark(start);
                s.slow_call(id, l.member.key.get(), start, now, mark);
            }
            s.triggers().observe(id, now.wrapping_sub(start), cpu, now);
        }
        Timed::Recompute => s.triggers().recompute(id, now),
    }
}

/// [`trigger_event`] for an entry.
#[inline(never)]
extern "C" fn trigger_enter(f: &'static FnDesc) -> Entry {
    trigger_event(f, FnKind::Enter)
}

/// [`trigger_event`] for an exit.
#[inline(never)]
extern "C" fn trigger_exit(f: &'static FnDesc) -> Entry {
    trigger_event(f, FnKind::Exit)
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

/// Set in [`timed_rest`]'s `cpu` when the call was counted and its learned limit is due,
/// rather than past its limit. CPU numbers are 12 bits.
const RECOMPUTE: u32 = 1 << 31;

/// The end of [`trigger_event`]'s exit (of function `id`, with the buffer at `len`, packed as
/// `len_id`) when timing it left more to do than count the call: [`settle`] a call past its
/// limit that started at `start`, or the learned limit's recompute (`RECOMPUTE`
/// in `cpu`), its arguments in registers rather than a [`Timed`] in memory. Then closes the
/// write bracket.
#[cold]
#[inline(never)]
fn timed_rest(l: &Local, len_id: u64, start: u64, now: u64, cpu: u32) -> Entry {
    let (len, id) = unpack(len_id);
    let p = l.member.session.get();
    // SAFETY: the membership's strong count keeps the session alive (the caller checked it).
    let s = unsafe { &*p };
    let timed = if cpu & RECOMPUTE != 0 {
        Timed::Recompute
    } else {
        Timed::Slow { start }
    };
    settle(s, l, id, timed, now, cpu & !RECOMPUTE);
    l.state.end_write(len);
    USUAL
}

/// The end of [`trigger_event`] for an exit whose erase reached tail-call pairs (the buffer at
/// `len`, the id field `id`, packed as `len_id`; the time before them `last`): erases them,
/// then times the exit.
#[cold]
#[inline(never)]
fn trigger_tails(
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

/// The record of an event of a function in profile mode, or logged and profiled.
fn logged_and_profiled(f: &'static FnDesc, flags: u8, kind: FnKind, args: &[u64]) -> Entry {
    if flags & flags::UNLOGGED != 0 {
        return profile_event(f, kind);
    }
    let profiled = flags & flags::PROFILED != 0;
    let entry = if kind == FnKind::EnterArgs {
        record_args_one(f, args, profiled)
    } else {
        record_one(f, kind, profiled)
    };
    if profiled {
        profile_event(f, kind);
    }
    entry
}

/// [`record_one`] (or [`record_args_one`]) at a time the caller read.
#[inline(always)]
fn record_at(f: &'static FnDesc, kind: FnKind, args: &[u64], tsc: u64, cpu: u32) -> Entry {
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
fn time_trigger(f: &'static FnDesc, kind: FnKind, now: u64, cpu: u32) {
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

/// Adds an event of `f` to the thread's call trie: the profile's path. Says whether the thread
/// profiles, as [`record_one`] says whether it records.
#[inline]
extern "C" fn profile_event(f: &'static FnDesc, kind: FnKind) -> Entry {
    let l = thread_local::get();
    let t = &l.state;
    let len = t.len.get();
    let p = l.member.profile.get();
    if len == BUSY || p.is_null() || l.member.epoch.get() != session::epoch() {
        return profile_cold(l, f, kind);
    }
    t.begin_write();
    let now = clock::ticks();
    let id = t.id_field(f) >> ID_SHIFT;
    // SAFETY: the trie stays mapped while the thread is a member of the session that owns it
    // (the membership's strong count), and only this thread writes it.
    let p = unsafe { &*p };
    if kind == FnKind::Enter || kind == FnKind::EnterArgs {
        p.enter(id, now);
    } else {
        p.exit(id, now);
    }
    t.end_write(len);
    USUAL
}

/// [`profile_event`] for a thread that is busy, has not joined the recording, or belongs to an
/// older one.
#[cold]
#[inline(never)]
fn profile_cold(l: &Local, f: &'static FnDesc, kind: FnKind) -> Entry {
    let t = &l.state;
    let len = t.len.get();
    if len == BUSY || l.member.dead.get() {
        return SKIPPED;
    }
    let mut joined = false;
    t.busy(|| {
        session::settle(crate::START_FROM_ENV);
        match attach::ensure(l, len) {
            Some(len) => {
                joined = true;
                len
            }
            None => 0,
        }
    });
    if !joined || l.member.profile.get().is_null() {
        return SKIPPED;
    }
    profile_event(f, kind)
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
