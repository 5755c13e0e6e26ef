//! `fdr stack`: the call trie. One node per call path (the chain of functions from a thread's
//! bottom frame down to the call), with its call count, total and self time and a latency
//! histogram (one bucket per power of two).

use std::io::Write;

use clap::ValueEnum;

use crate::calls::{plan, replay, Close, Frame, Plan, Sink};
use crate::hist::Log2;
use crate::names::Names;
use crate::progress::Progress;
use crate::units::{human, Clock};
use crate::CliError;

/// Output format of `fdr stack`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// An indented tree with counts, times and histograms.
    Text,
    /// One `a;b;c <self ns>` line per call path, as flame graph tools read.
    Folded,
}

/// Distinct call paths kept before new ones are merged: a trie grows with the number of paths,
/// which a program with deep, varied recursion can make very large.
pub const MAX_NODES: usize = 1 << 18;

/// One call path.
#[derive(Clone, Debug)]
pub struct Node {
    /// Function id (0 for the root).
    pub id: u32,
    /// Stands for the call paths below its parent that did not fit in [`MAX_NODES`] (and
    /// everything they called).
    pub merged: bool,
    /// Calls along this path.
    pub count: u64,
    /// Ticks in these calls.
    pub total: u64,
    /// Ticks in these calls minus their instrumented callees.
    pub self_: u64,
    /// Durations, one bucket per power of two of ticks.
    pub hist: Log2,
    /// Calls whose entry was inferred.
    pub inferred: u64,
    /// Calls open at the window's end.
    pub open: u64,
    /// (function id, node index) of the callees.
    pub children: Vec<(u32, u32)>,
}

impl Node {
    fn new(id: u32) -> Node {
        Node {
            id,
            merged: false,
            count: 0,
            total: 0,
            self_: 0,
            hist: Log2::default(),
            inferred: 0,
            open: 0,
            children: Vec::new(),
        }
    }
}

/// The trie, built by replaying calls; node 0 is the root above every thread's bottom frame.
pub struct Trie {
    /// The nodes; children refer to them by index.
    pub nodes: Vec<Node>,
    stacks: Vec<Vec<u32>>,
    max_nodes: usize,
}

impl Default for Trie {
    fn default() -> Self {
        Trie::with_max_nodes(MAX_NODES)
    }
}

/// The id of merged nodes: above the 28 bits of real function ids.
const MERGED_ID: u32 = u32::MAX;

/// How a node is shown.
fn label(n: &Node, names: &Names) -> String {
    if n.merged {
        "[more call paths, merged]".to_string()
    } else {
        names.function(n.id).into_owned()
    }
}

impl Sink for Trie {
    #[inline]
    fn enter(&mut self, thread: u32, depth: usize, f: &Frame, _: &[u64]) -> Result<(), CliError> {
        let t = thread as usize;
        if t >= self.stacks.len() {
            self.stacks.resize_with(t + 1, Vec::new);
        }
        let stack = &mut self.stacks[t];
        stack.truncate(depth);
        let parent = stack.last().copied().unwrap_or(0) as usize;
        let node = if self.nodes[parent].merged {
            parent as u32
        } else {
            match self.nodes[parent].children.iter().find(|c| c.0 == f.id) {
                Some(&(_, n)) => n,
                None if self.nodes.len() < self.max_nodes => {
                    let n = self.nodes.len() as u32;
                    self.nodes.push(Node::new(f.id));
                    self.nodes[parent].children.push((f.id, n));
                    n
                }
                None => {
                    // One merged child per parent, found by its reserved id.
                    match self.nodes[parent]
                        .children
                        .iter()
                        .find(|c| c.0 == MERGED_ID)
                    {
                        Some(&(_, n)) => n,
                        None => {
                            let n = self.nodes.len() as u32;
                            let mut m = Node::new(MERGED_ID);
                            m.merged = true;
                            self.nodes.push(m);
                            self.nodes[parent].children.push((MERGED_ID, n));
                            n
                        }
                    }
                }
            }
        };
        stack.push(node);
        Ok(())
    }

