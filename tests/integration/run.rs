//! `plangate run`: exit codes, statuses, report, artifacts, processes.

use std::time::{Duration, Instant};

use crate::harness::{
    Env, alive, bash_plan, code, read_json, spawn, stderr, unsandboxed_plan, wait_until,
};

#[test]
fn success_writes_report_artifacts_manifest_and_audit() {
    let env = Env::new();
    let o = env.run(&bash_plan(&[("hello", "echo hello")]), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = env.report();
    assert_eq!(r["status"], "success");
    assert_eq!(r["exit_code"], 0);
    assert_eq!(r["in_progress"], false);
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["plan"]["id"], "t");
    assert_eq!(r["plan"]["sha256"].as_str().map(str::len), Some(64));
    for key in [
        "run_id",
        "started_at",
        "finished_at",
        "duration_ms",
        "findings",
        "usage",
        "steps",
    ] {
        assert!(r.get(key).is_some(), "report lacks {key}");
    }
    let s = env.step("hello");
    assert_eq!(s["status"], "success");
    assert_eq!(s["exit_code"], 0);
    assert_eq!(s["attempts"], 1);
    assert_eq!(s["artifacts"][0], "artifacts/hello/stdout.txt");
    let out = std::fs::read_to_string(env.out.join("artifacts/hello/stdout.txt")).unwrap();
    assert_eq!(out, "hello\n");
    let manifest = read_json(&env.out.join("artifacts/manifest.json"));
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
    assert_eq!(e["output_size"], 6);
    let audit = std::fs::read_to_string(env.out.join("audit.jsonl")).unwrap();
    let events: Vec<String> = audit
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for ev in [
        "plan_loaded",
        "run_started",
        "decision",
        "step_started",
        "step_finished",
        "run_finished",
    ] {
        assert!(
            events.iter().any(|e| e == ev),
            "audit lacks {ev}: {events:?}"
        );
    }
    // No temp files left behind by the atomic writes.
    let leftovers: Vec<_> = std::fs::read_dir(&env.out)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn failing_step_exits_1_and_dependents_are_not_run() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'exit 3'}}\n  - {id: b, tool: bash, dependencies: [a], parameters: {command: 'true'}}\n  - {id: c, tool: bash, dependencies: [b], parameters: {command: 'true'}}\n";
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 1);
    assert_eq!(env.report()["status"], "failed");
    assert_eq!(env.step("a")["exit_code"], 3);
    assert_eq!(env.step("a")["status"], "failed");
    assert_eq!(env.step("b")["status"], "not_run");
    assert_eq!(env.step("c")["status"], "not_run");
    assert!(env.step_error("b").contains("`a`"));
}

#[test]
fn continue_on_error_lets_dependents_run_and_the_run_succeed() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: a, tool: bash, continue_on_error: true, parameters: {command: 'exit 1'}}\n  - {id: b, tool: bash, dependencies: [a], parameters: {command: 'true'}}\n";
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("a")["status"], "failed");
    assert_eq!(env.step("b")["status"], "success");
}

#[test]
fn expected_output_mismatch_fails_the_step() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: a, tool: bash, expected_output: '^ok$', parameters: {command: 'echo nope'}}\n  - {id: b, tool: bash, expected_output: 'wor+ld', parameters: {command: 'echo hello world'}}\n";
    let o = env.run(plan, &["--max-parallel", "2"]);
    assert_eq!(code(&o), 1);
    assert_eq!(env.step("a")["status"], "failed");
    assert!(env.step_error("a").contains("expected_output"));
    assert_eq!(env.step("b")["status"], "success");
}

// Host pids are compared: run without a sandbox (bwrap's pid namespace would hide them).
#[test]
fn timeout_kills_the_whole_process_group_including_grandchildren() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - id: slow\n    tool: bash\n    timeout: 1\n    parameters: {sandbox: false, command: 'sh -c \"sleep 300\" & echo $! > grandchild.pid; sleep 300'}\n";
    let t = Instant::now();
    let o = env.run(plan, &["--kill-grace", "1", "--sandbox-backend", "none"]);
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let s = env.step("slow");
    assert_eq!(s["status"], "timed_out");
    assert!(s["error"].as_str().unwrap().contains("timed out"));
    let pid: u32 = std::fs::read_to_string(env.ws.join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_until(5, || !alive(pid)),
        "grandchild {pid} survived the timeout"
    );
}

