//! Culling: calls that can never matter stop costing a clock read.
//!
//! A function whose calls were erased by the rewind for a long run of calls (`cull_after`,
//! 2,000 by default, counted over all threads together) is culled: the `CULLED` flag in its
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
//! # The state: counted per thread, decided per function
//!
//! Each function's run of erased calls is one `u32` in its own descriptor (`FnDesc::run`), in
//! the descriptor's second cache line, away from the flags every hook reads. The function table
//! is laid out by the linker, so every function has its state from the start, with no slot
//! shared between functions. The run is shared by the threads: a pool of short-lived workers
//! adds up one run instead of learning each function again per thread, and a cull or a restore
//! is seen by every thread at its next call.
//!
//! But an erased call does not store to it: a store per call from every core that calls the
//! function moves the line from core to core on every call (two threads in one short function
//! paid twice what two threads in two functions did). A thread counts its erased calls in a
//! table of its own ([`LOCAL_RUNS`] slots of [`LocalRun`], by function index modulo the size,
//! in the thread-local: no allocation, 1 KiB per thread) and looks at the shared run only now
//! and then: when its count reaches the slot's `look_at`, it loads the run, adds its count (one
//! store), and culls when the sum reaches `cull_after`. `look_at` is the least of [`LOOK_EVERY`]
//! and what the shared run still lacks when the thread last looked, so a thread alone culls at
//! exactly `cull_after` erased calls, and threads one after the other (each adds its count when
//! it leaves, or when another function takes its slot) add up exactly too. Threads counting at
//! the same time cull up to [`LOOK_EVERY`] calls each later than one thread would.
//!
//! Two functions whose indexes meet in a slot do not reset each other (an earlier per-thread
//! table, which reset a run on every collision, never culled programs with hundreds of
//! interleaving functions): the one leaving the slot adds its count to its shared run first.
//! So a collision costs a store to the leaving function's run, what every erased call cost
//! before, and only for functions that interleave in one slot.
//!
//! Which shared lines a call touches, and when: every hook loads its descriptor's flags (read
//! only, shared by every core without traffic); an erased call of a culling function loads its
//! run and stores it once per [`LOOK_EVERY`] of its own erased calls, or when a colliding
//! function takes its slot; a kept call stores to its run only when the run is not 0 (a kept
//! call of a function kept often finds it 0, its thread's count being under [`KEPT_COST`]);
//! a cull, a probe or a restore writes the flags once. Nothing per call.
//!
//! A kept call does not start the run over: it adds its thread's count to the run and takes
//! [`KEPT_COST`] erased calls off it (down to 0). A function is culled once its erased calls,
//! less [`KEPT_COST`] for each kept one, reach `cull_after`: one that is slow once in a thousand
//! calls or more often never is, but a short function whose calls a busy machine stretches past
//! the threshold now and then (an interrupt, a preemption: in a loopback service on two CPUs,
//! about one call in 10,000, which reset a run of 10,000 too often for most such functions ever
//! to be culled) is. With a `cull_after` of at most [`KEPT_COST`], a kept call starts the run
//! over, as every kept call once did. Counts other threads hold are older or newer than it; a
//! thread that finds the run smaller than when it last looked drops its count (a kept call came
//! in between), which errs towards culling later. Threads update the
//! run with a relaxed load and store, not a read-modify-write: two threads adding at the same
//! instant may lose one count, and a kept call racing an add may lose its reset. A lost count
//! culls a little later; a lost reset may cull a function that was kept on another thread just
//! then, which a probe restores as soon as a call is slow.
//!
//! A probe sets the run to [`PROBE`] and swaps the function's `CULLED` flag for [`PROBING`]:
//! while that flag is up, erased calls count in the shared run one by one, as every call once
//! did (a probe is [`PROBE_CALLS`] calls), and the [`PROBE_CALLS`]-th culls again (without an
//! event: nothing changed); a kept call finds the mark and restores (with an event). Calls on
//! every thread count towards the probe's calls. A restored function's run is what a kept call
//! leaves of the full run that culled it (`cull_after` less [`KEPT_COST`]), as if the probe's
//! slow call had come before the cull: a function that became slow is kept often and never gets
//! back to `cull_after`, while a short one that a probe caught preempted once is culled again
//! after [`KEPT_COST`] erased calls instead of a whole `cull_after`. In a loopback service on
//! two CPUs (mini-redis, `benches/real`) such restores came every few tens of milliseconds:
//! with the run started over at each, a request paid 18 to 21 erased calls; with this, 9.5 to
//! 11.8.
//!
//! Each hand-in also adds the thread's count to the function's total of erased calls
//! (`FnDesc::erased`, never reset, one atomic add per [`LOOK_EVERY`] erased calls): what the cost
//! budget (`lifecycle::budget`) ranks functions by.
//!
//! Whether a call's exit is recorded is decided by its entry, which the guard of the call
//! remembers (see `hooks::CallGuard`): a call entered while its function was culled records no
//! exit, a call entered before keeps its exit, whatever happens to the flag in between.

