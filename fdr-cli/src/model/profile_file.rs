//! A profile file (`.fdrprof`, laid out by [`fdr_format::profile`]) as the commands read it:
//! opened and decoded ([`read`]), a log given instead named as such, and its trees seen as call
//! paths: who calls whom ([`Children`]), which calls of a recursive function are its outermost
//! ([`outermost`]), and the paths as the views show them, at most a given depth ([`Paths`]).
//!
//! A profile is not streamed: it is read whole (it is small: its size grows with the number of
//! call paths, bounded by the runtime's `profile_nodes`, not with the run's length), up to
//! [`MAX_PROFILE_BYTES`]. Nothing here recurses on the depth of a path.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Read;

use fdr_format::profile::{Node, Profile, Tree, PER_THREAD};
use fdr_format::{FormatError, FDR_LOG_TYPE, FDR_VERSION};

use crate::limits::MAX_PROFILE_BYTES;
use crate::model::input::Log;
use crate::CliError;

/// True if `bytes` start like an fdr log (an XRay FDR version 5 header).
pub(crate) fn is_log(bytes: &[u8]) -> bool {
    let mut head = [0u8; 4];
    head[..2].copy_from_slice(&FDR_VERSION.to_le_bytes());
    head[2..].copy_from_slice(&FDR_LOG_TYPE.to_le_bytes());
    bytes.starts_with(&head)
}

/// The profile in `file` (opened with [`Log::open_any`]): a log is refused with an error naming
/// the commands that read logs; a damaged profile gets the decoder's error, with its offset.
pub(crate) fn read(file: &Log) -> Result<Profile, CliError> {
    let name = file.name();
    let input = |err| CliError::Input {
        path: name.to_string(),
        err,
    };
    let head = file.head(8)?;
    if is_log(&head) {
        return Err(input(FormatError::new(
            0,
            "this is a log (.fdr), not a profile: read it with `fdr info`, `account`, `stack`, \
             `calls`, `replay`, `convert`, `flame` or `diff`; `fdr profile` reads the profiles \
             that profile mode writes (.fdrprof)"
                .into(),
        )));
    }
    if !Profile::is_profile(&head) {
        // The decoder's own words for a file that is neither.
        return Profile::decode(&head).map_err(input);
    }
    if file.len() > MAX_PROFILE_BYTES {
        return Err(CliError::Limit {
            path: name.to_string(),
            what: format!(
                "the profile is {} bytes, more than fdr reads ({MAX_PROFILE_BYTES}); is it corrupt?",
                file.len()
            ),
        });
    }
    let mut bytes = Vec::with_capacity(file.len() as usize);
    file.file()?
        .take(MAX_PROFILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::io(name, "cannot read the profile", e))?;
    Profile::decode(&bytes).map_err(input)
}

/// Function names of a profile, looked up by id.
#[derive(Clone, Debug, Default)]
pub(crate) struct Functions {
    names: HashMap<u32, String>,
}

impl Functions {
    /// The names of `p`'s function table (the first entry wins for an id listed twice).
    pub(crate) fn new(p: &Profile) -> Functions {
        let mut names = HashMap::with_capacity(p.functions.len());
        for (id, name) in &p.functions {
            names.entry(*id).or_insert_with(|| name.clone());
        }
        Functions { names }
    }

    /// The full name of `id`, or `#<id>` when the table lacks it (or it is empty).
    pub(crate) fn name(&self, id: u32) -> Cow<'_, str> {
        match self.names.get(&id) {
            Some(n) if !n.is_empty() => Cow::Borrowed(n),
            _ => Cow::Owned(format!("#{id}")),
        }
    }
}

/// What a tree of `p` holds, as a person reads it: `thread 12 (worker)`, `thread 12`, `exited
/// threads` (tid 0 of a per-thread profile) or `all threads` (a profile merged over every
/// thread). Not escaped.
pub(crate) fn tree_label(p: &Profile, t: &Tree) -> String {
    if p.flags & PER_THREAD == 0 {
        "all threads".to_string()
    } else if t.tid == 0 {
        "exited threads".to_string()
    } else if t.name.is_empty() {
        format!("thread {}", t.tid)
    } else {
        format!("thread {} ({})", t.tid, t.name)
    }
}

/// The callees of every node of a tree, and its roots. A node whose parent index is not before
/// it (only a tree built in memory can have one: the decoder refuses it) counts as a root.
#[derive(Clone, Debug, Default)]
pub(crate) struct Children {
    start: Vec<u32>,
    list: Vec<u32>,
    roots: Vec<u32>,
}

/// The parent of node `i`, if it is a valid one (before `i`).
fn parent_of(t: &Tree, i: usize) -> Option<usize> {
    t.nodes[i].parent.map(|p| p as usize).filter(|&p| p < i)
}

