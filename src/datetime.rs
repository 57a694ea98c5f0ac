//! UTC timestamps as text: RFC 3339 for WARC headers and `crawl.log`, a compact form for file
//! names, and the parse back for reading logs; HTTP dates (`Retry-After`, a cookie's
//! `Expires`) read and written.
//!
//! No date crate: the conversions are Howard Hinnant's `civil_from_days` / `days_from_civil`
//! (proleptic Gregorian, exact for every year in range). Reading the clock is the caller's job;
//! everything here is a pure function of a `SystemTime`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds per day.
const DAY_SECS: i64 = 86_400;
/// Years we print and parse: four digits, so every output has a fixed width and sorts as text.
/// Times outside are clamped to the nearest end.
const MIN_YEAR: i64 = 0;
const MAX_YEAR: i64 = 9999;

/// Civil date and time of day, UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    millis: u32,
}

/// Whole seconds (floored) and milliseconds since the Unix epoch; works before 1970 too.
fn split_epoch(t: SystemTime) -> (i64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_millis(),
        ),
        Err(e) => {
            // Before the epoch: floor to the whole second below, so millis stay in 0..1000.
            let d = e.duration();
            let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            let ms = d.subsec_millis();
            if ms == 0 && d.subsec_nanos() == 0 {
                (-secs, 0)
            } else {
                // Sub-millisecond remainders round the millis down as well.
                let frac_ms = if d.subsec_nanos() % 1_000_000 == 0 {
                    ms
                } else {
                    ms + 1
                };
                (-secs - 1, (1000 - frac_ms) % 1000)
            }
        }
    }
}

/// Days since 1970-01-01 → (year, month, day).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month, day) → days since 1970-01-01.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 }; // [0, 11]
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

fn to_civil(t: SystemTime) -> Civil {
    let (secs, millis) = split_epoch(t);
    let min = days_from_civil(MIN_YEAR, 1, 1) * DAY_SECS;
    let max = (days_from_civil(MAX_YEAR + 1, 1, 1)) * DAY_SECS - 1;
    let (secs, millis) = if secs < min {
        (min, 0)
    } else if secs > max {
        (max, 999)
    } else {
        (secs, millis)
    };
    let days = secs.div_euclid(DAY_SECS);
    let sod = secs.rem_euclid(DAY_SECS) as u32;
    let (year, month, day) = civil_from_days(days);
    Civil {
        year,
        month,
        day,
        hour: sod / 3600,
        minute: sod / 60 % 60,
        second: sod % 60,
        millis,
    }
}

/// Appends `v` as exactly `width` decimal digits (`v` is already in range for the width).
fn push_digits(out: &mut Vec<u8>, v: u32, width: u32) {
    let mut div = 10u32.pow(width - 1);
    for _ in 0..width {
        out.push(b'0' + (v / div % 10) as u8);
        div /= 10;
    }
}

/// Appends `2026-11-21T05:54:44Z`, or `2026-11-21T05:54:44.123Z` with `millis`.
pub fn write_rfc3339(out: &mut Vec<u8>, t: SystemTime, millis: bool) {
    let c = to_civil(t);
    // Clamped to 0..=9999 by to_civil, so the cast is lossless.
    push_digits(out, c.year as u32, 4);
    out.push(b'-');
    push_digits(out, c.month, 2);
    out.push(b'-');
    push_digits(out, c.day, 2);
    out.push(b'T');
    push_digits(out, c.hour, 2);
    out.push(b':');
    push_digits(out, c.minute, 2);
    out.push(b':');
    push_digits(out, c.second, 2);
    if millis {
        out.push(b'.');
        push_digits(out, c.millis, 3);
    }
    out.push(b'Z');
}

fn ascii_string(bytes: Vec<u8>) -> String {
    // Only ASCII digits and punctuation were pushed, so this cannot fail.
    String::from_utf8(bytes).expect("timestamps are ASCII")
}

/// `2026-11-21T05:54:44Z` (WARC-Date precision).
pub fn rfc3339(t: SystemTime) -> String {
    let mut out = Vec::with_capacity(20);
    write_rfc3339(&mut out, t, false);
    ascii_string(out)
}

/// `2026-11-21T05:54:44.123Z` (crawl-log precision).
pub fn rfc3339_millis(t: SystemTime) -> String {
    let mut out = Vec::with_capacity(24);
    write_rfc3339(&mut out, t, true);
    ascii_string(out)
}

