//! `fdr account`: per-function call counts and latencies.
//!
//! Count, minimum, maximum, total and self time are exact. Percentiles come from a
//! log-linear histogram per function (see [`crate::model::hist::LogLinear`]): within 0.8 % of a
//! recorded duration, in memory that does not grow with the number of calls. The total of a
//! recursive function counts nested activations again, as `llvm-xray account` does.
//!
//! An async function's calls are its polls; its tasks (creation to completion or
//! cancellation, see [`crate::model::tasks`]) get figures of their own beside them.
//! [`crate::render::account`] prints the table.

use std::collections::HashSet;
use std::ops::ControlFlow;

use clap::ValueEnum;

use fdr_format::events::{LogInfo, ThreadStats};
use fdr_format::first_pass::origin;
use fdr_format::sink::{Close, CullSeen, Exit, Sink, TaskSeen, GO_ON};
use fdr_format::FunctionKind;

use crate::model::budget::{untimed_during, Stopped, Untimed};
use crate::model::culls::Culls;
use crate::model::engine::Decoded;
use crate::model::engine::Report;
use crate::model::filter::Filter;
use crate::model::hist::LogLinear;
use crate::model::input::Log;
use crate::model::names::{Names, Slots};
use crate::model::pass::{plan, replay, replay_shared};
use crate::model::tasks::{is_task_limit, TaskSpan, Tasks};
use crate::units::TickRate;
use crate::CliError;

/// Per-function tallies, in ticks.
#[derive(Clone, Debug, Default)]
struct Tally {
    count: u64,
    total: u64,
    self_: u64,
    min: u64,
    max: u64,
    hist: LogLinear,
    inferred: u64,
    /// Calls still running when the window ended: counted apart, not in `count`, `min`, `max`
    /// or the histogram (their durations are only lower bounds); their time so far is in
    /// `total` and `self_`.
    open: u64,
    /// The longest time so far of an open call.
    open_max: u64,
    /// Durations not yet in `hist`: counting them in batches keeps one function's histogram
    /// in cache at a time instead of touching a random one on every exit.
    /// Durations that fit 32 bits are batched; longer ones are counted at once.
    pending: Vec<u32>,
}

/// Large enough that a batch reuses the cache lines of one histogram many times, small enough
/// (2 KiB) that a program with thousands of hot functions stays within its memory budget.
const BATCH: usize = 512;

impl Tally {
    fn merge(&mut self, mut other: Tally) {
        self.drain();
        other.drain();
        self.count += other.count;
        self.total = self.total.saturating_add(other.total);
        self.self_ = self.self_.saturating_add(other.self_);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.hist.merge(&other.hist);
        self.inferred += other.inferred;
        self.open += other.open;
        self.open_max = self.open_max.max(other.open_max);
    }

    fn drain(&mut self) {
        for &d in &self.pending {
            self.hist.record(u64::from(d));
        }
        self.pending.clear();
    }
}

/// Per-function task tallies, in ticks (and per await site, its waits: see
/// [`crate::commands::await_sites`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskTally {
    tasks: u64,
    cancelled: u64,
    total: u64,
    min: u64,
    max: u64,
    hist: LogLinear,
    inferred: u64,
    open: u64,
}

impl TaskTally {
    fn count(&mut self, s: &TaskSpan) {
        self.record(s.end.saturating_sub(s.start), s.cancelled);
        self.inferred += u64::from(s.inferred);
        self.open += u64::from(s.open);
    }

    /// One more span of `dur` ticks (a task's latency, a wait at an await site), `cancelled`
    /// if it ended by a drop.
    pub(crate) fn record(&mut self, dur: u64, cancelled: bool) {
        if self.tasks == 0 {
            self.min = u64::MAX;
        }
        self.tasks += 1;
        self.cancelled += u64::from(cancelled);
        self.total = self.total.saturating_add(dur);
        self.min = self.min.min(dur);
        self.max = self.max.max(dur);
        self.hist.record(dur);
    }

