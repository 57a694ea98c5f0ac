//! A generated multi-host site for crawl tests and the `spinneret-testserver` binary: `hosts`
//! virtual hosts `h{i}.test` (i from 0), each with `pages` HTML pages `/p{j}.html` of a few KB
//! that link to each other and across hosts. Serving is `http_server`'s job, names `dns_server`'s.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::Ipv4Addr;

use crate::dns_server::Record;
use crate::http_server::{Response, Routes, Script};

/// Filler paragraphs per page, to make pages a few KB.
const FILLER_PARAGRAPHS: usize = 12;

pub fn host_name(i: usize) -> String {
    format!("h{i}.test")
}

pub fn page_url(host: usize, page: usize, port: u16) -> String {
    format!("http://{}:{port}/p{page}.html", host_name(host))
}

/// Routes for every page, every URL (host-major order) and DNS records `h{i}.test` → 127.0.0.1.
/// Page j on host i links to pages j+1 and j+7 on the same host (so p0 reaches every page) and
/// to page j on host i+1 (so h0 reaches every host).
pub fn simple_site(
    hosts: usize,
    pages: usize,
    port: u16,
) -> (Routes, Vec<String>, HashMap<String, Vec<Record>>) {
    let mut routes = Routes::new();
    let mut urls = Vec::with_capacity(hosts * pages);
    let mut records = HashMap::new();
    for h in 0..hosts {
        records.insert(host_name(h), vec![Record::A(Ipv4Addr::LOCALHOST)]);
        for p in 0..pages {
            let html = page_html(h, p, hosts, pages, port);
            routes.add(
                &host_name(h),
                &format!("/p{p}.html"),
                Script::Respond(Response::ok(html, "text/html; charset=utf-8")),
            );
            urls.push(page_url(h, p, port));
        }
    }
    (routes, urls, records)
}

fn page_html(h: usize, p: usize, hosts: usize, pages: usize, port: u16) -> String {
    let mut s = String::with_capacity(4096);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html><head><title>{} page {p}</title></head><body>\n<h1>Page {p} of {}</h1>\n",
        host_name(h),
        host_name(h)
    );
    let _ = writeln!(s, "<a href=\"/p{}.html\">next</a>", (p + 1) % pages);
    let _ = writeln!(s, "<a href=\"p{}.html\">skip</a>", (p + 7) % pages);
    let _ = writeln!(
        s,
        "<a href=\"{}\">other host</a>",
        page_url((h + 1) % hosts, p, port)
    );
    for i in 0..FILLER_PARAGRAPHS {
        let _ = writeln!(
            s,
            "<p>Paragraph {i} of page {p} on host {h}: the quick brown fox jumps over the lazy dog, \
             filling this page with a few kilobytes of ordinary text for the crawler.</p>"
        );
    }
    s.push_str("</body></html>\n");
    s
}
