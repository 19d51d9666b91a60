//! The test harness: a temp workspace, the real binary, the report it leaves.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;

/// A temporary workspace with an output directory.
pub struct Env {
    _dir: tempfile::TempDir,
    /// The workspace.
    pub ws: PathBuf,
    /// `--out`.
    pub out: PathBuf,
    /// `TMPDIR` for plangate (where it keeps its live-run registry).
    tmpdir: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Env {
    /// A workspace, an output folder and a `TMPDIR` of its own: plangate
    /// keeps its live-run registry there, so runs of other tests (which reap
    /// the orphans of every run they can see) never touch this test's.
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws").canonicalize().unwrap_or_else(|_| {
            std::fs::create_dir_all(dir.path().join("ws")).expect("mkdir ws");
            dir.path().join("ws").canonicalize().expect("canon ws")
        });
        let out = dir.path().join("out");
        // Not beside the workspace: tests check that nothing is written there.
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(tmp.path().join(OPERATOR_POLICY), OPERATOR_POLICY_YAML)
            .expect("operator policy");
        Env {
            _dir: dir,
            ws,
            out,
            tmpdir: tmp.path().to_owned(),
            _tmp: tmp,
        }
    }

    /// A new workspace that shares `other`'s `TMPDIR` (and so its live-run registry).
    pub fn sharing_tmp(other: &Env) -> Env {
        let mut env = Env::new();
        env.tmpdir = other.tmpdir.clone();
        env
    }

    /// Write a file inside the workspace.
    pub fn write(&self, name: &str, content: &str) -> PathBuf {
        let p = self.ws.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, content).expect("write");
        p
    }

    /// The binary, with the workspace set, no PLANGATE_* from the outside
    /// and the tests' operator policy ([`OPERATOR_POLICY_YAML`]) as
    /// `PLANGATE_POLICY` (a `--policy` flag beats it; [`Env::no_policy`] drops it).
    pub fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("plangate").expect("binary");
        for (k, _) in std::env::vars() {
            if outside_only(&k) {
                c.env_remove(k);
            }
        }
        c.current_dir(&self.ws);
        c.env("TMPDIR", &self.tmpdir);
        c.env("PLANGATE_POLICY", self.operator_policy());
        stage_kind(&mut c);
        c
    }

    /// plangate's `TMPDIR` in this test (its private temporary folders).
    pub fn tmp(&self) -> &Path {
        &self.tmpdir
    }

    /// The tests' operator policy file.
    pub fn operator_policy(&self) -> PathBuf {
        self.tmpdir.join(OPERATOR_POLICY)
    }

    /// The tests' operator policy with `secret_hosts` letting each of
    /// `names` go to the local stand-ins (127.0.0.1): a step that sends a
    /// secret to a host needs the operator's say (SPEC "Where a secret may go").
    pub fn policy_allowing_local(&self, names: &[&str]) -> PathBuf {
        let p = self.tmpdir.join("operator-policy-local-secrets.yaml");
        let map: Vec<String> = names
            .iter()
            .map(|n| format!("{n}: [\"127.0.0.1\"]"))
            .collect();
        std::fs::write(
            &p,
            format!(
                "{OPERATOR_POLICY_YAML}secret_hosts: {{{}}}\n",
                map.join(", ")
            ),
        )
        .expect("policy");
        p
    }

    /// `plangate run` of `plan_yaml` with no policy file: the built-in policy caps the plan.
    pub fn run_without_policy(&self, plan_yaml: &str, args: &[&str]) -> Output {
        let plan = self.write("plan.yaml", plan_yaml);
        let mut c = self.run_cmd(&plan);
        c.env_remove("PLANGATE_POLICY");
        c.args(args).timeout(std::time::Duration::from_secs(120));
        c.output().expect("run")
    }

    /// [`Env::cmd`] with nothing of the test's environment but `PATH` (and
    /// `HOME` = `TMPDIR`): for outputs that list what steps received.
    pub fn bare_cmd(&self) -> Command {
        let mut c = self.cmd();
        c.env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            c.env("PATH", path);
        }
        c.env("TMPDIR", &self.tmpdir).env("HOME", &self.tmpdir);
        c.env("PLANGATE_POLICY", self.operator_policy());
        c
    }

    /// `plangate run PLAN --out OUT` (the workspace is the current directory), to add to.
    pub fn run_cmd(&self, plan: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = self.cmd();
        c.arg("run").arg(plan).arg("--out").arg(&self.out);
        c
    }

    /// `plangate run PLAN --workspace WS --out OUT ARGS...`
    pub fn run(&self, plan_yaml: &str, args: &[&str]) -> Output {
        let plan = self.write("plan.yaml", plan_yaml);
        let mut c = self.cmd();
        c.arg("run")
            .arg(&plan)
            .arg("--workspace")
            .arg(&self.ws)
            .arg("--out")
            .arg(&self.out);
        c.args(args).timeout(std::time::Duration::from_secs(120));
        c.output().expect("run")
    }

    /// The report the last run left.
    pub fn report(&self) -> Value {
        let r = read_json(&self.out.join("report.json"));
        assert_no_repeated_clause(&r);
        r
    }

    /// A step of the report by id.
    pub fn step(&self, id: &str) -> Value {
        let r = self.report();
        r["steps"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s["id"] == id).cloned())
            .unwrap_or_else(|| panic!("no step {id} in {r:#}"))
    }
}

