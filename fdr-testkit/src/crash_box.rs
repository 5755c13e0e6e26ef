//! Builds crash boxes by hand (`fdr recover` and `fdr info` tests, fuzzing seeds): the header
//! at the offsets of [`fdr_format::crash_box::at`], a lead area of extension records made with
//! [`crash_box::encode_lead`], one slot per buffer, and buffers whose words are a block preamble
//! followed by function records, exactly as the recorder leaves them in its mapping (the
//! buffer's first two words, its `BufferExtents`, are left for the reader to fill in).
//!
//! ```
//! use fdr_testkit::crash_box::BoxBuilder;
//! use fdr_format::crash_box;
//! let mut b = BoxBuilder::new("app", 2_000_000_000, "/tmp/app.fdr");
//! b.function(1, "app::main");
//! b.crash(11, 0x10, 7, 5_000);
//! let mut buf = b.buffer(7, 0, 1_000);
//! buf.enter(1, 1_000);
//! buf.finish();
//! let r = crash_box::recover(&b.finish()).unwrap();
//! assert_eq!(r.info.death(), "SIGSEGV (segmentation fault) at address 0x10 on thread 7");
//! ```

use std::path::{Path, PathBuf};

use fdr_format::crash_box::{self, at, slot, state};
use fdr_format::{
    block_preamble, function_record, meta, BlockStart, ClockSource, Extension, FnKind,
    FunctionInfo, FunctionKind, Mode, RunInfo, ThreadInfo,
};

/// A slot's state once its owner retired the buffer (the runtime's `RETIRED`).
pub const RETIRED: u32 = 2;
/// A slot's state while its owner records into the buffer (the runtime's `OWNED`).
pub const OWNED: u32 = 1;

/// One buffer as its owner left it.
#[derive(Clone, Debug)]
struct Buffer {
    tid: i32,
    thread: u32,
    seq: u32,
    state: u32,
    words: Vec<u64>,
    /// Words published in the slot's length (at most `words.len()`, unless a test lies).
    published: u32,
    /// The owner's name in the slot (empty: none, as in older boxes).
    name: String,
}

/// A crash box under construction. The header's facts are public fields, for tests to change
/// (a live process's pid, another boot, a crash signal, a box closed by its process).
#[derive(Clone, Debug)]
pub struct BoxBuilder {
    /// The recording process.
    pub pid: i32,
    /// Its start time in clock ticks since boot (0 unknown).
    pub proc_start: u64,
    /// The boot it ran in (zeros unknown).
    pub boot_id: [u8; 16],
    /// Its PID namespace's inode (0 unknown: as before the field).
    pub pid_ns: u64,
    /// [`fdr_format::crash_box::flags`] (0: a box made before them, judged by its pid).
    pub flags: u32,
    /// For a forked child, its parent.
    pub parent_pid: i32,
    /// One of [`fdr_format::crash_box::state`].
    pub state: u32,
    /// Where the process would have written its final log.
    pub out: PathBuf,
    /// Ticks per second.
    pub ticks_per_second: u64,
    /// The process finished its calibration.
    pub calibrated: bool,
    /// The crash signal caught (0: none).
    pub signal: i32,
    /// The thread that took it.
    pub crash_tid: i32,
    /// The faulting address.
    pub address: u64,
    /// The counter when the signal was caught.
    pub crash_tsc: u64,
    /// The counter when the process was last seen alive.
    pub alive_tsc: u64,
    /// How long it went between signs of life, in nanoseconds (0: unsaid, a second).
    pub alive_period_ns: u64,
    /// A signal the program handled, and when.
    pub handled: (i32, u64),
    /// A mark beyond the signal ([`fdr_format::crash_box::mark`]).
    pub crash_kind: u32,
    /// The last child forked, and when.
    pub forked: (i32, u64),
    /// Records dropped and buffers recycled, as the header counts them.
    pub counted: (u64, u64),
    /// Bytes per buffer (a multiple of 8).
    pub buffer_size: usize,
    /// Buffers in the pool.
    pub buffer_count: usize,
    run: RunInfo,
    records: Vec<Extension>,
    buffers: Vec<Option<Buffer>>,
}

/// One buffer under construction: its preamble, then records; timestamps are absolute and must
/// not go backwards.
pub struct BufferBuilder<'a> {
    b: &'a mut BoxBuilder,
    index: usize,
    buffer: Buffer,
    tsc: u64,
}

