//! A log's window as calls: every call of every thread with its caller, its times in
//! nanoseconds and its arguments, and every async task, from a log's bytes (a file read whole,
//! or the bytes the runtime has just written).
//!
//! The calls are those of the replay engine ([`crate::replay`], whose rules they follow), in
//! two passes: the first ([`crate::first_pass`]) finds the calls open when each thread's
//! window started, the second enters them then, outermost first, and hands every call to a
//! [`Collector`], the sink that keeps them. `fdr calls --format json` lists the same calls,
//! `fdr export` and the OTLP exporters send them as spans. A call *inferred* to have started at
//! its thread's window start (its entry is before the window;
//! [`WindowCall::inferred_start`]) is so the caller of the calls made while it ran.
//!
//! Durations are differences of timestamps (0 when time went backwards), converted by
//! [`crate::units::ticks_to_ns`]; start times count from [`WindowCalls::origin_tsc`], the
//! earliest window start of a thread with calls. A call's self time is its duration less its
//! callees' durations. Calls nested more than [`crate::limits::MAX_CALL_DEPTH`] deep on one
//! thread, the inferred ones included, make the log an error.
//!
//! Memory is bounded by [`WindowLimits`], not by the log: the calls themselves (about 100 bytes
//! each, plus 8 bytes per argument), at most [`MAX_WINDOW_CALLS`] of them and [`MAX_WINDOW_ARG_VALUES`]
//! argument values by default, past which the read stops with an error naming the limit; the
//! replay's open calls; the waits at await sites tied to tasks ([`WindowCalls::awaits`], about
//! 100 bytes each with their site's location, at most [`WindowLimits::calls`], the rest
//! counted), and those of the polls still open on each thread.
//!
//! ```
//! use fdr_format::window::calls;
//! use fdr_format::{block_preamble, function_record, BlockStart, FileHeader, FnKind};
//! use fdr_format::BLOCK_PREAMBLE_AFTER_EXTENTS;
//!
//! // Thread 7's window starts at tick 1000, inside a call of function 1 that is not in it.
//! let mut log = FileHeader { cycle_frequency: 1_000_000_000, ..FileHeader::default() }
//!     .encode()
//!     .to_vec();
//! let records = [(2, FnKind::Enter, 100), (2, FnKind::Exit, 200), (1, FnKind::Exit, 50)];
//! let start = BlockStart { tid: 7, wall_secs: 0, wall_micros: 0, pid: 1, cpu: 0, tsc: 1000 };
//! for w in block_preamble(&start, BLOCK_PREAMBLE_AFTER_EXTENTS as u64 + 8 * records.len() as u64) {
//!     log.extend_from_slice(&w.to_le_bytes());
//! }
//! for (id, kind, delta) in records {
//!     log.extend_from_slice(&function_record(id, kind, delta).to_le_bytes());
//! }
//!
//! let w = calls(&log[..])?;
//! assert_eq!(w.calls.len(), 2);
//! let (outer, inner) = (&w.calls[0], &w.calls[1]);
//! assert_eq!((outer.function, outer.start_ns, outer.duration_ns), (1, 0, 350));
//! assert!(outer.inferred_start && outer.parent.is_none());
//! assert_eq!((inner.function, inner.start_ns, inner.duration_ns), (2, 100, 200));
//! assert_eq!(inner.parent, Some(0));
//! assert_eq!(outer.self_ns, 150);
//! assert_eq!(w.function_name(2), "#2"); // no function table in this log
//! # Ok::<(), fdr_format::FormatError>(())
//! ```

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::ControlFlow;

use crate::awaits::{AwaitTies, TaskAwait};
use crate::events::{EventDecoder, LogInfo, ThreadStats};
use crate::first_pass::{origin, unix_ns, window_stacks};
use crate::limits::{MAX_WINDOW_ARG_VALUES, MAX_WINDOW_CALLS};
use crate::replay::{log_end, replay, Replay, ReplayError};
use crate::sink::{AwaitSeen, Close, Enter, Exit, PollSeen, Sink, TaskSeen, WindowStart, GO_ON};
use crate::tasks::{TaskSpan, Tasks};
use crate::units::ticks_to_ns;
use crate::{FormatError, FunctionInfo, ReasonInfo, RunInfo, TaskKind};

/// How much a window may hold; past a limit, [`calls_with`] stops with an error naming it.
///
/// ```
/// use fdr_format::limits::MAX_WINDOW_CALLS;
/// use fdr_format::window::WindowLimits;
/// let l = WindowLimits::default();
/// assert_eq!(l.calls, MAX_WINDOW_CALLS);
/// let small = WindowLimits { calls: 10_000, ..WindowLimits::default() };
/// assert_eq!(small.calls, 10_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowLimits {
    /// Calls, all threads together (default [`MAX_WINDOW_CALLS`]).
    pub calls: usize,
    /// Argument values, all calls together (default [`MAX_WINDOW_ARG_VALUES`]).
    pub arg_values: usize,
}

impl Default for WindowLimits {
    fn default() -> WindowLimits {
        WindowLimits {
            calls: MAX_WINDOW_CALLS,
            arg_values: MAX_WINDOW_ARG_VALUES,
        }
    }
}

/// One call of a window.
///
/// ```
/// use fdr_format::window::WindowCall;
/// let c = WindowCall { function: 3, thread: 7, start_ns: 100, duration_ns: 50, self_ns: 50,
///                      inferred_start: false, open_at_end: false, parent: None, args: vec![],
///                      start_tsc: 1100, end_tsc: 1150, task: None };
/// assert_eq!(c.end_ns(), 150);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowCall {
    /// Function id (its name: [`WindowCalls::function_name`]).
    pub function: u32,
    /// Thread id, as in the log's blocks.
    pub thread: i32,
    /// Start, ns after [`WindowCalls::origin_tsc`] (the thread's window start for an inferred
    /// call): `fdr calls`' `start_ns`.
    pub start_ns: u64,
    /// Duration, ns (for an open call, its time so far: a lower bound).
    pub duration_ns: u64,
    /// Duration less its callees' durations, ns.
    pub self_ns: u64,
    /// Entered before the window started: the entry is inferred at the thread's window start.
    pub inferred_start: bool,
    /// Still running when the window was written: closed at the window's end.
    pub open_at_end: bool,
    /// The caller: its index in [`WindowCalls::calls`], always before this call's.
    pub parent: Option<usize>,
    /// Logged arguments, at most [`crate::limits::MAX_CALL_ARGS`] (names: [`WindowCalls::arg_name`]).
    pub args: Vec<u64>,
    /// The start's timestamp, ticks (as the log has it; `start_ns` is from it).
    pub start_tsc: u64,
    /// The end's timestamp, ticks: before the start when time went backwards on the thread
    /// in between (the duration is then 0; `fdr calls` lists such a call only in its caller's
    /// tree, not at the top with the others, while `fdr export` has it).
    pub end_tsc: u64,
    /// For a poll of an async task, the task it served, when the log says (a poll event right
    /// after its exit: polls that were kept, since the runtime writes them).
    pub task: Option<u64>,
}

