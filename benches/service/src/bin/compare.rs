//! What the key-value service (`kv_service`) loses to fdr, configuration by configuration, and to
//! dial9 beside it: builds it without either, with fdr and with dial9, then runs each
//! configuration once per round, the rounds interleaved so every configuration sees the machine
//! in the same states, and prints the medians against the service built without fdr.
//!
//! ```sh
//! cargo run --release -p fdr-bench-service --bin compare                 # 7 rounds of 3 s
//! cargo run --release -p fdr-bench-service --bin compare -- --rounds 11 --seconds 5
//! # Only some rows (numbered from 0 as printed; the first, without fdr, always runs).
//! cargo run --release -p fdr-bench-service --bin compare -- --rows 2,6
//! ```
//!
//! Each run is a fresh process: the closed loop (16 connections, as fast as answers come) gives
//! the requests per second and the latencies under full load; then, with `--rate`, an open loop
//! at that rate gives the latencies at a load the service keeps up with. Beside requests per
//! second, the CPU time of the server's threads and fdr's per request (the clients run in a
//! process of their own), paired with the round's run without fdr: it moves less with the host
//! than throughput.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Which build of `kv_service` a row runs.
#[derive(Clone, Copy, PartialEq)]
enum Build {
    /// Neither fdr nor dial9 compiled in.
    Without,
    /// The `fdr` feature: every function annotated.
    Fdr,
    /// The `dial9` feature: the server's runtime recorded by dial9, no fdr.
    Dial9,
}

impl Build {
    const ALL: [Build; 3] = [Build::Without, Build::Fdr, Build::Dial9];

    fn feature(self) -> Option<&'static str> {
        match self {
            Build::Without => None,
            Build::Fdr => Some("fdr"),
            Build::Dial9 => Some("dial9"),
        }
    }
}

/// One configuration: which build, and `FDR_OPTIONS` (`{dir}` is a scratch directory).
struct Row {
    name: &'static str,
    build: Build,
    options: Option<&'static str>,
}

const ROWS: [Row; 10] = [
    Row {
        name: "without fdr",
        build: Build::Without,
        options: None,
    },
    Row {
        name: "compiled in, not recording",
        build: Build::Fdr,
        options: None,
    },
    Row {
        name: "recording, default configuration",
        build: Build::Fdr,
        options: Some("out={dir}/kv.fdr"),
    },
    Row {
        name: "recording, the budget off (before the budget)",
        build: Build::Fdr,
        options: Some("out={dir}/kv.fdr budget=off"),
    },
    Row {
        name: "recording, budget=0.5",
        build: Build::Fdr,
        options: Some("out={dir}/kv.fdr budget=0.5"),
    },
    Row {
        name: "recording, budget=100 (its estimate, nothing untimed)",
        build: Build::Fdr,
        options: Some("out={dir}/kv.fdr budget=100"),
    },
    Row {
        name: "a 10 ms trigger on the handler",
        build: Build::Fdr,
        options: Some("out={dir}/kv.fdr trigger=kv_service::handle_line:10ms"),
    },
    Row {
        name: "a learned trigger on the handler",
        build: Build::Fdr,
        options: Some("out={dir}/kv.fdr trigger=kv_service::handle_line:auto"),
    },
    Row {
        name: "profile mode",
        build: Build::Fdr,
        options: Some("mode=profile out={dir}/kv.fdrprof"),
    },
    Row {
        name: "dial9 recording, in memory (no fdr)",
        build: Build::Dial9,
        options: None,
    },
];

/// One run's figures.
#[derive(Clone, Copy, Default)]
struct Figures {
    rps: f64,
    p50: f64,
    p99: f64,
    p999: f64,
    /// CPU time of the server's threads and fdr's per request, ns.
    cpu: f64,
    /// The recorder's estimate of its cost, percent of the process's CPU time (-1: none).
    estimate: f64,
    /// The process's CPU time per request (clients included), ns.
    process_cpu: f64,
    /// User CPU time of every thread but the clients' per request, ns.
    server_user: f64,
}

