//! A key-value service written the way small services are: a tokio runtime with two worker
//! threads, a task per connection, a line protocol, parsing and validation, a store behind a
//! lock, a response; eight functions, every one annotated with `#[instrument_fdr]` (two of them
//! async). Beside it, in a process of its own (this program again, with `--clients-of ADDR`),
//! its load: client tasks, each on its own connection, either as fast as answers come
//! (`--concurrency`, a closed loop) or at a fixed rate whatever the answers do (`--rate`, an open
//! loop, each request's latency counted from when it was due when the service made it late, so
//! a stall delays every request behind it in the figures too). The load is a process apart so
//! that the service's process is what a deployed one's is: a recorder's budget, a share of its
//! process's CPU time, is a share of the service's, not of a process that carries its own load.
//!
//! ```sh
//! kv_service --seconds 3 --concurrency 16          # closed loop
//! kv_service --seconds 3 --concurrency 16 --rate 20000
//! ```
//!
//! It prints one line: requests per second, the latency percentiles in microseconds (measured by
//! the clients), and the CPU time the service's threads spent per request over the measured
//! interval (`server_cpu_ns_per_req`: the server's workers and fdr's writer; on Linux, from each
//! thread's `schedstat`, 0 elsewhere), which moves less with the host than requests per second
//! do; then the process's CPU time and user CPU time per request (`getrusage`). Built
//! with the `fdr` feature, it records as `FDR_OPTIONS` says (nothing when it is unset); built
//! without, the annotations compile to nothing. Built with the `dial9` feature (and without
//! `fdr`), the server's runtime is attached to a dial9 recorder writing into 8 MiB of memory (its
//! sealed segments counted, the count printed on stderr at exit) and every server task is
//! spawned through dial9, which records each poll and wake-up. `compare` runs the builds in
//! every configuration, round by round.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fdr::instrument_fdr;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Keys the clients use.
const KEYS: u64 = 1_000;

/// What a request asks.
enum Request<'a> {
    Get(&'a str),
    Set(&'a str, &'a str),
    Del(&'a str),
}

/// What the service answers.
enum Response {
    Value(String),
    Done,
    Missing,
    Error(&'static str),
}

/// The store: a map behind one lock.
struct Store {
    map: Mutex<HashMap<String, String>>,
}

impl Store {
    #[instrument_fdr]
    fn get(&self, key: &str) -> Option<String> {
        self.map.lock().unwrap().get(key).cloned()
    }

    #[instrument_fdr]
    fn set(&self, key: &str, value: &str) -> bool {
        self.map
            .lock()
            .unwrap()
            .insert(key.to_owned(), value.to_owned())
            .is_none()
    }
}

#[instrument_fdr]
fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 64
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b':')
}

#[instrument_fdr]
fn parse(line: &str) -> Result<Request<'_>, &'static str> {
    let mut words = line.split_ascii_whitespace();
    let request = match (words.next(), words.next(), words.next()) {
        (Some("GET"), Some(k), None) => Request::Get(k),
        (Some("SET"), Some(k), Some(v)) => Request::Set(k, v),
        (Some("DEL"), Some(k), None) => Request::Del(k),
        _ => return Err("unknown request"),
    };
    let key = match request {
        Request::Get(k) | Request::Set(k, _) | Request::Del(k) => k,
    };
    if valid_key(key) {
        Ok(request)
    } else {
        Err("bad key")
    }
}

#[instrument_fdr]
fn render(response: Response, out: &mut Vec<u8>) {
    match response {
        Response::Value(v) => {
            out.extend_from_slice(b"VALUE ");
            out.extend_from_slice(v.as_bytes());
        }
        Response::Done => out.extend_from_slice(b"OK"),
        Response::Missing => out.extend_from_slice(b"NOTFOUND"),
        Response::Error(e) => {
            out.extend_from_slice(b"ERR ");
            out.extend_from_slice(e.as_bytes());
        }
    }
    out.push(b'\n');
}

