//! Async tasks: each call of an instrumented `async fn` is a task with a process-unique id,
//! recorded when its future is created, when it completes, and when it is dropped before
//! completing (cancelled), besides the entry and exit of each poll. An async function with a
//! trigger is timed per task, from creation to completion or drop, on whatever threads those
//! happen.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use fdr_format::{Reason, TaskKind, ID_SHIFT};

use crate::function_table::FnDesc;
use crate::{clock, host, hot_path, trigger};

/// Ids are handed to threads in batches, so taking one is a thread-local increment.
const BATCH: u64 = 1 << 12;
static NEXT_BATCH: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The next id of this thread's batch, and the end of the batch.
    static IDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

fn new_id() -> u64 {
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

/// A task of `f` was created; returns its id.
#[inline]
pub(crate) fn created(f: &'static FnDesc) -> u64 {
    let task = new_id();
    hot_path::record_task(f, TaskKind::Created, task);
    if f.flags() & trigger::TRIGGER != 0 {
        hot_path::with_session(|s, l| {
            let id = l.state.id_field(f) >> ID_SHIFT;
            if s.triggers().limit(id) != 0 {
                s.triggers()
                    .tasks
                    .open(task, id, host::thread_id(), clock::now().0);
            }
        });
    }
    task
}

/// Task `task` of `f` completed (or, with `completed` false, was dropped first).
#[inline]
pub(crate) fn ended(f: &'static FnDesc, task: u64, completed: bool) {
    let kind = if completed {
        TaskKind::Completed
    } else {
        TaskKind::Cancelled
    };
    hot_path::record_task(f, kind, task);
    if f.flags() & trigger::TRIGGER != 0 {
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
