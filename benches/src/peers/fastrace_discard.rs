//! `fastrace` with `#[trace]`, under a root span per batch, reporting to a reporter that drops
//! the finished spans.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use fastrace::collector::{Config, Reporter, SpanContext, SpanRecord};
use fastrace::prelude::Span;

use super::batched;
use crate::workload::body;

static SPANS: AtomicU64 = AtomicU64::new(0);

/// A reporter that counts the spans it is given, to show that they were recorded, and drops them.
pub struct Discard;

impl Reporter for Discard {
    fn report(&mut self, spans: Vec<SpanRecord>) {
        SPANS.fetch_add(spans.len() as u64, Ordering::Relaxed);
        drop(spans);
    }
}

/// Spans handed to the reporter so far (leaf calls plus one root span per batch).
pub fn spans_reported() -> u64 {
    SPANS.load(Ordering::Relaxed)
}

/// Installs [`Discard`] with fastrace's default configuration (once per process). Its collector
/// thread wakes once a second, or earlier when a thread's queue fills up; nothing is dropped.
pub fn setup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| fastrace::set_reporter(Discard, Config::default()));
}

/// The leaf under `#[trace]`.
#[fastrace::trace]
#[inline(never)]
pub fn leaf(x: u64) -> u64 {
    body(x)
}

/// `n` calls of [`leaf`], [`BATCH`](super::BATCH) under each root span.
///
/// ```
/// use fdr_benches::peers::fastrace_discard::{flush, run, setup, spans_reported};
/// setup();
/// assert_eq!(run(2), 2_654_435_761 + 2);
/// run(2500);
/// flush();
/// // 2 + 2500 leaf spans and one root span per batch of at most 1000 calls.
/// assert_eq!(spans_reported(), 2 + 1 + 2500 + 3);
/// ```
#[inline(never)]
pub fn run(n: u64) -> u64 {
    batched(n, |start, len| {
        let root = Span::root("batch", SpanContext::random());
        let _parent = root.set_local_parent();
        crate::workload::drive(len, |i| leaf(start + i))
    })
}

/// Hands what is pending to the reporter.
pub fn flush() {
    fastrace::flush();
}

/// `n` calls of [`leaf`], then [`flush`]: fastrace's whole cost of recording them, the work
/// its collector thread does on the spans included.
///
/// ```
/// use fdr_benches::peers::fastrace_discard::{run_and_flush, setup, spans_reported};
/// setup();
/// let before = spans_reported();
/// run_and_flush(10);
/// assert_eq!(spans_reported() - before, 11);
/// ```
#[inline(never)]
pub fn run_and_flush(n: u64) -> u64 {
    let acc = run(n);
    flush();
    acc
}
