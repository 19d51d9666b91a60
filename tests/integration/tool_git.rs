//! The git tool against real temporary repositories and a local bare remote,
//! driven through `plangate run`. The case table is
//! `tests/fixtures/tools/git.json` (adding a case adds no code); the tests
//! below it need a live server or a signal.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Env, code, mock_server, read_json, stderr};

/// One case's temporary world: workspace, bare remote, marker folder, isolated HOME.
struct World {
    _dir: tempfile::TempDir,
    tmp: PathBuf,
    ws: PathBuf,
    out: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().canonicalize().unwrap();
        let ws = tmp.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(tmp.join("home")).unwrap();
        std::fs::write(tmp.join("home/.gitconfig"), "").unwrap();
        let out = tmp.join("out");
        World {
            _dir: dir,
            tmp,
            ws,
            out,
        }
    }

    /// Variables the shell snippets (and `env` values) use.
    fn vars(&self) -> Vec<(&'static str, String)> {
        let p = |x: &Path| x.display().to_string();
        vec![
            ("WS", p(&self.ws)),
            ("TMP", p(&self.tmp)),
            ("REMOTE", p(&self.tmp.join("remote.git"))),
            ("MARK", p(&self.tmp.join("marks"))),
            ("BIN", p(&self.tmp.join("bin"))),
        ]
    }

    /// The environment of every process of the case: no outside git config, no PLANGATE_*.
    fn isolate(&self, c: &mut Command) {
        for (k, _) in std::env::vars() {
            if crate::harness::outside_only(&k) || k.starts_with("GIT_") {
                c.env_remove(k);
            }
        }
        c.env("HOME", self.tmp.join("home"))
            .env("GIT_CONFIG_GLOBAL", self.tmp.join("home/.gitconfig"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .current_dir(&self.ws);
        for (k, v) in self.vars() {
            c.env(k, v);
        }
    }

    fn expand(&self, s: &str) -> String {
        let mut s = s.to_owned();
        for (k, v) in self.vars() {
            s = s.replace(&format!("${k}"), &v);
        }
        s
    }

    /// Run a bash snippet in the workspace; Err with its output when it fails.
    fn sh(&self, script: &str, extra: &[(&str, String)]) -> Result<(), String> {
        let mut c = Command::new("bash");
        c.arg("-ec").arg(script);
        self.isolate(&mut c);
        for (k, v) in extra {
            c.env(k, v);
        }
        let o = c.output().map_err(|e| e.to_string())?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ))
        }
    }

    /// `plangate run` of a one-step plan.
    fn run(
        &self,
        step: &Value,
        flags: &[String],
        env: &[(String, String)],
    ) -> std::process::Output {
        let plan = json!({"version": 1, "id": "git-case", "steps": [step]});
        let plan_path = self.tmp.join("plan.yaml");
        std::fs::write(&plan_path, plan.to_string()).unwrap();
        let mut c = Command::new(assert_cmd::cargo::cargo_bin("plangate"));
        self.isolate(&mut c);
        for (k, v) in env {
            c.env(k, v);
        }
        c.arg("run")
            .arg(&plan_path)
            .arg("--workspace")
            .arg(&self.ws)
            .arg("--out")
            .arg(&self.out)
            .args(flags)
            .stdin(std::process::Stdio::null());
        c.output().unwrap()
    }
}

fn table() -> Value {
    read_json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tools/git.json"))
}