fn parse(line: &str) -> Option<Figures> {
    let mut f = Figures::default();
    let mut words = line.split_whitespace();
    while let (Some(k), Some(v)) = (words.next(), words.next()) {
        let v: f64 = v.parse().ok()?;
        match k {
            "rps" => f.rps = v,
            "p50_us" => f.p50 = v,
            "p99_us" => f.p99 = v,
            "p999_us" => f.p999 = v,
            "server_cpu_ns_per_req" => f.cpu = v,
            "estimate_pct" => f.estimate = v,
            "cpu_ns_per_req" => f.process_cpu = v,
            "server_user_ns_per_req" => f.server_user = v,
            _ => {}
        }
    }
    (f.rps > 0.0).then_some(f)
}

/// Builds `kv_service` as `build` says and copies it to `to`.
fn build(build: Build, to: &Path) -> Result<(), String> {
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo.args([
        "build",
        "--release",
        "-q",
        "-p",
        "fdr-bench-service",
        "--bin",
        "kv_service",
    ]);
    if let Some(feature) = build.feature() {
        cargo.args(["--features", feature]);
    }
    let status = cargo.status().map_err(|e| format!("cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building kv_service (features: {:?}) failed",
            build.feature()
        ));
    }
    let built = target_dir().join("release/kv_service");
    std::fs::copy(&built, to)
        .map_err(|e| format!("{} -> {}: {e}", built.display(), to.display()))?;
    Ok(())
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || {
            // This binary is target/release/compare.
            std::env::current_exe()
                .ok()
                .and_then(|p| p.parent()?.parent().map(Path::to_path_buf))
                .unwrap_or_else(|| PathBuf::from("target"))
        },
        PathBuf::from,
    )
}

