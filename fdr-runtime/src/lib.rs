//! The recording runtime of fdr.
//!
//! Instrumented functions call the typed [hooks](crate::hooks) with their static [`FnDesc`].
//! Each thread writes 8-byte function records into a buffer it owns, taken from one pool
//! allocated at [`start`]; the records are those of LLVM XRay's flight data recorder (version 5).
//! Calls shorter than the threshold are erased again as they return (module `rewind`). A
//! [`Recorder`] writes the buffers out as one self-describing log, while recording goes on
//! ([`Recorder::snapshot`]) or at the end ([`Recorder::finish`]).
//!
//! ```no_run
//! let rec = fdr_runtime::start(fdr_runtime::Config::default())?;
//! // ... instrumented code runs ...
//! rec.finish("app.fdr")?;
//! # Ok::<(), fdr_runtime::Error>(())
//! ```

#![warn(missing_docs)]
#![cfg_attr(not(feature = "record"), allow(dead_code))]

//! The recording engine is behind the `record` feature (which `fdr/enable` turns on); without it
//! only the plain types exist and nothing of the runtime is linked into a program.

mod args;
#[cfg(feature = "record")]
mod buffer;
#[cfg(feature = "record")]
mod clock;
mod config;
mod desc;
mod error;
#[cfg(feature = "record")]
pub mod hooks;
#[cfg(all(test, feature = "testing"))]
mod race_tests;
#[cfg(feature = "record")]
mod recorder;
#[cfg(feature = "record")]
mod rewind;
#[cfg(feature = "record")]
mod snapshot;
mod stats;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "record")]
mod thread;
#[cfg(feature = "record")]
mod writer;

pub use args::LogArg;
#[cfg(feature = "record")]
pub use clock::{calibration, Calibration};
pub use config::{Config, Mode, MAX_BUFFER_SIZE, MIN_BUFFER_SIZE};
#[cfg(feature = "record")]
pub use desc::{function, FUNCTIONS};
pub use desc::{FnDesc, FnKindTag};
pub use error::Error;
#[cfg(feature = "record")]
pub use hooks::{CallGuard, Instrumented};
#[cfg(feature = "record")]
pub use linkme;
#[cfg(feature = "record")]
pub use recorder::{recorder, start, Recorder};
pub use stats::Stats;
