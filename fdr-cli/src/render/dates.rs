//! Wall-clock times as a person reads them: a UTC date and time, and the local time with its
//! offset from UTC (which [`timezone`](super::timezone) finds). Dates are proleptic Gregorian,
//! computed without the C library.

/// Days since 1970-01-01 to a (year, month, day) date, proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`).
pub(crate) fn civil(days: i64) -> (i64, u32, u32) {
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

/// Days since 1970-01-01 of a date.
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2023-11-14 22:13:20`, for seconds since the Unix epoch.
fn date_time(secs: i64) -> String {
    let (y, m, d) = civil(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// `+01:00`, `-05:30`, for an offset east of UTC in seconds.
fn offset(east: i64) -> String {
    let sign = if east < 0 { '-' } else { '+' };
    let a = east.abs();
    format!("UTC{sign}{:02}:{:02}", a / 3600, a / 60 % 60)
}

/// A moment as `fdr info` shows it: `2023-11-14 22:13:20.000000005 UTC (2023-11-14 23:13:20
/// local, UTC+01:00)`, given the local offset east of UTC in seconds.
pub(crate) fn describe(secs: i64, nanos: u32, east: i64) -> String {
    format!(
        "{}.{nanos:09} UTC ({} local, {})",
        date_time(secs),
        date_time(secs.saturating_add(east)),
        offset(east)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_over_centuries() {
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(date_time(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(date_time(-1), "1969-12-31 23:59:59");
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn describe() {
        use crate::render::dates::describe;
        assert_eq!(
            describe(1_700_000_000, 5, 3600),
            "2023-11-14 22:13:20.000000005 UTC (2023-11-14 23:13:20 local, UTC+01:00)"
        );
        assert_eq!(
            describe(0, 0, -5 * 3600),
            "1970-01-01 00:00:00.000000000 UTC (1969-12-31 19:00:00 local, UTC-05:00)"
        );
    }
}
