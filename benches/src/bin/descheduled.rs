//! A learned trigger on a steady function while other threads compete for the CPUs: how many
//! snapshots does the scheduler cause, how many calls were let off because their thread waited
//! for a CPU (`cpu_wait`), and what the written ones say.
//!
//! ```text
//! cargo run --release -p fdr-benches --bin descheduled -- [SECONDS] [SPINNERS]
//! ```
//!
//! The function busy-waits 200 µs; SPINNERS threads (default 1) spin beside it for SECONDS
//! (default 10), with the cooldown off so that every trigger that gets through is a file. Prints
//! the calls made, the snapshots written with each one's duration, limit, wait for a CPU and
//! time off it, and the triggers suppressed (by the wait rule, or one already waiting for the
//! writer).

use std::time::{Duration, Instant};

use fdr_format::events::EventDecoder;

#[fdr::instrument_fdr(trigger = "auto")]
fn work() -> u64 {
    let t = Instant::now();
    let mut x = 0u64;
    while t.elapsed() < Duration::from_micros(200) {
        x = x.wrapping_add(1);
    }
    x
}

/// Why the log at `path` was written, and its clock's ticks per millisecond.
fn reason(path: &std::path::Path) -> Option<(fdr_format::ReasonInfo, f64)> {
    let mut d = EventDecoder::new(std::fs::File::open(path).ok()?).ok()?;
    while let Ok(Some(_)) = d.next_event() {}
    let hz = d.info().run.as_ref()?.ticks_per_second as f64 / 1e3;
    Some((d.info().reason.clone()?, hz))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let spinners: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let dir = std::env::temp_dir().join(format!("fdr-descheduled-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let rec = fdr::start(
        fdr::Config::default()
            .out(dir.join("s.fdr"))
            .trigger_cooldown(Duration::ZERO),
    )
    .expect("the recorder starts");
    for _ in 0..spinners {
        std::thread::spawn(|| loop {
            std::hint::black_box(0u64);
        });
    }
    let end = Instant::now() + Duration::from_secs(secs);
    let mut calls = 0u64;
    while Instant::now() < end {
        std::hint::black_box(work());
        calls += 1;
    }
    std::thread::sleep(Duration::from_millis(300));
    let mut snapshots: Vec<_> = std::fs::read_dir(&dir)
        .expect("the scratch directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    snapshots.sort();
    let last = dir.join("final.fdr");
    rec.finish(&last).expect("the final log");
    println!("{calls} calls of 200 µs beside {spinners} spinning thread(s), {secs} s");
    println!("{} snapshot(s)", snapshots.len());
    for (r, hz) in snapshots.iter().filter_map(|p| reason(p)) {
        let ms = |w: Option<u64>| {
            w.map_or("(not measured)".into(), |w| {
                format!("{:.2} ms", w as f64 / 1e6)
            })
        };
        println!(
            "  lasted {:.2} ms, limit {:.2} ms, waited for a CPU {}, off the CPU {}",
            r.duration_ticks as f64 / hz,
            r.limit_ticks as f64 / hz,
            ms(r.cpu_wait_ns),
            ms(r.off_cpu_ns)
        );
    }
    let (suppressed, waits) =
        reason(&last).map_or((0, 0), |(r, _)| (r.suppressed, r.cpu_wait_suppressed));
    println!(
        "{suppressed} trigger(s) suppressed, {waits} of them calls that only waited for a CPU"
    );
    std::fs::remove_dir_all(&dir).ok();
}
