//! Counters: what the event loop counts as it runs, and the `stats.json` / stderr renderings.
//!
//! The event loop bumps [`LoopStats`] in place (plain integers, no atomics: one thread);
//! the command layer turns them into the periodic stderr line and the final `stats.json`.
//! JSON is written by hand ([`JsonObject`]) because the output is a flat object of numbers
//! and strings and the product carries no serialization crate.

use std::fmt::Write as _;

use crate::ReturnCode;

/// Fetch outcomes counted by code.
#[derive(Clone, Debug)]
pub struct Outcomes {
    counts: Vec<u64>,
}

impl Default for Outcomes {
    fn default() -> Self {
        Outcomes {
            counts: vec![0; ReturnCode::ALL.len()],
        }
    }
}

impl Outcomes {
    pub fn add(&mut self, code: ReturnCode) {
        // Invariant: ALL lists every variant in declaration order, so `code as usize` indexes it.
        self.counts[code as usize] += 1;
    }

    pub fn get(&self, code: ReturnCode) -> u64 {
        self.counts[code as usize]
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn failed(&self) -> u64 {
        self.total() - self.get(ReturnCode::Success)
    }

    /// Non-zero failure counts, most frequent first.
    pub fn failures(&self) -> Vec<(ReturnCode, u64)> {
        let mut v: Vec<(ReturnCode, u64)> = ReturnCode::ALL
            .iter()
            .map(|&c| (c, self.get(c)))
            .filter(|&(c, n)| n > 0 && c != ReturnCode::Success)
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }
}

/// What the event loop counts.
#[derive(Clone, Debug, Default)]
pub struct LoopStats {
    pub issued: u64,
    pub outcomes: Outcomes,
    /// Response bytes received (raw, as on the wire after TLS).
    pub bytes_received: u64,
    pub live: usize,
    pub peak_live: usize,
    pub waiting_dns: usize,
    pub waiting_http: usize,
    pub conns_open: usize,
    pub conns_opened: u64,
    pub conns_reused: u64,
    /// Fetches retried on a fresh connection after a reused one turned out to be closed.
    pub stale_retries: u64,
    pub dns_queries_sent: u64,
    pub dns_cache_hits: u64,
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

/// CPU time (user + system) used by this process so far, and its peak resident set in bytes.
pub fn process_usage() -> (std::time::Duration, u64) {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_SELF is always valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return (std::time::Duration::ZERO, 0);
    }
    let tv = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec.max(0) as u64)
            + std::time::Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    // Linux reports ru_maxrss in KiB.
    (cpu, (usage.ru_maxrss.max(0) as u64) * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_count_by_code() {
        let mut o = Outcomes::default();
        o.add(ReturnCode::Success);
        o.add(ReturnCode::Success);
        o.add(ReturnCode::DnsTimeout);
        o.add(ReturnCode::HttpConnect);
        o.add(ReturnCode::HttpConnect);
        assert_eq!(o.total(), 5);
        assert_eq!(o.failed(), 3);
        assert_eq!(
            o.failures(),
            vec![(ReturnCode::HttpConnect, 2), (ReturnCode::DnsTimeout, 1)]
        );
    }

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
    fn process_usage_reports_something() {
        let (_cpu, rss) = process_usage();
        assert!(rss > 0);
    }
}
