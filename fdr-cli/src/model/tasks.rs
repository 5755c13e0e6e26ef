//! Async tasks rebuilt from task events: each call of an instrumented `async fn` is a task,
//! created on one thread and completed (or cancelled) on the same or another one, with its
//! polls as ordinary calls in between.
//!
//! The two ends of a task are matched by its id. Blocks of different threads come in any order
//! in a log, so either end may be read first; [`Tasks`] keeps the tasks whose other end it has
//! not read yet (at most [`MAX_OPEN_TASKS`] at once). Once the whole log is read, what is left
//! is cut by the window: a task whose creation is missing was created before the window and is
//! dated at the start of the window of the thread that ended it (marked inferred); a task that
//! was never completed is closed at the end of the log (marked open at the end).

use std::collections::HashMap;

use fdr_format::TaskKind;

use crate::model::call::TaskEvent;
use crate::CliError;

/// The most tasks whose other end has not been read yet. Each takes about 40 bytes; past the
/// limit a command stops with an error rather than grow without end.
pub const MAX_OPEN_TASKS: usize = 1 << 20;

/// One task, from its creation to its completion or cancellation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskSpan {
    /// The async function's id.
    pub function: u32,
    /// The task's id.
    pub task: u64,
    /// Creation, ticks (the window's start when `inferred`).
    pub start: u64,
    /// Completion or cancellation, ticks (the log's end when `open`).
    pub end: u64,
    /// Thread index of the creation (of the end when `inferred`).
    pub start_thread: u32,
    /// Thread index of the end (of the creation when `open`).
    pub end_thread: u32,
    /// Dropped before completing.
    pub cancelled: bool,
    /// Created before the window: `start` is the window's start.
    pub inferred: bool,
    /// Not completed when the log ends: `end` is the log's end.
    pub open: bool,
}

#[derive(Clone, Copy, Debug)]
struct Created {
    function: u32,
    tsc: u64,
    thread: u32,
}

#[derive(Clone, Copy, Debug)]
struct Ended {
    function: u32,
    tsc: u64,
    thread: u32,
    window: u64,
    cancelled: bool,
}

/// Matches the two ends of each task.
///
/// ```
/// use fdr_cli::model::call::TaskEvent;
/// use fdr_cli::model::tasks::Tasks;
/// use fdr_format::TaskKind;
/// let mut t = Tasks::default();
/// let ev = |kind, task| TaskEvent { kind, id: 3, task };
/// // Task 1 ends on thread 1 before its creation on thread 0 is read.
/// assert_eq!(t.event(1, 900, 0, ev(TaskKind::Completed, 1))?, None);
/// let s = t.event(0, 100, 0, ev(TaskKind::Created, 1))?.unwrap();
/// assert_eq!((s.start, s.end, s.start_thread, s.end_thread), (100, 900, 0, 1));
/// // Task 2 was created before thread 1's window (which starts at 50); task 3 never ends.
/// t.event(1, 300, 50, ev(TaskKind::Cancelled, 2))?;
/// t.event(0, 400, 0, ev(TaskKind::Created, 3))?;
/// let left = t.finish(1000);
/// assert_eq!(left.len(), 2);
/// assert!(left.iter().any(|s| s.task == 2 && s.inferred && s.cancelled && s.start == 50));
/// assert!(left.iter().any(|s| s.task == 3 && s.open && s.end == 1000));
/// # Ok::<(), fdr_cli::CliError>(())
/// ```
#[derive(Debug, Default)]
pub struct Tasks {
    created: HashMap<u64, Created>,
    ended: HashMap<u64, Ended>,
}

const TOO_MANY: &str = "more than 1048576 async tasks wait for their other end";
const _: () = assert!(MAX_OPEN_TASKS == 1_048_576, "TOO_MANY names the limit");

fn too_many_tasks() -> CliError {
    CliError::limit(format!(
        "{TOO_MANY} at one point of the log, fdr's limit (is the log corrupt?)"
    ))
}

