//! `fdr profile`: what a profile file (`.fdrprof`, written by the runtime's profile mode) says,
//! per function, per call path, or around one function; [`crate::render::profile`] prints it
//! and [`crate::render::pprof`] exports it.
//!
//! - Per function ([`View::Functions`]), over every call path of the function: `count` counts
//!   every call, `self` sums every path's self time, and `total` sums only the outermost calls
//!   of a recursive function (paths with no caller above of the same function), whose time
//!   holds the nested calls'. Min and max are exact; p50, p90 and p99 come from the paths'
//!   histograms merged, within 1/16 of a duration of their bucket, and are kept within min..max
//!   (a quantile whose nearest rank is the first or last call is min or max).
//! - Per call path ([`View::Tree`]): the tree, each path's figures, and its share of the run's
//!   time (the sum of the roots' totals). Paths are shown at most
//!   [`MAX_SHOWN_FRAMES`] frames deep: calls made deeper are one path holding their time.
//! - Around a function ([`View::Function`]): its callers (each with the count and time of the
//!   calls it made to the function), its callees (each with the count and time of the
//!   function's calls to it), and its own figures.
//!
//! The trees of the file are merged by call path, or shown one by one ([`ProfileOptions::threads`]).

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use fdr_format::profile::{Node, Profile, Tree, PER_THREAD};

use crate::commands::account::SortKey;
use crate::limits::MAX_SHOWN_FRAMES;
use crate::model::filter::{no_function_matches, Pattern};
use crate::model::profile_file::{outermost, tree_label, Children, Functions, Paths};
use crate::units::TickRate;
use crate::CliError;

/// What the report shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum View {
    /// One row per function.
    Functions,
    /// The call tree.
    Tree,
    /// The callers and callees of the functions matching the pattern (see
    /// [`crate::model::filter::Pattern`]), and their rows.
    Function(String),
}

/// What `fdr profile` was asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProfileOptions {
    /// Per function, the tree, or around a function.
    pub view: View,
    /// One section per tree of the file rather than every tree merged.
    pub threads: bool,
    /// The order of function rows (and of the functions of [`View::Function`]).
    pub sort: SortKey,
    /// At most this many function rows (functions of [`View::Function`]) per section.
    pub top: Option<usize>,
    /// Leave out functions, call paths, callers and callees whose total is below this, ns.
    pub min_ns: Option<u64>,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions {
            view: View::Functions,
            threads: false,
            sort: SortKey::SelfTime,
            top: None,
            min_ns: None,
        }
    }
}

/// The figures of a function (or of a call path), in nanoseconds. `count`, `min_ns` to
/// `max_ns` are of the calls that returned; calls still running when the profile was written
/// are in `open` and `open_ns` only.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProfileRow {
    /// Full name, `#<id>` without one, or `[calls deeper than N frames]`.
    pub function: String,
    /// Function id (`u32::MAX` for the merged deeper calls).
    pub id: u32,
    /// Calls that returned.
    pub count: u64,
    /// Their time (of a recursive function, its outermost calls').
    pub total_ns: u64,
    /// Their time outside recorded callees (and inside folded ones).
    pub self_ns: u64,
    /// Shortest call.
    pub min_ns: u64,
    /// Median, from the histograms.
    pub p50_ns: u64,
    /// 90th percentile, from the histograms.
    pub p90_ns: u64,
    /// 99th percentile, from the histograms.
    pub p99_ns: u64,
    /// Longest call.
    pub max_ns: u64,
    /// Calls on deeper paths counted into this one (the `profile_nodes` bound or the depth
    /// limit): their time is in `self_ns`.
    pub folded: u64,
    /// Calls still running when the profile was written.
    pub open: u64,
    /// How long they had run by then (of a recursive function, its outermost calls').
    pub open_ns: u64,
}

/// One call path of the tree, in preorder.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PathRow {
    /// Frames above it.
    pub depth: usize,
    /// Its figures.
    pub row: ProfileRow,
    /// Its total as a share of the tree's (0 to 1).
    pub share: f64,
    /// The merged calls made deeper than the paths shown.
    pub deeper: bool,
}

