//! The filters every analysing command takes: `--thread`, `--function`, `--from`/`--to` (or
//! `--around`) and `--min`.
//!
//! A filtered analysis is the unfiltered analysis of the log that holds only the selected
//! calls:
//!
//! - `--thread TID|NAME` (repeatable) keeps the threads with that id or name; the others'
//!   blocks are skipped unread. Times count from the earliest window start of the threads
//!   kept.
//! - `--from`/`--to` cut every thread's window to that time range, as a recording window
//!   would: calls running at `--from` start there and are marked as inferred, calls running
//!   at `--to` end there and are marked open (their time so far is a lower bound), calls
//!   outside are left out. `--around [MARGIN]` is the range of the call that fired the
//!   trigger of a triggered snapshot, widened by MARGIN on each side.
//! - `--function PATTERN` keeps the calls of matching functions and everything they called;
//!   an outermost matching call becomes a root (its callers are left out).
//! - `--min DURATION` leaves out calls shorter than DURATION (and so the calls they made);
//!   their time counts in their caller's self time.
//!
//! [`Filtered`] applies them to the calls a replay hands it, in that order, and hands the
//! calls kept to another [`Sink`]. Its memory is the replay's: one frame per open call.

use std::ops::ControlFlow;

use fdr_format::events::{EventDecoder, LogInfo, ThreadStats};
use fdr_format::first_pass::origin_of;
use fdr_format::sink::{
    AwaitSeen, Close, CullSeen, Enter, Exit, Frame, LinkSeen, PollSeen, Sink, TaskSeen, ThreadDone,
    WindowStart, WokenSeen,
};

use crate::model::input::Log;
use crate::model::names::{Names, Slots};
use crate::units::TickRate;
use crate::CliError;

/// The filters a command is asked for (`fdr`'s command line reads them into this: see
/// `cli::FilterOptions`), before they are resolved against a log ([`Filter::resolve`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FilterArgs {
    /// Only the threads with this id or name.
    pub thread: Vec<String>,
    /// Only calls of functions whose name matches this [`Pattern`], and the calls they made.
    pub function: Option<String>,
    /// Only what ran from this many nanoseconds on, after the window start.
    pub from: Option<u64>,
    /// Only what ran up to this many nanoseconds after the window start.
    pub to: Option<u64>,
    /// Only what ran during the call that fired the trigger, widened by this many nanoseconds
    /// on each side.
    pub around: Option<u64>,
    /// Leave out calls shorter than this many nanoseconds.
    pub min: Option<u64>,
}

impl FilterArgs {
    /// True when no filter is asked for.
    pub(crate) fn is_empty(&self) -> bool {
        *self == FilterArgs::default()
    }
}

/// A duration as the command line writes it, in nanoseconds: the grammar of
/// [`fdr_format::duration`], shared with `FDR_OPTIONS` and the attribute (`500us`, `1.5ms`,
/// `2s`, `1m`; `0` needs no unit).
pub(crate) fn parse_duration(s: &str) -> Result<u64, String> {
    fdr_format::duration::parse(s).map_err(|e| e.to_string())
}

/// A function-name pattern, read as triggers read one
/// ([`fdr_format::glob::function_matches`]): `*` matches any run of characters, the rest
/// matches itself; the whole name must match, or, without `*`, its end after a `::`; a trait
/// method also goes by `Type::method` and `Trait::method`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pattern(String);

impl Pattern {
    /// The pattern `p`.
    pub(crate) fn new(p: &str) -> Pattern {
        Pattern(p.to_string())
    }

    /// True if `name` matches.
    pub(crate) fn matches(&self, name: &str) -> bool {
        fdr_format::glob::function_matches(&self.0, name)
    }
}

/// The filters of one command, resolved against the log: thread ids and names, function names,
/// and absolute times in ticks.
#[derive(Debug, Default)]
pub(crate) struct Filter {
    threads: Vec<String>,
    function: Option<Pattern>,
    /// `[from, to]`, in ticks.
    range: Option<(u64, u64)>,
    /// Nanoseconds.
    min: Option<u64>,
    names: Names,
    clock: Option<TickRate>,
    /// The earliest window start of the threads kept (ticks): where `--from` and `--to` count
    /// from.
    origin: u64,
}

impl Filter {
    /// No filter.
    pub(crate) fn none() -> Filter {
        Filter::default()
    }

