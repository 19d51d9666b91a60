use super::*;

#[test]
fn counts_parens_and_keywords() {
    assert_eq!(depths("(a (b) c)"), (2, 2));
    assert_eq!(depths("if x; then { y; }; fi"), (0, 2));
    assert!(too_complex(&"(".repeat(17)).is_err());
    assert_eq!(too_complex("ls -la | grep x"), Ok(0));
}