/// The name of the tests' operator policy file (in the env's `TMPDIR`).
const OPERATOR_POLICY: &str = "operator-policy.yaml";

/// The policy every test run gets unless it passes its own `--policy` (or
/// drops it): it lets the plans of the tests ask for a high tolerance,
/// unsandboxed steps, `network: true` and `fail_on_secrets: false`, which the built-in policy
/// caps. Sandboxes stay required and no variable is passed through.
pub const OPERATOR_POLICY_YAML: &str = "risk_tolerance: high\nallow_unsandboxed: true\nallow_any_network: true\nfail_on_secrets: false\n";

/// Every `error`, `reason` and `message` of a report says each clause once:
/// no message chains a prefix onto an error that already carries it
/// ("the answer was accepted but …: the answer was accepted but …").
pub fn assert_no_repeated_clause(v: &Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if matches!(k.as_str(), "error" | "reason" | "message")
                    && let Some(text) = x.as_str()
                    && let Some(c) = repeated_clause(text)
                {
                    panic!("`{k}` repeats the clause `{c}`: {text}");
                }
                assert_no_repeated_clause(x);
            }
        }
        Value::Array(a) => a.iter().for_each(assert_no_repeated_clause),
        _ => {}
    }
}

/// A clause (text between `: `, of three words or more) said twice in `text`.
pub fn repeated_clause(text: &str) -> Option<String> {
    let clauses: Vec<&str> = text
        .split(": ")
        .map(str::trim)
        .filter(|c| c.split_whitespace().count() >= 3)
        .collect();
    clauses
        .iter()
        .enumerate()
        .find(|(i, c)| clauses[i + 1..].contains(c))
        .map(|(_, c)| (*c).to_owned())
}

pub fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}\n{text}", p.display()))
}

/// Run git in `dir` with no system or global configuration and a fixed
/// identity; panics naming the command when it fails. Its stdout, without
/// the trailing newline.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let o = std::process::Command::new("git")
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim_end().to_owned()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A one-step bash plan.
pub fn bash_plan(steps: &[(&str, &str)]) -> String {
    let mut s = String::from("version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n");
    for (id, cmd) in steps {
        s.push_str(&format!(
            "  - id: {id}\n    tool: bash\n    parameters: {{command: {}}}\n",
            serde_json::to_string(cmd).expect("json")
        ));
    }
    s
}

