//! Each thread's recording state and the path every hook takes.
//!
//! The fast path is one thread-local access, one bounds check against the buffer's published
//! limit, one timestamp read and one 8-byte store, plus the bookkeeping the rewind needs. Anything
//! else (no buffer yet, a full buffer, a CPU change, a timestamp jump, arguments, a stopped
//! recorder) goes to the cold path, which is out of line.
//!
//! The recursion guard costs nothing extra: while a record is being written the thread's length
//! holds [`BUSY`], which fails the bounds check, and the cold path then returns without writing.
//! A signal handler (or the runtime's own code) that reaches a hook in that window records nothing
//! rather than writing over a half-written record.

use std::cell::{RefCell, UnsafeCell};
use std::sync::atomic::{compiler_fence, fence, AtomicU64, Ordering};
use std::sync::Arc;

use fdr_format::{meta, FnKind, MetaWords};

use crate::buffer::{Slot, ThreadEntry};
use crate::clock;
use crate::desc::FnDesc;
use crate::recorder::{self, Session};
use crate::rewind;

/// `Local::len` while a record is being written.
pub(crate) const BUSY: u32 = u32::MAX;

/// Words of the block preamble: extents, NewBuffer, Walltime, Pid, NewCPUId.
pub(crate) const PREAMBLE_WORDS: u32 = 10;

/// The slot of a thread with no buffer: its limit of 0 sends every hook to the cold path.
static NO_BUFFER: Slot = Slot::new();

/// A thread's recording state. Only its own thread touches it.
pub(crate) struct Local {
    /// The current buffer's slot ([`NO_BUFFER`] when there is none).
    pub slot: *const Slot,
    /// The current buffer's first word.
    pub data: *const AtomicU64,
    /// Words written in the current buffer, or [`BUSY`].
    pub len: u32,
    /// Entry records at the end of the buffer that a rewind may still erase.
    pub enters: u32,
    /// Entry/tail-exit pairs before those that a rewind may still erase.
    pub tails: u32,
    /// The CPU of the last record.
    pub cpu: u32,
    /// Index of the current buffer in the pool.
    pub buffer: u32,
    /// Timestamp of the last record written.
    pub last_tsc: u64,
    /// Timestamp of the last entry record, while `enters > 0`.
    pub last_entry_tsc: u64,
    /// Calls shorter than this many ticks are erased.
    pub threshold: u64,
    /// Epoch of the session the buffer belongs to (0: none).
    pub epoch: u64,
    /// That session, kept alive by [`ATTACHMENT`].
    pub session: *const Session,
    /// Address of the function table, cached so an id costs a subtraction.
    pub table: usize,
    /// The thread is exiting: it records nothing more.
    pub dead: bool,
}

impl Local {
    const fn new() -> Local {
        Local {
            slot: &NO_BUFFER,
            data: std::ptr::null(),
            len: 0,
            enters: 0,
            tails: 0,
            cpu: u32::MAX,
            buffer: 0,
            last_tsc: 0,
            last_entry_tsc: 0,
            threshold: 0,
            epoch: 0,
            session: std::ptr::null(),
            table: 0,
            dead: false,
        }
    }

    /// Stores a word at `at`.
    ///
    /// # Safety
    /// The thread must own a buffer and `at` must be below the buffer's length in words.
    #[inline(always)]
    pub(crate) unsafe fn store(&self, at: u32, word: u64) {
        // SAFETY: per the contract, `data` points at the owned buffer and `at` is in bounds.
        unsafe { (*self.data.add(at as usize)).store(word, Ordering::Relaxed) }
    }

    /// Loads the word at `at`.
    ///
    /// # Safety
    /// As for [`Local::store`].
    #[inline(always)]
    pub(crate) unsafe fn load(&self, at: u32) -> u64 {
        // SAFETY: per the contract, `data` points at the owned buffer and `at` is in bounds.
        unsafe { (*self.data.add(at as usize)).load(Ordering::Relaxed) }
    }

    #[inline(always)]
    unsafe fn store_meta(&self, at: u32, m: MetaWords) {
        // SAFETY: forwarded contract; the caller checked that two words fit.
        unsafe {
            self.store(at, m[0]);
            self.store(at + 1, m[1]);
        }
    }

    /// Publishes the length, and with it every word below it, to snapshots.
    #[inline(always)]
    pub(crate) fn publish(&self, len: u32) {
        // SAFETY: `slot` always points at a live slot: NO_BUFFER or one of the attached pool's.
        unsafe { (*self.slot).len.store(len, Ordering::Release) }
    }

