//! Child test processes: the way tests exercise what happens to a whole process (exit, fork,
//! crash, signals, `FDR_OPTIONS`). A test runs its own binary again with [`command`], asking for
//! one `#[ignore]`d test of that binary, the child's entry point, which does the process's part.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::logs::scratch;

/// The calling test binary run again as a child process, to run only its `#[ignore]`d test
/// `test` (on one thread, its output not captured). `FDR_OPTIONS` is removed from its
/// environment and `RUST_BACKTRACE` is 0; `XDG_RUNTIME_DIR` is a fresh directory of its own,
/// where the default crash directory is, so that the child neither recovers a box another child
/// left nor starts with the functions another child culled. Set what the case needs on the
/// returned command.
///
/// ```no_run
/// let out = fdr_testkit::child::command("child_exits")
///     .env("FDR_OPTIONS", "threshold_us=0")
///     .output()
///     .unwrap();
/// assert!(out.status.success());
/// ```
pub fn command(test: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env_remove("FDR_OPTIONS")
    .env("RUST_BACKTRACE", "0")
    .env("XDG_RUNTIME_DIR", runtime_dir());
    c
}

/// A directory of its own for each child of this process.
fn runtime_dir() -> PathBuf {
    static CHILDREN: AtomicU64 = AtomicU64::new(0);
    let n = CHILDREN.fetch_add(1, Ordering::Relaxed);
    scratch(&format!("child-{n}"))
}
