//! Blocks turned into per-thread events with absolute timestamps.
//!
//! [`EventDecoder`] reads a log with a [`Reader`], checks the block grammar with a
//! [`BlockVerifier`], rebuilds each record's full timestamp (a block's `NewCPUId` sets the base,
//! each function record and event adds its delta, `TSCWrap` and a mid-block `NewCPUId` reset the
//! base) and collects fdr's extension records (run settings, function table, thread names) as
//! they go by. What comes out is a stream of small [`Event`]s, each naming a dense thread index,
//! so that consumers keep per-thread state in a plain vector.

use std::collections::HashMap;
use std::io::Read;

use crate::reader::{Reader, Record};
use crate::verify::BlockVerifier;
use crate::{
    Extension, FileHeader, FnKind, FormatError, FunctionInfo, ReasonInfo, RunInfo, ThreadInfo,
    FUNCTION_RECORD_SIZE,
};

/// What happened, without the thread and time (see [`Event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A block of the thread starts; `tsc` is its `NewCPUId` timestamp.
    Block,
    /// A function was entered.
    Enter {
        /// Function id.
        id: u32,
    },
    /// A function was entered and its arguments follow as [`EventKind::Arg`] events.
    EnterArgs {
        /// Function id.
        id: u32,
    },
    /// A function returned.
    Exit {
        /// Function id.
        id: u32,
    },
    /// A function left through a tail call.
    TailExit {
        /// Function id.
        id: u32,
    },
    /// Something happened to an async task (a custom event in the thread's block).
    Task {
        /// Created, completed or cancelled.
        kind: crate::TaskKind,
        /// The async function's id.
        id: u32,
        /// The task's process-unique id.
        task: u64,
    },
    /// The poll that ended just before, on this thread (its exit is the thread's previous
    /// event), served this task (a custom event written after a poll that was kept).
    Polled {
        /// The async function's id.
        id: u32,
        /// The task's process-unique id.
        task: u64,
    },
    /// An async task is tied to another: its parent, or a task it follows from (a custom
    /// event in the block of the thread that made the link).
    Link(crate::TaskLink),
    /// A wait at an await site of an async function ended (a custom event written by the
    /// thread that ended it: inside the poll that passed the await, or after the task's
    /// cancellation).
    Await(crate::AwaitEvent),
    /// A poll began that a wake-up of its task had asked for (a custom event written inside
    /// the poll, at its entry's time).
    Woken(crate::WakeEvent),
    /// A function stopped or started being recorded (culling; a custom event).
    Cull {
        /// Culled or restored.
        kind: crate::CullKind,
        /// The function's id.
        id: u32,
        /// Its calls erased in a row on this thread when it was culled.
        run: u64,
    },
    /// One argument of the latest enter-with-arguments event.
    Arg {
        /// The argument's 64 bits.
        value: u64,
    },
    /// The thread moved to another CPU (mid-block `NewCPUId`).
    Cpu {
        /// CPU number.
        cpu: u16,
    },
}

/// One event of one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Dense index of the thread, in order of first appearance (see [`EventDecoder::threads`]).
    pub thread: u32,
    /// Full timestamp in ticks.
    pub tsc: u64,
    /// What happened.
    pub kind: EventKind,
}

/// The thread's time went back by `ticks` at the record at `at`.
#[cold]
fn went_back(t: &mut ThreadStats, at: u64, ticks: u64) {
    t.backwards += 1;
    if t.first_backwards.is_none() {
        t.first_backwards = Some((at, ticks));
    }
}

/// What the decoder learned about one thread.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ThreadStats {
    /// Thread id from `NewBuffer`.
    pub tid: i32,
    /// Process id from the `Pid` record of the block that opened the window (0 if none).
    pub pid: i32,
    /// Timestamp at the start of the thread's first block with function records: the start of
    /// its window. (A block of extension records only, like fdr's leading block, does not open
    /// a window.)
    pub first_tsc: u64,
    /// Timestamp of the thread's last record: the end of its window.
    pub last_tsc: u64,
    /// Blocks of this thread.
    pub blocks: u64,
    /// Function records of this thread.
    pub function_records: u64,
    /// Bytes of the thread's blocks in its window (from the block that opened it on; extents
    /// records included): what its window took of the recorder's buffers.
    pub window_bytes: u64,
    /// Wall clock at the start of the block that opened the window: seconds, microseconds.
    pub walltime: (i64, i32),
    /// CPU migrations inside blocks.
    pub cpu_changes: u64,
    /// `TSCWrap` records.
    pub tsc_wraps: u64,
    /// Times the thread's timestamp went backwards: a `NewCPUId` or `TSCWrap` older than the
    /// record before it, a block that starts before the thread's previous block ended, or an
    /// event with a negative delta. Durations across such a point come out as 0.
    pub backwards: u64,
    /// Where time first went backwards on this thread: the record's byte offset and by how
    /// many ticks.
    pub first_backwards: Option<(u64, u64)>,
}

