//! One recording, from `start` to the log written at its end, and the process-wide state that
//! says which one is running.
//!
//! The running session is reached without a lock, because a thread joins it from whatever it was
//! doing when it first recorded, a signal handler included, and a forked child must never meet a
//! lock its parent's threads held. A reader announces itself in `READERS` before loading the
//! pointer and taking a strong count; a session that stops being current is parked, not freed,
//! and parked sessions are only freed when no reader is between those two steps.
//!
//! After `fork` the child runs alone with a copy of the parent's recording, which is not its own:
//! an `atfork` handler stops that copy (atomic stores only) and forgets it, so the child records
//! nothing of it and writes none of it; it may start its own (see `autostart`).

pub(crate) mod learned_culls;
mod window;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::thread::JoinHandle;

use fdr_format::{Reason, ReasonInfo};

use crate::buffers::pool::Pool;
use crate::export::Exporter;
use crate::output::atomic_file::Finals;
use crate::platform::clock::Calibration;
use crate::platform::wakeup::Wakeup;
use crate::profile::merged::Profiles;
use crate::tables::threads::Registry;
use crate::trigger::limits::Triggers;
use crate::{platform::host, tables::flags, trigger::cpu_wait, trigger::signal, Config, Error};

/// Whether this process records: the one word a hook reads before looking for a session.
/// Stored in [`STATE`] as its `u8`, so that the hot path's check stays one load and compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Process {
    /// No hook has looked at `FDR_OPTIONS` yet (and no recorder was started).
    Unknown = 0,
    /// A session is running.
    Active = 1,
    /// Nothing is recording.
    Idle = 2,
    /// A hook is reading `FDR_OPTIONS`.
    Starting = 3,
}

static STATE: AtomicU8 = AtomicU8::new(Process::Unknown as u8);
/// Epoch of the running session, 0 when none runs.
static EPOCH: AtomicU64 = AtomicU64::new(0);
static NEXT_EPOCH: AtomicU64 = AtomicU64::new(1);
/// The running session, holding one strong count, or null.
static CURRENT: AtomicPtr<Session> = AtomicPtr::new(std::ptr::null_mut());
/// Threads between loading `CURRENT` and taking their strong count.
static READERS: AtomicUsize = AtomicUsize::new(0);
/// How many forks this process is down from the one that started counting.
static FORKS: AtomicU64 = AtomicU64::new(0);
/// Set once `FDR_OPTIONS` started a recording: a forked child reads it again.
static AUTOSTARTED: AtomicBool = AtomicBool::new(false);

/// Whether a recording with `config`, `threshold_ticks` and a profile or not culls functions.
fn culls(config: &Config, threshold_ticks: u64, profiles: bool) -> bool {
    config.get_cull() && threshold_ticks > 0 && !profiles
}

/// Sessions waiting to be freed.
const PARKING: usize = 64;
static PARKED: [AtomicPtr<Session>; PARKING] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; PARKING];

/// What a recording was started with: fixed for its life, so its fields are plain data.
pub(crate) struct Setup {
    /// Tells this recording from earlier ones (gates, thread memberships).
    pub epoch: u64,
    pub config: Config,
    /// The buffer size in use (the configured one rounded down to whole words).
    pub buffer_size: usize,
    pub calibration: Calibration,
    pub threshold_ticks: u64,
    /// The pid the logs name.
    pub pid: i32,
    pub start_wall: (i64, u32),
    pub start_tsc: u64,
    pub program: String,
    /// A (counter, monotonic ns) pair read at start, from which the calibration is finished.
    pub cal_start: (u64, u64),
    /// The fork count when the session started: another value means a forked child.
    forks: u64,
    /// The functions culled from the start, as the last recording of this build left them, and
    /// where this one leaves its own.
    pub cull_memory: crate::session::learned_culls::Memory,
}