/// Run one case of the table; Err says what did not hold.
fn run_case(t: &Value, case: &Value) -> Result<(), String> {
    let w = World::new();
    let id = case["id"].as_str().unwrap_or("?");
    let setup = format!(
        "{}\n{}",
        t["prelude"].as_str().unwrap(),
        case["setup"].as_str().unwrap_or("")
    );
    w.sh(&setup, &[])
        .map_err(|e| format!("setup failed: {e}"))?;
    let mut step = json!({"id": "g", "tool": "git", "parameters": case["params"]});
    if let Some(extra) = case["step"].as_object() {
        for (k, v) in extra {
            step[k] = v.clone();
        }
    }
    let flags: Vec<String> = match case["flags"].as_array() {
        Some(f) => f.iter().map(|x| x.as_str().unwrap().to_owned()).collect(),
        None => vec!["--risk-tolerance".to_owned(), "medium".to_owned()],
    };
    let env: Vec<(String, String)> = case["env"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), w.expand(v.as_str().unwrap())))
                .collect()
        })
        .unwrap_or_default();
    let started = Instant::now();
    let o = w.run(&step, &flags, &env);
    let took = started.elapsed();
    let e = &case["expect"];
    let mut bad: Vec<String> = Vec::new();
    let want_exit = e["exit"].as_i64().unwrap_or(0) as i32;
    if code(&o) != want_exit {
        bad.push(format!(
            "exit {} (want {want_exit}): {}",
            code(&o),
            stderr(&o)
        ));
    }
    let report = read_json(&w.out.join("report.json"));
    let s = report["steps"][0].clone();
    let want_status = e["status"].as_str().unwrap_or("success");
    if s["status"] != want_status {
        bad.push(format!(
            "status {} (want {want_status}), error {}",
            s["status"], s["error"]
        ));
    }
    if let Some(r) = e["risk"].as_str()
        && s["risk"]["effective"] != r
    {
        bad.push(format!("risk {} (want {r}): {}", s["risk"], s["decision"]));
    }
    if let Some(want) = e["error"].as_str() {
        let got = s["error"].as_str().unwrap_or("");
        if !got.contains(want) {
            bad.push(format!("error `{got}` lacks `{want}`"));
        }
    }
    if let Some(max) = e["max_seconds"].as_u64()
        && took > Duration::from_secs(max)
    {
        bad.push(format!("took {took:?}, more than {max} s"));
    }
    let result_path = w.out.join("artifacts/g/result.json");
    let result = if result_path.exists() {
        read_json(&result_path)
    } else {
        Value::Null
    };
    if want_status == "denied" {
        if result_path.exists() {
            bad.push("a denied step left a result".to_owned());
        }
    } else if result.is_null() {
        bad.push("no result.json".to_owned());
    } else {
        for key in [
            "success",
            "output",
            "error",
            "status",
            "changed_files",
            "warnings",
            "operation",
            "command",
            "exit_code",
        ] {
            if result.get(key).is_none() {
                bad.push(format!("result.json lacks `{key}`"));
            }
        }
        if result["success"] != (want_status == "success") {
            bad.push(format!("result.success is {}", result["success"]));
        }
    }
    if let Some(ptrs) = e["result"].as_object() {
        for (ptr, want) in ptrs {
            let got = result.pointer(ptr).cloned().unwrap_or(Value::Null);
            if &got != want {
                bad.push(format!("result{ptr} = {got} (want {want})"));
            }
        }
    }
    if let Some(want) = e.get("command")
        && &result["command"] != want
    {
        bad.push(format!("command {} (want {want})", result["command"]));
    }
    if let Some(want) = e["output"].as_str() {
        let got = result["output"].as_str().unwrap_or("");
        if !got.contains(want) {
            bad.push(format!("output {got:?} lacks {want:?}"));
        }
    }
    for want in e["warnings"].as_array().into_iter().flatten() {
        let want = want.as_str().unwrap();
        let ok = result["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|w| w.as_str().unwrap_or("").contains(want));
        if !ok {
            bad.push(format!("warnings {} lack {want:?}", result["warnings"]));
        }
    }
    if let Some(check) = case["check"].as_str() {
        let sha = result["commit"]["sha"].as_str().unwrap_or("").to_owned();
        let script = format!("{}\n{check}", t["check_prelude"].as_str().unwrap());
        if let Err(out) = w.sh(&script, &[("COMMIT_SHA", sha)]) {
            bad.push(format!("check `{check}` failed: {out}"));
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("{id}:\n    {}", bad.join("\n    ")))
    }
}

