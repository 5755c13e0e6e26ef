//! What a replay ([`crate::replay`]) hands out, and the trait of whoever receives it: a call's
//! entry and end, a thread's window opening and closing, and the task, poll, link and cull
//! events of the log, each a small struct passed by reference to a [`Sink`].
//!
//! A sink picks its own error type: a reader that cannot fail says so with
//! [`std::convert::Infallible`], a command converts its sinks' errors where it runs the replay.
//! Each method may also end the replay early and cleanly with [`ControlFlow::Break`] (a reader
//! that has what it wanted): the replay then says it was stopped, which is not an error.
//!
//! ```
//! use std::convert::Infallible;
//! use std::ops::ControlFlow;
//! use fdr_format::sink::{Close, Exit, Frame, Sink};
//!
//! /// The first `n` calls that ended, then no more.
//! struct FirstEnded(usize, Vec<u32>);
//! impl Sink for FirstEnded {
//!     type Error = Infallible;
//!     fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, Infallible> {
//!         self.1.push(e.frame.id);
//!         Ok(if self.1.len() == self.0 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
//!     }
//! }
//! let f = Frame::new(4, 0, 0, false);
//! let e = Exit { thread: 0, depth: 0, frame: &f, end: 9, how: Close::Exit, args: &[] };
//! let mut s = FirstEnded(2, Vec::new());
//! assert_eq!(s.exit(&e), Ok(ControlFlow::Continue(())));
//! assert_eq!(s.exit(&e), Ok(ControlFlow::Break(())));
//! ```

use std::convert::Infallible;
use std::ops::ControlFlow;

use crate::{AwaitEvent, CullKind, TaskKind, TaskLink, WakeEvent};

/// One open call.
///
/// ```
/// use fdr_format::sink::Frame;
/// let f = Frame::new(3, 100, 40, false);
/// assert_eq!(f.self_ticks(200), 60);
/// ```
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
    /// Byte offset of the record that opened it: its entry, or for an inferred call the exit
    /// that revealed it (the thread's first record of the window, with
    /// [`crate::replay::Replay::initial`]).
    pub at: u64,
    /// Where its arguments begin in the replay's argument stack of the thread.
    pub(crate) args_at: u32,
}

impl Frame {
    /// A call of `id` that started at `start`, with `child` ticks in completed callees.
    ///
    /// ```
    /// let f = fdr_format::sink::Frame::new(3, 100, 0, true);
    /// assert!(f.inferred && f.start == 100);
    /// ```
    pub fn new(id: u32, start: u64, child: u64, inferred: bool) -> Frame {
        Frame {
            id,
            start,
            child,
            inferred,
            at: 0,
            args_at: 0,
        }
    }

    /// Ticks spent in the call itself, given its end (0 when time went backwards).
    ///
    /// ```
    /// let f = fdr_format::sink::Frame::new(3, 100, 10, false);
    /// assert_eq!((f.self_ticks(150), f.self_ticks(50)), (40, 0));
    /// ```
    #[inline]
    pub fn self_ticks(&self, end: u64) -> u64 {
        end.saturating_sub(self.start).saturating_sub(self.child)
    }
}

/// How a call ended.
///
/// ```
/// use fdr_format::sink::Close;
/// assert_ne!(Close::Exit, Close::WindowEnd);
/// ```
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

/// A task event: what happened, to which task of which function.
///
/// ```
/// use fdr_format::{sink::TaskEvent, TaskKind};
/// let e = TaskEvent { kind: TaskKind::Created, id: 3, task: 9 };
/// assert_eq!(e.task, 9);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskEvent {
    /// Created, completed or cancelled.
    pub kind: TaskKind,
    /// The async function's id.
    pub id: u32,
    /// The task's process-unique id.
    pub task: u64,
}

/// Thread `thread`'s window starts at `tsc` (the start of the block of its first call).
///
/// ```
/// let s = fdr_format::sink::WindowStart { thread: 0, tsc: 1000 };
/// assert_eq!(s.tsc, 1000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowStart {
    /// The thread's index in the log ([`crate::events::EventDecoder::threads`]).
    pub thread: u32,
    /// Ticks.
    pub tsc: u64,
}

/// A call begins, its arguments known.
///
/// ```
/// use fdr_format::sink::{Enter, Frame};
/// let f = Frame::new(3, 100, 0, false);
/// let e = Enter { thread: 0, depth: 2, frame: &f, args: &[7] };
/// assert_eq!((e.frame.id, e.args), (3, &[7][..]));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Enter<'a> {
    /// The thread's index in the log.
    pub thread: u32,
    /// The call's index in the thread's stack (0 at the bottom).
    pub depth: usize,
    /// The call.
    pub frame: &'a Frame,
    /// Its logged arguments (at most [`crate::limits::MAX_CALL_ARGS`]).
    pub args: &'a [u64],
}

