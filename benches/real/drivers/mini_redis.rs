//! The service: mini-redis's own server (`mini_redis::server::run`, pristine or annotated) in this
//! process on a tokio runtime with two worker threads, and its load in a process of its own (this
//! program again, with `--clients-of ADDR`): client tasks, each on its own connection, speaking
//! RESP over a `TcpStream` (not mini-redis's client, which is annotated too and would charge its
//! own calls to the server), as fast as answers come (a closed loop): a SET for one request in
//! five, a GET for the others, on a few hundred keys. The load is a process apart so that the
//! server's process is what a deployed service's is: a recorder's budget, a share of its
//! process's CPU time, is then a share of the server's, as it is in production, and not of a
//! process that also carries its own load.
//!
//! ```sh
//! MODE=default drv-mini-redis-each [--seconds 3] [--warm-up 0.5] [--connections 16] [--keys 300]
//! ```
//!
//! It prints one line of `name value` pairs: the requests that began in the measured interval
//! (after the warm-up), requests per second, their latency percentiles in µs (measured by the
//! clients), the server process's CPU time per request (`getrusage(RUSAGE_SELF)`, user + system,
//! over the measured interval: the server and fdr's threads; `cpu_ns_per_req` and
//! `server_cpu_ns_per_req`, the same figure since the load moved out), its user CPU time per
//! request, and the trigger snapshots written (`snapshots`).
//!
//! `MODE` as in `common.rs` (`plain`, `default`, `profile`, ...), and:
//!
//! | `MODE` | what runs |
//! |---|---|
//! | `trigger10` | the default with a 10 ms trigger on the command handler ([`HANDLER`]) |
//! | `auto` | the default with a learned trigger (3 × its p99) on the command handler |
//!
//! Trigger snapshots go to `SNAPSHOTS=DIR` when it is set, else to a scratch directory removed
//! at the end; `OUT=PATH` writes the log at the end.

#[path = "common.rs"]
#[allow(dead_code)] // Its batch `main` is not this driver's.
mod common;

use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// The server's command handler, as fdr names it: each command a connection sends is applied
/// by it (`Command::apply`, an async fn: a trigger applies to each call's whole latency).
/// `Handler::run`, which serves a whole connection, would last the run.
#[cfg(feature = "fdr")]
const HANDLER: &str = "mini_redis::cmd::Command::apply";

/// What the load asks for.
struct Load {
    seconds: f64,
    warm_up: f64,
    connections: usize,
    keys: u64,
    /// Set in the load's own process: the server to load.
    clients_of: Option<std::net::SocketAddr>,
    /// `--serial N`: N requests one after another, see [`serial`].
    serial: Option<u64>,
}

fn args() -> Result<Load, String> {
    let mut load = Load {
        seconds: 3.0,
        warm_up: 0.5,
        connections: 16,
        keys: 300,
        clients_of: None,
        serial: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| *v > 0.0)
                .ok_or_else(|| format!("{name} takes a positive number"))
        };
        match a.as_str() {
            "--seconds" => load.seconds = value("--seconds")?,
            "--warm-up" => load.warm_up = value("--warm-up")?,
            "--connections" => load.connections = value("--connections")? as usize,
            "--keys" => load.keys = value("--keys")? as u64,
            "--clients-of" => {
                let addr = args.next().and_then(|a| a.parse().ok());
                load.clients_of = Some(addr.ok_or("--clients-of takes an address")?);
            }
            "--serial" => load.serial = Some(value("--serial")? as u64),
            other => {
                return Err(format!(
                    "unknown argument {other:?}: [--seconds S] [--warm-up S] [--connections N] \
                     [--keys N] [--serial N]"
                ))
            }
        }
    }
    Ok(load)
}

/// A RESP bulk string.
fn bulk(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(format!("${}\r\n", s.len()).as_bytes());
    out.extend_from_slice(s);
    out.extend_from_slice(b"\r\n");
}

/// Reads one answer: `+OK`, a bulk string or a null; an error answer is an error.
async fn answer<R: tokio::io::AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    line: &mut Vec<u8>,
    body: &mut Vec<u8>,
) -> std::io::Result<bool> {
    line.clear();
    if r.read_until(b'\n', line).await? == 0 {
        return Ok(false);
    }
    let bad =
        |what: &str| std::io::Error::other(format!("{what}: {:?}", String::from_utf8_lossy(line)));
    match line.first() {
        Some(b'+') => Ok(true),
        Some(b'$') => {
            let n: i64 = std::str::from_utf8(&line[1..])
                .ok()
                .and_then(|s| s.trim_end().parse().ok())
                .ok_or_else(|| bad("a bad bulk length"))?;
            if n >= 0 {
                body.resize(n as usize + 2, 0);
                r.read_exact(body).await?;
            }
            Ok(true)
        }
        _ => Err(bad("an unexpected answer")),
    }
}

