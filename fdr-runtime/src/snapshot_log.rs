//! A window written as a log, the one way both the API and the background writer do it: the
//! final log or a snapshot (one at a time, and only while recording goes on), to a writer or
//! to a file renamed into place when whole.

use std::io::Write;
use std::path::Path;

use fdr_format::ReasonInfo;

use crate::session::{Session, State};
use crate::{atomic_file, log_file, Error};

/// The window of `s` as a log on `out`: a snapshot while recording goes on, or the final log;
/// `reason` says why it was written.
pub(crate) fn write<W: Write + ?Sized>(
    s: &Session,
    out: &mut W,
    snapshot: bool,
    reason: ReasonInfo,
) -> Result<(), Error> {
    log_file::write_session(out, s, snapshot, reason)
        .map_err(|source| Error::Io { path: None, source })
}

/// A snapshot of `s` on `out`: an error when the recording has stopped, or while another
/// snapshot is being taken.
pub(crate) fn snapshot_to<W: Write + ?Sized>(
    s: &Session,
    out: &mut W,
    reason: ReasonInfo,
) -> Result<(), Error> {
    if s.state() != State::Recording {
        return Err(Error::NotRecording);
    }
    let _turn = s.snapshot_turn()?;
    write(s, out, true, reason)
}

/// A snapshot of `s` in the file `path`, written under a temporary name and renamed when
/// whole; a final log written to the same path meanwhile wins ([`Error::NotRecording`]).
pub(crate) fn snapshot_file(s: &Session, path: &Path, reason: ReasonInfo) -> Result<(), Error> {
    atomic_file::write(s, path, false, |f| snapshot_to(s, f, reason))
}
