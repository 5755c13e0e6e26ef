//! Taking a box for recovery: safely in a directory anyone can write to (`/dev/shm`), exactly
//! once however many recoveries run at the same time, and never while its process records.
//!
//! # The lock
//!
//! A recorder takes an exclusive `flock` on its box as it makes it (before the box has its
//! name) and holds it until it dies: the kernel lets go of it however the process ends, SIGKILL
//! included, and whatever PID namespace either side is in, since the lock belongs to the file.
//! Its descriptor is closed at `exec` and in a forked child, so neither keeps it. A reader takes
//! the same lock without waiting ([`claim`]): when it cannot, the process runs (or another
//! reader has the box); when it can, nobody records into the box any more and nobody else reads
//! it, until the reader removes it (by identity: the name must still be that file) or lets go.
//! A reader that got the lock after another reader removed the box finds the file unlinked and
//! leaves it: two recoveries at once write one log.
//!
//! Boxes made before the lock (their header's [`flags::LOCKED`](super::flags::LOCKED) unset)
//! are still judged by their pid, as they were.
//!
//! # What is not a box
//!
//! A name in a shared directory can be anything another user made: a FIFO (whose `open` or
//! `read` would wait forever), a link to `/dev/zero` (endless), a directory, a file of another
//! user. A box is opened without following links and without blocking, must be a regular file
//! of this user, and is read no further than its size: anything else is [`Look::Skipped`].

use std::io;
use std::path::{Path, PathBuf};

use super::source::{FileSource, Source};
use super::{flags, liveness, process, state, BoxInfo, Liveness};
use crate::FormatError;

/// What [`claim`] found at a path.
#[derive(Debug)]
pub enum Look {
    /// The box is this reader's: no process records into it and no other reader has it.
    Claimed(Claimed),
    /// Its process holds it: it runs (or another recovery has it right now). What its header
    /// says of whose it is.
    Held(Holder),
    /// The name went away meanwhile (its process finished, or another recovery took it).
    Vanished,
    /// Not a box to read, and why.
    Skipped(Skip),
}

/// Whose a held box is, as its header says (zeros where it says nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Holder {
    /// The process's pid, in its own PID namespace.
    pub pid: i32,
    /// That namespace's inode (0: not said).
    pub pid_ns: u64,
}

impl Holder {
    /// Whether the process is in another PID namespace than this one (its pid means nothing
    /// here).
    pub fn elsewhere(&self) -> bool {
        self.pid_ns != 0 && process::pid_namespace().is_some_and(|ns| ns != self.pid_ns)
    }
}

/// Why a name was not read as a box.
#[derive(Debug)]
pub enum Skip {
    /// A symbolic link (never followed: it could lead anywhere).
    Link,
    /// Not a regular file: a FIFO, a directory, a device, a socket (named).
    NotAFile(&'static str),
    /// A file of another user (its uid).
    OtherUser(u32),
    /// It could not be opened or examined.
    Unreadable(io::Error),
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::Link => f.write_str("a symbolic link, not a crash box (links are not followed)"),
            Skip::NotAFile(what) => write!(f, "{what}, not a crash box"),
            Skip::OtherUser(uid) => write!(f, "a file of another user (uid {uid})"),
            Skip::Unreadable(e) => write!(f, "cannot read it: {e}"),
        }
    }
}

/// A box this reader holds.
#[derive(Debug)]
pub struct Claimed {
    path: PathBuf,
    source: FileSource,
    dev: u64,
    ino: u64,
    /// Whether the lock was taken (false: the file system has no locks).
    locked: bool,
}

/// How a claimed box's process stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// It wrote its final log and closed the box: nothing to recover; remove it.
    Closed,
    /// Gone without writing its log: recover the box.
    Dead,
    /// It replaced its program (`exec`) and runs as the new one: the box holds the window up to
    /// the exec, recovered as that (not a crash).
    Exec,
    /// It runs: leave the box (a box made before the lock, whose pid runs; or a process that
    /// closed its box's descriptor and still maps the box).
    Alive,
    /// Whether it runs cannot be told (why): leave the box.
    Unknown(String),
}

