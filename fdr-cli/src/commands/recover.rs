//! `fdr recover`: the crash boxes of processes that are gone, turned into logs. A box
//! ([`fdr_format::crash_box`]) is a recorder's buffer pool kept in a shared file mapping; when
//! its process dies without writing its log, the box is still there, and this turns it into
//! the log the process would have written, beside the path it would have written it, named so
//! that no later log of the program replaces it (`app.recovered-PID.fdr`; in the current
//! directory when that path's directory cannot be written), then removes the box. A box is
//! taken through its lock ([`crash_box::claim`]): one whose process still runs, in any PID
//! namespace, is never touched, and two recoveries at once write one log. A box its process
//! closed (it wrote its final log) holds nothing to recover and is removed. What is named like
//! a box but is not one of this user's files (a FIFO, a link, another user's file) is skipped,
//! and said. Half-made boxes and temporary logs that dead processes left are removed.
//!
//! Each box that cannot be recovered is reported with why, and the others are still done: the
//! command fails at the end, naming every box it could not recover. What is done to each box
//! is handed to a reporter ([`crate::render::recover`] prints it) as it happens.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use fdr_format::crash_box::{self, BoxInfo};

use crate::error::shown_path;
use crate::CliError;

/// What `fdr recover` was asked.
#[derive(Clone, Debug, Default)]
pub(crate) struct RecoverOptions {
    /// Boxes and directories of boxes; none: [`crash_box::default_dir`].
    pub paths: Vec<PathBuf>,
    /// Leave the boxes in place.
    pub keep: bool,
    /// Write the (single) box's log here instead (`-`: standard output).
    pub output: Option<PathBuf>,
}

/// What was done with one box, or that there was none.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Its log was written to `log`.
    Wrote {
        /// Where.
        log: PathBuf,
        /// What the box said.
        info: Box<BoxInfo>,
        /// The path the log should have had, and why it could not (the log went to the current
        /// directory instead).
        instead_of: Option<(PathBuf, io::Error)>,
    },
    /// Its process runs (or whether it does cannot be told): the box was left as it is.
    LeftAlone {
        /// The box.
        path: PathBuf,
        /// Why, in words (`process 42 is running`).
        why: String,
    },
    /// Not a box of this user's to read: left as it is.
    Skipped {
        /// The name.
        path: PathBuf,
        /// What it is.
        why: String,
    },
    /// No box was found.
    NoneFound {
        /// The directories looked in.
        looked: Vec<PathBuf>,
    },
}

/// The boxes `paths` name (a directory: every `fdr-*.box` in it, sorted by name), the
/// directories looked in, and the paths that could not be read, with why.
type Found = (Vec<PathBuf>, Vec<PathBuf>, Vec<(String, String)>);

/// The boxes to recover.
fn find(paths: &[PathBuf]) -> Found {
    let defaults = [crash_box::default_dir()];
    let paths = if paths.is_empty() {
        &defaults[..]
    } else {
        paths
    };
    let (mut boxes, mut dirs, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for p in paths {
        let meta = match std::fs::metadata(p) {
            Ok(m) => m,
            Err(e) => {
                failed.push((shown_path(p), format!("cannot read it: {e}")));
                continue;
            }
        };
        if !meta.is_dir() {
            if !boxes.contains(p) {
                boxes.push(p.clone());
            }
            continue;
        }
        dirs.push(p.clone());
        // Boxes half laid out by processes that died meanwhile.
        crash_box::clean_leftovers(p, "");
        let entries = match std::fs::read_dir(p) {
            Ok(e) => e,
            Err(e) => {
                failed.push((shown_path(p), format!("cannot list the directory: {e}")));
                continue;
            }
        };
        let mut here: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| crash_box::pid_of(n, None).is_some())
            })
            .map(|e| e.path())
            .collect();
        here.sort();
        for b in here {
            if !boxes.contains(&b) {
                boxes.push(b);
            }
        }
    }
    (boxes, dirs, failed)
}

