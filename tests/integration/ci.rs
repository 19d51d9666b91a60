//! `plangate report` renderers and the GitHub Actions outputs.

use crate::harness::{Env, code, read_json, stderr};

const AWS_ID: &str = "AKIAZ7Q4NX2LMRBT5KPW";

fn failing_run(env: &Env) {
    let plan = format!(
        "version: 1\nid: ci\npolicy: {{risk_tolerance: high}}\nsteps:\n  - {{id: bad, tool: bash, continue_on_error: true, parameters: {{command: 'echo \"<&>\" >&2; exit 2'}}}}\n  - {{id: ok, tool: bash, parameters: {{command: 'echo {AWS_ID}'}}}}\n"
    );
    let o = env.run(&plan, &[]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
}

fn render(env: &Env, format: &str) -> String {
    let o = env
        .cmd()
        .args(["report", "--format", format])
        .arg(env.out.join("report.json"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(!text.contains(AWS_ID));
    text
}

#[test]
fn a_saved_report_renders_as_markdown_junit_sarif_and_json() {
    let env = Env::new();
    failing_run(&env);
    let md = render(&env, "markdown");
    assert!(md.contains("| `ok` | bash | success"), "{md}");
    assert!(md.contains("| `bad` | bash | failed"), "{md}");
    assert!(md.contains("1 secret(s) found"), "{md}");
    let junit = render(&env, "junit");
    assert!(junit.starts_with("<?xml"));
    assert_eq!(
        junit.matches("<testcase ").count(),
        3,
        "two steps and the secrets case: {junit}"
    );
    // `bad` failed under continue_on_error: no <failure>, the error in <system-err>.
    assert_eq!(junit.matches("<failure ").count(), 1, "{junit}");
    assert!(
        junit.contains("<system-err>allowed failure (continue_on_error): failed: exited with code 2\n&lt;&amp;&gt;</system-err>"),
        "{junit}"
    );
    assert!(
        !junit.contains("<&>") && junit.contains("exited with code 2"),
        "escaped: {junit}"
    );
    let sarif: serde_json::Value = serde_json::from_str(&render(&env, "sarif")).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 1);
    assert_eq!(
        sarif["runs"][0]["results"][0]["ruleId"],
        "aws-access-key-id"
    );
    let json: serde_json::Value = serde_json::from_str(&render(&env, "json")).unwrap();
    assert_eq!(json, read_json(&env.out.join("report.json")));
    let gl: serde_json::Value =
        serde_json::from_str(&render(&env, "gitlab-secret-detection")).unwrap();
    assert_eq!(gl["scan"]["type"], "secret_detection");
    assert_eq!(gl["scan"]["status"], "success");
    let vulns = gl["vulnerabilities"].as_array().unwrap();
    assert_eq!(vulns.len(), 1, "{gl}");
    assert_eq!(vulns[0]["identifiers"][0]["value"], "aws-access-key-id");
    assert_eq!(vulns[0]["location"]["file"], "artifacts/ok/stdout.txt");
    assert_eq!(vulns[0]["location"]["start_line"], 1);
    assert_eq!(vulns[0]["severity"], "Critical");
    let time = regex_lite_time(gl["scan"]["start_time"].as_str().unwrap());
    assert!(time, "schema time format: {gl}");
    assert_eq!(
        gl,
        read_json(&env.out.join("gl-secret-detection-report.json")),
        "the run wrote the same GitLab report"
    );
    let o = env
        .cmd()
        .args(["report", "--format", "json", "missing.json"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    std::fs::write(env.ws.join("not-a-report.json"), "{\"x\": 1}").unwrap();
    let o = env
        .cmd()
        .args(["report", "--format", "markdown", "not-a-report.json"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("not a plangate report"));
}

#[test]
fn under_github_actions_the_summary_and_outputs_are_written() {
    let env = Env::new();
    let summary = env.ws.join("summary.md");
    let output = env.ws.join("output.txt");
    let plan = env.write(
        "plan.yaml",
        &format!("version: 1\nid: gh\npolicy: {{risk_tolerance: high}}\nsteps:\n  - {{id: s, tool: bash, parameters: {{command: 'echo {AWS_ID}'}}}}\n"),
    );
    let o = env
        .run_cmd(&plan)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &output)
        .output()
        .unwrap();
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("plangate: `gh`") && md.contains("secrets_found"),
        "{md}"
    );
    let out = std::fs::read_to_string(&output).unwrap();
    for key in [
        "status",
        "exit-code",
        "report",
        "diff-summary",
        "findings",
        "cost-usd",
    ] {
        assert!(
            out.contains(&format!("{key}<<ghadelimiter_")),
            "{key} missing: {out}"
        );
    }
    assert!(
        out.contains("\nsecrets_found\n") && out.contains("\n4\n"),
        "{out}"
    );
    for text in [&md, &out] {
        assert!(!text.contains(AWS_ID));
    }
}

#[test]
fn junit_flag_and_github_annotations() {
    let env = Env::new();
    let plan = env.write(
        "plan.yaml",
        &format!("version: 1\nid: gh\npolicy: {{risk_tolerance: high}}\nsteps:\n  - {{id: leak, tool: bash, parameters: {{command: 'echo \"::warning::injected\"; echo {AWS_ID} > conf.ini; exit 3', show_cli: true}}}}\n"),
    );
    let junit = env.ws.join("junit.xml");
    let o = env
        .run_cmd(&plan)
        .arg("--junit")
        .arg(&junit)
        .env("GITHUB_ACTIONS", "true")
        .output()
        .unwrap();
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testcase classname=\"gh\" name=\"leak\"") && xml.contains("<failure"),
        "{xml}"
    );
    let err = stderr(&o);
    assert!(
        err.contains("::error title=plangate step leak failed::exited with code 3"),
        "{err}"
    );
    // The secret was written to conf.ini: the annotation points at that file and line.
    assert!(
        err.contains("::error file=conf.ini,line=1,title=secret (aws-access-key-id)::"),
        "{err}"
    );
    // A step's output cannot issue workflow commands: it is wrapped in stop-commands.
    let stop = err
        .lines()
        .find(|l| l.starts_with("::stop-commands::"))
        .expect("stop-commands");
    let token = stop.trim_start_matches("::stop-commands::");
    let start = err.find(stop).unwrap();
    let end = err.find(&format!("::{token}::")).expect("resume");
    assert!(err[start..end].contains("::warning::injected"));
    assert!(!err.contains(AWS_ID) && !xml.contains(AWS_ID));
}

#[test]
fn the_nightly_cron_wrapper_keeps_reports_per_date_and_prunes_old_ones() {
    let env = Env::new();
    env.write(
        "plans/nightly.yaml",
        "version: 1\nid: nightly\nsteps:\n  - {id: ls, tool: bash, parameters: {command: ls}}\n",
    );
    let bin_dir = assert_cmd::cargo::cargo_bin("plangate")
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ci/nightly.sh");
    let nightly = env.ws.join(".plangate/nightly");
    std::fs::create_dir_all(&nightly).unwrap();
    for old in ["2001-01-01", "2001-01-02", "2001-01-03"] {
        std::fs::create_dir_all(nightly.join(old)).unwrap();
    }
    let run = || {
        std::process::Command::new("bash")
            .arg(script)
            .arg(&env.ws)
            .arg("plans/nightly.yaml")
            .arg("2")
            .env("PATH", &path)
            .output()
            .unwrap()
    };
    let o = run();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut kept: Vec<String> = std::fs::read_dir(&nightly)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("20"))
        .collect();
    kept.sort();
    assert_eq!(kept.len(), 2, "retention keeps 2: {kept:?}");
    assert_eq!(kept[0], "2001-01-03");
    assert!(nightly.join(&kept[1]).join("report.json").exists());
    // The reports and the lock stay out of git.
    assert_eq!(
        std::fs::read_to_string(nightly.join(".gitignore")).unwrap(),
        "*\n"
    );
    // While another run holds the lock, a second one skips.
    let holder = std::process::Command::new("flock")
        .arg(nightly.join(".lock"))
        .args(["sleep", "5"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let o = run();
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("skipping"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut holder = holder;
    let _ = holder.kill();
    let _ = holder.wait();
}

/// Issue 27 items 4 and 5: the nightly batch with a push step that needs
/// `GITHUB_TOKEN` behind a false condition runs green without the token;
/// when a step does stop it, the cron output names the step and the reason.
#[test]
fn the_nightly_wrapper_says_which_step_stopped_the_run_and_why() {
    let env = Env::new();
    env.write(
        "plans/nightly.yaml",
        "version: 1\nid: nightly\ninputs:\n  push: {type: boolean, default: false}\npolicy: {on_approval_required: deny}\nsteps:\n  - {id: lint, tool: bash, parameters: {command: 'echo linted'}}\n  - id: push\n    tool: bash\n    dependencies: [lint]\n    if: inputs.push == true\n    network: true\n    secrets: [GITHUB_TOKEN]\n    parameters: {command: 'echo pushing'}\n  - {id: announce, tool: bash, dependencies: [push], requires_approval: true, parameters: {command: 'echo announced'}}\n",
    );
    env.write(
        "plans/blocked.yaml",
        "version: 1\nid: blocked\nsteps:\n  - {id: lint, tool: bash, parameters: {command: 'echo linted'}}\n  - {id: deploy, tool: bash, dependencies: [lint], secrets: [PGTEST_NIGHTLY_NEVER_SET], parameters: {command: 'echo deploying'}}\n",
    );
    let bin_dir = assert_cmd::cargo::cargo_bin("plangate")
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ci/nightly.sh");
    let run = |plan: &str| {
        let mut c = std::process::Command::new("bash");
        for (k, _) in std::env::vars() {
            if crate::harness::outside_only(&k) {
                c.env_remove(k);
            }
        }
        c.arg(script)
            .arg(&env.ws)
            .arg(plan)
            .env("PATH", &path)
            .env_remove("GITHUB_TOKEN")
            .env_remove("PGTEST_NIGHTLY_NEVER_SET")
            .output()
            .unwrap()
    };
    let o = run("plans/nightly.yaml");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(err, "", "a clean success is silent");
    assert!(String::from_utf8_lossy(&o.stdout).contains("ended with exit 0"));
    let o = run("plans/blocked.yaml");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.starts_with(
            "plangate: denied (exit 3): deploy — blocked: the secret `PGTEST_NIGHTLY_NEVER_SET`"
        ),
        "{err}"
    );
    assert!(!err.contains("lint —"), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("ended with exit 3"));
}

#[test]
fn junit_is_written_for_an_invalid_plan_too() {
    let env = Env::new();
    let junit = env.ws.join("junit.xml");
    let o = env.run(
        "version: 1\nid: x\nsteps:\n  - {id: a, tool: bash, parameters: {comand: ls}}\n",
        &["--junit", junit.to_str().unwrap()],
    );
    assert_eq!(code(&o), 2);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("name=\"plan\"") && xml.contains("unknown key"),
        "{xml}"
    );
}

/// `YYYY-MM-DDTHH:MM:SS`, what GitLab's security report schema accepts.
fn regex_lite_time(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() == 19
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        })
}

