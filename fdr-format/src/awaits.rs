//! Waits at await sites, and wake-ups, tied to their tasks.
//!
//! An await event says which site and function waited, not which task, and a wake event which
//! function was woken: each is written inside a poll (the one that passed the await, the one the
//! wake-up asked for), and that poll's event, right after its exit, names the task (a poll of
//! the same function inside it would have exited before). So a reader holds each thread's
//! events until the next exit of their function and hands them to the task the poll event that
//! follows names ([`PollTies`], one for each kind of event). A wait ended by dropping the task
//! (outside any poll) follows the task's cancellation on the same thread.
//!
//! ```
//! use fdr_format::awaits::AwaitTies;
//! use fdr_format::sink::{AwaitSeen, PollSeen};
//! use fdr_format::AwaitEvent;
//! let mut ties = AwaitTies::default();
//! let event = AwaitEvent { site: 9, function: 3, waited: 400, polls: 1, dropped: false };
//! ties.awaited(&AwaitSeen { thread: 0, tsc: 1000, event, in_poll: true });
//! ties.exit(0, 3);
//! let tied = ties.polled(&PollSeen { thread: 0, id: 3, task: 77 });
//! assert_eq!((tied[0].task, tied[0].start(), tied[0].end), (77, 600, 1000));
//! ```

use crate::limits::MAX_AWAITS_IN_POLL;
use crate::sink::{AwaitSeen, PollSeen, TaskSeen, WokenSeen};
use crate::{AwaitEvent, TaskKind, WakeEvent};

/// An event written inside a poll, about the poll's task.
pub trait InPoll: Copy {
    /// The async function whose poll it was written in.
    fn function(&self) -> u32;
}

impl InPoll for AwaitEvent {
    fn function(&self) -> u32 {
        self.function
    }
}

impl InPoll for WakeEvent {
    fn function(&self) -> u32 {
        self.function
    }
}

/// One event of a poll, tied to the poll's task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tied<E> {
    /// The task's id.
    pub task: u64,
    /// The thread (index in the log) that wrote it.
    pub thread: u32,
    /// When (ticks): the end of a wait, the beginning of a woken poll.
    pub end: u64,
    /// What it says.
    pub event: E,
}

/// One wait of a task at an await site.
pub type TaskAwait = Tied<AwaitEvent>;

/// One wake-up of a task, and the poll it led to.
pub type TaskWake = Tied<WakeEvent>;

impl TaskWake {
    /// Ticks from the wake-up to the poll (0 when the two threads' clocks disagree the other
    /// way): what the task waited, ready, to be polled.
    ///
    /// ```
    /// use fdr_format::{awaits::TaskWake, WakeEvent};
    /// let event = WakeEvent { function: 2, woken_at: 70, waker_tid: 0 };
    /// assert_eq!(TaskWake { task: 5, thread: 0, end: 100, event }.scheduled(), 30);
    /// ```
    pub fn scheduled(&self) -> u64 {
        self.end.saturating_sub(self.event.woken_at)
    }
}

impl TaskAwait {
    /// When the wait began (ticks): the poll that found the awaited future pending.
    ///
    /// ```
    /// use fdr_format::{awaits::TaskAwait, AwaitEvent};
    /// let event = AwaitEvent { site: 1, function: 2, waited: 30, polls: 1, dropped: false };
    /// assert_eq!(TaskAwait { task: 5, thread: 0, end: 100, event }.start(), 70);
    /// ```
    pub fn start(&self) -> u64 {
        self.end.saturating_sub(self.event.waited)
    }
}

/// One thread's events not tied yet.
#[derive(Debug)]
struct Thread<E> {
    /// Events inside an open poll: (when, the event).
    open: Vec<(u64, E)>,
    /// The events of the poll that just exited, and its function: the poll event comes next.
    exited: Vec<(u64, E)>,
    exited_function: u32,
    /// The task the thread cancelled last: waits dropped with it follow its cancellation.
    cancelled: Option<(u32, u64)>,
}

impl<E> Default for Thread<E> {
    fn default() -> Thread<E> {
        Thread {
            open: Vec::new(),
            exited: Vec::new(),
            exited_function: 0,
            cancelled: None,
        }
    }
}

/// Ties the events of one kind written inside polls to tasks, thread by thread, as a replay
/// hands them over (see the module's documentation). Memory: the events of the polls open on
/// each thread, at most [`MAX_AWAITS_IN_POLL`] per thread (the rest are counted in
/// [`PollTies::untied`]).
#[derive(Debug)]
pub struct PollTies<E> {
    threads: Vec<Thread<E>>,
    untied: u64,
}

impl<E> Default for PollTies<E> {
    fn default() -> PollTies<E> {
        PollTies {
            threads: Vec::new(),
            untied: 0,
        }
    }
}

/// Ties waits at await sites to tasks.
pub type AwaitTies = PollTies<AwaitEvent>;

/// Ties wake-ups to tasks.
pub type WakeTies = PollTies<WakeEvent>;

