//! A window as a recording hands it to be written: the buffers copied (already cut by age) and
//! what the log says around them. The session builds it; outputs take it and know nothing of
//! sessions, so a log's layout is read here and in `log_file` alone.

use fdr_format::{Extension, FileHeader, LeadStart};

use crate::buffers::copy::Copied;

/// One window, in the parts a log is written from.
pub(crate) struct LogParts {
    /// The file header: the counter's frequency the log's times are read with, the buffer size.
    pub header: FileHeader,
    /// Who and when the leading block says the recording started (its thread: the first
    /// copied block's).
    pub start: LeadStart,
    /// The leading block's records: the run record, the reason, the options, the function
    /// table and the threads, in that order.
    pub records: Vec<Extension>,
    /// The buffers, each thread's in time order.
    pub copied: Copied,
}
