//! `fdr convert`: the calls of a log behind the filters, in time order, into a timeline writer
//! ([`crate::render::chrome`] or [`crate::render::fxt`]).

use crate::model::call::Sink;
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::model::pass::{plan, replay};
use crate::model::replay::Plan;
use crate::model::replay::Report;
use crate::CliError;

/// The first pass: which frames were open when each window started, which threads have calls
/// to show, and how many calls pass the filters.
pub fn timeline_plan(log: &Log, filter: &Filter, progress: &dyn Report) -> Result<Plan, CliError> {
    plan(log, filter, progress)
}

/// Replays `log` into `sink` behind `filter`, after the plan `p`; returns when the log was
/// taken, where tasks not completed end.
///
/// ```no_run
/// use fdr_cli::commands::convert::{timeline, timeline_plan};
/// use fdr_cli::model::{call::Nothing, filter::Filter, input::Log};
/// use fdr_cli::model::replay::Silent;
/// let (log, filter, progress) = (Log::open("app.fdr".as_ref())?, Filter::none(), Silent);
/// let p = timeline_plan(&log, &filter, &progress)?;
/// let end = timeline(&log, &filter, &p, &mut Nothing, &progress)?;
/// # Ok::<(), fdr_cli::CliError>(())
/// ```
pub fn timeline<S: Sink<Error = CliError>>(
    log: &Log,
    filter: &Filter,
    p: &Plan,
    sink: &mut S,
    progress: &dyn Report,
) -> Result<u64, CliError> {
    let d = replay(log, sink, Some(p), filter, progress, 1)?;
    Ok(d.threads.iter().map(|t| t.last_tsc).max().unwrap_or(0))
}
