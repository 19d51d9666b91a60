//! Outputs that independent validators this machine may lack accept: JUnit
//! against the common JUnit XSD (`xmllint --schema`), SARIF by the SARIF
//! Multitool's SARIF and GitHub rule sets (on top of the 2.1.0 schema that
//! tests/integration/formats.rs checks everywhere, with the helpers used here).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::formats_shared::{fixtures, hostile_run, ran, report_as};
use crate::harness::{Env, read_json};

fn xmllint(file: &Path) {
    let o = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(fixtures().join("junit-10.xsd"))
        .arg(file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{} is not valid JUnit: {}\n{}",
        file.display(),
        String::from_utf8_lossy(&o.stderr),
        std::fs::read_to_string(file).unwrap_or_default()
    );
}

pub fn junit_is_valid_against_the_common_junit_xsd() {
    let (env, _repo, o) = hostile_run();
    ran(&o);
    let xml = std::fs::read_to_string(env.out.join("junit.xml")).unwrap();
    assert!(xml.contains("errors=\"0\""), "{xml}");
    xmllint(&env.out.join("junit.xml"));
    let rendered = env.out.join("rendered.xml");
    std::fs::write(&rendered, report_as(&env, "junit")).unwrap();
    xmllint(&rendered);
    // An invalid plan's JUnit too.
    let bad = Env::new();
    let junit = bad.out.join("junit.xml");
    std::fs::create_dir_all(&bad.out).unwrap();
    let o = bad.run(
        "version: 1\nsteps: [{id: a, tool: nope}]\n",
        &["--junit", junit.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2));
    xmllint(&junit);
}

/// The SARIF Multitool's SARIF and GitHub rule sets find nothing in `sarif`
/// (`PLANGATE_SARIF_MULTITOOL` names its native binary: the npm wrapper
/// script mangles `;` in arguments).
fn multitool(sarif: &str, what: &str) {
    // The multitool skips targets under hidden folders (tempfile's `.tmpXXXX`).
    let dir = tempfile::Builder::new()
        .prefix("plangate-sarif")
        .tempdir()
        .unwrap();
    let target = dir.path().join("check.sarif");
    std::fs::write(&target, sarif).unwrap();
    let log = dir.path().join("validation.sarif");
    let o = Command::new(crate::facility::multitool())
        .args([
            "validate",
            "--rule-kind",
            "Sarif;Gh",
            "--level",
            "Error;Warning",
            "--log",
            "ForceOverwrite",
            "-o",
        ])
        .arg(&log)
        .arg(&target)
        .output()
        .unwrap();
    assert!(
        log.exists(),
        "{what}: sarif-multitool wrote nothing: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let v = read_json(&log);
    // The log is the multitool's own SARIF (one run, its tool named); no
    // `results` is no finding.
    assert!(
        v["runs"][0]["tool"]["driver"]["name"].is_string(),
        "{what}: not a validation log: {v:#}\n{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let found: Vec<String> = v["runs"][0]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| format!("{} {}: {}", r["ruleId"], r["level"], r["message"]["text"]))
        .collect();
    assert!(
        found.is_empty(),
        "{what}: SARIF Multitool: {found:#?}\n{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

pub fn sarif_passes_the_sarif_multitools_sarif_and_github_rules() {
    let (env, _repo, o) = hostile_run();
    ran(&o);
    let report = report_as(&env, "sarif");
    let v: Value = serde_json::from_str(&report).unwrap();
    assert!(
        !v["runs"][0]["results"].as_array().unwrap().is_empty(),
        "the run's SARIF has findings to check: {v:#}"
    );
    multitool(&report, "plangate report --format sarif");
    // `plangate scan` of the workspace (hostile names, a leaked key).
    let o = env
        .cmd()
        .args(["scan", ".", "--format", "sarif"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    multitool(
        &String::from_utf8(o.stdout).unwrap(),
        "plangate scan --format sarif",
    );
}
