//! The local time zone, read without the C library but as it would read it: `TZ` (a zone name
//! looked up in the system's zone files, a path to one, or a POSIX rule such as
//! `CET-1CEST,M3.5.0,M10.5.0/3`), else `/etc/localtime`, else UTC. Zone files are read as
//! RFC 8536 describes them, including the rule for times past their last transition.

use std::path::{Path, PathBuf};

use crate::render::dates::{civil, days_from_civil};

/// The local time zone's offset east of UTC, in seconds, at `secs` since the Unix epoch.
pub(crate) fn local_offset(secs: i64) -> i64 {
    let tz = std::env::var("TZ").ok();
    // A log can say anything: rules are applied within ±100,000 years.
    let secs = secs.clamp(-3_155_760_000_000, 3_155_760_000_000);
    zone(tz.as_deref()).map_or(0, |z| z.offset(secs))
}

/// A time zone: transitions from a zone file, and a POSIX rule for times past them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Zone {
    /// (time, offset east in seconds) of each transition, in order.
    transitions: Vec<(i64, i64)>,
    /// The offset before the first transition.
    initial: i64,
    rule: Option<Rule>,
}

impl Zone {
    /// The offset east of UTC at `secs`.
    pub(crate) fn offset(&self, secs: i64) -> i64 {
        match self.transitions.partition_point(|&(t, _)| t <= secs) {
            0 if self.transitions.is_empty() => self.rule.map_or(self.initial, |r| r.offset(secs)),
            0 => self.initial,
            n if n == self.transitions.len() => self
                .rule
                .map_or(self.transitions[n - 1].1, |r| r.offset(secs)),
            n => self.transitions[n - 1].1,
        }
    }

    /// A zone given by a POSIX `TZ` rule.
    pub(crate) fn posix(s: &str) -> Option<Zone> {
        let rule = Rule::parse(s)?;
        Some(Zone {
            transitions: Vec::new(),
            initial: rule.std,
            rule: Some(rule),
        })
    }

    /// A zone read from a TZif file's bytes.
    pub(crate) fn tzif(b: &[u8]) -> Option<Zone> {
        let header = |at: usize| -> Option<[usize; 6]> {
            if b.get(at..at + 4)? != b"TZif" {
                return None;
            }
            let mut c = [0usize; 6];
            for (i, v) in c.iter_mut().enumerate() {
                let o = at + 20 + 4 * i;
                *v = u32::from_be_bytes(b.get(o..o + 4)?.try_into().ok()?) as usize;
            }
            Some(c)
        };
        let [isut, isstd, leap, time, typ, chars] = header(0)?;
        let v1_len = time * 5 + typ * 6 + chars + leap * 8 + isstd + isut;
        let version = *b.get(4)?;
        // Version 2 and later repeat the data with 64-bit times, then a POSIX rule.
        let (at, size, leap_size) = if version >= b'2' {
            (44 + v1_len, 8usize, 12usize)
        } else {
            (0, 4, 8)
        };
        let [isut, isstd, leap, time, typ, chars] = header(at)?;
        let data = at + 44;
        let times = b.get(data..data + time * size)?;
        let idx = b.get(data + time * size..data + time * (size + 1))?;
        let types_at = data + time * (size + 1);
        let types = b.get(types_at..types_at + typ * 6)?;
        let utoff = |i: usize| -> Option<i64> {
            let t = types.get(i * 6..i * 6 + 4)?;
            Some(i64::from(i32::from_be_bytes(t.try_into().ok()?)))
        };
        let mut transitions = Vec::with_capacity(time);
        for k in 0..time {
            let t = &times[k * size..(k + 1) * size];
            let t = if size == 8 {
                i64::from_be_bytes(t.try_into().ok()?)
            } else {
                i64::from(i32::from_be_bytes(t.try_into().ok()?))
            };
            transitions.push((t, utoff(*idx.get(k)? as usize)?));
        }
        // The first standard-time type, else the first type, applies before any transition.
        let initial = (0..typ)
            .find(|&i| types.get(i * 6 + 4) == Some(&0))
            .and_then(utoff)
            .or_else(|| utoff(0))
            .unwrap_or(0);
        let end = types_at + typ * 6 + chars + leap * leap_size + isstd + isut;
        let rule = if version >= b'2' {
            b.get(end..)
                .and_then(|f| std::str::from_utf8(f).ok())
                .and_then(|f| f.trim_matches('\n').lines().next().map(str::to_string))
                .and_then(|f| Rule::parse(&f))
        } else {
            None
        };
        Some(Zone {
            transitions,
            initial,
            rule,
        })
    }
}

