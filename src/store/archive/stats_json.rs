//! `stats.json`: a flat JSON object writer, and the file written whole or not at all. Written
//! by hand because the output is a flat object of numbers and strings and the product
//! carries no serialization crate.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// Writes `json` as `DIR/stats.json`, replacing any earlier one at once (a temporary file
/// renamed): a reader, or a crash, never sees half of it. Returns the path.
pub fn write(dir: &Path, json: &str) -> io::Result<PathBuf> {
    let path = dir.join("stats.json");
    let tmp = dir.join("stats.json.tmp");
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// A flat JSON object writer: keys in insertion order, values numbers, strings or objects.
#[derive(Default)]
pub struct JsonObject {
    out: String,
}

impl JsonObject {
    pub fn new() -> JsonObject {
        JsonObject::default()
    }

    fn key(&mut self, key: &str) {
        self.out.push(if self.out.is_empty() { '{' } else { ',' });
        self.out.push_str("\n  ");
        push_json_string(&mut self.out, key);
        self.out.push_str(": ");
    }

    pub fn uint(&mut self, key: &str, v: u64) -> &mut Self {
        self.key(key);
        let _ = write!(self.out, "{v}");
        self
    }

    /// Finite floats with 3 decimals; NaN and infinities (never expected) as 0.
    pub fn float(&mut self, key: &str, v: f64) -> &mut Self {
        self.key(key);
        let v = if v.is_finite() { v } else { 0.0 };
        let _ = write!(self.out, "{v:.3}");
        self
    }

    pub fn string(&mut self, key: &str, v: &str) -> &mut Self {
        self.key(key);
        push_json_string(&mut self.out, v);
        self
    }

    /// A nested object of name → count.
    pub fn counts(&mut self, key: &str, items: &[(&str, u64)]) -> &mut Self {
        self.key(key);
        self.out.push('{');
        for (i, (name, n)) in items.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            push_json_string(&mut self.out, name);
            let _ = write!(self.out, ": {n}");
        }
        self.out.push('}');
        self
    }

    /// An array of number pairs (a curve: x, y).
    pub fn pairs(&mut self, key: &str, items: &[(u64, u64)]) -> &mut Self {
        self.key(key);
        self.out.push('[');
        for (i, (x, y)) in items.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            let _ = write!(self.out, "[{x}, {y}]");
        }
        self.out.push(']');
        self
    }

    pub fn finish(&self) -> String {
        if self.out.is_empty() {
            return "{}\n".to_string();
        }
        format!("{}\n}}\n", self.out)
    }
}

fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_escaped_and_well_formed() {
        let mut j = JsonObject::new();
        j.uint("urls", 3)
            .float("pages_per_sec", 1.5)
            .string("note", "a\"b\\c\n\u{1}")
            .counts("failed", &[("DnsTimeout", 2), ("HttpConnect", 1)]);
        assert_eq!(
            j.finish(),
            "{\n  \"urls\": 3,\n  \"pages_per_sec\": 1.500,\n  \"note\": \"a\\\"b\\\\c\\n\\u0001\",\n  \"failed\": {\"DnsTimeout\": 2, \"HttpConnect\": 1}\n}\n"
        );
        assert_eq!(JsonObject::new().finish(), "{}\n");
    }

    #[test]
    fn the_file_is_replaced_whole_and_no_temporary_is_left() {
        let tmp = crate::store::test_dir::TempDir::new("stats-json", "replace");
        let dir = tmp.0.as_path();
        let path = write(dir, "{\"a\": 1}\n").unwrap();
        assert_eq!(path, dir.join("stats.json"));
        write(dir, "{\"a\": 2}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\": 2}\n");
        let names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["stats.json"], "no temporary file left");
    }
}