/// A caller or a callee of a function, with the calls between the two.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Edge {
    /// The other function's name; `None` for calls from no recorded function.
    pub function: Option<String>,
    /// Its id.
    pub id: Option<u32>,
    /// Calls between the two.
    pub count: u64,
    /// Their time.
    pub total_ns: u64,
}

/// A function with its callers and callees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Focus {
    /// Its figures.
    pub row: ProfileRow,
    /// Who called it, most time first.
    pub callers: Vec<Edge>,
    /// Whom it called, most time first.
    pub callees: Vec<Edge>,
}

/// What a section shows.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Body {
    /// One row per function, sorted.
    Functions(Vec<ProfileRow>),
    /// The call paths in preorder (callees by total, most first).
    Tree {
        /// The paths.
        rows: Vec<PathRow>,
        /// The sum of the roots' totals, ns.
        total_ns: u64,
    },
    /// Each function matching the pattern.
    Focus(Vec<Focus>),
}

/// The report on one tree, or on every tree merged.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Section {
    /// The tree's thread (`None` for every tree merged; 0 for several threads).
    pub tid: Option<i32>,
    /// The thread's name, if it had one.
    pub name: String,
    /// How the section is titled: see [`tree_label`].
    pub label: String,
    /// What it shows.
    pub body: Body,
}

/// What the profile says of itself, for the report's first line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProfileSummary {
    /// The program's name.
    pub program: String,
    /// Its process id.
    pub pid: u32,
    /// When profiling started, Unix ns.
    pub start_unix_ns: u64,
    /// How long it had run when the profile was written, ns.
    pub elapsed_ns: u64,
    /// The trees are per thread (else one tree merged over every thread).
    pub per_thread: bool,
    /// Trees in the file.
    pub trees: usize,
    /// Trees of one thread each (per-thread profiles; the exited threads' tree is not one).
    pub threads: usize,
    /// Calls folded into their callers, in all trees.
    pub folded: u64,
    /// Calls still running when it was written, in all trees.
    pub open: u64,
    /// Calls left out: a thread met a new function at the root of its stack with no node
    /// left.
    pub lost: u64,
}

/// The whole report.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ProfileReport {
    /// The first line's figures.
    pub summary: ProfileSummary,
    /// One section per tree ([`ProfileOptions::threads`]) or one for every tree merged.
    pub sections: Vec<Section>,
    /// Sections are per tree.
    pub threads: bool,
}

/// The report on `p` (named `name` in errors); an error if a function pattern matches no
/// function of the profile.
pub(crate) fn report(
    p: &Profile,
    name: &str,
    opts: &ProfileOptions,
) -> Result<ProfileReport, CliError> {
    let clock = TickRate::new(p.ticks_per_second);
    let functions = Functions::new(p);
    let merged;
    let trees: Vec<(Option<i32>, &Tree)> = if opts.threads {
        p.trees.iter().map(|t| (Some(t.tid), t)).collect()
    } else {
        merged = p.merged();
        vec![(None, &merged)]
    };
    let matching = match &opts.view {
        View::Function(pattern) => Some(matching(p, &functions, pattern, name)?),
        _ => None,
    };
    let sections = trees
        .into_iter()
        .map(|(tid, t)| {
            let body = match &opts.view {
                View::Functions => {
                    let mut rows = function_rows(t, &functions, &clock);
                    keep(&mut rows, opts);
                    Body::Functions(rows)
                }
                View::Tree => tree_rows(t, &functions, &clock, opts.min_ns),
                View::Function(_) => {
                    let ids = matching.as_ref().expect("matched above");
                    Body::Focus(focus(t, &functions, &clock, ids, opts))
                }
            };
            Section {
                tid,
                name: if tid.is_some() {
                    t.name.clone()
                } else {
                    String::new()
                },
                label: if tid.is_some() {
                    tree_label(p, t)
                } else {
                    "all threads".to_string()
                },
                body,
            }
        })
        .collect();
    Ok(ProfileReport {
        summary: summary(p, &clock),
        sections,
        threads: opts.threads,
    })
}

