//! The one grammar for durations, wherever a person writes one: `FDR_OPTIONS` values, the
//! attribute's `trigger = "50ms"`, and the command line's `--min`, `--from` and `--to`.
//!
//! A duration is a number and a unit, with nothing between them: `5us`, `1.5ms`, `2s`, `1m`.
//! The number is decimal digits with an optional fraction; the unit is `ns`, `us` (or `µs`),
//! `ms`, `s` or `m` (minutes). `0` alone needs no unit. The value is a whole number of
//! nanoseconds, computed exactly (no floating point): a fraction finer than a nanosecond
//! (`1.5ns`) is an error, not rounded. What each place does with zero is its own rule (a
//! threshold of 0 keeps every call; a trigger limit of 0 is refused where it is read).
//!
//! ```
//! use fdr_format::duration::parse;
//! assert_eq!(parse("5us"), Ok(5_000));
//! assert_eq!(parse("1.5ms"), Ok(1_500_000));
//! assert_eq!(parse("2s"), Ok(2_000_000_000));
//! assert_eq!(parse("1m"), Ok(60_000_000_000));
//! assert_eq!(parse("0"), Ok(0));
//! assert_eq!(
//!     parse("50 ms").unwrap_err().to_string(),
//!     "`50 ms` has a space in it; write `50ms`"
//! );
//! ```

use std::fmt;

/// How a duration is written, for error messages and help texts.
pub const FORM: &str = "a number and a unit (ns, us, ms, s or m), such as 5us, 1.5ms, 2s or 1m";

/// The units, largest first, in nanoseconds.
const UNITS: [(&str, u64); 5] = [
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("ns", 1),
];

/// What is wrong with a written duration. Its message quotes the text and says what to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurationError {
    text: String,
    problem: Problem,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Problem {
    Empty,
    Spaces(String),
    Negative,
    NoNumber,
    NoUnit,
    UnknownUnit(String),
    TooFine,
    TooLong,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = &self.text;
        match &self.problem {
            Problem::Empty => write!(f, "no duration given; write {FORM}"),
            Problem::Spaces(compact) => {
                write!(f, "`{text}` has a space in it; write `{compact}`")
            }
            Problem::Negative => write!(f, "`{text}` is negative; write {FORM}"),
            Problem::NoNumber => write!(f, "`{text}` is not a duration; write {FORM}"),
            Problem::NoUnit => write!(
                f,
                "`{text}` has no unit; write {FORM} (`{text}ms` for milliseconds)"
            ),
            Problem::UnknownUnit(unit) => {
                write!(f, "unknown unit `{unit}` in `{text}`; write {FORM}")
            }
            Problem::TooFine => write!(
                f,
                "`{text}` is not a whole number of nanoseconds; write {FORM}"
            ),
            Problem::TooLong => write!(
                f,
                "`{text}` is too long: a duration is at most {}s",
                u64::MAX / 1_000_000_000
            ),
        }
    }
}

impl std::error::Error for DurationError {}

/// The nanoseconds of a duration written as [`FORM`] says.
///
/// ```
/// use fdr_format::duration::parse;
/// assert_eq!(parse("250us"), Ok(250_000));
/// assert_eq!(parse("250µs"), Ok(250_000));
/// assert!(parse("12").is_err());
/// assert!(parse("-3ms").is_err());
/// assert!(parse("1.0005us").is_err()); // a fraction of a nanosecond
/// ```
pub fn parse(text: &str) -> Result<u64, DurationError> {
    let error = |problem| DurationError {
        text: text.to_string(),
        problem,
    };
    if text.trim().is_empty() {
        return Err(error(Problem::Empty));
    }
    if text.contains(char::is_whitespace) {
        let compact: String = text.split_whitespace().collect();
        return match parse(&compact) {
            Ok(_) => Err(error(Problem::Spaces(compact))),
            Err(e) => Err(DurationError {
                text: text.to_string(),
                ..e
            }),
        };
    }
    if text.starts_with('-') {
        return Err(error(Problem::Negative));
    }
    if text == "0" {
        return Ok(0);
    }
    let number_len = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(number_len);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || fraction.contains('.') || (number.ends_with('.')) {
        return Err(error(Problem::NoNumber));
    }
    let scale = match unit {
        "" => return Err(error(Problem::NoUnit)),
        "µs" | "μs" => 1_000,
        _ => match UNITS.iter().find(|(u, _)| *u == unit) {
            Some(&(_, scale)) => scale,
            None => return Err(error(Problem::UnknownUnit(unit.to_string()))),
        },
    };
    let too_long = || error(Problem::TooLong);
    let whole: u128 = whole.parse().map_err(|_| too_long())?;
    let mut nanos = whole.checked_mul(u128::from(scale)).ok_or_else(too_long)?;
    if !fraction.is_empty() {
        let digits = u32::try_from(fraction.len()).map_err(|_| too_long())?;
        let denominator = 10u128
            .checked_pow(digits)
            .ok_or_else(|| error(Problem::TooFine))?;
        let numerator: u128 = fraction.parse().map_err(|_| too_long())?;
        let scaled = numerator * u128::from(scale);
        if scaled % denominator != 0 {
            return Err(error(Problem::TooFine));
        }
        nanos = nanos
            .checked_add(scaled / denominator)
            .ok_or_else(too_long)?;
    }
    u64::try_from(nanos).map_err(|_| too_long())
}

