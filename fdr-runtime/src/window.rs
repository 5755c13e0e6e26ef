//! The window by age (`max_age`): a log keeps each thread's records of the last `max_age` only.
//!
//! Blocks that ended before the cutoff are left out. A block that straddles it is cut at the
//! first record at or after the cutoff; its preamble's `NewCPUId` then carries the CPU and the
//! time of the record before the cut, so the first kept record's delta still adds up. The window
//! then starts mid-stack, which readers handle (exits without entries get inferred starts).

use fdr_format::{meta, MetaKind, BLOCK_PREAMBLE_WORDS};

use crate::snapshot::{BlockCopy, Copied};

/// Where a block's records stand in time.
struct Walk {
    /// (word index, time of the record before it, CPU there) of the first record at or after
    /// the cutoff, if any.
    cut: Option<(usize, u64, u16)>,
}

fn walk(words: &[u64], cutoff: u64) -> Walk {
    let pre = BLOCK_PREAMBLE_WORDS as usize;
    if words.len() < pre {
        return Walk { cut: None };
    }
    // The preamble's NewCPUId: CPU in bytes 1-2, the full timestamp in bytes 3-10.
    let cpu_rec = [words[pre - 2], words[pre - 1]];
    let (mut cpu, mut t) = new_cpu(cpu_rec);
    let mut i = pre;
    while i < words.len() {
        let w = words[i];
        if fdr_format::is_metadata(w) {
            let kind = MetaKind::from_byte(w as u8);
            let rec = [w, words.get(i + 1).copied().unwrap_or(0)];
            match kind {
                Some(MetaKind::NewCpuId) | Some(MetaKind::TscWrap) => {
                    let (c, tsc) = if kind == Some(MetaKind::NewCpuId) {
                        new_cpu(rec)
                    } else {
                        (cpu, tsc_of_wrap(rec))
                    };
                    if tsc >= cutoff {
                        return Walk {
                            cut: Some((i, t, cpu)),
                        };
                    }
                    cpu = c;
                    t = tsc;
                }
                // Arguments belong to the entry before them: never a place to cut.
                _ => {}
            }
            i += 2;
        } else {
            let next = t.wrapping_add(u64::from(fdr_format::delta_of(w)));
            if next >= cutoff {
                return Walk {
                    cut: Some((i, t, cpu)),
                };
            }
            t = next;
            i += 1;
        }
    }
    Walk { cut: None }
}

fn new_cpu(rec: [u64; 2]) -> (u16, u64) {
    let b: Vec<u8> = rec.iter().flat_map(|w| w.to_le_bytes()).collect();
    let cpu = u16::from_le_bytes([b[1], b[2]]);
    let mut tsc = [0u8; 8];
    tsc.copy_from_slice(&b[3..11]);
    (cpu, u64::from_le_bytes(tsc))
}

fn tsc_of_wrap(rec: [u64; 2]) -> u64 {
    let b: Vec<u8> = rec.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut tsc = [0u8; 8];
    tsc.copy_from_slice(&b[1..9]);
    u64::from_le_bytes(tsc)
}

/// Keeps only the records at or after `cutoff` (ticks) of each block.
pub(crate) fn keep_newer(copied: &mut Copied, cutoff: u64) {
    let pre = BLOCK_PREAMBLE_WORDS as usize;
    let mut kept: Vec<BlockCopy> = Vec::with_capacity(copied.blocks.len());
    for mut b in std::mem::take(&mut copied.blocks) {
        match walk(&b.words, cutoff).cut {
            // Nothing this new: the whole block is older than the window.
            None => continue,
            // The first record is new enough: keep the block whole.
            Some((i, _, _)) if i == pre => kept.push(b),
            Some((i, before, cpu)) => {
                let m = meta::new_cpu_id(cpu, before);
                b.words[pre - 2] = m[0];
                b.words[pre - 1] = m[1];
                b.words.drain(pre..i);
                let extents = meta::buffer_extents((b.words.len() as u64 - 2) * 8);
                b.words[0] = extents[0];
                b.words[1] = extents[1];
                kept.push(b);
            }
        }
    }
    copied.blocks = kept;
}
