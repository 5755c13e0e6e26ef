//! Recorder settings: the [`Config`] type, its builder, defaults and limits, and the check a
//! configuration passes before a recording starts (`settings`); where windows go to an
//! OpenTelemetry collector (`otlp`); each setting's `FDR_OPTIONS` key, with the form of its
//! value and its default (`keys`); the accepted range of every numeric setting, which its check,
//! its `FDR_OPTIONS` reader and its words all take (`ranges`); and `FDR_OPTIONS` text read into a
//! `Config` (`options`).

pub(crate) mod keys;
pub(crate) mod options;
mod otlp;
pub(crate) mod ranges;
mod settings;

pub(crate) use keys::{option_error, OPTIONS};
pub(crate) use otlp::Secrets;
pub use otlp::OTLP_FLUSH;
pub(crate) use settings::CrashDir;
pub use settings::{
    Clock, Config, Limit, Mode, Signal, Trigger, DEFAULT_LONG_POLL, DEFAULT_PROFILE_NODES,
    DEFAULT_THRESHOLD, MAX_BUFFER_SIZE, MAX_PROFILE_NODES, MIN_BUFFER_SIZE, PROFILE_DEPTH,
};
