//! Span callsites to descriptors. fdr's function ids are places in a table the linker builds,
//! so a span callsite, only known when it registers, claims one of [`SPARES`] descriptors kept
//! for it in that table and names it `target::name`; a hook then finds the callsite's
//! descriptor in a fixed table keyed by the callsite's address: no lock, no allocation, no
//! string per span.

use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use fdr_runtime::{FnDesc, FnKindTag};
use tracing_core::Metadata;

/// Span callsites a program can have recorded; spans of the ones past it are not recorded
/// ([`dropped_callsites`] counts them).
pub const SPARES: usize = 1024;

/// The names the claimed descriptors go by.
static NAMES: [OnceLock<&'static str>; SPARES] = [const { OnceLock::new() }; SPARES];

/// The name of spare `K`: empty while unclaimed, which leaves it out of the log's table.
fn name<const K: usize>() -> &'static str {
    NAMES[K].get().copied().unwrap_or("")
}

include!(concat!(env!("OUT_DIR"), "/spares.rs"));

/// Open addressing, four places per spare so that probes stay short.
const CAP: usize = 4 * SPARES;
/// Callsite addresses (0: empty).
static KEYS: [AtomicUsize; CAP] = [const { AtomicUsize::new(0) }; CAP];
/// The slot of the callsite at the same place, plus one.
static SLOT: [AtomicU16; CAP] = [const { AtomicU16::new(0) }; CAP];
/// Slots claimed.
static CLAIMED: AtomicUsize = AtomicUsize::new(0);
/// Callsites past [`SPARES`].
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Registration is rare and may race; one at a time.
static REGISTERING: Mutex<()> = Mutex::new(());

fn home(key: usize) -> usize {
    // Metadata are statics at least 8-aligned: drop the low bits, mix the rest.
    ((key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) % CAP
}

/// The descriptor of a span callsite, claiming one the first time.
pub(crate) fn register(meta: &'static Metadata<'static>) -> Option<&'static FnDesc> {
    if let Some(f) = desc(meta) {
        return Some(f);
    }
    let _one = REGISTERING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = desc(meta) {
        return Some(f);
    }
    let slot = CLAIMED.load(Ordering::Relaxed);
    if slot >= SPARES {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    CLAIMED.store(slot + 1, Ordering::Relaxed);
    let name: &'static str =
        Box::leak(format!("{}::{}", meta.target(), meta.name()).into_boxed_str());
    let _ = NAMES[slot].set(name);
    let key = meta as *const Metadata<'static> as usize;
    let mut i = home(key);
    while KEYS[i].load(Ordering::Relaxed) != 0 {
        i = (i + 1) % CAP;
    }
    // The slot before the key: a reader that finds the key finds its slot.
    SLOT[i].store(slot as u16 + 1, Ordering::Release);
    KEYS[i].store(key, Ordering::Release);
    // A recording already running arms it if a trigger pattern names it.
    fdr_runtime::hooks::named(SLOTS[slot]);
    Some(SLOTS[slot])
}

/// The descriptor of a registered span callsite.
#[inline]
pub(crate) fn desc(meta: &'static Metadata<'static>) -> Option<&'static FnDesc> {
    let key = meta as *const Metadata<'static> as usize;
    let mut i = home(key);
    loop {
        match KEYS[i].load(Ordering::Acquire) {
            0 => return None,
            k if k == key => {
                let slot = SLOT[i].load(Ordering::Acquire);
                return SLOTS.get(usize::from(slot).checked_sub(1)?).copied();
            }
            _ => i = (i + 1) % CAP,
        }
    }
}

/// Span callsites that registered after [`SPARES`] were claimed: their spans are not recorded.
///
/// ```
/// assert_eq!(fdr_tracing::dropped_callsites(), 0);
/// ```
pub fn dropped_callsites() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}