/// The self-description a log carries in its extension records, plus the header.
#[derive(Clone, Debug, Default)]
pub struct LogInfo {
    /// The file header.
    pub header: FileHeader,
    /// The run record, if the log has one (logs from other XRay writers do not).
    pub run: Option<RunInfo>,
    /// The function table, in file order.
    pub functions: Vec<FunctionInfo>,
    /// Thread names and loss counters, in file order.
    pub threads: Vec<ThreadInfo>,
    /// Why the log was written, if it says.
    pub reason: Option<ReasonInfo>,
    /// The configuration the recording ran with, as `FDR_OPTIONS` words, if the log says.
    pub options: Option<String>,
    /// What the cost budget did, if the recording had one.
    pub budget: Option<crate::BudgetInfo>,
    /// Custom events that are not fdr's, and typed events.
    pub foreign_events: u64,
}

/// Turns a log into [`Event`]s.
///
/// ```
/// use fdr_format::events::{EventDecoder, EventKind};
/// use fdr_format::{function_record, meta, meta_bytes, FileHeader, FnKind};
/// let mut block = Vec::new();
/// for m in [meta::new_buffer(7), meta::walltime(0, 0), meta::pid(1), meta::new_cpu_id(0, 1000)] {
///     block.extend_from_slice(&meta_bytes(m));
/// }
/// block.extend_from_slice(&function_record(3, FnKind::Enter, 5).to_le_bytes());
/// block.extend_from_slice(&function_record(3, FnKind::Exit, 20).to_le_bytes());
/// let mut file = FileHeader::default().encode().to_vec();
/// file.extend_from_slice(&meta_bytes(meta::buffer_extents(block.len() as u64)));
/// file.extend_from_slice(&block);
///
/// let mut d = EventDecoder::new(&file[..]).unwrap();
/// let mut seen = Vec::new();
/// while let Some(e) = d.next_event().unwrap() {
///     seen.push((e.tsc, e.kind));
/// }
/// assert_eq!(seen, [(1000, EventKind::Block), (1005, EventKind::Enter { id: 3 }), (1025, EventKind::Exit { id: 3 })]);
/// assert_eq!(d.threads()[0].tid, 7);
/// ```
pub struct EventDecoder<R> {
    reader: Reader<R>,
    verifier: BlockVerifier,
    info: LogInfo,
    threads: Vec<ThreadStats>,
    by_tid: HashMap<i32, u32>,
    /// Current thread index (valid once a block has started).
    cur: u32,
    /// Base timestamp of the current thread.
    tsc: u64,
    /// Function records seen in the current block (flushed to the thread at block end).
    records: u64,
    /// A NewBuffer was seen and the Block event waits for the block's NewCPUId.
    block_pending: bool,
    /// Pid and walltime of the pending block.
    block_pid: i32,
    block_wall: (i64, i32),
    /// Timestamp at the start of the current block.
    block_tsc: u64,
    /// Size of the current block, its extents record included.
    block_bytes: u64,
    /// The current thread's window is open (it has had a function record).
    windowed: bool,
    /// Per thread index: its window is open.
    opened: Vec<bool>,
    in_block: bool,
    done: bool,
    /// Blocks started so far (the first one, fdr's leading block, is never skipped).
    blocks_started: u64,
    /// `(n, k)`: decode only the blocks of threads whose index is `k` modulo `n`.
    share: Option<(u32, u32)>,
    /// The current block is the first of the file but not of this share: its extension
    /// records are read, its other events are not reported.
    muted: bool,
    /// Which threads to decode, by thread id (and the tables read so far); decided once per
    /// thread, when its first block starts.
    keep: Option<ThreadChoice>,
    /// Per thread index: its blocks are decoded.
    kept: Vec<Option<bool>>,
    /// Each thread is read only until its window opens ([`EventDecoder::starts_only`]).
    starts_only: bool,
}

/// Decides, from a thread's id and the log's tables, whether its blocks are decoded.
type ThreadChoice = Box<dyn FnMut(i32, &LogInfo) -> bool>;

