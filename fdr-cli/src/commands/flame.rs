//! `fdr flame`: the lines of a flame graph (self time per call path, merged across threads) or, with
//! `--chart`, a flame chart (time left to right, one root per thread), that
//! [`crate::render::flame`] draws with inferno.
//!
//! The renderer takes every call path as a line of text, so what is handed to it is bounded:
//! at most [`MAX_FLAME_FRAMES`] frames and [`MAX_FLAME_BYTES`] bytes of lines in all, and counts that add up
//! within a `u64` (past that, all are divided by one factor, said in the subtitle).
//!
//! - The graph comes from the call trie (see [`crate::model::trie`]: at most 2^18 paths, at most
//!   1024 frames deep). Paths narrower than the renderer draws (0.01 % of the width) are folded
//!   into their caller's line, which changes nothing drawn. If the lines are still over the
//!   limits, the narrowest paths are folded into their callers until they fit, and the graph
//!   says so in its subtitle.
//! - The chart keeps, per thread, the runs of time during which the stack (up to 1024 frames
//!   deep) stayed the same: exact while they fit; past the limits, each thread's stack is
//!   sampled at regular intervals instead (like a sampling profiler), the interval doubling
//!   until the runs fit, and the chart says so in its subtitle.
//! - A profile's graph ([`profile_drawing`]) comes from its trees merged by call path (see
//!   [`crate::model::profile_file::Paths`]: at most 1024 frames deep), each path's self time, folded
//!   to fit as the log's. A profile has no time order, so no chart.

use std::collections::HashMap;
use std::ops::ControlFlow;

use fdr_format::profile::Profile;
use fdr_format::sink::{Enter, Exit, Sink, GO_ON};

use crate::escape::shown;
use crate::limits::{MAX_CALL_PATHS, MAX_FLAME_BYTES, MAX_FLAME_FRAMES, MAX_SHOWN_FRAMES};
use crate::model::engine::Report;
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::model::names::Names;
use crate::model::pass::{plan, replay};
use crate::model::profile_file::{Functions, Paths};
use crate::model::thin_window;
use crate::model::trie::{NodeKind, Trie};
use crate::units::{human, TickRate};
use crate::CliError;

/// The renderer leaves out frames narrower than this share of the width, in percent.
const MIN_WIDTH_PCT: f64 = 0.01;

/// What a graph or chart may hand the renderer: [`MAX_FLAME_FRAMES`], [`MAX_FLAME_BYTES`] and
/// [`MAX_SHOWN_FRAMES`] by default; smaller in tests and fuzzing, to reach the code past them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FlameLimits {
    /// Frames over all lines.
    pub frames: usize,
    /// Bytes of all lines.
    pub bytes: usize,
    /// Frames of one call path shown (the chart's; the graph's comes with its trie).
    pub depth: usize,
}

impl Default for FlameLimits {
    fn default() -> Self {
        FlameLimits {
            frames: MAX_FLAME_FRAMES,
            bytes: MAX_FLAME_BYTES,
            depth: MAX_SHOWN_FRAMES,
        }
    }
}

fn frame_label(s: &str) -> String {
    shown(s).replace(';', ":")
}

fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// A call tree as the flame graph folds it: node 0 is the root above every path (it draws
/// nothing), and each node comes after its caller.
trait Forest {
    /// Nodes, the root included.
    fn len(&self) -> usize;
    /// Calls `f` with each callee of node `i`.
    fn each_child(&self, i: usize, f: &mut dyn FnMut(usize));
    /// Node `i`'s self time, ns.
    fn self_ns(&self, i: usize) -> u64;
    /// Node `i`'s frame, as the renderer gets it (see `frame_label`).
    fn label(&self, i: usize) -> String;
}

/// The call trie of a log.
struct TrieForest<'a> {
    t: &'a Trie,
    names: &'a Names,
    clock: &'a TickRate,
}

