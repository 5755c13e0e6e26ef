//! One module per command. Each takes the model (a log, its filter, a progress bar) and returns
//! what the command shows, or drives the model into a writer it is handed; printing is the
//! renderers' ([`crate::render`]). `profile` reads a profile file instead of a log; `recover`
//! reads crash boxes and writes the logs recovered from them. `export`
//! (with the `otlp` feature) hands the window to [`fdr_otlp`], which sends it.

pub mod account;
pub mod calls;
pub mod convert;
pub mod diff;
pub mod dump;
#[cfg(feature = "otlp")]
pub mod export;
pub mod flame;
pub mod info;
pub mod profile;
pub mod recover;
pub mod replay;
pub mod stack;
