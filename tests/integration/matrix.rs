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

/// Issue 27 item 7: a dependent reads a matrix step's outputs by short,
/// documented names: its own expansion's value as
/// `PLANGATE_OUTPUT_<TEMPLATE>_<NAME>`, every expansion's as the JSON
/// object `PLANGATE_OUTPUTS_<TEMPLATE>_<NAME>` keyed by matrix values.
const MATRIX_OUTPUTS_PLAN: &str = r#"version: 1
id: mxout
policy: {risk_tolerance: high, max_parallel: 1}
steps:
  - id: build
    tool: bash
    matrix: {package: [core, cli-tool], os: [linux, mac]}
    parameters:
      command: |
        echo "artifact=$PLANGATE_MATRIX_PACKAGE-$PLANGATE_MATRIX_OS.tgz" >> "$PLANGATE_OUTPUT"
        if [ "$PLANGATE_MATRIX_PACKAGE" = core ]; then echo "size=1$PLANGATE_MATRIX_OS" >> "$PLANGATE_OUTPUT"; fi
  - id: test
    tool: bash
    dependencies: [build]
    matrix: {package: [core, cli-tool], os: [linux, mac]}
    parameters: {command: 'echo "$PLANGATE_OUTPUT_BUILD_ARTIFACT ${PLANGATE_OUTPUT_BUILD_SIZE-none}"'}
  - id: bundle
    tool: bash
    dependencies: [build]
    matrix: {os: [linux, mac]}
    parameters: {command: 'echo "${PLANGATE_OUTPUT_BUILD_ARTIFACT-unset}"; echo "$PLANGATE_OUTPUTS_BUILD_ARTIFACT"'}
  - id: publish
    tool: bash
    dependencies: [build]
    parameters: {command: 'echo "${PLANGATE_OUTPUT_BUILD_ARTIFACT-unset}"; echo "$PLANGATE_OUTPUTS_BUILD_ARTIFACT"; echo "$PLANGATE_OUTPUTS_BUILD_SIZE"; echo "$PLANGATE_OUTPUT_BUILD_OS_MAC_PACKAGE_CORE_ARTIFACT"'}
"#;

#[test]
fn dependents_read_a_matrix_steps_outputs_by_short_names() {
    let env = Env::new();
    let o = env.run(MATRIX_OUTPUTS_PLAN, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = |id: &str| {
        std::fs::read_to_string(env.out.join(format!("artifacts/{id}/stdout.txt")))
            .unwrap_or_else(|e| panic!("{id}: {e}"))
    };
    // The dependent's own expansion, by the template's name.
    assert_eq!(
        out("test[os=linux,package=core]"),
        "core-linux.tgz 1linux\n"
    );
    assert_eq!(
        out("test[os=mac,package=cli-tool]"),
        "cli-tool-mac.tgz none\n"
    );
    // Several expansions: no short value, a JSON object keyed by the matrix values.
    let bundle = out("bundle[os=mac]");
    let lines: Vec<&str> = bundle.lines().collect();
    assert_eq!(lines[0], "unset");
    let v: Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"os=mac,package=cli-tool": "cli-tool-mac.tgz", "os=mac,package=core": "core-mac.tgz"})
    );
    let publish = out("publish");
    let lines: Vec<&str> = publish.lines().collect();
    assert_eq!(lines[0], "unset");
    let v: Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(v.as_object().unwrap().len(), 4, "{v}");
    assert_eq!(v["os=linux,package=cli-tool"], "cli-tool-linux.tgz");
    // Only the expansions that set the output are in it.
    let v: Value = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"os=linux,package=core": "1linux", "os=mac,package=core": "1mac"})
    );
    // The per-expansion variable is still there.
    assert_eq!(lines[3], "core-mac.tgz");
    // The report lists the names each step received.
    let vars = env.step("publish")["environment"]["variables"].clone();
    assert!(
        vars.as_array()
            .unwrap()
            .iter()
            .any(|n| n == "PLANGATE_OUTPUTS_BUILD_ARTIFACT"),
        "{vars}"
    );
}
