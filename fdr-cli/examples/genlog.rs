//! Writes a large synthetic fdr log for benchmarking the `fdr` command.
//!
//! ```text
//! cargo run --release -p fdr-cli --example genlog -- /tmp/big.fdr 40000000 [threads]
//! /usr/bin/time -v target/release/fdr account /tmp/big.fdr
//! ```
//!
//! The log has the runtime's layout: 64 KiB blocks, threads interleaved block by block, nested
//! calls up to 8 deep over 200 functions (each calling one of four callees), some with logged arguments, some tail exits, CPU
//! migrations, and calls left open at the end.

use std::io::{BufWriter, Write};

use fdr_cli::synth::LogBuilder;
use fdr_format::{function_record, meta, meta_bytes, FnKind, RunInfo};

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
    if args.len() < 3 {
        eprintln!("usage: genlog OUT RECORDS [THREADS]");
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
        for m in [
            meta::new_buffer(th.tid),
            meta::walltime(0, 0),
            meta::pid(1),
            meta::new_cpu_id(th.cpu, th.tsc),
        ] {
            body.extend_from_slice(&meta_bytes(m));
        }
        while body.len() + 16 * 4 <= BLOCK - 16 && written < records {
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
        out.write_all(&meta_bytes(meta::buffer_extents(body.len() as u64)))?;
        out.write_all(&body)?;
    }
    out.flush()?;
    eprintln!("wrote {written} records to {}", args[1]);
    Ok(())
}
