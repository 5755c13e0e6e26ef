//! The snapshot protocol: copying buffers out while their owners keep writing.
//!
//! What each owner publishes, and with which ordering, is the table in `buffers::published`.
//!
//! No lock is shared with the recording threads: a copy is checked after the fact against what
//! the owner publishes, and retried or trimmed when it raced.
//!
//! - The generation of a slot changes before a new owner writes anything, so a copy that raced
//!   with a recycle is noticed and left out (the ring has moved past that data anyway).
//! - The rewind counter changes after an owner lowers the length and before it writes over words
//!   it erased, so a copy of a live buffer that raced with a rewind is noticed and retried (read
//!   first, a count that includes an undo comes with that undo's length); after a few tries the
//!   copy is cut to the prefix the owner had marked as final (nothing below it can be rewound),
//!   which was read before copying and so cannot have changed.
//! - Lengths are published after the words, so a copy never contains half a record.
//!
//! - The buffers to copy are planned before any is copied, so a thread's blocks in one snapshot
//!   are its finished blocks plus at most one growing one, never a stale copy of a block followed
//!   by a successor that started after that copy.
//!
//! Finally each thread's blocks are cut to the newest run without a gap, so a window never
//! skips the middle of a thread's history.

use std::sync::atomic::{fence, Ordering};

use fdr_format::{meta, BLOCK_PREAMBLE_WORDS as PREAMBLE_WORDS};

use crate::buffers::pool::Pool;
use crate::buffers::published::{FREE, RETIRED};

/// How many times a live buffer is copied again after racing with a rewind.
const ATTEMPTS: usize = 4;

/// One buffer's words, ready to be written as a block.
pub(crate) struct BlockCopy {
    /// Thread id of the block's NewBuffer record.
    pub tid: i32,
    /// Index of the thread in the pool's thread list.
    pub thread: u32,
    /// Position of this buffer in the thread's sequence of buffers.
    pub thread_seq: u32,
    pub words: Vec<u64>,
}

/// The buffers of a pool as of one moment per buffer.
pub(crate) struct Copied {
    /// Blocks, each thread's in time order.
    pub blocks: Vec<BlockCopy>,
    /// Buffers that could not be kept: recycled while being copied, or cut off behind a gap.
    pub missed: u64,
}

/// Where one thread's block is, as seen before copying.
struct Planned {
    index: u32,
    gen: u64,
    thread: u32,
    thread_seq: u32,
}

/// Copies every buffer that holds data.
///
/// First a plan: which buffer holds which thread's how-many-th block. Only then the copies. A
/// thread retires a buffer before it takes the next, so every planned block that has a planned
/// successor was final before copying began, and only a thread's newest block can still be
/// growing. Copying slot by slot without a plan, a block copied while its owner was still
/// writing it could be followed by a successor taken after that copy, and the records written in
/// between would silently be missing. Newest first keeps a thread's live block as early a copy
/// as possible relative to its predecessors' (which are final either way).
pub(crate) fn copy_pool(pool: &Pool) -> Copied {
    let mut plan = plan(pool);
    plan.sort_by_key(|p| (p.thread, std::cmp::Reverse(p.thread_seq)));
    let mut blocks = Vec::with_capacity(plan.len());
    let mut missed = 0;
    for p in &plan {
        match copy_buffer(pool, p.index, p.gen) {
            Copy::Block(b) => blocks.push(b),
            Copy::Empty => {}
            Copy::Missed => missed += 1,
        }
    }
    blocks.sort_by_key(|b| (b.thread, b.thread_seq));
    // Keep, per thread, the newest run of consecutive buffers: an older block behind a gap
    // would put calls next to each other that were not.
    let mut kept = Vec::with_capacity(blocks.len());
    let mut rest = blocks.into_iter().peekable();
    while let Some(first) = rest.next() {
        let mut run = vec![first];
        while let Some(next) = rest.next_if(|n| n.thread == run[0].thread) {
            if next.thread_seq != run[run.len() - 1].thread_seq.wrapping_add(1) {
                missed += run.len() as u64;
                run.clear();
            }
            run.push(next);
        }
        kept.extend(run);
    }
    Copied {
        blocks: kept,
        missed,
    }
}

/// Which thread's how-many-th block each buffer holds, with the generation it was read at.
fn plan(pool: &Pool) -> Vec<Planned> {
    let mut plan = Vec::new();
    for index in 0..pool.slots().len() as u32 {
        let slot = &pool.slots()[index as usize];
        for _ in 0..ATTEMPTS {
            let gen = slot.gen.load(Ordering::Acquire);
            if slot.state.load(Ordering::Acquire) == FREE
                || slot.len.load(Ordering::Acquire) < PREAMBLE_WORDS
            {
                break;
            }
            // The owner wrote these before publishing its preamble, which the length load
            // above synchronized with; the generation check below rules out a newer owner.
            let thread = slot.thread.load(Ordering::Relaxed);
            let thread_seq = slot.thread_seq.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            if slot.gen.load(Ordering::Relaxed) == gen {
                plan.push(Planned {
                    index,
                    gen,
                    thread,
                    thread_seq,
                });
                break;
            }
        }
    }
    plan
}

