//! Child test processes: the way tests exercise what happens to a whole process (exit, fork,
//! crash, signals, `FDR_OPTIONS`). A test runs its own binary again with [`command`], asking for
//! one `#[ignore]`d test of that binary, the child's entry point, which does the process's part.
//!
//! An entry point is ignored so that a plain `cargo test` does not run it; run by hand
//! (`cargo test -- --include-ignored`, or by its name with `--ignored`) it would do its part
//! outside the test that checks it: hang in wait of a signal, crash, loop. So [`command`] sets
//! [`VAR`] in the child's environment, and every entry point starts with
//!
//! ```
//! # fn child_hangs() {
//! if !fdr_testkit::child::spawned() {
//!     return;
//! }
//! # }
//! ```
//!
//! which ends it at once, passing, when no parent test spawned it.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::logs::scratch;

/// The environment variable a parent test sets in its child's environment ([`command`] does):
/// a child entry point does its part only when it is set (see [`spawned`]). A child that starts
/// another process passes it on (an `exec` or a `fork` keeps the environment; a new
/// [`command`] sets it again).
pub const VAR: &str = "FDR_TEST_CHILD";

/// The calling test binary run again as a child process, to run only its `#[ignore]`d test
/// `test` (on one thread, its output not captured), with [`VAR`] set. `FDR_OPTIONS` is removed
/// from its environment and `RUST_BACKTRACE` is 0; `XDG_RUNTIME_DIR` is a fresh directory of
/// its own, where the default crash directory is, so that the child neither recovers a box
/// another child left nor starts with the functions another child culled. Set what the case
/// needs on the returned command.
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
    .env(VAR, "1")
    .env_remove("FDR_OPTIONS")
    .env("RUST_BACKTRACE", "0")
    .env("XDG_RUNTIME_DIR", runtime_dir());
    c
}

/// Whether a parent test spawned this process to run a child entry point ([`VAR`] is set). An
/// entry point that finds it is not says so on stderr (the test harness shows it with
/// `--nocapture`) and returns.
///
/// ```
/// // A doc test is nobody's child.
/// assert!(!fdr_testkit::child::spawned());
/// ```
pub fn spawned() -> bool {
    if std::env::var_os(VAR).is_some() {
        return true;
    }
    eprintln!("a child process of another test, which does its part only when that test spawns it ({VAR} unset): nothing to do");
    false
}

/// A directory of its own for each child of this process.
fn runtime_dir() -> PathBuf {
    static CHILDREN: AtomicU64 = AtomicU64::new(0);
    let n = CHILDREN.fetch_add(1, Ordering::Relaxed);
    scratch(&format!("child-{n}"))
}
