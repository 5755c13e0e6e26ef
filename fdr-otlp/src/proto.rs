//! The OTLP messages fdr writes, declared by hand with `prost`, with the field numbers and
//! types of the official schema (opentelemetry-proto: `collector/trace/v1/trace_service.proto`,
//! `trace/v1/trace.proto`, `common/v1/common.proto`, `resource/v1/resource.proto`; copies are in
//! this crate's `proto/` folder, and a test checks every field below against them).
//!
//! Only the messages an export of traces needs are here. Fields the schema marks as being for
//! the profiling signal only (`AnyValue.string_value_strindex`, `KeyValue.key_strindex`) and the
//! in-development `Resource.entity_refs` are left out: a reader treats them as absent.
//!
//! ```
//! use fdr_otlp::proto::{ExportTraceServiceRequest, KeyValue, Resource, ResourceSpans};
//! use prost::Message;
//! let req = ExportTraceServiceRequest {
//!     resource_spans: vec![ResourceSpans {
//!         resource: Some(Resource {
//!             attributes: vec![KeyValue::string("service.name", "app")],
//!             ..Resource::default()
//!         }),
//!         ..ResourceSpans::default()
//!     }],
//! };
//! let bytes = req.encode_to_vec();
//! assert_eq!(ExportTraceServiceRequest::decode(&bytes[..]).unwrap(), req);
//! ```

