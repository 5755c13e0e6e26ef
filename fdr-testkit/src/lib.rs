//! Test support for fdr's crates, a dev-dependency only: nothing here ships in the runtime or
//! in the `fdr` command. Synthetic logs written with the format's own encoders ([`synth`]), the
//! named shapes of `genlog --shape` ([`shapes`]) and its large benchmark log ([`bench_log`]),
//! profiles ([`profile`]) and crash boxes ([`crash_box`]) made by hand, and the OTLP requests
//! decoded with the official OpenTelemetry schema ([`otlp`]).
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
pub mod crash_box;
pub mod otlp;
pub mod profile;
pub mod shapes;
pub mod synth;
