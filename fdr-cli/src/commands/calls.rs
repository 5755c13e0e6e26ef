//! `fdr calls`: individual calls, slowest first, each with the tree of calls it made.
//!
//! The log is read twice: the first pass (which also makes the [`crate::model::engine::Plan`])
//! keeps the `top` slowest calls in a heap of that size; the second builds the tree of calls under each of
//! them, down to `depth` levels and at most [`MAX_CALLS_UNDER_ONE`] calls per tree. (With `--function` the
//! selection needs the plan, so it takes a pass of its own.) Memory is the plan's, the heap and
//! the trees: it does not grow with the log.
//! [`crate::render::calls`] prints them.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use std::convert::Infallible;
use std::ops::ControlFlow;

use fdr_format::awaits::Ties;
use fdr_format::replay::log_end;
use fdr_format::sink::{
    AwaitSeen, Close, Enter, Exit, Frame, Ignore, LinkSeen, PollSeen, Sink, TaskSeen, WokenSeen,
    GO_ON,
};

use fdr_format::tasks::TaskParents;

use crate::limits::{
    MAX_CALLS_DEPTH, MAX_CALLS_SHOWN, MAX_CALLS_TOP, MAX_CALLS_UNDER_ONE, MAX_LINKED_TASKS,
};
use crate::model::engine::Plan;
use crate::model::engine::Report;
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::model::pass::{plan_shared, replay_shared};
use crate::model::tasks::{add_link, Awaits, Links, TaskSpan, TaskTree, TaskWaits, Tasks};
use crate::CliError;

/// What `fdr calls` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallsOptions {
    /// How many calls.
    pub top: usize,
    /// Levels of callees shown under each.
    pub depth: usize,
    /// Merge runs of calls of the same function under one caller into one line (text does;
    /// JSON lists every call).
    pub merge: bool,
    /// Reader threads, each reading a share of the log's threads.
    pub readers: usize,
    /// Show this task's tree alone (no call).
    pub task: Option<u64>,
}

/// Calls shown under each listed call always, even past [`MAX_CALLS_SHOWN`] in all.
const MIN_TREE: usize = 16;

/// No node.
pub(crate) const NONE: u32 = u32::MAX - 1;

/// A call, as both passes see it: thread index, function, start and end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) thread: u32,
    pub(crate) id: u32,
    pub(crate) start: u64,
    pub(crate) end: u64,
}

/// Slowest first; then earlier, then by thread and function.
type Rank = (u64, Reverse<u64>, Reverse<u32>, Reverse<u32>, Reverse<u64>);

fn rank(k: &Key) -> Rank {
    (
        k.end.saturating_sub(k.start),
        Reverse(k.start),
        Reverse(k.thread),
        Reverse(k.id),
        Reverse(k.end),
    )
}

/// The keys of the `n` slowest calls handed to it, in a heap of that size.
#[derive(Debug, Default)]
pub(crate) struct TopKeys {
    n: usize,
    heap: BinaryHeap<Reverse<(Rank, u32, u32)>>,
}

impl TopKeys {
    /// Room for `n` calls.
    pub(crate) fn new(n: usize) -> TopKeys {
        TopKeys {
            n,
            heap: BinaryHeap::new(),
        }
    }

    /// A call: kept if it is among the `n` slowest so far.
    pub(crate) fn add(&mut self, k: &Key) {
        self.add_ranked((rank(k), k.thread, k.id));
    }

    fn add_ranked(&mut self, r: (Rank, u32, u32)) {
        if self.n == 0 {
            return;
        }
        if self.heap.len() < self.n {
            self.heap.push(Reverse(r));
        } else if self.heap.peek().is_some_and(|w| r > w.0) {
            self.heap.pop();
            self.heap.push(Reverse(r));
        }
    }

    /// Takes in the calls another share kept (the room becomes the larger of the two).
    pub(crate) fn merge(&mut self, other: TopKeys) {
        self.n = self.n.max(other.n);
        for Reverse(r) in other.heap {
            self.add_ranked(r);
        }
    }

    /// True if no call was kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The calls kept, slowest first (then earlier, then by thread and function).
    pub(crate) fn keys(self) -> Vec<Key> {
        let mut keys: Vec<(Rank, Key)> = self
            .heap
            .into_iter()
            .map(|Reverse((r, thread, id))| {
                let start = (r.1).0;
                let key = Key {
                    thread,
                    id,
                    start,
                    end: start.saturating_add(r.0),
                };
                (r, key)
            })
            .collect();
        keys.sort_by_key(|k| Reverse(k.0));
        keys.into_iter().map(|(_, k)| k).collect()
    }
}

