//! Agents are checked before any step runs: a missing CLI, an unset key
//! variable or a broken replay file is exit 2 with nothing run.

use crate::harness::{Env, code, stderr};

/// A plan whose first step would create `ran`, then an agent step on `agent`.
fn plan(agent: &str) -> String {
    format!(
        "version: 1\nid: pre\npolicy: {{risk_tolerance: medium}}\nagents:\n  a:\n{agent}steps:\n  - {{id: first, tool: bash, parameters: {{command: 'touch ran'}}}}\n  - {{id: ask, tool: agent, dependencies: [first], parameters: {{agent: a, prompt: p}}}}\n"
    )
}

#[test]
fn an_agent_that_cannot_run_stops_the_run_before_any_step() {
    let env = Env::new();
    env.write("not-executable.sh", "echo hi\n");
    let replay_bad = env.write(
        "bad.jsonl",
        "{\"step\": \"ask\", \"attempt\": 1, \"answer\": \"x\"}\n{\"step\": \"ask\"}\n",
    );
    let replay_not_json = env.write("notjson.jsonl", "{oops\n");
    // Records that read two ways: a key twice, two records of one attempt.
    let replay_dup_key = env.write(
        "dupkey.jsonl",
        "{\"step\": \"ask\", \"attempt\": 1, \"answer\": \"A\", \"answer\": \"B\"}\n",
    );
    let replay_dup_record = env.write(
        "duprec.jsonl",
        "{\"step\": \"ask\", \"attempt\": 1, \"answer\": \"A\"}\n{\"step\": \"ask\", \"attempt\": 1, \"answer\": \"B\"}\n",
    );
    let cases: Vec<(String, &str)> = vec![
        (
            "    command: [plangate-no-such-agent-cli]\n".to_owned(),
            "its program `plangate-no-such-agent-cli` is not on plangate's PATH",
        ),
        (
            "    command: [./not-executable.sh]\n".to_owned(),
            "is not an executable file",
        ),
        (
            "    command: [cat]\n    api_key_env: PGTEST_UNSET_AGENT_KEY\n".to_owned(),
            "`PGTEST_UNSET_AGENT_KEY` (api_key_env) is unset or empty",
        ),
        (
            "    provider: openai\n    base_url: http://127.0.0.1:9\n    model: m\n    api_key_env: PGTEST_UNSET_AGENT_KEY\n".to_owned(),
            "`PGTEST_UNSET_AGENT_KEY` (api_key_env) is unset or empty",
        ),
        (
            "    preset: claude-code\n    command: [cat]\n".to_owned(),
            "runs the claude CLI (`preset: claude-code`), which calls its model's API, but its sandbox has no network",
        ),
        (
            "    provider: replay\n    file: missing.jsonl\n".to_owned(),
            "its replay file",
        ),
        (
            format!("    provider: replay\n    file: {:?}\n", replay_bad.display().to_string()),
            "line 2: a record needs",
        ),
        (
            format!("    provider: replay\n    file: {:?}\n", replay_not_json.display().to_string()),
            "line 1: not JSON",
        ),
        (
            format!("    provider: replay\n    file: {:?}\n", replay_dup_key.display().to_string()),
            "line 1: key \"answer\" appears twice",
        ),
        (
            format!("    provider: replay\n    file: {:?}\n", replay_dup_record.display().to_string()),
            "line 2: a second record of step `ask` attempt 1 (the first is line 1)",
        ),
    ];
    for (agent, message) in cases {
        let o = env.run(&plan(&agent), &[]);
        assert_eq!(code(&o), 2, "{agent}: {}", stderr(&o));
        assert!(!env.ws.join("ran").exists(), "{agent}: nothing ran");
        let err = stderr(&o);
        assert!(
            err.contains("agent `a` (step `ask`) cannot run") && err.contains(message),
            "{agent}: {err}"
        );
        let report = env.report();
        assert_eq!(report["status"], "invalid", "{agent}");
        assert_eq!(report["exit_code"], 2, "{agent}");
    }
}

#[test]
fn only_the_agents_of_the_selected_steps_are_checked() {
    let env = Env::new();
    let o = env.run(
        &plan("    command: [plangate-no-such-agent-cli]\n"),
        &["--steps", "first"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(env.ws.join("ran").exists());
}
