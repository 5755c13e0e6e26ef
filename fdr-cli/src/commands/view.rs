//! `fdr view`: what the page shows, from the model: the per-function table with each function's
//! latency histogram (`account`'s), the slowest calls with their trees (`calls`'), the flame
//! graph's call paths (`flame`'s), and a timeline of every thread, bounded in size, that
//! [`crate::render::view`] writes into one HTML file.
//!
//! The timeline is laid out for [`VIEW_WIDTH_PX`] pixels across the window. A call at least a
//! pixel long is a slice in detail; a shorter one is merged with its neighbours at the same
//! depth of the same thread (closer than a pixel) into an aggregate bar that counts them, unless
//! it is one of the slowest calls or runs around the call that fired a trigger (at most
//! [`MAX_VIEW_KEPT`] such). Past [`MAX_VIEW_SLICES`] slices the detail threshold doubles (the
//! shortest slices become bars) until they fit; past [`MAX_VIEW_BARS`] bars the gap that merges
//! them doubles. So the page's size is bounded whatever the log, and [`LeftOut`] says what was
//! merged.
//!
//! The log is read five or six times: the account, the two passes of the slowest calls (three
//! with `--function`, `--from`, `--to` or `--around`), one pass for the timeline and the flame
//! graph together, and one for the CPU migrations when a thread has any.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

use fdr_format::awaits::{TaskAwait, TaskWake, Ties};
use fdr_format::events::EventKind;
use fdr_format::replay::log_end;
use fdr_format::sink::{AwaitSeen, Both, Close, Exit, PollSeen, Sink, TaskSeen, WokenSeen, GO_ON};

use crate::commands::account::{Account, AccountRow, SortKey};
use crate::commands::calls::{slowest, CallsOptions, Slowest};
use crate::commands::flame::{graph_lines, FlameLimits};
use crate::limits::{
    MAX_OPEN_TASKS, MAX_SHOWN_FRAMES, MAX_VIEW_BARS, MAX_VIEW_FLAME_BYTES, MAX_VIEW_FLAME_FRAMES,
    MAX_VIEW_FUNCTIONS, MAX_VIEW_KEPT, MAX_VIEW_MIGRATIONS, MAX_VIEW_SLICES, MAX_VIEW_TASKS,
    VIEW_SLOWEST, VIEW_TREE_DEPTH, VIEW_WIDTH_PX,
};
use crate::model::engine::{Plan, Report};
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::model::names::Names;
use crate::model::pass::replay;
use crate::model::tasks::{TaskSpan, Tasks};
use crate::model::trie::Trie;
use crate::model::trigger::fired;
use crate::units::TickRate;
use crate::CliError;

/// What the timeline may hold; [`ViewLimits::default`] is the documented one, smaller in tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ViewLimits {
    /// Pixels across the window at the full view.
    pub width: u64,
    /// Calls in detail.
    pub slices: usize,
    /// Of those, calls kept whatever their length.
    pub kept: usize,
    /// Aggregate bars.
    pub bars: usize,
}

impl Default for ViewLimits {
    fn default() -> Self {
        ViewLimits {
            width: VIEW_WIDTH_PX,
            slices: MAX_VIEW_SLICES,
            kept: MAX_VIEW_KEPT,
            bars: MAX_VIEW_BARS,
        }
    }
}

/// A call drawn in detail, in ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slice {
    /// Function id.
    pub id: u32,
    /// Its depth in its thread's stack (0 at the bottom).
    pub depth: u32,
    /// Entry (the window's start for an inferred entry).
    pub start: u64,
    /// End (the window's end for a call still running).
    pub end: u64,
    /// Time in the call itself, outside its recorded callees.
    pub self_ticks: u64,
    /// Its entry was before the window.
    pub inferred: bool,
    /// Still running when the window was written.
    pub open: bool,
    /// Closed by its caller's exit.
    pub unwound: bool,
    /// The async task it polled, if it was a poll.
    pub task: Option<u64>,
    /// Kept in detail whatever its length (a slowest call, or near the trigger).
    pub kept: bool,
}