impl Children {
    /// The callees of each of `t`'s nodes, in the tree's order.
    pub(crate) fn of(t: &Tree) -> Children {
        let n = t.nodes.len();
        let mut count = vec![0u32; n + 1];
        let mut roots = Vec::new();
        for i in 0..n {
            match parent_of(t, i) {
                Some(p) => count[p + 1] += 1,
                None => roots.push(i as u32),
            }
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let start = count.clone();
        let mut list = vec![0u32; start[n] as usize];
        for i in 0..n {
            if let Some(p) = parent_of(t, i) {
                list[count[p] as usize] = i as u32;
                count[p] += 1;
            }
        }
        Children { start, list, roots }
    }

    /// The callees of node `i`.
    pub(crate) fn get(&self, i: usize) -> &[u32] {
        &self.list[self.start[i] as usize..self.start[i + 1] as usize]
    }

    /// The nodes without a caller.
    pub(crate) fn roots(&self) -> &[u32] {
        &self.roots
    }
}

/// For each node of `t`, true if no node above it is of the same function: the outermost
/// calls of a recursion, whose totals hold the function's time once (a nested call's time is
/// inside its outer call's).
pub(crate) fn outermost(t: &Tree) -> Vec<bool> {
    let children = Children::of(t);
    let mut outer = vec![true; t.nodes.len()];
    // Functions on the path being walked, with how many times each is on it.
    let mut active: HashMap<u32, u32> = HashMap::new();
    let mut stack: Vec<(u32, usize)> = Vec::new();
    for &root in children.roots() {
        let f = t.nodes[root as usize].function;
        *active.entry(f).or_insert(0) += 1;
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let (node, next) = (top.0 as usize, top.1);
            match children.get(node).get(next) {
                Some(&c) => {
                    top.1 += 1;
                    let f = t.nodes[c as usize].function;
                    let on = active.entry(f).or_insert(0);
                    outer[c as usize] = *on == 0;
                    *on += 1;
                    stack.push((c, 0));
                }
                None => {
                    stack.pop();
                    if let Some(on) = active.get_mut(&t.nodes[node].function) {
                        *on -= 1;
                    }
                }
            }
        }
    }
    outer
}

/// One call path as the views show it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Path {
    /// The calls along it: the node's figures (for several nodes merged, their sum). Its
    /// `parent` is the caller's index in [`Paths::paths`]; its `function` the function's id
    /// (meaningless for a [`Path::deeper`] path).
    pub calls: Node,
    /// The calls made deeper than the paths shown, with everything they called, merged: count,
    /// total, histogram and open calls are those of the calls at that depth, self time that of
    /// all of them.
    pub deeper: bool,
    /// Frames above it (0 for a root).
    pub depth: usize,
    /// Its callees' indices.
    pub children: Vec<u32>,
}

/// A tree's call paths down to a depth: a call made deeper is merged, with everything it
/// called, into one path at that depth (so a path has at most `max_depth + 1` frames).
/// Callers come before their callees.
#[derive(Clone, Debug, Default)]
pub(crate) struct Paths {
    /// The paths, each after its caller.
    pub paths: Vec<Path>,
    /// The paths without a caller.
    pub roots: Vec<u32>,
    /// The depth below which calls are merged.
    pub max_depth: usize,
}

impl Paths {
    /// The paths of `t`, at most `max_depth` frames (at least 1) before the merged one.
    pub(crate) fn new(t: &Tree, max_depth: usize) -> Paths {
        let max_depth = max_depth.max(1);
        let mut paths: Vec<Path> = Vec::with_capacity(t.nodes.len());
        let mut roots = Vec::new();
        // The path of each node of `t`, and the merged path under a path, when it has one.
        let mut to: Vec<u32> = Vec::with_capacity(t.nodes.len());
        let mut deeper_under: HashMap<u32, u32> = HashMap::new();
        for (i, n) in t.nodes.iter().enumerate() {
            let parent = parent_of(t, i).map(|p| to[p]);
            let at = match parent {
                None => {
                    roots.push(paths.len() as u32);
                    paths.push(Path {
                        calls: Node {
                            parent: None,
                            ..n.clone()
                        },
                        ..Path::default()
                    });
                    paths.len() - 1
                }
                Some(p) if paths[p as usize].deeper => {
                    // Inside a merged path: only its time adds up there.
                    let d = &mut paths[p as usize].calls;
                    d.self_ticks = d.self_ticks.saturating_add(n.self_ticks);
                    d.folded = d.folded.saturating_add(n.folded);
                    p as usize
                }
                Some(p) if paths[p as usize].depth + 1 >= max_depth => {
                    let d = *deeper_under.entry(p).or_insert_with(|| {
                        paths.push(Path {
                            calls: Node {
                                parent: Some(p),
                                function: u32::MAX,
                                ..Node::default()
                            },
                            deeper: true,
                            depth: max_depth,
                            children: Vec::new(),
                        });
                        let d = (paths.len() - 1) as u32;
                        paths[p as usize].children.push(d);
                        d
                    });
                    paths[d as usize].calls.add(n);
                    d as usize
                }
                Some(p) => {
                    let depth = paths[p as usize].depth + 1;
                    paths.push(Path {
                        calls: Node {
                            parent: Some(p),
                            ..n.clone()
                        },
                        deeper: false,
                        depth,
                        children: Vec::new(),
                    });
                    let c = (paths.len() - 1) as u32;
                    paths[p as usize].children.push(c);
                    c as usize
                }
            };
            to.push(at as u32);
        }
        Paths {
            paths,
            roots,
            max_depth,
        }
    }

