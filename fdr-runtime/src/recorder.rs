//! The process's recorder: starting it, reaching it from anywhere, snapshots, finishing, and
//! recording with no code change when `FDR_OPTIONS` is set.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Once};

use crate::buffer::Pool;
use crate::clock::{self, Calibration};
use crate::snapshot;
use crate::writer::{self, RunFacts};
use crate::{Config, Error, Stats, MIN_BUFFER_SIZE};

const UNKNOWN: u8 = 0;
const ACTIVE: u8 = 1;
const IDLE: u8 = 2;

/// UNKNOWN until the first hook has looked at `FDR_OPTIONS` (or a recorder was started).
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
/// Epoch of the running session, 0 when none runs.
static EPOCH: AtomicU64 = AtomicU64::new(0);
static NEXT_EPOCH: AtomicU64 = AtomicU64::new(1);
static CURRENT: Mutex<Option<Arc<Session>>> = Mutex::new(None);

/// One recording, from `start` to `finish`.
pub(crate) struct Session {
    pub epoch: u64,
    pub pool: Pool,
    pub config: Config,
    pub calibration: Calibration,
    pub threshold_ticks: u64,
    pub pid: i32,
    pub start_wall: (i64, u32),
    pub start_tsc: u64,
    pub program: String,
    finished: AtomicBool,
    snapshot_busy: AtomicBool,
}

/// Whether a hook that found no room should look further: false only when recording is known
/// to be off, which keeps instrumented code without a recorder at one extra branch.
#[inline(always)]
pub(crate) fn may_record() -> bool {
    STATE.load(Ordering::Relaxed) != IDLE
}

/// The running session's epoch (0: none), after giving `FDR_OPTIONS` its one chance.
pub(crate) fn current_epoch() -> u64 {
    if STATE.load(Ordering::Acquire) == UNKNOWN {
        autostart();
    }
    EPOCH.load(Ordering::Acquire)
}

/// The running session, if it is the one of `epoch`.
pub(crate) fn session_for(epoch: u64) -> Option<Arc<Session>> {
    let cur = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    cur.as_ref().filter(|s| s.epoch == epoch).cloned()
}

/// Starts the process's recorder.
///
/// The buffer pool is allocated here, once; recording threads take buffers from it without
/// locks or allocation. Only one recorder runs at a time.
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
    config.validate()?;
    let mut cur = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    if cur.is_some() {
        return Err(Error::AlreadyRunning);
    }
    let calibration = clock::calibration();
    let buffer_size = (config.get_buffer_size() / 8 * 8).max(MIN_BUFFER_SIZE);
    let pool = Pool::new(buffer_size, config.get_buffer_count(), config.get_mode())?;
    let threshold_ticks = (config.get_threshold().as_nanos()
        * u128::from(calibration.ticks_per_second)
        / 1_000_000_000)
        .min(u128::from(u64::MAX)) as u64;
    let epoch = NEXT_EPOCH.fetch_add(1, Ordering::Relaxed);
    let session = Arc::new(Session {
        epoch,
        pool,
        config,
        calibration,
        threshold_ticks,
        pid: process_id(),
        start_wall: clock::wall_time(),
        start_tsc: clock::now().0,
        program: program_name(),
        finished: AtomicBool::new(false),
        snapshot_busy: AtomicBool::new(false),
    });
    *cur = Some(Arc::clone(&session));
    EPOCH.store(epoch, Ordering::Release);
    STATE.store(ACTIVE, Ordering::Release);
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
    let cur = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    cur.as_ref().map(|s| Recorder {
        session: Arc::clone(s),
    })
}

