//! Publishing to GitHub: the real binary against a local wiremock server
//! that checks the requests' paths, methods, headers and bodies.

use std::process::Output;

use serde_json::{Value, json};
use wiremock::matchers::{method, path, query_param, query_param_is_missing};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::forge::{ci_cmd, mount, requests, rt, serve};
use crate::harness::{Env, code, mock, stderr};

/// A planted secret the built-in rules detect (it must never reach GitHub).
const AWS_ID: &str = "AKIAZ7Q4NX2LMRBT5KPW";
/// The token plangate is given (it must never be printed or sent in a body).
const TOKEN: &str = "plangate-test-token-5f2a9c1e8b7d4a63";
const SHA: &str = "0123456789abcdef0123456789abcdef01234567";
const REPO: &str = "/repos/acme/widgets";

fn pr_event() -> Value {
    json!({"action": "synchronize", "number": 7,
           "pull_request": {"number": 7, "head": {"sha": SHA, "ref": "fix"}}})
}

fn push_event() -> Value {
    json!({"ref": "refs/heads/main", "after": SHA})
}

/// A plan whose step prints the planted secret and the token itself.
fn leaky_plan() -> String {
    format!(
        "version: 1\nid: gh\npolicy: {{risk_tolerance: high}}\nsteps:\n  - {{id: leak, tool: bash, parameters: {{command: 'echo {AWS_ID}; echo {TOKEN}'}}}}\n"
    )
}

fn ok_plan() -> &'static str {
    "version: 1\nid: gh\nsteps:\n  - {id: hello, tool: bash, parameters: {command: 'echo hello'}}\n"
}

/// `plangate run` under GitHub Actions, publishing to `server`.
fn run(env: &Env, server: &MockServer, plan: &str, event: &Value, args: &[&str]) -> Output {
    run_with(env, server, plan, event, args, &[])
}

/// [`run`] with more variables in plangate's environment.
fn run_with(
    env: &Env,
    server: &MockServer,
    plan: &str,
    event: &Value,
    args: &[&str],
    vars: &[(&str, &str)],
) -> Output {
    let plan = env.write("plan.yaml", plan);
    let event_path = env.write(
        ".github-event.json",
        &serde_json::to_string(event).unwrap_or_else(|e| panic!("{e}")),
    );
    let mut c = ci_cmd(env, &["GITHUB_"]);
    c.arg("run")
        .arg(&plan)
        .arg("--out")
        .arg(&env.out)
        .args(args)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_REPOSITORY", "acme/widgets")
        .env("GITHUB_EVENT_PATH", &event_path)
        .env("GITHUB_SHA", "ffffffffffffffffffffffffffffffffffffffff")
        .env("GITHUB_REF", "refs/heads/main")
        .env("GITHUB_SERVER_URL", "https://github.example")
        .env("GITHUB_RUN_ID", "4242")
        .env("GITHUB_API_URL", "https://api.github.invalid")
        .env("PLANGATE_GITHUB_TOKEN", TOKEN)
        .env("PLANGATE_GITHUB_API_URL", server.uri())
        .envs(vars.iter().copied())
        .timeout(std::time::Duration::from_secs(120));
    c.output().unwrap_or_else(|e| panic!("{e}"))
}

fn body(r: &Request) -> Value {
    r.body_json()
        .unwrap_or_else(|e| panic!("{} {} body is not JSON: {e}", r.method, r.url))
}

fn header<'a>(r: &'a Request, name: &str) -> &'a str {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("{} {} has no {name} header", r.method, r.url))
}

/// Every request: authenticated, JSON-accepting, with a user agent; no secret
/// and no token anywhere but the Authorization header.
fn check_requests(reqs: &[Request]) {
    assert!(!reqs.is_empty());
    for r in reqs {
        assert_eq!(header(r, "authorization"), format!("Bearer {TOKEN}"));
        assert!(header(r, "accept").contains("application/vnd.github+json"));
        assert!(!header(r, "user-agent").is_empty());
        assert_eq!(header(r, "x-github-api-version"), "2022-11-28");
        let text = String::from_utf8_lossy(&r.body);
        assert!(!text.contains(AWS_ID), "secret sent: {text}");
        assert!(!text.contains(TOKEN), "token sent in a body: {text}");
        assert!(!r.url.as_str().contains(TOKEN));
    }
}

fn find<'a>(reqs: &'a [Request], verb: &str, p: &str) -> Vec<&'a Request> {
    reqs.iter()
        .filter(|r| r.method.as_str() == verb && r.url.path() == p)
        .collect()
}

