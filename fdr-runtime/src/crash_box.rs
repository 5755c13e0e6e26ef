//! The crash box: the buffer pool in a file mapped shared, so that what the threads recorded is
//! in the kernel's page cache, not only in the process, when the process dies without writing
//! its log. The layout and why a reader can cut every buffer at a complete record whatever
//! instant the process died are `fdr_format::crash_box`'s; this module lays a box out, keeps its
//! header current (calibration, the function and thread tables, a sign of life), marks it when
//! a crash signal arrives, and removes it when the final log is written.
//!
//! The recording path does not know about it: a buffer's words and its slot are at another
//! address, written by the same stores (the slot struct's layout is checked against the
//! format's offsets below). The file's storage is reserved before it is written: at start the
//! header, the lead written then, the slots and the first quarter megabyte of buffers
//! ([`CrashBox::create`]); the rest of the lead areas by their first rewrite
//! ([`CrashBox::refresh_lead`]); the other buffers by `Pool::grow` in the background writer, a
//! megabyte ahead of those in use, or by a thread that needs a buffer first
//! ([`CrashBox::reserve`]). So a full tmpfs or disk is an error at start (and a fallback to
//! anonymous memory), a smaller ring or an older table, never a SIGBUS while recording; and a
//! short program reserves what it uses, not the whole ring. The reserved buffers' pages are
//! mapped in by the background writer (`Pool::prefault`, `Pool::grow`), so the recording path
//! takes at most a minor fault on a page it reaches first.
//!
//! Crash signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) run [`on_crash`] on the alternate
//! stack (which Rust's runtime gives each thread it starts, for its own stack-overflow message),
//! where only atomic stores into the mapping and async-signal-safe calls are made; then the
//! handler that was there before runs as if fdr's had not, so the message, exit status and core
//! dump are what they would have been (`platform::watch_crashes`).
//!
//! After `fork`, the child's view of its parent's box is replaced by anonymous memory
//! ([`after_fork`]): the parent's recording, which the child stops, is stopped in the child's
//! copy only, and nothing the child does reaches its parent's box.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
use std::sync::Mutex;

use fdr_format::crash_box::{self as layout, at, state};

use crate::buffer_state::Slot;
use crate::platform;

// The slot's fields where the format says a reader finds them.
const _: () = {
    assert!(std::mem::size_of::<Slot>() == layout::SLOT_BYTES);
    assert!(std::mem::offset_of!(Slot, len) == layout::slot::LEN);
    assert!(std::mem::offset_of!(Slot, state) == layout::slot::STATE);
    assert!(std::mem::offset_of!(Slot, tid) == layout::slot::TID);
    assert!(std::mem::offset_of!(Slot, gen) == layout::slot::GEN);
    assert!(std::mem::offset_of!(Slot, thread) == layout::slot::THREAD);
    assert!(std::mem::offset_of!(Slot, thread_seq) == layout::slot::THREAD_SEQ);
};

/// A box: the mapping and what was laid out in it.
pub(crate) struct CrashBox {
    base: *mut u8,
    len: usize,
    path: PathBuf,
    lead_offset: usize,
    lead_capacity: usize,
    slots_offset: usize,
    words_offset: usize,
    /// Serializes rewriting the lead areas.
    lead: Mutex<LeadState>,
    /// The file is gone (the final log was written).
    removed: AtomicBool,
    /// The box file, open for [`CrashBox::reserve`].
    fd: i32,
    buffer_size: usize,
}

// SAFETY: the mapping is shared memory reached only through atomics (the header, the slots and
// the buffer words are all atomic types), and `lead` is behind a mutex; nothing is tied to the
// thread that made it.
unsafe impl Send for CrashBox {}
// SAFETY: as above.
unsafe impl Sync for CrashBox {}

/// What a box is laid out with.
pub(crate) struct Setup<'a> {
    pub dir: &'a Path,
    pub program: &'a str,
    pub out: &'a Path,
    pub buffer_size: usize,
    pub buffer_count: usize,
    /// The buffers, from the first, whose room is reserved at once; the rest are reserved by
    /// [`CrashBox::reserve`] before they are used.
    pub ready: usize,
    /// The run record and the function table, encoded as a lead area holds them.
    pub lead: Vec<u8>,
    pub header: HeaderFacts,
}