    /// Resolves `args` for `log`: reads the log's tables and window starts first (seeking over
    /// the blocks' contents) when the filters need them.
    pub(crate) fn resolve(args: &FilterArgs, log: &Log) -> Result<Filter, CliError> {
        let mut f = Filter {
            threads: args.thread.clone(),
            function: args.function.as_deref().map(Pattern::new),
            min: args.min,
            ..Filter::default()
        };
        let needs_tables = f.function.is_some()
            || args.from.is_some()
            || args.to.is_some()
            || args.around.is_some()
            || f.min.is_some();
        if !needs_tables {
            return Ok(f);
        }
        let (info, origin) = f.tables_and_origin(log)?;
        let clock = TickRate::new(info.header.cycle_frequency);
        f.clock = Some(clock);
        f.origin = origin;
        let ticks = |ns: u64| fdr_format::units::ns_to_ticks(ns, clock.freq());
        if let Some(margin) = args.around {
            let Some(r) = crate::model::trigger::fired(&info) else {
                let why = info
                    .reason
                    .as_ref()
                    .map_or("it does not say", |r| r.reason.describe());
                return Err(CliError::Usage(format!(
                    "fdr: {}: --around needs a log written by a trigger; this one was not \
                     (why it was written: {why})",
                    log.name()
                )));
            };
            let m = ticks(margin);
            let end = r.start_tsc.saturating_add(r.duration_ticks);
            f.range = Some((r.start_tsc.saturating_sub(m), end.saturating_add(m)));
        } else if args.from.is_some() || args.to.is_some() {
            let from = origin.saturating_add(ticks(args.from.unwrap_or(0)));
            let to = args
                .to
                .map_or(u64::MAX, |t| origin.saturating_add(ticks(t)));
            if to < from {
                return Err(CliError::Usage(format!(
                    "fdr: --to ({}) is before --from ({})",
                    crate::units::human(args.to.unwrap_or(0)),
                    crate::units::human(args.from.unwrap_or(0))
                )));
            }
            f.range = Some((from, to));
        }
        f.names = Names::new(&info);
        if let Some(p) = &f.function {
            let names: Vec<&str> = info.functions.iter().map(|f| f.name.as_str()).collect();
            if !names.iter().any(|n| p.matches(n)) {
                return Err(CliError::Empty {
                    path: log.name().to_string(),
                    what: no_function_matches(&p.0, &names, "log"),
                });
            }
        }
        Ok(f)
    }

    /// The tables of `log`, and time zero of the threads `--thread` keeps: each thread's
    /// blocks are read only until its window starts ([`EventDecoder::starts_only`]).
    fn tables_and_origin(&self, log: &Log) -> Result<(LogInfo, u64), CliError> {
        let dec = starts(log, |dec| self.select_threads(dec))?;
        let info = dec.info().clone();
        // The thread of the file's first block is read whatever `--thread` says.
        let chosen =
            |t: &ThreadStats| self.threads.is_empty() || thread_chosen(&self.threads, t.tid, &info);
        let origin = origin_of(dec.threads(), |_, t| chosen(t)).unwrap_or(0);
        Ok((info, origin))
    }

    /// True if `--function` chooses the function named `name`, or if it is not given.
    pub(crate) fn function_chosen(&self, name: &str) -> bool {
        self.function.as_ref().map_or(true, |p| p.matches(name))
    }

    /// True if `--function` chooses functions.
    pub(crate) fn selects_functions(&self) -> bool {
        self.function.is_some()
    }

    /// True if calls go through a [`Filtered`] sink (a function, time or duration filter).
    pub(crate) fn wraps(&self) -> bool {
        self.function.is_some() || self.range.is_some() || self.min.is_some()
    }

    /// True if the filter must see each thread's inferred frames at its window start (a
    /// replay with a plan): a function filter keeps the calls made inside a matching call, and
    /// a time range keeps a call that was running through its end, neither of which it can know
    /// of an inferred call found at its exit.
    pub(crate) fn needs_plan(&self) -> bool {
        self.function.is_some() || self.range.is_some()
    }

    /// Where the tasks not completed end, in ticks: the range's end when it is before
    /// `log_end` (the log's end), as the calls cut by it end there.
    pub(crate) fn tasks_end(&self, log_end: u64) -> u64 {
        self.range.map_or(log_end, |r| r.1.min(log_end))
    }

    /// The start of the time range, in ticks, if there is one.
    pub(crate) fn range_start(&self) -> Option<u64> {
        self.range.map(|r| r.0)
    }

