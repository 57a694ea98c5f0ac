//! What kinds of pages a crawl fetched, for `spinneret report`: responses by MIME type and
//! fetched URLs by depth, the two distributions crawl.log does not carry. Bounded: at most
//! [`MAX_MIME_TYPES`] distinct types (later ones count as `other`, as a hostile server could
//! send a new type per page) and depths `0..=31` plus `32+`. Counting a page allocates only
//! the first time a type is seen.

/// Distinct MIME types kept; the rest count as [`OTHER`].
pub const MAX_MIME_TYPES: usize = 32;
/// Depth buckets: `0` to `31`, then `32+`.
pub const DEPTH_BUCKETS: usize = 33;
/// The type of responses over the cap, and of those without a usable `Content-Type`.
pub const OTHER: &str = "other";
/// Longest type kept as itself (a longer one is no real type).
const MAX_TYPE_LEN: usize = 64;

/// Pages by MIME type and by depth.
#[derive(Clone, Debug)]
pub struct PageShapes {
    /// (essence, lowercased; responses), in the order first seen.
    mime: Vec<(Box<str>, u64)>,
    /// Responses without a `Content-Type` essence.
    untyped: u64,
    /// Over the cap.
    other: u64,
    depth: [u64; DEPTH_BUCKETS],
}

impl Default for PageShapes {
    fn default() -> Self {
        PageShapes {
            mime: Vec::new(),
            untyped: 0,
            other: 0,
            depth: [0; DEPTH_BUCKETS],
        }
    }
}

/// The essence of a `Content-Type` value: before any `;`, trimmed; `None` if empty, too long,
/// or not a `type/subtype` of token bytes.
fn essence(content_type: &[u8]) -> Option<&[u8]> {
    let end = memchr::memchr(b';', content_type).unwrap_or(content_type.len());
    let e = content_type[..end].trim_ascii();
    let token = |b: &u8| b.is_ascii_alphanumeric() || b"!#$&^_.+-*'`|~/".contains(b);
    let slashes = e.iter().filter(|&&b| b == b'/').count();
    (!e.is_empty() && e.len() <= MAX_TYPE_LEN && slashes == 1 && e.iter().all(token)).then_some(e)
}

impl PageShapes {
    /// Counts a fetched page: its response's `Content-Type` (`None`: no response, not
    /// counted among the types) and its depth.
    pub fn add(&mut self, content_type: Option<Option<&[u8]>>, depth: u32) {
        self.depth[(depth as usize).min(DEPTH_BUCKETS - 1)] += 1;
        let Some(ct) = content_type else { return };
        let Some(e) = ct.and_then(essence) else {
            self.untyped += 1;
            return;
        };
        if let Some(slot) = self
            .mime
            .iter_mut()
            .find(|(name, _)| name.as_bytes().eq_ignore_ascii_case(e))
        {
            slot.1 += 1;
        } else if self.mime.len() < MAX_MIME_TYPES {
            // Token bytes only, so ASCII: lossless.
            let name = String::from_utf8_lossy(e).to_ascii_lowercase();
            self.mime.push((name.into_boxed_str(), 1));
        } else {
            self.other += 1;
        }
    }

    /// Responses by type, most first; `other` (over the cap or untyped) last.
    pub fn mime_types(&self) -> Vec<(&str, u64)> {
        let mut v: Vec<(&str, u64)> = self.mime.iter().map(|(n, c)| (&**n, *c)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let rest = self.other + self.untyped;
        if rest > 0 {
            v.push((OTHER, rest));
        }
        v
    }

    /// Fetched URLs by depth: `("0", n), … ("32+", n)`, the empty buckets past the deepest
    /// left out.
    pub fn depths(&self) -> Vec<(String, u64)> {
        let last = self.depth.iter().rposition(|&n| n > 0).map_or(0, |i| i + 1);
        (0..last)
            .map(|d| {
                let name = if d == DEPTH_BUCKETS - 1 {
                    format!("{d}+")
                } else {
                    d.to_string()
                };
                (name, self.depth[d])
            })
            .collect()
    }

    /// Adds another partition's.
    pub fn merge(&mut self, o: &PageShapes) {
        for (a, b) in self.depth.iter_mut().zip(o.depth) {
            *a += b;
        }
        self.untyped += o.untyped;
        self.other += o.other;
        for (name, n) in &o.mime {
            if let Some(slot) = self.mime.iter_mut().find(|(m, _)| m == name) {
                slot.1 += n;
            } else if self.mime.len() < MAX_MIME_TYPES {
                self.mime.push((name.clone(), *n));
            } else {
                self.other += n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_essences_lowercased_and_capped() {
        let mut s = PageShapes::default();
        s.add(Some(Some(b"Text/HTML; charset=utf-8")), 0);
        s.add(Some(Some(b"text/html")), 1);
        s.add(Some(Some(b" image/png ")), 1);
        s.add(Some(None), 2);
        s.add(Some(Some(b"<script>/x")), 2);
        s.add(None, 40);
        assert_eq!(
            s.mime_types(),
            [("text/html", 2), ("image/png", 1), (OTHER, 2)]
        );
        let d = s.depths();
        assert_eq!(d.len(), DEPTH_BUCKETS);
        assert_eq!((d[0].1, d[1].1, d[2].1), (1, 2, 2));
        assert_eq!(d[32], ("32+".to_string(), 1));

        let mut many = PageShapes::default();
        for i in 0..100 {
            many.add(Some(Some(format!("application/x-{i}").as_bytes())), 0);
        }
        let types = many.mime_types();
        assert_eq!(types.len(), MAX_MIME_TYPES + 1);
        assert_eq!(types.last(), Some(&(OTHER, 100 - MAX_MIME_TYPES as u64)));
        many.merge(&s);
        let total: u64 = many.mime_types().iter().map(|t| t.1).sum();
        assert_eq!(total, 105);
        assert_eq!(PageShapes::default().depths(), []);
    }
}
