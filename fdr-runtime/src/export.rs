//! Windows sent to an OpenTelemetry collector (`Config::otlp_endpoint`): a bounded queue of
//! written windows and the thread that sends them, so that no recording thread, nor the
//! background writer, ever waits on the network.
//!
//! Whoever writes a window (the background writer for triggers and the signal, the panicking
//! thread, the program's own snapshot) hands a copy of the log's bytes to [`Exporter::push`]: a
//! short lock and a wake-up. When the queue is full the oldest window is dropped: the newest
//! windows are the ones a team looks at. The sender thread turns each log into OTLP requests
//! (`fdr_otlp::convert`, the calls `fdr calls` shows) and posts them (`fdr_otlp::client`) with the
//! retries of the OTLP specification. A window dropped, or not accepted within its retry
//! budget, is counted, and said on stderr once per recording.
//!
//! Retries are taken in turn: a window whose request failed goes to the back of the queue, and
//! nothing is sent until the wait the collector asked for (its `Retry-After`, else the
//! doubling backoff) is over; then the next window in the queue goes. A collector that answers
//! 503 so gets one request per wait, and every queued window its turn, not one window's
//! retries while the others wait out their time. When the recording ends, waits are not cut
//! short into a burst: what cannot go before the flush time is over is dropped, and counted.

use std::time::Duration;

/// Counters of the windows handed to the exporter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub sent: u64,
    pub dropped: u64,
}

#[cfg(feature = "otlp-http")]
pub(crate) use real::Exporter;

#[cfg(not(feature = "otlp-http"))]
pub(crate) use none::Exporter;

#[cfg(not(feature = "otlp-http"))]
mod none {
    use super::*;

    /// Without the `otlp` feature there is no exporter (`Config::validate` refuses an
    /// endpoint), so this is never made.
    pub(crate) enum Exporter {}

    impl Exporter {
        pub(crate) fn start(_: &crate::Config) -> Result<Option<Exporter>, crate::Error> {
            Ok(None)
        }
        pub(crate) fn push(&self, _: Vec<u8>) {
            match *self {}
        }
        pub(crate) fn close(&self, _: Duration) {
            match *self {}
        }
        pub(crate) fn counts(&self) -> Counts {
            match *self {}
        }
        pub(crate) fn only(&self) -> bool {
            match *self {}
        }
        pub(crate) fn endpoint(&self) -> &str {
            match *self {}
        }
    }
}

