//! Real agent CLI interfaces through the binary: Claude Code, Codex and
//! Gemini CLI output read as the CLI's own figures, failures that still cost,
//! presets that start the CLI headless, idle timeouts and heartbeats. The CLIs
//! are `tests/fixtures/agents/standin.sh` playing recorded outputs
//! (`tests/fixtures/agents/recorded/`).

use std::path::{Path, PathBuf};

use crate::harness::{Env, code, stderr};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/agents");

fn recorded(name: &str) -> String {
    format!("{FIXTURES}/recorded/{name}")
}

/// A `command:` running the stand-in with `opts` (before `--`).
fn standin(opts: &[&str]) -> String {
    let mut argv = vec!["bash".to_owned(), format!("{FIXTURES}/standin.sh")];
    argv.extend(opts.iter().map(|s| (*s).to_owned()));
    argv.push("--".to_owned());
    serde_json::to_string(&argv).unwrap()
}

/// A plan with one agent (`agent_yaml`: the keys under it) and one agent step `fix`, then `after`.
fn plan(agent_yaml: &str, policy: &str) -> String {
    format!(
        "version: 1\nid: cli\npolicy: {{risk_tolerance: medium{policy}}}\nagents:\n  bot:\n{agent_yaml}steps:\n  - id: fix\n    tool: agent\n    parameters: {{agent: bot, prompt: Fix the lint warning., max_attempts: 1}}\n  - id: after\n    tool: bash\n    dependencies: [fix]\n    parameters: {{command: 'true'}}\n"
    )
}

