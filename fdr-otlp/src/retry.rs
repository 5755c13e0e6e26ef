//! The retries the OTLP specification asks of an exporter, on top of the transport: a retryable
//! failure is tried again after the collector's `Retry-After`, else after a backoff that
//! doubles, within a time budget per request. [`send`] is the loop for a caller that sends one
//! window at a time (`fdr export`); the runtime's exporter, which interleaves its windows,
//! takes [`RetryPolicy::wait`] and [`RetryPolicy::next_backoff`] from here.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::error::Error;
use crate::proto::ExportTraceServiceRequest;

/// A function that waits: [`std::thread::sleep`] by default; a test's records the delays asked
/// for. It returns `false` when the wait was cut short (the program is ending): the request is
/// then given up without another attempt.
///
/// ```
/// let instant: fdr_otlp::retry::Sleep = std::sync::Arc::new(|_| true);
/// assert!(instant(std::time::Duration::from_secs(60)));
/// ```
pub type Sleep = Arc<dyn Fn(Duration) -> bool + Send + Sync>;

/// How [`send`] waits and retries: a retryable failure (see [`Error::is_retryable`]) is tried
/// again after the `Retry-After` the collector gave, else after a backoff that starts at
/// `initial_backoff` and doubles up to `max_backoff` (no jitter); each request's attempts and
/// waits take at most `max_elapsed` in all, each attempt at most `timeout`.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use fdr_otlp::retry::RetryPolicy;
/// let asked = Arc::new(Mutex::new(Vec::new()));
/// let log = asked.clone();
/// let policy = RetryPolicy {
///     max_elapsed: Duration::from_secs(5),
///     sleep: Arc::new(move |d| { log.lock().unwrap().push(d); true }),
///     ..RetryPolicy::default()
/// };
/// assert_eq!(policy.timeout, Duration::from_secs(10));
/// ```
#[derive(Clone)]
pub struct RetryPolicy {
    /// One attempt's limit: resolve, connect, handshake, send, read (default 10 s, the OTLP
    /// exporters' default).
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
            sleep: Arc::new(|d| {
                std::thread::sleep(d);
                true
            }),
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

impl RetryPolicy {
    /// How long to wait after `failure` before trying again, with `backoff` the current
    /// backoff: the collector's `Retry-After`, else the backoff; `None` when the failure is not
    /// retryable.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fdr_otlp::{retry::RetryPolicy, Error};
    /// let p = RetryPolicy::default();
    /// let busy = Error::Status { status: 503, message: String::new(), retry_after: Some(Duration::from_secs(2)) };
    /// assert_eq!(p.wait(&busy, Duration::from_secs(1)), Some(Duration::from_secs(2)));
    /// let refused = Error::Status { status: 401, message: String::new(), retry_after: None };
    /// assert_eq!(p.wait(&refused, Duration::from_secs(1)), None);
    /// ```
    pub fn wait(&self, failure: &Error, backoff: Duration) -> Option<Duration> {
        failure
            .is_retryable()
            .then(|| failure.retry_after().unwrap_or(backoff))
    }

    /// The backoff after `backoff`: doubled, at most `max_backoff`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = fdr_otlp::retry::RetryPolicy::default();
    /// assert_eq!(p.next_backoff(Duration::from_secs(20)), Duration::from_secs(30));
    /// ```
    pub fn next_backoff(&self, backoff: Duration) -> Duration {
        (backoff * 2).min(self.max_backoff)
    }
}

/// What [`send`] did.
///
/// ```
/// let r = fdr_otlp::retry::SendReport::default();
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
/// use fdr_otlp::{retry::SendError, Error};
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

/// Sends `requests` through `client` in order, each retried per `policy`: on a retryable
/// failure it waits (the `Retry-After` given, else the backoff) and tries again, while that
/// request's attempts and waits stay within `policy.max_elapsed`; any other failure (a 4xx
/// other than 429, an untrusted certificate ...) stops it at once. A 2xx whose body reports
/// partial success counts the rejected spans. Stops at the first request that could not be
/// sent, with what was sent before it ([`SendError`]). `requests` may be a slice, a `Vec`, or
/// [`crate::spans::each_request`], which makes each request as it is sent.
///
/// ```no_run
/// use fdr_otlp::{client::{Client, Transport}, endpoint::Endpoint, retry::{send, RetryPolicy}};
/// let client = Client::new(&Transport::new(Endpoint::parse("http://localhost:4318")?))?;
/// let reqs = fdr_otlp::spans::requests(&Default::default(), 0);
/// match send(&client, &reqs, &RetryPolicy::default()) {
///     Ok(r) => println!("sent {} spans", r.spans),
///     Err(e) => eprintln!("{} requests sent, then: {e}", e.report.requests),
/// }
/// # Ok::<(), fdr_otlp::Error>(())
/// ```
pub fn send<I>(client: &Client, requests: I, policy: &RetryPolicy) -> Result<SendReport, SendError>
where
    I: IntoIterator,
    I::Item: Borrow<ExportTraceServiceRequest>,
{
    let mut report = SendReport::default();
    for r in requests {
        let body = client.body(r.borrow());
        match send_one(client, &body, policy, &mut report) {
            Ok(accepted) => {
                report.requests += 1;
                report.spans += body.spans;
                report.rejected_spans += accepted.rejected_spans;
                report.messages.extend(accepted.message);
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
    client: &Client,
    body: &crate::client::Body,
    policy: &RetryPolicy,
    report: &mut SendReport,
) -> Result<crate::client::Accepted, Error> {
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
        let failure = match client.post(body, limit) {
            Ok(accepted) => return Ok(accepted),
            // The message names the limit as set, and the budget when that cut it shorter.
            Err(Error::TimedOut { addr, limit, .. }) => Error::TimedOut {
                addr,
                limit,
                timeout: policy.timeout,
            },
            Err(e) => e,
        };
        spent += t0.elapsed();
        let Some(wait) = policy.wait(&failure, backoff) else {
            return Err(failure);
        };
        let gave_up = |spent| Error::GaveUp {
            attempts,
            spent,
            last: Box::new(failure),
        };
        if spent.saturating_add(wait) >= policy.max_elapsed {
            return Err(gave_up(spent));
        }
        if !(policy.sleep)(wait) {
            return Err(gave_up(spent));
        }
        spent += wait;
        report.waited += wait;
        backoff = policy.next_backoff(backoff);
    }
}
