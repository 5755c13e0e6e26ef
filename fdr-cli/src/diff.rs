//! `fdr diff BEFORE AFTER`: per function, count, p50, p99, total and self time in two logs and
//! the change, largest change in total time first; for an async function, its tasks' latency
//! too.
//!
//! Functions are matched by their full name (ids differ between builds; an id missing from a
//! log's table is `#id`). Each log is accounted as `fdr account` does, in one pass.

use std::collections::HashMap;
use std::io::Write;

use clap::ValueEnum;

use crate::account::{Account, Row, SortKey};
use crate::filter::Filter;
use crate::input::Log;
use crate::names::{json_string, shown, Names};
use crate::progress::Progress;
use crate::units::{human, Clock};
use crate::CliError;

/// Output format of `fdr diff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// An aligned table with human units.
    Text,
    /// One JSON array of objects, integer nanoseconds.
    Json,
}

/// One function's figures in one log, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Side {
    /// Calls.
    pub count: u64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Sum of durations.
    pub total_ns: u64,
    /// Sum of self times.
    pub self_ns: u64,
    /// For an async function, its tasks' latency (creation to completion or drop): the
    /// figures that matter when its polls are short or were erased.
    pub task: Option<TaskSide>,
}

/// An async function's tasks in one log, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TaskSide {
    /// Tasks (completed, cancelled or still open).
    pub tasks: u64,
    /// Median latency.
    pub p50_ns: u64,
    /// 99th percentile of latency.
    pub p99_ns: u64,
    /// Sum of latencies.
    pub total_ns: u64,
}

impl TaskSide {
    fn add(&mut self, o: &TaskSide) {
        self.tasks += o.tasks;
        self.p50_ns = self.p50_ns.max(o.p50_ns);
        self.p99_ns = self.p99_ns.max(o.p99_ns);
        self.total_ns = self.total_ns.saturating_add(o.total_ns);
    }
}

impl Side {
    fn of(r: &Row) -> Side {
        Side {
            count: r.count,
            p50_ns: r.p50_ns,
            p99_ns: r.p99_ns,
            total_ns: r.total_ns,
            self_ns: r.self_ns,
            task: r.task.as_ref().map(|t| TaskSide {
                tasks: t.tasks,
                p50_ns: t.p50_ns,
                p99_ns: t.p99_ns,
                total_ns: t.total_ns,
            }),
        }
    }

    /// Another function of the same name in the same log (a table with duplicate names):
    /// counts and times add up, percentiles are the larger.
    fn add(&mut self, o: &Side) {
        self.count += o.count;
        self.p50_ns = self.p50_ns.max(o.p50_ns);
        self.p99_ns = self.p99_ns.max(o.p99_ns);
        self.total_ns = self.total_ns.saturating_add(o.total_ns);
        self.self_ns = self.self_ns.saturating_add(o.self_ns);
        self.task = match (self.task, o.task) {
            (Some(mut a), Some(b)) => {
                a.add(&b);
                Some(a)
            }
            (a, b) => a.or(b),
        };
    }
}

/// One function of the comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Full name.
    pub function: String,
    /// Its figures in the log before, if it is there.
    pub before: Option<Side>,
    /// Its figures in the log after, if it is there.
    pub after: Option<Side>,
}

impl Change {
    /// Total time after minus total time before, in nanoseconds.
    pub fn change_total_ns(&self) -> i128 {
        let t = |s: &Option<Side>| s.map_or(0, |s| i128::from(s.total_ns));
        t(&self.after) - t(&self.before)
    }

    /// For an async function (tasks in either log), the tasks' total latency after minus
    /// before, in nanoseconds.
    pub fn change_task_total_ns(&self) -> Option<i128> {
        let t = |s: &Option<Side>| s.and_then(|s| s.task);
        if t(&self.before).is_none() && t(&self.after).is_none() {
            return None;
        }
        let total = |s: &Option<Side>| t(s).map_or(0, |t| i128::from(t.total_ns));
        Some(total(&self.after) - total(&self.before))
    }
}

