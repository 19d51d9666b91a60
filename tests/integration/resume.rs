//! `plangate run --resume REPORT.json`: carried-over steps are not run again;
//! a changed plan, workspace HEAD or a file that is not a report is refused.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::harness::{Env, code, git, read_json, spawn, stderr, wait_until};

/// `plangate run plan.yaml --workspace WS --out OUT ARGS...` (the plan file already written).
fn run_to(env: &Env, out: &Path, args: &[&str]) -> Output {
    let mut c = env.cmd();
    c.arg("run")
        .arg(env.ws.join("plan.yaml"))
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(out);
    c.args(args).timeout(std::time::Duration::from_secs(120));
    c.output().expect("run")
}

fn out2(env: &Env) -> PathBuf {
    env.out.with_file_name("out2")
}

fn step<'a>(r: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    r["steps"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["id"] == id))
        .unwrap_or_else(|| panic!("no step {id} in {r:#}"))
}

fn lines(p: &Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |t| t.lines().count())
}

const COUNTER_PLAN: &str = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: count, tool: bash, parameters: {command: 'echo x >> counter'}}\n  - {id: need, tool: bash, dependencies: [count], parameters: {command: 'cat needed.txt'}}\n  - {id: after, tool: bash, dependencies: [need], parameters: {command: 'echo done > done.txt'}}\n";

