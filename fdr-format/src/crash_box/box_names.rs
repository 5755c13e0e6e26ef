//! The names of what a crash box leaves on disk: the box itself, the log recovered from it, and
//! the files a process that died mid-write leaves behind.
//!
//! A box is named after its program and pid and a tag that tells processes with the same pid
//! apart (another PID namespace, a later boot, a later process, a later recording of the same
//! process): `fdr-app-1-3f09a1c2b4e5d687.box`. Names without the tag, which fdr gave boxes
//! before it had one, are still read. A recovered log is named after the log its process would
//! have written, with `recovered-PID` before `.fdr`, so that no later log of the same program
//! (the restarted process's own exit log) ever replaces it.

use std::path::{Path, PathBuf};

/// The box file's name for `program`'s process `pid`, with `tag` (see [`tag`]).
///
/// ```
/// use fdr_format::crash_box::file_name;
/// assert_eq!(file_name("app", 42, 0x3f09a1c2b4e5d687), "fdr-app-42-3f09a1c2b4e5d687.box");
/// ```
pub fn file_name(program: &str, pid: i32, tag: u64) -> String {
    format!("fdr-{}-{pid}-{tag:016x}.box", file_safe(program))
}

/// The tag of a box's name: a hash of what tells its process from every other with the same
/// pid (its PID namespace, the boot, the process's start, the recording's start), so that two
/// processes never share a box name, whether in two containers or one after the other.
///
/// ```
/// use fdr_format::crash_box::tag;
/// assert_ne!(tag(&[1, 2, 3]), tag(&[1, 2, 4]));
/// ```
pub fn tag(parts: &[u64]) -> u64 {
    // FNV-1a over the parts' bytes: stable across builds and platforms, which a name must be.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// A program name as it can stand in a file name: `/` and control characters become `_`.
///
/// ```
/// assert_eq!(fdr_format::crash_box::file_safe("a/b\nc"), "a_b_c");
/// ```
pub fn file_safe(program: &str) -> String {
    program
        .chars()
        .map(|c| if c == '/' || c.is_control() { '_' } else { c })
        .collect()
}

/// The pid in a box file's name, when it is one of `program`'s (`None` for `program`: any
/// program's). Both names fdr has given boxes are read: with a tag, and the older one without.
///
/// ```
/// use fdr_format::crash_box::pid_of;
/// assert_eq!(pid_of("fdr-app-42-3f09a1c2b4e5d687.box", Some("app")), Some(42));
/// assert_eq!(pid_of("fdr-app-42.box", Some("app")), Some(42));
/// assert_eq!(pid_of("fdr-app-42.box", Some("other")), None);
/// assert_eq!(pid_of("fdr-my-app-7-3f09a1c2b4e5d687.box", None), Some(7));
/// assert_eq!(pid_of(".fdr-app-42-3f09a1c2b4e5d687.box.new", None), None);
/// ```
pub fn pid_of(file: &str, program: Option<&str>) -> Option<i32> {
    let rest = file.strip_prefix("fdr-")?.strip_suffix(".box")?;
    let (before, last) = rest.rsplit_once('-')?;
    // A tag is exactly 16 hex digits; a pid is at most 10 decimal ones, so the two forms never
    // read as each other.
    let (name, pid) = if last.len() == 16 && last.bytes().all(|b| b.is_ascii_hexdigit()) {
        before.rsplit_once('-')?
    } else {
        (before, last)
    };
    if program.is_some_and(|p| file_safe(p) != name) {
        return None;
    }
    pid.parse().ok()
}

/// Where a box is laid out before it is renamed to `path`: a reader listing the directory never
/// finds a box half made.
///
/// ```
/// use std::path::Path;
/// let p = fdr_format::crash_box::laying_out_name(Path::new("/dev/shm/fdr-app-1-00000000000000ff.box"));
/// assert_eq!(p, Path::new("/dev/shm/.fdr-app-1-00000000000000ff.box.new"));
/// ```
pub fn laying_out_name(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(".new");
    path.with_file_name(name)
}

/// The name of the log recovered from the box of process `pid`, whose final log was to be `out`:
/// `recovered-PID` before the `.fdr` (added where `out` has another extension or none), and for
/// `n` above 1 (the name was taken), `-n` after it.
///
/// ```
/// use std::path::Path;
/// use fdr_format::crash_box::recovered_name;
/// assert_eq!(recovered_name(Path::new("/var/log/app.fdr"), 42, 1), Path::new("/var/log/app.recovered-42.fdr"));
/// assert_eq!(recovered_name(Path::new("app.fdr"), 42, 3), Path::new("app.recovered-42-3.fdr"));
/// assert_eq!(recovered_name(Path::new("trace.log"), 7, 1), Path::new("trace.log.recovered-7.fdr"));
/// ```
pub fn recovered_name(out: &Path, pid: i32, n: u32) -> PathBuf {
    let name = out.file_name().unwrap_or_default().to_string_lossy();
    let stem = name.strip_suffix(".fdr").unwrap_or(&name);
    let suffix = if n > 1 {
        format!("{pid}-{n}")
    } else {
        pid.to_string()
    };
    out.with_file_name(format!("{stem}.recovered-{suffix}.fdr"))
}

/// What a process that died mid-write leaves behind, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leftover {
    /// A box being laid out (`.fdr-*.box.new`).
    LayingOut,
    /// A log being written (`LOG.PID.N.tmp`) or recovered (`LOG.PID.recovered.tmp`) by process
    /// `pid`.
    Temporary {
        /// The writer.
        pid: i32,
    },
}

/// Whether `file` is named as something fdr leaves only while writing; for a temporary log,
/// only when its name starts with `prefix` (the log's own name: an unrelated `*.tmp` file is
/// never one).
///
/// ```
/// use fdr_format::crash_box::{leftover, Leftover};
/// assert_eq!(leftover(".fdr-app-7.box.new", ""), Some(Leftover::LayingOut));
/// assert_eq!(leftover("app.fdr.123.4.tmp", "app.fdr"), Some(Leftover::Temporary { pid: 123 }));
/// assert_eq!(leftover("app.fdr.123.recovered.tmp", "app"), Some(Leftover::Temporary { pid: 123 }));
/// assert_eq!(leftover("notes.123.4.tmp", "app"), None);
/// assert_eq!(leftover("application.fdr.123.4.tmp", "app"), None);
/// assert_eq!(leftover("app.fdr.x.4.tmp", "app"), None);
/// ```
pub fn leftover(file: &str, prefix: &str) -> Option<Leftover> {
    if file.starts_with(".fdr-") && file.ends_with(".box.new") {
        return Some(Leftover::LayingOut);
    }
    // The log's own name, whole: `app` is the start of `app.fdr...` and `app-3.fdr...`, not of
    // `application.fdr...`.
    let after = file.strip_prefix(prefix)?;
    let seps = ['.', '-', '_'];
    if prefix.is_empty() || !(after.starts_with(seps) || prefix.ends_with(seps)) {
        return None;
    }
    let rest = file.strip_suffix(".tmp")?;
    let (before, last) = rest.rsplit_once('.')?;
    let (_, pid) = before.rsplit_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !(last == "recovered" || digits(last)) || !digits(pid) {
        return None;
    }
    Some(Leftover::Temporary {
        pid: pid.parse().ok()?,
    })
}