impl Forest for TrieForest<'_> {
    fn len(&self) -> usize {
        self.t.nodes.len()
    }
    fn each_child(&self, i: usize, f: &mut dyn FnMut(usize)) {
        for &(_, c) in &self.t.nodes[i].children {
            f(c as usize);
        }
    }
    fn self_ns(&self, i: usize) -> u64 {
        self.clock.ns(self.t.nodes[i].self_)
    }
    fn label(&self, i: usize) -> String {
        frame_label(&self.t.label(&self.t.nodes[i], self.names))
    }
}

/// The call paths of a profile: node `i + 1` is path `i`.
struct PathsForest<'a> {
    paths: &'a Paths,
    functions: &'a Functions,
    clock: &'a TickRate,
}

impl Forest for PathsForest<'_> {
    fn len(&self) -> usize {
        self.paths.paths.len() + 1
    }
    fn each_child(&self, i: usize, f: &mut dyn FnMut(usize)) {
        let list = match i {
            0 => &self.paths.roots,
            i => &self.paths.paths[i - 1].children,
        };
        for &c in list {
            f(c as usize + 1);
        }
    }
    fn self_ns(&self, i: usize) -> u64 {
        match i {
            0 => 0,
            i => self.clock.ns(self.paths.paths[i - 1].calls.self_ticks),
        }
    }
    fn label(&self, i: usize) -> String {
        frame_label(&self.paths.label(i - 1, self.functions))
    }
}

/// The flame graph's lines (`a;b;c <ns>`): per path kept, its self time plus that of the paths
/// folded into it. Paths narrower than the renderer draws are always folded into their caller
/// (top-level ones into one `[narrow call paths]` line); past `limits`, ever wider ones, and
/// `notes` gets a line saying so. The counts always add up to the trie's whole time.
pub(crate) fn graph_lines(
    t: &Trie,
    names: &Names,
    clock: &TickRate,
    limits: FlameLimits,
    notes: &mut Vec<String>,
) -> Vec<String> {
    fold_graph(&TrieForest { t, names, clock }, limits, notes)
}

/// [`graph_lines`] of a profile's call paths (see [`crate::model::profile_file::Paths`]): each
/// path's self time.
pub(crate) fn profile_lines(
    paths: &Paths,
    functions: &Functions,
    clock: &TickRate,
    limits: FlameLimits,
    notes: &mut Vec<String>,
) -> Vec<String> {
    let f = PathsForest {
        paths,
        functions,
        clock,
    };
    fold_graph(&f, limits, notes)
}

fn fold_graph(t: &dyn Forest, limits: FlameLimits, notes: &mut Vec<String>) -> Vec<String> {
    let n = t.len();
    // Width of a path in the graph: its self time and that of every path under it. Children
    // have larger indices than their parents.
    let self_ns: Vec<u64> = (0..n).map(|i| t.self_ns(i)).collect();
    let mut width = self_ns.clone();
    for i in (0..n).rev() {
        let mut below = 0u64;
        t.each_child(i, &mut |c| below = below.saturating_add(width[c]));
        width[i] = width[i].saturating_add(below);
    }
    let total = width[0];
    let mut labels: Vec<Option<String>> = vec![None; n];
    fn label<'a>(labels: &'a mut [Option<String>], t: &dyn Forest, i: usize) -> &'a str {
        labels[i].get_or_insert_with(|| t.label(i))
    }
    const NARROW: &str = "[narrow call paths]";
    // Walks the paths at least `min` wide; `f` gets each line's nodes and count (an empty
    // list for the line of narrow paths at the top).
    let walk = |min: f64, f: &mut dyn FnMut(&[usize], u64)| {
        let mut path: Vec<usize> = Vec::new();
        let mut narrow_top = 0u64;
        let mut todo: Vec<(usize, usize)> = Vec::new();
        t.each_child(0, &mut |c| {
            if (width[c] as f64) < min {
                narrow_top = narrow_top.saturating_add(width[c]);
            } else {
                todo.push((c, 0));
            }
        });
        while let Some((c, depth)) = todo.pop() {
            path.truncate(depth);
            path.push(c);
            let mut count = self_ns[c];
            t.each_child(c, &mut |k| {
                if (width[k] as f64) < min {
                    count = count.saturating_add(width[k]);
                } else {
                    todo.push((k, depth + 1));
                }
            });
            if count > 0 {
                f(&path, count);
            }
        }
        if narrow_top > 0 {
            f(&[], narrow_top);
        }
    };
    let drawn = total as f64 * MIN_WIDTH_PCT / 100.0;
    let mut min = drawn;
    loop {
        let (mut frames, mut bytes) = (0usize, 0usize);
        walk(min, &mut |path, count| {
            frames += path.len().max(1);
            bytes += if path.is_empty() {
                NARROW.len()
            } else {
                path.iter()
                    .map(|&i| label(&mut labels, t, i).len() + 1)
                    .sum::<usize>()
            } + digits(count)
                + 1;
        });
        if frames <= limits.frames && bytes <= limits.bytes {
            break;
        }
        // Everything narrower than the whole folds into one line at worst, which always fits.
        min = (min * 2.0).max(1.0);
    }
    if min > drawn {
        notes.push(format!(
            "call paths narrower than {} are folded into their callers (fdr's limits: {} \
             frames, {} MiB of call paths)",
            human(min.ceil() as u64),
            limits.frames,
            limits.bytes >> 20
        ));
    }
    let mut lines = Vec::new();
    walk(min, &mut |path, count| {
        let mut line = String::new();
        if path.is_empty() {
            line.push_str(NARROW);
        }
        for (k, &i) in path.iter().enumerate() {
            if k > 0 {
                line.push(';');
            }
            line.push_str(label(&mut labels, t, i));
        }
        line.push(' ');
        line.push_str(&count.to_string());
        lines.push(line);
    });
    lines
}

