//! Fuzz `parse_code`: it never panics, every rejection is well-formed, and an
//! accepted value round-trips through a fresh fence.
#![no_main]

use plangate::guard::code::parse_code;
use libfuzzer_sys::fuzz_target;

/// Longest run of `ch` in `s`.
fn longest_run(s: &str, ch: char) -> usize {
    s.split(|c| c != ch).map(|run| run.chars().count()).max().unwrap_or(0)
}

/// A line of `s` that starts (after spaces/tabs) with three `ch`: a fence-like line.
fn has_fence_like_line(s: &str, ch: char) -> bool {
    let three: String = std::iter::repeat_n(ch, 3).collect();
    s.split('\n')
        .any(|line| line.trim_start_matches([' ', '\t']).starts_with(&three))
}

fn check_rejections(answer: &str, language: Option<&str>) {
    if let Err(rejections) = parse_code(answer, language) {
        assert!(!rejections.is_empty(), "empty rejection list");
        let lines = answer.split('\n').count();
        for r in &rejections {
            assert!(!r.message.trim().is_empty() && !r.message.contains('\n'), "{r:?}");
            assert!(r.line <= lines, "line past the end: {r:?}");
            assert_eq!(r.line == 0, r.column == 0, "{r:?}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(answer) = std::str::from_utf8(data) else {
        return;
    };
    check_rejections(answer, None);
    check_rejections(answer, Some("python"));
    let Ok(c) = parse_code(answer, None) else {
        return;
    };
    assert!(!c.is_empty() && c.trim() == c, "accepted value not stripped: {c:?}");
    // Wrap with backticks first (as in the brief), then tildes. A rejection is
    // allowed only when `c` has a fence-like line of the wrapping character
    // (a stray nested fence, which the parser refuses on purpose).
    for ch in ['`', '~'] {
        let fence: String = std::iter::repeat_n(ch, longest_run(&c, ch).max(2) + 1).collect();
        let wrapped = format!("{fence}\n{c}\n{fence}");
        match parse_code(&wrapped, None) {
            Ok(back) => {
                assert_eq!(back, c, "round trip changed the value; wrapped: {wrapped:?}");
                return;
            }
            Err(rejections) => {
                assert!(has_fence_like_line(&c, ch), "wrapped value rejected: {rejections:?}; wrapped: {wrapped:?}")
            }
        }
    }
});