#[test]
fn scan_writes_a_gitlab_secret_detection_report() {
    let env = Env::new();
    env.write("src/config.env", &format!("x=1\nAWS_KEY={AWS_ID}\n"));
    env.write("clean.txt", "nothing here\n");
    let o = env
        .cmd()
        .args(["scan", "--format", "gitlab-secret-detection", "."])
        .output()
        .unwrap();
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(!text.contains(AWS_ID), "{text}");
    let gl: serde_json::Value = serde_json::from_str(&text).unwrap();
    let vulns = gl["vulnerabilities"].as_array().unwrap();
    assert_eq!(vulns.len(), 1, "{gl}");
    assert_eq!(vulns[0]["location"]["file"], "src/config.env");
    assert_eq!(vulns[0]["location"]["start_line"], 2);
    assert!(regex_lite_time(gl["scan"]["end_time"].as_str().unwrap()));
}

#[test]
fn a_clean_run_writes_an_empty_gitlab_report() {
    let env = Env::new();
    let o = env.run(
        "version: 1\nid: c\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'true'}}\n",
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let gl = read_json(&env.out.join("gl-secret-detection-report.json"));
    assert_eq!(gl["vulnerabilities"], serde_json::json!([]));
    assert_eq!(gl["scan"]["status"], "success");
}

/// Under GitHub Actions nothing plangate prints acts as a workflow command
/// or drives a terminal: the runner reads the legacy `##[command]` anywhere
/// in a line (a step's output tail, its command in the start line, a file
/// name in `report --format markdown`), and file names may hold escape
/// sequences. The JSON report still reads back the names exactly.
#[test]
fn under_github_actions_no_printed_name_or_output_is_a_workflow_command() {
    let env = Env::new();
    let plan = env.write(
        "plan.yaml",
        "version: 1\nid: gh\npolicy: {risk_tolerance: high}\nsteps:\n  - id: s\n    tool: bash\n    continue_on_error: true\n    parameters: {command: \"printf x > \\\"c ##[error]name\\\"; printf y > \\\"$(printf 'e\\\\033[31mred\\\\033]0;t\\\\007')\\\"; echo '##[add-mask]failed'; echo 'x ##[stop-commands]zzz'; exit 1\"}\n",
    );
    let summary = env.ws.join("summary.md");
    let o = env
        .run_cmd(&plan)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("add-mask"), "the tail is shown: {err}");
    assert!(!err.contains("##["), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
    let report = env.out.join("report.json");
    let md = env
        .cmd()
        .env("GITHUB_ACTIONS", "true")
        .args(["report", "--format", "markdown"])
        .arg(&report)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&md.stdout);
    assert!(text.contains("name"), "{text}");
    assert!(
        !text.contains("##[") && !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    let json = env
        .cmd()
        .env("GITHUB_ACTIONS", "true")
        .args(["report", "--format", "json"])
        .arg(&report)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&json.stdout).contains("##["));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let paths: Vec<String> = v["diff"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["path"].as_str().map(str::to_owned))
        .collect();
    assert!(paths.contains(&"c ##[error]name".to_owned()), "{paths:?}");
    for f in [summary, env.out.join("diff-summary.md")] {
        let t = std::fs::read_to_string(&f).unwrap();
        assert!(
            !t.contains('\u{1b}') && !t.contains('\u{7}'),
            "{}: {t:?}",
            f.display()
        );
    }
}