/// A handle on the running recorder. Cheap to clone; every clone refers to the same recording.
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
    pub fn snapshot<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), Error> {
        if self.session.finished.load(Ordering::Acquire) {
            return Err(Error::NotRecording);
        }
        let _turn = SnapshotTurn::take(&self.session)?;
        self.write(out, true)
            .map_err(|source| Error::Io { path: None, source })
    }

    /// Writes the current window to a file while recording goes on. The file is written under a
    /// temporary name and renamed, so a reader never sees half a log.
    pub fn write_snapshot(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        write_file(path, |f| self.snapshot(f))
    }

    /// Stops recording and writes everything kept to a file.
    pub fn finish(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        if self.session.finished.load(Ordering::Acquire) {
            return Err(Error::NotRecording);
        }
        write_file(path, |f| self.finish_to(f))
    }

    /// Stops recording and writes everything kept to `out`.
    pub fn finish_to<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), Error> {
        if self.session.finished.swap(true, Ordering::AcqRel) {
            return Err(Error::NotRecording);
        }
        self.session.pool.stop();
        {
            let mut cur = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
            if cur.as_ref().map(|s| s.epoch) == Some(self.session.epoch) {
                *cur = None;
                EPOCH.store(0, Ordering::Release);
                STATE.store(IDLE, Ordering::Release);
            }
        }
        // Finishing waits for a snapshot in progress rather than failing.
        let _turn = loop {
            match SnapshotTurn::take(&self.session) {
                Ok(t) => break t,
                Err(_) => std::thread::yield_now(),
            }
        };
        self.write(out, false)
            .map_err(|source| Error::Io { path: None, source })
    }

    /// True until the recording is finished.
    pub fn is_recording(&self) -> bool {
        !self.session.finished.load(Ordering::Acquire)
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        let threads = self
            .session
            .pool
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        Stats {
            threads: threads.len(),
            records_dropped: threads
                .iter()
                .map(|t| t.dropped.load(Ordering::Relaxed))
                .sum(),
            buffers_recycled: self.session.pool.recycled.load(Ordering::Relaxed),
        }
    }

    fn write<W: Write + ?Sized>(&self, out: &mut W, snapshot: bool) -> std::io::Result<()> {
        let copied = snapshot::copy_pool(&self.session.pool);
        let facts = RunFacts {
            snapshot,
            end_tsc: clock::now().0,
        };
        writer::write_log(out, &self.session, &copied, facts)
    }
}

/// The right to copy the pool, one holder at a time.
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

fn write_file(path: &Path, body: impl FnOnce(&mut File) -> Result<(), Error>) -> Result<(), Error> {
    let io_err = |source| Error::Io {
        path: Some(path.to_path_buf()),
        source,
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let mut file = File::create(&tmp).map_err(io_err)?;
    let result = body(&mut file).and_then(|()| file.sync_data().map_err(io_err));
    drop(file);
    match result {
        Ok(()) => std::fs::rename(&tmp, path).map_err(io_err),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(match e {
                Error::Io { path: None, source } => io_err(source),
                e => e,
            })
        }
    }
}

fn process_id() -> i32 {
    #[cfg(feature = "testing")]
    if crate::testing::mock_on() {
        return 1;
    }
    std::process::id() as i32
}

fn program_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default()
}

/// Where a recording started from `FDR_OPTIONS` writes its log.
static AUTO_OUT: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Gives `FDR_OPTIONS` its one chance, at the first instrumented call.
#[cold]
fn autostart() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        match Config::from_env() {
            Ok(Some(config)) => {
                let out = config.get_out().map(Path::to_path_buf).unwrap_or_else(|| {
                    PathBuf::from(format!("{}-{}.fdr", program_name(), std::process::id()))
                });
                match start(config) {
                    Ok(_) => {
                        *AUTO_OUT.lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
                        install_exit_writers();
                    }
                    Err(Error::AlreadyRunning) => {}
                    Err(e) => eprintln!("{e}; recording stays off"),
                }
            }
            Ok(None) => {}
            Err(e) => eprintln!("{e}; recording stays off"),
        }
        let _ = STATE.compare_exchange(UNKNOWN, IDLE, Ordering::AcqRel, Ordering::Acquire);
    });
}

/// Writes the log at normal exit (through `atexit`, which `std::process::exit` and a return
/// from `main` both run) and a snapshot on panic (before unwinding, chaining to the previous
/// hook).
fn install_exit_writers() {
    extern "C" fn at_exit() {
        write_auto(true);
    }
    // SAFETY: `at_exit` is a plain `extern "C"` function that never unwinds (errors are printed).
    unsafe { libc::atexit(at_exit) };
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        write_auto(false);
        previous(info);
    }));
}

fn write_auto(finish: bool) {
    let Some(out) = AUTO_OUT.lock().unwrap_or_else(|e| e.into_inner()).clone() else {
        return;
    };
    let Some(rec) = recorder() else {
        return;
    };
    let result = if finish {
        rec.finish(&out)
    } else {
        rec.write_snapshot(&out)
    };
    match result {
        Ok(()) => eprintln!("fdr: wrote {}", out.display()),
        Err(Error::NotRecording) | Err(Error::SnapshotInProgress) => {}
        Err(e) => eprintln!("{e}"),
    }
}