impl AwaitTies {
    /// A wait ended; returns it tied when its task is known now (a wait dropped with the task
    /// the thread just cancelled).
    pub fn awaited(&mut self, a: &AwaitSeen) -> Option<TaskAwait> {
        if a.in_poll {
            return self.seen(a.thread, a.tsc, a.event);
        }
        let th = self.thread(a.thread);
        if let Some((function, task)) = th.cancelled {
            if function == a.event.function {
                return Some(TaskAwait {
                    task,
                    thread: a.thread,
                    end: a.tsc,
                    event: a.event,
                });
            }
        }
        self.untied += 1;
        None
    }

    /// A task event: a cancellation is remembered for the waits dropped with the task.
    pub fn task(&mut self, t: &TaskSeen) {
        let th = self.thread(t.thread);
        th.cancelled = (t.event.kind == TaskKind::Cancelled).then_some((t.event.id, t.event.task));
    }
}

impl WakeTies {
    /// A woken poll began.
    ///
    /// ```
    /// use fdr_format::awaits::WakeTies;
    /// use fdr_format::sink::{PollSeen, WokenSeen};
    /// use fdr_format::WakeEvent;
    /// let mut ties = WakeTies::default();
    /// let event = WakeEvent { function: 3, woken_at: 900, waker_tid: 12 };
    /// ties.woken(&WokenSeen { thread: 0, tsc: 1000, event });
    /// ties.exit(0, 3);
    /// let tied = ties.polled(&PollSeen { thread: 0, id: 3, task: 77 });
    /// assert_eq!((tied[0].task, tied[0].scheduled()), (77, 100));
    /// ```
    pub fn woken(&mut self, w: &WokenSeen) {
        self.seen(w.thread, w.tsc, w.event);
    }
}

/// Both kinds of events written in polls, tied to their tasks at once: what a [`crate::sink::Sink`]
/// that shows waits and wake-ups hands over (a task event, an exit, an await, a wake-up, a
/// poll event) and what it gets back.
///
/// ```
/// use fdr_format::awaits::Ties;
/// use fdr_format::sink::{AwaitSeen, PollSeen, WokenSeen};
/// use fdr_format::{AwaitEvent, WakeEvent};
/// let mut ties = Ties::default();
/// ties.woken(&WokenSeen { thread: 0, tsc: 900, event: WakeEvent { function: 3, woken_at: 850, waker_tid: 4 } });
/// let event = AwaitEvent { site: 9, function: 3, waited: 400, polls: 1, dropped: false };
/// assert!(ties.awaited(&AwaitSeen { thread: 0, tsc: 1000, event, in_poll: true }).is_none());
/// ties.exit(0, 3);
/// let (waits, wakes) = ties.polled(&PollSeen { thread: 0, id: 3, task: 77 });
/// assert_eq!((waits[0].task, waits[0].start()), (77, 600));
/// assert_eq!((wakes[0].task, wakes[0].scheduled()), (77, 50));
/// ```
#[derive(Debug, Default)]
pub struct Ties {
    /// The waits.
    pub awaits: AwaitTies,
    /// The wake-ups.
    pub wakes: WakeTies,
}

impl Ties {
    /// A task event (see [`AwaitTies::task`]).
    pub fn task(&mut self, t: &TaskSeen) {
        self.awaits.task(t);
    }

    /// A call of function `id` exited on `thread` (see [`PollTies::exit`]).
    pub fn exit(&mut self, thread: u32, id: u32) {
        self.awaits.exit(thread, id);
        self.wakes.exit(thread, id);
    }

    /// A wait ended (see [`AwaitTies::awaited`]).
    pub fn awaited(&mut self, a: &AwaitSeen) -> Option<TaskAwait> {
        self.awaits.awaited(a)
    }

    /// A woken poll began (see [`WakeTies::woken`]).
    pub fn woken(&mut self, w: &WokenSeen) {
        self.wakes.woken(w);
    }

    /// The poll that just exited served task `p.task`: its waits and its wake-up, in the order
    /// they came.
    pub fn polled(&mut self, p: &PollSeen) -> (Vec<TaskAwait>, Vec<TaskWake>) {
        (self.awaits.polled(p), self.wakes.polled(p))
    }

    /// Events no task could be found for.
    ///
    /// ```
    /// use fdr_format::awaits::Ties;
    /// use fdr_format::sink::WokenSeen;
    /// use fdr_format::WakeEvent;
    /// let mut ties = Ties::default();
    /// let event = WakeEvent { function: 3, woken_at: 850, waker_tid: 4 };
    /// ties.woken(&WokenSeen { thread: 0, tsc: 900, event });
    /// ties.exit(0, 3);
    /// ties.exit(0, 3); // no poll event came: the wake-up is no task's
    /// assert_eq!(ties.untied(), 1);
    /// ```
    pub fn untied(&self) -> u64 {
        self.awaits.untied() + self.wakes.untied()
    }
}

impl<E: InPoll> PollTies<E> {
    fn thread(&mut self, thread: u32) -> &mut Thread<E> {
        let t = thread as usize;
        if t >= self.threads.len() {
            self.threads.resize_with(t + 1, Thread::default);
        }
        &mut self.threads[t]
    }

