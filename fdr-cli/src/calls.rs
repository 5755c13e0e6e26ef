//! Calls rebuilt from entry and exit events: one shadow stack per thread.
//!
//! What real recordings contain and how it is handled:
//!
//! - A ring window that starts mid-stack has exits with no entry. Such a call gets an
//!   *inferred* entry at the start of its thread's window (the thread's first timestamp in the
//!   log) and is marked [`Frame::inferred`]; the calls completed before it on that thread become
//!   its children. With a [`Plan`] from a first pass, the inferred frames are pushed when the
//!   thread's window opens, so time-ordered outputs see a begin before every end.
//! - A tail exit closes the function's frame like an exit; the tail-called function's own exit
//!   closes it in turn.
//! - An exit that matches a frame below the top closes the frames above it first
//!   ([`Close::Unwound`]).
//! - Calls still open at the end are closed at the end of their thread's window
//!   ([`Close::WindowEnd`]).
//! - CPU migrations and TSC wraps only reset the timestamp base, which the event decoder has
//!   already folded into absolute timestamps.

use std::io::Read;

use fdr_format::events::{EventDecoder, EventKind, LogInfo, ThreadStats};
use fdr_format::{CullKind, FormatError, TaskKind};

use crate::filter::Filter;
use crate::input::Log;
use crate::progress::Progress;
use crate::CliError;

/// Deeper stacks than this are taken as a corrupt log rather than grown without end.
pub const MAX_DEPTH: usize = 1 << 20;
/// Arguments kept per call; more are ignored.
pub const MAX_ARGS: usize = 64;

/// One open call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Function id.
    pub id: u32,
    /// Entry timestamp (ticks).
    pub start: u64,
    /// Ticks spent in calls made from this one that have completed.
    pub child: u64,
    /// The entry was not in the window; `start` is the window's start.
    pub inferred: bool,
    args_at: u32,
}

impl Frame {
    /// A call of `id` that started at `start`, with `child` ticks in completed callees.
    ///
    /// ```
    /// use fdr_cli::calls::Frame;
    /// let f = Frame::new(3, 100, 40, false);
    /// assert_eq!(f.self_ticks(200), 60);
    /// ```
    pub fn new(id: u32, start: u64, child: u64, inferred: bool) -> Frame {
        Frame {
            id,
            start,
            child,
            inferred,
            args_at: 0,
        }
    }

    /// Ticks spent in the call itself, given its end.
    #[inline]
    pub fn self_ticks(&self, end: u64) -> u64 {
        end.saturating_sub(self.start).saturating_sub(self.child)
    }
}

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Close {
    /// Its exit record.
    Exit,
    /// Its tail-exit record.
    TailExit,
    /// A caller's exit arrived first.
    Unwound,
    /// Still open at the end of its thread's window.
    WindowEnd,
}

/// What an analysis does with calls.
pub trait Sink {
    /// A call begins. `depth` is its index in the thread's stack (0 at the bottom). Called
    /// after the call's arguments are known.
    fn enter(
        &mut self,
        thread: u32,
        depth: usize,
        frame: &Frame,
        args: &[u64],
    ) -> Result<(), CliError> {
        let _ = (thread, depth, frame, args);
        Ok(())
    }

    /// A call ends at `end`.
    fn exit(
        &mut self,
        thread: u32,
        depth: usize,
        frame: &Frame,
        end: u64,
        how: Close,
        args: &[u64],
    ) -> Result<(), CliError>;

    /// An async task was created, completed or cancelled on `thread` at `tsc` (see
    /// [`crate::tasks`]). `window` is the start of the thread's window (of its current block
    /// while it has recorded no call): where a task whose creation is missing begins.
    fn task(&mut self, thread: u32, tsc: u64, window: u64, ev: TaskEvent) -> Result<(), CliError> {
        let _ = (thread, tsc, window, ev);
        Ok(())
    }

    /// The log is read; `thread`'s calls still open were closed at `last`, the end of its
    /// window (called once per thread, after those closes).
    fn end(&mut self, thread: u32, last: u64) -> Result<(), CliError> {
        let _ = (thread, last);
        Ok(())
    }

    /// A function was culled or restored (by `thread`, at `tsc`): see [`crate::culls`].
    fn cull(&mut self, thread: u32, tsc: u64, kind: CullKind, id: u32) -> Result<(), CliError> {
        let _ = (thread, tsc, kind, id);
        Ok(())
    }
}