impl WindowCall {
    /// The end, ns after the origin: start plus duration.
    ///
    /// ```
    /// use fdr_format::window::WindowCall;
    /// let c = WindowCall { function: 3, thread: 7, start_ns: u64::MAX - 1, duration_ns: 5,
    ///                      self_ns: 5, inferred_start: false, open_at_end: true, parent: None,
    ///                      args: vec![], start_tsc: 0, end_tsc: 5, task: None };
    /// assert_eq!(c.end_ns(), u64::MAX); // saturated
    /// ```
    pub fn end_ns(&self) -> u64 {
        self.start_ns.saturating_add(self.duration_ns)
    }
}

/// One async task of a window: one call of an instrumented `async fn`, from its creation to
/// its completion or cancellation, on whichever threads those happened (its polls are calls of
/// the same function in [`WindowCalls::calls`]; the log does not say which task a poll served).
///
/// ```
/// use fdr_format::window::WindowTask;
/// let t = WindowTask { function: 3, task: 9, thread: 7, end_thread: 8, start_ns: 10,
///                      duration_ns: 5, inferred_start: false, open_at_end: false,
///                      cancelled: false, parent: None, start_tsc: 10, end_tsc: 15 };
/// assert_eq!(t.start_ns + t.duration_ns, 15);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowTask {
    /// The async function's id.
    pub function: u32,
    /// The task's process-unique id.
    pub task: u64,
    /// The thread that created it (the one that ended it, when its creation is before the
    /// window).
    pub thread: i32,
    /// The thread that completed or cancelled it (the creator, when it was still running).
    pub end_thread: i32,
    /// Creation, ns after [`WindowCalls::origin_tsc`] (for an inferred start, the window start
    /// of the thread that ended it).
    pub start_ns: u64,
    /// Creation to completion or cancellation, ns (to the log's end when still running).
    pub duration_ns: u64,
    /// Created before the window.
    pub inferred_start: bool,
    /// Still running when the window was written.
    pub open_at_end: bool,
    /// Dropped before completing.
    pub cancelled: bool,
    /// The call that created it (open on the creating thread then): its index in
    /// [`WindowCalls::calls`].
    pub parent: Option<usize>,
    /// The creation's timestamp, ticks.
    pub start_tsc: u64,
    /// The end's timestamp, ticks.
    pub end_tsc: u64,
}

/// One wait of a task at an await site, tied to its task.
///
/// ```
/// use fdr_format::window::WindowAwait;
/// let a = WindowAwait { task: 9, function: 3, site: 12, at: "src/app.rs:20:9".into(),
///                       thread: 7, start_ns: 40, waited_ns: 60, polls: 1, dropped: false };
/// assert_eq!(a.start_ns + a.waited_ns, 100);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowAwait {
    /// The task that waited.
    pub task: u64,
    /// The async function's id.
    pub function: u32,
    /// The await site's id in the function table.
    pub site: u32,
    /// Where the site is, `FILE:LINE:COLUMN` (`#SITE` for an id the table does not have).
    pub at: String,
    /// The thread that ended the wait (its poll, or the task's drop).
    pub thread: i32,
    /// The wait's start (the poll that found the awaited future pending), ns after
    /// [`WindowCalls::origin_tsc`] (0 when that is later).
    pub start_ns: u64,
    /// How long it waited, ns.
    pub waited_ns: u64,
    /// Polls of the await that returned `Pending`.
    pub polls: u32,
    /// Ended by dropping the task.
    pub dropped: bool,
}

/// A window's calls, with what is needed to name and date them.
///
/// ```
/// use fdr_format::window::WindowCalls;
/// let w = WindowCalls::default();
/// assert!(w.calls.is_empty());
/// assert_eq!(w.function_name(5), "#5");
/// assert_eq!(w.arg_name(5, 0), "arg0");
/// assert_eq!(w.thread_name(7), "");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowCalls {
    /// Time zero, in ticks: the earliest window start of a thread with calls (0 when there is
    /// none).
    pub origin_tsc: u64,
    /// The Unix time of the origin, ns, as `fdr export` computes it: the run record's wall
    /// clock at the start of recording plus the ticks from then to the origin; in a log without
    /// a run record, the wall-clock marker of the block that opened the earliest window
    /// (microseconds); `None` when neither is there (no run record and no call).
    pub origin_unix_ns: Option<u64>,
    /// Ticks per second of the log's timestamps (from its header).
    pub ticks_per_second: u64,
    /// Why the log was written, if it says.
    pub reason: Option<ReasonInfo>,
    /// The log's run record (program, pid, when the log was taken ...), if it has one.
    pub run: Option<RunInfo>,
    /// The name of every function the calls use, by id: from the log's function table (its
    /// last entry for the id), or `#<id>` when the table has no name for it, as `fdr` prints.
    pub functions: BTreeMap<u32, String>,
    /// The argument names the function table gives the functions whose calls have arguments.
    pub arg_names: BTreeMap<u32, Vec<String>>,
    /// The threads with calls or tasks, in order of their first block: (thread id, name; empty
    /// if the log names none).
    pub threads: Vec<(i32, String)>,
    /// Every call, in the order `fdr export` gives them: the order in which calls are entered
    /// in the log (threads interleaved as their blocks are), a thread's inferred calls at its
    /// window start, outermost first. A caller always comes before its callees, and on one
    /// thread a call before those entered after it.
    pub calls: Vec<WindowCall>,
    /// Every async task with an end in the window, in the order of the task ids (as `fdr`
    /// lists them). At most [`WindowLimits::calls`].
    pub tasks: Vec<WindowTask>,
    /// The waits at await sites tied to a task, in the order they ended on each thread (threads
    /// interleaved as their blocks are). At most [`WindowLimits::calls`]: those past it are
    /// counted in [`WindowCalls::awaits_left_out`].
    pub awaits: Vec<WindowAwait>,
    /// Waits not kept: past the limit, or not tied to a task (their poll was not kept).
    pub awaits_left_out: u64,
}