/// Calls too short to draw alone, merged: at one depth of one thread, from the first one's
/// entry to the last one's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bar {
    /// Depth in the thread's stack.
    pub depth: u32,
    /// Ticks.
    pub start: u64,
    /// Ticks.
    pub end: u64,
    /// Calls merged.
    pub count: u64,
    /// Their time added up (ticks).
    pub ticks: u64,
    /// The function of the longest of them.
    pub id: u32,
    /// The longest of them (ticks).
    longest: u64,
    /// Calls of more than one function.
    pub mixed: bool,
}

impl Bar {
    fn new(depth: u32, start: u64, end: u64, id: u32) -> Bar {
        let d = end.saturating_sub(start);
        Bar {
            depth,
            start,
            end,
            count: 1,
            ticks: d,
            id,
            longest: d,
            mixed: false,
        }
    }

    fn absorb(&mut self, o: &Bar) {
        self.start = self.start.min(o.start);
        self.end = self.end.max(o.end);
        self.count += o.count;
        self.ticks = self.ticks.saturating_add(o.ticks);
        self.mixed |= o.mixed || o.id != self.id;
        if o.longest > self.longest {
            self.longest = o.longest;
            self.id = o.id;
        }
    }
}

/// One thread's lane of the timeline.
#[derive(Clone, Debug, Default)]
pub(crate) struct Lane {
    /// Calls in detail, by depth then start.
    pub slices: Vec<Slice>,
    /// Aggregate bars, by depth then start.
    pub bars: Vec<Bar>,
    /// Async tasks created on this thread (creation to completion), the longest kept.
    pub tasks: Vec<TaskSpan>,
    /// The waits at await sites of the lane's tasks: (the task's index in `tasks`, the wait).
    pub awaits: Vec<(usize, TaskAwait)>,
    /// The wake-ups of the lane's tasks and the polls they led to: (the task's index, it).
    pub wakes: Vec<(usize, TaskWake)>,
    /// CPU migrations: when (ticks), to which CPU.
    pub migrations: Vec<(u64, u16)>,
    /// The bar being extended at each depth.
    open_bars: Vec<Option<Bar>>,
    /// The index of the slice of the thread's last exit, for the poll event that follows it.
    last: Option<usize>,
}

/// What the timeline left out or merged, for the page to say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LeftOut {
    /// Calls merged into bars.
    pub merged_calls: u64,
    /// Calls shorter than this (ticks) were merged (one pixel at the full view, or more when
    /// the slices were too many).
    pub detail_ticks: u64,
    /// Bars closer than this (ticks) were merged into one.
    pub gap_ticks: u64,
    /// The detail threshold was raised past a pixel to keep [`MAX_VIEW_SLICES`].
    pub raised: bool,
    /// Calls not kept in detail near the trigger or among the slowest, past [`MAX_VIEW_KEPT`].
    pub kept_past_limit: u64,
    /// Bars dropped (a window with more threads and depths than bars allowed).
    pub bars_dropped: u64,
    /// Tasks not drawn, past [`MAX_VIEW_TASKS`].
    pub tasks_dropped: u64,
    /// Waits at await sites and wake-ups not drawn: past [`MAX_VIEW_TASKS`] of each, or of a
    /// task not drawn.
    pub waits_dropped: u64,
    /// CPU migrations not marked, past [`MAX_VIEW_MIGRATIONS`].
    pub migrations_dropped: u64,
    /// Functions not in the table, past [`MAX_VIEW_FUNCTIONS`].
    pub functions_dropped: usize,
}

