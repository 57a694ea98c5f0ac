//! A response's header fields, kept in one buffer: names lowercased, values with obs-fold
//! line breaks replaced by spaces, in the order received. One allocation pair for the whole
//! head (reused from response to response by the decoder), not a `String` and a `Vec` per
//! field.

/// Header fields of one response head.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers {
    /// Each field's name then value, back to back.
    bytes: Vec<u8>,
    /// Per field: where its name starts, where its value starts, where its value ends.
    fields: Vec<[u32; 3]>,
}

impl Headers {
    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Field `i`: (lowercased name, value).
    pub fn get(&self, i: usize) -> Option<(&str, &[u8])> {
        self.fields.get(i).map(|&f| self.field(f))
    }

    /// The fields in the order received.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.fields.iter().map(|&f| self.field(f))
    }

    fn field(&self, [name, value, end]: [u32; 3]) -> (&str, &[u8]) {
        let name = &self.bytes[name as usize..value as usize];
        // Names are HTTP tokens (httparse checks), so ASCII; nothing else is ever stored.
        let name = std::str::from_utf8(name).unwrap_or_default();
        (name, &self.bytes[value as usize..end as usize])
    }

    /// Forgets the fields, keeping the buffers.
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.fields.clear();
    }

    /// Forgets the fields and keeps at most `bytes` of buffer (and fields to match), so one
    /// huge head does not pin its memory to a kept-alive connection.
    pub(super) fn clear_and_shrink(&mut self, bytes: usize) {
        self.clear();
        self.bytes.shrink_to(bytes);
        self.fields.shrink_to(bytes / size_of::<[u32; 3]>());
    }

    /// Appends a field — `name` lowercased, CR and LF in `value` (obs-fold) made spaces —
    /// and returns it as stored. The head is bounded (`max_head_bytes`, far below 4 GiB), so
    /// offsets fit `u32`.
    pub(super) fn push(&mut self, name: &str, value: &[u8]) -> (&str, &[u8]) {
        let start = self.bytes.len() as u32;
        self.bytes
            .extend(name.bytes().map(|b| b.to_ascii_lowercase()));
        let value_start = self.bytes.len() as u32;
        self.bytes.extend(value.iter().map(|&b| match b {
            b'\r' | b'\n' => b' ',
            b => b,
        }));
        let field = [start, value_start, self.bytes.len() as u32];
        self.fields.push(field);
        self.field(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_their_order_lowercased_names_and_unfolded_values() {
        let mut h = Headers::default();
        h.push("Content-Type", b"text/html");
        h.push("X-Long", b"a\r\n\tb");
        assert_eq!(
            h.push("content-Type", b"second"),
            ("content-type", &b"second"[..])
        );
        assert_eq!(h.len(), 3);
        assert_eq!(h.get(0), Some(("content-type", &b"text/html"[..])));
        assert_eq!(h.get(1), Some(("x-long", &b"a  \tb"[..])));
        assert_eq!(h.get(2), Some(("content-type", &b"second"[..])));
        assert_eq!(h.get(3), None);
        let names: Vec<&str> = h.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["content-type", "x-long", "content-type"]);
        h.clear_and_shrink(0);
        assert!(h.is_empty());
        assert_eq!(h.bytes.capacity(), 0);
        h.push("A", b"");
        assert_eq!(h.get(0), Some(("a", &b""[..])));
    }
}
