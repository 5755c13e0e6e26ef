//! The profile's path: an event added to the thread's call trie, for a function in profile mode
//! (no record) or logged and profiled.

use fdr_format::{FnKind, ID_SHIFT};

use crate::platform::clock;
use crate::record::attach;
use crate::record::thread_local::{self, Local};
use crate::record::thread_state::BUSY;
use crate::session;
use crate::tables::flags;
use crate::tables::functions::FnDesc;

use super::{record_args_one, record_one, Entry, SKIPPED, USUAL};

/// The record of an event of a function in profile mode, or logged and profiled.
#[inline]
pub(super) fn logged_and_profiled(
    f: &'static FnDesc,
    flags: u8,
    kind: FnKind,
    args: &[u64],
) -> Entry {
    if flags & flags::UNLOGGED != 0 {
        return profile_event(f, kind);
    }
    let profiled = flags & flags::PROFILED != 0;
    let entry = if kind == FnKind::EnterArgs {
        record_args_one(f, args, profiled)
    } else {
        record_one(f, kind, profiled)
    };
    if profiled {
        profile_event(f, kind);
    }
    entry
}

/// Adds an event of `f` to the thread's call trie: the profile's path. Says whether the thread
/// profiles, as [`record_one`] says whether it records.
#[inline]
pub(super) extern "C" fn profile_event(f: &'static FnDesc, kind: FnKind) -> Entry {
    let l = thread_local::get();
    let t = &l.state;
    let len = t.len.get();
    let p = l.member.profile.get();
    if len == BUSY || p.is_null() || l.member.epoch.get() != session::epoch() {
        return profile_cold(l, f, kind);
    }
    t.begin_write();
    let now = clock::ticks();
    let id = t.id_field(f) >> ID_SHIFT;
    // SAFETY: the trie stays mapped while the thread is a member of the session that owns it
    // (the membership's strong count), and only this thread writes it.
    let p = unsafe { &*p };
    if kind == FnKind::Enter || kind == FnKind::EnterArgs {
        p.enter(id, now);
    } else {
        p.exit(id, now);
    }
    t.end_write(len);
    USUAL
}

/// [`profile_event`] for a thread that is busy, has not joined the recording, or belongs to an
/// older one.
#[cold]
#[inline(never)]
pub(super) fn profile_cold(l: &Local, f: &'static FnDesc, kind: FnKind) -> Entry {
    let t = &l.state;
    let len = t.len.get();
    if len == BUSY || l.member.dead.get() {
        return SKIPPED;
    }
    let mut joined = false;
    t.busy(|| {
        session::settle(crate::START_FROM_ENV);
        match attach::ensure(l, len) {
            Some(len) => {
                joined = true;
                len
            }
            None => 0,
        }
    });
    if !joined || l.member.profile.get().is_null() {
        return SKIPPED;
    }
    profile_event(f, kind)
}
