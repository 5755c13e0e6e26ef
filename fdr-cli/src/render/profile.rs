//! The `fdr profile` report: aligned text or JSON.
//!
//! JSON: without `--threads`, one array: per function an object with the keys `function`,
//! `count`, `total_ns`, `self_ns`, `min_ns`, `p50_ns`, `p90_ns`, `p99_ns`, `max_ns`, `folded`,
//! `open`, `open_ns`; with `--tree`, the roots' objects, each with its callees' under
//! `children`; with `--function`, the matching functions' objects, each with `callers` and
//! `callees` (arrays of `{function, count, total_ns}`, `function` null for calls from no
//! recorded function). With `--threads`, one object per tree instead: `tid`, `thread` (its
//! name), `label` and the array above under `functions` (or `tree`).

use std::io::{self, Write};

use clap::ValueEnum;

use crate::commands::profile::{
    Body, Edge, Focus, PathRow, ProfileReport, ProfileRow, ProfileSummary, Section,
};
use crate::escape::{json_string, shown};
use crate::units::human;

/// Output format of `fdr profile`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProfileFormat {
    /// Aligned tables with human units.
    Text,
    /// JSON, integer nanoseconds.
    Json,
}

/// Writes `r` in `format`.
pub(crate) fn write(
    r: &ProfileReport,
    format: ProfileFormat,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        ProfileFormat::Text => write_text(r, out),
        ProfileFormat::Json => write_json(r, out),
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The report's first line: the program, how long it was profiled, the trees, and how many
/// calls were folded or still running.
pub(crate) fn summary_line(s: &ProfileSummary) -> String {
    let mut line = format!(
        "profile of {} (pid {}), {}: ",
        shown(&s.program),
        s.pid,
        human(s.elapsed_ns)
    );
    if s.per_thread {
        let exited = if s.trees > s.threads {
            " and the threads that exited"
        } else {
            ""
        };
        line.push_str(&format!(
            "{} ({}{exited})",
            plural(s.trees as u64, "call tree", "call trees"),
            plural(s.threads as u64, "thread", "threads")
        ));
    } else {
        line.push_str(&format!(
            "{} merged over every thread",
            plural(s.trees as u64, "call tree", "call trees")
        ));
    }
    if s.folded > 0 {
        line.push_str(&format!(
            "; {} folded into their callers (past the profile_nodes bound or the depth limit)",
            plural(s.folded, "call", "calls")
        ));
    }
    if s.lost > 0 {
        line.push_str(&format!(
            "; {} left out (a thread had no node left for a new function at the root of its \
             stack)",
            plural(s.lost, "call", "calls")
        ));
    }
    if s.open > 0 {
        line.push_str(&format!(
            "; {} still running when it was written",
            plural(s.open, "call", "calls")
        ));
    }
    line
}

/// What the text says after a name: folded and open calls.
fn marks(r: &ProfileRow) -> String {
    let mut m = String::new();
    if r.folded > 0 {
        m.push_str(&format!(" ({} folded)", r.folded));
    }
    if r.open > 0 {
        m.push_str(&format!(
            " ({} open, \u{2265} {})",
            r.open,
            human(r.open_ns)
        ));
    }
    m
}

/// What the footnotes say.
#[derive(Default)]
struct Seen {
    folded: bool,
    open: bool,
}

impl Seen {
    fn row(&mut self, r: &ProfileRow) {
        self.folded |= r.folded > 0;
        self.open |= r.open > 0;
    }
}

fn write_text(r: &ProfileReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", summary_line(&r.summary))?;
    let mut seen = Seen::default();
    for (i, s) in r.sections.iter().enumerate() {
        if r.threads {
            if i > 0 {
                writeln!(out)?;
            }
            writeln!(out, "{}:", shown(&s.label))?;
        }
        section_text(s, &mut seen, out)?;
    }
    if seen.folded {
        writeln!(
            out,
            "(N folded): N calls along deeper paths were counted here when the profile had no \
             node left for them (profile_nodes) or they were too deep; their time is in self"
        )?;
    }
    if seen.open {
        writeln!(
            out,
            "(N open, \u{2265} T): N calls still running when the profile was written, T their \
             time so far; they are not in the other columns"
        )?;
    }
    Ok(())
}

fn section_text(s: &Section, seen: &mut Seen, out: &mut dyn Write) -> io::Result<()> {
    match &s.body {
        Body::Functions(rows) => {
            if rows.is_empty() {
                return writeln!(out, "no functions to show");
            }
            rows_text(rows, seen, out)
        }
        Body::Tree { rows, .. } => {
            if rows.is_empty() {
                return writeln!(out, "no call paths to show");
            }
            tree_text(rows, seen, out)
        }
        Body::Focus(list) => {
            if list.is_empty() {
                return writeln!(out, "no calls of the function");
            }
            for (i, f) in list.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                focus_text(f, seen, out)?;
            }
            Ok(())
        }
    }
}

