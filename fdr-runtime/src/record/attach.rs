//! A thread joining a recording, taking buffers, and leaving: at its first record, when its
//! buffer is full, when the recording it belongs to has ended, and when it exits.
//!
//! All of it may run in a signal handler (a thread's first record can be there), so none of it
//! blocks or allocates: the session is reached through `session::current`, the registry entry is
//! claimed with a compare-and-swap, the thread's name comes from the kernel, and the hook that
//! retires the thread's buffer at exit is a POSIX thread-specific key made when the recorder
//! started, whose value is set with `pthread_setspecific` (no allocation for the first 32 keys of
//! a process, where fdr's is).

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use fdr_format::{block_preamble, BlockStart, BLOCK_PREAMBLE_WORDS};

use crate::record::thread_local::{self, Local};
use crate::record::thread_state::BUSY;
use crate::session;
use crate::tables::threads::ThreadEntry;
use crate::{platform, platform::host};

/// Makes sure the thread records into the running session. Returns the length to write at (0
/// after joining, with no buffer yet), or `None` when it cannot record.
pub(crate) fn ensure(l: &Local, len: u32) -> Option<u32> {
    let epoch = session::epoch();
    let m = &l.member;
    if epoch != 0 && m.epoch.get() == epoch && !stopped(l) {
        return Some(len);
    }
    leave(l, len);
    if epoch == 0 {
        return None;
    }
    join(l, epoch).then_some(0)
}

fn stopped(l: &Local) -> bool {
    let p = l.member.session.get();
    // SAFETY: a non-null session pointer holds a strong count (see `Membership`).
    !p.is_null() && unsafe { (*p).pool().stopped.load(Ordering::SeqCst) }
}

fn join(l: &Local, epoch: u64) -> bool {
    let Some(s) = session::current() else {
        return false;
    };
    // A stopped session takes no one: its buffers are being written out.
    if s.setup().epoch != epoch || s.pool().stopped.load(Ordering::SeqCst) {
        return false;
    }
    let Some(key) = s.threads().join(host::thread_id(), host::thread_name()) else {
        s.counters().add_unattached();
        return false;
    };
    let entry: *const ThreadEntry = s.threads().entry(key);
    arm_exit_hook();
    let t = &l.state;
    t.threshold.set(s.setup().threshold_ticks);
    // Asked again, once per recording: in a forked child the ring was the parent's thread's
    // (`platform::switches` forgot it), and asking again costs nothing where it was not.
    t.switches_asked.set(false);
    let cull = s.culling();
    t.cull_on.set(cull);
    t.cull_after.set(if cull {
        s.setup().config.get_cull_after()
    } else {
        u32::MAX
    });
    t.table.set(crate::tables::functions::table_base());
    t.functions.set(crate::tables::functions::table());
    t.cpu_id.set(crate::platform::clock::fast_cpu_id());
    t.writer.clear();
    let m = &l.member;
    if let Some(profiles) = s.profiles() {
        let tid = s.threads().tid(key);
        m.profile.set(
            profiles
                .attach(tid, host::thread_name())
                .unwrap_or(std::ptr::null()),
        );
    }
    m.key.set(key);
    m.entry.set(entry);
    m.epoch.set(epoch);
    m.session.set(Arc::into_raw(s));
    true
}

/// Retires the thread's buffer (its data stays in the pool) and leaves the session.
pub(crate) fn leave(l: &Local, len: u32) {
    let (t, m) = (&l.state, &l.member);
    let p = m.session.get();
    if p.is_null() {
        t.writer.clear();
        crate::record::cull::leave(t, false);
        return;
    }
    // SAFETY: the membership's strong count keeps the session alive.
    let s = unsafe { &*p };
    let forked = !s.in_this_process();
    if !forked && t.writer.has_buffer() {
        t.writer.publish(len);
        s.pool().retire(m.buffer.get());
    }
    if !forked && m.dead.get() {
        s.threads().exited(m.key.get());
    }
    // Its counts of erased calls go on in the threads after it, while the recording runs.
    crate::record::cull::leave(t, !forked && m.epoch.get() == session::epoch());
    let profile = m.profile.replace(std::ptr::null());
    if !forked && !profile.is_null() {
        crate::profile::merged::Profiles::end(profile);
    }
    t.writer.clear();
    m.session.set(std::ptr::null());
    m.entry.set(std::ptr::null());
    m.epoch.set(0);
    if !forked {
        // SAFETY: the membership owned this count and gives it up.
        unsafe { session::release(p) };
    }
    // In a forked child the count is leaked: the session is the parent's.
}