/// A task event: what happened, to which task of which function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskEvent {
    /// Created, completed or cancelled.
    pub kind: TaskKind,
    /// The async function's id.
    pub id: u32,
    /// The task's process-unique id.
    pub task: u64,
}

/// What a first pass learned: the frames open when each thread's window started, and the
/// log's tables.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Per thread index, the inferred frames' ids from the bottom of the stack up.
    pub initial: Vec<Vec<u32>>,
    /// The earliest window start of any thread that recorded calls: time zero of outputs.
    pub origin: u64,
    /// Header and tables.
    pub info: LogInfo,
    /// Threads, with complete windows.
    pub threads: Vec<ThreadStats>,
    /// Per thread index: some of its calls pass the filters (the threads outputs show).
    pub shown: Vec<bool>,
    /// Calls that pass the filters.
    pub calls: u64,
}

impl Plan {
    /// True if thread index `t` has calls that pass the filters.
    pub fn shows(&self, t: usize) -> bool {
        self.shown.get(t).copied().unwrap_or(false)
    }
}

/// A decoded log's tables and threads.
#[derive(Clone, Debug)]
pub struct Decoded {
    /// Header and tables.
    pub info: LogInfo,
    /// Threads, with complete windows.
    pub threads: Vec<ThreadStats>,
}

#[derive(Default)]
struct ThreadState {
    stack: Vec<Frame>,
    args: Vec<u64>,
    /// Ticks of completed calls at the bottom of the stack: the children of an inferred caller.
    root_child: u64,
    first: u64,
    /// Start of the current block: the window's start if the thread's first call is in it.
    block_tsc: u64,
    started: bool,
    /// The top frame entered with arguments that are still arriving.
    pending: bool,
}

fn input(path: &str) -> impl Fn(FormatError) -> CliError + '_ {
    move |err| CliError::Input {
        path: path.to_string(),
        err,
    }
}

/// Replays `log` through `sink`, behind `filter`. Without a plan, entries missing from the
/// window are inferred when their exit arrives (enough for per-function totals); with one, they
/// are opened at the window's start. `pass` numbers this read for the progress bar.
pub fn replay<S: Sink>(
    log: &Log,
    sink: &mut S,
    plan: Option<&Plan>,
    filter: &Filter,
    progress: &Progress,
    pass: u64,
) -> Result<Decoded, CliError> {
    let mut dec = log.decoder()?;
    filter.select_threads(&mut dec);
    let d = if filter.wraps() {
        let mut w = filter.wrap(sink);
        replay_decoder(dec, log.name(), &mut w, plan, progress, pass)?
    } else {
        replay_decoder(dec, log.name(), sink, plan, progress, pass)?
    };
    filter.check_threads(log.name(), &d.threads, &d.info)?;
    Ok(d)
}

