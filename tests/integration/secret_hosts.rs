//! Where a secret may go (issue 23, item 5: the policy caps the plan). A plan
//! is written by whoever opened the pull request, so only the operator's
//! `--policy` file (its `allowed_hosts`, its `secret_hosts`) lets a step send
//! a declared secret to a host; the plan's own `allowed_hosts` never counts.
//! Otherwise the step is dangerous: not auto-approved at medium, run with
//! `--approve`. The servers are local stand-ins; every value is made up.
//! Steps whose processes hold a secret (`egress`, `network: true`) need a
//! sandbox backend: tests/facilities/egress.rs.

use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{Env, MockServer, code, mock_server, stderr};

const TOKEN: &str = "pg-secret-host-token-5c1d9e27b4a8";

/// How a run is given its operator policy. The stand-ins listen on
/// 127.0.0.1, an address `http_request` reaches only where the operator
/// names it: each policy names it for a secret no step sends
/// (`PG_STAND_IN`), unless it names it already.
#[derive(Clone, Copy)]
enum Operator<'a> {
    /// A `--policy` file that allows no host for any secret the steps send.
    None,
    /// A `--policy` file with this text.
    File(&'a str),
}

const STAND_IN: &str = "secret_hosts: {PG_STAND_IN: [\"127.0.0.1\"]}\n";

fn command(env: &Env, verb: &str, plan: &str, op: Operator<'_>, args: &[&str]) -> Output {
    let path = env.write("plan.yaml", plan);
    let mut c = env.cmd();
    c.env_remove("PLANGATE_POLICY")
        .env("MY_TOKEN", TOKEN)
        .env("PG_AGENT_KEY", TOKEN)
        .env("PG_ORG_TOKEN", TOKEN)
        .arg(verb)
        .arg(&path)
        .args(["--risk-tolerance", "medium"]);
    if verb == "run" {
        c.arg("--out").arg(&env.out);
    } else {
        c.args(["--format", "json"]);
    }
    let text = match op {
        Operator::None => format!("risk_tolerance: medium\n{STAND_IN}"),
        Operator::File(text) if text.contains("127.0.0.1") => text.to_owned(),
        Operator::File(text) => format!("{text}{STAND_IN}"),
    };
    let p = env.ws.parent().unwrap().join("operator-policy.yaml");
    std::fs::write(&p, text).unwrap();
    c.arg("--policy").arg(p);
    c.args(args).timeout(Duration::from_secs(120));
    c.output().unwrap()
}

fn http_plan(url: &str, header: &str, plan_policy: &str) -> String {
    format!(
        "version: 1\nid: s\n{plan_policy}steps:\n  - id: call\n    tool: http_request\n    secrets: [MY_TOKEN]\n    parameters:\n      method: GET\n      url: {url}/x\n      headers:\n        {header}\n"
    )
}

const SECRET_HEADER: &str = "Authorization: {secret: MY_TOKEN, format: \"Bearer {}\"}";

/// Everything the stand-in received, heads and bodies.
fn received(s: &MockServer) -> String {
    std::thread::sleep(Duration::from_millis(50));
    s.requests
        .lock()
        .unwrap()
        .iter()
        .map(|(h, b)| format!("{h}\n{b}"))
        .collect()
}

fn host_port(s: &MockServer) -> String {
    s.url.trim_start_matches("http://").to_owned()
}

