//! How names from a log are shown.
//!
//! A name in a log is whatever bytes the program (or whoever wrote the file) put there. Shown
//! raw, an escape sequence in a name could retitle or reprogram the terminal and a newline
//! could forge a line of a report, so every text output passes names through [`shown`] and
//! JSON through [`json_string`].

use std::borrow::Cow;
use std::fmt::Write as _;

/// Characters a terminal or text viewer acts on instead of showing: C0 and C1 controls, DEL,
/// bidirectional-text controls and the Unicode line and paragraph separators.
fn acts(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// A name from a log as text outputs show it: characters a terminal would act on are written as
/// escapes (`\n`, `\r`, `\t`, `\x1b` for the other ASCII controls, `\u{9b}` for the rest), so
/// a name can neither move the cursor, retitle the terminal nor forge a line. Other names are
/// returned as they are.
pub(crate) fn shown(s: &str) -> Cow<'_, str> {
    if !s.chars().any(acts) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if acts(c) && (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if acts(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A name from a log as a CSV field: escaped for the terminal like every text output ([`shown`],
/// so it holds no line break), then quoted if it has a comma or a quote.
pub(crate) fn csv_field(s: &str) -> String {
    let s = shown(s);
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.into_owned()
    }
}

/// `s` as a JSON string, quotes included. Nothing is lost, and nothing a terminal acts on is
/// left raw: besides what JSON requires (`"`, `\`, C0 controls), DEL, C1 controls and
/// bidirectional controls are written as `\uXXXX` too.
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if acts(c) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `s` as a JSON string ([`json_string`]) that can also stand inside an HTML `<script>`
/// element: `<`, `>` and `&` are written as `\u003c`, `\u003e` and `\u0026`, so a name holding
/// `</script>` or `<!--` cannot end the element nor start a comment. JSON reads it back exactly.
pub(crate) fn script_json_string(s: &str) -> String {
    let j = json_string(s);
    if !j.contains(['<', '>', '&']) {
        return j;
    }
    j.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn shown() {
        use crate::escape::shown;
        assert_eq!(shown("app::main"), "app::main");
        assert_eq!(shown("a\u{1b}]0;x\u{7}\nb"), "a\\x1b]0;x\\x07\\nb");
        assert_eq!(shown("\u{9b}1m\u{202e}"), "\\u{9b}1m\\u{202e}");
    }

    #[test]
    fn csv_field() {
        use crate::escape::csv_field;
        assert_eq!(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
        assert_eq!(csv_field("x\ny"), "x\\ny");
    }

    #[test]
    fn json_string() {
        use crate::escape::json_string;
        assert_eq!(json_string("a\"b\n\u{9b}"), r#""a\"b\n\u009b""#);
    }

    #[test]
    fn script_json_string() {
        use crate::escape::script_json_string;
        assert_eq!(
            script_json_string("</script><b>&"),
            r#""\u003c/script\u003e\u003cb\u003e\u0026""#
        );
        assert_eq!(script_json_string("app::main"), r#""app::main""#);
    }
}
