//! `puffin` with `profile_function!`, scopes on, each batch inside one frame scope and a new
//! frame after it. The one sink only counts the scopes of each finished frame, to show that
//! they were recorded, and drops the frame.
//!
//! Without the enclosing scope puffin hands every top-level leaf call to its global profiler
//! under a mutex; a frame scope is how puffin is meant to be used and the cheaper setup.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use super::batched;
use crate::workload::body;

static SCOPES: AtomicU64 = AtomicU64::new(0);

/// Turns puffin's scopes on and attaches the counting sink (once per process).
pub fn setup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        puffin::GlobalProfiler::lock().add_sink(Box::new(|frame| {
            SCOPES.fetch_add(frame.meta().num_scopes as u64, Ordering::Relaxed);
        }));
        puffin::set_scopes_on(true);
    });
}

/// Scopes in the frames puffin has finished so far (leaf calls plus one frame scope per batch).
pub fn scopes_recorded() -> u64 {
    SCOPES.load(Ordering::Relaxed)
}

/// The leaf under `profile_function!`.
#[inline(never)]
pub fn leaf(x: u64) -> u64 {
    puffin::profile_function!();
    body(x)
}

/// `n` calls of [`leaf`], [`BATCH`](super::BATCH) per frame.
///
/// ```
/// use fdr_benches::peers::puffin_frames::{run, scopes_recorded, setup};
/// setup();
/// assert_eq!(run(2), 2_654_435_761 + 2);
/// run(2500);
/// // 2 + 2500 leaf scopes and one frame scope per batch of at most 1000 calls.
/// assert_eq!(scopes_recorded(), 2 + 1 + 2500 + 3);
/// ```
#[inline(never)]
pub fn run(n: u64) -> u64 {
    batched(n, |start, len| {
        let acc = {
            puffin::profile_scope!("frame");
            crate::workload::drive(len, |i| leaf(start + i))
        };
        puffin::GlobalProfiler::lock().new_frame();
        acc
    })
}