/// The header's fixed facts.
pub(crate) struct HeaderFacts {
    pub pid: i32,
    pub clock: u32,
    pub ticks_per_second: u64,
    pub cal_tsc0: u64,
    pub cal_ns0: u64,
    pub start_secs: i64,
    pub start_nanos: u32,
    pub start_tsc: u64,
    pub threshold_ns: u64,
    pub threshold_ticks: u64,
    pub max_age_ns: u64,
}

/// What the lead areas hold and have room for.
struct LeadState {
    /// What the active area has (functions named, threads): [`CrashBox::refresh_lead`]'s key.
    key: u64,
    /// The room of both areas is reserved (at start only the first area's written part is).
    reserved: bool,
}

const PAGE: usize = 4096;

fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

impl CrashBox {
    /// Makes the box file in `setup.dir`, reserves and maps it, and lays out its header.
    pub(crate) fn create(setup: Setup<'_>) -> io::Result<CrashBox> {
        let lead_capacity = round_up(setup.lead.len() * 2 + 64 * 1024, PAGE);
        let lead_offset = layout::HEADER_BYTES;
        let slots_offset = lead_offset + 2 * lead_capacity;
        let words_offset = round_up(slots_offset + setup.buffer_count * layout::SLOT_BYTES, PAGE);
        let len = words_offset + setup.buffer_count * setup.buffer_size;
        let path = setup
            .dir
            .join(layout::file_name(setup.program, setup.header.pid));
        // Laid out under another name, then renamed: a reader (another process's start, `fdr
        // recover`) never finds a box half made.
        let making = laying_out_name(&path);
        // Reserved now: the header, the lead written now, the slots and the ready buffers. The
        // rest of the lead areas (room for a table twice as long, twice) is reserved by the
        // first rewrite ([`CrashBox::refresh_lead`], in the background writer): a third of a
        // megabyte of tmpfs for a crate of 600 functions, a few hundred microseconds of a start.
        let lead_reserved = lead_offset + round_up(setup.lead.len(), PAGE);
        let (base, fd) = platform::map_shared_file(&making, len, lead_reserved)?;
        let ready_end = words_offset + setup.ready.min(setup.buffer_count) * setup.buffer_size;
        let b = CrashBox {
            base,
            len,
            path,
            lead_offset,
            lead_capacity,
            slots_offset,
            words_offset,
            lead: Mutex::new(LeadState {
                key: u64::MAX,
                reserved: false,
            }),
            removed: AtomicBool::new(false),
            fd,
            buffer_size: setup.buffer_size,
        };
        if let Err(e) = platform::reserve_range(b.fd, slots_offset, ready_end - slots_offset) {
            drop(b);
            let _ = std::fs::remove_file(&making);
            return Err(e);
        }
        b.lay_out(&setup, len);
        if let Err(e) = std::fs::rename(&making, &b.path) {
            let _ = std::fs::remove_file(&making);
            return Err(e);
        }
        Ok(b)
    }

    fn u64_at(&self, at: usize) -> &AtomicU64 {
        debug_assert!(at % 8 == 0 && at + 8 <= self.len);
        // SAFETY: `at` is an 8-aligned offset inside the mapping (the header's offsets are), the
        // mapping is page-aligned and lives as long as `self`, and every access is atomic.
        unsafe { &*self.base.add(at).cast::<AtomicU64>() }
    }

    fn u32_at(&self, at: usize) -> &AtomicU32 {
        debug_assert!(at % 4 == 0 && at + 4 <= self.len);
        // SAFETY: as in `u64_at`, 4-aligned.
        unsafe { &*self.base.add(at).cast::<AtomicU32>() }
    }

