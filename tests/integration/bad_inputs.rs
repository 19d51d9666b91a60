//! The bad-input table: hostile or broken plans, policies, flags, agent
//! answers, archives, HTTP replies and report files, each with the exit code
//! and the message plangate must answer with. One data file,
//! `tests/fixtures/bad_inputs/cases.yaml`; adding a case adds no code.
//!
//! Every case also checks what holds for all of them: no panic, no hang (a
//! 60 s limit), and — for `run` — a valid report.json left behind.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde::Deserialize;

use crate::harness::{Env, code, mock_server};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    id: String,
    kind: String,
    /// Files written into the workspace: text, or `{base64: ...}`.
    #[serde(default)]
    files: BTreeMap<String, FileContent>,
    /// A plan written to `plan.yaml` (then run unless `argv` is given).
    #[serde(default)]
    plan: Option<String>,
    /// Extra arguments after `run plan.yaml --workspace WS --out OUT`
    /// (`{loopback_policy}`: the tests' operator policy naming 127.0.0.1).
    #[serde(default)]
    args: Vec<String>,
    /// The whole command line instead of a run (`{ws}`, `{out}`, `{server}` replaced).
    #[serde(default)]
    argv: Option<Vec<String>>,
    /// Scripted replies of a local HTTP server (`{server}` is its URL).
    #[serde(default)]
    server: Vec<(u16, String)>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    exit: i32,
    /// Substrings that must appear in stdout, stderr or report.json.
    #[serde(default)]
    expect: Vec<String>,
    /// The report's status, when a report is expected.
    #[serde(default)]
    status: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum FileContent {
    Text(String),
    Binary { base64: String },
}

fn load() -> Vec<Case> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad_inputs/cases.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn run_case(case: &Case) -> Result<(), String> {
    let env = Env::new();
    for (name, content) in &case.files {
        let bytes = match content {
            FileContent::Text(t) => t.clone().into_bytes(),
            FileContent::Binary { base64 } => base64::engine::general_purpose::STANDARD
                .decode(base64.trim())
                .map_err(|e| format!("bad base64 in {name}: {e}"))?,
        };
        let p = env.ws.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, bytes).unwrap();
    }
    let server = (!case.server.is_empty()).then(|| mock_server(case.server.clone()));
    // The tests' operator policy naming the local server (an address that
    // is not public is reached only where the operator names it).
    let loopback_policy = env.tmp().join("operator-policy-loopback.yaml");
    std::fs::write(
        &loopback_policy,
        format!(
            "{}allowed_hosts: [127.0.0.1]\n",
            crate::harness::OPERATOR_POLICY_YAML
        ),
    )
    .unwrap();
    let fill = |s: &str| {
        let mut s = s
            .replace("{ws}", env.ws.to_str().unwrap())
            .replace("{out}", env.out.to_str().unwrap())
            .replace("{loopback_policy}", loopback_policy.to_str().unwrap());
        if let Some(srv) = &server {
            s = s.replace("{server}", &srv.url);
        }
        s
    };
    if let Some(plan) = &case.plan {
        std::fs::write(env.ws.join("plan.yaml"), fill(plan)).unwrap();
    }
    let mut cmd = env.cmd();
    let is_run = case.argv.is_none();
    match &case.argv {
        Some(argv) => {
            cmd.args(argv.iter().map(|a| fill(a)));
        }
        None => {
            cmd.arg("run")
                .arg("plan.yaml")
                .arg("--workspace")
                .arg(&env.ws)
                .arg("--out")
                .arg(&env.out)
                .args(case.args.iter().map(|a| fill(a)));
        }
    }
    for (k, v) in &case.env {
        cmd.env(k, fill(v));
    }
    let o = cmd
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .map_err(|e| e.to_string())?;
    let report_text = std::fs::read_to_string(env.out.join("report.json")).unwrap_or_default();
    let all = format!(
        "{}\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
        report_text
    );
    let mut problems = Vec::new();
    if code(&o) != case.exit {
        problems.push(format!("exit {} (expected {})", code(&o), case.exit));
    }
    if all.contains("panicked at") || all.contains("RUST_BACKTRACE") {
        problems.push("a panic".to_owned());
    }
    for e in &case.expect {
        if !all.contains(e.as_str()) {
            problems.push(format!("missing `{e}`"));
        }
    }
    if is_run && env.out.exists() {
        match serde_json::from_str::<serde_json::Value>(&report_text) {
            Ok(r) => {
                if r["exit_code"] != case.exit {
                    problems.push(format!(
                        "report exit_code {} (expected {})",
                        r["exit_code"], case.exit
                    ));
                }
                if let Some(s) = &case.status
                    && r["status"] != s.as_str()
                {
                    problems.push(format!("report status {} (expected {s})", r["status"]));
                }
            }
            Err(e) => problems.push(format!("report.json is not valid JSON: {e}")),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        let cut: String = all.chars().take(1500).collect();
        Err(format!(
            "{}: {}\n---- output ----\n{cut}",
            problems.join("; "),
            ""
        ))
    }
}