/// `nanos` written back in the grammar, in the largest unit that holds it exactly (1.5 ms is
/// `1500us`): how defaults and limits are printed where a user may copy them.
///
/// ```
/// use fdr_format::duration::{parse, write};
/// assert_eq!(write(50_000_000), "50ms");
/// assert_eq!(write(1_500_000), "1500us");
/// assert_eq!(write(0), "0");
/// assert_eq!(parse(&write(123_456_789)), Ok(123_456_789));
/// ```
pub fn write(nanos: u64) -> String {
    if nanos == 0 {
        return "0".to_string();
    }
    let (unit, scale) = UNITS
        .iter()
        .find(|(_, scale)| nanos % scale == 0)
        .copied()
        .unwrap_or(("ns", 1));
    format!("{}{unit}", nanos / scale)
}

/// How a learned limit is written, for error messages and help texts.
pub const AUTO_FORM: &str =
    "`auto` (3 × the function's p99) or `auto:k=K` (K × its p99, K from 1 to 1000)";

/// A learned limit's multiple `k` in tenths, as descriptors and triggers keep it: `None` unless
/// `k` is from 1 to 1000.
///
/// ```
/// use fdr_format::duration::auto_k_tenths;
/// assert_eq!(auto_k_tenths(3.0), Some(30));
/// assert_eq!(auto_k_tenths(2.5), Some(25));
/// assert_eq!(auto_k_tenths(0.5), None);
/// assert_eq!(auto_k_tenths(f64::NAN), None);
/// ```
pub fn auto_k_tenths(k: f64) -> Option<u32> {
    (1.0..=1000.0)
        .contains(&k)
        .then(|| (k * 10.0).round() as u32)
}

/// Reads a learned limit, `auto` or `auto:k=K`, wherever a trigger's limit is written (the
/// attribute and `FDR_OPTIONS`): `None` if `text` is not one (then it is a duration), else its
/// `k` in tenths or what is wrong with it.
///
/// ```
/// use fdr_format::duration::parse_auto;
/// assert_eq!(parse_auto("auto"), Some(Ok(30)));
/// assert_eq!(parse_auto("auto:k=5"), Some(Ok(50)));
/// assert_eq!(parse_auto("50ms"), None);
/// assert!(parse_auto("auto:k=0").unwrap().unwrap_err().contains("from 1 to 1000"));
/// assert!(parse_auto("auto:x").unwrap().is_err());
/// ```
pub fn parse_auto(text: &str) -> Option<Result<u32, String>> {
    let rest = text.strip_prefix("auto")?;
    if rest.is_empty() {
        return Some(Ok(30));
    }
    let Some(k) = rest.strip_prefix(":k=") else {
        return Some(Err(format!(
            "`{text}` is not a learned limit; write {AUTO_FORM}"
        )));
    };
    Some(match k.parse::<f64>().ok().and_then(auto_k_tenths) {
        Some(tenths) => Ok(tenths),
        None => Err(format!(
            "`k={k}` in `{text}` is not a number from 1 to 1000; write {AUTO_FORM}"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_and_fractions_are_exact() {
        assert_eq!(parse("7ns"), Ok(7));
        assert_eq!(parse("7us"), Ok(7_000));
        assert_eq!(parse("7μs"), Ok(7_000));
        assert_eq!(parse("7ms"), Ok(7_000_000));
        assert_eq!(parse("7s"), Ok(7_000_000_000));
        assert_eq!(parse("7m"), Ok(420_000_000_000));
        assert_eq!(parse("0.5us"), Ok(500));
        assert_eq!(parse("1.25s"), Ok(1_250_000_000));
        assert_eq!(parse("0.001ms"), Ok(1_000));
        assert_eq!(parse("0ms"), Ok(0));
        assert_eq!(parse("007ms"), Ok(7_000_000));
    }

    #[test]
    fn what_is_not_a_duration_says_what_to_write() {
        let msg = |t: &str| parse(t).unwrap_err().to_string();
        assert_eq!(msg(""), format!("no duration given; write {FORM}"));
        assert_eq!(msg("5 us"), "`5 us` has a space in it; write `5us`");
        assert_eq!(msg("-3ms"), format!("`-3ms` is negative; write {FORM}"));
        assert_eq!(msg("ms"), format!("`ms` is not a duration; write {FORM}"));
        assert_eq!(
            msg(".5ms"),
            format!("`.5ms` is not a duration; write {FORM}")
        );
        assert_eq!(
            msg("1.2.3ms"),
            format!("`1.2.3ms` is not a duration; write {FORM}")
        );
        assert_eq!(
            msg("12"),
            format!("`12` has no unit; write {FORM} (`12ms` for milliseconds)")
        );
        assert_eq!(msg("3h"), format!("unknown unit `h` in `3h`; write {FORM}"));
        assert_eq!(
            msg("3 h"),
            format!("unknown unit `h` in `3 h`; write {FORM}")
        );
        assert_eq!(
            msg("1.5ns"),
            format!("`1.5ns` is not a whole number of nanoseconds; write {FORM}")
        );
        assert_eq!(
            msg("99999999999999999999s"),
            "`99999999999999999999s` is too long: a duration is at most 18446744073s"
        );
        assert_eq!(
            msg("1.0000000000000000000000000000000000000001s"),
            format!(
                "`1.0000000000000000000000000000000000000001s` is not a whole number of nanoseconds; write {FORM}"
            )
        );
    }

    #[test]
    fn written_durations_read_back() {
        for n in [1, 999, 1_000, 1_500_000, 60_000_000_000, u64::MAX] {
            assert_eq!(parse(&write(n)), Ok(n), "{n}");
        }
    }
}
