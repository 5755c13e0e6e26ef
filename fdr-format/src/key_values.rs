//! The one grammar for `key=value,key=value` lists, wherever fdr reads one: the OpenTelemetry
//! SDK variables `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES`, `FDR_OPTIONS`
//! `otlp_headers=`, and `fdr export --otlp-headers`. It is the W3C baggage form that the
//! OpenTelemetry specification gives those variables, without baggage properties: items
//! separated by `,`, each `KEY=VALUE` split at its first `=`, spaces around keys and values
//! ignored, empty items skipped, keys and values percent-decoded (`%2C` is a comma, `%3D` an
//! equals sign, `%20` a space).
//!
//! Lists often carry secrets (API keys in headers), so an error never quotes a value, nor an
//! item without `=` (which may be a value pasted alone): it names the item by its position and,
//! when it has one, by its key.
//!
//! ```
//! use fdr_format::key_values::parse;
//! assert_eq!(
//!     parse("x-api-key=abc%3D%3D, team = core ,")?,
//!     [("x-api-key".to_string(), "abc==".to_string()), ("team".into(), "core".into())]
//! );
//! let e = parse("x-api-key=abc,s3cr3t").unwrap_err();
//! assert_eq!(e.to_string(), "item 2 has no `=`; write KEY=VALUE, items separated by commas");
//! assert!(!e.to_string().contains("s3cr3t"));
//! # Ok::<(), fdr_format::key_values::ListError>(())
//! ```

use std::fmt;

/// What is wrong with a list: which item, and why. Its message never quotes a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListError {
    /// The item's position, from 1, counting empty items.
    pub item: usize,
    /// The item's key, when it has one that could be read.
    pub key: Option<String>,
    /// What is wrong and what to write instead.
    pub what: String,
}

impl fmt::Display for ListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(k) => write!(f, "item {} (`{k}`) {}", self.item, self.what),
            None => write!(f, "item {} {}", self.item, self.what),
        }
    }
}

impl std::error::Error for ListError {}

/// Reads `text` as a list of keys and values, in their order (a key given twice is kept twice:
/// the caller decides what that means).
///
/// ```
/// use fdr_format::key_values::parse;
/// assert!(parse("")?.is_empty());
/// assert_eq!(parse("a=b=c")?, [("a".to_string(), "b=c".to_string())]);
/// assert!(parse("=v").unwrap_err().to_string().contains("empty key"));
/// assert!(parse("k=%zz").unwrap_err().to_string().contains("`%`"));
/// # Ok::<(), fdr_format::key_values::ListError>(())
/// ```
pub fn parse(text: &str) -> Result<Vec<(String, String)>, ListError> {
    let mut out = Vec::new();
    for (i, item) in text.split(',').enumerate() {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let at = i + 1;
        let Some((key, value)) = item.split_once('=') else {
            return Err(ListError {
                item: at,
                key: None,
                what: "has no `=`; write KEY=VALUE, items separated by commas".into(),
            });
        };
        let key = decode(key.trim()).map_err(|what| ListError {
            item: at,
            key: None,
            what: format!("has a key with {what}"),
        })?;
        if key.is_empty() {
            return Err(ListError {
                item: at,
                key: None,
                what: "has an empty key; write KEY=VALUE".into(),
            });
        }
        let value = decode(value.trim()).map_err(|what| ListError {
            item: at,
            key: Some(key.clone()),
            what: format!("has a value with {what}"),
        })?;
        out.push((key, value));
    }
    Ok(out)
}

/// `text` with its `%XX` escapes decoded, or what is wrong with them.
fn decode(text: &str) -> Result<String, String> {
    if !text.contains('%') {
        return Ok(text.to_string());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| {
                std::str::from_utf8(h)
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            });
            let Some(b) = hex else {
                return Err(
                    "a `%` not followed by two hex digits (write `%25` for a `%` itself)".into(),
                );
            };
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "`%` escapes that are not UTF-8".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_read_as_the_opentelemetry_variables_write_them() {
        assert_eq!(
            parse(" a = 1 ,, b=two%20words ,c=").unwrap(),
            [
                ("a".to_string(), "1".to_string()),
                ("b".into(), "two words".into()),
                ("c".into(), String::new())
            ]
        );
        assert_eq!(
            parse("authorization=Basic%20dXNlcjpwYXNz").unwrap()[0].1,
            "Basic dXNlcjpwYXNz"
        );
        assert_eq!(parse("a=1,a=2").unwrap().len(), 2);
    }

    #[test]
    fn errors_name_the_item_and_never_its_value() {
        for (text, says) in [
            ("k=v,secret-value", "item 2 has no `=`"),
            ("k=v, =secret", "item 2 has an empty key"),
            ("key=se%Zcret", "item 1 (`key`) has a value with a `%`"),
            ("key=secret%", "item 1 (`key`) has a value with a `%`"),
            ("key=secret%ff%fe", "not UTF-8"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains("secret"), "{text}: {e}");
        }
    }
}
