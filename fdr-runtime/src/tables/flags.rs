//! The recorder gate, copied into every descriptor: the `OFF` flag says "nothing records", so a
//! hook learns from its own descriptor, in the one load it makes anyway for the cull and trigger
//! flags, both that no recorder runs and how its function is treated when one does.
//!
//! The process-wide state (`session`) stays the truth; the flags follow it in sweeps over the
//! function table, each under the sweep lock and each writing what the state says when the
//! lock is held:
//!
//! - a recording that starts clears `OFF` (and sets its trigger flags) once it is installed;
//! - a recording that stops sets `OFF` everywhere, unless a newer one is installed already;
//! - a first hook that read `FDR_OPTIONS` and started nothing sets `OFF`, unless a recording
//!   was started meanwhile;
//! - a forked child clears the flags if it will read `FDR_OPTIONS` again, and sets `OFF`
//!   otherwise.
//!
//! A stale `OFF` only ever makes a hook record nothing, like a call that raced the start of a
//! recording; a missing one sends the hook down the recording path, which checks the state
//! itself (so descriptors outside the table, under Miri, are correct, only slower). No
//! recording is ever installed with its functions left `OFF`: its own sweep comes after the
//! install and wins over every sweep that saw the state before it.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::tables::functions;

// The bits of a descriptor's flags, all in one byte the hook loads anyway: every module that sets
// or reads one names it from here, so no two can take the same bit.

/// The descriptor flag of an armed function.
pub(crate) const TRIGGER: u8 = 1;

/// The function is culled: its calls are skipped until a probe finds one slow.
pub(crate) const CULLED: u8 = 2;

/// The descriptor flag that says no recorder runs.
pub(crate) const OFF: u8 = 4;

/// The descriptor flag: the recording profiles this function (every function, when it profiles).
pub(crate) const PROFILED: u8 = 8;

/// The descriptor flag: the recording writes no records for it (profile mode).
pub(crate) const UNLOGGED: u8 = 16;

/// The function is being probed: its erased calls count one by one in its shared run.
pub(crate) const PROBING: u8 = 32;

/// An async function whose polls are timed against the recording's long-poll limit.
pub(crate) const LONG_POLL: u8 = 64;

/// The cost budget stopped timing the function (`lifecycle::budget`): its calls are skipped,
/// as a culled function's are, until the budget has room again. Not probed.
pub(crate) const SHED: u8 = 128;

/// The flags under which a hook records nothing for its function: no recorder, culled, or
/// untimed by the budget. One test, as one flag was.
pub(crate) const UNTIMED: u8 = OFF | CULLED | SHED;

/// Held while a sweep writes the table.
static SWEEPING: AtomicBool = AtomicBool::new(false);

struct Sweep;

impl Sweep {
    fn lock() -> Sweep {
        // Sweeps are short (one store per function) and rare (a start, a stop), so a spin with
        // yields is enough, and unlike a mutex it can be reset in a forked child.
        while SWEEPING
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::thread::yield_now();
        }
        Sweep
    }
}

impl Drop for Sweep {
    fn drop(&mut self) {
        SWEEPING.store(false, Ordering::Release);
    }
}

// The sweeps read the epoch of the running recording (0: none) through `running`, under the
// lock: the process state is `session`'s, which calls in here.

/// The recording with epoch `epoch` has just been installed: its functions record, each with
/// the flags and the run of erased calls `start` gives for its id (its trigger armed, profiled,
/// culled from the start; the run the last run of the build left, or 0: a run is the
/// recording's, not the process's).
pub(crate) fn open(epoch: u64, start: impl Fn(u32) -> (u8, u32), running: fn() -> u64) {
    let _sweep = Sweep::lock();
    if running() != epoch {
        // It stopped already; its stop closed the gate or a newer recording owns the flags.
        return;
    }
    for (i, f) in functions::table().iter().enumerate() {
        let (flags, run) = start(i as u32 + 1);
        f.run().store(run, std::sync::atomic::Ordering::Relaxed);
        // What an earlier recording's budget stopped noting is noted again.
        f.set_details(functions::WAKES_UNNOTED, false);
        f.set_flags(flags);
    }
}

/// Runs `change` under the sweep lock if the recording with epoch `epoch` still runs (else its
/// flags are no longer its own); says whether it ran.
fn while_running(epoch: u64, running: fn() -> u64, change: impl FnOnce()) -> bool {
    let _sweep = Sweep::lock();
    let runs = running() == epoch;
    if runs {
        change();
    }
    runs
}

/// Function `f` of the recording with epoch `epoch` got a trigger while it runs (a name given
/// late): armed, unless that recording stopped meanwhile.
pub(crate) fn arm(epoch: u64, f: &functions::FnDesc, running: fn() -> u64) {
    while_running(epoch, running, || {
        f.add_flags(TRIGGER);
    });
}

/// Function `f` of the recording with epoch `epoch` was named while it runs, and the last run
/// of the build ended with it culled: culled from now, unless that recording stopped meanwhile
/// or the function has a trigger.
pub(crate) fn cull_named(epoch: u64, f: &functions::FnDesc, running: fn() -> u64) {
    while_running(epoch, running, || {
        if f.flags() & TRIGGER == 0 {
            f.add_flags(CULLED);
        }
    });
}

