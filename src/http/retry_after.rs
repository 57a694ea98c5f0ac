//! `Retry-After` (RFC 9110 §10.2.3): how long a server that answered 429 or 503 asks us to
//! wait before the next request. Either whole seconds (`Retry-After: 120`) or an HTTP date
//! (`Retry-After: Fri, 31 Dec 1999 23:59:59 GMT`, any of the three forms of RFC 9110 §5.6.7,
//! read by [`crate::datetime::parse_http_date`]).
//!
//! Sans-IO: the wall-clock reading a date is measured from is the caller's. What the crawl
//! does with the wait (retry the URL, hold the host) is `crawl`'s business.

use std::time::{Duration, SystemTime};

use super::ResponseHead;
use crate::datetime::parse_http_date;

/// The wait `value` asks for, as of `date` (when the response was made), at most `cap`. A date
/// already past is no wait; anything that is neither a number of seconds nor a date is `None`
/// (the header is then ignored, as if absent).
pub fn parse_retry_after(value: &[u8], date: SystemTime, cap: Duration) -> Option<Duration> {
    let value = value.trim_ascii();
    if value.is_empty() {
        return None;
    }
    if value.iter().all(u8::is_ascii_digit) {
        // `delay-seconds = 1*DIGIT`: saturate rather than overflow; the cap applies anyway.
        let secs = value.iter().fold(0u64, |n, &d| {
            n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
        });
        return Some(Duration::from_secs(secs).min(cap));
    }
    let until = parse_http_date(value)?;
    Some(until.duration_since(date).unwrap_or_default().min(cap))
}

/// The wait a response's `Retry-After` asks for, at most `cap`. A date is measured from the
/// response's own `Date` (so a server whose clock is off still gets the wait it meant), or,
/// without a usable one, from `received` (our wall clock when it arrived).
pub fn retry_after(head: &ResponseHead, received: SystemTime, cap: Duration) -> Option<Duration> {
    let value = head.header("retry-after")?;
    let date = head
        .header("date")
        .and_then(parse_http_date)
        .unwrap_or(received);
    parse_retry_after(value, date, cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datetime::http_date;
    use crate::http::{Limits, Progress, ResponseDecoder};
    use std::time::UNIX_EPOCH;

    const HOUR: Duration = Duration::from_secs(3600);

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn now() -> SystemTime {
        UNIX_EPOCH + secs(1_700_000_000)
    }

    #[test]
    fn seconds_are_capped_and_garbage_is_none() {
        let p = |v: &str| parse_retry_after(v.as_bytes(), now(), HOUR);
        assert_eq!(p("3"), Some(secs(3)));
        assert_eq!(p(" 0 "), Some(Duration::ZERO));
        assert_eq!(p("7200"), Some(HOUR), "capped");
        assert_eq!(
            p("99999999999999999999999999"),
            Some(HOUR),
            "saturates, then capped"
        );
        for bad in ["", " ", "-1", "+3", "1.5", "3s", "soon", "0x10", "3 4"] {
            assert_eq!(p(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_date_is_measured_from_the_given_time_in_every_form() {
        let date = UNIX_EPOCH + secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let before = date - secs(90);
        for form in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(
                parse_retry_after(form.as_bytes(), before, HOUR),
                Some(secs(90)),
                "{form}"
            );
            // Past: retry at once. Far off: the cap.
            let after = date + secs(5);
            assert_eq!(
                parse_retry_after(form.as_bytes(), after, HOUR),
                Some(Duration::ZERO)
            );
            let long_before = date - secs(86_400);
            assert_eq!(
                parse_retry_after(form.as_bytes(), long_before, HOUR),
                Some(HOUR)
            );
        }
        assert_eq!(
            parse_retry_after(b"Sun, 31 Feb 1994 08:49:37 GMT", before, HOUR),
            None
        );
    }

    fn head(extra: &str) -> ResponseDecoder {
        let raw = format!("HTTP/1.1 429 Too Many Requests\r\n{extra}Content-Length: 0\r\n\r\n");
        let mut d = ResponseDecoder::new(Limits::default());
        d.reset(false);
        assert!(matches!(
            d.process(raw.as_bytes()),
            Ok((Progress::Complete, _))
        ));
        d
    }

    #[test]
    fn a_response_s_date_header_is_the_reference_when_it_has_one() {
        // The server's clock is an hour behind ours: its date means "in 3 s" all the same.
        let server_now = now() - HOUR;
        let text = format!(
            "Date: {}\r\nRetry-After: {}\r\n",
            http_date(server_now),
            http_date(server_now + secs(3))
        );
        let d = head(&text);
        assert_eq!(retry_after(d.head().unwrap(), now(), HOUR), Some(secs(3)));
        // Without a Date (or with a bad one) the time received is the reference.
        let text = format!(
            "Date: yesterday\r\nRetry-After: {}\r\n",
            http_date(now() + secs(7))
        );
        let d = head(&text);
        assert_eq!(retry_after(d.head().unwrap(), now(), HOUR), Some(secs(7)));
        let d = head("Retry-After: 5\r\n");
        assert_eq!(
            retry_after(d.head().unwrap(), now(), secs(2)),
            Some(secs(2))
        );
        let d = head("");
        assert_eq!(retry_after(d.head().unwrap(), now(), HOUR), None);
    }
}
