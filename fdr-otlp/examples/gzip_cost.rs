//! What gzip does to a window's export request: its size and the time to compress it at the
//! fast and the default levels, against the time to turn the window into the request. Reads a
//! log (a window written by fdr) and prints one line per level.
//!
//! ```text
//! cargo run --release -p fdr-otlp --example gzip_cost -- LOG.fdr
//! ```

use std::io::Write;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: gzip_cost LOG.fdr");
    let log = std::fs::read(&path).expect("a readable log");
    let rounds = 20;
    let t0 = Instant::now();
    let mut body = Vec::new();
    for _ in 0..rounds {
        let w = fdr_otlp::convert::window(&log, &Default::default(), &Default::default())
            .expect("a valid log");
        body = fdr_otlp::encode(&fdr_otlp::requests(&w, 0)[0]);
    }
    let convert = t0.elapsed() / rounds;
    println!(
        "{path}: {} bytes of log, request {} bytes, converted in {convert:?}",
        log.len(),
        body.len()
    );
    for (name, level) in [
        ("fast (1)", flate2::Compression::fast()),
        ("default (6)", flate2::Compression::default()),
    ] {
        let t0 = Instant::now();
        let mut out = Vec::new();
        for _ in 0..rounds {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
            e.write_all(&body).unwrap();
            out = e.finish().unwrap();
        }
        let took = t0.elapsed() / rounds;
        println!(
            "gzip {name}: {} bytes ({:.1}x smaller) in {took:?}",
            out.len(),
            body.len() as f64 / out.len() as f64
        );
    }
}