/// The request handler: a line in, its answer appended to `out`.
#[instrument_fdr]
fn handle_line(line: &str, store: &Store, out: &mut Vec<u8>) {
    let response = match parse(line) {
        Ok(Request::Get(k)) => store.get(k).map_or(Response::Missing, Response::Value),
        Ok(Request::Set(k, v)) => {
            store.set(k, v);
            Response::Done
        }
        Ok(Request::Del(k)) => match store.map.lock().unwrap().remove(k) {
            Some(_) => Response::Done,
            None => Response::Missing,
        },
        Err(e) => Response::Error(e),
    };
    render(response, out);
}

/// One connection: lines in, answers out, until the client closes it.
#[instrument_fdr]
async fn connection(stream: TcpStream, store: Arc<Store>) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    let mut line = String::new();
    let mut out = Vec::with_capacity(128);
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        out.clear();
        handle_line(line.trim_end(), &store, &mut out);
        write.write_all(&out).await?;
    }
}

/// Accepts connections, a task each.
#[instrument_fdr]
async fn serve(listener: TcpListener, store: Arc<Store>) {
    while let Ok((stream, _)) = listener.accept().await {
        spawn(connection(stream, Arc::clone(&store)));
    }
}

/// Spawns a server task: through dial9 in the `dial9` build, so that its polls are recorded.
fn spawn<F>(task: F)
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    #[cfg(feature = "dial9")]
    dial9::spawn(task);
    #[cfg(not(feature = "dial9"))]
    tokio::spawn(task);
}

/// The server's runtime, with two worker threads; in the `dial9` build, attached to a dial9
/// recorder.
struct Server {
    runtime: tokio::runtime::Runtime,
    #[cfg(feature = "dial9")]
    recorder: dial9::Recorder,
}

impl Server {
    fn new() -> Server {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(2).thread_name("server").enable_all();
        #[cfg(not(feature = "dial9"))]
        return Server {
            runtime: builder.build().expect("the server's runtime"),
        };
        #[cfg(feature = "dial9")]
        {
            use dial9::{Dial9HandleTokioExt, RecorderPipelineExt};
            let writer = dial9::MemoryBuffer::new(8 << 20).expect("dial9's buffer");
            let recorder = dial9::recorder(writer)
                .with_custom_pipeline(|p| p.pipe(dial9_count::CountSegments))
                .build();
            let runtime = recorder
                .handle()
                .attach_tokio_runtime(builder, dial9::TokioAttachOptions::default())
                .expect("the server's runtime, attached to dial9");
            Server { runtime, recorder }
        }
    }

    /// Spawns the first task from outside the runtime.
    fn spawn_root<F>(&self, task: F)
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        #[cfg(feature = "dial9")]
        dial9::spawn_in(self.runtime.handle(), task);
        #[cfg(not(feature = "dial9"))]
        self.runtime.spawn(task);
    }

    fn shutdown(self) {
        self.runtime.shutdown_timeout(Duration::from_millis(100));
        #[cfg(feature = "dial9")]
        {
            self.recorder.graceful_shutdown(Duration::from_secs(1));
            eprintln!(
                "kv_service: dial9 sealed {} bytes of trace",
                dial9_count::BYTES.load(std::sync::atomic::Ordering::Relaxed)
            );
        }
    }
}

/// Counts what dial9 recorded: a pipeline stage that adds up the bytes of each sealed segment
/// and passes it on.
#[cfg(feature = "dial9")]
mod dial9_count {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicU64, Ordering};

    use dial9::core::pipeline::{ProcessError, SegmentData, SegmentProcessor};

    pub static BYTES: AtomicU64 = AtomicU64::new(0);

    #[derive(Debug)]
    pub struct CountSegments;

    impl SegmentProcessor for CountSegments {
        fn name(&self) -> &'static str {
            "count"
        }

        fn process(
            &mut self,
            data: SegmentData,
        ) -> Pin<Box<dyn Future<Output = Result<SegmentData, ProcessError>> + Send + '_>> {
            BYTES.fetch_add(data.payload().len() as u64, Ordering::Relaxed);
            Box::pin(async move { Ok(data) })
        }
    }
}

/// What the load asks for.
struct Load {
    seconds: f64,
    warm_up: f64,
    concurrency: usize,
    /// Requests per second over all clients (open loop), or `None` (closed loop).
    rate: Option<f64>,
    /// Set in the load's own process: the service to load.
    clients_of: Option<std::net::SocketAddr>,
}

