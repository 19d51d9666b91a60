//! Read-only agents (`mode: read-only` on the definition or the step): the
//! edits of an agent CLI (in its staged copy) and of an HTTP or replayed
//! answer (its envelope's files) never reach the workspace, whatever the
//! answer says; the report lists them as `attempted_changes` and the console
//! and the summary say so. A step may narrow its agent, never widen it.

use crate::harness::{Env, code, mock_server, stderr};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/agents");

/// An envelope answer that writes `docs/notes.md`.
const ENVELOPE: &str = "Done.\n```json\n{\"status\": \"OK\", \"summary\": \"reviewed\", \"artifacts\": [{\"path\": \"docs/notes.md\", \"content\": \"review notes\\n\"}], \"next_actions\": []}\n```\n";

/// An agent CLI that writes `PATH` in its copy, then answers as Codex does.
fn editing_cli(path: &str) -> String {
    let argv = [
        "bash".to_owned(),
        format!("{FIXTURES}/standin.sh"),
        "--write".to_owned(),
        path.to_owned(),
        "--play".to_owned(),
        format!("{FIXTURES}/recorded/codex/success.jsonl"),
        "--".to_owned(),
    ];
    format!(
        "    command: {}\n    output_format: codex-jsonl\n",
        serde_json::to_string(&argv).unwrap()
    )
}

fn plan(agent_yaml: &str, params: &str) -> String {
    format!(
        "version: 1\nid: ro\npolicy: {{risk_tolerance: medium}}\nagents:\n  bot:\n{agent_yaml}steps:\n  - id: review\n    tool: agent\n    parameters: {{agent: bot, prompt: Review the change., max_attempts: 1{params}}}\n"
    )
}

