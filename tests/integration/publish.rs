//! Effects only through plangate (`publish:` and `$PLANGATE_REQUESTS`), the
//! real binary: requests refused fail their step, the gates after the run
//! withhold what they must, a dry run lists what the plan may publish, and
//! what passed is applied on a stand-in GitHub API (wiremock).

use std::process::Output;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::forge::{ask, ci_cmd, mount, plan, rows as publish_rows, rt};
use crate::harness::{Env, code, fake_agent, stderr};

const TOKEN: &str = "plangate-publish-token-8c1d2e3f4a5b6c7d";
const AWS_ID: &str = "AKIAZ7Q4NX2LMRBT5KPW";
const REPO: &str = "/repos/acme/widgets";

#[test]
fn a_request_the_plan_does_not_declare_fails_its_step() {
    let env = Env::new();
    let o = env.run(
        &plan(
            "{comment: {max: 1}}",
            &[("a", &ask(r#"{"type": "issue", "title": "x"}"#))],
        ),
        &[],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = env.step("a")["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        err.contains("line 1: `issue` is not declared under `publish:`"),
        "{err}"
    );
    assert!(publish_rows(&env).is_empty());
}

#[test]
fn over_cap_malformed_and_cut_short_requests_fail_their_steps() {
    let cases: &[(&str, String, &str)] = &[
        (
            "{comment: {max: 1}}",
            format!(
                "{}\n{}",
                ask(r#"{"type": "comment", "body": "a"}"#),
                ask(r#"{"type": "comment", "body": "b"}"#)
            ),
            "line 2: more than 1 `comment`",
        ),
        (
            "{labels: {allowed: [lint]}}",
            ask(r#"{"type": "labels", "labels": ["admin"]}"#),
            "label `admin` is not allowed",
        ),
        (
            "{review: {verdict: [comment], max_comments: 1}}",
            ask(r#"{"type": "review", "verdict": "approve"}"#),
            "verdict `approve` is not allowed",
        ),
        (
            "{issue: {title_prefix: 'bot: '}}",
            ask(r#"{"type": "issue", "title": "crash"}"#),
            "must start with `bot: `",
        ),
        (
            "{comment: {max: 1}}",
            ask(r#"{"type": "comment", "body": "a", "mention": "@all"}"#),
            "unknown field `mention`",
        ),
        (
            "{comment: {max: 1}}",
            "echo 'not json' >> \"$PLANGATE_REQUESTS\"".to_owned(),
            "line 1: not a valid request",
        ),
        (
            "{comment: {max: 1}}",
            r#"printf '{"type": "comment", "bo' >> "$PLANGATE_REQUESTS""#.to_owned(),
            "line 1: cut short",
        ),
    ];
    for (publish, cmd, want) in cases {
        let env = Env::new();
        let o = env.run(&plan(publish, &[("a", cmd)]), &[]);
        assert_eq!(code(&o), 1, "{cmd}: {}", stderr(&o));
        let err = env.step("a")["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(err.contains(want), "{cmd}: {err}");
    }
}

#[test]
fn a_requests_file_replaced_by_a_link_is_never_followed() {
    let env = Env::new();
    let cmd = "echo '{\"type\": \"comment\", \"body\": \"x\"}' > \"$PLANGATE_STEP_ARTIFACTS/other\"\nln -sf \"$PLANGATE_STEP_ARTIFACTS/other\" \"$PLANGATE_REQUESTS\"";
    let o = env.run(&plan("{comment: {max: 1}}", &[("a", cmd)]), &[]);
    // The step fails naming the file (never a silent "nothing asked"); the
    // sweep removes the link; the request behind it is never read.
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        env.step_error("a").contains(
            "$PLANGATE_REQUESTS (`artifacts/a/requests.jsonl`) was replaced by a symbolic link"
        ),
        "{}",
        env.step_error("a")
    );
    assert!(publish_rows(&env).is_empty(), "{:?}", publish_rows(&env));
}

#[test]
fn an_agent_steps_bad_request_is_a_rejection_exit_5() {
    let env = Env::new();
    let good = "```json\n{\"status\": \"OK\", \"summary\": \"done\", \"artifacts\": [], \"next_actions\": []}\n```\n";
    let (dir, _) = fake_agent(&env, "reviewer", &[good]);
    let script = dir.join("asks.sh");
    // The agent CLI: reads its prompt, asks for a review with a verdict the
    // plan does not allow, answers a good envelope.
    std::fs::write(
        &script,
        "cat > /dev/null\necho '{\"type\": \"review\", \"verdict\": \"approve\"}' >> \"$PLANGATE_REQUESTS\"\ncat \"$1/1.txt\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let yaml = format!(
        "version: 1\nid: pub\npolicy: {{risk_tolerance: medium}}\npublish: {{review: {{verdict: [comment]}}}}\nagents:\n  reviewer:\n    command: [bash, {:?}, {:?}]\n    timeout: 30\nsteps:\n  - id: review\n    tool: agent\n    parameters:\n      agent: reviewer\n      prompt: Review.\n",
        script.display().to_string(),
        dir.display().to_string()
    );
    let o = env.run(&yaml, &[]);
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    let s = env.step("review");
    assert_eq!(s["status"], "rejected");
    assert!(
        s["error"]
            .as_str()
            .unwrap_or_default()
            .contains("verdict `approve` is not allowed"),
        "{s}"
    );
}

#[test]
fn a_dry_run_lists_what_the_plan_may_publish_and_publishes_nothing() {
    let env = Env::new();
    let o = env.run(
        &plan(
            "{comment: {max: 1}, labels: {allowed: [lint]}}",
            &[("a", &ask(r#"{"type": "comment", "body": "x"}"#))],
        ),
        &["--dry-run"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rows = publish_rows(&env);
    let kinds: Vec<&str> = rows.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert_eq!(kinds, ["comment", "labels"]);
    assert!(
        rows.iter().all(|r| r["state"] == "would_publish"),
        "{rows:?}"
    );
    let console = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(
        console.contains("publish: comment: would_publish"),
        "{console}"
    );
}

#[test]
fn a_protected_path_blocks_the_pull_request_and_draft_downgrades_it() {
    let cmd = format!(
        "mkdir -p .github/workflows && echo 'on: push' > .github/workflows/ci.yml\n{}",
        ask(r#"{"type": "pull_request", "title": "[bot] fix"}"#)
    );
    let publish = "{pull_request: {branch: 'bot/{run}', title_prefix: '[bot] '}}";
    let env = Env::new();
    let o = env.run(&plan(publish, &[("fix", &cmd)]), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rows = publish_rows(&env);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["state"], "withheld");
    let reason = rows[0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("`.github/workflows/ci.yml` is a protected path"),
        "{reason}"
    );
    // The same patch under a policy that downgrades protected paths to a draft.
    let env = Env::new();
    let yaml = plan(publish, &[("fix", &cmd)]).replace(
        "policy: {risk_tolerance: medium}",
        "policy: {risk_tolerance: medium, patch: {protected: draft}}",
    );
    let o = env.run(&yaml, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rows = publish_rows(&env);
    // CI configuration runs on push, draft or not: an issue with the patch.
    assert_eq!(
        (rows[0]["state"].as_str(), rows[0]["kind"].as_str()),
        (Some("would_publish"), Some("issue")),
        "{rows:?}"
    );
    assert!(
        rows[0]["policy"]
            .as_str()
            .unwrap_or_default()
            .contains("is CI configuration"),
        "{rows:?}"
    );
    // A protected path that is not CI configuration: a draft.
    let env = Env::new();
    let manifest = format!(
        "echo '{{}}' > package.json\n{}",
        ask(r#"{"type": "pull_request", "title": "[bot] fix"}"#)
    );
    let drafted = plan(publish, &[("fix", &manifest)]).replace(
        "policy: {risk_tolerance: medium}",
        "policy: {risk_tolerance: medium, patch: {protected: draft}}",
    );
    let o = env.run(&drafted, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rows = publish_rows(&env);
    assert_eq!(rows[0]["state"], "would_publish", "{rows:?}");
    assert_eq!(rows[0]["draft"], true, "{rows:?}");
    // An unknown key of the patch block is a load error naming the line.
    let env = Env::new();
    let bad = yaml.replace("protected: draft", "protect: draft");
    let o = env.run(&bad, &[]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("plan.yaml:3:"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unknown key `protect`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_unknown_key_in_publish_is_a_load_error_naming_file_and_line() {
    let env = Env::new();
    let o = env.run(
        &plan("{comment: {max: 1, markr: x}}", &[("a", "true")]),
        &[],
    );
    assert_eq!(code(&o), 2);
    let e = stderr(&o);
    assert!(
        e.contains("plan.yaml:4:") && e.contains("unknown key `markr`"),
        "{e}"
    );
    assert!(e.contains("did you mean `marker`"), "{e}");
}

/// `plangate run` under GitHub Actions on pull request 7, publishing to `server`.
fn gh_run(env: &Env, server: &MockServer, yaml: &str) -> Output {
    let plan = env.write("plan.yaml", yaml);
    let event = env.write(
        ".event.json",
        &json!({"number": 7, "pull_request": {"number": 7, "head": {"sha": "0123456789abcdef0123456789abcdef01234567"}}}).to_string(),
    );
    let mut c = ci_cmd(env, &["GITHUB_"]);
    c.arg("run")
        .arg(&plan)
        .arg("--out")
        .arg(&env.out)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_REPOSITORY", "acme/widgets")
        .env("GITHUB_EVENT_PATH", &event)
        .env("GITHUB_SHA", "ffffffffffffffffffffffffffffffffffffffff")
        .env("GITHUB_API_URL", "https://api.github.invalid")
        .env("PLANGATE_GITHUB_TOKEN", TOKEN)
        .env("PLANGATE_GITHUB_API_URL", server.uri())
        // The run-summary comment and check run are another feature (github.rs).
        .env("PLANGATE_COMMENT", "false")
        .env("PLANGATE_CHECK_RUN", "false")
        .timeout(std::time::Duration::from_secs(120));
    c.output().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_secret_in_the_diff_publishes_nothing_and_the_report_says_withheld() {
    let rt = rt();
    let server = rt.block_on(MockServer::start());
    let env = Env::new();
    let cmd = format!(
        "echo 'key = {AWS_ID}' > config.txt\n{}",
        ask(r#"{"type": "comment", "body": "all good"}"#)
    );
    let o = gh_run(&env, &server, &plan("{comment: {max: 1}}", &[("a", &cmd)]));
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let reqs = rt.block_on(server.received_requests()).unwrap_or_default();
    assert!(
        reqs.iter().all(|r| r.method.as_str() == "GET"),
        "nothing may be written: {:?}",
        reqs.iter()
            .map(|r| format!("{} {}", r.method, r.url))
            .collect::<Vec<_>>()
    );
    let rows = publish_rows(&env);
    assert_eq!(rows[0]["state"], "withheld", "{rows:?}");
    assert!(
        rows[0]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("secret")
    );
}

#[test]
fn a_comment_is_created_then_updated_in_place_and_no_step_sees_the_token() {
    let rt = rt();
    let yaml = plan(
        "{comment: {max: 1, marker: lint}, labels: {allowed: [lint]}}",
        &[(
            "a",
            &format!(
                "! env | grep -q {TOKEN}\ntest -z \"${{PLANGATE_GITHUB_TOKEN:-}}${{GITHUB_TOKEN:-}}\"\n{}\n{}",
                ask(r#"{"type": "comment", "body": "lint: 0 problems"}"#),
                ask(r#"{"type": "labels", "labels": ["lint"]}"#)
            ),
        )],
    );
    let comments = format!("{REPO}/issues/7/comments");
    let mark = "<!-- plangate:pub:comment:lint -->";
    for (existing, verb, route) in [
        (json!([]), "POST", comments.clone()),
        (
            json!([{"id": 31, "body": format!("{mark}\nold")}]),
            "PATCH",
            format!("{REPO}/issues/comments/31"),
        ),
    ] {
        let server = rt.block_on(MockServer::start());
        rt.block_on(async {
            Mock::given(method("GET"))
                .and(path(&comments))
                .respond_with(ResponseTemplate::new(200).set_body_json(existing))
                .mount(&server)
                .await;
        });
        mount(
            &rt,
            &server,
            vec![
                (
                    verb,
                    route.clone(),
                    200,
                    json!({"id": 31, "html_url": "https://github.example/c/31"}),
                    Some(1),
                ),
                (
                    "POST",
                    format!("{REPO}/issues/7/labels"),
                    200,
                    json!([]),
                    Some(1),
                ),
            ],
        );
        let env = Env::new();
        let o = gh_run(&env, &server, &yaml);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        rt.block_on(server.verify());
        let reqs = rt.block_on(server.received_requests()).unwrap_or_default();
        let sent = reqs
            .iter()
            .find(|r| r.method.as_str() == verb && r.url.path() == route)
            .unwrap_or_else(|| panic!("no {verb} {route}"));
        let body: Value = sent.body_json().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(body["body"], format!("{mark}\nlint: 0 problems"));
        for r in &reqs {
            assert!(!String::from_utf8_lossy(&r.body).contains(TOKEN));
        }
        let rows = publish_rows(&env);
        assert_eq!(rows[0]["state"], "published", "{rows:?}");
        assert_eq!(rows[0]["url"], "https://github.example/c/31");
        assert_eq!(rows[1]["state"], "published", "{rows:?}");
    }
}

/// A plan with one agent step (the fake agent answering `good`) under `publish`,
/// with `extra` parameter lines for the step.
fn agent_plan(env: &Env, publish: &str, extra: &str) -> (std::path::PathBuf, String) {
    let good = "```json\n{\"status\": \"OK\", \"summary\": \"done\", \"artifacts\": [], \"next_actions\": []}\n```\n";
    let (dir, agent) = fake_agent(env, "reviewer", &[good]);
    let yaml = format!(
        "version: 1\nid: pub\npolicy: {{risk_tolerance: medium}}\npublish: {publish}\nagents:\n{agent}steps:\n  - id: review\n    tool: agent\n    parameters:\n      agent: reviewer\n      prompt: Review.\n{extra}"
    );
    (dir, yaml)
}

#[test]
fn an_agent_is_shown_the_schemas_of_the_declared_kinds_only() {
    let env = Env::new();
    let (dir, yaml) = agent_plan(
        &env,
        "{review: {verdict: [comment, request_changes], max_comments: 4}, labels: {allowed: [needs-work]}}",
        "",
    );
    let o = env.run(&yaml, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let prompt = crate::harness::prompt_of(&dir, 1);
    assert!(prompt.contains("$PLANGATE_REQUESTS"), "{prompt}");
    for want in [
        "\nreview: {\"type\":\"review\",\"verdict\":\"comment\"",
        "one of `comment`, `request_changes`",
        "at most 4 inline comments",
        "\nlabels: {\"type\":\"labels\",\"labels\":[\"needs-work\"]}",
        "only `needs-work`",
    ] {
        assert!(prompt.contains(want), "`{want}` missing:\n{prompt}");
    }
    for kind in ["pull_request", "comment", "issue", "check_run"] {
        assert!(
            !prompt.contains(&format!("\"type\":\"{kind}\"")),
            "undeclared `{kind}` shown:\n{prompt}"
        );
    }
    assert!(!prompt.contains("approve"), "{prompt}");
    // Turned off on the step: no section.
    let env = Env::new();
    let (dir, yaml) = agent_plan(
        &env,
        "{labels: {allowed: [x]}}",
        "      publish_schemas: false\n",
    );
    let o = env.run(&yaml, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let prompt = crate::harness::prompt_of(&dir, 1);
    assert!(!prompt.contains("PLANGATE_REQUESTS"), "{prompt}");
    // No `publish:` in the plan: no section either.
    let env = Env::new();
    let (dir, yaml) = agent_plan(&env, "{}", "");
    let o = env.run(&yaml, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!crate::harness::prompt_of(&dir, 1).contains("PLANGATE_REQUESTS"));
}

#[test]
fn publish_schemas_on_an_agent_that_runs_no_process_is_a_load_error() {
    let env = Env::new();
    let yaml = "version: 1\nid: pub\npublish: {comment: {}}\nagents:\n  api:\n    provider: openai\n    model: gpt-x\n    base_url: http://127.0.0.1:9\nsteps:\n  - id: a\n    tool: agent\n    parameters:\n      agent: api\n      prompt: Hi.\n      publish_schemas: true\n";
    let o = env.run(yaml, &["--dry-run"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot append requests to $PLANGATE_REQUESTS"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_agent_steps_malformed_undeclared_or_over_cap_request_is_exit_5() {
    for (line, why) in [
        (r#"{"type": "review", "verdict": "comment""#, "cut short"),
        (
            r#"{"type": "comment", "body": "hi"}"#,
            "`comment` is not declared",
        ),
        (
            r#"{"type": "review", "verdict": "comment", "extra": 1}"#,
            "unknown field `extra`",
        ),
        (
            r#"{"type": "review", "verdict": "comment", "comments": [{"path": "a", "line": 1, "body": "x"}, {"path": "a", "line": 2, "body": "y"}]}"#,
            "more than publish.review.max_comments 1",
        ),
        (
            r#"{"type": "labels", "labels": ["lgtm"]}"#,
            "label `lgtm` is not allowed",
        ),
    ] {
        let env = Env::new();
        let (dir, yaml) = agent_plan(
            &env,
            "{review: {verdict: [comment], max_comments: 1}, labels: {allowed: [x]}}",
            "",
        );
        // The stand-in agent asks for `line` (printf keeps it byte for byte), then answers well.
        let script = dir.join("asks.sh");
        std::fs::write(dir.join("request.txt"), line).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            &script,
            "cat > /dev/null\ncat \"$1/request.txt\" >> \"$PLANGATE_REQUESTS\"\ncat \"$1/1.txt\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let yaml = yaml.replace("/tests/fixtures/fake_agent/answers.sh", "/../../__none__");
        let yaml = {
            let start = yaml.find("command: [bash, ").unwrap_or(0);
            let end = yaml[start..].find(']').map_or(start, |e| start + e + 1);
            format!(
                "{}command: [bash, {:?}, {:?}]{}",
                &yaml[..start],
                script.display().to_string(),
                dir.display().to_string(),
                &yaml[end..]
            )
        };
        let o = env.run(&yaml, &[]);
        assert_eq!(code(&o), 5, "{line}: {}", stderr(&o));
        let s = env.step("review");
        assert_eq!(s["status"], "rejected", "{s}");
        let err = s["error"].as_str().unwrap_or_default();
        assert!(
            err.contains("publish request refused") && err.contains(why),
            "{line}: {err}"
        );
        assert!(publish_rows(&env).is_empty(), "{:?}", publish_rows(&env));
    }
}