impl BoxBuilder {
    /// A box of `program`'s process `pid` that would have written `out`: a 1 GHz injected
    /// clock, calibrated, eight buffers of 1 KiB, state recording, no crash signal, unknown
    /// process start and boot.
    pub fn new(program: &str, pid: i32, out: impl AsRef<Path>) -> BoxBuilder {
        let buffer_size = 1024;
        let buffer_count = 8;
        BoxBuilder {
            pid,
            proc_start: 0,
            boot_id: [0; 16],
            pid_ns: 0,
            flags: 0,
            parent_pid: 0,
            state: state::RECORDING,
            out: out.as_ref().to_path_buf(),
            ticks_per_second: 1_000_000_000,
            calibrated: true,
            signal: 0,
            crash_tid: 0,
            address: 0,
            crash_tsc: 0,
            alive_tsc: 0,
            alive_period_ns: 0,
            handled: (0, 0),
            crash_kind: 0,
            forked: (0, 0),
            counted: (0, 0),
            buffer_size,
            buffer_count,
            run: RunInfo {
                clock: ClockSource::Injected,
                ticks_per_second: 1_000_000_000,
                mode: Mode::Ring,
                threshold_ns: 0,
                threshold_ticks: 0,
                buffer_size: buffer_size as u64,
                buffer_count: buffer_count as u64,
                pid,
                program: program.to_string(),
                ..RunInfo::default()
            },
            records: Vec::new(),
            buffers: vec![None; buffer_count],
        }
    }

    /// The box's file name, as a recorder of `program` would give it.
    pub fn file_name(&self) -> String {
        crash_box::file_name(
            &self.run.program,
            self.pid,
            crash_box::tag(&[self.pid_ns, self.proc_start]),
        )
    }

    /// Adds a function-table entry.
    pub fn function(&mut self, id: u32, name: &str) {
        self.records.push(Extension::Function(FunctionInfo {
            id,
            name: name.to_string(),
            file: "src/main.rs".to_string(),
            line: id,
            kind: FunctionKind::Function,
            args: Vec::new(),
            arg_kinds: Vec::new(),
            column: 0,
        }));
    }

    /// Names a thread.
    pub fn thread(&mut self, tid: i32, name: &str) {
        self.records.push(Extension::Thread(ThreadInfo {
            tid,
            name: name.to_string(),
            records_dropped: 0,
        }));
    }

    /// Adds any record to the box's table, after the run record (what no runtime writes there
    /// included, as a hostile box would).
    pub fn record(&mut self, e: Extension) {
        self.records.push(e);
    }

    /// Marks the box as a crash handler does: `signal` caught at `tsc` on thread `tid`,
    /// faulting at `address`.
    pub fn crash(&mut self, signal: i32, address: u64, tid: i32, tsc: u64) {
        self.signal = signal;
        self.address = address;
        self.crash_tid = tid;
        self.crash_tsc = tsc;
    }

