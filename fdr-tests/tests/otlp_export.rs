//! The recorder sends the windows it writes to an OpenTelemetry collector (`otlp_endpoint`),
//! from a thread of its own: what a collector receives, decoded by a receiver we did not write
//! (the official OpenTelemetry classes, PyPI `opentelemetry-proto`), is exactly the window `fdr
//! calls` shows; a hang's window has its open call; a window inside `fdr::join_trace` joins that
//! trace; and a collector that is down, busy (503 + Retry-After), hung or cutting connections
//! costs the program nothing but the windows it drops, counted in `stats()`, while nothing is
//! lost once it comes back within the retry budget.
//!
//! Needs python3 with opentelemetry-proto (`scripts/test` installs it).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fdr_otlp::proto::{any_value, ExportTraceServiceRequest, Span};
use fdr_runtime::{testing, Config};
use fdr_testkit::collector::{Answer, OtlpCollector, Setup};
use fdr_testkit::logs::{logs_in, scratch};
use fdr_testkit::otlp::{otlp_check, spans_of_calls, spans_of_otlp};
use fdr_testkit::recording::every_call;
use prost::Message;

/// Waits (at most 30 s) until `done`.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn decode(body: &[u8]) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest::decode(body).expect("a valid ExportTraceServiceRequest")
}

fn spans(r: &ExportTraceServiceRequest) -> Vec<&Span> {
    r.resource_spans
        .iter()
        .flat_map(|rs| &rs.scope_spans)
        .flat_map(|ss| &ss.spans)
        .collect()
}

fn attr<'a>(s: &'a Span, key: &str) -> Option<&'a any_value::Value> {
    s.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

