//! Writes synthetic fdr logs: a large one for benchmarking the `fdr` command, or small crafted
//! ones (fuzzing seeds, reproductions).
//!
//! ```text
//! cargo run --release -p fdr-cli --example genlog -- /tmp/big.fdr 40000000 [threads]
//! /usr/bin/time -v target/release/fdr account /tmp/big.fdr
//! cargo run -p fdr-cli --example genlog -- --shape deep /tmp/deep.fdr 100000
//! ```
//!
//! The large log has the runtime's layout: 64 KiB blocks, threads interleaved block by block,
//! nested calls up to 8 deep over 200 functions (each calling one of four callees), some with
//! logged arguments, some tail exits, CPU migrations, and calls left open at the end.
//!
//! Shapes (`--shape NAME OUT [N]`): `deep` (a recursion N deep), `ring` (the same seen from a
//! ring window: exits only), `siblings` (one caller of N different functions), `functions` (N
//! functions with huge ids), `hostile` (names with terminal escapes, newlines and XML
//! characters, arguments, tail calls), `backwards` (time running backwards, a thread that lost
//! everything), `args` (calls with many logged arguments), `tasks` (async tasks moving between
//! threads, cancelled, created before the window), `culled` (cull and restore events, and a
//! trigger's reason record). Profiles (`.fdrprof`): `profile` (the known profile of the tests,
//! `fdr_cli::testing::profile::known`), `profile-deep` (a recursion N deep, with a callee at
//! each level, on two threads). Crash boxes (`fdr recover`, `fdr info`): `box` (a process that
//! died of SIGSEGV with N calls recorded on two threads, some open, the last record of one
//! thread torn), `box-killed` (the same, killed without a handler).

use std::io::{BufWriter, Write};

use fdr_cli::testing::synth::LogBuilder;
use fdr_format::{
    block_preamble, function_record, meta, meta_bytes, BlockStart, FnKind, RunInfo,
    BLOCK_PREAMBLE_AFTER_EXTENTS, BLOCK_PREAMBLE_SIZE,
};

/// A small crafted profile of the given shape.
fn profile_shape(name: &str, n: u32) -> Option<Vec<u8>> {
    use fdr_cli::testing::profile::{known, TreeBuilder};
    use fdr_format::profile::{Profile, PER_THREAD};
    match name {
        "profile" => Some(known().encode()),
        "profile-deep" => {
            let trees = [(7, "main"), (8, "")]
                .into_iter()
                .map(|(tid, name)| {
                    let mut t = TreeBuilder::new(tid, name);
                    let mut parent = None;
                    for i in 0..u64::from(n) {
                        let d = (u64::from(n) - i) * 100;
                        let node = t.calls(parent, 1, &[d, d + 7], 70);
                        t.calls(Some(node), 2, &[30, 30], 60);
                        parent = Some(node);
                    }
                    t.finish()
                })
                .collect();
            Some(
                Profile {
                    flags: PER_THREAD,
                    ticks_per_second: 3_000_000_000,
                    elapsed_ticks: u64::from(n) * 1000,
                    pid: 1,
                    program: "genlog-profile-deep".into(),
                    functions: vec![(1, "deep::recurse".into()), (2, "deep::leaf".into())],
                    trees,
                    ..Profile::default()
                }
                .encode(),
            )
        }
        _ => None,
    }
}