/// What an exporter sends to `/v1/traces` (package `opentelemetry.proto.collector.trace.v1`).
///
/// ```
/// let req = fdr_otlp::proto::ExportTraceServiceRequest::default();
/// assert!(req.resource_spans.is_empty());
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportTraceServiceRequest {
    /// The spans, grouped by the resource (the process) that produced them.
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

/// What a collector answers to an export; an empty message is full success.
///
/// ```
/// use fdr_otlp::proto::ExportTraceServiceResponse;
/// use prost::Message;
/// let r = ExportTraceServiceResponse::decode(&[][..]).unwrap();
/// assert!(r.partial_success.is_none());
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportTraceServiceResponse {
    /// Set when the collector accepted only some of the spans.
    #[prost(message, optional, tag = "1")]
    pub partial_success: Option<ExportTracePartialSuccess>,
}

/// How much of an export a collector rejected, and why.
///
/// ```
/// let p = fdr_otlp::proto::ExportTracePartialSuccess { rejected_spans: 2, error_message: "too old".into() };
/// assert_eq!(p.rejected_spans, 2);
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportTracePartialSuccess {
    /// Spans rejected (0 with a message: a warning only).
    #[prost(int64, tag = "1")]
    pub rejected_spans: i64,
    /// Why, in words.
    #[prost(string, tag = "2")]
    pub error_message: String,
}

/// The spans of one resource (package `opentelemetry.proto.trace.v1`).
///
/// ```
/// let rs = fdr_otlp::proto::ResourceSpans::default();
/// assert!(rs.resource.is_none() && rs.scope_spans.is_empty());
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceSpans {
    /// The process: `service.name`, `host.name`, `process.pid` ...
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// The spans, grouped by the instrumentation scope that made them.
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
    /// The semantic-conventions schema of the resource's attributes (empty: none said).
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// The spans of one instrumentation scope.
///
/// ```
/// let ss = fdr_otlp::proto::ScopeSpans::default();
/// assert!(ss.spans.is_empty());
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeSpans {
    /// The instrumentation library: for fdr, `fdr` and its version.
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// The spans.
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<Span>,
    /// The semantic-conventions schema of the spans' attributes (empty: none said).
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// One operation: for fdr, one call.
///
/// ```
/// use fdr_otlp::proto::{span::SpanKind, Span};
/// let s = Span { name: "app::handle".into(), kind: SpanKind::Internal as i32, ..Span::default() };
/// assert_eq!(s.kind(), SpanKind::Internal);
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct Span {
    /// 16 bytes, not all zero.
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    /// 8 bytes, not all zero.
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    /// W3C `tracestate` (empty: none).
    #[prost(string, tag = "3")]
    pub trace_state: String,
    /// The parent span's id; empty for a root span.
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    /// W3C trace flags in bits 0-7, and whether the parent is remote (see [`span_flags`]).
    #[prost(fixed32, tag = "16")]
    pub flags: u32,
    /// The operation's name: for fdr, the function's full name.
    #[prost(string, tag = "5")]
    pub name: String,
    /// A [`span::SpanKind`].
    #[prost(enumeration = "span::SpanKind", tag = "6")]
    pub kind: i32,
    /// Start, nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    /// End, nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    /// Attributes, unique keys.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    /// Attributes left out.
    #[prost(uint32, tag = "10")]
    pub dropped_attributes_count: u32,
    /// Timed events within the span.
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<span::Event>,
    /// Events left out.
    #[prost(uint32, tag = "12")]
    pub dropped_events_count: u32,
    /// Links to other spans.
    #[prost(message, repeated, tag = "13")]
    pub links: Vec<span::Link>,
    /// Links left out.
    #[prost(uint32, tag = "14")]
    pub dropped_links_count: u32,
    /// Success or failure (unset: the default).
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
}

/// The messages and enumeration nested in [`Span`].
///
/// ```
/// use fdr_otlp::proto::span::{Event, SpanKind};
/// assert_eq!(SpanKind::try_from(1), Ok(SpanKind::Internal));
/// assert!(Event::default().name.is_empty());
/// ```
pub mod span {
    /// What kind of operation a span is.
    ///
    /// ```
    /// assert_eq!(fdr_otlp::proto::span::SpanKind::Internal as i32, 1);
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum SpanKind {
        /// Not said.
        Unspecified = 0,
        /// An operation inside the process: what every fdr call is.
        Internal = 1,
        /// Handles a remote request.
        Server = 2,
        /// Makes a remote request.
        Client = 3,
        /// Sends a message.
        Producer = 4,
        /// Receives a message.
        Consumer = 5,
    }

    /// Something that happened at one moment of a span.
    ///
    /// ```
    /// let e = fdr_otlp::proto::span::Event { time_unix_nano: 5, name: "polled".into(), ..Default::default() };
    /// assert_eq!(e.name, "polled");
    /// ```
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Event {
        /// When, nanoseconds since the Unix epoch.
        #[prost(fixed64, tag = "1")]
        pub time_unix_nano: u64,
        /// What.
        #[prost(string, tag = "2")]
        pub name: String,
        /// Attributes.
        #[prost(message, repeated, tag = "3")]
        pub attributes: Vec<super::KeyValue>,
        /// Attributes left out.
        #[prost(uint32, tag = "4")]
        pub dropped_attributes_count: u32,
    }

    /// A link from a span to another span, in this trace or another.
    ///
    /// ```
    /// let l = fdr_otlp::proto::span::Link { span_id: vec![1; 8], trace_id: vec![2; 16], ..Default::default() };
    /// assert_eq!(l.span_id.len(), 8);
    /// ```
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Link {
        /// The linked span's trace.
        #[prost(bytes = "vec", tag = "1")]
        pub trace_id: Vec<u8>,
        /// The linked span.
        #[prost(bytes = "vec", tag = "2")]
        pub span_id: Vec<u8>,
        /// W3C `tracestate` of the link.
        #[prost(string, tag = "3")]
        pub trace_state: String,
        /// Attributes.
        #[prost(message, repeated, tag = "4")]
        pub attributes: Vec<super::KeyValue>,
        /// Attributes left out.
        #[prost(uint32, tag = "5")]
        pub dropped_attributes_count: u32,
        /// As [`super::Span::flags`], for the linked span.
        #[prost(fixed32, tag = "6")]
        pub flags: u32,
    }
}

/// Bits of [`Span::flags`] (the schema's `SpanFlags` enumeration).
///
/// ```
/// use fdr_otlp::proto::span_flags::*;
/// assert_eq!(TRACE_FLAGS_MASK | CONTEXT_HAS_IS_REMOTE_MASK | CONTEXT_IS_REMOTE_MASK, 0x3ff);
/// ```
pub mod span_flags {
    /// The W3C trace flags (bit 0: sampled).
    pub const TRACE_FLAGS_MASK: u32 = 0x0000_00ff;
    /// The next bit says whether the parent is remote.
    pub const CONTEXT_HAS_IS_REMOTE_MASK: u32 = 0x0000_0100;
    /// The parent is in another process.
    pub const CONTEXT_IS_REMOTE_MASK: u32 = 0x0000_0200;
}

/// A span's outcome.
///
/// ```
/// use fdr_otlp::proto::{status::StatusCode, Status};
/// let s = Status { message: "panicked".into(), code: StatusCode::Error as i32 };
/// assert_eq!(s.code(), StatusCode::Error);
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    /// Why, for an error.
    #[prost(string, tag = "2")]
    pub message: String,
    /// A [`status::StatusCode`].
    #[prost(enumeration = "status::StatusCode", tag = "3")]
    pub code: i32,
}

/// The enumeration nested in [`Status`].
///
/// ```
/// assert_eq!(fdr_otlp::proto::status::StatusCode::default() as i32, 0);
/// ```
pub mod status {
    /// Unset, ok or error.
    ///
    /// ```
    /// assert_eq!(fdr_otlp::proto::status::StatusCode::Error as i32, 2);
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum StatusCode {
        /// The default: nothing said.
        Unset = 0,
        /// Known to have succeeded.
        Ok = 1,
        /// Failed.
        Error = 2,
    }
}

/// A value: string, bool, integer, double, array, key-value list or bytes (package
/// `opentelemetry.proto.common.v1`).
///
/// ```
/// use fdr_otlp::proto::{any_value::Value, AnyValue};
/// let v = AnyValue { value: Some(Value::IntValue(7)) };
/// assert_eq!(v.value, Some(Value::IntValue(7)));
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    /// The value; `None` is an empty value.
    #[prost(oneof = "any_value::Value", tags = "1, 2, 3, 4, 5, 6, 7")]
    pub value: Option<any_value::Value>,
}

/// The `oneof` of [`AnyValue`].
///
/// ```
/// use fdr_otlp::proto::{any_value::Value, AnyValue};
/// let v = AnyValue { value: Some(Value::BoolValue(true)) };
/// assert!(matches!(v.value, Some(Value::BoolValue(true))));
/// ```
pub mod any_value {
    /// One of the kinds of value.
    ///
    /// ```
    /// let v = fdr_otlp::proto::any_value::Value::StringValue("main".into());
    /// assert!(matches!(v, fdr_otlp::proto::any_value::Value::StringValue(_)));
    /// ```
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        /// A string.
        #[prost(string, tag = "1")]
        StringValue(String),
        /// A bool.
        #[prost(bool, tag = "2")]
        BoolValue(bool),
        /// A signed 64-bit integer.
        #[prost(int64, tag = "3")]
        IntValue(i64),
        /// A double.
        #[prost(double, tag = "4")]
        DoubleValue(f64),
        /// An array of values.
        #[prost(message, tag = "5")]
        ArrayValue(super::ArrayValue),
        /// A list of key-value pairs.
        #[prost(message, tag = "6")]
        KvlistValue(super::KeyValueList),
        /// Bytes.
        #[prost(bytes = "vec", tag = "7")]
        BytesValue(Vec<u8>),
    }
}

