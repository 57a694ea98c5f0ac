//! Focused crawling on a generated topical web (loopback): 4 topics × 250 pages, each page's
//! text mostly its topic's words, its links mostly to its own topic. With `--focus` and a
//! page budget, the share of fetched pages on the topic (the harvest rate) is at least 3×
//! that of the same crawl without it; crawl.log and stats.json carry the scores.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::static_site::StaticSite;
use common::{read_log, temp_dir};

const TOPICS: [&[&str]; 4] = [
    &[
        "telescope",
        "galaxy",
        "nebula",
        "orbit",
        "planet",
        "comet",
        "asteroid",
        "stellar",
        "supernova",
        "quasar",
        "eclipse",
        "meteor",
        "cosmic",
        "gravity",
        "spectrum",
        "pulsar",
    ],
    &[
        "recipe", "simmer", "oven", "garlic", "butter", "saucepan", "flour", "roast", "spice",
        "dough", "braise", "skillet", "pastry", "vinegar", "marinade", "broth",
    ],
    &[
        "sailing",
        "harbor",
        "mast",
        "keel",
        "rudder",
        "anchor",
        "regatta",
        "spinnaker",
        "hull",
        "tide",
        "mooring",
        "starboard",
        "dinghy",
        "halyard",
        "jib",
        "ketch",
    ],
    &[
        "chess",
        "bishop",
        "knight",
        "gambit",
        "checkmate",
        "castling",
        "pawn",
        "endgame",
        "opening",
        "rook",
        "stalemate",
        "tournament",
        "grandmaster",
        "blitz",
        "sicilian",
        "fianchetto",
    ],
];
const COMMON: [&str; 8] = [
    "article",
    "information",
    "website",
    "reader",
    "section",
    "update",
    "archive",
    "contact",
];
const PAGES: usize = 250;

struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

fn write_web(root: &Path) {
    let mut rng = Lcg(7);
    let mut index = String::from("<html><body><h1>Welcome</h1>");
    for (t, words) in TOPICS.iter().enumerate() {
        index.push_str(&format!(
            "<a href=\"/t{t}/p0.html\">{} {}</a> ",
            words[0], words[1]
        ));
    }
    index.push_str("</body></html>");
    std::fs::write(root.join("index.html"), index).unwrap();
    for (t, words) in TOPICS.iter().enumerate() {
        std::fs::create_dir_all(root.join(format!("t{t}"))).unwrap();
        for p in 0..PAGES {
            let mut body = format!(
                "<html><head><title>{}</title></head><body><p>",
                words[p % words.len()]
            );
            for _ in 0..120 {
                let w = if rng.below(5) == 0 {
                    COMMON[rng.below(COMMON.len())]
                } else {
                    words[rng.below(words.len())]
                };
                body.push_str(w);
                body.push(' ');
            }
            body.push_str("</p>");
            for l in 0..6 {
                // Five links within the topic, one to another.
                let to = if l < 5 { t } else { (t + 1 + rng.below(3)) % 4 };
                let q = rng.below(PAGES);
                let anchor = TOPICS[to][rng.below(TOPICS[to].len())];
                body.push_str(&format!("<a href=\"/t{to}/p{q}.html\">{anchor}</a> "));
            }
            body.push_str("</body></html>");
            std::fs::write(root.join(format!("t{t}/p{p}.html")), body).unwrap();
        }
    }
}

/// Crawls the web with `extra` flags and returns (share of fetched pages on topic 0, the
/// stats.json text).
fn crawl(site: &StaticSite, name: &str, extra: &[&str]) -> (f64, String) {
    let out = temp_dir(name).join("crawl");
    let home = site.url("/");
    let mut args = vec![
        "crawl",
        "--allow-net",
        "127.0.0.0/8",
        "--delay-ms",
        "0",
        "--max-pages",
        "150",
        "-q",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    args.push(&home);
    let r = common::spinneret(&args, Duration::from_secs(120));
    assert!(
        matches!(r.status.code(), Some(0 | 9)),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let pages: Vec<_> = read_log(&out)
        .into_iter()
        .filter(|l| l.status == 200 && l.url.contains("/t"))
        .collect();
    let on_topic = pages.iter().filter(|l| l.url.contains("/t0/")).count();
    // A focused crawl logs each page's score, and only a focused one.
    let scored = pages.iter().filter(|l| l.relevance.is_some()).count();
    let focused = extra.contains(&"--focus");
    assert_eq!(scored, if focused { pages.len() } else { 0 });
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    (on_topic as f64 / pages.len().max(1) as f64, stats)
}

#[test]
fn a_focused_crawl_harvests_three_times_the_pages_on_its_topic() {
    let root = temp_dir("focus-web");
    write_web(&root);
    let site = StaticSite::start(&root, Duration::from_secs(180));
    let topic = root.join("topic.txt");
    std::fs::write(
        &topic,
        "Astronomy: telescopes, galaxies and nebulae, planets in orbit, comets and asteroids, \
         supernova and quasar spectra, eclipses and meteors.",
    )
    .unwrap();
    let (plain, _) = crawl(&site, "focus-off", &[]);
    let (focused, stats) = crawl(&site, "focus-on", &["--focus", topic.to_str().unwrap()]);
    eprintln!("harvest: {plain:.3} without --focus, {focused:.3} with");
    assert!(
        focused >= 3.0 * plain,
        "harvest {focused:.3} with --focus, {plain:.3} without"
    );
    assert!(stats.contains("\"harvest_rate\""), "{stats}");
    assert!(stats.contains("\"harvest_curve\": [["), "{stats}");
}
