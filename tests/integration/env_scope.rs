//! The scoped environment through the binary: a step's processes get the
//! allow-list, `env_passthrough`, their `env` and the secrets they declare,
//! nothing else; every secret value is masked in every output.
//!
//! Every value here is made up for the test.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{Env, code, fake_agent, stderr};

const GITHUB_TOKEN: &str = "fake-gh-Xq7Lm2Vp9Rt4Wz8Kc3";
const GH_TOKEN: &str = "fake-ghcli-Hs5Nd8Qa1Yb6Ue0J";
const CI_JOB_TOKEN: &str = "fake-job-Pj4Tg7Ze2Mk9Vr5B";
const FOO_API_KEY: &str = "fake-key-Wc3Ry8Lx6Na1Qf7D";
const AWS_SECRET: &str = "fake-aws-Bn2Ks9Gv4Ht7Pm0X";
const ACTIONS_TOKEN: &str = "fake-rt-Jd6Fw1Sc8Zq3Ly5E";

/// `plangate` with the CI-like environment every test here starts from.
fn ci_cmd(env: &Env, plan: &str, extra: &[(&str, &str)]) -> assert_cmd::Command {
    let p = env.write("plan.yaml", plan);
    let mut c = env.cmd();
    c.arg("run").arg(&p).arg("--out").arg(&env.out);
    for (k, v) in [
        ("GITHUB_TOKEN", GITHUB_TOKEN),
        ("GH_TOKEN", GH_TOKEN),
        ("CI_JOB_TOKEN", CI_JOB_TOKEN),
        ("FOO_API_KEY", FOO_API_KEY),
        ("AWS_SECRET_ACCESS_KEY", AWS_SECRET),
        ("ACTIONS_RUNTIME_TOKEN", ACTIONS_TOKEN),
        ("ACTIONS_ID_TOKEN_REQUEST_URL", "https://example.invalid/id"),
        ("CI", "true"),
        ("GITHUB_SHA", "0123456789abcdef0123456789abcdef01234567"),
        ("GITHUB_REPOSITORY", "octo/repo"),
        ("GITHUB_RUN_ID", "4242"),
        ("CI_PROJECT_PATH", "group/project"),
        ("LC_ALL", "C"),
        ("UNLISTED_VAR", "not-for-steps"),
        ("NODE_OPTIONS", "--require /tmp/evil.js"),
        ("PLANGATE_TEST_MARKER", "outer"),
    ]
    .iter()
    .chain(extra)
    {
        c.env(k, v);
    }
    c.timeout(Duration::from_secs(120));
    c
}

/// `NAME=value` lines of an `env` dump (multi-line values: only their first line).
fn env_dump(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p)
                .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
            {
                hits.push(p.display().to_string());
            }
        }
    }
    hits
}

fn assert_nowhere(env: &Env, o: &std::process::Output, values: &[&str]) {
    for v in values {
        let hits = files_containing(&env.out, v);
        assert!(hits.is_empty(), "{v} left in {hits:?}");
        assert!(
            !String::from_utf8_lossy(&o.stdout).contains(v),
            "{v} on stdout"
        );
        assert!(!stderr(o).contains(v), "{v} on stderr");
    }
}

