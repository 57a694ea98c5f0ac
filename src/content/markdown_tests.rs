use super::*;

fn md(html: &str) -> String {
    let mut mt = MainText::new();
    mt.extract(html.as_bytes(), usize::MAX);
    let mut out = Vec::new();
    markdown(&mt, html.as_bytes(), &mut out);
    String::from_utf8(out).unwrap()
}

const P1: &str = "The river council met on Tuesday to discuss the new bridge, which has been \
                  delayed for three years by disputes over its cost.";
const P2: &str = "Engineers told the meeting that the foundations were sound and that work \
                  could resume in the spring if the budget is approved.";

fn page(article: &str) -> String {
    format!(
        "<html><head><title>T</title></head><body><nav><a href=/>Home</a> <a href=/news>News</a>\
         </nav><article>{article}</article><footer><a href=/terms>Terms</a> \
         <a href=/privacy>Privacy</a></footer></body></html>"
    )
}

#[test]
fn headings_paragraphs_and_links() {
    let got = md(&page(&format!(
        "<h1>Bridge work to resume</h1><p>{P1} See <a href=\"/plan.pdf\">the plan</a>.</p>\
         <h2>Costs</h2><p>{P2} It is <strong>not</strong> <em>final</em>, says <code>v2</code>.</p>"
    )));
    assert_eq!(
        got,
        format!(
            "# Bridge work to resume\n\n{P1} See [the plan](/plan.pdf).\n\n## Costs\n\n{P2} It is \
             **not** *final*, says `v2`.\n"
        )
    );
}

#[test]
fn lists_nested_and_ordered() {
    let got = md(&page(&format!(
        "<p>{P1}</p><ul><li>First point of the plan, with some words</li><li>Second point\
         <ol><li>a step</li><li>another step</li></ol></li></ul><p>{P2}</p>"
    )));
    assert_eq!(
        got,
        format!(
            "{P1}\n\n- First point of the plan, with some words\n- Second point\n  1. a step\n  \
             1. another step\n\n{P2}\n"
        )
    );
}

#[test]
fn code_blocks_keep_their_whitespace_and_quotes_are_quoted() {
    let got = md(&page(&format!(
        "<p>{P1}</p><pre><code>fn main() {{\n    println!(\"&lt;hi&gt;\");\n}}\n</code></pre>\
         <blockquote>We will build it, said the mayor to the council on Tuesday.</blockquote>\
         <p>{P2}</p>"
    )));
    assert_eq!(
        got,
        format!(
            "{P1}\n\n```\nfn main() {{\n    println!(\"<hi>\");\n}}\n```\n\n> We will build it, \
             said the mayor to the council on Tuesday.\n\n{P2}\n"
        )
    );
}

#[test]
fn tables_become_gfm_tables() {
    let got = md(&page(&format!(
        "<p>{P1}</p><table><tr><th>Year</th><th>Cost | total</th></tr>\
         <tr><td>2023</td><td>1.2 million</td></tr><tr><td>2024</td><td>1.5 million</td></tr>\
         </table><p>{P2}</p>"
    )));
    assert_eq!(
        got,
        format!(
            "{P1}\n\n| Year | Cost \\| total |\n| --- | --- |\n| 2023 | 1.2 million |\n| 2024 | \
             1.5 million |\n\n{P2}\n"
        )
    );
}

#[test]
fn markdown_characters_in_text_are_escaped() {
    let got = md(&page(&format!(
        "<p>{P1}</p><p>1. Not a list, and *not* emphasis_either [nor a link].</p><p>{P2}</p>"
    )));
    assert!(
        got.contains("\\1. Not a list, and \\*not\\* emphasis\\_either \\[nor a link\\]."),
        "{got}"
    );
}

#[test]
fn hostile_markup_does_not_panic() {
    for html in [
        "<p><a href=",
        "<p>text <a href='x'>unclosed",
        "<li><pre>",
        "<table><td>",
        "<p>&#xffffffff; &amp <b",
        "<h7>x</h7><h0>y",
    ] {
        let _ = md(html);
        let _ = md(&page(html));
    }
}

/// Text with letters outside ASCII stays valid UTF-8 (`à` is C3 A0: its second byte is not a
/// no-break space).
#[test]
fn letters_outside_ascii_are_kept() {
    let got = md(&page(&format!(
        "<p>{P1} Voilà, déjà vu <em>à la carte</em>.</p><p>{P2}</p>"
    )));
    assert!(got.contains("Voilà, déjà vu *à la carte*."), "{got}");
}

/// `push_text` as it was, a byte at a time: what the 16-byte scan must agree with.
fn push_text_bytewise(bytes: &[u8], out: &mut Vec<u8>, space: &mut bool) {
    let special = |b: u8| SPECIAL[usize::from(b)];
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let nbsp = b == 0xc2 && bytes.get(i + 1) == Some(&0xa0);
        if is_space(b) || nbsp {
            *space = true;
            i += 1 + usize::from(nbsp);
            continue;
        }
        if *space && !out.is_empty() && !out.ends_with(b"[") {
            out.push(b' ');
        }
        *space = false;
        if special(b) && b != 0xc2 {
            out.push(b'\\');
            out.push(b);
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < bytes.len() {
            let c = bytes[end];
            if !special(c) {
                end += 1;
            } else if c == b' ' && bytes.get(end + 1).is_some_and(|&n| !special(n)) {
                end += 2;
            } else {
                break;
            }
        }
        out.extend_from_slice(&bytes[i..end]);
        i = end;
    }
}

proptest::proptest! {
    /// Text of words, single and double spaces, every character Markdown escapes, the bytes
    /// beside them in the 16-byte test's ranges (`^`, controls), and no-break spaces, at every
    /// alignment: copied exactly as the byte loop copies it.
    #[test]
    fn text_is_copied_as_the_byte_loop_copies_it(
        pieces in proptest::collection::vec(proptest::sample::select(vec![
            "word", "Longer", " ", "  ", "\t", "\n", "\r", "*", "_", "[", "]", "`", "\\", "^",
            "\u{a0}", "\u{e0}", "\u{1}", "x", "0123456789abcdef",
        ]), 0..80),
        space in proptest::bool::ANY,
    ) {
        let text = pieces.concat();
        let (mut fast, mut slow) = (Vec::new(), Vec::new());
        let (mut s1, mut s2) = (space, space);
        push_text(text.as_bytes(), &mut fast, &mut s1, true);
        push_text_bytewise(text.as_bytes(), &mut slow, &mut s2);
        proptest::prop_assert_eq!(String::from_utf8_lossy(&fast), String::from_utf8_lossy(&slow));
        proptest::prop_assert_eq!(s1, s2);
    }
}
