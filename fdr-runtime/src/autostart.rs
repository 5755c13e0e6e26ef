//! Recording with no code change: `FDR_OPTIONS` read at the first instrumented call, the log
//! written at exit and a snapshot on panic.
//!
//! The log goes to `out` (default `PROGRAM-PID.fdr`), where `{pid}` stands for the process id. A
//! forked child reads `FDR_OPTIONS` again at its first call and records as its own process; so
//! that it never writes over its parent's log, its file gets its pid before the extension when
//! `out` has no `{pid}` (`app.fdr` becomes `app.4242.fdr`).

use std::path::{Path, PathBuf};
use std::sync::Once;

use crate::recorder::{self, Recorder};
use crate::{session, Config, Error};

/// Reads `FDR_OPTIONS` and starts recording if it says so. Called once per process (and once
/// more in each forked child) by the first hook that finds the state unknown.
pub(crate) fn run() {
    let started = match Config::from_env() {
        Ok(Some(config)) => {
            let out = out_path(config.get_out(), std::process::id(), session::forks() > 0);
            match recorder::start_with(config, Some(out)) {
                Ok(_) => {
                    install_exit_writers();
                    true
                }
                Err(Error::AlreadyRunning) => false,
                Err(e) => {
                    eprintln!("{e}; recording stays off");
                    false
                }
            }
        }
        Ok(None) => false,
        Err(e) => {
            eprintln!("{e}; recording stays off");
            false
        }
    };
    session::autostart_done(started);
}

/// The log's path from the `out` option.
fn out_path(out: Option<&Path>, pid: u32, forked: bool) -> PathBuf {
    let Some(out) = out else {
        let program = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "fdr".into());
        return PathBuf::from(format!("{program}-{pid}.fdr"));
    };
    let text = out.to_string_lossy();
    if text.contains("{pid}") {
        return PathBuf::from(text.replace("{pid}", &pid.to_string()));
    }
    if !forked {
        return out.to_path_buf();
    }
    let stem = out.file_stem().unwrap_or_default().to_string_lossy();
    let name = match out.extension() {
        Some(ext) => format!("{stem}.{pid}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{pid}"),
    };
    out.with_file_name(name)
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
        rec.finish(&out)
    } else {
        rec.write_snapshot(&out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_names_follow_the_process() {
        let p = |s: &str| Some(Path::new(s).to_path_buf());
        assert_eq!(
            out_path(p("a/app.fdr").as_deref(), 7, false),
            Path::new("a/app.fdr")
        );
        assert_eq!(
            out_path(p("a/app.fdr").as_deref(), 7, true),
            Path::new("a/app.7.fdr")
        );
        assert_eq!(out_path(p("app").as_deref(), 7, true), Path::new("app.7"));
        assert_eq!(
            out_path(p("log-{pid}.fdr").as_deref(), 9, true),
            Path::new("log-9.fdr")
        );
        assert_eq!(
            out_path(p("log-{pid}.fdr").as_deref(), 9, false),
            Path::new("log-9.fdr")
        );
    }
}
