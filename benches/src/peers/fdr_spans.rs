//! fdr recording `tracing` spans: a recorder with the default configuration and, as the global
//! dispatcher, `fdr_tracing`'s standalone subscriber or its layer on `tracing-subscriber`'s
//! registry. For programs instrumented with `#[tracing::instrument]` (the real-crate drivers).

use tracing_subscriber::layer::SubscriberExt;

/// Which way spans reach fdr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// `fdr_tracing::subscriber()`.
    Subscriber,
    /// `tracing_subscriber::registry().with(fdr_tracing::layer())`.
    Layer,
    /// `tracing_subscriber::registry().with(fdr_tracing::layer().with_skip_unrecorded(true))`.
    LayerSkipping,
    /// `tracing_subscriber::registry()` with a layer that does nothing (`Identity`), nothing
    /// recorded: what the registry under the layer costs by itself. (The registry alone never
    /// frees a closed span: closing is its layers' stack's job.)
    Registry,
}

/// Starts a recorder (default configuration) and installs `way` as the global dispatcher (once
/// per process); the recorder, for the caller to finish.
///
/// ```no_run
/// use fdr_benches::peers::fdr_spans::{setup, Way};
/// let rec = setup(Way::Subscriber);
/// // ... code with #[tracing::instrument] runs ...
/// rec.finish_to(&mut std::io::sink()).unwrap();
/// ```
pub fn setup(way: Way) -> fdr::Recorder {
    let rec = fdr::start(fdr::Config::default()).expect("start the recorder");
    let dispatch = match way {
        Way::Subscriber => tracing::Dispatch::new(fdr_tracing::subscriber()),
        Way::Layer => {
            tracing::Dispatch::new(tracing_subscriber::registry().with(fdr_tracing::layer()))
        }
        Way::LayerSkipping => tracing::Dispatch::new(
            tracing_subscriber::registry().with(fdr_tracing::layer().with_skip_unrecorded(true)),
        ),
        Way::Registry => tracing::Dispatch::new(
            tracing_subscriber::registry().with(tracing_subscriber::layer::Identity::new()),
        ),
    };
    tracing::dispatcher::set_global_default(dispatch).expect("one global subscriber");
    rec
}
