//! The typed hooks that instrumented code calls, and the guards the macros expand into.
//!
//! Each hook takes the function's static descriptor; the id comes from the descriptor's place in
//! the link-time table. The guards make sure an exit is recorded on every way out of a function:
//! normal return, early `return`, `?`, and unwinding from a panic.

mod awaited;
pub(crate) mod trace_context;
mod wake;

pub use awaited::Awaited;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use fdr_format::FnKind;

use crate::record::hot_path;
use crate::tables::functions::FnDesc;

/// How [`task_linked`] ties a task to another: made inside it, or following from it. Here, beside
/// the one hook that takes it, for the integrations that call that hook (`fdr-tracing`).
pub use fdr_format::LinkKind;

/// Records the entry of `f`.
#[inline(always)]
pub fn enter(f: &'static FnDesc) {
    hot_path::record(f, FnKind::Enter);
}

/// Records the exit of `f` (or erases its entry, if the call was shorter than the threshold).
#[inline(always)]
pub fn exit(f: &'static FnDesc) {
    hot_path::record(f, FnKind::Exit);
}

/// Records that `f` is leaving through a tail call.
#[inline(always)]
pub fn tail_exit(f: &'static FnDesc) {
    hot_path::record(f, FnKind::TailExit);
}

/// Records the entry of `f` with its arguments, one call-argument record each.
#[inline]
pub fn enter_args(f: &'static FnDesc, args: &[u64]) {
    hot_path::record_args(f, args);
}

/// `f`, a descriptor named at run time ([`FnDesc::named`]), was just given its name: the running
/// recording, if any, applies its trigger patterns to it (a `tracing` span callsite that
/// registers after the recorder started is armed as a function known at start would be).
///
/// ```
/// use fdr_runtime::{hooks, FnDesc, FnKindTag, Named};
/// fn info() -> &'static Named {
///     static N: Named = Named { name: "doc::named", file: file!(), line: line!(), args: &[] };
///     &N
/// }
/// #[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
/// static LATE: FnDesc = FnDesc::named(info, FnKindTag::Scope);
/// hooks::named(&LATE);
/// ```
pub fn named(f: &'static FnDesc) {
    #[cfg(feature = "record")]
    {
        let Some(s) = crate::session::current() else {
            return;
        };
        if s.triggers().arm_named(f.id(), &f.name()) {
            crate::tables::flags::arm(s.setup().epoch, f, crate::session::epoch);
            crate::lifecycle::background::start(&s);
        }
        // What the last run of the build learned of this function, which the start could not
        // give it without its name.
        use crate::session::learned_culls::Learnt;
        let learnt = s.setup().learned_culls.when_named(f.id(), &f.name());
        match learnt {
            Some(_) if !crate::record::cull::may_cull(f.id()) => {}
            Some(Learnt::Culled) => {
                crate::tables::flags::cull_named(s.setup().epoch, f, crate::session::epoch)
            }
            Some(Learnt::Erased(run)) => {
                f.run().store(run, std::sync::atomic::Ordering::Relaxed);
            }
            None => {}
        }
    }
    #[cfg(not(feature = "record"))]
    let _ = f;
}

/// Records that a task of `f` was created (a call of an async function, or a `tracing` span's
/// lifetime), and returns its process-unique id for [`task_ended`]. Its polls are the calls of
/// `f` recorded until then; `fdr account` reports the task's latency from creation to end.
///
/// ```
/// use fdr_runtime::{hooks, FnDesc, FnKindTag};
/// #[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
/// static SPAN: FnDesc = FnDesc::new("doc::span", file!(), line!(), FnKindTag::Scope, &[]);
/// let task = hooks::task_created(&SPAN);
/// hooks::task_ended(&SPAN, task, true);
/// ```
#[inline]
pub fn task_created(f: &'static FnDesc) -> u64 {
    crate::record::task::created(f)
}

