//! Honest outcomes and logs that explain failures (issue 16, items 7 and 8):
//! a partial success says so everywhere (report, `$GITHUB_OUTPUT`, summary,
//! annotations, JUnit), `--strict` fails it, `validate` exits as `run` would,
//! and a failed step's last lines (redacted, then cut) appear in the console,
//! its group, its annotation, JUnit and the summary (`--show-output`).
//! Plans are fixtures in `tests/fixtures/outcomes/`.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::harness::{Env, code, read_json, stderr};

/// A made-up AWS key id (the rules' shape), written to the workspace, never in a fixture.
const AWS_ID: &str = "AKIAZ7Q4NX2LMRBT5KPW";
/// A second made-up one, for a step's output.
const AWS_ID_2: &str = "AKIAQ5TX7MZP3LWN2RKD";
/// A made-up value of a declared secret.
pub const DEPLOY_TOKEN: &str = "dpl-7Hq2xV9mKp4sLw8RtZ3n";

pub fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/outcomes")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `plangate run` of a fixture under GitHub Actions, with the step summary,
/// the outputs file and JUnit written into the test's folder.
fn gh_run(env: &Env, plan: &str, args: &[&str]) -> Output {
    let plan = env.write("plan.yaml", &fixture(plan));
    env.run_cmd(&plan)
        .args(["--junit", "junit.xml"])
        .args(args)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", env.ws.join("summary.md"))
        .env("GITHUB_OUTPUT", env.ws.join("github_output.txt"))
        .env("DEPLOY_TOKEN", DEPLOY_TOKEN)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn file(env: &Env, name: &str) -> String {
    std::fs::read_to_string(env.ws.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The value of `key` in a `$GITHUB_OUTPUT` file (heredoc form).
fn output(text: &str, key: &str) -> String {
    let start = text
        .find(&format!("{key}<<"))
        .unwrap_or_else(|| panic!("{key} missing: {text}"));
    let rest = &text[start..];
    let mut lines = rest.lines();
    let delim = lines
        .next()
        .unwrap_or_default()
        .split("<<")
        .nth(1)
        .unwrap_or_default();
    let value: Vec<&str> = lines.take_while(|l| *l != delim).collect();
    value.join("\n")
}

fn reasons(env: &Env) -> Value {
    env.report()["partial_reasons"].clone()
}

#[test]
fn a_step_skipped_for_want_of_approval_makes_a_partial_success() {
    let env = Env::new();
    let o = gh_run(&env, "skip.yaml", &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = env.report();
    assert_eq!(r["status"], "success");
    assert_eq!(r["exit_code"], 0);
    assert_eq!(r["conclusion"], "partial");
    assert_eq!(r["strict"], false);
    // The dependent skipped because of it is listed; the false condition and its dependent are not.
    assert_eq!(
        reasons(&env),
        json!([
            {"step": "review", "reason": "approval_required"},
            {"step": "post", "reason": "approval_required", "via": "review"}
        ])
    );
    assert_eq!(env.step("fix")["status"], "skipped");
    assert_eq!(env.step("publish")["status"], "skipped");
    assert_eq!(env.step("after-fix")["status"], "skipped");
    let out = file(&env, "github_output.txt");
    assert_eq!(output(&out, "conclusion"), "partial");
    assert_eq!(output(&out, "partial"), "true");
    assert_eq!(output(&out, "status"), "success");
    assert_eq!(output(&out, "exit-code"), "0");
    let md = file(&env, "summary.md");
    assert!(
        md.starts_with("## ⚠️ plangate: `review` — partial success (exit 0)"),
        "{md}"
    );
    assert!(
        md.contains("- `review` was skipped: it needs an approval")
            && md.contains("- `post` was skipped: it depends on `review`"),
        "{md}"
    );
    assert!(!md.contains("`fix` was skipped"), "{md}");
    let err = stderr(&o);
    assert!(err.contains("partial success (exit 0)"), "{err}");
    assert!(
        err.contains("::warning title=plangate: partial success::`review` was skipped"),
        "{err}"
    );
    // Every group holds a line: a successful step's command, time and artifacts.
    assert!(
        err.contains("::group::ok lint success in ")
            && err.contains("     bash `echo lint clean`, ")
            && err.contains("artifacts: artifacts/lint/stdout.txt"),
        "{err}"
    );
    assert!(!err.contains("::group::ok lint success in 0.00s\n::endgroup::"));
    assert!(!err.contains("::error"), "{err}");
    // --strict: the same run fails with exit 3, recorded as such.
    let o = gh_run(&env, "skip.yaml", &["--strict"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let r = env.report();
    assert_eq!(r["status"], "denied");
    assert_eq!(r["conclusion"], "failure");
    assert_eq!(r["strict"], true);
    assert_eq!(r["partial_reasons"][0]["step"], "review");
    assert!(file(&env, "summary.md").contains("**Strict**"));
    // And from the environment.
    let plan = env.write("plan.yaml", &fixture("skip.yaml"));
    let o = env
        .run_cmd(&plan)
        .env("PLANGATE_STRICT", "true")
        .output()
        .unwrap();
    assert_eq!(code(&o), 3, "{}", stderr(&o));
}

#[test]
fn an_allowed_failure_is_a_partial_success_and_a_warning() {
    let env = Env::new();
    let o = gh_run(&env, "allowed.yaml", &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.report()["conclusion"], "partial");
    assert_eq!(
        reasons(&env),
        json!([{"step": "pkg-b", "reason": "allowed_failure"}])
    );
    assert_eq!(env.step("report")["status"], "success");
    let err = stderr(&o);
    assert!(
        err.contains("::warning title=plangate step pkg-b failed (allowed%3A continue_on_error)::exited with code 7%0Astderr:%0Aerror: b conflicts with a%0Astdout:%0Aresolving b"),
        "{err}"
    );
    assert!(
        !err.contains("::error"),
        "an allowed failure is no error: {err}"
    );
    let out = file(&env, "github_output.txt");
    assert_eq!(output(&out, "conclusion"), "partial");
    let md = file(&env, "summary.md");
    assert!(md.contains("— partial success (exit 0)"), "{md}");
    assert!(
        md.contains("- `pkg-b` failed, allowed by continue_on_error"),
        "{md}"
    );
    assert!(
        md.contains("<details><summary><code>pkg-b</code> failed (allowed by continue_on_error): exited with code 7</summary>"),
        "{md}"
    );
    // JUnit: no <failure> for it, the error in <system-err>.
    let junit = std::fs::read_to_string(env.out.join("junit.xml"))
        .or_else(|_| std::fs::read_to_string(env.ws.join("junit.xml")))
        .unwrap_or_else(|e| panic!("{e}"));
    let doc = roxmltree::Document::parse(&junit).unwrap_or_else(|e| panic!("{e}\n{junit}"));
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .expect("testsuite");
    assert_eq!(suite.attribute("failures"), Some("0"), "{junit}");
    assert!(
        doc.descendants().all(|n| !n.has_tag_name("failure")),
        "{junit}"
    );
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some("pkg-b"))
        .expect("pkg-b case");
    let text = |tag: &str| {
        case.children()
            .find(|n| n.has_tag_name(tag))
            .and_then(|n| n.text())
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        text("system-err")
            .starts_with("allowed failure (continue_on_error): failed: exited with code 7")
            && text("system-err").contains("error: b conflicts with a"),
        "{junit}"
    );
    assert_eq!(text("system-out"), "resolving b");
    let property = |name: &str| {
        doc.descendants()
            .find(|n| n.has_tag_name("property") && n.attribute("name") == Some(name))
            .and_then(|n| n.attribute("value"))
            .map(str::to_owned)
    };
    assert_eq!(property("plangate.conclusion").as_deref(), Some("partial"));
    // --strict: exit 1.
    let o = gh_run(&env, "allowed.yaml", &["--strict"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(env.report()["status"], "failed");
}

#[test]
fn validate_exits_with_the_code_run_would_give() {
    let env = Env::new();
    let validate = |plan: &str, args: &[&str]| {
        let p = env.write(plan, &fixture(plan));
        env.cmd()
            .arg("validate")
            .arg(p)
            .args(args)
            .output()
            .unwrap()
    };
    // deny (the default): run would stop at the gate, exit 3.
    let o = validate("deny.yaml", &[]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains("run would stop before any step runs (exit 3): `review`"),
        "{text}"
    );
    let plan = env.ws.join("deny.yaml");
    let run = env.run_cmd(&plan).output().unwrap();
    assert_eq!(code(&run), 3, "validate and run agree: {}", stderr(&run));
    let o = validate("deny.yaml", &["--format", "json"]);
    assert_eq!(code(&o), 3);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["gate"],
        json!({"status": "denied", "exit_code": 3, "refused": ["review"], "partial_reasons": [], "strict": false})
    );
    // skip: exit 0, and it says the run would be partial.
    let o = validate("skip.yaml", &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("run would succeed only partly"), "{text}");
    assert!(
        text.contains("`post` was skipped: it depends on `review`"),
        "{text}"
    );
    let o = validate("skip.yaml", &["--format", "json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["gate"]["exit_code"], 0);
    assert_eq!(v["gate"]["partial_reasons"][1]["via"], "review");
    // --strict: as `run --strict` would.
    assert_eq!(code(&validate("skip.yaml", &["--strict"])), 3);
    // Approved: nothing to say, exit 0.
    let o = validate("deny.yaml", &["--approve", "review"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("run would"));
}

/// Nothing of the planted secrets: the values and their first 12 bytes.
fn no_secret(what: &str, text: &str) {
    for s in [AWS_ID, DEPLOY_TOKEN] {
        assert!(!text.contains(&s[..12]), "{what} holds a secret: {text}");
    }
}

#[test]
fn a_failed_steps_last_lines_explain_it_everywhere_redacted() {
    let env = Env::new();
    env.write("leak.txt", &format!("key={AWS_ID}\n"));
    let o = gh_run(&env, "failing.yaml", &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let tail = env.step("compile")["output_tail"].clone();
    let stdout = tail["stdout"].as_str().unwrap_or_default();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 40, "{stdout}");
    assert_eq!(lines[0], "compiling unit 22");
    assert_eq!(lines[39], "using token [REDACTED]");
    assert_eq!(tail["stdout_truncated"], true);
    let stderr_tail = tail["stderr"].as_str().unwrap_or_default();
    assert!(
        stderr_tail.contains("key=[REDACTED:aws-access-key-id]")
            && stderr_tail.ends_with("src/main.rs:3: error: expected `;` near ``` <b>x</b> & more"),
        "{stderr_tail}"
    );
    assert!(
        env.step("ok").get("output_tail").is_none(),
        "only failures by default"
    );
    let err = stderr(&o);
    // Inside the failed step's group, behind `| `.
    let group = err
        .split("::group::FAIL compile failed")
        .nth(1)
        .and_then(|g| g.split("::endgroup::").next())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        group.contains("     stderr:\n     | key=[REDACTED:aws-access-key-id]\n"),
        "{group}"
    );
    assert!(group.contains("     | compiling unit 60\n     | using token [REDACTED]\n"));
    assert!(!group.contains("compiling unit 21\n"), "{group}");
    // The annotation holds the tail, escaped as workflow commands require.
    let annotation = err
        .lines()
        .find(|l| l.starts_with("::error title=plangate step compile failed::"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        annotation.contains("exited with code 1%0Astderr:%0Akey=[REDACTED:aws-access-key-id]%0Asrc/main.rs:3: error: expected"),
        "{annotation}"
    );
    assert!(!annotation.contains('\r') && !annotation.contains("%0D"));
    // JUnit: the <failure> text and <system-out>/<system-err>.
    let junit = std::fs::read_to_string(env.ws.join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap_or_else(|e| panic!("{e}\n{junit}"));
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some("compile"))
        .expect("compile case");
    let child = |tag: &str| case.children().find(|n| n.has_tag_name(tag)).expect(tag);
    let failure = child("failure");
    assert_eq!(failure.attribute("message"), Some("exited with code 1"));
    let text = failure.text().unwrap_or_default();
    assert!(
        text.starts_with("exited with code 1\n\nstderr:\nkey=[REDACTED:aws-access-key-id]")
            && text.contains("<b>x</b> & more")
            && text.ends_with("compiling unit 60\nusing token [REDACTED]"),
        "{text}"
    );
    assert_eq!(child("system-out").text().unwrap_or_default(), stdout);
    assert_eq!(child("system-err").text().unwrap_or_default(), stderr_tail);
    // The step summary: a <details> with fenced blocks longer than the backticks inside.
    let md = file(&env, "summary.md");
    assert!(
        md.contains("<details><summary><code>compile</code> failed: exited with code 1</summary>"),
        "{md}"
    );
    assert!(
        md.contains("stderr:\n\n````text\nkey=[REDACTED:aws-access-key-id]\n"),
        "{md}"
    );
    for (what, text) in [
        ("stderr", err.as_str()),
        ("summary", md.as_str()),
        ("junit", junit.as_str()),
        (
            "report",
            &std::fs::read_to_string(env.out.join("report.json")).unwrap(),
        ),
        (
            "markdown",
            &String::from_utf8_lossy(
                &env.cmd()
                    .args(["report", "--format", "markdown"])
                    .arg(env.out.join("report.json"))
                    .output()
                    .unwrap()
                    .stdout,
            ),
        ),
    ] {
        no_secret(what, text);
    }
}

#[test]
fn show_output_all_and_none() {
    let env = Env::new();
    env.write("leak.txt", "nothing secret\n");
    let o = gh_run(&env, "failing.yaml", &["--show-output", "all"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(env.step("ok")["output_tail"], json!({"stdout": "fine"}));
    let err = stderr(&o);
    assert!(
        err.contains("::group::ok ok success in ")
            && err.contains("     stdout:\n     | fine\n::endgroup::"),
        "{err}"
    );
    // The summary file is appended to: start it afresh.
    std::fs::remove_file(env.ws.join("summary.md")).unwrap();
    let o = gh_run(&env, "failing.yaml", &["--show-output", "none"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(env.step("compile").get("output_tail").is_none());
    let err = stderr(&o);
    assert!(!err.contains("compiling unit 60"), "{err}");
    assert!(
        err.contains("::error title=plangate step compile failed::exited with code 1\n"),
        "{err}"
    );
    let md = file(&env, "summary.md");
    assert!(!md.contains("<details>"), "{md}");
    // From the environment too.
    let plan = env.write("plan.yaml", &fixture("failing.yaml"));
    let o = env
        .run_cmd(&plan)
        .env("PLANGATE_SHOW_OUTPUT", "all")
        .env("DEPLOY_TOKEN", DEPLOY_TOKEN)
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(env.step("ok").get("output_tail").is_some());
}

#[test]
fn a_secret_in_a_workspace_file_is_annotated_at_its_repository_path() {
    let env = Env::new();
    // The repository: the folder holding ws/ (and out/).
    let repo = env.ws.parent().unwrap().to_path_buf();
    let st = std::process::Command::new("git")
        .args(["init", "-q"])
        .arg(&repo)
        .status()
        .unwrap();
    assert!(st.success());
    env.write("leak.txt", &format!("{AWS_ID}\n"));
    env.write("shown.txt", &format!("{AWS_ID_2}\n"));
    let o = gh_run(&env, "workspace_secret.yaml", &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    // Written into the workspace, found in the diff: the file and its line, repository-relative.
    assert!(
        err.contains("::error file=ws/conf/app.ini,line=2,title=secret (aws-access-key-id)::"),
        "{err}"
    );
    // In the run's output: named in the message, with no file= GitHub could not open.
    let artifact = err
        .lines()
        .find(|l| l.starts_with("::error") && l.contains("artifacts/show/stdout.txt"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        artifact.starts_with("::error title=secret (aws-access-key-id)::"),
        "{artifact}"
    );
    assert!(
        !err.contains("file=diff-summary.md") && !err.contains("file=out/"),
        "{err}"
    );
    assert!(!err.contains(&AWS_ID[..12]) && !err.contains(&AWS_ID_2[..12]));
    let _ = read_json(&env.out.join("report.json"));
}

#[test]
fn a_failed_agent_steps_tail_is_its_last_attempts_rejections() {
    let env = Env::new();
    let (_dir, agents) =
        crate::harness::fake_agent(&env, "coder", &["I would rather not write any code."]);
    let plan = env.write(
        "plan.yaml",
        &format!(
            "version: 1\nid: ag\npolicy: {{risk_tolerance: high}}\nagents:\n{agents}steps:\n  - id: ask\n    tool: agent\n    parameters: {{agent: coder, prompt: Write code., output: code, max_attempts: 1}}\n"
        ),
    );
    let o = env
        .run_cmd(&plan)
        .env("GITHUB_ACTIONS", "true")
        .output()
        .unwrap();
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    let step = env.step("ask");
    let reasons = step["output_tail"]["reasons"].clone();
    let first = reasons[0].as_str().unwrap_or_default();
    // What the report already holds: the last attempt's rejection, as the guard said it.
    let rejection = &step["agent_attempts"][0]["rejections"][0];
    assert!(
        first.starts_with(rejection["category"].as_str().unwrap_or("?"))
            && first.contains(rejection["message"].as_str().unwrap_or("?")),
        "{reasons} vs {rejection}"
    );
    let err = stderr(&o);
    assert!(
        err.contains("     last attempt refused:\n     | ")
            && err.contains("%0Alast attempt refused:%0A"),
        "{err}"
    );
}

/// Issue 27 item 5: `--quiet` prints one line, only when the run does not
/// succeed cleanly, naming the steps that stopped it and why.
fn quiet_line(o: &Output) -> String {
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    lines[0].to_owned()
}

#[test]
fn quiet_says_nothing_on_success_and_one_line_with_the_reasons_otherwise() {
    let env = Env::new();
    let o = env.run(
        "version: 1\nid: q\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'echo ok'}}\n",
        &["--quiet"],
    );
    assert_eq!(code(&o), 0);
    assert_eq!(stderr(&o), "", "a clean success is silent");

    // Stopped at the gate: the blocked and the denied step, each with its
    // reason; the value of a declared secret the reason quotes is redacted.
    let env = Env::new();
    let plan = "version: 1\nid: q\npolicy: {risk_tolerance: low, on_approval_required: deny}\nsteps:\n  - {id: build, tool: bash, parameters: {command: 'echo ok'}}\n  - id: push\n    tool: bash\n    secrets: [PGTEST_QUIET_TOKEN]\n    parameters: {command: 'echo dpl-7Hq2xV9mKp4sLw8RtZ3n > pushed.txt'}\n  - id: deploy\n    tool: bash\n    secrets: [PGTEST_QUIET_NEVER_SET]\n    parameters: {command: 'echo deployed'}\n";
    let p = env.write("plan.yaml", plan);
    let o = env
        .run_cmd(&p)
        .arg("--quiet")
        .env("PGTEST_QUIET_TOKEN", DEPLOY_TOKEN)
        .env_remove("PGTEST_QUIET_NEVER_SET")
        .output()
        .unwrap();
    assert_eq!(code(&o), 3);
    let line = quiet_line(&o);
    assert!(
        line.starts_with("plangate: denied (exit 3): push — denied: "),
        "{line}"
    );
    assert!(
        line.contains("; deploy — blocked: the secret `PGTEST_QUIET_NEVER_SET`"),
        "{line}"
    );
    assert!(line.contains("exceeds tolerance low"), "{line}");
    assert!(!line.contains(DEPLOY_TOKEN), "{line}");
    assert!(
        !line.contains("build"),
        "a step that did not run is not named: {line}"
    );
    assert!(line.ends_with(&format!(
        "; report: {}",
        env.out.join("report.json").display()
    )));

    // Failures: at most three named, each reason cut, then "and N more".
    let env = Env::new();
    let long = "x".repeat(400);
    let mut plan = "version: 1\nid: q\npolicy: {fail_fast: false}\nsteps:\n".to_owned();
    for i in 0..5 {
        plan.push_str(&format!(
            "  - {{id: s{i}, tool: bash, parameters: {{command: 'echo ok'}}, expected_output: nothing-like-this-{long}}}\n"
        ));
    }
    // A reason that quotes a declared secret's value shows it redacted.
    plan.push_str(&format!(
        "  - {{id: s5, tool: bash, secrets: [PGTEST_QUIET_TOKEN], parameters: {{command: 'echo ok'}}, expected_output: {DEPLOY_TOKEN}}}\n"
    ));
    plan = plan.replace("steps:\n", &format!(
        "steps:\n  - {{id: s9, tool: bash, secrets: [PGTEST_QUIET_TOKEN], parameters: {{command: 'echo ok'}}, expected_output: {DEPLOY_TOKEN}}}\n"
    ));
    let p = env.write("plan.yaml", &plan);
    let o = env
        .run_cmd(&p)
        .arg("--quiet")
        .env("PGTEST_QUIET_TOKEN", DEPLOY_TOKEN)
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let line = quiet_line(&o);
    assert!(
        line.starts_with(
            "plangate: failed (exit 1): s9 — failed: stdout does not match expected_output `[REDACTED]`; s0 — failed: stdout does not match expected_output `nothing-like-this-xxx"
        ),
        "{line}"
    );
    assert!(!line.contains(DEPLOY_TOKEN), "{line}");
    assert!(
        line.contains("…; s1 — failed: ") && !line.contains("s2 —"),
        "{line}"
    );
    assert!(line.contains("; and 4 more steps; report: "), "{line}");
    assert!(
        line.chars().count() < 900,
        "bounded: {} chars",
        line.chars().count()
    );

    // A partial success says what was left undone.
    let env = Env::new();
    let o = env.run(
        "version: 1\nid: q\npolicy: {on_approval_required: skip}\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'echo ok'}}\n  - {id: gated, tool: bash, requires_approval: true, parameters: {command: 'echo no'}}\n",
        &["--quiet"],
    );
    assert_eq!(code(&o), 0);
    let line = quiet_line(&o);
    assert!(
        line.starts_with(
            "plangate: partial success (exit 0): `gated` was skipped: it needs an approval"
        ),
        "{line}"
    );
}
