//! Faults around a run: a full disk (simulated with RLIMIT_FSIZE), a
//! workspace that vanishes mid-run, a rollback that hangs past its timeout.
//! Each ends with a clear outcome, no hang and no panic.

use std::process::Command;

use crate::harness::{Env, read_json};

/// Run plangate under `ulimit -f BLOCKS` (1 KiB blocks), SIGXFSZ ignored so
/// that writes fail with EFBIG as they would on a full disk.
fn run_with_file_limit(env: &Env, plan: &str, blocks: u32) -> (i32, String) {
    let plan_path = env.write("plan.yaml", plan);
    let bin = assert_cmd::cargo::cargo_bin("plangate");
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" run \"$1\" --workspace \"$2\" --out \"$3\""
        ))
        .arg(&bin)
        .arg(&plan_path)
        .arg(&env.ws)
        .arg(&env.out)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const BIG_OUTPUT: &str = "version: 1\nid: t\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'head -c 3000000 /dev/zero'}}\n  - {id: b, tool: bash, dependencies: [a], parameters: {command: 'echo ok'}}\n";

#[test]
fn output_that_cannot_be_saved_fails_the_step_with_the_reason() {
    let env = Env::new();
    let (code, stderr) = run_with_file_limit(&env, BIG_OUTPUT, 1000);
    assert_eq!(code, 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let r = read_json(&env.out.join("report.json"));
    assert_eq!(r["status"], "failed");
    assert_eq!(r["in_progress"], false);
    let err = r["steps"][0]["error"].as_str().unwrap();
    assert!(err.contains("could not be saved (file too large)"), "{err}");
    assert_eq!(r["steps"][1]["status"], "not_run");
}

#[test]
fn a_report_that_cannot_be_written_is_said_and_the_last_one_stays_valid() {
    let env = Env::new();
    let (code, stderr) = run_with_file_limit(&env, BIG_OUTPUT, 3); // the first report fits (with sandbox.properties), a later one not
    assert_ne!(code, 0);
    assert!(stderr.contains("failed to write the report"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The last report that could be written is whole JSON and says it did not finish.
    let r = read_json(&env.out.join("report.json"));
    assert_eq!(r["in_progress"], true);
    assert_eq!(r["status"], "interrupted");
}

#[test]
fn a_workspace_that_vanishes_mid_run_fails_the_next_step_clearly() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: wipe, tool: bash, parameters: {sandbox: false, command: 'rm -rf \"$PWD\"'}}\n  - {id: after, tool: bash, dependencies: [wipe], parameters: {sandbox: false, command: 'echo hi'}}\n";
    let plan_path = env.ws.parent().unwrap().join("vanish.yaml");
    std::fs::write(&plan_path, plan).unwrap();
    let o = env
        .cmd()
        .current_dir(env.ws.parent().unwrap())
        .arg("run")
        .arg(&plan_path)
        .args(["--workspace", env.ws.to_str().unwrap()])
        .args(["--out", env.out.to_str().unwrap()])
        // Unsandboxed: a bind-mounted workspace cannot itself be removed.
        .args(["--sandbox-backend", "none"])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!env.ws.exists());
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let r = read_json(&env.out.join("report.json"));
    assert_eq!(r["steps"][0]["status"], "success");
    assert_eq!(r["steps"][1]["status"], "failed");
    assert!(
        r["steps"][1]["error"]
            .as_str()
            .unwrap_or("")
            .contains("is no longer a directory"),
        "{:#}",
        r["steps"][1]
    );
}

#[test]
fn a_rollback_that_hangs_is_stopped_at_its_timeout() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: medium}\nsteps:\n  - {id: a, tool: bash, timeout: 1, parameters: {command: 'touch made'}, rollback_command: 'sleep 60'}\n  - {id: b, tool: bash, dependencies: [a], parameters: {command: 'exit 2'}}\n";
    let started = std::time::Instant::now();
    let o = env.run(plan, &[]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the hanging rollback was not stopped"
    );
    assert_eq!(o.status.code(), Some(1));
    let a = env.step("a");
    assert_eq!(a["rollback"]["status"], "timed_out", "{a:#}");
    assert_eq!(env.report()["in_progress"], false);
}