impl Setup {
    /// The run record of a recording as it started: its settings and calibration, nothing counted
    /// yet (a log fills in its counters; a crash box keeps it as it is).
    pub(crate) fn run_info(&self, ticks_per_second: u64) -> fdr_format::RunInfo {
        let setup = self;
        let config = &setup.config;
        fdr_format::RunInfo {
            clock: setup.calibration.source,
            ticks_per_second,
            // The recording's calibration is finished over this window (see `Session::ticks_per_second`).
            calibration_ns: if setup.calibration.window.is_zero() {
                0
            } else {
                crate::platform::clock::CALIBRATION_WINDOW.as_nanos() as u64
            },
            mode: match config.get_mode() {
                crate::Mode::Ring | crate::Mode::Profile => fdr_format::Mode::Ring,
                crate::Mode::Fill => fdr_format::Mode::Fill,
            },
            threshold_ns: config.get_threshold().as_nanos().min(u128::from(u64::MAX)) as u64,
            threshold_ticks: setup.threshold_ticks,
            buffer_size: setup.buffer_size as u64,
            buffer_count: config.get_buffer_count() as u64,
            pid: setup.pid,
            start_unix_secs: setup.start_wall.0,
            start_unix_nanos: setup.start_wall.1,
            start_tsc: setup.start_tsc,
            program: setup.program.clone(),
            max_age_ns: config
                .get_max_age()
                .map_or(0, |a| a.as_nanos().min(u128::from(u64::MAX)) as u64),
            culled_at_start: setup.cull_memory.culled_at_start(),
            ..fdr_format::RunInfo::default()
        }
    }
}

/// Where a recording stands. It only moves forward: recording, stopped (no thread records any
/// more; the final log may still fail and be tried again), written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum State {
    Recording = 0,
    Stopped = 1,
    Written = 2,
}

impl State {
    fn from_u8(v: u8) -> State {
        match v {
            0 => State::Recording,
            1 => State::Stopped,
            _ => State::Written,
        }
    }
}

/// The recording's state and who may write which log when: one final log at a time, one
/// snapshot at a time.
struct Lifecycle {
    /// A [`State`].
    state: AtomicU8,
    /// Serializes writing the final log.
    finishing: Mutex<()>,
    /// A snapshot is being taken.
    snapshot_busy: AtomicBool,
    /// The background writer was started.
    writer: AtomicBool,
}

/// Where the recording's logs go, and what became of them.
pub(crate) struct Outputs {
    /// Where the exit writers put the log, for a recording started by `FDR_OPTIONS`.
    auto_out: Option<PathBuf>,
    /// The `out` template that trigger and signal snapshots are named from.
    out_template: PathBuf,
    /// Paths the final log was written to: a snapshot that ends later does not replace it.
    finals: Finals,
    /// A background write failed and was reported (once).
    write_failed: AtomicBool,
}

impl Outputs {
    /// Where the exit writers put the log, for a recording started by `FDR_OPTIONS`.
    pub(crate) fn auto_out(&self) -> Option<&Path> {
        self.auto_out.as_deref()
    }

    /// The template trigger and signal snapshots are named from.
    pub(crate) fn out_template(&self) -> &Path {
        &self.out_template
    }

    /// The paths the final log was written to, which every log of the recording is written
    /// against ([`atomic_file::write`](crate::output::atomic_file::write)).
    pub(crate) fn finals(&self) -> &Finals {
        &self.finals
    }

    /// True the first time it is called: a failed background write is reported once.
    pub(crate) fn first_failure(&self) -> bool {
        !self.write_failed.swap(true, Ordering::Relaxed)
    }
}

/// What the recording lost or did beside the records, counted for the log's run record.
#[derive(Default)]
pub(crate) struct Counters {
    /// Arguments left out because they did not fit even an empty buffer.
    args_dropped: AtomicU64,
    /// Calls of threads that found no place in the thread registry.
    unattached: AtomicU64,
    /// Times a culled function was let through for a few calls (see `cull::probe`).
    probes: AtomicU64,
}

