//! `fdr export`: what it writes and sends, decoded by a receiver we did not write (the official
//! OpenTelemetry protobuf classes, PyPI package `opentelemetry-proto`, in `tests/otlp_check.py`),
//! matches `fdr calls --format json` of the same log exactly: one span per call, names, counts,
//! nesting, Unix start and end times, open and inferred marks, arguments, thread, the window's
//! reason; and a test collector receives the same over HTTP at `/v1/traces`.
//!
//! Needs python3 with opentelemetry-proto (`scripts/test` installs it): without them the tests
//! fail, saying what to install.

mod common;

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use common::{awaits_log, basic_log, fdr, midstack_log, temp_dir, triggered_log, write_log};
use fdr_format::{ClockSource, Mode, Reason, ReasonInfo, RunInfo};
use fdr_testkit::otlp::{
    otlp_check, read_request, spans_of_calls, spans_of_otlp as from_otlp, Received, Span as S,
};
use fdr_testkit::synth::LogBuilder;
use serde_json::Value;

/// Runs the `fdr` binary (for its standard error and exit status).
fn fdr_bin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fdr"))
        .args(args)
        .env("TZ", "UTC")
        .output()
        .expect("run fdr")
}

/// The spans that `fdr calls --format json` of `log` (with `filter`) says the window has, its
/// start at Unix time `base` (every call listed at the top level: the top 100000 are all).
fn from_calls(log: &str, base: u64, filter: &[&str]) -> Vec<S> {
    let mut args = vec![
        "calls", log, "--format", "json", "--top", "100000", "--depth", "1000",
    ];
    args.extend_from_slice(filter);
    let out = fdr(&args).unwrap_or_else(|e| panic!("fdr {args:?}: {e}"));
    let spans = spans_of_calls(&serde_json::from_str(&out).unwrap(), base);
    let mut unique = spans.clone();
    unique.dedup();
    assert_eq!(
        unique.len(),
        spans.len(),
        "the fixture's calls are distinct"
    );
    spans
}

