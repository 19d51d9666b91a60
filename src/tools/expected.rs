//! `expected_output`: whether a step's output matches the regex it declares.

/// Whether a step's output satisfies its `expected_output` regex. The regex is
/// searched in the text; a final newline is ignored the way `$` ignores it in
/// Python, PCRE and grep, so `^ok$` accepts the output of `echo ok`. Use
/// `(?m)` for per-line anchors.
pub(crate) fn expected_output_matches(re: &regex::Regex, text: &str) -> bool {
    let trimmed = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(text);
    re.is_match(text) || re.is_match(trimmed)
}

#[cfg(test)]
mod expected_output_tests {
    use super::expected_output_matches;

    #[test]
    fn a_final_newline_does_not_defeat_end_anchors() {
        let re = regex::Regex::new("^a$").unwrap_or_else(|e| panic!("{e}"));
        assert!(expected_output_matches(&re, "a\n"));
        assert!(expected_output_matches(&re, "a\r\n"));
        assert!(expected_output_matches(&re, "a"));
        assert!(!expected_output_matches(&re, "a\n\n"));
        assert!(!expected_output_matches(&re, "a\nb\n"));
        assert!(!expected_output_matches(&re, "ba\n"));
    }
}