use std::sync::atomic::Ordering::Relaxed;

use fdr_format::ID_SHIFT;

use crate::record::thread_state::{LocalRun, ThreadState, LOCAL_RUNS};
use crate::session::learned_culls::Learnt;
use crate::tables::flags::{self, CULLED, PROBING};
use crate::tables::functions::{self, FnDesc};

/// A run at or past this value marks a function a probe has let through (see [`probe`]).
pub(crate) const PROBE: u32 = 1 << 31;

/// What `controller::count_out` hands to `controller::cull_now` as the run when a probe's call was kept: the
/// function is to be restored.
pub(crate) const RESTORE: u32 = 0;

// The probes' figures are tuning, not API: tests reach `PROBE_CALLS` (and `memory`) through
// `testing`. `Config::cull`'s documentation gives users the period and the calls per probe as
// numbers, so a change here changes it too.

/// How often the background writer probes culled functions, in milliseconds.
pub(crate) const PROBE_PERIOD_MS: u64 = 10;

/// How much less often it probes while the cost budget is short (see `session::budget`): a
/// probe's 64 calls of each culled function are timed calls too, and on mini-redis at 10 ms
/// they were about a sixth of all the timed calls of a budget that untimed all it could.
pub(crate) const BUSY_PROBE_FACTOR: u64 = 10;

/// How many calls a probe lets through, one after the other. A function that became slow on
/// every call is found by its next probe; one slow on one call in `n` (`n` up to 64) by its next
/// probe too, even when the probe comes while a slow call is blocked (a probe cannot time a call
/// entered before it: that call's entry was skipped, and the 63 calls after it reach the next
/// slow one); with a larger `n`, with a chance of `1 - (1 - 1/n)^64` per probe. A probe of a
/// function that is still short costs 64 recorded calls.
pub(crate) const PROBE_CALLS: u32 = 64;

/// How many descriptors one probing round looks at (and so, at most, probes).
pub(crate) const PROBES_PER_ROUND: usize = 4096;

/// What a kept call takes off its function's run of erased calls (down to 0): a function whose
/// calls are kept more often than once in this many erased ones is never culled, while the few
/// calls of a short function that an interrupt or a preemption made long (on a busy machine,
/// about one in 10,000) no longer keep it from being culled. With a `cull_after` of at most this
/// many, a kept call starts the run over.
pub const KEPT_COST: u32 = 1000;

/// A thread adds its erased calls to a function's shared run at least once per this many.
pub const LOOK_EVERY: u32 = 128;

/// The descriptor of the function with id field `id_field`, if it is in the table (a descriptor
/// outside it, as tests and Miri make, is never culled).
#[inline(always)]
fn function(t: &ThreadState, id_field: u32) -> Option<&'static FnDesc> {
    let index = (id_field >> ID_SHIFT).wrapping_sub(1);
    t.functions.get().get(index as usize)
}

