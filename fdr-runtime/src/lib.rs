//! The recording runtime of fdr.
//!
//! Instrumented functions call the typed [hooks] with their static [`FnDesc`].
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
//!
//! Modules are folders by concern, top to bottom: each row's code uses only the folders in the
//! rows below it, never one above (`tests/layers.rs` checks this table against every `crate::`
//! path in each folder's files, and that it lists every folder). Within a folder, one concept
//! per file.
//!
//! | modules | hold |
//! |---|---|
//! | `testing` | for tests: the injected clock, the controller on plain buffers, and the tests of snapshots, rewinds and re-entered hooks racing (under Miri too) |
//! | `hooks` | the typed hooks and guards the macros expand into; joining a W3C trace (`join_trace`) |
//! | `lifecycle` | `start`, snapshots and finish; `FDR_OPTIONS` (recording from the first call, logs at exit and on panic); the background writer (trigger and signal snapshots, the watchdog); the snapshot protocol; counters |
//! | `record` | the recording path: the hot path and its cold paths, the controller over the writer, the rewind, culling, async tasks, a thread's state from joining to leaving |
//! | `session` | one recording: its setup, what its threads share, which one is running (lock-free), the window it hands to outputs, fork handling, what culling learned for the next run |
//! | `output` | what a window becomes: the log file's layout, the age cut, the profile file, file names, files written whole |
//! | `export` | windows sent to an OpenTelemetry collector: the bounded queue and the sending thread |
//! | `buffers` | the pool and its queues, what an owner publishes for snapshots, copying buffers while their owners write, the crash box |
//! | `profile` | profile mode: one thread's call trie, a recording's tries merged |
//! | `trigger` | slow-call triggers: fixed and learned limits, a slow call's wait for a CPU, the snapshot signal |
//! | `tables` | the function table (descriptors, their flags for the running recording, logged arguments) and the thread registry |
//! | `platform` | what the operating system gives (thread and process ids, CPU numbers, clocks, signals, memory mappings, pipes, fork and exit hooks), a file per system; time and CPU; ids, names and wall time; waking the writer |
//! | `seams` | values tests inject in place of the machine's; where unit tests stop a thread mid-operation |
//! | `config` | the settings (`Config`): defaults, limits, the check before a start, `FDR_OPTIONS` keys and their text |
//! | `error` | errors |
//!
//! The record layout itself belongs to `fdr_format`.

#[cfg(feature = "record")]
mod buffers;
mod config;
mod error;
#[cfg(feature = "record")]
mod export;
#[cfg(feature = "record")]
pub mod hooks;
mod lifecycle;
#[cfg(feature = "record")]
mod output;
#[cfg(feature = "record")]
mod platform;
#[cfg(feature = "record")]
mod profile;
#[cfg(feature = "record")]
mod record;
#[cfg(feature = "record")]
mod seams;
#[cfg(feature = "record")]
mod session;
mod tables;
#[cfg(any(feature = "testing", all(test, feature = "record")))]
pub mod testing;
mod trigger;

/// What the hooks' cold path runs when it finds the process's first call (or a forked child's)
/// with nothing decided: read `FDR_OPTIONS` and start the recording it asks for. The recording
/// path sits below the recorder it would start, so it does not name `autostart`: the root, above
/// every row of the table, plugs it in here (`tests/layers.rs` lets the root hold no other).
#[cfg(feature = "record")]
const START_FROM_ENV: fn() = lifecycle::autostart::run;

pub use config::options::parse_duration;
pub use config::{
    Clock, Config, Limit, Mode, Signal, Trigger, DEFAULT_LONG_POLL, DEFAULT_PROFILE_NODES,
    DEFAULT_THRESHOLD, MAX_BUFFER_SIZE, MAX_PROFILE_NODES, MIN_BUFFER_SIZE, OTLP_FLUSH,
    PROFILE_DEPTH,
};
pub use error::Error;
#[cfg(feature = "record")]
pub use hooks::trace_context::{join_trace, TraceScope};
#[cfg(feature = "record")]
pub use hooks::{Args, CallGuard, Instrumented, NoArgs, PollEntry};
#[cfg(feature = "record")]
pub use lifecycle::recorder::{recorder, start, Recorder};
pub use lifecycle::stats::Stats;
#[cfg(feature = "record")]
pub use linkme;
#[cfg(feature = "record")]
pub use platform::clock::{calibration, Calibration};
pub use tables::args::{ArgKind, LogArg};
#[cfg(feature = "record")]
pub use tables::functions::{function, FUNCTIONS};
pub use tables::functions::{FnDesc, FnKindTag, Named};
pub use trigger::learned_limit::{
    AUTO_FLOOR, AUTO_K, AUTO_RECOMPUTE, AUTO_RECOMPUTE_MAX, AUTO_WARMUP, AUTO_WARMUP_TIME,
};