    /// Its figures, in nanoseconds.
    pub(crate) fn row(&self, clock: &TickRate) -> TaskRow {
        let min = if self.tasks == 0 { 0 } else { self.min };
        let pct = |q: f64| clock.ns(self.hist.quantile(q).clamp(min, self.max));
        TaskRow {
            tasks: self.tasks,
            cancelled: self.cancelled,
            min_ns: clock.ns(min),
            p50_ns: pct(0.50),
            p90_ns: pct(0.90),
            p99_ns: pct(0.99),
            max_ns: clock.ns(self.max),
            total_ns: clock.ns(self.total),
            inferred: self.inferred,
            open: self.open,
        }
    }

    pub(crate) fn merge(&mut self, other: &TaskTally) {
        if other.tasks == 0 {
            return;
        }
        let min = if self.tasks == 0 { u64::MAX } else { self.min };
        self.tasks += other.tasks;
        self.cancelled += other.cancelled;
        self.total = self.total.saturating_add(other.total);
        self.min = min.min(other.min);
        self.max = self.max.max(other.max);
        self.hist.merge(&other.hist);
        self.inferred += other.inferred;
        self.open += other.open;
    }
}

/// The accounting sink.
#[derive(Default)]
pub(crate) struct Account {
    slots: Slots,
    tallies: Vec<Tally>,
    task_tallies: Vec<TaskTally>,
    tasks: Tasks,
    culls: Culls,
}

impl Account {
    /// The slot of `id`, with its tallies.
    // Inlined into `exit`, which is inlined into the replay (see there).
    #[inline(always)]
    fn slot(&mut self, id: u32) -> Result<usize, CliError> {
        let s = self.slots.slot(id)?;
        if s >= self.tallies.len() {
            self.tallies.push(Tally {
                min: u64::MAX,
                pending: Vec::new(),
                ..Tally::default()
            });
            self.task_tallies.push(TaskTally::default());
        }
        Ok(s)
    }

    fn count_task(&mut self, span: &TaskSpan) -> Result<(), CliError> {
        let s = self.slot(span.function)?;
        self.task_tallies[s].count(span);
        Ok(())
    }

    /// Closes the tasks cut by the window (see [`Tasks::finish`]); `end` is the log's end.
    pub(crate) fn finish_tasks(&mut self, end: u64) -> Result<(), CliError> {
        for span in std::mem::take(&mut self.tasks).finish(end) {
            self.count_task(&span)?;
        }
        Ok(())
    }
}

impl Sink for Account {
    type Error = CliError;

    fn cull(&mut self, c: &CullSeen) -> Result<ControlFlow<()>, CliError> {
        self.culls.event(c.thread, c.tsc, c.kind, c.id);
        Ok(GO_ON)
    }

    fn task(&mut self, t: &TaskSeen) -> Result<ControlFlow<()>, CliError> {
        if let Some(span) = self.tasks.event(t.thread, t.tsc, t.window, t.event)? {
            self.count_task(&span)?;
        }
        Ok(GO_ON)
    }

    // Always inlined into the replay's closing of calls: called out of line, its `Exit` would be
    // built in memory for every call, a few per cent of the whole command.
    #[inline(always)]
    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, CliError> {
        let (f, end, how) = (e.frame, e.end, e.how);
        let s = self.slot(f.id)?;
        let t = &mut self.tallies[s];
        let dur = end.saturating_sub(f.start);
        t.total = t.total.saturating_add(dur);
        t.self_ = t.self_.saturating_add(f.self_ticks(end));
        t.inferred += u64::from(f.inferred);
        if how == Close::WindowEnd {
            t.open += 1;
            t.open_max = t.open_max.max(dur);
            return Ok(GO_ON);
        }
        t.count += 1;
        t.min = t.min.min(dur);
        t.max = t.max.max(dur);
        match u32::try_from(dur) {
            Ok(d) => {
                if t.pending.len() == BATCH {
                    t.drain();
                }
                t.pending.push(d);
            }
            Err(_) => t.hist.record(dur),
        }
        Ok(GO_ON)
    }
}

