//! The `tracing_subscriber` layer: spans of the registry recorded as calls and tasks.

use fdr_runtime::hooks::{self, LinkKind};
use fdr_runtime::CallGuard;
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use crate::callsites::{self, Callsite};
use crate::fields::{TraceParent, Values};
use crate::{record_event, thread_spans};

/// The layer; see the crate's documentation and [`layer`](crate::layer).
#[derive(Clone, Copy, Debug, Default)]
pub struct FdrLayer {
    fields: bool,
    skip_unrecorded: bool,
}

impl FdrLayer {
    /// With `true`, a span's fields are recorded as the arguments of its first entry, and each
    /// event is recorded as a call of no duration whose arguments are its fields (see
    /// [the crate's documentation](crate) for how values are recorded).
    ///
    /// ```
    /// use tracing_subscriber::layer::SubscriberExt;
    /// let _s = tracing_subscriber::registry().with(fdr_tracing::layer().with_fields(true));
    /// ```
    pub fn with_fields(self, fields: bool) -> FdrLayer {
        FdrLayer { fields, ..self }
    }

    /// With `true`, the spans whose calls fdr would not record (no recorder runs, or their
    /// callsite is culled: its spans were all short for a long run) are not made at all, as
    /// [`subscriber`](crate::subscriber) does: such a span costs `tracing`'s question to the
    /// layers instead of the registry's slot, reference counts and stack. A layer that disables a
    /// span disables it for every layer of the registry, so this is for a registry whose other
    /// layers need no spans: a `fmt` layer beside it would print the events inside a skipped
    /// span without that span's name. Events are not skipped.
    ///
    /// ```
    /// use tracing_subscriber::layer::SubscriberExt;
    /// let _s = tracing_subscriber::registry().with(fdr_tracing::layer().with_skip_unrecorded(true));
    /// ```
    pub fn with_skip_unrecorded(self, skip: bool) -> FdrLayer {
        FdrLayer {
            skip_unrecorded: skip,
            ..self
        }
    }
}

/// What a span keeps in the registry, when it has anything to keep.
struct Kept {
    task: Option<u64>,
    /// Entered for the first time on the thread that made it while its callsite's spans had
    /// shown nothing ([`Callsite::unknown`]): closed without another entry, it teaches the
    /// callsite that its spans are calls.
    once: bool,
    fields: Option<Values>,
    /// The span's `traceparent` field: its calls run inside that trace.
    trace: Option<String>,
}