fn paths(changes: &serde_json::Value) -> Vec<String> {
    changes["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no files: {changes}"))
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_read_only_cli_agents_edits_are_reported_never_applied() {
    // The agent's mode, or the step's over a read-write agent: the same.
    for (agent_mode, step_mode) in [("    mode: read-only\n", ""), ("", ", mode: read-only")] {
        let env = Env::new();
        env.write("src/lib.rs", "pub fn a() {}\n");
        let agent = format!("{}{agent_mode}", editing_cli("src/lib.rs"));
        let o = env.run(&plan(&agent, step_mode), &[]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let s = env.step("review");
        assert_eq!(s["status"], "success", "{s:#}");
        // The workspace is as it was.
        assert_eq!(
            std::fs::read_to_string(env.ws.join("src/lib.rs")).unwrap(),
            "pub fn a() {}\n"
        );
        assert!(s.get("agent_changes").is_none(), "{s:#}");
        let tried = &s["attempted_changes"];
        assert_eq!(tried["via"], "staged copy", "{s:#}");
        assert_eq!(paths(tried), ["src/lib.rs"]);
        assert_eq!(tried["files"][0]["change"], "modified");
        // The console says so.
        let console = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        assert!(
            console.contains(
                "read-only: the agent tried to change 1 file(s), not applied: src/lib.rs"
            ),
            "{console}"
        );
        // Its risk stays at least moderate: it still runs with its network and secrets.
        assert_eq!(s["risk"]["effective"], "moderate", "{s:#}");
        let why = s["approval"]["reason"].as_str().unwrap_or_default();
        assert!(
            why.contains("read-only: its edits are never applied"),
            "{s:#}"
        );
    }
}

#[test]
fn a_read_only_cli_that_changes_nothing_reports_nothing() {
    let env = Env::new();
    env.write("a.txt", "a\n");
    let argv = [
        "bash".to_owned(),
        format!("{FIXTURES}/standin.sh"),
        "--play".to_owned(),
        format!("{FIXTURES}/recorded/codex/success.jsonl"),
        "--".to_owned(),
    ];
    let agent = format!(
        "    command: {}\n    output_format: codex-jsonl\n    mode: read-only\n",
        serde_json::to_string(&argv).unwrap()
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = env.step("review");
    assert!(s.get("attempted_changes").is_none(), "{s:#}");
    let console = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(!console.contains("tried to change"), "{console}");
}

#[test]
fn a_read_only_http_or_replayed_envelope_writes_none_of_its_files() {
    // A replayed answer and an OpenAI-compatible endpoint: both answer with files.
    let env = Env::new();
    let rec = serde_json::json!({"step": "review", "attempt": 1, "answer": ENVELOPE});
    env.write("answers.jsonl", &format!("{rec}\n"));
    let replay = "    provider: replay\n    file: answers.jsonl\n    mode: read-only\n";
    let o = env.run(&plan(replay, ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = env.step("review");
    assert!(!env.ws.join("docs/notes.md").exists());
    assert_eq!(s["attempted_changes"]["via"], "envelope", "{s:#}");
    assert_eq!(paths(&s["attempted_changes"]), ["docs/notes.md"]);
    // A replayed read-only step writes nothing and sends nothing: safe.
    assert_eq!(s["risk"]["effective"], "safe", "{s:#}");

    let env = Env::new();
    let body = serde_json::json!({
        "id": "c1", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ENVELOPE}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}
    });
    let server = mock_server(vec![(200, body.to_string())]);
    let openai = format!(
        "    provider: openai\n    base_url: {}/v1\n    model: m\n",
        server.url
    );
    let o = env.run(&plan(&openai, ", mode: read-only"), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = env.step("review");
    assert!(!env.ws.join("docs/notes.md").exists());
    assert_eq!(paths(&s["attempted_changes"]), ["docs/notes.md"]);
    // It still sends the prompt out: moderate.
    assert_eq!(s["risk"]["effective"], "moderate", "{s:#}");
    // The summary (the report as Markdown) names what it tried.
    let md = env
        .cmd()
        .arg("report")
        .arg(env.out.join("report.json"))
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("read-only: the agent tried to change 1 file(s), not applied: docs/notes.md"),
        "{md}"
    );
}

#[test]
fn a_step_cannot_widen_a_read_only_agent_nor_write_its_artifacts() {
    let env = Env::new();
    let rec = serde_json::json!({"step": "review", "attempt": 1, "answer": ENVELOPE});
    env.write("answers.jsonl", &format!("{rec}\n"));
    let ro = "    provider: replay\n    file: answers.jsonl\n    mode: read-only\n";
    let rw = "    provider: replay\n    file: answers.jsonl\n";
    for (agent, params, want) in [
        (ro, ", mode: read-write", "cannot widen a read-only agent"),
        (
            ro,
            ", write_artifacts: true",
            "contradicts `mode: read-only`",
        ),
        (
            rw,
            ", mode: read-only, write_artifacts: true",
            "contradicts `mode: read-only`",
        ),
        (rw, ", mode: sometimes", "mode"),
    ] {
        let o = env.run(&plan(agent, params), &[]);
        assert_eq!(code(&o), 2, "{params}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(want), "{params}: {err}");
        assert!(err.contains("plan.yaml"), "names the file: {err}");
        assert!(!env.ws.join("docs/notes.md").exists());
    }
}

#[test]
fn a_read_only_step_needs_no_write_permission_on_the_workspace() {
    let env = Env::new();
    let rec = serde_json::json!({"step": "review", "attempt": 1, "answer": ENVELOPE});
    env.write("answers.jsonl", &format!("{rec}\n"));
    let replay = "    provider: replay\n    file: answers.jsonl\n";
    // Rules that let the agent run and read, never write.
    let rules = "version: 1\nid: ro\npolicy:\n  risk_tolerance: medium\n  permissions:\n    - {id: read, resource: \"*\", level: read}\n    - {id: bot, resource: \"agent:bot\", tools: [agent], level: execute, priority: 150}\n";
    let plan = |params: &str| {
        format!(
            "{rules}agents:\n  bot:\n{replay}steps:\n  - id: review\n    tool: agent\n    parameters: {{agent: bot, prompt: Review the change., max_attempts: 1{params}}}\n"
        )
    };
    // Writing its files needs write on `.`: denied.
    let o = env.run(&plan(""), &[]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let s = env.step("review");
    assert_eq!(s["status"], "blocked");
    let why = s["approval"]["reason"].as_str().unwrap_or_default();
    assert!(why.contains("the step needs write"), "{why}");
    // Read-only, it needs none: it runs, and writes nothing.
    let o = env.run(&plan(", mode: read-only"), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("review")["status"], "success");
    assert!(!env.ws.join("docs/notes.md").exists());
}
