//! `fdr export`: a log's window as OpenTelemetry spans, one per call (of every thread, behind
//! the filters), sent to an OTLP/HTTP collector or written as one protobuf
//! `ExportTraceServiceRequest` ([`fdr_otlp`] converts and sends).
//!
//! The calls are [`fdr_format::window`]'s (those `fdr calls --format json` lists), from two
//! reads of the log (the first pass's plan, then the calls, behind the filters), converted by
//! [`fdr_otlp::convert::convert`] as the runtime's exporter converts a window it has just
//! written: a span's start is the window origin's Unix time plus the call's `start_ns`, its end
//! that start plus the call's `duration_ns`. The calls are held in memory, at most
//! [`MAX_EXPORT_CALLS`].

use fdr_format::window::{Collector, LimitPassed, WindowLimits};
use fdr_otlp::client::Client;
use fdr_otlp::convert::About;
use fdr_otlp::retry::{RetryPolicy, SendReport};
use fdr_otlp::spans::{each_request, encode, Window};

use crate::limits::MAX_EXPORT_CALLS;
use crate::model::engine::Report;
use crate::model::filter::Filter;
use crate::model::input::Log;
use crate::model::pass::{plan, replay};
use crate::CliError;

/// What `fdr export` puts in the resource and the trace, besides what the log says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExportOptions {
    /// `service.name`; default: the program's file name from the log.
    pub service_name: Option<String>,
    /// `host.name`; default: none (a log does not say which machine wrote it).
    pub host_name: Option<String>,
    /// A W3C `traceparent` whose trace the spans join.
    pub traceparent: Option<String>,
    /// More resource attributes (`OTEL_RESOURCE_ATTRIBUTES`).
    pub resource: Vec<(String, String)>,
}

/// The window of `log` behind `filter`, every call a [`fdr_otlp::spans::Call`], ready for
/// [`fdr_otlp`]: the calls of [`fdr_format::window`] (the plan, then the calls through the
/// filter) converted as the runtime's exporter converts them
/// ([`fdr_otlp::convert::convert`]).
pub(crate) fn window(
    log: &Log,
    filter: &Filter,
    opts: &ExportOptions,
    progress: &dyn Report,
) -> Result<Window, CliError> {
    let limits = WindowLimits {
        calls: MAX_EXPORT_CALLS,
        ..WindowLimits::default()
    };
    let p = plan(log, filter, progress)?;
    if p.calls > MAX_EXPORT_CALLS as u64 {
        return Err(CliError::from(LimitPassed::Calls(MAX_EXPORT_CALLS)).in_log(log.name()));
    }
    let mut c = Collector::new(limits);
    let d = replay(log, &mut c, Some(&p), filter, progress, 1)?;
    let end = filter.tasks_end(fdr_format::replay::log_end(&d.info, &d.threads));
    let w = c
        .finish_at(&d.info, &d.threads, end)
        .map_err(|err| CliError::Input {
            path: log.name().to_string(),
            err,
        })?;
    let about = About {
        service_name: opts.service_name.clone().unwrap_or_default(),
        host_name: opts.host_name.clone().unwrap_or_default(),
        sequence: 0,
        traceparent: opts.traceparent.clone(),
        resource: opts.resource.clone(),
    };
    Ok(fdr_otlp::convert::convert(&w, &about))
}

/// How many times [`window`] reads the log: twice, the first pass's plan (the calls open when
/// each window started, the calls that pass the filter) and then the calls.
pub(crate) fn passes(_: &Filter) -> u64 {
    2
}

/// A limit of a window's calls passed: what to do about it. Only `fdr export` holds a window's
/// calls ([`Collector`]), so the limit is worded as its.
impl From<LimitPassed> for CliError {
    fn from(e: LimitPassed) -> CliError {
        let what = match e {
            LimitPassed::Calls(n) => format!("the window holds more than {n} calls"),
            LimitPassed::Tasks(n) => format!("the window holds more than {n} async tasks"),
            LimitPassed::ArgValues(n) => {
                format!("the window's calls hold more than {n} arguments")
            }
        };
        CliError::limit(format!(
            "{what}, fdr export's limit for one export: export a part of it (--thread, \
             --from/--to, --function or --min)"
        ))
    }
}

/// The window as one protobuf `ExportTraceServiceRequest` holding every span.
pub(crate) fn request_bytes(w: &Window) -> Vec<u8> {
    let r = each_request(w, 0)
        .next()
        .expect("a window makes at least one request");
    encode(&r)
}

/// Sends the window through `client`, at most `max_spans` spans per request, with retries per
/// `policy`.
pub(crate) fn send(
    w: &Window,
    client: &Client,
    max_spans: usize,
    policy: &RetryPolicy,
) -> Result<SendReport, CliError> {
    let total = each_request(w, max_spans).len();
    let url = client.endpoint().to_string();
    fdr_otlp::retry::send(client, each_request(w, max_spans), policy).map_err(|e| {
        let mut what = e.error.to_string();
        if e.report.requests > 0 {
            what.push_str(&format!(
                " ({} of {total} requests, {} spans, were sent before)",
                e.report.requests, e.report.spans
            ));
        }
        CliError::Export {
            to: url.to_string(),
            what,
        }
    })
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn max_calls() {
        assert_eq!(crate::limits::MAX_EXPORT_CALLS, 2_097_152);
    }

    #[test]
    fn options() {
        let o = crate::commands::export::ExportOptions::default();
        assert!(o.service_name.is_none());
    }

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn window() -> Result<(), crate::CliError> {
        use crate::commands::export::{window, ExportOptions};
        use crate::model::engine::Silent;
        use crate::model::{filter::Filter, input::Log};
        let log = Log::open("app.fdr".as_ref())?;
        let w = window(&log, &Filter::none(), &ExportOptions::default(), &Silent)?;
        println!("{} calls", w.calls.len());
        Ok::<(), crate::CliError>(())
    }

    #[test]
    fn passes() {
        use crate::limits::MAX_EXPORT_CALLS;
        use crate::model::filter::Filter;
        assert_eq!(crate::commands::export::passes(&Filter::none()), 2);
    }

    #[test]
    fn request_bytes() {
        use fdr_otlp::spans::Window;
        let bytes = crate::commands::export::request_bytes(&Window::default());
        assert!(!bytes.is_empty());
    }

    // Compiled, not run: it reads a log that is not there.
    #[allow(dead_code)]
    fn send() -> Result<(), Box<dyn std::error::Error>> {
        use fdr_otlp::{
            client::{Client, Transport},
            endpoint::Endpoint,
            retry::RetryPolicy,
            spans::Window,
        };
        let client = Client::new(&Transport::new(Endpoint::parse("http://localhost:4318")?))?;
        let r = crate::commands::export::send(
            &Window::default(),
            &client,
            10_000,
            &RetryPolicy::default(),
        )?;
        println!("{} spans sent", r.spans);
        Ok::<(), Box<dyn std::error::Error>>(())
    }
}
