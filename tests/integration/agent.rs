//! Agent steps through the binary: fail-close parsing, retries with feedback,
//! only sanitized results flowing on, providers, budgets, `draft`.

use crate::harness::{Env, code, fake_agent, mock_server, prompt_of, read_json, stderr};

const GOOD: &str = "Here is the change.\n```json\n{\"status\": \"OK\", \"summary\": \"wrote notes\", \"artifacts\": [{\"path\": \"docs/notes.md\", \"content\": \"line one\\nsay \\\"hi\\\"\\n\"}], \"next_actions\": []}\n```\n";
const TRUNCATED: &str = "```json\n{\"status\": \"OK\", \"summary\": \"wrote notes\", \"artifacts\": [{\"path\": \"docs/notes.md\", \"content\": \"line one";

fn agent_plan(agents: &str, params: &str, extra_steps: &str) -> String {
    format!(
        "version: 1\nid: a\npolicy: {{risk_tolerance: medium}}\nagents:\n{agents}steps:\n  - id: fix\n    tool: agent\n    parameters:\n{params}{extra_steps}"
    )
}

#[test]
fn an_accepted_envelope_writes_its_files_and_later_steps_read_the_result_by_file() {
    let env = Env::new();
    let (dir, agents) = fake_agent(&env, "coder", &[GOOD]);
    let later = "  - id: use\n    tool: bash\n    dependencies: [fix]\n    parameters: {command: 'cat \"$PLANGATE_RESULT_FIX\" > seen.json'}\n";
    let o = env.run(
        &agent_plan(
            &agents,
            "      agent: coder\n      prompt: Write notes.\n",
            later,
        ),
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("docs/notes.md")).unwrap(),
        "line one\nsay \"hi\"\n"
    );
    let s = env.step("fix");
    assert_eq!(s["status"], "success");
    assert_eq!(s["attempts"], 1);
    assert_eq!(s["agent_attempts"][0]["verdict"], "accepted");
    assert_eq!(s["usage"]["estimated"], true);
    assert!(s["usage"]["input_tokens"].as_u64().unwrap() > 0);
    let parsed = read_json(&env.out.join("artifacts/fix/parsed.json"));
    assert_eq!(parsed["summary"], "wrote notes");
    assert_eq!(read_json(&env.ws.join("seen.json")), parsed);
    // The prompt carried the envelope protocol.
    assert!(prompt_of(&dir, 1).contains("Write notes."));
    assert!(prompt_of(&dir, 1).contains("next_actions"));
    assert!(env.report()["usage"]["input_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn a_rejected_answer_is_retried_with_the_error_and_never_the_same_prompt() {
    let env = Env::new();
    let (dir, agents) = fake_agent(&env, "coder", &[TRUNCATED, GOOD]);
    let o = env.run(
        &agent_plan(
            &agents,
            "      agent: coder\n      prompt: Write notes.\n      max_attempts: 3\n",
            "",
        ),
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = env.step("fix");
    assert_eq!(s["attempts"], 2);
    assert_eq!(s["agent_attempts"][0]["verdict"], "rejected");
    assert_eq!(
        s["agent_attempts"][0]["rejections"][0]["category"],
        "truncated"
    );
    let (p1, p2) = (prompt_of(&dir, 1), prompt_of(&dir, 2));
    assert_ne!(p1, p2);
    assert!(
        p2.contains("truncated"),
        "the retry carries the parser's error:\n{p2}"
    );
    assert_ne!(
        s["agent_attempts"][0]["prompt_sha256"],
        s["agent_attempts"][1]["prompt_sha256"]
    );
    let audit = std::fs::read_to_string(env.out.join("audit.jsonl")).unwrap();
    assert!(audit.contains("\"parse_failure\""));
}

#[test]
fn the_last_rejection_exits_5_and_nothing_reaches_the_workspace() {
    let env = Env::new();
    let two = format!("{GOOD}\nand again:\n{GOOD}");
    let (dir, agents) = fake_agent(&env, "coder", &[TRUNCATED, &two]);
    let later = "  - id: use\n    tool: bash\n    dependencies: [fix]\n    parameters: {command: 'touch used'}\n";
    let o = env.run(
        &agent_plan(
            &agents,
            "      agent: coder\n      prompt: Write notes.\n      max_attempts: 2\n",
            later,
        ),
        &[],
    );
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    let r = env.report();
    assert_eq!(r["status"], "rejected");
    let s = env.step("fix");
    assert_eq!(s["status"], "rejected");
    assert_eq!(s["attempts"], 2);
    assert_eq!(
        s["agent_attempts"][1]["rejections"][0]["category"],
        "ambiguous"
    );
    assert!(
        !env.ws.join("docs").exists(),
        "nothing from a rejected answer is written"
    );
    assert!(!env.ws.join("used").exists());
    assert_eq!(env.step("use")["status"], "not_run");
    assert!(!env.out.join("artifacts/fix/parsed.json").exists());
    let failure = read_json(&env.out.join("artifacts/fix/rejected.json"));
    assert_eq!(failure["status"], "FAIL");
    // Raw answers are kept as evidence.
    assert!(env.out.join("artifacts/fix/attempt-2.answer.txt").exists());
    assert!(prompt_of(&dir, 2).to_lowercase().contains("attempt 2"));
}

#[test]
fn unsafe_artifact_paths_are_rejected() {
    let env = Env::new();
    for path in [
        "../escape.txt",
        "/etc/passwd",
        ".git/hooks/pre-commit",
        "~/x",
    ] {
        let answer = format!(
            "{{\"status\": \"OK\", \"summary\": \"s\", \"artifacts\": [{{\"path\": {}, \"content\": \"x\"}}], \"next_actions\": []}}",
            serde_json::to_string(path).unwrap()
        );
        let (_, agents) = fake_agent(&env, "coder", &[&answer]);
        let _ = std::fs::remove_file(env.ws.join(".fake-coder/.count"));
        let o = env.run(
            &agent_plan(
                &agents,
                "      agent: coder\n      prompt: p\n      max_attempts: 1\n",
                "",
            ),
            &[],
        );
        assert_eq!(code(&o), 5, "{path}: {}", stderr(&o));
        assert_eq!(
            env.step("fix")["agent_attempts"][0]["rejections"][0]["category"],
            "unsafe_path",
            "{path}"
        );
    }
    assert!(!env.ws.parent().unwrap().join("escape.txt").exists());
}

#[test]
fn an_envelope_that_reports_fail_fails_the_step_with_its_summary() {
    let env = Env::new();
    let answer = "{\"status\": \"FAIL\", \"summary\": \"cannot reproduce the warning\", \"artifacts\": [], \"next_actions\": [\"run clippy\"]}";
    let (_, agents) = fake_agent(&env, "coder", &[answer]);
    let o = env.run(
        &agent_plan(&agents, "      agent: coder\n      prompt: p\n", ""),
        &[],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        env.step_error("fix")
            .contains("cannot reproduce the warning")
    );
}

#[test]
fn code_output_keeps_exactly_the_block() {
    let env = Env::new();
    let answer = "Sure:\n```python\ndef f():\n    return \"x\"\n```\nDone.";
    let (_, agents) = fake_agent(&env, "coder", &[answer]);
    let o = env.run(
        &agent_plan(
            &agents,
            "      agent: coder\n      prompt: p\n      output: code\n      language: py\n",
            "",
        ),
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got = std::fs::read_to_string(env.out.join("artifacts/fix/parsed.txt")).unwrap();
    assert_eq!(got, "def f():\n    return \"x\"");
}

#[test]
fn json_output_is_validated_against_the_schema() {
    let env = Env::new();
    let params = "      agent: coder\n      prompt: p\n      output: json\n      max_attempts: 1\n      schema: {type: object, required: [count], properties: {count: {type: integer}}, additionalProperties: false}\n";
    let (_, agents) = fake_agent(&env, "coder", &["{\"count\": 3}"]);
    assert_eq!(code(&env.run(&agent_plan(&agents, params, ""), &[])), 0);
    assert_eq!(
        read_json(&env.out.join("artifacts/fix/parsed.json")),
        serde_json::json!({"count": 3})
    );
    let env = Env::new();
    let (_, agents) = fake_agent(&env, "coder", &["{\"count\": \"three\"}"]);
    let o = env.run(&agent_plan(&agents, params, ""), &[]);
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    assert_eq!(
        env.step("fix")["agent_attempts"][0]["rejections"][0]["category"],
        "schema"
    );
}

#[test]
fn a_failing_or_slow_agent_fails_or_times_out_the_step() {
    let env = Env::new();
    let (dir, agents) = fake_agent(&env, "coder", &[GOOD]);
    std::fs::write(dir.join("exit"), "7").unwrap();
    let o = env.run(
        &agent_plan(&agents, "      agent: coder\n      prompt: p\n", ""),
        &[],
    );
    assert_eq!(code(&o), 1);
    assert!(env.step_error("fix").contains("exited with code 7"));
    std::fs::remove_file(dir.join("exit")).unwrap();
    std::fs::write(dir.join("sleep"), "30").unwrap();
    let agents = agents.replace("timeout: 30", "timeout: 1");
    let o = env.run(
        &agent_plan(&agents, "      agent: coder\n      prompt: p\n", ""),
        &["--kill-grace", "1"],
    );
    assert_eq!(code(&o), 1);
    assert_eq!(env.step("fix")["status"], "timed_out");
}

#[test]
fn a_prompt_over_max_input_chars_is_refused_not_truncated() {
    let env = Env::new();
    let (dir, agents) = fake_agent(&env, "coder", &[GOOD]);
    let agents = format!("{agents}    max_input_chars: 10\n");
    let o = env.run(
        &agent_plan(
            &agents,
            "      agent: coder\n      prompt: a long prompt\n",
            "",
        ),
        &[],
    );
    assert_eq!(code(&o), 1);
    assert!(env.step_error("fix").contains("max_input_chars"));
    assert!(!dir.join("prompts").exists(), "nothing was sent");
}

fn completion(content: &str, finish: &str) -> String {
    serde_json::json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    })
    .to_string()
}

#[test]
fn openai_provider_sends_the_key_from_its_variable_and_counts_tokens() {
    let env = Env::new();
    let server = mock_server(vec![(200, completion(GOOD, "stop"))]);
    let agents = format!(
        "  gpt:\n    provider: openai\n    base_url: {}/v1\n    model: test-model\n    api_key_env: TEST_PLANGATE_KEY\n    price: {{input_per_mtok: 1000, output_per_mtok: 2000}}\n",
        server.url
    );
    let plan = env.write(
        "plan.yaml",
        &agent_plan(
            &agents,
            "      agent: gpt\n      prompt: Write notes.\n",
            "",
        ),
    );
    let o = env
        .run_cmd(&plan)
        .arg("--policy")
        .arg(env.policy_allowing_local(&["TEST_PLANGATE_KEY"]))
        .env("TEST_PLANGATE_KEY", "sk-test-123")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let reqs = server.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 1);
    assert!(
        reqs[0].0.starts_with("POST /v1/chat/completions"),
        "{}",
        reqs[0].0
    );
    assert!(
        reqs[0]
            .0
            .to_lowercase()
            .contains("authorization: bearer sk-test-123")
    );
    let body: serde_json::Value = serde_json::from_str(&reqs[0].1).unwrap();
    assert_eq!(body["model"], "test-model");
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Write notes.")
    );
    let s = env.step("fix");
    assert_eq!(s["usage"]["input_tokens"], 120);
    assert_eq!(s["usage"]["output_tokens"], 30);
    assert_eq!(s["usage"]["estimated"], false);
    let cost = s["usage"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.18).abs() < 1e-9, "{cost}");
    assert!(
        !String::from_utf8_lossy(&std::fs::read(env.out.join("report.json")).unwrap())
            .contains("sk-test-123")
    );
}

