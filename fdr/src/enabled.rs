//! The API with recording compiled in (the `enable` feature): the runtime's recorder.

pub use fdr_runtime::{recorder, start, Recorder};