#[test]
fn every_bad_input_gets_its_exit_code_and_message() {
    let cases = load();
    assert!(cases.len() >= 100, "the table has {} cases", cases.len());
    let mut ids = std::collections::HashSet::new();
    for c in &cases {
        assert!(ids.insert(c.id.clone()), "duplicate case id {}", c.id);
    }
    let kinds: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.kind.as_str()).collect();
    for k in [
        "plan",
        "policy",
        "flags",
        "agent_answer",
        "archive",
        "http_reply",
    ] {
        assert!(kinds.contains(k), "no `{k}` case");
    }
    let only = std::env::var("BAD_INPUT").ok();
    let failures: Vec<String> = cases
        .iter()
        .filter(|c| only.as_deref().is_none_or(|o| c.id == o))
        .filter_map(|c| {
            run_case(c)
                .err()
                .map(|e| format!("[{}] {}: {e}", c.kind, c.id))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// A flag's `PLANGATE_*` variable with a value the flag would refuse is
/// refused the same way (exit 2, nothing run), names the variable, the value
/// and the accepted values, and `run` leaves its `invalid` report where
/// `--out` (or `PLANGATE_OUT`) says; the flag itself too, and a flag
/// plangate does not know.
#[test]
fn an_invalid_value_of_a_flag_or_its_variable_is_refused_with_a_report() {
    let env = Env::new();
    let plan = env.write(
        "plan.yaml",
        &crate::harness::bash_plan(&[("a", "echo ran > ran.txt")]),
    );
    let cases = [
        (
            "PLANGATE_SANDBOX_BACKEND",
            "--sandbox-backend",
            "NONE",
            "[possible values: auto, bwrap, landlock, none]",
        ),
        (
            "PLANGATE_RISK_TOLERANCE",
            "--risk-tolerance",
            "HIGH",
            "[possible values: low, medium, high]",
        ),
        (
            "PLANGATE_MAX_PARALLEL",
            "--max-parallel",
            "0",
            "0 is not in 1..=256",
        ),
        (
            "PLANGATE_FAIL_ON_SECRETS",
            "--fail-on-secrets",
            "yes",
            "expected `true` or `false`",
        ),
    ];
    let check = |o: &std::process::Output, out: &Path, want: &[&str]| {
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(code(o), 2, "{err}");
        for w in want {
            assert!(err.contains(w), "`{w}` not in: {err}");
        }
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap_or_else(|e| panic!("no report in {}: {e}: {err}", out.display()));
        assert_eq!(report["status"], "invalid", "{report}");
        let errors = report["errors"].to_string();
        for w in want {
            assert!(
                errors.contains(&w.replace('`', "\\u0060")) || errors.contains(w),
                "`{w}` not in the report's errors: {errors}"
            );
        }
        assert!(!env.ws.join("ran.txt").exists(), "a step ran");
    };
    for (i, (var, flag, bad, accepted)) in cases.into_iter().enumerate() {
        // The variable; the report goes where PLANGATE_OUT says.
        let out = env.out.with_extension(format!("var{i}"));
        let o = env
            .cmd()
            .env(var, bad)
            .env("PLANGATE_OUT", &out)
            .arg("run")
            .arg(&plan)
            .output()
            .unwrap();
        check(
            &o,
            &out,
            &[&format!("`{var}`"), &format!("'{bad}'"), flag, accepted],
        );
        // The flag.
        let out = env.out.with_extension(format!("flag{i}"));
        let o = env
            .cmd()
            .arg("run")
            .arg(&plan)
            .arg("--out")
            .arg(&out)
            .arg(flag)
            .arg(bad)
            .output()
            .unwrap();
        check(&o, &out, &[&format!("'{bad}'"), flag, accepted]);
        // validate (which takes the first two) writes no report: the
        // message says the same.
        if i >= 2 {
            continue;
        }
        let o = env
            .cmd()
            .env(var, bad)
            .arg("validate")
            .arg(&plan)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(code(&o), 2, "{err}");
        assert!(
            err.contains(&format!("`{var}`")) && err.contains(accepted),
            "{err}"
        );
    }
    // A flag plangate does not know.
    let out = env.out.with_extension("unknown");
    let o = env
        .cmd()
        .arg("run")
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .arg("--no-such-flag")
        .output()
        .unwrap();
    check(&o, &out, &["'--no-such-flag'"]);
}
