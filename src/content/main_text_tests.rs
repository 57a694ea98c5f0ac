use super::*;
use proptest::prelude::*;

const PARA1: &str = "The river council met on Tuesday to discuss the new bridge, which has been \
                     delayed for three years by disputes over its cost.";
const PARA2: &str = "Engineers told the meeting that the foundations were sound and that work \
                     could resume in the spring if the budget is approved.";
const PARA3: &str = "Residents who spoke asked for a footpath on both sides and for the old \
                     ferry to keep running until the bridge opens.";

fn article_page(extra_after: &str) -> String {
    format!(
        "<!DOCTYPE html><html><head><title>Bridge | Gazette</title>\
         <style>p {{ color: red }}</style><script>var a = '<p>not text</p>';</script></head>\
         <body><header><div class=logo>The Gazette</div>\
         <nav><ul><li><a href=/>Home</a></li><li><a href=/news>News</a></li>\
         <li><a href=/sport>Sport</a></li><li><a href=/arts>Arts and culture</a></li></ul></nav>\
         </header><main><article><h1>Bridge work to resume</h1>\
         <p class=dateline>Updated 12 March 2024, 10:32</p>\
         <p>{PARA1}</p>\n<h2>Costs</h2>\n<p>{PARA2}</p><!-- <p>hidden comment text</p> -->\
         <p>{PARA3}</p></article>{extra_after}\
         <aside><h3>Most read</h3><ul><li><a href=/1>Storm closes the coast road for a day</a></li>\
         <li><a href=/2>School results are the best in ten years</a></li></ul></aside></main>\
         <footer><p>&copy; 2024 The Gazette. <a href=/terms>Terms</a> <a href=/privacy>Privacy</a>\
         </p></footer></body></html>"
    )
}

fn lines(text: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(text)
        .split('\n')
        .map(str::to_owned)
        .collect()
}

#[test]
fn keeps_the_article_and_leaves_navigation_headline_dateline_and_footer() {
    let page = article_page("");
    let mut mt = MainText::new();
    let text = mt.extract(page.as_bytes(), usize::MAX).to_vec();
    // Headline, dateline and subheading are short blocks: left out.
    assert_eq!(lines(&text), [PARA1, PARA2, PARA3]);
    let all = String::from_utf8_lossy(mt.page_text()).into_owned();
    assert!(all.starts_with("The Gazette\nHome\nNews\n"), "{all}");
    assert!(all.contains("Bridge work to resume\nUpdated 12 March 2024, 10:32\n"));
    assert!(all.ends_with("© 2024 The Gazette. Terms Privacy"), "{all}");
    for skipped in ["color", "not text", "hidden", "Bridge |"] {
        assert!(!all.contains(skipped), "{skipped:?} in {all}");
    }
    let nav: Vec<BlockInfo> = mt.blocks().filter(|b| b.text == b"News").collect();
    assert_eq!(nav.len(), 1);
    assert_eq!((nav[0].words, nav[0].link_words), (1, 1));
    assert_eq!(nav[0].kind, BlockKind::Boilerplate);
    assert!(nav[0].tags >= 3, "li, a, /a, /li: {}", nav[0].tags);
}

#[test]
fn an_ad_inside_the_article_is_left_out_and_the_article_stays_whole() {
    let ad = "<div class=ad><span>Advertisement</span><a href=https://ads.example/c?1>\
              Fresh coffee delivered to your door every week, first box free</a></div>";
    let page = article_page("").replace("<h2>Costs</h2>", ad);
    let mut mt = MainText::new();
    assert_eq!(
        lines(mt.extract(page.as_bytes(), usize::MAX)),
        [PARA1, PARA2, PARA3]
    );
}

/// A grid of teaser cards: a headline link, then a summary as long as a paragraph.
fn cards(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "<div class=card><h4><a href=/c/{i}>Storm closes the coast road for day {i}</a>\
                 </h4><p>The coast road was closed for a day after the storm brought down trees \
                 and flooded the lower part near the harbour, police said.</p></div>"
            )
        })
        .collect()
}