/// One client: requests on its own connection until `end` or `limit` of them; returns the
/// latencies of those that began after `measure_from`, in nanoseconds.
async fn client(
    addr: std::net::SocketAddr,
    index: u64,
    keys: u64,
    measure_from: Instant,
    end: Instant,
    limit: u64,
) -> std::io::Result<Vec<u64>> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let mut answers = BufReader::new(read);
    let (mut line, mut body, mut request) = (Vec::new(), Vec::new(), Vec::new());
    let mut latencies = Vec::new();
    let mut x = index.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for _ in 0..limit {
        let began = Instant::now();
        if began >= end {
            break;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = format!("user:{}", x % keys);
        request.clear();
        if x.is_multiple_of(5) {
            request.extend_from_slice(b"*3\r\n");
            bulk(&mut request, b"SET");
            bulk(&mut request, key.as_bytes());
            bulk(&mut request, format!("{:016x}{:016x}", x, !x).as_bytes());
        } else {
            request.extend_from_slice(b"*2\r\n");
            bulk(&mut request, b"GET");
            bulk(&mut request, key.as_bytes());
        }
        write.write_all(&request).await?;
        if !answer(&mut answers, &mut line, &mut body).await? {
            break;
        }
        if began >= measure_from {
            latencies.push(began.elapsed().as_nanos() as u64);
        }
    }
    Ok(latencies)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64 / 1_000.0
}

