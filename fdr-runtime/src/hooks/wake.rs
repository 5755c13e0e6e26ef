//! Wake-ups of instrumented tasks: when a task's waker is called, and by which thread, so that
//! its next poll can say how long the task waited, ready, to be polled.
//!
//! An [`Instrumented`](super::Instrumented) future polls its body with a waker of its own
//! instead of the executor's. While nothing has kept that waker, it is a borrowed one that
//! points at the poll's stack ([`PollWaker`]) and costs no allocation: a task whose futures are
//! ready at once never allocates. The first time a future keeps it (clones it, to wake the task
//! later) or wakes through it, the task's [`WakeCell`] is made: one allocation per task that
//! waits. From then on every poll hands out a waker of the cell, the same each time, so futures
//! that compare wakers (`Waker::will_wake`) keep theirs.
//!
//! A wake through the cell notes the time and the waking thread (the first wake since the last
//! poll), then wakes the executor's waker, which the cell keeps in a [`WakerSlot`] that each poll
//! updates. The next poll reads the note and records it (see the runtime's
//! `record::hot_path::record_woken`).

use std::cell::Cell;
use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{RawWaker, RawWakerVTable, Waker};

use crate::platform::{clock, host};
use crate::record::hot_path;
use crate::session;
use crate::tables::functions::FnDesc;

/// The executor's waker, kept for wakes from any thread and replaced by each poll.
///
/// Its one slot is written by whoever holds the state exclusively: a poll that registers
/// (`REGISTERING`) or a wake that takes the waker out (`WAKING`). A wake that comes while a poll
/// registers leaves its bit for the poll, which wakes the new waker itself when it is done.
pub(crate) struct WakerSlot {
    state: AtomicU8,
    waker: UnsafeCell<Option<Waker>>,
}

const IDLE: u8 = 0;
const REGISTERING: u8 = 1;
const WAKING: u8 = 2;

// SAFETY: `waker` is only touched by the thread that moved `state` from `IDLE` to
// `REGISTERING` (in `register`) or from `IDLE` to `WAKING` (in `wake`), which excludes every
// other access until it moves `state` back; the `Waker` inside is `Send` and `Sync`.
unsafe impl Sync for WakerSlot {}

impl WakerSlot {
    fn new(waker: Waker) -> WakerSlot {
        WakerSlot {
            state: AtomicU8::new(IDLE),
            waker: UnsafeCell::new(Some(waker)),
        }
    }

    /// Makes `waker` the one a later [`WakerSlot::wake`] wakes.
    fn register(&self, waker: &Waker) {
        match self
            .state
            .compare_exchange(IDLE, REGISTERING, Ordering::Acquire, Ordering::Acquire)
        {
            Ok(_) => {
                // SAFETY: `REGISTERING` is ours (see the `Sync` impl): no other access to the slot.
                let slot = unsafe { &mut *self.waker.get() };
                if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
                    *slot = Some(waker.clone());
                }
                if self
                    .state
                    .compare_exchange(REGISTERING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    // A wake came meanwhile (it set `WAKING` and left): ours to deliver.
                    // SAFETY: the state is still `REGISTERING | WAKING`, which no one else
                    // touches the slot in.
                    let taken = unsafe { (*self.waker.get()).take() };
                    self.state.store(IDLE, Ordering::Release);
                    if let Some(w) = taken {
                        w.wake();
                    }
                }
            }
            // A wake is delivering the old waker: the task is woken, but through the new waker
            // the executor may be waiting on, so wake that one too.
            Err(_) => waker.wake_by_ref(),
        }
    }

    /// Wakes the waker registered last, if any (it is taken: the next poll registers again).
    fn wake(&self) {
        if self.state.fetch_or(WAKING, Ordering::AcqRel) != IDLE {
            // A poll is registering (it delivers this wake when it is done) or another wake is
            // delivering.
            return;
        }
        // SAFETY: we moved the state from `IDLE` to `WAKING`: the slot is ours.
        let taken = unsafe { (*self.waker.get()).take() };
        self.state.fetch_and(!WAKING, Ordering::Release);
        if let Some(w) = taken {
            w.wake();
        }
    }
}

/// What a task's wakers share: the executor's waker and the note of the first wake since the
/// task's last poll.
pub(crate) struct WakeCell {
    /// When it was woken (clock ticks; 0: not since the last poll).
    woken_at: AtomicU64,
    /// The thread that woke it.
    waker_tid: AtomicI32,
    slot: WakerSlot,
}

