//! Ticks to nanoseconds, and nanoseconds to the units a person reads.

/// Converts timestamp ticks to nanoseconds at a fixed tick rate.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TickRate {
    freq: u64,
}

impl TickRate {
    /// A rate of `freq` ticks per second (`freq` > 0; the header check ensures it).
    pub(crate) fn new(freq: u64) -> TickRate {
        TickRate { freq: freq.max(1) }
    }

    /// Ticks per second.
    pub(crate) fn freq(&self) -> u64 {
        self.freq
    }

    /// Exact conversion, rounding down.
    pub(crate) fn ns(&self, ticks: u64) -> u64 {
        fdr_format::units::ticks_to_ns(ticks, self.freq)
    }
}

/// A duration in nanoseconds with three significant digits and a unit: `850 ns`, `1.25 µs`,
/// `12.5 ms`, `3.20 s`.
pub(crate) fn human(ns: u64) -> String {
    let mut s = String::new();
    write_human(&mut s, ns);
    s
}

/// The time so far of a call still running when the window was written: it ran at least
/// that long.
pub(crate) fn open_human(ns: u64) -> String {
    let mut s = String::from("\u{2265} ");
    write_human(&mut s, ns);
    s
}

/// A call's duration: [`open_human`] if it was still running when the window was written,
/// else [`human`].
pub(crate) fn lasted(ns: u64, open: bool) -> String {
    if open {
        open_human(ns)
    } else {
        human(ns)
    }
}

/// [`human`] written into `out`, without allocating.
pub(crate) fn write_human(out: &mut String, ns: u64) {
    use std::fmt::Write as _;
    if ns < 1_000 {
        let _ = write!(out, "{ns} ns");
        return;
    }
    if !fast_human(out, ns) {
        float_human(out, ns);
    }
}

/// [`write_human`] in integers; false (nothing written) at an exact tie, where the float
/// formatting's rounding decides.
fn fast_human(out: &mut String, ns: u64) -> bool {
    use std::fmt::Write as _;
    // Past 2^53 a double no longer holds every nanosecond count: leave those to the floats.
    if ns > 1 << 53 {
        return false;
    }
    let (scale, unit): (u128, &str) = if ns < 1_000_000 {
        (1_000, "µs")
    } else if ns < 1_000_000_000 {
        (1_000_000, "ms")
    } else {
        (1_000_000_000, "s")
    };
    let n = u128::from(ns);
    // Three significant digits: the thresholds of `float_human` (9.995 and 99.95).
    let (a, b) = (n * 1000, 9995 * scale);
    let (c, d) = (n * 100, 9995 * scale);
    if a == b || c == d {
        return false;
    }
    let digits: u32 = if a < b {
        2
    } else if c < d {
        1
    } else {
        0
    };
    let p = 10u128.pow(digits);
    let (q, rem) = (n * p / scale, n * p % scale);
    let up = if rem * 2 == scale {
        // A tie in decimal: the float is a little under or over it, and rounds that way.
        match float_side(ns, scale) {
            Some(over) => over,
            None => return false,
        }
    } else {
        rem * 2 > scale
    };
    let q = (q + u128::from(up)) as u64;
    let _ = match digits {
        0 => write!(out, "{q} {unit}"),
        1 => write!(out, "{}.{} {unit}", q / 10, q % 10),
        _ => write!(out, "{}.{:02} {unit}", q / 100, q % 100),
    };
    true
}

/// Whether `ns as f64 / scale as f64` is over (`Some(true)`) or under the exact quotient;
/// `None` if it is exact. `ns` is at least `scale` and below 2^53.
fn float_side(ns: u64, scale: u128) -> Option<bool> {
    let v = ns as f64 / scale as f64;
    let bits = v.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i64;
    let mantissa = u128::from((bits & ((1 << 52) - 1)) | (1 << 52));
    // v = mantissa * 2^(exponent - 1075), with exponent - 1075 in -52..=0 here.
    let shift = 1075 - exponent;
    if !(0..=60).contains(&shift) {
        return None;
    }
    let lhs = mantissa * scale;
    let rhs = u128::from(ns) << shift;
    match lhs.cmp(&rhs) {
        std::cmp::Ordering::Greater => Some(true),
        std::cmp::Ordering::Less => Some(false),
        std::cmp::Ordering::Equal => None,
    }
}

/// A share given in millionths (`10_000` is 1 %) as a percentage with at most two decimals:
/// `1%`, `0.42%`, `2.8%`; `<0.01%` for a share too small to show, `0%` for none.
pub(crate) fn percent_ppm(ppm: u32) -> String {
    if ppm == 0 {
        return "0%".into();
    }
    // Hundredths of a per cent, rounded half up.
    let hundredths = (u64::from(ppm) + 50) / 100;
    if hundredths == 0 {
        return "<0.01%".into();
    }
    let (whole, frac) = (hundredths / 100, hundredths % 100);
    match frac {
        0 => format!("{whole}%"),
        f if f % 10 == 0 => format!("{whole}.{}%", f / 10),
        f => format!("{whole}.{f:02}%"),
    }
}