/// One function's line of the report, in nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AccountRow {
    /// Full name, or `#<id>`.
    pub function: String,
    /// Function id.
    pub id: u32,
    /// Calls that returned (or were unwound) in the window; calls still running are in
    /// [`AccountRow::open`].
    pub count: u64,
    /// Shortest call.
    pub min_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Longest call.
    pub max_ns: u64,
    /// Sum of durations.
    pub total_ns: u64,
    /// Sum of durations minus time in instrumented callees.
    pub self_ns: u64,
    /// Source file (empty if unknown).
    pub file: String,
    /// Source line (0 if unknown).
    pub line: u32,
    /// Calls whose entry was before the window (inferred).
    pub inferred: u64,
    /// Calls still running when the window ended, counted apart from `count`: their time so
    /// far is in `total_ns` and `self_ns`, not in `min_ns`..`max_ns`.
    pub open: u64,
    /// The longest time so far of an open call (0 without open calls): the call ran at least
    /// this long.
    pub open_max_ns: u64,
    /// Task latency, for an async function (or any function with task events).
    pub task: Option<TaskRow>,
    /// The function was culled during the recording: its counts are a sample.
    pub culled: bool,
    /// The cost budget stopped timing the function at some point of the window: its calls
    /// then are not counted (see [`Table::untimed`]).
    pub untimed: bool,
}

/// An async function's tasks: creation to completion or cancellation, in nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct TaskRow {
    /// Tasks (completed, cancelled, or open at the end of the log).
    pub tasks: u64,
    /// Tasks dropped before completing.
    pub cancelled: u64,
    /// Shortest.
    pub min_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Longest.
    pub max_ns: u64,
    /// Sum of latencies.
    pub total_ns: u64,
    /// Tasks created before the window (their start is the window's start).
    pub inferred: u64,
    /// Tasks not completed when the log ends (closed there).
    pub open: u64,
}

/// What to sort the report by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum SortKey {
    /// Number of calls, most first.
    Count,
    /// Shortest call, longest first.
    Min,
    /// Median, longest first.
    P50,
    /// 90th percentile, longest first.
    P90,
    /// 99th percentile, longest first.
    P99,
    /// Longest call, longest first.
    Max,
    /// Total time, most first.
    Total,
    /// Self time, most first.
    #[value(name = "self")]
    SelfTime,
    /// Function name, alphabetical.
    Name,
    /// Function id, ascending.
    Id,
}

impl Account {
    /// Adds the tallies of `other` (another share of the same log's threads); an error if
    /// together they use more than [`crate::limits::MAX_LOG_FUNCTIONS`] function ids.
    pub(crate) fn merge(&mut self, other: Account) -> Result<(), CliError> {
        for ((&id, t), tt) in other
            .slots
            .ids()
            .iter()
            .zip(other.tallies)
            .zip(&other.task_tallies)
        {
            let s = self.slots.slot(id)?;
            if s == self.tallies.len() {
                self.tallies.push(t);
                self.task_tallies.push(tt.clone());
            } else {
                self.tallies[s].merge(t);
                self.task_tallies[s].merge(tt);
            }
        }
        self.culls.merge(other.culls);
        for span in self.tasks.merge(other.tasks)? {
            self.count_task(&span)?;
        }
        Ok(())
    }

