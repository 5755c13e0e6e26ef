//! Reading the logs a test recorded: [`decode`] turns a log into records that compare whole
//! ([`Rec`], grouped in [`Block`]s of a [`DecodedLog`]), checking the block grammar fdr writes on the way;
//! [`read_log`], [`logs_in`] and [`wait_for_logs`] find and read the files a recording wrote in a
//! test's own directory ([`scratch`]).
//!
//! ```
//! use fdr_format::{FnKind, RunInfo};
//! use fdr_testkit::logs::{decode, Rec};
//! use fdr_testkit::synth::LogBuilder;
//!
//! let mut log = LogBuilder::new(1_000_000_000);
//! log.run(RunInfo::default());
//! log.function(1, "app::main", &[]);
//! let mut b = log.block(7, 0, 100);
//! b.enter(1, 100);
//! b.exit(1, 150);
//! b.finish();
//! let log = decode(&log.finish()[..]).unwrap();
//! assert_eq!(log.tids(), [7]);
//! assert_eq!(log.calls(7), [(FnKind::Enter, 1), (FnKind::Exit, 1)]);
//! assert_eq!(log.thread_records(7)[1..], [Rec::Enter(1, 0), Rec::Exit(1, 50)]);
//! assert_eq!(log.name(1), Some("app::main"));
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fdr_format::reader::{Reader, Record};
use fdr_format::{Extension, FileHeader, FnKind, FunctionInfo, RunInfo, ThreadInfo};

/// One record of a thread's block, in a form that compares whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rec {
    /// Entry: id, delta.
    Enter(u32, u32),
    /// Exit: id, delta.
    Exit(u32, u32),
    /// Tail exit: id, delta.
    Tail(u32, u32),
    /// Entry with arguments: id, delta (the arguments follow as `Arg`).
    EnterArgs(u32, u32),
    /// Call argument.
    Arg(u64),
    /// CPU change: cpu, full timestamp.
    Cpu(u16, u64),
    /// Timestamp jump: full timestamp.
    Wrap(u64),
    /// A task event: kind, function id, task id, delta.
    Task(fdr_format::TaskKind, u32, u64, i32),
    /// A poll event (the poll whose exit came just before served this task): function id,
    /// task id, delta.
    Polled(u32, u64, i32),
    /// A cull event: kind, function id, run, delta.
    Cull(fdr_format::CullKind, u32, u64, i32),
    /// A link event and its delta.
    Link(fdr_format::TaskLink, i32),
    /// An await event (a wait at an await site ended) and its delta.
    Await(fdr_format::AwaitEvent, i32),
    /// A wake event (a poll a wake-up asked for began) and its delta.
    Woken(fdr_format::WakeEvent, i32),
    /// Any other record, as the reader printed it.
    Other(String),
}

impl Rec {
    /// The thread's time after this record, given `t` before it (ticks): a CPU record or a wrap
    /// sets it, a function record adds its delta, a custom event (task, poll, cull, link or
    /// await event) its signed one.
    ///
    /// ```
    /// use fdr_testkit::logs::Rec;
    /// assert_eq!(Rec::Cpu(0, 500).time_after(7), 500);
    /// assert_eq!(Rec::Exit(1, 20).time_after(500), 520);
    /// assert_eq!(Rec::Polled(1, 9, -5).time_after(520), 515);
    /// ```
    pub fn time_after(&self, t: u64) -> u64 {
        match *self {
            Rec::Cpu(_, tsc) | Rec::Wrap(tsc) => tsc,
            Rec::Enter(_, d) | Rec::Exit(_, d) | Rec::Tail(_, d) | Rec::EnterArgs(_, d) => {
                t.wrapping_add(u64::from(d))
            }
            Rec::Task(_, _, _, d)
            | Rec::Polled(_, _, d)
            | Rec::Cull(_, _, _, d)
            | Rec::Link(_, d)
            | Rec::Await(_, d)
            | Rec::Woken(_, d) => t.wrapping_add(d as i64 as u64),
            Rec::Arg(_) | Rec::Other(_) => t,
        }
    }
}