/// Like [`bash_plan`], each step with `sandbox: false` (allowed by the
/// tests' operator policy): its steps run unsandboxed (for tests that compare
/// host pids).
pub fn unsandboxed_plan(steps: &[(&str, &str)]) -> String {
    bash_plan(steps).replace(
        "parameters: {command:",
        "parameters: {sandbox: false, command:",
    )
}

/// A `PATH` where every program of the machine's `PATH` is found but
/// `bwrap`: with `--sandbox-backend bwrap` no backend works here (the
/// condition `sandbox: optional` is for), while steps still find their tools.
pub fn path_without_bwrap(env: &Env) -> std::ffi::OsString {
    let dir = env.tmpdir.join("bin-without-bwrap");
    if !dir.exists() {
        std::fs::create_dir_all(&dir).expect("mkdir bin");
        let path = std::env::var_os("PATH").unwrap_or_default();
        for d in std::env::split_paths(&path) {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let name = e.file_name();
                if name == "bwrap" || dir.join(&name).exists() {
                    continue;
                }
                let _ = std::os::unix::fs::symlink(e.path(), dir.join(&name));
            }
        }
    }
    dir.into_os_string()
}

/// Whether a process is alive (and not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // state is the field after the parenthesised command name
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X"))
        }
        Err(_) => false,
    }
}

/// `PLANGATE_TEST_STAGE=copy` (or `overlay`) when running the tests: every
/// run's agent CLI gets that stage (`PLANGATE_STAGE`), so the whole suite
/// covers either kind.
pub fn stage_kind(c: &mut impl StageEnv) {
    if let Ok(kind) = std::env::var("PLANGATE_TEST_STAGE") {
        c.set_env("PLANGATE_STAGE", &kind);
    }
}

/// A command `PLANGATE_STAGE` can be set on.
pub trait StageEnv {
    fn set_env(&mut self, k: &str, v: &str);
}

impl StageEnv for Command {
    fn set_env(&mut self, k: &str, v: &str) {
        self.env(k, v);
    }
}

impl StageEnv for std::process::Command {
    fn set_env(&mut self, k: &str, v: &str) {
        self.env(k, v);
    }
}

/// Variables of the machine running the tests that plangate must not see:
/// its settings, and the CI's (a test under GitHub Actions or GitLab CI must
/// never write into the runner's real temporary folder; tests that want CI
/// behaviour set these themselves).
pub fn outside_only(k: &str) -> bool {
    k.starts_with("PLANGATE_")
        || matches!(
            k,
            "GITHUB_ACTIONS" | "RUNNER_TEMP" | "GITLAB_CI" | "RUNNER_TEMP_PROJECT_DIR"
        )
}

/// Spawn plangate in the background (std process, so the test can signal it).
pub fn spawn(env: &Env, plan_yaml: &str, args: &[&str]) -> std::process::Child {
    let plan = env.write("plan.yaml", plan_yaml);
    let bin = assert_cmd::cargo::cargo_bin("plangate");
    let mut c = std::process::Command::new(bin);
    for (k, _) in std::env::vars() {
        if outside_only(&k) {
            c.env_remove(k);
        }
    }
    c.env("TMPDIR", &env.tmpdir);
    c.env("PLANGATE_POLICY", env.operator_policy());
    stage_kind(&mut c);
    c.arg("run")
        .arg(&plan)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out);
    c.args(args)
        .current_dir(&env.ws)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    c.spawn().expect("spawn plangate")
}

/// Wait until `cond` holds, at most `secs` seconds.
pub fn wait_until(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    cond()
}

