//! Async tasks rebuilt from task events ([`fdr_format::tasks`]: each call of an instrumented
//! `async fn` is a task, its two ends matched by id), and the command's word for a log that
//! holds too many tasks waiting for their other end.

pub(crate) use fdr_format::tasks::{TaskSpan, Tasks, TooManyWaiting};

use crate::limits::MAX_OPEN_TASKS;

use crate::CliError;

impl From<TooManyWaiting> for CliError {
    fn from(e: TooManyWaiting) -> CliError {
        CliError::limit(format!(
            "{e} at one point of the log, fdr's limit (is the log corrupt?)"
        ))
    }
}

/// True for the error of a reader past [`MAX_OPEN_TASKS`].
pub(crate) fn is_task_limit(e: &CliError) -> bool {
    let prefix = TooManyWaiting(MAX_OPEN_TASKS).to_string();
    matches!(e, CliError::Limit { what, .. } if what.starts_with(&prefix))
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn is_task_limit() {
        use crate::limits::MAX_OPEN_TASKS;
        use crate::model::tasks::{is_task_limit, TooManyWaiting};
        assert!(is_task_limit(&TooManyWaiting(MAX_OPEN_TASKS).into()));
        assert!(!is_task_limit(&crate::CliError::limit("other".into())));
    }
}