// Host pids are compared: run without a sandbox (bwrap's pid namespace would hide them).
#[test]
fn background_processes_do_not_outlive_their_step() {
    let env = Env::new();
    let plan = unsandboxed_plan(&[("bg", "sleep 300 & echo $! > bg.pid; echo started")]);
    let t = Instant::now();
    let o = env.run(&plan, &["--kill-grace", "1", "--sandbox-backend", "none"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(t.elapsed() < Duration::from_secs(20));
    let pid: u32 = std::fs::read_to_string(env.ws.join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_until(5, || !alive(pid)),
        "background process {pid} survived its step"
    );
}

#[test]
fn children_get_a_closed_stdin_and_plangate_variables() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - id: s\n    tool: bash\n    env: {GREETING: hi}\n    parameters:\n      command: 'cat; echo \"[$GREETING] $PLANGATE_STEP_ID ${PLANGATE_APPROVE:-none}\"; test -d \"$PLANGATE_STEP_ARTIFACTS\"'\n";
    let mut c = env.cmd();
    let p = env.write("plan.yaml", plan);
    c.arg("run")
        .arg(&p)
        .arg("--out")
        .arg(&env.out)
        .env("PLANGATE_APPROVE", "s")
        .write_stdin("must not be read\n");
    let o = c.timeout(Duration::from_secs(60)).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = std::fs::read_to_string(env.out.join("artifacts/s/stdout.txt")).unwrap();
    assert_eq!(
        out, "[hi] s none\n",
        "stdin must be closed and PLANGATE_APPROVE not inherited"
    );
}

#[test]
fn output_is_capped_and_flagged_truncated() {
    let env = Env::new();
    let o = env.run(
        &bash_plan(&[("big", "head -c 300000 /dev/zero; echo tail >&2")]),
        &["--max-output-bytes", "1000"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = env.step("big");
    assert_eq!(s["truncated"], true);
    assert_eq!(s["output_bytes"], 300005);
    let len = std::fs::metadata(env.out.join("artifacts/big/stdout.txt"))
        .unwrap()
        .len();
    assert_eq!(len, 1000);
}

/// The peak resident memory (`VmHWM`) of a run of `plan`, and its output.
fn peak_rss(env: &Env, plan: &str) -> (std::process::Output, u64) {
    let mut child = spawn(env, plan, &[]);
    let pid = child.id();
    let mut peak_kb: u64 = 0;
    loop {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            for line in status.lines() {
                if let Some(v) = line.strip_prefix("VmHWM:") {
                    let kb: u64 = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                    peak_kb = peak_kb.max(kb);
                }
            }
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    (child.wait_with_output().unwrap(), peak_kb)
}

/// A step printing 2 GB keeps memory flat (its run's peak stays within a
/// bound of a run that prints one line: what grows with the binary is not
/// what grows with the output) and disk flat (the 16 MiB cap).
#[test]
fn two_gigabytes_of_output_keep_memory_and_disk_flat() {
    let small = Env::new();
    let (out, baseline_kb) = peak_rss(&small, &bash_plan(&[("flood", "echo one line")]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env = Env::new();
    let (out, peak_kb) = peak_rss(
        &env,
        &bash_plan(&[("flood", "head -c 2000000000 /dev/zero")]),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = env.step("flood");
    assert_eq!(s["truncated"], true);
    assert_eq!(s["output_bytes"], 2_000_000_000u64);
    let kept = std::fs::metadata(env.out.join("artifacts/flood/stdout.txt"))
        .unwrap()
        .len();
    assert_eq!(kept, 16 * 1024 * 1024, "default cap is 16 MiB");
    assert!(
        baseline_kb > 0 && peak_kb > 0 && peak_kb < baseline_kb + 32 * 1024,
        "peak RSS {peak_kb} kB for 2 GB of output, {baseline_kb} kB for one line"
    );
}

// Host pids are compared: run without a sandbox (bwrap's pid namespace would hide them).
#[test]
fn sigterm_mid_run_leaves_an_interrupted_report_and_stops_children() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: long, tool: bash, parameters: {sandbox: false, command: 'echo $$ > long.pid; sleep 300'}}\n  - {id: after, tool: bash, dependencies: [long], parameters: {sandbox: false, command: 'true'}}\n";
    let child = spawn(
        &env,
        plan,
        &["--kill-grace", "1", "--sandbox-backend", "none"],
    );
    let pidfile = env.ws.join("long.pid");
    assert!(wait_until(20, || std::fs::read_to_string(&pidfile)
        .is_ok_and(|s| s.ends_with('\n'))));
    // The in-progress report is valid JSON and says the run has not finished.
    let r = read_json(&env.out.join("report.json"));
    assert_eq!(r["in_progress"], true);
    assert_eq!(r["status"], "interrupted");
    let step_pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let pg = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pg, rustix::process::Signal::TERM).unwrap();
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(15));
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = env.report();
    assert_eq!(r["status"], "interrupted");
    assert_eq!(r["exit_code"], 130);
    assert_eq!(r["in_progress"], false);
    assert_eq!(env.step("long")["status"], "failed");
    assert_eq!(env.step("after")["status"], "not_run");
    assert!(
        wait_until(5, || !alive(step_pid)),
        "step process survived SIGTERM of plangate"
    );
}

#[test]
fn sigint_is_handled_like_sigterm() {
    let env = Env::new();
    let child = spawn(
        &env,
        &bash_plan(&[("long", "touch started; sleep 300")]),
        &["--kill-grace", "1"],
    );
    assert!(wait_until(20, || env.ws.join("started").exists()));
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(env.report()["status"], "interrupted");
}

#[test]
fn rollback_runs_for_completed_steps_newest_first_when_the_run_fails() {
    let env = Env::new();
    let plan = r#"version: 1
id: t
policy: {risk_tolerance: high}
steps:
  - {id: one, tool: bash, parameters: {command: "echo one >> log"}, rollback_command: "echo undo-one >> log"}
  - {id: two, tool: bash, dependencies: [one], parameters: {command: "echo two >> log"}, rollback_command: "echo undo-two >> log"}
  - {id: boom, tool: bash, dependencies: [two], parameters: {command: "exit 1"}, rollback_command: "echo undo-boom >> log"}
"#;
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 1);
    let log = std::fs::read_to_string(env.ws.join("log")).unwrap();
    assert_eq!(log, "one\ntwo\nundo-two\nundo-one\n");
    assert_eq!(env.step("two")["rollback"]["status"], "success");
    assert!(env.step("boom").get("rollback").is_none());
}

#[test]
fn no_rollback_when_the_run_succeeds() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'true'}, rollback_command: 'touch rolled-back'}\n";
    assert_eq!(code(&env.run(plan, &[])), 0);
    assert!(!env.ws.join("rolled-back").exists());
}