/// An array of values.
///
/// ```
/// let a = fdr_otlp::proto::ArrayValue::default();
/// assert!(a.values.is_empty());
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct ArrayValue {
    /// The values.
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<AnyValue>,
}

/// A list of key-value pairs, as a value.
///
/// ```
/// let l = fdr_otlp::proto::KeyValueList { values: vec![fdr_otlp::proto::KeyValue::int("n", 1)] };
/// assert_eq!(l.values.len(), 1);
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValueList {
    /// The pairs, unique keys.
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<KeyValue>,
}

/// An attribute: a key and its value.
///
/// ```
/// use fdr_otlp::proto::KeyValue;
/// assert_eq!(KeyValue::int("thread.id", 11).key, "thread.id");
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// The attribute's name.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Its value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

impl KeyValue {
    fn of(key: &str, v: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value: Some(AnyValue { value: Some(v) }),
        }
    }

    /// A string attribute.
    ///
    /// ```
    /// use fdr_otlp::proto::{any_value::Value, KeyValue};
    /// let kv = KeyValue::string("thread.name", "main");
    /// assert_eq!(kv.value.unwrap().value, Some(Value::StringValue("main".into())));
    /// ```
    pub fn string(key: &str, value: &str) -> KeyValue {
        KeyValue::of(key, any_value::Value::StringValue(value.to_string()))
    }

    /// An integer attribute.
    ///
    /// ```
    /// use fdr_otlp::proto::{any_value::Value, KeyValue};
    /// assert_eq!(KeyValue::int("process.pid", 42).value.unwrap().value, Some(Value::IntValue(42)));
    /// ```
    pub fn int(key: &str, value: i64) -> KeyValue {
        KeyValue::of(key, any_value::Value::IntValue(value))
    }

    /// A bool attribute.
    ///
    /// ```
    /// use fdr_otlp::proto::{any_value::Value, KeyValue};
    /// assert_eq!(KeyValue::bool("fdr.open", true).value.unwrap().value, Some(Value::BoolValue(true)));
    /// ```
    pub fn bool(key: &str, value: bool) -> KeyValue {
        KeyValue::of(key, any_value::Value::BoolValue(value))
    }
}

