//! Checking OTLP exports against `fdr calls`: the official OpenTelemetry decoder
//! (`fdr-cli/tests/otlp_check.py`, PyPI package `opentelemetry-proto`) and the spans both sides say a
//! window has, compared exactly; and the HTTP request a test collector reads. Used by this
//! crate's `fdr export` tests and by the runtime's exporter tests.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// Decodes `files` (each one `ExportTraceServiceRequest`) with `fdr-cli/tests/otlp_check.py`, the
/// official OpenTelemetry classes, and returns what it prints. Panics (does not skip) without
/// python3 or opentelemetry-proto, saying what to install.
///
/// ```no_run
/// let v = fdr_testkit::otlp::otlp_check(&["request.pb".into()]);
/// println!("{} spans", v["spans"].as_array().unwrap().len());
/// ```
pub fn otlp_check(files: &[PathBuf]) -> Value {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fdr-cli/tests/otlp_check.py"
    );
    let out = Command::new("python3")
        .arg(script)
        .args(files)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "python3 is needed to decode OTLP requests with the official OpenTelemetry \
                 schema ({e}): install python3, then `python3 -m pip install opentelemetry-proto` \
                 (scripts/test does)"
            )
        });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() != Some(3),
        "the OTLP check needs the Python package opentelemetry-proto: run \
         `python3 -m pip install opentelemetry-proto` (scripts/test does): {stderr}"
    );
    assert!(
        out.status.success(),
        "otlp_check.py rejected {files:?} (exit {:?}): {stderr}",
        out.status.code()
    );
    serde_json::from_slice(&out.stdout).expect("otlp_check.py prints JSON")
}

/// A span as both sides can say it: thread, Unix start, name, end, open, inferred start,
/// arguments (sorted by name), and the parent's name and start.
///
/// ```
/// let s = fdr_testkit::otlp::Span::default();
/// assert!(s.parent.is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Span {
    /// `thread.id`.
    pub tid: i64,
    /// Start, Unix ns.
    pub start: u64,
    /// The function.
    pub name: String,
    /// End, Unix ns.
    pub end: u64,
    /// `fdr.open`.
    pub open: bool,
    /// `fdr.inferred_start`.
    pub inferred: bool,
    /// `fdr.arg.NAME` values, sorted by name.
    pub args: Vec<(String, i64)>,
    /// The parent's name and start.
    pub parent: Option<(String, u64)>,
}