    /// Starts the next free buffer, owned by thread `tid` (its `thread_seq`-th buffer; its entry
    /// in the thread registry is `tid`), its clock at `tsc`.
    pub fn buffer(&mut self, tid: i32, thread_seq: u32, tsc: u64) -> BufferBuilder<'_> {
        let index = self
            .buffers
            .iter()
            .position(Option::is_none)
            .expect("a free buffer in the box");
        self.buffer_at(index, tid, tid as u32, thread_seq, tsc)
    }

    /// Starts buffer `index`, owned by thread `tid` (entry `thread` in the thread registry, its
    /// `thread_seq`-th buffer), its clock at `tsc`.
    pub fn buffer_at(
        &mut self,
        index: usize,
        tid: i32,
        thread: u32,
        thread_seq: u32,
        tsc: u64,
    ) -> BufferBuilder<'_> {
        let preamble = block_preamble(
            &BlockStart {
                tid,
                wall_secs: 0,
                wall_micros: 0,
                pid: self.pid,
                cpu: 0,
                tsc,
            },
            0,
        );
        BufferBuilder {
            b: self,
            index,
            buffer: Buffer {
                tid,
                thread,
                seq: thread_seq,
                state: OWNED,
                words: preamble.to_vec(),
                published: 0,
                name: String::new(),
            },
            tsc,
        }
    }

    /// Writes the box to `path` as a recorder's box is on disk: the pages nobody wrote are
    /// holes, so a box of gigabytes with a few buffers used takes a few pages.
    pub fn write_sparse(&self, path: &Path) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom, Write};
        // Zeroed memory the system gives untouched: only what is written below is touched.
        let bytes = self.finish();
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        let words_offset = word(at::WORDS_OFFSET);
        let mut f = std::fs::File::create(path)?;
        f.write_all(&bytes[..words_offset])?;
        for (k, buffer) in self.buffers.iter().enumerate() {
            if buffer.is_some() {
                let at = words_offset + k * self.buffer_size;
                f.seek(SeekFrom::Start(at as u64))?;
                f.write_all(&bytes[at..at + self.buffer_size])?;
            }
        }
        f.set_len(bytes.len() as u64)
    }

    /// The box's bytes.
    pub fn finish(&self) -> Vec<u8> {
        let page = 4096;
        let mut run = self.run.clone();
        run.pid = self.pid;
        run.buffer_size = self.buffer_size as u64;
        run.buffer_count = self.buffer_count as u64;
        run.ticks_per_second = self.ticks_per_second;
        let mut records = vec![Extension::Run(run.clone())];
        records.extend(self.records.iter().cloned());
        let lead = crash_box::encode_lead(&records);
        let lead_capacity = (lead.len() + 1024).div_ceil(page) * page;
        let lead_offset = crash_box::HEADER_BYTES;
        let slots_offset = lead_offset + 2 * lead_capacity;
        let words_offset =
            (slots_offset + self.buffer_count * crash_box::SLOT_BYTES).div_ceil(page) * page;
        let total = words_offset + self.buffer_count * self.buffer_size;
        let mut b = vec![0u8; total];
        let put = |b: &mut Vec<u8>, at: usize, bytes: &[u8]| {
            b[at..at + bytes.len()].copy_from_slice(bytes);
        };
        let u32_at = |b: &mut Vec<u8>, at: usize, v: u32| put(b, at, &v.to_le_bytes());
        let u64_at = |b: &mut Vec<u8>, at: usize, v: u64| put(b, at, &v.to_le_bytes());
        put(&mut b, at::MAGIC, &crash_box::MAGIC);
        u32_at(&mut b, at::VERSION, crash_box::VERSION);
        u32_at(&mut b, at::STATE, self.state);
        u32_at(&mut b, at::PID, self.pid as u32);
        u32_at(&mut b, at::CLOCK, crash_box::clock_code(run.clock));
        u64_at(&mut b, at::PROC_START, self.proc_start);
        put(&mut b, at::BOOT_ID, &self.boot_id);
        u64_at(&mut b, at::TICKS_PER_SECOND, self.ticks_per_second);
        u32_at(&mut b, at::CALIBRATED, u32::from(self.calibrated));
        u64_at(&mut b, at::START_SECS, run.start_unix_secs as u64);
        u32_at(&mut b, at::START_NANOS, run.start_unix_nanos);
        u32_at(&mut b, at::CRASH_SIGNAL, self.signal as u32);
        u64_at(&mut b, at::START_TSC, run.start_tsc);
        u64_at(&mut b, at::THRESHOLD_NS, run.threshold_ns);
        u64_at(&mut b, at::THRESHOLD_TICKS, run.threshold_ticks);
        u64_at(&mut b, at::BUFFER_SIZE, self.buffer_size as u64);
        u64_at(&mut b, at::BUFFER_COUNT, self.buffer_count as u64);
        u64_at(&mut b, at::LEAD_OFFSET, lead_offset as u64);
        u64_at(&mut b, at::LEAD_CAPACITY, lead_capacity as u64);
        // The second area is the active one, as after the first rewrite of the tables; the
        // first holds a stale copy cut short.
        put(&mut b, lead_offset, &lead[..lead.len() / 2]);
        u64_at(&mut b, at::LEAD_LEN, (lead.len() / 2) as u64);
        put(&mut b, lead_offset + lead_capacity, &lead);
        u64_at(&mut b, at::LEAD_LEN + 8, lead.len() as u64);
        u64_at(&mut b, at::LEAD_ACTIVE, 1);
        u64_at(&mut b, at::SLOTS_OFFSET, slots_offset as u64);
        u64_at(&mut b, at::WORDS_OFFSET, words_offset as u64);
        u64_at(&mut b, at::TOTAL_BYTES, total as u64);
        u64_at(&mut b, at::ALIVE_TSC, self.alive_tsc);
        u32_at(&mut b, at::CRASH_TID, self.crash_tid as u32);
        u64_at(&mut b, at::CRASH_ADDR, self.address);
        u64_at(&mut b, at::CRASH_TSC, self.crash_tsc);
        u64_at(&mut b, at::MAX_AGE_NS, run.max_age_ns);
        u64_at(&mut b, at::PID_NS, self.pid_ns);
        u32_at(&mut b, at::FLAGS, self.flags);
        u32_at(&mut b, at::PARENT_PID, self.parent_pid as u32);
        u64_at(&mut b, at::ALIVE_PERIOD_NS, self.alive_period_ns);
        u64_at(&mut b, at::RECORDS_DROPPED, self.counted.0);
        u64_at(&mut b, at::BUFFERS_RECYCLED, self.counted.1);
        u32_at(&mut b, at::HANDLED_SIGNAL, self.handled.0 as u32);
        u64_at(&mut b, at::HANDLED_TSC, self.handled.1);
        u32_at(&mut b, at::CRASH_KIND, self.crash_kind);
        u32_at(&mut b, at::FORKED_CHILD, self.forked.0 as u32);
        u64_at(&mut b, at::FORKED_TSC, self.forked.1);
        let out = self.out.as_os_str().as_encoded_bytes();
        let n = out.len().min(crash_box::MAX_OUT_PATH);
        u32_at(&mut b, at::OUT_LEN, n as u32);
        put(&mut b, at::OUT, &out[..n]);
        for (k, buffer) in self.buffers.iter().enumerate() {
            let Some(buf) = buffer else {
                continue;
            };
            let s = slots_offset + k * crash_box::SLOT_BYTES;
            u32_at(&mut b, s + slot::LEN, buf.published);
            u32_at(&mut b, s + slot::STATE, buf.state);
            u32_at(&mut b, s + slot::TID, buf.tid as u32);
            u64_at(&mut b, s + slot::GEN, 1);
            u32_at(&mut b, s + slot::THREAD, buf.thread);
            u32_at(&mut b, s + slot::THREAD_SEQ, buf.seq);
            let name = buf.name.as_bytes();
            put(&mut b, s + slot::NAME, &name[..name.len().min(15)]);
            let w = words_offset + k * self.buffer_size;
            for (i, word) in buf.words.iter().enumerate() {
                u64_at(&mut b, w + 8 * i, *word);
            }
        }
        b
    }
}

