//! The background writer: one thread per recording (but those of tests on the injected clock
//! that need none). First it faults the pool's pages in (`Pool::prefault`), so that neither the
//! start nor the recording path pays for them. Then it writes the snapshots that triggers and the
//! signal ask for, so the thread whose call was slow never copies or writes; it is the watchdog
//! that notices trigger calls still running past their limit (a hang never returns to fire its
//! own trigger); and it probes culled functions (`cull::probe`), so that culled calls need no
//! bookkeeping of their own.
//!
//! With a cost budget it looks ten times a second at what recording costs (`session::budget`).
//!
//! It sleeps on the wake-up pipe; with triggers it also wakes every quarter of the shortest limit
//! (between 1 ms and 100 ms) to look at the open trigger calls, and with culling at least every
//! `cull::PROBE_PERIOD_MS`. Each job keeps its own period whatever wakes the writer: the probes
//! every `cull::PROBE_PERIOD_MS`, the crash box and the profiles of threads that ended every
//! second. It ends when the recording stops.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fdr_format::{Reason, ReasonInfo};

use crate::session::{budget, Session, State};
use crate::{
    lifecycle::snapshot, output::file_names, platform::clock, platform::host, record::cull,
    trigger::cpu_wait, trigger::signal, trigger::slow_calls, Error,
};

/// Starts the writer if the recording needs one and it is not running yet.
pub(crate) fn start(session: &Arc<Session>) {
    if !session.triggers().any()
        && session.setup().config.get_signal().is_none()
        && !probes(session)
        && session.profiles().is_none()
        && session.pool().crash_box().is_none()
        && session.calibrated()
        // Tests' recordings on the injected clock; any other faults the pool's pages in.
        && session.setup().calibration.source == fdr_format::ClockSource::Injected
    {
        return;
    }
    // Once per recording: a trigger armed while it runs (a name given late) asks again.
    if !session.claim_writer() {
        return;
    }
    let s = Arc::clone(session);
    let spawned = std::thread::Builder::new()
        .name("fdr-writer".into())
        .spawn(move || run(&s));
    if let Err(e) = spawned {
        eprintln!("fdr: could not start the background writer ({e}); triggers, the snapshot signal and probes of culled functions are off");
    }
}

/// Whether this recording's writer probes culled functions: with culling on, except with the
/// injected clock of tests, which probe by hand (`testing::probe_culled`) so that which calls
/// are recorded does not depend on when a thread wakes.
fn probes(s: &Session) -> bool {
    s.culling() && s.setup().calibration.source != fdr_format::ClockSource::Injected
}

/// How long the writer may sleep: the watchdog's period with triggers ([`watch_ms`]), the probe
/// period with culling, else until woken (-1). Read at every wake-up: a trigger armed, or a
/// limit learned, while the recording runs may shorten it.
fn period(s: &Session, probe_ms: Option<i32>) -> i32 {
    let watch_ms = s.triggers().any().then(|| {
        watch_ms(
            s.triggers().shortest(),
            s.triggers().settled(),
            s.setup().calibration.ticks_per_second,
        )
    });
    // With a profile, the tries of threads that exited are merged at least every second, so
    // that a program that keeps starting threads keeps a bounded profile.
    let collect_ms = s.profiles().map(|_| 1000);
    // The calibration is finished once its window has passed; a crash box gets a sign of life
    // and its tables brought up to date every second.
    let calibrate_ms = (!s.calibrated())
        .then_some(crate::platform::clock::CALIBRATION_WINDOW.as_millis() as i32 + 1);
    let box_ms = s.pool().crash_box().map(|_| 1000);
    let budget_ms = budget_looks(s).then_some(budget::LOOK_MS);
    [
        watch_ms,
        probe_ms,
        collect_ms,
        calibrate_ms,
        box_ms,
        budget_ms,
    ]
    .into_iter()
    .flatten()
    .min()
    .unwrap_or(-1)
}

/// Whether this recording's writer takes the cost budget's looks: with a budget, except with
/// the injected clock of tests, which look by hand (`testing::budget_look`) with the CPU time
/// they inject.
fn budget_looks(s: &Session) -> bool {
    s.budget_on() && s.setup().calibration.source != fdr_format::ClockSource::Injected
}