impl<R: Read + std::io::Seek> EventDecoder<R> {
    /// Reads the header of an input that can seek (a file): the blocks of threads left out by
    /// [`EventDecoder::share`] or [`EventDecoder::keep_threads`] are seeked over, not read.
    ///
    /// ```
    /// use fdr_format::events::EventDecoder;
    /// use fdr_format::FileHeader;
    /// let file = std::io::Cursor::new(FileHeader::default().encode().to_vec());
    /// let mut d = EventDecoder::seekable(file).unwrap();
    /// assert!(d.next_event().unwrap().is_none());
    /// ```
    pub fn seekable(inner: R) -> Result<EventDecoder<R>, FormatError> {
        Ok(EventDecoder::with_reader(Reader::seekable(inner)?))
    }
}

impl<R: Read> EventDecoder<R> {
    /// Reads the header.
    pub fn new(inner: R) -> Result<EventDecoder<R>, FormatError> {
        Ok(EventDecoder::with_reader(Reader::new(inner)?))
    }

    fn with_reader(reader: Reader<R>) -> EventDecoder<R> {
        let header = *reader.header();
        EventDecoder {
            reader,
            verifier: BlockVerifier::new(),
            info: LogInfo {
                header,
                ..LogInfo::default()
            },
            threads: Vec::new(),
            by_tid: HashMap::new(),
            cur: 0,
            tsc: 0,
            records: 0,
            block_pending: false,
            block_pid: 0,
            block_wall: (0, 0),
            block_tsc: 0,
            block_bytes: 0,
            windowed: false,
            opened: Vec::new(),
            in_block: false,
            done: false,
            blocks_started: 0,
            share: None,
            muted: false,
            keep: None,
            kept: Vec::new(),
            starts_only: false,
        }
    }

    /// Decode only the blocks of the threads `keep` chooses (and the file's first block, which
    /// carries fdr's tables), given each thread's id and the tables read so far; skip the others
    /// unread. The thread list still names every thread, but the others have no records.
    ///
    /// ```
    /// use fdr_format::events::EventDecoder;
    /// use fdr_format::{function_record, meta, meta_bytes, FileHeader, FnKind};
    /// let mut file = FileHeader::default().encode().to_vec();
    /// for tid in [0, 7, 8] {
    ///     let mut block = Vec::new();
    ///     for m in [meta::new_buffer(tid), meta::walltime(0, 0), meta::new_cpu_id(0, 10)] {
    ///         block.extend_from_slice(&meta_bytes(m));
    ///     }
    ///     block.extend_from_slice(&function_record(3, FnKind::Enter, 5).to_le_bytes());
    ///     file.extend_from_slice(&meta_bytes(meta::buffer_extents(block.len() as u64)));
    ///     file.extend_from_slice(&block);
    /// }
    /// let mut d = EventDecoder::new(&file[..]).unwrap();
    /// d.keep_threads(|tid, _| tid == 8);
    /// let mut tids = Vec::new();
    /// while let Some(e) = d.next_event().unwrap() {
    ///     tids.push(d.threads()[e.thread as usize].tid);
    /// }
    /// tids.dedup();
    /// assert_eq!(tids, [0, 8]); // the first block, and thread 8
    /// assert_eq!(d.threads()[1].function_records, 0);
    /// ```
    pub fn keep_threads(&mut self, keep: impl FnMut(i32, &LogInfo) -> bool + 'static) {
        self.keep = Some(Box::new(keep));
    }

    /// Decode each thread only until its window opens (its first function record, see
    /// [`ThreadStats::first_tsc`]): the rest of that block and the thread's later blocks are
    /// skipped unread (the file's first block, which carries fdr's tables, is read whole). What
    /// is left to learn is the tables and where each window starts, quickly: the threads'
    /// statistics hold their window's start, pid and wall clock, not its end or its records,
    /// and no event is reported from a window's first function record on.
    ///
    /// ```
    /// use fdr_format::events::EventDecoder;
    /// use fdr_format::{function_record, meta, meta_bytes, FileHeader, FnKind};
    /// let mut file = FileHeader::default().encode().to_vec();
    /// for (tid, tsc) in [(0, 5), (7, 10), (8, 20), (7, 30)] {
    ///     let mut block = Vec::new();
    ///     for m in [meta::new_buffer(tid), meta::walltime(0, 0), meta::new_cpu_id(0, tsc)] {
    ///         block.extend_from_slice(&meta_bytes(m));
    ///     }
    ///     for _ in 0..3 {
    ///         block.extend_from_slice(&function_record(3, FnKind::Enter, 5).to_le_bytes());
    ///     }
    ///     file.extend_from_slice(&meta_bytes(meta::buffer_extents(block.len() as u64)));
    ///     file.extend_from_slice(&block);
    /// }
    /// let mut d = EventDecoder::new(&file[..]).unwrap();
    /// d.starts_only();
    /// while d.next_event().unwrap().is_some() {}
    /// let starts: Vec<(i32, u64, u64)> =
    ///     d.threads().iter().map(|t| (t.tid, t.first_tsc, t.function_records)).collect();
    /// assert_eq!(starts, [(0, 5, 3), (7, 10, 1), (8, 20, 1)]);
    /// ```
    pub fn starts_only(&mut self) {
        self.starts_only = true;
    }