fn audit(env: &Env) -> Vec<Value> {
    std::fs::read_to_string(env.out.join("audit.jsonl"))
        .unwrap_or_else(|e| panic!("{e}"))
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "github")
        .collect()
}

fn no_leak(o: &Output) {
    for text in [
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    ] {
        assert!(!text.contains(AWS_ID) && !text.contains(TOKEN), "{text}");
    }
}

#[test]
fn a_first_run_creates_the_comment_and_a_check_run() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    rt.block_on(async {
        Mock::given(method("GET"))
            .and(path(format!("{REPO}/issues/7/comments")))
            .and(query_param("per_page", "100"))
            .respond_with(ResponseTemplate::new(200).set_body_json(
                json!([{"id": 1, "body": "LGTM, but see <!-- plangate:gh --> below"}]),
            ))
            .expect(1)
            .mount(&server)
            .await;
    });
    mount(
        &rt,
        &server,
        vec![
            (
                "POST",
                format!("{REPO}/issues/7/comments"),
                201,
                json!({"id": 555}),
                Some(1),
            ),
            (
                "POST",
                format!("{REPO}/check-runs"),
                201,
                json!({"id": 99}),
                Some(1),
            ),
        ],
    );
    let env = Env::new();
    let o = run(&env, &server, &leaky_plan(), &pr_event(), &[]);
    assert_eq!(code(&o), 4, "publishing leaves the outcome: {}", stderr(&o));
    rt.block_on(server.verify());
    let reqs = requests(&rt, &server);
    check_requests(&reqs);
    let posted = find(&reqs, "POST", &format!("{REPO}/issues/7/comments"));
    let comment = body(posted[0]);
    let text = comment["body"].as_str().unwrap_or_default();
    assert!(text.starts_with("<!-- plangate:gh -->\n"), "{text}");
    assert!(
        text.contains("secrets_found") && text.contains("1 secret(s) found"),
        "{text}"
    );
    assert!(
        text.contains("(https://github.example/acme/widgets/actions/runs/4242)"),
        "{text}"
    );
    let check = body(find(&reqs, "POST", &format!("{REPO}/check-runs"))[0]);
    assert_eq!(check["name"], "plangate / gh");
    assert_eq!(
        check["head_sha"], SHA,
        "the pull request's head, not GITHUB_SHA"
    );
    assert_eq!(check["status"], "completed");
    assert_eq!(check["conclusion"], "failure");
    assert_eq!(
        check["details_url"],
        "https://github.example/acme/widgets/actions/runs/4242"
    );
    assert!(
        check["output"]["title"]
            .as_str()
            .is_some_and(|t| t.starts_with("secrets_found (exit 4)")),
        "{check}"
    );
    assert!(
        check["output"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("| `leak` | bash | success")),
        "{check}"
    );
    let err = stderr(&o);
    assert!(
        err.contains("plangate: github: comment 555 on pull request #7 created"),
        "{err}"
    );
    assert!(
        err.contains("check run 99 `plangate / gh` created (failure)"),
        "{err}"
    );
    no_leak(&o);
    let events = audit(&env);
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events.iter().all(|e| e["result"] == "done"), "{events:?}");
    for file in ["audit.jsonl", "report.json", "artifacts/manifest.json"] {
        let text =
            std::fs::read_to_string(env.out.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            !text.contains(TOKEN) && !text.contains(AWS_ID),
            "{file}: {text}"
        );
    }
}

