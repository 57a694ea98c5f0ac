use proptest::prelude::*;

use super::*;
use crate::links::{self, LinkKind, Links};

fn text_of(html: &str) -> String {
    let mut out = VisibleText::new();
    extract(html.as_bytes(), &mut out);
    String::from_utf8(out.text().to_vec()).unwrap()
}

fn anchors_of(html: &str) -> Vec<(String, String)> {
    let mut out = VisibleText::new();
    extract(html.as_bytes(), &mut out);
    out.anchors()
        .map(|(h, t)| {
            (
                String::from_utf8_lossy(h).into_owned(),
                String::from_utf8_lossy(t).into_owned(),
            )
        })
        .collect()
}

#[test]
fn text_between_tags_with_words_kept_apart() {
    assert_eq!(
        text_of("<html><head><title>Sea &amp; Sky</title></head><body><h1>Tides</h1><p>Moon<br>pulls\n\n  water</p></body></html>"),
        "Sea & Sky Tides Moon pulls water"
    );
    assert_eq!(
        text_of("a&lt;b &#233;t&#xE9; caf&eacute; 5&nbsp;km"),
        "a<b été caf&eacute; 5 km"
    );
    assert_eq!(text_of("x < y and 1<2"), "x < y and 1<2");
}

#[test]
fn what_is_not_prose_is_left_out() {
    let html = r#"<p>one</p><script>var two = "<p>no</p>";</script><style>p{}</style>
<!-- three --><noscript>enable js</noscript><template><p>t</p></template>
<textarea>typed</textarea><!DOCTYPE html><?php echo ?><p title="attr text">four</p>
<SCRIPT type="x">no</Script >five"#;
    assert_eq!(text_of(html), "one four five");
    // An unclosed comment or script hides the rest, as in the link scanner.
    assert_eq!(text_of("a<!-- b"), "a");
    assert_eq!(text_of("a<script>b"), "a");
    // A tag cut off by the end of the input is dropped.
    assert_eq!(text_of("a<p class=\"x"), "a");
}

#[test]
fn anchors_and_their_text() {
    let html = r#"<a href="/tides">Ocean <b>tides</b></a> between <a href=' /moon '>the moon
<a href="/next">next</a><a name=x>no href</a> <a href="/e?a=1&amp;b=2">e</a><A HREF=/caps>caps</a>"#;
    assert_eq!(
        anchors_of(html),
        [
            ("/tides".into(), "Ocean tides".into()),
            ("/moon".into(), "the moon".into()),
            ("/next".into(), "next".into()),
            ("/e?a=1&b=2".into(), "e".into()),
            ("/caps".into(), "caps".into()),
        ]
    );
    let long = format!("<a href=/l>{}</a>", "word ".repeat(200));
    assert_eq!(anchors_of(&long)[0].1.len(), MAX_ANCHOR_TEXT);
}

#[test]
fn output_is_bounded() {
    let big = "lorem ipsum ".repeat(MAX_TEXT_BYTES / 6);
    let mut out = VisibleText::new();
    extract(big.as_bytes(), &mut out);
    assert!(out.text().len() <= MAX_TEXT_BYTES);
    assert!(out.truncated());
    extract(b"<p>short</p>", &mut out);
    assert_eq!((out.text(), out.truncated()), (&b"short"[..], false));
    let many = "<a href=/x>x</a>".repeat(MAX_ANCHORS + 10);
    extract(many.as_bytes(), &mut out);
    assert_eq!(out.anchors().count(), MAX_ANCHORS);
}

/// The hrefs of the `<a>` links the scanner reports, in order.
fn scanner_hrefs(html: &[u8]) -> Vec<Vec<u8>> {
    let mut links = Links::new();
    links::scan(html, &mut links);
    links
        .iter()
        .filter(|(k, _)| *k == LinkKind::A)
        .map(|(_, v)| v.to_vec())
        .collect()
}

const TOKENS: &[&str] = &[
    "<a href=",
    "<a ",
    "<A HREF='",
    "</a>",
    "<p>",
    "<b>",
    "</",
    "<",
    ">",
    "\"",
    "'",
    "=",
    "/x",
    " ",
    "\t",
    "\n",
    "&amp;",
    "&#9;",
    "&#x2F;",
    "&",
    "<!--",
    "-->",
    "<script>",
    "</script>",
    "<title>",
    "</title>",
    "<style>",
    "</style>",
    "word",
    "é",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// An anchor's href is the value the link scanner reports for the same `<a>`, so the
    /// crawl can find an admitted link's anchor text by its href. (The scanner also reports
    /// `<a>`s inside `noscript` and `template`, whose content we skip, so those are left out
    /// of the alphabet.)
    #[test]
    fn hrefs_agree_with_the_link_scanner(picks in proptest::collection::vec(0..TOKENS.len(), 0..60)) {
        let html: String = picks.iter().map(|&i| TOKENS[i]).collect();
        let mut out = VisibleText::new();
        extract(html.as_bytes(), &mut out);
        let ours: Vec<Vec<u8>> = out.anchors().map(|(h, _)| h.to_vec()).collect();
        prop_assert_eq!(ours, scanner_hrefs(html.as_bytes()), "{:?}", html);
    }

    #[test]
    fn any_bytes_are_bounded(html in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let mut out = VisibleText::new();
        extract(&html, &mut out);
        prop_assert!(out.text().len() <= html.len() * 3 + 1);
        prop_assert!(!out.text().starts_with(b" ") && !out.text().ends_with(b" "));
        prop_assert!(!out.text().windows(2).any(|w| w == b"  "));
        prop_assert!(out.anchors().count() <= MAX_ANCHORS);
    }
}
