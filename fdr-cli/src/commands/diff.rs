//! `fdr diff BEFORE AFTER`: per function, count, p50, p99, total and self time in two logs and
//! the change, largest change in total time first; for an async function, its tasks' latency
//! too.
//!
//! Functions are matched by their full name (ids differ between builds; an id missing from a
//! log's table is `#id`). Each log is accounted as `fdr account` does, in one pass.
//! [`crate::render::diff`] prints the comparison.

use std::collections::HashMap;

use crate::commands::account::{Account, AccountRow, SortKey};
use crate::model::engine::{Report, Silent};
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::model::names::Names;
use crate::units::TickRate;
use crate::CliError;

/// One function's figures in one log, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Side {
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
pub(crate) struct TaskSide {
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
    fn of(r: &AccountRow) -> Side {
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
pub(crate) struct Change {
    /// Full name.
    pub function: String,
    /// Its figures in the log before, if it is there.
    pub before: Option<Side>,
    /// Its figures in the log after, if it is there.
    pub after: Option<Side>,
}

impl Change {
    /// Total time after minus total time before, in nanoseconds.
    pub(crate) fn change_total_ns(&self) -> i128 {
        let t = |s: &Option<Side>| s.map_or(0, |s| i128::from(s.total_ns));
        t(&self.after) - t(&self.before)
    }

    /// For an async function (tasks in either log), the tasks' total latency after minus
    /// before, in nanoseconds.
    pub(crate) fn change_task_total_ns(&self) -> Option<i128> {
        let t = |s: &Option<Side>| s.and_then(|s| s.task);
        if t(&self.before).is_none() && t(&self.after).is_none() {
            return None;
        }
        let total = |s: &Option<Side>| t(s).map_or(0, |t| i128::from(t.total_ns));
        Some(total(&self.after) - total(&self.before))
    }
}

fn sides(log: &Log, progress: &dyn Report) -> Result<HashMap<String, Side>, CliError> {
    let (mut acc, d) = Account::of_log(log, 1, &Filter::none(), progress)?;
    let names = Names::new(&d.info);
    let clock = TickRate::new(d.info.header.cycle_frequency);
    let mut out: HashMap<String, Side> = HashMap::new();
    for r in acc.rows(&names, &clock, SortKey::Id, None) {
        let s = Side::of(&r);
        out.entry(r.function).and_modify(|x| x.add(&s)).or_insert(s);
    }
    Ok(out)
}

/// The comparison of two logs' functions, largest change in total time first (then by name);
/// an async function ranks by the larger of its polls' and its tasks' change.
pub(crate) fn compare(before: HashMap<String, Side>, after: HashMap<String, Side>) -> Vec<Change> {
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

/// Accounts `before` and `after` and compares them.
pub(crate) fn changes(
    before: &Log,
    after: &Log,
    progress: &dyn Report,
) -> Result<Vec<Change>, CliError> {
    let b = sides(before, progress)?;
    let a = sides(after, &Silent)?;
    Ok(compare(b, a))
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    use crate::model::engine::Silent;

    #[test]
    fn compare() {
        use crate::commands::diff::{compare, Side};
        use std::collections::HashMap;
        let side = |total_ns| Side {
            count: 1,
            total_ns,
            ..Side::default()
        };
        let before = HashMap::from([("a".to_string(), side(10)), ("b".to_string(), side(10))]);
        let after = HashMap::from([
            ("a".to_string(), side(10)),
            ("b".to_string(), side(50)),
            ("c".to_string(), side(5)),
        ]);
        let c = compare(before, after);
        assert_eq!(
            c.iter().map(|c| c.function.as_str()).collect::<Vec<_>>(),
            ["b", "c", "a"]
        );
        assert_eq!(c[0].change_total_ns(), 40);
        assert!(c[1].before.is_none());
    }

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn changes() -> Result<(), crate::CliError> {
        use crate::{commands::diff::changes, model::input::Log, progress::Progress};
        let (a, b) = (
            Log::open("before.fdr".as_ref())?,
            Log::open("after.fdr".as_ref())?,
        );
        for c in changes(&a, &b, &Silent)? {
            println!("{} {}", c.function, c.change_total_ns());
        }
        Ok::<(), crate::CliError>(())
    }
}
