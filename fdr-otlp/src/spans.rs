//! A window of recorded calls, in a neutral form ([`Window`], [`Call`]) that the `fdr` command
//! builds from a log and the runtime can build from its buffers, and its conversion to OTLP
//! export requests ([`requests`]), one span per call.
//!
//! What a span holds:
//!
//! - name: the function's full name; kind `SPAN_KIND_INTERNAL`; status unset;
//! - trace id: the W3C `traceparent`'s ([`Window::traceparent`]) when it is given and valid,
//!   else one id per window, random-looking but derived from the window's process id, start
//!   and sequence number ([`trace_id`]), so the same window always converts the same way;
//! - span id: 8 bytes derived from the call's index in the window, unique within the window and
//!   never all zero ([`span_id`]); parent span id: the caller's, or for a call without a caller
//!   (a root) the `traceparent`'s span id when one is given, else none;
//! - flags: the W3C trace flags (the `traceparent`'s, else sampled), and whether the parent is
//!   remote (it is for a root under a `traceparent`);
//! - start and end: Unix nanoseconds, as [`Call`] gives them. A call still running when the
//!   window was written ([`Call::open`]) ends when the window was written, and has
//!   `fdr.open = true`;
//! - attributes ([`attr`]): `thread.id`, `thread.name` (when known), `fdr.open` (open calls),
//!   `fdr.inferred_start` (calls entered before the window: their start is the window's),
//!   `fdr.arg.NAME` per logged argument; on the span of an async task's life `fdr.task` (the id),
//!   `fdr.kind = task` and `fdr.cancelled` when it was dropped before completing, and on a poll
//!   of a known task `fdr.task` and `fdr.kind = poll`; and on every
//!   root span the window's attributes: `fdr.reason`, `fdr.trigger.function`,
//!   `fdr.trigger.limit_ns`, `fdr.trigger.duration_ns`, `fdr.trigger.cpu_wait_ns`,
//!   `fdr.trigger.off_cpu_ns` (those the window has).
//!
//! - events: on the span of an async task's life, one event `await` per wait of the task at an
//!   await site ([`Call::waits`]), at the wait's start, with `code.location` (`FILE:LINE:COLUMN`
//!   of the `.await`), `fdr.await.waited_ns`, `fdr.await.polls` and `fdr.await.dropped` (a
//!   wait ended by dropping the task).
//!
//! Every request carries the resource (`service.name`, `host.name`, `process.pid`,
//! `process.executable.name`, `telemetry.sdk.name` = `fdr`, `telemetry.sdk.language` = `rust`,
//! `telemetry.sdk.version`) and the instrumentation scope `fdr`.
//!
//! ```
//! use fdr_otlp::spans::{requests, Call, Window};
//! let w = Window {
//!     service_name: "app".into(),
//!     pid: 42,
//!     start_unix_ns: 1_700_000_000_000_000_000,
//!     calls: vec![
//!         Call { function: "app::main".into(), tid: 7, start_unix_ns: 1_700_000_000_000_000_000,
//!                end_unix_ns: 1_700_000_000_000_009_000, ..Call::default() },
//!         Call { function: "app::work".into(), tid: 7, start_unix_ns: 1_700_000_000_000_001_000,
//!                end_unix_ns: 1_700_000_000_000_002_000, parent: Some(0), ..Call::default() },
//!     ],
//!     ..Window::default()
//! };
//! let reqs = requests(&w, 1000);
//! let spans = &reqs[0].resource_spans[0].scope_spans[0].spans;
//! assert_eq!(spans[1].parent_span_id, spans[0].span_id);
//! assert_eq!(spans[0].trace_id, spans[1].trace_id);
//! ```

use prost::Message;

use crate::proto::{
    span, span::SpanKind, span_flags, ExportTraceServiceRequest, InstrumentationScope, KeyValue,
    Resource, ResourceSpans, ScopeSpans, Span,
};

