//! `fdr stack`: the call trie of a log behind the filters ([`crate::model::trie`]), printed by
//! [`crate::render::stack`].

use crate::model::engine::Plan;
use crate::model::engine::Report;
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::model::trie::Trie;
use crate::CliError;

/// The call trie of `log` behind `filter`, and the plan its pass made.
pub(crate) fn trie(
    log: &Log,
    filter: &Filter,
    progress: &dyn Report,
) -> Result<(Trie, Plan), CliError> {
    Trie::build(log, filter, progress)
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    use crate::model::engine::Silent;

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn trie() -> Result<(), crate::CliError> {
        use crate::{
            commands::stack::trie,
            model::{filter::Filter, input::Log},
            progress::Progress,
        };
        let (t, plan) = trie(&Log::open("app.fdr".as_ref())?, &Filter::none(), &Silent)?;
        println!(
            "{} call paths deep at most {}",
            t.nodes.len(),
            t.max_depth()
        );
        Ok::<(), crate::CliError>(())
    }
}