/// Opens the box at `path` and takes it if no process holds it. Never blocks, never follows a
/// link, reads nothing but a regular file of this user.
///
/// ```
/// use fdr_format::crash_box::{claim, Look};
/// let missing = std::env::temp_dir().join("fdr-no-such-box-here.box");
/// assert!(matches!(claim(&missing), Look::Vanished));
/// ```
pub fn claim(path: &Path) -> Look {
    // Looked at before it is opened: another user's file is not opened at all.
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Look::Vanished,
        Err(e) => return Look::Skipped(Skip::Unreadable(e)),
        Ok(m) if m.file_type().is_symlink() => return Look::Skipped(Skip::Link),
        Ok(m) => {
            if let Some(uid) = os::other_owner(&m) {
                return Look::Skipped(Skip::OtherUser(uid));
            }
        }
    }
    let file = match os::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Look::Vanished,
        Err(e) if os::is_link_error(&e) => return Look::Skipped(Skip::Link),
        Err(e) => return Look::Skipped(os::why_not(path, e)),
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return Look::Skipped(Skip::Unreadable(e)),
    };
    if !meta.is_file() {
        return Look::Skipped(Skip::NotAFile(os::kind(&meta)));
    }
    if let Some(uid) = os::other_owner(&meta) {
        return Look::Skipped(Skip::OtherUser(uid));
    }
    let locked = match os::try_lock(&file) {
        os::Lock::Taken => true,
        os::Lock::Held => {
            let src = FileSource::new(file, meta.len());
            let word = |at: usize, n: usize| {
                src.read_at(at as u64, n, "header").ok().map(|b| {
                    let mut w = [0u8; 8];
                    w[..n].copy_from_slice(&b);
                    u64::from_le_bytes(w)
                })
            };
            return Look::Held(Holder {
                pid: word(super::at::PID, 4).unwrap_or(0) as u32 as i32,
                pid_ns: word(super::at::PID_NS, 8).unwrap_or(0),
            });
        }
        os::Lock::Unsupported => false,
    };
    // Taken after another reader removed the box, or after its process closed and removed it:
    // the file is no longer the name's.
    let (dev, ino) = os::identity(&meta);
    let still = file.metadata().is_ok_and(|m| os::links(&m) > 0)
        && std::fs::symlink_metadata(path).is_ok_and(|m| os::identity(&m) == (dev, ino));
    if !still {
        return Look::Vanished;
    }
    Look::Claimed(Claimed {
        path: path.to_path_buf(),
        source: FileSource::new(file, meta.len()),
        dev,
        ino,
        locked,
    })
}

impl Claimed {
    /// The box's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its bytes, read where needed.
    pub fn source(&self) -> &FileSource {
        &self.source
    }

    /// What its header and tables say (reads them: a few pages and the slots).
    pub fn info(&self) -> Result<BoxInfo, FormatError> {
        super::read_info_from(&self.source)
    }

    /// Whether its process is gone, replaced its program, or runs, given what the box says.
    pub fn status(&self, info: &BoxInfo) -> Status {
        if info.state == state::CLOSED {
            return Status::Closed;
        }
        let ours = process::pid_namespace();
        let same_namespace = match (info.pid_ns, ours) {
            (0, _) => true, // a box older than the field: as fdr judged it then
            (theirs, Some(ours)) => theirs == ours,
            (_, None) => false,
        };
        if self.locked && info.flags & flags::LOCKED != 0 {
            // The lock was free: its process is gone, or it is alive as another program.
            if same_namespace && runs_as(info) {
                return match process::maps_file(info.pid, self.dev, self.ino) {
                    Some(true) => Status::Alive,
                    _ => Status::Exec,
                };
            }
            return Status::Dead;
        }
        if !same_namespace {
            return Status::Unknown(
                "its process ran in another PID namespace, and the lock that would tell whether \
                 it still runs cannot be taken on this file system"
                    .into(),
            );
        }
        match liveness(info) {
            Liveness::Alive => Status::Alive,
            Liveness::Gone => Status::Dead,
        }
    }

    /// Removes the box, if its name is still this file (never another's of the same name), and
    /// lets go of it: `Ok(true)` when this removed it, `Ok(false)` when the name was gone or
    /// another file's.
    pub fn remove(self) -> io::Result<bool> {
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) if os::identity(&m) == (self.dev, self.ino) => {
                match std::fs::remove_file(&self.path) {
                    Ok(()) => Ok(true),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
                    Err(e) => Err(e),
                }
            }
            _ => Ok(false),
        }
    }
}

