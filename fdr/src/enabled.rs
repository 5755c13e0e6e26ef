//! The API with recording compiled in (the `enable` feature): the runtime's recorder.

pub use fdr_runtime::{join_trace, recorder, start, Recorder, TraceScope};