    fn lay_out(&self, setup: &Setup<'_>, len: usize) {
        let h = &setup.header;
        let w = |at: usize, v: u64| self.u64_at(at).store(v, Ordering::Relaxed);
        let w32 = |at: usize, v: u32| self.u32_at(at).store(v, Ordering::Relaxed);
        w32(at::VERSION, layout::VERSION);
        w32(at::PID, h.pid as u32);
        w32(at::CLOCK, h.clock);
        w(
            at::PROC_START,
            layout::process_start(crate::host::os_pid()).unwrap_or(0),
        );
        let boot = layout::boot_id();
        w(
            at::BOOT_ID,
            u64::from_le_bytes(boot[..8].try_into().unwrap_or([0; 8])),
        );
        w(
            at::BOOT_ID + 8,
            u64::from_le_bytes(boot[8..].try_into().unwrap_or([0; 8])),
        );
        w(at::TICKS_PER_SECOND, h.ticks_per_second);
        w(at::CAL_TSC0, h.cal_tsc0);
        w(at::CAL_NS0, h.cal_ns0);
        w(at::START_SECS, h.start_secs as u64);
        w32(at::START_NANOS, h.start_nanos);
        w(at::START_TSC, h.start_tsc);
        w(at::THRESHOLD_NS, h.threshold_ns);
        w(at::THRESHOLD_TICKS, h.threshold_ticks);
        w(at::BUFFER_SIZE, setup.buffer_size as u64);
        w(at::BUFFER_COUNT, setup.buffer_count as u64);
        w(at::LEAD_OFFSET, self.lead_offset as u64);
        w(at::LEAD_CAPACITY, self.lead_capacity as u64);
        w(at::SLOTS_OFFSET, self.slots_offset as u64);
        w(at::WORDS_OFFSET, self.words_offset as u64);
        w(at::TOTAL_BYTES, len as u64);
        w(at::MAX_AGE_NS, h.max_age_ns);
        let out = setup.out.as_os_str().as_encoded_bytes();
        let n = out.len().min(layout::MAX_OUT_PATH);
        // SAFETY: the path area lies inside the header page, which nothing else writes yet.
        unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), self.base.add(at::OUT), n) };
        w32(at::OUT_LEN, n as u32);
        self.write_lead(&setup.lead);
        // SAFETY: the magic's 8 bytes at the start of the header page.
        unsafe { std::ptr::copy_nonoverlapping(layout::MAGIC.as_ptr(), self.base, 8) };
        self.u32_at(at::STATE)
            .store(state::RECORDING, Ordering::Release);
    }

    /// Writes `lead` into the inactive lead area, then makes it the active one: a reader sees
    /// the old table or the new one, whole.
    fn write_lead(&self, lead: &[u8]) {
        let next = (self.u64_at(at::LEAD_ACTIVE).load(Ordering::Acquire) as usize + 1) & 1;
        let n = lead.len().min(self.lead_capacity);
        // SAFETY: the inactive area is inside the mapping and only written here, under the
        // `lead` mutex (or before the box is shared); readers only read it once it is active.
        unsafe {
            std::ptr::copy_nonoverlapping(
                lead.as_ptr(),
                self.base.add(self.lead_offset + next * self.lead_capacity),
                n,
            )
        };
        self.u64_at(at::LEAD_LEN + 8 * next)
            .store(n as u64, Ordering::Release);
        self.u64_at(at::LEAD_ACTIVE)
            .store(next as u64, Ordering::Release);
    }

    /// Rewrites the lead areas when the tables changed (`key` tells: functions named, the
    /// threads): the background writer calls it at each tick.
    /// The first rewrite reserves the areas' room first; while that fails (a full directory),
    /// the box keeps the table it has and the rewrite is tried again at the next change.
    pub(crate) fn refresh_lead(&self, key: u64, lead: impl FnOnce() -> Vec<u8>) {
        let mut state = self.lead.lock().unwrap_or_else(|e| e.into_inner());
        if state.key == key {
            return;
        }
        if !state.reserved {
            let end = self.lead_offset + 2 * self.lead_capacity;
            if self
                .reserve_bytes(self.lead_offset, end - self.lead_offset)
                .is_err()
            {
                return;
            }
            state.reserved = true;
        }
        state.key = key;
        self.write_lead(&lead());
    }

    /// The slots, one per buffer.
    pub(crate) fn slots(&self, count: usize) -> *const Slot {
        debug_assert!(self.slots_offset + count * layout::SLOT_BYTES <= self.words_offset);
        // SAFETY: inside the mapping, 64-aligned (the slots start on a page).
        unsafe { self.base.add(self.slots_offset).cast() }
    }

    /// Reserves the room of `n` buffers from buffer `first`, so that stores into them never fail
    /// for want of room (a system call: tens of microseconds per buffer at most).
    pub(crate) fn reserve(&self, first: usize, n: usize) -> io::Result<()> {
        self.reserve_bytes(
            self.words_offset + first * self.buffer_size,
            n * self.buffer_size,
        )
    }

    fn reserve_bytes(&self, offset: usize, len: usize) -> io::Result<()> {
        #[cfg(any(feature = "testing", all(test, feature = "record")))]
        if RESERVATIONS_FAIL.load(Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        platform::reserve_range(self.fd, offset, len)
    }

    /// The buffers' words.
    pub(crate) fn words(&self) -> *const AtomicU64 {
        // SAFETY: inside the mapping, page-aligned.
        unsafe { self.base.add(self.words_offset).cast() }
    }

    /// The process is alive at `tsc`.
    pub(crate) fn alive(&self, tsc: u64) {
        self.u64_at(at::ALIVE_TSC).store(tsc, Ordering::Relaxed);
    }

    /// A second (counter, ns) pair, and the frequency it gives, calibrated.
    pub(crate) fn calibrated(&self, tsc1: u64, ns1: u64, ticks_per_second: u64) {
        self.u64_at(at::CAL_TSC1).store(tsc1, Ordering::Relaxed);
        self.u64_at(at::CAL_NS1).store(ns1, Ordering::Relaxed);
        self.u64_at(at::TICKS_PER_SECOND)
            .store(ticks_per_second, Ordering::Relaxed);
        self.u32_at(at::CALIBRATED).store(1, Ordering::Release);
    }

    /// The final log was written: the box is closed and its file removed (the mapping stays
    /// until the pool goes, so threads still holding a buffer write into memory that is no
    /// longer anyone's file).
    pub(crate) fn remove(&self) {
        if self.removed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.u32_at(at::STATE)
            .store(state::CLOSED, Ordering::Release);
        forget(self.base);
        let _ = std::fs::remove_file(&self.path);
    }

    /// Makes this box the one crash signals mark.
    pub(crate) fn arm(&self) {
        install_handlers();
        MARKED.store(false, Ordering::SeqCst);
        MAPPING_LEN.store(self.len, Ordering::SeqCst);
        BOX.store(self.base, Ordering::SeqCst);
    }
}