/// A crash box of the given shape: two threads' buffers, the calls open at the death open.
fn box_shape(name: &str, n: u32) -> Option<Vec<u8>> {
    use fdr_cli::testing::crash_box::{BoxBuilder, OWNED};
    let signal = match name {
        "box" => 11,
        "box-killed" => 0,
        _ => return None,
    };
    let mut b = BoxBuilder::new("genlog-box", 2_000_000_000, "/tmp/genlog-box.fdr");
    b.function(1, "app::main");
    b.function(2, "app::handle");
    b.thread(7, "main");
    b.thread(8, "worker");
    b.crash(signal, 0x10, 7, 0);
    let per_buffer = (b.buffer_size / 8 - 16) as u64 / 2;
    let mut t = 1000;
    let mut seq = 0;
    let mut left = u64::from(n);
    while left > 0 {
        let mut buf = b.buffer(7, seq, t);
        if seq == 0 {
            buf.enter(1, t);
        }
        for _ in 0..left.min(per_buffer) {
            buf.enter(2, t + 10);
            buf.exit(2, t + 20);
            t += 30;
        }
        left -= left.min(per_buffer);
        buf.finish();
        seq += 1;
        if seq == 6 {
            break;
        }
    }
    let mut buf = b.buffer(8, 0, 1500);
    buf.enter(2, 1500);
    buf.exit(2, 1600);
    buf.enter(2, 1700);
    buf.raw(0xffff_ffff_ffff_fffe);
    buf.finish_as(OWNED, None);
    b.crash_tsc = t + 100;
    Some(b.finish())
}

const BLOCK: usize = 64 * 1024;
const FUNCTIONS: u32 = 200;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

struct Thread {
    tid: i32,
    tsc: u64,
    stack: Vec<u32>,
    rng: Rng,
    cpu: u16,
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() >= 4 && args[1] == "--shape" {
        let n = args
            .get(4)
            .map_or(300, |s| s.parse().expect("N must be a number"));
        let Some(bytes) = profile_shape(&args[2], n)
            .or_else(|| box_shape(&args[2], n))
            .or_else(|| fdr_cli::testing::shapes::shape(&args[2], n))
        else {
            eprintln!("genlog: unknown shape {}", args[2]);
            std::process::exit(2);
        };
        return std::fs::write(&args[3], bytes);
    }
    if args.len() < 3 {
        eprintln!("usage: genlog OUT RECORDS [THREADS] | genlog --shape NAME OUT [N]");
        std::process::exit(2);
    }
    let records: u64 = args[2].parse().expect("RECORDS must be a number");
    let nthreads: i32 = args
        .get(3)
        .map_or(4, |s| s.parse().expect("THREADS must be a number"));
    let freq = 3_000_000_000u64;
    let mut log = LogBuilder::new(freq);
    log.run(RunInfo {
        ticks_per_second: freq,
        buffer_size: BLOCK as u64,
        buffer_count: 1 << 20,
        pid: 1,
        program: "genlog".into(),
        ..RunInfo::default()
    });
    for id in 1..=FUNCTIONS {
        let args: &[&str] = if id % 10 == 7 { &["n", "flags"] } else { &[] };
        log.function(id, &format!("bench::module{}::function_{id}", id % 7), args);
    }
    for t in 0..nthreads {
        log.thread(100 + t, &format!("worker-{t}"));
    }
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&args[1])?);
    out.write_all(&log.finish())?;

    let mut threads: Vec<Thread> = (0..nthreads)
        .map(|t| Thread {
            tid: 100 + t,
            tsc: 1_000_000 + t as u64 * 1000,
            stack: Vec::new(),
            rng: Rng(0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1)),
            cpu: t as u16,
        })
        .collect();
    let mut written = 0u64;
    let mut body = Vec::with_capacity(BLOCK);
    let mut turn = 0usize;
    while written < records {
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
        while BLOCK_PREAMBLE_SIZE + body.len() + 16 * 4 <= BLOCK && written < records {
            let r = th.rng.next();
            let step = 20 + (r >> 40) % 3000;
            th.tsc += step;
            let depth = th.stack.len();
            if r % 997 == 0 {
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
        let extents = (BLOCK_PREAMBLE_AFTER_EXTENTS + body.len()) as u64;
        for w in block_preamble(&start, extents) {
            out.write_all(&w.to_le_bytes())?;
        }
        out.write_all(&body)?;
    }
    out.flush()?;
    eprintln!("wrote {written} records to {}", args[1]);
    Ok(())
}
