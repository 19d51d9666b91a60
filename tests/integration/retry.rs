//! `retry:` on bash steps (issue 16, item 6): a flaky command runs again,
//! every attempt is in the report with its exit code, duration and files,
//! waits follow `delay` and `backoff`, a signal during a wait ends the run at
//! once, and `--resume` carries a step that succeeded on a later attempt over
//! with its attempts. Plans are fixtures (`tests/fixtures/retry/`); load-time
//! errors are `plans/invalid/retry-*.yaml`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::harness::{Env, code, read_json, stderr, wait_until};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/retry")
        .join(name)
}

/// Copy a fixture plan into the workspace; its path there.
fn plan(env: &Env, name: &str) -> PathBuf {
    env.write(
        "plan.yaml",
        &std::fs::read_to_string(fixture(name)).unwrap(),
    )
}

fn attempts(step: &Value) -> Vec<Value> {
    step["command_attempts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn time(v: &Value) -> SystemTime {
    humantime::parse_rfc3339(v.as_str().unwrap()).unwrap()
}

fn ms(v: &Value) -> Duration {
    Duration::from_millis(v.as_u64().unwrap())
}

#[test]
fn a_command_that_fails_twice_then_succeeds_is_a_success_after_three_attempts() {
    let env = Env::new();
    let p = plan(&env, "flaky.yaml");
    let o = env.run_cmd(&p).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = env.step("flaky");
    assert_eq!(s["status"], "success");
    assert_eq!(s["attempts"], 3);
    let a = attempts(&s);
    let codes: Vec<&Value> = a.iter().map(|x| &x["exit_code"]).collect();
    assert_eq!(codes, [1, 1, 0]);
    let st: Vec<&str> = a.iter().map(|x| x["status"].as_str().unwrap()).collect();
    assert_eq!(st, ["failed", "failed", "success"]);
    assert_eq!(a[0]["error"], "exited with code 1");
    // Each attempt's output is kept; the last one's is the step's stdout.txt.
    let read = |rel: &str| std::fs::read_to_string(env.out.join(rel)).unwrap();
    assert_eq!(
        a[0]["files"],
        serde_json::json!([
            "artifacts/flaky/attempt-1.stdout.txt",
            "artifacts/flaky/attempt-1.stderr.txt"
        ])
    );
    assert_eq!(read("artifacts/flaky/attempt-1.stdout.txt"), "attempt 1\n");
    assert_eq!(read("artifacts/flaky/attempt-2.stdout.txt"), "attempt 2\n");
    assert_eq!(read("artifacts/flaky/stdout.txt"), "attempt 3\n");
    assert_eq!(a[2]["files"][0], "artifacts/flaky/stdout.txt");
    let artifacts = s["artifacts"].as_array().unwrap();
    assert!(artifacts.contains(&Value::from("artifacts/flaky/attempt-2.stderr.txt")));
    // Outputs come from the last attempt only ($PLANGATE_OUTPUT starts empty each time).
    assert_eq!(s["outputs"], serde_json::json!({"seen": "3"}));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("seen.txt")).unwrap(),
        "3\n"
    );
    // delay 0.3 s, backoff 2: the gaps between attempts are at least 0.3 s and 0.6 s
    // (a loose lower bound from the recorded timestamps; millisecond rounding allowed).
    for (n, want) in [(0, 300u64), (1, 600)] {
        let end = time(&a[n]["started_at"]) + ms(&a[n]["duration_ms"]);
        let gap = time(&a[n + 1]["started_at"])
            .duration_since(end)
            .unwrap_or_default();
        assert!(gap >= Duration::from_millis(want - 5), "gap {n}: {gap:?}");
        assert!(ms(&a[n]["wait_ms"]) >= Duration::from_millis(want), "{a:?}");
    }
    assert!(a[2]["wait_ms"].is_null());
    // The console and the audit log say each retry.
    let err = stderr(&o);
    assert!(
        err.contains(
            "flaky attempt 1/3 failed (exited with code 1); retrying in 0.3s (attempt 2/3)"
        ),
        "{err}"
    );
    assert!(err.contains("retrying in 0.6s (attempt 3/3)"), "{err}");
    let audit = std::fs::read_to_string(env.out.join("audit.jsonl")).unwrap();
    let retries: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "step_retry")
        .collect();
    assert_eq!(retries.len(), 2, "{audit}");
    assert_eq!(retries[1]["attempt"], 2);
    assert_eq!(retries[1]["wait_ms"], 600);
    assert_eq!(retries[1]["exit_code"], 1);
}