/// Keeps the `n` slowest calls, and the tasks of async functions that pass the filters.
pub(crate) struct Top {
    heap: TopKeys,
    tasks: Tasks,
    spans: SlowTasks,
    links: Links,
    ties: Ties,
    /// Each thread's last exit (function, ticks, logged arguments): a poll, when a poll event
    /// follows.
    last_exit: Vec<(u32, u64, Vec<u64>)>,
    awaits: Awaits,
    parents: TaskParents,
}

impl Sink for Top {
    type Error = CliError;

    fn awaited(&mut self, a: &AwaitSeen) -> Result<ControlFlow<()>, CliError> {
        if let Some(a) = self.ties.awaited(a) {
            self.awaits.add(a);
        }
        Ok(GO_ON)
    }

    fn polled(&mut self, p: &PollSeen) -> Result<ControlFlow<()>, CliError> {
        let (waits, wakes) = self.ties.polled(p);
        for a in waits {
            self.awaits.add(a);
        }
        for w in wakes {
            self.awaits.wake(w);
        }
        if let Some((id, ticks, args)) = self.last_exit.get(p.thread as usize) {
            if *id == p.id {
                self.awaits.poll(p.task, *ticks);
                if !args.is_empty() {
                    self.awaits.args(p.task, args);
                }
            }
        }
        self.parents.polled(p);
        Ok(GO_ON)
    }

    #[inline]
    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, CliError> {
        self.parents.enter(e.thread, e.depth);
        Ok(GO_ON)
    }

    fn woken(&mut self, w: &WokenSeen) -> Result<ControlFlow<()>, CliError> {
        self.ties.woken(w);
        Ok(GO_ON)
    }

    fn link(&mut self, l: &LinkSeen) -> Result<ControlFlow<()>, CliError> {
        add_link(&mut self.links, l.link);
        self.parents.link(l);
        Ok(GO_ON)
    }

    fn task(&mut self, t: &TaskSeen) -> Result<ControlFlow<()>, CliError> {
        self.ties.task(t);
        self.parents.task(t);
        if let Some(s) = self.tasks.event(t.thread, t.tsc, t.window, t.event)? {
            self.span(s);
        }
        Ok(GO_ON)
    }

    #[inline]
    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, CliError> {
        let k = Key {
            thread: e.thread,
            id: e.frame.id,
            start: e.frame.start,
            end: e.end,
        };
        self.ties.exit(e.thread, e.frame.id);
        self.parents.exit(e.thread, e.depth);
        let t = e.thread as usize;
        if t >= self.last_exit.len() {
            self.last_exit.resize_with(t + 1, || (NONE, 0, Vec::new()));
        }
        let last = &mut self.last_exit[t];
        (last.0, last.1) = (e.frame.id, e.end.saturating_sub(e.frame.start));
        last.2.clear();
        last.2.extend_from_slice(e.args);
        self.heap.add(&k);
        Ok(GO_ON)
    }
}

/// The `n` slowest tasks.
#[derive(Default)]
struct SlowTasks {
    n: usize,
    heap: BinaryHeap<Reverse<(u64, Reverse<u64>, u64)>>,
    spans: HashMap<u64, TaskSpan>,
}

impl SlowTasks {
    fn add(&mut self, s: TaskSpan) {
        if self.n == 0 {
            return;
        }
        let r = (s.end.saturating_sub(s.start), Reverse(s.start), s.task);
        if self.heap.len() == self.n {
            match self.heap.peek() {
                Some(w) if r > w.0 => {
                    let Reverse(out) = self.heap.pop().expect("a full heap");
                    self.spans.remove(&out.2);
                }
                _ => return,
            }
        }
        self.heap.push(Reverse(r));
        self.spans.insert(s.task, s);
    }

    /// Slowest first.
    fn into_sorted(self) -> Vec<TaskSpan> {
        let mut v: Vec<TaskSpan> = self.spans.into_values().collect();
        v.sort_by_key(|s| (Reverse(s.end.saturating_sub(s.start)), s.start, s.task));
        v
    }
}

impl Top {
    fn new(n: usize) -> Top {
        Top {
            heap: TopKeys::new(n),
            tasks: Tasks::default(),
            spans: SlowTasks {
                n,
                ..SlowTasks::default()
            },
            links: Links::new(),
            ties: Ties::default(),
            last_exit: Vec::new(),
            awaits: Awaits::default(),
            parents: TaskParents::new(MAX_LINKED_TASKS),
        }
    }

