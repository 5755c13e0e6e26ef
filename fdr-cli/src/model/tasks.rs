//! Async tasks rebuilt from task events ([`fdr_format::tasks`]: each call of an instrumented
//! `async fn` is a task, its two ends matched by id), what the commands keep of each (its links,
//! waits, polls and wake-ups), and the command's word for a log that holds too many tasks
//! waiting for their other end.

use std::collections::HashMap;

use fdr_format::awaits::{TaskAwait, TaskWake};
pub(crate) use fdr_format::tasks::{TaskSpan, Tasks, TooManyWaiting};
use fdr_format::TaskLink;

use crate::limits::{
    MAX_AWAITING_TASKS, MAX_AWAITS_PER_TASK, MAX_LINKED_TASKS, MAX_LINKS_PER_TASK, MAX_OPEN_TASKS,
};

use crate::CliError;

impl From<TooManyWaiting> for CliError {
    fn from(e: TooManyWaiting) -> CliError {
        CliError::limit(format!(
            "{e} at one point of the log, fdr's limit (is the log corrupt?)"
        ))
    }
}

/// True for the error of a reader past [`MAX_OPEN_TASKS`].
pub(crate) fn is_task_limit(e: &CliError) -> bool {
    let prefix = TooManyWaiting(MAX_OPEN_TASKS).to_string();
    matches!(e, CliError::Limit { what, .. } if what.starts_with(&prefix))
}

/// What each task is tied to (its parent, tasks it follows from), by task id.
pub(crate) type Links = HashMap<u64, Vec<TaskLink>>;

pub(crate) fn add_link(links: &mut Links, link: TaskLink) {
    if links.len() >= MAX_LINKED_TASKS && !links.contains_key(&link.task) {
        return;
    }
    let l = links.entry(link.task).or_default();
    if l.len() < MAX_LINKS_PER_TASK && !l.contains(&link) {
        l.push(link);
    }
}

/// Where each task waited: its waits at await sites, in the order they ended, by task id.
#[derive(Debug, Default)]
pub(crate) struct Awaits {
    pub(crate) by_task: HashMap<u64, TaskWaits>,
}

/// One task's waits, and where the rest of its time went: its polls (running) and the time
/// from each wake-up to the poll it asked for (scheduled); its life, once both ends were read,
/// and the logged arguments of its first poll.
#[derive(Debug, Default)]
pub(crate) struct TaskWaits {
    /// Creation to completion or cancellation.
    pub(crate) span: Option<TaskSpan>,
    /// The logged arguments of its first poll that had some.
    pub(crate) args: Vec<u64>,
    /// The first [`MAX_AWAITS_PER_TASK`], in order.
    pub(crate) listed: Vec<TaskAwait>,
    /// Those past them: how many, and the ticks they waited.
    pub(crate) more: u64,
    pub(crate) more_ticks: u64,
    /// Its polls kept in the log, and their ticks.
    pub(crate) polls: u64,
    pub(crate) running: u64,
    /// Its wake-ups tied to a poll, and the ticks from each to its poll.
    pub(crate) wakes: u64,
    pub(crate) scheduled: u64,
}

impl Awaits {
    /// Task `task`'s entry, unless [`MAX_AWAITING_TASKS`] others are held.
    fn task(&mut self, task: u64) -> Option<&mut TaskWaits> {
        if self.by_task.len() >= MAX_AWAITING_TASKS && !self.by_task.contains_key(&task) {
            return None;
        }
        Some(self.by_task.entry(task).or_default())
    }

    /// A poll of `task` that lasted `ticks`.
    pub(crate) fn poll(&mut self, task: u64, ticks: u64) {
        if let Some(w) = self.task(task) {
            w.polls += 1;
            w.running = w.running.saturating_add(ticks);
        }
    }

    /// The life of a task, its two ends read.
    pub(crate) fn span(&mut self, s: TaskSpan) {
        if let Some(w) = self.task(s.task) {
            w.span.get_or_insert(s);
        }
    }

    /// A poll of `task` with logged arguments `args`: the first such poll's are kept.
    pub(crate) fn args(&mut self, task: u64, args: &[u64]) {
        if let Some(w) = self.task(task) {
            if w.args.is_empty() {
                w.args.extend_from_slice(args);
            }
        }
    }

    /// A wake-up of a task and the poll it led to.
    pub(crate) fn wake(&mut self, k: TaskWake) {
        if let Some(w) = self.task(k.task) {
            w.wakes += 1;
            w.scheduled = w.scheduled.saturating_add(k.scheduled());
        }
    }

    pub(crate) fn add(&mut self, a: TaskAwait) {
        let Some(w) = self.task(a.task) else {
            return;
        };
        if w.listed.len() < MAX_AWAITS_PER_TASK {
            w.listed.push(a);
        } else {
            w.more += 1;
            w.more_ticks = w.more_ticks.saturating_add(a.event.waited);
        }
    }