/// A call ends.
///
/// ```
/// use fdr_format::sink::{Close, Exit, Frame};
/// let f = Frame::new(3, 100, 0, false);
/// let e = Exit { thread: 0, depth: 0, frame: &f, end: 150, how: Close::Exit, args: &[] };
/// assert_eq!(e.end - e.frame.start, 50);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Exit<'a> {
    /// The thread's index in the log.
    pub thread: u32,
    /// The call's index in the thread's stack (0 at the bottom).
    pub depth: usize,
    /// The call.
    pub frame: &'a Frame,
    /// When it ended (ticks).
    pub end: u64,
    /// How it ended.
    pub how: Close,
    /// Its logged arguments.
    pub args: &'a [u64],
}

/// An async task was created, completed or cancelled (see [`crate::tasks`]).
///
/// ```
/// use fdr_format::{sink::{TaskEvent, TaskSeen}, TaskKind};
/// let t = TaskSeen { thread: 1, tsc: 50, window: 10,
///                    event: TaskEvent { kind: TaskKind::Created, id: 3, task: 9 } };
/// assert_eq!(t.event.task, 9);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskSeen {
    /// The index of the thread it happened on.
    pub thread: u32,
    /// When (ticks).
    pub tsc: u64,
    /// The start of the thread's window (of its current block while it has recorded no call):
    /// where a task whose creation is missing begins.
    pub window: u64,
    /// What happened, to which task.
    pub event: TaskEvent,
}

/// The call of `id` that just ended on `thread` (the last [`Sink::exit`] of that thread) was a
/// poll that served async task `task`.
///
/// ```
/// let p = fdr_format::sink::PollSeen { thread: 0, id: 3, task: 9 };
/// assert_eq!(p.task, 9);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollSeen {
    /// The thread's index in the log.
    pub thread: u32,
    /// The async function's id.
    pub id: u32,
    /// The task's process-unique id.
    pub task: u64,
}

/// An async task was tied to another (its parent, or a task it follows from) by `thread`.
///
/// ```
/// use fdr_format::{sink::LinkSeen, LinkKind, TaskLink};
/// let link = TaskLink { kind: LinkKind::Parent, id: 3, task: 9, other_id: 2, other_task: 8 };
/// let l = LinkSeen { thread: 0, tsc: 70, link };
/// assert_eq!(l.link.other_task, 8);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSeen {
    /// The index of the thread that made the link.
    pub thread: u32,
    /// When (ticks).
    pub tsc: u64,
    /// Which tasks, how.
    pub link: TaskLink,
}

/// A wait at an await site ended on `thread` at `tsc` (it began `event.waited` ticks before).
///
/// ```
/// use fdr_format::{sink::AwaitSeen, AwaitEvent};
/// let event = AwaitEvent { site: 9, function: 3, waited: 40, polls: 1, dropped: false };
/// let a = AwaitSeen { thread: 0, tsc: 70, event, in_poll: true };
/// assert_eq!(a.tsc - a.event.waited, 30);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AwaitSeen {
    /// The thread's index in the log.
    pub thread: u32,
    /// When the wait ended (ticks).
    pub tsc: u64,
    /// The site, the wait and how it ended.
    pub event: AwaitEvent,
    /// It happened inside a poll: a call of the async function is open on the thread, and the
    /// innermost one is the poll (the next exit of the function on the thread, which
    /// [`Sink::polled`] ties to its task). Otherwise the task was dropped while it waited, and
    /// its cancellation came just before on the thread.
    pub in_poll: bool,
}

/// A poll of an async function began on `thread` at `tsc` after its task was woken (see
/// [`WakeEvent`]); the poll is the innermost open call of the function on the thread.
///
/// ```
/// use fdr_format::{sink::WokenSeen, WakeEvent};
/// let event = WakeEvent { function: 3, woken_at: 40, waker_tid: 9 };
/// let w = WokenSeen { thread: 0, tsc: 70, event };
/// assert_eq!(w.scheduled(), 30);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WokenSeen {
    /// The thread's index in the log.
    pub thread: u32,
    /// When the poll began (ticks).
    pub tsc: u64,
    /// The wake-up.
    pub event: WakeEvent,
}

impl WokenSeen {
    /// Ticks from the wake-up to the poll (0 when the clocks of the two threads disagree the
    /// other way).
    pub fn scheduled(&self) -> u64 {
        self.tsc.saturating_sub(self.event.woken_at)
    }
}

