use super::*;
use proptest::prelude::*;
use std::time::Instant;

const TOKEN: &str = "spinneret";

/// RFC 9309 §5.1.
const RFC_SIMPLE: &str = "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\nUser-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\nUser-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\nUser-Agent: quxbot\n\nEOF\n";
/// RFC 9309 §5.2.
const RFC_LONGEST: &str =
    "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n";

/// (what the row checks, robots.txt, product token, path, allowed?)
const CASES: &[(&str, &str, &str, &str, bool)] = &[
    // ---- Records and syntax ----
    ("disallow prefix", "User-agent: *\nDisallow: /a", TOKEN, "/a/b", false),
    ("disallow leaves others", "User-agent: *\nDisallow: /a", TOKEN, "/b", true),
    ("keys case-insensitive", "USER-AGENT: *\nDISALLOW: /a", TOKEN, "/a", false),
    ("mixed-case keys", "uSeR-aGeNt: *\ndIsAlLoW: /a", TOKEN, "/a", false),
    ("whitespace around colon", "User-agent  :  *\nDisallow\t:\t/a  ", TOKEN, "/a", false),
    ("no space after colon", "User-agent:*\nDisallow:/a", TOKEN, "/a", false),
    ("comment after value", "User-agent: * # all\nDisallow: /a # secret\n", TOKEN, "/a", false),
    ("comment does not leak into pattern", "User-agent: *\nDisallow: /a#b\n", TOKEN, "/ab", false),
    ("full-line comment ignored", "# Disallow: /a\nUser-agent: *\n#Disallow: /b\nDisallow: /c", TOKEN, "/b", true),
    ("CR line ends", "User-agent: *\rDisallow: /a\r", TOKEN, "/a", false),
    ("CRLF line ends", "User-agent: *\r\nDisallow: /a\r\n", TOKEN, "/a", false),
    ("LF line ends", "User-agent: *\nDisallow: /a\n", TOKEN, "/a", false),
    ("BOM ignored", "\u{feff}User-agent: *\nDisallow: /a", TOKEN, "/a", false),
    ("line without colon ignored", "User-agent: *\nDisallow /b\nDisallow: /a", TOKEN, "/b", true),
    ("line without colon does not end group", "User-agent: *\nnonsense\nDisallow: /a", TOKEN, "/a", false),
    ("sitemap ignored, group continues", "User-agent: *\nSitemap: https://x/s.xml\nDisallow: /a", TOKEN, "/a", false),
    ("unknown key ignored", "User-agent: *\nNoindex: /a\nDisallow: /b", TOKEN, "/a", true),
    ("rules before any user-agent ignored", "Disallow: /a\nUser-agent: *\nDisallow: /b", TOKEN, "/a", true),
    ("empty disallow is no rule", "User-agent: *\nDisallow:", TOKEN, "/a", true),
    ("empty file allows all", "", TOKEN, "/a", true),
    ("blank lines do not end a group", "User-agent: *\n\n\nDisallow: /a", TOKEN, "/a", false),
    // ---- Groups ----
    ("our group wins over star", "User-agent: *\nDisallow: /\n\nUser-agent: spinneret\nDisallow: /x", TOKEN, "/a", true),
    ("our group rules apply", "User-agent: *\nDisallow: /\n\nUser-agent: spinneret\nDisallow: /x", TOKEN, "/x", false),
    ("agent match case-insensitive", "User-agent: SpInNeReT\nDisallow: /a", TOKEN, "/a", false),
    ("agent with version matches", "User-agent: spinneret/1.0\nDisallow: /a", TOKEN, "/a", false),
    ("our token with version", "User-agent: spinneret\nDisallow: /a", "spinneret/2.1", "/a", false),
    ("agent token is letters _ - only", "User-agent: spinneret 1.0 (+http://x)\nDisallow: /a", TOKEN, "/a", false),
    ("longer agent is another bot", "User-agent: spinneretbot\nDisallow: /a", TOKEN, "/a", true),
    ("prefix of our token is another bot", "User-agent: spin\nDisallow: /a", TOKEN, "/a", true),
    ("star-prefixed name is not star", "User-agent: *bot\nDisallow: /a", TOKEN, "/a", true),
    ("other bot only: allow all", "User-agent: otherbot\nDisallow: /", TOKEN, "/a", true),
    ("consecutive agents share a group", "User-agent: otherbot\nUser-agent: spinneret\nDisallow: /a", TOKEN, "/a", false),
    ("agent after rules starts new group", "User-agent: spinneret\nDisallow: /a\nUser-agent: otherbot\nDisallow: /b", TOKEN, "/b", true),
    ("all our groups merged (1)", "User-agent: spinneret\nDisallow: /a\n\nUser-agent: otherbot\nDisallow: /b\n\nUser-agent: spinneret\nDisallow: /c", TOKEN, "/a", false),
    ("all our groups merged (2)", "User-agent: spinneret\nDisallow: /a\n\nUser-agent: otherbot\nDisallow: /b\n\nUser-agent: spinneret\nDisallow: /c", TOKEN, "/c", false),
    ("all star groups merged", "User-agent: *\nDisallow: /a\n\nUser-agent: otherbot\nDisallow: /b\n\nUser-agent: *\nDisallow: /c", TOKEN, "/c", false),
    ("star rules dropped when ours exists", "User-agent: *\nDisallow: /a\n\nUser-agent: spinneret\nDisallow: /c", TOKEN, "/a", true),
    ("empty our group still replaces star", "User-agent: *\nDisallow: /\n\nUser-agent: spinneret\n", TOKEN, "/a", true),
    ("group naming star and us", "User-agent: *\nUser-agent: spinneret\nDisallow: /a", TOKEN, "/a", false),
    // ---- Precedence ----
    ("longest match wins: allow", "User-agent: *\nAllow: /p\nDisallow: /", TOKEN, "/page", true),
    ("allow wins a tie", "User-agent: *\nAllow: /folder\nDisallow: /folder", TOKEN, "/folder/page", true),
    ("allow wins a tie, order reversed", "User-agent: *\nDisallow: /folder\nAllow: /folder", TOKEN, "/folder/page", true),
    ("longer wildcard disallow wins", "User-agent: *\nAllow: /page\nDisallow: /*.htm", TOKEN, "/page.htm", false),
    ("allow /$ only root (1)", "User-agent: *\nAllow: /$\nDisallow: /", TOKEN, "/", true),
    ("allow /$ only root (2)", "User-agent: *\nAllow: /$\nDisallow: /", TOKEN, "/page.htm", false),
    ("length counts normalized octets", "User-agent: *\nAllow: /%61%62\nDisallow: /ab*", TOKEN, "/ab", false),
    // ---- RFC 9309 §5 ----
    ("rfc simple: star gif", RFC_SIMPLE, TOKEN, "/x/y.gif", false),
    ("rfc simple: star gif$ not with query", RFC_SIMPLE, TOKEN, "/x/y.gif?z", true),
    ("rfc simple: star /example/", RFC_SIMPLE, TOKEN, "/example/a", false),
    ("rfc simple: star /publications/", RFC_SIMPLE, TOKEN, "/publications/a", true),
    ("rfc simple: foobot page", RFC_SIMPLE, "foobot", "/example/page.html", true),
    ("rfc simple: foobot gif", RFC_SIMPLE, "foobot", "/example/allowed.gif", true),
    ("rfc simple: foobot else", RFC_SIMPLE, "foobot", "/publications/a", false),
    ("rfc simple: barbot page", RFC_SIMPLE, "barbot", "/example/page.html", false),
    ("rfc simple: bazbot page", RFC_SIMPLE, "bazbot", "/example/page.html", false),
    ("rfc simple: bazbot gif", RFC_SIMPLE, "bazbot", "/a.gif", true),
    ("rfc simple: quxbot all", RFC_SIMPLE, "quxbot", "/example/page.html", true),
    ("rfc longest: dir allowed", RFC_LONGEST, "foobot", "/example/page/", true),
    ("rfc longest: gif disallowed", RFC_LONGEST, "foobot", "/example/page/disallowed.gif", false),
    // ---- Google's documented matching ----
    ("/ root", "User-agent: *\nDisallow: /", TOKEN, "/", false),
    ("/* like /", "User-agent: *\nDisallow: /*", TOKEN, "/any/thing", false),
    ("/$ root only (1)", "User-agent: *\nDisallow: /$", TOKEN, "/", false),
    ("/$ root only (2)", "User-agent: *\nDisallow: /$", TOKEN, "/page.html", true),
    ("/fish: /fish", "User-agent: *\nDisallow: /fish", TOKEN, "/fish", false),
    ("/fish: /fish.html", "User-agent: *\nDisallow: /fish", TOKEN, "/fish.html", false),
    ("/fish: /fish/salmon.html", "User-agent: *\nDisallow: /fish", TOKEN, "/fish/salmon.html", false),
    ("/fish: /fishheads", "User-agent: *\nDisallow: /fish", TOKEN, "/fishheads/yummy.html", false),
    ("/fish: query", "User-agent: *\nDisallow: /fish", TOKEN, "/fish.php?id=anything", false),
    ("/fish: not /Fish.asp", "User-agent: *\nDisallow: /fish", TOKEN, "/Fish.asp", true),
    ("/fish: not /catfish", "User-agent: *\nDisallow: /fish", TOKEN, "/catfish", true),
    ("/fish: not /?id=fish", "User-agent: *\nDisallow: /fish", TOKEN, "/?id=fish", true),
    ("/fish: not /desert/fish", "User-agent: *\nDisallow: /fish", TOKEN, "/desert/fish", true),
    ("/fish*: /fish.html", "User-agent: *\nDisallow: /fish*", TOKEN, "/fish.html", false),
    ("/fish*: /fishheads", "User-agent: *\nDisallow: /fish*", TOKEN, "/fishheads/yummy.html", false),
    ("/fish*: not /catfish", "User-agent: *\nDisallow: /fish*", TOKEN, "/catfish", true),
    ("/fish*: not /Fish.asp", "User-agent: *\nDisallow: /fish*", TOKEN, "/Fish.asp", true),
    ("/fish/: /fish/", "User-agent: *\nDisallow: /fish/", TOKEN, "/fish/", false),
    ("/fish/: query", "User-agent: *\nDisallow: /fish/", TOKEN, "/fish/?id=anything", false),
    ("/fish/: below", "User-agent: *\nDisallow: /fish/", TOKEN, "/fish/salmon.htm", false),
    ("/fish/: not /fish", "User-agent: *\nDisallow: /fish/", TOKEN, "/fish", true),
    ("/fish/: not /fish.html", "User-agent: *\nDisallow: /fish/", TOKEN, "/fish.html", true),
    ("/fish/: not /animals/fish/", "User-agent: *\nDisallow: /fish/", TOKEN, "/animals/fish/", true),
    ("/fish/: not /Fish/Salmon.asp", "User-agent: *\nDisallow: /fish/", TOKEN, "/Fish/Salmon.asp", true),
    ("/*.php: /index.php", "User-agent: *\nDisallow: /*.php", TOKEN, "/index.php", false),
    ("/*.php: folder", "User-agent: *\nDisallow: /*.php", TOKEN, "/folder/filename.php", false),
    ("/*.php: query", "User-agent: *\nDisallow: /*.php", TOKEN, "/folder/filename.php?parameters", false),
    ("/*.php: middle", "User-agent: *\nDisallow: /*.php", TOKEN, "/folder/any.php.file.html", false),
    ("/*.php: trailing slash", "User-agent: *\nDisallow: /*.php", TOKEN, "/filename.php/", false),
    ("/*.php: not /", "User-agent: *\nDisallow: /*.php", TOKEN, "/", true),
    ("/*.php: not .PHP", "User-agent: *\nDisallow: /*.php", TOKEN, "/windows.PHP", true),
    ("/*.php$: /filename.php", "User-agent: *\nDisallow: /*.php$", TOKEN, "/filename.php", false),
    ("/*.php$: folder", "User-agent: *\nDisallow: /*.php$", TOKEN, "/folder/filename.php", false),
    ("/*.php$: not query", "User-agent: *\nDisallow: /*.php$", TOKEN, "/filename.php?parameters", true),
    ("/*.php$: not slash", "User-agent: *\nDisallow: /*.php$", TOKEN, "/filename.php/", true),
    ("/*.php$: not php5", "User-agent: *\nDisallow: /*.php$", TOKEN, "/filename.php5", true),
    ("/*.php$: not .PHP", "User-agent: *\nDisallow: /*.php$", TOKEN, "/windows.PHP", true),
    ("/fish*.php: /fish.php", "User-agent: *\nDisallow: /fish*.php", TOKEN, "/fish.php", false),
    ("/fish*.php: deep", "User-agent: *\nDisallow: /fish*.php", TOKEN, "/fishheads/catfish.php?parameters", false),
    ("/fish*.php: not /Fish.PHP", "User-agent: *\nDisallow: /fish*.php", TOKEN, "/Fish.PHP", true),
    // ---- Wildcards ----
    ("$ in the middle is literal", "User-agent: *\nDisallow: /a$b", TOKEN, "/a$b/c", false),
    ("anchored exact", "User-agent: *\nDisallow: /a$", TOKEN, "/a/", true),
    ("double star", "User-agent: *\nDisallow: /a**b$", TOKEN, "/axxb", false),
    ("star then anchor", "User-agent: *\nDisallow: /a*$", TOKEN, "/a/anything", false),
    ("greedy segments in order", "User-agent: *\nDisallow: /*a*b*c", TOKEN, "/cba-abc", false),
    ("segments out of order", "User-agent: *\nDisallow: /*a*b*c", TOKEN, "/cba", true),
    ("anchored tail overlapping middle", "User-agent: *\nDisallow: /*ab*b$", TOKEN, "/ab", true),
    ("anchored tail after middle", "User-agent: *\nDisallow: /*ab*b$", TOKEN, "/abb", false),
    // ---- Percent-encoding normalization ----
    ("unreserved decoded in path", "User-agent: *\nDisallow: /foo/bar/baz", TOKEN, "/foo/bar/%62%61%7A", false),
    ("unreserved decoded in pattern", "User-agent: *\nDisallow: /foo/bar/%62%61%7A", TOKEN, "/foo/bar/baz", false),
    ("raw UTF-8 pattern vs encoded path", "User-agent: *\nDisallow: /foo/bar/\u{30c4}", TOKEN, "/foo/bar/%E3%83%84", false),
    ("encoded pattern vs raw UTF-8 path", "User-agent: *\nDisallow: /foo/bar/%E3%83%84", TOKEN, "/foo/bar/\u{30c4}", false),
    ("hex case normalized", "User-agent: *\nDisallow: /a%2fb", TOKEN, "/a%2Fb", false),
    ("reserved stays encoded", "User-agent: *\nDisallow: /a/b", TOKEN, "/a%2Fb", true),
    ("space encoded", "User-agent: *\nDisallow: /a b", TOKEN, "/a%20b", false),
    ("encoded star is literal", "User-agent: *\nDisallow: /a%2Ab", TOKEN, "/axb", true),
    ("lone percent kept", "User-agent: *\nDisallow: /a%zz", TOKEN, "/a%zz", false),
    // ---- /robots.txt ----
    ("robots.txt always allowed", "User-agent: *\nDisallow: /", TOKEN, "/robots.txt", true),
    ("robots.txt with query allowed", "User-agent: *\nDisallow: /", TOKEN, "/robots.txt?x=1", true),
    ("robots.txt.bak not special", "User-agent: *\nDisallow: /", TOKEN, "/robots.txt.bak", false),
    ("empty path is /", "User-agent: *\nDisallow: /$", TOKEN, "", false),
];