    /// Makes `dec` skip the blocks of the threads left out.
    pub(crate) fn select_threads<R: std::io::Read>(&self, dec: &mut EventDecoder<R>) {
        if self.threads.is_empty() {
            return;
        }
        let specs = self.threads.clone();
        dec.keep_threads(move |tid, info| thread_chosen(&specs, tid, info));
    }

    /// Checks that the filters selected something, given the threads a pass decoded: that
    /// `--thread` chose a thread with calls, and that `--from` is not past the end of the log.
    pub(crate) fn check_threads(
        &self,
        log: &str,
        threads: &[fdr_format::events::ThreadStats],
        info: &LogInfo,
    ) -> Result<(), CliError> {
        self.check_chosen(log, threads, info)?;
        self.check_range(log, threads, info)
    }

    /// A range that starts after every kept thread's window ended selects nothing: an error
    /// that gives the window's span, rather than an empty report.
    fn check_range(
        &self,
        log: &str,
        threads: &[fdr_format::events::ThreadStats],
        info: &LogInfo,
    ) -> Result<(), CliError> {
        let (Some((from, _)), Some(clock)) = (self.range, self.clock) else {
            return Ok(());
        };
        let taken = info.run.as_ref().map_or(0, |r| r.end_tsc);
        let end = threads
            .iter()
            .filter(|t| t.function_records > 0)
            .map(|t| t.last_tsc)
            .max()
            .unwrap_or(0)
            .max(taken);
        if from <= end {
            return Ok(());
        }
        let rel = |t: u64| crate::units::human(clock.ns(t.saturating_sub(self.origin)));
        Err(CliError::Empty {
            path: log.to_string(),
            what: format!(
                "nothing was recorded from --from {} on: the window (of the threads kept) spans \
                 +0 ns..+{}",
                rel(from),
                rel(end)
            ),
        })
    }

    fn check_chosen(
        &self,
        log: &str,
        threads: &[fdr_format::events::ThreadStats],
        info: &LogInfo,
    ) -> Result<(), CliError> {
        if self.threads.is_empty() || threads.iter().any(|t| t.function_records > 0) {
            return Ok(());
        }
        let names = Names::new(info);
        let mut known: Vec<String> = Vec::new();
        for t in threads {
            let s = if names.has_thread_name(t.tid) {
                format!("{} ({})", t.tid, crate::escape::shown(&names.thread(t.tid)))
            } else {
                t.tid.to_string()
            };
            if !known.contains(&s) {
                known.push(s);
            }
        }
        Err(CliError::Empty {
            path: log.to_string(),
            what: format!(
                "no thread with calls matches --thread {}; the log's threads: {}",
                self.threads
                    .iter()
                    .map(|s| crate::escape::shown(s).into_owned())
                    .collect::<Vec<_>>()
                    .join(", --thread "),
                known.join(", ")
            ),
        })
    }

    /// `sink` behind this filter.
    pub(crate) fn wrap<'a, S: Sink>(&'a self, sink: &'a mut S) -> Filtered<'a, S> {
        Filtered {
            inner: sink,
            f: self,
            slots: Slots::default(),
            matched: Vec::new(),
            threads: Vec::new(),
        }
    }
}

/// The tables of `log` (header, functions, threads, why it was written), read without its
/// calls: each thread's blocks are read only until its window starts.
pub(crate) fn tables(log: &Log) -> Result<LogInfo, CliError> {
    Ok(starts(log, |_| {})?.info().clone())
}

/// A decoder that has read `log` up to each thread's window start, set up by `select` first.
fn starts(
    log: &Log,
    select: impl FnOnce(&mut EventDecoder<std::fs::File>),
) -> Result<EventDecoder<std::fs::File>, CliError> {
    let input = |err| CliError::Input {
        path: log.name().to_string(),
        err,
    };
    let mut dec = log.decoder()?;
    select(&mut dec);
    dec.starts_only();
    while dec.next_event().map_err(input)?.is_some() {}
    Ok(dec)
}

/// True if a `--thread` value names thread `tid`: its id, its name in the log's table (every
/// thread of that name), or the numbered name that tells it from others named alike
/// (`tokio-rt-worker#2`, see [`crate::model::names::thread_names`]).
pub(crate) fn thread_chosen(specs: &[String], tid: i32, info: &LogInfo) -> bool {
    let numbered = || crate::model::names::thread_names(&info.threads);
    specs.iter().any(|s| {
        s.trim().parse::<i32>().ok() == Some(tid)
            || info.threads.iter().any(|t| t.tid == tid && t.name == *s)
            || (s.contains('#') && numbered().get(&tid) == Some(s))
    })
}