/// The attribute names fdr writes.
///
/// ```
/// assert_eq!(fdr_otlp::spans::attr::OPEN, "fdr.open");
/// ```
pub mod attr {
    /// Resource: the service's name.
    pub const SERVICE_NAME: &str = "service.name";
    /// Resource: the machine's name.
    pub const HOST_NAME: &str = "host.name";
    /// Resource: the process id.
    pub const PROCESS_PID: &str = "process.pid";
    /// Resource: the program's file name.
    pub const PROCESS_EXECUTABLE_NAME: &str = "process.executable.name";
    /// Resource: `fdr`.
    pub const SDK_NAME: &str = "telemetry.sdk.name";
    /// Resource: `rust`.
    pub const SDK_LANGUAGE: &str = "telemetry.sdk.language";
    /// Resource: fdr's version.
    pub const SDK_VERSION: &str = "telemetry.sdk.version";
    /// Span: the thread id (int).
    pub const THREAD_ID: &str = "thread.id";
    /// Span: the thread's name (string).
    pub const THREAD_NAME: &str = "thread.name";
    /// Span: true on a call still running when the window was written.
    pub const OPEN: &str = "fdr.open";
    /// Span: true on a call entered before the window (its start is the window's).
    pub const INFERRED_START: &str = "fdr.inferred_start";
    /// Span: prefix of a logged argument's attribute, `fdr.arg.NAME` (int).
    pub const ARG_PREFIX: &str = "fdr.arg.";
    /// Span: an async task's id, on the span of the task's life and on the polls that served
    /// it (int).
    pub const TASK: &str = "fdr.task";
    /// Span: `task` on the span of an async task's life, `poll` on a poll of a known task.
    pub const KIND: &str = "fdr.kind";
    /// Span: true on a task dropped before completing.
    pub const CANCELLED: &str = "fdr.cancelled";
    /// Span event: a wait of a task at an await site.
    pub const AWAIT_EVENT: &str = "await";
    /// `await` event: where the `.await` is, `FILE:LINE:COLUMN` (string).
    pub const CODE_LOCATION: &str = "code.location";
    /// `await` event: how long the task waited there, nanoseconds (int).
    pub const AWAIT_WAITED_NS: &str = "fdr.await.waited_ns";
    /// `await` event: polls of the await that returned `Pending` (int).
    pub const AWAIT_POLLS: &str = "fdr.await.polls";
    /// `await` event: true on a wait ended by dropping the task.
    pub const AWAIT_DROPPED: &str = "fdr.await.dropped";
    /// Root spans: why the window was written (`slow call`, `still running`, `signal` ...).
    pub const REASON: &str = "fdr.reason";
    /// Root spans: the function whose call fired the trigger.
    pub const TRIGGER_FUNCTION: &str = "fdr.trigger.function";
    /// Root spans: the trigger's limit, nanoseconds (int).
    pub const TRIGGER_LIMIT_NS: &str = "fdr.trigger.limit_ns";
    /// Root spans: how long the triggering call lasted (or had run), nanoseconds (int).
    pub const TRIGGER_DURATION_NS: &str = "fdr.trigger.duration_ns";
    /// Root spans: how long, at least, the triggering call's thread waited for a CPU while the
    /// call ran (descheduled, not slow), nanoseconds (int); only when the log measured it.
    pub const TRIGGER_CPU_WAIT_NS: &str = "fdr.trigger.cpu_wait_ns";
    /// Root spans: how long the triggering call's thread was off the CPU without waiting for
    /// one (blocked: a sleep, a lock, I/O), nanoseconds (int); only when the log measured it.
    pub const TRIGGER_OFF_CPU_NS: &str = "fdr.trigger.off_cpu_ns";
}

/// The instrumentation scope's name, and `telemetry.sdk.name`.
///
/// ```
/// let r = &fdr_otlp::spans::requests(&Default::default(), 0)[0];
/// let scope = r.resource_spans[0].scope_spans[0].scope.as_ref().unwrap();
/// assert_eq!(scope.name, fdr_otlp::spans::SCOPE_NAME);
/// ```
pub const SCOPE_NAME: &str = "fdr";

/// One window of recorded calls, as the recorder wrote it.
///
/// ```
/// let w = fdr_otlp::spans::Window { service_name: "app".into(), ..Default::default() };
/// assert!(w.calls.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// `service.name`.
    pub service_name: String,
    /// `host.name`; empty: left out.
    pub host_name: String,
    /// `process.pid`.
    pub pid: u32,
    /// `process.executable.name`, the program's file name; empty: left out.
    pub program: String,
    /// `telemetry.sdk.version` and the scope's version: the version of fdr that recorded.
    pub fdr_version: String,
    /// When the window starts, Unix nanoseconds. With `pid` and `sequence`, it makes the trace
    /// id (when no `traceparent` is given).
    pub start_unix_ns: u64,
    /// Which window of the process this is (0, 1, 2 ...), so that two windows starting at the
    /// same nanosecond still get different trace ids.
    pub sequence: u64,
    /// Why the window was written, if known.
    pub reason: Option<WindowReason>,
    /// A W3C trace context (`00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`) to join:
    /// the spans take its trace id and the root spans its span id as their parent. An invalid
    /// one is ignored (see [`TraceParent::parse`]).
    pub traceparent: Option<String>,
    /// More resource attributes, as strings (`OTEL_RESOURCE_ATTRIBUTES`): each replaces fdr's
    /// own attribute of the same key (`host.name` ...); `service.name` is
    /// [`Window::service_name`]'s, never replaced here.
    pub resource: Vec<(String, String)>,
    /// The calls, each one span. A caller comes before the calls it made.
    pub calls: Vec<Call>,
}

/// Why a window was written: the attributes of its root spans.
///
/// ```
/// let r = fdr_otlp::spans::WindowReason { kind: "slow call".into(), function: Some("app::handle".into()),
///                                         limit_ns: Some(1_000_000), duration_ns: Some(3_600_000),
///                                         cpu_wait_ns: None, off_cpu_ns: None };
/// assert_eq!(r.kind, "slow call");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowReason {
    /// `fdr.reason`: `slow call`, `still running`, `signal`, `panic`, `exit`, `api` ...
    pub kind: String,
    /// `fdr.trigger.function`: the function whose call fired the trigger.
    pub function: Option<String>,
    /// `fdr.trigger.limit_ns`: the limit that call passed.
    pub limit_ns: Option<u64>,
    /// `fdr.trigger.duration_ns`: how long that call lasted, or had run when still running.
    pub duration_ns: Option<u64>,
    /// `fdr.trigger.cpu_wait_ns`: how long that call's thread waited for a CPU while it ran
    /// (at least, without [`WindowReason::off_cpu_ns`]), when the runtime measured it.
    pub cpu_wait_ns: Option<u64>,
    /// `fdr.trigger.off_cpu_ns`: how long that call's thread was off the CPU without waiting
    /// for one (blocked), over the whole call, when the runtime measured it.
    pub off_cpu_ns: Option<u64>,
}

