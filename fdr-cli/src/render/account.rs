//! The `fdr account` table: aligned text, CSV or JSON.

use std::io::Write;

use clap::ValueEnum;
use fdr_format::first_pass::origin;

use crate::commands::account::{AccountRow, Table, TaskRow};
use crate::escape::{csv_field, json_string, shown};
use crate::model::names::Names;
use crate::model::thin_window;
use crate::render::{budget, culls, reason};
use crate::units::{human, open_human, TickRate};

/// Output format of `fdr account`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum AccountFormat {
    /// An aligned table with human units.
    Text,
    /// Comma-separated values, integer nanoseconds.
    Csv,
    /// One JSON array of objects, integer nanoseconds.
    Json,
}

/// Writes `t` in `format`: in text, the triggering call's line first, then the table, the
/// functions the cost budget untimed, the culled functions and the window's note.
pub(crate) fn report(t: &Table, format: AccountFormat, out: &mut dyn Write) -> std::io::Result<()> {
    if format != AccountFormat::Text {
        return write(&t.rows, format, out);
    }
    let names = Names::new(&t.info);
    let clock = TickRate::new(t.info.header.cycle_frequency);
    let origin = origin(&t.threads);
    if let Some(h) = reason::header(&t.info, &names, &clock, origin) {
        writeln!(out, "{h}")?;
    }
    write(&t.rows, format, out)?;
    let called = |id: u32| !t.untimed_uncalled.contains(&id);
    for l in budget::account_lines(&t.untimed, called, &names, &clock, origin) {
        writeln!(out, "{l}")?;
    }
    if !t.culls.is_empty() {
        let tids: Vec<i32> = t.threads.iter().map(|t| t.tid).collect();
        writeln!(out, "culled functions:")?;
        for l in culls::lines(&t.culls, &names, &clock, &tids, origin) {
            writeln!(out, "{l}")?;
        }
    }
    if let Some(n) = thin_window::note(&t.info, &t.threads) {
        writeln!(out, "{n}")?;
    }
    Ok(())
}

/// Writes the report.
pub(crate) fn write(
    rows: &[AccountRow],
    format: AccountFormat,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match format {
        AccountFormat::Text => write_text(rows, out),
        AccountFormat::Csv => write_csv(rows, out),
        AccountFormat::Json => write_json(rows, out),
    }
}

fn write_text(rows: &[AccountRow], out: &mut dyn Write) -> std::io::Result<()> {
    let cw = count_width(rows);
    // Calls still running are counted apart, in a column of their own when there are some.
    let with_open = rows.iter().any(|r| r.open > 0);
    writeln!(
        out,
        "{:>cw$}{} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  function",
        "count",
        if with_open { "  open" } else { "" },
        "min",
        "p50",
        "p90",
        "p99",
        "max",
        "total",
        "self"
    )?;
    let mut marks = Marks::default();
    for r in rows {
        write_row(r, cw, with_open, &mut marks, out)?;
        if let Some(t) = &r.task {
            write_tasks_row(t, cw, with_open, &mut marks, out)?;
        }
    }
    write_legend(&marks, with_open, out)
}

/// The width of the count column: the widest count, of calls or of tasks.
fn count_width(rows: &[AccountRow]) -> usize {
    rows.iter()
        .map(|r| {
            let tasks = r.task.as_ref().map_or(0, |t| t.tasks);
            r.count.max(tasks).to_string().len()
        })
        .max()
        .unwrap_or(0)
        .max(5)
}

/// The open column's cell: empty when no call is open anywhere, `-` on a tasks line.
fn open_col(with_open: bool, n: Option<u64>) -> String {
    match (with_open, n) {
        (false, _) => String::new(),
        (true, Some(n)) => format!(" {n:>5}"),
        (true, None) => format!(" {:>5}", "-"),
    }
}

/// The marks the table used, each explained once below it.
#[derive(Default)]
struct Marks {
    inferred: bool,
    tasks: bool,
    tasks_inferred: bool,
    tasks_open: bool,
    culled: bool,
}

/// A function's line of the text table.
fn write_row(
    r: &AccountRow,
    cw: usize,
    with_open: bool,
    marks: &mut Marks,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut mark = String::new();
    if r.inferred > 0 {
        mark.push_str(" *");
        marks.inferred = true;
    }
    if r.culled {
        mark.push_str(" ~");
        marks.culled = true;
    }
    // Explained by the list `report` prints under the table.
    if r.untimed {
        mark.push(' ');
        mark.push_str(budget::UNTIMED_MARK);
    }
    // Without a completed call there is no distribution: only the open calls' lower bound.
    let stat = |ns: u64| {
        if r.count == 0 {
            "-".to_string()
        } else {
            human(ns)
        }
    };
    let max = if r.open > 0 && r.open_max_ns >= r.max_ns {
        open_human(r.open_max_ns)
    } else {
        stat(r.max_ns)
    };
    writeln!(
        out,
        "{:>cw$}{} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}{}",
        r.count,
        open_col(with_open, Some(r.open)),
        stat(r.min_ns),
        stat(r.p50_ns),
        stat(r.p90_ns),
        stat(r.p99_ns),
        max,
        human(r.total_ns),
        human(r.self_ns),
        shown(&r.function),
        mark
    )
}

