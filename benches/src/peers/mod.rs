//! The Rust peers on the same call shape, each recording into memory with its cheapest honest
//! setup.
//!
//! fastrace and puffin are built to record the calls inside a parent (a root span, a frame), so
//! their loops run in batches of [`BATCH`] calls under one parent each; the parent's cost is
//! spread over the batch, as it is in a real program.

pub mod fastrace_discard;
pub mod fdr_spans;
pub mod puffin_frames;
pub mod tracing_mem;
pub mod tracing_null;

/// Calls per root span (fastrace) or per frame (puffin).
///
/// Well under fastrace's limit of 10240 local spans per parent, beyond which it stops recording.
pub const BATCH: u64 = 1000;

/// Runs `batch(start, len)` over `0..n` in batches of [`BATCH`] and sums the results.
#[inline(always)]
pub(crate) fn batched(n: u64, mut batch: impl FnMut(u64, u64) -> u64) -> u64 {
    let mut acc = 0u64;
    let mut start = 0;
    while start < n {
        let len = BATCH.min(n - start);
        acc = acc.wrapping_add(batch(start, len));
        start += len;
    }
    acc
}
