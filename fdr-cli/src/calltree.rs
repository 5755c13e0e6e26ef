//! `fdr calls`: individual calls, slowest first, each with the tree of calls it made.
//!
//! The log is read twice: the first pass (which also makes the [`Plan`]) keeps the `top`
//! slowest calls in a heap of that size; the second builds the tree of calls under each of
//! them, down to `depth` levels and at most [`MAX_TREE`] calls per tree. (With `--function` the
//! selection needs the plan, so it takes a pass of its own.) Memory is the plan's, the heap and
//! the trees: it does not grow with the log.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt::Write as _;
use std::io::Write;

use clap::ValueEnum;

use crate::calls::{plan_shared, replay_shared, Close, Frame, Nothing, Plan, Sink, TaskEvent};
use crate::filter::Filter;
use crate::input::Log;
use crate::names::{json_string, shown, Names};
use crate::progress::Progress;
use crate::tasks::{TaskSpan, Tasks};
use crate::trigger::{relative, thread_label};
use crate::units::{human, lasted, open_human, Clock};
use crate::CliError;

/// Output format of `fdr calls`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Each call and the indented tree of the calls it made.
    Text,
    /// One JSON array of nested call objects.
    Json,
}

/// What `fdr calls` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// How many calls.
    pub top: usize,
    /// Levels of callees shown under each.
    pub depth: usize,
    /// Text or JSON.
    pub format: Format,
    /// Reader threads, each reading a share of the log's threads.
    pub readers: usize,
}

/// Calls shown under one call; past this, the calls a shown call makes are counted.
pub const MAX_TREE: usize = 1 << 12;
/// Calls shown under all the listed calls together: with many calls listed, each gets a share.
pub const MAX_SHOWN: usize = 1 << 18;
/// The most calls `--top` lists.
pub const MAX_TOP: usize = 100_000;
/// Calls shown under each listed call always, even past [`MAX_SHOWN`] in all.
const MIN_TREE: usize = 16;

/// No node.
const NONE: u32 = u32::MAX - 1;

/// A call, as both passes see it: thread index, function, start and end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    thread: u32,
    id: u32,
    start: u64,
    end: u64,
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

/// Keeps the `n` slowest calls, and the tasks of async functions that pass the filters.
struct Top {
    n: usize,
    heap: BinaryHeap<Reverse<(Rank, u32, u32)>>,
    tasks: Tasks,
    spans: SlowTasks,
}

impl Sink for Top {
    fn task(&mut self, thread: u32, tsc: u64, window: u64, ev: TaskEvent) -> Result<(), CliError> {
        if let Some(s) = self.tasks.event(thread, tsc, window, ev)? {
            self.spans.add(s);
        }
        Ok(())
    }

