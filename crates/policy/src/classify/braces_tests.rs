use super::expand;

fn e(s: &str) -> Vec<String> {
    expand(s).unwrap_or_default()
}

#[test]
fn expands() {
    assert_eq!(e("{,}/"), ["/", "/"]);
    assert_eq!(e("/{etc,usr}"), ["/etc", "/usr"]);
    assert_eq!(e("a{b,c{d,e}}"), ["ab", "acd", "ace"]);
    assert_eq!(e("{1..3}"), ["1", "2", "3"]);
    assert_eq!(e("{c..a}"), ["c", "b", "a"]);
    assert_eq!(e("'{a,b}'"), ["'{a,b}'"]);
    assert_eq!(e("${x:-{a,b}}"), ["${x:-{a,b}}"]);
    assert_eq!(e("{}"), ["{}"]);
    assert_eq!(e("{x}"), ["{x}"]);
    assert_eq!(e("{5..1..-2}"), ["5", "3", "1"]);
    assert!(expand("{1..100000}").is_none());
    assert!(expand(&"{a,b}".repeat(10)).is_none());
}

#[test]
fn numbers_beyond_64_bits_are_text() {
    // bash reads them as text.
    let n = "99999999999999999999";
    assert_eq!(e(&format!("{{1..{n}}}")), [format!("{{1..{n}}}")]);
    assert_eq!(
        e(&format!("{{/a,b}}{{{n}}}")),
        [format!("/a{{{n}}}"), format!("b{{{n}}}")]
    );
    assert_eq!(
        e(&format!("'{n}'{{a,b}}")),
        [format!("'{n}'a"), format!("'{n}'b")]
    );
}

#[test]
fn too_many_words_are_not_made() {
    // 64 long words times 2,000 alternatives would take gigabytes.
    let alts = (0..2000)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let word = format!(
        "{{{}}}{}{{{alts}}}",
        vec!["a"; 64].join(","),
        "x".repeat(20_000)
    );
    assert!(expand(&word).is_none());
}

#[test]
fn unclosed_braces_take_no_time() {
    // brush-parser's brace grammar backtracks exponentially on these.
    for w in ["{", "{a,", "{a", "{a,b}{"] {
        let start = std::time::Instant::now();
        let words = expand(&w.repeat(40));
        assert!(words.is_none_or(|w| w.len() == 1));
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }
}

#[test]
fn quoted_braces_stay() {
    assert_eq!(e("{a,\"b\"}"), ["a", "\"b\""]);
    assert_eq!(e("{'a,b',c}"), ["'a,b'", "c"]);
    assert_eq!(e("{a\\,b,c}"), ["a\\,b", "c"]);
    for same in [
        "\"{a,b}\"",
        "\\{a,b}",
        "$'{a,b}'",
        "`{a,b}`",
        "$(echo {a,b})",
        "$((1)){a",
    ] {
        assert_eq!(e(same), [same]);
    }
    assert_eq!(e("$x{a,b}"), ["$xa", "$xb"]);
}