/// The timeline's sink: slices, bars, tasks, per thread index.
struct Timeline {
    limits: ViewLimits,
    /// The detail threshold and the bars' merging gap (ticks).
    detail: u64,
    gap: u64,
    /// The whole window (ticks): thresholds never need to grow past it.
    span: u64,
    /// Calls kept in detail: the slowest (thread index, function, entry).
    slow: HashSet<(u32, u32, u64)>,
    /// And everything running in this range (ticks).
    around: Option<(u64, u64)>,
    kept: usize,
    lanes: Vec<Lane>,
    slices: usize,
    bars: usize,
    tasks: Tasks,
    spans: Vec<TaskSpan>,
    /// Waits and wake-ups tied to their tasks, at most [`MAX_VIEW_TASKS`] of each.
    ties: Ties,
    waits: Vec<TaskAwait>,
    wakes: Vec<TaskWake>,
    left: LeftOut,
}

impl Timeline {
    fn lane(&mut self, t: u32) -> &mut Lane {
        let t = t as usize;
        if t >= self.lanes.len() {
            self.lanes.resize_with(t + 1, Lane::default);
        }
        &mut self.lanes[t]
    }

    /// Merges the call (as a one-call bar) into the bar open at its depth, or opens one.
    fn merge(&mut self, t: u32, b: Bar) {
        let gap = self.gap;
        let lane = self.lane(t);
        let d = b.depth as usize;
        if d >= lane.open_bars.len() {
            lane.open_bars.resize(d + 1, None);
        }
        let done = match &mut lane.open_bars[d] {
            Some(o)
                if b.start.saturating_sub(o.end) < gap && o.start.saturating_sub(b.end) < gap =>
            {
                o.absorb(&b);
                None
            }
            slot => slot.replace(b),
        };
        self.left.merged_calls += b.count;
        if let Some(done) = done {
            self.lane(t).bars.push(done);
            self.bars += 1;
            if self.bars > self.limits.bars {
                self.widen_gap();
            }
        }
    }

    /// Too many slices: doubles the detail threshold until they fit, the shorter ones becoming
    /// bars.
    fn raise_detail(&mut self) {
        while self.slices > self.limits.slices && self.detail <= self.span {
            self.detail = self.detail.saturating_mul(2);
            self.gap = self.gap.max(self.detail);
            self.left.raised = true;
            let detail = self.detail;
            let mut demoted = 0u64;
            for lane in &mut self.lanes {
                lane.last = None;
                let before = lane.slices.len();
                let mut moved = Vec::new();
                lane.slices.retain(|s| {
                    let keep = s.kept || s.end.saturating_sub(s.start) >= detail;
                    if !keep {
                        moved.push(Bar::new(s.depth, s.start, s.end, s.id));
                    }
                    keep
                });
                demoted += (before - lane.slices.len()) as u64;
                lane.bars.extend(moved);
            }
            self.slices -= demoted as usize;
            self.bars += demoted as usize;
            self.left.merged_calls += demoted;
        }
        if self.bars > self.limits.bars {
            self.widen_gap();
        }
    }

    /// Merges each lane's bars closer than the gap; doubles the gap until they fit.
    fn widen_gap(&mut self) {
        loop {
            let gap = self.gap;
            self.bars = self
                .lanes
                .iter_mut()
                .map(|l| tidy_bars(&mut l.bars, gap))
                .sum();
            if self.bars <= self.limits.bars || self.gap > self.span {
                break;
            }
            self.gap = self.gap.saturating_mul(2);
        }
    }

