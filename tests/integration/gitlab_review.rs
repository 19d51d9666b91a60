//! Reviews on GitLab, the real binary against a stand-in API: inline
//! comments as discussions positioned on the merge request's diff, the
//! verdict as a note, an approval (found again on a rerun), and
//! request_changes as a withdrawn approval.

use serde_json::{Value, json};

use crate::forge::{ask, body_of, plan, rows, rt, serve};
use crate::gitlab::{MR, SHA, TOKEN, gl_run, sent};
use crate::harness::{Env, code, stderr};

#[test]
fn a_review_is_positioned_discussions_a_note_and_an_approval() {
    let rt = rt();
    let refs = json!({"base_sha": "a".repeat(40), "start_sha": "b".repeat(40), "head_sha": "c".repeat(40)});
    let server = serve(
        &rt,
        vec![
            (
                "GET",
                String::from(MR),
                200,
                json!({"iid": 7, "diff_refs": refs}),
                None,
            ),
            (
                "POST",
                format!("{MR}/discussions"),
                201,
                json!({"id": "d1"}),
                Some(2),
            ),
            (
                "POST",
                format!("{MR}/notes"),
                201,
                json!({"id": 77}),
                Some(1),
            ),
            ("POST", format!("{MR}/approve"), 201, json!({}), Some(1)),
        ],
    );
    let req = r#"{"type": "review", "verdict": "approve", "body": "Looks right.", "comments": [{"path": "src/a.rs", "line": 3, "body": "nit"}, {"path": "b.txt", "line": 9, "body": "typo"}]}"#;
    let env = Env::new();
    let o = gl_run(
        &env,
        &server,
        &plan("{review: {verdict: [approve]}}", &[("r", &ask(req))]),
        &[("GITLAB_TOKEN", TOKEN)],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    let reqs = sent(&server, &rt);
    let d: Vec<Value> = reqs
        .iter()
        .filter(|r| r.url.path().ends_with("/discussions"))
        .map(|r| r.body_json().unwrap_or_else(|e| panic!("{e}")))
        .collect();
    assert_eq!(d[0]["body"], "nit");
    let p = &d[0]["position"];
    assert_eq!(p["position_type"], "text");
    assert_eq!(p["base_sha"], "a".repeat(40));
    assert_eq!(p["start_sha"], "b".repeat(40));
    assert_eq!(p["head_sha"], "c".repeat(40));
    assert_eq!(
        (&p["new_path"], &p["new_line"]),
        (&json!("src/a.rs"), &json!(3))
    );
    assert_eq!(d[1]["position"]["new_line"], 9);
    let note = body_of(&reqs, "POST", &format!("{MR}/notes"));
    assert!(
        note["body"]
            .as_str()
            .unwrap_or_default()
            .contains("approved")
            && note["body"]
                .as_str()
                .unwrap_or_default()
                .contains("Looks right."),
        "{note}"
    );
    // The approval is for the commit the run saw.
    assert_eq!(body_of(&reqs, "POST", &format!("{MR}/approve"))["sha"], SHA);
    let rows = rows(&env);
    assert_eq!(rows[0]["state"], "published", "{rows:?}");
    assert_eq!(rows[0]["number"], 77);
}

#[test]
fn request_changes_is_a_note_and_withdraws_an_approval_that_was_never_given() {
    let rt = rt();
    let server = serve(
        &rt,
        vec![
            (
                "POST",
                format!("{MR}/notes"),
                201,
                json!({"id": 78}),
                Some(1),
            ),
            // GitLab's answer when this user had not approved: nothing to withdraw.
            (
                "POST",
                format!("{MR}/unapprove"),
                404,
                json!({"message": "404 Not Found"}),
                Some(1),
            ),
        ],
    );
    let env = Env::new();
    let o = gl_run(
        &env,
        &server,
        &plan(
            "{review: {verdict: [request_changes]}}",
            &[(
                "r",
                &ask(r#"{"type": "review", "verdict": "request_changes", "body": "Breaks X."}"#),
            )],
        ),
        &[("GITLAB_TOKEN", TOKEN)],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    let note = body_of(&sent(&server, &rt), "POST", &format!("{MR}/notes"));
    assert!(
        note["body"]
            .as_str()
            .unwrap_or_default()
            .contains("changes requested"),
        "{note}"
    );
    assert_eq!(rows(&env)[0]["state"], "published");
}

/// GitLab refuses a second approval by the same user with 401: on a rerun
/// plangate finds its own approval and the row is published, while a 401
/// for any other reason stays an error.
#[test]
fn a_rerun_finds_its_own_approval_and_a_stranger_s_is_no_excuse() {
    let rt = rt();
    let yaml = plan(
        "{review: {verdict: [approve]}}",
        &[(
            "r",
            &ask(r#"{"type": "review", "verdict": "approve", "body": "ok"}"#),
        )],
    );
    for (approver, state) in [(5, "published"), (6, "withheld")] {
        let server = serve(
            &rt,
            vec![
                ("POST", format!("{MR}/notes"), 201, json!({"id": 78}), None),
                (
                    "POST",
                    format!("{MR}/approve"),
                    401,
                    json!({"message": "401 Unauthorized"}),
                    Some(1),
                ),
                (
                    "GET",
                    String::from("/api/v4/user"),
                    200,
                    json!({"id": 5}),
                    None,
                ),
                (
                    "GET",
                    format!("{MR}/approvals"),
                    200,
                    json!({"approved_by": [{"user": {"id": approver}}]}),
                    None,
                ),
            ],
        );
        let env = Env::new();
        let o = gl_run(&env, &server, &yaml, &[("GITLAB_TOKEN", TOKEN)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        rt.block_on(server.verify());
        let r = &rows(&env)[0];
        assert_eq!(r["state"], state, "{r}");
        if state == "withheld" {
            assert!(
                r["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("HTTP 401"),
                "{r}"
            );
        }
    }
}
