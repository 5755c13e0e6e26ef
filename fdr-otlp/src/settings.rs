//! Where windows go and how, from the two places a team says it: fdr's own options (`FDR_OPTIONS`
//! and `Config`, or `fdr export`'s flags) and the OpenTelemetry SDK variables as the
//! specification defines them. Each setting is taken from the first place that gives it:
//!
//! 1. fdr's own option;
//! 2. the variable for traces (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `..._TRACES_HEADERS`,
//!    `..._TRACES_TIMEOUT`, `..._TRACES_COMPRESSION`, `..._TRACES_CERTIFICATE`);
//! 3. the variable for every signal (`OTEL_EXPORTER_OTLP_ENDPOINT`, with `v1/traces` added to
//!    its path; `..._HEADERS`, `..._TIMEOUT` in milliseconds, `..._COMPRESSION`,
//!    `..._CERTIFICATE`);
//! 4. the default (`http://localhost:4318/v1/traces`, no header, gzip, 10 s, the system's
//!    roots).
//!
//! A list (headers) is taken whole from one place, not merged. `service.name` comes from fdr's
//! option, else `OTEL_SERVICE_NAME`, else `service.name` in `OTEL_RESOURCE_ATTRIBUTES`, else the
//! program's name; the other attributes of `OTEL_RESOURCE_ATTRIBUTES` join the resource,
//! replacing fdr's own of the same key. An empty variable counts as unset, as the
//! specification says.
//!
//! The variables do not turn exporting on: the endpoint `env` ([`ENV`]) is how fdr's options
//! ask for the variables' endpoint.
//!
//! ```
//! use fdr_otlp::settings::{Given, Otel, Settings};
//! let otel = Otel::from_vars(|v| match v {
//!     "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("https://api.example.com".into()),
//!     "OTEL_EXPORTER_OTLP_HEADERS" => Some("x-api-key=s3cr3t".into()),
//!     _ => None,
//! });
//! let s = Settings::resolve(&Given { endpoint: "env".into(), ..Given::default() }, &otel)?;
//! assert_eq!(s.transport.endpoint.url(), "https://api.example.com:443/v1/traces");
//! assert_eq!(s.transport.headers.names().collect::<Vec<_>>(), ["x-api-key"]);
//! # Ok::<(), fdr_otlp::settings::SettingError>(())
//! ```

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::client::{Compression, Transport};
use crate::endpoint::Endpoint;
use crate::headers::Headers;

/// The endpoint that means "the one the OpenTelemetry variables give".
///
/// ```
/// assert_eq!(fdr_otlp::settings::ENV, "env");
/// ```
pub const ENV: &str = "env";

/// The OTLP/HTTP endpoint the specification gives an exporter that is told none.
///
/// ```
/// assert_eq!(fdr_otlp::settings::DEFAULT_ENDPOINT, "http://localhost:4318");
/// ```
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";

/// One attempt's limit when nothing says (the specification's 10 s).
///
/// ```
/// assert_eq!(fdr_otlp::settings::DEFAULT_TIMEOUT.as_secs(), 10);
/// ```
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What fdr's own options say; `None` (or empty) where they say nothing.
///
/// ```
/// let g = fdr_otlp::settings::Given { endpoint: "http://localhost:4318".into(), ..Default::default() };
/// assert!(g.headers.is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Given {
    /// A URL ([`Endpoint::parse`]'s rules), or [`ENV`].
    pub endpoint: String,
    /// Headers, checked.
    pub headers: Option<Headers>,
    /// Gzip or not.
    pub compression: Option<Compression>,
    /// A PEM file of CA certificates to trust.
    pub ca_file: Option<PathBuf>,
    /// One attempt's limit.
    pub timeout: Option<Duration>,
    /// `service.name`.
    pub service_name: Option<String>,
}

/// The OpenTelemetry variables, as read (empty ones left out).
///
/// ```
/// let o = fdr_otlp::settings::Otel::from_vars(|_| None);
/// assert_eq!(o, Default::default());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Otel {
    vars: Vec<(&'static str, String)>,
}

/// The variables read, in the order a setting looks for them.
const VARIABLES: [&str; 12] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_CERTIFICATE",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
];

impl Otel {
    /// The process's variables.
    pub fn from_env() -> Otel {
        Otel::from_vars(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
    }

    /// The variables `get` gives (for tests, and for callers with an environment of their own).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Otel {
        Otel {
            vars: VARIABLES
                .iter()
                .filter_map(|&name| {
                    get(name)
                        .filter(|v| !v.trim().is_empty())
                        .map(|v| (name, v))
                })
                .collect(),
        }
    }