impl WindowCalls {
    /// The function's name: [`WindowCalls::functions`], or `#<id>`.
    ///
    /// ```
    /// let mut w = fdr_format::window::WindowCalls::default();
    /// w.functions.insert(2, "app::run".into());
    /// assert_eq!(w.function_name(2), "app::run");
    /// assert_eq!(w.function_name(3), "#3");
    /// ```
    pub fn function_name(&self, id: u32) -> Cow<'_, str> {
        match self.functions.get(&id) {
            Some(n) => Cow::Borrowed(n),
            None => Cow::Owned(format!("#{id}")),
        }
    }

    /// The name of argument `i` of function `id`: from the table, else `arg<i>`, as `fdr`
    /// names it.
    ///
    /// ```
    /// let mut w = fdr_format::window::WindowCalls::default();
    /// w.arg_names.insert(2, vec!["len".into()]);
    /// assert_eq!(w.arg_name(2, 0), "len");
    /// assert_eq!(w.arg_name(2, 1), "arg1");
    /// ```
    pub fn arg_name(&self, id: u32, i: usize) -> Cow<'_, str> {
        match self.arg_names.get(&id).and_then(|a| a.get(i)) {
            Some(n) => Cow::Borrowed(n),
            None => Cow::Owned(format!("arg{i}")),
        }
    }

    /// The thread's name, empty if the log names none (or the thread has no calls).
    ///
    /// ```
    /// let mut w = fdr_format::window::WindowCalls::default();
    /// w.threads.push((7, "worker".into()));
    /// assert_eq!(w.thread_name(7), "worker");
    /// assert_eq!(w.thread_name(8), "");
    /// ```
    pub fn thread_name(&self, tid: i32) -> &str {
        self.threads
            .iter()
            .find(|t| t.0 == tid)
            .map_or("", |t| t.1.as_str())
    }

    /// Ticks to nanoseconds at the log's rate, as every time here is converted.
    ///
    /// ```
    /// let w = fdr_format::window::WindowCalls { ticks_per_second: 3_000_000_000, ..Default::default() };
    /// assert_eq!(w.ns(3_000), 1_000);
    /// assert_eq!(w.ns(2), 0); // rounded down
    /// ```
    pub fn ns(&self, ticks: u64) -> u64 {
        ticks_to_ns(ticks, self.ticks_per_second)
    }
}

/// The calls of the window `log` holds, within the default [`WindowLimits`].
///
/// ```
/// let log = fdr_format::FileHeader::default().encode();
/// let w = fdr_format::window::calls(&log[..])?;
/// assert!(w.calls.is_empty() && w.origin_unix_ns.is_none());
/// # Ok::<(), fdr_format::FormatError>(())
/// ```
pub fn calls(log: &[u8]) -> Result<WindowCalls, FormatError> {
    calls_with(log, &WindowLimits::default())
}

/// The calls of the window `log` holds, within `limits`, in two reads of it. An error is the
/// log's (with the byte offset of the record where it went wrong), or a limit passed (at the
/// record that passed it).
///
/// ```
/// use fdr_format::window::{calls_with, WindowLimits};
/// use fdr_format::{block_preamble, function_record, BlockStart, FileHeader, FnKind, BLOCK_PREAMBLE_AFTER_EXTENTS};
/// let mut log = FileHeader::default().encode().to_vec();
/// let start = BlockStart { tid: 7, wall_secs: 0, wall_micros: 0, pid: 1, cpu: 0, tsc: 0 };
/// for w in block_preamble(&start, BLOCK_PREAMBLE_AFTER_EXTENTS as u64 + 16) {
///     log.extend_from_slice(&w.to_le_bytes());
/// }
/// for id in [1, 2] {
///     log.extend_from_slice(&function_record(id, FnKind::Enter, 10).to_le_bytes());
/// }
/// let e = calls_with(&log[..], &WindowLimits { calls: 1, ..WindowLimits::default() }).unwrap_err();
/// assert!(e.message.contains("more than 1 calls"), "{e}");
/// assert_eq!(calls_with(&log[..], &WindowLimits::default())?.calls.len(), 2);
/// # Ok::<(), fdr_format::FormatError>(())
/// ```
pub fn calls_with(log: &[u8], limits: &WindowLimits) -> Result<WindowCalls, FormatError> {
    let stacks = window_stacks(&mut EventDecoder::new(log)?)?;
    let mut dec = EventDecoder::new(log)?;
    let mut c = Collector::new(*limits);
    let how = Replay {
        initial: &stacks,
        ..Replay::default()
    };
    replay(&mut dec, &mut c, &how).map_err(|s| match s {
        ReplayError::Log(e) => e,
        ReplayError::Sink { error, offset } => FormatError::new(offset, error.to_string()),
    })?;
    c.finish(dec.info(), dec.threads())
}

/// A limit of [`WindowLimits`] that a window passed: the [`Collector`]'s error.
///
/// ```
/// use fdr_format::window::LimitPassed;
/// let e = LimitPassed::Calls(10);
/// assert!(e.to_string().starts_with("the window holds more than 10 calls"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitPassed {
    /// More calls than [`WindowLimits::calls`] (the limit).
    Calls(usize),
    /// More argument values than [`WindowLimits::arg_values`].
    ArgValues(usize),
    /// More tasks than [`WindowLimits::calls`].
    Tasks(usize),
}

impl fmt::Display for LimitPassed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitPassed::Calls(n) => write!(
                f,
                "the window holds more than {n} calls, the limit of this reader \
                 (fdr_format::window::WindowLimits::calls)"
            ),
            LimitPassed::ArgValues(n) => write!(
                f,
                "the window's calls hold more than {n} argument values, the limit of this \
                 reader (fdr_format::window::WindowLimits::arg_values)"
            ),
            LimitPassed::Tasks(n) => write!(
                f,
                "the window holds more than {n} tasks, the limit of this reader \
                 (fdr_format::window::WindowLimits::calls)"
            ),
        }
    }
}

impl std::error::Error for LimitPassed {}

/// A call while the log is read: times in ticks.
struct Rec {
    id: u32,
    thread: u32,
    start: u64,
    end: u64,
    self_ticks: u64,
    inferred: bool,
    open: bool,
    /// The caller's index in [`Collector::recs`].
    caller: Option<u32>,
    args: Vec<u64>,
    /// The task this poll served.
    task: Option<u64>,
}

#[derive(Default)]
struct Thread {
    /// The calls entered and still open, bottom first: their indices in [`Collector::recs`].
    stack: Vec<u32>,
    started: bool,
    /// The call of the thread's last exit.
    last_exit: Option<u32>,
}

