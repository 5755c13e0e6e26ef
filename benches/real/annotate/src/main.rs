//! `realbench`: registry crates we did not write, annotated whole, timed against themselves.
//!
//! 1. Fetches the pristine sources of [`CRATES`] at fixed versions (`cargo vendor`, into
//!    `work/vendor`, which git ignores).
//! 2. Writes a copy per way of annotating them ([`annotate::Way`]: none, each, bulk, tracing,
//!    fastrace), and one for the slow-call check (each, with a sleep injected in one function).
//! 3. Builds a driver per copy (`drivers/<crate>.rs`, a fixed workload) and runs every
//!    configuration in turn, round after round, printing the CPU time of the workload, the
//!    slowdown over the pristine crate (median, best, and the median of round-by-round ratios)
//!    and checking that every configuration computed the same result.
//! 4. Reads the log of the default configuration: functions seen, culled, restored, probes.
//!
//! ```sh
//! cargo run --release --manifest-path benches/real/Cargo.toml -- [--rounds N] [--crate NAME] [--modes plain,tracing,...] [--check-slow]
//! ```
//!
//! `--short N` times short runs instead: the whole process (start, `N` rounds of the workload,
//! the log written at the end; wall time), pristine against fdr each and bulk by default, a
//! first run (`fresh`: culling learns from nothing) and a next run (`default`: it starts from
//! what the run before it culled), 21 rounds of each in turn, medians.
//!
//! `--service` measures the service crates instead (`mini-redis`, which the runs above leave
//! out): the pristine crate and its copies annotated each and bulk, as a server in the driver's
//! process
//! (`drivers/mini_redis.rs`: two tokio worker threads, 16 client connections in a closed loop,
//! SET and GET over RESP, `--seconds S` measured after a 0.5 s warm-up, default 3). Every
//! configuration (pristine; annotated with no recorder, `plain`; `default`; a 10 ms trigger on
//! the command handler, `trigger10`; a learned one, `auto`; `profile`; and the bulk copy idle
//! and `default`) runs once per round, a
//! fresh process each, `--rounds R` rounds interleaved (default 11, after a short warm-up round),
//! and the table gives medians: requests per second, CPU ns per request (`getrusage`, the whole
//! process, and less the clients' thread), p50/p99/p99.9 latency, trigger snapshots written,
//! each against the pristine service as a ratio of medians and as the median of round-by-round
//! ratios (`paired`). Then a default run's log (`work/mini-redis-service.fdr`) must hold calls of
//! the command handler the triggers are set on.
//!
//! ```sh
//! cargo run --release --manifest-path benches/real/Cargo.toml -- --service [--rounds R] [--seconds S]
//! ```
//!
//! `--check-slow` runs only the check: after a point of the workload one culled function sleeps
//! 1 ms on every 50th call (500 times), and the log must show it culled, then restored, with its
//! slow calls recorded; it prints how long after the first slow call the restore came.

mod annotate;

use std::path::{Path, PathBuf};
use std::process::Command;

use annotate::Way;

