//! Recording with no code change: `FDR_OPTIONS` read at the first instrumented call, the log
//! written at exit and a snapshot on panic.
//!
//! The log goes to `out` (default `PROGRAM-{pid}.fdr`; see `output::file_names` for the placeholders). A
//! panic's snapshot is numbered as trigger and signal snapshots are (`PROGRAM-{pid}-1.fdr`, or
//! `out`'s `{n}`), so the log written at exit never replaces it; the snapshot cap
//! (`max_snapshots`) applies, except to the process's first panic, which always gets its file. A forked child reads `FDR_OPTIONS` again at its first call and records as its own
//! process, into a file of its own.

use std::path::{Path, PathBuf};
use std::sync::Once;

use fdr_format::Reason;

use crate::lifecycle::recorder::{self, Recorder};
use crate::{
    lifecycle::snapshot, output::file_names, platform::host, session, trigger::slow_calls, Config,
    Error,
};

/// Reads `FDR_OPTIONS` and starts recording if it says so, in one line on stderr. Called once
/// per process (and once more in each forked child) by the first hook that finds the state
/// unknown. A bad option was said already as the program loaded ([`check_at_load`]).
pub(crate) fn run() {
    // Kept in the program with this function: the check it makes as the program loads.
    std::hint::black_box(&CHECK_AT_LOAD);
    let started = match Config::from_env() {
        Ok(Some(config)) => match recorder::start_with(config, true) {
            Ok(rec) => {
                install_exit_writers();
                eprintln!("fdr: {}", started(&rec));
                true
            }
            Err(Error::AlreadyRunning) => false,
            Err(e) => {
                if !REPORTED.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    eprintln!("{e}; recording stays off");
                }
                false
            }
        },
        Ok(None) => false,
        Err(e) => {
            if !REPORTED.swap(true, std::sync::atomic::Ordering::SeqCst) {
                eprintln!("{e}; recording stays off");
            }
            false
        }
    };
    session::autostart_done(started);
}

/// A bad `FDR_OPTIONS` was said already (as the program loaded): the first call says nothing more.
static REPORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Run by the system's loader before `main` (an ELF `.init_array` entry, a Mach-O module
/// initializer), so that a bad `FDR_OPTIONS` is said when the program starts, not at its first
/// instrumented call, which may come much later or never. It reads and checks the options only:
/// recording starts at the first call, as before.
#[used]
#[cfg_attr(
    all(target_os = "linux", not(fdr_unsupported)),
    link_section = ".init_array"
)]
#[cfg_attr(
    all(target_os = "macos", not(fdr_unsupported)),
    link_section = "__DATA,__mod_init_func"
)]
static CHECK_AT_LOAD: extern "C" fn() = check_at_load;

extern "C" fn check_at_load() {
    if std::env::var_os("FDR_OPTIONS").is_none() {
        return;
    }
    // Nothing may unwind out of a loader's initializer: a panic here is swallowed, and the first
    // call reads the options again.
    let _ = std::panic::catch_unwind(|| {
        let bad = match Config::from_env() {
            Ok(Some(config)) => config.validate().err(),
            Ok(None) => None,
            Err(e) => Some(e),
        };
        if let Some(e) = bad {
            REPORTED.store(true, std::sync::atomic::Ordering::SeqCst);
            eprintln!("{e}; recording stays off");
        }
    });
}

/// What the recording `FDR_OPTIONS` started is, in one line: the pool and where it lives, the
/// threshold, the triggers, and where the log goes.
fn started(rec: &Recorder) -> String {
    let s = rec.session();
    let c = &s.setup().config;
    let bytes = |n: usize| fdr_format::units::bytes_text(n as u64);
    let what = if c.get_mode() == crate::Mode::Profile {
        "a profile of every thread's calls".to_string()
    } else {
        let (n, size) = (c.get_buffer_count(), s.setup().buffer_size);
        let place = match (s.pool().crash_box(), c.get_crash_dir()) {
            (Some(_), Some(dir)) => format!("a crash box in {}", dir.display()),
            _ => "the process's memory".to_string(),
        };
        let kept = match c.get_threshold().as_nanos() {
            0 => "every call kept".to_string(),
            ns => format!(
                "calls of {} and longer kept",
                fdr_format::duration::write(ns as u64)
            ),
        };
        let pool = if c.get_mode() == crate::Mode::Fill {
            "the first"
        } else {
            "a ring of the last"
        };
        format!(
            "{pool} {} of calls ({n} buffers of {}) in {place}, {kept}",
            bytes(size * n),
            bytes(size)
        )
    };
    let triggers = match c.get_triggers().len() {
        0 => String::new(),
        1 => "; 1 trigger".to_string(),
        n => format!("; {n} triggers"),
    };
    let out = rec.auto_out().map_or_else(String::new, |p| {
        format!("; the log goes to {} at exit", p.display())
    });
    format!("recording (FDR_OPTIONS): {what}{triggers}{out}")
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
        let n = slow_calls::reserve_file(s.triggers().max_snapshots).or_else(|| {
            FIRST_PANIC
                .swap(false, std::sync::atomic::Ordering::AcqRel)
                .then(slow_calls::next_file)
        });
        let Some(n) = n else {
            s.triggers()
                .suppressed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return;
        };
        let out = file_names::snapshot_path(
            s.outputs().out_template(),
            std::process::id(),
            n,
            host::wall_time(),
        );
        let result = rec.write_snapshot_for(&out, Reason::Panic);
        (snapshot::written(s, &out, Reason::Panic), result)
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