/// The renderer adds the counts of all lines into one `u64` as it lays them out. Durations a
/// log claims can add up to more (a hostile or corrupt log, or calls of centuries): then every
/// count is divided by one factor, so the picture keeps its proportions, and `notes` says so.
fn fit_counts(lines: &mut [String], notes: &mut Vec<String>) {
    fn count(line: &str) -> u64 {
        line.rsplit(' ')
            .next()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    }
    let sum: u128 = lines.iter().map(|l| u128::from(count(l))).sum();
    if sum <= u128::from(u64::MAX) {
        return;
    }
    // Half the range, so that keeping a nonzero count at 1 (one per line at most) still fits.
    let divisor = (sum / (u128::from(u64::MAX) >> 1) + 1) as u64;
    for line in lines.iter_mut() {
        let c = count(line);
        let at = line.rfind(' ').map_or(line.len(), |i| i + 1);
        line.truncate(at);
        let scaled = if c == 0 { 0 } else { (c / divisor).max(1) };
        line.push_str(&scaled.to_string());
    }
    notes.push(format!(
        "the durations add up to more than 2^64 ns, so every width is in units of {divisor} ns"
    ));
}

/// A stretch of a thread's time with one stack: `cols` sampling intervals from `start`.
#[derive(Clone, Copy, Debug)]
struct Run {
    /// The stack's function ids, from the bottom: `arena[at..at + len]`.
    at: usize,
    len: usize,
    /// The stack was deeper than the display depth.
    deeper: bool,
    start: u64,
    cols: u64,
}

#[derive(Default)]
struct ChartThread {
    /// Function ids of the open calls, up to the display depth.
    ids: Vec<u32>,
    /// How many calls are open.
    depth: usize,
    started: bool,
    /// The thread's first event: sampling times are `origin + k * step`.
    origin: u64,
    /// The first sampling time not yet given to a run.
    next: u64,
    runs: Vec<Run>,
}

/// The flame chart being built: per thread, the time-ordered runs of identical stacks (up to
/// the display depth), exact while they fit the limits, else sampled every `step` ticks, the
/// step doubling until they fit.
pub(crate) struct Chart {
    limits: FlameLimits,
    max_depth: usize,
    step: u64,
    threads: Vec<ChartThread>,
    arena: Vec<u32>,
}

impl Chart {
    /// An empty chart.
    pub(crate) fn new(limits: FlameLimits) -> Chart {
        Chart {
            limits,
            max_depth: limits.depth.max(1),
            step: 1,
            threads: Vec::new(),
            arena: Vec::new(),
        }
    }

