//! A clock and CPU number that tests drive by hand (feature `testing`).
//!
//! Once [`use_mock_clock`] is called, recorders started afterwards read each thread's injected
//! time and CPU instead of the hardware, write pid 1 and wall time 0, and number threads 1, 2, 3…
//! in the order they first record (unless a test names one with [`set_thread_id`]). Migration, a
//! counter jump past 32 bits, and the exact lengths that decide a rewind can then be produced at
//! will, and logs come out byte-for-byte the same on every run.
//!
//! ```
//! use fdr_runtime::testing;
//! testing::use_mock_clock(1_000_000_000);
//! testing::set_time(100);
//! testing::set_cpu(2);
//! testing::advance(5);
//! assert_eq!(testing::now(), (105, 2));
//! testing::use_real_clock();
//! ```

#[cfg(all(test, feature = "record"))]
mod race_tests;

use std::sync::{Mutex, MutexGuard};

use crate::seams::injected;

/// Switches the process to injected values: recorders started from now on read each thread's
/// injected time and CPU, ticking `ticks_per_second`.
pub fn use_mock_clock(ticks_per_second: u64) {
    injected::turn_on(ticks_per_second);
}

/// Switches recorders started from now on back to the machine's clock.
pub fn use_real_clock() {
    injected::turn_off();
}

/// Sets this thread's time.
pub fn set_time(ticks: u64) {
    injected::set_time(ticks);
}

/// Moves this thread's time forward (wrapping, like a hardware counter).
pub fn advance(ticks: u64) {
    injected::advance(ticks);
}

/// Moves this thread to another CPU.
pub fn set_cpu(cpu: u16) {
    injected::set_cpu(u32::from(cpu));
}

/// Names this thread in logs (call before its first record).
pub fn set_thread_id(tid: i32) {
    injected::set_thread_id(tid);
}

/// Adds `ns` to the time every thread has waited for a CPU (the kernel's run-queue delay, which
/// a slow call's log reports: see `fdr_format::ReasonInfo::cpu_wait_ns`).
///
/// ```
/// fdr_runtime::testing::use_mock_clock(1_000_000_000);
/// fdr_runtime::testing::add_cpu_wait(5_000);
/// fdr_runtime::testing::use_real_clock();
/// ```
pub fn add_cpu_wait(ns: u64) {
    injected::add_run_delay(ns);
}

/// Tells the recorder that this thread was switched off its CPU from `out` to `back` (ticks of
/// the injected clock): `preempted` (still runnable: waiting for a CPU) or by itself (blocked:
/// a sleep, a lock, I/O), as the kernel's context-switch records would (see
/// `fdr_format::ReasonInfo::off_cpu_ns`). A call past its limit that spans it reports it. A
/// thread never given one has no record of its switches, as on a system that keeps none.
///
/// ```
/// fdr_runtime::testing::use_mock_clock(1_000_000_000);
/// fdr_runtime::testing::switched_out(1_100, 1_400, true);
/// fdr_runtime::testing::use_real_clock();
/// ```
pub fn switched_out(out: u64, back: u64, preempted: bool) {
    injected::switched_out(out, back, preempted);
}

/// Whether a recording's writer holds the kernel's context-switch hooks on now: it does while
/// a recording that writes windows has a trigger, where the kernel allows switch records, so
/// that no thread's first timed call waits for the kernel to turn them on.
///
/// ```
/// let _ = fdr_runtime::testing::switch_hooks_held();
/// ```
pub fn switch_hooks_held() -> bool {
    crate::platform::switches::hooks_held()
}

/// How many threads hold a ring of their context switches now (each thread that timed a call
/// opens one; its exit closes it).
///
/// ```
/// let _ = fdr_runtime::testing::switch_rings_open();
/// ```
pub fn switch_rings_open() -> usize {
    crate::platform::switches::rings_open()
}

/// How many open calls the watchdog has marked, in this process, to measure their thread's wait
/// for a CPU from (see [`add_cpu_wait`]): a test waits for its call to be marked.
///
/// ```
/// let marked = fdr_runtime::testing::cpu_wait_marks();
/// assert!(fdr_runtime::testing::cpu_wait_marks() >= marked);
/// ```
pub fn cpu_wait_marks() -> u64 {
    crate::trigger::cpu_wait::marks()
}

/// Runs `f` inside every clock read of this thread, that is in the middle of writing a record,
/// the way a signal handler could interrupt it. `None` removes it.
pub fn on_clock_read(f: Option<fn()>) {
    injected::on_clock_read(f);
}