/// [`replay`] on a decoder over any input; `path` names it in errors.
///
/// ```
/// use fdr_cli::calls::{replay_decoder, Close, Frame, Sink};
/// use fdr_cli::progress::Progress;
/// use fdr_cli::synth::LogBuilder;
/// use fdr_cli::CliError;
/// use fdr_format::events::EventDecoder;
///
/// struct Durations(Vec<(u32, u64, bool)>);
/// impl Sink for Durations {
///     fn exit(&mut self, _: u32, _: usize, f: &Frame, end: u64, _: Close, _: &[u64]) -> Result<(), CliError> {
///         self.0.push((f.id, end - f.start, f.inferred));
///         Ok(())
///     }
/// }
/// let mut log = LogBuilder::new(1_000_000_000);
/// let mut b = log.block(1, 0, 100);
/// b.exit(7, 150); // entered before the window: inferred entry at 100
/// b.enter(8, 200);
/// b.exit(8, 260);
/// b.finish();
/// let bytes = log.finish();
/// let mut d = Durations(Vec::new());
/// replay_decoder(EventDecoder::new(&bytes[..]).unwrap(), "mem", &mut d, None, &Progress::hidden(), 0)?;
/// assert_eq!(d.0, [(7, 50, true), (8, 60, false)]);
/// # Ok::<(), CliError>(())
/// ```
pub fn replay_decoder<R: Read, S: Sink>(
    mut dec: EventDecoder<R>,
    path: &str,
    sink: &mut S,
    plan: Option<&Plan>,
    progress: &Progress,
    pass: u64,
) -> Result<Decoded, CliError> {
    let mut ts: Vec<ThreadState> = Vec::new();
    let mut n: u32 = 0;
    let no_initial: Vec<u32> = Vec::new();
    let r = dec.for_each(|ev, at| -> Result<(), Failure> {
        n = n.wrapping_add(1);
        if n & 0xfffff == 0 {
            progress.at(pass, at);
        }
        let t = ev.thread as usize;
        if t >= ts.len() {
            ts.resize_with(t + 1, ThreadState::default);
        }
        let th = &mut ts[t];
        if th.pending && !matches!(ev.kind, EventKind::Arg { .. }) {
            th.pending = false;
            flush_enter(th, ev.thread, sink)?;
        }
        if !th.started
            && !matches!(
                ev.kind,
                EventKind::Block
                    | EventKind::Cpu { .. }
                    | EventKind::Task { .. }
                    | EventKind::Cull { .. }
            )
        {
            // The window opens with the block of the thread's first call; blocks of extension
            // records only (fdr's leading block) do not count.
            th.started = true;
            th.first = th.block_tsc;
            let initial = plan.and_then(|p| p.initial.get(t)).unwrap_or(&no_initial);
            for &id in initial {
                push(th, id, th.first, true, at)?;
                flush_enter(th, ev.thread, sink)?;
            }
        }
        match ev.kind {
            EventKind::Enter { id } => {
                push(th, id, ev.tsc, false, at)?;
                flush_enter(th, ev.thread, sink)?;
            }
            EventKind::Exit { id } => close(th, ev.thread, id, ev.tsc, Close::Exit, sink)?,
            EventKind::EnterArgs { id } => {
                push(th, id, ev.tsc, false, at)?;
                th.pending = true;
            }
            EventKind::Arg { value } => {
                if th.pending {
                    let top = th.stack.last().map_or(0, |f| f.args_at as usize);
                    if th.args.len() - top < MAX_ARGS {
                        th.args.push(value);
                    }
                }
            }
            EventKind::TailExit { id } => close(th, ev.thread, id, ev.tsc, Close::TailExit, sink)?,
            EventKind::Block => th.block_tsc = ev.tsc,
            // Task events do not change the call stack of the thread that polls.
            EventKind::Task { kind, id, task } => {
                let window = if th.started { th.first } else { th.block_tsc };
                sink.task(ev.thread, ev.tsc, window, TaskEvent { kind, id, task })?;
            }
            EventKind::Cull { kind, id, .. } => sink.cull(ev.thread, ev.tsc, kind, id)?,
            EventKind::Cpu { .. } => {}
        }
        Ok(())
    });
    match r {
        Ok(()) => {}
        Err(Failure::Format(e)) => return Err(input(path)(e)),
        Err(Failure::Cli(e)) => return Err(e.in_log(path)),
    }
    progress.at(pass, dec.offset());
    let named = |e: CliError| e.in_log(path);
    for (t, th) in ts.iter_mut().enumerate() {
        if th.pending {
            th.pending = false;
            flush_enter(th, t as u32, sink).map_err(named)?;
        }
        let end = window_end(&dec, t);
        while !th.stack.is_empty() {
            pop(th, t as u32, end, Close::WindowEnd, sink).map_err(named)?;
        }
        sink.end(t as u32, end).map_err(named)?;
    }
    Ok(Decoded {
        info: dec.info().clone(),
        threads: dec.threads().to_vec(),
    })
}

