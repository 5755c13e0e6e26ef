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
//! The box is its process's: its name carries the pid and a tag of what tells the process from
//! every other with that pid ([`fdr_format::crash_box::file_name`]), it is made under a name of
//! its own and never over a file already there, it is locked for as long as the process lives
//! (how a reader in any PID namespace tells it runs, and how exactly one reader takes it), and
//! the process removes it only while the name is still its file ([`CrashBox::remove`]).
//!
//! Signals that end a process mark the box as they arrive ([`marks`]); a new recording recovers
//! what earlier processes of its program left, off the recording path ([`recovery`]).
//!
//! After `fork`, the child's view of its parent's box is replaced by anonymous memory and its
//! copy of the box's descriptor closed ([`after_fork`]): the parent's recording, which the child
//! stops, is stopped in the child's copy only, nothing the child does reaches its parent's box
//! (but the note that it was forked), and the parent's lock is the parent's alone.

mod marks;
pub(crate) mod recovery;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use fdr_format::crash_box::{self as layout, at, flags, state};

use crate::buffers::published::Slot;
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
    assert!(std::mem::offset_of!(Slot, name) == layout::slot::NAME);
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
    /// The box file, open for [`CrashBox::reserve`]; its lock is held while it is open.
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
    /// The final log's absolute path, at most [`layout::MAX_OUT_PATH`] bytes.
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
    /// For a forked child, its parent's pid.
    pub parent: Option<i32>,
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
    /// Makes the box file in `setup.dir`, locks, reserves and maps it, and lays out its header.
    pub(crate) fn create(setup: Setup<'_>) -> io::Result<CrashBox> {
        let lead_capacity = round_up(setup.lead.len() * 2 + 64 * 1024, PAGE);
        let lead_offset = layout::HEADER_BYTES;
        let slots_offset = lead_offset + 2 * lead_capacity;
        let words_offset = round_up(slots_offset + setup.buffer_count * layout::SLOT_BYTES, PAGE);
        let len = words_offset + setup.buffer_count * setup.buffer_size;
        let identity = Identity::of_this_process();
        let tag = layout::tag(&[
            identity.pid_ns,
            u64::from_le_bytes(identity.boot[..8].try_into().unwrap_or([0; 8])),
            u64::from_le_bytes(identity.boot[8..].try_into().unwrap_or([0; 8])),
            identity.start,
            setup.header.start_secs as u64,
            u64::from(setup.header.start_nanos),
        ]);
        let path = setup
            .dir
            .join(layout::file_name(setup.program, setup.header.pid, tag));
        // Laid out under another name, then renamed: a reader (another process's start, `fdr
        // recover`) never finds a box half made.
        let making = layout::laying_out_name(&path);
        // Reserved now: the header, the lead written now, the slots and the ready buffers. The
        // rest of the lead areas (room for a table twice as long, twice) is reserved by the
        // first rewrite ([`CrashBox::refresh_lead`], in the background writer): a third of a
        // megabyte of tmpfs for a crate of 600 functions, a few hundred microseconds of a start.
        let lead_reserved = lead_offset + round_up(setup.lead.len(), PAGE);
        let file = platform::map_shared_file(&making, len, lead_reserved)?;
        let ready_end = words_offset + setup.ready.min(setup.buffer_count) * setup.buffer_size;
        let b = CrashBox {
            base: file.base,
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
            fd: file.fd,
            buffer_size: setup.buffer_size,
        };
        if let Err(e) = platform::reserve_range(b.fd, slots_offset, ready_end - slots_offset) {
            drop(b);
            let _ = std::fs::remove_file(&making);
            return Err(e);
        }
        b.lay_out(&setup, &identity, file.locked, len);
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

    fn lay_out(&self, setup: &Setup<'_>, identity: &Identity, locked: bool, len: usize) {
        let h = &setup.header;
        let w = |at: usize, v: u64| self.u64_at(at).store(v, Ordering::Relaxed);
        let w32 = |at: usize, v: u32| self.u32_at(at).store(v, Ordering::Relaxed);
        w32(at::VERSION, layout::VERSION);
        w32(at::PID, h.pid as u32);
        w32(at::CLOCK, h.clock);
        w(at::PROC_START, identity.start);
        let boot = identity.boot;
        w(
            at::BOOT_ID,
            u64::from_le_bytes(boot[..8].try_into().unwrap_or([0; 8])),
        );
        w(
            at::BOOT_ID + 8,
            u64::from_le_bytes(boot[8..].try_into().unwrap_or([0; 8])),
        );
        w(at::PID_NS, identity.pid_ns);
        let mut f = 0;
        if locked {
            f |= flags::LOCKED;
        }
        if let Some(parent) = h.parent {
            f |= flags::FORKED;
            w32(at::PARENT_PID, parent as u32);
        }
        w32(at::FLAGS, f);
        w(at::ALIVE_PERIOD_NS, 1_000_000_000);
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
        // Checked at start (`session::make_pool`): a longer path is an error there.
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

    /// The process is alive at `tsc`, and gives its next sign of life within `period_ns`.
    pub(crate) fn alive(&self, tsc: u64, period_ns: u64) {
        self.u64_at(at::ALIVE_PERIOD_NS)
            .store(period_ns, Ordering::Relaxed);
        self.u64_at(at::ALIVE_TSC).store(tsc, Ordering::Relaxed);
    }

    /// `n` more records could not be written for want of a buffer (counted in the box as it
    /// happens: a pool that filled says so at the death).
    pub(crate) fn add_dropped(&self, n: u64) {
        self.u64_at(at::RECORDS_DROPPED)
            .fetch_add(n, Ordering::Relaxed);
    }

    /// A buffer was taken back from one thread for another.
    pub(crate) fn add_recycled(&self) {
        self.u64_at(at::BUFFERS_RECYCLED)
            .fetch_add(1, Ordering::Relaxed);
    }

    /// A second (counter, ns) pair, and the frequency it gives, calibrated.
    pub(crate) fn calibrated(&self, tsc1: u64, ns1: u64, ticks_per_second: u64) {
        self.u64_at(at::CAL_TSC1).store(tsc1, Ordering::Relaxed);
        self.u64_at(at::CAL_NS1).store(ns1, Ordering::Relaxed);
        self.u64_at(at::TICKS_PER_SECOND)
            .store(ticks_per_second, Ordering::Relaxed);
        self.u32_at(at::CALIBRATED).store(1, Ordering::Release);
    }

    /// The final log was written: the box is closed and its file removed, if its name is still
    /// this file (never another process's box of the same name). The mapping stays until the
    /// pool goes, so threads still holding a buffer write into memory that is no longer
    /// anyone's file; the lock stays until then too.
    pub(crate) fn remove(&self) {
        if self.removed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.u32_at(at::STATE)
            .store(state::CLOSED, Ordering::Release);
        marks::forget(self.base);
        let _ = platform::unlink_if_same(&self.path, self.fd);
    }

    /// Makes this box the one signals mark.
    pub(crate) fn arm(&self) {
        marks::arm(self.base, self.len, self.fd);
    }
}

/// What tells this process from every other with its pid.
struct Identity {
    pid_ns: u64,
    boot: [u8; 16],
    start: u64,
}

impl Identity {
    fn of_this_process() -> Identity {
        Identity {
            pid_ns: layout::pid_namespace().unwrap_or(0),
            boot: layout::boot_id(),
            start: layout::process_start(crate::platform::host::os_pid()).unwrap_or(0),
        }
    }
}

impl Drop for CrashBox {
    fn drop(&mut self) {
        // A session that goes without writing its log takes its box with it: no process
        // records into it any more, and once its lock went with the descriptor a reader would
        // take this live process's box for one whose program was replaced.
        self.remove();
        // SAFETY: the mapping was made in `create` with this address and length, and nothing
        // refers to it any more: the pool that lends out its buffers is being dropped.
        unsafe { platform::unmap(self.base, self.len) };
        platform::close(self.fd);
    }
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

/// In a forked child: see [`marks::after_fork`].
pub(crate) fn after_fork() {
    marks::after_fork();
}