#[cfg(feature = "otlp-http")]
mod real {
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Condvar, Mutex, MutexGuard};
    use std::time::Instant;

    use fdr_otlp::client::{Client, Compression};
    use fdr_otlp::convert::{window, About};
    use fdr_otlp::headers::Headers;
    use fdr_otlp::retry::RetryPolicy;
    use fdr_otlp::settings::{Given, Otel, Settings};
    use fdr_otlp::spans::each_request;

    use super::*;
    use crate::config::option_error;
    use crate::Error;

    /// The exporter of one recording. Dropping it lets its thread end after the request it is
    /// sending, if any.
    pub(crate) struct Exporter {
        shared: Arc<Shared>,
    }

    struct Shared {
        client: Client,
        /// The endpoint as messages show it.
        shown: String,
        /// A probe (a bare connection) may tell a collector that is still down before a window
        /// is converted for it; not through a proxy, which the probe would not take.
        may_probe: bool,
        about: About,
        only: bool,
        max_spans: usize,
        timeout: Duration,
        retry_for: Duration,
        policy: RetryPolicy,
        queue: Mutex<Queue>,
        /// Signalled when a window is queued, one is done with, or the exporter closes.
        changed: Condvar,
        sent: AtomicU64,
        dropped: AtomicU64,
        said: AtomicBool,
    }

    struct Queue {
        windows: VecDeque<Pending>,
        capacity: usize,
        /// A window is being sent.
        busy: bool,
        /// No more windows are taken; the thread ends once the queue is empty.
        closed: bool,
        /// Nothing more is sent: the recording ended and its flush time is over.
        hurry: bool,
        /// Nothing is sent before this: the wait the collector asked for after a failure.
        not_before: Option<Instant>,
        /// The last attempt could not connect: the next starts with a probe.
        unreachable: bool,
    }

    /// A window waiting to be sent, and how far it got.
    struct Pending {
        log: Vec<u8>,
        /// Requests of the window the collector accepted.
        done: usize,
        /// The failed attempts at the next request.
        retry: Option<Retrying>,
    }

    struct Retrying {
        /// When the first failed attempt started: the retry budget counts from there.
        since: Instant,
        attempts: u32,
        /// The wait after the next failure without `Retry-After`.
        backoff: Duration,
    }

    /// What became of a turn of a window.
    enum Turn {
        /// Every request was accepted.
        Sent,
        /// Refused (not retryable), or the window could not be read: dropped, saying why.
        Refused(String),
        /// Failed, may pass later: wait this long first.
        Again(fdr_otlp::Error, Duration),
    }

    impl Exporter {
        /// The exporter `config` asks for, its thread started; `None` without an endpoint (or
        /// when the thread cannot start, which is said on stderr). The OpenTelemetry
        /// variables complete the settings here: a bad one, or a CA file that cannot be read,
        /// is an error that names it.
        pub(crate) fn start(config: &crate::Config) -> Result<Option<Exporter>, Error> {
            let o = &config.otlp;
            let Some(endpoint) = o.endpoint.clone() else {
                return Ok(None);
            };
            let given = Given {
                endpoint,
                headers: o
                    .headers
                    .as_ref()
                    .map(|h| Headers::new(h.0.clone()))
                    .transpose()
                    .map_err(|m| option_error("otlp_headers", m))?,
                compression: o.gzip.map(|on| {
                    if on {
                        Compression::Gzip
                    } else {
                        Compression::None
                    }
                }),
                ca_file: o.ca.clone(),
                timeout: o.timeout,
                service_name: o.service_name.clone(),
            };
            let settings =
                Settings::resolve(&given, &Otel::from_env()).map_err(|e| match e.variable {
                    Some(v) => Error::Config {
                        key: v.into(),
                        message: format!(
                            "{}; fix the variable or unset it (fdr's own options win over it)",
                            e.message
                        ),
                    },
                    None => option_error("otlp_endpoint", e.message),
                })?;
            let client = Client::new(&settings.transport).map_err(|e| {
                let key = match (&o.ca, settings.ca_variable) {
                    (Some(_), _) | (None, None) => "otlp_ca".to_string(),
                    (None, Some(v)) => v.to_string(),
                };
                match e {
                    fdr_otlp::Error::Settings(m) => Error::Config { key, message: m },
                    other => option_error("otlp_endpoint", other.to_string()),
                }
            })?;
            let shown = settings.transport.endpoint.to_string();
            let shared = Arc::new(Shared {
                about: About {
                    service_name: settings.service_name.clone().unwrap_or_default(),
                    host_name: fdr_otlp::spans::local_host_name().unwrap_or_default(),
                    sequence: 0,
                    traceparent: None,
                    resource: settings.resource.clone(),
                },
                may_probe: client.direct(),
                client,
                shown,
                only: o.only,
                max_spans: o.max_spans as usize,
                timeout: settings.timeout,
                retry_for: o.retry_for,
                policy: RetryPolicy::default(),
                queue: Mutex::new(Queue {
                    windows: VecDeque::new(),
                    capacity: o.queue as usize,
                    busy: false,
                    closed: false,
                    hurry: false,
                    not_before: None,
                    unreachable: false,
                }),
                changed: Condvar::new(),
                sent: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
                said: AtomicBool::new(false),
            });
            let s = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name("fdr-export".into())
                .spawn(move || run(&s));
            match spawned {
                Ok(_) => Ok(Some(Exporter { shared })),
                Err(e) => {
                    eprintln!(
                        "fdr: could not start the thread that sends windows to {} ({e}); \
                         windows are written to files only",
                        shared.shown
                    );
                    Ok(None)
                }
            }
        }

        /// Queues a window (a whole log) to be sent; drops the oldest waiting one if the queue
        /// is full, or this one if the exporter is closed.
        pub(crate) fn push(&self, log: Vec<u8>) {
            let s = &self.shared;
            let mut q = s.lock();
            if q.closed {
                drop(q);
                s.drop_windows(1, "the recording had ended");
                return;
            }
            let full = q.windows.len() >= q.capacity;
            if full {
                q.windows.pop_front();
            }
            q.windows.push_back(Pending {
                log,
                done: 0,
                retry: None,
            });
            drop(q);
            s.changed.notify_all();
            if full {
                s.drop_windows(1, "windows came faster than the collector took them");
            }
        }

        /// Takes no more windows and waits, at most `limit`, for those queued to be sent; the
        /// ones still waiting then are dropped (and counted), and nothing more is sent. It
        /// returns sooner when nothing can be sent before `limit` is over (the collector asked
        /// for a longer wait). A request on the wire then is not waited for.
        pub(crate) fn close(&self, limit: Duration) {
            let s = &self.shared;
            let deadline = Instant::now() + limit;
            let mut q = s.lock();
            q.closed = true;
            s.changed.notify_all();
            while !q.windows.is_empty() || q.busy {
                let now = Instant::now();
                let waits_past = !q.busy && q.not_before.is_some_and(|t| t >= deadline);
                if now >= deadline || waits_past {
                    break;
                }
                q = s
                    .changed
                    .wait_timeout(q, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            q.hurry = true;
            let left = q.windows.len() as u64;
            q.windows.clear();
            drop(q);
            s.changed.notify_all();
            if left > 0 {
                s.drop_windows(left, "the recording ended before they could be sent");
            }
        }

        /// Windows sent and dropped so far.
        pub(crate) fn counts(&self) -> Counts {
            Counts {
                sent: self.shared.sent.load(Ordering::Relaxed),
                dropped: self.shared.dropped.load(Ordering::Relaxed),
            }
        }

        /// Windows go to the collector instead of files.
        pub(crate) fn only(&self) -> bool {
            self.shared.only
        }

        /// The collector's URL, as messages show it.
        pub(crate) fn endpoint(&self) -> &str {
            &self.shared.shown
        }
    }

    impl Drop for Exporter {
        fn drop(&mut self) {
            let mut q = self.shared.lock();
            q.closed = true;
            q.hurry = true;
            drop(q);
            self.shared.changed.notify_all();
        }
    }

    impl Shared {
        fn lock(&self) -> MutexGuard<'_, Queue> {
            self.queue.lock().unwrap_or_else(|e| e.into_inner())
        }

        fn drop_windows(&self, n: u64, why: &str) {
            self.dropped.fetch_add(n, Ordering::Relaxed);
            if !self.said.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "fdr: a window meant for the OpenTelemetry collector at {} was dropped ({why}); \
                     dropped windows are counted in fdr::stats() and not said again",
                    self.shown
                );
            }
        }

        /// The next window to send, once the collector's wait is over; `None` when the thread
        /// is to end.
        fn next(&self) -> Option<Pending> {
            let mut q = self.lock();
            loop {
                if q.hurry || (q.closed && q.windows.is_empty()) {
                    return None;
                }
                let wait = match q.not_before {
                    _ if q.windows.is_empty() => None,
                    Some(t) => t.checked_duration_since(Instant::now()),
                    None => None,
                };
                match wait {
                    Some(d) if !d.is_zero() => {
                        q = self
                            .changed
                            .wait_timeout(q, d)
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                    _ => match q.windows.pop_front() {
                        Some(p) => {
                            q.not_before = None;
                            q.busy = true;
                            return Some(p);
                        }
                        None => q = self.changed.wait(q).unwrap_or_else(|e| e.into_inner()),
                    },
                }
            }
        }

        /// One turn of `p`: its requests from the first not yet accepted, until one fails.
        fn turn(&self, p: &mut Pending) -> Turn {
            let started = Instant::now();
            let again = |p: &mut Pending, e: fdr_otlp::Error| {
                let r = p.retry.get_or_insert(Retrying {
                    since: started,
                    attempts: 0,
                    backoff: self.policy.initial_backoff,
                });
                r.attempts += 1;
                match self.policy.wait(&e, r.backoff) {
                    Some(wait) => {
                        r.backoff = self.policy.next_backoff(r.backoff);
                        Turn::Again(e, wait)
                    }
                    None => Turn::Refused(e.to_string()),
                }
            };
            if self.may_probe && self.lock().unreachable {
                if let Err(e) = self.client.endpoint().reachable(self.timeout) {
                    return again(p, e);
                }
            }
            let w = match window(&p.log, &self.about, &Default::default()) {
                Ok(w) => w,
                Err(e) => return Turn::Refused(format!("its log could not be read: {e}")),
            };
            if w.calls.is_empty() {
                // Nothing to show: done without a request.
                return Turn::Sent;
            }
            let mut requests = each_request(&w, self.max_spans).skip(p.done);
            for r in requests.by_ref() {
                if self.lock().hurry {
                    return again(
                        p,
                        fdr_otlp::Error::Io {
                            addr: self.shown.clone(),
                            detail: "the recording ended".into(),
                        },
                    );
                }
                let body = self.client.body(&r);
                match self.client.post(&body, self.timeout) {
                    Ok(_) => {
                        p.done += 1;
                        p.retry = None;
                        self.lock().unreachable = false;
                    }
                    Err(e) => {
                        let unreachable = matches!(
                            e,
                            fdr_otlp::Error::Connect { .. } | fdr_otlp::Error::Resolve { .. }
                        );
                        self.lock().unreachable = unreachable;
                        return again(p, e);
                    }
                }
            }
            Turn::Sent
        }
    }

    fn run(s: &Arc<Shared>) {
        // Turning windows into requests takes CPU the program's threads may want: this thread
        // yields to them (a lower priority). Best effort: a failure leaves it at the program's
        // priority.
        crate::platform::lower_thread_priority();
        while let Some(mut p) = s.next() {
            let turn = s.turn(&mut p);
            let mut q = s.lock();
            q.busy = false;
            let dropped = match turn {
                Turn::Sent => {
                    s.sent.fetch_add(1, Ordering::Relaxed);
                    None
                }
                Turn::Refused(why) => Some(format!("not accepted: {why}")),
                Turn::Again(_, _) if q.hurry => {
                    Some("the recording ended before it was accepted".to_string())
                }
                Turn::Again(e, wait) => {
                    let r = p.retry.as_ref().expect("a failed turn counts its attempt");
                    let spent = r.since.elapsed();
                    if spent.saturating_add(wait) >= s.retry_for {
                        let gave_up = fdr_otlp::Error::GaveUp {
                            attempts: r.attempts,
                            spent,
                            last: Box::new(e),
                        };
                        Some(format!("not accepted: {gave_up}"))
                    } else if q.windows.len() >= q.capacity {
                        // The newer windows in the queue matter more than the oldest one.
                        Some("windows came faster than the collector took them".to_string())
                    } else {
                        q.not_before = Some(Instant::now() + wait);
                        q.windows.push_back(p);
                        None
                    }
                }
            };
            drop(q);
            s.changed.notify_all();
            if let Some(why) = dropped {
                s.drop_windows(1, &why);
            }
        }
    }
}
