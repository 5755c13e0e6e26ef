//! The call shapes, peers and timing helpers shared by the quick table (`--bin overhead`) and the
//! criterion benches (`benches/overhead.rs`).
//!
//! Every row times the same shape: a tiny `#[inline(never)]` leaf, the Rust twin of
//! `leaf` in `../shared/anchors/xray/work.cc` (the comparison programs kept beside this repository), called in a loop. Only what wraps the leaf changes.
//!
//! ```
//! let n = 1000;
//! let plain = fdr_benches::workload::run_plain(n);
//! assert_eq!(plain, fdr_benches::workload::run_fdr(n), "instrumentation must not change results");
//! ```

#![warn(missing_docs)]

pub mod floor;
pub mod logcheck;
pub mod model;
pub mod peers;
pub mod timing;
pub mod whole;
pub mod workload;
