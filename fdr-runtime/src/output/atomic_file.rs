//! Writing a log to a path so that success means a complete file there.
//!
//! Each write goes to a temporary file of its own next to the target (created exclusively, named
//! with the pid and a process-wide counter, so two writers never share one; locked while it is
//! written, so that cleaning what dead writers left never takes it) and is renamed over
//! the target only when complete; the final log is synced to disk first. A failed write removes its own temporary file and
//! nothing else. Renames of one recording's logs are ordered so that its final log wins: a
//! snapshot that finishes after the final log went to the same path is discarded ([`Finals`]).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::Error;

static NEXT: AtomicU64 = AtomicU64::new(0);

/// The paths one recording's final log was written to, which its snapshots that end later do not
/// replace. Each recording has its own (in its session's outputs), shared by all its writes.
#[derive(Default)]
pub(crate) struct Finals(Mutex<Vec<PathBuf>>);

/// A fresh temporary file next to `path`.
fn create_temp(path: &Path) -> std::io::Result<(PathBuf, File)> {
    loop {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(
            ".{}.{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let tmp = PathBuf::from(name);
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => {
                // Held while it is written: the next start of the program removes such files
                // that dead writers left, never one being written.
                crate::platform::lock_while_open(&f);
                return Ok((tmp, f));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Whether the final log was written to `path` (compared by the canonical directory).
fn same_file(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| {
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        dir.canonicalize()
            .ok()
            .map(|d| d.join(p.file_name().unwrap_or_default()))
    };
    a == b || matches!((canon(a), canon(b)), (Some(x), Some(y)) if x == y)
}

/// Writes a log to `path` through `body`. `is_final` marks the recording's final log, which a
/// later snapshot of the same recording (the same `finals`) to the same path does not replace
/// (it gets `Error::NotRecording`).
pub(crate) fn write(
    finals: &Finals,
    path: &Path,
    is_final: bool,
    body: impl FnOnce(&mut File) -> Result<(), Error>,
) -> Result<(), Error> {
    let io_err = |source| Error::Io {
        path: Some(path.to_path_buf()),
        source,
    };
    let (tmp, mut file) = create_temp(path).map_err(io_err)?;
    // The final log is synced before it is renamed into place: it is written once, at the end,
    // and must survive a machine that goes down right after. Snapshots are not (a sync is most of
    // a snapshot's time); the rename still shows them whole or not at all.
    let result = body(&mut file).and_then(|()| {
        if is_final {
            file.sync_data().map_err(io_err)
        } else {
            Ok(())
        }
    });
    drop(file);
    let result = result.and_then(|()| {
        let mut finals = finals.0.lock().unwrap_or_else(|e| e.into_inner());
        if !is_final && finals.iter().any(|f| same_file(f, path)) {
            return Err(Error::NotRecording);
        }
        std::fs::rename(&tmp, path).map_err(io_err)?;
        if is_final {
            finals.push(path.to_path_buf());
        }
        Ok(())
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(|e| match e {
        Error::Io { path: None, source } => io_err(source),
        e => e,
    })
}

/// Checks at start that a log can be written to `path`: creates and removes a probe file next
/// to it, so a missing directory, a directory in the way or a read-only place is reported before
/// the run rather than after it.
pub(crate) fn probe(path: &Path) -> Result<(), Error> {
    let bad = |message: String| Error::Config {
        key: "out".into(),
        message,
    };
    if path.is_dir() {
        return Err(bad(format!(
            "{} is a directory; give a file path, for example {}",
            path.display(),
            path.join("app.fdr").display()
        )));
    }
    match create_temp(path) {
        Ok((tmp, file)) => {
            drop(file);
            let _ = std::fs::remove_file(tmp);
            Ok(())
        }
        Err(e) => {
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            Err(bad(format!(
                "cannot write a log at {}: {e} (in {}); create the directory or choose a \
                 writable place",
                path.display(),
                dir.display()
            )))
        }
    }
}
