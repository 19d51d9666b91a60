//! What flows through a plan (issue 16): inputs, step outputs, `if:`
//! conditions and prompt templates, through the real binary. Load-time
//! errors with their positions are fixtures (`plans/invalid/flow-*.yaml`).

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::{Env, code, read_json, stderr};

const INPUTS_PLAN: &str = r#"version: 1
id: inputs
inputs:
  base-ref: {description: branch to compare with, default: main}
  count: {type: number, required: true}
  strict: {type: boolean, default: false}
  mode: {type: choice, options: [check, fix], default: check}
  note: {}
steps:
  - id: show
    tool: bash
    parameters:
      command: 'echo "$PLANGATE_INPUT_BASE_REF $PLANGATE_INPUT_COUNT $PLANGATE_INPUT_STRICT $PLANGATE_INPUT_MODE ${PLANGATE_INPUT_NOTE-unset}"'
"#;

fn stdout_of(env: &Env, step: &str) -> String {
    std::fs::read_to_string(env.out.join(format!("artifacts/{step}/stdout.txt")))
        .unwrap_or_default()
}

#[test]
fn inputs_come_from_the_flag_then_the_environment_then_the_default() {
    let env = Env::new();
    let plan = env.write("plan.yaml", INPUTS_PLAN);
    let o = env
        .run_cmd(&plan)
        .args(["--input", "count=3", "--input", "mode=fix"])
        .env("PLANGATE_INPUT_COUNT", "9")
        .env("PLANGATE_INPUT_STRICT", "true")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout_of(&env, "show").trim(), "main 3 true fix unset");
    let r = env.report();
    assert_eq!(
        r["inputs"],
        json!({"base-ref": "main", "count": 3, "strict": true, "mode": "fix"})
    );
    assert!(r["inputs_sha256"].as_str().is_some_and(|h| h.len() == 64));
    let vars = env.step("show")["environment"]["variables"].clone();
    assert!(
        vars.as_array()
            .unwrap()
            .contains(&json!("PLANGATE_INPUT_BASE_REF")),
        "{vars}"
    );
}

/// Flags, environment variables, and what the refusal says.
type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

#[test]
fn every_bad_input_is_refused_before_anything_runs_with_exit_2_naming_it() {
    let env = Env::new();
    let plan = env.write("plan.yaml", INPUTS_PLAN);
    let cases: &[Case<'_>] = &[
        (&[], &[], "input `count` is required and was not given"),
        (
            &["--input", "count=many"],
            &[],
            "input `count` (from --input count): expected a number",
        ),
        (
            &["--input", "count=1", "--input", "strict=yes"],
            &[],
            "input `strict` (from --input strict): expected `true` or `false`",
        ),
        (
            &["--input", "count=1", "--input", "mode=delete"],
            &[],
            "input `mode` (from --input mode): `delete` is not one of its options",
        ),
        (
            &["--input", "count=1", "--input", "nope=1"],
            &[],
            "--input names `nope`, which is not an input of the plan",
        ),
        (
            &["--input", "count"],
            &[],
            "--input `count` is not NAME=VALUE",
        ),
        (
            &["--input", "count=1", "--input", "count=2"],
            &[],
            "--input `count` is given twice",
        ),
        (
            &["--input", "count=1"],
            &[("PLANGATE_INPUT_COUNTS", "1")],
            "`PLANGATE_INPUT_COUNTS` names no input",
        ),
        (
            &[],
            &[("PLANGATE_INPUT_COUNT", "x1")],
            "input `count` (from PLANGATE_INPUT_COUNT): expected a number",
        ),
    ];
    for (args, vars, want) in cases {
        for command in ["run", "validate"] {
            let mut c = env.cmd();
            c.arg(command).arg(&plan);
            if command == "run" {
                c.arg("--out").arg(&env.out);
            }
            c.args(*args);
            for (k, v) in *vars {
                c.env(k, v);
            }
            let o = c.output().unwrap();
            assert_eq!(code(&o), 2, "{command} {args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains(want),
                "{command} {args:?}: {}",
                stderr(&o)
            );
            if command == "run" {
                let r = env.report();
                assert_eq!(r["status"], "invalid");
                assert!(r["errors"].to_string().contains(*want), "{r}");
                assert!(!env.out.join("artifacts/show").exists(), "nothing ran");
            }
        }
    }
}

