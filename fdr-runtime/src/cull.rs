//! Culling: calls that can never matter stop costing a clock read.
//!
//! A function whose calls were all erased by the rewind for a long run of calls (`cull_after`,
//! 10,000 by default, counted over all threads together) is culled: the `CULLED` flag in its
//! descriptor makes its hooks skip recording altogether, on every thread at once. A culled call
//! costs what a call costs with no recorder running: the one flag test of the gate, which checks
//! `OFF` and `CULLED` together. Now and then the background writer *probes* each culled
//! function ([`probe`]): it lets the function's next [`PROBE_CALLS`] calls through, recorded and
//! timed as any other. If they are all erased (still short) the function is culled again,
//! silently; if one is kept (it reached the threshold, on any thread) the function is restored
//! everywhere.
//! Culls and restores are written in the log (a cull event: function, thread, time), so a reader
//! can say which functions' calls are missing from when. Functions with a trigger or logged
//! arguments are never culled.
//!
//! # Why probes, and not a sample of every n-th call
//!
//! Timing one call in n needs a per-thread count of culled calls, so every culled call would
//! pay a thread-local increment besides the flag test. On a real parser annotated function by
//! function (regex-syntax, 631 functions, 355 million culled calls a second, most of them
//! accessors that take a nanosecond) that increment and the code it adds to every inlined
//! accessor cost as much as the whole rest of the recorder: the program ran 4.3 x slower than
//! without fdr with it and 2.3 x with probes (`benches/real`). A probe costs nothing on the calls it does not
//! take. What it changes is how soon a culled function that became slow is seen: within the
//! [`PROBE_CALLS`] calls after its next probe, and every culled function is probed once every
//! [`PROBE_PERIOD_MS`] ms as long as at most [`PROBES_PER_ROUND`] are culled (with more, they
//! take turns: each is probed every `ceil(culled / PROBES_PER_ROUND)` rounds). The price is that
//! culled calls are not counted: the log counts the probes instead.
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
//! the 128-byte descriptor it already has, and nothing per thread; see [`memory`].
//!
//! Threads update a run with a relaxed load and store, not a read-modify-write: two threads
//! erasing the same function at the same instant may lose one count, and a kept call racing an
//! erase may lose its reset. A lost count culls a little later; a lost reset may cull a function
//! that was kept on another thread just then, which a probe restores as soon as a call is slow.
//! A locked add would cost every erased call a few nanoseconds for an exactness the heuristic
//! does not need. A kept call writes only when the run is not already 0, so a function that is
//! always kept (or culled) is only read, and its line is shared by every core without traffic.
//!
//! A probe sets the run to [`PROBE`] before it clears the flag: erased calls then find their
//! run past `cull_after`, and the [`PROBE_CALLS`]-th culls again (without an event: nothing
//! changed); a kept call finds the mark and restores (with an event). Calls on every thread
//! count towards the probe's calls.
//!
//! Whether a call's exit is recorded is decided by its entry, which the guard of the call
//! remembers (see `hooks::CallGuard`): a call entered while its function was culled records no
//! exit, a call entered before keeps its exit, whatever happens to the flag in between.

use std::sync::atomic::Ordering::Relaxed;

use fdr_format::ID_SHIFT;

use crate::desc::{self, FnDesc};
use crate::thread_state::ThreadState;
use crate::trigger;

/// The function is culled: its calls are skipped until a probe finds one slow.
pub(crate) const CULLED: u8 = 2;

/// A run at or past this value marks a function a probe has let through (see [`probe`]).
pub(crate) const PROBE: u32 = 1 << 31;

/// What [`kept`] hands to `controller::cull_now` as the run when a probe's call was kept: the
/// function is to be restored.
pub(crate) const RESTORE: u32 = 0;

/// How often the background writer probes culled functions, in milliseconds.
pub const PROBE_PERIOD_MS: u64 = 10;

/// How many calls a probe lets through, one after the other. A function that became slow on
/// every call is found by its next probe; one slow on one call in `n` (`n` up to 64) by its next
/// probe too, even when the probe comes while a slow call is blocked (a probe cannot time a call
/// entered before it: that call's entry was skipped, and the 63 calls after it reach the next
/// slow one); with a larger `n`, with a chance of `1 - (1 - 1/n)^64` per probe. A probe of a
/// function that is still short costs 64 recorded calls.
pub const PROBE_CALLS: u32 = 64;