    /// Publishes that nothing below `len` can be rewound any more.
    #[inline(always)]
    fn publish_stable(&self, len: u32) {
        // SAFETY: as in `publish`.
        unsafe {
            (*self.slot).len.store(len, Ordering::Release);
            (*self.slot).stable.store(len, Ordering::Release);
        }
    }
}

thread_local! {
    static LOCAL: UnsafeCell<Local> = const { UnsafeCell::new(Local::new()) };
    /// Holds the session alive for the raw pointers in `LOCAL`, and retires the thread's buffer
    /// when the thread exits so its data outlives it.
    static ATTACHMENT: RefCell<Attachment> = const { RefCell::new(Attachment { session: None, thread: None }) };
}

struct Attachment {
    session: Option<Arc<Session>>,
    thread: Option<(u32, Arc<ThreadEntry>)>,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|cell| {
            // SAFETY: this thread's own state; no hook is running on this thread while its
            // thread-locals are destroyed, except through this destructor (which sets BUSY).
            let l = unsafe { &mut *cell.get() };
            l.dead = true;
            if l.len != BUSY {
                let len = l.len;
                l.len = BUSY;
                retire_current(l, len);
            }
        });
        self.session = None;
        self.thread = None;
    }
}

/// This thread's state. A const-initialized thread-local without a destructor, so this is
/// one address computation off the thread pointer.
#[inline(always)]
fn local() -> *mut Local {
    LOCAL.with(UnsafeCell::get)
}

/// The low word of `f`'s entry record: its id (1-based position in the table) shifted past the
/// kind bits. Descriptors are 64 bytes, so `offset / 64 << 4` is `offset >> 2`.
#[inline(always)]
fn id_bits(l: &Local, f: &'static FnDesc) -> u32 {
    (((f as *const FnDesc as usize).wrapping_sub(l.table) >> 2) as u32).wrapping_add(16)
}

/// Records one function event.
///
/// Inlined into every instrumented function is only the check that a recorder may be running;
/// the recording itself is out of line, so an instrumented function without a recorder keeps
/// a small frame (no registers saved for a body it does not run).
#[inline(always)]
pub(crate) fn record(f: &'static FnDesc, kind: FnKind) {
    if recorder::may_record() {
        match kind {
            FnKind::Enter => record_enter(f),
            FnKind::Exit => record_exit(f),
            _ => record_other(f, kind),
        }
    }
}

#[inline(never)]
fn record_enter(f: &'static FnDesc) {
    record_inner(f, FnKind::Enter)
}

#[inline(never)]
fn record_exit(f: &'static FnDesc) {
    record_inner(f, FnKind::Exit)
}

#[inline(never)]
fn record_other(f: &'static FnDesc, kind: FnKind) {
    record_inner(f, kind)
}

#[inline(always)]
fn record_inner(f: &'static FnDesc, kind: FnKind) {
    // SAFETY: `LOCAL` is this thread's; the only re-entry is a signal handler or the runtime
    // itself, which the BUSY marker turns away before they touch the state.
    let l = unsafe { &mut *local() };
    let len = l.len;
    // SAFETY: `slot` always points at a live slot.
    if len >= unsafe { (*l.slot).limit.load(Ordering::Relaxed) } {
        cold(l, f.id_bits(), kind, &[]);
        return;
    }
    l.len = BUSY;
    compiler_fence(Ordering::SeqCst);
    let id_bits = id_bits(l, f);
    let (tsc, cpu) = clock::now();
    let delta = tsc.wrapping_sub(l.last_tsc);
    let new_len = if cpu == l.cpu && delta <= u64::from(u32::MAX) {
        // SAFETY: the bounds check above left room for one word.
        unsafe { write_fast(l, len, id_bits, kind, tsc, delta as u32) }
    } else {
        write_general(l, len, id_bits, kind, tsc, cpu, &[])
    };
    compiler_fence(Ordering::SeqCst);
    l.len = new_len;
}

