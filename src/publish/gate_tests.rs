//! The gates, decided over facts.

use super::*;

fn decl() -> PublishBlock {
    serde_json::from_value(serde_json::json!({
        "pull_request": {"branch": "b/{run}"},
        "comment": {"max": 1}
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn pr() -> Request {
    Request::PullRequest {
        title: "t".into(),
        body: None,
    }
}

fn comment() -> Request {
    Request::Comment { body: "b".into() }
}

fn run(
    asked: &[(usize, Request)],
    secrets: usize,
    ok: &[bool],
    files: &[&str],
) -> Vec<PublishEntry> {
    let files: Vec<PatchFile> = files
        .iter()
        .map(|p| PatchFile {
            path: (*p).into(),
            old_path: None,
            bytes: 1,
        })
        .collect();
    let ids = vec!["a".to_owned(), "b".to_owned()];
    let d = decl();
    let policies = [PatchPolicy {
        excluded_files: vec!["draft/**".into()],
        on_violation: Some(PatchAction::Draft),
        allowed_files: None,
        ..PatchPolicy::default()
    }];
    decide(
        asked,
        &Facts {
            step_ids: &ids,
            chain_ok: ok,
            secrets,
            dry_run: false,
            files: &files,
            policies: &policies,
            decl: &d,
        },
    )
}

fn states(v: &[PublishEntry]) -> Vec<PublishState> {
    v.iter().map(|e| e.state).collect()
}

#[test]
fn every_gate_can_withhold() {
    use PublishState::{Withheld, WouldPublish};
    let both = [(0, pr()), (1, comment())];
    assert_eq!(
        states(&run(&both, 0, &[true, true], &["src/a"])),
        [WouldPublish, WouldPublish]
    );
    let v = run(&both, 1, &[true, true], &["src/a"]);
    assert_eq!(states(&v), [Withheld, Withheld]);
    assert!(v[0].reason.contains("secret"));
    assert_eq!(
        states(&run(&both, 0, &[false, true], &["src/a"])),
        [Withheld, WouldPublish]
    );
    let v = run(&both, 0, &[true, true], &[".github/workflows/x.yml"]);
    assert_eq!(states(&v), [Withheld, WouldPublish]);
    assert!(v[0].reason.contains("protected"), "{}", v[0].reason);
    let v = run(&both, 0, &[true, true], &["draft/x"]);
    assert_eq!(states(&v), [WouldPublish, WouldPublish]);
    assert!(v[0].draft);
    assert_eq!(
        states(&run(&both, 0, &[true, true], &[])),
        [Withheld, WouldPublish]
    );
    let two = [(0, comment()), (1, comment())];
    assert_eq!(
        states(&run(&two, 0, &[true, true], &[])),
        [WouldPublish, Withheld]
    );
}

#[test]
fn a_dry_run_lists_the_declarations() {
    let d = decl();
    let v = decide(
        &[],
        &Facts {
            step_ids: &[],
            chain_ok: &[],
            secrets: 0,
            dry_run: true,
            files: &[],
            policies: &[],
            decl: &d,
        },
    );
    let kinds: Vec<&str> = v.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["pull_request", "comment"]);
    assert!(v.iter().all(|e| e.state == PublishState::WouldPublish));
}
