//! The replay engine: a log's records turned into calls, one shadow stack per thread, handed
//! to a [`Sink`] in record order. It is the one place the rules of reconstruction live
//! (`docs/FORMAT.md`, "How time is reconstructed" and "Windows, and calls cut by them"); every
//! consumer (the `fdr` command's analyses, [`crate::window`], the OTLP exporters) is a sink.
//!
//! What real recordings contain and how it is handled:
//!
//! - Each thread has a shadow stack. An entry opens a call; its [`Sink::enter`] comes once its
//!   arguments are known (at most [`MAX_CALL_ARGS`] kept, more ignored).
//! - An exit or a tail exit closes the topmost open call of its function, and first the calls
//!   above it, at the same time ([`Close::Unwound`]). The tail-called function's own exit
//!   closes it in turn.
//! - A ring window may start mid-stack: an exit whose function is not open on the thread closes
//!   every open call, and is a call *inferred* to have started at the thread's window start
//!   (the start of the block of its first call; [`Frame::inferred`]). The calls completed
//!   before it at the bottom of the stack, the previous inferred call included, are its callees
//!   (its [`Frame::child`] counts them). With the frames the first pass
//!   ([`crate::first_pass`]) found open at each window's start ([`Replay::initial`]), those
//!   calls are entered when the window starts instead, so that time-ordered outputs see a
//!   begin before every end.
//! - Calls still open when the thread's records end are closed at the window's end
//!   ([`window_end`]; [`Close::WindowEnd`]): they were running, and lasted at least until then.
//! - CPU migrations and TSC wraps only reset the timestamp base, which the event decoder has
//!   already folded into absolute timestamps.
//! - A poll event ties the call whose exit came just before it (a CPU change record may sit in
//!   between) to the async task it served ([`Sink::polled`]).
//!
//! Memory is each thread's open calls (at most [`MAX_CALL_DEPTH`], past which the log is an error)
//! and their arguments; nothing recurses on the log's depth.
//!
//! ```
//! use std::ops::ControlFlow;
//! use fdr_format::events::EventDecoder;
//! use fdr_format::replay::{replay, Replay, Replayed};
//! use fdr_format::sink::{Exit, Sink, GO_ON};
//! use fdr_format::{block_preamble, function_record, BlockStart, FileHeader, FnKind};
//! use fdr_format::BLOCK_PREAMBLE_AFTER_EXTENTS;
//!
//! /// Each call's function, duration in ticks and whether its entry was inferred.
//! struct Durations(Vec<(u32, u64, bool)>);
//! impl Sink for Durations {
//!     type Error = std::convert::Infallible;
//!     fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, Self::Error> {
//!         self.0.push((e.frame.id, e.end - e.frame.start, e.frame.inferred));
//!         Ok(GO_ON)
//!     }
//! }
//!
//! // Thread 7's window starts at tick 100, inside a call of function 7.
//! let mut log = FileHeader::default().encode().to_vec();
//! let records = [(7, FnKind::Exit, 50), (8, FnKind::Enter, 50), (8, FnKind::Exit, 60)];
//! let start = BlockStart { tid: 7, wall_secs: 0, wall_micros: 0, pid: 1, cpu: 0, tsc: 100 };
//! for w in block_preamble(&start, BLOCK_PREAMBLE_AFTER_EXTENTS as u64 + 8 * records.len() as u64) {
//!     log.extend_from_slice(&w.to_le_bytes());
//! }
//! for (id, kind, delta) in records {
//!     log.extend_from_slice(&function_record(id, kind, delta).to_le_bytes());
//! }
//! let mut dec = EventDecoder::new(&log[..])?;
//! let mut d = Durations(Vec::new());
//! let how = replay(&mut dec, &mut d, &Replay::default()).map_err(|e| e.into_log().unwrap())?;
//! assert_eq!(how, Replayed::Whole);
//! assert_eq!(d.0, [(7, 50, true), (8, 60, false)]);
//! # Ok::<(), fdr_format::FormatError>(())
//! ```

use std::fmt;
use std::io::Read;
use std::ops::ControlFlow;