/// `20261121055444`: for file names (sorts by time, no characters a file system dislikes).
pub fn compact_timestamp(t: SystemTime) -> String {
    let mut out = Vec::with_capacity(14);
    push_compact_timestamp(&mut out, t);
    ascii_string(out)
}

/// Appends [`compact_timestamp`]'s 14 digits (an index line writes one per record).
pub fn push_compact_timestamp(out: &mut Vec<u8>, t: SystemTime) {
    let c = to_civil(t);
    push_digits(out, c.year as u32, 4);
    for v in [c.month, c.day, c.hour, c.minute, c.second] {
        push_digits(out, v, 2);
    }
}

/// Parses exactly `N` ASCII digits.
fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || b.len() > 9 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0u32, |a, &d| a * 10 + u32::from(d - b'0')))
}

/// Parses what [`write_rfc3339`] writes: `YYYY-MM-DDTHH:MM:SS[.mmm]Z`, UTC only. Anything else
/// (other offsets, leap seconds, out-of-range fields) is `None`.
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 20 && b.len() != 24 {
        return None;
    }
    let sep_ok = b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[b.len() - 1] == b'Z';
    if !sep_ok {
        return None;
    }
    let year = i64::from(digits(&b[0..4])?);
    let month = digits(&b[5..7])?;
    let day = digits(&b[8..10])?;
    let hour = digits(&b[11..13])?;
    let minute = digits(&b[14..16])?;
    let second = digits(&b[17..19])?;
    let millis = if b.len() == 24 {
        if b[19] != b'.' {
            return None;
        }
        digits(&b[20..23])?
    } else {
        0
    };
    let ms = Duration::from_millis(u64::from(millis));
    Some(from_civil(year, month, day, hour, minute, second)? + ms)
}

/// The instant of a civil UTC date and time, or `None` if the date does not exist (Feb 30) or
/// a field is out of range (leap seconds included).
pub(crate) fn from_civil(
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
) -> Option<SystemTime> {
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let secs = days_from_civil(year, month, day) * DAY_SECS
        + i64::from(hour * 3600 + minute * 60 + second);
    if secs >= 0 {
        Some(UNIX_EPOCH + Duration::from_secs(secs as u64))
    } else {
        Some(UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()))
    }
}

const MONTHS: [&[u8; 3]; 12] = [
    b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec",
];
const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];

/// RFC 6265 §5.1.1 `delimiter`: every byte that separates the tokens of a date.
fn is_date_delimiter(b: u8) -> bool {
    matches!(b, 0x09 | 0x20..=0x2f | 0x3b..=0x40 | 0x5b..=0x60 | 0x7b..=0x7e)
}

/// The value of the 1 to `max` digits that start `token`, if they are followed by a non-digit
/// or nothing (RFC 6265 §5.1.1: `1*2DIGIT ( non-digit *OCTET )`), and how many there were.
fn leading_digits(token: &[u8], min: usize, max: usize) -> Option<(u32, usize)> {
    let n = token.iter().take_while(|b| b.is_ascii_digit()).count();
    if n < min || n > max {
        return None;
    }
    Some((digits(&token[..n])?, n))
}

/// `hms-time = time-field ":" time-field ":" time-field ( non-digit *OCTET )`.
fn hms_time(token: &[u8]) -> Option<(u32, u32, u32)> {
    let (h, n) = leading_digits(token, 1, 2)?;
    let rest = token[n..].strip_prefix(b":")?;
    let (m, n) = leading_digits(rest, 1, 2)?;
    let rest = rest[n..].strip_prefix(b":")?;
    let (s, _) = leading_digits(rest, 1, 2)?;
    Some((h, m, s))
}