/// How many descriptors one probing round looks at (and so, at most, probes).
pub const PROBES_PER_ROUND: usize = 4096;

/// The descriptor of the function with id field `id_field`, if it is in the table (a descriptor
/// outside it, as tests and Miri make, is never culled).
#[inline(always)]
fn function(t: &ThreadState, id_field: u32) -> Option<&'static FnDesc> {
    let index = (id_field >> ID_SHIFT).wrapping_sub(1);
    t.functions.get().get(index as usize)
}

/// Counts an erased call of the function with id field `id_field`; returns the run length when
/// it reaches the cull threshold (at once after a probe).
#[inline(always)]
pub(crate) fn erased(t: &ThreadState, id_field: u32) -> Option<u32> {
    let run = function(t, id_field)?.run();
    // The run never passes `cull_after` by much: reaching it starts the run over (`candidate`).
    let n = run.load(Relaxed).wrapping_add(1);
    run.store(n, Relaxed);
    (n >= t.cull_after.get()).then_some(n)
}

/// A call of the function with id field `id_field` was kept: its run starts over. True when the
/// call was let through by a probe: the function is to be restored.
#[inline(always)]
pub(crate) fn kept(t: &ThreadState, id_field: u32) -> bool {
    let Some(f) = function(t, id_field) else {
        return false;
    };
    let run = f.run().load(Relaxed);
    if run == 0 {
        return false;
    }
    f.run().store(0, Relaxed);
    run >= PROBE
}

/// The function to cull, if it may be: not one with a trigger or logged arguments, not culled
/// already. Its run starts over either way.
pub(crate) fn candidate(t: &ThreadState, id_field: u32) -> Option<&'static FnDesc> {
    let f = function(t, id_field)?;
    f.run().store(0, Relaxed);
    let flags = f.flags();
    (f.args().is_empty() && flags & (trigger::TRIGGER | CULLED) == 0).then_some(f)
}

/// The function with id field `id_field`, to restore after a probe's call was kept; `None` if
/// another thread restored it first or it is not culled (nothing to write).
pub(crate) fn restorable(t: &ThreadState, id_field: u32) -> Option<&'static FnDesc> {
    let f = function(t, id_field)?;
    // A probe cleared the flag; a thread's erased call may have set it again since.
    f.clear_flags(CULLED);
    Some(f)
}

/// Culls `f` (its event is written, unless a probe found it still short).
pub(crate) fn cull(f: &FnDesc) {
    f.add_flags(CULLED);
}

/// One probing round, from the background writer: looks at up to [`PROBES_PER_ROUND`]
/// descriptors from `cursor` on (wrapping around the table, so every culled function gets its
/// turn) and lets the next [`PROBE_CALLS`] calls of each culled one through. Returns how many
/// it probed.
pub(crate) fn probe(cursor: &mut usize) -> u64 {
    let table = desc::table();
    if table.is_empty() {
        return 0;
    }
    let mut probed = 0;
    for _ in 0..PROBES_PER_ROUND.min(table.len()) {
        *cursor = (*cursor + 1) % table.len();
        let f = &table[*cursor];
        if f.flags() & CULLED != 0 {
            // The mark first: a thread that sees the flag cleared finds it when its call ends.
            f.run().store(PROBE, Relaxed);
            f.clear_flags(CULLED);
            probed += 1;
        }
    }
    probed
}

/// The memory culling keeps, in bytes, for `functions` functions and `threads` threads: each
/// function's run (inside its descriptor, which exists anyway). Nothing grows with threads.
///
/// ```
/// assert_eq!(fdr_runtime::culling_memory(50_000, 1_000), 50_000 * 4);
/// ```
pub fn memory(functions: usize, threads: usize) -> usize {
    // A thread keeps nothing for culling: no tick, no table.
    let per_thread = 0;
    functions * std::mem::size_of::<desc::Run>() + threads * per_thread
}