fn rows_text(rows: &[ProfileRow], seen: &mut Seen, out: &mut dyn Write) -> io::Result<()> {
    let cw = rows
        .iter()
        .map(|r| r.count.to_string().len())
        .max()
        .unwrap_or(0)
        .max(5);
    writeln!(
        out,
        "{:>cw$} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  function",
        "count", "total", "self", "min", "p50", "p90", "p99", "max"
    )?;
    for r in rows {
        seen.row(r);
        // Without a returned call there is no distribution.
        let stat = |ns: u64| {
            if r.count == 0 {
                "-".to_string()
            } else {
                human(ns)
            }
        };
        writeln!(
            out,
            "{:>cw$} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}{}",
            r.count,
            human(r.total_ns),
            human(r.self_ns),
            stat(r.min_ns),
            stat(r.p50_ns),
            stat(r.p90_ns),
            stat(r.p99_ns),
            stat(r.max_ns),
            shown(&r.function),
            marks(r)
        )?;
    }
    Ok(())
}

fn tree_text(rows: &[PathRow], seen: &mut Seen, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{:>8} {:>10} {:>10} {:>6} {:>10}  call path",
        "calls", "total", "self", "share", "p99"
    )?;
    for p in rows {
        let r = &p.row;
        seen.row(r);
        let p99 = if r.count == 0 {
            "-".to_string()
        } else {
            human(r.p99_ns)
        };
        writeln!(
            out,
            "{:>8} {:>10} {:>10} {:>5.1}% {:>10}  {:indent$}{}{}",
            r.count,
            human(r.total_ns),
            human(r.self_ns),
            p.share * 100.0,
            p99,
            "",
            shown(&r.function),
            marks(r),
            indent = p.depth * 2
        )?;
    }
    Ok(())
}

fn edges_text(
    title: &str,
    column: &str,
    edges: &[Edge],
    function: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    if edges.is_empty() {
        return writeln!(out, "{title} {}: none", shown(function));
    }
    writeln!(out, "{title} {}:", shown(function))?;
    writeln!(out, "{:>10} {:>10}  {column}", "calls", "total")?;
    for e in edges {
        let name = match &e.function {
            Some(f) => shown(f).into_owned(),
            None => "(no recorded caller)".to_string(),
        };
        writeln!(out, "{:>10} {:>10}  {name}", e.count, human(e.total_ns))?;
    }
    Ok(())
}

fn focus_text(f: &Focus, seen: &mut Seen, out: &mut dyn Write) -> io::Result<()> {
    edges_text("callers of", "caller", &f.callers, &f.row.function, out)?;
    edges_text("callees of", "callee", &f.callees, &f.row.function, out)?;
    rows_text(std::slice::from_ref(&f.row), seen, out)
}

/// A row's keys, without braces.
fn row_json(r: &ProfileRow) -> String {
    format!(
        "\"function\": {}, \"count\": {}, \"total_ns\": {}, \"self_ns\": {}, \"min_ns\": {}, \
         \"p50_ns\": {}, \"p90_ns\": {}, \"p99_ns\": {}, \"max_ns\": {}, \"folded\": {}, \
         \"open\": {}, \"open_ns\": {}",
        json_string(&r.function),
        r.count,
        r.total_ns,
        r.self_ns,
        r.min_ns,
        r.p50_ns,
        r.p90_ns,
        r.p99_ns,
        r.max_ns,
        r.folded,
        r.open,
        r.open_ns
    )
}

