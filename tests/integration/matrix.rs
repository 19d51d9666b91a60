//! Matrix steps (`matrix:`), sharding (`shard`, `run --shard`) and `merge`.

use serde_json::Value;

use crate::harness::{Env, code, stderr};

const MATRIX_PLAN: &str = r#"version: 1
id: mx
policy: {risk_tolerance: high}
steps:
  - id: build
    tool: bash
    matrix: {package: [a, b]}
    parameters: {command: 'printf "%s" "$PLANGATE_MATRIX_PACKAGE" > "built-$PLANGATE_MATRIX_PACKAGE"'}
  - id: test
    tool: bash
    dependencies: [build]
    matrix: {package: [a, b], os: [linux, 3]}
    parameters: {command: 'test -f "built-$PLANGATE_MATRIX_PACKAGE" && echo "$PLANGATE_MATRIX_PACKAGE on $PLANGATE_MATRIX_OS"'}
  - id: all
    tool: bash
    dependencies: [test]
    parameters: {command: 'true'}
"#;

fn ids(report: &Value) -> Vec<String> {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn matrix_steps_expand_and_get_their_values_from_the_environment() {
    let env = Env::new();
    let o = env.run(MATRIX_PLAN, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = env.report();
    assert_eq!(
        ids(&r),
        [
            "build[package=a]",
            "build[package=b]",
            "test[os=linux,package=a]",
            "test[os=linux,package=b]",
            "test[os=3,package=a]",
            "test[os=3,package=b]",
            "all"
        ]
    );
    // Shared keys link agreeing combinations only; no shared key: every expansion.
    assert_eq!(
        env.step("test[os=3,package=b]")["dependencies"],
        serde_json::json!(["build[package=b]"])
    );
    assert_eq!(env.step("all")["dependencies"].as_array().unwrap().len(), 4);
    let out =
        std::fs::read_to_string(env.out.join("artifacts/test[os=3,package=b]/stdout.txt")).unwrap();
    assert_eq!(out.trim(), "b on 3");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("built-a")).unwrap(),
        "a"
    );
}

#[test]
fn validate_shows_the_expanded_plan_and_its_size() {
    let env = Env::new();
    let plan = env.write("plan.yaml", MATRIX_PLAN);
    let o = env.cmd().arg("validate").arg(&plan).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("7 steps once expanded (3 written, matrices expanded)"),
        "{text}"
    );
    assert!(text.contains("test[os=linux,package=b]"), "{text}");
    let o = env
        .cmd()
        .args(["validate", "--format", "json"])
        .arg(&plan)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["size"], serde_json::json!({"written": 3, "expanded": 7}));
    assert_eq!(v["steps"][1]["template"], "build");
    assert_eq!(v["steps"][1]["matrix"], serde_json::json!({"package": "b"}));
}

#[test]
fn a_matrix_value_is_never_substituted_into_the_command() {
    let env = Env::new();
    let plan = "version: 1\nid: t\nsteps:\n  - id: s\n    tool: bash\n    matrix: {v: ['$(touch pwned)']}\n    parameters: {command: 'true'}\n";
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!env.ws.join("pwned").exists());
    // A value made only of allowed characters reaches the step verbatim, by the environment.
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - id: s\n    tool: bash\n    matrix: {v: ['a.b+c@d-e_f']}\n    parameters: {command: 'printf %s \"$PLANGATE_MATRIX_V\" > got'}\n";
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("got")).unwrap(),
        "a.b+c@d-e_f"
    );
}

#[test]
fn approvals_and_steps_take_template_ids_and_expanded_ids() {
    let env = Env::new();
    let plan = "version: 1\nid: t\nsteps:\n  - id: s\n    tool: bash\n    requires_approval: true\n    matrix: {k: [x, y], j: [1]}\n    parameters: {command: 'true'}\n";
    let o = env.run(plan, &["--approve", "s"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = env.run(plan, &["--approve", "s[j=1,k=x]", "--steps", "s[j=1,k=x]"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("s[j=1,k=y]")["status"], "skipped");
    assert_eq!(env.step("s[j=1,k=x]")["status"], "success");
    let o = env.run(plan, &["--approve", "s[j=1,k=x]"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
}

#[test]
fn an_expanded_id_too_long_for_a_folder_name_is_a_plan_error() {
    let env = Env::new();
    let v = "v".repeat(60);
    let keys: Vec<String> = (0..4)
        .map(|k| format!("key_{k}_{}: [{v}]", "k".repeat(20)))
        .collect();
    let plan = format!(
        "version: 1\nid: t\nsteps:\n  - id: s\n    tool: bash\n    matrix: {{{}}}\n    parameters: {{command: 'true'}}\n",
        keys.join(", ")
    );
    let o = env.run(&plan, &[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("longer than 200 bytes"),
        "{}",
        stderr(&o)
    );
    assert_eq!(env.report()["status"], "invalid");
}
