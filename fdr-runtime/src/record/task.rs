//! Async tasks: each call of an instrumented `async fn` is a task with a process-unique id,
//! recorded when its future is created, when it completes, and when it is dropped before
//! completing (cancelled), besides the entry and exit of each poll. An async function with a
//! trigger is timed per task, from creation to completion or drop, on whatever threads those
//! happen.
//!
//! A task is erased as a call is: one that ends sooner than the threshold after its creation,
//! with nothing kept by its thread since, takes its creation record back and records no end
//! (`rewind::erase_created`). A culled function's tasks are not recorded at all, nor those made
//! while nothing records; such a task takes an id at its first kept poll. (Tasks made through
//! [`crate::hooks::task_created`], as `tracing` spans are, are always recorded: the hook
//! returns their id to the caller.)

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use fdr_format::{Reason, TaskKind, ID_SHIFT};

use crate::record::rewind::Created;
use crate::tables::functions::FnDesc;
use crate::{platform::clock, platform::host, record::hot_path, tables::flags};

/// Ids are handed to threads in batches, so taking one is a thread-local increment.
const BATCH: u64 = 1 << 12;
static NEXT_BATCH: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The next id of this thread's batch, and the end of the batch.
    static IDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A process-unique task id (never 0).
pub(crate) fn new_id() -> u64 {
    IDS.with(|ids| {
        let (mut next, mut end) = ids.get();
        if next == end {
            next = NEXT_BATCH.fetch_add(1, Ordering::Relaxed) * BATCH;
            end = next + BATCH;
        }
        ids.set((next + 1, end));
        next
    })
}

/// What a task's creation recorded, for its end (see [`created_marked`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Made {
    /// Recorded, in a place [`ended_marked`] can take it back from if the task ends short.
    Erasable(Created),
    /// Recorded (or not recordable: no recorder, profile mode): the end is recorded as usual.
    Kept,
    /// Not recorded (the function culled, or no recorder): neither is the end.
    Skipped,
}

impl Made {
    /// Whether the creation was not recorded, and so the end will not be.
    #[inline(always)]
    pub(crate) fn skipped(&self) -> bool {
        matches!(self, Made::Skipped)
    }
}

/// A task of `f` was created; returns its id.
#[inline]
pub(crate) fn created(f: &'static FnDesc) -> u64 {
    let task = new_id();
    hot_path::record_task(f, TaskKind::Created, task, hot_path::When::Now);
    open_trigger(f, task);
    task
}

/// A task of `f` was created by a call of the async function: returns its id and what was
/// recorded. The task of a culled function is not recorded (its polls are not either), nor one
/// made while nothing records: it has no id yet (0), and takes one if a poll of it is ever kept
/// ([`hot_path::record_polled`]). One that ends short, with every poll erased, is erased whole by
/// [`ended_marked`], as a short call is.
///
/// Inline is only the test that skips it; the rest is out of line, so that a future made while
/// nothing records is made with no call.
#[inline(always)]
pub(crate) fn created_marked(f: &'static FnDesc) -> (u64, Made) {
    let flags = f.flags();
    if flags & flags::UNTIMED != 0 && flags & flags::TRIGGER == 0 {
        return (0, Made::Skipped);
    }
    created_recorded(f)
}

/// [`created_marked`] past its test.
#[inline(never)]
fn created_recorded(f: &'static FnDesc) -> (u64, Made) {
    let flags = f.flags();
    let task = new_id();
    let made = match hot_path::record_created(f, task) {
        Some(c) if flags & flags::TRIGGER == 0 => Made::Erasable(c),
        _ => Made::Kept,
    };
    open_trigger(f, task);
    (task, made)
}

/// After a poll of task `task` of `f` (made as `made` says) that began at mark `m` and
/// returned `ready`: a kept poll is followed by a poll event with the task's id (see
/// [`hot_path::poll_kept`]) and, when it completed the task, by its completion, both at the
/// poll's exit. True when the poll was kept and the completion, if any, recorded with it. A task
/// whose creation was not recorded has no id yet (0): it takes one here, the first time one of
/// its polls is kept.
#[inline]
pub(crate) fn polled(
    f: &'static FnDesc,
    task: &mut u64,
    made: &Made,
    m: hot_path::PollMark,
    ready: bool,
) -> bool {
    if !hot_path::poll_kept(m) {
        return false;
    }
    if *task == 0 {
        *task = new_id();
    }
    // A task with a trigger ends through `ended`, which times it.
    let completes = ready && !matches!(made, Made::Skipped) && f.flags() & flags::TRIGGER == 0;
    hot_path::record_polled(f, *task, completes);
    completes
}

/// Task `task` of `f` (made as `made` says) completed, or was dropped first.
#[inline]
pub(crate) fn ended_marked(f: &'static FnDesc, task: u64, made: &Made, completed: bool) {
    match made {
        Made::Skipped => {}
        Made::Erasable(c) => {
            if let Err(when) = hot_path::erase_created(f, task, c) {
                ended_when(f, task, completed, when);
            }
        }
        Made::Kept => ended(f, task, completed),
    }
}

/// Puts task `task` of `f` on the open tasks' table if `f` has a trigger.
#[inline]
fn open_trigger(f: &'static FnDesc, task: u64) {
    if f.flags() & flags::TRIGGER != 0 {
        hot_path::with_session(|s, l| {
            let id = l.state.id_field(f) >> ID_SHIFT;
            if s.triggers().limit(id) != 0 {
                s.triggers()
                    .tasks
                    .open(task, id, host::thread_id(), clock::now().0);
            }
        });
    }
}

/// Task `task` of `f` completed (or, with `completed` false, was dropped first).
#[inline]
pub(crate) fn ended(f: &'static FnDesc, task: u64, completed: bool) {
    ended_when(f, task, completed, hot_path::When::Now);
}

/// [`ended`], recorded at `when`.
#[inline]
fn ended_when(f: &'static FnDesc, task: u64, completed: bool, when: hot_path::When) {
    let kind = if completed {
        TaskKind::Completed
    } else {
        TaskKind::Cancelled
    };
    hot_path::record_task(f, kind, task, when);
    if f.flags() & flags::TRIGGER != 0 {
        hot_path::with_session(|s, _| {
            let (now, cpu) = clock::now();
            let Some((id, start)) = s.triggers().tasks.close(task) else {
                return;
            };
            if s.triggers().is_slow(id, now.wrapping_sub(start)) {
                s.fire(Reason::SlowCall, id, host::thread_id(), start, now);
            }
            s.triggers().observe(id, now.wrapping_sub(start), cpu, now);
        });
    }
}

/// Task `task` of `f` is tied (`kind`) to task `other_task` of `other`.
#[inline]
pub(crate) fn linked(
    f: &'static FnDesc,
    task: u64,
    kind: fdr_format::LinkKind,
    other: &'static FnDesc,
    other_task: u64,
) {
    hot_path::record_link(f, task, kind, other, other_task);
}