fn run(bin: &Path, options: Option<&str>, dir: &Path, extra: &[String]) -> Result<Figures, String> {
    let mut c = Command::new(bin);
    c.args(extra);
    match options {
        Some(o) => c.env(
            "FDR_OPTIONS",
            o.replace("{dir}", &dir.display().to_string()),
        ),
        None => c.env_remove("FDR_OPTIONS"),
    };
    let out = c.output().map_err(|e| format!("{}: {e}", bin.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // A snapshot or profile written, and the log at exit: the scratch directory is emptied.
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    }
    stdout
        .lines()
        .find_map(parse)
        .ok_or_else(|| format!("no figures in {stdout:?}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if let Err(e) = compare() {
        eprintln!("compare: {e}");
        std::process::exit(2);
    }
}

fn compare() -> Result<(), String> {
    let mut rounds = 7;
    let mut seconds = "3".to_string();
    let mut rate: Option<String> = None;
    // The rows to run (indices into ROWS, the first always): all unless `--rows` says.
    let mut only: Option<Vec<usize>> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--rounds takes a number of rounds, 1 or more")?
            }
            "--seconds" => seconds = args.next().ok_or("--seconds takes a number")?,
            "--rate" => rate = Some(args.next().ok_or("--rate takes requests per second")?),
            "--rows" => {
                let list = args.next().ok_or("--rows takes row numbers, 0,2,6")?;
                let rows = list
                    .split(',')
                    .map(|r| r.trim().parse::<usize>().ok().filter(|&i| i < ROWS.len()))
                    .collect::<Option<Vec<_>>>()
                    .ok_or(format!(
                        "--rows takes row numbers from 0 to {}",
                        ROWS.len() - 1
                    ))?;
                only = Some(rows);
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}: compare [--rounds N] [--seconds S] [--rate R] \
                     [--rows 0,2,6]"
                ))
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("fdr-service-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let bins: Vec<PathBuf> = Build::ALL
        .iter()
        .map(|b| dir.with_extension(b.feature().unwrap_or("without")))
        .collect();
    for (b, bin) in Build::ALL.iter().zip(&bins) {
        build(*b, bin)?;
    }
    let closed = vec!["--seconds".to_string(), seconds.clone()];
    let open = rate.as_ref().map(|r| {
        vec![
            "--seconds".to_string(),
            seconds.clone(),
            "--rate".into(),
            r.clone(),
        ]
    });
    let runs = |i: usize| i == 0 || only.as_ref().map_or(true, |o| o.contains(&i));
    let mut figures: Vec<Vec<Figures>> = vec![Vec::new(); ROWS.len()];
    let mut open_figures: Vec<Vec<Figures>> = vec![Vec::new(); ROWS.len()];
    for round in 0..rounds {
        eprint!("round {} of {rounds}\r", round + 1);
        for (i, row) in ROWS.iter().enumerate().filter(|(i, _)| runs(*i)) {
            let bin = &bins[Build::ALL.iter().position(|b| *b == row.build).unwrap_or(0)];
            figures[i].push(run(bin, row.options, &dir, &closed)?);
            if let Some(open) = &open {
                open_figures[i].push(run(bin, row.options, &dir, open)?);
            }
        }
    }
    eprintln!();
    let table = |title: &str, figures: &[Vec<Figures>], rps: bool| {
        let med = |i: usize, f: fn(&Figures) -> f64| median(figures[i].iter().map(f).collect());
        // The median of each round's ratio to that round's run without fdr: a machine that slows
        // down for a while slows both sides of a round's pair.
        let paired = |i: usize, f: fn(&Figures) -> f64| {
            median(
                figures[i]
                    .iter()
                    .zip(&figures[0])
                    .map(|(a, b)| f(a) / f(b))
                    .collect(),
            )
        };
        let base = (med(0, |f| f.rps), med(0, |f| f.p99));
        println!("\n{title}, medians of {rounds} rounds of {seconds} s:\n");
        println!(
            "| configuration | requests/s | relative | paired | best round | p50 µs | p99 µs | \
             p99 relative | p99 paired | p99.9 µs | server CPU ns/req | CPU paired | CPU best | \
             recorder's estimate % | measured recording cost % |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        // What recording measurably cost, beside the estimate: the server's user CPU a request
        // over that of the build idle (row 1) in the same round, as a share of the process's CPU
        // a request (what the estimate is a share of), median of rounds.
        let measured = |i: usize| -> String {
            if ROWS[i].build != Build::Fdr || ROWS[i].options.is_none() || !runs(1) {
                return "-".into();
            }
            let cost = median(
                figures[i]
                    .iter()
                    .zip(&figures[1])
                    .map(|(r, idle)| (r.server_user - idle.server_user) / r.process_cpu * 100.0)
                    .collect(),
            );
            format!("{cost:.2}")
        };
        for (i, row) in ROWS.iter().enumerate().filter(|(i, _)| runs(*i)) {
            let (r, p50, p99, p999) = (
                med(i, |f| f.rps),
                med(i, |f| f.p50),
                med(i, |f| f.p99),
                med(i, |f| f.p999),
            );
            let (rel, rel_paired) = if rps {
                (
                    format!("{:.3}", r / base.0),
                    format!("**{:.3}**", paired(i, |f| f.rps)),
                )
            } else {
                ("-".into(), "-".into())
            };
            // The best round: the most requests/s, the least CPU a request.
            let most = figures[i].iter().map(|f| f.rps).fold(0.0, f64::max);
            let least = figures[i]
                .iter()
                .map(|f| f.cpu)
                .fold(f64::INFINITY, f64::min);
            println!(
                "| {} | {r:.0} | {rel} | {rel_paired} | {most:.0} | {p50:.1} | {p99:.1} | {:.3} | \
                 {:.3} | {p999:.1} | {:.0} | {:.3} | {least:.0} | {:.2} | {} |",
                row.name,
                p99 / base.1,
                paired(i, |f| f.p99),
                med(i, |f| f.cpu),
                paired(i, |f| f.cpu),
                med(i, |f| f.estimate),
                measured(i),
            );
        }
    };
    table("Closed loop, 16 connections", &figures, true);
    if let Some(r) = &rate {
        table(
            &format!("Open loop at {r} requests/s"),
            &open_figures,
            false,
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    for bin in &bins {
        let _ = std::fs::remove_file(bin);
    }
    Ok(())
}
