//! Recording with no code change: `FDR_OPTIONS` read at the first instrumented call, the log
//! written at exit and a snapshot on panic.
//!
//! The log goes to `out` (default `PROGRAM-{pid}.fdr`; see `out_name` for the placeholders). A
//! forked child reads `FDR_OPTIONS` again at its first call and records as its own process, into
//! a file of its own.

use std::path::PathBuf;
use std::sync::Once;

use fdr_format::Reason;

use crate::recorder::{self, Recorder};
use crate::{session, Config, Error};

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
        // SAFETY: `at_exit` is a plain `extern "C"` function that never unwinds (errors are
        // printed, panics cannot escape a function that makes none).
        unsafe { libc::atexit(at_exit) };
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
    let Some(out) = rec.auto_out() else {
        return;
    };
    let result = if finish {
        rec.finish_for(&out, Reason::Exit)
    } else {
        rec.write_snapshot_for(&out, Reason::Panic)
    };
    match result {
        Ok(()) => eprintln!("fdr: wrote {}", out.display()),
        Err(Error::NotRecording) | Err(Error::SnapshotInProgress) => {}
        Err(e) => eprintln!("{e}"),
    }
}

impl Recorder {
    fn auto_out(&self) -> Option<PathBuf> {
        self.session().auto_out.clone()
    }
}
