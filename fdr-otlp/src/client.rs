//! The transport: one OTLP/HTTP export attempt through `ureq` (blocking, no async runtime),
//! with the endpoint's headers, a gzip body when asked, TLS with the system's roots or a given
//! CA, and the answer read as the specification says (success, partial success, or a status
//! with its `Retry-After`). The agent is kept between requests, so a collector that keeps its
//! connections open is not reconnected to (and its TLS handshake not redone) per request.
//!
//! Redirects are not followed: a collector does not redirect an export, and following one would
//! carry the API key headers to another host.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use prost::Message;

use crate::endpoint::{Endpoint, Scheme};
use crate::error::Error;
use crate::headers::Headers;
use crate::proto::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use crate::spans::span_count;

/// The content type of an OTLP/HTTP protobuf body.
///
/// ```
/// assert_eq!(fdr_otlp::client::PROTOBUF, "application/x-protobuf");
/// ```
pub const PROTOBUF: &str = "application/x-protobuf";

/// The largest response body read (1 MiB); a larger one is an error.
///
/// ```
/// assert_eq!(fdr_otlp::client::MAX_RESPONSE_BODY, 1 << 20);
/// ```
pub const MAX_RESPONSE_BODY: u64 = 1 << 20;

/// Whether request bodies are compressed.
///
/// ```
/// use fdr_otlp::client::Compression;
/// assert_eq!("gzip".parse::<Compression>(), Ok(Compression::Gzip));
/// assert_eq!(Compression::None.to_string(), "none");
/// assert!("zstd".parse::<Compression>().unwrap_err().contains("gzip or none"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// Bodies as they are.
    None,
    /// Bodies gzipped (`Content-Encoding: gzip`), which every OTLP/HTTP receiver takes: a
    /// window's spans repeat their function and thread names, and its request shrinks four to
    /// nine times, for a third of the time the conversion took (benches/README.md).
    #[default]
    Gzip,
}

impl FromStr for Compression {
    type Err = String;

    fn from_str(s: &str) -> Result<Compression, String> {
        match s.trim() {
            "gzip" => Ok(Compression::Gzip),
            "none" => Ok(Compression::None),
            other => Err(format!("expected gzip or none, found `{other}`")),
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
        })
    }
}

/// Whether this build can send to `https://` endpoints (the `tls` feature).
///
/// ```
/// assert_eq!(fdr_otlp::client::TLS, cfg!(feature = "tls"));
/// ```
pub const TLS: bool = cfg!(feature = "tls");

/// An endpoint's `https://` refused in a build without TLS, with what to do.
///
/// ```
/// use fdr_otlp::{client::needs_tls, endpoint::Endpoint};
/// let e = Endpoint::parse("https://api.example.com")?;
/// assert!(needs_tls(&e, false).unwrap_err().to_string().contains("without TLS"));
/// assert!(needs_tls(&e, true).is_ok());
/// # Ok::<(), fdr_otlp::Error>(())
/// ```
pub fn needs_tls(endpoint: &Endpoint, tls: bool) -> Result<(), Error> {
    if endpoint.scheme == Scheme::Https && !tls {
        return Err(Error::Url(format!(
            "{endpoint}: this program was built without TLS, so https:// endpoints cannot be \
             reached; build with fdr's `otlp` feature (which brings TLS) rather than \
             `otlp-http`, or send to a plain http:// collector"
        )));
    }
    Ok(())
}

/// How to reach the collector: what [`Client::new`] takes.
///
/// ```
/// use fdr_otlp::client::{Compression, Transport};
/// let t = Transport::new(fdr_otlp::endpoint::Endpoint::parse("http://localhost:4318")?);
/// assert_eq!(t.compression, Compression::Gzip);
/// # Ok::<(), fdr_otlp::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transport {
    /// Where requests go.
    pub endpoint: Endpoint,
    /// Sent with every request.
    pub headers: Headers,
    /// Request bodies gzipped or not.
    pub compression: Compression,
    /// A PEM file of the CA certificates to trust instead of the system's (for https).
    pub ca_file: Option<PathBuf>,
}