/// The library that made the spans.
///
/// ```
/// let s = fdr_otlp::proto::InstrumentationScope { name: "fdr".into(), ..Default::default() };
/// assert_eq!(s.name, "fdr");
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    pub version: String,
    /// Attributes of the scope.
    #[prost(message, repeated, tag = "3")]
    pub attributes: Vec<KeyValue>,
    /// Attributes left out.
    #[prost(uint32, tag = "4")]
    pub dropped_attributes_count: u32,
}

/// What produced the telemetry: the process (package `opentelemetry.proto.resource.v1`).
///
/// ```
/// let r = fdr_otlp::proto::Resource::default();
/// assert!(r.attributes.is_empty());
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    /// Attributes, unique keys.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    /// Attributes left out.
    #[prost(uint32, tag = "2")]
    pub dropped_attributes_count: u32,
}

#[cfg(test)]
mod tests {
    //! Every field declared above, checked against the official `.proto` files in `proto/`:
    //! the schema's field of that name has that number, type and cardinality; and a message
    //! with every field set encodes exactly those field numbers with the wire type of that type.

    use super::*;
    use prost::Message;
    use std::collections::BTreeMap;
    use std::path::Path;

    /// (message as the schema names it, field, number, type, repeated), as declared above.
    const DECLARED: &[(&str, &str, u32, &str, bool)] = &[
        (
            "ExportTraceServiceRequest",
            "resource_spans",
            1,
            "ResourceSpans",
            true,
        ),
        (
            "ExportTraceServiceResponse",
            "partial_success",
            1,
            "ExportTracePartialSuccess",
            false,
        ),
        (
            "ExportTracePartialSuccess",
            "rejected_spans",
            1,
            "int64",
            false,
        ),
        (
            "ExportTracePartialSuccess",
            "error_message",
            2,
            "string",
            false,
        ),
        ("ResourceSpans", "resource", 1, "Resource", false),
        ("ResourceSpans", "scope_spans", 2, "ScopeSpans", true),
        ("ResourceSpans", "schema_url", 3, "string", false),
        ("ScopeSpans", "scope", 1, "InstrumentationScope", false),
        ("ScopeSpans", "spans", 2, "Span", true),
        ("ScopeSpans", "schema_url", 3, "string", false),
        ("Span", "trace_id", 1, "bytes", false),
        ("Span", "span_id", 2, "bytes", false),
        ("Span", "trace_state", 3, "string", false),
        ("Span", "parent_span_id", 4, "bytes", false),
        ("Span", "flags", 16, "fixed32", false),
        ("Span", "name", 5, "string", false),
        ("Span", "kind", 6, "SpanKind", false),
        ("Span", "start_time_unix_nano", 7, "fixed64", false),
        ("Span", "end_time_unix_nano", 8, "fixed64", false),
        ("Span", "attributes", 9, "KeyValue", true),
        ("Span", "dropped_attributes_count", 10, "uint32", false),
        ("Span", "events", 11, "Event", true),
        ("Span", "dropped_events_count", 12, "uint32", false),
        ("Span", "links", 13, "Link", true),
        ("Span", "dropped_links_count", 14, "uint32", false),
        ("Span", "status", 15, "Status", false),
        ("Event", "time_unix_nano", 1, "fixed64", false),
        ("Event", "name", 2, "string", false),
        ("Event", "attributes", 3, "KeyValue", true),
        ("Event", "dropped_attributes_count", 4, "uint32", false),
        ("Link", "trace_id", 1, "bytes", false),
        ("Link", "span_id", 2, "bytes", false),
        ("Link", "trace_state", 3, "string", false),
        ("Link", "attributes", 4, "KeyValue", true),
        ("Link", "dropped_attributes_count", 5, "uint32", false),
        ("Link", "flags", 6, "fixed32", false),
        ("Status", "message", 2, "string", false),
        ("Status", "code", 3, "StatusCode", false),
        ("AnyValue", "string_value", 1, "string", false),
        ("AnyValue", "bool_value", 2, "bool", false),
        ("AnyValue", "int_value", 3, "int64", false),
        ("AnyValue", "double_value", 4, "double", false),
        ("AnyValue", "array_value", 5, "ArrayValue", false),
        ("AnyValue", "kvlist_value", 6, "KeyValueList", false),
        ("AnyValue", "bytes_value", 7, "bytes", false),
        ("ArrayValue", "values", 1, "AnyValue", true),
        ("KeyValueList", "values", 1, "KeyValue", true),
        ("KeyValue", "key", 1, "string", false),
        ("KeyValue", "value", 2, "AnyValue", false),
        ("InstrumentationScope", "name", 1, "string", false),
        ("InstrumentationScope", "version", 2, "string", false),
        ("InstrumentationScope", "attributes", 3, "KeyValue", true),
        (
            "InstrumentationScope",
            "dropped_attributes_count",
            4,
            "uint32",
            false,
        ),
        ("Resource", "attributes", 1, "KeyValue", true),
        ("Resource", "dropped_attributes_count", 2, "uint32", false),
    ];