/// Records an entry with arguments.
#[inline]
pub(crate) fn record_args(f: &'static FnDesc, args: &[u64]) {
    if !recorder::may_record() {
        return;
    }
    // SAFETY: as in `record`.
    let l = unsafe { &mut *local() };
    let len = l.len;
    // SAFETY: `slot` always points at a live slot.
    if len >= unsafe { (*l.slot).limit.load(Ordering::Relaxed) } {
        cold(l, f.id_bits(), FnKind::EnterArgs, args);
        return;
    }
    l.len = BUSY;
    compiler_fence(Ordering::SeqCst);
    let id_bits = id_bits(l, f);
    let (tsc, cpu) = clock::now();
    let delta = tsc.wrapping_sub(l.last_tsc);
    let need = 1 + 2 * args.len() as u64;
    // SAFETY: `slot` always points at a live slot.
    let limit = unsafe { (*l.slot).limit.load(Ordering::Relaxed) };
    let new_len = if cpu == l.cpu
        && delta <= u64::from(u32::MAX)
        && u64::from(len) + need <= u64::from(limit)
    {
        // SAFETY: room for the entry and its arguments was checked just above.
        unsafe { write_args(l, len, id_bits, delta as u32, tsc, args) }
    } else {
        write_general(l, len, id_bits, FnKind::EnterArgs, tsc, cpu, args)
    };
    compiler_fence(Ordering::SeqCst);
    l.len = new_len;
}

/// An entry with arguments: the entry record, then one call-argument record per argument.
///
/// # Safety
/// The thread owns a buffer with room for `1 + 2 * args.len()` words at `len`.
#[inline(always)]
unsafe fn write_args(
    l: &mut Local,
    len: u32,
    id_bits: u32,
    delta: u32,
    tsc: u64,
    args: &[u64],
) -> u32 {
    // SAFETY: forwarded contract.
    unsafe {
        l.store(len, u64::from(id_bits | 6) | (u64::from(delta) << 32));
        for (i, &a) in args.iter().enumerate() {
            l.store_meta(len + 1 + 2 * i as u32, meta::call_argument(a));
        }
    }
    let len = len + 1 + 2 * args.len() as u32;
    // Calls with logged arguments are never erased.
    l.publish_stable(len);
    l.last_tsc = tsc;
    l.enters = 0;
    l.tails = 0;
    len
}

/// The common case: same CPU, the delta fits, one word of room.
///
/// # Safety
/// The thread owns a buffer with room for one more word at `len`.
#[inline(always)]
unsafe fn write_fast(
    l: &mut Local,
    len: u32,
    id_bits: u32,
    kind: FnKind,
    tsc: u64,
    delta: u32,
) -> u32 {
    match kind {
        FnKind::Enter => {
            // SAFETY: forwarded contract.
            unsafe { l.store(len, u64::from(id_bits) | (u64::from(delta) << 32)) };
            l.publish(len + 1);
            l.last_tsc = tsc;
            l.last_entry_tsc = tsc;
            l.enters += 1;
            len + 1
        }
        FnKind::Exit => {
            if l.enters > 0 && tsc.wrapping_sub(l.last_entry_tsc) < l.threshold {
                // SAFETY: enters > 0 means the words being rewound are this buffer's.
                if let Some(new_len) = unsafe { rewind::erase_call(l, len, id_bits, tsc) } {
                    return new_len;
                }
            }
            // SAFETY: forwarded contract.
            unsafe { write_exit(l, len, id_bits, delta, tsc) }
        }
        FnKind::TailExit => {
            // SAFETY: forwarded contract.
            unsafe { l.store(len, u64::from(id_bits | 4) | (u64::from(delta) << 32)) };
            l.last_tsc = tsc;
            after_tail_exit(l, len + 1);
            len + 1
        }
        FnKind::EnterArgs => {
            // Entries with arguments always take the general path; keep the record anyway.
            write_general(l, len, id_bits, kind, tsc, l.cpu, &[])
        }
    }
}

/// # Safety
/// The thread owns a buffer with room for one more word at `len`.
#[inline(always)]
unsafe fn write_exit(l: &mut Local, len: u32, id_bits: u32, delta: u32, tsc: u64) -> u32 {
    // SAFETY: forwarded contract.
    unsafe { l.store(len, u64::from(id_bits | 2) | (u64::from(delta) << 32)) };
    // Once an exit is kept, nothing before it can be erased.
    l.publish_stable(len + 1);
    l.last_tsc = tsc;
    l.enters = 0;
    l.tails = 0;
    len + 1
}

/// A tail exit right after its own entry (with everything since erased) may be erased together
/// with that entry when the tail-called function returns quickly; anything else pins it.
#[inline(always)]
fn after_tail_exit(l: &mut Local, new_len: u32) {
    if l.enters > 0 {
        l.tails += 1;
        l.publish(new_len);
    } else {
        l.tails = 0;
        l.publish_stable(new_len);
    }
    l.enters = 0;
}