    /// Accounts the log at `path`, reading it with `readers` threads in parallel (each decodes
    /// the blocks of its share of the log's threads).
    pub(crate) fn of_log(
        log: &Log,
        readers: usize,
        filter: &Filter,
        progress: &dyn Report,
    ) -> Result<(Account, Decoded), CliError> {
        let name = log.name();
        let (mut acc, d) = if filter.needs_plan() {
            // The calls inside a matching call found at its exit: a first pass finds them.
            let p = plan(log, filter, progress)?;
            let mut acc = Account::default();
            let d = replay(log, &mut acc, Some(&p), filter, progress, 1)?;
            (acc, d)
        } else if readers <= 1 {
            let mut acc = Account::default();
            let d = replay(log, &mut acc, None, filter, progress, 0)?;
            (acc, d)
        } else {
            match Account::shared(log, readers, filter, progress) {
                Ok(r) => r,
                // Shares hold the tasks whose ends other shares read: more than one reader does.
                Err(e) if is_task_limit(&e) => return Account::of_log(log, 1, filter, progress),
                Err(e) => return Err(e.in_log(name)),
            }
        };
        let end = filter.tasks_end(fdr_format::replay::log_end(&d.info, &d.threads));
        acc.finish_tasks(end).map_err(|e| e.in_log(name))?;
        Ok((acc, d))
    }

    fn shared(
        log: &Log,
        readers: usize,
        filter: &Filter,
        progress: &dyn Report,
    ) -> Result<(Account, Decoded), CliError> {
        let mut parts: Vec<Account> = (0..readers).map(|_| Account::default()).collect();
        let d = replay_shared(log, &mut parts, None, filter, progress, 0)?;
        let mut acc = Account::default();
        for p in parts {
            acc.merge(p)?;
        }
        Ok((acc, d))
    }

    /// Each function's latency histogram (ticks) of its calls that returned, by function id:
    /// complete once [`Account::rows`] has counted the batched durations into them.
    pub(crate) fn latencies(&self) -> impl Iterator<Item = (u32, &LogLinear)> {
        self.slots
            .ids()
            .iter()
            .zip(&self.tallies)
            .map(|(&id, t)| (id, &t.hist))
    }