/// Where a thread is with respect to the time range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// Nothing in the range yet.
    #[default]
    Before,
    /// In the range.
    In,
    /// Past its end: nothing more of this thread.
    After,
}

/// What became of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Left out (outside the range, not in a matching call, or too short).
    Out,
    /// Kept so far, but not yet known to last `--min`: not handed on yet.
    Pending,
    /// Handed on.
    In,
}

/// One call the replay has open, as the filter sees it.
#[derive(Clone, Copy, Debug)]
struct Open {
    id: u32,
    /// Start, cut to the range.
    start: u64,
    /// Time in its callees that were handed on.
    child: u64,
    inferred: bool,
    state: State,
    /// Its arguments in the thread's `args`, while pending.
    args_at: usize,
    args_len: usize,
    /// Its callees' time was the thread's root time (an inferred call found at its exit).
    took_root: bool,
}

#[derive(Default)]
struct ThreadFilter {
    phase: Phase,
    /// Time of the thread's latest event in the range.
    last: u64,
    /// The replay's open calls, bottom first (index = the replay's depth).
    stack: Vec<Open>,
    /// Depth of the outermost open call that matches `--function`.
    selected: Option<usize>,
    /// Calls handed on and still open.
    depth: usize,
    /// Time of the calls handed on at the bottom of the stack (see [`crate::calls`]).
    root_child: u64,
    /// Arguments of pending calls.
    args: Vec<u64>,
    /// Index of the lowest pending call in `stack` (its length when none): pending calls are
    /// the top of the stack, since a call lasts at least as long as those it makes.
    pending_from: usize,
    /// Past the range's end, the calls open at it (still in `stack`) that have exited since,
    /// by depth; the depth of the last one, if the thread's last event was its exit; and the
    /// poll events that followed those exits, handed on when the calls are closed at the
    /// range's end (so a poll cut by the range keeps its task). At most one per depth.
    cut_exited: Vec<bool>,
    cut_last: Option<usize>,
    cut_polls: Vec<(usize, PollSeen)>,
}

impl ThreadFilter {
    fn push(&mut self, mut open: Open) {
        if open.state != State::Pending {
            // Its arguments, if any, were handed on already: none kept.
            open.args_at = self.args.len();
            open.args_len = 0;
        }
        let i = self.stack.len();
        if self.pending_from >= i {
            self.pending_from = if open.state == State::Pending {
                i
            } else {
                i + 1
            };
        }
        self.stack.push(open);
    }

    fn pop(&mut self) -> Option<Open> {
        let o = self.stack.pop();
        self.pending_from = self.pending_from.min(self.stack.len());
        o
    }

    fn truncate(&mut self, len: usize) {
        self.stack.truncate(len);
        self.pending_from = self.pending_from.min(self.stack.len());
    }
}

/// A [`Sink`] that hands the calls a [`Filter`] keeps to another sink, whose errors become the
/// command's.
pub(crate) struct Filtered<'a, S> {
    inner: &'a mut S,
    f: &'a Filter,
    slots: Slots,
    matched: Vec<bool>,
    threads: Vec<ThreadFilter>,
}

/// Why handing calls on ended: an error (the filter's or the sink's), or the sink's stop.
enum Halt {
    Failed(CliError),
    Stopped,
}

impl From<CliError> for Halt {
    fn from(e: CliError) -> Halt {
        Halt::Failed(e)
    }
}

/// The inner sink's answer, a stop made a [`Halt`] so that `?` carries it out.
#[inline]
fn passed<E>(r: Result<ControlFlow<()>, E>) -> Result<(), Halt>
where
    CliError: From<E>,
{
    match r {
        Ok(ControlFlow::Continue(())) => Ok(()),
        Ok(ControlFlow::Break(())) => Err(Halt::Stopped),
        Err(e) => Err(Halt::Failed(e.into())),
    }
}

/// The answer of one of [`Filtered`]'s methods, as a sink gives it.
#[inline]
fn answer(r: Result<(), Halt>) -> Result<ControlFlow<()>, CliError> {
    match r {
        Ok(()) => Ok(ControlFlow::Continue(())),
        Err(Halt::Stopped) => Ok(ControlFlow::Break(())),
        Err(Halt::Failed(e)) => Err(e),
    }
}