#[test]
fn working_directory_is_used_and_confined() {
    let env = Env::new();
    std::fs::create_dir_all(env.ws.join("sub")).unwrap();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: a, tool: bash, parameters: {command: pwd, working_directory: sub}}\n";
    assert_eq!(code(&env.run(plan, &[])), 0);
    let out = std::fs::read_to_string(env.out.join("artifacts/a/stdout.txt")).unwrap();
    assert_eq!(out.trim(), env.ws.join("sub").display().to_string());
    // A symlink that leads outside is refused at run time.
    std::os::unix::fs::symlink("/", env.ws.join("escape")).unwrap();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'touch x', working_directory: escape}}\n";
    assert_eq!(code(&env.run(plan, &[])), 1);
    assert!(env.step_error("a").contains("outside the workspace"));
}

#[test]
fn max_parallel_runs_independent_steps_together() {
    let env = Env::new();
    let plan = bash_plan(&[("a", "sleep 1"), ("b", "sleep 1"), ("c", "sleep 1")]);
    assert_eq!(code(&env.run(&plan, &["--max-parallel", "3"])), 0);
    // Ran together: every step started before any other ended (the steps'
    // own times from the report, not the wall clock of a loaded machine).
    let span = |id: &str| {
        let s = env.step(id);
        let start = humantime::parse_rfc3339(s["started_at"].as_str().expect("started_at"))
            .expect("RFC 3339");
        let ms = s["duration_ms"].as_u64().expect("duration_ms");
        (start, start + Duration::from_millis(ms))
    };
    let spans: Vec<_> = ["a", "b", "c"].iter().map(|id| span(id)).collect();
    let last_start = spans.iter().map(|s| s.0).max().expect("three");
    let first_end = spans.iter().map(|s| s.1).min().expect("three");
    assert!(last_start < first_end, "{spans:?}");
}