fn names(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn only_the_allow_list_env_and_declared_secrets_reach_a_step() {
    let env = Env::new();
    let gh = tempfile::tempdir().unwrap();
    let files: Vec<(&str, String)> = [
        "GITHUB_ENV",
        "GITHUB_OUTPUT",
        "GITHUB_PATH",
        "GITHUB_STEP_SUMMARY",
    ]
    .iter()
    .map(|n| {
        let p = gh.path().join(n);
        std::fs::write(&p, "").unwrap();
        (*n, p.display().to_string())
    })
    .collect();
    let extra: Vec<(&str, &str)> = files.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let plan = r#"version: 1
id: t
policy: {risk_tolerance: high}
steps:
  - id: show
    tool: bash
    secrets: [FOO_API_KEY]
    env: {GREETING: hi}
    parameters:
      command: |
        # (bash's own PWD holds the random temporary path, which the generic-password rule flags)
        env | grep -v '^PWD='
        echo "key=$FOO_API_KEY"
        echo "to stderr: $FOO_API_KEY" >&2
        for f in "${GITHUB_ENV:-}" "${GITHUB_PATH:-}" "${GITHUB_OUTPUT:-}"; do
          [ -n "$f" ] && echo "INJECTED=1" >> "$f"
        done
        true
  - id: plain
    tool: bash
    dependencies: [show]
    parameters: {command: 'echo "foo=${FOO_API_KEY:-unset}"'}
"#;
    let o = ci_cmd(&env, plan, &extra).output().unwrap();
    assert_eq!(
        code(&o),
        0,
        "{}\n{:#}",
        stderr(&o),
        env.report()["findings"]
    );
    let seen = env_dump(&env.out.join("artifacts/show/stdout.txt"));
    for name in [
        "PATH",
        "HOME",
        "CI",
        "LC_ALL",
        "GITHUB_SHA",
        "GITHUB_REPOSITORY",
        "GITHUB_RUN_ID",
        "CI_PROJECT_PATH",
        "GREETING",
        "FOO_API_KEY",
        "PLANGATE_RUN_ID",
        "PLANGATE_STEP_ID",
        "PLANGATE_STEP_ARTIFACTS",
    ] {
        assert!(seen.contains_key(name), "{name} missing from {seen:?}");
    }
    for name in [
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "CI_JOB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "ACTIONS_RUNTIME_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "GITHUB_ENV",
        "GITHUB_OUTPUT",
        "GITHUB_PATH",
        "GITHUB_STEP_SUMMARY",
        "UNLISTED_VAR",
        "NODE_OPTIONS",
        "PLANGATE_TEST_MARKER",
    ] {
        assert!(!seen.contains_key(name), "{name} reached the step");
    }
    // The declared secret's value is masked in the artifacts it was written to.
    assert_eq!(seen["FOO_API_KEY"], "[REDACTED]");
    assert_eq!(seen["key"], "[REDACTED]");
    let err = std::fs::read_to_string(env.out.join("artifacts/show/stderr.txt")).unwrap();
    assert_eq!(err, "to stderr: [REDACTED]\n");
    // A step that does not declare it does not get it.
    let plain = std::fs::read_to_string(env.out.join("artifacts/plain/stdout.txt")).unwrap();
    assert_eq!(plain, "foo=unset\n");
    // The workflow-command files were out of the step's reach.
    for (n, p) in &files {
        let text = std::fs::read_to_string(p).unwrap();
        assert!(!text.contains("INJECTED"), "{n}: {text}");
    }
    // The report names what each step received, never a value.
    let s = env.step("show");
    let vars = names(&s["environment"]["variables"]);
    for n in [
        "CI",
        "GITHUB_SHA",
        "GREETING",
        "HOME",
        "PATH",
        "PLANGATE_RUN_ID",
    ] {
        assert!(vars.contains(&n), "{n} not in {vars:?}");
    }
    assert!(!vars.contains(&"FOO_API_KEY"), "{vars:?}");
    assert!(!vars.contains(&"GITHUB_TOKEN"), "{vars:?}");
    assert_eq!(names(&s["environment"]["secrets"]), ["FOO_API_KEY"]);
    assert_eq!(names(&env.step("plain")["environment"]["secrets"]), [""; 0]);
    assert_nowhere(
        &env,
        &o,
        &[
            GITHUB_TOKEN,
            GH_TOKEN,
            CI_JOB_TOKEN,
            FOO_API_KEY,
            AWS_SECRET,
            ACTIONS_TOKEN,
        ],
    );
    // A masked value is not a finding: plangate passed it on purpose.
    assert_eq!(env.report()["findings"], serde_json::json!([]));
}

#[test]
fn multi_line_base64_and_undeclared_credential_values_are_masked_everywhere() {
    let env = Env::new();
    let cert = "-----BEGIN FAKE-----\nQm9ndXMgZmFrZSBjZXJ0aWZpY2F0ZQ\nZmFrZS1saW5lLXR3by1Yb3A4\n-----END FAKE-----";
    let other = "fake-other-Tk8Vb3Nq6Cx1Rz4G";
    // The undeclared credential never reaches the step; the plan quotes it
    // literally, as a careless author might: it is masked all the same.
    let plan = format!(
        r#"version: 1
id: t
policy: {{risk_tolerance: high}}
steps:
  - id: leak
    tool: bash
    secrets: [MY_CERT]
    rollback_command: 'printf "rollback sees %s\n" "$MY_CERT" | tail -n 2'
    parameters:
      command: |
        printf '%s\n' "$MY_CERT"
        printf '%s' "$MY_CERT" | sed -n 2p
        printf '%s' "$MY_CERT" | base64 -w0; echo
        printf 'x%s' "$MY_CERT" | base64 -w0; echo
        printf 'xy%s' "$MY_CERT" | base64 -w0; echo
        printf '%s' "$MY_CERT" | base64 -w0 | tr '+/' '-_'; echo
        echo "other={other}"
        echo "$MY_CERT" >&2
        printf '%s' "$MY_CERT" > "$PLANGATE_STEP_ARTIFACTS/written-by-the-step.txt"
  - id: fail
    tool: bash
    dependencies: [leak]
    parameters: {{command: 'echo "$MY_CERT"; exit 1'}}
"#
    );
    let o = ci_cmd(&env, &plan, &[("MY_CERT", cert), ("OTHER_SECRET", other)])
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let out = std::fs::read_to_string(env.out.join("artifacts/leak/stdout.txt")).unwrap();
    assert!(out.contains("other=[REDACTED]"), "{out}");
    let mut lines = Vec::new();
    for l in cert.lines() {
        lines.push(l.to_owned());
    }
    let mut check: Vec<&str> = vec![cert, other];
    check.extend(lines.iter().map(String::as_str));
    use base64::Engine;
    let encoded: Vec<String> = ["", "x", "xy"]
        .iter()
        .map(|p| base64::engine::general_purpose::STANDARD.encode(format!("{p}{cert}")))
        .collect();
    // The middle of each encoding (its ends mix in neighbouring bytes).
    let middles: Vec<&str> = encoded.iter().map(|e| &e[6..e.len() - 6]).collect();
    check.extend(middles.iter().copied());
    let rollback =
        std::fs::read_to_string(env.out.join("artifacts/leak/rollback.stdout.txt")).unwrap();
    assert!(rollback.contains("[REDACTED]"), "{rollback}");
    assert_nowhere(&env, &o, &check);
}

#[test]
fn env_passthrough_extends_the_allow_list_and_the_policy_file_decides_it() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high, env_passthrough: [TOOL_HOME, EXTRA_FLAG]}\nsteps:\n  - id: s\n    tool: bash\n    parameters: {command: 'echo \"${TOOL_HOME:-unset} ${EXTRA_FLAG:-unset} ${UNLISTED_VAR:-unset}\"'}\n";
    let vars = [("TOOL_HOME", "/opt/tool"), ("EXTRA_FLAG", "on")];
    // The plan's list alone passes nothing: the built-in cap passes no name.
    let o = ci_cmd(&env, plan, &vars)
        .env_remove("PLANGATE_POLICY")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = std::fs::read_to_string(env.out.join("artifacts/s/stdout.txt")).unwrap();
    assert_eq!(out, "unset unset unset\n");
    assert!(
        env.report()["policy"]["capped"]
            .to_string()
            .contains("TOOL_HOME, EXTRA_FLAG"),
        "{}",
        env.report()["policy"]
    );
    // A policy file that lists them passes them.
    let both = env.write("both.yaml", "env_passthrough: [TOOL_HOME, EXTRA_FLAG]\n");
    let o = ci_cmd(&env, plan, &vars)
        .arg("--policy")
        .arg(&both)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = std::fs::read_to_string(env.out.join("artifacts/s/stdout.txt")).unwrap();
    assert_eq!(out, "/opt/tool on unset\n");
    // A policy file's list is the one in force.
    let policy = env.write("policy.yaml", "env_passthrough: [TOOL_HOME]\n");
    let o = ci_cmd(&env, plan, &vars)
        .arg("--policy")
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = std::fs::read_to_string(env.out.join("artifacts/s/stdout.txt")).unwrap();
    assert_eq!(out, "/opt/tool unset unset\n");
    let r = env.report();
    assert_eq!(
        r["policy"]["env_passthrough"],
        serde_json::json!(["TOOL_HOME"])
    );
    assert!(
        r["policy"]["capped"].to_string().contains("EXTRA_FLAG"),
        "{}",
        r["policy"]
    );
    // A policy file cannot pass a credential in the clear either.
    let bad = env.write("bad-policy.yaml", "env_passthrough: [DEPLOY_TOKEN]\n");
    let o = ci_cmd(&env, plan, &vars)
        .arg("--policy")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("bad-policy.yaml:1:"), "{}", stderr(&o));
    assert!(stderr(&o).contains("looks like a secret"), "{}", stderr(&o));
}