/// Recovers the boxes `opts` names. The logs written go to files, or to `out` for `-o -`;
/// `report` is handed each [`Outcome`] as it happens, with where to print it (`out`, or
/// standard error when the log itself went to `out`). Fails at the end when a box could not be
/// recovered ([`CliError::Unrecovered`], every such box with why), after doing the others.
pub(crate) fn recover(
    opts: &RecoverOptions,
    out: &mut dyn Write,
    report: &mut dyn FnMut(&Outcome, &mut dyn Write) -> io::Result<()>,
) -> Result<(), CliError> {
    let (boxes, looked, mut failed) = find(&opts.paths);
    if opts.output.is_some() && boxes.len() > 1 {
        return Err(CliError::Usage(format!(
            "fdr: recover: -o/--output names one log, but {} crash boxes were found: name the \
             one box to recover",
            boxes.len()
        )));
    }
    let to_out = opts.output.as_ref().is_some_and(|o| o.as_os_str() == "-");
    let werr = |e| CliError::io("<output>", "writing the report", e);
    if boxes.is_empty() && failed.is_empty() {
        return report(&Outcome::NoneFound { looked }, out).map_err(werr);
    }
    for path in &boxes {
        match one(path, opts, out) {
            Ok(None) => {}
            Ok(Some((o, removed))) => {
                if to_out {
                    report(&o, &mut io::stderr()).map_err(werr)?;
                } else {
                    report(&o, out).map_err(werr)?;
                }
                if let Err(why) = removed {
                    failed.push((shown_path(path), why));
                }
            }
            Err(why) => failed.push((shown_path(path), why)),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::Unrecovered(failed))
    }
}

/// What was done with one box, to report, and whether it was then removed as it should be
/// (`Err`: why not); `None`: nothing to say (a closed box, removed; a box gone meanwhile).
type Handled = Option<(Outcome, Result<(), String>)>;

/// Recovers the box at `path`, or leaves it alone; `Err`: why it could not be recovered.
fn one(path: &Path, opts: &RecoverOptions, out: &mut dyn Write) -> Result<Handled, String> {
    let c = match crash_box::claim(path) {
        crash_box::Look::Claimed(c) => c,
        // Its process finished and removed it meanwhile, or another recovery took it.
        crash_box::Look::Vanished => return Ok(None),
        crash_box::Look::Held(h) => {
            let why = if h.elsewhere() {
                format!("process {} of another PID namespace is running", h.pid)
            } else {
                format!(
                    "process {} is running, or another recovery has the box",
                    h.pid
                )
            };
            let path = path.to_path_buf();
            return Ok(Some((Outcome::LeftAlone { path, why }, Ok(()))));
        }
        crash_box::Look::Skipped(why) => {
            let (path, why) = (path.to_path_buf(), why.to_string());
            return Ok(Some((Outcome::Skipped { path, why }, Ok(()))));
        }
    };
    let info = c.info().map_err(|e| e.to_string())?;
    let exec = match c.status(&info) {
        crash_box::Status::Dead => false,
        crash_box::Status::Exec => true,
        // Its process wrote its final log: nothing to recover.
        crash_box::Status::Closed => {
            if opts.keep {
                return Ok(None);
            }
            return c.remove().map(|_| None).map_err(|e| {
                format!("closed by its process (nothing to recover), but cannot remove it: {e}")
            });
        }
        crash_box::Status::Alive => {
            let why = format!("process {} is running", info.pid);
            let path = path.to_path_buf();
            return Ok(Some((Outcome::LeftAlone { path, why }, Ok(()))));
        }
        crash_box::Status::Unknown(why) => {
            let path = path.to_path_buf();
            return Ok(Some((Outcome::LeftAlone { path, why }, Ok(()))));
        }
    };
    let r = crash_box::recover_from(c.source(), exec).map_err(|e| e.to_string())?;
    let (log, instead_of) = match &opts.output {
        Some(o) if o.as_os_str() == "-" => {
            out.write_all(&r.log)
                .and_then(|()| out.flush())
                .map_err(|e| format!("cannot write its log to standard output: {e}"))?;
            (o.clone(), None)
        }
        Some(o) => {
            crate::output::write(o, path, out, |w| {
                w.write_all(&r.log)
                    .map_err(|e| CliError::io(&shown_path(o), "cannot write the log", e))
            })
            .map_err(|e| format!("cannot write its log: {e}"))?;
            (o.clone(), None)
        }
        None => write_log(&r.info, &r.log)?,
    };
    // The temporary files the process (or a recovery before this one) left beside its log.
    if let Some(dir) = r.info.out.parent() {
        let name = r.info.out.file_name().unwrap_or_default().to_string_lossy();
        crash_box::clean_leftovers(dir, name.strip_suffix(".fdr").unwrap_or(&name));
    }
    let removed = if opts.keep {
        Ok(())
    } else {
        c.remove().map(|_| ()).map_err(|e| {
            format!(
                "its log {} was written, but cannot remove the box: {e} (recovering it again \
                 writes the log again)",
                shown_path(&log)
            )
        })
    };
    Ok(Some((
        Outcome::Wrote {
            log,
            info: Box::new(r.info),
            instead_of,
        },
        removed,
    )))
}

