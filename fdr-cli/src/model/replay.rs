//! The replay engine: calls rebuilt from entry and exit events, one shadow stack per thread.
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
//! - Calls still open at the end are closed when the log was taken ([`Close::WindowEnd`]):
//!   they are open, and last at least until then.
//! - CPU migrations and TSC wraps only reset the timestamp base, which the event decoder has
//!   already folded into absolute timestamps.
//!
//! [`crate::model::pass`] runs it over a log behind a filter, in one reader or several.

use std::io::Read;

use fdr_format::events::{EventDecoder, EventKind, LogInfo, ThreadStats};
use fdr_format::FormatError;

use crate::model::call::{Close, Frame, Sink, TaskEvent, MAX_ARGS, MAX_DEPTH};
use crate::progress::Progress;
use crate::CliError;

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
    /// The function whose exit was the thread's previous event.
    last_exit: Option<u32>,
}

pub(super) fn input(path: &str) -> impl Fn(FormatError) -> CliError + '_ {
    move |err| CliError::Input {
        path: path.to_string(),
        err,
    }
}

/// Replays the log `dec` reads, whatever its input, into `sink`; `path` names it in errors.
///
/// ```
/// use fdr_cli::model::call::{Close, Frame, Sink};
/// use fdr_cli::model::replay::replay_decoder;
/// use fdr_cli::progress::Progress;
/// use fdr_cli::testing::synth::LogBuilder;
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
        // As fdr_format::window: a CPU change record does not come between a poll's exit and
        // its poll event; anything else does.
        let previous_exit = match ev.kind {
            EventKind::Cpu { .. } => th.last_exit,
            _ => th.last_exit.take(),
        };
        if !th.started
            && !matches!(
                ev.kind,
                EventKind::Block
                    | EventKind::Cpu { .. }
                    | EventKind::Task { .. }
                    | EventKind::Polled { .. }
                    | EventKind::Link(_)
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
            EventKind::Exit { id } => {
                close(th, ev.thread, id, ev.tsc, Close::Exit, sink)?;
                th.last_exit = Some(id);
            }
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
            EventKind::TailExit { id } => {
                close(th, ev.thread, id, ev.tsc, Close::TailExit, sink)?;
                th.last_exit = Some(id);
            }
            EventKind::Block => th.block_tsc = ev.tsc,
            // Task events do not change the call stack of the thread that polls.
            EventKind::Task { kind, id, task } => {
                let window = if th.started { th.first } else { th.block_tsc };
                sink.task(ev.thread, ev.tsc, window, TaskEvent { kind, id, task })?;
            }
            // Only right after the exit it speaks of (the poll whose exit came just before).
            EventKind::Polled { id, task } => {
                if previous_exit == Some(id) {
                    sink.polled(ev.thread, id, task)?;
                }
            }
            EventKind::Link(link) => sink.link(ev.thread, ev.tsc, link)?,
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

pub(super) fn too_deep(offset: u64) -> FormatError {
    FormatError::new(
        offset,
        format!(
            "calls are nested more than {MAX_DEPTH} deep on one thread; expected exits (is the \
             log corrupt?)"
        ),
    )
}

/// Why a replay stopped: the log (the path is added afterwards) or the sink.
pub(super) enum Failure {
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
pub(super) fn window_end<R: std::io::Read>(
    dec: &fdr_format::events::EventDecoder<R>,
    t: usize,
) -> u64 {
    let last = dec.threads().get(t).map_or(0, |s| s.last_tsc);
    let taken = dec.info().run.as_ref().map_or(0, |r| r.end_tsc);
    last.max(taken)
}
