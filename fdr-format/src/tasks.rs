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

use crate::limits::MAX_OPEN_TASKS;
use crate::sink::TaskEvent;
use crate::TaskKind;

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
/// use fdr_format::sink::TaskEvent;
/// use fdr_format::tasks::Tasks;
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
/// # Ok::<(), fdr_format::tasks::TooManyWaiting>(())
/// ```
#[derive(Debug)]
pub struct Tasks {
    created: HashMap<u64, Created>,
    ended: HashMap<u64, Ended>,
    max_waiting: usize,
}

impl Default for Tasks {
    fn default() -> Tasks {
        Tasks::new(MAX_OPEN_TASKS)
    }
}

/// More tasks than the limit wait for their other end (the limit is in it).
///
/// ```
/// let e = fdr_format::tasks::TooManyWaiting(1_048_576);
/// assert_eq!(e.to_string(), "more than 1048576 async tasks wait for their other end");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyWaiting(pub usize);

impl std::fmt::Display for TooManyWaiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "more than {} async tasks wait for their other end",
            self.0
        )
    }
}

impl std::error::Error for TooManyWaiting {}

impl Tasks {
    /// A matcher that holds at most `max_waiting` tasks waiting for their other end.
    ///
    /// ```
    /// use fdr_format::{sink::TaskEvent, tasks::Tasks, TaskKind};
    /// let mut t = Tasks::new(1);
    /// let created = |task| TaskEvent { kind: TaskKind::Created, id: 3, task };
    /// t.event(0, 10, 0, created(1)).unwrap();
    /// assert!(t.event(0, 20, 0, created(2)).is_err());
    /// ```
    pub fn new(max_waiting: usize) -> Tasks {
        Tasks {
            created: HashMap::new(),
            ended: HashMap::new(),
            max_waiting,
        }
    }

    /// Tasks waiting for their other end.
    ///
    /// ```
    /// assert_eq!(fdr_format::tasks::Tasks::default().waiting(), 0);
    /// ```
    pub fn waiting(&self) -> usize {
        self.created.len() + self.ended.len()
    }

    fn room(&self) -> Result<(), TooManyWaiting> {
        if self.waiting() >= self.max_waiting {
            return Err(TooManyWaiting(self.max_waiting));
        }
        Ok(())
    }

    /// One task event of thread `thread` at `tsc`, whose window starts at `window`; the task's
    /// span when this event completes it. A later event of the same kind for the same task
    /// (a hostile log) replaces the earlier one.
    pub fn event(
        &mut self,
        thread: u32,
        tsc: u64,
        window: u64,
        ev: TaskEvent,
    ) -> Result<Option<TaskSpan>, TooManyWaiting> {
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
    ///
    /// ```
    /// use fdr_format::{sink::TaskEvent, tasks::Tasks, TaskKind};
    /// let (mut a, mut b) = (Tasks::default(), Tasks::default());
    /// a.event(0, 10, 0, TaskEvent { kind: TaskKind::Created, id: 3, task: 1 })?;
    /// b.event(1, 90, 0, TaskEvent { kind: TaskKind::Completed, id: 3, task: 1 })?;
    /// let done = a.merge(b)?;
    /// assert_eq!((done[0].start, done[0].end), (10, 90));
    /// # Ok::<(), fdr_format::tasks::TooManyWaiting>(())
    /// ```
    pub fn merge(&mut self, other: Tasks) -> Result<Vec<TaskSpan>, TooManyWaiting> {
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
    ///
    /// ```
    /// use fdr_format::{sink::TaskEvent, tasks::Tasks, TaskKind};
    /// let mut t = Tasks::default();
    /// t.event(0, 10, 0, TaskEvent { kind: TaskKind::Created, id: 3, task: 1 })?;
    /// let left = t.finish(100);
    /// assert!(left[0].open && left[0].end == 100);
    /// # Ok::<(), fdr_format::tasks::TooManyWaiting>(())
    /// ```
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
