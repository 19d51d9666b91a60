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