/// Everything the fast path does not handle: a CPU change or a timestamp jump (a metadata record
/// first), arguments, and a buffer without room (retire it and take the next).
#[cold]
#[inline(never)]
fn write_general(
    l: &mut Local,
    len: u32,
    id_bits: u32,
    kind: FnKind,
    tsc: u64,
    cpu: u32,
    args: &[u64],
) -> u32 {
    let mut len = len;
    let delta = tsc.wrapping_sub(l.last_tsc);
    let mut need_meta = cpu != l.cpu || delta > u64::from(u32::MAX);
    let need = 1 + 2 * args.len() as u32 + if need_meta { 2 } else { 0 };
    // SAFETY: `slot` always points at a live slot.
    let limit = unsafe { (*l.slot).limit.load(Ordering::Relaxed) };
    if l.data.is_null() || len.saturating_add(need) > limit {
        match switch_buffer(l, len, tsc, cpu) {
            Some(fresh) => len = fresh,
            None => {
                count_dropped(l, 1 + args.len() as u64);
                return 0;
            }
        }
        need_meta = false;
        // SAFETY: switch_buffer just installed a live slot.
        let limit = unsafe { (*l.slot).limit.load(Ordering::Relaxed) };
        if len + 1 + 2 * args.len() as u32 > limit {
            // More arguments than a whole buffer holds: keep the entry, drop what cannot fit.
            count_dropped(l, args.len() as u64);
            return write_general(l, len, id_bits, kind, tsc, cpu, &[]);
        }
    }
    let mut delta = tsc.wrapping_sub(l.last_tsc) as u32;
    if need_meta {
        let m = if cpu != l.cpu {
            meta::new_cpu_id(cpu as u16, tsc)
        } else {
            meta::tsc_wrap(tsc)
        };
        // SAFETY: room for `need` words was checked above.
        unsafe { l.store_meta(len, m) };
        len += 2;
        l.cpu = cpu;
        l.last_tsc = tsc;
        // A rewind never reaches across metadata.
        l.enters = 0;
        l.tails = 0;
        l.publish_stable(len);
        delta = 0;
    }
    match kind {
        // SAFETY: room for 1 + 2 * args words was checked above.
        FnKind::EnterArgs => unsafe { write_args(l, len, id_bits, delta, tsc, args) },
        // SAFETY: room for one more word was checked above.
        _ => unsafe { write_fast(l, len, id_bits, kind, tsc, delta) },
    }
}

/// Where hooks land when the bounds check fails and a recorder may be running.
#[cold]
#[inline(never)]
fn cold(l: &mut Local, id_bits: u32, kind: FnKind, args: &[u64]) {
    if l.len == BUSY || l.dead {
        return;
    }
    let len = l.len;
    l.len = BUSY;
    compiler_fence(Ordering::SeqCst);
    let new_len = cold_inner(l, len, id_bits, kind, args);
    compiler_fence(Ordering::SeqCst);
    l.len = new_len;
}

fn cold_inner(l: &mut Local, len: u32, id_bits: u32, kind: FnKind, args: &[u64]) -> u32 {
    let epoch = recorder::current_epoch();
    if l.epoch != epoch || session_stopped(l) {
        retire_current(l, len);
        if epoch == 0 || !attach(l, epoch) {
            return 0;
        }
        let (tsc, cpu) = clock::now();
        return write_general(l, 0, id_bits, kind, tsc, cpu, args);
    }
    let (tsc, cpu) = clock::now();
    write_general(l, len, id_bits, kind, tsc, cpu, args)
}

fn session_stopped(l: &Local) -> bool {
    // SAFETY: `session` is null or kept alive by this thread's attachment.
    !l.session.is_null() && unsafe { (*l.session).pool.stopped.load(Ordering::SeqCst) }
}

/// Joins the session of `epoch`: takes a reference that keeps its pool alive for this thread.
fn attach(l: &mut Local, epoch: u64) -> bool {
    let Some(session) = recorder::session_for(epoch) else {
        return false;
    };
    let tid = thread_id();
    let name = std::thread::current().name().unwrap_or("").to_string();
    let (key, entry) = session.pool.register_thread(tid, name);
    let ptr = Arc::as_ptr(&session);
    let stored = ATTACHMENT.try_with(|a| {
        let mut a = a.borrow_mut();
        a.session = Some(session);
        a.thread = Some((key, entry));
    });
    if stored.is_err() {
        l.dead = true;
        return false;
    }
    l.session = ptr;
    l.epoch = epoch;
    l.table = crate::desc::table_base();
    // SAFETY: the session was just stored in this thread's attachment, which keeps it alive.
    let s = unsafe { &*ptr };
    l.threshold = s.threshold_ticks;
    l.slot = &NO_BUFFER;
    l.data = std::ptr::null();
    true
}