/// Whether a process holds the box open as `file` (its lock is taken), without taking it: what
/// `fdr info` asks of a box it only reads. False where the system has no locks.
pub fn is_held(file: &std::fs::File) -> bool {
    os::is_held(file)
}

/// Whether a process with the box's pid runs in this boot and started when the box's did: the
/// box's own process, alive (as another program after `exec`, since its lock is free). One that
/// ended and waits for its parent to collect its status (a zombie) runs no more.
fn runs_as(info: &BoxInfo) -> bool {
    let here = super::boot_id();
    info.proc_start != 0
        && info.boot_id != [0; 16]
        && info.boot_id == here
        && process::running(info.pid) == Some(info.proc_start)
}

/// Removes, in `dir`, what processes that died mid-write left there: boxes half laid out
/// (`.fdr-*.box.new`) and temporary logs whose name starts with `prefix` (the log's own name:
/// `LOG.PID.N.tmp`, `LOG.PID.recovered.tmp`). A file is removed only when no process holds its
/// lock (writers hold one for as long as they write) and its writer's pid runs no more here or
/// it is older than an hour (a writer of an older fdr took no lock). Returns what was removed.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("fdr-leftovers-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("app.fdr.2000000000.3.tmp"), b"half a log").unwrap();
/// std::fs::write(dir.join("notes.tmp"), b"not ours").unwrap();
/// let removed = fdr_format::crash_box::clean_leftovers(&dir, "app");
/// assert_eq!(removed, [dir.join("app.fdr.2000000000.3.tmp")]);
/// assert!(dir.join("notes.tmp").exists());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn clean_leftovers(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(kind) = name.to_str().and_then(|n| super::leftover(n, prefix)) else {
            continue;
        };
        let path = e.path();
        let Look::Claimed(c) = claim(&path) else {
            continue;
        };
        let age = c
            .source
            .file()
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .unwrap_or_default();
        let (writer, patience) = match kind {
            super::Leftover::Temporary { pid } => (Some(pid), 3600),
            // Laid out and renamed by its process within milliseconds; its name holds its pid.
            super::Leftover::LayingOut => {
                let n = name.to_str().unwrap_or_default();
                let inner = n.strip_prefix('.').and_then(|n| n.strip_suffix(".new"));
                (inner.and_then(|n| super::pid_of(n, None)), 10)
            }
        };
        let writer_gone = writer.is_some_and(|pid| !os::process_runs(pid));
        let old = age > std::time::Duration::from_secs(patience);
        // Without locks (a file system that has none) only age tells.
        let gone = if c.locked {
            writer_gone || old
        } else {
            age.as_secs() > 3600
        };
        if gone && matches!(c.remove(), Ok(true)) {
            removed.push(path);
        }
    }
    removed
}

/// Writes a log recovered from the box of process `pid`, whose final log was to be `out`, at
/// [`recovered_name`](super::recovered_name) beside it: never over a file already there (the
/// next free number is taken), whole or not at all (a synced temporary file, hard-linked under
/// the name). Returns the path written.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("fdr-recovered-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let out = dir.join("app.fdr");
/// let a = fdr_format::crash_box::write_recovered(&out, 42, b"one").unwrap();
/// let b = fdr_format::crash_box::write_recovered(&out, 42, b"two").unwrap();
/// assert_eq!(a, dir.join("app.recovered-42.fdr"));
/// assert_eq!(b, dir.join("app.recovered-42-2.fdr"));
/// assert_eq!(std::fs::read(&a).unwrap(), b"one");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn write_recovered(out: &Path, pid: i32, log: &[u8]) -> io::Result<PathBuf> {
    use std::io::Write;
    let first = super::recovered_name(out, pid, 1);
    let mut tmp = first.clone().into_os_string();
    tmp.push(format!(".{}.recovered.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        // Held while the file is written: a start that cleans leftovers meanwhile leaves it.
        let _ = os::try_lock(&f);
        f.write_all(log)?;
        f.sync_data()?;
        for n in 1..=10_000 {
            let name = super::recovered_name(out, pid, n);
            match std::fs::hard_link(&tmp, &name) {
                Ok(()) => return Ok(name),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    // No hard links here (some network and FAT file systems): a rename to a
                    // name that is free now.
                    if std::fs::symlink_metadata(&name).is_ok() {
                        continue;
                    }
                    return std::fs::rename(&tmp, &name).map(|()| name).map_err(|_| e);
                }
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "10000 recovered logs of this name exist already",
        ))
    })();
    let _ = std::fs::remove_file(&tmp);
    written
}

