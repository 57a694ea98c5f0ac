use super::*;
use proptest::prelude::*;

use LinkKind::{
    Area, Css, Frame, Icon, Iframe, Img, Link, Media, Object, Preload, Script, Source, Stylesheet,
    A,
};

/// Runs both implementations, checks they agree, and returns the fast one's result in the
/// naive one's shape.
#[allow(clippy::type_complexity)]
fn both(html: &[u8]) -> (Option<Vec<u8>>, Vec<(LinkKind, Vec<u8>)>, usize) {
    let mut links = Links::new();
    scan(html, &mut links);
    let fast = (
        links.base().map(<[u8]>::to_vec),
        links
            .iter()
            .map(|(k, v)| (k, v.to_vec()))
            .collect::<Vec<_>>(),
        links.dropped(),
    );
    assert_eq!(links.len(), fast.1.len());
    assert_eq!(links.is_empty(), fast.1.is_empty());
    let slow = naive::scan(html);
    assert_eq!(
        fast,
        slow,
        "fast and naive disagree on {:?}",
        String::from_utf8_lossy(html)
    );
    let all = naive::scan_all(html);
    let rel: Vec<_> = links
        .iter_rel()
        .map(|(k, v, n)| (k, v.to_vec(), n))
        .collect();
    assert_eq!(
        rel,
        all.links,
        "rel marks of {:?}",
        String::from_utf8_lossy(html)
    );
    let meta: Vec<_> = links.robots_meta().map(<[u8]>::to_vec).collect();
    assert_eq!(
        meta,
        all.robots_meta,
        "robots meta of {:?}",
        String::from_utf8_lossy(html)
    );
    fast
}

/// The links of `html` marked `nofollow` by their `rel`, and its robots `<meta>` contents.
fn directives_of(html: &str) -> (Vec<String>, Vec<String>) {
    both(html.as_bytes());
    let mut links = Links::new();
    scan(html.as_bytes(), &mut links);
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    (
        links
            .iter_rel()
            .filter(|l| l.2)
            .map(|l| text(l.1))
            .collect(),
        links.robots_meta().map(text).collect(),
    )
}

#[test]
fn rel_nofollow_marks_anchors_and_areas() {
    let (nofollow, _) = directives_of(
        r#"<a href="/n" rel="nofollow">n</a><a href="/u" REL="external UGC"><a rel=sponsored href=/s>
        <area href="/ar" rel="noopener nofollow"><a href="/f" rel="noopener">
        <link rel="nofollow" href="/l"><a href="/x" rel="nofollowed"><img src="/i" rel="nofollow">"#,
    );
    assert_eq!(nofollow, ["/n", "/u", "/s", "/ar"]);
}

#[test]
fn robots_meta_contents_are_kept() {
    let (_, meta) = directives_of(
        r#"<head><META NAME="Robots" CONTENT="noindex, nofollow"><meta name=" spinneret " content=none>
        <meta name="googlebot" content="nofollow"><meta name="description" content="nofollow">
        <meta name="robots" content="  "><meta name="robots"><meta content="all" name="robots">
        <meta name="robots" content="no&#105;ndex">"#,
    );
    assert_eq!(meta, ["noindex, nofollow", "none", "all", "noindex"]);
}

#[test]
fn robots_metas_are_bounded() {
    let page = "<meta name=robots content=nofollow>".repeat(MAX_ROBOTS_METAS + 3);
    let (_, meta) = directives_of(&page);
    assert_eq!(meta.len(), MAX_ROBOTS_METAS);
    let mut links = Links::new();
    scan(page.as_bytes(), &mut links);
    assert_eq!(links.dropped(), 3);
    links.clear();
    assert_eq!(links.robots_meta().count(), 0);
}

fn check(html: &str, base: Option<&str>, expected: &[(LinkKind, &str)]) {
    let (b, links, dropped) = both(html.as_bytes());
    assert_eq!(b.as_deref(), base.map(str::as_bytes), "base of {html:?}");
    let want: Vec<(LinkKind, Vec<u8>)> = expected
        .iter()
        .map(|&(k, v)| (k, v.as_bytes().to_vec()))
        .collect();
    assert_eq!(links, want, "links of {html:?}");
    assert_eq!(dropped, 0, "dropped of {html:?}");
}

