//! Culling: calls that can never matter stop costing a clock read.
//!
//! A function whose calls were all erased by the rewind for a long run of calls (`cull_after`,
//! 10,000 by default, counted over all threads together) is culled: the `CULLED` flag in its
//! descriptor makes its hooks skip recording altogether, on every thread at once, which costs a
//! flag load and a thread-local tick instead of two clock reads. One culled call in 129 to 256
//! per thread (at random, 192 on average) is still recorded and timed; when such a sample reaches the threshold, on any thread,
//! the function is restored everywhere. Both changes are written in the log (a cull event:
//! function, thread, time), so a reader can say which functions' calls are missing from when.
//! Functions with a trigger or logged arguments are never culled.
//!
//! # The state, and why it is per function and shared
//!
//! Each function's run of erased calls is one `u32` in its own descriptor (`FnDesc::run`), in
//! the descriptor's second cache line, away from the flags every hook reads. The function table
//! is laid out by the linker, so every function has its state from the start, with no slot
//! shared between functions: no function's decision depends on which others run between its
//! calls (an earlier per-thread table of 64 slots, indexed by id, reset a run on every
//! collision, and programs with hundreds of interleaving functions never culled). The run is
//! shared by the threads: a pool of short-lived workers adds up one run instead of learning
//! each function again per thread, and a cull or a restore is seen by every thread at its next
//! call. The memory is the same whatever the number of threads: 4 bytes per function, inside
//! the 128-byte descriptor it already has, and one byte per thread (the sampling tick); see
//! [`memory`].
//!
//! Threads update a run with a relaxed load and store, not a read-modify-write: two threads
//! erasing the same function at the same instant may lose one count, and a kept call racing an
//! erase may lose its reset. A lost count culls a little later; a lost reset may cull a function
//! that was kept on another thread just then, which its samples restore as soon as one is slow.
//! A locked add would cost every erased call a few nanoseconds for an exactness the heuristic
//! does not need. A kept call writes only when the run is not already 0, so a function that is
//! always kept (or culled) is only read, and its line is shared by every core without traffic.
//!
//! Whether a call's exit is recorded is decided by its entry, which the guard of the call
//! remembers (see `hooks::CallGuard`): a call entered while its function was culled records no
//! exit, a call entered before keeps its exit, whatever happens to the flag in between. So the
//! culled path needs no bookkeeping of its own: a flag load and a branch at the entry, a
//! per-thread tick for the sampling (one add to a byte), and a compare at the exit.

use std::cell::Cell;
use std::sync::atomic::Ordering::Relaxed;

use fdr_format::ID_SHIFT;

use crate::desc::{self, FnDesc};
use crate::thread_state::ThreadState;
use crate::trigger;

/// The function is culled: only samples of its calls are recorded.
pub(crate) const CULLED: u8 = 2;

/// The descriptor of the function with id field `id_field`, if it is in the table (a descriptor
/// outside it, as tests and Miri make, is never culled).
#[inline(always)]
fn function(t: &ThreadState, id_field: u32) -> Option<&'static FnDesc> {
    let index = (id_field >> ID_SHIFT).wrapping_sub(1);
    t.functions.get().get(index as usize)
}

/// Counts an erased call of the function with id field `id_field`; returns the run length when
/// it reaches the cull threshold.
#[inline(always)]
pub(crate) fn erased(t: &ThreadState, id_field: u32) -> Option<u32> {
    let run = function(t, id_field)?.run();
    // The run never passes `cull_after` by much: reaching it starts the run over (`candidate`).
    let n = run.load(Relaxed).wrapping_add(1);
    run.store(n, Relaxed);
    (n >= t.cull_after.get()).then_some(n)
}

/// A call of the function with id field `id_field` was kept: its run starts over.
#[inline(always)]
pub(crate) fn kept(t: &ThreadState, id_field: u32) {
    if let Some(f) = function(t, id_field) {
        if f.run().load(Relaxed) != 0 {
            f.run().store(0, Relaxed);
        }
    }
}

/// The function to cull, if it may be: not one with a trigger or logged arguments, not culled
/// already. Its run starts over either way.
pub(crate) fn candidate(t: &ThreadState, id_field: u32) -> Option<&'static FnDesc> {
    let f = function(t, id_field)?;
    f.run().store(0, Relaxed);
    let flags = f.flags();
    (f.args().is_empty() && flags & (trigger::TRIGGER | CULLED) == 0).then_some(f)
}

/// The memory culling keeps, in bytes, for `functions` functions and `threads` threads: each
/// function's run (inside its descriptor, which exists anyway) and each thread's sampling tick.
/// Nothing else grows with either.
///
/// ```
/// assert_eq!(fdr_runtime::culling_memory(50_000, 1_000), 50_000 * 4 + 1_000);
/// ```
pub fn memory(functions: usize, threads: usize) -> usize {
    functions * std::mem::size_of::<desc::Run>() + threads * std::mem::size_of::<Tick>()
}

/// A thread's count of culled calls since its last sample.
pub(crate) type Tick = Cell<u8>;

/// Culls `f` (its event is written).
pub(crate) fn cull(f: &FnDesc) {
    f.add_flags(CULLED);
}

/// Restores `f`; false if another thread did first (then no event is written twice).
pub(crate) fn restore(f: &FnDesc) -> bool {
    f.clear_flags(CULLED) & CULLED != 0
}

/// Where a thread's tick starts after a sample taken at `tsc`: 0 to 127, so the next sample
/// comes 129 to 256 culled calls later (see `hot_path::sampled_entry` for why not always 256).
pub(crate) fn next_tick(tsc: u64) -> u8 {
    ((tsc ^ (tsc >> 8) ^ (tsc >> 16)) as u8) >> 1
}

/// Counts a culled call on this thread: true for the one that is recorded, when the `u8` tick
/// wraps, so counting is one add to memory and a branch on zero.
#[inline(always)]
pub(crate) fn sample_due(tick: &Tick) -> bool {
    let n = tick.get().wrapping_add(1);
    tick.set(n);
    n == 0
}
