//! The first pass over a log: which calls were open when each thread's window started, and
//! time zero.
//!
//! A window that starts mid-stack holds the exits of calls entered before it. The replay
//! ([`crate::replay`]) learns of such a call only when its exit arrives, and infers its entry
//! then; an output that shows calls in time order (a timeline, a tree, [`crate::window`]) needs
//! it entered when the window starts, under the calls that follow. So a first replay notes the
//! calls it inferred ([`FirstPass`], a sink that can run beside any other), and a second one
//! enters them at each window's start ([`crate::replay::Replay::initial`]), outermost first.
//!
//! Time zero is the earliest window start of a thread that recorded calls ([`origin`]); a
//! reader that keeps some threads only counts from theirs ([`origin_of`]).
//!
//! ```
//! use fdr_format::events::EventDecoder;
//! use fdr_format::first_pass::window_stacks;
//! use fdr_format::replay::{replay, Replay};
//! use fdr_format::sink::{Enter, Sink, GO_ON};
//! use fdr_format::{block_preamble, function_record, BlockStart, FileHeader, FnKind};
//! use fdr_format::BLOCK_PREAMBLE_AFTER_EXTENTS;
//! use std::ops::ControlFlow;
//!
//! // Thread 7's window starts inside 1, inside it 2: only their exits are in it.
//! let mut log = FileHeader::default().encode().to_vec();
//! let records = [(3, FnKind::Enter, 10), (3, FnKind::Exit, 10), (2, FnKind::Exit, 10), (1, FnKind::Exit, 10)];
//! let start = BlockStart { tid: 7, wall_secs: 0, wall_micros: 0, pid: 1, cpu: 0, tsc: 100 };
//! for w in block_preamble(&start, BLOCK_PREAMBLE_AFTER_EXTENTS as u64 + 8 * records.len() as u64) {
//!     log.extend_from_slice(&w.to_le_bytes());
//! }
//! for (id, kind, delta) in records {
//!     log.extend_from_slice(&function_record(id, kind, delta).to_le_bytes());
//! }
//! let stacks = window_stacks(&mut EventDecoder::new(&log[..])?)?;
//! assert_eq!(stacks, [vec![1, 2]]);
//!
//! /// The calls in the order they are entered: (function, depth, start).
//! struct Entered(Vec<(u32, usize, u64)>);
//! impl Sink for Entered {
//!     type Error = std::convert::Infallible;
//!     fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, Self::Error> {
//!         self.0.push((e.frame.id, e.depth, e.frame.start));
//!         Ok(GO_ON)
//!     }
//! }
//! let mut seen = Entered(Vec::new());
//! let how = Replay { initial: &stacks, ..Replay::default() };
//! replay(&mut EventDecoder::new(&log[..])?, &mut seen, &how).map_err(|e| e.into_log().unwrap())?;
//! assert_eq!(seen.0, [(1, 0, 100), (2, 1, 100), (3, 2, 110)]);
//! # Ok::<(), fdr_format::FormatError>(())
//! ```

use std::convert::Infallible;
use std::io::Read;
use std::ops::ControlFlow;

use crate::events::{EventDecoder, LogInfo, ThreadStats};
use crate::replay::{replay, Replay, ReplayError};
use crate::sink::{Enter, Sink, GO_ON};
use crate::units::{ticks_to_ns, NANOS_PER_SECOND};
use crate::FormatError;

/// The sink of a first pass: notes the calls a replay without [`Replay::initial`] infers (one
/// per exit whose entry is before the window), which are the calls open when each thread's
/// window started. Run it alone ([`window_stacks`]) or beside another sink
/// ([`crate::sink::Both`]) in a pass that has other work.
///
/// ```
/// use fdr_format::first_pass::FirstPass;
/// use fdr_format::sink::{Enter, Frame, Sink};
/// let mut p = FirstPass::default();
/// // Found innermost first: the exit of 9, then that of 4 that held it.
/// for id in [9, 4] {
///     let f = Frame::new(id, 100, 0, true);
///     p.enter(&Enter { thread: 1, depth: 0, frame: &f, args: &[] }).unwrap();
/// }
/// assert_eq!(p.into_stacks(), [vec![], vec![4, 9]]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct FirstPass {
    /// Per thread index, the inferred calls' functions, innermost first.
    found: Vec<Vec<u32>>,
}

impl FirstPass {
    /// Per thread index, the functions of the calls open when its window started, from the
    /// bottom of the stack up: what [`Replay::initial`] takes.
    pub fn into_stacks(self) -> Vec<Vec<u32>> {
        let mut stacks = self.found;
        for s in &mut stacks {
            s.reverse();
        }
        stacks
    }
}

impl Sink for FirstPass {
    type Error = Infallible;

    fn enter(&mut self, e: &Enter<'_>) -> Result<ControlFlow<()>, Infallible> {
        if e.frame.inferred {
            let t = e.thread as usize;
            if t >= self.found.len() {
                self.found.resize_with(t + 1, Vec::new);
            }
            self.found[t].push(e.frame.id);
        }
        Ok(GO_ON)
    }
}