#[test]
fn the_article_element_keeps_teaser_cards_out() {
    // Cards after the article sum to more than the article: without <article> the teaser
    // rule removes them; with it, they are not candidates at all.
    let page = article_page(&cards(12));
    let mut mt = MainText::new();
    assert_eq!(
        lines(mt.extract(page.as_bytes(), usize::MAX)),
        [PARA1, PARA2, PARA3]
    );
    let divs = page
        .replace("<article>", "<div>")
        .replace("</article>", "</div>");
    assert_eq!(
        lines(mt.extract(divs.as_bytes(), usize::MAX)),
        [PARA1, PARA2, PARA3]
    );
    // Cards marked up as <article>s each: the one with the most long text is the article.
    let card_articles = cards(12)
        .replace("<div class=card>", "<article>")
        .replace("</p></div>", "</p></article>");
    let page = article_page(&card_articles);
    assert_eq!(
        lines(mt.extract(page.as_bytes(), usize::MAX)),
        [PARA1, PARA2, PARA3]
    );
}

#[test]
fn inside_the_article_a_paragraph_after_an_ad_stays() {
    // An ad (a link) before the last paragraph, cards (links) after the article: without
    // <article> the last paragraph looks like a teaser and is lost; with it, it stays.
    let ad = "<div class=ad><a href=https://ads.example/c?1>Fresh coffee delivered to your \
              door every week, first box free</a></div>";
    let page = article_page(&cards(3)).replace("<p>Residents", &format!("{ad}<p>Residents"));
    let mut mt = MainText::new();
    assert_eq!(
        lines(mt.extract(page.as_bytes(), usize::MAX)),
        [PARA1, PARA2, PARA3]
    );
    let divs = page
        .replace("<article>", "<div>")
        .replace("</article>", "</div>");
    assert_eq!(
        lines(mt.extract(divs.as_bytes(), usize::MAX)),
        [PARA1, PARA2]
    );
}

#[test]
fn text_is_decoded_and_whitespace_collapsed() {
    let page = b"<p>  caf&eacute; &amp; cr&#232;me\n\t&#x2014;&nbsp;tom&#8217;s   \
                 <b>bo</b>ld&lt;3 &bogus; <br>line</p>";
    let mut mt = MainText::new();
    mt.extract(page, usize::MAX);
    assert_eq!(
        String::from_utf8_lossy(mt.page_text()),
        "caf&eacute; & crème — tom’s bold<3 &bogus; line"
    );
    let b = mt.blocks().next().unwrap();
    // caf, eacute, crème, — (bytes ≥ 0x80 are word bytes), tom’s, bold, 3, bogus, line.
    assert_eq!(b.words, 9, "{:?}", String::from_utf8_lossy(b.text));
}

#[test]
fn quoted_gt_does_not_end_a_tag_and_stray_lt_is_text() {
    let page = b"<p title=\"a > b\" data-x='>'>one < two</p><p>x<y</p><a href=x>";
    let mut mt = MainText::new();
    mt.extract(page, usize::MAX);
    // `<y</p>` is a tag named `y<`, as in HTML: it takes the `</p>` with it.
    assert_eq!(String::from_utf8_lossy(mt.page_text()), "one < two\nx");
}

#[test]
fn only_the_first_limit_bytes_are_read() {
    let page = format!("<p>{PARA1}</p><p>{PARA2}</p>");
    let mut mt = MainText::new();
    let cut = page.find(PARA2).unwrap() + 10;
    mt.extract(page.as_bytes(), cut);
    // Trailing whitespace never makes it into a block.
    assert_eq!(lines(mt.page_text()), [PARA1, PARA2[..10].trim_end()]);
    // A limit inside a tag drops the tag and what follows.
    let in_tag = page.find("</p>").unwrap() + 2;
    mt.extract(page.as_bytes(), in_tag);
    assert_eq!(lines(mt.page_text()), [PARA1]);
    mt.extract(page.as_bytes(), 0);
    assert!(mt.page_text().is_empty() && mt.text().is_empty());
}

#[test]
fn unclosed_skipped_elements_and_comments_hide_the_rest() {
    let mut mt = MainText::new();
    for page in [
        "<p>before</p><script>var x; <p>after</p>",
        "<p>before</p><!-- <p>after</p>",
        "<p>before</p><title>after",
    ] {
        mt.extract(page.as_bytes(), usize::MAX);
        assert_eq!(String::from_utf8_lossy(mt.page_text()), "before", "{page}");
    }
    mt.extract(
        b"<p>a</p><!----><p>b</p><!--><p>c</p><SCRIPT>x</Script ><p>d</p>",
        1000,
    );
    assert_eq!(String::from_utf8_lossy(mt.page_text()), "a\nb\nc\nd");
}

