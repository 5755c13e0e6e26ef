//! Each thread's recording state, in one thread-local: what the controller needs
//! ([`ThreadState`]) and which recording the thread belongs to ([`Membership`]).
//!
//! The thread-local is const-initialised and has no destructor, so reaching it is one address
//! computation off the thread pointer, and it stays readable while the thread exits (the exit hook
//! in `attach` runs then). Only shared references to it are ever made.

use std::cell::Cell;

use crate::profile::call_trie::ThreadProfile;
use crate::record::thread_state::ThreadState;
use crate::session::Session;
use crate::tables::threads::ThreadEntry;

/// Which recording a thread writes into. Only `attach` changes it.
pub(crate) struct Membership {
    /// Epoch of the session (0: none).
    pub epoch: Cell<u64>,
    /// That session; the thread holds one strong count of it while this is set.
    pub session: Cell<*const Session>,
    /// The thread's entry in the session's registry.
    pub key: Cell<u32>,
    /// That entry, set and cleared with `session`: the session's registry owns it, and the
    /// strong count keeps it.
    pub entry: Cell<*const ThreadEntry>,
    /// Index of the current buffer in the pool.
    pub buffer: Cell<u32>,
    /// The thread is exiting: it records nothing more.
    pub dead: Cell<bool>,
    /// The thread's call trie in that session, if it profiles (null otherwise).
    pub profile: Cell<*const ThreadProfile>,
}

// In this order: the recording path addresses the state from the start of the thread-local
// (a field past it costs the hot path a pointer to compute).
#[repr(C)]
pub(crate) struct Local {
    pub state: ThreadState,
    pub member: Membership,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            state: ThreadState::new(),
            member: Membership {
                epoch: Cell::new(0),
                session: Cell::new(std::ptr::null()),
                key: Cell::new(0),
                entry: Cell::new(std::ptr::null()),
                buffer: Cell::new(0),
                dead: Cell::new(false),
                profile: Cell::new(std::ptr::null()),
            },
        }
    };
}

/// This thread's state.
///
/// Only the address is taken inside `LocalKey::with`, whose closure is then trivially inlined:
/// the access is one address computation off the thread pointer, and the caller's code stays in
/// the caller (with the body inside a closure the compiler kept it out of line, a call on every
/// record).
#[inline(always)]
pub(crate) fn get() -> &'static Local {
    let local: *const Local = LOCAL.with(|l| l as *const Local);
    // SAFETY: a const-initialised thread-local without a destructor lives as long as its thread,
    // and only shared references to it are ever made, so this one may coexist with any other.
    // `Local` is `!Sync` (it is made of `Cell`s), so the reference cannot reach another thread,
    // and the runtime keeps none past the call that took it.
    unsafe { &*local }
}

/// Runs `f` with this thread's state.
#[inline(always)]
pub(crate) fn with<R>(f: impl FnOnce(&Local) -> R) -> R {
    f(get())
}