/// True for the error of a reader past [`MAX_OPEN_TASKS`].
pub fn is_task_limit(e: &CliError) -> bool {
    matches!(e, CliError::Limit { what, .. } if what.starts_with(TOO_MANY))
}

impl Tasks {
    /// Tasks waiting for their other end.
    pub fn waiting(&self) -> usize {
        self.created.len() + self.ended.len()
    }

    fn room(&self) -> Result<(), CliError> {
        if self.waiting() >= MAX_OPEN_TASKS {
            return Err(too_many_tasks());
        }
        Ok(())
    }

    /// One task event of thread `thread` at `tsc`, whose window starts at `window`; the task's
    /// span when this event completes it.
    pub fn event(
        &mut self,
        thread: u32,
        tsc: u64,
        window: u64,
        ev: TaskEvent,
    ) -> Result<Option<TaskSpan>, CliError> {
        match ev.kind {
            TaskKind::Created => {
                if let Some(e) = self.ended.remove(&ev.task) {
                    return Ok(Some(pair(
                        ev.task,
                        Created {
                            function: ev.id,
                            tsc,
                            thread,
                        },
                        e,
                    )));
                }
                if !self.created.contains_key(&ev.task) {
                    self.room()?;
                }
                self.created.insert(
                    ev.task,
                    Created {
                        function: ev.id,
                        tsc,
                        thread,
                    },
                );
                Ok(None)
            }
            TaskKind::Completed | TaskKind::Cancelled => {
                let e = Ended {
                    function: ev.id,
                    tsc,
                    thread,
                    window,
                    cancelled: ev.kind == TaskKind::Cancelled,
                };
                if let Some(c) = self.created.remove(&ev.task) {
                    return Ok(Some(pair(ev.task, c, e)));
                }
                if !self.ended.contains_key(&ev.task) {
                    self.room()?;
                }
                self.ended.insert(ev.task, e);
                Ok(None)
            }
        }
    }

    /// Takes in what `other` (another share of the same log's threads) is still waiting for;
    /// returns the tasks whose two ends were in different shares.
    pub fn merge(&mut self, other: Tasks) -> Result<Vec<TaskSpan>, CliError> {
        let mut done = Vec::new();
        for (task, c) in other.created {
            let ev = TaskEvent {
                kind: TaskKind::Created,
                id: c.function,
                task,
            };
            done.extend(self.event(c.thread, c.tsc, 0, ev)?);
        }
        for (task, e) in other.ended {
            let kind = if e.cancelled {
                TaskKind::Cancelled
            } else {
                TaskKind::Completed
            };
            let ev = TaskEvent {
                kind,
                id: e.function,
                task,
            };
            done.extend(self.event(e.thread, e.tsc, e.window, ev)?);
        }
        Ok(done)
    }

    /// The tasks cut by the window, once the whole log is read: those whose creation is
    /// missing (dated at their window's start) and those never completed (closed at `end`,
    /// the log's end), in order of task id.
    pub fn finish(self, end: u64) -> Vec<TaskSpan> {
        let mut out: Vec<TaskSpan> = self
            .ended
            .into_iter()
            .map(|(task, e)| TaskSpan {
                function: e.function,
                task,
                start: e.window.min(e.tsc),
                end: e.tsc,
                start_thread: e.thread,
                end_thread: e.thread,
                cancelled: e.cancelled,
                inferred: true,
                open: false,
            })
            .chain(self.created.into_iter().map(|(task, c)| TaskSpan {
                function: c.function,
                task,
                start: c.tsc,
                end: end.max(c.tsc),
                start_thread: c.thread,
                end_thread: c.thread,
                cancelled: false,
                inferred: false,
                open: true,
            }))
            .collect();
        out.sort_unstable_by_key(|s| s.task);
        out
    }
}

fn pair(task: u64, c: Created, e: Ended) -> TaskSpan {
    TaskSpan {
        function: c.function,
        task,
        start: c.tsc,
        end: e.tsc,
        start_thread: c.thread,
        end_thread: e.thread,
        cancelled: e.cancelled,
        inferred: false,
        open: false,
    }
}
