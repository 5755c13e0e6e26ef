//! A pass over a log: the replay engine behind the filter, in one reader or in several (each
//! decoding a share of the threads), and the first pass (the plan) that the commands showing
//! calls in time order need: [`fdr_format::first_pass`] (which frames were open when each
//! window started, time zero) beside the filter and which threads have calls it keeps.

use std::convert::Infallible;
use std::io::Read;
use std::ops::ControlFlow;

use fdr_format::events::{EventDecoder, ThreadStats};
use fdr_format::first_pass::{origin, origin_of, FirstPass};
use fdr_format::sink::{Both, Exit, Ignore, Sink, GO_ON};

use crate::model::engine::{replay_decoder, Decoded, Plan};
use crate::model::engine::{Report, Silent};
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::CliError;

/// Replays `log` through `sink`, behind `filter`. Without a plan, entries missing from the
/// window are inferred when their exit arrives (enough for per-function totals); with one, they
/// are opened at the window's start. `pass` numbers this read for the progress bar.
pub(crate) fn replay<S: Sink<Error = E>, E>(
    log: &Log,
    sink: &mut S,
    plan: Option<&Plan>,
    filter: &Filter,
    progress: &dyn Report,
    pass: u64,
) -> Result<Decoded, CliError>
where
    CliError: From<E>,
{
    let mut dec = log.decoder()?;
    filter.select_threads(&mut dec);
    let d = replay_behind(filter, dec, log.name(), sink, plan, progress, pass)?;
    filter.check_threads(log.name(), &d.threads, &d.info)?;
    Ok(d)
}

/// Replays the log `dec` reads (`path` names it in errors) into `sink` behind `filter`.
pub(crate) fn replay_behind<R: Read, S: Sink<Error = E>, E>(
    filter: &Filter,
    dec: EventDecoder<R>,
    path: &str,
    sink: &mut S,
    plan: Option<&Plan>,
    progress: &dyn Report,
    pass: u64,
) -> Result<Decoded, CliError>
where
    CliError: From<E>,
{
    if filter.wraps() {
        // The filter's errors are the command's already (named: inferred, the error would be
        // taken from this function's bound).
        replay_decoder::<_, _, CliError>(dec, path, &mut filter.wrap(sink), plan, progress, pass)
    } else {
        replay_decoder(dec, path, sink, plan, progress, pass)
    }
}

/// Replays `log` through `sinks.len()` sinks in parallel, one thread each, behind `filter`:
/// sink `k` sees the calls of the log's threads whose index is `k` modulo the number of sinks,
/// every block being decoded by exactly one of them. For analyses whose results add up across
/// threads; with a plan, as [`replay`] with one.
pub(crate) fn replay_shared<S: Sink<Error = E> + Send, E>(
    log: &Log,
    sinks: &mut [S],
    plan: Option<&Plan>,
    filter: &Filter,
    progress: &dyn Report,
    pass: u64,
) -> Result<Decoded, CliError>
where
    CliError: From<E>,
{
    let parts = in_shares(log, sinks, filter, progress, |dec, sink, shown| {
        replay_behind(filter, dec, log.name(), sink, plan, shown, pass)
    })?;
    // Thread `i` was decoded in full by share `i % n`.
    let mut merged = parts[0].clone();
    for (i, t) in merged.threads.iter_mut().enumerate() {
        if let Some(d) = parts.get(i % parts.len()).and_then(|d| d.threads.get(i)) {
            *t = d.clone();
        }
    }
    filter.check_threads(log.name(), &merged.threads, &merged.info)?;
    Ok(merged)
}