    /// Ticks between two samples of a thread's stack (1: every change is kept).
    #[cfg(test)]
    pub(crate) fn step(&self) -> u64 {
        self.step
    }

    /// Gives the intervals before `now` to the thread's current stack.
    fn advance(&mut self, thread: usize, now: u64) -> Result<(), CliError> {
        if thread >= self.threads.len() {
            self.threads.resize_with(thread + 1, ChartThread::default);
        }
        let step = self.step;
        let th = &mut self.threads[thread];
        if !th.started {
            th.started = true;
            th.origin = now;
            th.next = now;
            return Ok(());
        }
        if now <= th.next {
            return Ok(());
        }
        let cols = (now - th.next).div_ceil(step);
        let start = th.next;
        th.next = th.next.saturating_add(cols.saturating_mul(step));
        if th.depth == 0 {
            return Ok(());
        }
        let shown = th.depth.min(self.max_depth);
        let deeper = th.depth > self.max_depth;
        if let Some(last) = th.runs.last_mut() {
            if last.start.saturating_add(last.cols.saturating_mul(step)) == start
                && last.deeper == deeper
                && self.arena[last.at..last.at + last.len] == th.ids[..shown]
            {
                last.cols += cols;
                return Ok(());
            }
        }
        th.runs.push(Run {
            at: self.arena.len(),
            len: shown,
            deeper,
            start,
            cols,
        });
        self.arena.extend_from_slice(&th.ids[..shown]);
        let most = self.limits.frames;
        if self.arena.len() + self.threads.len() > most {
            self.coarsen(|c| c.arena.len() + c.threads.len() <= most)?;
        }
        Ok(())
    }

    /// Doubles the sampling interval, keeping what every thread's stack was at the new times,
    /// until `fits`; an error when even one sample per thread does not.
    fn coarsen(&mut self, fits: impl Fn(&Chart) -> bool) -> Result<(), CliError> {
        while !fits(self) {
            if self.step >= 1 << 62 {
                return Err(CliError::limit(format!(
                    "the flame chart needs more than {} frames or {} MiB of call paths even \
                     with one sample per thread, fdr's limits for a chart (try `fdr flame` \
                     without --chart)",
                    self.limits.frames,
                    self.limits.bytes >> 20
                )));
            }
            let (old, step) = (self.step, self.step * 2);
            let mut arena = Vec::with_capacity(self.arena.len() / 2);
            for th in &mut self.threads {
                let mut runs: Vec<Run> = Vec::new();
                for r in &th.runs {
                    // Sampling times of the new interval inside the run.
                    let lo = u128::from(r.start - th.origin);
                    let hi = lo + u128::from(r.cols) * u128::from(old);
                    let (j0, j1) = (lo.div_ceil(step.into()), hi.div_ceil(step.into()));
                    if j1 <= j0 {
                        continue;
                    }
                    let start = th.origin + (j0 * u128::from(step)) as u64;
                    let cols = (j1 - j0) as u64;
                    let path = &self.arena[r.at..r.at + r.len];
                    if let Some(last) = runs.last_mut() {
                        if last.start.saturating_add(last.cols.saturating_mul(step)) == start
                            && last.deeper == r.deeper
                            && arena[last.at..last.at + last.len] == *path
                        {
                            last.cols += cols;
                            continue;
                        }
                    }
                    runs.push(Run {
                        at: arena.len(),
                        len: r.len,
                        deeper: r.deeper,
                        start,
                        cols,
                    });
                    arena.extend_from_slice(path);
                }
                th.runs = runs;
                let ahead = u128::from(th.next - th.origin).div_ceil(step.into());
                th.next = th.origin.saturating_add((ahead * u128::from(step)) as u64);
            }
            self.arena = arena;
            self.step = step;
        }
        Ok(())
    }
}

