//! The sender against a scripted server on 127.0.0.1: what goes on the wire (the head, the
//! headers, gzip), and the retries the OTLP specification asks for (retryable statuses,
//! `Retry-After`, doubling backoff, the budget, a wait cut short), each failure said clearly.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fdr_otlp::client::{Client, Compression, Transport};
use fdr_otlp::endpoint::Endpoint;
use fdr_otlp::headers::Headers;
use fdr_otlp::proto::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use fdr_otlp::retry::{send, RetryPolicy};
use fdr_otlp::spans::{encode, requests, Call, Window};
use fdr_otlp::Error;
use prost::Message;

/// What the server does with each connection, in order.
#[derive(Clone)]
enum Then {
    /// Writes these bytes, then closes.
    Reply(Vec<u8>),
    /// Says nothing for this long, then closes.
    Hang(Duration),
}

/// A request as the server read it: request line, headers (lowercase names), body.
#[derive(Debug, Default)]
struct Received {
    line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn read_request(s: &mut TcpStream) -> Received {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "the client closed before its request's head");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap().to_string();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    let mut r = Received {
        line,
        headers,
        body: buf[head_end + 4..].to_vec(),
    };
    let len: usize = r.header("content-length").unwrap().parse().unwrap();
    while r.body.len() < len {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "the client closed before its request's body");
        r.body.extend_from_slice(&chunk[..n]);
    }
    r
}

/// A server on 127.0.0.1 that handles one connection per entry of `script`; its handle
/// returns the requests it read.
fn serve(script: Vec<Then>) -> (String, JoinHandle<Vec<Received>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let h = std::thread::spawn(move || {
        let mut got = Vec::new();
        for then in script {
            let (mut s, _) = l.accept().unwrap();
            got.push(read_request(&mut s));
            match then {
                Then::Reply(bytes) => {
                    let _ = s.write_all(&bytes);
                }
                Then::Hang(d) => std::thread::sleep(d),
            }
        }
        got
    });
    (url, h)
}

fn reply(status: &str, headers: &str, body: &[u8]) -> Then {
    let mut r = format!(
        "HTTP/1.1 {status}\r\n{headers}Connection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    Then::Reply(r)
}

fn ok() -> Then {
    reply("200 OK", "Content-Type: application/x-protobuf\r\n", b"")
}

const SEC: Duration = Duration::from_secs(1);

/// A client for `url`, uncompressed unless `gzip`, with `headers`.
fn client(url: &str, compression: Compression, headers: &str) -> Client {
    Client::new(&Transport {
        endpoint: Endpoint::parse(url).unwrap(),
        headers: Headers::parse(headers).unwrap(),
        compression,
        ca_file: None,
    })
    .unwrap()
}

fn plain(url: &str) -> Client {
    client(url, Compression::None, "")
}

/// A policy whose sleep returns at once and records the delays asked for.
fn recorded(max_elapsed: Duration) -> (RetryPolicy, Arc<Mutex<Vec<Duration>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let p = RetryPolicy {
        timeout: Duration::from_secs(5),
        initial_backoff: SEC,
        max_backoff: 4 * SEC,
        max_elapsed,
        sleep: Arc::new(move |d| {
            log.lock().unwrap().push(d);
            true
        }),
    };
    (p, asked)
}

fn some_requests(n: usize, per: usize) -> Vec<ExportTraceServiceRequest> {
    let w = Window {
        calls: vec![
            Call {
                function: "app::handle".into(),
                ..Call::default()
            };
            n
        ],
        ..Window::default()
    };
    requests(&w, per)
}

fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn posts_protobuf_with_the_headers_given_gzipped_when_asked() {
    let (url, server) = serve(vec![ok(), ok()]);
    let reqs = some_requests(50, 0);
    let c = client(
        &url,
        Compression::Gzip,
        "x-api-key=s3cr3t%2C1,x-tenant=core",
    );
    let report = send(&c, &reqs, &RetryPolicy::default()).unwrap();
    assert_eq!((report.requests, report.spans, report.attempts), (1, 50, 1));
    let c = plain(&format!("{url}/custom/path?x=1"));
    send(&c, &reqs, &RetryPolicy::default()).unwrap();
    let got = server.join().unwrap();
    let gz = &got[0];
    assert_eq!(gz.line, "POST /v1/traces HTTP/1.1");
    assert_eq!(gz.header("content-type"), Some("application/x-protobuf"));
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    assert_eq!(gz.header("x-api-key"), Some("s3cr3t,1"));
    assert_eq!(gz.header("x-tenant"), Some("core"));
    assert_eq!(gz.header("host"), Some(&url["http://".len()..]));
    assert_eq!(gunzip(&gz.body), encode(&reqs[0]));
    assert!(gz.body.len() * 4 < encode(&reqs[0]).len(), "compressed");
    let raw = &got[1];
    assert_eq!(raw.line, "POST /custom/path?x=1 HTTP/1.1");
    assert_eq!(raw.header("content-encoding"), None);
    assert_eq!(raw.body, encode(&reqs[0]));
    // The client's debug form names the headers, never their values.
    assert!(!format!("{c:?}").contains("s3cr3t"));
}

#[test]
fn a_503_with_retry_after_is_retried_after_that_delay() {
    let (url, server) = serve(vec![
        reply("503 Service Unavailable", "Retry-After: 2\r\n", b"busy"),
        reply(
            "429 Too Many Requests",
            "Retry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n",
            b"",
        ),
        ok(),
    ]);
    let (policy, asked) = recorded(60 * SEC);
    let reqs = some_requests(3, 0);
    let report = send(&plain(&url), &reqs, &policy).unwrap();
    // Retry-After: 2 s; an HTTP date is ignored: the backoff, which doubled after the first
    // wait.
    assert_eq!(*asked.lock().unwrap(), [2 * SEC, 2 * SEC]);
    assert_eq!((report.requests, report.spans, report.attempts), (1, 3, 3));
    assert_eq!(report.waited, 4 * SEC);
    let got = server.join().unwrap();
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|r| r.body == encode(&reqs[0])));
}

