//! The readers on the recorded outputs of `tests/fixtures/agents/recorded/`.

use super::{CliOutputFormat as F, last_message_file, live::Tail, read};

fn recorded(name: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/agents/recorded/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn claude_json_success_gives_the_result_and_the_clis_own_usage() {
    let run = read(F::ClaudeJson, &recorded("claude/success.json"), true).unwrap();
    assert!(run.failure.is_none());
    assert!(run.text.unwrap().starts_with("Fixed the warning."));
    let u = run.usage.unwrap();
    assert_eq!(u.input_tokens, 18 + 4210 + 36512);
    assert_eq!(u.output_tokens, 612);
    assert!((u.cost_usd - 0.0421).abs() < 1e-9);
    assert!(!u.estimated);
    assert_eq!(u.cache_read_input_tokens, 36512);
    assert_eq!(u.cache_creation_input_tokens, 4210);
    let s = run.session;
    assert_eq!(s.format, "claude-json");
    assert_eq!(s.outcome.as_deref(), Some("success"));
    assert_eq!(s.turns, Some(4));
    assert_eq!(
        s.session_id.as_deref(),
        Some("6f1c2f7e-5b0e-4a8e-9d55-2b6e8c1a7f40")
    );
}

#[test]
fn claude_failures_say_what_happened_and_keep_their_cost() {
    let run = read(F::ClaudeJson, &recorded("claude/max_turns.json"), true).unwrap();
    let f = run.failure.unwrap();
    assert!(f.contains("ran out of turns after 31 turns"), "{f}");
    assert!(run.text.is_none());
    assert!((run.usage.unwrap().cost_usd - 0.31).abs() < 1e-9);
    assert_eq!(run.session.permission_denials, 1);
    assert_eq!(run.session.outcome.as_deref(), Some("error_max_turns"));

    let run = read(
        F::ClaudeJson,
        &recorded("claude/during_execution.json"),
        true,
    )
    .unwrap();
    let f = run.failure.unwrap();
    assert!(
        f.starts_with("failed during execution after 3 turns"),
        "{f}"
    );
    assert!(f.contains("Overloaded"), "{f}");

    let run = read(F::ClaudeJson, &recorded("claude/api_error.json"), true).unwrap();
    assert_eq!(
        run.failure.as_deref(),
        Some("reported an error: Invalid API key · Please run /login")
    );
}

#[test]
fn claude_stream_json_reads_the_result_event() {
    let run = read(
        F::ClaudeStreamJson,
        &recorded("claude/stream_success.jsonl"),
        true,
    )
    .unwrap();
    assert!(run.failure.is_none());
    assert!(run.text.unwrap().contains("\"status\": \"OK\""));
    let u = run.usage.unwrap();
    assert_eq!((u.input_tokens, u.output_tokens), (17 + 4501 + 43645, 275));
    assert!((u.cost_usd - 0.0389).abs() < 1e-9);
    assert_eq!(run.session.turns, Some(5));

    let run = read(
        F::ClaudeStreamJson,
        &recorded("claude/stream_max_turns.jsonl"),
        true,
    )
    .unwrap();
    assert!(run.failure.unwrap().contains("ran out of turns"));
    assert!((run.usage.unwrap().cost_usd - 0.31).abs() < 1e-9);
}

#[test]
fn a_claude_stream_cut_before_its_result_counts_its_messages_tokens() {
    let full = recorded("claude/stream_success.jsonl");
    let cut: String = full.lines().take(4).map(|l| format!("{l}\n")).collect();
    let run = read(F::ClaudeStreamJson, &cut, true).unwrap();
    assert_eq!(
        run.failure.as_deref(),
        Some("ended its stream without a result event")
    );
    // msg_01Hk.. appears twice with the same usage: counted once.
    let u = run.usage.unwrap();
    assert_eq!(u.input_tokens, 4 + 3402 + 12011);
    assert_eq!(u.output_tokens, 88);
    // Stopped mid-line: the partial line is ignored.
    let partial = format!("{cut}{{\"type\":\"assis");
    let run = read(F::ClaudeStreamJson, &partial, false).unwrap();
    assert_eq!(
        run.failure.as_deref(),
        Some("was stopped before its result event")
    );
    assert!(read(F::ClaudeStreamJson, &partial, true).is_err());
}

#[test]
fn codex_events_give_the_last_agent_message_turn_usage_and_file_changes() {
    let run = read(F::CodexJsonl, &recorded("codex/success.jsonl"), true).unwrap();
    assert!(run.failure.is_none(), "{:?}", run.failure);
    assert!(
        run.text
            .unwrap()
            .starts_with("Removed both unused imports.")
    );
    let u = run.usage.unwrap();
    assert_eq!((u.input_tokens, u.output_tokens), (24763, 122));
    assert!(!u.estimated);
    assert_eq!(u.cost_usd, 0.0, "Codex reports no cost");
    assert_eq!(u.cache_read_input_tokens, 24448);
    let s = run.session;
    assert_eq!(s.file_changes, vec!["update src/lib.rs"]);
    assert_eq!(s.commands, 1);
    assert_eq!(
        s.session_id.as_deref(),
        Some("0199a213-81c0-7800-8aa1-bbab2a035a53")
    );
    assert_eq!(s.outcome.as_deref(), Some("turn.completed"));
}

#[test]
fn codex_turn_failed_fails_and_an_error_followed_by_a_completed_turn_does_not() {
    let run = read(F::CodexJsonl, &recorded("codex/turn_failed.jsonl"), true).unwrap();
    let f = run.failure.unwrap();
    assert!(
        f.starts_with("failed its turn (turn.failed): stream disconnected"),
        "{f}"
    );
    assert_eq!(run.session.outcome.as_deref(), Some("turn.failed"));

    let run = read(F::CodexJsonl, &recorded("codex/recovered.jsonl"), true).unwrap();
    assert!(run.failure.is_none(), "{:?}", run.failure);
    assert_eq!(
        run.session.warnings,
        vec!["command timed out after 10000ms: cargo check"]
    );
    let cut: String = recorded("codex/recovered.jsonl")
        .lines()
        .take(3)
        .map(|l| format!("{l}\n"))
        .collect();
    let f = read(F::CodexJsonl, &cut, true).unwrap().failure.unwrap();
    assert!(f.starts_with("reported an error: stream error"), "{f}");
}

#[test]
fn a_broken_line_is_refused_with_its_number() {
    let e = read(F::CodexJsonl, &recorded("codex/broken.jsonl"), true).unwrap_err();
    assert!(
        e.to_string().starts_with("line 3 is not a JSON object"),
        "{e}"
    );
    let e = read(F::ClaudeJson, "Error: not logged in\n", true).unwrap_err();
    assert!(
        e.to_string().starts_with("stdout is not one JSON object"),
        "{e}"
    );
    let e = read(F::ClaudeJson, "{\"type\":\"assistant\"}", true).unwrap_err();
    assert!(e.to_string().contains("not \"result\""), "{e}");
}

#[test]
fn gemini_json_sums_every_models_tokens_and_reads_its_error() {
    let run = read(F::GeminiJson, &recorded("gemini/success.json"), true).unwrap();
    assert!(run.failure.is_none());
    assert!(run.text.unwrap().starts_with("Removed the unused imports."));
    let u = run.usage.unwrap();
    assert_eq!(u.input_tokens, 24401 + 803);
    assert_eq!(u.output_tokens, 215 + 103 + 16 + 38);
    assert_eq!(u.cache_read_input_tokens, 10656);
    assert_eq!(run.session.commands, 2);

    let run = read(F::GeminiJson, &recorded("gemini/error.json"), true).unwrap();
    assert_eq!(
        run.failure.as_deref(),
        Some("reported an error (ApiError, code 429): Rate limit exceeded")
    );
    assert!(run.text.is_none(), "a partial response is not an answer");
    assert_eq!(run.usage.unwrap().tokens(), 12000 + 300 + 100);
}

#[test]
fn the_generic_json_format_stays_as_it_was() {
    let run = read(
        F::Json,
        r#"{"result": "hi", "usage": {"input_tokens": 3, "output_tokens": 4}}"#,
        true,
    )
    .unwrap();
    assert_eq!(run.text.as_deref(), Some("hi"));
    assert_eq!(run.usage.unwrap().tokens(), 7);
    let e = read(F::Json, r#"{"usage": {}}"#, true).unwrap_err();
    assert!(e.to_string().contains("no string `result`"), "{e}");
}

#[test]
fn codex_names_its_last_message_file_in_three_ways() {
    let cwd = std::path::Path::new("/w");
    let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    for argv in [
        args(&["exec", "-o", "last.txt", "-"]),
        args(&["exec", "--output-last-message", "last.txt"]),
        args(&["exec", "--output-last-message=last.txt"]),
    ] {
        let f = last_message_file(Some(F::CodexJsonl), &argv, cwd).unwrap();
        assert_eq!(f.path, cwd.join("last.txt"));
        assert_eq!(f.inside.as_deref(), Some("last.txt"));
    }
    // Inside the copy (relative, or absolute under it) it is known by its
    // relative path; outside (`..`, another absolute folder) it is never read.
    for (named, inside) in [
        ("out/last.txt", Some("out/last.txt")),
        ("./last.txt", Some("last.txt")),
        ("/w/sub/last.txt", Some("sub/last.txt")),
        ("../last.txt", None),
        ("sub/../../last.txt", None),
        ("/w/../etc/last.txt", None),
        ("/tmp/last.txt", None),
        ("/w", None),
        (".", None),
    ] {
        let f = last_message_file(Some(F::CodexJsonl), &args(&["exec", "-o", named, "-"]), cwd)
            .unwrap();
        assert_eq!(f.inside.as_deref(), inside, "{named}");
    }
    assert_eq!(
        last_message_file(Some(F::ClaudeJson), &args(&["-o", "x"]), cwd),
        None
    );
}

#[test]
fn the_tail_reads_a_growing_stream_line_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.jsonl");
    let full = recorded("claude/stream_success.jsonl");
    let lines: Vec<&str> = full.lines().collect();
    let mut tail = Tail::new(path.clone(), F::ClaudeStreamJson);
    assert_eq!(tail.poll().events, 0, "no file yet");
    std::fs::write(
        &path,
        format!("{}\n{}\n{}", lines[0], lines[1], &lines[2][..20]),
    )
    .unwrap();
    let p = tail.poll();
    assert_eq!(p.events, 2);
    assert_eq!(p.tokens, Some(4 + 3402 + 12011 + 2));
    assert_eq!(p.cost_usd, None);
    std::fs::write(&path, &full).unwrap();
    let p = tail.poll();
    assert_eq!(p.events, lines.len() as u64);
    assert_eq!(p.cost_usd, Some(0.0389));
}

#[test]
fn claude_json_under_verbose_is_an_array_ending_in_the_result() {
    let run = read(F::ClaudeJson, &recorded("claude/verbose_array.json"), true).unwrap();
    assert!(run.failure.is_none());
    assert!(run.text.unwrap().starts_with("Removed the unused import."));
    let u = run.usage.unwrap();
    assert_eq!(u.input_tokens, 10 + 3330 + 25168);
    assert!((u.cost_usd - 0.0187).abs() < 1e-9);
    assert_eq!(
        run.session.session_id.as_deref(),
        Some("8a3e1c52-7d4b-4f0e-9a61-5c2b7e9d0f14")
    );
    // An array that reads two ways, or is not messages, is refused with the reason.
    for (name, want) in [
        ("claude/verbose_two_results.json", "2 result messages"),
        ("claude/verbose_result_not_last.json", "not the last"),
    ] {
        let e = read(F::ClaudeJson, &recorded(name), true).unwrap_err();
        assert!(e.to_string().contains(want), "{name}: {e}");
    }
    for (text, want) in [
        ("[]", "no result message"),
        (r#"[{"type":"system"}, 3]"#, "element 2"),
        (r#"[{"type":"assistant"}]"#, "no result message"),
    ] {
        let e = read(F::ClaudeJson, text, true).unwrap_err();
        assert!(e.to_string().contains(want), "{text}: {e}");
    }
    // The other formats name the array and the format that reads it.
    let array = recorded("claude/verbose_array.json");
    for f in [F::Json, F::ClaudeStreamJson, F::GeminiJson] {
        let e = read(f, &array, true).unwrap_err().to_string();
        assert!(e.contains("claude-json"), "{}: {e}", f.as_str());
    }
}

#[test]
fn claude_permission_denials_are_counted_and_named() {
    let run = read(
        F::ClaudeJson,
        &recorded("claude/permission_denied.json"),
        true,
    )
    .unwrap();
    assert!(run.failure.is_none(), "an answer still came");
    assert_eq!(run.session.permission_denials, 2);
    let w = run.session.warnings.join("\n");
    assert!(w.contains("refused 2 tool call(s) (Bash, WebFetch)"), "{w}");
    // The tool's input (a command, a URL) is not repeated in the warning.
    assert!(!w.contains("npm test"), "{w}");
    let none = read(F::ClaudeJson, &recorded("claude/success.json"), true).unwrap();
    assert!(none.session.warnings.is_empty());
}

#[test]
fn codex_items_of_the_older_shape_are_read_with_a_warning() {
    let run = read(F::CodexJsonl, &recorded("codex/old_shape.jsonl"), true).unwrap();
    assert!(run.failure.is_none(), "{:?}", run.failure);
    assert!(run.text.unwrap().starts_with("Removed the unused import."));
    assert_eq!(run.session.commands, 1);
    assert_eq!(run.session.file_changes, ["update src/lib.rs"]);
    let w = run.session.warnings.join("\n");
    assert!(w.contains("older event shape"), "{w}");
    // `type` and `item_type` naming different things: refused.
    let run = read(F::CodexJsonl, &recorded("codex/two_types.jsonl"), true).unwrap();
    assert!(run.text.is_none());
    let f = run.failure.unwrap();
    assert!(f.contains("reads two ways"), "{f}");
    // The current shape gives no such warning.
    let run = read(F::CodexJsonl, &recorded("codex/success.jsonl"), true).unwrap();
    assert!(
        run.session.warnings.is_empty(),
        "{:?}",
        run.session.warnings
    );
}

#[test]
fn codex_without_an_agent_message_says_what_it_saw() {
    let run = read(F::CodexJsonl, &recorded("codex/no_message.jsonl"), true).unwrap();
    assert!(run.text.is_none() && run.failure.is_none());
    let h = run.no_answer_hint.unwrap();
    assert!(
        h.contains("item types seen: assistant_note, command_execution, reasoning"),
        "{h}"
    );
    assert!(h.contains("codex --version"), "{h}");
    // The protocol events of an older Codex: named as such, not "no turn.completed".
    let run = read(
        F::CodexJsonl,
        &recorded("codex/protocol_events.jsonl"),
        true,
    )
    .unwrap();
    assert!(run.text.is_none());
    let f = run.failure.unwrap();
    assert!(f.contains("protocol events"), "{f}");
    assert!(f.contains("update Codex"), "{f}");
}

#[test]
fn codex_file_changes_are_shown_relative_to_the_repository() {
    use super::codex::relative_change;
    let ws = std::path::Path::new("/tmp/plangate-stage-x/workspace");
    let real = std::path::Path::new("/private/tmp/plangate-stage-x/workspace");
    let roots = [ws, real];
    for (entry, want) in [
        (
            "update /tmp/plangate-stage-x/workspace/src/lib.rs",
            "update src/lib.rs",
        ),
        (
            "add /private/tmp/plangate-stage-x/workspace/a b.md",
            "add a b.md",
        ),
        (
            "delete /tmp/plangate-stage-x/workspace/x (failed)",
            "delete x (failed)",
        ),
        ("update src/lib.rs", "update src/lib.rs"),
        (
            "update /opt/other/config.toml",
            "update /opt/other/config.toml (outside the repository)",
        ),
        (
            "update /tmp/plangate-stage-x/workspace/../escape",
            "update /tmp/plangate-stage-x/workspace/../escape (outside the repository)",
        ),
        (
            "update /tmp/plangate-stage-x/workspace2/a",
            "update /tmp/plangate-stage-x/workspace2/a (outside the repository)",
        ),
        ("update /tmp/plangate-stage-x/workspace", "update ."),
    ] {
        assert_eq!(relative_change(entry, &roots), want, "{entry}");
    }
}

#[test]
fn gemini_names_the_error_it_printed_on_stderr() {
    use super::gemini::{exit_meaning, stderr_error};
    let (kind, phrase) = stderr_error(&recorded("gemini/turn_limit.stderr.txt")).unwrap();
    assert_eq!(kind, "FatalTurnLimitedError");
    assert!(phrase.contains("code 53"), "{phrase}");
    assert!(phrase.contains("Reached max session turns"), "{phrase}");
    let (kind, _) = stderr_error(&recorded("gemini/input_error.stderr.txt")).unwrap();
    assert_eq!(kind, "FatalInputError");
    // One line, log lines around it, nothing at all.
    let one = r#"{"error":{"type":"FatalAuthenticationError","message":"no key","code":41}}"#;
    assert!(stderr_error(one).unwrap().1.contains("no key"));
    let logged = format!("Loaded cached credentials.\n{one}\nbye\n");
    assert!(stderr_error(&logged).unwrap().1.contains("code 41"));
    for none in [
        "",
        "Error: something broke\n",
        "{not json\n",
        r#"{"error": "a string"}"#,
    ] {
        assert!(stderr_error(none).is_none(), "{none}");
    }
    assert!(exit_meaning(53).unwrap().contains("ran out of turns"));
    assert!(exit_meaning(42).unwrap().contains("input error"));
    assert!(exit_meaning(1).is_none());
}

#[test]
fn an_output_file_is_only_reached_through_real_folders() {
    use super::plain_inside;
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("a/b")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("a/inner")).unwrap();
    for (rel, ok) in [
        ("last.txt", true),
        ("a/last.txt", true),
        ("a/b/last.txt", true),
        // The file itself may be a link (it is opened without following it).
        ("link", true),
        ("link/last.txt", false),
        ("a/inner/last.txt", false),
        ("missing/last.txt", false),
    ] {
        assert_eq!(plain_inside(root.path(), rel).is_some(), ok, "{rel}");
    }
}
