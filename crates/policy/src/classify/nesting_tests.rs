use super::*;

#[test]
fn counts_parens_and_keywords() {
    assert_eq!(depths("(a (b) c)"), (2, 2));
    assert_eq!(depths("if x; then { y; }; fi"), (0, 2));
    assert!(too_complex(&"(".repeat(17)).is_err());
    assert_eq!(too_complex("ls -la | grep x"), Ok(0));
}

#[test]
fn refuses_numbers_the_parser_cannot_hold() {
    let fd = format!("echo x {}>f", "3".repeat(12));
    assert!(too_complex(&fd).is_err());
    assert!(too_complex(&format!("echo x a{}>f", "3".repeat(12))).is_ok());
    assert!(too_complex(&format!("echo {}> f", "3".repeat(9))).is_ok());
    assert!(too_complex(&format!("ls ~+{}", "1".repeat(10))).is_err());
    assert!(too_complex(&format!("ls ~{}", "1".repeat(9))).is_ok());
    assert_eq!(
        tokens("a(bé c").collect::<Vec<_>>(),
        ["a", "(", "bé", " ", "c"]
    );
}

#[test]
fn refuses_words_opening_many_brackets() {
    // brush-parser overflows its stack on these (a crash, not a verdict).
    assert!(too_complex(&format!("echo {}", "a[".repeat(4000))).is_err());
    assert!(too_complex(&format!("echo {}x", "a[".repeat(17))).is_err());
    assert!(too_complex(&format!("echo {}x", "a[".repeat(16))).is_ok());
    assert!(too_complex(&"echo a[1]b[2] [[:alpha:]] ".repeat(500)).is_ok());
    assert!(too_complex("[[ ${a[b[c[0]]]} == [[:digit:]]* ]]").is_ok());
    assert!(too_complex(&"$[ a[1] ".repeat(17)).is_err());
    assert!(too_complex(&"$[ a[1] ] ".repeat(17)).is_ok());
    assert!(too_complex(&"tr '[' x; ".repeat(17)).is_ok());
}
