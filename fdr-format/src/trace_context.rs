//! How a W3C trace context (`traceparent`) is kept in a log: as a call of the marker function
//! [`MARKER`] with four logged arguments ([`ARGS`]), entered where the program joins a trace
//! (`fdr::join_trace`) and exited when it leaves it. Calls nested in the marker's call ran
//! inside that trace: an exporter puts a window whose slow call is among them into the trace.
//!
//! ```
//! use fdr_format::trace_context::{decode, encode};
//! let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
//! let words = encode(tp).unwrap();
//! assert_eq!(words[0], 0x4bf9_2f35_77b3_4da6);
//! assert_eq!(decode(&words).as_deref(), Some(tp));
//! ```

/// The marker function's name in the function table.
pub const MARKER: &str = "fdr::join_trace";

/// The marker's logged arguments: the trace id's high and low 64 bits, the parent span id, and
/// the version (bits 8..16) with the trace flags (bits 0..8).
pub const ARGS: [&str; 4] = ["trace_id_hi", "trace_id_lo", "parent_id", "version_flags"];

fn hex(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 16 || !s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

/// The four argument words of a `traceparent`, if it is valid as the W3C Trace Context says:
/// `version-traceid-parentid-flags` in lowercase hex of 2, 32, 16 and 2 digits, surrounding
/// spaces and tabs ignored; version `ff`, an all-zero trace id or parent id are invalid; version
/// `00` has nothing after the flags, a later version may (read as version 00's fields).
///
/// ```
/// use fdr_format::trace_context::encode;
/// assert!(encode("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01").is_none());
/// assert!(encode("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none());
/// assert!(encode("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later").is_some());
/// assert!(encode("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later").is_none());
/// ```
pub fn encode(traceparent: &str) -> Option<[u64; 4]> {
    let s = traceparent.trim_matches(|c| c == ' ' || c == '\t');
    let mut parts = s.splitn(5, '-');
    let (v, t, p, f) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let rest = parts.next();
    if v.len() != 2 || t.len() != 32 || p.len() != 16 || f.len() != 2 {
        return None;
    }
    let version = hex(v)?;
    let (hi, lo) = (hex(&t[..16])?, hex(&t[16..])?);
    let parent = hex(p)?;
    let flags = hex(f)?;
    if version == 0xff || (version == 0 && rest.is_some()) {
        return None;
    }
    if (hi | lo) == 0 || parent == 0 {
        return None;
    }
    Some([hi, lo, parent, (version << 8) | flags])
}

/// The `traceparent` of four argument words (as version 00 when their version is later: the
/// fields this reader knows), if they make a valid one.
///
/// ```
/// assert_eq!(fdr_format::trace_context::decode(&[0, 0, 1, 1]), None);
/// assert_eq!(fdr_format::trace_context::decode(&[1, 2, 3, 0x0101]).unwrap(),
///            "00-00000000000000010000000000000002-0000000000000003-01");
/// ```
pub fn decode(words: &[u64]) -> Option<String> {
    let [hi, lo, parent, vf] = *words else {
        return None;
    };
    if (hi | lo) == 0 || parent == 0 || (vf >> 8) & 0xff == 0xff {
        return None;
    }
    Some(format!(
        "00-{hi:016x}{lo:016x}-{parent:016x}-{:02x}",
        vf & 0xff
    ))
}