#[test]
fn git_case_table() {
    let t = table();
    let cases: Vec<Value> = t["cases"].as_array().unwrap().clone();
    let only = std::env::var("GIT_CASE").ok();
    let cases: Vec<&Value> = cases
        .iter()
        .filter(|c| only.as_deref().is_none_or(|o| c["id"].as_str() == Some(o)))
        .collect();
    assert!(!cases.is_empty());
    // Two at a time: each case is a few git processes and one plangate run.
    let failures: Vec<String> = std::thread::scope(|s| {
        let chunks: Vec<Vec<&Value>> = vec![
            cases.iter().step_by(2).copied().collect(),
            cases.iter().skip(1).step_by(2).copied().collect(),
        ];
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let t = &t;
                s.spawn(move || {
                    chunk
                        .into_iter()
                        .filter_map(|c| run_case(t, c).err())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn git_ids_are_unique_and_cover_every_operation() {
    let t = table();
    let mut ids = std::collections::BTreeSet::new();
    let mut ops = std::collections::BTreeSet::new();
    for c in t["cases"].as_array().unwrap() {
        assert!(
            ids.insert(c["id"].as_str().unwrap().to_owned()),
            "duplicate {}",
            c["id"]
        );
        ops.insert(c["params"]["operation"].as_str().unwrap().to_owned());
    }
    for op in [
        "status", "diff", "log", "add", "commit", "push", "pull", "branch", "checkout", "stash",
        "reset",
    ] {
        assert!(ops.contains(op), "no case for {op}");
    }
}

/// A server that asks for credentials: no helper runs, nobody is prompted, the step ends at once.
#[test]
fn git_credentials_are_never_asked_for() {
    let w = World::new();
    let server = mock_server(vec![(401, String::new()); 4]);
    let setup = format!(
        "{}\nmkprog cred; git config credential.helper \"$BIN/cred\"; git config credential.{url}.helper \"$BIN/cred\"; git remote add web {url}/x.git",
        table()["prelude"].as_str().unwrap(),
        url = server.url
    );
    w.sh(&setup, &[]).unwrap();
    let step = json!({"id": "g", "tool": "git", "parameters": {"operation": "pull", "args": ["web", "main"]}});
    let started = Instant::now();
    let o = w.run(
        &step,
        &["--risk-tolerance".to_owned(), "medium".to_owned()],
        &[],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(started.elapsed() < Duration::from_secs(30));
    let r = read_json(&w.out.join("artifacts/g/result.json"));
    let err = r["error"].as_str().unwrap();
    assert!(
        err.contains("terminal prompts disabled") || err.contains("Authentication failed"),
        "{err}"
    );
    assert!(
        !server.requests.lock().unwrap().is_empty(),
        "git reached the server"
    );
    let marks: Vec<_> = std::fs::read_dir(w.tmp.join("marks")).unwrap().collect();
    assert!(marks.is_empty(), "a credential helper ran");
}

/// A remote that accepts the connection and never answers: the step's timeout kills git.
#[test]
fn git_is_killed_at_the_step_timeout() {
    let w = World::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let setup = format!(
        "{}\ngit remote add slow {url}/x.git",
        table()["prelude"].as_str().unwrap()
    );
    w.sh(&setup, &[]).unwrap();
    let step = json!({"id": "g", "tool": "git", "timeout": 1, "parameters": {"operation": "pull", "args": ["slow", "main"]}});
    let started = Instant::now();
    let o = w.run(
        &step,
        &["--risk-tolerance".to_owned(), "medium".to_owned()],
        &[],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(started.elapsed() < Duration::from_secs(15));
    let s = &read_json(&w.out.join("report.json"))["steps"][0];
    assert_eq!(s["status"], "timed_out", "{s:#}");
    let r = read_json(&w.out.join("artifacts/g/result.json"));
    assert_eq!(r["success"], false);
}

/// `plangate validate` shows the classifier's reason for each git step.
#[test]
fn git_validate_prints_the_risk_and_reason() {
    let env = Env::new();
    let plan = env.write(
        "plan.yaml",
        "version: 1\nid: v\nsteps:\n  - {id: up, tool: git, parameters: {operation: push, args: [origin, main]}}\n  - {id: look, tool: git, parameters: {operation: log}}\n",
    );
    let o = env.cmd().arg("validate").arg(&plan).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("updates `main`, a default branch"), "{text}");
    assert!(text.contains("git log only reads"), "{text}");
}

/// A secret in git's output is redacted in every artifact and on the console, and fails the run (exit 4).
#[test]
fn git_output_secrets_are_redacted() {
    let w = World::new();
    let setup = format!(
        "{}\necho 'AWS_ACCESS_KEY_ID=AKIAZ7Q4NX2LMRBT5KPW' >> a.txt",
        table()["prelude"].as_str().unwrap()
    );
    w.sh(&setup, &[]).unwrap();
    let step =
        json!({"id": "g", "tool": "git", "parameters": {"operation": "diff", "show_cli": true}});
    let o = w.run(&step, &[], &[]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert!(!stderr(&o).contains("AKIAZ7Q4NX2LMRBT5KPW"));
    for f in ["result.json", "stdout.txt"] {
        let text = std::fs::read_to_string(w.out.join("artifacts/g").join(f)).unwrap();
        assert!(!text.contains("AKIAZ7Q4NX2LMRBT5KPW"), "{f}: {text}");
        assert!(text.contains("REDACTED"), "{f}: {text}");
    }
}

/// SIGINT while git waits on the network: git is stopped, the run ends interrupted (130).
#[test]
fn git_is_stopped_when_the_run_is_interrupted() {
    let w = World::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            let _ = tx.send(());
            held.push(s);
        }
    });
    let setup = format!(
        "{}\ngit remote add slow {url}/x.git",
        table()["prelude"].as_str().unwrap()
    );
    w.sh(&setup, &[]).unwrap();
    let step = json!({"id": "g", "tool": "git", "timeout": 300, "parameters": {"operation": "pull", "args": ["slow", "main"]}});
    std::fs::write(
        w.tmp.join("plan.yaml"),
        json!({"version": 1, "id": "int", "steps": [step]}).to_string(),
    )
    .unwrap();
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("plangate"));
    w.isolate(&mut c);
    c.arg("run")
        .arg(w.tmp.join("plan.yaml"))
        .arg("--workspace")
        .arg(&w.ws)
        .arg("--out")
        .arg(&w.out)
        .args(["--risk-tolerance", "medium", "--kill-grace", "1"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    rx.recv_timeout(Duration::from_secs(30))
        .expect("git connected to the server");
    let started = Instant::now();
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    let s = &read_json(&w.out.join("report.json"))["steps"][0];
    assert_eq!(s["status"], "failed", "{s:#}");
    assert!(
        s["error"].as_str().unwrap().contains("interrupted"),
        "{s:#}"
    );
}
