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

mod args;
mod buffer;
mod clock;
mod config;
mod desc;
mod error;
pub mod hooks;
mod recorder;
mod rewind;
mod snapshot;
#[cfg(feature = "testing")]
pub mod testing;
mod thread;
mod writer;

pub use args::LogArg;
pub use clock::{calibration, Calibration};
pub use config::{Config, Mode, MAX_BUFFER_SIZE, MIN_BUFFER_SIZE};
pub use desc::{function, FnDesc, FnKindTag, FUNCTIONS};
pub use error::Error;
pub use hooks::{CallGuard, Instrumented};
pub use linkme;
pub use recorder::{recorder, start, Recorder, Stats};
