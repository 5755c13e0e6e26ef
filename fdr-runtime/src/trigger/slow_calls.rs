//! Slow-call triggers: which functions have one, timing their calls, and handing a trigger that
//! fired to the background writer.
//!
//! A recording arms the functions it has a limit for by setting a flag in their descriptors
//! (`tables::flags::open`); the hooks of every other function never look further than that flag, which
//! they load anyway for the gate and culling. An armed function's calls are pushed on their
//! thread's list of open trigger calls (in the registry, where the watchdog reads them) and
//! checked when they end. The thread whose call was slow only fills a mailbox and wakes the
//! writer: it never copies or writes.
//!
//! A storm is not a flood: one trigger per cooldown gets through, at most `max_snapshots`
//! snapshot files are written per process, and what is held back is counted as suppressed. But
//! the worst call of a storm is never the one held back: within a cooldown, a call that passed
//! its limit by at least twice the factor of every call let through in it gets through too (a file of
//! its own, counted against `max_snapshots`; or, when the one before still waits for the writer,
//! in its place, which then counts as suppressed). A learned limit fooled by a descheduled thread
//! fired first, and the cooldown hid the real outlier behind it.

use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering,
};

use fdr_format::units::duration_to_ticks;
use fdr_format::{FnKind, Reason, ReasonInfo};

use crate::tables::functions::{self, FnKindTag};
use crate::tables::threads::ThreadEntry;
use crate::trigger::learned_limit::{Learned, AUTO_FLOOR, AUTO_WARMUP_TIME};
use crate::{Config, Limit};

/// The limit of a function whose learned limit is still warming up: no call passes it.
pub(crate) const LEARNING: u64 = u64::MAX;

/// Trigger and signal snapshot files this process has reserved a number for.
static SNAPSHOT_FILES: AtomicU32 = AtomicU32::new(0);

/// A recording's triggers.
pub(crate) struct Triggers {
    /// Each function's limit, by function id (0, no function's, has none).
    armed: Box<[Armed]>,
    /// The configuration's patterns and their limits, for names given later.
    patterns: Vec<(String, PatternLimit)>,
    /// [`AUTO_FLOOR`] in ticks.
    floor: u64,
    /// Shards per learned limit: one per CPU the process may run on.
    shards: usize,
    /// [`AUTO_WARMUP_TIME`] in ticks.
    warmup: u64,
    pub cooldown_ticks: u64,
    pub max_snapshots: u32,
    /// The shortest limit, which paces the watchdog (0: no triggers).
    shortest: AtomicU64,
    /// Whether some function has a limit a call can pass: one written by hand, or a learned one
    /// past its warm-up. Until then the watchdog has nothing to look for.
    settled: AtomicBool,
    /// When the last trigger got through (0: none yet).
    last: AtomicU64,
    /// How far the worst call let through in the current cooldown passed its limit (see
    /// [`factor`]).
    worst: AtomicU64,
    pub suppressed: AtomicU64,
    /// Of those, calls past a learned limit let off because their thread's wait for a CPU
    /// explains them (`cpu_wait`).
    pub cpu_wait_suppressed: AtomicU64,
    pub mailbox: Mailbox,
    /// Open tasks of async functions with a trigger.
    pub tasks: OpenTasks,
    /// The long-poll limit in ticks (0: none): a poll of any async function longer than it
    /// fires (see `Config::long_poll`).
    long_poll: u64,
    /// Whether some function has a trigger, or a pattern may give one to a function named
    /// later.
    functions: bool,
}

/// One function's trigger: its limit and, for a learned one, what it is learned from, side by
/// side so that an exit finds both with one look-up.
struct Armed {
    /// Limit in ticks (0: none; [`LEARNING`] for a learned limit still warming up). Atomic: a
    /// descriptor named while the recording runs (a `tracing` span callsite) is armed then
    /// (see [`Triggers::arm_named`]), and a learned limit moves.
    limit: AtomicU64,
    /// The learned limit (null for a function with none): set at most once, from a `Box`
    /// that the slot frees when it is dropped, with the [`Triggers`] it is part of.
    learned: AtomicPtr<Learned>,
}

