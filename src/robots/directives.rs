//! Robots directives in pages: the `content` of `<meta name="robots">` (or of a `<meta>`
//! named for our product token) and the `X-Robots-Tag` response header, as Google and Bing
//! document them. Sans-IO: values in, [`Directives`] out; what they mean for a crawl is the
//! crawl's decision (`crawl::admission`).
//!
//! Syntax: directives are separated by commas (whitespace between them is read as a
//! separator too, as crawlers do), compared ASCII case-insensitively; `none` is `noindex,
//! nofollow`; unknown ones (`noarchive`, `max-snippet:50`, `unavailable_after: …`) are
//! ignored. A header value may begin with a user-agent and a colon (`otherbot: noindex`):
//! the directives after it, to the end of the value or the next agent prefix, are for that
//! agent only. Several headers, and several meta tags, add up.

/// Directives that carry a value after a colon, so that `name:` is not read as a user-agent.
const VALUED: &[&[u8]] = &[
    b"unavailable_after",
    b"max-snippet",
    b"max-image-preview",
    b"max-video-preview",
];

/// What a page's directives ask of crawlers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Directives {
    /// Its links are not to be followed (`nofollow`, `none`).
    pub nofollow: bool,
    /// It is not to be indexed (`noindex`, `none`).
    pub noindex: bool,
}

impl Directives {
    /// The directives of a `<meta name="robots">` (or named for our token) `content`.
    pub fn from_meta(content: &[u8]) -> Directives {
        let mut d = Directives::default();
        d.add_list(content);
        d
    }

    /// The directives of one `X-Robots-Tag` value that apply to `agent` (our product token):
    /// those without an agent prefix and those under a prefix naming `agent`.
    pub fn from_header(value: &[u8], agent: &str) -> Directives {
        let mut d = Directives::default();
        let mut ours = true;
        for item in value.split(|&b| b == b',') {
            let mut item = item.trim_ascii();
            if let Some(colon) = memchr::memchr(b':', item) {
                let name = item[..colon].trim_ascii();
                let valued = VALUED.iter().any(|v| name.eq_ignore_ascii_case(v));
                // A prefix is one token: `unavailable_after: 25 Jun 2010 15:00:00 PST` has
                // colons after spaces and is a directive.
                if !valued && !name.is_empty() && !name.iter().any(|b| b.is_ascii_whitespace()) {
                    ours = name.eq_ignore_ascii_case(agent.as_bytes());
                    item = &item[colon + 1..];
                }
            }
            if ours {
                d.add_list(item);
            }
        }
        d
    }

    /// Both: what either asks.
    pub fn and(self, other: Directives) -> Directives {
        Directives {
            nofollow: self.nofollow || other.nofollow,
            noindex: self.noindex || other.noindex,
        }
    }

    fn add_list(&mut self, list: &[u8]) {
        for token in list
            .split(|&b| b == b',' || b.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
        {
            let is = |name: &[u8]| token.eq_ignore_ascii_case(name);
            if is(b"nofollow") {
                self.nofollow = true;
            } else if is(b"noindex") {
                self.noindex = true;
            } else if is(b"none") {
                self.nofollow = true;
                self.noindex = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: Directives = Directives {
        nofollow: true,
        noindex: true,
    };
    const NOFOLLOW: Directives = Directives {
        nofollow: true,
        noindex: false,
    };
    const NOINDEX: Directives = Directives {
        nofollow: false,
        noindex: true,
    };
    const NOTHING: Directives = Directives {
        nofollow: false,
        noindex: false,
    };

    #[test]
    fn meta_content() {
        let table: &[(&[u8], Directives)] = &[
            (b"nofollow", NOFOLLOW),
            (b"NoFollow", NOFOLLOW),
            (b"noindex, nofollow", BOTH),
            (b"noindex,nofollow", BOTH),
            (b"noindex nofollow", BOTH),
            (b"none", BOTH),
            (b"NONE", BOTH),
            (b" noindex ", NOINDEX),
            (b"index, follow", NOTHING),
            (b"all", NOTHING),
            (b"noarchive, max-snippet:50", NOTHING),
            (b"nofollowx, xnoindex, no-follow", NOTHING),
            (b"", NOTHING),
            (
                b"unavailable_after: 25 Jun 2010 15:00:00 PST, noindex",
                NOINDEX,
            ),
        ];
        for (content, want) in table {
            assert_eq!(
                Directives::from_meta(content),
                *want,
                "{}",
                String::from_utf8_lossy(content)
            );
        }
    }

    #[test]
    fn header_agent_prefixes() {
        let table: &[(&[u8], Directives)] = &[
            (b"nofollow", NOFOLLOW),
            (b"noindex, nofollow", BOTH),
            (b"none", BOTH),
            (b"otherbot: noindex", NOTHING),
            (b"otherbot: noindex, nofollow", NOTHING),
            (b"spinneret: nofollow", NOFOLLOW),
            (b"Spinneret:noindex", NOINDEX),
            (b"otherbot: noindex, spinneret: nofollow", NOFOLLOW),
            (b"spinneret: noindex, otherbot: nofollow", NOINDEX),
            (b"unavailable_after: 25 Jun 2010 15:00:00 PST", NOTHING),
            (b"max-snippet: 20, nofollow", NOFOLLOW),
            (b"googlebot: none", NOTHING),
            (b"bogus", NOTHING),
        ];
        for (value, want) in table {
            assert_eq!(
                Directives::from_header(value, "spinneret"),
                *want,
                "{}",
                String::from_utf8_lossy(value)
            );
        }
    }

    #[test]
    fn directives_add_up() {
        assert_eq!(NOINDEX.and(NOFOLLOW), BOTH);
        assert_eq!(NOTHING.and(NOTHING), NOTHING);
    }
}
