//! What a `tracing` span costs through fdr's layer and subscriber, beside fdr's own attribute and
//! the subscribers people use, on the leaf call and on the whole-program workload instrumented
//! with `#[tracing::instrument(skip_all)]`.
//!
//! ```sh
//! cargo run --release -p fdr-benches --bin spans            # 5 rounds, about 7 minutes
//! cargo run --release -p fdr-benches --bin spans -- --rounds 9
//! ```
//!
//! `tracing` takes one global subscriber per process, so each configuration runs in a process of
//! its own (this program run again with `--child CONFIG PART`), the configurations in turn, round
//! after round; the table gives each one's median. A figure is the process's CPU time (every
//! thread: tracing-chrome's writer thread is charged) of one timed run after an untimed one,
//! including what the subscriber must do for its data to be kept (tracing-chrome's flush) but
//! not fdr's log, which is only written when something goes wrong.

use std::process::Command;
use std::time::Duration;

use fdr_benches::peers::{fastrace_discard, tracing_mem};
use fdr_benches::{floor, timing, whole, workload};
use tracing_subscriber::layer::SubscriberExt;

/// Spans (or calls) of one leaf run.
const LEAF_CALLS: u64 = 2_000_000;

/// One configuration: its name in the table and on the child's command line.
struct Config {
    key: &'static str,
    what: &'static str,
}

const CONFIGS: &[Config] = &[
    Config {
        key: "plain",
        what: "uninstrumented",
    },
    Config {
        key: "floor",
        what: "two rdtsc per call (the floor)",
    },
    Config {
        key: "native0",
        what: "fdr #[instrument_fdr], every call kept (threshold 0)",
    },
    Config {
        key: "native",
        what: "fdr #[instrument_fdr], default (5 us, culling)",
    },
    Config {
        key: "none",
        what: "tracing, no subscriber",
    },
    Config {
        key: "null",
        what: "tracing, a subscriber that keeps nothing (tracing's own cost)",
    },
    Config {
        key: "refuse",
        what: "tracing, a subscriber that asks at each span and refuses it (the floor of skipping one)",
    },
    Config {
        key: "registry",
        what: "tracing, the registry with a layer that keeps nothing (any layer's floor)",
    },
    Config {
        key: "mem",
        what: "tracing, in-memory subscriber (cheapest that keeps spans)",
    },
    Config {
        key: "chrome",
        what: "tracing, tracing-chrome layer (to a sink)",
    },
    Config {
        key: "layer0",
        what: "tracing, fdr_tracing::layer(), every span kept",
    },
    Config {
        key: "layer",
        what: "tracing, fdr_tracing::layer(), default",
    },
    Config {
        key: "layer-skip",
        what: "tracing, fdr_tracing::layer().with_skip_unrecorded(true), default",
    },
    Config {
        key: "sub0",
        what: "tracing, fdr_tracing::subscriber(), every span kept",
    },
    Config {
        key: "sub",
        what: "tracing, fdr_tracing::subscriber(), default",
    },
    Config {
        key: "fastrace",
        what: "fastrace #[trace], discarding reporter",
    },
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        let (key, part) = (&args[1], &args[2]);
        println!("{}", child(key, part));
        return;
    }
    let rounds: usize = match args.iter().position(|a| a == "--rounds") {
        Some(i) => args
            .get(i + 1)
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| {
                eprintln!("--rounds takes a number of rounds");
                std::process::exit(2)
            }),
        None => 5,
    };
    let exe = std::env::current_exe().expect("this program's path");
    let mut leaf = vec![Vec::new(); CONFIGS.len()];
    let mut whole_ms = vec![Vec::new(); CONFIGS.len()];
    for round in 0..rounds {
        eprint!("round {}/{rounds}\r", round + 1);
        for (k, c) in CONFIGS.iter().enumerate() {
            leaf[k].push(run_child(&exe, c.key, "leaf"));
            if c.key != "floor" {
                whole_ms[k].push(run_child(&exe, c.key, "whole"));
            }
        }
    }
    eprintln!();
    let med = |v: &mut Vec<f64>| -> f64 {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let leaf: Vec<f64> = leaf.iter_mut().map(med).collect();
    let whole: Vec<f64> = whole_ms.iter_mut().map(med).collect();
    let at = |key: &str| CONFIGS.iter().position(|c| c.key == key).unwrap();
    let (plain_ns, plain_ms) = (leaf[at("plain")], whole[at("plain")]);
    println!("{rounds} rounds, medians; leaf: {LEAF_CALLS} calls per run; whole: the workload of");
    println!("fdr_benches::whole with #[tracing::instrument(skip_all)] (or the row's attribute) on every function\n");
    println!(
        "| configuration | leaf ns/call | above uninstrumented | whole ms | x uninstrumented |"
    );
    println!("|---|---|---|---|---|");
    for (k, c) in CONFIGS.iter().enumerate() {
        let (w, x) = match whole[k].is_nan() {
            true => ("".to_string(), "".to_string()),
            false => (
                format!("{:.1}", whole[k]),
                format!("{:.2}", whole[k] / plain_ms),
            ),
        };
        println!(
            "| {} | {:.2} | {:.2} | {w} | {x} |",
            c.what,
            leaf[k],
            leaf[k] - plain_ns
        );
    }
    let above = |key: &str| leaf[at(key)] - plain_ns;
    let whole_above = |key: &str| whole[at(key)] - plain_ms;
    println!();
    for (ours, label) in [("sub0", "subscriber"), ("layer0", "layer")] {
        println!(
            "fdr {label}, every span kept: per span {:.2} x the in-memory subscriber's cost, {:.2} x fdr's attribute's \
             (kept); whole program {:.2} x the in-memory subscriber's added time",
            above(ours) / above("mem"),
            above(ours) / above("native0"),
            whole_above(ours) / whole_above("mem"),
        );
    }
}