#[test]
fn resume_runs_only_what_did_not_succeed_and_never_replays_a_completed_step() {
    let env = Env::new();
    let first = env.run(COUNTER_PLAN, &[]);
    assert_eq!(code(&first), 1, "{}", stderr(&first));
    let r1 = env.report();
    assert_eq!(step(&r1, "count")["status"], "success");
    assert_eq!(step(&r1, "need")["status"], "failed");
    assert_eq!(step(&r1, "after")["status"], "not_run");
    assert_eq!(lines(&env.ws.join("counter")), 1);

    env.write("needed.txt", "here\n");
    let report1 = env.out.join("report.json");
    let o = run_to(&env, &out2(&env), &["--resume", report1.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("carried over from run"),
        "{}",
        stderr(&o)
    );
    assert_eq!(lines(&env.ws.join("counter")), 1, "step 1 ran again");
    assert!(env.ws.join("done.txt").is_file());
    let r2 = read_json(&out2(&env).join("report.json"));
    assert_eq!(r2["status"], "success");
    assert_ne!(r2["run_id"], r1["run_id"]);
    assert_eq!(r2["resumed_from"]["run_id"], r1["run_id"]);
    let count = step(&r2, "count");
    assert_eq!(count["status"], "success");
    assert_eq!(count["carried_over"]["run_id"], r1["run_id"]);
    assert_eq!(count["started_at"], step(&r1, "count")["started_at"]);
    for id in ["need", "after"] {
        assert_eq!(step(&r2, id)["status"], "success", "{id}");
        assert!(step(&r2, id).get("carried_over").is_none(), "{id}");
    }
    // Only the steps that ran are in this run's manifest.
    let manifest = read_json(&out2(&env).join("artifacts/manifest.json"));
    let ran: Vec<_> = manifest["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["step_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ran, ["need", "after"]);

    // Resuming the resumed run runs nothing; the origin stays the first run.
    let out3 = env.out.with_file_name("out3");
    let report2 = out2(&env).join("report.json");
    let o = run_to(&env, &out3, &["--resume", report2.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&env.ws.join("counter")), 1);
    let r3 = read_json(&out3.join("report.json"));
    assert_eq!(step(&r3, "count")["carried_over"]["run_id"], r1["run_id"]);
    assert_eq!(step(&r3, "need")["carried_over"]["run_id"], r2["run_id"]);
    assert_eq!(r3["resumed_from"]["run_id"], r2["run_id"]);
}

#[test]
fn a_step_whose_rollback_ran_is_run_again() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: count, tool: bash, parameters: {command: 'echo x >> counter'}, rollback_command: 'echo r >> rolled'}\n  - {id: need, tool: bash, dependencies: [count], parameters: {command: 'cat needed.txt'}}\n";
    let first = env.run(plan, &[]);
    assert_eq!(code(&first), 1, "{}", stderr(&first));
    assert_eq!(lines(&env.ws.join("rolled")), 1);
    env.write("needed.txt", "here\n");
    let report1 = env.out.join("report.json");
    let o = run_to(&env, &out2(&env), &["--resume", report1.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r2 = read_json(&out2(&env).join("report.json"));
    assert!(step(&r2, "count").get("carried_over").is_none());
    assert_eq!(lines(&env.ws.join("counter")), 2);
}

#[test]
fn resume_refuses_a_changed_plan() {
    let env = Env::new();
    let first = env.run(COUNTER_PLAN, &[]);
    assert_eq!(code(&first), 1);
    env.write("needed.txt", "here\n");
    env.write(
        "plan.yaml",
        &COUNTER_PLAN.replace("done.txt", "finished.txt"),
    );
    let report1 = env.out.join("report.json");
    let o = run_to(&env, &out2(&env), &["--resume", report1.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the plan changed since run"),
        "{}",
        stderr(&o)
    );
    let r2 = read_json(&out2(&env).join("report.json"));
    assert_eq!(r2["status"], "invalid");
    assert!(
        r2["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("sha256")
    );
    assert_eq!(lines(&env.ws.join("counter")), 1);
    assert!(!env.ws.join("finished.txt").exists());
}

#[test]
fn resume_refuses_a_moved_git_head_and_accepts_the_same_one() {
    let env = Env::new();
    env.write("plan.yaml", COUNTER_PLAN);
    env.write(".gitignore", "counter\nneeded.txt\ndone.txt\n");
    git(&env.ws, &["init", "-q"]);
    git(&env.ws, &["add", "-A"]);
    git(&env.ws, &["commit", "-q", "-m", "one"]);
    let head = String::from_utf8(
        std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&env.ws)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let first = run_to(&env, &env.out, &[]);
    assert_eq!(code(&first), 1, "{}", stderr(&first));
    let r1 = env.report();
    assert_eq!(r1["workspace_head"], head.trim());
    env.write("needed.txt", "here\n");
    env.write("other.txt", "x\n");
    git(&env.ws, &["add", "other.txt"]);
    git(&env.ws, &["commit", "-q", "-m", "two"]);
    let report1 = env.out.join("report.json");
    let o = run_to(&env, &out2(&env), &["--resume", report1.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("git HEAD moved"), "{}", stderr(&o));
    assert_eq!(
        read_json(&out2(&env).join("report.json"))["status"],
        "invalid"
    );
    assert!(!env.ws.join("done.txt").exists());

    // Back at the recorded commit, the same report resumes.
    git(&env.ws, &["reset", "-q", "--hard", head.trim()]);
    let out3 = env.out.with_file_name("out3");
    let o = run_to(&env, &out3, &["--resume", report1.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&env.ws.join("counter")), 1);
    assert!(env.ws.join("done.txt").is_file());
}

#[test]
fn resume_of_a_sigkilled_run_carries_over_what_finished() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: quick, tool: bash, parameters: {command: 'echo x >> counter'}}\n  - {id: long, tool: bash, dependencies: [quick], parameters: {command: 'if [ -f go ]; then echo went; else echo $$ > long.pid; exec sleep 300; fi'}}\n";
    let mut child = spawn(&env, plan, &[]);
    let pidfile = env.ws.join("long.pid");
    assert!(wait_until(20, || std::fs::read_to_string(&pidfile)
        .is_ok_and(|s| s.ends_with('\n'))));
    assert!(wait_until(
        5,
        || read_json(&env.out.join("report.json"))["steps"][0]["status"] == "success"
    ));
    child.kill().unwrap();
    child.wait().unwrap();
    let step_pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(step_pid).unwrap(),
        rustix::process::Signal::KILL,
    );
    let r1 = env.report();
    assert_eq!(r1["in_progress"], true);

    env.write("go", "");
    let report1 = env.out.join("report.json");
    let o = run_to(&env, &out2(&env), &["--resume", report1.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r2 = read_json(&out2(&env).join("report.json"));
    assert_eq!(step(&r2, "quick")["carried_over"]["run_id"], r1["run_id"]);
    assert_eq!(step(&r2, "long")["status"], "success");
    assert_eq!(lines(&env.ws.join("counter")), 1);
}

#[test]
fn resume_with_a_file_that_is_not_a_report_is_a_usage_error() {
    let env = Env::new();
    env.write("plan.yaml", COUNTER_PLAN);
    let not_report = env.write("notes.json", "{\"hello\": 1}\n");
    let o = run_to(&env, &env.out, &["--resume", not_report.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a plangate report"),
        "{}",
        stderr(&o)
    );
    let r = env.report();
    assert_eq!(r["status"], "invalid");
    assert!(!env.ws.join("counter").exists());

    let missing = env.ws.join("missing.json");
    let o = run_to(&env, &env.out, &["--resume", missing.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot read the report"),
        "{}",
        stderr(&o)
    );
    assert!(!env.ws.join("counter").exists());
}

/// An agent's stored answer is parsed again before a resumed run uses it:
/// a `parsed.json` edited since (a key twice, a key an envelope has not)
/// refuses the resume; an edited report cannot change what the agent's
/// outputs are (they come from its file).
#[test]
fn resume_parses_a_carried_agents_answer_again_and_takes_its_outputs_from_it() {
    let env = Env::new();
    git(&env.ws, &["init", "-q"]);
    let answer = r#"{"status": "OK", "summary": "real", "artifacts": [], "next_actions": []}"#;
    let rec = serde_json::json!({"step": "ag", "attempt": 1, "answer": answer});
    env.write("answers.jsonl", &format!("{rec}\n"));
    env.write(
        "plan.yaml",
        "version: 1\nid: r\npolicy: {risk_tolerance: high}\nagents:\n  rec:\n    provider: replay\n    file: answers.jsonl\nsteps:\n  - {id: ag, tool: agent, parameters: {agent: rec, prompt: p, output: envelope, write_artifacts: false}}\n  - {id: fail, tool: bash, parameters: {command: 'test -f go'}}\n  - {id: use, tool: bash, dependencies: [ag, fail], parameters: {command: 'printf %s \"$PLANGATE_OUTPUT_AG_SUMMARY\"'}}\n",
    );
    let o = run_to(&env, &env.out, &["--no-fail-fast"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let report = env.out.join("report.json");
    let parsed = env.out.join("artifacts/ag/parsed.json");
    assert!(parsed.is_file());
    // A forged report: the agent's summary output changed.
    let mut r = read_json(&report);
    for s in r["steps"].as_array_mut().unwrap() {
        if s["id"] == "ag" {
            s["outputs"]["summary"] = serde_json::json!("forged");
        }
    }
    std::fs::write(&report, serde_json::to_string_pretty(&r).unwrap()).unwrap();
    env.write("go", "");
    let o = run_to(&env, &out2(&env), &["--resume", report.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let used = std::fs::read_to_string(out2(&env).join("artifacts/use/stdout.txt")).unwrap();
    assert_eq!(used, "real", "the outputs come from the stored answer");
    // A forged stored answer: refused, nothing runs.
    std::fs::write(
        &parsed,
        r#"{"status": "OK", "summary": "forged", "extra": 1, "summary": "dup"}"#,
    )
    .unwrap();
    std::fs::remove_file(env.ws.join("go")).unwrap();
    let out3 = env.out.with_file_name("out3");
    let o = run_to(&env, &out3, &["--resume", report.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("step `ag`: its stored answer"),
        "{}",
        stderr(&o)
    );
}