    /// `event`, written inside a poll on `thread` at `tsc`: held for the poll's end. Returns
    /// nothing (a signature shared with [`AwaitTies::awaited`]).
    fn seen(&mut self, thread: u32, tsc: u64, event: E) -> Option<Tied<E>> {
        let th = self.thread(thread);
        if th.open.len() < MAX_AWAITS_IN_POLL {
            th.open.push((tsc, event));
        } else {
            self.untied += 1;
        }
        None
    }

    /// A call of function `id` exited on `thread`: the waits of `id` held for the thread are
    /// that call's (a poll's, if a poll event follows).
    pub fn exit(&mut self, thread: u32, id: u32) {
        let Some(th) = self.threads.get_mut(thread as usize) else {
            return;
        };
        if th.open.is_empty() && th.exited.is_empty() {
            return;
        }
        self.untied += th.exited.len() as u64;
        th.exited.clear();
        th.exited_function = id;
        let mut i = 0;
        while i < th.open.len() {
            if th.open[i].1.function() == id {
                let w = th.open.remove(i);
                th.exited.push(w);
            } else {
                i += 1;
            }
        }
    }

    /// The poll that just exited served task `p.task`: its events, in the order they came.
    pub fn polled(&mut self, p: &PollSeen) -> Vec<Tied<E>> {
        let Some(th) = self.threads.get_mut(p.thread as usize) else {
            return Vec::new();
        };
        if th.exited.is_empty() || th.exited_function != p.id {
            return Vec::new();
        }
        th.exited
            .drain(..)
            .map(|(end, event)| Tied {
                task: p.task,
                thread: p.thread,
                end,
                event,
            })
            .collect()
    }

    /// Events no task could be found for (their poll was not kept, or past the limit).
    pub fn untied(&self) -> u64 {
        self.untied
            + self
                .threads
                .iter()
                .map(|t| (t.open.len() + t.exited.len()) as u64)
                .sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::TaskEvent;

    fn wait(function: u32, site: u32, waited: u64, dropped: bool) -> AwaitEvent {
        AwaitEvent {
            site,
            function,
            waited,
            polls: 1,
            dropped,
        }
    }

    #[test]
    fn a_wait_belongs_to_the_poll_of_its_function_not_to_a_nested_one() {
        let mut ties = AwaitTies::default();
        // Outer task (function 1) passes an await, then polls an inner task (function 2) that
        // passes one of its own; the inner poll exits (task 20) before the outer (task 10).
        let seen = |tsc, event| AwaitSeen {
            thread: 0,
            tsc,
            event,
            in_poll: true,
        };
        assert_eq!(ties.awaited(&seen(100, wait(1, 7, 50, false))), None);
        ties.awaited(&seen(120, wait(2, 8, 30, false)));
        ties.exit(0, 2);
        let inner = ties.polled(&PollSeen {
            thread: 0,
            id: 2,
            task: 20,
        });
        assert_eq!(inner.len(), 1);
        assert_eq!((inner[0].task, inner[0].event.site), (20, 8));
        ties.exit(0, 1);
        let outer = ties.polled(&PollSeen {
            thread: 0,
            id: 1,
            task: 10,
        });
        assert_eq!(outer.len(), 1);
        assert_eq!(
            (outer[0].task, outer[0].event.site, outer[0].start()),
            (10, 7, 50)
        );
        assert_eq!(ties.untied(), 0);
    }

    #[test]
    fn a_wait_dropped_with_its_task_follows_the_cancellation() {
        let mut ties = AwaitTies::default();
        ties.task(&TaskSeen {
            thread: 1,
            tsc: 500,
            window: 0,
            event: TaskEvent {
                kind: TaskKind::Cancelled,
                id: 4,
                task: 99,
            },
        });
        let tied = ties.awaited(&AwaitSeen {
            thread: 1,
            tsc: 500,
            event: wait(4, 6, 200, true),
            in_poll: false,
        });
        assert_eq!(tied.map(|t| (t.task, t.start())), Some((99, 300)));
        // Another function's dropped wait is not this task's.
        let other = ties.awaited(&AwaitSeen {
            thread: 1,
            tsc: 510,
            event: wait(5, 6, 10, true),
            in_poll: false,
        });
        assert_eq!(other, None);
        assert_eq!(ties.untied(), 1);
    }

    #[test]
    fn a_poll_that_was_not_kept_leaves_its_waits_untied() {
        let mut ties = AwaitTies::default();
        ties.awaited(&AwaitSeen {
            thread: 0,
            tsc: 100,
            event: wait(1, 7, 50, false),
            in_poll: true,
        });
        ties.exit(0, 1);
        // No poll event: the next exit of the function ends the first's claim.
        ties.exit(0, 1);
        assert!(ties
            .polled(&PollSeen {
                thread: 0,
                id: 1,
                task: 3
            })
            .is_empty());
        assert_eq!(ties.untied(), 1);
    }
}
