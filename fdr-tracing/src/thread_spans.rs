//! What each thread knows of spans: the spans it is in, innermost last, each with the guard
//! that records its exit; the spans it made that were not entered yet, which tell a span's
//! first entry right after it was made (a call, if it is closed without another) from an entry
//! again or elsewhere (a task, see `Callsite::spans_are_tasks`); and, for the layer, the
//! callsite of each such span, which of the spans it is in keep nothing in the registry, and
//! the last such span it exited, so that the usual span (made, entered, exited and closed on
//! one thread, at any depth) costs the layer no registry look-up.
//!
//! Why an id remembered here cannot name another span: `tracing-subscriber`'s registry (like
//! the standalone subscriber's slab) gives a freed slot back only to the thread whose shard it
//! is, with a new generation in the id, and each span that thread makes goes through [`made`]
//! or [`made_plain`], which push the oldest memo out; an id's slot would have to come back to
//! the same generation (thousands of reuses) within the last [`FRESH`] spans the thread made.
//! The last plain span exited is forgotten at the next exit or close on the thread, and a span
//! the layer remembers as plain was made on this thread.

use std::cell::{Cell, RefCell};

use fdr_runtime::CallGuard;

use crate::callsites::Callsite;

/// Spans made and not entered yet that a thread remembers; an older one entered later counts
/// as entered elsewhere, which only makes its callsite's spans tasks.
const FRESH: usize = 8;

/// A ring of span ids, with a word beside each: cells, so that a look-up reads them in place
/// rather than copying the ring out and back.
struct Ring {
    ids: [Cell<u64>; FRESH],
    memo: [Cell<u16>; FRESH],
    next: Cell<usize>,
}

impl Ring {
    const fn new() -> Ring {
        Ring {
            ids: [const { Cell::new(0) }; FRESH],
            memo: [const { Cell::new(0) }; FRESH],
            next: Cell::new(0),
        }
    }

    fn push(&self, id: u64, memo: u16) {
        let next = self.next.get();
        self.ids[next % FRESH].set(id);
        self.memo[next % FRESH].set(memo);
        self.next.set(next.wrapping_add(1));
    }

    /// Forgets `id`; its memo if it was there. Newest first: a span is usually entered right
    /// after it is made, and closed right after it is exited.
    fn take(&self, id: u64) -> Option<u16> {
        let next = self.next.get();
        for k in 1..=FRESH {
            let at = next.wrapping_sub(k) % FRESH;
            if self.ids[at].get() == id {
                self.ids[at].set(0);
                return Some(self.memo[at].get());
            }
        }
        None
    }
}

/// A span this thread is in: its id, whether it keeps nothing in the registry (the layer's,
/// first entered here), the trace it joined (see [`join_trace`]) and its call. Fields drop in
/// order: the trace's marker call ends inside the span's call.
struct Inside {
    id: u64,
    plain: bool,
    _trace: Option<fdr_runtime::TraceScope>,
    _guard: Option<CallGuard>,
}

thread_local! {
    static ENTERED: RefCell<Vec<Inside>> = const { RefCell::new(Vec::new()) };
    /// Spans made here and not entered yet; the memo is the callsite's index plus one when the
    /// span keeps nothing in the registry (the layer's), else 0.
    static MADE: Ring = const { Ring::new() };
    /// The last span exited here if it keeps nothing in the registry and nothing was exited or
    /// closed here since (0: none): a span is usually closed right after its exit.
    static EXITED_PLAIN: Cell<u64> = const { Cell::new(0) };
}

/// Span `id` was made on this thread (the subscriber's).
#[inline]
pub(crate) fn made(id: u64) {
    let _ = MADE.try_with(|m| m.push(id, 0));
}