/// The line under an async function's that counts its tasks.
fn write_tasks_row(
    t: &TaskRow,
    cw: usize,
    with_open: bool,
    marks: &mut Marks,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut mark = String::new();
    if t.inferred > 0 {
        mark.push_str(" *");
        marks.tasks_inferred = true;
    }
    if t.open > 0 {
        mark.push_str(&format!(" ({} open)", t.open));
        marks.tasks_open = true;
    }
    marks.tasks = true;
    writeln!(
        out,
        "{:>cw$}{} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  \u{2514} tasks, {} \
         cancelled{}",
        t.tasks,
        open_col(with_open, None),
        human(t.min_ns),
        human(t.p50_ns),
        human(t.p90_ns),
        human(t.p99_ns),
        human(t.max_ns),
        human(t.total_ns),
        "-",
        t.cancelled,
        mark
    )
}

/// What the marks the table used mean, and the open column if it has one.
fn write_legend(marks: &Marks, with_open: bool, out: &mut dyn Write) -> std::io::Result<()> {
    if marks.tasks {
        writeln!(
            out,
            "\u{2514} tasks: an async function's calls are its polls; the line below it counts its \
             tasks, creation to completion or drop"
        )?;
    }
    if marks.inferred {
        writeln!(
            out,
            "* some calls were entered before the recorded window: their entry is inferred at the window's start"
        )?;
    }
    if with_open {
        writeln!(
            out,
            "open: calls still running when the window was written, counted apart from count and \
             min..p99; ≥ max: an open call has run at least that long; total and self include \
             their time so far"
        )?;
    }
    if marks.tasks_inferred {
        writeln!(
            out,
            "* some tasks were created before the recorded window: their start is the window's start"
        )?;
    }
    if marks.tasks_open {
        writeln!(
            out,
            "(N open): tasks not completed when the log ended, counted to its end"
        )?;
    }
    if marks.culled {
        writeln!(
            out,
            "~ culled for part of the recording: while culled, a call was recorded only when a \
             probe let it through, so these counts are a sample"
        )?;
    }
    Ok(())
}

/// The task keys of an async function's JSON object and CSV row, in order.
pub(crate) const TASK_KEYS: [&str; 8] = [
    "tasks",
    "cancelled",
    "task_min_ns",
    "task_p50_ns",
    "task_p90_ns",
    "task_p99_ns",
    "task_max_ns",
    "task_total_ns",
];

fn task_values(t: &TaskRow) -> [u64; 8] {
    [
        t.tasks,
        t.cancelled,
        t.min_ns,
        t.p50_ns,
        t.p90_ns,
        t.p99_ns,
        t.max_ns,
        t.total_ns,
    ]
}

fn write_csv(rows: &[AccountRow], out: &mut dyn Write) -> std::io::Result<()> {
    // The task columns, when some function has tasks (empty in other functions' rows).
    let with_tasks = rows.iter().any(|r| r.task.is_some());
    writeln!(
        out,
        "function,id,count,min_ns,p50_ns,p90_ns,p99_ns,max_ns,total_ns,self_ns,file,line,open,\
         open_max_ns{}",
        if with_tasks {
            format!(",{}", TASK_KEYS.join(","))
        } else {
            String::new()
        }
    )?;
    for r in rows {
        let tasks = match &r.task {
            Some(t) => {
                let v: Vec<String> = task_values(t).iter().map(u64::to_string).collect();
                format!(",{}", v.join(","))
            }
            None if with_tasks => ",".repeat(TASK_KEYS.len()),
            None => String::new(),
        };
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}{tasks}",
            csv_field(&r.function),
            r.id,
            r.count,
            r.min_ns,
            r.p50_ns,
            r.p90_ns,
            r.p99_ns,
            r.max_ns,
            r.total_ns,
            r.self_ns,
            csv_field(&r.file),
            r.line,
            r.open,
            r.open_max_ns
        )?;
    }
    Ok(())
}

fn write_json(rows: &[AccountRow], out: &mut dyn Write) -> std::io::Result<()> {
    write!(out, "[")?;
    for (i, r) in rows.iter().enumerate() {
        let mut extra = String::new();
        if let Some(t) = &r.task {
            for (k, v) in TASK_KEYS.iter().zip(task_values(t)) {
                extra.push_str(&format!(", \"{k}\": {v}"));
            }
        }
        if r.culled {
            extra.push_str(", \"culled\": true");
        }
        if r.untimed {
            extra.push_str(", \"untimed_by_budget\": true");
        }
        write!(
            out,
            "{}\n  {{\"function\": {}, \"id\": {}, \"count\": {}, \"min_ns\": {}, \"p50_ns\": {}, \
             \"p90_ns\": {}, \"p99_ns\": {}, \"max_ns\": {}, \"total_ns\": {}, \"self_ns\": {}, \
             \"file\": {}, \"line\": {}, \"open\": {}, \"open_max_ns\": {}{extra}}}",
            if i == 0 { "" } else { "," },
            json_string(&r.function),
            r.id,
            r.count,
            r.min_ns,
            r.p50_ns,
            r.p90_ns,
            r.p99_ns,
            r.max_ns,
            r.total_ns,
            r.self_ns,
            json_string(&r.file),
            r.line,
            r.open,
            r.open_max_ns
        )?;
    }
    writeln!(out, "{}]", if rows.is_empty() { "" } else { "\n" })
}
