//! What each thread knows of spans: the spans it is in, innermost last, each with the guard
//! that records its exit; and the spans it made that were not entered yet, which tell a span
//! entered once right after it was made (a call) from one entered again or elsewhere (a task,
//! see `Callsite::tasks`).

use std::cell::{Cell, RefCell};

use fdr_runtime::CallGuard;

/// Spans made and not entered yet that a thread remembers; an older one entered later counts
/// as entered elsewhere, which only makes its callsite's spans tasks.
const FRESH: usize = 8;

/// The spans a thread made and did not enter yet, in a ring: cells, so that a look-up reads
/// the ids in place rather than copying the ring out and back.
struct Made {
    ids: [Cell<u64>; FRESH],
    next: Cell<usize>,
}

thread_local! {
    static ENTERED: RefCell<Vec<(u64, Option<CallGuard>)>> = const { RefCell::new(Vec::new()) };
    static MADE: Made = const {
        Made {
            ids: [const { Cell::new(0) }; FRESH],
            next: Cell::new(0),
        }
    };
}

/// Span `id` was made on this thread.
#[inline]
pub(crate) fn made(id: u64) {
    let _ = MADE.try_with(|m| {
        let next = m.next.get();
        m.ids[next % FRESH].set(id);
        m.next.set(next.wrapping_add(1));
    });
}

/// Whether span `id` was made on this thread and not entered since (it is forgotten).
#[inline]
pub(crate) fn first_entry(id: u64) -> bool {
    MADE.try_with(|m| {
        let next = m.next.get();
        // Newest first: a span is usually entered right after it is made.
        for k in 1..=FRESH {
            let at = &m.ids[next.wrapping_sub(k) % FRESH];
            if at.get() == id {
                at.set(0);
                return true;
            }
        }
        false
    })
    .unwrap_or(false)
}

/// Span `id` closed: an id made again later is another span.
#[inline]
pub(crate) fn closed(id: u64) {
    let _ = MADE.try_with(|m| {
        if let Some(at) = m.ids.iter().find(|x| x.get() == id) {
            at.set(0);
        }
    });
}

/// This thread entered span `id`; `guard` records its exit (`None`: a span not recorded, kept so
/// that the current span is right).
#[inline]
pub(crate) fn entered(id: u64, guard: Option<CallGuard>) {
    // A thread's stack of spans outlives it by its destructors at most: then nothing is
    // recorded, which is what a thread that is gone records.
    let _ = ENTERED.try_with(|e| e.borrow_mut().push((id, guard)));
}

/// This thread left span `id`.
#[inline]
pub(crate) fn exited(id: u64) {
    let _ = ENTERED.try_with(|e| {
        let mut e = e.borrow_mut();
        // Spans are exited in the reverse order of their entries; one exited out of order
        // closes the spans entered after it first, as an unwinding frame would.
        if let Some(at) = e.iter().rposition(|(x, _)| *x == id) {
            while e.len() > at {
                let top = e.pop();
                drop(top);
            }
        }
    });
}

/// The innermost span this thread is in.
#[inline]
pub(crate) fn current() -> Option<u64> {
    ENTERED
        .try_with(|e| e.borrow().last().map(|(id, _)| *id))
        .ok()
        .flatten()
}