const OUTPUTS_PLAN: &str = r#"version: 1
id: outputs
policy: {max_parallel: 1}
steps:
  - id: version
    tool: bash
    parameters:
      command: |
        echo "tag=v1.2" >> "$PLANGATE_OUTPUT"
        printf 'notes<<END\nfirst line\n\nthird = line\nEND\n' >> "$PLANGATE_OUTPUT"
  - id: build
    tool: bash
    matrix: {package: [core, cli-tool]}
    dependencies: [version]
    parameters:
      command: |
        echo "artifact=$PLANGATE_MATRIX_PACKAGE-$PLANGATE_OUTPUT_VERSION_TAG.tgz" >> "$PLANGATE_OUTPUT"
  - id: publish
    tool: bash
    dependencies: [build, version]
    parameters:
      command: |
        echo "$PLANGATE_OUTPUT_BUILD_PACKAGE_CORE_ARTIFACT"
        echo "$PLANGATE_OUTPUT_BUILD_PACKAGE_CLI_TOOL_ARTIFACT"
        printf '%s\n' "$PLANGATE_OUTPUT_VERSION_NOTES"
  - id: unrelated
    tool: bash
    parameters: {command: 'echo "[${PLANGATE_OUTPUT_VERSION_TAG-}]"'}
"#;

#[test]
fn outputs_pass_to_dependents_as_variables_matrix_ids_included() {
    let env = Env::new();
    let o = env.run(OUTPUTS_PLAN, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout_of(&env, "publish"),
        "core-v1.2.tgz\ncli-tool-v1.2.tgz\nfirst line\n\nthird = line\n"
    );
    // Only dependencies' outputs reach a step.
    assert_eq!(stdout_of(&env, "unrelated").trim(), "[]");
    assert_eq!(
        env.step("version")["outputs"],
        json!({"tag": "v1.2", "notes": "first line\n\nthird = line"})
    );
    assert_eq!(
        env.step("build[package=cli-tool]")["outputs"],
        json!({"artifact": "cli-tool-v1.2.tgz"})
    );
    assert!(env.step("publish").get("outputs").is_none());
    assert!(env.out.join("artifacts/version/outputs.txt").is_file());
}

#[test]
fn a_malformed_output_file_fails_the_step_with_its_line() {
    let env = Env::new();
    let plan = "version: 1\nid: bad\nsteps:\n  - id: emit\n    tool: bash\n    parameters: {command: 'printf \"ok=1\\nnot an output\\n\" >> \"$PLANGATE_OUTPUT\"'}\n  - id: after\n    tool: bash\n    dependencies: [emit]\n    parameters: {command: 'true'}\n";
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let s = env.step("emit");
    assert_eq!(s["status"], "failed");
    let err = s["error"].as_str().unwrap();
    assert!(err.contains("$PLANGATE_OUTPUT line 2"), "{err}");
    assert_eq!(env.step("after")["status"], "not_run");
    // An unclosed block and an over-long value fail too.
    let o = env.run(
        &plan.replace("ok=1\\nnot an output", "x<<EOF\\nno end"),
        &[],
    );
    assert_eq!(code(&o), 1);
    assert!(
        env.step("emit")["error"]
            .as_str()
            .unwrap()
            .contains("never closed")
    );
    let o = env.run(
        &plan.replace(
            "printf \"ok=1\\nnot an output\\n\"",
            "printf \"big=%070000d\\n\" 0",
        ),
        &[],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        env.step("emit")["error"]
            .as_str()
            .unwrap()
            .contains("more than the 65536"),
        "{}",
        env.step("emit")
    );
}

