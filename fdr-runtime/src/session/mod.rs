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

pub(crate) mod budget;
mod current;
pub(crate) mod learned_culls;
mod setup;
mod take;

pub(crate) use current::{
    autostart_done, current, dropped_at_start, epoch, forks, install, may_record, release, settle,
    uninstall,
};
pub(crate) use setup::Setup;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;

use fdr_format::units::duration_to_ticks;
use fdr_format::{Reason, ReasonInfo};

use crate::buffers::pool::Pool;
use crate::export::Exporter;
use crate::output::atomic_file::Finals;
use crate::platform::clock::Calibration;
use crate::platform::wakeup::Wakeup;
use crate::profile::merged::Profiles;
use crate::tables::threads::Registry;
use crate::trigger::slow_calls::Triggers;
use crate::{platform::host, tables::flags, trigger::cpu_wait, trigger::signal, Config, Error};

use current::next_epoch;
use setup::{culls, make_pool, program_name};

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
    /// The cost budget, from its first look (`budget`).
    budget: Mutex<Option<budget::Budget>>,
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
        let threshold_ticks =
            duration_to_ticks(config.get_threshold(), calibration.ticks_per_second);
        // Under Miri every entry's atomics are interpreted: 4,096 of them cost 38 s to make and
        // 10 s per snapshot's scan, in tests that run a few threads.
        let threads = if cfg!(miri) {
            64
        } else {
            (4 * config.get_buffer_count()).max(4096)
        };
        let program = program_name();
        let setup = Setup {
            epoch: next_epoch(),
            buffer_size,
            calibration,
            threshold_ticks,
            pid: host::log_pid(),
            forks: forks(),
            start_wall: host::wall_time(),
            start_tsc: crate::platform::clock::now().0,
            cal_start: if calibration.window.is_zero() {
                (0, 0)
            } else {
                crate::platform::clock::sample()
            },
            learned_culls: crate::session::learned_culls::LearnedCulls::load(
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
            budget: Mutex::new(None),
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
        self.setup.forks == forks()
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
                let learnt = self.setup.learned_culls.kept().then(learnt_now);
                flags::close(self.setup.epoch, epoch);
                if let Some(learnt) = learnt {
                    self.setup.learned_culls.save(&self.setup.config, &learnt);
                }
                crate::platform::switches::release_hooks();
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

    /// A poll of async function `function` on thread `tid`, running since `start`, passed the
    /// long-poll limit: it ended at `now` past it, or (`running`) the watchdog saw it running
    /// at `now`. Fires as [`Session::fire`] does, with the long-poll limit.
    pub(crate) fn long_poll(&self, running: bool, function: u32, tid: i32, start: u64, now: u64) {
        // A poll that ended is judged on its own thread, whose switches say where its time went;
        // the watchdog's view of a running one has none.
        let spent = if running {
            None
        } else {
            cpu_wait::over_call(start, now, self.setup.calibration.ticks_per_second)
        };
        let call = ReasonInfo {
            reason: if running {
                Reason::LongPollRunning
            } else {
                Reason::LongPoll
            },
            function,
            tid,
            start_tsc: start,
            duration_ticks: now.wrapping_sub(start),
            limit_ticks: self.triggers.long_poll(),
            cpu_wait_ns: spent.map(|s| s.cpu_wait_ns),
            off_cpu_ns: spent.filter(|s| s.whole).map(|s| s.off_cpu_ns),
            ..ReasonInfo::default()
        };
        if self.triggers.fire(call, now, true) {
            self.wakeup.wake();
        }
    }

    /// A call of `function` on the thread of registry entry `key` (the calling thread),
    /// running since `start`, ended at `now` past its limit, with the watchdog's `mark` (or 0):
    /// fires its trigger with where its time went off the CPU (the thread's context switches
    /// over the whole call, else its wait for a CPU since the mark), unless the limit is learned
    /// and the wait for a CPU alone took the call past it (see `cpu_wait`; counted as
    /// suppressed). Answers the call's own duration, in ticks: without the wait for a CPU
    /// measured, which a learned limit does not learn from.
    #[cold]
    #[inline(never)]
    pub(crate) fn slow_call(
        &self,
        function: u32,
        key: u32,
        start: u64,
        now: u64,
        mark: u64,
    ) -> u64 {
        let tid = self.threads.tid(key);
        let hz = self.setup.calibration.ticks_per_second;
        let marked = cpu_wait::since(mark, tid);
        let (cpu_wait_ns, off_cpu_ns) = match cpu_wait::over_call(start, now, hz) {
            Some(s) if s.whole => (Some(s.cpu_wait_ns), Some(s.off_cpu_ns)),
            // Part of the call: at least that much, or what the mark measured if more.
            Some(s) => (Some(s.cpu_wait_ns.max(marked.unwrap_or(0))), None),
            None => (marked, None),
        };
        let duration = now.wrapping_sub(start);
        let limit = self.triggers.limit(function);
        let learned = self.triggers.p99(function) != 0;
        let own = duration
            .saturating_sub(cpu_wait_ns.map_or(0, |w| fdr_format::units::ns_to_ticks(w, hz)));
        if let Some(w) = cpu_wait_ns {
            if learned && cpu_wait::only_the_wait(duration, limit, w, hz) {
                self.triggers.suppressed.fetch_add(1, Ordering::Relaxed);
                self.triggers
                    .cpu_wait_suppressed
                    .fetch_add(1, Ordering::Relaxed);
                return own;
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
            off_cpu_ns,
            ..ReasonInfo::default()
        };
        if self.triggers.fire(call, now, true) {
            self.wakeup.wake();
        }
        own
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
