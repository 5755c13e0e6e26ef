//! `fdr replay`: the plan, then each thread's window replayed on its own (the decoder seeking
//! over the other threads' blocks) into the printer of [`crate::render::replay`].

use fdr_format::sink::{Ignore, Sink};

use crate::model::engine::{Plan, Report};
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::model::pass::{plan_shared, replay, replay_behind};
use crate::model::task_polls::{PollsOf, TreePolls};
use crate::CliError;

/// The first pass, with `readers` reader threads: which frames were open when each window
/// started, and which threads have calls to show.
pub(crate) fn plan(
    log: &Log,
    filter: &Filter,
    readers: usize,
    progress: &dyn Report,
) -> Result<Plan, CliError> {
    plan_shared(log, filter, progress, &mut vec![Ignore; readers.max(1)])
}

/// The threads to show, earliest window first.
pub(crate) fn order(p: &Plan) -> Vec<usize> {
    let mut order: Vec<usize> = (0..p.threads.len()).filter(|&t| p.shows(t)).collect();
    order.sort_by_key(|&t| (p.threads[t].first_tsc, p.threads[t].tid));
    order
}

/// The polls of the tree of async task `root` (`--task`): one more pass over the whole log,
/// behind `filter`, with the plan `p`, so that each poll is named as the threads' replays will
/// meet it.
pub(crate) fn tree_polls(
    log: &Log,
    filter: &Filter,
    p: &Plan,
    root: u64,
    progress: &dyn Report,
) -> Result<TreePolls, CliError> {
    let mut polls = PollsOf::default();
    replay(log, &mut polls, Some(p), filter, progress, 2)?;
    Ok(polls.tree(root))
}

/// Replays thread index `t`'s window of `log` into `sink`, behind `filter`.
pub(crate) fn thread<S: Sink<Error = E>, E>(
    log: &Log,
    filter: &Filter,
    p: &Plan,
    t: usize,
    sink: &mut S,
    progress: &dyn Report,
) -> Result<(), CliError>
where
    CliError: From<E>,
{
    let mut dec = log.decoder()?;
    let tid = p.threads[t].tid;
    dec.keep_threads(move |x, _| x == tid);
    replay_behind(filter, dec, log.name(), sink, Some(p), progress, 1)?;
    Ok(())
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn thread() -> Result<(), crate::CliError> {
        use crate::commands::replay::{order, plan, thread};
        use crate::model::engine::Silent;
        use crate::model::{filter::Filter, input::Log};
        use fdr_format::sink::Ignore;
        let (log, filter, progress) = (Log::open("app.fdr".as_ref())?, Filter::none(), Silent);
        let p = plan(&log, &filter, 1, &progress)?;
        for t in order(&p) {
            thread(&log, &filter, &p, t, &mut Ignore, &progress)?;
        }
        Ok::<(), crate::CliError>(())
    }
}
