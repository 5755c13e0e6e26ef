//! Linux (glibc or musl, any CPU): what differs from macOS.

use std::io;

/// The calling thread's id: the kernel's, as `ps -L` and `/proc/PID/task` show it.
/// Async-signal-safe.
pub(crate) fn thread_id() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Whether the calling thread is the process's main thread (whose id is the process id).
pub(crate) fn is_main_thread() -> bool {
    thread_id() == super::pid()
}

/// The CPU the calling thread runs on now, asked of the system: glibc reads it from the
/// thread's rseq area where it registered one, else makes the `getcpu` system call (x86_64
/// answers that from the vDSO, aarch64 enters the kernel).
pub(crate) fn cpu_number() -> u32 {
    // SAFETY: sched_getcpu takes no arguments and only returns a number (or -1).
    let cpu = unsafe { libc::sched_getcpu() };
    cpu.max(0) as u32
}

/// The offset of `cpu_id` in this process's rseq areas from the thread pointer, if glibc
/// registered them (2.35 and later do, unless `GLIBC_TUNABLES=glibc.pthread.rseq=0`).
pub(crate) fn rseq_cpu_offset() -> Option<isize> {
    // SAFETY: dlsym only looks names up; both are NUL-terminated literals.
    let (offset, size) = unsafe {
        (
            libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()),
            libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()),
        )
    };
    if offset.is_null() || size.is_null() {
        return None;
    }
    // SAFETY: glibc defines `const ptrdiff_t __rseq_offset` and `const unsigned int __rseq_size`,
    // set before `main` and never changed.
    let (offset, size) = unsafe { (*offset.cast::<isize>(), *size.cast::<u32>()) };
    // `struct rseq` starts with u32 cpu_id_start, then u32 cpu_id; a size of 0 means glibc did
    // not register (it tried and the kernel refused, or the tunable turned it off).
    (size >= 8).then_some(offset + 4)
}

/// Why no rseq area is there to read the CPU number from, for messages.
pub(crate) const NO_RSEQ: &str = "glibc registered no restartable-sequences area to read the \
     CPU number from (glibc 2.35 and later do, where the kernel allows it)";

/// Whether `rdtscp`'s TSC_AUX holds the CPU number: Linux puts it in the low 12 bits.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // asked by the x86_64 clock only
pub(crate) const TSC_AUX_IS_CPU: bool = true;

/// The kernel's verdict on the timestamp counter, where it gives one: it lists `tsc` among the
/// available clocksources only after its own checks (invariance, and that the CPUs' counters
/// agree), and withdraws it when a later check fails.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // asked by the x86_64 clock only
pub(crate) fn kernel_trusts_tsc() -> Option<bool> {
    let sources = std::fs::read_to_string(
        "/sys/devices/system/clocksource/clocksource0/available_clocksource",
    )
    .ok()?;
    Some(sources.split_whitespace().any(|s| s == "tsc"))
}

/// Whether the kernel flags the counter constant-rate and nonstop (`/proc/cpuinfo`).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // asked by the x86_64 clock only
pub(crate) fn cpu_flags_say_tsc_invariant() -> bool {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or("");
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    has("constant_tsc") && has("nonstop_tsc")
}

/// Gives the calling thread a lower priority (nice 10), so that the program's threads go first.
/// Best effort.
#[cfg_attr(not(feature = "otlp"), allow(dead_code))] // the OTLP sender's thread only
pub(crate) fn lower_thread_priority() {
    // SAFETY: setpriority with this thread's id changes only this thread's nice value.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, thread_id() as libc::id_t, 10) };
}

/// This thread's `errno`.
pub(super) fn errno() -> *mut i32 {
    // SAFETY: returns the calling thread's errno location; no other effect.
    unsafe { libc::__errno_location() }
}

