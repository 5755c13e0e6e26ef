//! Writing an output file without ever destroying the input or an existing output.
//!
//! [`write()`] refuses an output that is the input log (the same file, however the path is
//! spelled: compared by device and inode, so a hard link, a symbolic link or `dir/../x.fdr`
//! are caught too), writes into a temporary file of its own in the output's directory (created
//! exclusively, so two writes never share one), and renames it into place only once everything
//! was written and flushed to disk. A failed command removes its temporary file and leaves an
//! existing output as it was. An output that is a symbolic link is replaced through it: the
//! file it points to gets the new contents and the link stays. An output that is not a regular
//! file (a device such as `/dev/null`, a named pipe) is written to directly: a rename would
//! replace it.
//!
//! [`write_new`] is for a file that must not replace anything (a log `fdr recover` writes): it
//! takes the first free name of `PATH`, `PATH.1`, `PATH.2`, ..., the same way, through a
//! temporary file linked into place only under a name nothing holds.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::shown_path;
use crate::CliError;

/// True if `a` and `b` name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        #[cfg(unix)]
        (Ok(x), Ok(y)) => {
            use std::os::unix::fs::MetadataExt;
            x.dev() == y.dev() && x.ino() == y.ino()
        }
        #[cfg(not(unix))]
        (Ok(_), Ok(_)) => match (fs::canonicalize(a), fs::canonicalize(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        },
        _ => false,
    }
}

/// A temporary file next to the output, removed unless [`Temp::commit`] renamed it into place.
struct Temp {
    path: PathBuf,
    file: Option<File>,
    committed: bool,
}

impl Temp {
    /// Creates a new temporary file in `target`'s directory, named after it, unique to this
    /// write (process id and a counter; created exclusively, so a name in use is never shared).
    fn create(target: &Path) -> io::Result<Temp> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let base = target
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(".{base}.{}.{n}.fdr-tmp", std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => {
                    return Ok(Temp {
                        path,
                        file: Some(file),
                        committed: false,
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Flushes the file to disk, gives it the permissions of the file it replaces, and renames
    /// it to `target`.
    fn commit(mut self, target: &Path) -> io::Result<()> {
        if let Some(file) = self.file.take() {
            if let Ok(m) = fs::metadata(target) {
                file.set_permissions(m.permissions())?;
            }
            file.sync_all()?;
        }
        fs::rename(&self.path, target)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.committed {
            self.file = None;
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Runs `f` on a buffered writer to the output `dest` for the input log `input`: `-` is `out`;
/// a path gets a temporary file renamed into place when `f` succeeded (see the module
/// documentation). Refuses (a usage error) an output that is the input.
pub(crate) fn write(
    dest: &Path,
    input: &Path,
    out: &mut dyn Write,
    f: impl FnOnce(&mut dyn Write) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let shown = shown_path(dest);
    let werr = |e| CliError::io(&shown, "cannot write the output", e);
    if dest.as_os_str() == "-" {
        let mut w = BufWriter::with_capacity(1 << 20, out);
        f(&mut w)?;
        return w.flush().map_err(werr);
    }
    if same_file(dest, input) {
        return Err(CliError::Usage(format!(
            "fdr: {shown}: the output is the input log {}; writing it would destroy the log \
             (choose another output path)",
            shown_path(input)
        )));
    }
    // A device or a pipe (`-o /dev/null`, `-o >(gzip)`) is written to as it is: renaming a
    // file over it would replace it.
    if fs::metadata(dest).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let file = OpenOptions::new().write(true).open(dest).map_err(werr)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        f(&mut w)?;
        return w.flush().map_err(werr);
    }
    // Through a symbolic link to the file it names, so that the link stays a link.
    let target = match fs::symlink_metadata(dest) {
        Ok(m) if m.file_type().is_symlink() => {
            fs::canonicalize(dest).unwrap_or_else(|_| dest.to_path_buf())
        }
        _ => dest.to_path_buf(),
    };
    let mut tmp = Temp::create(&target)
        .map_err(|e| CliError::io(&shown, "cannot create a temporary file for the output", e))?;
    let file = tmp.file.as_mut().expect("a new temporary file is open");
    let mut w = BufWriter::with_capacity(1 << 20, file);
    f(&mut w)?;
    w.flush().map_err(werr)?;
    drop(w);
    tmp.commit(&target).map_err(werr)
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn write() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("fdr-output-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (log, out) = (dir.join("in.fdr"), dir.join("out.txt"));
        std::fs::write(&log, b"log").unwrap();
        std::fs::write(&out, b"old").unwrap();
        let mut stdout = Vec::new();
        // A failure leaves the old output.
        let failed = crate::output::write(&out, &log, &mut stdout, |w| {
            w.write_all(b"half").unwrap();
            Err(crate::CliError::Usage("stopped".into()))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(&out).unwrap(), b"old");
        // The input is never an output.
        assert!(crate::output::write(&log, &log, &mut stdout, |_| Ok(())).is_err());
        assert_eq!(std::fs::read(&log).unwrap(), b"log");
        crate::output::write(&out, &log, &mut stdout, |w| {
            w.write_all(b"new")
                .map_err(|e| crate::CliError::Usage(e.to_string()))
        })
        .unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            2,
            "no temporary file left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
