//! `spinneret cluster-status --cluster URL`: the progress of a crawl spread over nodes, read
//! from the figures each node writes to Redis (see [`super::cluster`]).

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use redis::Connection;

use super::cluster::{key, open, PREFIX};

/// `spinneret cluster-status`: the whole crawl's progress, one line per node.
pub fn status(url: &str) -> Result<String, String> {
    let fail = |e: redis::RedisError| format!("Redis at {url}: {e}");
    let (_, mut con) = open(url)?;
    let nodes: Option<u32> = redis::cmd("GET")
        .arg(key("nodes"))
        .query(&mut con)
        .map_err(fail)?;
    let Some(nodes) = nodes else {
        return Err(format!("no spinneret crawl in Redis at {url}"));
    };
    let done: Option<String> = redis::cmd("GET")
        .arg(key("done"))
        .query(&mut con)
        .map_err(fail)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let mut out = String::new();
    let (mut pages, mut queued) = (0u64, 0u64);
    out.push_str("node      pages    queued   in flight  sent URLs  recv URLs  state\n");
    for k in 0..nodes {
        let h: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(format!("{PREFIX}:node:{k}"))
            .query(&mut con)
            .map_err(fail)?;
        let get = |f: &str| h.get(f).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let flag = |hash: &str, con: &mut Connection| -> Result<bool, String> {
            let v: Option<String> = redis::cmd("HGET")
                .arg(key(hash))
                .arg(k)
                .query(con)
                .map_err(fail)?;
            Ok(v.as_deref() == Some("1"))
        };
        let inflight: Option<i64> = redis::cmd("HGET")
            .arg(key("inflight"))
            .arg(k)
            .query(&mut con)
            .map_err(fail)?;
        let state = if h.is_empty() {
            "not started".to_string()
        } else if done.as_deref() == Some("1") {
            "finished".into()
        } else if flag("stopped", &mut con)? {
            "stopped".into()
        } else if flag("idle", &mut con)? {
            "idle".into()
        } else {
            let age = h
                .get("updated")
                .and_then(|v| v.parse::<f64>().ok())
                .map_or(0.0, |t| now - t);
            if age > 10.0 {
                format!("silent for {age:.0} s")
            } else {
                "crawling".into()
            }
        };
        pages += get("pages");
        queued += get("queued");
        out.push_str(&format!(
            "{k:<4} {:>10} {:>9} {:>11} {:>10} {:>10}  {state}\n",
            get("pages"),
            get("queued"),
            inflight.unwrap_or(0),
            get("urls_sent"),
            get("urls_received"),
        ));
    }
    out.push_str(&format!(
        "all  {pages:>10} {queued:>9}  — {}\n",
        if done.as_deref() == Some("1") {
            "the crawl is done"
        } else {
            "crawling"
        }
    ));
    Ok(out)
}
