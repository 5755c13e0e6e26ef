//! One module per output: the text, CSV and JSON reports of each command, the flame graph SVG,
//! the Chrome JSON and FXT timelines, the pprof export of a profile (with the `otlp` feature),
//! the `fdr view` page (HTML), what `fdr recover` did with each crash box, and the parts they share (why the log was
//! written, thread labels and relative times, the culled functions, what the cost budget did,
//! dates, the local time zone).

pub(crate) mod account;
pub(crate) mod await_sites;
pub(crate) mod budget;
pub(crate) mod calls;
pub(crate) mod chrome;
pub(crate) mod culls;
pub(crate) mod dates;
pub(crate) mod diff;
pub(crate) mod dump;
pub(crate) mod explain;
pub(crate) mod flame;
pub(crate) mod fxt;
pub(crate) mod info;
pub(crate) mod labels;
#[cfg(feature = "otlp")]
pub(crate) mod pprof;
pub(crate) mod profile;
pub(crate) mod reason;
pub(crate) mod recover;
pub(crate) mod replay;
pub(crate) mod stack;
pub(crate) mod view;
