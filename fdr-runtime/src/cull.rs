//! Culling: calls that can never matter stop costing a clock read.
//!
//! A function whose calls on one thread were all erased by the rewind for a long run of calls
//! (`cull_after`, 10,000 by default) is culled: the `CULLED` flag in its descriptor makes its
//! hooks skip recording altogether, which costs a flag load and a few thread-local operations
//! instead of two clock reads. One call in `SAMPLE_EVERY` per thread is still recorded and timed;
//! when such a sample reaches the threshold the function is restored, recorded as before. Both
//! changes are written in the log (a cull event: function, thread, time), so a reader can say
//! which functions' calls are missing from when. Functions with a trigger or logged arguments are
//! never culled.
//!
//! A function that was culled once stays `WATCHED` for the rest of the recording: its hooks keep
//! a small per-thread stack of the calls entered through this path, so an exit is recorded exactly
//! when its entry was, even when the function is restored or culled in between.

use std::cell::Cell;

use fdr_format::ID_SHIFT;

use crate::desc::{self, FnDesc};
use crate::thread_state::{ThreadState, RUN_SLOTS};
use crate::trigger;

/// The function is culled: only samples of its calls are recorded.
pub(crate) const CULLED: u8 = 2;
/// The function was culled in this recording: its calls go through the culling path.
pub(crate) const WATCHED: u8 = 4;
/// One call in this many of a culled function is recorded and timed, per thread.
pub(crate) const SAMPLE_EVERY: u32 = 256;
/// Culled calls a thread follows at once, nested; deeper ones are not recorded.
const STACK: usize = 32;

/// Counts an erased call of the function with id field `id_field`; returns the run length when
/// it reaches the cull threshold.
#[inline(always)]
pub(crate) fn erased(t: &ThreadState, id_field: u32) -> Option<u32> {
    let id = id_field >> ID_SHIFT;
    let slot = &t.runs[id as usize & (RUN_SLOTS - 1)];
    let v = slot.get();
    let run = if (v >> 32) as u32 == id {
        (v as u32).saturating_add(1)
    } else {
        1
    };
    slot.set(u64::from(id) << 32 | u64::from(run));
    (run >= t.cull_after.get()).then_some(run)
}

/// A call of the function with id field `id_field` was kept: its run starts over.
#[inline(always)]
pub(crate) fn kept(t: &ThreadState, id_field: u32) {
    let id = id_field >> ID_SHIFT;
    let slot = &t.runs[id as usize & (RUN_SLOTS - 1)];
    if (slot.get() >> 32) as u32 == id {
        slot.set(u64::from(id) << 32);
    }
}

/// The function to cull, if it may be: not one with a trigger or logged arguments, not culled
/// already. Its run starts over either way.
pub(crate) fn candidate(t: &ThreadState, id_field: u32) -> Option<&'static FnDesc> {
    let id = id_field >> ID_SHIFT;
    t.runs[id as usize & (RUN_SLOTS - 1)].set(u64::from(id) << 32);
    let f = desc::function(id)?;
    let flags = f.flags();
    (f.args().is_empty() && flags & (trigger::TRIGGER | CULLED) == 0).then_some(f)
}

/// Culls `f` (its event is written).
pub(crate) fn cull(f: &FnDesc) {
    f.add_flags(CULLED | WATCHED);
}

/// Restores `f`; false if another thread did first (then no event is written twice).
pub(crate) fn restore(f: &FnDesc) -> bool {
    f.clear_flags(CULLED) & CULLED != 0
}

/// The calls of watched functions a thread is in, innermost last: for each, the time its
/// recorded entry was taken, or 0 when its entry was not recorded.
pub(crate) struct CullStack {
    starts: [Cell<u64>; STACK],
    depth: Cell<u32>,
    tick: Cell<u32>,
}

impl CullStack {
    pub(crate) const fn new() -> CullStack {
        CullStack {
            starts: [const { Cell::new(0) }; STACK],
            depth: Cell::new(0),
            tick: Cell::new(0),
        }
    }

    /// True for the one call in `SAMPLE_EVERY` that is recorded, if the stack has room for it.
    pub(crate) fn sample(&self) -> bool {
        let tick = self.tick.get() + 1;
        let due = tick >= SAMPLE_EVERY;
        self.tick.set(if due { 0 } else { tick });
        due && self.room()
    }

    /// Whether an entry pushed now would be remembered.
    pub(crate) fn room(&self) -> bool {
        (self.depth.get() as usize) < STACK
    }

    /// A call was entered, recorded at `start` (0: not recorded).
    pub(crate) fn push(&self, start: u64) {
        let depth = self.depth.get();
        if let Some(s) = self.starts.get(depth as usize) {
            s.set(start);
        }
        self.depth.set(depth.saturating_add(1));
    }

    /// The innermost call ended: `None` if it was entered before this path saw it (its entry was
    /// recorded the usual way), else its start (0: its entry was not recorded).
    pub(crate) fn pop(&self) -> Option<u64> {
        let depth = self.depth.get().checked_sub(1)?;
        self.depth.set(depth);
        Some(self.starts.get(depth as usize).map_or(0, Cell::get))
    }
}