/// The sink that keeps a window's calls and tasks, in a replay that enters the calls open at
/// each window's start there ([`Replay::initial`], from [`crate::first_pass`]): [`calls_with`]
/// is the two passes into one. A program with its own sinks beside it (a filter in front,
/// another analysis with [`crate::sink::Both`]) replays into one itself and calls
/// [`Collector::finish`]. Behind a sink that cuts calls (a filter that cuts them at the start
/// of its range enters them there, inferred), every call must still be entered before its
/// exit.
///
/// ```
/// use fdr_format::events::EventDecoder;
/// use fdr_format::first_pass::window_stacks;
/// use fdr_format::replay::{replay, Replay};
/// use fdr_format::window::{Collector, WindowLimits};
/// let log = fdr_format::FileHeader::default().encode();
/// let stacks = window_stacks(&mut EventDecoder::new(&log[..])?)?;
/// let mut dec = EventDecoder::new(&log[..])?;
/// let mut c = Collector::new(WindowLimits::default());
/// let how = Replay { initial: &stacks, ..Replay::default() };
/// replay(&mut dec, &mut c, &how).map_err(|e| e.into_log().unwrap())?;
/// let w = c.finish(dec.info(), dec.threads())?;
/// assert!(w.calls.is_empty());
/// # Ok::<(), fdr_format::FormatError>(())
/// ```
pub struct Collector {
    limits: WindowLimits,
    recs: Vec<Rec>,
    ts: Vec<Thread>,
    arg_values: usize,
    /// The async tasks' two ends, matched.
    tasks: Tasks,
    /// The tasks whose two ends were read, with the call that created each.
    spans: Vec<(TaskSpan, Option<u32>)>,
    /// Tasks waiting for their end: the call open on the creating thread at the creation.
    created_in: HashMap<u64, u32>,
    /// Waits at await sites, tied to their tasks as the poll events come.
    ties: AwaitTies,
    awaits: Vec<TaskAwait>,
    awaits_past_limit: u64,
}

impl Collector {
    /// A collector that holds at most what `limits` says.
    ///
    /// ```
    /// let c = fdr_format::window::Collector::new(Default::default());
    /// # let _ = c;
    /// ```
    pub fn new(limits: WindowLimits) -> Collector {
        Collector {
            limits,
            recs: Vec::new(),
            ts: Vec::new(),
            arg_values: 0,
            // The tasks are bounded by `limits.calls` all together, checked before each event.
            tasks: Tasks::new(usize::MAX),
            spans: Vec::new(),
            created_in: HashMap::new(),
            ties: AwaitTies::default(),
            awaits: Vec::new(),
            awaits_past_limit: 0,
        }
    }

    /// Keeps a wait tied to its task, within the limit.
    fn wait(&mut self, a: TaskAwait) {
        if self.awaits.len() < self.limits.calls {
            self.awaits.push(a);
        } else {
            self.awaits_past_limit += 1;
        }
    }

    fn thread(&mut self, t: u32) -> &mut Thread {
        let t = t as usize;
        if t >= self.ts.len() {
            self.ts.resize_with(t + 1, Thread::default);
        }
        &mut self.ts[t]
    }

    /// A new call record, within the limits.
    fn record(&mut self, rec: Rec) -> Result<u32, LimitPassed> {
        if self.recs.len() >= self.limits.calls.min(u32::MAX as usize) {
            return Err(LimitPassed::Calls(self.limits.calls));
        }
        self.arg_values += rec.args.len();
        if self.arg_values > self.limits.arg_values {
            return Err(LimitPassed::ArgValues(self.limits.arg_values));
        }
        let i = self.recs.len() as u32;
        self.recs.push(rec);
        Ok(i)
    }

    /// The calls in entry order, in nanoseconds, with their names, once the replay of the log
    /// whose tables and threads are `info` and `threads` is over.
    pub fn finish(
        self,
        info: &LogInfo,
        threads: &[ThreadStats],
    ) -> Result<WindowCalls, FormatError> {
        self.finish_at(info, threads, log_end(info, threads))
    }

    /// [`Collector::finish`], the tasks not completed closed at `end` (ticks) rather than at
    /// the log's end: behind a filter whose time range ends before it.
    ///
    /// ```
    /// use fdr_format::events::EventDecoder;
    /// use fdr_format::window::Collector;
    /// let log = fdr_format::FileHeader::default().encode();
    /// let dec = EventDecoder::new(&log[..])?;
    /// let w = Collector::new(Default::default()).finish_at(dec.info(), dec.threads(), 500)?;
    /// assert!(w.tasks.is_empty());
    /// # Ok::<(), fdr_format::FormatError>(())
    /// ```
    pub fn finish_at(
        mut self,
        info: &LogInfo,
        threads: &[ThreadStats],
        end: u64,
    ) -> Result<WindowCalls, FormatError> {
        let mut f = Finishing::new(info, threads);
        let calls = self.calls(&mut f);
        let spans = self.task_spans(end);
        let tasks = self.tasks(&spans, &mut f);
        let shown = self.threads_shown(&spans, info, &f);
        let awaits = self
            .awaits
            .iter()
            .map(|a| WindowAwait {
                task: a.task,
                function: a.event.function,
                site: a.event.site,
                at: f
                    .table
                    .get(&a.event.site)
                    .map_or_else(|| format!("#{}", a.event.site), |s| s.location()),
                thread: f.tid(a.thread),
                start_ns: f.ns(a.start().saturating_sub(f.origin)),
                waited_ns: f.ns(a.event.waited),
                polls: a.event.polls,
                dropped: a.event.dropped,
            })
            .collect();
        Ok(WindowCalls {
            origin_tsc: f.origin,
            origin_unix_ns: unix_ns(info, threads, f.origin),
            ticks_per_second: f.freq,
            reason: info.reason.clone(),
            run: info.run.clone(),
            functions: f.functions,
            arg_names: f.arg_names,
            threads: shown,
            calls,
            tasks,
            awaits,
            awaits_left_out: self.awaits_past_limit + self.ties.untied(),
        })
    }

    /// The calls of the records, in the order they were entered, which take their arguments.
    fn calls(&mut self, f: &mut Finishing) -> Vec<WindowCall> {
        let mut calls = Vec::with_capacity(self.recs.len());
        for rec in &mut self.recs {
            f.name(rec.id);
            if !rec.args.is_empty() {
                f.name_args(rec.id);
            }
            calls.push(WindowCall {
                function: rec.id,
                thread: f.tid(rec.thread),
                start_ns: f.ns(rec.start.saturating_sub(f.origin)),
                duration_ns: f.ns(rec.end.saturating_sub(rec.start)),
                self_ns: f.ns(rec.self_ticks),
                inferred_start: rec.inferred,
                open_at_end: rec.open,
                parent: rec.caller.map(|c| c as usize),
                args: std::mem::take(&mut rec.args),
                start_tsc: rec.start,
                end_tsc: rec.end,
                task: rec.task,
            });
        }
        calls
    }

    /// The tasks whose two ends were read, then those cut by the window: those whose creation
    /// is missing (dated at the start of the window of the thread that ended them) and those
    /// never completed (closed at `end`, under the call that created them).
    fn task_spans(&mut self, end: u64) -> Vec<(TaskSpan, Option<u32>)> {
        let mut spans = std::mem::take(&mut self.spans);
        for s in std::mem::take(&mut self.tasks).finish(end) {
            let caller = if s.open {
                self.created_in.get(&s.task).copied()
            } else {
                None
            };
            spans.push((s, caller));
        }
        spans
    }

