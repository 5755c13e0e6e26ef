//! `fdr account --by await`: per await site, how often and how long tasks waited there.
//!
//! Each await event names its site (a function-table entry of kind `Await`) and the async fn
//! that waited; the wait's length is in the event, so no task needs to be known. A site's waits
//! are tallied as [`crate::commands::account`] tallies tasks (the same histograms: percentiles
//! within 0.8 %), a wait ended by dropping its task counted as dropped. Memory: one tally per
//! site seen, at most [`crate::limits::MAX_LOG_FUNCTIONS`] (a site id is a function id; past
//! it the command stops, as `account` does). [`crate::render::await_sites`] prints the table.

use std::ops::ControlFlow;

use fdr_format::events::{LogInfo, ThreadStats};
use fdr_format::sink::{AwaitSeen, Sink, GO_ON};

use crate::commands::account::{SortKey, TaskRow, TaskTally};
use crate::model::engine::Report;
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::model::names::{Names, Slots};
use crate::model::pass::{plan, replay, replay_shared};
use crate::units::TickRate;
use crate::CliError;

/// The waits of each await site.
#[derive(Default)]
struct Sites {
    slots: Slots,
    /// By slot: the async fn that waited there (first seen), and the waits.
    tallies: Vec<(u32, TaskTally)>,
}

impl Sites {
    fn tally(&mut self, site: u32, function: u32) -> Result<&mut TaskTally, CliError> {
        let s = self.slots.slot(site)?;
        if s == self.tallies.len() {
            self.tallies.push((function, TaskTally::default()));
        }
        Ok(&mut self.tallies[s].1)
    }

    fn merge(&mut self, other: Sites) -> Result<(), CliError> {
        for (&site, (function, t)) in other.slots.ids().iter().zip(&other.tallies) {
            self.tally(site, *function)?.merge(t);
        }
        Ok(())
    }
}

impl Sink for Sites {
    type Error = CliError;

    fn awaited(&mut self, a: &AwaitSeen) -> Result<ControlFlow<()>, CliError> {
        let e = a.event;
        self.tally(e.site, e.function)?.record(e.waited, e.dropped);
        Ok(GO_ON)
    }
}

/// One await site's line of the report, in nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AwaitRow {
    /// Where it is, `FILE:LINE:COLUMN` (`#ID` for a site not in the function table).
    pub at: String,
    /// The async fn that waited there.
    pub function: String,
    /// The site's id in the function table.
    pub id: u32,
    /// Its waits: `tasks` is the number of waits, `cancelled` those ended by dropping their
    /// task, the rest how long they lasted.
    pub waits: TaskRow,
}

/// What `fdr account --by await` shows: a row per await site, and the log's tables and
/// threads (for the trigger's line and the window's note).
#[derive(Debug)]
pub(crate) struct SiteTable {
    /// One row per await site, sorted.
    pub rows: Vec<AwaitRow>,
    /// Header and tables.
    pub info: LogInfo,
    /// Threads, with complete windows.
    pub threads: Vec<ThreadStats>,
}

/// The await sites of `log` behind `filter`, read with `readers` reader threads, sorted by
/// `sort` (`count` sorts by waits, `self` by total: a wait has no self time; `name` by site)
/// and cut to the first `top`.
pub(crate) fn table(
    log: &Log,
    filter: &Filter,
    readers: usize,
    sort: SortKey,
    top: Option<usize>,
    progress: &dyn Report,
) -> Result<SiteTable, CliError> {
    let mut sites = Sites::default();
    let d = if filter.needs_plan() {
        let p = plan(log, filter, progress)?;
        replay(log, &mut sites, Some(&p), filter, progress, 1)?
    } else {
        let mut parts: Vec<Sites> = (0..readers.max(1)).map(|_| Sites::default()).collect();
        let d = replay_shared(log, &mut parts, None, filter, progress, 0)?;
        for p in parts {
            sites.merge(p)?;
        }
        d
    };
    let names = Names::new(&d.info);
    let clock = TickRate::new(d.info.header.cycle_frequency);
    let mut rows: Vec<AwaitRow> = sites
        .slots
        .ids()
        .iter()
        .zip(&sites.tallies)
        .map(|(&id, (function, t))| AwaitRow {
            at: names.site(id),
            function: names.function(*function).into_owned(),
            id,
            waits: t.row(&clock),
        })
        .collect();
    rows.sort_by(|a, b| {
        let (x, y) = (&a.waits, &b.waits);
        match sort {
            SortKey::Count => y.tasks.cmp(&x.tasks),
            SortKey::Min => y.min_ns.cmp(&x.min_ns),
            SortKey::P50 => y.p50_ns.cmp(&x.p50_ns),
            SortKey::P90 => y.p90_ns.cmp(&x.p90_ns),
            SortKey::P99 => y.p99_ns.cmp(&x.p99_ns),
            SortKey::Max => y.max_ns.cmp(&x.max_ns),
            SortKey::Total | SortKey::SelfTime => y.total_ns.cmp(&x.total_ns),
            SortKey::Name => a.at.cmp(&b.at),
            SortKey::Id => a.id.cmp(&b.id),
        }
        .then(a.id.cmp(&b.id))
    });
    if let Some(n) = top {
        rows.truncate(n);
    }
    Ok(SiteTable {
        rows,
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
        use crate::commands::account::SortKey;
        use crate::commands::await_sites::table;
        use crate::model::engine::Silent;
        use crate::model::{filter::Filter, input::Log};
        let log = Log::open("app.fdr".as_ref())?;
        let t = table(&log, &Filter::none(), 1, SortKey::Total, Some(10), &Silent)?;
        println!("{} await sites", t.rows.len());
        Ok::<(), crate::CliError>(())
    }
}
