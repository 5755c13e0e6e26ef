//! At start, what earlier processes of this program left: each box whose process is gone
//! becomes a log beside the log that process would have written, under a name no later log of
//! the program replaces (said on stderr, one line); boxes half laid out and temporary logs of
//! writers that died go; of the boxes that cannot be recovered, past [`MAX_BOXES`] the oldest
//! go. A box is taken only through its lock ([`fdr_format::crash_box::claim`]), so two
//! processes starting at once recover it once, a running process's box is never touched
//! whatever PID namespace it runs in, and nothing in the directory that is not this user's
//! regular file is read.
//!
//! It runs on a thread of its own, started only when the directory holds something to look at,
//! so that the first call of a restarted program does not wait for it: a box of gigabytes takes
//! as long as what was written in it. The final log waits for it ([`wait`]), so that a short
//! program does not exit halfway through a recovery.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fdr_format::crash_box::{self as layout, Claimed, Leftover, Look, Skip, Status};

/// At most this many boxes of one program that could not be recovered are kept.
pub(crate) const MAX_BOXES: usize = 8;

/// How long the final log waits for a recovery still running: past it, the process goes and
/// the box stays for the next start (its lock goes with the process).
const WAIT: Duration = Duration::from_secs(10);

/// What a recovery looks at: `program`'s boxes in `dir`, and the temporary logs beside `out`.
pub(crate) struct Recovery {
    pub dir: PathBuf,
    pub program: String,
    pub out: PathBuf,
}

impl Recovery {
    /// The prefix of the names of `out`'s temporary files (its name, or the part of a template
    /// before its first placeholder).
    fn prefix(&self) -> String {
        let name = self.out.file_name().unwrap_or_default().to_string_lossy();
        let fixed = name.split('{').next().unwrap_or_default();
        fixed.strip_suffix(".fdr").unwrap_or(fixed).to_string()
    }

    fn out_dir(&self) -> PathBuf {
        self.out
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }

    /// Whether the crash directory holds anything to look at (names only: no file is opened;
    /// the log's directory, which may be large, is looked at by the recovery's own thread). A
    /// process that died writing a log left its box as well: the box is removed only once the
    /// final log is written.
    fn anything(&self) -> bool {
        std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .any(|n| {
                layout::pid_of(&n, Some(&self.program)).is_some()
                    || layout::leftover(&n, "") == Some(Leftover::LayingOut)
            })
    }

    /// Starts the recovery on a thread of its own, if there is anything to recover or clean.
    pub(crate) fn start(self) -> Option<JoinHandle<()>> {
        if !self.anything() {
            return None;
        }
        std::thread::Builder::new()
            .name("fdr-recover".into())
            .spawn(move || self.run())
            .ok()
    }

    fn run(&self) {
        #[cfg(any(feature = "testing", all(test, feature = "record")))]
        while HELD.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        layout::clean_leftovers(&self.dir, "");
        layout::clean_leftovers(&self.out_dir(), &self.prefix());
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut unrecoverable: Vec<(std::time::SystemTime, Claimed)> = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name();
            if name
                .to_str()
                .and_then(|n| layout::pid_of(n, Some(&self.program)))
                .is_none()
            {
                continue;
            }
            let path = e.path();
            let c = match layout::claim(&path) {
                Look::Claimed(c) => c,
                // A running process's, or gone meanwhile, or another user's (theirs to
                // recover, not ours to report at every start).
                Look::Held(_) | Look::Vanished | Look::Skipped(Skip::OtherUser(_)) => continue,
                Look::Skipped(why) => {
                    eprintln!("fdr: skipped {}: {why}", path.display());
                    continue;
                }
            };
            if let Err((why, c)) = recover_one(c) {
                eprintln!("fdr: could not recover {}: {why}", path.display());
                let when = c
                    .source()
                    .file()
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                unrecoverable.push((when, c));
            }
        }
        let n = unrecoverable.len();
        if n > MAX_BOXES {
            unrecoverable.sort_by_key(|(when, _)| *when);
            let removed = unrecoverable
                .drain(..n - MAX_BOXES)
                .map(|(_, c)| c.remove())
                .filter(|r| matches!(r, Ok(true)))
                .count();
            if removed > 0 {
                eprintln!(
                    "fdr: removed the {removed} oldest of {n} crash boxes of {} that could not \
                     be recovered (at most {MAX_BOXES} are kept)",
                    self.program
                );
            }
        }
    }
}

/// Recovers a claimed box whose process is gone (or replaced its program), writing its log and
/// removing it; leaves one whose process runs; removes one its process closed. `Err`: why it
/// could not be recovered, and the box, still claimed.
fn recover_one(c: Claimed) -> Result<(), (String, Claimed)> {
    let info = match c.info() {
        Ok(i) => i,
        Err(e) => return Err((e.to_string(), c)),
    };
    let exec = match c.status(&info) {
        Status::Closed => {
            let _ = c.remove();
            return Ok(());
        }
        Status::Alive | Status::Unknown(_) => return Ok(()),
        Status::Dead => false,
        Status::Exec => true,
    };
    let r = match layout::recover_from(c.source(), exec) {
        Ok(r) => r,
        Err(e) => return Err((e.to_string(), c)),
    };
    let out = match layout::write_recovered(&r.info.out, r.info.pid, &r.log) {
        Ok(p) => p,
        Err(e) => return Err((format!("{}: {e}", r.info.out.display()), c)),
    };
    let _ = c.remove();
    eprintln!(
        "fdr: recovered the window of process {} ({}) from its crash box: wrote {}",
        r.info.pid,
        r.info.death(),
        out.display()
    );
    Ok(())
}

/// Set by `testing::hold_recovery`: a recovery waits before it starts.
#[cfg(any(feature = "testing", all(test, feature = "record")))]
static HELD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// See [`HELD`].
#[cfg(any(feature = "testing", all(test, feature = "record")))]
pub(crate) fn hold(on: bool) {
    HELD.store(on, std::sync::atomic::Ordering::SeqCst);
}

/// Waits (at most [`WAIT`]) for a recovery started with the recording.
pub(crate) fn wait(handle: Option<JoinHandle<()>>) {
    let Some(h) = handle else {
        return;
    };
    let deadline = Instant::now() + WAIT;
    while !h.is_finished() {
        if Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = h.join();
}
