//! Field values as the 64-bit arguments of fdr's records: numbers as `#[instrument_fdr(log_args)]`
//! logs them (integers sign-extended, floats by their bits, `bool` as 0 or 1), and text and
//! `Debug` values, which do not fit in 64 bits, by a 64-bit FNV-1a hash of their text, so that
//! equal values record equal numbers (enough to find every span of one request id).

use std::fmt;

use tracing_core::field::{Field, Visit};

use crate::callsites::MAX_FIELDS;

/// The values of a span's or an event's first [`MAX_FIELDS`] fields, by field index; a field
/// without a value is 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Values {
    pub(crate) v: [u64; MAX_FIELDS],
    pub(crate) len: usize,
}

impl Values {
    /// Room for the fields of a callsite with `n` fields.
    pub(crate) fn new(n: usize) -> Values {
        Values {
            v: [0; MAX_FIELDS],
            len: n.min(MAX_FIELDS),
        }
    }

    /// The values, as arguments.
    pub(crate) fn args(&self) -> &[u64] {
        &self.v[..self.len]
    }

    fn set(&mut self, field: &Field, value: u64) {
        if let Some(v) = self.v[..self.len].get_mut(field.index()) {
            *v = value;
        }
    }
}

/// The hash text values are recorded by.
///
/// ```
/// // FNV-1a of "" is its offset basis.
/// assert_eq!(fdr_tracing::text_value(""), 0xcbf2_9ce4_8422_2325);
/// assert_ne!(fdr_tracing::text_value("a"), fdr_tracing::text_value("b"));
/// ```
pub fn text_value(text: &str) -> u64 {
    let mut h = Fnv::default();
    h.add(text.as_bytes());
    h.0
}

struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn add(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

impl fmt::Write for Fnv {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.add(s.as_bytes());
        Ok(())
    }
}

impl Visit for Values {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field, value.to_bits());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field, value as u64);
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field, value);
    }
    fn record_i128(&mut self, field: &Field, value: i128) {
        self.set(field, value as u64);
    }
    fn record_u128(&mut self, field: &Field, value: u128) {
        self.set(field, value as u64);
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field, u64::from(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field, text_value(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.index() < self.len {
            let mut h = Fnv::default();
            let _ = fmt::write(&mut h, format_args!("{value:?}"));
            self.set(field, h.0);
        }
    }
}

/// The value of a span's [`TRACEPARENT_FIELD`](crate::callsites::TRACEPARENT_FIELD), as text
/// (a `%` or `?` value is formatted).
#[derive(Default)]
pub(crate) struct TraceParent(pub Option<String>);

impl Visit for TraceParent {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == crate::callsites::TRACEPARENT_FIELD {
            self.0 = Some(value.to_string());
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == crate::callsites::TRACEPARENT_FIELD {
            self.0 = Some(format!("{value:?}"));
        }
    }
}
