//! The repository as users meet it: every CI example works outside
//! plangate's own repository (no build from `--path .`, no `uses: ./`), the
//! GitLab component declares the inputs users set and uses the image, and
//! every relative link in the Markdown files points at a file that exists.

use std::path::{Path, PathBuf};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn yaml(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn every_ci_example_works_outside_plangates_repository() {
    let dir = root().join("examples/ci");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        for bad in ["--path .", "uses: ./", "image: rust:", "cargo install"] {
            assert!(
                !text.contains(bad),
                "{} builds plangate from its own source ({bad})",
                p.display()
            );
        }
        if p.extension().is_some_and(|e| e == "yml") {
            let v = yaml(&p);
            assert!(v.is_object(), "{}", p.display());
            // Every GitLab job that runs plangate in the image clears its entrypoint
            // (the image's is `plangate`; GitLab needs a shell).
            for (name, job) in v.as_object().unwrap() {
                let image = &job["image"];
                if image.is_object() {
                    assert_eq!(
                        image["entrypoint"],
                        serde_json::json!([""]),
                        "{}: {name}",
                        p.display()
                    );
                    assert!(
                        image["name"].as_str().unwrap().contains("/plangate:"),
                        "{name}"
                    );
                }
            }
        }
        seen += 1;
    }
    assert!(seen >= 5);
}

#[test]
fn the_gitlab_component_takes_the_inputs_users_set_and_uses_the_image() {
    let text = std::fs::read_to_string(root().join("templates/plangate.yml")).unwrap();
    let (spec, job) = text.split_once("\n---\n").expect("spec, then the job");
    let spec: Value = serde_saphyr::from_str(spec).unwrap();
    let inputs = spec["spec"]["inputs"].as_object().unwrap();
    for name in ["plan", "policy", "tolerance", "approvals", "junit"] {
        assert!(inputs.contains_key(name), "input {name}");
    }
    assert!(inputs["plan"].get("default").is_none(), "plan is required");
    // Every `$[[ inputs.x ]]` the job uses is declared.
    for part in job.split("$[[ inputs.").skip(1) {
        let name = part.split_whitespace().next().unwrap();
        assert!(inputs.contains_key(name), "undeclared input {name}");
    }
    // With the inputs filled in, the job is valid YAML that runs plangate in the image.
    let mut filled = job.to_owned();
    for (name, v) in inputs {
        let value = v["default"].as_str().unwrap_or("plan.yaml");
        let value = if name == "job" { "plangate" } else { value };
        filled = filled.replace(&format!("$[[ inputs.{name} ]]"), value);
    }
    let v: Value = serde_saphyr::from_str(&filled).unwrap();
    let job = &v["plangate"];
    assert!(
        job["image"]["name"]
            .as_str()
            .unwrap()
            .contains("/plangate:")
    );
    assert!(job["script"][0].as_str().unwrap().contains("plangate run"));
    assert_eq!(job["artifacts"]["reports"]["junit"], "plangate-junit.xml");
    // Only "nothing ran: needs an approval or blocked" (3) is yellow; a
    // rejected agent answer (5) fails the job.
    assert_eq!(
        job["allow_failure"]["exit_codes"],
        serde_json::json!([3]),
        "{job:#}"
    );
}

/// The component's job with its inputs' defaults filled in: (variables, script).
fn component_job() -> (serde_json::Map<String, Value>, String) {
    let text = std::fs::read_to_string(root().join("templates/plangate.yml")).unwrap();
    let (spec, job) = text.split_once("\n---\n").unwrap();
    let spec: Value = serde_saphyr::from_str(spec).unwrap();
    let mut filled = job.to_owned();
    for (name, v) in spec["spec"]["inputs"].as_object().unwrap() {
        let value = v["default"].as_str().unwrap_or("plan.yaml");
        let value = if name == "job" { "plangate" } else { value };
        filled = filled.replace(&format!("$[[ inputs.{name} ]]"), value);
    }
    let v: Value = serde_saphyr::from_str(&filled).unwrap();
    let job = &v["plangate"];
    (
        job["variables"].as_object().unwrap().clone(),
        job["script"][0].as_str().unwrap().to_owned(),
    )
}

/// Run the component's script in `env`'s workspace with the built binary
/// first on `PATH` and `junit` as the `junit` input.
fn run_component(env: &crate::harness::Env, junit: &str) -> std::process::Output {
    run_component_with(env, junit, &[])
}