/// Runs `each` on `sinks.len()` decoders of `log` in parallel, one thread each, decoder `k`
/// reading the blocks of the log's threads whose index is `k` modulo the number of sinks
/// (see [`EventDecoder::share`]); the results come back in share order. An error is the one
/// earliest in the file, which a single reader would have met.
fn in_shares<S: Send, T: Send>(
    log: &Log,
    sinks: &mut [S],
    filter: &Filter,
    progress: &dyn Report,
    each: impl Fn(EventDecoder<std::fs::File>, &mut S, &dyn Report) -> Result<T, CliError> + Sync,
) -> Result<Vec<T>, CliError> {
    let n = sinks.len() as u32;
    let hidden = Silent;
    let each = &each;
    let results: Vec<Result<T, CliError>> = std::thread::scope(|scope| {
        let workers: Vec<_> = sinks
            .iter_mut()
            .enumerate()
            .map(|(k, sink)| {
                let shown = if k == 0 { progress } else { &hidden };
                scope.spawn(move || {
                    let mut dec = log.decoder()?;
                    dec.share(n, k as u32);
                    filter.select_threads(&mut dec);
                    each(dec, sink, shown)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| match w.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    let mut parts = Vec::with_capacity(results.len());
    let mut first_err: Option<CliError> = None;
    for r in results {
        match r {
            Ok(d) => parts.push(d),
            Err(e) => {
                let earlier = match (&first_err, &e) {
                    (None, _) => true,
                    (Some(CliError::Input { err: a, .. }), CliError::Input { err: b, .. }) => {
                        b.offset < a.offset
                    }
                    (Some(CliError::Input { .. }), _) => false,
                    (Some(_), CliError::Input { .. }) => true,
                    (Some(_), _) => false,
                };
                if earlier {
                    first_err = Some(e);
                }
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(parts),
    }
}

/// [`plan_with`] by `extras.len()` reader threads in parallel, each reading a share of the
/// log's threads and handing its calls to its own extra sink.
pub(crate) fn plan_shared<X: Sink<Error = E> + Send, E>(
    log: &Log,
    filter: &Filter,
    progress: &dyn Report,
    extras: &mut [X],
) -> Result<Plan, CliError>
where
    CliError: From<E>,
    E: From<Infallible>,
{
    if extras.len() == 1 {
        return plan_with(log, filter, progress, &mut extras[0]);
    }
    let parts = in_shares(log, extras, filter, progress, |dec, x, shown| {
        plan_filtered(dec, log.name(), filter, shown, x)
    })?;
    let n = parts.len();
    let mut merged = parts[0].clone();
    merged.calls = parts.iter().map(|p| p.calls).sum();
    let len = merged.threads.len();
    merged.initial = vec![Vec::new(); len];
    merged.shown = vec![false; len];
    for i in 0..len {
        let p = &parts[i % n];
        if let Some(t) = p.threads.get(i) {
            merged.threads[i] = t.clone();
        }
        merged.initial[i] = p.initial.get(i).cloned().unwrap_or_default();
        merged.shown[i] = p.shows(i);
    }
    merged.origin = plan_origin(&merged.threads, &merged.shown, filter);
    filter.check_threads(log.name(), &merged.threads, &merged.info)?;
    Ok(merged)
}

/// Time zero: that of the threads with calls that pass the filters (cut to the time range), as
/// in a log that held only those calls; the log's when no call passes.
fn plan_origin(threads: &[ThreadStats], shown: &[bool], filter: &Filter) -> u64 {
    let from = filter.range_start().unwrap_or(0);
    origin_of(threads, |t, _| shown.get(t).copied().unwrap_or(false))
        .map_or_else(|| origin(threads), |o| o.max(from))
}

/// Which threads have calls that pass the filters, and how many calls pass.
#[derive(Default)]
struct Seen {
    shown: Vec<bool>,
    calls: u64,
}

impl Sink for Seen {
    type Error = Infallible;

    #[inline]
    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, Infallible> {
        let t = e.thread as usize;
        if t >= self.shown.len() {
            self.shown.resize(t + 1, false);
        }
        self.shown[t] = true;
        self.calls += 1;
        Ok(GO_ON)
    }
}

/// A first pass over `log`: which frames were open at each thread's window start, the tables,
/// time zero, and which threads have calls that pass `filter`.
pub(crate) fn plan(log: &Log, filter: &Filter, progress: &dyn Report) -> Result<Plan, CliError> {
    plan_with(log, filter, progress, &mut Ignore)
}

/// [`plan`], handing the calls that pass `filter` to `extra` as well. In this first pass an
/// entry missing from the window is inferred at its exit (see [`replay`] without a plan).
pub(crate) fn plan_with<X: Sink<Error = E>, E>(
    log: &Log,
    filter: &Filter,
    progress: &dyn Report,
    extra: &mut X,
) -> Result<Plan, CliError>
where
    CliError: From<E>,
    E: From<Infallible>,
{
    let mut dec = log.decoder()?;
    filter.select_threads(&mut dec);
    let p = plan_filtered(dec, log.name(), filter, progress, extra)?;
    filter.check_threads(log.name(), &p.threads, &p.info)?;
    Ok(p)
}

/// [`plan`] on a decoder over any input, unfiltered; `path` names it in errors.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn plan_decoder<R: Read>(
    dec: EventDecoder<R>,
    path: &str,
    progress: &dyn Report,
) -> Result<Plan, CliError> {
    plan_filtered(dec, path, &Filter::none(), progress, &mut Ignore)
}

fn plan_filtered<R: Read, X: Sink<Error = E>, E>(
    dec: EventDecoder<R>,
    path: &str,
    filter: &Filter,
    progress: &dyn Report,
    extra: &mut X,
) -> Result<Plan, CliError>
where
    CliError: From<E>,
    E: From<Infallible>,
{
    let mut p = FirstPass::default();
    let mut seen = Seen::default();
    // The analysis first, then what the plan notes (which cannot fail, so its errors are the
    // analysis's).
    let mut both = Both(extra, &mut seen);
    let d = if filter.wraps() {
        let mut w = filter.wrap(&mut both);
        // Named: inferred, the error would be taken from this function's bound.
        replay_decoder::<_, _, CliError>(dec, path, &mut Both(&mut w, &mut p), None, progress, 0)?
    } else {
        replay_decoder(dec, path, &mut Both(&mut both, &mut p), None, progress, 0)?
    };
    let origin = plan_origin(&d.threads, &seen.shown, filter);
    Ok(Plan {
        initial: p.into_stacks(),
        origin,
        info: d.info,
        threads: d.threads,
        shown: seen.shown,
        calls: seen.calls,
    })
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn replay_shared() -> Result<(), crate::CliError> {
        use crate::commands::account::Account;
        use crate::model::engine::Silent;
        use crate::model::filter::Filter;
        use crate::model::input::Log;
        use crate::model::pass::replay_shared;
        let mut parts = vec![Account::default(), Account::default()];
        let log = Log::open("app.fdr".as_ref())?;
        let decoded = replay_shared(&log, &mut parts, None, &Filter::none(), &Silent, 0)?;
        Ok::<(), crate::CliError>(())
    }

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn plan_shared() -> Result<(), crate::CliError> {
        use crate::model::engine::Silent;
        use crate::model::filter::Filter;
        use crate::model::input::Log;
        use crate::model::pass::plan_shared;
        use fdr_format::sink::Ignore;
        let log = Log::open("app.fdr".as_ref())?;
        let plan = plan_shared(&log, &Filter::none(), &Silent, &mut [Ignore, Ignore])?;
        Ok::<(), crate::CliError>(())
    }

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn plan_with() -> Result<(), crate::CliError> {
        use crate::model::engine::Silent;
        use crate::model::filter::Filter;
        use crate::model::input::Log;
        use crate::model::pass::plan_with;
        use fdr_format::sink::Ignore;
        let log = Log::open("app.fdr".as_ref())?;
        let plan = plan_with(&log, &Filter::none(), &Silent, &mut Ignore)?;
        println!("{} calls, time zero at tick {}", plan.calls, plan.origin);
        Ok::<(), crate::CliError>(())
    }
}