#[test]
fn a_secret_in_an_output_is_redacted_in_the_report() {
    let env = Env::new();
    let token = "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";
    let plan = format!(
        "version: 1\nid: s\npolicy: {{fail_on_secrets: false}}\nsteps:\n  - id: emit\n    tool: bash\n    parameters: {{command: 'echo \"token={token}\" >> \"$PLANGATE_OUTPUT\"; echo \"plain=ok\" >> \"$PLANGATE_OUTPUT\"'}}\n  - id: use\n    tool: bash\n    dependencies: [emit]\n    parameters: {{command: 'test -n \"$PLANGATE_OUTPUT_EMIT_TOKEN\"'}}\n"
    );
    let o = env.run(&plan, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let outputs = env.step("emit")["outputs"].clone();
    assert_eq!(outputs["plain"], "ok");
    assert!(
        !outputs["token"].as_str().unwrap().contains(token),
        "{outputs}"
    );
    let text = std::fs::read_to_string(env.out.join("report.json")).unwrap();
    assert!(!text.contains(token));
    assert!(!stderr(&o).contains(token));
    assert_eq!(env.step("use")["status"], "success");
}

fn run_to(env: &Env, out: &Path, args: &[&str]) -> std::process::Output {
    let mut c = env.cmd();
    c.arg("run")
        .arg(env.ws.join("plan.yaml"))
        .arg("--out")
        .arg(out)
        .args(args);
    c.output().unwrap()
}

#[test]
fn outputs_are_carried_over_by_resume_and_the_inputs_are_pinned() {
    let env = Env::new();
    let plan = "version: 1\nid: r\ninputs:\n  who: {default: world}\nsteps:\n  - id: make\n    tool: bash\n    parameters: {command: 'echo \"greeting=hello $PLANGATE_INPUT_WHO\" >> \"$PLANGATE_OUTPUT\"; echo x >> counter'}\n    risk_level: moderate\n  - id: use\n    tool: bash\n    dependencies: [make]\n    parameters: {command: 'cat needed.txt && echo \"$PLANGATE_OUTPUT_MAKE_GREETING\"'}\n";
    env.write("plan.yaml", plan);
    let first = run_to(&env, &env.out, &["--approve", "make", "--input", "who=ci"]);
    assert_eq!(code(&first), 1, "{}", stderr(&first));
    env.write("needed.txt", "");
    let report = env.out.join("report.json");
    let out2 = env.out.with_file_name("out2");
    // Other input values: refused, naming the input.
    let o = run_to(
        &env,
        &out2,
        &["--approve", "make", "--resume", report.to_str().unwrap()],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("the inputs differ"), "{}", stderr(&o));
    assert!(stderr(&o).contains("`who`"), "{}", stderr(&o));
    let o = run_to(
        &env,
        &out2,
        &[
            "--approve",
            "make",
            "--input",
            "who=ci",
            "--resume",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = read_json(&out2.join("report.json"));
    let make = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "make")
        .unwrap();
    assert!(make["carried_over"].is_object());
    assert_eq!(make["outputs"], json!({"greeting": "hello ci"}));
    let out = std::fs::read_to_string(out2.join("artifacts/use/stdout.txt")).unwrap();
    assert_eq!(out.trim(), "hello ci");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("counter"))
            .unwrap()
            .lines()
            .count(),
        1,
        "the carried-over step did not run again"
    );
}

const CONDITIONS_PLAN: &str = r#"version: 1
id: cond
inputs:
  mode: {type: choice, options: [check, fix], default: check}
policy: {max_parallel: 1}
steps:
  - id: lint
    tool: bash
    parameters: {command: 'echo "changed=$LINT_CHANGED" >> "$PLANGATE_OUTPUT"'}
    env: {LINT_CHANGED: "true"}
  - id: fix
    tool: bash
    dependencies: [lint]
    if: steps.lint.outputs.changed == 'true' && inputs.mode == 'fix'
    parameters: {command: 'touch fixed'}
    risk_level: moderate
  - id: commit
    tool: bash
    dependencies: [fix]
    parameters: {command: 'touch committed'}
    risk_level: moderate
  - id: summary
    tool: bash
    dependencies: [fix]
    if: always()
    parameters: {command: 'echo "fix ended ${PLANGATE_OUTPUT_FIX_X-}"'}
  - id: on-failure
    tool: bash
    dependencies: [commit]
    if: failure()
    parameters: {command: 'touch alarm'}
"#;

