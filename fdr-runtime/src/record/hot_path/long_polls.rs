//! Long polls on the recording path: a poll of an async function armed for them
//! (`flags::LONG_POLL`) goes on its thread's open trigger calls when its entry is recorded,
//! where the watchdog sees it run, and comes off when its exit is; one that lasted longer than
//! the long-poll limit fires. Both ends take the time of the record just written (the thread's
//! last), so timing a poll reads no clock.

use fdr_format::ID_SHIFT;

use crate::platform::host;
use crate::record::thread_local::{self, Local};
use crate::record::thread_state::BUSY;
use crate::session;
use crate::tables::functions::FnDesc;
use crate::tables::threads::ThreadEntry;

/// The thread's session and registry entry, when it records into one.
#[inline(always)]
fn joined(l: &Local) -> Option<(&session::Session, &ThreadEntry)> {
    let p = l.member.session.get();
    let e = l.member.entry.get();
    if l.state.len.get() == BUSY || p.is_null() || e.is_null() || l.member.dead.get() {
        return None;
    }
    // SAFETY: the membership's strong count keeps the session alive, and the entry was set
    // with it, to one of its registry's entries (`attach::join`), which live as long as it.
    Some(unsafe { (&*p, &*e) })
}

/// A poll of `f`, armed for long polls, has just recorded its entry (the thread's last
/// record): it is now an open call of its thread. True when it is (the thread records), and
/// [`poll_closed`] must follow its exit.
#[inline(never)]
pub(crate) fn poll_opened(f: &'static FnDesc) -> bool {
    let l = thread_local::get();
    let Some((_, thread)) = joined(l) else {
        return false;
    };
    let t = &l.state;
    thread.open_call(t.id_field(f) >> ID_SHIFT, t.last_tsc.get());
    true
}

/// The poll [`poll_opened`] opened has just recorded its exit (the thread's last record): off
/// the open calls, and judged against the long-poll limit, unless the watchdog reported it
/// while it ran.
#[inline(never)]
pub(crate) fn poll_closed() {
    let l = thread_local::get();
    let Some((s, thread)) = joined(l) else {
        return;
    };
    let Some((id, start)) = thread.close_call() else {
        return;
    };
    let end = l.state.last_tsc.get();
    let limit = s.triggers().long_poll();
    if limit != 0 && end.saturating_sub(start) > limit {
        s.long_poll(false, id, host::thread_id(), start, end);
    }
}
