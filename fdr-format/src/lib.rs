//! The fdr log format: a valid XRay flight-data-recorder version 5 log whose leading block
//! carries fdr's own extension records (run settings, function table, thread names) as custom
//! events. `docs/FORMAT.md` in the repository describes the layout byte by byte.
//!
//! This crate has no dependencies: the runtime uses its encoders on the recording path, the
//! `fdr` command uses its streaming decoder.
//!
//! ```
//! use fdr_format::{function_record, decode_function_record, FnKind};
//! let word = function_record(42, FnKind::Enter, 1000);
//! assert_eq!(decode_function_record(word), Some((42, FnKind::Enter, 1000)));
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
pub mod events;
pub mod ext;
mod header;
pub mod reader;
mod record;
pub mod verify;

pub use error::FormatError;
pub use ext::{
    ClockSource, Extension, FunctionInfo, FunctionKind, RecordMode, RunInfo, ThreadInfo, EXT_MAGIC,
    MAX_EXT_PAYLOAD,
};
pub use header::{FileHeader, FDR_LOG_TYPE, FDR_VERSION, HEADER_SIZE};
pub use record::{
    decode_function_record, function_record, function_record_head, meta, meta_bytes, FnKind,
    MetaKind, MetaWords, BLOCK_PREAMBLE_AFTER_EXTENTS, BLOCK_PREAMBLE_SIZE, FUNCTION_RECORD_SIZE,
    MAX_FUNCTION_ID, METADATA_RECORD_SIZE,
};
