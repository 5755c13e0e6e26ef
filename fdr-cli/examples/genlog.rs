//! Writes synthetic fdr logs: a large one for benchmarking the `fdr` command, or small crafted
//! ones (fuzzing seeds, reproductions).
//!
//! ```text
//! cargo run --release -p fdr-cli --example genlog -- /tmp/big.fdr 40000000 [threads]
//! /usr/bin/time -v target/release/fdr account /tmp/big.fdr
//! cargo run -p fdr-cli --example genlog -- --shape deep /tmp/deep.fdr 100000
//! ```
//!
//! The large log (`fdr_testkit::bench_log`) has the runtime's layout: 64 KiB blocks,
//! threads interleaved block by block, nested calls up to 8 deep over 200 functions (each
//! calling one of four callees), some with logged arguments, some tail exits, CPU migrations,
//! and calls left open at the end.
//!
//! Shapes (`--shape NAME OUT [N]`): `deep` (a recursion N deep), `ring` (the same seen from a
//! ring window: exits only), `siblings` (one caller of N different functions), `functions` (N
//! functions with huge ids), `hostile` (names with terminal escapes, newlines and XML
//! characters, arguments, tail calls), `backwards` (time running backwards, a thread that lost
//! everything), `args` (calls with many logged arguments), `tasks` (async tasks moving between
//! threads, cancelled, created before the window), `culled` (cull and restore events, and a
//! trigger's reason record). Profiles (`.fdrprof`): `profile` (the known profile of the tests,
//! `fdr_testkit::profile::known`), `profile-deep` (a recursion N deep, with a callee at
//! each level, on two threads). Crash boxes (`fdr recover`, `fdr info`): `box` (a process that
//! died of SIGSEGV with N calls recorded on two threads, some open, the last record of one
//! thread torn), `box-killed` (the same, killed without a handler).

use std::io::{BufWriter, Write};

use fdr_testkit::bench_log::BenchLog;

/// A small crafted profile of the given shape.
fn profile_shape(name: &str, n: u32) -> Option<Vec<u8>> {
    use fdr_format::profile::{Profile, PER_THREAD};
    use fdr_testkit::profile::{known, TreeBuilder};
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
    use fdr_testkit::crash_box::{BoxBuilder, OWNED};
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

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() >= 4 && args[1] == "--shape" {
        let n = args
            .get(4)
            .map_or(300, |s| s.parse().expect("N must be a number"));
        let Some(bytes) = profile_shape(&args[2], n)
            .or_else(|| box_shape(&args[2], n))
            .or_else(|| fdr_testkit::shapes::shape(&args[2], n))
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
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&args[1])?);
    let spec = BenchLog {
        records,
        threads: nthreads,
        ..BenchLog::default()
    };
    let written = fdr_testkit::bench_log::write(&mut out, &spec)?;
    out.flush()?;
    eprintln!("wrote {written} records to {}", args[1]);
    Ok(())
}