/// Runs one configuration's part in a process of its own; its figure.
fn run_child(exe: &std::path::Path, key: &str, part: &str) -> f64 {
    let out = Command::new(exe)
        .args(["--child", key, part])
        .output()
        .expect("run a child");
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().unwrap_or_else(|_| {
        panic!(
            "child {key} {part} failed: {}{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// In the child: sets `key` up, runs `part` once untimed and once timed. Leaf: ns per call;
/// whole: ms per run.
fn child(key: &str, part: &str) -> f64 {
    let mut recorder = None;
    let mut chrome = None;
    let start = |threshold: Option<Duration>| {
        let mut c = fdr::Config::default();
        if let Some(t) = threshold {
            c = c.threshold(t);
        }
        Some(fdr::start(c).expect("start the recorder"))
    };
    let global = |d: tracing::Dispatch| {
        tracing::dispatcher::set_global_default(d).expect("one global subscriber");
    };
    match key {
        "native0" | "layer0" | "sub0" => recorder = start(Some(Duration::ZERO)),
        "native" | "layer" | "layer-skip" | "sub" => recorder = start(None),
        _ => {}
    }
    match key {
        "mem" => tracing_mem::setup(),
        "chrome" => {
            let (layer, guard) = tracing_chrome::ChromeLayerBuilder::new()
                .writer(std::io::sink())
                .build();
            global(tracing::Dispatch::new(
                tracing_subscriber::registry().with(layer),
            ));
            chrome = Some(guard);
        }
        "null" => global(tracing::Dispatch::new(
            fdr_benches::peers::tracing_null::Null,
        )),
        "refuse" => global(tracing::Dispatch::new(
            fdr_benches::peers::tracing_null::Refuse,
        )),
        "registry" => global(tracing::Dispatch::new(
            tracing_subscriber::registry().with(NopLayer),
        )),
        "layer0" | "layer" => global(tracing::Dispatch::new(
            tracing_subscriber::registry().with(fdr_tracing::layer()),
        )),
        "layer-skip" => global(tracing::Dispatch::new(
            tracing_subscriber::registry().with(fdr_tracing::layer().with_skip_unrecorded(true)),
        )),
        "sub0" | "sub" => global(tracing::Dispatch::new(fdr_tracing::subscriber())),
        "fastrace" => fastrace_discard::setup(),
        _ => {}
    }
    let tracing_rows = [
        "none",
        "null",
        "refuse",
        "registry",
        "mem",
        "chrome",
        "layer0",
        "layer",
        "layer-skip",
        "sub0",
        "sub",
    ];
    let figure = if part == "leaf" {
        let f: fn(u64) -> u64 = match key {
            "plain" => workload::run_plain,
            "floor" => floor::rdtsc_pair,
            "native0" | "native" => workload::run_fdr,
            "fastrace" => fastrace_discard::run_and_flush,
            k if tracing_rows.contains(&k) => tracing_mem::run,
            k => panic!("no configuration {k}"),
        };
        // tracing-chrome's writer thread works behind the calls: its run is timed from the
        // untimed one on, to its flush, and charged per call of both.
        let t0 = timing::process_cpu_ns();
        std::hint::black_box(f(LEAF_CALLS / 4));
        let t = timing::process_cpu_ns();
        std::hint::black_box(f(LEAF_CALLS));
        match chrome.take() {
            Some(guard) => {
                drop(guard);
                (timing::process_cpu_ns() - t0) as f64 / (LEAF_CALLS + LEAF_CALLS / 4) as f64
            }
            None => (timing::process_cpu_ns() - t) as f64 / LEAF_CALLS as f64,
        }
    } else {
        let run: fn(&[String]) -> u64 = match key {
            "plain" => whole::run_plain,
            "native0" | "native" => whole::run_fdr_always,
            "fastrace" => whole::run_fastrace,
            k if tracing_rows.contains(&k) => whole::run_tracing,
            k => panic!("no configuration {k}"),
        };
        let sources = whole::sources();
        let expect = whole::run_plain(&sources);
        // fdr's culling settles over a few runs, as in the overhead table; the others need one.
        let warm = match key {
            "native0" | "native" | "layer0" | "layer" | "layer-skip" | "sub0" | "sub" => 8,
            _ => 1,
        };
        let t0 = timing::process_cpu_ns();
        for _ in 0..warm {
            assert_eq!(run(&sources), expect, "{key} computed something else");
        }
        let t = timing::process_cpu_ns();
        std::hint::black_box(run(&sources));
        match chrome.take() {
            Some(guard) => {
                drop(guard);
                (timing::process_cpu_ns() - t0) as f64 / 1e6 / f64::from(warm + 1)
            }
            None => (timing::process_cpu_ns() - t) as f64 / 1e6,
        }
    };
    if let Some(r) = recorder {
        r.finish_to(&mut std::io::sink()).expect("finish");
    }
    figure
}

/// A layer that keeps nothing: what the registry costs any layer.
struct NopLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for NopLayer {}