#[test]
fn backoff_doubles_up_to_its_cap_and_the_budget_bounds_the_send() {
    let busy = reply("502 Bad Gateway", "", b"");
    let (url, server) = serve(vec![busy.clone(); 6]);
    let (policy, asked) = recorded(12 * SEC);
    let err = send(&plain(&url), some_requests(1, 0), &policy).unwrap_err();
    // 1 + 2 + 4 + 4 = 11 s waited; the next 4 s would pass the 12 s budget.
    assert_eq!(*asked.lock().unwrap(), [SEC, 2 * SEC, 4 * SEC, 4 * SEC]);
    assert_eq!(err.report.requests, 0);
    match &err.error {
        Error::GaveUp { attempts, last, .. } => {
            assert_eq!(*attempts, 5);
            assert!(matches!(**last, Error::Status { status: 502, .. }));
        }
        e => panic!("{e}"),
    }
    assert!(
        err.to_string().starts_with("gave up after 5 attempts"),
        "{err}"
    );
    // The server expects a sixth connection that never comes.
    drop(server);
}

#[test]
fn a_wait_cut_short_gives_up_without_another_attempt() {
    let (url, server) = serve(vec![reply(
        "503 Service Unavailable",
        "Retry-After: 1\r\n",
        b"",
    )]);
    let policy = RetryPolicy {
        sleep: Arc::new(|_| false),
        ..RetryPolicy::default()
    };
    let err = send(&plain(&url), some_requests(1, 0), &policy).unwrap_err();
    assert!(
        matches!(err.error, Error::GaveUp { attempts: 1, .. }),
        "{err}"
    );
    assert_eq!(server.join().unwrap().len(), 1);
}

#[test]
fn the_budget_is_per_request() {
    let busy = reply("503 Service Unavailable", "Retry-After: 2\r\n", b"");
    let (url, server) = serve(vec![busy.clone(), ok(), busy, ok()]);
    // 2 s of waiting per request, within a 3 s budget each (not in all).
    let (policy, asked) = recorded(3 * SEC);
    let report = send(&plain(&url), some_requests(2, 1), &policy).unwrap();
    assert_eq!(*asked.lock().unwrap(), [2 * SEC, 2 * SEC]);
    assert_eq!((report.requests, report.spans, report.attempts), (2, 2, 4));
    server.join().unwrap();
}

#[test]
fn a_retry_after_past_the_budget_gives_up_without_waiting() {
    let (url, server) = serve(vec![reply(
        "429 Too Many Requests",
        "Retry-After: 120\r\n",
        b"",
    )]);
    let (policy, asked) = recorded(60 * SEC);
    let err = send(&plain(&url), some_requests(1, 0), &policy).unwrap_err();
    assert!(asked.lock().unwrap().is_empty());
    assert!(
        matches!(err.error, Error::GaveUp { attempts: 1, .. }),
        "{err}"
    );
    server.join().unwrap();
}

#[test]
fn refusals_are_not_retried_and_say_what_to_do() {
    let status = {
        // google.rpc.Status { code: 3, message: "bad span id" }
        let mut b = vec![0x08, 0x03, 0x12, 11];
        b.extend_from_slice(b"bad span id");
        b
    };
    let (url, server) = serve(vec![
        ok(),
        reply(
            "400 Bad Request",
            "Content-Type: application/x-protobuf\r\n",
            &status,
        ),
        reply("401 Unauthorized", "", b"missing API key"),
    ]);
    let (policy, asked) = recorded(60 * SEC);
    let err = send(&plain(&url), some_requests(4, 2), &policy).unwrap_err();
    assert!(asked.lock().unwrap().is_empty());
    assert_eq!((err.report.requests, err.report.spans), (1, 2));
    assert_eq!(
        err.to_string(),
        "the collector answered HTTP 400 (the request is refused; not retried): bad span id"
    );
    let err = send(&plain(&url), some_requests(1, 0), &policy).unwrap_err();
    assert!(asked.lock().unwrap().is_empty());
    assert!(
        err.to_string().starts_with(
            "the collector answered HTTP 401 (the request is refused; not retried: check the \
             API key"
        ),
        "{err}"
    );
    assert!(err.to_string().ends_with(": missing API key"), "{err}");
    assert_eq!(server.join().unwrap().len(), 3);
}

