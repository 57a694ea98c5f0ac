use super::*;
use crate::discovery::visible_text::extract;

const TOPIC: &[u8] = b"Ocean tides: how the Moon's gravity raises tidal bulges in the ocean, \
spring tides and neap tides, tide tables for harbours and coastal navigation.";

fn term_list(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    terms(text.as_bytes(), &mut String::new(), |t| out.push(t));
    out
}

fn h(word: &str) -> u64 {
    xxh3_64(word.as_bytes())
}

#[test]
fn stopwords_are_sorted_for_the_search() {
    assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    assert!(is_stopword("the") && is_stopword("yourselves") && !is_stopword("tide"));
}

#[test]
fn terms_are_words_lowercased_and_stemmed() {
    assert_eq!(
        term_list("The TIDES of cities; glasses, bus, Moon's 42 x1 ab été ÉTÉ"),
        [
            h("tide"),
            h("city"),
            h("glasse"),
            h("bus"),
            h("moon"),
            h("été"),
            h("été")
        ]
    );
    // Too short, too long, digits only, stopwords: nothing.
    let long = "a".repeat(MAX_TERM_CHARS + 1);
    assert!(term_list(&format!("an of 1234567 {long} would")).is_empty());
    // S-stemmer exceptions.
    assert_eq!(
        term_list("toes corpus classes aies"),
        [h("toe"), h("corpus"), h("classe"), h("aie")]
    );
}

#[test]
fn on_topic_pages_score_above_off_topic_ones() {
    let mut m = TopicModel::new(TOPIC).unwrap();
    let on = m.score_page(b"Tide tables for the harbour: spring tides come with the full Moon, neap tides at quarter moon.");
    let near = m.score_page(
        b"The Moon orbits the Earth every month; its phases are new, quarter and full.",
    );
    let off =
        m.score_page(b"Bake the bread for forty minutes until golden; let it cool on a rack.");
    assert!(on > near && near > off, "on {on} near {near} off {off}");
    assert_eq!(off, 0.0, "no shared term");
    assert!((0.0..=1.0).contains(&on));
    // The topic itself is as close as it gets.
    let same = m.score_page(TOPIC);
    assert!(same > on && same <= 1.0, "{same}");
    assert_eq!(m.score_page(b""), 0.0);
    assert_eq!(m.documents(), 5);
}

#[test]
fn a_topic_needs_a_usable_term() {
    assert!(TopicModel::new(b"").is_none());
    assert!(TopicModel::new(b"the of and 12 a").is_none());
    assert!(TopicModel::new(b"tides").is_some());
}

#[test]
fn learned_idf_lowers_words_every_page_uses() {
    // A topic of two words; the crawl is on a site where every page says "python".
    let mut m = TopicModel::new(b"python snakes").unwrap();
    let python_before = m.score_text(b"python").unwrap();
    let snake_before = m.score_text(b"snake").unwrap();
    assert!(
        (python_before - snake_before).abs() < 1e-6,
        "symmetric before learning"
    );
    for i in 0..50 {
        m.score_page(format!("python tutorial lesson number {i} variables loops").as_bytes());
    }
    let python_after = m.score_text(b"python").unwrap();
    let snake_after = m.score_text(b"snake").unwrap();
    assert!(
        python_after < python_before,
        "{python_after} < {python_before}"
    );
    assert!(snake_after > snake_before, "{snake_after} > {snake_before}");
    // And a page about the snake now beats a page about the language.
    let snake_page = m.score_page(b"The python is a large snake; snakes of this family constrict.");
    let code_page = m.score_page(b"Python lists, python dictionaries and python loops.");
    assert!(snake_page > code_page, "{snake_page} > {code_page}");
    // Anchors do not count as documents.
    let docs = m.documents();
    m.score_text(b"python python");
    assert_eq!(m.documents(), docs);
    assert_eq!(m.score_text(b"the and of"), None);
}

