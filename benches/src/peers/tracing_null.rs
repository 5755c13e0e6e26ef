//! A `tracing` subscriber that keeps nothing: what `tracing` costs by itself for a span that a
//! subscriber wants (the callsite check, the calls into the subscriber, the span's handle), the
//! floor under every subscriber; and one that asks at each span and refuses it ([`Refuse`]):
//! what `tracing` costs for a span a subscriber skips while the program runs (as fdr's skips
//! the spans of culled callsites), the floor under skipping.

use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// The methods of a subscriber that keeps nothing: one id for all spans.
macro_rules! keeps_nothing {
    () => {
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &Event<'_>) {}
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    };
}

/// The subscriber: every span wanted, one id for all, nothing kept.
pub struct Null;

impl Subscriber for Null {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    keeps_nothing!();
}

/// The subscriber that refuses every span, asked at each one (`Interest::sometimes`).
///
/// ```
/// tracing::subscriber::with_default(fdr_benches::peers::tracing_null::Refuse, || {
///     assert!(tracing::info_span!("skipped").is_disabled());
/// });
/// ```
pub struct Refuse;

impl Subscriber for Refuse {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }
    keeps_nothing!();
}

/// Installs [`Null`] as the global default (once per process).
///
/// ```
/// fdr_benches::peers::tracing_null::setup();
/// let _span = tracing::info_span!("nothing").entered();
/// ```
pub fn setup() {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        tracing::subscriber::set_global_default(Null)
            .expect("another global tracing subscriber is already installed");
    });
}
