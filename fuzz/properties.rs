//! The properties every fuzz target checks, one function per target.
//!
//! Shared by the cargo-fuzz targets (`fuzz/fuzz_targets/*.rs`, each a one-line
//! `fuzz_target!` calling a function here) and by the integration test
//! `tests/integration/fuzz_regressions.rs`, which replays every saved input
//! under `fuzz/regressions/<target>/` and `fuzz/seeds/<target>/` through the
//! same function on every `cargo test`. A crash found by fuzzing is kept by
//! copying its input into `fuzz/regressions/<target>/`: no code to add.
//!
//! Every function panics when its property fails, and never otherwise.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Component, Path};

/// Archive entry names: never panics; an accepted name is relative, has no
/// `..`, no `.git` component and no NUL; a symlink target resolved by name
/// never climbs above the destination. Input: `name\ntarget`.
pub fn archive_names(data: &[u8]) {
    use plangate::archive_names::{lexical_target, normalize, shown};
    let (name, target) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &data[..0]),
    };
    let _ = shown(name);
    if let Ok(Some(p)) = normalize(name) {
        assert!(p.is_relative(), "{p:?}");
        for c in p.components() {
            assert!(matches!(c, Component::Normal(_)), "{p:?}");
            let s = c.as_os_str().as_encoded_bytes();
            assert!(!s.eq_ignore_ascii_case(b".git"), "{p:?}");
            assert!(!s.contains(&0), "{p:?}");
        }
        let dir = p.parent().unwrap_or(Path::new(""));
        if let Some(t) = lexical_target(dir, target) {
            assert!(t.is_relative(), "{t:?}");
            assert!(
                t.components().all(|c| matches!(c, Component::Normal(_))),
                "{t:?}"
            );
        }
    }
}

/// The bash classifier never panics and names its reason on one line.
pub fn classify(data: &[u8]) {
    use plangate::classify::{ClassifyContext, classify_bash};
    let Ok(cmd) = std::str::from_utf8(data) else {
        return;
    };
    let ctx = ClassifyContext {
        workspace: Path::new("/work/ws"),
        working_dir: Path::new("/work/ws"),
        home: Some(Path::new("/home/ci")),
    };
    let c = classify_bash(cmd, &ctx);
    let reason = c.reason();
    assert!(!reason.trim().is_empty() && !reason.contains('\n'));
}

/// Longest run of `ch` in `s`.
fn longest_run(s: &str, ch: char) -> usize {
    s.split(|c| c != ch)
        .map(|run| run.chars().count())
        .max()
        .unwrap_or(0)
}

/// A line of `s` that starts (after spaces/tabs) with three `ch`: a fence-like line.
fn has_fence_like_line(s: &str, ch: char) -> bool {
    let three: String = std::iter::repeat_n(ch, 3).collect();
    s.split('\n')
        .any(|line| line.trim_start_matches([' ', '\t']).starts_with(&three))
}

fn check_code_rejections(answer: &str, language: Option<&str>) {
    use plangate::guard::code::parse_code;
    if let Err(rejections) = parse_code(answer, language) {
        assert!(!rejections.is_empty(), "empty rejection list");
        let lines = answer.split('\n').count();
        for r in &rejections {
            assert!(
                !r.message.trim().is_empty() && !r.message.contains('\n'),
                "{r:?}"
            );
            assert!(r.line <= lines, "line past the end: {r:?}");
            assert_eq!(r.line == 0, r.column == 0, "{r:?}");
        }
    }
}

/// `parse_code`: never panics, every rejection is well-formed, and an accepted
/// value round-trips through a fresh fence.
pub fn code(data: &[u8]) {
    use plangate::guard::code::parse_code;
    let Ok(answer) = std::str::from_utf8(data) else {
        return;
    };
    check_code_rejections(answer, None);
    check_code_rejections(answer, Some("python"));
    let Ok(c) = parse_code(answer, None) else {
        return;
    };
    assert!(
        !c.is_empty() && c.trim() == c,
        "accepted value not stripped: {c:?}"
    );
    // Wrap with backticks first, then tildes. A rejection is allowed only when
    // `c` has a fence-like line of the wrapping character (a stray nested
    // fence, which the parser refuses on purpose).
    for ch in ['`', '~'] {
        let fence: String = std::iter::repeat_n(ch, longest_run(&c, ch).max(2) + 1).collect();
        let wrapped = format!("{fence}\n{c}\n{fence}");
        match parse_code(&wrapped, None) {
            Ok(back) => {
                assert_eq!(
                    back, c,
                    "round trip changed the value; wrapped: {wrapped:?}"
                );
                return;
            }
            Err(rejections) => assert!(
                has_fence_like_line(&c, ch),
                "wrapped value rejected: {rejections:?}; wrapped: {wrapped:?}"
            ),
        }
    }
}

/// `parse_envelope`: never panics; an accepted envelope, re-serialised, parses
/// again (strictly) to the same envelope; refusals carry one-line messages.
pub fn envelope(data: &[u8]) {
    use plangate::guard::envelope::{Tier, parse_envelope, tier3_failure};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_envelope(text) {
        Ok((env, _)) => {
            let again = serde_json::to_string(&env).expect("serialise");
            let (back, tier) = parse_envelope(&again).expect("re-serialised envelope must parse");
            assert_eq!(back, env);
            assert_eq!(tier, Tier::Strict);
        }
        Err(r) => {
            assert!(!r.is_empty());
            assert!(r.iter().all(|x| !x.message.contains('\n')));
            let _ = tier3_failure(&r);
        }
    }
}

/// `parse_json`: never panics; an accepted value, re-serialised, parses again
/// to the same value.
pub fn json(data: &[u8]) {
    use plangate::guard::json::parse_json;
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(v) = parse_json(text, None) {
        let again = serde_json::to_string(&v).expect("serialise");
        let back = parse_json(&again, None).expect("re-serialised value must parse");
        assert_eq!(back, v);
    }
}

/// The plan loader never panics, whatever the bytes: it returns a plan or
/// diagnostics with positions.
pub fn plan(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(diags) = plangate::load_plan_str("fuzz.yaml", text) {
        assert!(!diags.is_empty());
    }
}

/// Redaction: never panics; redacting is idempotent; no detected secret
/// survives redaction; the output layer's `clean` is idempotent too.
pub fn redact(data: &[u8]) {
    use plangate::redaction::{builtin_scanner, clean};
    let scanner = builtin_scanner();
    let found = scanner.scan(data);
    let once = plangate::secrets::redact(data, &found);
    let again = plangate::secrets::redact(&once, &scanner.scan(&once));
    assert_eq!(once, again, "redaction is not idempotent");
    for f in &found {
        let secret = &data[f.start..f.end];
        if secret.len() >= 12 {
            assert!(
                !once.windows(secret.len()).any(|w| w == secret),
                "a detected secret survived redaction"
            );
        }
    }
    let c1 = clean(data).into_owned();
    let c2 = clean(&c1).into_owned();
    assert_eq!(c1, c2, "clean is not idempotent");
}
