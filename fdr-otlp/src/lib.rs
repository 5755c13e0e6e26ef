//! fdr's windows as OpenTelemetry traces: the OTLP messages ([`proto`]), a log's bytes turned
//! into a window of calls to export ([`convert`]), a window and its conversion to export
//! requests, one span per call ([`spans`]), and the sender: where requests go and how, from
//! fdr's options and the OpenTelemetry variables ([`settings`], [`endpoint`], [`headers`]), one
//! export attempt over HTTP or HTTPS with `ureq` ([`client`]), and the retries the OTLP
//! specification asks for ([`retry`]).
//!
//! It starts no thread: [`retry::send`] and [`client::Client::post`] block their caller, which
//! chooses where they run (the runtime: a thread of its own; the `fdr` command: its main
//! thread).
//!
//! ```no_run
//! use fdr_otlp::client::{Client, Transport};
//! use fdr_otlp::endpoint::Endpoint;
//! use fdr_otlp::retry::{send, RetryPolicy};
//! use fdr_otlp::spans::{requests, Call, Window};
//! let window = Window {
//!     service_name: "app".into(),
//!     pid: std::process::id(),
//!     calls: vec![Call { function: "app::main".into(), ..Call::default() }],
//!     ..Window::default()
//! };
//! let client = Client::new(&Transport::new(Endpoint::parse("https://collector.example:4318")?))?;
//! let report = send(&client, &requests(&window, 10_000), &RetryPolicy::default())?;
//! assert_eq!(report.spans, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
pub mod convert;
pub mod endpoint;
mod error;
pub mod headers;
pub mod proto;
pub mod retry;
pub mod settings;
pub mod spans;

pub use error::{Error, RETRYABLE_STATUSES};
pub use spans::{each_request, encode, requests, Call, TraceParent, Window, WindowReason};
