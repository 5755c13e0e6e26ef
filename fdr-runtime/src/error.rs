//! The errors of the recorder's API.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// What went wrong, with what to do about it.
///
/// ```
/// let e = fdr_runtime::Config::from_options("buffer_size=big").unwrap_err();
/// assert!(e.to_string().contains("buffer_size"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A configuration key or value is not valid.
    Config {
        /// The key at fault.
        key: String,
        /// What was wrong and what to write instead.
        message: String,
    },
    /// `start` was called while a recorder is already running.
    AlreadyRunning,
    /// The recorder this handle refers to has finished (or none was started).
    NotRecording,
    /// Another snapshot is being taken right now.
    SnapshotInProgress,
    /// The buffer pool could not be allocated.
    OutOfMemory {
        /// Bytes asked for.
        bytes: usize,
    },
    /// This handle refers to the recording of the parent process: after `fork` a child records
    /// into a recorder of its own, and never writes its parent's.
    ParentsRecording,
    /// A profile was asked of a recording that keeps none.
    NotProfiling,
    /// This platform does not record yet (fdr records on Linux and macOS): the program runs,
    /// its instrumented functions cost what they cost with no recorder running, and nothing is
    /// recorded.
    Unsupported {
        /// The operating system, as Rust names it (`std::env::consts::OS`: "windows", ...).
        platform: &'static str,
    },
    /// Writing the log failed.
    Io {
        /// The file, when writing to one.
        path: Option<PathBuf>,
        /// The underlying error.
        source: io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config { key, message } => write!(f, "fdr: bad option `{key}`: {message}"),
            Error::AlreadyRunning => write!(
                f,
                "fdr: a recorder is already running in this process; use fdr::recorder() to reach \
                 it, or finish it before starting another"
            ),
            Error::NotRecording => write!(
                f,
                "fdr: this recorder has finished (or was never started); start a new one with \
                 fdr::start"
            ),
            Error::SnapshotInProgress => write!(
                f,
                "fdr: another snapshot is being written right now; only one runs at a time, so \
                 try again when it is done"
            ),
            Error::NotProfiling => write!(
                f,
                "fdr: this recording keeps no profile; start it with Config::profile(true) or \
                 Mode::Profile (FDR_OPTIONS profile=on or mode=profile)"
            ),
            Error::ParentsRecording => write!(
                f,
                "fdr: this recorder belongs to the parent process; after fork() a child records \
                 into its own recorder (start one with fdr::start, or let FDR_OPTIONS do it)"
            ),
            Error::OutOfMemory { bytes } => write!(
                f,
                "fdr: could not allocate {bytes} bytes of buffers; lower buffer_size or \
                 buffer_count"
            ),
            Error::Unsupported { platform } => write!(
                f,
                "fdr: recording is not supported on {platform} yet (fdr records on Linux and \
                 macOS); the program runs as without a recorder, and its instrumented functions \
                 record nothing"
            ),
            Error::Io {
                path: Some(p),
                source,
            } => {
                let what = if p.extension().is_some_and(|e| e == "fdrprof") {
                    "profile"
                } else {
                    "log"
                };
                write!(
                    f,
                    "fdr: could not write the {what} to {}: {source}",
                    p.display()
                )
            }
            Error::Io { path: None, source } => write!(f, "fdr: could not write the log: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_names_what_it_was_writing() {
        let io = || std::io::Error::other("disk full");
        let log = Error::Io {
            path: Some("app.fdr".into()),
            source: io(),
        };
        assert_eq!(
            log.to_string(),
            "fdr: could not write the log to app.fdr: disk full"
        );
        let profile = Error::Io {
            path: Some("app.fdrprof".into()),
            source: io(),
        };
        assert_eq!(
            profile.to_string(),
            "fdr: could not write the profile to app.fdrprof: disk full"
        );
    }
}
