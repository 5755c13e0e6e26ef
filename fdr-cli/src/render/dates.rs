//! Wall-clock times as a person reads them: a UTC date and time ([`fdr_format::civil`]), and
//! the local time with its offset from UTC. The local time zone is the C library's: `TZ` (a zone
//! name looked up in the system's zone files, a path to one, or a POSIX rule such as
//! `CET-1CEST,M3.5.0,M10.5.0/3`), else the system's zone (`/etc/localtime`), else UTC; `jiff`
//! reads it.

use fdr_format::civil::utc;
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// `2023-11-14 22:13:20`, for seconds since the Unix epoch.
fn date_time(secs: i64) -> String {
    let t = utc(secs);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// `UTC+01:00`, `UTC-05:30`, for an offset east of UTC in seconds.
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

/// The local time zone's offset east of UTC, in seconds, at `secs` since the Unix epoch.
pub(crate) fn local_offset(secs: i64) -> i64 {
    offset_at(&local_zone(), secs)
}

/// The local time zone, or UTC when there is none to be had.
fn local_zone() -> TimeZone {
    TimeZone::try_system().unwrap_or_else(|_| {
        // A POSIX rule with daylight time but not its dates (`CET-1CEST`): the C library takes
        // the US rule's, as this command always has; jiff refuses the rule.
        std::env::var("TZ")
            .ok()
            .and_then(|tz| {
                let rule = tz.strip_prefix(':').unwrap_or(&tz);
                TimeZone::posix(&format!("{rule},M3.2.0,M11.1.0")).ok()
            })
            .unwrap_or(TimeZone::UTC)
    })
}

/// `tz`'s offset at `secs`, for any second count a log can hold.
fn offset_at(tz: &TimeZone, secs: i64) -> i64 {
    // jiff's instants span the years -9999 to 9999. The Gregorian calendar repeats every 400
    // years (a whole number of weeks), and so does a zone's rule past its last transition and
    // its first offset before its first: a moment outside is moved by whole cycles to one that
    // has its offset. A log can say anything: past 100,000 years the offset is that of the
    // bound, as it always was here.
    const CYCLE: i64 = 146_097 * 86_400;
    let secs = secs.clamp(-3_155_760_000_000, 3_155_760_000_000);
    let (min, max) = (Timestamp::MIN.as_second(), Timestamp::MAX.as_second());
    let inside = if secs > max {
        secs - ((secs - max) / CYCLE + 1) * CYCLE
    } else if secs < min {
        secs + ((min - secs) / CYCLE + 1) * CYCLE
    } else {
        secs
    };
    Timestamp::from_second(inside).map_or(0, |t| i64::from(tz.to_offset(t).seconds()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_and_local() {
        assert_eq!(date_time(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(date_time(-1), "1969-12-31 23:59:59");
        assert_eq!(
            describe(1_700_000_000, 5, 3600),
            "2023-11-14 22:13:20.000000005 UTC (2023-11-14 23:13:20 local, UTC+01:00)"
        );
        assert_eq!(
            describe(0, 0, -5 * 3600),
            "1970-01-01 00:00:00.000000000 UTC (1969-12-31 19:00:00 local, UTC-05:00)"
        );
        assert_eq!(offset(19_800), "UTC+05:30");
    }

    #[test]
    fn posix_rules_switch_at_the_right_instants() {
        let ny = TimeZone::posix("EST5EDT,M3.2.0,M11.1.0").unwrap();
        // 2024-03-10 07:00 UTC is 02:00 EST: daylight time starts.
        let start = 1_710_054_000;
        assert_eq!(offset_at(&ny, start - 1), -5 * 3600);
        assert_eq!(offset_at(&ny, start), -4 * 3600);
        // 2024-11-03 06:00 UTC is 02:00 EDT: it ends.
        let end = 1_730_613_600;
        assert_eq!(offset_at(&ny, end - 1), -4 * 3600);
        assert_eq!(offset_at(&ny, end), -5 * 3600);
        let paris = TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        assert_eq!(offset_at(&paris, 1_700_000_000), 3600); // November: winter time
        assert_eq!(offset_at(&paris, 1_690_000_000), 7200); // July: summer time
        let sydney = TimeZone::posix("AEST-10AEDT,M10.1.0,M4.1.0/3").unwrap();
        assert_eq!(offset_at(&sydney, 1_690_000_000), 36_000); // July: winter there
        assert_eq!(offset_at(&sydney, 1_700_000_000), 39_600);
    }

    #[test]
    fn moments_past_jiffs_years_take_their_offset_400_years_on() {
        let paris = TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        let cycle = 146_097 * 86_400;
        // July 2023 and July 2023 + 400 * k: summer time in every cycle, both ways.
        for k in [30, 100, 249, -30, -100, -249] {
            assert_eq!(offset_at(&paris, 1_690_000_000 + k * cycle), 7200, "{k}");
            assert_eq!(offset_at(&paris, 1_700_000_000 + k * cycle), 3600, "{k}");
        }
        for secs in [i64::MIN, -1, 0, i64::MAX] {
            assert!(offset_at(&paris, secs).abs() <= 7200);
            let _ = describe(secs, u32::MAX, local_offset(secs));
        }
    }
}
