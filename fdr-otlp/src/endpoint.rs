//! Where an OTLP/HTTP exporter posts: an `http://` or `https://` URL read strictly, with the
//! path rules of the three places a URL comes from (fdr's own option, and the two OpenTelemetry
//! variables), and shown in messages without what may be secret in it.

use std::fmt;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::error::Error;

/// Where OTLP/HTTP exporters post traces, under the collector's base URL.
///
/// ```
/// use fdr_otlp::endpoint::{Endpoint, TRACES_PATH};
/// assert_eq!(Endpoint::parse("http://localhost:4318")?.path, TRACES_PATH);
/// # Ok::<(), fdr_otlp::Error>(())
/// ```
pub const TRACES_PATH: &str = "/v1/traces";

/// `http` or `https`.
///
/// ```
/// use fdr_otlp::endpoint::{Endpoint, Scheme};
/// assert_eq!(Endpoint::parse("https://api.example.com")?.scheme, Scheme::Https);
/// # Ok::<(), fdr_otlp::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// `http` or `https`.
    ///
    /// ```
    /// assert_eq!(fdr_otlp::endpoint::Scheme::Https.as_str(), "https");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// A parsed `http[s]://host[:port][/path][?query]` URL.
///
/// ```
/// use fdr_otlp::endpoint::Endpoint;
/// let e = Endpoint::parse("https://collector:4318")?;
/// assert_eq!((e.host.as_str(), e.port, e.path.as_str()), ("collector", 4318, "/v1/traces"));
/// assert_eq!(e.url(), "https://collector:4318/v1/traces");
/// let e = Endpoint::parse("http://[::1]:9000/otlp/v1/traces")?;
/// assert_eq!((e.host.as_str(), e.port, e.path.as_str()), ("::1", 9000, "/otlp/v1/traces"));
/// # Ok::<(), fdr_otlp::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// The host name or address (an IPv6 address without its brackets).
    pub host: String,
    /// The port (80 for http, 443 for https, when the URL has none).
    pub port: u16,
    /// The path posted to, with its query if any.
    pub path: String,
}

/// What a URL's path means.
#[derive(Clone, Copy)]
enum PathRule {
    /// fdr's own option: a URL without a path (or `/`) posts to [`TRACES_PATH`].
    Default,
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`: the base URL of every signal; traces go to its path
    /// followed by `v1/traces`.
    Base,
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the URL as it is.
    Exact,
}

impl Endpoint {
    /// Parses `url` as fdr's `otlp_endpoint` and `fdr export --otlp` take it: without a path
    /// (or with `/`), traces go to [`TRACES_PATH`]; a path is used as given. `http://` or
    /// `https://` (any case), a host (a name, an IPv4 address, or an IPv6 address in brackets),
    /// an optional port, path and query; a fragment is dropped. User info in the URL, a missing
    /// host or a bad port are errors that say so (and never repeat the URL's user info).
    ///
    /// ```
    /// use fdr_otlp::endpoint::Endpoint;
    /// assert_eq!(Endpoint::parse("HTTP://h/")?.path, "/v1/traces");
    /// assert_eq!(Endpoint::parse("http://h")?.port, 80);
    /// assert_eq!(Endpoint::parse("https://h")?.port, 443);
    /// assert!(Endpoint::parse("http://h:0").is_err());
    /// assert!(Endpoint::parse("ftp://h").is_err());
    /// # Ok::<(), fdr_otlp::Error>(())
    /// ```
    pub fn parse(url: &str) -> Result<Endpoint, Error> {
        Endpoint::parse_as(url, PathRule::Default)
    }

