//! What the controller knows about one thread's recording: the buffer it writes, where the last
//! record stands in time and CPU, and how far back a rewind may step.
//!
//! A thread's state lives in a thread-local and is only touched by that thread, through shared
//! references (every field is a `Cell`). While a record is being written the length holds
//! [`BUSY`], which fails every bounds check, so a hook that interrupts the write (a signal
//! handler, or the runtime's own code) returns without touching the half-written record.

use std::cell::Cell;
use std::sync::atomic::{compiler_fence, Ordering};

use crate::record::writer::RecordWriter;
use crate::tables::functions::FnDesc;

/// The length while a record is being written.
pub(crate) const BUSY: u32 = u32::MAX;

pub(crate) struct ThreadState {
    pub writer: RecordWriter,
    /// Words written in the current buffer, or [`BUSY`].
    pub len: Cell<u32>,
    /// Entry records at the end of the buffer that a rewind may still erase.
    pub enters: Cell<u32>,
    /// Entry/tail-exit pairs before those that a rewind may still erase.
    pub tails: Cell<u32>,
    /// The CPU of the last record.
    pub cpu: Cell<u32>,
    /// Timestamp of the last record written: while `enters > 0`, that of the last entry, the
    /// one a rewind would erase.
    pub last_tsc: Cell<u64>,
    /// Calls shorter than this many ticks are erased.
    pub threshold: Cell<u64>,
    /// Address of the function table, cached so an id costs a subtraction.
    pub table: Cell<usize>,
    /// Where the hot path reads the CPU number (see `clock::fast`).
    pub cpu_id: Cell<*const i32>,
    /// Whether erased and kept calls are counted for culling.
    pub cull_on: Cell<bool>,
    /// Erased calls in a row after which a function is culled.
    pub cull_after: Cell<u32>,
    /// The thread asked for its context-switch records (`platform::switches`): a flag here,
    /// where the recording path already looks, rather than in the platform's thread-local.
    pub switches_asked: Cell<bool>,
    /// The function table, where culling keeps each function's run of erased calls (see `cull`).
    pub functions: Cell<&'static [FnDesc]>,
    /// Erased calls this thread counted and has not yet added to their function's run, by
    /// function index modulo [`LOCAL_RUNS`] (see `cull`).
    pub runs: [LocalRun; LOCAL_RUNS],
}

/// How many functions a thread counts erased calls of at once (see `cull`).
pub(crate) const LOCAL_RUNS: usize = 64;

/// One function's erased calls on one thread, not yet in the function's shared run.
pub(crate) struct LocalRun {
    /// The function's index in the table plus one (0: the slot is free).
    pub function: Cell<u32>,
    /// Erased calls counted here.
    pub count: Cell<u32>,
    /// At this count the thread looks at the shared run (adds its count, or culls).
    pub look_at: Cell<u32>,
    /// The shared run when the thread last looked: a smaller one was reset since by a kept call.
    pub base: Cell<u32>,
}

impl LocalRun {
    pub(crate) const fn new() -> LocalRun {
        LocalRun {
            function: Cell::new(0),
            count: Cell::new(0),
            look_at: Cell::new(0),
            base: Cell::new(0),
        }
    }
}

impl ThreadState {
    pub(crate) const fn new() -> ThreadState {
        ThreadState {
            writer: RecordWriter::new(),
            len: Cell::new(0),
            enters: Cell::new(0),
            tails: Cell::new(0),
            cpu: Cell::new(u32::MAX),
            last_tsc: Cell::new(0),
            threshold: Cell::new(0),
            table: Cell::new(0),
            cpu_id: Cell::new(&crate::platform::clock::NOT_FAST),
            cull_on: Cell::new(false),
            cull_after: Cell::new(u32::MAX),
            switches_asked: Cell::new(false),
            functions: Cell::new(&[]),
            runs: [const { LocalRun::new() }; LOCAL_RUNS],
        }
    }

    /// `f`'s id in place in a record's low word.
    #[inline(always)]
    pub(crate) fn id_field(&self, f: &'static FnDesc) -> u32 {
        crate::tables::functions::id_field_from(f, self.table.get())
    }

    /// A block was just begun at `cpu` and `tsc` (its preamble written up to `len`): nothing
    /// before it can be rewound, and deltas count from `tsc`.
    pub(crate) fn begin_block(&self, len: u32, cpu: u32, tsc: u64) {
        self.cpu.set(cpu);
        self.last_tsc.set(tsc);
        self.enters.set(0);
        self.tails.set(0);
        self.writer.publish_stable(len);
    }

    /// Opens the bracket around a write: the length reads busy until [`ThreadState::end_write`].
    /// The fences keep the compiler from moving the buffer stores out of the bracket, where a
    /// signal handler's hook would not see the marker. The hot path uses the pair directly (a
    /// closure there ends up out of line); everything else goes through [`ThreadState::busy`].
    #[inline(always)]
    pub(crate) fn begin_write(&self) {
        self.len.set(BUSY);
        compiler_fence(Ordering::SeqCst);
    }

    /// Closes the bracket, publishing `len` to this thread's hooks.
    #[inline(always)]
    pub(crate) fn end_write(&self, len: u32) {
        compiler_fence(Ordering::SeqCst);
        self.len.set(len);
    }

    /// Runs `write` inside the bracket and keeps the length it returns.
    #[inline(always)]
    pub(crate) fn busy(&self, write: impl FnOnce() -> u32) {
        self.begin_write();
        let len = write();
        self.end_write(len);
    }
}
