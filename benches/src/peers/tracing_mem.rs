//! `tracing` with `#[instrument]` and a subscriber that stores span entries and exits, with a
//! timestamp each, into a preallocated per-thread ring: the least work a `tracing` subscriber
//! can do and still record what fdr records.
//!
//! The span id is the address of the span's static metadata, so the records name the function
//! without a span registry (the `tracing-subscriber` `Registry` would add a slab allocation per
//! span); nested instances of one span share an id, which this recorder never needs to tell
//! apart. The clock is `rdtsc`, the cheapest timestamp there is (fastrace's too); the subscriber
//! records no CPU number, so it has no use for `rdtscp`.

use std::cell::RefCell;
use std::sync::OnceLock;

use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

use crate::floor::rdtsc;
use crate::workload::body;

/// Records per thread ring: 8 MiB of 16-byte records, like fdr's default pool.
const RING_RECORDS: usize = 1 << 19;
/// Set in the span word of exit records.
const EXIT: u64 = 1 << 63;

#[derive(Clone, Copy, Default)]
struct Rec {
    span: u64,
    tsc: u64,
}

struct Ring {
    recs: Box<[Rec]>,
    next: usize,
}

thread_local! {
    static RING: RefCell<Ring> = RefCell::new(Ring {
        recs: vec![Rec::default(); RING_RECORDS].into_boxed_slice(),
        next: 0,
    });
}

#[inline(always)]
fn push(span: u64) {
    let tsc = rdtsc();
    RING.with(|r| {
        let mut r = r.borrow_mut();
        let at = r.next & (RING_RECORDS - 1);
        r.recs[at] = Rec { span, tsc };
        r.next = r.next.wrapping_add(1);
    });
}

/// The in-memory subscriber.
pub struct MemSubscriber;

impl Subscriber for MemSubscriber {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }

    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        Id::from_u64(span.metadata() as *const Metadata<'static> as u64)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, span: &Id) {
        push(span.into_u64());
    }

    fn exit(&self, span: &Id) {
        push(span.into_u64() | EXIT);
    }
}

/// Installs [`MemSubscriber`] as the global default (once per process).
///
/// ```
/// fdr_benches::peers::tracing_mem::setup();
/// assert_eq!(fdr_benches::peers::tracing_mem::recorded(), 0);
/// fdr_benches::peers::tracing_mem::run(3);
/// assert_eq!(fdr_benches::peers::tracing_mem::recorded(), 6);
/// let (span, exit, _tsc) = fdr_benches::peers::tracing_mem::last().unwrap();
/// assert!(exit && span != 0);
/// ```
pub fn setup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        tracing::subscriber::set_global_default(MemSubscriber)
            .expect("another global tracing subscriber is already installed");
    });
}

/// Records this thread has written so far (entries plus exits).
pub fn recorded() -> usize {
    RING.with(|r| r.borrow().next)
}

/// This thread's newest record: the span id, whether it is an exit, and its timestamp.
pub fn last() -> Option<(u64, bool, u64)> {
    RING.with(|r| {
        let r = r.borrow();
        let at = r.next.checked_sub(1)? & (RING_RECORDS - 1);
        let rec = r.recs[at];
        Some((rec.span & !EXIT, rec.span & EXIT != 0, rec.tsc))
    })
}

/// The leaf under `#[instrument]`.
#[tracing::instrument(skip_all)]
#[inline(never)]
pub fn leaf(x: u64) -> u64 {
    body(x)
}

/// `n` calls of [`leaf`].
#[inline(never)]
pub fn run(n: u64) -> u64 {
    crate::workload::drive(n, leaf)
}
