//! What the signals that end a process leave in its box, written from their handlers (atomic
//! stores into the mapping and async-signal-safe calls only), so that recovery names the death
//! as it happened:
//!
//! - a signal that is about to end the process (a fault, an abort, SIGTERM at its default
//!   action, ...) marks the box with itself, its thread, address and time; a later one replaces
//!   the mark (a fault a program survived does not name a later death);
//! - a signal that arrives on the same thread while the program's own handler runs for the
//!   first one (Rust's runtime aborting from its SIGSEGV handler on a stack overflow) keeps the
//!   first mark, and says it was a stack overflow; so does a fault next to the stack pointer;
//! - a signal the program handled and lived on after (its handler returned, or it was ignored)
//!   clears its mark and is noted as handled: a later kill is named as the kill, with the
//!   handled SIGTERM beside it.
//!
//! The platform's watch (`platform::watch_signals`) hands each signal on as if fdr were not
//! there; this module only writes.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use fdr_format::crash_box::{at, mark};

use crate::platform::{self, Crash, SignalEvent};

/// The box signals mark (null: none).
static BOX: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MAPPING_LEN: AtomicUsize = AtomicUsize::new(0);
/// The box's descriptor, which a forked child closes: the lock is the parent's.
static BOX_FD: AtomicI32 = AtomicI32::new(-1);

/// A fault this close below the stack pointer (or a little above it) is taken for a stack
/// overflow: a push, a call or a stack probe into the guard page.
const NEAR_STACK_BELOW: u64 = 64 * 1024;
const NEAR_STACK_ABOVE: u64 = 4096;

/// Makes the box at `base` (of `len` bytes, open as `fd`) the one signals mark.
pub(super) fn arm(base: *mut u8, len: usize, fd: i32) {
    platform::watch_signals(on_signal, on_abort_within);
    MAPPING_LEN.store(len, Ordering::SeqCst);
    BOX_FD.store(fd, Ordering::SeqCst);
    BOX.store(base, Ordering::SeqCst);
}

/// Signals mark no box at `base` any more.
pub(super) fn forget(base: *mut u8) {
    if BOX
        .compare_exchange(
            base,
            std::ptr::null_mut(),
            Ordering::SeqCst,
            Ordering::SeqCst,
        )
        .is_ok()
    {
        BOX_FD.store(-1, Ordering::SeqCst);
    }
}

#[inline(always)]
fn field<T>(base: *mut u8, at: usize) -> &'static T {
    // SAFETY: `base` is a live box's mapping (cleared before it is unmapped), and `at` a
    // header offset aligned for `T` (an atomic of 4 or 8 bytes): the header is a page long.
    unsafe { &*base.add(at).cast::<T>() }
}

// Each event's work is a function of its own: a signal that comes inside the program's handler
// for another (Rust's runtime aborting on a stack overflow) runs with little alternate stack
// left, and an unoptimized build gives a function room for the locals of all its branches.
fn on_signal(event: SignalEvent) {
    let base = BOX.load(Ordering::SeqCst);
    if base.is_null() {
        return;
    }
    match event {
        // Inside the program's handler for an earlier signal on this thread: that one is the
        // death.
        SignalEvent::Dying(c) if c.nested => {}
        SignalEvent::Dying(c) => mark_death(base, &c),
        SignalEvent::Survived(sig) => survived(base, sig),
        SignalEvent::Handled(sig) => handled(base, sig, crate::platform::clock::ticks()),
    }
}

/// SIGABRT came inside the program's handler for a fault on this thread: that fault is the
/// death, and an abort from a fault's handler is Rust's runtime on a stack overflow. Runs with
/// little alternate stack left: one frame, nothing else called.
fn on_abort_within() {
    let base = BOX.load(Ordering::SeqCst);
    if base.is_null() {
        return;
    }
    let first = field::<AtomicI32>(base, at::CRASH_SIGNAL).load(Ordering::SeqCst);
    if first == platform::SIGSEGV || first == platform::SIGBUS {
        field::<AtomicU32>(base, at::CRASH_KIND).store(mark::STACK_OVERFLOW, Ordering::SeqCst);
    }
}