impl Transport {
    /// To `endpoint`, no header, gzip, the system's roots.
    pub fn new(endpoint: Endpoint) -> Transport {
        Transport {
            endpoint,
            headers: Headers::default(),
            compression: Compression::default(),
            ca_file: None,
        }
    }
}

/// A request ready to post: encoded, compressed as the client says.
///
/// ```no_run
/// use fdr_otlp::client::{Client, Transport};
/// let c = Client::new(&Transport::new(fdr_otlp::endpoint::Endpoint::parse("http://localhost:4318")?))?;
/// let body = c.body(&Default::default());
/// assert_eq!(body.spans, 0);
/// # Ok::<(), fdr_otlp::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Body {
    bytes: Vec<u8>,
    /// Spans in it.
    pub spans: usize,
}

/// What the collector said of a request it took.
///
/// ```
/// let a = fdr_otlp::client::Accepted::default();
/// assert_eq!(a.rejected_spans, 0);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Accepted {
    /// Spans it said it rejected (`partial_success.rejected_spans`).
    pub rejected_spans: u64,
    /// Its message about partial success, if any.
    pub message: Option<String>,
}

/// A kept HTTP client for one endpoint.
pub struct Client {
    transport: Transport,
    url: String,
    agent: ureq::Agent,
    direct: bool,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("endpoint", &self.transport.endpoint.to_string())
            .field("headers", &self.transport.headers)
            .field("compression", &self.transport.compression)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `t`: for `https://`, the CA file is read now (an error names it and says
    /// why), else the system's roots are (`SSL_CERT_FILE` and `SSL_CERT_DIR` honoured; Mozilla's
    /// roots, built in, when the system has none).
    ///
    /// ```
    /// use fdr_otlp::client::{Client, Transport};
    /// let mut t = Transport::new(fdr_otlp::endpoint::Endpoint::parse("https://h")?);
    /// t.ca_file = Some("/nonexistent/ca.pem".into());
    /// let e = Client::new(&t).unwrap_err().to_string();
    /// assert!(e.contains("/nonexistent/ca.pem"), "{e}");
    /// # Ok::<(), fdr_otlp::Error>(())
    /// ```
    pub fn new(t: &Transport) -> Result<Client, Error> {
        needs_tls(&t.endpoint, TLS)?;
        #[cfg_attr(not(feature = "tls"), allow(unused_mut))]
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(format!("fdr-otlp/{}", env!("CARGO_PKG_VERSION")));
        match (t.endpoint.scheme, &t.ca_file) {
            #[cfg(feature = "tls")]
            (Scheme::Https, ca) => config = config.tls_config(tls::config(ca.as_deref())?),
            // Read it all the same: a CA that cannot be read is a mistake to say at once.
            (_, Some(ca)) => tls::check_ca(ca)?,
            _ => {}
        }
        Ok(Client {
            // ureq takes its proxy from the same variables.
            direct: ureq::Proxy::try_from_env().is_none(),
            url: t.endpoint.url(),
            transport: t.clone(),
            agent: ureq::Agent::new_with_config(config.build()),
        })
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.transport.endpoint
    }

    /// Requests go straight to the endpoint, through no proxy (`ALL_PROXY`, `HTTPS_PROXY`,
    /// `HTTP_PROXY`): then a bare connection to it ([`Endpoint::reachable`]) tells whether it
    /// is up.
    pub fn direct(&self) -> bool {
        self.direct
    }

    /// `r` encoded, and compressed if the client compresses.
    pub fn body(&self, r: &ExportTraceServiceRequest) -> Body {
        let bytes = r.encode_to_vec();
        let bytes = match self.transport.compression {
            Compression::None => bytes,
            Compression::Gzip => gzip(&bytes),
        };
        Body {
            bytes,
            spans: span_count(r),
        }
    }

    /// One attempt: posts `body` within `timeout` (name resolution, connecting, the TLS
    /// handshake, sending and reading the answer). A 2xx is `Ok` with what it says of partial
    /// success; any other status is [`Error::Status`] with the collector's message and its
    /// `Retry-After`.
    pub fn post(&self, body: &Body, timeout: Duration) -> Result<Accepted, Error> {
        let addr = self.transport.endpoint.address();
        let mut req = self
            .agent
            .post(&self.url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header("content-type", PROTOBUF);
        if self.transport.compression == Compression::Gzip {
            req = req.header("content-encoding", "gzip");
        }
        for (name, value) in self.transport.headers.iter() {
            let mut v = ureq::http::HeaderValue::from_str(value)
                .map_err(|_| Error::Settings(format!("the header `{name}` has a bad value")))?;
            v.set_sensitive(true);
            req = req.header(name, v);
        }
        let mut resp = req
            .send(&body.bytes[..])
            .map_err(|e| from_ureq(e, &addr, timeout))?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BODY)
            .read_to_vec()
            .map_err(|e| from_ureq(e, &addr, timeout))?;
        if !(200..300).contains(&status) {
            return Err(Error::Status {
                status,
                message: error_message(&bytes),
                retry_after,
            });
        }
        let mut accepted = Accepted::default();
        if let Ok(answer) = ExportTraceServiceResponse::decode(&bytes[..]) {
            if let Some(p) = answer.partial_success {
                accepted.rejected_spans = u64::try_from(p.rejected_spans).unwrap_or(0);
                if !p.error_message.is_empty() {
                    accepted.message = Some(p.error_message);
                }
            }
        }
        Ok(accepted)
    }
}

/// `data` as one gzip member, compressed at the fast level: a window's request shrinks nearly
/// as much as at the default level (8.0 against 8.6 times), in a tenth of the time
/// (benches/README.md).
///
/// ```
/// let gz = fdr_otlp::client::gzip(b"hello hello hello hello");
/// assert_eq!(&gz[..2], &[0x1f, 0x8b]);
/// ```
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 4 + 64),
        flate2::Compression::fast(),
    );
    // Writing to a Vec cannot fail.
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