/// A crate to measure.
struct Crate {
    name: &'static str,
    version: &'static str,
    /// The driver, in `drivers/`.
    driver: &'static str,
    /// Rounds of the driver's workload per run (about 0.3 s uninstrumented here).
    rounds: u32,
    /// A function that is culled under the workload, made slow for `--check-slow`, and the
    /// call after which it becomes slow.
    slow: (&'static str, u64),
    /// A service, measured by `--service` only (its driver serves requests for some seconds
    /// and prints throughput, latency and CPU per request), not a batch workload.
    service: bool,
    /// More dependencies of its driver, lines of `[dependencies]`.
    deps: &'static str,
}

const CRATES: [Crate; 4] = [
    Crate {
        name: "regex-syntax",
        version: "0.8.11",
        driver: "regex_syntax.rs",
        rounds: 3000,
        slow: ("char_at", 50_000),
        service: false,
        deps: "",
    },
    Crate {
        name: "serde_json",
        version: "1.0.154",
        driver: "serde_json.rs",
        rounds: 300,
        slow: ("eat_char", 2_000_000),
        service: false,
        deps: "",
    },
    // The crate #36 named: a short run of it annotated whole once ran 4.3 to 5.2 x slower while
    // its steady state was 1.35 x.
    Crate {
        name: "semver",
        version: "1.0.28",
        driver: "semver.rs",
        rounds: 15000,
        slow: ("dot", 100_000),
        service: false,
        deps: "",
    },
    Crate {
        name: "mini-redis",
        version: "0.4.1",
        driver: "mini_redis.rs",
        rounds: 0,
        slow: ("", 0),
        service: true,
        deps: "tokio = { version = \"1\", features = [\"rt-multi-thread\", \"net\", \"io-util\", \"time\", \"sync\"] }\n",
    },
];

/// One row of the table: a copy of the crate and the driver's `MODE`.
const CONFIGS: [(&str, Way, &str); 18] = [
    ("uninstrumented", Way::None, "plain"),
    ("fdr each, compiled in, no recorder", Way::Each, "plain"),
    ("fdr each, threshold 0", Way::Each, "zero"),
    ("fdr each, default (5 us, culling)", Way::Each, "default"),
    ("fdr each, 5 us, culling off", Way::Each, "nocull"),
    ("fdr each, profile mode", Way::Each, "profile"),
    (
        "fdr each, default and a profile",
        Way::Each,
        "default+profile",
    ),
    ("fdr bulk, compiled in, no recorder", Way::Bulk, "plain"),
    ("fdr bulk, threshold 0", Way::Bulk, "zero"),
    ("fdr bulk, default (5 us, culling)", Way::Bulk, "default"),
    ("fdr bulk, 5 us, culling off", Way::Bulk, "nocull"),
    (
        "tracing each (cheapest subscriber)",
        Way::Tracing,
        "tracing",
    ),
    (
        "tracing each, a subscriber that keeps nothing",
        Way::Tracing,
        "tracing-null",
    ),
    (
        "tracing each, fdr_tracing::subscriber (default)",
        Way::Tracing,
        "tracing-sub",
    ),
    (
        "tracing each, fdr_tracing::layer (default)",
        Way::Tracing,
        "tracing-layer",
    ),
    (
        "tracing each, fdr_tracing::layer skipping unrecorded spans (default)",
        Way::Tracing,
        "tracing-layer-skip",
    ),
    (
        "tracing each, the registry with a layer that does nothing",
        Way::Tracing,
        "tracing-registry",
    ),
    ("fastrace each", Way::Fastrace, "fastrace"),
];

/// What `--check-slow` injects at the start of the slow function's body.
const SLOW_STMT: &str = "crate::__fdr_bench::maybe_slow();";

/// Appended to the slow copy's `lib.rs`: after `FDR_BENCH_SLOW_AFTER` calls, every 50th call
/// sleeps 1 ms, 500 times at most; the first such call's time is kept for the driver.
const SLOW_MOD: &str = r#"
#[doc(hidden)]
pub mod __fdr_bench {
    use ::std::sync::atomic::{AtomicU64, Ordering};
    use ::std::sync::OnceLock;
    use ::std::time::{Duration, Instant};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    static FIRST: OnceLock<Instant> = OnceLock::new();
    pub fn maybe_slow() {
        static AFTER: OnceLock<u64> = OnceLock::new();
        let after = *AFTER.get_or_init(|| {
            ::std::env::var("FDR_BENCH_SLOW_AFTER").ok().and_then(|s| s.parse().ok()).unwrap_or(u64::MAX)
        });
        let n = CALLS.fetch_add(1, Ordering::Relaxed);
        if n >= after && (n - after) % 50 == 0 && (n - after) / 50 < 500 {
            FIRST.get_or_init(Instant::now);
            ::std::thread::sleep(Duration::from_millis(1));
        }
    }
    pub fn first_slow() -> Option<Instant> {
        FIRST.get().copied()
    }
}
"#;

struct Paths {
    /// `benches/real`.
    real: PathBuf,
    /// The repository.
    repo: PathBuf,
    /// `benches/real/work`.
    work: PathBuf,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("realbench: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut rounds, mut only, mut check) = (None::<usize>, None, false);
    let mut short: Option<u32> = None;
    let (mut service, mut seconds) = (false, 3.0f64);
    let mut modes: Option<Vec<String>> = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => {
                rounds = Some(
                    args.next()
                        .and_then(|n| n.parse().ok())
                        .filter(|&n| n > 0)
                        .ok_or("--rounds takes a number, 1 or more")?,
                )
            }
            "--service" => service = true,
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&s: &f64| s > 0.0)
                    .ok_or("--seconds takes a positive number of seconds")?
            }
            "--crate" => only = Some(args.next().ok_or("--crate takes a name")?),
            "--check-slow" => check = true,
            "--short" => {
                short = Some(
                    args.next()
                        .and_then(|n| n.parse().ok())
                        .ok_or("--short takes a number of rounds of the workload")?,
                )
            }
            "--modes" => {
                let list = args
                    .next()
                    .ok_or("--modes takes a list: plain,tracing,...")?;
                modes = Some(list.split(',').map(str::to_string).collect());
            }
            _ => {
                return Err(format!(
                    "unknown argument `{a}`; see the doc of src/main.rs"
                ))
            }
        }
    }
    let real = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no parent directory")?
        .to_path_buf();
    let repo = real
        .parent()
        .and_then(Path::parent)
        .ok_or("benches/real is not inside the repository")?
        .to_path_buf();
    let p = Paths {
        work: real.join("work"),
        real,
        repo,
    };
    std::fs::create_dir_all(&p.work).map_err(|e| e.to_string())?;
    fetch(&p)?;
    let chosen: Vec<&Crate> = CRATES
        .iter()
        .filter(|c| only.as_deref().is_none_or(|o| o == c.name) && c.service == service)
        .collect();
    if chosen.is_empty() {
        let names: Vec<String> = CRATES
            .iter()
            .map(|c| format!("{}{}", c.name, if c.service { " (--service)" } else { "" }))
            .collect();
        return Err(format!(
            "no crate to measure: the crates are {}",
            names.join(", ")
        ));
    }
    for c in chosen {
        if service {
            service_table(&p, c, rounds.unwrap_or(11), seconds, modes.as_deref())?;
        } else if check {
            check_slow(&p, c)?;
        } else if let Some(n) = short {
            short_runs(&p, c, n)?;
        } else {
            table(&p, c, rounds.unwrap_or(5), modes.as_deref())?;
        }
    }
    Ok(())
}