    /// A task whose two ends were read.
    fn span(&mut self, s: TaskSpan) {
        self.spans.add(s);
        self.awaits.span(s);
    }

    /// Takes in the calls and tasks the shares kept; closes the tasks still open at `end`,
    /// when the log was taken.
    fn merge(&mut self, shares: Vec<Top>, end: u64) -> Result<(), CliError> {
        for t in shares {
            self.heap.merge(t.heap);
            for s in t.spans.spans.into_values() {
                self.spans.add(s);
            }
            for link in t.links.into_values().flatten() {
                add_link(&mut self.links, link);
            }
            self.awaits.merge(t.awaits);
            self.parents.merge(t.parents);
            for s in self.tasks.merge(t.tasks)? {
                self.span(s);
            }
        }
        for s in std::mem::take(&mut self.tasks).finish(end) {
            self.span(s);
        }
        Ok(())
    }

    /// A sink that lists no call and keeps what `fdr calls` keeps of every task: its life,
    /// waits, polls, wake-ups, links and parent ([`kept_tasks`] takes them out).
    pub(crate) fn tasks_only() -> Top {
        Top::new(0)
    }
}

/// What [`Top::tasks_only`] sinks kept of a log's tasks, their shares merged and the tasks still
/// open closed at `end`: each task's life, waits, polls and wake-ups (at most
/// [`crate::limits::MAX_AWAITING_TASKS`] tasks), and the tasks as trees.
pub(crate) fn kept_tasks(shares: Vec<Top>, end: u64) -> Result<(Awaits, TaskTree), CliError> {
    let mut top = Top::tasks_only();
    top.merge(shares, end)?;
    let awaits = std::mem::take(&mut top.awaits);
    let tree = TaskTree::new(top.parents.into_map(), &awaits);
    Ok((awaits, tree))
}

/// No node: a call past [`MAX_CALLS_UNDER_ONE`], or inside one.
const HIDDEN: u32 = u32::MAX;

/// One call in a tree, or (in text) a run of calls of the same function under one caller.
#[derive(Clone, Debug)]
pub(crate) struct CallNode {
    pub(crate) id: u32,
    pub(crate) count: u64,
    pub(crate) total: u64,
    pub(crate) self_: u64,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) inferred: bool,
    pub(crate) open: bool,
    /// Calls made below the depth shown.
    pub(crate) deeper: u64,
    /// Calls it made that are not shown (past [`MAX_CALLS_UNDER_ONE`]) and their time.
    pub(crate) more: u64,
    pub(crate) more_ticks: u64,
    /// Its first and last callee, and its next sibling ([`NONE`] for none).
    pub(crate) first: u32,
    pub(crate) last: u32,
    pub(crate) next: u32,
    /// The logged arguments of its (first) call.
    pub(crate) args: Vec<u64>,
}

impl CallNode {
    /// A call of `id` that started at `start`, not yet ended.
    pub(crate) fn new(id: u32, start: u64) -> CallNode {
        CallNode {
            id,
            count: 0,
            total: 0,
            self_: 0,
            start,
            end: start,
            inferred: false,
            open: false,
            deeper: 0,
            more: 0,
            more_ticks: 0,
            first: NONE,
            last: NONE,
            next: NONE,
            args: Vec::new(),
        }
    }

    /// Counts the call `f` that ended at `end`, as `how`.
    pub(crate) fn count(&mut self, f: &Frame, end: u64, how: Close) {
        self.count += 1;
        self.total = self.total.saturating_add(end.saturating_sub(f.start));
        self.self_ = self.self_.saturating_add(f.self_ticks(end));
        self.end = end;
        self.inferred |= f.inferred;
        self.open |= how == Close::WindowEnd;
    }
}

/// The tree of one selected call, built while it runs.
struct Build {
    key: (u32, u32, u64),
    /// Picked by where it starts ([`Starting`]): kept however it ends.
    any_end: bool,
    root_depth: usize,
    nodes: Vec<CallNode>,
    /// The node of each open call, by depth below the root (up to the depth shown).
    path: Vec<u32>,
}

/// Calls picked by where they start rather than by their key (what `fdr explain` looks for):
/// every call of one of `functions` (of any function when it is empty) entered on one of
/// `threads` at a tick in `from..=to`, the first `max` of them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Starting {
    /// Thread indices.
    pub(crate) threads: Vec<u32>,
    /// The first tick.
    pub(crate) from: u64,
    /// The last tick.
    pub(crate) to: u64,
    /// Function ids, sorted (empty: any).
    pub(crate) functions: Vec<u32>,
    /// The most calls picked.
    pub(crate) max: usize,
}

