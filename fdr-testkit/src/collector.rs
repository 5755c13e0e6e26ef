//! A test OpenTelemetry collector: an OTLP/HTTP endpoint on 127.0.0.1, plain or over TLS with
//! a self-signed certificate made when it starts, that keeps connections open as real
//! collectors do, answers each request as a script says (200, 503 with Retry-After, hang until
//! released, cut), refuses with 401 a request without the header it requires, and records
//! every request: when it came, its headers, its body (gunzipped).
//!
//! ```
//! use fdr_testkit::collector::{Answer, OtlpCollector};
//! let c = OtlpCollector::start(&[Answer::Busy]);
//! assert!(c.url.starts_with("http://127.0.0.1:"));
//! assert!(c.accepted().is_empty());
//! ```

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the test collector does with one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Answers 200 (full success).
    Ok,
    /// Answers 503 with `Retry-After: 1`.
    Busy,
    /// Answers nothing until released, then 200.
    Hang,
    /// Closes the connection without an answer.
    Cut,
}

/// A request as the collector read it.
#[derive(Clone, Debug)]
pub struct Request {
    /// When its head was read.
    pub at: Instant,
    /// `POST /v1/traces HTTP/1.1`.
    pub line: String,
    /// Names in lower case, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body, gunzipped when it came with `Content-Encoding: gzip`.
    pub body: Vec<u8>,
}

impl Request {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How a collector is started.
#[derive(Clone, Debug, Default)]
pub struct Setup<'a> {
    /// The first requests' answers, in order; then 200.
    pub script: &'a [Answer],
    /// Serve HTTPS with a self-signed certificate for 127.0.0.1, whose PEM file is
    /// [`OtlpCollector::ca`].
    pub tls: bool,
    /// Answer 401 to a request without this header and value (before the script).
    pub require: Option<(&'a str, &'a str)>,
}

/// A collector on 127.0.0.1. Its threads end with the test process.
pub struct OtlpCollector {
    /// Where it listens: `http://127.0.0.1:PORT`, or `https://` for a TLS collector.
    pub url: String,
    /// The certificate to trust, for a TLS collector.
    pub ca: Option<PathBuf>,
    /// The bodies answered with 200, in the order answered (each kept just before its answer
    /// is written).
    accepted: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Every request read, in order.
    requests: Arc<Mutex<Vec<Request>>>,
    /// Connections taken.
    pub connections: Arc<AtomicUsize>,
    released: Arc<AtomicBool>,
}

/// What every connection's thread shares.
struct Shared {
    script: Mutex<VecDeque<Answer>>,
    require: Option<(String, String)>,
    accepted: Arc<Mutex<Vec<Vec<u8>>>>,
    requests: Arc<Mutex<Vec<Request>>>,
    released: Arc<AtomicBool>,
}

impl OtlpCollector {
    /// A plain-HTTP collector answering as `script` says.
    pub fn start(script: &[Answer]) -> OtlpCollector {
        OtlpCollector::with(Setup {
            script,
            ..Setup::default()
        })
    }

    /// A collector started as `setup` says.
    ///
    /// ```
    /// use fdr_testkit::collector::{OtlpCollector, Setup};
    /// let c = OtlpCollector::with(Setup {
    ///     tls: true,
    ///     require: Some(("x-api-key", "secret")),
    ///     ..Setup::default()
    /// });
    /// assert!(c.url.starts_with("https://127.0.0.1:"));
    /// assert!(c.ca.as_ref().unwrap().exists());
    /// ```
    pub fn with(setup: Setup<'_>) -> OtlpCollector {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let (tls, ca) = if setup.tls {
            let (config, pem) = tls_config();
            let path =
                crate::logs::scratch(&format!("collector-ca-{}", addr.port())).join("ca.pem");
            std::fs::write(&path, pem).unwrap();
            (Some(Arc::new(config)), Some(path))
        } else {
            (None, None)
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let c = OtlpCollector {
            url: format!("{scheme}://{addr}"),
            ca,
            accepted: Arc::default(),
            requests: Arc::default(),
            connections: Arc::default(),
            released: Arc::default(),
        };
        let shared = Arc::new(Shared {
            script: Mutex::new(setup.script.iter().copied().collect()),
            require: setup.require.map(|(n, v)| (n.to_string(), v.to_string())),
            accepted: c.accepted.clone(),
            requests: c.requests.clone(),
            released: c.released.clone(),
        });
        let connections = c.connections.clone();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { continue };
                connections.fetch_add(1, Ordering::SeqCst);
                s.set_read_timeout(Some(Duration::from_secs(30))).ok();
                let shared = shared.clone();
                let tls = tls.clone();
                std::thread::spawn(move || match tls {
                    Some(config) => {
                        let Ok(conn) = rustls::ServerConnection::new(config) else {
                            return;
                        };
                        serve(rustls::StreamOwned::new(conn, s), &shared)
                    }
                    None => serve(s, &shared),
                });
            }
        });
        c
    }

    /// Lets hung requests answer.
    pub fn release(&self) {
        self.released.store(true, Ordering::SeqCst);
    }

    /// The bodies answered with 200.
    pub fn accepted(&self) -> Vec<Vec<u8>> {
        self.accepted.lock().unwrap().clone()
    }

    /// Every request read so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

/// A server configuration with a certificate for 127.0.0.1 made now, and its PEM.
fn tls_config() -> (rustls::ServerConfig, String) {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        made.signing_key.serialize_der(),
    ));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![made.cert.der().clone()], key)
    .unwrap();
    (config, made.cert.pem())
}

const OK: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
const BUSY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n";
const UNAUTHORIZED: &[u8] =
    b"HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nContent-Length: 15\r\n\r\nmissing API key";

/// Answers the requests of one connection until it closes.
fn serve(mut s: impl Read + Write, shared: &Shared) {
    while let Some(r) = read_request(&mut s) {
        assert_eq!(r.line, "POST /v1/traces HTTP/1.1");
        assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
        shared.requests.lock().unwrap().push(r.clone());
        if let Some((name, value)) = &shared.require {
            if r.header(name) != Some(value) {
                if s.write_all(UNAUTHORIZED).is_err() {
                    return;
                }
                continue;
            }
        }
        let answer = shared
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Answer::Ok);
        match answer {
            Answer::Cut => return,
            Answer::Busy => {
                if s.write_all(BUSY).is_err() {
                    return;
                }
                continue;
            }
            Answer::Hang => {
                let until = Instant::now() + Duration::from_secs(60);
                while !shared.released.load(Ordering::SeqCst) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            Answer::Ok => {}
        }
        // Kept before it is answered: a client that has seen the answer (a test that saw
        // `windows_sent` move) finds the body here (kept after, it could look first).
        shared.accepted.lock().unwrap().push(r.body);
        if s.write_all(OK).and_then(|()| s.flush()).is_err() {
            return;
        }
    }
}

/// One request with a `Content-Length` body, gunzipped when it says it is gzipped; `None`
/// when the connection ends first.
fn read_request(s: &mut impl Read) -> Option<Request> {
    let r = crate::otlp::read_request(s)?;
    let gzipped = r.header("content-encoding") == Some("gzip");
    let mut body = r.body;
    if gzipped {
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_end(&mut plain)
            .expect("a gzip body that gunzips");
        body = plain;
    }
    Some(Request {
        at: r.at,
        line: r.line,
        headers: r.headers,
        body,
    })
}