fn main() {
    let load = args().unwrap_or_else(|e| {
        eprintln!("mini_redis driver: {e}");
        std::process::exit(2);
    });
    if let Some(addr) = load.clients_of {
        return clients(addr, &load);
    }
    let mode = std::env::var("MODE").unwrap_or_else(|_| "plain".into());
    // Where trigger snapshots go, and whether it is ours to remove.
    let (scratch, ours) = match std::env::var_os("SNAPSHOTS") {
        Some(d) => (std::path::PathBuf::from(d), false),
        None => (
            std::env::temp_dir().join(format!("fdr-mini-redis-{}", std::process::id())),
            true,
        ),
    };
    #[cfg(feature = "fdr")]
    let rec = {
        let template = scratch.join("mini-redis.fdr");
        let config = match mode.as_str() {
            "trigger10" => Some(
                fdr::Config::default()
                    .trigger(HANDLER, Duration::from_millis(10))
                    .out(template),
            ),
            "auto" => Some(
                fdr::Config::default()
                    .trigger_auto(HANDLER, 3.0)
                    .out(template),
            ),
            m => common::config(m),
        };
        if config.is_some() {
            std::fs::create_dir_all(&scratch).expect("the snapshots' directory");
        }
        config.map(|c| fdr::start(c).expect("start the recorder"))
    };
    #[cfg(not(feature = "fdr"))]
    if mode != "plain" {
        eprintln!("mini_redis driver: MODE={mode} needs the annotated copy (built with fdr)");
        std::process::exit(2);
    }
    if let Some(n) = load.serial {
        serial(n, load.keys);
        #[cfg(feature = "fdr")]
        if let Some(rec) = rec {
            common::finish(rec);
        }
        return;
    }

    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("server")
        .enable_all()
        .build()
        .expect("the server's runtime");
    let listener = server
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("a port on the loopback interface");
    let addr = listener.local_addr().expect("the listener's address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = server.spawn(mini_redis::server::run(listener, async move {
        let _ = stopped.await;
    }));

    // The load, in a process of its own: it says when its clients begin, and at the end what
    // they measured.
    let mut child = std::process::Command::new(std::env::current_exe().expect("this program"))
        .args(["--clients-of", &addr.to_string()])
        .args(["--seconds", &load.seconds.to_string()])
        .args(["--warm-up", &load.warm_up.to_string()])
        .args(["--connections", &load.connections.to_string()])
        .args(["--keys", &load.keys.to_string()])
        .env_remove("FDR_OPTIONS")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the load's process");
    let mut told = std::io::BufReader::new(child.stdout.take().expect("the load's output"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut told, &mut line).expect("the load's first line");
    if line.trim() != "ready" {
        eprintln!("mini_redis driver: the load did not start: {line:?}");
        std::process::exit(1);
    }
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(load.warm_up);
    let end = measure_from + Duration::from_secs_f64(load.seconds);
    // The server process's CPU time and user CPU time over the measured interval (its workers,
    // fdr's threads, and this one, which sleeps).
    std::thread::sleep(measure_from.saturating_duration_since(Instant::now()));
    let (cpu0, user0) = (common::cpu_ns(), common::user_cpu_ns().0);
    std::thread::sleep(end.saturating_duration_since(Instant::now()));
    let (cpu, server_user) = (
        common::cpu_ns() - cpu0,
        common::user_cpu_ns().0 - user0,
    );
    line.clear();
    std::io::Read::read_to_string(&mut told, &mut line).expect("the load's figures");
    let status = child.wait().expect("the load's process");
    let measured: Vec<f64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [requests, p50, p99, p999] = measured[..] else {
        eprintln!("mini_redis driver: the load failed ({status}): {line:?}");
        std::process::exit(1);
    };
    // The clients' connections are closed: the server's handlers end, then the server.
    let _ = stop.send(());
    let result =
        server.block_on(async { tokio::time::timeout(Duration::from_secs(2), served).await });
    if let Ok(Ok(Err(e))) = result {
        eprintln!("mini_redis driver: the server failed: {e}");
        std::process::exit(1);
    }
    server.shutdown_timeout(Duration::from_millis(100));
    // The recorder's own estimate of its cost (with a budget), to set beside the measured one.
    #[allow(unused_mut)]
    let mut estimate = -1.0;
    #[cfg(feature = "fdr")]
    if let Some(rec) = rec {
        if let Some(ppm) = rec.stats().cost_estimate_ppm {
            estimate = f64::from(ppm) / 10_000.0;
        }
        common::finish(rec);
    }
    let snapshots = std::fs::read_dir(&scratch).map_or(0, |d| d.count());
    if ours {
        let _ = std::fs::remove_dir_all(&scratch);
    }

    let n = requests.max(1.0);
    println!(
        "requests {requests} rps {:.0} p50_us {p50:.1} p99_us {p99:.1} p999_us {p999:.1} \
         cpu_ns_per_req {:.0} server_cpu_ns_per_req {:.0} server_user_ns_per_req {:.0} \
         snapshots {snapshots} estimate_pct {estimate:.3}",
        requests / load.seconds,
        cpu as f64 / n,
        cpu as f64 / n,
        server_user as f64 / n,
    );
}

/// The load's process: its clients, on a runtime of this thread, against the server at `addr`;
/// prints `ready` when they begin, then the requests that began in the measured interval and
/// their latency percentiles in µs.
fn clients(addr: std::net::SocketAddr, load: &Load) {
    let clients = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the clients' runtime");
    println!("ready");
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(load.warm_up);
    let end = measure_from + Duration::from_secs_f64(load.seconds);
    let mut latencies = clients.block_on(async {
        let tasks: Vec<_> = (0..load.connections as u64)
            .map(|i| tokio::spawn(client(addr, i, load.keys, measure_from, end, u64::MAX)))
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(
                t.await
                    .expect("a client task")
                    .expect("a client's connection"),
            );
        }
        all
    });
    latencies.sort_unstable();
    println!(
        "{} {:.1} {:.1} {:.1}",
        latencies.len(),
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
        percentile(&latencies, 0.999),
    );
}

/// `--serial N`: the server and one client on this thread, N requests one after another. Each
/// request then runs the same way every time (the client's write is read at the server's next
/// poll; no other connection shares a wake-up), so the instructions a request takes can be
/// counted between two runs of different N under callgrind, which the timed runs' batching
/// makes vary by a tenth. Prints `requests N`.
fn serial(n: u64, keys: u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the runtime");
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port on the loopback interface");
        let addr = listener.local_addr().expect("the listener's address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(mini_redis::server::run(listener, async move {
            let _ = stopped.await;
        }));
        let now = Instant::now();
        let far = now + Duration::from_secs(24 * 3600);
        let done = client(addr, 0, keys, now, far, n)
            .await
            .expect("the client's connection");
        let _ = stop.send(());
        let _ = served.await;
        println!("requests {}", done.len());
    });
}