fn sides(log: &Log, progress: &Progress) -> Result<HashMap<String, Side>, CliError> {
    let (mut acc, d) = Account::of_log(log, 1, &Filter::none(), progress)?;
    let names = Names::new(&d.info);
    let clock = Clock::new(d.info.header.cycle_frequency);
    let mut out: HashMap<String, Side> = HashMap::new();
    for r in acc.rows(&names, &clock, SortKey::Id, None) {
        let s = Side::of(&r);
        out.entry(r.function).and_modify(|x| x.add(&s)).or_insert(s);
    }
    Ok(out)
}

/// The comparison of two logs' functions, largest change in total time first (then by name);
/// an async function ranks by the larger of its polls' and its tasks' change.
///
/// ```
/// use fdr_cli::diff::{compare, Side};
/// use std::collections::HashMap;
/// let side = |total_ns| Side { count: 1, total_ns, ..Side::default() };
/// let before = HashMap::from([("a".to_string(), side(10)), ("b".to_string(), side(10))]);
/// let after = HashMap::from([("a".to_string(), side(10)), ("b".to_string(), side(50)),
///                            ("c".to_string(), side(5))]);
/// let c = compare(before, after);
/// assert_eq!(c.iter().map(|c| c.function.as_str()).collect::<Vec<_>>(), ["b", "c", "a"]);
/// assert_eq!(c[0].change_total_ns(), 40);
/// assert!(c[1].before.is_none());
/// ```
pub fn compare(before: HashMap<String, Side>, after: HashMap<String, Side>) -> Vec<Change> {
    let mut all: HashMap<String, Change> = HashMap::new();
    for (f, s) in before {
        all.insert(
            f.clone(),
            Change {
                function: f,
                before: Some(s),
                after: None,
            },
        );
    }
    for (f, s) in after {
        all.entry(f.clone())
            .or_insert(Change {
                function: f,
                before: None,
                after: None,
            })
            .after = Some(s);
    }
    let mut v: Vec<Change> = all.into_values().collect();
    // An async function whose polls barely moved can still have tasks that doubled: it ranks
    // by the larger of the two changes.
    let key = |c: &Change| {
        c.change_total_ns()
            .abs()
            .max(c.change_task_total_ns().unwrap_or(0).abs())
    };
    v.sort_by(|a, b| {
        key(b)
            .cmp(&key(a))
            .then_with(|| a.function.cmp(&b.function))
    });
    v
}

/// Compares `before` and `after` and writes the report.
///
/// ```no_run
/// use fdr_cli::diff::{run, Format};
/// use fdr_cli::input::Log;
/// use fdr_cli::progress::Progress;
/// let (a, b) = (Log::open("before.fdr".as_ref())?, Log::open("after.fdr".as_ref())?);
/// run(&a, &b, Format::Json, &mut std::io::stdout(), &Progress::hidden())?;
/// # Ok::<(), fdr_cli::CliError>(())
/// ```
pub fn run(
    before: &Log,
    after: &Log,
    format: Format,
    out: &mut dyn Write,
    progress: &Progress,
) -> Result<(), CliError> {
    let b = sides(before, progress)?;
    let a = sides(after, &Progress::hidden())?;
    let changes = compare(b, a);
    let w = |e| CliError::io("<output>", "writing the report", e);
    match format {
        Format::Text => write_text(&changes, out).map_err(w),
        Format::Json => write_json(&changes, out).map_err(w),
    }
}

/// `+1.20 ms`, `-300 ns`, `0 ns`.
fn signed(ns: i128) -> String {
    let abs = u64::try_from(ns.unsigned_abs()).unwrap_or(u64::MAX);
    match ns.signum() {
        1 => format!("+{}", human(abs)),
        -1 => format!("-{}", human(abs)),
        _ => "0 ns".to_string(),
    }
}