    /// Decode only the blocks of threads whose index is `k` modulo `n` (and the file's first
    /// block, which carries fdr's tables); skip the others unread. `n` decoders, one per `k`,
    /// see every block between them, so they can work in parallel. The thread list still
    /// names every thread, but only those of this share have complete statistics.
    ///
    /// ```
    /// use fdr_format::events::EventDecoder;
    /// use fdr_format::{function_record, meta, meta_bytes, FileHeader, FnKind};
    /// let mut file = FileHeader::default().encode().to_vec();
    /// for tid in [0, 7, 8] {
    ///     let mut block = Vec::new();
    ///     for m in [meta::new_buffer(tid), meta::walltime(0, 0), meta::new_cpu_id(0, 10)] {
    ///         block.extend_from_slice(&meta_bytes(m));
    ///     }
    ///     block.extend_from_slice(&function_record(3, FnKind::Enter, 5).to_le_bytes());
    ///     file.extend_from_slice(&meta_bytes(meta::buffer_extents(block.len() as u64)));
    ///     file.extend_from_slice(&block);
    /// }
    /// let count = |k| {
    ///     let mut d = EventDecoder::new(&file[..]).unwrap();
    ///     d.share(2, k);
    ///     let mut tids = Vec::new();
    ///     while let Some(e) = d.next_event().unwrap() {
    ///         tids.push(d.threads()[e.thread as usize].tid);
    ///     }
    ///     tids.dedup();
    ///     tids
    /// };
    /// assert_eq!(count(0), [0, 8]); // thread indices 0 and 2
    /// assert_eq!(count(1), [0, 7]); // the first block, and thread index 1
    /// ```
    pub fn share(&mut self, n: u32, k: u32) {
        self.share = (n > 1).then_some((n, k % n));
    }

    /// Header and extension records seen so far (the function table is complete once the
    /// leading block has been read, that is before the first function event).
    pub fn info(&self) -> &LogInfo {
        &self.info
    }

    /// Threads seen so far; complete (with `last_tsc`) once [`Self::next_event`] returned `None`.
    pub fn threads(&self) -> &[ThreadStats] {
        &self.threads
    }

