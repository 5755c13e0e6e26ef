//! The `fdr diff` report: an aligned table or JSON.

use std::io::Write;

use clap::ValueEnum;

use crate::commands::diff::{Change, Side, TaskSide};
use crate::escape::{json_string, shown};
use crate::units::human;

/// Output format of `fdr diff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum DiffFormat {
    /// An aligned table with human units.
    Text,
    /// One JSON array of objects, integer nanoseconds.
    Json,
}

/// Writes `changes` in `format`.
pub(crate) fn write(
    changes: &[Change],
    format: DiffFormat,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match format {
        DiffFormat::Text => write_text(changes, out),
        DiffFormat::Json => write_json(changes, out),
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