    /// The tasks of `spans`, by id; the same id twice (a hostile log) in a fixed order.
    fn tasks(&self, spans: &[(TaskSpan, Option<u32>)], f: &mut Finishing) -> Vec<WindowTask> {
        let mut tasks: Vec<WindowTask> = spans
            .iter()
            .map(|(s, caller)| {
                f.name(s.function);
                WindowTask {
                    function: s.function,
                    task: s.task,
                    thread: f.tid(s.start_thread),
                    end_thread: f.tid(s.end_thread),
                    start_ns: f.ns(s.start.saturating_sub(f.origin)),
                    duration_ns: f.ns(s.end.saturating_sub(s.start)),
                    inferred_start: s.inferred,
                    open_at_end: s.open,
                    cancelled: s.cancelled,
                    parent: caller.map(|c| c as usize),
                    start_tsc: s.start,
                    end_tsc: s.end,
                }
            })
            .collect();
        tasks.sort_unstable_by_key(|t| {
            (
                t.task,
                t.start_tsc,
                t.end_tsc,
                t.thread,
                t.end_thread,
                t.function,
                t.cancelled,
                t.inferred_start,
                t.open_at_end,
                t.parent,
            )
        });
        tasks
    }

    /// The threads with calls or tasks, in order of their first block: (id, name or empty).
    fn threads_shown(
        &self,
        spans: &[(TaskSpan, Option<u32>)],
        info: &LogInfo,
        f: &Finishing,
    ) -> Vec<(i32, String)> {
        let mut names: HashMap<i32, &str> = HashMap::new();
        for t in &info.threads {
            if !t.name.is_empty() {
                names.insert(t.tid, &t.name);
            }
        }
        self.ts
            .iter()
            .enumerate()
            .filter(|(t, th)| {
                let t = *t as u32;
                th.started
                    || spans
                        .iter()
                        .any(|(s, _)| s.start_thread == t || s.end_thread == t)
            })
            .map(|(t, _)| {
                let tid = f.tid(t as u32);
                (
                    tid,
                    names.get(&tid).map_or_else(String::new, |n| n.to_string()),
                )
            })
            .collect()
    }
}

/// What a finished window's calls and tasks take from the log: times in nanoseconds, thread
/// ids, and the names of the functions used, gathered as they are met.
struct Finishing<'a> {
    threads: &'a [ThreadStats],
    table: HashMap<u32, &'a FunctionInfo>,
    freq: u64,
    /// Time zero, in ticks.
    origin: u64,
    functions: BTreeMap<u32, String>,
    arg_names: BTreeMap<u32, Vec<String>>,
}

impl<'a> Finishing<'a> {
    fn new(info: &'a LogInfo, threads: &'a [ThreadStats]) -> Finishing<'a> {
        Finishing {
            threads,
            table: info.functions.iter().map(|f| (f.id, f)).collect(),
            freq: info.header.cycle_frequency,
            origin: origin(threads),
            functions: BTreeMap::new(),
            arg_names: BTreeMap::new(),
        }
    }

    fn ns(&self, ticks: u64) -> u64 {
        ticks_to_ns(ticks, self.freq)
    }

    /// The thread id of thread index `t` (0 if the log has no such thread).
    fn tid(&self, t: u32) -> i32 {
        self.threads.get(t as usize).map_or(0, |s| s.tid)
    }

    /// Names function `id` in [`WindowCalls::functions`], as the table does, else `#<id>`.
    fn name(&mut self, id: u32) {
        let table = &self.table;
        self.functions
            .entry(id)
            .or_insert_with(|| match table.get(&id) {
                Some(f) if !f.name.is_empty() => f.name.clone(),
                _ => format!("#{id}"),
            });
    }

    /// The argument names of function `id` in [`WindowCalls::arg_names`], as the table gives
    /// them.
    fn name_args(&mut self, id: u32) {
        let table = &self.table;
        self.arg_names
            .entry(id)
            .or_insert_with(|| table.get(&id).map_or_else(Vec::new, |f| f.args.clone()));
    }
}

impl Collector {
    /// Keeps the call `e` enters: its index in [`Collector::recs`].
    fn open(&mut self, e: &Enter<'_>) -> Result<u32, LimitPassed> {
        let Enter {
            thread,
            depth,
            frame: f,
            args,
        } = *e;
        let th = self.thread(thread);
        th.stack.truncate(depth);
        let caller = depth.checked_sub(1).and_then(|d| th.stack.get(d)).copied();
        let i = self.record(Rec {
            id: f.id,
            thread,
            start: f.start,
            end: f.start,
            self_ticks: 0,
            inferred: f.inferred,
            open: false,
            caller,
            args: args.to_vec(),
            task: None,
        })?;
        self.thread(thread).stack.push(i);
        Ok(i)
    }
}

impl Sink for Collector {
    type Error = LimitPassed;

    fn start(&mut self, s: &WindowStart) -> Result<ControlFlow<()>, LimitPassed> {
        self.thread(s.thread).started = true;
        Ok(GO_ON)
    }

    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, LimitPassed> {
        self.open(e)?;
        Ok(GO_ON)
    }

    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, LimitPassed> {
        let Exit {
            thread,
            depth,
            frame: f,
            end,
            how,
            args,
        } = *e;
        // A sink in front (a filter) may end a call it did not enter: it is entered now.
        let th = self.thread(thread);
        let entered = th.stack.get(depth).copied().filter(|&i| {
            let r = &self.recs[i as usize];
            r.id == f.id && r.start == f.start
        });
        let i = match entered {
            Some(i) => i,
            None => self.open(&Enter {
                thread,
                depth,
                frame: f,
                args,
            })?,
        };
        self.ties.exit(thread, f.id);
        let th = self.thread(thread);
        th.stack.truncate(depth);
        th.last_exit = Some(i);
        if let Some(r) = self.recs.get_mut(i as usize) {
            r.end = end;
            r.self_ticks = f.self_ticks(end);
            r.open = how == Close::WindowEnd;
        }
        Ok(GO_ON)
    }

    fn awaited(&mut self, a: &AwaitSeen) -> Result<ControlFlow<()>, LimitPassed> {
        if let Some(a) = self.ties.awaited(a) {
            self.wait(a);
        }
        Ok(GO_ON)
    }

    fn polled(&mut self, p: &PollSeen) -> Result<ControlFlow<()>, LimitPassed> {
        for a in self.ties.polled(p) {
            self.wait(a);
        }
        let last = self.thread(p.thread).last_exit;
        if let Some(r) = last.and_then(|i| self.recs.get_mut(i as usize)) {
            if r.id == p.id {
                r.task = Some(p.task);
            }
        }
        Ok(GO_ON)
    }