/// The spans that `calls`, the output of `fdr calls --format json --top N --depth D` with
/// every call listed at the top level, says the window has, its start at Unix time `base`: a
/// call's parent is the listed call whose children hold it. Sorted.
///
/// ```
/// let calls = serde_json::json!([]);
/// assert!(fdr_testkit::otlp::spans_of_calls(&calls, 0).is_empty());
/// ```
pub fn spans_of_calls(calls: &Value, base: u64) -> Vec<Span> {
    let calls = calls.as_array().expect("fdr calls --format json is a list");
    let key = |c: &Value| {
        (
            c["thread"].as_i64().unwrap(),
            c["function"].as_str().unwrap().to_string(),
            c["start_ns"].as_u64().unwrap(),
            c["duration_ns"].as_u64().unwrap(),
        )
    };
    let mut parent_of = BTreeMap::new();
    for c in calls {
        for child in c["children"].as_array().unwrap() {
            let had = parent_of.insert(key(child), key(c));
            assert!(had.is_none(), "{child} has two parents");
        }
    }
    let listed: Vec<_> = calls.iter().map(key).collect();
    for k in parent_of.keys() {
        assert!(listed.contains(k), "{k:?} is a child but not listed");
    }
    let mut spans: Vec<Span> = calls
        .iter()
        .map(|c| {
            let k = key(c);
            let start = base + k.2;
            let mut args: Vec<(String, i64)> = c["args"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|x| {
                            (
                                x["name"].as_str().unwrap().to_string(),
                                // 64 bits, as the int attribute holds them.
                                x["value"]
                                    .as_u64()
                                    .map(|v| v as i64)
                                    .or_else(|| x["value"].as_i64())
                                    .unwrap(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            args.sort();
            Span {
                tid: k.0,
                start,
                name: k.1.clone(),
                end: start + k.3,
                open: c["open_at_end"].as_bool().unwrap(),
                inferred: c["inferred_start"].as_bool().unwrap(),
                args,
                parent: parent_of.get(&k).map(|p| (p.1.clone(), base + p.2)),
            }
        })
        .collect();
    spans.sort();
    spans
}

/// The spans `otlp_check.py` decoded (its output `v`), sorted. Every span is internal, and
/// `fdr.open` / `fdr.inferred_start` are true when present; a parent outside the spans (the
/// span of a joined trace) counts as none.
///
/// ```
/// let v = serde_json::json!({ "spans": [] });
/// assert!(fdr_testkit::otlp::spans_of_otlp(&v).is_empty());
/// ```
pub fn spans_of_otlp(v: &Value) -> Vec<Span> {
    let mut spans: Vec<Span> = v["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let a = s["attributes"].as_object().unwrap();
            assert_eq!(s["kind"], "SPAN_KIND_INTERNAL");
            let mut args: Vec<(String, i64)> = a
                .iter()
                .filter_map(|(k, v)| {
                    k.strip_prefix("fdr.arg.")
                        .map(|n| (n.to_string(), v.as_i64().unwrap()))
                })
                .collect();
            args.sort();
            let flag = |k: &str| {
                a.get(k).is_some_and(|v| {
                    assert_eq!(v, &Value::Bool(true), "{k} is true when present");
                    true
                })
            };
            Span {
                tid: a["thread.id"].as_i64().unwrap(),
                start: s["start"].as_u64().unwrap(),
                name: s["name"].as_str().unwrap().to_string(),
                end: s["end"].as_u64().unwrap(),
                open: flag("fdr.open"),
                inferred: flag("fdr.inferred_start"),
                args,
                // A parent outside the window (a joined trace's span) is none of its calls.
                parent: match &s["parent"] {
                    Value::Null => None,
                    p if p.get("remote").is_some() => None,
                    p => Some((
                        p["name"].as_str().unwrap().to_string(),
                        p["start"].as_u64().unwrap(),
                    )),
                },
            }
        })
        .collect();
    spans.sort();
    spans
}

/// An HTTP request as a test collector read it.
#[derive(Clone, Debug)]
pub struct Received {
    /// When its head was read.
    pub at: std::time::Instant,
    /// The request line, without its line end: `POST /v1/traces HTTP/1.1`.
    pub line: String,
    /// The headers, names in lower case, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body, `Content-Length` bytes.
    pub body: Vec<u8>,
}

impl Received {
    /// The value of header `name` (lower case).
    ///
    /// ```
    /// let r = fdr_testkit::otlp::Received {
    ///     at: std::time::Instant::now(),
    ///     line: "POST /v1/traces HTTP/1.1".into(),
    ///     headers: vec![("content-length".into(), "0".into())],
    ///     body: vec![],
    /// };
    /// assert_eq!(r.header("content-length"), Some("0"));
    /// ```
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one HTTP/1.1 request with a `Content-Length` body from `s` (a connection, plain or
/// TLS: the caller sets its timeout); `None` if the connection ends or fails first, or the head
/// is not text. The body is as sent (gzipped, if the sender gzipped it).
///
/// ```
/// let mut wire: &[u8] = b"POST /v1/traces HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
/// let r = fdr_testkit::otlp::read_request(&mut wire).expect("a request");
/// assert_eq!((r.line.as_str(), &r.body[..]), ("POST /v1/traces HTTP/1.1", &b"abc"[..]));
/// ```
pub fn read_request(s: &mut impl Read) -> Option<Received> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let at = std::time::Instant::now();
    let head = String::from_utf8(buf[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let line = lines.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut r = Received {
        at,
        line,
        headers,
        body: buf[head_end + 4..].to_vec(),
    };
    let len: usize = r.header("content-length")?.parse().ok()?;
    while r.body.len() < len {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        r.body.extend_from_slice(&chunk[..n]);
    }
    Some(r)
}
