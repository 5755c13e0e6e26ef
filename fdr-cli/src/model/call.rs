//! A call as the model hands it out: the frame of an open call, how a call ended, and the
//! [`Sink`] every analysis implements to receive calls, arguments, task and cull events in
//! record order.

use fdr_format::{CullKind, TaskKind, TaskLink};

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
    pub(in crate::model) args_at: u32,
}

impl Frame {
    /// A call of `id` that started at `start`, with `child` ticks in completed callees.
    ///
    /// ```
    /// use fdr_cli::model::call::Frame;
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
    /// [`crate::model::tasks`]). `window` is the start of the thread's window (of its current block
    /// while it has recorded no call): where a task whose creation is missing begins.
    fn task(&mut self, thread: u32, tsc: u64, window: u64, ev: TaskEvent) -> Result<(), CliError> {
        let _ = (thread, tsc, window, ev);
        Ok(())
    }

    /// The call of `id` that just ended on `thread` (the last [`Sink::exit`] for that thread) was
    /// a poll that served async task `task`. Filters do not pass it on.
    fn polled(&mut self, thread: u32, id: u32, task: u64) -> Result<(), CliError> {
        let _ = (thread, id, task);
        Ok(())
    }

    /// The log is read; `thread`'s calls still open were closed at `last`, the end of its
    /// window (called once per thread, after those closes).
    fn end(&mut self, thread: u32, last: u64) -> Result<(), CliError> {
        let _ = (thread, last);
        Ok(())
    }

    /// An async task was tied to another (its parent, or a task it follows from) by `thread` at
    /// `tsc`.
    fn link(&mut self, thread: u32, tsc: u64, link: TaskLink) -> Result<(), CliError> {
        let _ = (thread, tsc, link);
        Ok(())
    }

    /// A function was culled or restored (by `thread`, at `tsc`): see [`crate::model::culls`].
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

/// Two sinks fed the same calls, the first one first.
///
/// ```
/// use fdr_cli::commands::account::Account;
/// use fdr_cli::model::call::{Both, Close, Frame, Sink};
/// use fdr_cli::model::trie::Trie;
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

    fn link(&mut self, thread: u32, tsc: u64, link: TaskLink) -> Result<(), CliError> {
        self.0.link(thread, tsc, link)?;
        self.1.link(thread, tsc, link)
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

/// A sink that does nothing (for a first pass that needs no extra sink).
///
/// ```
/// use fdr_cli::model::call::{Close, Frame, Nothing, Sink};
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