impl Armed {
    /// The limit a call of `d` ticks is judged by, and whether it passed it.
    #[inline(always)]
    fn judge(&self, d: u64) -> (u64, bool) {
        let limit = self.limit.load(Ordering::Relaxed);
        (limit, limit != 0 && d > limit)
    }

    /// The learned limit, if the function has one.
    #[inline(always)]
    fn learned(&self) -> Option<&Learned> {
        // SAFETY: a non-null pointer came from `Box::into_raw` in `set_learned`, published by
        // its release exchange (this load acquires it), and is freed only when `self` is
        // dropped, which the borrow of `self` rules out until it ends.
        unsafe { self.learned.load(Ordering::Acquire).as_ref() }
    }

    /// Gives the function learned limit `l`, unless it has one already.
    fn set_learned(&self, l: Learned) {
        let p = Box::into_raw(Box::new(l));
        let set = self.learned.compare_exchange(
            std::ptr::null_mut(),
            p,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        if set.is_err() {
            // SAFETY: `p` came from `Box::into_raw` above and was not published.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        let p = *self.learned.get_mut();
        if !p.is_null() {
            // SAFETY: set only by `set_learned`, from `Box::into_raw`, and owned by `self`:
            // with `&mut self` nobody borrows it any longer.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// A pattern's limit, in ticks or learned.
#[derive(Clone, Copy)]
enum PatternLimit {
    Ticks(u64),
    Auto(u32),
}

/// A call of an armed function that ended: when it started, whether it passed its limit.
pub(crate) struct Ended<'a> {
    pub start: u64,
    pub slow: bool,
    /// The limit it was judged by ([`LEARNING`] while a learned one warms up).
    pub limit: u64,
    /// The function's learned limit, which a call within its limit counts towards.
    pub learned: Option<&'a Learned>,
}

impl Triggers {
    /// The limits of `config`'s patterns (which win) and of the attributes, in ticks.
    pub(crate) fn new(config: &Config, ticks_per_second: u64) -> Triggers {
        // At least one tick: a limit of 0 would fire on every call.
        let ticks = |d: std::time::Duration| duration_to_ticks(d, ticks_per_second).max(1);
        let pattern_limit = |l: Limit| match l {
            Limit::After(d) => PatternLimit::Ticks(ticks(d)),
            Limit::Auto { k_tenths } => PatternLimit::Auto(k_tenths),
        };
        let floor = ticks(AUTO_FLOOR);
        let warmup = ticks(AUTO_WARMUP_TIME);
        let shards = std::thread::available_parallelism().map_or(1, |n| n.get());
        let table = functions::table();
        let armed: Box<[Armed]> = (0..=table.len())
            .map(|_| Armed {
                limit: AtomicU64::new(0),
                learned: AtomicPtr::new(std::ptr::null_mut()),
            })
            .collect();
        let limits: Vec<u64> = table
            .iter()
            .enumerate()
            .map(|(i, f)| {
                // An await site carries its function's name, and is no function to time.
                let name = if config.get_triggers().is_empty() || f.kind() == FnKindTag::Await {
                    None
                } else {
                    Some(f.name())
                };
                let limit = config
                    .get_triggers()
                    .iter()
                    .find(|t| name.as_deref().is_some_and(|n| matches(&t.pattern, n)))
                    .map(|t| t.limit)
                    .or_else(|| f.trigger())
                    .map(pattern_limit);
                match limit {
                    None => 0,
                    Some(PatternLimit::Ticks(t)) => t,
                    Some(PatternLimit::Auto(k)) => {
                        armed[i + 1].set_learned(Learned::new(k, floor, shards, warmup));
                        LEARNING
                    }
                }
            })
            .collect();
        for (a, &l) in armed[1..].iter().zip(&limits) {
            a.limit.store(l, Ordering::Relaxed);
        }
        // Profile mode writes no window: no long poll would show in one. A program without
        // async functions has no polls: no watchdog wakes up for them.
        let polls = table.iter().any(|f| f.kind() == FnKindTag::Async);
        let long_poll = match config.get_long_poll() {
            Some(d) if polls && config.get_mode() != crate::Mode::Profile => ticks(d),
            _ => 0,
        };
        // A learned limit is never below the floor: the watchdog need not look sooner.
        let shortest = limits
            .iter()
            .map(|&l| if l == LEARNING { floor } else { l })
            .chain(std::iter::once(long_poll))
            .filter(|&l| l > 0)
            .min()
            .unwrap_or(0);
        let patterns: Vec<(String, PatternLimit)> = config
            .get_triggers()
            .iter()
            .map(|t| (t.pattern.clone(), pattern_limit(t.limit)))
            .collect();
        // Functions named later may be armed too when patterns are given.
        let functions = limits.iter().any(|&l| l != 0) || !patterns.is_empty();
        let open_tasks = if functions { 1024 } else { 0 };
        Triggers {
            armed,
            patterns,
            floor,
            shards,
            warmup,
            cooldown_ticks: ticks(config.get_trigger_cooldown()),
            max_snapshots: config.get_max_snapshots(),
            shortest: AtomicU64::new(shortest),
            settled: AtomicBool::new(
                long_poll != 0 || limits.iter().any(|&l| l != 0 && l != LEARNING),
            ),
            last: AtomicU64::new(0),
            worst: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
            cpu_wait_suppressed: AtomicU64::new(0),
            mailbox: Mailbox::default(),
            tasks: OpenTasks::new(open_tasks),
            long_poll,
            functions,
        }
    }

    /// The long-poll limit in ticks (0: none).
    #[inline(always)]
    /// The least a learned limit can be, in ticks ([`AUTO_FLOOR`]).
    pub(crate) fn floor(&self) -> u64 {
        self.floor
    }

    pub(crate) fn long_poll(&self) -> u64 {
        self.long_poll
    }

    /// True when some function has a trigger, or a pattern that a function named later may
    /// match: the long-poll limit aside.
    pub(crate) fn on_functions(&self) -> bool {
        self.functions
    }

    /// True when some function has a trigger.
    pub(crate) fn any(&self) -> bool {
        self.shortest() != 0
    }

    /// The shortest limit in ticks (0: no triggers).
    pub(crate) fn shortest(&self) -> u64 {
        self.shortest.load(Ordering::Relaxed)
    }

    /// Whether some function has a limit a call can pass. While every limit is a learned one
    /// still warming up ([`LEARNING`]), no call can fire, hang or be marked for its wait.
    pub(crate) fn settled(&self) -> bool {
        self.settled.load(Ordering::Relaxed)
    }

    /// Stores `limit` as armed function `a`'s, and notes that a limit exists.
    fn set_limit(&self, a: &Armed, limit: u64) {
        a.limit.store(limit, Ordering::Relaxed);
        if limit != LEARNING && !self.settled.load(Ordering::Relaxed) {
            self.settled.store(true, Ordering::Relaxed);
        }
    }

    /// Function `id` was just given its name (a descriptor named at run time): if a pattern of
    /// the configuration matches it, it gets that limit; true if it did.
    pub(crate) fn arm_named(&self, id: u32, name: &str) -> bool {
        let Some(&(_, limit)) = self.patterns.iter().find(|(p, _)| matches(p, name)) else {
            return false;
        };
        let Some(slot) = self.armed(id).filter(|_| id != 0) else {
            return false;
        };
        let (value, shortest) = match limit {
            PatternLimit::Ticks(t) => (t, t),
            PatternLimit::Auto(k) => {
                slot.set_learned(Learned::new(k, self.floor, self.shards, self.warmup));
                (LEARNING, self.floor)
            }
        };
        self.set_limit(slot, value);
        self.lower_shortest(shortest);
        true
    }

    fn lower_shortest(&self, limit: u64) {
        let _ = self
            .shortest
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
                (s == 0 || limit < s).then_some(limit)
            });
    }

    /// The trigger of function `id`, if it is in the table (id 0, no function's, has none).
    #[inline(always)]
    fn armed(&self, id: u32) -> Option<&Armed> {
        self.armed.get(id as usize)
    }

    /// The limit of function `id` in ticks (0: none; `u64::MAX`: learned, still warming up).
    pub(crate) fn limit(&self, id: u32) -> u64 {
        self.armed(id)
            .map_or(0, |a| a.limit.load(Ordering::Relaxed))
    }

    /// For a learned limit, the p99 of function `id` it was derived from, in ticks (0: a limit
    /// written by hand, or none yet).
    pub(crate) fn p99(&self, id: u32) -> u64 {
        self.armed(id)
            .and_then(Armed::learned)
            .map_or(0, Learned::p99)
    }

    /// A call (or task) of armed function `id` lasted `d` ticks and ended at `now` on `cpu`: if
    /// its limit is learned, it counts towards it. Called after the call was judged, so it is
    /// judged by the calls before.
    pub(crate) fn observe(&self, id: u32, d: u64, cpu: u32, now: u64) {
        let Some(a) = self.armed(id) else {
            return;
        };
        if let Some(limit) = a.learned().and_then(|l| l.observe(d, cpu, now)) {
            self.set_limit(a, limit);
        }
    }

    /// Recomputes the learned limit of function `id` at `now`, which [`Learned::count_call`]
    /// said is due ([`Ended::learned`]).
    #[cold]
    #[inline(never)]
    pub(crate) fn recompute(&self, id: u32, now: u64) {
        let Some(a) = self.armed(id) else {
            return;
        };
        if let Some(limit) = a.learned().and_then(|l| l.recompute(now)) {
            self.set_limit(a, limit);
        }
    }

    /// Whether a call of function `id` that lasted `d` ticks passed its limit.
    pub(crate) fn is_slow(&self, id: u32, d: u64) -> bool {
        self.armed(id).is_some_and(|a| a.judge(d).1)
    }

    /// Times an event of armed function `id` at `now` on the thread of registry entry `thread`:
    /// an entry goes on the thread's list of open trigger calls; an exit takes its call off and
    /// answers when it started and whether it ran past the function's limit (the trigger
    /// fires; the caller then counts the call towards a learned limit, [`Triggers::observe`]).
    pub(crate) fn time_call(
        &self,
        thread: &ThreadEntry,
        id: u32,
        kind: FnKind,
        now: u64,
    ) -> Option<Ended<'_>> {
        if kind.is_entry() {
            let _ = thread.open_call(id, now);
            return None;
        }
        let (open, start) = thread.close_call()?;
        if open != id {
            return None;
        }
        let a = self.armed(id)?;
        let (limit, slow) = a.judge(now.wrapping_sub(start));
        Some(Ended {
            start,
            slow,
            limit,
            learned: a.learned(),
        })
    }

    /// A trigger fired: lets it through to the mailbox if the cooldown and the cap allow, and
    /// counts it as suppressed otherwise. True if it got through (the caller wakes the writer).
    pub(crate) fn fire(&self, call: ReasonInfo, now: u64, cooldown: bool) -> bool {
        if cooldown && !self.through_cooldown(&call, now) {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        // A worse call than the one still waiting for the writer takes its place.
        if self.mailbox.replace(&call) {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        let Some(n) = reserve_file(self.max_snapshots) else {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        if !self.mailbox.put(&call, n) {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Whether `call` gets past the cooldown at `now`: the first trigger after one ends, or a
    /// call clearly worse than every one let through since it began: past its limit by at least
    /// [`STORM_MARGIN`] times their factor, so that a storm of equally slow calls, which differ
    /// by noise, writes one snapshot.
    fn through_cooldown(&self, call: &ReasonInfo, now: u64) -> bool {
        let factor = factor(call);
        let last = self.last.load(Ordering::Acquire);
        if last != 0 && now.wrapping_sub(last) < self.cooldown_ticks {
            return self
                .worst
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                    (factor >= w.saturating_mul(STORM_MARGIN)).then_some(factor)
                })
                .is_ok();
        }
        if self
            .last
            .compare_exchange(last, now.max(1), Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        self.worst.store(factor, Ordering::Release);
        true
    }
}

/// Within a cooldown, a later call is written only when it passed its limit by this many times
/// the factor of every call written in it: twice, so that calls as slow as the first (a storm,
/// whose durations differ by noise) write nothing more, while one clearly worse is not hidden
/// behind it.
const STORM_MARGIN: u64 = 2;

/// How far a call passed its limit, in 1/1024ths of the limit (a call with no limit: as far as
/// can be).
fn factor(call: &ReasonInfo) -> u64 {
    match call.limit_ticks {
        0 => u64::MAX,
        limit => (u128::from(call.duration_ticks) * 1024 / u128::from(limit))
            .min(u128::from(u64::MAX)) as u64,
    }
}

/// Takes the next snapshot number of the process, if the cap allows one more.
pub(crate) fn reserve_file(max: u32) -> Option<u32> {
    SNAPSHOT_FILES
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        })
        .ok()
        .map(|n| n + 1)
}

/// Takes the next snapshot number of the process whatever the cap: a panic's log is never
/// refused (it may be the only one that says what went wrong).
pub(crate) fn next_file() -> u32 {
    SNAPSHOT_FILES
        .fetch_add(1, Ordering::AcqRel)
        .wrapping_add(1)
}

/// Whether function `name` matches `pattern` as `fdr --function` reads one (one matcher for
/// both, [`fdr_format::glob::function_matches`]): `*` matches any run of characters, a pattern
/// without `*` also matches the end of a name after `::` (`get_quote`, `svc::get_quote`), and a
/// trait method also goes by `Type::method` and `Trait::method`.
pub(crate) fn matches(pattern: &str, name: &str) -> bool {
    fdr_format::glob::function_matches(pattern, name)
}

/// What to say, once at start, of each of `config`'s trigger patterns that matches no function
/// of the program: `trigger svc::getquote matches no function of this program; did you mean
/// svc::get_quote?` (a typo, or a name the program does not have, would otherwise never fire
/// and never say why).
pub(crate) fn unmatched(config: &crate::Config) -> Vec<String> {
    if config.get_triggers().is_empty() {
        return Vec::new();
    }
    let table = functions::table();
    let names: Vec<std::borrow::Cow<'_, str>> = table
        .iter()
        .map(|f| f.name())
        .filter(|n| !n.is_empty())
        .collect();
    let names: Vec<&str> = names.iter().map(|n| n.as_ref()).collect();
    // Descriptors whose name is given while the program runs (`tracing` span callsites).
    let named_later = table.iter().any(|f| f.name().is_empty());
    config
        .get_triggers()
        .iter()
        .filter(|t| !names.iter().any(|n| matches(&t.pattern, n)))
        .map(|t| {
            let mut s = format!(
                "fdr: trigger {} matches no function of this program",
                t.pattern
            );
            if let Some(best) = fdr_format::glob::closest(&t.pattern, &names).first() {
                s.push_str(&format!("; did you mean {best}?"));
            }
            if named_later {
                s.push_str(" (a span named while the program runs may still match it)");
            }
            s
        })
        .collect()
}

const EMPTY: u8 = 0;
const FILLING: u8 = 1;
const FULL: u8 = 2;
/// The writer is reading the waiting trigger.
const TAKING: u8 = 3;

/// One open task of an async function with a trigger.
struct OpenTask {
    state: AtomicU8,
    task: AtomicU64,
    function: AtomicU32,
    tid: AtomicI32,
    start: AtomicU64,
    reported: AtomicBool,
}

/// The open tasks of async functions with a trigger, where a task's latency is timed from its
/// creation to its completion or drop, whichever threads those happen on, and where the
/// watchdog sees a task pending forever. A fixed table: tasks beyond it are not timed.
pub(crate) struct OpenTasks {
    entries: Box<[OpenTask]>,
    /// Set once, by the first task put on the table: until then the watchdog's look at the
    /// table (its whole length, every wake-up) is skipped. Most recordings with a trigger time
    /// calls, not tasks.
    used: AtomicBool,
}

impl OpenTasks {
    fn new(capacity: usize) -> OpenTasks {
        OpenTasks {
            entries: (0..capacity)
                .map(|_| OpenTask {
                    state: AtomicU8::new(EMPTY),
                    task: AtomicU64::new(0),
                    function: AtomicU32::new(0),
                    tid: AtomicI32::new(0),
                    start: AtomicU64::new(0),
                    reported: AtomicBool::new(false),
                })
                .collect(),
            used: AtomicBool::new(false),
        }
    }

    /// Task `task` of `function` was created at `start` on thread `tid`.
    pub(crate) fn open(&self, task: u64, function: u32, tid: i32, start: u64) {
        let n = self.entries.len();
        if n == 0 {
            return;
        }
        let first = (task as usize).wrapping_mul(0x9E37_79B9) % n;
        for i in 0..n {
            let e = &self.entries[(first + i) % n];
            if e.state
                .compare_exchange(EMPTY, FILLING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                e.task.store(task, Ordering::Relaxed);
                e.function.store(function, Ordering::Relaxed);
                e.tid.store(tid, Ordering::Relaxed);
                e.start.store(start, Ordering::Relaxed);
                e.reported.store(false, Ordering::Relaxed);
                e.state.store(FULL, Ordering::Release);
                // Read first: after the first task, a line every core only reads.
                if !self.used.load(Ordering::Relaxed) {
                    self.used.store(true, Ordering::Release);
                }
                return;
            }
        }
    }

    /// Task `task` ended: its (function, start), unless it was not timed or the watchdog
    /// reported it already.
    pub(crate) fn close(&self, task: u64) -> Option<(u32, u64)> {
        let n = self.entries.len();
        if n == 0 {
            return None;
        }
        let first = (task as usize).wrapping_mul(0x9E37_79B9) % n;
        for i in 0..n {
            let e = &self.entries[(first + i) % n];
            if e.state.load(Ordering::Acquire) == FULL && e.task.load(Ordering::Relaxed) == task {
                let found = (
                    e.function.load(Ordering::Relaxed),
                    e.start.load(Ordering::Relaxed),
                );
                let reported = e.reported.swap(true, Ordering::SeqCst);
                e.state.store(EMPTY, Ordering::Release);
                return (!reported).then_some(found);
            }
        }
        None
    }

    /// Open tasks as (task, function, tid, start).
    pub(crate) fn each(&self, mut f: impl FnMut(u64, u32, i32, u64)) {
        if !self.used.load(Ordering::Acquire) {
            return;
        }
        for e in self.entries.iter() {
            if e.state.load(Ordering::Acquire) == FULL {
                f(
                    e.task.load(Ordering::Relaxed),
                    e.function.load(Ordering::Relaxed),
                    e.tid.load(Ordering::Relaxed),
                    e.start.load(Ordering::Relaxed),
                );
            }
        }
    }

    /// The watchdog takes task `task` as its own to report; false if it ended or was taken.
    pub(crate) fn claim_report(&self, task: u64) -> bool {
        self.entries.iter().any(|e| {
            e.state.load(Ordering::Acquire) == FULL
                && e.task.load(Ordering::Relaxed) == task
                && !e.reported.swap(true, Ordering::SeqCst)
        })
    }
}

/// A trigger's reason as the mailbox holds it (one byte a signal handler can store).
fn mailbox_code(reason: Reason) -> u8 {
    match reason {
        Reason::StillRunning => 1,
        Reason::LongPoll => 2,
        Reason::LongPollRunning => 3,
        _ => 0,
    }
}

/// One trigger waiting for the writer. Filled by whichever thread fired, emptied by the writer;
/// atomics throughout, so a thread in a signal handler may fill it.
#[derive(Default)]
pub(crate) struct Mailbox {
    state: AtomicU8,
    reason: AtomicU8,
    function: AtomicU32,
    tid: AtomicI32,
    start: AtomicU64,
    duration: AtomicU64,
    limit: AtomicU64,
    p99: AtomicU64,
    /// `cpu_wait_ns` plus one (0: none).
    cpu_wait: AtomicU64,
    /// `off_cpu_ns` plus one (0: none).
    off_cpu: AtomicU64,
    n: AtomicU32,
    /// The writer is writing a snapshot (finish waits a little for it).
    pub writing: AtomicBool,
}

impl Mailbox {
    fn put(&self, call: &ReasonInfo, n: u32) -> bool {
        if self
            .state
            .compare_exchange(EMPTY, FILLING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.n.store(n, Ordering::Relaxed);
        self.fill(call);
        true
    }

    /// Puts `call` in place of the trigger waiting there, which keeps its file number; false
    /// when none waits (or the writer is taking it).
    fn replace(&self, call: &ReasonInfo) -> bool {
        if self
            .state
            .compare_exchange(FULL, FILLING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.fill(call);
        true
    }

    /// Writes `call` into the box, which the caller holds (`FILLING`), and hands it over.
    fn fill(&self, call: &ReasonInfo) {
        self.reason
            .store(mailbox_code(call.reason), Ordering::Relaxed);
        self.function.store(call.function, Ordering::Relaxed);
        self.tid.store(call.tid, Ordering::Relaxed);
        self.start.store(call.start_tsc, Ordering::Relaxed);
        self.duration.store(call.duration_ticks, Ordering::Relaxed);
        self.limit.store(call.limit_ticks, Ordering::Relaxed);
        self.p99.store(call.p99_ticks, Ordering::Relaxed);
        self.cpu_wait.store(
            call.cpu_wait_ns.map_or(0, |w| w.saturating_add(1)),
            Ordering::Relaxed,
        );
        self.off_cpu.store(
            call.off_cpu_ns.map_or(0, |w| w.saturating_add(1)),
            Ordering::Relaxed,
        );
        self.state.store(FULL, Ordering::Release);
    }

    /// The waiting trigger and its file number, if one waits.
    pub(crate) fn take(&self) -> Option<(ReasonInfo, u32)> {
        // Held while read: a worse trigger cannot replace it half way.
        if self
            .state
            .compare_exchange(FULL, TAKING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        let call = ReasonInfo {
            reason: match self.reason.load(Ordering::Relaxed) {
                1 => Reason::StillRunning,
                2 => Reason::LongPoll,
                3 => Reason::LongPollRunning,
                _ => Reason::SlowCall,
            },
            function: self.function.load(Ordering::Relaxed),
            tid: self.tid.load(Ordering::Relaxed),
            start_tsc: self.start.load(Ordering::Relaxed),
            duration_ticks: self.duration.load(Ordering::Relaxed),
            suppressed: 0,
            limit_ticks: self.limit.load(Ordering::Relaxed),
            p99_ticks: self.p99.load(Ordering::Relaxed),
            cpu_wait_ns: self.cpu_wait.load(Ordering::Relaxed).checked_sub(1),
            off_cpu_ns: self.off_cpu.load(Ordering::Relaxed).checked_sub(1),
            ..ReasonInfo::default()
        };
        let n = self.n.load(Ordering::Relaxed);
        self.state.store(EMPTY, Ordering::Release);
        Some((call, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_full_names() {
        assert!(matches("app::handle", "app::handle"));
        assert!(!matches("app::handle", "app::handle_all"));
        assert!(matches("app::*", "app::Conn::read"));
        assert!(matches("*::read", "app::Conn::read"));
        assert!(matches("a*b*c", "aXXbYYc"));
        assert!(!matches("a*b*c", "aXXbYY"));
        assert!(matches("*", ""));
        assert!(matches("<app::T as app::Tr>::*", "<app::T as app::Tr>::m"));
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the function table is empty under Miri: no function to arm"
    )]
    fn a_limit_exists_once_one_is_written_or_learned() {
        #[linkme::distributed_slice(crate::FUNCTIONS)]
        #[linkme(crate = linkme)]
        static POLLED: crate::FnDesc =
            crate::FnDesc::new("race::polled", file!(), line!(), FnKindTag::Async, &[]);
        let _ = &POLLED;
        // `race::leaf` is a function of this test binary's table.
        // No long-poll limit: alone, it would be a limit that can be passed at once.
        let no_polls = Config::default().long_poll(std::time::Duration::ZERO);
        let learned = Triggers::new(&no_polls.clone().trigger_auto("race::leaf", 3.0), 1_000);
        assert!(learned.any(), "the learned trigger is armed");
        assert!(!learned.settled(), "a learned limit warms up first");
        let id = functions::table()
            .iter()
            .position(|f| f.name() == "race::leaf")
            .expect("race::leaf in the table") as u32
            + 1;
        let a = learned.armed(id).expect("armed");
        learned.set_limit(a, LEARNING);
        assert!(!learned.settled(), "still learning");
        learned.set_limit(a, 50);
        assert!(learned.settled(), "learned");
        let fixed = Triggers::new(
            &Config::default().trigger("race::leaf", std::time::Duration::from_millis(10)),
            1_000,
        );
        assert!(
            fixed.settled(),
            "a limit written by hand can be passed at once"
        );
        // This binary has an async function (`POLLED`): the default long-poll limit.
        let polls = Triggers::new(&Config::default(), 1_000);
        assert!(
            polls.any() && polls.settled(),
            "the default long-poll limit"
        );
        assert_eq!(polls.long_poll(), 100, "100 ms at 1,000 ticks a second");
        assert!(!Triggers::new(&no_polls, 1_000).any());
    }

    #[test]
    fn the_mailbox_holds_one_trigger() {
        let m = Mailbox::default();
        let call = ReasonInfo {
            reason: Reason::StillRunning,
            function: 3,
            tid: 4,
            start_tsc: 5,
            duration_ticks: 6,
            suppressed: 0,
            limit_ticks: 7,
            p99_ticks: 2,
            ..ReasonInfo::default()
        };
        assert!(m.put(&call, 1));
        assert!(!m.put(&call, 2), "one waits already");
        assert_eq!(m.take(), Some((call.clone(), 1)));
        assert_eq!(m.take(), None);
        assert!(!m.replace(&call), "none waits to be replaced");
        // A worse one takes the place of the one waiting, with its file number.
        let worse = ReasonInfo {
            duration_ticks: 60,
            ..call.clone()
        };
        assert!(m.put(&call, 3));
        assert!(m.replace(&worse));
        assert_eq!(m.take(), Some((worse, 3)));
    }

    #[test]
    fn factors_compare_calls_across_limits() {
        let call = |duration_ticks, limit_ticks| ReasonInfo {
            duration_ticks,
            limit_ticks,
            ..ReasonInfo::default()
        };
        assert_eq!(factor(&call(200, 100)), 2048);
        assert!(factor(&call(500, 100)) > factor(&call(900, 300)));
        assert_eq!(factor(&call(5, 0)), u64::MAX);
    }
}
