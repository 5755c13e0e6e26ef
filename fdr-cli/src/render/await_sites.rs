//! The `fdr account --by await` table: per await site, its waits, in the formats of
//! `fdr account` (aligned text, CSV, JSON).

use std::io::Write;

use fdr_format::first_pass::origin;

use crate::commands::await_sites::{AwaitRow, SiteTable};
use crate::escape::{csv_field, json_string, shown};
use crate::model::names::Names;
use crate::model::thin_window;
use crate::render::account::AccountFormat;
use crate::render::reason;
use crate::units::{human, TickRate};

/// The keys of a site's JSON object and the columns of its CSV row, in order.
pub(crate) const KEYS: [&str; 11] = [
    "at", "function", "id", "waits", "dropped", "min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns",
    "total_ns",
];

/// Writes `t` in `format`: in text, the triggering call's line first, then the table and the
/// window's note.
pub(crate) fn report(
    t: &SiteTable,
    format: AccountFormat,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match format {
        AccountFormat::Csv => return write_csv(&t.rows, out),
        AccountFormat::Json => return write_json(&t.rows, out),
        AccountFormat::Text => {}
    }
    let names = Names::new(&t.info);
    let clock = TickRate::new(t.info.header.cycle_frequency);
    if let Some(h) = reason::header(&t.info, &names, &clock, origin(&t.threads)) {
        writeln!(out, "{h}")?;
    }
    write_text(&t.rows, out)?;
    if let Some(n) = thin_window::note(&t.info, &t.threads) {
        writeln!(out, "{n}")?;
    }
    Ok(())
}

fn numbers(r: &AwaitRow) -> [u64; 8] {
    let w = &r.waits;
    [
        w.tasks,
        w.cancelled,
        w.min_ns,
        w.p50_ns,
        w.p90_ns,
        w.p99_ns,
        w.max_ns,
        w.total_ns,
    ]
}

fn write_text(rows: &[AwaitRow], out: &mut dyn Write) -> std::io::Result<()> {
    if rows.is_empty() {
        return writeln!(
            out,
            "no waits at await sites (an instrumented async fn records an .await that returned \
             Pending)"
        );
    }
    writeln!(
        out,
        "{:>7} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  await site (async fn)",
        "waits", "dropped", "min", "p50", "p90", "p99", "max", "total"
    )?;
    for r in rows {
        let w = &r.waits;
        writeln!(
            out,
            "{:>7} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {} ({})",
            w.tasks,
            w.cancelled,
            human(w.min_ns),
            human(w.p50_ns),
            human(w.p90_ns),
            human(w.p99_ns),
            human(w.max_ns),
            human(w.total_ns),
            shown(&r.at),
            shown(&r.function)
        )?;
    }
    writeln!(
        out,
        "a wait: from the poll that found the awaited future pending to the poll that passed it; \
         dropped: waits ended by dropping their task (a select! lost, a timeout)"
    )
}

fn write_csv(rows: &[AwaitRow], out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{}", KEYS.join(","))?;
    for r in rows {
        let n: Vec<String> = numbers(r).iter().map(u64::to_string).collect();
        writeln!(
            out,
            "{},{},{},{}",
            csv_field(&r.at),
            csv_field(&r.function),
            r.id,
            n.join(",")
        )?;
    }
    Ok(())
}

fn write_json(rows: &[AwaitRow], out: &mut dyn Write) -> std::io::Result<()> {
    write!(out, "[")?;
    for (i, r) in rows.iter().enumerate() {
        let n: Vec<String> = KEYS[3..]
            .iter()
            .zip(numbers(r))
            .map(|(k, v)| format!("\"{k}\": {v}"))
            .collect();
        write!(
            out,
            "{}\n  {{\"at\": {}, \"function\": {}, \"id\": {}, {}}}",
            if i == 0 { "" } else { "," },
            json_string(&r.at),
            json_string(&r.function),
            r.id,
            n.join(", ")
        )?;
    }
    writeln!(out, "{}]", if rows.is_empty() { "" } else { "\n" })
}