/// A function was culled or restored by `thread`.
///
/// ```
/// use fdr_format::{sink::CullSeen, CullKind};
/// let c = CullSeen { thread: 0, tsc: 70, kind: CullKind::Culled, id: 3 };
/// assert_eq!(c.id, 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CullSeen {
    /// The thread's index in the log.
    pub thread: u32,
    /// When (ticks).
    pub tsc: u64,
    /// Culled or restored.
    pub kind: CullKind,
    /// The function's id.
    pub id: u32,
}

/// The log is read: `thread`'s calls still open were closed at `last`, the end of its window.
///
/// ```
/// let d = fdr_format::sink::ThreadDone { thread: 0, last: 5000 };
/// assert_eq!(d.last, 5000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadDone {
    /// The thread's index in the log.
    pub thread: u32,
    /// The end of its window (ticks).
    pub last: u64,
}

/// Go on with the replay: what every method of [`Sink`] returns by default.
///
/// ```
/// assert!(fdr_format::sink::GO_ON.is_continue());
/// ```
pub const GO_ON: ControlFlow<()> = ControlFlow::Continue(());

/// What a consumer does with the calls of a replay, in record order. Every method does nothing
/// and goes on by default. An error ends the replay with that error; [`ControlFlow::Break`]
/// ends it cleanly ([`crate::replay::Replayed::Stopped`]): nothing more is handed on, not even
/// the closing of the calls still open.
///
/// ```
/// use std::ops::ControlFlow;
/// use fdr_format::sink::{Close, Exit, Frame, Sink, GO_ON};
/// /// Counts the calls that ended.
/// struct Count(u64);
/// impl Sink for Count {
///     type Error = std::convert::Infallible;
///     fn exit(&mut self, _: &Exit<'_>) -> Result<ControlFlow<()>, Self::Error> {
///         self.0 += 1;
///         Ok(GO_ON)
///     }
/// }
/// let f = Frame::new(1, 0, 0, false);
/// let mut c = Count(0);
/// c.exit(&Exit { thread: 0, depth: 0, frame: &f, end: 5, how: Close::Exit, args: &[] }).unwrap();
/// assert_eq!(c.0, 1);
/// ```
pub trait Sink {
    /// What ends a replay from the sink's side (a limit, a failed write ...).
    type Error;

    /// A thread's window starts: once per thread, before its first call and before the calls
    /// of [`crate::replay::Replay::initial`] are entered.
    fn start(&mut self, s: &WindowStart) -> Result<ControlFlow<()>, Self::Error> {
        let _ = s;
        Ok(GO_ON)
    }

    /// A call begins: once its arguments are known.
    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, Self::Error> {
        let _ = e;
        Ok(GO_ON)
    }

    /// A call ends.
    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, Self::Error> {
        let _ = e;
        Ok(GO_ON)
    }

    /// An async task was created, completed or cancelled.
    fn task(&mut self, t: &TaskSeen) -> Result<ControlFlow<()>, Self::Error> {
        let _ = t;
        Ok(GO_ON)
    }

    /// The call that just ended on a thread was a poll of an async task.
    fn polled(&mut self, p: &PollSeen) -> Result<ControlFlow<()>, Self::Error> {
        let _ = p;
        Ok(GO_ON)
    }

    /// An async task was tied to another.
    fn link(&mut self, l: &LinkSeen) -> Result<ControlFlow<()>, Self::Error> {
        let _ = l;
        Ok(GO_ON)
    }

    /// A wait at an await site ended.
    fn awaited(&mut self, a: &AwaitSeen) -> Result<ControlFlow<()>, Self::Error> {
        let _ = a;
        Ok(GO_ON)
    }

    /// A poll began that a wake-up of its task had asked for.
    fn woken(&mut self, w: &WokenSeen) -> Result<ControlFlow<()>, Self::Error> {
        let _ = w;
        Ok(GO_ON)
    }

    /// A function was culled or restored.
    fn cull(&mut self, c: &CullSeen) -> Result<ControlFlow<()>, Self::Error> {
        let _ = c;
        Ok(GO_ON)
    }

    /// The log is read and a thread's open calls are closed: once per thread, after those
    /// closes.
    fn end(&mut self, d: &ThreadDone) -> Result<ControlFlow<()>, Self::Error> {
        let _ = d;
        Ok(GO_ON)
    }
}

/// A sink lent out: what it is handed goes to the sink it borrows.
///
/// ```
/// use fdr_format::sink::{Ignore, Sink, ThreadDone};
/// fn feed(mut s: impl Sink) { let _ = s.end(&ThreadDone { thread: 0, last: 0 }); }
/// let mut d = Ignore;
/// feed(&mut d);
/// feed(&mut d); // still ours
/// ```
impl<S: Sink + ?Sized> Sink for &mut S {
    type Error = S::Error;

    #[inline]
    fn start(&mut self, s: &WindowStart) -> Result<ControlFlow<()>, S::Error> {
        (**self).start(s)
    }

