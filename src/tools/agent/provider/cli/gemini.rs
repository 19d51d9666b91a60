//! Gemini CLI headless with `--output-format json` (`docs/cli/headless.md`,
//! `packages/core/src/output/types.ts`): one object
//!
//! ```json
//! {"session_id": "...", "response": "...",
//!  "stats": {"models": {"gemini-2.5-pro": {"api": {"totalRequests": 2, ...},
//!            "tokens": {"input": 13745, "prompt": 24401, "candidates": 215, "total": 24719,
//!                       "cached": 10656, "thoughts": 103, "tool": 0}}},
//!            "tools": {"totalCalls": 1, ...}, "files": {...}},
//!  "error": {"type": "ApiError", "message": "...", "code": 429}}
//! ```
//!
//! `prompt` counts the cached tokens; thoughts are billed as output. Gemini
//! CLI reports tokens, no cost. `error` means the run failed (a partial
//! `response` beside it is not an answer); exit code 53 is its turn limit.

use serde_json::Value;

use super::{CliRun, ReadError, n, s};
use crate::model::Usage;

/// The JSON object.
pub(super) fn object(v: &Value) -> Result<CliRun, ReadError> {
    let mut run = CliRun::default();
    run.session.session_id = s(v, "session_id").map(str::to_owned);
    if let Some(models) = v
        .get("stats")
        .and_then(|st| st.get("models"))
        .and_then(Value::as_object)
    {
        let mut total = Usage::default();
        for m in models.values() {
            let t = m.get("tokens").cloned().unwrap_or(Value::Null);
            total.add(&Usage {
                input_tokens: n(&t, "prompt") + n(&t, "tool"),
                output_tokens: n(&t, "candidates") + n(&t, "thoughts"),
                cache_read_input_tokens: n(&t, "cached"),
                ..Usage::default()
            });
        }
        run.usage = Some(total);
    }
    if let Some(calls) = v
        .get("stats")
        .and_then(|st| st.get("tools"))
        .and_then(|t| t.get("totalCalls"))
        .and_then(Value::as_u64)
    {
        run.session.commands = calls;
    }
    match v.get("error").filter(|e| !e.is_null()) {
        Some(e) => {
            let (kind, phrase) = error_phrase(e);
            run.session.outcome = Some(kind);
            run.failure = Some(phrase);
        }
        None => {
            run.session.outcome = Some("success".to_owned());
            run.text = Some(
                s(v, "response")
                    .ok_or_else(|| {
                        ReadError::Shape("the object has neither `response` nor `error`".to_owned())
                    })?
                    .to_owned(),
            );
        }
    }
    Ok(run)
}

/// Exit code 53 of Gemini CLI's headless mode: the session's turn limit.
pub(super) const TURN_LIMIT_EXIT: i32 = 53;
/// Exit code 42 of Gemini CLI's headless mode: an input error (invalid prompt or arguments).
pub(super) const INPUT_ERROR_EXIT: i32 = 42;

/// The error Gemini CLI printed on stderr: a fatal error under
/// `--output-format json` is `{"error": {"type", "message", "code"?}}`
/// (pretty-printed, possibly after log lines), and stdout stays empty.
/// Returns the error's type and the failure phrase; None when stderr holds
/// no such object.
pub(super) fn stderr_error(stderr: &str) -> Option<(String, String)> {
    let mut found = None;
    // Each line that opens an object may start it; the last that parses wins.
    let mut at = 0;
    for line in stderr.split_inclusive('\n') {
        if line.trim_start().starts_with('{') {
            let mut values = serde_json::Deserializer::from_str(&stderr[at..]).into_iter::<Value>();
            if let Some(Ok(v)) = values.next()
                && let Some(e) = v.get("error").filter(|e| e.is_object())
            {
                found = Some(error_phrase(e));
            }
        }
        at += line.len();
    }
    found
}

/// An `error` object as (type, "reported an error (TYPE, code C): MESSAGE").
fn error_phrase(e: &Value) -> (String, String) {
    let kind = super::super::one_line(s(e, "type").unwrap_or("error"));
    let code = e
        .get("code")
        .filter(|c| !c.is_null())
        .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned));
    let msg = super::super::one_line(s(e, "message").unwrap_or("no message"));
    let phrase = match code {
        Some(c) => format!(
            "reported an error ({kind}, code {}): {msg}",
            super::super::one_line(&c)
        ),
        None => format!("reported an error ({kind}): {msg}"),
    };
    (kind, phrase)
}

/// What an exit code of Gemini CLI's headless mode means, when it is one of its own.
pub(super) fn exit_meaning(code: i32) -> Option<&'static str> {
    match code {
        TURN_LIMIT_EXIT => Some("ran out of turns (Gemini CLI's maxSessionTurns)"),
        INPUT_ERROR_EXIT => {
            Some("refused its input (Gemini CLI's input error: invalid prompt or arguments)")
        }
        _ => None,
    }
}
