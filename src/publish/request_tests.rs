//! Requests against a declaration.

use super::*;

fn decl() -> PublishBlock {
    serde_json::from_value(serde_json::json!({
        "pull_request": {"branch": "plangate/{run}", "title_prefix": "[bot] ", "max": 1},
        "review": {"verdict": ["comment", "request_changes"], "max_comments": 2},
        "comment": {"max": 1},
        "labels": {"allowed": ["lint", "deps"]},
        "issue": {"title_prefix": "bug: "}
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn refused(text: &str) -> String {
    match parse(text.as_bytes(), &decl()) {
        Ok(r) => panic!("accepted {text:?}: {r:?}"),
        Err(e) => e.join("\n"),
    }
}

#[test]
fn good_requests_parse() {
    let text = concat!(
        r#"{"type": "pull_request", "title": "[bot] fix lint"}"#,
        "\n",
        "\n",
        r#"{"type": "review", "verdict": "request_changes", "comments": [{"path": "src/a.rs", "line": 3, "body": "x"}]}"#,
        "\n",
        r#"{"type": "labels", "labels": ["lint"]}"#,
        "\n",
        r#"{"type": "comment", "body": "hello"}"#,
    );
    let r = parse(text.as_bytes(), &decl()).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(r.len(), 4);
    assert!(parse(b"", &decl()).is_ok_and(|r| r.is_empty()));
}

#[test]
fn every_refusal_names_its_line() {
    let cases: &[(&str, &str)] = &[
        (r#"{"type": "check_run"}"#, "not declared under `publish:`"),
        (
            r#"{"type": "merge", "title": "x"}"#,
            "line 1: not a valid request",
        ),
        // GitLab's name for a pull request: the same request, the same checks.
        (
            r#"{"type": "merge_request", "title": "x"}"#,
            "line 1: the title must start with `[bot] `",
        ),
        (
            r#"{"type": "comment", "body": "x", "extra": 1}"#,
            "unknown field",
        ),
        (
            r#"{"type": "labels", "labels": ["lint", "admin"]}"#,
            "label `admin` is not allowed",
        ),
        (
            r#"{"type": "review", "verdict": "approve"}"#,
            "verdict `approve` is not allowed",
        ),
        (
            r#"{"type": "pull_request", "title": "fix lint"}"#,
            "must start with `[bot] `",
        ),
        (
            r#"{"type": "issue", "title": "crash"}"#,
            "must start with `bug: `",
        ),
        ("not json\n", "line 1: not a valid request"),
        (r#"{"type": "comment", "body": "x"#, "line 1: cut short"),
        (
            r#"{"type": "review", "verdict": "comment", "comments": [{"path": "a", "line": 1, "body": "1"}, {"path": "a", "line": 2, "body": "2"}, {"path": "a", "line": 3, "body": "3"}]}"#,
            "more than publish.review.max_comments 2",
        ),
        (
            r#"{"type": "review", "verdict": "comment", "comments": [{"path": "../x", "line": 1, "body": "1"}]}"#,
            "climbs out",
        ),
        (
            r#"{"type": "comment", "body": " "}"#,
            "the comment is empty",
        ),
    ];
    for (text, want) in cases {
        let got = refused(text);
        assert!(got.contains(want), "{text}: {got}");
    }
    let two =
        "{\"type\": \"comment\", \"body\": \"a\"}\n{\"type\": \"comment\", \"body\": \"b\"}\n";
    assert!(refused(two).contains("line 2: more than 1 `comment`"));
    let bad = [0xffu8, 0xfe];
    assert!(parse(&bad, &decl()).is_err_and(|e| e[0].contains("not UTF-8")));
}

#[test]
fn nothing_is_declared_by_default() {
    let e = parse(
        br#"{"type": "comment", "body": "x"}"#,
        &PublishBlock::default(),
    );
    assert!(e.is_err_and(|e| e[0].contains("not declared")));
}

#[test]
fn a_title_is_one_line_without_trailers_or_plangates_own_line() {
    let bad: &[(&str, &str)] = &[
        ("[bot] fix\\n\\nSigned-off-by: M <m@e>", "U+000A"),
        ("[bot] fix\\rCo-authored-by: M <m@e>", "U+000D"),
        ("[bot] fix\\tx", "U+0009"),
        ("[bot] fix\\u001b[31mred", "U+001B"),
        ("[bot] fix\\u0085Signed-off-by: M", "U+0085"),
        ("[bot] fix\\u2028Signed-off-by: M", "U+2028"),
        ("[bot] fix\\u2029x", "U+2029"),
        ("[bot] \\u202egnp.exe", "U+202E"),
        ("[bot] \\u2066x", "U+2066"),
        (
            "[bot] Committed by plangate: run 1",
            "Committed by plangate",
        ),
        ("[bot] fix COMMITTED BY PLANGATE", "Committed by plangate"),
    ];
    for (title, why) in bad {
        let line = format!(r#"{{"type": "pull_request", "title": "{title}"}}"#);
        let e = refused(&line);
        assert!(e.starts_with("line 1: "), "{e}");
        assert!(e.contains("the `pull_request` title"), "{e}");
        assert!(e.contains(why), "{title}: {e}");
    }
    // Without a prefix (an issue declared with none, GitLab's merge request).
    let plain: PublishBlock = serde_json::from_value(serde_json::json!({
        "pull_request": {"branch": "plangate/{run}"},
        "issue": {}
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    for title in [
        "Signed-off-by: M <m@e>",
        "Co-authored-by: M <m@e>",
        "  reviewed-BY : M",
        "Change-Id: I01234",
        "Committed by plangate: run 1 of plan `x`.",
    ] {
        for kind in ["pull_request", "merge_request", "issue"] {
            let line = format!(r#"{{"type": "{kind}", "title": "{title}"}}"#);
            let e = parse(line.as_bytes(), &plain)
                .err()
                .unwrap_or_default()
                .join("\n");
            assert!(e.contains("title"), "{kind} {title}: accepted");
        }
    }
    for title in [
        "fix: lint",
        "feat(api): by-pass cache",
        "Bump serde to 1.0",
        "docs: cc flags",
        "Füge Ümlaute hinzu 🚀",
    ] {
        let line = format!(r#"{{"type": "pull_request", "title": "{title}"}}"#);
        assert!(parse(line.as_bytes(), &plain).is_ok(), "{title} refused");
    }
}
