//! A small blocking HTTP/1.1 client on [`std::net::TcpStream`], enough for OTLP/HTTP: [`post`]
//! one body to an `http://host:port[/path]` URL within a time limit, and [`send`] export
//! requests with the retries the OTLP specification asks for.
//!
//! What it does not do: TLS (an `https://` URL is an error that says so: use the collector's
//! plain-HTTP receiver, or a local OpenTelemetry Collector that forwards over TLS), proxies,
//! redirects, authentication, compression, keeping connections open (each request is
//! `Connection: close`). Name resolution uses the system resolver, which the time limit does
//! not bound; connecting, writing and reading are bounded.
//!
//! No threads: [`post`] and [`send`] block the caller, which chooses where they run (the
//! runtime: its background writer; the `fdr` command: its main thread).
//!
//! ```no_run
//! use fdr_otlp::http::{send, RetryPolicy};
//! use fdr_otlp::spans::{requests, Window};
//! let reqs = requests(&Window::default(), 1000);
//! let report = send("http://localhost:4318", &reqs, &RetryPolicy::default())?;
//! println!("sent {} spans in {} requests", report.spans, report.requests);
//! # Ok::<(), fdr_otlp::http::SendError>(())
//! ```

use std::borrow::Borrow;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message;

use crate::proto::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use crate::spans::{encode, span_count};

/// Where OTLP/HTTP exporters post traces, when the URL gives no path.
///
/// ```
/// use fdr_otlp::http::{Endpoint, TRACES_PATH};
/// assert_eq!(Endpoint::parse("http://localhost:4318")?.path, TRACES_PATH);
/// # Ok::<(), fdr_otlp::http::Error>(())
/// ```
pub const TRACES_PATH: &str = "/v1/traces";

/// The content type of an OTLP/HTTP protobuf body.
///
/// ```
/// assert_eq!(fdr_otlp::http::PROTOBUF, "application/x-protobuf");
/// ```
pub const PROTOBUF: &str = "application/x-protobuf";

/// The largest response body read (1 MiB); a larger one is an error.
///
/// ```
/// assert_eq!(fdr_otlp::http::MAX_RESPONSE_BODY, 1 << 20);
/// ```
pub const MAX_RESPONSE_BODY: usize = 1 << 20;

/// The largest response head (status line and headers) read.
const MAX_HEAD: usize = 64 << 10;

/// Statuses that the OTLP specification says to retry.
///
/// ```
/// assert!(fdr_otlp::http::RETRYABLE_STATUSES.contains(&503));
/// ```
pub const RETRYABLE_STATUSES: [u16; 4] = [429, 502, 503, 504];

/// Why an exchange failed.
///
/// ```
/// use fdr_otlp::http::{post, Error};
/// let e = post("https://collector:4318", b"", "application/x-protobuf", std::time::Duration::from_secs(1))
///     .unwrap_err();
/// assert!(matches!(e, Error::Url(_)));
/// assert!(e.to_string().contains("TLS (https) is not supported"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The URL is not one this client handles; the text says why.
    Url(String),
    /// The host name did not resolve.
    Resolve {
        /// The host.
        host: String,
        /// Why.
        err: io::Error,
    },
    /// No connection could be made.
    Connect {
        /// The address tried last.
        addr: String,
        /// Why.
        err: io::Error,
    },
    /// The exchange did not finish within its time limit.
    TimedOut {
        /// The server.
        addr: String,
        /// What was being done: `connecting`, `sending the request`, `reading the response`.
        during: &'static str,
        /// The limit.
        limit: Duration,
    },
    /// The connection failed.
    Io {
        /// The server.
        addr: String,
        /// What was being done.
        during: &'static str,
        /// Why.
        err: io::Error,
    },
    /// The server closed the connection before the whole response was read.
    Closed {
        /// The server.
        addr: String,
        /// What was being read.
        during: &'static str,
    },
    /// The server's answer is not an HTTP/1.x response this client reads.
    BadResponse {
        /// The server.
        addr: String,
        /// What is wrong with it.
        what: String,
    },
    /// The collector answered with a status that is not success. From [`send`], a status
    /// that is not retried (a 4xx other than 429, or any other non-2xx status not in
    /// [`RETRYABLE_STATUSES`]), or inside [`Error::GaveUp`], the last retryable one.
    Status {
        /// The HTTP status.
        status: u16,
        /// The collector's message: the `google.rpc.Status` message of an OTLP error body, or
        /// the start of a text body.
        message: String,
    },
    /// Retryable failures until the retry budget ran out.
    GaveUp {
        /// Attempts made.
        attempts: u32,
        /// Time spent, waiting included.
        spent: Duration,
        /// The last failure.
        last: Box<Error>,
    },
}

