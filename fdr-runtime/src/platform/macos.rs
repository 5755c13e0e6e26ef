//! macOS (Apple Silicon and Intel): what differs from Linux.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The calling thread's id: the low 32 bits of the system-wide 64-bit id `pthread_threadid_np`
/// gives (the one Instruments and `sample` show), as logs carry 32-bit thread ids.
/// Async-signal-safe (the C library reads its own copy of the id).
pub(crate) fn thread_id() -> i32 {
    let mut id = 0u64;
    // SAFETY: a null thread means the calling one; `id` is a valid place for the answer.
    unsafe { libc::pthread_threadid_np(0, &mut id) };
    id as i32
}

/// Whether the calling thread is the process's main thread.
pub(crate) fn is_main_thread() -> bool {
    // SAFETY: takes no arguments and only answers.
    unsafe { libc::pthread_main_np() == 1 }
}

type CpuNumberFn = unsafe extern "C" fn(*mut libc::size_t) -> libc::c_int;

/// `pthread_cpu_number_np` (macOS 11 and later) as an address: 0 not looked up yet, 1 absent.
static CPU_NUMBER: AtomicUsize = AtomicUsize::new(0);

fn cpu_number_fn() -> Option<CpuNumberFn> {
    let mut f = CPU_NUMBER.load(Ordering::Relaxed);
    if f == 0 {
        // Looked up rather than linked: Intel Macs before macOS 11 run programs built for
        // 10.12 and have no such function, and the program must still load there.
        // SAFETY: dlsym only looks a name up; the name is a NUL-terminated literal.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"pthread_cpu_number_np".as_ptr()) };
        f = if p.is_null() { 1 } else { p as usize };
        CPU_NUMBER.store(f, Ordering::Relaxed);
    }
    // SAFETY: any value above 1 is the address dlsym gave for `pthread_cpu_number_np`, whose
    // C signature is `int (size_t *)`.
    (f > 1).then(|| unsafe { std::mem::transmute::<usize, CpuNumberFn>(f) })
}

/// The CPU the calling thread runs on now, as the system tells it (`pthread_cpu_number_np`,
/// which reads the number the kernel leaves in a thread register); 0 where the system is older
/// than macOS 11 and tells none.
pub(crate) fn cpu_number() -> u32 {
    let Some(f) = cpu_number_fn() else {
        return 0;
    };
    let mut cpu: libc::size_t = 0;
    // SAFETY: `cpu` is a valid place for the answer.
    unsafe { f(&mut cpu) };
    cpu as u32
}

/// Whether the system tells CPU numbers at all (else every record says CPU 0).
pub(crate) fn tells_cpu_numbers() -> bool {
    cpu_number_fn().is_some()
}

/// macOS has no restartable sequences.
pub(crate) fn rseq_cpu_offset() -> Option<isize> {
    None
}

/// Why no rseq area is there to read the CPU number from, for messages.
pub(crate) const NO_RSEQ: &str = "macOS has no restartable sequences, so no per-thread area the \
     kernel keeps the CPU number in";

/// What macOS leaves in `rdtscp`'s TSC_AUX is not documented as the CPU number: it is asked of
/// the system instead.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // asked by the x86_64 clock only
pub(crate) const TSC_AUX_IS_CPU: bool = false;

/// The kernel gives no verdict on the counter that a program can read; CPUID decides.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // asked by the x86_64 clock only
pub(crate) fn kernel_trusts_tsc() -> Option<bool> {
    None
}

/// No `/proc/cpuinfo` flags to read.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // asked by the x86_64 clock only
pub(crate) fn cpu_flags_say_tsc_invariant() -> bool {
    false
}

/// QoS classes of `pthread/qos.h`.
const QOS_CLASS_UTILITY: u32 = 0x11;
extern "C" {
    fn pthread_set_qos_class_self_np(class: u32, relative_priority: libc::c_int) -> libc::c_int;
}

/// Gives the calling thread the utility QoS class (macOS's way to say "after the program's
/// own work"; a nice value would apply to the whole process). Best effort.
#[cfg_attr(not(feature = "otlp"), allow(dead_code))] // the OTLP sender's thread only
pub(crate) fn lower_thread_priority() {
    // SAFETY: changes only the calling thread's QoS class; the class is a defined value.
    unsafe { pthread_set_qos_class_self_np(QOS_CLASS_UTILITY, 0) };
}

/// This thread's `errno`.
pub(super) fn errno() -> *mut i32 {
    // SAFETY: returns the calling thread's errno location; no other effect.
    unsafe { libc::__error() }
}

/// The interrupted thread's stack pointer is not read on macOS: a stack overflow is told by
/// Rust's runtime aborting from its fault handler instead.
pub(super) fn stack_pointer(_: *mut std::ffi::c_void) -> u64 {
    0
}

