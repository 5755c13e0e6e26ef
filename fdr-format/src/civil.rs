//! Seconds since the Unix epoch as a calendar and a clock read them in UTC, proleptic
//! Gregorian, for any `i64`: the one implementation behind the dates the `fdr` command shows and
//! the `{time}` of the runtime's file names. It needs no time zone and no C library, so the
//! runtime (linked into every instrumented program) takes no date crate for it.

/// A moment in UTC: its date and its time of day.
///
/// ```
/// let t = fdr_format::civil::utc(951_782_400 + 3_723);
/// assert_eq!((t.year, t.month, t.day, t.hour, t.minute, t.second), (2000, 2, 29, 1, 2, 3));
/// let t = fdr_format::civil::utc(-1);
/// assert_eq!((t.year, t.month, t.day, t.hour, t.minute, t.second), (1969, 12, 31, 23, 59, 59));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UtcTime {
    /// The year (0 is 1 BC, as ISO 8601 counts).
    pub year: i64,
    /// 1 to 12.
    pub month: u32,
    /// 1 to 31.
    pub day: u32,
    /// 0 to 23.
    pub hour: u32,
    /// 0 to 59.
    pub minute: u32,
    /// 0 to 59 (Unix time has no leap seconds).
    pub second: u32,
}

/// The UTC date and time `secs` seconds after 1970-01-01 00:00:00 UTC.
pub fn utc(secs: i64) -> UtcTime {
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400) as u32;
    UtcTime {
        year,
        month,
        day,
        hour: s / 3600,
        minute: s / 60 % 60,
        second: s % 60,
    }
}

/// Days since 1970-01-01 to a (year, month, day) date, proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`), exact over every `i64` day count a second count divides into.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Days since 1970-01-01 of a date: the inverse, to check the days round trip.
    fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y.rem_euclid(400);
        let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
        let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    #[test]
    fn dates_round_trip_over_centuries() {
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        // Every second count has a date, without overflow.
        for secs in [i64::MIN, i64::MAX] {
            let t = utc(secs);
            assert!((1..=12).contains(&t.month) && (1..=31).contains(&t.day));
        }
        let t = utc(1_795_361_412);
        assert_eq!(
            (t.year, t.month, t.day, t.hour, t.minute, t.second),
            (2026, 11, 22, 15, 30, 12)
        );
    }
}