/// Retires the current buffer (keeping its data) and leaves the session.
fn retire_current(l: &mut Local, len: u32) {
    if !l.data.is_null() && !l.session.is_null() {
        l.publish(len);
        // SAFETY: the attachment keeps the session alive while `l.session` is set.
        unsafe { (*l.session).pool.retire(l.buffer) };
    }
    l.slot = &NO_BUFFER;
    l.data = std::ptr::null();
    l.session = std::ptr::null();
    l.epoch = 0;
    let _ = ATTACHMENT.try_with(|a| {
        if let Ok(mut a) = a.try_borrow_mut() {
            a.session = None;
            a.thread = None;
        }
    });
}

/// Retires the full buffer and takes the next; writes the new block's preamble. Returns the
/// length after the preamble, or `None` when no buffer can be had.
fn switch_buffer(l: &mut Local, len: u32, tsc: u64, cpu: u32) -> Option<u32> {
    if l.session.is_null() {
        return None;
    }
    // SAFETY: the attachment keeps the session alive while `l.session` is set.
    let s = unsafe { &*l.session };
    if !l.data.is_null() {
        l.publish(len);
        s.pool.retire(l.buffer);
        l.slot = &NO_BUFFER;
        l.data = std::ptr::null();
    }
    let index = s.pool.acquire()?;
    let slot = &s.pool.slots[index as usize];
    let (key, seq) = ATTACHMENT
        .try_with(|a| {
            let a = a.borrow();
            a.thread
                .as_ref()
                .map(|(key, e)| (*key, e.buffers.fetch_add(1, Ordering::Relaxed)))
        })
        .ok()
        .flatten()
        .unwrap_or((u32::MAX, 0));
    let tid = ATTACHMENT
        .try_with(|a| a.borrow().thread.as_ref().map(|(_, e)| e.tid))
        .ok()
        .flatten()
        .unwrap_or(0);
    slot.tid.store(tid, Ordering::Relaxed);
    slot.thread.store(key, Ordering::Relaxed);
    slot.thread_seq.store(seq, Ordering::Relaxed);
    l.slot = slot;
    l.data = s.pool.buffer(index).as_ptr();
    l.buffer = index;
    let (secs, nanos) = clock::wall_time();
    // SAFETY: the buffer is ours and holds far more than the ten preamble words (the minimum
    // buffer size is checked at start).
    unsafe {
        // The extents value is filled in when the buffer is copied out.
        l.store_meta(0, meta::buffer_extents(0));
        l.store_meta(2, meta::new_buffer(tid));
        l.store_meta(4, meta::walltime(secs, (nanos / 1000) as i32));
        l.store_meta(6, meta::pid(s.pid));
        l.store_meta(8, meta::new_cpu_id(cpu as u16, tsc));
    }
    l.cpu = cpu;
    l.last_tsc = tsc;
    l.enters = 0;
    l.tails = 0;
    l.publish_stable(PREAMBLE_WORDS);
    slot.limit.store(s.pool.words_per_buffer, Ordering::SeqCst);
    // A finish that started after the check in the cold path has already zeroed the limits it
    // saw; seeing `stopped` here means this buffer may have been missed, so give it back.
    if s.pool.stopped.load(Ordering::SeqCst) {
        slot.limit.store(0, Ordering::SeqCst);
    }
    Some(PREAMBLE_WORDS)
}

fn count_dropped(l: &Local, records: u64) {
    if l.session.is_null() {
        return;
    }
    let _ = ATTACHMENT.try_with(|a| {
        if let Some((_, e)) = a.borrow().thread.as_ref() {
            e.dropped.fetch_add(records, Ordering::Relaxed);
        }
    });
}

fn thread_id() -> i32 {
    #[cfg(feature = "testing")]
    if crate::testing::mock_on() {
        return crate::testing::mock_tid();
    }
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Makes the rewinds visible before the words they free are written again (see snapshot).
#[inline(always)]
pub(crate) fn publish_rewind(l: &mut Local, new_len: u32) {
    // SAFETY: `slot` always points at a live slot, and this thread is its only writer.
    let slot = unsafe { &*l.slot };
    let n = slot.rewinds.load(Ordering::Relaxed).wrapping_add(1);
    slot.rewinds.store(n, Ordering::Relaxed);
    fence(Ordering::Release);
    l.publish(new_len);
}