/// A ureq failure as ours.
fn from_ureq(e: ureq::Error, addr: &str, limit: Duration) -> Error {
    match e {
        ureq::Error::Timeout(_) => Error::TimedOut {
            addr: addr.to_string(),
            limit,
            timeout: limit,
        },
        ureq::Error::HostNotFound => Error::Resolve {
            host: addr.to_string(),
            detail: "no such host".into(),
        },
        ureq::Error::ConnectionFailed => Error::Connect {
            addr: addr.to_string(),
            detail: "no connection could be made".into(),
            refused: false,
        },
        ureq::Error::Io(e) => from_io(e, addr, limit),
        ureq::Error::BadUri(why) => Error::Url(format!("a URL ureq refuses: {why}")),
        ureq::Error::BodyExceedsLimit(_) => Error::BadResponse {
            addr: addr.to_string(),
            what: format!("a response body over {MAX_RESPONSE_BODY} bytes"),
        },
        ureq::Error::Protocol(e) => Error::BadResponse {
            addr: addr.to_string(),
            what: e.to_string(),
        },
        ureq::Error::LargeResponseHeader(..) => Error::BadResponse {
            addr: addr.to_string(),
            what: "response headers too large".into(),
        },
        #[cfg(feature = "tls")]
        ureq::Error::Rustls(e) => Error::Tls {
            addr: addr.to_string(),
            detail: e.to_string(),
        },
        ureq::Error::Tls(what) => Error::Tls {
            addr: addr.to_string(),
            detail: what.to_string(),
        },
        other => Error::Io {
            addr: addr.to_string(),
            detail: other.to_string(),
        },
    }
}

