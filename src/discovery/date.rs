//! The dates sitemaps and feeds carry, parsed into a `SystemTime` (UTC):
//!
//! - [`parse_w3c`]: the W3C datetime profile of ISO 8601 (sitemaps' `<lastmod>`, `dc:date`),
//!   which includes RFC 3339 (Atom's `<updated>`, `<published>`);
//! - [`parse_rfc822`]: RFC 822 as updated by RFC 2822 (RSS 2.0's `<pubDate>`).
//!
//! Both are lenient where real files are sloppy and the meaning is still clear (a space for
//! `T`, no zone meaning UTC, a missing weekday, a two-digit year), and strict where a guess
//! could mislead the schedule (an impossible day, month or hour is `None`). The calendar
//! arithmetic is [`crate::datetime`]'s.

use std::time::{Duration, SystemTime};

use crate::datetime::from_civil;

/// Longest date text looked at; a real one is under 40 bytes.
const MAX_DATE_BYTES: usize = 64;

/// Parses a W3C datetime: `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, or a date with `Thh:mm`,
/// `Thh:mm:ss` or `Thh:mm:ss.fraction` and a zone (`Z`, `+hh:mm`, `-hhmm`, `+hh`). Also
/// accepted: a space or lowercase `t` for `T`, lowercase `z`, and no zone (taken as UTC). A
/// leap second (`:60`) counts as `:59`. Missing month or day count as the first.
pub fn parse_w3c(s: &str) -> Option<SystemTime> {
    let b = s.trim().as_bytes();
    if b.len() > MAX_DATE_BYTES {
        return None;
    }
    let mut p = Cursor { b, i: 0 };
    let year = p.digits(4, 4)?;
    let (mut month, mut day) = (1, 1);
    if p.eat(b'-') {
        month = p.digits(2, 2)?;
        if p.eat(b'-') {
            day = p.digits(2, 2)?;
        }
    }
    let (mut hour, mut minute, mut second, mut nanos, mut offset) = (0, 0, 0, 0, 0);
    if p.eat(b'T') || p.eat(b't') || p.eat(b' ') {
        hour = p.digits(2, 2)?;
        if !p.eat(b':') {
            return None;
        }
        minute = p.digits(2, 2)?;
        if p.eat(b':') {
            second = p.digits(2, 2)?;
            if p.eat(b'.') || p.eat(b',') {
                nanos = p.fraction()?;
            }
        }
        offset = p.zone(true)?;
    }
    if !p.done() {
        return None;
    }
    civil_to_time(
        i64::from(year),
        month,
        day,
        (hour, minute, second),
        nanos,
        offset,
    )
}