#[test]
fn partial_success_is_reported() {
    let answer = ExportTraceServiceResponse {
        partial_success: Some(ExportTracePartialSuccess {
            rejected_spans: 2,
            error_message: "2 spans too old".into(),
        }),
    }
    .encode_to_vec();
    let (url, server) = serve(vec![reply("200 OK", "", &answer), ok()]);
    let (policy, _) = recorded(60 * SEC);
    let report = send(&plain(&url), some_requests(6, 3), &policy).unwrap();
    assert_eq!(
        (report.requests, report.spans, report.rejected_spans),
        (2, 6, 2)
    );
    assert_eq!(report.messages, ["2 spans too old"]);
    server.join().unwrap();
}

#[test]
fn a_server_that_hangs_times_out_and_is_retried_within_the_budget() {
    let (url, server) = serve(vec![Then::Hang(3 * SEC), Then::Hang(3 * SEC)]);
    let (policy, asked) = recorded(Duration::from_millis(1500));
    let policy = RetryPolicy {
        timeout: Duration::from_millis(300),
        initial_backoff: Duration::from_millis(100),
        ..policy
    };
    let t0 = Instant::now();
    let err = send(&plain(&url), some_requests(1, 0), &policy).unwrap_err();
    assert!(t0.elapsed() < 3 * SEC, "{:?}", t0.elapsed());
    match &err.error {
        Error::GaveUp { last, .. } => {
            assert!(matches!(**last, Error::TimedOut { .. }), "{last}");
            assert!(
                last.to_string().contains("did not answer within 300 ms"),
                "{last}"
            );
        }
        e => panic!("{e}"),
    }
    assert!(!asked.lock().unwrap().is_empty());
    drop(server);
}

#[test]
fn a_timeout_cut_short_by_the_budget_names_the_timeout_as_set() {
    // `--timeout 1s --retry-for 1.5s` against a collector that hangs: the second attempt has
    // what the budget left (about 400 ms), and the message still says the 1 s the user gave.
    let (url, server) = serve(vec![Then::Hang(3 * SEC), Then::Hang(3 * SEC)]);
    let (policy, _) = recorded(Duration::from_millis(1500));
    let policy = RetryPolicy {
        timeout: SEC,
        initial_backoff: Duration::from_millis(100),
        ..policy
    };
    let err = send(&plain(&url), some_requests(1, 0), &policy).unwrap_err();
    match &err.error {
        Error::GaveUp { attempts, last, .. } => {
            assert_eq!(*attempts, 2, "{last}");
            let text = last.to_string();
            assert!(
                text.contains("the retry budget had left (of the 1 s timeout): timed out"),
                "{text}"
            );
        }
        e => panic!("{e}"),
    }
    drop(server);
}

#[test]
fn a_refused_connection_says_so_and_is_retried() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    let (policy, asked) = recorded(10 * SEC);
    let err = send(&plain(&url), some_requests(1, 0), &policy).unwrap_err();
    assert_eq!(*asked.lock().unwrap(), [SEC, 2 * SEC, 4 * SEC]);
    match &err.error {
        Error::GaveUp {
            attempts: 4, last, ..
        } => {
            assert!(last.to_string().contains("connection refused"), "{last}")
        }
        e => panic!("{e}"),
    }
}

#[test]
fn a_server_that_closes_mid_response_is_retried() {
    let cut = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part".to_vec();
    let (url, server) = serve(vec![Then::Reply(cut), Then::Reply(Vec::new()), ok()]);
    let (policy, asked) = recorded(60 * SEC);
    let report = send(&plain(&url), some_requests(1, 0), &policy).unwrap();
    assert_eq!((report.requests, report.attempts), (1, 3));
    assert_eq!(asked.lock().unwrap().len(), 2);
    server.join().unwrap();
}

#[test]
fn an_answer_that_is_not_http_is_an_error_not_retried() {
    let (url, server) = serve(vec![Then::Reply(b"SSH-2.0-OpenSSH\r\n\r\n".to_vec())]);
    let (policy, asked) = recorded(60 * SEC);
    let err = send(&plain(&url), some_requests(1, 0), &policy).unwrap_err();
    assert!(matches!(err.error, Error::BadResponse { .. }), "{err}");
    assert!(asked.lock().unwrap().is_empty());
    server.join().unwrap();
}