use crate::events::{EventDecoder, EventKind, LogInfo, ThreadStats};
use crate::limits::{MAX_CALL_ARGS, MAX_CALL_DEPTH};
use crate::sink::{
    AwaitSeen, Close, CullSeen, Enter, Exit, Frame, LinkSeen, PollSeen, Sink, TaskEvent, TaskSeen,
    ThreadDone, WindowStart, WokenSeen,
};
use crate::FormatError;

/// How a replay that met no error ended.
///
/// ```
/// use fdr_format::replay::Replayed;
/// assert_ne!(Replayed::Whole, Replayed::Stopped { offset: 80 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replayed {
    /// Every record was read, every call still open closed at its window's end, every thread
    /// ended ([`Sink::end`]).
    Whole,
    /// The sink asked to stop ([`ControlFlow::Break`]) at the record at `offset` (the end of
    /// the log for calls closed at the window's end): nothing was handed on after.
    Stopped {
        /// Where in the log.
        offset: u64,
    },
}

/// Why a replay failed: the log was wrong, or the sink said so.
///
/// ```
/// use fdr_format::{replay::ReplayError, FormatError};
/// let s: ReplayError<String> = ReplayError::Log(FormatError::new(8, "bad record".into()));
/// assert_eq!(s.into_log().unwrap().offset, 8);
/// ```
#[derive(Debug)]
pub enum ReplayError<E> {
    /// The log could not be decoded (or its calls nest deeper than [`MAX_CALL_DEPTH`]).
    Log(FormatError),
    /// The sink's error, and the byte offset of the record being replayed when it was made
    /// (the end of the log for calls closed at the window's end).
    Sink {
        /// What the sink said.
        error: E,
        /// Where in the log.
        offset: u64,
    },
}

impl<E> ReplayError<E> {
    /// The log's error, `None` for a sink's.
    ///
    /// ```
    /// use fdr_format::replay::ReplayError;
    /// assert!(ReplayError::Sink { error: (), offset: 0 }.into_log().is_none());
    /// ```
    pub fn into_log(self) -> Option<FormatError> {
        match self {
            ReplayError::Log(e) => Some(e),
            ReplayError::Sink { .. } => None,
        }
    }
}

impl<E: fmt::Display> fmt::Display for ReplayError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Log(e) => e.fmt(f),
            ReplayError::Sink { error, offset } => write!(f, "{error} (at byte {offset})"),
        }
    }
}

impl<E> From<FormatError> for ReplayError<E> {
    fn from(e: FormatError) -> Self {
        ReplayError::Log(e)
    }
}

/// How to replay: what a first pass knows, and who wants to hear of progress.
///
/// ```
/// use fdr_format::replay::Replay;
/// let initial = vec![vec![], vec![4, 9]]; // thread 1's window starts inside 4, inside it 9
/// let r = Replay { initial: &initial, ..Replay::default() };
/// assert_eq!(r.initial[1], [4, 9]);
/// ```
#[derive(Clone, Copy, Default)]
pub struct Replay<'a> {
    /// Per thread index, the functions of the calls open when its window started, from the
    /// bottom of the stack up ([`crate::first_pass::window_stacks`]): entered (inferred) at
    /// the window's start. Empty: every call whose entry is missing is inferred when its exit
    /// arrives.
    pub initial: &'a [Vec<u32>],
    /// Called with the byte offset reached every 2^20 events, and once at the end.
    pub progress: Option<&'a dyn Fn(u64)>,
}

/// A thread's shadow stack while the log is replayed.
#[derive(Default)]
struct ThreadState {
    stack: Vec<Frame>,
    args: Vec<u64>,
    /// Ticks of completed calls at the bottom of the stack: the callees of an inferred caller.
    root_child: u64,
    /// The window's start: the start of the block of the thread's first call.
    first: u64,
    /// Start of the current block.
    block_tsc: u64,
    started: bool,
    /// The top frame was entered with arguments that are still arriving.
    pending: bool,
    /// The function whose exit was the thread's previous event.
    last_exit: Option<u32>,
}