/// This thread's slot for the function at `index`.
#[inline(always)]
fn slot(t: &ThreadState, index: u32) -> &LocalRun {
    &t.runs[index as usize % LOCAL_RUNS]
}

/// Counts an erased call of the function with id field `id_field`; returns the run length when
/// it reaches the cull threshold (at once during a probe).
#[inline(always)]
pub(crate) fn erased(t: &ThreadState, id_field: u32) -> Option<u32> {
    if erased_inline(t, id_field) {
        return None;
    }
    erased_out(t, id_field)
}

/// The usual case of [`erased`], with no call in it: counts the call in the thread's own slot
/// and answers true, or answers false, having counted nothing, when [`erased_out`] is due (a
/// probe, a slot to claim, a count that reached its look).
#[inline(always)]
pub(crate) fn erased_inline(t: &ThreadState, id_field: u32) -> bool {
    let index = (id_field >> ID_SHIFT).wrapping_sub(1);
    let Some(f) = t.functions.get().get(index as usize) else {
        return true;
    };
    if f.flags() & PROBING != 0 {
        return false;
    }
    let s = slot(t, index);
    if s.function.get() != index + 1 {
        return false;
    }
    let n = s.count.get() + 1;
    if n >= s.look_at.get() {
        return false;
    }
    s.count.set(n);
    true
}

/// [`erased`] when [`erased_inline`] could not count the call.
#[cold]
#[inline(never)]
pub(crate) fn erased_out(t: &ThreadState, id_field: u32) -> Option<u32> {
    let index = (id_field >> ID_SHIFT).wrapping_sub(1);
    let f = t.functions.get().get(index as usize)?;
    if f.flags() & PROBING != 0 {
        return probed_erased(f);
    }
    let s = slot(t, index);
    if s.function.get() != index + 1 {
        return claim(t, f, index);
    }
    s.count.set(s.count.get() + 1);
    look(t, f, s)
}

/// An erased call during a probe: the run counts it at once.
#[cold]
#[inline(never)]
fn probed_erased(f: &FnDesc) -> Option<u32> {
    f.erased().fetch_add(1, Relaxed);
    let n = f.run().load(Relaxed).wrapping_add(1);
    f.run().store(n, Relaxed);
    // Past `PROBE` (which is past any `cull_after`): `controller::cull_now` counts the calls.
    (n >= PROBE).then_some(n)
}

/// The first erased call of `f` (at `index`) in its slot: the function there before adds its
/// count to its own run, and `f` starts counting from its run as it stands.
#[cold]
#[inline(never)]
fn claim(t: &ThreadState, f: &FnDesc, index: u32) -> Option<u32> {
    let s = slot(t, index);
    hand_in(t, s);
    s.function.set(index + 1);
    s.count.set(1);
    let run = f.run().load(Relaxed);
    let run = if run >= PROBE { 0 } else { run };
    s.base.set(run);
    s.look_at.set(look_after(t, run));
    if s.look_at.get() > 1 {
        return None;
    }
    look(t, f, s)
}

/// How many erased calls a thread counts before it looks again at a run that stood at `run`.
#[inline(always)]
fn look_after(t: &ThreadState, run: u32) -> u32 {
    LOOK_EVERY
        .min(t.cull_after.get().saturating_sub(run))
        .max(1)
}

/// The thread's count of `f` reached its `look_at`: adds it to the shared run, or answers the
/// run when the sum reaches `cull_after` (`candidate` then sets the run to 0).
#[cold]
#[inline(never)]
fn look(t: &ThreadState, f: &FnDesc, s: &LocalRun) -> Option<u32> {
    let run = f.run().load(Relaxed);
    let mine = s.count.replace(0);
    f.erased().fetch_add(u64::from(mine), Relaxed);
    // An entry still erasable at the buffer's end is a recorded call around this one: the
    // function has a timed caller (the cost budget stops only such functions).
    if t.enters.get() > 0 {
        f.note_placement(false);
    }
    // A probe came (its calls count in the run itself) or a kept call reset the run since the
    // thread last looked: its count is dropped.
    let sum = if run >= PROBE || run < s.base.get() {
        run
    } else {
        run.saturating_add(mine)
    };
    if sum >= t.cull_after.get() && sum < PROBE {
        s.base.set(0);
        s.look_at.set(look_after(t, 0));
        return Some(sum);
    }
    if sum != run {
        f.run().store(sum, Relaxed);
    }
    let sum = if sum >= PROBE { 0 } else { sum };
    s.base.set(sum);
    s.look_at.set(look_after(t, sum));
    None
}