/// [`run_component`] with more variables (`(name, value)`; an input's
/// variable given here replaces the input's default).
fn run_component_with(
    env: &crate::harness::Env,
    junit: &str,
    more: &[(&str, &str)],
) -> std::process::Output {
    let (vars, script) = component_job();
    let bin_dir = assert_cmd::cargo::cargo_bin("plangate")
        .parent()
        .unwrap()
        .to_path_buf();
    let mut c = std::process::Command::new("bash");
    for (k, _) in std::env::vars() {
        if crate::harness::outside_only(&k) {
            c.env_remove(k);
        }
    }
    for (k, v) in &vars {
        c.env(k, v.as_str().unwrap());
    }
    for (k, v) in more {
        c.env(k, v);
    }
    c.env("PLANGATE_JUNIT", junit).env(
        "PATH",
        format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    c.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
        .current_dir(&env.ws)
        .output()
        .unwrap()
}

#[test]
fn the_gitlab_component_makes_the_junit_folder_or_fails_saying_why() {
    let env = crate::harness::Env::new();
    env.write(
        "plan.yaml",
        "version: 1\nid: gl\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'echo ok'}}\n",
    );
    // A folder that does not exist yet: made, and the report is in it.
    let o = run_component(&env, "reports/plangate/junit.xml");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let xml = std::fs::read_to_string(env.ws.join("reports/plangate/junit.xml")).unwrap();
    assert!(xml.contains("<testsuite"), "{xml}");
    assert!(env.ws.join("plangate-out/report.json").exists());
    // A folder that cannot be made (a file is in the way): the job fails with the reason.
    env.write("blocker", "a file\n");
    let o = run_component(&env, "blocker/junit.xml");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("plangate component: cannot create the folder blocker of the JUnit report"),
        "{err}"
    );
    // A report plangate could not write (a folder is in the way): the job
    // fails although every step succeeded.
    std::fs::create_dir_all(env.ws.join("taken/junit.xml")).unwrap();
    let o = run_component(&env, "taken/junit.xml");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("plangate component: the JUnit report taken/junit.xml was not written"),
        "{err}"
    );
    // A failing code is kept as it is (2: an invalid plan).
    env.write(
        "plan.yaml",
        "version: 1\nid: gl\nsteps:\n  - {id: a, tool: bash, parameters: {comand: ls}}\n",
    );
    let o = run_component(&env, "taken/junit.xml");
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The allowed 3 (nothing ran: an approval is missing) stays 3 with its
    // report, and becomes a failure without it.
    env.write(
        "plan.yaml",
        "version: 1\nid: gl\nsteps:\n  - {id: a, tool: bash, requires_approval: true, parameters: {command: 'echo ok'}}\n",
    );
    let o = run_component(&env, "reports/plangate/junit.xml");
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run_component(&env, "taken/junit.xml");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Relative link targets in a Markdown text: `[text](target)` with no scheme.
fn relative_links(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for part in line.split("](").skip(1) {
            let target = part.split(')').next().unwrap_or("");
            let target = target.split_whitespace().next().unwrap_or("");
            let target = target.split('#').next().unwrap_or("");
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            out.push(target.to_owned());
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_markdown_files_points_at_a_file() {
    let mut files = vec![
        root().join("README.md"),
        root().join("ARCHITECTURE.md"),
        root().join("CHANGELOG.md"),
    ];
    for dir in ["docs", "docs/design", "tests/fixtures/schemas"] {
        if let Ok(rd) = std::fs::read_dir(root().join(dir)) {
            files.extend(
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "md")),
            );
        }
    }
    let mut broken = Vec::new();
    let mut checked = 0;
    for f in &files {
        let Ok(md) = std::fs::read_to_string(f) else {
            continue;
        };
        for link in relative_links(&md) {
            checked += 1;
            let target = f.parent().unwrap().join(&link);
            if !target.exists() {
                broken.push(format!("{}: {link}", f.display()));
            }
            // Nothing outside the repository (the old `../shared/SPEC.md`).
            let canon = target.canonicalize().unwrap_or(target.clone());
            if !canon.starts_with(root().canonicalize().unwrap()) {
                broken.push(format!("{}: {link} leaves the repository", f.display()));
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
    assert!(checked > 5, "{checked} links");
}

/// The `run:` script of the action's step named `name`.
fn action_step_script(name: &str) -> String {
    let action = yaml(&root().join("action.yml"));
    action["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .and_then(|s| s["run"].as_str())
        .unwrap_or_else(|| panic!("no step {name}"))
        .to_owned()
}

#[test]
fn the_actions_inputs_lines_reach_the_plan_as_inputs_never_as_shell_text() {
    let env = crate::harness::Env::new();
    let plan = env.write(
        "plan.yaml",
        "version: 1\nid: action-inputs\ninputs:\n  base-ref: {default: main}\n  note: {}\n  count: {type: number, default: 1}\nsteps:\n  - id: show\n    tool: bash\n    parameters: {command: 'printf \"%s|%s|%s\" \"$PLANGATE_INPUT_BASE_REF\" \"$PLANGATE_INPUT_NOTE\" \"$PLANGATE_INPUT_COUNT\"'}\n",
    );
    let script = action_step_script("Run the plan");
    // A value with quotes, `$(...)` and `;` stays one argument's text.
    let note = "it's \"quoted\"; $(echo no) `echo no` $HOME";
    let lines = format!("base-ref=release/2.0\r\nnote={note}\n\n");
    let mut c = std::process::Command::new("bash");
    for (k, _) in std::env::vars() {
        if crate::harness::outside_only(&k) {
            c.env_remove(k);
        }
    }
    let o = c
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
        .current_dir(&env.ws)
        .env("BIN", assert_cmd::cargo::cargo_bin("plangate"))
        .env("PLAN", &plan)
        .env("PLAN_INPUTS", &lines)
        .env("PLANGATE_OUT", &env.out)
        .env("PLANGATE_INPUT_COUNT", "7")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = std::fs::read_to_string(env.out.join("artifacts/show/stdout.txt")).unwrap();
    assert_eq!(out, format!("release/2.0|{note}|7"));
    assert_eq!(env.report()["inputs"]["note"], note);
    // An unknown name is the binary's usage error, named.
    let o = std::process::Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
        .current_dir(&env.ws)
        .env("BIN", assert_cmd::cargo::cargo_bin("plangate"))
        .env("PLAN", &plan)
        .env("PLAN_INPUTS", "nope=1")
        .env("PLANGATE_OUT", env.out.join("again"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`nope`"));
}

/// The component publishes to GitLab with the project's token, and
/// `publish: false` keeps every token from plangate: nothing is sent.
#[test]
fn the_gitlab_component_publishes_only_when_its_publish_input_allows() {
    use wiremock::MockServer;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let env = crate::harness::Env::new();
    env.write(
        "plan.yaml",
        r#"version: 1
id: gl
publish: {comment: {max: 1}}
steps:
  - id: a
    tool: bash
    parameters:
      command: |
        printf '%s\n' '{"type": "comment", "body": "hi"}' >> "$PLANGATE_REQUESTS"
"#,
    );
    for (publish, want) in [("true", "published"), ("false", "would_publish")] {
        let server = rt.block_on(MockServer::start());
        rt.block_on(async {
            crate::harness::mock(
                "GET",
                "/api/v4/projects/42/merge_requests/7/notes",
                200,
                Some(serde_json::json!([])),
            )
            .mount(&server)
            .await;
            crate::harness::mock(
                "POST",
                "/api/v4/projects/42/merge_requests/7/notes",
                201,
                Some(serde_json::json!({"id": 1})),
            )
            .mount(&server)
            .await;
            crate::harness::mock(
                "POST",
                "/api/v4/projects/42/statuses/ffffffffffffffffffffffffffffffffffffffff",
                201,
                Some(serde_json::json!({"id": 2})),
            )
            .mount(&server)
            .await;
        });
        let api = format!("{}/api/v4", server.uri());
        let o = run_component_with(
            &env,
            "reports/junit.xml",
            &[
                ("PLANGATE_PUBLISH", publish),
                ("GITLAB_CI", "true"),
                ("GITLAB_TOKEN", "gl-component-token-5e6f7a8b9c0d"),
                ("CI_PROJECT_ID", "42"),
                ("CI_MERGE_REQUEST_IID", "7"),
                ("CI_COMMIT_SHA", "ffffffffffffffffffffffffffffffffffffffff"),
                ("CI_API_V4_URL", &api),
            ],
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let report = crate::harness::read_json(&env.ws.join("plangate-out/report.json"));
        assert_eq!(report["publish"][0]["state"], want, "{publish}: {report}");
        let sent = rt.block_on(server.received_requests()).unwrap_or_default();
        assert_eq!(sent.is_empty(), publish == "false", "{publish}: {sent:?}");
    }
}