/// Replays the log `dec` reads into `sink`. The decoder keeps the log's tables and threads
/// ([`EventDecoder::info`], [`EventDecoder::threads`]) for after: complete when the replay was
/// [`Replayed::Whole`], as far as it read when the sink stopped it.
///
/// ```
/// use std::ops::ControlFlow;
/// use fdr_format::events::EventDecoder;
/// use fdr_format::replay::{replay, Replay, Replayed};
/// use fdr_format::sink::{Enter, Ignore, Sink};
/// use fdr_format::{block_preamble, function_record, BlockStart, FileHeader, FnKind};
/// use fdr_format::BLOCK_PREAMBLE_AFTER_EXTENTS;
///
/// let log = FileHeader::default().encode();
/// let mut dec = EventDecoder::new(&log[..]).unwrap();
/// assert_eq!(replay(&mut dec, &mut Ignore, &Replay::default()).unwrap(), Replayed::Whole);
/// assert!(dec.threads().is_empty());
///
/// /// Stops at the first call of function 2.
/// struct Until2;
/// impl Sink for Until2 {
///     type Error = std::convert::Infallible;
///     fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, Self::Error> {
///         Ok(if e.frame.id == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
///     }
/// }
/// let mut log = FileHeader::default().encode().to_vec();
/// let start = BlockStart { tid: 7, wall_secs: 0, wall_micros: 0, pid: 1, cpu: 0, tsc: 0 };
/// for w in block_preamble(&start, BLOCK_PREAMBLE_AFTER_EXTENTS as u64 + 16) {
///     log.extend_from_slice(&w.to_le_bytes());
/// }
/// for id in [1, 2] {
///     log.extend_from_slice(&function_record(id, FnKind::Enter, 10).to_le_bytes());
/// }
/// let mut dec = EventDecoder::new(&log[..]).unwrap();
/// let how = replay(&mut dec, &mut Until2, &Replay::default()).unwrap();
/// assert_eq!(how, Replayed::Stopped { offset: log.len() as u64 - 8 });
/// ```
pub fn replay<R: Read, S: Sink + ?Sized>(
    dec: &mut EventDecoder<R>,
    sink: &mut S,
    how: &Replay<'_>,
) -> Result<Replayed, ReplayError<S::Error>> {
    let mut ts: Vec<ThreadState> = Vec::new();
    let mut n: u32 = 0;
    let read = dec.for_each(|ev, at| -> Result<(), Located<S::Error>> {
        n = n.wrapping_add(1);
        if n & 0xfffff == 0 {
            if let Some(p) = how.progress {
                p(at);
            }
        }
        let t = ev.thread as usize;
        if t >= ts.len() {
            ts.resize_with(t + 1, ThreadState::default);
        }
        event(&mut ts[t], ev.thread, ev.tsc, ev.kind, at, sink, how).map_err(|f| Located(f, at))
    });
    if let Err(e) = read {
        return e.ended();
    }
    let at = dec.offset();
    if let Some(p) = how.progress {
        p(at);
    }
    let closed = (|| {
        for (t, th) in ts.iter_mut().enumerate() {
            let thread = t as u32;
            if th.pending {
                th.pending = false;
                flush_enter(th, thread, sink)?;
            }
            let end = window_end(dec.info(), dec.threads(), t);
            while !th.stack.is_empty() {
                pop(th, thread, end, Close::WindowEnd, sink)?;
            }
            flow(sink.end(&ThreadDone { thread, last: end }))?;
        }
        Ok(())
    })();
    match closed {
        Ok(()) => Ok(Replayed::Whole),
        Err(f) => Located(f, at).ended(),
    }
}

/// Why one event ended the replay.
enum Fail<E> {
    Log(FormatError),
    Sink(E),
    /// The sink asked to stop.
    Stop,
}

/// A [`Fail`] and the byte offset of the record it came at (the decoder's own errors carry
/// theirs).
struct Located<E>(Fail<E>, u64);

impl<E> Located<E> {
    /// The replay's answer.
    fn ended(self) -> Result<Replayed, ReplayError<E>> {
        let Located(f, offset) = self;
        match f {
            Fail::Log(e) => Err(ReplayError::Log(e)),
            Fail::Sink(error) => Err(ReplayError::Sink { error, offset }),
            Fail::Stop => Ok(Replayed::Stopped { offset }),
        }
    }
}

impl<E> From<FormatError> for Located<E> {
    fn from(e: FormatError) -> Self {
        Located(Fail::Log(e), 0)
    }
}

