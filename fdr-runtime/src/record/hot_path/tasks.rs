//! Async tasks on the recording path: a task's creation (which the rewind can take back while it
//! is the buffer's last record and the task ends short), the poll event that ties a kept poll to
//! its task, its completion, and links between tasks. Out of line: tasks are rarer than calls.

use fdr_format::{
    await_payload, link_payload, polled_payload, task_payload, wake_payload, AwaitEvent, LinkKind,
    TaskKind, TaskLink, WakeEvent, ID_SHIFT,
};

use crate::record::controller;
use crate::record::rewind;
use crate::record::thread_local::{self, Local};
use crate::record::thread_state::{ThreadState, BUSY};
use crate::session;
use crate::tables::flags;
use crate::tables::functions::FnDesc;

use super::custom::{
    next_buffer, record_custom, record_custom_when, record_customs_when, Custom, Event, When,
};
use super::{joined_now, pack, unpack};

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
pub(super) fn created_rest(
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

/// Where this thread's buffer stood before a poll (see [`poll_kept`]).
#[derive(Clone, Copy)]
pub(crate) struct PollMark {
    words: usize,
    len: u32,
}

/// The mark to take before a poll of `f`; `None` when the poll records nothing (no recorder,
/// `f` culled, or profile mode).
#[inline(always)]
pub(crate) fn poll_mark(f: &'static FnDesc) -> Option<PollMark> {
    if f.flags() & (flags::UNTIMED | flags::UNLOGGED) != 0 {
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

/// Records wait `wait` (its site and function ids filled in here) at await site `site` of async
/// function `f`, which ended at (`tsc`, `cpu`), when it lasted at least the threshold: a shorter
/// wait, like a shorter call, is not worth the room.
#[inline(always)]
pub(crate) fn record_await(
    site: &'static FnDesc,
    f: &'static FnDesc,
    wait: AwaitEvent,
    tsc: u64,
    cpu: u32,
) {
    if f.flags() & flags::UNLOGGED != 0 {
        return;
    }
    if wait.waited < thread_local::get().state.threshold.get() {
        return;
    }
    record_custom_when(
        |t| {
            let w = AwaitEvent {
                site: t.id_field(site) >> ID_SHIFT,
                function: t.id_field(f) >> ID_SHIFT,
                ..wait
            };
            Custom::new(await_payload(w), 4)
        },
        When::At(tsc, cpu),
    );
}

/// A poll of async function `f` began (its entry is the thread's last record) after its task
/// was woken at `woken_at` by thread `waker_tid`: records the wake event, at the entry's time,
/// when the task waited at least the threshold to be polled (a shorter wait, like a shorter
/// call, is not worth the room).
#[inline(never)]
pub(crate) fn record_woken(f: &'static FnDesc, woken_at: u64, waker_tid: i32) {
    if f.flags() & flags::UNLOGGED != 0 {
        return;
    }
    {
        let t = &thread_local::get().state;
        let len = t.len.get();
        if len == BUSY || len >= t.writer.limit() {
            return;
        }
        if t.last_tsc.get().saturating_sub(woken_at) < t.threshold.get() {
            return;
        }
    }
    record_custom_when(
        |t| {
            let w = WakeEvent {
                function: t.id_field(f) >> ID_SHIFT,
                woken_at,
                waker_tid,
            };
            Custom::new(wake_payload(w), 4)
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