    fn task(&mut self, t: &TaskSeen) -> Result<ControlFlow<()>, LimitPassed> {
        let TaskSeen {
            thread,
            tsc,
            window,
            event: ev,
        } = *t;
        self.ties.task(t);
        if self.spans.len() + self.tasks.waiting() >= self.limits.calls {
            return Err(LimitPassed::Tasks(self.limits.calls));
        }
        // The call open on the thread makes it (none between calls, or before the window).
        let here = self.thread(thread).stack.last().copied();
        let created = ev.kind == TaskKind::Created;
        let span = self
            .tasks
            .event(thread, tsc, window, ev)
            .map_err(|_| LimitPassed::Tasks(self.limits.calls))?;
        match (span, created) {
            // Created after its end was read: made in the call open now.
            (Some(span), true) => self.spans.push((span, here)),
            (Some(span), false) => {
                let caller = self.created_in.remove(&ev.task);
                self.spans.push((span, caller));
            }
            // Waiting for its end (a later creation of the same id replaces it).
            (None, true) => match here {
                Some(c) => {
                    self.created_in.insert(ev.task, c);
                }
                None => {
                    self.created_in.remove(&ev.task);
                }
            },
            (None, false) => {}
        }
        Ok(GO_ON)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_CALL_DEPTH;
    use crate::replay::too_deep;
    use crate::{
        block_preamble, function_record, lead_block, meta, meta_bytes, task_payload, BlockStart,
        Extension, FileHeader, FnKind, LeadStart, Reason, RunInfo, TaskKind, ThreadInfo,
        BLOCK_PREAMBLE_AFTER_EXTENTS,
    };
    use proptest::prelude::*;

    /// One record of a block, as written.
    #[derive(Clone, Debug)]
    enum It {
        /// A function record: id, kind, delta.
        F(u32, FnKind, u32),
        /// A call argument.
        Arg(u64),
        /// A migration: cpu, full timestamp.
        Cpu(u16, u64),
        /// A TSC wrap: full timestamp.
        Wrap(u64),
        /// A task event, with its delta.
        Task(u32, u64, i32),
    }

    /// A log under construction, made with the crate's own encoders.
    struct Log {
        freq: u64,
        exts: Vec<Extension>,
        lead: (i32, u64),
        blocks: Vec<u8>,
    }

    impl Log {
        fn new(freq: u64) -> Log {
            Log {
                freq,
                exts: Vec::new(),
                lead: (0, 0),
                blocks: Vec::new(),
            }
        }

        fn function(&mut self, id: u32, name: &str, args: &[&str]) {
            self.exts.push(Extension::Function(FunctionInfo {
                id,
                name: name.into(),
                args: args.iter().map(|a| a.to_string()).collect(),
                ..FunctionInfo::default()
            }));
        }

        fn thread(&mut self, tid: i32, name: &str) {
            self.exts.push(Extension::Thread(ThreadInfo {
                tid,
                name: name.into(),
                records_dropped: 0,
            }));
        }

        fn block_at(&mut self, tid: i32, tsc: u64, wall: (i64, i32), items: &[It]) {
            let mut body = Vec::new();
            for it in items {
                match *it {
                    It::F(id, kind, delta) => {
                        body.extend_from_slice(&function_record(id, kind, delta).to_le_bytes())
                    }
                    It::Arg(v) => body.extend_from_slice(&meta_bytes(meta::call_argument(v))),
                    It::Cpu(cpu, tsc) => {
                        body.extend_from_slice(&meta_bytes(meta::new_cpu_id(cpu, tsc)))
                    }
                    It::Wrap(tsc) => body.extend_from_slice(&meta_bytes(meta::tsc_wrap(tsc))),
                    It::Task(id, task, delta) => {
                        body.extend_from_slice(&meta_bytes(meta::custom_event(16, delta)));
                        for w in task_payload(TaskKind::Created, id, task) {
                            body.extend_from_slice(&w.to_le_bytes());
                        }
                    }
                }
            }
            let start = BlockStart {
                tid,
                wall_secs: wall.0,
                wall_micros: wall.1,
                pid: 1,
                cpu: 0,
                tsc,
            };
            let extents = (BLOCK_PREAMBLE_AFTER_EXTENTS + body.len()) as u64;
            for w in block_preamble(&start, extents) {
                self.blocks.extend_from_slice(&w.to_le_bytes());
            }
            self.blocks.extend_from_slice(&body);
        }

        fn block(&mut self, tid: i32, tsc: u64, items: &[It]) {
            self.block_at(tid, tsc, (0, 0), items);
        }

        fn finish(&self) -> Vec<u8> {
            let header = FileHeader {
                cycle_frequency: self.freq,
                ..FileHeader::default()
            };
            let mut out = header.encode().to_vec();
            let start = LeadStart {
                tid: self.lead.0,
                pid: 1,
                start_secs: 0,
                start_nanos: 1000,
                start_tsc: self.lead.1,
            };
            out.extend_from_slice(&lead_block(&start, &self.exts));
            out.extend_from_slice(&self.blocks);
            out
        }
    }

    fn e(id: u32, d: u32) -> It {
        It::F(id, FnKind::Enter, d)
    }
    fn x(id: u32, d: u32) -> It {
        It::F(id, FnKind::Exit, d)
    }

    /// (function, thread, start, duration, self, inferred, open, parent), args left out.
    type Row = (u32, i32, u64, u64, u64, bool, bool, Option<usize>);

    fn rows(w: &WindowCalls) -> Vec<Row> {
        w.calls
            .iter()
            .map(|c| {
                (
                    c.function,
                    c.thread,
                    c.start_ns,
                    c.duration_ns,
                    c.self_ns,
                    c.inferred_start,
                    c.open_at_end,
                    c.parent,
                )
            })
            .collect()
    }

    fn run_info(end_tsc: u64) -> RunInfo {
        RunInfo {
            ticks_per_second: 1_000_000_000,
            pid: 1,
            program: "test".into(),
            end_tsc,
            ..RunInfo::default()
        }
    }

    #[test]
    fn the_mid_stack_window_of_the_format_docs() {
        // docs/FORMAT.md: the window starts inside main > step; the log is taken at +2000.
        let mut log = Log::new(1_000_000_000);
        log.exts.push(Extension::Run(run_info(3000)));
        log.function(1, "main", &[]);
        log.function(2, "step", &[]);
        log.function(3, "get", &[]);
        log.thread(7, "worker");
        log.block(
            7,
            1000,
            &[
                e(3, 100),
                x(3, 100),
                x(2, 100),
                e(3, 100),
                x(3, 100),
                x(1, 500),
                e(2, 200),
                e(3, 100),
            ],
        );
        let w = calls(&log.finish()[..]).unwrap();
        assert_eq!(
            rows(&w),
            [
                (1, 7, 0, 1000, 600, true, false, None),
                (2, 7, 0, 300, 200, true, false, Some(0)),
                (3, 7, 100, 100, 100, false, false, Some(1)),
                (3, 7, 400, 100, 100, false, false, Some(0)),
                (2, 7, 1200, 800, 100, false, true, None),
                (3, 7, 1300, 700, 700, false, true, Some(4)),
            ]
        );
        assert_eq!((w.origin_tsc, w.ticks_per_second), (1000, 1_000_000_000));
        assert_eq!(w.threads, [(7, "worker".to_string())]);
        assert_eq!(w.function_name(2), "step");
        assert_eq!(w.thread_name(7), "worker");
        // Run record: wall clock 0 at tick 0.
        assert_eq!(w.origin_unix_ns, Some(1000));
    }

    #[test]
    fn exits_below_the_top_unwind_and_tail_exits_close_their_frame() {
        let mut log = Log::new(1_000_000_000);
        log.block(
            5,
            0,
            &[
                e(1, 10),
                e(2, 10),
                e(3, 10),
                x(1, 10), // 3 and 2 unwound at 40
                e(4, 10),
                It::F(4, FnKind::TailExit, 10),
                e(5, 0),
                x(5, 10),
            ],
        );
        let w = calls(&log.finish()[..]).unwrap();
        assert_eq!(
            rows(&w),
            [
                (1, 5, 10, 30, 10, false, false, None),
                (2, 5, 20, 20, 10, false, false, Some(0)),
                (3, 5, 30, 10, 10, false, false, Some(1)),
                (4, 5, 50, 10, 10, false, false, None),
                (5, 5, 60, 10, 10, false, false, None),
            ]
        );
        // No run record, no end: origin from the block's wall clock marker.
        assert_eq!(w.origin_unix_ns, Some(0));
    }

    #[test]
    fn an_exit_without_entry_closes_every_open_call_and_holds_the_earlier_roots() {
        let mut log = Log::new(1_000_000_000);
        log.block(
            5,
            100,
            &[
                e(1, 10), // [110, 130]
                x(1, 20),
                e(2, 10), // [140, 160], unwound by the exit of 9
                e(3, 10), // [150, 160], unwound
                x(9, 10), // 9 inferred [100, 160]
                e(4, 10), // [170, 180]
                x(4, 10),
                x(8, 10), // 8 inferred [100, 190] holding 9 and 4
                x(8, 10), // another 8 [100, 200] holding the first
            ],
        );
        let w = calls(&log.finish()[..]).unwrap();
        assert_eq!(
            rows(&w),
            [
                (8, 5, 0, 100, 10, true, false, None),
                (8, 5, 0, 90, 20, true, false, Some(0)),
                (9, 5, 0, 60, 20, true, false, Some(1)),
                (1, 5, 10, 20, 20, false, false, Some(2)),
                (2, 5, 40, 20, 10, false, false, Some(2)),
                (3, 5, 50, 10, 10, false, false, Some(4)),
                (4, 5, 70, 10, 10, false, false, Some(1)),
            ]
        );
    }

    #[test]
    fn arguments_are_capped_and_a_call_is_entered_when_they_are_all_read() {
        let mut log = Log::new(1_000_000_000);
        log.function(1, "f", &["a", "b"]);
        let mut items = vec![It::F(1, FnKind::EnterArgs, 10)];
        items.extend((0..70).map(It::Arg));
        log.block(5, 0, &items);
        // Another thread's call, read before thread 5's next record: entered first.
        log.block(6, 5, &[e(2, 1), x(2, 1)]);
        log.block(5, 20, &[x(1, 5)]);
        let w = calls(&log.finish()[..]).unwrap();
        assert_eq!(
            rows(&w),
            [
                (2, 6, 6, 1, 1, false, false, None),
                (1, 5, 10, 15, 15, false, false, None),
            ]
        );
        assert_eq!(w.calls[1].args, (0..64).collect::<Vec<u64>>());
        assert_eq!(w.arg_name(1, 1), "b");
        assert_eq!(w.arg_name(1, 2), "arg2");
        assert_eq!(w.arg_names.len(), 1);
        assert_eq!(w.threads, [(5, String::new()), (6, String::new())]);
    }

    #[test]
    fn open_calls_end_when_the_log_was_taken_or_at_the_last_record() {
        let mut log = Log::new(1_000_000_000);
        log.exts.push(Extension::Run(run_info(500)));
        log.block(5, 100, &[e(1, 10), e(2, 10)]);
        log.block(6, 200, &[e(3, 1000)]); // its last record is after end_tsc
        let w = calls(&log.finish()[..]).unwrap();
        assert_eq!(
            rows(&w),
            [
                (1, 5, 10, 390, 10, false, true, None),
                (2, 5, 20, 380, 380, false, true, Some(0)),
                (3, 6, 1100, 0, 0, false, true, None),
            ]
        );
    }

    #[test]
    fn times_are_converted_as_fdr_does_and_the_origin_is_dated() {
        let mut log = Log::new(3_000_000_000);
        log.exts.push(Extension::Run(RunInfo {
            ticks_per_second: 3_000_000_000,
            start_unix_secs: 1_700_000_000,
            start_unix_nanos: 5,
            start_tsc: 10_000,
            ..RunInfo::default()
        }));
        log.exts.push(Extension::Reason(ReasonInfo {
            reason: Reason::SlowCall,
            function: 1,
            ..ReasonInfo::default()
        }));
        // The window starts before the recording did: a negative offset.
        log.block(5, 7_000, &[e(1, 2), e(2, 4), x(2, 4), x(1, 1)]);
        let w = calls(&log.finish()[..]).unwrap();
        // 2 ticks: 0 ns; 6: 2 ns; 4: 1 ns; 9: 3 ns; self 9 - 4 = 5 ticks: 1 ns.
        assert_eq!(
            rows(&w),
            [
                (1, 5, 0, 3, 1, false, false, None),
                (2, 5, 2, 1, 1, false, false, Some(0)),
            ]
        );
        assert_eq!(w.origin_unix_ns, Some(1_700_000_000_000_000_005 - 1_000));
        assert_eq!(w.reason.as_ref().map(|r| r.reason), Some(Reason::SlowCall));
    }

    #[test]
    fn threads_without_function_records_have_no_window() {
        let mut log = Log::new(1_000_000_000);
        log.lead = (8, 0);
        // Thread 8 owns the leading block, and has only a task event before its first call.
        log.block(9, 10, &[It::Task(1, 1, 5)]);
        log.block_at(8, 50, (3, 4), &[It::Task(1, 2, 5)]);
        log.block_at(8, 100, (5, 6), &[e(1, 10), x(1, 10)]);
        let w = calls(&log.finish()[..]).unwrap();
        assert_eq!(rows(&w), [(1, 8, 10, 10, 10, false, false, None)]);
        assert_eq!(w.origin_tsc, 100);
        // Thread 9 has no window, but a task: it is named among the threads.
        assert_eq!(w.threads, [(8, String::new()), (9, String::new())]);
        let tasks: Vec<_> = w
            .tasks
            .iter()
            .map(|t| (t.task, t.thread, t.open_at_end, t.parent))
            .collect();
        assert_eq!(tasks, [(1, 9, true, None), (2, 8, true, None)]);
        // No run record: the wall clock of the block that opened the window.
        assert_eq!(w.origin_unix_ns, Some(5_000_006_000));
    }

    #[test]
    fn time_going_backwards_gives_zero_durations() {
        let mut log = Log::new(1_000_000_000);
        log.block(
            5,
            1000,
            &[
                e(1, 10),
                It::Cpu(1, 400),
                x(1, 100),
                It::Wrap(2000),
                e(2, 0),
            ],
        );
        log.block(5, 600, &[x(2, 50)]);
        let w = calls(&log.finish()[..]).unwrap();
        assert_eq!(
            rows(&w),
            [
                (1, 5, 10, 0, 0, false, false, None),
                (2, 5, 1000, 0, 0, false, false, None),
            ]
        );
    }

    #[test]
    fn limits_are_errors_naming_them() {
        let mut log = Log::new(1_000_000_000);
        let mut items = vec![It::F(1, FnKind::EnterArgs, 10)];
        items.extend((0..10).map(It::Arg));
        items.push(x(1, 1));
        items.push(e(2, 1));
        log.block(5, 0, &items);
        let bytes = log.finish();
        let e = calls_with(
            &bytes[..],
            &WindowLimits {
                arg_values: 9,
                ..WindowLimits::default()
            },
        )
        .unwrap_err();
        assert!(e.message.contains("more than 9 argument values"), "{e}");
        let e = calls_with(
            &bytes[..],
            &WindowLimits {
                calls: 1,
                ..WindowLimits::default()
            },
        )
        .unwrap_err();
        assert!(e.message.contains("more than 1 calls"), "{e}");
        assert_eq!(calls(&bytes[..]).unwrap().calls.len(), 2);
    }

    #[test]
    fn a_log_error_is_the_decoders() {
        let mut log = Log::new(1_000_000_000);
        log.block(5, 0, &[e(1, 10)]);
        let mut bytes = log.finish();
        bytes.truncate(bytes.len() - 4);
        assert!(calls(&bytes[..]).is_err());
    }

    /// A log of one thread: `open` nested entries, then (if `exit`) an exit of a function that
    /// is not open.
    fn deep(open: usize, exit: bool) -> Vec<u8> {
        let mut log = Log::new(1_000_000_000);
        let mut items: Vec<It> = (0..open).map(|_| e(1, 1)).collect();
        if exit {
            items.push(x(2, 1));
        }
        log.block(5, 0, &items);
        log.finish()
    }

    #[test]
    fn stacks_deeper_than_the_limit_are_errors_inferred_calls_included() {
        let enter_at = |i: usize| (32 + 80 + 80 + 8 * i) as u64;
        // Entered calls alone.
        let e = calls(&deep(MAX_CALL_DEPTH + 1, false)[..]).unwrap_err();
        assert_eq!(e, too_deep(enter_at(MAX_CALL_DEPTH)));
        // MAX_CALL_DEPTH entries fit; with the call inferred at the window start under them, the
        // last one does not.
        let e = calls(&deep(MAX_CALL_DEPTH, true)[..]).unwrap_err();
        assert_eq!(e, too_deep(enter_at(MAX_CALL_DEPTH - 1)));
        let w = calls(&deep(MAX_CALL_DEPTH - 1, true)[..]).unwrap();
        assert_eq!(w.calls.len(), MAX_CALL_DEPTH);
        assert_eq!(w.calls[MAX_CALL_DEPTH - 1].parent, Some(MAX_CALL_DEPTH - 2));
        assert_eq!(w.calls[0].parent, None);
        assert!(w.calls[0].inferred_start);
    }

    /// Random records of a few threads, in blocks interleaved in the file: entries (some with
    /// arguments), exits and tail exits of functions that may or may not be open (so windows
    /// start mid-stack and stacks unwind), migrations that may send time backwards, wraps.
    fn arb_log() -> impl Strategy<Value = Vec<u8>> {
        let item = prop_oneof![
            6 => (1u32..6, 0u32..40).prop_map(|(id, d)| vec![e(id, d)]),
            2 => (1u32..6, 0u32..40, 0usize..70).prop_map(|(id, d, n)| {
                let mut v = vec![It::F(id, FnKind::EnterArgs, d)];
                v.extend((0..n as u64).map(It::Arg));
                v
            }),
            6 => (1u32..6, 0u32..40).prop_map(|(id, d)| vec![x(id, d)]),
            1 => (1u32..6, 0u32..40).prop_map(|(id, d)| vec![It::F(id, FnKind::TailExit, d)]),
            1 => (0u64..3000).prop_map(|t| vec![It::Cpu(1, t)]),
            1 => (0u64..3000).prop_map(|t| vec![It::Wrap(t)]),
            1 => (1u64..5, -5i32..20).prop_map(|(task, d)| vec![It::Task(1, task, d)]),
        ];
        let block = (0usize..3, 0u64..2000, prop::collection::vec(item, 0..12));
        (
            prop::collection::vec(block, 0..10),
            prop::option::of(0u64..4000),
            prop::sample::select(vec![1_000_000_000u64, 3_000_000_000, 2_500_000]),
            0usize..3,
        )
            .prop_map(|(blocks, end, freq, lead)| {
                let mut log = Log::new(freq);
                if let Some(end) = end {
                    log.exts.push(Extension::Run(run_info(end)));
                }
                log.lead = ([11, 12, 13][lead], 0);
                for (t, tsc, items) in blocks {
                    let items: Vec<It> = items.into_iter().flatten().collect();
                    log.block([11, 12, 13][t], tsc, &items);
                }
                log.finish()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn callers_come_first_on_their_thread_and_the_inferred_calls_at_the_bottom(
            bytes in arb_log()
        ) {
            let w = calls(&bytes[..]).unwrap();
            for (i, c) in w.calls.iter().enumerate() {
                prop_assert!(c.parent.map_or(true, |p| p < i));
                if let Some(p) = c.parent {
                    prop_assert_eq!(w.calls[p].thread, c.thread);
                    // Entered at the window's start, under every call entered after.
                    prop_assert!(!c.inferred_start || w.calls[p].inferred_start);
                }
            }
        }
    }
}