    /// Byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.reader.offset()
    }

    /// The current thread's first function record: its window starts with this block.
    #[cold]
    fn open_window(&mut self) {
        self.windowed = true;
        self.opened[self.cur as usize] = true;
        let t = &mut self.threads[self.cur as usize];
        t.first_tsc = self.block_tsc;
        t.pid = self.block_pid;
        t.walltime = self.block_wall;
    }

    fn end_block(&mut self) {
        if self.in_block {
            let t = &mut self.threads[self.cur as usize];
            t.last_tsc = self.tsc;
            t.function_records += self.records;
            if self.windowed {
                t.window_bytes = t.window_bytes.saturating_add(self.block_bytes);
            }
            self.records = 0;
            self.in_block = false;
        }
    }

    /// The next event, `None` at the end of the log.
    pub fn next_event(&mut self) -> Result<Option<Event>, FormatError> {
        Ok(self.next_event_at()?.map(|(e, _)| e))
    }

    /// Calls `f` with every remaining event and the byte offset of its record, in file order,
    /// stopping at the first error (the decoder's or `f`'s). Faster than [`Self::next_event`]
    /// in a loop: runs of function records are decoded straight from the read buffer.
    ///
    /// ```
    /// use fdr_format::events::{EventDecoder, EventKind};
    /// use fdr_format::{function_record, meta, meta_bytes, FileHeader, FnKind, FormatError};
    /// let mut block = Vec::new();
    /// for m in [meta::new_buffer(7), meta::walltime(0, 0), meta::new_cpu_id(0, 10)] {
    ///     block.extend_from_slice(&meta_bytes(m));
    /// }
    /// block.extend_from_slice(&function_record(3, FnKind::Enter, 5).to_le_bytes());
    /// let mut file = FileHeader::default().encode().to_vec();
    /// file.extend_from_slice(&meta_bytes(meta::buffer_extents(block.len() as u64)));
    /// file.extend_from_slice(&block);
    /// let mut d = EventDecoder::new(&file[..]).unwrap();
    /// let mut seen = Vec::new();
    /// d.for_each(|e, at| {
    ///     seen.push((at, e.kind));
    ///     Ok::<(), FormatError>(())
    /// })
    /// .unwrap();
    /// assert_eq!(seen, [(80, EventKind::Block), (96, EventKind::Enter { id: 3 })]);
    /// ```
    pub fn for_each<E, F>(&mut self, mut f: F) -> Result<(), E>
    where
        E: From<FormatError>,
        F: FnMut(Event, u64) -> Result<(), E>,
    {
        loop {
            if self.in_block && !self.muted && !self.starts_only {
                let base = self.reader.offset();
                let bytes = self.reader.block_bytes(FUNCTION_RECORD_SIZE)?;
                let mut i = 0;
                let mut tsc = self.tsc;
                let mut args_open = false;
                while i + FUNCTION_RECORD_SIZE <= bytes.len() {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(&bytes[i..i + FUNCTION_RECORD_SIZE]);
                    let w = u64::from_le_bytes(w);
                    let lo = w as u32;
                    if lo & 1 != 0 {
                        break;
                    }
                    let id = lo >> 4;
                    let kind = match (lo >> 1) & 7 {
                        0 => EventKind::Enter { id },
                        1 => EventKind::Exit { id },
                        2 => EventKind::TailExit { id },
                        3 => EventKind::EnterArgs { id },
                        // Undefined kinds go the slow way, which reports them.
                        _ => break,
                    };
                    args_open = matches!(kind, EventKind::EnterArgs { .. });
                    tsc = tsc.wrapping_add(w >> 32);
                    f(
                        Event {
                            thread: self.cur,
                            tsc,
                            kind,
                        },
                        base + i as u64,
                    )?;
                    i += FUNCTION_RECORD_SIZE;
                }
                if i > 0 {
                    if !self.windowed {
                        self.open_window();
                    }
                    self.tsc = tsc;
                    self.records += (i / FUNCTION_RECORD_SIZE) as u64;
                    self.verifier.function_run(args_open);
                    self.reader.consume(i);
                    continue;
                }
            }
            match self.next_event_at()? {
                Some((e, at)) => f(e, at)?,
                None => return Ok(()),
            }
        }
    }

    fn next_event_at(&mut self) -> Result<Option<(Event, u64)>, FormatError> {
        loop {
            if self.done {
                return Ok(None);
            }
            let Some((at, rec)) = self.reader.next_record()? else {
                self.verifier
                    .finish(self.reader.offset(), self.reader.block_left())?;
                self.end_block();
                self.done = true;
                return Ok(None);
            };
            self.verifier.record(at, &rec)?;
            // Function records are the bulk of a log: their arm comes first, and is inlined.
            let kind = match rec {
                Record::Function { id, kind, delta } => self.function(at, id, kind, delta)?,
                Record::BufferExtents { size } => {
                    self.end_block();
                    self.block_bytes = size.saturating_add(crate::METADATA_RECORD_SIZE as u64);
                    None
                }
                Record::NewBuffer { tid } => {
                    self.new_buffer(tid)?;
                    None
                }
                Record::Walltime { secs, micros } => {
                    self.block_wall = (secs, micros);
                    None
                }
                Record::Pid { pid } => {
                    self.block_pid = pid;
                    None
                }
                Record::NewCpuId { cpu, tsc } => Some(self.cpu_id(at, cpu, tsc)),
                Record::TscWrap { tsc } => {
                    self.set_tsc(at, tsc);
                    self.threads[self.cur as usize].tsc_wraps += 1;
                    None
                }
                Record::CallArgument { value } => (!self.muted).then_some(EventKind::Arg { value }),
                Record::CustomEvent { delta, payload } => {
                    advance(
                        &mut self.tsc,
                        &mut self.threads[self.cur as usize],
                        at,
                        delta,
                    );
                    custom(&mut self.info, self.muted, at, payload)?
                }
                Record::TypedEvent { delta, .. } => {
                    advance(
                        &mut self.tsc,
                        &mut self.threads[self.cur as usize],
                        at,
                        delta,
                    );
                    self.info.foreign_events += 1;
                    None
                }
                Record::EndOfBuffer => None,
            };
            if let Some(kind) = kind {
                let e = Event {
                    thread: self.cur,
                    tsc: self.tsc,
                    kind,
                };
                return Ok(Some((e, at)));
            }
        }
    }

    /// A function record: its event, or `None` in a muted block.
    #[inline(always)]
    fn function(
        &mut self,
        at: u64,
        id: u32,
        kind: FnKind,
        delta: u32,
    ) -> Result<Option<EventKind>, FormatError> {
        if !self.in_block {
            return Err(FormatError::new(
                at,
                "expected an event inside a block".into(),
            ));
        }
        let opening = !self.windowed;
        if opening {
            self.open_window();
        }
        self.tsc = self.tsc.wrapping_add(u64::from(delta));
        self.records += 1;
        if opening && self.starts_only && self.blocks_started > 1 {
            self.skip_rest_of_block()?;
        }
        if self.muted {
            return Ok(None);
        }
        Ok(Some(match kind {
            FnKind::Enter => EventKind::Enter { id },
            FnKind::EnterArgs => EventKind::EnterArgs { id },
            FnKind::Exit => EventKind::Exit { id },
            FnKind::TailExit => EventKind::TailExit { id },
        }))
    }

    /// A block's first record: its thread (a new one gets its stats), whether the block is
    /// read, muted (the leading block of a thread not kept, which carries the tables) or
    /// skipped unread.
    fn new_buffer(&mut self, tid: i32) -> Result<(), FormatError> {
        let next = self.threads.len() as u32;
        let idx = *self.by_tid.entry(tid).or_insert(next);
        if idx == next {
            self.threads.push(ThreadStats {
                tid,
                ..ThreadStats::default()
            });
            self.opened.push(false);
            // Decided at the thread's first block after the leading one: the leading block
            // carries the thread names a choice may go by, after its own NewBuffer, and
            // belongs to the log's first thread.
            self.kept.push(None);
        }
        self.cur = idx;
        self.blocks_started += 1;
        if self.blocks_started > 1 && self.kept[idx as usize].is_none() {
            let kept = match self.keep.as_mut() {
                Some(keep) => keep(tid, &self.info),
                None => true,
            };
            self.kept[idx as usize] = Some(kept);
        }
        self.muted = false;
        let shared = self.share.map_or(true, |(n, k)| idx % n == k);
        let started = self.starts_only && self.opened[idx as usize];
        if !shared || self.kept[idx as usize] == Some(false) || started {
            if self.blocks_started > 1 {
                self.reader.skip_block()?;
                self.verifier.block_skipped();
                return Ok(());
            }
            self.muted = true;
        }
        self.block_pending = true;
        self.block_pid = 0;
        self.block_wall = (0, 0);
        Ok(())
    }

    /// Skips what is left of the current block, its events unreported ([`Self::starts_only`]).
    #[cold]
    fn skip_rest_of_block(&mut self) -> Result<(), FormatError> {
        self.reader.skip_block()?;
        self.verifier.block_skipped();
        self.muted = true;
        Ok(())
    }

    /// A CPU record: the start of a block's events (its first), or a migration.
    fn cpu_id(&mut self, at: u64, cpu: u16, tsc: u64) -> EventKind {
        let t = &self.threads[self.cur as usize];
        let before = if self.block_pending {
            (t.blocks > 0).then_some(t.last_tsc)
        } else {
            Some(self.tsc)
        };
        if let Some(before) = before.filter(|&b| tsc < b) {
            went_back(&mut self.threads[self.cur as usize], at, before - tsc);
        }
        self.tsc = tsc;
        if self.block_pending {
            self.block_pending = false;
            self.in_block = true;
            self.block_tsc = tsc;
            self.windowed = self.opened[self.cur as usize];
            self.threads[self.cur as usize].blocks += 1;
            return EventKind::Block;
        }
        self.threads[self.cur as usize].cpu_changes += 1;
        EventKind::Cpu { cpu }
    }

    /// A record that sets the time: counted when it goes back.
    fn set_tsc(&mut self, at: u64, tsc: u64) {
        if tsc < self.tsc {
            went_back(&mut self.threads[self.cur as usize], at, self.tsc - tsc);
        }
        self.tsc = tsc;
    }
}

