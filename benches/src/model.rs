//! A reference model of the hot path the design contract (`../shared/DESIGN.md`, kept beside this
//! repository, not in it) describes, to tell what the machine allows from
//! what fdr's code costs: a global on/off gate, one thread-local access, one timestamp read, a
//! bounds check and one 8-byte store per record, with no rewind, no snapshot protocol and no
//! format beyond the word.
//!
//! It is not a recorder anyone should use (it has no way to get its data out); its rows in the
//! quick table are the yardstick for fdr's rows, measured in the same run.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::floor::{rdtsc, rdtscp_cpu};
use crate::workload::body;

/// Words in the model's per-thread ring: 8 MiB, like fdr's default pool.
const WORDS: u32 = 1 << 20;

/// The CPU number read where the kernel does not publish one.
static NO_CPU_ID: u32 = 0;

/// Whether the model records; off, every hook returns after one load and branch.
static ON: AtomicBool = AtomicBool::new(false);

struct Local {
    data: *mut u64,
    /// Where the kernel keeps this thread's CPU number (rseq), for the `rdtsc` variant.
    cpu_id: *const u32,
    len: u32,
    /// 0 while the thread has no ring, so the one bounds check also catches that case.
    limit: u32,
    cpu: u32,
    last_tsc: u64,
}

thread_local! {
    static LOCAL: UnsafeCell<Local> = const {
        UnsafeCell::new(Local {
            data: std::ptr::null_mut(),
            cpu_id: &NO_CPU_ID,
            len: 0,
            limit: 0,
            cpu: u32::MAX,
            last_tsc: 0,
        })
    };
}

/// Turns the model on or off for every thread.
///
/// ```
/// fdr_benches::model::set_recording(true);
/// assert_eq!(fdr_benches::model::run_rdtscp(3), fdr_benches::workload::run_plain(3));
/// fdr_benches::model::set_recording(false);
/// ```
pub fn set_recording(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Allocates the thread's ring, or wraps it when full.
#[cold]
#[inline(never)]
fn refill(l: &mut Local) {
    if l.data.is_null() {
        l.data = Box::into_raw(vec![0u64; WORDS as usize].into_boxed_slice()).cast::<u64>();
        l.cpu_id = rseq_cpu_id();
    }
    l.len = 0;
    l.limit = WORDS;
}

/// The address of the calling thread's CPU number in its rseq area, which glibc 2.35 and later
/// register for every thread and the kernel keeps current: the CPU without `rdtscp`.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn rseq_cpu_id() -> *const u32 {
    use std::sync::OnceLock;
    static OFFSET: OnceLock<Option<isize>> = OnceLock::new();
    let offset = *OFFSET.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks a symbol up.
        let (offset, size) = unsafe {
            (
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()),
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()),
            )
        };
        if offset.is_null() || size.is_null() {
            return None;
        }
        // SAFETY: glibc defines both as `const ptrdiff_t __rseq_offset` and
        // `const unsigned int __rseq_size`, set before `main`.
        let (offset, size) = unsafe { (*offset.cast::<isize>(), *size.cast::<u32>()) };
        // A size of 0 means rseq is not registered (disabled by a tunable, or an old kernel).
        (size >= 8).then_some(offset)
    });
    let Some(offset) = offset else {
        return &NO_CPU_ID;
    };
    let tp: usize;
    // SAFETY: on x86_64 Linux the word at fs:0 is the thread pointer (the TCB points at itself).
    unsafe {
        core::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags))
    };
    // `struct rseq` starts with `u32 cpu_id_start`, then `u32 cpu_id`.
    (tp as isize + offset + 4) as *const u32
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn rseq_cpu_id() -> *const u32 {
    &NO_CPU_ID
}

/// Where fdr writes a NewCPUId or TSCWrap record; the model only notes the CPU.
#[cold]
#[inline(never)]
fn resync(l: &mut Local, cpu: u32) {
    l.cpu = cpu;
}

/// Writes one record: `word` in the low half, the timestamp delta in the high half.
#[inline(always)]
fn record(word: u32, clock: fn(&Local) -> (u64, u32)) {
    // The gate: one load of a global and a branch, all a program pays while nothing records.
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    LOCAL.with(|cell| {
        // SAFETY: `LOCAL` is this thread's own and nothing else borrows it while a record is
        // written (the model is never called from a signal handler).
        let l = unsafe { &mut *cell.get() };
        if l.len >= l.limit {
            refill(l);
        }
        let (tsc, cpu) = clock(l);
        let delta = tsc.wrapping_sub(l.last_tsc);
        if cpu != l.cpu || delta > u64::from(u32::MAX) {
            resync(l, cpu);
        }
        l.last_tsc = tsc;
        // SAFETY: `len < limit == WORDS`, the length of the ring `data` points at.
        unsafe { *l.data.add(l.len as usize) = u64::from(word) | (delta << 32) };
        l.len += 1;
    })
}

#[inline(always)]
fn clock_rdtscp(_: &Local) -> (u64, u32) {
    rdtscp_cpu()
}

/// `rdtsc` gives no CPU number: read the one the kernel keeps in the thread's rseq area.
#[inline(always)]
fn clock_rdtsc(l: &Local) -> (u64, u32) {
    // SAFETY: `cpu_id` points at this thread's rseq area, which lives as long as the thread, or
    // at `NO_CPU_ID`. The kernel updates it behind the compiler's back, hence the volatile read.
    (rdtsc(), unsafe { std::ptr::read_volatile(l.cpu_id) })
}

/// The leaf, recorded by the model with `rdtscp`.
#[inline(never)]
pub fn leaf_rdtscp(x: u64) -> u64 {
    record(0x10, clock_rdtscp);
    let r = body(x);
    record(0x12, clock_rdtscp);
    r
}

/// The leaf, recorded by the model with `rdtsc` and the CPU number from rseq.
#[inline(never)]
pub fn leaf_rdtsc(x: u64) -> u64 {
    record(0x10, clock_rdtsc);
    let r = body(x);
    record(0x12, clock_rdtsc);
    r
}

/// `n` calls of [`leaf_rdtscp`].
#[inline(never)]
pub fn run_rdtscp(n: u64) -> u64 {
    crate::workload::drive(n, leaf_rdtscp)
}

/// `n` calls of [`leaf_rdtsc`].
///
/// ```
/// use fdr_benches::{model, timing, workload};
/// model::set_recording(true);
/// assert_eq!(model::run_rdtsc(3), workload::run_plain(3));
/// // Pinned, the thread cannot move between the record and the check.
/// if timing::pin_to_cpu(0).is_ok() && cfg!(target_os = "linux") {
///     model::run_rdtsc(3);
///     assert!(matches!(model::last_cpu(), Some(0)) || !model::knows_cpu());
/// }
/// model::set_recording(false);
/// ```
#[inline(never)]
pub fn run_rdtsc(n: u64) -> u64 {
    crate::workload::drive(n, leaf_rdtsc)
}

/// Whether this thread's `rdtsc` records carry a real CPU number (its rseq area is known).
pub fn knows_cpu() -> bool {
    // SAFETY: as in `record`; only this thread touches its `Local`.
    LOCAL.with(|cell| unsafe { !std::ptr::eq((*cell.get()).cpu_id, &NO_CPU_ID) })
}

/// The CPU number of this thread's last record (`None` before its first).
pub fn last_cpu() -> Option<u32> {
    LOCAL.with(|cell| {
        // SAFETY: as in `record`; only this thread touches its `Local`.
        let l = unsafe { &*cell.get() };
        (l.cpu != u32::MAX).then_some(l.cpu)
    })
}
