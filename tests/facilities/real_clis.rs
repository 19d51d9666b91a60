//! The real agent CLIs (Claude Code, Codex, Gemini CLI, as npm installs
//! them) run through plangate's model endpoint (issue 24): each starts
//! headless from its preset in the step's sandbox, finds a placeholder
//! where its key would be, calls the model only through plangate (which
//! adds the real key), and its answer is read from the CLI's own output.
//!
//! The model API is a stand-in (tests/fixtures/model_api/standin.py) that
//! speaks the three providers' documented shapes, streaming included, and
//! logs every request it gets. Its first answer asks the CLI to write a file
//! with the CLI's own tool (Claude Code's `Write`, Codex's `apply_patch`,
//! Gemini CLI's `write_file`): the edit lands in the staged copy, and
//! plangate applies it to the workspace once the answer is accepted.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::facility::{Backend, agent_clis};
use crate::harness::{Env, code, stderr};

/// The stand-in model API, killed when dropped.
struct Standin {
    child: Child,
    port: u16,
    log: std::path::PathBuf,
}

impl Standin {
    fn start(dir: &Path, answer: &str) -> Standin {
        let answer_file = dir.join("answer.txt");
        std::fs::write(&answer_file, answer).unwrap();
        let log = dir.join("calls.jsonl");
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/model_api/standin.py");
        let mut child = Command::new("/usr/bin/python3")
            .arg(script)
            .env("STANDIN_ANSWER", &answer_file)
            .env("STANDIN_LOG", &log)
            .env("STANDIN_EDIT", "hello.txt")
            .env("STANDIN_EDIT_TEXT", "written by the agent\n")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("stand-in port: {line:?}"));
        Standin { child, port, log }
    }

    fn calls(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Each CLI: (step, preset, key variable, real key, header the provider reads
/// the key from, base URL path, the model call's path, the file it writes).
type Cli = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);
const CLIS: &[Cli] = &[
    (
        "claude",
        "claude-code",
        "ANTHROPIC_API_KEY",
        "sk-ant-api03-Rl7Kq2VxN8pT4mZ9wB3cY6dF1gH5jJ0aS",
        "x-api-key",
        "",
        "/v1/messages",
        "anthropic-hello.txt",
    ),
    (
        "codex",
        "codex",
        "OPENAI_API_KEY",
        "sk-proj-Hx4Tn8Lq2Vz6Kc9Wm3Rb7Yd1Fg5Js0Pa",
        "authorization",
        "/v1",
        "/v1/responses",
        "openai-hello.txt",
    ),
    (
        "gemini",
        "gemini-cli",
        "GEMINI_API_KEY",
        "AIzaSyD4kP8nQ2vX6bL9mT3wR7yC1fH5jG0aZcE",
        "x-goog-api-key",
        "",
        "/v1beta/models/",
        "gemini-hello.txt",
    ),
];

pub fn each_real_cli_answers_through_plangates_endpoint_and_never_holds_the_key(b: Backend) {
    let (flag, backend) = b.pair();
    let clis = agent_clis().expect("the facility was probed");
    let env = Env::new();
    let summary = "answered by the stand-in model";
    let side = tempfile::tempdir().unwrap();
    let api = Standin::start(
        side.path(),
        &format!(
            r#"{{"status": "OK", "summary": "{summary}", "artifacts": [], "next_actions": []}}"#
        ),
    );
    let mut yaml =
        String::from("version: 1\nid: real-clis\npolicy: {risk_tolerance: medium}\nagents:\n");
    for (id, preset, _, _, _, path, ..) in CLIS {
        yaml.push_str(&format!(
            "  {id}:\n    preset: {preset}\n    command: [{}]\n    timeout: 120\n    api: {{base_url: \"http://127.0.0.1:{}{path}\"}}\n",
            clis.join(id).display(),
            api.port
        ));
        // Codex declares its tools by model: this one gets the plain shell
        // tool the stand-in answers with `apply_patch`.
        if *id == "codex" {
            yaml.push_str("    args: [--model, gpt-5-codex]\n");
        }
    }
    yaml.push_str("steps:\n");
    for (id, ..) in CLIS {
        yaml.push_str(&format!(
            "  - {{id: {id}, tool: agent, continue_on_error: true, parameters: {{agent: {id}, prompt: \"Say hello.\"}}}}\n"
        ));
    }
    let plan = env.write("plan.yaml", &yaml);
    let mut cmd = env.cmd();
    cmd.arg("run")
        .arg(&plan)
        .args([
            "--sandbox-backend",
            flag,
            "--approve",
            "claude,codex,gemini",
            "--out",
        ])
        .arg(&env.out);
    for (_, _, var, key, ..) in CLIS {
        cmd.env(var, key);
    }
    let o = cmd.output().unwrap();
    let calls = api.calls();
    for (id, _, _, key, header, _, call, wrote) in CLIS {
        let s = env.step(id);
        let err =
            std::fs::read_to_string(env.out.join(format!("artifacts/{id}/attempt-1.stderr.txt")))
                .unwrap_or_default();
        assert_eq!(s["status"], "success", "{backend} {id}: {s}\n{err}");
        assert_eq!(s["result"]["summary"], summary, "{backend} {id}: {s}");
        // Its edit, made with its own tool in the staged copy, was applied.
        assert_eq!(
            s["changed_files"],
            serde_json::json!([wrote]),
            "{backend} {id}: {s}\n{err}"
        );
        assert_eq!(
            std::fs::read_to_string(env.ws.join(wrote)).unwrap_or_default(),
            "written by the agent\n",
            "{backend} {id}"
        );
        // Every model call of this CLI came through plangate, which put the
        // real key in the provider's header; the placeholder never left.
        let mine: Vec<&Value> = calls
            .iter()
            .filter(|c| {
                c["method"] == "POST" && c["path"].as_str().is_some_and(|p| p.starts_with(call))
            })
            .collect();
        assert!(
            !mine.is_empty(),
            "{backend} {id}: no model call reached the API: {calls:?}"
        );
        for c in &mine {
            let got = c["headers"][header].as_str().unwrap_or_default();
            assert!(got.ends_with(key), "{backend} {id}: {header}: {got:?}");
        }
        // The tool call and the answer: two model calls at least. The usage
        // is what the endpoint measured: the stand-in's 1200 input tokens a call.
        assert!(mine.len() >= 2, "{backend} {id}: {mine:?}");
        assert_eq!(s["usage"]["estimated"], false, "{backend} {id}: {s}");
        assert_eq!(
            s["usage"]["input_tokens"].as_u64(),
            Some(1200 * mine.len() as u64),
            "{backend} {id}: {s}"
        );
    }
    assert!(
        !calls
            .iter()
            .any(|c| c.to_string().contains("plangate-placeholder-key")),
        "{backend}: the placeholder reached the API: {calls:?}"
    );
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    // Nothing plangate wrote, and nothing the CLIs left, holds a key.
    for f in walk(&env.out).into_iter().chain(walk(&env.ws)) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap_or_default()).into_owned();
        for (_, _, _, key, ..) in CLIS {
            assert!(
                !text.contains(key),
                "{backend}: {} holds a key",
                f.display()
            );
        }
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