fn f64_of(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn each_cli_format_gives_the_clis_own_tokens_and_cost() {
    // (output_format, recording, input tokens, output tokens, cost: the CLI's or priced)
    let price = "    price: {input_per_mtok: 1.0, output_per_mtok: 10.0}\n";
    let cases: [(&str, &str, u64, u64, f64); 5] = [
        ("claude-json", "claude/success.json", 40740, 612, 0.0421),
        (
            "claude-stream-json",
            "claude/stream_success.jsonl",
            48163,
            275,
            0.0389,
        ),
        ("codex-jsonl", "codex/success.jsonl", 24763, 122, 0.025_983),
        ("codex-jsonl", "codex/recovered.jsonl", 8120, 64, 0.00876),
        ("gemini-json", "gemini/success.json", 25204, 372, 0.028_924),
    ];
    for (format, rec, input, output, cost) in cases {
        let env = Env::new();
        let agent = format!(
            "    command: {}\n    output_format: {format}\n{price}",
            standin(&["--play", &recorded(rec)])
        );
        let o = env.run(&plan(&agent, ""), &[]);
        assert_eq!(code(&o), 0, "{format} {rec}: {}", stderr(&o));
        let s = env.step("fix");
        assert_eq!(s["status"], "success", "{format}: {s:#}");
        let u = &s["usage"];
        assert_eq!(u["estimated"], false, "{format}: the CLI's own figures");
        assert_eq!(u["input_tokens"], input, "{format}");
        assert_eq!(u["output_tokens"], output, "{format}");
        assert!(
            (f64_of(&u["cost_usd"]) - cost).abs() < 1e-9,
            "{format}: {u}"
        );
        let r = env.report();
        assert!((f64_of(&r["usage"]["cost_usd"]) - cost).abs() < 1e-9);
        let attempt = &s["agent_attempts"][0];
        assert_eq!(attempt["session"]["format"], format);
        assert!(attempt["session"]["session_id"].is_string(), "{attempt:#}");
        // The CLI's raw output is kept beside the answer.
        let ext = if format.contains("stream") || format.ends_with("jsonl") {
            "jsonl"
        } else {
            "json"
        };
        let kept = format!("artifacts/fix/attempt-1.stdout.{ext}");
        assert!(env.out.join(&kept).is_file(), "{kept}");
        assert!(
            s["artifacts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == &kept)
        );
        assert_eq!(
            std::fs::read_to_string(env.out.join("artifacts/fix/parsed.json"))
                .map(|t| t.contains("\"status\": \"OK\"") || t.contains("\"status\":\"OK\""))
                .ok(),
            Some(true)
        );
    }
}

#[test]
fn codex_reports_what_it_changed_and_its_cached_tokens() {
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: codex-jsonl\n",
        standin(&["--play", &recorded("codex/success.jsonl")])
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let session = &env.step("fix")["agent_attempts"][0]["session"];
    assert_eq!(
        session["file_changes"],
        serde_json::json!(["update src/lib.rs"])
    );
    assert_eq!(env.step("fix")["usage"]["cache_read_input_tokens"], 24448);
    assert_eq!(session["commands"], 1);
    assert_eq!(session["outcome"], "turn.completed");
}

#[test]
fn claude_out_of_turns_fails_the_step_and_its_cost_counts() {
    let price = "    price: {input_per_mtok: 3.0, output_per_mtok: 15.0}\n";
    for (format, rec, exit) in [
        ("claude-json", "claude/max_turns.json", "0"),
        ("claude-stream-json", "claude/stream_max_turns.jsonl", "1"),
    ] {
        let env = Env::new();
        let agent = format!(
            "    command: {}\n    output_format: {format}\n{price}",
            standin(&["--play", &recorded(rec), "--exit", exit])
        );
        let o = env.run(&plan(&agent, ""), &[]);
        assert_eq!(code(&o), 1, "{format}: {}", stderr(&o));
        let s = env.step("fix");
        assert_eq!(s["status"], "failed");
        let err = s["error"].as_str().unwrap();
        assert!(err.contains("ran out of turns after 31 turns"), "{err}");
        assert!(err.contains("$0.3100"), "the cost is stated: {err}");
        assert!(
            (f64_of(&s["usage"]["cost_usd"]) - 0.31).abs() < 1e-9,
            "{s:#}"
        );
        assert!((f64_of(&env.report()["usage"]["cost_usd"]) - 0.31).abs() < 1e-9);
        assert_eq!(
            s["agent_attempts"][0]["session"]["outcome"],
            "error_max_turns"
        );
        assert_eq!(s["agent_attempts"][0]["session"]["permission_denials"], 1);
        assert_eq!(env.step("after")["status"], "not_run");
        assert!(stderr(&o).contains("ran out of turns"), "{}", stderr(&o));
    }
    // Under a $0.20 budget the same session ends the run with the budget's exit code.
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: claude-json\n{price}",
        standin(&["--play", &recorded("claude/max_turns.json")])
    );
    let o = env.run(&plan(&agent, ", budget: {max_cost_usd: 0.2}"), &[]);
    assert_eq!(code(&o), 6, "{}", stderr(&o));
    let r = env.report();
    assert_eq!(r["status"], "budget_exhausted");
    assert!((f64_of(&r["usage"]["cost_usd"]) - 0.31).abs() < 1e-9);
    let s = env.step("fix");
    assert!(
        s["error"]
            .as_str()
            .unwrap()
            .contains("cost budget exhausted"),
        "{s:#}"
    );
    assert_eq!(env.step("after")["status"], "not_run");
}

#[test]
fn codex_turn_failed_gemini_errors_and_claude_api_errors_fail_the_attempt() {
    let price = "    price: {input_per_mtok: 1.0, output_per_mtok: 1.0}\n";
    let cases = [
        (
            "codex-jsonl",
            "codex/turn_failed.jsonl",
            "0",
            "failed its turn (turn.failed): stream disconnected",
        ),
        (
            "gemini-json",
            "gemini/error.json",
            "1",
            "reported an error (ApiError, code 429): Rate limit exceeded; it exited with code 1",
        ),
        (
            "gemini-json",
            "gemini/error.json",
            "53",
            "ran out of turns (Gemini CLI's maxSessionTurns)",
        ),
        (
            "claude-json",
            "claude/api_error.json",
            "1",
            "reported an error: Invalid API key",
        ),
        (
            "claude-json",
            "claude/during_execution.json",
            "1",
            "failed during execution after 3 turns (error_during_execution): API Error: 529",
        ),
    ];
    for (format, rec, exit, says) in cases {
        let env = Env::new();
        let agent = format!(
            "    command: {}\n    output_format: {format}\n{price}",
            standin(&["--play", &recorded(rec), "--exit", exit])
        );
        let o = env.run(&plan(&agent, ""), &[]);
        assert_eq!(code(&o), 1, "{rec}: {}", stderr(&o));
        let s = env.step("fix");
        assert_eq!(s["status"], "failed", "{rec}");
        let err = s["error"].as_str().unwrap();
        assert!(err.contains(says), "{rec}: {err}");
        assert_eq!(s["agent_attempts"][0]["verdict"], "error");
        if rec.starts_with("gemini") {
            // Its tokens still count, priced.
            assert_eq!(s["usage"]["input_tokens"], 12000, "{s:#}");
            assert!(f64_of(&s["usage"]["cost_usd"]) > 0.0);
        }
        assert!(!env.out.join("artifacts/fix/parsed.json").exists());
    }
}

#[test]
fn an_unreadable_wrapper_fails_and_keeps_the_raw_output() {
    let cases = [
        (
            "codex-jsonl",
            recorded("codex/broken.jsonl"),
            "line 3 is not a JSON object",
            "attempt-1.stdout.jsonl",
        ),
        (
            "claude-json",
            recorded("claude/stream_success.jsonl"),
            "stdout is not one JSON object",
            "attempt-1.stdout.json",
        ),
    ];
    for (format, rec, says, kept) in cases {
        let env = Env::new();
        let agent = format!(
            "    command: {}\n    output_format: {format}\n",
            standin(&["--play", &rec])
        );
        let o = env.run(&plan(&agent, ""), &[]);
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        let s = env.step("fix");
        let err = s["error"].as_str().unwrap();
        assert!(err.contains(says), "{err}");
        assert!(
            err.contains(&format!("the raw output is kept in artifacts/fix/{kept}")),
            "{err}"
        );
        let raw = std::fs::read_to_string(env.out.join("artifacts/fix").join(kept)).unwrap();
        assert_eq!(raw, std::fs::read_to_string(&rec).unwrap());
        let attempt = &s["agent_attempts"][0];
        assert!(
            attempt["files"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f.as_str().unwrap().ends_with(kept)),
            "{attempt:#}"
        );
    }
}

#[test]
fn a_raw_output_holding_a_secret_is_kept_redacted() {
    let env = Env::new();
    // A fake credential, declared as the agent's secret: masked wherever it is written.
    let token = "fake-cli-credential-7f3a9c2e";
    let line = format!("{{\"type\":\"thread.started\",\"thread_id\":\"t\"}}\nnot json {token}\n");
    let file = env.ws.parent().unwrap().join("broken-secret.jsonl");
    std::fs::write(&file, line).unwrap();
    let agent = format!(
        "    command: {}\n    output_format: codex-jsonl\n    secrets: [FAKE_CLI_TOKEN]\n",
        standin(&["--play", file.to_str().unwrap()])
    );
    let plan_text = plan(&agent, "");
    let plan_path = env.write("plan.yaml", &plan_text);
    let o = env
        .run_cmd(&plan_path)
        .arg("--workspace")
        .arg(&env.ws)
        .env("FAKE_CLI_TOKEN", token)
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let raw =
        std::fs::read_to_string(env.out.join("artifacts/fix/attempt-1.stdout.jsonl")).unwrap();
    assert!(!raw.contains(token), "{raw}");
    assert!(
        raw.contains("[REDACTED]") || raw.contains("REDACTED"),
        "{raw}"
    );
}

/// A folder holding `claude`, `codex` and `gemini`: the stand-in as each CLI, playing `recs`.
fn bin_dir(env: &Env, recs: [&str; 3]) -> PathBuf {
    let bin = env.out.parent().unwrap().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // The stand-in and its recordings beside the programs: an agent CLI may
    // read the folder its program lives in, not the repository's fixtures.
    std::fs::copy(format!("{FIXTURES}/standin.sh"), bin.join("standin.sh")).unwrap();
    for (name, rec) in ["claude", "codex", "gemini"].into_iter().zip(recs) {
        let play = bin.join(format!("{name}.rec"));
        std::fs::copy(recorded(rec), &play).unwrap();
        let script = format!(
            "#!/bin/sh\nexec bash '{}' --as {name} --play '{}' -- \"$@\"\n",
            bin.join("standin.sh").display(),
            play.display()
        );
        let p = bin.join(name);
        std::fs::write(&p, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

fn path_with(bin: &Path) -> std::ffi::OsString {
    let mut dirs = vec![bin.to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

fn recorded_argv(env: &Env, step: &str) -> Vec<String> {
    let p = env
        .out
        .join(format!("artifacts/{step}/standin/call-1.argv"));
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(str::to_owned)
        .collect()
}

const PRESET_PLAN: &str = "version: 1
id: presets
policy: {risk_tolerance: medium}
agents:
  claude: {preset: claude-code, network: true}
  codex: {preset: codex, network: true, args: [--model, gpt-5-codex]}
  gemini: {preset: gemini-cli, network: true, command: [gemini], args: [--model, gemini-2.5-pro]}
steps:
  - id: review
    tool: agent
    parameters: {agent: claude, prompt: Review the change., max_attempts: 1}
  - id: fix
    tool: agent
    parameters: {agent: codex, prompt: Fix the lint warning., max_attempts: 1}
  - id: notes
    tool: agent
    parameters: {agent: gemini, prompt: Write release notes., max_attempts: 1}
";

#[test]
fn presets_start_each_cli_headless_with_the_prompt_on_stdin() {
    let env = Env::new();
    let bin = bin_dir(
        &env,
        [
            "claude/stream_success.jsonl",
            "codex/success.jsonl",
            "gemini/success.json",
        ],
    );
    let plan_path = env.write("plan.yaml", PRESET_PLAN);
    let o = env
        .run_cmd(&plan_path)
        .arg("--workspace")
        .arg(&env.ws)
        .env("PATH", path_with(&bin))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        recorded_argv(&env, "review"),
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits"
        ]
    );
    // Inside plangate's sandbox Codex runs without its own (which cannot
    // start there); unsandboxed, with it.
    let sandboxed = env.step("fix")["sandbox"]["enforcement"]
        .as_str()
        .is_some_and(|e| e != "none");
    let own_sandbox: &[&str] = if sandboxed {
        &["--dangerously-bypass-approvals-and-sandbox"]
    } else {
        &["--sandbox", "workspace-write"]
    };
    let mut codex = vec!["exec", "--json", "--skip-git-repo-check"];
    codex.extend(own_sandbox);
    codex.extend(["--color", "never", "--model", "gpt-5-codex", "-"]);
    assert_eq!(recorded_argv(&env, "fix"), codex);
    assert_eq!(
        recorded_argv(&env, "notes"),
        [
            "--output-format",
            "json",
            "--approval-mode",
            "auto_edit",
            "--model",
            "gemini-2.5-pro"
        ]
    );
    for (step, prompt, format) in [
        ("review", "Review the change.", "claude-stream-json"),
        ("fix", "Fix the lint warning.", "codex-jsonl"),
        ("notes", "Write release notes.", "gemini-json"),
    ] {
        let stdin = std::fs::read_to_string(
            env.out
                .join(format!("artifacts/{step}/standin/call-1.stdin")),
        )
        .unwrap();
        assert!(stdin.starts_with(prompt), "{step}: {stdin}");
        assert!(
            stdin.contains("\"status\""),
            "the protocol text follows: {stdin}"
        );
        let s = env.step(step);
        assert_eq!(s["status"], "success", "{s:#}");
        assert_eq!(s["usage"]["estimated"], false);
        assert_eq!(s["agent_attempts"][0]["session"]["format"], format);
        // The report shows the argv the preset resolved to.
        let reason = s["approval"]["reason"].as_str().unwrap();
        assert!(reason.contains("runs the agent CLI `"), "{reason}");
        assert!(
            reason.contains(&format!("output_format {format}")),
            "{reason}"
        );
    }
    assert_eq!(
        env.step("review")["agent_command"],
        serde_json::json!([
            "claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits"
        ])
    );
    let reason = env.step("review")["approval"]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reason.contains("`claude -p --output-format stream-json --verbose"),
        "{reason}"
    );
}

#[test]
fn validate_shows_the_argv_a_preset_resolves_to() {
    let env = Env::new();
    let plan_path = env.write("plan.yaml", PRESET_PLAN);
    let o = env
        .cmd()
        .arg("validate")
        .arg(&plan_path)
        .arg("--workspace")
        .arg(&env.ws)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for line in [
        "review  agent `claude` runs: claude -p --output-format stream-json --verbose --permission-mode acceptEdits (preset claude-code, output_format claude-stream-json)",
        "fix     agent `codex` runs: codex exec --json --skip-git-repo-check --sandbox workspace-write --color never --model gpt-5-codex - (preset codex, output_format codex-jsonl)",
        "notes   agent `gemini` runs: gemini --output-format json --approval-mode auto_edit --model gemini-2.5-pro (preset gemini-cli, output_format gemini-json)",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\n{text}");
    }
    let o = env
        .cmd()
        .args(["validate", "--format", "json"])
        .arg(&plan_path)
        .arg("--workspace")
        .arg(&env.ws)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["steps"][1]["agent_command"],
        serde_json::json!([
            "codex",
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--sandbox",
            "workspace-write",
            "--color",
            "never",
            "--model",
            "gpt-5-codex",
            "-"
        ])
    );
}

#[test]
fn a_stand_in_refuses_what_the_real_cli_refuses() {
    // The stand-ins are strict like the CLIs: stream-json without --verbose fails.
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: claude-stream-json\n",
        serde_json::to_string(&[
            "bash",
            &format!("{FIXTURES}/standin.sh"),
            "--as",
            "claude",
            "--play",
            &recorded("claude/stream_success.jsonl"),
            "--",
            "-p",
            "--output-format",
            "stream-json",
        ])
        .unwrap()
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = env.step("fix")["error"].as_str().unwrap().to_owned();
    assert!(
        err.contains("ended its stream without a result event; it exited with code 1"),
        "{err}"
    );
    let stderr_file =
        std::fs::read_to_string(env.out.join("artifacts/fix/attempt-1.stderr.txt")).unwrap();
    assert!(stderr_file.contains("requires --verbose"), "{stderr_file}");
}

#[test]
fn idle_timeout_counts_output_on_stderr_and_kills_a_silent_agent() {
    // Only stderr, every 0.2 s for 2 s, under idle_timeout 1s: alive.
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: claude-json\n    idle_timeout: 1s\n",
        standin(&[
            "--stderr-ticks",
            "10",
            "--tick",
            "0.2",
            "--play",
            &recorded("claude/success.json")
        ])
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("fix")["status"], "success");
    // Nothing at all for 2 s: stopped at the idle timeout, well before its 30 s timeout.
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: claude-json\n    idle_timeout: 1s\n    timeout: 30\n",
        standin(&["--sleep", "3", "--play", &recorded("claude/success.json")])
    );
    let started = std::time::Instant::now();
    let o = env.run(&plan(&agent, ""), &["--kill-grace", "0.2"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let s = env.step("fix");
    assert_eq!(s["status"], "timed_out", "{s:#}");
    assert!(
        s["error"]
            .as_str()
            .unwrap()
            .contains("printed nothing for too long")
    );
    // Each stream event counts too: lines every 0.3 s over 2.4 s under idle_timeout 1s.
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: claude-stream-json\n    idle_timeout: 1s\n",
        standin(&[
            "--line-delay",
            "0.3",
            "--play",
            &recorded("claude/stream_success.jsonl")
        ])
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn a_long_agent_step_prints_heartbeats_with_the_streams_tokens() {
    let env = Env::new();
    // 8 events, one every 0.15 s: about 1.2 s.
    let agent = format!(
        "    command: {}\n    output_format: claude-stream-json\n",
        standin(&[
            "--line-delay",
            "0.15",
            "--play",
            &recorded("claude/stream_success.jsonl")
        ])
    );
    let o = env.run(&plan(&agent, ""), &["--heartbeat", "0.3"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    let beats: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("fix still running after"))
        .collect();
    assert!(beats.len() >= 2, "{err}");
    assert!(beats.iter().all(|l| l.contains("attempt 1")), "{err}");
    assert!(
        beats
            .iter()
            .any(|l| l.contains(" tokens") && l.contains("so far")),
        "the stream's tokens so far: {err}"
    );
    // Off with 0, and by default (30 s) nothing in a short run.
    for args in [&["--heartbeat", "0"][..], &[][..]] {
        let env = Env::new();
        let o = env.run(&plan(&agent, ""), args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(!stderr(&o).contains("still running"), "{}", stderr(&o));
    }
    // A text agent beats too (elapsed only).
    let env = Env::new();
    let agent = format!(
        "    command: {}\n",
        standin(&["--sleep", "1", "--play", &recorded("codex/success.jsonl")])
    );
    let o = env.run(&plan(&agent, ""), &["--heartbeat", "0.3"]);
    let err = stderr(&o);
    assert!(
        err.lines()
            .filter(|l| l.contains("fix still running after"))
            .count()
            >= 2,
        "{err}"
    );
}

#[test]
fn codex_last_message_file_is_the_answer_when_the_command_names_one() {
    let env = Env::new();
    let mut argv: Vec<String> = serde_json::from_str(&standin(&[
        "--as",
        "codex",
        "--play",
        &recorded("codex/success.jsonl"),
        "--last-message",
        &recorded("codex/last_message.txt"),
    ]))
    .unwrap();
    argv.extend(
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-o",
            "codex-last.txt",
            "-",
        ]
        .map(str::to_owned),
    );
    let agent = format!(
        "    command: {}\n    output_format: codex-jsonl\n",
        serde_json::to_string(&argv).unwrap()
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let parsed = std::fs::read_to_string(env.out.join("artifacts/fix/parsed.json")).unwrap();
    assert!(parsed.contains("Written by codex -o"), "{parsed}");
    // Its tokens are still the stream's.
    assert_eq!(env.step("fix")["usage"]["input_tokens"], 24763);
}

/// The console (stdout and stderr) of a run.
fn console(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(o))
}

#[test]
fn claude_json_under_verbose_is_read_from_its_array_of_messages() {
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: claude-json\n",
        standin(&["--play", &recorded("claude/verbose_array.json")])
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let s = env.step("fix");
    assert_eq!(s["status"], "success", "{s:#}");
    assert!((f64_of(&s["usage"]["cost_usd"]) - 0.0187).abs() < 1e-9);
    // An array that reads two ways is refused, naming why.
    for (rec, want) in [
        ("claude/verbose_two_results.json", "2 result messages"),
        ("claude/verbose_result_not_last.json", "not the last"),
    ] {
        let env = Env::new();
        let agent = format!(
            "    command: {}\n    output_format: claude-json\n",
            standin(&["--play", &recorded(rec)])
        );
        let o = env.run(&plan(&agent, ""), &[]);
        assert_eq!(code(&o), 1, "{rec}");
        let err = env.step_error("fix");
        assert!(err.contains(want), "{rec}: {err}");
    }
    // Read as a stream, the array is named with the format that reads it.
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: claude-stream-json\n",
        standin(&["--play", &recorded("claude/verbose_array.json")])
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 1);
    let err = env.step_error("fix");
    assert!(err.contains("output_format: claude-json"), "{err}");
}

#[test]
fn gemini_errors_printed_on_stderr_are_named() {
    for (rec, exit, want) in [
        (
            "gemini/turn_limit.stderr.txt",
            "53",
            [
                "ran out of turns",
                "FatalTurnLimitedError",
                "Reached max session turns",
            ],
        ),
        (
            "gemini/input_error.stderr.txt",
            "42",
            ["refused its input", "FatalInputError", "No input provided"],
        ),
    ] {
        let env = Env::new();
        let agent = format!(
            "    command: {}\n    output_format: gemini-json\n",
            standin(&["--play-stderr", &recorded(rec), "--exit", exit])
        );
        let o = env.run(&plan(&agent, ""), &[]);
        assert_eq!(code(&o), 1, "{rec}");
        let err = env.step_error("fix");
        for w in want {
            assert!(err.contains(w), "{rec}: {w}: {err}");
        }
        assert!(!err.contains("cannot be read"), "{rec}: {err}");
    }
    // A response on stdout beside an error on stderr reads two ways: refused.
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: gemini-json\n",
        standin(&[
            "--play",
            &recorded("gemini/success.json"),
            "--play-stderr",
            &recorded("gemini/turn_limit.stderr.txt"),
        ])
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 1);
    let err = env.step_error("fix");
    assert!(err.contains("reads two ways"), "{err}");
    assert!(!env.out.join("artifacts/fix/parsed.json").exists());
}

#[test]
fn codex_streams_of_older_versions_are_read_or_named() {
    // The shape before the agent_message rename: read, with a warning.
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: codex-jsonl\n",
        standin(&["--play", &recorded("codex/old_shape.jsonl")])
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let session = &env.step("fix")["agent_attempts"][0]["session"];
    assert!(
        session["warnings"]
            .to_string()
            .contains("older event shape"),
        "{session:#}"
    );
    // No final message: the step's error says what came instead and what to check.
    for (rec, want) in [
        ("codex/no_message.jsonl", "item types seen: assistant_note"),
        ("codex/protocol_events.jsonl", "protocol events"),
        ("codex/two_types.jsonl", "reads two ways"),
    ] {
        let env = Env::new();
        let agent = format!(
            "    command: {}\n    output_format: codex-jsonl\n",
            standin(&["--play", &recorded(rec)])
        );
        let o = env.run(&plan(&agent, ""), &[]);
        assert_eq!(code(&o), 1, "{rec}");
        let err = env.step_error("fix");
        assert!(err.contains(want), "{rec}: {err}");
    }
}

#[test]
fn codex_file_changes_are_named_relative_to_the_repository() {
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: codex-jsonl\n",
        standin(&["--play", &recorded("codex/absolute_paths.jsonl")])
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let session = &env.step("fix")["agent_attempts"][0]["session"];
    assert_eq!(
        session["file_changes"],
        serde_json::json!([
            "update src/lib.rs",
            "add notes/new file.md",
            "update /opt/elsewhere/config.toml (outside the repository)"
        ]),
        "{session:#}"
    );
    assert!(
        !session.to_string().contains("plangate-stage-"),
        "{session:#}"
    );
}

#[test]
fn codex_last_message_file_is_never_an_edit_nor_a_stale_answer() {
    let codex = |extra: &[&str], named: &str| {
        let mut opts = vec!["--as", "codex", "--play"];
        let play = recorded("codex/success.jsonl");
        opts.push(&play);
        opts.extend_from_slice(extra);
        let mut argv: Vec<String> = serde_json::from_str(&standin(&opts)).unwrap();
        argv.extend(
            ["exec", "--json", "--skip-git-repo-check", "-o", named, "-"].map(str::to_owned),
        );
        format!(
            "    command: {}\n    output_format: codex-jsonl\n",
            serde_json::to_string(&argv).unwrap()
        )
    };
    let last = recorded("codex/last_message.txt");
    // Written by the CLI in its copy: the answer, and no change to the workspace.
    for named in ["codex-last.txt", "notes/last.txt"] {
        let env = Env::new();
        env.write("notes/README.md", "notes\n");
        let o = env.run(&plan(&codex(&["--last-message", &last], named), ""), &[]);
        assert_eq!(code(&o), 0, "{named}: {}", stderr(&o));
        let parsed = std::fs::read_to_string(env.out.join("artifacts/fix/parsed.json")).unwrap();
        assert!(parsed.contains("Written by codex -o"), "{parsed}");
        assert!(!env.ws.join(named).exists(), "{named}");
        let s = env.step("fix");
        assert!(
            !s["agent_changes"].to_string().contains("last.txt")
                && !s["changed_files"].to_string().contains("last.txt"),
            "{named}: {s:#}"
        );
    }
    // A file of that name already in the workspace: never read as the answer
    // (the CLI wrote none), never deleted, never changed.
    let env = Env::new();
    env.write("codex-last.txt", "STALE answer from an earlier run\n");
    let o = env.run(&plan(&codex(&[], "codex-last.txt"), ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let parsed = std::fs::read_to_string(env.out.join("artifacts/fix/parsed.json")).unwrap();
    assert!(parsed.contains("Removed the unused imports"), "{parsed}");
    assert_eq!(
        std::fs::read_to_string(env.ws.join("codex-last.txt")).unwrap(),
        "STALE answer from an earlier run\n"
    );
    // Outside the repository: not read, and said so.
    let env = Env::new();
    let o = env.run(&plan(&codex(&[], "../outside-last.txt"), ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let session = &env.step("fix")["agent_attempts"][0]["session"];
    assert!(
        session["warnings"]
            .to_string()
            .contains("not inside the staged copy"),
        "{session:#}"
    );
}

#[test]
fn claude_permission_denials_are_warned_in_the_console_and_the_summary() {
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: claude-json\n",
        standin(&["--play", &recorded("claude/permission_denied.json")])
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let want = "permission mode refused 2 tool call(s)";
    assert!(console(&o).contains(want), "{}", console(&o));
    let s = env.step("fix");
    assert_eq!(s["agent_attempts"][0]["session"]["permission_denials"], 2);
    assert!(
        s["agent_attempts"][0]["session"]["warnings"]
            .to_string()
            .contains("(Bash, WebFetch)"),
        "{s:#}"
    );
    let md = env
        .cmd()
        .arg("report")
        .arg(env.out.join("report.json"))
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains(want), "{md}");
    // Without denials: no such warning.
    let env = Env::new();
    let agent = format!(
        "    command: {}\n    output_format: claude-json\n",
        standin(&["--play", &recorded("claude/success.json")])
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!console(&o).contains("refused"), "{}", console(&o));
}

#[test]
fn codex_last_message_file_under_a_symlinked_folder_is_never_touched() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("last.txt"), "OUTSIDE marker content\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), env.ws.join("linkdir")).unwrap();
    let mut argv: Vec<String> = serde_json::from_str(&standin(&[
        "--as",
        "codex",
        "--play",
        &recorded("codex/success.jsonl"),
    ]))
    .unwrap();
    argv.extend(
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-o",
            "linkdir/last.txt",
            "-",
        ]
        .map(str::to_owned),
    );
    let agent = format!(
        "    command: {}\n    output_format: codex-jsonl\n",
        serde_json::to_string(&argv).unwrap()
    );
    let o = env.run(&plan(&agent, ""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Neither removed before the run nor read as the answer.
    assert_eq!(
        std::fs::read_to_string(outside.path().join("last.txt")).unwrap(),
        "OUTSIDE marker content\n"
    );
    let parsed = std::fs::read_to_string(env.out.join("artifacts/fix/parsed.json")).unwrap();
    assert!(!parsed.contains("OUTSIDE"), "{parsed}");
    let session = &env.step("fix")["agent_attempts"][0]["session"];
    assert!(
        session["warnings"].to_string().contains("under a symlink"),
        "{session:#}"
    );
}

/// A cost an agent reports that is not a number of dollars ≥ 0 counts for
/// nothing: a CLI printing `total_cost_usd: -100` took $100 off the run's
/// spend, so a later $50 step ran under a $1 budget (and a NaN compared as
/// never over). The reported figure is dropped and the tokens are priced.
#[test]
fn a_negative_or_absurd_reported_cost_never_lowers_the_spend() {
    for reported in ["-100", "-1e308", "-0.5"] {
        let env = Env::new();
        for (name, cost) in [("neg.sh", reported), ("spend.sh", "50")] {
            let p = env.write(
                name,
                &format!(
                    "#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '{{\"result\":\"{{\\\"status\\\":\\\"OK\\\",\\\"summary\\\":\\\"x\\\"}}\",\"usage\":{{\"input_tokens\":10,\"output_tokens\":10}},\"total_cost_usd\":{cost}}}'\n"
                ),
            );
            std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        let agent = |script: &str| {
            format!(
                "  {}:\n    command: [{}]\n    output_format: json\n    price: {{input_per_mtok: 1, output_per_mtok: 1}}\n",
                &script[..script.len() - 3],
                env.ws.join(script).display()
            )
        };
        let plan = format!(
            "version: 1\nid: b\npolicy:\n  risk_tolerance: high\n  budget: {{max_cost_usd: 1.0}}\nagents:\n{}{}steps:\n  - {{id: neg, tool: agent, parameters: {{agent: neg, prompt: x, output: envelope, max_attempts: 1, write_artifacts: false}}}}\n  - {{id: spend, tool: agent, dependencies: [neg], parameters: {{agent: spend, prompt: x, output: envelope, max_attempts: 1, write_artifacts: false}}}}\n",
            agent("neg.sh"),
            agent("spend.sh")
        );
        let o = env.run(&plan, &[]);
        assert_eq!(code(&o), 6, "{reported}: {}", stderr(&o));
        let r = env.report();
        let spent = f64_of(&r["usage"]["cost_usd"]);
        assert!(spent >= 50.0 && spent.is_finite(), "{reported}: {spent}");
        assert!(
            f64_of(&env.step("neg")["usage"]["cost_usd"]) >= 0.0,
            "{reported}"
        );
    }
}