impl<S: Sink<Error = E>, E> Filtered<'_, S>
where
    CliError: From<E>,
{
    fn thread(&mut self, thread: u32) -> usize {
        let t = thread as usize;
        if t >= self.threads.len() {
            self.threads.resize_with(t + 1, || ThreadFilter {
                phase: if self.f.range.is_some() {
                    Phase::Before
                } else {
                    Phase::In
                },
                ..ThreadFilter::default()
            });
        }
        t
    }

    fn matches(&mut self, id: u32) -> Result<bool, CliError> {
        let Some(p) = &self.f.function else {
            return Ok(true);
        };
        let s = self.slots.slot(id)?;
        if s == self.matched.len() {
            self.matched.push(p.matches(&self.f.names.function(id)));
        }
        Ok(self.matched[s])
    }

    fn long_enough(&self, start: u64, now: u64) -> bool {
        match (self.f.min, self.f.clock) {
            (Some(min), Some(c)) => c.ns(now.saturating_sub(start)) >= min,
            _ => true,
        }
    }

    /// Decides what becomes of a call the thread opens (or reopens at the range's start),
    /// handing it on when it is kept and need not wait for `--min`.
    fn admit(&mut self, thread: u32, depth: usize, open: Open, args: &[u64]) -> Result<(), Halt> {
        let t = thread as usize;
        let mut open = open;
        let chosen = match self.threads[t].selected {
            Some(_) => true,
            None => {
                let m = self.matches(open.id)?;
                if m && self.f.function.is_some() {
                    self.threads[t].selected = Some(depth);
                }
                m
            }
        };
        if !chosen {
            open.state = State::Out;
            self.threads[t].push(open);
            return Ok(());
        }
        if self.f.min.is_some() {
            let th = &mut self.threads[t];
            open.state = State::Pending;
            open.args_at = th.args.len();
            open.args_len = args.len();
            th.args.extend_from_slice(args);
            th.push(open);
            return Ok(());
        }
        open.state = State::In;
        self.threads[t].push(open);
        let top = self.threads[t].stack.len() - 1;
        self.hand_enter(thread, top, args)
    }

    /// Hands on the enter of the open call at `at` of the thread's stack.
    fn hand_enter(&mut self, thread: u32, at: usize, args: &[u64]) -> Result<(), Halt> {
        let th = &mut self.threads[thread as usize];
        let o = th.stack[at];
        let depth = th.depth;
        th.depth += 1;
        let frame = Frame::new(o.id, o.start, o.child, o.inferred);
        passed(self.inner.enter(&Enter {
            thread,
            depth,
            frame: &frame,
            args,
        }))
    }

    /// Hands on the pending calls that have lasted `--min` by `now`, outermost first.
    fn settle(&mut self, thread: u32, now: u64) -> Result<(), Halt> {
        if self.f.min.is_none() {
            return Ok(());
        }
        let t = thread as usize;
        loop {
            let th = &self.threads[t];
            let i = th.pending_from;
            let Some(&o) = th.stack.get(i) else {
                return Ok(());
            };
            if o.state == State::Pending {
                if !self.long_enough(o.start, now) {
                    return Ok(());
                }
                self.threads[t].stack[i].state = State::In;
                let args: Vec<u64> =
                    self.threads[t].args[o.args_at..o.args_at + o.args_len].to_vec();
                self.hand_enter(thread, i, &args)?;
            }
            self.threads[t].pending_from = i + 1;
        }
    }

    /// Pops the thread's top call, ending at `end`, and hands on its exit if it was kept.
    fn close_top(&mut self, thread: u32, end: u64, how: Close, args: &[u64]) -> Result<(), Halt> {
        let t = thread as usize;
        let Some(o) = self.threads[t].pop() else {
            return Ok(());
        };
        let depth_now = self.threads[t].stack.len();
        if self.threads[t].selected == Some(depth_now) {
            self.threads[t].selected = None;
        }
        // The arguments kept for it (while it was pending) and for the calls it made.
        self.threads[t].args.truncate(o.args_at);
        if o.state != State::In {
            return Ok(());
        }
        let th = &mut self.threads[t];
        th.depth -= 1;
        let depth = th.depth;
        let dur = end.saturating_sub(o.start);
        if depth == 0 {
            th.root_child = if o.took_root {
                dur
            } else {
                th.root_child.saturating_add(dur)
            };
        } else if let Some(p) = th.stack.iter_mut().rev().find(|p| p.state == State::In) {
            p.child = p.child.saturating_add(dur);
        }
        let frame = Frame::new(o.id, o.start, o.child, o.inferred);
        passed(self.inner.exit(&Exit {
            thread,
            depth,
            frame: &frame,
            end,
            how,
            args,
        }))
    }

    /// Moves the thread's phase on for an event at `now`; false if the event is outside the
    /// range and must be dropped.
    fn advance(&mut self, thread: u32, now: u64) -> Result<bool, Halt> {
        let Some((from, to)) = self.f.range else {
            return Ok(true);
        };
        let t = thread as usize;
        match self.threads[t].phase {
            Phase::After => Ok(false),
            Phase::Before if now < from => Ok(false),
            Phase::Before => {
                // The range starts: the calls open now start at its start, as inferred.
                self.threads[t].phase = Phase::In;
                self.threads[t].last = from;
                let open = std::mem::take(&mut self.threads[t].stack);
                self.threads[t].pending_from = 0;
                self.threads[t].args.clear();
                for (depth, o) in open.into_iter().enumerate() {
                    let reopened = Open {
                        start: o.start.max(from),
                        inferred: o.inferred || o.start < from,
                        child: 0,
                        ..o
                    };
                    self.admit(thread, depth, reopened, &[])?;
                }
                self.advance(thread, now)
            }
            Phase::In if now > to => {
                // The range ends: what is open was still running at its end, and is closed
                // there once the log is read (see `end`), as a window's open calls are.
                self.threads[t].phase = Phase::After;
                Ok(false)
            }
            Phase::In => {
                self.threads[t].last = now;
                Ok(true)
            }
        }
    }
}

