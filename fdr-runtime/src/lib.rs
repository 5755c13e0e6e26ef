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
//! Modules, top to bottom: each row uses only modules in the rows below it, never its own row
//! or one above (`tests/layers.rs` checks this table against every `crate::` path in the
//! sources, and that it lists every module).
//!
//! | modules | hold |
//! |---|---|
//! | `race_tests` | tests of snapshots, rewinds and re-entered hooks racing, under Miri too |
//! | `testing` | for tests: the injected clock and the controller on plain buffers |
//! | `trace_context` | joining a W3C trace: the marker call `join_trace` records |
//! | `hooks` | the typed hooks and guards the macros expand into |
//! | `task` | async tasks: ids, creation, completion, cancellation, task-latency triggers |
//! | `autostart` | `FDR_OPTIONS`: recording from the first call, logs at exit and on panic |
//! | `recorder` | the public API: start, snapshots, finish |
//! | `hot_path` | the path of every hook: bounds check, busy bracket, clock, controller; the cold path |
//! | `attach`, `background` | a thread joining a recording, taking buffers, leaving; the background writer: trigger and signal snapshots, the watchdog |
//! | `log_writer` | a window written as a log, the final one or a snapshot, to a writer or a file, with the profile beside it |
//! | `profile_log` | the profile written as a profile file |
//! | `controller`, `log_file`, `thread_local` | what to write for each event (policy); the log's layout on disk; the thread-local: a thread's state and the recording it belongs to |
//! | `age_cut`, `cull`, `rewind`, `session` | the window cut by age (`max_age`); culling functions whose calls are always erased; erasing calls shorter than the threshold; one recording, which one is running, fork handling |
//! | `buffer_copy`, `recording_flags`, `thread_state` | copying buffers while their owners write; the recorder gate copied into every descriptor (its `OFF` flag), and the sweeps that set each descriptor's flags for the recording; a thread's recording state |
//! | `merged_profile` | a recording's profile: the threads' call tries, merged |
//! | `export` | windows sent to an OpenTelemetry collector: the bounded queue and the sending thread |
//! | `pool` | the buffers, in the crash box or in the process's memory |
//! | `crash_box` | the pool's file mapped shared, which survives the process: laying it out, keeping it current, marking it at a crash signal, recovering the boxes of dead processes |
//! | `call_trie`, `clock`, `cpu_wait`, `cull_memory`, `host`, `options`, `record_writer`, `signal`, `trigger` | one thread's call trie (profile mode); time and CPU; how long a slow call's thread waited for a CPU; what culling learned, kept for the next run of the same build; ids, names and wall time; reading `FDR_OPTIONS` text into a `Config`; how words go into a buffer and are published; the snapshot signal's handler; slow-call triggers |
//! | `args`, `atomic_file`, `buffer_state`, `function_table`, `hook_call`, `injected`, `learned_limit`, `out_name`, `queue`, `registry`, `seam`, `stats`, `wakeup` | logged arguments; writing a file through its own temporary file; what an owner publishes for snapshots; the function table; the hooks' call to the recording path that keeps the caller's registers; values tests inject; learned slow-call limits; log file names; the free and retired queues; the threads; where unit tests stop a thread mid-operation; counters; waking the writer |
//! | `config` | the settings (`Config`): defaults, limits, the check before a start, each setting's `FDR_OPTIONS` key, form and default |
//! | `error` | errors |
//! | `platform` | what the operating system gives (thread and process ids, CPU numbers, clocks, signals, memory mappings, pipes, fork and exit hooks), a file per system; where fdr does not record, the same functions, inert |
//!
//! The record layout itself belongs to `fdr_format`.

