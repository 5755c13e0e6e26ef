//! Whether sending windows to an OpenTelemetry collector ever holds up a recording thread: two
//! threads call an instrumented leaf as fast as they can, timing every call, while the main
//! thread takes a snapshot every 5 ms for 2 s (400 windows), each queued for the collector.
//! The collector is absent (`none`: no endpoint), answers every request at once (`ok`), is
//! hung (`hung`: accepts and never answers, a 10 s timeout), or down (`down`: nothing listens). Prints the calls made, the longest call
//! and how many took over 50 us and over 1 ms; the windows sent and dropped.
//!
//! ```text
//! cargo run --release -p fdr-benches --bin export_stall -- none|ok|hung|down [ROUNDS]
//! ```
//!
//! On a machine with fewer cores than busy threads, the longest call is the scheduler's time
//! slice whatever the collector does: compare the modes, not the figure with zero.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fdr_benches::workload::leaf_fdr;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("none", String::as_str);
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(3);
    let mut config = fdr::Config::default()
        .threshold(Duration::ZERO)
        .buffer_count(16);
    // Kept alive for the run: a listener nobody answers on (hung), or the port of one closed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a local port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    let _held = match mode {
        "none" => None,
        "ok" => {
            config = config.otlp_endpoint(&url);
            Some(std::thread::spawn(move || {
                for mut s in listener.incoming().flatten() {
                    answer_ok(&mut s);
                }
            }))
        }
        "hung" => {
            config = config
                .otlp_endpoint(&url)
                .otlp_timeout(Duration::from_secs(10));
            // Accepts every connection and keeps it, never answering.
            Some(std::thread::spawn(move || {
                let mut kept = Vec::new();
                for s in listener.incoming().flatten() {
                    kept.push(s);
                }
            }))
        }
        "down" => {
            drop(listener);
            config = config
                .otlp_endpoint(&url)
                .otlp_timeout(Duration::from_millis(200))
                .otlp_retry_for(Duration::from_secs(1));
            None
        }
        other => {
            eprintln!("usage: export_stall none|ok|hung|down [ROUNDS] (not {other})");
            std::process::exit(2);
        }
    };
    println!("mode {mode}: calls, longest, over 50 us, over 1 ms; windows sent, dropped");
    for _ in 0..rounds {
        let rec = fdr::start(config.clone()).expect("a recorder");
        let stop = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let (mut n, mut longest, mut over50, mut over1ms) =
                        (0u64, Duration::ZERO, 0, 0);
                    while !stop.load(Ordering::Relaxed) {
                        let t0 = Instant::now();
                        std::hint::black_box(leaf_fdr(n));
                        let d = t0.elapsed();
                        longest = longest.max(d);
                        over50 += u64::from(d > Duration::from_micros(50));
                        over1ms += u64::from(d > Duration::from_millis(1));
                        n += 1;
                    }
                    (n, longest, over50, over1ms)
                })
            })
            .collect();
        for _ in 0..400 {
            rec.snapshot(&mut std::io::sink()).expect("a snapshot");
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
        let (mut n, mut longest, mut over50, mut over1ms) = (0, Duration::ZERO, 0, 0);
        for t in threads {
            let r = t.join().expect("a recording thread");
            n += r.0;
            longest = longest.max(r.1);
            over50 += r.2;
            over1ms += r.3;
        }
        let s = rec.stats();
        rec.finish_to(&mut std::io::sink()).expect("the final log");
        println!(
            "{n} calls, longest {longest:?}, {over50} over 50 us, {over1ms} over 1 ms; \
             windows sent {}, dropped {}",
            s.windows_sent, s.windows_dropped
        );
    }
}

/// Reads one HTTP request (its head, then `Content-Length` bytes) and answers 200.
fn answer_ok(s: &mut std::net::TcpStream) {
    use std::io::{Read, Write};
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let head = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let text = String::from_utf8_lossy(&buf[..head]).to_ascii_lowercase();
    let len: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut got = buf.len() - head - 4;
    while got < len {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => got += n,
        }
    }
    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
}