/// Whether a call of `f` entered now through [`CallGuard::enter`] would record nothing: no
/// recorder runs, or `f` is culled (its calls were all short for a long run; the runtime lets a
/// few through now and then to see whether that changed). Instrumentation that has work of its
/// own per call, as `fdr-tracing` has per span, asks this first and skips the call altogether,
/// so that a culled function costs it this one load too.
///
/// A function is culled only while a recorder runs, and a descriptor that no hook has used yet
/// never skips: its first call is the one that finds out whether `FDR_OPTIONS` starts one.
///
/// ```
/// use fdr_runtime::{hooks, FnDesc, FnKindTag};
/// #[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
/// static WORK: FnDesc = FnDesc::new("doc::work", file!(), line!(), FnKindTag::Function, &[]);
/// assert!(!hooks::skips(&WORK));
/// let recorder = fdr_runtime::start(fdr_runtime::Config::default()).unwrap();
/// assert!(!hooks::skips(&WORK));
/// recorder.finish_to(&mut std::io::sink()).unwrap();
/// assert!(hooks::skips(&WORK));
/// ```
#[inline(always)]
pub fn skips(f: &'static FnDesc) -> bool {
    crate::record::hot_path::skips(f)
}

/// Records that task `task` of `f` is tied to task `other_task` of `other`: `other` is its
/// parent (`LinkKind::Parent`: the task was made inside it, as a `tracing` span inside its
/// parent span), or the task follows from it (`LinkKind::FollowsFrom`). `fdr calls` shows a
/// task's links beside it.
///
/// ```
/// use fdr_runtime::hooks::{self, LinkKind};
/// use fdr_runtime::{FnDesc, FnKindTag};
/// #[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
/// static REQUEST: FnDesc = FnDesc::new("doc::request", file!(), line!(), FnKindTag::Scope, &[]);
/// #[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
/// static FETCH: FnDesc = FnDesc::new("doc::fetch", file!(), line!(), FnKindTag::Scope, &[]);
/// let request = hooks::task_created(&REQUEST);
/// let fetch = hooks::task_created(&FETCH);
/// hooks::task_linked(&FETCH, fetch, LinkKind::Parent, &REQUEST, request);
/// hooks::task_ended(&FETCH, fetch, true);
/// hooks::task_ended(&REQUEST, request, true);
/// ```
#[inline]
pub fn task_linked(
    f: &'static FnDesc,
    task: u64,
    kind: LinkKind,
    other: &'static FnDesc,
    other_task: u64,
) {
    crate::record::task::linked(f, task, kind, other, other_task)
}

/// Records that a task of `f` with id `task`, given by the caller, was created: for
/// instrumentation whose tasks have ids of their own (a runtime's, as `fdr::tokio::hooks` maps
/// tokio's task ids), which must not collide with the ids [`task_created`] hands out (those are
/// below 2^62).
///
/// ```
/// use fdr_runtime::{hooks, FnDesc, FnKindTag};
/// #[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
/// static SPAWNED: FnDesc = FnDesc::new("doc::spawned", file!(), line!(), FnKindTag::Async, &[]);
/// let task = 1 << 63 | 7;
/// hooks::task_created_as(&SPAWNED, task);
/// hooks::task_ended(&SPAWNED, task, true);
/// ```
#[inline]
pub fn task_created_as(f: &'static FnDesc, task: u64) {
    hot_path::record_task(f, fdr_format::TaskKind::Created, task, hot_path::When::Now);
}

/// One poll of a task of `f`, for instrumentation that sees the poll's beginning and its end in
/// two places (a runtime's hooks before and after each poll): [`TaskPoll::begin`] records the
/// entry, [`TaskPoll::end`] the exit and, when the poll was kept, the poll event that ties it to its task;
/// a poll longer than the long-poll limit fires, as an instrumented `async fn`'s does.
///
/// ```
/// use fdr_runtime::hooks::{self, TaskPoll};
/// use fdr_runtime::{FnDesc, FnKindTag};
/// #[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
/// static SPAWNED: FnDesc = FnDesc::new("doc::polled", file!(), line!(), FnKindTag::Async, &[]);
/// let task = 1 << 63 | 9;
/// hooks::task_created_as(&SPAWNED, task);
/// let poll = TaskPoll::begin(&SPAWNED);
/// poll.end(task);
/// hooks::task_ended(&SPAWNED, task, true);
/// ```
#[must_use = "a poll's exit is recorded by `end`"]
pub struct TaskPoll {
    f: &'static FnDesc,
    mark: Option<hot_path::PollMark>,
    guard: Option<CallGuard>,
}