/// Runs `f` once, at the start of this thread's next hook that takes the cold path (no buffer
/// yet, a full one, the process's first hook): after the hook chose how to record its event
/// from its function's flags, before it joins the recording. What `f` does (start a recording
/// from another thread, say) then lands in that gap.
///
/// ```
/// fdr_runtime::testing::on_next_cold_path(|| {});
/// ```
pub fn on_next_cold_path(f: fn()) {
    injected::on_next_cold_path(f);
}

/// This thread's injected time and CPU.
pub fn now() -> (u64, u32) {
    injected::values()
}

/// How many calls a probe lets through ([`probe_culled`], and the background writer's rounds):
/// a test that counts a probe's calls counts these.
///
/// ```
/// assert_eq!(fdr_runtime::testing::PROBE_CALLS, 64);
/// ```
pub const PROBE_CALLS: u32 = crate::record::cull::PROBE_CALLS;

/// What a kept call takes off its function's run of erased calls (see
/// [`Config::cull_after`](crate::Config::cull_after)): with a `cull_after` of at most this
/// many, a kept call starts the run over.
///
/// ```
/// assert_eq!(fdr_runtime::testing::KEPT_COST, 1000);
/// ```
pub const KEPT_COST: u32 = crate::record::cull::KEPT_COST;

/// The memory culling keeps, in bytes, for `functions` functions and `threads` threads: each
/// function's run of erased calls (inside its descriptor, which exists anyway) and each
/// thread's table of counts (in its thread-local, 1 KiB whatever the number of functions). A
/// test holds [`Stats::culling_bytes`](crate::Stats::culling_bytes) to it.
///
/// ```
/// let bytes = fdr_runtime::testing::culling_memory(50_000, 1_000);
/// assert_eq!(bytes, 50_000 * 4 + 1_000 * 1024);
/// ```
pub fn culling_memory(functions: usize, threads: usize) -> usize {
    crate::record::cull::memory(functions, threads)
}

/// Sets the process's CPU time, in nanoseconds, as the cost budget reads it while the injected
/// clock is on (0 when it was turned on).
///
/// ```
/// fdr_runtime::testing::set_process_cpu_ns(5_000_000);
/// ```
pub fn set_process_cpu_ns(ns: u64) {
    crate::seams::injected::set_process_cpu_ns(ns);
}

/// Sets what the cost budget counts a timed call at, in picoseconds, while the injected clock is
/// on (10,000 when it was turned on: its own measurement would time the injected clock).
///
/// ```
/// fdr_runtime::testing::set_call_cost_ps(20_000);
/// ```
pub fn set_call_cost_ps(ps: u64) {
    crate::seams::injected::set_call_cost_ps(ps);
}

/// What one look of the cost budget decided ([`budget_look`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BudgetLook {
    /// The recorder's estimate of its cost since the last look, in millionths of the CPU time.
    pub estimate_ppm: u32,
    /// Names of the functions it stopped timing: `NAME (waits at LINE:COLUMN)` for the waits
    /// at an await site, `NAME (wake-ups)` for an async function's wake-ups.
    pub stopped: Vec<String>,
    /// Names of the functions it timed again, as in `stopped`.
    pub restored: Vec<String>,
}

/// Takes one look of the running recording's cost budget now (recordings on the injected clock
/// do not look by themselves, so that tests decide when, with the CPU time they set). `None`
/// when no recording runs or it keeps no budget.
///
/// ```
/// assert_eq!(fdr_runtime::testing::budget_look(), None);
/// ```
pub fn budget_look() -> Option<BudgetLook> {
    let rec = crate::lifecycle::recorder::recorder()?;
    let d = rec.session().budget_look()?;
    // A function by its name; an await site's waits as `NAME (waits at LINE:COLUMN)`; an
    // async function's wake-ups as `NAME (wake-ups)`.
    let name = |&id: &u32| {
        let wakes = id & fdr_format::BUDGET_WAKES_BIT != 0;
        let Some(f) = crate::tables::functions::function(id & !fdr_format::BUDGET_WAKES_BIT) else {
            return String::new();
        };
        if wakes {
            format!("{} (wake-ups)", f.name())
        } else if f.kind() == crate::FnKindTag::Await {
            format!("{} (waits at {}:{})", f.name(), f.line(), f.column())
        } else {
            f.name().to_string()
        }
    };
    Some(BudgetLook {
        estimate_ppm: d.estimate_ppm,
        stopped: d.shed.iter().map(name).collect(),
        restored: d.restored.iter().map(name).collect(),
    })
}

