//! Pull requests opened for real, the binary end to end: the run's changes
//! pushed to a stand-in git remote that requires the token
//! (tests/fixtures/git_remote/server.py, git's smart HTTP) and the pull
//! request opened on a stand-in GitHub API (wiremock). Nothing is pushed
//! when a gate fails; no step can read the token.

use std::process::Output;
use std::time::Duration;

use serde_json::json;
use wiremock::MockServer;

use crate::forge::{Route, ask, ci_cmd, plan_with, rows, rt, sent, serve, writes};
use crate::git_remote::{Remote, files_holding, git};
use crate::harness::{Env, code, stderr};

const TOKEN: &str = "plangate-push-token-5e6f7a8b9c0d1e2f";
const REPO: &str = "/repos/acme/widgets";
const MARK: &str = "<!-- plangate:pub:pull_request:pr -->";

/// A plan with bash steps `(id, command)` and `publish`.
fn plan(publish: &str, policy: &str, steps: &[(&str, &str)]) -> String {
    plan_with(publish, &format!("risk_tolerance: high{policy}"), steps)
}

/// A step that fixes `lint.txt` and asks for a pull request.
fn lint_fix() -> String {
    format!(
        "echo fixed > lint.txt\n{}",
        ask(r#"{"type": "pull_request", "title": "[bot] x"}"#)
    )
}

const PR: &str =
    "{pull_request: {branch: 'plangate/{plan}/{run}', title_prefix: '[bot] ', labels: [lint]}}";

/// `plangate run` under GitHub Actions (a scheduled run: no pull request),
/// the API at `api`, the repository at `remote`. The plan file is kept out
/// of the workspace's changes.
fn gh_run(env: &Env, api: &MockServer, remote: &Remote, yaml: &str) -> Output {
    gh_run_with(env, api, remote, yaml, &[])
}

fn gh_run_with(env: &Env, api: &MockServer, remote: &Remote, yaml: &str, args: &[&str]) -> Output {
    gh_run_as(env, api, remote, yaml, args, TOKEN)
}

fn gh_run_as(
    env: &Env,
    api: &MockServer,
    remote: &Remote,
    yaml: &str,
    args: &[&str],
    token: &str,
) -> Output {
    let plan = env.out.parent().unwrap_or(&env.out).join("plan.yaml");
    std::fs::write(&plan, yaml).unwrap_or_else(|e| panic!("{e}"));
    let mut c = ci_cmd(env, &["GITHUB_"]);
    c.arg("run")
        .arg(&plan)
        .arg("--out")
        .arg(&env.out)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_REPOSITORY", "acme/widgets")
        .env("GITHUB_SHA", "ffffffffffffffffffffffffffffffffffffffff")
        .env("GITHUB_SERVER_URL", &remote.url)
        .env("PLANGATE_GITHUB_TOKEN", token)
        .env("PLANGATE_GITHUB_API_URL", api.uri())
        .env("PLANGATE_COMMENT", "false")
        .env("PLANGATE_CHECK_RUN", "false")
        .args(args)
        .timeout(Duration::from_secs(180));
    c.output().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_lint_fix_opens_a_pull_request_with_its_change_and_a_rerun_updates_it() {
    let rt = rt();
    let remote = Remote::new(TOKEN);
    let main = git(&remote.bare, &["rev-parse", "main"]);
    // The step fixes the file, looks for the token everywhere it could
    // (its environment, every process's environment and arguments, the
    // workspace's git config, the remote without it) and asks for the PR.
    let probe = format!(
        "{{ env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f 2>/dev/null || true; done; git config --list --show-origin 2>/dev/null || true; }} > \"$PLANGATE_STEP_ARTIFACTS/probe.txt\"\nGIT_TERMINAL_PROMPT=0 git ls-remote {}/acme/widgets.git > \"$PLANGATE_STEP_ARTIFACTS/ls.txt\" 2>&1 || echo refused >> \"$PLANGATE_STEP_ARTIFACTS/ls.txt\"",
        remote.url
    );
    let fix = |to: &str| {
        format!(
            "{probe}\necho '{to}' > lint.txt\n{}",
            ask(r#"{"type": "pull_request", "title": "[bot] lint fix", "body": "Spacing fixed."}"#)
        )
    };
    let api = serve(
        &rt,
        vec![
            listing("pulls", json!([])),
            opens(12, Some(1)),
            labels(12, Some(1)),
        ],
    );
    let env = Env::new();
    remote.clone_into(&env);
    let o = gh_run(
        &env,
        &api,
        &remote,
        &plan(PR, "", &[("fix", &fix("a = 1"))]),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(api.verify());
    let row = &rows(&env)[0];
    assert_eq!(row["state"], "published", "{row}");
    assert_eq!(row["number"], 12);
    let branch = row["branch"].as_str().unwrap_or_default().to_owned();
    let run_id = env.report()["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(branch, format!("plangate/pub/{run_id}"));
    // The branch holds the change, on main, by plangate; main is untouched.
    let shown = remote.show(&branch);
    assert!(shown.starts_with(&format!("{main} plangate <")), "{shown}");
    assert_eq!(
        git(&remote.bare, &["show", &format!("{branch}:lint.txt")]),
        "a = 1"
    );
    assert_eq!(git(&remote.bare, &["rev-parse", "main"]), main);
    assert_eq!(row["commit"], git(&remote.bare, &["rev-parse", &branch]));
    let files = git(&remote.bare, &["diff", "--name-only", &main, &branch]);
    assert_eq!(files, "lint.txt", "exactly the run's changes");
    // The pull request: head, base (the remote's default branch), the body
    // with the marker, the requested text and the run summary.
    let pr = sent(&rt, &api, "POST", &format!("{REPO}/pulls"));
    assert_eq!(
        (pr["head"].as_str(), pr["base"].as_str()),
        (Some(branch.as_str()), Some("main"))
    );
    assert_eq!(pr["title"], "[bot] lint fix");
    assert_eq!(pr["draft"], false);
    let body = pr["body"].as_str().unwrap_or_default();
    assert!(
        body.starts_with(&format!("{MARK}\nSpacing fixed.")),
        "{body}"
    );
    assert!(
        body.contains("plangate") && body.contains("lint.txt"),
        "the run summary: {body}"
    );
    // Every request to the remote carried the token but the step's own try.
    let log = remote.log();
    assert!(remote.pushes() == 1, "{log}");
    assert!(
        log.lines().filter(|l| l.ends_with("auth=ok")).count() >= 3,
        "{log}"
    );
    assert!(!log.contains("auth=wrong"), "{log}");
    // No step saw the token; it is in no file plangate left.
    let probe =
        std::fs::read_to_string(env.out.join("artifacts/fix/probe.txt")).unwrap_or_default();
    assert!(probe.contains("PATH="), "{probe}");
    assert!(
        !probe.contains(TOKEN) && !probe.contains("extraheader"),
        "{probe}"
    );
    let ls = std::fs::read_to_string(env.out.join("artifacts/fix/ls.txt")).unwrap_or_default();
    assert!(ls.contains("refused"), "a step cannot use the remote: {ls}");
    let left: Vec<_> = std::fs::read_dir(env.tmp())
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        !left
            .iter()
            .any(|n| n.to_string_lossy().starts_with("plangate-push-")),
        "the private repository is removed: {left:?}"
    );
    for dir in [&env.ws, &env.out, &env.tmp().to_path_buf()] {
        assert!(
            files_holding(dir, TOKEN).is_empty(),
            "{:?}",
            files_holding(dir, TOKEN)
        );
    }
    let token64 = "eC1hY2Nlc3MtdG9rZW46cGxhbmdhdGUtcHVzaC10b2tlbi01ZTZmN2E4YjljMGQxZTJm";
    assert!(files_holding(&env.ws, token64).is_empty());
    assert!(!String::from_utf8_lossy(&o.stdout).contains(TOKEN) && !stderr(&o).contains(TOKEN));

    // A rerun (another run id) finds the open pull request by its marker,
    // force-updates its branch (leased on the head the API reports) and its
    // title and body: no second one.
    let head = git(&remote.bare, &["rev-parse", &branch]);
    let api = serve(
        &rt,
        vec![
            listing("pulls", open_pr(&branch, json!(head))),
            (
                "PATCH",
                format!("{REPO}/pulls/12"),
                200,
                json!({"number": 12, "html_url": "https://github.example/acme/widgets/pull/12"}),
                Some(1),
            ),
            (
                "POST",
                format!("{REPO}/pulls"),
                201,
                json!({"number": 13}),
                Some(0),
            ),
            labels(12, Some(1)),
        ],
    );
    let env = Env::new();
    remote.clone_into(&env);
    let o = gh_run(
        &env,
        &api,
        &remote,
        &plan(PR, "", &[("fix", &fix("a = 2"))]),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(api.verify());
    let row = &rows(&env)[0];
    assert_eq!(row["state"], "published", "{row}");
    assert_eq!(
        row["branch"].as_str(),
        Some(branch.as_str()),
        "the same branch"
    );
    assert!(
        row["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("#12 updated"),
        "{row}"
    );
    assert_eq!(
        git(&remote.bare, &["show", &format!("{branch}:lint.txt")]),
        "a = 2"
    );
    assert!(
        remote.show(&branch).starts_with(&main),
        "force-updated on main"
    );
    let patch = sent(&rt, &api, "PATCH", &format!("{REPO}/pulls/12"));
    assert!(patch["body"].as_str().unwrap_or_default().starts_with(MARK));
}

#[test]
fn a_protected_path_pushes_nothing_and_a_draft_verdict_asks_for_review() {
    let rt = rt();
    let remote = Remote::new(TOKEN);
    let cmd = format!(
        "mkdir -p .github/workflows && echo 'on: push' > .github/workflows/x.yml\n{}",
        ask(r#"{"type": "pull_request", "title": "[bot] ci"}"#)
    );
    // The default: blocked, nothing pushed, nothing asked of the API.
    let api = rt.block_on(MockServer::start());
    let env = Env::new();
    remote.clone_into(&env);
    let o = gh_run(&env, &api, &remote, &plan(PR, "", &[("ci", &cmd)]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(rows(&env)[0]["state"], "withheld");
    assert_eq!(remote.log(), "", "the remote was not even contacted");
    assert!(writes(&rt, &api).is_empty());
    // `protected: draft` with reviewers: a draft, saying why, review requested.
    let api = serve(
        &rt,
        vec![
            listing("pulls", json!([])),
            (
                "POST",
                format!("{REPO}/pulls"),
                201,
                json!({"number": 5}),
                Some(1),
            ),
            labels(5, Some(1)),
            (
                "POST",
                format!("{REPO}/pulls/5/requested_reviewers"),
                201,
                json!({}),
                Some(1),
            ),
        ],
    );
    let env = Env::new();
    remote.clone_into(&env);
    let publish = PR.replace("labels: [lint]", "labels: [lint], reviewers: [alice]");
    // A dependency manifest (CI configuration is never pushed as a draft:
    // `a_draft_of_ci_configuration_pushes_nothing_and_opens_an_issue`).
    let cmd = format!(
        "echo '{{\"name\": \"w\"}}' > package.json\n{}",
        ask(r#"{"type": "pull_request", "title": "[bot] deps"}"#)
    );
    let o = gh_run(
        &env,
        &api,
        &remote,
        &plan(&publish, ", patch: {protected: draft}", &[("ci", &cmd)]),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(api.verify());
    let row = &rows(&env)[0];
    assert_eq!(
        (row["state"].as_str(), row["draft"].as_bool()),
        (Some("published"), Some(true)),
        "{row}"
    );
    let pr = sent(&rt, &api, "POST", &format!("{REPO}/pulls"));
    assert_eq!(pr["draft"], true);
    let body = pr["body"].as_str().unwrap_or_default();
    assert!(
        body.contains("Opened as a draft for review")
            && body.contains("package.json")
            && body.contains("@alice"),
        "{body}"
    );
    let asked = sent(
        &rt,
        &api,
        "POST",
        &format!("{REPO}/pulls/5/requested_reviewers"),
    );
    assert_eq!(asked["reviewers"], json!(["alice"]));
    let branch = row["branch"].as_str().unwrap_or_default();
    assert_eq!(
        git(&remote.bare, &["show", &format!("{branch}:package.json")]),
        r#"{"name": "w"}"#
    );
}

#[test]
fn a_draft_of_ci_configuration_pushes_nothing_and_opens_an_issue() {
    // A branch holding a changed workflow runs it with the repository's
    // secrets as soon as it is pushed, draft or not: `protected: draft`
    // becomes an issue with the patch for every CI file that runs on push.
    let rt = rt();
    let remote = Remote::new(TOKEN);
    for (make, file) in [
        (
            "mkdir -p .github/workflows && echo 'on: push' > .github/workflows/x.yml",
            ".github/workflows/x.yml",
        ),
        (
            "mkdir -p .github/actions/s && echo 'runs: {using: composite}' > .github/actions/s/action.yml",
            ".github/actions/s/action.yml",
        ),
        (
            "echo 'test: {script: [make]}' > .gitlab-ci.yml",
            ".gitlab-ci.yml",
        ),
        ("echo 'pipeline {}' > Jenkinsfile", "Jenkinsfile"),
    ] {
        let api = issue_api(&rt);
        let env = Env::new();
        remote.clone_into(&env);
        let cmd = format!(
            "{make}\necho '{{}}' > package.json\n{}",
            ask(r#"{"type": "pull_request", "title": "[bot] ci"}"#)
        );
        let o = gh_run(
            &env,
            &api,
            &remote,
            &plan(PR, ", patch: {protected: draft}", &[("ci", &cmd)]),
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        rt.block_on(api.verify());
        let row = &rows(&env)[0];
        assert_eq!(
            (row["kind"].as_str(), row["state"].as_str()),
            (Some("issue"), Some("published")),
            "{file}: {row}"
        );
        let why = row["policy"].as_str().unwrap_or_default();
        assert!(
            why.contains(&format!("`{file}` is CI configuration"))
                && why.contains("as soon as it is pushed"),
            "{row}"
        );
        let issue = sent(&rt, &api, "POST", &format!("{REPO}/issues"));
        let body = issue["body"].as_str().unwrap_or_default();
        assert!(body.contains("as soon as it is pushed"), "{body}");
        assert!(body.contains(&format!("b/{file}")), "{body}");
        assert_eq!(remote.pushes(), 0, "{file}: {}", remote.log());
    }
}

#[test]
fn secrets_in_the_changes_push_nothing_even_past_what_the_summary_shows() {
    let rt = rt();
    let remote = Remote::new(TOKEN);
    let key = format!("AKIA{}", "Z7Q4NX2LMRBT5KPW");
    // Shown in the summary: the run's scan finds it (exit 4). Past the
    // summary's 400 lines of a file: the push's own scan of every byte does.
    for (cmd, exit) in [
        (format!("echo 'key = {key}' > config.txt"), 4),
        (
            format!("seq 1 2000 > big.txt\necho 'key = {key}' >> big.txt"),
            0,
        ),
    ] {
        let api = serve(&rt, vec![listing("pulls", json!([]))]);
        let env = Env::new();
        remote.clone_into(&env);
        let step = format!(
            "{cmd}\n{}",
            ask(r#"{"type": "pull_request", "title": "[bot] x"}"#)
        );
        let o = gh_run(&env, &api, &remote, &plan(PR, "", &[("s", &step)]));
        assert_eq!(code(&o), exit, "{cmd}: {}", stderr(&o));
        let row = &rows(&env)[0];
        assert_eq!(row["state"], "withheld", "{row}");
        assert!(
            row["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("secret"),
            "{row}"
        );
        assert_eq!(remote.pushes(), 0, "{}", remote.log());
        assert!(writes(&rt, &api).is_empty(), "{:?}", writes(&rt, &api));
    }
}

#[test]
fn a_refused_push_or_a_wrong_token_withholds_the_row_with_the_reason() {
    let rt = rt();
    let step = lint_fix();
    // The remote declines the push (a pre-receive hook).
    let remote = Remote::new(TOKEN);
    let hook = remote.bare.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'branch protection: pushes are not allowed' >&2\nexit 1\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    // A remote that wants another token.
    let other = Remote::new("another-token-0000");
    for (remote, want) in [
        (&remote, "pre-receive hook declined"),
        (&other, "`git ls-remote` failed"),
    ] {
        let api = serve(&rt, vec![listing("pulls", json!([]))]);
        let env = Env::new();
        remote.clone_into(&env);
        let o = gh_run(&env, &api, remote, &plan(PR, "", &[("s", &step)]));
        assert_eq!(
            code(&o),
            0,
            "a publish failure does not change the exit code: {}",
            stderr(&o)
        );
        let row = &rows(&env)[0];
        assert_eq!(row["state"], "withheld", "{row}");
        let reason = row["reason"].as_str().unwrap_or_default();
        assert!(reason.contains(want), "{reason}");
        assert!(!reason.contains(TOKEN));
        assert!(
            writes(&rt, &api).is_empty(),
            "no pull request without its branch"
        );
        let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        assert!(out.contains("::warning"), "{out}");
    }
    assert!(other.log().contains("auth=wrong") && !other.log().contains("auth=ok"));
}

#[test]
fn an_issue_instead_carries_the_patch_and_pushes_no_branch() {
    let rt = rt();
    let remote = Remote::new(TOKEN);
    let api = issue_api(&rt);
    let env = Env::new();
    remote.clone_into(&env);
    let cmd = format!(
        "mkdir -p .github && echo 'on: push' > .github/ci.yml\necho fixed > lint.txt\n{}",
        ask(r#"{"type": "pull_request", "title": "[bot] ci", "body": "Please look."}"#)
    );
    let publish =
        "{pull_request: {branch: 'bot/{run}', title_prefix: '[bot] '}, issue: {labels: [triage]}}";
    let o = gh_run(
        &env,
        &api,
        &remote,
        &plan(publish, ", patch: {protected: issue}", &[("s", &cmd)]),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let row = &rows(&env)[0];
    assert_eq!(
        (row["kind"].as_str(), row["state"].as_str()),
        (Some("issue"), Some("published")),
        "{row}"
    );
    rt.block_on(api.verify());
    let issue = sent(&rt, &api, "POST", &format!("{REPO}/issues"));
    let body = issue["body"].as_str().unwrap_or_default();
    assert!(body.contains("Please look."), "{body}");
    assert!(
        body.contains("```diff\ndiff --git a/.github/ci.yml b/.github/ci.yml"),
        "{body}"
    );
    assert!(
        body.contains("+on: push") && body.contains("-a  =  1") && body.contains("+fixed"),
        "{body}"
    );
    assert_eq!(issue["labels"], json!(["triage"]));
    assert_eq!(remote.pushes(), 0, "{}", remote.log());
}

#[test]
fn the_base_and_a_branch_that_is_not_ours_are_never_overwritten() {
    let rt = rt();
    let remote = Remote::new(TOKEN);
    let main = git(&remote.bare, &["rev-parse", "main"]);
    // Someone's branch, with no pull request of this plan.
    git(&remote.bare, &["branch", "bot/fixed", "main"]);
    let step = lint_fix();
    for (branch, want) in [
        ("main", "it is the base branch"),
        (
            "bot/fixed",
            "it exists and is not the head of this plan's open pull request",
        ),
    ] {
        let api = serve(&rt, vec![listing("pulls", json!([]))]);
        let env = Env::new();
        remote.clone_into(&env);
        let publish = format!("{{pull_request: {{branch: '{branch}', title_prefix: '[bot] '}}}}");
        let o = gh_run(&env, &api, &remote, &plan(&publish, "", &[("s", &step)]));
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        withheld(&env, (&rt, &api), &remote, &[want]);
    }
    assert_eq!(git(&remote.bare, &["rev-parse", "main"]), main);
    assert_eq!(git(&remote.bare, &["rev-parse", "bot/fixed"]), main);
}

#[test]
fn the_open_pull_request_is_updated_only_from_the_head_the_api_reported() {
    // Someone pushed to the branch after the API listed the pull request (or
    // the API lists no usable head): the lease would be on the wrong commit,
    // so nothing is pushed and the row says why.
    let rt = rt();
    let remote = Remote::new(TOKEN);
    // An earlier run's branch: `{run}` fits only a run id (a UUIDv7).
    let branch = "plangate/pub/0192f0a0-1b2c-7d3e-8f4a-5b6c7d8e9f01";
    git(&remote.bare, &["branch", branch, "main"]);
    let head = git(&remote.bare, &["rev-parse", branch]);
    let other = "0123456789abcdef0123456789abcdef01234567";
    let step = lint_fix();
    for (sha, want) in [
        (json!(other), "someone pushed to it in between"),
        (json!(null), "no usable head commit"),
        (json!(head.to_uppercase() + "; x"), "no usable head commit"),
    ] {
        let api = serve(&rt, vec![listing("pulls", open_pr(branch, sha))]);
        let env = Env::new();
        remote.clone_into(&env);
        let o = gh_run(&env, &api, &remote, &plan(PR, "", &[("s", &step)]));
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        withheld(&env, (&rt, &api), &remote, &[want, branch]);
        assert_eq!(git(&remote.bare, &["rev-parse", branch]), head);
    }
}

/// The run's one row was withheld with a reason holding every one of
/// `words`; nothing was pushed and nothing asked of the API.
fn withheld(
    env: &Env,
    (rt, api): (&tokio::runtime::Runtime, &MockServer),
    remote: &Remote,
    words: &[&str],
) {
    let row = &rows(env)[0];
    assert_eq!(row["state"], "withheld", "{row}");
    let reason = row["reason"].as_str().unwrap_or_default();
    assert!(
        words.iter().all(|w| reason.contains(w)),
        "{words:?}: {reason}"
    );
    assert_eq!(remote.pushes(), 0, "{}", remote.log());
    assert!(writes(rt, api).is_empty(), "{:?}", writes(rt, api));
}

/// An open-ended API: lists nothing, opens pull request #5.
fn open_api(rt: &tokio::runtime::Runtime) -> MockServer {
    serve(
        rt,
        vec![
            listing("pulls", json!([])),
            (
                "POST",
                format!("{REPO}/pulls"),
                201,
                json!({"number": 5}),
                None,
            ),
            labels(5, None),
        ],
    )
}

/// `GET {REPO}/{what}` (`pulls`, `issues`) lists `listed`.
fn listing(what: &str, listed: serde_json::Value) -> Route {
    ("GET", format!("{REPO}/{what}"), 200, listed, None)
}

/// The listing of this plan's open pull request #12 from `branch` at `sha`.
fn open_pr(branch: &str, sha: serde_json::Value) -> serde_json::Value {
    json!([{
        "number": 12, "draft": false, "body": format!("{MARK}\nold"),
        "head": {"ref": branch, "sha": sha, "repo": {"full_name": "acme/widgets"}}
    }])
}

/// `POST {REPO}/pulls` opens pull request `number`, `calls` times.
fn opens(number: u64, calls: Option<u64>) -> Route {
    (
        "POST",
        format!("{REPO}/pulls"),
        201,
        json!({"number": number, "html_url": format!("https://github.example/acme/widgets/pull/{number}")}),
        calls,
    )
}

/// `POST` of pull request `number`'s labels, `calls` times.
fn labels(number: u64, calls: Option<u64>) -> Route {
    (
        "POST",
        format!("{REPO}/issues/{number}/labels"),
        200,
        json!([]),
        calls,
    )
}

/// An API that lists no issue and opens issue #9, once.
fn issue_api(rt: &tokio::runtime::Runtime) -> MockServer {
    serve(
        rt,
        vec![
            listing("issues", json!([])),
            (
                "POST",
                format!("{REPO}/issues"),
                201,
                json!({"id": 1, "number": 9, "html_url": "https://github.example/i/9"}),
                Some(1),
            ),
        ],
    )
}

#[test]
fn files_a_step_was_not_given_push_nothing_and_the_row_names_them() {
    // A file git ignores (`.env`, a build output) or one the permission rules
    // deny (new or renamed-away path) is not part of the change: nothing is
    // pushed, nothing asked of the API, and the row names the path and why.
    let rt = rt();
    let remote = Remote::new(TOKEN);
    let rules = ", permissions: [{id: all, resource: '*', level: admin, priority: 10}, {id: hide, resource: 'secret/**', level: none, priority: 90}, {id: keys, resource: '**/*.key', level: none, priority: 90}]";
    let fix = "echo fixed > lint.txt";
    // (A denied path that existed before the run is hidden from bash by
    // its sandbox; the renamed-away and deleted cases are `push_tests`'.)
    for (cmd, file, want) in [
        ("echo DEBUG=1 > .env", ".env", "git ignores it"),
        (
            "mkdir -p out && echo bin > out/app.bin",
            "out/app.bin",
            "git ignores it",
        ),
        (
            "d=secret; mkdir -p $d && echo note > $d/notes.txt",
            "secret/notes.txt",
            "the permission rules deny it",
        ),
        (
            "k=key; mkdir -p a/b && echo x > a/b/id.$k",
            "a/b/id.key",
            "the permission rules deny it",
        ),
    ] {
        let api = open_api(&rt);
        let env = Env::new();
        remote.clone_into(&env);
        std::fs::write(env.ws.join(".git/info/exclude"), ".env\nout/\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let step = format!(
            "{fix}\n{cmd}\n{}",
            ask(r#"{"type": "pull_request", "title": "[bot] x"}"#)
        );
        let o = gh_run(&env, &api, &remote, &plan(PR, rules, &[("s", &step)]));
        assert_eq!(
            code(&o),
            0,
            "{cmd}: {} {}",
            stderr(&o),
            String::from_utf8_lossy(&o.stdout)
        );
        withheld(&env, (&rt, &api), &remote, &[&format!("`{file}`"), want]);
    }
    // Deleting an ignored file is no change to the repository: left out, the
    // rest is pushed.
    let api = open_api(&rt);
    let env = Env::new();
    remote.clone_into(&env);
    std::fs::write(env.ws.join(".git/info/exclude"), ".env\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(env.ws.join(".env"), "DEBUG=1\n").unwrap_or_else(|e| panic!("{e}"));
    let step = format!(
        "{fix}\nrm .env\n{}",
        ask(r#"{"type": "pull_request", "title": "[bot] x"}"#)
    );
    let o = gh_run(&env, &api, &remote, &plan(PR, rules, &[("s", &step)]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let row = &rows(&env)[0];
    assert_eq!(row["state"], "published", "{row}");
    let branch = row["branch"].as_str().unwrap_or_default();
    assert_eq!(
        git(&remote.bare, &["show", &format!("{branch}:lint.txt")]),
        "fixed"
    );
    let files = git(&remote.bare, &["diff", "--name-only", "main", branch]);
    assert_eq!(files, "lint.txt");
}

#[test]
fn only_the_bytes_the_run_saw_are_pushed_and_links_stay_inside() {
    // The push reads each file again with no link followed and sends it only
    // if its git blob id is the one the run's diff (and its scan) recorded.
    let rt = rt();
    let remote = Remote::new(TOKEN);
    for (setup, cmd, file, want) in [
        // git's attributes make the recorded blob differ from the file's bytes.
        (
            "*.txt text eol=lf\n",
            "printf 'fixed\\r\\n' > lint.txt",
            "lint.txt",
            "not those git recorded",
        ),
        ("", "ln -s /etc/hostname host", "host", "absolute path"),
        (
            "",
            "mkdir -p d && ln -s ../../up d/up",
            "d/up",
            "climbs out",
        ),
    ] {
        let api = open_api(&rt);
        let env = Env::new();
        remote.clone_into(&env);
        if !setup.is_empty() {
            std::fs::write(env.ws.join(".gitattributes"), setup).unwrap_or_else(|e| panic!("{e}"));
        }
        let step = format!(
            "{cmd}\n{}",
            ask(r#"{"type": "pull_request", "title": "[bot] x"}"#)
        );
        let o = gh_run(&env, &api, &remote, &plan(PR, "", &[("s", &step)]));
        assert_eq!(code(&o), 0, "{cmd}: {}", stderr(&o));
        withheld(&env, (&rt, &api), &remote, &[&format!("`{file}`"), want]);
    }
    // A link inside the workspace is pushed as a link.
    let api = open_api(&rt);
    let env = Env::new();
    remote.clone_into(&env);
    let step = format!(
        "echo fixed > lint.txt\nmkdir -p d && ln -s ../lint.txt d/lint\n{}",
        ask(r#"{"type": "pull_request", "title": "[bot] x"}"#)
    );
    let o = gh_run(&env, &api, &remote, &plan(PR, "", &[("s", &step)]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let row = &rows(&env)[0];
    assert_eq!(row["state"], "published", "{row}");
    let branch = row["branch"].as_str().unwrap_or_default();
    let tree = git(&remote.bare, &["ls-tree", "-r", branch, "d/lint"]);
    assert!(tree.starts_with("120000 blob"), "{tree}");
}

#[test]
fn a_git_folder_a_step_makes_cannot_move_where_the_files_land() {
    // The workspace is `sub/` of its repository: where it sits was recorded
    // before the first step, so a `.git` a step makes there changes nothing
    // (a step approved as dangerous may write git's files).
    let rt = rt();
    let remote = Remote::new(TOKEN);
    let api = open_api(&rt);
    let env = Env::new();
    remote.clone_into(&env);
    let sub = env.ws.join("sub");
    std::fs::create_dir_all(&sub).unwrap_or_else(|e| panic!("{e}"));
    let step = format!(
        "t=.gi; mkdir ${{t}}t.new && mv ${{t}}t.new ${{t}}t && echo fixed > lint.txt\n{}",
        ask(r#"{"type": "pull_request", "title": "[bot] x"}"#)
    );
    let o = gh_run_with(
        &env,
        &api,
        &remote,
        &plan(PR, "", &[("s", &step)]),
        &["--workspace", sub.to_str().unwrap_or_default()],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let row = &rows(&env)[0];
    assert_eq!(row["state"], "published", "{row}");
    let branch = row["branch"].as_str().unwrap_or_default();
    assert_eq!(
        git(&remote.bare, &["show", &format!("{branch}:sub/lint.txt")]),
        "fixed"
    );
    let files = git(&remote.bare, &["diff", "--name-only", "main", branch]);
    assert_eq!(files, "sub/lint.txt", "the top-level lint.txt is untouched");
}

#[test]
fn a_dry_run_pushes_nothing_and_asks_nothing() {
    let rt = rt();
    let remote = Remote::new(TOKEN);
    let api = rt.block_on(MockServer::start());
    let env = Env::new();
    remote.clone_into(&env);
    let step = lint_fix();
    let o = gh_run_with(
        &env,
        &api,
        &remote,
        &plan(PR, "", &[("s", &step)]),
        &["--dry-run"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(rows(&env)[0]["state"], "would_publish");
    assert_eq!(remote.log(), "", "the remote was not contacted");
    assert!(
        rt.block_on(api.received_requests())
            .unwrap_or_default()
            .is_empty()
    );
}

/// The token reaches the remote (every request after its 401 challenge
/// carries it) but no git process holds it in its environment or arguments:
/// the stand-in remote looks through every process's `/proc/<pid>/environ`
/// and `cmdline` while it serves each request, git's processes alive.
#[test]
fn the_token_is_in_no_git_process_environment_or_arguments() {
    let rt = rt();
    // Unique to this test: another test's processes on the machine cannot hold it.
    let token = format!(
        "plangate-env-probe-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    );
    let remote = Remote::new(&token);
    let api = serve(
        &rt,
        vec![
            listing("pulls", json!([])),
            opens(5, Some(1)),
            labels(5, None),
        ],
    );
    let env = Env::new();
    remote.clone_into(&env);
    let step = format!(
        "echo 'a = 1' > lint.txt\n{}",
        ask(r#"{"type": "pull_request", "title": "[bot] lint fix"}"#)
    );
    let o = gh_run_as(
        &env,
        &api,
        &remote,
        &plan(PR, "", &[("fix", &step)]),
        &[],
        &token,
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let row = &rows(&env)[0];
    assert_eq!(row["state"], "published", "{row}");
    let log = remote.log();
    assert_eq!(remote.pushes(), 1, "{log}");
    assert!(
        log.lines()
            .any(|l| l.contains("git-receive-pack") && l.ends_with("auth=ok")),
        "the token reached the remote: {log}"
    );
    assert!(!log.contains("auth=wrong"), "{log}");
    let scans = remote.scans();
    assert!(
        scans.lines().any(|l| l.starts_with("seen git-remote-http")),
        "the scan read no git-remote-http's environment: {scans}"
    );
    let leaks: Vec<&str> = scans.lines().filter(|l| l.starts_with("leak")).collect();
    assert!(
        leaks.is_empty(),
        "the token in a process's environment or arguments: {leaks:?}"
    );
}
