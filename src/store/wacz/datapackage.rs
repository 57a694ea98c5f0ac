//! `datapackage.json`, the package's manifest (a Frictionless Data Package, as WACZ 1.1.1
//! says): every other file with its path, size and SHA-256, `profile`, `wacz_version`,
//! `software`, `created` and a title; and `datapackage-digest.json`, the manifest's own
//! SHA-256, which makes it (and through it every file) checkable.

use sha2::{Digest as _, Sha256};

use super::zip::hex;
use crate::store::archive::cdxj::push_json_string;

pub const WACZ_VERSION: &str = "1.1.1";

/// One file of the package, as the manifest lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// Its path in the package.
    pub path: String,
    pub bytes: u64,
    /// Lowercase hex.
    pub sha256: String,
}

/// A resource's `name`: Frictionless wants lowercase letters, digits and `-._/` only.
pub fn resource_name(path: &str) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    base.chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() || "-._".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The manifest's bytes (two-space indented JSON, as py-wacz writes it).
pub fn manifest(resources: &[Resource], title: &str, software: &str, created: &str) -> Vec<u8> {
    let mut j = Vec::with_capacity(256 + resources.len() * 200);
    let field = |j: &mut Vec<u8>, name: &str, value: &str| {
        j.extend_from_slice(b"  \"");
        j.extend_from_slice(name.as_bytes());
        j.extend_from_slice(b"\": ");
        push_json_string(j, value.as_bytes());
        j.extend_from_slice(b",\n");
    };
    j.extend_from_slice(b"{\n");
    field(&mut j, "profile", "data-package");
    j.extend_from_slice(b"  \"resources\": [");
    for (i, r) in resources.iter().enumerate() {
        j.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
        j.extend_from_slice(b"    {\n      \"name\": ");
        push_json_string(&mut j, resource_name(&r.path).as_bytes());
        j.extend_from_slice(b",\n      \"path\": ");
        push_json_string(&mut j, r.path.as_bytes());
        j.extend_from_slice(b",\n      \"hash\": \"sha256:");
        j.extend_from_slice(r.sha256.as_bytes());
        j.extend_from_slice(b"\",\n      \"bytes\": ");
        crate::codec::push_u64(&mut j, r.bytes);
        j.extend_from_slice(b"\n    }");
    }
    j.extend_from_slice(b"\n  ],\n");
    field(&mut j, "title", title);
    field(&mut j, "created", created);
    field(&mut j, "wacz_version", WACZ_VERSION);
    // The last field: no comma after it.
    j.extend_from_slice(b"  \"software\": ");
    push_json_string(&mut j, software.as_bytes());
    j.extend_from_slice(b"\n}\n");
    j
}

/// `datapackage-digest.json` for a manifest's bytes.
pub fn digest(manifest: &[u8]) -> Vec<u8> {
    format!(
        "{{\n  \"path\": \"datapackage.json\",\n  \"hash\": \"sha256:{}\"\n}}\n",
        hex(&Sha256::digest(manifest))
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_is_json_with_every_resource_and_the_required_fields() {
        let resources = [
            Resource {
                path: "archive/Crawl-00000.warc.gz".into(),
                bytes: 5_000_000_000,
                sha256: "ab".repeat(32),
            },
            Resource {
                path: "pages/pages.jsonl".into(),
                bytes: 75,
                sha256: "cd".repeat(32),
            },
        ];
        let m = manifest(
            &resources,
            "crawl \"one\"",
            "spinneret 0.1.0",
            "2026-11-29T12:00:00Z",
        );
        let v: serde_json::Value = serde_json::from_slice(&m).unwrap();
        assert_eq!(v["profile"], "data-package");
        assert_eq!(v["wacz_version"], "1.1.1");
        assert_eq!(v["software"], "spinneret 0.1.0");
        assert_eq!(v["created"], "2026-11-29T12:00:00Z");
        assert_eq!(v["title"], "crawl \"one\"");
        let r = v["resources"].as_array().unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0]["name"], "crawl-00000.warc.gz");
        assert_eq!(r[0]["path"], "archive/Crawl-00000.warc.gz");
        assert_eq!(r[0]["bytes"], 5_000_000_000u64);
        assert_eq!(r[0]["hash"], format!("sha256:{}", "ab".repeat(32)));
        assert_eq!(r[1]["name"], "pages.jsonl");
        let d: serde_json::Value = serde_json::from_slice(&digest(&m)).unwrap();
        assert_eq!(d["path"], "datapackage.json");
        assert_eq!(d["hash"], format!("sha256:{}", hex(&Sha256::digest(&m))));
    }

    #[test]
    fn resource_names_keep_to_frictionless_characters() {
        assert_eq!(
            resource_name("archive/My Crawl+1.warc.gz"),
            "my-crawl-1.warc.gz"
        );
        assert_eq!(resource_name("indexes/index.cdx.gz"), "index.cdx.gz");
    }
}