impl Sink for Chart {
    type Error = CliError;

    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, CliError> {
        let (t, depth, f) = (e.thread as usize, e.depth, e.frame);
        if depth <= self.max_depth {
            self.advance(t, f.start)?;
        } else if t >= self.threads.len() {
            self.threads.resize_with(t + 1, ChartThread::default);
        }
        let th = &mut self.threads[t];
        th.depth = depth + 1;
        if depth < self.max_depth {
            th.ids.truncate(depth);
            th.ids.push(f.id);
        }
        Ok(GO_ON)
    }

    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, CliError> {
        let (t, depth) = (e.thread as usize, e.depth);
        if depth <= self.max_depth {
            self.advance(t, e.end)?;
        }
        if let Some(th) = self.threads.get_mut(t) {
            th.depth = depth;
            th.ids.truncate(depth.min(self.max_depth));
        }
        Ok(GO_ON)
    }
}

impl Chart {
    /// The chart's lines (`thread;a;b <ns>`), thread by thread in time order; `tids` gives each
    /// thread index's id, for its name. Samples more coarsely first if the lines would be
    /// over the byte limit, and adds a note to `notes` if the chart is sampled.
    pub(crate) fn lines(
        &mut self,
        names: &Names,
        clock: &TickRate,
        tids: &[i32],
        notes: &mut Vec<String>,
    ) -> Result<Vec<String>, CliError> {
        let deeper = format!("[calls deeper than {} frames]", self.max_depth);
        let tnames: Vec<String> = (0..self.threads.len())
            .map(|t| {
                tids.get(t)
                    .map(|&tid| frame_label(&names.thread(tid)))
                    .unwrap_or_default()
            })
            .collect();
        let label = |id: u32| frame_label(&names.function(id));
        let mut labels: HashMap<u32, String> = HashMap::new();
        let size = |c: &Chart, labels: &mut HashMap<u32, String>| -> usize {
            let mut bytes = 0;
            for (t, th) in c.threads.iter().enumerate() {
                for r in &th.runs {
                    bytes += tnames[t].len() + 22;
                    bytes += if r.deeper { deeper.len() + 1 } else { 0 };
                    for &id in &c.arena[r.at..r.at + r.len] {
                        bytes += 1 + labels.entry(id).or_insert_with(|| label(id)).len();
                    }
                }
            }
            bytes
        };
        let most = self.limits.bytes;
        if size(self, &mut labels) > most {
            self.coarsen(|c| size(c, &mut HashMap::new()) <= most)?;
        }
        if self.step > 1 {
            notes.push(format!(
                "each thread's stack sampled every {} (fdr's limits for a chart: {} frames, \
                 {} MiB of call paths)",
                human(clock.ns(self.step).max(1)),
                self.limits.frames,
                self.limits.bytes >> 20
            ));
        }
        let mut lines = Vec::new();
        for (t, th) in self.threads.iter().enumerate() {
            for r in &th.runs {
                let ns = clock.ns(r.cols.saturating_mul(self.step));
                if ns == 0 {
                    // Draws nothing (a run shorter than a nanosecond at the log's tick rate).
                    continue;
                }
                let mut line = tnames[t].clone();
                for &id in &self.arena[r.at..r.at + r.len] {
                    line.push(';');
                    match labels.get(&id) {
                        Some(l) => line.push_str(l),
                        None => line.push_str(&label(id)),
                    }
                }
                if r.deeper {
                    line.push(';');
                    line.push_str(&deeper);
                }
                line.push(' ');
                line.push_str(&ns.to_string());
                lines.push(line);
            }
        }
        Ok(lines)
    }
}

/// What `fdr flame` draws: inferno's input lines (`frame;frame;frame count`) and what the
/// subtitle says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Drawing {
    /// The log's name.
    pub name: String,
    /// A flame chart (time order, one root per thread) rather than a graph.
    pub chart: bool,
    /// One line per call path (graph) or run of time (chart).
    pub lines: Vec<String>,
    /// What was merged, folded or sampled to fit, for the subtitle.
    pub notes: Vec<String>,
}