    #[inline]
    fn exit(
        &mut self,
        thread: u32,
        depth: usize,
        f: &Frame,
        end: u64,
        how: Close,
        _: &[u64],
    ) -> Result<(), CliError> {
        let Some(stack) = self.stacks.get_mut(thread as usize) else {
            return Ok(());
        };
        let Some(&node) = stack.get(depth) else {
            return Ok(());
        };
        stack.truncate(depth);
        let n = &mut self.nodes[node as usize];
        if n.merged && stack.last() == Some(&node) {
            // A call inside merged paths: its time is already part of the merged caller's.
            return Ok(());
        }
        let dur = end.saturating_sub(f.start);
        n.count += 1;
        n.total = n.total.saturating_add(dur);
        n.self_ = n.self_.saturating_add(f.self_ticks(end));
        n.hist.record(dur);
        n.inferred += u64::from(f.inferred);
        n.open += u64::from(how == Close::WindowEnd);
        Ok(())
    }
}

impl Trie {
    /// An empty trie that merges call paths beyond `max_nodes` nodes.
    ///
    /// ```
    /// use fdr_cli::calls::replay_decoder;
    /// use fdr_cli::names::Names;
    /// use fdr_cli::progress::Progress;
    /// use fdr_cli::stack::Trie;
    /// use fdr_cli::synth::LogBuilder;
    /// use fdr_cli::units::Clock;
    /// use fdr_format::events::{EventDecoder, LogInfo};
    ///
    /// let mut log = LogBuilder::new(1_000_000_000);
    /// let mut b = log.block(1, 0, 0);
    /// for id in 1..=4u32 {
    ///     let t = u64::from(id) * 100;
    ///     b.enter(id, t);
    ///     b.enter(9, t + 10);
    ///     b.exit(9, t + 20);
    ///     b.exit(id, t + 50);
    /// }
    /// b.finish();
    /// let bytes = log.finish();
    /// let mut t = Trie::with_max_nodes(4); // the root and three paths
    /// replay_decoder(EventDecoder::new(&bytes[..]).unwrap(), "mem", &mut t, None, &Progress::hidden(), 0)?;
    /// let lines = t.folded(&Names::default(), &Clock::new(1_000_000_000));
    /// assert_eq!(lines, [
    ///     "[more call paths, merged] 80", // #3 and #4
    ///     "#1 40",
    ///     "#1;#9 10",
    ///     "#2 40",
    ///     "#2;[more call paths, merged] 10", // #2;#9, the fourth path
    /// ]);
    /// # Ok::<(), fdr_cli::CliError>(())
    /// ```
    pub fn with_max_nodes(max_nodes: usize) -> Trie {
        Trie {
            nodes: vec![Node::new(0)],
            stacks: Vec::new(),
            max_nodes: max_nodes.max(1),
        }
    }

    /// Builds the trie of the log at `path` (two passes: see [`crate::calls::plan`]).
    pub fn build(path: &str, progress: &Progress) -> Result<(Trie, Plan), CliError> {
        let p = plan(path, progress)?;
        let mut t = Trie::default();
        replay(path, &mut t, Some(&p), progress, 1)?;
        Ok((t, p))
    }

    /// Children of `node`, most total time first (then by name, for stable output).
    pub fn sorted_children(&self, node: usize, names: &Names) -> Vec<usize> {
        let mut c: Vec<usize> = self.nodes[node]
            .children
            .iter()
            .map(|&(_, n)| n as usize)
            .collect();
        c.sort_by(|&a, &b| {
            let (x, y) = (&self.nodes[a], &self.nodes[b]);
            y.total
                .cmp(&x.total)
                .then_with(|| label(x, names).cmp(&label(y, names)))
        });
        c
    }

    /// `a;b;c <self ns>` lines, depth first, for every path with self time.
    pub fn folded(&self, names: &Names, clock: &Clock) -> Vec<String> {
        let mut lines = Vec::new();
        let mut path: Vec<String> = Vec::new();
        self.fold(0, names, clock, &mut path, &mut lines);
        lines
    }