    /// Parses `url` as the OpenTelemetry specification reads `OTEL_EXPORTER_OTLP_ENDPOINT`: the
    /// base URL of a collector, to whose path `v1/traces` is added.
    ///
    /// ```
    /// use fdr_otlp::endpoint::Endpoint;
    /// assert_eq!(Endpoint::parse_base("https://api.example.com")?.path, "/v1/traces");
    /// assert_eq!(Endpoint::parse_base("http://h:4318/otlp/")?.path, "/otlp/v1/traces");
    /// # Ok::<(), fdr_otlp::Error>(())
    /// ```
    pub fn parse_base(url: &str) -> Result<Endpoint, Error> {
        Endpoint::parse_as(url, PathRule::Base)
    }

    /// Parses `url` as the specification reads `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the URL
    /// posted to, as it is (no path is `/`).
    ///
    /// ```
    /// use fdr_otlp::endpoint::Endpoint;
    /// assert_eq!(Endpoint::parse_exact("http://h:4318")?.path, "/");
    /// assert_eq!(Endpoint::parse_exact("http://h:4318/v1/traces")?.path, "/v1/traces");
    /// # Ok::<(), fdr_otlp::Error>(())
    /// ```
    pub fn parse_exact(url: &str) -> Result<Endpoint, Error> {
        Endpoint::parse_as(url, PathRule::Exact)
    }

    fn parse_as(url: &str, rule: PathRule) -> Result<Endpoint, Error> {
        let url = url.trim();
        let lower = url.to_ascii_lowercase();
        let (scheme, rest) = if lower.starts_with("https://") {
            (Scheme::Https, &url["https://".len()..])
        } else if lower.starts_with("http://") {
            (Scheme::Http, &url["http://".len()..])
        } else {
            return Err(Error::Url(format!(
                "{}: not an http:// or https:// URL (expected http[s]://HOST[:PORT][/PATH], \
                 e.g. http://localhost:4318)",
                shown_text(url)
            )));
        };
        let rest = rest.split('#').next().unwrap_or("");
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        let shown = shown_text(url);
        let bad = |why: &str| Error::Url(format!("{shown}: {why}"));
        if authority.contains('@') {
            return Err(bad(
                "user names and passwords in the URL are not supported: send credentials as a \
                 header (otlp_headers=, --otlp-headers or OTEL_EXPORTER_OTLP_HEADERS)",
            ));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let close = v6
                .find(']')
                .ok_or_else(|| bad("an IPv6 address without its closing ]"))?;
            let after = &v6[close + 1..];
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(bad("unexpected text after the IPv6 address")),
            };
            (&v6[..close], port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        if host.contains(':') && !authority.starts_with('[') {
            return Err(bad(
                "an IPv6 address must be in brackets: http://[::1]:4318",
            ));
        }
        let port = match port {
            None => match scheme {
                Scheme::Http => 80,
                Scheme::Https => 443,
            },
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(bad("the port is not a number from 1 to 65535")),
            },
        };
        let (path_only, query) = match path.find('?') {
            Some(i) => path.split_at(i),
            None => (path, ""),
        };
        let path_only = match rule {
            PathRule::Default if path_only.is_empty() || path_only == "/" => TRACES_PATH.into(),
            PathRule::Default | PathRule::Exact if path_only.is_empty() => "/".into(),
            PathRule::Default | PathRule::Exact => path_only.to_string(),
            PathRule::Base => format!("{}{TRACES_PATH}", path_only.trim_end_matches('/')),
        };
        let path = format!("{path_only}{query}");
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(bad("spaces or control characters in the path"));
        }
        Ok(Endpoint {
            scheme,
            host: host.to_string(),
            port,
            path,
        })
    }

    /// `host:port` (`[::1]:4318` for IPv6).
    ///
    /// ```
    /// assert_eq!(fdr_otlp::endpoint::Endpoint::parse("http://h:1/x")?.address(), "h:1");
    /// # Ok::<(), fdr_otlp::Error>(())
    /// ```
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The whole URL posted to.
    ///
    /// ```
    /// let e = fdr_otlp::endpoint::Endpoint::parse("http://h:1?k=v")?;
    /// assert_eq!(e.url(), "http://h:1/v1/traces?k=v");
    /// # Ok::<(), fdr_otlp::Error>(())
    /// ```
    pub fn url(&self) -> String {
        format!("{}://{}{}", self.scheme.as_str(), self.address(), self.path)
    }

    /// Whether a TCP connection to the endpoint can be made within `limit` (then closed at
    /// once): a cheap check before preparing a request for a collector that was just
    /// unreachable.
    ///
    /// ```
    /// let free = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    /// let e = fdr_otlp::endpoint::Endpoint::parse(&format!("http://127.0.0.1:{free}"))?;
    /// assert!(e.reachable(std::time::Duration::from_secs(1)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reachable(&self, limit: Duration) -> Result<(), Error> {
        let addrs: Vec<SocketAddr> = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| Error::Resolve {
                host: self.host.clone(),
                detail: e.to_string(),
            })?
            .collect();
        let mut last = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, limit) {
                Ok(_) => return Ok(()),
                Err(e) => last = Some(Error::from_connect(&a.to_string(), e, limit)),
            }
        }
        Err(last.unwrap_or_else(|| Error::Resolve {
            host: self.host.clone(),
            detail: "no address".into(),
        }))
    }
}