/// Without the operator's say, a secret header to any host is denied at
/// medium (exit 3) and nothing is sent; the plan's own `allowed_hosts` does
/// not help; the policy file's `allowed_hosts` or `secret_hosts` for that
/// name does, as does `--approve`; a request without the secret is unaffected.
#[test]
fn a_secret_header_goes_only_to_a_host_the_operators_policy_allows() {
    let denied = |plan_policy: &str, op: Operator<'_>, args: &[&str]| {
        let env = Env::new();
        let server = mock_server(vec![(200, "{}".into())]);
        let o = command(
            &env,
            "run",
            &http_plan(&server.url, SECRET_HEADER, plan_policy),
            op,
            args,
        );
        assert_eq!(code(&o), 3, "{plan_policy:?}: {}", stderr(&o));
        let s = env.step("call");
        assert_eq!(s["approval"]["decision"], "denied", "{s:#}");
        let why = s["approval"]["reason"].as_str().unwrap();
        let want = format!(
            "sends secret `MY_TOKEN` to `{}`, which the operator's policy does not allow (a plan's own allowed_hosts does not count); add the host to the --policy file's allowed_hosts",
            host_port(&server)
        );
        assert!(why.contains(&want), "{why}");
        assert!(
            why.starts_with("dangerous risk exceeds tolerance medium"),
            "{why}"
        );
        assert_eq!(received(&server), "", "nothing reaches the server");
        assert!(!stderr(&o).contains(TOKEN));
    };
    let runs = |plan_policy: &str, op: Operator<'_>, args: &[&str], header: &str| {
        let env = Env::new();
        let server = mock_server(vec![(200, "{}".into())]);
        let o = command(
            &env,
            "run",
            &http_plan(&server.url, header, plan_policy),
            op,
            args,
        );
        assert_eq!(code(&o), 0, "{plan_policy:?} {args:?}: {}", stderr(&o));
        received(&server)
    };
    denied("", Operator::None, &[]);
    // The plan's own list: it names the host, and it counts for nothing here.
    denied(
        "policy: {allowed_hosts: [\"127.0.0.1\"]}\n",
        Operator::None,
        &[],
    );
    // A policy file that allows the host for another secret only, or sets no host.
    denied(
        "",
        Operator::File("risk_tolerance: medium\nsecret_hosts: {OTHER_TOKEN: [\"127.0.0.1\"]}\n"),
        &[],
    );
    denied(
        "policy: {allowed_hosts: [\"127.0.0.1\"]}\n",
        Operator::File("risk_tolerance: medium\n"),
        &[],
    );
    let bearer = format!("authorization: bearer {TOKEN}");
    for op in [
        "risk_tolerance: medium\nallowed_hosts: [\"127.0.0.1\"]\n",
        "risk_tolerance: medium\nsecret_hosts: {MY_TOKEN: [\"127.0.0.1\"]}\n",
    ] {
        let got = runs("", Operator::File(op), &[], SECRET_HEADER);
        assert!(got.to_ascii_lowercase().contains(&bearer), "{op}: {got}");
    }
    let got = runs("", Operator::None, &["--approve", "call"], SECRET_HEADER);
    assert!(got.to_ascii_lowercase().contains(&bearer), "{got}");
    // No secret in the request: a read at medium, as before.
    let got = runs("", Operator::None, &[], "Accept: application/json");
    assert!(got.starts_with("GET /x"), "{got}");
}

