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
use crate::sink::{LinkSeen, PollSeen, TaskEvent, TaskSeen};
use crate::{LinkKind, TaskKind, TaskLink};

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

/// Children held at once on one thread, in the calls open there, for the end of the poll they
/// belong to (see [`TaskParents`]); more are left without a parent and counted.
///
/// ```
/// assert_eq!(fdr_format::tasks::MAX_CHILDREN_HELD, 4096);
/// ```
pub const MAX_CHILDREN_HELD: usize = 1 << 12;

/// Each task's parent: the task it was made or awaited in, as a `tracing` span's parent.
///
/// Found without any event of its own: a task created (its `Created` event) inside a poll of
/// another task was made in it, and a task polled inside a poll of another (its poll nested in
/// the other's on the same thread: an instrumented `async fn` awaited in another) is awaited by
/// it. Which task a poll served is known only at the poll event that follows its exit, so each
/// thread holds the tasks met inside each open call; when a call exits and a poll event follows,
/// they are the children of its task, and the task is met in the call around it; when none
/// follows (a plain call), they are the call around it's. An explicit link
/// ([`LinkKind::Parent`], written by `fdr-tracing`) is a parent too, and wins.
///
/// Memory: at most `max` tasks with a parent (the rest counted in [`TaskParents::left_out`]),
/// and per thread a list per open call and at most [`MAX_CHILDREN_HELD`] children held.
///
/// ```
/// use fdr_format::sink::{PollSeen, TaskEvent, TaskSeen};
/// use fdr_format::tasks::TaskParents;
/// use fdr_format::TaskKind;
/// let mut p = TaskParents::new(1000);
/// // A poll of task 7 (function 2) on thread 0 creates task 8 and polls it (function 3).
/// p.enter(0, 0);
/// let created = TaskEvent { kind: TaskKind::Created, id: 3, task: 8 };
/// p.task(&TaskSeen { thread: 0, tsc: 10, window: 0, event: created });
/// p.enter(0, 1);
/// p.exit(0, 1);
/// p.polled(&PollSeen { thread: 0, id: 3, task: 8 });
/// p.exit(0, 0);
/// p.polled(&PollSeen { thread: 0, id: 2, task: 7 });
/// assert_eq!(p.parent(8), Some(7));
/// assert_eq!(p.parent(7), None);
/// ```
#[derive(Debug)]
pub struct TaskParents {
    threads: Vec<ParentThread>,
    parents: HashMap<u64, u64>,
    /// Tasks whose parent came in a link: no structural parent replaces it.
    linked: std::collections::HashSet<u64>,
    max: usize,
    left_out: u64,
}

#[derive(Debug, Default)]
struct ParentThread {
    /// The tasks met in each open call, bottom first.
    frames: Vec<Vec<u64>>,
    /// The tasks met in the call that just exited: a poll event may follow.
    exited: Vec<u64>,
    /// Tasks held in `frames` and `exited`.
    held: usize,
}

impl ParentThread {
    /// The call that exited was not a poll (or its poll event did not come): its tasks were met
    /// in the call around it.
    fn settle(&mut self) {
        if self.exited.is_empty() {
            return;
        }
        match self.frames.last_mut() {
            Some(f) => f.append(&mut self.exited),
            None => {
                self.held -= self.exited.len();
                self.exited.clear();
            }
        }
    }

    /// Task `task` met in the innermost open call; false when none is open or past the limit.
    fn meet(&mut self, task: u64) -> bool {
        if self.held >= MAX_CHILDREN_HELD {
            return false;
        }
        match self.frames.last_mut() {
            Some(f) => {
                if !f.contains(&task) {
                    f.push(task);
                    self.held += 1;
                }
                true
            }
            None => true,
        }
    }
}

impl TaskParents {
    /// Parents for at most `max` tasks.
    ///
    /// ```
    /// assert_eq!(fdr_format::tasks::TaskParents::new(10).left_out(), 0);
    /// ```
    pub fn new(max: usize) -> TaskParents {
        TaskParents {
            threads: Vec::new(),
            parents: HashMap::new(),
            linked: std::collections::HashSet::new(),
            max,
            left_out: 0,
        }
    }

    fn thread(&mut self, thread: u32) -> &mut ParentThread {
        let t = thread as usize;
        if t >= self.threads.len() {
            self.threads.resize_with(t + 1, ParentThread::default);
        }
        &mut self.threads[t]
    }

    /// Gives `task` its parent, unless it has one; true if it is new.
    fn set(&mut self, task: u64, parent: u64) -> bool {
        if task == parent || self.linked.contains(&task) || self.parents.contains_key(&task) {
            return false;
        }
        if self.parents.len() >= self.max {
            self.left_out += 1;
            return false;
        }
        self.parents.insert(task, parent);
        true
    }

    /// A call entered on `thread` at `depth` (its index in the thread's stack).
    pub fn enter(&mut self, thread: u32, depth: usize) {
        let th = self.thread(thread);
        th.settle();
        while th.frames.len() > depth {
            let f = th.frames.pop().unwrap_or_default();
            th.held -= f.len();
        }
        th.frames.push(Vec::new());
    }

