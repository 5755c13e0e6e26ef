//! Every `FDR_OPTIONS` key, with the form of its value and its default: the one place error
//! messages and the README's list take them from.

use crate::Error;

use super::ranges::{self, Range};
use super::settings::{Config, Mode};

/// One `FDR_OPTIONS` key: the form of its value and its default, read from
/// [`Config::default`] itself. The one place error messages and the README's list take them
/// from (a test checks the README names every key).
pub(crate) struct OptionSpec {
    pub key: &'static str,
    pub form: Form,
    pub default: fn(&Config) -> String,
}

/// The form of a key's value, as its help and errors state it.
pub(crate) enum Form {
    /// Said in these words.
    Text(&'static str),
    /// A number (`what`), in the range its check takes: the words state that range.
    Count(&'static str, Range),
}

impl Form {
    /// The form in words: `a number of bytes, 256 to 1073741824`.
    pub(crate) fn text(&self) -> String {
        match self {
            Form::Text(t) => (*t).to_string(),
            Form::Count(what, range) => format!("{what}, {}", range.text()),
        }
    }
}

/// Every `FDR_OPTIONS` key, in the README's order.
pub(crate) const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        key: "buffer_size",
        form: Form::Count("a number of bytes", ranges::BUFFER_SIZE),
        default: |c| c.buffer_size.to_string(),
    },
    OptionSpec {
        key: "buffer_count",
        form: Form::Count("a number of buffers", ranges::BUFFER_COUNT),
        default: |c| c.buffer_count.to_string(),
    },
    OptionSpec {
        key: "threshold_us",
        form: Form::Text("a whole number of microseconds (0 keeps every call)"),
        default: |c| c.threshold.as_micros().to_string(),
    },
    OptionSpec {
        key: "mode",
        form: Form::Text("ring, fill, profile (call trees, no window) or record+profile (ring and a profile)"),
        default: |c| match c.mode {
            Mode::Ring => "ring".into(),
            Mode::Fill => "fill".into(),
            Mode::Profile => "profile".into(),
        },
    },
    OptionSpec {
        key: "profile",
        form: Form::Text("on or off (a profile beside the window)"),
        default: |c| if c.profile { "on".into() } else { "off".into() },
    },
    OptionSpec {
        key: "profile_nodes",
        form: Form::Count("a number of call-tree nodes per thread", ranges::PROFILE_NODES),
        default: |c| c.profile_nodes.to_string(),
    },
    OptionSpec {
        key: "profile_threads",
        form: Form::Text("on or off (a call tree per thread rather than one merged)"),
        default: |c| if c.profile_threads { "on".into() } else { "off".into() },
    },
    OptionSpec {
        key: "out",
        form: Form::Text("a file path, with {pid}, {n} or {time} if wanted"),
        default: |_| "PROGRAM-{pid}.fdr".into(),
    },
    OptionSpec {
        key: "crash_dir",
        form: Form::Text("a directory for the crash box, or off"),
        default: |_| "$XDG_RUNTIME_DIR, else /dev/shm, else the temporary directory".into(),
    },
    OptionSpec {
        key: "clock",
        form: Form::Text("auto, rdtscp, rdtsc or monotonic"),
        default: |_| "auto".into(),
    },
    OptionSpec {
        key: "trigger",
        form: Form::Text("PATTERN:LIMIT, such as app::handle*:50ms, or PATTERN:auto, PATTERN:auto:k=5 for a limit learned from the calls (repeatable)"),
        default: |_| "none".into(),
    },
    OptionSpec {
        key: "long_poll",
        form: Form::Text("a duration such as 100ms or 2s (a poll of an async fn that long is a trigger), or off"),
        default: |c| match c.long_poll {
            Some(d) => crate::Limit::After(d).to_string(),
            None => "off".into(),
        },
    },
    OptionSpec {
        key: "trigger_cooldown_ms",
        form: Form::Text("a whole number of milliseconds"),
        default: |c| c.trigger_cooldown.as_millis().to_string(),
    },
    OptionSpec {
        key: "max_snapshots",
        form: Form::Text("a number of snapshot files"),
        default: |c| c.max_snapshots.to_string(),
    },
    OptionSpec {
        key: "signal",
        form: Form::Text("USR1 or USR2"),
        default: |_| "none".into(),
    },
    OptionSpec {
        key: "max_age_ms",
        form: Form::Text("a whole number of milliseconds, above 0"),
        default: |_| "none (no age limit)".into(),
    },
    OptionSpec {
        key: "cull",
        form: Form::Text("on or off"),
        default: |c| if c.cull { "on".into() } else { "off".into() },
    },
    OptionSpec {
        key: "budget",
        form: Form::Text("a percentage of the process's CPU time the recorder may cost (above 0, at most 100, such as 0.5), or off"),
        default: |c| match c.budget_ppm {
            Some(p) => format!("{}", f64::from(p) / 10_000.0),
            None => "off".into(),
        },
    },
    OptionSpec {
        key: "cull_after",
        form: Form::Count("a number of calls", ranges::CULL_AFTER),
        default: |c| c.cull_after.to_string(),
    },
    OptionSpec {
        key: "cull_memory",
        form: Form::Text("on or off (on: start from the functions the last run of the same build culled)"),
        default: |c| if c.cull_memory { "on".into() } else { "off".into() },
    },
    OptionSpec {
        key: "otlp_endpoint",
        form: Form::Text("an http:// or https:// URL of an OpenTelemetry collector (OTLP/HTTP), such as http://localhost:4318, or env for the OTEL_EXPORTER_OTLP_* variables' endpoint"),
        default: |_| "none (windows are not sent)".into(),
    },
    OptionSpec {
        key: "service_name",
        form: Form::Text("the service.name of sent windows"),
        default: |_| "the program's file name".into(),
    },
    OptionSpec {
        key: "otlp_only",
        form: Form::Text("on or off (on: windows are sent instead of written to files)"),
        default: |c| if c.otlp.only { "on".into() } else { "off".into() },
    },
    OptionSpec {
        key: "otlp_queue",
        form: Form::Count("a number of windows waiting to be sent", ranges::OTLP_QUEUE),
        default: |c| c.otlp.queue.to_string(),
    },
    OptionSpec {
        key: "otlp_max_spans",
        form: Form::Count("a number of spans per request", ranges::OTLP_MAX_SPANS),
        default: |c| c.otlp.max_spans.to_string(),
    },
    OptionSpec {
        key: "otlp_headers",
        form: Form::Text("NAME=VALUE,NAME=VALUE headers for the collector, values percent-decoded (API keys; never printed)"),
        default: |_| "OTEL_EXPORTER_OTLP_TRACES_HEADERS, OTEL_EXPORTER_OTLP_HEADERS, else none".into(),
    },
    OptionSpec {
        key: "otlp_ca",
        form: Form::Text("a PEM file of the CA certificates to trust for an https:// collector"),
        default: |_| "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE, OTEL_EXPORTER_OTLP_CERTIFICATE, else the system's roots".into(),
    },
    OptionSpec {
        key: "otlp_compression",
        form: Form::Text("gzip or none (request bodies)"),
        default: |_| "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION, OTEL_EXPORTER_OTLP_COMPRESSION, else gzip".into(),
    },
    OptionSpec {
        key: "otlp_timeout",
        form: Form::Text("a duration such as 10s or 500ms (one attempt's limit)"),
        default: |_| "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT, OTEL_EXPORTER_OTLP_TIMEOUT, else 10s".into(),
    },
    OptionSpec {
        key: "otlp_retry_for",
        form: Form::Text("a duration such as 60s (how long one request may be retried; 0: tried once)"),
        default: |c| fdr_format::duration::write(c.otlp.retry_for.as_nanos() as u64),
    },
];

/// The error for option `key`: `message` (what was wrong), then the form it takes and its
/// default, from [`OPTIONS`].
pub(crate) fn option_error(key: &str, message: String) -> Error {
    let spec = OPTIONS.iter().find(|o| o.key == key);
    let message = match spec {
        Some(o) => format!(
            "{message}; write {}=VALUE with VALUE {} (default {})",
            o.key,
            o.form.text(),
            (o.default)(&Config::default())
        ),
        None => message,
    };
    Error::Config {
        key: key.into(),
        message,
    }
}