/// The zone for a `TZ` value (`None`: unset).
fn zone(tz: Option<&str>) -> Option<Zone> {
    let dirs = || {
        let mut d: Vec<PathBuf> = Vec::new();
        if let Some(x) = std::env::var_os("TZDIR") {
            d.push(PathBuf::from(x));
        }
        d.extend(
            [
                "/usr/share/zoneinfo",
                "/usr/lib/zoneinfo",
                "/usr/share/lib/zoneinfo",
            ]
            .iter()
            .map(PathBuf::from),
        );
        d
    };
    let read = |p: &Path| std::fs::read(p).ok().and_then(|b| Zone::tzif(&b));
    match tz {
        None => read(Path::new("/etc/localtime")),
        Some("") => Some(Zone::default()),
        Some(v) => {
            let name = v.strip_prefix(':').unwrap_or(v);
            if name.starts_with('/') {
                return read(Path::new(name));
            }
            if !name.contains("..") {
                if let Some(z) = dirs().iter().find_map(|d| read(&d.join(name))) {
                    return Some(z);
                }
            }
            Zone::posix(name)
        }
    }
}

/// A POSIX `TZ` rule: standard offset, and optionally a daylight-saving offset with the dates
/// it starts and ends. Offsets are east of UTC in seconds (the string writes them west).
#[derive(Clone, Copy, Debug)]
struct Rule {
    std: i64,
    dst: Option<(i64, Date, i64, Date, i64)>,
}

/// A date of a POSIX rule.
#[derive(Clone, Copy, Debug)]
enum Date {
    /// `Jn`: day 1 to 365, February 29th never counted.
    Julian(u32),
    /// `n`: day 0 to 365, February 29th counted.
    Zero(u32),
    /// `Mm.w.d`: day `d` (0 Sunday) of week `w` (5: the last) of month `m`.
    Month(u32, u32, u32),
}

struct Cursor<'a>(&'a [u8], usize);

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.0.get(self.1).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.1 += 1;
            true
        } else {
            false
        }
    }
    fn num(&mut self) -> Option<i64> {
        let start = self.1;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.1 += 1;
        }
        std::str::from_utf8(&self.0[start..self.1])
            .ok()?
            .parse()
            .ok()
    }
    fn name(&mut self) -> Option<()> {
        if self.eat(b'<') {
            while self.peek()? != b'>' {
                self.1 += 1;
            }
            self.1 += 1;
            return Some(());
        }
        let start = self.1;
        while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            self.1 += 1;
        }
        (self.1 - start >= 3).then_some(())
    }
    /// `[+-]hh[:mm[:ss]]` in seconds (hours at most 167, as POSIX allows).
    fn time(&mut self) -> Option<i64> {
        let neg = if self.eat(b'-') {
            true
        } else {
            self.eat(b'+');
            false
        };
        let h = self.num().filter(|h| (0..=167).contains(h))?;
        let mut t = h * 3600;
        if self.eat(b':') {
            t += self.num().filter(|m| (0..60).contains(m))? * 60;
            if self.eat(b':') {
                t += self.num().filter(|s| (0..60).contains(s))?;
            }
        }
        Some(if neg { -t } else { t })
    }
    fn date(&mut self) -> Option<(Date, i64)> {
        let d = if self.eat(b'J') {
            Date::Julian(self.num()? as u32)
        } else if self.eat(b'M') {
            let m = self.num()? as u32;
            self.eat(b'.').then_some(())?;
            let w = self.num()? as u32;
            self.eat(b'.').then_some(())?;
            Date::Month(m, w, self.num()? as u32)
        } else {
            Date::Zero(self.num()? as u32)
        };
        let t = if self.eat(b'/') { self.time()? } else { 7200 };
        Some((d, t))
    }
}

impl Rule {
    fn parse(s: &str) -> Option<Rule> {
        let mut c = Cursor(s.as_bytes(), 0);
        c.name()?;
        let std = -c.time()?;
        if c.peek().is_none() {
            return Some(Rule { std, dst: None });
        }
        c.name()?;
        let dst_off = if matches!(c.peek(), Some(b',') | None) {
            std + 3600
        } else {
            -c.time()?
        };
        let (start, start_t, end, end_t) = if c.eat(b',') {
            let (s, st) = c.date()?;
            c.eat(b',').then_some(())?;
            let (e, et) = c.date()?;
            (s, st, e, et)
        } else {
            // The US rule, POSIX's default.
            (Date::Month(3, 2, 0), 7200, Date::Month(11, 1, 0), 7200)
        };
        Some(Rule {
            std,
            dst: Some((dst_off, start, start_t, end, end_t)),
        })
    }

    fn offset(&self, secs: i64) -> i64 {
        let Some((dst, start, st, end, et)) = self.dst else {
            return self.std;
        };
        let (year, _, _) = civil((secs + self.std).div_euclid(86_400));
        // Transition instants in UTC: the start is in standard time, the end in daylight time.
        let on = day_of(start, year) * 86_400 + st - self.std;
        let off = day_of(end, year) * 86_400 + et - dst;
        let in_dst = if on < off {
            secs >= on && secs < off
        } else {
            secs >= on || secs < off
        };
        if in_dst {
            dst
        } else {
            self.std
        }
    }
}