#[test]
fn openai_answers_cut_by_the_token_limit_are_rejected_and_http_errors_fail() {
    let env = Env::new();
    let server = mock_server(vec![
        (200, completion(GOOD, "length")),
        (500, "{\"error\": \"boom\"}".into()),
    ]);
    let agents = format!(
        "  gpt:\n    provider: openai\n    base_url: {}\n    model: m\n    max_retries: 0\n",
        server.url
    );
    let o = env.run(
        &agent_plan(
            &agents,
            "      agent: gpt\n      prompt: p\n      max_attempts: 2\n",
            "",
        ),
        &[],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let s = env.step("fix");
    assert_eq!(
        s["agent_attempts"][0]["rejections"][0]["category"],
        "truncated"
    );
    assert!(s["error"].as_str().unwrap().contains("HTTP 500"));
}

#[test]
fn openai_without_its_key_is_refused_before_the_run() {
    let env = Env::new();
    // `api_key_env` unset: the agent cannot run; the pre-flight of agents
    // makes the run invalid (exit 2) before anything runs.
    let agents = "  gpt:\n    provider: openai\n    base_url: http://127.0.0.1:9\n    model: m\n    api_key_env: TEST_MISSING_OPENAI_KEY\n";
    let o = env.run(
        &agent_plan(agents, "      agent: gpt\n      prompt: p\n", ""),
        &[],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`TEST_MISSING_OPENAI_KEY` (api_key_env) is unset or empty"),
        "{}",
        stderr(&o)
    );
    assert_eq!(env.report()["status"], "invalid");
}

#[test]
fn replay_provider_answers_offline_from_recorded_answers() {
    let env = Env::new();
    let rec = serde_json::json!({"step": "fix", "attempt": 1, "answer": GOOD, "usage": {"input_tokens": 5, "output_tokens": 7}});
    env.write("answers.jsonl", &format!("{rec}\n"));
    let agents = "  rec:\n    provider: replay\n    file: answers.jsonl\n";
    let o = env.run(
        &agent_plan(agents, "      agent: rec\n      prompt: p\n", ""),
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("fix")["usage"]["output_tokens"], 7);
    assert!(env.ws.join("docs/notes.md").exists());
    // No record for the step: fail, never guess.
    let o = env.run(
        &agent_plan(agents, "      agent: rec\n      prompt: p\n", "")
            .replace("id: fix", "id: other"),
        &[],
    );
    assert_eq!(code(&o), 1);
    assert!(env.step_error("other").contains("no answer"));
}

#[test]
fn the_token_budget_ends_the_run_with_exit_6() {
    let env = Env::new();
    let rec = serde_json::json!({"step": "fix", "attempt": 1, "answer": GOOD, "usage": {"input_tokens": 500, "output_tokens": 600}});
    env.write("answers.jsonl", &format!("{rec}\n"));
    let plan = "version: 1\nid: b\npolicy: {risk_tolerance: medium, budget: {max_tokens: 1000}}\nagents:\n  rec:\n    provider: replay\n    file: answers.jsonl\nsteps:\n  - id: fix\n    tool: agent\n    parameters: {agent: rec, prompt: p}\n  - id: after\n    tool: bash\n    dependencies: [fix]\n    parameters: {command: 'touch after'}\n";
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 6, "{}", stderr(&o));
    let r = env.report();
    assert_eq!(r["status"], "budget_exhausted");
    assert_eq!(r["usage"]["input_tokens"], 500);
    assert!(!env.ws.join("after").exists());
}