/// A sink's answer, a stop made a [`Fail`] so that `?` carries it out of the replay.
#[inline(always)]
fn flow<E>(r: Result<ControlFlow<()>, E>) -> Result<(), Fail<E>> {
    match r {
        Ok(ControlFlow::Continue(())) => Ok(()),
        Ok(ControlFlow::Break(())) => Err(Fail::Stop),
        Err(e) => Err(Fail::Sink(e)),
    }
}

#[inline]
fn event<S: Sink + ?Sized>(
    th: &mut ThreadState,
    thread: u32,
    tsc: u64,
    kind: EventKind,
    at: u64,
    sink: &mut S,
    how: &Replay<'_>,
) -> Result<(), Fail<S::Error>> {
    if th.pending && !matches!(kind, EventKind::Arg { .. }) {
        th.pending = false;
        flush_enter(th, thread, sink)?;
    }
    // A CPU change record may sit between a poll's exit and its poll event (the thread
    // migrated): it does not come between them. Anything else does, a new block included.
    let previous_exit = match kind {
        EventKind::Cpu { .. } => th.last_exit,
        _ => th.last_exit.take(),
    };
    if !th.started
        && !matches!(
            kind,
            EventKind::Block
                | EventKind::Cpu { .. }
                | EventKind::Task { .. }
                | EventKind::Polled { .. }
                | EventKind::Link(_)
                | EventKind::Await(_)
                | EventKind::Woken(_)
                | EventKind::Cull { .. }
        )
    {
        // The window opens with the block of the thread's first call; blocks of extension
        // records only (the leading block) do not count.
        th.started = true;
        th.first = th.block_tsc;
        flow(sink.start(&WindowStart {
            thread,
            tsc: th.first,
        }))?;
        if let Some(initial) = how.initial.get(thread as usize) {
            for &id in initial {
                push(th, id, th.first, true, at)?;
                flush_enter(th, thread, sink)?;
            }
        }
    }
    match kind {
        EventKind::Enter { id } => {
            push(th, id, tsc, false, at)?;
            flush_enter(th, thread, sink)?;
        }
        EventKind::EnterArgs { id } => {
            push(th, id, tsc, false, at)?;
            th.pending = true;
        }
        EventKind::Arg { value } => {
            if th.pending {
                let top = th.stack.last().map_or(0, |f| f.args_at as usize);
                if th.args.len() - top < MAX_CALL_ARGS {
                    th.args.push(value);
                }
            }
        }
        EventKind::Exit { id } => {
            close(th, thread, id, tsc, Close::Exit, at, sink)?;
            th.last_exit = Some(id);
        }
        EventKind::TailExit { id } => {
            close(th, thread, id, tsc, Close::TailExit, at, sink)?;
            th.last_exit = Some(id);
        }
        EventKind::Block => th.block_tsc = tsc,
        // Task events do not change the stack of the thread that polls.
        EventKind::Task { kind, id, task } => {
            let window = if th.started { th.first } else { th.block_tsc };
            flow(sink.task(&TaskSeen {
                thread,
                tsc,
                window,
                event: TaskEvent { kind, id, task },
            }))?;
        }
        // Only right after the exit it speaks of (the poll whose exit came just before).
        EventKind::Polled { id, task } => {
            if previous_exit == Some(id) {
                flow(sink.polled(&PollSeen { thread, id, task }))?;
            }
        }
        EventKind::Link(link) => flow(sink.link(&LinkSeen { thread, tsc, link }))?,
        // Inside the poll that passed the await: the innermost open call of its function.
        EventKind::Await(event) => {
            let in_poll = th.stack.iter().any(|f| f.id == event.function);
            flow(sink.awaited(&AwaitSeen {
                thread,
                tsc,
                event,
                in_poll,
            }))?
        }
        EventKind::Woken(event) => flow(sink.woken(&WokenSeen { thread, tsc, event }))?,
        EventKind::Cull { kind, id, .. } => flow(sink.cull(&CullSeen {
            thread,
            tsc,
            kind,
            id,
        }))?,
        EventKind::Cpu { .. } => {}
    }
    Ok(())
}

/// The error of a stack deeper than [`MAX_CALL_DEPTH`], at the record at `offset`.
///
/// ```
/// let e = fdr_format::replay::too_deep(64);
/// assert!(e.message.contains("nested more than 1048576 deep") && e.offset == 64);
/// ```
pub fn too_deep(offset: u64) -> FormatError {
    FormatError::new(
        offset,
        format!(
            "calls are nested more than {MAX_CALL_DEPTH} deep on one thread; expected exits (is the \
             log corrupt?)"
        ),
    )
}