/// Retires the full buffer and takes the next; writes the new block's preamble. Returns the
/// length after the preamble, or `None` when no buffer can be had.
pub(crate) fn switch_buffer(l: &Local, len: u32, tsc: u64, cpu: u32) -> Option<u32> {
    let (t, m) = (&l.state, &l.member);
    let p = m.session.get();
    if p.is_null() {
        return None;
    }
    // SAFETY: the membership's strong count keeps the session alive.
    let s = unsafe { &*p };
    if t.writer.has_buffer() {
        t.writer.publish(len);
        s.pool().retire(m.buffer.get());
        t.writer.clear();
    }
    let index = s.pool().acquire(s.threads())?;
    if s.pool().wants_growth() {
        s.wakeup().wake();
    }
    let key = m.key.get();
    let slot = &s.pool().slots()[index as usize];
    let tid = s.threads().tid(key);
    slot.tid.store(tid, Ordering::Relaxed);
    slot.thread.store(key, Ordering::Relaxed);
    // The name too, so that a crash box names a thread its table does not list yet.
    for (w, v) in slot.name.iter().zip(s.threads().name_words(key)) {
        w.store(v, Ordering::Relaxed);
    }
    slot.thread_seq
        .store(s.threads().took_buffer(key), Ordering::Relaxed);
    // SAFETY: the pool stays alive while the membership holds the session, the buffer is this
    // thread's until it retires it, and `leave`/`switch_buffer` clear the writer before either
    // ends.
    unsafe { t.writer.install(slot, s.pool().buffer(index)) };
    m.buffer.set(index);
    let (secs, nanos) = host::wall_time();
    let preamble = block_preamble(
        &BlockStart {
            tid,
            wall_secs: secs,
            wall_micros: (nanos / 1000) as i32,
            pid: s.setup().pid,
            cpu: cpu as u16,
            tsc,
        },
        // Filled in when the buffer is copied out.
        0,
    );
    for (i, &w) in preamble.iter().enumerate() {
        // SAFETY: the buffer is ours and far larger than the preamble (the minimum buffer size
        // is checked at start).
        unsafe { t.writer.store(i as u32, w) };
    }
    t.begin_block(BLOCK_PREAMBLE_WORDS, cpu, tsc);
    slot.limit
        .store(s.pool().words_per_buffer, Ordering::SeqCst);
    // A stop that came after the pool handed the buffer out has already zeroed the limits it saw;
    // seeing it here means this one may have been missed.
    if s.pool().stopped.load(Ordering::SeqCst) {
        slot.limit.store(0, Ordering::SeqCst);
    }
    Some(BLOCK_PREAMBLE_WORDS)
}

/// Counts records the thread could not write for want of a buffer.
pub(crate) fn count_dropped(l: &Local, records: u64) {
    let p = l.member.session.get();
    if !p.is_null() {
        // SAFETY: the membership's strong count keeps the session alive.
        let s = unsafe { &*p };
        s.threads().count_dropped(l.member.key.get(), records);
        // Counted in the box as well, as it happens: a pool that filled says how much it
        // dropped even when the process dies.
        if let Some(b) = s.pool().crash_box() {
            b.add_dropped(records);
        }
    }
}

/// Counts arguments left out because they did not fit even an empty buffer.
pub(crate) fn count_args_dropped(l: &Local, args: u64) {
    let p = l.member.session.get();
    if !p.is_null() {
        // SAFETY: as in `count_dropped`.
        unsafe { (*p).counters().add_args_dropped(args) };
    }
}

/// The key whose destructor retires an exiting thread's buffer.
static EXIT_KEY: OnceLock<Option<platform::ThreadExitKey>> = OnceLock::new();

/// Makes the key, once, where allocating is fine (when a recorder starts).
pub(crate) fn prepare_exit_hook() {
    EXIT_KEY.get_or_init(|| platform::ThreadExitKey::new(on_thread_exit));
}

/// Asks for `on_thread_exit` when this thread exits. Without a key (it could not be made) the
/// thread's buffer stays owned after it exits: its data is kept, the buffer is not recycled.
fn arm_exit_hook() {
    if let Some(Some(key)) = EXIT_KEY.get() {
        key.arm();
    }
}

extern "C" fn on_thread_exit(_: *mut std::ffi::c_void) {
    thread_local::with(|l| {
        let t = &l.state;
        l.member.dead.set(true);
        crate::platform::switches::close_this_thread();
        let len = t.len.get();
        if len == BUSY {
            return;
        }
        t.len.set(BUSY);
        leave(l, len);
    });
}
