//! One module per output: the text, CSV and JSON reports of each command, the flame graph SVG,
//! the Chrome JSON and FXT timelines, the pprof export of a profile (with the `otlp` feature),
//! what `fdr recover` did with each crash box, and the parts they share (why the log was
//! written, thread labels and relative times, the culled functions, dates, the local time
//! zone).

pub mod account;
pub mod calls;
pub mod chrome;
pub mod culls;
pub mod dates;
pub mod diff;
pub mod dump;
pub mod flame;
pub mod fxt;
pub mod info;
pub mod labels;
#[cfg(feature = "otlp")]
pub mod pprof;
pub mod profile;
pub mod reason;
pub mod recover;
pub mod replay;
pub mod stack;
pub mod timezone;
