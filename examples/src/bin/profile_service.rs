//! Profile mode and a learned trigger: where the time goes over the whole run, and a call caught
//! as abnormal with no threshold written by hand.
//!
//! ```text
//! cargo run --release -p fdr-examples --bin profile_service [LOG]
//! ```
//!
//! Two worker threads serve 600 requests each, one every 2 ms (parse, a cache, a computation of
//! 10 to 60 µs).
//! The recorder keeps its usual window and, beside it, a profile (`Config::profile(true)`):
//! per call path the calls' count, total and self time and a latency histogram. `handle` has a
//! learned trigger (`trigger = "auto"`): after a warm-up of 1,000 calls and 1 s its limit is
//! 3 x the p99 of its calls so far. Then one request takes 50 ms (a lock held elsewhere); the trigger fires and the
//! recorder writes the window, `profile_service-1.fdr` next to `LOG`, by itself. At the end
//! the log goes to `LOG` (`profile_service.fdr`) and the profile beside it
//! (`profile_service.fdrprof`); the program prints `fdr profile` of it and `fdr info` of the
//! snapshot, which says which limit was in force and the p99 it came from. Next, try
//! `fdr profile profile_service.fdrprof --tree`, or `--pprof profile.pb.gz` for `go tool pprof`.

use std::collections::HashMap;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use fdr::instrument_fdr;

const WORKERS: u32 = 2;
const REQUESTS_PER_WORKER: u32 = 600;

struct Cache {
    values: Mutex<HashMap<u32, u64>>,
}

#[instrument_fdr]
fn parse(line: &str) -> u32 {
    line.trim_start_matches("GET /item/").parse().unwrap_or(0)
}

impl Cache {
    #[instrument_fdr]
    fn get(&self, key: u32) -> Option<u64> {
        self.values.lock().unwrap().get(&key).copied()
    }

    #[instrument_fdr]
    fn insert(&self, key: u32, value: u64) {
        self.values.lock().unwrap().insert(key, value);
    }
}

/// 10 to 60 µs of work, depending on the item.
#[instrument_fdr]
fn compute(item: u32) -> u64 {
    let until = Instant::now() + Duration::from_micros(10 + u64::from(item % 6) * 10);
    let mut x = u64::from(item);
    while Instant::now() < until {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    }
    x
}

#[instrument_fdr(trigger = "auto")]
fn handle(line: &str, cache: &Cache, stall: Option<Duration>) -> u64 {
    let item = parse(line);
    if let Some(v) = cache.get(item) {
        return v;
    }
    if let Some(stall) = stall {
        // A lock held by someone else, once.
        thread::sleep(stall);
    }
    let v = compute(item);
    cache.insert(item, v);
    v
}

#[instrument_fdr]
fn worker(index: u32, cache: &Cache) -> u64 {
    (0..REQUESTS_PER_WORKER)
        .map(|i| {
            // Mostly new items; one request in four asks again for the worker's previous item
            // (its own, so the hit does not depend on the other worker's pace).
            let item = index * 10_000 + if i % 4 == 3 { i - 1 } else { i };
            // Requests arrive over time, as a service's do: the learned limit's warm-up is
            // 1,000 calls and 1 s.
            thread::sleep(Duration::from_millis(2));
            handle(&format!("GET /item/{item}"), cache, None)
        })
        .fold(0, u64::wrapping_add)
}

fn main() -> Result<(), Box<dyn Error>> {
    let log = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "profile_service.fdr".into()),
    );
    let recorder = fdr::start(
        fdr::Config::default()
            .profile(true)
            .out(&log)
            .trigger_cooldown(Duration::ZERO),
    )?;
    let cache = Arc::new(Cache {
        values: Mutex::new(HashMap::new()),
    });
    let workers: Vec<_> = (0..WORKERS)
        .map(|index| {
            let cache = Arc::clone(&cache);
            thread::Builder::new()
                .name(format!("worker-{index}"))
                .spawn(move || worker(index, &cache))
                .expect("spawn a worker")
        })
        .collect();
    for w in workers {
        w.join().expect("a worker panicked");
    }
    // The abnormal request, after the 1,200 normal ones.
    handle("GET /item/999999", &cache, Some(Duration::from_millis(50)));
    println!(
        "profile_service: handled {} requests, one of them stalled 50 ms",
        WORKERS * REQUESTS_PER_WORKER + 1
    );
    if !fdr::ENABLED {
        println!("profile_service: built without fdr's `enable` feature, so nothing was recorded");
        return Ok(());
    }
    let snapshot = numbered(&log, 1);
    for _ in 0..300 {
        if snapshot.exists() {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    recorder.finish(&log)?;
    let profile = log.with_extension("fdrprof");
    println!(
        "profile_service: log {}, profile {}",
        log.display(),
        profile.display()
    );
    let mut stdout = std::io::stdout();
    let run = |args: &[&str], out: &mut std::io::Stdout| {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        fdr_cli::run(&args, out)
    };
    println!();
    run(
        &["profile", &profile.to_string_lossy(), "--top", "8"],
        &mut stdout,
    )?;
    if snapshot.exists() {
        println!();
        println!(
            "profile_service: the learned trigger of handle fired; {} says why:",
            snapshot.display()
        );
        run(&["info", &snapshot.to_string_lossy()], &mut stdout)?;
    }
    Ok(())
}

/// Snapshot `n`'s path next to `log`.
fn numbered(log: &Path, n: u32) -> PathBuf {
    log.with_file_name(format!(
        "{}-{n}.fdr",
        log.file_stem().unwrap_or_default().to_string_lossy()
    ))
}