#[cfg(unix)]
#[allow(unsafe_code)] // flock and geteuid: no safe way to ask either in the Rust this builds with
mod os {
    use std::fs::{File, Metadata};
    use std::io;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
    use std::os::unix::io::AsRawFd;
    use std::path::Path;

    use super::Skip;

    /// Opens for reading without following a link (the last component) and without waiting
    /// (a FIFO with no writer opens at once; its kind then refuses it).
    pub(super) fn open(path: &Path) -> io::Result<File> {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
    }

    pub(super) fn is_link_error(e: &io::Error) -> bool {
        e.raw_os_error() == Some(libc::ELOOP)
    }

    /// Why a name that could not be opened is not read: a socket (ENXIO) is named as such.
    pub(super) fn why_not(_: &Path, e: io::Error) -> Skip {
        if e.raw_os_error() == Some(libc::ENXIO) {
            Skip::NotAFile("a socket")
        } else {
            Skip::Unreadable(e)
        }
    }

    pub(super) fn kind(m: &Metadata) -> &'static str {
        let t = m.file_type();
        if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        }
    }

    /// The owner's uid, when it is not this process's effective user.
    pub(super) fn other_owner(m: &Metadata) -> Option<u32> {
        // SAFETY: geteuid takes no arguments and cannot fail.
        let me = unsafe { libc::geteuid() };
        (m.uid() != me).then_some(m.uid())
    }

    pub(super) fn identity(m: &Metadata) -> (u64, u64) {
        (m.dev(), m.ino())
    }

    pub(super) fn links(m: &Metadata) -> u64 {
        m.nlink()
    }

    pub(super) enum Lock {
        Taken,
        Held,
        Unsupported,
    }

    /// An exclusive `flock`, without waiting.
    pub(super) fn try_lock(f: &File) -> Lock {
        // SAFETY: flock on a descriptor this File owns; LOCK_NB makes it return at once.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Lock::Taken;
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EWOULDBLOCK) => Lock::Held,
            _ => Lock::Unsupported,
        }
    }

    /// Whether another descriptor holds an exclusive lock on the file: a shared one is tried
    /// without waiting, and let go at once.
    pub(super) fn is_held(f: &File) -> bool {
        // SAFETY: flock on a descriptor this File owns; LOCK_NB returns at once.
        unsafe {
            if libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) == 0 {
                libc::flock(f.as_raw_fd(), libc::LOCK_UN);
                return false;
            }
        }
        io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
    }

    /// Whether a process with this pid exists here (it may be another program that reused
    /// it: the answer errs towards keeping a file).
    pub(super) fn process_runs(pid: i32) -> bool {
        // SAFETY: signal 0 only checks that the process exists and may be signalled.
        pid > 0
            && (unsafe { libc::kill(pid, 0) } == 0
                || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
    }
}

#[cfg(not(unix))]
mod os {
    use std::fs::{File, Metadata};
    use std::io;
    use std::path::Path;

    use super::Skip;

    /// A link was refused before this, by the name's own metadata.
    pub(super) fn open(path: &Path) -> io::Result<File> {
        File::open(path)
    }

    pub(super) fn is_link_error(_: &io::Error) -> bool {
        false
    }

    pub(super) fn why_not(_: &Path, e: io::Error) -> Skip {
        Skip::Unreadable(e)
    }

    pub(super) fn kind(m: &Metadata) -> &'static str {
        if m.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        }
    }

    pub(super) fn other_owner(_: &Metadata) -> Option<u32> {
        None
    }

    /// No inode numbers to compare: a name is taken as its file.
    pub(super) fn identity(_: &Metadata) -> (u64, u64) {
        (0, 0)
    }

    pub(super) fn links(_: &Metadata) -> u64 {
        1
    }

    #[allow(dead_code)] // no locks here: only `Unsupported` is made
    pub(super) enum Lock {
        Taken,
        Held,
        Unsupported,
    }

    pub(super) fn try_lock(_: &File) -> Lock {
        Lock::Unsupported
    }

    pub(super) fn is_held(_: &File) -> bool {
        false
    }

    pub(super) fn process_runs(_: i32) -> bool {
        true
    }
}