/// The cost budget of the recording with epoch `epoch` stops timing `f` (`on`) or times it
/// again; false if that recording stopped meanwhile.
pub(crate) fn shed(epoch: u64, f: &functions::FnDesc, on: bool, running: fn() -> u64) -> bool {
    while_running(epoch, running, || {
        if on {
            f.add_flags(SHED);
        } else {
            f.clear_flags(SHED);
        };
    })
}

/// The cost budget of the recording with epoch `epoch` stops noting the wake-ups of `f` (`on`)
/// or notes them again; false if that recording stopped meanwhile.
pub(crate) fn unnote_wakes(
    epoch: u64,
    f: &functions::FnDesc,
    on: bool,
    running: fn() -> u64,
) -> bool {
    while_running(epoch, running, || {
        f.set_details(functions::WAKES_UNNOTED, on);
    })
}

/// The recording with epoch `stopping` stops, or (with 0) the first hook found that nothing
/// starts: every hook records nothing from now, unless another recording is installed.
pub(crate) fn close(stopping: u64, running: fn() -> u64) {
    let _sweep = Sweep::lock();
    let running = running();
    if running != 0 && running != stopping {
        return;
    }
    for f in functions::table() {
        f.set_flags(OFF);
    }
}

/// In a forked child, which runs alone: the parent's flags are not the child's. `autostart`:
/// the child reads `FDR_OPTIONS` again at its first hook, which must reach the recording path.
/// Only atomic stores: this runs in an `atfork` handler.
pub(crate) fn after_fork(autostart: bool) {
    // A sweep the parent was in the middle of is not running here.
    SWEEPING.store(false, Ordering::Release);
    let flags = if autostart { 0 } else { OFF };
    for f in functions::table() {
        f.set_flags(flags);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use fdr_format::reader::{Reader, Record};
    use fdr_format::FnKind;

    use super::*;
    use crate::hooks::CallGuard;
    use crate::tables::functions::FnDesc;
    use crate::{testing, Config, FnKindTag};

    #[linkme::distributed_slice(crate::FUNCTIONS)]
    #[linkme(crate = linkme)]
    static GATED: FnDesc = FnDesc::new("gate::gated", file!(), line!(), FnKindTag::Function, &[]);

    fn every_call() -> Config {
        Config::default().threshold(std::time::Duration::ZERO)
    }

    /// The (kind, id) of every function record in `log`.
    fn calls(log: &[u8]) -> Vec<(FnKind, u32)> {
        let mut r = Reader::new(log).expect("header");
        let mut out = Vec::new();
        while let Some((_, rec)) = r.next_record().expect("record") {
            if let Record::Function { id, kind, .. } = rec {
                out.push((kind, id));
            }
        }
        out
    }

    fn call() {
        drop(CallGuard::enter(&GATED));
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the function table is empty under Miri: no sweep has a descriptor to write"
    )]
    fn a_recording_opens_the_gate_and_its_finish_closes_it() {
        let _turn = testing::exclusive();
        let rec = crate::start(every_call()).unwrap();
        assert_eq!(GATED.flags() & OFF, 0);
        call();
        let mut log = Vec::new();
        rec.finish_to(&mut log).unwrap();
        assert_ne!(GATED.flags() & OFF, 0);
        assert_eq!(
            calls(&log),
            vec![(FnKind::Enter, GATED.id()), (FnKind::Exit, GATED.id())]
        );
        // Closed: the hook answers from the flags, without the recording path.
        assert_eq!(
            crate::record::hot_path::enter_guarded(&GATED),
            crate::record::hot_path::SKIPPED
        );
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the function table is empty under Miri: no sweep has a descriptor to write"
    )]
    fn a_close_that_comes_after_a_newer_start_leaves_its_functions_recorded() {
        let _turn = testing::exclusive();
        let rec = crate::start(every_call()).unwrap();
        let epoch = crate::session::epoch();
        // The first hook of the process found nothing to start while this recording was being
        // started; and an older recording's stop arrives late.
        close(0, crate::session::epoch);
        close(epoch - 1, crate::session::epoch);
        assert_eq!(GATED.flags() & OFF, 0);
        call();
        let mut log = Vec::new();
        rec.finish_to(&mut log).unwrap();
        assert_eq!(calls(&log).len(), 2);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the function table is empty under Miri: no sweep has a descriptor to write"
    )]
    fn closes_racing_starts_never_leave_a_recording_with_its_functions_off() {
        let _turn = testing::exclusive();
        let stop = Arc::new(AtomicBool::new(false));
        let closer = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    close(0, crate::session::epoch);
                }
            })
        };
        for round in 0..200 {
            let rec = crate::start(every_call().buffer_count(4)).unwrap();
            call();
            let mut log = Vec::new();
            rec.finish_to(&mut log).unwrap();
            assert_eq!(
                calls(&log).len(),
                2,
                "round {round}: the call was not recorded"
            );
        }
        stop.store(true, Ordering::Relaxed);
        closer.join().unwrap();
    }
}