/// The flame graph (or, with `chart`, the flame chart) of `log` behind `filter`; an error when
/// there is nothing to draw.
pub(crate) fn drawing(
    log: &Log,
    filter: &Filter,
    chart: bool,
    progress: &dyn Report,
) -> Result<Drawing, CliError> {
    let name = log.name().to_string();
    let mut said = Vec::new();
    let thin;
    let mut lines: Vec<String> = if chart {
        let p = plan(log, filter, progress)?;
        thin = thin_window::note(&p.info, &p.threads);
        let names = Names::new(&p.info);
        let clock = TickRate::new(p.info.header.cycle_frequency);
        let mut c = Chart::new(FlameLimits::default());
        replay(log, &mut c, Some(&p), filter, progress, 1)?;
        let tids: Vec<i32> = p.threads.iter().map(|t| t.tid).collect();
        c.lines(&names, &clock, &tids, &mut said)
            .map_err(|e| e.in_log(&name))?
    } else {
        let (t, p) = Trie::build(log, filter, progress)?;
        thin = thin_window::note(&p.info, &p.threads);
        let names = Names::new(&p.info);
        let clock = TickRate::new(p.info.header.cycle_frequency);
        let lines = graph_lines(&t, &names, &clock, FlameLimits::default(), &mut said);
        if t.nodes.iter().any(|n| n.kind == NodeKind::MorePaths) {
            said.push(format!(
                "[more call paths, merged]: the log has more than {} call paths, fdr's limit",
                MAX_CALL_PATHS
            ));
        }
        lines
    };
    fit_counts(&mut lines, &mut said);
    if lines.iter().any(|l| l.contains("[calls deeper than ")) {
        said.push(format!(
            "[calls deeper than {MAX_SHOWN_FRAMES} frames] holds each call made at that depth with \
             everything it called"
        ));
    }
    if lines.is_empty() {
        return Err(CliError::Empty {
            path: name,
            what: match thin {
                Some(n) => format!("the log has no calls to draw ({n})"),
                None => "the log has no calls to draw".to_string(),
            },
        });
    }
    Ok(Drawing {
        name,
        chart,
        lines,
        notes: said,
    })
}

