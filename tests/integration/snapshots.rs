//! Snapshots of every output format plangate writes, from one run that
//! touches each feature (a file change, a failing step allowed to fail, a
//! leaked secret, a skipped step). Times, ids, durations and temp paths are
//! masked first, so a snapshot changes only when an output's content or shape
//! does. Review changes with `INSTA_UPDATE=always cargo test` + `git diff`.

use std::path::Path;

use regex::Regex;

use crate::harness::{Env, code, stderr};

const AWS_ID: &str = "AKIAZ7Q4NX2LMRBT5KPW";

const PLAN: &str = r#"version: 1
id: snap
objective: Every output format, once
policy: {risk_tolerance: medium, on_approval_required: skip, max_parallel: 1}
steps:
  - id: build
    tool: bash
    description: Writes a file
    parameters: {command: "mkdir -p gen && printf 'a\nb\n' > gen/result.txt && printf 'x\n' >> notes.md"}
  - id: flaky
    tool: bash
    continue_on_error: true
    dependencies: [build]
    parameters: {command: "echo 'oops <&> ::error::injected' >&2; exit 2"}
  - id: leak
    tool: bash
    dependencies: [flaky]
    parameters: {command: "printf 'token=AKIA%s\n' Z7Q4NX2LMRBT5KPW"}
  - id: deploy
    tool: bash
    risk_level: dangerous
    dependencies: [leak]
    parameters: {command: "echo deploy"}
"#;

/// Mask what changes from run to run.
fn mask(text: &str, env: &Env) -> String {
    let mut s = text.to_owned();
    for (p, name) in [(&env.out, "[out]"), (&env.ws, "[ws]")] {
        s = s.replace(&*p.to_string_lossy(), name);
    }
    if let Some(root) = env.ws.parent() {
        s = s.replace(&*root.to_string_lossy(), "[tmp]");
    }
    let rules: [(&str, &str); 15] = [
        // The tests' operator policy file lives in a temporary folder.
        (r#""cap_file":( ?)"[^"]*""#, "\"cap_file\":$1\"[policy]\""),
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "[uuid]",
        ),
        (
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?",
            "[time]",
        ),
        (
            r#""(duration_ms|scan_time|elapsed_ms|pid)": ?[0-9.]+"#,
            "\"$1\": [n]",
        ),
        (r#"time="[0-9.]+""#, "time=\"[n]\""),
        (r"\b\d+(\.\d+)?(ms|s)\b", "[dur]"),
        // Gantt bars: start and end in ms since the run started.
        (r"(:(?:crit, )?n\d+), \d+, \d+\n", "$1, [t], [t]\n"),
        (r"\b\d+(\.\d+)? s\b", "[dur]"),
        (
            r#""plangate_version": "[^"]+""#,
            "\"plangate_version\": \"[v]\"",
        ),
        // (the version carries the commit as build metadata: `0.1.0+1a2b3c4d5e6f`)
        (
            r#""(version|semanticVersion)": "\d+\.\d+\.\d+(\+[0-9a-f]+)?""#,
            "\"$1\": \"[v]\"",
        ),
        (r"plangate \d+\.\d+\.\d+(\+[0-9a-f]+)?", "plangate [v]"),
        // Which sandbox backend works depends on the machine.
        (
            r#""(available|enforcement)": "(bwrap|landlock\+seccomp)""#,
            "\"$1\": \"[backend]\"",
        ),
        (
            r"\[sandbox (bwrap|landlock\+seccomp):",
            "[sandbox [backend]:",
        ),
        (
            r#""reason": "[^"]*(bwrap ran a probe|enforced Landlock)[^"]*""#,
            "\"reason\": \"[probe]\"",
        ),
        // What the self-test finds enforced depends on the backend and the kernel.
        (
            r#""properties": \{\s*"descriptors"[^}]*\}"#,
            "\"properties\": \"[properties]\"",
        ),
    ];
    for (re, to) in rules {
        s = Regex::new(re).unwrap().replace_all(&s, to).into_owned();
    }
    s
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn render(env: &Env, format: &str) -> String {
    let o = env
        .cmd()
        .args(["report", "--format", format])
        .arg(env.out.join("report.json"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn every_output_format_of_one_run() {
    let env = Env::new();
    env.write("notes.md", "first\n");
    let junit = env.out.with_file_name("junit.xml");
    // A fixed environment: the report lists the variables each step received.
    let plan = env.write("plan.yaml", PLAN);
    let o = env
        .bare_cmd()
        .arg("run")
        .arg(&plan)
        .arg("--out")
        .arg(&env.out)
        .args(["--junit", junit.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let outputs = [
        ("stderr", String::from_utf8_lossy(&o.stderr).into_owned()),
        ("stdout", String::from_utf8_lossy(&o.stdout).into_owned()),
        ("report_json", read(&env.out.join("report.json"))),
        ("diff_summary_md", read(&env.out.join("diff-summary.md"))),
        (
            "manifest_json",
            read(&env.out.join("artifacts/manifest.json")),
        ),
        ("audit_jsonl", read(&env.out.join("audit.jsonl"))),
        ("junit_flag_xml", read(&junit)),
        (
            "gl_secret_detection_json",
            read(&env.out.join("gl-secret-detection-report.json")),
        ),
        ("render_markdown", render(&env, "markdown")),
        ("render_junit", render(&env, "junit")),
        ("render_sarif", render(&env, "sarif")),
        ("render_json", render(&env, "json")),
        ("render_gitlab", render(&env, "gitlab-secret-detection")),
    ];
    for (name, text) in outputs {
        assert!(!text.contains(AWS_ID), "{name} holds the secret");
        insta::assert_snapshot!(name, mask(&text, &env));
    }
}

#[test]
fn validate_and_scan_formats() {
    let env = Env::new();
    let plan = env.write("plan.yaml", PLAN);
    for format in ["text", "json"] {
        let o = env
            .cmd()
            .args(["validate", "--format", format])
            .arg(&plan)
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        insta::assert_snapshot!(
            format!("validate_{format}"),
            mask(&String::from_utf8_lossy(&o.stdout), &env)
        );
    }
    let bad = env.write(
        "bad.yaml",
        "version: 1\nid: bad\nsteps:\n  - {id: a, tool: bsh, parameters: {command: ls}}\n  - {id: a, tool: bash, dependencies: [zz], parameters: {command: ls}}\n",
    );
    for format in ["text", "json"] {
        let o = env
            .cmd()
            .args(["validate", "--format", format])
            .arg(&bad)
            .output()
            .unwrap();
        assert_eq!(code(&o), 2);
        let both = format!(
            "--- stdout\n{}--- stderr\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        insta::assert_snapshot!(format!("validate_invalid_{format}"), mask(&both, &env));
    }
    env.write(
        "conf/app.env",
        &format!("A=1\nAWS_ACCESS_KEY_ID={AWS_ID}\n"),
    );
    for format in ["text", "json", "sarif", "gitlab-secret-detection"] {
        let o = env
            .cmd()
            .args(["scan", "--format", format, "conf"])
            .output()
            .unwrap();
        assert_eq!(code(&o), 4, "{}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(!text.contains(AWS_ID));
        insta::assert_snapshot!(format!("scan_{format}"), mask(&text, &env));
    }
}
