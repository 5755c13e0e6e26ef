//! Why an export failed, in words that say what to do, and whether trying again may help.

use std::fmt;
use std::io;
use std::time::Duration;

/// Statuses that the OTLP specification says to retry.
///
/// ```
/// assert!(fdr_otlp::RETRYABLE_STATUSES.contains(&503));
/// ```
pub const RETRYABLE_STATUSES: [u16; 4] = [429, 502, 503, 504];

/// Why an export failed. No variant holds a header's value.
///
/// ```
/// use fdr_otlp::Error;
/// let e = fdr_otlp::endpoint::Endpoint::parse("ftp://collector").unwrap_err();
/// assert!(matches!(e, Error::Url(_)));
/// assert!(!e.is_retryable());
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The URL is not one this sender takes; the text says why.
    Url(String),
    /// A setting is not valid (a header, a CA file); the text says which and why.
    Settings(String),
    /// The host name did not resolve.
    Resolve {
        /// The host.
        host: String,
        /// Why.
        detail: String,
    },
    /// No connection could be made.
    Connect {
        /// The address tried last.
        addr: String,
        /// Why.
        detail: String,
        /// Nothing listens there.
        refused: bool,
    },
    /// The exchange did not finish within its time limit.
    TimedOut {
        /// The server.
        addr: String,
        /// The attempt's limit: `timeout`, or less when that was what the retry budget had left.
        limit: Duration,
        /// The time limit of an attempt as set (`--timeout`, `otlp_timeout_ms`, the variables).
        timeout: Duration,
    },
    /// The connection failed or was cut.
    Io {
        /// The server.
        addr: String,
        /// Why.
        detail: String,
    },
    /// The TLS handshake failed: the collector's certificate is not trusted, or its name is not
    /// the endpoint's. Not retried: it will not pass by itself.
    Tls {
        /// The server.
        addr: String,
        /// Why.
        detail: String,
    },
    /// The server's answer is not an HTTP response this sender reads.
    BadResponse {
        /// The server.
        addr: String,
        /// What is wrong with it.
        what: String,
    },
    /// The collector answered with a status that is not success.
    Status {
        /// The HTTP status.
        status: u16,
        /// The collector's message: the `google.rpc.Status` message of an OTLP error body, or
        /// the start of a text body.
        message: String,
        /// The `Retry-After` it gave, in seconds (an HTTP date is ignored).
        retry_after: Option<Duration>,
    },
    /// Retryable failures until the retry budget ran out, or the wait before the next attempt
    /// was cut short.
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
    /// use fdr_otlp::Error;
    /// assert!(Error::Status { status: 503, message: String::new(), retry_after: None }.is_retryable());
    /// assert!(!Error::Status { status: 401, message: String::new(), retry_after: None }.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Resolve { .. }
            | Error::Connect { .. }
            | Error::TimedOut { .. }
            | Error::Io { .. } => true,
            Error::Status { status, .. } => RETRYABLE_STATUSES.contains(status),
            Error::Url(_)
            | Error::Settings(_)
            | Error::Tls { .. }
            | Error::BadResponse { .. }
            | Error::GaveUp { .. } => false,
        }
    }

    /// The wait the collector asked for before the next attempt, if it gave one.
    ///
    /// ```
    /// use std::time::Duration;
    /// let e = fdr_otlp::Error::Status { status: 429, message: String::new(), retry_after: Some(Duration::from_secs(3)) };
    /// assert_eq!(e.retry_after(), Some(Duration::from_secs(3)));
    /// ```
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A failure to connect to `addr` within `limit`.
    pub(crate) fn from_connect(addr: &str, e: io::Error, limit: Duration) -> Error {
        match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Error::TimedOut {
                addr: addr.to_string(),
                limit,
                timeout: limit,
            },
            kind => Error::Connect {
                addr: addr.to_string(),
                detail: e.to_string(),
                refused: kind == io::ErrorKind::ConnectionRefused,
            },
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Url(what) | Error::Settings(what) => f.write_str(what),
            Error::Resolve { host, detail } => {
                write!(f, "cannot resolve the host {host}: {detail}")
            }
            Error::Connect {
                addr,
                refused: true,
                ..
            } => write!(
                f,
                "cannot connect to {addr}: connection refused (is the collector running and \
                 listening there?)"
            ),
            Error::Connect { addr, detail, .. } => write!(f, "cannot connect to {addr}: {detail}"),
            Error::TimedOut {
                addr,
                limit,
                timeout,
            } if limit < timeout => write!(
                f,
                "{addr} did not answer within the {} the retry budget had left (of the {} \
                 timeout): timed out",
                seconds(*limit),
                seconds(*timeout)
            ),
            Error::TimedOut { addr, timeout, .. } => write!(
                f,
                "{addr} did not answer within {}: timed out",
                seconds(*timeout)
            ),
            Error::Io { addr, detail } => write!(f, "the connection to {addr} failed: {detail}"),
            Error::Tls { addr, detail } => write!(
                f,
                "the TLS handshake with {addr} failed: {detail} (a collector with a private CA: \
                 give the CA's PEM file with otlp_ca=, --otlp-ca, \
                 OTEL_EXPORTER_OTLP_CERTIFICATE or SSL_CERT_FILE)"
            ),
            Error::BadResponse { addr, what } => {
                write!(f, "{addr} did not answer as an HTTP server: {what}")
            }
            Error::Status {
                status, message, ..
            } => {
                write!(f, "the collector answered HTTP {status}")?;
                if *status == 401 || *status == 403 {
                    f.write_str(
                        " (the request is refused; not retried: check the API key or \
                         authorization header, given with otlp_headers=, --otlp-headers or \
                         OTEL_EXPORTER_OTLP_HEADERS)",
                    )?;
                } else if !RETRYABLE_STATUSES.contains(status) && (300..500).contains(status) {
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
            Error::GaveUp { last, .. } => Some(last.as_ref()),
            _ => None,
        }
    }
}

/// `1.5 s`, `200 ms`.
pub(crate) fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        return format!("{} ms", d.as_millis());
    }
    // Milliseconds, without trailing zeros: "3 s", "2.95 s"; never rounded up to the limit.
    let ms = d.as_millis();
    let text = format!("{}.{:03}", ms / 1000, ms % 1000);
    format!("{} s", text.trim_end_matches('0').trim_end_matches('.'))
}