impl<S: Sink<Error = E>, E> Sink for Filtered<'_, S>
where
    CliError: From<E>,
{
    type Error = CliError;

    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, CliError> {
        answer(self.entered(e.thread, e.depth, e.frame, e.args))
    }

    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, CliError> {
        answer(self.exited(e.thread, e.depth, e.end, e.how, e.args))
    }

    fn task(&mut self, e: &TaskSeen) -> Result<ControlFlow<()>, CliError> {
        answer(self.task_seen(e))
    }

    fn start(&mut self, s: &WindowStart) -> Result<ControlFlow<()>, CliError> {
        // Where the calls cut by the range start, when it starts later.
        let from = self.f.range.map_or(0, |r| r.0);
        answer(passed(self.inner.start(&WindowStart {
            thread: s.thread,
            tsc: s.tsc.max(from),
        })))
    }

    fn link(&mut self, l: &LinkSeen) -> Result<ControlFlow<()>, CliError> {
        // Within the range, links pass whatever the function chosen: they only tie tasks, and
        // the task events, filtered, choose which tasks are shown.
        answer(self.in_range(l.thread, l.tsc).and_then(|kept| {
            if kept {
                passed(self.inner.link(l))
            } else {
                Ok(())
            }
        }))
    }

    fn polled(&mut self, p: &PollSeen) -> Result<ControlFlow<()>, CliError> {
        // Right after the exit it ties to a task, which the filter handed on or not: a poll
        // event after an exit kept back finds no exit of its function to tie, and ties nothing.
        let t = self.thread(p.thread);
        let th = &mut self.threads[t];
        match th.phase {
            Phase::In => return answer(passed(self.inner.polled(p))),
            // The exit of a call open at the range's end: held for its close there.
            Phase::After => {
                if let Some(d) = th.cut_last.take() {
                    if th.stack.get(d).is_some_and(|o| o.id == p.id) {
                        th.cut_polls.push((d, *p));
                    }
                }
            }
            Phase::Before => {}
        }
        Ok(fdr_format::sink::GO_ON)
    }

    fn awaited(&mut self, a: &AwaitSeen) -> Result<ControlFlow<()>, CliError> {
        answer(self.in_range(a.thread, a.tsc).and_then(|kept| {
            if kept {
                passed(self.inner.awaited(a))
            } else {
                Ok(())
            }
        }))
    }

    fn woken(&mut self, w: &WokenSeen) -> Result<ControlFlow<()>, CliError> {
        answer(self.in_range(w.thread, w.tsc).and_then(|kept| {
            if kept {
                passed(self.inner.woken(w))
            } else {
                Ok(())
            }
        }))
    }

    fn cull(&mut self, c: &CullSeen) -> Result<ControlFlow<()>, CliError> {
        answer(self.in_range(c.thread, c.tsc).and_then(|kept| {
            if kept {
                passed(self.inner.cull(c))
            } else {
                Ok(())
            }
        }))
    }

    fn end(&mut self, d: &ThreadDone) -> Result<ControlFlow<()>, CliError> {
        answer(self.ended(d))
    }
}

