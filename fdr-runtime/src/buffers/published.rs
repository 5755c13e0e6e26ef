//! What a buffer's owner publishes for snapshots, and who may write each field.
//!
//! A snapshot copies buffers while their owners keep writing, with no lock between them; this
//! table is the whole contract. "Owner" is the one thread that holds the buffer (between
//! `Pool::acquire` and `Pool::retire`); "pool" is whoever takes or hands back the buffer.
//!
//! | field | written by | ordering | read by the snapshot as |
//! |---|---|---|---|
//! | `len` | owner, after the words below it (Release); lowered by an undo before `rewinds` moves (Relaxed) | Release / Relaxed | how many words are final or in use |
//! | `stable` | owner, when nothing below it can be rewound | Release | the prefix to fall back to |
//! | `rewinds` | owner, after lowering `len`, then a Release fence, before rewriting rewound words | Release + fence | read before `len` (Acquire) and after the copy (behind an Acquire fence): "the copy raced a rewind: retry" |
//! | `limit` | owner (sets it when it takes the buffer), pool (0 on retire and stop) | SeqCst | never: it only stops the owner |
//! | `state` | pool: FREE, OWNED, RETIRED | Release | whether the buffer holds data |
//! | `gen` | pool, then a Release fence, before a new owner writes | AcqRel + fence | "the copy raced a recycle: drop it" |
//! | `tid`, `thread`, `thread_seq`, `name` | owner, before publishing its preamble through `len` | Relaxed | which thread's how-many-th block |
//!
//! The buffer words themselves are `AtomicU64` written with relaxed stores (plain `mov`s), so a
//! reader racing a writer sees an old or a new word, never undefined behaviour; the checks above
//! decide whether what it saw is kept.

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};

/// The slot is in a queue with no data worth keeping.
pub(crate) const FREE: u32 = 0;
/// A thread is writing into the buffer.
pub(crate) const OWNED: u32 = 1;
/// The buffer holds a thread's finished data.
pub(crate) const RETIRED: u32 = 2;

/// One buffer's published state. One cache line per buffer, so owners of neighbouring buffers
/// do not contend.
#[repr(C, align(64))]
pub(crate) struct Slot {
    pub len: AtomicU32,
    pub stable: AtomicU32,
    /// Rewinds of this buffer since the pool was made, by every owner: so also the calls erased
    /// in it (one rewind per erased call), which the log counts.
    pub rewinds: AtomicU64,
    pub limit: AtomicU32,
    pub state: AtomicU32,
    pub tid: AtomicI32,
    pub gen: AtomicU64,
    /// The owner's entry in the thread registry.
    pub thread: AtomicU32,
    /// The how-many-th buffer of that thread this is, counting from 0.
    pub thread_seq: AtomicU32,
    /// The owner's name as the kernel keeps it, NUL-padded: what a crash box names a thread by
    /// when its table was last written before the thread started.
    pub name: [AtomicU64; 2],
}

impl Slot {
    pub(crate) const fn new() -> Slot {
        Slot {
            len: AtomicU32::new(0),
            stable: AtomicU32::new(0),
            rewinds: AtomicU64::new(0),
            limit: AtomicU32::new(0),
            state: AtomicU32::new(FREE),
            tid: AtomicI32::new(0),
            gen: AtomicU64::new(0),
            thread: AtomicU32::new(0),
            thread_seq: AtomicU32::new(0),
            name: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }
}
