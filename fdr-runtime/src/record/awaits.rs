//! Waits at await sites: an `.await` of an instrumented `async fn` whose future returned
//! `Pending` is timed from that poll to the poll that passed it, and recorded then, once, as an
//! await event (site, function, ticks waited, polls). An await that is ready at once records
//! nothing and reads no clock; one that waits reads the clock when it begins and when it ends,
//! and is recorded when it waited at least the threshold (a shorter wait, like a shorter call,
//! is not worth the room).
//!
//! The event goes into the thread's buffer inside the poll that passed the await: the poll is
//! then kept (never erased as short), and its poll event ties the wait to its task. A wait ended
//! by dropping the future (a cancelled task, a `select!` branch that lost) is recorded at the
//! drop, marked dropped.

use fdr_format::AwaitEvent;

use crate::platform::clock;
use crate::record::hot_path;
use crate::tables::flags;
use crate::tables::functions::FnDesc;

/// The clock reading that begins a wait at await site `site` of `f`, or 0 when nothing would
/// record it: no recorder, `f` culled or untimed, or profile mode (then its polls are not
/// recorded either), or the site's waits untimed by the cost budget (the site's own `SHED`
/// flag: the budget stops recording a site's waits, a detail of its function's polls, where it
/// may not stop timing the function).
#[inline]
pub(crate) fn begin(site: &'static FnDesc, f: &'static FnDesc) -> u64 {
    // The function's flags first: without a recorder, or culled, they say all.
    let off = flags::UNTIMED | flags::UNLOGGED;
    if f.flags() & off != 0 || site.flags() & off != 0 {
        return 0;
    }
    begin_now()
}

#[inline(never)]
fn begin_now() -> u64 {
    // 0 means "not waiting": a clock that reads 0 (an injected one at its start) is a tick on.
    clock::now().0.max(1)
}

/// A wait at `site` of `f`, begun at `since` ([`begin`]) and found pending by `polls` polls,
/// ended now: passed, or with `dropped` ended by dropping the future. Recorded when it lasted
/// at least the threshold.
#[cold]
#[inline(never)]
pub(crate) fn ended(
    site: &'static FnDesc,
    f: &'static FnDesc,
    since: u64,
    polls: u32,
    dropped: bool,
) {
    let (now, cpu) = clock::now();
    let wait = AwaitEvent {
        site: 0,
        function: 0,
        waited: now.saturating_sub(since),
        polls,
        dropped,
    };
    hot_path::record_await(site, f, wait, now, cpu);
}
