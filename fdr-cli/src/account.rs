//! `fdr account`: per-function call counts and latencies.
//!
//! Count, minimum, maximum, total and self time are exact. Percentiles come from a
//! log-linear histogram per function (see [`crate::hist::LogLinear`]): within 0.8 % of a
//! recorded duration, in memory that does not grow with the number of calls. The total of a
//! recursive function counts nested activations again, as `llvm-xray account` does.

use std::io::Write;
use std::path::Path;

use clap::ValueEnum;

use crate::calls::{replay, replay_shared, Close, Decoded, Frame, Sink};
use crate::error::shown_path;
use crate::hist::LogLinear;
use crate::names::{json_string, shown, Names, Slots};
use crate::progress::Progress;
use crate::units::{human, Clock};
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
    open: u64,
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
    }

    fn drain(&mut self) {
        for &d in &self.pending {
            self.hist.record(u64::from(d));
        }
        self.pending.clear();
    }
}

/// The accounting sink.
#[derive(Default)]
pub struct Account {
    slots: Slots,
    tallies: Vec<Tally>,
}

impl Sink for Account {
    #[inline]
    fn exit(
        &mut self,
        _: u32,
        _: usize,
        f: &Frame,
        end: u64,
        how: Close,
        _: &[u64],
    ) -> Result<(), CliError> {
        let s = self.slots.slot(f.id)?;
        if s >= self.tallies.len() {
            self.tallies.push(Tally {
                min: u64::MAX,
                pending: Vec::new(),
                ..Tally::default()
            });
        }
        let t = &mut self.tallies[s];
        let dur = end.saturating_sub(f.start);
        t.count += 1;
        t.total = t.total.saturating_add(dur);
        t.self_ = t.self_.saturating_add(f.self_ticks(end));
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
        t.inferred += u64::from(f.inferred);
        t.open += u64::from(how == Close::WindowEnd);
        Ok(())
    }
}

/// One function's line of the report, in nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Full name, or `#<id>`.
    pub function: String,
    /// Function id.
    pub id: u32,
    /// Completed or closed calls.
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
    /// Calls still open at the end of the window.
    pub open: u64,
}

/// What to sort the report by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SortKey {
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

/// Output format of `fdr account`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// An aligned table with human units.
    Text,
    /// Comma-separated values, integer nanoseconds.
    Csv,
    /// One JSON array of objects, integer nanoseconds.
    Json,
}

impl Account {
    /// Adds the tallies of `other` (another share of the same log's threads); an error if
    /// together they use more than [`crate::names::MAX_FUNCTIONS`] function ids.
    pub fn merge(&mut self, other: Account) -> Result<(), CliError> {
        for (&id, t) in other.slots.ids().iter().zip(other.tallies) {
            let s = self.slots.slot(id)?;
            if s == self.tallies.len() {
                self.tallies.push(t);
            } else {
                self.tallies[s].merge(t);
            }
        }
        Ok(())
    }

    /// Accounts the log at `path`, reading it with `readers` threads in parallel (each decodes
    /// the blocks of its share of the log's threads).
    pub fn of_log(
        path: &Path,
        readers: usize,
        progress: &Progress,
    ) -> Result<(Account, Decoded), CliError> {
        if readers <= 1 {
            let mut acc = Account::default();
            let d = replay(path, &mut acc, None, progress, 0)?;
            return Ok((acc, d));
        }
        let mut parts: Vec<Account> = (0..readers).map(|_| Account::default()).collect();
        let d = replay_shared(path, &mut parts, progress)?;
        let mut acc = Account::default();
        for p in parts {
            acc.merge(p).map_err(|e| e.in_log(&shown_path(path)))?;
        }
        Ok((acc, d))
    }

    /// The report rows, sorted and cut to `top`.
    pub fn rows(
        &mut self,
        names: &Names,
        clock: &Clock,
        sort: SortKey,
        top: Option<usize>,
    ) -> Vec<Row> {
        for t in &mut self.tallies {
            t.drain();
        }
        let mut rows: Vec<Row> = self
            .slots
            .ids()
            .iter()
            .zip(&self.tallies)
            .map(|(&id, t)| {
                let pct = |q: f64| clock.ns(t.hist.quantile(q).clamp(t.min, t.max));
                let info = names.info(id);
                Row {
                    function: names.function(id).into_owned(),
                    id,
                    count: t.count,
                    min_ns: clock.ns(t.min),
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
                SortKey::Max => desc(a.max_ns, b.max_ns),
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

/// Writes the report.
pub fn write(rows: &[Row], format: Format, out: &mut dyn Write) -> std::io::Result<()> {
    match format {
        Format::Text => write_text(rows, out),
        Format::Csv => write_csv(rows, out),
        Format::Json => write_json(rows, out),
    }
}

fn write_text(rows: &[Row], out: &mut dyn Write) -> std::io::Result<()> {
    let cw = rows
        .iter()
        .map(|r| r.count.to_string().len())
        .max()
        .unwrap_or(0)
        .max(5);
    writeln!(
        out,
        "{:>cw$} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  function",
        "count", "min", "p50", "p90", "p99", "max", "total", "self"
    )?;
    let (mut any_inferred, mut any_open) = (false, false);
    for r in rows {
        let mut mark = String::new();
        if r.inferred > 0 {
            mark.push_str(" *");
            any_inferred = true;
        }
        if r.open > 0 {
            mark.push_str(" +");
            any_open = true;
        }
        writeln!(
            out,
            "{:>cw$} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}{}",
            r.count,
            human(r.min_ns),
            human(r.p50_ns),
            human(r.p90_ns),
            human(r.p99_ns),
            human(r.max_ns),
            human(r.total_ns),
            human(r.self_ns),
            shown(&r.function),
            mark
        )?;
    }
    if any_inferred {
        writeln!(
            out,
            "* some calls were entered before the recorded window: their entry is inferred at the window's start"
        )?;
    }
    if any_open {
        writeln!(
            out,
            "+ some calls were still running when the window ended: they are closed at its end"
        )?;
    }
    Ok(())
}

/// A CSV field: escaped for the terminal like every text output (so it holds no line break),
/// then quoted if it has a comma or a quote.
fn csv_field(s: &str) -> String {
    let s = shown(s);
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.into_owned()
    }
}

fn write_csv(rows: &[Row], out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "function,id,count,min_ns,p50_ns,p90_ns,p99_ns,max_ns,total_ns,self_ns,file,line"
    )?;
    for r in rows {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
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
            r.line
        )?;
    }
    Ok(())
}

fn write_json(rows: &[Row], out: &mut dyn Write) -> std::io::Result<()> {
    write!(out, "[")?;
    for (i, r) in rows.iter().enumerate() {
        write!(
            out,
            "{}\n  {{\"function\": {}, \"id\": {}, \"count\": {}, \"min_ns\": {}, \"p50_ns\": {}, \
             \"p90_ns\": {}, \"p99_ns\": {}, \"max_ns\": {}, \"total_ns\": {}, \"self_ns\": {}, \
             \"file\": {}, \"line\": {}}}",
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
            r.line
        )?;
    }
    writeln!(out, "{}]", if rows.is_empty() { "" } else { "\n" })
}
