//! Conditional GET on the server side (RFC 9110 §13): whether a request's `If-None-Match` or
//! `If-Modified-Since` says the client's copy of a representation is still current, so the
//! answer is `304 Not Modified`. Shared by the servers that send validators (`testweb`,
//! `freshweb`); both call it only for GET and HEAD, the methods a 304 answers.
//!
//! The order is RFC 9110 §13.2.2's steps 3 and 4: `If-None-Match` decides when present (weak
//! comparison, `*`, lists across header lines); otherwise a valid `If-Modified-Since` at or
//! after `Last-Modified`. An invalid date is ignored (§13.1.3). `If-Match` and
//! `If-Unmodified-Since` are not evaluated: these servers' representations always exist and
//! nothing is ever written to them.

/// A strong entity tag `"<16 hex digits>"` naming `parts` (FNV-1a 64 of each part and its
/// length): the same parts give the same tag in every build and run, as a validator must.
pub fn strong_etag(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in (part.len() as u64).to_le_bytes().iter().chain(part.iter()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("\"{h:016x}\"")
}

/// `If-None-Match` or `If-Modified-Since`: the headers that make a GET conditional.
pub fn is_conditional_header(name: &str) -> bool {
    name.eq_ignore_ascii_case("if-none-match") || name.eq_ignore_ascii_case("if-modified-since")
}

/// An entity tag's opaque part, quotes included, with a weak `W/` prefix removed.
fn opaque(tag: &[u8]) -> &[u8] {
    tag.strip_prefix(b"W/").unwrap_or(tag)
}

/// Whether an `If-None-Match` field value names `etag` under the weak comparison (§8.8.3.2:
/// opaque tags equal, either or both weak), or is `*`. A malformed member ends the list: what
/// follows it is not read, so a broken header can only cost a 200, never give a false 304.
pub fn etag_matches(list: &[u8], etag: &[u8]) -> bool {
    let list = list.trim_ascii();
    if list == b"*" {
        return true;
    }
    let want = opaque(etag);
    let mut rest = list;
    // Each turn consumes at least one byte or returns.
    while !rest.is_empty() {
        let skip = rest
            .iter()
            .position(|&b| !matches!(b, b' ' | b'\t' | b','))
            .unwrap_or(rest.len());
        rest = &rest[skip..];
        if rest.is_empty() {
            break;
        }
        let tag = opaque(rest);
        if tag.first() != Some(&b'"') {
            return false;
        }
        let Some(close) = tag[1..].iter().position(|&b| b == b'"') else {
            return false;
        };
        let (this, after) = tag.split_at(close + 2);
        if this == want {
            return true;
        }
        rest = after;
    }
    false
}

/// Whether a GET or HEAD with `headers` gets `304 Not Modified` for the representation whose
/// strong `etag` (quoted, as sent in `ETag`) and `Last-Modified` (Unix seconds) are given.
/// `last_modified: None` makes `If-Modified-Since` never match: for a server whose
/// one-second dates cannot tell two versions apart (see `freshweb`).
pub fn is_not_modified(
    headers: &[httparse::Header<'_>],
    etag: &[u8],
    last_modified: Option<i64>,
) -> bool {
    let mut if_none_match = None;
    let mut since = None;
    for h in headers {
        if h.name.eq_ignore_ascii_case("if-none-match") {
            // A list field: several lines are one list, so any line's match is the list's.
            if_none_match = Some(if_none_match.unwrap_or(false) || etag_matches(h.value, etag));
        } else if h.name.eq_ignore_ascii_case("if-modified-since") && since.is_none() {
            since = crate::http_date::parse(h.value);
        }
    }
    match (if_none_match, since, last_modified) {
        (Some(matched), _, _) => matched,
        (None, Some(since), Some(lm)) => lm <= since,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h<'a>(name: &'a str, value: &'a str) -> httparse::Header<'a> {
        httparse::Header {
            name,
            value: value.as_bytes(),
        }
    }

    const TAG: &[u8] = b"\"abc\"";
    const LM: i64 = 1_704_067_200;
    const LM_DATE: &str = "Mon, 01 Jan 2024 00:00:00 GMT";

    #[test]
    fn strong_etags_are_stable_and_part_aware() {
        assert_eq!(strong_etag(&[b"a", b"bc"]), "\"ba1e1f0e0704d8ea\"");
        assert_ne!(strong_etag(&[b"a", b"bc"]), strong_etag(&[b"ab", b"c"]));
        assert_eq!(strong_etag(&[]).len(), 18);
    }

    #[test]
    fn if_none_match_lists_star_and_weak_tags() {
        for yes in [
            "\"abc\"",
            "*",
            " * ",
            "W/\"abc\"",
            "\"x\", \"abc\"",
            "\"x\",W/\"abc\"",
            "\"a,b\", \"abc\"",
            ",, \"abc\"",
        ] {
            assert!(etag_matches(yes.as_bytes(), TAG), "{yes}");
        }
        assert!(etag_matches(b"\"abc\"", b"W/\"abc\""));
        for no in [
            "",
            "\"ab\"",
            "abc",
            "\"abc",
            "\"x\", abc, \"abc\"",
            "w/\"abc\"",
            "\"abcd\"",
            "*, \"x\"",
        ] {
            assert!(!etag_matches(no.as_bytes(), TAG), "{no}");
        }
    }

    #[test]
    fn if_none_match_decides_before_if_modified_since() {
        let match_old_date = [h("If-None-Match", "\"abc\""), h("If-Modified-Since", "x")];
        assert!(is_not_modified(&match_old_date, TAG, Some(LM)));
        let other_tag_new_date = [
            h("If-Modified-Since", LM_DATE),
            h("if-none-match", "\"old\""),
        ];
        assert!(!is_not_modified(&other_tag_new_date, TAG, Some(LM)));
        let split_list = [h("If-None-Match", "\"a\""), h("If-None-Match", "\"abc\"")];
        assert!(is_not_modified(&split_list, TAG, Some(LM)));
        assert!(!is_not_modified(&[h("Host", "x")], TAG, Some(LM)));
    }

    #[test]
    fn if_modified_since_at_or_after_last_modified() {
        let at = [h("If-Modified-Since", LM_DATE)];
        assert!(is_not_modified(&at, TAG, Some(LM)));
        assert!(!is_not_modified(&at, TAG, Some(LM + 1)));
        assert!(is_not_modified(&at, TAG, Some(LM - 86_400)));
        // Not trusted, or not a date: the header is ignored.
        assert!(!is_not_modified(&at, TAG, None));
        let bad = [h("If-Modified-Since", "yesterday")];
        assert!(!is_not_modified(&bad, TAG, Some(0)));
        assert!(is_conditional_header("IF-NONE-MATCH"));
        assert!(!is_conditional_header("If-Match"));
    }
}