    /// Enumeration values as declared above: (enum, schema name, value).
    const ENUMS: &[(&str, &str, i32)] = &[
        (
            "SpanKind",
            "SPAN_KIND_UNSPECIFIED",
            span::SpanKind::Unspecified as i32,
        ),
        (
            "SpanKind",
            "SPAN_KIND_INTERNAL",
            span::SpanKind::Internal as i32,
        ),
        (
            "SpanKind",
            "SPAN_KIND_SERVER",
            span::SpanKind::Server as i32,
        ),
        (
            "SpanKind",
            "SPAN_KIND_CLIENT",
            span::SpanKind::Client as i32,
        ),
        (
            "SpanKind",
            "SPAN_KIND_PRODUCER",
            span::SpanKind::Producer as i32,
        ),
        (
            "SpanKind",
            "SPAN_KIND_CONSUMER",
            span::SpanKind::Consumer as i32,
        ),
        (
            "StatusCode",
            "STATUS_CODE_UNSET",
            status::StatusCode::Unset as i32,
        ),
        (
            "StatusCode",
            "STATUS_CODE_OK",
            status::StatusCode::Ok as i32,
        ),
        (
            "StatusCode",
            "STATUS_CODE_ERROR",
            status::StatusCode::Error as i32,
        ),
        (
            "SpanFlags",
            "SPAN_FLAGS_TRACE_FLAGS_MASK",
            span_flags::TRACE_FLAGS_MASK as i32,
        ),
        (
            "SpanFlags",
            "SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK",
            span_flags::CONTEXT_HAS_IS_REMOTE_MASK as i32,
        ),
        (
            "SpanFlags",
            "SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK",
            span_flags::CONTEXT_IS_REMOTE_MASK as i32,
        ),
    ];

    /// The schema's fields: (message, field) -> (number, type without package, repeated); and
    /// enumeration values: (enum, name) -> value. A small reader for the proto3 subset the
    /// four files use: comments, nested messages and enums, `oneof`, `reserved`, options.
    type Fields = BTreeMap<(String, String), (u32, String, bool)>;
    type Values = BTreeMap<(String, String), i64>;