    /// The open bars closed, everything sorted and within the limits; the tasks closed at the
    /// log's `end`, the longest kept.
    fn finish(&mut self, end: u64) -> Result<(), CliError> {
        for lane in &mut self.lanes {
            let open = std::mem::take(&mut lane.open_bars);
            lane.bars.extend(open.into_iter().flatten());
        }
        self.widen_gap();
        if self.bars > self.limits.bars {
            // More threads and depths than bars: the last ones go, said on the page.
            let mut room = self.limits.bars;
            for lane in &mut self.lanes {
                let keep = lane.bars.len().min(room);
                self.left.bars_dropped += (lane.bars.len() - keep) as u64;
                lane.bars.truncate(keep);
                room -= keep;
            }
        }
        for lane in &mut self.lanes {
            lane.slices.sort_unstable_by_key(|s| (s.depth, s.start));
        }
        let mut spans = std::mem::take(&mut self.spans);
        spans.extend(std::mem::take(&mut self.tasks).finish(end));
        if spans.len() > MAX_VIEW_TASKS {
            spans.sort_unstable_by_key(|s| std::cmp::Reverse(s.end.saturating_sub(s.start)));
            self.left.tasks_dropped = (spans.len() - MAX_VIEW_TASKS) as u64;
            spans.truncate(MAX_VIEW_TASKS);
        }
        for s in spans {
            self.lane(s.start_thread).tasks.push(s);
        }
        for lane in &mut self.lanes {
            lane.tasks.sort_unstable_by_key(|s| (s.start, s.task));
        }
        self.place_waits();
        self.left.detail_ticks = self.detail;
        self.left.gap_ticks = self.gap;
        Ok(())
    }
}

impl Timeline {
    /// Each wait and wake-up on the lane of its task, beside it (those of a task not drawn are
    /// counted).
    fn place_waits(&mut self) {
        let mut at: HashMap<u64, (usize, usize)> = HashMap::new();
        for (l, lane) in self.lanes.iter().enumerate() {
            for (k, s) in lane.tasks.iter().enumerate() {
                at.entry(s.task).or_insert((l, k));
            }
        }
        for a in std::mem::take(&mut self.waits) {
            match at.get(&a.task) {
                Some(&(l, k)) => self.lanes[l].awaits.push((k, a)),
                None => self.left.waits_dropped += 1,
            }
        }
        for w in std::mem::take(&mut self.wakes) {
            match at.get(&w.task) {
                Some(&(l, k)) => self.lanes[l].wakes.push((k, w)),
                None => self.left.waits_dropped += 1,
            }
        }
    }

    fn wait(&mut self, a: TaskAwait) {
        if self.waits.len() < MAX_VIEW_TASKS {
            self.waits.push(a);
        } else {
            self.left.waits_dropped += 1;
        }
    }
}

/// Sorts `bars` by depth and start and merges those of one depth closer than `gap`; returns
/// how many are left.
fn tidy_bars(bars: &mut Vec<Bar>, gap: u64) -> usize {
    bars.sort_unstable_by_key(|b| (b.depth, b.start));
    let mut out: Vec<Bar> = Vec::with_capacity(bars.len());
    for b in bars.drain(..) {
        match out.last_mut() {
            Some(o) if o.depth == b.depth && b.start.saturating_sub(o.end) < gap => o.absorb(&b),
            _ => out.push(b),
        }
    }
    *bars = out;
    bars.len()
}

impl Sink for Timeline {
    type Error = CliError;

    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, CliError> {
        let f = e.frame;
        self.ties.exit(e.thread, f.id);
        let (start, end) = (f.start, e.end.max(f.start));
        let slow = self.slow.contains(&(e.thread, f.id, start));
        let near = self.around.is_some_and(|(a, b)| start < b && end > a);
        let mut kept = false;
        if slow || near {
            if self.kept < self.limits.kept {
                self.kept += 1;
                kept = true;
            } else {
                self.left.kept_past_limit += 1;
            }
        }
        let depth = e.depth.min(u32::MAX as usize) as u32;
        if kept || end - start >= self.detail {
            let s = Slice {
                id: f.id,
                depth,
                start,
                end,
                self_ticks: f.self_ticks(end),
                inferred: f.inferred,
                open: e.how == Close::WindowEnd,
                unwound: e.how == Close::Unwound,
                task: None,
                kept,
            };
            let lane = self.lane(e.thread);
            lane.slices.push(s);
            lane.last = Some(lane.slices.len() - 1);
            self.slices += 1;
            if self.slices > self.limits.slices {
                self.raise_detail();
            }
        } else {
            self.lane(e.thread).last = None;
            self.merge(e.thread, Bar::new(depth, start, end, f.id));
        }
        Ok(GO_ON)
    }