impl Error {
    /// True for a failure that may pass if tried again (the OTLP specification's transient
    /// failures): no connection, a timeout, a connection cut, a host that did not resolve, a
    /// status of [`RETRYABLE_STATUSES`].
    ///
    /// ```
    /// use fdr_otlp::http::Error;
    /// assert!(Error::Status { status: 503, message: String::new() }.is_retryable());
    /// assert!(!Error::Status { status: 400, message: String::new() }.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Resolve { .. }
            | Error::Connect { .. }
            | Error::TimedOut { .. }
            | Error::Io { .. }
            | Error::Closed { .. } => true,
            Error::Status { status, .. } => RETRYABLE_STATUSES.contains(status),
            Error::Url(_) | Error::BadResponse { .. } | Error::GaveUp { .. } => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Url(what) => f.write_str(what),
            Error::Resolve { host, err } => write!(f, "cannot resolve the host {host}: {err}"),
            Error::Connect { addr, err } if err.kind() == io::ErrorKind::ConnectionRefused => {
                write!(
                    f,
                    "cannot connect to {addr}: connection refused (is the collector running and \
                     listening there?)"
                )
            }
            Error::Connect { addr, err } => write!(f, "cannot connect to {addr}: {err}"),
            Error::TimedOut {
                addr,
                during,
                limit,
            } => write!(
                f,
                "{addr} did not answer within {}: timed out {during}",
                seconds(*limit)
            ),
            Error::Io { addr, during, err } => {
                write!(f, "the connection to {addr} failed {during}: {err}")
            }
            Error::Closed { addr, during } => write!(
                f,
                "{addr} closed the connection in the middle of the response ({during})"
            ),
            Error::BadResponse { addr, what } => {
                write!(f, "{addr} did not answer as an HTTP/1.1 server: {what}")
            }
            Error::Status { status, message } => {
                write!(f, "the collector answered HTTP {status}")?;
                if !RETRYABLE_STATUSES.contains(status) && (400..500).contains(status) {
                    f.write_str(" (the request is refused; not retried)")?;
                }
                if !message.is_empty() {
                    write!(f, ": {message}")?;
                }
                Ok(())
            }
            Error::GaveUp {
                attempts,
                spent,
                last,
            } => write!(
                f,
                "gave up after {attempts} attempt{} in {}: {last}",
                if *attempts == 1 { "" } else { "s" },
                seconds(*spent)
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Resolve { err, .. } | Error::Connect { err, .. } | Error::Io { err, .. } => {
                Some(err)
            }
            Error::GaveUp { last, .. } => Some(last.as_ref()),
            _ => None,
        }
    }
}

/// `1.5 s`, `200 ms`.
fn seconds(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// A parsed `http://host[:port][/path]` URL.
///
/// ```
/// use fdr_otlp::http::Endpoint;
/// let e = Endpoint::parse("http://collector:4318")?;
/// assert_eq!((e.host.as_str(), e.port, e.path.as_str()), ("collector", 4318, "/v1/traces"));
/// let e = Endpoint::parse("http://[::1]:9000/otlp/v1/traces")?;
/// assert_eq!((e.host.as_str(), e.port, e.path.as_str()), ("::1", 9000, "/otlp/v1/traces"));
/// # Ok::<(), fdr_otlp::http::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The host name or address (an IPv6 address without its brackets).
    pub host: String,
    /// The port (80 when the URL has none).
    pub port: u16,
    /// The path and query posted to: the URL's, or [`TRACES_PATH`] when it has none (or `/`).
    pub path: String,
    /// `host:port` as the `Host` header says it.
    authority: String,
}

impl Endpoint {
    /// Parses `url`: `http://` (any case), a host (a name, an IPv4 address, or an IPv6 address
    /// in brackets), an optional port, an optional path and query; a fragment is dropped. An
    /// `https://` URL, user info, a missing host or a bad port are errors that say so.
    ///
    /// ```
    /// use fdr_otlp::http::Endpoint;
    /// assert_eq!(Endpoint::parse("HTTP://h/")?.path, "/v1/traces");
    /// assert_eq!(Endpoint::parse("http://h")?.port, 80);
    /// assert!(Endpoint::parse("http://h:0").is_err());
    /// assert!(Endpoint::parse("ftp://h").is_err());
    /// # Ok::<(), fdr_otlp::http::Error>(())
    /// ```
    pub fn parse(url: &str) -> Result<Endpoint, Error> {
        let url = url.trim();
        let bad = |why: &str| Error::Url(format!("{url}: {why}"));
        let lower = url.to_ascii_lowercase();
        if lower.starts_with("https://") {
            return Err(bad(
                "TLS (https) is not supported: use the collector's plain-HTTP OTLP receiver \
                 (http://HOST:4318), or run a local OpenTelemetry Collector that receives \
                 plain HTTP and forwards over TLS",
            ));
        }
        if !lower.starts_with("http://") {
            return Err(bad(
                "not an http:// URL (expected http://HOST[:PORT][/PATH], e.g. \
                 http://localhost:4318)",
            ));
        }
        let rest = &url["http://".len()..];
        let rest = rest.split('#').next().unwrap_or("");
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        if authority.contains('@') {
            return Err(bad("user names and passwords in the URL are not supported"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let close = v6
                .find(']')
                .ok_or_else(|| bad("an IPv6 address without its closing ]"))?;
            let after = &v6[close + 1..];
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(bad("unexpected text after the IPv6 address")),
            };
            (&v6[..close], port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        if host.contains(':') && !authority.starts_with('[') {
            return Err(bad(
                "an IPv6 address must be in brackets: http://[::1]:4318",
            ));
        }
        let port = match port {
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(bad("the port is not a number from 1 to 65535")),
            },
        };
        let path = match path {
            "" | "/" => TRACES_PATH.to_string(),
            p if p.starts_with('?') => format!("{TRACES_PATH}{p}"),
            p => p.to_string(),
        };
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(bad("spaces or control characters in the path"));
        }
        Ok(Endpoint {
            host: host.to_string(),
            port,
            path,
            authority: authority.to_string(),
        })
    }

    /// `host:port`, for messages (`[::1]:4318` for IPv6).
    ///
    /// ```
    /// assert_eq!(fdr_otlp::http::Endpoint::parse("http://h:1/x")?.address(), "h:1");
    /// # Ok::<(), fdr_otlp::http::Error>(())
    /// ```
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Whether a connection to the endpoint can be made within `limit` (then closed at once):
    /// a cheap check before preparing a request for a collector that was just unreachable.
    ///
    /// ```
    /// let free = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    /// let e = fdr_otlp::http::Endpoint::parse(&format!("http://127.0.0.1:{free}"))?;
    /// assert!(e.reachable(std::time::Duration::from_secs(1)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reachable(&self, limit: Duration) -> Result<(), Error> {
        self.connect(Instant::now() + limit, limit).map(drop)
    }