/// The URL as messages show it: a query's values hidden (some backends take an API key
/// there).
impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&shown_text(&self.url()))
    }
}

/// `url` for a message: user info and a query's values replaced by `…`.
fn shown_text(url: &str) -> String {
    let (url, query) = match url.find('?') {
        Some(i) => (&url[..i], Some(&url[i + 1..])),
        None => (url, None),
    };
    let mut out = match (url.find("://"), url.find('@')) {
        (Some(s), Some(at)) if at > s && !url[s + 3..at].contains('/') => {
            format!("{}…@{}", &url[..s + 3], &url[at + 1..])
        }
        _ => url.to_string(),
    };
    if let Some(q) = query {
        out.push('?');
        let hidden: Vec<String> = q
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) => format!("{k}=…"),
                None => kv.to_string(),
            })
            .collect();
        out.push_str(&hidden.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_or_refused_clearly() {
        let e = Endpoint::parse("http://127.0.0.1:4318").unwrap();
        assert_eq!(e.address(), "127.0.0.1:4318");
        assert_eq!(e.path, "/v1/traces");
        assert_eq!(
            Endpoint::parse("http://h:1?a=b").unwrap().path,
            "/v1/traces?a=b"
        );
        assert_eq!(Endpoint::parse("http://h:1/x#frag").unwrap().path, "/x");
        assert_eq!(
            Endpoint::parse("http://[::1]").unwrap().address(),
            "[::1]:80"
        );
        assert_eq!(
            Endpoint::parse_base("https://h/otlp?k=v").unwrap().url(),
            "https://h:443/otlp/v1/traces?k=v"
        );
        for (url, says) in [
            ("h:4318", "not an http:// or https:// URL"),
            ("http://", "no host"),
            ("http://:4318", "no host"),
            ("http://u:p@h", "user names and passwords"),
            ("http://h:99999", "the port is not a number"),
            ("http://h:x", "the port is not a number"),
            ("http://::1:80", "must be in brackets"),
            ("http://[::1", "closing ]"),
            ("http://h/a b", "spaces or control characters"),
        ] {
            let err = Endpoint::parse(url).unwrap_err();
            assert!(err.to_string().contains(says), "{url}: {err}");
            assert!(!err.is_retryable());
        }
    }

    #[test]
    fn messages_hide_user_info_and_query_values() {
        let e = Endpoint::parse("https://user:hunter2@h")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("hunter2") && e.contains("https://…@h"), "{e}");
        let e = Endpoint::parse("https://h/v1/traces?api_key=hunter2&x").unwrap();
        assert_eq!(e.to_string(), "https://h:443/v1/traces?api_key=…&x");
    }
}
