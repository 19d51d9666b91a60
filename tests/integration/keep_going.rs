//! `policy.fail_fast` (issue 16, item 5): with `false`, every step that does
//! not depend on a failed one still runs, the run still exits 1, and only the
//! successful steps a failed step depends on (and no kept step depends on)
//! are rolled back. Plans are fixtures (`tests/fixtures/keep_going/`).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::harness::{Env, code, stderr};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/keep_going")
        .join(name)
}

/// Copy a fixture plan into the workspace (optionally edited) and run it.
fn run(
    env: &Env,
    name: &str,
    edit: Option<(&str, &str)>,
    args: &[&str],
    vars: &[(&str, &str)],
) -> Output {
    let mut text = std::fs::read_to_string(fixture(name)).unwrap();
    if let Some((from, to)) = edit {
        assert!(text.contains(from), "{name} has no `{from}`");
        text = text.replace(from, to);
    }
    let plan = env.write("plan.yaml", &text);
    let mut c = env.run_cmd(&plan);
    c.args(args).timeout(std::time::Duration::from_secs(120));
    for (k, v) in vars {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn statuses(env: &Env) -> Vec<(String, String)> {
    env.report()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_owned(),
                s["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

/// Which steps' rollbacks ran, by the report and by their marker files.
fn rolled_back(env: &Env) -> Vec<String> {
    let r = env.report();
    let from_report: Vec<String> = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["rollback"].is_null())
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    for id in ["setup", "fetch-a", "update-b"] {
        assert_eq!(
            env.ws.join(format!("rolled-back-{id}")).exists(),
            from_report.iter().any(|x| x == id),
            "marker of {id} vs the report: {from_report:?}"
        );
    }
    from_report
}

fn assert_kept_going(env: &Env, o: &Output) {
    assert_eq!(code(o), 1, "{}", stderr(o));
    let r = env.report();
    assert_eq!(r["status"], "failed");
    assert_eq!(r["policy"]["fail_fast"], false);
    assert_eq!(
        statuses(env),
        pairs(&[
            ("setup", "success"),
            ("fetch-a", "success"),
            ("update-a", "failed"),
            ("publish-a", "not_run"),
            ("update-b", "success"),
            ("publish-b", "success"),
        ])
    );
    assert_eq!(
        env.step("publish-a")["error"],
        "dependency `update-a` ended failed"
    );
    assert!(env.ws.join("publish-b.done").exists());
    assert!(!env.ws.join("publish-a.done").exists());
    // `setup` is shared with the branch that succeeded: protected. `fetch-a`
    // only served the failed branch: rolled back. `update-b` was kept.
    assert_eq!(rolled_back(env), ["fetch-a"]);
}

fn assert_failed_fast(env: &Env, o: &Output) {
    assert_eq!(code(o), 1, "{}", stderr(o));
    let r = env.report();
    assert_eq!(r["policy"]["fail_fast"], true);
    assert_eq!(
        statuses(env),
        pairs(&[
            ("setup", "success"),
            ("fetch-a", "success"),
            ("update-a", "failed"),
            ("publish-a", "not_run"),
            ("update-b", "not_run"),
            ("publish-b", "not_run"),
        ])
    );
    assert_eq!(
        env.step("update-b")["error"],
        "the run stopped after step `update-a` failed"
    );
    assert!(!env.ws.join("update-b.done").exists());
    // Today's rule: every step that succeeded, newest first.
    let mut rb = rolled_back(env);
    rb.sort();
    assert_eq!(rb, ["fetch-a", "setup"]);
}

#[test]
fn with_fail_fast_false_the_independent_branch_runs_and_the_run_still_fails() {
    let env = Env::new();
    let o = run(&env, "branches.yaml", None, &[], &[]);
    assert_kept_going(&env, &o);
    // The rollbacks ran newest first: only one here; the audit log has it.
    let audit = std::fs::read_to_string(env.out.join("audit.jsonl")).unwrap();
    assert_eq!(audit.matches("\"event\":\"rollback_started\"").count(), 1);
}

#[test]
fn the_same_plan_failing_fast_leaves_the_other_branch_not_run() {
    let env = Env::new();
    let o = run(
        &env,
        "branches.yaml",
        Some(("fail_fast: false", "fail_fast: true")),
        &[],
        &[],
    );
    assert_failed_fast(&env, &o);
    // The default is fail_fast true.
    let env = Env::new();
    let o = run(
        &env,
        "branches.yaml",
        Some(("  fail_fast: false\n", "")),
        &[],
        &[],
    );
    assert_failed_fast(&env, &o);
}

#[test]
fn the_flag_beats_the_environment_which_beats_the_plan() {
    let fast = Some(("fail_fast: false", "fail_fast: true"));
    // --fail-fast over a plan that keeps going.
    let env = Env::new();
    let o = run(&env, "branches.yaml", None, &["--fail-fast"], &[]);
    assert_failed_fast(&env, &o);
    // --no-fail-fast over a plan that fails fast.
    let env = Env::new();
    let o = run(&env, "branches.yaml", fast, &["--no-fail-fast"], &[]);
    assert_kept_going(&env, &o);
    // PLANGATE_FAIL_FAST over the plan.
    let env = Env::new();
    let o = run(
        &env,
        "branches.yaml",
        fast,
        &[],
        &[("PLANGATE_FAIL_FAST", "false")],
    );
    assert_kept_going(&env, &o);
    // The flag over PLANGATE_FAIL_FAST.
    let env = Env::new();
    let o = run(
        &env,
        "branches.yaml",
        None,
        &["--fail-fast"],
        &[("PLANGATE_FAIL_FAST", "false")],
    );
    assert_failed_fast(&env, &o);
    // A bad value is a usage error.
    let env = Env::new();
    let o = run(
        &env,
        "branches.yaml",
        None,
        &[],
        &[("PLANGATE_FAIL_FAST", "no")],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn a_policy_file_pinning_fail_fast_wins_and_says_so() {
    let env = Env::new();
    let policy = env.write("policy.yaml", "risk_tolerance: high\nfail_fast: true\n");
    let o = run(
        &env,
        "branches.yaml",
        None,
        &["--no-fail-fast", "--policy", policy.to_str().unwrap()],
        &[],
    );
    assert_failed_fast(&env, &o);
    let capped = env.report()["policy"]["capped"].clone();
    assert_eq!(
        capped,
        serde_json::json!(["fail_fast forced to true by the policy file"])
    );
    // A file's `false` loosens nothing: the default stays.
    let env = Env::new();
    let policy = env.write("policy.yaml", "risk_tolerance: high\nfail_fast: false\n");
    let o = run(
        &env,
        "branches.yaml",
        Some(("  fail_fast: false\n", "")),
        &["--policy", policy.to_str().unwrap()],
        &[],
    );
    assert_failed_fast(&env, &o);
}

#[test]
fn validate_shows_fail_fast_in_text_and_json() {
    let env = Env::new();
    let plan = fixture("branches.yaml");
    let o = env.cmd().arg("validate").arg(&plan).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(", fail_fast false"), "{text}");
    let o = env
        .cmd()
        .args(["validate", "--format", "json"])
        .arg(&plan)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["policy"]["fail_fast"], false);
}

#[test]
fn keeping_going_a_secret_stops_only_what_depends_on_the_step_that_printed_it() {
    let env = Env::new();
    let o = run(&env, "leak.yaml", None, &[], &[]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert_eq!(
        statuses(&env),
        pairs(&[
            ("leak", "success"),
            ("after-leak", "not_run"),
            ("other", "success"),
        ])
    );
    assert_eq!(
        env.step("after-leak")["error"],
        "dependency `leak` produced a secret (fail_on_secrets)"
    );
    assert!(env.ws.join("other.done").exists());
    assert!(!env.ws.join("after-leak.done").exists());
    // Failing fast, a secret still stops everything.
    let env = Env::new();
    let o = run(&env, "leak.yaml", None, &["--fail-fast"], &[]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert!(!env.ws.join("other.done").exists());
}