impl TaskPoll {
    /// A poll of `f` begins: its entry is recorded (if anything records).
    #[inline]
    pub fn begin(f: &'static FnDesc) -> TaskPoll {
        if skips(f) {
            return TaskPoll {
                f,
                mark: None,
                guard: None,
            };
        }
        let mark = hot_path::poll_mark(f);
        TaskPoll {
            f,
            mark,
            guard: Some(CallGuard::enter(f)),
        }
    }

    /// The poll ends; it served task `task` (an id of [`task_created`] or [`task_created_as`]).
    #[inline]
    pub fn end(mut self, task: u64) {
        // The exit (judged against the long-poll limit as it is recorded), then the event that
        // follows it.
        drop(self.guard.take());
        if let Some(m) = self.mark {
            if hot_path::poll_kept(m) {
                hot_path::record_polled(self.f, task, false);
            }
        }
    }
}

/// Records that task `task` of `f` completed, or (with `completed` false) was dropped first.
#[inline]
pub fn task_ended(f: &'static FnDesc, task: u64, completed: bool) {
    crate::record::task::ended(f, task, completed)
}

/// Records the entry of a function on creation and its exit on drop, so the exit is written
/// however the function is left.
///
/// ```
/// use fdr_runtime::{CallGuard, FnDesc, FnKindTag};
/// #[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
/// static WORK: FnDesc = FnDesc::new("doc::work", file!(), line!(), FnKindTag::Function, &[]);
/// fn work() {
///     let _guard = CallGuard::enter(&WORK);
///     // ... the body ...
/// }
/// work();
/// ```
///
/// The guard remembers how its entry was recorded, so that the exit is recorded exactly when the
/// entry was: a call entered while nothing recorded records no exit even if a recorder starts
/// before it returns, and a call of a culled function records neither (see the runtime's `cull`
/// module). The bare hooks [`enter`] and [`exit`] keep no such state: they record whenever a
/// recorder runs, and do not cull.
#[must_use = "the exit is recorded when the guard is dropped"]
pub struct CallGuard {
    f: &'static FnDesc,
    entry: hot_path::Entry,
}

impl CallGuard {
    /// Records the entry of `f`.
    #[inline(always)]
    pub fn enter(f: &'static FnDesc) -> CallGuard {
        CallGuard {
            f,
            entry: hot_path::enter_guarded(f),
        }
    }

    /// Records the entry of `f` with its arguments. Functions with logged arguments are never
    /// culled.
    #[inline(always)]
    pub fn enter_args(f: &'static FnDesc, args: &[u64]) -> CallGuard {
        CallGuard {
            f,
            entry: hot_path::record_args(f, args),
        }
    }

    /// Records a tail exit now instead of an exit at drop: the function's frame ends here and
    /// its last expression, a call, runs as if called by the caller.
    #[inline(always)]
    pub fn tail(self) {
        hot_path::exit_guarded(self.f, self.entry, FnKind::TailExit);
        std::mem::forget(self);
    }
}

impl Drop for CallGuard {
    #[inline(always)]
    fn drop(&mut self) {
        hot_path::exit_guarded(self.f, self.entry, FnKind::Exit);
    }
}

/// How the polls of an [`Instrumented`] future record their entry: [`NoArgs`], or [`Args`] for
/// an `async fn` with logged arguments, which go on its first poll's entry.
pub trait PollEntry {
    /// Records the entry of one poll of `f`.
    fn enter(&mut self, f: &'static FnDesc) -> CallGuard;

    /// Whether a poll of `f` now would record nothing (see [`skips`]), known before the poll
    /// begins: its entry, its exit and its poll event are then all skipped after one load. By
    /// default never: the entry decides for itself.
    #[inline(always)]
    fn skips(&self, f: &'static FnDesc) -> bool {
        let _ = f;
        false
    }
}

/// Every poll is a plain entry.
pub struct NoArgs;

impl PollEntry for NoArgs {
    #[inline(always)]
    fn enter(&mut self, f: &'static FnDesc) -> CallGuard {
        CallGuard::enter(f)
    }

