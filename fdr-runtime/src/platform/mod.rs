//! What the runtime asks of the operating system, one file per system, behind one set of
//! functions: the rest of the runtime names no system call and carries no `cfg` for the OS.
//!
//! | | Linux | macOS | elsewhere (Windows, the BSDs, ...) |
//! |---|---|---|---|
//! | records | yes | yes | no: `start` says so ([`UNSUPPORTED`]) |
//! | thread id | `gettid` | `pthread_threadid_np`, its low 32 bits | - |
//! | CPU number at each read | `sched_getcpu` (glibc reads rseq, else the `getcpu` call) | `pthread_cpu_number_np` (macOS 11 and later; else 0) | - |
//! | CPU number from rseq | glibc's area (`__rseq_offset`) | none | - |
//! | crash box file | `posix_fallocate` of its head and first buffers, the rest later (`reserve_range`), mapped; pages faulted in by the writer (`MADV_POPULATE_WRITE`) | `F_PREALLOCATE` of the whole file and `ftruncate`, then each page touched | - |
//! | crash and snapshot signals | `sigaction`, on the alternate stack | the same | - |
//! | waking the writer | `pipe2` | `pipe` and `fcntl` | none (the writer's timer) |
//! | the writer threads' priority | nice 10 for the thread | the utility QoS class | - |
//! | a thread's context switches (where a slow call's time went) | `perf_event_open` with `context_switch`, a ring read back at a slow call's end | none | - |
//!
//! Linux and macOS share the POSIX parts (`unix.rs`). Where recording is not supported the
//! functions exist all the same and do nothing, so every hook compiles and costs what it costs
//! with no recorder running; nothing of them runs, since `start` refuses first. Building with
//! `--cfg fdr_unsupported` takes any system for one of those, so that the runtime's
//! `tests/unsupported.rs` checks that path where CI runs (Linux).

pub(crate) mod clock;
pub(crate) mod host;
pub(crate) mod wakeup;

#[cfg(all(any(target_os = "linux", target_os = "macos"), not(fdr_unsupported)))]
mod unix;
#[cfg(all(any(target_os = "linux", target_os = "macos"), not(fdr_unsupported)))]
pub(crate) use unix::*;

#[cfg(all(target_os = "linux", not(fdr_unsupported)))]
#[path = "linux.rs"]
mod os;
#[cfg(all(target_os = "macos", not(fdr_unsupported)))]
#[path = "macos.rs"]
mod os;
#[cfg(any(not(any(target_os = "linux", target_os = "macos")), fdr_unsupported))]
#[path = "unsupported.rs"]
mod os;

pub(crate) use os::*;

pub(crate) mod switch_tally;
/// The calling thread's context switches, where the kernel records them for it (Linux).
#[cfg(all(target_os = "linux", not(fdr_unsupported)))]
#[path = "switches_linux.rs"]
pub(crate) mod switches;
/// The calling thread's context switches, where the kernel records them for it (Linux).
#[cfg(not(all(target_os = "linux", not(fdr_unsupported))))]
#[path = "switches_none.rs"]
pub(crate) mod switches;

/// Whether this target records, and if not, what `start` answers: the platform's name.
#[cfg(all(any(target_os = "linux", target_os = "macos"), not(fdr_unsupported)))]
pub(crate) const UNSUPPORTED: Option<&str> = None;
/// Whether this target records, and if not, what `start` answers: the platform's name.
#[cfg(any(not(any(target_os = "linux", target_os = "macos")), fdr_unsupported))]
pub(crate) const UNSUPPORTED: Option<&str> = Some(std::env::consts::OS);