    #[inline]
    fn exit(
        &mut self,
        thread: u32,
        _: usize,
        f: &Frame,
        end: u64,
        _: Close,
        _: &[u64],
    ) -> Result<(), CliError> {
        let k = Key {
            thread,
            id: f.id,
            start: f.start,
            end,
        };
        self.add((rank(&k), thread, f.id));
        Ok(())
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
            n,
            heap: BinaryHeap::new(),
            tasks: Tasks::default(),
            spans: SlowTasks {
                n,
                ..SlowTasks::default()
            },
        }
    }

    /// Takes in the calls and tasks the shares kept; closes the tasks still open at `end`,
    /// when the log was taken.
    fn merge(&mut self, shares: Vec<Top>, end: u64) -> Result<(), CliError> {
        for t in shares {
            for Reverse(r) in t.heap {
                self.add(r);
            }
            for s in t.spans.spans.into_values() {
                self.spans.add(s);
            }
            for s in self.tasks.merge(t.tasks)? {
                self.spans.add(s);
            }
        }
        for s in std::mem::take(&mut self.tasks).finish(end) {
            self.spans.add(s);
        }
        Ok(())
    }

    fn add(&mut self, r: (Rank, u32, u32)) {
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

    fn keys(self) -> Vec<Key> {
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

/// No node: a call past [`MAX_TREE`], or inside one.
const HIDDEN: u32 = u32::MAX;

/// One call in a tree, or (in text) a run of calls of the same function under one caller.
#[derive(Clone, Debug)]
struct Node {
    id: u32,
    count: u64,
    total: u64,
    self_: u64,
    start: u64,
    end: u64,
    inferred: bool,
    open: bool,
    /// Calls made below the depth shown.
    deeper: u64,
    /// Calls it made that are not shown (past [`MAX_TREE`]) and their time.
    more: u64,
    more_ticks: u64,
    /// Its first and last callee, and its next sibling ([`NONE`] for none).
    first: u32,
    last: u32,
    next: u32,
    /// The logged arguments of its (first) call.
    args: Vec<u64>,
}

impl Node {
    fn new(id: u32, start: u64) -> Node {
        Node {
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

    fn count(&mut self, f: &Frame, end: u64, how: Close) {
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
    root_depth: usize,
    nodes: Vec<Node>,
    /// The node of each open call, by depth below the root (up to the depth shown).
    path: Vec<u32>,
}

/// Builds the trees of the selected calls.
struct Capture {
    /// The selected calls' starts, sorted: most entries are not one of them, and a binary
    /// search over a few starts says so faster than hashing.
    starts: Vec<u64>,
    want: HashMap<(u32, u32, u64), Vec<u64>>,
    active: Vec<Vec<Build>>,
    done: Vec<(Key, Vec<Node>)>,
    merge: bool,
    limit: usize,
    /// Nodes per tree.
    cap: usize,
}

impl Capture {
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
        b.nodes.push(Node {
            args: args.to_vec(),
            ..Node::new(f.id, f.start)
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
    fn enter(
        &mut self,
        thread: u32,
        depth: usize,
        f: &Frame,
        args: &[u64],
    ) -> Result<(), CliError> {
        let t = thread as usize;
        if t < self.active.len() {
            let mut builds = std::mem::take(&mut self.active[t]);
            for b in &mut builds {
                self.enter_build(b, depth, f, args);
            }
            self.active[t] = builds;
        }
        let key = (thread, f.id, f.start);
        if self.starts.binary_search(&f.start).is_ok() && self.want.contains_key(&key) {
            if t >= self.active.len() {
                self.active.resize_with(t + 1, Vec::new);
            }
            self.active[t].push(Build {
                key,
                root_depth: depth,
                nodes: vec![Node {
                    args: args.to_vec(),
                    ..Node::new(f.id, f.start)
                }],
                path: vec![0],
            });
        }
        Ok(())
    }

    fn exit(
        &mut self,
        thread: u32,
        depth: usize,
        f: &Frame,
        end: u64,
        how: Close,
        _: &[u64],
    ) -> Result<(), CliError> {
        let t = thread as usize;
        let Some(builds) = self.active.get_mut(t) else {
            return Ok(());
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
                let ends = self.want.get_mut(&b.key);
                if let Some(ends) = ends {
                    if let Some(at) = ends.iter().position(|&e| e == end) {
                        ends.swap_remove(at);
                        let (thread, id, start) = b.key;
                        let key = Key {
                            thread,
                            id,
                            start,
                            end,
                        };
                        self.done.push((key, b.nodes));
                    }
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
        Ok(())
    }
}

/// Runs `fdr calls` on `log`.
///
/// ```no_run
/// use fdr_cli::calltree::{run, Format, Options};
/// use fdr_cli::filter::Filter;
/// use fdr_cli::input::Log;
/// use fdr_cli::progress::Progress;
/// let log = Log::open("app.fdr".as_ref())?;
/// let opts = Options { top: 5, depth: 3, format: Format::Text, readers: 1 };
/// run(&log, &Filter::none(), &opts, &mut std::io::stdout(), &Progress::hidden())?;
/// # Ok::<(), fdr_cli::CliError>(())
/// ```
pub fn run(
    log: &Log,
    filter: &Filter,
    opts: &Options,
    out: &mut dyn Write,
    progress: &Progress,
) -> Result<(), CliError> {
    let readers = opts.readers.max(1);
    let mut tops: Vec<Top> = (0..readers)
        .map(|_| Top::new(opts.top.min(MAX_TOP)))
        .collect();
    let (p, pass) = if filter.needs_plan() {
        let mut nothing: Vec<Nothing> = (0..readers).map(|_| Nothing).collect();
        let p = plan_shared(log, filter, progress, &mut nothing)?;
        replay_shared(log, &mut tops, Some(&p), filter, progress, 1)?;
        (p, 2)
    } else {
        (plan_shared(log, filter, progress, &mut tops)?, 1)
    };
    let mut top = Top::new(opts.top.min(MAX_TOP));
    let end = crate::calls::log_end(&p.info, &p.threads);
    top.merge(tops, end)?;
    if top.heap.is_empty() && !filter.needs_plan() {
        // No call to list: the first pass (which reads no task) left out the tasks of async
        // functions whose polls were all erased, which a pass of their own finds.
        let mut tops: Vec<Top> = (0..readers)
            .map(|_| Top::new(opts.top.min(MAX_TOP)))
            .collect();
        replay_shared(log, &mut tops, Some(&p), filter, progress, 1)?;
        top.merge(tops, end)?;
    }
    let tasks = std::mem::take(&mut top.spans).into_sorted();
    let keys = top.keys();
    let mut want: HashMap<(u32, u32, u64), Vec<u64>> = HashMap::new();
    for k in &keys {
        want.entry((k.thread, k.id, k.start))
            .or_default()
            .push(k.end);
    }
    let mut starts: Vec<u64> = keys.iter().map(|k| k.start).collect();
    starts.sort_unstable();
    starts.dedup();
    let mut caps: Vec<Capture> = (0..readers)
        .map(|_| Capture {
            starts: starts.clone(),
            want: want.clone(),
            active: Vec::new(),
            done: Vec::new(),
            merge: opts.format == Format::Text,
            limit: opts.depth,
            cap: (MAX_SHOWN / keys.len().max(1)).clamp(MIN_TREE, MAX_TREE),
        })
        .collect();
    if !keys.is_empty() {
        replay_shared(log, &mut caps, Some(&p), filter, progress, pass)?;
    }
    let mut trees: HashMap<Key, Vec<Node>> = caps.into_iter().flat_map(|c| c.done).collect();
    let ordered: Vec<(Key, Vec<Node>)> = keys
        .iter()
        .filter_map(|k| trees.remove(k).map(|t| (*k, t)))
        .collect();
    let names = Names::new(&p.info);
    let clock = Clock::new(p.info.header.cycle_frequency);
    let w = |e| CliError::io("<output>", "writing the report", e);
    let mut o = std::io::BufWriter::with_capacity(1 << 16, out);
    match opts.format {
        Format::Text => {
            // The tasks of the async functions asked for (or of any, when there is no call to
            // list): their latency is what callers waited, which their polls do not show.
            let tasks = if filter.selects_functions() || ordered.is_empty() {
                &tasks[..]
            } else {
                &[]
            };
            write_text(&ordered, &p, &names, &clock, opts, &mut o).map_err(w)?;
            write_tasks(tasks, &p, &names, &clock, &mut o).map_err(w)?;
            if let Some(n) = crate::info::note(&p.info, &p.threads) {
                writeln!(o, "{n}").map_err(w)?;
            }
        }
        Format::Json => write_json(&ordered, &p, &names, &clock, &mut o).map_err(w)?,
    }
    o.flush().map_err(w)
}

/// The slowest tasks, after the calls.
fn write_tasks(
    tasks: &[TaskSpan],
    p: &Plan,
    names: &Names,
    clock: &Clock,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if tasks.is_empty() {
        return Ok(());
    }
    let tid = |t: u32| p.threads.get(t as usize).map_or(0, |t| t.tid);
    writeln!(out)?;
    writeln!(
        out,
        "tasks, slowest first: each call of an async fn, from its creation to its completion or \
         drop (its calls above are its polls; fdr account has their table)"
    )?;
    for (i, s) in tasks.iter().enumerate() {
        let dur = clock.ns(s.end.saturating_sub(s.start));
        let mut line = format!(
            "{}. {} task on {}, created at {}{}, ",
            i + 1,
            shown(&names.function(s.function)),
            thread_label(names, tid(s.start_thread)),
            relative(s.start, p.origin, clock),
            if s.inferred {
                " (before the window: its start)"
            } else {
                ""
            },
        );
        if s.open {
            let _ = write!(
                line,
                "ran {}, open: not completed when the log was taken",
                open_human(dur)
            );
        } else {
            let _ = write!(
                line,
                "{} after {}",
                if s.cancelled { "dropped" } else { "completed" },
                human(dur)
            );
            if s.end_thread != s.start_thread {
                let _ = write!(line, " on {}", thread_label(names, tid(s.end_thread)));
            }
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// `4,096`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn write_text(
    trees: &[(Key, Vec<Node>)],
    p: &Plan,
    names: &Names,
    clock: &Clock,
    opts: &Options,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if let Some(h) = crate::trigger::header(&p.info, names, clock, p.origin) {
        writeln!(out, "{h}")?;
        writeln!(out)?;
    }
    if trees.is_empty() {
        return writeln!(out, "no calls");
    }
    let (mut any_inferred, mut any_open, mut any_deeper) = (false, false, false);
    for (rank, (key, nodes)) in trees.iter().enumerate() {
        let root = &nodes[0];
        let tid = p.threads.get(key.thread as usize).map_or(0, |t| t.tid);
        let mut marks = String::new();
        if root.inferred {
            marks.push_str(" *");
        }
        if root.open {
            marks.push_str(", open: still running when the window was written");
        }
        if rank > 0 {
            writeln!(out)?;
        }
        writeln!(
            out,
            "{}. {} on {}, started at {}, lasted {} (self {}){marks}",
            rank + 1,
            shown(&names.function(root.id)),
            thread_label(names, tid),
            relative(key.start, p.origin, clock),
            lasted(clock.ns(root.total), root.open),
            human(clock.ns(root.self_)),
        )?;
        writeln!(out, "  {:>10} {:>10}  calls", "time", "self")?;
        // Depth first, callees in order, without recursion: a node's next sibling waits
        // under its callees.
        let mut todo: Vec<(u32, usize)> = vec![(0, 0)];
        while let Some((n, depth)) = todo.pop() {
            let node = &nodes[n as usize];
            let mut line = String::new();
            let mut name = shown(&names.function(node.id)).into_owned();
            if !node.args.is_empty() {
                let args: Vec<String> = node
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, v)| format!("{}={v}", shown(&names.arg(node.id, i))))
                    .collect();
                let _ = write!(name, "({})", args.join(", "));
            }
            let _ = write!(
                line,
                "  {:>10} {:>10}  {:indent$}{name}",
                lasted(clock.ns(node.total), node.open),
                human(clock.ns(node.self_)),
                "",
                indent = depth * 2
            );
            if node.count > 1 {
                let _ = write!(line, " \u{d7} {}", thousands(node.count));
            }
            if node.inferred {
                line.push_str(" *");
                any_inferred = true;
            }
            if node.open {
                line.push_str(" (open)");
                any_open = true;
            }
            if node.deeper > 0 {
                let _ = write!(line, " [{} calls deeper]", thousands(node.deeper));
                any_deeper = true;
            }
            writeln!(out, "{line}")?;
            if node.more > 0 {
                writeln!(
                    out,
                    "  {:>10} {:>10}  {:indent$}[{} more calls not shown]",
                    human(clock.ns(node.more_ticks)),
                    "",
                    "",
                    thousands(node.more),
                    indent = (depth + 1) * 2
                )?;
            }
            if node.next != NONE && depth > 0 {
                todo.push((node.next, depth));
            }
            if node.first != NONE {
                todo.push((node.first, depth + 1));
            }
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "\u{d7} N: N calls of the function in a row under one caller, with their total and self \
         time"
    )?;
    if any_inferred {
        writeln!(
            out,
            "* entered before the recorded window: entry inferred at the window's start"
        )?;
    }
    if any_open {
        writeln!(
            out,
            "(open): still running when the window was written; \u{2265} its time so far"
        )?;
    }
    if any_deeper {
        writeln!(
            out,
            "[calls deeper]: calls made more than {} below the listed call (--depth)",
            if opts.depth == 1 {
                "1 level".to_string()
            } else {
                format!("{} levels", opts.depth)
            }
        )?;
    }
    Ok(())
}

fn write_json(
    trees: &[(Key, Vec<Node>)],
    p: &Plan,
    names: &Names,
    clock: &Clock,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    write!(out, "[")?;
    for (i, (key, nodes)) in trees.iter().enumerate() {
        let tid = p.threads.get(key.thread as usize).map_or(0, |t| t.tid);
        write!(out, "{}\n  ", if i == 0 { "" } else { "," })?;
        // (node, its next callee to write, whether it is the first), without recursion.
        let mut todo: Vec<(u32, u32, bool)> = vec![(0, nodes[0].first, true)];
        let object = |n: &Node, out: &mut dyn Write| -> std::io::Result<()> {
            write!(
                out,
                "{{\"function\": {}, \"id\": {}, \"thread\": {tid}, \"start_ns\": {}, \
                 \"duration_ns\": {}, \"self_ns\": {}, \"inferred_start\": {}, \
                 \"open_at_end\": {}, ",
                json_string(&names.function(n.id)),
                n.id,
                clock.ns(n.start.saturating_sub(p.origin)),
                clock.ns(n.total),
                clock.ns(n.self_),
                n.inferred,
                n.open
            )?;
            if !n.args.is_empty() {
                let args: Vec<String> = n
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        format!(
                            "{{\"name\": {}, \"value\": {v}}}",
                            json_string(&names.arg(n.id, i))
                        )
                    })
                    .collect();
                write!(out, "\"args\": [{}], ", args.join(", "))?;
            }
            write!(out, "\"children\": [")
        };
        object(&nodes[0], out)?;
        while let Some((n, c, first)) = todo.pop() {
            if c == NONE {
                write!(out, "]}}")?;
                continue;
            }
            let callee = &nodes[c as usize];
            todo.push((n, callee.next, false));
            if !first {
                write!(out, ", ")?;
            }
            object(callee, out)?;
            todo.push((c, callee.first, true));
        }
    }
    writeln!(out, "{}]", if trees.is_empty() { "" } else { "\n" })
}