/// A duration in picoseconds, with three significant digits: `18.2 ns`, `5.00 ns`, `950 ps`;
/// from a microsecond on, as [`human`] writes it.
pub(crate) fn human_ps(ps: u64) -> String {
    if ps < 1_000 {
        return format!("{ps} ps");
    }
    if ps >= 999_500 {
        // To the nearest nanosecond: `human` shows three digits of it.
        return human(ps / 1_000 + u64::from(ps % 1_000 >= 500));
    }
    let ns = ps as f64 / 1e3;
    let digits = if ns < 9.995 {
        2
    } else if ns < 99.95 {
        1
    } else {
        0
    };
    format!("{ns:.digits$} ns")
}

/// A count with three significant digits and a `k`, `M` or `G` for thousands, millions or
/// billions: `850`, `12.5 k`, `2.10 M`.
pub(crate) fn human_count(n: u64) -> String {
    if n < 1_000 {
        return n.to_string();
    }
    let (mut v, mut unit) = (n as f64 / 1e3, "k");
    for next in ["M", "G", "T", "P", "E"] {
        // Past 999.5 the three digits round to the next unit.
        if v < 999.5 {
            break;
        }
        v /= 1e3;
        unit = next;
    }
    let digits = if v < 9.995 {
        2
    } else if v < 99.95 {
        1
    } else {
        0
    };
    format!("{v:.digits$} {unit}")
}

fn float_human(out: &mut String, ns: u64) {
    use std::fmt::Write as _;
    let (v, unit) = if ns < 1_000_000 {
        (ns as f64 / 1e3, "µs")
    } else if ns < 1_000_000_000 {
        (ns as f64 / 1e6, "ms")
    } else {
        (ns as f64 / 1e9, "s")
    };
    // Three significant digits; rounding can carry into the next decade (999.6 -> 1000).
    let digits = if v < 9.995 {
        2
    } else if v < 99.95 {
        1
    } else {
        0
    };
    let _ = write!(out, "{v:.digits$} {unit}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_integer_path_writes_what_the_float_path_does() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let check = |ns: u64| {
            let (mut a, mut b) = (String::new(), String::new());
            if fast_human(&mut a, ns) {
                float_human(&mut b, ns);
                assert_eq!(a, b, "{ns}");
            }
        };
        for ns in 1_000..200_000 {
            check(ns);
        }
        for e in 3..19 {
            let base = 10u64.pow(e);
            for k in [1, 5, 9, 10, 99, 995, 999, 9995, 9999] {
                for d in 0..20 {
                    check((base / 10).saturating_mul(k).saturating_add(d));
                    check((base / 10).saturating_mul(k).saturating_sub(d));
                }
            }
        }
        for _ in 0..1_000_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check(x >> (x % 40));
        }
    }
}

#[cfg(test)]
mod tests_from_docs {
    //! The examples of this module's items, run as tests (the module is the crate's own; an
    //! example may leave a binding or an import unused, as a documentation example does).
    #![allow(unused_imports, unused_variables)]

    #[test]
    fn tick_rate() {
        use crate::units::TickRate;
        let c = TickRate::new(3_000_000_000);
        assert_eq!(c.ns(3_000), 1_000);
        assert_eq!(c.ns(u64::MAX), 6_148_914_691_236_517_205);
    }

    #[test]
    fn human() {
        use crate::units::human;
        assert_eq!(human(850), "850 ns");
        assert_eq!(human(1_250), "1.25 µs");
        assert_eq!(human(12_500_000), "12.5 ms");
        assert_eq!(human(3_200_000_000), "3.20 s");
        assert_eq!(human(200_000_000_000), "200 s");
    }

    #[test]
    fn open_human() {
        assert_eq!(crate::units::open_human(2_310_000_000), "≥ 2.31 s");
    }

    #[test]
    fn lasted() {
        use crate::units::lasted;
        assert_eq!(
            (lasted(1_500, false), lasted(1_500, true)),
            ("1.50 µs".into(), "≥ 1.50 µs".into())
        );
    }

    #[test]
    fn percent_ppm() {
        use crate::units::percent_ppm;
        let shown: Vec<String> = [10_000, 4_200, 28_000, 3_100, 5_000, 1, 49, 50, 0, 12_345]
            .into_iter()
            .map(percent_ppm)
            .collect();
        assert_eq!(
            shown,
            ["1%", "0.42%", "2.8%", "0.31%", "0.5%", "<0.01%", "<0.01%", "0.01%", "0%", "1.23%"]
        );
    }

    #[test]
    fn human_ps() {
        use crate::units::human_ps;
        assert_eq!(
            [18_200, 5_000, 950, 123_456, 999_400, 999_600, 2_500_000].map(human_ps),
            ["18.2 ns", "5.00 ns", "950 ps", "123 ns", "999 ns", "1.00 µs", "2.50 µs"]
        );
    }

    #[test]
    fn human_count() {
        use crate::units::human_count;
        assert_eq!(
            [850, 12_500, 2_100_000, 999_499, 999_500, 7_000_000_000].map(human_count),
            ["850", "12.5 k", "2.10 M", "999 k", "1.00 M", "7.00 G"]
        );
    }

    #[test]
    fn write_human() {
        let mut s = String::from("took ");
        crate::units::write_human(&mut s, 1_250);
        assert_eq!(s, "took 1.25 µs");
    }
}