/// Days since 1970-01-01 of a rule's date in `year`.
fn day_of(d: Date, year: i64) -> i64 {
    let jan1 = days_from_civil(year, 1, 1);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    match d {
        Date::Julian(n) => {
            let n = i64::from(n.clamp(1, 365));
            jan1 + n - 1 + i64::from(leap && n >= 60)
        }
        Date::Zero(n) => jan1 + i64::from(n.min(365)),
        Date::Month(m, w, wd) => {
            let m = m.clamp(1, 12);
            let first = days_from_civil(year, m, 1);
            // 1970-01-01 was a Thursday (4).
            let first_wd = (first + 4).rem_euclid(7);
            let mut day = first
                + (i64::from(wd) - first_wd).rem_euclid(7)
                + 7 * (i64::from(w.clamp(1, 5)) - 1);
            let next = if m == 12 {
                days_from_civil(year + 1, 1, 1)
            } else {
                days_from_civil(year, m + 1, 1)
            };
            while day >= next {
                day -= 7;
            }
            day
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::dates::describe;

    #[test]
    fn posix_rules_switch_at_the_right_instants() {
        let ny = Zone::posix("EST5EDT,M3.2.0,M11.1.0").unwrap();
        // 2024-03-10 07:00 UTC is 02:00 EST: daylight time starts.
        let start = days_from_civil(2024, 3, 10) * 86_400 + 7 * 3600;
        assert_eq!(ny.offset(start - 1), -5 * 3600);
        assert_eq!(ny.offset(start), -4 * 3600);
        // 2024-11-03 06:00 UTC is 02:00 EDT: it ends.
        let end = days_from_civil(2024, 11, 3) * 86_400 + 6 * 3600;
        assert_eq!(ny.offset(end - 1), -4 * 3600);
        assert_eq!(ny.offset(end), -5 * 3600);
        assert_eq!(Zone::posix("<+0530>-5:30").unwrap().offset(0), 19_800);
        assert!(Zone::posix("no").is_none());
        assert!(Zone::posix("AAA99999999999999999").is_none());
        assert!(Zone::posix("AAA-3BBB,M99.9.9/99999999999,J0").is_none());
        let odd = Zone::posix("AAA-3BBB,M99.9.9/2,J0").unwrap();
        let _ = odd.offset(1_700_000_000);
        for secs in [i64::MIN, -1, 0, i64::MAX] {
            let _ = ny.offset(secs.clamp(-3_155_760_000_000, 3_155_760_000_000));
            let _ = describe(secs, u32::MAX, local_offset(secs));
        }
    }

    #[test]
    fn zone_files_give_their_transitions_and_rule() {
        // Transitions in 1970 and 1980, then the Paris rule.
        let mut b = b"TZif2".to_vec();
        b.resize(20, 0);
        let counts = |b: &mut Vec<u8>, time: u32, typ: u32, chars: u32| {
            for c in [0, 0, 0, time, typ, chars] {
                b.extend_from_slice(&u32::to_be_bytes(c));
            }
        };
        counts(&mut b, 0, 1, 4);
        b.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        b.extend_from_slice(b"UTC\0");
        b.extend_from_slice(b"TZif2");
        b.resize(b.len() + 15, 0);
        counts(&mut b, 2, 2, 8);
        for t in [0i64, 315_532_800] {
            b.extend_from_slice(&t.to_be_bytes());
        }
        b.extend_from_slice(&[0, 1]);
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&3600i32.to_be_bytes());
        b.extend_from_slice(&[0, 4]);
        b.extend_from_slice(b"UTC\0CET\0");
        b.extend_from_slice(b"\nCET-1CEST,M3.5.0,M10.5.0/3\n");
        let z = Zone::tzif(&b).unwrap();
        assert_eq!(z.offset(-10), 0);
        assert_eq!(z.offset(100), 0);
        assert_eq!(z.offset(315_532_800), 3600);
        assert_eq!(z.offset(1_690_000_000), 7200);
        assert!(Zone::tzif(b"TZif").is_none());
    }

    #[test]
    fn the_system_zone_files_read_when_present() {
        if let Some(z) = zone(Some("Europe/Paris")) {
            assert_eq!(z.offset(1_700_000_000), 3600);
            assert_eq!(z.offset(1_690_000_000), 7200);
        }
        assert_eq!(zone(Some("UTC0")).unwrap().offset(5), 0);
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn offset() {
        use crate::render::timezone::Zone;
        let paris = Zone::posix("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        assert_eq!(paris.offset(1_700_000_000), 3600); // November: winter time
        assert_eq!(paris.offset(1_690_000_000), 7200); // July: summer time
        let sydney = Zone::posix("AEST-10AEDT,M10.1.0,M4.1.0/3").unwrap();
        assert_eq!(sydney.offset(1_690_000_000), 36_000); // July: winter there
        assert_eq!(sydney.offset(1_700_000_000), 39_600);
    }
}
