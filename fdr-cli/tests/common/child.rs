//! Runs the built `fdr` binary as a child process and reads its peak memory from the kernel.
//!
//! Each run waits for its own child with `wait4`, which returns that child's resource usage, so
//! the figure is exact however many tests run at once in the process. The child gets an address
//! space limit ([`AS_LIMIT`]): a regression that allocates without bound fails its test with an
//! allocation error instead of taking the machine's memory; and a CPU-time limit
//! ([`CPU_LIMIT_S`]) so that a hang ends the test (a guard, not a timing assertion: the
//! commands under test take a small fraction of it).

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

/// Address space the child may map.
pub const AS_LIMIT: u64 = 3 << 30;
/// CPU seconds the child may use.
pub const CPU_LIMIT_S: u64 = 300;

/// What one run of `fdr` did.
#[derive(Debug)]
pub struct Run {
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// What it printed on standard output.
    pub stdout: Vec<u8>,
    /// What it printed on standard error.
    pub stderr: String,
    /// Peak resident set size, in bytes.
    pub peak_rss: u64,
}

impl Run {
    /// Standard output as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Panics with everything known unless the run exited with 0.
    pub fn assert_ok(&self, what: &str) {
        assert!(
            self.code == Some(0),
            "{what}: exit {:?}, signal {:?}, peak {} MB, stderr: {}",
            self.code,
            self.signal,
            self.peak_rss >> 20,
            self.stderr
        );
    }
}

fn set_limit(resource: libc::__rlimit_resource_t, value: u64) -> std::io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: `lim` is a valid rlimit that outlives the call; setrlimit only reads it.
    if unsafe { libc::setrlimit(resource, &lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Runs `fdr` with `args` in `dir` (standard output and error go to files there), waits for it
/// and returns what it did and its peak memory.
pub fn run_fdr<S: AsRef<OsStr>>(args: &[S], dir: &Path) -> Run {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let out_path = dir.join(format!("child-{n}.stdout"));
    let err_path = dir.join(format!("child-{n}.stderr"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fdr"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).expect("create the stdout file"))
        .stderr(File::create(&err_path).expect("create the stderr file"));
    // SAFETY: the closure runs in the child between fork and exec; it only calls setrlimit,
    // which is async-signal-safe, and allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            set_limit(libc::RLIMIT_AS, AS_LIMIT)?;
            set_limit(libc::RLIMIT_CPU, CPU_LIMIT_S)
        });
    }
    let child = cmd.spawn().expect("start fdr");
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our child, not waited for yet (`child` is never waited on);
        // `status` and `usage` are valid for writes for the duration of the call.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "wait4: {e}");
    }
    drop(child);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let signal = libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status));
    let stdout = std::fs::read(&out_path).expect("read stdout");
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    Run {
        code,
        signal,
        stdout,
        stderr,
        // Linux reports kilobytes.
        peak_rss: usage.ru_maxrss as u64 * 1024,
    }
}
