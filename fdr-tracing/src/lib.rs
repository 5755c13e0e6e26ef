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
//! - A span entered more than once, or on another thread than the one that made it (an
//!   `Instrumented` future, entered at each poll and at its drop; a span kept and re-entered),
//!   is a task: its life, from its creation to its close, is a task whose latency `fdr account`
//!   gives on the `└ tasks` line (a span never closed is a task still open at the end of the
//!   log), with all its calls inside it. A span entered once, on the thread that made it, is
//!   only that call: short spans that are only calls are erased by rewind like short
//!   functions, where a task would keep them and the calls around them. Which of the two a
//!   span is shows only at its second entry, but its task begins at its creation, so a
//!   callsite decides at each creation from what its earlier spans showed: until one of them is
//!   closed after a single entry, its spans are tasks (the first burst of an async function's
//!   calls after a start is all tasks, each with all its polls; a sync callsite's first spans
//!   are tasks too); after that they are calls, until one is entered again, and from then on
//!   tasks.
//! - Spans nest with the calls around them, `#[instrument_fdr]` functions included, by the
//!   order of entries and exits on each thread. A span that is a task and whose parent span
//!   (contextual or explicit) is a task is linked to it, and `follows_from` between two tasks is
//!   kept too: `fdr calls` lists each task's links, `fdr replay` shows where they were made.
//! - Filters apply as to any layer: a span that a filter disables is not recorded.
//! - With [`FdrLayer::with_fields`], a span's first [`MAX_FIELDS`] fields are the arguments of
//!   its first entry (as `#[instrument_fdr(log_args)]` logs them: numbers as they are, floats
//!   by their bits, `bool` as 0 or 1; text and `Debug` values by a 64-bit hash of their text,
//!   [`text_value`]), and each event (`tracing::info!` and the like) is a call of no duration,
//!   named `target::name` of the event's callsite, whose arguments are its fields. Calls with
//!   arguments are never erased, so an event keeps the spans around it.
//!
//! Programs that do not use `tracing_subscriber` can install [`subscriber`] instead, which
//! records the same without a span registry and costs less per span. It also skips the spans
//! whose calls fdr would not record: while no recorder runs, and for a callsite the runtime
//! culled (its spans were all short for a long run; the runtime lets a few through now and
//! then, and restores the callsite when one is slow), `tracing` makes no span at all, which
//! costs a few nanoseconds:
//!
//! ```
//! tracing::subscriber::with_default(fdr_tracing::subscriber(), || {
//!     let _span = tracing::info_span!("work").entered();
//! });
//! ```
//!
//! The layer skips them too with [`FdrLayer::with_skip_unrecorded`]: for every layer of the
//! registry, since a layer that disables a span disables it for all (and a per-layer filter
//! that refuses a span leaves the registry making it). Use it where no other layer needs the
//! spans; the registry still costs its slot and reference counts for every span fdr records.
//!
//! Limits: at most [`SPARES`] callsites (spans and events) are recorded (the rest are counted
//! by [`dropped_callsites`]).

#![warn(missing_docs)]

mod callsites;
mod fields;
mod layer;
mod slab;
mod subscriber;
mod thread_spans;

use fdr_runtime::CallGuard;
use tracing_core::Event;

pub use callsites::{dropped_callsites, MAX_FIELDS, SPARES, TRACEPARENT_FIELD};
pub use fields::text_value;
pub use layer::FdrLayer;
pub use subscriber::FdrSubscriber;

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

/// A subscriber that records spans into fdr's recorder, without `tracing_subscriber`.
///
/// ```
/// tracing::subscriber::set_global_default(fdr_tracing::subscriber()).unwrap();
/// ```
pub fn subscriber() -> FdrSubscriber {
    FdrSubscriber::default()
}

/// Records an event as a call of no duration whose arguments are its fields.
fn record_event(event: &Event<'_>) {
    let meta = event.metadata();
    let Some(c) = callsites::register(meta, true) else {
        return;
    };
    let mut v = fields::Values::new(meta.fields().len());
    event.record(&mut v);
    drop(CallGuard::enter_args(c.desc(), v.args()));
}
