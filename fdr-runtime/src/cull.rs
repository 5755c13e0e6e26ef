//! Culling: calls that can never matter stop costing a clock read.
//!
//! A function whose calls on one thread were all erased by the rewind for a long run of calls
//! (`cull_after`, 10,000 by default) is culled: the `CULLED` flag in its descriptor makes its
//! hooks skip recording altogether, which costs a flag load and a few thread-local operations
//! instead of two clock reads. One call in 256 per thread is still recorded and timed;
//! when such a sample reaches the threshold the function is restored, recorded as before. Both
//! changes are written in the log (a cull event: function, thread, time), so a reader can say
//! which functions' calls are missing from when. Functions with a trigger or logged arguments are
//! never culled.
//!
//! Whether a call's exit is recorded is decided by its entry, which the guard of the call
//! remembers (see `hooks::CallGuard`): a call entered while its function was culled records no
//! exit, a call entered before keeps its exit, whatever happens to the flag in between. So the
//! culled path needs no bookkeeping of its own: a flag load and a branch at the entry, a
//! per-thread tick for the sampling (one add to a byte), and a compare at the exit.

use std::cell::Cell;

use fdr_format::ID_SHIFT;

use crate::desc::{self, FnDesc};
use crate::thread_state::{Run, ThreadState, RUN_SLOTS};
use crate::trigger;

/// The function is culled: only samples of its calls are recorded.
pub(crate) const CULLED: u8 = 2;

/// The slot of the function with id field `id_field` in a thread's table of runs.
#[inline(always)]
fn run_of(t: &ThreadState, id_field: u32) -> &Run {
    &t.runs[(id_field >> ID_SHIFT) as usize & (RUN_SLOTS - 1)]
}

/// Counts an erased call of the function with id field `id_field`; returns the run length when
/// it reaches the cull threshold.
#[inline(always)]
pub(crate) fn erased(t: &ThreadState, id_field: u32) -> Option<u32> {
    let slot = run_of(t, id_field);
    // The run never passes `cull_after`: reaching it starts the run over (`candidate`).
    let run = if slot.id_field.get() == id_field {
        slot.calls.get().wrapping_add(1)
    } else {
        slot.id_field.set(id_field);
        1
    };
    slot.calls.set(run);
    (run >= t.cull_after.get()).then_some(run)
}

/// A call of the function with id field `id_field` was kept: its run starts over.
#[inline(always)]
pub(crate) fn kept(t: &ThreadState, id_field: u32) {
    let slot = run_of(t, id_field);
    if slot.id_field.get() == id_field {
        slot.calls.set(0);
    }
}

/// The function to cull, if it may be: not one with a trigger or logged arguments, not culled
/// already. Its run starts over either way.
pub(crate) fn candidate(t: &ThreadState, id_field: u32) -> Option<&'static FnDesc> {
    run_of(t, id_field).calls.set(0);
    let f = desc::function(id_field >> ID_SHIFT)?;
    let flags = f.flags();
    (f.args().is_empty() && flags & (trigger::TRIGGER | CULLED) == 0).then_some(f)
}

/// Culls `f` (its event is written).
pub(crate) fn cull(f: &FnDesc) {
    f.add_flags(CULLED);
}

/// Restores `f`; false if another thread did first (then no event is written twice).
pub(crate) fn restore(f: &FnDesc) -> bool {
    f.clear_flags(CULLED) & CULLED != 0
}

/// Counts a culled call on this thread: true for the one in 256 that is recorded. The period is
/// that of the `u8` tick, so counting is one add to memory and a branch on zero.
#[inline(always)]
pub(crate) fn sample_due(tick: &Cell<u8>) -> bool {
    let n = tick.get().wrapping_add(1);
    tick.set(n);
    n == 0
}
