//! Builds fdr logs by hand, for tests, benchmarks and fuzzing seeds: the same layout the
//! runtime writes (header, a leading block of extension records, then one block per buffer).
//!
//! ```
//! use fdr_cli::synth::LogBuilder;
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
    function_record, meta, meta_bytes, Extension, FileHeader, FnKind, FunctionInfo, MetaWords,
    RunInfo, ThreadInfo,
};

/// A log under construction.
pub struct LogBuilder {
    header: FileHeader,
    lead: (i32, u64),
    leading: Vec<Vec<u8>>,
    blocks: Vec<u8>,
}

/// One block under construction; timestamps are absolute and must not go backwards.
pub struct BlockBuilder<'a> {
    log: &'a mut LogBuilder,
    body: Vec<u8>,
    tsc: u64,
}

fn push_meta(out: &mut Vec<u8>, m: MetaWords) {
    out.extend_from_slice(&meta_bytes(m));
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
        let p = e.encode();
        let mut r = meta_bytes(meta::custom_event(p.len() as i32, 0)).to_vec();
        r.extend_from_slice(&p);
        self.leading.push(r);
    }

    /// Adds the run record.
    pub fn run(&mut self, r: RunInfo) {
        self.extension(&Extension::Run(r));
    }

    /// Adds a function-table entry named `name` (file `src/lib.rs`, line = id).
    pub fn function(&mut self, id: u32, name: &str, args: &[&str]) {
        self.extension(&Extension::Function(FunctionInfo {
            id,
            name: name.to_string(),
            file: "src/lib.rs".to_string(),
            line: id,
            args: args.iter().map(|a| a.to_string()).collect(),
            ..FunctionInfo::default()
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
        let mut body = Vec::new();
        push_meta(&mut body, meta::new_buffer(tid));
        push_meta(&mut body, meta::walltime(0, 0));
        push_meta(&mut body, meta::pid(1));
        push_meta(&mut body, meta::new_cpu_id(cpu, tsc));
        BlockBuilder {
            log: self,
            body,
            tsc,
        }
    }

    /// The finished file.
    pub fn finish(self) -> Vec<u8> {
        let mut f = self.header.encode().to_vec();
        let mut lead = Vec::new();
        push_meta(&mut lead, meta::new_buffer(self.lead.0));
        push_meta(&mut lead, meta::walltime(0, 0));
        push_meta(&mut lead, meta::pid(1));
        push_meta(&mut lead, meta::new_cpu_id(0, self.lead.1));
        for r in &self.leading {
            lead.extend_from_slice(r);
        }
        f.extend_from_slice(&meta_bytes(meta::buffer_extents(lead.len() as u64)));
        f.extend_from_slice(&lead);
        f.extend_from_slice(&self.blocks);
        f
    }
}

impl BlockBuilder<'_> {
    fn func(&mut self, id: u32, kind: FnKind, tsc: u64) {
        let delta = tsc.wrapping_sub(self.tsc);
        let delta = if tsc < self.tsc || delta > u64::from(u32::MAX) {
            push_meta(&mut self.body, meta::tsc_wrap(tsc));
            0
        } else {
            delta as u32
        };
        self.tsc = tsc;
        self.body
            .extend_from_slice(&function_record(id, kind, delta).to_le_bytes());
    }

    /// An entry.
    pub fn enter(&mut self, id: u32, tsc: u64) {
        self.func(id, FnKind::Enter, tsc);
    }

    /// An entry with logged arguments.
    pub fn enter_args(&mut self, id: u32, tsc: u64, args: &[u64]) {
        self.func(id, FnKind::EnterArgs, tsc);
        for &a in args {
            push_meta(&mut self.body, meta::call_argument(a));
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

    /// A migration to `cpu` at `tsc`.
    pub fn cpu(&mut self, cpu: u16, tsc: u64) {
        push_meta(&mut self.body, meta::new_cpu_id(cpu, tsc));
        self.tsc = tsc;
    }

    /// Bytes of events so far (preamble included).
    pub fn len(&self) -> usize {
        self.body.len()
    }

    /// True if nothing but the preamble was written.
    pub fn is_empty(&self) -> bool {
        self.body.len() <= 64
    }

    /// Closes the block.
    pub fn finish(self) {
        let out = &mut self.log.blocks;
        out.extend_from_slice(&meta_bytes(meta::buffer_extents(self.body.len() as u64)));
        out.extend_from_slice(&self.body);
    }
}
