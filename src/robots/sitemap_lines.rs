//! The `Sitemap:` lines of a robots.txt (RFC 9309 §2.4, sitemaps.org "Specifying the Sitemap
//! location in your robots.txt file"): where a site says its sitemaps are. They stand outside
//! the user-agent groups and apply to every crawler; the rules' parser ([`super::Robots`])
//! skips them. What to do with them (fetch, within which bounds) is the crawl's call.

use memchr::memchr2;

use super::{limit_body, split_line, strip_bom};

/// Sitemap locations kept from one robots.txt: a site needs a few (an index names the rest);
/// past this many, the others are ignored.
pub const MAX_SITEMAP_LINES: usize = 64;
/// Longest location kept (sitemaps.org: a URL of fewer than 2,048 characters).
pub const MAX_SITEMAP_URL_BYTES: usize = 2048;

/// The sitemap locations `body` names, in file order, without duplicates: absolute `http(s)`
/// URLs of printable ASCII only (the protocol asks for a full URL), at most
/// [`MAX_SITEMAP_LINES`] of them, of the first `MAX_ROBOTS_BYTES` of the body.
pub fn sitemap_lines(body: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = strip_bom(limit_body(body));
    // Bounded: each pass consumes at least one byte of a body of at most MAX_ROBOTS_BYTES.
    while !rest.is_empty() && out.len() < MAX_SITEMAP_LINES {
        let end = memchr2(b'\r', b'\n', rest).unwrap_or(rest.len());
        let line = &rest[..end];
        rest = &rest[(end + 1).min(rest.len())..];
        let Some((key, value)) = split_line(line) else {
            continue;
        };
        if !key.eq_ignore_ascii_case(b"sitemap") || !is_location(value) {
            continue;
        }
        // Printable ASCII, checked by is_location.
        let url = String::from_utf8_lossy(value).into_owned();
        if !out.contains(&url) {
            out.push(url);
        }
    }
    out
}

fn is_location(v: &[u8]) -> bool {
    let scheme_end = if v.len() > 8 && v[..8].eq_ignore_ascii_case(b"https://") {
        8
    } else if v.len() > 7 && v[..7].eq_ignore_ascii_case(b"http://") {
        7
    } else {
        return false;
    };
    v.len() <= MAX_SITEMAP_URL_BYTES
        && v[scheme_end] != b'/'
        && v.iter().all(|&b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sitemap_line_counts_wherever_it_stands() {
        let body = b"Sitemap: https://a.test/one.xml\r\n\
            User-agent: *\n\
            Disallow: /private\n\
            sitemap:http://a.test/two.xml.gz # the news\n\
            Allow: /\n\
            SITEMAP : https://a.test/one.xml\n\
            User-agent: other\n\
            Sitemap: https://b.test/three.xml\n";
        assert_eq!(
            sitemap_lines(body),
            [
                "https://a.test/one.xml",
                "http://a.test/two.xml.gz",
                "https://b.test/three.xml"
            ]
        );
    }

    #[test]
    fn only_absolute_http_locations_are_kept() {
        let long = format!(
            "Sitemap: https://a.test/{}\n",
            "x".repeat(MAX_SITEMAP_URL_BYTES)
        );
        for bad in [
            "Sitemap: /relative.xml\n",
            "Sitemap: ftp://a.test/s.xml\n",
            "Sitemap: https:///s.xml\n",
            "Sitemap: https://a.test/a b.xml\n",
            "Sitemap: https://a.test/\u{e9}.xml\n",
            "Sitemap:\n",
            "Site-map: https://a.test/s.xml\n",
            long.as_str(),
        ] {
            assert!(sitemap_lines(bad.as_bytes()).is_empty(), "{bad:?}");
        }
    }

    #[test]
    fn at_most_the_bound_is_kept() {
        let body: String = (0..MAX_SITEMAP_LINES + 10)
            .map(|i| format!("Sitemap: https://a.test/s{i}.xml\n"))
            .collect();
        let got = sitemap_lines(body.as_bytes());
        assert_eq!(got.len(), MAX_SITEMAP_LINES);
        assert_eq!(got[0], "https://a.test/s0.xml");
    }

    #[test]
    fn a_bom_and_any_bytes_are_harmless() {
        assert_eq!(
            sitemap_lines(b"\xEF\xBB\xBFSitemap: https://a.test/s.xml"),
            ["https://a.test/s.xml"]
        );
        let junk: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        assert!(sitemap_lines(&junk).len() <= MAX_SITEMAP_LINES);
    }
}