/// The first pass over the log `dec` reads, alone: per thread index, the functions of the
/// calls open when its window started, bottom first ([`FirstPass::into_stacks`]). The decoder
/// keeps the log's tables and threads for after; its errors, and a stack deeper than
/// [`crate::limits::MAX_CALL_DEPTH`], are the log's.
///
/// ```
/// use fdr_format::events::EventDecoder;
/// let log = fdr_format::FileHeader::default().encode();
/// let stacks = fdr_format::first_pass::window_stacks(&mut EventDecoder::new(&log[..])?)?;
/// assert!(stacks.is_empty());
/// # Ok::<(), fdr_format::FormatError>(())
/// ```
pub fn window_stacks<R: Read>(dec: &mut EventDecoder<R>) -> Result<Vec<Vec<u32>>, FormatError> {
    let mut p = FirstPass::default();
    replay(dec, &mut p, &Replay::default()).map_err(|e| match e {
        ReplayError::Log(e) => e,
        ReplayError::Sink { error, .. } => match error {},
    })?;
    Ok(p.into_stacks())
}

/// The thread (and its index) whose window starts first among those with calls that `keep`
/// chooses; the first such in `threads` when several start together.
fn earliest(
    threads: &[ThreadStats],
    mut keep: impl FnMut(usize, &ThreadStats) -> bool,
) -> Option<&ThreadStats> {
    threads
        .iter()
        .enumerate()
        .filter(|&(i, t)| t.function_records > 0 && keep(i, t))
        .map(|(_, t)| t)
        .min_by_key(|t| t.first_tsc)
}

/// Time zero of a log's calls: the earliest window start of a thread that recorded calls (0
/// when none did).
///
/// ```
/// use fdr_format::events::ThreadStats;
/// let t = |first_tsc, function_records| ThreadStats { first_tsc, function_records, ..Default::default() };
/// assert_eq!(fdr_format::first_pass::origin(&[t(50, 0), t(70, 3), t(90, 1)]), 70);
/// assert_eq!(fdr_format::first_pass::origin(&[]), 0);
/// ```
pub fn origin(threads: &[ThreadStats]) -> u64 {
    origin_of(threads, |_, _| true).unwrap_or(0)
}

/// Time zero of the calls of the threads `keep` chooses (by index and statistics): the earliest
/// window start among them, `None` when none of them recorded calls.
///
/// ```
/// use fdr_format::events::ThreadStats;
/// let t = |tid, first_tsc| ThreadStats { tid, first_tsc, function_records: 1, ..Default::default() };
/// let threads = [t(7, 50), t(8, 70)];
/// assert_eq!(fdr_format::first_pass::origin_of(&threads, |_, t| t.tid == 8), Some(70));
/// assert_eq!(fdr_format::first_pass::origin_of(&threads, |i, _| i > 1), None);
/// ```
pub fn origin_of(
    threads: &[ThreadStats],
    keep: impl FnMut(usize, &ThreadStats) -> bool,
) -> Option<u64> {
    earliest(threads, keep).map(|t| t.first_tsc)
}

/// The Unix time of tick `origin`, ns: the run record's wall clock at the start of recording
/// plus the ticks from then to `origin`; in a log without a run record, the wall-clock marker
/// of the block that opened the earliest window of a thread with calls (microseconds). `None`
/// when neither is there (no run record and no call).
///
/// ```
/// use fdr_format::events::LogInfo;
/// use fdr_format::RunInfo;
/// let mut info = LogInfo::default();
/// info.header.cycle_frequency = 1_000_000_000;
/// info.run = Some(RunInfo { start_unix_secs: 1_700_000_000, start_unix_nanos: 7, start_tsc: 1_000,
///                           ..RunInfo::default() });
/// assert_eq!(fdr_format::first_pass::unix_ns(&info, &[], 1_500), Some(1_700_000_000_000_000_507));
/// assert_eq!(fdr_format::first_pass::unix_ns(&LogInfo::default(), &[], 0), None);
/// ```
pub fn unix_ns(info: &LogInfo, threads: &[ThreadStats], origin: u64) -> Option<u64> {
    let freq = info.header.cycle_frequency;
    let ns = match &info.run {
        Some(r) => {
            let start = i128::from(r.start_unix_secs) * i128::from(NANOS_PER_SECOND)
                + i128::from(r.start_unix_nanos);
            let delta = if origin >= r.start_tsc {
                i128::from(ticks_to_ns(origin - r.start_tsc, freq))
            } else {
                -i128::from(ticks_to_ns(r.start_tsc - origin, freq))
            };
            start + delta
        }
        None => {
            let first = earliest(threads, |_, _| true)?;
            i128::from(first.walltime.0) * i128::from(NANOS_PER_SECOND)
                + i128::from(first.walltime.1) * 1_000
        }
    };
    Some(ns.clamp(0, i128::from(u64::MAX)) as u64)
}
