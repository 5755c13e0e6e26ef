//! The recorder's public face: starting a recording, reaching it from anywhere, snapshots while
//! it runs, and finishing it.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use fdr_format::{Reason, ReasonInfo};

use crate::session::learned_culls::Learnt;
use crate::session::{self, Session, State};
use crate::{
    lifecycle::background, lifecycle::snapshot, output::atomic_file, output::file_names,
    output::profile_file, platform, platform::clock, platform::host, record::attach, tables::flags,
    trigger::signal, Config, Error, Stats,
};

/// Starts the process's recorder.
///
/// The buffer pool is allocated here, once; recording threads take buffers from it without
/// locks or allocation. Only one recorder runs at a time. If [`Config::out`] is set, the place is
/// checked for writability now rather than when the log is due.
///
/// The configuration given here is the one used: `FDR_OPTIONS` starts a recorder by itself only
/// in a program that starts none. When `FDR_OPTIONS` is set and `config` is not what it reads
/// as, one line on stderr says that it is ignored; pass [`Config::from_env`] to honour it.
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
    warn_if_env_overridden(&config);
    start_with(config, false)
}

/// `FDR_OPTIONS` only starts a recorder by itself when the program starts none: a program that
/// calls [`start`] records with the configuration it gives. Says so, once, on stderr, when
/// `FDR_OPTIONS` is set and that configuration is not the one `FDR_OPTIONS` reads as (a program
/// that passes `Config::from_env()` on is not warned).
fn warn_if_env_overridden(config: &Config) {
    let Ok(text) = std::env::var("FDR_OPTIONS") else {
        return;
    };
    if Config::parse_options(&text).is_ok_and(|(env, _)| env == *config) {
        return;
    }
    eprintln!(
        "fdr: FDR_OPTIONS is set, but the program starts its own recorder (fdr::start), whose \
         configuration is used; FDR_OPTIONS=\"{text}\" is ignored (pass fdr::Config::from_env() \
         to fdr::start to honour it)"
    );
}