fn edges_json(edges: &[Edge]) -> String {
    let items: Vec<String> = edges
        .iter()
        .map(|e| {
            format!(
                "{{\"function\": {}, \"count\": {}, \"total_ns\": {}}}",
                e.function
                    .as_deref()
                    .map_or_else(|| "null".to_string(), json_string),
                e.count,
                e.total_ns
            )
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// Writes `items` as a JSON array, one per line, indented by `indent` spaces plus two.
fn array(items: &[String], indent: usize, out: &mut dyn Write) -> io::Result<()> {
    if items.is_empty() {
        return write!(out, "[]");
    }
    write!(out, "[")?;
    for (i, item) in items.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        write!(out, "{sep}\n{:w$}{item}", "", w = indent + 2)?;
    }
    write!(out, "\n{:indent$}]", "")
}

/// The tree's rows as nested objects (each path's callees under `children`), the top array
/// indented by `indent` spaces. Nothing recurses: the rows' depths say where objects close.
fn tree_json(rows: &[PathRow], indent: usize, out: &mut dyn Write) -> io::Result<()> {
    // Per open array, from the top one: whether it has an element yet.
    let mut wrote: Vec<bool> = vec![false];
    let close = |had: bool, level: usize, out: &mut dyn Write| {
        if had {
            write!(out, "\n{:w$}]}}", "", w = indent + 2 * level)
        } else {
            write!(out, "]}}")
        }
    };
    write!(out, "[")?;
    for p in rows {
        let d = p.depth.min(wrote.len() - 1);
        while wrote.len() > d + 1 {
            let had = wrote.pop().unwrap_or(false);
            close(had, wrote.len(), out)?;
        }
        let sep = if wrote[d] { "," } else { "" };
        wrote[d] = true;
        write!(
            out,
            "{sep}\n{:w$}{{{}, \"children\": [",
            "",
            row_json(&p.row),
            w = indent + 2 * (d + 1)
        )?;
        wrote.push(false);
    }
    while wrote.len() > 1 {
        let had = wrote.pop().unwrap_or(false);
        close(had, wrote.len(), out)?;
    }
    if wrote[0] {
        write!(out, "\n{:indent$}]", "")
    } else {
        write!(out, "]")
    }
}

/// The section's array, the top array indented by `indent`.
fn body_json(s: &Section, indent: usize, out: &mut dyn Write) -> io::Result<()> {
    match &s.body {
        Body::Functions(rows) => {
            let items: Vec<String> = rows
                .iter()
                .map(|r| format!("{{{}}}", row_json(r)))
                .collect();
            array(&items, indent, out)
        }
        Body::Tree { rows, .. } => tree_json(rows, indent, out),
        Body::Focus(list) => {
            let items: Vec<String> = list
                .iter()
                .map(|f| {
                    format!(
                        "{{{}, \"callers\": {}, \"callees\": {}}}",
                        row_json(&f.row),
                        edges_json(&f.callers),
                        edges_json(&f.callees)
                    )
                })
                .collect();
            array(&items, indent, out)
        }
    }
}

fn write_json(r: &ProfileReport, out: &mut dyn Write) -> io::Result<()> {
    if !r.threads {
        for s in &r.sections {
            body_json(s, 0, out)?;
        }
        return writeln!(out);
    }
    write!(out, "[")?;
    for (i, s) in r.sections.iter().enumerate() {
        let key = match s.body {
            Body::Tree { .. } => "tree",
            _ => "functions",
        };
        write!(
            out,
            "{}\n  {{\"tid\": {}, \"thread\": {}, \"label\": {}, \"{key}\": ",
            if i == 0 { "" } else { "," },
            s.tid.unwrap_or(0),
            json_string(&s.name),
            json_string(&s.label)
        )?;
        body_json(s, 2, out)?;
        write!(out, "}}")?;
    }
    writeln!(out, "{}]", if r.sections.is_empty() { "" } else { "\n" })
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn summary_line() {
        use crate::commands::profile::ProfileSummary;
        let s = ProfileSummary {
            program: "demo".into(),
            pid: 7,
            elapsed_ns: 2_500_000,
            trees: 1,
            ..ProfileSummary::default()
        };
        assert_eq!(
            crate::render::profile::summary_line(&s),
            "profile of demo (pid 7), 2.50 ms: 1 call tree merged over every thread"
        );
    }
}
