//! `plangate run`: exit codes, statuses, report and artifacts.

use crate::harness::{Env, bash_plan, code, stderr};

#[test]
fn success_writes_report_artifacts_manifest_and_audit() {
    let env = Env::new();
    let o = env.run(&bash_plan(&[("hello", "echo hello")]), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = env.report();
    assert_eq!(r["status"], "success");
    assert_eq!(r["exit_code"], 0);
    assert_eq!(r["in_progress"], false);
    let s = env.step("hello");
    assert_eq!(s["status"], "success");
    assert_eq!(s["exit_code"], 0);
    let out = std::fs::read_to_string(env.out.join("artifacts/hello/stdout.txt")).unwrap();
    assert_eq!(out, "hello\n");
    let manifest = crate::harness::read_json(&env.out.join("artifacts/manifest.json"));
    let e = &manifest["entries"][0];
    for key in [
        "run_id",
        "tool",
        "sequence",
        "started_at",
        "finished_at",
        "input_hash",
        "output_size",
        "duration_ms",
        "status",
        "error",
    ] {
        assert!(e.get(key).is_some(), "manifest entry lacks {key}: {e}");
    }
    let audit = std::fs::read_to_string(env.out.join("audit.jsonl")).unwrap();
    for line in audit.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
    assert!(audit.contains("\"step_finished\""));
}

#[test]
fn failing_step_exits_1_and_dependents_are_not_run() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'exit 3'}}\n  - {id: b, tool: bash, dependencies: [a], parameters: {command: 'true'}}\n";
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 1);
    assert_eq!(env.report()["status"], "failed");
    assert_eq!(env.step("a")["exit_code"], 3);
    assert_eq!(env.step("b")["status"], "not_run");
}