fn summary(p: &Profile, clock: &TickRate) -> ProfileSummary {
    let per_thread = p.flags & PER_THREAD != 0;
    let all = p.trees.iter().flat_map(|t| &t.nodes);
    ProfileSummary {
        program: p.program.clone(),
        pid: p.pid,
        start_unix_ns: p.start_unix_ns,
        elapsed_ns: clock.ns(p.elapsed_ticks),
        per_thread,
        trees: p.trees.len(),
        threads: if per_thread {
            p.trees.iter().filter(|t| t.tid != 0).count()
        } else {
            0
        },
        folded: all.clone().map(|n| n.folded).fold(0, u64::saturating_add),
        open: all.map(|n| n.open).fold(0, u64::saturating_add),
        lost: p.lost,
    }
}

/// The ids of the profile's functions (those in its trees) that `pattern` matches.
fn matching(
    p: &Profile,
    functions: &Functions,
    pattern: &str,
    name: &str,
) -> Result<HashSet<u32>, CliError> {
    let pat = Pattern::new(pattern);
    let mut ids: Vec<u32> = p
        .trees
        .iter()
        .flat_map(|t| t.nodes.iter().map(|n| n.function))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let found: HashSet<u32> = ids
        .iter()
        .copied()
        .filter(|&id| pat.matches(&functions.name(id)))
        .collect();
    if found.is_empty() {
        let names: Vec<String> = ids.iter().map(|&id| functions.name(id).into()).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        return Err(CliError::Empty {
            path: name.to_string(),
            what: no_function_matches(pattern, &names, "profile"),
        });
    }
    Ok(found)
}

/// The row of the calls `n` sums up.
fn row_of(n: &Node, function: String, id: u32, clock: &TickRate) -> ProfileRow {
    let (min, max) = if n.count == 0 {
        (0, 0)
    } else {
        (n.min, n.max.max(n.min))
    };
    // Nearest rank: the first and the last call are known exactly; the others are read from
    // the histogram, kept within them.
    let calls = n.hist.count();
    let q = |x: f64| {
        let rank = ((x * calls as f64).ceil() as u64).max(1);
        let ticks = if rank >= calls {
            max
        } else if rank == 1 {
            min
        } else {
            n.hist.quantile(x).clamp(min, max)
        };
        clock.ns(ticks)
    };
    ProfileRow {
        function,
        id,
        count: n.count,
        total_ns: clock.ns(n.total),
        self_ns: clock.ns(n.self_ticks),
        min_ns: clock.ns(min),
        p50_ns: q(0.50),
        p90_ns: q(0.90),
        p99_ns: q(0.99),
        max_ns: clock.ns(max),
        folded: n.folded,
        open: n.open,
        open_ns: clock.ns(n.open_ticks),
    }
}

/// Each function's calls in `t`, summed: every node's, but the total and open time only of the
/// outermost nodes of a recursion. In order of first appearance.
fn per_function(t: &Tree) -> Vec<Node> {
    let outer = outermost(t);
    let mut at: HashMap<u32, usize> = HashMap::new();
    let mut sums: Vec<Node> = Vec::new();
    for (n, &outer) in t.nodes.iter().zip(&outer) {
        let i = *at.entry(n.function).or_insert_with(|| {
            sums.push(Node {
                function: n.function,
                ..Node::default()
            });
            sums.len() - 1
        });
        let s = &mut sums[i];
        let (total, open_ticks) = (s.total, s.open_ticks);
        s.add(n);
        if !outer {
            s.total = total;
            s.open_ticks = open_ticks;
        }
    }
    sums
}

/// One row per function of `t`, in order of first appearance.
pub(crate) fn function_rows(t: &Tree, functions: &Functions, clock: &TickRate) -> Vec<ProfileRow> {
    per_function(t)
        .iter()
        .map(|n| {
            row_of(
                n,
                functions.name(n.function).into_owned(),
                n.function,
                clock,
            )
        })
        .collect()
}

