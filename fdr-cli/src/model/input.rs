//! The log a command reads: a file, or standard input (`-`).
//!
//! Commands read a log once or twice, and skip the blocks of threads they leave out, so they
//! need a file they can reopen and seek in. Standard input (and a log that is a pipe, such as
//! `<(zcat app.fdr.gz)`) is therefore copied first into a temporary file of its own (created
//! exclusively in the temporary directory, removed when the command ends): memory stays
//! bounded whatever the size of the input, and messages name the log `-` (or its path).
//!
//! The same goes for a profile (`.fdrprof`), which `fdr profile` and `fdr flame` read with
//! [`Log::open_any`]; [`Log::open`], which the commands for logs use, refuses one. So does it
//! a crash box ([`fdr_format::crash_box`]), which `fdr recover` turns into a log and `fdr info`
//! reads as it is ([`Log::box_source`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use fdr_format::crash_box;
use fdr_format::events::EventDecoder;
use fdr_format::profile::{Profile, PROFILE_MAGIC};
use fdr_format::FormatError;

use crate::error::shown_path;
use crate::CliError;

/// A log to read.
#[derive(Debug)]
pub(crate) struct Log {
    path: PathBuf,
    name: String,
    len: u64,
    /// The copy of standard input, removed on drop.
    spool: Option<PathBuf>,
}

impl Drop for Log {
    fn drop(&mut self) {
        if let Some(p) = &self.spool {
            let _ = fs::remove_file(p);
        }
    }
}

impl Log {
    /// The log at `arg`; `-` copies standard input into a temporary file first. A profile
    /// file (`.fdrprof`, see [`fdr_format::profile`]) or a crash box is refused with an error
    /// naming the commands that read it.
    pub(crate) fn open(arg: &Path) -> Result<Log, CliError> {
        Log::open_any(arg)?.only_log()
    }

    /// This file, if it is a log: a profile or a crash box is refused as [`Log::open`] says.
    pub(crate) fn only_log(self) -> Result<Log, CliError> {
        if self.is_box()? {
            return Err(CliError::Input {
                path: self.name.clone(),
                err: FormatError::new(
                    0,
                    "this is a crash box (it starts with FDR-BOX), not a log: `fdr recover` \
                     turns it into a log, `fdr info` shows what it holds"
                        .into(),
                ),
            });
        }
        if self.is_profile()? {
            return Err(CliError::Input {
                path: self.name.clone(),
                err: FormatError::new(
                    0,
                    "this is a profile (it starts with FDRPROF), not a log: use `fdr profile` \
                     or `fdr flame`"
                        .into(),
                ),
            });
        }
        Ok(self)
    }

    /// The file at `arg` whatever it holds, a log or a profile; `-` copies standard input
    /// into a temporary file first.
    pub(crate) fn open_any(arg: &Path) -> Result<Log, CliError> {
        if arg.as_os_str() == "-" {
            return Log::spool(&mut io::stdin().lock());
        }
        let name = shown_path(arg);
        // Named for what it is said to be: `fdr profile app.fdrprof` is not looking for a log.
        let cannot = if arg.extension().is_some_and(|e| e == "fdrprof") {
            "cannot open the profile"
        } else {
            "cannot open the log"
        };
        let meta = fs::metadata(arg).map_err(|e| CliError::io(&name, cannot, e))?;
        if !meta.is_file() && !meta.is_dir() {
            // A pipe (`<(zcat app.fdr.gz)`) or a device: read once, like standard input.
            let mut f = File::open(arg).map_err(|e| CliError::io(&name, cannot, e))?;
            return Log::spool_named(&mut f, &name);
        }
        let len = meta.len();
        Ok(Log {
            path: arg.to_path_buf(),
            name,
            len,
            spool: None,
        })
    }

    /// A log read from `input` (standard input), named `-`, kept in a temporary file.
    pub(crate) fn spool(input: &mut dyn Read) -> Result<Log, CliError> {
        Log::spool_named(input, "-")
    }

    fn spool_named(input: &mut dyn Read, name: &str) -> Result<Log, CliError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir();
        let (path, mut file) = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let p = dir.join(format!(".fdr-stdin-{}-{n}.fdr", std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&p) {
                Ok(f) => break (p, f),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(CliError::io(
                        name,
                        "cannot create a temporary file for the log read from a pipe",
                        e,
                    ))
                }
            }
        };
        let mut log = Log {
            path: path.clone(),
            name: name.to_string(),
            len: 0,
            spool: Some(path),
        };
        log.len =
            io::copy(input, &mut file).map_err(|e| CliError::io(name, "cannot read the log", e))?;
        Ok(log)
    }

    /// Where the log is (for standard input, the temporary copy).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The log as messages name it: its path as given (escaped), or `-`.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Its size in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// A decoder over the log, from its start; it seeks over the blocks it is told to skip.
    pub(crate) fn decoder(&self) -> Result<EventDecoder<File>, CliError> {
        let file = File::open(&self.path)
            .map_err(|e| CliError::io(&self.name, "cannot open the log", e))?;
        EventDecoder::seekable(file).map_err(|err| CliError::Input {
            path: self.name.clone(),
            err,
        })
    }

    /// Its first bytes, at most `n` (fewer in a shorter file).
    pub(crate) fn head(&self, n: usize) -> Result<Vec<u8>, CliError> {
        let mut head = Vec::with_capacity(n);
        self.file()?
            .take(n as u64)
            .read_to_end(&mut head)
            .map_err(|e| CliError::io(&self.name, "cannot read the log", e))?;
        Ok(head)
    }

    /// True if the file is a profile (`.fdrprof`) rather than a log: it starts with
    /// [`PROFILE_MAGIC`].
    pub(crate) fn is_profile(&self) -> Result<bool, CliError> {
        Ok(Profile::is_profile(&self.head(PROFILE_MAGIC.len())?))
    }

    /// True if the file is a crash box rather than a log: it starts with
    /// [`crash_box::MAGIC`].
    pub(crate) fn is_box(&self) -> Result<bool, CliError> {
        Ok(crash_box::is_box(&self.head(crash_box::MAGIC.len())?))
    }

    /// The file, which is a crash box, to be read where needed (a box of gigabytes is mostly
    /// holes: what its process wrote is read, not the rest): refused past
    /// [`crate::limits::MAX_BOX_BYTES`], the largest box fdr makes.
    pub(crate) fn box_source(&self) -> Result<crash_box::FileSource, CliError> {
        if self.len > crate::limits::MAX_BOX_BYTES {
            return Err(CliError::Input {
                path: self.name.clone(),
                err: FormatError::new(
                    0,
                    format!(
                        "a crash box of {} bytes is larger than any fdr makes",
                        self.len
                    ),
                ),
            });
        }
        Ok(crash_box::FileSource::new(self.file()?, self.len))
    }

    /// The log's file, from its start.
    pub(crate) fn file(&self) -> Result<File, CliError> {
        File::open(&self.path).map_err(|e| CliError::io(&self.name, "cannot open the log", e))
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn log() {
        use crate::model::input::Log;
        let dir = std::env::temp_dir().join(format!("fdr-input-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.fdr");
        std::fs::write(
            &path,
            fdr_testkit::synth::LogBuilder::new(1_000_000_000).finish(),
        )
        .unwrap();
        let log = Log::open(&path).unwrap();
        assert_eq!(log.name(), path.to_string_lossy());
        assert!(log.decoder().is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