/// One recorded call.
///
/// ```
/// let c = fdr_otlp::spans::Call { function: "app::main".into(), tid: 7, ..Default::default() };
/// assert_eq!(c.parent, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Call {
    /// The function's full name: the span's name.
    pub function: String,
    /// `thread.id`.
    pub tid: i32,
    /// `thread.name`; empty: left out.
    pub thread_name: String,
    /// Entry, Unix nanoseconds (the window's start when `inferred_start`).
    pub start_unix_ns: u64,
    /// Exit, Unix nanoseconds (when the window was written when `open`). An end before the
    /// start is taken as the start.
    pub end_unix_ns: u64,
    /// The parent: the caller's index in [`Window::calls`] (for a task's life, the call that
    /// created it; for a poll of a known task, the task's life). `None`, an index out of range
    /// or the call's own makes the call a root span.
    pub parent: Option<usize>,
    /// Still running when the window was written: `fdr.open = true`.
    pub open: bool,
    /// Entered before the window started: `fdr.inferred_start = true`.
    pub inferred_start: bool,
    /// Logged arguments, (name, value): `fdr.arg.NAME`, an int attribute holding the value's 64
    /// bits (a value over `i64::MAX` reads as negative).
    pub args: Vec<(String, u64)>,
    /// The async task this span belongs to: `fdr.task` = its id. With [`Call::life`], the
    /// span is the task's life; without, the call is a poll that served it.
    pub task: Option<u64>,
    /// The span is an async task's life, creation to completion or cancellation, not a call
    /// (`fdr.kind = task`; a poll of a known task has `fdr.kind = poll`).
    pub life: bool,
    /// The task was dropped before completing: `fdr.cancelled = true`.
    pub cancelled: bool,
    /// On a task's life, its waits at await sites: one span event each.
    pub waits: Vec<Wait>,
}

/// One wait of an async task at an await site: an `await` event on the task's span.
///
/// ```
/// let w = fdr_otlp::spans::Wait { at: "src/api.rs:41:9".into(), start_unix_ns: 5, waited_ns: 50,
///                                 polls: 1, dropped: false };
/// assert_eq!(w.start_unix_ns + w.waited_ns, 55);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Wait {
    /// Where the `.await` is, `FILE:LINE:COLUMN`: `code.location`.
    pub at: String,
    /// When the wait began, Unix nanoseconds: the event's time.
    pub start_unix_ns: u64,
    /// How long it waited: `fdr.await.waited_ns`.
    pub waited_ns: u64,
    /// Polls of the await that returned `Pending`: `fdr.await.polls`.
    pub polls: u32,
    /// Ended by dropping the task: `fdr.await.dropped = true`.
    pub dropped: bool,
}

/// A parsed W3C `traceparent` header value.
///
/// ```
/// use fdr_otlp::spans::TraceParent;
/// let tp = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
/// assert_eq!(tp.parent_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
/// assert_eq!(tp.flags, 1);
/// assert_eq!(tp.to_string(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// assert!(TraceParent::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    /// The format version (0 today).
    pub version: u8,
    /// The trace id.
    pub trace_id: [u8; 16],
    /// The caller's span id.
    pub parent_id: [u8; 8],
    /// Trace flags (bit 0: sampled).
    pub flags: u8,
}

impl TraceParent {
    /// Parses a `traceparent` as the W3C Trace Context says: `version-traceid-parentid-flags`,
    /// lowercase hex of 2, 32, 16 and 2 digits; version `ff`, an all-zero trace id or parent id
    /// are invalid; version `00` has nothing after the flags, a later version may (it is read as
    /// version 00). `None` when invalid.
    ///
    /// ```
    /// use fdr_otlp::spans::TraceParent;
    /// assert!(TraceParent::parse("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01").is_none());
    /// assert!(TraceParent::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later").is_some());
    /// ```
    pub fn parse(s: &str) -> Option<TraceParent> {
        let [hi, lo, parent, vf] = fdr_format::trace_context::encode(s)?;
        let mut trace_id = [0u8; 16];
        trace_id[..8].copy_from_slice(&hi.to_be_bytes());
        trace_id[8..].copy_from_slice(&lo.to_be_bytes());
        Some(TraceParent {
            version: (vf >> 8) as u8,
            trace_id,
            parent_id: parent.to_be_bytes(),
            flags: vf as u8,
        })
    }
}

impl std::fmt::Display for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02x}-", self.version)?;
        for b in self.trace_id {
            write!(f, "{b:02x}")?;
        }
        f.write_str("-")?;
        for b in self.parent_id {
            write!(f, "{b:02x}")?;
        }
        write!(f, "-{:02x}", self.flags)
    }
}

