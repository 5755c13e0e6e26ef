//! Test support for fdr's crates, a dev-dependency only: nothing here ships in the runtime or
//! in the `fdr` command.
//!
//! What it holds, a module per concept:
//!
//! - logs made by hand: synthetic logs written with the format's own encoders ([`synth`]), the
//!   named shapes of `genlog --shape` ([`shapes`]) and its large benchmark log ([`bench_log`]),
//!   profiles ([`profile`]) and crash boxes ([`crash_box`]);
//! - futures polled by hand, one poll at a time ([`futures`]);
//! - logs a test recorded: a recorder on the injected clock that cleans up after itself, and
//!   descriptors declared without the macros ([`recording`]); the logs decoded into records that
//!   compare whole, and found in a test's own directory ([`logs`]);
//! - whole processes: the test binary run again as a child process, and the guard its child
//!   entry points start with ([`child`]);
//! - the tools and peers fdr's output is held to: `llvm-xray`, which fails the test when it is
//!   missing ([`llvm_xray`]); the official OpenTelemetry decoder and the OTLP request
//!   ([`otlp`]); an OTLP/HTTP collector that answers as a test scripts it ([`collector`]).
//!
//! # Where test support lives, and why
//!
//! - **Here**, everything that works through the crates' public APIs: a test of any crate
//!   adds `fdr-testkit` to its `[dev-dependencies]`, and the product crates keep no test code
//!   in their API.
//! - **`fdr_runtime::testing`** (the runtime's `testing` feature; this crate turns it on): the
//!   seam into the runtime's internals, which no other crate can reach: the injected clock, CPU
//!   number and thread ids, the controller alone on plain buffers, the switches that hold a
//!   recovery or fail a reservation. It cannot move here: it sets the runtime's private state.
//!   It adds nothing to the recording path (the injected clock is a clock source chosen at
//!   start) and exists only when a dev-dependency asks for the feature. Tests call it by that
//!   path; the facade re-exports it as `fdr::testing` under its own `testing` feature.
//! - **`fdr-tests`**: the integration tests, and nothing else; **`fdr-cli/tests/common`**: the
//!   fixtures of the `fdr` command's own tests (the logs its golden outputs are of, the `fdr`
//!   binary run under memory and CPU limits).
//!
//! ```
//! let mut log = fdr_testkit::synth::LogBuilder::new(1_000_000_000);
//! log.function(1, "app::main", &[]);
//! let mut b = log.block(7, 0, 100);
//! b.enter(1, 100);
//! b.exit(1, 150);
//! b.finish();
//! let w = fdr_format::window::calls(&log.finish()[..]).unwrap();
//! assert_eq!(w.calls[0].duration_ns, 50);
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod bench_log;
pub mod child;
pub mod collector;
pub mod crash_box;
pub mod futures;
pub mod llvm_xray;
pub mod logs;
pub mod otlp;
pub mod profile;
pub mod recording;
pub mod shapes;
pub mod synth;