    #[inline]
    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, S::Error> {
        (**self).enter(e)
    }

    #[inline]
    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, S::Error> {
        (**self).exit(e)
    }

    #[inline]
    fn task(&mut self, t: &TaskSeen) -> Result<ControlFlow<()>, S::Error> {
        (**self).task(t)
    }

    #[inline]
    fn polled(&mut self, p: &PollSeen) -> Result<ControlFlow<()>, S::Error> {
        (**self).polled(p)
    }

    #[inline]
    fn link(&mut self, l: &LinkSeen) -> Result<ControlFlow<()>, S::Error> {
        (**self).link(l)
    }

    #[inline]
    fn awaited(&mut self, a: &AwaitSeen) -> Result<ControlFlow<()>, S::Error> {
        (**self).awaited(a)
    }

    #[inline]
    fn woken(&mut self, w: &WokenSeen) -> Result<ControlFlow<()>, S::Error> {
        (**self).woken(w)
    }

    #[inline]
    fn cull(&mut self, c: &CullSeen) -> Result<ControlFlow<()>, S::Error> {
        (**self).cull(c)
    }

    #[inline]
    fn end(&mut self, d: &ThreadDone) -> Result<ControlFlow<()>, S::Error> {
        (**self).end(d)
    }
}

/// Two sinks fed the same calls, the first one first. An error of the first keeps the call from
/// the second; a stop of either ends the replay once both have had the call. Its error is the
/// first's, which the second's must convert into.
///
/// ```
/// use std::ops::ControlFlow;
/// use fdr_format::sink::{Both, Close, Exit, Frame, Sink, GO_ON};
/// struct Count(u64);
/// impl Sink for Count {
///     type Error = ();
///     fn exit(&mut self, _: &Exit<'_>) -> Result<ControlFlow<()>, ()> {
///         self.0 += 1;
///         Ok(GO_ON)
///     }
/// }
/// let (mut a, mut b) = (Count(0), Count(0));
/// let f = Frame::new(1, 0, 0, false);
/// Both(&mut a, &mut b).exit(&Exit { thread: 0, depth: 0, frame: &f, end: 5, how: Close::Exit, args: &[] })?;
/// assert_eq!((a.0, b.0), (1, 1));
/// # Ok::<(), ()>(())
/// ```
pub struct Both<A, B>(pub A, pub B);

/// Both halves' answers as one: the first's error, else a stop if either stopped.
macro_rules! both {
    ($self:ident . $method:ident ($event:expr)) => {{
        let first = $self.0.$method($event)?;
        let second = $self.1.$method($event)?;
        Ok(if first.is_break() { first } else { second })
    }};
}

impl<A: Sink, B: Sink> Sink for Both<A, B>
where
    A::Error: From<B::Error>,
{
    type Error = A::Error;

    fn start(&mut self, s: &WindowStart) -> Result<ControlFlow<()>, A::Error> {
        both!(self.start(s))
    }

    #[inline]
    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, A::Error> {
        both!(self.enter(e))
    }

    #[inline]
    fn exit(&mut self, e: &Exit<'_>) -> Result<ControlFlow<()>, A::Error> {
        both!(self.exit(e))
    }

    fn task(&mut self, t: &TaskSeen) -> Result<ControlFlow<()>, A::Error> {
        both!(self.task(t))
    }

    fn polled(&mut self, p: &PollSeen) -> Result<ControlFlow<()>, A::Error> {
        both!(self.polled(p))
    }

    fn link(&mut self, l: &LinkSeen) -> Result<ControlFlow<()>, A::Error> {
        both!(self.link(l))
    }

    fn awaited(&mut self, a: &AwaitSeen) -> Result<ControlFlow<()>, A::Error> {
        both!(self.awaited(a))
    }

    fn woken(&mut self, w: &WokenSeen) -> Result<ControlFlow<()>, A::Error> {
        both!(self.woken(w))
    }

    fn cull(&mut self, c: &CullSeen) -> Result<ControlFlow<()>, A::Error> {
        both!(self.cull(c))
    }

    fn end(&mut self, d: &ThreadDone) -> Result<ControlFlow<()>, A::Error> {
        both!(self.end(d))
    }
}

/// The sink that keeps nothing: for a replay run for what the decoder learns (its tables and
/// threads), or for a slot that wants a sink and has no use for one.
///
/// ```
/// use fdr_format::events::EventDecoder;
/// use fdr_format::replay::{replay, Replay};
/// use fdr_format::sink::Ignore;
/// let log = fdr_format::FileHeader::default().encode();
/// let mut dec = EventDecoder::new(&log[..]).unwrap();
/// assert!(replay(&mut dec, &mut Ignore, &Replay::default()).is_ok());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Ignore;

impl Sink for Ignore {
    type Error = Infallible;
}
