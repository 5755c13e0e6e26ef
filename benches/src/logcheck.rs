//! Reads a finished log back, to check what the bench claims a run recorded: calls per function,
//! how many lasted at least the threshold, which functions were culled, which threads recorded.
//!
//! A small decoder over `fdr_format::events` (the reader the `fdr` command uses): each thread's
//! entries are matched with their exits on a stack; an exit with no entry in the window (a ring
//! that starts mid-stack) is counted apart.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use fdr_format::events::{EventDecoder, EventKind};
use fdr_format::CullKind;

/// What one function did in the log.
#[derive(Clone, Debug, Default)]
pub struct FnSummary {
    /// Full name from the log's function table.
    pub name: String,
    /// Calls with both entry and exit in the log.
    pub calls: u64,
    /// Of those, calls that lasted at least the log's threshold.
    pub slow: u64,
    /// The longest call, in ticks.
    pub max_ticks: u64,
    /// Cull events: the function stopped being recorded (on some thread's account).
    pub culled: u64,
    /// Restore events: a probed call reached the threshold.
    pub restored: u64,
    /// Its cull and restore events in time order (the first 1,000), with their time in ticks.
    pub cull_events: Vec<(CullKind, u64)>,
}

/// What a log holds, per function (by id) and in total.
#[derive(Clone, Debug, Default)]
pub struct LogSummary {
    /// Ticks per second of the log's clock.
    pub ticks_per_second: u64,
    /// Where the timestamps came from, as the log says (`None` without a run record).
    pub clock: Option<fdr_format::ClockSource>,
    /// The threshold the recorder applied, in ticks.
    pub threshold_ticks: u64,
    /// When recording started, in ticks.
    pub start_tsc: u64,
    /// When recording started, wall-clock nanoseconds since the Unix epoch.
    pub start_unix_ns: u64,
    /// Calls erased by the rewind since recording started (the run record's counter).
    pub calls_erased: u64,
    /// Times a culled function was let through for one call (the run record's counter).
    pub probes: u64,
    /// Functions of the table, by id, with what they did.
    pub functions: BTreeMap<u32, FnSummary>,
    /// Threads with at least one function record.
    pub threads_recording: usize,
    /// Function records per thread that recorded, smallest and largest.
    pub records_per_thread: (u64, u64),
    /// Records the log says were dropped (threads' counters).
    pub dropped: u64,
    /// Exits whose entry is not in the window.
    pub exits_without_entry: u64,
    /// Entries still open at the end of the log.
    pub open_at_end: u64,
}

impl LogSummary {
    /// Ticks to nanoseconds.
    pub fn ns(&self, ticks: u64) -> f64 {
        ticks as f64 * 1e9 / self.ticks_per_second.max(1) as f64
    }

    /// The functions whose name starts with `prefix`.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a FnSummary> {
        self.functions
            .values()
            .filter(move |f| f.name.starts_with(prefix))
    }
}

/// Decodes the log read from `input`; a call is slow when it lasted at least `slow`, or the
/// log's own threshold when `slow` is `None`.
///
/// ```
/// // A log of no calls: a recorder started and finished at once.
/// let rec = fdr::start(fdr::Config::default()).unwrap();
/// let mut log = Vec::new();
/// rec.finish_to(&mut log).unwrap();
/// let s = fdr_benches::logcheck::summarize(&log[..], None).unwrap();
/// assert_eq!(s.threads_recording, 0);
/// assert!(s.ticks_per_second > 0);
/// ```
pub fn summarize(input: impl Read, slow: Option<Duration>) -> Result<LogSummary, String> {
    let mut d = EventDecoder::new(input).map_err(|e| format!("reading the log: {e}"))?;
    let mut s = LogSummary::default();
    let mut stacks: Vec<Vec<(u32, u64)>> = Vec::new();
    // Known once the leading block's run record has been read, before any function record.
    let mut slow_ticks: Option<u64> = None;
    while let Some(e) = d
        .next_event()
        .map_err(|e| format!("reading the log: {e}"))?
    {
        let t = e.thread as usize;
        if stacks.len() <= t {
            stacks.resize_with(t + 1, Vec::new);
        }
        match e.kind {
            EventKind::Enter { id } | EventKind::EnterArgs { id } => stacks[t].push((id, e.tsc)),
            EventKind::Exit { id } | EventKind::TailExit { id } => {
                // Entries above a matching one were left without an exit (a thread that did not
                // unwind through them); the matching one is this call's.
                match stacks[t].iter().rposition(|&(open, _)| open == id) {
                    Some(at) => {
                        let start = stacks[t][at].1;
                        stacks[t].truncate(at);
                        let f = s.functions.entry(id).or_default();
                        let ticks = e.tsc.saturating_sub(start);
                        f.calls += 1;
                        f.max_ticks = f.max_ticks.max(ticks);
                        let limit =
                            *slow_ticks.get_or_insert_with(|| match (slow, &d.info().run) {
                                (Some(slow), Some(run)) => {
                                    (slow.as_secs_f64() * run.ticks_per_second as f64) as u64
                                }
                                (None, Some(run)) => run.threshold_ticks,
                                (_, None) => u64::MAX,
                            });
                        if ticks >= limit {
                            f.slow += 1;
                        }
                    }
                    None => s.exits_without_entry += 1,
                }
            }
            EventKind::Cull { kind, id, .. } => {
                let f = s.functions.entry(id).or_default();
                match kind {
                    CullKind::Culled => f.culled += 1,
                    CullKind::Restored => f.restored += 1,
                }
                if f.cull_events.len() < 1000 {
                    f.cull_events.push((kind, e.tsc));
                }
            }
            _ => {}
        }
    }
    let info = d.info();
    for f in &info.functions {
        s.functions.entry(f.id).or_default().name = f.name.clone();
    }
    if let Some(run) = info.run.as_ref() {
        s.ticks_per_second = run.ticks_per_second;
        s.threshold_ticks = run.threshold_ticks;
        s.clock = Some(run.clock);
        s.start_tsc = run.start_tsc;
        s.start_unix_ns = (run.start_unix_secs.max(0) as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(run.start_unix_nanos));
        s.calls_erased = run.calls_erased;
        s.probes = run.probes;
    } else {
        s.ticks_per_second = info.header.cycle_frequency;
    }
    s.dropped = info.threads.iter().map(|t| t.records_dropped).sum();
    let recording: Vec<u64> = d
        .threads()
        .iter()
        .map(|t| t.function_records)
        .filter(|&n| n > 0)
        .collect();
    s.threads_recording = recording.len();
    s.records_per_thread = (
        recording.iter().copied().min().unwrap_or(0),
        recording.iter().copied().max().unwrap_or(0),
    );
    s.open_at_end = stacks.iter().map(|st| st.len() as u64).sum();
    Ok(s)
}