#[test]
fn a_rerun_updates_the_marked_comment_in_place() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    let next = format!(
        "<{}{REPO}/issues/7/comments?per_page=100&page=2>; rel=\"next\"",
        server.uri()
    );
    rt.block_on(async {
        Mock::given(method("GET"))
            .and(path(format!("{REPO}/issues/7/comments")))
            .and(query_param_is_missing("page"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("link", next.as_str())
                    .set_body_json(json!([{"id": 1, "body": "first!"}, {"id": 2, "body": null}])),
            )
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path(format!("{REPO}/issues/7/comments")))
            .and(query_param("page", "2"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([
                {"id": 320, "body": "<!-- plangate:other -->\nanother plan"},
                {"id": 321, "body": "<!-- plangate:gh -->\nthe last run"}
            ])))
            .expect(1)
            .mount(&server)
            .await;
        mock(
            "PATCH",
            format!("{REPO}/issues/comments/321"),
            200,
            Some(json!({"id": 321})),
        )
        .expect(1)
        .mount(&server)
        .await;
        mock(
            "POST",
            format!("{REPO}/issues/7/comments"),
            201,
            Some(json!({"id": 1})),
        )
        .expect(0)
        .mount(&server)
        .await;
        mock(
            "POST",
            format!("{REPO}/check-runs"),
            201,
            Some(json!({"id": 100})),
        )
        .expect(1)
        .mount(&server)
        .await;
    });
    let env = Env::new();
    let o = run(&env, &server, ok_plan(), &pr_event(), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    let reqs = requests(&rt, &server);
    check_requests(&reqs);
    let patched = body(find(&reqs, "PATCH", &format!("{REPO}/issues/comments/321"))[0]);
    let text = patched["body"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("<!-- plangate:gh -->\n## ✅ plangate: `gh` — success (exit 0)"),
        "{text}"
    );
    let check = body(find(&reqs, "POST", &format!("{REPO}/check-runs"))[0]);
    assert_eq!(check["conclusion"], "success");
    assert!(
        stderr(&o).contains("comment 321 on pull request #7 updated"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_push_gets_a_check_run_and_no_comment() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        mock(
            "POST",
            format!("{REPO}/check-runs"),
            201,
            Some(json!({"id": 7})),
        )
        .expect(1)
        .mount(&server),
    );
    let env = Env::new();
    let o = run(&env, &server, ok_plan(), &push_event(), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    let reqs = requests(&rt, &server);
    check_requests(&reqs);
    assert_eq!(reqs.len(), 1, "only the check run");
    let check = body(&reqs[0]);
    assert_eq!(
        check["head_sha"],
        "ffffffffffffffffffffffffffffffffffffffff"
    );
    let err = stderr(&o);
    assert!(
        err.contains("plangate: github: no comment: not a pull request"),
        "{err}"
    );
    let events = audit(&env);
    assert!(
        events
            .iter()
            .any(|e| e["target"] == "comment" && e["result"] == "skipped"),
        "{events:?}"
    );
}

#[test]
fn refused_requests_are_warnings_and_the_exit_code_stands() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(wiremock::matchers::any())
            .respond_with(ResponseTemplate::new(403).set_body_json(json!({
                "message": format!("Resource not accessible by integration\n::error::injected {AWS_ID}"),
                "documentation_url": "https://docs.github.com/rest"
            })))
            .mount(&server),
    );
    let env = Env::new();
    let plan = "version: 1\nid: gh\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: bad, tool: bash, parameters: {command: 'exit 3'}}\n";
    let o = run(&env, &server, plan, &pr_event(), &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("::warning title=plangate::could not publish the comment: pull request #7 comment: HTTP 403: Resource not accessible by integration ::error::injected [REDACTED"),
        "one escaped, redacted line: {err}"
    );
    assert!(
        err.contains(
            "::warning title=plangate::could not publish the check_run: check run: HTTP 403"
        ),
        "{err}"
    );
    assert!(
        !err.lines().any(|l| l.starts_with("::error::injected")),
        "{err}"
    );
    no_leak(&o);
    let events = audit(&env);
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events.iter().all(|e| e["result"] == "failed"), "{events:?}");
    assert_eq!(env.report()["exit_code"], 1);
}

#[test]
fn an_unreachable_api_is_a_warning() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    let env = Env::new();
    // Nothing listens on port 9 of the loopback: the connection is refused at once.
    let plan = env.write("plan.yaml", ok_plan());
    let o = {
        let mut c = env.cmd();
        for (k, _) in std::env::vars() {
            if k.starts_with("GITHUB_") {
                c.env_remove(k);
            }
        }
        c.arg("run")
            .arg(&plan)
            .arg("--out")
            .arg(&env.out)
            .args(["--github-api-url", "http://127.0.0.1:9"])
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_REPOSITORY", "acme/widgets")
            .env("GITHUB_SHA", SHA)
            .env("GITHUB_REF", "refs/pull/7/merge")
            .env("PLANGATE_GITHUB_TOKEN", TOKEN)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("::warning title=plangate::could not publish the comment")
            && err.contains("::warning title=plangate::could not publish the check_run"),
        "{err}"
    );
    no_leak(&o);
    assert!(requests(&rt, &server).is_empty());
}

