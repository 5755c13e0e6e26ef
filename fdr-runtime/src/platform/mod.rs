//! What the runtime asks of the operating system, one file per system, behind one set of
//! functions: the rest of the runtime names no system call and carries no `cfg` for the OS.
//!
//! | | Linux | macOS | elsewhere (Windows, the BSDs, ...) |
//! |---|---|---|---|
//! | records | yes | yes | no: `start` says so ([`UNSUPPORTED`]) |
//! | thread id | `gettid` | `pthread_threadid_np`, its low 32 bits | - |
//! | CPU number at each read | `sched_getcpu` (glibc reads rseq, else the `getcpu` call) | `pthread_cpu_number_np` (macOS 11 and later; else 0) | - |
//! | CPU number from rseq | glibc's area (`__rseq_offset`) | none | - |
//! | crash box file | `posix_fallocate`, then mapped with `MAP_POPULATE` | `F_PREALLOCATE` and `ftruncate`, then each page touched | - |
//! | crash and snapshot signals | `sigaction`, on the alternate stack | the same | - |
//! | waking the writer | `pipe2` | `pipe` and `fcntl` | none (the writer's timer) |
//! | the writer threads' priority | nice 10 for the thread | the utility QoS class | - |
//!
//! Linux and macOS share the POSIX parts (`unix.rs`). Where recording is not supported the
//! functions exist all the same and do nothing, so every hook compiles and costs what it costs
//! with no recorder running; nothing of them runs, since `start` refuses first.

#[cfg(any(target_os = "linux", target_os = "macos"))]
mod unix;
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(crate) use unix::*;

#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod os;
#[cfg(target_os = "macos")]
#[path = "macos.rs"]
mod os;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
#[path = "unsupported.rs"]
mod os;

pub(crate) use os::*;

/// Whether this target records, and if not, what `start` answers: the platform's name.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(crate) const UNSUPPORTED: Option<&str> = None;
/// Whether this target records, and if not, what `start` answers: the platform's name.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(crate) const UNSUPPORTED: Option<&str> = Some(std::env::consts::OS);
