//! One module per command. Each takes the model (a log, its filter, a progress bar) and returns
//! what the command shows, or drives the model into a writer it is handed; printing is the
//! renderers' ([`crate::render`]). `profile` reads a profile file instead of a log; `recover`
//! reads crash boxes and writes the logs recovered from them; `view` gathers what the other
//! commands compute, and a timeline, for one page. `export` (with the `otlp` feature) hands the
//! window to [`fdr_otlp`], which sends it.

pub(crate) mod account;
pub(crate) mod await_sites;
pub(crate) mod calls;
pub(crate) mod convert;
pub(crate) mod diff;
pub(crate) mod dump;
pub(crate) mod explain;
#[cfg(feature = "otlp")]
pub(crate) mod export;
pub(crate) mod flame;
pub(crate) mod info;
pub(crate) mod profile;
pub(crate) mod recover;
pub(crate) mod replay;
pub(crate) mod stack;
pub(crate) mod view;