    #[inline(always)]
    fn skips(&self, f: &'static FnDesc) -> bool {
        skips(f)
    }
}

/// The first poll's entry carries these arguments (read when the future was made, at the call);
/// the later polls are plain entries.
pub struct Args<const N: usize>(Option<[u64; N]>);

impl<const N: usize> PollEntry for Args<N> {
    #[inline]
    fn enter(&mut self, f: &'static FnDesc) -> CallGuard {
        match self.0.take() {
            Some(args) => CallGuard::enter_args(f, &args),
            None => CallGuard::enter(f),
        }
    }
    // `skips` is the default, never: a function with logged arguments is never culled, and the
    // entry with arguments looks for a recorder itself.
}

/// The future of an instrumented `async fn`: a task. Its creation, its completion and, if it is
/// dropped first, its cancellation are recorded with a process-unique task id, and every poll is
/// recorded as an entry/exit pair of `f` on the thread that polls it; a poll that is kept (not
/// erased as short) is followed by a poll event with the task id, which ties it to its task. A
/// task that ends within the threshold with every poll erased is erased whole, as a short call
/// is, and a culled function's tasks are not recorded.
///
/// ```
/// use fdr_runtime::{FnDesc, FnKindTag, Instrumented};
/// #[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
/// static TASK: FnDesc = FnDesc::new("doc::task", file!(), line!(), FnKindTag::Async, &["n"]);
/// let fut = Instrumented::new(&TASK, async { 1 + 1 });
/// // With the arguments the first poll's entry carries:
/// let with = Instrumented::with_args(&TASK, [7], async { 7 });
/// # let _ = (fut, with);
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Instrumented<F, A: PollEntry = NoArgs> {
    f: &'static FnDesc,
    start: TaskStart,
    done: bool,
    entry: A,
    /// The waker the body is polled with, which notes when the task is woken (see `wake`).
    waker: wake::TaskWaker,
    inner: F,
}

/// The creation of a task, recorded before its future is made: what
/// [`Instrumented::started`] takes.
///
/// The expansion of an `async fn` takes it first and makes the future after it, so that nothing
/// that may unwind runs between making the future and putting it in its wrapper: the future is
/// then made in place, where an `Instrumented::new(f, async { .. })` would make it aside (to
/// drop it if the creation unwound) and copy it in, the future's whole size on every call.
///
/// ```
/// use fdr_runtime::hooks::TaskStart;
/// use fdr_runtime::{FnDesc, FnKindTag, Instrumented};
/// #[linkme::distributed_slice(fdr_runtime::FUNCTIONS)]
/// static TASK: FnDesc = FnDesc::new("doc::started", file!(), line!(), FnKindTag::Async, &[]);
/// let fut = Instrumented::started(&TASK, TaskStart::now(&TASK), async { 1 + 1 });
/// # let _ = fut;
/// ```
#[must_use = "a task's creation is ended by the future made with it"]
pub struct TaskStart {
    task: u64,
    made: crate::record::task::Made,
}

impl TaskStart {
    /// Records the creation of a task of `f` now (if anything records).
    #[inline(always)]
    pub fn now(f: &'static FnDesc) -> TaskStart {
        let (task, made) = crate::record::task::created_marked(f);
        TaskStart { task, made }
    }
}

impl<F> Instrumented<F> {
    /// Wraps `inner`, the body of a call of `f`, which creates the task.
    #[inline(always)]
    pub fn new(f: &'static FnDesc, inner: F) -> Instrumented<F> {
        Instrumented::started(f, TaskStart::now(f), inner)
    }

    /// Wraps `inner`, the body of a call of `f` whose task was created as `start` says (by
    /// [`TaskStart::now`] with the same `f`).
    #[inline(always)]
    pub fn started(f: &'static FnDesc, start: TaskStart, inner: F) -> Instrumented<F> {
        Instrumented::wrap(f, start, NoArgs, inner)
    }
}

impl<F, const N: usize> Instrumented<F, Args<N>> {
    /// Wraps `inner`, the body of a call of `f` with logged arguments `args`, which creates the
    /// task; the first poll's entry carries the arguments.
    #[inline(always)]
    pub fn with_args(f: &'static FnDesc, args: [u64; N], inner: F) -> Instrumented<F, Args<N>> {
        Instrumented::started_with_args(f, args, TaskStart::now(f), inner)
    }

