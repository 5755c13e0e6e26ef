//! The standalone subscriber: spans recorded without `tracing_subscriber`'s registry, each a
//! slot of a slab whose id names its callsite's descriptor in one step.

use std::sync::atomic::Ordering;

use fdr_runtime::hooks::{self, LinkKind};
use fdr_runtime::CallGuard;
use tracing_core::span::{Attributes, Current, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, LevelFilter, Metadata, Subscriber};

use crate::callsites::{self, Callsite};
use crate::fields::Values;
use crate::layer::learn;
use crate::slab::{self, NO_FIELDS};
use crate::{record_event, thread_spans};

/// The id of a span that is not recorded (its callsite has no descriptor, or too many spans are
/// alive): every method ignores it.
const UNRECORDED: u64 = u64::MAX;

/// A `tracing` subscriber that records spans into fdr's recorder, for programs that do not use
/// `tracing_subscriber`; see [`subscriber`](crate::subscriber).
#[derive(Clone, Copy, Debug)]
pub struct FdrSubscriber {
    fields: bool,
    max_level: LevelFilter,
}

impl Default for FdrSubscriber {
    fn default() -> FdrSubscriber {
        FdrSubscriber {
            fields: false,
            max_level: LevelFilter::TRACE,
        }
    }
}

impl FdrSubscriber {
    /// Records fields and events, as [`FdrLayer::with_fields`](crate::FdrLayer::with_fields).
    ///
    /// ```
    /// let _s = fdr_tracing::subscriber().with_fields(true);
    /// ```
    pub fn with_fields(self, fields: bool) -> FdrSubscriber {
        FdrSubscriber { fields, ..self }
    }

    /// Records only spans (and events) at `level` or more important.
    ///
    /// ```
    /// let _s = fdr_tracing::subscriber().with_max_level(tracing_core::LevelFilter::INFO);
    /// ```
    pub fn with_max_level(self, level: impl Into<LevelFilter>) -> FdrSubscriber {
        FdrSubscriber {
            max_level: level.into(),
            ..self
        }
    }

    fn wanted(&self, meta: &Metadata<'_>) -> bool {
        *meta.level() <= self.max_level && (self.fields || meta.is_span())
    }
}