#[test]
fn table() {
    let mut failures = Vec::new();
    for &(name, body, token, path, want) in CASES {
        let got = Robots::parse(body.as_bytes(), token).is_allowed(path);
        if got != want {
            failures.push(format!("{name}: {path:?} allowed={got}, want {want}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn crawl_delay_parsing() {
    let cases: &[(&str, Option<Duration>)] = &[
        (
            "User-agent: *\nCrawl-delay: 10",
            Some(Duration::from_secs(10)),
        ),
        (
            "User-agent: *\ncrawl-DELAY : 0.5",
            Some(Duration::from_millis(500)),
        ),
        ("User-agent: *\nCrawl-delay: fast", None),
        ("User-agent: *\nCrawl-delay: -3", None),
        ("User-agent: *\nCrawl-delay: NaN", None),
        ("User-agent: *\nCrawl-delay: 1e30", Some(MAX_CRAWL_DELAY)),
        ("User-agent: otherbot\nCrawl-delay: 5", None),
        ("Crawl-delay: 5\nUser-agent: *", None),
        // Merged groups: the most polite wins.
        (
            "User-agent: *\nCrawl-delay: 2\n\nUser-agent: *\nCrawl-delay: 7",
            Some(Duration::from_secs(7)),
        ),
        // Ours overrides star.
        (
            "User-agent: *\nCrawl-delay: 9\n\nUser-agent: spinneret\nCrawl-delay: 1",
            Some(Duration::from_secs(1)),
        ),
    ];
    for &(body, want) in cases {
        assert_eq!(
            Robots::parse(body.as_bytes(), TOKEN).crawl_delay(),
            want,
            "{body:?}"
        );
    }
}

#[test]
fn rule_count_and_constructors() {
    let r = Robots::parse(
        b"User-agent: *\nDisallow: /a\nAllow: /b\nDisallow:\nSitemap: /s",
        TOKEN,
    );
    assert_eq!(r.rule_count(), 2);
    assert_eq!(Robots::allow_all().rule_count(), 0);
    assert!(Robots::allow_all().is_allowed("/x"));
    let d = Robots::disallow_all();
    assert!(!d.is_allowed("/x"));
    assert!(!d.is_allowed(""));
    assert!(!d.is_allowed("?q"));
    assert!(d.is_allowed("/robots.txt"));
}

#[test]
fn only_first_512_kib_parsed() {
    let mut body = b"User-agent: *\nDisallow: /early\n".to_vec();
    let filler = b"# padding padding padding padding padding padding padding\n";
    while body.len() < MAX_ROBOTS_BYTES - 20 {
        body.extend_from_slice(filler);
    }
    // A rule the limit cuts in two: dropped, not truncated to a broader `/cu`.
    body.extend_from_slice(b"Allow: /cut-in-two-by-the-limit\n");
    while body.len() < 10 * 1024 * 1024 {
        body.extend_from_slice(b"Disallow: /late\n");
    }
    let r = Robots::parse(&body, TOKEN);
    assert!(!r.is_allowed("/early"));
    assert!(r.is_allowed("/late"));
    assert_eq!(r.rule_count(), 1);
}

#[test]
fn line_of_100_kb() {
    let long = "a".repeat(100 * 1024);
    let body = format!(
        "User-agent: *\nDisallow: /{long}\n# {long}\nUser-agent: {long}\nUser-agent: *\nDisallow: /x\n"
    );
    let r = Robots::parse(body.as_bytes(), TOKEN);
    // The over-long Disallow is cut to a prefix, not dropped; the lines after it still count.
    assert_eq!(r.rule_count(), 2);
    assert!(!r.is_allowed("/x"));
    assert!(!r.is_allowed(&format!("/{long}")));
    assert!(r.is_allowed("/aaa"));
}

/// `/` and then `a`s: a path or pattern of `len` octets, normalized or not.
fn long_path(len: usize) -> String {
    format!("/{}", "a".repeat(len - 1))
}

#[test]
fn rule_and_pattern_caps() {
    let mut body = String::from("User-agent: *\n");
    for i in 0..MAX_RULES + 50 {
        body.push_str(&format!("Disallow: /{i}/\n"));
    }
    assert_eq!(
        Robots::parse(body.as_bytes(), TOKEN).rule_count(),
        MAX_RULES
    );

    let parse = |rule: &str| Robots::parse(format!("User-agent: *\n{rule}").as_bytes(), TOKEN);
    let at_cap = long_path(MAX_PATTERN_BYTES);
    let over = long_path(MAX_PATTERN_BYTES + 1);
    assert_eq!(parse(&format!("Disallow: {at_cap}")).rule_count(), 1);
    assert_eq!(parse(&format!("Disallow: {over}")).rule_count(), 1);
    assert_eq!(parse(&format!("Allow: {at_cap}")).rule_count(), 1);
    assert_eq!(parse(&format!("Allow: {over}")).rule_count(), 0);
    // The `$` counts: at the cap it still anchors; one octet over, the cut drops it.
    let anchored_at_cap = long_path(MAX_PATTERN_BYTES - 1);
    let r = parse(&format!("Disallow: {anchored_at_cap}$"));
    assert!(!r.is_allowed(&anchored_at_cap));
    assert!(r.is_allowed(&format!("{anchored_at_cap}b")));
    let r = parse(&format!("Disallow: {at_cap}$"));
    assert!(!r.is_allowed(&at_cap));
    assert!(!r.is_allowed(&format!("{at_cap}b")));
    // Length counts after normalization: `%61` is one octet, `é` six (`%C3%A9`).
    let encoded = format!("/{}", "%61".repeat(MAX_PATTERN_BYTES - 1));
    let r = parse(&format!("Allow: {encoded}\nDisallow: /"));
    assert_eq!(r.rule_count(), 2);
    assert!(r.is_allowed(&at_cap));
    let wide = |n: usize| format!("Allow: /{}", "\u{e9}".repeat(n));
    assert_eq!(parse(&wide(MAX_PATTERN_BYTES / 6)).rule_count(), 1);
    assert_eq!(parse(&wide(MAX_PATTERN_BYTES / 6 + 1)).rule_count(), 0);
}

#[test]
fn long_disallow_is_kept_or_cut_never_dropped() {
    for len in [3_000, 20_000] {
        let pattern = long_path(len);
        let r = Robots::parse(
            format!("User-agent: *\nDisallow: {pattern}\n").as_bytes(),
            TOKEN,
        );
        assert_eq!(r.rule_count(), 1, "{len}");
        assert!(!r.is_allowed(&pattern), "{len}");
        assert!(!r.is_allowed(&format!("{pattern}/page.html?q=1")), "{len}");
        assert!(r.is_allowed("/aa"), "{len}");
        assert!(r.is_allowed("/b"), "{len}");
        // Within the limit the pattern is kept whole; past it, only its first 16 KiB count, so
        // paths that part in the rest are disallowed too (more than asked, never less).
        let parts_early = format!("{}b", long_path(len - 1));
        assert_eq!(
            r.is_allowed(&parts_early),
            len <= MAX_PATTERN_BYTES,
            "{len}"
        );
    }
}

#[test]
fn cut_disallow_is_a_prefix_match() {
    let a = |n: usize| "a".repeat(n);
    let cut = MAX_PATTERN_BYTES;
    // (what, Disallow pattern over the limit, a path the full pattern covers)
    let cases = [
        (
            "literal $ left at the end by the cut",
            format!("/{}$b{}", a(cut - 2), a(100)),
            format!("/{}$b{}", a(cut - 2), a(100)),
        ),
        (
            "anchor lost in the cut",
            format!("/{}$", a(cut + 10)),
            format!("/{}", a(cut + 10)),
        ),
        (
            "wildcards before the cut",
            format!("/*/{}*x", a(cut + 10)),
            format!("/dir/{}yx", a(cut + 10)),
        ),
        (
            "cut inside a %XX",
            format!("/{}{}", a(cut - 2), "\u{e9}".repeat(10)),
            format!("/{}{}", a(cut - 2), "%c3%a9".repeat(10)),
        ),
    ];
    for (what, pattern, path) in &cases {
        let r = Robots::parse(
            format!("User-agent: *\nDisallow: {pattern}\n").as_bytes(),
            TOKEN,
        );
        assert_eq!(r.rule_count(), 1, "{what}");
        assert!(!r.is_allowed(path), "{what}");
        assert!(r.is_allowed("/b"), "{what}");
    }
}

#[test]
fn long_allow_never_opens_a_disallowed_path() {
    let long = long_path(20_000);
    let parse = |rules: String| Robots::parse(format!("User-agent: *\n{rules}").as_bytes(), TOKEN);
    // Over the limit: dropped. Cut to its first 16 KiB, it would allow far more than asked.
    let r = parse(format!("Disallow: /a\nAllow: {long}\n"));
    assert_eq!(r.rule_count(), 1);
    assert!(!r.is_allowed(&long));
    assert!(!r.is_allowed(&long_path(MAX_PATTERN_BYTES)));
    // Within it: kept, and it wins over the shorter Disallow.
    let mid = long_path(3_000);
    let r = parse(format!("Disallow: /a\nAllow: {mid}\n"));
    assert_eq!(r.rule_count(), 2);
    assert!(r.is_allowed(&mid));
    assert!(!r.is_allowed(&long_path(2_999)));
    // The longest Allow kept whole still loses to a longer Disallow that was cut short, as it
    // would have to the full one.
    let r = parse(format!(
        "Allow: {}\nDisallow: {long}\n",
        long_path(MAX_PATTERN_BYTES)
    ));
    assert_eq!(r.rule_count(), 2);
    assert!(!r.is_allowed(&long));
}

#[test]
fn whole_or_partial_bom_stripped() {
    for bom in [&b"\xEF\xBB\xBF"[..], b"\xEF\xBB", b"\xEF", b""] {
        let mut body = bom.to_vec();
        body.extend_from_slice(b"User-agent: *\nDisallow: /a\n");
        let r = Robots::parse(&body, TOKEN);
        assert_eq!(r.rule_count(), 1, "{bom:x?}");
        assert!(!r.is_allowed("/a"), "{bom:x?}");
    }
    // Only a start of the mark is stripped: other bytes still spoil the first line.
    for junk in [&b"\xBB\xBF"[..], b"\xEF\xBF", b"\xEF\xBB\xBB"] {
        let mut body = junk.to_vec();
        body.extend_from_slice(b"User-agent: *\nDisallow: /a\n");
        assert!(Robots::parse(&body, TOKEN).is_allowed("/a"), "{junk:x?}");
    }
}

#[test]
fn pathological_wildcards_finish() {
    // Exponential for a backtracking matcher: many stars, a tail that never matches. As many
    // rules as fit in MAX_ROBOTS_BYTES, of 2 KiB and of the longest pattern kept.
    for len in [2 * 1024, MAX_PATTERN_BYTES] {
        let pattern = format!("/{}b", "*a".repeat(len / 2 - 2));
        let pairs = (MAX_ROBOTS_BYTES - 20) / (2 * (pattern.len() + 16));
        let mut body = String::from("User-agent: *\n");
        for _ in 0..pairs {
            body.push_str(&format!("Disallow: {pattern}\nDisallow: {pattern}$\n"));
        }
        let r = Robots::parse(body.as_bytes(), TOKEN);
        assert_eq!(r.rule_count(), 2 * pairs, "{len}");
        let path = format!("/{}", "a".repeat(20_000));
        assert!(r.is_allowed(&path), "{len}");
        assert!(!r.is_allowed(&format!("{path}b")), "{len}");
    }
}

// ---- RobotsCache ----

const O: &str = "https://example.com:443";
const HOUR: Duration = Duration::from_secs(3600);
const MAX_AGE: Duration = Duration::from_secs(24 * 3600);
const RETRY: Duration = Duration::from_secs(60);

fn cache(capacity: usize) -> RobotsCache {
    RobotsCache::new(TOKEN, MAX_AGE, RETRY, capacity)
}

fn ok(body: &str) -> FetchResult {
    FetchResult::Status {
        status: 200,
        body: body.as_bytes().to_vec(),
    }
}

fn status(status: u16) -> FetchResult {
    FetchResult::Status {
        status,
        body: b"User-agent: *\nAllow: /".to_vec(),
    }
}

#[test]
fn need_fetch_once_then_pending_then_rules() {
    let t0 = Instant::now();
    let mut c = cache(10);
    assert!(c.is_empty());
    assert_eq!(c.check(O, "/a", t0), Check::NeedFetch);
    assert_eq!(c.check(O, "/a", t0), Check::Pending);
    assert_eq!(c.check(O, "/b", t0 + HOUR), Check::Pending);
    assert_eq!(c.len(), 1);
    assert_eq!(c.next_retry(O), None);
    c.fetch_done(O, ok("User-agent: *\nDisallow: /a\nCrawl-delay: 2.5"), t0);
    assert_eq!(c.check(O, "/a", t0), Check::Disallowed);
    assert_eq!(c.check(O, "/b", t0), Check::Allowed);
    assert_eq!(c.crawl_delay(O), Some(Duration::from_millis(2500)));
    // Another origin is independent.
    assert_eq!(c.check("http://other:80", "/a", t0), Check::NeedFetch);
    assert_eq!(c.crawl_delay("http://other:80"), None);
}

#[test]
fn client_errors_allow_all() {
    for code in [400, 401, 403, 404, 410, 451, 499] {
        let t0 = Instant::now();
        let mut c = cache(10);
        assert_eq!(c.check(O, "/", t0), Check::NeedFetch);
        c.fetch_done(
            O,
            FetchResult::Status {
                status: code,
                body: b"User-agent: *\nDisallow: /".to_vec(),
            },
            t0,
        );
        assert_eq!(c.check(O, "/secret", t0), Check::Allowed, "status {code}");
        assert_eq!(c.next_retry(O), None);
    }
}

#[test]
fn failures_back_off_doubling_up_to_max_age() {
    let failures = [
        status(500),
        status(503),
        status(429),
        FetchResult::Unreachable,
        status(302),
        status(199),
    ];
    for failure in failures {
        let t0 = Instant::now();
        let mut c = cache(10);
        assert_eq!(c.check(O, "/", t0), Check::NeedFetch);
        let mut now = t0;
        let mut want = RETRY;
        // 60 s doubling reaches 24 h after 11 failures; run past it.
        for round in 0..14 {
            c.fetch_done(O, failure.clone(), now);
            assert_eq!(
                c.next_retry(O),
                Some(now + want),
                "{failure:?} round {round}"
            );
            assert_eq!(c.check(O, "/", now), Check::Pending);
            let just_before = now + want - Duration::from_millis(1);
            assert_eq!(c.check(O, "/", just_before), Check::Pending);
            assert_eq!(c.crawl_delay(O), None);
            now += want;
            assert_eq!(
                c.check(O, "/", now),
                Check::NeedFetch,
                "{failure:?} round {round}"
            );
            assert_eq!(c.check(O, "/", now), Check::Pending);
            assert_eq!(c.next_retry(O), None);
            want = (want * 2).min(MAX_AGE);
        }
        assert_eq!(want, MAX_AGE);
        // Success resets the back-off.
        c.fetch_done(O, ok("User-agent: *\nDisallow: /x"), now);
        assert_eq!(c.check(O, "/x", now), Check::Disallowed);
        c.fetch_done(O, FetchResult::Unreachable, now);
        assert_eq!(c.next_retry(O), Some(now + RETRY));
    }
}

#[test]
fn expiry_refetches_keeping_old_rules_meanwhile() {
    let t0 = Instant::now();
    let mut c = cache(10);
    assert_eq!(c.check(O, "/", t0), Check::NeedFetch);
    c.fetch_done(O, ok("User-agent: *\nDisallow: /old\nCrawl-delay: 3"), t0);
    let almost = t0 + MAX_AGE - Duration::from_secs(1);
    assert_eq!(c.check(O, "/old", almost), Check::Disallowed);
    let expired = t0 + MAX_AGE;
    assert_eq!(c.check(O, "/new", expired), Check::NeedFetch);
    // Refetch under way: old rules still answer, and no second NeedFetch.
    assert_eq!(c.check(O, "/old", expired), Check::Disallowed);
    assert_eq!(c.check(O, "/new", expired + HOUR), Check::Allowed);
    assert_eq!(c.crawl_delay(O), Some(Duration::from_secs(3)));
    c.fetch_done(O, ok("User-agent: *\nDisallow: /new"), expired + HOUR);
    assert_eq!(c.check(O, "/new", expired + HOUR), Check::Disallowed);
    assert_eq!(c.check(O, "/old", expired + HOUR), Check::Allowed);
    assert_eq!(c.crawl_delay(O), None);
    // A failed refetch drops the old rules: wait, then retry.
    let t2 = expired + HOUR + MAX_AGE;
    assert_eq!(c.check(O, "/x", t2), Check::NeedFetch);
    c.fetch_done(O, status(502), t2);
    assert_eq!(c.check(O, "/x", t2), Check::Pending);
    assert_eq!(c.next_retry(O), Some(t2 + RETRY));
}

#[test]
fn capacity_evicts_oldest() {
    let t0 = Instant::now();
    let mut c = cache(2);
    let (a, b, d) = ("http://a:80", "http://b:80", "http://d:80");
    assert_eq!(c.check(a, "/", t0), Check::NeedFetch);
    assert_eq!(c.check(b, "/", t0), Check::NeedFetch);
    c.fetch_done(a, ok(""), t0); // a is now the youngest
    assert_eq!(c.check(d, "/", t0), Check::NeedFetch); // evicts b
    assert_eq!(c.len(), 2);
    assert_eq!(c.check(a, "/", t0), Check::Allowed);
    assert_eq!(c.check(d, "/", t0), Check::Pending);
    // b's late answer is still taken (evicting the oldest, a).
    c.fetch_done(b, ok("User-agent: *\nDisallow: /"), t0);
    assert_eq!(c.len(), 2);
    assert_eq!(c.check(b, "/p", t0), Check::Disallowed);
    assert_eq!(c.check(d, "/", t0), Check::Pending);
    assert_eq!(c.check(a, "/", t0), Check::NeedFetch);
    // Capacity 0 behaves as 1.
    let mut c = cache(0);
    assert_eq!(c.check(a, "/", t0), Check::NeedFetch);
    assert_eq!(c.check(b, "/", t0), Check::NeedFetch);
    assert_eq!(c.len(), 1);
}

#[test]
fn huge_durations_do_not_overflow() {
    let t0 = Instant::now();
    let mut c = RobotsCache::new(TOKEN, Duration::MAX, Duration::MAX, 4);
    assert_eq!(c.check(O, "/", t0), Check::NeedFetch);
    c.fetch_done(O, FetchResult::Unreachable, t0);
    assert_eq!(c.check(O, "/", t0), Check::Pending);
    c.fetch_done(O, FetchResult::Unreachable, t0);
    c.fetch_done(O, ok(""), t0);
    assert_eq!(c.check(O, "/", t0), Check::Allowed);
}

/// Reference matcher: textbook DP over (pattern, path) positions.
fn naive_match(pattern: &[u8], anchored: bool, path: &[u8]) -> bool {
    let (p, s) = (pattern.len(), path.len());
    // m[i][j]: pattern[..i] matches path[..j] exactly.
    let mut m = vec![vec![false; s + 1]; p + 1];
    m[0][0] = true;
    for i in 1..=p {
        for j in 0..=s {
            m[i][j] = if pattern[i - 1] == b'*' {
                m[i - 1][j] || (j > 0 && m[i][j - 1])
            } else {
                j > 0 && m[i - 1][j - 1] && pattern[i - 1] == path[j - 1]
            };
        }
    }
    if anchored {
        m[p][s]
    } else {
        (0..=s).any(|j| m[p][j])
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parse_and_match_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..2048),
        paths in proptest::collection::vec(".{0,64}", 0..8),
    ) {
        let r = Robots::parse(&body, TOKEN);
        for p in &paths {
            let _ = r.is_allowed(p);
        }
        let _ = r.crawl_delay();
    }

    #[test]
    fn structured_robots_never_panic(
        lines in proptest::collection::vec(
            (
                proptest::sample::select(&["User-agent", "ALLOW", "disallow", "Crawl-delay", "sitemap", "x"][..]),
                "[ \t]{0,2}",
                "[*$/a-c%0-9A-F.?# \u{e9}-]{0,12}",
            ),
            0..24,
        ),
        sep in "(\n|\r|\r\n)",
        path in "[*$/a-c%0-9A-F.?\u{e9}-]{0,16}",
    ) {
        let body: String = lines.iter().map(|(k, w, v)| format!("{k}{w}:{w}{v}{sep}")).collect();
        let _ = Robots::parse(body.as_bytes(), TOKEN).is_allowed(&path);
    }

    #[test]
    fn decision_matches_reference(
        rules in proptest::collection::vec((any::<bool>(), "[/ab*$]{0,6}"), 0..8),
        path in "/[/ab$*?]{0,8}",
    ) {
        let body: String = rules
            .iter()
            .map(|(allow, pat)| format!("{}: {pat}\n", if *allow { "Allow" } else { "Disallow" }))
            .collect();
        let robots = Robots::parse(format!("User-agent: *\n{body}").as_bytes(), TOKEN);
        // Reference: every rule in file order, the longest match wins, Allow on a tie.
        let best = rules
            .iter()
            .filter(|(_, pat)| !pat.is_empty())
            .filter(|(_, pat)| {
                let body = pat.strip_suffix('$').unwrap_or(pat);
                naive_match(body.as_bytes(), body.len() < pat.len(), path.as_bytes())
            })
            .map(|(allow, pat)| (pat.len(), *allow))
            .max();
        prop_assert_eq!(robots.is_allowed(&path), best.is_none_or(|(_, allow)| allow));
    }

    #[test]
    fn normalize_cut_is_a_prefix_of_the_whole(
        input in proptest::collection::vec(
            proptest::sample::select(b"aZ%2fE9*$ \xc3\xa9".to_vec()),
            0..24,
        ),
        limit in 0usize..48,
    ) {
        let mut whole = Vec::new();
        prop_assert!(normalize_into(&input, &mut whole, usize::MAX));
        let mut cut = b"x".to_vec();
        let fit = normalize_into(&input, &mut cut, limit);
        prop_assert_eq!(fit, whole.len() <= limit);
        prop_assert_eq!(&cut[1..], &whole[..whole.len().min(limit)]);
    }

    #[test]
    fn wildcard_matches_reference(
        pattern in "[ab*]{0,10}",
        anchored in any::<bool>(),
        path in "[ab]{0,12}",
    ) {
        prop_assert_eq!(
            wildcard_match(pattern.as_bytes(), anchored, path.as_bytes()),
            naive_match(pattern.as_bytes(), anchored, path.as_bytes()),
        );
    }
}