impl WakeCell {
    /// Notes a wake-up (the first since the last poll), then wakes the executor's waker.
    fn wake(&self) {
        self.note();
        self.slot.wake();
    }

    fn note(&self) {
        // A recording runs (the note is only read by a poll that records, which made the cell;
        // one that ended since would not read it).
        if self.woken_at.load(Ordering::Relaxed) != 0 || session::epoch() == 0 {
            return;
        }
        let now = clock::now().0.max(1);
        if self
            .woken_at
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            self.waker_tid.store(this_thread(), Ordering::Relaxed);
        }
    }

    /// A poll of `f` began (its entry just recorded) with `executor`'s waker: records the wake-up
    /// noted since the last poll, if any, and takes the waker in. Out of line: only tasks that
    /// waited have a cell.
    #[inline(never)]
    fn polled(&self, f: &'static FnDesc, executor: &Waker) {
        if self.woken_at.load(Ordering::Relaxed) != 0 {
            let tid = self.waker_tid.load(Ordering::Relaxed);
            let at = self.woken_at.swap(0, Ordering::Relaxed);
            if at != 0 {
                hot_path::record_woken(f, at, tid);
            }
        }
        self.slot.register(executor);
    }
}

/// The calling thread's id, asked of the system once per thread.
fn this_thread() -> i32 {
    thread_local! {
        static TID: Cell<i32> = const { Cell::new(0) };
    }
    TID.with(|t| {
        if t.get() == 0 {
            t.set(host::thread_id());
        }
        t.get()
    })
}

/// A task's wake state: its [`WakeCell`], made the first time one of its futures keeps a waker
/// or wakes through one (null until then).
pub(crate) struct TaskWaker {
    cell: AtomicPtr<WakeCell>,
}

impl TaskWaker {
    pub(crate) const fn new() -> TaskWaker {
        TaskWaker {
            cell: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The cell's pointer, as `Arc::into_raw` gave it (a waker's data must keep its provenance
    /// over the whole allocation, counts included), made now if it was not, its slot holding
    /// `executor`'s waker.
    fn made(&self, executor: &Waker) -> *const WakeCell {
        let p = self.cell.load(Ordering::Acquire);
        if !p.is_null() {
            return p;
        }
        let fresh = Arc::into_raw(Arc::new(WakeCell {
            woken_at: AtomicU64::new(0),
            waker_tid: AtomicI32::new(0),
            slot: WakerSlot::new(executor.clone()),
        })) as *mut WakeCell;
        match self.cell.compare_exchange(
            std::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => fresh,
            Err(theirs) => {
                // Another thread holding this poll's waker made one first: ours goes.
                // SAFETY: `fresh` came from `Arc::into_raw` above and was never shared.
                drop(unsafe { Arc::from_raw(fresh) });
                theirs
            }
        }
    }

    /// The waker to poll the task's body with, for one poll whose executor's waker is
    /// `executor`, and whose state `on_stack` (uninitialised, on the poll's stack) holds while
    /// the poll runs. With a cell, the cell's waker (the same at every poll), after the cell
    /// took `executor` in; without, one that makes the cell if a future keeps it.
    ///
    /// # Safety
    ///
    /// The waker must be dropped (it is `ManuallyDrop`: forgotten) before `self`, `executor` or
    /// `on_stack` move or die: use it only for the poll.
    ///
    /// With a cell, first records the wake-up noted since the last poll, if any, for `f`, whose
    /// poll's entry was just recorded.
    #[inline(always)]
    pub(crate) unsafe fn for_poll<'a>(
        &'a self,
        f: &'static FnDesc,
        executor: &'a Waker,
        on_stack: &'a mut std::mem::MaybeUninit<PollWaker<'a>>,
    ) -> ManuallyDrop<Waker> {
        let p = self.cell.load(Ordering::Acquire);
        let raw = if !p.is_null() {
            // SAFETY: a non-null pointer came from `Arc::into_raw` in `made`, and this
            // `TaskWaker` holds that count until it drops: the cell lives as long as `self`.
            unsafe { &*p }.polled(f, executor);
            RawWaker::new(p as *const (), &CELL)
        } else {
            let pw = on_stack.write(PollWaker {
                task: self,
                executor,
            });
            RawWaker::new(pw as *const PollWaker<'_> as *const (), &BORROWED)
        };
        // SAFETY: each vtable's functions uphold `RawWaker`'s contract for its data (see them);
        // the borrowed forms are only used while the poll runs (this function's contract), and
        // the waker is never dropped through `ManuallyDrop` (which would release a count it does
        // not own).
        ManuallyDrop::new(unsafe { Waker::from_raw(raw) })
    }

    /// A poll whose body gets `executor`'s waker itself, not one of the task's (the budget
    /// stopped noting the function's wake-ups): a cell made earlier still delivers the wakes of
    /// the futures that kept its waker, so it takes `executor` in as a wrapped poll's would,
    /// and forgets the wake it noted, which no poll records now (recorded later, it would date
    /// a wait that is over).
    #[inline]
    pub(crate) fn unnoted(&self, executor: &Waker) {
        let p = self.cell.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: as in `for_poll`: the cell lives as long as `self`.
            let cell = unsafe { &*p };
            if cell.woken_at.load(Ordering::Relaxed) != 0 {
                cell.woken_at.store(0, Ordering::Relaxed);
            }
            cell.slot.register(executor);
        }
    }
}

impl Drop for TaskWaker {
    /// Inlined: a task of a function never recorded (the usual case in a program compiled with
    /// fdr and idle) has no cell, and its future's drop costs this test.
    #[inline]
    fn drop(&mut self) {
        let p = *self.cell.get_mut();
        if !p.is_null() {
            release(p);
        }
    }
}

/// Releases the count of a task's cell that [`TaskWaker::made`] stored.
#[inline(never)]
fn release(p: *mut WakeCell) {
    // SAFETY: `p` is the count `made` stored with `Arc::into_raw`, which `TaskWaker::drop`, the
    // one caller, releases once, here.
    drop(unsafe { Arc::from_raw(p) });
}

/// The state of a poll's waker while the task has no cell.
pub(crate) struct PollWaker<'a> {
    task: &'a TaskWaker,
    executor: &'a Waker,
}