    /// How path `i` is named: its function's full name (not escaped), or
    /// `[calls deeper than N frames]`.
    pub(crate) fn label<'a>(&self, i: usize, functions: &'a Functions) -> Cow<'a, str> {
        let p = &self.paths[i];
        if p.deeper {
            Cow::Owned(deeper_label(self.max_depth))
        } else {
            functions.name(p.calls.function)
        }
    }

    /// The sum of the roots' totals: the run's time in recorded calls, ticks.
    pub(crate) fn total(&self) -> u64 {
        self.roots
            .iter()
            .map(|&r| self.paths[r as usize].calls.total)
            .fold(0, u64::saturating_add)
    }
}

/// The name of the merged path of the calls deeper than `max_depth` frames.
pub(crate) fn deeper_label(max_depth: usize) -> String {
    format!("[calls deeper than {max_depth} frames]")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(depth: u32) -> Tree {
        Tree {
            nodes: (0..depth)
                .map(|i| Node {
                    parent: i.checked_sub(1),
                    function: 1 + i % 2,
                    count: 1,
                    total: u64::from(depth - i) * 10,
                    self_ticks: 10,
                    ..Node::default()
                })
                .collect(),
            ..Tree::default()
        }
    }

    #[test]
    fn a_deep_chain_is_walked_without_recursion_and_merged_below_the_depth() {
        let t = chain(200_000);
        let outer = outermost(&t);
        assert_eq!(outer.iter().filter(|&&o| o).count(), 2);
        let p = Paths::new(&t, 1024);
        assert_eq!(p.paths.len(), 1025);
        let d = &p.paths[1024];
        assert!(d.deeper && d.depth == 1024);
        assert_eq!(d.calls.total, (200_000 - 1024) * 10);
        assert_eq!(d.calls.self_ticks, (200_000 - 1024) * 10);
        let self_sum: u64 = p.paths.iter().map(|x| x.calls.self_ticks).sum();
        assert_eq!(self_sum, 200_000 * 10);
        assert_eq!(p.total(), 200_000 * 10);
    }

    #[test]
    fn a_parent_index_not_before_its_node_makes_a_root() {
        let mut t = chain(3);
        t.nodes[1].parent = Some(2);
        let c = Children::of(&t);
        assert_eq!(c.roots(), [0, 1]);
        assert_eq!(c.get(1), [2]);
        assert_eq!(Paths::new(&t, 8).roots, [0, 1]);
    }

    #[test]
    fn logs_are_told_apart_from_profiles() {
        let log = fdr_testkit::synth::LogBuilder::new(1_000_000_000).finish();
        assert!(is_log(&log));
        assert!(!is_log(&fdr_testkit::profile::known().encode()));
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn read() {
        use crate::model::{input::Log, profile_file::read};
        let dir = std::env::temp_dir().join(format!("fdr-profile-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("app.fdrprof");
        std::fs::write(&path, fdr_testkit::profile::known().encode()).unwrap();
        let p = read(&Log::open_any(&path).unwrap()).unwrap();
        assert_eq!(p.program, "demo");
        std::fs::write(&path, b"FDRPROF\0 cut short").unwrap();
        let e = read(&Log::open_any(&path).unwrap()).unwrap_err();
        assert!(e.to_string().contains("at byte offset 8"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn functions() {
        use crate::model::profile_file::Functions;
        let f = Functions::new(&fdr_testkit::profile::known());
        assert_eq!(f.name(1), "app::main");
        assert_eq!(f.name(77), "#77");
    }

    #[test]
    fn outermost() {
        use fdr_format::profile::{Node, Tree};
        let node = |parent, function| Node {
            parent,
            function,
            ..Node::default()
        };
        let t = Tree {
            nodes: vec![node(None, 1), node(Some(0), 2), node(Some(1), 1)],
            ..Tree::default()
        };
        assert_eq!(
            crate::model::profile_file::outermost(&t),
            [true, true, false]
        );
    }

    #[test]
    fn paths() {
        use crate::model::profile_file::Paths;
        use fdr_format::profile::{Node, Tree};
        // f calls f calls f ... 10 deep, each call 1 tick of self time.
        let nodes = (0..10u32)
            .map(|i| Node {
                parent: i.checked_sub(1),
                function: 1,
                count: 1,
                total: 10 - u64::from(i),
                self_ticks: 1,
                ..Node::default()
            })
            .collect();
        let p = Paths::new(
            &Tree {
                nodes,
                ..Tree::default()
            },
            3,
        );
        assert_eq!(p.paths.len(), 4);
        let deeper = &p.paths[3];
        assert!(deeper.deeper);
        assert_eq!(
            (
                deeper.calls.count,
                deeper.calls.total,
                deeper.calls.self_ticks
            ),
            (1, 7, 7)
        );
    }
}