/// Reads an HTTP date: RFC 9110 §5.6.7's IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) and its
/// obsolete RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37
/// 1994`) forms, and what servers put in a cookie's `Expires`, with the one algorithm of RFC
/// 6265 §5.1.1 (tokens in any order; a two-digit year 70–99 is 19xx, 00–69 is 20xx). RFC 9110
/// asks recipients to be robust in reading dates; this is the robust reading browsers share.
/// `None` when a time, day, month or year is missing or out of range, or the date does not
/// exist. UTC is assumed (the zone token is ignored, as every HTTP date is GMT).
pub fn parse_http_date(text: &[u8]) -> Option<SystemTime> {
    let (mut time, mut day, mut month, mut year) = (None, None, None, None);
    for token in text
        .split(|&b| is_date_delimiter(b))
        .filter(|t| !t.is_empty())
    {
        if time.is_none() {
            if let Some(t) = hms_time(token) {
                time = Some(t);
                continue;
            }
        }
        if day.is_none() {
            if let Some((d, _)) = leading_digits(token, 1, 2) {
                day = Some(d);
                continue;
            }
        }
        if month.is_none() && token.len() >= 3 {
            let m = MONTHS
                .iter()
                .position(|m| token[..3].eq_ignore_ascii_case(&m[..]));
            if let Some(m) = m {
                month = Some(m as u32 + 1);
                continue;
            }
        }
        if year.is_none() {
            if let Some((y, _)) = leading_digits(token, 2, 4) {
                year = Some(y);
            }
        }
    }
    let year = match i64::from(year?) {
        y @ 70..=99 => y + 1900,
        y @ 0..=69 => y + 2000,
        y => y,
    };
    let (hour, minute, second) = time?;
    if year < 1601 {
        return None;
    }
    from_civil(year, month?, day?, hour, minute, second)
}

/// Appends `t` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7), whole
/// seconds, years clamped to 0000–9999.
pub fn write_http_date(out: &mut Vec<u8>, t: SystemTime) {
    let c = to_civil(t);
    let days = days_from_civil(c.year, c.month, c.day);
    out.extend_from_slice(DAYS[days.rem_euclid(7) as usize].as_bytes());
    out.extend_from_slice(b", ");
    push_digits(out, c.day, 2);
    out.push(b' ');
    let m = MONTHS[c.month as usize - 1];
    out.push(m[0].to_ascii_uppercase());
    out.extend_from_slice(&m[1..]);
    out.push(b' ');
    push_digits(out, c.year as u32, 4);
    for (sep, v) in [(b' ', c.hour), (b':', c.minute), (b':', c.second)] {
        out.push(sep);
        push_digits(out, v, 2);
    }
    out.extend_from_slice(b" GMT");
}