#[test]
fn comment_false_publishes_only_the_check_run_and_check_run_false_only_the_comment() {
    let rt = rt();
    let server = serve(
        &rt,
        vec![
            (
                "POST",
                format!("{REPO}/check-runs"),
                201,
                json!({"id": 5}),
                Some(1),
            ),
            (
                "GET",
                format!("{REPO}/issues/7/comments"),
                200,
                json!([]),
                Some(1),
            ),
            (
                "POST",
                format!("{REPO}/issues/7/comments"),
                201,
                json!({"id": 6}),
                Some(1),
            ),
        ],
    );
    let env = Env::new();
    let o = run(
        &env,
        &server,
        ok_plan(),
        &pr_event(),
        &["--comment", "false"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let reqs = requests(&rt, &server);
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].url.path(), format!("{REPO}/check-runs"));
    let env = Env::new();
    let o = run(
        &env,
        &server,
        ok_plan(),
        &pr_event(),
        &["--check-run", "false"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    assert_eq!(requests(&rt, &server).len(), 3);
}

#[test]
fn booleans_are_strict_and_bad_ones_are_usage_errors() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    let env = Env::new();
    let o = run(
        &env,
        &server,
        ok_plan(),
        &pr_event(),
        &["--comment", "maybe"],
    );
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(
        err.contains("--comment") && err.contains("expected `true` or `false`, got `maybe`"),
        "{err}"
    );
    for (var, value) in [
        ("PLANGATE_CHECK_RUN", "yes"),
        ("PLANGATE_FAIL_ON_SECRETS", "0"),
        ("PLANGATE_COMMENT", "True"),
    ] {
        let plan = env.write("plan.yaml", ok_plan());
        let o = env
            .cmd()
            .arg("run")
            .arg(&plan)
            .env(var, value)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(code(&o), 2, "{var}={value}: {}", stderr(&o));
    }
    assert!(
        requests(&rt, &server).is_empty(),
        "nothing ran, nothing was sent"
    );
}

#[test]
fn the_token_never_shows_in_help() {
    let env = Env::new();
    let o = env
        .cmd()
        .args(["run", "--help"])
        .env("PLANGATE_GITHUB_TOKEN", TOKEN)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code(&o), 0);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(
        help.contains("--github-token") && !help.contains(TOKEN),
        "{help}"
    );
}