enum Copy {
    Block(BlockCopy),
    Empty,
    Missed,
}

/// Copies buffer `index` if it still holds the generation that was planned.
fn copy_buffer(pool: &Pool, index: u32, planned: u64) -> Copy {
    let slot = &pool.slots()[index as usize];
    let words = pool.buffer(index);
    for attempt in 0..ATTEMPTS {
        let gen = slot.gen.load(Ordering::Acquire);
        if gen != planned {
            return Copy::Missed;
        }
        let state = slot.state.load(Ordering::Acquire);
        if state == FREE {
            return Copy::Empty;
        }
        // The count before the length: an undo lowers the length before it counts, so a count
        // read here that already includes an undo comes with the length that undo left.
        let rewinds = slot.rewinds.load(Ordering::Acquire);
        let stable = slot.stable.load(Ordering::Acquire) as usize;
        let len = (slot.len.load(Ordering::Acquire) as usize).min(words.len());
        #[cfg(test)]
        crate::seams::stops::pass(&crate::seams::stops::COPY_LOADED);
        let thread = slot.thread.load(Ordering::Relaxed);
        let thread_seq = slot.thread_seq.load(Ordering::Relaxed);
        let tid = slot.tid.load(Ordering::Relaxed);
        let mut copy: Vec<u64> = words[..len]
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .collect();
        // Pairs with the release fences the owner issues after bumping `gen` or `rewinds` and
        // before writing words again: if any word above came from such a write, the loads
        // below see the bump.
        fence(Ordering::Acquire);
        if slot.gen.load(Ordering::Relaxed) != gen {
            return Copy::Missed;
        }
        let raced = slot.rewinds.load(Ordering::Relaxed) != rewinds && state != RETIRED;
        if raced {
            if attempt + 1 < ATTEMPTS {
                continue;
            }
            copy.truncate(stable.min(len));
        }
        if copy.len() < PREAMBLE_WORDS as usize {
            return Copy::Empty;
        }
        let extents = (copy.len() * 8 - 16) as u64;
        let m = meta::buffer_extents(extents);
        copy[0] = m[0];
        copy[1] = m[1];
        return Copy::Block(BlockCopy {
            tid,
            thread,
            thread_seq,
            words: copy,
        });
    }
    Copy::Missed
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;

    use fdr_format::FnKind;

    use super::*;
    use crate::record::writer::RecordWriter;
    use crate::seams::stops;
    use crate::tables::threads::Registry;
    use crate::Mode;

    /// An entry record of function 1 (what the rewind steps back over).
    fn entry(delta: u32) -> u64 {
        fdr_format::function_word(1 << fdr_format::ID_SHIFT, FnKind::Enter, delta)
    }

    /// The interleaving that tore copies: the copy reads the slot at the undo's midpoint
    /// (between its two stores) and copies the words after they were written again. The copy
    /// must be one the owner published: the entry at `at` with the longer length, or the
    /// shorter length, never the longer length over the new record's first word. The old order
    /// (count, then length) gave the torn one.
    #[test]
    fn a_copy_that_reads_the_slot_during_an_undo_is_never_torn() {
        let threads = Registry::new(4);
        let pool = Pool::new(512, 2, Mode::Ring).unwrap();
        let index = pool.acquire(&threads).unwrap();
        let slot = &pool.slots()[index as usize];
        let gen = slot.gen.load(Ordering::SeqCst);
        let w = RecordWriter::new();
        // SAFETY: the buffer was just handed out to this test, which is its only writer, and
        // both outlive `w`'s use (it is cleared below).
        unsafe { w.install(slot, pool.buffer(index)) };
        let at = PREAMBLE_WORDS + 4;
        for i in 0..at {
            // SAFETY: `at` words fit the 64-word buffer.
            unsafe { w.store(i, entry(i)) };
        }
        w.publish_stable(at);
        // An entry, published; then erased, and a metadata record written where it was.
        // SAFETY: as above.
        unsafe { w.store(at, entry(99)) };
        w.publish(at + 1);
        let meta = meta::tsc_wrap(12345);
        let (go, started) = channel::<()>();
        let (read, loaded) = channel::<()>();
        let (rewritten, resume) = channel::<()>();
        std::thread::scope(|s| {
            let pool = &pool;
            let copier = s.spawn(move || {
                started.recv().unwrap();
                stops::at(&stops::COPY_LOADED, move || {
                    read.send(()).unwrap();
                    resume.recv().unwrap();
                });
                copy_buffer(pool, index, gen)
            });
            stops::at(&stops::UNDO_MIDWAY, move || {
                go.send(()).unwrap();
                loaded.recv().unwrap();
            });
            w.publish_undo(at);
            // SAFETY: as above; two words at `at`.
            unsafe { w.store_meta(at, meta) };
            w.publish_stable(at + 2);
            rewritten.send(()).unwrap();
            let Copy::Block(b) = copier.join().unwrap() else {
                panic!("the live buffer was not copied");
            };
            match b.words.len() as u32 {
                n if n == at + 1 => assert_eq!(b.words[at as usize], entry(99), "a torn copy"),
                n if n == at || n == at + 2 => {}
                n => panic!("a copy of {n} words, not one the owner published"),
            }
        });
        w.clear();
    }
}