    /// The report rows, sorted and cut to `top`.
    pub(crate) fn rows(
        &mut self,
        names: &Names,
        clock: &TickRate,
        sort: SortKey,
        top: Option<usize>,
    ) -> Vec<AccountRow> {
        for t in &mut self.tallies {
            t.drain();
        }
        let mut rows: Vec<AccountRow> = self
            .slots
            .ids()
            .iter()
            .zip(&self.tallies)
            .zip(&self.task_tallies)
            .map(|((&id, t), tt)| {
                let min = if t.count == 0 { 0 } else { t.min };
                let pct = |q: f64| clock.ns(t.hist.quantile(q).clamp(min, t.max));
                let info = names.info(id);
                let is_async = info.is_some_and(|f| f.kind == FunctionKind::Async);
                let task = (is_async || tt.tasks > 0).then(|| tt.row(clock));
                AccountRow {
                    function: names.function(id).into_owned(),
                    id,
                    count: t.count,
                    min_ns: clock.ns(min),
                    p50_ns: pct(0.50),
                    p90_ns: pct(0.90),
                    p99_ns: pct(0.99),
                    max_ns: clock.ns(t.max),
                    total_ns: clock.ns(t.total),
                    self_ns: clock.ns(t.self_),
                    file: info.map(|f| f.file.clone()).unwrap_or_default(),
                    line: info.map_or(0, |f| f.line),
                    inferred: t.inferred,
                    open: t.open,
                    open_max_ns: clock.ns(t.open_max),
                    task,
                    culled: self.culls.is_culled(id),
                    untimed: false,
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            let desc = |x: u64, y: u64| y.cmp(&x);
            match sort {
                SortKey::Count => desc(a.count, b.count),
                SortKey::Min => desc(a.min_ns, b.min_ns),
                SortKey::P50 => desc(a.p50_ns, b.p50_ns),
                SortKey::P90 => desc(a.p90_ns, b.p90_ns),
                SortKey::P99 => desc(a.p99_ns, b.p99_ns),
                SortKey::Max => desc(a.max_ns.max(a.open_max_ns), b.max_ns.max(b.open_max_ns)),
                SortKey::Total => desc(a.total_ns, b.total_ns),
                SortKey::SelfTime => desc(a.self_ns, b.self_ns),
                SortKey::Name => a.function.cmp(&b.function),
                SortKey::Id => a.id.cmp(&b.id),
            }
            .then(a.id.cmp(&b.id))
        });
        if let Some(n) = top {
            rows.truncate(n);
        }
        rows
    }
}

/// What `fdr account` shows: the table's rows, the culled functions, the functions the cost
/// budget untimed, and the log's tables and threads (for the trigger's line and the window's
/// note).
#[derive(Debug)]
pub(crate) struct Table {
    /// One row per function, sorted.
    pub rows: Vec<AccountRow>,
    /// Functions culled during the recording.
    pub culls: Culls,
    /// Functions the cost budget untimed at some point of the window (and, with `--function`,
    /// chosen by it or called in the calls it kept), with when.
    pub untimed: Vec<Untimed>,
    /// Those of [`Table::untimed`] with no call counted (none in the window, or none kept by
    /// the filters).
    pub untimed_uncalled: Vec<u32>,
    /// Header and tables.
    pub info: LogInfo,
    /// Threads, with complete windows.
    pub threads: Vec<ThreadStats>,
}

/// Accounts `log` behind `filter` with `readers` reader threads, rows sorted by `sort` and cut
/// to the first `top`.
pub(crate) fn table(
    log: &Log,
    filter: &Filter,
    readers: usize,
    sort: SortKey,
    top: Option<usize>,
    progress: &dyn Report,
) -> Result<Table, CliError> {
    let (mut acc, d) = Account::of_log(log, readers, filter, progress)?;
    let names = Names::new(&d.info);
    let clock = TickRate::new(d.info.header.cycle_frequency);
    let mut rows = acc.rows(&names, &clock, sort, top);
    // The window the table counts: from time zero (or `--from`) to the log's end (or `--to`).
    let from = filter.range_start().unwrap_or_else(|| origin(&d.threads));
    let to = filter.tasks_end(fdr_format::replay::log_end(&d.info, &d.threads));
    let mut untimed: Vec<Untimed> = d
        .info
        .budget
        .as_ref()
        .map(|b| untimed_during(b, from, to))
        .unwrap_or_default();
    let mut untimed_uncalled = Vec::new();
    if !untimed.is_empty() {
        let called: HashSet<u32> = acc.slots.ids().iter().copied().collect();
        // With `--function`, the functions it chooses and those called in their calls (an
        // await site is named after its function).
        let entry = |id: u32| Stopped::in_log(&names, id).entry();
        untimed.retain(|u| {
            let id = entry(u.id);
            called.contains(&id) || filter.function_chosen(&names.function(id))
        });
        // Of the functions untimed (not of the waits or wake-ups stopped, whose functions'
        // polls are counted), which the table has no call of, and which rows to mark.
        let calls: Vec<u32> = untimed
            .iter()
            .map(|u| u.id)
            .filter(|&id| matches!(Stopped::in_log(&names, id), Stopped::Calls(_)))
            .collect();
        untimed_uncalled = calls
            .iter()
            .copied()
            .filter(|id| !called.contains(id))
            .collect();
        let ids: HashSet<u32> = calls.into_iter().collect();
        for r in &mut rows {
            r.untimed = ids.contains(&r.id);
        }
    }
    Ok(Table {
        rows,
        culls: std::mem::take(&mut acc.culls),
        untimed,
        untimed_uncalled,
        info: d.info,
        threads: d.threads,
    })
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn table() -> Result<(), crate::CliError> {
        use crate::commands::account::{table, SortKey};
        use crate::model::engine::Silent;
        use crate::model::{filter::Filter, input::Log};
        let log = Log::open("app.fdr".as_ref())?;
        let t = table(&log, &Filter::none(), 1, SortKey::Total, Some(10), &Silent)?;
        println!("{} functions", t.rows.len());
        Ok::<(), crate::CliError>(())
    }
}