#[test]
fn the_wall_time_budget_stops_running_steps_with_exit_6() {
    let env = Env::new();
    let plan = "version: 1\nid: w\npolicy: {risk_tolerance: medium, budget: {max_wall_seconds: 1}}\nsteps:\n  - {id: slow, tool: bash, parameters: {command: 'sleep 30'}}\n";
    let t = std::time::Instant::now();
    let o = env.run(plan, &["--kill-grace", "1"]);
    assert_eq!(code(&o), 6, "{}", stderr(&o));
    assert!(t.elapsed() < std::time::Duration::from_secs(15));
    assert_eq!(env.report()["status"], "budget_exhausted");
}

#[test]
fn draft_writes_a_checked_plan_retrying_on_validator_errors_and_runs_nothing() {
    let env = Env::new();
    let bad = "```yaml\nversion: 1\nid: lint\nsteps:\n  - id: lint\n    tool: bash\n    parameters: {comand: 'touch ran'}\n```";
    let good = "```yaml\nversion: 1\nid: lint\nobjective: lint it\nsteps:\n  - id: lint\n    tool: bash\n    parameters: {command: 'touch ran'}\n```";
    let (dir, agents) = fake_agent(&env, "planner", &[bad, good]);
    env.write(".plangate/agents.yaml", &format!("agents:\n{agents}"));
    let o = env
        .cmd()
        .args([
            "draft",
            "--objective",
            "lint the code",
            "--agent",
            "planner",
            "--out",
            "drafted.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = std::fs::read_to_string(env.ws.join("drafted.yaml")).unwrap();
    assert!(text.contains("command: 'touch ran'"));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("DECISION"),
        "prints the risk table"
    );
    assert!(
        prompt_of(&dir, 2).contains("comand"),
        "validator errors go back to the agent"
    );
    assert!(!env.ws.join("ran").exists(), "draft never runs the plan");
    // It does not overwrite.
    let o = env
        .cmd()
        .args([
            "draft",
            "--objective",
            "x",
            "--agent",
            "planner",
            "--out",
            "drafted.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
}