    fn awaited(&mut self, a: &AwaitSeen) -> Result<ControlFlow<()>, CliError> {
        if let Some(a) = self.ties.awaited(a) {
            self.wait(a);
        }
        Ok(GO_ON)
    }

    fn woken(&mut self, w: &WokenSeen) -> Result<ControlFlow<()>, CliError> {
        self.ties.woken(w);
        Ok(GO_ON)
    }

    fn polled(&mut self, p: &PollSeen) -> Result<ControlFlow<()>, CliError> {
        let (waits, wakes) = self.ties.polled(p);
        for a in waits {
            self.wait(a);
        }
        for w in wakes {
            if self.wakes.len() < MAX_VIEW_TASKS {
                self.wakes.push(w);
            } else {
                self.left.waits_dropped += 1;
            }
        }
        let lane = self.lane(p.thread);
        if let Some(s) = lane.last.and_then(|i| lane.slices.get_mut(i)) {
            s.task = Some(p.task);
        }
        Ok(GO_ON)
    }

    fn task(&mut self, t: &TaskSeen) -> Result<ControlFlow<()>, CliError> {
        self.ties.task(t);
        if let Some(span) = self.tasks.event(t.thread, t.tsc, t.window, t.event)? {
            self.spans.push(span);
        }
        Ok(GO_ON)
    }
}

/// One function of the table: `account`'s row and its latency histogram.
#[derive(Clone, Debug)]
pub(crate) struct FunctionRow {
    /// The row, as `fdr account` shows it.
    pub row: AccountRow,
    /// Calls per power of two of their duration: (lowest ns, highest ns, calls), the buckets
    /// in use, shortest first.
    pub histogram: Vec<(u64, u64, u64)>,
}

/// Everything the page shows.
#[derive(Debug)]
pub(crate) struct View {
    /// The log's name.
    pub name: String,
    /// The first pass, with the slowest calls and their trees; tables, threads, time zero.
    pub slowest: Slowest,
    /// The window's end (ticks): where open calls and tasks end.
    pub end: u64,
    /// Per thread index, its lane.
    pub lanes: Vec<Lane>,
    /// The per-function table, by total time, at most [`MAX_VIEW_FUNCTIONS`] rows.
    pub functions: Vec<FunctionRow>,
    /// The flame graph's call paths (`frame;frame;frame`) with their self time (ns).
    pub flame: Vec<(String, u64)>,
    /// What the flame graph folded to fit.
    pub flame_notes: Vec<String>,
    /// What the timeline merged or left out.
    pub left: LeftOut,
}

/// Everything `fdr view` shows of `log` behind `filter`, read with `readers` threads where the
/// analysis allows.
pub(crate) fn view(
    log: &Log,
    filter: &Filter,
    readers: usize,
    limits: ViewLimits,
    progress: &dyn Report,
) -> Result<View, CliError> {
    let (mut acc, d) = Account::of_log(log, readers, filter, progress)?;
    let names = Names::new(&d.info);
    let clock = TickRate::new(d.info.header.cycle_frequency);
    let mut rows = acc.rows(&names, &clock, SortKey::Total, None);
    let functions_dropped = rows.len().saturating_sub(MAX_VIEW_FUNCTIONS);
    rows.truncate(MAX_VIEW_FUNCTIONS);
    let functions = function_rows(rows, &acc, &clock);

    let opts = CallsOptions {
        top: VIEW_SLOWEST,
        depth: VIEW_TREE_DEPTH,
        merge: true,
        readers,
        task: None,
    };
    let s = slowest(log, filter, &opts, progress)?;
    let p = &s.plan;
    let end = filter.tasks_end(log_end(&p.info, &p.threads));
    let mut tl = timeline_for(&s, p, end, limits);
    let mut trie = Trie::default();
    let pass = 2 + u64::from(filter.needs_plan());
    replay(
        log,
        &mut Both(&mut tl, &mut trie),
        Some(p),
        filter,
        progress,
        pass,
    )?;
    tl.finish(end).map_err(|e| e.in_log(log.name()))?;
    migrations(log, filter, p, &mut tl)?;

    let mut flame_notes = Vec::new();
    let flame_limits = FlameLimits {
        frames: MAX_VIEW_FLAME_FRAMES,
        bytes: MAX_VIEW_FLAME_BYTES,
        depth: MAX_SHOWN_FRAMES,
    };
    let flame = graph_lines(&trie, &names, &clock, flame_limits, &mut flame_notes)
        .into_iter()
        .filter_map(|l| {
            let (path, n) = l.rsplit_once(' ')?;
            Some((path.to_string(), n.parse().ok()?))
        })
        .collect();
    let mut left = std::mem::take(&mut tl.left);
    left.functions_dropped = functions_dropped;
    Ok(View {
        name: log.name().to_string(),
        end,
        lanes: tl.lanes,
        functions,
        flame,
        flame_notes,
        left,
        slowest: s,
    })
}