/// How rows are ordered by `sort`; equal rows by id.
pub(crate) fn order(sort: SortKey) -> impl Fn(&ProfileRow, &ProfileRow) -> Ordering {
    move |a, b| {
        let desc = |x: u64, y: u64| y.cmp(&x);
        match sort {
            SortKey::Count => desc(a.count, b.count),
            SortKey::Min => desc(a.min_ns, b.min_ns),
            SortKey::P50 => desc(a.p50_ns, b.p50_ns),
            SortKey::P90 => desc(a.p90_ns, b.p90_ns),
            SortKey::P99 => desc(a.p99_ns, b.p99_ns),
            SortKey::Max => desc(a.max_ns, b.max_ns),
            SortKey::Total => desc(a.total_ns, b.total_ns),
            SortKey::SelfTime => desc(a.self_ns, b.self_ns),
            SortKey::Name => a.function.cmp(&b.function),
            SortKey::Id => a.id.cmp(&b.id),
        }
        .then(a.id.cmp(&b.id))
    }
}

/// Leaves out the rows below `--min`, sorts, cuts to `--top`.
fn keep(rows: &mut Vec<ProfileRow>, opts: &ProfileOptions) {
    if let Some(min) = opts.min_ns {
        rows.retain(|r| r.total_ns >= min);
    }
    rows.sort_by(order(opts.sort));
    if let Some(n) = opts.top {
        rows.truncate(n);
    }
}

/// The call paths of `t` in preorder, callees by total (most first, then by name and id), at
/// most [`MAX_SHOWN_FRAMES`] frames deep; a path whose total is below `min_ns` is left out with
/// everything under it.
fn tree_rows(t: &Tree, functions: &Functions, clock: &TickRate, min_ns: Option<u64>) -> Body {
    let paths = Paths::new(t, MAX_SHOWN_FRAMES);
    let total_ns = clock.ns(paths.total());
    let row = |i: usize| {
        let p = &paths.paths[i];
        row_of(
            &p.calls,
            paths.label(i, functions).into_owned(),
            p.calls.function,
            clock,
        )
    };
    let sorted = |list: &[u32]| {
        let mut v: Vec<(ProfileRow, usize)> = list
            .iter()
            .map(|&c| (row(c as usize), c as usize))
            .filter(|(r, _)| min_ns.map_or(true, |m| r.total_ns >= m))
            .collect();
        v.sort_by(|a, b| {
            b.0.total_ns
                .cmp(&a.0.total_ns)
                .then_with(|| a.0.function.cmp(&b.0.function))
                .then(a.0.id.cmp(&b.0.id))
        });
        v
    };
    let mut rows = Vec::new();
    let mut todo: Vec<(ProfileRow, usize)> = sorted(&paths.roots);
    todo.reverse();
    while let Some((r, i)) = todo.pop() {
        let p = &paths.paths[i];
        let share = if total_ns == 0 {
            0.0
        } else {
            r.total_ns as f64 / total_ns as f64
        };
        rows.push(PathRow {
            depth: p.depth,
            row: r,
            share,
            deeper: p.deeper,
        });
        let mut kids = sorted(&p.children);
        kids.reverse();
        todo.extend(kids);
    }
    Body::Tree { rows, total_ns }
}