#[cfg(feature = "record")]
mod age_cut;
mod args;
#[cfg(feature = "record")]
mod atomic_file;
#[cfg(feature = "record")]
mod attach;
#[cfg(feature = "record")]
mod autostart;
#[cfg(feature = "record")]
mod background;
#[cfg(feature = "record")]
mod buffer_copy;
#[cfg(feature = "record")]
mod buffer_state;
#[cfg(feature = "record")]
mod call_trie;
#[cfg(feature = "record")]
mod clock;
mod config;
#[cfg(feature = "record")]
mod controller;
#[cfg(feature = "record")]
mod cpu_wait;
#[cfg(feature = "record")]
mod crash_box;
#[cfg(feature = "record")]
mod cull;
#[cfg(feature = "record")]
mod cull_memory;
mod error;
#[cfg(feature = "record")]
mod export;
mod function_table;
#[cfg(feature = "record")]
mod hook_call;
#[cfg(feature = "record")]
pub mod hooks;
#[cfg(feature = "record")]
mod host;
#[cfg(feature = "record")]
mod hot_path;
#[cfg(feature = "record")]
mod injected;
mod learned_limit;
#[cfg(feature = "record")]
mod log_file;
#[cfg(feature = "record")]
mod log_writer;
#[cfg(feature = "record")]
mod merged_profile;
mod options;
#[cfg(feature = "record")]
mod out_name;
#[cfg(feature = "record")]
mod platform;
#[cfg(feature = "record")]
mod pool;
#[cfg(feature = "record")]
mod profile_log;
#[cfg(feature = "record")]
mod queue;
#[cfg(all(test, feature = "record"))]
mod race_tests;
#[cfg(feature = "record")]
mod record_writer;
#[cfg(feature = "record")]
mod recorder;
#[cfg(feature = "record")]
mod recording_flags;
#[cfg(feature = "record")]
mod registry;
#[cfg(feature = "record")]
mod rewind;
#[cfg(all(test, feature = "record"))]
mod seam;
#[cfg(feature = "record")]
mod session;
#[cfg(feature = "record")]
mod signal;
mod stats;
#[cfg(feature = "record")]
mod task;
#[cfg(any(feature = "testing", all(test, feature = "record")))]
pub mod testing;
#[cfg(feature = "record")]
mod thread_local;
#[cfg(feature = "record")]
mod thread_state;
#[cfg(feature = "record")]
mod trace_context;
#[cfg(feature = "record")]
mod trigger;
#[cfg(feature = "record")]
mod wakeup;

/// What the hooks' cold path runs when it finds the process's first call (or a forked child's)
/// with nothing decided: read `FDR_OPTIONS` and start the recording it asks for. The recording
/// path sits below the recorder it would start, so it does not name `autostart`: the root, above
/// every row of the table, plugs it in here (`tests/layers.rs` lets the root hold no other).
#[cfg(feature = "record")]
const START_FROM_ENV: fn() = autostart::run;

pub use args::{ArgKind, LogArg};
#[cfg(feature = "record")]
pub use clock::{calibration, Calibration};
pub use config::{
    Clock, Config, Limit, Mode, Signal, Trigger, DEFAULT_PROFILE_NODES, DEFAULT_THRESHOLD,
    MAX_BUFFER_SIZE, MAX_PROFILE_NODES, MIN_BUFFER_SIZE, OTLP_FLUSH, PROFILE_DEPTH,
};
pub use error::Error;
#[cfg(feature = "record")]
pub use function_table::{function, FUNCTIONS};
pub use function_table::{FnDesc, FnKindTag, Named};
#[cfg(feature = "record")]
pub use hooks::{Args, CallGuard, Instrumented, NoArgs, PollEntry};
pub use learned_limit::{
    AUTO_FLOOR, AUTO_K, AUTO_RECOMPUTE, AUTO_RECOMPUTE_MAX, AUTO_WARMUP, AUTO_WARMUP_TIME,
};
#[cfg(feature = "record")]
pub use linkme;
pub use options::parse_duration;
#[cfg(feature = "record")]
pub use recorder::{recorder, start, Recorder};
pub use stats::Stats;
#[cfg(feature = "record")]
pub use trace_context::{join_trace, TraceScope};
