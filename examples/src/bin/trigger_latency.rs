//! How long after a slow call ends its trigger snapshot is complete on disk, and how much the
//! trigger slows the call that fired it.
//!
//! ```text
//! cargo run --release -p fdr-examples --bin trigger_latency [DIR]
//! ```
//!
//! Four threads keep recording beside one that makes a 3 ms call of a function with a 1 ms
//! trigger, twenty times, a cooldown apart; each time the program waits for the snapshot file to
//! appear and prints the distribution of the delays. The file appears by rename, whole, so its
//! appearance is the moment it is complete.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[fdr::instrument_fdr(trigger = "1ms")]
fn slow(d: Duration) {
    std::thread::sleep(d);
}

#[fdr::instrument_fdr]
fn busy(n: u64) -> u64 {
    (0..n).fold(0, |a, b| a ^ b.wrapping_mul(0x9E37_79B9))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if !fdr::ENABLED {
        println!("built without fdr's `enable` feature: nothing to measure");
        return Ok(());
    }
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| std::env::temp_dir().to_string_lossy().into_owned()),
    )
    .join(format!("fdr-trigger-latency-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let rec = fdr::start(
        fdr::Config::default()
            .out(dir.join("t.fdr"))
            .trigger_cooldown(Duration::from_millis(1)),
    )?;
    let stop = Arc::new(AtomicBool::new(false));
    let others: Vec<_> = (0..4)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::black_box(busy(64));
                }
            })
        })
        .collect();
    // Let the ring fill, so each snapshot copies a full pool.
    std::thread::sleep(Duration::from_millis(300));
    let mut delays = Vec::new();
    let mut call_overheads = Vec::new();
    for n in 1..=20 {
        let path = dir.join(format!("t-{n}.fdr"));
        let began = Instant::now();
        slow(Duration::from_millis(3));
        let ended = Instant::now();
        call_overheads.push(ended - began - Duration::from_millis(3));
        while !path.exists() {
            if ended.elapsed() > Duration::from_secs(5) {
                return Err(format!("no snapshot {} after 5 s", path.display()).into());
            }
            std::hint::spin_loop();
        }
        delays.push(ended.elapsed());
        std::thread::sleep(Duration::from_millis(5));
    }
    stop.store(true, Ordering::Relaxed);
    for t in others {
        t.join().expect("recording thread");
    }
    let bytes = std::fs::metadata(dir.join("t-1.fdr"))?.len();
    rec.finish_to(&mut std::io::sink())?;
    std::fs::remove_dir_all(&dir)?;
    delays.sort();
    call_overheads.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "slow call's end -> its snapshot complete on disk ({} snapshots of {:.1} MB, 4 threads \
         recording): min {:.2} ms, median {:.2} ms, max {:.2} ms",
        delays.len(),
        bytes as f64 / 1e6,
        ms(delays[0]),
        ms(delays[delays.len() / 2]),
        ms(delays[delays.len() - 1]),
    );
    println!(
        "the 3 ms call itself took longer than 3 ms by: median {:.3} ms, max {:.3} ms (sleep's own \
         overshoot included)",
        ms(call_overheads[call_overheads.len() / 2]),
        ms(call_overheads[call_overheads.len() - 1]),
    );
    Ok(())
}