/// `validate` decides as `run` does: exit 3, the same decision and reason.
#[test]
fn validate_and_run_agree_that_a_secret_to_a_host_the_operator_did_not_allow_is_denied() {
    let env = Env::new();
    let server = mock_server(vec![(200, "{}".into())]);
    let plan = http_plan(&server.url, SECRET_HEADER, "");
    let v = command(&env, "validate", &plan, Operator::None, &[]);
    assert_eq!(code(&v), 3, "{}", stderr(&v));
    let shown: Value = serde_json::from_slice(&v.stdout).unwrap();
    let step = &shown["steps"][0];
    assert_eq!(step["approval"]["decision"], "denied", "{step:#}");
    assert_eq!(step["risk"]["effective"], "dangerous", "{step:#}");
    let o = command(&env, "run", &plan, Operator::None, &[]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(env.step("call")["approval"], step["approval"]);
    // Allowed by the policy file: both auto-approve it.
    let op = Operator::File("risk_tolerance: medium\nallowed_hosts: [\"127.0.0.1\"]\n");
    let v = command(&env, "validate", &plan, op, &[]);
    assert_eq!(code(&v), 0, "{}", stderr(&v));
    let shown: Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(shown["steps"][0]["approval"]["decision"], "auto_approved");
    assert_eq!(received(&server), "");
}

/// An HTTP agent provider sends its key and its header variables to
/// `base_url`: a host the plan names, so the operator must allow it. Its
/// vendor's own API (`base_url` unset) needs nothing.
#[test]
fn an_http_agents_key_goes_only_to_its_vendor_or_a_host_the_operator_allows() {
    let agent_plan = |def: &str| {
        format!(
            "version: 1\nid: a\nagents:\n  llm:\n{def}steps:\n  - id: fix\n    tool: agent\n    parameters:\n      agent: llm\n      prompt: Say done.\n"
        )
    };
    let anthropic = |url: &str| {
        format!(
            "    provider: anthropic\n    base_url: {url}\n    model: m\n    api_key_env: PG_AGENT_KEY\n    max_retries: 0\n"
        )
    };
    let openai_header = |url: &str| {
        format!(
            "    provider: openai\n    base_url: {url}/v1\n    model: m\n    max_retries: 0\n    headers: {{X-Org: PG_ORG_TOKEN}}\n"
        )
    };
    for (def, secret) in [
        (&anthropic as &dyn Fn(&str) -> String, "PG_AGENT_KEY"),
        (&openai_header, "PG_ORG_TOKEN"),
    ] {
        let env = Env::new();
        let server = mock_server(vec![(500, "{}".into())]);
        let plan = agent_plan(&def(&server.url));
        let o = command(&env, "run", &plan, Operator::None, &[]);
        assert_eq!(code(&o), 3, "{secret}: {}", stderr(&o));
        let why = env.step("fix")["approval"]["reason"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            why.contains(&format!(
                "sends secret `{secret}` to `{}`",
                host_port(&server)
            )),
            "{why}"
        );
        assert_eq!(
            received(&server),
            "",
            "{secret}: nothing reaches the server"
        );
        let op = Operator::File("risk_tolerance: medium\nallowed_hosts: [\"127.0.0.1\"]\n");
        let o = command(&env, "run", &plan, op, &[]);
        assert_ne!(code(&o), 3, "{secret}: {}", stderr(&o));
        assert!(
            received(&server).contains(TOKEN),
            "{secret}: the allowed host gets it"
        );
    }
    // The vendor's API: decided as before (validate only: no real host is called).
    let env = Env::new();
    let plan = agent_plan("    provider: anthropic\n    model: m\n    api_key_env: PG_AGENT_KEY\n");
    let v = command(&env, "validate", &plan, Operator::None, &[]);
    assert_eq!(code(&v), 0, "{}", stderr(&v));
    let shown: Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(shown["steps"][0]["approval"]["decision"], "auto_approved");
}

/// `secret_hosts` is the operator's: a plan that sets it is invalid, and a
/// policy file's entries are checked at load (file, line, what to do).
#[test]
fn secret_hosts_belongs_to_the_policy_file_and_is_checked_at_load() {
    let env = Env::new();
    let server = mock_server(Vec::new());
    let plan = http_plan(
        &server.url,
        SECRET_HEADER,
        "policy:\n  secret_hosts: {MY_TOKEN: [\"127.0.0.1\"]}\n",
    );
    let o = command(&env, "run", &plan, Operator::None, &[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("plan.yaml:4") && err.contains("only a --policy file"),
        "{err}"
    );
    let plan = http_plan(&server.url, SECRET_HEADER, "");
    for (text, line, says) in [
        (
            "risk_tolerance: medium\nsecret_hosts:\n  MY_TOKEN: [\"127.0.0.1\", \"bad host!\"]\n",
            3,
            "`secret_hosts.MY_TOKEN`: `bad host!`",
        ),
        (
            "secret_hosts:\n  \"MY-TOKEN\": [\"127.0.0.1\"]\n",
            2,
            "`MY-TOKEN` is not the name of a secret",
        ),
    ] {
        let o = command(&env, "run", &plan, Operator::File(text), &[]);
        assert_eq!(code(&o), 2, "{text}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("operator-policy.yaml:{line}")) && err.contains(says),
            "{text}: {err}"
        );
    }
    assert_eq!(received(&server), "");
}