impl<S> tracing_subscriber::Layer<S> for FdrLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        // Whether a span is made is asked at each span when spans are skipped: a callsite is
        // culled and restored while the program runs.
        match self.skip_unrecorded && meta.is_span() {
            true => Interest::sometimes(),
            false => Interest::always(),
        }
    }

    fn enabled(&self, meta: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        // Returning false disables the span for every layer. A per-layer filter would not spare
        // the registry: in tracing-subscriber 0.3 the registry makes a span unless every one of
        // 64 possible filters refused it (`FilterMap::any_enabled`), whatever the number in use.
        !self.skip_unrecorded || callsites::records(meta)
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        // The callsite's descriptor is claimed here, at its first span, rather than when the
        // callsite registers: a callsite that filters disable claims none.
        let Some(c) = callsites::register(attrs.metadata(), self.fields) else {
            return;
        };
        // Decided here, at creation, where a task must begin (see `Callsite::spans_are_tasks`).
        let task = c.spans_are_tasks().then(|| hooks::task_created(c.desc()));
        if let Some(task) = task {
            // The registry knows the parent, contextual or explicit.
            let parent = ctx.span(id).and_then(|s| s.parent());
            if let Some((pc, ptask)) = parent.and_then(|p| task_of(&p)) {
                hooks::task_linked(c.desc(), task, LinkKind::Parent, pc.desc(), ptask);
            }
        }
        let fields = self.fields.then(|| {
            let mut v = Values::new(attrs.metadata().fields().len());
            attrs.record(&mut v);
            v
        });
        let trace = c.joins_trace().then(|| {
            let mut t = TraceParent::default();
            attrs.record(&mut t);
            t.0
        });
        let trace = trace.flatten();
        let plain = task.is_none() && fields.is_none() && trace.is_none();
        thread_spans::made_plain(id.into_u64(), plain.then_some(c));
        if !plain {
            if let Some(span) = ctx.span(id) {
                span.extensions_mut().insert(Kept {
                    task,
                    once: false,
                    fields,
                    trace,
                });
            }
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if !self.fields {
            return;
        }
        if let Some(span) = ctx.span(id) {
            if let Some(Kept {
                fields: Some(v), ..
            }) = span.extensions_mut().get_mut::<Kept>()
            {
                values.record(v);
            }
        }
    }

    fn on_follows_from(&self, span: &Id, follows: &Id, ctx: Context<'_, S>) {
        let (Some(s), Some(f)) = (ctx.span(span), ctx.span(follows)) else {
            return;
        };
        if let (Some((c, task)), Some((fc, ftask))) = (task_of(&s), task_of(&f)) {
            hooks::task_linked(c.desc(), task, LinkKind::FollowsFrom, fc.desc(), ftask);
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if self.fields {
            record_event(event);
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let first = thread_spans::first_entry_plain(id.into_u64());
        if let Some(Some(c)) = first {
            // Made on this thread, entered here first, keeping nothing in the registry: the
            // usual span needs no look-up.
            thread_spans::entered_plain(id.into_u64(), CallGuard::enter(c.desc()));
            return;
        }
        let Some(span) = ctx.span(id) else {
            return;
        };
        let Some(c) = callsites::find(span.metadata()) else {
            return;
        };
        if first.is_none() && !c.tasks() {
            // Entered again, or on another thread than the one that made it.
            c.make_tasks();
        }
        let (fields, trace) = match span.extensions_mut().get_mut::<Kept>() {
            Some(k) => {
                if first.is_some() && c.unknown() {
                    k.once = true;
                }
                (k.fields.take().filter(|_| self.fields), k.trace.clone())
            }
            None => (None, None),
        };
        let guard = match fields {
            Some(v) => CallGuard::enter_args(c.desc(), v.args()),
            None => CallGuard::enter(c.desc()),
        };
        thread_spans::entered(id.into_u64(), Some(guard));
        if let Some(tp) = trace {
            thread_spans::join_trace(&tp);
        }
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        thread_spans::exited(id.into_u64());
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if thread_spans::closed_plain(id.into_u64()) {
            // No task to end, nothing kept.
            return;
        }
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(c) = callsites::find(span.metadata()) else {
            return;
        };
        let (task, once) = match span.extensions().get::<Kept>() {
            Some(k) => (k.task, k.once),
            None => (None, false),
        };
        if let Some(task) = task {
            hooks::task_ended(c.desc(), task, true);
        }
        if once {
            // Entered once, on the thread that made it: a sync span, unless another span of
            // the callsite was entered again meanwhile.
            c.learn_calls();
        }
    }
}

/// A span of `c` is entered: one entered again, or on another thread than the one that made it,
/// makes the callsite's spans tasks. True for the span's first entry, on the thread that made it.
#[inline]
pub(crate) fn learn(c: Callsite, id: u64) -> bool {
    let first = thread_spans::first_entry(id);
    if !first && !c.tasks() {
        c.make_tasks();
    }
    first
}

/// The callsite and task of `span`, if it is a task.
fn task_of<'a, R: LookupSpan<'a>>(
    span: &tracing_subscriber::registry::SpanRef<'a, R>,
) -> Option<(Callsite, u64)> {
    let c = callsites::find(span.metadata())?;
    let task = span.extensions().get::<Kept>()?.task?;
    Some((c, task))
}
