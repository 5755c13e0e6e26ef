//! A flight data recorder for Rust programs.
//!
//! Put `#[fdr::instrument_fdr]` on the functions you care about (or `fdr::fdr_scope!` in a
//! block), build with the `enable` feature, and the program records every call's entry and exit
//! into per-thread memory buffers at about the cost of reading the CPU's timestamp counter. The
//! recorder keeps the most recent window of execution and writes it out on demand, on panic, at
//! exit, or when you ask; the `fdr` command turns the log into latency tables, call trees, flame
//! graphs and Perfetto timelines.
//!
//! Without the `enable` feature the attribute leaves functions exactly as written and this API
//! compiles to nothing that records: [`start`] hands back an inert [`Recorder`] whose methods
//! succeed without writing anything.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! #[fdr::instrument_fdr]
//! fn handle(request: u32) -> u32 {
//!     request * 2
//! }
//!
//! let rec = fdr::start(
//!     fdr::Config::default()
//!         .buffer_size(16 * 1024)
//!         .buffer_count(512)
//!         .threshold(Duration::from_micros(5))
//!         .mode(fdr::Mode::Ring),
//! )?;
//! handle(21);
//! rec.write_snapshot("app.fdr")?; // the current window, while recording goes on
//! rec.finish("app.fdr")?; // stop and write everything kept
//! # Ok::<(), fdr::Error>(())
//! ```
//!
//! The attribute also goes on an `impl` block, a trait or an inline module, to record the
//! functions inside all at once, except those whose body cannot take long (no calls, loops,
//! macros or `.await`; `#[instrument_fdr(always)]` keeps one in, `skip` leaves one out). With
//! `#[instrument_fdr(trigger = "50ms")]`, a call that lasts longer than the limit writes a
//! snapshot. [`instrument_fdr`] gives every option and the exact rule.
//!
//! ```
//! #[fdr::instrument_fdr]
//! mod store {
//!     pub struct Store {
//!         pub items: Vec<u64>,
//!     }
//!
//!     impl Store {
//!         // Recorded: it calls `iter` and `sum`.
//!         pub fn total(&self) -> u64 {
//!             self.items.iter().sum()
//!         }
//!         // Left out: it cannot take long.
//!         pub fn first_free(&self) -> u64 {
//!             0
//!         }
//!     }
//!
//!     // Recorded, and a call that takes longer than 50 ms writes a snapshot.
//!     #[instrument_fdr(trigger = "50ms")]
//!     pub fn flush(store: &mut Store) -> u64 {
//!         let total = store.total();
//!         store.items.clear();
//!         total
//!     }
//! }
//!
//! let mut s = store::Store { items: vec![1, 2] };
//! assert_eq!(s.first_free(), 0);
//! assert_eq!(store::flush(&mut s), 3);
//! ```
//!
//! Setting `FDR_OPTIONS` (for example `FDR_OPTIONS="threshold_us=5 out=app.fdr"`) makes an
//! instrumented program record from its first instrumented call and write its log at exit and
//! on panic, with no code change.

#![warn(missing_docs)]

use std::io::Write;
use std::path::Path;

pub use fdr_macros::{fdr_scope, instrument_fdr};

/// The README's examples, compiled and run as this crate's tests: what the README shows a user
/// is the API as it is (recording is off in these tests, so they write nothing).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;
pub use fdr_runtime::{
    Clock, Config, Error, Limit, LogArg, Mode, Signal, Stats, Trigger, AUTO_FLOOR, AUTO_K,
    AUTO_RECOMPUTE, AUTO_RECOMPUTE_MAX, AUTO_WARMUP, AUTO_WARMUP_TIME,
};

// The README's code blocks are compiled and run as this crate's doc tests, with and without the
// instrumentation (`cargo test --workspace` builds `fdr` with `enable`, as `fdr-tests` asks).
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

// The mode is chosen here, once: each module gives the same items, which the public API below
// wraps without knowing which mode it is in.
#[cfg(feature = "enable")]
#[path = "enabled.rs"]
mod mode;
#[cfg(not(feature = "enable"))]
#[path = "disabled.rs"]
mod mode;

// Only instrumented expansions name it, and only instrumented builds link the runtime it
// re-exports. Its name is versioned: see the module's own documentation.
#[cfg(feature = "enable")]
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private_v1;

#[cfg(feature = "tokio")]
pub mod tokio;

/// True when this build records (the `enable` feature is on).
///
/// ```
/// println!("recording compiled in: {}", fdr::ENABLED);
/// ```
pub const ENABLED: bool = cfg!(feature = "enable");

/// Starts the process's recorder. Only one runs at a time; [`recorder`] reaches it from
/// anywhere.
///
/// ```no_run
/// let rec = fdr::start(fdr::Config::default())?;
/// rec.finish("app.fdr")?;
/// # Ok::<(), fdr::Error>(())
/// ```
#[inline]
pub fn start(config: Config) -> Result<Recorder, Error> {
    mode::start(config).map(|inner| Recorder { inner })
}

/// The running recorder, if one was started (always `None` without the `enable` feature).
///
/// ```
/// if let Some(rec) = fdr::recorder() {
///     rec.write_snapshot("stall.fdr").ok();
/// }
/// ```
#[inline]
pub fn recorder() -> Option<Recorder> {
    mode::recorder().map(|inner| Recorder { inner })
}