/// Span `id` was made on this thread; `plain` is its callsite when it keeps nothing in the
/// registry (no task, no fields).
#[inline]
pub(crate) fn made_plain(id: u64, plain: Option<Callsite>) {
    // No older memo of this id to forget (see the module's documentation), but the last plain
    // span exited may have had it and been closed elsewhere.
    let _ = EXITED_PLAIN.try_with(|e| {
        if e.get() == id {
            e.set(0)
        }
    });
    let _ = MADE.try_with(|m| m.push(id, plain.map_or(0, |c| c.index() + 1)));
}

/// Whether span `id` was made on this thread and not entered since (it is forgotten).
#[inline]
pub(crate) fn first_entry(id: u64) -> bool {
    MADE.try_with(|m| m.take(id).is_some()).unwrap_or(false)
}

/// The first entry of a span of the layer on the thread that made it: `Some(Some(callsite))`
/// for a span that keeps nothing in the registry (to enter with [`entered_plain`]), `Some(None)`
/// for one that keeps something, `None` if it is not a first entry here.
#[inline]
pub(crate) fn first_entry_plain(id: u64) -> Option<Option<Callsite>> {
    let memo = MADE.try_with(|m| m.take(id)).ok().flatten()?;
    Some(memo.checked_sub(1).and_then(Callsite::from_index))
}

/// Span `id` of the layer closed: true if it keeps nothing in the registry and is the span this
/// thread exited last, entered with [`entered_plain`] (nothing to look up). Otherwise the layer
/// looks the span up, which is always right.
#[inline]
pub(crate) fn closed_plain(id: u64) -> bool {
    // Entered, so no longer among the spans made and not entered.
    if EXITED_PLAIN
        .try_with(|e| e.replace(0) == id)
        .unwrap_or(false)
    {
        return true;
    }
    closed(id);
    false
}

/// Span `id` closed: an id made again later is another span.
#[inline]
pub(crate) fn closed(id: u64) {
    let _ = MADE.try_with(|m| m.take(id));
}

/// This thread entered span `id`; `guard` records its exit (`None`: a span not recorded, kept so
/// that the current span is right).
#[inline]
pub(crate) fn entered(id: u64, guard: Option<CallGuard>) {
    enter(id, false, guard);
}

/// This thread entered span `id` of the layer, made here and keeping nothing in the registry,
/// for the first time: its close needs no look-up if it follows the exit (see [`closed_plain`]).
#[inline]
pub(crate) fn entered_plain(id: u64, guard: CallGuard) {
    enter(id, true, Some(guard));
}

#[inline]
fn enter(id: u64, plain: bool, guard: Option<CallGuard>) {
    // A thread's stack of spans outlives it by its destructors at most: then nothing is
    // recorded, which is what a thread that is gone records.
    let _ = ENTERED.try_with(|e| {
        e.borrow_mut().push(Inside {
            id,
            plain,
            _trace: None,
            _guard: guard,
        })
    });
}

/// The span this thread just entered carries a W3C `traceparent`: until it is exited, the calls
/// made here run inside that trace (`fdr_runtime::join_trace`).
pub(crate) fn join_trace(traceparent: &str) {
    let scope = fdr_runtime::join_trace(traceparent);
    let _ = ENTERED.try_with(|e| {
        if let Some(top) = e.borrow_mut().last_mut() {
            top._trace = Some(scope);
        }
    });
}

/// This thread left span `id`.
#[inline]
pub(crate) fn exited(id: u64) {
    let _ = ENTERED.try_with(|e| {
        let mut e = e.borrow_mut();
        // Spans are exited in the reverse order of their entries; one exited out of order
        // closes the spans entered after it first, as an unwinding frame would.
        let mut plain = false;
        if let Some(at) = e.iter().rposition(|s| s.id == id) {
            plain = e[at].plain;
            while e.len() > at {
                let top = e.pop();
                drop(top);
            }
        }
        let _ = EXITED_PLAIN.try_with(|x| x.set(if plain { id } else { 0 }));
    });
}

/// The innermost span this thread is in.
#[inline]
pub(crate) fn current() -> Option<u64> {
    ENTERED
        .try_with(|e| e.borrow().last().map(|s| s.id))
        .ok()
        .flatten()
}