impl Starting {
    fn picks(&self, thread: u32, f: &Frame) -> bool {
        (self.from..=self.to).contains(&f.start)
            && self.threads.contains(&thread)
            && (self.functions.is_empty() || self.functions.binary_search(&f.id).is_ok())
    }
}

/// Builds the trees of the selected calls.
pub(crate) struct Capture {
    /// The selected calls' starts, sorted: most entries are not one of them, and a binary
    /// search over a few starts says so faster than hashing.
    starts: Vec<u64>,
    want: HashMap<(u32, u32, u64), Vec<u64>>,
    /// Calls picked by where they start, and how many were.
    starting: Option<Starting>,
    picked: usize,
    active: Vec<Vec<Build>>,
    done: Vec<(Key, Vec<CallNode>)>,
    merge: bool,
    limit: usize,
    /// Nodes per tree.
    cap: usize,
}

impl Capture {
    /// Builds the trees of the calls `keys`, down to `depth` levels, at most `cap` nodes each;
    /// `merge`: runs of calls of one function under one caller are one node.
    pub(crate) fn of_keys(keys: &[Key], merge: bool, depth: usize, cap: usize) -> Capture {
        let mut want: HashMap<(u32, u32, u64), Vec<u64>> = HashMap::new();
        for k in keys {
            want.entry((k.thread, k.id, k.start))
                .or_default()
                .push(k.end);
        }
        let mut starts: Vec<u64> = keys.iter().map(|k| k.start).collect();
        starts.sort_unstable();
        starts.dedup();
        Capture {
            starts,
            want,
            starting: None,
            picked: 0,
            active: Vec::new(),
            done: Vec::new(),
            merge,
            limit: depth,
            cap,
        }
    }

    /// Builds the trees of the calls `s` picks, one node per call, down to `depth` levels, at
    /// most `cap` nodes each.
    pub(crate) fn starting(s: Starting, depth: usize, cap: usize) -> Capture {
        Capture {
            starting: Some(s),
            ..Capture::of_keys(&[], false, depth, cap)
        }
    }

    /// The trees built, each with its call's key, in no order.
    pub(crate) fn into_trees(self) -> Vec<(Key, Vec<CallNode>)> {
        self.done
    }

    fn enter_build(&self, b: &mut Build, depth: usize, f: &Frame, args: &[u64]) {
        let Some(rel) = depth.checked_sub(b.root_depth).filter(|&r| r > 0) else {
            return;
        };
        if rel > self.limit {
            if let Some(&anc) = b.path.get(self.limit) {
                if anc != HIDDEN {
                    b.nodes[anc as usize].deeper += 1;
                }
            }
            return;
        }
        b.path.truncate(rel);
        let Some(&parent) = b.path.last() else {
            return;
        };
        if parent == HIDDEN {
            b.path.push(HIDDEN);
            return;
        }
        let last = b.nodes[parent as usize].last;
        // Calls with arguments stand alone: a run of them would show one call's arguments.
        if self.merge
            && last != NONE
            && b.nodes[last as usize].id == f.id
            && args.is_empty()
            && b.nodes[last as usize].args.is_empty()
        {
            b.path.push(last);
            return;
        }
        if b.nodes.len() >= self.cap {
            b.nodes[parent as usize].more += 1;
            b.path.push(HIDDEN);
            return;
        }
        let n = b.nodes.len() as u32;
        b.nodes.push(CallNode {
            args: args.to_vec(),
            ..CallNode::new(f.id, f.start)
        });
        if last == NONE {
            b.nodes[parent as usize].first = n;
        } else {
            b.nodes[last as usize].next = n;
        }
        b.nodes[parent as usize].last = n;
        b.path.push(n);
    }
}