/// The flame graph of profile `p` (named `name`): its trees merged by call path, each path's
/// self time; an error when there is nothing to draw.
pub(crate) fn profile_drawing(name: &str, p: &Profile) -> Result<Drawing, CliError> {
    let paths = Paths::new(&p.merged(), MAX_SHOWN_FRAMES);
    let functions = Functions::new(p);
    let clock = TickRate::new(p.ticks_per_second);
    let mut said = Vec::new();
    let mut lines = profile_lines(
        &paths,
        &functions,
        &clock,
        FlameLimits::default(),
        &mut said,
    );
    fit_counts(&mut lines, &mut said);
    if paths.paths.iter().any(|x| x.deeper) {
        said.push(format!(
            "[calls deeper than {MAX_SHOWN_FRAMES} frames] holds each call made at that depth with \
             everything it called"
        ));
    }
    if lines.is_empty() {
        return Err(CliError::Empty {
            path: name.to_string(),
            what: "the profile has no calls to draw".to_string(),
        });
    }
    Ok(Drawing {
        name: name.to_string(),
        chart: false,
        lines,
        notes: said,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::engine::{replay_decoder, Silent};
    use crate::model::pass::plan_decoder;
    use fdr_format::events::EventDecoder;
    use fdr_testkit::synth::LogBuilder;

    /// Each thread's visible stack after every change: (time, ids shown, deeper than shown).
    type Changes = Vec<Vec<(u64, Vec<u32>, bool)>>;

    /// Random nested calls on two threads, up to 12 deep, and what `depth` frames of each
    /// thread's stack look like after every change.
    fn random_log(seed: u64, steps: usize, depth: usize) -> (Vec<u8>, Changes) {
        let mut x = seed | 1;
        let mut rng = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut log = LogBuilder::new(1_000_000_000);
        for id in 1..=6 {
            log.function(id, &format!("f{id}"), &[]);
        }
        let mut changes = Vec::new();
        for tid in [5, 6] {
            let mut b = log.block(tid, 0, 100);
            let (mut t, mut stack) = (100u64, Vec::<u32>::new());
            let mut seen = Vec::new();
            for _ in 0..steps {
                t += 1 + rng() % 20;
                if stack.is_empty() || (stack.len() < 12 && rng() % 2 == 0) {
                    let id = 1 + (rng() % 6) as u32;
                    b.enter(id, t);
                    stack.push(id);
                } else {
                    b.exit(stack.pop().unwrap(), t);
                }
                let shown = stack.len().min(depth);
                seen.push((t, stack[..shown].to_vec(), stack.len() > depth));
            }
            // The window's end closes what is still open.
            seen.push((t, Vec::new(), false));
            b.finish();
            changes.push(seen);
        }
        (log.finish(), changes)
    }

    /// The runs a sampler every `step` ticks sees: the stack after the last change at or before
    /// each sampling time, from the first change up to (not at) the last.
    fn sampled(changes: &[(u64, Vec<u32>, bool)], step: u64) -> Vec<(Vec<u32>, bool, u64, u64)> {
        let origin = changes[0].0;
        let end = changes.last().unwrap().0;
        let mut runs: Vec<(Vec<u32>, bool, u64, u64)> = Vec::new();
        let mut c = origin;
        let mut k = 0;
        while c < end {
            while k + 1 < changes.len() && changes[k + 1].0 <= c {
                k += 1;
            }
            let (_, ids, deeper) = &changes[k];
            if !ids.is_empty() {
                match runs.last_mut() {
                    Some(r) if r.0 == *ids && r.1 == *deeper && r.2 + r.3 * step == c => r.3 += 1,
                    _ => runs.push((ids.clone(), *deeper, c, 1)),
                }
            }
            c += step;
        }
        runs
    }

    fn chart_of(bytes: &[u8], limits: FlameLimits) -> Chart {
        let hidden = Silent;
        let p = plan_decoder(EventDecoder::new(bytes).unwrap(), "mem", &hidden).unwrap();
        let mut c = Chart::new(limits);
        replay_decoder(
            EventDecoder::new(bytes).unwrap(),
            "mem",
            &mut c,
            Some(&p),
            &hidden,
            1,
        )
        .unwrap();
        c
    }

    fn runs_of(c: &Chart, t: usize) -> Vec<(Vec<u32>, bool, u64, u64)> {
        c.threads[t]
            .runs
            .iter()
            .map(|r| {
                (
                    c.arena[r.at..r.at + r.len].to_vec(),
                    r.deeper,
                    r.start,
                    r.cols,
                )
            })
            .collect()
    }

    #[test]
    fn the_chart_is_exact_within_its_limits_and_exactly_sampled_past_them() {
        for seed in 1..6 {
            let (bytes, changes) = random_log(seed, 3000, 3);
            let exact = chart_of(
                &bytes,
                FlameLimits {
                    depth: 3,
                    ..FlameLimits::default()
                },
            );
            assert_eq!(exact.step(), 1);
            let small = chart_of(
                &bytes,
                FlameLimits {
                    frames: 300,
                    bytes: MAX_FLAME_BYTES,
                    depth: 3,
                },
            );
            assert!(small.step() > 1, "seed {seed}: sampled");
            assert!(small.arena.len() + small.threads.len() <= 300);
            // Thread index 0 is the leading block's (no calls); 1 and 2 are tids 5 and 6.
            for (t, ch) in changes.iter().enumerate() {
                assert_eq!(runs_of(&exact, t + 1), sampled(ch, 1), "seed {seed} exact");
                assert_eq!(
                    runs_of(&small, t + 1),
                    sampled(ch, small.step()),
                    "seed {seed} every {}",
                    small.step()
                );
            }
        }
    }

    #[test]
    fn chart_lines_fit_the_byte_limit_and_say_when_sampled() {
        let (bytes, _) = random_log(7, 2000, 4);
        let names = Names::default();
        let clock = TickRate::new(1_000_000_000);
        let mut notes = Vec::new();
        let mut c = chart_of(&bytes, FlameLimits::default());
        let all = c.lines(&names, &clock, &[0, 5, 6], &mut notes).unwrap();
        assert!(notes.is_empty());
        let total = |lines: &[String]| -> u64 {
            lines
                .iter()
                .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
                .sum()
        };
        let limits = FlameLimits {
            bytes: 2000,
            ..FlameLimits::default()
        };
        let mut c = chart_of(&bytes, limits);
        let few = c.lines(&names, &clock, &[0, 5, 6], &mut notes).unwrap();
        assert!(few.iter().map(|l| l.len() + 1).sum::<usize>() <= 2000);
        assert!(
            notes[0].starts_with("each thread's stack sampled every "),
            "{notes:?}"
        );
        // Sampling keeps the time covered, to within one interval per run.
        let (a, b) = (total(&all), total(&few));
        assert!(b.abs_diff(a) <= few.len() as u64 * c.step(), "{a} vs {b}");
        assert!(all[0].starts_with("thread 5;"), "{}", all[0]);
    }

    #[test]
    fn the_graph_folds_paths_into_their_callers_and_keeps_every_nanosecond() {
        let (bytes, _) = random_log(11, 4000, 12);
        let hidden = Silent;
        let p = plan_decoder(EventDecoder::new(&bytes[..]).unwrap(), "mem", &hidden).unwrap();
        let mut t = Trie::default();
        replay_decoder(
            EventDecoder::new(&bytes[..]).unwrap(),
            "mem",
            &mut t,
            Some(&p),
            &hidden,
            1,
        )
        .unwrap();
        let names = Names::default();
        let clock = TickRate::new(1_000_000_000);
        let total: u64 = t.nodes.iter().map(|n| clock.ns(n.self_)).sum();
        let count = |lines: &[String]| -> (u64, usize) {
            let ns = lines
                .iter()
                .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
                .sum();
            let frames = lines.iter().map(|l| l.matches(';').count() + 1).sum();
            (ns, frames)
        };
        let mut notes = Vec::new();
        let all = graph_lines(&t, &names, &clock, FlameLimits::default(), &mut notes);
        assert!(notes.is_empty());
        assert_eq!(count(&all).0, total);
        // The lines of `stack --format folded`, less the paths too narrow to draw, whose time
        // went to their callers' lines.
        let folded: HashMap<String, u64> = t
            .folded(&names, &clock)
            .iter()
            .map(|l| {
                let (p, n) = l.rsplit_once(' ').unwrap();
                (p.to_string(), n.parse().unwrap())
            })
            .collect();
        let min = total as f64 * MIN_WIDTH_PCT / 100.0;
        for l in &all {
            let (p, n) = l.rsplit_once(' ').unwrap();
            let n: u64 = n.parse().unwrap();
            let own = folded.get(p).copied().unwrap_or(0);
            assert!(n >= own, "{p}: {n} < {own}");
        }
        let dropped = folded
            .keys()
            .filter(|p| {
                !all.iter()
                    .any(|l| l.rsplit_once(' ').unwrap().0 == p.as_str())
            })
            .count();
        assert!(
            dropped > 0 && min > 1.0,
            "this log has paths too narrow to draw"
        );
        for frames in [200, 20, 1] {
            let limits = FlameLimits {
                frames,
                ..FlameLimits::default()
            };
            let mut notes = Vec::new();
            let few = graph_lines(&t, &names, &clock, limits, &mut notes);
            let (ns, used) = count(&few);
            assert_eq!(ns, total, "limit {frames}");
            assert!(used <= frames, "{used} frames for a limit of {frames}");
            assert!(
                notes[0].starts_with("call paths narrower than "),
                "{notes:?}"
            );
        }
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    use crate::model::engine::Silent;

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn drawing() -> Result<(), crate::CliError> {
        use crate::{
            commands::flame::drawing,
            model::{filter::Filter, input::Log},
            progress::Progress,
        };
        let d = drawing(
            &Log::open("app.fdr".as_ref())?,
            &Filter::none(),
            false,
            &Silent,
        )?;
        println!("{} call paths", d.lines.len());
        Ok::<(), crate::CliError>(())
    }

    #[test]
    fn profile_drawing() {
        let p = fdr_testkit::profile::known();
        let d = crate::commands::flame::profile_drawing("demo.fdrprof", &p).unwrap();
        assert!(d
            .lines
            .contains(&"app::main;app::handle;app::walk;app::walk 900".to_string()));
    }
}