#[test]
fn a_false_condition_skips_the_step_and_its_dependents_unless_they_use_always() {
    let env = Env::new();
    let o = env.run(CONDITIONS_PLAN, &["--approve", "fix,commit,on-failure"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let fix = env.step("fix");
    assert_eq!(fix["status"], "skipped");
    assert!(
        fix["error"].as_str().unwrap().contains("condition false"),
        "{fix}"
    );
    assert_eq!(env.step("commit")["status"], "skipped");
    assert!(
        env.step("commit")["error"]
            .as_str()
            .unwrap()
            .contains("dependency `fix` was skipped")
    );
    assert_eq!(env.step("summary")["status"], "success");
    assert_eq!(env.step("on-failure")["status"], "skipped");
    assert!(!env.ws.join("fixed").exists());
    assert!(!env.ws.join("alarm").exists());
    // True: the step and its dependents run.
    let o = env.run(
        CONDITIONS_PLAN,
        &["--approve", "fix,commit,on-failure", "--input", "mode=fix"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("fix")["status"], "success");
    assert_eq!(env.step("commit")["status"], "success");
    assert!(env.ws.join("committed").exists());
}

#[test]
fn failure_steps_run_after_a_failure_and_the_run_still_fails() {
    let env = Env::new();
    let plan = CONDITIONS_PLAN.replace(
        "parameters: {command: 'touch committed'}",
        "parameters: {command: 'exit 3'}",
    );
    let o = env.run(
        &plan,
        &["--approve", "fix,commit,on-failure", "--input", "mode=fix"],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(env.step("commit")["status"], "failed");
    assert_eq!(env.step("on-failure")["status"], "success");
    assert!(env.ws.join("alarm").exists());
    // Denied steps are still decided before anything runs, whatever their condition.
    let o = env.run(CONDITIONS_PLAN, &[]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(env.step("fix")["status"], "denied");
}

#[test]
fn a_condition_that_cannot_be_evaluated_fails_the_step() {
    let env = Env::new();
    let plan = "version: 1\nid: c\nsteps:\n  - id: a\n    tool: bash\n    parameters: {command: 'true'}\n  - id: b\n    tool: bash\n    dependencies: [a]\n    if: steps.a.outputs.n > '3'\n    parameters: {command: 'true'}\n";
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let b = env.step("b");
    assert_eq!(b["status"], "failed");
    assert!(
        b["error"].as_str().unwrap().contains("cannot order null"),
        "{b}"
    );
}

#[test]
fn agent_prompts_render_inputs_matrix_values_and_outputs() {
    let env = Env::new();
    let good = "```json\n{\"status\": \"OK\", \"summary\": \"looks fine\", \"artifacts\": []}\n```";
    let mut rec = String::new();
    for id in ["review[package=core]", "review[package=cli]"] {
        rec.push_str(&json!({"step": id, "attempt": 1, "answer": good}).to_string());
        rec.push('\n');
    }
    env.write("answers.jsonl", &rec);
    let plan = r#"version: 1
id: prompts
policy: {risk_tolerance: medium}
inputs:
  base-ref: {default: main}
agents:
  rec: {provider: replay, file: answers.jsonl}
steps:
  - id: lint
    tool: bash
    matrix: {package: [core, cli]}
    parameters: {command: 'echo "count=$((3 + 1))" >> "$PLANGATE_OUTPUT"'}
  - id: review
    tool: agent
    matrix: {package: [core, cli]}
    dependencies: [lint]
    parameters:
      agent: rec
      output: envelope
      prompt: |
        Review ${{ matrix.package }} against ${{ inputs.base-ref }}.
        Lint found ${{ steps.lint.outputs.count }} problems; ${{ not closed on purpose
  - id: gate
    tool: bash
    dependencies: [review]
    if: always()
    parameters: {command: 'true'}
"#;
    let o = env.run(plan, &["--input", "base-ref=release"]);
    // The unclosed template is a load error, placed.
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("plan.yaml:22:62:"), "{}", stderr(&o));
    assert!(stderr(&o).contains("never closed"), "{}", stderr(&o));
    let plan = plan.replace("; ${{ not closed on purpose", ".");
    let o = env.run(&plan, &["--input", "base-ref=release"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let prompt = std::fs::read_to_string(
        env.out
            .join("artifacts/review[package=cli]/attempt-1.prompt.txt"),
    )
    .unwrap();
    assert!(
        prompt.starts_with("Review cli against release.\nLint found 4 problems."),
        "{prompt}"
    );
    assert_eq!(
        env.step("review[package=core]")["outputs"],
        json!({"status": "OK", "summary": "looks fine"})
    );
}

#[test]
fn agent_outputs_feed_conditions_and_the_result_variable_has_no_trailing_underscore() {
    let env = Env::new();
    let good =
        "```json\n{\"status\": \"OK\", \"summary\": \"nothing to do\", \"artifacts\": []}\n```";
    env.write(
        "answers.jsonl",
        &format!(
            "{}\n",
            json!({"step": "ask[package=core]", "attempt": 1, "answer": good})
        ),
    );
    let plan = r#"version: 1
id: agent-out
policy: {risk_tolerance: medium}
agents:
  rec: {provider: replay, file: answers.jsonl}
steps:
  - id: ask
    tool: agent
    matrix: {package: [core]}
    parameters: {agent: rec, prompt: 'Anything to do?', output: envelope}
  - id: act
    tool: bash
    matrix: {package: [core]}
    dependencies: [ask]
    if: steps.ask.outputs.status != 'OK'
    parameters: {command: 'true'}
  - id: read
    tool: bash
    matrix: {package: [core]}
    dependencies: [ask]
    parameters: {command: 'test -f "$PLANGATE_RESULT_ASK_PACKAGE_CORE" && echo "$PLANGATE_OUTPUT_ASK_PACKAGE_CORE_SUMMARY"'}
"#;
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("act[package=core]")["status"], "skipped");
    assert_eq!(
        stdout_of(&env, "read[package=core]").trim(),
        "nothing to do"
    );
}

#[test]
fn validate_checks_conditions_with_the_inputs_given() {
    let env = Env::new();
    let plan = env.write("plan.yaml", CONDITIONS_PLAN);
    let o = env
        .cmd()
        .args(["validate", "--format", "json"])
        .arg(&plan)
        .args(["--input", "mode=fix", "--approve", "fix,commit,on-failure"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["valid"], true);
}

const STATIC_PLAN: &str = r#"version: 1
id: static-conditions
inputs:
  publish: {type: boolean, default: false}
policy: {risk_tolerance: low, on_approval_required: deny}
steps:
  - id: build
    tool: bash
    parameters: {command: 'echo built'}
  - id: publish
    tool: bash
    dependencies: [build]
    if: inputs.publish == true
    requires_approval: true
    parameters: {command: 'echo published'}
  - id: announce
    tool: bash
    dependencies: [publish]
    parameters: {command: 'echo announced'}
"#;

#[test]
fn a_condition_on_inputs_alone_is_decided_before_the_run_and_needs_no_approval_when_false() {
    let env = Env::new();
    let plan = env.write("plan.yaml", STATIC_PLAN);
    // False: the step that would need an approval is skipped, the run is green.
    let o = env.run_cmd(&plan).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("build")["status"], "success");
    assert_eq!(env.step("publish")["status"], "skipped");
    assert_eq!(
        env.step("publish")["error"],
        "condition false: `inputs.publish == true`"
    );
    assert_eq!(env.step("announce")["status"], "skipped");
    let v = env
        .cmd()
        .args(["validate", "--format", "json"])
        .arg(&plan)
        .output()
        .unwrap();
    let steps: Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(
        steps["steps"][1]["skipped"],
        "condition false: `inputs.publish == true`"
    );
    assert_eq!(steps["inputs"], json!({"publish": false}));
    // True: the step needs its approval again; without it nothing runs (exit 3).
    let env = Env::new();
    let plan = env.write("plan.yaml", STATIC_PLAN);
    let o = env
        .run_cmd(&plan)
        .args(["--input", "publish=true"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(env.step("build")["status"], "not_run");
    let env = Env::new();
    let plan = env.write("plan.yaml", STATIC_PLAN);
    let o = env
        .run_cmd(&plan)
        .args(["--input", "publish=true", "--approve", "publish"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("announce")["status"], "success");
}

#[test]
fn a_step_the_rules_block_stays_blocked_whatever_its_condition() {
    // Blocked by what it is (here: the permission rules allow bash in `docs`
    // only), not by what the machine lacks: the plan is refused.
    let env = Env::new();
    let plan = env.write(
        "plan.yaml",
        &STATIC_PLAN
            .replace(
                "policy: {risk_tolerance: low, on_approval_required: deny}\n",
                "policy:\n  risk_tolerance: low\n  on_approval_required: deny\n  permissions:\n    - {id: docs-only, resource: docs, tools: [bash], level: execute}\n",
            )
            .replace(
                "    parameters: {command: 'echo built'}\n",
                "    parameters: {command: 'true', working_directory: docs}\n",
            )
            .replace(
                "    parameters: {command: 'echo announced'}\n",
                "    parameters: {command: 'true', working_directory: docs}\n",
            ),
    );
    env.write("docs/x", "");
    let o = env.run_cmd(&plan).output().unwrap();
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(env.step("publish")["status"], "blocked");
    // Its dependent never runs: skipped before the run, not blocked.
    assert_eq!(env.step("announce")["status"], "skipped");
}

/// Issue 27 item 4: `push` is false before the run; everything that stands
/// on it, directly or not, never runs and needs nothing: no secret, no
/// approval, no agent. `cleanup` calls `always()`: it runs whatever its
/// dependency ended, so it is decided (and would be blocked) as usual.
const NEVER_PLAN: &str = r#"version: 1
id: never-runs
inputs:
  push: {type: boolean, default: false}
policy: {risk_tolerance: medium, on_approval_required: deny}
agents:
  gone:
    command: [plangate-no-such-agent-cli]
steps:
  - id: build
    tool: bash
    parameters: {command: 'touch built'}
  - id: push
    tool: bash
    dependencies: [build]
    if: inputs.push == true
    network: true
    secrets: [PGTEST_NEVER_SET_GITHUB_TOKEN]
    parameters: {command: 'touch pushed'}
  - id: release
    tool: bash
    dependencies: [push]
    requires_approval: true
    secrets: [PGTEST_NEVER_SET_RELEASE_TOKEN]
    parameters: {command: 'touch released'}
  - id: notes
    tool: agent
    dependencies: [release]
    parameters: {agent: gone, prompt: write the release notes}
  - id: summary
    tool: bash
    dependencies: [build, push]
    requires_approval: true
    parameters: {command: 'touch summarised'}
  - id: cleanup
    tool: bash
    dependencies: [release]
    if: always()
    parameters: {command: 'touch cleaned'}
"#;

#[test]
fn steps_that_can_never_run_need_no_secret_approval_or_agent() {
    let env = Env::new();
    let plan = env.write("plan.yaml", NEVER_PLAN);
    let o = env
        .run_cmd(&plan)
        .env_remove("PGTEST_NEVER_SET_GITHUB_TOKEN")
        .env_remove("PGTEST_NEVER_SET_RELEASE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let cond = "condition false: `inputs.push == true`";
    assert_eq!(env.step("build")["status"], "success");
    assert_eq!(env.step("push")["status"], "skipped");
    assert_eq!(env.step("push")["error"], cond);
    // A chain of three: push -> release -> notes, each skipped before the run.
    for (id, via) in [
        ("release", "push"),
        ("notes", "release"),
        ("summary", "push"),
    ] {
        let s = env.step(id);
        assert_eq!(s["status"], "skipped", "{id}: {s:#}");
        assert_eq!(
            s["error"],
            format!("dependency `{via}` is skipped before the run (`push`: {cond})"),
            "{id}"
        );
    }
    assert_eq!(env.step("cleanup")["status"], "success");
    for f in ["pushed", "released", "summarised"] {
        assert!(!env.ws.join(f).exists(), "{f} ran");
    }
    assert!(env.ws.join("cleaned").exists());
    let r = env.report();
    assert_eq!(r["conclusion"], "success", "{r:#}");
    assert!(r.get("partial_reasons").is_none(), "{r:#}");

    // validate says the same in every format, and exits as run would.
    let validate = |format: &str| {
        env.cmd()
            .args(["validate", "--format", format])
            .arg(&plan)
            .env_remove("PGTEST_NEVER_SET_GITHUB_TOKEN")
            .env_remove("PGTEST_NEVER_SET_RELEASE_TOKEN")
            .output()
            .unwrap()
    };
    let o = validate("json");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["gate"]["refused"], json!([]));
    assert_eq!(v["gate"]["partial_reasons"], json!([]));
    let skipped: Vec<(String, String)> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| {
            Some((
                s["id"].as_str()?.to_owned(),
                s["skipped"].as_str()?.to_owned(),
            ))
        })
        .collect();
    let ids: Vec<&str> = skipped.iter().map(|(i, _)| i.as_str()).collect();
    assert_eq!(ids, ["push", "release", "notes", "summary"]);
    assert!(
        skipped[1]
            .1
            .contains("dependency `push` is skipped before the run")
    );
    let o = validate("text");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    for id in ["release", "notes", "summary"] {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("{id} in {text}"));
        assert!(
            row.contains("skipped") && row.contains("is skipped before the run"),
            "{row}"
        );
        assert!(!row.contains("PGTEST_NEVER_SET"), "{row}");
    }
    let o = validate("mermaid");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let m = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(m.matches(" · skipped\"]:::skipped").count(), 4, "{m}");
    assert!(
        m.contains("cleanup<br>bash · moderate · auto_approved"),
        "{m}"
    );
}

#[test]
fn a_step_that_may_run_still_needs_its_secret_and_agent() {
    // The condition true: push may run, and its missing secret blocks the run
    // (exit 3, validate too); the agent it leads to must exist (exit 2).
    let env = Env::new();
    let plan = env.write(
        "plan.yaml",
        &NEVER_PLAN.replace("agent: gone", "agent: here").replace(
            "  gone:\n    command: [plangate-no-such-agent-cli]\n",
            "  gone:\n    command: [plangate-no-such-agent-cli]\n  here:\n    command: [cat]\n",
        ),
    );
    let o = env
        .run_cmd(&plan)
        .args(["--input", "push=true", "--approve", "release,summary"])
        .env_remove("PGTEST_NEVER_SET_GITHUB_TOKEN")
        .env_remove("PGTEST_NEVER_SET_RELEASE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(env.step("push")["status"], "blocked");
    assert!(
        env.step("push")["error"]
            .as_str()
            .unwrap()
            .contains("`PGTEST_NEVER_SET_GITHUB_TOKEN`")
    );
    assert_eq!(env.step("release")["status"], "blocked");
    assert!(!env.ws.join("built").exists());
    let o = env
        .cmd()
        .args([
            "validate",
            "--input",
            "push=true",
            "--approve",
            "release,summary",
        ])
        .arg(&plan)
        .env_remove("PGTEST_NEVER_SET_GITHUB_TOKEN")
        .output()
        .unwrap();
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let env = Env::new();
    let plan = env.write("plan.yaml", NEVER_PLAN);
    let o = env
        .run_cmd(&plan)
        .args(["--input", "push=true"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("plangate-no-such-agent-cli"),
        "{}",
        stderr(&o)
    );
    // A step whose `if:` calls a status function runs whatever its
    // dependency ended: it is never skipped before the run, and its
    // missing secret blocks (push false again).
    let env = Env::new();
    let plan = env.write(
        "plan.yaml",
        &NEVER_PLAN.replace(
            "    if: always()\n",
            "    if: always()\n    secrets: [PGTEST_NEVER_SET_CLEANUP_TOKEN]\n",
        ),
    );
    let o = env
        .run_cmd(&plan)
        .env_remove("PGTEST_NEVER_SET_CLEANUP_TOKEN")
        .output()
        .unwrap();
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(env.step("cleanup")["status"], "blocked");
    assert_eq!(env.step("release")["status"], "skipped");
}

#[test]
fn a_dependency_outside_steps_or_carried_over_skips_nothing_before_the_run() {
    // `--steps release`: push is left out (reads as done), so release may
    // run and needs its approval and secret again.
    let env = Env::new();
    let plan = env.write("plan.yaml", NEVER_PLAN);
    let o = env
        .run_cmd(&plan)
        .args(["--steps", "release"])
        .env_remove("PGTEST_NEVER_SET_RELEASE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(env.step("release")["status"], "blocked");
}

#[test]
fn a_dependency_left_out_by_steps_reads_as_skipped_with_no_outputs() {
    let env = Env::new();
    let plan = env.write(
        "plan.yaml",
        "version: 1\nid: st\nsteps:\n  - id: a\n    tool: bash\n    parameters: {command: 'echo x=1 >> \"$PLANGATE_OUTPUT\"'}\n  - id: b\n    tool: bash\n    dependencies: [a]\n    if: steps.a.outcome == 'skipped' && steps.a.outputs.x == null\n    parameters: {command: 'echo b'}\n",
    );
    let o = env.run_cmd(&plan).args(["--steps", "b"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("a")["status"], "skipped");
    assert_eq!(env.step("b")["status"], "success");
}

#[test]
fn an_output_holding_a_nul_byte_fails_its_step_naming_the_key_and_offset() {
    let env = Env::new();
    // Both spellings of a value: a line and a block; the NUL at offset 2.
    for (emit, key) in [
        (
            r#"printf 'ok=1\nkey=va\000lue\n' >> "$PLANGATE_OUTPUT""#,
            "key",
        ),
        (
            r#"printf 'notes<<EOF\nva\000lue\nEOF\n' >> "$PLANGATE_OUTPUT""#,
            "notes",
        ),
    ] {
        let plan = format!(
            "version: 1\nid: nul\nsteps:\n  - id: emit\n    tool: bash\n    parameters: {{command: {}}}\n  - id: after\n    tool: bash\n    dependencies: [emit]\n    parameters: {{command: 'echo \"[$PLANGATE_OUTPUT_EMIT_KEY]\"'}}\n",
            serde_json::to_string(emit).unwrap()
        );
        let o = env.run(&plan, &[]);
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        let s = env.step("emit");
        assert_eq!(s["status"], "failed", "{s}");
        let err = s["error"].as_str().unwrap();
        assert!(
            err.contains(&format!(
                "output `{key}` holds a NUL byte at offset 2: outputs are text"
            )),
            "{err}"
        );
        let after = env.step("after");
        assert_eq!(after["status"], "not_run", "{after}");
        assert!(
            after["error"]
                .as_str()
                .is_some_and(|r| r.contains("`emit` failed")),
            "{after}"
        );
    }
}

#[test]
fn an_output_with_a_nul_byte_from_a_resumed_report_fails_the_dependent_before_it_runs() {
    let env = Env::new();
    let plan = "version: 1\nid: r\nsteps:\n  - id: make\n    tool: bash\n    parameters: {command: 'echo \"greeting=hello\" >> \"$PLANGATE_OUTPUT\"'}\n  - id: use\n    tool: bash\n    dependencies: [make]\n    parameters: {command: 'cat needed.txt && echo \"$PLANGATE_OUTPUT_MAKE_GREETING\"'}\n";
    env.write("plan.yaml", plan);
    let first = run_to(&env, &env.out, &[]);
    assert_eq!(code(&first), 1, "{}", stderr(&first));
    env.write("needed.txt", "");
    // The report a later run resumes from says the value held a NUL.
    let report = env.out.join("report.json");
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("\"greeting\": \"hello\"") || text.contains("\"greeting\":\"hello\""));
    let text = text.replace("\"hello\"", "\"he\\u0000llo\"");
    std::fs::write(&report, text).unwrap();
    let out2 = env.out.with_file_name("out2");
    let o = run_to(&env, &out2, &["--resume", report.to_str().unwrap()]);
    let r = read_json(&out2.join("report.json"));
    let used = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "use")
        .unwrap()
        .clone();
    assert_eq!(code(&o), 1, "{}: {used}", stderr(&o));
    assert_eq!(used["status"], "failed", "{used}");
    let err = used["error"].as_str().unwrap_or_default();
    assert!(
        err.contains("step `make`: output `greeting` holds a NUL byte at offset 2"),
        "{used}"
    );
}

#[test]
fn a_nul_byte_bound_for_a_steps_environment_fails_it_before_it_runs_naming_the_variable() {
    let env = Env::new();
    // An input's default and a plan's `env:` (YAML's "\0"), approved.
    for (plan, var) in [
        (
            "version: 1\nid: n\ninputs:\n  who: {default: \"a\\0b\"}\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'echo hi'}}\n",
            "PLANGATE_INPUT_WHO",
        ),
        (
            "version: 1\nid: n\nsteps:\n  - {id: a, tool: bash, env: {LIFE_V: \"a\\0b\"}, parameters: {command: 'echo hi'}}\n",
            "LIFE_V",
        ),
    ] {
        let o = env.run(plan, &["--approve", "a"]);
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        let s = env.step("a");
        assert_eq!(s["status"], "failed", "{s}");
        let err = s["error"].as_str().unwrap_or_default();
        assert!(
            err.contains(&format!(
                "the variable `{var}` holds a NUL byte at offset 1"
            )) && err.contains("nothing was run"),
            "{s}"
        );
    }
}

/// A declared secret a step writes into an output reaches no step that was
/// not given it: dependents get the output as the report shows it, redacted
/// (a step that printed it hashed or encoded got it past any mask before).
#[test]
fn an_output_holding_a_secret_reaches_dependents_redacted() {
    use sha2::Digest as _;
    let env = Env::new();
    let token = "Zq8Kw3Np7Rt2Vx9Lm4Bh";
    let plan = "version: 1\nid: outsec\nsteps:\n  - id: hold\n    tool: bash\n    secrets: [PGTEST_OUTPUT_TOKEN]\n    parameters: {command: 'printf \"o=%s\\nmix=pre-%s-post\\nplain=fine\\n\" \"$PGTEST_OUTPUT_TOKEN\" \"$PGTEST_OUTPUT_TOKEN\" >> \"$PLANGATE_OUTPUT\"'}\n  - id: send\n    tool: bash\n    dependencies: [hold]\n    parameters: {command: 'for v in \"$PLANGATE_OUTPUT_HOLD_O\" \"$PLANGATE_OUTPUT_HOLD_MIX\" \"$PLANGATE_OUTPUT_HOLD_PLAIN\"; do printf %s \"$v\" | sha256sum; done'}\n";
    let plan_path = env.write("plan.yaml", plan);
    let o = env
        .cmd()
        .env("PGTEST_OUTPUT_TOKEN", token)
        .args(["run", "--out"])
        .arg(&env.out)
        .arg("--workspace")
        .arg(&env.ws)
        .arg(&plan_path)
        .output()
        .expect("run");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let sha = |s: &str| hex::encode(sha2::Sha256::digest(s.as_bytes()));
    let out = stdout_of(&env, "send");
    assert!(
        !out.contains(&sha(token)),
        "the secret reached `send`: {out}"
    );
    assert!(
        !out.contains(&sha(&format!("pre-{token}-post"))),
        "the secret reached `send` inside a value: {out}"
    );
    // What is not a secret passes as it was.
    assert!(out.contains(&sha("fine")), "{out}");
    assert_eq!(env.step("send")["status"], "success");
}
