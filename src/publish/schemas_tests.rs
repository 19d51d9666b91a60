use super::*;
use crate::model::publish::{
    CheckRunDecl, CommentDecl, IssueDecl, LabelsDecl, PullRequestDecl, ReviewDecl,
};

fn full() -> PublishBlock {
    PublishBlock {
        pull_request: Some(PullRequestDecl {
            branch: "bot/{run}".into(),
            base: None,
            title_prefix: Some("[lint] ".into()),
            labels: vec!["bot".into()],
            draft: false,
            reviewers: Vec::new(),
            max: 2,
        }),
        merge_request: None,
        review: Some(ReviewDecl {
            verdict: vec![Verdict::RequestChanges, Verdict::Comment],
            max_comments: 7,
        }),
        comment: Some(CommentDecl {
            max: 3,
            marker: None,
        }),
        labels: Some(LabelsDecl {
            allowed: vec!["needs-work".into(), "lgtm".into()],
        }),
        issue: Some(IssueDecl {
            title_prefix: Some("[deps] ".into()),
            labels: Vec::new(),
            max: 4,
        }),
        check_run: Some(CheckRunDecl { name: None }),
    }
}

/// Every kind a request can be: a new variant fails to compile here until it is added.
fn kind_of_every_variant() -> Vec<&'static str> {
    let all = [
        Request::PullRequest {
            title: String::new(),
            body: None,
        },
        Request::Review {
            verdict: Verdict::Comment,
            body: None,
            comments: Vec::new(),
        },
        Request::Comment {
            body: String::new(),
        },
        Request::Labels { labels: Vec::new() },
        Request::Issue {
            title: String::new(),
            body: None,
        },
        Request::CheckRun {
            title: None,
            summary: None,
        },
    ];
    all.iter()
        .map(|r| match r {
            Request::PullRequest { .. }
            | Request::Review { .. }
            | Request::Comment { .. }
            | Request::Labels { .. }
            | Request::Issue { .. }
            | Request::CheckRun { .. } => r.kind(),
        })
        .collect()
}

/// Each declaration with one kind left out, and each with one kind alone.
fn subsets() -> Vec<PublishBlock> {
    let f = full();
    let mut out = vec![f.clone(), PublishBlock::default()];
    for k in kind_of_every_variant() {
        let mut without = f.clone();
        let mut only = PublishBlock::default();
        match k {
            "pull_request" => {
                without.pull_request = None;
                only.pull_request = f.pull_request.clone();
            }
            "review" => {
                without.review = None;
                only.review = f.review.clone();
            }
            "comment" => {
                without.comment = None;
                only.comment = f.comment.clone();
            }
            "labels" => {
                without.labels = None;
                only.labels = f.labels.clone();
            }
            "issue" => {
                without.issue = None;
                only.issue = f.issue.clone();
            }
            "check_run" => {
                without.check_run = None;
                only.check_run = f.check_run.clone();
            }
            other => panic!("kind `{other}` has no case here"),
        }
        out.push(without);
        out.push(only);
    }
    out
}

fn declared(decl: &PublishBlock) -> Vec<&'static str> {
    kind_of_every_variant()
        .into_iter()
        .filter(|k| match *k {
            "pull_request" => decl.pull_request.is_some(),
            "review" => decl.review.is_some(),
            "comment" => decl.comment.is_some(),
            "labels" => decl.labels.is_some(),
            "issue" => decl.issue.is_some(),
            "check_run" => decl.check_run.is_some(),
            _ => false,
        })
        .collect()
}

#[test]
fn every_declared_kind_appears_and_no_undeclared_one_does() {
    for decl in subsets() {
        let want = declared(&decl);
        let got: Vec<&str> = kinds(&decl).iter().map(|k| k.kind).collect();
        assert_eq!(got, want);
        let Some(text) = prompt_section(&decl) else {
            assert!(want.is_empty());
            continue;
        };
        for k in kind_of_every_variant() {
            let tag = format!("\"type\":\"{k}\"");
            assert_eq!(
                text.contains(&tag),
                want.contains(&k),
                "kind `{k}` in:\n{text}"
            );
            assert_eq!(
                text.contains(&format!("\n{k}: {{")),
                want.contains(&k),
                "{text}"
            );
        }
        assert!(text.contains("$PLANGATE_REQUESTS"), "{text}");
    }
}

#[test]
fn every_example_is_accepted_by_the_parser_under_its_declaration() {
    for decl in subsets() {
        let mut lines = String::new();
        for k in kinds(&decl) {
            let line = serde_json::to_string(&k.example).unwrap_or_default();
            lines.push_str(&line);
            lines.push('\n');
        }
        let parsed = super::super::request::parse(lines.as_bytes(), &decl)
            .unwrap_or_else(|e| panic!("{e:?}\n{lines}"));
        assert_eq!(parsed.len(), declared(&decl).len());
    }
}

#[test]
fn the_caps_are_the_declarations() {
    let text = prompt_section(&full()).unwrap_or_default();
    for cap in [
        "must start with `[lint] `",
        "must start with `[deps] `",
        "one of `request_changes`, `comment`",
        "at most 7 inline comments",
        "only `needs-work`, `lgtm`",
        "at most 2 per run",
        "at most 3 per run",
        "at most 4 per run",
    ] {
        assert!(text.contains(cap), "`{cap}` missing from:\n{text}");
    }
    assert!(!text.contains("approve"), "{text}");
}

#[test]
fn the_shell_example_appends_the_exact_line_even_with_a_quote_in_a_prefix() {
    let mut decl = full();
    if let Some(pr) = decl.pull_request.as_mut() {
        pr.title_prefix = Some("[it's lint] ".into());
    }
    let text = prompt_section(&decl).unwrap_or_default();
    let line = text
        .lines()
        .find(|l| l.starts_with("printf "))
        .unwrap_or_else(|| panic!("no printf line in:\n{text}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("requests.jsonl");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(line)
        .env("PLANGATE_REQUESTS", &file)
        .current_dir(dir.path())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{line}");
    let written = std::fs::read_to_string(&file).unwrap_or_default();
    let v: serde_json::Value =
        serde_json::from_str(written.trim()).unwrap_or_else(|e| panic!("{e}: {written}"));
    assert_eq!(v["type"], "pull_request", "{written}");
    assert!(
        v["title"]
            .as_str()
            .unwrap_or_default()
            .starts_with("[it's lint] "),
        "{written}"
    );
}
