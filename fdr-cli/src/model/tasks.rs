//! Async tasks rebuilt from task events ([`fdr_format::tasks`]: each call of an instrumented
//! `async fn` is a task, its two ends matched by id), and the command's word for a log that
//! holds too many tasks waiting for their other end.

pub use fdr_format::tasks::{TaskSpan, Tasks, TooManyWaiting, MAX_OPEN_TASKS};

use crate::CliError;

impl From<TooManyWaiting> for CliError {
    fn from(e: TooManyWaiting) -> CliError {
        CliError::limit(format!(
            "{e} at one point of the log, fdr's limit (is the log corrupt?)"
        ))
    }
}

/// True for the error of a reader past [`MAX_OPEN_TASKS`].
///
/// ```
/// use fdr_cli::model::tasks::{is_task_limit, TooManyWaiting, MAX_OPEN_TASKS};
/// assert!(is_task_limit(&TooManyWaiting(MAX_OPEN_TASKS).into()));
/// assert!(!is_task_limit(&fdr_cli::CliError::limit("other".into())));
/// ```
pub fn is_task_limit(e: &CliError) -> bool {
    let prefix = TooManyWaiting(MAX_OPEN_TASKS).to_string();
    matches!(e, CliError::Limit { what, .. } if what.starts_with(&prefix))
}