#[test]
fn steps_selects_by_position_range_and_id() {
    let env = Env::new();
    let plan = bash_plan(&[
        ("a", "touch a"),
        ("b", "touch b"),
        ("c", "touch c"),
        ("d", "touch d"),
    ]);
    assert_eq!(code(&env.run(&plan, &["--steps", "2-3"])), 0);
    assert!(!env.ws.join("a").exists() && env.ws.join("b").exists() && env.ws.join("c").exists());
    assert_eq!(env.step("a")["status"], "skipped");
    assert_eq!(code(&env.run(&plan, &["--steps", "d"])), 0);
    assert!(env.ws.join("d").exists());
    let o = env.run(&plan, &["--steps", "zz"]);
    assert_eq!(code(&o), 2);
    assert_eq!(env.report()["status"], "invalid");
}

#[test]
fn dry_run_executes_nothing() {
    let env = Env::new();
    let o = env.run(&bash_plan(&[("a", "touch marker")]), &["--dry-run"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!env.ws.join("marker").exists());
    assert_eq!(env.report()["dry_run"], true);
    assert_eq!(env.step("a")["status"], "not_run");
    assert_eq!(env.step("a")["approval"]["decision"], "auto_approved");
}

#[test]
fn invalid_plan_exits_2_with_an_invalid_report() {
    let env = Env::new();
    let o = env.run("version: 1\nid: t\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'touch marker'}, bogus: 1}\n", &[]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("plan.yaml:4:"), "{}", stderr(&o));
    assert!(!env.ws.join("marker").exists());
    let r = env.report();
    assert_eq!(r["status"], "invalid");
    assert_eq!(r["exit_code"], 2);
    assert_eq!(r["errors"][0]["line"], 4);
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    let plan = env.write("p.yaml", &bash_plan(&[("a", "true")]));
    for args in [
        vec!["run"],
        vec!["run", plan.to_str().unwrap(), "--risk-tolerance", "extreme"],
        vec!["run", plan.to_str().unwrap(), "--max-parallel", "0"],
        vec!["run", plan.to_str().unwrap(), "--approve", "nosuchstep"],
        vec!["run", "missing.yaml"],
        vec![
            "run",
            plan.to_str().unwrap(),
            "--workspace",
            "/nonexistent/dir",
        ],
        vec!["frobnicate"],
        vec!["validate"],
    ] {
        let o = env.cmd().args(&args).output().unwrap();
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty());
    }
}

#[test]
fn github_actions_groups_and_no_colour_off_a_terminal() {
    let env = Env::new();
    let p = env.write("plan.yaml", &bash_plan(&[("a", "echo hi")]));
    let o = env
        .cmd()
        .args(["run", p.to_str().unwrap(), "--out"])
        .arg(&env.out)
        .env("GITHUB_ACTIONS", "true")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0);
    let err = stderr(&o);
    assert!(
        err.contains("::group::") && err.contains("::endgroup::"),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "colour escape codes off a terminal: {err:?}"
    );
}

#[test]
fn an_unwritable_out_dir_is_a_clear_error_and_runs_nothing() {
    let env = Env::new();
    std::fs::write(env.ws.join("file"), "x").unwrap();
    let p = env.write("plan.yaml", &bash_plan(&[("a", "touch marker")]));
    let o = env
        .cmd()
        .args(["run", p.to_str().unwrap(), "--out", "file/sub"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("output directory"));
    assert!(!env.ws.join("marker").exists());
}

// Host pids are compared: run without a sandbox (bwrap's pid namespace would hide them).
// A step with resource limits runs under a per-step supervisor, which
// outlives a SIGKILLed plangate: the live-run registry is what stops it.
#[test]
fn sigkill_mid_run_leaves_a_valid_report_that_says_it_did_not_finish() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: quick, tool: bash, parameters: {sandbox: false, command: 'true'}}\n  - {id: long, tool: bash, dependencies: [quick], parameters: {sandbox: false, command: 'echo $$ > long.pid; exec sleep 300', limits: {file_size_mb: 100}}}\n";
    let mut child = spawn(&env, plan, &["--sandbox-backend", "none"]);
    let pidfile = env.ws.join("long.pid");
    assert!(wait_until(20, || std::fs::read_to_string(&pidfile)
        .is_ok_and(|s| s.ends_with('\n'))));
    // The report is rewritten within 100 ms of an event.
    assert!(wait_until(
        5,
        || read_json(&env.out.join("report.json"))["steps"][0]["status"] == "success"
    ));
    child.kill().unwrap();
    child.wait().unwrap();
    let r = env.report();
    assert_eq!(r["in_progress"], true);
    assert_eq!(r["status"], "interrupted");
    assert_eq!(r["exit_code"], 130);
    assert_eq!(env.step("quick")["status"], "success");
    let step_pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // plangate could not stop it (SIGKILL): the step is still running...
    assert!(alive(step_pid), "the step outlived its plangate");
    // ...until the next run on this machine starts, and stops it first.
    let next = Env::sharing_tmp(&env);
    let o = next.run(
        "version: 1\nid: n\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'true'}}\n",
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        wait_until(5, || !alive(step_pid)),
        "the orphaned step was not stopped by the next run"
    );
    assert!(stderr(&o).contains("left running by run"), "{}", stderr(&o));
}

