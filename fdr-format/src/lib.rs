//! The fdr log format: a valid XRay flight-data-recorder version 5 log whose leading block
//! carries fdr's own extension records (run settings, function table, thread names) as custom
//! events. `docs/FORMAT.md` in the repository describes the layout byte by byte.
//!
//! This crate is the one owner of the record layout and has no dependencies (but `libc` on
//! Unix, for what a crash box's recovery asks of the system: a file's lock and owner, and on
//! macOS two questions about processes): the runtime's
//! recording path builds its records with the `const fn` encoders of `record` ([`function_word`],
//! [`meta`]), its file writer with [`block_preamble`] and [`lead_block`]; the `fdr` command and its
//! synthetic logs use the same encoders and the streaming decoder.
//!
//! ```
//! use fdr_format::{function_record, decode_function_record, FnKind};
//! let word = function_record(42, FnKind::Enter, 1000);
//! assert_eq!(decode_function_record(word), Some((42, FnKind::Enter, 1000)));
//! ```

// No unsafe code, but for the system's answers a crash box's recovery needs (`crash_box/claim.rs`:
// `flock`, `geteuid`; `crash_box/process.rs`: two questions on macOS), which have no safe way to
// be asked in the Rust this crate builds with.
#![deny(unsafe_code)]
#![warn(missing_docs)]
#![warn(unreachable_pub)]

pub mod args;
pub mod awaits;
pub mod civil;
pub mod crash_box;
pub mod duration;
mod error;
pub mod events;
pub mod ext;
pub mod first_pass;
pub mod glob;
mod header;
pub mod key_values;
mod lead;
pub mod limits;
pub mod profile;
pub mod reader;
mod record;
pub mod replay;
pub mod sink;
pub mod tasks;
pub mod trace_context;
pub mod units;
pub mod verify;
pub mod window;

pub use error::FormatError;
pub use ext::{
    BudgetInfo, BudgetSpan, ClockSource, Ending, Extension, FunctionInfo, FunctionKind, Mode,
    Reason, ReasonInfo, RunInfo, ThreadInfo, BUDGET_SPAN_BYTES, BUDGET_WAKES_BIT, EXT_MAGIC,
};
pub use header::{FileHeader, FDR_LOG_TYPE, FDR_VERSION, HEADER_SIZE};
pub use lead::{lead_block, LeadStart};
pub use record::{
    await_payload, block_preamble, cull_payload, decode_await_event, decode_cull_event,
    decode_function_record, decode_link_event, decode_polled_event, decode_task_event,
    decode_wake_event, delta_of, function_record, function_record_head, function_word, id_field,
    id_field_of, is_metadata, kind_bits, link_payload, meta, meta_bytes, polled_payload,
    task_payload, wake_payload, AwaitEvent, BlockStart, CullKind, FnKind, LinkKind, MetaKind,
    MetaWords, TaskKind, TaskLink, WakeEvent, AWAIT_MAGIC, AWAIT_PAYLOAD_SIZE,
    BLOCK_PREAMBLE_AFTER_EXTENTS, BLOCK_PREAMBLE_SIZE, BLOCK_PREAMBLE_WORDS, CULL_MAGIC,
    FUNCTION_RECORD_SIZE, ID_SHIFT, KIND_MASK, LINK_MAGIC, LINK_PAYLOAD_SIZE, MAX_FUNCTION_ID,
    METADATA_RECORD_SIZE, POLLED_KIND, TASK_MAGIC, TASK_PAYLOAD_SIZE, WAKE_MAGIC,
    WAKE_PAYLOAD_SIZE,
};