/// Adds the count in slot `s` to its function's run (no cull: the next look decides) and frees
/// the slot.
fn hand_in(t: &ThreadState, s: &LocalRun) {
    let mine = s.count.replace(0);
    let index = s.function.replace(0);
    if mine == 0 || index == 0 {
        return;
    }
    let Some(f) = t.functions.get().get(index as usize - 1) else {
        return;
    };
    f.erased().fetch_add(u64::from(mine), Relaxed);
    let run = f.run().load(Relaxed);
    if run < PROBE && run >= s.base.get() {
        f.run()
            .store(run.saturating_add(mine).min(PROBE - 1), Relaxed);
    }
}

/// The thread leaves its recording (it exits, or the recording ended): while the recording
/// still runs (`running`), its counts are added to their runs, so the threads after it go on
/// from there; then every slot is free.
pub(crate) fn leave(t: &ThreadState, running: bool) {
    for s in &t.runs {
        if running {
            hand_in(t, s);
        } else {
            s.function.set(0);
            s.count.set(0);
        }
    }
}

/// A call of the function with id field `id_field` was kept: true in the usual case of a
/// function that is often kept (nothing counted, nothing to take off), false when [`kept_out`]
/// is due.
#[inline(always)]
pub(crate) fn kept_settled(t: &ThreadState, id_field: u32) -> bool {
    match kept_state(t, id_field) {
        Some((f, _, _, mine)) => mine == 0 && f.run().load(Relaxed) == 0,
        None => true,
    }
}

/// A kept call with a count or a run to settle: the thread's count joins the run and the kept
/// call takes [`KEPT_COST`] off it (see the module's docs). True when the call was let through
/// by a probe: the function is to be restored (its run set to what a kept call leaves of a full
/// one).
#[cold]
#[inline(never)]
pub(crate) fn kept_out(t: &ThreadState, id_field: u32) -> bool {
    kept_state(t, id_field).is_some_and(|(f, s, index, mine)| kept_counted(t, f, s, index, mine))
}

/// The function with id field `id_field`, its index, this thread's slot for it and the count
/// the slot holds for it (0 if the slot is another function's).
#[inline(always)]
fn kept_state(t: &ThreadState, id_field: u32) -> Option<(&'static FnDesc, &LocalRun, u32, u32)> {
    let index = (id_field >> ID_SHIFT).wrapping_sub(1);
    let f = t.functions.get().get(index as usize)?;
    let s = slot(t, index);
    let mine = if s.function.get() == index + 1 {
        s.count.get()
    } else {
        0
    };
    Some((f, s, index, mine))
}

/// [`kept_out`]'s work, with the function, its slot and the thread's count.
#[inline(always)]
fn kept_counted(t: &ThreadState, f: &FnDesc, s: &LocalRun, index: u32, mine: u32) -> bool {
    let run = f.run().load(Relaxed);
    let ours = s.function.get() == index + 1;
    if ours {
        s.count.set(0);
    }
    let left = if run >= PROBE {
        // A probe's call, kept: the function is restored with what a kept call leaves of the
        // full run that culled it, not with none, so that one slow call (a preemption, say)
        // costs the next KEPT_COST calls recorded rather than the next `cull_after`.
        t.cull_after.get().saturating_sub(KEPT_COST)
    } else {
        // A reset or another kept call since the thread last looked: its count is dropped.
        let sum = if run < s.base.get() {
            run
        } else {
            run.saturating_add(mine)
        };
        sum.saturating_sub(KEPT_COST)
    };
    if left != run {
        f.run().store(left, Relaxed);
    }
    if ours {
        s.base.set(left);
        s.look_at.set(look_after(t, left));
    }
    run >= PROBE
}

