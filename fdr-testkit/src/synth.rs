//! Builds fdr logs by hand, for tests, benchmarks and fuzzing seeds: the same layout the
//! runtime writes (header, a leading block of extension records, then one block per buffer),
//! made with `fdr-format`'s own encoders ([`lead_block`], [`block_preamble`], the record and
//! event encoders), so that a synthetic log cannot drift from the format.
//!
//! ```
//! use fdr_testkit::synth::LogBuilder;
//! let mut log = LogBuilder::new(1_000_000_000);
//! log.function(1, "app::main", &[]);
//! let mut b = log.block(7, 0, 1_000);
//! b.enter(1, 1_000);
//! b.exit(1, 3_000);
//! b.finish();
//! let bytes = log.finish();
//! assert_eq!(&bytes[..2], &5u16.to_le_bytes());
//! ```

use fdr_format::{
    await_payload, block_preamble, cull_payload, function_record, lead_block, link_payload, meta,
    meta_bytes, polled_payload, task_payload, wake_payload, AwaitEvent, BlockStart, CullKind,
    Extension, FileHeader, FnKind, FunctionInfo, FunctionKind, LeadStart, MetaWords, ReasonInfo,
    RunInfo, TaskKind, TaskLink, ThreadInfo, WakeEvent, BLOCK_PREAMBLE_AFTER_EXTENTS,
    BLOCK_PREAMBLE_WORDS,
};

/// A log under construction.
pub struct LogBuilder {
    header: FileHeader,
    lead: (i32, u64),
    leading: Vec<Extension>,
    blocks: Vec<u8>,
}

/// One block under construction; timestamps are absolute and must not go backwards.
pub struct BlockBuilder<'a> {
    log: &'a mut LogBuilder,
    start: BlockStart,
    /// The events after the preamble.
    events: Vec<u8>,
    tsc: u64,
}

fn push_meta(out: &mut Vec<u8>, m: MetaWords) {
    out.extend_from_slice(&meta_bytes(m));
}

fn words_bytes(words: &[u64]) -> impl Iterator<Item = u8> + '_ {
    words.iter().flat_map(|w| w.to_le_bytes())
}

impl LogBuilder {
    /// A log whose clock ticks `freq` times per second.
    pub fn new(freq: u64) -> LogBuilder {
        LogBuilder {
            header: FileHeader {
                cycle_frequency: freq,
                buffer_size: 65536,
                ..FileHeader::default()
            },
            leading: Vec::new(),
            blocks: Vec::new(),
            lead: (0, 0),
        }
    }

    /// Gives the leading block a thread id and a timestamp (default: thread 0 at 0). The
    /// runtime gives it to the first recorded thread, dated at the start of recording.
    pub fn leading_block(&mut self, tid: i32, tsc: u64) {
        self.lead = (tid, tsc);
    }

    /// Adds an extension record to the leading block.
    pub fn extension(&mut self, e: &Extension) {
        self.leading.push(e.clone());
    }

    /// Adds the run record.
    pub fn run(&mut self, r: RunInfo) {
        self.extension(&Extension::Run(r));
    }

    /// Adds the reason record: why the log was written.
    ///
    /// ```
    /// use fdr_testkit::synth::LogBuilder;
    /// use fdr_format::{events::EventDecoder, Reason, ReasonInfo};
    /// let mut log = LogBuilder::new(1_000_000_000);
    /// log.reason(ReasonInfo { reason: Reason::Signal, ..ReasonInfo::default() });
    /// let bytes = log.finish();
    /// let mut d = EventDecoder::new(&bytes[..]).unwrap();
    /// while d.next_event().unwrap().is_some() {}
    /// assert_eq!(d.info().reason.as_ref().unwrap().reason, Reason::Signal);
    /// ```
    pub fn reason(&mut self, r: ReasonInfo) {
        self.extension(&Extension::Reason(r));
    }

    /// Adds a function-table entry named `name` (file `src/lib.rs`, line = id).
    pub fn function(&mut self, id: u32, name: &str, args: &[&str]) {
        self.function_of_kind(id, name, args, FunctionKind::Function);
    }

    /// Adds a function-table entry of the given kind (an `async fn`, a scope).
    ///
    /// ```
    /// use fdr_testkit::synth::LogBuilder;
    /// use fdr_format::{events::EventDecoder, FunctionKind};
    /// let mut log = LogBuilder::new(1_000_000_000);
    /// log.function_of_kind(2, "app::request", &[], FunctionKind::Async);
    /// let bytes = log.finish();
    /// let mut d = EventDecoder::new(&bytes[..]).unwrap();
    /// while d.next_event().unwrap().is_some() {}
    /// assert_eq!(d.info().functions[0].kind, FunctionKind::Async);
    /// ```
    pub fn function_of_kind(&mut self, id: u32, name: &str, args: &[&str], kind: FunctionKind) {
        self.extension(&Extension::Function(FunctionInfo {
            id,
            name: name.to_string(),
            file: "src/lib.rs".to_string(),
            line: id,
            kind,
            args: args.iter().map(|a| a.to_string()).collect(),
            arg_kinds: Vec::new(),
            column: 0,
        }));
    }

