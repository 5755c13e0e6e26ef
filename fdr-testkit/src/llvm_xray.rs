//! LLVM's `llvm-xray`, the reference reader of XRay flight-data-recorder logs, which the interop
//! tests hold fdr's logs to. It is found on `PATH` as `llvm-xray-19` (Debian's package `llvm-19`
//! installs it under that name; `scripts/test` installs the package when the command is
//! missing), else as `llvm-xray`. A test that needs it fails when neither is there: a missing
//! tool is said, never taken for a pass.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The names looked for, in order.
const NAMES: [&str; 2] = ["llvm-xray-19", "llvm-xray"];

/// The path of `llvm-xray-19`, else `llvm-xray`, on `PATH`. Panics, saying what to install,
/// when neither is there.
///
/// ```
/// assert!(fdr_testkit::llvm_xray::path().is_file());
/// ```
pub fn path() -> PathBuf {
    locate(std::env::var_os("PATH").as_deref())
}

/// A command running [`path`]; the caller adds the arguments.
///
/// ```no_run
/// let out = fdr_testkit::llvm_xray::command()
///     .args(["account", "-k", "app.fdr"])
///     .output()
///     .unwrap();
/// assert!(out.status.success());
/// ```
pub fn command() -> Command {
    Command::new(path())
}

/// `llvm-xray fdr-dump --verify` accepts the log at `log`: returns what it printed (each record
/// as it read it); panics with what it said otherwise.
///
/// ```no_run
/// let dump = fdr_testkit::llvm_xray::verify(std::path::Path::new("app.fdr"));
/// assert!(dump.contains("Function Enter"));
/// ```
pub fn verify(log: &Path) -> String {
    let tool = path();
    let out = Command::new(&tool)
        .args(["fdr-dump", "--verify"])
        .arg(log)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", tool.display()));
    assert!(
        out.status.success(),
        "{} rejects {}: {}",
        tool.display(),
        log.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The first of [`NAMES`] found in the directories of `path_var` (a `PATH` value); a panic
/// that says what is missing and how to install it when none is.
fn locate(path_var: Option<&OsStr>) -> PathBuf {
    let dirs: Vec<PathBuf> = path_var
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    for name in NAMES {
        for dir in &dirs {
            let candidate = dir.join(name);
            if is_executable(&candidate) {
                return candidate;
            }
        }
    }
    panic!(
        "llvm-xray is missing: neither {} is on PATH. It comes with LLVM 19: on Debian or \
         Ubuntu `apt-get install llvm-19` (scripts/test installs it when it is missing)",
        NAMES.join(" nor ")
    );
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory holding an executable file named `name` (none: empty).
    fn dir_with(tag: &str, name: Option<&str>) -> PathBuf {
        let dir = crate::logs::scratch(&format!("llvm-xray-{tag}"));
        if let Some(name) = name {
            let p = dir.join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        dir
    }

    fn path_of(dirs: &[&Path]) -> std::ffi::OsString {
        std::env::join_paths(dirs).unwrap()
    }

    #[test]
    fn the_versioned_name_comes_first_in_any_directory() {
        let plain = dir_with("first-plain", Some("llvm-xray"));
        let versioned = dir_with("first-versioned", Some("llvm-xray-19"));
        let found = locate(Some(&path_of(&[&plain, &versioned])));
        assert_eq!(found, versioned.join("llvm-xray-19"));
    }

    #[test]
    fn the_plain_name_does_when_the_versioned_one_is_missing() {
        let empty = dir_with("plain-empty", None);
        let plain = dir_with("plain-plain", Some("llvm-xray"));
        let found = locate(Some(&path_of(&[&empty, &plain])));
        assert_eq!(found, plain.join("llvm-xray"));
    }

    #[cfg(unix)]
    #[test]
    fn a_file_that_cannot_run_is_not_the_tool() {
        let dir = dir_with("not-executable", None);
        std::fs::write(dir.join("llvm-xray-19"), "").unwrap();
        let result = std::panic::catch_unwind(|| locate(Some(&path_of(&[&dir]))));
        assert!(result.is_err());
    }

    #[test]
    #[should_panic(
        expected = "neither llvm-xray-19 nor llvm-xray is on PATH. It comes with \
                               LLVM 19: on Debian or Ubuntu `apt-get install llvm-19`"
    )]
    fn a_missing_tool_is_a_failure_that_says_what_to_install() {
        let empty = dir_with("missing", None);
        locate(Some(&path_of(&[&empty])));
    }

    #[test]
    #[should_panic(expected = "llvm-xray is missing")]
    fn no_path_at_all_is_a_missing_tool_too() {
        locate(None);
    }
}