/// The functions of `ids` in `t`, each with its callers and callees, sorted and cut as rows are.
fn focus(
    t: &Tree,
    functions: &Functions,
    clock: &TickRate,
    ids: &HashSet<u32>,
    opts: &ProfileOptions,
) -> Vec<Focus> {
    let children = Children::of(t);
    // Per matching function: (caller id, calls, ticks) and (callee id, calls, ticks).
    type Edges = HashMap<Option<u32>, (u64, u64)>;
    let mut edges: HashMap<u32, (Edges, Edges)> = HashMap::new();
    for (i, n) in t.nodes.iter().enumerate() {
        if !ids.contains(&n.function) {
            continue;
        }
        let (callers, callees) = edges.entry(n.function).or_default();
        let caller = n
            .parent
            .filter(|&p| (p as usize) < i)
            .map(|p| t.nodes[p as usize].function);
        let e = callers.entry(caller).or_default();
        e.0 = e.0.saturating_add(n.count);
        e.1 = e.1.saturating_add(n.total);
        for &c in children.get(i) {
            let c = &t.nodes[c as usize];
            let e = callees.entry(Some(c.function)).or_default();
            e.0 = e.0.saturating_add(c.count);
            e.1 = e.1.saturating_add(c.total);
        }
    }
    let edge_list = |m: &Edges| {
        let mut v: Vec<Edge> = m
            .iter()
            .map(|(&id, &(count, ticks))| Edge {
                function: id.map(|id| functions.name(id).into_owned()),
                id,
                count,
                total_ns: clock.ns(ticks),
            })
            .filter(|e| opts.min_ns.map_or(true, |m| e.total_ns >= m))
            .collect();
        v.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then(b.count.cmp(&a.count))
                .then_with(|| a.function.cmp(&b.function))
                .then(a.id.cmp(&b.id))
        });
        v
    };
    let mut rows: Vec<ProfileRow> = function_rows(t, functions, clock)
        .into_iter()
        .filter(|r| ids.contains(&r.id))
        .collect();
    keep(&mut rows, opts);
    rows.into_iter()
        .map(|row| {
            let (callers, callees) = edges.get(&row.id).map_or_else(
                || (Vec::new(), Vec::new()),
                |(a, b)| (edge_list(a), edge_list(b)),
            );
            Focus {
                row,
                callers,
                callees,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdr_testkit::profile::{known, TreeBuilder, HANDLE, MAIN, PARSE, WALK};

    fn rows(opts: &ProfileOptions) -> Vec<ProfileRow> {
        let r = report(&known(), "p", opts).unwrap();
        match &r.sections[0].body {
            Body::Functions(rows) => rows.clone(),
            b => panic!("{b:?}"),
        }
    }

    #[test]
    fn recursion_counts_every_call_and_the_outermost_time() {
        let rows = rows(&ProfileOptions::default());
        let by = |id| rows.iter().find(|r| r.id == id).unwrap();
        let walk = by(WALK);
        assert_eq!((walk.count, walk.total_ns, walk.self_ns), (5, 3500, 3200));
        assert_eq!((walk.min_ns, walk.max_ns), (700, 2500));
        let handle = by(HANDLE);
        assert_eq!(
            (handle.count, handle.total_ns, handle.self_ns),
            (7, 16000, 9000)
        );
        assert_eq!(by(PARSE).count, 7);
        let order: Vec<u32> = rows.iter().map(|r| r.id).collect();
        assert_eq!(order, [HANDLE, PARSE, WALK, 5, MAIN, 6]);
    }

    #[test]
    fn quantiles_stay_within_min_and_max_even_when_a_file_disagrees() {
        let mut t = TreeBuilder::new(0, "");
        t.calls(None, 1, &[1000, 1000], 2000);
        let mut t = t.finish();
        // A hostile node: min above max, a histogram far outside both.
        t.nodes[0].min = 5000;
        t.nodes[0].max = 10;
        t.nodes[0].hist.add(1 << 30, 9);
        let r = function_rows(&t, &Functions::default(), &TickRate::new(1_000_000_000));
        assert_eq!((r[0].min_ns, r[0].p50_ns, r[0].max_ns), (5000, 5000, 5000));
    }

    #[test]
    fn min_leaves_out_short_functions_and_top_cuts() {
        let opts = ProfileOptions {
            min_ns: Some(3000),
            sort: SortKey::Total,
            top: Some(2),
            ..ProfileOptions::default()
        };
        let r: Vec<String> = rows(&opts).into_iter().map(|r| r.function).collect();
        assert_eq!(r, ["app::handle", "app::main"]);
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn report() -> Result<(), crate::CliError> {
        use crate::commands::profile::{report, Body, ProfileOptions};
        let r = report(
            &fdr_testkit::profile::known(),
            "demo.fdrprof",
            &ProfileOptions::default(),
        )?;
        let Body::Functions(rows) = &r.sections[0].body else {
            unreachable!()
        };
        let walk = rows.iter().find(|r| r.function == "app::walk").unwrap();
        assert_eq!((walk.count, walk.total_ns, walk.self_ns), (5, 3500, 3200));
        Ok::<(), crate::CliError>(())
    }
}
