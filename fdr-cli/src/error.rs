//! What can go wrong when running a command, worded for the person at the terminal.

use std::fmt;
use std::io;
use std::path::Path;

use fdr_format::FormatError;

/// A failed command. `Display` gives the whole message, starting with `fdr: `.
///
/// ```
/// use fdr_cli::CliError;
/// use fdr_format::FormatError;
/// let e = CliError::Input {
///     path: "app.fdr".into(),
///     err: FormatError::new(32, "expected a BufferExtents record".into()),
/// };
/// assert_eq!(e.to_string(), "fdr: app.fdr: at byte offset 32: expected a BufferExtents record");
/// assert_eq!(e.exit_code(), 1);
/// ```
#[derive(Debug)]
pub enum CliError {
    /// The command line was wrong; the text is clap's explanation.
    Usage(String),
    /// The log could not be decoded.
    Input {
        /// The log's path as given.
        path: String,
        /// Where and what.
        err: FormatError,
    },
    /// The log is valid but holds nothing the command can show.
    Empty {
        /// The log's path as given.
        path: String,
        /// What is missing.
        what: String,
    },
    /// The log is valid but needs more than one of fdr's documented limits allows.
    Limit {
        /// The log's path as shown (empty until the command fills it in).
        path: String,
        /// Which limit, and what to do.
        what: String,
    },
    /// `fdr export` could not send the window to the collector.
    Export {
        /// The collector's URL as given.
        to: String,
        /// What failed, and what was sent before.
        what: String,
    },
    /// `fdr recover`: the crash boxes that could not be turned into logs (the others were),
    /// each as `(box, why)`.
    Unrecovered(Vec<(String, String)>),
    /// A file could not be opened, read or written.
    Io {
        /// The file's path as given.
        path: String,
        /// What was being done.
        action: &'static str,
        /// Why it failed.
        err: io::Error,
    },
}

impl CliError {
    /// The process exit code for this error: 2 for usage errors, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => 2,
            _ => 1,
        }
    }

    /// True when the reader of the output went away (`fdr account x.fdr | head`): not worth
    /// a message.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Io { err, .. } if err.kind() == io::ErrorKind::BrokenPipe)
    }

    /// A limit was hit while reading a log; the command adds the log's path.
    pub fn limit(what: String) -> CliError {
        CliError::Limit {
            path: String::new(),
            what,
        }
    }

    /// Names the log in an error that did not know it yet.
    pub(crate) fn in_log(self, log: &str) -> CliError {
        match self {
            CliError::Limit { path, what } if path.is_empty() => CliError::Limit {
                path: log.to_string(),
                what,
            },
            CliError::Input { path, err } if path.is_empty() => CliError::Input {
                path: log.to_string(),
                err,
            },
            e => e,
        }
    }

    pub(crate) fn io(path: &str, action: &'static str, err: io::Error) -> CliError {
        CliError::Io {
            path: path.to_string(),
            action,
            err,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(msg) => write!(f, "{}", msg.trim_end()),
            CliError::Input { path, err } => write!(f, "fdr: {path}: {err}"),
            CliError::Empty { path, what } | CliError::Limit { path, what } => {
                write!(f, "fdr: {path}: {what}")
            }
            CliError::Io { path, action, err } => write!(f, "fdr: {path}: {action}: {err}"),
            CliError::Export { to, what } => write!(f, "fdr: export to {to}: {what}"),
            CliError::Unrecovered(boxes) => {
                for (i, (path, why)) in boxes.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "fdr: {path}: cannot recover this crash box: {why}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CliError {}

/// A decoding error of a log not named yet (the command names it).
impl From<FormatError> for CliError {
    fn from(err: FormatError) -> CliError {
        CliError::Input {
            path: String::new(),
            err,
        }
    }
}

/// The error of a sink that cannot fail, for the passes that run it beside others: never made.
impl From<std::convert::Infallible> for CliError {
    fn from(never: std::convert::Infallible) -> CliError {
        match never {}
    }
}

/// A path as messages show it: lossily decoded, with characters a terminal acts on escaped.
pub(crate) fn shown_path(p: &Path) -> String {
    crate::escape::shown(&p.to_string_lossy()).into_owned()
}