fn links_of(html: &str, expected: &[(LinkKind, &str)]) {
    check(html, None, expected);
}

#[test]
fn elements_and_attributes() {
    links_of(
        r#"<a href="/a"><area href="/area"><link href="/l"><frame src="/f"><iframe src="/i">"#,
        &[
            (A, "/a"),
            (Area, "/area"),
            (Link, "/l"),
            (Frame, "/f"),
            (Iframe, "/i"),
        ],
    );
    // The wrong attribute for the element is not a link.
    links_of(
        r#"<a src="/x"><iframe href="/y"><img href="/z"><div href="/w"><script href="/s">"#,
        &[],
    );
    // Names are ASCII case-insensitive; tag names must match exactly (`abbr`, `links`).
    links_of(
        r#"<A HREF="/1"><IfRaMe SrC="/2"><abbr href="/3"><links href="/4"><a hrefx="/5">"#,
        &[(A, "/1"), (Iframe, "/2")],
    );
}

#[test]
fn attribute_syntax() {
    links_of(r#"<a href='/s'>"#, &[(A, "/s")]);
    links_of(r#"<a href=/u>"#, &[(A, "/u")]);
    links_of("<a href = \t\n'/ws' >", &[(A, "/ws")]);
    links_of(r#"<a class=x href=/u2 id=y>"#, &[(A, "/u2")]);
    links_of(r#"<a download href="/d">"#, &[(A, "/d")]);
    links_of(r#"<a/href="/slash"/>"#, &[(A, "/slash")]);
    links_of(r#"<a title="x"href="/glued">"#, &[(A, "/glued")]);
    // Quoted values may hold `>`, the other quote, and `<a href=`.
    links_of(
        r#"<a title="a > b '" href='/q"x'><a alt='<a href="/no">' href=/yes>"#,
        &[(A, "/q\"x"), (A, "/yes")],
    );
    // Unquoted values hold quotes and `=`, and end at whitespace or `>`.
    links_of(r#"<a href=/a"b=c'>"#, &[(A, "/a\"b=c'")]);
    // `=` starting an attribute name is part of the name.
    links_of(r#"<a ="x" href=/eq>"#, &[(A, "/eq")]);
    // A `/` right after an unquoted value belongs to it.
    links_of(r#"<a href=/dir/>"#, &[(A, "/dir/")]);
    // Self-closing `/` then `>`.
    links_of(r#"<link href="/s.css" />"#, &[(Link, "/s.css")]);
}

#[test]
fn first_attribute_wins() {
    links_of(r#"<a href="/1" HREF="/2">"#, &[(A, "/1")]);
    // Even when the first one is empty or has no value.
    links_of(r#"<a href href="/2">"#, &[]);
    links_of(r#"<a href="" href="/2">"#, &[]);
    links_of(r#"<a href=>x<a href=/3>"#, &[(A, "/3")]);
}

#[test]
fn empty_values_are_not_links() {
    links_of(
        r#"<a href=""><a href="  "><a href><a href="&#9;"><a href=/ok>"#,
        &[(A, "/ok")],
    );
}

#[test]
fn end_tags_are_parsed_but_not_extracted() {
    links_of(r#"</a href="/no"><a href=/yes></A>"#, &[(A, "/yes")]);
    // A quoted `>` inside an end tag does not end it.
    links_of(r#"</a title=">" <a href="/hidden">"#, &[]);
    links_of(r#"</a title=">"> <a href="/shown">"#, &[(A, "/shown")]);
}

#[test]
fn lone_angle_brackets_are_text() {
    links_of(r#"a < b <1 <<a href=/x> <- <>"#, &[(A, "/x")]);
    // `</` not followed by a letter is skipped to the next `>`.
    links_of(r#"</ <a href=/no> <a href=/yes>"#, &[(A, "/yes")]);
    links_of(r#"</><a href=/yes>"#, &[(A, "/yes")]);
}

#[test]
fn comments() {
    links_of(r#"<!-- <a href=/no> --><a href=/yes>"#, &[(A, "/yes")]);
    links_of(r#"<!--><a href=/1>"#, &[(A, "/1")]);
    links_of(r#"<!---><a href=/2>"#, &[(A, "/2")]);
    links_of(r#"<!----><a href=/3>"#, &[(A, "/3")]);
    links_of(r#"<!-- x --!><a href=/4>"#, &[(A, "/4")]);
    links_of(r#"<!-- -- > <a href=/no> ---><a href=/5>"#, &[(A, "/5")]);
    // `<!-->` needs the `>` right after `<!--`: `<!--x>` is still open.
    links_of(r#"<!--x><a href=/no>-->"#, &[]);
    // Unclosed: hides the rest.
    links_of(r#"<a href=/1><!-- <a href=/no>"#, &[(A, "/1")]);
}

#[test]
fn declarations_and_processing_instructions() {
    links_of(
        r#"<!DOCTYPE html><?xml version="1.0"?><![CDATA[ x ]]><a href=/x>"#,
        &[(A, "/x")],
    );
    links_of(r#"<!doctype <a href=/no>"#, &[]);
    links_of(r#"<? <a href=/no>"#, &[]);
    links_of(r#"<!x"#, &[]);
}

#[test]
fn raw_text_elements() {
    links_of(
        r#"<script>document.write('<a href="/no">')</script><a href=/1>"#,
        &[(A, "/1")],
    );
    links_of(
        r#"<STYLE type="text/css">a[href="<a href=/no>"]{}</sTyLe><a href=/2>"#,
        &[(A, "/2")],
    );
    links_of(
        r#"<textarea><a href=/no></textarea><title><a href=/no></title><a href=/3>"#,
        &[(A, "/3")],
    );
    // The closing name is matched as a prefix, as the brief says.
    links_of(r#"<script>x</scripty><a href=/4>"#, &[(A, "/4")]);
    // `if (a </script` ... and `<` inside scripts.
    links_of(
        r#"<script>if (a<b) x</b </script><a href=/5>"#,
        &[(A, "/5")],
    );
    // Unclosed: hides the rest.
    links_of(r#"<script><a href=/no>"#, &[]);
    // An end tag `</script>` does not start raw text; a script *end* tag is harmless.
    links_of(r#"</script><a href=/6>"#, &[(A, "/6")]);
    // `noscript` is not raw text: its links are kept.
    links_of(r#"<noscript><a href=/7></noscript>"#, &[(A, "/7")]);
}

#[test]
fn cut_off_tags_are_dropped() {
    links_of(r#"<a href=/1><a href=/2"#, &[(A, "/1")]);
    links_of(r#"<a href="/2">x<a href="/3"#, &[(A, "/2")]);
    links_of(r#"<a href="/2" "#, &[]);
    links_of(r#"<a href="/2"/"#, &[]);
    links_of(r#"<a href="#, &[]);
    links_of(r#"<a"#, &[]);
    links_of(r#"<"#, &[]);
    // An unclosed quote swallows the rest of the input.
    links_of(r#"<a title="x><a href=/no>"#, &[]);
}

#[test]
fn base() {
    check(
        r#"<base href="http://e.com/d/"><base href="http://other/"><a href=x>"#,
        Some("http://e.com/d/"),
        &[(A, "x")],
    );
    // A base without href does not count; the first with one does, even when empty.
    check(
        r#"<base target=_top><BASE HREF=/b1><base href=/b2>"#,
        Some("/b1"),
        &[],
    );
    check(r#"<base href=" "><base href=/b2>"#, None, &[]);
    check(r#"</base href=/no><base href=/yes>"#, Some("/yes"), &[]);
    check(r#"<base href="/b&amp;c">"#, Some("/b&c"), &[]);
}

#[test]
fn value_decoding() {
    links_of(
        r#"<a href="?a=1&amp;b=2&lt;&gt;&quot;&apos;">"#,
        &[(A, "?a=1&b=2<>\"'")],
    );
    links_of(r#"<a href="x&nbsp;y">"#, &[(A, "x\u{a0}y")]);
    links_of(
        r#"<a href="&#47;&#x2F;&#X2f;&#47&#x2fz">"#,
        &[(A, "////\u{2f}z")],
    );
    links_of(r#"<a href="&#x1F600;">"#, &[(A, "\u{1F600}")]);
    // 0, surrogates, out of range, overflow: U+FFFD.
    links_of(
        r#"<a href="&#0;&#xD800;&#x110000;&#99999999999999999999;">"#,
        &[(A, "\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}")],
    );
    // Unknown or malformed references are kept; named ones need their `;`.
    links_of(
        r#"<a href="&foo;&#;&#x;&amp&AMP;& x&">"#,
        &[(A, "&foo;&#;&#x;&amp&AMP;& x&")],
    );
    // Trimmed; TAB/CR/LF removed everywhere, also when they come from references.
    links_of(
        "<a href=\" \x0c\t/a\tb\r\nc&#10;d&#x9; \n\">",
        &[(A, "/abcd")],
    );
    // Spaces inside stay; a referenced space at the ends is trimmed too.
    links_of(r#"<a href="&#32;/a b&#32;">"#, &[(A, "/a b")]);
    links_of(r##"<a href="#frag">"##, &[(A, "#frag")]);
}

#[test]
fn hostile_bytes_are_kept_not_fatal() {
    let html = b"<a href=\"/\x00\xff\xfe\">\x00<a\x00 href=/n>";
    let (_, links, _) = both(html);
    assert_eq!(links, vec![(A, b"/\x00\xff\xfe".to_vec())]);
}

#[test]
fn too_long_values_are_dropped_and_counted() {
    let long = "x".repeat(MAX_VALUE_BYTES + 1);
    let html = format!(r#"<a href="{long}"><a href=/ok><base href="{long}"><base href=/b>"#);
    let (base, links, dropped) = both(html.as_bytes());
    assert_eq!(base, None);
    assert_eq!(links, vec![(A, b"/ok".to_vec())]);
    assert_eq!(dropped, 2);
    // Exactly at the bound is kept.
    let edge = "y".repeat(MAX_VALUE_BYTES);
    let (_, links, dropped) = both(format!("<a href={edge}>").as_bytes());
    assert_eq!((links.len(), dropped), (1, 0));
}

#[test]
fn links_beyond_max_are_dropped_and_counted() {
    let html = "<a href=/x>".repeat(MAX_LINKS + 5) + "<a href=''>";
    let mut links = Links::new();
    scan(html.as_bytes(), &mut links);
    assert_eq!(links.len(), MAX_LINKS);
    assert_eq!(links.dropped(), 5);
}

#[test]
fn links_is_reused_and_cleared() {
    let mut links = Links::new();
    scan(b"<base href=/b><a href=/1><a href=/2>", &mut links);
    assert_eq!(links.len(), 2);
    scan(b"<a href=/3>", &mut links);
    assert_eq!(links.base(), None);
    assert_eq!(links.iter().collect::<Vec<_>>(), vec![(A, &b"/3"[..])]);
    links.clear();
    assert!(links.is_empty());
}

const PAGE_NEWS: &str = include_str!("testdata/news.html");
const PAGE_SHOP: &str = include_str!("testdata/shop.html");
const PAGE_LEGACY: &str = include_str!("testdata/legacy.html");

#[test]
fn realistic_news_page() {
    let (base, links, dropped) = both(PAGE_NEWS.as_bytes());
    assert_eq!(base, None);
    assert_eq!(dropped, 0);
    let got: Vec<(LinkKind, String)> = links
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8(v).unwrap_or_default()))
        .collect();
    let want: Vec<(LinkKind, String)> = [
        (Stylesheet, "/static/site.css"),
        (
            Preload,
            "https://cdn.example.net/fonts.css?family=Open+Sans&display=swap",
        ),
        (Icon, "/favicon.ico"),
        (A, "/"),
        (A, "/world/"),
        (A, "/politics/"),
        (A, "/Sport/"),
        (A, "#main"),
        (A, "/world/2024/05/story-one.html"),
        (A, "https://example.org/report?id=7&lang=en"),
        (A, "/world/2024/05/story-one.html#comments"),
        (Iframe, "https://video.example.com/embed/abc"),
        (Img, "/img/photo.jpg"),
        (A, "/about"),
        (A, "mailto:desk@example.com"),
        (Script, "/static/app.js"),
    ]
    .iter()
    .map(|&(k, v)| (k, v.to_string()))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn realistic_shop_page() {
    let (base, links, dropped) = both(PAGE_SHOP.as_bytes());
    assert_eq!(
        base.as_deref(),
        Some(&b"https://shop.example.com/catalog/"[..])
    );
    assert_eq!(dropped, 0);
    let values: Vec<&[u8]> = links.iter().map(|(_, v)| v.as_slice()).collect();
    assert_eq!(
        values,
        vec![
            &b"print.css"[..],
            b"item?id=1&color=red",
            b"1.jpg",
            b"item?id=2",
            b"../sale/",
            b"map.png",
            b"map/north",
            b"/cart",
            b"caf\xc3\xa9/",
            b"javascript:void(0)",
        ]
    );
}

#[test]
fn realistic_legacy_page() {
    let (base, links, dropped) = both(PAGE_LEGACY.as_bytes());
    assert_eq!(base, None);
    assert_eq!(dropped, 0);
    assert_eq!(
        links,
        vec![
            (Frame, b"nav.html".to_vec()),
            (Frame, b"main.html".to_vec()),
            (A, b"NOFRAMES.HTM".to_vec()),
            (A, b"http://old.example.com/~user/".to_vec()),
        ]
    );
}

/// The pathological inputs the brief names: each runs in linear time and bounded memory and
/// gives the obvious answer. No timing asserts; a quadratic path would show as a very slow test.
#[test]
fn pathological_inputs_are_linear_and_bounded() {
    const BIG: usize = 20 << 20;
    let mut links = Links::new();

    let mut html = b"<a href=/ok><a href=\"".to_vec();
    html.resize(html.len() + BIG, b'x');
    scan(&html, &mut links);
    assert_eq!((links.len(), links.dropped()), (1, 0));

    let html = vec![b'<'; BIG];
    scan(&html, &mut links);
    assert_eq!((links.len(), links.dropped()), (0, 0));

    let mut html = b"<!--".to_vec();
    html.resize(html.len() + BIG, b'-');
    html.extend_from_slice(b"<a href=/no>");
    scan(&html, &mut links);
    assert_eq!(links.len(), 0);

    let mut html = b"<script>".to_vec();
    html.extend_from_slice(&b"</scrip".repeat(BIG / 7));
    html.extend_from_slice(b"</script><a href=/after>");
    scan(&html, &mut links);
    assert_eq!(links.len(), 1);

    // A 20 MB unquoted value with entities is dropped without being decoded or buffered.
    let mut html = b"<a href=".to_vec();
    html.extend_from_slice(&b"&#x41;".repeat(BIG / 6));
    html.extend_from_slice(b"><a href=/ok>");
    scan(&html, &mut links);
    assert_eq!((links.len(), links.dropped()), (1, 1));
    assert!(links.buf.len() < 16);

    // A 20 MB tag of valueless attributes, then a link.
    let mut html = b"<div".to_vec();
    html.extend_from_slice(&b" a".repeat(BIG / 2));
    html.extend_from_slice(b"><a href=/ok>");
    scan(&html, &mut links);
    assert_eq!(links.len(), 1);

    // 20 MB of `&#` digits inside a kept-size value cannot happen (bounded), but a long
    // numeric reference at the bound still decodes to one replacement character.
    let value = format!("&#{}", "9".repeat(MAX_VALUE_BYTES - 2));
    scan(format!("<a href={value}>").as_bytes(), &mut links);
    assert_eq!(links.iter().next(), Some((A, "\u{FFFD}".as_bytes())));
}

/// The HTML-ish alphabet the token strategy draws from: pieces that drive the scanner into
/// every state often, with plain bytes in between.
const TOKENS: &[&str] = &[
    "<a",
    "<A",
    "<a ",
    "<area ",
    "<link ",
    "<frame ",
    "<iframe ",
    "<base href=",
    "<div ",
    "<img ",
    "<source ",
    "<script ",
    "<video ",
    "<input ",
    "<object ",
    "<embed ",
    "<style ",
    "srcset",
    "style",
    "rel",
    "poster",
    "data",
    "type",
    "stylesheet",
    "icon",
    "image",
    "alternate",
    "application/rss+xml",
    "application/atom+xml",
    "url(",
    ")",
    "@import",
    "/*",
    "*/",
    ",",
    " 2x",
    "\\",
    "data:",
    "</a",
    "</",
    "<",
    ">",
    "/",
    "/>",
    " ",
    "\t",
    "\n",
    "\x0c",
    "\r",
    "href",
    "HREF",
    "src",
    "=",
    " = ",
    "\"",
    "'",
    "x",
    "/p",
    "#f",
    "<!--",
    "-->",
    "--!>",
    "<!-->",
    "<!--->",
    "-",
    "!",
    "<!",
    "<?",
    "<script>",
    "</script>",
    "<meta ",
    " name=robots",
    " name=\"spinneret\"",
    " content=\"nofollow\"",
    " rel=nofollow",
    " rel=\"ugc x\"",
    "<a ",
    "<area ",
    " href=/h",
    "<SCRIPT ",
    "</scr",
    "<style>",
    "</style",
    "<textarea>",
    "</textarea>",
    "<title>",
    "</title>",
    "&amp;",
    "&lt;",
    "&nbsp;",
    "&#x2f;",
    "&#47",
    "&#0;",
    "&#xD800;",
    "&",
    "&#",
    "&#x",
    ";",
    "\0",
    "\u{e9}",
    "\u{FFFD}",
    "\u{80}",
];

fn token_soup() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..80)
        .prop_map(|tokens| tokens.concat().into_bytes())
}

/// A fixture page, cut at a random point, with a random token spliced in somewhere.
fn mutated_page() -> impl Strategy<Value = Vec<u8>> {
    let pages = vec![
        PAGE_NEWS,
        PAGE_SHOP,
        PAGE_LEGACY,
        include_str!("testdata/requisites.html"),
    ];
    (
        prop::sample::select(pages),
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        prop::sample::select(TOKENS),
    )
        .prop_map(|(page, cut, at, token)| {
            let page = page.as_bytes();
            let cut = cut.index(page.len() + 1);
            let at = at.index(cut + 1);
            let mut html = page[..at].to_vec();
            html.extend_from_slice(token.as_bytes());
            html.extend_from_slice(&page[at..cut]);
            html
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn matches_naive_on_random_bytes(html in prop::collection::vec(any::<u8>(), 0..512)) {
        both(&html);
    }

    #[test]
    fn matches_naive_on_random_bytes_from_a_small_alphabet(
        html in prop::collection::vec(prop::sample::select(&b"<>/=\"' a!-&#x;\t"[..]), 0..256)
    ) {
        both(&html);
    }

    #[test]
    fn matches_naive_on_token_soup(html in token_soup()) {
        both(&html);
    }

    #[test]
    fn matches_naive_on_mutated_pages(html in mutated_page()) {
        both(&html);
    }
}

#[test]
fn page_requisites() {
    links_of(
        r#"<img src="/i.png" srcset="/i1.png 1x, /i2.png 2x"><picture><source srcset="/s.webp" src="/s.jpg"></picture>
<script src="/app.js"></script><script>var x = "<img src=/no.png>";</script>
<video poster="/p.jpg" src="/v.mp4"><track src="/t.vtt"></video><audio src="/a.ogg">
<object data="/o.swf"></object><embed src="/e.swf"><input type=image src="/btn.png"><input src="/no.png">
<link rel="Shortcut Icon" href="/fav.ico"><link href="/m.js" rel=modulepreload><link rel="next" href="/2">
<link rel="preload stylesheet" href="/both.css">"#,
        &[
            (Img, "/i.png"),
            (Img, "/i1.png"),
            (Img, "/i2.png"),
            (Source, "/s.jpg"),
            (Source, "/s.webp"),
            (Script, "/app.js"),
            (Media, "/v.mp4"),
            (Media, "/p.jpg"),
            (Media, "/t.vtt"),
            (Media, "/a.ogg"),
            (Object, "/o.swf"),
            (Object, "/e.swf"),
            (LinkKind::Input, "/btn.png"),
            (Icon, "/fav.ico"),
            (Preload, "/m.js"),
            (Link, "/2"),
            (Stylesheet, "/both.css"),
        ],
    );
    assert!(Img.is_requisite() && Css.is_requisite() && Stylesheet.is_requisite());
    assert!(!A.is_requisite() && !Link.is_requisite() && !Iframe.is_requisite());
}

#[test]
fn feed_links() {
    use LinkKind::Feed;
    links_of(
        r#"<link rel="alternate" type="application/rss+xml" href="/rss">
<link rel=ALTERNATE type=" Application/Atom+XML; charset=utf-8" href="/atom">
<link rel="alternate home" type=application/atom+xml href=/both>
<link rel="alternate" type="text/html" href="/fr">
<link type="application/rss+xml" href="/norel">
<link rel="alternate stylesheet" type="application/rss+xml" href="/css">"#,
        &[
            (Feed, "/rss"),
            (Feed, "/atom"),
            (Feed, "/both"),
            (Link, "/fr"),
            (Link, "/norel"),
            (Stylesheet, "/css"),
        ],
    );
    assert!(!Feed.is_requisite());
}

#[test]
fn css_in_style_attributes_and_elements() {
    links_of(
        r#"<div style="background: url(&quot;/bg.png&quot;)"><p style='x:url(/a.png);y:url( /b.png )'>
<style>@import "/base.css"; .x { background: url('/x.png') } /* url(/no.png) */</style>
<a href="/page" style="background:url(data:image/png;base64,AAAA)">"#,
        &[
            (Css, "/bg.png"),
            (Css, "/a.png"),
            (Css, "/b.png"),
            (Css, "/base.css"),
            (Css, "/x.png"),
            (A, "/page"),
        ],
    );
    // A stylesheet on its own.
    let mut out = Links::new();
    crate::links::scan_css(
        b"@import url(a.css);\nbody{background:url(\"b.png\")}",
        &mut out,
    );
    let got: Vec<_> = out.iter().map(|(k, v)| (k, v.to_vec())).collect();
    assert_eq!(
        got,
        vec![(Css, b"a.css".to_vec()), (Css, b"b.png".to_vec())]
    );
}

#[test]
fn realistic_requisites_page() {
    let page = include_str!("testdata/requisites.html");
    let (_, links, dropped) = both(page.as_bytes());
    assert_eq!(dropped, 0);
    let requisites: Vec<String> = links
        .iter()
        .filter(|(k, _)| k.is_requisite())
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        .collect();
    assert_eq!(
        requisites,
        [
            "css/site.css",
            "favicon.png",
            "img/logo.svg",
            "img/hero-800.jpg",
            // Once as src, once as a srcset candidate: the crawl's URL-seen set dedups.
            "img/hero-800.jpg",
            "img/hero-1600.jpg",
            "js/app.js",
            "img/bg.png",
            "fonts/body.woff2",
        ]
    );
    let pages: Vec<String> = links
        .iter()
        .filter(|(k, _)| !k.is_requisite())
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        .collect();
    assert_eq!(pages, ["index.html", "about.html"]);
}

#[test]
fn feed_links_in_html() {
    assert!(is_feed_link(b"alternate", b"application/rss+xml"));
    assert!(is_feed_link(
        b"Alternate",
        b"APPLICATION/ATOM+XML; charset=UTF-8"
    ));
    assert!(is_feed_link(
        b" home  alternate ",
        b" application/atom+xml "
    ));
    assert!(!is_feed_link(b"alternate", b"text/html"));
    assert!(!is_feed_link(b"alternate", b"application/rdf+xml"));
    assert!(!is_feed_link(b"stylesheet", b"application/rss+xml"));
    assert!(!is_feed_link(b"alternates", b"application/rss+xml"));
    assert!(!is_feed_link(b"", b"application/rss+xml"));
}