/// A bijection of 64-bit words that scatters its input (0 stays 0).
fn scatter(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

const ODD: u64 = 0x9e37_79b9_7f4a_7c15;

/// The window's own trace id, from its pid, start and sequence number: random-looking, the same
/// for the same window, never all zero. (The spans use the `traceparent`'s instead when one is
/// given: see [`trace_id`].)
fn own_trace_id(w: &Window) -> [u8; 16] {
    let hi = scatter(w.start_unix_ns ^ scatter(u64::from(w.pid).wrapping_add(ODD)));
    let lo = scatter(hi ^ w.sequence.wrapping_add(1).wrapping_mul(ODD));
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&hi.to_be_bytes());
    id[8..].copy_from_slice(&lo.to_be_bytes());
    if id == [0; 16] {
        id[15] = 1;
    }
    id
}

/// The trace id of the window's spans: the `traceparent`'s when it is valid, else one derived
/// from the window's pid, start and sequence number (the same for the same window).
///
/// ```
/// use fdr_otlp::spans::{trace_id, Window};
/// let w = Window { pid: 1, start_unix_ns: 5, ..Window::default() };
/// assert_eq!(trace_id(&w), trace_id(&w.clone()));
/// assert_ne!(trace_id(&w), trace_id(&Window { sequence: 1, ..w.clone() }));
/// let joined = Window {
///     traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
///     ..w
/// };
/// assert_eq!(trace_id(&joined)[..2], [0x4b, 0xf9]);
/// ```
pub fn trace_id(w: &Window) -> [u8; 16] {
    match w.traceparent.as_deref().and_then(TraceParent::parse) {
        Some(tp) => tp.trace_id,
        None => own_trace_id(w),
    }
}

/// The salt of the window's span ids: its top bit set, so that `salt ^ (index + 1)` is never 0.
fn salt(w: &Window) -> u64 {
    let own = own_trace_id(w);
    let hi = u64::from_be_bytes(own[..8].try_into().expect("8 bytes"));
    let lo = u64::from_be_bytes(own[8..].try_into().expect("8 bytes"));
    scatter(hi ^ lo.rotate_left(29)) | (1 << 63)
}

/// The span id of call `index` of the window: unique within the window (a bijection of the
/// index), never all zero, and different between windows with high probability (it is salted
/// with the window's own trace id, so windows joined to one `traceparent` do not collide).
///
/// ```
/// use fdr_otlp::spans::{span_id, Window};
/// let w = Window::default();
/// assert_ne!(span_id(&w, 0), span_id(&w, 1));
/// assert_ne!(span_id(&w, 0), [0; 8]);
/// ```
pub fn span_id(w: &Window, index: usize) -> [u8; 8] {
    span_id_salted(salt(w), index)
}

fn span_id_salted(salt: u64, index: usize) -> [u8; 8] {
    // Indices are below 2^63, so `salt ^ (index + 1)` keeps the top bit and is never 0, and
    // `scatter` maps only 0 to 0.
    scatter(salt ^ (index as u64).wrapping_add(1)).to_be_bytes()
}

/// An unsigned quantity as an OTLP int, saturated.
fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The resource attributes of the window's process.
fn resource(w: &Window) -> Resource {
    let mut a = vec![KeyValue::string(attr::SERVICE_NAME, &w.service_name)];
    if !w.host_name.is_empty() {
        a.push(KeyValue::string(attr::HOST_NAME, &w.host_name));
    }
    a.push(KeyValue::int(attr::PROCESS_PID, i64::from(w.pid)));
    if !w.program.is_empty() {
        a.push(KeyValue::string(attr::PROCESS_EXECUTABLE_NAME, &w.program));
    }
    a.push(KeyValue::string(attr::SDK_NAME, SCOPE_NAME));
    a.push(KeyValue::string(attr::SDK_LANGUAGE, "rust"));
    a.push(KeyValue::string(attr::SDK_VERSION, &w.fdr_version));
    for (k, v) in w.resource.iter().filter(|(k, _)| k != attr::SERVICE_NAME) {
        a.retain(|kv| kv.key != *k);
        a.push(KeyValue::string(k, v));
    }
    Resource {
        attributes: a,
        dropped_attributes_count: 0,
    }
}

/// The window's attributes, on its root spans.
fn window_attributes(w: &Window) -> Vec<KeyValue> {
    let mut a = Vec::new();
    if let Some(r) = &w.reason {
        a.push(KeyValue::string(attr::REASON, &r.kind));
        if let Some(f) = &r.function {
            a.push(KeyValue::string(attr::TRIGGER_FUNCTION, f));
        }
        if let Some(l) = r.limit_ns {
            a.push(KeyValue::int(attr::TRIGGER_LIMIT_NS, int(l)));
        }
        if let Some(d) = r.duration_ns {
            a.push(KeyValue::int(attr::TRIGGER_DURATION_NS, int(d)));
        }
        if let Some(w) = r.cpu_wait_ns {
            a.push(KeyValue::int(attr::TRIGGER_CPU_WAIT_NS, int(w)));
        }
        if let Some(w) = r.off_cpu_ns {
            a.push(KeyValue::int(attr::TRIGGER_OFF_CPU_NS, int(w)));
        }
    }
    a
}