/// One block of a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Thread id from the NewBuffer record.
    pub tid: i32,
    /// Pid from the Pid record.
    pub pid: i32,
    /// The records after the preamble (the preamble's NewCPUId is the first).
    pub records: Vec<Rec>,
}

/// A decoded log.
#[derive(Clone, Debug)]
pub struct DecodedLog {
    /// The file header.
    pub header: FileHeader,
    /// The run record.
    pub run: RunInfo,
    /// The function table.
    pub functions: Vec<FunctionInfo>,
    /// The threads.
    pub threads: Vec<ThreadInfo>,
    /// Why the log was written.
    pub reason: Option<fdr_format::ReasonInfo>,
    /// The configuration the recording ran with, as `FDR_OPTIONS` words.
    pub options: Option<String>,
    /// What the cost budget did, if the recording had one.
    pub budget: Option<fdr_format::BudgetInfo>,
    /// The blocks after the leading one, in file order.
    pub blocks: Vec<Block>,
}

impl DecodedLog {
    /// Panics unless every exit closes the innermost open call of its thread, or one opened
    /// before the window.
    ///
    /// ```
    /// use fdr_testkit::logs::{Block, DecodedLog, Rec};
    /// let log = DecodedLog {
    ///     header: Default::default(),
    ///     run: Default::default(),
    ///     functions: Vec::new(),
    ///     threads: Vec::new(),
    ///     reason: None,
    ///     options: None,
    ///     budget: None,
    ///     blocks: vec![Block {
    ///         tid: 7,
    ///         pid: 1,
    ///         records: vec![Rec::Exit(3, 1), Rec::Enter(1, 5), Rec::Enter(2, 1), Rec::Exit(2, 1), Rec::Exit(1, 2)],
    ///     }],
    /// };
    /// log.assert_nests();
    /// ```
    pub fn assert_nests(&self) {
        for tid in self.tids() {
            let mut stack = Vec::new();
            for r in self.thread_records(tid) {
                match r {
                    Rec::Enter(id, _) => stack.push(id),
                    Rec::Exit(id, _) => {
                        if let Some(top) = stack.pop() {
                            assert_eq!(top, id, "thread {tid}: exit of {id} closes {top}");
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// Every record of thread `tid`, blocks concatenated in file order.
    pub fn thread_records(&self, tid: i32) -> Vec<Rec> {
        self.blocks
            .iter()
            .filter(|b| b.tid == tid)
            .flat_map(|b| b.records.iter().cloned())
            .collect()
    }

    /// The counter at the last entry and the last exit of thread `tid`, in absolute ticks
    /// (each `NewCPUId` or `TSCWrap` restarts the count, so a thread that woke on another CPU is
    /// timed all the same); `None` without both. For a thread that made one call: its span.
    ///
    /// ```
    /// use fdr_testkit::logs::{Block, DecodedLog, Rec};
    /// let log = DecodedLog {
    ///     header: Default::default(),
    ///     run: Default::default(),
    ///     functions: Vec::new(),
    ///     threads: Vec::new(),
    ///     reason: None,
    ///     options: None,
    ///     budget: None,
    ///     blocks: vec![Block {
    ///         tid: 7,
    ///         pid: 1,
    ///         records: vec![Rec::Cpu(0, 1000), Rec::Enter(1, 5), Rec::Cpu(1, 2000), Rec::Exit(1, 30)],
    ///     }],
    /// };
    /// assert_eq!(log.last_entry_and_exit(7), Some((1005, 2030)));
    /// ```
    pub fn last_entry_and_exit(&self, tid: i32) -> Option<(u64, u64)> {
        let (mut t, mut entered, mut left) = (0u64, None, None);
        for r in self.thread_records(tid) {
            match r {
                Rec::Cpu(_, tsc) | Rec::Wrap(tsc) => t = tsc,
                Rec::Enter(_, d) => {
                    t += u64::from(d);
                    entered = Some(t);
                }
                Rec::Exit(_, d) => {
                    t += u64::from(d);
                    left = Some(t);
                }
                _ => {}
            }
        }
        Some((entered?, left?))
    }

    /// Function records only (no metadata), of thread `tid`, without deltas: (kind, id).
    pub fn calls(&self, tid: i32) -> Vec<(FnKind, u32)> {
        self.thread_records(tid)
            .into_iter()
            .filter_map(|r| match r {
                Rec::Enter(id, _) => Some((FnKind::Enter, id)),
                Rec::Exit(id, _) => Some((FnKind::Exit, id)),
                Rec::Tail(id, _) => Some((FnKind::TailExit, id)),
                Rec::EnterArgs(id, _) => Some((FnKind::EnterArgs, id)),
                _ => None,
            })
            .collect()
    }

    /// Thread ids that have blocks, in order of first appearance.
    pub fn tids(&self) -> Vec<i32> {
        let mut out = Vec::new();
        for b in &self.blocks {
            if !out.contains(&b.tid) {
                out.push(b.tid);
            }
        }
        out
    }

    /// Name of function `id` in the table.
    pub fn name(&self, id: u32) -> Option<&str> {
        self.functions
            .iter()
            .find(|f| f.id == id)
            .map(|f| f.name.as_str())
    }
}

/// Decodes a whole log, checking the block grammar fdr writes.
pub fn decode(bytes: impl Read) -> Result<DecodedLog, String> {
    let mut r = Reader::new(bytes).map_err(|e| e.to_string())?;
    let header = *r.header();
    let mut run = None;
    let mut functions = Vec::new();
    let mut threads = Vec::new();
    let mut reason = None;
    let mut options = None;
    let mut budget = None;
    let mut blocks: Vec<Block> = Vec::new();
    let mut preamble = 0usize;
    let mut leading = true;
    let mut first = true;
    while let Some((at, rec)) = r.next_record().map_err(|e| e.to_string())? {
        if first && !matches!(rec, Record::BufferExtents { .. }) {
            return Err(format!("at {at}: a log starts with a BufferExtents record"));
        }
        first = false;
        match rec {
            Record::BufferExtents { .. } => {
                preamble = 1;
                continue;
            }
            Record::NewBuffer { tid } if preamble == 1 => {
                // The first block of the file is the leading one, whatever its thread id.
                if at > 48 {
                    leading = false;
                    blocks.push(Block {
                        tid,
                        pid: 0,
                        records: Vec::new(),
                    });
                }
                preamble = 2;
                continue;
            }
            Record::Walltime { .. } if preamble == 2 => {
                preamble = 3;
                continue;
            }
            Record::Pid { pid } if preamble == 3 => {
                if let Some(b) = blocks.last_mut() {
                    b.pid = pid;
                }
                preamble = 4;
                continue;
            }
            _ if (1..4).contains(&preamble) => {
                return Err(format!("at {at}: unexpected {rec:?} in a block preamble"));
            }
            _ => {}
        }
        if preamble == 4 {
            if !matches!(rec, Record::NewCpuId { .. }) {
                return Err(format!("at {at}: a block's preamble ends with NewCPUId"));
            }
            preamble = 0;
            if leading {
                continue;
            }
        }
        if leading {
            match rec {
                Record::CustomEvent { payload, .. } => {
                    match Extension::decode(payload).map_err(|e| format!("at {at}: {e}"))? {
                        Some(Extension::Run(x)) => run = Some(x),
                        Some(Extension::Function(f)) => functions.push(f),
                        Some(Extension::Thread(t)) => threads.push(t),
                        Some(Extension::Reason(r)) => reason = Some(r),
                        Some(Extension::Options(o)) => options = Some(o),
                        Some(Extension::Budget(b)) => budget = Some(b),
                        _ => return Err(format!("at {at}: unexpected custom event")),
                    }
                }
                other => {
                    return Err(format!(
                        "at {at}: unexpected {other:?} in the leading block"
                    ))
                }
            }
            continue;
        }
        let out = match rec {
            Record::Function { id, kind, delta } => match kind {
                FnKind::Enter => Rec::Enter(id, delta),
                FnKind::Exit => Rec::Exit(id, delta),
                FnKind::TailExit => Rec::Tail(id, delta),
                FnKind::EnterArgs => Rec::EnterArgs(id, delta),
            },
            Record::CallArgument { value } => Rec::Arg(value),
            Record::NewCpuId { cpu, tsc } => Rec::Cpu(cpu, tsc),
            Record::TscWrap { tsc } => Rec::Wrap(tsc),
            Record::CustomEvent { delta, payload } => {
                if let Some((kind, id, task)) = fdr_format::decode_task_event(payload) {
                    Rec::Task(kind, id, task, delta)
                } else if let Some((id, task)) = fdr_format::decode_polled_event(payload) {
                    Rec::Polled(id, task, delta)
                } else if let Some((kind, id, run)) = fdr_format::decode_cull_event(payload) {
                    Rec::Cull(kind, id, run, delta)
                } else if let Some(link) = fdr_format::decode_link_event(payload) {
                    Rec::Link(link, delta)
                } else if let Some(a) = fdr_format::decode_await_event(payload) {
                    Rec::Await(a, delta)
                } else if let Some(w) = fdr_format::decode_wake_event(payload) {
                    Rec::Woken(w, delta)
                } else {
                    Rec::Other(format!("custom event of {} bytes", payload.len()))
                }
            }
            other => Rec::Other(format!("{other:?}")),
        };
        blocks
            .last_mut()
            .ok_or_else(|| format!("at {at}: a record outside any block"))?
            .records
            .push(out);
    }
    if r.block_left().unwrap_or(0) != 0 {
        return Err("the last block is shorter than its extents record says".into());
    }
    Ok(DecodedLog {
        header,
        run: run.ok_or("the log has no run record")?,
        functions,
        threads,
        reason,
        options,
        budget,
        blocks,
    })
}

/// A fresh, empty directory for one test's logs: `name` under the system's temporary directory,
/// with this process's id (test binaries run side by side).
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fdr-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Decodes the log at `path`; a panic names the file.
pub fn read_log(path: &Path) -> DecodedLog {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    decode(&bytes[..]).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The files in `dir` whose names end with `.fdr`, in the order of their names with numbers
/// compared as numbers: a process's snapshot 10 comes after its snapshot 9 (snapshot numbers
/// count per process, so a test's files may cross a digit).
///
/// ```
/// use fdr_testkit::logs::{logs_in, scratch};
/// let dir = scratch("doc-logs-in");
/// for name in ["app.10.fdr", "app.9.fdr", "notes.txt"] {
///     std::fs::write(dir.join(name), b"").unwrap();
/// }
/// let names: Vec<_> = logs_in(&dir).iter().map(|p| p.file_name().unwrap().to_owned()).collect();
/// assert_eq!(names, ["app.9.fdr", "app.10.fdr"]);
/// ```
pub fn logs_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "fdr"))
        .collect();
    // Each run of digits as a number (its length, then itself), the rest as it is.
    let key = |p: &PathBuf| -> Vec<(bool, usize, String)> {
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let mut parts = Vec::new();
        let mut rest = name.as_str();
        while let Some(c) = rest.chars().next() {
            let digits = c.is_ascii_digit();
            let end = rest
                .find(|ch: char| ch.is_ascii_digit() != digits)
                .unwrap_or(rest.len());
            let run = rest[..end].trim_start_matches(if digits { '0' } else { '\0' });
            parts.push((digits, if digits { run.len() } else { 0 }, run.to_string()));
            rest = &rest[end..];
        }
        parts
    };
    v.sort_by_key(key);
    v
}

/// Waits (at most 10 s) until `dir` holds `n` logs, and returns the logs there: a background
/// writer's snapshot appears when it is whole.
pub fn wait_for_logs(dir: &Path, n: usize) -> Vec<PathBuf> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let l = logs_in(dir);
        if l.len() >= n || Instant::now() > deadline {
            return l;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