/// The function to cull, if it may be: not one with a trigger or logged arguments, not culled
/// already. Its run starts over either way.
pub(crate) fn candidate(t: &ThreadState, id_field: u32) -> Option<&'static FnDesc> {
    let f = function(t, id_field)?;
    f.run().store(0, Relaxed);
    let flags = f.flags();
    (f.args().is_empty() && flags & (flags::TRIGGER | CULLED | flags::SHED) == 0).then_some(f)
}

/// The function with id field `id_field`, to restore after a probe's call was kept; `None` if
/// another thread restored it first or it is not culled (nothing to write).
pub(crate) fn restorable(t: &ThreadState, id_field: u32) -> Option<&'static FnDesc> {
    let f = function(t, id_field)?;
    // A probe cleared the flag; a thread's erased call may have set it again since.
    f.clear_flags(CULLED | PROBING);
    Some(f)
}

/// Culls `f` (its event is written, unless a probe found it still short).
pub(crate) fn cull(f: &FnDesc) {
    f.swap_flags(PROBING, CULLED);
}

/// One probing round, from the background writer: looks at up to [`PROBES_PER_ROUND`]
/// descriptors from `cursor` on (wrapping around the table, so every culled function gets its
/// turn) and lets the next [`PROBE_CALLS`] calls of each culled one through. Returns how many
/// it probed.
pub(crate) fn probe(cursor: &mut usize) -> u64 {
    let table = functions::table();
    if table.is_empty() {
        return 0;
    }
    let mut probed = 0;
    for _ in 0..PROBES_PER_ROUND.min(table.len()) {
        *cursor = (*cursor + 1) % table.len();
        let f = &table[*cursor];
        if f.flags() & CULLED != 0 {
            // The mark first: a thread that sees the flags swapped finds it when its call ends.
            f.run().store(PROBE, Relaxed);
            f.swap_flags(CULLED, PROBING);
            probed += 1;
        }
    }
    probed
}

/// Whether the function with id `id` may be culled at all: one with logged arguments never is
/// (nor one with a trigger, which its flags say).
pub(crate) fn may_cull(id: u32) -> bool {
    functions::table()
        .get(id as usize - 1)
        .is_some_and(|f| f.args().is_empty())
}

/// What culling learned by now, by function id: the functions culled (or being probed, which
/// they were until the probe), and the others' runs of erased calls (those not 0): what a
/// recording that ends leaves to the next (`session::learned_culls`). Read before the stop's sweep sets every
/// descriptor `OFF`. Counts threads still hold in their own slots are not in it.
pub(crate) fn learnt_now() -> Vec<(u32, Learnt)> {
    functions::table()
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let learnt = if f.flags() & (CULLED | PROBING) != 0 {
                Learnt::Culled
            } else {
                match f.run().load(Relaxed) {
                    0 => return None,
                    run if run >= PROBE => return None,
                    run => Learnt::Erased(run),
                }
            };
            Some((i as u32 + 1, learnt))
        })
        .collect()
}

/// The memory culling keeps, in bytes, for `functions` functions and `threads` threads: each
/// function's run (inside its descriptor, which exists anyway), and each thread's table of
/// counts (in its thread-local, 1 KiB whatever the number of functions).
pub(crate) fn memory(functions: usize, threads: usize) -> usize {
    let per_thread = std::mem::size_of::<[LocalRun; LOCAL_RUNS]>();
    functions * std::mem::size_of::<functions::Run>() + threads * per_thread
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_probe_figures_are_those_config_cull_documents() {
        // `Config::cull` tells users "every 10 ms" and "the next 64 calls" in words.
        assert_eq!((super::PROBE_PERIOD_MS, super::PROBE_CALLS), (10, 64));
    }
}