impl Drop for CrashBox {
    fn drop(&mut self) {
        forget(self.base);
        // SAFETY: the mapping was made in `create` with this address and length, and nothing
        // refers to it any more: the pool that lends out its buffers is being dropped.
        unsafe { platform::unmap(self.base, self.len) };
        platform::close(self.fd);
    }
}

/// Crash signals mark no box at `base` any more.
fn forget(base: *mut u8) {
    let _ = BOX.compare_exchange(
        base,
        std::ptr::null_mut(),
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
}

/// Set by `testing::fail_reservations`: reservations past the first buffers fail as on a full
/// file system.
#[cfg(any(feature = "testing", all(test, feature = "record")))]
static RESERVATIONS_FAIL: AtomicBool = AtomicBool::new(false);

/// See [`RESERVATIONS_FAIL`].
#[cfg(any(feature = "testing", all(test, feature = "record")))]
pub(crate) fn fail_reservations(on: bool) {
    RESERVATIONS_FAIL.store(on, Ordering::SeqCst);
}

/// The box crash signals mark (null: none).
static BOX: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MAPPING_LEN: AtomicUsize = AtomicUsize::new(0);
/// The first crash signal marked the box; a later one (the abort that follows a stack
/// overflow's message) keeps that mark.
static MARKED: AtomicBool = AtomicBool::new(false);

fn install_handlers() {
    platform::watch_crashes(on_crash);
}

/// Marks the box (signal, code, address, thread, time) at the first crash signal; the
/// platform's handler then hands the signal to the handler that was there before. Runs in a
/// signal handler: atomic stores and async-signal-safe calls only.
fn on_crash(crash: platform::Crash) {
    let base = BOX.load(Ordering::SeqCst);
    if base.is_null() || MARKED.swap(true, Ordering::SeqCst) {
        return;
    }
    let tid = platform::thread_id();
    let tsc = crate::clock::ticks();
    let store32 = |at: usize, v: i32| {
        // SAFETY: `base` is a live box's mapping (cleared before it is unmapped), `at` an
        // aligned header offset.
        unsafe { (*base.add(at).cast::<AtomicI32>()).store(v, Ordering::SeqCst) }
    };
    let store64 = |at: usize, v: u64| {
        // SAFETY: as above.
        unsafe { (*base.add(at).cast::<AtomicU64>()).store(v, Ordering::SeqCst) }
    };
    store64(at::CRASH_ADDR, crash.addr);
    store64(at::CRASH_TSC, tsc);
    store32(at::CRASH_TID, tid);
    store32(at::CRASH_CODE, crash.code);
    store32(at::CRASH_SIGNAL, crash.signal);
}

/// In a forked child: the parent's box is no longer marked by crash signals, and the child's
/// view of it becomes anonymous memory of the same size (zeroed slots: every limit 0), so that
/// stopping the parent's recording in the child touches nothing of the parent's. Only
/// async-signal-safe calls.
pub(crate) fn after_fork() {
    let base = BOX.swap(std::ptr::null_mut(), Ordering::SeqCst);
    let len = MAPPING_LEN.load(Ordering::SeqCst);
    if base.is_null() || len == 0 {
        return;
    }
    // SAFETY: `base` and `len` are the box's whole mapping: its pages become the child's own,
    // zeroed, at the same address, so every reference into the box stays valid and the
    // parent's file is no longer mapped in the child.
    unsafe { platform::replace_with_zeros(base, len) };
}

/// Where a box is laid out before it is renamed to `path`.
fn laying_out_name(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(".new");
    path.with_file_name(name)
}

/// At start, the boxes this program's earlier processes left in `dir`: each one whose process is
/// gone becomes a log (at the path its process would have written) and is removed; past
/// [`MAX_BOXES`] unrecoverable ones, the oldest are removed. One stderr line per box.
pub(crate) fn recover_left(dir: &Path, program: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let me = crate::host::os_pid();
    let mut kept: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| layout::pid_of(n, Some(program))) else {
            continue;
        };
        let path = e.path();
        match recover_one(&path, pid == me) {
            Ok(Some(said)) => eprintln!("fdr: {said}"),
            Ok(None) => {}
            // A box that cannot be read while a process with its id runs may be that process's:
            // it is left alone, and not counted against the cap.
            Err(_) if pid != me && platform::process_exists(pid) => {}
            Err(e) => {
                eprintln!("fdr: could not recover {}: {e}", path.display());
                let when = e_time(&path);
                kept.push((when, path));
            }
        }
    }
    if kept.len() > MAX_BOXES {
        kept.sort();
        let extra = kept.len() - MAX_BOXES;
        for (_, p) in &kept[..extra] {
            let _ = std::fs::remove_file(p);
        }
        eprintln!(
            "fdr: removed the {extra} oldest of {} crash boxes of {program} that could not be \
             recovered (at most {MAX_BOXES} are kept)",
            kept.len()
        );
    }
}

