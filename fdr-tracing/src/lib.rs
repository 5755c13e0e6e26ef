//! A [`tracing`](https://docs.rs/tracing) layer that records spans into fdr's flight recorder.
//!
//! Code already instrumented with `#[tracing::instrument]` records into the same per-thread
//! buffers as `#[fdr::instrument_fdr]` functions, with the same rewind of short calls, culling,
//! triggers, snapshots and log format, by adding one layer:
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt;
//! let subscriber = tracing_subscriber::registry().with(fdr_tracing::layer());
//! tracing::subscriber::with_default(subscriber, || {
//!     let _span = tracing::info_span!("work").entered();
//! });
//! ```
//!
//! What a span is in the log:
//!
//! - A span callsite is a function, named `target::name` (for `#[tracing::instrument]`, the
//!   module path and the function name). It gets its function id once, at its first span
//!   (so a callsite that filters disable takes no id): after that a hook finds it with a table
//!   lookup, never a string or a map per span.
//! - Each time a span is entered and exited is a call of that function, on the thread that
//!   entered it: an `Instrumented` future's span is entered at every poll, so its calls are its
//!   polls, as with an `async fn` under `#[instrument_fdr]` (and once more when the future is
//!   dropped, which `Instrumented` does inside its span).
//! - A span's life, from its creation to its close, is a task: `fdr account` gives its latency
//!   on the `└ tasks` line, and a span never closed is a task still open at the end of the log.
//! - Spans nest with the calls around them, `#[instrument_fdr]` functions included, by the
//!   order of entries and exits on each thread.
//! - Filters apply as to any layer: a span that a filter disables is not recorded.
//!
//! Limits: at most [`SPARES`] span callsites are recorded (the rest are counted by
//! [`dropped_callsites`]); a span's fields and the events inside it are not recorded.

#![warn(missing_docs)]

mod callsites;

use std::cell::RefCell;

use fdr_runtime::{hooks, CallGuard};
use tracing_core::span::{Attributes, Id};
use tracing_core::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

pub use callsites::{dropped_callsites, SPARES};

/// The layer; see the crate's documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct FdrLayer {
    _private: (),
}

/// The layer that records spans into fdr's recorder (which `fdr::start` or `FDR_OPTIONS`
/// starts, as for `#[instrument_fdr]` functions).
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt;
/// let _subscriber = tracing_subscriber::registry().with(fdr_tracing::layer());
/// ```
pub fn layer() -> FdrLayer {
    FdrLayer::default()
}

/// A span's task, kept in its extensions from its creation to its close.
struct Task(u64);

thread_local! {
    /// The spans this thread is in, innermost last, with the guard that records each exit.
    static ENTERED: RefCell<Vec<(u64, CallGuard)>> = const { RefCell::new(Vec::new()) };
}

impl<S> tracing_subscriber::Layer<S> for FdrLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        // The callsite's descriptor is claimed here, at its first span, rather than when the
        // callsite registers: a callsite that filters disable claims none.
        let Some(f) = callsites::register(attrs.metadata()) else {
            return;
        };
        let task = hooks::task_created(f);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Task(task));
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(f) = ctx.metadata(id).and_then(callsites::desc) else {
            return;
        };
        let guard = CallGuard::enter(f);
        // A thread's stack of spans outlives it by its destructors at most: then nothing is
        // recorded, which is what a thread that is gone records.
        let _ = ENTERED.try_with(|e| e.borrow_mut().push((id.into_u64(), guard)));
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        let id = id.into_u64();
        let _ = ENTERED.try_with(|e| {
            let mut e = e.borrow_mut();
            // Spans are exited in the reverse order of their entries; one exited out of order
            // closes the spans entered after it first, as an unwinding frame would.
            if let Some(at) = e.iter().rposition(|(x, _)| *x == id) {
                while e.len() > at {
                    drop(e.pop());
                }
            }
        });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(f) = callsites::desc(span.metadata()) else {
            return;
        };
        let task = span.extensions().get::<Task>().map(|t| t.0);
        if let Some(task) = task {
            hooks::task_ended(f, task, true);
        }
    }
}