/// The filter's side of each event the replay hands it.
impl<S: Sink<Error = E>, E> Filtered<'_, S>
where
    CliError: From<E>,
{
    fn entered(&mut self, thread: u32, depth: usize, f: &Frame, args: &[u64]) -> Result<(), Halt> {
        let t = self.thread(thread);
        // The replay hands an inferred call found at its exit (without a plan) dated at the
        // window start, so its time is not the event's: its exit follows at once.
        let late = f.inferred && depth == 0 && self.threads[t].phase == Phase::In;
        if !late && !self.advance(thread, f.start)? {
            self.threads[t].cut_last = None;
            if self.threads[t].phase == Phase::Before {
                self.threads[t].truncate(depth);
                self.threads[t].push(Open {
                    id: f.id,
                    start: f.start,
                    child: 0,
                    inferred: f.inferred,
                    state: State::Out,
                    args_at: 0,
                    args_len: 0,
                    took_root: false,
                });
            }
            return Ok(());
        }
        if self.threads[t].phase != Phase::In {
            return Ok(());
        }
        self.settle(thread, f.start.max(self.threads[t].last))?;
        let th = &mut self.threads[t];
        // Not expected: the replay hands calls in nesting order.
        th.truncate(depth);
        let from = self.f.range.map_or(0, |r| r.0);
        let took_root = f.inferred && depth == 0 && th.depth == 0;
        let open = Open {
            id: f.id,
            start: f.start.max(from),
            child: if took_root { th.root_child } else { 0 },
            inferred: f.inferred || f.start < from,
            state: State::Out,
            args_at: 0,
            args_len: 0,
            took_root,
        };
        self.admit(thread, depth, open, args)
    }

    fn exited(
        &mut self,
        thread: u32,
        depth: usize,
        end: u64,
        how: Close,
        args: &[u64],
    ) -> Result<(), Halt> {
        let t = self.thread(thread);
        if !self.advance(thread, end)? {
            let th = &mut self.threads[t];
            th.cut_last = None;
            match th.phase {
                Phase::Before => th.truncate(depth),
                Phase::After if depth < th.stack.len() => {
                    if th.cut_exited.len() < th.stack.len() {
                        th.cut_exited.resize(th.stack.len(), false);
                    }
                    if !th.cut_exited[depth] {
                        th.cut_exited[depth] = true;
                        th.cut_last = Some(depth);
                    }
                }
                _ => {}
            }
            return Ok(());
        }
        self.settle(thread, end)?;
        let th = &mut self.threads[t];
        if th.stack.len() <= depth {
            return Ok(());
        }
        th.truncate(depth + 1);
        self.close_top(thread, end, how, args)
    }

    fn task_seen(&mut self, e: &TaskSeen) -> Result<(), Halt> {
        let thread = e.thread;
        let t = self.thread(thread);
        if !self.advance(thread, e.tsc)? {
            return Ok(());
        }
        self.settle(thread, e.tsc)?;
        let inside = self.threads[t].selected.is_some();
        if self.f.function.is_some() && !inside && !self.matches(e.event.id)? {
            return Ok(());
        }
        let from = self.f.range.map_or(0, |r| r.0);
        passed(self.inner.task(&TaskSeen {
            window: e.window.max(from),
            ..*e
        }))
    }

    /// True if an event of `thread` at `tsc` is in the range (moving the thread's phase on).
    fn in_range(&mut self, thread: u32, tsc: u64) -> Result<bool, Halt> {
        self.thread(thread);
        self.advance(thread, tsc)
    }

    fn ended(&mut self, d: &ThreadDone) -> Result<(), Halt> {
        let thread = d.thread;
        let t = self.thread(thread);
        if self.threads[t].phase == Phase::After {
            // Cut by the range's end: the calls open then were running until it at least.
            let last = self.f.range.map_or(self.threads[t].last, |r| r.1);
            self.settle(thread, last)?;
            while let Some(top) = self.threads[t].stack.last() {
                let handed = top.state == State::In;
                self.close_top(thread, last, Close::WindowEnd, &[])?;
                let th = &mut self.threads[t];
                let depth = th.stack.len();
                if let Some(i) = th.cut_polls.iter().position(|(d, _)| *d == depth) {
                    let (_, p) = th.cut_polls.swap_remove(i);
                    if handed {
                        passed(self.inner.polled(&p))?;
                    }
                }
            }
        }
        passed(self.inner.end(d))
    }
}