#[test]
fn a_command_that_always_fails_fails_after_max_attempts() {
    let env = Env::new();
    let p = plan(&env, "always-fails.yaml");
    let o = env.run_cmd(&p).output().unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let s = env.step("broken");
    assert_eq!(s["status"], "failed");
    assert_eq!(s["attempts"], 3);
    assert_eq!(s["exit_code"], 7);
    assert_eq!(s["error"], "exited with code 7");
    let codes: Vec<Value> = attempts(&s)
        .iter()
        .map(|x| x["exit_code"].clone())
        .collect();
    assert_eq!(codes, [7, 7, 7]);
    assert_eq!(
        std::fs::read_to_string(env.ws.join("tries")).unwrap(),
        "tried\ntried\ntried\n"
    );
    for n in 1..=2 {
        let e = env
            .out
            .join(format!("artifacts/broken/attempt-{n}.stderr.txt"));
        assert_eq!(std::fs::read_to_string(e).unwrap(), "nope\n");
    }
    assert!(stderr(&o).contains("3 attempts"), "{}", stderr(&o));
}

#[test]
fn sigterm_during_a_retry_delay_ends_the_run_with_130_at_once() {
    let env = Env::new();
    let p = plan(&env, "long-delay.yaml");
    let bin = assert_cmd::cargo::cargo_bin("plangate");
    let mut c = std::process::Command::new(bin);
    c.args(["run"])
        .arg(&p)
        .arg("--out")
        .arg(&env.out)
        .current_dir(&env.ws)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, _) in std::env::vars() {
        if k.starts_with("PLANGATE_") || k == "GITHUB_ACTIONS" {
            c.env_remove(k);
        }
    }
    c.env("PLANGATE_POLICY", env.operator_policy());
    let child = c.spawn().unwrap();
    // The first attempt failed and the retry was announced: plangate is waiting.
    let audit = env.out.join("audit.jsonl");
    assert!(wait_until(30, || std::fs::read_to_string(&audit)
        .is_ok_and(|a| a.contains("\"event\":\"step_retry\""))));
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = env.report();
    assert_eq!(r["status"], "interrupted");
    let s = env.step("wait");
    assert_eq!(s["status"], "failed");
    assert_eq!(s["attempts"], 1);
    assert_eq!(
        s["error"],
        "exited with code 1; interrupted before attempt 2/2 started"
    );
    assert_eq!(attempts(&s).len(), 1);
    assert_eq!(env.step("after")["status"], "not_run");
}

#[test]
fn resume_does_not_rerun_a_step_that_succeeded_on_its_second_attempt() {
    let env = Env::new();
    let p = plan(&env, "resume.yaml");
    let o = env.run_cmd(&p).output().unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let first = env.step("flaky");
    assert_eq!(first["status"], "success");
    assert_eq!(first["attempts"], 2);
    assert_eq!(env.step("gate")["status"], "failed");
    let counter = || std::fs::read_to_string(env.ws.join("counter")).unwrap();
    assert_eq!(counter(), "x\nx\n");
    env.write("open", "");
    let out2 = env.out.with_file_name("out2");
    let o = env
        .cmd()
        .arg("run")
        .arg(&p)
        .arg("--out")
        .arg(&out2)
        .arg("--resume")
        .arg(env.out.join("report.json"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(counter(), "x\nx\n", "flaky ran again");
    let r = read_json(&out2.join("report.json"));
    let s = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "flaky")
        .unwrap();
    assert!(!s["carried_over"].is_null());
    assert_eq!(s["attempts"], 2);
    assert_eq!(s["command_attempts"], first["command_attempts"]);
}

#[test]
fn a_secret_in_a_failed_attempt_ends_the_retries_and_every_attempt_is_swept() {
    let secret = concat!("AKIA", "Z7Q4NX2LMRBT5KPW");
    let env = Env::new();
    let p = plan(&env, "leak.yaml");
    let o = env.run_cmd(&p).output().unwrap();
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let s = env.step("leaky");
    assert_eq!(s["attempts"], 1);
    let r = env.report();
    assert_eq!(r["findings"][0]["location"], "artifacts/leaky/stdout.txt");
    // Without fail_on_secrets every attempt runs; each kept stream is redacted
    // and its finding points at it.
    let env = Env::new();
    let p = plan(&env, "leak.yaml");
    let o = env
        .run_cmd(&p)
        .args(["--fail-on-secrets", "false"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(env.step("leaky")["attempts"], 3);
    let r = env.report();
    let locations: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["location"].as_str().unwrap())
        .collect();
    assert!(
        locations.contains(&"artifacts/leaky/attempt-1.stdout.txt"),
        "{locations:?}"
    );
    for rel in ["attempt-1.stdout.txt", "attempt-2.stdout.txt", "stdout.txt"] {
        let text = std::fs::read_to_string(env.out.join("artifacts/leaky").join(rel)).unwrap();
        assert!(
            text.starts_with("key=") && !text.contains(secret),
            "{rel}: {text}"
        );
    }
}
