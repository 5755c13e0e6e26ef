//! Windows sent to an OpenTelemetry collector (`Config::otlp_endpoint`): a bounded queue of
//! written windows and the thread that sends them, so that no recording thread, nor the
//! background writer, ever waits on the network.
//!
//! Whoever writes a window (the background writer for triggers and the signal, the panicking
//! thread, the program's own snapshot) hands a copy of the log's bytes to [`Exporter::push`]: a
//! short lock and a wake-up. When the queue is full the oldest window is dropped: the newest
//! windows are the ones a team looks at. The sender thread turns each log into OTLP requests
//! (`fdr_otlp::log`, the calls `fdr calls` shows) and posts them with the retries of the OTLP
//! specification. A window dropped, or not accepted within its retry budget, is counted, and
//! said on stderr once per recording.

use std::time::Duration;

/// Counters of the windows handed to the exporter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub sent: u64,
    pub dropped: u64,
}

#[cfg(feature = "otlp")]
pub(crate) use real::Exporter;

#[cfg(not(feature = "otlp"))]
pub(crate) use none::Exporter;

#[cfg(not(feature = "otlp"))]
mod none {
    use super::*;

    /// Without the `otlp` feature there is no exporter (`Config::validate` refuses an
    /// endpoint), so this is never made.
    pub(crate) enum Exporter {}

    impl Exporter {
        pub(crate) fn start(_: &crate::Config) -> Option<Exporter> {
            None
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

#[cfg(feature = "otlp")]
mod real {
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Condvar, Mutex, MutexGuard};
    use std::time::Instant;

    use fdr_otlp::http::{send, Endpoint, RetryPolicy};
    use fdr_otlp::log::{window, About};
    use fdr_otlp::spans::each_request;

    use super::*;

    /// The exporter of one recording. Dropping it lets its thread end after the window it is
    /// sending, if any.
    pub(crate) struct Exporter {
        shared: Arc<Shared>,
    }

    struct Shared {
        endpoint: String,
        /// The endpoint, parsed (`Config::validate` checked it).
        parsed: Option<Endpoint>,
        /// The last window could not be sent: the next is sent only if a connection can be
        /// made first, so a collector that is down costs a connection attempt per window, not
        /// the work of turning it into requests.
        failing: AtomicBool,
        about: About,
        only: bool,
        max_spans: usize,
        timeout: Duration,
        retry_for: Duration,
        queue: Mutex<Queue>,
        /// Signalled when a window is queued, one is done with, or the exporter closes.
        changed: Condvar,
        sent: AtomicU64,
        dropped: AtomicU64,
        said: AtomicBool,
    }

    struct Queue {
        windows: VecDeque<Vec<u8>>,
        capacity: usize,
        /// A window is being sent.
        busy: bool,
        /// No more windows are taken; the thread ends once the queue is empty.
        closed: bool,
        /// Waits are cut short: the recording ended and its flush time is over.
        hurry: bool,
    }

    impl Exporter {
        /// The exporter `config` asks for, its thread started; `None` without an endpoint (or
        /// when the thread cannot start, which is said on stderr).
        pub(crate) fn start(config: &crate::Config) -> Option<Exporter> {
            let o = &config.otlp;
            let endpoint = o.endpoint.clone()?;
            let shared = Arc::new(Shared {
                about: About {
                    service_name: o.service_name.clone().unwrap_or_default(),
                    host_name: fdr_otlp::spans::local_host_name().unwrap_or_default(),
                    sequence: 0,
                    traceparent: None,
                },
                parsed: Endpoint::parse(&endpoint).ok(),
                failing: AtomicBool::new(false),
                endpoint,
                only: o.only,
                max_spans: o.max_spans as usize,
                timeout: o.timeout,
                retry_for: o.retry_for,
                queue: Mutex::new(Queue {
                    windows: VecDeque::new(),
                    capacity: o.queue as usize,
                    busy: false,
                    closed: false,
                    hurry: false,
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
                Ok(_) => Some(Exporter { shared }),
                Err(e) => {
                    eprintln!(
                        "fdr: could not start the thread that sends windows to {} ({e}); \
                         windows are written to files only",
                        shared.endpoint
                    );
                    None
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
            q.windows.push_back(log);
            drop(q);
            s.changed.notify_all();
            if full {
                s.drop_windows(1, "windows came faster than the collector took them");
            }
        }

        /// Takes no more windows and waits, at most `limit`, for those queued to be sent; the
        /// ones still waiting then are dropped (and counted). The window being sent, if any,
        /// is given up at its next wait.
        pub(crate) fn close(&self, limit: Duration) {
            let s = &self.shared;
            let deadline = Instant::now() + limit;
            let mut q = s.lock();
            q.closed = true;
            s.changed.notify_all();
            while !q.windows.is_empty() || q.busy {
                let now = Instant::now();
                if now >= deadline {
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

        /// The collector's URL.
        pub(crate) fn endpoint(&self) -> &str {
            &self.shared.endpoint
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
                    self.endpoint
                );
            }
        }

        /// The retry waits: cut short once the recording has ended and its flush time is over.
        fn sleep(&self, d: Duration) {
            let deadline = Instant::now() + d;
            let mut q = self.lock();
            while !q.hurry {
                let now = Instant::now();
                if now >= deadline {
                    return;
                }
                q = self
                    .changed
                    .wait_timeout(q, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }

        fn send_one(self: &Arc<Self>, log: &[u8]) -> Result<(), String> {
            if self.failing.load(Ordering::Relaxed) {
                if let Some(e) = &self.parsed {
                    e.reachable(self.timeout).map_err(|e| e.to_string())?;
                }
            }
            let w = window(log, &self.about, &Default::default()).map_err(|e| e.to_string())?;
            if w.calls.is_empty() {
                // Nothing to show: done without a request.
                return Ok(());
            }
            let me = Arc::clone(self);
            let policy = RetryPolicy {
                timeout: self.timeout,
                max_elapsed: self.retry_for,
                sleep: Arc::new(move |d| me.sleep(d)),
                ..RetryPolicy::default()
            };
            send(&self.endpoint, each_request(&w, self.max_spans), &policy)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
    }

    fn run(s: &Arc<Shared>) {
        // Turning windows into requests takes CPU the program's threads may want: this thread
        // yields to them (nice 10). Best effort: a failure leaves it at the program's priority.
        // SAFETY: setpriority with this thread's id changes only this thread's nice value.
        unsafe {
            libc::setpriority(
                libc::PRIO_PROCESS,
                libc::syscall(libc::SYS_gettid) as libc::id_t,
                10,
            )
        };
        loop {
            let log = {
                let mut q = s.lock();
                loop {
                    if let Some(w) = q.windows.pop_front() {
                        q.busy = true;
                        break w;
                    }
                    if q.closed {
                        return;
                    }
                    q = s.changed.wait(q).unwrap_or_else(|e| e.into_inner());
                }
            };
            match s.send_one(&log) {
                Ok(()) => {
                    s.failing.store(false, Ordering::Relaxed);
                    s.sent.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    s.failing.store(true, Ordering::Relaxed);
                    s.drop_windows(1, &format!("not accepted: {e}"));
                }
            }
            drop(log);
            s.lock().busy = false;
            s.changed.notify_all();
        }
    }
}