fn args() -> Result<Load, String> {
    let mut load = Load {
        seconds: 3.0,
        warm_up: 0.5,
        concurrency: 16,
        rate: None,
        clients_of: None,
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
            "--concurrency" => load.concurrency = value("--concurrency")? as usize,
            "--rate" => load.rate = Some(value("--rate")?),
            "--clients-of" => {
                let addr = args.next().and_then(|a| a.parse().ok());
                load.clients_of = Some(addr.ok_or("--clients-of takes an address")?);
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}: kv_service [--seconds S] [--warm-up S] \
                     [--concurrency N] [--rate REQUESTS_PER_SECOND]"
                ))
            }
        }
    }
    Ok(load)
}

/// One client: requests on its own connection until `end`; returns the latencies of those
/// that began after `measure_from`, in nanoseconds.
async fn client(
    addr: std::net::SocketAddr,
    index: u64,
    spread: u32,
    interval: Option<Duration>,
    measure_from: Instant,
    end: Instant,
) -> std::io::Result<Vec<u64>> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let mut answers = BufReader::new(read);
    let mut answer = String::new();
    let mut latencies = Vec::new();
    let mut x = index.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    // The clients' requests are spread over the interval, not sent together.
    let mut due = Instant::now() + interval.map_or(Duration::ZERO, |i| i * (index as u32) / spread);
    let mut answered = due;
    let mut request = String::new();
    while due < end {
        // When the request began, for its latency. In the open loop, when it is sent, moved
        // back by however late the answer to the one before came after this one was due (the
        // service made it late): not by the rest of the wait, which is the timer's (tokio's
        // timers fire on millisecond ticks), not the service's.
        let began = if interval.is_some() {
            tokio::time::sleep_until(due.into()).await;
            Instant::now() - answered.saturating_duration_since(due)
        } else {
            due = Instant::now();
            due
        };
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = x % KEYS;
        request.clear();
        if x % 5 == 0 {
            request.push_str(&format!("SET user:{key} {:016x}{:016x}\n", x, !x));
        } else {
            request.push_str(&format!("GET user:{key}\n"));
        }
        write.write_all(request.as_bytes()).await?;
        answer.clear();
        if answers.read_line(&mut answer).await? == 0 {
            break;
        }
        answered = Instant::now();
        if due >= measure_from {
            latencies.push((answered - began).as_nanos() as u64);
        }
        if let Some(every) = interval {
            due += every;
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

/// CPU time, in nanoseconds, of every live thread of the process but the calling one: the first
/// field of each thread's `schedstat` (time on a CPU). 0 where there is no such file.
fn others_cpu_ns() -> u64 {
    let on_cpu = |path: &std::path::Path| -> u64 {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    let all: u64 = tasks
        .flatten()
        .map(|t| on_cpu(&t.path().join("schedstat")))
        .sum();
    all.saturating_sub(on_cpu(std::path::Path::new("/proc/thread-self/schedstat")))
}

/// The process's CPU time and user CPU time, from `getrusage` (microseconds); 0 elsewhere than
/// Linux.
mod rusage {
    #[cfg(target_os = "linux")]
    fn times(who: libc::c_int) -> (u64, u64) {
        // SAFETY: getrusage fills the zeroed struct it is given, and reads nothing else.
        let u = unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            libc::getrusage(who, &mut u);
            u
        };
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        (ns(u.ru_utime), ns(u.ru_stime))
    }

    /// The process's CPU time so far, user and system, in nanoseconds.
    pub fn process_ns() -> u64 {
        #[cfg(target_os = "linux")]
        {
            let (u, s) = times(libc::RUSAGE_SELF);
            u + s
        }
        #[cfg(not(target_os = "linux"))]
        0
    }

    /// The process's user CPU time so far, in nanoseconds.
    pub fn process_user_ns() -> u64 {
        #[cfg(target_os = "linux")]
        {
            times(libc::RUSAGE_SELF).0
        }
        #[cfg(not(target_os = "linux"))]
        0
    }
}

fn main() {
    let load = match args() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("kv_service: {e}");
            std::process::exit(2);
        }
    };
    if let Some(addr) = load.clients_of {
        return clients(addr, &load);
    }
    let server = Server::new();
    let store = Arc::new(Store {
        map: Mutex::new(HashMap::new()),
    });
    let listener = server
        .runtime
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("a port on the loopback interface");
    let addr = listener.local_addr().expect("the listener's address");
    server.spawn_root(serve(listener, store));

    // The load, in a process of its own: it says when its clients begin, and at the end what
    // they measured.
    let mut child = std::process::Command::new(std::env::current_exe().expect("this program"))
        .args(["--clients-of", &addr.to_string()])
        .args(["--seconds", &load.seconds.to_string()])
        .args(["--warm-up", &load.warm_up.to_string()])
        .args(["--concurrency", &load.concurrency.to_string()])
        .args(
            load.rate
                .map(|r| ["--rate".to_string(), r.to_string()])
                .into_iter()
                .flatten(),
        )
        .env_remove("FDR_OPTIONS")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the load's process");
    let mut told = std::io::BufReader::new(child.stdout.take().expect("the load's output"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut told, &mut line).expect("the load's first line");
    if line.trim() != "ready" {
        eprintln!("kv_service: the load did not start: {line:?}");
        std::process::exit(1);
    }
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(load.warm_up);
    let end = measure_from + Duration::from_secs_f64(load.seconds);
    // The service's threads' CPU time (all but this one, which sleeps), the process's, and its
    // user CPU time (what a recorder's own work shows in), over the measured interval.
    std::thread::sleep(measure_from.saturating_duration_since(Instant::now()));
    let before = others_cpu_ns();
    let (p, u) = (rusage::process_ns(), rusage::process_user_ns());
    std::thread::sleep(end.saturating_duration_since(Instant::now()));
    let (server_cpu, process_cpu, server_user) = (
        others_cpu_ns().saturating_sub(before),
        rusage::process_ns().saturating_sub(p),
        rusage::process_user_ns().saturating_sub(u),
    );
    line.clear();
    std::io::Read::read_to_string(&mut told, &mut line).expect("the load's figures");
    let status = child.wait().expect("the load's process");
    let measured: Vec<f64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [requests, p50, p99, p999] = measured[..] else {
        eprintln!("kv_service: the load failed ({status}): {line:?}");
        std::process::exit(1);
    };
    // The recorder's own estimate of its cost (with a budget, the default), in percent of the
    // process's CPU time: -1 without one.
    let estimate = fdr::recorder()
        .and_then(|r| r.stats().cost_estimate_ppm)
        .map_or(-1.0, |ppm| f64::from(ppm) / 10_000.0);
    let n = requests.max(1.0);
    println!(
        "requests {requests} rps {:.0} p50_us {p50:.1} p99_us {p99:.1} p999_us {p999:.1} \
         server_cpu_ns_per_req {:.0} estimate_pct {estimate:.3} cpu_ns_per_req {:.0} \
         server_user_ns_per_req {:.0}",
        requests / load.seconds,
        server_cpu as f64 / n,
        process_cpu as f64 / n,
        server_user as f64 / n,
    );
    server.shutdown();
}

/// The load's process: its clients, on a runtime of this thread, against the service at
/// `addr`; prints `ready` when they begin, then the requests that began in the measured interval
/// and their latency percentiles in µs.
fn clients(addr: std::net::SocketAddr, load: &Load) {
    let clients = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the clients' runtime");
    println!("ready");
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(load.warm_up);
    let end = measure_from + Duration::from_secs_f64(load.seconds);
    // In the open loop each connection sends a request every 4 ms at least, so that tokio's
    // millisecond timer ticks are small beside the interval (see `client`).
    let concurrency = match load.rate {
        Some(r) => load.concurrency.max((r * 0.004).ceil() as usize),
        None => load.concurrency,
    };
    let interval = load
        .rate
        .map(|r| Duration::from_secs_f64(concurrency as f64 / r));
    let mut latencies = clients.block_on(async {
        let tasks: Vec<_> = (0..concurrency as u64)
            .map(|i| {
                tokio::spawn(client(
                    addr,
                    i,
                    concurrency as u32,
                    interval,
                    measure_from,
                    end,
                ))
            })
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