fn e_time(p: &Path) -> std::time::SystemTime {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .unwrap_or(std::time::UNIX_EPOCH)
}

/// At most this many boxes of one program that could not be recovered are kept.
pub(crate) const MAX_BOXES: usize = 8;

/// Recovers the box at `path` unless its process runs (`ours`: it has this process's pid, so
/// whatever made it is gone). `Ok(None)`: left alone.
fn recover_one(path: &Path, ours: bool) -> Result<Option<String>, String> {
    let bytes = match layout::read_box(path, ours).map_err(|e| e.to_string())? {
        layout::Found::Dead(bytes) => bytes,
        layout::Found::Closed(_) => {
            let _ = std::fs::remove_file(path);
            return Ok(None);
        }
        layout::Found::Alive(_) | layout::Found::Vanished => return Ok(None),
    };
    let r = layout::recover(&bytes).map_err(|e| e.to_string())?;
    let out = free_name(&r.info.out);
    write_synced(&out, &r.log).map_err(|e| format!("{}: {e}", out.display()))?;
    let _ = std::fs::remove_file(path);
    Ok(Some(format!(
        "recovered the window of process {} ({}) from its crash box: wrote {}",
        r.info.pid,
        r.info.death(),
        out.display()
    )))
}

/// Writes `bytes` to `path` through a synced temporary file beside it, renamed into place.
fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(format!(".{}.recovered.tmp", crate::host::os_pid()));
    let tmp = PathBuf::from(tmp);
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_data()))
        .and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// `path`, or the first of `path.1`, `path.2`, ... that is free.
pub(crate) fn free_name(path: &Path) -> PathBuf {
    if !path.exists() {
        return path.to_path_buf();
    }
    (1..)
        .map(|n| {
            let mut s = path.as_os_str().to_os_string();
            s.push(format!(".{n}"));
            PathBuf::from(s)
        })
        .find(|p| !p.exists())
        .unwrap_or_else(|| path.to_path_buf())
}
