//! Crawl policy tests.

use super::*;

#[test]
fn html_content_types() {
    assert!(is_html(None));
    assert!(is_html(Some(b"text/html")));
    assert!(is_html(Some(b"Text/HTML; charset=utf-8")));
    assert!(is_html(Some(b"application/xhtml+xml")));
    assert!(!is_html(Some(b"text/plain")));
    assert!(!is_html(Some(b"image/png")));
    assert!(!is_html(Some(b"text/htm")));
}
