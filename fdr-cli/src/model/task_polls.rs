//! Which polls belong to one async task's tree: the task, the tasks made or awaited in it
//! (found as [`TaskParents`] finds them, or given by a parent link), theirs, and so on. What
//! `fdr replay --task ID` shows: each such poll with everything in it, on whichever thread ran
//! it.
//!
//! A poll is named by the byte offset of its entry ([`Frame::at`]), unique in the log, so the
//! pass that finds them and the per-thread replays that show them need not agree on anything
//! else. A poll nested in a poll of the tree is shown as part of it.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

use fdr_format::sink::{Enter, Exit, LinkSeen, PollSeen, Sink, TaskSeen, GO_ON};
use fdr_format::tasks::TaskParents;

use crate::limits::{MAX_CALLS_DEPTH, MAX_LINKED_TASKS, MAX_REPLAY_POLLS};
use crate::CliError;

/// The sink of the pass: every kept poll's task and where its entry is, and the tasks' parents.
pub(crate) struct PollsOf {
    parents: TaskParents,
    /// Per thread index, the call that exited last: (entry offset, depth). A poll event follows
    /// its poll's exit.
    last_exit: Vec<Option<(u64, usize)>>,
    /// (task, thread index, entry offset, depth) of each poll, at most [`MAX_REPLAY_POLLS`].
    polls: Vec<(u64, u32, u64, usize)>,
    /// Polls past the limit, not kept.
    left_out: u64,
}

impl Default for PollsOf {
    fn default() -> Self {
        PollsOf {
            parents: TaskParents::new(MAX_LINKED_TASKS),
            last_exit: Vec::new(),
            polls: Vec::new(),
            left_out: 0,
        }
    }
}

/// The polls of one task's tree, found by [`PollsOf`].
#[derive(Debug, Default)]
pub(crate) struct TreePolls {
    /// Entry offsets of the polls to show: those of the tree not inside another such poll.
    pub at: HashSet<u64>,
    /// Thread indexes with a poll to show.
    pub threads: HashSet<u32>,
    /// Tasks in the tree that had a poll in the window.
    pub tasks: usize,
    /// Polls of the log past [`MAX_REPLAY_POLLS`], which were not looked at.
    pub left_out: u64,
}

impl PollsOf {
    /// The polls of the tree of task `root`.
    pub(crate) fn tree(self, root: u64) -> TreePolls {
        let mut memo: HashMap<u64, bool> = HashMap::new();
        memo.insert(root, true);
        let mut in_tree = |task: u64| -> bool {
            // Up the parents until the root, a task already judged, or a task without one; a
            // cycle (a hostile log) or a chain deeper than the limit is not in the tree.
            let mut path = Vec::new();
            let mut t = task;
            let found = loop {
                if let Some(&known) = memo.get(&t) {
                    break known;
                }
                if path.len() >= MAX_CALLS_DEPTH || path.contains(&t) {
                    break false;
                }
                path.push(t);
                match self.parents.parent(t) {
                    Some(p) => t = p,
                    None => break false,
                }
            };
            for p in path {
                memo.insert(p, found);
            }
            found
        };
        let mut out = TreePolls {
            left_out: self.left_out,
            ..TreePolls::default()
        };
        let mut tasks = HashSet::new();
        // Per thread, the depth of the poll of the tree that holds the polls after it (they
        // come in order of their exits: inner polls first, so those are dropped afterwards).
        let mut chosen: Vec<(u32, u64, usize)> = Vec::new();
        for &(task, thread, at, depth) in &self.polls {
            if in_tree(task) {
                tasks.insert(task);
                chosen.push((thread, at, depth));
            }
        }
        // An inner poll exits before the poll around it: on each thread, walking back from the
        // last exit, a poll at a lower depth that started earlier holds the deeper ones that
        // exited just before it.
        let mut by_thread: HashMap<u32, Vec<(u64, usize)>> = HashMap::new();
        for (thread, at, depth) in chosen {
            by_thread.entry(thread).or_default().push((at, depth));
        }
        for (thread, polls) in by_thread {
            let mut holder: Option<(u64, usize)> = None;
            for &(at, depth) in polls.iter().rev() {
                match holder {
                    Some((h_at, h_depth)) if depth > h_depth && at > h_at => continue,
                    _ => {}
                }
                holder = Some((at, depth));
                out.at.insert(at);
                out.threads.insert(thread);
            }
        }
        out.tasks = tasks.len();
        out
    }
}

impl Sink for PollsOf {
    type Error = CliError;

    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, CliError> {
        self.parents.enter(e.thread, e.depth);
        Ok(GO_ON)
    }

    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, CliError> {
        self.parents.exit(e.thread, e.depth);
        let t = e.thread as usize;
        if self.last_exit.len() <= t {
            self.last_exit.resize(t + 1, None);
        }
        self.last_exit[t] = Some((e.frame.at, e.depth));
        Ok(GO_ON)
    }

    fn task(&mut self, t: &TaskSeen) -> Result<ControlFlow<()>, CliError> {
        self.parents.task(t);
        Ok(GO_ON)
    }

    fn polled(&mut self, p: &PollSeen) -> Result<ControlFlow<()>, CliError> {
        self.parents.polled(p);
        let Some(Some((at, depth))) = self.last_exit.get(p.thread as usize).copied() else {
            return Ok(GO_ON);
        };
        if self.polls.len() < MAX_REPLAY_POLLS {
            self.polls.push((p.task, p.thread, at, depth));
        } else {
            self.left_out += 1;
        }
        Ok(GO_ON)
    }

    fn link(&mut self, l: &LinkSeen) -> Result<ControlFlow<()>, CliError> {
        self.parents.link(l);
        Ok(GO_ON)
    }
}
