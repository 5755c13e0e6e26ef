//! A window written as a log, the one way both the API and the background writer do it: the
//! final log or a snapshot (one at a time, and only while recording goes on), to a writer or
//! to a file renamed into place when whole.

use std::io::Write;
use std::path::Path;

use fdr_format::ReasonInfo;

use crate::session::{Session, State};
use crate::{output::atomic_file, output::log_file, output::profile_file, Error};

/// The window of `s` as a log on `out`: a snapshot while recording goes on, or the final log;
/// `reason` says why it was written.
pub(crate) fn write<W: Write + ?Sized>(
    s: &Session,
    out: &mut W,
    snapshot: bool,
    reason: ReasonInfo,
) -> Result<(), Error> {
    log_file::write(out, &s.log_parts(snapshot, reason))
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
    match s.exporter() {
        Some(e) => {
            let mut tee = Tee {
                out,
                copy: Vec::new(),
            };
            write(s, &mut tee, true, reason)?;
            e.push(tee.copy);
            Ok(())
        }
        None => write(s, out, true, reason),
    }
}

/// What became of a window [`snapshot_with_profile`] wrote for `why`: the words for stderr.
pub(crate) fn written(s: &Session, path: &Path, why: fdr_format::Reason) -> String {
    match s.exporter() {
        Some(e) if e.only() && why != fdr_format::Reason::Api => {
            format!("queued a window for {}", e.endpoint())
        }
        Some(e) => format!(
            "wrote {} (and queued it for {})",
            path.display(),
            e.endpoint()
        ),
        None => format!("wrote {}", path.display()),
    }
}

/// A writer that keeps a copy of what it writes: the window for the exporter.
struct Tee<'a, W: ?Sized> {
    out: &'a mut W,
    copy: Vec<u8>,
}

impl<W: Write + ?Sized> Write for Tee<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.copy.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// A snapshot of `s` in the file `path`, written under a temporary name and renamed when
/// whole; a final log written to the same path meanwhile wins ([`Error::NotRecording`]).
pub(crate) fn snapshot_file(s: &Session, path: &Path, reason: ReasonInfo) -> Result<(), Error> {
    atomic_file::write(s.outputs().finals(), path, false, |f| {
        snapshot_to(s, f, reason)
    })
}

/// What the exit writers and the background writer write for a panic, the signal or a trigger:
/// the window in `path`, and the profile beside it ([`profile_file::beside`]) when the recording
/// keeps one; in profile mode the profile alone, in `path`. With `otlp_only`, a window the
/// program did not ask for itself (a trigger's, the signal's, a panic's) goes to the exporter
/// instead of `path` (the profile is still written beside it).
pub(crate) fn snapshot_with_profile(
    s: &Session,
    path: &Path,
    reason: ReasonInfo,
) -> Result<(), Error> {
    if s.setup().config.get_mode() == crate::Mode::Profile {
        if s.state() != State::Recording {
            return Err(Error::NotRecording);
        }
        return profile_to_file(s, path, false);
    }
    let why = reason.reason;
    if why != fdr_format::Reason::Api && s.exporter().is_some_and(|e| e.only()) {
        // Sent instead of written: the window goes to the exporter only.
        snapshot_to(s, &mut std::io::sink(), reason)?;
    } else {
        snapshot_file(s, path, reason)?;
    }
    // A trigger's window is about one call; the profile, about the run, goes with the others.
    let trigger = matches!(
        why,
        fdr_format::Reason::SlowCall
            | fdr_format::Reason::StillRunning
            | fdr_format::Reason::LongPoll
            | fdr_format::Reason::LongPollRunning
    );
    if s.profiles().is_some() && !trigger {
        profile_to_file(s, &profile_file::beside(path), false)?;
    }
    Ok(())
}

/// The profile of `s` on `out` ([`Error::NotProfiling`] for a recording that keeps none).
pub(crate) fn profile_to<W: Write + ?Sized>(s: &Session, out: &mut W) -> Result<(), Error> {
    profile_file::write(&s.profile()?, out)
}

/// The profile of `s` in the file `path`, through a temporary file (`is_final`: synced, and it
/// wins over snapshots written to the same path).
pub(crate) fn profile_to_file(s: &Session, path: &Path, is_final: bool) -> Result<(), Error> {
    let profile = s.profile()?;
    profile_file::write_file(s.outputs().finals(), path, is_final, &profile)
}