/// [`write_http_date`] as a `String`.
pub fn http_date(t: SystemTime) -> String {
    let mut out = Vec::with_capacity(29);
    write_http_date(&mut out, t);
    ascii_string(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(secs: i64, millis: u64) -> SystemTime {
        let base = if secs >= 0 {
            UNIX_EPOCH + Duration::from_secs(secs as u64)
        } else {
            UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
        };
        base + Duration::from_millis(millis)
    }

    #[test]
    fn known_instants() {
        // (seconds since epoch, expected) — values cross-checked with `date -u -d @N`.
        let cases: &[(i64, &str)] = &[
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"), // 2000 is a leap year (div by 400)
            (951_868_800, "2000-03-01T00:00:00Z"),
            (1_078_012_800, "2004-02-29T00:00:00Z"),
            (1_709_164_800, "2024-02-29T00:00:00Z"),
            (1_709_251_199, "2024-02-29T23:59:59Z"),
            (2_147_483_647, "2038-01-19T03:14:07Z"), // i32 overflow instant
            (2_147_483_648, "2038-01-19T03:14:08Z"),
            (4_107_456_000, "2100-02-28T00:00:00Z"),
            (4_107_542_400, "2100-03-01T00:00:00Z"), // 2100 is not a leap year
            (1_795_240_484, "2026-11-21T05:54:44Z"),
            (253_402_300_799, "9999-12-31T23:59:59Z"),
            (-1, "1969-12-31T23:59:59Z"),
            (-86_400, "1969-12-31T00:00:00Z"),
        ];
        for &(secs, want) in cases {
            assert_eq!(rfc3339(at(secs, 0)), want, "secs={secs}");
            assert_eq!(parse_rfc3339(want), Some(at(secs, 0)), "{want}");
        }
    }

    #[test]
    fn millis_and_compact() {
        let t = at(1_795_240_484, 123);
        assert_eq!(rfc3339_millis(t), "2026-11-21T05:54:44.123Z");
        assert_eq!(rfc3339(t), "2026-11-21T05:54:44Z");
        assert_eq!(compact_timestamp(t), "20261121055444");
        // Half a second before the epoch floors to the second below.
        assert_eq!(rfc3339_millis(at(-1, 500)), "1969-12-31T23:59:59.500Z");
        assert_eq!(
            rfc3339_millis(UNIX_EPOCH - Duration::from_micros(1)),
            "1969-12-31T23:59:59.999Z"
        );
        let mut out = b"x".to_vec();
        write_rfc3339(&mut out, t, true);
        assert_eq!(out, b"x2026-11-21T05:54:44.123Z");
    }

    #[test]
    fn out_of_range_is_clamped_not_garbled() {
        let far = UNIX_EPOCH + Duration::from_secs(400_000_000_000);
        assert_eq!(rfc3339_millis(far), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn parse_rejects_malformed() {
        for bad in [
            "",
            "2024-02-30T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2100-02-29T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:60:00Z",
            "2024-01-01T00:00:60Z",
            "2024-01-01T00:00:00+00:00",
            "2024-01-01 00:00:00Z",
            "2024-01-01T00:00:00.12Z",
            "2024-01-01T00:00:00,123Z",
            "+024-01-01T00:00:00Z",
            "2024-01-01T00:00:0-Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad:?}");
        }
        assert!(parse_rfc3339("2024-02-29T00:00:00Z").is_some());
        assert!(parse_rfc3339("2000-02-29T00:00:00Z").is_some());
    }

    #[test]
    fn http_dates_in_all_three_forms_and_cookie_spellings() {
        // RFC 9110 §5.6.7's example instant, in each form it lists.
        let want = Some(at(784_111_777, 0));
        for text in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            // What servers put in cookies' Expires.
            "Sun, 06-Nov-1994 08:49:37 GMT",
            "sun, 6 nov 1994 8:49:37 utc",
            "06 November 1994 08:49:37",
        ] {
            assert_eq!(parse_http_date(text.as_bytes()), want, "{text:?}");
        }
        // Two-digit years: 70–99 are 19xx, 00–69 20xx.
        let y = |s: &str| parse_http_date(s.as_bytes()).map(rfc3339);
        assert_eq!(
            y("Thu, 01-Jan-70 00:00:00 GMT").as_deref(),
            Some("1970-01-01T00:00:00Z")
        );
        assert_eq!(
            y("Sat, 01-Jan-00 00:00:00 GMT").as_deref(),
            Some("2000-01-01T00:00:00Z")
        );
        assert_eq!(
            y("Sun, 31-Dec-69 23:59:59 GMT").as_deref(),
            Some("2069-12-31T23:59:59Z")
        );
    }

    #[test]
    fn http_date_garbage_and_impossible_dates_are_none() {
        for bad in [
            "",
            "soon",
            "120",
            "Sun, 06 Nov 1994",              // no time
            "06 Nov 08:49:37",               // no year
            "Sun, 31 Feb 2024 00:00:00 GMT", // no such day
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:60 GMT", // leap second
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1600 08:49:37 GMT", // before 1601
            "Sun, 06 Foo 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_http_date(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(
            parse_http_date(b"\xff\x00 1 jan 2024 1:2:3"),
            Some(at(1_704_070_923, 0))
        );
    }

    #[test]
    fn http_date_written_as_imf_fixdate() {
        assert_eq!(
            http_date(at(784_111_777, 0)),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(http_date(at(0, 999)), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            http_date(at(951_782_400, 0)),
            "Tue, 29 Feb 2000 00:00:00 GMT"
        );
        assert_eq!(http_date(at(-1, 0)), "Wed, 31 Dec 1969 23:59:59 GMT");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        #[test]
        fn round_trips_and_sorts(a in -62_167_219_200i64..253_402_300_800, ams in 0u64..1000,
                                 b in -62_167_219_200i64..253_402_300_800, bms in 0u64..1000) {
            let (ta, tb) = (at(a, ams), at(b, bms));
            let (sa, sb) = (rfc3339_millis(ta), rfc3339_millis(tb));
            prop_assert_eq!(parse_rfc3339(&sa), Some(ta));
            prop_assert_eq!(sa.cmp(&sb), ta.cmp(&tb));
            let days = a.div_euclid(DAY_SECS);
            let (y, m, d) = civil_from_days(days);
            prop_assert_eq!(days_from_civil(y, m, d), days);
            // From 1601 on, an HTTP date reads back as the second it was written for.
            if a >= -11_644_473_600 {
                prop_assert_eq!(parse_http_date(http_date(ta).as_bytes()), Some(at(a, 0)));
            }
        }
    }
}