/// A record that moves the time `tsc` of thread `t` by a signed delta: counted when it goes
/// back. (Free of the decoder, which the record's payload still borrows.)
fn advance(tsc: &mut u64, t: &mut ThreadStats, at: u64, delta: i32) {
    if delta < 0 {
        went_back(t, at, u64::from(delta.unsigned_abs()));
    }
    *tsc = tsc.wrapping_add(delta as i64 as u64);
}

/// A custom event: fdr's task, link and cull events are events of the thread (none in a `muted`
/// block); its table records (run, function, thread, reason) go into `info`; others are
/// counted.
fn custom(
    info: &mut LogInfo,
    muted: bool,
    at: u64,
    payload: &[u8],
) -> Result<Option<EventKind>, FormatError> {
    if let Some((kind, id, task)) = crate::decode_task_event(payload) {
        return Ok((!muted).then_some(EventKind::Task { kind, id, task }));
    }
    if let Some((id, task)) = crate::decode_polled_event(payload) {
        return Ok((!muted).then_some(EventKind::Polled { id, task }));
    }
    if let Some(link) = crate::decode_link_event(payload) {
        return Ok((!muted).then_some(EventKind::Link(link)));
    }
    if let Some(a) = crate::decode_await_event(payload) {
        return Ok((!muted).then_some(EventKind::Await(a)));
    }
    if let Some(w) = crate::decode_wake_event(payload) {
        return Ok((!muted).then_some(EventKind::Woken(w)));
    }
    if let Some((kind, id, run)) = crate::decode_cull_event(payload) {
        return Ok((!muted).then_some(EventKind::Cull { kind, id, run }));
    }
    match Extension::decode(payload) {
        Ok(Some(Extension::Run(r))) => info.run = Some(r),
        Ok(Some(Extension::Function(f))) => info.functions.push(f),
        Ok(Some(Extension::Thread(t))) => info.threads.push(t),
        Ok(Some(Extension::Reason(r))) => info.reason = Some(r),
        Ok(Some(Extension::Options(o))) => info.options = Some(o),
        Ok(Some(Extension::Budget(b))) => info.budget = Some(b),
        Ok(Some(Extension::Unknown(_))) => {}
        Ok(None) => info.foreign_events += 1,
        Err(msg) => return Err(FormatError::new(at, format!("malformed fdr record: {msg}"))),
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{function_record, meta, meta_bytes, MetaWords};

    fn block(out: &mut Vec<u8>, tid: i32, tsc: u64, body: &[Vec<u8>]) {
        let mut b = Vec::new();
        let pre: [MetaWords; 4] = [
            meta::new_buffer(tid),
            meta::walltime(10, 20),
            meta::pid(99),
            meta::new_cpu_id(1, tsc),
        ];
        for m in pre {
            b.extend_from_slice(&meta_bytes(m));
        }
        for r in body {
            b.extend_from_slice(r);
        }
        out.extend_from_slice(&meta_bytes(meta::buffer_extents(b.len() as u64)));
        out.extend_from_slice(&b);
    }

    fn f(id: u32, k: FnKind, d: u32) -> Vec<u8> {
        function_record(id, k, d).to_le_bytes().to_vec()
    }

    fn m(w: MetaWords) -> Vec<u8> {
        meta_bytes(w).to_vec()
    }

    #[test]
    fn timestamps_follow_deltas_wraps_and_cpu_changes() {
        let mut file = FileHeader::default().encode().to_vec();
        let ext = Extension::Function(FunctionInfo {
            id: 1,
            name: "a".into(),
            ..FunctionInfo::default()
        })
        .encode();
        let mut ce = m(meta::custom_event(ext.len() as i32, 0));
        ce.extend_from_slice(&ext);
        block(&mut file, 0, 0, &[ce]);
        block(
            &mut file,
            5,
            100,
            &[
                f(1, FnKind::Enter, 1),
                m(meta::tsc_wrap(1 << 40)),
                f(1, FnKind::Exit, 2),
                m(meta::new_cpu_id(3, 5000)),
                f(1, FnKind::EnterArgs, 7),
                m(meta::call_argument(42)),
                f(1, FnKind::TailExit, 1),
            ],
        );
        block(&mut file, 6, 50, &[f(1, FnKind::Enter, 1)]);
        block(&mut file, 5, 6000, &[f(1, FnKind::Exit, 4)]);
        let mut d = EventDecoder::new(&file[..]).unwrap();
        let mut got = Vec::new();
        while let Some(e) = d.next_event().unwrap() {
            got.push((e.thread, e.tsc, e.kind));
        }
        use EventKind::*;
        assert_eq!(
            got,
            [
                (0, 0, Block),
                (1, 100, Block),
                (1, 101, Enter { id: 1 }),
                (1, (1 << 40) + 2, Exit { id: 1 }),
                (1, 5000, Cpu { cpu: 3 }),
                (1, 5007, EnterArgs { id: 1 }),
                (1, 5007, Arg { value: 42 }),
                (1, 5008, TailExit { id: 1 }),
                (2, 50, Block),
                (2, 51, Enter { id: 1 }),
                (1, 6000, Block),
                (1, 6004, Exit { id: 1 }),
            ]
        );
        assert_eq!(d.info().functions[0].name, "a");
        let t = &d.threads()[1];
        assert_eq!(
            (
                t.tid,
                t.pid,
                t.first_tsc,
                t.last_tsc,
                t.blocks,
                t.function_records
            ),
            (5, 99, 100, 6004, 2, 5)
        );
        assert_eq!((t.cpu_changes, t.tsc_wraps, t.walltime), (1, 1, (10, 20)));
        // Extents, preamble and events of each block in the window; none for the tables' block.
        let sizes: Vec<u64> = d.threads().iter().map(|t| t.window_bytes).collect();
        assert_eq!(sizes, [0, (80 + 4 * 8 + 3 * 16) + (80 + 8), 80 + 8]);
    }

    #[test]
    fn for_each_and_next_event_agree_and_a_tables_only_block_opens_no_window() {
        let mut file = FileHeader::default().encode().to_vec();
        let ext = Extension::Thread(ThreadInfo {
            tid: 5,
            name: "t".into(),
            records_dropped: 0,
        })
        .encode();
        let mut ce = m(meta::custom_event(ext.len() as i32, 0));
        ce.extend_from_slice(&ext);
        // The leading block belongs to thread 5 and is older than its first call.
        block(&mut file, 5, 10, &[ce]);
        let mut body = Vec::new();
        for i in 0..50 {
            body.push(f(1 + i % 3, FnKind::Enter, 3));
            if i % 7 == 0 {
                body.push(m(meta::new_cpu_id(2, 400 + i as u64 * 20)));
            }
            body.push(f(1 + i % 3, FnKind::Exit, 4));
        }
        block(&mut file, 5, 100, &body);
        block(&mut file, 6, 120, &body[..20]);
        let mut a = Vec::new();
        let mut d = EventDecoder::new(&file[..]).unwrap();
        while let Some(e) = d.next_event().unwrap() {
            a.push(e);
        }
        let first = d.threads()[0].clone();
        let mut b = Vec::new();
        let mut d = EventDecoder::new(&file[..]).unwrap();
        d.for_each(|e, _| {
            b.push(e);
            Ok::<(), FormatError>(())
        })
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 3 + 100 + 8 + 20);
        assert_eq!(d.threads()[0], first);
        assert_eq!(
            (
                first.tid,
                first.first_tsc,
                first.blocks,
                first.function_records
            ),
            (5, 100, 2, 100)
        );
    }

    #[test]
    fn a_cut_block_is_an_error() {
        let mut file = FileHeader::default().encode().to_vec();
        block(&mut file, 5, 100, &[f(1, FnKind::Enter, 1)]);
        file.truncate(file.len() - 8);
        let mut d = EventDecoder::new(&file[..]).unwrap();
        let e = loop {
            match d.next_event() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("no error"),
                Err(e) => break e,
            }
        };
        assert!(
            e.message.contains("8 bytes before the end of the block"),
            "{e}"
        );
    }

    #[test]
    fn time_going_backwards_is_counted_per_thread_with_its_first_place() {
        let mut file = FileHeader::default().encode().to_vec();
        block(
            &mut file,
            5,
            1000,
            &[
                f(1, FnKind::Enter, 10),
                m(meta::new_cpu_id(1, 400)), // back from 1010
                f(1, FnKind::Exit, 5),
                m(meta::tsc_wrap(300)),       // back from 405
                m(meta::custom_event(0, -7)), // back by 7
            ],
        );
        let first_at = 32 + 16 * 5 + 8;
        block(&mut file, 6, 50, &[f(1, FnKind::Enter, 1)]); // older, but another thread
        block(&mut file, 5, 250, &[f(1, FnKind::Exit, 1)]); // starts before 293
        let mut d = EventDecoder::new(&file[..]).unwrap();
        while d.next_event().unwrap().is_some() {}
        let t = &d.threads()[0];
        assert_eq!(
            (t.tid, t.backwards, t.first_backwards),
            (5, 4, Some((first_at, 610)))
        );
        let t = &d.threads()[1];
        assert_eq!((t.tid, t.backwards, t.first_backwards), (6, 0, None));
    }
}
