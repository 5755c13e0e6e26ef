//! The headers sent with every export request (API keys, tenant ids): read from the lists that
//! `otlp_headers=`, `fdr export --otlp-headers` and `OTEL_EXPORTER_OTLP_HEADERS` hold, checked
//! to be valid HTTP, and never shown: their debug form and every message name a header, never
//! its value.

use std::fmt;

/// Headers for the collector, in order.
///
/// ```
/// use fdr_otlp::headers::Headers;
/// let h = Headers::parse("x-honeycomb-team=s3cr3t,x-tenant=core")?;
/// assert_eq!(h.names().collect::<Vec<_>>(), ["x-honeycomb-team", "x-tenant"]);
/// assert_eq!(format!("{h:?}"), r#"Headers["x-honeycomb-team: …", "x-tenant: …"]"#);
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Headers(Vec<(String, String)>);

impl Headers {
    /// Reads a `NAME=VALUE,NAME=VALUE` list (the grammar of [`fdr_format::key_values`],
    /// values percent-decoded). The error says which item is wrong and why, never a value.
    ///
    /// ```
    /// use fdr_otlp::headers::Headers;
    /// let e = Headers::parse("authorization=Bearer%20abc,x key=v").unwrap_err();
    /// assert_eq!(e, "item 2 (`x key`) is not a valid header name: use letters, digits and -");
    /// ```
    pub fn parse(text: &str) -> Result<Headers, String> {
        let items = fdr_format::key_values::parse(text).map_err(|e| e.to_string())?;
        Headers::check(items, |i, n| format!("item {} (`{n}`)", i + 1))
    }

    /// Headers from pairs (as `Config::otlp_header` gives them), checked as [`Headers::parse`]
    /// checks a list.
    ///
    /// ```
    /// use fdr_otlp::headers::Headers;
    /// assert!(Headers::new(vec![("x-api-key".into(), "k".into())]).is_ok());
    /// assert!(Headers::new(vec![("x-api-key".into(), "a\r\nb".into())]).is_err());
    /// ```
    pub fn new(pairs: Vec<(String, String)>) -> Result<Headers, String> {
        Headers::check(pairs, |_, n| format!("the header `{n}`"))
    }

    fn check(
        pairs: Vec<(String, String)>,
        name: impl Fn(usize, &str) -> String,
    ) -> Result<Headers, String> {
        for (i, (n, v)) in pairs.iter().enumerate() {
            if n.is_empty() || !n.bytes().all(is_token) {
                return Err(format!(
                    "{} is not a valid header name: use letters, digits and -",
                    name(i, n)
                ));
            }
            if v.bytes().any(|b| (b < b' ' && b != b'\t') || b == 0x7f) {
                return Err(format!(
                    "{} has a value with a line break or control character, which a header \
                     cannot carry",
                    name(i, n)
                ));
            }
        }
        Ok(Headers(pairs))
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_str())
    }

    /// Names and values, in order: for the client only.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// No header.
    ///
    /// ```
    /// assert!(fdr_otlp::headers::Headers::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Headers")?;
        f.debug_list()
            .entries(self.names().map(|n| format!("{n}: …")))
            .finish()
    }
}

/// A character of an HTTP token (RFC 9110's `tchar`).
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_headers_are_named_and_their_values_never_shown() {
        for (text, says) in [
            ("x-key=secret,secret", "item 2 has no `=`"),
            (
                "x:key=secret",
                "item 1 (`x:key`) is not a valid header name",
            ),
            (
                "x-key=sec%0Aret",
                "item 1 (`x-key`) has a value with a line break",
            ),
            ("x-key=sec%zzret", "item 1 (`x-key`) has a value with a `%`"),
        ] {
            let e = Headers::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains("sec"), "{text}: {e}");
        }
        let h = Headers::parse("authorization=Basic%20c2VjcmV0").unwrap();
        assert!(!format!("{h:?}").contains("c2VjcmV0"));
        assert_eq!(h.iter().next(), Some(("authorization", "Basic c2VjcmV0")));
    }
}