/// What every span of a window shares, computed once.
struct Converter<'a> {
    w: &'a Window,
    tp: Option<TraceParent>,
    trace: [u8; 16],
    trace_flags: u32,
    salt: u64,
    on_roots: Vec<KeyValue>,
    resource: Resource,
    scope: InstrumentationScope,
}

impl<'a> Converter<'a> {
    fn new(w: &'a Window) -> Converter<'a> {
        let tp = w.traceparent.as_deref().and_then(TraceParent::parse);
        Converter {
            w,
            tp,
            trace: tp.map_or_else(|| own_trace_id(w), |t| t.trace_id),
            trace_flags: tp.map_or(1, |t| u32::from(t.flags)),
            salt: salt(w),
            on_roots: window_attributes(w),
            resource: resource(w),
            scope: InstrumentationScope {
                name: SCOPE_NAME.to_string(),
                version: w.fdr_version.clone(),
                ..InstrumentationScope::default()
            },
        }
    }

    /// The span of call `i`.
    fn span(&self, i: usize) -> Span {
        let c = &self.w.calls[i];
        let parent = c.parent.filter(|&p| p != i && p < self.w.calls.len());
        let mut flags = self.trace_flags | span_flags::CONTEXT_HAS_IS_REMOTE_MASK;
        let parent_span_id = match (parent, self.tp) {
            (Some(p), _) => span_id_salted(self.salt, p).to_vec(),
            (None, Some(t)) => {
                flags |= span_flags::CONTEXT_IS_REMOTE_MASK;
                t.parent_id.to_vec()
            }
            (None, None) => Vec::new(),
        };
        let mut a = vec![KeyValue::int(attr::THREAD_ID, i64::from(c.tid))];
        if !c.thread_name.is_empty() {
            a.push(KeyValue::string(attr::THREAD_NAME, &c.thread_name));
        }
        if c.open {
            a.push(KeyValue::bool(attr::OPEN, true));
        }
        if c.inferred_start {
            a.push(KeyValue::bool(attr::INFERRED_START, true));
        }
        for (name, v) in &c.args {
            let key = format!("{}{name}", attr::ARG_PREFIX);
            a.push(KeyValue::int(&key, *v as i64));
        }
        if let Some(t) = c.task {
            a.push(KeyValue::int(attr::TASK, t as i64));
            a.push(KeyValue::string(
                attr::KIND,
                if c.life { "task" } else { "poll" },
            ));
        }
        if c.cancelled {
            a.push(KeyValue::bool(attr::CANCELLED, true));
        }
        if parent.is_none() {
            a.extend(self.on_roots.iter().cloned());
        }
        let events = c
            .waits
            .iter()
            .map(|w| {
                let mut a = vec![
                    KeyValue::string(attr::CODE_LOCATION, &w.at),
                    KeyValue::int(attr::AWAIT_WAITED_NS, int(w.waited_ns)),
                    KeyValue::int(attr::AWAIT_POLLS, i64::from(w.polls)),
                ];
                if w.dropped {
                    a.push(KeyValue::bool(attr::AWAIT_DROPPED, true));
                }
                span::Event {
                    time_unix_nano: w.start_unix_ns,
                    name: attr::AWAIT_EVENT.to_string(),
                    attributes: a,
                    ..span::Event::default()
                }
            })
            .collect();
        Span {
            trace_id: self.trace.to_vec(),
            span_id: span_id_salted(self.salt, i).to_vec(),
            parent_span_id,
            flags,
            name: c.function.clone(),
            kind: SpanKind::Internal as i32,
            start_time_unix_nano: c.start_unix_ns,
            end_time_unix_nano: c.end_unix_ns.max(c.start_unix_ns),
            attributes: a,
            events,
            ..Span::default()
        }
    }

    /// A whole request holding the spans of calls `range`.
    fn request(&self, range: std::ops::Range<usize>) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(self.resource.clone()),
                scope_spans: vec![ScopeSpans {
                    scope: Some(self.scope.clone()),
                    spans: range.map(|i| self.span(i)).collect(),
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        }
    }
}

/// The window as OTLP export requests, at most `max_spans_per_request` spans in each (0: all in
/// one). Each request is whole: the resource, the scope, and a run of the spans in call order;
/// a span's parent may be in an earlier request, which OTLP allows. A window without calls
/// gives one request without spans. [`each_request`] makes the same requests one at a time.
///
/// ```
/// use fdr_otlp::spans::{requests, span_count, Call, Window};
/// let call = Call { function: "f".into(), ..Call::default() };
/// let w = Window { calls: vec![call; 5], ..Window::default() };
/// let r = requests(&w, 2);
/// assert_eq!(r.iter().map(span_count).collect::<Vec<_>>(), [2, 2, 1]);
/// assert_eq!(requests(&w, 0).len(), 1);
/// assert_eq!(requests(&Window::default(), 2).len(), 1);
/// ```
pub fn requests(w: &Window, max_spans_per_request: usize) -> Vec<ExportTraceServiceRequest> {
    each_request(w, max_spans_per_request).collect()
}

/// The requests of [`requests`], made as they are asked for: memory holds one request's spans
/// at a time, not the whole window's.
///
/// ```
/// use fdr_otlp::spans::{each_request, requests, Call, Window};
/// let w = Window { calls: vec![Call::default(); 5], ..Window::default() };
/// let it = each_request(&w, 2);
/// assert_eq!(it.len(), 3);
/// assert_eq!(it.collect::<Vec<_>>(), requests(&w, 2));
/// ```
pub fn each_request(w: &Window, max_spans_per_request: usize) -> Requests<'_> {
    let n = w.calls.len();
    let per = match max_spans_per_request {
        0 => n.max(1),
        m => m,
    };
    Requests {
        conv: Converter::new(w),
        per,
        next: 0,
        left: n.div_ceil(per).max(1),
    }
}