/// `fdr export --otlp-file` of `log` with `extra` arguments: the file and its decoding.
fn export_file(dir: &Path, log: &str, name: &str, extra: &[&str]) -> (PathBuf, Value) {
    let out = dir.join(name);
    let mut args = vec!["export", log, "--otlp-file", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = fdr_bin(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "fdr {args:?}: {stderr}");
    assert!(o.stdout.is_empty(), "nothing on standard output");
    let v = otlp_check(std::slice::from_ref(&out));
    let n = v["spans"].as_array().unwrap().len();
    assert_eq!(
        stderr.trim_end(),
        format!(
            "wrote {n} span{} in 1 request to {}",
            if n == 1 { "" } else { "s" },
            out.display()
        )
    );
    assert_eq!(v["requests"], 1);
    (out, v)
}

/// The resource's attributes.
fn resource(v: &Value) -> &serde_json::Map<String, Value> {
    v["resource"].as_object().unwrap()
}

/// The attributes every span without a parent has, and no other span.
fn check_root_attributes(v: &Value, want: &[(&str, Value)]) {
    for s in v["spans"].as_array().unwrap() {
        let a = s["attributes"].as_object().unwrap();
        let root = s["parent"].is_null();
        for (k, val) in want {
            if root {
                assert_eq!(a.get(*k), Some(val), "{k} on root {}", s["name"]);
            } else {
                assert!(!a.contains_key(*k), "{k} on {}, not a root", s["name"]);
            }
        }
        for k in a
            .keys()
            .filter(|k| k.starts_with("fdr.trigger") || *k == "fdr.reason")
        {
            assert!(want.iter().any(|(w, _)| w == k), "{k} unexpected");
        }
    }
}

/// Three threads at 2.4 GHz (so ticks to nanoseconds round), a real wall clock, a hang: the
/// log was written because `app::wait` had run past its limit and still runs; thread 33 is not
/// named. Recording started at 1_700_000_000.123456789 s, tick 2_400_000; the earliest window
/// (thread 31's) starts at tick 24_000_000: 9 ms later.
fn hang_log() -> (Vec<u8>, u64) {
    let mut log = LogBuilder::new(2_400_000_000);
    log.leading_block(31, 2_400_000);
    log.run(RunInfo {
        clock: ClockSource::Tsc,
        ticks_per_second: 2_400_000_000,
        mode: Mode::Ring,
        buffer_size: 65536,
        buffer_count: 8,
        pid: 4321,
        program: "/usr/local/bin/hangs".into(),
        start_unix_secs: 1_700_000_000,
        start_unix_nanos: 123_456_789,
        start_tsc: 2_400_000,
        end_tsc: 30_000_000,
        snapshot: true,
        ..RunInfo::default()
    });
    log.reason(ReasonInfo {
        reason: Reason::StillRunning,
        function: 3,
        tid: 32,
        start_tsc: 24_100_001,
        duration_ticks: 5_899_999,
        limit_ticks: 2_400_000,
        ..ReasonInfo::default()
    });
    log.function(1, "app::serve", &[]);
    log.function(2, "app::handle", &["id", "size"]);
    log.function(3, "app::wait", &[]);
    log.function(4, "app::io", &[]);
    log.thread(31, "acceptor");
    log.thread(32, "handler");
    let mut b = log.block(31, 0, 24_000_000);
    b.enter(1, 24_000_000);
    b.enter_args(2, 24_000_007, &[17, 4096]);
    b.enter(4, 24_000_100);
    b.exit(4, 24_000_333);
    b.exit(2, 24_001_001);
    b.enter_args(2, 24_002_000, &[18, 1]);
    b.exit(2, 24_002_777);
    b.finish();
    let mut b = log.block(32, 1, 24_050_000);
    b.enter(2, 24_050_000);
    b.enter(3, 24_100_001);
    b.enter(4, 24_100_500);
    b.exit(4, 24_101_000);
    b.finish();
    let mut b = log.block(33, 1, 24_060_000);
    b.enter(4, 24_060_003);
    b.exit(4, 24_060_004);
    b.exit(1, 24_070_000);
    b.finish();
    (log.finish(), 1_700_000_000_123_456_789 + 9_000_000)
}

#[test]
fn the_exported_file_decodes_to_the_calls_of_the_log() {
    let dir = temp_dir("otlp-file");
    let (hang, hang_base) = hang_log();
    // (name, bytes, the window start's Unix time, the program, the pid)
    let cases: Vec<(&str, Vec<u8>, u64, &str, i64)> = vec![
        // Two threads, arguments, a tail call, an id not in the table, a call open at the end.
        ("basic.fdr", basic_log(), 1_000, "demo", 1),
        // Entries before the window (inferred) and calls still running (open).
        ("midstack.fdr", midstack_log(), 5_000, "ring", 1),
        // Written by a slow-call trigger.
        ("triggered.fdr", triggered_log(), 1_000, "server", 1),
        // A hang, a real wall clock, a clock whose ticks are not nanoseconds.
        ("hang.fdr", hang, hang_base, "hangs", 4321),
    ];
    for (name, bytes, base, program, pid) in cases {
        let log = write_log(&dir, name, &bytes);
        let (_, v) = export_file(&dir, &log, &format!("{name}.pb"), &[]);
        let want = from_calls(&log, base, &[]);
        let got = from_otlp(&v);
        assert_eq!(got.len(), want.len(), "{name}: one span per call");
        assert_eq!(got, want, "{name}");
        assert!(!got.is_empty());
        if ["midstack.fdr", "hang.fdr"].contains(&name) {
            assert!(got.iter().any(|s| s.open), "{name} has open calls");
            assert!(got.iter().any(|s| s.inferred), "{name} has inferred starts");
        }
        let r = resource(&v);
        assert_eq!(r["service.name"], program, "{name}");
        assert_eq!(r["process.executable.name"], program, "{name}");
        assert_eq!(r["process.pid"], pid, "{name}");
        assert_eq!(r["telemetry.sdk.name"], "fdr");
        assert_eq!(r["telemetry.sdk.language"], "rust");
        assert_eq!(r["telemetry.sdk.version"], env!("CARGO_PKG_VERSION"));
        assert!(!r.contains_key("host.name"), "a log does not say its host");
        assert_eq!(
            v["scope"],
            serde_json::json!({"name": "fdr", "version": env!("CARGO_PKG_VERSION")})
        );
        // Flags: sampled, and the parent (when there is one) is local.
        for s in v["spans"].as_array().unwrap() {
            assert_eq!(s["flags"], 0x101, "{name}: {}", s["name"]);
        }
        // Thread names where the log has them.
        for s in v["spans"].as_array().unwrap() {
            let a = s["attributes"].as_object().unwrap();
            let want = match a["thread.id"].as_i64().unwrap() {
                11 => Some("main"),
                12 if name == "basic.fdr" => Some("worker"),
                12 => Some("pool"),
                21 => Some("ring-thread"),
                31 => Some("acceptor"),
                32 => Some("handler"),
                _ => None,
            };
            assert_eq!(a.get("thread.name").and_then(Value::as_str), want, "{name}");
        }
        match name {
            "triggered.fdr" => check_root_attributes(
                &v,
                &[
                    ("fdr.reason", "slow call".into()),
                    ("fdr.trigger.function", "app::handle".into()),
                    ("fdr.trigger.duration_ns", 3600.into()),
                ],
            ),
            "hang.fdr" => check_root_attributes(
                &v,
                &[
                    ("fdr.reason", "still running".into()),
                    ("fdr.trigger.function", "app::wait".into()),
                    // 2_400_000 and 5_899_999 ticks at 2.4 GHz.
                    ("fdr.trigger.limit_ns", 1_000_000.into()),
                    ("fdr.trigger.duration_ns", 2_458_332.into()),
                ],
            ),
            _ => check_root_attributes(&v, &[]),
        }
    }
}

#[test]
fn the_hung_call_is_open_and_ends_when_the_window_was_written() {
    let dir = temp_dir("otlp-hang");
    let (hang, base) = hang_log();
    let log = write_log(&dir, "hang.fdr", &hang);
    let (_, v) = export_file(&dir, &log, "hang.pb", &[]);
    let wait = v["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "app::wait")
        .unwrap();
    assert_eq!(wait["attributes"]["fdr.open"], true);
    assert_eq!(wait["parent"]["name"], "app::handle");
    // Entered at tick 24_100_001, the log taken at 30_000_000: (tick - 24_000_000) / 2.4.
    assert_eq!(wait["start"].as_u64().unwrap(), base + 41_667);
    assert_eq!(wait["end"].as_u64().unwrap(), base + 41_667 + 2_458_332);
}

#[test]
fn filters_options_and_a_traceparent_shape_the_export() {
    let dir = temp_dir("otlp-options");
    let log = write_log(&dir, "basic.fdr", &basic_log());
    // --thread keeps that thread's calls, as `fdr calls --thread` does.
    let (_, v) = export_file(&dir, &log, "worker.pb", &["--thread", "worker"]);
    let got = from_otlp(&v);
    assert!(got.iter().all(|s| s.tid == 12) && !got.is_empty());
    assert_eq!(got, from_calls(&log, 1_500, &["--thread", "worker"]));
    // --from and --function too. (At 1 GHz from Unix time 0 and tick 0, the window start's
    // Unix time in ns is its tick: --from 1us cuts the windows at tick 2000.)
    for (filter, base) in [
        (&["--from", "1us"][..], 2_000),
        (&["--function", "Worker::step"], 1_000),
    ] {
        let (_, v) = export_file(&dir, &log, "f.pb", filter);
        assert_eq!(from_otlp(&v), from_calls(&log, base, filter), "{filter:?}");
    }
    // Names.
    let (_, v) = export_file(
        &dir,
        &log,
        "named.pb",
        &["--service-name", "checkout", "--host-name", "box-7"],
    );
    assert_eq!(resource(&v)["service.name"], "checkout");
    assert_eq!(resource(&v)["host.name"], "box-7");
    assert_eq!(resource(&v)["process.executable.name"], "demo");
    // The same log exports the same trace; a traceparent puts it in the caller's trace.
    let (a, v0) = export_file(&dir, &log, "a.pb", &[]);
    let (b, _) = export_file(&dir, &log, "b.pb", &[]);
    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let (_, v) = export_file(&dir, &log, "tp.pb", &["--traceparent", tp]);
    assert_eq!(v["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_ne!(v0["trace_id"], v["trace_id"]);
    for s in v["spans"].as_array().unwrap() {
        let p = &s["parent"];
        if p.get("remote").is_some() {
            assert_eq!(p["remote"], "00f067aa0ba902b7");
            assert_eq!(s["flags"], 0x301, "sampled, remote parent");
            assert!(s["attributes"]["thread.id"].as_i64().is_some());
        } else {
            assert!(!p.is_null(), "every root's parent is the remote span");
            assert_eq!(s["flags"], 0x101);
        }
    }
    let roots = v0["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["parent"].is_null())
        .count();
    let remote = v["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["parent"].get("remote").is_some())
        .count();
    assert_eq!(remote, roots);
    assert!(roots >= 2);
}

/// A collector on 127.0.0.1 that answers every request with `answer` (a whole HTTP response);
/// what it received is in the returned list. Its thread ends with the test process.
fn collector(answer: &'static [u8]) -> (u16, Arc<Mutex<Vec<Received>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(30)));
            if let Some(r) = read_request(&mut s) {
                g.lock().unwrap().push(r);
                let _ = s.write_all(answer);
            }
        }
    });
    (port, got)
}

/// 200 with an empty ExportTraceServiceResponse (full success).
const OK: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nConnection: close\r\n\
                     Content-Length: 0\r\n\r\n";

/// The body as sent, gunzipped when it came gzipped.
fn body(r: &Received) -> Vec<u8> {
    if r.header("content-encoding") != Some("gzip") {
        return r.body.clone();
    }
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&r.body[..]), &mut out).unwrap();
    out
}

#[test]
fn a_collector_receives_what_the_file_holds() {
    let dir = temp_dir("otlp-http");
    let (hang, _) = hang_log();
    for (name, bytes) in [("triggered.fdr", triggered_log()), ("hang.fdr", hang)] {
        let log = write_log(&dir, name, &bytes);
        let (file, from_file) = export_file(&dir, &log, &format!("{name}.pb"), &[]);
        let spans = from_file["spans"].as_array().unwrap().len();
        assert!(spans > 3, "{name}");
        let (port, got) = collector(OK);
        let url = format!("http://127.0.0.1:{port}");
        let o = fdr_bin(&["export", "--otlp", &url, &log]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{name}: {stderr}");
        assert_eq!(
            stderr.trim_end(),
            format!("sent {spans} spans in 1 request to {url}/v1/traces")
        );
        let got = got.lock().unwrap().clone();
        assert_eq!(got.len(), 1);
        let r = &got[0];
        assert_eq!(r.line, "POST /v1/traces HTTP/1.1");
        assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
        assert_eq!(r.header("host"), Some(&url["http://".len()..]));
        assert_eq!(
            r.header("content-encoding"),
            Some("gzip"),
            "gzip by default"
        );
        assert_eq!(
            body(r),
            std::fs::read(&file).unwrap(),
            "{name}: the same bytes"
        );
        let received = dir.join(format!("{name}.received.pb"));
        std::fs::write(&received, body(r)).unwrap();
        assert_eq!(otlp_check(&[received]), from_file, "{name}");

        // Split: at most 2 spans per request, to a path of the URL's; together, the same spans.
        let (port, got) = collector(OK);
        let url = format!("http://127.0.0.1:{port}/otlp/v1/traces");
        let o = fdr_bin(&["export", &log, "--otlp", &url, "--max-spans", "2"]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{name}: {stderr}");
        let requests = spans.div_ceil(2);
        assert_eq!(
            stderr.trim_end(),
            format!("sent {spans} spans in {requests} requests to {url}")
        );
        let got = got.lock().unwrap().clone();
        assert_eq!(got.len(), requests);
        let mut files = Vec::new();
        for (i, r) in got.iter().enumerate() {
            assert_eq!(r.line, "POST /otlp/v1/traces HTTP/1.1");
            let p = dir.join(format!("{name}.part{i}.pb"));
            std::fs::write(&p, body(r)).unwrap();
            files.push(p);
        }
        let parts = otlp_check(&files);
        assert!(parts["spans_per_request"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n.as_u64().unwrap() <= 2));
        assert_eq!(parts["resource"], from_file["resource"]);
        assert_eq!(parts["trace_id"], from_file["trace_id"]);
        assert_eq!(
            parts["spans"], from_file["spans"],
            "{name}: the same spans, in order"
        );
    }
}

#[test]
fn collector_faults_and_bad_input_fail_clearly() {
    let dir = temp_dir("otlp-bad");
    let log = write_log(&dir, "basic.fdr", &basic_log());
    let fails = |args: &[&str], code: i32, says: &str| {
        let o = fdr_bin(args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        stderr.into_owned()
    };
    // Bad flags are said before the log is read.
    fails(
        &["export", &log, "--otlp", "localhost:4318"],
        2,
        "fdr: export: --otlp localhost:4318: not an http:// or https:// URL",
    );
    let msg = fails(
        &["export", &log, "--otlp", "https://u:hunter2@collector:4318"],
        2,
        "user names and passwords in the URL are not supported",
    );
    assert!(!msg.contains("hunter2"), "{msg}");
    fails(
        &[
            "export",
            &log,
            "--otlp",
            "https://collector",
            "--otlp-ca",
            "/nonexistent/ca.pem",
        ],
        2,
        "fdr: export: --otlp-ca cannot read the CA file /nonexistent/ca.pem",
    );
    let msg = fails(
        &[
            "export",
            &log,
            "--otlp",
            "http://h",
            "--otlp-headers",
            "x-api-key=hunter2,hunter3",
        ],
        2,
        "fdr: export: --otlp-headers item 2 has no `=`",
    );
    assert!(!msg.contains("hunter"), "{msg}");
    fails(
        &[
            "export",
            &log,
            "--otlp",
            "http://h",
            "--otlp-compression",
            "zstd",
        ],
        2,
        "--otlp-compression expected gzip or none, found `zstd`",
    );
    fails(&["export", &log], 2, "--otlp");
    fails(
        &[
            "export",
            &log,
            "--otlp",
            "http://h:1",
            "--otlp-file",
            "x.pb",
        ],
        2,
        "cannot be used with",
    );
    fails(
        &[
            "export",
            &log,
            "--otlp-file",
            "x.pb",
            "--traceparent",
            "00-abc-def-01",
        ],
        2,
        "not a W3C traceparent",
    );
    // Nobody listening: retried within --retry-for, then the error.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    let t0 = std::time::Instant::now();
    let msg = fails(
        &["export", &log, "--otlp", &url, "--retry-for", "1500ms"],
        1,
        "connection refused (is the collector running and listening there?)",
    );
    assert!(t0.elapsed() < std::time::Duration::from_secs(10));
    assert!(
        msg.starts_with(&format!(
            "fdr: export to {url}/v1/traces: gave up after 2 attempts"
        )),
        "{msg}"
    );
    // A collector that refuses the request: not retried.
    let (port, got) = collector(
        b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 8\r\n\r\nno spans",
    );
    let url = format!("http://127.0.0.1:{port}");
    fails(
        &["export", &log, "--otlp", &url],
        1,
        "the collector answered HTTP 400 (the request is refused; not retried): no spans",
    );
    assert_eq!(got.lock().unwrap().len(), 1);
    // A collector that hangs: the attempt's timeout, then given up.
    let hung = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", hung.local_addr().unwrap());
    let t0 = std::time::Instant::now();
    fails(
        &[
            "export",
            &log,
            "--otlp",
            &url,
            "--timeout",
            "300ms",
            "--retry-for",
            "0",
        ],
        1,
        "did not answer within 300 ms",
    );
    assert!(t0.elapsed() < std::time::Duration::from_secs(10));
    drop(hung);
    // A profile is not a log.
    let profile = write_log(&dir, "p.fdrprof", &fdr_testkit::profile::known().encode());
    fails(
        &["export", &profile, "--otlp-file", "x.pb"],
        1,
        "this is a profile",
    );
    assert!(!Path::new("x.pb").exists());
}

/// `fdr export` takes the runtime's options and variables: headers by flag or by
/// `OTEL_EXPORTER_OTLP_HEADERS` (the flag wins), the endpoint `env`, compression, the service's
/// name and attributes; a 401 is said once and not retried, the key never shown.
#[test]
fn export_takes_the_same_headers_compression_and_variables() {
    let dir = temp_dir("otlp-variables");
    let log = write_log(&dir, "triggered.fdr", &triggered_log());
    let (file, _) = export_file(&dir, &log, "file.pb", &[]);
    let want = std::fs::read(&file).unwrap();
    let run = |args: &[&str], vars: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_fdr"));
        c.args(args);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("OTEL_") {
                c.env_remove(k);
            }
        }
        c.envs(vars.iter().copied()).output().unwrap()
    };
    // By flag, uncompressed.
    let (port, got) = collector(OK);
    let url = format!("http://127.0.0.1:{port}");
    let o = run(
        &[
            "export",
            &log,
            "--otlp",
            &url,
            "--otlp-headers",
            "x-api-key=k%2C1",
            "--otlp-compression",
            "none",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = got.lock().unwrap()[0].clone();
    assert_eq!(r.header("x-api-key"), Some("k,1"));
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.body, want);
    // By the variables alone, with --otlp env; then the flag over the variable.
    for (flag, header) in [
        (None, "from-variable"),
        (Some("x-api-key=from-flag"), "from-flag"),
    ] {
        let (port, got) = collector(OK);
        let mut args = vec!["export", &log, "--otlp", "env"];
        if let Some(f) = flag {
            args.extend(["--otlp-headers", f]);
        }
        let endpoint = format!("http://127.0.0.1:{port}");
        let o = run(
            &args,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
                ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=from-variable"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
                ("OTEL_SERVICE_NAME", "checkout"),
                ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=staging"),
            ],
        );
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{stderr}");
        assert!(
            stderr.ends_with(&format!("to {endpoint}/v1/traces\n")),
            "{stderr}"
        );
        let r = got.lock().unwrap()[0].clone();
        assert_eq!(r.line, "POST /v1/traces HTTP/1.1");
        assert_eq!(r.header("x-api-key"), Some(header));
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        let received = dir.join("env.pb");
        std::fs::write(&received, body(&r)).unwrap();
        let v = otlp_check(&[received]);
        assert_eq!(v["resource"]["service.name"], "checkout");
        assert_eq!(v["resource"]["deployment.environment"], "staging");
    }
    // A wrong key: refused once, not retried; said with what to check; the key not shown.
    let (port, got) = collector(
        b"HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 15\r\n\r\nmissing API key",
    );
    let url = format!("http://127.0.0.1:{port}");
    let o = run(
        &["export", &log, "--otlp", &url],
        &[("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=hunter2")],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert_eq!(got.lock().unwrap().len(), 1, "not retried");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("the collector answered HTTP 401 (the request is refused; not retried: check the API key"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
    // A bad variable is named.
    let o = run(
        &["export", &log, "--otlp", "env"],
        &[("OTEL_EXPORTER_OTLP_TIMEOUT", "5s")],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "fdr: export: OTEL_EXPORTER_OTLP_TIMEOUT: expected a whole number of milliseconds"
        ),
        "{stderr}"
    );
}

#[test]
fn each_wait_of_a_task_is_an_await_event_on_the_span_of_its_life() {
    let dir = temp_dir("otlp-awaits");
    let log = write_log(&dir, "awaits.fdr", &awaits_log());
    let (_, v) = export_file(&dir, &log, "awaits.pb", &[]);
    let spans = v["spans"].as_array().unwrap();
    // The window starts at Unix time 1000 ns (the run's wall clock), at the first block.
    let events = |task: u64| -> Vec<(u64, String, u64, u64, bool)> {
        let life = spans
            .iter()
            .find(|s| s["attributes"]["fdr.task"] == task && s["attributes"]["fdr.kind"] == "task")
            .unwrap_or_else(|| panic!("task {task}: {v}"));
        life["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                assert_eq!(e["name"], "await");
                let a = &e["attributes"];
                (
                    e["time"].as_u64().unwrap(),
                    a["code.location"].as_str().unwrap().to_string(),
                    a["fdr.await.waited_ns"].as_u64().unwrap(),
                    a["fdr.await.polls"].as_u64().unwrap(),
                    a.get("fdr.await.dropped").is_some_and(|d| d == true),
                )
            })
            .collect()
    };
    let e = |t, at: &str, waited, polls, dropped| (t, at.to_string(), waited, polls, dropped);
    assert_eq!(
        events(7),
        [
            e(1045, "src/app.rs:20:9", 1000, 1, false),
            e(2200, "src/app.rs:24:13", 450, 2, false),
        ]
    );
    assert_eq!(events(8), [e(1030, "src/app.rs:40:5", 980, 1, false)]);
    assert_eq!(
        events(9),
        [
            e(2996, "#99", 5, u64::from(u32::MAX), false),
            e(3010, "src/app.rs:20:9", 300, 1, true),
        ]
    );
    // Only the tasks' lives carry events; the polls do not.
    let with_events = spans.iter().filter(|s| s.get("events").is_some()).count();
    assert_eq!(with_events, 3);
}

#[test]
fn a_poll_cut_by_the_range_keeps_its_task() {
    // --to 20ns cuts task 7's first poll (1000-1050) and task 8's inside it (1010-1030): their
    // poll events come after the range's end, and still tie them to their tasks' lives.
    let dir = temp_dir("otlp-cut-poll");
    let log = write_log(&dir, "awaits.fdr", &awaits_log());
    let (_, v) = export_file(&dir, &log, "cut.pb", &["--from", "0ns", "--to", "20ns"]);
    let spans = v["spans"].as_array().unwrap();
    let polls: Vec<(&str, u64, u64, u64, &str, u64)> = spans
        .iter()
        .filter(|s| s["attributes"]["fdr.kind"] == "poll")
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["start"].as_u64().unwrap(),
                s["end"].as_u64().unwrap(),
                s["attributes"]["fdr.task"].as_u64().unwrap(),
                s["parent"]["name"].as_str().unwrap(),
                s["parent"]["start"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        polls,
        [
            ("app::get_quote", 1000, 1020, 7, "app::get_quote", 1000),
            (
                "app::downstream_discount",
                1010,
                1020,
                8,
                "app::downstream_discount",
                1010
            ),
        ],
        "{v}"
    );
    // Every span is a task's life or a poll: none is left without its task. The tasks not
    // completed by the range's end end there, as the calls cut by it do.
    assert_eq!(spans.len(), 4, "{v}");
    assert!(spans.iter().all(|s| s["attributes"]["fdr.open"] == true));
    let lives: Vec<(u64, u64, u64)> = spans
        .iter()
        .filter(|s| s["attributes"]["fdr.kind"] == "task")
        .map(|s| {
            (
                s["attributes"]["fdr.task"].as_u64().unwrap(),
                s["start"].as_u64().unwrap(),
                s["end"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(lives, [(7, 1000, 1020), (8, 1010, 1020)], "{v}");
    // So in calls: task 7 ran at least the 20 ns to --to.
    let json = fdr(&[
        "calls",
        &log,
        "--format",
        "json",
        "--to",
        "20ns",
        "--function",
        "get_quote",
    ])
    .unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    let t7 = rows.iter().find(|r| r["task"] == 7).unwrap();
    assert_eq!(
        (t7["duration_ns"].as_u64(), t7["open_at_end"].as_bool()),
        (Some(20), Some(true))
    );
}
