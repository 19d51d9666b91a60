//! Permission rules through the binary: the case table
//! `tests/fixtures/permissions/cases.json`, each case one `plangate validate
//! --format json` with its policy file; and one run showing that a step the
//! rules deny never runs, even approved.

use serde_json::Value;

use crate::harness::{Env, code, stderr};

fn fixture() -> Value {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/permissions/cases.json"
    );
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn plan_for(case: &Value) -> String {
    let mut policy = serde_json::json!({"risk_tolerance": "high"});
    if let Some(p) = case.get("plan_permissions") {
        policy["permissions"] = p.clone();
    }
    let mut step = case["step"].clone();
    step["id"] = "s".into();
    // JSON is YAML.
    serde_json::json!({"version": 1, "id": "perm", "policy": policy, "steps": [step]}).to_string()
}

#[test]
fn the_permission_case_table() {
    let env = Env::new();
    env.write("src/a.txt", "a\n");
    env.write("src/a/b/c.txt", "c\n");
    env.write("docs/index.md", "d\n");
    env.write("site.zip", "");
    let cases = fixture();
    let cases = cases["cases"].as_array().unwrap();
    assert!(cases.len() >= 20);
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let plan = env.write("plan.yaml", &plan_for(case));
        let policy = env.write("policy.yaml", &case["policy"].to_string());
        let mut c = env.cmd();
        c.args(["validate", "--format", "json"])
            .arg(&plan)
            .arg("--workspace")
            .arg(&env.ws)
            .arg("--policy")
            .arg(&policy);
        if case["approve"] == true {
            c.args(["--approve", "s"]);
        }
        let o = c.output().unwrap();
        if code(&o) != 0 {
            failures.push(format!("{name}: exit {}: {}", code(&o), stderr(&o)));
            continue;
        }
        let out: Value = serde_json::from_slice(&o.stdout).unwrap();
        let approval = &out["steps"][0]["approval"];
        let exp = &case["expect"];
        if approval["decision"] != exp["decision"] {
            failures.push(format!(
                "{name}: decision {approval}, expected {}",
                exp["decision"]
            ));
            continue;
        }
        if exp["no_permission"] == true {
            if approval.get("permission").is_some() {
                failures.push(format!(
                    "{name}: a permission verdict without rules: {approval}"
                ));
            }
            continue;
        }
        let verdict = &approval["permission"];
        if verdict["rules"] != exp["rules"] {
            failures.push(format!(
                "{name}: rules {}, expected {}",
                verdict["rules"], exp["rules"]
            ));
        }
        if verdict["allowed"] != (exp["decision"] != "blocked") {
            failures.push(format!("{name}: allowed {}", verdict["allowed"]));
        }
        if let Some(want) = exp["reason"].as_str() {
            let reason = approval["reason"].as_str().unwrap_or("");
            if !reason.contains(want) {
                failures.push(format!("{name}: reason {reason:?} lacks {want:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_step_the_rules_deny_never_runs_even_approved() {
    let env = Env::new();
    let policy = env.write(
        "policy.yaml",
        "permissions:\n  - {id: docs-only, resource: docs, tools: [bash], level: execute}\n",
    );
    env.write("docs/x", "");
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high, on_approval_required: skip}\nsteps:\n  - {id: ok, tool: bash, parameters: {command: 'touch ran-ok', working_directory: docs}}\n  - {id: root, tool: bash, parameters: {command: 'touch ran-root'}}\n";
    let o = env.run(
        plan,
        &["--policy", policy.to_str().unwrap(), "--approve", "root"],
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(!env.ws.join("ran-root").exists());
    assert!(
        !env.ws.join("docs/ran-ok").exists(),
        "nothing runs when a step is blocked"
    );
    let root = env.step("root");
    assert_eq!(root["status"], "blocked");
    assert!(
        root["error"]
            .as_str()
            .unwrap()
            .contains("no policy file rule allows execute on `.`"),
        "{root}"
    );
    assert_eq!(env.report()["policy"]["permissions"][0]["id"], "docs-only");
}

#[test]
fn a_bad_rule_is_a_policy_error_with_its_position() {
    let env = Env::new();
    let policy = env.write(
        "policy.yaml",
        "permissions:\n  - {id: a, resource: '*', level: read}\n  - id: a\n    resource: 'src/['\n    level: read\n  - {id: b, resource: '*', level: maybe}\n",
    );
    let plan = env.write("plan.yaml", &crate::harness::bash_plan(&[("s", "ls")]));
    let o = env
        .cmd()
        .arg("validate")
        .arg(&plan)
        .arg("--policy")
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("level"), "{err}");

    env.write(
        "policy.yaml",
        "permissions:\n  - {id: a, resource: '*', level: read}\n  - id: a\n    resource: 'src/['\n    level: read\n",
    );
    let o = env
        .cmd()
        .arg("validate")
        .arg(&plan)
        .arg("--policy")
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("policy.yaml:4:15: error: rule `a`: `src/[` is not a valid glob"),
        "{err}"
    );
    assert!(
        err.contains("policy.yaml:3:9: error: rule id `a` is used twice"),
        "{err}"
    );
    // The plan's own list is checked the same way.
    let plan = env.write(
        "plan.yaml",
        "version: 1\nid: t\npolicy:\n  permissions:\n    - {id: x, resource: 'a/[', level: read}\nsteps:\n  - {id: s, tool: bash, parameters: {command: ls}}\n",
    );
    let o = env.cmd().arg("validate").arg(&plan).output().unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("plan.yaml:5:"), "{}", stderr(&o));
}