impl Subscriber for FdrSubscriber {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        // The descriptor is claimed at the callsite's first span or event, as by the layer:
        // a callsite registered but never used (or used only under another dispatcher) takes
        // none.
        match self.wanted(meta) {
            // Asked again at each span (`enabled`): a span whose call would record nothing is
            // not made at all.
            true if meta.is_span() => Interest::sometimes(),
            true => Interest::always(),
            false => Interest::never(),
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        if !self.wanted(meta) {
            return false;
        }
        // A span whose call the runtime would skip (no recorder runs, or its callsite is culled:
        // its spans were all short for a long run) costs nothing more than this question, as a
        // culled `#[instrument_fdr]` call costs one load: no slot, no id, no entry. The runtime
        // clears the cull now and then to let a few calls through, and from then on spans are
        // made again until it culls once more. Tasks are always made: their latency is kept
        // whatever their polls take.
        callsites::records(meta)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.max_level)
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let meta = attrs.metadata();
        let Some(c) = callsites::register(meta, self.fields) else {
            return Id::from_u64(UNRECORDED);
        };
        let Some((id, s)) = slab::alloc() else {
            return Id::from_u64(UNRECORDED);
        };
        s.callsite.store(u32::from(c.index()), Ordering::Relaxed);
        // Decided here, at creation, where a task must begin (see `Callsite::spans_are_tasks`).
        if c.spans_are_tasks() {
            let task = hooks::task_created(c.desc());
            s.task.store(task, Ordering::Relaxed);
            s.has_task.store(true, Ordering::Relaxed);
            let parent = match attrs.is_contextual() {
                true => thread_spans::current(),
                false => attrs.parent().map(Id::into_u64),
            };
            if let Some((pc, ptask)) = parent.and_then(task_of) {
                hooks::task_linked(c.desc(), task, LinkKind::Parent, pc.desc(), ptask);
            }
        }
        if self.fields {
            let mut v = Values::new(meta.fields().len());
            attrs.record(&mut v);
            for (to, from) in s.fields.iter().zip(v.args()) {
                to.store(*from, Ordering::Relaxed);
            }
            s.nfields.store(v.len as u8, Ordering::Relaxed);
        } else {
            s.nfields.store(NO_FIELDS, Ordering::Relaxed);
        }
        thread_spans::made(id);
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let Some(s) = slab::get(span.into_u64()) else {
            return;
        };
        let n = s.nfields.load(Ordering::Relaxed);
        if n == NO_FIELDS {
            return;
        }
        let mut v = Values::new(usize::from(n));
        for (to, from) in v.v.iter_mut().zip(&s.fields) {
            *to = from.load(Ordering::Relaxed);
        }
        values.record(&mut v);
        for (to, from) in s.fields.iter().zip(v.args()) {
            to.store(*from, Ordering::Relaxed);
        }
    }

    fn record_follows_from(&self, span: &Id, follows: &Id) {
        if let (Some((c, task)), Some((fc, ftask))) =
            (task_of(span.into_u64()), task_of(follows.into_u64()))
        {
            hooks::task_linked(c.desc(), task, LinkKind::FollowsFrom, fc.desc(), ftask);
        }
    }

    fn event(&self, event: &Event<'_>) {
        if self.fields {
            record_event(event);
        }
    }

    fn enter(&self, span: &Id) {
        let id = span.into_u64();
        let Some((c, s)) = lookup(id) else {
            return;
        };
        if learn(c, id) && c.unknown() {
            s.once.store(true, Ordering::Relaxed);
        }
        let guard = match s.nfields.load(Ordering::Relaxed) {
            NO_FIELDS => CallGuard::enter(c.desc()),
            _ => match s.nfields.swap(NO_FIELDS, Ordering::Relaxed) {
                NO_FIELDS => CallGuard::enter(c.desc()),
                n => {
                    let mut v = Values::new(usize::from(n));
                    for (to, from) in v.v.iter_mut().zip(&s.fields) {
                        *to = from.load(Ordering::Relaxed);
                    }
                    CallGuard::enter_args(c.desc(), v.args())
                }
            },
        };
        thread_spans::entered(id, Some(guard));
    }

    fn exit(&self, span: &Id) {
        thread_spans::exited(span.into_u64());
    }

    fn clone_span(&self, id: &Id) -> Id {
        slab::clone_ref(id.into_u64());
        id.clone()
    }

    fn try_close(&self, id: Id) -> bool {
        let id = id.into_u64();
        let Some(s) = slab::drop_ref(id) else {
            return false;
        };
        thread_spans::closed(id);
        if s.has_task.load(Ordering::Relaxed) {
            let c = Callsite::from_index(s.callsite.load(Ordering::Relaxed) as u16);
            if let Some(c) = c {
                hooks::task_ended(c.desc(), s.task.load(Ordering::Relaxed), true);
                if s.once.load(Ordering::Relaxed) {
                    // Entered once, on the thread that made it: a sync span, unless another
                    // span of the callsite was entered again meanwhile.
                    c.learn_calls();
                }
            }
        }
        slab::free(id);
        true
    }

    fn current_span(&self) -> Current {
        let Some(id) = thread_spans::current() else {
            return Current::none();
        };
        match lookup(id).and_then(|(c, _)| c.metadata()) {
            Some(meta) => Current::new(Id::from_u64(id), meta),
            None => Current::none(),
        }
    }
}

/// The live span of `id` and its callsite.
#[inline]
fn lookup(id: u64) -> Option<(Callsite, &'static slab::Slot)> {
    let s = slab::get(id)?;
    let c = Callsite::from_index(s.callsite.load(Ordering::Relaxed) as u16)?;
    Some((c, s))
}

/// The callsite and task of live span `id`, if it is a task.
fn task_of(id: u64) -> Option<(Callsite, u64)> {
    let (c, s) = lookup(id)?;
    s.has_task
        .load(Ordering::Relaxed)
        .then(|| (c, s.task.load(Ordering::Relaxed)))
}