    /// Adds an await site of the async function named `function`: a function-table entry of
    /// kind [`FunctionKind::Await`] at `file:line:column`.
    ///
    /// ```
    /// use fdr_testkit::synth::LogBuilder;
    /// use fdr_format::events::EventDecoder;
    /// let mut log = LogBuilder::new(1_000_000_000);
    /// log.await_site(9, "app::request", "src/app.rs", 12, 30);
    /// let bytes = log.finish();
    /// let mut d = EventDecoder::new(&bytes[..]).unwrap();
    /// while d.next_event().unwrap().is_some() {}
    /// assert_eq!(d.info().functions[0].location(), "src/app.rs:12:30");
    /// ```
    pub fn await_site(&mut self, id: u32, function: &str, file: &str, line: u32, column: u32) {
        self.extension(&Extension::Function(FunctionInfo {
            id,
            name: function.to_string(),
            file: file.to_string(),
            line,
            kind: FunctionKind::Await,
            args: Vec::new(),
            arg_kinds: Vec::new(),
            column,
        }));
    }

    /// Names a thread.
    pub fn thread(&mut self, tid: i32, name: &str) {
        self.extension(&Extension::Thread(ThreadInfo {
            tid,
            name: name.to_string(),
            records_dropped: 0,
        }));
    }

    /// Starts a block of thread `tid` on `cpu` at `tsc`.
    pub fn block(&mut self, tid: i32, cpu: u16, tsc: u64) -> BlockBuilder<'_> {
        BlockBuilder {
            log: self,
            start: BlockStart {
                tid,
                wall_secs: 0,
                wall_micros: 0,
                pid: 1,
                cpu,
                tsc,
            },
            events: Vec::new(),
            tsc,
        }
    }

    /// The finished file.
    pub fn finish(self) -> Vec<u8> {
        let mut f = self.header.encode().to_vec();
        // Dated one microsecond before a start at 1 µs: a wall time of 0.
        let start = LeadStart {
            tid: self.lead.0,
            pid: 1,
            start_secs: 0,
            start_nanos: 1000,
            start_tsc: self.lead.1,
        };
        f.extend_from_slice(&lead_block(&start, &self.leading));
        f.extend_from_slice(&self.blocks);
        f
    }
}

