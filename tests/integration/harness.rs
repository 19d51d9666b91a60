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
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws").canonicalize().unwrap_or_else(|_| {
            std::fs::create_dir_all(dir.path().join("ws")).expect("mkdir ws");
            dir.path().join("ws").canonicalize().expect("canon ws")
        });
        let out = dir.path().join("out");
        Env { _dir: dir, ws, out }
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

    /// The binary, with the workspace set and no PLANGATE_* from the outside.
    pub fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("plangate").expect("binary");
        for (k, _) in std::env::vars() {
            if k.starts_with("PLANGATE_") || k == "GITHUB_ACTIONS" {
                c.env_remove(k);
            }
        }
        c.current_dir(&self.ws);
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
        read_json(&self.out.join("report.json"))
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

pub fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}\n{text}", p.display()))
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

/// Spawn plangate in the background (std process, so the test can signal it).
pub fn spawn(env: &Env, plan_yaml: &str, args: &[&str]) -> std::process::Child {
    let plan = env.write("plan.yaml", plan_yaml);
    let bin = assert_cmd::cargo::cargo_bin("plangate");
    let mut c = std::process::Command::new(bin);
    for (k, _) in std::env::vars() {
        if k.starts_with("PLANGATE_") || k == "GITHUB_ACTIONS" {
            c.env_remove(k);
        }
    }
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