    /// The call at `depth` exited on `thread`.
    pub fn exit(&mut self, thread: u32, depth: usize) {
        let th = self.thread(thread);
        th.settle();
        if depth >= th.frames.len() {
            return;
        }
        while th.frames.len() > depth + 1 {
            let f = th.frames.pop().unwrap_or_default();
            th.held -= f.len();
        }
        th.exited = th.frames.pop().unwrap_or_default();
    }

    /// The poll that just exited served task `p.task`: the tasks met in it are its children,
    /// and it is met in the call around the poll. Returns the children given their parent now.
    pub fn polled(&mut self, p: &PollSeen) -> Vec<u64> {
        let Some(th) = self.threads.get_mut(p.thread as usize) else {
            return Vec::new();
        };
        let children = std::mem::take(&mut th.exited);
        th.held -= children.len();
        if !th.meet(p.task) {
            self.left_out += 1;
        }
        children
            .into_iter()
            .filter(|&c| self.set(c, p.task))
            .collect()
    }

    /// A task event: a creation inside a call is a task met there.
    pub fn task(&mut self, t: &TaskSeen) {
        let th = self.thread(t.thread);
        th.settle();
        if t.event.kind == TaskKind::Created && !th.meet(t.event.task) {
            self.left_out += 1;
        }
    }

    /// A link event: a parent given by the program. True if it is one (and kept).
    ///
    /// ```
    /// use fdr_format::sink::LinkSeen;
    /// use fdr_format::tasks::TaskParents;
    /// use fdr_format::{LinkKind, TaskLink};
    /// let mut p = TaskParents::new(10);
    /// let link = TaskLink { kind: LinkKind::Parent, id: 2, task: 9, other_id: 1, other_task: 8 };
    /// assert!(p.link(&LinkSeen { thread: 0, tsc: 5, link }));
    /// assert_eq!(p.parent(9), Some(8));
    /// let follows = TaskLink { kind: LinkKind::FollowsFrom, ..link };
    /// assert!(!p.link(&LinkSeen { thread: 0, tsc: 5, link: follows }));
    /// ```
    pub fn link(&mut self, l: &LinkSeen) -> bool {
        let link = l.link;
        if link.kind != LinkKind::Parent || link.task == link.other_task {
            return false;
        }
        if self.parents.len() >= self.max && !self.parents.contains_key(&link.task) {
            self.left_out += 1;
            return false;
        }
        self.parents.insert(link.task, link.other_task);
        self.linked.insert(link.task);
        true
    }

    /// Task `task`'s parent, if one was found.
    pub fn parent(&self, task: u64) -> Option<u64> {
        self.parents.get(&task).copied()
    }

    /// Takes in the parents another share found (of other threads): a link's wins.
    ///
    /// ```
    /// use fdr_format::sink::LinkSeen;
    /// use fdr_format::tasks::TaskParents;
    /// use fdr_format::{LinkKind, TaskLink};
    /// let (mut a, mut b) = (TaskParents::new(10), TaskParents::new(10));
    /// let link = TaskLink { kind: LinkKind::Parent, id: 2, task: 9, other_id: 1, other_task: 8 };
    /// b.link(&LinkSeen { thread: 1, tsc: 5, link });
    /// a.merge(b);
    /// assert_eq!(a.into_map().get(&9), Some(&8));
    /// ```
    pub fn merge(&mut self, other: TaskParents) {
        for (task, parent) in other.parents {
            if other.linked.contains(&task) {
                self.parents.remove(&task);
                self.linked.remove(&task);
                self.link(&LinkSeen {
                    thread: 0,
                    tsc: 0,
                    link: TaskLink {
                        kind: LinkKind::Parent,
                        id: 0,
                        task,
                        other_id: 0,
                        other_task: parent,
                    },
                });
            } else {
                self.set(task, parent);
            }
        }
        self.left_out += other.left_out;
    }

    /// Every task with a parent: (task, parent).
    pub fn into_map(self) -> HashMap<u64, u64> {
        self.parents
    }

    /// Tasks whose parent was not kept (past the limits).
    pub fn left_out(&self) -> u64 {
        self.left_out
    }
}

/// A parent found for a task whose creation was read (see [`ParentsFound`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParentFound {
    /// The task.
    pub task: u64,
    /// Its parent.
    pub parent: u64,
    /// The parent's async function.
    pub parent_function: u32,
    /// The thread (index) that created the task.
    pub thread: u32,
    /// When the task was created (ticks).
    pub created: u64,
}

/// [`TaskParents`] for a timeline: each parent as it is found, with the creation of its child
/// (where a viewer can mark it). Memory: [`TaskParents`]'s, and the creations of at most `max`
/// tasks whose parent is not known yet (a task created past that gets no [`ParentFound`]).
///
/// ```
/// use fdr_format::sink::{PollSeen, TaskEvent, TaskSeen};
/// use fdr_format::tasks::ParentsFound;
/// use fdr_format::TaskKind;
/// let mut p = ParentsFound::new(100);
/// p.enter(0, 0);
/// let created = TaskEvent { kind: TaskKind::Created, id: 3, task: 8 };
/// p.task(&TaskSeen { thread: 0, tsc: 10, window: 0, event: created });
/// p.exit(0, 0);
/// let found = p.polled(&PollSeen { thread: 0, id: 2, task: 7 });
/// assert_eq!((found[0].task, found[0].parent, found[0].parent_function, found[0].created), (8, 7, 2, 10));
/// ```
#[derive(Debug)]
pub struct ParentsFound {
    parents: TaskParents,
    created: HashMap<u64, (u32, u64)>,
    max: usize,
}