impl BlockBuilder<'_> {
    /// Moves the block's clock to `tsc`: the delta to write, after a `TSCWrap` if it does not
    /// fit `limit` or time goes back.
    fn advance(&mut self, tsc: u64, limit: u64) -> u64 {
        let back = tsc < self.tsc;
        let delta = tsc.wrapping_sub(self.tsc);
        self.tsc = tsc;
        if back || delta > limit {
            push_meta(&mut self.events, meta::tsc_wrap(tsc));
            0
        } else {
            delta
        }
    }

    fn func(&mut self, id: u32, kind: FnKind, tsc: u64) {
        let delta = self.advance(tsc, u64::from(u32::MAX)) as u32;
        self.events
            .extend_from_slice(&function_record(id, kind, delta).to_le_bytes());
    }

    /// A custom event of `payload` at `tsc`, as the runtime writes task, cull and link events.
    fn custom(&mut self, payload: &[u64], tsc: u64) {
        let delta = self.advance(tsc, i32::MAX as u64) as i32;
        push_meta(
            &mut self.events,
            meta::custom_event(8 * payload.len() as i32, delta),
        );
        self.events.extend(words_bytes(payload));
    }

    /// A link event at `tsc`: a task tied to its parent, or to a task it follows from.
    ///
    /// ```
    /// use fdr_testkit::synth::LogBuilder;
    /// use fdr_format::{LinkKind, TaskLink};
    /// let mut log = LogBuilder::new(1_000_000_000);
    /// let mut b = log.block(7, 0, 100);
    /// b.link(TaskLink { kind: LinkKind::Parent, id: 2, task: 9, other_id: 1, other_task: 8 }, 150);
    /// assert_eq!(b.len(), 64 + 16 + 32); // preamble, the event and its payload
    /// ```
    pub fn link(&mut self, link: TaskLink, tsc: u64) {
        self.custom(&link_payload(link), tsc);
    }

    /// An entry.
    pub fn enter(&mut self, id: u32, tsc: u64) {
        self.func(id, FnKind::Enter, tsc);
    }

    /// An entry with logged arguments.
    pub fn enter_args(&mut self, id: u32, tsc: u64, args: &[u64]) {
        self.func(id, FnKind::EnterArgs, tsc);
        for &a in args {
            push_meta(&mut self.events, meta::call_argument(a));
        }
    }

    /// An exit.
    pub fn exit(&mut self, id: u32, tsc: u64) {
        self.func(id, FnKind::Exit, tsc);
    }

    /// A tail exit.
    pub fn tail_exit(&mut self, id: u32, tsc: u64) {
        self.func(id, FnKind::TailExit, tsc);
    }

    /// A task event of the async function `id`: task `task` created, completed or cancelled.
    ///
    /// ```
    /// use fdr_testkit::synth::LogBuilder;
    /// use fdr_format::events::{EventDecoder, EventKind};
    /// use fdr_format::TaskKind;
    /// let mut log = LogBuilder::new(1_000_000_000);
    /// let mut b = log.block(7, 0, 100);
    /// b.task(TaskKind::Created, 3, 42, 150);
    /// b.finish();
    /// let bytes = log.finish();
    /// let mut d = EventDecoder::new(&bytes[..]).unwrap();
    /// let mut kinds = Vec::new();
    /// while let Some(e) = d.next_event().unwrap() {
    ///     kinds.push((e.tsc, e.kind));
    /// }
    /// assert_eq!(kinds[2], (150, EventKind::Task { kind: TaskKind::Created, id: 3, task: 42 }));
    /// ```
    pub fn task(&mut self, kind: TaskKind, id: u32, task: u64, tsc: u64) {
        self.custom(&task_payload(kind, id, task), tsc);
    }

    /// A poll event at `tsc`: the poll of the async function `id` that just exited served task
    /// `task` (the runtime writes it right after the poll's exit).
    ///
    /// ```
    /// use fdr_testkit::synth::LogBuilder;
    /// let mut log = LogBuilder::new(1_000_000_000);
    /// let mut b = log.block(7, 0, 100);
    /// b.polled(3, 42, 150);
    /// assert_eq!(b.len(), 64 + 16 + 16); // preamble, the event and its payload
    /// ```
    pub fn polled(&mut self, id: u32, task: u64, tsc: u64) {
        self.custom(&polled_payload(id, task), tsc);
    }

    /// An await event at `tsc`: a wait at an await site ended (written inside the poll that
    /// passed the await, or right after the task's cancellation when `dropped`).
    ///
    /// ```
    /// use fdr_testkit::synth::LogBuilder;
    /// use fdr_format::AwaitEvent;
    /// let mut log = LogBuilder::new(1_000_000_000);
    /// let mut b = log.block(7, 0, 100);
    /// b.awaited(AwaitEvent { site: 9, function: 3, waited: 40, polls: 1, dropped: false }, 150);
    /// assert_eq!(b.len(), 64 + 16 + 32); // preamble, the event and its payload
    /// ```
    pub fn awaited(&mut self, event: AwaitEvent, tsc: u64) {
        self.custom(&await_payload(event), tsc);
    }

    /// A wake event at `tsc`: the poll that began just before (its entry at `tsc`) was asked for
    /// by a wake-up at `event.woken_at`.
    ///
    /// ```
    /// use fdr_testkit::synth::LogBuilder;
    /// use fdr_format::WakeEvent;
    /// let mut log = LogBuilder::new(1_000_000_000);
    /// let mut b = log.block(7, 0, 100);
    /// b.enter(3, 150);
    /// b.woken(WakeEvent { function: 3, woken_at: 120, waker_tid: 8 }, 150);
    /// assert_eq!(b.len(), 64 + 8 + 16 + 32); // preamble, the entry, the event and its payload
    /// ```
    pub fn woken(&mut self, event: WakeEvent, tsc: u64) {
        self.custom(&wake_payload(event), tsc);
    }

    /// A cull event: function `id` stopped (or started again) being recorded on this thread
    /// after `run` erased calls in a row.
    ///
    /// ```
    /// use fdr_testkit::synth::LogBuilder;
    /// use fdr_format::CullKind;
    /// let mut log = LogBuilder::new(1_000_000_000);
    /// let mut b = log.block(7, 0, 100);
    /// b.cull(CullKind::Culled, 3, 10_000, 150);
    /// assert_eq!(b.len(), 64 + 16 + 16); // preamble, the event and its payload
    /// ```
    pub fn cull(&mut self, kind: CullKind, id: u32, run: u64, tsc: u64) {
        self.custom(&cull_payload(kind, id, run), tsc);
    }

    /// A migration to `cpu` at `tsc`.
    pub fn cpu(&mut self, cpu: u16, tsc: u64) {
        push_meta(&mut self.events, meta::new_cpu_id(cpu, tsc));
        self.tsc = tsc;
    }

    /// Bytes of the block so far after its extents record (preamble included).
    pub fn len(&self) -> usize {
        BLOCK_PREAMBLE_AFTER_EXTENTS + self.events.len()
    }

    /// True if nothing but the preamble was written.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Closes the block.
    pub fn finish(self) {
        let extents = self.len() as u64;
        let preamble: [u64; BLOCK_PREAMBLE_WORDS as usize] = block_preamble(&self.start, extents);
        let out = &mut self.log.blocks;
        out.extend(words_bytes(&preamble));
        out.extend_from_slice(&self.events);
    }
}
