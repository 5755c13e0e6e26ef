//! fdr's windows as OpenTelemetry traces: the OTLP messages ([`proto`]), a window of recorded
//! calls and its conversion to export requests, one span per call ([`spans`]), and a small
//! blocking OTLP/HTTP client that sends them with the retries the OTLP specification asks for
//! ([`http`]).
//!
//! The crate depends on `prost` and the standard library only, so that both the `fdr` command
//! (`fdr export`) and the runtime (its background writer) can use it. It starts no thread:
//! [`http::send`] blocks its caller.
//!
//! ```no_run
//! use fdr_otlp::http::{send, RetryPolicy};
//! use fdr_otlp::spans::{requests, Call, Window};
//! let window = Window {
//!     service_name: "app".into(),
//!     pid: std::process::id(),
//!     calls: vec![Call { function: "app::main".into(), ..Call::default() }],
//!     ..Window::default()
//! };
//! let report = send("http://localhost:4318", &requests(&window, 10_000), &RetryPolicy::default())?;
//! assert_eq!(report.spans, 1);
//! # Ok::<(), fdr_otlp::http::SendError>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod http;
pub mod log;
pub mod proto;
pub mod spans;

pub use http::{post, send, Endpoint, Error, Response, RetryPolicy, SendError, SendReport};
pub use spans::{each_request, encode, requests, Call, TraceParent, Window, WindowReason};