/// The fake CLI agent (tests/fixtures/fake_agent/answers.sh) answering from `dir`.
pub fn fake_agent(env: &Env, name: &str, answers: &[&str]) -> (PathBuf, String) {
    // Outside the workspace: an agent CLI reads its own configuration, named
    // in its command, never the real workspace (it works in a staged copy).
    let dir = env
        .ws
        .parent()
        .expect("test folder")
        .join("fake-agents")
        .join(format!(".fake-{name}"));
    std::fs::create_dir_all(&dir).expect("mkdir fake agent");
    for (i, a) in answers.iter().enumerate() {
        std::fs::write(dir.join(format!("{}.txt", i + 1)), a).expect("write answer");
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/fake_agent/answers.sh"
    );
    let yaml = format!(
        "  {name}:\n    command: [bash, {script:?}, {:?}]\n    timeout: 30\n",
        dir.display().to_string()
    );
    (dir, yaml)
}

/// A recorded prompt of the fake agent: it keeps them in its step's
/// artifact folder (`fake-agent-<name of dir>/prompts/N.txt`, found under
/// the test's folder), or in `dir` when it ran without one.
pub fn prompt_of(dir: &Path, n: u32) -> String {
    fn find(root: &Path, name: &str, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if p.file_name().and_then(|f| f.to_str()) == Some(name) {
                    out.push(p);
                } else {
                    find(&p, name, out);
                }
            }
        }
    }
    let name = format!(
        "fake-agent-{}",
        dir.file_name().and_then(|f| f.to_str()).unwrap_or_default()
    );
    let mut states = Vec::new();
    if let Some(root) = dir.parent().and_then(Path::parent) {
        find(root, &name, &mut states);
    }
    states.push(dir.to_path_buf());
    states
        .iter()
        .find_map(|s| std::fs::read_to_string(s.join("prompts").join(format!("{n}.txt"))).ok())
        .unwrap_or_default()
}

/// A one-shot local HTTP server: answers each request with the next canned
/// (status, body) and records what it received (request head, body).
pub struct MockServer {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    /// What was received.
    pub requests: std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>,
}

pub fn mock_server(responses: Vec<(u16, String)>) -> MockServer {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&requests);
    std::thread::spawn(move || {
        for (status, body) in responses {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            let mut reader = BufReader::new(stream);
            let mut head = String::new();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut buf = vec![0u8; len];
            let _ = reader.read_exact(&mut buf);
            seen.lock()
                .expect("lock")
                .push((head, String::from_utf8_lossy(&buf).into_owned()));
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    MockServer { url, requests }
}

impl Env {
    /// A step's `error` text (empty when there is none).
    pub fn step_error(&self, id: &str) -> String {
        self.step(id)["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// A wiremock mock for `verb` on `path` answering `status` with a JSON body
/// (the caller adds `.expect(n)` and mounts it).
pub fn mock(
    verb: &str,
    path: impl Into<String>,
    status: u16,
    body: Option<Value>,
) -> wiremock::Mock {
    let response = wiremock::ResponseTemplate::new(status);
    let response = match body {
        Some(b) => response.set_body_json(b),
        None => response,
    };
    wiremock::Mock::given(wiremock::matchers::method(verb))
        .and(wiremock::matchers::path(path.into()))
        .respond_with(response)
}

/// The code `validate` must exit with for its `--format json` output `v`:
/// the code `run` would give for the decisions it prints (3 when a step is
/// blocked, or denied under `on_approval_required: deny` and not skipped by
/// a condition known before the run; else 0). Also
/// checks that the output's `gate` says the same.
pub fn validate_exit(v: &Value) -> i32 {
    let deny = v["policy"]["on_approval_required"] != "skip";
    let refused: Vec<&Value> = v["steps"]
        .as_array()
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    let refused: Vec<&str> = refused
        .iter()
        .filter(|s| {
            // A step whose condition is false before the run needs no approval.
            let d = &s["approval"]["decision"];
            d == "blocked" || (d == "denied" && deny && s.get("skipped").is_none())
        })
        .filter_map(|s| s["id"].as_str())
        .collect();
    let want = if refused.is_empty() { 0 } else { 3 };
    assert_eq!(v["gate"]["exit_code"], want, "{v:#}");
    assert_eq!(v["gate"]["refused"], serde_json::json!(refused), "{v:#}");
    want
}