/// A distinct made-up word for each `i` (letters only, so it is a term).
fn word(i: usize) -> String {
    let mut s = String::from("zq");
    let mut i = i;
    for _ in 0..5 {
        s.push((b'a' + (i % 26) as u8) as char);
        i /= 26;
    }
    s
}

#[test]
fn the_vocabulary_stays_bounded_and_keeps_what_matters() {
    let mut m = TopicModel::new(b"ocean tides zqrare").unwrap();
    let per_page = 2000;
    let pages = MAX_VOCABULARY * 3 / per_page;
    let mut most = 0;
    for p in 0..pages {
        let mut text = String::from("ocean common words everywhere ");
        for k in 0..per_page {
            text.push_str(&word(p * per_page + k));
            text.push(' ');
        }
        m.score_page(text.as_bytes());
        most = most.max(m.vocabulary());
    }
    assert!(most <= MAX_VOCABULARY, "{most}");
    assert!(
        most > MAX_VOCABULARY * 9 / 10,
        "the map filled, so forgetting was needed"
    );
    // The frequent words and the topic's (even unseen ones) survive every forgetting.
    assert_eq!(m.df.get(&h("everywhere")).copied(), Some(pages as u32));
    assert_eq!(m.df.get(&h("ocean")).copied(), Some(pages as u32));
    // A topic term never seen is not in the map, and unseen idf is the largest.
    assert!(m.idf(h("zqrare")) >= m.idf(h("ocean")));
    // One page with more new terms than the cap holds cannot break the bound either.
    let huge: String = (0..MAX_PAGE_TERMS)
        .map(|i| word(10_000_000 + i) + " ")
        .collect();
    for _ in 0..(MAX_VOCABULARY / MAX_PAGE_TERMS + 2) {
        m.score_page(huge.as_bytes());
        assert!(m.vocabulary() <= MAX_VOCABULARY);
    }
}

#[test]
fn anchors_are_scored_and_found_by_href() {
    let mut m = TopicModel::new(TOPIC).unwrap();
    let html = br#"<p>Harbour guide</p><a href="/tides">Tide tables and spring tides</a>
<a href="/bread">Bread recipes</a><a href="/tides">tides</a><a href="/x">the</a>"#;
    let mut page = VisibleText::new();
    extract(html, &mut page);
    let mut scores = Vec::new();
    m.score_anchors(&page, &mut scores);
    assert_eq!(scores.len(), 2, "one per href with terms");
    let tides = anchor_score(&scores, b"/tides").unwrap();
    let bread = anchor_score(&scores, b"/bread").unwrap();
    assert!(tides > bread, "{tides} > {bread}");
    assert_eq!(anchor_score(&scores, b"/x"), None);
    assert_eq!(anchor_score(&scores, b"/nowhere"), None);
}

#[test]
fn scores_become_priorities() {
    let levels = 4;
    assert_eq!(priority_level(1.0, levels), 0);
    assert_eq!(priority_level(0.0, levels), levels - 1);
    assert_eq!(priority_level(f32::NAN, levels), levels - 1);
    assert_eq!(priority_level(7.0, levels), 0);
    assert_eq!(priority_level(0.5, 1), 0);
    assert_eq!(priority_level(0.5, 0), 0);
    let mut last = 0;
    for i in (0..=100).rev() {
        let p = priority_level(i as f32 / 100.0, levels);
        assert!(p >= last && p < levels);
        last = p;
    }
    // The anchor moves a link, within what the page gave.
    assert!(link_score(0.1, Some(0.9)) > link_score(0.1, None));
    assert!(link_score(0.9, Some(0.0)) < link_score(0.9, None));
    assert_eq!(link_score(0.25, None), 0.5);
    assert!((0.0..=1.0).contains(&link_score(2.0, Some(-1.0))));
    // A typical on-topic cosine (0.2) reaches the upper half of the levels.
    assert!(priority_level(link_score(0.2, None), levels) < levels / 2 + 1);
}