// A step run through a resident supervisor (no limits: unsandboxed here, the
// same lane serves Landlock steps) ends with its plangate, setsid daemons too.
#[test]
fn sigkill_of_plangate_stops_the_step_its_lane_serves() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: long, tool: bash, parameters: {sandbox: false, command: 'setsid sh -c \"echo \\$\\$ > daemon.pid; exec sleep 300\" & echo $$ > long.pid; exec sleep 300'}}\n";
    let mut child = spawn(&env, plan, &["--sandbox-backend", "none"]);
    let (pidfile, daemonfile) = (env.ws.join("long.pid"), env.ws.join("daemon.pid"));
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .ok()
            .filter(|s| s.ends_with('\n'))
            .and_then(|s| s.trim().parse::<u32>().ok())
    };
    assert!(wait_until(20, || read(&pidfile).is_some()
        && read(&daemonfile).is_some()));
    let (step_pid, daemon_pid) = (read(&pidfile).unwrap(), read(&daemonfile).unwrap());
    assert!(alive(step_pid) && alive(daemon_pid));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_until(5, || !alive(step_pid) && !alive(daemon_pid)),
        "the step outlived its plangate"
    );
}

// The report rewritten while a run goes on reuses the entries no event
// touched since (issue 23, cost of a step): every entry of a finished step in
// a mid-run report must be the very entry of the final report, and so must
// the manifest's, whatever each step did (output on either stream, a file
// changed, a failure allowed to continue).
#[test]
fn a_mid_run_report_holds_the_final_entries_of_the_steps_already_done() {
    let env = Env::new();
    let n = 24;
    let mut plan = String::from("version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n");
    for i in 0..n {
        let cmd = match i % 4 {
            0 => format!("echo out {i}"),
            1 => format!("echo err {i} >&2"),
            2 => format!("echo {i} > f{i}.txt"),
            _ => "exit 3".to_owned(),
        };
        let deps = if i == 0 {
            String::new()
        } else {
            format!("dependencies: [s{}], ", i - 1)
        };
        let keep = if i % 4 == 3 {
            "continue_on_error: true, "
        } else {
            ""
        };
        plan.push_str(&format!(
            "  - {{id: s{i}, tool: bash, {deps}{keep}parameters: {{sandbox: false, command: '{cmd}'}}}}\n"
        ));
    }
    plan.push_str(&format!(
        "  - {{id: wait, tool: bash, dependencies: [s{}], parameters: {{sandbox: false, command: 'echo $$ > wait.pid; while [ ! -e go ]; do sleep 0.05; done'}}}}\n",
        n - 1
    ));
    let child = spawn(&env, &plan, &["--sandbox-backend", "none"]);
    let report = env.out.join("report.json");
    let manifest = env.out.join("artifacts/manifest.json");
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    };
    assert!(
        wait_until(30, || {
            read(&report).is_some_and(|r| !r["steps"][n]["started_at"].is_null())
                && read(&manifest)
                    .is_some_and(|m| m["entries"].as_array().is_some_and(|e| e.len() == n))
        }),
        "the running step never showed in the report"
    );
    let (mid, mid_manifest) = (read(&report).unwrap(), read(&manifest).unwrap());
    std::fs::write(env.ws.join("go"), "").unwrap();
    let o = child.wait_with_output().unwrap();
    let (last, last_manifest) = (env.report(), read_json(&manifest));
    assert_eq!(last["in_progress"], false, "{}", stderr(&o));
    assert_eq!(mid["in_progress"], true);
    for i in 0..n {
        assert_eq!(mid["steps"][i], last["steps"][i], "step s{i}");
        assert_eq!(
            mid_manifest["entries"][i], last_manifest["entries"][i],
            "manifest entry of s{i}"
        );
    }
    assert_eq!(
        last["steps"][2]["changed_files"],
        serde_json::json!(["f2.txt"])
    );
    assert_eq!(last["steps"][3]["status"], "failed");
}

