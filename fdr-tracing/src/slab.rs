//! The standalone subscriber's spans: slots in pages allocated as spans are made, never freed,
//! reused through a per-thread cache of free slots. A span's id is its slot and the slot's
//! generation, so an id kept past its span's close finds a newer generation and is ignored:
//! every field is an atomic, so a stale id reads a value, never undefined memory.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::callsites::MAX_FIELDS;

/// Slots per page.
const PAGE: usize = 1024;
/// Pages at most: spans alive at once past `PAGE * PAGES` are not recorded.
const PAGES: usize = 4096;
/// Free slots a thread keeps before it gives half back.
const CACHE: usize = 256;

/// One span.
#[derive(Default)]
pub(crate) struct Slot {
    gen: AtomicU32,
    refs: AtomicU32,
    /// The callsite's index.
    pub(crate) callsite: AtomicU32,
    /// The task, when `has_task`.
    pub(crate) task: AtomicU64,
    pub(crate) has_task: AtomicBool,
    /// Entered for the first time on the thread that made it while its callsite's spans had
    /// shown nothing (see `Callsite::unknown`): closed without another entry, it teaches the
    /// callsite that its spans are calls.
    pub(crate) once: AtomicBool,
    /// Field values until the first entry takes them: `fields` many (`NO_FIELDS`: taken).
    pub(crate) fields: [AtomicU64; MAX_FIELDS],
    pub(crate) nfields: AtomicU8,
}

/// `nfields` once the first entry took the values (or there were none to take).
pub(crate) const NO_FIELDS: u8 = u8::MAX;

static PAGES_: [OnceLock<Box<[Slot]>>; PAGES] = [const { OnceLock::new() }; PAGES];
/// Slots never used yet start here.
static NEXT: AtomicU32 = AtomicU32::new(0);
/// Free slots given back by threads (and by threads that ended).
static FREE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// A thread's free slots; given back when the thread ends.
struct Cache(Vec<u32>);

impl Drop for Cache {
    fn drop(&mut self) {
        FREE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .append(&mut self.0);
    }
}

thread_local! {
    static FREE_HERE: RefCell<Cache> = const { RefCell::new(Cache(Vec::new())) };
}

fn slot(index: u32) -> Option<&'static Slot> {
    let i = index as usize;
    let page = PAGES_.get(i / PAGE)?.get()?;
    Some(&page[i % PAGE])
}

fn slot_or_page(index: u32) -> Option<&'static Slot> {
    let i = index as usize;
    let page = PAGES_.get(i / PAGE)?;
    let page = page.get_or_init(|| (0..PAGE).map(|_| Slot::default()).collect());
    Some(&page[i % PAGE])
}

/// A new span's slot (one reference) and its id; `None` when every slot is in use.
pub(crate) fn alloc() -> Option<(u64, &'static Slot)> {
    let index = FREE_HERE
        .try_with(|c| c.borrow_mut().0.pop())
        .ok()
        .flatten()
        .or_else(refill)?;
    let s = slot_or_page(index)?;
    s.refs.store(1, Ordering::Relaxed);
    let gen = s.gen.load(Ordering::Relaxed);
    Some(((u64::from(gen) << 32) | (u64::from(index) + 1), s))
}

#[cold]
fn refill() -> Option<u32> {
    let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = free.pop() {
        let take = free.len().min(CACHE / 2);
        let at = free.len() - take;
        let batch: Vec<u32> = free.drain(at..).collect();
        drop(free);
        let _ = FREE_HERE.try_with(|c| c.borrow_mut().0.extend(batch));
        return Some(i);
    }
    drop(free);
    let i = NEXT.fetch_add(1, Ordering::Relaxed);
    if (i as usize) < PAGE * PAGES {
        Some(i)
    } else {
        NEXT.store((PAGE * PAGES) as u32, Ordering::Relaxed);
        None
    }
}

/// The live span of `id`.
#[inline]
pub(crate) fn get(id: u64) -> Option<&'static Slot> {
    let index = ((id & 0xFFFF_FFFF) as u32).checked_sub(1)?;
    let s = slot(index)?;
    (s.gen.load(Ordering::Acquire) == (id >> 32) as u32 && s.refs.load(Ordering::Relaxed) != 0)
        .then_some(s)
}

/// One more reference to the span of `id`.
pub(crate) fn clone_ref(id: u64) {
    if let Some(s) = get(id) {
        s.refs.fetch_add(1, Ordering::Relaxed);
    }
}

/// One reference fewer; the slot if that was the last (the span is closed: call [`free`] once
/// its close is recorded).
pub(crate) fn drop_ref(id: u64) -> Option<&'static Slot> {
    let s = get(id)?;
    // A caller holding the only reference is the only one that may clone it: nobody can add
    // one between the load and the store, and a span made, entered and closed on one thread
    // (most spans) pays no atomic read-modify-write here.
    if s.refs.load(Ordering::Acquire) == 1 {
        s.refs.store(0, Ordering::Relaxed);
        return Some(s);
    }
    (s.refs.fetch_sub(1, Ordering::AcqRel) == 1).then_some(s)
}

/// Gives the slot of closed span `id` back.
pub(crate) fn free(id: u64) {
    let index = ((id & 0xFFFF_FFFF) as u32).wrapping_sub(1);
    let Some(s) = slot(index) else {
        return;
    };
    s.has_task.store(false, Ordering::Relaxed);
    s.once.store(false, Ordering::Relaxed);
    // A stale id reads a newer generation from here on. Only the caller that dropped the last
    // reference frees a slot, so the generation has one writer: a plain store.
    let gen = s.gen.load(Ordering::Relaxed);
    s.gen.store(gen.wrapping_add(1), Ordering::Release);
    let spill = FREE_HERE.try_with(|c| {
        let mut c = c.borrow_mut();
        c.0.push(index);
        (c.0.len() > CACHE).then(|| c.0.split_off(CACHE / 2))
    });
    match spill {
        Ok(Some(mut back)) => FREE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .append(&mut back),
        Ok(None) => {}
        Err(_) => FREE.lock().unwrap_or_else(|e| e.into_inner()).push(index),
    }
}
