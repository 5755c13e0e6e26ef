//! Targets fdr does not record on yet (Windows, the BSDs, ...): the same functions, inert, so
//! that every hook and the whole engine compile. `start` refuses before any of them could be
//! asked for something real; the values here are what a caller gets if one is reached anyway.

use std::ffi::c_void;
use std::io;
use std::path::Path;

pub(crate) fn pid() -> i32 {
    std::process::id() as i32
}

pub(crate) fn thread_id() -> i32 {
    0
}

pub(crate) fn is_main_thread() -> bool {
    false
}

pub(crate) fn thread_name() -> [u8; 16] {
    [0; 16]
}

/// Nanoseconds since an arbitrary instant of this process (the first call).
pub(crate) fn monotonic_ns() -> u64 {
    static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    BASE.get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

/// No CPU time where nothing records.
pub(crate) fn process_cpu_ns() -> u64 {
    0
}

/// No CPU time where nothing records.
pub(crate) fn thread_cpu_ns() -> u64 {
    0
}

pub(crate) fn wall_time() -> (i64, u32) {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() as i64, d.subsec_nanos())
}

pub(crate) fn cpu_number() -> u32 {
    0
}

pub(crate) fn rseq_cpu_offset() -> Option<isize> {
    None
}

pub(crate) const NO_RSEQ: &str = "this system has no restartable sequences";

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // asked by the x86_64 clock only
pub(crate) const TSC_AUX_IS_CPU: bool = false;

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // asked by the x86_64 clock only
pub(crate) fn kernel_trusts_tsc() -> Option<bool> {
    Some(false)
}

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // asked by the x86_64 clock only
pub(crate) fn cpu_flags_say_tsc_invariant() -> bool {
    false
}

#[cfg_attr(not(feature = "otlp"), allow(dead_code))] // the OTLP sender's thread only
pub(crate) fn lower_thread_priority() {}

pub(crate) fn at_exit(_: extern "C" fn()) -> bool {
    false
}

pub(crate) fn at_fork_child(_: extern "C" fn()) -> bool {
    false
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct ThreadExitKey;

impl ThreadExitKey {
    pub(crate) fn new(_: extern "C" fn(*mut c_void)) -> Option<ThreadExitKey> {
        None
    }

    pub(crate) fn arm(self) {}
}

pub(crate) fn map_anonymous(_: usize) -> Option<*mut u8> {
    None
}

/// # Safety
/// Nothing is ever mapped here.
pub(crate) unsafe fn unmap(_: *mut u8, _: usize) {}

/// # Safety
/// Nothing is ever mapped here.
pub(crate) unsafe fn replace_with_zeros(_: *mut u8, _: usize) {}

#[derive(Debug)]
pub(crate) struct SharedFile {
    pub base: *mut u8,
    pub fd: i32,
    pub locked: bool,
}

pub(crate) fn map_shared_file(_: &Path, _: usize, _: usize) -> io::Result<SharedFile> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no crash box on this platform",
    ))
}

pub(crate) fn unlink_if_same(_: &Path, _: i32) -> io::Result<()> {
    Ok(())
}

pub(crate) fn lock_while_open(_: &std::fs::File) {}

pub(crate) fn parent_pid() -> i32 {
    0
}

pub(crate) fn reserve_range(_: i32, _: usize, _: usize) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no crash box on this platform",
    ))
}

pub(crate) fn pipe() -> Option<(i32, i32)> {
    None
}

pub(crate) fn wait_and_drain(_: i32, timeout_ms: i32) {
    std::thread::sleep(std::time::Duration::from_millis(
        timeout_ms.clamp(1, 100) as u64
    ));
}

pub(crate) fn poke(_: i32) {}

pub(crate) fn close(_: i32) {}

pub(crate) const SIGUSR1: i32 = 10;
pub(crate) const SIGUSR2: i32 = 12;
pub(crate) const SIGSEGV: i32 = 11;
pub(crate) const SIGBUS: i32 = 7;

pub(crate) fn handler_is_default_or(_: i32, _: extern "C" fn(i32)) -> bool {
    true
}

pub(crate) fn set_handler(_: i32, _: extern "C" fn(i32)) {}

pub(crate) fn reset_handler(_: i32) {}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Crash {
    pub signal: i32,
    pub code: i32,
    pub addr: u64,
    pub sp: u64,
    pub nested: bool,
}

#[derive(Clone, Copy, Debug)]
#[allow(dead_code)] // never made: no signals here
pub(crate) enum SignalEvent {
    Dying(Crash),
    Survived(i32),
    Handled(i32),
}

pub(crate) fn watch_signals(_: fn(SignalEvent), _: fn()) {}

pub(crate) fn cpu_per_read_note() -> String {
    NO_RSEQ.to_string()
}

#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))] // asked by the aarch64 clock only
pub(crate) fn stated_counter_rate(_: fn() -> u64) -> Option<u64> {
    None
}

pub(crate) fn run_delay_ns(_: i32) -> Option<u64> {
    None
}

/// The running program's build id: none is read here (the culls a run learned are then kept
/// under the program file's size and modification time, see `session::learned_culls`).
pub(crate) fn build_id() -> Option<Vec<u8>> {
    None
}

/// Nothing is mapped here: recording never starts.
pub(crate) fn prefault(_: *mut u8, _: usize) -> bool {
    false
}