#[test]
fn workflow_command_files_and_secret_looking_passthrough_are_refused_at_load() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {env_passthrough: [GITHUB_PATH, NPM_TOKEN]}\nagents:\n  a:\n    command: [x]\n    secrets: [GITHUB_STEP_SUMMARY]\n    api_key_env: PLANGATE_APPROVE\nsteps:\n  - id: s\n    tool: bash\n    secrets: [GITHUB_ENV, GITHUB_OUTPUT]\n    parameters: {command: 'true'}\n";
    let o = ci_cmd(&env, plan, &[]).output().unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    for expected in [
        "plan.yaml:3:28: error: `GITHUB_PATH` in `policy.env_passthrough` is a workflow-command file that plangate owns",
        "plan.yaml:3:41: error: `NPM_TOKEN` in `policy.env_passthrough` looks like a secret",
        "plan.yaml:7:15: error: `GITHUB_STEP_SUMMARY` in `secrets` of agent `a` is a workflow-command file",
        "plan.yaml:8:18: error: `PLANGATE_APPROVE` in `api_key_env` of agent `a` is one of plangate's own variables",
        "plan.yaml:12:15: error: `GITHUB_ENV` in `secrets` of step `s` is a workflow-command file that plangate owns: it never reaches a step, declared or not",
        "plan.yaml:12:27: error: `GITHUB_OUTPUT` in `secrets` of step `s`",
    ] {
        assert!(err.contains(expected), "{expected}\n--- in ---\n{err}");
    }
    assert!(!env.out.join("artifacts").exists());
    let o = env
        .cmd()
        .arg("validate")
        .arg(env.ws.join("plan.yaml"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("`GITHUB_ENV` in `secrets` of step `s`"));
}