// Issue 23 item 9 (cost): the report is rewritten at most every 250 ms while
// steps stream. A run stopped by SIGTERM in the middle of a stream of fast
// steps must still leave a final report (and manifest) that is valid and
// holds every step that finished, as the audit log names them: the last
// events before the signal are not lost to the coalescing.
#[test]
fn sigterm_in_a_stream_of_fast_steps_leaves_a_complete_final_report() {
    let env = Env::new();
    let n = 400;
    let mut plan = String::from("version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n");
    for i in 0..n {
        let deps = if i == 0 {
            String::new()
        } else {
            format!("dependencies: [s{}], ", i - 1)
        };
        plan.push_str(&format!(
            "  - {{id: s{i}, tool: bash, {deps}parameters: {{sandbox: false, command: 'echo {i}'}}}}\n"
        ));
    }
    let child = spawn(&env, &plan, &["--sandbox-backend", "none"]);
    let audit = env.out.join("audit.jsonl");
    let finished = || {
        std::fs::read_to_string(&audit)
            .map(|t| t.matches(r#""event":"step_finished""#).count())
            .unwrap_or(0)
    };
    // Mid-stream: some steps done, most not.
    assert!(wait_until(60, || finished() >= 20), "no step finished");
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let r = env.report();
    assert_eq!(r["in_progress"], false);
    assert_eq!(r["status"], "interrupted");
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), n);
    // Every step_finished the audit log holds is a finished entry of the report.
    let lines = std::fs::read_to_string(&audit).unwrap();
    let done: Vec<String> = lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "step_finished")
        .map(|e| e["step"].as_str().unwrap().to_owned())
        .collect();
    assert!(done.len() < n, "the signal came after the last step");
    for id in &done {
        let s = &steps[id.trim_start_matches('s').parse::<usize>().unwrap()];
        assert_eq!(s["id"], id.as_str());
        assert!(!s["finished_at"].is_null(), "{id}: {s}");
        assert_ne!(s["status"], "not_run", "{id}");
    }
    let ran = steps.iter().filter(|s| !s["finished_at"].is_null()).count();
    assert_eq!(ran, done.len(), "the report and the audit log disagree");
    // The steps that ran before the stop succeeded; the manifest lists each.
    let ok = steps.iter().filter(|s| s["status"] == "success").count();
    assert!(ok + 1 >= done.len(), "{ok} of {}", done.len());
    let manifest = read_json(&env.out.join("artifacts/manifest.json"));
    assert_eq!(manifest["entries"].as_array().unwrap().len(), done.len());
    // No temporary file of a rewrite is left behind.
    let left: Vec<_> = std::fs::read_dir(&env.out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".plangate-tmp-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A step that ignores SIGTERM and times out is killed through its
/// supervisor; the next step, unrelated, runs in that supervisor (a lane)
/// as if nothing happened. Before, the kill message often reached the lane
/// after the step was gone; the next step's request then found it in the
/// way, the lane quit and that step failed ("Connection reset by peer").
#[test]
fn a_step_killed_after_a_timeout_leaves_its_supervisor_fit_for_the_next() {
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: stubborn, tool: bash, timeout: 1, parameters: {sandbox: false, command: \"trap '' TERM; sleep 300\"}}\n  - {id: next, tool: bash, parameters: {sandbox: false, command: 'echo hello'}}\n";
    for round in 0..8 {
        let env = Env::new();
        let o = env.run(
            plan,
            &[
                "--kill-grace",
                "1",
                "--sandbox-backend",
                "none",
                "--no-fail-fast",
            ],
        );
        assert_eq!(
            env.step("stubborn")["status"],
            "timed_out",
            "round {round}: {}",
            stderr(&o)
        );
        let next = env.step("next");
        assert_eq!(next["status"], "success", "round {round}: {next}");
    }
}
