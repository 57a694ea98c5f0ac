//! HTTP-dates (RFC 9110 §5.6.7): written as IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`),
//! read in all three forms a recipient must accept (IMF-fixdate, RFC 850, asctime). Times are
//! whole Unix seconds, UTC: HTTP-dates have no zone, no fraction and no leap second.

use std::time::{SystemTime, UNIX_EPOCH};

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const LONG_DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
/// 9999-12-31T23:59:59Z: the last instant a four-digit year can write.
const MAX_UNIX: i64 = 253_402_300_799;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01 (the inverse of `days_from_civil`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// IMF-fixdate of `unix` seconds, clamped to 1970..=9999 (the years the format can carry and
/// these servers use).
pub fn format(unix: i64) -> String {
    let t = unix.clamp(0, MAX_UNIX);
    let (days, secs) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    // 1970-01-01 was a Thursday.
    let wd = DAYS[(days + 4).rem_euclid(7) as usize];
    format!(
        "{wd}, {d:02} {} {y:04} {:02}:{:02}:{:02} GMT",
        MONTHS[m as usize - 1],
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// A byte cursor over a date being parsed; every step consumes or fails.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn lit(&mut self, s: &str) -> Option<()> {
        self.0 = self.0.strip_prefix(s.as_bytes())?;
        Some(())
    }

    /// One of `names` (exact case, as the grammar says), as its index.
    fn name(&mut self, names: &[&str]) -> Option<usize> {
        let i = names
            .iter()
            .position(|n| self.0.starts_with(n.as_bytes()))?;
        self.0 = &self.0[names[i].len()..];
        Some(i)
    }

    fn digits(&mut self, n: usize) -> Option<u32> {
        let (head, rest) = (self.0.get(..n)?, &self.0[n..]);
        let mut v = 0u32;
        for &b in head {
            if !b.is_ascii_digit() {
                return None;
            }
            v = v * 10 + u32::from(b - b'0');
        }
        self.0 = rest;
        Some(v)
    }

    /// `HH:MM:SS` as seconds of the day (a leap second 60 is accepted, as the grammar does).
    fn time(&mut self) -> Option<i64> {
        let h = self.digits(2)?;
        self.lit(":")?;
        let m = self.digits(2)?;
        self.lit(":")?;
        let s = self.digits(2)?;
        (h < 24 && m < 60 && s <= 60).then_some(i64::from(h * 3600 + m * 60 + s))
    }

    fn end(&self) -> Option<()> {
        self.0.is_empty().then_some(())
    }
}

/// Unix seconds of a valid date and time of day.
fn unix(y: i64, m: u32, d: u32, secs: i64) -> Option<i64> {
    (d >= 1 && d <= days_in_month(y, m)).then(|| days_from_civil(y, m, d) * 86_400 + secs)
}

/// Unix seconds of an HTTP-date in any of its three forms (surrounding whitespace ignored);
/// None if it is not one. An RFC 850 two-digit year more than 50 years ahead of this year is
/// the latest such year in the past (RFC 9110 §5.6.7).
pub fn parse(value: &[u8]) -> Option<i64> {
    let v = value.trim_ascii();
    imf_fixdate(v).or_else(|| rfc850(v)).or_else(|| asctime(v))
}

fn imf_fixdate(v: &[u8]) -> Option<i64> {
    let mut c = Cursor(v);
    c.name(&DAYS)?;
    c.lit(", ")?;
    let d = c.digits(2)?;
    c.lit(" ")?;
    let m = c.name(&MONTHS)? as u32 + 1;
    c.lit(" ")?;
    let y = c.digits(4)?;
    c.lit(" ")?;
    let t = c.time()?;
    c.lit(" GMT")?;
    c.end()?;
    unix(i64::from(y), m, d, t)
}

fn rfc850(v: &[u8]) -> Option<i64> {
    let mut c = Cursor(v);
    c.name(&LONG_DAYS)?;
    c.lit(", ")?;
    let d = c.digits(2)?;
    c.lit("-")?;
    let m = c.name(&MONTHS)? as u32 + 1;
    c.lit("-")?;
    let yy = i64::from(c.digits(2)?);
    c.lit(" ")?;
    let t = c.time()?;
    c.lit(" GMT")?;
    c.end()?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let this_year = civil_from_days(now / 86_400).0;
    let century = this_year - this_year.rem_euclid(100);
    let mut y = century + yy;
    if y > this_year + 50 {
        y -= 100;
    }
    unix(y, m, d, t)
}

fn asctime(v: &[u8]) -> Option<i64> {
    let mut c = Cursor(v);
    c.name(&DAYS)?;
    c.lit(" ")?;
    let m = c.name(&MONTHS)? as u32 + 1;
    c.lit(" ")?;
    // A day of one digit is padded with a space.
    let d = if c.lit(" ").is_some() {
        c.digits(1)?
    } else {
        c.digits(2)?
    };
    c.lit(" ")?;
    let t = c.time()?;
    c.lit(" ")?;
    let y = c.digits(4)?;
    c.end()?;
    unix(i64::from(y), m, d, t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_imf_fixdate() {
        assert_eq!(format(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(format(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(format(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(format(1_704_067_200), "Mon, 01 Jan 2024 00:00:00 GMT");
        assert_eq!(format(-5), format(0));
        assert_eq!(format(i64::MAX), "Fri, 31 Dec 9999 23:59:59 GMT");
    }

    #[test]
    fn parses_the_three_forms() {
        let t = Some(784_111_777);
        assert_eq!(parse(b"Sun, 06 Nov 1994 08:49:37 GMT"), t);
        assert_eq!(parse(b"  Sun, 06 Nov 1994 08:49:37 GMT "), t);
        assert_eq!(parse(b"Sunday, 06-Nov-94 08:49:37 GMT"), t);
        assert_eq!(parse(b"Sun Nov  6 08:49:37 1994"), t);
        assert_eq!(
            parse(b"Sun Nov 16 08:49:37 1994"),
            Some(784_111_777 + 10 * 86_400)
        );
    }

    #[test]
    fn round_trips_across_years() {
        // Every 997 days from 1970 to past 2400: month ends, leap years, century rules.
        for day in (0..160_000i64).step_by(997) {
            let t = day * 86_400 + (day * 7919) % 86_400;
            assert_eq!(parse(format(t).as_bytes()), Some(t), "{}", format(t));
        }
    }

    #[test]
    fn rejects_what_is_not_a_date() {
        for bad in [
            &b""[..],
            b"yesterday",
            b"Sun, 06 Nov 1994 08:49:37 UTC",
            b"Sun, 6 Nov 1994 08:49:37 GMT",
            b"Sun, 31 Nov 1994 08:49:37 GMT",
            b"Sun, 29 Feb 1900 08:49:37 GMT",
            b"Sun, 06 Nov 1994 24:00:00 GMT",
            b"sun, 06 nov 1994 08:49:37 gmt",
            b"Sun, 06 Nov 1994 08:49:37 GMT x",
            b"Sun, 06 Nov 19a4 08:49:37 GMT",
            b"1994-11-06T08:49:37Z",
        ] {
            assert_eq!(parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(parse(b"Sun, 29 Feb 2004 00:00:00 GMT"), Some(1_078_012_800));
    }
}
