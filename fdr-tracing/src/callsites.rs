//! Callsites to descriptors. fdr's function ids are places in a table the linker builds, so a
//! `tracing` callsite, only known when it is first used, claims one of [`SPARES`] descriptors
//! kept for it in that table and names it `target::name`; a hook then finds the callsite's
//! descriptor in a fixed table keyed by the callsite's address: no lock, no allocation, no
//! string per span.

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use fdr_runtime::{FnDesc, FnKindTag, Named};
use tracing_core::Metadata;

/// Callsites a program can have recorded; spans and events of the ones past it are not
/// recorded ([`dropped_callsites`] counts them).
pub const SPARES: usize = 1024;

/// The most fields of a span or event recorded as arguments (the rest are left out).
pub const MAX_FIELDS: usize = 8;

/// What the claimed descriptors are called: without argument names, and with the callsite's
/// field names.
static NAMES: [OnceLock<[Named; 2]>; SPARES] = [const { OnceLock::new() }; SPARES];

/// Whether a callsite's entries carry its fields (a layer or subscriber with fields used it):
/// its descriptor then has argument names (and, like any function with arguments, is never
/// culled).
static WITH_FIELDS: [AtomicBool; SPARES] = [const { AtomicBool::new(false) }; SPARES];

/// The callsites' metadata.
static METAS: [OnceLock<&'static Metadata<'static>>; SPARES] = [const { OnceLock::new() }; SPARES];

/// The field whose value, a W3C `traceparent`, puts a span's calls into that trace.
pub const TRACEPARENT_FIELD: &str = "traceparent";

/// Whether a callsite has a [`TRACEPARENT_FIELD`].
static JOINS: [AtomicBool; SPARES] = [const { AtomicBool::new(false) }; SPARES];

/// What a callsite's spans are known to be: [`UNKNOWN`], [`CALLS`] or [`TASKS`] (see
/// [`Callsite::spans_are_tasks`]). It only moves forward: from unknown to calls or tasks, and
/// from calls to tasks.
static LEARNED: [AtomicU8; SPARES] = [const { AtomicU8::new(UNKNOWN) }; SPARES];
/// No span of the callsite was closed after a single entry, nor entered again.
const UNKNOWN: u8 = 0;
/// A span of the callsite was closed after a single entry, and none was entered again.
const CALLS: u8 = 1;
/// A span of the callsite was entered again or on another thread than the one that made it.
const TASKS: u8 = 2;

/// The name of spare `K`: unnamed while unclaimed, which leaves it out of the log's table.
fn info<const K: usize>() -> &'static Named {
    match NAMES[K].get() {
        Some(names) => &names[usize::from(WITH_FIELDS[K].load(Ordering::Relaxed))],
        None => &Named::UNNAMED,
    }
}

include!(concat!(env!("OUT_DIR"), "/spares.rs"));

/// Open addressing, two places per spare so that probes stay short.
const CAP: usize = 2 * SPARES;

/// A place of the table: a callsite's address and its slot side by side, so that a look-up
/// (made at every span, see `FdrSubscriber::enabled`) touches one cache line.
struct Place {
    /// The callsite's address (0: empty).
    key: AtomicUsize,
    /// Its slot, plus one.
    slot: AtomicU16,
}

static PLACES: [Place; CAP] = [const {
    Place {
        key: AtomicUsize::new(0),
        slot: AtomicU16::new(0),
    }
}; CAP];
/// Slots claimed.
static CLAIMED: AtomicUsize = AtomicUsize::new(0);
/// Callsites past [`SPARES`].
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Claiming is rare and may race; one at a time.
static CLAIMING: Mutex<()> = Mutex::new(());

/// A callsite that claimed a descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Callsite(u16);