    /// [`Instrumented::with_args`] for a task created as `start` says (see
    /// [`Instrumented::started`]).
    #[inline(always)]
    pub fn started_with_args(
        f: &'static FnDesc,
        args: [u64; N],
        start: TaskStart,
        inner: F,
    ) -> Instrumented<F, Args<N>> {
        Instrumented::wrap(f, start, Args(Some(args)), inner)
    }
}

impl<F, A: PollEntry> Instrumented<F, A> {
    #[inline(always)]
    fn wrap(f: &'static FnDesc, start: TaskStart, entry: A, inner: F) -> Instrumented<F, A> {
        Instrumented {
            f,
            start,
            done: false,
            entry,
            waker: wake::TaskWaker::new(),
            inner,
        }
    }
}

impl<F: Future, A: PollEntry> Future for Instrumented<F, A> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: it is never moved out of `self` (the `Drop` impl
        // only reads `f`, `start` and `done`), and `Instrumented` is `Unpin` only when `F` and `A`
        // are (the auto impl), so projecting the pin from the wrapper to the field upholds `F`'s
        // contract. The other fields are plain data, never pinned.
        let this = unsafe { self.get_unchecked_mut() };
        // When nothing records the poll (the usual state of a service compiled with fdr and
        // idle, or a culled or untimed function) and nothing recorded the task's creation, so
        // that its end is not recorded either, the poll costs two loads and a branch: the body's
        // poll is then the wrapper's last act, with nothing kept across it, and the wrapper
        // saves no registers and sets up no frame. The body's poll is written once here, where
        // the compiler inlines it as it would without the wrapper; the recorded poll is out of
        // line, so that the registers and stack it needs are not set up for every poll.
        if this.entry.skips(this.f) && this.start.made.skipped() {
            // SAFETY: as above.
            return unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
        }
        this.poll_recorded(cx)
    }
}

impl<F: Future, A: PollEntry> Instrumented<F, A> {
    /// A poll that records: its entry and exit (timed against the long-poll limit), its waker
    /// wrapped to see wake-ups, and the task's end when it completes.
    #[inline(never)]
    fn poll_recorded(&mut self, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `self` is the pinned wrapper `poll` projected (the same argument: `inner`
        // is never moved out, the other fields are plain data).
        let inner = unsafe { Pin::new_unchecked(&mut self.inner) };
        if self.entry.skips(self.f) {
            // Nothing records the poll, but the task's creation was recorded (before its
            // function was culled or untimed, or the recording ended): its end is.
            let polled = inner.poll(cx);
            if polled.is_ready() {
                self.completed(false);
            }
            return polled;
        }
        let mark = crate::record::hot_path::poll_mark(self.f);
        let polled = {
            // The entry and the exit time the poll against the long-poll limit as they are
            // recorded, the exit however the poll ends.
            let _guard = self.entry.enter(self.f);
            if self.f.details() & crate::tables::functions::WAKES_UNNOTED != 0 {
                // The budget stopped noting this function's wake-ups: the body gets the
                // executor's waker, as an unrecorded poll's does.
                self.waker.unnoted(cx.waker());
                inner.poll(cx)
            } else {
                let mut on_stack = std::mem::MaybeUninit::uninit();
                // SAFETY: the waker is used for this poll only: `body` is dropped at the end
                // of this block, before `self.waker`, `cx` and `on_stack` move or die.
                let body = unsafe { self.waker.for_poll(self.f, cx.waker(), &mut on_stack) };
                inner.poll(&mut Context::from_waker(&body))
            }
        };
        let ready = polled.is_ready();
        let ended = mark.is_some_and(|m| {
            crate::record::task::polled(
                self.f,
                &mut self.start.task,
                &self.start.made,
                m,
                ready && !self.done,
            )
        });
        if ready {
            self.completed(ended);
        }
        polled
    }

    /// The body returned `Ready`: the task's end is recorded once, unless the poll's own record
    /// (`ended`) did it.
    #[inline(always)]
    fn completed(&mut self, ended: bool) {
        if !self.done {
            self.done = true;
            if !ended {
                crate::record::task::ended_marked(self.f, self.start.task, &self.start.made, true);
            }
        }
    }
}

impl<F, A: PollEntry> Drop for Instrumented<F, A> {
    fn drop(&mut self) {
        // A task whose creation was not recorded first: its polls leave `done` unset (see `poll`).
        if !self.start.made.skipped() && !self.done {
            crate::record::task::ended_marked(self.f, self.start.task, &self.start.made, false);
        }
    }
}
