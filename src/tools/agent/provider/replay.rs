//! The `replay` provider: answers recorded in a JSON Lines file, one per
//! (step, attempt), optionally pinned to the prompt's sha256.

use serde_json::Value;

use super::{Answer, Call, CallError, CallFuture, Provider};
use crate::model::Risk;
use crate::model::Usage;
use crate::tools::params::agent::AgentAction;
use crate::tools::params::agent::OutputKind;

/// Largest replay file read.
use crate::tools::agent::preflight::MAX_REPLAY_BYTES;

/// The `replay` provider.
pub(super) struct Replay;

impl Provider for Replay {
    fn required_keys(&self) -> &'static [&'static str] {
        &["file"]
    }

    fn keys(&self) -> &'static [&'static str] {
        &["file"]
    }

    fn risk_floor(&self, a: &AgentAction) -> (Risk, String) {
        if a.output == OutputKind::Envelope && a.write_artifacts {
            (
                Risk::Moderate,
                "writes the agent's files into the workspace".to_owned(),
            )
        } else {
            (
                Risk::Safe,
                "replays recorded answers; writes nothing".to_owned(),
            )
        }
    }

    fn call<'a>(&'a self, call: Call<'a>) -> CallFuture<'a> {
        let requests = call
            .ctx
            .run_vars
            .get("PLANGATE_REQUESTS")
            .map(String::as_str);
        let answer = replay(
            call.action,
            &call.step.id,
            call.attempt,
            call.digest,
            requests,
        );
        Box::pin(std::future::ready(answer))
    }
}

/// `replay`: the recorded answer for (step, attempt) from a JSON Lines file:
/// `{"step": "fix", "attempt": 1, "answer": "...", "usage": {...}, "prompt_sha256": "..."}`.
/// A record that names a `prompt_sha256` must match the prompt sent now.
/// Its `requests` (an array of publish requests, as a CLI agent appends them
/// to `$PLANGATE_REQUESTS`) are appended, one JSON line each, to the step's
/// `requests` file: they are checked when the step ends like any agent's.
fn replay(
    a: &AgentAction,
    step_id: &str,
    attempt: u32,
    digest: &str,
    requests: Option<&str>,
) -> Result<Answer, CallError> {
    use std::io::Read;
    let path = a
        .replay_file
        .as_ref()
        .ok_or_else(|| CallError::Failed(format!("agent `{}` has no replay file", a.agent_name)))?;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_REPLAY_BYTES).read_to_string(&mut text))
        .map_err(|e| {
            CallError::Failed(format!("cannot read replay file `{}`: {e}", path.display()))
        })?;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| {
            CallError::Failed(format!(
                "replay file `{}` line {}: not JSON: {e}",
                path.display(),
                i + 1
            ))
        })?;
        if v.get("step").and_then(Value::as_str) != Some(step_id)
            || v.get("attempt").and_then(Value::as_u64) != Some(u64::from(attempt))
        {
            continue;
        }
        if let Some(want) = v.get("prompt_sha256").and_then(Value::as_str)
            && want != digest
        {
            return Err(CallError::Failed(format!(
                "replay file `{}` line {}: the answer was recorded for a different prompt (sha256 {want}, now {digest}); record it again",
                path.display(),
                i + 1
            )));
        }
        let answer = v.get("answer").and_then(Value::as_str).ok_or_else(|| {
            CallError::Failed(format!(
                "replay file `{}` line {}: no string `answer`",
                path.display(),
                i + 1
            ))
        })?;
        if let Some(list) = v.get("requests") {
            append_requests(list, requests).map_err(|why| {
                CallError::Failed(format!(
                    "replay file `{}` line {}: {why}",
                    path.display(),
                    i + 1
                ))
            })?;
        }
        let usage = v.get("usage").map(|u| Usage {
            input_tokens: u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
            output_tokens: u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
            cost_usd: u.get("cost_usd").and_then(Value::as_f64).unwrap_or(0.0),
            estimated: false,
            cache_creation_input_tokens: u
                .get("cache_creation_input_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            cache_read_input_tokens: u
                .get("cache_read_input_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            reported_by_cli_usd: None,
        });
        return Ok(Answer {
            text: answer.to_owned(),
            usage,
            cut_short: None,
            extra: super::Extra::default(),
        });
    }
    Err(CallError::Failed(format!(
        "replay file `{}` has no answer for step `{step_id}` attempt {attempt}",
        path.display()
    )))
}

/// A replayed answer's `requests`, each as one JSON line at the end of `file`
/// (the step's `$PLANGATE_REQUESTS`).
fn append_requests(list: &Value, file: Option<&str>) -> Result<(), String> {
    use std::io::Write;
    let items = list
        .as_array()
        .ok_or("`requests` must be an array of request objects")?;
    if items.is_empty() {
        return Ok(());
    }
    let file = file.ok_or("`requests` given, but this step has no $PLANGATE_REQUESTS")?;
    let mut text = String::new();
    for r in items {
        text.push_str(&r.to_string());
        text.push('\n');
    }
    std::fs::OpenOptions::new()
        .append(true)
        .open(file)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("cannot append its `requests` to $PLANGATE_REQUESTS: {e}"))
}

#[cfg(test)]
mod tests {
    use super::append_requests;
    use serde_json::json;

    #[test]
    fn requests_are_appended_one_line_each_and_must_be_an_array() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("requests.jsonl");
        std::fs::write(&file, "").unwrap_or_else(|e| panic!("{e}"));
        let name = file.to_str();
        let list =
            json!([{"type": "comment", "body": "a\nb"}, {"type": "labels", "labels": ["x"]}]);
        assert_eq!(append_requests(&list, name), Ok(()));
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert_eq!(
            text,
            "{\"body\":\"a\\nb\",\"type\":\"comment\"}\n{\"labels\":[\"x\"],\"type\":\"labels\"}\n"
        );
        assert!(append_requests(&json!({"type": "comment"}), name).is_err());
        assert!(append_requests(&list, None).is_err());
        assert_eq!(append_requests(&json!([]), None), Ok(()));
    }
}