    /// Posts `body` as `content_type`, the whole exchange within `timeout` (name resolution
    /// aside); see [`post`].
    ///
    /// ```no_run
    /// use fdr_otlp::http::Endpoint;
    /// let e = Endpoint::parse("http://localhost:4318")?;
    /// let r = e.post(b"", "application/x-protobuf", std::time::Duration::from_secs(5))?;
    /// println!("HTTP {}", r.status);
    /// # Ok::<(), fdr_otlp::http::Error>(())
    /// ```
    pub fn post(
        &self,
        body: &[u8],
        content_type: &str,
        timeout: Duration,
    ) -> Result<Response, Error> {
        let deadline = Instant::now() + timeout;
        let addr = self.address();
        let mut stream = self.connect(deadline, timeout)?;
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: fdr-otlp/{}\r\nContent-Type: {}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.path,
            self.authority,
            env!("CARGO_PKG_VERSION"),
            content_type,
            body.len()
        )
        .into_bytes();
        head.extend_from_slice(body);
        let mut conn = Conn {
            stream: &mut stream,
            buf: Vec::new(),
            pos: 0,
            deadline,
            limit: timeout,
            addr,
        };
        if let Err(e) = conn.write_all(&head) {
            // A server that refuses a request may answer and close before reading it all: its
            // answer says more than the broken pipe.
            if matches!(&e, Error::Io { err, .. }
                if matches!(err.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset))
            {
                if let Ok(r) = conn.response() {
                    return Ok(r);
                }
            }
            return Err(e);
        }
        conn.response()
    }

    fn connect(&self, deadline: Instant, limit: Duration) -> Result<TcpStream, Error> {
        let addrs: Vec<SocketAddr> = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|err| Error::Resolve {
                host: self.host.clone(),
                err,
            })?
            .collect();
        let mut last = None;
        for a in &addrs {
            let left = remaining(deadline).ok_or_else(|| Error::TimedOut {
                addr: a.to_string(),
                during: "connecting",
                limit,
            })?;
            match TcpStream::connect_timeout(a, left) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    return Ok(s);
                }
                Err(err) if is_timeout(&err) => {
                    last = Some(Error::TimedOut {
                        addr: a.to_string(),
                        during: "connecting",
                        limit,
                    })
                }
                Err(err) => {
                    last = Some(Error::Connect {
                        addr: a.to_string(),
                        err,
                    })
                }
            }
        }
        Err(last.unwrap_or_else(|| Error::Resolve {
            host: self.host.clone(),
            err: io::Error::new(io::ErrorKind::NotFound, "no address"),
        }))
    }
}

/// What the server answered.
///
/// ```
/// let r = fdr_otlp::http::Response { status: 200, retry_after: None, body: Vec::new() };
/// assert!(r.is_success());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The `Retry-After` header in its seconds form (an HTTP date is ignored: `None`).
    pub retry_after: Option<Duration>,
    /// The body, chunked encoding removed; at most [`MAX_RESPONSE_BODY`] bytes.
    pub body: Vec<u8>,
}

impl Response {
    /// A 2xx status.
    ///
    /// ```
    /// let r = fdr_otlp::http::Response { status: 503, retry_after: None, body: Vec::new() };
    /// assert!(!r.is_success());
    /// ```
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Posts `body` to `url` (`http://host[:port][/path]`; the path defaults to [`TRACES_PATH`])
/// with `Content-Type: content_type`, `Content-Length` and `Connection: close`, and reads the
/// response (`Content-Length`, chunked, or up to the close; at most [`MAX_RESPONSE_BODY`]
/// bytes). Connecting, sending and reading together take at most `timeout` (name resolution
/// aside), else [`Error::TimedOut`]. Any status is an `Ok` [`Response`]; [`send`] decides what
/// a status means.
///
/// ```no_run
/// let r = fdr_otlp::http::post("http://localhost:4318", b"", fdr_otlp::http::PROTOBUF,
///                              std::time::Duration::from_secs(10))?;
/// assert!(r.is_success());
/// # Ok::<(), fdr_otlp::http::Error>(())
/// ```
pub fn post(
    url: &str,
    body: &[u8],
    content_type: &str,
    timeout: Duration,
) -> Result<Response, Error> {
    Endpoint::parse(url)?.post(body, content_type, timeout)
}

fn remaining(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

/// One connection's exchange, every step bounded by the deadline.
struct Conn<'a> {
    stream: &'a mut TcpStream,
    buf: Vec<u8>,
    pos: usize,
    deadline: Instant,
    limit: Duration,
    addr: String,
}

impl Conn<'_> {
    fn timed_out(&self, during: &'static str) -> Error {
        Error::TimedOut {
            addr: self.addr.clone(),
            during,
            limit: self.limit,
        }
    }