impl Callsite {
    /// The callsite's descriptor.
    #[inline]
    pub(crate) fn desc(self) -> &'static FnDesc {
        SLOTS[usize::from(self.0)]
    }

    /// Whether a span of this callsite made now is a task, recorded from its creation to its
    /// close.
    ///
    /// A span entered once, on the thread that made it, right after it was made is only its
    /// call: the task would repeat the call and, worse, keep every call around it from being
    /// erased by rewind. A span entered more than once (an `Instrumented` future, which is
    /// entered at each poll and at its drop; a span kept and re-entered) is a task. Which of
    /// the two a span is shows only at its second entry, after its first call was recorded,
    /// while its task must begin at its creation: the task's latency counts from there, and its
    /// first poll must be inside it, not a loose call before it. The runtime writes a task
    /// event at the moment its hook is called, in the thread's time order, so a creation cannot
    /// be written afterwards for a moment past. So the decision is made at creation from what
    /// the callsite's earlier spans showed, and errs on the side of the task while they showed
    /// nothing (exact, at the cost of a task for the first spans of a sync callsite):
    ///
    /// - Until one of its spans is closed after a single entry, or entered again, a callsite's
    ///   spans are tasks. This is the first burst of an async function after a start: its spans
    ///   are all made before any is polled a second time, and each is a task from its creation,
    ///   with every poll inside it.
    /// - A span closed after a single entry on the thread that made it ([`Callsite::learn_calls`])
    ///   shows a sync callsite: its later spans are calls only (the spans made before, still
    ///   open, stay tasks, as they were recorded).
    /// - A span entered again or on another thread ([`Callsite::make_tasks`]) shows an async
    ///   callsite: its spans made from then on are tasks, for good. A span made before that,
    ///   while the callsite had shown only calls (a callsite whose spans are sometimes entered
    ///   once, sometimes kept and entered again), stays calls: its creation was not recorded,
    ///   and a task that began at its second entry would understate its latency.
    #[inline]
    pub(crate) fn spans_are_tasks(self) -> bool {
        LEARNED[usize::from(self.0)].load(Ordering::Relaxed) != CALLS
    }

    /// Whether the callsite's spans are known to be tasks: one of them was entered again, or on
    /// another thread than the one that made it.
    #[inline]
    pub(crate) fn tasks(self) -> bool {
        LEARNED[usize::from(self.0)].load(Ordering::Relaxed) == TASKS
    }

    /// Whether the callsite's spans have shown nothing yet: a span of it entered for the first
    /// time now, on the thread that made it, teaches [`Callsite::learn_calls`] if it is closed
    /// without another entry.
    #[inline]
    pub(crate) fn unknown(self) -> bool {
        LEARNED[usize::from(self.0)].load(Ordering::Relaxed) == UNKNOWN
    }

    /// Whether the callsite's spans have a [`TRACEPARENT_FIELD`].
    #[inline]
    pub(crate) fn joins_trace(self) -> bool {
        JOINS[usize::from(self.0)].load(Ordering::Relaxed)
    }

    /// From now on the callsite's spans are tasks.
    #[cold]
    pub(crate) fn make_tasks(self) {
        LEARNED[usize::from(self.0)].store(TASKS, Ordering::Relaxed);
    }

    /// A span of the callsite made while it was [`Callsite::unknown`] was closed after a single
    /// entry, on the thread that made it: from now on its spans are calls, unless one was
    /// entered again meanwhile (tasks win, whichever thread learns first).
    #[cold]
    pub(crate) fn learn_calls(self) {
        let _ = LEARNED[usize::from(self.0)].compare_exchange(
            UNKNOWN,
            CALLS,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// The callsite's metadata.
    pub(crate) fn metadata(self) -> Option<&'static Metadata<'static>> {
        METAS[usize::from(self.0)].get().copied()
    }

    /// Its place among the claimed callsites.
    pub(crate) fn index(self) -> u16 {
        self.0
    }

    /// The callsite of [`Callsite::index`].
    pub(crate) fn from_index(i: u16) -> Option<Callsite> {
        (usize::from(i) < CLAIMED.load(Ordering::Acquire)).then_some(Callsite(i))
    }
}

fn home(key: usize) -> usize {
    // Metadata are statics at least 8-aligned: drop the low bits, mix the rest.
    ((key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % CAP
}

/// The descriptor of a callsite, claiming one the first time. With `fields`, the descriptor's
/// argument names are the callsite's first [`MAX_FIELDS`] field names, and entries carry their
/// values; without, none (a descriptor with arguments is never culled).
pub(crate) fn register(meta: &'static Metadata<'static>, fields: bool) -> Option<Callsite> {
    let c = match find(meta) {
        Some(c) => c,
        None => claim(meta)?,
    };
    if fields && !WITH_FIELDS[usize::from(c.0)].load(Ordering::Relaxed) {
        WITH_FIELDS[usize::from(c.0)].store(true, Ordering::Relaxed);
    }
    Some(c)
}

#[cold]
fn claim(meta: &'static Metadata<'static>) -> Option<Callsite> {
    let _one = CLAIMING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = find(meta) {
        return Some(c);
    }
    let slot = CLAIMED.load(Ordering::Relaxed);
    if slot >= SPARES {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    let args: Box<[&'static str]> = meta
        .fields()
        .iter()
        .map(|f| f.name())
        .take(MAX_FIELDS)
        .collect();
    let plain = Named {
        name: Box::leak(format!("{}::{}", meta.target(), meta.name()).into_boxed_str()),
        file: meta.file().unwrap_or("<tracing>"),
        line: meta.line().unwrap_or(0),
        args: &[],
    };
    let with = Named {
        args: Box::leak(args),
        ..plain
    };
    let _ = NAMES[slot].set([plain, with]);
    if meta.fields().field(TRACEPARENT_FIELD).is_some() {
        JOINS[slot].store(true, Ordering::Relaxed);
    }
    let _ = METAS[slot].set(meta);
    CLAIMED.store(slot + 1, Ordering::Release);
    let key = meta as *const Metadata<'static> as usize;
    let mut i = home(key);
    while PLACES[i].key.load(Ordering::Relaxed) != 0 {
        i = (i + 1) % CAP;
    }
    // The slot before the key: a reader that finds the key finds its slot.
    PLACES[i].slot.store(slot as u16 + 1, Ordering::Release);
    PLACES[i].key.store(key, Ordering::Release);
    // A recording already running arms it if a trigger pattern names it.
    fdr_runtime::hooks::named(SLOTS[slot]);
    Some(Callsite(slot as u16))
}

/// The callsite of `meta`, if it claimed a descriptor.
#[inline]
pub(crate) fn find(meta: &'static Metadata<'static>) -> Option<Callsite> {
    find_addr(meta as *const Metadata<'static> as usize)
}

/// The callsite whose metadata is at `key`, if it claimed a descriptor.
#[inline]
pub(crate) fn find_addr(key: usize) -> Option<Callsite> {
    let mut i = home(key);
    loop {
        match PLACES[i].key.load(Ordering::Acquire) {
            0 => return None,
            k if k == key => {
                let slot = PLACES[i].slot.load(Ordering::Acquire);
                return usize::from(slot).checked_sub(1).map(|s| Callsite(s as u16));
            }
            _ => i = (i + 1) % CAP,
        }
    }
}

/// Whether a span or event of `meta` made now would be recorded: false only for a span whose
/// callsite's calls the runtime skips (no recorder runs, or the callsite is culled) and whose
/// spans are not known to be tasks (a task's latency is kept whatever its polls take). A
/// callsite not used yet is recorded: its first span claims its descriptor.
#[inline]
pub(crate) fn records(meta: &Metadata<'_>) -> bool {
    match find_addr(meta as *const Metadata<'_> as usize) {
        Some(c) if meta.is_span() => c.tasks() || !fdr_runtime::hooks::skips(c.desc()),
        _ => true,
    }
}

/// Callsites that were used after [`SPARES`] were claimed: their spans and events are not
/// recorded.
///
/// ```
/// assert_eq!(fdr_tracing::dropped_callsites(), 0);
/// ```
pub fn dropped_callsites() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}