#[test]
fn a_missing_or_empty_declared_secret_refuses_the_step_before_anything_runs() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - id: first\n    tool: bash\n    parameters: {command: 'touch ran.txt'}\n  - id: deploy\n    tool: bash\n    dependencies: [first]\n    secrets: [DEPLOY_TOKEN, EMPTY_TOKEN, FOO_API_KEY]\n    parameters: {command: 'true'}\n";
    let o = ci_cmd(&env, plan, &[("EMPTY_TOKEN", "")]).output().unwrap();
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(!env.ws.join("ran.txt").exists(), "nothing may run");
    let s = env.step("deploy");
    assert_eq!(s["status"], "blocked");
    let reason = s["approval"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("`DEPLOY_TOKEN`, `EMPTY_TOKEN`") && !reason.contains("FOO_API_KEY"),
        "{reason}"
    );
    // `validate` shows the same decision.
    let mut v = env.cmd();
    v.arg("validate").arg(env.ws.join("plan.yaml"));
    let o = v.env("FOO_API_KEY", FOO_API_KEY).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("DEPLOY_TOKEN"), "{text}\n{}", stderr(&o));
}

#[test]
fn an_agent_cli_gets_its_agents_secrets_and_api_key_env_and_nothing_else() {
    let env = Env::new();
    let answer = "```json\n{\"status\": \"OK\", \"summary\": \"done\", \"artifacts\": [], \"next_actions\": []}\n```\n";
    let (dir, agents) = fake_agent(&env, "coder", &[answer]);
    let dumps = tempfile::tempdir().unwrap();
    let dump = dumps.path().join("env");
    std::fs::write(dir.join("dump_env"), dump.display().to_string()).unwrap();
    let agents =
        format!("{agents}    api_key_env: CODER_API_KEY\n    secrets: [CODER_EXTRA_TOKEN]\n");
    let plan = format!(
        "version: 1\nid: a\npolicy: {{risk_tolerance: medium}}\nagents:\n{agents}steps:\n  - id: fix\n    tool: agent\n    secrets: [STEP_TOKEN]\n    parameters:\n      agent: coder\n      prompt: Say done.\n"
    );
    let key = "fake-coder-Mv5Xr2Lq8Ts1Wn6Y";
    let extra = "fake-extra-Dg3Pk7Zs0Hc4Jb9U";
    let step_token = "fake-step-Ey1Qn5Vf8Rw2Kt6A";
    let o = ci_cmd(
        &env,
        &plan,
        &[
            ("CODER_API_KEY", key),
            ("CODER_EXTRA_TOKEN", extra),
            ("STEP_TOKEN", step_token),
        ],
    )
    // The dump lands outside the workspace: run the CLI unsandboxed (the
    // environment is scoped the same way with or without a sandbox): no
    // backend works (bwrap is not in PATH) and the policy file allows that.
    .env("PLANGATE_SANDBOX_BACKEND", "bwrap")
    .env("PATH", crate::harness::path_without_bwrap(&env))
    .env("PLANGATE_POLICY", {
        env.write(
            "optional.yaml",
            "risk_tolerance: medium\nsandbox: optional\n",
        )
    })
    // Bare, its secrets could go to any host: only an approval runs it.
    .args(["--approve", "fix"])
    .output()
    .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let seen = env_dump(&dumps.path().join("env.1"));
    assert_eq!(seen.get("CODER_API_KEY").map(String::as_str), Some(key));
    assert_eq!(
        seen.get("CODER_EXTRA_TOKEN").map(String::as_str),
        Some(extra)
    );
    assert_eq!(seen.get("STEP_TOKEN").map(String::as_str), Some(step_token));
    for name in [
        "GITHUB_TOKEN",
        "FOO_API_KEY",
        "CI_JOB_TOKEN",
        "UNLISTED_VAR",
    ] {
        assert!(!seen.contains_key(name), "{name} reached the agent");
    }
    assert!(seen.contains_key("GITHUB_SHA") && seen.contains_key("PATH"));
    assert_eq!(
        names(&env.step("fix")["environment"]["secrets"]),
        ["CODER_API_KEY", "CODER_EXTRA_TOKEN", "STEP_TOKEN"]
    );
    assert_nowhere(&env, &o, &[key, extra, step_token]);
    // Without its key the agent cannot run: the run is invalid before any step runs.
    let o = env
        .cmd()
        .arg("run")
        .arg(env.ws.join("plan.yaml"))
        .arg("--out")
        .arg(env.out.join("again"))
        .env("STEP_TOKEN", step_token)
        .env("CODER_EXTRA_TOKEN", extra)
        .env_remove("CODER_API_KEY")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("CODER_API_KEY"), "{}", stderr(&o));
}