impl Counters {
    pub(crate) fn add_args_dropped(&self, n: u64) {
        self.args_dropped.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn add_unattached(&self) {
        self.unattached.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_probes(&self, n: u64) {
        self.probes.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn args_dropped(&self) -> u64 {
        self.args_dropped.load(Ordering::Relaxed)
    }

    /// Calls that recorded nothing because their thread could not join: counted here, and
    /// those that waited too long for the recording to start.
    pub(crate) fn unattached(&self) -> u64 {
        self.unattached.load(Ordering::Relaxed) + dropped_at_start()
    }

    pub(crate) fn probes(&self) -> u64 {
        self.probes.load(Ordering::Relaxed)
    }
}

/// One recording: what it was started with, its parts (each with its own synchronization), its
/// state, its outputs and its counters. Shared by every thread that records into it, so
/// nothing in it is changed but through the methods of its parts.
pub(crate) struct Session {
    setup: Setup,
    pool: Pool,
    threads: Registry,
    triggers: Triggers,
    /// Wakes the background writer.
    wakeup: Wakeup,
    lifecycle: Lifecycle,
    outputs: Outputs,
    counters: Counters,
    /// The threads' call tries, when the recording profiles.
    profiles: Option<Profiles>,
    /// Sends written windows to a collector, when the recording has an OTLP endpoint.
    exporter: Option<Exporter>,
    /// The counter's calibrated frequency, 0 until [`Session::ticks_per_second`] finished it.
    final_hz: AtomicU64,
    /// The recovery of what earlier processes left, while it runs ([`Session::recovered`]).
    recovery: Mutex<Option<JoinHandle<()>>>,
}

impl Session {
    /// Whether this recording culls functions: culling on, a threshold above 0 (with none, no
    /// call is erased, so none is ever culled), and no profile (which counts every call).
    pub(crate) fn culling(&self) -> bool {
        culls(
            &self.setup.config,
            self.setup.threshold_ticks,
            self.profiles.is_some(),
        )
    }

    /// Sends written windows to a collector, when the recording has an OTLP endpoint.
    pub(crate) fn exporter(&self) -> Option<&Exporter> {
        self.exporter.as_ref()
    }

    /// The call tries, when the recording profiles.
    pub(crate) fn profiles(&self) -> Option<&Profiles> {
        self.profiles.as_ref()
    }

    /// The descriptor flags every function of this recording gets: profiled, and not logged in
    /// profile mode.
    pub(crate) fn profile_flags(&self) -> u8 {
        match (self.profiles.is_some(), self.setup.config.get_mode()) {
            (false, _) => 0,
            (true, crate::Mode::Profile) => flags::PROFILED | flags::UNLOGGED,
            (true, _) => flags::PROFILED,
        }
    }

    pub(crate) fn new(
        config: Config,
        calibration: Calibration,
        auto_out: Option<PathBuf>,
        out_template: PathBuf,
        final_path: &Path,
    ) -> Result<Session, Error> {
        let buffer_size = config.get_buffer_size() / 8 * 8;
        let config_profiles = config
            .profiles()
            .then(|| Profiles::new(config.get_profile_nodes()));
        let threshold_ticks = (config.get_threshold().as_nanos()
            * u128::from(calibration.ticks_per_second)
            / 1_000_000_000)
            .min(u128::from(u64::MAX)) as u64;
        // Under Miri every entry's atomics are interpreted: 4,096 of them cost 38 s to make and
        // 10 s per snapshot's scan, in tests that run a few threads.
        let threads = if cfg!(miri) {
            64
        } else {
            (4 * config.get_buffer_count()).max(4096)
        };
        let program = program_name();
        let setup = Setup {
            epoch: NEXT_EPOCH.fetch_add(1, Ordering::Relaxed),
            buffer_size,
            calibration,
            threshold_ticks,
            pid: host::log_pid(),
            forks: FORKS.load(Ordering::SeqCst),
            start_wall: host::wall_time(),
            start_tsc: crate::platform::clock::now().0,
            cal_start: if calibration.window.is_zero() {
                (0, 0)
            } else {
                crate::platform::clock::sample()
            },
            cull_memory: crate::session::learned_culls::Memory::load(
                &program,
                &config,
                culls(&config, threshold_ticks, config_profiles.is_some()),
            ),
            program,
            config,
        };
        // Before the pool: a bad OTLP setting (a variable, a CA file) stops the start first.
        let exporter = Exporter::start(&setup.config)?;
        let (pool, recovery) = make_pool(&setup, final_path)?;
        Ok(Session {
            pool,
            recovery: Mutex::new(recovery),
            threads: Registry::new(threads),
            triggers: Triggers::new(&setup.config, calibration.ticks_per_second),
            wakeup: Wakeup::new(),
            setup,
            lifecycle: Lifecycle {
                state: AtomicU8::new(State::Recording as u8),
                finishing: Mutex::new(()),
                snapshot_busy: AtomicBool::new(false),
                writer: AtomicBool::new(false),
            },
            outputs: Outputs {
                auto_out,
                out_template,
                finals: Finals::default(),
                write_failed: AtomicBool::new(false),
            },
            counters: Counters::default(),
            profiles: config_profiles,
            exporter,
            final_hz: AtomicU64::new(0),
        })
    }

    /// The counter's frequency for a log written now: the start's quick measurement refined
    /// over [`clock::CALIBRATION_WINDOW`](crate::platform::clock::CALIBRATION_WINDOW) from the pair read
    /// at start, kept once that window has passed. A log written sooner (a program that runs
    /// for a few milliseconds writes its final one then) does not wait for it: it gets the rate
    /// measured from the start to now, which is not kept. Its times span no longer than that
    /// measurement, so the error it puts on them stays within the error of reading the clocks
    /// (tens of nanoseconds), as the window's does. The recording path runs on the quick
    /// measurement.
    pub(crate) fn ticks_per_second(&self) -> u64 {
        let cal = &self.setup.calibration;
        if cal.window.is_zero() {
            return cal.ticks_per_second;
        }
        let hz = self.final_hz.load(Ordering::Acquire);
        if hz != 0 {
            return hz;
        }
        let Some((hz, pair)) = crate::platform::clock::refine(self.setup.cal_start) else {
            return crate::platform::clock::rate_so_far(self.setup.cal_start)
                .unwrap_or(cal.ticks_per_second)
                .max(1);
        };
        let hz = hz.max(1);
        if self
            .final_hz
            .compare_exchange(0, hz, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            if let Some(b) = self.pool.crash_box() {
                b.calibrated(pair.0, pair.1, hz);
            }
        }
        self.final_hz.load(Ordering::Acquire)
    }

    /// Waits (a bounded time) for the recovery started with the recording, so that the process
    /// does not exit halfway through writing a recovered log.
    pub(crate) fn recovered(&self) {
        let h = self
            .recovery
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        crate::buffers::crash_box::recovery::wait(h);
    }

    /// Whether the calibration is finished.
    pub(crate) fn calibrated(&self) -> bool {
        self.setup.calibration.window.is_zero() || self.final_hz.load(Ordering::Acquire) != 0
    }

    /// What the recording was started with.
    pub(crate) fn setup(&self) -> &Setup {
        &self.setup
    }

    /// The buffers.
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The threads that record.
    pub(crate) fn threads(&self) -> &Registry {
        &self.threads
    }

    /// The slow-call triggers, their mailbox and counters.
    pub(crate) fn triggers(&self) -> &Triggers {
        &self.triggers
    }

    /// Wakes the background writer.
    pub(crate) fn wakeup(&self) -> &Wakeup {
        &self.wakeup
    }

    /// Where the logs go.
    pub(crate) fn outputs(&self) -> &Outputs {
        &self.outputs
    }

    /// What was lost or done beside the records.
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Where the recording stands.
    pub(crate) fn state(&self) -> State {
        State::from_u8(self.lifecycle.state.load(Ordering::Acquire))
    }

    /// The final log was written: nothing more is.
    pub(crate) fn mark_written(&self) {
        self.lifecycle
            .state
            .store(State::Written as u8, Ordering::Release);
    }

    /// The right to write the final log, one writer at a time.
    pub(crate) fn finishing(&self) -> MutexGuard<'_, ()> {
        self.lifecycle
            .finishing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// False in a forked child: the session is its parent's.
    pub(crate) fn in_this_process(&self) -> bool {
        self.setup.forks == FORKS.load(Ordering::SeqCst)
    }

    /// Stops recording; true for the caller that stopped it. `learnt_now` reads what culling
    /// learned (before the stop's sweep turns every function off), for the next run.
    pub(crate) fn stop(
        &self,
        learnt_now: fn() -> Vec<(u32, crate::session::learned_culls::Learnt)>,
    ) -> bool {
        let stopped = self
            .lifecycle
            .state
            .compare_exchange(
                State::Recording as u8,
                State::Stopped as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok();
        if stopped {
            self.pool.stop();
            if self.in_this_process() {
                // What culling learned, read before the sweep turns every function off.
                let learnt = self.setup.cull_memory.kept().then(learnt_now);
                flags::close(self.setup.epoch, epoch);
                if let Some(learnt) = learnt {
                    self.setup.cull_memory.save(&self.setup.config, &learnt);
                }
                if let Some(sig) = self.setup.config.get_signal() {
                    signal::uninstall(sig);
                }
            }
            self.wakeup.wake();
        }
        stopped
    }

    /// A trigger fired for a call of `function` on thread `tid`, running since `start`: hands it
    /// to the background writer (if the cooldown and the cap let it through) and wakes it.
    pub(crate) fn fire(&self, reason: Reason, function: u32, tid: i32, start: u64, now: u64) {
        let call = ReasonInfo {
            reason,
            function,
            tid,
            start_tsc: start,
            duration_ticks: now.wrapping_sub(start),
            suppressed: 0,
            limit_ticks: self.triggers.limit(function),
            p99_ticks: self.triggers.p99(function),
            ..ReasonInfo::default()
        };
        if self.triggers.fire(call, now, true) {
            self.wakeup.wake();
        }
    }

    /// A call of `function` on the thread of registry entry `key`, running since `start`, ended
    /// at `now` past its limit, with the watchdog's `mark` (or 0): fires its trigger with how
    /// long the thread waited for a CPU since the mark, unless the limit is learned and that
    /// wait alone took the call past it (see `cpu_wait`; counted as suppressed).
    #[cold]
    #[inline(never)]
    pub(crate) fn slow_call(&self, function: u32, key: u32, start: u64, now: u64, mark: u64) {
        let tid = self.threads.tid(key);
        let cpu_wait_ns = cpu_wait::since(mark, tid);
        let duration = now.wrapping_sub(start);
        let limit = self.triggers.limit(function);
        let learned = self.triggers.p99(function) != 0;
        if let Some(w) = cpu_wait_ns {
            let hz = self.setup.calibration.ticks_per_second;
            if learned && cpu_wait::only_the_wait(duration, limit, w, hz) {
                self.triggers.suppressed.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        let call = ReasonInfo {
            reason: Reason::SlowCall,
            function,
            tid,
            start_tsc: start,
            duration_ticks: duration,
            limit_ticks: limit,
            p99_ticks: self.triggers.p99(function),
            cpu_wait_ns,
            ..ReasonInfo::default()
        };
        if self.triggers.fire(call, now, true) {
            self.wakeup.wake();
        }
    }

    /// True for the one caller that gets to start the background writer.
    pub(crate) fn claim_writer(&self) -> bool {
        !self.lifecycle.writer.swap(true, Ordering::AcqRel)
    }

    /// The right to take a snapshot, one holder at a time.
    pub(crate) fn snapshot_turn(&self) -> Result<SnapshotTurn<'_>, Error> {
        self.lifecycle
            .snapshot_busy
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| Error::SnapshotInProgress)?;
        Ok(SnapshotTurn(self))
    }
}

/// Held while a snapshot is taken. `finish` does not need it: copying is read-only, so the final
/// log never waits for a snapshot writer, however slow.
pub(crate) struct SnapshotTurn<'a>(&'a Session);

impl Drop for SnapshotTurn<'_> {
    fn drop(&mut self) {
        self.0
            .lifecycle
            .snapshot_busy
            .store(false, Ordering::Release);
    }
}

/// Whether a hook that found no room should look further: false only when recording is known
/// to be off, which keeps instrumented code without a recorder at one extra branch.
#[inline(always)]
pub(crate) fn may_record() -> bool {
    STATE.load(Ordering::Relaxed) != Process::Idle as u8
}

/// The running session's epoch (0: none).
pub(crate) fn epoch() -> u64 {
    EPOCH.load(Ordering::Acquire)
}

/// Settles whether this process records before a hook goes on: the one caller that finds it
/// undecided runs `start`, which reads `FDR_OPTIONS`, may start a recording and ends with
/// [`autostart_done`]; the others wait while it runs ([`wait_for_start`]). The hooks' cold path
/// passes `autostart`'s run, which sits above it, through the crate root's `START_FROM_ENV`.
pub(crate) fn settle(start: fn()) {
    if claim_autostart() {
        start();
    } else {
        wait_for_start();
    }
}

/// True for the one caller that gets to read `FDR_OPTIONS` (it then calls `autostart_done`).
fn claim_autostart() -> bool {
    STATE.load(Ordering::Acquire) == Process::Unknown as u8
        && STATE
            .compare_exchange(
                Process::Unknown as u8,
                Process::Starting as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
}

/// Calls dropped because their thread waited past [`START_WAIT`] for a recording to start.
static DROPPED_AT_START: AtomicU64 = AtomicU64::new(0);

/// How long a thread waits for another thread that is starting the recording `FDR_OPTIONS`
/// asked for. A start takes a few milliseconds (the pool, the crash box, the clock's first
/// measurement); the bound is there for a starting thread that would need something the waiting
/// one holds (a lock of the program's own, around an instrumented call).
const START_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Waits while another thread starts the recording, so that this thread's first calls are
/// recorded, not dropped: a worker pool started before the main thread's first call loses none
/// of its work. Past [`START_WAIT`] the call is counted as dropped (`fdr info` says so).
fn wait_for_start() {
    if STATE.load(Ordering::Acquire) != Process::Starting as u8 {
        return;
    }
    let deadline = std::time::Instant::now() + START_WAIT;
    while STATE.load(Ordering::Acquire) == Process::Starting as u8 {
        if std::time::Instant::now() > deadline {
            DROPPED_AT_START.fetch_add(1, Ordering::Relaxed);
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

/// Calls dropped while waiting for a start, so far in this process.
pub(crate) fn dropped_at_start() -> u64 {
    DROPPED_AT_START.load(Ordering::Relaxed)
}

/// `FDR_OPTIONS` was read; `started` if it started a recording.
pub(crate) fn autostart_done(started: bool) {
    if started {
        AUTOSTARTED.store(true, Ordering::SeqCst);
    }
    // A recording it started becomes active only now, with its gate open: threads that waited
    // for the start then find every function's flags (profiled, triggers) set.
    let now = if started {
        Process::Active
    } else {
        Process::Idle
    };
    let _ = STATE.compare_exchange(
        Process::Starting as u8,
        now as u8,
        Ordering::AcqRel,
        Ordering::Acquire,
    );
    if !started {
        // Before the first sweep, so that a child forked during it can reset the sweep lock.
        at_fork();
        flags::close(0, epoch);
    }
}

/// How many forks down from the first recorder's process this one is.
pub(crate) fn forks() -> u64 {
    FORKS.load(Ordering::SeqCst)
}

/// The running session, if any.
pub(crate) fn current() -> Option<Arc<Session>> {
    READERS.fetch_add(1, Ordering::SeqCst);
    let p = CURRENT.load(Ordering::SeqCst);
    let s = (!p.is_null()).then(|| {
        // SAFETY: `p` came from `Arc::into_raw` in `install` and is not freed while a reader is
        // announced: `free_parked` frees nothing then, and `CURRENT` holds its count until the
        // pointer is parked.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    });
    READERS.fetch_sub(1, Ordering::SeqCst);
    s
}

/// Makes `session` the running one, unless one is running. `autostarted`: the hook starting
/// it from `FDR_OPTIONS` keeps the process in its starting state (other threads wait) until
/// [`autostart_done`], once the gate is open.
pub(crate) fn install(session: Arc<Session>, autostarted: bool) -> Result<(), Error> {
    free_parked();
    at_fork();
    let epoch = session.setup.epoch;
    let p = Arc::into_raw(session) as *mut Session;
    if CURRENT
        .compare_exchange(std::ptr::null_mut(), p, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // SAFETY: `p` was made by `into_raw` just above and published nowhere.
        drop(unsafe { Arc::from_raw(p) });
        return Err(Error::AlreadyRunning);
    }
    EPOCH.store(epoch, Ordering::Release);
    if !autostarted {
        STATE.store(Process::Active as u8, Ordering::Release);
    }
    Ok(())
}

/// `session` is no longer the running one (if it was).
pub(crate) fn uninstall(session: &Session) {
    let p = session as *const Session as *mut Session;
    // Park the pointer CURRENT held, which came from `Arc::into_raw` and may free the whole
    // allocation; `p`, made from a shared reference, may only read the session.
    if let Ok(held) =
        CURRENT.compare_exchange(p, std::ptr::null_mut(), Ordering::SeqCst, Ordering::SeqCst)
    {
        EPOCH.store(0, Ordering::Release);
        STATE.store(Process::Idle as u8, Ordering::Release);
        park(held);
    }
}

/// Gives up a strong count that a thread held through a raw pointer. A thread may do this from
/// a signal handler, so if it might be the last count, the session is parked rather than freed
/// there.
///
/// # Safety
/// `p` came from `Arc::into_raw` and the caller owns one strong count of it.
pub(crate) unsafe fn release(p: *const Session) {
    // SAFETY: per the contract, the count is ours, so the session is alive.
    if unsafe { Arc::strong_count(&std::mem::ManuallyDrop::new(Arc::from_raw(p))) } == 1 {
        park(p as *mut Session);
    } else {
        // SAFETY: per the contract.
        drop(unsafe { Arc::from_raw(p) });
    }
}

fn park(p: *mut Session) {
    for slot in PARKED.iter() {
        if slot
            .compare_exchange(std::ptr::null_mut(), p, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
    // Every place is taken: the session's memory is kept for the rest of the process.
}

/// Frees the parked sessions, unless a reader may be about to take a count of one.
fn free_parked() {
    if READERS.load(Ordering::SeqCst) != 0 {
        return;
    }
    for slot in PARKED.iter() {
        let p = slot.swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: parked pointers hold one strong count each and are no longer current.
            drop(unsafe { Arc::from_raw(p) });
        }
    }
}

/// Registers the fork handler, once.
fn at_fork() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        extern "C" fn in_child() {
            FORKS.fetch_add(1, Ordering::SeqCst);
            let p = CURRENT.swap(std::ptr::null_mut(), Ordering::SeqCst);
            // The parent's box is not the child's: its pages become the child's own before the
            // copy of the recording is stopped.
            crate::buffers::crash_box::after_fork();
            if !p.is_null() {
                // SAFETY: CURRENT's count keeps the session alive; it is leaked here on purpose
                // (the child must not free, or touch the locks of, its parent's recording).
                unsafe { (*p).pool.stop() };
            }
            EPOCH.store(0, Ordering::SeqCst);
            let again = AUTOSTARTED.load(Ordering::SeqCst);
            flags::after_fork(again);
            let state = if again {
                Process::Unknown
            } else {
                Process::Idle
            };
            STATE.store(state as u8, Ordering::SeqCst);
        }
        // `in_child` only does atomic operations and async-signal-safe calls, all a forked child
        // of a threaded program may do.
        crate::platform::at_fork_child(in_child);
    });
}

/// The buffer pool: in a crash box when the recording keeps a window and `crash_dir` is not
/// off, else (or when the box cannot be made there, said once on stderr) in anonymous memory.
/// With a box, the recovery of what earlier processes of the program left, if there is any to
/// do, runs meanwhile on a thread of its own.
fn make_pool(setup: &Setup, final_path: &Path) -> Result<(Pool, Option<JoinHandle<()>>), Error> {
    let config = &setup.config;
    // Profile mode writes no window: one buffer, for the records a hook may write before the
    // recording's flags reach it, and no box.
    if config.get_mode() == crate::Mode::Profile {
        return Ok((Pool::new(setup.buffer_size, 1, config.get_mode())?, None));
    }
    let count = config.get_buffer_count();
    let Some(dir) = config.get_crash_dir() else {
        return Ok((
            Pool::new(setup.buffer_size, count, config.get_mode())?,
            None,
        ));
    };
    let out = std::path::absolute(final_path).unwrap_or_else(|_| final_path.to_path_buf());
    let max = fdr_format::crash_box::MAX_OUT_PATH;
    let n = out.as_os_str().len();
    if n > max {
        return Err(Error::Config {
            key: "out".into(),
            message: format!(
                "{} is {n} bytes long; a crash box keeps the path of the log it recovers to,                  at most {max} bytes: give a shorter out, or crash_dir=off to record without a                  box",
                out.display()
            ),
        });
    }
    let recovery = crate::buffers::crash_box::recovery::Recovery {
        dir: dir.to_path_buf(),
        program: setup.program.clone(),
        out: out.clone(),
    }
    .start();
    let mut records = vec![
        fdr_format::Extension::Run(setup.run_info(setup.calibration.ticks_per_second)),
        fdr_format::Extension::Options(config.to_options()),
    ];
    records.extend(crate::tables::functions::records());
    // In a ring, the room of the first quarter megabyte of buffers is reserved now and the rest
    // by the background writer (`Pool::grow`; reserving 8 MiB of tmpfs takes 2.5 ms, a third of a
    // short program's start). A pool that fills keeps the first buffers whatever happens later,
    // so it reserves every one now.
    let ready = match config.get_mode() {
        crate::Mode::Ring => crate::buffers::pool::buffers_at_start(setup.buffer_size).min(count),
        _ => count,
    };
    let made = crate::buffers::crash_box::CrashBox::create(crate::buffers::crash_box::Setup {
        dir: &dir,
        program: &setup.program,
        out: &out,
        buffer_size: setup.buffer_size,
        buffer_count: count,
        ready,
        lead: fdr_format::crash_box::encode_lead(&records),
        header: crate::buffers::crash_box::HeaderFacts {
            // The process's own id, which names the box and tells whether it still runs (the
            // log's pid is 1 with the injected clock).
            pid: crate::platform::host::os_pid(),
            clock: fdr_format::crash_box::clock_code(setup.calibration.source),
            ticks_per_second: setup.calibration.ticks_per_second,
            cal_tsc0: setup.cal_start.0,
            cal_ns0: setup.cal_start.1,
            start_secs: setup.start_wall.0,
            start_nanos: setup.start_wall.1,
            start_tsc: setup.start_tsc,
            threshold_ns: config.get_threshold().as_nanos().min(u128::from(u64::MAX)) as u64,
            threshold_ticks: setup.threshold_ticks,
            max_age_ns: config
                .get_max_age()
                .map_or(0, |a| a.as_nanos().min(u128::from(u64::MAX)) as u64),
            // A forked child's box says whose: it usually ends with `_exit`, which no handler
            // sees.
            parent: (setup.forks > 0).then(crate::platform::parent_pid),
        },
    });
    let pool = match made {
        Ok(b) => Ok(Pool::in_box(
            b,
            setup.buffer_size,
            count,
            ready,
            config.get_mode(),
        )),
        Err(e) => {
            eprintln!(
                "fdr: no crash box in {} ({e}): the buffers are in the process's memory, so a \
                 crash leaves no window (give crash_dir=DIR with room for {} bytes, or \
                 crash_dir=off to keep this)",
                dir.display(),
                setup.buffer_size * count
            );
            Pool::new(setup.buffer_size, count, config.get_mode())
        }
    };
    match pool {
        Ok(p) => Ok((p, recovery)),
        Err(e) => {
            crate::buffers::crash_box::recovery::wait(recovery);
            Err(e)
        }
    }
}

fn program_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default()
}
