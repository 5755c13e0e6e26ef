//! A window written as a log, the one way both the API and the background writer do it: the
//! final log or a snapshot (one at a time, and only while recording goes on), to a writer or
//! to a file renamed into place when whole.

use std::io::Write;
use std::path::Path;

use fdr_format::ReasonInfo;

use crate::session::{Session, State};
use crate::{atomic_file, log_file, profile_log, Error};

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

/// What the exit writers and the background writer write for a panic, the signal or a trigger:
/// the window in `path`, and the profile beside it ([`profile_log::beside`]) when the recording
/// keeps one; in profile mode the profile alone, in `path`.
pub(crate) fn snapshot_with_profile(
    s: &Session,
    path: &Path,
    reason: ReasonInfo,
) -> Result<(), Error> {
    if s.setup().config.get_mode() == crate::Mode::Profile {
        if s.state() != State::Recording {
            return Err(Error::NotRecording);
        }
        return profile_log::write_file(s, path, false);
    }
    let why = reason.reason;
    snapshot_file(s, path, reason)?;
    if s.profiles().is_some()
        && why != fdr_format::Reason::SlowCall
        && why != fdr_format::Reason::StillRunning
    {
        profile_log::write_file(s, &profile_log::beside(path), false)?;
    }
    Ok(())
}