/// The interrupted thread's stack pointer, from the context a signal handler is given (0 where
/// this CPU's context is not read). Async-signal-safe.
pub(super) fn stack_pointer(ctx: *mut std::ffi::c_void) -> u64 {
    if ctx.is_null() {
        return 0;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: an SA_SIGINFO handler's third argument is the interrupted context, a ucontext_t.
    return unsafe {
        (*ctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_RSP as usize] as u64
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as above.
    return unsafe { (*ctx.cast::<libc::ucontext_t>()).uc_mcontext.sp };
    #[allow(unreachable_code)]
    0
}

/// Whether a signal's `si_code` says another process (or `raise`, `abort`) sent it, rather
/// than the CPU raising it: SI_USER and the other senders' codes are zero or negative.
pub(super) fn sent_by_a_process(code: i32) -> bool {
    code <= 0
}

/// A pipe whose ends do not block and are closed at `exec`: (read, write); `None` if the
/// system has no descriptors left.
pub(crate) fn pipe() -> Option<(i32, i32)> {
    let mut fds = [-1; 2];
    // SAFETY: `fds` is a valid array of two descriptors for pipe2 to fill.
    let ok = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } == 0;
    ok.then_some((fds[0], fds[1]))
}

/// Gives the new, empty file `fd` a length of `len` bytes and reserves storage for its first
/// `first` (see [`reserve_range`]).
pub(super) fn reserve(fd: i32, len: usize, first: usize) -> io::Result<()> {
    reserve_range(fd, 0, first)?;
    // SAFETY: `fd` is an open file; the length is a plain number.
    if first < len && unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reserves storage for `len` bytes of the file `fd` from `offset`: after this, stores into a
/// shared mapping of them cannot fail for want of room. About a microsecond per page on tmpfs
/// (the pages are allocated and zeroed): 2.5 ms for 8 MiB.
pub(crate) fn reserve_range(fd: i32, offset: usize, len: usize) -> io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: `fd` is an open file; the range is plain numbers.
    let err = unsafe { libc::posix_fallocate(fd, offset as libc::off_t, len as libc::off_t) };
    if err != 0 {
        return Err(io::Error::from_raw_os_error(err));
    }
    Ok(())
}

/// The pages are mapped later, off the starting thread ([`prefault`]).
pub(super) const MAP_POPULATE: i32 = 0;

/// Nothing to do at map time: the reserved pages exist; the background writer maps them in.
pub(super) fn populate(_: *mut u8, _: usize) {}

/// `MADV_POPULATE_WRITE` (Linux 5.14; not in every `libc`): fault the range in writable, as
/// stores would, without changing a byte.
const MADV_POPULATE_WRITE: i32 = 23;

/// Maps in the pages of `len` bytes at `p` (whole pages, page-aligned) as a store would, without
/// changing their contents, so that the recording path's first store to each does not fault:
/// safe while threads store into them. `false` where the kernel cannot (older than 5.14); the
/// caller then reads each page.
pub(crate) fn prefault(p: *mut u8, len: usize) -> bool {
    // SAFETY: advice on a range of the caller's own mapping; POPULATE_WRITE changes no byte of
    // it (it is the fault a store would take, with nothing stored).
    unsafe { libc::madvise(p.cast(), len, MADV_POPULATE_WRITE) == 0 }
}

/// Said once at start when records take the CPU number of each read on a CPU whose counter read
/// does not carry it (aarch64): why, and what it costs.
pub(crate) fn cpu_per_read_note() -> String {
    format!(
        "{NO_RSEQ}, so each record asks the kernel for its CPU number: a getcpu system call, \
         which costs more than reading the counter"
    )
}

/// The rate of the CPU's counter as stated: aarch64's `CNTFRQ_EL0` (`read_register`), which
/// Linux lets programs read; `None` if it says 0.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))] // asked by the aarch64 clock only
pub(crate) fn stated_counter_rate(read_register: fn() -> u64) -> Option<u64> {
    Some(read_register()).filter(|&hz| hz != 0)
}

/// How long thread `tid` of this process has waited for a CPU while runnable, in nanoseconds,
/// since it started: the second field of its `schedstat` (the kernel's `run_delay`, which grows
/// when a wait ends, so a wait still going on counts once the thread runs again). `None` where
/// the kernel keeps no such statistics (built without `CONFIG_SCHED_INFO`) or the thread is gone.
///
/// Async-signal-safe and allocation-free (the recording thread asks it from its exit path):
/// the path is built on the stack and read with plain system calls.
pub(crate) fn run_delay_ns(tid: i32) -> Option<u64> {
    if tid <= 0 {
        return None;
    }
    let mut path = [0u8; 48];
    let mut n = 0;
    for part in [
        &b"/proc/self/task/"[..],
        itoa(tid, &mut [0u8; 11]),
        b"/schedstat\0",
    ] {
        path[n..n + part.len()].copy_from_slice(part);
        n += part.len();
    }
    // SAFETY: `path` is NUL-terminated (the last part ends with NUL, and 16 + 11 + 11 bytes fit
    // in 48); open only reads it.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 96];
    // SAFETY: `buf` is writable for its length; `fd` is ours and closed right after.
    let got = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
    let text = buf.get(..usize::try_from(got).ok()?)?;
    let field = text.split(|&b| b == b' ').nth(1)?;
    std::str::from_utf8(field).ok()?.trim().parse().ok()
}

/// `v`'s decimal digits, in `buf`.
fn itoa(v: i32, buf: &mut [u8; 11]) -> &[u8] {
    let mut v = v.unsigned_abs();
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[at..]
}

/// The running program's GNU build id (the `NT_GNU_BUILD_ID` note the linker writes, which
/// `readelf -n` and `file` show), if it has one: the note is read from the program's own
/// loaded headers, no file is opened.
pub(crate) fn build_id() -> Option<Vec<u8>> {
    let mut found: Option<Vec<u8>> = None;
    // SAFETY: `main_program_note` is a callback with the signature dl_iterate_phdr expects, and
    // `found` outlives the call, which is synchronous.
    unsafe {
        libc::dl_iterate_phdr(
            Some(main_program_note),
            (&mut found as *mut Option<Vec<u8>>).cast(),
        );
    }
    found
}

/// dl_iterate_phdr's callback: the first object it is given is the main program; its
/// `PT_NOTE` segments are searched for the build id, and the walk stops there.
unsafe extern "C" fn main_program_note(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: dl_iterate_phdr passes a valid `dl_phdr_info` for the duration of the call, and
    // `data` is the `Option<Vec<u8>>` that `build_id` passed, not otherwise used meanwhile.
    let (info, found) = unsafe { (&*info, &mut *data.cast::<Option<Vec<u8>>>()) };
    if info.dlpi_phdr.is_null() {
        return 1;
    }
    // SAFETY: `dlpi_phdr` points at the object's `dlpi_phnum` program headers, mapped for the
    // life of the object (the main program: the process).
    let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum.into()) };
    for h in headers.iter().filter(|h| h.p_type == libc::PT_NOTE) {
        let start = (info.dlpi_addr as usize).wrapping_add(h.p_vaddr as usize);
        // SAFETY: a PT_NOTE segment is loaded (it lies in a PT_LOAD segment) at the object's base
        // plus its address, `p_memsz` bytes long, readable for the life of the object.
        let notes = unsafe { std::slice::from_raw_parts(start as *const u8, h.p_memsz as usize) };
        if let Some(id) = gnu_build_id(notes) {
            *found = Some(id.to_vec());
            break;
        }
    }
    // Not 0: the main program was the one wanted.
    1
}

