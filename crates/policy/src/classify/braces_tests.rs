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
    assert_eq!(e("{a..e..2}"), ["a", "c", "e"]);
    assert_eq!(e("{5..1..-2}"), ["5", "3", "1"]);
    assert!(expand("{1..100000}").is_none());
    assert!(expand(&"{a,b}".repeat(10)).is_none());
}

#[test]
fn numbers_beyond_64_bits_are_text() {
    // brush-parser panics on them; bash reads them as text.
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
