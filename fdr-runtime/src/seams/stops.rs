//! Points where a unit test stops a thread in the middle of an operation, to drive an
//! interleaving with another thread exactly (see `buffers::copy`'s tests). Compiled for this
//! crate's unit tests only: the recording path has no such call otherwise.

use std::cell::RefCell;
use std::thread::LocalKey;

type Hook = RefCell<Option<Box<dyn FnOnce()>>>;

thread_local! {
    /// Between an undo's two stores (`RecordWriter::publish_undo`).
    pub(crate) static UNDO_MIDWAY: Hook = const { RefCell::new(None) };
    /// In a buffer's copy, once it read the slot's count and lengths (`buffers::copy`).
    pub(crate) static COPY_LOADED: Hook = const { RefCell::new(None) };
}

/// Runs `f` the next time this thread passes `point`.
pub(crate) fn at(point: &'static LocalKey<Hook>, f: impl FnOnce() + 'static) {
    point.with(|h| *h.borrow_mut() = Some(Box::new(f)));
}

/// This thread passes `point`.
pub(crate) fn pass(point: &'static LocalKey<Hook>) {
    if let Some(f) = point.with(|h| h.borrow_mut().take()) {
        f();
    }
}