/// An I/O failure: a refused or timed-out connection, a TLS failure inside it, or a cut.
fn from_io(e: io::Error, addr: &str, limit: Duration) -> Error {
    #[cfg(feature = "tls")]
    if let Some(t) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        return Error::Tls {
            addr: addr.to_string(),
            detail: t.to_string(),
        };
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused | io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            Error::from_connect(addr, e, limit)
        }
        io::ErrorKind::UnexpectedEof => Error::Io {
            addr: addr.to_string(),
            detail: "the collector closed the connection in the middle of the exchange".into(),
        },
        _ => Error::Io {
            addr: addr.to_string(),
            detail: e.to_string(),
        },
    }
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

/// At most 120 characters of `s`, for messages.
fn excerpt(s: &str) -> String {
    let mut out: String = s.chars().take(120).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

#[cfg(feature = "tls")]
mod tls {
    use super::*;
    use ureq::tls::{Certificate, RootCerts, TlsConfig};

    /// The TLS settings: the CA file's certificates, or the system's roots.
    pub(super) fn config(ca: Option<&Path>) -> Result<TlsConfig, Error> {
        let roots = match ca {
            Some(path) => RootCerts::from(read_ca(path)?),
            None => system_roots(),
        };
        Ok(TlsConfig::builder().root_certs(roots).build())
    }

    pub(super) fn check_ca(path: &Path) -> Result<(), Error> {
        read_ca(path).map(drop)
    }

    /// The certificates of a PEM file, or what is wrong with it.
    fn read_ca(path: &Path) -> Result<Vec<Certificate<'static>>, Error> {
        let shown = path.display();
        let pem = std::fs::read(path).map_err(|e| {
            Error::Settings(format!(
                "cannot read the CA file {shown}: {e}; give a readable PEM file of the \
                 collector's CA certificate(s)"
            ))
        })?;
        let certs: Vec<Certificate<'static>> = ureq::tls::parse_pem(&pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        if certs.is_empty() {
            return Err(Error::Settings(format!(
                "the CA file {shown} holds no PEM certificate (-----BEGIN CERTIFICATE-----); \
                 give the collector's CA certificate(s) in PEM form"
            )));
        }
        Ok(certs)
    }

    /// The system's trust store (`SSL_CERT_FILE`, `SSL_CERT_DIR` honoured); Mozilla's roots
    /// when it has none (a minimal container image without ca-certificates).
    fn system_roots() -> RootCerts {
        let found = rustls_native_certs::load_native_certs();
        if found.certs.is_empty() {
            return RootCerts::WebPki;
        }
        let certs: Vec<Certificate<'static>> = found
            .certs
            .iter()
            .map(|c| Certificate::from_der(c.as_ref()).to_owned())
            .collect();
        RootCerts::from(certs)
    }
}

#[cfg(not(feature = "tls"))]
mod tls {
    use super::*;

    /// Without TLS a CA file means nothing, but one that cannot be read is still said.
    pub(super) fn check_ca(path: &Path) -> Result<(), Error> {
        std::fs::metadata(path).map(drop).map_err(|e| {
            Error::Settings(format!("cannot read the CA file {}: {e}", path.display()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_read_strictly_and_error_bodies_are_shown_short() {
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("Fri, 31 Dec 1999 23:59:59 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(
            parse_retry_after("99999999999999999999999"),
            Some(Duration::from_secs(86_400))
        );
        assert_eq!(error_message(b"plain words\n"), "plain words");
        assert_eq!(error_message(&[0xff, 0x00, 0x01]), "(3 bytes of body)");
        let status = RpcStatus {
            code: 3,
            message: "bad span id".into(),
        };
        assert_eq!(error_message(&status.encode_to_vec()), "bad span id");
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let gz = gzip(&data);
        assert!(gz.len() < data.len() / 10, "{}", gz.len());
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, data);
    }
}