#[test]
fn a_page_of_links_or_short_lines_has_no_main_text() {
    let mut mt = MainText::new();
    let links: String = (0..50)
        .map(|i| format!("<li><a href=/{i}>story number {i} of the day</a></li>"))
        .collect();
    assert!(mt.extract(links.as_bytes(), usize::MAX).is_empty());
    let short: String = (0..50).map(|i| format!("<p>line {i}</p>")).collect();
    assert!(mt.extract(short.as_bytes(), usize::MAX).is_empty());
}

#[test]
fn blocks_past_the_cap_are_ignored() {
    let page = "<p>word</p>".repeat(MAX_BLOCKS + 10);
    let mut mt = MainText::new();
    mt.extract(page.as_bytes(), usize::MAX);
    assert!(mt.truncated());
    assert_eq!(mt.blocks().count(), MAX_BLOCKS);
    mt.extract(b"<p>word</p>", usize::MAX);
    assert!(!mt.truncated());
}

#[test]
fn a_long_footer_text_repeated_on_a_host_is_learned_as_template() {
    // A footer paragraph as long as an article paragraph, right after the article: the
    // shallow features keep it; the host's memory removes it after a few pages.
    let footer = "<footer><p>The Gazette is published by Gazette Media Limited, registered in \
                  England, and is a member of the independent press standards organisation \
                  whose code we follow.</p></footer>";
    // On a site that does not mark its article (with <article>, the footer is no candidate).
    let page = article_page(footer)
        .replace("<article>", "<div>")
        .replace("</article>", "</div>");
    let mut mt = MainText::new();
    let shallow = lines(mt.extract(page.as_bytes(), usize::MAX));
    assert!(shallow
        .last()
        .unwrap()
        .starts_with("The Gazette is published"));
    let mut memory = TemplateMemory::new(16);
    for p in 0..=crate::content::template_memory::TEMPLATE_MIN_PAGES {
        // Each page has its own article; the footer is the same.
        let own = page
            .replace("bridge", &format!("bridge {p}"))
            .replace("spring", &format!("spring {p}"))
            .replace("Costs", &format!("Costs {p}"));
        mt.extract_with_memory(own.as_bytes(), usize::MAX, &mut memory, b"gazette.example");
    }
    let text =
        lines(mt.extract_with_memory(page.as_bytes(), usize::MAX, &mut memory, b"gazette.example"));
    assert_eq!(text, [PARA1, PARA2, PARA3]);
    // Another host's memory knows nothing yet.
    let other = lines(mt.extract_with_memory(page.as_bytes(), usize::MAX, &mut memory, b"b"));
    assert_eq!(other, shallow);
}

/// Arbitrary markup-heavy bytes: tags, entities, comments, skipped elements, words.
fn html_soup() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(&b"<p>"[..]),
        Just(&b"</p>"[..]),
        Just(&b"<a href='>'>"[..]),
        Just(&b"</a>"[..]),
        Just(&b"<div class=x>"[..]),
        Just(&b"<li>"[..]),
        Just(&b"<script>"[..]),
        Just(&b"</script>"[..]),
        Just(&b"<!--"[..]),
        Just(&b"-->"[..]),
        Just(&b"<"[..]),
        Just(&b">"[..]),
        Just(&b"&amp;"[..]),
        Just(&b"&#x10FFFF;&#0;&#1"[..]),
        Just(&b"&"[..]),
        Just(&b" "[..]),
        Just(&b"words of article text here"[..]),
        Just(&b"\xff\xc3"[..]),
    ];
    proptest::collection::vec(piece, 0..200).prop_map(|ps| ps.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn output_is_bounded_and_reuse_changes_nothing(
        html in html_soup(),
        other in html_soup(),
        limit in 0usize..4000,
    ) {
        let mut fresh = MainText::new();
        fresh.extract(&html, limit);
        let read = html.len().min(limit);
        prop_assert!(fresh.page_text().len() <= read);
        prop_assert!(fresh.text().len() <= fresh.page_text().len());
        let mut kept = Vec::new();
        for b in fresh.blocks() {
            prop_assert!(b.words > 0 && b.link_words <= b.words);
            prop_assert!(!b.kept || b.kind == BlockKind::Long);
            if b.kept {
                kept.push(b.text);
            }
        }
        prop_assert_eq!(kept.join(&b'\n'), fresh.text());
        let mut reused = MainText::new();
        reused.extract(&other, usize::MAX);
        reused.extract(&html, limit);
        prop_assert_eq!(reused.page_text(), fresh.page_text());
        prop_assert_eq!(reused.text(), fresh.text());
    }
}