/// The table's rows with their histograms, in nanoseconds.
fn function_rows(rows: Vec<AccountRow>, acc: &Account, clock: &TickRate) -> Vec<FunctionRow> {
    use crate::model::hist::Log2;
    let hists: std::collections::HashMap<u32, [u64; 65]> = acc
        .latencies()
        .map(|(id, h)| (id, h.powers_of_two()))
        .collect();
    rows.into_iter()
        .map(|row| {
            let histogram = hists
                .get(&row.id)
                .map(|h| {
                    h.iter()
                        .enumerate()
                        .filter(|&(_, &c)| c > 0)
                        .map(|(k, &c)| {
                            let lo = clock.ns(Log2::lower_bound(k));
                            let hi = clock.ns(Log2::upper_bound(k));
                            (lo, hi, c)
                        })
                        .collect()
                })
                .unwrap_or_default();
            FunctionRow { row, histogram }
        })
        .collect()
}

/// The timeline's sink for the window of plan `p` (ending at `end`), keeping the slowest calls
/// of `s` and the trigger's neighbourhood in detail.
fn timeline_for(s: &Slowest, p: &Plan, end: u64, limits: ViewLimits) -> Timeline {
    let span = end.saturating_sub(p.origin).max(1);
    let px = (span / limits.width.max(1)).max(1);
    // Around the call that fired: the call itself and a quarter of its length on each side, on
    // every thread (what the others did meanwhile).
    let around = fired(&p.info).map(|r| {
        let margin = r.duration_ticks / 4;
        (
            r.start_tsc.saturating_sub(margin),
            r.start_tsc
                .saturating_add(r.duration_ticks)
                .saturating_add(margin),
        )
    });
    Timeline {
        limits,
        detail: px,
        gap: px,
        span,
        slow: s
            .calls
            .iter()
            .map(|(k, _)| (k.thread, k.id, k.start))
            .collect(),
        around,
        kept: 0,
        lanes: vec![Lane::default(); p.threads.len()],
        slices: 0,
        bars: 0,
        tasks: Tasks::new(MAX_OPEN_TASKS),
        spans: Vec::new(),
        ties: Ties::default(),
        waits: Vec::new(),
        wakes: Vec::new(),
        left: LeftOut::default(),
    }
}