/// Starts a recorder; `autostarted` when `FDR_OPTIONS` asked for it, whose exit writers then
/// write the final log to `out`.
pub(crate) fn start_with(config: Config, autostarted: bool) -> Result<Recorder, Error> {
    config.validate()?;
    if let Some(platform) = platform::UNSUPPORTED {
        return Err(Error::Unsupported { platform });
    }
    if session::current().is_some() {
        return Err(Error::AlreadyRunning);
    }
    let mut template = config
        .get_out()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| file_names::default_template(config.get_mode() == crate::Mode::Profile));
    if autostarted && session::forks() > 0 {
        template = file_names::for_child(&template);
    }
    let final_path = file_names::final_path(&template, std::process::id(), host::wall_time());
    if config.get_out().is_some() || autostarted {
        atomic_file::probe(&final_path)?;
    }
    if let Some(sig) = config.get_signal() {
        signal::check_free(sig)?;
    }
    for warning in crate::trigger::slow_calls::unmatched(&config) {
        eprintln!("{warning}");
    }
    let calibration = clock::select(config.get_clock())?;
    if let Some(note) = clock::note_once(&calibration) {
        eprintln!("fdr: {note}");
    }
    attach::prepare_exit_hook();
    let auto_out = autostarted.then(|| final_path.clone());
    let session = Arc::new(Session::new(
        config,
        calibration,
        auto_out,
        template,
        &final_path,
    )?);
    session::install(Arc::clone(&session), autostarted)?;
    if let Some(b) = session.pool().crash_box() {
        b.arm();
        remove_box_at_exit();
    }
    // Profile mode writes no window, so its triggers would write empty logs: none is armed.
    let windows = session.setup().config.get_mode() != crate::Mode::Profile;
    let profile = session.profile_flags();
    let memory = &session.setup().learned_culls;
    // Nor does it time polls against the long-poll limit, which would fire as triggers do.
    let long_poll = windows && session.triggers().long_poll() != 0;
    // A thread's first call with a trigger opens its switch ring: the kernel's switch hooks
    // are turned on here, once, rather than inside that call.
    if windows && session.triggers().on_functions() {
        crate::platform::switches::hold_hooks();
    }
    flags::open(
        session.setup().epoch,
        |id| {
            // Every async function's polls, when a long-poll limit is set.
            let polls = match crate::tables::functions::function(id) {
                Some(f) if long_poll && f.kind() == crate::FnKindTag::Async => flags::LONG_POLL,
                _ => 0,
            };
            if windows && session.triggers().limit(id) != 0 {
                return (profile | polls | flags::TRIGGER, 0);
            }
            let (flags, run) = match memory.at_start(id) {
                Some(_) if !crate::record::cull::may_cull(id) => (profile, 0),
                Some(Learnt::Culled) => (profile | flags::CULLED, 0),
                Some(Learnt::Erased(run)) => (profile, run),
                None => (profile, 0),
            };
            (flags | polls, run)
        },
        session::epoch,
    );
    if let Some(sig) = session.setup().config.get_signal() {
        signal::install(sig, session.wakeup().write_fd());
    }
    background::start(&session);
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
        self.snapshot_for(out, Reason::Api)
    }

    fn snapshot_for<W: Write + ?Sized>(&self, out: &mut W, reason: Reason) -> Result<(), Error> {
        self.check_process()?;
        snapshot::snapshot_to(&self.session, out, info(reason))
    }

    /// Writes the current window to a file while recording goes on. The file is written under a
    /// temporary name of its own and renamed when complete, so `Ok` means a whole log is there.
    /// If the recording's final log goes to the same path meanwhile, it wins and this returns
    /// [`Error::NotRecording`].
    pub fn write_snapshot(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        self.write_snapshot_for(path.as_ref(), Reason::Api)
    }

    pub(crate) fn write_snapshot_for(&self, path: &Path, reason: Reason) -> Result<(), Error> {
        self.check_process()?;
        snapshot::snapshot_with_profile(&self.session, path, info(reason))
    }

    /// Stops recording and writes everything kept to a file (through a temporary file, as
    /// [`Recorder::write_snapshot`]). A recording that keeps a profile beside its window also
    /// writes the profile, to the same path with the extension `fdrprof`; in
    /// [`Mode::Profile`](crate::Mode::Profile) the profile is what goes to `path`. If the write fails the recording stays stopped with its
    /// data, and `finish` can be called again, for example with another path.
    pub fn finish(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        self.finish_for(path.as_ref(), Reason::Api)
    }

    pub(crate) fn finish_for(&self, path: &Path, reason: Reason) -> Result<(), Error> {
        let s = &self.session;
        self.finishing(|| {
            if self.profile_only() {
                return snapshot::profile_to_file(s, path, true);
            }
            atomic_file::write(s.outputs().finals(), path, true, |f| {
                snapshot::write(s, f, false, info(reason))
            })?;
            if s.profiles().is_some() {
                snapshot::profile_to_file(s, &profile_file::beside(path), true)?;
            }
            Ok(())
        })
    }

    /// Whether the recording keeps a profile and no window ([`Mode::Profile`](crate::Mode)).
    fn profile_only(&self) -> bool {
        self.session.setup().config.get_mode() == crate::Mode::Profile
    }

    /// Writes the profile as it stands to `out`, while every thread goes on recording: per call
    /// path, the calls' count, total and self time, min, max and latency histogram (read by `fdr
    /// profile`). Threads are never stopped: each node is copied as its thread updates it.
    /// [`Error::NotProfiling`] if the recording keeps no profile ([`Config::profile`]).
    ///
    /// ```
    /// let rec = fdr_runtime::start(fdr_runtime::Config::default().mode(fdr_runtime::Mode::Profile))?;
    /// let mut profile = Vec::new();
    /// rec.profile_to(&mut profile)?;
    /// assert!(profile.starts_with(b"FDRPROF"));
    /// rec.finish_to(&mut std::io::sink())?;
    /// # Ok::<(), fdr_runtime::Error>(())
    /// ```
    ///
    /// [`Config::profile`]: crate::Config::profile
    pub fn profile_to<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), Error> {
        self.check_process()?;
        snapshot::profile_to(&self.session, out)
    }

    /// Writes the profile as it stands to a file (through a temporary file renamed into place,
    /// as [`Recorder::write_snapshot`]), while recording goes on.
    pub fn write_profile(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        self.check_process()?;
        snapshot::profile_to_file(&self.session, path.as_ref(), false)
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
        self.finishing(|| {
            if self.profile_only() {
                return snapshot::profile_to(&self.session, out);
            }
            snapshot::write(&self.session, out, false, info(Reason::Api))
        })
    }

    /// One finish at a time: stops recording (once), then `write`s the final log; the recording
    /// counts as written only when that succeeds, so a failed write can be tried again.
    fn finishing(&self, write: impl FnOnce() -> Result<(), Error>) -> Result<(), Error> {
        self.check_process()?;
        let _one = self.session.finishing();
        if self.session.state() == State::Written {
            return Err(Error::NotRecording);
        }
        self.stop();
        write()?;
        self.session.mark_written();
        // The window is in a log now: the crash box has nothing more to keep.
        if let Some(b) = self.session.pool().crash_box() {
            b.remove();
        }
        self.session.recovered();
        Ok(())
    }

    /// True until the recording is stopped by `finish`.
    pub fn is_recording(&self) -> bool {
        self.session.state() == State::Recording && self.session.in_this_process()
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        let s = &self.session;
        let sent = s.exporter().map(|e| e.counts()).unwrap_or_default();
        let budget = s.budget_info();
        Stats {
            threads: s.threads().len(),
            records_dropped: s.threads().dropped_total(),
            buffers_recycled: s.pool().recycled.load(Ordering::Relaxed),
            culling_bytes: crate::record::cull::memory(
                crate::tables::functions::table().len(),
                s.threads().len(),
            ),
            windows_sent: sent.sent,
            windows_dropped: sent.dropped,
            cost_estimate_ppm: budget
                .as_ref()
                .filter(|b| b.looks > 1)
                .map(|b| b.overall_ppm),
            untimed_by_budget: budget.map_or(0, |b| {
                b.untimed
                    .iter()
                    .filter(|span| span.to_tsc.is_none())
                    .count()
            }),
        }
    }

    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    fn stop(&self) {
        self.session.stop(crate::record::cull::learnt_now);
        session::uninstall(&self.session);
        // A trigger snapshot being written now is a log the program asked for too: give the
        // background writer a moment (bounded) to finish it before the process may exit.
        for _ in 0..200 {
            if !self
                .session
                .triggers()
                .mailbox
                .writing
                .load(Ordering::SeqCst)
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if let Some(e) = self.session.exporter() {
            e.close(crate::OTLP_FLUSH);
        }
    }

    fn check_process(&self) -> Result<(), Error> {
        if self.session.in_this_process() {
            Ok(())
        } else {
            Err(Error::ParentsRecording)
        }
    }
}

/// A program that returns from `main` (or calls `exit`) did not crash: its box, if the
/// recording was not finished (a final log removes it), goes. Registered once, at the first
/// box; `FDR_OPTIONS`' exit writer, registered after it, runs before it and writes the log.
fn remove_box_at_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        extern "C" fn at_exit() {
            if let Some(s) = session::current() {
                if s.in_this_process() {
                    if let Some(b) = s.pool().crash_box() {
                        b.remove();
                    }
                    s.recovered();
                }
            }
        }
        // `at_exit` makes no panic, so none can unwind out of it into the C library.
        platform::at_exit(at_exit);
    });
}

/// The reason record of a log written for `reason` (not by a trigger: no call).
fn info(reason: Reason) -> ReasonInfo {
    ReasonInfo {
        reason,
        ..ReasonInfo::default()
    }
}