/// Running text: words of every length, single and repeated whitespace of each kind, a
/// reference, non-ASCII and punctuation, so that the 16- and 8-byte fast paths and the byte path
/// both run and hand over to each other at every offset.
fn running_text() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'Z'), Just(b'7')], 1..12),
        3 => Just(b" ".to_vec()),
        1 => Just(b"  ".to_vec()),
        1 => Just(b"\n".to_vec()),
        1 => Just(b"\t \r\n".to_vec()),
        1 => Just(b"&amp;".to_vec()),
        1 => Just(b"\xc3\xa9".to_vec()),
        1 => Just(b"-, ".to_vec()),
    ];
    proptest::collection::vec(piece, 0..120).prop_map(|ps| ps.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn a_paragraph_is_its_text_with_whitespace_collapsed_and_its_words_counted(
        text in running_text(),
    ) {
        let html = [&b"<p>"[..], &text, b"</p>"].concat();
        let mut mt = MainText::new();
        mt.extract(&html, usize::MAX);
        let decoded = String::from_utf8(text).unwrap().replace("&amp;", "&");
        let expect = decoded.split_ascii_whitespace().collect::<Vec<_>>().join(" ");
        let words = expect
            .as_bytes()
            .split(|&b| !super::super::is_word_byte(b))
            .filter(|w| !w.is_empty())
            .count() as u32;
        // A block without a word is dropped.
        let expect = if words == 0 { "" } else { &expect[..] };
        prop_assert_eq!(mt.page_text(), expect.as_bytes());
        let got_words: u32 = mt.blocks().map(|b| b.words).sum();
        prop_assert_eq!(got_words, words);
    }
}

#[test]
fn the_reader_text_keeps_the_headings_and_short_blocks_between_the_paragraphs() {
    let page = article_page("");
    let mut mt = MainText::new();
    mt.extract(page.as_bytes(), usize::MAX);
    let mut reader = Vec::new();
    mt.reader_text(&mut reader);
    // The fingerprint's text leaves short blocks out; a reader's keeps them.
    assert_eq!(
        lines(&reader),
        [
            "Bridge work to resume",
            "Updated 12 March 2024, 10:32",
            PARA1,
            "Costs",
            PARA2,
            PARA3
        ]
    );
    // A page without text: nothing.
    mt.extract(
        b"<html><body><nav><a href=/>Home</a></nav></body></html>",
        usize::MAX,
    );
    let mut none = Vec::new();
    mt.reader_text(&mut none);
    assert!(none.is_empty());
}

#[test]
fn title_and_language_come_from_the_head() {
    let page = "<!DOCTYPE html><HTML Lang=\"en-GB\" class=x><head><title>\n  Bridge &amp; road\n\
                </title><title>second</title></head><body><p>text</p></body></html>";
    let mut mt = MainText::new();
    mt.extract(page.as_bytes(), usize::MAX);
    let mut title = Vec::new();
    mt.title(page.as_bytes(), &mut title);
    assert_eq!(title, b"Bridge & road");
    assert_eq!(mt.lang(), b"en-GB");
    // Another page forgets them; a title cut by the limit keeps what was read.
    mt.extract(b"<html><title>Cut", usize::MAX);
    title.clear();
    mt.title(b"<html><title>Cut", &mut title);
    assert_eq!((title.as_slice(), mt.lang()), (&b"Cut"[..], &b""[..]));
}

#[test]
fn a_page_of_short_posts_gives_the_reader_every_post_and_no_navigation() {
    let posts: String = (0..6)
        .map(|i| {
            format!("<div class=post><p>Reply {i}: works for me on the new version.</p></div>")
        })
        .collect();
    let page = format!(
        "<html><body><nav><a href=/>Home</a> <a href=/forum>Forum</a> <a href=/help>Help</a>\
         </nav><h1>Upgrade problems</h1>{posts}<footer><a href=/terms>Terms</a></footer>\
         </body></html>"
    );
    let mut mt = MainText::new();
    // No long block: no main text for the fingerprint...
    assert!(mt.extract(page.as_bytes(), usize::MAX).is_empty());
    // ...but the reader gets the heading and every post, and no link list.
    let mut reader = Vec::new();
    mt.reader_text(&mut reader);
    let got = lines(&reader);
    assert_eq!(got.len(), 7, "{got:?}");
    assert_eq!(got[0], "Upgrade problems");
    assert!(got[1..].iter().all(|l| l.starts_with("Reply ")), "{got:?}");
}