/// The iterator of [`each_request`].
///
/// ```
/// let w = fdr_otlp::spans::Window::default();
/// assert_eq!(fdr_otlp::spans::each_request(&w, 10).count(), 1);
/// ```
pub struct Requests<'a> {
    conv: Converter<'a>,
    per: usize,
    next: usize,
    left: usize,
}

impl Iterator for Requests<'_> {
    type Item = ExportTraceServiceRequest;

    fn next(&mut self) -> Option<ExportTraceServiceRequest> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let start = self.next;
        let end = (start + self.per).min(self.conv.w.calls.len());
        self.next = end;
        Some(self.conv.request(start..end))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }

    /// Skips `n` requests without making them: a sender that resumes a window where it
    /// stopped does not convert the spans it already sent.
    fn nth(&mut self, n: usize) -> Option<ExportTraceServiceRequest> {
        let skip = n.min(self.left);
        self.left -= skip;
        self.next = (self.next + skip * self.per).min(self.conv.w.calls.len());
        self.next()
    }
}

impl ExactSizeIterator for Requests<'_> {}

/// The spans in a request.
///
/// ```
/// assert_eq!(fdr_otlp::spans::span_count(&Default::default()), 0);
/// ```
pub fn span_count(r: &ExportTraceServiceRequest) -> usize {
    r.resource_spans
        .iter()
        .flat_map(|rs| &rs.scope_spans)
        .map(|ss| ss.spans.len())
        .sum()
}

/// A request as protobuf bytes, the body of an OTLP/HTTP export
/// (`Content-Type: application/x-protobuf`).
///
/// ```
/// use fdr_otlp::spans::{encode, requests, Window};
/// use prost::Message;
/// let r = &requests(&Window::default(), 0)[0];
/// let bytes = encode(r);
/// assert_eq!(&fdr_otlp::proto::ExportTraceServiceRequest::decode(&bytes[..]).unwrap(), r);
/// ```
pub fn encode(r: &ExportTraceServiceRequest) -> Vec<u8> {
    r.encode_to_vec()
}