/// Writes `log` beside where the box says its process would have written its log, under the
/// recovered name ([`crash_box::write_recovered`]: never over a file there); when that fails
/// (its directory is gone, or not writable), in the current directory under the same name.
fn write_log(
    info: &BoxInfo,
    log: &[u8],
) -> Result<(PathBuf, Option<(PathBuf, io::Error)>), String> {
    // A box without a path (never made by fdr) gets a name after its program and pid.
    let wanted = if info.out.file_name().is_some() {
        info.out.clone()
    } else {
        PathBuf::from(format!("{}.fdr", crash_box::file_safe(&info.program)))
    };
    let first = match crash_box::write_recovered(&wanted, info.pid, log) {
        Ok(p) => return Ok((p, None)),
        Err(e) => e,
    };
    let name = wanted.file_name().unwrap_or_default();
    let here = std::env::current_dir()
        .map(|d| d.join(name))
        .unwrap_or_else(|_| PathBuf::from(name));
    let shown_wanted = crash_box::recovered_name(&wanted, info.pid, 1);
    if here == wanted {
        return Err(format!(
            "cannot write its log {}: {first}",
            shown_path(&shown_wanted)
        ));
    }
    match crash_box::write_recovered(&here, info.pid, log) {
        Ok(p) => Ok((p, Some((shown_wanted, first)))),
        Err(e) => Err(format!(
            "cannot write its log {} ({first}), nor in the current directory ({e})",
            shown_path(&shown_wanted),
        )),
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn recover() {
        use crate::commands::recover::{recover, Outcome, RecoverOptions};
        use fdr_testkit::crash_box::BoxBuilder;
        let dir = std::env::temp_dir().join(format!("fdr-recover-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut b = BoxBuilder::new("app", 2_000_000_000, dir.join("app.fdr"));
        b.function(1, "app::main");
        let mut buf = b.buffer(7, 0, 1_000);
        buf.enter(1, 1_000);
        buf.finish();
        std::fs::write(dir.join(b.file_name()), b.finish()).unwrap();
        let mut logs = Vec::new();
        let opts = RecoverOptions {
            paths: vec![dir.clone()],
            ..RecoverOptions::default()
        };
        recover(&opts, &mut std::io::sink(), &mut |o, _| {
            if let Outcome::Wrote { log, .. } = o {
                logs.push(log.clone());
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(logs, [dir.join("app.recovered-2000000000.fdr")]);
        assert!(!dir.join(b.file_name()).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