#[test]
fn the_action_passes_every_input_as_a_variable_the_binary_knows() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/action.yml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let action: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let step = action["runs"]["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["id"] == "run"))
        .unwrap_or_else(|| panic!("no `run` step"));
    let script = step["run"].as_str().unwrap_or_default();
    assert!(
        !script.contains("${{"),
        "no input is interpolated into shell text: {script}"
    );
    let env = &step["env"];
    let help = Env::new()
        .cmd()
        .args(["run", "--help"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let inputs = action["inputs"]
        .as_object()
        .unwrap_or_else(|| panic!("no inputs"));
    for name in [
        "fail-on-secrets",
        "github-token",
        "comment",
        "check-run",
        "github-api-url",
    ] {
        assert!(inputs.contains_key(name), "input {name}");
    }
    // `version` chooses the binary: the install step reads it, not plangate.
    let install = action["runs"]["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["id"] == "install"))
        .unwrap_or_else(|| panic!("no `install` step"));
    assert_eq!(install["env"]["INPUT_VERSION"], "${{ inputs.version }}");
    // `inputs` becomes `--input` arguments (distribution::the_actions_inputs_lines_reach_the_plan_as_inputs_never_as_shell_text).
    assert_eq!(env["PLAN_INPUTS"], "${{ inputs.inputs }}");
    assert!(script.contains("--input"), "{script}");
    let passed = |n: &&String| !matches!(n.as_str(), "plan" | "version" | "inputs");
    for name in inputs.keys().filter(passed) {
        let var = env
            .as_object()
            .and_then(|e| {
                e.iter()
                    .find(|(_, v)| v.as_str() == Some(&format!("${{{{ inputs.{name} }}}}")))
            })
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| panic!("input {name} is not passed as a variable"));
        assert!(var.starts_with("PLANGATE_"), "{name}: {var}");
        assert!(
            help.contains(&format!("env: {var}")),
            "the binary reads {var}: {help}"
        );
        if var != "PLANGATE_OUT" {
            assert!(script.contains(&var), "an empty {var} is unset: {script}");
        }
    }
}

#[test]
fn a_saved_report_can_be_published_by_a_later_job() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    rt.block_on(async {
        mock(
            "POST",
            format!("{REPO}/check-runs"),
            201,
            Some(json!({"id": 11})),
        )
        .expect(1)
        .mount(&server)
        .await;
        mock("POST", format!("{REPO}/issues/3/comments"), 500, None)
            .expect(1)
            .mount(&server)
            .await;
        mock(
            "GET",
            format!("{REPO}/issues/3/comments"),
            200,
            Some(json!([])),
        )
        .mount(&server)
        .await;
    });
    let env = Env::new();
    let o = env.run(ok_plan(), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let publish = |token: Option<&str>| {
        let mut c = env.cmd();
        for (k, _) in std::env::vars() {
            if k.starts_with("GITHUB_") {
                c.env_remove(k);
            }
        }
        c.arg("report")
            .arg(env.out.join("report.json"))
            .arg("--publish-github")
            .env("GITHUB_REPOSITORY", "acme/widgets")
            .env("GITHUB_REF", "refs/pull/3/merge")
            .env("GITHUB_SHA", SHA)
            .env("PLANGATE_GITHUB_API_URL", server.uri());
        if let Some(t) = token {
            c.env("PLANGATE_GITHUB_TOKEN", t);
        }
        c.output().unwrap_or_else(|e| panic!("{e}"))
    };
    let o = publish(None);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(requests(&rt, &server).is_empty());
    let o = publish(Some(TOKEN));
    assert_eq!(code(&o), 1, "the comment failed: {}", stderr(&o));
    assert!(o.stdout.is_empty(), "no --format, nothing on stdout");
    let err = stderr(&o);
    assert!(
        err.contains("check run 11 `plangate / gh` created (success)"),
        "{err}"
    );
    assert!(
        err.contains("::warning title=plangate::could not publish the comment: pull request #3 comment: HTTP 500"),
        "{err}"
    );
    rt.block_on(server.verify());
    check_requests(&requests(&rt, &server));
    let events = audit(&env);
    assert_eq!(events.len(), 2, "logged next to the report: {events:?}");
}

#[test]
fn an_invalid_plan_is_published_as_a_failure() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        mock(
            "POST",
            format!("{REPO}/check-runs"),
            201,
            Some(json!({"id": 8})),
        )
        .expect(1)
        .mount(&server),
    );
    let env = Env::new();
    let bad = "version: 1\nid: x\nsteps:\n  - {id: a, tool: bash, parameters: {comand: ls}}\n";
    let o = run(&env, &server, bad, &push_event(), &[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    rt.block_on(server.verify());
    let reqs = requests(&rt, &server);
    let check = body(&reqs[0]);
    assert_eq!(check["conclusion"], "failure");
    assert_eq!(
        check["name"], "plangate / plan",
        "the file's stem stands in for the id"
    );
    assert!(
        check["output"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("### Plan problems") && s.contains("unknown key")),
        "{check}"
    );
}

#[test]
fn a_saved_reports_plan_id_is_redacted_in_the_check_run_name_and_comment_marker() {
    let rt = rt();
    let server = serve(
        &rt,
        vec![
            (
                "POST",
                format!("{REPO}/check-runs"),
                201,
                json!({"id": 12}),
                Some(1),
            ),
            (
                "GET",
                format!("{REPO}/issues/3/comments"),
                200,
                json!([]),
                None,
            ),
            (
                "POST",
                format!("{REPO}/issues/3/comments"),
                201,
                json!({"id": 13}),
                Some(1),
            ),
        ],
    );
    let env = Env::new();
    let o = env.run(ok_plan(), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // A later job publishes a report whose plan id holds a secret.
    let path = env.out.join("report.json");
    let mut report: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}"));
    report["plan"]["id"] = json!(format!("deploy-{AWS_ID}"));
    std::fs::write(&path, report.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let mut c = env.cmd();
    for (k, _) in std::env::vars() {
        if k.starts_with("GITHUB_") {
            c.env_remove(k);
        }
    }
    let o = c
        .arg("report")
        .arg(&path)
        .arg("--publish-github")
        .env("GITHUB_REPOSITORY", "acme/widgets")
        .env("GITHUB_REF", "refs/pull/3/merge")
        .env("GITHUB_SHA", SHA)
        .env("PLANGATE_GITHUB_API_URL", server.uri())
        .env("PLANGATE_GITHUB_TOKEN", TOKEN)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    no_leak(&o);
    rt.block_on(server.verify());
    let reqs = requests(&rt, &server);
    check_requests(&reqs);
    let check = find(&reqs, "POST", &format!("{REPO}/check-runs"));
    let name = body(check[0])["name"].as_str().unwrap_or("").to_owned();
    assert!(name.starts_with("plangate / deploy-"), "{name}");
    let comment = find(&reqs, "POST", &format!("{REPO}/issues/3/comments"));
    let text = body(comment[0])["body"].as_str().unwrap_or("").to_owned();
    assert!(text.starts_with("<!-- plangate:deploy-"), "{text}");
}

#[test]
fn agent_results_show_in_the_comment_the_check_run_the_step_summary_and_the_report() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    rt.block_on(async {
        Mock::given(method("GET"))
            .and(path(format!("{REPO}/issues/7/comments")))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .mount(&server)
            .await;
    });
    mount(
        &rt,
        &server,
        vec![
            (
                "POST",
                format!("{REPO}/issues/7/comments"),
                201,
                json!({"id": 5}),
                None,
            ),
            (
                "POST",
                format!("{REPO}/check-runs"),
                201,
                json!({"id": 9}),
                None,
            ),
        ],
    );
    let env = Env::new();
    let answers = env.ws.parent().unwrap().join("answers.jsonl");
    let review = json!({"status": "OK", "summary": "Two issues: unchecked index in parse().", "artifacts": [{"path": "REVIEW.md", "content": "x\n"}], "next_actions": ["add a bounds check"]});
    let records = [
        json!({"step": "review", "attempt": 1, "answer": review.to_string()}),
        json!({"step": "score", "attempt": 1, "answer": json!({"score": 7, "verdict": "needs work"}).to_string()}),
        json!({"step": "patch", "attempt": 1, "answer": "```rust\nfn f() -> u8 { 1 }\n```"}),
    ];
    let lines: Vec<String> = records.iter().map(Value::to_string).collect();
    std::fs::write(&answers, lines.join("\n") + "\n").unwrap();
    let plan = format!(
        "version: 1\nid: gh\npolicy: {{risk_tolerance: medium}}\nagents:\n  r: {{provider: replay, file: {:?}}}\nsteps:\n  - {{id: review, tool: agent, parameters: {{agent: r, prompt: Review.}}}}\n  - {{id: score, tool: agent, parameters: {{agent: r, prompt: Score., output: json, schema: {{type: object}}}}}}\n  - {{id: patch, tool: agent, parameters: {{agent: r, prompt: Patch., output: code, language: rust}}}}\n",
        answers.display().to_string()
    );
    let summary = env.ws.parent().unwrap().join("summary.md");
    let summary_arg = summary.display().to_string();
    let o = {
        let plan = env.write("plan.yaml", &plan);
        let mut c = env.cmd();
        for (k, _) in std::env::vars() {
            if k.starts_with("GITHUB_") {
                c.env_remove(k);
            }
        }
        let event = env.write(".github-event.json", &pr_event().to_string());
        c.arg("run")
            .arg(&plan)
            .arg("--out")
            .arg(&env.out)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_REPOSITORY", "acme/widgets")
            .env("GITHUB_EVENT_PATH", &event)
            .env("GITHUB_SHA", "ffffffffffffffffffffffffffffffffffffffff")
            .env("GITHUB_STEP_SUMMARY", &summary_arg)
            .env("PLANGATE_GITHUB_TOKEN", TOKEN)
            .env("PLANGATE_GITHUB_API_URL", server.uri())
            .output()
            .unwrap()
    };
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let reqs = requests(&rt, &server);
    let comment = body(find(&reqs, "POST", &format!("{REPO}/issues/7/comments"))[0])["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let check = body(find(&reqs, "POST", &format!("{REPO}/check-runs"))[0])["output"]["summary"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let step_summary = std::fs::read_to_string(&summary).unwrap();
    let rendered = env
        .cmd()
        .args(["report", "--format", "markdown"])
        .arg(env.out.join("report.json"))
        .output()
        .unwrap();
    let rendered = String::from_utf8_lossy(&rendered.stdout).into_owned();
    for (name, text) in [
        ("comment", &comment),
        ("check run", &check),
        ("step summary", &step_summary),
        ("report --format markdown", &rendered),
    ] {
        for want in [
            "### Agent results",
            "Two issues: unchecked index in parse().",
            "Files: `REVIEW.md`",
            "- next: add a bounds check",
            "| `score` | 7 |",
            "| `verdict` | needs work |",
            "```rust\nfn f() -> u8 { 1 }\n```",
        ] {
            assert!(text.contains(want), "{name} lacks {want:?}:\n{text}");
        }
    }
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(env.out.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(
        report["steps"][0]["result"]["summary"],
        "Two issues: unchecked index in parse()."
    );
    assert_eq!(report["steps"][2]["result"]["language"], "rust");
}

/// Mocks for a pull request's first run: no comment yet, one created, one check run.
fn first_run_mocks(rt: &tokio::runtime::Runtime, server: &MockServer) {
    rt.block_on(async {
        mock(
            "GET",
            format!("{REPO}/issues/7/comments"),
            200,
            Some(json!([])),
        )
        .expect(1)
        .mount(server)
        .await;
        mock(
            "POST",
            format!("{REPO}/issues/7/comments"),
            201,
            Some(json!({"id": 556})),
        )
        .expect(1)
        .mount(server)
        .await;
        mock(
            "POST",
            format!("{REPO}/check-runs"),
            201,
            Some(json!({"id": 101})),
        )
        .expect(1)
        .mount(server)
        .await;
    });
}

#[test]
fn a_partial_success_concludes_the_check_run_neutral() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    first_run_mocks(&rt, &server);
    let env = Env::new();
    let plan = crate::outcomes::fixture("allowed.yaml");
    let o = run(&env, &server, &plan, &pr_event(), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    rt.block_on(server.verify());
    let reqs = requests(&rt, &server);
    check_requests(&reqs);
    let check = body(find(&reqs, "POST", &format!("{REPO}/check-runs"))[0]);
    assert_eq!(check["conclusion"], "neutral", "{check}");
    let title = check["output"]["title"].as_str().unwrap_or_default();
    assert!(title.starts_with("partial success (exit 0)"), "{title}");
    let comment = body(find(&reqs, "POST", &format!("{REPO}/issues/7/comments"))[0]);
    let text = comment["body"].as_str().unwrap_or_default();
    assert!(
        text.contains("## ⚠️ plangate: `batch` — partial success (exit 0)")
            && text.contains("- `pkg-b` failed, allowed by continue_on_error"),
        "{text}"
    );
    assert!(
        text.contains("<details><summary><code>pkg-b</code> failed (allowed by continue_on_error): exited with code 7</summary>")
            && text.contains("```text\nerror: b conflicts with a\n```"),
        "{text}"
    );
    assert!(
        stderr(&o).contains("check run 101 `plangate / batch` created (neutral)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_failed_steps_last_lines_reach_the_comment_redacted() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    first_run_mocks(&rt, &server);
    let env = Env::new();
    // No key the rules detect (that would withhold the excerpt: the next test).
    env.write("leak.txt", &format!("key=hidden {TOKEN}\n"));
    let plan = crate::outcomes::fixture("failing.yaml");
    let deploy = crate::outcomes::DEPLOY_TOKEN;
    let o = run_with(
        &env,
        &server,
        &plan,
        &pr_event(),
        &[],
        &[("DEPLOY_TOKEN", deploy)],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    rt.block_on(server.verify());
    let reqs = requests(&rt, &server);
    check_requests(&reqs);
    let comment = body(find(&reqs, "POST", &format!("{REPO}/issues/7/comments"))[0]);
    let text = comment["body"].as_str().unwrap_or_default();
    assert!(
        text.contains(
            "<details><summary><code>compile</code> failed: exited with code 1</summary>"
        ),
        "{text}"
    );
    // The fence is longer than the backtick run the output holds.
    assert!(
        text.contains("````text\nkey=hidden [REDACTED]\nsrc/main.rs:3: error: expected `;` near ``` <b>x</b> & more\n````"),
        "{text}"
    );
    assert!(text.contains("using token [REDACTED]"), "{text}");
    let check = body(find(&reqs, "POST", &format!("{REPO}/check-runs"))[0]);
    assert_eq!(check["conclusion"], "failure");
    for r in &reqs {
        let b = String::from_utf8_lossy(&r.body);
        assert!(!b.contains(&deploy[..12]), "{b}");
    }
    no_leak(&o);
}

#[test]
fn a_secret_finding_leaves_only_counts_and_the_verdict_in_the_comment_and_check_run() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    first_run_mocks(&rt, &server);
    let env = Env::new();
    env.write(
        "answers.jsonl",
        &format!(
            "{}\n",
            json!({"step": "review", "attempt": 1, "answer": "```json\n{\"status\": \"OK\", \"summary\": \"agent-free-text-marker\", \"artifacts\": [], \"next_actions\": [\"next-action-marker\"]}\n```\n"})
        ),
    );
    let plan = format!(
        "version: 1\nid: gh\npolicy: {{risk_tolerance: high}}\nagents:\n  r: {{provider: replay, file: answers.jsonl}}\nsteps:\n  - {{id: review, tool: agent, parameters: {{agent: r, prompt: Review., write_artifacts: false}}}}\n  - {{id: write, tool: bash, parameters: {{command: 'echo hi > changed-file-marker.txt'}}}}\n  - id: leak\n    tool: bash\n    continue_on_error: true\n    parameters: {{command: 'echo output-line-marker; echo {AWS_ID} >&2; exit 3'}}\n"
    );
    let o = run(&env, &server, &plan, &pr_event(), &[]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    rt.block_on(server.verify());
    let reqs = requests(&rt, &server);
    check_requests(&reqs);
    let comment = body(find(&reqs, "POST", &format!("{REPO}/issues/7/comments"))[0]);
    let check = body(find(&reqs, "POST", &format!("{REPO}/check-runs"))[0]);
    let summary = check["output"]["summary"].as_str().unwrap_or_default();
    for text in [comment["body"].as_str().unwrap_or_default(), summary] {
        for want in [
            "secrets_found (exit 4)",
            "3 step(s):",
            "**Withheld**: the run found 1 secret(s)",
            "1 secret(s) found (values redacted)",
            "| `leak` | bash | failed |",
            "| `review` | agent | success |",
        ] {
            assert!(text.contains(want), "`{want}` missing:\n{text}");
        }
        for never in [
            "output-line-marker",
            "agent-free-text-marker",
            "next-action-marker",
            "changed-file-marker",
            "exited with code",
            "<details>",
            "### Output",
            "### Agent results",
        ] {
            assert!(!text.contains(never), "`{never}` published:\n{text}");
        }
    }
    assert_eq!(check["conclusion"], "failure");
    // The step summary (the workflow run's own page) still has everything.
    let report = env.report();
    assert_eq!(
        report["steps"][0]["result"]["summary"],
        "agent-free-text-marker"
    );
}

/// A part of the sealed boundary that fails (forced here through the debug
/// build's test-only `PLANGATE_TEST_SEAL_FAIL`) is a property plangate cannot
/// enforce: no step runs, nothing is published (not even the check run an
/// invalid plan gets), exit 2 with the `invalid` report written all the same.
#[test]
fn a_failed_seal_runs_and_publishes_nothing() {
    let rt = rt();
    let plan = "version: 1\nid: gh\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: touch, tool: bash, parameters: {command: 'touch ran.txt'}}\n";
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "cmdline",
            &["--github-token=fake-flag-Wm3Qz8Rt1Kd6"],
            "cannot mask the value of a credential flag",
        ),
        (
            "cmdline",
            &["--gitlab-token", "fake-flag-Wm3Qz8Rt1Kd6"],
            "in /proc/self/cmdline",
        ),
        ("environ", &[], "/proc/self/environ"),
        ("dumpable", &[], "non-dumpable"),
        ("subreaper", &[], "child subreaper"),
    ];
    for (part, args, says) in cases {
        let server = rt.block_on(MockServer::start());
        let env = Env::new();
        let o = run_with(
            &env,
            &server,
            plan,
            &push_event(),
            args,
            &[("PLANGATE_TEST_SEAL_FAIL", part)],
        );
        let err = stderr(&o);
        assert_eq!(code(&o), 2, "{part}: {err}");
        assert!(err.contains(says), "{part}: {err}");
        assert!(err.contains("runs nothing and publishes nothing"), "{err}");
        assert!(!err.contains("fake-flag-Wm3Qz8Rt1Kd6"), "{err}");
        assert!(!env.ws.join("ran.txt").exists(), "{part}: the step ran");
        let report = env.report();
        assert_eq!(report["status"], "invalid", "{part}");
        assert_eq!(report["exit_code"], 2, "{part}");
        assert!(
            report["errors"].to_string().contains(says),
            "{part}: {report}"
        );
        assert!(
            requests(&rt, &server).is_empty(),
            "{part}: published with a broken seal"
        );
    }
    // The mask failing with no credential flag to mask costs nothing.
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 1})))
            .mount(&server),
    );
    let env = Env::new();
    let o = run_with(
        &env,
        &server,
        plan,
        &push_event(),
        &[],
        &[("PLANGATE_TEST_SEAL_FAIL", "cmdline")],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(env.ws.join("ran.txt").exists());
}