impl ParentsFound {
    /// At most `max` parents, and as many creations held.
    pub fn new(max: usize) -> ParentsFound {
        ParentsFound {
            parents: TaskParents::new(max),
            created: HashMap::new(),
            max,
        }
    }

    /// See [`TaskParents::enter`].
    pub fn enter(&mut self, thread: u32, depth: usize) {
        self.parents.enter(thread, depth);
    }

    /// See [`TaskParents::exit`].
    pub fn exit(&mut self, thread: u32, depth: usize) {
        self.parents.exit(thread, depth);
    }

    /// See [`TaskParents::task`]; a creation is held for the task's parent.
    pub fn task(&mut self, t: &TaskSeen) {
        self.parents.task(t);
        if t.event.kind == TaskKind::Created && self.created.len() < self.max {
            self.created.insert(t.event.task, (t.thread, t.tsc));
        }
    }

    fn found(&mut self, task: u64, parent: u64, parent_function: u32) -> Option<ParentFound> {
        let (thread, created) = self.created.remove(&task)?;
        Some(ParentFound {
            task,
            parent,
            parent_function,
            thread,
            created,
        })
    }

    /// See [`TaskParents::polled`]: the parents found now.
    pub fn polled(&mut self, p: &PollSeen) -> Vec<ParentFound> {
        self.parents
            .polled(p)
            .into_iter()
            .filter_map(|c| self.found(c, p.task, p.id))
            .collect()
    }

    /// See [`TaskParents::link`]: the parent a link gives.
    pub fn link(&mut self, l: &LinkSeen) -> Option<ParentFound> {
        if !self.parents.link(l) {
            return None;
        }
        self.found(l.link.task, l.link.other_task, l.link.other_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(thread: u32, task: u64) -> TaskSeen {
        TaskSeen {
            thread,
            tsc: 0,
            window: 0,
            event: TaskEvent {
                kind: TaskKind::Created,
                id: 1,
                task,
            },
        }
    }

    fn polled(thread: u32, id: u32, task: u64) -> PollSeen {
        PollSeen { thread, id, task }
    }

    fn parent_link(task: u64, other_task: u64) -> LinkSeen {
        LinkSeen {
            thread: 0,
            tsc: 0,
            link: TaskLink {
                kind: LinkKind::Parent,
                id: 1,
                task,
                other_id: 1,
                other_task,
            },
        }
    }

    #[test]
    fn a_task_made_in_a_plain_call_belongs_to_the_poll_around_it_or_to_none() {
        let mut p = TaskParents::new(100);
        // serve (plain, depth 0) > poll of task 7 (depth 1) > helper (plain, depth 2) makes 8.
        p.enter(0, 0);
        p.enter(0, 1);
        p.enter(0, 2);
        p.task(&created(0, 8));
        p.exit(0, 2);
        p.exit(0, 1);
        p.polled(&polled(0, 2, 7));
        // Task 9 made in serve, outside any poll, and serve is no poll.
        p.task(&created(0, 9));
        p.exit(0, 0);
        p.enter(0, 0);
        assert_eq!(
            (p.parent(8), p.parent(7), p.parent(9)),
            (Some(7), None, None)
        );
    }

    #[test]
    fn a_link_wins_over_where_the_task_was_met_and_shares_merge() {
        let mut a = TaskParents::new(100);
        a.link(&parent_link(8, 3));
        a.enter(0, 0);
        a.task(&created(0, 8));
        a.exit(0, 0);
        a.polled(&polled(0, 2, 7));
        assert_eq!(a.parent(8), Some(3));
        let mut b = TaskParents::new(100);
        b.enter(1, 0);
        b.task(&created(1, 8));
        b.task(&created(1, 5));
        b.exit(1, 0);
        b.polled(&polled(1, 2, 6));
        b.merge(a);
        assert_eq!((b.parent(8), b.parent(5)), (Some(3), Some(6)));
        // A task is never its own parent.
        b.link(&parent_link(4, 4));
        assert_eq!(b.parent(4), None);
    }

    #[test]
    fn parents_past_the_limit_are_counted_not_kept() {
        let mut p = TaskParents::new(1);
        p.enter(0, 0);
        p.task(&created(0, 8));
        p.task(&created(0, 9));
        p.exit(0, 0);
        p.polled(&polled(0, 2, 7));
        assert_eq!(p.into_map().len(), 1);
        let mut p = TaskParents::new(10);
        p.enter(0, 0);
        for t in 0..(MAX_CHILDREN_HELD as u64 + 5) {
            p.task(&created(0, 100 + t));
        }
        assert_eq!(p.left_out(), 5);
    }
}
