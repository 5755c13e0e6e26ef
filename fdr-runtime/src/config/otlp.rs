//! Where and how windows go to an OpenTelemetry collector: the settings (`otlp_*` keys and the
//! builder's `otlp_*` methods) and their check.

use std::path::PathBuf;
use std::time::Duration;

use crate::Error;

use super::keys::option_error;
use super::ranges;
use super::settings::{Config, Mode};

/// Where and how windows go to an OpenTelemetry collector ([`Config::otlp_endpoint`]). The
/// settings the OpenTelemetry variables may give too are `None` when not given here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Otlp {
    pub endpoint: Option<String>,
    pub service_name: Option<String>,
    pub only: bool,
    pub queue: u32,
    pub max_spans: u32,
    pub timeout: Option<Duration>,
    pub retry_for: Duration,
    pub headers: Option<Secrets>,
    pub ca: Option<PathBuf>,
    pub gzip: Option<bool>,
}

/// Header names and values whose values never show: not in `Debug`, not in a message.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Secrets(pub Vec<(String, String)>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(n, _)| format!("{n}: …")))
            .finish()
    }
}

impl Default for Otlp {
    fn default() -> Self {
        Otlp {
            endpoint: None,
            service_name: None,
            only: false,
            queue: 8,
            max_spans: 10_000,
            timeout: None,
            retry_for: Duration::from_secs(60),
            headers: None,
            ca: None,
            gzip: None,
        }
    }
}

impl Config {
    pub(super) fn validate_otlp(&self) -> Result<(), Error> {
        let o = &self.otlp;
        if !ranges::OTLP_QUEUE.contains(u64::from(o.queue)) {
            return Err(option_error(
                "otlp_queue",
                format!("{} windows is out of range", o.queue),
            ));
        }
        if !ranges::OTLP_MAX_SPANS.contains(u64::from(o.max_spans)) {
            return Err(option_error(
                "otlp_max_spans",
                format!("{} spans per request is out of range", o.max_spans),
            ));
        }
        if o.timeout.is_some_and(|t| t.is_zero()) {
            return Err(option_error(
                "otlp_timeout",
                "a timeout of 0 gives no attempt a chance; give a duration such as 10s".into(),
            ));
        }
        if o.endpoint.is_some() && self.mode == Mode::Profile {
            return Err(option_error(
                "otlp_endpoint",
                "profile mode writes no window to send; use mode=ring (with profile=on for a \
                 profile too)"
                    .into(),
            ));
        }
        let Some(url) = &o.endpoint else {
            if o.only {
                return Err(option_error(
                    "otlp_only",
                    "windows would go nowhere: give otlp_endpoint too, or leave otlp_only off"
                        .into(),
                ));
            }
            return Ok(());
        };
        #[cfg(feature = "otlp-http")]
        {
            if url.trim() != fdr_otlp::settings::ENV {
                fdr_otlp::endpoint::Endpoint::parse(url)
                    .and_then(|e| fdr_otlp::client::needs_tls(&e, fdr_otlp::client::TLS))
                    .map_err(|e| option_error("otlp_endpoint", e.to_string()))?;
            }
            if let Some(h) = &o.headers {
                fdr_otlp::headers::Headers::new(h.0.clone())
                    .map_err(|m| option_error("otlp_headers", m))?;
            }
            Ok(())
        }
        #[cfg(not(feature = "otlp-http"))]
        {
            Err(option_error("otlp_endpoint", no_otlp(url)))
        }
    }
}

/// Why `otlp_endpoint` is refused by a build without the exporter. (Built everywhere so that its
/// words are tested where the exporter is built in, as it is in the workspace's tests.)
#[cfg_attr(feature = "otlp-http", allow(dead_code))]
fn no_otlp(url: &str) -> String {
    format!(
        "this program was built without fdr's `otlp` feature, so windows cannot be sent to the \
         collector ({} characters given); build with `features = [\"otlp\"]` on the fdr \
         dependency",
        url.chars().count()
    )
}

/// When a recording ends, the most time windows still waiting to go to the collector get.
pub const OTLP_FLUSH: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    #[test]
    fn the_message_of_a_build_without_otlp_reads_as_one_sentence() {
        let m = super::no_otlp("https://x");
        assert_eq!(
            m,
            "this program was built without fdr's `otlp` feature, so windows cannot be sent to \
             the collector (9 characters given); build with `features = [\"otlp\"]` on the fdr \
             dependency"
        );
        assert!(!m.contains("  "), "{m}");
    }
}
