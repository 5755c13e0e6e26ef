//! What a short program pays for recording at all: the recorder started with
//! `Config::default()`, one instrumented call, the recording finished (into a sink), exit. Timed
//! from outside as whole processes, against the same program not recording (`plain`):
//!
//! ```text
//! cargo build --release -p fdr-benches --bin start
//! perf stat -r 51 target/release/start plain
//! perf stat -r 51 target/release/start default
//! ```

use std::process::ExitCode;

#[fdr::instrument_fdr]
#[inline(never)]
fn one(x: u64) -> u64 {
    x.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn main() -> ExitCode {
    let record = match std::env::args().nth(1).as_deref() {
        Some("plain") => false,
        Some("default") => true,
        _ => {
            eprintln!("usage: start plain|default");
            return ExitCode::from(2);
        }
    };
    let rec = record.then(|| fdr::start(fdr::Config::default()).expect("start the recorder"));
    std::hint::black_box(one(std::hint::black_box(7)));
    if let Some(rec) = rec {
        rec.finish_to(&mut std::io::sink()).expect("finish");
    }
    ExitCode::SUCCESS
}
