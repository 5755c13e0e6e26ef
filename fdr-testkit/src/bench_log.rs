//! The large synthetic log of `genlog OUT RECORDS` (the `fdr` command's benchmark input), and
//! small ones of the same make for the tests: the runtime's layout (blocks of threads
//! interleaved block by block), nested calls up to 8 deep over 200 functions (each calling one
//! of four callees of its own), some with logged arguments, some tail exits, CPU migrations,
//! and calls left open at the end. Written as it is made, so 40 million records take no memory.

use std::io::{self, Write};

use fdr_format::{
    block_preamble, function_record, meta, meta_bytes, BlockStart, FnKind, RunInfo,
    BLOCK_PREAMBLE_AFTER_EXTENTS, BLOCK_PREAMBLE_SIZE,
};

use crate::synth::LogBuilder;

/// Functions of the log's call graph.
pub const FUNCTIONS: u32 = 200;

/// What to make.
///
/// ```
/// let b = fdr_testkit::bench_log::BenchLog::default();
/// assert_eq!((b.threads, b.block), (4, 64 * 1024));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BenchLog {
    /// Records of calls (an entry with its arguments counts one per word).
    pub records: u64,
    /// Threads, interleaved block by block.
    pub threads: i32,
    /// Block size, bytes (the runtime's buffer size).
    pub block: usize,
    /// One record in this many is a CPU migration instead of a call's.
    pub migrate_every: u64,
    /// Each thread's first two blocks are left out, as a ring recycles them: its window
    /// starts mid-stack.
    pub ring: bool,
    /// When the log was taken (the run record's `end_tsc`; 0: not said).
    pub end_tsc: u64,
}

impl Default for BenchLog {
    fn default() -> BenchLog {
        BenchLog {
            records: 1_000_000,
            threads: 4,
            block: 64 * 1024,
            migrate_every: 997,
            ring: false,
            end_tsc: 0,
        }
    }
}

struct Thread {
    tid: i32,
    tsc: u64,
    stack: Vec<u32>,
    rng: u64,
    cpu: u16,
    blocks: u32,
}

/// Writes the log `b` describes to `out`; returns the records written.
///
/// ```
/// use fdr_testkit::bench_log::{write, BenchLog};
/// let mut log = Vec::new();
/// let n = write(&mut log, &BenchLog { records: 5000, block: 4096, ..BenchLog::default() })?;
/// assert!(n >= 5000);
/// assert!(fdr_format::window::calls(&log[..]).unwrap().calls.len() > 1000);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write(out: &mut dyn Write, b: &BenchLog) -> io::Result<u64> {
    let freq = 3_000_000_000u64;
    let mut log = LogBuilder::new(freq);
    log.run(RunInfo {
        ticks_per_second: freq,
        buffer_size: b.block as u64,
        buffer_count: 1 << 20,
        pid: 1,
        program: "genlog".into(),
        end_tsc: b.end_tsc,
        ..RunInfo::default()
    });
    for id in 1..=FUNCTIONS {
        let args: &[&str] = if id % 10 == 7 { &["n", "flags"] } else { &[] };
        log.function(id, &format!("bench::module{}::function_{id}", id % 7), args);
    }
    for t in 0..b.threads {
        log.thread(100 + t, &format!("worker-{t}"));
    }
    out.write_all(&log.finish())?;
    let mut threads: Vec<Thread> = (0..b.threads.max(1))
        .map(|t| Thread {
            tid: 100 + t,
            tsc: 1_000_000 + t as u64 * 1000,
            stack: Vec::new(),
            rng: 0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1),
            cpu: t as u16,
            blocks: 0,
        })
        .collect();
    let mut written = 0u64;
    let mut body = Vec::with_capacity(b.block);
    let mut turn = 0usize;
    while written < b.records {
        let n = threads.len();
        let th = &mut threads[turn % n];
        turn += 1;
        body.clear();
        let start = BlockStart {
            tid: th.tid,
            wall_secs: 0,
            wall_micros: 0,
            pid: 1,
            cpu: th.cpu,
            tsc: th.tsc,
        };
        while BLOCK_PREAMBLE_SIZE + body.len() + 16 * 4 <= b.block && written < b.records {
            th.rng ^= th.rng << 13;
            th.rng ^= th.rng >> 7;
            th.rng ^= th.rng << 17;
            let r = th.rng;
            let step = 20 + (r >> 40) % 3000;
            th.tsc += step;
            let depth = th.stack.len();
            if r % b.migrate_every.max(1) == 0 {
                th.cpu = (th.cpu + 1) % 8;
                body.extend_from_slice(&meta_bytes(meta::new_cpu_id(th.cpu, th.tsc)));
                continue;
            }
            let enter = depth == 0 || (depth < 8 && (r >> 8) % 100 < 52 - depth as u64 * 4);
            if enter {
                // A program's call graph: a few entry points, each function calling one of
                // four callees of its own.
                let choice = ((r >> 16) % 4) as u32;
                let id = match th.stack.last() {
                    None => 1 + choice,
                    Some(&parent) => 1 + (parent * 31 + choice * 7 + depth as u32) % FUNCTIONS,
                };
                th.stack.push(id);
                if id % 10 == 7 {
                    body.extend_from_slice(
                        &function_record(id, FnKind::EnterArgs, step as u32).to_le_bytes(),
                    );
                    body.extend_from_slice(&meta_bytes(meta::call_argument(r >> 32)));
                    body.extend_from_slice(&meta_bytes(meta::call_argument(r & 0xff)));
                    written += 3;
                } else {
                    body.extend_from_slice(
                        &function_record(id, FnKind::Enter, step as u32).to_le_bytes(),
                    );
                    written += 1;
                }
            } else {
                let id = th.stack.pop().unwrap_or(1);
                let kind = if id % 13 == 0 {
                    FnKind::TailExit
                } else {
                    FnKind::Exit
                };
                body.extend_from_slice(&function_record(id, kind, step as u32).to_le_bytes());
                written += 1;
            }
        }
        th.blocks += 1;
        if b.ring && th.blocks <= 2 {
            continue;
        }
        let extents = (BLOCK_PREAMBLE_AFTER_EXTENTS + body.len()) as u64;
        for w in block_preamble(&start, extents) {
            out.write_all(&w.to_le_bytes())?;
        }
        out.write_all(&body)?;
    }
    Ok(written)
}