/// Parses an RFC 822 / RFC 2822 date: `[Wkd,] D Mon YYYY hh:mm[:ss] [zone]`, the zone being
/// `UT`, `GMT`, `UTC`, `Z`, a US zone (`EST` … `PDT`), `±hhmm` or a military letter (taken as
/// UTC, as RFC 2822 says). Month names match on their first three letters in any case; a
/// two-digit year is 2000–2049 or 1950–1999, a three-digit one counts from 1900 (RFC 2822
/// §4.3); no zone means UTC.
pub fn parse_rfc822(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    if s.len() > MAX_DATE_BYTES {
        return None;
    }
    let mut words = s
        .split(|c: char| c.is_ascii_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .peekable();
    // The weekday says nothing the date does not: skipped, not checked.
    if words
        .peek()
        .is_some_and(|w| w.bytes().all(|c| c.is_ascii_alphabetic()))
    {
        words.next();
    }
    let day = small_number(words.next()?, 1, 2)?;
    let month = month_number(words.next()?)?;
    let year_text = words.next()?;
    let year = i64::from(small_number(year_text, 2, 4)?);
    let year = match year_text.len() {
        2 if year < 50 => 2000 + year,
        2 | 3 => 1900 + year,
        _ => year,
    };
    let time = words.next()?.as_bytes();
    let mut p = Cursor { b: time, i: 0 };
    let hour = p.digits(1, 2)?;
    if !p.eat(b':') {
        return None;
    }
    let minute = p.digits(2, 2)?;
    let second = if p.eat(b':') { p.digits(2, 2)? } else { 0 };
    if !p.done() {
        return None;
    }
    let offset = match words.next() {
        None => 0,
        Some(zone) => named_zone(zone).or_else(|| {
            let mut z = Cursor {
                b: zone.as_bytes(),
                i: 0,
            };
            let off = z.zone(false)?;
            z.done().then_some(off)
        })?,
    };
    if words.next().is_some() {
        return None;
    }
    civil_to_time(year, month, day, (hour, minute, second), 0, offset)
}

/// A number of `min..=max` ASCII digits, the whole word.
fn small_number(w: &str, min: usize, max: usize) -> Option<u32> {
    let mut p = Cursor {
        b: w.as_bytes(),
        i: 0,
    };
    let v = p.digits(min, max)?;
    p.done().then_some(v)
}

fn month_number(w: &str) -> Option<u32> {
    const MONTHS: [&[u8]; 12] = [
        b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov",
        b"dec",
    ];
    let b = w.as_bytes();
    if b.len() < 3 || !b.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    MONTHS
        .iter()
        .position(|m| b[..3].eq_ignore_ascii_case(m))
        .map(|i| i as u32 + 1)
}

/// RFC 822's zone names, as seconds east of UTC.
fn named_zone(w: &str) -> Option<i64> {
    const HOUR: i64 = 3600;
    let zones: [(&str, i64); 12] = [
        ("UT", 0),
        ("UTC", 0),
        ("GMT", 0),
        ("Z", 0),
        ("EST", -5 * HOUR),
        ("EDT", -4 * HOUR),
        ("CST", -6 * HOUR),
        ("CDT", -5 * HOUR),
        ("MST", -7 * HOUR),
        ("MDT", -6 * HOUR),
        ("PST", -8 * HOUR),
        ("PDT", -7 * HOUR),
    ];
    if let Some(&(_, off)) = zones.iter().find(|(n, _)| w.eq_ignore_ascii_case(n)) {
        return Some(off);
    }
    // Military zones: RFC 2822 §4.3 says their sign was given backwards in RFC 822, so they
    // mean nothing certain and count as UTC.
    let b = w.as_bytes();
    (b.len() == 1 && b[0].is_ascii_alphabetic() && !b[0].eq_ignore_ascii_case(&b'J')).then_some(0)
}

/// A byte cursor over a short date text.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn eat(&mut self, c: u8) -> bool {
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn done(&self) -> bool {
        self.i == self.b.len()
    }

    /// `min..=max` ASCII digits (as many as there are, up to `max`).
    fn digits(&mut self, min: usize, max: usize) -> Option<u32> {
        let run = self.b[self.i..]
            .iter()
            .take(max)
            .take_while(|c| c.is_ascii_digit())
            .count();
        if run < min {
            return None;
        }
        let v = self.b[self.i..self.i + run]
            .iter()
            .fold(0u32, |a, &d| a * 10 + u32::from(d - b'0'));
        self.i += run;
        Some(v)
    }

    /// A decimal fraction's digits as nanoseconds (digits past the ninth are read and dropped).
    fn fraction(&mut self) -> Option<u32> {
        let run = self.b[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if run == 0 {
            return None;
        }
        let mut nanos = 0u32;
        for k in 0..9 {
            let d = self
                .b
                .get(self.i + k)
                .filter(|_| k < run)
                .map_or(0, |&d| d - b'0');
            nanos = nanos * 10 + u32::from(d);
        }
        self.i += run;
        Some(nanos)
    }

    /// A zone as seconds east of UTC: `Z`/`z`, `±hh:mm`, `±hhmm`, `±hh`; nothing at the end
    /// is UTC when `optional`.
    fn zone(&mut self, optional: bool) -> Option<i64> {
        if self.done() {
            return optional.then_some(0);
        }
        if self.eat(b'Z') || self.eat(b'z') {
            return Some(0);
        }
        let sign = if self.eat(b'+') {
            1
        } else if self.eat(b'-') {
            -1
        } else {
            return None;
        };
        let hh = self.digits(2, 2)?;
        let colon = self.eat(b':');
        let mm = if colon || !self.done() {
            self.digits(2, 2)?
        } else {
            0
        };
        if hh > 23 || mm > 59 {
            return None;
        }
        Some(sign * i64::from(hh * 3600 + mm * 60))
    }
}

/// A civil time at a UTC offset (seconds east) to a `SystemTime`, or `None` if a field is
/// out of range. A leap second (`:60`) counts as `:59`; the date checks are `datetime`'s.
fn civil_to_time(
    year: i64,
    month: u32,
    day: u32,
    (hour, minute, second): (u32, u32, u32),
    nanos: u32,
    offset: i64,
) -> Option<SystemTime> {
    if second > 60 {
        return None;
    }
    let local = from_civil(year, month, day, hour, minute, second.min(59))?;
    let offset_by = Duration::from_secs(offset.unsigned_abs());
    let utc = if offset >= 0 {
        local.checked_sub(offset_by)?
    } else {
        local.checked_add(offset_by)?
    };
    Some(utc + Duration::from_nanos(u64::from(nanos)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn at(secs: i64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs as u64)
    }

    #[test]
    fn w3c_every_precision() {
        // 2005-01-01T00:00:00Z = 1104537600, checked with `date -u -d`.
        let jan1 = 1_104_537_600;
        for (text, want) in [
            ("2005", jan1),
            ("2005-01", jan1),
            ("2005-01-01", jan1),
            ("2005-01-01T00:00Z", jan1),
            ("2005-01-01T00:00:00Z", jan1),
            ("2005-01-01T00:00:00+00:00", jan1),
            ("2005-01-01T01:00:00+01:00", jan1),
            ("2004-12-31T19:00:00-05:00", jan1),
            ("2004-12-31T19:00:00-0500", jan1),
            ("2004-12-31T19:00-05", jan1),
            ("2005-01-01 00:00:00", jan1),
            ("  2005-01-01t00:00:00z ", jan1),
            (
                "2005-02-28T13:05:09Z",
                jan1 + 58 * 86_400 + 13 * 3600 + 5 * 60 + 9,
            ),
        ] {
            assert_eq!(parse_w3c(text), Some(at(want)), "{text}");
        }
        assert_eq!(
            parse_w3c("2005-01-01T00:00:00.25Z"),
            Some(at(jan1) + Duration::from_millis(250))
        );
        assert_eq!(
            parse_w3c("2016-12-31T23:59:60Z"),
            parse_w3c("2016-12-31T23:59:59Z")
        );
    }

    #[test]
    fn w3c_rejects_what_is_not_a_date() {
        for bad in [
            "",
            "05",
            "2005-1-01",
            "2005-13-01",
            "2005-02-29",
            "2005-01-01T24:00Z",
            "2005-01-01T10Z",
            "2005-01-01T10:00:00+25:00",
            "2005-01-01T10:00:00 +01:00",
            "2005-01-01T10:00:00.Z",
            "yesterday",
            "2005-01-01T10:00:00Zjunk",
        ] {
            assert_eq!(parse_w3c(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn rfc822_forms() {
        // Tue, 10 Jun 2003 04:00:00 GMT = 1055217600.
        let t = 1_055_217_600;
        for (text, want) in [
            ("Tue, 10 Jun 2003 04:00:00 GMT", t),
            ("10 Jun 2003 04:00:00 GMT", t),
            ("Tue, 10 Jun 2003 04:00 GMT", t),
            ("Tue, 10 June 2003 04:00:00 +0000", t),
            ("tue, 10 jun 2003 00:00:00 EDT", t),
            ("Tue, 10 Jun 2003 06:00:00 +0200", t),
            ("Tue, 10 Jun 03 04:00:00 GMT", t),
            ("Tue, 10 Jun 2003 04:00:00", t),
            ("Tue, 10 Jun 2003 04:00:00 Z", t),
            ("Tue,10 Jun 2003 4:00:00 UT", t),
            ("Tue, 10 Jun 2003 04:00:00 A", t),
        ] {
            assert_eq!(parse_rfc822(text), Some(at(want)), "{text}");
        }
        assert_eq!(
            parse_rfc822("Fri, 01 Jan 99 00:00:00 GMT"),
            parse_w3c("1999-01-01T00:00:00Z")
        );
    }

    #[test]
    fn rfc822_rejects_what_is_not_a_date() {
        for bad in [
            "",
            "Tue, 31 Jun 2003 04:00:00 GMT",
            "Tue, 10 Foo 2003 04:00:00 GMT",
            "Tue, 10 Jun 2003 25:00:00 GMT",
            "Tue, 10 Jun 2003 04:00:00 XYZ",
            "Tue, 10 Jun 2003 04:00:00 GMT extra",
            "Tue, 10 Jun 2003",
            "2003-06-10T04:00:00Z",
        ] {
            assert_eq!(parse_rfc822(bad), None, "{bad:?}");
        }
    }
}
