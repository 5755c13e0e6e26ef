//! The leading block: fdr's extension records, written before any thread's block.
//!
//! It is an ordinary XRay block (preamble, then custom events) so XRay's tools read past it. Two
//! conventions make `llvm-xray account` accept it: the block carries the thread id of the log's
//! first recorded thread (XRay groups blocks by thread and would otherwise start a thread 0 whose
//! ordering it cannot reconcile), and it is dated one microsecond before the recording started,
//! so within that thread it sorts first and no record is older than one already read. Readers
//! recognise the leading block by its position: the first block of the file.

use crate::ext::Extension;
use crate::limits::MAX_EXT_PAYLOAD;
use crate::record::{block_preamble, meta, meta_bytes, BlockStart, METADATA_RECORD_SIZE};

/// Where and when the leading block says it was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeadStart {
    /// The log's first recorded thread (0 when none recorded).
    pub tid: i32,
    /// Process id.
    pub pid: i32,
    /// Wall-clock start of the recording: seconds since the Unix epoch.
    pub start_secs: i64,
    /// Nanoseconds within that second.
    pub start_nanos: u32,
    /// Timestamp at the start of the recording.
    pub start_tsc: u64,
}

/// The whole leading block, `BufferExtents` first, with one custom event per extension record.
/// Records larger than [`MAX_EXT_PAYLOAD`] are a caller's bug; they are left out rather than
/// written in a form readers refuse.
///
/// ```
/// use fdr_format::{lead_block, Extension, LeadStart, ThreadInfo};
/// let start = LeadStart { tid: 7, pid: 1, start_secs: 10, start_nanos: 0, start_tsc: 100 };
/// let t = Extension::Thread(ThreadInfo { tid: 7, name: "main".into(), records_dropped: 0 });
/// let block = lead_block(&start, &[t]);
/// assert_eq!(block[0], 0x0f); // BufferExtents: the block size follows
/// ```
pub fn lead_block(start: &LeadStart, records: &[Extension]) -> Vec<u8> {
    let micros = i64::from(start.start_nanos / 1000) - 1;
    let (secs, micros) = if micros < 0 {
        // Saturating: a crash box's start is what a dead (or hostile) process left there.
        (start.start_secs.saturating_sub(1), 999_999)
    } else {
        (start.start_secs, micros)
    };
    let preamble = block_preamble(
        &BlockStart {
            tid: start.tid,
            wall_secs: secs,
            wall_micros: micros as i32,
            pid: start.pid,
            cpu: 0,
            tsc: start.start_tsc,
        },
        0,
    );
    let mut out: Vec<u8> = preamble.iter().flat_map(|w| w.to_le_bytes()).collect();
    for r in records {
        let payload = r.encode();
        if payload.len() > MAX_EXT_PAYLOAD {
            continue;
        }
        out.extend_from_slice(&meta_bytes(meta::custom_event(payload.len() as i32, 0)));
        out.extend_from_slice(&payload);
    }
    // Custom-event payloads need not be whole words; XRay reads the block by its extents.
    let extents = (out.len() - METADATA_RECORD_SIZE) as u64;
    out[..METADATA_RECORD_SIZE].copy_from_slice(&meta_bytes(meta::buffer_extents(extents)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_at_the_least_second_gives_a_block_not_an_overflow() {
        // Found by the `recover` fuzz target: a box whose start was i64::MIN seconds and 0 ns.
        let start = LeadStart {
            tid: 1,
            pid: 1,
            start_secs: i64::MIN,
            start_nanos: 0,
            start_tsc: 0,
        };
        let block = lead_block(&start, &[]);
        assert_eq!(block[0], 0x0f);
    }
}