/// Replays `log` through `sinks.len()` sinks in parallel, one thread each, behind `filter`:
/// sink `k` sees the calls of the log's threads whose index is `k` modulo the number of sinks,
/// every block being decoded by exactly one of them. For analyses whose results add up across
/// threads; with a plan, as [`replay`] with one.
///
/// ```no_run
/// use fdr_cli::account::Account;
/// use fdr_cli::calls::replay_shared;
/// use fdr_cli::filter::Filter;
/// use fdr_cli::input::Log;
/// use fdr_cli::progress::Progress;
/// let mut parts = vec![Account::default(), Account::default()];
/// let log = Log::open("app.fdr".as_ref())?;
/// let decoded = replay_shared(&log, &mut parts, None, &Filter::none(), &Progress::hidden(), 0)?;
/// # Ok::<(), fdr_cli::CliError>(())
/// ```
pub fn replay_shared<S: Sink + Send>(
    log: &Log,
    sinks: &mut [S],
    plan: Option<&Plan>,
    filter: &Filter,
    progress: &Progress,
    pass: u64,
) -> Result<Decoded, CliError> {
    let parts = in_shares(log, sinks, filter, progress, |dec, sink, shown| {
        if filter.wraps() {
            let mut w = filter.wrap(sink);
            replay_decoder(dec, log.name(), &mut w, plan, shown, pass)
        } else {
            replay_decoder(dec, log.name(), sink, plan, shown, pass)
        }
    })?;
    // Thread `i` was decoded in full by share `i % n`.
    let mut merged = parts[0].clone();
    for (i, t) in merged.threads.iter_mut().enumerate() {
        if let Some(d) = parts.get(i % parts.len()).and_then(|d| d.threads.get(i)) {
            *t = d.clone();
        }
    }
    filter.check_threads(log.name(), &merged.threads, &merged.info)?;
    Ok(merged)
}

