//! Many threads on one pool: 64 and 256 threads recording at once on the default pool
//! (512 buffers of 16 KiB), and on pools cut differently, to see what a thread-per-connection
//! server gets: the cost per call, the records dropped, the buffers recycled, and which threads
//! are still in the window at the end.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use fdr_benches::{logcheck, timing, workload};

use crate::anchors::median;

/// Bursts of calls each thread makes, pausing between them: every thread stays alive, and owns
/// a buffer, while the others record, as the threads of a thread-per-connection server do.
const BURSTS: u64 = 20;
/// Calls per burst (32 KB of records when every call is kept).
const BURST_CALLS: u64 = 2_000;
/// The pause between bursts.
const PAUSE: Duration = Duration::from_millis(1);
/// Calls per thread.
const CALLS: u64 = BURSTS * BURST_CALLS;

/// One pool layout to try.
struct Pool {
    name: &'static str,
    buffer_size: usize,
    buffer_count: usize,
}

const POOLS: [Pool; 3] = [
    Pool {
        name: "default: 512 x 16 KiB (8 MiB)",
        buffer_size: 16 * 1024,
        buffer_count: 512,
    },
    Pool {
        name: "old default: 128 x 64 KiB",
        buffer_size: 64 * 1024,
        buffer_count: 128,
    },
    Pool {
        name: "512 x 64 KiB (32 MiB)",
        buffer_size: 64 * 1024,
        buffer_count: 512,
    },
];

/// What one run of `threads` threads on one pool gave.
struct Outcome {
    /// Per thread, its CPU nanoseconds per call.
    per_call: Vec<f64>,
    wall: Duration,
    stats: fdr::Stats,
    log: logcheck::LogSummary,
}

fn run(threads: usize, pool: &Pool, threshold: Duration) -> Result<Outcome, String> {
    // Culling off: the leaf would be culled at 5 us and then need no buffer at all, unlike a
    // server's functions that are slow now and then.
    let config = fdr::Config::default()
        .threshold(threshold)
        .cull(false)
        .buffer_size(pool.buffer_size)
        .buffer_count(pool.buffer_count);
    let rec = fdr::start(config).map_err(|e| format!("starting the recorder failed: {e}"))?;
    // All start together; when all are done, the snapshot is taken while every thread is still
    // alive (as a server's are when a trigger fires); then they exit.
    let start = Barrier::new(threads + 1);
    let done = Barrier::new(threads + 1);
    let exit = Barrier::new(threads + 1);
    let (per_call, wall, snapshot) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (start, done, exit) = (&start, &done, &exit);
                s.spawn(move || {
                    start.wait();
                    let mut cpu = 0;
                    for _ in 0..BURSTS {
                        let t = timing::thread_cpu_ns();
                        std::hint::black_box(workload::run_fdr(std::hint::black_box(BURST_CALLS)));
                        cpu += timing::thread_cpu_ns() - t;
                        std::thread::sleep(PAUSE);
                    }
                    done.wait();
                    exit.wait();
                    cpu as f64 / CALLS as f64
                })
            })
            .collect();
        start.wait();
        let started = Instant::now();
        done.wait();
        let wall = started.elapsed();
        let mut snapshot = Vec::new();
        let taken = rec.snapshot(&mut snapshot);
        exit.wait();
        let per_call: Vec<f64> = handles
            .into_iter()
            .map(|h| h.join().expect("a recording thread panicked"))
            .collect();
        (per_call, wall, taken.map(|()| snapshot))
    });
    let snapshot = snapshot.map_err(|e| format!("the snapshot failed: {e}"))?;
    let stats = rec.stats();
    rec.finish_to(&mut std::io::sink())
        .map_err(|e| format!("finishing the recorder failed: {e}"))?;
    let log = logcheck::summarize(&snapshot[..], None)?;
    Ok(Outcome {
        per_call,
        wall,
        stats,
        log,
    })
}

/// Prints what 64 and 256 threads get from each pool.
pub fn measure() -> Result<(), String> {
    println!();
    println!(
        "many threads: each thread makes {BURSTS} bursts of {BURST_CALLS} calls of the leaf with \
         a {} ms sleep after each, all threads started at once on {} cpus; ns/call is each \
         thread's CPU time per call (median over threads, and the worst thread); dropped: \
         records not written for lack of a buffer, of all the calls' entries and exits; threads \
         in log: threads with records in a snapshot taken once all are done, while all are \
         still alive",
        PAUSE.as_millis(),
        timing::available_cpus()
    );
    println!(
        "{:>7}  {:<30} {:>8} {:>8} {:>9} {:>11} {:>9} {:>14} {:>17}",
        "threads",
        "pool",
        "ns/call",
        "(worst)",
        "wall ms",
        "dropped",
        "recycled",
        "threads in log",
        "records/thread"
    );
    for (threshold, what) in [
        (Duration::ZERO, "threshold 0: every call kept"),
        (
            crate::whole::DEFAULT_THRESHOLD,
            "threshold 5 us, culling off: every call erased (as most are in a server), yet each \
             thread owns a buffer",
        ),
    ] {
        println!("{what}");
        run_all(threshold)?;
    }
    Ok(())
}

fn run_all(threshold: Duration) -> Result<(), String> {
    for threads in [64usize, 256] {
        for pool in &POOLS {
            let o = run(threads, pool, threshold)?;
            let worst = o.per_call.iter().copied().fold(0.0, f64::max);
            let total = threads as u64 * CALLS * 2;
            println!(
                "{threads:>7}  {:<30} {:>8.2} {worst:>8.2} {:>9.1} {:>11} {:>9} {:>14} {:>17}",
                pool.name,
                median(&o.per_call),
                o.wall.as_secs_f64() * 1e3,
                format!(
                    "{:.1}%",
                    100.0 * o.stats.records_dropped as f64 / total as f64
                ),
                o.stats.buffers_recycled,
                format!("{} of {}", o.log.threads_recording, threads),
                format!(
                    "{}..{}",
                    o.log.records_per_thread.0, o.log.records_per_thread.1
                ),
            );
        }
    }
    Ok(())
}
