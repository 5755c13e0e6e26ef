//! The first program to run: a small workload recorded by fdr, then its per-function table.
//!
//! ```text
//! cargo run -p fdr-examples --bin quickstart [LOG]
//! ```
//!
//! Four worker threads handle requests (parsing, a cache, a recursive computation, now and then
//! a slow call and once a panic that the worker catches), while the main thread drives an async
//! task with a ten-line executor. Everything is recorded, written to `LOG` (`quickstart.fdr` in
//! the current directory by default) and summarized with `fdr account`. The slow call has a
//! trigger (`trigger = "1ms"`): the first one that lasts longer makes the recorder write a
//! snapshot by itself, `quickstart-1.fdr` next to `LOG`. Try `fdr info` on it, `fdr stack LOG`
//! or `fdr convert LOG --format chrome -o trace.json` next.

use std::collections::HashMap;
use std::error::Error;
use std::future::Future;
use std::panic;
use std::path::PathBuf;
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

use fdr::{fdr_scope, instrument_fdr};

const WORKERS: u32 = 4;
const REQUESTS_PER_WORKER: u32 = 40;
/// The request whose handler panics; its worker catches the panic and goes on.
const BAD_REQUEST: u32 = 77;

/// A parsed request: which computation, on what input.
struct Request {
    id: u32,
    n: u32,
}

#[instrument_fdr]
fn parse(line: &str) -> Option<Request> {
    let (id, n) = line.split_once(' ')?;
    Some(Request {
        id: id.parse().ok()?,
        n: n.parse().ok()?,
    })
}

#[instrument_fdr(log_args)]
fn fib(n: u32) -> u64 {
    if n < 2 {
        u64::from(n)
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

/// A cache shared by the workers.
struct Cache {
    values: Mutex<HashMap<u32, u64>>,
}

#[instrument_fdr]
impl Cache {
    fn get(&self, n: u32) -> Option<u64> {
        self.values.lock().unwrap().get(&n).copied()
    }

    fn insert(&self, n: u32, value: u64) {
        self.values.lock().unwrap().insert(n, value);
    }
}

/// Stands for a call to a disk or a remote service. A call longer than 1 ms writes a snapshot.
#[instrument_fdr(log_args, trigger = "1ms")]
fn slow_io(millis: u64) {
    thread::sleep(Duration::from_millis(millis));
}

#[instrument_fdr]
fn handle(cache: &Cache, line: &str) -> u64 {
    let Some(request) = parse(line) else {
        return 0;
    };
    if request.id == BAD_REQUEST {
        panic!("request {} is malformed", request.id);
    }
    if request.id % 10 == 0 {
        slow_io(2);
    }
    if let Some(hit) = cache.get(request.n) {
        return hit;
    }
    let value = fib(request.n);
    cache.insert(request.n, value);
    value
}

#[instrument_fdr]
fn worker(index: u32, cache: &Cache) -> u64 {
    let mut total = 0;
    for i in 0..REQUESTS_PER_WORKER {
        let id = index * REQUESTS_PER_WORKER + i;
        let line = format!("{id} {}", 10 + id % 8);
        match panic::catch_unwind(|| handle(cache, &line)) {
            Ok(value) => total += value,
            Err(_) => eprintln!(
                "quickstart: worker {index} caught the panic of request {id} (on purpose)"
            ),
        }
    }
    total
}

/// A future that is not ready the first `n` times it is polled.
struct Pending(u32);

impl Future for Pending {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[instrument_fdr]
async fn download(chunks: u32) -> u64 {
    let mut bytes = 0;
    for chunk in 0..chunks {
        Pending(1).await;
        bytes += u64::from(chunk) * 1024;
    }
    bytes
}

/// Wakes the executor's thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// The smallest executor: poll, park until woken, poll again.
fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

/// The panic of `BAD_REQUEST` is part of the workload: report it in one line instead of the
/// default message and backtrace, and leave every other panic to the hook that was there.
fn quiet_expected_panic() {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let expected = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|m| m == &format!("request {BAD_REQUEST} is malformed"));
        if !expected {
            previous(info);
        }
    }));
}

fn main() -> Result<(), Box<dyn Error>> {
    let log = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "quickstart.fdr".into()),
    );
    quiet_expected_panic();
    // `out` names the snapshots that triggers write: quickstart-1.fdr, -2, ... next to the log.
    // Threshold 0: the example is small, so its log keeps every call (the default, 5 µs, keeps the
    // calls that can matter to a latency and culls functions whose calls never last that long).
    let recorder = fdr::start(
        fdr::Config::default()
            .threshold(std::time::Duration::ZERO)
            .out(&log),
    )?;

    let cache = Arc::new(Cache {
        values: Mutex::new(HashMap::new()),
    });
    let workers: Vec<_> = (0..WORKERS)
        .map(|index| {
            let cache = Arc::clone(&cache);
            thread::Builder::new()
                .name(format!("worker-{index}"))
                .spawn(move || worker(index, &cache))
                .expect("spawn a worker")
        })
        .collect();
    let downloaded = block_on(download(5));
    let total: u64 = {
        fdr_scope!("join_workers");
        workers
            .into_iter()
            .map(|w| w.join().expect("workers catch their panics"))
            .sum()
    };

    println!(
        "quickstart: handled {} requests (total {total}), downloaded {downloaded} bytes",
        WORKERS * REQUESTS_PER_WORKER
    );
    if !fdr::ENABLED {
        println!(
            "quickstart: built without fdr's `enable` feature, so nothing was recorded; run \
             `cargo run --release -p fdr-examples --bin quickstart` (its `fdr` feature is on by default)"
        );
        return Ok(());
    }

    // The trigger's snapshot is written by fdr's background writer; give it a moment.
    let snapshot = log.with_file_name(format!(
        "{}-1.fdr",
        log.file_stem().unwrap_or_default().to_string_lossy()
    ));
    for _ in 0..200 {
        if snapshot.exists() {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    recorder.finish(&log)?;
    let shown = std::fs::canonicalize(&log).unwrap_or_else(|_| log.clone());
    println!("quickstart: log written to {}", shown.display());
    if snapshot.exists() {
        println!(
            "quickstart: a slow_io call passed its 1 ms trigger; the recorder wrote {} by itself",
            snapshot.display()
        );
    }
    println!();

    let mut stdout = std::io::stdout();
    fdr_cli::run(
        &["account".into(), log.to_string_lossy().into_owned()],
        &mut stdout,
    )?;
    println!();
    println!(
        "next: `cargo run --release -p fdr-cli -- stack {}` shows the call tree",
        log.display()
    );
    Ok(())
}