/// `fdr calls --format json` of the log at `path`, every call at the top level.
fn calls_json(path: &Path) -> serde_json::Value {
    let args: Vec<String> = [
        "calls",
        path.to_str().unwrap(),
        "--format",
        "json",
        "--top",
        "100000",
        "--depth",
        "1000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut out = Vec::new();
    fdr_cli::run(&args, &mut out).unwrap_or_else(|e| panic!("fdr calls {}: {e}", path.display()));
    serde_json::from_slice(&out).unwrap()
}

/// `fdr export LOG --otlp-file` (into `dir`), decoded by the official classes.
fn exported(log: &Path, dir: &Path) -> serde_json::Value {
    let out = dir.join("exported.pb");
    let args: Vec<String> = [
        "export",
        log.to_str().unwrap(),
        "--otlp-file",
        out.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    fdr_cli::run(&args, &mut Vec::new())
        .unwrap_or_else(|e| panic!("fdr export {}: {e}", log.display()));
    otlp_check(std::slice::from_ref(&out))
}

/// The window start's Unix time, as the exporter computes it from the log.
fn origin_unix_ns(path: &Path) -> u64 {
    let bytes = std::fs::read(path).unwrap();
    fdr_format::window::calls(&bytes[..])
        .unwrap()
        .origin_unix_ns
        .unwrap()
}

/// A config that records every call and sends to `c`.
fn sending(c: &OtlpCollector) -> Config {
    every_call()
        .buffer_count(64)
        .otlp_endpoint(&c.url)
        .service_name("otlp-test")
}

#[fdr::instrument_fdr(log_args(n))]
fn work(n: u64) -> u64 {
    (0..n).map(leaf).sum()
}

#[fdr::instrument_fdr]
fn leaf(i: u64) -> u64 {
    std::hint::black_box(i * 2)
}

#[test]
fn a_snapshot_reaches_the_collector_as_the_calls_of_its_window() {
    let _turn = testing::exclusive();
    let dir = scratch("otlp-snapshot");
    let c = OtlpCollector::start(&[]);
    let rec = fdr_runtime::start(sending(&c)).unwrap();
    let worker = std::thread::Builder::new()
        .name("worker".into())
        .spawn(|| work(3))
        .unwrap();
    assert_eq!(worker.join().unwrap(), 6);
    work(2);
    let path = dir.join("snap.fdr");
    rec.write_snapshot(&path).unwrap();
    wait_until("the window to be sent", || rec.stats().windows_sent == 1);
    rec.finish_to(&mut std::io::sink()).unwrap();
    let stats = rec.stats();
    assert_eq!((stats.windows_sent, stats.windows_dropped), (1, 0));
    let bodies = c.accepted();
    assert_eq!(
        bodies.len(),
        1,
        "one request: the window has fewer spans than the split"
    );
    let body = dir.join("body.pb");
    std::fs::write(&body, &bodies[0]).unwrap();
    // The official decoder reads what `fdr calls` lists, exactly.
    let v = otlp_check(std::slice::from_ref(&body));
    let got = spans_of_otlp(&v);
    let want = spans_of_calls(&calls_json(&path), origin_unix_ns(&path));
    assert_eq!(got, want);
    let names = |n: &str| got.iter().filter(|s| s.name == n).count();
    assert_eq!(
        (names("otlp_export::work"), names("otlp_export::leaf")),
        (2, 5)
    );
    assert!(got
        .iter()
        .any(|s| s.name == "otlp_export::work" && s.args == [("n".to_string(), 3)]));
    let r = v["resource"].as_object().unwrap();
    assert_eq!(r["service.name"], "otlp-test");
    assert_eq!(r["process.pid"], i64::from(std::process::id()));
    assert_eq!(r["telemetry.sdk.name"], "fdr");
    let thread_names: Vec<_> = v["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["attributes"]["thread.name"].as_str())
        .collect();
    assert!(thread_names.contains(&"worker"), "{thread_names:?}");
    std::fs::remove_dir_all(dir).ok();
}

#[fdr::instrument_fdr]
fn stuck(until: &AtomicBool) {
    while !until.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[fdr::instrument_fdr]
fn handle(traceparent: &str, until: &AtomicBool) {
    let _trace = fdr::join_trace(traceparent);
    stuck(until);
}

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A hang's window (the trigger fires while the call still runs) sent instead of written: the
/// open call is there with `fdr.open = true` and the window's reason, and as it ran inside
/// `join_trace`, every span is in that trace and the roots hang under its span.
#[test]
fn a_hang_is_sent_with_its_open_call_inside_the_request_trace() {
    let _turn = testing::exclusive();
    let dir = scratch("otlp-hang");
    let c = OtlpCollector::start(&[]);
    let rec = fdr_runtime::start(
        sending(&c)
            .out(dir.join("hang.fdr"))
            .otlp_only(true)
            .trigger("otlp_export::stuck", Duration::from_millis(10)),
    )
    .unwrap();
    let release = Arc::new(AtomicBool::new(false));
    let r2 = release.clone();
    let t = std::thread::spawn(move || handle(TRACEPARENT, &r2));
    wait_until("the hang's window", || rec.stats().windows_sent == 1);
    release.store(true, Ordering::SeqCst);
    t.join().unwrap();
    rec.finish_to(&mut std::io::sink()).unwrap();
    // Sent instead of written: no snapshot file.
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(files.is_empty(), "{files:?}");
    let bodies = c.accepted();
    assert_eq!(bodies.len(), 1);
    let r = decode(&bodies[0]);
    let all = spans(&r);
    let stuck = all
        .iter()
        .find(|s| s.name == "otlp_export::stuck")
        .expect("the hung call");
    assert_eq!(
        attr(stuck, "fdr.open"),
        Some(&any_value::Value::BoolValue(true))
    );
    let ran = stuck.end_time_unix_nano - stuck.start_time_unix_nano;
    assert!(
        ran >= 20_000_000,
        "open for at least twice the limit: {ran} ns"
    );
    let marker = all
        .iter()
        .find(|s| s.name == "fdr::join_trace")
        .expect("the marker call");
    assert_eq!(stuck.parent_span_id, marker.span_id);
    let trace = fdr_otlp::spans::TraceParent::parse(TRACEPARENT).unwrap();
    for s in &all {
        assert_eq!(s.trace_id, trace.trace_id, "{}", s.name);
        if s.parent_span_id == trace.parent_id {
            assert_eq!(
                attr(s, "fdr.reason"),
                Some(&any_value::Value::StringValue("still running".into()))
            );
            assert_eq!(
                attr(s, "fdr.trigger.function"),
                Some(&any_value::Value::StringValue("otlp_export::stuck".into()))
            );
        }
    }
    let handle = all
        .iter()
        .find(|s| s.name == "otlp_export::handle")
        .expect("the request's call");
    assert_eq!(
        handle.parent_span_id, trace.parent_id,
        "a root under the request's span"
    );
    assert_eq!(marker.parent_span_id, handle.span_id);
    std::fs::remove_dir_all(dir).ok();
}

/// Threads that record until dropped, each call's duration kept: the longest tells whether a
/// recording thread ever waited on the exporter.
struct Busy {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<(u64, Duration)>>,
}

impl Busy {
    /// Returns once every thread has made a call: on a loaded machine a thread may not run
    /// for a while, and a test that stops it early must still see it record.
    fn start(n: usize) -> Busy {
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(std::sync::Barrier::new(n + 1));
        let threads = (0..n)
            .map(|_| {
                let (stop, started) = (stop.clone(), started.clone());
                std::thread::spawn(move || {
                    let (mut calls, mut longest) = (0, Duration::ZERO);
                    loop {
                        let t0 = Instant::now();
                        leaf(calls);
                        longest = longest.max(t0.elapsed());
                        calls += 1;
                        if calls == 1 {
                            started.wait();
                        }
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                    }
                    (calls, longest)
                })
            })
            .collect();
        started.wait();
        Busy { stop, threads }
    }

    /// Calls made and the longest.
    fn stop(self) -> (u64, Duration) {
        self.stop.store(true, Ordering::Relaxed);
        self.threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .fold((0, Duration::ZERO), |a, b| (a.0 + b.0, a.1.max(b.1)))
    }
}

/// A hung collector holds the sender; the queue keeps the newest windows (the oldest dropped,
/// counted), recording threads go on, and when the collector answers, every window still held
/// is sent: nothing else is lost.
#[test]
fn a_hung_collector_costs_only_the_windows_the_queue_cannot_hold() {
    let _turn = testing::exclusive();
    let c = OtlpCollector::start(&[Answer::Hang]);
    let rec = fdr_runtime::start(sending(&c).otlp_queue(3).buffer_count(16)).unwrap();
    let busy = Busy::start(2);
    work(1); // no window is empty (an empty one needs no request)
    rec.snapshot(&mut std::io::sink()).unwrap();
    wait_until("the first window to be on the wire", || {
        c.connections.load(Ordering::SeqCst) == 1
    });
    for _ in 0..20 {
        rec.snapshot(&mut std::io::sink()).unwrap();
    }
    // 21 windows: one held by the hung request, 3 queued, 17 dropped, all while threads record.
    assert_eq!(rec.stats().windows_dropped, 17);
    assert_eq!(rec.stats().windows_sent, 0);
    let (calls, longest) = busy.stop();
    c.release();
    wait_until("the held windows to be sent", || {
        rec.stats().windows_sent == 4
    });
    rec.finish_to(&mut std::io::sink()).unwrap();
    let s = rec.stats();
    assert_eq!((s.windows_sent, s.windows_dropped), (4, 17));
    // A window of threads recording every call is split (more than 10,000 spans): count the
    // windows by trace.
    let mut traces: Vec<Vec<u8>> = c
        .accepted()
        .iter()
        .map(|b| {
            spans(&decode(b))
                .first()
                .expect("no empty request")
                .trace_id
                .clone()
        })
        .collect();
    traces.dedup();
    assert_eq!(traces.len(), 4);
    println!("{calls} calls while the collector hung; the longest took {longest:?}");
}

/// 503 with Retry-After, a request cut mid-way, a request that hangs past the timeout: each is
/// retried, and the window arrives once, whole.
#[test]
fn busy_cut_and_hung_requests_are_retried_until_the_window_arrives() {
    let _turn = testing::exclusive();
    for script in [
        &[Answer::Busy][..],
        &[Answer::Cut, Answer::Cut],
        &[Answer::Hang],
    ] {
        let c = OtlpCollector::start(script);
        let rec = fdr_runtime::start(
            sending(&c)
                .otlp_timeout(Duration::from_millis(300))
                .otlp_retry_for(Duration::from_secs(20)),
        )
        .unwrap();
        work(4);
        let mut log = Vec::new();
        rec.snapshot(&mut log).unwrap();
        wait_until("the window to be sent", || rec.stats().windows_sent == 1);
        rec.finish_to(&mut std::io::sink()).unwrap();
        assert_eq!(rec.stats().windows_dropped, 0, "{script:?}");
        assert_eq!(
            c.requests().len(),
            script.len() + 1,
            "{script:?}: one attempt per failure, then the one that succeeds"
        );
        let bodies = c.accepted();
        assert_eq!(bodies.len(), 1, "{script:?}");
        // What arrived is the snapshot the program got.
        let w = fdr_otlp::convert::window(
            &log,
            &fdr_otlp::convert::About {
                service_name: "otlp-test".into(),
                host_name: fdr_otlp::spans::local_host_name().unwrap_or_default(),
                ..Default::default()
            },
            &Default::default(),
        )
        .unwrap();
        let want = fdr_otlp::spans::requests(&w, 10_000);
        assert_eq!(decode(&bodies[0]), want[0], "{script:?}");
        c.release();
    }
}

/// A collector that is not there: each window is tried within its budget, then dropped and
/// counted; the program goes on.
#[test]
fn a_collector_that_is_down_drops_windows_and_counts_them() {
    let _turn = testing::exclusive();
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let rec = fdr_runtime::start(
        every_call()
            .buffer_count(16)
            .otlp_endpoint(format!("http://127.0.0.1:{port}"))
            .otlp_timeout(Duration::from_millis(200))
            .otlp_retry_for(Duration::from_millis(500)),
    )
    .unwrap();
    let busy = Busy::start(1);
    work(1); // no window is empty (an empty one needs no request)
    for _ in 0..3 {
        rec.snapshot(&mut std::io::sink()).unwrap();
    }
    wait_until("the windows to be given up", || {
        rec.stats().windows_dropped == 3
    });
    let (calls, _) = busy.stop();
    assert!(calls > 0);
    rec.finish_to(&mut std::io::sink()).unwrap();
    assert_eq!(rec.stats().windows_sent, 0);
}

/// Finishing while windows wait for a hung collector, threads recording and snapshots racing
/// it, in both modes: `finish` gives the windows at most `OTLP_FLUSH`, then counts them as
/// dropped; every window is either sent or dropped.
#[test]
fn finish_waits_a_bounded_time_for_queued_windows() {
    let _turn = testing::exclusive();
    for round in 0..4 {
        // Both modes: a ring, and a pool that fills and then drops records.
        let mode = [fdr_runtime::Mode::Ring, fdr_runtime::Mode::Fill][round % 2];
        let c = OtlpCollector::start(&[Answer::Hang; 8]);
        let rec =
            fdr_runtime::start(sending(&c).otlp_queue(4).buffer_count(16).mode(mode)).unwrap();
        let busy = Busy::start(2);
        work(1);
        for _ in 0..5 {
            rec.snapshot(&mut std::io::sink()).unwrap();
        }
        let finisher = {
            let rec = rec.clone();
            std::thread::spawn(move || rec.finish_to(&mut std::io::sink()))
        };
        // Snapshots racing the finish: each either makes a window or finds the recording ended.
        let mut made = 5;
        for _ in 0..50 {
            if rec.snapshot(&mut std::io::sink()).is_ok() {
                made += 1;
            }
        }
        finisher.join().unwrap().unwrap();
        busy.stop();
        let s = rec.stats();
        // The request on the wire is given up when its flush time is over (counted then).
        c.release();
        wait_until("every window to be accounted for", || {
            let s = rec.stats();
            s.windows_sent + s.windows_dropped == made
        });
        assert!(s.windows_sent <= 1, "round {round}: {s:?}");
    }
}

#[test]
fn bad_otlp_settings_are_refused_with_what_to_do() {
    // A start that another test's recording refused would say `AlreadyRunning` instead.
    let _turn = testing::exclusive();
    let e = fdr_runtime::start(Config::default().otlp_endpoint("ftp://collector:4318"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("otlp_endpoint") && e.contains("not an http:// or https:// URL"),
        "{e}"
    );
    // A CA that cannot be read stops the start, naming it.
    let e = fdr_runtime::start(
        Config::default()
            .otlp_endpoint("https://collector:4318")
            .otlp_ca("/nonexistent/ca.pem"),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.starts_with("fdr: bad option `otlp_ca`: cannot read the CA file /nonexistent/ca.pem"),
        "{e}"
    );
    // Bad header syntax names the item, never a value.
    for (opts, says) in [
        (
            "otlp_headers=x-api-key=hunter2,hunter3",
            "item 2 has no `=`",
        ),
        (
            "otlp_headers=\"x api key=hunter2\"",
            "`x api key` is not a valid header name",
        ),
        (
            "otlp_headers=x-api-key=hunter2 hunter3",
            "a header value with spaces goes in quotes",
        ),
    ] {
        let e = Config::from_options(&format!("otlp_endpoint=http://h:4318 {opts}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`otlp_headers`") && e.contains(says),
            "{opts}: {e}"
        );
        assert!(!e.contains("hunter"), "{opts}: {e}");
    }
    let c = Config::from_options("otlp_endpoint=env otlp_headers=x-api-key=hunter2").unwrap();
    assert!(!format!("{c:?}").contains("hunter2"));
    let e = Config::from_options("otlp_only=on")
        .unwrap_err()
        .to_string();
    assert!(e.contains("otlp_endpoint"), "{e}");
    let e = Config::from_options("otlp_endpoint=http://h:4318 mode=profile")
        .unwrap_err()
        .to_string();
    assert!(e.contains("profile mode"), "{e}");
    let e = Config::from_options("otlp_endpoint=http://h:4318 otlp_queue=0")
        .unwrap_err()
        .to_string();
    assert!(e.contains("otlp_queue"), "{e}");
    let c = Config::from_options(
        "otlp_endpoint=http://h:4318 service_name=api otlp_timeout=2s otlp_retry_for=0s \
         otlp_max_spans=5 otlp_queue=2",
    )
    .unwrap();
    assert_eq!(c.get_otlp_endpoint(), Some("http://h:4318"));
    assert_eq!(c.get_service_name(), Some("api"));
    assert_eq!(c.get_otlp_timeout(), Some(Duration::from_secs(2)));
    assert_eq!(c.get_otlp_retry_for(), Duration::ZERO);
    assert_eq!((c.get_otlp_max_spans(), c.get_otlp_queue()), (5, 2));
}

/// A window bigger than `otlp_max_spans` goes in several requests that make it whole.
#[test]
fn a_big_window_is_split_into_requests() {
    let _turn = testing::exclusive();
    let c = OtlpCollector::start(&[]);
    let rec = fdr_runtime::start(sending(&c).otlp_max_spans(4)).unwrap();
    work(9);
    rec.snapshot(&mut std::io::sink()).unwrap();
    wait_until("the window to be sent", || rec.stats().windows_sent == 1);
    rec.finish_to(&mut std::io::sink()).unwrap();
    let bodies = c.accepted();
    let per: Vec<usize> = bodies.iter().map(|b| spans(&decode(b)).len()).collect();
    assert_eq!(per, [4, 4, 2], "work and its 9 leaves, 4 at a time");
}

#[fdr::instrument_fdr]
fn request(traceparent: &str) {
    let _trace = fdr::join_trace(traceparent);
    slow_step();
}

#[fdr::instrument_fdr]
fn slow_step() {
    std::thread::sleep(Duration::from_millis(30));
}

/// A slow call's window, written and sent: the collector gets the calls `fdr calls` lists, in
/// the trace the call ran in, and `fdr export` of the written file puts them in the same trace.
#[test]
fn a_triggered_window_joins_the_trace_it_ran_in_sent_or_exported() {
    let _turn = testing::exclusive();
    let dir = scratch("otlp-join");
    let c = OtlpCollector::start(&[]);
    let rec = fdr_runtime::start(
        sending(&c)
            .out(dir.join("slow.fdr"))
            .trigger("otlp_export::slow_step", Duration::from_millis(10)),
    )
    .unwrap();
    request(TRACEPARENT);
    wait_until("the slow call's window", || rec.stats().windows_sent == 1);
    rec.finish_to(&mut std::io::sink()).unwrap();
    // Numbered in the process's sequence, which the other tests share.
    let files = logs_in(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let file = files[0].clone();
    let body = dir.join("body.pb");
    std::fs::write(&body, &c.accepted()[0]).unwrap();
    let v = otlp_check(std::slice::from_ref(&body));
    assert_eq!(
        spans_of_otlp(&v),
        spans_of_calls(&calls_json(&file), origin_unix_ns(&file))
    );
    let trace = fdr_otlp::spans::TraceParent::parse(TRACEPARENT).unwrap();
    let hex: String = trace.trace_id.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(v["trace_id"], hex.as_str());
    let e = exported(&file, &dir);
    assert_eq!(e["trace_id"], hex.as_str());
    assert_eq!(spans_of_otlp(&e), spans_of_otlp(&v));
    std::fs::remove_dir_all(dir).ok();
}

#[fdr::instrument_fdr]
async fn job(ms: u64) -> u64 {
    Wait { ms, asked: false }.await;
    ms
}

/// Pending on its first poll, ready on the one after it wakes its task `ms` later: a task that
/// awaits it is polled exactly twice. (A timer is not: a poll held up past its deadline, as on a
/// loaded machine, finds it elapsed and completes the task in one poll.)
struct Wait {
    ms: u64,
    asked: bool,
}

impl std::future::Future for Wait {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.asked {
            return std::task::Poll::Ready(());
        }
        self.asked = true;
        let (waker, ms) = (cx.waker().clone(), self.ms);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            waker.wake();
        });
        std::task::Poll::Pending
    }
}

/// Creates three tasks of `job` (the futures are made here) and returns them; the third is
/// dropped by the caller before it completes.
#[fdr::instrument_fdr]
fn dispatch() -> Vec<std::pin::Pin<Box<dyn std::future::Future<Output = u64> + Send>>> {
    vec![Box::pin(job(5)), Box::pin(job(10)), Box::pin(job(1000))]
}

/// Each async task is a span of its life, creation to completion, under the call that created
/// it: `fdr.task`, cancelled ones marked, as `fdr export` of the same window has them.
#[test]
fn async_tasks_are_spans_of_their_life_under_the_call_that_made_them() {
    use fdr_otlp::proto::any_value::Value;
    let _turn = testing::exclusive();
    let dir = scratch("otlp-tasks");
    let c = OtlpCollector::start(&[]);
    let rec = fdr_runtime::start(sending(&c)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let mut futures = dispatch();
    let cancelled = futures.pop().unwrap();
    let done: Vec<u64> = rt.block_on(async {
        let handles: Vec<_> = futures.into_iter().map(|f| tokio::spawn(f)).collect();
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap());
        }
        out
    });
    assert_eq!(done, [5, 10]);
    drop(cancelled);
    let path = dir.join("tasks.fdr");
    rec.write_snapshot(&path).unwrap();
    wait_until("the window", || rec.stats().windows_sent == 1);
    rec.finish_to(&mut std::io::sink()).unwrap();
    let r = decode(&c.accepted()[0]);
    let all = spans(&r);
    let dispatch = all
        .iter()
        .find(|s| s.name == "otlp_export::dispatch")
        .unwrap();
    let kind = |s: &Span| match attr(s, "fdr.kind") {
        Some(Value::StringValue(k)) => k.clone(),
        _ => String::new(),
    };
    let tasks: Vec<_> = all.iter().filter(|s| kind(s) == "task").collect();
    assert_eq!(tasks.len(), 3, "three tasks");
    for t in &tasks {
        assert_eq!(t.name, "otlp_export::job");
        assert_eq!(t.parent_span_id, dispatch.span_id, "made inside dispatch");
        assert!(attr(t, "fdr.open").is_none());
    }
    let mut lives: Vec<(u64, bool, &Span)> = tasks
        .iter()
        .map(|t| {
            (
                t.end_time_unix_nano - t.start_time_unix_nano,
                attr(t, "fdr.cancelled") == Some(&Value::BoolValue(true)),
                **t,
            )
        })
        .collect();
    // The completed ones by length, then the dropped one (which may have lived less than the
    // longest: it is dropped right after that one completes, but made after it).
    lives.sort_by_key(|l| (l.1, l.0));
    assert!(lives[0].0 >= 5_000_000 && !lives[0].1, "{lives:?}");
    assert!(lives[1].0 >= 10_000_000 && !lives[1].1, "{lives:?}");
    assert!(lives[2].1, "the dropped one is cancelled: {lives:?}");
    // Every poll of `job` (each kept: every call is) hangs under its task's life, inside it;
    // the two that completed were polled twice (before and after their wait), the dropped one
    // never.
    let polls: Vec<_> = all
        .iter()
        .filter(|s| s.name == "otlp_export::job" && kind(s) != "task")
        .collect();
    for p in &polls {
        assert_eq!(kind(p), "poll");
        let life = tasks
            .iter()
            .find(|t| t.span_id == p.parent_span_id)
            .expect("a poll under its task");
        assert_eq!(attr(p, "fdr.task"), attr(life, "fdr.task"));
        assert!(p.start_time_unix_nano >= life.start_time_unix_nano);
        assert!(p.end_time_unix_nano <= life.end_time_unix_nano);
    }
    let under = |l: &Span| {
        polls
            .iter()
            .filter(|p| p.parent_span_id == l.span_id)
            .count()
    };
    assert_eq!(
        [under(lives[0].2), under(lives[1].2), under(lives[2].2)],
        [2, 2, 0]
    );
    // `fdr export` of the written window says the same.
    let e = exported(&path, &dir);
    let body = dir.join("body.pb");
    std::fs::write(&body, &c.accepted()[0]).unwrap();
    let v = otlp_check(std::slice::from_ref(&body));
    assert_eq!(e["spans"], v["spans"]);
    std::fs::remove_dir_all(dir).ok();
}

/// The snapshot signal's window goes to the collector too, with its reason.
#[test]
fn the_signal_window_is_sent() {
    use fdr_otlp::proto::any_value::Value;
    let _turn = testing::exclusive();
    let c = OtlpCollector::start(&[]);
    let rec = fdr_runtime::start(
        sending(&c)
            .otlp_only(true)
            .snapshot_on_signal(fdr_runtime::Signal::Usr2),
    )
    .unwrap();
    work(2);
    // SAFETY: raising a signal the recorder installed a handler for.
    unsafe { libc::raise(libc::SIGUSR2) };
    wait_until("the signal's window", || rec.stats().windows_sent == 1);
    rec.finish_to(&mut std::io::sink()).unwrap();
    let r = decode(&c.accepted()[0]);
    let all = spans(&r);
    assert_eq!(
        all.iter().filter(|s| s.name == "otlp_export::work").count(),
        1
    );
    for s in all.iter().filter(|s| s.parent_span_id.is_empty()) {
        assert_eq!(
            attr(s, "fdr.reason"),
            Some(&Value::StringValue("signal".into()))
        );
    }
}

/// Every request decodes with the official classes, whatever its transport: plain, gzip, and
/// gzip over TLS to a collector whose certificate was made for this test (trusted through
/// `otlp_ca`, as a company's private CA is).
#[test]
fn plain_gzip_and_tls_requests_decode_with_the_official_classes() {
    let _turn = testing::exclusive();
    let dir = scratch("otlp-transports");
    for (name, tls, gzip) in [
        ("plain", false, false),
        ("gzip", false, true),
        ("tls", true, true),
    ] {
        let c = OtlpCollector::with(Setup {
            tls,
            ..Setup::default()
        });
        let mut config = sending(&c).otlp_gzip(gzip);
        if let Some(ca) = &c.ca {
            config = config.otlp_ca(ca);
        }
        let rec = fdr_runtime::start(config).unwrap();
        work(3);
        let path = dir.join(format!("{name}.fdr"));
        rec.write_snapshot(&path).unwrap();
        wait_until("the window to be sent", || rec.stats().windows_sent == 1);
        rec.finish_to(&mut std::io::sink()).unwrap();
        assert!(c.url.starts_with(if tls { "https://" } else { "http://" }));
        let got = c.requests();
        assert_eq!(got.len(), 1, "{name}");
        assert_eq!(
            got[0].header("content-encoding"),
            gzip.then_some("gzip"),
            "{name}"
        );
        let body = dir.join(format!("{name}.pb"));
        std::fs::write(&body, &got[0].body).unwrap();
        let v = otlp_check(std::slice::from_ref(&body));
        assert_eq!(
            spans_of_otlp(&v),
            spans_of_calls(&calls_json(&path), origin_unix_ns(&path)),
            "{name}"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

/// This test binary as a child process running `test`, with no OpenTelemetry variable of the
/// parent's environment.
fn child(test: &str) -> std::process::Command {
    let mut c = fdr_testkit::child::command(test);
    // Its logs go to a scratch directory (the child's `out`, when FDR_OPTIONS gives none).
    static CHILDREN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CHILDREN.fetch_add(1, Ordering::Relaxed);
    c.current_dir(scratch(&format!("otlp-child-{test}-{n}")));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("OTEL_") || k == "SSL_CERT_FILE" {
            c.env_remove(k);
        }
    }
    c
}

/// The child's stdout and stderr, checked for success.
fn run(c: &mut std::process::Command) -> (String, String) {
    let out = c.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "child failed: {stdout}\n{stderr}");
    (stdout, stderr)
}

/// Records from `FDR_OPTIONS`, takes `FDR_TEST_WINDOWS` snapshots (default 1), waits until
/// each is sent or dropped, and says so: `windows sent S dropped D`.
#[test]
#[ignore = "a child process of the OTLP tests that set FDR_OPTIONS and OTEL_* variables"]
fn child_sends_windows() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    work(1); // starts the recording FDR_OPTIONS asks for
    let Some(rec) = fdr_runtime::recorder() else {
        println!("no recorder");
        return;
    };
    let n: u64 = std::env::var("FDR_TEST_WINDOWS").map_or(1, |v| v.parse().unwrap());
    for _ in 0..n {
        work(2);
        rec.snapshot(&mut std::io::sink()).unwrap();
    }
    wait_until("the windows to be sent or dropped", || {
        let s = rec.stats();
        s.windows_sent + s.windows_dropped == n
    });
    let s = rec.stats();
    println!(
        "windows sent {} dropped {}",
        s.windows_sent, s.windows_dropped
    );
}

/// Starts recording with `Config::from_env()` and prints the error, if any.
#[test]
#[ignore = "a child process of a_header_given_by_each_route_arrives"]
fn child_starts_from_env() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    let config = fdr_runtime::Config::from_env().unwrap().unwrap();
    match fdr_runtime::start(config) {
        Ok(rec) => {
            println!("started");
            rec.finish_to(&mut std::io::sink()).unwrap();
        }
        Err(e) => println!("{e}"),
    }
}

/// A header arrives given by each route: `Config::otlp_header`, `FDR_OPTIONS` `otlp_headers=`,
/// `OTEL_EXPORTER_OTLP_HEADERS`; fdr's own option wins over the variable; a bad variable stops
/// the start, named, its secret not shown.
#[test]
fn a_header_given_by_each_route_arrives() {
    let _turn = testing::exclusive();
    // Characters that need escaping in a list: a space, `%`, `,` and `=`.
    const KEY: &str = "k1 %,=";
    let c = OtlpCollector::with(Setup {
        require: Some(("x-api-key", KEY)),
        ..Setup::default()
    });
    let rec = fdr_runtime::start(sending(&c).otlp_header("x-api-key", KEY)).unwrap();
    work(1);
    rec.snapshot(&mut std::io::sink()).unwrap();
    wait_until("the window", || rec.stats().windows_sent == 1);
    rec.finish_to(&mut std::io::sink()).unwrap();
    assert_eq!(c.requests()[0].header("x-api-key"), Some(KEY));
    let escaped = "x-api-key=k1%20%25%2C%3D";
    for (route, fdr, otel) in [
        ("FDR_OPTIONS", Some(escaped), None),
        ("OTEL_EXPORTER_OTLP_HEADERS", None, Some(escaped)),
        (
            "both: fdr's wins",
            Some(escaped),
            Some("x-api-key=from-otel"),
        ),
    ] {
        let c = OtlpCollector::with(Setup {
            require: Some(("x-api-key", KEY)),
            ..Setup::default()
        });
        let mut options = format!("threshold_us=0 otlp_endpoint={}", c.url);
        if let Some(h) = fdr {
            options.push_str(&format!(" otlp_headers={h}"));
        }
        let mut cmd = child("child_sends_windows");
        cmd.env("FDR_OPTIONS", options);
        if let Some(h) = otel {
            cmd.env("OTEL_EXPORTER_OTLP_HEADERS", h);
        }
        let (stdout, _) = run(&mut cmd);
        assert!(
            stdout.contains("windows sent 1 dropped 0"),
            "{route}: {stdout}"
        );
        let got = c.requests();
        assert_eq!(got.len(), 1, "{route}");
        assert_eq!(got[0].header("x-api-key"), Some(KEY), "{route}");
    }
    // A bad variable: the start fails naming it, and the secret beside it is not shown.
    let (stdout, stderr) = run(child("child_starts_from_env")
        .env("FDR_OPTIONS", "otlp_endpoint=env")
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=hunter2,hunter3"));
    assert!(
        stdout.contains(
            "fdr: bad option `OTEL_EXPORTER_OTLP_HEADERS`: item 2 has no `=`; write KEY=VALUE"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("hunter") && !stderr.contains("hunter"));
    let (stdout, _) = run(child("child_starts_from_env")
        .env("FDR_OPTIONS", "otlp_endpoint=env")
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "10s"));
    assert!(
        stdout.contains("`OTEL_EXPORTER_OTLP_TIMEOUT`: expected a whole number of milliseconds"),
        "{stdout}"
    );
}

/// A collector that refuses the key (401): each window is tried once, never retried, and
/// stderr says so once, with what to check; the key is not printed.
#[test]
fn a_401_is_reported_once_and_not_retried() {
    let c = OtlpCollector::with(Setup {
        require: Some(("x-api-key", "right")),
        ..Setup::default()
    });
    let (stdout, stderr) = run(child("child_sends_windows")
        .env(
            "FDR_OPTIONS",
            format!(
                "threshold_us=0 otlp_endpoint={} otlp_headers=x-api-key=wrong-key",
                c.url
            ),
        )
        .env("FDR_TEST_WINDOWS", "2"));
    assert!(stdout.contains("windows sent 0 dropped 2"), "{stdout}");
    assert_eq!(
        c.requests().len(),
        2,
        "one request per window, none retried"
    );
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("collector")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains(
            "(not accepted: the collector answered HTTP 401 (the request is refused; not \
             retried: check the API key"
        ) && said[0].ends_with("not said again"),
        "{stderr}"
    );
    assert!(!stderr.contains("wrong-key"), "{stderr}");
}

/// `FDR_TEST_BUSY` threads (default 2) record while windows go to the collector the parent says
/// (`FDR_OPTIONS`); then the
/// program prints `longest N ns`, then `exiting`, and returns from the test: its exit writer
/// closes the exporter.
#[test]
#[ignore = "a child process of the exit tests"]
fn child_records_and_exits() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    work(1);
    let rec = fdr_runtime::recorder().expect("FDR_OPTIONS starts a recorder");
    let threads = std::env::var("FDR_TEST_BUSY").map_or(2, |v| v.parse().unwrap());
    let busy = Busy::start(threads);
    let n: u64 = std::env::var("FDR_TEST_WINDOWS").map_or(3, |v| v.parse().unwrap());
    for i in 0..n {
        work(i + 2); // each window its own calls
        rec.snapshot(&mut std::io::sink()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    // The sender is busy with the windows (sending, retrying, waiting) while threads record.
    std::thread::sleep(Duration::from_millis(300));
    let (calls, longest) = busy.stop();
    assert!(calls > 0 || threads == 0);
    println!("longest {} ns", longest.as_nanos());
    println!("exiting");
    use std::io::Write;
    std::io::stdout().flush().unwrap();
}

/// Runs `child_records_and_exits` with `options`; returns the longest recording call it saw
/// and how long its exit took, from its `exiting` line to the end of the process.
fn exit_of(options: &str, windows: u64, threads: usize) -> (Duration, Duration, String) {
    use std::io::BufRead;
    let mut c = child("child_records_and_exits")
        .env("FDR_OPTIONS", options)
        .env("FDR_TEST_WINDOWS", windows.to_string())
        .env("FDR_TEST_BUSY", threads.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(c.stdout.take().unwrap()).lines();
    let mut longest = None;
    let mut exiting = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        // The test harness's `test NAME ... ` may start the child's first line.
        if let Some(at) = line.find("longest ") {
            let ns = line[at + "longest ".len()..].trim_end_matches(" ns");
            longest = Some(Duration::from_nanos(ns.parse().unwrap()));
        }
        if line.ends_with("exiting") {
            exiting = Some(Instant::now());
            break;
        }
    }
    let status = c.wait().unwrap();
    let held = exiting.expect("the child's exiting line").elapsed();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut c.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    (longest.expect("the child's longest line"), held, stderr)
}

/// The most a recording call may take in a test whose collector is down, hung or busy: far less
/// than any wait the exporter makes (a 1 s backoff, a 10 s timeout), so a thread that waited on
/// it shows; far more than a scheduler's time slice on a loaded 2-core machine.
const NO_WAIT: Duration = Duration::from_millis(500);

/// A collector that is down, hung or answering 503 never slows a recording thread, and never
/// holds the exit past its grace (`OTLP_FLUSH`), with windows still queued.
#[test]
fn a_down_hung_or_busy_collector_never_slows_recording_nor_holds_exit() {
    let down = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let hung = OtlpCollector::start(&[Answer::Hang; 16]);
    let busy = OtlpCollector::start(&[Answer::Busy; 64]);
    for (name, url) in [("down", &down), ("hung", &hung.url), ("busy", &busy.url)] {
        let (longest, held, stderr) = exit_of(
            &format!("threshold_us=0 buffer_count=16 otlp_endpoint={url} otlp_timeout=10s"),
            3,
            2,
        );
        assert!(
            longest < NO_WAIT,
            "{name}: a recording call took {longest:?}"
        );
        assert!(
            held < fdr_runtime::OTLP_FLUSH + Duration::from_secs(1),
            "{name}: the exit took {held:?}: {stderr}"
        );
        assert!(stderr.contains("was dropped"), "{name}: {stderr}");
    }
    hung.release();
}

/// During an exit, a collector answering 503 with `Retry-After: 1` sees one request per second,
/// never a burst when the grace ends, and each queued window is tried, not only the first
/// one's retries. (Before: the first window was retried until the grace ended, then three
/// more times within milliseconds; the second never went.)
#[test]
fn a_busy_collector_sees_its_retry_after_honoured_and_every_window_tried_during_exit() {
    let c = OtlpCollector::start(&[Answer::Busy; 64]);
    let (_, held, stderr) = exit_of(
        &format!(
            "threshold_us=0 buffer_count=16 otlp_endpoint={} otlp_retry_for=60s",
            c.url
        ),
        2,
        // Small windows: the sender (at nice 10) is not left behind by busy threads on a loaded
        // machine, and has its turns when the collector lets it.
        0,
    );
    assert!(
        held < fdr_runtime::OTLP_FLUSH + Duration::from_secs(1),
        "the exit took {held:?}: {stderr}"
    );
    let got = c.requests();
    assert!(got.len() >= 2, "{} requests: {stderr}", got.len());
    let gaps: Vec<Duration> = got.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(
        gaps.iter().all(|g| *g >= Duration::from_millis(900)),
        "requests closer than the Retry-After: {gaps:?}"
    );
    let mut traces: Vec<Vec<u8>> = got
        .iter()
        .map(|r| spans(&decode(&r.body))[0].trace_id.clone())
        .collect();
    traces.sort();
    traces.dedup();
    assert_eq!(traces.len(), 2, "both windows tried: {gaps:?}");
}

#[fdr::instrument_fdr]
fn checkout(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

/// Triggers a slow call, then waits for the window to be sent when `FDR_TEST_SENT` is 1, or
/// gives the exporter half a second when it is 0; prints the windows sent.
#[test]
#[ignore = "a child process of an_https_collector_with_a_key_configured_by_the_variables_gets_the_triggered_window"]
fn child_triggers() {
    if !fdr_testkit::child::spawned() {
        return;
    }
    checkout(0); // starts the recording FDR_OPTIONS asks for
    checkout(40);
    let rec = fdr_runtime::recorder().expect("FDR_OPTIONS starts a recorder");
    if std::env::var("FDR_TEST_SENT").as_deref() == Ok("1") {
        wait_until("the triggered window", || rec.stats().windows_sent == 1);
    } else {
        std::thread::sleep(Duration::from_millis(500));
    }
    println!("windows sent {}", rec.stats().windows_sent);
}

/// What a team that already runs OpenTelemetry does: the standard variables (an https://
/// endpoint, an API key header, the CA, the service's name and attributes) plus one fdr
/// option, `otlp_endpoint=env`; the triggered window arrives. The variables alone do not turn
/// sending on.
#[test]
fn an_https_collector_with_a_key_configured_by_the_variables_gets_the_triggered_window() {
    let dir = scratch("otlp-env");
    let c = OtlpCollector::with(Setup {
        tls: true,
        require: Some(("x-honeycomb-team", "s3cr3t")),
        ..Setup::default()
    });
    let ca = c.ca.clone().unwrap();
    let with_variables = |fdr_options: &str| {
        let mut cmd = child("child_triggers");
        cmd.env(
            "FDR_OPTIONS",
            format!(
                "{fdr_options} trigger=otlp_export::checkout:10ms out={}",
                dir.join("app.fdr").display()
            ),
        )
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &c.url)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-honeycomb-team=s3cr3t")
        .env("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca)
        .env("OTEL_SERVICE_NAME", "checkout")
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=staging,service.name=ignored",
        );
        cmd
    };
    let (stdout, _) = run(with_variables("").env("FDR_TEST_SENT", "0"));
    assert!(stdout.contains("windows sent 0"), "{stdout}");
    assert!(c.requests().is_empty(), "the variables alone send nothing");
    let (stdout, stderr) = run(with_variables("otlp_endpoint=env").env("FDR_TEST_SENT", "1"));
    assert!(stdout.contains("windows sent 1"), "{stdout}");
    assert!(!stderr.contains("s3cr3t"), "{stderr}");
    let got = c.requests();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("x-honeycomb-team"), Some("s3cr3t"));
    assert_eq!(got[0].header("content-encoding"), Some("gzip"));
    let body = dir.join("body.pb");
    std::fs::write(&body, &got[0].body).unwrap();
    let v = otlp_check(std::slice::from_ref(&body));
    assert_eq!(v["resource"]["service.name"], "checkout");
    assert_eq!(v["resource"]["deployment.environment"], "staging");
    let slow: Vec<_> = v["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            s["name"] == "otlp_export::checkout"
                && s["end"].as_u64().unwrap() - s["start"].as_u64().unwrap() >= 40_000_000
        })
        .collect();
    assert_eq!(slow.len(), 1, "{v}");
    assert_eq!(slow[0]["attributes"]["fdr.reason"], "slow call");
    assert_eq!(
        slow[0]["attributes"]["fdr.trigger.function"],
        "otlp_export::checkout"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// `fdr export` sends over TLS too, to a collector whose certificate it is given with
/// `--otlp-ca`, with the header given; what arrives decodes to what the file export holds.
#[test]
fn fdr_export_sends_over_tls_with_the_ca_and_header_given() {
    let _turn = testing::exclusive();
    let dir = scratch("otlp-export-tls");
    let c = OtlpCollector::with(Setup {
        tls: true,
        require: Some(("authorization", "Bearer s3cr3t")),
        ..Setup::default()
    });
    let rec = fdr_runtime::start(every_call().buffer_count(64)).unwrap();
    work(3);
    let path = dir.join("w.fdr");
    rec.write_snapshot(&path).unwrap();
    rec.finish_to(&mut std::io::sink()).unwrap();
    let ca = c.ca.clone().unwrap();
    let args: Vec<String> = [
        "export",
        path.to_str().unwrap(),
        "--otlp",
        &c.url,
        "--otlp-ca",
        ca.to_str().unwrap(),
        "--otlp-headers",
        "authorization=Bearer%20s3cr3t",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    fdr_cli::run(&args, &mut Vec::new()).unwrap();
    let got = c.requests();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("authorization"), Some("Bearer s3cr3t"));
    let received = dir.join("received.pb");
    std::fs::write(&received, &got[0].body).unwrap();
    assert_eq!(
        otlp_check(std::slice::from_ref(&received))["spans"],
        exported(&path, &dir)["spans"]
    );
    std::fs::remove_dir_all(dir).ok();
}
