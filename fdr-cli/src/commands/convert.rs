//! `fdr convert`: the calls of a log behind the filters, in time order, into a timeline writer
//! ([`crate::render::chrome`] or [`crate::render::fxt`]).

use fdr_format::sink::Sink;

use crate::model::engine::Plan;
use crate::model::engine::Report;
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::model::pass::{plan, replay};
use crate::CliError;

/// The first pass: which frames were open when each window started, which threads have calls
/// to show, and how many calls pass the filters.
pub(crate) fn timeline_plan(
    log: &Log,
    filter: &Filter,
    progress: &dyn Report,
) -> Result<Plan, CliError> {
    plan(log, filter, progress)
}

/// Replays `log` into `sink` behind `filter`, after the plan `p`; returns where tasks not
/// completed end: when the log was taken, or the time range's end before it.
pub(crate) fn timeline<S: Sink<Error = E>, E>(
    log: &Log,
    filter: &Filter,
    p: &Plan,
    sink: &mut S,
    progress: &dyn Report,
) -> Result<u64, CliError>
where
    CliError: From<E>,
{
    let d = replay(log, sink, Some(p), filter, progress, 1)?;
    Ok(filter.tasks_end(d.threads.iter().map(|t| t.last_tsc).max().unwrap_or(0)))
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn timeline() -> Result<(), crate::CliError> {
        use crate::commands::convert::{timeline, timeline_plan};
        use crate::model::engine::Silent;
        use crate::model::{filter::Filter, input::Log};
        use fdr_format::sink::Ignore;
        let (log, filter, progress) = (Log::open("app.fdr".as_ref())?, Filter::none(), Silent);
        let p = timeline_plan(&log, &filter, &progress)?;
        let end = timeline(&log, &filter, &p, &mut Ignore, &progress)?;
        Ok::<(), crate::CliError>(())
    }
}