/// The descriptor of the `NT_GNU_BUILD_ID` note among `notes` (each a name size, descriptor
/// size and type, then the name and the descriptor, each padded to 4 bytes).
fn gnu_build_id(mut notes: &[u8]) -> Option<&[u8]> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let word = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let pad = |n: usize| n.checked_add(3).map(|n| n & !3);
    while notes.len() >= 12 {
        let (name_len, desc_len, kind) = (
            word(notes, 0)? as usize,
            word(notes, 4)? as usize,
            word(notes, 8)?,
        );
        let desc_at = 12usize.checked_add(pad(name_len)?)?;
        let end = desc_at.checked_add(pad(desc_len)?)?;
        let name = notes.get(12..12 + name_len)?;
        let desc = notes.get(desc_at..desc_at + desc_len)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" && !desc.is_empty() {
            return Some(desc);
        }
        notes = notes.get(end..)?;
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg_attr(miri, ignore = "Miri runs no dl_iterate_phdr")]
    fn the_build_id_is_the_one_readelf_shows() {
        // Rust programs are linked through the C compiler, which Debian's (and most
        // distributions') configure to write a build id.
        let id = super::build_id().expect("a build id");
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let exe = std::env::current_exe().unwrap();
        let Ok(out) = std::process::Command::new("readelf")
            .arg("-n")
            .arg(&exe)
            .output()
        else {
            return; // no binutils here: the note was found, which is what the runtime needs
        };
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("Build ID: {hex}")),
            "{hex} not in\n{text}"
        );
    }

    #[test]
    fn notes_are_walked_to_the_gnu_one_and_a_short_one_is_no_build_id() {
        let mut notes = Vec::new();
        for (name, kind, desc) in [
            (&b"Go\0\0"[..], 4u32, &[9u8; 6][..]),
            (&b"GNU\0"[..], 3, &[1, 2, 3, 4, 5][..]),
        ] {
            notes.extend_from_slice(&(name.len() as u32).to_ne_bytes());
            notes.extend_from_slice(&(desc.len() as u32).to_ne_bytes());
            notes.extend_from_slice(&kind.to_ne_bytes());
            notes.extend_from_slice(name);
            notes.extend_from_slice(desc);
            notes.resize(notes.len().next_multiple_of(4), 0);
        }
        assert_eq!(super::gnu_build_id(&notes), Some(&[1u8, 2, 3, 4, 5][..]));
        assert_eq!(super::gnu_build_id(&notes[..notes.len() - 8]), None);
        assert_eq!(super::gnu_build_id(&[0xff; 40]), None);
    }
}