    fn schema() -> (Fields, Values) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("proto/opentelemetry/proto");
        let (mut fields, mut values) = (Fields::new(), Values::new());
        for f in [
            "collector/trace/v1/trace_service.proto",
            "trace/v1/trace.proto",
            "common/v1/common.proto",
            "resource/v1/resource.proto",
        ] {
            let text = std::fs::read_to_string(root.join(f)).expect("a vendored .proto file");
            read_schema(&text, &mut fields, &mut values);
        }
        (fields, values)
    }

    fn read_schema(text: &str, fields: &mut Fields, values: &mut Values) {
        // Blocks open: ("message" | "enum" | "oneof" | "service" | other, name).
        let mut blocks: Vec<(String, String)> = Vec::new();
        for raw in text.lines() {
            let line = raw.split("//").next().unwrap().trim();
            if line.is_empty() {
                continue;
            }
            let words: Vec<&str> = line
                .split(|c: char| c.is_whitespace() || c == ';' || c == '=')
                .filter(|w| !w.is_empty())
                .collect();
            if line.ends_with('{') {
                let kind = words[0].to_string();
                let name = words.get(1).copied().unwrap_or("").to_string();
                blocks.push((kind, name));
                continue;
            }
            if line.starts_with('}') {
                blocks.pop();
                continue;
            }
            let Some((kind, name)) = blocks.last() else {
                continue;
            };
            if ["reserved", "option", "rpc"].contains(&words[0]) {
                continue;
            }
            match kind.as_str() {
                "enum" => {
                    let v = words[1];
                    let v = match v.strip_prefix("0x") {
                        Some(hex) => i64::from_str_radix(hex, 16).unwrap(),
                        None => v.parse().unwrap(),
                    };
                    values.insert((name.clone(), words[0].to_string()), v);
                }
                "message" | "oneof" => {
                    let message = blocks
                        .iter()
                        .rev()
                        .find(|b| b.0 == "message")
                        .map(|b| b.1.clone())
                        .unwrap();
                    let (repeated, ty, field, number) = if words[0] == "repeated" {
                        (true, words[1], words[2], words[3])
                    } else {
                        (false, words[0], words[1], words[2])
                    };
                    let ty = ty.rsplit('.').next().unwrap().to_string();
                    let number: u32 = number.parse().unwrap();
                    fields.insert((message, field.to_string()), (number, ty, repeated));
                }
                _ => {}
            }
        }
    }

    #[test]
    fn the_messages_match_the_official_schema() {
        let (fields, values) = schema();
        assert!(fields.len() > 60, "the schema reader found too little");
        for &(message, field, number, ty, repeated) in DECLARED {
            let got = fields
                .get(&(message.to_string(), field.to_string()))
                .unwrap_or_else(|| panic!("{message}.{field} is not in the schema"));
            assert_eq!(
                got,
                &(number, ty.to_string(), repeated),
                "{message}.{field}"
            );
        }
        for &(e, name, v) in ENUMS {
            assert_eq!(
                values.get(&(e.to_string(), name.to_string())),
                Some(&i64::from(v)),
                "{e}.{name}"
            );
        }
        // Every field of these messages in the schema is declared, but those left out on
        // purpose (see the module's documentation).
        let messages: Vec<&str> = DECLARED.iter().map(|d| d.0).collect();
        let left_out = [
            ("AnyValue", "string_value_strindex"),
            ("KeyValue", "key_strindex"),
            ("Resource", "entity_refs"),
        ];
        for (m, f) in fields.keys() {
            if messages.contains(&m.as_str()) && !left_out.contains(&(m.as_str(), f.as_str())) {
                assert!(
                    DECLARED.iter().any(|d| d.0 == m && d.1 == f),
                    "{m}.{f} is in the schema but not declared"
                );
            }
        }
    }

    /// The wire type protobuf uses for a field of type `ty`.
    fn wire_type(ty: &str) -> u64 {
        match ty {
            "int64" | "uint32" | "bool" | "SpanKind" | "StatusCode" => 0,
            "fixed64" | "double" => 1,
            "fixed32" => 5,
            _ => 2,
        }
    }

    /// The (field number, wire type) pairs at the top level of an encoded message.
    fn tags(mut b: &[u8]) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = prost::encoding::decode_varint(&mut b).unwrap();
            let (number, wt) = ((key >> 3) as u32, key & 7);
            match wt {
                0 => {
                    prost::encoding::decode_varint(&mut b).unwrap();
                }
                1 => b = &b[8..],
                5 => b = &b[4..],
                2 => {
                    let n = prost::encoding::decode_varint(&mut b).unwrap() as usize;
                    b = &b[n..];
                }
                _ => panic!("wire type {wt}"),
            }
            out.push((number, wt));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    fn expect(message: &str, encoded: Vec<u8>) {
        let mut want: Vec<(u32, u64)> = DECLARED
            .iter()
            .filter(|d| d.0 == message)
            .map(|d| (d.2, wire_type(d.3)))
            .collect();
        want.sort_unstable();
        assert_eq!(tags(&encoded), want, "{message}");
    }

    #[test]
    fn every_field_encodes_with_its_number_and_wire_type() {
        let kv = KeyValue::int("k", 1);
        expect("KeyValue", KeyValue::string("k", "v").encode_to_vec());
        let span = Span {
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            trace_state: "a=b".into(),
            parent_span_id: vec![3; 8],
            flags: 0x101,
            name: "f".into(),
            kind: span::SpanKind::Internal as i32,
            start_time_unix_nano: 1,
            end_time_unix_nano: 2,
            attributes: vec![kv.clone()],
            dropped_attributes_count: 1,
            events: vec![span::Event {
                time_unix_nano: 1,
                name: "e".into(),
                attributes: vec![kv.clone()],
                dropped_attributes_count: 1,
            }],
            dropped_events_count: 1,
            links: vec![span::Link {
                trace_id: vec![1; 16],
                span_id: vec![1; 8],
                trace_state: "a=b".into(),
                attributes: vec![kv.clone()],
                dropped_attributes_count: 1,
                flags: 1,
            }],
            dropped_links_count: 1,
            status: Some(Status {
                message: "m".into(),
                code: status::StatusCode::Error as i32,
            }),
        };
        expect("Span", span.encode_to_vec());
        expect("Event", span.events[0].encode_to_vec());
        expect("Link", span.links[0].encode_to_vec());
        expect("Status", span.status.clone().unwrap().encode_to_vec());
        let scope = InstrumentationScope {
            name: "fdr".into(),
            version: "1".into(),
            attributes: vec![kv.clone()],
            dropped_attributes_count: 1,
        };
        expect("InstrumentationScope", scope.encode_to_vec());
        let resource = Resource {
            attributes: vec![kv.clone()],
            dropped_attributes_count: 1,
        };
        expect("Resource", resource.encode_to_vec());
        let ss = ScopeSpans {
            scope: Some(scope),
            spans: vec![span],
            schema_url: "u".into(),
        };
        expect("ScopeSpans", ss.encode_to_vec());
        let rs = ResourceSpans {
            resource: Some(resource),
            scope_spans: vec![ss],
            schema_url: "u".into(),
        };
        expect("ResourceSpans", rs.encode_to_vec());
        expect(
            "ExportTraceServiceRequest",
            ExportTraceServiceRequest {
                resource_spans: vec![rs],
            }
            .encode_to_vec(),
        );
        let partial = ExportTracePartialSuccess {
            rejected_spans: 1,
            error_message: "m".into(),
        };
        expect("ExportTracePartialSuccess", partial.encode_to_vec());
        expect(
            "ExportTraceServiceResponse",
            ExportTraceServiceResponse {
                partial_success: Some(partial),
            }
            .encode_to_vec(),
        );
        expect(
            "ArrayValue",
            ArrayValue {
                values: vec![AnyValue::default()],
            }
            .encode_to_vec(),
        );
        expect(
            "KeyValueList",
            KeyValueList { values: vec![kv] }.encode_to_vec(),
        );
        // The oneof: each variant on its own.
        use any_value::Value;
        let variants = [
            Value::StringValue("s".into()),
            Value::BoolValue(true),
            Value::IntValue(1),
            Value::DoubleValue(1.5),
            Value::ArrayValue(ArrayValue::default()),
            Value::KvlistValue(KeyValueList::default()),
            Value::BytesValue(vec![1]),
        ];
        let mut all = Vec::new();
        for v in variants {
            all.extend(AnyValue { value: Some(v) }.encode_to_vec());
        }
        expect("AnyValue", all);
    }
}
