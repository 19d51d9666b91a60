//! `--record FILE`: live answers become a replay file; replaying it gives
//! the same step statuses and parsed values, offline.

use crate::harness::{Env, code, fake_agent, read_json, stderr};

const TRUNCATED: &str = "```json\n{\"status\": \"OK\", \"summary\": \"wrote notes\", \"artifacts\": [{\"path\": \"docs/notes.md\", \"content\": \"line one";
const GOOD: &str = "{\"status\": \"OK\", \"summary\": \"wrote notes\", \"artifacts\": [{\"path\": \"docs/notes.md\", \"content\": \"line one\\n\"}]}";
const SECRET: &str = "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";

fn plan(agents: &str) -> String {
    format!(
        "version: 1\nid: rec\npolicy: {{risk_tolerance: medium, fail_on_secrets: false}}\nagents:\n{agents}steps:\n  - {{id: notes, tool: agent, parameters: {{agent: writer, prompt: Write notes., max_attempts: 2}}}}\n  - {{id: count, tool: agent, dependencies: [notes], parameters: {{agent: counter, prompt: Count., output: json, schema: {{type: object}}, context_steps: [notes]}}}}\n  - {{id: never, tool: agent, dependencies: [count], parameters: {{agent: rambler, prompt: Answer., output: code, max_attempts: 2}}}}\n"
    )
}

#[test]
fn a_recorded_run_replays_offline_with_the_same_statuses_and_values() {
    let live = Env::new();
    let (_, writer) = fake_agent(&live, "writer", &[TRUNCATED, GOOD]);
    let count = format!("{{\"count\": 3, \"note\": \"{SECRET}\"}}");
    let (_, counter) = fake_agent(&live, "counter", &[&count]);
    let (_, rambler) = fake_agent(&live, "rambler", &["no code here, sorry"]);
    let record = live.ws.parent().unwrap().join("answers.jsonl");
    let record_arg = record.display().to_string();
    let o = live.run(
        &plan(&format!("{writer}{counter}{rambler}")),
        &["--record", &record_arg],
    );
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    let text = std::fs::read_to_string(&record).unwrap();
    assert_eq!(text.lines().count(), 5, "{text}");
    assert!(!text.contains(SECRET), "the record is redacted");
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["prompt_sha256"].as_str().unwrap().len(), 64, "{v}");
    }

    let replay = Env::new();
    let agents: String = ["writer", "counter", "rambler"]
        .iter()
        .map(|name| format!("  {name}:\n    provider: replay\n    file: {record_arg:?}\n"))
        .collect();
    let o = replay.run(&plan(&agents), &[]);
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    let (a, b) = (live.report(), replay.report());
    for (x, y) in a["steps"]
        .as_array()
        .unwrap()
        .iter()
        .zip(b["steps"].as_array().unwrap())
    {
        assert_eq!(x["id"], y["id"]);
        assert_eq!(x["status"], y["status"], "{}", x["id"]);
        assert_eq!(x["attempts"], y["attempts"], "{}", x["id"]);
    }
    for rel in ["artifacts/notes/parsed.json", "artifacts/count/parsed.json"] {
        assert_eq!(
            read_json(&live.out.join(rel)),
            read_json(&replay.out.join(rel)),
            "{rel}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(replay.ws.join("docs/notes.md")).unwrap(),
        "line one\n"
    );
}

#[test]
fn a_record_file_that_cannot_be_written_is_a_usage_error() {
    let env = Env::new();
    let (_, writer) = fake_agent(&env, "writer", &[GOOD]);
    let bad = env.ws.join("no-such-folder/answers.jsonl");
    let plan = format!(
        "version: 1\nid: rec\npolicy: {{risk_tolerance: medium}}\nagents:\n{writer}steps:\n  - {{id: notes, tool: agent, parameters: {{agent: writer, prompt: p}}}}\n"
    );
    let o = env.run(&plan, &["--record", bad.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--record"), "{}", stderr(&o));
}

#[test]
fn a_dry_run_writes_each_agent_prompt_and_says_where() {
    let env = Env::new();
    let (_, writer) = fake_agent(&env, "writer", &[GOOD]);
    let plan = format!(
        "version: 1\nid: dry\npolicy: {{risk_tolerance: medium}}\nagents:\n{writer}steps:\n  - {{id: lint, tool: bash, parameters: {{command: 'touch ran; echo warning: unused'}}}}\n  - {{id: fix, tool: agent, dependencies: [lint], parameters: {{agent: writer, prompt: Fix the lint warnings., context_steps: [lint]}}}}\n"
    );
    let o = env.run(&plan, &["--dry-run"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!env.ws.join("ran").exists(), "a dry run runs nothing");
    let prompt = std::fs::read_to_string(env.out.join("artifacts/fix/prompt.dry-run.txt")).unwrap();
    for want in [
        "Fix the lint warnings.",
        "<the output of step `lint` goes here once it has run>",
        "## Answer format",
    ] {
        assert!(prompt.contains(want), "{want:?} missing:\n{prompt}");
    }
    let step = env.step("fix");
    assert_eq!(step["status"], "not_run");
    assert!(
        step["error"]
            .as_str()
            .unwrap()
            .contains("its prompt is in artifacts/fix/prompt.dry-run.txt"),
        "{step}"
    );
    assert!(
        stderr(&o).contains("artifacts/fix/prompt.dry-run.txt"),
        "{}",
        stderr(&o)
    );
}