/// The program's handler for `sig` returned and the process goes on: the mark, if this
/// thread's for `sig`, becomes a note that the program handled it.
#[inline(never)]
fn survived(base: *mut u8, sig: i32) {
    let signal = field::<AtomicI32>(base, at::CRASH_SIGNAL);
    let tid = platform::thread_id();
    if signal.load(Ordering::SeqCst) == sig
        && field::<AtomicI32>(base, at::CRASH_TID).load(Ordering::SeqCst) == tid
    {
        let when = field::<AtomicU64>(base, at::CRASH_TSC).load(Ordering::SeqCst);
        // The death's mark goes first: whoever sees the note sees the mark gone.
        signal.store(0, Ordering::SeqCst);
        field::<AtomicU32>(base, at::CRASH_KIND).store(0, Ordering::SeqCst);
        handled(base, sig, when);
    }
}

#[inline(never)]
fn mark_death(base: *mut u8, c: &Crash) {
    let overflow = (c.signal == platform::SIGSEGV || c.signal == platform::SIGBUS)
        && c.sp != 0
        && c.addr <= c.sp.saturating_add(NEAR_STACK_ABOVE)
        && c.addr >= c.sp.saturating_sub(NEAR_STACK_BELOW);
    // The signal last: a reader that sees it sees the rest.
    field::<AtomicI32>(base, at::CRASH_SIGNAL).store(0, Ordering::SeqCst);
    field::<AtomicU64>(base, at::CRASH_ADDR).store(c.addr, Ordering::SeqCst);
    field::<AtomicU64>(base, at::CRASH_TSC)
        .store(crate::platform::clock::ticks(), Ordering::SeqCst);
    field::<AtomicI32>(base, at::CRASH_TID).store(platform::thread_id(), Ordering::SeqCst);
    field::<AtomicI32>(base, at::CRASH_CODE).store(c.code, Ordering::SeqCst);
    field::<AtomicU32>(base, at::CRASH_KIND).store(
        if overflow { mark::STACK_OVERFLOW } else { 0 },
        Ordering::SeqCst,
    );
    field::<AtomicI32>(base, at::CRASH_SIGNAL).store(c.signal, Ordering::SeqCst);
}

#[inline(never)]
fn handled(base: *mut u8, sig: i32, when: u64) {
    field::<AtomicU64>(base, at::HANDLED_TSC).store(when, Ordering::SeqCst);
    field::<AtomicI32>(base, at::HANDLED_SIGNAL).store(sig, Ordering::SeqCst);
}

/// In a forked child: the parent's box notes the fork (the child and when: a parent that ends
/// right after, as `daemon()`'s does, is told by it), then is no longer marked by the child's
/// signals; the child's copy of its descriptor is closed (the lock stays the parent's alone)
/// and its view of the box becomes anonymous memory of the same size (zeroed slots: every
/// limit 0), so that stopping the parent's recording in the child touches nothing of the
/// parent's. Only async-signal-safe calls.
pub(super) fn after_fork() {
    let base = BOX.swap(std::ptr::null_mut(), Ordering::SeqCst);
    let len = MAPPING_LEN.load(Ordering::SeqCst);
    let fd = BOX_FD.swap(-1, Ordering::SeqCst);
    if fd >= 0 {
        platform::close(fd);
    }
    if base.is_null() || len == 0 {
        return;
    }
    field::<AtomicU64>(base, at::FORKED_TSC)
        .store(crate::platform::clock::ticks(), Ordering::SeqCst);
    field::<AtomicI32>(base, at::FORKED_CHILD).store(platform::pid(), Ordering::SeqCst);
    // SAFETY: `base` and `len` are the box's whole mapping: its pages become the child's own,
    // zeroed, at the same address, so every reference into the box stays valid and the
    // parent's file is no longer mapped in the child.
    unsafe { platform::replace_with_zeros(base, len) };
}
