//! The recorder's public face: starting a recording, reaching it from anywhere, snapshots while
//! it runs, and finishing it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::session::{self, Session, RECORDING, WRITTEN};
use crate::snapshot;
use crate::{atomic_file, attach, clock, log_file, Config, Error, Stats};

/// Starts the process's recorder.
///
/// The buffer pool is allocated here, once; recording threads take buffers from it without
/// locks or allocation. Only one recorder runs at a time. If [`Config::out`] is set, the place is
/// checked for writability now rather than when the log is due.
///
/// ```
/// let rec = fdr_runtime::start(fdr_runtime::Config::default().buffer_count(4))?;
/// assert!(fdr_runtime::start(fdr_runtime::Config::default()).is_err());
/// let mut log = Vec::new();
/// rec.snapshot(&mut log)?;
/// rec.finish_to(&mut std::io::sink())?;
/// # Ok::<(), fdr_runtime::Error>(())
/// ```
pub fn start(config: Config) -> Result<Recorder, Error> {
    start_with(config, None)
}

/// Starts a recorder whose exit writers write to `auto_out`.
pub(crate) fn start_with(config: Config, auto_out: Option<PathBuf>) -> Result<Recorder, Error> {
    config.validate()?;
    if session::current().is_some() {
        return Err(Error::AlreadyRunning);
    }
    for out in config.get_out().into_iter().chain(auto_out.as_deref()) {
        atomic_file::probe(out)?;
    }
    let calibration = clock::select(config.get_clock())?;
    attach::prepare_exit_hook();
    let session = Arc::new(Session::new(config, calibration, auto_out)?);
    session::install(Arc::clone(&session))?;
    Ok(Recorder { session })
}

/// The running recorder, reachable from anywhere in the process.
///
/// ```
/// assert!(fdr_runtime::recorder().is_none());
/// let rec = fdr_runtime::start(fdr_runtime::Config::default().buffer_count(2))?;
/// // Far from `start`, for example in an error handler:
/// if let Some(r) = fdr_runtime::recorder() {
///     r.snapshot(&mut std::io::sink())?;
/// }
/// rec.finish_to(&mut std::io::sink())?;
/// assert!(fdr_runtime::recorder().is_none());
/// # Ok::<(), fdr_runtime::Error>(())
/// ```
pub fn recorder() -> Option<Recorder> {
    session::current().map(|session| Recorder { session })
}

/// A handle on a recording. Cheap to clone; every clone refers to the same recording.
#[derive(Clone)]
pub struct Recorder {
    session: Arc<Session>,
}

impl Recorder {
    /// Writes the current window to `out` while recording goes on.
    ///
    /// Every thread keeps recording during the copy; the log never holds a torn record or a
    /// half-rewound buffer. Only one snapshot runs at a time: a second caller gets
    /// [`Error::SnapshotInProgress`].
    ///
    /// ```
    /// let rec = fdr_runtime::start(fdr_runtime::Config::default().buffer_count(2))?;
    /// let mut log = Vec::new();
    /// rec.snapshot(&mut log)?;
    /// assert!(log.len() > 32);
    /// rec.finish_to(&mut std::io::sink())?;
    /// # Ok::<(), fdr_runtime::Error>(())
    /// ```
    pub fn snapshot<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), Error> {
        self.check_process()?;
        if self.session.state.load(Ordering::Acquire) != RECORDING {
            return Err(Error::NotRecording);
        }
        let _turn = SnapshotTurn::take(&self.session)?;
        self.write(out, true)
    }

    /// Writes the current window to a file while recording goes on. The file is written under a
    /// temporary name of its own and renamed when complete, so `Ok` means a whole log is there.
    /// If the recording's final log goes to the same path meanwhile, it wins and this returns
    /// [`Error::NotRecording`].
    pub fn write_snapshot(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        self.check_process()?;
        atomic_file::write(&self.session, path.as_ref(), false, |f| self.snapshot(f))
    }

    /// Stops recording and writes everything kept to a file (through a temporary file, as
    /// [`Recorder::write_snapshot`]). If the write fails the recording stays stopped with its
    /// data, and `finish` can be called again, for example with another path.
    pub fn finish(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        self.check_process()?;
        let _one = self
            .session
            .finishing
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if self.session.state.load(Ordering::Acquire) == WRITTEN {
            return Err(Error::NotRecording);
        }
        self.stop();
        atomic_file::write(&self.session, path.as_ref(), true, |f| self.write(f, false))?;
        self.session.state.store(WRITTEN, Ordering::Release);
        Ok(())
    }

    /// Stops recording and writes everything kept to `out`. As with [`Recorder::finish`], a
    /// failed write keeps the data for another try.
    ///
    /// ```
    /// let rec = fdr_runtime::start(fdr_runtime::Config::default().buffer_count(2))?;
    /// rec.finish_to(&mut std::io::sink())?;
    /// assert!(!rec.is_recording());
    /// assert!(rec.finish_to(&mut std::io::sink()).is_err());
    /// # Ok::<(), fdr_runtime::Error>(())
    /// ```
    pub fn finish_to<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), Error> {
        self.check_process()?;
        let _one = self
            .session
            .finishing
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if self.session.state.load(Ordering::Acquire) == WRITTEN {
            return Err(Error::NotRecording);
        }
        self.stop();
        self.write(out, false)?;
        self.session.state.store(WRITTEN, Ordering::Release);
        Ok(())
    }

    /// True until the recording is stopped by `finish`.
    pub fn is_recording(&self) -> bool {
        self.session.state.load(Ordering::Acquire) == RECORDING && self.session.in_this_process()
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        let s = &self.session;
        Stats {
            threads: s.threads.len(),
            records_dropped: s.threads.dropped_total(),
            buffers_recycled: s.pool.recycled.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    fn stop(&self) {
        self.session.stop();
        session::uninstall(&self.session);
    }

    fn check_process(&self) -> Result<(), Error> {
        if self.session.in_this_process() {
            Ok(())
        } else {
            Err(Error::ParentsRecording)
        }
    }

    fn write<W: Write + ?Sized>(&self, out: &mut W, snapshot: bool) -> Result<(), Error> {
        let copied = snapshot::copy_pool(&self.session.pool);
        let facts = log_file::Facts {
            snapshot,
            end_tsc: clock::now().0,
        };
        log_file::write_log(out, &self.session, &copied, facts)
            .map_err(|source| Error::Io { path: None, source })
    }
}

/// The right to take a snapshot, one holder at a time. `finish` does not need it: copying is
/// read-only, so the final log never waits for a snapshot writer, however slow.
struct SnapshotTurn<'a>(&'a Session);

impl<'a> SnapshotTurn<'a> {
    fn take(session: &'a Session) -> Result<SnapshotTurn<'a>, Error> {
        session
            .snapshot_busy
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| Error::SnapshotInProgress)?;
        Ok(SnapshotTurn(session))
    }
}

impl Drop for SnapshotTurn<'_> {
    fn drop(&mut self) {
        self.0.snapshot_busy.store(false, Ordering::Release);
    }
}
