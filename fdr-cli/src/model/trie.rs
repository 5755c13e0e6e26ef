//! The call trie that `fdr stack` prints and flame graphs draw. One node per call path (the chain of functions from a thread's
//! bottom frame down to the call), with its call count, total and self time and a latency
//! histogram (one bucket per power of two).
//!
//! The trie's size is bounded whatever the log says: at most [`MAX_CALL_PATHS`] call paths (past
//! that, new paths are merged into one node under their caller) and paths at most
//! [`MAX_SHOWN_FRAMES`] frames deep (a call made deeper is merged, with everything it calls, into
//! one node at that depth). Nothing here recurses on the depth of a path.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::convert::Infallible;
use std::ops::ControlFlow;

use fdr_format::sink::{Close, Enter, Exit, Sink, GO_ON};

use crate::escape::shown;
use crate::limits::{MAX_CALL_PATHS, MAX_SHOWN_FRAMES};
use crate::model::engine::Plan;
use crate::model::engine::Report;
use crate::model::filter::Filter;
use crate::model::hist::Log2;
use crate::model::input::Log;
use crate::model::names::Names;
use crate::model::pass::{plan, replay};
use crate::units::TickRate;
use crate::CliError;

/// Children lists longer than this are looked up in a hash map instead of scanned.
const SCAN: usize = 16;

/// What a node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeKind {
    /// One call path.
    Path,
    /// The call paths below its parent that did not fit in [`MAX_CALL_PATHS`], and everything they
    /// called.
    MorePaths,
    /// Calls made deeper than the display depth, and everything they called.
    Deeper,
}