/// `sys/signal.h`'s codes of signals a process sent (SI_USER through SI_MESGQ).
const SI_USER: i32 = 0x10001;
const SI_MESGQ: i32 = 0x10005;

/// Whether a signal's `si_code` says another process (or `raise`, `abort`) sent it, rather
/// than the CPU raising it.
pub(super) fn sent_by_a_process(code: i32) -> bool {
    (SI_USER..=SI_MESGQ).contains(&code) || code == 0
}

/// A pipe whose ends do not block and are closed at `exec`: (read, write); `None` if the
/// system has no descriptors left.
pub(crate) fn pipe() -> Option<(i32, i32)> {
    let mut fds = [-1; 2];
    // SAFETY: `fds` is a valid array of two descriptors for pipe to fill.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return None;
    }
    for fd in fds {
        // SAFETY: `fd` is one of the pipe's ends, just made; the flags are plain values. (A
        // program that forks and execs on another thread meanwhile may hand its child these
        // ends, which it never uses: macOS has no `pipe2` to close that gap.)
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK);
        }
    }
    Some((fds[0], fds[1]))
}

/// Reserves storage for all `len` bytes of the new, empty file `fd` (macOS reserves from the end
/// of what is allocated, not a range: the whole file at once, whatever `_first` asks), then sets
/// its length: after this, stores into a shared mapping of it cannot fail for want of room.
pub(super) fn reserve(fd: i32, len: usize, _first: usize) -> io::Result<()> {
    let mut store = libc::fstore_t {
        fst_flags: libc::F_ALLOCATEALL,
        fst_posmode: libc::F_PEOFPOSMODE,
        fst_offset: 0,
        fst_length: len as libc::off_t,
        fst_bytesalloc: 0,
    };
    // SAFETY: `fd` is an open file; `store` is a valid fstore_t for F_PREALLOCATE to read and
    // update.
    if unsafe { libc::fcntl(fd, libc::F_PREALLOCATE, &mut store) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is an open file; the length is a plain number.
    if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Nothing to do: [`reserve`] reserved the whole file.
pub(crate) fn reserve_range(_: i32, _: usize, _: usize) -> io::Result<()> {
    Ok(())
}

/// macOS has no `MAP_POPULATE`: [`populate`] touches the pages instead.
pub(super) const MAP_POPULATE: i32 = 0;

/// Writes a zero into every page of the new mapping at `p`, so that the recording path's
/// stores never page-fault.
pub(super) fn populate(p: *mut u8, len: usize) {
    let page = 4096;
    for at in (0..len).step_by(page) {
        // SAFETY: `at` is inside the `len` bytes mapped writable at `p`, which nothing else uses
        // yet; the file's bytes are zeros already.
        unsafe { std::ptr::write_volatile(p.add(at), 0) };
    }
}

/// macOS has no way to fault pages in without touching them: the caller reads each page.
pub(crate) fn prefault(_: *mut u8, _: usize) -> bool {
    false
}

/// Said once at start, as records take the CPU number of each read: why, and what it costs.
pub(crate) fn cpu_per_read_note() -> String {
    if tells_cpu_numbers() {
        format!("{NO_RSEQ}: each record asks the system for its CPU number (pthread_cpu_number_np)")
    } else {
        format!(
            "{NO_RSEQ}, and this macOS (older than 11) tells programs no CPU numbers: every \
             record says CPU 0"
        )
    }
}

/// The rate of the CPU's counter as stated: the system's timebase (`hw.tbfrequency`, the rate
/// of `mach_absolute_time`, which is `CNTVCT_EL0`'s on Apple Silicon). The register itself
/// (`read_register`) is not read: macOS does not document it as readable by programs.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))] // asked by the aarch64 clock only
pub(crate) fn stated_counter_rate(_read_register: fn() -> u64) -> Option<u64> {
    let mut hz = 0u64;
    let mut len = std::mem::size_of::<u64>();
    // SAFETY: the name is NUL-terminated; `hz` and `len` describe a writable u64, which sysctl
    // fills with at most `len` bytes; no new value is set.
    let rc = unsafe {
        libc::sysctlbyname(
            c"hw.tbfrequency".as_ptr(),
            (&mut hz as *mut u64).cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    (rc == 0 && len == std::mem::size_of::<u64>() && hz != 0).then_some(hz)
}

/// How long thread `tid` has waited for a CPU while runnable: macOS does not say (its
/// scheduler statistics are the whole task's, not a thread's).
pub(crate) fn run_delay_ns(_tid: i32) -> Option<u64> {
    None
}

/// The running program's build id: none is read here (the culls a run learned are then kept
/// under the program file's size and modification time, see `session::learned_culls`).
pub(crate) fn build_id() -> Option<Vec<u8>> {
    None
}