    fn failed(&self, during: &'static str, err: io::Error) -> Error {
        if is_timeout(&err) {
            self.timed_out(during)
        } else {
            Error::Io {
                addr: self.addr.clone(),
                during,
                err,
            }
        }
    }

    fn bad(&self, what: impl Into<String>) -> Error {
        Error::BadResponse {
            addr: self.addr.clone(),
            what: what.into(),
        }
    }

    fn write_all(&mut self, mut data: &[u8]) -> Result<(), Error> {
        const DURING: &str = "sending the request";
        while !data.is_empty() {
            let left = remaining(self.deadline).ok_or_else(|| self.timed_out(DURING))?;
            self.stream
                .set_write_timeout(Some(left))
                .map_err(|e| self.failed(DURING, e))?;
            match self.stream.write(data) {
                Ok(0) => {
                    return Err(self.failed(DURING, io::ErrorKind::WriteZero.into()));
                }
                Ok(n) => data = &data[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.failed(DURING, e)),
            }
        }
        let _ = self.stream.flush();
        Ok(())
    }

    /// Reads more into the buffer; `Ok(false)` at the end of the stream.
    fn fill(&mut self, during: &'static str) -> Result<bool, Error> {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        let mut chunk = [0u8; 8192];
        loop {
            let left = remaining(self.deadline).ok_or_else(|| self.timed_out(during))?;
            self.stream
                .set_read_timeout(Some(left))
                .map_err(|e| self.failed(during, e))?;
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A reset after some of the response: the response was cut.
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(false),
                Err(e) => return Err(self.failed(during, e)),
            }
        }
    }

    fn closed(&self, during: &'static str) -> Error {
        Error::Closed {
            addr: self.addr.clone(),
            during,
        }
    }

    /// One line without its CRLF (or LF).
    fn line(&mut self, during: &'static str, max: usize) -> Result<Vec<u8>, Error> {
        loop {
            if let Some(i) = self.buf[self.pos..].iter().position(|&b| b == b'\n') {
                let mut line = self.buf[self.pos..self.pos + i].to_vec();
                self.pos += i + 1;
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            if self.buf.len() - self.pos > max {
                return Err(self.bad(format!("a line over {max} bytes ({during})")));
            }
            if !self.fill(during)? {
                return Err(self.closed(during));
            }
        }
    }

    fn take(&mut self, n: usize, during: &'static str, out: &mut Vec<u8>) -> Result<(), Error> {
        let mut want = n;
        while want > 0 {
            if self.pos == self.buf.len() && !self.fill(during)? {
                return Err(self.closed(during));
            }
            let k = want.min(self.buf.len() - self.pos);
            out.extend_from_slice(&self.buf[self.pos..self.pos + k]);
            self.pos += k;
            want -= k;
        }
        Ok(())
    }

    fn response(&mut self) -> Result<Response, Error> {
        const STATUS: &str = "reading the status line";
        const HEADERS: &str = "reading the headers";
        let (status, headers) = loop {
            let line = self.line(STATUS, MAX_HEAD)?;
            let text = String::from_utf8_lossy(&line).into_owned();
            let status = parse_status_line(&text)
                .ok_or_else(|| self.bad(format!("a bad status line {:?}", excerpt(&text))))?;
            let mut headers: Vec<(String, String)> = Vec::new();
            let mut size = line.len();
            loop {
                let h = self.line(HEADERS, MAX_HEAD)?;
                if h.is_empty() {
                    break;
                }
                size += h.len();
                if size > MAX_HEAD {
                    return Err(self.bad(format!("headers over {MAX_HEAD} bytes")));
                }
                let h = String::from_utf8_lossy(&h).into_owned();
                let (name, value) = h
                    .split_once(':')
                    .ok_or_else(|| self.bad(format!("a bad header line {:?}", excerpt(&h))))?;
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
            }
            // Interim answers (100 Continue ...) come before the real one.
            if (100..200).contains(&status) && status != 101 {
                continue;
            }
            break (status, headers);
        };
        if status == 101 {
            return Err(self.bad("101 Switching Protocols"));
        }
        let header = |name: &str| {
            headers
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        let retry_after = header("retry-after").and_then(parse_retry_after);
        let chunked = header("transfer-encoding").is_some_and(|v| {
            v.rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"))
        });
        let mut body = Vec::new();
        if status == 204 || status == 304 {
        } else if chunked {
            self.chunked(&mut body)?;
        } else if let Some(len) = header("content-length") {
            let n: usize = len
                .parse()
                .map_err(|_| self.bad(format!("a bad Content-Length {:?}", excerpt(len))))?;
            if n > MAX_RESPONSE_BODY {
                return Err(self.too_large());
            }
            self.take(n, "reading the body", &mut body)?;
        } else {
            // Delimited by the close.
            loop {
                body.extend_from_slice(&self.buf[self.pos..]);
                self.pos = self.buf.len();
                if body.len() > MAX_RESPONSE_BODY {
                    return Err(self.too_large());
                }
                if !self.fill("reading the body")? {
                    break;
                }
            }
        }
        Ok(Response {
            status,
            retry_after,
            body,
        })
    }

    fn too_large(&self) -> Error {
        self.bad(format!("a response body over {MAX_RESPONSE_BODY} bytes"))
    }

    fn chunked(&mut self, body: &mut Vec<u8>) -> Result<(), Error> {
        const DURING: &str = "reading a chunked body";
        loop {
            let line = self.line(DURING, 1024)?;
            let text = String::from_utf8_lossy(&line).into_owned();
            let size = text.split(';').next().unwrap_or("").trim();
            let n = usize::from_str_radix(size, 16)
                .map_err(|_| self.bad(format!("a bad chunk size {:?}", excerpt(&text))))?;
            if n == 0 {
                // Trailers, up to the empty line.
                while !self.line(DURING, MAX_HEAD)?.is_empty() {}
                return Ok(());
            }
            if body.len().saturating_add(n) > MAX_RESPONSE_BODY {
                return Err(self.too_large());
            }
            self.take(n, DURING, body)?;
            if !self.line(DURING, 2)?.is_empty() {
                return Err(self.bad("a chunk longer than its size"));
            }
        }
    }
}

/// At most 120 characters of `s`, for messages.
fn excerpt(s: &str) -> String {
    let mut out: String = s.chars().take(120).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// `HTTP/1.1 200 OK` → 200.
fn parse_status_line(line: &str) -> Option<u16> {
    let rest = line.strip_prefix("HTTP/1.")?;
    let mut parts = rest.splitn(3, ' ');
    let minor = parts.next()?;
    if minor.len() != 1 || !minor.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    let code = parts.next()?;
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    code.parse().ok().filter(|c| (100..600).contains(c))
}

/// `Retry-After` in seconds; an HTTP date (or anything else) is `None`.
fn parse_retry_after(v: &str) -> Option<Duration> {
    let v = v.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Past a day, a day: a collector does not mean longer.
    Some(Duration::from_secs(
        v.parse::<u64>().unwrap_or(u64::MAX).min(86_400),
    ))
}

/// The `google.rpc.Status` an OTLP collector puts in an error's body (only its code and
/// message: `google/rpc/status.proto` fields 1 and 2).
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// What an error body says: a `google.rpc.Status`'s message, or the start of a text body.
fn error_message(body: &[u8]) -> String {
    if body.is_empty() {
        return String::new();
    }
    if let Ok(text) = std::str::from_utf8(body) {
        if text.chars().all(|c| !c.is_control() || c.is_whitespace()) {
            return excerpt(text.trim());
        }
    }
    match RpcStatus::decode(body) {
        Ok(s) if !s.message.is_empty() => excerpt(&s.message),
        _ => format!("({} bytes of body)", body.len()),
    }
}

/// A function that waits: [`std::thread::sleep`] by default; a test's records the delays asked
/// for, the runtime's may wake early when the program exits.
///
/// ```
/// let instant: fdr_otlp::http::Sleep = std::sync::Arc::new(|_| {});
/// instant(std::time::Duration::from_secs(60));
/// ```
pub type Sleep = Arc<dyn Fn(Duration) + Send + Sync>;

/// How [`send`] waits and retries, as the OTLP specification asks: a retryable failure (see
/// [`Error::is_retryable`]) is tried again after the `Retry-After` the collector gave, else
/// after a backoff that starts at `initial_backoff` and doubles up to `max_backoff` (no
/// jitter); each request's attempts and waits take at most `max_elapsed` in all, each attempt
/// at most `timeout`. As [`send`] stops at the first request that fails, a collector that is
/// down or hangs costs a send about `max_elapsed` (name resolution aside), however many
/// requests it has.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use fdr_otlp::http::RetryPolicy;
/// let asked = Arc::new(Mutex::new(Vec::new()));
/// let log = asked.clone();
/// let policy = RetryPolicy {
///     max_elapsed: Duration::from_secs(5),
///     sleep: Arc::new(move |d| log.lock().unwrap().push(d)),
///     ..RetryPolicy::default()
/// };
/// assert_eq!(policy.timeout, Duration::from_secs(10));
/// ```
#[derive(Clone)]
pub struct RetryPolicy {
    /// One attempt's limit: connect, send, read (default 10 s, the OTLP exporters' default).
    pub timeout: Duration,
    /// The first wait without `Retry-After` (default 1 s).
    pub initial_backoff: Duration,
    /// The longest wait without `Retry-After` (default 30 s).
    pub max_backoff: Duration,
    /// One request's budget, its attempts and waits included (default 60 s). A wait that
    /// would pass it is not waited: the send gives up ([`Error::GaveUp`]). With no budget
    /// (zero), a request is tried once, within `timeout`.
    pub max_elapsed: Duration,
    /// How to wait.
    pub sleep: Sleep,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            timeout: Duration::from_secs(10),
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            max_elapsed: Duration::from_secs(60),
            sleep: Arc::new(std::thread::sleep),
        }
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("timeout", &self.timeout)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("max_elapsed", &self.max_elapsed)
            .finish_non_exhaustive()
    }
}

