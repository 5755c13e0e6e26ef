//! Test support, compiled only for tests (and with the `testing` feature, which the crate's own
//! tests, examples and benches turn on): nothing here is part of the `fdr` command.

pub mod bench_log;
pub mod crash_box;
pub mod otlp;
pub mod profile;
pub mod shapes;
pub mod synth;