/// A poll's waker without a cell: its data is a `PollWaker` on the poll's stack, alive while the
/// poll runs, when alone this waker can be used (it is lent, never given: a future that keeps
/// it clones it, and the clone is a cell's).
static BORROWED: RawWakerVTable =
    RawWakerVTable::new(borrowed_clone, borrowed_wake, borrowed_wake, borrowed_drop);

/// A cell's waker: its data is an `Arc<WakeCell>`'s pointer, and an owned waker holds one count.
/// The waker a poll lends with a cell has the same data and owns no count (it is never dropped).
static CELL: RawWakerVTable =
    RawWakerVTable::new(cell_clone, cell_wake, cell_wake_by_ref, cell_drop);

unsafe fn borrowed_clone(data: *const ()) -> RawWaker {
    // SAFETY: a borrowed waker's data is a live `PollWaker` (see `BORROWED`).
    let pw = unsafe { &*(data as *const PollWaker<'_>) };
    let cell = pw.task.made(pw.executor);
    // SAFETY: the cell lives (its task holds a count); the new waker owns the count added here.
    unsafe { Arc::increment_strong_count(cell) };
    RawWaker::new(cell as *const (), &CELL)
}

unsafe fn borrowed_wake(data: *const ()) {
    // SAFETY: as in `borrowed_clone`.
    let pw = unsafe { &*(data as *const PollWaker<'_>) };
    // The note needs a cell to outlive the poll; the executor's waker is woken directly.
    // SAFETY: `made` gives a live cell (its task holds a count).
    unsafe { &*pw.task.made(pw.executor) }.note();
    pw.executor.wake_by_ref();
}

unsafe fn borrowed_drop(_: *const ()) {}

unsafe fn cell_clone(data: *const ()) -> RawWaker {
    // SAFETY: a cell waker's data is a live `Arc<WakeCell>` (the waker cloned holds a count, or
    // the task does for a lent one); the clone owns the count added here.
    unsafe { Arc::increment_strong_count(data as *const WakeCell) };
    RawWaker::new(data, &CELL)
}

unsafe fn cell_wake(data: *const ()) {
    // SAFETY: waking by value consumes the waker's count: taken back here, released after.
    let cell = unsafe { Arc::from_raw(data as *const WakeCell) };
    cell.wake();
}

unsafe fn cell_wake_by_ref(data: *const ()) {
    // SAFETY: the waker holds (or its task does) a count: the cell lives.
    unsafe { &*(data as *const WakeCell) }.wake();
}

unsafe fn cell_drop(data: *const ()) {
    // SAFETY: an owned cell waker holds one count, released once, here.
    drop(unsafe { Arc::from_raw(data as *const WakeCell) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    /// An executor's waker that counts its wakes.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting() -> (Arc<Counting>, Waker) {
        let c = Arc::new(Counting::default());
        (Arc::clone(&c), Waker::from(c))
    }

    #[test]
    fn a_wake_racing_a_new_registration_is_never_lost() {
        // Whichever wins, the wake reaches the old waker or the new one (or both).
        let rounds = if cfg!(miri) { 20 } else { 2000 };
        for _ in 0..rounds {
            let (old, old_waker) = counting();
            let (new, new_waker) = counting();
            let slot = Arc::new(WakerSlot::new(old_waker));
            let waking = {
                let slot = Arc::clone(&slot);
                std::thread::spawn(move || slot.wake())
            };
            slot.register(&new_waker);
            waking.join().unwrap();
            let delivered = old.0.load(Ordering::SeqCst) + new.0.load(Ordering::SeqCst);
            assert!(delivered >= 1, "a wake was lost");
        }
    }

    #[test]
    fn a_registered_waker_is_woken_once_and_then_taken() {
        let (c, w) = counting();
        let (_, first) = counting();
        let slot = WakerSlot::new(first);
        slot.register(&w);
        slot.wake();
        slot.wake();
        assert_eq!(
            c.0.load(Ordering::SeqCst),
            1,
            "the second wake finds it taken"
        );
        // Registering the same waker again keeps the clone it has.
        slot.register(&w);
        slot.register(&w);
        slot.wake();
        assert_eq!(c.0.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_kept_waker_is_the_cell_s_and_outlives_the_poll() {
        // No recording starts meanwhile: the wake below notes nothing.
        let _turn = crate::testing::exclusive();
        static F: FnDesc =
            FnDesc::new("wake::task", "src/wake.rs", 1, crate::FnKindTag::Async, &[]);
        let (c, executor) = counting();
        let task = TaskWaker::new();
        let kept = {
            let mut on_stack = std::mem::MaybeUninit::uninit();
            // SAFETY: the lent waker is dropped at the end of this block.
            let lent = unsafe { task.for_poll(&F, &executor, &mut on_stack) };
            assert!(
                task.cell.load(Ordering::SeqCst).is_null(),
                "no cell until a future keeps a waker"
            );
            (*lent).clone()
        };
        assert!(!task.cell.load(Ordering::SeqCst).is_null());
        // The next poll lends the cell's waker, which the kept one will-wakes.
        let mut on_stack = std::mem::MaybeUninit::uninit();
        // SAFETY: `lent` is not used past this test's scope, where `task` and `executor` live.
        let lent = unsafe { task.for_poll(&F, &executor, &mut on_stack) };
        assert!(kept.will_wake(&lent));
        kept.wake();
        assert_eq!(
            c.0.load(Ordering::SeqCst),
            1,
            "the executor's waker is woken"
        );
    }

    #[test]
    fn a_wake_noted_while_wake_ups_go_unnoted_is_forgotten_and_still_delivered() {
        // No recording starts meanwhile (a wake notes nothing without one: the note below is
        // set by hand, as a wake during a recording sets it).
        let _turn = crate::testing::exclusive();
        static F: FnDesc = FnDesc::new(
            "wake::unnoted",
            "src/wake.rs",
            1,
            crate::FnKindTag::Async,
            &[],
        );
        let (first, executor) = counting();
        let (second, moved) = counting();
        let task = TaskWaker::new();
        // A future keeps the task's waker at a poll whose wake-ups were noted.
        let kept = {
            let mut on_stack = std::mem::MaybeUninit::uninit();
            // SAFETY: the lent waker is dropped at the end of this block.
            let lent = unsafe { task.for_poll(&F, &executor, &mut on_stack) };
            (*lent).clone()
        };
        // SAFETY: the cell lives as long as `task`.
        let cell = unsafe { &*task.cell.load(Ordering::SeqCst) };
        kept.wake_by_ref();
        assert_eq!(first.0.load(Ordering::SeqCst), 1);
        cell.woken_at.store(77, Ordering::SeqCst);
        // The budget stops noting its wake-ups; the next poll comes with another waker (the
        // task moved): the note is forgotten (no poll will record it), the new waker taken in.
        task.unnoted(&moved);
        assert_eq!(cell.woken_at.load(Ordering::SeqCst), 0, "forgotten");
        kept.wake();
        assert_eq!(
            second.0.load(Ordering::SeqCst),
            1,
            "the kept waker still wakes the task, through the waker it has now"
        );
    }
}