/// Writes the running recorder's profile to `path` now, from any thread, while every thread
/// goes on recording: the call paths with their counts, times and latency histograms (see
/// [`Config::profile`]). Does nothing when no recorder runs (or without the `enable` feature);
/// [`Error::NotProfiling`] when the running one keeps no profile.
///
/// ```no_run
/// // FDR_OPTIONS="mode=profile" ./app, then, somewhere in the app:
/// fdr::profile("now.fdrprof")?;
/// # Ok::<(), fdr::Error>(())
/// ```
pub fn profile(path: impl AsRef<Path>) -> Result<(), Error> {
    match recorder() {
        Some(rec) => rec.write_profile(path),
        None => Ok(()),
    }
}

/// Records that the calls this thread makes until the returned guard drops run inside the
/// W3C trace of `traceparent` (the header value a request carries). When a trigger's slow call
/// ran inside it, the window sent to an OpenTelemetry collector ([`Config::otlp_endpoint`], or
/// `fdr export --otlp`) joins that trace: its spans take the trace id and hang under the
/// caller's span, so the window shows up inside the request's own trace. An invalid
/// `traceparent` records nothing; without the `enable` feature nothing is recorded.
///
/// ```
/// fn handle(traceparent: &str) {
///     let _trace = fdr::join_trace(traceparent);
///     // ... the request's work, recorded inside its trace ...
/// }
/// handle("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// ```
#[inline]
pub fn join_trace(traceparent: &str) -> TraceScope {
    TraceScope {
        _inner: mode::join_trace(traceparent),
    }
}

/// The guard of [`join_trace`]: the trace is left when it drops.
#[must_use = "the trace is left when this guard drops: bind it (`let _trace = ...`)"]
pub struct TraceScope {
    _inner: mode::TraceScope,
}

/// A handle on the running recorder. Clones refer to the same recording.
///
/// ```no_run
/// let rec = fdr::start(fdr::Config::default())?;
/// let for_worker = rec.clone();
/// std::thread::spawn(move || for_worker.write_snapshot("worker.fdr"))
///     .join()
///     .expect("the worker ran")?;
/// rec.finish("app.fdr")?;
/// # Ok::<(), fdr::Error>(())
/// ```
#[derive(Clone)]
pub struct Recorder {
    inner: mode::Recorder,
}

impl Recorder {
    /// Writes the current window to `out` while recording goes on. Only one snapshot runs at a
    /// time; a second caller gets [`Error::SnapshotInProgress`].
    ///
    /// ```no_run
    /// let rec = fdr::start(fdr::Config::default())?;
    /// let mut log = Vec::new();
    /// rec.snapshot(&mut log)?;
    /// # Ok::<(), fdr::Error>(())
    /// ```
    #[inline]
    pub fn snapshot<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), Error> {
        self.inner.snapshot(out)
    }

    /// Writes the current window to a file while recording goes on.
    ///
    /// ```no_run
    /// let rec = fdr::start(fdr::Config::default())?;
    /// rec.write_snapshot("now.fdr")?;
    /// # Ok::<(), fdr::Error>(())
    /// ```
    #[inline]
    pub fn write_snapshot(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        self.inner.write_snapshot(path)
    }

    /// Stops recording and writes everything kept to a file.
    ///
    /// ```no_run
    /// let rec = fdr::start(fdr::Config::default())?;
    /// rec.finish("app.fdr")?;
    /// # Ok::<(), fdr::Error>(())
    /// ```
    #[inline]
    pub fn finish(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        self.inner.finish(path)
    }

    /// Stops recording and writes everything kept to `out`.
    ///
    /// ```no_run
    /// let rec = fdr::start(fdr::Config::default())?;
    /// rec.finish_to(&mut std::io::sink())?;
    /// # Ok::<(), fdr::Error>(())
    /// ```
    #[inline]
    pub fn finish_to<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), Error> {
        self.inner.finish_to(out)
    }

    /// Writes the profile as it stands to `out` while every thread goes on recording (the
    /// recording must keep one: [`Config::profile`] or [`Mode::Profile`]; else
    /// [`Error::NotProfiling`]). `fdr profile` reads it.
    ///
    /// ```no_run
    /// let rec = fdr::start(fdr::Config::default().mode(fdr::Mode::Profile))?;
    /// let mut profile = Vec::new();
    /// rec.profile_to(&mut profile)?;
    /// # Ok::<(), fdr::Error>(())
    /// ```
    #[inline]
    pub fn profile_to<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), Error> {
        self.inner.profile_to(out)
    }

    /// Writes the profile as it stands to a file, while recording goes on.
    ///
    /// ```no_run
    /// let rec = fdr::start(fdr::Config::default().profile(true))?;
    /// rec.write_profile("now.fdrprof")?;
    /// # Ok::<(), fdr::Error>(())
    /// ```
    #[inline]
    pub fn write_profile(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        self.inner.write_profile(path)
    }

    /// True until the recording is finished (always false without the `enable` feature).
    ///
    /// ```no_run
    /// let rec = fdr::start(fdr::Config::default())?;
    /// assert_eq!(rec.is_recording(), fdr::ENABLED);
    /// rec.finish("app.fdr")?;
    /// assert!(!rec.is_recording());
    /// # Ok::<(), fdr::Error>(())
    /// ```
    #[inline]
    pub fn is_recording(&self) -> bool {
        self.inner.is_recording()
    }

    /// Counters so far: threads, dropped records, recycled buffers.
    ///
    /// ```no_run
    /// let rec = fdr::start(fdr::Config::default())?;
    /// let stats = rec.stats();
    /// println!("{stats:?}");
    /// # Ok::<(), fdr::Error>(())
    /// ```
    #[inline]
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }
}