    fn fold(
        &self,
        node: usize,
        names: &Names,
        clock: &Clock,
        path: &mut Vec<String>,
        lines: &mut Vec<String>,
    ) {
        for c in self.sorted_children(node, names) {
            let n = &self.nodes[c];
            path.push(label(n, names).replace(';', ":"));
            let ns = clock.ns(n.self_);
            if ns > 0 {
                lines.push(format!("{} {ns}", path.join(";")));
            }
            self.fold(c, names, clock, path, lines);
            path.pop();
        }
    }
}

const SPARK: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

fn write_text(t: &Trie, names: &Names, clock: &Clock, out: &mut dyn Write) -> std::io::Result<()> {
    // One histogram column range for all rows, so rows compare at a glance.
    let (mut lo, mut hi) = (usize::MAX, 0usize);
    for n in &t.nodes[1..] {
        for (i, &c) in n.hist.buckets().iter().enumerate() {
            if c > 0 {
                lo = lo.min(i);
                hi = hi.max(i);
            }
        }
    }
    if lo > hi {
        writeln!(out, "no calls recorded")?;
        return Ok(());
    }
    let width = hi - lo + 1;
    let range = format!(
        "{}..{}",
        human(clock.ns(Log2::lower_bound(lo))),
        human(clock.ns(Log2::lower_bound(hi + 1).saturating_sub(1)))
    );
    let hw = width.max(range.chars().count());
    writeln!(
        out,
        "{:>8} {:>10} {:>10}  {:<hw$}  call path",
        "calls", "total", "self", range
    )?;
    let (mut any_inferred, mut any_open) = (false, false);
    let mut todo: Vec<(usize, usize)> = t
        .sorted_children(0, names)
        .into_iter()
        .rev()
        .map(|c| (c, 0))
        .collect();
    while let Some((c, depth)) = todo.pop() {
        let n = &t.nodes[c];
        let b = n.hist.buckets();
        let max = b[lo..=hi].iter().copied().max().unwrap_or(0).max(1);
        let spark: String = b[lo..=hi]
            .iter()
            .map(|&x| {
                if x == 0 {
                    ' '
                } else {
                    SPARK[1 + (u64::from(x) * 7 / u64::from(max)) as usize]
                }
            })
            .collect();
        let mut mark = String::new();
        if n.inferred > 0 {
            mark.push_str(" *");
            any_inferred = true;
        }
        if n.open > 0 {
            mark.push_str(" +");
            any_open = true;
        }
        writeln!(
            out,
            "{:>8} {:>10} {:>10}  {:<hw$}  {:indent$}{}{}",
            n.count,
            human(clock.ns(n.total)),
            human(clock.ns(n.self_)),
            spark,
            "",
            label(n, names),
            mark,
            indent = depth * 2
        )?;
        for k in t.sorted_children(c, names).into_iter().rev() {
            todo.push((k, depth + 1));
        }
    }
    if any_inferred {
        writeln!(
            out,
            "* entered before the recorded window: entry inferred at the window's start"
        )?;
    }
    if any_open {
        writeln!(
            out,
            "+ still running at the end of the window: closed at its end"
        )?;
    }
    Ok(())
}

/// Prints the call trie of the log at `path`.
pub fn run(
    path: &str,
    format: Format,
    out: &mut dyn Write,
    progress: &Progress,
) -> Result<(), CliError> {
    let (t, p) = Trie::build(path, progress)?;
    let names = Names::new(&p.info);
    let clock = Clock::new(p.info.header.cycle_frequency);
    let w = |e| CliError::io("<output>", "writing the report", e);
    match format {
        Format::Text => write_text(&t, &names, &clock, out).map_err(w),
        Format::Folded => {
            for l in t.folded(&names, &clock) {
                writeln!(out, "{l}").map_err(w)?;
            }
            Ok(())
        }
    }
}