/// This machine's name for `host.name`, from the kernel (`/proc/sys/kernel/hostname`) or
/// `/etc/hostname`; `None` when neither says.
///
/// ```
/// if let Some(h) = fdr_otlp::spans::local_host_name() {
///     assert!(!h.is_empty());
/// }
/// ```
pub fn local_host_name() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_resource_attributes_replace_fdrs_own_but_not_the_service_name() {
        let w = Window {
            service_name: "svc".into(),
            host_name: "box-1".into(),
            resource: vec![
                ("host.name".into(), "pod-7".into()),
                ("service.name".into(), "ignored".into()),
                ("deployment.environment".into(), "prod".into()),
            ],
            ..Window::default()
        };
        let r = &requests(&w, 0)[0];
        let res = attrs(&r.resource_spans[0].resource.as_ref().unwrap().attributes);
        assert_eq!(res["host.name"], Value::StringValue("pod-7".into()));
        assert_eq!(res["service.name"], Value::StringValue("svc".into()));
        assert_eq!(
            res["deployment.environment"],
            Value::StringValue("prod".into())
        );
        let keys = &r.resource_spans[0].resource.as_ref().unwrap().attributes;
        assert_eq!(keys.len(), res.len(), "each key once");
    }

    #[test]
    fn skipping_requests_gives_the_same_as_making_them() {
        let w = Window {
            calls: vec![Call::default(); 7],
            ..Window::default()
        };
        let all = requests(&w, 2);
        for n in 0..5 {
            assert_eq!(each_request(&w, 2).nth(n), all.get(n).cloned(), "{n}");
        }
    }
    use crate::proto::any_value::Value;
    use std::collections::{BTreeMap, HashMap, HashSet};

    fn attrs(kvs: &[KeyValue]) -> BTreeMap<String, Value> {
        kvs.iter()
            .map(|kv| {
                (
                    kv.key.clone(),
                    kv.value.clone().and_then(|v| v.value).expect("a value"),
                )
            })
            .collect()
    }

    const T0: u64 = 1_700_000_000_000_000_000;

    /// Two threads: 7 runs main > (parse(len=42), work > step (open)), 8 runs an inferred call
    /// and a task poll.
    fn window() -> Window {
        let call = |function: &str, tid, s, e, parent| Call {
            function: function.into(),
            tid,
            thread_name: if tid == 7 {
                "main".into()
            } else {
                String::new()
            },
            start_unix_ns: T0 + s,
            end_unix_ns: T0 + e,
            parent,
            ..Call::default()
        };
        Window {
            service_name: "svc".into(),
            host_name: "box".into(),
            pid: 4242,
            program: "app".into(),
            fdr_version: "0.1.0".into(),
            start_unix_ns: T0,
            sequence: 3,
            reason: Some(WindowReason {
                kind: "slow call".into(),
                function: Some("app::work".into()),
                limit_ns: Some(1_000),
                duration_ns: Some(u64::MAX),
                cpu_wait_ns: Some(400),
                off_cpu_ns: Some(300),
            }),
            traceparent: None,
            resource: Vec::new(),
            calls: vec![
                call("app::main", 7, 0, 10_000, None),
                Call {
                    args: vec![("len".into(), 42), ("big".into(), u64::MAX)],
                    ..call("app::parse", 7, 100, 200, Some(0))
                },
                call("app::work", 7, 300, 10_000, Some(0)),
                Call {
                    open: true,
                    ..call("app::step", 7, 400, 10_000, Some(2))
                },
                Call {
                    inferred_start: true,
                    ..call("app::old", 8, 0, 50, None)
                },
                Call {
                    task: Some(99),
                    ..call("app::poll", 8, 60, 70, None)
                },
                // A parent index not before the call: taken as a root.
                call("app::odd", 8, 80, 70, Some(6)),
            ],
        }
    }

    fn all_spans(reqs: &[ExportTraceServiceRequest]) -> Vec<Span> {
        reqs.iter()
            .flat_map(|r| &r.resource_spans)
            .flat_map(|rs| &rs.scope_spans)
            .flat_map(|ss| ss.spans.clone())
            .collect()
    }

    #[test]
    fn calls_become_spans_with_parents_ids_times_and_attributes() {
        let w = window();
        let reqs = requests(&w, 0);
        assert_eq!(reqs.len(), 1);
        let spans = all_spans(&reqs);
        assert_eq!(spans.len(), w.calls.len());
        let trace = spans[0].trace_id.clone();
        assert_eq!(trace.len(), 16);
        assert_ne!(trace, vec![0; 16]);
        let ids: HashSet<Vec<u8>> = spans.iter().map(|s| s.span_id.clone()).collect();
        assert_eq!(ids.len(), spans.len(), "span ids are unique");
        let by_id: HashMap<&[u8], &Span> =
            spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
        for (i, (s, c)) in spans.iter().zip(&w.calls).enumerate() {
            assert_eq!(s.trace_id, trace);
            assert_eq!(s.span_id.len(), 8);
            assert_ne!(s.span_id, vec![0; 8]);
            assert_eq!(s.name, c.function);
            assert_eq!(s.kind(), SpanKind::Internal);
            assert_eq!(s.start_time_unix_nano, c.start_unix_ns);
            assert_eq!(s.end_time_unix_nano, c.end_unix_ns.max(c.start_unix_ns));
            assert_eq!(s.flags, 0x101, "sampled, parent not remote");
            let parent = c.parent.filter(|&p| p < i);
            match parent {
                Some(p) => assert_eq!(by_id[s.parent_span_id.as_slice()].name, w.calls[p].function),
                None => assert!(s.parent_span_id.is_empty()),
            }
            let a = attrs(&s.attributes);
            assert_eq!(a["thread.id"], Value::IntValue(i64::from(c.tid)));
            assert_eq!(
                a.get("thread.name"),
                (c.tid == 7)
                    .then(|| Value::StringValue("main".into()))
                    .as_ref()
            );
            assert_eq!(a.get("fdr.open"), c.open.then_some(&Value::BoolValue(true)));
            assert_eq!(
                a.get("fdr.inferred_start"),
                c.inferred_start.then_some(&Value::BoolValue(true))
            );
            assert_eq!(
                a.get("fdr.task"),
                c.task.map(|t| Value::IntValue(t as i64)).as_ref()
            );
            assert_eq!(
                a.get("fdr.reason"),
                parent
                    .is_none()
                    .then(|| Value::StringValue("slow call".into()))
                    .as_ref(),
                "window attributes on roots only: {}",
                s.name
            );
            if parent.is_none() {
                assert_eq!(
                    a["fdr.trigger.function"],
                    Value::StringValue("app::work".into())
                );
                assert_eq!(a["fdr.trigger.limit_ns"], Value::IntValue(1_000));
                assert_eq!(a["fdr.trigger.duration_ns"], Value::IntValue(i64::MAX));
                assert_eq!(a["fdr.trigger.cpu_wait_ns"], Value::IntValue(400));
                assert_eq!(a["fdr.trigger.off_cpu_ns"], Value::IntValue(300));
            }
        }
        let parse = attrs(&spans[1].attributes);
        assert_eq!(parse["fdr.arg.len"], Value::IntValue(42));
        assert_eq!(parse["fdr.arg.big"], Value::IntValue(-1));
        let rs = &reqs[0].resource_spans[0];
        let res = attrs(&rs.resource.as_ref().unwrap().attributes);
        let s = |v: &str| Value::StringValue(v.into());
        assert_eq!(res["service.name"], s("svc"));
        assert_eq!(res["host.name"], s("box"));
        assert_eq!(res["process.pid"], Value::IntValue(4242));
        assert_eq!(res["process.executable.name"], s("app"));
        assert_eq!(res["telemetry.sdk.name"], s("fdr"));
        assert_eq!(res["telemetry.sdk.language"], s("rust"));
        assert_eq!(res["telemetry.sdk.version"], s("0.1.0"));
        let scope = rs.scope_spans[0].scope.as_ref().unwrap();
        assert_eq!(
            (scope.name.as_str(), scope.version.as_str()),
            ("fdr", "0.1.0")
        );
    }

    #[test]
    fn conversion_is_deterministic_and_windows_differ() {
        let w = window();
        let a = encode(&requests(&w, 0)[0]);
        assert_eq!(a, encode(&requests(&w.clone(), 0)[0]));
        for other in [
            Window {
                sequence: 4,
                ..w.clone()
            },
            Window {
                pid: 1,
                ..w.clone()
            },
            Window {
                start_unix_ns: T0 + 1,
                ..w.clone()
            },
        ] {
            let s0 = &all_spans(&requests(&w, 0))[0];
            let s1 = &all_spans(&requests(&other, 0))[0];
            assert_ne!(s0.trace_id, s1.trace_id);
            assert_ne!(s0.span_id, s1.span_id);
        }
    }

    #[test]
    fn span_ids_are_unique_and_never_zero_for_many_calls() {
        let w = Window::default();
        let mut seen = HashSet::new();
        for i in 0..200_000 {
            let id = span_id(&w, i);
            assert_ne!(id, [0; 8]);
            assert!(seen.insert(id), "span id of call {i} repeats");
        }
    }

    #[test]
    fn splitting_keeps_every_span_once_and_every_request_whole() {
        let w = window();
        let whole = all_spans(&requests(&w, 0));
        for per in 1..=8 {
            let reqs = requests(&w, per);
            assert_eq!(reqs.len(), w.calls.len().div_ceil(per), "{per}");
            for r in &reqs {
                assert!(span_count(r) <= per);
                assert_eq!(r.resource_spans.len(), 1);
                let rs = &r.resource_spans[0];
                assert!(rs.resource.is_some());
                assert_eq!(rs.scope_spans[0].scope.as_ref().unwrap().name, "fdr");
            }
            assert_eq!(
                all_spans(&reqs),
                whole,
                "{per}: the same spans in the same order"
            );
            // Each request decodes on its own.
            for r in &reqs {
                let back = ExportTraceServiceRequest::decode(&encode(r)[..]).unwrap();
                assert_eq!(&back, r);
            }
        }
    }

    #[test]
    fn a_traceparent_gives_the_trace_and_the_roots_remote_parent() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        let w = Window {
            traceparent: Some(tp.into()),
            ..window()
        };
        let parsed = TraceParent::parse(tp).unwrap();
        let spans = all_spans(&requests(&w, 3));
        for (i, (s, c)) in spans.iter().zip(&w.calls).enumerate() {
            assert_eq!(s.trace_id, parsed.trace_id);
            if c.parent.filter(|&p| p < i).is_none() {
                assert_eq!(s.parent_span_id, parsed.parent_id);
                assert_eq!(s.flags, 0x300, "not sampled, parent remote: {}", s.name);
            } else {
                assert_eq!(s.flags, 0x100);
            }
        }
        // Two windows joined to one trace: their span ids differ.
        let other = Window {
            sequence: 9,
            ..w.clone()
        };
        let a: HashSet<Vec<u8>> = spans.iter().map(|s| s.span_id.clone()).collect();
        assert!(all_spans(&requests(&other, 0))
            .iter()
            .all(|s| !a.contains(&s.span_id)));
        // An invalid one is ignored.
        let bad = Window {
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01".into()),
            ..window()
        };
        let spans = all_spans(&requests(&bad, 0));
        assert_eq!(spans[0].trace_id, own_trace_id(&bad));
        assert!(spans[0].parent_span_id.is_empty());
    }

    #[test]
    fn traceparents_are_parsed_as_w3c_says() {
        let ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(TraceParent::parse(ok).is_some());
        assert!(TraceParent::parse(&format!(" {ok}\t")).is_some());
        for bad in [
            "",
            "00",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
        ] {
            assert!(TraceParent::parse(bad).is_none(), "{bad:?}");
        }
        let later = TraceParent::parse(
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-adds",
        )
        .unwrap();
        assert_eq!(later.version, 0xcc);
    }

    #[test]
    fn an_empty_window_is_one_request_without_spans() {
        let w = Window {
            reason: None,
            host_name: String::new(),
            program: String::new(),
            ..window()
        };
        let w = Window { calls: vec![], ..w };
        let reqs = requests(&w, 10);
        assert_eq!(reqs.len(), 1);
        assert_eq!(span_count(&reqs[0]), 0);
        let res = attrs(
            &reqs[0].resource_spans[0]
                .resource
                .as_ref()
                .unwrap()
                .attributes,
        );
        assert!(!res.contains_key("host.name"));
        assert!(!res.contains_key("process.executable.name"));
    }
}