/// Runs `each` on `sinks.len()` decoders of `log` in parallel, one thread each, decoder `k`
/// reading the blocks of the log's threads whose index is `k` modulo the number of sinks
/// (see [`EventDecoder::share`]); the results come back in share order. An error is the one
/// earliest in the file, which a single reader would have met.
fn in_shares<S: Send, T: Send>(
    log: &Log,
    sinks: &mut [S],
    filter: &Filter,
    progress: &Progress,
    each: impl Fn(EventDecoder<std::fs::File>, &mut S, &Progress) -> Result<T, CliError> + Sync,
) -> Result<Vec<T>, CliError> {
    let n = sinks.len() as u32;
    let hidden = Progress::hidden();
    let each = &each;
    let results: Vec<Result<T, CliError>> = std::thread::scope(|scope| {
        let workers: Vec<_> = sinks
            .iter_mut()
            .enumerate()
            .map(|(k, sink)| {
                let shown = if k == 0 { progress } else { &hidden };
                scope.spawn(move || {
                    let mut dec = log.decoder()?;
                    dec.share(n, k as u32);
                    filter.select_threads(&mut dec);
                    each(dec, sink, shown)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| match w.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    let mut parts = Vec::with_capacity(results.len());
    let mut first_err: Option<CliError> = None;
    for r in results {
        match r {
            Ok(d) => parts.push(d),
            Err(e) => {
                let earlier = match (&first_err, &e) {
                    (None, _) => true,
                    (Some(CliError::Input { err: a, .. }), CliError::Input { err: b, .. }) => {
                        b.offset < a.offset
                    }
                    (Some(CliError::Input { .. }), _) => false,
                    (Some(_), CliError::Input { .. }) => true,
                    (Some(_), _) => false,
                };
                if earlier {
                    first_err = Some(e);
                }
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(parts),
    }
}

/// [`plan_with`] by `extras.len()` reader threads in parallel, each reading a share of the
/// log's threads and handing its calls to its own extra sink.
///
/// ```no_run
/// use fdr_cli::calls::{plan_shared, Nothing};
/// use fdr_cli::filter::Filter;
/// use fdr_cli::input::Log;
/// use fdr_cli::progress::Progress;
/// let log = Log::open("app.fdr".as_ref())?;
/// let plan = plan_shared(&log, &Filter::none(), &Progress::hidden(), &mut [Nothing, Nothing])?;
/// # Ok::<(), fdr_cli::CliError>(())
/// ```
pub fn plan_shared<X: Sink + Send>(
    log: &Log,
    filter: &Filter,
    progress: &Progress,
    extras: &mut [X],
) -> Result<Plan, CliError> {
    if extras.len() == 1 {
        return plan_with(log, filter, progress, &mut extras[0]);
    }
    let parts = in_shares(log, extras, filter, progress, |dec, x, shown| {
        plan_filtered(dec, log.name(), filter, shown, x)
    })?;
    let n = parts.len();
    let mut merged = parts[0].clone();
    merged.calls = parts.iter().map(|p| p.calls).sum();
    let len = merged.threads.len();
    merged.initial = vec![Vec::new(); len];
    merged.shown = vec![false; len];
    for i in 0..len {
        let p = &parts[i % n];
        if let Some(t) = p.threads.get(i) {
            merged.threads[i] = t.clone();
        }
        merged.initial[i] = p.initial.get(i).cloned().unwrap_or_default();
        merged.shown[i] = p.shows(i);
    }
    merged.origin = plan_origin(&merged.threads, &merged.shown, filter);
    filter.check_threads(log.name(), &merged.threads, &merged.info)?;
    Ok(merged)
}

/// What [`plan_fast`] does with a call that ends: (thread, frame, end, how, depth).
type Ended<'a> = dyn FnMut(u32, &Frame, u64, Close, usize) -> Result<(), CliError> + 'a;

/// One thread in [`plan_fast`]: its open calls (function, start) and where its window starts.
#[derive(Default)]
struct FastThread {
    stack: Vec<(u32, u64)>,
    started: bool,
    first: u64,
    block_tsc: u64,
    initial: Vec<u32>,
}

/// The first pass without a filter, at the speed of the decoder: the same stack rules as
/// [`replay_decoder`] (an exit closes the matching frame and those above it; an exit with no
/// matching frame closes them all and is a call inferred from the window's start), keeping
/// only each open call's function and start. `extra` sees each call's exit, with a frame
/// whose time in callees is not counted (0).
fn plan_fast<R: Read, X: Sink>(
    mut dec: EventDecoder<R>,
    path: &str,
    filter: &Filter,
    progress: &Progress,
    extra: &mut X,
) -> Result<Plan, CliError> {
    let mut ts: Vec<FastThread> = Vec::new();
    let mut shown: Vec<bool> = Vec::new();
    let mut calls = 0u64;
    let mut n: u32 = 0;
    let mut ended = |t: u32, f: &Frame, end: u64, how: Close, depth: usize| {
        let i = t as usize;
        if i >= shown.len() {
            shown.resize(i + 1, false);
        }
        shown[i] = true;
        calls += 1;
        extra.exit(t, depth, f, end, how, &[])
    };
    let r = dec.for_each(|ev, at| -> Result<(), Failure> {
        n = n.wrapping_add(1);
        if n & 0xfffff == 0 {
            progress.at(0, at);
        }
        let t = ev.thread as usize;
        if t >= ts.len() {
            ts.resize_with(t + 1, FastThread::default);
        }
        let th = &mut ts[t];
        let (id, exit, how) = match ev.kind {
            EventKind::Block => {
                th.block_tsc = ev.tsc;
                return Ok(());
            }
            EventKind::Enter { id } | EventKind::EnterArgs { id } => (id, false, Close::Exit),
            EventKind::Exit { id } => (id, true, Close::Exit),
            EventKind::TailExit { id } => (id, true, Close::TailExit),
            EventKind::Arg { .. }
            | EventKind::Cpu { .. }
            | EventKind::Task { .. }
            | EventKind::Cull { .. } => return Ok(()),
        };
        if !th.started {
            th.started = true;
            th.first = th.block_tsc;
        }
        if !exit {
            if th.stack.len() >= MAX_DEPTH {
                return Err(Failure::Format(too_deep(at)));
            }
            th.stack.push((id, ev.tsc));
            return Ok(());
        }
        let t = ev.thread;
        let close = |th: &mut FastThread, how: Close, ended: &mut Ended<'_>| match th.stack.pop() {
            Some((fid, start)) => {
                let depth = th.stack.len();
                ended(t, &Frame::new(fid, start, 0, false), ev.tsc, how, depth)
            }
            None => Ok(()),
        };
        match th.stack.iter().rposition(|f| f.0 == id) {
            Some(at) => {
                while th.stack.len() > at + 1 {
                    close(th, Close::Unwound, &mut ended)?;
                }
                close(th, how, &mut ended)?;
            }
            None => {
                // Entered before the window: everything open ran inside it.
                while !th.stack.is_empty() {
                    close(th, Close::Unwound, &mut ended)?;
                }
                th.initial.push(id);
                ended(t, &Frame::new(id, th.first, 0, true), ev.tsc, how, 0)?;
            }
        }
        Ok(())
    });
    match r {
        Ok(()) => {}
        Err(Failure::Format(e)) => return Err(input(path)(e)),
        Err(Failure::Cli(e)) => return Err(e.in_log(path)),
    }
    progress.at(0, dec.offset());
    for (t, th) in ts.iter_mut().enumerate() {
        let end = window_end(&dec, t);
        while let Some((fid, start)) = th.stack.pop() {
            let f = Frame::new(fid, start, 0, false);
            ended(t as u32, &f, end, Close::WindowEnd, th.stack.len())
                .map_err(|e| e.in_log(path))?;
        }
    }
    let threads = dec.threads().to_vec();
    let origin = plan_origin(&threads, &shown, filter);
    Ok(Plan {
        initial: ts
            .into_iter()
            .map(|th| th.initial.into_iter().rev().collect())
            .collect(),
        origin,
        info: dec.info().clone(),
        threads,
        shown,
        calls,
    })
}

fn too_deep(offset: u64) -> FormatError {
    FormatError::new(
        offset,
        format!(
            "calls are nested more than {MAX_DEPTH} deep on one thread; expected exits (is the \
             log corrupt?)"
        ),
    )
}

/// Time zero: the earliest window start of a thread with calls that pass the filters (cut to
/// the time range), as in a log that held only those calls.
fn plan_origin(threads: &[ThreadStats], shown: &[bool], filter: &Filter) -> u64 {
    let from = filter.range_start().unwrap_or(0);
    (0..threads.len())
        .filter(|&t| shown.get(t).copied().unwrap_or(false))
        .map(|t| threads[t].first_tsc.max(from))
        .min()
        .unwrap_or_else(|| origin(threads))
}

/// Why a replay stopped: the log (the path is added afterwards) or the sink.
enum Failure {
    Format(FormatError),
    Cli(CliError),
}

impl From<FormatError> for Failure {
    fn from(e: FormatError) -> Self {
        Failure::Format(e)
    }
}

impl From<CliError> for Failure {
    fn from(e: CliError) -> Self {
        Failure::Cli(e)
    }
}

#[inline]
fn push(
    th: &mut ThreadState,
    id: u32,
    tsc: u64,
    inferred: bool,
    offset: u64,
) -> Result<(), Failure> {
    if th.stack.len() >= MAX_DEPTH {
        return Err(Failure::Format(too_deep(offset)));
    }
    th.stack.push(Frame {
        id,
        start: tsc,
        child: 0,
        inferred,
        args_at: th.args.len() as u32,
    });
    Ok(())
}

#[inline]
fn flush_enter<S: Sink>(th: &ThreadState, thread: u32, sink: &mut S) -> Result<(), CliError> {
    if let Some(f) = th.stack.last() {
        sink.enter(
            thread,
            th.stack.len() - 1,
            f,
            &th.args[f.args_at as usize..],
        )?;
    }
    Ok(())
}

#[inline]
fn pop<S: Sink>(
    th: &mut ThreadState,
    thread: u32,
    end: u64,
    how: Close,
    sink: &mut S,
) -> Result<(), CliError> {
    let Some(f) = th.stack.pop() else {
        return Ok(());
    };
    let depth = th.stack.len();
    sink.exit(thread, depth, &f, end, how, &th.args[f.args_at as usize..])?;
    th.args.truncate(f.args_at as usize);
    let dur = end.saturating_sub(f.start);
    match th.stack.last_mut() {
        Some(parent) => parent.child = parent.child.saturating_add(dur),
        None => th.root_child = th.root_child.saturating_add(dur),
    }
    Ok(())
}

#[inline]
fn close<S: Sink>(
    th: &mut ThreadState,
    thread: u32,
    id: u32,
    end: u64,
    how: Close,
    sink: &mut S,
) -> Result<(), CliError> {
    // The common case: the exit matches the top of the stack.
    if let Some(top) = th.stack.last() {
        if top.id == id {
            return pop(th, thread, end, how, sink);
        }
    }
    if let Some(at) = th.stack.iter().rposition(|f| f.id == id) {
        while th.stack.len() > at + 1 {
            pop(th, thread, end, Close::Unwound, sink)?;
        }
        return pop(th, thread, end, how, sink);
    }
    // Entered before the window started: everything open now, and everything completed at the
    // bottom of the stack so far, ran inside it.
    while !th.stack.is_empty() {
        pop(th, thread, end, Close::Unwound, sink)?;
    }
    let f = Frame {
        id,
        start: th.first,
        child: th.root_child,
        inferred: true,
        args_at: th.args.len() as u32,
    };
    th.stack.push(f);
    flush_enter(th, thread, sink)?;
    th.stack.pop();
    sink.exit(thread, 0, &f, end, how, &[])?;
    th.root_child = end.saturating_sub(f.start);
    Ok(())
}

/// Records the frames each thread's window started inside of.
struct Prescan {
    initial: Vec<Vec<u32>>,
}

impl Sink for Prescan {
    fn enter(&mut self, thread: u32, _: usize, f: &Frame, _: &[u64]) -> Result<(), CliError> {
        if f.inferred {
            let t = thread as usize;
            if t >= self.initial.len() {
                self.initial.resize_with(t + 1, Vec::new);
            }
            self.initial[t].push(f.id);
        }
        Ok(())
    }

    #[inline]
    fn exit(
        &mut self,
        _: u32,
        _: usize,
        _: &Frame,
        _: u64,
        _: Close,
        _: &[u64],
    ) -> Result<(), CliError> {
        Ok(())
    }
}

/// Which threads have calls that pass the filters, and how many calls pass.
#[derive(Default)]
struct Seen {
    shown: Vec<bool>,
    calls: u64,
}

impl Sink for Seen {
    #[inline]
    fn exit(
        &mut self,
        thread: u32,
        _: usize,
        _: &Frame,
        _: u64,
        _: Close,
        _: &[u64],
    ) -> Result<(), CliError> {
        let t = thread as usize;
        if t >= self.shown.len() {
            self.shown.resize(t + 1, false);
        }
        self.shown[t] = true;
        self.calls += 1;
        Ok(())
    }
}

/// Two sinks fed the same calls, the first one first.
///
/// ```
/// use fdr_cli::account::Account;
/// use fdr_cli::calls::{Both, Close, Frame, Sink};
/// use fdr_cli::stack::Trie;
/// let (mut a, mut t) = (Account::default(), Trie::default());
/// let f = Frame::new(1, 0, 0, false);
/// let mut both = Both(&mut a, &mut t);
/// both.enter(0, 0, &f, &[])?;
/// both.exit(0, 0, &f, 10, Close::Exit, &[])?;
/// assert_eq!(t.nodes[1].count, 1);
/// # Ok::<(), fdr_cli::CliError>(())
/// ```
pub struct Both<'a, A, B>(pub &'a mut A, pub &'a mut B);

impl<A: Sink, B: Sink> Sink for Both<'_, A, B> {
    #[inline]
    fn enter(
        &mut self,
        thread: u32,
        depth: usize,
        f: &Frame,
        args: &[u64],
    ) -> Result<(), CliError> {
        self.0.enter(thread, depth, f, args)?;
        self.1.enter(thread, depth, f, args)
    }

    #[inline]
    fn exit(
        &mut self,
        thread: u32,
        depth: usize,
        f: &Frame,
        end: u64,
        how: Close,
        args: &[u64],
    ) -> Result<(), CliError> {
        self.0.exit(thread, depth, f, end, how, args)?;
        self.1.exit(thread, depth, f, end, how, args)
    }

    fn task(&mut self, thread: u32, tsc: u64, window: u64, ev: TaskEvent) -> Result<(), CliError> {
        self.0.task(thread, tsc, window, ev)?;
        self.1.task(thread, tsc, window, ev)
    }

    fn cull(&mut self, thread: u32, tsc: u64, kind: CullKind, id: u32) -> Result<(), CliError> {
        self.0.cull(thread, tsc, kind, id)?;
        self.1.cull(thread, tsc, kind, id)
    }

    fn end(&mut self, thread: u32, last: u64) -> Result<(), CliError> {
        self.0.end(thread, last)?;
        self.1.end(thread, last)
    }
}

/// A first pass over `log`: which frames were open at each thread's window start, the tables,
/// time zero, and which threads have calls that pass `filter`.
pub fn plan(log: &Log, filter: &Filter, progress: &Progress) -> Result<Plan, CliError> {
    plan_with(log, filter, progress, &mut Nothing)
}

/// [`plan`], handing the calls that pass `filter` to `extra` as well. In this first pass an
/// entry missing from the window is inferred at its exit (see [`replay`] without a plan); without
/// a filter, `extra` sees only each call's exit, its time in callees not counted.
///
/// ```no_run
/// use fdr_cli::calls::{plan_with, Nothing};
/// use fdr_cli::filter::Filter;
/// use fdr_cli::input::Log;
/// use fdr_cli::progress::Progress;
/// let log = Log::open("app.fdr".as_ref())?;
/// let plan = plan_with(&log, &Filter::none(), &Progress::hidden(), &mut Nothing)?;
/// println!("{} calls, time zero at tick {}", plan.calls, plan.origin);
/// # Ok::<(), fdr_cli::CliError>(())
/// ```
pub fn plan_with<X: Sink>(
    log: &Log,
    filter: &Filter,
    progress: &Progress,
    extra: &mut X,
) -> Result<Plan, CliError> {
    let mut dec = log.decoder()?;
    filter.select_threads(&mut dec);
    let p = plan_filtered(dec, log.name(), filter, progress, extra)?;
    filter.check_threads(log.name(), &p.threads, &p.info)?;
    Ok(p)
}

/// [`plan`] on a decoder over any input, unfiltered; `path` names it in errors.
pub fn plan_decoder<R: Read>(
    dec: EventDecoder<R>,
    path: &str,
    progress: &Progress,
) -> Result<Plan, CliError> {
    plan_filtered(dec, path, &Filter::none(), progress, &mut Nothing)
}

/// A sink that does nothing (for a first pass that needs no extra sink).
///
/// ```
/// use fdr_cli::calls::{Close, Frame, Nothing, Sink};
/// assert!(Nothing.exit(0, 0, &Frame::new(1, 0, 0, false), 5, Close::Exit, &[]).is_ok());
/// ```
pub struct Nothing;

impl Sink for Nothing {
    #[inline]
    fn exit(
        &mut self,
        _: u32,
        _: usize,
        _: &Frame,
        _: u64,
        _: Close,
        _: &[u64],
    ) -> Result<(), CliError> {
        Ok(())
    }
}

fn plan_filtered<R: Read, X: Sink>(
    dec: EventDecoder<R>,
    path: &str,
    filter: &Filter,
    progress: &Progress,
    extra: &mut X,
) -> Result<Plan, CliError> {
    if !filter.wraps() {
        return plan_fast(dec, path, filter, progress, extra);
    }
    let mut p = Prescan {
        initial: Vec::new(),
    };
    let mut seen = Seen::default();
    let mut both = Both(&mut seen, extra);
    let d = if filter.wraps() {
        let mut w = filter.wrap(&mut both);
        replay_decoder(dec, path, &mut Both(&mut p, &mut w), None, progress, 0)?
    } else {
        replay_decoder(dec, path, &mut Both(&mut p, &mut both), None, progress, 0)?
    };
    // Discovered innermost first; the stack is built from the bottom.
    for v in &mut p.initial {
        v.reverse();
    }
    let origin = plan_origin(&d.threads, &seen.shown, filter);
    Ok(Plan {
        initial: p.initial,
        origin,
        info: d.info,
        threads: d.threads,
        shown: seen.shown,
        calls: seen.calls,
    })
}

/// Time zero of the outputs: the earliest window start of any thread that recorded calls.
pub fn origin(threads: &[ThreadStats]) -> u64 {
    threads
        .iter()
        .filter(|t| t.function_records > 0)
        .map(|t| t.first_tsc)
        .min()
        .unwrap_or(0)
}

/// When the log was taken: the run record's `end_tsc`, or the latest record of `threads` if
/// that is later (a log without a run record). Tasks not completed by then end there.
pub fn log_end(info: &LogInfo, threads: &[ThreadStats]) -> u64 {
    let last = threads.iter().map(|t| t.last_tsc).max().unwrap_or(0);
    last.max(info.run.as_ref().map_or(0, |r| r.end_tsc))
}

/// Where thread `t`'s calls still open at the end of its records end: when the log was taken
/// (the run record's `end_tsc`), or the thread's last record if that is later (a log without a
/// run record). Not the last record alone: a hung thread's last record is the entry of the call
/// that hangs, which would then last 0 ns.
fn window_end<R: std::io::Read>(dec: &fdr_format::events::EventDecoder<R>, t: usize) -> u64 {
    let last = dec.threads().get(t).map_or(0, |s| s.last_tsc);
    let taken = dec.info().run.as_ref().map_or(0, |r| r.end_tsc);
    last.max(taken)
}