impl BufferBuilder<'_> {
    fn word(&mut self, w: u64) {
        assert!(
            8 * (self.buffer.words.len() + 1) <= self.b.buffer_size,
            "the buffer is full"
        );
        self.buffer.words.push(w);
    }

    fn record(&mut self, id: u32, kind: FnKind, tsc: u64) {
        let delta = u32::try_from(tsc - self.tsc).expect("records less than 2^32 ticks apart");
        self.tsc = tsc;
        self.word(function_record(id, kind, delta));
    }

    /// Function `id` entered at `tsc`.
    pub fn enter(&mut self, id: u32, tsc: u64) {
        self.record(id, FnKind::Enter, tsc);
    }

    /// Function `id` returned at `tsc`.
    pub fn exit(&mut self, id: u32, tsc: u64) {
        self.record(id, FnKind::Exit, tsc);
    }

    /// A word as it is (a torn record, garbage).
    pub fn raw(&mut self, w: u64) {
        self.word(w);
    }

    /// The owner moved to `cpu` at `tsc` (a `NewCPUId` record: two words).
    pub fn cpu(&mut self, cpu: u16, tsc: u64) {
        let m = meta::new_cpu_id(cpu, tsc);
        self.tsc = tsc;
        self.word(m[0]);
        self.word(m[1]);
    }

    /// Names the owner in the slot, as a recorder does when the thread takes the buffer.
    pub fn named(&mut self, name: &str) {
        self.buffer.name = name.to_string();
    }

    /// Ends the buffer as retired, every word published.
    pub fn finish(self) {
        self.finish_as(RETIRED, None);
    }

    /// Ends the buffer in slot state `state` (`OWNED`: its thread was recording into it),
    /// publishing `published` words (default: all it holds; fewer leave the last records
    /// unpublished, as at a death between a record's store and its length's).
    pub fn finish_as(mut self, state: u32, published: Option<u32>) {
        self.buffer.state = state;
        self.buffer.published = published.unwrap_or(self.buffer.words.len() as u32);
        self.b.buffers[self.index] = Some(self.buffer);
    }
}