    /// The first of `names` that is set, with its name.
    fn first(&self, names: &[&'static str]) -> Option<(&'static str, &str)> {
        names.iter().find_map(|n| {
            self.vars
                .iter()
                .find(|(v, _)| v == n)
                .map(|(v, value)| (*v, value.as_str()))
        })
    }
}

/// A setting that cannot be used: where it came from and what is wrong. Never quotes a header.
///
/// ```
/// use fdr_otlp::settings::{Given, Otel, Settings};
/// let otel = Otel::from_vars(|v| (v == "OTEL_EXPORTER_OTLP_TIMEOUT").then(|| "ten".into()));
/// let e = Settings::resolve(&Given { endpoint: "env".into(), ..Given::default() }, &otel).unwrap_err();
/// assert_eq!(e.variable, Some("OTEL_EXPORTER_OTLP_TIMEOUT"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingError {
    /// The variable at fault; `None`: fdr's own endpoint.
    pub variable: Option<&'static str>,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.variable {
            Some(v) => write!(f, "{v}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for SettingError {}

/// Every setting, resolved.
///
/// ```
/// use fdr_otlp::settings::{Given, Otel, Settings};
/// let s = Settings::resolve(&Given { endpoint: "http://h:4318".into(), ..Given::default() }, &Otel::default())?;
/// assert_eq!(s.timeout, fdr_otlp::settings::DEFAULT_TIMEOUT);
/// # Ok::<(), fdr_otlp::settings::SettingError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Where and how requests go.
    pub transport: Transport,
    /// The variable that gave `transport.ca_file`, if one did (for messages).
    pub ca_variable: Option<&'static str>,
    /// One attempt's limit.
    pub timeout: Duration,
    /// `service.name`, when fdr's option or a variable gives one.
    pub service_name: Option<String>,
    /// More resource attributes (`OTEL_RESOURCE_ATTRIBUTES`, `service.name` left out).
    pub resource: Vec<(String, String)>,
}

impl Settings {
    /// `given` completed by `otel`, in the order of this module's documentation.
    pub fn resolve(given: &Given, otel: &Otel) -> Result<Settings, SettingError> {
        let bad = |variable: &'static str| {
            move |message: String| SettingError {
                variable: Some(variable),
                message,
            }
        };
        let endpoint = if given.endpoint.trim() != ENV {
            Endpoint::parse(&given.endpoint).map_err(|e| SettingError {
                variable: None,
                message: e.to_string(),
            })?
        } else {
            match otel.first(&[VARIABLES[0], VARIABLES[1]]) {
                Some((v, url)) if v == VARIABLES[0] => Endpoint::parse_exact(url),
                Some((_, url)) => Endpoint::parse_base(url),
                None => Endpoint::parse(DEFAULT_ENDPOINT),
            }
            .map_err(|e| SettingError {
                variable: otel.first(&[VARIABLES[0], VARIABLES[1]]).map(|(v, _)| v),
                message: e.to_string(),
            })?
        };
        let headers = match &given.headers {
            Some(h) => h.clone(),
            None => match otel.first(&[VARIABLES[2], VARIABLES[3]]) {
                Some((v, text)) => Headers::parse(text).map_err(bad(v))?,
                None => Headers::default(),
            },
        };
        let timeout = match given.timeout {
            Some(t) => t,
            None => match otel.first(&[VARIABLES[4], VARIABLES[5]]) {
                Some((v, ms)) => match ms.trim().parse::<u64>() {
                    Ok(0) | Err(_) => {
                        return Err(bad(v)(format!(
                            "expected a whole number of milliseconds above 0, found `{}`",
                            ms.trim()
                        )))
                    }
                    Ok(ms) => Duration::from_millis(ms),
                },
                None => DEFAULT_TIMEOUT,
            },
        };
        let compression = match given.compression {
            Some(c) => c,
            None => match otel.first(&[VARIABLES[6], VARIABLES[7]]) {
                Some((v, c)) => c.parse().map_err(bad(v))?,
                None => Compression::default(),
            },
        };
        let from_variable = match &given.ca_file {
            Some(_) => None,
            None => otel.first(&[VARIABLES[8], VARIABLES[9]]),
        };
        let ca_file = given
            .ca_file
            .clone()
            .or_else(|| from_variable.map(|(_, p)| PathBuf::from(p.trim())));
        let mut resource = match otel.first(&[VARIABLES[11]]) {
            Some((v, text)) => {
                fdr_format::key_values::parse(text).map_err(|e| bad(v)(e.to_string()))?
            }
            None => Vec::new(),
        };
        let from_resource = resource
            .iter()
            .rev()
            .find(|(k, _)| k == "service.name")
            .map(|(_, v)| v.clone());
        resource.retain(|(k, _)| k != "service.name");
        // A key given twice: the last one, as a later assignment would.
        let mut unique: Vec<(String, String)> = Vec::new();
        for (k, v) in resource {
            unique.retain(|(u, _)| *u != k);
            unique.push((k, v));
        }
        let service_name = given
            .service_name
            .clone()
            .or_else(|| {
                otel.first(&[VARIABLES[10]])
                    .map(|(_, v)| v.trim().to_string())
            })
            .or(from_resource)
            .filter(|s| !s.is_empty());
        Ok(Settings {
            transport: Transport {
                endpoint,
                headers,
                compression,
                ca_file,
            },
            ca_variable: from_variable.map(|(v, _)| v),
            timeout,
            service_name,
            resource: unique,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Otel {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Otel::from_vars(|name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    fn env_given() -> Given {
        Given {
            endpoint: ENV.into(),
            ..Given::default()
        }
    }

    #[test]
    fn each_setting_comes_from_fdr_then_the_traces_variable_then_the_general_one() {
        let all = vars(&[
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://t.example/x"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://g.example"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-from=traces"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-from=general,x-other=1"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1500"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "none"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "/t.pem"),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/g.pem"),
            ("OTEL_SERVICE_NAME", "from-var"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "service.name=from-attrs,deployment.environment=prod",
            ),
        ]);
        // The traces variables win over the general ones.
        let s = Settings::resolve(&env_given(), &all).unwrap();
        assert_eq!(s.transport.endpoint.url(), "https://t.example:443/x");
        assert_eq!(
            format!("{:?}", s.transport.headers),
            r#"Headers["x-from: …"]"#
        );
        assert_eq!(s.timeout, Duration::from_millis(1500));
        assert_eq!(s.transport.compression, Compression::None);
        assert_eq!(s.transport.ca_file, Some("/t.pem".into()));
        assert_eq!(s.service_name.as_deref(), Some("from-var"));
        assert_eq!(
            s.resource,
            [("deployment.environment".to_string(), "prod".to_string())]
        );
        // fdr's own options win over both.
        let given = Given {
            endpoint: "http://own:4318".into(),
            headers: Some(Headers::parse("x-from=fdr").unwrap()),
            compression: Some(Compression::Gzip),
            ca_file: Some("/own.pem".into()),
            timeout: Some(Duration::from_secs(3)),
            service_name: Some("own".into()),
        };
        let s = Settings::resolve(&given, &all).unwrap();
        assert_eq!(s.transport.endpoint.url(), "http://own:4318/v1/traces");
        assert_eq!(s.transport.headers, Headers::parse("x-from=fdr").unwrap());
        assert_eq!(s.timeout, Duration::from_secs(3));
        assert_eq!(s.transport.compression, Compression::Gzip);
        assert_eq!(s.transport.ca_file, Some("/own.pem".into()));
        assert_eq!(s.service_name.as_deref(), Some("own"));
        // The general variables alone; service.name from the attributes.
        let general = vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://g.example/base/"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", " "),
        ]);
        let s = Settings::resolve(&env_given(), &general).unwrap();
        assert_eq!(
            s.transport.endpoint.url(),
            "https://g.example:443/base/v1/traces"
        );
        assert_eq!(s.timeout, Duration::from_millis(2500));
        assert_eq!(s.transport.compression, Compression::Gzip, "empty is unset");
        assert_eq!(s.service_name.as_deref(), Some("from-attrs"));
        // Nothing: the defaults.
        let s = Settings::resolve(&env_given(), &Otel::default()).unwrap();
        assert_eq!(
            s.transport.endpoint.url(),
            "http://localhost:4318/v1/traces"
        );
        assert!(s.transport.headers.is_empty());
        assert_eq!(s.service_name, None);
    }

    #[test]
    fn bad_variables_are_named_and_secrets_not_shown() {
        for (var, value, says) in [
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "collector:4318",
                "not an http:// or https:// URL",
            ),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-api-key=ok,hunter2",
                "item 2 has no `=`",
            ),
            (
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                "bad name=hunter2",
                "not a valid header name",
            ),
            (
                "OTEL_EXPORTER_OTLP_TIMEOUT",
                "10s",
                "whole number of milliseconds",
            ),
            (
                "OTEL_EXPORTER_OTLP_COMPRESSION",
                "zstd",
                "expected gzip or none",
            ),
            ("OTEL_RESOURCE_ATTRIBUTES", "a=1,b", "item 2 has no `=`"),
        ] {
            let e = Settings::resolve(&env_given(), &vars(&[(var, value)])).unwrap_err();
            assert_eq!(e.variable, Some(var));
            let text = e.to_string();
            assert!(text.starts_with(var) && text.contains(says), "{text}");
            assert!(!text.contains("hunter2"), "{text}");
        }
    }
}