/// Lets the next [`PROBE_CALLS`] calls of every culled function through, to be timed, as the
/// background writer's probing rounds do every 10 ms (recordings with the
/// injected clock do not probe by themselves, so that tests decide when). Returns how many functions it probed,
/// which the running recording counts as probes.
///
/// ```
/// assert_eq!(fdr_runtime::testing::probe_culled(), 0);
/// ```
pub fn probe_culled() -> u64 {
    let len = crate::tables::functions::table().len();
    let mut cursor = len.saturating_sub(1);
    let mut probed = 0;
    for _ in 0..len.div_ceil(crate::record::cull::PROBES_PER_ROUND) {
        probed += crate::record::cull::probe(&mut cursor);
    }
    if let Some(rec) = crate::lifecycle::recorder::recorder() {
        rec.session().counters().add_probes(probed);
    }
    probed
}

/// Serializes tests that start recorders: one recorder runs per process, and the test harness
/// runs tests on several threads. From the first call on, the process's recordings start from
/// nothing culling learned and leave nothing for the next run (`session::learned_culls`), so a test does
/// not depend on what another test, or the last run of the binary, culled.
pub fn exclusive() -> MutexGuard<'static, ()> {
    crate::session::learned_culls::forget();
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| {
        // The test that held it panicked, perhaps with its recording running: end it, so one
        // failure is reported as one and not as every test after it refused to start.
        if let Some(rec) = crate::lifecycle::recorder::recorder() {
            let _ = rec.finish_to(&mut std::io::sink());
        }
        e.into_inner()
    })
}

/// The controller alone, on plain buffers, with the time and CPU a test gives it: no recorder,
/// no thread-local, no clock. Records go where the hot path would put them, block after block
/// (a full buffer starts the next, with its preamble), so a test can check record sequences,
/// rewinds and timestamp jumps on the recording policy itself.
///
/// ```
/// use fdr_runtime::testing::Controller;
/// use fdr_format::FnKind;
/// let mut c = Controller::new(4096, 10, 1000, 0);
/// c.event(1, FnKind::Enter);
/// c.advance(3);
/// c.event(1, FnKind::Exit); // 3 ticks, under the threshold of 10: erased
/// assert_eq!(c.blocks()[0].len(), 10); // only the preamble is left
/// ```
pub struct Controller {
    state: crate::record::thread_state::ThreadState,
    slot: Box<crate::buffers::published::Slot>,
    words: Box<[std::sync::atomic::AtomicU64]>,
    done: Vec<Vec<u64>>,
    started: bool,
    time: u64,
    cpu: u32,
}

impl Controller {
    /// A controller writing buffers of `buffer_size` bytes, erasing calls shorter than
    /// `threshold` ticks, starting at `time` on `cpu`.
    pub fn new(buffer_size: usize, threshold: u64, time: u64, cpu: u16) -> Controller {
        let words: Box<[std::sync::atomic::AtomicU64]> = (0..buffer_size / 8)
            .map(|_| std::sync::atomic::AtomicU64::new(0))
            .collect();
        let c = Controller {
            state: crate::record::thread_state::ThreadState::new(),
            slot: Box::new(crate::buffers::published::Slot::new()),
            words,
            done: Vec::new(),
            started: false,
            time,
            cpu: u32::from(cpu),
        };
        c.state.threshold.set(threshold);
        c
    }

    /// Moves time forward.
    pub fn advance(&mut self, ticks: u64) {
        self.time = self.time.wrapping_add(ticks);
    }

    /// Moves to another CPU.
    pub fn set_cpu(&mut self, cpu: u16) {
        self.cpu = u32::from(cpu);
    }

    /// Records an event of function `id` now.
    pub fn event(&mut self, id: u32, kind: fdr_format::FnKind) {
        self.write(id, kind, &[]);
    }

    /// Records an entry of function `id` with arguments now.
    pub fn enter_args(&mut self, id: u32, args: &[u64]) {
        self.write(id, fdr_format::FnKind::EnterArgs, args);
    }

    fn write(&mut self, id: u32, kind: fdr_format::FnKind, args: &[u64]) {
        use crate::record::controller;
        let id = fdr_format::id_field(id);
        let (tsc, cpu) = (self.time, self.cpu);
        let t = &self.state;
        let len = t.len.get();
        let written = if self.started {
            controller::record_any(t, len, id, kind, tsc, cpu, args)
        } else {
            None
        };
        let len = match written {
            Some(len) => len,
            None => {
                self.next_block(len, tsc, cpu);
                let t = &self.state;
                controller::record_any(
                    t,
                    fdr_format::BLOCK_PREAMBLE_WORDS,
                    id,
                    kind,
                    tsc,
                    cpu,
                    args,
                )
                .expect("a record fits an empty buffer")
            }
        };
        self.state.len.set(len);
    }