/// What to say when `--function pattern` matches none of `names`: the close names (those whose
/// last segment contains the pattern's, else those within a few edits of it: two, or a third of
/// its length if more), nearest first, at most five; or that none is close, rather than five
/// names that are merely the least far. `source` names what was searched (`log`, `profile`).
pub(crate) fn no_function_matches(pattern: &str, names: &[&str], source: &str) -> String {
    let close: Vec<String> = fdr_format::glob::closest(pattern, names)
        .iter()
        .map(|n| crate::escape::shown(n).into_owned())
        .collect();
    let pattern = crate::escape::shown(pattern);
    if close.is_empty() {
        let n = names.len();
        return format!(
            "no function in the {source} matches --function {pattern}, nor is any of its {n} \
             function{}' names close (`fdr info` lists them)",
            if n == 1 { "" } else { "s" }
        );
    }
    format!(
        "no function in the {source} matches --function {pattern}; the closest: {}",
        close.join(", ")
    )
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn filter_args() {
        use crate::model::filter::FilterArgs;
        let a = FilterArgs {
            function: Some("app::*".into()),
            ..FilterArgs::default()
        };
        assert!(!a.is_empty() && FilterArgs::default().is_empty());
    }

    #[test]
    fn parse_duration() {
        use crate::model::filter::parse_duration;
        assert_eq!(parse_duration("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration("250µs"), Ok(250_000));
        assert_eq!(parse_duration("0"), Ok(0));
        assert!(parse_duration("12").is_err());
        assert!(parse_duration("-3ms").is_err());
    }

    #[test]
    fn pattern() {
        use crate::model::filter::Pattern;
        let p = Pattern::new("app::*::get");
        assert!(p.matches("app::Cache::get") && !p.matches("app::Cache::get_all"));
        assert!(Pattern::new("step").matches("app::Worker::step"));
        assert!(!Pattern::new("step").matches("app::Worker::restep"));
        assert!(Pattern::new("*").matches(""));
    }

    #[test]
    fn matches() {
        use crate::model::filter::Pattern;
        let name = "<app::Worker as app::Handler>::handle";
        for p in [
            "Worker::handle",
            "app::Worker::handle",
            "Handler::handle",
            "handle",
            name,
        ] {
            assert!(Pattern::new(p).matches(name), "{p}");
        }
        assert!(!Pattern::new("Other::handle").matches(name));
    }

    #[test]
    fn filter() -> Result<(), crate::CliError> {
        use crate::model::filter::{Filter, FilterArgs};
        use crate::model::input::Log;
        use crate::model::pass::replay;
        use crate::model::trie::Trie;
        use crate::progress::Progress;
        use fdr_testkit::synth::LogBuilder;
        let mut b = LogBuilder::new(1_000_000_000);
        b.function(1, "app::slow", &[]);
        b.function(2, "app::fast", &[]);
        let mut blk = b.block(7, 0, 0);
        blk.enter(1, 0);
        blk.exit(1, 5_000);
        blk.enter(2, 6_000);
        blk.exit(2, 6_010);
        blk.finish();
        let dir = std::env::temp_dir().join(format!("fdr-filter-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.fdr"), b.finish()).unwrap();
        let log = Log::open(&dir.join("a.fdr"))?;
        let args = FilterArgs {
            min: Some(1_000),
            ..FilterArgs::default()
        };
        let filter = Filter::resolve(&args, &log)?;
        let mut trie = Trie::default();
        replay(&log, &mut trie, None, &filter, &Progress::hidden(), 0)?;
        assert_eq!(trie.nodes.len(), 2); // the root and app::slow: app::fast is shorter than 1 µs
        std::fs::remove_dir_all(&dir).unwrap();
        Ok::<(), crate::CliError>(())
    }

    #[test]
    fn no_function_matches() {
        use crate::model::filter::no_function_matches;
        let names = ["app::handle", "app::main", "app::handle_all"];
        let what = no_function_matches("hadnle", &names, "profile");
        assert_eq!(
            what,
            "no function in the profile matches --function hadnle; the closest: \
                          app::handle"
        );
        let what = no_function_matches("nosuch", &names, "log");
        assert_eq!(
            what,
            "no function in the log matches --function nosuch, nor is any of its 3 \
                          functions' names close (`fdr info` lists them)"
        );
    }
}