impl Sink for Capture {
    type Error = Infallible;

    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, Infallible> {
        let Enter {
            thread,
            depth,
            frame: f,
            args,
        } = *e;
        let t = thread as usize;
        if t < self.active.len() {
            let mut builds = std::mem::take(&mut self.active[t]);
            for b in &mut builds {
                self.enter_build(b, depth, f, args);
            }
            self.active[t] = builds;
        }
        let key = (thread, f.id, f.start);
        let picked = self
            .starting
            .as_ref()
            .is_some_and(|s| self.picked < s.max && s.picks(thread, f));
        if picked || self.starts.binary_search(&f.start).is_ok() && self.want.contains_key(&key) {
            self.picked += usize::from(picked);
            if t >= self.active.len() {
                self.active.resize_with(t + 1, Vec::new);
            }
            self.active[t].push(Build {
                key,
                any_end: picked,
                root_depth: depth,
                nodes: vec![CallNode {
                    args: args.to_vec(),
                    ..CallNode::new(f.id, f.start)
                }],
                path: vec![0],
            });
        }
        Ok(GO_ON)
    }

    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, Infallible> {
        let (depth, f, end, how) = (e.depth, e.frame, e.end, e.how);
        let Some(builds) = self.active.get_mut(e.thread as usize) else {
            return Ok(GO_ON);
        };
        let mut i = 0;
        while i < builds.len() {
            let b = &mut builds[i];
            let Some(rel) = depth.checked_sub(b.root_depth) else {
                i += 1;
                continue;
            };
            if rel == 0 {
                let mut b = builds.remove(i);
                b.nodes[0].count(f, end, how);
                // A call picked by its start is kept however it ends; one picked by its key,
                // when it ends as that key says.
                let wanted = b.any_end
                    || self.want.get_mut(&b.key).is_some_and(|ends| {
                        let at = ends.iter().position(|&e| e == end);
                        at.map(|at| ends.swap_remove(at)).is_some()
                    });
                if wanted {
                    let (thread, id, start) = b.key;
                    let key = Key {
                        thread,
                        id,
                        start,
                        end,
                    };
                    self.done.push((key, b.nodes));
                }
                continue;
            }
            if rel <= self.limit {
                if let Some(&n) = b.path.get(rel) {
                    if n != HIDDEN {
                        b.nodes[n as usize].count(f, end, how);
                    } else if let Some(&p) = b.path.get(rel - 1).filter(|&&p| p != HIDDEN) {
                        let p = &mut b.nodes[p as usize];
                        p.more_ticks = p.more_ticks.saturating_add(end.saturating_sub(f.start));
                    }
                }
                b.path.truncate(rel);
            }
            i += 1;
        }
        Ok(GO_ON)
    }
}

/// Nodes per tree when `trees` calls are listed: an equal share of [`MAX_CALLS_SHOWN`], at least
/// [`MIN_TREE`] and at most [`MAX_CALLS_UNDER_ONE`].
pub(crate) fn tree_cap(trees: usize) -> usize {
    (MAX_CALLS_SHOWN / trees.max(1)).clamp(MIN_TREE, MAX_CALLS_UNDER_ONE)
}

/// What `fdr calls` shows: the slowest calls, each with the tree of calls it made, and the
/// slowest tasks of async functions.
#[derive(Debug)]
pub(crate) struct Slowest {
    /// The calls, slowest first, each with its tree (its root first).
    pub(crate) calls: Vec<(Key, Vec<CallNode>)>,
    /// The slowest tasks.
    pub tasks: Vec<TaskSpan>,
    /// What the listed tasks are tied to.
    pub links: Links,
    /// Where the listed tasks and those under them waited, and what else is kept of them.
    pub awaits: Awaits,
    /// Each task's parent and children.
    pub tree: TaskTree,
    /// The task asked for alone (`--task`): no call is listed.
    pub one_task: bool,
    /// Whether the report lists the tasks: a function was chosen, or there is no call to list.
    pub show_tasks: bool,
    /// The first pass: tables, threads, time zero.
    pub plan: Plan,
}

impl Slowest {
    /// The tree of listed task `root`, depth first: each task's life, what is kept of it, and
    /// its depth under `root` (at most [`MAX_CALLS_UNDER_ONE`] tasks).
    pub(crate) fn task_tree(&self, root: &TaskSpan) -> Vec<(TaskSpan, Option<&TaskWaits>, usize)> {
        self.tree
            .subtree(root.task, MAX_CALLS_UNDER_ONE)
            .into_iter()
            .filter_map(|(task, depth)| {
                let kept = self.awaits.by_task.get(&task);
                let span = if depth == 0 {
                    Some(*root)
                } else {
                    kept.and_then(|w| w.span)
                };
                span.map(|s| (s, kept, depth))
            })
            .collect()
    }

    /// The number of calls listed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.calls.len()
    }
}