/// The CPU migrations of the threads that have any (a pass of its own: the replay does not
/// hand them out), at most [`MAX_VIEW_MIGRATIONS`].
fn migrations(log: &Log, filter: &Filter, p: &Plan, tl: &mut Timeline) -> Result<(), CliError> {
    if p.threads.iter().all(|t| t.cpu_changes == 0) {
        return Ok(());
    }
    let mut dec = log.decoder()?;
    filter.select_threads(&mut dec);
    let (mut n, mut dropped) = (0usize, 0u64);
    let lanes = &mut tl.lanes;
    dec.for_each(|ev, _| {
        if let EventKind::Cpu { cpu } = ev.kind {
            if n < MAX_VIEW_MIGRATIONS {
                let t = ev.thread as usize;
                if t >= lanes.len() {
                    lanes.resize_with(t + 1, Lane::default);
                }
                lanes[t].migrations.push((ev.tsc, cpu));
                n += 1;
            } else {
                dropped += 1;
            }
        }
        Ok::<(), fdr_format::FormatError>(())
    })
    .map_err(|err| CliError::Input {
        path: log.name().to_string(),
        err,
    })?;
    tl.left.migrations_dropped = dropped;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink(limits: ViewLimits) -> Timeline {
        Timeline {
            limits,
            detail: 10,
            gap: 10,
            span: 10_000,
            slow: HashSet::new(),
            around: None,
            kept: 0,
            lanes: Vec::new(),
            slices: 0,
            bars: 0,
            tasks: Tasks::new(16),
            spans: Vec::new(),
            ties: Ties::default(),
            waits: Vec::new(),
            wakes: Vec::new(),
            left: LeftOut::default(),
        }
    }

    fn exit(tl: &mut Timeline, depth: usize, id: u32, start: u64, end: u64) {
        let f = fdr_format::sink::Frame::new(id, start, 0, false);
        let e = Exit {
            thread: 0,
            depth,
            frame: &f,
            end,
            how: Close::Exit,
            args: &[],
        };
        assert_eq!(tl.exit(&e).unwrap(), GO_ON);
    }

    #[test]
    fn short_calls_merge_into_bars_and_long_ones_stay() {
        let mut tl = sink(ViewLimits::default());
        // Three 2-tick calls 1 tick apart (closer than the 10-tick pixel), then a long one.
        exit(&mut tl, 1, 7, 0, 2);
        exit(&mut tl, 1, 8, 3, 5);
        exit(&mut tl, 1, 8, 6, 9);
        exit(&mut tl, 1, 9, 100, 200);
        tl.finish(10_000).unwrap();
        let lane = &tl.lanes[0];
        assert_eq!(lane.slices.len(), 1);
        assert_eq!(lane.bars.len(), 1);
        let b = lane.bars[0];
        assert_eq!(
            (b.start, b.end, b.count, b.ticks, b.mixed),
            (0, 9, 3, 7, true)
        );
        assert_eq!(b.id, 8, "the longest call's function names the bar");
        assert_eq!(tl.left.merged_calls, 3);
    }

    #[test]
    fn too_many_slices_raise_the_threshold() {
        let limits = ViewLimits {
            slices: 4,
            ..ViewLimits::default()
        };
        let mut tl = sink(limits);
        // Ten calls, lengths 10..100, far apart.
        for i in 0..10u64 {
            exit(&mut tl, 0, 1, i * 1000, i * 1000 + 10 * (i + 1));
        }
        tl.finish(10_000).unwrap();
        let lane = &tl.lanes[0];
        assert!(lane.slices.len() <= 4);
        assert!(tl.left.raised);
        // The longest stay in detail.
        assert!(lane.slices.iter().any(|s| s.end - s.start == 100));
        let merged: u64 = lane.bars.iter().map(|b| b.count).sum();
        assert_eq!(merged as usize + lane.slices.len(), 10);
    }

    #[test]
    fn too_many_bars_merge_wider() {
        let limits = ViewLimits {
            bars: 3,
            ..ViewLimits::default()
        };
        let mut tl = sink(limits);
        // Twenty 1-tick calls 50 ticks apart: twenty bars at a 10-tick gap.
        for i in 0..20u64 {
            exit(&mut tl, 0, 1, i * 50, i * 50 + 1);
        }
        tl.finish(10_000).unwrap();
        let lane = &tl.lanes[0];
        assert!(lane.bars.len() <= 3, "{:?}", lane.bars);
        assert_eq!(lane.bars.iter().map(|b| b.count).sum::<u64>(), 20);
    }
}
