//! Joining a W3C trace: [`join_trace`] records a call of the marker function
//! (`fdr_format::trace_context::MARKER`) whose logged arguments are the trace context, open
//! until its guard drops. A window whose slow call ran inside it is exported into that trace
//! (`fdr_otlp::convert::traceparent_of`). Calls with logged arguments are never erased or culled,
//! so the marker stays in the window whatever the threshold.

use fdr_format::trace_context::{encode, ARGS, MARKER};

use crate::hooks::CallGuard;
use crate::tables::functions::{FnDesc, FnKindTag};

#[linkme::distributed_slice(crate::tables::functions::FUNCTIONS)]
static JOIN: FnDesc = FnDesc::new(MARKER, file!(), line!(), FnKindTag::Scope, &ARGS);

/// While it lives, calls on this thread run inside a W3C trace: see [`join_trace`].
#[must_use = "the trace is left when this guard drops: bind it (`let _trace = ...`)"]
pub struct TraceScope {
    _call: Option<CallGuard>,
}

/// Records that the calls this thread makes until the returned guard drops run inside the
/// trace of `traceparent` (a W3C `traceparent` header value, such as a request carries). When
/// a trigger's slow call ran inside it, the window sent to the OpenTelemetry collector
/// (`Config::otlp_endpoint`, or `fdr export --otlp`) joins that trace: its spans take the trace
/// id and hang under the `traceparent`'s span. An invalid `traceparent` records nothing.
///
/// ```
/// let rec = fdr_runtime::start(fdr_runtime::Config::default().buffer_count(2))?;
/// {
///     let _trace = fdr_runtime::join_trace("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
///     // ... handle the request ...
/// }
/// rec.finish_to(&mut std::io::sink())?;
/// # Ok::<(), fdr_runtime::Error>(())
/// ```
#[inline]
pub fn join_trace(traceparent: &str) -> TraceScope {
    crate::tables::functions::marker_ran();
    TraceScope {
        _call: encode(traceparent).map(|words| CallGuard::enter_args(&JOIN, &words)),
    }
}