/// The `top` slowest calls of `log` behind `filter`, each with its tree, and the slowest tasks.
pub(crate) fn slowest(
    log: &Log,
    filter: &Filter,
    opts: &CallsOptions,
    progress: &dyn Report,
) -> Result<Slowest, CliError> {
    let readers = opts.readers.max(1);
    let mut tops: Vec<Top> = (0..readers)
        .map(|_| Top::new(opts.top.min(MAX_CALLS_TOP)))
        .collect();
    let (p, pass) = if filter.needs_plan() {
        let p = plan_shared(log, filter, progress, &mut vec![Ignore; readers])?;
        replay_shared(log, &mut tops, Some(&p), filter, progress, 1)?;
        (p, 2)
    } else {
        (plan_shared(log, filter, progress, &mut tops)?, 1)
    };
    let mut top = Top::new(opts.top.min(MAX_CALLS_TOP));
    let end = filter.tasks_end(log_end(&p.info, &p.threads));
    top.merge(tops, end)?;
    if top.heap.is_empty() && !filter.needs_plan() {
        // No call to list: the first pass (which reads no task) left out the tasks of async
        // functions whose polls were all erased, which a pass of their own finds.
        let mut tops: Vec<Top> = (0..readers)
            .map(|_| Top::new(opts.top.min(MAX_CALLS_TOP)))
            .collect();
        replay_shared(log, &mut tops, Some(&p), filter, progress, 1)?;
        top.merge(tops, end)?;
    }
    let mut tasks = std::mem::take(&mut top.spans).into_sorted();
    let mut awaits = std::mem::take(&mut top.awaits);
    let parents = std::mem::replace(&mut top.parents, TaskParents::new(0));
    let tree = TaskTree::new(parents.into_map(), &awaits);
    if let Some(id) = opts.task {
        // One task's tree, and no call.
        let span = awaits.by_task.get(&id).and_then(|w| w.span);
        tasks = vec![span.ok_or_else(|| CliError::Empty {
            path: log.name().to_string(),
            what: format!("no task {id} whose creation or end is in the log (behind the filters)"),
        })?];
        top.heap = TopKeys::new(0);
    } else {
        // A listed task under another listed one is shown there (but for parents in a cycle).
        let listed: HashSet<u64> = tasks.iter().map(|s| s.task).collect();
        tasks.retain(|s| {
            tree.on_a_cycle(s.task, MAX_CALLS_DEPTH)
                || !tree
                    .ancestors(s.task, MAX_CALLS_DEPTH)
                    .iter()
                    .any(|a| listed.contains(a))
        });
    }
    // What is kept of the tasks shown, and of the parents of those at the top.
    let mut shown: HashSet<u64> = tasks
        .iter()
        .flat_map(|s| tree.subtree(s.task, MAX_CALLS_UNDER_ONE))
        .map(|(t, _)| t)
        .collect();
    shown.extend(tasks.iter().filter_map(|s| tree.parents.get(&s.task)));
    let mut links = std::mem::take(&mut top.links);
    links.retain(|task, _| shown.contains(task));
    awaits.by_task.retain(|task, _| shown.contains(task));
    let keys = top.heap.keys();
    let cap = tree_cap(keys.len());
    let mut caps: Vec<Capture> = (0..readers)
        .map(|_| Capture::of_keys(&keys, opts.merge, opts.depth, cap))
        .collect();
    if !keys.is_empty() {
        replay_shared(log, &mut caps, Some(&p), filter, progress, pass)?;
    }
    let mut trees: HashMap<Key, Vec<CallNode>> =
        caps.into_iter().flat_map(Capture::into_trees).collect();
    let ordered: Vec<(Key, Vec<CallNode>)> = keys
        .iter()
        .filter_map(|k| trees.remove(k).map(|t| (*k, t)))
        .collect();
    // The tasks of the async functions asked for (or of any, when there is no call to list):
    // their latency is what callers waited, which their polls do not show.
    let show_tasks = filter.selects_functions() || ordered.is_empty();
    Ok(Slowest {
        calls: ordered,
        tasks,
        links,
        awaits,
        tree,
        one_task: opts.task.is_some(),
        show_tasks,
        plan: p,
    })
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn slowest() -> Result<(), crate::CliError> {
        use crate::commands::calls::{slowest, CallsOptions};
        use crate::model::engine::Silent;
        use crate::model::{filter::Filter, input::Log};
        let log = Log::open("app.fdr".as_ref())?;
        let opts = CallsOptions {
            top: 5,
            depth: 3,
            merge: true,
            readers: 1,
            task: None,
        };
        let s = slowest(&log, &Filter::none(), &opts, &Silent)?;
        println!("{} calls", s.len());
        Ok::<(), crate::CliError>(())
    }
}
