//! Recording with no code change: `FDR_OPTIONS` read at the first instrumented call, the log
//! written at exit and a snapshot on panic.
//!
//! The log goes to `out` (default `PROGRAM-{pid}.fdr`; see `out_name` for the placeholders). A
//! panic's snapshot is numbered as trigger and signal snapshots are (`PROGRAM-{pid}-1.fdr`, or
//! `out`'s `{n}`), so the log written at exit never replaces it; the snapshot cap
//! (`max_snapshots`) applies, except to the process's first panic, which always gets its file. A forked child reads `FDR_OPTIONS` again at its first call and records as its own
//! process, into a file of its own.

use std::path::{Path, PathBuf};
use std::sync::Once;

use fdr_format::Reason;

use crate::recorder::{self, Recorder};
use crate::{host, log_writer, out_name, session, trigger, Config, Error};

/// Reads `FDR_OPTIONS` and starts recording if it says so. Called once per process (and once
/// more in each forked child) by the first hook that finds the state unknown.
pub(crate) fn run() {
    let started = match Config::from_env() {
        Ok(Some(config)) => match recorder::start_with(config, true) {
            Ok(_) => {
                install_exit_writers();
                true
            }
            Err(Error::AlreadyRunning) => false,
            Err(e) => {
                eprintln!("{e}; recording stays off");
                false
            }
        },
        Ok(None) => false,
        Err(e) => {
            eprintln!("{e}; recording stays off");
            false
        }
    };
    session::autostart_done(started);
}

/// Writes the log at normal exit (through `atexit`, which `std::process::exit` and a return
/// from `main` both run) and a snapshot on panic (before unwinding, chaining to the previous
/// hook). Installed once; a forked child inherits both.
fn install_exit_writers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        extern "C" fn at_exit() {
            write_auto(true);
        }
        // `at_exit` never unwinds into the C library: errors are printed, and it makes no panic.
        crate::platform::at_exit(at_exit);
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            write_auto(false);
            previous(info);
        }));
    });
}

fn write_auto(finish: bool) {
    let Some(rec) = recorder::recorder() else {
        return;
    };
    let Some(final_out) = rec.auto_out() else {
        return;
    };
    let (out, result) = if finish {
        let result = rec.finish_for(&final_out, Reason::Exit);
        let said = format!("wrote {}", final_out.display());
        (said, result)
    } else {
        let s = rec.session();
        // Numbered within the snapshot cap; past it, the process's first panic still gets its
        // file (later ones are counted as suppressed, so a panic loop cannot fill the disk).
        static FIRST_PANIC: std::sync::atomic::AtomicBool =
            std::sync::atomic::AtomicBool::new(true);
        let n = trigger::reserve_file(s.triggers().max_snapshots).or_else(|| {
            FIRST_PANIC
                .swap(false, std::sync::atomic::Ordering::AcqRel)
                .then(trigger::next_file)
        });
        let Some(n) = n else {
            s.triggers()
                .suppressed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return;
        };
        let out = out_name::snapshot_path(
            s.outputs().out_template(),
            std::process::id(),
            n,
            host::wall_time(),
        );
        let result = rec.write_snapshot_for(&out, Reason::Panic);
        (log_writer::written(s, &out, Reason::Panic), result)
    };
    match result {
        Ok(()) => eprintln!("fdr: {out}"),
        Err(Error::NotRecording) | Err(Error::SnapshotInProgress) => {}
        Err(e) => eprintln!("{e}"),
    }
}

impl Recorder {
    fn auto_out(&self) -> Option<PathBuf> {
        self.session().outputs().auto_out().map(Path::to_path_buf)
    }
}