    /// Ends the current block and starts the next, as the hot path does with a full buffer.
    fn next_block(&mut self, len: u32, tsc: u64, cpu: u32) {
        use std::sync::atomic::Ordering;
        if self.started {
            self.done.push(
                self.words[..len as usize]
                    .iter()
                    .map(|w| w.load(Ordering::Relaxed))
                    .collect(),
            );
        }
        self.started = true;
        let preamble = fdr_format::block_preamble(
            &fdr_format::BlockStart {
                tid: 1,
                wall_secs: 0,
                wall_micros: 0,
                pid: 1,
                cpu: cpu as u16,
                tsc,
            },
            0,
        );
        for (w, p) in self.words.iter().zip(preamble) {
            w.store(p, Ordering::Relaxed);
        }
        self.slot
            .limit
            .store(self.words.len() as u32, Ordering::Relaxed);
        // SAFETY: the slot and the words are boxed in `self`, which outlives the state that
        // writes them, and only this controller writes them.
        unsafe { self.state.writer.install(&self.slot, &self.words) };
        self.state
            .begin_block(fdr_format::BLOCK_PREAMBLE_WORDS, cpu, tsc);
    }

    /// Every block so far, the current one last, each as its words (preamble first, its
    /// extents record still 0).
    pub fn blocks(&self) -> Vec<Vec<u64>> {
        use std::sync::atomic::Ordering;
        let mut out = self.done.clone();
        if self.started {
            let len = self.state.len.get() as usize;
            out.push(
                self.words[..len]
                    .iter()
                    .map(|w| w.load(Ordering::Relaxed))
                    .collect(),
            );
        }
        out
    }

    /// The blocks as a whole log (header, a leading block naming `functions`, the blocks with
    /// their extents filled in), for the same reader as a recorder's logs.
    pub fn log(&self, functions: &[(u32, &str)]) -> Vec<u8> {
        let header = fdr_format::FileHeader {
            constant_tsc: true,
            nonstop_tsc: true,
            cycle_frequency: 1_000_000_000,
            buffer_size: self.words.len() as u64 * 8,
            ..fdr_format::FileHeader::default()
        };
        let mut out = header.encode().to_vec();
        let mut records = vec![fdr_format::Extension::Run(fdr_format::RunInfo {
            clock: fdr_format::ClockSource::Injected,
            ticks_per_second: 1_000_000_000,
            threshold_ticks: self.state.threshold.get(),
            pid: 1,
            ..fdr_format::RunInfo::default()
        })];
        for &(id, name) in functions {
            records.push(fdr_format::Extension::Function(fdr_format::FunctionInfo {
                id,
                name: name.to_string(),
                ..fdr_format::FunctionInfo::default()
            }));
        }
        let start = fdr_format::LeadStart {
            tid: 1,
            pid: 1,
            start_secs: 0,
            start_nanos: 0,
            start_tsc: 0,
        };
        out.extend(fdr_format::lead_block(&start, &records));
        for mut b in self.blocks() {
            let m = fdr_format::meta::buffer_extents((b.len() as u64 - 2) * 8);
            b[0] = m[0];
            b[1] = m[1];
            out.extend(b.iter().flat_map(|w| w.to_le_bytes()));
        }
        out
    }
}

/// Makes every later reservation of crash-box buffers beyond the first ones fail as on a full
/// file system (`on`), or work again: for tests of a pool that cannot grow to its size.
///
/// ```
/// fdr_runtime::testing::fail_reservations(true);
/// fdr_runtime::testing::fail_reservations(false);
/// ```
pub fn fail_reservations(on: bool) {
    crate::buffers::crash_box::fail_reservations(on);
}

/// Holds (`on`) the recovery a recording starts of what earlier processes of its program left,
/// before it looks at anything, or lets it go on: for tests that the recording does not wait
/// for it.
///
/// ```
/// fdr_runtime::testing::hold_recovery(true);
/// fdr_runtime::testing::hold_recovery(false);
/// ```
pub fn hold_recovery(on: bool) {
    crate::buffers::crash_box::recovery::hold(on);
}

/// Keeps the background writer from reserving a crash box's buffers beyond the first ones
/// (`on`), so that threads reserve them one at a time as they need them, or lets it again:
/// for tests of the pool's growth that must not depend on which thread gets there first.
///
/// ```
/// fdr_runtime::testing::pause_growth(true);
/// fdr_runtime::testing::pause_growth(false);
/// ```
pub fn pause_growth(on: bool) {
    crate::buffers::pool::pause_growth(on);
}