fn write_text(changes: &[Change], out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>10}  {:>21}  {:>21}  {:>21}  {:>21}  {:>17}  function",
        "",
        "total before, after",
        "self before, after",
        "p50 before, after",
        "p99 before, after",
        "count before, after"
    )?;
    let (mut only_before, mut only_after, mut tasks) = (false, false, false);
    for c in changes {
        let cell = |f: &dyn Fn(&Side) -> String, s: &Option<Side>| s.as_ref().map_or("-".into(), f);
        let pair = |f: &dyn Fn(&Side) -> String| {
            format!("{:>10} {:>10}", cell(f, &c.before), cell(f, &c.after))
        };
        let mut mark = String::new();
        if c.after.is_none() {
            mark.push_str(" (only before)");
            only_before = true;
        }
        if c.before.is_none() {
            mark.push_str(" (only after)");
            only_after = true;
        }
        writeln!(
            out,
            "{:>10}  {}  {}  {}  {}  {:>8} {:>8}  {}{mark}",
            signed(c.change_total_ns()),
            pair(&|s| human(s.total_ns)),
            pair(&|s| human(s.self_ns)),
            pair(&|s| human(s.p50_ns)),
            pair(&|s| human(s.p99_ns)),
            cell(&|s| s.count.to_string(), &c.before),
            cell(&|s| s.count.to_string(), &c.after),
            shown(&c.function),
        )?;
        if let Some(change) = c.change_task_total_ns() {
            let task = |s: &Option<Side>| s.and_then(|s| s.task);
            let tcell = |f: &dyn Fn(&TaskSide) -> String, s: &Option<Side>| {
                task(s).as_ref().map_or("-".into(), f)
            };
            let tpair = |f: &dyn Fn(&TaskSide) -> String| {
                format!("{:>10} {:>10}", tcell(f, &c.before), tcell(f, &c.after))
            };
            writeln!(
                out,
                "{:>10}  {}  {:>21}  {}  {}  {:>8} {:>8}  └ tasks",
                signed(change),
                tpair(&|t| human(t.total_ns)),
                "",
                tpair(&|t| human(t.p50_ns)),
                tpair(&|t| human(t.p99_ns)),
                tcell(&|t| t.tasks.to_string(), &c.before),
                tcell(&|t| t.tasks.to_string(), &c.after),
            )?;
            tasks = true;
        }
    }
    if changes.is_empty() {
        writeln!(out, "no calls in either log")?;
    }
    writeln!(
        out,
        "first column: the change in total time (after minus before), largest first"
    )?;
    if tasks {
        writeln!(
            out,
            "└ tasks: the async function above, per task (creation to completion or drop) \
             rather than per poll; its count columns count tasks"
        )?;
    }
    if only_before || only_after {
        writeln!(out, "-: the function has no calls in that log")?;
    }
    Ok(())
}

fn write_json(changes: &[Change], out: &mut dyn Write) -> std::io::Result<()> {
    let side = |s: &Option<Side>| match s {
        None => "null".to_string(),
        Some(s) => {
            let task = s.task.map_or(String::new(), |t| {
                format!(
                    ", \"tasks\": {}, \"task_p50_ns\": {}, \"task_p99_ns\": {}, \
                     \"task_total_ns\": {}",
                    t.tasks, t.p50_ns, t.p99_ns, t.total_ns
                )
            });
            format!(
                "{{\"count\": {}, \"p50_ns\": {}, \"p99_ns\": {}, \"total_ns\": {}, \
                 \"self_ns\": {}{task}}}",
                s.count, s.p50_ns, s.p99_ns, s.total_ns, s.self_ns
            )
        }
    };
    write!(out, "[")?;
    for (i, c) in changes.iter().enumerate() {
        write!(
            out,
            "{}\n  {{\"function\": {}, \"before\": {}, \"after\": {}, \"change_total_ns\": {}{}}}",
            if i == 0 { "" } else { "," },
            json_string(&c.function),
            side(&c.before),
            side(&c.after),
            c.change_total_ns(),
            c.change_task_total_ns().map_or(String::new(), |t| format!(
                ", \"change_task_total_ns\": {t}"
            ))
        )?;
    }
    writeln!(out, "{}]", if changes.is_empty() { "" } else { "\n" })
}