fn run(s: &Session) {
    let mut probe_ms = probes(s).then_some(cull::PROBE_PERIOD_MS as i32);
    let mut next_look = Instant::now();
    let mut cursor = 0;
    let mut reported: HashSet<(u32, u64)> = HashSet::new();
    let mut open = Vec::new();
    let mut seen = Seen::new();
    let (mut next_probe, mut next_second) = (Instant::now(), Instant::now());
    let mut next_tasks = Instant::now();
    let recording = || s.state() == State::Recording;
    s.pool().prefault(recording);
    let mut said_full = false;
    let mut grow = || {
        s.pool().grow(recording);
        if !said_full && s.pool().reserve_failed.load(Ordering::Relaxed) {
            said_full = true;
            let dir = s.setup().config.get_crash_dir().unwrap_or_default();
            eprintln!(
                "fdr: the crash directory {} has no room for the whole pool: recording with {} \
                 of its {} buffers (give crash_dir=DIR with room for {} bytes, or a smaller \
                 buffer_count)",
                dir.display(),
                s.pool().reserved(),
                s.pool().slots().len(),
                s.setup().buffer_size * s.pool().slots().len(),
            );
        }
    };
    grow();
    while s.state() == State::Recording {
        let sleep = period(s, probe_ms);
        // A sign of life at every wake-up, with how long until the next: a box whose process
        // died without a word tells its death to within that.
        if let Some(b) = s.pool().crash_box() {
            b.alive(clock::now().0, sleep.max(1) as u64 * 1_000_000);
        }
        s.wakeup().wait(sleep);
        if s.state() != State::Recording {
            break;
        }
        grow();
        if s.setup().config.get_signal().is_some() && signal::take() {
            match slow_calls::reserve_file(s.triggers().max_snapshots) {
                Some(n) => write(
                    s,
                    ReasonInfo {
                        reason: Reason::Signal,
                        ..ReasonInfo::default()
                    },
                    n,
                ),
                None => {
                    s.triggers().suppressed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if s.triggers().any() {
            let tasks = due(&mut next_tasks, Instant::now(), TASK_WATCH_MS);
            watch(s, &mut reported, &mut open, tasks);
            mark(s, &open, &mut seen);
        }
        if let Some((call, n)) = s.triggers().mailbox.take() {
            write(s, call, n);
        }
        // The writer wakes as often as its most frequent job asks (a short trigger limit: every
        // millisecond); each other job keeps its own period. Probing on every wake-up let each
        // culled function's calls through ten times as often as `PROBE_PERIOD_MS` says, and the
        // crash box's tables were rebuilt every millisecond.
        let now = Instant::now();
        if let Some(ms) = probe_ms {
            if due(&mut next_probe, now, ms) {
                s.counters().add_probes(cull::probe(&mut cursor));
            }
        }
        if budget_looks(s) && due(&mut next_look, now, budget::LOOK_MS) {
            if let (Some(d), Some(ms)) = (s.budget_look(), probe_ms.as_mut()) {
                let factor = if d.short { cull::BUSY_PROBE_FACTOR } else { 1 };
                *ms = (cull::PROBE_PERIOD_MS * factor) as i32;
            }
        }
        // The calibration is finished once its window has passed.
        if !s.calibrated() && crate::platform::clock::refine(s.setup().cal_start).is_some() {
            s.ticks_per_second();
        }
        if due(&mut next_second, now, 1000) {
            if let Some(p) = s.profiles() {
                p.collect_ended();
            }
            keep_box(s);
        }
    }
}

/// Whether a job whose next turn is `next` is due at `now`; if so, its next turn is `period_ms`
/// later (from now: a late writer does not run a job twice to catch up).
fn due(next: &mut Instant, now: Instant, period_ms: i32) -> bool {
    if now < *next {
        return false;
    }
    *next = now + Duration::from_millis(period_ms.max(1) as u64);
    true
}

/// Brings the crash box's function and thread tables up to date when they grew (its sign of
/// life is given at every wake-up).
fn keep_box(s: &Session) {
    let Some(b) = s.pool().crash_box() else {
        return;
    };
    let functions = crate::tables::functions::table()
        .iter()
        .filter(|f| !f.name().is_empty())
        .count();
    let threads = s.threads().threads();
    let key = threads.iter().fold(functions as u64, |k, t| {
        k.wrapping_mul(0x100_0000_01b3) ^ (t.tid as u32 as u64) ^ (t.name.len() as u64) << 32
    });
    b.refresh_lead(key, || {
        let tps = if s.calibrated() {
            s.ticks_per_second()
        } else {
            s.setup().calibration.ticks_per_second
        };
        let mut records = vec![
            fdr_format::Extension::Run(s.setup().run_info(tps)),
            fdr_format::Extension::Options(s.setup().config.to_options()),
        ];
        records.extend(crate::tables::functions::records());
        records.extend(threads.into_iter().map(|t| {
            fdr_format::Extension::Thread(fdr_format::ThreadInfo {
                tid: t.tid,
                name: t.name,
                records_dropped: t.dropped,
            })
        }));
        fdr_format::crash_box::encode_lead(&records)
    });
}

/// The watchdog's longest sleep, in milliseconds.
const WATCH_MAX_MS: i32 = 100;

/// The watchdog's period: a quarter of the shortest limit (`shortest`, in ticks at
/// `ticks_per_second`), between 1 and [`WATCH_MAX_MS`] ms. Until some limit can be passed
/// (`settled`: every limit is a learned one still warming up) no call can fire, hang or be
/// marked for its wait, so the watchdog looks only every [`WATCH_MAX_MS`]: a program with a
/// learned trigger no longer wakes its writer every millisecond through the warm-up's second
/// for nothing.
fn watch_ms(shortest: u64, settled: bool, ticks_per_second: u64) -> i32 {
    if !settled {
        return WATCH_MAX_MS;
    }
    let quarter_ns = u128::from(shortest) * 250_000_000 / u128::from(ticks_per_second.max(1));
    (quarter_ns / 1_000_000).clamp(1, WATCH_MAX_MS as u128) as i32
}

/// How often the watchdog looks at the open tasks' table for hung tasks, at most. A task is
/// hung only 100 ms past twice its limit, so looking every 20 ms reports it at most that much
/// later; the table is a fixed 1,024 entries, walked whole, which at every wake-up (every
/// millisecond under a short limit) was a tenth of the writer's CPU time.
const TASK_WATCH_MS: i32 = 20;

/// Fires the trigger of every open call that looks hung, once per call; with `tasks`, of every
/// task as well.
///
/// A call counts as hung once it has run for twice its limit and 100 ms more: a call that is
/// merely slow returns before that and fires at its exit, with its exit in the snapshot; a call
/// that does not is shown open at the end of the window. Tasks of async functions pending that
/// long count the same way.
fn watch(
    s: &Session,
    reported: &mut HashSet<(u32, u64)>,
    open: &mut Vec<(u32, i32, u32, u64)>,
    tasks: bool,
) {
    s.threads().open_calls(open);
    let now = clock::now().0;
    let grace = s.setup().calibration.ticks_per_second / 10;
    // A call that started after `now` (another thread's clock a little ahead; with the
    // injected clock, each thread's own time) has not run at all yet, not for ever.
    let hung = |id: u32, start: u64| {
        let limit = s.triggers().limit(id);
        limit != 0 && now.saturating_sub(start) > limit.saturating_mul(2).saturating_add(grace)
    };
    reported.retain(|&(key, start)| open.iter().any(|&(k, _, _, st)| k == key && st == start));
    // The open calls of async functions are polls, timed against the long-poll limit (a task's
    // own limit is timed in the open tasks' table): one past it is reported at once, while it
    // runs; a worker stuck in it may never get back.
    let long_poll = s.triggers().long_poll();
    let poll = |id: u32| {
        crate::tables::functions::function(id).is_some_and(|f| f.kind() == crate::FnKindTag::Async)
    };
    for &(key, tid, id, start) in open.iter() {
        let (past, running_poll) = if poll(id) {
            (
                long_poll != 0 && now.saturating_sub(start) > long_poll,
                true,
            )
        } else {
            (hung(id, start), false)
        };
        if past && reported.insert((key, start)) && s.threads().claim_report(key, start) {
            if running_poll {
                s.long_poll(true, id, tid, start, now);
            } else {
                s.fire(Reason::StillRunning, id, tid, start, now);
            }
        }
    }
    if !tasks {
        return;
    }
    let mut hung_tasks = Vec::new();
    s.triggers().tasks.each(|task, id, tid, start| {
        if hung(id, start) {
            hung_tasks.push((task, id, tid, start));
        }
    });
    for (task, id, tid, start) in hung_tasks {
        if s.triggers().tasks.claim_report(task) {
            s.fire(Reason::StillRunning, id, tid, start, now);
        }
    }
}

/// Open trigger calls the watchdog has seen: when it first saw each, and whether it marked it.
type Seen = HashMap<(u32, u64), (Instant, bool)>;

/// Leaves a mark (`cpu_wait`) on every open call of the threads that has run half its limit
/// since the watchdog first saw it, to measure from it how long the thread then waits for a
/// CPU. Half the limit counts in real time from the first look (so a call is marked at a second
/// look at the earliest, whatever the clock): calls that end within a look or two, all but the
/// slow ones, cost nothing. Learned limits still warming up are not timed yet.
fn mark(s: &Session, open: &[(u32, i32, u32, u64)], seen: &mut Seen) {
    seen.retain(|&(key, start), _| open.iter().any(|&(k, _, _, st)| (k, st) == (key, start)));
    let hz = u128::from(s.setup().calibration.ticks_per_second.max(1));
    for &(key, tid, id, start) in open {
        let limit = s.triggers().limit(id);
        if limit == 0 || limit == slow_calls::LEARNING {
            continue;
        }
        let (first, marked) = seen.entry((key, start)).or_insert((Instant::now(), false));
        let half = Duration::from_nanos((u128::from(limit) * 500_000_000 / hz) as u64);
        if *marked || first.elapsed() < half.max(Duration::from_micros(1)) {
            continue;
        }
        *marked = true;
        cpu_wait::mark(tid, |m| s.threads().mark_call(key, start, m));
    }
}

/// Writes snapshot `n` for `call`, retrying a little while a program's own snapshot holds the
/// turn. A failure is reported once per recording and does not stop recording.
fn write(s: &Session, mut call: ReasonInfo, n: u32) {
    call.suppressed = s.triggers().suppressed.load(Ordering::Relaxed);
    call.cpu_wait_suppressed = s.triggers().cpu_wait_suppressed.load(Ordering::Relaxed);
    let path = file_names::snapshot_path(
        s.outputs().out_template(),
        std::process::id(),
        n,
        host::wall_time(),
    );
    s.triggers().mailbox.writing.store(true, Ordering::SeqCst);
    let mut result = Err(Error::SnapshotInProgress);
    for _ in 0..100 {
        result = write_once(s, &path, &call);
        if !matches!(result, Err(Error::SnapshotInProgress)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    s.triggers().mailbox.writing.store(false, Ordering::SeqCst);
    match result {
        Ok(()) => eprintln!(
            "fdr: {} ({})",
            snapshot::written(s, &path, call.reason),
            call.reason.describe()
        ),
        // The recording ended meanwhile: its final log has it all.
        Err(Error::NotRecording) => {}
        Err(e) => {
            if s.outputs().first_failure() {
                eprintln!("{e}; recording goes on, and further failures are not reported");
            }
        }
    }
}

fn write_once(s: &Session, path: &Path, call: &ReasonInfo) -> Result<(), Error> {
    snapshot::snapshot_with_profile(s, path, call.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_looks_at_a_quarter_of_the_shortest_limit_once_one_exists() {
        let ghz = 1_000_000_000;
        // A learned limit's floor (50 us): every millisecond, the shortest sleep.
        assert_eq!(watch_ms(50_000, true, ghz), 1);
        // 10 ms: every 2.5 ms, in whole milliseconds.
        assert_eq!(watch_ms(10_000_000, true, ghz), 2);
        // 1 s: at most every 100 ms.
        assert_eq!(watch_ms(1_000_000_000, true, ghz), 100);
        // Every limit still learning: nothing to look for but the first limit.
        assert_eq!(watch_ms(50_000, false, ghz), WATCH_MAX_MS);
    }
}