/// The pristine sources, once.
fn fetch(p: &Paths) -> Result<(), String> {
    let vendor = p.work.join("vendor");
    if CRATES
        .iter()
        .all(|c| vendor.join(format!("{}-{}", c.name, c.version)).is_dir())
    {
        return Ok(());
    }
    let fetch = p.work.join("fetch");
    std::fs::create_dir_all(fetch.join("src")).map_err(|e| e.to_string())?;
    let deps: String = CRATES
        .iter()
        .map(|c| {
            format!(
                "{} = {{ version = \"={}\", default-features = true }}\n",
                c.name, c.version
            )
        })
        .collect();
    write(
        &fetch.join("Cargo.toml"),
        &format!("[package]\nname = \"fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\n{deps}\n[workspace]\n"),
    )?;
    write(&fetch.join("src/lib.rs"), "")?;
    cargo(
        Command::new("cargo")
            // Keeping what is there: a run of another crate may be copying from it.
            .args([
                "vendor",
                "--versioned-dirs",
                "--no-delete",
                "--manifest-path",
            ])
            .arg(fetch.join("Cargo.toml"))
            .arg(&vendor),
        "cargo vendor",
    )
}

/// A copy of `c` annotated `way` (with the slow call injected when `slow`), and its driver;
/// returns the driver's binary.
fn build(p: &Paths, c: &Crate, way: Way, slow: bool) -> Result<(PathBuf, usize), String> {
    let tag = if slow {
        "each-slow".to_string()
    } else {
        way.name().to_string()
    };
    let src = p
        .work
        .join("vendor")
        .join(format!("{}-{}", c.name, c.version));
    let dst = p.work.join(format!("{}-{tag}", c.name));
    if dst.exists() {
        std::fs::remove_dir_all(&dst).map_err(|e| e.to_string())?;
    }
    copy_dir(&src, &dst)?;
    let _ = std::fs::remove_file(dst.join(".cargo-checksum.json"));
    let injected = slow.then_some((c.slow.0, SLOW_STMT));
    let n = annotate::annotate_dir(&dst.join("src"), way, injected)?;
    if slow {
        let lib = dst.join("src/lib.rs");
        let mut text = std::fs::read_to_string(&lib).map_err(|e| e.to_string())?;
        text.push_str(SLOW_MOD);
        write(&lib, &text)?;
    }
    let mut toml = std::fs::read_to_string(dst.join("Cargo.toml")).map_err(|e| e.to_string())?;
    let fdr = p.repo.join("fdr");
    toml.push_str(&match way {
        Way::None => String::new(),
        Way::Each | Way::Bulk => format!(
            "\n[dependencies.fdr]\npath = {:?}\nfeatures = [\"enable\"]\n",
            fdr.display().to_string()
        ),
        Way::Tracing => "\n[dependencies.tracing]\nversion = \"0.1\"\n".into(),
        Way::Fastrace => {
            "\n[dependencies.fastrace]\nversion = \"0.7\"\nfeatures = [\"enable\"]\n".into()
        }
    });
    write(&dst.join("Cargo.toml"), &toml)?;
    let features = match way {
        Way::None => vec![],
        Way::Each | Way::Bulk => vec!["fdr"],
        Way::Tracing => vec!["tracing"],
        Way::Fastrace => vec!["fastrace"],
    };
    let mut features: Vec<String> = features.iter().map(|f| format!("{f:?}")).collect();
    if slow {
        features.push("\"slow\"".into());
    }
    let bin = format!("drv-{}-{tag}", c.name);
    let drv = p.work.join(&bin);
    std::fs::create_dir_all(&drv).map_err(|e| e.to_string())?;
    let lib_name = c.name.replace('-', "_");
    write(
        &drv.join("Cargo.toml"),
        &format!(
            r#"[package]
name = "{bin}"
version = "0.0.0"
edition = "2021"
publish = false

[[bin]]
name = "{bin}"
path = {driver:?}

[dependencies]
{lib_name} = {{ package = "{name}", path = "../{name}-{tag}" }}
libc = "0.2"
fdr = {{ path = {fdr:?}, features = ["enable"], optional = true }}
fdr-benches = {{ path = {benches:?}, optional = true }}
fastrace = {{ version = "0.7", features = ["enable"], optional = true }}
{deps}
[features]
default = [{features}]
fdr = ["dep:fdr"]
tracing = ["dep:fdr-benches"]
fastrace = ["dep:fdr-benches", "dep:fastrace"]
slow = []

[profile.release]
debug = 1

[workspace]
"#,
            name = c.name,
            driver = p.real.join("drivers").join(c.driver).display().to_string(),
            fdr = fdr.display().to_string(),
            benches = p.repo.join("benches").display().to_string(),
            features = features.join(", "),
            deps = c.deps,
        ),
    )?;
    cargo(
        Command::new("cargo")
            .args(["build", "--release", "--quiet", "--manifest-path"])
            .arg(drv.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", p.work.join("target")),
        &format!("building {bin}"),
    )?;
    Ok((p.work.join("target/release").join(bin), n))
}

/// What driver `bin`, run as `cmd` under `MODE=mode` and `env`, printed; an error with its
/// output when it failed.
fn stdout_of(
    cmd: &mut Command,
    bin: &Path,
    mode: &str,
    env: &[(&str, String)],
) -> Result<String, String> {
    let out = cmd
        .env("MODE", mode)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        return Err(format!(
            "{} (MODE={mode}) failed: {}{}",
            bin.display(),
            text,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(text)
}

/// One run: the workload's CPU time in ns, its check value and its whole output.
fn run_driver(
    bin: &Path,
    rounds: u32,
    mode: &str,
    env: &[(&str, String)],
) -> Result<(u64, String, String), String> {
    let mut cmd = Command::new(bin);
    let text = stdout_of(cmd.arg(rounds.to_string()), bin, mode, env)?;
    let field = |k: &str| {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .map(str::to_string)
            .ok_or_else(|| format!("{} printed no {k}: {text}", bin.display()))
    };
    let cpu = field("cpu_ns=")?
        .parse()
        .map_err(|_| "bad cpu_ns".to_string())?;
    Ok((cpu, field("check=")?, text))
}

/// Short runs of the whole process (see the crate's doc, `--short`).
fn short_runs(p: &Paths, c: &Crate, n: u32) -> Result<(), String> {
    let mut bins = std::collections::BTreeMap::new();
    for way in [Way::None, Way::Each, Way::Bulk, Way::Tracing] {
        bins.insert(way.name(), build(p, c, way, false)?.0);
    }
    let configs = [
        ("uninstrumented", "none", "plain"),
        (
            "tracing each, the cheapest in-memory subscriber",
            "tracing",
            "tracing",
        ),
        (
            "tracing each, fdr_tracing::subscriber (default; next run)",
            "tracing",
            "tracing-sub",
        ),
        ("fdr each, first run (culling learns)", "each", "fresh"),
        (
            "fdr each, next run (starts from the last run's culls)",
            "each",
            "default",
        ),
        ("fdr bulk, first run (culling learns)", "bulk", "fresh"),
        (
            "fdr bulk, next run (starts from the last run's culls)",
            "bulk",
            "default",
        ),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    for round in 0..=21 {
        for (i, (_, way, mode)) in configs.iter().enumerate() {
            let t = std::time::Instant::now();
            run_driver(&bins[way], n, mode, &[])?;
            if round > 0 {
                times[i].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    println!(
        "\n## {} {}: short runs, {n} rounds of the workload, whole process (wall ms, medians of 21)\n",
        c.name, c.version
    );
    println!("| configuration | median ms | x median |\n|---|---|---|");
    let base = median(&mut times[0].clone());
    for (i, (name, _, _)) in configs.iter().enumerate() {
        let m = median(&mut times[i]);
        println!("| {name} | {m:.2} | {:.2} x |", m / base);
    }
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn table(p: &Paths, c: &Crate, rounds: usize, modes: Option<&[String]>) -> Result<(), String> {
    // The uninstrumented row, which the ratios divide by, and the rows asked for.
    let configs: Vec<&(&str, Way, &str)> = CONFIGS
        .iter()
        .enumerate()
        .filter(|(i, (_, _, mode))| *i == 0 || modes.is_none_or(|m| m.iter().any(|x| x == mode)))
        .map(|(_, c)| c)
        .collect();
    let mut bins = std::collections::BTreeMap::new();
    let mut annotated = std::collections::BTreeMap::new();
    for way in Way::ALL {
        let (bin, n) = build(p, c, way, false)?;
        bins.insert(way.name(), bin);
        annotated.insert(way.name(), n);
    }
    println!(
        "\n## {} {} (driver: benches/real/drivers/{}, {} rounds of the workload per run)\n",
        c.name, c.version, c.driver, c.rounds
    );
    println!(
        "attributes inserted: each {}, bulk {}, tracing {}, fastrace {}",
        annotated["each"], annotated["bulk"], annotated["tracing"], annotated["fastrace"]
    );
    // A warm-up run of each, then `rounds` rounds of every configuration in turn.
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut checks: Vec<String> = vec![String::new(); configs.len()];
    for round in 0..=rounds {
        for (i, (_, way, mode)) in configs.iter().enumerate() {
            let (cpu, check, _) = run_driver(&bins[way.name()], c.rounds, mode, &[])?;
            if round > 0 {
                times[i].push(cpu as f64 / 1e6);
            }
            checks[i] = check;
        }
    }
    if let Some(i) = checks.iter().position(|k| *k != checks[0]) {
        return Err(format!(
            "{} computed {} under `{}` but {} uninstrumented: instrumentation changed a result",
            c.name, checks[i], configs[i].0, checks[0]
        ));
    }
    println!("\n| configuration | median ms | best ms | x median | x best | x paired |\n|---|---|---|---|---|---|");
    let base = times[0].clone();
    let base_median = median(&mut base.clone());
    let base_best = base.iter().copied().fold(f64::INFINITY, f64::min);
    for (i, (name, _, _)) in configs.iter().enumerate() {
        let mut ratios: Vec<f64> = times[i].iter().zip(&base).map(|(t, b)| t / b).collect();
        let best = times[i].iter().copied().fold(f64::INFINITY, f64::min);
        let m = median(&mut times[i].clone());
        println!(
            "| {name} | {m:.1} | {best:.1} | {:.2} | {:.2} | **{:.2}** |",
            m / base_median,
            best / base_best,
            median(&mut ratios)
        );
    }
    // What culling did in one default run of each way.
    for way in [Way::Each, Way::Bulk] {
        let log = p.work.join(format!("{}-{}.fdr", c.name, way.name()));
        run_driver(
            &bins[way.name()],
            c.rounds,
            "default",
            &[("OUT", log.display().to_string())],
        )?;
        let bytes = std::fs::read(&log).map_err(|e| e.to_string())?;
        let s = fdr_benches::logcheck::summarize(&bytes[..], None)?;
        let seen = s
            .functions
            .values()
            .filter(|f| f.calls > 0 || f.culled > 0)
            .count();
        let culled = s.functions.values().filter(|f| f.culled > 0).count();
        let restored = s.functions.values().filter(|f| f.restored > 0).count();
        println!(
            "\n{} default run: {} functions in the table, {seen} recorded or culled, {culled} culled, {restored} restored by a probe; {} calls erased, {} probes ({})",
            way.name(),
            s.functions.len(),
            s.calls_erased,
            s.probes,
            log.display()
        );
    }
    Ok(())
}

/// The `--service` rows: a copy of the service and the driver's `MODE`.
const SERVICE_CONFIGS: [(&str, Way, &str); 11] = [
    ("pristine", Way::None, "plain"),
    (
        "fdr each, compiled in, no recorder (idle)",
        Way::Each,
        "plain",
    ),
    ("fdr each, default", Way::Each, "default"),
    ("fdr each, default without a budget", Way::Each, "nobudget"),
    ("fdr each, budget=0.5", Way::Each, "budget0.5"),
    (
        "fdr each, budget=100 (its estimate, nothing untimed)",
        Way::Each,
        "estimate",
    ),
    (
        "fdr each, a 10 ms trigger on the handler",
        Way::Each,
        "trigger10",
    ),
    (
        "fdr each, a learned trigger on the handler",
        Way::Each,
        "auto",
    ),
    ("fdr each, profile mode", Way::Each, "profile"),
    // The documented bulk rule: what the macro leaves out of `impl` blocks (trivial methods) is
    // not recorded at all.
    (
        "fdr bulk, compiled in, no recorder (idle)",
        Way::Bulk,
        "plain",
    ),
    ("fdr bulk, default", Way::Bulk, "default"),
];

/// One run of a service driver.
#[derive(Clone, Copy, Default)]
struct Served {
    rps: f64,
    p50: f64,
    p99: f64,
    p999: f64,
    /// CPU ns per request, the whole process (clients included).
    cpu: f64,
    /// The same less the clients' thread.
    server_cpu: f64,
    snapshots: f64,
    /// The recorder's estimate of its cost, in percent of the CPU time (-1: no budget).
    estimate: f64,
    /// User CPU time of the server's threads (and fdr's) a request, ns.
    server_user: f64,
}

/// One run of a service driver for `seconds`, after its warm-up.
fn run_service(
    bin: &Path,
    mode: &str,
    seconds: f64,
    env: &[(&str, String)],
) -> Result<Served, String> {
    let text = stdout_of(
        Command::new(bin)
            .args(["--seconds", &seconds.to_string()])
            .env_remove("FDR_OPTIONS"),
        bin,
        mode,
        env,
    )?;
    let mut f = Served::default();
    let mut words = text.split_whitespace();
    while let (Some(k), Some(v)) = (words.next(), words.next()) {
        let v: f64 = v
            .parse()
            .map_err(|_| format!("{}: a bad figure in {text:?}", bin.display()))?;
        match k {
            "rps" => f.rps = v,
            "p50_us" => f.p50 = v,
            "p99_us" => f.p99 = v,
            "p999_us" => f.p999 = v,
            "cpu_ns_per_req" => f.cpu = v,
            "server_cpu_ns_per_req" => f.server_cpu = v,
            "snapshots" => f.snapshots = v,
            "estimate_pct" => f.estimate = v,
            "server_user_ns_per_req" => f.server_user = v,
            _ => {}
        }
    }
    if f.rps > 0.0 {
        Ok(f)
    } else {
        Err(format!(
            "{} (MODE={mode}) served nothing: {text}",
            bin.display()
        ))
    }
}

/// `--service`: every configuration of [`SERVICE_CONFIGS`] once per round, a fresh process
/// each, `rounds` rounds interleaved, medians against the pristine service; then a check that
/// the annotated copy records the service's functions.
fn service_table(
    p: &Paths,
    c: &Crate,
    rounds: usize,
    seconds: f64,
    modes: Option<&[String]>,
) -> Result<(), String> {
    // `--modes plain,default,...`: the pristine row and the rows of those modes (idle is `plain`).
    let chosen: Vec<usize> = (0..SERVICE_CONFIGS.len())
        .filter(|&i| i == 0 || modes.is_none_or(|m| m.iter().any(|x| x == SERVICE_CONFIGS[i].2)))
        .collect();
    let mut bins = std::collections::BTreeMap::new();
    let mut annotated = Vec::new();
    for way in [Way::None, Way::Each, Way::Bulk] {
        let (bin, n) = build(p, c, way, false)?;
        bins.insert(way.name(), bin);
        if way != Way::None {
            annotated.push(format!("{} {n}", way.name()));
        }
    }
    println!(
        "\n## {} {} as a service (driver: benches/real/drivers/{}; {rounds} rounds of {seconds} s, 16 connections, closed loop)\n",
        c.name, c.version, c.driver
    );
    println!("attributes inserted: {}", annotated.join(", "));
    let n = SERVICE_CONFIGS.len();
    let mut runs: Vec<Vec<Served>> = vec![Vec::new(); n];
    // A short warm-up round, not counted (the page cache, what `default` culled last time).
    for round in 0..=rounds {
        eprint!("round {round} of {rounds}\r");
        for (i, (_, way, mode)) in SERVICE_CONFIGS.iter().enumerate() {
            if !chosen.contains(&i) {
                continue;
            }
            let s = if round == 0 {
                seconds.min(0.5)
            } else {
                seconds
            };
            let f = run_service(&bins[way.name()], mode, s, &[])?;
            if round > 0 {
                runs[i].push(f);
            }
        }
    }
    eprintln!();
    let med =
        |i: usize, f: fn(&Served) -> f64| median(&mut runs[i].iter().map(f).collect::<Vec<_>>());
    // The median of the round-by-round ratios to the pristine run of the same round.
    let paired = |i: usize, f: fn(&Served) -> f64| {
        median(
            &mut runs[i]
                .iter()
                .zip(&runs[0])
                .map(|(r, b)| f(r) / f(b))
                .collect::<Vec<_>>(),
        )
    };
    let (rps, cpu, server_cpu, p99) = (
        |f: &Served| f.rps,
        |f: &Served| f.cpu,
        |f: &Served| f.server_cpu,
        |f: &Served| f.p99,
    );
    println!(
        "\n| configuration | req/s | x req/s | x req/s paired | CPU ns/req | x CPU | x CPU paired | server CPU ns/req | x server CPU paired | p50 µs | p99 µs | x p99 | x p99 paired | p99.9 µs | snapshots | recorder's estimate % | server user CPU ns/req | x server user CPU paired | measured recording cost % |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    // What recording measurably cost, to set beside the recorder's estimate: the server's user
    // CPU a request over that of the idle row of the same build in the same round (the
    // recorder's work is user time: its hooks on the server's threads, and its writer), as a
    // share of the process's CPU a request (what the estimate is a share of), median of rounds.
    let measured = |i: usize| -> Option<f64> {
        let (_, way, mode) = SERVICE_CONFIGS[i];
        if mode == "plain" {
            return None;
        }
        let idle = (0..SERVICE_CONFIGS.len()).find(|&j| {
            chosen.contains(&j) && SERVICE_CONFIGS[j].1 == way && SERVICE_CONFIGS[j].2 == "plain"
        })?;
        Some(median(
            &mut runs[i]
                .iter()
                .zip(&runs[idle])
                .map(|(r, b)| (r.server_user - b.server_user) / r.cpu * 100.0)
                .collect::<Vec<_>>(),
        ))
    };
    for (i, (name, _, _)) in SERVICE_CONFIGS.iter().enumerate() {
        if !chosen.contains(&i) {
            continue;
        }
        println!(
            "| {name} | {:.0} | {:.3} | **{:.3}** | {:.0} | {:.3} | **{:.3}** | {:.0} | {:.3} | {:.1} | {:.1} | {:.3} | {:.3} | {:.1} | {:.0} | {:.2} | {:.0} | {:.3} | {} |",
            med(i, rps),
            med(i, rps) / med(0, rps),
            paired(i, rps),
            med(i, cpu),
            med(i, cpu) / med(0, cpu),
            paired(i, cpu),
            med(i, server_cpu),
            paired(i, server_cpu),
            med(i, |f| f.p50),
            med(i, p99),
            med(i, p99) / med(0, p99),
            paired(i, p99),
            med(i, |f| f.p999),
            med(i, |f| f.snapshots),
            med(i, |f| f.estimate),
            med(i, |f| f.server_user),
            paired(i, |f| f.server_user),
            measured(i).map_or("-".to_string(), |m| format!("{m:.2}")),
        );
    }
    // The annotated copy records: a default run's log holds the service's functions, the
    // handler the triggers are set on among them.
    let log = p.work.join(format!("{}-service.fdr", c.name));
    // Without a budget: with one, the service's short handlers are untimed.
    run_service(
        &bins["each"],
        "nobudget",
        seconds.min(1.0),
        &[("OUT", log.display().to_string())],
    )?;
    let bytes = std::fs::read(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let s = fdr_benches::logcheck::summarize(&bytes[..], None)?;
    let prefix = format!("{}::", c.name.replace('-', "_"));
    let mut recorded: Vec<_> = s
        .functions
        .values()
        .filter(|f| f.name.starts_with(&prefix) && (f.calls > 0 || f.culled > 0))
        .collect();
    recorded.sort_by_key(|f| std::cmp::Reverse(f.calls));
    if recorded.is_empty() {
        return Err(format!(
            "the default run's log ({}) has no call of a {prefix} function",
            log.display()
        ));
    }
    let handler = SERVICE_HANDLER;
    if !recorded.iter().any(|f| f.name == handler) {
        return Err(format!(
            "the default run's log ({}) has no call of {handler}, which the triggers are set on",
            log.display()
        ));
    }
    println!(
        "\nthe default run's log ({}): {} functions in the table, {} of {prefix} recorded or culled; most calls: {}",
        log.display(),
        s.functions.len(),
        recorded.len(),
        recorded
            .iter()
            .take(5)
            .map(|f| format!("{} {}", f.name, f.calls))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// The function the service driver sets its triggers on (`HANDLER` in
/// `drivers/mini_redis.rs`).
const SERVICE_HANDLER: &str = "mini_redis::cmd::Command::apply";

/// The slow-call check, up to five times: a probed call slowed by the machine (an interrupt)
/// can restore the function before its slow calls begin, and then the run checks nothing.
fn check_slow(p: &Paths, c: &Crate) -> Result<(), String> {
    let (bin, _) = build(p, c, Way::Each, true)?;
    let mut last = String::new();
    for attempt in 1..=5 {
        match check_slow_once(p, c, &bin) {
            Ok(line) => {
                println!("{line} (run {attempt})");
                return Ok(());
            }
            Err(Retry::Again(why)) => last = why,
            Err(Retry::Fail(why)) => return Err(why),
        }
    }
    Err(last)
}

enum Retry {
    /// The run checked nothing: run again.
    Again(String),
    /// The check failed.
    Fail(String),
}

fn check_slow_once(p: &Paths, c: &Crate, bin: &Path) -> Result<String, Retry> {
    let fail = Retry::Fail;
    let log = p.work.join(format!("{}-slow.fdr", c.name));
    let (_, _, out) = run_driver(
        bin,
        c.rounds,
        "check",
        &[
            ("OUT", log.display().to_string()),
            ("FDR_BENCH_SLOW_AFTER", c.slow.1.to_string()),
        ],
    )
    .map_err(fail)?;
    let first_slow_unix_ns: f64 = out
        .split_whitespace()
        .find_map(|w| w.strip_prefix("first_slow_unix_ns="))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| fail(format!("the driver made no slow call: {out}")))?;
    let bytes = std::fs::read(&log).map_err(|e| fail(e.to_string()))?;
    let s = fdr_benches::logcheck::summarize(&bytes[..], Some(std::time::Duration::from_millis(1)))
        .map_err(fail)?;
    let f = s
        .functions
        .values()
        .find(|f| f.name.ends_with(&format!("::{}", c.slow.0)))
        .ok_or_else(|| fail(format!("{} is not in the log's table", c.slow.0)))?;
    if f.slow == 0 {
        return Err(fail(format!(
            "{}: no call of 1 ms or more in the log",
            f.name
        )));
    }
    // Times in ms from the recording's start; the driver's wall-clock time of the first slow
    // call onto the same scale through the log's wall-clock start.
    let ms = |tsc: u64| s.ns(tsc.saturating_sub(s.start_tsc)) / 1e6;
    let first_slow_ms = (first_slow_unix_ns - s.start_unix_ns as f64) / 1e6;
    // One thread: its events are in time order. What held when the slow calls began, and the
    // first restore after that.
    let before = f
        .cull_events
        .iter()
        .rev()
        .find(|e| ms(e.1) <= first_slow_ms);
    let Some(&(fdr_format::CullKind::Culled, culled_at)) = before else {
        return Err(Retry::Again(format!(
            "{} was not culled when its slow calls began (events: {:?}): a probed call slowed by \
             the machine restored it before; run the check again",
            f.name,
            f.cull_events
                .iter()
                .map(|e| (e.0, ms(e.1)))
                .collect::<Vec<_>>()
        )));
    };
    let restored_at = f
        .cull_events
        .iter()
        .find(|e| e.0 == fdr_format::CullKind::Restored && ms(e.1) > first_slow_ms)
        .map(|e| e.1)
        .ok_or_else(|| {
            fail(format!(
                "{} was culled and never restored: its slow calls were missed",
                f.name
            ))
        })?;
    Ok(format!(
        "{}: {} culled at {:.1} ms, first slow call at {:.1} ms, restored at {:.1} ms: {:.1} ms after the first slow call; {} of its 500 slow calls recorded",
        c.name,
        f.name,
        ms(culled_at),
        first_slow_ms,
        ms(restored_at),
        ms(restored_at) - first_slow_ms,
        f.slow
    ))
}

fn cargo(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| e.to_string())?;
    for e in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| format!("{}: {e}", src.display()))?;
        }
    }
    Ok(())
}