/// What [`send`] did.
///
/// ```
/// let r = fdr_otlp::http::SendReport::default();
/// assert_eq!((r.requests, r.spans, r.rejected_spans), (0, 0, 0));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SendReport {
    /// Requests the collector accepted.
    pub requests: usize,
    /// Spans in them.
    pub spans: usize,
    /// Spans the collector said it rejected (`partial_success.rejected_spans`), of `spans`.
    pub rejected_spans: u64,
    /// The collector's messages about partial success (a rejection, or a warning).
    pub messages: Vec<String>,
    /// Attempts made, retries included.
    pub attempts: u32,
    /// Time waited between attempts.
    pub waited: Duration,
}

/// A [`send`] that stopped: what was sent before, and why it stopped.
///
/// ```
/// use fdr_otlp::http::{Error, SendError};
/// let e = SendError { report: Box::default(), error: Error::Url("bad".into()) };
/// assert_eq!(e.to_string(), "bad");
/// ```
#[derive(Debug)]
pub struct SendError {
    /// The requests accepted before the one that failed.
    pub report: Box<SendReport>,
    /// Why the send stopped.
    pub error: Error,
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Sends `requests` to `url` in order, each as an OTLP/HTTP protobuf POST, with retries per
/// `policy`: on a status of [`RETRYABLE_STATUSES`] or a connection failure (not connected,
/// timed out, cut), it waits (the `Retry-After` given, else the backoff) and tries again, while
/// that request's attempts and waits stay within `policy.max_elapsed`; any other failure status
/// (a 4xx other than 429 ...) stops it at once ([`Error::Status`]). A 2xx whose body reports
/// partial success counts the rejected spans in the report. Stops at the first request that
/// could not be sent, with what was sent before it ([`SendError`]). `requests` may be a slice,
/// a `Vec`, or [`crate::spans::each_request`], which makes each request as it is sent.
///
/// ```no_run
/// use fdr_otlp::http::{send, RetryPolicy};
/// let reqs = fdr_otlp::spans::requests(&Default::default(), 0);
/// match send("http://localhost:4318", &reqs, &RetryPolicy::default()) {
///     Ok(r) => println!("sent {} spans", r.spans),
///     Err(e) => eprintln!("{} requests sent, then: {e}", e.report.requests),
/// }
/// ```
pub fn send<I>(url: &str, requests: I, policy: &RetryPolicy) -> Result<SendReport, SendError>
where
    I: IntoIterator,
    I::Item: Borrow<ExportTraceServiceRequest>,
{
    let mut report = SendReport::default();
    let endpoint = match Endpoint::parse(url) {
        Ok(e) => e,
        Err(error) => {
            return Err(SendError {
                report: Box::new(report),
                error,
            })
        }
    };
    for r in requests {
        let r = r.borrow();
        let body = encode(r);
        match send_one(&endpoint, &body, policy, &mut report) {
            Ok(resp) => {
                report.requests += 1;
                report.spans += span_count(r);
                if let Ok(answer) = ExportTraceServiceResponse::decode(&resp.body[..]) {
                    if let Some(p) = answer.partial_success {
                        report.rejected_spans += u64::try_from(p.rejected_spans).unwrap_or(0);
                        if !p.error_message.is_empty() {
                            report.messages.push(p.error_message);
                        }
                    }
                }
            }
            Err(error) => {
                return Err(SendError {
                    report: Box::new(report),
                    error,
                })
            }
        }
    }
    Ok(report)
}

/// One body, tried and retried per `policy` within its budget.
fn send_one(
    endpoint: &Endpoint,
    body: &[u8],
    policy: &RetryPolicy,
    report: &mut SendReport,
) -> Result<Response, Error> {
    // Time spent: attempts as measured, waits as asked (so an injected sleep counts too).
    let mut spent = Duration::ZERO;
    let mut backoff = policy.initial_backoff;
    let mut attempts = 0u32;
    loop {
        // After a wait, some budget is left (a wait that would use it up is not made); the
        // first attempt has the whole timeout even with no budget for retries.
        let left = policy.max_elapsed.saturating_sub(spent);
        let limit = match policy.timeout.min(left) {
            l if l.is_zero() => policy.timeout,
            l => l,
        };
        attempts += 1;
        report.attempts += 1;
        let t0 = Instant::now();
        let r = endpoint.post(body, PROTOBUF, limit);
        spent += t0.elapsed();
        let (failure, wait) = match r {
            Ok(resp) if resp.is_success() => return Ok(resp),
            Ok(resp) => {
                let e = Error::Status {
                    status: resp.status,
                    message: error_message(&resp.body),
                };
                let wait = resp.retry_after.unwrap_or(backoff);
                (e, wait)
            }
            Err(e) => (e, backoff),
        };
        if !failure.is_retryable() {
            return Err(failure);
        }
        if spent.saturating_add(wait) >= policy.max_elapsed {
            return Err(Error::GaveUp {
                attempts,
                spent,
                last: Box::new(failure),
            });
        }
        (policy.sleep)(wait);
        spent += wait;
        report.waited += wait;
        backoff = (backoff * 2).min(policy.max_backoff);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::ExportTracePartialSuccess;
    use std::net::TcpListener;
    use std::sync::Mutex;
    use std::thread::JoinHandle;

    /// What the test server does with each connection, in order.
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
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\n\r\n",
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

    /// A policy whose sleep returns at once and records the delays asked for.
    fn recorded(max_elapsed: Duration) -> (RetryPolicy, Arc<Mutex<Vec<Duration>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = asked.clone();
        let p = RetryPolicy {
            timeout: Duration::from_secs(5),
            initial_backoff: SEC,
            max_backoff: 4 * SEC,
            max_elapsed,
            sleep: Arc::new(move |d| log.lock().unwrap().push(d)),
        };
        (p, asked)
    }

    fn some_requests(n: usize, per: usize) -> Vec<ExportTraceServiceRequest> {
        use crate::spans::{requests, Call, Window};
        let w = Window {
            calls: vec![
                Call {
                    function: "f".into(),
                    ..Call::default()
                };
                n
            ],
            ..Window::default()
        };
        requests(&w, per)
    }

    #[test]
    fn posts_with_the_right_head_and_reads_a_200() {
        let (url, server) = serve(vec![reply("200 OK", "", b"\x0a\x00")]);
        let r = post(&url, b"hello", PROTOBUF, 5 * SEC).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"\x0a\x00");
        assert_eq!(r.retry_after, None);
        let got = server.join().unwrap();
        let req = &got[0];
        assert_eq!(req.line, "POST /v1/traces HTTP/1.1");
        assert_eq!(req.header("content-type"), Some(PROTOBUF));
        assert_eq!(req.header("content-length"), Some("5"));
        assert_eq!(req.header("connection"), Some("close"));
        assert_eq!(req.header("host"), Some(&url["http://".len()..]));
        assert_eq!(req.body, b"hello");
    }

    #[test]
    fn reads_chunked_and_close_delimited_bodies_and_skips_interim_answers() {
        let chunked =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\
                        \r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n"
                .to_vec();
        let close = b"HTTP/1.0 202 Accepted\nRetry-After: 7\n\nuntil the end".to_vec();
        let (url, server) = serve(vec![Then::Reply(chunked), Then::Reply(close)]);
        let r = post(&format!("{url}/custom/path?x=1"), b"", PROTOBUF, 5 * SEC).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello world"[..]));
        let r = post(&url, b"", PROTOBUF, 5 * SEC).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (202, &b"until the end"[..]));
        assert_eq!(r.retry_after, Some(7 * SEC));
        let got = server.join().unwrap();
        assert_eq!(got[0].line, "POST /custom/path?x=1 HTTP/1.1");
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
        let report = send(&url, &reqs, &policy).unwrap();
        // Retry-After: 2 s; an HTTP date is ignored: the backoff, which doubled after the first
        // wait.
        assert_eq!(*asked.lock().unwrap(), [2 * SEC, 2 * SEC]);
        assert_eq!((report.requests, report.spans, report.attempts), (1, 3, 3));
        assert_eq!(report.waited, 4 * SEC);
        let got = server.join().unwrap();
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|r| r.body == got[0].body));
        assert_eq!(got[0].body, encode(&reqs[0]));
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_and_the_budget_bounds_the_send() {
        let busy = reply("502 Bad Gateway", "", b"");
        let (url, server) = serve(vec![busy.clone(); 6]);
        let (policy, asked) = recorded(12 * SEC);
        let err = send(&url, some_requests(1, 0), &policy).unwrap_err();
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
    fn the_budget_is_per_request_and_requests_can_be_made_as_sent() {
        use crate::spans::{each_request, Call, Window};
        let busy = reply("503 Service Unavailable", "Retry-After: 2\r\n", b"");
        let (url, server) = serve(vec![busy.clone(), ok(), busy, ok()]);
        // 2 s of waiting per request, within a 3 s budget each (not in all).
        let (policy, asked) = recorded(3 * SEC);
        let w = Window {
            calls: vec![Call::default(); 2],
            ..Window::default()
        };
        let report = send(&url, each_request(&w, 1), &policy).unwrap();
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
        let err = send(&url, some_requests(1, 0), &policy).unwrap_err();
        assert!(asked.lock().unwrap().is_empty());
        assert!(
            matches!(err.error, Error::GaveUp { attempts: 1, .. }),
            "{err}"
        );
        server.join().unwrap();
    }

    #[test]
    fn a_400_is_not_retried_and_its_message_is_shown() {
        let status = RpcStatus {
            code: 3,
            message: "bad span id".into(),
        }
        .encode_to_vec();
        let (url, server) = serve(vec![
            ok(),
            reply(
                "400 Bad Request",
                "Content-Type: application/x-protobuf\r\n",
                &status,
            ),
        ]);
        let (policy, asked) = recorded(60 * SEC);
        let err = send(&url, some_requests(4, 2), &policy).unwrap_err();
        assert!(asked.lock().unwrap().is_empty());
        assert_eq!((err.report.requests, err.report.spans), (1, 2));
        assert!(matches!(err.error, Error::Status { status: 400, .. }));
        assert_eq!(
            err.to_string(),
            "the collector answered HTTP 400 (the request is refused; not retried): bad span id"
        );
        server.join().unwrap();
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
        let report = send(&url, some_requests(6, 3), &policy).unwrap();
        assert_eq!(
            (report.requests, report.spans, report.rejected_spans),
            (2, 6, 2)
        );
        assert_eq!(report.messages, ["2 spans too old"]);
        server.join().unwrap();
    }

    #[test]
    fn a_server_that_hangs_times_out() {
        let (url, server) = serve(vec![Then::Hang(3 * SEC)]);
        let t0 = Instant::now();
        let err = post(&url, b"x", PROTOBUF, Duration::from_millis(300)).unwrap_err();
        let took = t0.elapsed();
        assert!(
            matches!(
                err,
                Error::TimedOut {
                    during: "reading the status line",
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            took >= Duration::from_millis(250) && took < 2 * SEC,
            "{took:?}"
        );
        assert!(
            err.to_string().contains("did not answer within 300 ms"),
            "{err}"
        );
        assert!(err.is_retryable());
        server.join().unwrap();
    }

    #[test]
    fn a_hanging_collector_is_retried_then_given_up_within_the_budget() {
        let (url, server) = serve(vec![Then::Hang(3 * SEC), Then::Hang(3 * SEC)]);
        let (policy, asked) = recorded(Duration::from_millis(1500));
        let policy = RetryPolicy {
            timeout: Duration::from_millis(300),
            initial_backoff: Duration::from_millis(100),
            ..policy
        };
        let t0 = Instant::now();
        let err = send(&url, some_requests(1, 0), &policy).unwrap_err();
        assert!(t0.elapsed() < 3 * SEC, "{:?}", t0.elapsed());
        assert!(matches!(err.error, Error::GaveUp { .. }), "{err}");
        assert!(!asked.lock().unwrap().is_empty());
        drop(server);
    }

    #[test]
    fn a_server_that_closes_mid_response_is_an_error() {
        let cut = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part".to_vec();
        let cut_chunk = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc".to_vec();
        let no_head = b"HTTP/1.1 200 OK\r\nContent-".to_vec();
        let (url, server) = serve(vec![
            Then::Reply(cut),
            Then::Reply(cut_chunk),
            Then::Reply(no_head),
            Then::Reply(Vec::new()),
        ]);
        for during in [
            "reading the body",
            "reading a chunked body",
            "reading the headers",
            "reading the status line",
        ] {
            let err = post(&url, b"x", PROTOBUF, 5 * SEC).unwrap_err();
            match &err {
                Error::Closed { during: d, .. } => assert_eq!(*d, during),
                e => panic!("{during}: {e}"),
            }
            assert!(err.to_string().contains("closed the connection"), "{err}");
            assert!(err.is_retryable());
        }
        server.join().unwrap();
    }

    #[test]
    fn a_refused_connection_says_so_and_is_retried() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        drop(l);
        let err = post(&url, b"x", PROTOBUF, 5 * SEC).unwrap_err();
        assert!(matches!(err, Error::Connect { .. }), "{err}");
        assert!(err.to_string().contains("connection refused"), "{err}");
        let (policy, asked) = recorded(10 * SEC);
        let err = send(&url, some_requests(1, 0), &policy).unwrap_err();
        assert_eq!(*asked.lock().unwrap(), [SEC, 2 * SEC, 4 * SEC]);
        assert!(
            matches!(err.error, Error::GaveUp { attempts: 4, .. }),
            "{err}"
        );
    }

    #[test]
    fn bad_responses_are_errors() {
        let (url, server) = serve(vec![
            Then::Reply(b"SSH-2.0-OpenSSH\r\n\r\n".to_vec()),
            Then::Reply(b"HTTP/1.1 2000 OK\r\n\r\n".to_vec()),
            Then::Reply(b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n".to_vec()),
            Then::Reply(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                    MAX_RESPONSE_BODY + 1
                )
                .into_bytes(),
            ),
            Then::Reply(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec()),
        ]);
        for what in [
            "a bad status line",
            "a bad status line",
            "a bad Content-Length",
            "a response body over",
            "a bad chunk size",
        ] {
            let err = post(&url, b"x", PROTOBUF, 5 * SEC).unwrap_err();
            assert!(matches!(err, Error::BadResponse { .. }), "{err}");
            assert!(err.to_string().contains(what), "{err}");
            assert!(!err.is_retryable());
        }
        server.join().unwrap();
    }

    #[test]
    fn urls_are_parsed_or_refused_clearly() {
        let e = Endpoint::parse("http://127.0.0.1:4318").unwrap();
        assert_eq!(e.address(), "127.0.0.1:4318");
        assert_eq!(e.path, "/v1/traces");
        assert_eq!(
            Endpoint::parse("http://h:1?a=b").unwrap().path,
            "/v1/traces?a=b"
        );
        assert_eq!(Endpoint::parse("http://h:1/x#frag").unwrap().path, "/x");
        assert_eq!(
            Endpoint::parse("http://[::1]").unwrap().address(),
            "[::1]:80"
        );
        for (url, says) in [
            ("https://h:4318", "TLS (https) is not supported"),
            ("HTTPS://h", "TLS (https) is not supported"),
            ("h:4318", "not an http:// URL"),
            ("http://", "no host"),
            ("http://:4318", "no host"),
            ("http://u:p@h", "user names and passwords"),
            ("http://h:99999", "the port is not a number"),
            ("http://h:x", "the port is not a number"),
            ("http://::1:80", "must be in brackets"),
            ("http://[::1", "closing ]"),
            ("http://h/a b", "spaces or control characters"),
        ] {
            let err = Endpoint::parse(url).unwrap_err();
            assert!(err.to_string().contains(says), "{url}: {err}");
            assert!(!err.is_retryable());
        }
        let err = send(
            "https://h",
            Vec::<ExportTraceServiceRequest>::new(),
            &RetryPolicy::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("plain-HTTP"), "{err}");
    }

    #[test]
    fn retry_after_and_status_lines_are_read_strictly() {
        assert_eq!(parse_retry_after(" 3 "), Some(3 * SEC));
        assert_eq!(parse_retry_after("Fri, 31 Dec 1999 23:59:59 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(
            parse_retry_after("99999999999999999999999"),
            Some(86_400 * SEC)
        );
        assert_eq!(parse_status_line("HTTP/1.1 204 No Content"), Some(204));
        assert_eq!(parse_status_line("HTTP/1.0 503"), Some(503));
        assert_eq!(parse_status_line("HTTP/2 200"), None);
        assert_eq!(parse_status_line("HTTP/1.1 20 OK"), None);
        assert_eq!(error_message(b"plain words\n"), "plain words");
        assert_eq!(error_message(&[0xff, 0x00, 0x01]), "(3 bytes of body)");
    }
}
