//! Secrets: `plangate scan`, findings in runs (exit 4), and no secret value
//! in any byte plangate writes.

use std::path::Path;

use crate::harness::{Env, code, fake_agent, read_json, stderr};

/// Fake credentials in real formats (never real).
const AWS_ID: &str = "AKIAZ7Q4NX2LMRBT5KPW";
const AWS_ID_2: &str = "AKIAY3HD8QPW2NZXK7RT";

/// Every byte of every file below `dir`, plus the given streams, must be free of `secret`.
pub fn assert_nowhere(dir: &Path, streams: &[&[u8]], secret: &str) {
    for s in streams {
        assert!(
            !String::from_utf8_lossy(s).contains(secret),
            "a stream holds {secret}"
        );
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                assert!(
                    !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                    "{} holds {secret}",
                    p.display()
                );
                // Not even a prefix long enough to identify it.
                let prefix = &secret[..12];
                assert!(
                    !bytes.windows(prefix.len()).any(|w| w == prefix.as_bytes()),
                    "{} holds a prefix of {secret}",
                    p.display()
                );
            }
        }
    }
}

#[test]
fn a_secret_in_step_output_is_a_finding_exit_4_and_appears_nowhere() {
    let env = Env::new();
    let plan = format!(
        "version: 1\nid: s\npolicy: {{risk_tolerance: high}}\nsteps:\n  - id: leak\n    tool: bash\n    parameters: {{command: 'echo key={AWS_ID}; echo id {AWS_ID_2} >&2', show_cli: true}}\n  - id: after\n    tool: bash\n    dependencies: [leak]\n    parameters: {{command: 'touch after'}}\n"
    );
    let o = env.run(&plan, &[]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let r = env.report();
    assert_eq!(r["status"], "secrets_found");
    let findings = r["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 2, "{findings:?}");
    assert_eq!(findings[0]["location"], "artifacts/leak/stdout.txt");
    assert_eq!(findings[0]["line"], 1);
    assert_eq!(findings[0]["fingerprint"].as_str().map(str::len), Some(32));
    assert!(
        !env.ws.join("after").exists(),
        "fail_on_secrets stops the run"
    );
    for secret in [AWS_ID, AWS_ID_2] {
        assert_nowhere(&env.out, &[&o.stdout, &o.stderr], secret);
    }
}

#[test]
fn fail_on_secrets_false_reports_without_failing() {
    let env = Env::new();
    let plan = format!(
        "version: 1\nid: s\npolicy: {{risk_tolerance: high, fail_on_secrets: false}}\nsteps:\n  - id: leak\n    tool: bash\n    parameters: {{command: 'echo {AWS_ID}'}}\n"
    );
    let o = env.run(&plan, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.report()["findings"].as_array().unwrap().len(), 1);
    assert_nowhere(&env.out, &[&o.stdout, &o.stderr], AWS_ID);
}

#[test]
fn a_secret_in_files_an_agent_writes_is_found_and_kept_out_of_every_output() {
    let env = Env::new();
    let answer = format!(
        "{{\"status\": \"OK\", \"summary\": \"configured\", \"artifacts\": [{{\"path\": \"config/aws.ini\", \"content\": \"[default]\\naws_access_key_id = {AWS_ID}\\n\"}}], \"next_actions\": []}}"
    );
    let (_, agents) = fake_agent(&env, "coder", &[&answer]);
    let plan = format!(
        "version: 1\nid: a\npolicy: {{risk_tolerance: medium}}\nagents:\n{agents}steps:\n  - id: fix\n    tool: agent\n    parameters: {{agent: coder, prompt: configure}}\n"
    );
    let o = env.run(&plan, &[]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let r = env.report();
    let locations: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["location"].as_str())
        .collect();
    // Under fail_on_secrets the envelope's files are scanned first and not
    // written; the secret is found in the answer kept as evidence.
    assert!(
        locations.contains(&"artifacts/fix/attempt-1.answer.txt"),
        "{locations:?}"
    );
    assert!(!env.ws.join("config/aws.ini").exists());
    assert_nowhere(&env.out, &[&o.stdout, &o.stderr], AWS_ID);
}

#[test]
fn a_secret_in_a_plan_never_reaches_validate_output_or_the_report() {
    let env = Env::new();
    let plan = format!(
        "version: 1\nid: s\nsteps:\n  - id: push\n    tool: bash\n    parameters: {{command: 'AWS_ACCESS_KEY_ID={AWS_ID} aws s3 ls'}}\n"
    );
    let p = env.write("plan.yaml", &plan);
    let o = env
        .cmd()
        .args(["validate", p.to_str().unwrap()])
        .output()
        .unwrap();
    // The step needs an approval: validate exits 3, as the run below does.
    assert_eq!(code(&o), 3);
    assert!(!String::from_utf8_lossy(&o.stdout).contains(AWS_ID));
    let o = env.run(&plan, &[]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_nowhere(&env.out, &[&o.stdout, &o.stderr], AWS_ID);
}

#[test]
fn scan_finds_hidden_files_reports_json_and_sarif_and_exits_4() {
    let env = Env::new();
    env.write("proj/.env", &format!("AWS_ACCESS_KEY_ID={AWS_ID}\n"));
    env.write("proj/src/clean.py", "print('hello')\n");
    std::fs::write(
        env.ws.join("proj/blob.bin"),
        b"\x00\x01AKIAZ7Q4NX2LMRBT5KPW",
    )
    .unwrap();
    let dir = env.ws.join("proj");
    let o = env
        .cmd()
        .args(["scan", "--format", "json"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["secrets_found"], 1);
    assert_eq!(v["files_scanned"], 2, "binary files are skipped");
    let f = &v["findings"][0];
    assert_eq!(f["file"], ".env");
    assert_eq!(f["line"], 1);
    assert_eq!(f["type"], "aws-access-key-id");
    assert_eq!(f["redacted"], false);
    assert!(f["confidence"].as_f64().unwrap() > 0.0);
    assert!(!String::from_utf8_lossy(&o.stdout).contains(AWS_ID));
    let o = env
        .cmd()
        .args(["scan", "--format", "sarif"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(code(&o), 4);
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["version"], "2.1.0");
    let res = &s["runs"][0]["results"][0];
    assert_eq!(res["ruleId"], "aws-access-key-id");
    // Relative to the repository (here, with no git, the current directory:
    // the workspace), not to the scanned folder, so code scanning can place it.
    assert_eq!(
        res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "proj/.env"
    );
    assert_eq!(
        res["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"],
        "%SRCROOT%"
    );
    assert!(res["partialFingerprints"]["plangateSecret/v1"].is_string());
    assert!(s["runs"][0]["tool"]["driver"]["rules"][0]["id"].is_string());
    let o = env.cmd().arg("scan").arg(dir.join("src")).output().unwrap();
    assert_eq!(code(&o), 0, "clean tree exits 0");
    let o = env
        .cmd()
        .args(["scan", "/nonexistent/path"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
}

#[test]
fn scan_redact_rewrites_in_place_and_the_baseline_suppresses_by_fingerprint() {
    let env = Env::new();
    env.write("p/a.env", &format!("KEY={AWS_ID}\n"));
    let dir = env.ws.join("p");
    // Baseline first: suppressed findings stay suppressed after the line moves.
    let o = env
        .cmd()
        .args(["scan", "--format", "json"])
        .arg(&dir)
        .output()
        .unwrap();
    std::fs::write(env.ws.join("baseline.json"), &o.stdout).unwrap();
    env.write("p/a.env", &format!("# moved down\n\nKEY={AWS_ID}\n"));
    let o = env
        .cmd()
        .args(["scan", "--baseline", "baseline.json"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));
    // Redact.
    let o = env
        .cmd()
        .args(["scan", "--redact", "--format", "json"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(code(&o), 4);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["findings"][0]["redacted"], true);
    let text = std::fs::read_to_string(dir.join("a.env")).unwrap();
    assert!(
        !text.contains(AWS_ID) && text.contains("[REDACTED:"),
        "{text}"
    );
    let o = env.cmd().arg("scan").arg(&dir).output().unwrap();
    assert_eq!(code(&o), 0, "a redacted tree is clean");
    let _ = read_json;
}

#[test]
fn the_secrets_scan_tool_scans_workspace_files_inside_a_plan() {
    let env = Env::new();
    env.write("conf/app.env", &format!("AWS_ACCESS_KEY_ID={AWS_ID}\n"));
    env.write("conf/notes.md", "nothing here\n");
    let plan = "version: 1\nid: s\nsteps:\n  - id: scan\n    tool: secrets_scan\n    parameters: {path: conf, file_pattern: '*.env,*.md'}\n";
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let s = env.step("scan");
    assert_eq!(s["status"], "success");
    assert_eq!(s["risk"]["effective"], "safe");
    let result = read_json(&env.out.join("artifacts/scan/result.json"));
    assert_eq!(result["secrets_found"], 1);
    assert_eq!(result["files_scanned"], 2);
    assert_eq!(result["findings"][0]["file"], "conf/app.env");
    assert_eq!(
        env.report()["findings"][0]["location"],
        "workspace:conf/app.env"
    );
    // redact rewrites the workspace file and needs the moderate tolerance.
    let plan = "version: 1\nid: s\npolicy: {risk_tolerance: medium, fail_on_secrets: false}\nsteps:\n  - id: scan\n    tool: secrets_scan\n    parameters: {path: ., scan_type: redact}\n";
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        !std::fs::read_to_string(env.ws.join("conf/app.env"))
            .unwrap()
            .contains(AWS_ID)
    );
    assert_nowhere(&env.out, &[&o.stdout, &o.stderr], AWS_ID);
}

#[test]
fn inline_allow_comments_and_example_keys_are_not_findings() {
    let env = Env::new();
    env.write(
        "p/config.py",
        &format!(
            "KEY = \"{AWS_ID}\"  # plangate:allow\nOTHER = \"{AWS_ID_2}\"  # gitleaks:allow\nDOC = \"AKIAIOSFODNN7EXAMPLE\"\nTOKEN = os.environ[\"GITHUB_TOKEN\"]\n"
        ),
    );
    let o = env
        .cmd()
        .args(["scan", "--format", "json"])
        .arg(env.ws.join("p"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn the_diff_summary_lists_changes_and_a_secret_written_to_a_file_is_caught_there() {
    let env = Env::new();
    env.write("src/keep.txt", "one\ntwo\n");
    env.write("src/gone.txt", "bye\n");
    env.write(".gitignore", "*.log\n");
    let plan = format!(
        "version: 1\nid: d\npolicy: {{risk_tolerance: high}}\nsteps:\n  - id: edit\n    tool: bash\n    parameters: {{command: 'printf \"one\\\\nthree\\\\n\" > src/keep.txt; rm src/gone.txt; echo noise > run.log; printf \"[ci]\\\\nkey = {AWS_ID}\\\\n\" > ci.ini'}}\n"
    );
    let o = env.run(&plan, &[]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let r = env.report();
    let d = &r["diff"];
    assert_eq!(d["files_changed"], 4, "{d:#}");
    let files: Vec<(String, String)> = d["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["change"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        files,
        vec![
            ("ci.ini".to_owned(), "added".to_owned()),
            ("run.log".to_owned(), "added".to_owned()),
            ("src/gone.txt".to_owned(), "deleted".to_owned()),
            ("src/keep.txt".to_owned(), "modified".to_owned()),
        ]
    );
    let md = std::fs::read_to_string(env.out.join("diff-summary.md")).unwrap();
    assert!(md.contains("+three") && md.contains("-two"), "{md}");
    // An ignored file is listed too, and said to be ignored (issue 23).
    assert!(md.contains("| `run.log` | added (ignored) |"), "{md}");
    let locations: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["location"].as_str())
        .collect();
    assert_eq!(locations, vec!["diff-summary.md"]);
    assert_nowhere(&env.out, &[&o.stdout, &o.stderr], AWS_ID);
}

/// The proof: secrets planted in step stdout, stderr, an agent-free
/// file change (new file and an edit of a tracked one), an environment value a
/// step echoes, and a step's error text reach none of plangate's outputs: the
/// output folder, stdout/stderr (with GitHub's workflow-command echo on), the
/// step summary, `$GITHUB_OUTPUT`, `--junit`, the GitLab report and every
/// format `plangate report` renders.
#[test]
fn planted_secrets_reach_no_output_of_any_kind() {
    let env = Env::new();
    let gh_pat = "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";
    env.write("app/config.ini", "[db]\nhost = localhost\n");
    let summary = env.ws.join("summary.md");
    let output = env.ws.join("output.txt");
    let junit = env.ws.join("junit.xml");
    let plan = env.write(
        "plan.yaml",
        &format!(
            "version: 1\nid: planted\npolicy: {{risk_tolerance: high, fail_on_secrets: false, max_parallel: 1}}\nsteps:\n  - id: out\n    tool: bash\n    parameters: {{command: 'echo \"key={AWS_ID}\"; echo \"token {gh_pat}\" >&2', show_cli: true}}\n    continue_on_error: true\n  - id: files\n    tool: bash\n    dependencies: [out]\n    continue_on_error: true\n    parameters: {{command: 'printf \"aws_key = {AWS_ID_2}\\\\n\" >> app/config.ini; printf \"x {gh_pat} y\\\\n\" > new.txt; exit 3'}}\n  - id: env\n    tool: bash\n    dependencies: [files]\n    env: {{LEAKY: \"{AWS_ID}\"}}\n    expected_output: 'never matches'\n    parameters: {{command: 'echo \"$LEAKY\"'}}\n"
        ),
    );
    let o = env
        .run_cmd(&plan)
        .arg("--junit")
        .arg(&junit)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &output)
        .output()
        .unwrap();
    assert_eq!(
        code(&o),
        1,
        "the env step fails its expected_output: {}",
        stderr(&o)
    );
    let r = env.report();
    let mut found: Vec<String> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["rule"].as_str().unwrap(),
                f["location"].as_str().unwrap()
            )
        })
        .collect();
    found.sort();
    // Each secret once (by fingerprint), where it first appeared; the file
    // change holding a new one is caught in the diff summary.
    assert_eq!(
        found,
        [
            "aws-access-key-id artifacts/env/stdout.txt",
            "aws-access-key-id artifacts/out/stdout.txt",
            "aws-access-key-id diff-summary.md",
            "github-pat artifacts/out/stderr.txt",
        ]
    );
    let mut streams: Vec<Vec<u8>> = vec![o.stdout.clone(), o.stderr.clone()];
    for f in [&summary, &output, &junit] {
        streams.push(std::fs::read(f).unwrap());
    }
    for format in [
        "markdown",
        "junit",
        "sarif",
        "json",
        "gitlab-secret-detection",
    ] {
        let o = env
            .cmd()
            .args(["report", "--format", format])
            .arg(env.out.join("report.json"))
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        streams.push(o.stdout);
    }
    let streams: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
    for secret in [AWS_ID, AWS_ID_2, gh_pat] {
        assert_nowhere(&env.out, &streams, secret);
    }
    // The workspace itself is the user's: plangate reports, it does not rewrite.
    assert!(
        std::fs::read_to_string(env.ws.join("new.txt"))
            .unwrap()
            .contains(gh_pat)
    );
}