/// One call path.
#[derive(Clone, Debug)]
pub(crate) struct TrieNode {
    /// Function id (0 for the root; a reserved id above the 28 bits of real ones for merged
    /// nodes).
    pub id: u32,
    /// A call path, or a node standing for several.
    pub kind: NodeKind,
    /// Calls along this path.
    pub count: u64,
    /// Ticks in these calls.
    pub total: u64,
    /// Ticks in these calls minus their instrumented callees (for a merged node, everything
    /// under it: its callees are not shown apart).
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

impl TrieNode {
    fn new(id: u32, kind: NodeKind) -> TrieNode {
        TrieNode {
            id,
            kind,
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
/// A child's index is always larger than its parent's.
pub(crate) struct Trie {
    /// The nodes; children refer to them by index.
    pub nodes: Vec<TrieNode>,
    /// (parent, function id) to child, for parents with many children.
    index: HashMap<(u32, u32), u32>,
    /// Per thread, the node of each open call up to the display depth.
    stacks: Vec<Vec<u32>>,
    max_nodes: usize,
    max_depth: usize,
}

impl Default for Trie {
    fn default() -> Self {
        Trie::with_limits(MAX_CALL_PATHS, MAX_SHOWN_FRAMES)
    }
}

/// The reserved ids of merged nodes: above the 28 bits of real function ids.
const MORE_PATHS_ID: u32 = u32::MAX;
const DEEPER_ID: u32 = u32::MAX - 1;
/// A call that could not be given a node even merged (past twice [`MAX_CALL_PATHS`]): not counted.
const UNTRACKED: u32 = u32::MAX;

impl Trie {
    /// How node `n` is shown (escaped for a terminal).
    pub(crate) fn label(&self, n: &TrieNode, names: &Names) -> String {
        match n.kind {
            NodeKind::Path => shown(&names.function(n.id)).into_owned(),
            NodeKind::MorePaths => "[more call paths, merged]".to_string(),
            NodeKind::Deeper => format!("[calls deeper than {} frames]", self.max_depth),
        }
    }

    fn child(&self, parent: u32, id: u32) -> Option<u32> {
        let p = &self.nodes[parent as usize];
        if p.children.len() <= SCAN {
            p.children.iter().find(|c| c.0 == id).map(|c| c.1)
        } else {
            self.index.get(&(parent, id)).copied()
        }
    }

    fn add_child(&mut self, parent: u32, id: u32, kind: NodeKind) -> u32 {
        let n = self.nodes.len() as u32;
        self.nodes.push(TrieNode::new(id, kind));
        let p = &mut self.nodes[parent as usize];
        p.children.push((id, n));
        if p.children.len() == SCAN + 1 {
            for &(cid, c) in &p.children {
                self.index.insert((parent, cid), c);
            }
        } else if p.children.len() > SCAN + 1 {
            self.index.insert((parent, id), n);
        }
        n
    }

    /// The node for a call of `id` under `parent`, made at `depth`.
    fn node_for(&mut self, parent: u32, id: u32, depth: usize) -> u32 {
        if self.nodes[parent as usize].kind != NodeKind::Path {
            // Inside a merged node: the call is part of it.
            return parent;
        }
        let (id, kind) = if depth >= self.max_depth {
            (DEEPER_ID, NodeKind::Deeper)
        } else {
            (id, NodeKind::Path)
        };
        if let Some(n) = self.child(parent, id) {
            return n;
        }
        if kind == NodeKind::Path && self.nodes.len() < self.max_nodes {
            return self.add_child(parent, id, kind);
        }
        // Past the node limit (or at the display depth): one merged node per parent and kind,
        // which at most doubles the nodes.
        let id = if kind == NodeKind::Path {
            MORE_PATHS_ID
        } else {
            id
        };
        let kind = if kind == NodeKind::Path {
            NodeKind::MorePaths
        } else {
            kind
        };
        if let Some(n) = self.child(parent, id) {
            return n;
        }
        if self.nodes.len() < 2 * self.max_nodes {
            return self.add_child(parent, id, kind);
        }
        UNTRACKED
    }
}

impl Sink for Trie {
    type Error = Infallible;

    #[inline]
    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, Infallible> {
        let (thread, depth, f) = (e.thread, e.depth, e.frame);
        if depth > self.max_depth {
            // Inside the call at the display depth, which holds this one's time.
            return Ok(GO_ON);
        }
        let t = thread as usize;
        if t >= self.stacks.len() {
            self.stacks.resize_with(t + 1, Vec::new);
        }
        self.stacks[t].truncate(depth);
        let node = match self.stacks[t].last().copied() {
            Some(UNTRACKED) => UNTRACKED,
            parent => self.node_for(parent.unwrap_or(0), f.id, depth),
        };
        self.stacks[t].push(node);
        Ok(GO_ON)
    }

    #[inline]
    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, Infallible> {
        let (depth, f, end, how) = (e.depth, e.frame, e.end, e.how);
        if depth > self.max_depth {
            return Ok(GO_ON);
        }
        let Some(stack) = self.stacks.get_mut(e.thread as usize) else {
            return Ok(GO_ON);
        };
        let Some(&node) = stack.get(depth) else {
            return Ok(GO_ON);
        };
        stack.truncate(depth);
        if node == UNTRACKED {
            return Ok(GO_ON);
        }
        let merged = self.nodes[node as usize].kind != NodeKind::Path;
        if merged && stack.last() == Some(&node) {
            // A call inside a merged node: its time is already part of its caller's there.
            return Ok(GO_ON);
        }
        let n = &mut self.nodes[node as usize];
        let dur = end.saturating_sub(f.start);
        n.count += 1;
        n.total = n.total.saturating_add(dur);
        let own = if merged { dur } else { f.self_ticks(end) };
        n.self_ = n.self_.saturating_add(own);
        n.hist.record(dur);
        n.inferred += u64::from(f.inferred);
        n.open += u64::from(how == Close::WindowEnd);
        Ok(GO_ON)
    }
}

impl Trie {
    /// An empty trie that merges call paths beyond `max_nodes` nodes and calls deeper than
    /// `max_depth` frames.
    pub(crate) fn with_limits(max_nodes: usize, max_depth: usize) -> Trie {
        Trie {
            nodes: vec![TrieNode::new(0, NodeKind::Path)],
            index: HashMap::new(),
            stacks: Vec::new(),
            max_nodes: max_nodes.max(1),
            max_depth: max_depth.max(1),
        }
    }

    /// Builds the trie of `log` behind `filter` (two passes: see [`crate::model::pass::plan`]).
    pub(crate) fn build(
        log: &Log,
        filter: &Filter,
        progress: &dyn Report,
    ) -> Result<(Trie, Plan), CliError> {
        let p = plan(log, filter, progress)?;
        let mut t = Trie::default();
        replay(log, &mut t, Some(&p), filter, progress, 1)?;
        Ok((t, p))
    }

    /// The display depth this trie was built with.
    pub(crate) fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// Children of `node`, most total time first (then by label, for stable output).
    pub(crate) fn sorted_children(&self, node: usize, names: &Names) -> Vec<usize> {
        let mut c: Vec<(Reverse<u64>, String, usize)> = self.nodes[node]
            .children
            .iter()
            .map(|&(_, n)| {
                let x = &self.nodes[n as usize];
                (Reverse(x.total), self.label(x, names), n as usize)
            })
            .collect();
        c.sort_unstable();
        c.into_iter().map(|(_, _, n)| n).collect()
    }

    /// Visits the nodes depth first, children in [`Trie::sorted_children`] order, with an
    /// explicit stack: calls `f` with each node and its depth (0 for the root's children).
    pub(crate) fn each_node<E>(
        &self,
        names: &Names,
        mut f: impl FnMut(usize, usize) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut todo: Vec<(usize, usize)> = self
            .sorted_children(0, names)
            .into_iter()
            .rev()
            .map(|c| (c, 0))
            .collect();
        while let Some((c, depth)) = todo.pop() {
            f(c, depth)?;
            for k in self.sorted_children(c, names).into_iter().rev() {
                todo.push((k, depth + 1));
            }
        }
        Ok(())
    }

    /// Calls `f` with `a;b;c` and the self time in nanoseconds of every path with self time,
    /// depth first; memory beyond the trie is one path.
    pub(crate) fn fold_each<E>(
        &self,
        names: &Names,
        clock: &TickRate,
        mut f: impl FnMut(&str, u64) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut path = String::new();
        // Where each frame of `path` starts.
        let mut starts: Vec<usize> = Vec::new();
        self.each_node(names, |c, depth| {
            // Depth first: the frames above `depth` are this node's callers.
            if let Some(&at) = starts.get(depth) {
                path.truncate(at);
            }
            starts.truncate(depth);
            starts.push(path.len());
            if depth > 0 {
                path.push(';');
            }
            let n = &self.nodes[c];
            let label = self.label(n, names);
            if label.contains(';') {
                path.push_str(&label.replace(';', ":"));
            } else {
                path.push_str(&label);
            }
            let ns = clock.ns(n.self_);
            if ns > 0 {
                f(&path, ns)?;
            }
            Ok(())
        })
    }

    /// `a;b;c <self ns>` lines, depth first, for every path with self time.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn folded(&self, names: &Names, clock: &TickRate) -> Vec<String> {
        let mut lines = Vec::new();
        let _ = self.fold_each(names, clock, |p, ns| {
            lines.push(format!("{p} {ns}"));
            Ok::<(), ()>(())
        });
        lines
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn with_limits() -> Result<(), crate::CliError> {
        use crate::model::engine::replay_decoder;
        use crate::model::engine::Silent;
        use crate::model::names::Names;
        use crate::model::trie::Trie;
        use crate::units::TickRate;
        use fdr_format::events::{EventDecoder, LogInfo};
        use fdr_testkit::synth::LogBuilder;

        let mut log = LogBuilder::new(1_000_000_000);
        let mut b = log.block(1, 0, 0);
        for (id, t) in [(5, 0), (6, 10), (7, 20), (8, 30)] {
            b.enter(id, t);
        }
        for (id, t) in [(8, 40), (7, 50), (6, 60), (5, 70)] {
            b.exit(id, t);
        }
        for id in 1..=3u32 {
            let t = u64::from(id) * 100;
            b.enter(id, t);
            b.enter(9, t + 10);
            b.exit(9, t + 20);
            b.exit(id, t + 50);
        }
        b.finish();
        let bytes = log.finish();
        // Six nodes (the root and five more), paths at most two frames deep.
        let mut t = Trie::with_limits(6, 2);
        replay_decoder(
            EventDecoder::new(&bytes[..]).unwrap(),
            "mem",
            &mut t,
            None,
            &Silent,
            0,
        )?;
        let lines = t.folded(&Names::default(), &TickRate::new(1_000_000_000));
        assert_eq!(
            lines,
            [
                "[more call paths, merged] 100", // #2 and #3 with their callees: no room left
                "#5 20",
                "#5;#6 20",
                "#5;#6;[calls deeper than 2 frames] 30", // #7, and #8 inside it
                "#1 40",
                "#1;#9 10",
            ]
        );
        Ok::<(), crate::CliError>(())
    }
}
