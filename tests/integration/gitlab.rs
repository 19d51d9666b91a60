//! Publishing to GitLab, the real binary under GitLab CI's variables against
//! a stand-in GitLab API (wiremock): notes updated in place by their marker,
//! labels, issues found again across reruns, reviews as positioned
//! discussions plus an approval, commit statuses, the run-summary note; and
//! nothing sent when a secret was found or in a dry run, rows withheld with
//! GitLab's error on a bad token, the right token header, and no step ever
//! seeing the token.

use std::process::Output;

use serde_json::{Value, json};
use wiremock::matchers::{any, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::forge::{ask, body_of, ci_cmd, mount, plan, requests, rows, rt, serve};
use crate::harness::{Env, code, stderr};

pub const TOKEN: &str = "gl-test-token-7c1d2e3f4a5b6c7d8e9f";
const JOB_TOKEN: &str = "gl-job-token-0a1b2c3d4e5f60718293";
const AWS_ID: &str = "AKIAZ7Q4NX2LMRBT5KPW";
pub const SHA: &str = "ffffffffffffffffffffffffffffffffffffffff";
pub const MR: &str = "/api/v4/projects/42/merge_requests/7";

/// `plangate run` in GitLab CI's merge-request pipeline for !7 of project 42,
/// its API at `server`; `vars` adds (or, empty values, removes) variables.
/// The run-summary note and status are off unless `vars` turns them on.
pub fn gl_run(env: &Env, server: &MockServer, yaml: &str, vars: &[(&str, &str)]) -> Output {
    let plan = env.write("plan.yaml", yaml);
    let mut c = ci_cmd(env, &["CI_", "GITLAB_", "GITHUB_"]);
    c.arg("run")
        .arg(&plan)
        .arg("--out")
        .arg(&env.out)
        .env("GITLAB_CI", "true")
        .env("CI_PROJECT_ID", "42")
        .env("CI_MERGE_REQUEST_IID", "7")
        .env("CI_COMMIT_SHA", SHA)
        .env("CI_PIPELINE_ID", "900")
        .env("CI_JOB_URL", "https://gitlab.example/acme/widgets/-/jobs/5")
        .env("CI_PROJECT_URL", "https://gitlab.example/acme/widgets")
        .env("CI_API_V4_URL", "https://gitlab.invalid/api/v4")
        .env(
            "PLANGATE_GITLAB_API_URL",
            format!("{}/api/v4", server.uri()),
        )
        .env("PLANGATE_COMMENT", "false")
        .env("PLANGATE_CHECK_RUN", "false")
        .timeout(std::time::Duration::from_secs(120));
    for (k, v) in vars {
        if v.is_empty() {
            c.env_remove(k);
        } else {
            c.env(k, v);
        }
    }
    c.output().unwrap_or_else(|e| panic!("{e}"))
}

/// Every request the stand-in API received (this file's argument order).
pub fn sent(server: &MockServer, rt: &tokio::runtime::Runtime) -> Vec<wiremock::Request> {
    requests(rt, server)
}

#[test]
fn a_note_is_created_then_updated_in_place_labels_are_added_and_no_step_sees_the_token() {
    let rt = rt();
    let probe = format!(
        "! env | grep -q {TOKEN}\ntest -z \"${{PLANGATE_GITLAB_TOKEN:-}}${{GITLAB_TOKEN:-}}${{CI_JOB_TOKEN:-}}\"\n{}\n{}",
        ask(r#"{"type": "comment", "body": "lint: 0 problems"}"#),
        ask(r#"{"type": "labels", "labels": ["lint", "deps"]}"#)
    );
    let yaml = plan(
        "{comment: {max: 1, marker: lint}, labels: {allowed: [lint, deps]}}",
        &[("a", &probe)],
    );
    let notes = format!("{MR}/notes");
    let mark = "<!-- plangate:pub:comment:lint -->";
    // The first run finds no note and creates one; the rerun finds it by its
    // marker (on the second page) and updates it. The token comes once from
    // GITLAB_TOKEN, once from PLANGATE_GITLAB_TOKEN.
    for (existing, verb, route, var) in [
        (json!([]), "POST", notes.clone(), "GITLAB_TOKEN"),
        (
            json!([{"id": 31, "body": format!("{mark}\nold")}]),
            "PUT",
            format!("{notes}/31"),
            "PLANGATE_GITLAB_TOKEN",
        ),
    ] {
        let server = rt.block_on(MockServer::start());
        rt.block_on(async {
            Mock::given(method("GET"))
                .and(path(&notes))
                .and(wiremock::matchers::query_param("page", "1"))
                .respond_with(
                    ResponseTemplate::new(200)
                        .set_body_json(json!([{"id": 1, "body": "someone else"}]))
                        .insert_header("x-next-page", "2"),
                )
                .mount(&server)
                .await;
            Mock::given(method("GET"))
                .and(path(&notes))
                .and(wiremock::matchers::query_param("page", "2"))
                .respond_with(ResponseTemplate::new(200).set_body_json(existing))
                .mount(&server)
                .await;
        });
        mount(
            &rt,
            &server,
            vec![
                (verb, route.clone(), 200, json!({"id": 31}), Some(1)),
                ("PUT", String::from(MR), 200, json!({"iid": 7}), Some(1)),
            ],
        );
        let env = Env::new();
        let o = gl_run(&env, &server, &yaml, &[(var, TOKEN)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        rt.block_on(server.verify());
        let reqs = sent(&server, &rt);
        assert_eq!(
            body_of(&reqs, verb, &route)["body"],
            format!("{mark}\nlint: 0 problems")
        );
        assert_eq!(body_of(&reqs, "PUT", MR)["add_labels"], "lint,deps");
        for r in &reqs {
            assert_eq!(
                r.headers.get("private-token").and_then(|v| v.to_str().ok()),
                Some(TOKEN)
            );
            assert!(r.headers.get("job-token").is_none());
            assert!(!String::from_utf8_lossy(&r.body).contains(TOKEN));
        }
        let rows = rows(&env);
        assert_eq!(rows[0]["state"], "published", "{rows:?}");
        assert_eq!(
            rows[0]["url"],
            "https://gitlab.example/acme/widgets/-/merge_requests/7#note_31"
        );
        assert_eq!(rows[1]["state"], "published", "{rows:?}");
        let report = std::fs::read_to_string(env.out.join("report.json")).unwrap_or_default();
        assert!(!report.contains(TOKEN));
    }
}

#[test]
fn an_issue_is_created_once_and_found_again_by_its_marker_on_a_rerun() {
    let rt = rt();
    let yaml = plan(
        "{issue: {title_prefix: 'lint: ', labels: [bot]}}",
        &[(
            "a",
            &ask(r#"{"type": "issue", "title": "lint: 3 problems", "body": "see job"}"#),
        )],
    );
    let issues = "/api/v4/projects/42/issues";
    let created = {
        let server = serve(
            &rt,
            vec![
                ("GET", String::from(issues), 200, json!([]), None),
                (
                    "POST",
                    String::from(issues),
                    201,
                    json!({"iid": 3, "web_url": "https://gitlab.example/i/3"}),
                    Some(1),
                ),
            ],
        );
        let env = Env::new();
        let o = gl_run(&env, &server, &yaml, &[("GITLAB_TOKEN", TOKEN)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        rt.block_on(server.verify());
        let r = &rows(&env)[0];
        assert_eq!(
            (&r["state"], &r["number"]),
            (&json!("published"), &json!(3)),
            "{r}"
        );
        body_of(&sent(&server, &rt), "POST", issues)
    };
    assert_eq!(created["title"], "lint: 3 problems");
    assert_eq!(created["labels"], "bot");
    let description = created["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        description.starts_with("<!-- plangate:pub:issue:"),
        "{description}"
    );
    // The rerun lists the issue the first run created: it is updated, never opened twice.
    let server = serve(
        &rt,
        vec![
            (
                "GET",
                String::from(issues),
                200,
                json!([{"iid": 3, "description": description}]),
                None,
            ),
            (
                "POST",
                String::from(issues),
                201,
                json!({"iid": 4}),
                Some(0),
            ),
            (
                "PUT",
                format!("{issues}/3"),
                200,
                json!({"iid": 3, "web_url": "https://gitlab.example/i/3"}),
                Some(1),
            ),
        ],
    );
    let env = Env::new();
    let o = gl_run(&env, &server, &yaml, &[("GITLAB_TOKEN", TOKEN)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    assert_eq!(rows(&env)[0]["number"], 3);
}

#[test]
fn a_check_run_is_a_commit_status_and_the_run_summary_is_a_note_and_a_status() {
    let rt = rt();
    let statuses = format!("/api/v4/projects/42/statuses/{SHA}");
    let server = serve(
        &rt,
        vec![
            (
                "POST",
                String::from(&statuses),
                201,
                json!({"id": 555}),
                Some(2),
            ),
            ("GET", format!("{MR}/notes"), 200, json!([]), None),
            (
                "POST",
                format!("{MR}/notes"),
                201,
                json!({"id": 9}),
                Some(1),
            ),
        ],
    );
    let env = Env::new();
    let o = gl_run(
        &env,
        &server,
        &plan(
            "{check_run: {name: 'lint report'}}",
            &[("a", &ask(r#"{"type": "check_run", "title": "0 problems"}"#))],
        ),
        &[
            ("GITLAB_TOKEN", TOKEN),
            ("PLANGATE_COMMENT", "true"),
            ("PLANGATE_CHECK_RUN", "true"),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    let reqs = sent(&server, &rt);
    let posted: Vec<Value> = reqs
        .iter()
        .filter(|r| r.url.path() == statuses)
        .map(|r| r.body_json().unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let named = |n: &str| {
        posted
            .iter()
            .find(|s| s["name"] == n)
            .unwrap_or_else(|| panic!("no status {n}: {posted:?}"))
            .clone()
    };
    let mine = named("lint report");
    assert_eq!(
        (&mine["state"], &mine["description"], &mine["pipeline_id"]),
        (&json!("success"), &json!("0 problems"), &json!(900))
    );
    assert_eq!(
        mine["target_url"],
        "https://gitlab.example/acme/widgets/-/jobs/5"
    );
    assert_eq!(named("plangate / pub")["state"], "success");
    let note = body_of(&reqs, "POST", &format!("{MR}/notes"));
    assert!(
        note["body"]
            .as_str()
            .unwrap_or_default()
            .starts_with("<!-- plangate:pub -->\n"),
        "{note}"
    );
    let r = &rows(&env)[0];
    assert_eq!(
        (&r["state"], &r["number"]),
        (&json!("published"), &json!(555)),
        "{r}"
    );
    assert!(
        stderr(&o).contains("plangate: gitlab: note 9 on merge request !7 created"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_secret_or_a_dry_run_sends_nothing() {
    let rt = rt();
    let cmd = format!(
        "echo 'key = {AWS_ID}' > config.txt\n{}",
        ask(r#"{"type": "comment", "body": "all good"}"#)
    );
    for (dry, want_code, state) in [(false, 4, "withheld"), (true, 0, "would_publish")] {
        let server = rt.block_on(MockServer::start());
        let env = Env::new();
        let mut vars = vec![("GITLAB_TOKEN", TOKEN)];
        if dry {
            vars.push(("PLANGATE_DRY_RUN", "true"));
        }
        let o = gl_run(
            &env,
            &server,
            &plan("{comment: {max: 1}}", &[("a", &cmd)]),
            &vars,
        );
        assert_eq!(code(&o), want_code, "{dry}: {}", stderr(&o));
        let reqs = sent(&server, &rt);
        assert!(
            reqs.is_empty(),
            "{dry}: nothing may be sent: {:?}",
            reqs.iter()
                .map(|r| format!("{} {}", r.method, r.url))
                .collect::<Vec<_>>()
        );
        let rows = rows(&env);
        assert_eq!(rows[0]["state"], state, "{dry}: {rows:?}");
    }
}

#[test]
fn a_refused_token_withholds_every_row_with_gitlabs_error_and_the_run_keeps_its_exit_code() {
    let rt = rt();
    let yaml = plan(
        "{comment: {max: 1}, labels: {allowed: [lint]}}",
        &[(
            "a",
            &format!(
                "! env | grep -q -e {TOKEN} -e {JOB_TOKEN}\ntest -z \"${{CI_JOB_TOKEN:-}}${{GITLAB_TOKEN:-}}\"\n{}\n{}",
                ask(r#"{"type": "comment", "body": "x"}"#),
                ask(r#"{"type": "labels", "labels": ["lint"]}"#)
            ),
        )],
    );
    // A project token GitLab refuses, then the job's own token (JOB-TOKEN),
    // which may not call these endpoints.
    for (vars, header, want) in [
        (
            vec![("GITLAB_TOKEN", TOKEN)],
            "private-token",
            "HTTP 401: 401 Unauthorized",
        ),
        (
            vec![("CI_JOB_TOKEN", JOB_TOKEN)],
            "job-token",
            "a CI job token (CI_JOB_TOKEN) cannot call",
        ),
    ] {
        let server = rt.block_on(MockServer::start());
        rt.block_on(
            Mock::given(any())
                .respond_with(
                    ResponseTemplate::new(401)
                        .set_body_json(json!({"message": "401 Unauthorized"})),
                )
                .mount(&server),
        );
        let env = Env::new();
        let o = gl_run(&env, &server, &yaml, &vars);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let rows = rows(&env);
        assert_eq!(rows.len(), 2);
        for r in &rows {
            assert_eq!(r["state"], "withheld", "{r}");
            assert!(
                r["reason"].as_str().unwrap_or_default().contains(want),
                "{r}"
            );
        }
        let reqs = sent(&server, &rt);
        assert!(!reqs.is_empty());
        let token = vars[0].1;
        for r in &reqs {
            assert_eq!(
                r.headers.get(header).and_then(|v| v.to_str().ok()),
                Some(token),
                "{header}"
            );
            let other = if header == "job-token" {
                "private-token"
            } else {
                "job-token"
            };
            assert!(r.headers.get(other).is_none());
        }
        let console = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        assert!(!console.contains(token), "{console}");
    }
}

#[test]
fn a_merge_request_is_pushed_by_plangate_and_opened_then_updated_on_a_rerun() {
    use crate::git_remote::{Remote, git};
    let rt = rt();
    // The project's repository: git's smart HTTP requiring `oauth2:TOKEN`.
    let remote = Remote::for_user(TOKEN, "oauth2");
    let project_url = format!("{}/acme/widgets", remote.url);
    let mrs = "/api/v4/projects/42/merge_requests";
    let cmd = format!(
        "echo 'a = 1' > lint.txt\n{}",
        ask(r#"{"type": "merge_request", "title": "[bot] fix", "body": "Lint fixed."}"#)
    );
    let publish = "{merge_request: {branch: 'bot/{plan}', title_prefix: '[bot] ', draft: true, labels: [bot]}}";
    let yaml = plan(publish, &[("fix", &cmd)]);
    let vars = [
        ("GITLAB_TOKEN", TOKEN),
        ("CI_PROJECT_URL", project_url.as_str()),
    ];
    // First run: no open merge request from the branch: pushed, then POST.
    let env = Env::new();
    remote.clone_into(&env);
    let server = serve(
        &rt,
        vec![
            ("GET", String::from(mrs), 200, json!([]), None),
            (
                "POST",
                String::from(mrs),
                201,
                json!({"iid": 31, "web_url": "https://gitlab.example/mr/31"}),
                Some(1),
            ),
        ],
    );
    let o = gl_run(&env, &server, &yaml, &vars);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    let r = &rows(&env)[0];
    assert_eq!(
        (&r["kind"], &r["state"], &r["number"], &r["branch"]),
        (
            &json!("pull_request"),
            &json!("published"),
            &json!(31),
            &json!("bot/pub")
        ),
        "{r}"
    );
    let posted = body_of(&sent(&server, &rt), "POST", mrs);
    assert_eq!(
        (
            &posted["source_branch"],
            &posted["target_branch"],
            &posted["title"],
            &posted["labels"]
        ),
        (
            &json!("bot/pub"),
            &json!("main"),
            &json!("Draft: [bot] fix"),
            &json!("bot")
        ),
        "{posted}"
    );
    let description = posted["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        description.starts_with("<!-- plangate:pub:pull_request:pr -->"),
        "{description}"
    );
    assert!(description.contains("Lint fixed."), "{description}");
    // The branch holds the step's change on main, committed by plangate.
    assert_eq!(git(&remote.bare, &["show", "bot/pub:lint.txt"]), "a = 1");
    let shown = remote.show("bot/pub");
    assert!(
        shown.contains("plangate <plangate@users.noreply.invalid>"),
        "{shown}"
    );
    assert_eq!(remote.pushes(), 1, "{}", remote.log());
    assert!(!remote.log().contains("auth=wrong"), "{}", remote.log());
    // A rerun whose merge request the API lists at another head than the
    // branch's (someone pushed in between): nothing pushed, the row says why.
    let head = git(&remote.bare, &["rev-parse", "bot/pub"]);
    let env = Env::new();
    remote.clone_into(&env);
    let server = serve(
        &rt,
        vec![
            (
                "GET",
                String::from(mrs),
                200,
                json!([{"iid": 31, "source_branch": "bot/pub", "source_project_id": 42,
                         "target_project_id": 42, "description": description,
                         "sha": "0123456789abcdef0123456789abcdef01234567"}]),
                None,
            ),
            ("PUT", format!("{mrs}/31"), 200, json!({}), Some(0)),
        ],
    );
    let o = gl_run(&env, &server, &yaml, &vars);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    let r = &rows(&env)[0];
    assert_eq!(r["state"], "withheld", "{r}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("someone pushed to it in between"),
        "{r}"
    );
    assert_eq!(remote.pushes(), 1, "{}", remote.log());
    // A rerun finds the open merge request by its source branch: the branch is
    // replaced (leased on the head the API reports) and the merge request
    // updated (PUT), never a second one.
    let env = Env::new();
    remote.clone_into(&env);
    let one = format!("{mrs}/31");
    let server = serve(
        &rt,
        vec![
            (
                "GET",
                String::from(mrs),
                200,
                json!([{"iid": 31, "source_branch": "bot/pub", "source_project_id": 42,
                         "target_project_id": 42, "description": description, "sha": head}]),
                None,
            ),
            (
                "PUT",
                one.clone(),
                200,
                json!({"iid": 31, "web_url": "https://gitlab.example/mr/31"}),
                Some(1),
            ),
            ("POST", String::from(mrs), 201, json!({}), Some(0)),
        ],
    );
    let o = gl_run(&env, &server, &yaml, &vars);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    assert_eq!(rows(&env)[0]["state"], "published");
    assert_eq!(remote.pushes(), 2, "{}", remote.log());
    // A wrong token: the push is refused and the row withheld, saying so.
    let env = Env::new();
    remote.clone_into(&env);
    let server = serve(
        &rt,
        vec![
            ("GET", String::from(mrs), 200, json!([]), None),
            ("POST", String::from(mrs), 201, json!({}), Some(0)),
        ],
    );
    let wrong = [
        ("GITLAB_TOKEN", "gl-other-token-0a1b2c3d4e5f6a7b"),
        ("CI_PROJECT_URL", project_url.as_str()),
    ];
    let o = gl_run(&env, &server, &yaml, &wrong);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    let r = &rows(&env)[0];
    assert_eq!(r["state"], "withheld", "{r}");
    assert_eq!(
        remote.pushes(),
        2,
        "nothing more was pushed: {}",
        remote.log()
    );
    // Both names at once: a load error at the second, exit 2.
    let both = "{pull_request: {branch: a}, merge_request: {branch: b}}";
    let o = env.run(&plan(both, &[("fix", "true")]), &[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("both `pull_request` and `merge_request`"),
        "{}",
        stderr(&o)
    );
}

/// On GitLab too, a file git ignores is no part of the change: nothing is
/// pushed, no merge request asked for, the row names the file and why.
#[test]
fn an_ignored_file_pushes_nothing_to_gitlab() {
    use crate::git_remote::Remote;
    let rt = rt();
    let remote = Remote::for_user(TOKEN, "oauth2");
    let project_url = format!("{}/acme/widgets", remote.url);
    let mrs = "/api/v4/projects/42/merge_requests";
    let cmd = format!(
        "echo 'a = 1' > lint.txt\necho DEBUG=1 > .env\n{}",
        ask(r#"{"type": "merge_request", "title": "[bot] fix"}"#)
    );
    let publish = "{merge_request: {branch: 'bot/{plan}', title_prefix: '[bot] '}}";
    let env = Env::new();
    remote.clone_into(&env);
    std::fs::write(env.ws.join(".git/info/exclude"), ".env\n").unwrap_or_else(|e| panic!("{e}"));
    let server = serve(
        &rt,
        vec![
            ("GET", String::from(mrs), 200, json!([]), None),
            ("POST", String::from(mrs), 201, json!({}), Some(0)),
        ],
    );
    let vars = [
        ("GITLAB_TOKEN", TOKEN),
        ("CI_PROJECT_URL", project_url.as_str()),
    ];
    let o = gl_run(&env, &server, &plan(publish, &[("fix", &cmd)]), &vars);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    let r = &rows(&env)[0];
    assert_eq!(r["state"], "withheld", "{r}");
    let reason = r["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("`.env`") && reason.contains("git ignores it"),
        "{reason}"
    );
    assert_eq!(remote.pushes(), 0, "{}", remote.log());
}

/// A 429 is sent again (bounded); a 500 to a POST is not (it may have
/// created the note): the row is withheld with GitLab's answer.
#[test]
fn rate_limits_are_retried_and_a_failed_post_is_never_sent_twice() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    rt.block_on(async {
        Mock::given(method("PUT"))
            .and(path(MR))
            .respond_with(
                ResponseTemplate::new(429)
                    .insert_header("retry-after", "0")
                    .set_body_json(json!({"message": "429 Too Many Requests"})),
            )
            .up_to_n_times(2)
            .expect(2)
            .mount(&server)
            .await;
    });
    mount(
        &rt,
        &server,
        vec![
            ("PUT", String::from(MR), 200, json!({"iid": 7}), Some(1)),
            ("GET", format!("{MR}/notes"), 200, json!([]), None),
            (
                "POST",
                format!("{MR}/notes"),
                500,
                json!({"message": "500 Internal Server Error"}),
                Some(1),
            ),
        ],
    );
    let env = Env::new();
    let o = gl_run(
        &env,
        &server,
        &plan(
            "{comment: {max: 1}, labels: {allowed: [lint]}}",
            &[(
                "a",
                &format!(
                    "{}\n{}",
                    ask(r#"{"type": "comment", "body": "x"}"#),
                    ask(r#"{"type": "labels", "labels": ["lint"]}"#)
                ),
            )],
        ),
        &[("GITLAB_TOKEN", TOKEN)],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    let rows = rows(&env);
    assert_eq!(rows[0]["state"], "withheld", "{rows:?}");
    assert!(
        rows[0]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("HTTP 500"),
        "{rows:?}"
    );
    assert_eq!(rows[1]["state"], "published", "{rows:?}");
}
