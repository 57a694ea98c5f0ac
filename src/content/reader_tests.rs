use super::super::main_text::MainText;
use super::super::regions::{MAX_DEPTH, MAX_NODES};

/// A sentence of `n` words, different per `seed`.
fn words(seed: usize, n: usize) -> String {
    (0..n)
        .map(|i| format!("w{seed}x{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn reader(page: &str) -> Vec<String> {
    let mut mt = MainText::new();
    mt.extract(page.as_bytes(), usize::MAX);
    let mut out = Vec::new();
    mt.reader_text(&mut out);
    String::from_utf8_lossy(&out)
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn containers_named_as_template_are_left_out_whole() {
    // Long text in a sidebar, a related-posts box and a cookie notice: blocks that a
    // block-by-block selection keeps (not link text, long), dropped by what holds them.
    let page = format!(
        "<html><body><div class=wrap><div class=\"entry-content\"><h1>Title here</h1>\
         <p>{}</p><p>{}</p><p>{}</p></div>\
         <div class=\"related-posts\"><p>{}</p></div>\
         <div id=sidebar><p>{}</p></div>\
         <div role=contentinfo><p>{}</p></div>\
         <div class=\"cookie-notice\"><p>{}</p></div></div></body></html>",
        words(1, 40),
        words(2, 40),
        words(3, 40),
        words(4, 30),
        words(5, 30),
        words(6, 20),
        words(7, 20),
    );
    assert_eq!(
        reader(&page),
        ["Title here", &words(1, 40), &words(2, 40), &words(3, 40)]
    );
}

#[test]
fn a_template_name_on_a_wrapper_of_most_of_the_page_is_not_believed() {
    // A theme's class on the element around everything (`menu-open` on the page wrapper):
    // the text is still the page's.
    let page = format!(
        "<html><body><div class=\"page menu-open\"><p>{}</p><p>{}</p></div></body></html>",
        words(1, 40),
        words(2, 40)
    );
    assert_eq!(reader(&page), [words(1, 40), words(2, 40)]);
}

#[test]
fn the_region_the_page_names_is_taken_whole_with_its_short_blocks() {
    // Short lines (a list of steps, a caption) inside `main` are content; a long paragraph
    // outside it, in no named container, is not.
    let page = format!(
        "<html><body><div><p>{}</p></div><main><h2>Steps</h2><ul><li>Open the lid</li>\
         <li>Pour the water</li></ul><p>{}</p><p>{}</p></main><div><p>{}</p></div>\
         </body></html>",
        words(9, 15),
        words(1, 40),
        words(2, 40),
        words(8, 15),
    );
    assert_eq!(
        reader(&page),
        [
            "Steps",
            "Open the lid",
            "Pour the water",
            &words(1, 40),
            &words(2, 40)
        ]
    );
}

#[test]
fn repeated_article_cards_give_their_parent_not_the_longest_card() {
    let cards: String = (0..4)
        .map(|i| {
            format!(
                "<article><h2>Item {i}</h2><p>{}</p></article>",
                words(i, 20 + i)
            )
        })
        .collect();
    let page = format!(
        "<html><body><header><p>{}</p></header><section>{cards}</section>\
         <footer><p>{}</p></footer></body></html>",
        words(8, 15),
        words(9, 15)
    );
    let got = reader(&page);
    assert_eq!(got.len(), 8, "{got:?}");
    assert_eq!(got[0], "Item 0");
    assert_eq!(got[7], words(3, 23));
}

#[test]
fn an_articles_comments_are_left_out_and_a_threads_kept() {
    // A WordPress article (100 words of paragraphs and more): its comments area holds
    // less than all the page.
    let comments: String = (0..3)
        .map(|i| format!("<li class=comment><p>{}</p></li>", words(10 + i, 20)))
        .collect();
    let article = format!(
        "<html><body><div class=post><p>{}</p><p>{}</p></div>\
         <div id=comments class=comments-area><h2>3 Comments</h2>\
         <ol class=comment-list>{comments}</ol></div></body></html>",
        words(1, 60),
        words(2, 60)
    );
    assert_eq!(reader(&article), [words(1, 60), words(2, 60)]);
    // A thread (a forum that calls its posts comments): no article outside the comments,
    // which are the page's content.
    let comments: String = (0..12)
        .map(|i| format!("<li class=comment><p>{}</p></li>", words(10 + i, 20)))
        .collect();
    let thread = format!(
        "<html><body><p>{}</p><div class=comments><ol>{comments}</ol></div></body></html>",
        words(1, 40)
    );
    let got = reader(&thread);
    assert_eq!(got.len(), 13, "{got:?}");
    assert_eq!(got[12], words(21, 20));
}

#[test]
fn a_cms_taxonomy_on_the_article_element_does_not_make_it_template() {
    // `author-…` and `tag-…` classes on each post of a listing are its author and tags.
    let cards: String = (0..4)
        .map(|i| {
            format!(
                "<article class=\"post author-ann-lee tag-news\"><h2>Item {i}</h2><p>{}</p>\
                 </article>",
                words(i, 20)
            )
        })
        .collect();
    let page = format!("<html><body><section>{cards}</section></body></html>");
    assert_eq!(reader(&page).len(), 8);
}

#[test]
fn an_articles_trailer_is_left_out_but_not_a_closing_list() {
    let page = format!(
        "<html><body><article><h1>Headline</h1><p>{}</p><p>{}</p>\
         <ul><li>First closing step</li><li>Second closing step</li></ul>\
         <p>Share this:</p><h3>Posted in News</h3><p>Previous post</p></article></body></html>",
        words(1, 40),
        words(2, 40)
    );
    assert_eq!(
        reader(&page),
        [
            "Headline",
            &words(1, 40),
            &words(2, 40),
            "First closing step",
            "Second closing step"
        ]
    );
    // A region of short items is no article: its last items stay.
    let items: String = (0..8).map(|i| format!("<p>Item number {i}</p>")).collect();
    let listing = format!(
        "<html><body><main><p>{}</p>{items}</main></body></html>",
        words(1, 20)
    );
    assert_eq!(reader(&listing).len(), 9);
}

#[test]
fn noscript_text_is_page_text() {
    // What a reader without scripts sees (a forum thread's posts, on some forums).
    let page = format!(
        "<html><body><noscript><div class=post><p>{}</p></div></noscript></body></html>",
        words(1, 30)
    );
    assert_eq!(reader(&page), [words(1, 30)]);
}

#[test]
fn a_fingerprint_only_extractor_gives_the_same_main_text_and_no_reader_text() {
    let page = format!(
        "<html><body><nav><a href=/>Home</a></nav><article><p>{}</p><p>{}</p></article>\
         </body></html>",
        words(1, 30),
        words(2, 30)
    );
    let mut full = MainText::new();
    let mut print = MainText::fingerprint_only();
    assert_eq!(
        full.extract(page.as_bytes(), usize::MAX),
        print.extract(page.as_bytes(), usize::MAX)
    );
    let mut out = Vec::new();
    print.reader_text(&mut out);
    assert!(out.is_empty());
    print.set_reader(true);
    print.extract(page.as_bytes(), usize::MAX);
    print.reader_text(&mut out);
    assert_eq!(
        out,
        format!("{}\n{}", words(1, 30), words(2, 30)).as_bytes()
    );
}

#[test]
fn deep_and_mismatched_nesting_stays_bounded() {
    // Deeper than the tree follows, then end tags that close nothing, then text: every
    // block still belongs to a container and the text comes out.
    let mut page = String::from("<html><body>");
    page.push_str(&"<div>".repeat(MAX_DEPTH + 50));
    page.push_str(&format!("<p>{}</p>", words(1, 30)));
    page.push_str(&"</section></ul>".repeat(1000));
    page.push_str(&"</div>".repeat(MAX_DEPTH + 50));
    page.push_str(&format!("<p>{}</p>", words(2, 30)));
    assert_eq!(reader(&page), [words(1, 30), words(2, 30)]);
    // More containers than a page may have: the rest fold into their parent.
    let many = format!(
        "<html><body>{}<p>{}</p></body></html>",
        "<div></div>".repeat(MAX_NODES + 10),
        words(3, 30)
    );
    assert_eq!(reader(&many), [words(3, 30)]);
}