#[inline]
fn push<E>(
    th: &mut ThreadState,
    id: u32,
    tsc: u64,
    inferred: bool,
    at: u64,
) -> Result<(), Fail<E>> {
    if th.stack.len() >= MAX_CALL_DEPTH {
        return Err(Fail::Log(too_deep(at)));
    }
    th.stack.push(Frame {
        id,
        start: tsc,
        child: 0,
        inferred,
        at,
        args_at: th.args.len() as u32,
    });
    Ok(())
}

#[inline]
fn flush_enter<S: Sink + ?Sized>(
    th: &ThreadState,
    thread: u32,
    sink: &mut S,
) -> Result<(), Fail<S::Error>> {
    if let Some(f) = th.stack.last() {
        flow(sink.enter(&Enter {
            thread,
            depth: th.stack.len() - 1,
            frame: f,
            args: &th.args[f.args_at as usize..],
        }))?;
    }
    Ok(())
}

// Always inlined, so that a sink's `exit` inlined in turn takes the call's fields from
// registers instead of an `Exit` built in memory (the hot path of per-function tables).
#[inline(always)]
fn pop<S: Sink + ?Sized>(
    th: &mut ThreadState,
    thread: u32,
    end: u64,
    how: Close,
    sink: &mut S,
) -> Result<(), Fail<S::Error>> {
    let Some(f) = th.stack.pop() else {
        return Ok(());
    };
    let depth = th.stack.len();
    flow(sink.exit(&Exit {
        thread,
        depth,
        frame: &f,
        end,
        how,
        args: &th.args[f.args_at as usize..],
    }))?;
    th.args.truncate(f.args_at as usize);
    let dur = end.saturating_sub(f.start);
    match th.stack.last_mut() {
        Some(parent) => parent.child = parent.child.saturating_add(dur),
        None => th.root_child = th.root_child.saturating_add(dur),
    }
    Ok(())
}

#[inline]
fn close<S: Sink + ?Sized>(
    th: &mut ThreadState,
    thread: u32,
    id: u32,
    end: u64,
    how: Close,
    at: u64,
    sink: &mut S,
) -> Result<(), Fail<S::Error>> {
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
        at,
        args_at: th.args.len() as u32,
    };
    th.stack.push(f);
    flush_enter(th, thread, sink)?;
    th.stack.pop();
    flow(sink.exit(&Exit {
        thread,
        depth: 0,
        frame: &f,
        end,
        how,
        args: &[],
    }))?;
    th.root_child = end.saturating_sub(f.start);
    Ok(())
}

/// When the log was taken: the run record's `end_tsc`, or the latest record of `threads` if
/// that is later (a log without a run record). Tasks not completed by then end there.
///
/// ```
/// use fdr_format::events::{LogInfo, ThreadStats};
/// let threads = [ThreadStats { last_tsc: 500, ..Default::default() }];
/// assert_eq!(fdr_format::replay::log_end(&LogInfo::default(), &threads), 500);
/// ```
pub fn log_end(info: &LogInfo, threads: &[ThreadStats]) -> u64 {
    let last = threads.iter().map(|t| t.last_tsc).max().unwrap_or(0);
    last.max(info.run.as_ref().map_or(0, |r| r.end_tsc))
}

/// Where thread index `t`'s calls still open at the end of its records end: when the log was
/// taken (the run record's `end_tsc`), or the thread's last record if that is later (a log
/// without a run record). Not the last record alone: a hung thread's last record is the entry
/// of the call that hangs, which would then last 0 ns.
///
/// ```
/// use fdr_format::events::{LogInfo, ThreadStats};
/// let threads = [ThreadStats { last_tsc: 500, ..Default::default() }];
/// assert_eq!(fdr_format::replay::window_end(&LogInfo::default(), &threads, 0), 500);
/// ```
pub fn window_end(info: &LogInfo, threads: &[ThreadStats], t: usize) -> u64 {
    let last = threads.get(t).map_or(0, |s| s.last_tsc);
    last.max(info.run.as_ref().map_or(0, |r| r.end_tsc))
}