    /// Takes in another share's waits (of other threads): a task polled on threads of both
    /// shares has its waits in time order.
    pub(crate) fn merge(&mut self, other: Awaits) {
        for (task, w) in other.by_task {
            for a in w.listed {
                self.add(a);
            }
            if let Some(t) = self.task(task) {
                if t.span.is_none() {
                    t.span = w.span;
                }
                if t.args.is_empty() {
                    t.args = w.args;
                }
                t.more += w.more;
                t.more_ticks = t.more_ticks.saturating_add(w.more_ticks);
                t.polls += w.polls;
                t.running = t.running.saturating_add(w.running);
                t.wakes += w.wakes;
                t.scheduled = t.scheduled.saturating_add(w.scheduled);
            }
        }
        for w in self.by_task.values_mut() {
            w.listed.sort_by_key(|a| (a.end, a.thread));
        }
    }
}

/// The tasks of a log as trees: each task under the task it was made or awaited in
/// ([`fdr_format::tasks::TaskParents`]), among the tasks whose life was read.
#[derive(Debug, Default)]
pub(crate) struct TaskTree {
    /// Each task's parent.
    pub(crate) parents: HashMap<u64, u64>,
    /// Each task's children whose life was read, by creation.
    pub(crate) children: HashMap<u64, Vec<u64>>,
}

impl TaskTree {
    /// The tree of `parents`, over the tasks whose life `kept` holds.
    pub(crate) fn new(parents: HashMap<u64, u64>, kept: &Awaits) -> TaskTree {
        let mut children: HashMap<u64, Vec<u64>> = HashMap::new();
        for (&task, &parent) in &parents {
            if kept.by_task.get(&task).is_some_and(|w| w.span.is_some()) {
                children.entry(parent).or_default().push(task);
            }
        }
        for c in children.values_mut() {
            c.sort_by_key(|t| (kept.by_task[t].span.map(|s| s.start), *t));
        }
        TaskTree { parents, children }
    }

    /// `task`'s ancestors, nearest first, at most `max` (a hostile log may make a cycle).
    pub(crate) fn ancestors(&self, task: u64, max: usize) -> Vec<u64> {
        let mut out = Vec::new();
        let mut at = task;
        while let Some(&p) = self.parents.get(&at) {
            if p == task || out.len() >= max || out.contains(&p) {
                break;
            }
            out.push(p);
            at = p;
        }
        out
    }

    /// True if `task`'s ancestors (at most `max`) lead back to one of them or to it: parents in
    /// a cycle (a hostile log), where no task is under another.
    pub(crate) fn on_a_cycle(&self, task: u64, max: usize) -> bool {
        let mut seen = vec![task];
        let mut at = task;
        while let Some(&p) = self.parents.get(&at) {
            if seen.contains(&p) {
                return true;
            }
            if seen.len() > max {
                return false;
            }
            seen.push(p);
            at = p;
        }
        false
    }

    /// `root` and the tasks under it, depth first in order, at most `max` (each once).
    pub(crate) fn subtree(&self, root: u64, max: usize) -> Vec<(u64, usize)> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut todo = vec![(root, 0)];
        while let Some((t, depth)) = todo.pop() {
            if out.len() >= max || !seen.insert(t) {
                continue;
            }
            out.push((t, depth));
            if let Some(c) = self.children.get(&t) {
                todo.extend(c.iter().rev().map(|&c| (c, depth + 1)));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn is_task_limit() {
        use crate::limits::MAX_OPEN_TASKS;
        use crate::model::tasks::{is_task_limit, TooManyWaiting};
        assert!(is_task_limit(&TooManyWaiting(MAX_OPEN_TASKS).into()));
        assert!(!is_task_limit(&crate::CliError::limit("other".into())));
    }

    #[test]
    fn task_tree() {
        use crate::model::tasks::{Awaits, TaskSpan, TaskTree};
        use std::collections::HashMap;
        let mut kept = Awaits::default();
        let span = |task, start| TaskSpan {
            function: 1,
            task,
            start,
            end: start + 10,
            start_thread: 0,
            end_thread: 0,
            cancelled: false,
            inferred: false,
            open: false,
        };
        for (t, start) in [(1, 0), (2, 30), (3, 20), (4, 40)] {
            kept.span(span(t, start));
        }
        // 2 and 3 under 1 (3 made first), 4 under 3; 5 and 6 a cycle (a hostile log).
        let parents = HashMap::from([(2, 1), (3, 1), (4, 3), (5, 6), (6, 5)]);
        let tree = TaskTree::new(parents, &kept);
        assert_eq!(tree.subtree(1, 100), [(1, 0), (3, 1), (4, 2), (2, 1)]);
        assert_eq!(tree.subtree(1, 2), [(1, 0), (3, 1)]);
        assert_eq!(tree.ancestors(4, 100), [3, 1]);
        assert_eq!(tree.ancestors(5, 100), [6]);
        assert!(tree.on_a_cycle(5, 100) && !tree.on_a_cycle(4, 100));
    }
}
